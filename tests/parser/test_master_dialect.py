"""Paper 001's dialect (issue 31 item 1): MASTER queries, clocks and database tables, as parsed and
as checked by the planner; every error names what was expected and what was found, and registers
nothing."""

from __future__ import annotations

import pytest

import cq_py
from cq_py.parser import ast, parse
from cq_py.planner.logical import Catalog
from cq_py.planner.planner import Planner

BASE = (
    "REGISTER STREAM s(a INT); REGISTER STREAM t(a INT, b DOUBLE); REGISTER RELATION r(a INT);"
    "REGISTER CLOCK c EVERY 10 OFFSET 5;"
)


def test_master_query_parses_with_the_papers_windows() -> None:
    script = parse(
        "REGISTER QUERY q AS MASTER Access, c1 SELECT a FROM Access [now], Status [5second], "
        "URLs WHERE a = 1;"
    )
    (st,) = script.statements
    assert isinstance(st, ast.RegisterQuery)
    assert isinstance(st.query, ast.Master)
    assert [m.name for m in st.query.masters] == ["Access", "c1"]
    assert [m.pos.column for m in st.query.masters] == [28, 36]
    windows = [src.window for src in st.query.select.sources]
    assert windows[0] is not None
    assert windows[0].kind == "now"
    assert windows[1] == ast.Window("range", range=ast.Duration(5, "s"))
    assert windows[2] is None  # unbounded


def test_clock_and_table_statements_parse() -> None:
    clock, table, plain = parse(
        "REGISTER CLOCK c EVERY 30 SECONDS OFFSET 15 s;"
        "REGISTER TABLE u FROM 'sqlite:///x.db' TABLE 'urls';"
        "REGISTER TABLE v FROM 'postgresql://h/db';"
    ).statements
    assert clock == ast.RegisterClock("c", ast.Duration(30, "s"), ast.Duration(15, "s"))
    assert table == ast.RegisterTable("u", "sqlite:///x.db", "urls")
    assert plain == ast.RegisterTable("v", "postgresql://h/db", None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "REGISTER QUERY q AS MASTER s SELECT a FROM s UNION SELECT a FROM s;",
            (
                "expected ';' after the MASTER query, found 'UNION' (a MASTER query is a whole "
                "query: it cannot be an operand of UNION"
            ),
        ),
        (
            "REGISTER QUERY q AS SELECT a FROM s UNION MASTER s SELECT a FROM s;",
            "found 'MASTER' (MASTER may only start the whole query",
        ),
        (
            "REGISTER QUERY q AS ISTREAM(MASTER s SELECT a FROM s);",
            "found 'MASTER' (MASTER may only start the whole query",
        ),
        ("REGISTER QUERY q AS MASTER SELECT a FROM s;", "expected a stream or clock name"),
        ("REGISTER QUERY q AS MASTER s a FROM s;", "expected ',' or SELECT after the MASTER"),
        # The paper's bare-duration window is MASTER's only.
        (
            "REGISTER QUERY q AS SELECT a FROM s [5 s];",
            "expected Now, Range, Rows or Partition By in a window, found '5'",
        ),
        ("REGISTER CLOCK c 5;", "expected EVERY after the clock name 'c', found '5'"),
        ("REGISTER CLOCK c EVERY -5;", "expected a duration"),
        ("REGISTER CLOCK c EVERY 5 OFFSET -1;", "expected a duration"),
        ("REGISTER TABLE t FROM x;", "expected a database url in quotes after FROM"),
        ("REGISTER TABLE t 'x';", "expected FROM 'url' after the table name 't'"),
        ("REGISTER TABLE t FROM 'x' TABLE y;", "expected the database's table name in quotes"),
    ],
)
def test_syntax_errors(text: str, message: str) -> None:
    with pytest.raises(cq_py.CQLSyntaxError, match=None) as e:
        parse(text)
    assert message in str(e.value)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            "REGISTER QUERY q AS MASTER r SELECT a FROM s;",
            (
                "MASTER source 'r' is a relation; a master must be a stream, a clock or a "
                "stream-valued query"
            ),
        ),
        (
            "REGISTER QUERY q AS MASTER x SELECT a FROM s;",
            (
                "unknown MASTER source 'x'; a master is a stream, a clock or a stream-valued "
                "query. Streams: s, t; clocks: c; stream-valued queries: (none)"
            ),
        ),
        (
            "REGISTER QUERY q AS MASTER rq SELECT a FROM s; REGISTER QUERY rq AS SELECT a FROM s;",
            "MASTER source 'rq' is a relation-valued query",
        ),
        ("REGISTER QUERY q AS MASTER s, s SELECT a FROM s;", "MASTER names 's' twice"),
        ("REGISTER QUERY q AS SELECT a FROM c;", "'c' is a clock: it has no columns to read"),
        ("REGISTER CLOCK k EVERY 0;", "the period of clock 'k' must be positive; found 0"),
        (
            "REGISTER CLOCK k EVERY 10 OFFSET 10;",
            (
                "the offset of clock 'k' must be at least 0 and below its period (10 ticks); "
                "found 10 ticks"
            ),
        ),
        ("REGISTER CLOCK k EVERY 1 ms;", "1 MILLISECONDS is not a whole number of ticks"),
        ("REGISTER TABLE u FROM 'sqlite:///x.db';", "REGISTER TABLE is run by an Engine"),
    ],
)
def test_semantic_errors(script: str, message: str) -> None:
    base = BASE.replace("EVERY 10 OFFSET 5", "EVERY 10 SECONDS OFFSET 5 SECONDS")
    catalog = Catalog()
    with pytest.raises(cq_py.CQLSemanticError) as e:
        Planner(catalog, time_unit="s").plan(parse(base + script))
    assert message in str(e.value)
    assert not catalog.streams  # the planner works on a copy: nothing is registered


def test_an_engine_registers_nothing_of_a_rejected_script() -> None:
    eng = cq_py.Engine()
    eng.execute("REGISTER STREAM s(a INT); REGISTER RELATION r(a INT);")
    with pytest.raises(cq_py.CQLSemanticError, match="MASTER source 'r' is a relation"):
        eng.execute(
            "REGISTER STREAM z(a INT); REGISTER QUERY ok AS SELECT a FROM s;"
            "REGISTER QUERY q AS MASTER r SELECT a FROM s;"
        )
    assert (eng.stream_names(), eng.query_names()) == (["s", "r"], [])


def test_master_over_a_relation_needs_the_direct_method() -> None:
    # Under negative tuples a delete names a value: of equal rows that started at different
    # times the method cannot say which ends, and MASTER emits rows by their start.
    script = (
        "REGISTER STREAM s(a INT); REGISTER RELATION r(a INT);"
        "REGISTER QUERY q AS MASTER s SELECT r.a FROM s [Now], r WHERE s.a = r.a;"
    )
    eng = cq_py.Engine(lifetime="negative")
    with pytest.raises(cq_py.CQLSemanticError, match="MASTER over the relation 'r' needs"):
        eng.execute(script)
    assert (eng.stream_names(), eng.query_names()) == ([], [])
    direct = cq_py.Engine(lifetime="direct")
    direct.execute(script)
    assert direct.query_names() == ["q"]
