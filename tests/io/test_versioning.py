"""Last-update stamps kept by the databases' own triggers (cq_py.resources.install_versioning,
cq_py.io.databases): every writer's committed change raises the stamp, a rolled-back one does
not, on a real SQLite file and a real PostgreSQL server changed by other connections."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pyarrow as pa
import pytest

from cq_py import ResourceError
from cq_py.io.databases import DatabaseError, connect
from cq_py.resources import install_versioning, update_log


def _changes_move_the_stamp(url: str, run) -> None:
    install_versioning(url, ["x"])
    install_versioning(url, ["x"])  # again: the stamp is kept
    db = connect(url)
    start = db.stamp("x")
    run("INSERT INTO x VALUES (1, 'a')")
    after_insert = db.stamp("x")
    run("UPDATE x SET v = 'b' WHERE id = 1")
    after_update = db.stamp("x")
    run("UPDATE x SET v = 'c' WHERE id = 99")  # (no row: SQLite's row triggers do not fire)
    run("DELETE FROM x WHERE id = 1")
    after_delete = db.stamp("x")
    assert start < after_insert < after_update < after_delete
    with pytest.raises(DatabaseError, match="table 'y' has no last-update stamp"):
        db.stamp("y")
    db.close()


def test_sqlite_stamps_follow_other_connections_commits(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE x (id INTEGER, v TEXT)")
        c.execute("CREATE TABLE y (id INTEGER)")

    def run(sql: str) -> None:
        with sqlite3.connect(path) as c:
            c.execute(sql)

    _changes_move_the_stamp(f"sqlite:///{path}", run)
    # A rolled-back change leaves the stamp where it was.
    db = connect(f"sqlite:///{path}")
    before = db.stamp("x")
    c = sqlite3.connect(path)
    c.execute("INSERT INTO x VALUES (5, 'z')")
    c.rollback()
    c.close()
    assert db.stamp("x") == before


def test_postgres_stamps_follow_psql_commits(pg_server) -> None:
    pg_server.psql("DROP TABLE IF EXISTS x; CREATE TABLE x (id bigint, v text);")
    _changes_move_the_stamp(pg_server.url(), pg_server.psql)


def test_errors_name_what_failed(tmp_path: Path) -> None:
    with pytest.raises(ResourceError, match="the database does not open"):
        install_versioning(f"sqlite:///{tmp_path}/missing.db", ["x"])
    path = tmp_path / "r.db"
    sqlite3.connect(path).close()
    with pytest.raises(ResourceError, match="no table 'nope' in the database"):
        install_versioning(f"sqlite:///{path}", ["nope"])
    with pytest.raises(ValueError, match="a list of table names"):
        install_versioning(f"sqlite:///{path}", "x")


def _log_lists_each_commit(url: str, run, per_transaction: bool) -> None:
    install_versioning(url, ["x"])
    db = connect(url)
    before = time.time_ns()
    run("INSERT INTO x VALUES (1, 'a'); INSERT INTO x VALUES (2, 'b')")  # one transaction
    first = db.stamp("x")
    run("UPDATE x SET v = 'c'")
    last = db.stamp("x")
    log = update_log(url, ["x"])
    db.close()
    assert log.column_names == ["version", "at", "resources"]
    versions = log["version"].to_pylist()
    # Each committed state is logged (PostgreSQL: once per transaction, at its last statement).
    assert [first, last] == (versions if per_transaction else [versions[1], versions[-1]])
    assert versions == sorted(versions)
    assert set(map(tuple, log["resources"].to_pylist())) == {("x",)}
    at = log["at"].cast(pa.int64()).to_pylist()
    assert at == sorted(at)
    assert before - 5 * 10**6 <= at[0] <= at[-1] <= time.time_ns()  # (SQLite: milliseconds)
    assert update_log(url, ["y"]).num_rows == 0  # (a table without writes, or without stamps)


def test_sqlite_update_log_lists_each_raise_of_committed_writes(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE x (id INTEGER, v TEXT)")

    def run(sql: str) -> None:
        with sqlite3.connect(path) as c:
            c.executescript(f"BEGIN; {sql}; COMMIT;")

    _log_lists_each_commit(f"sqlite:///{path}", run, per_transaction=False)
    c = sqlite3.connect(path)  # a rolled-back write leaves no entry
    c.execute("INSERT INTO x VALUES (5, 'z')")
    c.rollback()
    c.close()
    assert update_log(f"sqlite:///{path}", ["x"])["version"].to_pylist()[-1] == 4


def test_postgres_update_log_lists_each_committed_transaction_once(pg_server) -> None:
    pg_server.psql(
        "DROP TABLE IF EXISTS x; DROP TABLE IF EXISTS cq_stamp_log;"
        "CREATE TABLE x (id bigint, v text);"
    )
    _log_lists_each_commit(
        pg_server.url(), lambda sql: pg_server.psql(f"BEGIN; {sql}; COMMIT;"), per_transaction=True
    )


def test_update_log_errors_name_what_failed(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    sqlite3.connect(path).close()
    with pytest.raises(ResourceError, match=r"no such table: cq_stamp_log.*install_versioning"):
        update_log(f"sqlite:///{path}", ["x"])
    with pytest.raises(ValueError, match="a list of table names"):
        update_log(f"sqlite:///{path}", "x")
