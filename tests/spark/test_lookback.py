"""The time-slicing proof (cq_py.spark.lookback): how far back each input's warm-up must reach for
an engine started at T_k to give the one engine's outputs from T_k on, or why nothing bounds it.

No Spark here: the pass reads the plan only. tests/test_time_split.py checks that the warm-ups it
proves do give one engine's results through ``cq_py.run(threads=2)``.
"""

import pytest

from cq_py.parser import parse
from cq_py.planner import Catalog, Planner
from cq_py.spark.lookback import Lookback, LookbackPlan, lookback_catalog, lookback_plan

STREAMS = "REGISTER STREAM s(k INT, v INT, x DOUBLE);REGISTER STREAM u(k INT, w INT);"


def plan(*queries: str) -> LookbackPlan:
    body = "".join(f"REGISTER QUERY q{i} AS {q};" for i, q in enumerate(queries, 1))
    return lookback_plan(STREAMS + body)


def lookback(*queries: str) -> dict[str, Lookback]:
    p = plan(*queries)
    assert p.sliceable, p.blocker
    return p.lookback


@pytest.mark.parametrize(
    ("query", "want"),
    [
        # A stream through [Now] and ISTREAM needs nothing before T_k (fused to a scan).
        ("ISTREAM(SELECT k, v FROM s [Now] WHERE v > 3)", Lookback()),
        # [Range r]: r ticks (+1: a row of ts T_k - r may still be in), +1 for ISTREAM's T_k - 1.
        ("ISTREAM(SELECT k, v FROM s [Range 10])", Lookback(12)),
        ("DSTREAM(SELECT k, v FROM s [Range 10])", Lookback(12)),
        # A sliding window: the last slide boundary's window, at most range + slide back.
        ("ISTREAM(SELECT k, COUNT(*) FROM s [Range 10 Slide 5] GROUP BY k)", Lookback(17)),
        ("ISTREAM(SELECT k, v FROM s [Rows 4])", Lookback(1, 4)),
        (
            "ISTREAM(SELECT k, AVG(v) FROM s [Partition By k Rows 3] GROUP BY k)",
            Lookback(1, 0, (("k", 3),)),
        ),
        ("ISTREAM(SELECT k, MIN(x), MAX(x) FROM s [Range 3] GROUP BY k)", Lookback(5)),
        ("ISTREAM(SELECT COUNT(*) FROM s [Range 3])", Lookback(5)),
        ("ISTREAM(SELECT DISTINCT k FROM s [Range 3])", Lookback(5)),
    ],
)
def test_one_window_over_s(query, want):
    assert lookback(query) == {"s": want, "u": Lookback()}


def test_a_join_looks_back_as_far_as_each_side_and_a_fused_join_likewise():
    # Two windows joined: each input its own window's lookback, one tick more for ISTREAM.
    fused = lookback("ISTREAM(SELECT s.k, s.v, u.w FROM s [Range 20], u [Now] WHERE s.k = u.k)")
    assert fused == {"s": Lookback(22), "u": Lookback(1)}
    # Not fusable (a row window): join over window operators.
    apart = lookback("DSTREAM(SELECT s.k, u.w FROM s [Range 5], u [Rows 2] WHERE s.k = u.k)")
    assert apart == {"s": Lookback(7), "u": Lookback(1, 2)}


def test_queries_add_up_to_the_furthest_lookback_per_input():
    got = lookback(
        "ISTREAM(SELECT k, v FROM s [Range 10])",
        "ISTREAM(SELECT k, SUM(v) FROM s [Partition By k Rows 5] GROUP BY k)",
        "ISTREAM(SELECT k, w FROM u [Rows 9])",
    )
    assert got == {"s": Lookback(12, 0, (("k", 5),)), "u": Lookback(1, 9)}


@pytest.mark.parametrize(
    ("query", "blocker"),
    [
        ("ISTREAM(SELECT k, SUM(x) FROM s [Range 10] GROUP BY k)", "SUM(x) of DOUBLE"),
        ("ISTREAM(SELECT k, AVG(x) FROM s [Rows 10] GROUP BY k)", "AVG(x) of DOUBLE"),
        ("ISTREAM(SELECT k, v FROM s [Range Unbounded])", "[Range Unbounded] remembers every row"),
        ("RSTREAM(SELECT k, v FROM s [Range 3])", "RSTREAM cannot be split by time"),
        ("SELECT k, v FROM s [Range 3]", "q1 gives a relation"),
        (
            "ISTREAM(SELECT k, x FROM s [Partition By k, v Rows 3])",
            "partitions by several columns",
        ),
    ],
)
def test_what_nothing_bounds_is_refused(query, blocker):
    p = plan(query)
    assert not p.sliceable
    assert p.lookback == {}
    assert blocker in (p.blocker or "")


def test_a_window_over_a_query_output_is_refused():
    p = plan(
        "ISTREAM(SELECT k, v FROM s [Range 3])",
        "ISTREAM(SELECT k, COUNT(*) FROM q1 [Range 5] GROUP BY k)",
    )
    assert "a window over the output of query q1" in (p.blocker or "")


def test_relations_delays_and_master_are_refused():
    relation = lookback_plan(
        "REGISTER RELATION r(k INT); REGISTER QUERY q AS ISTREAM(SELECT k FROM r);"
    )
    assert "'r' is a relation" in (relation.blocker or "")
    looped = lookback_plan(
        "REGISTER STREAM s(k INT);"
        "REGISTER QUERY q AS ISTREAM(SELECT k FROM s [Now] UNION ALL "
        "SELECT k + 1 FROM q [Range 1] WHERE k < 3) <Now>;"
    )
    assert "a window over the output of query q" in (looped.blocker or "")
    delayed = lookback_plan(
        "REGISTER STREAM s(k INT);REGISTER QUERY q AS ISTREAM(SELECT k FROM s [Now]) <1>;"
    )
    assert "Delay <1> (1 ticks) cannot be split by time" in (delayed.blocker or "")


def test_a_hand_made_catalog():
    text = STREAMS + "REGISTER QUERY q AS ISTREAM(SELECT k, COUNT(*) FROM s [Rows 3] GROUP BY k);"
    cat, _ = Planner(Catalog(), "ms", text).plan(parse(text))
    assert lookback_catalog(cat).lookback["s"] == Lookback(1, 3)
    # The same plan with its aggregate made inexact by hand: refused.
    agg = next(n for n in cat.nodes.values() if n.op in ("aggregate", "istream_aggregate"))
    agg.params["aggregates"] = [
        {
            "fn": "sum",
            "distinct": False,
            "type": "float64",
            "arg": {"kind": "column", "index": 2, "type": "float64"},
        }
    ]
    assert "not exact" in (lookback_catalog(cat).blocker or "")
    # An operator the pass does not know is refused, by name.
    agg.op, agg.label = "master_trigger", "MASTER"
    assert "MASTER cannot be split by time" in (lookback_catalog(cat).blocker or "")
