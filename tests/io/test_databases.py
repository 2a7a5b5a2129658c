"""cq_py.io.databases against real databases: SQLite files written with the sqlite3 module, a
PostgreSQL server the suite starts (tests/postgres_server.py) changed through psql, and DuckDB."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cq_py.io.databases import DatabaseError, connect


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Path:
    path = tmp_path / "d.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE t (k INTEGER, x REAL, name VARCHAR(10), ok BOOLEAN, n BIGINT)")
        c.execute("INSERT INTO t VALUES (1, 0.5, 'a', 1, 7)")
        c.execute("CREATE TABLE blobs (k INTEGER, b BLOB)")
    return path


def test_sqlite_catalog_types_and_rows(sqlite_file: Path) -> None:
    db = connect(f"sqlite:///{sqlite_file}")
    cols = db.columns("t")
    assert cols == [
        ("k", "BIGINT"),
        ("x", "DOUBLE"),
        ("name", "VARCHAR"),
        ("ok", "BOOLEAN"),
        ("n", "BIGINT"),
    ]
    assert db.query('SELECT * FROM "t"', cols).to_pylist() == [
        {"k": 1, "x": 0.5, "name": "a", "ok": True, "n": 7}
    ]
    assert db.query('SELECT * FROM "t" WHERE k > 5', cols).num_rows == 0
    db.close()


@pytest.mark.parametrize(
    ("url", "table", "message"),
    [
        ("sqlite:///{path}", "blobs", "table 'blobs', column 'b' has type 'BLOB', which cq lacks"),
        ("sqlite:///{path}", "nope", "no table 'nope' in the database"),
        ("sqlite:///{path}.missing", "t", "the database does not open"),
        ("sqlite://", "t", "expected sqlite:///path"),
        ("oracle://h/db", "t", "expected sqlite:///..., postgresql://... or duckdb:///..."),
    ],
)
def test_errors_name_url_table_and_column(
    sqlite_file: Path, url: str, table: str, message: str
) -> None:
    url = url.format(path=sqlite_file)
    with pytest.raises(DatabaseError) as e:
        connect(url).columns(table)
    assert message in str(e.value)
    assert str(e.value).startswith(url)
    assert not Path(f"{sqlite_file}.missing").exists()  # opening creates no file


def test_sqlite_change_capture_sees_the_clients_changes(sqlite_file: Path) -> None:
    db = connect(f"sqlite:///{sqlite_file}")
    cols = db.columns("t")
    log, start = db.capture("t", cols)
    assert (log, start) == ("cq_log_t", 0)
    assert db.capture("t", cols) == (log, 0)  # installed once
    with sqlite3.connect(sqlite_file) as c:
        c.execute("INSERT INTO t VALUES (2, 1.5, 'b', 0, 8)")
        c.execute("UPDATE t SET name = 'z' WHERE k = 1")
        c.execute("DELETE FROM t WHERE k = 2")
    changes = db.changes(log, start, cols)
    assert changes.column("cq_op").to_pylist() == ["I", "U", "D"]
    assert changes.slice(0, 1).select(["k", "name"]).to_pylist() == [{"k": 2, "name": "b"}]
    assert db.changes(log, db.last_change(log), cols).num_rows == 0
    db.close()


def test_postgres_catalog_capture_and_errors(pg_server) -> None:
    pg_server.psql(
        "CREATE TABLE pt (k integer, big bigint, x double precision, r real, s text, "
        "v varchar(5), b boolean); CREATE TABLE pd (k integer, d date);"
        "INSERT INTO pt VALUES (1, 2, 0.5, 1.5, 'a', 'b', true)"
    )
    db = connect(pg_server.url())
    cols = db.columns("pt")
    assert [t for _, t in cols] == [
        "BIGINT",
        "BIGINT",
        "DOUBLE",
        "DOUBLE",
        "VARCHAR",
        "VARCHAR",
        "BOOLEAN",
    ]
    with pytest.raises(DatabaseError, match="table 'pd', column 'd' has type 'date'"):
        db.columns("pd")
    with pytest.raises(DatabaseError, match="no table 'nope'"):
        db.columns("nope")
    log, start = db.capture("pt", cols)
    pg_server.psql(
        "INSERT INTO pt VALUES (2, 3, 1.0, 2.0, 'c', 'd', false); UPDATE pt SET s = 'z';"
        "DELETE FROM pt WHERE k = 1"
    )
    changes = db.changes(log, start, cols)
    # One entry per row changed: the update touched both rows.
    assert changes.column("cq_op").to_pylist() == ["I", "U", "U", "D"]
    assert changes.column("s").to_pylist()[0] == "c"
    db.close()
    with pytest.raises(DatabaseError, match="the database does not open"):
        connect(pg_server.url("no_such_db"))


def test_duckdb_when_installed(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "d.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (k INTEGER, s VARCHAR, d DATE)")
    con.execute("CREATE TABLE u (k BIGINT, x DOUBLE)")
    con.execute("INSERT INTO u VALUES (1, 0.5)")
    con.close()
    db = connect(f"duckdb:///{path}")
    with pytest.raises(DatabaseError, match="table 't', column 'd' has type 'DATE'"):
        db.columns("t")
    cols = db.columns("u")
    assert cols == [("k", "BIGINT"), ("x", "DOUBLE")]
    assert db.capture("u", cols) == ("", 0)  # no triggers: readers compare whole results
    assert db.query('SELECT * FROM "u"', cols).to_pylist() == [{"k": 1, "x": 0.5}]
    db.close()
    with pytest.raises(DatabaseError, match="the database does not open"):
        connect(f"duckdb:///{tmp_path}/missing.duckdb")
