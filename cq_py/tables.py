"""Database tables as relations (paper 001 §3.2, §4.6): the engine's view manager.

``REGISTER TABLE name FROM 'url' [TABLE 'remote']`` reads the table's columns from the database's
catalog and caches the result of its SQL (``SELECT columns FROM remote``) in the engine as a
relation, one copy per SQL text and url whatever the number of names registered for it. Triggers
(cq_py.io.databases) capture the table's changes into a change log; :meth:`Views.read` collects
what changed since the last refresh, and the engine applies it at its current progress: inserts
as arrivals (the log's rows), updates and deletes by running the view's SQL again and pushing the
difference, as bags, from the cached copy. Everything is columnar (Arrow group-by for the
difference); the database client lives here and in cq_py.io.databases, never in the core.

>>> import sqlite3, tempfile, os, cq_py
>>> path = os.path.join(tempfile.mkdtemp(), "u.db")
>>> with sqlite3.connect(path) as c:
...     _ = c.execute("CREATE TABLE urls (loc TEXT, descr TEXT)")
...     _ = c.execute("INSERT INTO urls VALUES ('/a', 'first')")
>>> eng = cq_py.Engine()
>>> eng.execute(f"REGISTER TABLE urls FROM 'sqlite:///{path}';"
...             "REGISTER STREAM access(loc VARCHAR);"
...             "REGISTER QUERY q AS ISTREAM(SELECT access.loc, descr FROM access [Now], urls "
...             "WHERE access.loc = urls.loc);")
>>> with sqlite3.connect(path) as c:
...     _ = c.execute("INSERT INTO urls VALUES ('/b', 'second')")
>>> eng.refresh_tables()
>>> eng.push("access", [{"loc": "/b", "ts": 5}, {"loc": "/a", "ts": 6}])
>>> eng.advance(7)
>>> eng.fetch("q").to_pylist()
[{'loc': '/b', 'descr': 'second', 'ts': 5}, {'loc': '/a', 'descr': 'first', 'ts': 6}]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cq_py.errors import CQLSemanticError
from cq_py.io.databases import Database, DatabaseError, connect, quote
from cq_py.parser import ast

__all__ = ["TableView", "Views", "bag_difference"]

_TYPE_NAMES = {"BIGINT", "DOUBLE", "VARCHAR", "BOOLEAN"}


@dataclass
class TableView:
    """One cached view: its SQL over one database, and the relation input that holds it."""

    url: str
    remote: str
    columns: list[tuple[str, str]]
    db: Database
    input: str  # the name of the relation the engine feeds (the first name registered for it)
    names: list[str] = field(default_factory=list)
    log: str = ""
    position: Any = 0  # the reader's place in the change log (Database.position)
    content: pa.Table | None = None  # what the relation holds now

    @property
    def sql(self) -> str:
        return f"SELECT {', '.join(quote(n) for n, _ in self.columns)} FROM {quote(self.remote)}"


def bag_difference(old: pa.Table, new: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(rows of ``old`` not in ``new``, rows of ``new`` not in ``old``), as bags: a row twice in
    ``old`` and once in ``new`` is deleted once. Columnar: one group-by over both.

    >>> old = pa.table({"a": [1, 1, 2]}); new = pa.table({"a": [1, 3]})
    >>> [t.to_pylist() for t in bag_difference(old, new)]
    [[{'a': 1}, {'a': 2}], [{'a': 3}]]
    """
    names = old.column_names
    both = pa.concat_tables([old, new.cast(old.schema)]).append_column(
        "__cq_w",
        pa.array(np.concatenate([np.full(len(old), -1), np.full(len(new), 1)]), pa.int64()),
    )
    counts = both.group_by(names, use_threads=False).aggregate([("__cq_w", "sum")])
    w = counts.column("__cq_w_sum").to_numpy(zero_copy_only=False)
    keys = counts.select(names)

    def copies(sign: int) -> pa.Table:
        rows = np.flatnonzero(w * sign > 0)
        return keys.take(pa.array(np.repeat(rows, np.abs(w[rows])), pa.int64()))

    return copies(-1), copies(1)


class Views:
    """The engine's cached views, by (url, SQL text), and the tables registered over them."""

    def __init__(self) -> None:
        self.views: dict[tuple[str, str], TableView] = {}
        self.by_name: dict[str, TableView] = {}  # registered names, lower-cased

    def __bool__(self) -> bool:
        return bool(self.views)

    def inputs(self) -> list[str]:
        return [v.input for v in self.views.values()]

    def resolve(
        self, script: ast.Script, err: type[CQLSemanticError] = CQLSemanticError
    ) -> tuple[ast.Script, list[TableView]]:
        """The script with each ``REGISTER TABLE``'s columns read from its database, and the views
        it adds (opened and loaded, not yet registered: :meth:`commit` does that once the plan is
        in). A database that does not open, a missing table or a column type cq lacks is a
        :class:`CQLSemanticError` naming url, table and column; nothing is kept."""
        statements: list[ast.Statement] = []
        new: list[TableView] = []
        try:
            for st in script.statements:
                if not isinstance(st, ast.RegisterTable):
                    statements.append(st)
                    continue
                remote = st.remote or st.name
                view = self._find(st.url, remote) or next(
                    (v for v in new if (v.url, v.remote) == (st.url, remote)), None
                )
                if view is None:
                    db = connect(st.url)
                    try:
                        columns = db.columns(remote)
                        view = TableView(st.url, remote, columns, db, st.name)
                        self._load(view)
                    except DatabaseError:
                        db.close()
                        raise
                    new.append(view)
                defs = tuple(
                    ast.ColumnDef(n, ast.TypeName(t), st.pos)
                    for n, t in view.columns
                    if t in _TYPE_NAMES
                )
                statements.append(replace(st, columns=defs))
        except DatabaseError as e:
            for v in new:
                v.db.close()
            line = st.pos.line or None
            raise err(f"REGISTER TABLE {st.name}: {e}", line, st.pos.column or None) from None
        return replace(script, statements=tuple(statements)), new

    def _find(self, url: str, remote: str) -> TableView | None:
        return next((v for v in self.views.values() if (v.url, v.remote) == (url, remote)), None)

    @staticmethod
    def _load(view: TableView) -> None:
        """Installs change capture and reads the table whole, both as of one state of the
        database: changes up to the log's last id are in the copy, later ones are not."""
        view.log, _ = view.db.capture(view.remote, view.columns)
        view.db.begin()
        try:
            view.position = view.db.position(view.log)
            view.content = view.db.query(view.sql, view.columns)
        finally:
            view.db.commit()

    def commit(self, new: list[TableView], script: ast.Script) -> None:
        """Registers the views of a script whose plan is in, and the names it gave them."""
        for v in new:
            self.views[(v.url, v.sql)] = v
        for st in script.statements:
            if isinstance(st, ast.RegisterTable):
                view = self._find(st.url, st.remote or st.name)
                assert view is not None
                view.names.append(st.name)
                self.by_name[st.name.lower()] = view

    def discard(self, new: list[TableView]) -> None:
        for v in new:
            v.db.close()

    def read(self) -> list[tuple[TableView, pa.Table, pa.Table, pa.Table, Any]]:
        """What changed in every view since the last refresh, read from every database before
        anything is applied: (view, deleted rows, inserted rows, its new content, the reader's
        new place in the change log). A database error is a :class:`DatabaseError` naming the
        table."""
        out = []
        for view in self.views.values():
            assert view.content is not None
            try:
                view.db.begin()
                try:
                    changes, position = (
                        view.db.read_changes(view.log, view.position, view.columns)
                        if view.db.has_triggers
                        else (None, view.position)
                    )
                    if changes is not None and changes.num_rows == 0:
                        view.position = position  # nothing to apply: only the place moves
                        continue
                    if changes is not None and pc.all(pc.equal(changes["cq_op"], "I")).as_py():
                        # Inserts only: the log's rows are the arrivals (paper 001 §4.6).
                        inserted = changes.select([n for n, _ in view.columns])
                        deleted = inserted.schema.empty_table()
                        content = pa.concat_tables([view.content, inserted])
                    else:
                        content = view.db.query(view.sql, view.columns)
                        deleted, inserted = bag_difference(view.content, content)
                finally:
                    view.db.commit()
            except DatabaseError as e:
                raise DatabaseError(f"table '{', '.join(view.names)}': {e}") from None
            out.append((view, deleted, inserted, content, position))
        return out

    def close(self) -> None:
        for v in self.views.values():
            v.db.close()
