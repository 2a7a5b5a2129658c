"""REGISTER RESOURCE and REGISTER MODEL (paper 002; cq_py/parser, cq_py/planner/planner.py): what
the dialect accepts, and every query reading them refused with the reason, line and column, the
engine left as it was."""

from __future__ import annotations

import pytest

import cq_py
from cq_py import CQLSemanticError, CQLSyntaxError
from cq_py.parser import ast, parse

SETUP = (
    "REGISTER STREAM s(k INT, v INT); REGISTER RELATION r(k INT);"
    "REGISTER RESOURCE x (k INT, name VARCHAR) KEY (k);"
    "REGISTER RESOURCE y (k INT, w DOUBLE) FROM 'sqlite:///y.db' TABLE 'ys' ACCESS SCAN;"
    "REGISTER MODEL f (a INT) RETURNS (b DOUBLE);"
)


def test_the_statements_parse() -> None:
    x, y, f = parse(SETUP).statements[2:]
    assert isinstance(x, ast.RegisterResource)
    assert (x.name, x.key, x.url, x.access) == ("x", ("k",), None, "key")
    assert [c.name for c in x.columns] == ["k", "name"]
    assert isinstance(y, ast.RegisterResource)
    assert (y.key, y.url, y.remote, y.access) == ((), "sqlite:///y.db", "ys", "scan")
    assert isinstance(f, ast.RegisterModel)
    assert ([c.name for c in f.args], [c.name for c in f.returns]) == (["a"], ["b"])


@pytest.mark.parametrize(
    ("cql", "message"),
    [
        ("REGISTER RESOURCE x (k INT) ACCESS FOO;", "expected KEY or SCAN after ACCESS"),
        ("REGISTER RESOURCE x (k INT) KEY k;", r"expected \(col, \.\.\.\) after KEY"),
        ("REGISTER MODEL f (a INT) (b INT);", "expected RETURNS"),
        ("REGISTER GADGET g;", "RESOURCE or MODEL after REGISTER"),
    ],
)
def test_malformed_statements_are_syntax_errors(cql: str, message: str) -> None:
    with pytest.raises(CQLSyntaxError, match=message):
        parse(cql)


@pytest.mark.parametrize(
    ("cql", "message", "column"),
    [
        (
            (
                "REGISTER QUERY q AS ISTREAM(SELECT s.k FROM s [Range 5], x [Range 3] "
                "WHERE s.k = x.k);"
            ),
            "a window on resource 'x'",
            60,
        ),
        ("REGISTER QUERY q AS ISTREAM(SELECT x.k FROM x);", "reads resource 'x' but no stream", 45),
        (
            "REGISTER QUERY q AS ISTREAM(SELECT r.k FROM r, x WHERE r.k = x.k);",
            "reads resource 'x' but no stream",
            48,
        ),
        (
            "REGISTER QUERY q AS SELECT s.k, x.name FROM s [Range 5], x WHERE s.k = x.k;",
            "reads resource 'x' and is relation-valued",
            1,
        ),
        (
            "REGISTER QUERY q AS ISTREAM(SELECT s.k FROM s [Now], x, q [Now] WHERE s.k = x.k);",
            "resource 'x' in a loop: query 'q' reads itself",
            54,
        ),
        (
            "REGISTER QUERY q AS ISTREAM(SELECT s.k, x.name FROM s [Range 5], x WHERE s.k = x.k);",
            (
                "reads resource 'x': reference operators \\(paper 002\\) run only under "
                "executor='scheduled'; found executor='dts'"
            ),
            66,
        ),
        (
            "REGISTER QUERY q AS ISTREAM(SELECT f(s.v) AS b FROM s [Now]);",
            "reads model 'f'",
            36,
        ),
        ("REGISTER QUERY q AS ISTREAM(SELECT s.k FROM s [Now], f);", "'f' is a model", 54),
        ("REGISTER RESOURCE z (k INT) ACCESS KEY;", "ACCESS KEY needs a key", 29),
        ("REGISTER RESOURCE z (k INT) KEY (q);", "key column 'q' of resource 'z'", 1),
        (
            "REGISTER RESOURCE z (k INT) KEY (k) FROM 'mysql://h/d';",
            "unknown url scheme in 'mysql://h/d'; expected one of sqlite:///..., postgresql://",
            1,
        ),
        ("REGISTER RESOURCE z (k INT, K INT) KEY (k);", "column 'K' twice", 29),
        # (The crash fuzzer: KEY (b, b) was taken, and a delete from z raised pyarrow's KeyError.)
        (
            "REGISTER RESOURCE z (k INT, b INT) KEY (b, B);",
            "key column 'B' twice in resource 'z'",
            1,
        ),
        ("REGISTER RESOURCE x (k INT) KEY (k);", "'x' is already registered as a resource", 1),
        ("REGISTER STREAM f (k INT);", "'f' is already registered as a model", 1),
    ],
)
def test_bad_uses_are_refused_with_their_place_and_nothing_registered(
    cql: str, message: str, column: int
) -> None:
    eng = cq_py.Engine()
    eng.execute(SETUP)
    before = eng.explain()
    with pytest.raises(CQLSemanticError, match=message) as e:
        eng.execute(cql)
    assert (e.value.line, e.value.column) == (1, column)
    assert eng.explain() == before
    assert eng.query_names() == []


def test_under_the_scheduled_executor_a_resource_read_is_a_reference_join() -> None:
    eng = cq_py.Engine(executor="scheduled")
    eng.execute(SETUP)
    eng.execute(
        "REGISTER QUERY q AS ISTREAM(SELECT s.k, x.name FROM s [Range 5], x WHERE s.k = x.k);"
    )
    assert "ReferenceJoin x ACCESS KEY (x.k = s.k)" in eng.explain()


def test_under_the_scheduled_executor_a_model_call_is_a_model_apply() -> None:
    eng = cq_py.Engine(executor="scheduled")
    eng.execute(SETUP)
    eng.execute("REGISTER QUERY q AS ISTREAM(SELECT f(s.v) AS b FROM s [Now]);")
    assert "ModelApply f(s.v) -> b" in eng.explain()
