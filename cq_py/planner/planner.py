"""Semantic analysis and planning: a parsed script → operators of the logical plan.

A script is planned against a copy of the catalog, so the first error stops it and nothing of it is
registered. Named queries may be used before they are registered (and may refer to each other in
loops): their output columns are inferred first, by a fixpoint over the script's queries, and the
full plans are built once every query's columns are known. Loops are then checked (paper 000
§3.1): every cycle of the operator graph must pass through a delay; with ``auto_delay`` an ε delay
is inserted after one of the loop's stream operators instead.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from cq_py.errors import CQLSemanticError
from cq_py.parser import ast
from cq_py.parser.tokenizer import source_line
from cq_py.planner import loops, shared_joins
from cq_py.planner import types as T
from cq_py.planner.expressions import (
    ExpressionBinder,
    Scope,
    TypedExpr,
    balanced,
    conjuncts,
    expr_key,
    literal,
)
from cq_py.planner.fusion import (
    AGGREGATES,
    fuse_istreams,
    fuse_relation_to_stream,
    fuse_rows_window,
)
from cq_py.planner.identity import separate_identities
from cq_py.planner.logical import (
    KNOWN,
    PENDING,
    STREAM,
    UNBOUNDED,
    Catalog,
    Node,
    QueryDef,
    StreamDef,
    constant,
)
from cq_py.planner.master_sharing import ARRIVAL, MasterShares, SharedPart, not_shareable, wider
from cq_py.planner.operators import descriptor, find
from cq_py.planner.redo_areas import mark_redo_areas
from cq_py.planner.sharing import share_subplans

# Nanoseconds per CQL duration unit and per engine time unit.
UNIT_NS = {"ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}
TIME_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
UNIT_WORDS = {"ms": "MILLISECONDS", "s": "SECONDS", "min": "MINUTES", "h": "HOURS", "d": "DAYS"}
# Filters one WHERE may become (see Planner._filters).
MAX_FILTERS = 16


class Deferred(Exception):
    """A query reads a named query whose columns are not known yet (schema inference)."""

    def __init__(self, name: str):
        self.name = name


class Planner:
    """Plans a parsed script against a copy of ``catalog``.

    >>> from cq_py.parser import parse
    >>> p = Planner(Catalog(), time_unit="ms")
    >>> script = parse("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s [Now];")
    >>> cat, nodes = p.plan(script)
    >>> [n.op for n in nodes]
    ['stream_scan', 'window', 'project', 'sink']
    """

    def __init__(
        self,
        catalog: Catalog,
        time_unit: str = "ms",
        source: str = "",
        expose_steps: bool = False,
        auto_delay: bool = False,
        expiration: str = "lazy",
        late: bool = False,
        fuse: bool = True,
        share_joins: bool = True,
        lifetime: str = "direct",
        swj_bounded: dict[str, Any] | None = None,
        master_shares: MasterShares | None = None,
        executor: str = "dts",
        txn: str = "none",
    ):
        self.catalog = catalog
        self.executor = executor  # (resources are read by the scheduled executor only)
        # Under a strategy ISTREAM and DSTREAM over a window of resource reads are computed at the
        # commit from whole results (redo_areas.py): not fused with the aggregate they read.
        self.diff_commit = executor == "scheduled" and txn != "none"
        # MASTER queries of a base group sharing windows and joins (planner/master_sharing.py).
        self.master_shares = master_shares
        self.fuse = fuse
        # Joins that differ only in their windows planned as one (planner/shared_joins.py), which
        # the direct method alone runs.
        self.share_joins = share_joins
        # Bounded mode's operator parameters (cq_py/swj_options.py), None in exact mode.
        self.swj_bounded = swj_bounded
        self.lifetime = lifetime
        # The engine is running (SEMANTICS.md §4.5): the script's queries see a relation as it
        # stands now, whole, and re-derive the relation-valued queries registered before them.
        self.late = late
        self.time_unit = time_unit
        self.source = source
        self.expose_steps = expose_steps
        self.auto_delay = auto_delay
        self.expiration = expiration
        self.lenient = self.inferring = False
        # Stand-ins for queries of the script not planned yet, by their (negative) node ids:
        # _resolve_references puts the queries' output nodes in their place.
        self.unplanned: dict[int, str] = {}

    # =========================================================================================
    # Errors
    # =========================================================================================

    def err(self, message: str, pos: ast.Pos) -> CQLSemanticError:
        if not pos.line:
            return CQLSemanticError(message)
        # The line as the tokenizer counts lines (at '\n' only, not at every line boundary of
        # str.splitlines()), so that the line shown is the line numbered.
        text = source_line(self.source, pos.line)
        return CQLSemanticError(message, pos.line, pos.column, text)

    # =========================================================================================
    # Script
    # =========================================================================================

    def plan(self, script: ast.Script) -> tuple[Catalog, list[Node]]:
        """The catalog after the script, and the operators it adds (in id order)."""
        if script.source:
            self.source = script.source
        cat = self.catalog.fork()
        first_new = cat.next_id
        self.cat = cat
        self.first_new = first_new

        queries: list[ast.RegisterQuery] = []
        seen: dict[str, ast.Pos] = {}
        for st in script.statements:
            key = st.name.lower()
            if key in seen:
                raise self.err(
                    f"'{st.name}' is registered twice in this script (first at line "
                    f"{seen[key].line})",
                    st.pos,
                )
            if key in cat.resources:
                kind = "model" if isinstance(cat.resources[key], ast.RegisterModel) else "resource"
                raise self.err(f"'{st.name}' is already registered as a {kind}", st.pos)
            existing = cat.lookup(st.name)
            if existing is not None:
                what = (
                    ("relation" if existing.relation else "stream")
                    if isinstance(existing, StreamDef)
                    else "query"
                )
                raise self.err(f"'{st.name}' is already registered as a {what}", st.pos)
            seen[key] = st.pos
            if isinstance(st, (ast.RegisterStream, ast.RegisterRelation)):
                self._register_source(st)
            elif isinstance(st, ast.RegisterClock):
                self._register_clock(st)
            elif isinstance(st, (ast.RegisterResource, ast.RegisterModel)):
                self._register_resource(st)
            elif isinstance(st, ast.RegisterTable):
                if not st.columns:
                    raise self.err(
                        f"table '{st.name}' has no columns: REGISTER TABLE is run by an Engine, "
                        "which reads them from the database's catalog",
                        st.pos,
                    )
                self._register_source(st)
            else:
                queries.append(st)

        self.script_queries = {q.name.lower(): q for q in queries}
        for q in queries:
            self._check_resources(q)
        self.references: list[str] = []
        self._infer_schemas(queries)
        for q in self._dependency_order(queries):
            self._plan_query(q)
        self._resolve_references(first_new)
        # Registration order, whatever order the queries were planned in.
        order = [q.name.lower() for q in queries]
        cat.queries = {k: v for k, v in cat.queries.items() if k not in order} | {
            k: cat.queries[k] for k in order
        }
        for node in loops.new_part(cat, first_new).values():
            if find(node.op) is None:
                # A plan the dialect accepts but this build of the core cannot run (paper 001's
                # clock and master trigger are parsed and checked ahead of their operators).
                raise self.err(
                    f"{node.label}: this build of the core has no '{node.op}' operator, so "
                    f"'{node.owner}' cannot run; found a plan the core cannot build",
                    node.pos,
                )
        loops.check(cat, first_new, self.auto_delay, self.err, self._new_id)
        propagate_lifetimes(cat, first_new)
        for node in loops.new_part(cat, first_new).values():
            if descriptor(node.op).tracks_lifetimes:
                # The core's fast paths need lifetimes of one duration known at plan time.
                source = cat.nodes[node.inputs[0]]
                node.params["lifetime"] = "constant" if is_constant(source.lifetime) else "general"
                node.params["expiration"] = self.expiration
        share_subplans(cat, first_new)
        separate_identities(cat, first_new, self._new_id)
        # Joins shared by several queries first: a join fused with its ISTREAM serves one query.
        shared_joins.share_joins(
            cat,
            first_new,
            self._new_id,
            enabled=self.share_joins,
            lifetime=self.lifetime,
            bounded=self.swj_bounded,
        )
        if self.fuse:
            # (Each fusion starts from a new aggregate: a script without one, such as a MASTER
            # query over joins, need not walk the whole graph for its loops.)
            if any(n.op in AGGREGATES for n in loops.new_part(cat, first_new).values()):
                fuse_rows_window(cat, first_new)
            fuse_relation_to_stream(cat, first_new, keep_reads=self.diff_commit)
            if any(n.op == "istream" for n in loops.new_part(cat, first_new).values()):
                # (A late query's [Now] window fills from p: its own rule, kept whole.)
                fuse_istreams(cat, first_new, over_now=not self.late)
        # Paper 002's redo areas on the final plan (the scheduled executor keeps §6's constraint
        # on their gatekeepers; explain() shows them).
        self.redo_areas = mark_redo_areas(cat, first_new, diff_commit=self.diff_commit)
        new = [cat.nodes[i] for i in sorted(cat.nodes) if i >= first_new]
        return cat, new

    def _new_id(self) -> int:
        self.cat.next_id += 1
        return self.cat.next_id - 1

    def _add(self, node: Node) -> Node:
        self.cat.nodes[node.id] = node
        return node

    def _register_clock(self, st: ast.RegisterClock) -> None:
        """A clock (paper 001 §3.1): a stream of no columns that ticks at o + k·d, k ≥ 0, each
        tick once the engine's progress passes it."""
        every = self.ticks(st.every)
        if every <= 0:
            raise self.err(
                f"the period of clock '{st.name}' must be positive; found {every} ticks",
                st.every.pos,
            )
        offset = self.ticks(st.offset) if st.offset is not None else 0
        if not 0 <= offset < every:
            assert st.offset is not None
            raise self.err(
                f"the offset of clock '{st.name}' must be at least 0 and below its period "
                f"({every} ticks); found {offset} ticks",
                st.offset.pos,
            )
        # The core reads a clock as a stream of no columns; the engine feeds it its ticks as the
        # progress of the other inputs passes them (cq_py/engine.py, _clocks_follow).
        scan = self._add(
            Node(
                self._new_id(),
                "stream_scan",
                [],
                {"stream": st.name, "schema": []},
                [],
                kind="stream",
                lifetime=STREAM,
                owner=st.name,
                pos=st.pos,
                label=f"Clock {st.name} every {every} ticks from {offset}",
            )
        )
        self.cat.streams[st.name.lower()] = StreamDef(
            st.name, [], scan.id, False, st.pos, origin="clock", every=every, offset=offset
        )

    def _register_resource(self, st: ast.RegisterResource | ast.RegisterModel) -> None:
        """A resource or model (paper 002) checked and put in the catalog."""
        defs = st.columns if isinstance(st, ast.RegisterResource) else st.args + st.returns
        seen: set[str] = set()
        for c in defs:
            if c.name.lower() in seen:
                raise self.err(f"column '{c.name}' twice in '{st.name}'", c.pos)
            seen.add(c.name.lower())
        if isinstance(st, ast.RegisterResource):
            for i, k in enumerate(st.key):
                if k.lower() in (j.lower() for j in st.key[:i]):
                    raise self.err(f"key column '{k}' twice in resource '{st.name}'", st.pos)
                if k.lower() not in seen:
                    names = ", ".join(c.name for c in st.columns)
                    raise self.err(
                        f"key column '{k}' of resource '{st.name}' is not one of its columns "
                        f"({names})",
                        st.pos,
                    )
            if st.access == "key" and not st.key:
                raise self.err(
                    f"ACCESS KEY needs a key: resource '{st.name}' has no KEY (col, ...); "
                    "write one, or ACCESS SCAN",
                    st.access_pos,
                )
            if st.url is not None and not st.url.startswith(_RESOURCE_SCHEMES):
                raise self.err(
                    f"resource '{st.name}': unknown url scheme in {st.url!r}; expected one of "
                    f"{', '.join(s + '...' for s in _RESOURCE_SCHEMES)} (or no FROM: the "
                    "in-process store)",
                    st.pos,
                )
        self.cat.resources[st.name.lower()] = st

    def _check_resources(self, q: ast.RegisterQuery) -> None:
        """A query reading resources or calling models (paper 002) must read a windowed stream,
        be stream-valued (its commit operator is its relation-to-stream operator, Def. 3.2) and
        stay out of loops; and only the scheduled executor runs reference operators."""
        reads = [s for s in _sources(q.query) if s.name.lower() in self.cat.resources]
        calls = [f for f in _calls(q.query) if f.name.lower() in self.cat.resources]
        if not reads and not calls:
            return
        for src in reads:
            if isinstance(self.cat.resources[src.name.lower()], ast.RegisterModel):
                raise self.err(
                    f"'{src.name}' is a model: call it as {src.name}(args), not in FROM", src.pos
                )
            if src.window is not None:
                raise self.err(
                    f"a window on resource '{src.name}': a resource is read as it stands when "
                    "each row is processed, never windowed",
                    src.window.pos,
                )
        first = reads[0].name if reads else calls[0].name
        what = f"{'resource' if reads else 'model'} '{self.cat.resources[first.lower()].name}'"
        pos = reads[0].pos if reads else calls[0].pos
        if not any(self._is_stream(s) for s in _sources(q.query)):
            raise self.err(
                f"query '{q.name}' reads {what} but no stream: a resource or model is read for "
                "each row of a stream",
                pos,
            )
        if not isinstance(q.query, (ast.StreamOp, ast.Master)):
            raise self.err(
                f"query '{q.name}' reads {what} and is relation-valued: its rows must be "
                "committed by a relation-to-stream operator (ISTREAM, DSTREAM or RSTREAM)",
                q.pos,
            )
        if q.name.lower() in self._reachable(q):
            raise self.err(f"{what} in a loop: query '{q.name}' reads itself", pos)
        if self.executor != "scheduled":
            raise self.err(
                f"query '{q.name}' reads {what}: reference operators (paper 002) run only under "
                f"executor='scheduled'; found executor='{self.executor}'",
                pos,
            )

    def _is_stream(self, src: ast.Source) -> bool:
        target = self.cat.lookup(src.name)
        if isinstance(target, StreamDef):
            return target.origin in ("stream", "clock") and not target.relation
        if isinstance(target, QueryDef):
            return target.kind == "stream"
        q = self.script_queries.get(src.name.lower())
        return q is not None and isinstance(q.query, (ast.StreamOp, ast.Master))

    def _reachable(self, q: ast.RegisterQuery) -> set[str]:
        """The script's queries q reads, directly or through others (lower-cased)."""
        out: set[str] = set()
        todo = [q]
        while todo:
            for src in _sources(todo.pop().query):
                key = src.name.lower()
                if key in self.script_queries and key not in out:
                    out.add(key)
                    todo.append(self.script_queries[key])
        return out

    def _register_source(
        self, st: ast.RegisterStream | ast.RegisterRelation | ast.RegisterTable
    ) -> None:
        if isinstance(st, ast.RegisterTable):
            remote = st.remote or st.name
            same = next(
                (
                    s
                    for s in self.cat.streams.values()
                    if s.origin == "table"
                    and (s.url, s.remote, s.where) == (st.url, remote, st.where)
                ),
                None,
            )
            if same is not None:
                # One cached copy per SQL text (paper 001 §3.2): another name for the same view.
                self.cat.streams[st.name.lower()] = replace(same, name=st.name, pos=st.pos)
                return
        relation = isinstance(st, (ast.RegisterRelation, ast.RegisterTable))
        what = "relation" if relation else "stream"
        seen: set[str] = set()
        cols = []
        for c in st.columns:
            if c.name.lower() in seen:
                raise self.err(f"column '{c.name}' is declared twice in {what} '{st.name}'", c.pos)
            if relation and c.name.lower() == "op":
                raise self.err(
                    f"relation '{st.name}' may not declare a column 'op': it marks inserts "
                    "and deletes in the input",
                    c.pos,
                )
            seen.add(c.name.lower())
            cols.append((c.name, T.FROM_CQL[c.type.name]))
        op = "relation_scan" if relation else "stream_scan"
        scan = self._add(
            Node(
                self._new_id(),
                op,
                [],
                {what: st.name, "schema": [list(c) for c in cols]},
                cols,
                kind="relation" if relation else "stream",
                lifetime=PENDING if relation else STREAM,
                owner=st.name,
                pos=st.pos,
                label=f"{'RelationScan' if relation else 'StreamScan'} {st.name}",
            )
        )
        sdef = StreamDef(st.name, cols, scan.id, relation, st.pos, origin=what)
        if isinstance(st, ast.RegisterTable):
            sdef.origin, sdef.url, sdef.remote = "table", st.url, st.remote or st.name
            sdef.where = st.where
        self.cat.streams[st.name.lower()] = sdef

    # =========================================================================================
    # Output columns of named queries, by fixpoint
    # =========================================================================================

    def _infer_schemas(self, queries: list[ast.RegisterQuery]) -> None:
        """Every script query's kind and columns, before any is planned. A query is typed once the
        queries it reads are; only when none can be (a loop) is one of them typed from the branches
        of its set operations that can be (the loop closes through the others) — provisionally,
        since its column names may then be the right operand's, not the left's. Then every query
        is typed again with every query known until nothing changes — names settle, and a type
        only widens (BIGINT to DOUBLE), so this ends."""
        self.schemas: dict[str, tuple[str, list[tuple[str, str]]]] = {}
        pending = list(queries)
        provisional = False  # some query's columns were typed from part of its branches
        errors: dict[str, CQLSemanticError] = {}
        while pending:
            progress = False
            for lenient in (False, True):
                for q in list(pending):
                    try:
                        self.schemas[q.name.lower()] = self._try_infer(q, lenient=lenient)
                    except Deferred:
                        continue
                    except CQLSemanticError as e:
                        # A query read by its columns' names fails while a loop's columns are
                        # provisional: it is typed again once they are not.
                        if not provisional:
                            raise
                        errors.setdefault(q.name.lower(), e)
                        continue
                    pending.remove(q)
                    progress = True
                    if lenient:
                        provisional = True
                        break  # the others may now be typed in full
                if progress:
                    break
            if not progress:
                if errors:
                    raise next(iter(errors.values()))
                names = ", ".join(q.name for q in pending)
                what = (
                    f"{names}: it only reads itself"
                    if len(pending) == 1
                    else f"{names}: they only read each other"
                )
                raise self.err(
                    f"cannot determine the columns of {what}; give it a source whose "
                    "columns are known (e.g. the first branch of a UNION ALL)",
                    pending[0].pos,
                )
        for _ in range(4 * len(queries) + 4):
            changed = False
            failed: CQLSemanticError | None = None
            for q in queries:
                try:
                    again = self._try_infer(q, lenient=False)
                except CQLSemanticError as e:
                    failed = failed or e
                    continue
                if again != self.schemas[q.name.lower()]:
                    self.schemas[q.name.lower()] = again
                    changed = True
            if not changed:
                if failed is not None:
                    raise failed
                return
        raise AssertionError("column types of named queries did not settle")

    def _try_infer(self, q: ast.RegisterQuery, lenient: bool) -> tuple[str, list[tuple[str, str]]]:
        """Plans ``q`` for its output columns only, leaving the catalog as it was. Raises Deferred
        when it reads a query not typed yet (with ``lenient``, only when no branch of a set
        operation can be typed)."""
        saved_nodes, saved_id = dict(self.cat.nodes), self.cat.next_id
        self.lenient, self.inferring = lenient, True
        try:
            kind, cols, _ = self._query(q.query, q.name)
            return kind, cols
        finally:
            self.lenient = self.inferring = False
            self.cat.nodes, self.cat.next_id = saved_nodes, saved_id

    def _dependency_order(self, queries: list[ast.RegisterQuery]) -> list[ast.RegisterQuery]:
        """Queries after the queries they read (so that lifetimes are known), loops in script
        order."""
        reads = {
            q.name.lower(): {s.name.lower() for s in _sources(q.query)} & self.script_queries.keys()
            for q in queries
        }
        done: list[ast.RegisterQuery] = []
        seen: set[str] = set()
        rank = {k: i for i, k in enumerate(self.script_queries)}
        # Depth-first, with an explicit stack: a script may chain a thousand queries, each reading
        # the one registered after it. An entry is (query, its dependencies still to visit).
        for root in queries:
            if root.name.lower() in seen:
                continue
            seen.add(root.name.lower())
            stack = [(root, sorted(reads[root.name.lower()], key=rank.__getitem__, reverse=True))]
            while stack:
                q, deps = stack[-1]
                if deps:
                    dep = deps.pop()
                    if dep not in seen:
                        seen.add(dep)
                        stack.append(
                            (
                                self.script_queries[dep],
                                sorted(reads[dep], key=rank.__getitem__, reverse=True),
                            )
                        )
                else:
                    stack.pop()
                    done.append(q)
        return done

    # =========================================================================================
    # Queries
    # =========================================================================================

    def _plan_query(self, st: ast.RegisterQuery) -> None:
        self.lenient = False
        self.references = []
        kind, columns, out = self._query(st.query, st.name)
        assert (kind, columns) == self.schemas[st.name.lower()], (
            "inferred and planned columns differ"
        )
        reserved = (
            (["ts"] + (["ts_step"] if self.expose_steps else []))
            if kind == "stream"
            else (["start", "end"] + (["start_step", "end_step"] if self.expose_steps else []))
        )
        for name, _ in columns:
            if name.lower() in reserved:
                raise self.err(
                    f"output column '{name}' of query '{st.name}' clashes with the time "
                    f"column '{name.lower()}' that a {kind}-valued query adds; rename it "
                    "with AS",
                    st.query.pos,
                )
        seen: set[str] = set()
        for name, _ in columns:
            if name.lower() in seen:
                raise self.err(
                    f"query '{st.name}' has two output columns named '{name}'; give one of "
                    "them another name with AS",
                    st.query.pos,
                )
            seen.add(name.lower())
        sink = self._add(
            Node(
                self._new_id(),
                "sink",
                [out.id],
                {"query": st.name, "expose_steps": self.expose_steps},
                columns,
                kind=kind,
                lifetime=out.lifetime,
                owner=st.name,
                pos=st.pos,
                label=f"Output {st.name}",
            )
        )
        self.cat.queries[st.name.lower()] = QueryDef(
            st.name,
            kind,
            columns,
            out.id,
            sink.id,
            st.pos,
            out.lifetime,
            list(dict.fromkeys(self.references)),
            st.query,
        )

    def _query(self, q: ast.Query, owner: str) -> tuple[str, list[tuple[str, str]], Node]:
        """(kind, columns, output node) of a query expression."""
        if isinstance(q, ast.Select):
            return self._select(q, owner)
        if isinstance(q, ast.StreamOp):
            return self._stream_op(q, owner)
        if isinstance(q, ast.Master):
            return self._master(q, owner)
        return self._set_op(q, owner)

    def _master(self, q: ast.Master, owner: str) -> tuple[str, list[tuple[str, str]], Node]:
        """``MASTER m1, ..., mk SELECT ...`` (paper 001 §2.1): the SELECT's relation R and the
        masters into a master trigger, which at each instant τ of the masters emits the tuples of
        R(τ) that started since the previous instant (issue 31's semantics)."""
        masters: list[Node] = []
        seen: set[str] = set()
        for m in q.masters:
            if m.name.lower() in seen:
                raise self.err(f"MASTER names '{m.name}' twice", m.pos)
            seen.add(m.name.lower())
            masters.append(self._master_source(m, owner))
        if self.lifetime == "negative":
            # Under negative tuples a delete names a value, not the copy that arrived with it:
            # of equal values that started at different times, which one ends is not known, and
            # MASTER emits by start. Windows end their copies in arrival order; relations need not.
            for src in _sources(q.select):
                sdef = self.cat.streams.get(src.name.lower())
                if sdef is not None and sdef.relation:
                    # (A table whose filters went to its database reads a view named
                    # table$whereN, under the name the query gave it.)
                    shown = src.alias if "$where" in src.name and src.alias else src.name
                    raise self.err(
                        f"MASTER over the relation '{shown}' needs lifetime='direct': under "
                        "lifetime='negative' a delete does not say which of equal rows ends, "
                        "and MASTER emits rows by when they started",
                        src.pos,
                    )
        shared = self._master_shared(q, owner, masters)
        if shared is not None:
            return shared
        _, cols, rel = self._select(q.select, owner)
        node = self._add(
            Node(
                self._new_id(),
                "master_trigger",
                [rel.id, *(n.id for n in masters)],
                {},
                list(cols),
                kind="stream",
                lifetime=STREAM,
                owner=owner,
                pos=q.pos,
                label=f"Master {', '.join(m.name for m in q.masters)}",
            )
        )
        return "stream", list(cols), node

    def _master_shared(
        self, q: ast.Master, owner: str, masters: list[Node]
    ) -> tuple[str, list[tuple[str, str]], Node] | None:
        """The query over its base group's shared part (planner/master_sharing.py), or None when
        it runs alone (sharing off, no group, or a shape that cannot share)."""
        if self.inferring:  # (columns only: the same either way)
            return None
        shares = self.master_shares
        sel = q.select
        kinds = {
            k: ("relation" if s.relation else "stream") if s.origin != "clock" else "clock"
            for k, s in self.cat.streams.items()
        }
        if not_shareable(sel, kinds) is not None:
            return None
        if shares is None or not shares.enabled or owner.lower() not in shares.groups:
            if self.lifetime != "negative":
                return None
            # Under negative tuples an end names values, not the copy that started: a join's
            # equal rows that started at different times (a row joined before and after a partner
            # expired at the same instant) would end in the wrong order, and MASTER emits by start.
            # The arrivals kept as columns tell every copy apart: the query runs over a part of
            # its own, stamped as a shared one is.
            shares = MasterShares(enabled=False)
            group: tuple[str, dict[str, int | None]] = (owner.lower(), {})
        else:
            group = shares.groups[owner.lower()]
        anchor, group_widths = group
        streams = [src for src in sel.sources if kinds[src.name.lower()] == "stream"]
        own = {src.name.lower(): self._width_ticks(src.window) for src in streams}
        # The scope of the sources as the part presents them (a stream's arrival column last).
        columns: list[tuple[str, str]] = []
        sources: list[tuple[set[str], str, int, int]] = []
        arrivals: dict[str, int] = {}
        for src in sel.sources:
            sdef = self.cat.streams[src.name.lower()]
            cols = list(self.cat.nodes[sdef.scan_id].schema)
            if any(n.lower() == ARRIVAL for n, _ in cols):
                return None
            answers = {src.alias.lower()} if src.alias else {src.name.lower()}
            label = f"'{src.name}'" + (f" (as {src.alias})" if src.alias else "")
            if not sdef.relation:
                arrivals[src.name.lower()] = len(columns) + len(cols)
                cols.append((ARRIVAL, T.INT64))
            sources.append((answers, label, len(columns), len(columns) + len(cols)))
            columns += cols
        scope = Scope(columns, sources)
        binder = ExpressionBinder(scope, self.err)
        bound = [(c, binder.bind_predicate(c)) for c in conjuncts(sel.where)]

        def spans(e: TypedExpr) -> int:
            return len(
                {k for c in e.columns() for k, (_, _, a, b) in enumerate(sources) if a <= c < b}
            )

        joins = [(c, e) for c, e in bound if spans(e) >= 2]
        own_preds = [(c, e) for c, e in bound if spans(e) < 2]
        key = (
            anchor,
            tuple(
                (s.name.lower(), (s.alias or "").lower(), kinds[s.name.lower()])
                for s in sel.sources
            ),
            tuple(sorted({e.to_plan().__repr__() for _, e in joins})),
            tuple(sorted(m.name.lower() for m in q.masters)),
        )
        part, froms = shares.choose(key, own)
        if part is None:
            widths = {s: wider(group_widths.get(s, w), w) for s, w in own.items()}
            part = self._shared_part(
                sel, key, widths, columns, sources, arrivals, joins, owner, shares
            )
            froms = {}
        part.members.append(owner)
        if part.trigger_ref is None and part.trigger < 0:
            # One master trigger per part: its members share their masters (a base group's), so
            # every run emits, once for all of them, the part's tuples that started since the
            # previous run; each member keeps those in its own windows (below).
            rel = part.node_ref if part.node_ref is not None else self.cat.nodes[part.node]
            part.trigger_ref = self._add(
                Node(
                    self._new_id(),
                    "master_trigger",
                    [rel.id, *(n.id for n in masters)],
                    {},
                    list(rel.schema),
                    kind="stream",
                    lifetime=STREAM,
                    owner=owner,
                    pos=q.pos,
                    label=f"Master {', '.join(m.name for m in q.masters)} over the shared "
                    f"#{rel.id}",
                )
            )
        trigger = part.trigger_ref if part.trigger_ref is not None else self.cat.nodes[part.trigger]
        # A tuple the shared trigger emits at τ is this member's when each of its arrivals lies
        # in the member's own window at τ (a > τ − width; [Now] has width 1) and came at or after
        # its registration: plain filters on the trigger's stream, τ being the row's start().
        checks: list[TypedExpr] = []
        for s, w in own.items():
            shared_w, since = part.widths[s], froms.get(s)
            if not ((shared_w != w or since is not None) and (w is not None or since is not None)):
                continue
            arrival = TypedExpr("column", T.INT64, index=part.arrivals[s], text=f"{s}.{ARRIVAL}")
            if w is not None:
                start = TypedExpr("start", T.INT64, text="start()")
                floor = binder.binary("-", start, literal(max(w, 1), T.INT64), q.pos)
                checks.append(binder.binary(">", arrival, floor, q.pos))
            if since is not None:
                checks.append(binder.binary(">=", arrival, literal(since, T.INT64), q.pos))
        # The member's own conjuncts first (the most selective in the paper's workload), then its
        # windows' and registration's checks.
        current = self._filters(trigger, own_preds, owner)
        if checks:
            current = self._filter(
                current, balanced("and", "AND", checks, T.BOOL, q.pos), owner, q.pos
            )
        items = [(binder.bind(i.expr), i) for i in sel.items]
        names = [i.alias or self._default_name(e) for e, i in items]
        seen: set[str] = set()
        for n, (_, i) in zip(names, items, strict=True):
            if n.lower() in seen:
                raise self.err(
                    f"the select list names '{n}' twice; give one of them another name with AS",
                    i.pos,
                )
            seen.add(n.lower())
        current = self._project(current, [e for e, _ in items], names, owner, sel.pos)
        return "stream", list(current.schema), current

    def _width_ticks(self, w: ast.Window | None) -> int | None:
        """A shareable window's width in ticks: 0 for [Now], None unbounded."""
        if w is None or w.kind == "unbounded":
            return None
        if w.kind == "now":
            return 0
        assert w.range is not None
        return self.ticks(w.range)

    def _shared_part(
        self,
        sel: ast.Select,
        key: tuple[Any, ...],
        widths: dict[str, int | None],
        columns: list[tuple[str, str]],
        sources: list[tuple[set[str], str, int, int]],
        arrivals: dict[str, int],
        joins: list[tuple[ast.Expr, TypedExpr]],
        owner: str,
        shares: MasterShares,
    ) -> SharedPart:
        """A base group's shared part: each stream stamped with its arrival and windowed at the
        group's widest window, the tables as for one query, joined on the join conditions."""
        inputs: list[tuple[Node, str, ast.Source]] = []
        for src, (_, label, start, stop) in zip(sel.sources, sources, strict=True):
            sdef = self.cat.streams[src.name.lower()]
            if sdef.relation:
                node, _ = self._source(src, owner)
                inputs.append((node, label, src))
                continue
            self.references.append(sdef.name)
            scan = self.cat.nodes[sdef.scan_id]
            exprs = [
                TypedExpr("column", t, index=i, text=n) for i, (n, t) in enumerate(scan.schema)
            ] + [TypedExpr("start", T.INT64, text="start()")]
            stamped = self._project(
                scan, exprs, [n for n, _ in columns[start:stop]], owner, src.pos
            )
            w = widths[src.name.lower()]
            window = (
                ast.Window("unbounded")
                if w is None
                else ast.Window("now")
                if w == 0
                else ast.Window("range", range=ast.Duration(w))
            )
            inputs.append((self._window(stamped, window, owner, src.pos, src), label, src))
        rel = self._joins(inputs, sources, joins, owner, sel)
        rel.note = f"shared by the MASTER queries of {owner}'s base group (paper 001 §4.4)"
        part = SharedPart(
            key,
            rel.id,
            columns,
            sources,
            arrivals,
            widths,
            {s: shares.pushed.get(s, 0) for s in widths},
            node_ref=rel,
        )
        shares.parts.append(part)
        return part

    def _master_source(self, m: ast.MasterName, owner: str) -> Node:
        """A MASTER entry: a stream, a clock or a stream-valued query (never a relation)."""
        target = self.cat.lookup(m.name)
        key = m.name.lower()
        if isinstance(target, StreamDef):
            if target.relation:
                what = "table" if target.origin == "table" else "relation"
                raise self.err(
                    f"MASTER source '{m.name}' is a {what}; a master must be a stream, a "
                    "clock or a stream-valued query (its arrivals run the query)",
                    m.pos,
                )
            self.references.append(target.name)
            return self.cat.nodes[target.scan_id]
        if isinstance(target, QueryDef) or key in self.schemas:
            kind = target.kind if isinstance(target, QueryDef) else self.schemas[key][0]
            if kind != "stream":
                raise self.err(
                    f"MASTER source '{m.name}' is a relation-valued query; a master must be a "
                    "stream, a clock or a stream-valued query",
                    m.pos,
                )
            if isinstance(target, QueryDef):
                out: int | str = target.out_id
                cols = target.columns
            else:
                out, cols = m.name, self.schemas[key][1]
            self.references.append(target.name if target is not None else m.name)
            placeholder = Node(-1, "query_ref", [], {}, cols, kind="stream", owner=m.name)
            return self._reference(placeholder, out)
        if key in self.script_queries:
            assert self.inferring, "every query's columns are inferred before planning"
            raise Deferred(m.name)
        streams = [s.name for s in self.cat.streams.values() if s.origin == "stream"]
        clocks = [s.name for s in self.cat.streams.values() if s.origin == "clock"]
        queries = [
            d.name
            for d in self.cat.queries.values()
            if d.kind == "stream" and d.name.lower() != owner.lower()
        ]
        raise self.err(
            f"unknown MASTER source '{m.name}'; a master is a stream, a clock or a "
            f"stream-valued query. Streams: {', '.join(streams) or '(none)'}; clocks: "
            f"{', '.join(clocks) or '(none)'}; stream-valued queries: "
            f"{', '.join(queries) or '(none)'}",
            m.pos,
        )

    def _stream_op(self, q: ast.StreamOp, owner: str) -> tuple[str, list[tuple[str, str]], Node]:
        kind, cols, inner = self._query(q.query, owner)
        if kind != "relation":
            raise self.err(
                f"{q.kind} turns a relation into a stream; its argument is already a stream", q.pos
            )
        node = self._add(
            Node(
                self._new_id(),
                q.kind.lower(),
                [inner.id],
                {},
                cols,
                kind="stream",
                lifetime=STREAM,
                owner=owner,
                pos=q.pos,
                label=q.kind.upper(),
            )
        )
        if q.delay is not None:
            node = self._delay_node(node, q.delay, owner)
        return "stream", cols, node

    def _delay_node(self, after: Node, d: ast.Delay, owner: str, inserted: bool = False) -> Node:
        if d.kind == "now":
            dur, text = {"ticks": 0, "steps": 1}, "<Now> (ε)"
        else:
            assert d.duration is not None
            ticks = self.ticks(d.duration)
            if ticks <= 0:
                raise self.err(
                    "a delay must move time forward; use <Now> for the smallest delay", d.pos
                )
            dur, text = {"ticks": ticks, "steps": 0}, f"<{ticks}> ({ticks} ticks)"
        return self._add(
            Node(
                self._new_id(),
                "delay",
                [after.id],
                {"duration": dur},
                after.schema,
                kind="stream",
                lifetime=STREAM,
                owner=owner,
                pos=d.pos,
                label=f"Delay {text}",
                inserted=inserted,
            )
        )

    def _set_op(self, q: ast.SetOp, owner: str) -> tuple[str, list[tuple[str, str]], Node]:
        """A chain ``a UNION ALL b UNION ALL c ...`` (left-deep, as parsed) operation by operation
        from its innermost, without recursing down its left spine: a thousand branches nest a
        thousand deep. A branch whose columns are not known yet (inference) leaves the operation
        its other side's; both unknown defers the operation, and the next one takes it as its
        unknown left side."""
        spine: list[ast.SetOp] = []
        x: ast.Query = q
        while isinstance(x, ast.SetOp):
            spine.append(x)
            x = x.left
        left = deferred = None
        try:
            left = self._query(x, owner)
        except Deferred as d:
            if not self.lenient:
                raise
            deferred = d
        for op in reversed(spine):
            try:
                left = self._set_op_step(op, left, owner)
            except Deferred as d:
                if not self.lenient:
                    raise
                left, deferred = None, d
        if left is None:
            assert deferred is not None
            raise deferred
        return left

    def _set_op_step(
        self, q: ast.SetOp, left: tuple[str, list[tuple[str, str]], Node] | None, owner: str
    ) -> tuple[str, list[tuple[str, str]], Node]:
        """``left`` (planned; None when deferred in inference) ``q.op`` ``q.right``."""
        right = None
        try:
            right = self._query(q.right, owner)
        except Deferred:
            if not self.lenient or left is None:
                raise
        if left is None or right is None:
            # Inference only: one branch gives the columns (the loop closes through the other);
            # the names are the left operand's when it names its columns itself.
            known = left or right
            assert known is not None
            names = _names_of(q.left) if left is None else None
            if names is None or len(names) != len(known[1]):
                return known
            return known[0], [(n, t) for n, (_, t) in zip(names, known[1], strict=True)], known[2]
        (lk, lc, ln), (rk, rc, rn) = left, right
        if len(lc) != len(rc):
            raise self.err(
                f"{q.op} needs the same number of columns on both sides; found {len(lc)} "
                f"and {len(rc)}",
                q.pos,
            )
        if lk != rk:
            raise self.err(
                f"{q.op} of a {lk} and a {rk}: both sides must be relations (or, for UNION "
                "ALL, both streams)",
                q.pos,
            )
        if lk == "stream" and q.op != "UNION ALL":
            raise self.err(
                f"{q.op} is defined on relations; both sides here are streams (window "
                "them, or use UNION ALL)",
                q.pos,
            )
        cols = []
        for (ln_, lt), (_, rt) in zip(lc, rc, strict=True):
            t = ExpressionBinder.unify([lt, rt])
            if t is None:
                raise self.err(
                    f"{q.op}: column '{ln_}' is {T.CQL_NAME[lt]} on the left and "
                    f"{T.CQL_NAME[rt]} on the right",
                    q.pos,
                )
            cols.append((ln_, t))
        ln = self._conform(ln, cols, owner, q.pos)
        rn = self._conform(rn, cols, owner, q.pos)
        if q.op in ("EXCEPT", "INTERSECT"):
            return lk, cols, self._except_intersect(q, ln, rn, cols, owner)
        life = STREAM if lk == "stream" else union_all_lifetime({ln.lifetime, rn.lifetime})
        node = self._add(
            Node(
                self._new_id(),
                "union_all",
                [ln.id, rn.id],
                {},
                cols,
                kind=lk,
                lifetime=life,
                owner=owner,
                pos=q.pos,
                label="UNION ALL",
            )
        )
        if q.op == "UNION":  # UNION removes duplicates: the bag union, made distinct
            node = self._distinct(node, owner, q.pos, "UNION: distinct rows")
        return lk, cols, node

    def _distinct(self, input_: Node, owner: str, pos: ast.Pos, label: str) -> Node:
        """SELECT DISTINCT as an aggregate grouping by every column and computing nothing: one
        result per distinct row while it has copies (its lifetime pends until the last goes)."""
        keys = [TypedExpr("column", t, index=i, text=n) for i, (n, t) in enumerate(input_.schema)]
        return self._add(
            Node(
                self._new_id(),
                "aggregate",
                [input_.id],
                {
                    "keys": [k.to_plan() for k in keys],
                    "aggregates": [],
                    "names": [n for n, _ in input_.schema],
                    "expiration": self.expiration,
                },
                list(input_.schema),
                kind="relation",
                lifetime=PENDING,
                owner=owner,
                pos=pos,
                label=label,
                checks=keys,
            )
        )

    def _except_intersect(
        self, q: ast.SetOp, ln: Node, rn: Node, cols: list[tuple[str, str]], owner: str
    ) -> Node:
        """EXCEPT / INTERSECT (SQL: on distinct rows) from operators that exist: each side tags
        its rows (1 for the left, 0 for the right, and the reverse), the tagged rows are united,
        grouped by value with MAX of each tag (a row's presence on that side), and the groups with
        the right presence kept: left and not right (EXCEPT), left and right (INTERSECT)."""
        width = len(cols)
        tagged = []
        for side, node in ((0, ln), (1, rn)):
            exprs = [TypedExpr("column", t, index=i, text=n) for i, (n, t) in enumerate(cols)]
            exprs += [
                literal(int(side == 0), T.INT64, "left"),
                literal(int(side == 1), T.INT64, "right"),
            ]
            tagged.append(
                self._project(
                    node, exprs, [n for n, _ in cols] + ["__left", "__right"], owner, q.pos
                )
            )
        union = self._add(
            Node(
                self._new_id(),
                "union_all",
                [tagged[0].id, tagged[1].id],
                {},
                list(tagged[0].schema),
                kind="relation",
                lifetime=union_all_lifetime({ln.lifetime, rn.lifetime}),
                owner=owner,
                pos=q.pos,
                label=f"UNION ALL (tagged sides of {q.op})",
            )
        )
        keys = [TypedExpr("column", t, index=i, text=n) for i, (n, t) in enumerate(cols)]
        presence = [
            TypedExpr(
                "agg",
                T.INT64,
                fn="max",
                args=(TypedExpr("column", T.INT64, index=width + k, text=tag),),
                text=f"MAX({tag})",
            )
            for k, tag in enumerate(("__left", "__right"))
        ]
        agg = self._add(
            Node(
                self._new_id(),
                "aggregate",
                [union.id],
                {
                    "keys": [k.to_plan() for k in keys],
                    "aggregates": [
                        {
                            "fn": "max",
                            "distinct": False,
                            "type": T.INT64,
                            "arg": p.args[0].to_plan(),
                        }
                        for p in presence
                    ],
                    "names": [n for n, _ in cols] + ["__left", "__right"],
                    "expiration": self.expiration,
                },
                [*list(cols), ("__left", T.INT64), ("__right", T.INT64)],
                kind="relation",
                lifetime=PENDING,
                owner=owner,
                pos=q.pos,
                label=f"{q.op}: presence of each row on each side",
                checks=keys,
            )
        )
        want_right = 0 if q.op == "EXCEPT" else 1
        left_in = ExpressionBinder.call(
            "equal",
            (TypedExpr("column", T.INT64, index=width, text="__left"), literal(1, T.INT64, "1")),
            T.BOOL,
            "__left = 1",
            q.pos,
        )
        right_in = ExpressionBinder.call(
            "equal",
            (
                TypedExpr("column", T.INT64, index=width + 1, text="__right"),
                literal(want_right, T.INT64, str(want_right)),
            ),
            T.BOOL,
            f"__right = {want_right}",
            q.pos,
        )
        both = ExpressionBinder.call(
            "and", (left_in, right_in), T.BOOL, f"__left = 1 AND __right = {want_right}", q.pos
        )
        kept = self._filter(agg, both, owner, q.pos)
        return self._project(kept, keys, [n for n, _ in cols], owner, q.pos)

    def _conform(self, node: Node, cols: list[tuple[str, str]], owner: str, pos: ast.Pos) -> Node:
        """``node`` with its columns cast to ``cols`` (a set operation's common types)."""
        if [t for _, t in node.schema] == [t for _, t in cols]:
            return node
        exprs = []
        for i, ((n, t), (_, ct)) in enumerate(zip(node.schema, cols, strict=True)):
            e = ExpressionBinder.cast(TypedExpr("column", t, index=i, text=n), ct)
            if e.type != t:  # say so in explain: the branch's column changes type here
                e = replace(e, text=f"CAST({n} AS {T.CQL_NAME[ct]})")
            exprs.append(e)
        return self._project(node, exprs, [n for n, _ in node.schema], owner, pos)

    # =========================================================================================
    # SELECT
    # =========================================================================================

    def _source(self, src: ast.Source, owner: str) -> tuple[Node, str]:
        """The relation a FROM entry reads, and its label for messages."""
        target = self.cat.lookup(src.name)
        key = src.name.lower()
        if target is None and key not in self.schemas and key not in self.cat.resources:
            if key in self.script_queries:
                assert self.inferring, "every query's columns are inferred before planning"
                raise Deferred(src.name)
            known = ", ".join(
                n
                for n in self.cat.names()
                + [
                    q.name
                    for q in self.script_queries.values()
                    if q.name.lower() not in self.cat.queries
                ]
                if n.lower() != owner.lower()
            )
            raise self.err(
                f"unknown stream, relation or query '{src.name}'; registered: {known or '(none)'}",
                src.pos,
            )
        label = f"'{src.name}'" + (f" (as {src.alias})" if src.alias else "")
        res = self.cat.resources.get(key)
        if isinstance(res, ast.RegisterResource):
            # Not an operator: the reference join reads it (_joins) for each row of a stream.
            cols = [(c.name, T.FROM_CQL[c.type.name]) for c in res.columns]
            return Node(-1, "resource", [], {"resource": res.name}, cols, owner=owner), label
        self.references.append(target.name if target is not None else src.name)
        if isinstance(target, StreamDef):
            scan = self.cat.nodes[target.scan_id]
            if target.origin == "clock":
                raise self.err(
                    f"'{src.name}' is a clock: it has no columns to read; name it in MASTER "
                    "to run a query at its ticks",
                    src.pos,
                )
            if target.relation:
                if src.window is not None:
                    raise self.err(
                        f"a window applies to a stream; '{src.name}' is a relation", src.window.pos
                    )
                if self.late and scan.id < self.first_new:
                    return self._relation_since(scan, target.name, owner), label
                return scan, label
            return self._window(scan, src.window, owner, src.pos, src), label
        if (
            isinstance(target, QueryDef)
            and target.kind == "relation"
            and self.late
            and target.sink_id < self.first_new
            and target.query is not None
        ):
            if src.window is not None:
                raise self.err(
                    f"a window applies to a stream; the query '{src.name}' is "
                    "relation-valued (use it without a window)",
                    src.window.pos,
                )
            return self._rederive(target, owner), label
        # A named query, possibly registered in this script and not planned yet.
        if isinstance(target, QueryDef):
            kind, cols, ref = target.kind, target.columns, target.out_id
            out: int | str = ref
            life = target.lifetime
        else:
            kind, cols = self.schemas[key]
            out, life = src.name, (STREAM if kind == "stream" else KNOWN)
        placeholder = Node(-1, "query_ref", [], {}, cols, kind=kind, lifetime=life, owner=src.name)
        if kind == "relation":
            if src.window is not None:
                raise self.err(
                    f"a window applies to a stream; the query '{src.name}' is "
                    "relation-valued (use it without a window)",
                    src.window.pos,
                )
            return self._reference(placeholder, out), label
        return self._window(
            self._reference(placeholder, out), src.window, owner, src.pos, src
        ), label

    def _relation_since(self, scan: Node, name: str, owner: str) -> Node:
        """A relation registered before the engine ran, for a query registered now: the tuples
        alive now, each from now on, then its changes (SEMANTICS.md §4.5; the core's
        RelationSince)."""
        return self._add(
            Node(
                self._new_id(),
                "relation_since",
                [scan.id],
                {},
                list(scan.schema),
                kind="relation",
                lifetime=PENDING,
                owner=owner,
                pos=scan.pos,
                label=f"Relation {name} as of this registration",
            )
        )

    def _rederive(self, target: QueryDef, owner: str) -> Node:
        """An earlier relation-valued query read by a query registered while the engine runs: its
        definition planned again, as if written in place (SEMANTICS.md §4.5) — fresh windows over
        the rows from now on, relations as they stand now, earlier stream-valued queries shared —
        and not the operators that hold its state from before. explain() marks the operators."""
        assert target.query is not None  # a planned query keeps its definition
        first, references = self.cat.next_id, self.references
        self.references = []
        try:
            _, _, out = self._query(target.query, owner)
        finally:
            self.references = references
        for i in range(first, self.cat.next_id):  # (a query it re-derives in turn has its mark)
            if i in self.cat.nodes and "(re-deriving " not in self.cat.nodes[i].label:
                self.cat.nodes[i].label += f" (re-deriving {target.name} as of this registration)"
        return out

    def _reference(self, placeholder: Node, out: int | str) -> Node:
        """Another query's output node: ``out`` is its id, or its name until it is planned (then
        a stand-in with an id below 0 that no operator has)."""
        if isinstance(out, int):
            return self.cat.nodes[out]
        ref = copy.copy(placeholder)
        ref.id = -2 - len(self.unplanned)  # the placeholder itself is -1
        self.unplanned[ref.id] = out
        return ref

    def _window(
        self,
        input_: Node,
        w: ast.Window | None,
        owner: str,
        pos: ast.Pos,
        src: ast.Source | None = None,
    ) -> Node:
        params: dict[str, Any]
        if w is None or w.kind == "unbounded":
            params, op, life, label = (
                {"kind": "unbounded"},
                "window",
                UNBOUNDED,
                "[Range Unbounded]",
            )
        elif w.kind == "now":
            params, op, life, label = {"kind": "now"}, "window", constant("ε"), "[Now]"
        elif w.kind == "range":
            assert w.range is not None
            ticks = self.ticks(w.range)
            params, op = {"kind": "range", "range": {"ticks": ticks}}, "window"
            life, label = constant(f"{ticks} ticks"), f"[Range {ticks}]"
        elif w.kind == "range_slide":
            assert w.range is not None
            assert w.slide is not None
            rng, slide = self.ticks(w.range), self.ticks(w.slide)
            if slide <= 0:
                raise self.err("the slide of a window must be positive", w.slide.pos)
            params, op = {"range": {"ticks": rng}, "slide": {"ticks": slide}}, "slide_window"
            label = f"[Range {rng} Slide {slide}]"
            # A range of whole slides ends every tuple the range after its start (slide_window.h).
            constant_range = rng > 0 and rng % slide == 0
            life = (
                constant(f"{rng} ticks") if constant_range else f"{KNOWN} (slices of {slide} ticks)"
            )
        elif w.kind == "rows":
            assert w.rows is not None
            if w.rows <= 0 or w.rows >= 2**63:
                raise self.err("a row window holds at least one row (and fewer than 2^63)", w.pos)
            params, op, life, label = {"rows": w.rows}, "row_window", PENDING, f"[Rows {w.rows}]"
        else:  # partition_rows
            assert w.rows is not None
            if w.rows <= 0 or w.rows >= 2**63:
                raise self.err("a row window holds at least one row (and fewer than 2^63)", w.pos)
            names = (
                {input_.owner.lower()}
                | ({src.name.lower()} if src else set())
                | ({src.alias.lower()} if src and src.alias else set())
            )
            scope = Scope(
                list(input_.schema),
                [(names, f"'{src.name if src else input_.owner}'", 0, len(input_.schema))],
            )
            keys = [scope.resolve(c, self.err) for c in w.partition_by]
            params, op = {"rows": w.rows, "keys": [k.index for k in keys]}, "partition_row_window"
            life = PENDING
            label = f"[Partition By {', '.join(k.text for k in keys)} Rows {w.rows}]"
        return self._add(
            Node(
                self._new_id(),
                op,
                [input_.id],
                params,
                list(input_.schema),
                kind="relation",
                lifetime=life,
                owner=owner,
                pos=w.pos if w else pos,
                label=f"Window {label}",
            )
        )

    def _select(self, q: ast.Select, owner: str) -> tuple[str, list[tuple[str, str]], Node]:
        inputs: list[tuple[Node, str, ast.Source]] = []
        names_seen: dict[str, ast.Pos] = {}
        for src in q.sources:
            node, label = self._source(src, owner)
            key = (src.alias or src.name).lower()
            if key in names_seen:
                raise self.err(
                    f"'{src.alias or src.name}' appears twice in FROM; give one of them an alias",
                    src.pos,
                )
            names_seen[key] = src.pos
            inputs.append((node, label, src))

        # The scope: all sources' columns, concatenated in FROM order.
        columns: list[tuple[str, str]] = []
        sources: list[tuple[set[str], str, int, int]] = []
        for node, label, src in inputs:
            answers = {src.alias.lower()} if src.alias else {src.name.lower()}
            sources.append((answers, label, len(columns), len(columns) + len(node.schema)))
            columns += node.schema
        width = len(columns)
        # Model calls (paper 002): each distinct call a column after the sources', which its
        # model_apply adds once the sources are joined.
        calls = self._model_calls(q)
        scope = Scope(columns, sources)
        for call, model in calls:
            scope.models[expr_key(call)] = len(columns)
            columns.append((model.returns[0].name, T.FROM_CQL[model.returns[0].type.name]))
        binder = ExpressionBinder(scope, self.err)

        # WHERE, conjunct by conjunct: those over one source run before the join; those calling
        # a model after it.
        preds = [(c, binder.bind_predicate(c)) for c in conjuncts(q.where)]
        late = [p for p in preds if any(i >= width for i in p[1].columns())]
        preds = [p for p in preds if all(i < width for i in p[1].columns())]
        current = self._joins(inputs, sources, preds, owner, q)
        if calls:
            current = self._model_applies(current, calls, scope, owner)
            current = self._filters(current, late, owner)

        # Aggregates and GROUP BY.
        agg_binder = ExpressionBinder(scope, self.err, allow_aggregates="SELECT")
        items: list[tuple[TypedExpr, str, ast.Pos]] = []
        explicit = {(i.alias or "").lower() for i in q.items if i.alias}
        for item in q.items:
            if isinstance(item.expr, ast.Star):
                if item.expr.qualifier is not None:
                    start, stop = scope.source_of(item.expr.qualifier, item.pos, self.err)
                else:
                    start, stop = 0, width
                taken = {n.lower() for _, n, _ in items} | explicit
                for i in range(start, stop):
                    n, t = columns[i]
                    name = n
                    if name.lower() in taken:
                        # `*` over a join: a name two sources share is qualified by its source
                        # (STRb1_ca), as DuckDB and Spark users would otherwise get ambiguity.
                        k = next(k for k, (_, _, s, e) in enumerate(sources) if s <= i < e)
                        src = inputs[k][2]
                        name = f"{src.alias or src.name}_{n}"
                        while name.lower() in taken:
                            name += "_"
                    taken.add(name.lower())
                    items.append(
                        (TypedExpr("column", t, index=i, text=n, pos=item.pos), name, item.pos)
                    )
                continue
            e = agg_binder.bind(item.expr)
            items.append((e, item.alias or self._default_name(e), item.pos))
        having, having_pos = None, ast.NOPOS
        if q.having is not None:
            having = ExpressionBinder(scope, self.err, allow_aggregates="HAVING").bind_predicate(
                q.having, "HAVING"
            )
            having_pos = q.having.pos
        group_binder = ExpressionBinder(scope, self.err)
        keys = [group_binder.bind(g) for g in q.group_by]
        has_aggs = any(sub.kind == "agg" for e, _, _ in items for sub in e.walk()) or (
            having is not None and any(sub.kind == "agg" for sub in having.walk())
        )
        exprs = [e for e, _, _ in items]
        if keys or has_aggs:
            current, exprs, having = self._aggregate(current, keys, exprs, having, items, owner, q)
            if having is not None:
                current = self._filter(current, having, owner, having_pos)
        elif having is not None:
            raise self.err("HAVING without GROUP BY or aggregates; use WHERE", having_pos)

        names = [n for _, n, _ in items]
        seen: set[str] = set()
        for _, n, item_pos in items:
            if n.lower() in seen:
                raise self.err(
                    f"the select list names '{n}' twice; give one of them another name with AS",
                    item_pos,
                )
            seen.add(n.lower())
        current = self._project(current, exprs, names, owner, q.pos)
        if q.distinct:
            current = self._distinct(current, owner, q.pos, "Distinct")
        return "relation", list(current.schema), current

    @staticmethod
    def _default_name(e: TypedExpr) -> str:
        if e.kind == "column":
            return e.text.split(".")[-1]
        return e.text

    def _joins(
        self,
        inputs: list[tuple[Node, str, ast.Source]],
        sources: list[tuple[set[str], str, int, int]],
        preds: list[tuple[ast.Expr, TypedExpr]],
        owner: str,
        q: ast.Select,
    ) -> Node:
        """Left-deep joins in FROM order. Conjuncts over one source filter it first; equalities
        between the joined part and the next source become the join's keys; the rest is checked as
        soon as all its sources are joined."""
        remaining = list(preds)

        def source_of(col: int) -> int:
            return next(k for k, (_, _, s, e) in enumerate(sources) if s <= col < e)

        def local(e: TypedExpr, start: int) -> TypedExpr:
            return e.shifted(lambda i: i - start)

        # Filters over a single source, applied to it before any join.
        nodes = []
        for k, (node, _, _) in enumerate(inputs):
            _, _, start, _ = sources[k]
            mine = [
                p
                for p in remaining
                if p[1].columns() and {source_of(c) for c in p[1].columns()} == {k}
            ]
            if len(inputs) == 1:
                nodes.append(node)
                continue
            if node.op == "resource":
                # Its conjuncts are checked on the pairs, as the reference join makes them.
                nodes.append(node)
                continue
            nodes.append(self._filters(node, [(a, local(e, start)) for a, e in mine], owner))
            # By identity: comparing syntax trees would recurse down them.
            taken = {id(p) for p in mine}
            remaining = [p for p in remaining if id(p) not in taken]

        current = nodes[0]
        joined = {0}
        for k in range(1, len(inputs)):
            _, _, start, _stop = sources[k]
            left_keys, right_keys, residual, later = [], [], [], []
            for a, e in remaining:
                used = {source_of(c) for c in e.columns()}
                if not used <= joined | {k} or k not in used:
                    later.append((a, e))
                    continue
                if e.kind == "call" and e.fn == "equal":
                    lhs, rhs = e.args
                    lu = {source_of(c) for c in lhs.columns()}
                    ru = {source_of(c) for c in rhs.columns()}
                    if lu and ru and lu <= joined and ru == {k}:
                        left_keys.append(lhs)
                        right_keys.append(local(rhs, start))
                        continue
                    if lu and ru and ru <= joined and lu == {k}:
                        left_keys.append(rhs)
                        right_keys.append(local(lhs, start))
                        continue
                residual.append(e)
            remaining = later
            right = nodes[k]
            if current.op == "resource":
                raise self.err(
                    f"resource '{current.params['resource']}' comes first in FROM: write the "
                    "stream it is joined with before it (a reference join reads the resource for "
                    "each of the stream's rows)",
                    q.sources[0].pos,
                )
            if right.op == "resource":
                current = self._reference_join(
                    current,
                    right,
                    list(zip(left_keys, right_keys, strict=True)),
                    residual,
                    owner,
                    q.sources[k].pos,
                )
                joined.add(k)
                continue
            schema = list(current.schema) + list(right.schema)
            pred = balanced("and", "AND", residual, T.BOOL, residual[-1].pos) if residual else None
            # Pending if either side is; otherwise known (intersections: no constant duration, and
            # results come in the merged order of two inputs).
            life = PENDING if PENDING in {current.lifetime, right.lifetime} else KNOWN
            on = [f"{lk.text} = {rk.text}" for lk, rk in zip(left_keys, right_keys, strict=True)]
            label = ("HashJoin on " + " AND ".join(on)) if on else "Join (nested loops)"
            if pred is not None:
                label += f" where {pred.text}"
            current = self._add(
                Node(
                    self._new_id(),
                    "join",
                    [current.id, right.id],
                    {
                        "left_keys": [x.to_plan() for x in left_keys],
                        "right_keys": [x.to_plan() for x in right_keys],
                        "residual": pred.to_plan() if pred is not None else None,
                        "expiration": self.expiration,
                    },
                    schema,
                    kind="relation",
                    lifetime=life,
                    owner=owner,
                    pos=q.sources[k].pos,
                    label=label,
                    checks=left_keys + right_keys + ([pred] if pred is not None else []),
                )
            )
            joined.add(k)
        return self._filters(current, remaining, owner)

    def _model_calls(self, q: ast.Select) -> list[tuple[ast.FuncCall, ast.RegisterModel]]:
        """The distinct calls of models (paper 002) in ``q``'s select list and WHERE, checked: a
        model of one RETURNS column, called with its arguments' count and no model inside."""
        exprs = [i.expr for i in q.items] + ([q.where] if q.where is not None else [])
        found: dict[tuple[object, ...], tuple[ast.FuncCall, ast.RegisterModel]] = {}
        sub = ast.Select(items=tuple(ast.SelectItem(e, None, ast.NOPOS) for e in exprs), sources=())
        for call in reversed(_calls(sub)):
            model = self.cat.resources.get(call.name.lower())
            if not isinstance(model, ast.RegisterModel) or (key := expr_key(call)) in found:
                continue
            if len(model.returns) != 1:
                raise self.err(
                    f"model '{model.name}' returns {len(model.returns)} columns; a call is one "
                    "value, so only a model of one RETURNS column can be called in this version",
                    call.pos,
                )
            if len(call.args) != len(model.args):
                raise self.err(
                    f"model '{model.name}' takes {len(model.args)} arguments "
                    f"({', '.join(a.name for a in model.args)}); found {len(call.args)}",
                    call.pos,
                )
            inner = [c for a in call.args for c in _calls(_select_of(a))]
            if any(c.name.lower() in self.cat.resources for c in inner):
                raise self.err(
                    f"a model called inside model '{model.name}''s arguments; call it apart",
                    call.pos,
                )
            found[key] = (call, model)
        return list(found.values())

    def _model_applies(
        self,
        current: Node,
        calls: list[tuple[ast.FuncCall, ast.RegisterModel]],
        scope: Scope,
        owner: str,
    ) -> Node:
        """One model_apply per distinct call, in the order of the columns ``scope`` gave them."""
        binder = ExpressionBinder(scope, self.err)
        for call, model in calls:
            args = []
            for a, decl in zip(call.args, model.args, strict=True):
                e = binder.bind(a)
                want = T.FROM_CQL[decl.type.name]
                if e.kind == "literal" and e.value is None:
                    e = ExpressionBinder.coerce_null(e, want)
                if e.type != want:
                    raise self.err(
                        f"model '{model.name}': argument '{decl.name}' is {decl.type.name}; "
                        f"found {e.text} of type {T.CQL_NAME[e.type]}",
                        getattr(a, "pos", call.pos),
                    )
                args.append(e)
            ret = model.returns[0]
            returns = [(ret.name, T.FROM_CQL[ret.type.name])]
            current = self._add(
                Node(
                    self._new_id(),
                    "model_apply",
                    [current.id],
                    {
                        "model": model.name,
                        "args": [x.to_plan() for x in args],
                        "returns": [list(r) for r in returns],
                    },
                    list(current.schema) + returns,
                    kind=current.kind,
                    lifetime=current.lifetime,
                    owner=owner,
                    pos=call.pos,
                    label=f"ModelApply {model.name}({', '.join(x.text for x in args)}) -> "
                    f"{ret.name}",
                    checks=args,
                )
            )
        return current

    def _reference_join(
        self,
        current: Node,
        resource: Node,
        equalities: list[tuple[TypedExpr, TypedExpr]],
        residual: list[TypedExpr],
        owner: str,
        pos: ast.Pos,
    ) -> Node:
        """A stream's rows joined with a resource read as each row is processed (paper 002 §7):
        ACCESS KEY looks up the KEY with the equated expressions of the stream's side (every key
        column equated, of its type); SCAN, or equalities that are not the whole key, run as the
        nested loop's residual."""
        res = self.cat.resources[resource.params["resource"].lower()]
        assert isinstance(res, ast.RegisterResource)
        names = [c.name.lower() for c in res.columns]
        width = len(current.schema)
        keys: list[TypedExpr] = []
        if res.access == "key":
            by_col: dict[int, TypedExpr] = {}
            for left, right in equalities:
                if right.kind == "column" and right.index not in by_col:
                    by_col[right.index] = left
                else:
                    residual.append(self._equality(left, right, width))
            want = [names.index(k.lower()) for k in res.key]
            missing = [res.key[i] for i, c in enumerate(want) if c not in by_col]
            if missing:
                raise self.err(
                    f"ACCESS KEY on resource '{res.name}': the join must equate every key column "
                    f"with the stream's values; {', '.join(missing)} has no equality (write one, "
                    "or register the resource with ACCESS SCAN)",
                    pos,
                )
            for c in want:
                e = by_col.pop(c)
                if e.type != resource.schema[c][1]:
                    raise self.err(
                        f"ACCESS KEY on resource '{res.name}': key column '{resource.schema[c][0]}'"
                        f" is {resource.schema[c][1]} and is equated with {e.text}, of type "
                        f"{e.type}; the types must be the same",
                        pos,
                    )
                keys.append(e)
            for c, e in by_col.items():
                residual.append(
                    self._equality(e, TypedExpr("column", resource.schema[c][1], index=c), width)
                )
        else:
            residual += [self._equality(lk, rk, width) for lk, rk in equalities]
        if current.lifetime == PENDING and res.access != "key":
            raise self.err(
                f"a SCAN of resource '{res.name}' under a window whose ends are not known at "
                "arrival (a row window): each row may join several resource rows, which would "
                "share its identity; use ACCESS KEY or a time window",
                pos,
            )
        pred = balanced("and", "AND", residual, T.BOOL, residual[-1].pos) if residual else None
        on = " AND ".join(f"{res.name}.{res.key[i]} = {e.text}" for i, e in enumerate(keys))
        label = f"ReferenceJoin {res.name} " + (f"ACCESS KEY ({on})" if keys else "SCAN")
        if pred is not None:
            label += f" where {pred.text}"
        return self._add(
            Node(
                self._new_id(),
                "reference_join",
                [current.id],
                {
                    "resource": res.name,
                    "access": "key" if keys else "scan",
                    "keys": [x.to_plan() for x in keys],
                    "residual": pred.to_plan() if pred is not None else None,
                },
                list(current.schema) + list(resource.schema),
                kind=current.kind,
                lifetime=current.lifetime,
                owner=owner,
                pos=pos,
                label=label,
                checks=keys + ([pred] if pred is not None else []),
            )
        )

    @staticmethod
    def _equality(left: TypedExpr, right: TypedExpr, width: int) -> TypedExpr:
        """``left = right`` over the pair's columns (``right`` local to the resource)."""
        shifted = right.shifted(lambda i: i + width)
        return TypedExpr(
            "call",
            T.BOOL,
            fn="equal",
            args=(left, shifted),
            text=f"{left.text} = {shifted.text}",
            pos=left.pos,
        )

    def _filters(self, input_: Node, preds: list[tuple[ast.Expr, TypedExpr]], owner: str) -> Node:
        """One filter per conjunct, in the order written: each later conjunct sees only the rows
        the earlier ones kept. From the MAX_FILTERS-th on, the conjuncts share one filter (a
        balanced AND): the core hands batches down a chain of operators depth-first, so a WHERE of
        ten thousand conjuncts must not become ten thousand operators."""
        head, tail = preds[: MAX_FILTERS - 1], preds[MAX_FILTERS - 1 :]
        for a, e in head:
            input_ = self._filter(input_, e, owner, a.pos)
        if tail:
            pred = balanced("and", "AND", [e for _, e in tail], T.BOOL, tail[0][0].pos)
            input_ = self._filter(input_, pred, owner, tail[0][0].pos)
        return input_

    def _filter(self, input_: Node, pred: TypedExpr, owner: str, pos: ast.Pos) -> Node:
        return self._add(
            Node(
                self._new_id(),
                "filter",
                [input_.id],
                {"predicate": pred.to_plan()},
                list(input_.schema),
                kind=input_.kind,
                lifetime=input_.lifetime,
                owner=owner,
                pos=pos,
                label=f"Filter {pred.text}",
                checks=[pred],
            )
        )

    def _project(
        self, input_: Node, exprs: list[TypedExpr], names: list[str], owner: str, pos: ast.Pos
    ) -> Node:
        exprs = [
            ExpressionBinder.coerce_null(e, T.INT64) if e.kind == "literal" else e for e in exprs
        ]
        parts = [
            e.text if e.text == n else f"{e.text} AS {n}" for e, n in zip(exprs, names, strict=True)
        ]
        return self._add(
            Node(
                self._new_id(),
                "project",
                [input_.id],
                {"names": names, "exprs": [e.to_plan() for e in exprs]},
                [(n, e.type) for n, e in zip(names, exprs, strict=True)],
                kind=input_.kind,
                lifetime=input_.lifetime,
                owner=owner,
                pos=pos,
                label="Project " + ", ".join(parts),
                checks=list(exprs),
            )
        )

    def _aggregate(
        self,
        input_: Node,
        keys: list[TypedExpr],
        exprs: list[TypedExpr],
        having: TypedExpr | None,
        items: list[tuple[TypedExpr, str, ast.Pos]],
        owner: str,
        q: ast.Select,
    ) -> tuple[Node, list[TypedExpr], TypedExpr | None]:
        """An aggregate operator (group keys, then one column per distinct aggregate), and the
        select items and HAVING rewritten over its output. Outside aggregates, an item may only use
        group keys (SQL's rule)."""
        aggs: list[TypedExpr] = []

        def rewrite(e: TypedExpr, where: str) -> TypedExpr:
            for i, k in enumerate(keys):
                if e == k:
                    return TypedExpr("column", e.type, index=i, text=e.text, pos=e.pos)
            if e.kind == "agg":
                if e not in aggs:
                    aggs.append(e)
                return TypedExpr(
                    "column", e.type, index=len(keys) + aggs.index(e), text=e.text, pos=e.pos
                )
            if e.kind == "column":
                raise self.err(
                    f"column '{e.text}' in {where} must appear in GROUP BY or inside an aggregate",
                    e.pos,
                )
            if not e.args:
                return e
            return TypedExpr(
                e.kind,
                e.type,
                e.index,
                e.value,
                e.fn,
                tuple(rewrite(a, where) for a in e.args),
                e.distinct,
                e.text,
                e.pos,
            )

        new_exprs = [rewrite(e, "the select list") for e in exprs]
        new_having = rewrite(having, "HAVING") if having is not None else None
        schema = [(k.text, k.type) for k in keys] + [(a.text, a.type) for a in aggs]
        params = {
            "keys": [k.to_plan() for k in keys],
            "aggregates": [
                {
                    "fn": a.fn,
                    "distinct": a.distinct,
                    "type": a.type,
                    "arg": a.args[0].to_plan() if a.args else None,
                }
                for a in aggs
            ],
            "names": [n for n, _ in schema],
            "expiration": self.expiration,
        }
        label = "Aggregate " + ", ".join(a.text for a in aggs)
        if keys:
            label += " GROUP BY " + ", ".join(k.text for k in keys)
        node = self._add(
            Node(
                self._new_id(),
                "aggregate",
                [input_.id],
                params,
                schema,
                kind="relation",
                lifetime=PENDING,
                owner=owner,
                pos=q.pos,
                label=label,
                checks=keys + [a.args[0] for a in aggs if a.args],
            )
        )
        return node, new_exprs, new_having

    # =========================================================================================
    # After planning
    # =========================================================================================

    def _resolve_references(self, first_new: int) -> None:
        """Replaces the stand-ins for other queries' outputs by their output node ids."""
        for node in self.cat.nodes.values():
            if node.id < first_new:
                continue
            node.inputs = [
                self.cat.queries[self.unplanned[i].lower()].out_id if i < 0 else i
                for i in node.inputs
            ]

    def ticks(self, d: ast.Duration) -> int:
        """A CQL duration in ticks of the engine's time unit (a bare integer is ticks already)."""
        if d.unit is None:
            ticks = d.value
        else:
            ns = d.value * UNIT_NS[d.unit]
            per_tick = TIME_UNIT_NS[self.time_unit]
            if ns % per_tick:
                raise self.err(
                    f"{d.value} {UNIT_WORDS[d.unit]} is not a whole number of ticks of "
                    f"the engine's time unit '{self.time_unit}'",
                    d.pos,
                )
            ticks = ns // per_tick
        if ticks >= 2**63:
            raise self.err(
                f"the duration {d.value}{' ' + UNIT_WORDS[d.unit] if d.unit else ''} is "
                f"{ticks} ticks, beyond the largest time (2^63 - 1 ticks); use "
                "[Range Unbounded] for a window that never ends",
                d.pos,
            )
        return ticks


def derived_lifetime(node: Node, inputs: list[Node]) -> str:
    """The lifetime property of an operator that passes on its inputs' lifetimes."""
    lifes = {i.lifetime for i in inputs}
    rule = descriptor(node.op).lifetimes
    if rule == "first input":
        return inputs[0].lifetime
    if rule == "join":
        return PENDING if PENDING in lifes else KNOWN
    if rule == "union" and node.kind == "relation":
        return union_all_lifetime(lifes)
    return node.lifetime


def union_all_lifetime(lifes: set[str]) -> str:
    """Lifetimes of a bag union: pending if any input's are; never constant, since two inputs
    interleave out of time order (a constant-duration FIFO needs starts in order)."""
    if PENDING in lifes:
        return PENDING
    return UNBOUNDED if lifes == {UNBOUNDED} else KNOWN


def propagate_lifetimes(cat: Catalog, first_new: int = 0) -> None:
    """Recomputes derived lifetime properties of the operators from ``first_new`` on until they
    settle: inside a loop a query may have been planned before the queries it reads, with a
    provisional property for them. (Those of earlier scripts settled when they were planned, and
    read nothing newer.)"""
    added = list(loops.new_part(cat, first_new).values())
    for _ in range(len(added) + 1):
        changed = False
        for node in added:
            new = derived_lifetime(node, [cat.nodes[i] for i in node.inputs])
            if new != node.lifetime:
                node.lifetime, changed = new, True
        if not changed:
            break
    for q in cat.queries.values():
        q.lifetime = cat.nodes[q.out_id].lifetime


def _names_of(q: ast.Query) -> list[str] | None:
    """The output column names of a query expression as its text gives them, without typing it:
    a select list of aliases and column references; None when a name needs its sources (``*``, an
    expression without alias)."""
    if isinstance(q, ast.StreamOp):
        return _names_of(q.query)
    if isinstance(q, ast.SetOp):
        return _names_of(q.left)
    if isinstance(q, ast.Master):
        return _names_of(q.select)
    names = []
    for item in q.items:
        if item.alias:
            names.append(item.alias)
        elif isinstance(item.expr, ast.ColumnRef):
            names.append(item.expr.name)
        else:
            return None
    return names


_RESOURCE_SCHEMES = ("sqlite:///", "postgresql://", "duckdb:///")


def _calls(q: ast.Query) -> list[ast.FuncCall]:
    """Every function call in a query expression's select lists, conditions and groupings."""
    exprs: list[ast.Expr] = []
    todo: list[ast.Query] = [q]
    while todo:
        x = todo.pop()
        if isinstance(x, ast.Select):
            exprs += [i.expr for i in x.items] + list(x.group_by)
            exprs += [e for e in (x.where, x.having) if e is not None]
        elif isinstance(x, ast.StreamOp):
            todo.append(x.query)
        elif isinstance(x, ast.Master):
            todo.append(x.select)
        else:
            todo += [x.right, x.left]
    out: list[ast.FuncCall] = []
    while exprs:
        e = exprs.pop()
        if isinstance(e, ast.FuncCall):
            out.append(e)
        for v in vars(e).values():
            # Operands, and the tuples of them (arguments, IN lists, CASE's (when, then) pairs).
            parts = v if isinstance(v, tuple) else (v,)
            for p in parts:
                exprs += [x for x in (p if isinstance(p, tuple) else (p,)) if isinstance(x, _EXPRS)]
    return out


_EXPRS = (
    ast.Literal,
    ast.ColumnRef,
    ast.Star,
    ast.Unary,
    ast.Binary,
    ast.IsNull,
    ast.Between,
    ast.InList,
    ast.Case,
    ast.Cast,
    ast.FuncCall,
)


def _select_of(e: ast.Expr) -> ast.Select:
    """A select of ``e`` alone (for walking an expression with _calls)."""
    return ast.Select(items=(ast.SelectItem(e, None, ast.NOPOS),), sources=())


def _sources(q: ast.Query) -> list[ast.Source]:
    """Every FROM entry of a query expression, in the order written (iterative: a union of a
    thousand branches is a thousand deep)."""
    out: list[ast.Source] = []
    todo = [q]
    while todo:
        x = todo.pop()
        if isinstance(x, ast.Select):
            out += x.sources
        elif isinstance(x, ast.StreamOp):
            todo.append(x.query)
        elif isinstance(x, ast.Master):
            out += [ast.Source(m.name, pos=m.pos) for m in x.masters]
            todo.append(x.select)
        else:
            todo += [x.right, x.left]
    return out


def is_constant(lifetime: str) -> bool:
    return lifetime.startswith("constant") or lifetime == UNBOUNDED


__all__ = [
    "Catalog",
    "Deferred",
    "Node",
    "Planner",
    "QueryDef",
    "StreamDef",
    "is_constant",
    "literal",
]
