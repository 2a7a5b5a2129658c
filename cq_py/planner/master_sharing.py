"""MASTER queries of one base group sharing their windows and joins (paper 001 §4.4).

Queries whose FROM reads the same streams and tables joined on the same conditions compute the
same join over different windows. The first of a base group (cq_py/optimizer: equal masters,
comparable windows) plans the join once over the group's widest windows, each stream row's
arrival kept as a column (the window's input gets a ``start()`` column), and one master trigger
over it: the members of a base group share their masters, so each run emits once, for all of
them, the part's tuples that started since the previous run. Every member then keeps, with plain
filters, the tuples its own predicates pass and whose arrivals all lie in its own windows at the
run (``a > τ − width``, τ being the emitted row's ``start()``) and came after it registered; its
select list follows. So each query gets exactly its own result (issue 31's semantics), while the
windows, the joins, the trigger and the table's cached view exist once per group: operators with
equal parameters merged, master = union, window = maximum.

Plan choice (§4.4: the join order and predicate placement that saves most operators; ties to
narrow windows first): the join conditions — the conjuncts over two or more sources — are the
shared part, in the first member's FROM order; every conjunct over one source (``status.load >
c``) goes above the shared part, into the member's own filter, since a predicate below a join
serves one query while above it the join serves all. A member whose windows are wider than a
part's, or that registers after rows reached a stream the part reads (unless the engine advanced
past them, so that its arrivals can be told apart by time), gets a part of its own, planned over
its base group's widest windows seen so far; later members take the narrowest part that covers
them.

Queries that cannot share (explain says so): windows other than ``[Now]``, ``[Range d]`` and
unbounded; a source read twice; no stream in FROM; aggregates, DISTINCT or ``*``; a stream or
query read that is not a registered stream, relation or table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cq_py.parser import ast

__all__ = ["ARRIVAL", "MasterShares", "SharedPart", "not_shareable"]

# The name of the arrival column each shared window's rows carry (dropped by the member's select).
ARRIVAL = "__arrival"


@dataclass
class SharedPart:
    """One shared relation: the join of a base group's sources over its widest windows.

    ``node`` is its operator's id; ``columns`` and ``sources`` the scope members bind against
    (as :class:`cq_py.planner.expressions.Scope` takes them); ``arrivals`` the arrival column of
    each stream source (by its lower-cased name); ``widths`` the window each stream is read
    through, in ticks (0 for ``[Now]``, None unbounded); ``pushed`` how many pushes each stream
    had when the part was planned.
    """

    key: tuple[Any, ...]
    node: int
    columns: list[tuple[str, str]]
    sources: list[tuple[set[str], str, int, int]]
    arrivals: dict[str, int]
    widths: dict[str, int | None]
    pushed: dict[str, int]
    members: list[str] = field(default_factory=list)
    node_ref: Any = None  # the operator while its script is planned (ids change until added)
    trigger: int = -1  # the part's master trigger, read by every member
    trigger_ref: Any = None


def covers(shared: int | None, own: int | None) -> bool:
    """Whether a window of ``shared`` ticks holds every row one of ``own`` ticks holds (0:
    ``[Now]``, None: unbounded).

    >>> covers(None, 5), covers(5, None), covers(5, 0), covers(0, 0)
    (True, False, True, True)
    """
    if shared is None:
        return True
    return own is not None and own <= shared


def wider(a: int | None, b: int | None) -> int | None:
    """The wider of two windows (0: ``[Now]``, None: unbounded).

    >>> wider(5, 0), wider(None, 3)
    (5, None)
    """
    return None if a is None or b is None else max(a, b)


def not_shareable(select: ast.Select, kinds: dict[str, str]) -> str | None:
    """Why a MASTER query's SELECT cannot share a part, or None. ``kinds`` gives each registered
    name (lower-cased) "stream", "relation" or anything else (a query, a clock).

    >>> from cq_py.parser import parse
    >>> q = parse("REGISTER QUERY q AS MASTER c SELECT a.x FROM a [Rows 3];").statements[0]
    >>> not_shareable(q.query.select, {"a": "stream"})
    "'a' is read through [Rows ...]: only [Now], [Range d] and unbounded windows share"
    """
    if select.group_by or select.having is not None or select.distinct:
        return "it aggregates or removes duplicates"
    for item in select.items:
        if isinstance(item.expr, ast.Star):
            return "its select list has *"
        if any(
            isinstance(e, ast.FuncCall) and e.name.upper() in _AGGREGATES for e in _walk(item.expr)
        ):
            return "it aggregates"
    seen: set[str] = set()
    streams = 0
    for src in select.sources:
        key = src.name.lower()
        if key in seen:
            return f"it reads '{src.name}' twice"
        seen.add(key)
        kind = kinds.get(key)
        if kind == "stream":
            streams += 1
            w = src.window
            if w is not None and w.kind not in ("now", "range", "unbounded"):
                what = {"range_slide": "[Range ... Slide ...]"}.get(w.kind, "[Rows ...]")
                return (
                    f"'{src.name}' is read through {what}: only [Now], [Range d] and unbounded "
                    "windows share"
                )
        elif kind != "relation":
            return f"'{src.name}' is not a registered stream, relation or table"
    if not streams:
        return "it reads no stream"
    return None


_AGGREGATES = {"COUNT", "SUM", "AVG", "MIN", "MAX"}


def _walk(e: object) -> list[object]:
    """``e`` and every expression under it (iteratively)."""
    out, todo = [], [e]
    while todo:
        x = todo.pop()
        out.append(x)
        for v in vars(x).values():
            todo.extend(
                a
                for a in (v if isinstance(v, tuple) else (v,))
                if hasattr(a, "__dataclass_fields__") and not isinstance(a, ast.Pos)
            )
    return out


@dataclass
class MasterShares:
    """The engine's shared parts, and what the planner needs to choose one for a query.

    The engine sets, before a script is planned, each of its MASTER queries' base group
    (``groups``: query → (the group's first member, each stream's widest window in the group))
    and each stream's pushes so far and the engine's floor (``pushed``, ``last_row``, ``floor``),
    from which it tells whether a part's rows can be told apart from those a query registered now
    must not see.
    """

    enabled: bool = True
    negative: bool = False  # lifetime="negative"
    parts: list[SharedPart] = field(default_factory=list)
    groups: dict[str, tuple[str, dict[str, int | None]]] = field(default_factory=dict)
    pushed: dict[str, int] = field(default_factory=dict)
    last_row: dict[str, int] = field(default_factory=dict)
    floor: int | None = None

    def cutoff(self, part: SharedPart, stream: str) -> tuple[bool, int | None]:
        """(usable, from): whether a query registered now can read ``part``'s rows of
        ``stream``, and the least arrival it may see (None: all the part holds)."""
        if self.pushed.get(stream, 0) == part.pushed.get(stream, 0):
            return True, None  # every row the part holds came after the query registered
        if self.negative:
            # A new reader would be told of the end of tuples it never saw start.
            return False, None
        last = self.last_row.get(stream)
        if last is not None and self.floor is not None and self.floor > last:
            return True, self.floor  # rows from here on are the query's, the earlier ones not
        return False, None

    def choose(
        self, key: tuple[Any, ...], own: dict[str, int | None]
    ) -> tuple[SharedPart | None, dict[str, int | None]]:
        """The narrowest part of ``key`` covering windows ``own`` that a query registered now can
        read, with the least arrival it may see per stream; or (None, {})."""
        best: tuple[SharedPart | None, dict[str, int | None]] = (None, {})
        for part in self.parts:
            if part.key != key or not all(covers(part.widths[s], w) for s, w in own.items()):
                continue
            froms: dict[str, int | None] = {}
            for s in own:
                usable, since = self.cutoff(part, s)
                if not usable:
                    break
                froms[s] = since
            else:
                if best[0] is None or _narrower(part, best[0]):
                    best = (part, froms)
        return best

    def commit(self, catalog: Any, known: int) -> None:
        """After a script was planned and added: the parts it planned (from index ``known`` on)
        take their operators' final ids (numbering may have closed gaps); a part whose operator a
        later pass replaced is forgotten (its members run all the same: only reuse is lost)."""
        for part in self.parts[known:]:
            node, trigger = part.node_ref, part.trigger_ref
            part.node_ref = part.trigger_ref = None
            if (
                node is not None
                and catalog.nodes.get(node.id) is node
                and trigger is not None
                and catalog.nodes.get(trigger.id) is trigger
            ):
                part.node, part.trigger = node.id, trigger.id
            else:
                part.node = -1
        self.parts = [p for p in self.parts if p.node >= 0]
        self.groups = {}

    def forget(self, alive: set[int]) -> None:
        """Parts whose operator was dropped (no member left) are forgotten."""
        self.parts = [p for p in self.parts if p.node in alive and p.trigger in alive]


def _narrower(a: SharedPart, b: SharedPart) -> bool:
    # (unbounded counts as the widest)
    big = float("inf")
    wa = sum(big if w is None else w for w in a.widths.values())
    wb = sum(big if w is None else w for w in b.widths.values())
    return wa < wb
