"""From checked syntax to the operator graph the core runs.

The planner keeps a catalog of what is registered (streams, queries) and turns each statement into
logical operators with ids that are unique in the engine. A script is planned against a copy of the
catalog: the first error stops it and nothing of it is registered.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Optional

from cq_py.errors import CQLSemanticError
from cq_py.parser import ast
from cq_py.planner import types as T
from cq_py.planner.expressions import ExpressionBinder, Scope, TypedExpr

# Nanoseconds per CQL duration unit and per engine time unit.
UNIT_NS = {"ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}
TIME_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
UNIT_WORDS = {"ms": "MILLISECONDS", "s": "SECONDS", "min": "MINUTES", "h": "HOURS", "d": "DAYS"}


@dataclass
class LogicalOp:
    """One operator of the plan: what the core builds (``to_plan``) and what explain shows."""

    id: int
    op: str
    inputs: list[int]
    params: dict = field(default_factory=dict)

    def to_plan(self) -> dict:
        return {"id": self.id, "op": self.op, "inputs": self.inputs, **self.params}


@dataclass
class StreamDef:
    name: str
    columns: list[tuple[str, str]]
    scan_id: int


@dataclass
class QueryDef:
    name: str
    kind: str  # "stream" | "relation"
    columns: list[tuple[str, str]]  # user columns, without the time columns
    sink_id: int
    ops: list[LogicalOp]
    lifetime: str  # what explain says about the lifetimes of the query's relation


@dataclass
class Catalog:
    streams: dict[str, StreamDef] = field(default_factory=dict)  # keys lower-cased
    queries: dict[str, QueryDef] = field(default_factory=dict)
    next_id: int = 0

    def lookup(self, name: str) -> Optional[StreamDef | QueryDef]:
        key = name.lower()
        return self.streams.get(key) or self.queries.get(key)

    def names(self) -> list[str]:
        return [s.name for s in self.streams.values()] + [q.name for q in self.queries.values()]


class Planner:
    """Plans a parsed script against a copy of ``catalog``.

    >>> from cq_py.parser import parse
    >>> p = Planner(Catalog(), time_unit="ms")
    >>> cat, ops = p.plan(parse("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s [Now];"))
    >>> [o.op for o in ops]
    ['stream_scan', 'window', 'project', 'sink']
    """

    def __init__(self, catalog: Catalog, time_unit: str = "ms", source: str = "",
                 expose_steps: bool = False):
        self.catalog = catalog
        self.time_unit = time_unit
        self.lines = source.splitlines()
        self.expose_steps = expose_steps

    def err(self, message: str, pos: ast.Pos) -> CQLSemanticError:
        if not pos.line:
            return CQLSemanticError(message)
        text = self.lines[pos.line - 1] if 0 < pos.line <= len(self.lines) else ""
        return CQLSemanticError(message, pos.line, pos.column, text)

    def plan(self, script: ast.Script) -> tuple[Catalog, list[LogicalOp]]:
        if script.source:
            self.lines = script.source.splitlines()
        cat = copy.deepcopy(self.catalog)
        ops: list[LogicalOp] = []
        for st in script.statements:
            if isinstance(st, ast.RegisterStream):
                ops += self._register_stream(cat, st)
            elif isinstance(st, ast.RegisterRelation):
                raise self.err("REGISTER RELATION is not supported yet (this build runs streams)",
                               st.pos)
            elif isinstance(st, ast.RegisterQuery):
                ops += self._register_query(cat, st)
            else:  # pragma: no cover - the parser produces nothing else
                raise self.err(f"unsupported statement {type(st).__name__}", ast.NOPOS)
        return cat, ops

    # -- statements ---------------------------------------------------------------------------

    def _check_new_name(self, cat: Catalog, name: str, pos: ast.Pos) -> None:
        if cat.lookup(name) is not None:
            what = "stream" if name.lower() in cat.streams else "query"
            raise self.err(f"'{name}' is already registered as a {what}", pos)

    def _new_id(self, cat: Catalog) -> int:
        cat.next_id += 1
        return cat.next_id - 1

    def _register_stream(self, cat: Catalog, st: ast.RegisterStream) -> list[LogicalOp]:
        self._check_new_name(cat, st.name, st.pos)
        seen: dict[str, ast.ColumnDef] = {}
        cols = []
        for c in st.columns:
            if c.name.lower() in seen:
                raise self.err(f"column '{c.name}' is declared twice in stream '{st.name}'", c.pos)
            seen[c.name.lower()] = c
            cols.append((c.name, T.FROM_CQL[c.type.name]))
        scan = LogicalOp(self._new_id(cat), "stream_scan", [],
                         {"stream": st.name, "schema": [list(c) for c in cols]})
        cat.streams[st.name.lower()] = StreamDef(st.name, cols, scan.id)
        return [scan]

    def _register_query(self, cat: Catalog, st: ast.RegisterQuery) -> list[LogicalOp]:
        self._check_new_name(cat, st.name, st.pos)
        q = st.query
        istream = False
        if isinstance(q, ast.StreamOp):
            if q.kind != "ISTREAM":
                raise self.err(f"{q.kind} is not supported yet (this build runs ISTREAM)", q.pos)
            if q.delay is not None:
                raise self.err("delays (<Now>, <d>) are not supported yet", q.delay.pos)
            istream = True
            q = q.query
        if isinstance(q, ast.SetOp):
            raise self.err(f"{q.op} is not supported yet (this build runs one SELECT per query)",
                           q.pos)
        if isinstance(q, ast.StreamOp):
            raise self.err(f"{q.kind} inside ISTREAM(...) is not supported", q.pos)
        assert isinstance(q, ast.Select)
        ops, columns, lifetime = self._select(cat, q)
        kind = "stream" if istream else "relation"
        reserved = (["ts"] + (["ts_step"] if self.expose_steps else [])) if istream else \
            (["start", "end"] + (["start_step", "end_step"] if self.expose_steps else []))
        for name, _ in columns:
            if name.lower() in reserved:
                raise self.err(f"output column '{name}' of query '{st.name}' clashes with the time "
                               f"column '{name.lower()}' that a {kind}-valued query adds; rename it "
                               "with AS", q.pos)
        if istream:
            ops.append(LogicalOp(self._new_id(cat), "istream", [ops[-1].id]))
        sink = LogicalOp(self._new_id(cat), "sink", [ops[-1].id],
                         {"query": st.name, "expose_steps": self.expose_steps})
        ops.append(sink)
        cat.queries[st.name.lower()] = QueryDef(st.name, kind, columns, sink.id, ops, lifetime)
        return ops

    # -- SELECT -------------------------------------------------------------------------------

    def _select(self, cat: Catalog, q: ast.Select) -> tuple[list[LogicalOp], list[tuple[str, str]], str]:
        if len(q.sources) != 1:
            raise self.err("a query over several sources (a join) is not supported yet",
                           q.sources[1].pos)
        if q.distinct:
            raise self.err("SELECT DISTINCT is not supported yet", q.pos)
        if q.group_by:
            raise self.err("GROUP BY is not supported yet", q.group_by[0].pos)
        if q.having is not None:
            raise self.err("HAVING is not supported yet", q.having.pos)
        src = q.sources[0]
        target = cat.lookup(src.name)
        if target is None:
            known = ", ".join(cat.names()) or "(none)"
            raise self.err(f"unknown stream or query '{src.name}'; registered: {known}", src.pos)
        if isinstance(target, QueryDef):
            raise self.err(f"reading the query '{target.name}' in FROM is not supported yet",
                           src.pos)
        ops: list[LogicalOp] = []
        window, lifetime = self._window(src.window)
        ops.append(LogicalOp(self._new_id(cat), "window", [target.scan_id], window))
        quals = {target.name.lower()} | ({src.alias.lower()} if src.alias else set())
        label = f"stream '{target.name}'" + (f" (as {src.alias})" if src.alias else "")
        scope = Scope(list(target.columns), quals, label)
        binder = ExpressionBinder(scope, self.err)
        if q.where is not None:
            pred = binder.bind_predicate(q.where)
            ops.append(LogicalOp(self._new_id(cat), "filter", [ops[-1].id],
                                 {"predicate": pred.to_plan()}))
        exprs: list[TypedExpr] = []
        names: list[str] = []
        positions: list[ast.Pos] = []
        for item in q.items:
            if isinstance(item.expr, ast.Star):
                if item.expr.qualifier is not None and item.expr.qualifier.lower() not in quals:
                    raise self.err(f"unknown source '{item.expr.qualifier}' in "
                                   f"'{item.expr.qualifier}.*'; the query reads {label}", item.pos)
                for i, (n, t) in enumerate(scope.columns):
                    exprs.append(TypedExpr("column", t, index=i, text=n))
                    names.append(n)
                    positions.append(item.pos)
                continue
            e = binder.bind(item.expr)
            exprs.append(e)
            names.append(item.alias if item.alias else e.text)
            positions.append(item.pos)
        seen: set[str] = set()
        for n, item_pos in zip(names, positions):
            if n.lower() in seen:
                raise self.err(f"the select list names '{n}' twice; give one of them another name "
                               "with AS", item_pos)
            seen.add(n.lower())
        ops.append(LogicalOp(self._new_id(cat), "project", [ops[-1].id],
                             {"names": names, "exprs": [e.to_plan() for e in exprs]}))
        return ops, [(n, e.type) for n, e in zip(names, exprs)], lifetime

    def _window(self, w: Optional[ast.Window]) -> tuple[dict, str]:
        if w is None or w.kind == "unbounded":
            return {"kind": "unbounded"}, "unbounded (never expires)"
        if w.kind == "now":
            return {"kind": "now"}, "constant duration ε"
        if w.kind == "range":
            assert w.range is not None
            ticks = self.ticks(w.range)
            return {"kind": "range", "range": {"ticks": ticks}}, f"constant duration {ticks} ticks"
        raise self.err(f"the window [{w.kind.replace('_', ' ')}] is not supported yet (this build "
                       "runs [Now], [Range d] and [Range Unbounded])", w.pos)

    def ticks(self, d: ast.Duration) -> int:
        """A CQL duration in ticks of the engine's time unit (a bare integer is ticks already)."""
        if d.unit is None:
            return d.value
        ns = d.value * UNIT_NS[d.unit]
        per_tick = TIME_UNIT_NS[self.time_unit]
        if ns % per_tick:
            raise self.err(f"{d.value} {UNIT_WORDS[d.unit]} is not a whole number of ticks of the "
                           f"engine's time unit '{self.time_unit}'", d.pos)
        return ns // per_tick
