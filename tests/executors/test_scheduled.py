"""The scheduled executor (paper 002 §5, ``executor="scheduled"``): its options, each operator's
evaluations (one row taken from an input queue, §5.1) on a script counted by hand, the gatekeeper
switch (no resources, no gatekeepers: identical runs), and what it refuses as the heartbeat
executor does. That its results are DTS's is the conformance matrix's job
(tests/configurations.py: batch 1 and 7, the constraint on and off); the policy and the batch
accounting on hand-worked plans are in src_cpp/tests/scheduled_test.cc."""

from __future__ import annotations

import pyarrow as pa
import pytest

import cq_py
from cq_core import _core

FILTERED = (
    "REGISTER STREAM s(a INT);REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Range 2] WHERE a > 1);"
)
ROWS = pa.table({"a": [1, 2, 3, 4], "ts": [0, 0, 1, 3]})


def run(cql: str, rows: pa.Table, **options) -> cq_py.Engine:
    eng = cq_py.Engine(executor="scheduled", threads=1, **options)
    eng.execute(cql)
    eng.push("s", rows)
    eng.close()
    return eng


def evaluations(eng: cq_py.Engine) -> list[int]:
    return [op["evaluations"] for op in eng.stats()["operators"].values()]


@pytest.mark.parametrize("batch", [1, 2, 7])
def test_evaluations_are_the_rows_each_operator_takes(batch):
    # #0 scan, #1 window, #2 filter, #3 project, #4 ISTREAM, #5 output. Direct lifetime: four rows
    # reach the filter, which passes the three with a > 1 on; the batch changes only the order.
    eng = run(FILTERED, ROWS, batch=batch)
    assert eng.fetch("q").to_pylist() == [{"a": 2, "ts": 0}, {"a": 3, "ts": 1}, {"a": 4, "ts": 3}]
    assert list(eng.stats()["operators"]) == [0, 1, 2, 3, 4, 5]
    assert evaluations(eng) == [4, 4, 4, 3, 3, 3]


def test_negative_tuples_are_evaluations_too():
    # The window sends a negative tuple for each of its four rows as they leave (at 2, 3, 5 and
    # close): the filter takes 4 + 4 rows and passes 3 + 3; ISTREAM passes the 3 inserts on.
    eng = run(FILTERED, ROWS, lifetime="negative", batch=3)
    assert evaluations(eng) == [4, 4, 8, 6, 6, 3]


@pytest.mark.parametrize("batch", [1, 7])
def test_the_gatekeeper_switch_changes_nothing_without_resources(batch):
    on, off = (run(FILTERED, ROWS, batch=batch, gatekeeper=g) for g in (True, False))
    assert on.fetch("q") == off.fetch("q")
    assert on.stats() == off.stats()
    assert "gatekeeper constraint on (gatekeepers: none)" in on.explain()
    assert "gatekeeper constraint off (gatekeepers: none)" in off.explain()


def test_explain_shows_the_order_and_the_scheduler():
    eng = cq_py.Engine(executor="scheduled", batch=7, gatekeeper=False, threads=1)
    eng.execute(FILTERED)
    lines = eng.explain().splitlines()
    assert "Execution order (scheduled, topological): #0 #1 #2 #3 #4 #5" in lines
    assert "Scheduler: round_robin, batch 7, gatekeeper constraint off (gatekeepers: none)" in lines


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"scheduler": "fifo"}, "scheduler must be one of 'round_robin'; found 'fifo'"),
        ({"scheduler": None}, "scheduler must be one of 'round_robin'; found None"),
        ({"batch": 0}, "batch must be a positive integer (at most 9223372036854775807); found 0"),
        ({"batch": -3}, "found -3"),
        ({"batch": 1.5}, "batch must be a positive integer"),
        ({"gatekeeper": 1}, "gatekeeper must be True or False; found 1"),
    ],
)
def test_bad_options_are_value_errors_naming_expected_and_found(options, needle):
    with pytest.raises(ValueError, match="must be") as e:
        cq_py.Engine(executor="scheduled", **options)
    assert needle in str(e.value)


def test_the_core_checks_the_options_too():
    with pytest.raises(_core.CoreError, match="scheduler='fifo': expected 'round_robin'"):
        _core.Engine(executor="scheduled", scheduler="fifo")
    with pytest.raises(_core.CoreError, match="batch must be at least 1; found 0"):
        _core.Engine(executor="scheduled", batch=0)


def test_stats_is_refused_under_dts():
    eng = cq_py.Engine()
    eng.execute(FILTERED)
    with pytest.raises(
        cq_py.ArgumentError, match="executor='scheduled' or 'heartbeat'; found executor='dts'"
    ):
        eng.stats()


def test_stats_sums_the_engines_of_threads():
    keyed = (
        "REGISTER STREAM s(a INT);"
        "REGISTER QUERY q AS ISTREAM(SELECT a, COUNT(*) AS n FROM s [Range 2] GROUP BY a);"
    )
    counts = {}
    for threads in (1, 2):
        eng = cq_py.Engine(executor="scheduled", threads=threads)
        eng.execute(keyed)
        eng.push("s", ROWS)
        eng.close()
        counts[threads] = evaluations(eng)
    assert counts[1] == counts[2]
    assert counts[1][0] == 4  # the scan took each row once, in whichever engine


def test_a_recursive_script_is_refused_naming_the_executor():
    eng = cq_py.Engine(executor="scheduled")
    with pytest.raises(
        cq_py.CQLSemanticError, match="executor='scheduled' cannot run the recursive loop"
    ):
        eng.execute(
            "REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now] "
            "UNION ALL SELECT a + 1 AS a FROM q [Now] WHERE a < 3) <1>;"
        )


def test_snapshots_are_refused():
    eng = cq_py.Engine(executor="scheduled")
    eng.execute(FILTERED)
    with pytest.raises(cq_py.SnapshotError, match="executor='dts'"):
        eng.snapshot()
