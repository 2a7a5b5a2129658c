"""The reference join (paper 002 §7; src_cpp/operators/reference_join.*): a windowed stream's rows
joined with a resource of the in-process store as it stands when each row is processed, under
``executor="scheduled"`` with ``txn="none"``. Against the oracle (tests/oracle/reference.py): with
the store not updated during the run, the resource is a static relation; with updates between
pushes, each row's results are the join with the resource frozen at the version the read log says
that row read. ACCESS KEY and SCAN give the same rows."""

from __future__ import annotations

import random
import time
from collections import Counter

import pyarrow as pa
import pytest

import cq_py
from cq_py import CQLSemanticError
from cq_py.resources import ResourceStore
from oracle.reference import Col, frozen_resource, istream, reference_join, relation

STREAM = "REGISTER STREAM s(k BIGINT, a BIGINT);"


def resource_sql(access: str) -> str:
    return f"REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id) ACCESS {access};"


QUERY = (
    "REGISTER QUERY q AS ISTREAM(SELECT s.a, s.k, x.v FROM s [Range 3], x "
    "WHERE s.k = x.id AND x.v > 1.0);"
)


def rows_of(seed: int, n: int, t0: int = 0) -> list[dict]:
    rng = random.Random(seed)
    t, out = t0, []
    for i in range(n):
        t += rng.choice([0, 1, 1, 2])
        out.append({"k": rng.randint(0, 6), "a": i, "ts": t})
    return out


def content(seed: int) -> list[dict]:
    rng = random.Random(seed)
    ids = rng.sample(range(7), 5)
    return [{"id": i, "v": rng.choice([0.5, 1.5, 2.5, 3.5])} for i in ids]


def run(store: ResourceStore, access: str, pushes: list[list[dict]], between=None, **options):
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, **options)
    eng.execute(STREAM + resource_sql(access) + QUERY)
    for k, rows in enumerate(pushes):
        eng.push("s", pa.Table.from_pylist(rows, schema=SCHEMA))
        if between is not None:
            between(k)
    eng.close()
    return eng


SCHEMA = pa.schema([("k", pa.int64()), ("a", pa.int64()), ("ts", pa.int64())])


def got(eng: cq_py.Engine) -> Counter:
    return Counter(((r["a"], r["k"], r["v"]), (r["ts"], 0)) for r in eng.fetch("q").to_pylist())


def oracle(rows: list[dict], version_at) -> Counter:
    left = relation(rows, ("range", 3), None, [Col("a", "int"), Col("k", "int")])
    joined = reference_join(left, version_at, lambda lv, rv: lv[1] == rv[0] and rv[1] > 1.0)
    return istream([((a, k, v), s, e) for (a, k, _, v), s, e in joined])


@pytest.mark.parametrize("access", ["KEY", "SCAN"])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_a_resource_not_updated_is_a_static_relation(access: str, batch: int, seed: int) -> None:
    store = ResourceStore()
    rows = content(seed)
    store.load("x", rows, key=["id"])
    stream = rows_of(seed, 25)
    eng = run(store, access, [stream[:10], stream[10:]], batch=batch)
    static = frozen_resource(rows, ["id", "v"])
    assert got(eng) == oracle(stream, lambda _, s: static)
    log = eng.read_log()
    assert set(log["version"].to_pylist()) == {1}
    # Under the scheduled executor one read is one row's evaluation.
    assert log.num_rows == len(stream)
    assert log["instant"].to_pylist() == [r["ts"] for r in stream]


@pytest.mark.parametrize("seed", range(8))
def test_updates_between_pushes_show_in_later_rows(seed: int) -> None:
    store = ResourceStore()
    store.load("x", content(seed), key=["id"])
    versions = {1: content(seed)}
    # Five pushes of 8 rows, each starting at a later instant than the last one ended.
    pushes: list[list[dict]] = []
    for k in range(5):
        pushes.append(rows_of(seed * 10 + k, 8, pushes[-1][-1]["ts"] + 1 if pushes else 0))
    stream = [r for p in pushes for r in p]
    rng = random.Random(seed)

    def update(k: int) -> None:
        with store.transaction() as tx:
            tx.upsert("x", [{"id": rng.randint(0, 6), "v": rng.choice([0.5, 2.0, 4.0])}])
            have = store.read("x")["id"].to_pylist()
            if len(have) > 2:
                tx.delete("x", [have[0]])
        v, table = store.read_version("x")
        versions[v] = table.to_pylist()

    eng = run(store, "KEY", pushes, between=update)
    log = eng.read_log().to_pylist()
    assert len(log) == len(stream)
    # A row pushed after the k-th update read version k + 1 (nothing else commits meanwhile).
    for k, push in enumerate(pushes):
        for r, entry in zip(push, log[8 * k : 8 * k + 8], strict=True):
            assert (entry["instant"], entry["version"]) == (r["ts"], k + 1)
    frozen = {v: frozen_resource(rows, ["id", "v"]) for v, rows in versions.items()}
    version_of: dict[tuple, int] = {}
    for entry in log:
        version_of.setdefault((entry["instant"], 0), entry["version"])
    # Rows of one instant are pushed together, so each instant read one version.
    assert got(eng) == oracle(stream, lambda _, s: frozen[version_of[s]])
    # The updates changed what later rows joined: the first version alone gives other rows.
    assert got(eng) != oracle(stream, lambda _, s: frozen[1])
    assert len(set(version_of.values())) > 1


def test_scan_and_access_key_give_the_same_rows() -> None:
    for seed in range(4):
        results = []
        for access in ("KEY", "SCAN"):
            store = ResourceStore()
            store.load("x", content(seed), key=["id"])
            results.append(got(run(store, access, [rows_of(seed, 30)])))
        assert results[0] == results[1]


def test_a_scan_reads_every_row_and_a_lookup_only_the_rows_found() -> None:
    store = ResourceStore()
    store.load("x", [{"id": 1, "v": 2.0}, {"id": 2, "v": 3.0}, {"id": 3, "v": 0.0}], key=["id"])
    rows = [{"k": 1, "a": 0, "ts": 0}, {"k": 9, "a": 1, "ts": 1}]
    key = run(store, "KEY", [rows]).read_log()
    scan = run(store, "SCAN", [rows]).read_log()
    assert key["rows"].to_pylist() == [1, 0]
    assert scan["rows"].to_pylist() == [3, 3]
    assert key.column_names == ["operator", "resource", "version", "instant", "rows"]
    assert key["resource"].to_pylist() == ["x", "x"]


def test_a_row_window_keeps_each_row_alive_as_its_stream_row() -> None:
    store = ResourceStore()
    store.load("x", [{"id": 1, "v": 2.0}, {"id": 2, "v": 3.0}], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1)
    eng.execute(
        STREAM + resource_sql("KEY") + "REGISTER QUERY q AS DSTREAM(SELECT s.a, x.v FROM "
        "s [Rows 1], x WHERE s.k = x.id);"
    )
    eng.push(
        "s", [{"k": 1, "a": 10, "ts": 0}, {"k": 2, "a": 20, "ts": 2}, {"k": 1, "a": 30, "ts": 5}]
    )
    eng.close()
    # Each joined row ends when the next stream row arrives (the window decides).
    assert eng.fetch("q").to_pylist() == [
        {"a": 10, "v": 2.0, "ts": 2},
        {"a": 20, "v": 3.0, "ts": 5},
    ]


def test_the_store_resource_is_defined_from_the_declaration_when_absent() -> None:
    store = ResourceStore()
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1)
    eng.execute(STREAM + resource_sql("KEY") + QUERY)
    assert store.schema("x")[1] == ["id"]
    with store.transaction() as tx:
        tx.upsert("x", [{"id": 4, "v": 9.0}])
    eng.push("s", [{"k": 4, "a": 1, "ts": 0}])
    eng.close()
    assert eng.fetch("q").to_pylist() == [{"a": 1, "k": 4, "v": 9.0, "ts": 0}]


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (
            "REGISTER RESOURCE x (id BIGINT, v VARCHAR) KEY (id);",
            (
                r"registered as \(id BIGINT, v VARCHAR\) KEY \(id\), but the store holds it as "
                r"\(id BIGINT, v DOUBLE\) KEY \(id\)"
            ),
        ),
        (
            "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (v) ACCESS SCAN;",
            r"KEY \(v\), but the store holds it as \(id BIGINT, v DOUBLE\) KEY \(id\)",
        ),
    ],
)
def test_a_declaration_unlike_the_store_is_refused_naming_both(declared, message) -> None:
    store = ResourceStore()
    store.load("x", [{"id": 1, "v": 2.0}], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1)
    with pytest.raises(CQLSemanticError, match=message):
        eng.execute(STREAM + declared + QUERY.replace("x.v > 1.0", "x.id > 0"))
    assert eng.query_names() == []


def test_a_script_refused_for_one_resource_binds_and_defines_none() -> None:
    # (The crash fuzzer: x, read by the same query as a y unlike the store's, stayed defined in
    # the store and bound with the refused script's columns; a later script declaring x anew
    # then ran on the old binding: "cq internal error ... planner typed column 'v' as utf8".)
    store = ResourceStore()
    store.load("y", [{"id": 1}], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1)
    with pytest.raises(CQLSemanticError, match="resource 'y' is registered as"):
        eng.execute(
            "REGISTER STREAM s(k BIGINT, a BIGINT);"
            "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
            "REGISTER RESOURCE y (id BIGINT, p BIGINT) KEY (id);"
            "REGISTER QUERY q AS ISTREAM(SELECT s.a, x.v, y.p FROM s [Now], x, y "
            "WHERE s.k = x.id AND s.k = y.id);"
        )
    assert store.names() == ["y"]
    assert eng.resources_read() == []
    eng.execute(
        "REGISTER STREAM s(k BIGINT, a BIGINT);"
        "REGISTER RESOURCE x (id BIGINT, v VARCHAR) KEY (id);"
        "REGISTER QUERY q AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
    )
    store.load("x", [{"id": 1, "v": "one"}])
    eng.push("s", [{"k": 1, "a": 5, "ts": 0}])
    eng.close()
    assert eng.fetch("q").to_pylist() == [{"a": 5, "v": "one", "ts": 0}]


def test_a_script_the_core_refuses_leaves_no_resource_defined_in_the_store() -> None:
    # (The crash fuzzer: the core refused the redo area after x and y were defined in the store,
    # which kept them.)
    store = ResourceStore()
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn="snapshot")
    with pytest.raises(CQLSemanticError, match="cannot be reset"):
        eng.execute(
            "REGISTER STREAM s(k BIGINT, a BIGINT); REGISTER RESOURCE x (id BIGINT, v DOUBLE) "
            "KEY (id); REGISTER RESOURCE y (id BIGINT, p BIGINT) KEY (id) ACCESS SCAN;"
            "REGISTER QUERY j AS DSTREAM(SELECT s.k, s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
            "REGISTER QUERY q AS RSTREAM(SELECT MIN(v) AS m FROM j [Range 4 Slide 2], y "
            "WHERE j.a = y.p GROUP BY a);"
        )
    assert store.names() == []
    store.load("x", [{"id": 1, "name": "one"}], key=["id"])  # (other columns: x is free)
    eng.execute(
        "REGISTER STREAM s(k BIGINT); REGISTER RESOURCE x (id BIGINT, name VARCHAR) KEY (id);"
        "REGISTER QUERY q AS ISTREAM(SELECT x.name FROM s [Now], x WHERE s.k = x.id);"
    )
    eng.push("s", [{"k": 1, "ts": 0}])
    eng.close()
    assert eng.fetch("q").to_pylist() == [{"name": "one", "ts": 0}]


def test_a_script_refused_by_the_split_of_a_running_engine_defines_no_resource() -> None:
    # (The crash fuzzer: the split was refused after x was defined in the store.)
    store = ResourceStore()
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=2)
    eng.execute(
        "REGISTER STREAM s(k BIGINT, a BIGINT); REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
        "REGISTER QUERY c AS ISTREAM(SELECT k, COUNT(*) AS n FROM s [Range 3] GROUP BY k);"
    )
    eng.push("s", [{"k": 1, "a": 1, "ts": 0}])
    with pytest.raises(CQLSemanticError, match="cannot be registered while the engine runs"):
        eng.execute(
            "REGISTER QUERY q AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
        )
    assert (store.names(), eng.resources_read(), eng.query_names()) == ([], [], ["c"])


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "ISTREAM(SELECT s.a FROM s [Now], x WHERE s.a > x.id)",
            "ACCESS KEY on resource 'x': the join must equate every key column",
        ),
        (
            "ISTREAM(SELECT s.a FROM x, s [Now] WHERE s.k = x.id)",
            "resource 'x' comes first in FROM",
        ),
        (
            (
                "ISTREAM(SELECT s.a FROM s [Now], x WHERE CAST(s.k AS DOUBLE) = x.v "
                "AND s.k = x.id AND x.id = 1.5)"
            ),
            None,
        ),
    ],
)
def test_joins_the_reference_join_cannot_plan_are_refused(query: str, message) -> None:
    eng = cq_py.Engine(executor="scheduled", threads=1)
    eng.execute(STREAM + resource_sql("KEY"))
    if message is None:
        eng.execute(f"REGISTER QUERY q AS {query};")  # extra equalities become the residual
        assert "ReferenceJoin x ACCESS KEY (x.id = s.k) where" in eng.explain()
        return
    with pytest.raises(CQLSemanticError, match=message):
        eng.execute(f"REGISTER QUERY q AS {query};")
    assert eng.query_names() == []


@pytest.mark.parametrize("executor", ["dts", "heartbeat"])
def test_other_executors_refuse_resources_naming_the_scheduled_one(executor: str) -> None:
    eng = cq_py.Engine(executor=executor, threads=1)
    eng.execute(STREAM + resource_sql("KEY"))
    with pytest.raises(CQLSemanticError, match="executor='scheduled'"):
        eng.execute(QUERY)


def test_txn_lists_the_strategies_and_needs_the_scheduled_executor() -> None:
    assert cq_py.Engine(txn="none").txn == "none"
    for good in ("2pl", "snapshot", "optimistic"):
        assert cq_py.Engine(executor="scheduled", txn=good).txn == good
        with pytest.raises(ValueError, match="executor='scheduled' only"):
            cq_py.Engine(txn=good)
    for bad in ("serializable", 1):
        with pytest.raises(
            ValueError, match=r"txn must be one of 'none', '2pl', 'snapshot', 'optimistic'"
        ):
            cq_py.Engine(executor="scheduled", txn=bad)
    with pytest.raises(ValueError, match=r"redo must be one of 'on_change', 'always'"):
        cq_py.Engine(executor="scheduled", redo="sometimes")
    with pytest.raises(ValueError, match=r"lock_timeout must be a number of seconds"):
        cq_py.Engine(executor="scheduled", lock_timeout=-1)


def test_resources_must_be_a_store() -> None:
    with pytest.raises(ValueError, match=r"resources must be a cq_py\.ResourceStore"):
        cq_py.Engine(resources={"x": 1})  # type: ignore[arg-type]


def test_a_snapshot_of_an_engine_reading_resources_is_refused_saying_why() -> None:
    store = ResourceStore()
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1)
    eng.execute(STREAM + resource_sql("KEY") + QUERY)
    with pytest.raises(cq_py.SnapshotError, match=r"read resources .* read as it stands"):
        eng.snapshot()


def test_spark_refuses_a_script_with_resources_saying_why() -> None:
    from cq_py.spark import batch

    # (Refused on the driver before any Spark work, so no session is needed.)
    with pytest.raises(cq_py.CQError, match="does not run on Spark: they are read when each row"):
        batch.run(
            None,  # type: ignore[arg-type]
            STREAM + resource_sql("KEY") + QUERY,
            executor="scheduled",
            resources=ResourceStore(),
        )


def test_stats_count_each_reference_operators_reads() -> None:
    store = ResourceStore()
    store.load("x", content(0), key=["id"])
    eng = run(store, "KEY", [rows_of(0, 12)])
    ops = eng.stats()["operators"]
    join = next(op for op, s in ops.items() if "reads" in s)
    assert ops[join] == {"evaluations": 12, "reads": 12}
    assert sum("reads" in s for s in ops.values()) == 1


@pytest.mark.parametrize("seed", range(3))
def test_an_updater_thread_meanwhile_each_row_sees_one_committed_version(seed: int) -> None:
    # txn="none": no concurrency control, but every read is of one committed version (the store
    # publishes whole versions), and each row's results are the join with the version it read.
    import threading

    store = ResourceStore()
    store.load("x", content(seed), key=["id"])
    versions = {1: content(seed)}
    stop, committed = threading.Event(), threading.Event()
    rng = random.Random(seed)

    def updater() -> None:
        while not stop.is_set():
            with store.transaction() as tx:
                tx.upsert("x", [{"id": rng.randint(0, 6), "v": rng.choice([0.5, 2.0, 4.0])}])
            v, table = store.read_version("x")  # (the only writer: still its version)
            versions[v] = table.to_pylist()
            committed.set()

    thread = threading.Thread(target=updater)
    thread.start()
    try:
        stream = rows_of(seed, 300)
        eng = cq_py.Engine(executor="scheduled", resources=store, threads=1)
        eng.execute(STREAM + resource_sql("KEY") + QUERY)
        for i in range(0, len(stream), 3):
            if i == len(stream) // 2:
                # (Half way, the updater has committed since the last read: the rest reads a
                # later version, however the threads are scheduled.)
                last = max(eng.read_log()["version"].to_pylist())
                deadline = time.monotonic() + 10
                while store.read_version("x")[0] <= last and time.monotonic() < deadline:
                    committed.clear()
                    committed.wait(0.01)
            eng.push("s", pa.Table.from_pylist(stream[i : i + 3], schema=SCHEMA))
        eng.close()
    finally:
        stop.set()
        thread.join()
    read = eng.read_log()["version"].to_pylist()
    assert len(read) == len(stream)
    assert read == sorted(read)  # rows are processed in order, versions only move forward
    assert len(set(read)) > 1  # the updater committed meanwhile
    frozen = {v: frozen_resource(versions[v], ["id", "v"]) for v in set(read)}
    assert got(eng) == oracle(stream, lambda k, _: frozen[read[k]])


def test_a_script_reading_a_resource_runs_on_one_engine_saying_why() -> None:
    eng = cq_py.Engine(executor="scheduled", threads=2)
    eng.execute(STREAM + resource_sql("KEY") + QUERY)
    assert "reads a resource or model (paper 002): one engine runs it" in eng.explain()
