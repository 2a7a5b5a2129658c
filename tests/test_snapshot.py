"""Engine snapshots (``Engine.snapshot()`` / ``Engine.restore()``): a restored engine continues
exactly where the original stopped, what the snapshot carries (options, CQL, undrained results,
closed state), and the errors: damaged, truncated or foreign bytes, other plans, the heartbeat
executor. The randomized check over every query family is
tests/oracle/test_differential_snapshot.py.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

import cq_py
from cq_core import _core
from cq_py.engine import _core_error

AGG = (
    "REGISTER STREAM s(k INT, v DOUBLE, c VARCHAR);"
    "REGISTER QUERY g AS SELECT k, AVG(v) AS m, MAX(c) AS mc FROM s [Range 5] GROUP BY k;"
    "REGISTER QUERY i AS ISTREAM(SELECT k, c FROM s [Rows 2]);"
)


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "k": [i % 3 for i in range(start, start + n)],
            "v": [float(i) for i in range(start, start + n)],
            "c": [f"c{i % 4}" for i in range(start, start + n)],
            "ts": list(range(start, start + n)),
        }
    )


def drained(eng: cq_py.Engine) -> dict[str, list[dict]]:
    return {q: sorted(eng.fetch(q).to_pylist(), key=repr) for q in eng.query_names()}


def straight(**options) -> dict[str, list[dict]]:
    eng = cq_py.Engine(**options)
    eng.execute(AGG)
    eng.push("s", rows(20))
    eng.push("s", rows(20, 20))
    eng.close()
    return drained(eng)


@pytest.mark.parametrize("options", [{}, {"lifetime": "negative"}, {"hybrid": False}])
def test_restored_engine_continues_like_the_original(options):
    eng = cq_py.Engine(**options)
    eng.execute(AGG)
    eng.push("s", rows(20))
    blob = eng.snapshot()
    del eng
    again = cq_py.Engine.restore(blob)
    again.push("s", rows(20, 20))
    again.close()
    assert drained(again) == straight(**options)


def test_results_not_fetched_before_the_snapshot_come_out_after_the_restore():
    eng = cq_py.Engine()
    eng.execute(AGG)
    eng.push("s", rows(6))
    before = eng.fetch("i").num_rows
    assert before > 0
    eng.push("s", rows(6, 6))  # not fetched
    again = cq_py.Engine.restore(eng.snapshot())
    assert again.fetch("i").to_pylist() == eng.fetch("i").to_pylist()


def test_a_snapshot_restores_the_options_and_the_queries():
    eng = cq_py.Engine(
        time_unit="s",
        lifetime="negative",
        expose_steps=True,
        auto_delay=True,
        expiration="insertion_sort",
        hybrid=False,
        max_loop_steps=77,
        max_run=3,
        max_loop_ticks=55,
        max_loop_rows=66,
    )
    eng.execute("REGISTER STREAM s(a INT);")
    eng.execute("REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Range 2 SECONDS]);")
    again = cq_py.Engine.restore(eng.snapshot())
    assert (
        again.time_unit,
        again.lifetime,
        again.expose_steps,
        again.auto_delay,
        again.expiration,
        again.hybrid,
    ) == ("s", "negative", True, True, "insertion_sort", False)
    assert (again._max_loop_steps, again._max_run, again._max_loop_ticks, again._max_loop_rows) == (
        77,
        3,
        55,
        66,
    )
    assert again.stream_names() == ["s"]
    assert again.query_names() == ["q"]
    assert again.explain() == eng.explain()


def test_a_relation_delete_finds_the_row_inserted_before_the_snapshot():
    eng = cq_py.Engine()
    eng.execute("REGISTER RELATION r(k INT); REGISTER QUERY q AS SELECT k FROM r;")
    eng.push("r", [{"k": 1, "op": "+", "ts": 1}, {"k": 2, "op": "+", "ts": 2}])
    again = cq_py.Engine.restore(eng.snapshot())
    again.push("r", [{"k": 1, "op": "-", "ts": 5}])
    with pytest.raises(cq_py.InputError, match="not in the relation"):
        again.push("r", [{"k": 3, "op": "-", "ts": 6}])
    again.close()
    assert again.fetch("q").to_pylist() == [
        {"k": 1, "start": 1, "end": 5},
        {"k": 2, "start": 2, "end": None},
    ]


def test_progress_and_close_are_part_of_the_snapshot():
    eng = cq_py.Engine()
    eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
    eng.advance(10)
    again = cq_py.Engine.restore(eng.snapshot())
    with pytest.raises(cq_py.InputError, match="must not decrease"):
        again.push("s", [{"a": 1, "ts": 9}])
    eng.close()
    closed = cq_py.Engine.restore(eng.snapshot())
    with pytest.raises(cq_py.InputError, match="closed"):
        closed.push("s", [{"a": 1, "ts": 20}])


def test_a_loop_restored_between_pushes_runs_on():
    cql = (
        "REGISTER STREAM s(a INT);"
        "REGISTER QUERY c AS ISTREAM(SELECT a FROM s [Now] UNION ALL "
        "SELECT a + 1 AS a FROM c [Range 2] WHERE a < 5) <1>;"
    )
    expected = cq_py.Engine()
    expected.execute(cql)
    expected.push("s", [{"a": 1, "ts": 0}])
    expected.push("s", [{"a": 3, "ts": 2}])
    expected.close()
    eng = cq_py.Engine()
    eng.execute(cql)
    eng.push("s", [{"a": 1, "ts": 0}])  # rows of the loop wait at ticks 1, 2, ...
    again = cq_py.Engine.restore(eng.snapshot())
    again.push("s", [{"a": 3, "ts": 2}])
    again.close()
    assert again.fetch("c").to_pylist() == expected.fetch("c").to_pylist()


def test_subscribers_are_not_saved():
    eng = cq_py.Engine()
    eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
    got = []
    eng.subscribe("q", got.append)
    again = cq_py.Engine.restore(eng.snapshot())
    again.push("s", [{"a": 1, "ts": 0}])
    assert got == []
    assert again.fetch("q").num_rows == 1


def test_bytearray_and_memoryview_are_accepted():
    eng = cq_py.Engine()
    eng.execute(AGG)
    eng.push("s", rows(5))
    blob = eng.snapshot()
    for data in (bytearray(blob), memoryview(blob)):
        assert drained(cq_py.Engine.restore(data)) == drained(cq_py.Engine.restore(blob))


# ---- errors --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def blob() -> bytes:
    eng = cq_py.Engine()
    eng.execute(AGG)
    eng.push("s", rows(30))
    return eng.snapshot()


def test_snapshot_error_is_an_input_error():
    assert issubclass(cq_py.SnapshotError, cq_py.InputError)
    assert issubclass(cq_py.SnapshotError, cq_py.CQError)


@pytest.mark.parametrize("data", [b"", b"hello", b"\x00" * 64])
def test_bytes_that_are_not_a_snapshot_are_refused(data):
    with pytest.raises(cq_py.SnapshotError, match="not a cq snapshot"):
        cq_py.Engine.restore(data)


def test_every_truncation_is_refused(blob):
    for n in list(range(64)) + list(range(64, len(blob), max(1, len(blob) // 300))):
        with pytest.raises(cq_py.SnapshotError):
            cq_py.Engine.restore(blob[:n])


def test_damaged_bytes_are_refused(blob):
    for at in range(32, len(blob), max(1, len(blob) // 200)):
        bad = bytearray(blob)
        bad[at] ^= 0x01
        with pytest.raises(cq_py.SnapshotError, match="checksum"):
            cq_py.Engine.restore(bytes(bad))
    with pytest.raises(cq_py.SnapshotError, match="follow its end"):
        cq_py.Engine.restore(blob + b"\x00")


def test_another_format_version_is_named(blob):
    bad = blob[:8] + struct.pack("<I", 99) + blob[12:]
    with pytest.raises(cq_py.SnapshotError, match="format version 99; this cq reads version 9"):
        cq_py.Engine.restore(bad)


def test_a_core_snapshot_without_an_engine_description_is_refused():
    core = _core.Engine()
    with pytest.raises(cq_py.SnapshotError, match=r"not a snapshot of a cq_py\.Engine"):
        cq_py.Engine.restore(core.snapshot(b"{}"))


def core_restore(eng: cq_py.Engine, blob: bytes) -> None:
    """Restores into an engine's core as it is (Engine.restore builds an engine of its own)."""
    try:
        eng._core.restore(blob)
    except _core.CoreError as e:
        raise _core_error(e) from None


def test_a_snapshot_whose_engine_cannot_be_rebuilt_is_refused():
    core = _core.Engine()
    with pytest.raises(cq_py.SnapshotError, match=r"cannot be rebuilt here: .*time_unit"):
        cq_py.Engine.restore(
            core.snapshot(b'{"cq_py": 1, "options": {"time_unit": "days"}, "cql": []}')
        )
    with pytest.raises(cq_py.SnapshotError, match="cannot be rebuilt here"):
        cq_py.Engine.restore(
            core.snapshot(b'{"cq_py": 1, "options": {}, "cql": ["REGISTER QUERY q AS SELECT"]}')
        )


def test_a_snapshot_of_other_queries_is_refused_and_changes_nothing(blob):
    eng = cq_py.Engine()
    eng.execute(AGG.replace("[Range 5]", "[Range 6]"))
    eng.push("s", [{"k": 1, "v": 1.0, "c": "x", "ts": 3}])
    with pytest.raises(cq_py.SnapshotError, match="plan fragment 1 differs"):
        core_restore(eng, blob)
    other = cq_py.Engine(lifetime="negative")
    other.execute(AGG)
    with pytest.raises(cq_py.SnapshotError, match="lifetime='direct'"):
        core_restore(other, blob)
    # The failed restores left the engine as it was.
    eng.close()
    assert eng.fetch("i").to_pylist() == [{"k": 1, "c": "x", "ts": 3}]


def test_scheduled_engines_cannot_take_snapshots():
    eng = cq_py.Engine(executor="scheduled")
    eng.execute(AGG)
    with pytest.raises(cq_py.SnapshotError, match="executor='dts' and 'heartbeat'"):
        eng.snapshot()


def test_a_heartbeat_snapshot_keeps_what_waits_in_its_queues():
    # A join stalls on its idle input: its other input's rows wait in a queue, end fixes too.
    cql = (
        "REGISTER STREAM s(a INT); REGISTER STREAM t(a INT);"
        "REGISTER QUERY j AS ISTREAM(SELECT s.a, t.a AS b FROM s [Rows 2], t [Range 3] "
        "WHERE s.a = t.a);"
        "REGISTER QUERY g AS DSTREAM(SELECT a, COUNT(*) AS n FROM s [Rows 2] GROUP BY a);"
    )

    def run(cut: int | None) -> dict[str, list]:
        eng = cq_py.Engine(executor="heartbeat")
        eng.execute(cql)
        got: dict[str, list] = {"j": [], "g": []}
        for i in range(10):
            eng.push("s", [{"a": i % 3, "ts": i}])
            if i % 4 == 3:
                eng.push("t", [{"a": k, "ts": i} for k in range(3)])
            if i == cut:
                for q in got:
                    got[q] += eng.fetch(q).to_pylist()
                again = cq_py.Engine.restore(eng.snapshot())
                assert again.stats() == eng.stats()  # (evaluations per operator)
                eng = again
        eng.close()
        for q in got:
            got[q] += eng.fetch(q).to_pylist()
        return got

    expected = run(None)
    assert expected["j"]
    assert expected["g"]
    for cut in range(10):
        assert run(cut) == expected, cut


def test_a_failed_engine_cannot_take_a_snapshot():
    eng = cq_py.Engine(max_loop_steps=10)
    eng.execute(
        "REGISTER STREAM s(a INT); REGISTER QUERY c AS ISTREAM(SELECT a FROM s [Now] UNION ALL "
        "SELECT a + 1 AS a FROM c [Now]) <Now>;"
    )
    eng.push("s", [{"a": 1, "ts": 0}])  # the loop runs at close(), when the tick is final
    with pytest.raises(cq_py.RunawayLoopError):
        eng.close()
    with pytest.raises(cq_py.RunawayLoopError, match="stopped at an earlier error"):
        eng.snapshot()


def test_restore_wants_bytes():
    with pytest.raises(TypeError, match="bytes"):
        cq_py.Engine.restore("a string")


# ---- size ----------------------------------------------------------------------------------------


def test_snapshot_size_follows_the_state_and_shared_buffers_are_written_once():
    n = 50_000
    data = pa.table({"a": pa.array(range(n), pa.int64()), "ts": pa.array(range(n), pa.int64())})

    def size(queries: int) -> int:
        eng = cq_py.Engine()
        eng.execute(
            "REGISTER STREAM s(a INT);"
            + "".join(
                f"REGISTER QUERY q{i} AS ISTREAM(SELECT a FROM s [Range 1000000]);"
                for i in range(queries)
            )
        )
        eng.push("s", data)
        for i in range(queries):
            eng.fetch(f"q{i}")
        return len(eng.snapshot())

    one, three = size(1), size(3)
    assert 2 * 8 * n <= one < 3 * 8 * n  # the kept rows' values and timestamps, once
    assert three < one * 1.1  # three ISTREAMs keep the same input buffers: written once
