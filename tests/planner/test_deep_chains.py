"""Long flat chains plan and run; genuinely deep nesting is a positioned error (issue 27 G5).

The parser builds ``a AND b AND c ...``, ``x IN (...)``, ``q UNION ALL q ...`` and ``a + b + ...``
left-deep; the planner walks such chains without recursing down them, balances those whose value
does not depend on the grouping, and bounds what stays deep, so that neither Python nor the core
recurses without bound.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from click.testing import CliRunner

import cq_py
from cq_py.cli import cli
from cq_py.parser import parse
from cq_py.planner import Catalog, Planner
from cq_py.planner.expressions import MAX_EXPRESSION_DEPTH, conjuncts
from cq_py.planner.planner import MAX_FILTERS

S = "REGISTER STREAM s(a INT, b DOUBLE, c VARCHAR);\n"
AND_10000 = " AND ".join(f"a <> {i}" for i in range(2, 10002))  # keeps a in {..., 0, 1, >10001}
IN_5000 = ", ".join(str(i) for i in range(5000))
UNION_1000 = " UNION ALL ".join(f"SELECT a FROM s [Now] WHERE a = {i}" for i in range(-500, 500))
PLUS_10000 = " + ".join(["a"] * 10000)


def plan(cql: str):
    return Planner(Catalog(), "ms", cql).plan(parse(cql))


def deepest(nodes) -> int:
    return max((e.depth for n in nodes for e in n.checks), default=0)


def test_flat_chains_plan_run_and_give_the_right_result():
    eng = cq_py.Engine()
    eng.execute(
        S + f"REGISTER QUERY q_and AS ISTREAM(SELECT a FROM s [Now] WHERE {AND_10000});\n"
        f"REGISTER QUERY q_in AS ISTREAM(SELECT a FROM s [Now] WHERE a IN ({IN_5000}));\n"
        f"REGISTER QUERY q_union AS ISTREAM({UNION_1000});\n"
        f"REGISTER QUERY q_plus AS ISTREAM(SELECT {PLUS_10000} AS x FROM s [Now]);\n"
    )
    nodes = list(eng._catalog.nodes.values())
    assert deepest(nodes) <= 20  # balanced: log2 of the chains' lengths
    filters = [n for n in nodes if n.op == "filter" and n.owner == "q_and"]
    assert len(filters) == MAX_FILTERS  # not 10,000 operators in a row
    assert filters[-1].label.startswith("Filter a <> 17 AND a <> 18 AND")
    assert sum(n.op == "union_all" for n in nodes) == 999
    assert f"Filter a IN ({IN_5000})" in eng.explain()
    a = [1, 5000, 20000, -3, None, 499]
    eng.push("s", pa.table({"a": a, "b": [0.0] * 6, "c": ["x"] * 6, "ts": [0, 1, 2, 3, 4, 5]}))
    eng.close()
    assert eng.fetch("q_and").column("a").to_pylist() == [1, 20000, -3]
    assert eng.fetch("q_in").column("a").to_pylist() == [1, 499]
    assert eng.fetch("q_union").column("a").to_pylist() == [1, -3, 499]
    assert eng.fetch("q_plus").column("x").to_pylist() == [
        10000,
        50_000_000,
        200_000_000,
        -30000,
        None,
        4_990_000,
    ]


def test_balanced_chains_keep_three_valued_logic_and_wrapping():
    cql = S + (
        "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now] WHERE "
        "b > 0 AND c IS NOT NULL AND a > 0 AND NULL OR a = 7 OR a IS NULL AND b = 1);\n"
        "REGISTER QUERY w AS ISTREAM(SELECT a + 9223372036854775807 + a + 1 AS x "
        "FROM s [Now]);"
    )
    data = pa.table(
        {
            "a": [1, 7, None, None, 2],
            "b": [1.0, 0.0, 1.0, 2.0, 1.0],
            "c": ["x", None, "y", "z", None],
            "ts": [0, 1, 2, 3, 4],
        }
    )
    out = cq_py.run(cql, {"s": data})
    assert out["q"].column("ts").to_pylist() == [1, 2]
    big = 2**63
    assert out["w"].column("x").to_pylist() == [
        (1 + big - 1 + 1 + 1 + big) % 2**64 - big,
        (7 + big - 1 + 7 + 1 + big) % 2**64 - big,
        None,
        None,
        (2 + big - 1 + 2 + 1 + big) % 2**64 - big,
    ]


def test_deep_nesting_is_a_positioned_error():
    deep = "(" * 100_000 + "a" + ")" * 100_000
    with pytest.raises(cq_py.CQLSyntaxError, match=r"nested too deeply .* at most 100 levels") as e:
        cq_py.explain(S + f"REGISTER QUERY q AS SELECT {deep} AS x FROM s [Now];")
    assert (e.value.line, e.value.column) == (2, 127)  # the 100th '(', under the select item's
    with pytest.raises(cq_py.CQLSyntaxError, match="nested too deeply"):
        cq_py.Engine().execute(S + "REGISTER QUERY q AS " + "(" * 5000 + "SELECT a FROM s")
    # A flat chain whose grouping matters stays as written, up to the bound.
    for chain in (" - ".join(["a"] * 150), " + ".join(["b"] * 150), " / ".join(["b"] * 150)):
        with pytest.raises(
            cq_py.CQLSemanticError,
            match=f"nested too deeply: at most {MAX_EXPRESSION_DEPTH} levels",
        ) as e:
            cq_py.Engine().execute(S + f"REGISTER QUERY q AS SELECT a,\n  {chain} AS x FROM s;")
        assert (e.value.line, e.value.column) == (3, 3)
    out = cq_py.run(
        S + "REGISTER QUERY q AS ISTREAM(SELECT " + " - ".join(["a"] * 90) + " AS x FROM s [Now]);",
        {"s": pa.table({"a": [1], "b": [0.0], "c": ["x"], "ts": [0]})},
    )
    assert out["q"].column("x").to_pylist() == [-88]


def test_cq_explain_prints_a_deep_nesting_error_not_a_traceback(tmp_path):
    path = tmp_path / "deep.cql"
    path.write_text(S + "REGISTER QUERY r AS SELECT " + "(" * 5000 + "a" + ")" * 5000 + " FROM s;")
    result = CliRunner().invoke(cli, ["explain", str(path)])
    assert (result.exit_code != 0 and result.exception is None) or isinstance(
        result.exception, SystemExit
    )
    assert "nested too deeply" in result.output
    assert "Traceback" not in result.output
    path.write_text(
        S
        + "REGISTER QUERY q AS SELECT a FROM s [Now] WHERE "
        + " OR ".join(f"a = {i}" for i in range(2000))
        + ";"
    )
    result = CliRunner().invoke(cli, ["explain", str(path)])
    assert result.exit_code == 0, result.output


def test_a_catalog_with_deep_expressions_is_copied_for_the_next_script():
    """Each execute plans against a copy of the catalog: expressions as deep as allowed must not
    make that copy recurse too deep."""
    eng = cq_py.Engine()
    chain = " - ".join(["a"] * (MAX_EXPRESSION_DEPTH - 2))
    for k in range(3):
        eng.execute((S if k == 0 else "") + f"REGISTER QUERY q{k} AS SELECT {chain} AS x FROM s;")
    assert eng.query_names() == ["q0", "q1", "q2"]
    # A flat chain plans balanced, but the catalog keeps the query's syntax tree (to re-derive it
    # for queries registered later), which is as deep as the chain is long.
    eng.execute("REGISTER QUERY long AS SELECT " + " + ".join(["a"] * 3000) + " AS x FROM s;")
    eng.execute("REGISTER QUERY after AS SELECT x FROM long;")
    assert eng.query_names()[-2:] == ["long", "after"]


def test_a_long_chain_of_queries_read_before_they_are_registered():
    """Queries are planned after those they read: a chain registered in reverse order is ordered
    without recursing down it."""
    n = 3000
    cql = (
        S
        + "".join(f"REGISTER QUERY q{i} AS SELECT a FROM q{i + 1};" for i in range(n))
        + f"REGISTER QUERY q{n} AS SELECT a FROM s [Range 3];"
    )
    script = parse(cql)
    queries = [st for st in script.statements if not hasattr(st, "columns")]
    p = Planner(Catalog(), "ms", cql)
    p.script_queries = {q.name.lower(): q for q in queries}
    order = [q.name for q in p._dependency_order(queries)]
    assert order == [f"q{i}" for i in range(n, -1, -1)]


def test_conjuncts_of_a_long_where_in_order():
    e = (
        parse(S + f"REGISTER QUERY q AS SELECT a FROM s WHERE {AND_10000} AND (b > 1 AND c = 'x');")
        .statements[1]
        .query.where
    )
    parts = conjuncts(e)
    assert len(parts) == 10002
    assert parts[0].right.value == 2
    assert parts[-1].right.value == "x"


def test_a_chain_of_queries_deeper_than_the_core_runs_is_refused_whole():
    """A batch is handed down a chain of queries call by call: a chain of thousands of queries
    overflowed the stack at the first push (a segmentation fault). Deeper than 2,000 operators is a
    CQLSemanticError naming the query, registering nothing; the engine runs on."""

    def chain(first, last, source):
        return "".join(
            f"REGISTER QUERY q{i} AS SELECT a FROM {source if i == first else f'q{i - 1}'} "
            f"WHERE a > {-i};"
            for i in range(first, last)
        )

    eng = cq_py.Engine()
    eng.execute("REGISTER STREAM s(a BIGINT);" + chain(0, 600, "s [Range 5]"))
    before = eng.query_names()
    # Further on in another script: the depth counts from the input, across scripts.
    with pytest.raises(
        cq_py.CQLSemanticError, match=r"query 'q998' would run 2001 operators .* at most 2000"
    ):
        eng.execute(chain(600, 1300, "q599"))
    assert eng.query_names() == before
    eng.execute(chain(600, 998, "q599"))
    snap = eng.snapshot()
    eng.push("s", [{"a": 1, "ts": 1}, {"a": 2, "ts": 3}])
    eng.close()
    assert eng.fetch("q997").column("a").to_pylist() == [1, 2]
    restored = cq_py.Engine()
    restored.execute("REGISTER STREAM s(a BIGINT);" + chain(0, 600, "s [Range 5]"))
    restored.execute(chain(600, 998, "q599"))
    restored.restore(snap)
    with pytest.raises(cq_py.CQLSemanticError, match="too deeply"):
        restored.execute(
            "REGISTER QUERY z0 AS SELECT a FROM q997; REGISTER QUERY z1 AS SELECT a FROM z0 "
            "WHERE a > 0;"
        )


def test_a_long_chain_inside_an_aggregate_or_a_model_call_plans_and_runs():
    # (The crash fuzzer: the call's AST node was hashed, which recursed down the chain:
    # RecursionError. Calls are now told apart by expressions.expr_key.)
    eng = cq_py.Engine()
    eng.execute(S + f"REGISTER QUERY q AS ISTREAM(SELECT SUM({PLUS_10000}) AS t FROM s [Range 3]);")
    eng.push("s", [{"a": 2, "b": 0.0, "c": "", "ts": 0}])
    eng.close()
    assert eng.fetch("q").to_pylist() == [{"t": 20000, "ts": 0}]
    store = cq_py.ResourceStore()
    store.set_model("half", lambda a: pa.compute.multiply(a.cast(pa.float64()), 0.5))
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1)
    eng.execute(
        S + "REGISTER MODEL half (a BIGINT) RETURNS (y DOUBLE);\n"
        f"REGISTER QUERY q AS ISTREAM(SELECT half({PLUS_10000}) AS y FROM s [Now] "
        f"WHERE half({PLUS_10000}) > 0);"
    )
    eng.push("s", [{"a": 2, "b": 0.0, "c": "", "ts": 0}])
    eng.close()
    assert eng.fetch("q").to_pylist() == [{"y": 10000.0, "ts": 0}]
    # One model_apply for the two equal calls.
    assert [n.op for n in eng._catalog.nodes.values()].count("model_apply") == 1
