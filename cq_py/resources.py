"""Updatable resources (paper 002): the in-process store that other threads update while queries
read it, and (later in this module) the databases' last-update stamps.

:class:`ResourceStore` holds keyed tables. Each commit makes a new immutable version of the
resources it touches (readers pin a version and are never disturbed by later commits), every
version carries its last-update stamp (the store's commit number), and each resource has a
reader–writer lock that the strategies of ``Engine(txn=...)`` take as paper 002 §4 prescribes.
A transaction is atomic across resources: every change is checked before anything is published,
and a change that does not fit is an :class:`InputError` that leaves the store as it was. A writer
waits for the readers holding a resource's lock at most ``timeout`` seconds, then gets
:class:`LockTimeout` naming the resource and the queries holding it.

>>> import pyarrow as pa
>>> store = ResourceStore()
>>> store.load("x", pa.table({"id": [1, 2], "v": ["a", "b"]}), key=["id"])
>>> with store.transaction(timeout=1.0) as tx:
...     tx.upsert("x", [{"id": 2, "v": "B"}, {"id": 3, "v": "c"}])
...     tx.delete("x", [1])
>>> store.read("x").sort_by("id").to_pylist()
[{'id': 2, 'v': 'B'}, {'id': 3, 'v': 'c'}]
>>> store.version()
2
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from cq_core import _core
from cq_py.errors import (
    ArgumentError,
    CQError,
    InputError,
    LockTimeout,
    ResourceError,
    from_core,
)
from cq_py.io.databases import Database, DatabaseError, connect, quote, sqlite_file
from cq_py.planner import types as T

__all__ = [
    "DatabaseResource",
    "ModelReader",
    "ResourceSnapshot",
    "ResourceStore",
    "Transaction",
    "install_versioning",
    "update_log",
]

#: cq's column types by Arrow type (the four the core has).
_TYPES = {arrow: t for t, arrow in T.TO_ARROW.items() if t != T.NULL}


def _error(e: _core.CoreError) -> CQError | RuntimeError:
    return from_core(*e.args)


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ArgumentError(f"timeout must be a number of seconds >= 0; found {value!r}")
    return float(value)


class ResourceStore:
    """Keyed tables updated in transactions from any thread while an engine reads them
    (``Engine(resources=store)``). Thread-safe.

    >>> store = ResourceStore()
    >>> store.load("rates", [{"cur": "EUR", "rate": 1.1}], key=["cur"])
    >>> store.read("rates").to_pylist()
    [{'cur': 'EUR', 'rate': 1.1}]
    """

    def __init__(self) -> None:
        self._core = _core.ResourceStore()
        self._define = threading.Lock()
        self._models: dict[str, Callable[..., Any]] = {}

    def names(self) -> list[str]:
        """The resources defined, in name order.

        >>> ResourceStore().names()
        []
        """
        return [n for n in self._core.names() if self._core.spec(n)[0]]  # (models have none)

    def schema(self, name: str) -> tuple[pa.Schema, list[str]]:
        """Resource ``name``'s columns and its key's columns.

        >>> s = ResourceStore(); s.load("x", [{"id": 1}], key=["id"])
        >>> s.schema("x")[1]
        ['id']
        """
        self._known(name)
        names, types, key = self._core.spec(name)
        if not names:
            raise InputError(f"'{name}' is a model: set_model changes it, not rows")
        schema = T.arrow_schema(list(zip(names, types, strict=True)))
        return schema, [names[k] for k in key]

    def load(
        self, name: str, data: Any, key: Sequence[str] | None = None, timeout: float = 10.0
    ) -> None:
        """Replaces resource ``name``'s content with ``data`` (an Arrow table or record batch, or a
        list of dicts), as one transaction. The first load defines the resource: its columns are
        ``data``'s, and ``key`` names the key's columns (required then; if given later it must be
        the same).

        >>> s = ResourceStore(); s.load("x", [{"id": 1, "v": "a"}], key=["id"])
        >>> s.load("x", [{"id": 2, "v": "b"}]); s.read("x")["id"].to_pylist()
        [2]
        """
        timeout = _timeout(timeout)
        with self._define:
            if not self._core.has(name):
                table = _table(data, None, f"load('{name}')")
                if not key:
                    raise ArgumentError(
                        f"load('{name}') defines the resource: key must name its key columns; "
                        f"found {key!r}"
                    )
                missing = [k for k in key if k not in table.column_names]
                if missing:
                    raise ArgumentError(
                        f"load('{name}'): key columns {missing} are not among {table.column_names}"
                    )
                bad = [f.name for f in table.schema if f.type not in _TYPES]
                if bad:
                    raise InputError(
                        f"load('{name}'): columns {bad} have types cq lacks; expected BIGINT, "
                        "DOUBLE, VARCHAR or BOOLEAN (int64, float64, string, bool)"
                    )
                spec = (
                    name,
                    table.column_names,
                    [_TYPES[f.type] for f in table.schema],
                    [table.column_names.index(k) for k in key],
                )
                # Rows the store refuses (a NULL or a repeated key) must leave the resource
                # undefined, as if load had not been called: they are tried on a scratch store
                # first, with the store's own checks.
                trial = _core.ResourceStore()
                try:
                    trial.define(*spec)
                    trial.commit([(name, "replace", _one_batch(table).__arrow_c_array__())], 0, "")
                    self._core.define(*spec)
                except _core.CoreError as e:
                    raise _error(e) from None
        schema, have = self.schema(name)
        if key is not None and list(key) != have:
            raise ArgumentError(f"load('{name}'): the resource's key is {have}; found {list(key)}")
        with self.transaction(timeout=timeout, writer=f"load('{name}')") as tx:
            tx._add(name, "replace", _table(data, schema, f"load('{name}')"))

    def set_model(self, name: str, fn: Callable[..., Any], timeout: float = 10.0) -> None:
        """Makes ``fn`` model ``name`` (``REGISTER MODEL``: called on Arrow batches of its
        arguments, returning its result columns). It waits, as a writer, for the queries holding
        the model's lock (two-phase locking holds it to their commit), at most ``timeout`` seconds,
        then :class:`LockTimeout`; the new model is a new version (``update_log``).

        >>> s = ResourceStore(); s.set_model("double", lambda x: {"y": x * 2}); s.model("double")[0]
        1
        """
        if not callable(fn):
            raise ArgumentError(f"set_model('{name}'): expected a callable; found {fn!r}")
        timeout = _timeout(timeout)
        try:
            with self._define:
                self._core.define_model(name)
            self._core.begin_exclusive([name], timeout)
        except _core.CoreError as e:
            raise _error(e) from None
        try:
            self._models[name] = fn
        finally:
            self._core.end_exclusive([name], f"set_model('{name}')", True)

    def model(self, name: str) -> tuple[int, Callable[..., Any]]:
        """(the version that set it, the callable) of model ``name``.

        >>> s = ResourceStore(); s.set_model("f", len); s.model("f")[1] is len
        True
        """
        if name not in self._models:
            raise InputError(
                f"no model {name!r} in the store; it holds {sorted(self._models) or 'none'}"
            )
        return int(self._core.current(name)[0]), self._models[name]

    def transaction(self, timeout: float = 10.0, writer: str = "") -> Transaction:
        """A transaction: changes made through it are applied at once when its ``with`` block
        ends without an exception (nothing when it raises). ``timeout``: seconds to wait for the
        resources' locks, then :class:`LockTimeout`.

        >>> s = ResourceStore(); s.load("x", [{"id": 1}], key=["id"])
        >>> with s.transaction() as tx:
        ...     tx.upsert("x", [{"id": 5}])
        >>> sorted(s.read("x")["id"].to_pylist())
        [1, 5]
        """
        return Transaction(self, _timeout(timeout), writer)

    def read(self, name: str) -> pa.Table:
        """Resource ``name``'s committed content now (one version, whole).

        >>> s = ResourceStore(); s.load("x", [{"id": 1}], key=["id"]); s.read("x").num_rows
        1
        """
        return self.read_version(name)[1]

    def read_version(self, name: str) -> tuple[int, pa.Table]:
        """(the commit that made it, the content) of resource ``name``'s current version.

        >>> s = ResourceStore(); s.load("x", [{"id": 1}], key=["id"]); s.read_version("x")[0]
        1
        """
        self._known(name)
        version, (schema, array) = self._core.current(name)
        return version, pa.Table.from_batches(
            [pa.RecordBatch._import_from_c_capsule(schema, array)]
        )

    def version(self) -> int:
        """The number of the last commit (0 before any).

        >>> ResourceStore().version()
        0
        """
        return int(self._core.version())

    def update_log(self) -> pa.Table:
        """One row per commit: ``version``, ``at`` (when it was published), ``writer``,
        ``resources`` it changed, rows ``upserted`` and ``deleted``.

        >>> s = ResourceStore(); s.load("x", [{"id": 1}], key=["id"])
        >>> s.update_log().select(["version", "writer", "resources"]).to_pylist()
        [{'version': 1, 'writer': "load('x')", 'resources': ['x']}]
        """
        rows = self._core.update_log()
        return pa.table(
            {
                "version": pa.array([r[0] for r in rows], pa.int64()),
                "at": pa.array([r[1] for r in rows], pa.timestamp("ns", tz="UTC")),
                "writer": pa.array([r[2] for r in rows], pa.string()),
                "resources": pa.array([r[3] for r in rows], pa.list_(pa.string())),
                "upserted": pa.array([r[4] for r in rows], pa.int64()),
                "deleted": pa.array([r[5] for r in rows], pa.int64()),
            }
        )

    def _known(self, name: str) -> None:
        if not isinstance(name, str) or not self._core.has(name):
            raise InputError(
                f"no resource {name!r} in the store; it holds {self.names() or 'none'}"
            )


def _table(data: Any, schema: pa.Schema | None, where: str) -> pa.Table:
    """``data`` as one Arrow table, cast to ``schema`` when given (an InputError naming the
    column when it does not fit)."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, list):
        try:
            data = (
                pa.Table.from_pylist(data, schema=schema) if schema else pa.Table.from_pylist(data)
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
            # (OverflowError: an integer past 64 bits.)
            raise InputError(f"{where}: rows that do not fit the columns: {e}") from None
    if not isinstance(data, pa.Table):
        raise ArgumentError(
            f"{where}: expected a pyarrow Table or RecordBatch or a list of dicts; found "
            f"{type(data).__name__}"
        )
    if schema is None:
        return data
    if sorted(data.column_names) != sorted(schema.names):
        raise InputError(f"{where}: expected columns {schema.names}; found {data.column_names}")
    try:
        return data.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InputError(f"{where}: values that are not of the column's type: {e}") from None


class Transaction:
    """Changes to a :class:`ResourceStore`, applied together at the end of a ``with`` block
    (:meth:`ResourceStore.transaction`), in the order they were made.

    >>> s = ResourceStore(); s.load("x", [{"id": 1, "v": "a"}], key=["id"])
    >>> with s.transaction() as tx:
    ...     tx.upsert("x", [{"id": 1, "v": "z"}])
    >>> s.read("x").to_pylist()
    [{'id': 1, 'v': 'z'}]
    """

    def __init__(self, store: ResourceStore, timeout: float, writer: str) -> None:
        self._store, self._timeout, self._writer = store, timeout, writer
        self._changes: list[tuple[str, str, pa.Table]] = []
        self._open = False

    def __enter__(self) -> Transaction:
        self._open = True
        return self

    def upsert(self, resource: str, rows: Any) -> None:
        """Inserts ``rows`` (every column), replacing the rows with their keys.

        >>> s = ResourceStore(); s.load("x", [{"id": 1}], key=["id"])
        >>> with s.transaction() as tx: tx.upsert("x", [{"id": 2}])
        """
        schema, _ = self._store.schema(resource)
        self._add(resource, "upsert", _table(rows, schema, f"upsert to '{resource}'"))

    def delete(self, resource: str, keys: Any) -> None:
        """Deletes the rows of ``keys``: a table or list of dicts of the key columns, or, for a
        key of one column, a list of its values. A key the resource does not hold is an
        :class:`InputError` at commit.

        >>> s = ResourceStore(); s.load("x", [{"id": 1}, {"id": 2}], key=["id"])
        >>> with s.transaction() as tx: tx.delete("x", [1])
        >>> s.read("x")["id"].to_pylist()
        [2]
        """
        schema, key = self._store.schema(resource)
        key_schema = pa.schema([schema.field(k) for k in key])
        if isinstance(keys, list) and keys and not isinstance(keys[0], dict):
            if len(key) != 1:
                raise ArgumentError(
                    f"delete from '{resource}': its key has columns {key}; give dicts or a table"
                )
            keys = [{key[0]: k} for k in keys]
        self._add(resource, "delete", _table(keys, key_schema, f"delete from '{resource}'"))

    def _add(self, resource: str, kind: str, table: pa.Table) -> None:
        if not self._open:
            raise ArgumentError("a transaction takes changes inside its with block only")
        self._changes.append((resource, kind, table))

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._open = False
        if kind is not None or not self._changes:
            return
        changes = [(r, k, _one_batch(t).__arrow_c_array__()) for r, k, t in self._changes]
        try:
            self._store._core.commit(changes, self._timeout, self._writer)
        except _core.CoreError as e:
            raise _error(e) from None


def _one_batch(t: pa.Table) -> pa.RecordBatch:
    """``t`` as one record batch (its chunks joined; an empty table has no batch of its own)."""
    batches = t.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=t.schema)


def install_versioning(url: str, tables: Sequence[str]) -> None:
    """Adds trigger-kept last-update stamps to ``tables`` of the database at ``url``
    (``sqlite:///path`` or ``postgresql://...``): any writer's transaction that changes a table
    raises its stamp, which the optimistic strategy of paper 002 §4.2.1 checks at commit. Once per
    table; installing again keeps the stamps. A :class:`ResourceError` names what failed.

    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "r.db")
    >>> with sqlite3.connect(path) as c:
    ...     _ = c.execute("CREATE TABLE x (id INTEGER, v TEXT)")
    >>> install_versioning(f"sqlite:///{path}", ["x"])
    """

    def install(db: Database) -> None:
        for table in tables:
            db.install_versioning(table)

    _on_tables(url, tables, install)


_R = TypeVar("_R")


def _on_tables(url: str, tables: Sequence[str], action: Callable[[Database], _R]) -> _R:
    """``action`` on a connection to ``url`` (closed after), for ``tables`` (a list of names);
    a database error is a ResourceError."""
    if isinstance(tables, str):
        raise ArgumentError(f"tables must be a list of table names; found the string {tables!r}")
    try:
        db = connect(url)
    except DatabaseError as e:
        raise ResourceError(str(e)) from None
    try:
        return action(db)
    except DatabaseError as e:
        raise ResourceError(str(e)) from None
    finally:
        db.close()


def update_log(url: str, tables: Sequence[str]) -> pa.Table:
    """What any writer committed to ``tables`` of the database at ``url`` since
    :func:`install_versioning`, kept by its triggers: ``version`` (the table's last-update
    stamp after the change), ``at`` and ``resources`` (the table), the update log
    :func:`cq_py.txn.check` takes (as :meth:`ResourceStore.update_log` is for the store).
    A :class:`ResourceError` names what failed.

    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "u.db")
    >>> with sqlite3.connect(path) as c:
    ...     _ = c.execute("CREATE TABLE u (id INTEGER)")
    >>> install_versioning(f"sqlite:///{path}", ["u"])
    >>> with sqlite3.connect(path) as c:
    ...     _ = c.execute("INSERT INTO u VALUES (1)")
    >>> update_log(f"sqlite:///{path}", ["u"])["version"].to_pylist()
    [1]
    """
    return _on_tables(url, tables, lambda db: db.update_log(tables))


#: Probes per lookup statement (SQLite allows 32,766 parameters; PostgreSQL 65,535).
_PROBES = 500


class _ReaderCalls:
    """The core's calls on a resource's reader (cq_core's PyResource): Arrow capsules in and
    out, around the reader's ``read_lookup`` and ``read_scan``."""

    def read_lookup(self, keys: pa.RecordBatch) -> tuple[int, pa.Table]:
        raise NotImplementedError

    def read_scan(self) -> tuple[int, pa.Table]:
        raise NotImplementedError

    def lookup(self, keys: tuple[Any, Any]) -> tuple[int, tuple[Any, Any]]:
        stamp, rows = self.read_lookup(pa.RecordBatch._import_from_c_capsule(*keys))
        return stamp, _one_batch(rows).__arrow_c_array__()

    def scan(self) -> tuple[int, tuple[Any, Any]]:
        stamp, rows = self.read_scan()
        return stamp, _one_batch(rows).__arrow_c_array__()


def _distinct_keys(keys: pa.RecordBatch, key: list[str]) -> pa.Table:
    """The distinct non-null keys of ``keys`` (a batch of the key columns)."""
    table = pa.Table.from_batches([keys]).select(key)
    return table.group_by(key).aggregate([]).drop_null()


class _Connection:
    """A database connection and the transactions (``holders``: (resource, holder) pairs) whose
    shared lock its open database transaction holds. The resources of one SQLite file share one:
    SQLite locks the file, not a table, so a second connection's ``BEGIN IMMEDIATE`` would wait
    for the first, which the same single-threaded executor holds until it commits (a query
    joining two tables of one file, or two queries each reading one, could never lock both)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.holders: set[tuple[str, str]] = set()
        self.broken = False
        self.users = 1

    @staticmethod
    def open(url: str, shared: dict[str, _Connection] | None) -> _Connection:
        """``shared``'s connection to ``url``'s SQLite file when it has one, else a new one
        (entered in ``shared`` for a SQLite file)."""
        file = sqlite_file(url)
        if shared is not None and file is not None and file in shared:
            conn = shared[file]
            if conn.users > 0:
                conn.users += 1
                return conn
        conn = _Connection(connect(url))
        if shared is not None and file is not None:
            shared[file] = conn
        return conn


class DatabaseResource(_ReaderCalls):
    """A resource read from a database table (``REGISTER RESOURCE name (...) KEY (...) FROM
    'url' [TABLE 'tbl']``), for the core's reference operators: :meth:`lookup` and :meth:`scan`
    return the rows with the table's last-update stamp (``install_versioning``; 0 without one),
    read in one database transaction. The core calls them a batch of probes at a time.
    ``resource`` is its registered name, in messages (the table's by default).

    The strategies of ``Engine(txn=...)`` (paper 002 §4) call the rest, each naming the
    ``holder`` (the transaction) it acts for: :meth:`lock_shared` and :meth:`unlock_shared`
    (two-phase locking: SQLite ``BEGIN IMMEDIATE`` in WAL mode, PostgreSQL ``LOCK TABLE ... IN
    SHARE MODE``; reads between them run in that transaction), :meth:`pin` (snapshot: lock,
    copy, release) and :meth:`stamp` (optimistic: the last-update stamp now). A database error
    is a :class:`ResourceError` naming the table; a transaction open then is aborted (its
    holders lose the lock) and the next call opens a new connection.

    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "r.db")
    >>> with sqlite3.connect(path) as c:
    ...     _ = c.execute("CREATE TABLE x (id INTEGER, v TEXT)")
    ...     _ = c.execute("INSERT INTO x VALUES (1, 'a'), (2, 'b')")
    >>> r = DatabaseResource(f"sqlite:///{path}", "x", [("id", "int64"), ("v", "utf8")], ["id"])
    >>> r.read_scan()[1].to_pylist()
    [{'id': 1, 'v': 'a'}, {'id': 2, 'v': 'b'}]
    """

    def __init__(
        self,
        url: str,
        table: str,
        columns: list[tuple[str, str]],
        key: list[str],
        resource: str | None = None,
        shared: dict[str, _Connection] | None = None,
    ) -> None:
        try:
            self._conn = _Connection.open(url, shared)
            found = {n.lower(): t for n, t in self._db.columns(table)}
        except DatabaseError as e:
            raise ResourceError(str(e)) from None
        self._types = columns
        self._columns = [(n, T.CQL_NAME[t]) for n, t in columns]
        for n, t in self._columns:
            if found.get(n.lower()) != t:
                have = ", ".join(f"{k} {v}" for k, v in found.items())
                raise ResourceError(f"{url}: table '{table}' has no column {n} {t} (it has {have})")
        self.url, self.table, self._key = url, table, key
        self.resource = resource or table  # its name in the core's messages
        self._versioned = self._has_stamp()
        names = ", ".join(quote(n) for n, _ in self._columns)
        self._select = f"SELECT {names} FROM {quote(table)}"

    @property
    def _db(self) -> Database:
        return self._conn.db

    def _has_stamp(self) -> bool:
        try:
            self._db.stamp(self.table)
            return True
        except DatabaseError:
            return False

    def _failed(self, e: DatabaseError) -> ResourceError:
        """The ResourceError for ``e``; the open transaction, if any, is aborted (a lost
        connection has lost it already) and the connection is opened anew at the next call."""
        held = sorted({h for _, h in self._conn.holders})
        self._conn.holders.clear()
        self._conn.broken = True
        with contextlib.suppress(DatabaseError):  # (a lost connection has nothing to roll back)
            self._db.rollback()
        aborted = f"; the transaction of {', '.join(held)} aborted" if held else ""
        return ResourceError(f"resource table '{self.table}': {e}{aborted}")

    def _reopen(self) -> None:
        """A new connection after a failure (no transaction is open then)."""
        if not self._conn.broken:
            return
        # Closing a lost connection may raise the driver's own error.
        with contextlib.suppress(Exception):
            self._db.close()
        try:
            self._conn.db = connect(self.url)
        except DatabaseError as e:
            raise ResourceError(f"resource table '{self.table}': {e}") from None
        self._conn.broken = False

    def _outside(self, action: Callable[[], _R]) -> _R:
        """``action``, run while no transaction of the holders is open; once more on a new
        connection when the connection was found lost (nothing was open to abort)."""
        self._reopen()
        try:
            return action()
        except DatabaseError as e:
            if not self._db.lost():
                raise self._failed(e) from None
            self._conn.broken = True
        self._reopen()
        try:
            return action()
        except DatabaseError as e:
            raise self._failed(e) from None

    def _statements(self, statements: list[tuple[str, list[Any]]]) -> tuple[int, pa.Table]:
        stamp = self._db.stamp(self.table) if self._versioned else 0
        parts = [self._db.query(sql, self._columns, params) for sql, params in statements]
        if not parts:
            return stamp, T.arrow_schema(self._types).empty_table()
        return stamp, pa.concat_tables(parts)

    def _read(self, statements: list[tuple[str, list[Any]]]) -> tuple[int, pa.Table]:
        """(stamp, the rows of every statement), read in one database transaction: the holders'
        when the shared lock is held, else one of their own."""
        if self._conn.holders:
            try:
                return self._statements(statements)
            except DatabaseError as e:
                raise self._failed(e) from None

        def transaction() -> tuple[int, pa.Table]:
            self._db.begin()
            try:
                return self._statements(statements)
            finally:
                self._db.commit()

        return self._outside(transaction)

    def read_scan(self) -> tuple[int, pa.Table]:
        """(stamp, every row).

        >>> DatabaseResource.read_scan.__name__
        'read_scan'
        """
        return self._read([(self._select, [])])

    def read_lookup(self, keys: pa.RecordBatch) -> tuple[int, pa.Table]:
        """(stamp, the rows holding the keys of ``keys``, a batch of the key columns): one
        statement per :data:`_PROBES` distinct keys, all in one transaction.

        >>> DatabaseResource.read_lookup.__name__
        'read_lookup'
        """
        distinct = _distinct_keys(keys, self._key)
        p = self._db.param
        one = "(" + " AND ".join(f"{quote(k)} = {p}" for k in self._key) + ")"
        # The driver takes parameters as Python values: one list per key column, not per row.
        columns = [distinct.column(k).to_pylist() for k in self._key]
        probes = list(zip(*columns, strict=True))
        statements = []
        for start in range(0, len(probes), _PROBES):
            chunk = probes[start : start + _PROBES]
            where = " OR ".join([one] * len(chunk))
            statements.append((f"{self._select} WHERE {where}", [v for pr in chunk for v in pr]))
        return self._read(statements)

    def check_strategy(self, txn: str) -> None:
        """A :class:`ResourceError` when this table cannot be read under ``Engine(txn=txn)``,
        saying why, before any row is pushed: ``"2pl"`` needs a database that holds a shared
        lock for a reader (not DuckDB), ``"optimistic"`` the table's last-update stamp
        (:func:`install_versioning`); ``"none"`` and ``"snapshot"`` read any.

        >>> import sqlite3, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "c.db")
        >>> with sqlite3.connect(path) as c:
        ...     _ = c.execute("CREATE TABLE c (id INTEGER)")
        >>> r = DatabaseResource(f"sqlite:///{path}", "c", [("id", "int64")], ["id"])
        >>> r.check_strategy("2pl")
        >>> try:
        ...     r.check_strategy("optimistic")
        ... except ResourceError as e:
        ...     print(str(e).split("; ")[1])
        run cq_py.resources.install_versioning(url, ['c']) first
        """
        if txn == "2pl" and not self._db.has_triggers:
            raise ResourceError(
                f"resource table '{self.table}' ({self.url}): this database cannot hold a shared "
                "lock for a reader, so it does not support txn='2pl' (txn='snapshot' copies it)"
            )
        if txn == "optimistic" and not self._versioned:
            self._versioned = self._has_stamp()
            if not self._versioned:
                raise self._unversioned()

    def _unversioned(self) -> ResourceError:
        return ResourceError(
            f"resource table '{self.table}' ({self.url}) has no last-update stamp, which "
            "txn='optimistic' needs; run cq_py.resources.install_versioning(url, "
            f"['{self.table}']) first"
        )

    def lock_shared(self, holder: str, timeout: float) -> bool:
        """Takes the table's shared lock for transaction ``holder`` (two-phase locking, paper
        002 §4.1), held until :meth:`unlock_shared`: writers of the table, in any connection or
        process, wait until then (and get their database's lock error past their own timeout).
        Waits at most ``timeout`` seconds for a writer holding the table; False when that time
        passed. Several holders share one database transaction; a holder already holding it
        gets True at once.

        >>> import sqlite3, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "r.db")
        >>> with sqlite3.connect(path) as c:
        ...     _ = c.execute("CREATE TABLE x (id INTEGER)")
        >>> r = DatabaseResource(f"sqlite:///{path}", "x", [("id", "int64")], ["id"])
        >>> r.lock_shared("q", 1.0), r.holders()
        (True, ['q'])
        >>> r.unlock_shared("q"); r.holders()
        []
        """
        if not isinstance(holder, str) or not holder:
            raise ArgumentError(f"lock_shared: holder must be a non-empty str; found {holder!r}")
        timeout = _timeout(timeout)
        if self._conn.holders:  # (the connection's transaction holds the lock already)
            self._conn.holders.add((self.resource, holder))
            return True
        got = self._outside(lambda: self._db.lock_shared(self.table, timeout))
        if got:
            self._conn.holders.add((self.resource, holder))
        return got

    def unlock_shared(self, holder: str) -> None:
        """Releases ``holder``'s shared lock (:meth:`lock_shared`); the last holder's release
        ends the database transaction. A holder not holding it (its transaction was aborted by
        a database error) changes nothing.

        >>> DatabaseResource.unlock_shared.__name__
        'unlock_shared'
        """
        if (self.resource, holder) not in self._conn.holders:
            return
        self._conn.holders.discard((self.resource, holder))
        if self._conn.holders:
            return
        try:
            self._db.commit()
        except DatabaseError as e:
            if not self._db.lost():
                raise self._failed(e) from None
            # The server ended the transaction with the connection, and the lock with it. Every
            # read of the holders succeeded before (a read on a lost connection fails and aborts
            # them), so under the lock: a read-only transaction has nothing more to lose.
            self._conn.broken = True

    def holders(self) -> list[str]:
        """The transactions holding the shared lock now, in name order.

        >>> DatabaseResource.holders.__name__
        'holders'
        """
        return sorted(h for r, h in self._conn.holders if r == self.resource)

    def pin(self, holder: str, timeout: float) -> ResourceSnapshot:
        """A snapshot for transaction ``holder`` (paper 002 §4.1's snapshot strategy): takes the
        shared lock (waiting at most ``timeout`` seconds, then :class:`LockTimeout`), copies the
        whole table in one statement, releases the lock, and returns the copy, read as this
        resource is (:meth:`lookup`, :meth:`scan`) with the stamp it had. Writers wait only for
        the copy.

        >>> import sqlite3, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "p.db")
        >>> with sqlite3.connect(path) as c:
        ...     _ = c.executescript("CREATE TABLE p (k INTEGER); INSERT INTO p VALUES (1), (2);")
        >>> copy = DatabaseResource(f"sqlite:///{path}", "p", [("k", "int64")], ["k"]).pin("q", 1)
        >>> with sqlite3.connect(path) as c:
        ...     _ = c.execute("DELETE FROM p")
        >>> copy.read_lookup(pa.record_batch({"k": [2, 3]}))[1].to_pylist()
        [{'k': 2}]
        """
        if not self._db.has_triggers:
            # DuckDB: one statement reads one state, and no other process writes the file
            # while this reader has it open.
            stamp, rows = self.read_scan()
            return ResourceSnapshot(self.table, stamp, rows, self._key, self.resource)
        pinning = f"{holder} (snapshot copy)"
        if not self.lock_shared(pinning, timeout):
            raise LockTimeout(
                f"resource table '{self.table}' ({self.url}) stayed locked by a writer past the "
                f"timeout ({timeout} s) of the snapshot copy for query '{holder}'"
            )
        try:
            stamp, rows = self.read_scan()
        finally:
            self.unlock_shared(pinning)
        return ResourceSnapshot(self.table, stamp, rows, self._key, self.resource)

    def stamp(self) -> int:
        """The table's last-update stamp now (``install_versioning``'s triggers raise it with
        every committed write; paper 002 §4.2.1's optimistic strategy compares it with the
        stamps its reads logged). A :class:`ResourceError` for a table without one.

        >>> import sqlite3, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "r.db")
        >>> with sqlite3.connect(path) as c:
        ...     _ = c.execute("CREATE TABLE x (id INTEGER)")
        >>> install_versioning(f"sqlite:///{path}", ["x"])
        >>> r = DatabaseResource(f"sqlite:///{path}", "x", [("id", "int64")], ["id"])
        >>> before = r.stamp()
        >>> with sqlite3.connect(path) as c:
        ...     _ = c.execute("INSERT INTO x VALUES (1)")
        >>> r.stamp() > before
        True
        """
        if not self._versioned:
            self._versioned = self._has_stamp()
        if not self._versioned:
            raise self._unversioned()
        if not self._conn.holders:
            return self._outside(lambda: self._db.stamp(self.table))
        try:
            return self._db.stamp(self.table)
        except DatabaseError as e:
            raise self._failed(e) from None

    def close(self) -> None:
        """Closes the connection (an open transaction ends with it), or, when other resources
        of the same SQLite file share it, this resource's part of it (its holders)."""
        self._conn.holders = {(r, h) for r, h in self._conn.holders if r != self.resource}
        self._conn.users -= 1
        if self._conn.users == 0:
            self._conn.holders.clear()
            self._db.close()


class ResourceSnapshot(_ReaderCalls):
    """A copy of a resource's table made by :meth:`DatabaseResource.pin`: read as the resource
    is (``lookup``, ``scan``, with the ``version`` — the stamp — the table had when copied),
    never changed by later writes. A lookup probes the core's index of the copy by key
    (``cq_core._core.KeyIndex``, the matching the core applies to every lookup read through
    Python), built at the first lookup: no per-row Python.

    >>> s = ResourceSnapshot("x", 7, pa.table({"id": [1, 2], "v": ["a", "b"]}), ["id"])
    >>> version, rows = s.read_lookup(pa.record_batch({"id": [2, 2, 5]}))
    >>> version, rows.to_pylist()
    (7, [{'id': 2, 'v': 'b'}])
    """

    def __init__(
        self, table: str, version: int, rows: pa.Table, key: list[str], resource: str | None = None
    ) -> None:
        self.table, self.version, self.rows, self._key = table, version, rows, key
        self.resource = resource or table  # its name in the core's messages
        self._index: _core.KeyIndex | None = None

    def stamp(self) -> int:
        """The stamp the table had when it was copied.

        >>> ResourceSnapshot("x", 3, pa.table({"id": [1]}), ["id"]).stamp()
        3
        """
        return self.version

    def read_scan(self) -> tuple[int, pa.Table]:
        """(stamp, every row of the copy).

        >>> ResourceSnapshot("x", 3, pa.table({"id": [1]}), ["id"]).read_scan()[1].num_rows
        1
        """
        return self.version, self.rows

    def read_lookup(self, keys: pa.RecordBatch) -> tuple[int, pa.Table]:
        """(stamp, the copy's rows holding the keys of ``keys``, a batch of the key columns).

        >>> s = ResourceSnapshot("x", 3, pa.table({"id": [1, 2]}), ["id"])
        >>> s.read_lookup(pa.record_batch({"id": [2]}))[1]["id"].to_pylist()
        [2]
        """
        probes = keys.select(self._key).__arrow_c_array__()
        try:
            if self._index is None:
                by_key = _one_batch(self.rows.select(self._key)).__arrow_c_array__()
                self._index = _core.KeyIndex(self.resource, by_key)
            match = self._index.match(probes)
        except _core.CoreError as e:
            raise _error(e) from None
        # The rows found, each once, in the copy's order.
        return self.version, self.rows.take(np.unique(match[match >= 0]))


class ModelReader:
    """Model ``name`` of a :class:`ResourceStore` as the core's model operator calls it
    (``REGISTER MODEL name (args) RETURNS (cols)``): the store's current callable, applied to
    whole Arrow arrays of the arguments (one call per batch, never per row), must return the
    result columns — an array for a model of one column, or a dict of them by name — each as
    long as the batch and of its declared type; anything else is an :class:`InputError` naming
    the model, and nothing is emitted.

    >>> import pyarrow.compute as pc
    >>> s = ResourceStore(); s.set_model("double", lambda x: pc.multiply(x, 2))
    >>> r = ModelReader(s, "double", pa.schema([("y", pa.int64())]))
    >>> r.call(pa.record_batch({"x": [1, 2]}))[1].to_pylist()
    [{'y': 2}, {'y': 4}]
    """

    def __init__(self, store: ResourceStore, name: str, returns: pa.Schema) -> None:
        self._store, self.name, self._returns = store, name, returns

    def _current(self) -> tuple[int, Callable[..., Any]]:
        return self._store.model(self.name)

    def call(self, args: pa.RecordBatch) -> tuple[int, pa.RecordBatch]:
        """(the model's version, its result for the rows of ``args``).

        >>> ModelReader.call.__name__
        'call'
        """
        version, fn = self._current()
        result = fn(*args.columns)
        names = self._returns.names
        if not isinstance(result, dict):
            result = {names[0]: result} if len(names) == 1 else {}
        if sorted(result) != sorted(names):
            raise InputError(
                f"model '{self.name}' returned columns {sorted(result)}; expected {names} (one "
                "array for a model of one column, else a dict of arrays by name)"
            )
        columns = []
        for field in self._returns:
            value = result[field.name]
            try:
                array = value if isinstance(value, pa.Array) else pa.array(value)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
                raise InputError(
                    f"model '{self.name}': column '{field.name}' is not an array ({e})"
                ) from None
            if array.type != field.type or len(array) != args.num_rows:
                raise InputError(
                    f"model '{self.name}' returned {len(array)} values of type {array.type} for "
                    f"column '{field.name}'; expected {args.num_rows} of type {field.type}"
                )
            columns.append(array)
        return version, pa.RecordBatch.from_arrays(columns, names=names)

    # The core's call (cq_core's PyModel): Arrow capsules in and out.
    def apply(self, args: tuple[Any, Any]) -> tuple[int, tuple[Any, Any]]:
        try:
            version, batch = self.call(pa.RecordBatch._import_from_c_capsule(*args))
        except InputError as e:
            # As the core's error, so that an engine it stops says so afterwards as an
            # InputError (raised as one now too), not as an internal error.
            raise _core.CoreError("input", str(e), None, None) from None
        return version, batch.__arrow_c_array__()

    # A transaction manager's calls (cq_core's PyModel; paper 002 §4): the model's lock in the
    # store (set_model waits for it), its callable frozen, its last-update stamp.
    def lock_shared(self, holder: str, timeout: float) -> bool:
        """The model's shared lock for query ``holder``, waiting at most ``timeout`` seconds
        for a ``set_model``; False when it timed out.

        >>> s = ResourceStore(); s.set_model("f", len)
        >>> r = ModelReader(s, "f", pa.schema([("y", pa.int64())])); r.lock_shared("q", 1.0)
        True
        >>> r.unlock_shared("q")
        """
        return bool(self._store._core.lock_shared(self.name, holder, timeout))

    def unlock_shared(self, holder: str) -> None:
        """Releases a lock :meth:`lock_shared` took for ``holder``.

        >>> ModelReader.unlock_shared.__name__
        'unlock_shared'
        """
        self._store._core.unlock_shared(self.name, holder)

    def pin(self, holder: str, timeout: float) -> ModelReader:
        """The model frozen at its callable now: a later ``set_model`` does not change what
        the returned reader calls (a snapshot transaction's copy).

        >>> s = ResourceStore(); s.set_model("f", len)
        >>> r = ModelReader(s, "f", pa.schema([("y", pa.int64())])).pin("q", 1.0)
        >>> s.set_model("f", max); r.stamp(), r._current()[1] is len
        (1, True)
        """
        return _PinnedModel(self._store, self.name, self._returns, self._store.model(self.name))

    def stamp(self) -> int:
        """The model's last-update stamp: the version of the ``set_model`` that set it.

        >>> s = ResourceStore(); s.set_model("f", len)
        >>> ModelReader(s, "f", pa.schema([("y", pa.int64())])).stamp()
        1
        """
        return int(self._store._core.current(self.name)[0])


class _PinnedModel(ModelReader):
    """A model frozen at one (version, callable): what a snapshot transaction calls."""

    def __init__(
        self,
        store: ResourceStore,
        name: str,
        returns: pa.Schema,
        state: tuple[int, Callable[..., Any]],
    ) -> None:
        super().__init__(store, name, returns)
        self._state = state

    def _current(self) -> tuple[int, Callable[..., Any]]:
        return self._state

    def stamp(self) -> int:
        """The version it was pinned at.

        >>> s = ResourceStore(); s.set_model("f", len)
        >>> _PinnedModel(s, "f", pa.schema([("y", pa.int64())]), s.model("f")).stamp()
        1
        """
        return self._state[0]
