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

import base64
import binascii
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cq_py.errors import CQLSemanticError
from cq_py.io.databases import Database, DatabaseError, connect, quote
from cq_py.parser import ast

__all__ = ["TableView", "Views", "bag_difference"]

_COMPARISONS = {"=", "<>", "<", "<=", ">", ">="}


def _column_defs(columns: list[tuple[str, str]], pos: ast.Pos) -> tuple[ast.ColumnDef, ...]:
    return tuple(ast.ColumnDef(n, ast.TypeName(t), pos) for n, t in columns if t in _TYPE_NAMES)


def _conjuncts(e: ast.Expr | None) -> list[ast.Expr]:
    if e is None:
        return []
    if isinstance(e, ast.Binary) and e.op == "AND":
        return _conjuncts(e.left) + _conjuncts(e.right)
    return [e]


def _sql(
    e: ast.Expr,
    label: str,
    cols: dict[str, tuple[str, str]],
    single: bool,
    collation: str | None,
) -> tuple[str, str] | None:
    """``e`` as SQL over one table and its kind ('int', 'str', 'bool' or 'pred'), or None when
    it reads another source or might mean something else in the database than in CQL. Kept to
    what every database evaluates as cq does: BIGINT comparisons, string and boolean equality
    under a binary collation (a column's own collation could fold case), IS NULL, BETWEEN and
    IN over them, AND, OR, NOT (three-valued in both). No arithmetic (overflow and division
    differ), no DOUBLE (PostgreSQL orders NaN as a number)."""

    def go(x: ast.Expr) -> tuple[str, str] | None:
        return _sql(x, label, cols, single, collation)

    if isinstance(e, ast.ColumnRef):
        if not (e.qualifier.lower() == label if e.qualifier else single):
            return None
        col = cols.get(e.name.lower())
        kind = {"BIGINT": "int", "VARCHAR": "str", "BOOLEAN": "bool"}.get(col[1]) if col else None
        if col is None or kind is None or (kind == "str" and collation is None):
            return None
        text = quote(col[0])
        return (f"{text} COLLATE {collation}" if kind == "str" else text), kind
    if isinstance(e, ast.Literal):
        if e.type == "int" and isinstance(e.value, int):
            return str(e.value), "int"
        if e.type == "string" and isinstance(e.value, str) and collation is not None:
            return "'" + e.value.replace("'", "''") + "'", "str"
        if e.type == "bool" and isinstance(e.value, bool):
            return ("TRUE" if e.value else "FALSE"), "bool"
        return None
    if isinstance(e, ast.Binary) and e.op in _COMPARISONS:
        left, right = go(e.left), go(e.right)
        if left is None or right is None or left[1] != right[1] or left[1] == "pred":
            return None
        if left[1] != "int" and e.op not in {"=", "<>"}:
            return None  # string order follows collations; booleans have none in some databases
        return f"({left[0]} {e.op} {right[0]})", "pred"
    if isinstance(e, ast.Binary) and e.op in {"AND", "OR"}:
        left, right = go(e.left), go(e.right)
        if left is None or right is None or left[1] != "pred" or right[1] != "pred":
            return None
        return f"({left[0]} {e.op} {right[0]})", "pred"
    if isinstance(e, ast.Unary) and e.op == "-" and isinstance(e.operand, ast.Literal):
        inner = go(e.operand)
        return (f"(-{inner[0]})", "int") if inner and inner[1] == "int" else None
    if isinstance(e, ast.Unary) and e.op == "NOT":
        inner = go(e.operand)
        return (f"(NOT {inner[0]})", "pred") if inner and inner[1] == "pred" else None
    if isinstance(e, ast.IsNull):
        inner = go(e.operand)
        if inner is None or inner[1] == "pred":
            return None
        return f"({inner[0]} IS {'NOT ' if e.negated else ''}NULL)", "pred"
    if isinstance(e, ast.Between):
        parts = [go(x) for x in (e.operand, e.low, e.high)]
        if any(p is None or p[1] != "int" for p in parts):
            return None
        x, lo, hi = (p[0] for p in parts if p is not None)
        return f"({x} {'NOT ' if e.negated else ''}BETWEEN {lo} AND {hi})", "pred"
    if isinstance(e, ast.InList):
        inner = go(e.operand)
        items = [go(i) if isinstance(i, ast.Literal) else None for i in e.items]
        if inner is None or inner[1] not in {"int", "str"}:
            return None
        if any(i is None or i[1] != inner[1] for i in items):
            return None
        listed = ", ".join(i[0] for i in items if i is not None)
        return f"({inner[0]} {'NOT ' if e.negated else ''}IN ({listed}))", "pred"
    return None


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
    where: str = ""  # a query's filters on the table, run by the database (push_down)

    @property
    def sql(self) -> str:
        sql = f"SELECT {', '.join(quote(n) for n, _ in self.columns)} FROM {quote(self.remote)}"
        return f"{sql} WHERE {self.where}" if self.where else sql


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
                    except DatabaseError:
                        db.close()
                        raise
                    view = self._open(TableView(st.url, remote, columns, db, st.name))
                    new.append(view)
                statements.append(replace(st, columns=_column_defs(view.columns, st.pos)))
        except DatabaseError as e:
            for v in new:
                v.db.close()
            line = st.pos.line or None
            raise err(f"REGISTER TABLE {st.name}: {e}", line, st.pos.column or None) from None
        return replace(script, statements=tuple(statements)), new

    def push_down(
        self, script: ast.Script, new: list[TableView]
    ) -> tuple[ast.Script, list[TableView]]:
        """The script with each query's filters on a database table sent to the database (paper
        001 §4.6: the part of a plan over tables only goes to the database as SQL): the table in
        the query's FROM becomes a view whose SQL carries those filters, cached once per SQL
        text, and the filters leave the query's WHERE. Only filters that mean the same in SQL as
        in CQL go (:func:`_sql`); the others stay in the query. Returns the script and the views
        it adds (loaded, as :meth:`resolve`'s). Only for a script registered before any row is
        in: a view loaded later would start its rows later than the table's.

        >>> import sqlite3, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "u.db")
        >>> with sqlite3.connect(path) as c:
        ...     _ = c.execute("CREATE TABLE urls (loc TEXT, hits INTEGER)")
        >>> views = Views()
        >>> from cq_py.parser import parse
        >>> script, new = views.resolve(parse(f"REGISTER TABLE urls FROM 'sqlite:///{path}';"
        ...     "REGISTER QUERY q AS SELECT loc FROM urls WHERE hits > 10 AND loc <> hits;"))
        >>> script, more = views.push_down(script, new)
        >>> more[0].sql
        'SELECT "loc", "hits" FROM "urls" WHERE ("hits" > 10)'
        >>> views.discard(new + more)
        """
        tables = dict(self.by_name)
        for st in script.statements:
            if isinstance(st, ast.RegisterTable):
                remote = st.remote or st.name
                tables[st.name.lower()] = next(
                    v
                    for v in [*new, *self.views.values()]
                    if (v.url, v.remote, v.where) == (st.url, remote, "")
                )
        made: list[TableView] = []
        if not tables:
            return script, made
        statements: list[ast.Statement] = []
        try:
            for st in script.statements:
                if isinstance(st, ast.RegisterQuery):
                    extra: list[ast.Statement] = []
                    query = self._push_query(st.query, tables, made, extra)
                    statements.extend(extra)
                    statements.append(replace(st, query=query))
                else:
                    statements.append(st)
        except DatabaseError:
            self.discard(made)
            raise
        return replace(script, statements=tuple(statements)), made

    def _push_query(
        self,
        q: ast.Query,
        tables: dict[str, TableView],
        made: list[TableView],
        extra: list[ast.Statement],
    ) -> ast.Query:
        if isinstance(q, ast.Select):
            return self._push_select(q, tables, made, extra)
        if isinstance(q, ast.StreamOp):
            return replace(q, query=self._push_query(q.query, tables, made, extra))
        if isinstance(q, ast.SetOp):
            left = self._push_query(q.left, tables, made, extra)
            return replace(q, left=left, right=self._push_query(q.right, tables, made, extra))
        return replace(q, select=self._push_select(q.select, tables, made, extra))

    def _push_select(
        self,
        sel: ast.Select,
        tables: dict[str, TableView],
        made: list[TableView],
        extra: list[ast.Statement],
    ) -> ast.Select:
        keep = _conjuncts(sel.where)
        sources = list(sel.sources)
        for i, src in enumerate(sel.sources):
            view = tables.get(src.name.lower())
            if view is None or view.where or src.window is not None:
                continue
            label = (src.alias or src.name).lower()
            cols = {n.lower(): (n, t) for n, t in view.columns}
            pushed = []
            for c in list(keep):
                found = _sql(c, label, cols, len(sel.sources) == 1, view.db.binary_collation)
                if found is not None and found[1] == "pred":
                    pushed.append(found[0])
                    keep.remove(c)
            if not pushed:
                continue
            where = " AND ".join(pushed)
            target = next(
                (
                    v
                    for v in [*made, *self.views.values()]
                    if (v.url, v.remote, v.where) == (view.url, view.remote, where)
                ),
                None,
            )
            if target is None:
                name = f"{view.remote}$where{len(self.views) + len(made) + 1}"
                db = connect(view.url)
                target = self._open(
                    TableView(view.url, view.remote, view.columns, db, name, where=where)
                )
                made.append(target)
                defs = _column_defs(view.columns, src.pos)
                extra.append(
                    ast.RegisterTable(name, view.url, view.remote, defs, src.pos, where=where)
                )
            sources[i] = replace(src, name=target.input, alias=src.alias or src.name)
        if sources == list(sel.sources):
            return sel
        where_ = None
        for c in keep:
            where_ = c if where_ is None else ast.Binary("AND", where_, c, c.pos)
        return replace(sel, sources=tuple(sources), where=where_)

    def _find(self, url: str, remote: str) -> TableView | None:
        return next(
            (v for v in self.views.values() if (v.url, v.remote, v.where) == (url, remote, "")),
            None,
        )

    @classmethod
    def _open(cls, view: TableView) -> TableView:
        """``view`` loaded; its connection closed if the database fails."""
        try:
            cls._load(view)
        except DatabaseError:
            view.db.close()
            raise
        return view

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
                view = (
                    next(v for v in new if v.input == st.name)
                    if st.where
                    else self._find(st.url, st.remote or st.name)
                )
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
                    if (
                        changes is not None
                        and not view.where
                        and pc.all(pc.equal(changes["cq_op"], "I")).as_py()
                    ):
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

    def state(self) -> dict[str, Any]:
        """What a snapshot keeps of each view, by the relation it feeds: its cached copy (Arrow
        IPC, base64) and its reader's place in the change log. A restored engine holds the copy
        as it was and applies at its next refresh what changed since that place, not the table
        as it stands when restored."""
        out: dict[str, Any] = {}
        for v in self.views.values():
            assert v.content is not None
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, v.content.schema) as writer:
                writer.write_table(v.content)
            copy = base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")
            out[v.input] = {"position": v.db.saved_position(v.position), "content": copy}
        return out

    def load(self, saved: Any) -> None:
        """Every view's copy and place from :meth:`state` (the views themselves were registered
        again by the saved CQL); a ValueError naming what does not match."""
        if not isinstance(saved, dict) or sorted(saved) != sorted(self.inputs()):
            found = sorted(saved) if isinstance(saved, dict) else type(saved).__name__
            raise ValueError(f"its database views {found} are not {sorted(self.inputs())}")
        loaded = []
        for v in self.views.values():
            entry = saved[v.input]
            assert v.content is not None
            try:
                data = base64.b64decode(entry["content"], validate=True)
                content = pa.ipc.open_stream(data).read_all()
                position = v.db.loaded_position(entry["position"])
            except (TypeError, KeyError, binascii.Error, pa.ArrowInvalid, DatabaseError) as e:
                raise ValueError(f"the view {v.input}'s saved state: {e}") from None
            if not content.schema.equals(v.content.schema):
                raise ValueError(
                    f"the view {v.input}'s saved copy has columns {content.schema}; "
                    f"its table has {v.content.schema}"
                )
            loaded.append((v, content, position))
        for v, content, position in loaded:
            v.content, v.position = content, position

    def describe(self) -> str:
        """``explain()``'s lines for the cached views: the names reading each, its database and
        the SQL it runs there (paper 001 §4.6)."""
        lines = ["Database views (one cached copy per SQL text, paper 001 §4.6):"]
        for v in self.views.values():
            names = ", ".join(v.names) or v.input
            lines.append(f"  {names}: {v.url}: {v.sql}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        for v in self.views.values():
            v.db.close()
