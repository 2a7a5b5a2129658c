"""The logical plan: an operator graph handed to the core as data.

Each :class:`Node` is one operator with its inputs, its output columns, whether it yields a stream
or a relation, and the lifetime property of its output edge (what the core may specialise on:
constant durations need only a FIFO, pending ends need expiration holders, ARCHITECTURE.md §3.4).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from cq_py.parser import ast
from cq_py.planner.expressions import TypedExpr

# Lifetime properties of an edge, from cheapest to most general.
STREAM = "stream"
UNBOUNDED = "unbounded (never ends)"
PENDING = "pending ends (expiration holders)"
KNOWN = "known ends"


def constant(duration: str) -> str:
    return f"constant duration {duration}"


def duration_of(lifetime: str) -> dict[str, Any] | None:
    """The constant duration of an edge's lifetimes as the plan gives it to the core, or None."""
    if lifetime == UNBOUNDED:
        return {"infinite": True}
    if lifetime == constant("ε"):
        return {"ticks": 0, "steps": 1}
    if lifetime.startswith(constant("")) and lifetime.endswith(" ticks"):
        return {"ticks": int(lifetime[len(constant("")) : -len(" ticks")])}
    return None


@dataclass
class Node:
    id: int
    op: str
    inputs: list[int]  # below 0 while planning: a query not planned yet (Planner.unplanned)
    params: dict[str, Any] = field(default_factory=dict)  # as the plan's JSON gives them
    schema: list[tuple[str, str]] = field(default_factory=list)
    kind: str = "relation"  # "stream" | "relation"
    lifetime: str = STREAM
    owner: str = ""  # the query (or stream) the operator belongs to
    pos: ast.Pos = ast.NOPOS
    label: str = ""  # one line for explain
    inserted: bool = False  # a delay put in by auto_delay
    # What explain() says of it beyond its label: why a join was not shared, a shared join's
    # members (planner/shared_joins.py).
    note: str = ""
    # The expressions the operator computes: checked against the core's kernels before running.
    checks: list[TypedExpr] = field(default_factory=list, repr=False)

    def to_plan(self) -> dict[str, Any]:
        plan: dict[str, Any] = {
            "id": self.id,
            "op": self.op,
            "inputs": list(self.inputs),
            **self.params,
        }
        if self.owner:
            plan["query"] = self.owner
        # What the operator produces: a loop's back edge reads an operator built after its reader.
        plan["output"] = {"kind": self.kind, "schema": [list(c) for c in self.schema]}
        # Its constant duration, if any: where rows leave a loop region, the core gathers them into
        # batches that must say so (rows/ROWS.md).
        if self.kind == "relation" and (duration := duration_of(self.lifetime)) is not None:
            plan["output"]["duration"] = duration
        return plan

    @property
    def delay(self) -> str | None:
        return self.label if self.op == "delay" else None


@dataclass
class StreamDef:
    """A registered stream (or relation: a table changed by timestamped inserts and deletes)."""

    name: str
    columns: list[tuple[str, str]]
    scan_id: int
    relation: bool = False
    pos: ast.Pos = ast.NOPOS
    # "stream" or "relation" as declared, "clock" (REGISTER CLOCK: ticks, no columns, only a
    # master) or "table" (REGISTER TABLE: a relation the engine fills from a database).
    origin: str = ""
    # A table's database url and its table there.
    url: str = ""
    remote: str = ""
    where: str = ""  # a table view's filters, run by the database (cq_py/tables.py push_down)
    # A clock's period and offset, in ticks.
    every: int = 0
    offset: int = 0


@dataclass
class QueryDef:
    name: str
    kind: str  # "stream" | "relation"
    columns: list[tuple[str, str]]  # user columns, without the time columns
    out_id: int  # the node whose output is the query's result
    sink_id: int
    pos: ast.Pos = ast.NOPOS
    lifetime: str = STREAM
    references: list[str] = field(default_factory=list)  # names it reads in FROM
    # Its definition: a query registered later, while the engine runs, re-derives a relation-valued
    # query from it (SEMANTICS.md §4) instead of reading the operators that hold its state from
    # before.
    query: ast.Query | None = field(default=None, repr=False)

    def __deepcopy__(self, memo: dict[int, Any]) -> QueryDef:
        # The syntax tree is immutable (frozen dataclasses): a copied catalog shares it, where a
        # deep copy would recurse down a long chain of operators (a RecursionError).
        return replace(self, columns=list(self.columns), references=list(self.references))


@dataclass
class Catalog:
    streams: dict[str, StreamDef] = field(default_factory=dict)  # keys lower-cased
    queries: dict[str, QueryDef] = field(default_factory=dict)
    nodes: dict[int, Node] = field(default_factory=dict)
    next_id: int = 0
    # REGISTER RESOURCE and REGISTER MODEL (paper 002), by lower-cased name: read by reference
    # operators, they have no scan of their own.
    resources: dict[str, ast.RegisterResource | ast.RegisterModel] = field(default_factory=dict)
    # The readers of the operators below an id, among them, as fork() found them: those
    # operators and their inputs never change after (see fork), so consumers() need only add
    # what reads them from the operators planned since.
    _readers: tuple[int, dict[int, list[int]]] | None = field(
        default=None, repr=False, compare=False
    )

    def lookup(self, name: str) -> StreamDef | QueryDef | None:
        key = name.lower()
        return self.streams.get(key) or self.queries.get(key)

    def names(self) -> list[str]:
        return [s.name for s in self.streams.values()] + [q.name for q in self.queries.values()]

    def fork(self) -> Catalog:
        """A catalog to plan a script in: new tables, holding the same streams, queries and
        operators. Planning adds new ones and never changes those of earlier scripts (it may
        write back a value they already hold: a lifetime recomputed, an id numbered as it
        was), so a script that fails leaves this catalog as it was. A deep copy did the same
        at the cost of every operator registered so far, per ``execute`` (issue 31, 4g: 500
        queries took minutes).

        >>> cat = Catalog(nodes={0: Node(0, "stream_scan", [])})
        >>> f = cat.fork(); f.nodes[1] = Node(1, "window", [0])
        >>> sorted(cat.nodes), f.nodes[0] is cat.nodes[0]
        ([0], True)
        """
        fork = Catalog(
            dict(self.streams),
            dict(self.queries),
            dict(self.nodes),
            self.next_id,
            dict(self.resources),
        )
        fork._readers = (self.next_id, self.consumers())
        return fork

    def consumers(self) -> dict[int, list[int]]:
        """The operators reading each operator, by id (the caller does not change the lists).

        >>> cat = Catalog(nodes={0: Node(0, "stream_scan", []), 1: Node(1, "window", [0])})
        >>> cat.next_id = 2
        >>> f = cat.fork(); f.nodes[2] = Node(2, "project", [1]); f.next_id = 3
        >>> f.consumers()
        {0: [1], 1: [2], 2: []}
        """
        if self._readers is None:
            out: dict[int, list[int]] = {i: [] for i in self.nodes}
            for n in self.nodes.values():
                for i in n.inputs:
                    out[i].append(n.id)
            return out
        upto, old = self._readers
        out = dict(old)  # (the lists are copied before one is added to)
        new = [n for n in map(self.nodes.get, range(upto, self.next_id)) if n is not None]
        for n in new:
            out[n.id] = []
        copied: set[int] = set()
        for n in new:
            for i in n.inputs:
                if i < upto and i not in copied:
                    out[i] = list(out[i])
                    copied.add(i)
                out[i].append(n.id)
        return out
