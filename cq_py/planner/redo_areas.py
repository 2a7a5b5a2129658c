"""Where a query that reads resources commits, and what a redo replays (paper 002 §3.2, §3.4).

A query's plan is a tree of operators; some are *reference* operators (a stream joined with a
resource, a model applied), whose reads make up each output's transaction TXN(e) (Def. 3.1).

* **Commit operator** (Def. 3.2: the top-most window or reference operator). In CQL a window's
  rows leave it as a relation, and the rows a transaction emits leave through the relation-to-stream
  operator above it, so the commit operator is the relation-to-stream operator above the top-most
  window reached from a reference operator; with no window above a reference operator, the
  top-most reference operator.
* **Redo queues** (§3.4.1) keep the input rows a transaction may have to run again, on two kinds
  of edge: (1) the stream input of a reference operator that has a window downstream and no
  reference operator upstream; (2) an input of a window operator with a reference operator
  upstream, when that input has none upstream itself.
* **Redo area**: the subtree rooted at the commit operator whose leaves are the operators whose
  inputs carry redo queues; those operators are its **gatekeepers** (§6: rows enter the area only
  through them). It holds an **overlapping window** when one of its windows has r > s (§4.1.3:
  then a reset and replay at each commit keeps the reads serializable).

:func:`redo_area` computes these from a plan given as :class:`Op` records, so that the planner, the
scheduled executor (which keeps §6's constraint on the gatekeepers) and ``explain()`` share one
reading of the paper.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Op", "RedoArea", "redo_area"]


@dataclass(frozen=True)
class Op:
    """One operator of a query's plan: its ``id``; its ``role``: "reference", "window",
    "relation_to_stream", "source", "resource" (a resource read as an input) or "other"; its
    ``inputs`` (operator ids, by port); for a window, whether it ``overlaps`` (range r greater
    than slide s)."""

    id: int
    role: str
    inputs: tuple[int, ...] = ()
    overlaps: bool = False


@dataclass
class RedoArea:
    """A query's redo area: its ``commit`` operator, its ``members`` (commit operator and
    gatekeepers included, in plan order), its redo ``queues`` as (consumer, port) edges, its
    ``gatekeepers`` and whether it holds an ``overlapping`` window."""

    commit: int
    members: list[int] = field(default_factory=list)
    queues: list[tuple[int, int]] = field(default_factory=list)
    gatekeepers: list[int] = field(default_factory=list)
    overlapping: bool = False


def redo_area(ops: list[Op], root: int) -> RedoArea | None:
    """The redo area of the query whose plan is ``ops`` (producers before consumers) with output
    ``root``; None when it reads no resource.

    Fig. 4(a) of the paper: a stream s joined with resource x, then a window (r = 3, s = 2) and
    an aggregate, emitted by ISTREAM. The redo queue is on the join's input (rule 1), the join
    its gatekeeper, ISTREAM its commit operator:

    >>> plan = [Op(0, "source"), Op(1, "reference", (0,)), Op(2, "window", (1,), overlaps=True),
    ...         Op(3, "other", (2,)), Op(4, "relation_to_stream", (3,))]
    >>> redo_area(plan, 4)
    RedoArea(commit=4, members=[1, 2, 3, 4], queues=[(1, 0)], gatekeepers=[1], overlapping=True)
    """
    by_id = {op.id: op for op in ops}
    order = {op.id: k for k, op in enumerate(ops)}
    tree = _subtree(by_id, root)
    references = [i for i in tree if by_id[i].role == "reference"]
    if not references:
        return None
    upstream_ref = {i: _has_upstream(by_id, i, "reference") for i in tree}
    downstream = _downstream(by_id, tree)
    # The commit operator (Def. 3.2, in CQL's terms).
    windows_after_ref = [i for i in tree if by_id[i].role == "window" and upstream_ref[i]]
    top_window = _top(windows_after_ref, downstream, order)
    if top_window is not None:
        above = [
            i
            for i in _path_up(downstream, top_window, root)
            if by_id[i].role == "relation_to_stream"
        ]
        commit = above[0] if above else top_window
    else:
        top_ref = _top(references, downstream, order)
        commit = top_ref if top_ref is not None else references[-1]
    # Redo queues (§3.4.1). Rule (2) speaks of a window operator with several inputs (the
    # paper's window join); in CQL each input has its window and the join is an operator above
    # them, so a window none of whose input has a reference upstream gets the queue when its rows
    # meet, below the commit operator, rows that have one.
    inside = _subtree(by_id, commit)
    queues: list[tuple[int, int]] = []
    for i in sorted(tree, key=order.__getitem__):
        op = by_id[i]
        if op.role == "reference":
            if not upstream_ref[i] and _has_window_downstream(by_id, downstream, i):
                queues += [
                    (i, p) for p, src in enumerate(op.inputs) if by_id[src].role != "resource"
                ]
        elif op.role == "window" and i in inside:
            if upstream_ref[i]:
                queues += [
                    (i, p)
                    for p, src in enumerate(op.inputs)
                    if not upstream_ref[src] and by_id[src].role != "reference"
                ]
            elif _meets_references(by_id, downstream, upstream_ref, inside, i):
                queues += [(i, p) for p in range(len(op.inputs))]
    gatekeepers = sorted({c for c, _ in queues}, key=order.__getitem__)
    # The area: what lies between a gatekeeper and the commit operator, both included.
    subtrees = {i: _subtree(by_id, i) for i in _subtree(by_id, commit)}
    members = {i for i, below in subtrees.items() if any(g in below for g in gatekeepers)}
    members.add(commit)
    listed = sorted(members, key=order.__getitem__)
    overlapping = any(by_id[m].role == "window" and by_id[m].overlaps for m in listed)
    return RedoArea(commit, listed, queues, gatekeepers, overlapping)


def _subtree(by_id: dict[int, Op], root: int) -> set[int]:
    seen, todo = set(), [root]
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        todo += by_id[i].inputs
    return seen


def _has_upstream(by_id: dict[int, Op], i: int, role: str) -> bool:
    """Whether an operator of ``role`` lies strictly upstream of ``i``."""
    todo, seen = list(by_id[i].inputs), set()
    while todo:
        j = todo.pop()
        if j in seen:
            continue
        seen.add(j)
        if by_id[j].role == role:
            return True
        todo += by_id[j].inputs
    return False


def _downstream(by_id: dict[int, Op], tree: set[int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {i: [] for i in tree}
    for i in tree:
        for src in by_id[i].inputs:
            if src in out:
                out[src].append(i)
    return out


def _path_up(downstream: dict[int, list[int]], start: int, stop: int) -> list[int]:
    """The operators from ``start`` up to ``stop`` along consumers (both included), in order;
    the first path found in a tree (a query's plan has one consumer per operator below its
    root)."""
    path, at = [start], start
    while at != stop:
        nxt = downstream.get(at, [])
        if not nxt:
            break
        at = nxt[0]
        path.append(at)
    return path


def _top(
    candidates: list[int], downstream: dict[int, list[int]], order: dict[int, int]
) -> int | None:
    """The candidate no other candidate lies downstream of (the latest in plan order on ties)."""
    if not candidates:
        return None
    tops = [
        c for c in candidates if not any(d in _above(downstream, c) for d in candidates if d != c)
    ]
    return max(tops or candidates, key=order.__getitem__)


def _above(downstream: dict[int, list[int]], i: int) -> set[int]:
    seen, todo = set(), list(downstream.get(i, []))
    while todo:
        j = todo.pop()
        if j in seen:
            continue
        seen.add(j)
        todo += downstream.get(j, [])
    return seen


def _meets_references(
    by_id: dict[int, Op],
    downstream: dict[int, list[int]],
    upstream_ref: dict[int, bool],
    inside: set[int],
    window: int,
) -> bool:
    """Whether the rows of ``window`` (which has no reference operator upstream) reach, through
    no reference operator, an operator below the commit operator whose other input has one."""
    for d in _above(downstream, window) & inside:
        ins = by_id[d].inputs
        if len(ins) < 2:
            continue
        mine = [src for src in ins if src == window or window in _subtree(by_id, src)]
        if any(upstream_ref[src] or by_id[src].role == "reference" for src in mine):
            continue  # (a reference operator lies between: its own queue, rule (1))
        others = [src for src in ins if src not in mine]
        if any(upstream_ref[src] or by_id[src].role == "reference" for src in others):
            return True
    return False


def _has_window_downstream(by_id: dict[int, Op], downstream: dict[int, list[int]], i: int) -> bool:
    return any(by_id[j].role == "window" for j in _above(downstream, i))
