"""A paced replay (cq_py/replay.py, ``cq replay``): every row reaches the engine as a plain run
brings it, the clocks' ticks between arrivals are arrivals of their own, the arrivals are
prepared before the clock starts, arrivals come no earlier than they are due, and bad input is
refused."""

from __future__ import annotations

import gc
import time

import pyarrow as pa
import pytest

import cq_py
from cq_py.replay import arrivals, replay, wait_until

SCRIPT = (
    "REGISTER STREAM s(a INT); REGISTER STREAM t(b INT); REGISTER CLOCK c EVERY 10 OFFSET 5;"
    "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);"
    "REGISTER QUERY m AS MASTER c SELECT a, b FROM s [Range 20], t [Range 20] WHERE a = b;"
)
S = pa.record_batch({"a": [1, 2, 2, 3], "ts": [0, 3, 3, 21]})
T = pa.record_batch({"b": [2, 3, 3], "ts": [3, 4, 30]})


def _input(push):
    return push[0]


def _plain():
    eng = cq_py.Engine(threads=1)
    eng.execute(SCRIPT)
    eng.push("s", pa.table({"a": [1, 2, 2], "ts": [0, 3, 3]}))
    eng.push("t", pa.table({"b": [2, 3], "ts": [3, 4]}))
    eng.push("s", pa.table({"a": [3], "ts": [21]}))
    eng.push("t", pa.table({"b": [3], "ts": [30]}))
    eng.close()
    return eng


def test_a_replay_gives_the_rows_of_a_plain_run_and_times_every_arrival():
    eng = cq_py.Engine(threads=1)
    eng.execute(SCRIPT)
    report = replay(eng, {"s": [S], "t": [T]}, speed=1.0, sleep=False)
    plain = _plain()
    for q in ("q", "m"):
        assert eng.fetch(q).to_pylist() == plain.fetch(q).to_pylist()
    # Rows at 0, 3, 4, 21, 30, and the clock's ticks between them: 5, 15, 25.
    assert report.ticks.tolist() == [0, 3, 4, 5, 15, 21, 25, 30]
    assert (report.latencies >= 0).all()
    assert len(report.latencies) == 8


def test_arrivals_come_no_earlier_than_they_are_due():
    eng = cq_py.Engine(threads=1)
    eng.execute(SCRIPT)
    start = time.perf_counter()
    # 30 ms of event time at speed 0.2: due over 150 ms of wall time.
    report = replay(eng, {"s": [S], "t": [T]}, speed=0.2)
    assert time.perf_counter() - start >= 0.15
    assert report.wall >= 0.15
    assert eng.fetch("q")["a"].to_pylist() == [1, 2, 2, 3]


def test_the_arrivals_are_the_rows_of_each_timestamp_of_every_input_and_the_ticks_between():
    eng = cq_py.Engine(threads=1)
    eng.execute(SCRIPT)
    # Overlapping batches of one input and the other's rows between: each time once, in order.
    s_parts = [S.slice(0, 2), S.slice(2)]
    # (Rows of one time from different inputs may come in any order, each input's in its own.)
    found = [
        (t, sorted(((name, r) for name, rows in pushes for r in rows.to_pylist()), key=_input))
        for t, pushes in arrivals(eng, {"s": s_parts, "t": [T]}, "ts")
    ]
    assert found == [
        (0, [("s", {"a": 1, "ts": 0})]),
        (3, [("s", {"a": 2, "ts": 3}), ("s", {"a": 2, "ts": 3}), ("t", {"b": 2, "ts": 3})]),
        (4, [("t", {"b": 3, "ts": 4})]),
        (5, []),
        (15, []),
        (21, [("s", {"a": 3, "ts": 21})]),
        (25, []),
        (30, [("t", {"b": 3, "ts": 30})]),
    ]
    assert arrivals(eng, {"s": [], "t": []}, "ts") == []


def test_the_wait_never_returns_before_the_due_time():
    for left in (0.0, 0.0005, 0.003, 0.02):
        due = time.perf_counter() + left
        wait_until(due)
        assert time.perf_counter() >= due
    due = time.perf_counter() + 0.01
    wait_until(due, spin=0.0)  # sleeping all the way: still not early
    assert time.perf_counter() >= due


def test_the_garbage_collector_is_back_as_it_was_after_a_replay():
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        eng = cq_py.Engine(threads=1)
        eng.execute(SCRIPT)
        replay(eng, {"s": [S], "t": [T]}, speed=1.0, sleep=False)
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() == 0
    gc.enable()


def test_a_speed_that_is_not_positive_is_refused_before_anything_runs():
    eng = cq_py.Engine(threads=1)
    eng.execute(SCRIPT)
    with pytest.raises(ValueError, match="replay speed must be positive; found 0"):
        replay(eng, {"s": [S]}, speed=0)
    assert eng.fetch("q").num_rows == 0


def test_a_negative_spin_is_refused_before_anything_runs():
    eng = cq_py.Engine(threads=1)
    eng.execute(SCRIPT)
    with pytest.raises(ValueError, match="replay spin must be zero or more seconds; found -1"):
        replay(eng, {"s": [S]}, speed=1.0, spin=-1.0)
    assert eng.fetch("q").num_rows == 0
