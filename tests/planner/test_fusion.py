"""ISTREAM / DSTREAM fused with the grouped aggregate they read (cq_py/planner/fusion.py): when it
happens, when it must not, and that the fused plan gives the unfused plan's rows."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.reference import instants, istream_of, join_at, lifetimes
from oracle.test_differential_select import window_sql

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


# ---- ISTREAM of an equi-join of two constant-duration windows ---------------------------------

JOIN_SCHEMA = "REGISTER STREAM s(a INT, b INT); REGISTER STREAM t(k INT, d INT);"
JOIN_TYPES = {
    "s": pa.schema([("a", pa.int64()), ("b", pa.int64()), ("ts", pa.int64())]),
    "t": pa.schema([("k", pa.int64()), ("d", pa.int64()), ("ts", pa.int64())]),
}


def join_ops(cql: str, **options) -> list[str]:
    eng = cq_py.Engine(**options)
    eng.execute(JOIN_SCHEMA + cql)
    return [n.op for n in eng._catalog.nodes.values()]


@pytest.mark.parametrize(
    "query",
    [
        "ISTREAM(SELECT s.a, s.b, t.d FROM s [Range 10], t [Range 3] WHERE s.a = t.k)",
        "ISTREAM(SELECT * FROM s [Now], t [Range Unbounded] WHERE s.a = t.k)",
        # Columns picked in another order, one side's left out; keys in two columns.
        "ISTREAM(SELECT t.d, s.a AS x FROM s [Range 2], t [Now] WHERE t.k = s.a AND s.b = t.d)",
    ],
)
def test_an_istream_of_a_join_of_constant_windows_is_one_operator(query):
    plan = join_ops(f"REGISTER QUERY q AS {query};")
    assert "istream_join" in plan
    for gone in ("istream", "join", "window"):
        assert gone not in plan
    assert "istream_join" not in join_ops(f"REGISTER QUERY q AS {query};", fuse=False)
    eng = cq_py.Engine()
    eng.execute(JOIN_SCHEMA + f"REGISTER QUERY q AS {query};")
    assert "fused with ISTREAM" in eng._core.explain()
    assert "+ ISTREAM" in eng.explain()


@pytest.mark.parametrize(
    "query",
    [
        # A residual predicate, windows whose starts are not their rows' times or whose ends
        # are pending, a computed column (it may map two pairs to one value), a filter.
        "ISTREAM(SELECT s.a, t.d FROM s [Range 3], t [Range 3] WHERE s.a = t.k AND s.b < t.d)",
        "ISTREAM(SELECT s.a, t.d FROM s [Range 4 Slide 2], t [Range 3] WHERE s.a = t.k)",
        "ISTREAM(SELECT s.a, t.d FROM s [Rows 2], t [Range 3] WHERE s.a = t.k)",
        "ISTREAM(SELECT s.a + t.d AS x FROM s [Range 3], t [Range 3] WHERE s.a = t.k)",
        "ISTREAM(SELECT s.a, t.d FROM s [Range 3], t [Range 3] WHERE s.a = t.k AND s.a + t.d > 1)",
        "DSTREAM(SELECT s.a, t.d FROM s [Range 3], t [Range 3] WHERE s.a = t.k)",
    ],
)
def test_other_joins_keep_their_istream(query):
    assert "istream_join" not in join_ops(f"REGISTER QUERY q AS {query};")


def test_a_join_or_window_another_query_reads_is_not_fused():
    body = "SELECT s.a, t.d FROM s [Range 3], t [Range 3] WHERE s.a = t.k"
    plan = join_ops(f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});")
    assert "istream_join" not in plan
    plan = join_ops(
        f"REGISTER QUERY w AS SELECT * FROM s [Range 3]; REGISTER QUERY i AS ISTREAM({body});"
    )
    assert "istream_join" not in plan


def _join_run(query, batches, fuse, lifetime, executor, snapshot_at=None, finals=None):
    """The rows of q after close(). With `finals`, a list: after each push, the engine's least
    progress p (the minimum over s and t of the latest timestamp pushed) and every row fetched so
    far are appended to it; no row may be out at p or later (SEMANTICS.md §4: only instants below
    p are complete; a row released at p can still be cancelled by one that comes at p)."""
    eng = cq_py.Engine(lifetime=lifetime, fuse=fuse, expose_steps=True, **executor)
    eng.execute(JOIN_SCHEMA + f"REGISTER QUERY q AS {query};")
    latest: dict[str, int] = {}
    out: Counter = Counter()
    for k, (name, rows) in enumerate(batches):
        eng.push(name, pa.Table.from_pylist(rows, schema=JOIN_TYPES[name]))
        latest[name] = rows[-1]["ts"]
        if finals is not None:
            out.update(tuple(sorted(r.items())) for r in eng.fetch("q").to_pylist())
            p = min(latest.get(n, -(2**62)) for n in ("s", "t"))
            early = [r for r in out if dict(r)["ts"] >= p]
            assert not early, f"released at or after the least progress {p}: {early}"
            finals.append((p, Counter(out)))
        if k == snapshot_at:
            snap = eng.snapshot()
            eng = cq_py.Engine.restore(snap)
            assert eng.snapshot() == snap
    eng.close()
    out.update(tuple(sorted(r.items())) for r in eng.fetch("q").to_pylist())
    return out


def test_a_start_meeting_the_end_of_an_equal_pair_is_not_emitted():
    # (1, 5, 7) lives on [0, 3) and starts again at 3: ISTREAM emits it at 0 only; (1, 6, 7)
    # starts at 3 beside it; at 5 a pair of the rows at 2 ends as an equal one starts twice.
    query = "ISTREAM(SELECT s.a, s.b, t.d FROM s [Range 3], t [Range 3] WHERE s.a = t.k)"
    s = [(1, 5, 0), (2, 1, 2), (1, 5, 3), (1, 6, 3), (2, 1, 5), (2, 1, 5)]
    t = [(1, 7, 0), (2, 2, 2), (1, 7, 3), (2, 2, 5)]
    batches = [
        ("s", [{"a": a, "b": b, "ts": ts} for a, b, ts in s]),
        ("t", [{"k": k, "d": d, "ts": ts} for k, d, ts in t]),
    ]
    want = Counter(
        {
            (("a", 1), ("b", 5), ("d", 7), ("ts", 0), ("ts_step", 0)): 1,
            (("a", 1), ("b", 6), ("d", 7), ("ts", 3), ("ts_step", 0)): 1,
            (("a", 2), ("b", 1), ("d", 2), ("ts", 2), ("ts_step", 0)): 1,
            (("a", 2), ("b", 1), ("d", 2), ("ts", 5), ("ts_step", 0)): 1,
        }
    )
    for lifetime in ("direct", "negative"):
        for fuse in (True, False):
            assert _join_run(query, batches, fuse, lifetime, {}) == want, (lifetime, fuse)


def test_an_instant_split_across_pushes_is_checked_against_its_ending_pairs_once():
    # (1, 1, 2) lives on [0, 2) and starts again at 2 from the rows at 2: ISTREAM emits it at 0
    # only. The rows at 2 come in three pushes, progress reaching 2 after the second: the pair
    # ending at 2 must still cancel the start at 2 that the third push makes.
    query = "ISTREAM(SELECT s.a, s.b, t.d FROM s [Range 2], t [Range 2] WHERE s.a = t.k)"
    batches = [
        ("s", [{"a": 1, "b": 1, "ts": 0}]),
        ("t", [{"k": 1, "d": 2, "ts": 0}]),
        ("t", [{"k": 9, "d": 0, "ts": 2}]),
        ("s", [{"a": 1, "b": 1, "ts": 2}]),
        ("t", [{"k": 1, "d": 2, "ts": 2}]),
    ]
    want = Counter({(("a", 1), ("b", 1), ("d", 2), ("ts", 0), ("ts_step", 0)): 1})
    for lifetime in ("direct", "negative"):
        for executor in JOIN_EXECUTORS:
            for fuse in (True, False):
                got = _join_run(query, batches, fuse, lifetime, executor, finals=[])
                assert got == want, (lifetime, executor, fuse)


JOIN_WINDOWS = st.one_of(
    st.just(("now",)), st.just(("unbounded",)), st.integers(0, 4).map(lambda T: ("range", T))
)
JOIN_SELECTS = ["s.a, s.b, t.d", "*", "t.d, s.b", "s.b"]
JOIN_EXECUTORS = [
    {"executor": "heartbeat", "max_run": 1},
    {"hybrid": True},
    {"hybrid": False},
    {"threads": 2},
]


@st.composite
def join_stream(draw, names):
    rows, ts = [], draw(st.integers(0, 2))
    for _ in range(draw(st.integers(0, 12))):
        ts += draw(st.sampled_from([0, 0, 1, 1, 2, 3]))
        key = draw(st.one_of(st.none(), st.integers(0, 2)))
        rows.append({names[0]: key, names[1]: draw(st.integers(0, 1)), "ts": ts})
    return rows


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.data(),
    JOIN_WINDOWS,
    JOIN_WINDOWS,
    st.sampled_from(JOIN_SELECTS),
    st.sampled_from(["direct", "negative"]),
)
def test_the_fused_join_gives_istream_of_the_join(data, w1, w2, select, lifetime):
    """Against SEMANTICS.md §4's ISTREAM of the join at every instant (tests/oracle/reference.py),
    and against the unfused plan: every executor, pushes of several sizes, a snapshot midway."""
    s_rows = data.draw(join_stream(("a", "b")))
    t_rows = data.draw(join_stream(("k", "d")))
    query = f"ISTREAM(SELECT {select} FROM s {window_sql(w1)}, t {window_sql(w2)} WHERE s.a = t.k)"
    names = ["a", "b", "k", "d"] if select == "*" else [c.split(".")[1] for c in select.split(", ")]
    left = [
        ((r["a"], r["b"]), s, e) for r, (s, e) in zip(s_rows, lifetimes(s_rows, w1), strict=True)
    ]
    right = [
        ((r["k"], r["d"]), s, e) for r, (s, e) in zip(t_rows, lifetimes(t_rows, w2), strict=True)
    ]

    def expected_at(t):
        pairs = join_at(t, left, right, lambda lv, rv: lv[0] is not None and lv[0] == rv[0])
        out: Counter = Counter()
        for (a, b, k, d), m in pairs.items():
            row = {"a": a, "b": b, "k": k, "d": d}
            out[tuple(row[c] for c in names)] += m
        return out

    want = Counter(
        {(v, t): m for (v, t), m in istream_of(expected_at, instants(left, right)).items()}
    )
    chunk = data.draw(st.sampled_from([1, 3, 100]))
    batches = []
    for name, rows in (("s", s_rows), ("t", t_rows)):
        batches += [(name, rows[i : i + chunk]) for i in range(0, len(rows), chunk)]
    batches.sort(key=lambda b: b[1][0]["ts"])  # each stream in time order, interleaved
    executor = data.draw(st.sampled_from(JOIN_EXECUTORS))
    snap = data.draw(st.integers(0, len(batches))) if "executor" not in executor else None
    got = {}
    for fuse in (True, False):
        finals: list = []
        rows = _join_run(query, batches, fuse, lifetime, executor, snap, finals)
        for p, so_far in finals:  # every instant below the least progress is complete
            want_below = Counter({(v, t): m for (v, t), m in want.items() if t[0] < p})
            got_below = Counter(
                {
                    (tuple(dict(r)[c] for c in names), (dict(r)["ts"], dict(r)["ts_step"])): m
                    for r, m in so_far.items()
                }
            )
            assert got_below == want_below, (query, fuse, p)
        got[fuse] = Counter(
            {
                (tuple(dict(r)[c] for c in names), (dict(r)["ts"], dict(r)["ts_step"])): m
                for r, m in rows.items()
            }
        )
    assert got[True] == want, query
    assert got[False] == want, query


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


# ---- ISTREAM of a [Now] window of a registered stream (fusion._istream_now) ----------------------
# Every tuple of the window lives on [t, t + ε) and a registered stream carries whole ticks, so
# the ISTREAM emits each filtered, projected row at its time: the window and the ISTREAM go.


@pytest.mark.parametrize(
    "query",
    [
        "ISTREAM(SELECT * FROM s [Now] WHERE b > 0)",
        "ISTREAM(SELECT a + b AS c FROM s [Now])",
        "ISTREAM(SELECT DISTINCT a FROM s [Now])",  # not fused: DISTINCT keeps state
        "ISTREAM(SELECT a FROM s [Range 1])",  # not fused: tuples end at later instants
        "ISTREAM(SELECT a FROM s [Now], t [Now] WHERE a = k)",  # the join's fusion instead
    ],
)
def test_an_istream_of_a_now_window_of_a_stream_is_its_filters_and_projections(query):
    ops = join_ops(f"REGISTER QUERY q AS {query};")
    plain = "DISTINCT" not in query and "Range" not in query and " t " not in query
    assert (set(ops) <= {"stream_scan", "filter", "project", "sink"}) == plain, ops
    assert ops == join_ops(f"REGISTER QUERY q AS {query};", fuse=True)
    assert "istream" in join_ops(f"REGISTER QUERY q AS {query};", fuse=False)


def test_a_now_window_another_query_reads_or_a_delayed_stream_is_not_fused():
    both = (
        "REGISTER QUERY w AS SELECT a FROM s [Now];"
        "REGISTER QUERY i AS ISTREAM(SELECT a FROM s [Now]);"
    )
    ops = join_ops(both)  # (sub-plan reuse: w and i read one window and projection)
    assert ops.count("istream") == 1
    assert "window" in ops
    delayed = (
        "REGISTER QUERY d AS ISTREAM(SELECT a FROM s [Now]) <Now>;"
        "REGISTER QUERY i AS ISTREAM(SELECT a FROM d [Now]);"
    )
    ops = join_ops(delayed)
    assert "window" in ops  # d's rows carry ε-steps: i keeps its window and ISTREAM
    assert "istream" in ops
    eng = cq_py.Engine()
    eng.execute(JOIN_SCHEMA)
    eng.push("s", [{"a": 1, "b": 1, "ts": 0}])
    eng.execute("REGISTER QUERY i AS ISTREAM(SELECT a FROM s [Now]);")  # while running: kept
    assert "istream" in [n.op for n in eng._catalog.nodes.values()]


@st.composite
def now_stream(draw):
    rows, ts = [], draw(st.integers(0, 2))
    for _ in range(draw(st.integers(0, 14))):
        ts += draw(st.sampled_from([0, 0, 1, 2]))
        rows.append(
            {
                "a": draw(st.one_of(st.none(), st.integers(0, 2))),
                "b": draw(st.integers(-1, 1)),
                "ts": ts,
            }
        )
    return rows


NOW_QUERIES = [
    ("SELECT * FROM s [Now] WHERE b > 0", lambda r: r["b"] > 0, lambda r: (r["a"], r["b"])),
    ("SELECT a FROM s [Now]", lambda r: True, lambda r: (r["a"],)),
    (
        "SELECT b * 2 AS c FROM s [Now] WHERE a IS NOT NULL AND b >= 0",
        lambda r: r["a"] is not None and r["b"] >= 0,
        lambda r: (r["b"] * 2,),
    ),
]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.data(),
    now_stream(),
    st.sampled_from(range(len(NOW_QUERIES))),
    st.sampled_from(["direct", "negative"]),
)
def test_the_fused_istream_of_now_gives_the_rows_of_the_unfused_plan(data, rows, q, lifetime):
    """Against the definition (each row passing the filter, projected, at its time) and the
    unfused plan: every executor, pushes of several sizes (equal times split across pushes), a
    snapshot midway, the query registered while the engine runs."""
    select, keep, project = NOW_QUERIES[q]
    chunk = data.draw(st.sampled_from([1, 3, 100]))
    executor = data.draw(st.sampled_from(JOIN_EXECUTORS))
    late = data.draw(st.one_of(st.none(), st.integers(0, len(rows))))
    snap = data.draw(st.integers(0, len(rows))) if "executor" not in executor else None
    got = {}
    for fuse in (True, False):
        eng = cq_py.Engine(lifetime=lifetime, fuse=fuse, **executor)
        eng.execute(
            JOIN_SCHEMA + ("" if late is not None else f"REGISTER QUERY q AS ISTREAM({select});")
        )
        out: Counter = Counter()
        since = None
        for k in range(0, max(len(rows), 1), chunk):
            if late is not None and since is None and k >= late:
                since = rows[k - 1]["ts"] if k else None
                eng.execute(f"REGISTER QUERY q AS ISTREAM({select});")
                since = since if since is not None else -1
            part = rows[k : k + chunk]
            if part:
                eng.push("s", pa.Table.from_pylist(part, schema=JOIN_TYPES["s"]))
            if since is not None or late is None:
                out.update(tuple(r.values()) for r in eng.fetch("q").to_pylist())
            if snap is not None and k // chunk == snap:
                eng = cq_py.Engine.restore(eng.snapshot())
        if late is not None and since is None:
            eng.execute(f"REGISTER QUERY q AS ISTREAM({select});")
            since = rows[-1]["ts"] if rows else -1
        eng.close()
        out.update(tuple(r.values()) for r in eng.fetch("q").to_pylist())
        got[fuse] = out
    assert got[True] == got[False]
    if late is None:  # (registered while running, the window is kept: its rows come from p on)
        assert got[True] == Counter((*project(r), r["ts"]) for r in rows if keep(r))
