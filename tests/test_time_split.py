"""``cq_py.run(threads=N)`` split by time (cq_py/time_split.py, the run path in cq_py/engine.py):
the bounds and warm-ups, then random scripts of windowed aggregates, joins, ISTREAM and
DSTREAM over adversarial data giving one engine's outputs exactly (the same bag of rows at every
timestamp, in time order), and the shapes no warm-up bounds falling back to the usual run."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
import cq_py.engine
from cq_py.spark.lookback import Lookback
from cq_py.time_split import bounds, cut_by_time, ticks_of, warmup_start

STREAMS = (
    "REGISTER STREAM e(key BIGINT, val BIGINT, x DOUBLE); REGISTER STREAM f(key BIGINT, w BIGINT);"
)


# -- the bounds and warm-ups ---------------------------------------------------------------------


def test_bounds_are_even_shares_and_keep_a_timestamp_in_one_share():
    ts = np.array([0, 0, 1, 1, 1, 1, 2, 3])
    assert bounds(ts, 2) == [1]  # row 4 has ts 1: the slice starts at ts 1's first row
    assert bounds(ts, 4) == [1, 2]  # two shares fall in ts 1: one bound
    assert bounds(np.array([5]), 2) == []
    assert bounds(np.array([4, 4, 4]), 3) == []


def test_warm_up_by_ticks_and_rows_is_their_union():
    ts = np.array([0, 2, 2, 5, 7, 7, 9])
    t = pa.table({"ts": ts})
    assert warmup_start(ts, t, 4, Lookback(ticks=2), 10) == 3  # ts >= 5
    assert warmup_start(ts, t, 4, Lookback(ticks=5), 10) == 1  # ts >= 2: all its rows
    assert warmup_start(ts, t, 4, Lookback(ticks=2, rows=3), 10) == 1
    assert warmup_start(ts, t, 4, Lookback(), 10) == 4
    assert warmup_start(ts, t, 4, Lookback(rows=3), 2) is None  # longer than the slice


def test_warm_up_per_key_reaches_every_key_met_before():
    n = 20_000
    keys = np.arange(n) % 50
    keys[100] = 999  # a rare key, met once long before the slice: the whole prefix is needed
    t = pa.table({"key": keys, "ts": np.arange(n)})
    ts = np.arange(n)
    assert warmup_start(ts, t, 15_000, Lookback(per_key=(("key", 3),)), 15_000) == 0
    assert warmup_start(ts, t, 15_000, Lookback(per_key=(("key", 3),)), 5_000) is None
    # Without it the 150 rows before the slice hold 3 rows of every key.
    keys[100] = 7
    t = pa.table({"key": keys, "ts": ts})
    assert (
        warmup_start(ts, t, 15_000, Lookback(per_key=(("key", 3),)), 5_000) == 15_000 - 150
    )  # 3 rows of each of the 50 keys


def test_warm_up_per_key_of_strings_with_nulls():
    keys = pa.array(["a", None, "b"] * 3000)
    t = pa.table({"key": keys, "ts": np.arange(9000)})
    got = warmup_start(np.arange(9000), t, 8000, Lookback(per_key=(("key", 2),)), 8000)
    assert got == 8000 - 6


def test_ticks_of_and_cut_by_time():
    assert ticks_of(pa.chunked_array([[1, None]], pa.int64())) is None
    assert ticks_of(pa.chunked_array([pa.array([1, 2], pa.timestamp("ms"))])) is None
    assert ticks_of(pa.chunked_array([[1], [2, 3]], pa.int32())).tolist() == [1, 2, 3]
    out = pa.Table.from_batches([pa.record_batch({"ts": [1, 2]}), pa.record_batch({"ts": [2, 4]})])
    assert cut_by_time(out, 2, None).column("ts").to_pylist() == [2, 2, 4]
    assert cut_by_time(out, None, 2).column("ts").to_pylist() == [1]
    assert cut_by_time(out, 3, 4).num_rows == 0
    assert cut_by_time(out, 5, None).num_rows == 0


# -- one engine's results ------------------------------------------------------------------------


class Spy:
    """Records whether each run was split by time (``_run_sliced`` gave outputs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.sliced: list[bool] = []
        real = cq_py.engine._run_sliced

        def spy(*args, **kwargs):
            out = real(*args, **kwargs)
            self.sliced.append(out is not None)
            return out

        monkeypatch.setattr(cq_py.engine, "_run_sliced", spy)


def per_instant(table: pa.Table) -> Counter:
    return Counter(tuple(r.values()) for r in table.to_pylist())


def assert_same(one: dict[str, pa.Table], two: dict[str, pa.Table]) -> None:
    assert one.keys() == two.keys()
    for q in one:
        assert one[q].schema == two[q].schema, q
        assert per_instant(two[q]) == per_instant(one[q]), q
        ts = two[q].column("ts").to_numpy()
        assert (np.diff(ts) >= 0).all(), f"{q}: not in time order"


def events(n: int, keys: int, seed: int, gaps: bool = False, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    steps = rng.integers(0, 3, n)  # runs of equal timestamps
    if gaps and n > 2:
        steps[n // 2] = 500  # a stretch of time with no rows at all
    return pa.table(
        {
            "key": rng.integers(0, keys, n),
            "val": rng.integers(-50, 1000, n),
            "x": rng.random(n),
            "ts": start + np.cumsum(steps),
        }
    )


W = {
    "W2": "ISTREAM(SELECT key, AVG(val) AS a FROM e [Range 100 Slide 10] GROUP BY key)",
    "W3": "ISTREAM(SELECT key, COUNT(*) AS c FROM e [Range 10 Slide 10] GROUP BY key)",
    "W5": "ISTREAM(SELECT key, AVG(val) AS a FROM e [Partition By key Rows 10] GROUP BY key)",
}


@pytest.mark.parametrize("workload", sorted(W))
@pytest.mark.parametrize("threads", [2, 3])
def test_the_issue_workloads_split_by_time_equal_one_engine(workload, threads, monkeypatch):
    spy = Spy(monkeypatch)
    script = f"{STREAMS} REGISTER QUERY q AS {W[workload]};"
    data = {"e": events(20_000, 50, seed=3)}
    one = cq_py.run(script, data, threads=1)
    two = cq_py.run(script, data, threads=threads, batch_size=999)
    assert spy.sliced == [True]
    assert_same(one, two)
    assert two["q"].num_rows > 1000


WINDOWS = [
    "[Now]",
    "[Range 1]",
    "[Range 7]",
    "[Range 20 Slide 5]",
    "[Range 6 Slide 6]",
    "[Rows 1]",
    "[Rows 5]",
    "[Partition By key Rows 1]",
    "[Partition By key Rows 3]",
]
AGGREGATES = ["COUNT(*)", "SUM(val)", "AVG(val)", "MIN(x)", "MAX(val)", "COUNT(DISTINCT val)"]


@st.composite
def scripts(draw) -> str:
    queries = []
    for i in range(draw(st.integers(1, 3))):
        rel = draw(st.sampled_from(["ISTREAM", "DSTREAM"]))
        win = draw(st.sampled_from(WINDOWS))
        shape = draw(st.sampled_from(["aggregate", "filter", "join", "total"]))
        if shape == "aggregate":
            aggs = ", ".join(
                draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=2, unique=True))
            )
            body = f"SELECT key, {aggs} FROM e {win} GROUP BY key"
        elif shape == "filter":
            body = f"SELECT key, val FROM e {win} WHERE val > {draw(st.integers(0, 900))}"
        elif shape == "join":
            other = draw(st.sampled_from(["[Now]", "[Range 5]", "[Rows 2]", "[Range 9]"]))
            body = f"SELECT e.key, e.val, f.w FROM e {win}, f {other} WHERE e.key = f.key"
        else:
            body = f"SELECT COUNT(*) AS c, MAX(val) AS m FROM e {win}"
        queries.append(f"REGISTER QUERY q{i} AS {rel}({body});")
    return STREAMS + "".join(queries)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    script=scripts(),
    n=st.sampled_from([1, 2, 3, 40, 700, 3000]),
    m=st.sampled_from([0, 1, 50, 1500]),
    keys=st.sampled_from([1, 3, 40, 2000]),
    gaps=st.booleans(),
    seed=st.integers(0, 2**16),
    threads=st.sampled_from([2, 3, 4]),
    batch=st.sampled_from([1, 97, 500]),
)
def test_random_scripts_split_by_time_equal_one_engine(
    script, n, m, keys, gaps, seed, threads, batch, monkeypatch
):
    # Adversarial data: one-row inputs, few or many (rare) keys, runs of equal timestamps (so
    # slices start inside a run's timestamp), a stretch without rows (an empty slice), an input
    # that starts later than the other or has no rows.
    data = {"e": events(n, keys, seed, gaps)}
    if m:
        f = events(m, keys, seed + 1, start=int(seed % 50))
        data["f"] = pa.table({"key": f["key"], "w": f["val"], "ts": f["ts"]})
    one = cq_py.run(script, data, threads=1)
    two = cq_py.run(script, data, threads=threads, batch_size=batch)
    assert_same(one, two)


def test_most_random_cases_do_split(monkeypatch):
    """The differential above would pass if nothing were split: count that splits happen."""
    spy = Spy(monkeypatch)
    script = (
        f"{STREAMS} REGISTER QUERY q0 AS DSTREAM(SELECT e.key, e.val, f.w FROM e [Rows 5], "
        "f [Range 9] WHERE e.key = f.key);"
        "REGISTER QUERY q1 AS ISTREAM(SELECT key, MIN(x), COUNT(DISTINCT val) FROM e "
        "[Partition By key Rows 3] GROUP BY key);"
    )
    f = events(1500, 40, 9)
    data = {"e": events(3000, 40, 8, gaps=True), "f": f.rename_columns(["key", "w", "x", "ts"])}
    data["f"] = data["f"].drop_columns(["x"])
    one = cq_py.run(script, data, threads=1)
    assert_same(one, cq_py.run(script, data, threads=3, batch_size=100))
    assert spy.sliced == [True]
    # Shares shorter than a batch (65,536 rows) are not worth an engine each.
    assert_same(one, cq_py.run(script, data, threads=3))
    assert spy.sliced == [True, False]


@pytest.mark.parametrize(
    "query",
    [
        "ISTREAM(SELECT key, SUM(x) FROM e [Range 10] GROUP BY key)",  # inexact
        "RSTREAM(SELECT key, MAX(val) FROM e [Range 7] GROUP BY key)",
        "ISTREAM(SELECT key, val FROM e [Range Unbounded])",
        "SELECT key, COUNT(*) AS c FROM e [Range 50] GROUP BY key",  # relation-valued
        "ISTREAM(SELECT key, val FROM e [Now]) <3>",  # a delay
    ],
)
def test_refused_shapes_fall_back_to_the_usual_run(query, monkeypatch):
    spy = Spy(monkeypatch)
    script = f"{STREAMS} REGISTER QUERY q AS {query};"
    data = {"e": events(2000, 30, seed=5)}
    one = cq_py.run(script, data, threads=1)
    two = cq_py.run(script, data, threads=2, batch_size=100)
    assert spy.sliced == [False]
    col = "ts" if "ts" in one["q"].column_names else "start"
    assert one["q"].num_rows == two["q"].num_rows > 0
    assert Counter(one["q"].column(col).to_pylist()) == Counter(two["q"].column(col).to_pylist())


def test_a_warm_up_as_long_as_its_share_falls_back(monkeypatch):
    spy = Spy(monkeypatch)
    script = f"{STREAMS} REGISTER QUERY q AS {W['W5']};"
    e = events(4000, 3, seed=2)
    keys = e["key"].to_numpy().copy()
    keys[0] = 77  # a key met once, at the start: the last slice's warm-up is the whole input
    data = {"e": e.set_column(0, "key", pa.array(keys))}
    assert_same(
        cq_py.run(script, data, threads=1), cq_py.run(script, data, threads=2, batch_size=100)
    )
    assert spy.sliced == [False]


def test_timestamps_as_arrow_timestamps_fall_back(monkeypatch):
    spy = Spy(monkeypatch)
    script = f"{STREAMS} REGISTER QUERY q AS {W['W3']};"
    e = events(3000, 5, seed=2)
    data = {"e": e.set_column(3, "ts", e["ts"].cast(pa.timestamp("ms")))}
    assert_same(
        cq_py.run(script, data, threads=1), cq_py.run(script, data, threads=2, batch_size=100)
    )
    assert spy.sliced == [False]


def test_an_input_out_of_order_is_reported_as_by_one_engine():
    script = f"{STREAMS} REGISTER QUERY q AS {W['W3']};"
    e = events(3000, 5, seed=2)
    ts = e["ts"].to_numpy().copy()
    ts[2500] = 0
    data = {"e": e.set_column(3, "ts", pa.array(ts))}
    with pytest.raises(cq_py.InputError) as one:
        cq_py.run(script, data, threads=1)
    with pytest.raises(cq_py.InputError) as two:
        cq_py.run(script, data, threads=2, batch_size=100)
    assert two.value.row == one.value.row == 2500


def test_a_script_reading_a_table_falls_back(tmp_path, monkeypatch):
    # REGISTER TABLE is a relation the engine refreshes: its rows live until changed.
    import sqlite3

    db = tmp_path / "t.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t (k INTEGER, v TEXT)")
        c.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    spy = Spy(monkeypatch)
    script = (
        f"REGISTER TABLE t FROM 'sqlite:///{db}'; {STREAMS}"
        "REGISTER QUERY q AS ISTREAM(SELECT e.key, t.v FROM e [Range 5], t WHERE e.key = t.k);"
    )
    data = {"e": events(3000, 3, seed=4)}
    one = cq_py.run(script, data, threads=1)
    assert_same(one, cq_py.run(script, data, threads=2, batch_size=100))
    assert one["q"].num_rows > 100
    assert spy.sliced == [False]


@pytest.mark.parametrize("executor", ["dts", "heartbeat"])
@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_both_executors_and_lifetime_methods(executor, lifetime, monkeypatch):
    spy = Spy(monkeypatch)
    queries = [
        *W.values(),
        "DSTREAM(SELECT e.key, e.val, f.w FROM e [Rows 5], f [Range 9] WHERE e.key = f.key)",
    ]
    f = events(1500, 40, 9)
    data = {
        "e": events(3000, 40, 8, gaps=True),
        "f": pa.table({"key": f["key"], "w": f["val"], "ts": f["ts"]}),
    }
    options = {"executor": executor, "lifetime": lifetime}
    for query in queries:
        script = f"{STREAMS} REGISTER QUERY q AS {query};"
        one = cq_py.run(script, data, threads=1, **options)
        assert_same(one, cq_py.run(script, data, threads=2, batch_size=100, **options))
    assert spy.sliced == [True] * len(queries)
