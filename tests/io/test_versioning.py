"""Last-update stamps kept by the databases' own triggers (cq_py.resources.install_versioning,
cq_py.io.databases): every writer's committed change raises the stamp, a rolled-back one does
not, on a real SQLite file and a real PostgreSQL server changed by other connections."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cq_py import ResourceError
from cq_py.io.databases import DatabaseError, connect
from cq_py.resources import install_versioning


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
