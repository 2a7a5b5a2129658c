"""cq_py.ResourceStore (cq_py/resources.py, src_cpp/txn/resource_store.h): transactions applied
whole or not at all, from other threads while readers hold locks or pinned versions; writers
blocked by readers' shared locks until released, or given LockTimeout naming the holders."""

from __future__ import annotations

import random
import threading
import time

import pyarrow as pa
import pytest

import cq_py
from cq_py import InputError, LockTimeout
from cq_py.errors import ArgumentError
from cq_py.resources import ResourceSnapshot


def _store() -> cq_py.ResourceStore:
    store = cq_py.ResourceStore()
    store.load("x", pa.table({"id": [1, 2, 3], "v": [0, 0, 0]}), key=["id"])
    store.load("y", pa.table({"id": [1], "w": ["0"]}), key=["id"])
    return store


def test_an_updater_thread_converts_whole_tables_and_locked_readers_see_one_state() -> None:
    store = _store()
    stop = threading.Event()

    def updater() -> None:
        rng = random.Random(3)
        g = 0
        while not stop.is_set():
            g += 1
            with store.transaction(timeout=5) as tx:
                tx.upsert("x", pa.table({"id": [1, 2, 3], "v": [g, g, g]}))
                tx.upsert("y", [{"id": 1, "w": str(g)}])
            time.sleep(rng.random() * 0.001)

    t = threading.Thread(target=updater)
    t.start()
    seen = set()
    try:
        for _ in range(300):
            # A query reading x and y under two-phase locking: both locks until it is done.
            assert store._core.lock_shared("x", "q", 5.0)
            assert store._core.lock_shared("y", "q", 5.0)
            try:
                xs = set(store.read("x")["v"].to_pylist())
                ys = store.read("y")["w"].to_pylist()
            finally:
                store._core.unlock_shared("y", "q")
                store._core.unlock_shared("x", "q")
            assert len(xs) == 1
            assert [str(next(iter(xs)))] == ys
            seen.add(ys[0])
            time.sleep(0.0005)  # between queries the writer gets its turn
    finally:
        stop.set()
        t.join()
    assert len(seen) > 10  # the updates really interleaved with the reads
    log = store.update_log()
    assert log["version"].to_pylist() == list(range(1, log.num_rows + 1))


def test_a_pinned_version_does_not_change_under_later_commits() -> None:
    store = _store()
    version, before = store.read_version("x")
    with store.transaction() as tx:
        tx.upsert("x", [{"id": 1, "v": 9}])
        tx.delete("x", [2])
    assert before.to_pylist() == [{"id": 1, "v": 0}, {"id": 2, "v": 0}, {"id": 3, "v": 0}]
    after_version, after = store.read_version("x")
    assert (version, after_version) == (1, 3)  # x's load, then this commit (y's load was 2)
    assert after_version == store.version()
    assert sorted(map(tuple, (r.values() for r in after.to_pylist()))) == [(1, 9), (3, 0)]


def test_a_writer_waits_for_the_readers_lock_and_times_out_naming_the_query() -> None:
    store = _store()
    assert store._core.lock_shared("x", "q7", 1.0)
    started = time.monotonic()
    with (
        pytest.raises(
            LockTimeout, match=r"resource 'x' stayed locked past the timeout by query 'q7'"
        ),
        store.transaction(timeout=0.1) as tx,
    ):
        tx.upsert("x", [{"id": 1, "v": 5}])
    assert time.monotonic() - started >= 0.1
    assert store.read("x")["v"].to_pylist() == [0, 0, 0]  # nothing applied
    done = threading.Event()

    def writer() -> None:
        with store.transaction(timeout=10) as tx:
            tx.upsert("x", [{"id": 1, "v": 5}])
        done.set()

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(0.1)
    assert not done.is_set()  # blocked while q7 holds the lock
    store._core.unlock_shared("x", "q7")
    t.join(5)
    assert done.is_set()
    assert store.read("x").sort_by("id")["v"].to_pylist() == [5, 0, 0]
    # Without a reader nothing waits: a writer on another resource was never blocked either.
    with store.transaction(timeout=0) as tx:
        tx.upsert("y", [{"id": 2, "w": "b"}])


def _commit(store: cq_py.ResourceStore, *changes: tuple[str, str, object]) -> None:
    """One transaction making ``changes`` (method, resource, data) in order."""
    with store.transaction() as tx:
        for method, resource, data in changes:
            getattr(tx, method)(resource, data)


def _raises_inside(store: cq_py.ResourceStore) -> None:
    with store.transaction() as tx:
        tx.upsert("x", [{"id": 1, "v": 1}])
        raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            [("upsert", "x", [{"id": 1, "v": 1}]), ("delete", "y", [42])],
            "resource 'y': delete of a key it does not hold",
        ),
        (
            [
                ("upsert", "x", [{"id": 1, "v": 1}]),
                ("upsert", "x", pa.table({"id": ["a"], "v": [1]})),
            ],
            "upsert to 'x': values that are not of the column's type",
        ),
        ([("upsert", "x", pa.table({"id": [1]}))], r"expected columns \['id', 'v'\]"),
        ([("upsert", "x", [{"id": 1, "v": 1}, {"id": 1, "v": 2}])], "two rows with one key"),
        ([("upsert", "x", [{"id": None, "v": 1}])], "a NULL in the key"),
        ([("upsert", "z", [{"id": 1}])], r"no resource 'z' in the store; it holds \['x', 'y'\]"),
    ],
)
def test_a_change_that_does_not_fit_leaves_every_resource_as_it_was(changes, message) -> None:
    store = _store()
    version = store.version()
    with pytest.raises(InputError, match=message):
        _commit(store, *changes)
    with pytest.raises(RuntimeError, match="boom"):
        _raises_inside(store)
    assert store.version() == version
    assert store.read("x")["v"].to_pylist() == [0, 0, 0]
    assert store.read("y").num_rows == 1


def test_loading_defines_once_and_must_agree() -> None:
    store = cq_py.ResourceStore()
    with pytest.raises(ArgumentError, match="key must name its key columns"):
        store.load("x", [{"id": 1}])
    with pytest.raises(ArgumentError, match="key columns \\['nope'\\] are not among \\['id'\\]"):
        store.load("x", [{"id": 1}], key=["nope"])
    with pytest.raises(InputError, match="resource 'x': key column 'id' twice"):
        store.load("x", [{"id": 1}], key=["id", "id"])
    with pytest.raises(InputError, match="columns \\['d'\\] have types cq lacks"):
        store.load("x", pa.table({"id": [1], "d": pa.array([1], pa.int8())}), key=["id"])
    store.load("x", [{"id": 1, "v": "a"}], key=["id"])
    with pytest.raises(ArgumentError, match="the resource's key is \\['id'\\]; found \\['v'\\]"):
        store.load("x", [{"id": 1, "v": "a"}], key=["v"])
    with pytest.raises(ArgumentError, match="timeout must be a number of seconds"):
        store.transaction(timeout=-1)
    tx = store.transaction()
    with pytest.raises(ArgumentError, match="inside its with block"):
        tx.upsert("x", [{"id": 2, "v": "b"}])
    assert store.names() == ["x"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"id": 7, "p": 0}, {"id": None, "p": 1}], r"a NULL in the key \(row 1\)"),
        ([{"id": 1, "p": 0}, {"id": 1, "p": 7}], r"two rows with one key in one change \(row 1\)"),
    ],
)
def test_a_first_load_refused_leaves_the_resource_undefined(rows, message) -> None:
    # (The crash fuzzer: the refused load used to define 'y' with its columns all the same, so
    # that a REGISTER RESOURCE y of other columns was then refused.)
    store = cq_py.ResourceStore()
    with pytest.raises(InputError, match=message):
        store.load("y", rows, key=["id"])
    assert (store.names(), store.version()) == ([], 0)
    store.load("y", [{"id": 1, "v": 2.5}], key=["id"])
    assert store.read("y").to_pylist() == [{"id": 1, "v": 2.5}]


def test_an_integer_past_64_bits_is_an_input_error_naming_the_call() -> None:
    # (The crash fuzzer: pyarrow's OverflowError came through.)
    store = cq_py.ResourceStore()
    with pytest.raises(InputError, match=r"load\('x'\): rows that do not fit the columns"):
        store.load("x", [{"id": 1, "v": 2**70}], key=["id"])
    assert store.names() == []
    store.load("x", [{"id": 1, "v": 2}], key=["id"])
    with pytest.raises(InputError, match="upsert to 'x': rows that do not fit the columns"):
        _commit(store, ("upsert", "x", [{"id": 2**64, "v": 1}]))
    with pytest.raises(InputError, match="delete from 'x': rows that do not fit the columns"):
        _commit(store, ("delete", "x", [2**70]))
    assert (store.version(), store.read("x").to_pylist()) == (1, [{"id": 1, "v": 2}])


def test_set_model_waits_for_the_queries_holding_it_and_versions_it() -> None:
    store = _store()
    store.set_model("score", lambda x: {"s": x})
    first, _ = store.model("score")
    assert store._core.lock_shared("score", "q3", 1.0)
    with pytest.raises(
        LockTimeout, match="resource 'score' stayed locked past the timeout by query 'q3'"
    ):
        store.set_model("score", lambda x: {"s": -x}, timeout=0.05)
    assert store.model("score")[1](2) == {"s": 2}  # the old one stays
    done = threading.Event()

    def swap() -> None:
        store.set_model("score", lambda x: {"s": -x}, timeout=10)
        done.set()

    t = threading.Thread(target=swap)
    t.start()
    time.sleep(0.05)
    assert not done.is_set()
    store._core.unlock_shared("score", "q3")
    t.join(5)
    version, fn = store.model("score")
    assert version > first
    assert fn(2) == {"s": -2}
    assert store.names() == ["x", "y"]  # models are not resources
    with pytest.raises(InputError, match="is a model"):
        _commit(store, ("upsert", "score", [{"id": 1}]))
    with pytest.raises(InputError, match="no model 'nope'"):
        store.model("nope")
    with pytest.raises(ArgumentError, match="expected a callable"):
        store.set_model("score", 3)


def test_a_snapshots_lookup_returns_the_rows_holding_the_probes_keys_once_in_its_order() -> None:
    # A copy in two chunks, a key of two columns; probes repeated, missing, or holding a NULL.
    rows = pa.concat_tables(
        [
            pa.table({"a": [3, 1, 2], "b": ["p", "q", "p"], "v": [30.0, 10.0, 20.0]}),
            pa.table({"a": [1, 4], "b": ["p", "p"], "v": [11.0, 40.0]}),
        ]
    )
    snap = ResourceSnapshot("pairs", 5, rows, ["a", "b"])
    probes = pa.record_batch({"b": ["p", "p", "q", None, "p", "x"], "a": [2, 2, 1, 3, 1, 2]})
    version, found = snap.read_lookup(probes)
    assert version == 5
    # The semi-join the core's matching replaced, in the copy's order.
    semi = rows.join(pa.table(probes).drop_null(), keys=["a", "b"], join_type="left semi")
    assert found.to_pylist() == sorted(semi.to_pylist(), key=rows.to_pylist().index)
    assert found.to_pylist() == [
        {"a": 1, "b": "q", "v": 10.0},
        {"a": 2, "b": "p", "v": 20.0},
        {"a": 1, "b": "p", "v": 11.0},
    ]
    assert snap.read_lookup(pa.record_batch({"a": [9], "b": ["p"]}))[1].num_rows == 0
    # What the core reads through it: the same rows, each probe matched to its own.
    _, (schema, array) = snap.lookup(probes.select(["a", "b"]).__arrow_c_array__())
    assert pa.RecordBatch._import_from_c_capsule(schema, array).to_pylist() == found.to_pylist()


def test_a_snapshot_with_two_rows_of_one_key_or_probes_of_other_types_is_an_input_error() -> None:
    twice = ResourceSnapshot("x", 1, pa.table({"id": [1, 2, 1], "v": ["a", "b", "c"]}), ["id"])
    with pytest.raises(InputError, match=r"resource 'x' returned two rows with one key"):
        twice.read_lookup(pa.record_batch({"id": [2]}))
    snap = ResourceSnapshot("x", 1, pa.table({"id": [1, 2], "v": ["a", "b"]}), ["id"])
    with pytest.raises(InputError, match=r"resource 'x': probe keys of types \(BIGINT\) expected"):
        snap.read_lookup(pa.record_batch({"id": ["1"]}))
    assert snap.read_lookup(pa.record_batch({"id": [1]}))[1].to_pylist() == [{"id": 1, "v": "a"}]
