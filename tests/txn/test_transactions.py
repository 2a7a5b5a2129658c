"""Paper 002's transactions on the in-process store (src_cpp/txn/transaction_manager.h): each
redo area's reads form one transaction at a time, ended by its commit operator as soon as its
instant is final there; 2PL's locks are real (a writer waits until the commit, then times out
naming the resource and the query), snapshot's are held only while the area is copied."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import cq_py
from cq_py import ResourceStore

STREAM = "REGISTER STREAM s(k BIGINT, a BIGINT);REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
JOIN = "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
# Fig. 6's query: the join, then AVG over a sliding window, RSTREAM committing.
AVG = "REGISTER QUERY q AS RSTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);"


def _engine(txn: str, script: str, n: int = 12, **options: object) -> cq_py.Engine:
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(n)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn=txn, **options)
    eng.execute(STREAM + script)
    return eng


def _rows(n: int) -> pa.Table:
    return pa.Table.from_pylist([{"k": t, "a": t, "ts": t + 1} for t in range(n)])


def _write(store: ResourceStore, timeout: float) -> None:
    with store.transaction(timeout=timeout, writer="updater") as tx:
        tx.upsert("x", [{"id": 0, "v": 100.0}])


def test_under_2pl_a_writer_waits_for_the_commit_and_times_out_naming_resource_and_query() -> None:
    eng = _engine("2pl", JOIN, lock_timeout=5)
    eng.push("s", _rows(3))
    # Instants 1 and 2 are committed; 3 is not final yet (nothing later has come), so its
    # transaction still holds x's shared lock.
    log = eng.commit_log().to_pylist()
    assert [(r["instant"], r["outcome"]) for r in log] == [(1, "commit"), (2, "commit")]
    assert eng.resources._core.holders("x") == ["j"]
    with pytest.raises(cq_py.LockTimeout, match=r"resource 'x'.*query 'j'"):
        _write(eng.resources, 0.2)
    # A writer waiting meanwhile gets the lock at the commit, not before.
    done: list[float] = []
    writer = threading.Thread(target=lambda: (_write(eng.resources, 5), done.append(time.time())))
    writer.start()
    time.sleep(0.3)
    assert not done
    committed = time.time()
    eng.advance(4)  # instant 3 is final now: its transaction commits
    writer.join(5)
    assert done
    assert done[0] >= committed
    assert [r["instant"] for r in eng.commit_log().to_pylist()] == [1, 2, 3]
    assert eng.resources._core.holders("x") == []
    # The next row reads the writer's version.
    eng.push("s", pa.Table.from_pylist([{"k": 0, "a": 3, "ts": 5}]))
    eng.close()
    assert eng.fetch("j").to_pylist()[-1] == {"a": 3, "v": 100.0, "ts": 5}
    assert eng.read_log()["version"].to_pylist() == [1, 1, 1, 2]


@pytest.mark.parametrize("txn", ["snapshot", "optimistic"])
def test_under_snapshot_and_optimistic_a_writer_is_not_blocked(txn: str) -> None:
    eng = _engine(txn, JOIN)
    eng.push("s", _rows(3))
    assert eng.resources._core.holders("x") == []
    start = time.time()
    _write(eng.resources, 0.2)
    assert time.time() - start < 0.2


def test_snapshot_reads_the_copy_made_at_the_transactions_first_read() -> None:
    eng = _engine("snapshot", JOIN)
    eng.push("s", _rows(3))
    _write(eng.resources, 1)  # instant 3's transaction copied x before: it reads version 1
    eng.close()
    log = eng.commit_log().to_pylist()
    assert [(r["instant"], r["versions"]) for r in log] == [(t, [("x", 1)]) for t in (1, 2, 3)]


def test_optimistic_validation_aborts_and_redoes_the_instant_once() -> None:
    eng = _engine("optimistic", JOIN)
    eng.push("s", _rows(3))
    _write(eng.resources, 1)  # after instant 3's read, before its commit
    eng.close()
    log = eng.commit_log().to_pylist()
    # Instant 3 fails its validation, is redone (its row read again, at the new version) and
    # committed once.
    assert [(r["instant"], r["outcome"]) for r in log] == [
        (1, "commit"),
        (2, "commit"),
        (3, "abort"),
        (3, "commit"),
    ]
    assert [r["versions"] for r in log][2:] == [[("x", 1)], [("x", 2)]]
    assert eng.read_log()["version"].to_pylist() == [1, 1, 1, 2]
    assert eng.fetch("j").to_pylist() == [{"a": t, "v": float(t), "ts": t + 1} for t in range(3)]
    area = eng.stats()["areas"][2]
    assert (area["commits"], area["aborts"], area["resets"], area["replayed"]) == (3, 1, 1, 1)
    assert 2 in area["members"]  # (an area is named by its commit operator, one of its members)


@pytest.mark.parametrize("txn", ["2pl", "snapshot", "optimistic"])
@pytest.mark.parametrize("gatekeeper", [True, False])
@pytest.mark.parametrize("batch", [1, 7, 50])
def test_fig6_commits_each_instant_once_with_the_results_without_control(
    txn: str, gatekeeper: bool, batch: int
) -> None:
    n = 20
    eng = _engine(txn, JOIN + AVG, n=n, gatekeeper=gatekeeper, batch=batch)
    eng.push("s", _rows(n))
    eng.close()
    plain = _engine("none", JOIN + AVG, n=n)
    plain.push("s", _rows(n))
    plain.close()
    expected = plain.fetch("q").to_pylist()
    # AVG over the last four values 0..t (one row per tick), then the window emptying.
    assert expected[:n] == [
        {"m": sum(range(max(0, t - 3), t + 1)) / (t + 1 - max(0, t - 3)), "ts": t + 1}
        for t in range(n)
    ]
    assert eng.fetch("q").to_pylist() == expected
    log = eng.commit_log().to_pylist()
    assert all(r["outcome"] == "commit" for r in log)
    q = [r["instant"] for r in log if r["query"] == "q"]
    assert q == sorted(set(q))  # each instant committed once, in order
    assert set(range(1, n + 1)) <= set(q)


@pytest.mark.parametrize("redo", ["on_change", "always"])
def test_optimistic_with_an_updater_thread_commits_each_instant_once_at_one_version(
    redo: str,
) -> None:
    # Fig. 6's query while a thread converts x: aborted instants are redone and committed once,
    # and each committed value is the window's average over x at the version it committed with.
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(10)], key=["id"])
    contents = {1: {i: float(i) for i in range(10)}}
    stop = threading.Event()

    def updater() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            with store.transaction(writer="updater") as tx:
                tx.upsert("x", [{"id": k % 10, "v": float(k % 7)}])
            v, table = store.read_version("x")
            contents[v] = {r["id"]: r["v"] for r in table.to_pylist()}

    eng = cq_py.Engine(
        executor="scheduled", resources=store, threads=1, txn="optimistic", redo=redo
    )
    eng.execute(STREAM + JOIN + AVG)
    n = 120
    rows = [{"k": t % 10, "a": t, "ts": t + 1} for t in range(n)]
    thread = threading.Thread(target=updater)
    thread.start()
    try:
        for i in range(0, n, 4):
            if (
                i == n // 2
            ):  # (a commit of the updater meets an open transaction, whatever the timing)
                last = max(eng.read_log()["version"].to_pylist())
                deadline = time.monotonic() + 10
                while store.read_version("x")[0] <= last and time.monotonic() < deadline:
                    time.sleep(0.001)
            eng.push("s", pa.Table.from_pylist(rows[i : i + 4]))
    finally:
        stop.set()
        thread.join()
    eng.close()
    log = [r for r in eng.commit_log().to_pylist() if r["query"] == "q"]
    committed = [r for r in log if r["outcome"] == "commit"]
    assert any(r["outcome"] == "abort" for r in log)
    # The checker of the logs (Def. 3.1): each committed transaction read one state of x,
    # current during it.
    assert cq_py.txn.check(eng.commit_log(), eng.read_versions(), store.update_log()) == []
    assert [r["instant"] for r in committed] == sorted({r["instant"] for r in committed})
    assert set(range(1, n + 1)) <= {r["instant"] for r in committed}
    out = eng.fetch("q").to_pylist()
    got = {r["ts"]: r["m"] for r in out}
    assert len(got) == len(out)  # each instant out once
    for r in committed:
        t = r["instant"]
        if t > n or not r["versions"]:
            continue
        x = contents[dict(r["versions"])["x"]]
        window = [x[rows[u - 1]["k"]] for u in range(max(1, t - 3), t + 1)]
        assert got[t] == pytest.approx(sum(window) / len(window)), t


def test_on_change_resets_only_when_a_resource_read_for_retained_rows_changed() -> None:
    eng = _engine("snapshot", JOIN + AVG, redo="on_change")
    eng.push("s", _rows(6))
    assert eng.stats()["areas"][9]["resets"] == 0  # nothing changed: no reset
    with eng.resources.transaction() as tx:  # every row of x at ten times its value
        tx.upsert("x", [{"id": i, "v": 10.0 * i} for i in range(12)])
    eng.push("s", pa.Table.from_pylist([{"k": t, "a": t, "ts": t + 1} for t in range(6, 12)]))
    eng.close()
    assert eng.stats()["areas"][9]["resets"] >= 1
    out = {r["ts"]: r["m"] for r in eng.fetch("q").to_pylist()}
    # Instants 1..5 committed before the change; from 7 on every row of the window was read
    # again at the new version (the retained rows' reads were redone), never a mix.
    assert [out[t] for t in range(1, 6)] == [0.0, 0.5, 1.0, 1.5, 2.5]
    assert [out[t] for t in range(8, 13)] == [10.0 * (t - 2.5) for t in range(8, 13)]


MODEL = (
    "REGISTER STREAM s(k BIGINT, a BIGINT);"
    "REGISTER MODEL score (a BIGINT) RETURNS (y DOUBLE);"
    "REGISTER QUERY q AS ISTREAM(SELECT s.a, score(s.a) AS y FROM s [Now]);"
)


def _model_engine(txn: str) -> cq_py.Engine:
    store = ResourceStore()
    store.set_model("score", lambda a: pc.multiply(a, 1.0))
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn=txn)
    eng.execute(MODEL)
    eng.push("s", pa.Table.from_pylist([{"k": 0, "a": t, "ts": t + 1} for t in range(3)]))
    return eng


def test_under_2pl_set_model_waits_for_the_commit() -> None:
    eng = _model_engine("2pl")
    with pytest.raises(cq_py.LockTimeout, match=r"'score'.*query 'q'"):
        eng.resources.set_model("score", lambda a: pc.multiply(a, 2.0), timeout=0.2)
    eng.advance(4)  # instant 3 commits: the model's lock goes
    eng.resources.set_model("score", lambda a: pc.multiply(a, 2.0), timeout=0.2)
    eng.push("s", pa.Table.from_pylist([{"k": 0, "a": 5, "ts": 5}]))
    eng.close()
    assert [r["y"] for r in eng.fetch("q").to_pylist()] == [0.0, 1.0, 2.0, 10.0]


def test_under_snapshot_a_transaction_calls_the_model_it_pinned() -> None:
    eng = _model_engine("snapshot")
    eng.resources.set_model("score", lambda a: pc.multiply(a, 2.0), timeout=0.2)
    eng.push("s", pa.Table.from_pylist([{"k": 0, "a": 5, "ts": 4}]))  # instant 3's transaction
    eng.close()
    # Instant 4's row was called in a new transaction: the new model.
    assert [r["y"] for r in eng.fetch("q").to_pylist()] == [0.0, 1.0, 2.0, 10.0]
    versions = [r["versions"] for r in eng.commit_log().to_pylist()]
    assert versions == [[("score", 1)]] * 3 + [[("score", 2)]]


def test_a_table_the_strategy_cannot_read_is_refused_at_registration(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "r.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE things (id INTEGER, v REAL)")
    # Optimistic needs the table's last-update stamp: refused before any row, nothing registered.
    eng = cq_py.Engine(executor="scheduled", threads=1, txn="optimistic")
    with pytest.raises(cq_py.ResourceError, match=r"'things'.*install_versioning"):
        eng.execute(
            "REGISTER STREAM s(k BIGINT, a BIGINT);"
            f"REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id) FROM 'sqlite:///{path}' "
            "TABLE 'things';" + JOIN
        )
    assert eng.query_names() == []
    assert eng.stream_names() == []


def test_an_overlapping_window_a_reset_cannot_replay_is_refused_naming_the_query() -> None:
    store = ResourceStore()
    store.load("x", [{"id": 1, "v": 1.0}], key=["id"])
    # A row window below the top window: how far back its rows reach is not bounded by ticks.
    below = (
        "REGISTER QUERY m AS ISTREAM(SELECT v FROM j [Rows 2]);"
        "REGISTER QUERY q AS ISTREAM(SELECT MAX(v) AS m FROM m [Range 4 Slide 2]);"
    )
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn="2pl")
    with pytest.raises(cq_py.CQLSemanticError, match=r"query 'q'.*row window below.*txn='none'"):
        eng.execute(STREAM + JOIN + below)
    assert eng.query_names() == []


# Two queries windowing j (paper 002 §3.4): each redo area holds its own copy of j's join, so
# each resets alone; j's own output keeps the originals.
READERS = (
    "REGISTER QUERY q1 AS {c1}(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);"
    "REGISTER QUERY q2 AS {c2}(SELECT MAX(v) AS m FROM j [Range 3 Slide 1]);"
)
# (ISTREAM or DSTREAM of an aggregate over an overlapping window is computed at the commit from
# whole results under a strategy: test_istream_of_an_aggregate_over_an_overlapping_window_runs.)


def _two_readers(
    script: str, txn: str, redo: str, rng: random.Random
) -> tuple[dict[str, list[dict]], list[dict], int]:
    """Every query's output after 24 rows of s pushed in four chunks, x written between them
    once every instant pushed so far is final; also j's rows as the value oracle gives them (x
    as it stood when each was read) and how many writes went in."""
    store = ResourceStore()
    x = {i: float(i) for i in range(6)}
    store.load("x", [{"id": i, "v": v} for i, v in x.items()], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn=txn, redo=redo)
    eng.execute(STREAM + script)
    rows = [{"k": rng.randrange(6), "a": t, "ts": t} for t in range(24)]
    seen, writes = [], 0
    for start in range(0, 24, 6):
        if start:
            eng.advance(start)
            key = rng.randrange(6)
            try:
                with store.transaction(timeout=0.05) as tx:
                    tx.upsert("x", [{"id": key, "v": float(10 + start)}])
                x[key] = float(10 + start)
                writes += 1
            except cq_py.LockTimeout:
                pass  # (2PL: a reset replayed the retained rows, whose reads hold x)
        chunk = rows[start : start + 6]
        seen += [{"a": row["a"], "v": x[row["k"]], "ts": row["ts"]} for row in chunk]
        eng.push("s", pa.Table.from_pylist(chunk))
    eng.close()
    assert {r["query"] for r in eng.commit_log().to_pylist()} >= {"q1", "q2"}
    return {q: eng.fetch(q).to_pylist() for q in eng.query_names()}, seen, writes


@pytest.mark.parametrize("commits", [("RSTREAM", "RSTREAM")])
@pytest.mark.parametrize("txn", ["2pl", "snapshot", "optimistic"])
@pytest.mark.parametrize("redo", ["always", "on_change"])
def test_two_queries_windowing_one_query_that_reads_x_run_as_if_each_had_its_own(
    commits: tuple[str, str], txn: str, redo: str
) -> None:
    # Refused before the copies. Now each reader's area holds its own copy of j's join: the
    # run is that of the script in which each reader reads a join of its own (j1, j2), whose
    # areas hold them; j's own output keeps the originals, each row x as it was when read.
    readers = READERS.format(c1=commits[0], c2=commits[1])
    seed = ["2pl", "snapshot", "optimistic"].index(txn) * 2 + (redo == "always")
    got, seen, writes = _two_readers(JOIN + readers, txn, redo, random.Random(seed))
    own = (
        JOIN
        + JOIN.replace("QUERY j ", "QUERY j1 ")
        + JOIN.replace("QUERY j ", "QUERY j2 ")
        + readers.replace("FROM j [Range 4", "FROM j1 [Range 4").replace(
            "FROM j [Range 3", "FROM j2 [Range 3"
        )
    )
    want, _, writes_own = _two_readers(own, txn, redo, random.Random(seed))
    assert got["j"] == seen
    assert (got["q1"], got["q2"], writes) == (want["q1"], want["q2"], writes_own)
    assert got["q1"]
    assert got["q2"]
    if not (txn == "2pl" and redo == "always"):
        assert writes == 3  # (no reader kept x locked between the pushes)


@pytest.mark.parametrize("txn", ["2pl", "snapshot", "optimistic"])
@pytest.mark.parametrize("seed", range(6))
def test_fig6_with_an_updater_thread_commits_serializable_transactions(txn: str, seed: int) -> None:
    # The checker (cq_py.txn.check) over the commit log, the versions read and the store's
    # update log: one state of x per committed transaction, current during it; each instant once.
    rng = random.Random(seed)
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(10)], key=["id"])
    stop = threading.Event()

    def updater() -> None:
        while not stop.is_set():
            try:
                with store.transaction(timeout=0.05, writer="updater") as tx:
                    tx.upsert("x", [{"id": i, "v": float(rng.randrange(50))} for i in range(10)])
            except cq_py.LockTimeout:
                pass  # (2PL: a query held x; try again)
            time.sleep(0.0005)

    # (redo="on_change": under 2PL with "always" the replayed reads keep x locked from one
    # commit to the next, and the updater would only time out.)
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn=txn)
    eng.execute(STREAM + JOIN + AVG)
    n = 80
    rows = [{"k": rng.randrange(10), "a": t, "ts": t + 1} for t in range(n)]
    thread = threading.Thread(target=updater)
    thread.start()
    try:
        for i in range(0, n, 2):
            if i % 20 == 10:
                # Every instant so far final (2PL's locks go): the updater commits meanwhile.
                eng.advance(i + 1)
                seen, deadline = len(store.update_log()), time.monotonic() + 2
                while len(store.update_log()) == seen and time.monotonic() < deadline:
                    time.sleep(0.001)
            eng.push("s", pa.Table.from_pylist(rows[i : i + 2]))
    finally:
        stop.set()
        thread.join()
    eng.close()
    assert len(store.update_log()) > 2
    assert cq_py.txn.check(eng.commit_log(), eng.read_versions(), store.update_log()) == []
    log = eng.commit_log().to_pylist()
    committed = [r["instant"] for r in log if r["outcome"] == "commit" and r["query"] == "q"]
    assert committed == sorted(set(committed))
    assert set(range(1, n + 1)) <= set(committed)


def test_close_lets_the_locks_of_a_replay_go() -> None:
    # Under 2PL with redo, each commit's replay reads the next window's rows at once (taking x's
    # lock for a transaction that only a later row would commit): once the input has ended, no
    # commit comes, and a writer must not wait on it.
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(10)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn="2pl", redo="always")
    eng.execute(STREAM + JOIN + AVG)
    eng.push("s", pa.Table.from_pylist([{"k": t % 10, "a": t, "ts": t + 1} for t in range(12)]))
    eng.close()
    assert next(iter(eng.stats()["areas"].values()))["resets"] > 0
    with store.transaction(timeout=0.2) as tx:
        tx.upsert("x", [{"id": 1, "v": 5.0}])


def test_optimistic_never_aborts_more_than_three_times_in_a_row() -> None:
    # A replay of a wide window takes longer than a busy writer's period: every validation would
    # fail. After three aborts in a row the transaction locks x at its begin, and commits.
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(10)], key=["id"])
    stop = threading.Event()

    def writer() -> None:
        k = 0
        while not stop.is_set():
            with store.transaction(timeout=10.0, writer="updater") as tx:
                tx.upsert("x", [{"id": k % 10, "v": float(k)}])
            k += 1

    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn="optimistic")
    eng.execute(
        STREAM + JOIN + "REGISTER QUERY q AS RSTREAM(SELECT AVG(v) AS m FROM j [Range 200]);"
    )
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for at in range(0, 600, 50):
            eng.push(
                "s",
                pa.Table.from_pylist(
                    [{"k": t % 10, "a": t, "ts": t + 1} for t in range(at, at + 50)]
                ),
            )
    finally:
        stop.set()
        thread.join()
    eng.close()
    log = [r for r in eng.commit_log().to_pylist() if r["query"] == "q"]
    outcomes = "".join("a" if r["outcome"] == "abort" else "c" for r in log)
    assert "aaaa" not in outcomes
    assert outcomes.count("c") == 600  # each instant committed once
    assert cq_py.txn.check(eng.commit_log(), eng.read_versions(), store.update_log()) == []


def _pushed(txn: str, script: str, **options: object) -> list[dict]:
    """q's output after 30 rows of s (one a tick, keys cycling over x) under ``txn``, x static."""
    eng = _engine(txn, script, **options)
    eng.push("s", pa.Table.from_pylist([{"k": t % 7, "a": t, "ts": t} for t in range(30)]))
    eng.close()
    return eng.fetch("q").to_pylist()


@pytest.mark.parametrize("txn", ["2pl", "snapshot", "optimistic"])
def test_rstream_over_a_window_sliding_by_more_than_a_tick_runs_with_istream_and_dstream(
    txn: str,
) -> None:
    # A reset replays from the window after its next slide, so RSTREAM's repeats of R(t)
    # between the slides would be lost: RSTREAM itself is still refused. ISTREAM and DSTREAM of
    # the same aggregate commit by RSTREAM with the difference taken at the commit, where the
    # repeats' difference is empty: they run, and equal txn="none".
    rstream = "REGISTER QUERY q AS RSTREAM(SELECT MAX(v) AS m FROM j [Range 5 Slide 2]);"
    eng = cq_py.Engine(executor="scheduled", threads=1, txn=txn)
    with pytest.raises(cq_py.CQLSemanticError, match=r"query 'q'.*RSTREAM.*ISTREAM or DSTREAM"):
        eng.execute(STREAM + JOIN + rstream)
    assert eng.query_names() == []
    for commit in ("ISTREAM", "DSTREAM"):
        for redo in ("always", "on_change"):
            script = JOIN + rstream.replace("RSTREAM", commit)
            expected = _pushed("none", script)
            assert expected
            assert _pushed(txn, script, redo=redo) == expected


@pytest.mark.parametrize("txn", ["2pl", "snapshot", "optimistic"])
def test_two_resources_joined_in_a_row_are_read_in_one_transaction(txn: str) -> None:
    # No window: each row commits at once, and its derivation reads x and y; both reads are the
    # transaction's (once only the top reference join's area held them: x went unrecorded).
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(4)], key=["id"])
    store.load("y", [{"id": i, "w": float(10 * i)} for i in range(4)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn=txn)
    eng.execute(
        "REGISTER STREAM s(k BIGINT); REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
        "REGISTER RESOURCE y (id BIGINT, w DOUBLE) KEY (id);"
        "REGISTER QUERY q AS ISTREAM(SELECT s.k, x.v, y.w FROM s [Now], x, y "
        "WHERE s.k = x.id AND s.k = y.id);"
    )
    eng.push("s", pa.table({"k": [1, 2], "ts": [1, 2]}))
    eng.advance(3)  # (instant 2 final: its transaction commits, 2PL's locks go)
    with store.transaction(timeout=5) as tx:  # (a later state of both before the third row)
        tx.upsert("x", [{"id": 3, "v": 30.0}])
        tx.upsert("y", [{"id": 3, "w": 300.0}])
    eng.push("s", pa.table({"k": [3], "ts": [3]}))
    eng.close()
    log = eng.commit_log().to_pylist()
    assert [sorted(dict(r["versions"])) for r in log] == [["x", "y"]] * 3
    out = eng.fetch("q").to_pylist()
    assert [(r["k"], r["v"], r["w"]) for r in out] == [
        (1, 1.0, 10.0),
        (2, 2.0, 20.0),
        (3, 30.0, 300.0),
    ]
    assert cq_py.txn.check(eng.commit_log(), eng.read_versions(), store.update_log()) == []


@pytest.mark.parametrize("commit", ["ISTREAM", "DSTREAM"])
@pytest.mark.parametrize("txn", ["2pl", "snapshot", "optimistic"])
def test_istream_of_an_aggregate_over_an_overlapping_window_runs(txn: str, commit: str) -> None:
    # Once the window itself committed (ISTREAM or DSTREAM fused with the aggregate above it,
    # outside the redo area) and a row it committed stayed in later results, which rows read by
    # later transactions joined, so a strategy refused it. Now the aggregate lies inside the
    # area and RSTREAM commits, the difference with the last committed result taken there: it
    # runs, and with x static equals txn="none" whatever the redo.
    query = f"REGISTER QUERY q AS {commit}(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);"
    expected = _pushed("none", JOIN + query)
    assert expected
    for redo in ("always", "on_change"):
        assert _pushed(txn, JOIN + query, redo=redo) == expected


def test_istream_over_a_row_window_compares_with_the_committed_result_after_a_redo() -> None:
    # The commit operator compares R(t) with the result it committed, not with R recomputed at
    # the state a redo reads: once ISTREAM compared with its own state, rebuilt at the redo from
    # x's new version, and the change to 10.0 was never emitted.
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(4)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn="optimistic")
    eng.execute(STREAM + JOIN + "REGISTER QUERY q AS ISTREAM(SELECT AVG(v) AS m FROM j [Rows 4]);")
    eng.push("s", pa.Table.from_pylist([{"k": 2, "a": t, "ts": t} for t in range(4)]))
    eng.advance(4)
    with store.transaction(timeout=5) as tx:
        tx.upsert("x", [{"id": 2, "v": 10.0}])
    eng.push("s", pa.Table.from_pylist([{"k": 2, "a": 4, "ts": 4}]))
    eng.close()
    assert [(r["ts"], r["m"]) for r in eng.fetch("q").to_pylist()] == [(0, 2.0), (4, 10.0)]
    assert cq_py.txn.check(eng.commit_log(), eng.read_versions(), store.update_log()) == []


@pytest.mark.parametrize("txn", ["2pl", "snapshot", "optimistic"])
def test_dstream_commits_an_instant_whose_result_is_empty(txn: str) -> None:
    # When the window empties, RSTREAM emits nothing at that instant; the top window changed
    # there all the same, so the diff commit ends a transaction at it and DSTREAM emits the
    # whole committed result, as without control.
    query = (
        "REGISTER QUERY q AS DSTREAM(SELECT a, AVG(v) AS m FROM j [Range 3 Slide 1] GROUP BY a);"
    )
    rows = [{"k": 2, "a": 1, "ts": 0}, {"k": 3, "a": 1, "ts": 1}, {"k": 4, "a": 2, "ts": 10}]
    outputs = []
    for control in ("none", txn):
        eng = _engine(control, JOIN + query, redo="always")
        eng.push("s", pa.Table.from_pylist(rows))
        eng.close()
        outputs.append([(r["ts"], r["a"], r["m"]) for r in eng.fetch("q").to_pylist()])
    assert outputs[0] == [(1, 1, 2.0), (3, 1, 2.5), (4, 1, 3.0), (13, 2, 4.0)]
    assert outputs[1] == outputs[0]
    committed = [c["instant"] for c in eng.commit_log().to_pylist() if c["outcome"] == "commit"]
    assert {4, 13} <= set(committed)  # (R(4) and R(13) are empty)
