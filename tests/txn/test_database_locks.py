"""The strategies' calls on a database resource (cq_py.resources.DatabaseResource, paper 002 §4):
``lock_shared`` / ``unlock_shared`` (2PL), ``pin`` (snapshot) and ``stamp`` (optimistic), on
SQLite and PostgreSQL. The writers are other processes running plain sqlite3 or psycopg: while
the shared lock is held they wait, past their own timeout they get their database's lock error,
and a snapshot's copy neither changes with their later writes nor makes them wait."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import cq_py
from cq_py.resources import DatabaseResource, install_versioning
from txn.concurrency import blocked, finished, writer

ROWS = [(i, float(i)) for i in range(10)]
COLUMNS = [("id", "int64"), ("v", "float64")]


class Db:
    """A table ``things (id, v)`` of ten rows in one database kind, and writers to it."""

    def __init__(self, kind: str, url: str, target: str, run_sql: Callable[[str], None]):
        self.kind, self.url, self._target, self.run_sql = kind, url, target, run_sql
        run_sql(
            "DROP TABLE IF EXISTS things; DROP TABLE IF EXISTS cq_stamps; "
            "CREATE TABLE things (id BIGINT, v DOUBLE PRECISION); "
            + " ".join(f"INSERT INTO things VALUES ({i}, {v});" for i, v in ROWS)
        )

    def resource(self) -> DatabaseResource:
        return DatabaseResource(self.url, "things", COLUMNS, ["id"])

    def writer(self, sql: str, timeout: float) -> subprocess.Popen:
        """Starts a writer process running ``sql``; returns once it is about to write."""
        return writer(self.kind, self._target, sql, timeout)

    def write(self, sql: str, timeout: float = 10.0) -> dict:
        """Runs ``sql`` in a writer process to its end."""
        return finished(self.writer(sql, timeout))


def _sqlite(tmp_path: Path) -> Db:
    path = tmp_path / "r.db"

    def run_sql(sql: str) -> None:
        with sqlite3.connect(path) as c:
            c.executescript(sql.replace("DOUBLE PRECISION", "REAL"))

    return Db("sqlite", f"sqlite:///{path}", str(path), run_sql)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path: Path) -> Db:
    if request.param == "sqlite":
        return _sqlite(tmp_path)
    server = request.getfixturevalue("pg_server")
    return Db("postgresql", server.url(), server.url(), server.psql)


LOCK_ERROR = {
    "sqlite": "OperationalError: database is locked",
    "postgresql": "LockNotAvailable: canceling statement due to lock timeout",
}


def test_a_writer_waits_for_the_shared_lock_until_it_is_released(db: Db) -> None:
    r = db.resource()
    assert r.lock_shared("q", 1.0)
    proc = db.writer("UPDATE things SET v = v + 100", timeout=30.0)
    assert blocked(proc)
    # Reads made meanwhile run in the holder's transaction: the rows as they were.
    assert sorted(r.read_scan()[1]["v"].to_pylist()) == [v for _, v in ROWS]
    assert blocked(proc, 0.2)
    released = time.monotonic()
    r.unlock_shared("q")
    result = finished(proc)
    assert result["outcome"] == "ok"
    assert result["seconds"] >= 0.7  # it waited for the release, not for anything else
    assert time.monotonic() - released < 5.0
    assert sorted(r.read_scan()[1]["v"].to_pylist()) == [v + 100 for _, v in ROWS]
    r.close()


def test_a_writer_past_its_timeout_gets_its_databases_lock_error(db: Db) -> None:
    r = db.resource()
    assert r.lock_shared("q", 1.0)
    result = db.write("UPDATE things SET v = 0", timeout=0.3)
    assert result["outcome"].startswith(LOCK_ERROR[db.kind]), result
    assert 0.25 <= result["seconds"] < 5.0
    r.unlock_shared("q")
    assert set(r.read_scan()[1]["v"].to_pylist()) != {0.0}  # (nothing written)
    assert db.write("UPDATE things SET v = 0", timeout=1.0)["outcome"] == "ok"
    r.close()


def test_holders_share_one_lock_released_by_the_last(db: Db) -> None:
    r = db.resource()
    assert r.lock_shared("q1", 1.0)
    assert r.lock_shared("q2", 1.0)
    assert r.lock_shared("q2", 1.0)
    assert r.holders() == ["q1", "q2"]
    proc = db.writer("DELETE FROM things WHERE id = 0", timeout=30.0)
    r.unlock_shared("q1")
    assert blocked(proc)
    r.unlock_shared("q2")
    assert finished(proc)["outcome"] == "ok"
    r.unlock_shared("q2")  # (not held any more: nothing to do)
    assert r.holders() == []
    r.close()


def test_lock_shared_is_false_while_a_writer_holds_the_table_past_the_timeout(db: Db) -> None:
    r = db.resource()
    proc = db.writer("UPDATE things SET v = -1; SLEEP 1.5", timeout=10.0)
    time.sleep(0.3)  # (it has its lock now)
    started = time.monotonic()
    assert proc.poll() is None
    assert r.lock_shared("q", 0.2) is False
    assert 0.15 <= time.monotonic() - started < 1.0
    assert r.holders() == []
    if db.kind == "sqlite":  # (the lock's timeout is not left to the connection's other reads)
        assert r._db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert finished(proc)["outcome"] == "ok"
    assert r.lock_shared("q", 1.0) is True
    assert set(r.read_scan()[1]["v"].to_pylist()) == {-1.0}
    r.unlock_shared("q")
    r.close()


def test_a_pinned_copy_keeps_its_state_and_does_not_block_writers(db: Db) -> None:
    install_versioning(db.url, ["things"])
    r = db.resource()
    copy = r.pin("q", 1.0)
    assert r.holders() == []
    result = db.write("UPDATE things SET v = 7; DELETE FROM things WHERE id < 5", timeout=0.5)
    assert result["outcome"] == "ok"
    assert result["seconds"] < 0.5
    assert r.stamp() > copy.stamp() == copy.version
    stamp, rows = copy.read_scan()
    assert stamp == copy.version
    assert sorted(rows["v"].to_pylist()) == [v for _, v in ROWS]
    keys = pa.record_batch({"id": pa.array([3, 3, 8, 42, None], pa.int64())})
    assert sorted(copy.read_lookup(keys)[1].to_pylist(), key=lambda d: d["id"]) == [
        {"id": 3, "v": 3.0},
        {"id": 8, "v": 8.0},
    ]
    assert r.read_lookup(keys)[1].to_pylist() == [{"id": 8, "v": 7.0}]  # (the table now)
    # The core's calls: capsules in and out.
    stamp, capsule = copy.lookup(keys.__arrow_c_array__())
    assert pa.RecordBatch._import_from_c_capsule(*capsule).num_rows == 2
    r.close()


def test_pin_waits_for_a_writer_then_gives_lock_timeout_naming_the_query(db: Db) -> None:
    holder = db.resource()
    assert holder.lock_shared("other", 1.0)
    writer = db.writer("UPDATE things SET v = 1", timeout=30.0)  # queued behind "other"
    assert blocked(writer, 0.3)
    holder.unlock_shared("other")
    assert finished(writer)["outcome"] == "ok"
    proc = db.writer("UPDATE things SET v = 2; SLEEP 1.5", timeout=10.0)
    time.sleep(0.3)
    r = db.resource()
    with pytest.raises(cq_py.LockTimeout, match=r"things.*query 'q'"):
        r.pin("q", 0.2)
    assert r.holders() == []
    assert finished(proc)["outcome"] == "ok"
    assert set(r.pin("q", 1.0).read_scan()[1]["v"].to_pylist()) == {2.0}
    r.close()
    holder.close()


def test_the_stamp_rises_with_each_committed_write(db: Db) -> None:
    install_versioning(db.url, ["things"])
    r = db.resource()
    stamps = [r.stamp()]
    for sql in (
        "UPDATE things SET v = v * 2",
        "DELETE FROM things WHERE id = 1",
        "INSERT INTO things VALUES (99, 9.5)",
    ):
        assert db.write(sql)["outcome"] == "ok"
        stamps.append(r.stamp())
    assert stamps == sorted(set(stamps))  # strictly rising
    assert r.read_scan()[0] == stamps[-1]  # (reads log the same stamp)
    # A write that fails to commit does not move it.
    assert db.write("UPDATE things SET v = 0; SELECT * FROM nowhere")["outcome"] != "ok"
    assert r.stamp() == stamps[-1]
    r.close()


def test_stamp_without_versioning_says_what_to_install(db: Db) -> None:
    r = db.resource()
    for txn in ("none", "2pl", "snapshot"):
        r.check_strategy(txn)
    for call in (r.stamp, lambda: r.check_strategy("optimistic")):
        with pytest.raises(
            cq_py.ResourceError,
            match=r"txn='optimistic' needs.*install_versioning\(url, \['things'\]\)",
        ):
            call()
    install_versioning(db.url, ["things"])
    r.check_strategy("optimistic")
    assert r.stamp() == 0  # (found once installed)
    r.close()


def _kill(pg_server, r: DatabaseResource) -> None:
    """Ends the server process of ``r``'s connection (as a restart or a network loss would)."""
    pid = r._db.conn.info.backend_pid
    pg_server.psql(f"SELECT pg_terminate_backend({pid})")


def _writers_go_on_then_a_new_lock_sees_them(db: Db, r: DatabaseResource) -> None:
    assert db.write("UPDATE things SET v = 5", timeout=0.5)["outcome"] == "ok"
    assert r.lock_shared("q", 1.0)
    assert set(r.read_scan()[1]["v"].to_pylist()) == {5.0}
    r.unlock_shared("q")
    r.close()


def test_a_lost_postgres_connection_aborts_the_transaction_and_reconnects(pg_server) -> None:
    db = Db("postgresql", pg_server.url(), pg_server.url(), pg_server.psql)
    r = db.resource()
    assert r.lock_shared("q", 1.0)
    _kill(pg_server, r)
    with pytest.raises(
        cq_py.ResourceError, match=r"resource table 'things'.*transaction of q aborted"
    ):
        r.read_scan()
    assert r.holders() == []
    # The lock went with the connection: writers go on; the next transaction reconnects.
    _writers_go_on_then_a_new_lock_sees_them(db, r)


def test_a_connection_lost_between_transactions_is_opened_again(pg_server) -> None:
    db = Db("postgresql", pg_server.url(), pg_server.url(), pg_server.psql)
    install_versioning(db.url, ["things"])
    r = db.resource()
    # Nothing open to abort: the read, the lock and the stamp go on over a new connection.
    _kill(pg_server, r)
    assert r.read_scan()[1].num_rows == len(ROWS)
    _kill(pg_server, r)
    assert r.stamp() == 0
    _kill(pg_server, r)
    assert r.lock_shared("q", 1.0) is True
    # Lost after the holders' reads: releasing is quiet (the server ended the transaction and
    # its lock; the reads were all made under it), and the next lock is a new one.
    assert r.holders() == ["q"]
    assert r.read_scan()[1].num_rows == len(ROWS)
    _kill(pg_server, r)
    r.unlock_shared("q")
    assert r.holders() == []
    _writers_go_on_then_a_new_lock_sees_them(db, r)


def test_duckdb_refuses_the_shared_lock_and_pins_a_copy(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "r.duckdb"
    with duckdb.connect(str(path)) as c:
        c.execute("CREATE TABLE things (id BIGINT, v DOUBLE)")
        c.executemany("INSERT INTO things VALUES (?, ?)", ROWS)
    r = DatabaseResource(f"duckdb:///{path}", "things", COLUMNS, ["id"])
    with pytest.raises(cq_py.ResourceError, match=r"does not support txn='2pl' or txn='snapshot'"):
        r.lock_shared("q", 1.0)
    with pytest.raises(cq_py.ResourceError, match=r"does not support txn='2pl' \(txn='snapshot'"):
        r.check_strategy("2pl")
    r.check_strategy("snapshot")
    with pytest.raises(cq_py.ResourceError, match="no last-update stamp"):
        r.stamp()
    assert r.pin("q", 1.0).read_scan()[1].num_rows == len(ROWS)
    r.close()


@pytest.mark.parametrize(
    ("holder", "timeout", "message"),
    [("", 1.0, "holder must be a non-empty str"), ("q", -1, "timeout must be a number")],
)
def test_bad_arguments_to_lock_shared(tmp_path: Path, holder, timeout, message: str) -> None:
    r = _sqlite(tmp_path).resource()
    with pytest.raises(cq_py.ArgumentError, match=message):
        r.lock_shared(holder, timeout)
    assert r.holders() == []
    r.close()


# ---- the engine's strategies over a database (paper 002 §4, the core's transaction manager) ----

ENGINE_SCRIPT = (
    "REGISTER STREAM s(k BIGINT, a BIGINT);"
    "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id) FROM '{url}' TABLE 'things';"
    "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
)


def _engine(db: Db, txn: str) -> cq_py.Engine:
    install_versioning(db.url, ["things"])
    eng = cq_py.Engine(executor="scheduled", threads=1, txn=txn, lock_timeout=5)
    eng.execute(ENGINE_SCRIPT.format(url=db.url))
    eng.push("s", pa.Table.from_pylist([{"k": t, "a": t, "ts": t + 1} for t in range(3)]))
    return eng


def test_under_2pl_a_writer_process_waits_for_the_engines_commit(db: Db) -> None:
    eng = _engine(db, "2pl")
    # Instant 3 is not final yet (nothing later has come): its transaction holds the lock.
    assert [r["instant"] for r in eng.commit_log().to_pylist()] == [1, 2]
    result = db.write("UPDATE things SET v = -1", timeout=0.3)
    assert result["outcome"].startswith(LOCK_ERROR[db.kind]), result
    proc = db.writer("UPDATE things SET v = 100 WHERE id = 0", timeout=30.0)
    assert blocked(proc)
    eng.advance(4)  # instant 3 is final: its transaction commits, the lock goes
    assert finished(proc)["outcome"] == "ok"
    assert [r["instant"] for r in eng.commit_log().to_pylist()] == [1, 2, 3]
    eng.push("s", pa.Table.from_pylist([{"k": 0, "a": 3, "ts": 5}]))
    eng.close()
    assert eng.fetch("j").to_pylist()[-1] == {"a": 3, "v": 100.0, "ts": 5}
    versions = eng.read_log()["version"].to_pylist()
    assert versions[:3] == [0, 0, 0]
    assert versions[3] > 0  # (the writer's stamp)


@pytest.mark.parametrize("txn", ["snapshot", "optimistic"])
def test_under_snapshot_and_optimistic_a_writer_process_is_not_blocked(db: Db, txn: str) -> None:
    eng = _engine(db, txn)
    result = db.write("UPDATE things SET v = -1", timeout=0.5)
    assert result["outcome"] == "ok"
    assert result["seconds"] < 0.5
    eng.close()
    log = [(r["instant"], r["outcome"]) for r in eng.commit_log().to_pylist()]
    if txn == "snapshot":  # instant 3 read its copy
        assert log == [(1, "commit"), (2, "commit"), (3, "commit")]
        return
    # Optimistic: instant 3 read before the write and validated after it, so the stamp had
    # moved: aborted, redone (its row read again, at the writer's stamp) and committed once.
    assert log == [(1, "commit"), (2, "commit"), (3, "abort"), (3, "commit")]
    versions = eng.read_log()["version"].to_pylist()
    assert versions[:3] == [0, 0, 0]
    assert versions[3] > 0


def test_under_2pl_a_postgres_connection_lost_before_the_commit_goes_on(pg_server) -> None:
    db = Db("postgresql", pg_server.url(), pg_server.url(), pg_server.psql)
    eng = _engine(db, "2pl")
    pg_server.psql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE state LIKE 'idle in transaction%'"  # (instant 3's, holding the lock)
    )
    assert db.write("UPDATE things SET v = 100 WHERE id = 1", timeout=0.5)["outcome"] == "ok"
    eng.push("s", pa.Table.from_pylist([{"k": 1, "a": 10, "ts": 5}]))
    eng.close()
    log = eng.commit_log().to_pylist()
    assert [(r["instant"], r["outcome"]) for r in log] == [(t, "commit") for t in (1, 2, 3, 5)]
    assert eng.fetch("j").to_pylist()[-2:] == [
        {"a": 2, "v": 2.0, "ts": 3},  # read under the lock, before the connection went
        {"a": 10, "v": 100.0, "ts": 5},  # read over a new connection
    ]


TWO_TABLES = (
    "REGISTER STREAM s(k BIGINT, a BIGINT);"
    "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id) FROM '{url}' TABLE 'things';"
    "REGISTER RESOURCE y (id BIGINT, v DOUBLE) KEY (id) FROM '{url}' TABLE 'others';"
)
#: One query reading both tables in a row, or two queries each windowing one.
TWO_TABLE_QUERIES = {
    "one query": "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v AS xv, y.v AS yv "
    "FROM s [Now], x, y WHERE s.k = x.id AND s.k = y.id);",
    "two queries": "REGISTER QUERY qx AS ISTREAM(SELECT SUM(x.v) AS m FROM s [Range 2], x "
    "WHERE s.k = x.id); REGISTER QUERY qy AS ISTREAM(SELECT SUM(y.v) AS m FROM s [Range 2], y "
    "WHERE s.k = y.id);",
}


@pytest.mark.parametrize("shape", sorted(TWO_TABLE_QUERIES))
@pytest.mark.parametrize("txn", ["2pl", "snapshot", "optimistic"])
def test_two_tables_of_one_database_are_read_under_every_strategy(
    db: Db, txn: str, shape: str
) -> None:
    # SQLite locks the file: the resources of one file share one connection, whose transaction
    # holds the lock for both (two connections' BEGIN IMMEDIATE made the engine wait on itself
    # until its lock timeout, under 2pl and snapshot).
    db.run_sql(
        "DROP TABLE IF EXISTS others; CREATE TABLE others (id BIGINT, v DOUBLE PRECISION); "
        + " ".join(f"INSERT INTO others VALUES ({i}, {10 * v});" for i, v in ROWS)
    )
    install_versioning(db.url, ["things", "others"])
    rows = pa.Table.from_pylist([{"k": t, "a": t, "ts": t + 1} for t in range(4)])
    outputs = {}
    for strategy in (txn, "none"):
        eng = cq_py.Engine(executor="scheduled", threads=1, txn=strategy, lock_timeout=5)
        eng.execute(TWO_TABLES.format(url=db.url) + TWO_TABLE_QUERIES[shape])
        eng.push("s", rows)  # (a lock waiting for the other: LockTimeout)
        eng.close()
        names = ["j"] if shape == "one query" else ["qx", "qy"]
        outputs[strategy] = {q: eng.fetch(q).to_pylist() for q in names}
    assert outputs[txn] == outputs["none"]
    if shape == "one query":
        assert outputs[txn]["j"] == [
            {"a": t, "xv": float(t), "yv": 10.0 * t, "ts": t + 1} for t in range(4)
        ]
    else:
        assert [r["m"] for r in outputs[txn]["qy"]] == [0.0, 10.0, 30.0, 50.0, 30.0]


def test_under_2pl_a_writer_of_the_second_table_of_one_file_waits_for_the_commit(db: Db) -> None:
    db.run_sql(
        "DROP TABLE IF EXISTS others; CREATE TABLE others (id BIGINT, v DOUBLE PRECISION); "
        + " ".join(f"INSERT INTO others VALUES ({i}, {v});" for i, v in ROWS)
    )
    eng = cq_py.Engine(executor="scheduled", threads=1, txn="2pl", lock_timeout=5)
    eng.execute(TWO_TABLES.format(url=db.url) + TWO_TABLE_QUERIES["one query"])
    eng.push("s", pa.Table.from_pylist([{"k": t, "a": t, "ts": t + 1} for t in range(3)]))
    # Instant 3's transaction is open: it read both tables and holds both.
    for table in ("others", "things"):
        proc = db.writer(f"UPDATE {table} SET v = -1 WHERE id = 9", timeout=30.0)
        assert blocked(proc), table
        proc.kill()
        proc.wait()
    proc = db.writer("UPDATE others SET v = 100 WHERE id = 0", timeout=30.0)
    assert blocked(proc)
    eng.advance(4)
    assert finished(proc)["outcome"] == "ok"
    eng.push("s", pa.Table.from_pylist([{"k": 0, "a": 3, "ts": 5}]))
    eng.close()
    assert eng.fetch("j").to_pylist()[-1] == {"a": 3, "xv": 0.0, "yv": 100.0, "ts": 5}
