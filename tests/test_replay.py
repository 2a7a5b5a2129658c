"""A paced replay (cq_py/replay.py, ``cq replay``): every row reaches the engine as a plain run
brings it, the clocks' ticks between arrivals are arrivals of their own, arrivals come no
earlier than they are due, and bad input is refused."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

import cq_py
from cq_py.replay import replay

SCRIPT = (
    "REGISTER STREAM s(a INT); REGISTER STREAM t(b INT); REGISTER CLOCK c EVERY 10 OFFSET 5;"
    "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);"
    "REGISTER QUERY m AS MASTER c SELECT a, b FROM s [Range 20], t [Range 20] WHERE a = b;"
)
S = pa.record_batch({"a": [1, 2, 2, 3], "ts": [0, 3, 3, 21]})
T = pa.record_batch({"b": [2, 3, 3], "ts": [3, 4, 30]})


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


def test_a_speed_that_is_not_positive_is_refused_before_anything_runs():
    eng = cq_py.Engine(threads=1)
    eng.execute(SCRIPT)
    with pytest.raises(ValueError, match="replay speed must be positive; found 0"):
        replay(eng, {"s": [S]}, speed=0)
    assert eng.fetch("q").num_rows == 0
