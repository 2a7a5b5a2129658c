"""ISTREAM / DSTREAM fused with the grouped aggregate they read (cq_py/planner/fusion.py): when it
happens, when it must not, and that the fused plan gives the unfused plan's rows."""

from __future__ import annotations

import pyarrow as pa
import pytest

import cq_py

SCHEMA = "REGISTER STREAM e(key INT, val BIGINT, s VARCHAR);"


def ops(cql: str, **options) -> list[str]:
    eng = cq_py.Engine(**options)
    eng.execute(SCHEMA + cql)
    return [n.op for n in eng._catalog.nodes.values()]


@pytest.mark.parametrize(
    ("query", "fused"),
    [
        ("ISTREAM(SELECT key, AVG(val) AS a FROM e [Range 10] GROUP BY key)", "istream_aggregate"),
        ("DSTREAM(SELECT key, AVG(val) AS a FROM e [Range 10] GROUP BY key)", "dstream_aggregate"),
        # Columns picked in another order, renamed, a key twice; no GROUP BY (one group).
        (
            "ISTREAM(SELECT MAX(val) AS m, key AS k, key FROM e [Rows 3] GROUP BY key)",
            "istream_aggregate",
        ),
        ("ISTREAM(SELECT COUNT(*) AS n FROM e [Range 5 Slide 2])", "istream_aggregate"),
        # SELECT DISTINCT is an aggregate of keys only.
        ("ISTREAM(SELECT DISTINCT key, s FROM e [Range 3])", "istream_aggregate"),
        ("DSTREAM(SELECT key, s, SUM(val) AS t FROM e [Now] GROUP BY key, s)", "dstream_aggregate"),
    ],
)
def test_an_istream_or_dstream_of_an_aggregate_is_one_operator(query, fused):
    plan = ops(f"REGISTER QUERY q AS {query};")
    assert fused in plan
    assert "istream" not in plan
    assert "dstream" not in plan
    assert "aggregate" not in plan
    assert fused not in ops(f"REGISTER QUERY q AS {query};", fuse=False)


@pytest.mark.parametrize(
    "query",
    [
        # A key left out: two groups' rows may be equal, and the bag difference cancels them.
        "ISTREAM(SELECT AVG(val) AS a FROM e [Range 10] GROUP BY key)",
        "ISTREAM(SELECT key, AVG(val) AS a FROM e [Range 10] GROUP BY key, s)",
        # HAVING may drop a group's new row and keep its old one.
        "ISTREAM(SELECT key, AVG(val) AS a FROM e [Range 10] GROUP BY key HAVING COUNT(*) > 1)",
        # An expression may map two values to one.
        "ISTREAM(SELECT key, AVG(val) > 3 AS big FROM e [Range 10] GROUP BY key)",
        # RSTREAM is not a difference.
        "RSTREAM(SELECT key, AVG(val) AS a FROM e [Range 10] GROUP BY key)",
    ],
)
def test_what_is_not_a_difference_of_whole_result_rows_is_not_fused(query):
    plan = ops(f"REGISTER QUERY q AS {query};")
    assert "aggregate" in plan
    assert not [op for op in plan if op.endswith("_aggregate")]


def test_an_aggregate_another_query_reads_is_not_fused():
    body = "SELECT key, AVG(val) AS a FROM e [Range 10] GROUP BY key"
    plan = ops(f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});")
    assert plan.count("aggregate") == 1  # shared by r and i
    assert "istream" in plan
    # In scripts of their own, nothing is shared and the ISTREAM is fused.
    eng = cq_py.Engine()
    eng.execute(SCHEMA + f"REGISTER QUERY r AS {body};")
    eng.execute(f"REGISTER QUERY i AS ISTREAM({body});")
    plan = [n.op for n in eng._catalog.nodes.values()]
    assert plan.count("aggregate") == 1
    assert "istream_aggregate" in plan
    assert "fused with ISTREAM" in eng._core.explain()
    assert "+ ISTREAM" in eng.explain()


QUERIES = [
    "ISTREAM(SELECT key, AVG(val) AS a, MIN(s) AS m FROM e [Range 4 Slide 2] GROUP BY key)",
    "DSTREAM(SELECT key, COUNT(*) AS n, SUM(val) AS t FROM e [Range 3] GROUP BY key)",
    "ISTREAM(SELECT s, key, MAX(val) AS m FROM e [Partition By key Rows 2] GROUP BY key, s)",
    "DSTREAM(SELECT DISTINCT s FROM e [Rows 3])",
    "ISTREAM(SELECT COUNT(DISTINCT key) AS n FROM e [Now])",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("lifetime", ["direct", "negative"])
@pytest.mark.parametrize(
    "executor", [{"executor": "heartbeat"}, {"hybrid": True}, {"hybrid": False}]
)
def test_the_fused_plan_gives_the_rows_of_the_unfused_one(query, lifetime, executor):
    data = pa.table(
        {
            "key": [i % 3 for i in range(40)],
            "val": [(i * 7) % 5 for i in range(40)],
            "s": [None if i % 6 == 0 else "xyz"[i % 3] for i in range(40)],
            "ts": [i // 3 for i in range(40)],
        }
    )
    out = []
    for fuse in (True, False):
        for chunk in (40, 1, 7):
            eng = cq_py.Engine(lifetime=lifetime, fuse=fuse, expose_steps=True, **executor)
            eng.execute(SCHEMA + f"REGISTER QUERY q AS {query};")
            for off in range(0, 40, chunk):
                eng.push("e", data.slice(off, chunk))
            eng.close()
            rows = eng.fetch("q").to_pylist()
            out.append(sorted(rows, key=lambda r: (r["ts"], r["ts_step"], repr(r))))
    assert out[0]
    for other in out[1:]:
        assert other == out[0]


# ---- an aggregate over [Partition By <its GROUP BY keys> Rows N] ------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "ISTREAM(SELECT key, AVG(val) AS a FROM e [Partition By key Rows 10] GROUP BY key)",
        "SELECT key, COUNT(*) AS n, MIN(val) AS m FROM e [Partition By key Rows 2] GROUP BY key",
        # The keys in another order; a DISTINCT count (a multiset of numbers).
        (
            "SELECT s, key, COUNT(DISTINCT val) AS d FROM e [Partition By key, s Rows 3] "
            "GROUP BY key, s"
        ),
    ],
)
def test_an_aggregate_over_its_groups_last_rows_reads_the_stream(query):
    plan = ops(f"REGISTER QUERY q AS {query};")
    assert "partition_row_window" not in plan
    eng = cq_py.Engine()
    eng.execute(SCHEMA + f"REGISTER QUERY q AS {query};")
    assert "last " in eng._core.explain()
    assert " over [Partition By " in eng.explain()
    assert "partition_row_window" in ops(f"REGISTER QUERY q AS {query};", fuse=False)


@pytest.mark.parametrize(
    "query",
    [
        # Partitions that are not the groups: a group's relation is not its last N rows.
        "SELECT key, COUNT(*) AS n FROM e [Partition By s Rows 2] GROUP BY key",
        "SELECT key, COUNT(*) AS n FROM e [Partition By key, s Rows 2] GROUP BY key",
        "SELECT COUNT(*) AS n FROM e [Partition By key Rows 2]",
        # A string argument: a ring keeps 8 bytes per argument.
        "SELECT key, MIN(s) AS m FROM e [Partition By key Rows 2] GROUP BY key",
        # A filter between the window and the aggregate.
        "SELECT key, COUNT(*) AS n FROM e [Partition By key Rows 2] WHERE val > 1 GROUP BY key",
    ],
)
def test_an_aggregate_over_other_row_windows_keeps_the_window(query):
    assert "partition_row_window" in ops(f"REGISTER QUERY q AS {query};")


def test_a_row_window_another_query_reads_is_kept():
    window = "FROM e [Partition By key Rows 2]"
    plan = ops(
        f"REGISTER QUERY r AS SELECT key, COUNT(*) AS n {window} GROUP BY key;"
        f"REGISTER QUERY w AS SELECT key, val {window};"
    )
    assert plan.count("partition_row_window") == 1


ROWS_QUERIES = [
    (
        "ISTREAM(SELECT key, AVG(val) AS a, MAX(val) AS m FROM e [Partition By key Rows 2] "
        "GROUP BY key)"
    ),
    (
        "SELECT key, COUNT(*) AS n, SUM(val) AS t, COUNT(DISTINCT val) AS d "
        "FROM e [Partition By key Rows 3] GROUP BY key"
    ),
    "DSTREAM(SELECT s, COUNT(val) AS n FROM e [Partition By s Rows 1] GROUP BY s)",
    # Rings that grow (4, 8, then 9 slots) before they are full.
    "SELECT key, SUM(val) AS t, MIN(val) AS m FROM e [Partition By key Rows 9] GROUP BY key",
]


@pytest.mark.parametrize("query", ROWS_QUERIES)
@pytest.mark.parametrize("lifetime", ["direct", "negative"])
@pytest.mark.parametrize("executor", [{"executor": "heartbeat"}, {"hybrid": False}])
def test_the_groups_rings_give_the_rows_of_the_window_across_a_snapshot(query, lifetime, executor):
    data = pa.table(
        {
            "key": [None if i % 11 == 0 else i % 3 for i in range(40)],
            "val": [None if i % 7 == 0 else (i * 7) % 5 for i in range(40)],
            "s": [None if i % 6 == 0 else "xyz"[i % 3] for i in range(40)],
            "ts": [i // 3 for i in range(40)],
        }
    )
    out = []
    for fuse in (True, False):
        for chunk in (40, 1, 7):
            eng = cq_py.Engine(lifetime=lifetime, fuse=fuse, expose_steps=True, **executor)
            eng.execute(SCHEMA + f"REGISTER QUERY q AS {query};")
            for off in range(0, 40, chunk):
                eng.push("e", data.slice(off, chunk))
                if "executor" not in executor and (off == 14 or chunk == 40):
                    # Restored, the rings hold the same rows: the same bytes again, then the
                    # same results. (Snapshots are DTS's.)
                    snap = eng.snapshot()
                    eng = cq_py.Engine.restore(snap)
                    assert eng.snapshot() == snap
            eng.close()
            rows = eng.fetch("q").to_pylist()
            out.append(sorted(rows, key=repr))
    assert out[0]
    for other in out[1:]:
        assert other == out[0]


# ---- the ordered loops of one aggregate (operators/aggregate.cc, RunOrdered) ------------------
# One COUNT(*), or one SUM / AVG of a BIGINT or a DOUBLE, runs in a loop compiled for that
# aggregate; with a second aggregate beside it the same input takes the general loop. Both give
# the same rows, fused or not.

ONE_AGGREGATE = [
    ("COUNT(*)", "[Range 4 Slide 2]"),
    ("COUNT(*)", "[Range 3 Slide 3]"),
    ("AVG(val)", "[Range 6 Slide 2]"),
    ("SUM(val)", "[Range 3]"),
    ("AVG(d)", "[Range 4 Slide 2]"),
    ("SUM(d)", "[Partition By key Rows 3]"),
    ("AVG(val)", "[Partition By key Rows 2]"),
]


@pytest.mark.parametrize(("agg", "window"), ONE_AGGREGATE)
@pytest.mark.parametrize("lifetime", ["direct", "negative"])
@pytest.mark.parametrize(
    "executor", [{"executor": "heartbeat"}, {"hybrid": True}, {"hybrid": False}]
)
def test_one_aggregates_loop_gives_the_rows_of_the_general_one(agg, window, lifetime, executor):
    n = 60
    data = pa.table(
        {
            "key": [None if i % 13 == 0 else i % 4 for i in range(n)],
            "val": [None if i % 7 == 0 else (i * 7) % 5 - 2 for i in range(n)],
            "d": [None if i % 5 == 0 else ((i * 3) % 7) / 4 - 0.5 for i in range(n)],
            "ts": [i // 3 + (i // 20) * 9 for i in range(n)],  # gaps longer than the windows
        }
    )
    schema = "REGISTER STREAM e(key INT, val BIGINT, d DOUBLE);"
    one = f"SELECT key, {agg} AS a FROM e {window} GROUP BY key"
    # The same aggregate twice sends the rows through the loop for any aggregates; its second
    # copy is checked equal to the first and dropped.
    general = f"SELECT key, {agg} AS a, {agg} AS b FROM e {window} GROUP BY key"
    out = []
    for query in (f"ISTREAM({one})", one, f"ISTREAM({general})", general):
        for fuse in (True, False):
            for chunk in (n, 1, 7):
                eng = cq_py.Engine(lifetime=lifetime, fuse=fuse, expose_steps=True, **executor)
                eng.execute(schema + f"REGISTER QUERY q AS {query};")
                for off in range(0, n, chunk):
                    eng.push("e", data.slice(off, chunk))
                    if "executor" not in executor and off == 21:
                        snap = eng.snapshot()
                        eng = cq_py.Engine.restore(snap)
                        assert eng.snapshot() == snap
                eng.close()
                rows = eng.fetch("q").to_pylist()
                for r in rows:
                    if "b" in r:
                        assert r.pop("b") == r["a"]
                out.append(sorted(rows, key=repr))
    stream, relation = out[0], out[6]
    assert stream
    assert relation
    for k, rows in enumerate(out):
        assert rows == (stream if (k // 6) % 2 == 0 else relation), k
