"""Timestamps become ticks in one place (cq_py.ticks): floored to the engine's unit, and refused,
never wrapped or taken for infinity, outside the ticks the core takes."""

import numpy as np
import pyarrow as pa
import pytest

import cq_py
from cq_py.ticks import MAX_TICK, MIN_TICK, to_ticks

COUNT = (
    "REGISTER STREAM s(a INT);"
    "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);"
    "REGISTER QUERY n AS ISTREAM(SELECT COUNT(*) AS n FROM s [Range Unbounded]);"
)


def engine(**options):
    eng = cq_py.Engine(**options)
    eng.execute(COUNT)
    return eng


def test_the_extremes_of_int64_are_infinities_and_not_ticks():
    assert (MIN_TICK, MAX_TICK) == (-(2**63) + 1, 2**63 - 2)
    got = to_ticks(pa.array([MIN_TICK, 0, MAX_TICK], pa.int64()), "ms")
    assert got.to_pylist() == [MIN_TICK, 0, MAX_TICK]


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63)])
def test_a_row_at_infinity_is_refused_and_changes_nothing(value):
    # It was: 2**63-1 was taken as +∞ — ISTREAM emitted it under one lifetime and not the other,
    # COUNT never counted it, and every later push failed as a decreasing timestamp.
    for lifetime in ("direct", "negative"):
        eng = engine(lifetime=lifetime)
        eng.push("s", pa.table({"a": [1], "ts": [5]}))
        with pytest.raises(cq_py.InputError) as e:
            eng.push("s", pa.table({"a": [7, 8], "ts": pa.array([6, value], pa.int64())}))
        assert e.value.stream == "s"
        assert e.value.row == 1
        # (A table already in the core's form goes in as it is: the core's words.)
        assert f"row 1 has ts {value}, outside the engine's ticks" in str(e.value)
        eng.push("s", pa.table({"a": [2], "ts": [MAX_TICK]}))  # the largest tick is a tick
        eng.close()
        assert eng.fetch("q").to_pylist() == [{"a": 1, "ts": 5}, {"a": 2, "ts": MAX_TICK}]
        counts = eng.fetch("n").column("n").to_pylist()
        assert counts[-1] == 2, lifetime


def test_an_arrow_timestamp_that_overflows_the_unit_is_refused_not_wrapped():
    # It was: timestamp[s] 2**62 became tick 0 (the product wrapped).
    eng = engine()
    with pytest.raises(cq_py.InputError) as e:
        eng.push("s", pa.table({"a": [1, 2], "ts": pa.array([0, 2**62], pa.timestamp("s"))}))
    assert e.value.row == 1
    assert e.value.stream == "s"
    assert "row 1 holds 4611686018427387904 s since the epoch, 4611686018427387904000 ms" in str(
        e.value
    )
    # Under a coarser unit the same instant fits.
    eng = engine(time_unit="s")
    eng.push("s", pa.table({"a": [1], "ts": pa.array([2**62], pa.timestamp("s"))}))
    assert eng.fetch("q").column("ts").to_pylist() == [2**62]


def test_timestamps_are_floored_to_the_unit_also_before_1970():
    us = pa.array([-1, -1000, -1500, 1500, 999, None], pa.timestamp("us"))
    assert to_ticks(us, "ms").to_pylist() == [-1, -1, -2, 1, 0, None]
    assert to_ticks(pa.chunked_array([us]), "s").to_pylist() == [-1, -1, -1, 0, 0, None]
    assert to_ticks(pa.array([-2], pa.timestamp("s", tz="Europe/Paris")), "ms").to_pylist() == [
        -2000
    ]


def test_uint64_timestamps_past_int64_are_refused():
    eng = engine()
    with pytest.raises(cq_py.InputError, match=r"row 2 holds 9223372036854775808"):
        eng.push("s", pa.table({"a": [1, 2, 3], "ts": pa.array([1, 2, 2**63], pa.uint64())}))
    eng.push("s", pa.table({"a": [1], "ts": pa.array([3], pa.uint64())}))
    assert eng.fetch("q").to_pylist() == [{"a": 1, "ts": 3}]


def test_dictionary_encoded_timestamps_are_decoded():
    ts = pa.array([1, 2, 2]).dictionary_encode()
    assert to_ticks(ts, "ms").to_pylist() == [1, 2, 2]


def test_advance_takes_ticks_within_the_range_and_datetimes():
    eng = engine()
    for bad in (2**63, 2**63 - 1, -(2**63)):
        with pytest.raises(cq_py.InputError, match=r"outside the engine's ticks.*close\(\)"):
            eng.advance(bad)
    eng.advance(np.int64(10))
    eng.advance(MAX_TICK)
    with pytest.raises(cq_py.InputError, match="progress"):
        eng.push("s", pa.table({"a": [1], "ts": [11]}))
    eng = engine(time_unit="s")
    eng.advance(np.datetime64("1970-01-01T00:00:10.5"))
    with pytest.raises(cq_py.InputError, match="progress"):
        eng.push("s", pa.table({"a": [1], "ts": [9]}))
    eng.push("s", pa.table({"a": [1], "ts": [10]}))
    with pytest.raises(cq_py.InputError, match="outside the engine's ticks"):
        engine(time_unit="ns").advance(np.datetime64(2**62, "s"))


def test_merge_by_time_checks_the_range_and_counts_rows_from_the_input_start():
    from cq_py.io.readers import merge_by_time

    batches = [
        pa.record_batch({"ts": pa.array([1, 2], pa.int64())}),
        pa.record_batch({"ts": pa.array([3, 2**63 - 1], pa.int64())}),
    ]
    with pytest.raises(cq_py.InputError) as e:
        list(merge_by_time({"s": batches}))
    assert e.value.row == 3
    assert "row 3 holds 9223372036854775807" in str(e.value)
    batches = [
        pa.record_batch({"ts": pa.array([1, 2], pa.int64())}),
        pa.record_batch({"ts": pa.array([3, None], pa.int64())}),
    ]
    with pytest.raises(cq_py.InputError) as e:
        list(merge_by_time({"s": batches}))
    assert e.value.row == 3
    assert "at row 3" in str(e.value)


def test_advance_takes_dates_of_any_numpy_unit_and_refuses_nat():
    import pandas as pd

    eng = engine(time_unit="s")
    eng.advance(np.datetime64("1970-01-02"))  # a day unit: 86,400 s
    with pytest.raises(cq_py.InputError, match="progress"):
        eng.push("s", pa.table({"a": [1], "ts": [86_399]}))
    eng.advance(pd.Timestamp("1970-01-03", tz="UTC"))
    with pytest.raises(cq_py.InputError, match="progress"):
        eng.push("s", pa.table({"a": [1], "ts": [2 * 86_400 - 1]}))
    for nat in (np.datetime64("NaT"), pd.NaT, np.datetime64("NaT", "ns")):
        with pytest.raises(cq_py.ArgumentError, match=r"advance\(.*\): not a"):
            eng.advance(nat)
