"""Database access: urls, drivers, catalog reads, change capture (paper 001 §3.2, §4.6).

One module for every use of a relational database, free of any query semantics: paper 001's tables
read through cached views (the engine's ``REGISTER TABLE``), and later paper 002's transactional
resources. Urls follow SQLAlchemy's spelling:

==========================  ==================================================================
``sqlite:///path``          the standard library's sqlite3 (``sqlite:////abs/path`` absolute)
``postgresql://user@host:port/db?host=/socket/dir``   psycopg 3 (the ``postgres`` extra)
``duckdb:///path``          DuckDB, when installed (read only: DuckDB has no triggers)
==========================  ==================================================================

A table's columns come from the database's catalog, mapped onto cq's four types (BIGINT, DOUBLE,
VARCHAR, BOOLEAN); any other type is a :class:`DatabaseError` naming the url, the table and the
column. Results come back as Arrow tables built a column at a time (the driver's rows transposed
by ``zip``; no per-row Python code of ours).

Change capture: :meth:`Database.capture` installs triggers that append every insert (with the new
row), update and delete (the operation only) of a table to a change log, a table named
``cq_log_<table>`` with an increasing ``cq_id``; :meth:`Database.read_changes` reads what a
reader has not seen from its :meth:`Database.position` (on PostgreSQL ids are not in commit
order, so a position also remembers the transactions that may still commit below it). The log is
never truncated by cq (several readers may follow it from their own positions).

>>> import sqlite3, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "d.db")
>>> with sqlite3.connect(path) as c:
...     _ = c.execute("CREATE TABLE t (k INTEGER, name TEXT)")
>>> db = connect(f"sqlite:///{path}")
>>> db.columns("t")
[('k', 'BIGINT'), ('name', 'VARCHAR')]
>>> log, start = db.capture("t", db.columns("t"))
>>> with sqlite3.connect(path) as c:
...     _ = c.execute("INSERT INTO t VALUES (1, 'a')")
>>> db.changes(log, start, db.columns("t")).to_pylist()
[{'cq_id': 1, 'cq_op': 'I', 'k': 1, 'name': 'a'}]
>>> db.close()
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa

from cq_py.errors import CQError

__all__ = ["Database", "DatabaseError", "connect", "quote", "sqlite_file"]

#: cq's column types as Arrow types (the planner's types by their CQL names).
ARROW = {
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
}

# PostgreSQL's and DuckDB's type names (information_schema.columns.data_type, lower-cased) -> cq.
_CATALOG_TYPES = {
    "smallint": "BIGINT",
    "integer": "BIGINT",
    "bigint": "BIGINT",
    "tinyint": "BIGINT",
    "hugeint": None,
    "double precision": "DOUBLE",
    "double": "DOUBLE",
    "real": "DOUBLE",
    "float": "DOUBLE",
    "text": "VARCHAR",
    "character varying": "VARCHAR",
    "character": "VARCHAR",
    "varchar": "VARCHAR",
    "boolean": "BOOLEAN",
}


#: How long SQLite statements wait for another connection's lock (sqlite3.connect's default).
_SQLITE_WAIT_MS = 5000
#: SQLite's result code for "another connection holds the lock" (sqlite3.SQLITE_BUSY, Python 3.11+).
_SQLITE_BUSY = 5


class DatabaseError(CQError):
    """A database could not be opened or read, or holds what cq cannot take; the message names
    the url and, where it applies, the table and the column."""


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier (standard SQL, as SQLite, PostgreSQL and DuckDB take it).

    >>> print(quote("a b"))
    "a b"
    """
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _sqlite_type(declared: str) -> str | None:
    """SQLite's affinity rules (its documentation, §3.1) on a declared type, onto cq's types."""
    d = declared.upper()
    if "INT" in d:
        return "BIGINT"
    if "BOOL" in d:
        return "BOOLEAN"
    if any(w in d for w in ("CHAR", "CLOB", "TEXT")):
        return "VARCHAR"
    if any(w in d for w in ("REAL", "FLOA", "DOUB")):
        return "DOUBLE"
    return None  # BLOB, NUMERIC, DATE, no type at all: values of any kind may be stored


class Database:
    """An open database: one connection, in autocommit except inside :meth:`snapshot`. Made by
    :func:`connect`."""

    #: Whether the database has triggers (change capture); without, readers compare whole results.
    has_triggers = True
    #: The collation that compares text byte by byte, as cq does (None: none known, so text
    #: comparisons are not sent to this database).
    binary_collation: str | None = None
    #: The driver's placeholder for a query parameter.
    param = "?"

    def __init__(self, url: str):
        self.url = url

    # -- what each driver gives ----------------------------------------------------------------

    def _rows(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        raise NotImplementedError

    def _run(self, sql: str) -> None:
        raise NotImplementedError

    def _catalog(self, table: str) -> list[tuple[str, str, str | None]]:
        """(column, the database's type name, cq's type or None) of ``table``, in order."""
        raise NotImplementedError

    def _capture_sql(self, table: str, log: str, columns: list[tuple[str, str]]) -> list[str]:
        raise NotImplementedError

    def begin(self) -> None:
        """Starts a transaction whose reads see one state of the database."""
        self._run("BEGIN")

    def commit(self) -> None:
        self._run("COMMIT")

    def rollback(self) -> None:
        """Ends the open transaction, undoing what it wrote."""
        self._run("ROLLBACK")

    def lost(self) -> bool:
        """Whether the connection is gone (the server ended it, or the network): a statement
        failed on it, and none will succeed. SQLite's connections are never lost.

        >>> connect("sqlite:///:memory:").lost()
        False
        """
        return False

    def lock_shared(self, table: str, timeout: float) -> bool:
        """Opens a transaction that holds a shared lock on ``table`` until :meth:`commit` or
        :meth:`rollback` (paper 002 §4's two-phase locking: other writers wait, readers do not),
        waiting at most ``timeout`` seconds for writers that hold it; False (no transaction
        left open) when that time passed. Reads made meanwhile run inside the transaction.

        >>> connect("sqlite:///:memory:").lock_shared("t", 1.0)
        True
        """
        raise DatabaseError(
            f"{self.url}: this database cannot hold a shared lock for a reader, so it does not "
            "support txn='2pl' or txn='snapshot'"
        )

    def close(self) -> None:
        raise NotImplementedError

    # -- the module's interface ----------------------------------------------------------------

    def columns(self, table: str) -> list[tuple[str, str]]:
        """(name, cq type) of every column of ``table``; a :class:`DatabaseError` for a missing
        table or a type cq lacks.

        >>> connect("sqlite:///:memory:").columns("nothing")
        Traceback (most recent call last):
        cq_py.io.databases.DatabaseError: sqlite:///:memory:: no table 'nothing' in the database
        """
        found = self._catalog(table)
        if not found:
            raise DatabaseError(f"{self.url}: no table '{table}' in the database")
        out = []
        for name, declared, cq in found:
            if cq is None:
                raise DatabaseError(
                    f"{self.url}: table '{table}', column '{name}' has type "
                    f"'{declared or '(none)'}', which cq lacks; expected one of BIGINT, "
                    "DOUBLE, VARCHAR, BOOLEAN (an integer, floating point, text or boolean type)"
                )
            out.append((name, cq))
        return out

    def query(
        self, sql: str, columns: list[tuple[str, str]], params: Sequence[Any] = ()
    ) -> pa.Table:
        """The rows of ``sql`` (``params`` for its placeholders, :attr:`param`) as an Arrow
        table with ``columns`` (name, cq type) as its schema.

        >>> connect("sqlite:///:memory:").query("SELECT 1 AS a", [("a", "BIGINT")]).to_pylist()
        [{'a': 1}]
        """
        _, rows = self._rows(sql, params)
        schema = pa.schema([(n, ARROW[t]) for n, t in columns])
        if not rows:
            return schema.empty_table()
        values = list(zip(*rows, strict=True))
        if len(values) != len(columns):
            raise DatabaseError(
                f"{self.url}: expected {len(columns)} columns from {sql!r}, found {len(values)}"
            )
        return pa.table(
            [self._array(v, n, t, sql) for v, (n, t) in zip(values, columns, strict=True)],
            schema=schema,
        )

    def _array(self, values: Sequence[Any], name: str, cq_type: str, sql: str) -> pa.Array:
        try:
            return pa.array(values, type=ARROW[cq_type])
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
        try:
            # SQLite keeps booleans as 0 and 1, and any column may hold any kind of value.
            return pa.array(values).cast(ARROW[cq_type])
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise DatabaseError(
                f"{self.url}: column '{name}' of {sql!r} holds values that are not {cq_type}: {e}"
            ) from None

    def capture(self, table: str, columns: list[tuple[str, str]]) -> tuple[str, int]:
        """Installs change capture on ``table`` (once; later calls reuse the log): triggers that
        append each insert, update and delete to the change log. Returns the log's name and the
        last id in it now. Without triggers (DuckDB): ("", 0).

        >>> db = connect("sqlite:///:memory:")
        >>> db._run("CREATE TABLE t (a INTEGER)")
        >>> db.capture("t", [("a", "BIGINT")])
        ('cq_log_t', 0)
        """
        if not self.has_triggers:
            return "", 0
        log = f"cq_log_{table}"
        for sql in self._capture_sql(table, log, columns):
            self._run(sql)
        return log, self.last_change(log)

    def last_change(self, log: str) -> int:
        """The highest id in the change log ``log`` (0 when it is empty)."""
        if not log:
            return 0
        _, rows = self._rows(f"SELECT COALESCE(MAX(cq_id), 0) FROM {quote(log)}")
        return int(rows[0][0])

    def _versioning_sql(self, table: str) -> list[str]:
        raise NotImplementedError

    def install_versioning(self, table: str) -> None:
        """Installs a last-update stamp on ``table`` (once; later calls keep it): a row of
        ``cq_stamps`` that triggers raise in every transaction that inserts, updates or deletes
        rows of it, whoever the writer (SQLite once per row, PostgreSQL once per statement).
        These are paper 002 §4.2.1's last-update times as counters: a stamp that moved since a
        transaction began means an update came between.

        >>> db = connect("sqlite:///:memory:")
        >>> db._run("CREATE TABLE t (a INTEGER)")
        >>> db.install_versioning("t"); db.stamp("t")
        0
        >>> db._run("INSERT INTO t VALUES (1), (2)"); db.stamp("t") > 0
        True
        """
        self.columns(table)  # the table exists (a DatabaseError naming it otherwise)
        if not self.has_triggers:
            raise DatabaseError(f"{self.url}: no triggers, so no last-update stamps")
        for sql in self._versioning_sql(table):
            self._run(sql)

    def stamp(self, table: str) -> int:
        """``table``'s last-update stamp (:meth:`install_versioning`); a DatabaseError when it has
        none."""
        _, rows = self._rows("SELECT stamp FROM cq_stamps WHERE table_name = " + _literal(table))
        if not rows:
            raise DatabaseError(
                f"{self.url}: table '{table}' has no last-update stamp; "
                "run cq_py.resources.install_versioning first"
            )
        return int(rows[0][0])

    def update_log(self, tables: Sequence[str]) -> pa.Table:
        """What writers committed to ``tables`` since :meth:`install_versioning`, as
        ``cq_py.txn.check`` takes an update log: ``version`` (the table's stamp after the
        change), ``at`` (when, ns since the epoch; SQLite's clock has milliseconds) and
        ``resources`` (the table), in time order. PostgreSQL logs each writing transaction
        once (its last statement's stamp and time); SQLite, whose triggers cannot tell
        transactions apart, logs every raise of a stamp, so a transaction's stamps before its
        last are states no other connection saw.

        >>> db = connect("sqlite:///:memory:")
        >>> db._run("CREATE TABLE t (a INTEGER)")
        >>> db.install_versioning("t"); db._run("INSERT INTO t VALUES (1)")
        >>> db.update_log(["t"]).select(["version", "resources"]).to_pylist()
        [{'version': 1, 'resources': ['t']}]
        """
        names = ", ".join(_literal(t) for t in tables) or "NULL"
        try:
            found = self.query(
                f"SELECT stamp, at, table_name FROM cq_stamp_log WHERE table_name IN ({names}) "
                "ORDER BY at, stamp",
                [("version", "BIGINT"), ("at", "BIGINT"), ("table", "VARCHAR")],
            )
        except DatabaseError as e:
            raise DatabaseError(
                f"{e}; run cq_py.resources.install_versioning on {list(tables)} first (again "
                "if it was installed before the log was kept)"
            ) from None
        return pa.table(
            {
                "version": found["version"],
                "at": found["at"].cast(pa.timestamp("ns", tz="UTC")),
                "resources": pa.ListArray.from_arrays(
                    pa.array(range(found.num_rows + 1), pa.int32()),
                    found["table"].combine_chunks(),
                ),
            }
        )

    def position(self, log: str) -> Any:
        """Where a reader of ``log`` stands once it has everything the current transaction sees
        (call it inside :meth:`begin`, with the read it goes with). Opaque: give it back to
        :meth:`read_changes`. Here the log's last id: SQLite's writers take turns, so ids rise
        in commit order."""
        return self.last_change(log)

    def saved_position(self, position: Any) -> Any:
        """A :meth:`position` as JSON (for a snapshot); :meth:`loaded_position` reads it back.

        >>> db = connect("sqlite:///:memory:")
        >>> db.loaded_position(db.saved_position(7))
        7
        """
        return int(position)

    def loaded_position(self, saved: Any) -> Any:
        """A position saved by :meth:`saved_position`; a DatabaseError if it is not one."""
        if type(saved) is not int or saved < 0:
            raise DatabaseError(f"{self.url}: {saved!r} is not a place in a change log")
        return saved

    def read_changes(
        self, log: str, after: Any, columns: list[tuple[str, str]]
    ) -> tuple[pa.Table, Any]:
        """The change log's entries a reader at ``after`` (a :meth:`position`) has not seen, in
        id order, and its position past them; inside :meth:`begin`. Each entry comes once.

        >>> db = connect("sqlite:///:memory:")
        >>> db._run("CREATE TABLE t (a INTEGER)")
        >>> log, _ = db.capture("t", [("a", "BIGINT")])
        >>> db._run("INSERT INTO t VALUES (7)")
        >>> changes, at = db.read_changes(log, db.position(log) - 1, [("a", "BIGINT")])
        >>> changes["a"].to_pylist(), at
        ([7], 1)
        """
        changes = self.changes(log, int(after), columns)
        last = max([int(after), *changes["cq_id"].to_pylist()[-1:]])
        return changes, last

    def changes(self, log: str, after: int, columns: list[tuple[str, str]]) -> pa.Table:
        """The change log's entries with an id above ``after``, in id order: ``cq_id``, ``cq_op``
        ('I' insert, 'U' update, 'D' delete) and the inserted row's ``columns`` (nulls for 'U'
        and 'D')."""
        names = ", ".join(quote(n) for n, _ in columns)
        return self.query(
            f"SELECT cq_id, cq_op, {names} FROM {quote(log)} WHERE cq_id > {int(after)} "
            "ORDER BY cq_id",
            [("cq_id", "BIGINT"), ("cq_op", "VARCHAR"), *columns],
        )


class _SQLite(Database):
    binary_collation = "BINARY"

    def __init__(self, url: str, path: str):
        super().__init__(url)
        try:
            if path == ":memory:":
                self.conn = sqlite3.connect(":memory:", isolation_level=None)
            else:
                # mode=rw: a missing file is an error, not a new empty database.
                uri = "file:" + Path(path).as_posix().replace("?", "%3f") + "?mode=rw"
                self.conn = sqlite3.connect(uri, uri=True, isolation_level=None)
            self.conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")
        except sqlite3.Error as e:
            raise DatabaseError(f"{url}: the database does not open ({e})") from None
        self._wal = path == ":memory:"

    def _rows(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        try:
            cur = self.conn.execute(sql, params)
            return [d[0] for d in cur.description or ()], cur.fetchall()
        except sqlite3.Error as e:
            raise DatabaseError(f"{self.url}: {e} (in {sql!r})") from None

    def _run(self, sql: str) -> None:
        self._rows(sql)

    def lock_shared(self, table: str, timeout: float) -> bool:
        # SQLite locks the whole file, not a table: BEGIN IMMEDIATE takes the write lock, so
        # other writers wait (their busy timeout) while readers go on. In WAL mode (persistent
        # in the file, set once) those readers are not blocked even when the holder's
        # transaction commits.
        self._run(f"PRAGMA busy_timeout = {max(0, round(timeout * 1000))}")
        if not self._wal:
            # The switch does not wait for a writer (no busy handler): while one writes, the lock
            # is taken in rollback-journal mode (writers wait all the same) and the switch is
            # tried again at the next lock.
            try:
                mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                self._wal = mode.lower() in ("wal", "memory")
            except sqlite3.OperationalError as e:
                if getattr(e, "sqlite_errorcode", None) != _SQLITE_BUSY:
                    raise DatabaseError(f"{self.url}: {e} (switching to WAL mode)") from None
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if getattr(e, "sqlite_errorcode", None) == _SQLITE_BUSY:
                return False
            raise DatabaseError(f"{self.url}: {e} (taking the shared lock)") from None
        except sqlite3.Error as e:
            raise DatabaseError(f"{self.url}: {e} (taking the shared lock)") from None
        finally:
            # Other statements wait as long as before (the lock's timeout is the strategy's).
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute(f"PRAGMA busy_timeout = {_SQLITE_WAIT_MS}")
        return True

    def _catalog(self, table: str) -> list[tuple[str, str, str | None]]:
        _, rows = self._rows(f"PRAGMA table_info({quote(table)})")
        return [(r[1], r[2], _sqlite_type(r[2])) for r in rows]

    def _capture_sql(self, table: str, log: str, columns: list[tuple[str, str]]) -> list[str]:
        names = ", ".join(quote(n) for n, _ in columns)
        new = ", ".join(f"NEW.{quote(n)}" for n, _ in columns)
        return [
            (
                f"CREATE TABLE IF NOT EXISTS {quote(log)} "
                f"(cq_id INTEGER PRIMARY KEY AUTOINCREMENT, "
                f"cq_op TEXT NOT NULL, {', '.join(quote(n) for n, _ in columns)})"
            ),
            (
                f"CREATE TRIGGER IF NOT EXISTS {quote(log + '_i')} AFTER INSERT ON {quote(table)} "
                f"BEGIN INSERT INTO {quote(log)} (cq_op, {names}) VALUES ('I', {new}); END"
            ),
            (
                f"CREATE TRIGGER IF NOT EXISTS {quote(log + '_u')} AFTER UPDATE ON {quote(table)} "
                f"BEGIN INSERT INTO {quote(log)} (cq_op) VALUES ('U'); END"
            ),
            (
                f"CREATE TRIGGER IF NOT EXISTS {quote(log + '_d')} AFTER DELETE ON {quote(table)} "
                f"BEGIN INSERT INTO {quote(log)} (cq_op) VALUES ('D'); END"
            ),
        ]

    def _versioning_sql(self, table: str) -> list[str]:
        # Row triggers: one bump per row changed is still a change of the stamp; a transaction's
        # bumps commit or roll back with its rows.
        name = _literal(table)
        out = [
            "CREATE TABLE IF NOT EXISTS cq_stamps (table_name TEXT PRIMARY KEY, stamp INTEGER)",
            f"INSERT OR IGNORE INTO cq_stamps VALUES ({name}, 0)",
        ]
        # SQLite's clock has milliseconds: 'now' in ns since the epoch.
        now = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) * 1000000"
        out.append(
            "CREATE TABLE IF NOT EXISTS cq_stamp_log (table_name TEXT, stamp INTEGER, at INTEGER)"
        )
        for op in ("INSERT", "UPDATE", "DELETE"):
            trigger = quote(f"cq_stamp_{table}_{op[0].lower()}")
            out.append(f"DROP TRIGGER IF EXISTS {trigger}")  # (an older one, without the log)
            out.append(
                f"CREATE TRIGGER {trigger} AFTER {op} ON {quote(table)} "
                f"BEGIN UPDATE cq_stamps SET stamp = stamp + 1 WHERE table_name = {name}; "
                f"INSERT INTO cq_stamp_log SELECT table_name, stamp, {now} FROM cq_stamps "
                f"WHERE table_name = {name}; END"
            )
        return out

    def close(self) -> None:
        self.conn.close()


class _PostgreSQL(Database):
    binary_collation = '"C"'
    param = "%s"

    def __init__(self, url: str):
        super().__init__(url)
        try:
            psycopg = importlib.import_module("psycopg")
        except ImportError:
            raise DatabaseError(
                f"{url}: PostgreSQL needs psycopg 3; install cq with the 'postgres' extra "
                "(pip install 'cq[postgres]')"
            ) from None
        self.errors = psycopg.Error
        try:
            self.conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as e:
            raise DatabaseError(f"{url}: the database does not open ({e})") from None

    def _rows(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, params or None)
                if cur.description is None:
                    return [], []
                return [d.name for d in cur.description], cur.fetchall()
        except self.errors as e:
            raise DatabaseError(f"{self.url}: {str(e).strip()} (in {sql!r})") from None

    def _run(self, sql: str) -> None:
        self._rows(sql)

    def begin(self) -> None:
        self._run("BEGIN ISOLATION LEVEL REPEATABLE READ")

    def lost(self) -> bool:
        return bool(self.conn.closed or self.conn.broken)

    def lock_shared(self, table: str, timeout: float) -> bool:
        # SHARE mode conflicts with the ROW EXCLUSIVE lock that INSERT, UPDATE and DELETE take,
        # and not with readers. lock_timeout 0 would mean "wait forever": 1 ms at least.
        self._run("BEGIN")
        self._run(f"SET LOCAL lock_timeout = {max(1, round(timeout * 1000))}")
        sql = f"LOCK TABLE {quote(table)} IN SHARE MODE"
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql)
        except self.errors as e:
            timed_out = getattr(e, "sqlstate", None) == "55P03"  # lock_not_available
            with contextlib.suppress(DatabaseError):  # (a lost connection lost it already)
                self._run("ROLLBACK")
            if timed_out:
                return False
            raise DatabaseError(f"{self.url}: {str(e).strip()} (in {sql!r})") from None
        return True

    def _catalog(self, table: str) -> list[tuple[str, str, str | None]]:
        schema, _, name = table.rpartition(".")
        _, rows = self._rows(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = %s AND table_schema = COALESCE(NULLIF(%s, ''), current_schema()) "
            "ORDER BY ordinal_position",
            (name, schema),
        )
        return [(r[0], r[1], _CATALOG_TYPES.get(r[1].lower())) for r in rows]

    def _capture_sql(self, table: str, log: str, columns: list[tuple[str, str]]) -> list[str]:
        types = {"BIGINT": "BIGINT", "DOUBLE": "DOUBLE PRECISION", "VARCHAR": "TEXT"}
        cols = ", ".join(f"{quote(n)} {types.get(t, t)}" for n, t in columns)
        names = ", ".join(quote(n) for n, _ in columns)
        new = ", ".join(f"NEW.{quote(n)}" for n, _ in columns)
        fn = quote(log + "_fn")
        return [
            (
                f"CREATE TABLE IF NOT EXISTS {quote(log)} (cq_id BIGSERIAL PRIMARY KEY, "
                f"cq_op TEXT NOT NULL, {cols})"
            ),
            (
                f"ALTER TABLE {quote(log)} ADD COLUMN IF NOT EXISTS cq_xid xid8 NOT NULL "
                "DEFAULT pg_current_xact_id()"
            ),
            (
                f"CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF TG_OP = 'INSERT' THEN INSERT INTO {quote(log)} (cq_op, {names}) "
                f"VALUES ('I', {new}); "
                f"ELSE INSERT INTO {quote(log)} (cq_op) VALUES (substr(TG_OP, 1, 1)); END IF; "
                "RETURN NULL; END $$"
            ),
            (
                f"CREATE OR REPLACE TRIGGER {quote(log + '_t')} AFTER INSERT OR UPDATE OR DELETE "
                f"ON {quote(table)} FOR EACH ROW EXECUTE FUNCTION {fn}()"
            ),
        ]

    def _versioning_sql(self, table: str) -> list[str]:
        name = _literal(table)
        fn = quote(f"cq_stamp_{table}_fn")
        return [
            "CREATE TABLE IF NOT EXISTS cq_stamps (table_name TEXT PRIMARY KEY, stamp BIGINT)",
            f"INSERT INTO cq_stamps VALUES ({name}, 0) ON CONFLICT (table_name) DO NOTHING",
            (
                "CREATE TABLE IF NOT EXISTS cq_stamp_log (table_name TEXT, xid xid8, "
                "stamp BIGINT, at BIGINT, PRIMARY KEY (table_name, xid))"
            ),
            # One log row per writing transaction: its last statement's stamp and time.
            (
                f"CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "DECLARE s BIGINT; BEGIN "
                f"UPDATE cq_stamps SET stamp = stamp + 1 WHERE table_name = {name} "
                "RETURNING stamp INTO s; "
                f"INSERT INTO cq_stamp_log VALUES ({name}, pg_current_xact_id(), s, "
                "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000) "
                "ON CONFLICT (table_name, xid) DO UPDATE SET stamp = EXCLUDED.stamp, "
                "at = EXCLUDED.at; "
                "RETURN NULL; END $$"
            ),
            (
                f"CREATE OR REPLACE TRIGGER {quote(f'cq_stamp_{table}_t')} AFTER INSERT OR UPDATE "
                f"OR DELETE ON {quote(table)} FOR EACH STATEMENT EXECUTE FUNCTION {fn}()"
            ),
        ]

    # Ids come from a sequence when a row is written, not when its transaction commits: a reader
    # that kept only the last id read would skip a slow writer's lower id committed after it.
    # A position also keeps the xmin of the snapshot it was read in (every transaction below it
    # had ended) and the ids already read from transactions at or above it; the next read takes
    # the ids above the last one and every entry of those transactions it has not had.

    def position(self, log: str) -> PgPosition:
        _, rows = self._rows(
            "SELECT COALESCE(MAX(cq_id), 0), "
            f"pg_snapshot_xmin(pg_current_snapshot())::text::bigint FROM {quote(log)}"
        )
        last, xmin = int(rows[0][0]), int(rows[0][1])
        _, seen = self._rows(
            f"SELECT cq_id FROM {quote(log)} WHERE cq_xid >= %s::text::xid8", (xmin,)
        )
        return PgPosition(last, xmin, frozenset(int(r[0]) for r in seen))

    def read_changes(
        self, log: str, after: Any, columns: list[tuple[str, str]]
    ) -> tuple[pa.Table, PgPosition]:
        at = after if isinstance(after, PgPosition) else PgPosition(int(after), 0, frozenset())
        names = ", ".join(quote(n) for n, _ in columns)
        # The first statement fixes the transaction's snapshot; its xmin goes with what is read.
        _, rows = self._rows("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        xmin = int(rows[0][0])
        found = self.query(
            f"SELECT cq_id, cq_op, {names}, cq_xid::text::bigint AS cq_xid FROM {quote(log)} "
            f"WHERE cq_id > {at.last} OR cq_xid >= '{at.xmin}'::xid8 ORDER BY cq_id",
            [("cq_id", "BIGINT"), ("cq_op", "VARCHAR"), *columns, ("cq_xid", "BIGINT")],
        )
        ids = found["cq_id"].to_numpy()
        xids = found["cq_xid"].to_numpy()
        fresh = ~np.isin(ids, np.fromiter(at.seen, np.int64, len(at.seen)))
        seen = frozenset(ids[xids >= xmin].tolist())
        last = max(at.last, int(ids.max()) if len(ids) else 0)
        changes = found.filter(pa.array(fresh)).drop_columns(["cq_xid"])
        return changes, PgPosition(last, xmin, seen)

    def saved_position(self, position: Any) -> Any:
        at = (
            position
            if isinstance(position, PgPosition)
            else PgPosition(int(position), 0, frozenset())
        )
        return [at.last, at.xmin, sorted(at.seen)]

    def loaded_position(self, saved: Any) -> Any:
        if not (
            isinstance(saved, list)
            and len(saved) == 3
            and type(saved[0]) is int
            and type(saved[1]) is int
            and isinstance(saved[2], list)
            and all(type(i) is int for i in saved[2])
        ):
            raise DatabaseError(f"{self.url}: {saved!r} is not a place in a change log")
        return PgPosition(saved[0], saved[1], frozenset(saved[2]))

    def close(self) -> None:
        self.conn.close()


@dataclass(frozen=True)
class PgPosition:
    """A reader's place in a PostgreSQL change log (:meth:`Database.position`): the last id
    read, the xmin of the snapshot it read in, and the ids read from transactions at or above
    that xmin (their neighbours may commit later with lower ids)."""

    last: int
    xmin: int
    seen: frozenset[int]


class _DuckDB(Database):
    has_triggers = False

    def __init__(self, url: str, path: str):
        super().__init__(url)
        try:
            self.duckdb = importlib.import_module("duckdb")
        except ImportError:
            raise DatabaseError(f"{url}: DuckDB is not installed (pip install duckdb)") from None
        if path != ":memory:" and not Path(path).is_file():
            raise DatabaseError(f"{url}: the database does not open (no file {path})")
        self.path = path
        self.conn: Any = None
        self._open()

    def _open(self) -> None:
        # Read only, and held only while reading: DuckDB locks its file against other writers.
        try:
            self.conn = self.duckdb.connect(self.path, read_only=self.path != ":memory:")
        except self.duckdb.Error as e:
            raise DatabaseError(f"{self.url}: the database does not open ({e})") from None

    def _rows(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        if self.conn is None:
            self._open()
        try:
            cur = self.conn.execute(sql, list(params))
            return [d[0] for d in cur.description or ()], cur.fetchall()
        except self.duckdb.Error as e:
            raise DatabaseError(f"{self.url}: {e} (in {sql!r})") from None

    def _run(self, sql: str) -> None:
        self._rows(sql)

    def begin(self) -> None:
        if self.conn is None:
            self._open()

    def commit(self) -> None:
        if self.path != ":memory:":
            self.close()

    def _catalog(self, table: str) -> list[tuple[str, str, str | None]]:
        _, rows = self._rows(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = ? ORDER BY ordinal_position",
            (table,),
        )
        return [(r[0], r[1], _CATALOG_TYPES.get(r[1].lower())) for r in rows]

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def sqlite_file(url: str) -> str | None:
    """The real path of a ``sqlite:///`` url's file (two urls of one file give one path); None
    for another database or ``:memory:``, whose connections are databases of their own.

    >>> sqlite_file("sqlite:///:memory:"), sqlite_file("postgresql://h/db")
    (None, None)
    >>> sqlite_file("sqlite:////tmp/a/../r.db")
    '/tmp/r.db'
    """
    path = _file_path(url) if url.startswith("sqlite:") else ""
    return os.path.realpath(path) if path and path != ":memory:" else None


def _file_path(url: str) -> str:
    """The path of a ``scheme:///path`` url (SQLite, DuckDB); "" when it has none."""
    return unquote(urlsplit(url).path)[1:] if url.count("/") >= 3 else ""


def connect(url: str) -> Database:
    """Opens the database at ``url``; a :class:`DatabaseError` saying why when it does not open.

    >>> connect("mysql://h/db")
    Traceback (most recent call last):
    cq_py.io.databases.DatabaseError: mysql://h/db: expected sqlite:///..., postgresql://... or duckdb:///...
    """
    scheme = re.match(r"^([a-z][a-z0-9+.-]*)://", url)
    kind = scheme.group(1).split("+")[0] if scheme else ""
    if kind == "sqlite" or kind == "duckdb":
        path = _file_path(url)
        if not path:
            raise DatabaseError(f"{url}: expected {kind}:///path (a file, or :memory:)")
        return _SQLite(url, path) if kind == "sqlite" else _DuckDB(url, path)
    if kind in ("postgresql", "postgres"):
        return _PostgreSQL(url)
    raise DatabaseError(f"{url}: expected sqlite:///..., postgresql://... or duckdb:///...")
