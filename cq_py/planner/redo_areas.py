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

:func:`redo_area` computes these from a plan given as :class:`Op` records; :func:`mark_redo_areas`
marks them on a script's plan (each member's ``redo_area`` key and ``txn_query``, ``gatekeeper``
on the gatekeepers, ``commit``, ``overlapping`` and ``replay`` on the commit operator), where the
scheduled executor keeps §6's constraint, commits each area's transactions and keeps, resets and
replays its redo queues, and ``explain()`` lists them.

An area's only exit is its commit operator (§3.4): :func:`plan_again` first plans again inside
each area the operators it needs that another area needs too (two queries windowing one
stream-valued query that reads a resource) or that an earlier script planned (running already),
so each area resets alone, and a query with a commit of its own whose area lies inside its
reader's is planned again inside the reader's, so its outputs leave through its own commit. Not
copied: a query committing a row at a time (Fig. 6's join: no window above its reads) and one
whose own area no reset can replay (Fig. 8's window join); their output leaves the reader's area
before the commit, which the executor sends once across resets. Under a strategy an ISTREAM or
DSTREAM committing an area with a window commits as RSTREAM with ``diff``: the executor takes
the difference between whole committed results (:func:`mark_redo_areas`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from cq_py.planner.shared_joins import renumber_in_order

__all__ = ["Op", "RedoArea", "mark_redo_areas", "plan_again", "redo_area"]


@dataclass(frozen=True)
class Op:
    """One operator of a query's plan: its ``id``; its ``role``: "reference", "window",
    "relation_to_stream", "fused_to_stream" (an aggregate fused with ISTREAM or DSTREAM),
    "source", "resource" (a resource read as an input) or "other"; its ``inputs`` (operator ids,
    by port); for a window, whether it ``overlaps`` (range r greater than slide s) and whether
    it counts ``rows``."""

    id: int
    role: str
    inputs: tuple[int, ...] = ()
    overlaps: bool = False
    rows: bool = False


@dataclass
class RedoArea:
    """A query's redo area: its ``commit`` operator, its ``members`` (commit operator and
    gatekeepers included, in plan order), its redo ``queues`` as (consumer, port) edges, its
    ``gatekeepers``, whether it holds an ``overlapping`` window, and the edges by which rows
    enter it from outside with no redo queue (``unqueued``: a reset would lose their rows, so a
    strategy refuses such an area)."""

    commit: int
    members: list[int] = field(default_factory=list)
    queues: list[tuple[int, int]] = field(default_factory=list)
    gatekeepers: list[int] = field(default_factory=list)
    overlapping: bool = False
    unqueued: list[tuple[int, int]] = field(default_factory=list)


def redo_area(ops: list[Op], root: int) -> RedoArea | None:
    """The redo area of the query whose plan is ``ops`` (producers before consumers) with output
    ``root``; None when it reads no resource.

    Fig. 4(a) of the paper: a stream s joined with resource x, then a window (r = 3, s = 2) and
    an aggregate, emitted by ISTREAM. The redo queue is on the join's input (rule 1), the join
    its gatekeeper, ISTREAM its commit operator:

    >>> plan = [Op(0, "source"), Op(1, "reference", (0,)), Op(2, "window", (1,), overlaps=True),
    ...         Op(3, "other", (2,)), Op(4, "relation_to_stream", (3,))]
    >>> area = redo_area(plan, 4)
    >>> area.commit, area.members, area.queues, area.gatekeepers, area.overlapping, area.unqueued
    (4, [1, 2, 3, 4], [(1, 0)], [1], True, [])
    """
    by_id = {op.id: op for op in ops}
    order = {op.id: k for k, op in enumerate(ops)}
    tree = _subtree(by_id, root)
    references = [i for i in tree if by_id[i].role == "reference"]
    if not references:
        return None
    # Whether a reference operator lies strictly upstream of each operator.
    upstream_ref = {
        i: any(
            by_id[j].role == "reference" for src in by_id[i].inputs for j in _subtree(by_id, src)
        )
        for i in tree
    }
    downstream = _downstream(by_id, tree)
    # The commit operator (Def. 3.2, in CQL's terms).
    windows_after_ref = [i for i in tree if by_id[i].role == "window" and upstream_ref[i]]
    top_window = _top(windows_after_ref, downstream, order)
    if top_window is not None:
        # A [Rows n] window's rows leave it with pending ends, which a reset cannot fix once
        # they have left: its area ends at the stream operator above it (an aggregate fused
        # with ISTREAM or DSTREAM too), whose output carries no end.
        roles = (
            ("relation_to_stream", "fused_to_stream")
            if by_id[top_window].rows
            else ("relation_to_stream",)
        )
        above = [i for i in _path_up(downstream, top_window, root) if by_id[i].role in roles]
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
    # The area: what lies between a gatekeeper and the commit operator, both included; with no
    # gatekeeper (no window: each row commits at once), what lies between a reference operator
    # and the commit operator, so that every read of an output's derivation is in its
    # transaction (two resources joined in a row: both reads).
    subtrees = {i: _subtree(by_id, i) for i in _subtree(by_id, commit)}
    starts = gatekeepers or references
    members = {i for i, below in subtrees.items() if any(g in below for g in starts)}
    members.add(commit)
    listed = sorted(members, key=order.__getitem__)
    overlapping = any(by_id[m].role == "window" and by_id[m].overlaps for m in listed)
    unqueued = [
        (m, p)
        for m in listed
        for p, src in enumerate(by_id[m].inputs)
        if src not in members and by_id[src].role != "resource" and (m, p) not in queues
    ]
    return RedoArea(commit, listed, queues, gatekeepers, overlapping, unqueued if queues else [])


def _reach(start: list[int], step: Callable[[int], Iterable[int]]) -> set[int]:
    """Every operator reached from ``start`` (included) taking ``step`` (its inputs, or its
    consumers) again and again."""
    seen, todo = set(), list(start)
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo += step(i)
    return seen


def _subtree(by_id: dict[int, Op], root: int) -> set[int]:
    return _reach([root], lambda i: by_id[i].inputs)


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
    """What lies strictly downstream of ``i``."""
    return _reach(downstream.get(i, []), lambda j: downstream.get(j, []))


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


#: The plan's operators by the role they play in paper 002's areas.
_REFERENCE = {"reference_join", "model_apply"}
_WINDOWS = {"window", "slide_window", "row_window", "partition_row_window"}
_RELATION_TO_STREAM = {"istream", "dstream", "rstream", "istream_join", "swj_route_istream"}
_FUSED_TO_STREAM = {"istream_aggregate", "dstream_aggregate"}
_SOURCES = {"stream_scan", "relation_scan"}


def _windows_of(node: Any) -> list[dict[str, Any]]:
    """The windows operator ``node`` applies, as ``{"kind", "range", "slide", "rows"}`` (ticks):
    a window operator's own, or those a join planned with its windows inside holds; none for
    other operators."""
    op, p = node.op, node.params
    if op == "slide_window":
        return [{"kind": "slide", "range": p["range"]["ticks"], "slide": p["slide"]["ticks"]}]
    if op == "window":
        return [{"kind": p.get("kind"), "range": p.get("range", {}).get("ticks", 0)}]
    if op in _WINDOWS:  # a row window slides by one row
        return [{"kind": "rows", "rows": p["rows"]}]
    fused = p.get("windows") or ([p["window"]] if isinstance(p.get("window"), dict) else [])
    return [{"kind": w.get("kind"), "range": w.get("range", {}).get("ticks", 0)} for w in fused]


def _overlaps(w: dict[str, Any]) -> bool:
    """Whether window ``w`` holds a row longer than it slides (r > s)."""
    kind = w["kind"]
    if kind == "slide":
        return bool(w["range"] > w["slide"])
    if kind == "rows":
        return bool(w["rows"] > 1)
    return kind == "unbounded" or (kind == "range" and bool(w["range"] > 1))


def _lookback(w: dict[str, Any]) -> int | None:
    """How far back (ticks) window ``w``'s rows at t reach in its input: [Range r] r (its rows
    ending at t started at t − r), [Range r Slide s] r + s, [Now] none; None when no tick
    bounds it (unbounded, rows)."""
    kind = w["kind"]
    if kind == "slide":
        return int(w["range"] + w["slide"])
    if kind == "range":
        return int(w["range"])
    return 0 if kind == "now" else None


def _role(node: Any) -> Op:
    """The :class:`Op` of a planned operator (cq_py.planner.logical.Node). A join planned with
    its windows inside (ISTREAM of a join of windows) reads streams and windows them: a window
    to §3.4.1 rule (2), whose stream inputs get redo queues."""
    op = node.op
    if op in _REFERENCE:
        return Op(node.id, "reference", tuple(node.inputs))
    windows = _windows_of(node)
    if windows:
        rows = windows[0]["kind"] == "rows"
        return Op(node.id, "window", tuple(node.inputs), any(map(_overlaps, windows)), rows)
    if op in _RELATION_TO_STREAM:
        return Op(node.id, "relation_to_stream", tuple(node.inputs))
    if op in _FUSED_TO_STREAM:
        return Op(node.id, "fused_to_stream", tuple(node.inputs))
    if op in _SOURCES:
        return Op(node.id, "source", tuple(node.inputs))
    return Op(node.id, "other", tuple(node.inputs))


def _top_windows(cat: Any, members: list[int]) -> list[int]:
    """The window operators among ``members`` with no other one above them: where the area's
    transactions end (the instants they change)."""
    windows = [m for m in members if cat.nodes[m].op in _WINDOWS]
    return [w for w in windows if not any(v != w and w in _subtree_nodes(cat, v) for v in windows)]


def mark_redo_areas(cat: Any, first_new: int, diff_commit: bool = False) -> dict[str, RedoArea]:
    """For each query a script added that reads a resource or calls a model: its redo area,
    marked on the plan for the scheduled executor (each member's ``redo_area``: its commit
    operator's id; ``gatekeeper`` on the gatekeepers) and for explain() (notes). Returns the
    areas by query name.

    An area's only exit is its commit operator (§3.4): the operators it needs that another
    area needs too (neither holding the other), or that an earlier script planned (already
    running, marked for their own query), are first planned again inside it
    (:func:`plan_again`). An operator already in another query's area keeps that one (an area
    holding another's whole area, as Fig. 8's alpha holds the window join's, is that query's too).

    With ``diff_commit`` (a transaction strategy), an ISTREAM or DSTREAM that commits an area
    holding a window is planned as RSTREAM with ``diff`` ("istream" or "dstream"): the executor
    emits at each commit the bag difference of R(t) and the R it committed last, which it keeps
    across resets, so a result is compared with what was committed, not with R recomputed at a
    later state, and no row of an earlier commit stays in a later result.
    """
    out = _areas(cat, first_new)
    copies: list[tuple[Any, Any, str]] = []
    for _ in range(len(out)):  # (a copy made for one area may change what another needs)
        made = plan_again(cat, first_new, out)
        if not made:
            break
        copies += made
        out = _areas(cat, first_new)
    for planned, original, name in copies:
        if cat.nodes.get(planned.id) is planned and name in out:
            _note(
                planned,
                f"planned again inside the redo area of #{out[name].commit}, from "
                f"#{original.id} (paper 002 §3.4)",
            )
    # Areas with redo queues first: a query whose reference operator another query windows (a
    # stream-valued query read by a later one) commits each row at once on its own, and its
    # operator belongs to the reader's area.
    # Among areas with queues, the larger first: a query read by another (Fig. 8's window join,
    # read by alpha's [Rows 10]) lies inside its reader's area, whose commit ends the reads.
    for name, area in sorted(out.items(), key=lambda kv: (not kv[1].queues, -len(kv[1].members))):
        label = cat.queries[name].name
        if not area.queues:
            node = cat.nodes[area.commit]
            if "redo_area" not in node.params:
                _note(node, f"commits {label}'s transactions, a row at a time (paper 002 §3.2)")
                # An area of its own (no queue, no gatekeeper): its reads still form transactions,
                # and the executor keeps the rows entering it to redo an aborted one.
                for m in area.members:
                    if "redo_area" not in cat.nodes[m].params:
                        cat.nodes[m].params.update(redo_area=area.commit, txn_query=label)
                node.params["commit"] = True
            continue
        owners = {cat.nodes[m].params.get("redo_area") for m in area.members} - {None}
        shared = [
            cat.queries[n].name
            for n, a in out.items()
            if a.commit in owners and a.commit != area.commit
        ]
        # Part of this area is another query's still: plan_again left the shared operators
        # where they were (a commit operator both areas share), so a strategy refuses to reset
        # it. A query whose whole area lies inside its reader's (Fig. 8's window join under
        # alpha) has no commit of its own.
        partial = shared and any("redo_area" not in cat.nodes[m].params for m in area.members)
        gates = set(area.gatekeepers)
        tops = _top_windows(cat, area.members)
        for m in area.members:
            node = cat.nodes[m]
            if node.params.get("redo_area", area.commit) != area.commit:
                continue
            node.params["redo_area"] = area.commit
            # The query named in a writer's lock timeout (the transaction manager's holder).
            node.params["txn_query"] = label
            if m in gates:
                node.params["gatekeeper"] = True
            if m in tops:
                # Where the area's transactions end: at the instants this window changes.
                node.params["top_window"] = True
            if m == area.commit:
                node.params["commit"] = True
                node.params["overlapping"] = area.overlapping
                # (Not over [Now]: R changes between ticks there, where RSTREAM emits nothing.)
                now = any(w["kind"] == "now" for t in tops for w in _windows_of(cat.nodes[t]))
                # (And only where the top windows are this area's: their changes end its
                # transactions, the instants the difference is taken at.)
                own = all(cat.nodes[t].params.get("redo_area") == area.commit for t in tops)
                if diff_commit and tops and own and not now and node.op in ("istream", "dstream"):
                    node.params["diff"] = node.op
                    node.op = "rstream"
                    _note(
                        node,
                        f"planned as RSTREAM, its {node.params['diff'].upper()} "
                        "computed at the commit from whole results (paper 002 §3.5)",
                    )
                replay = None if partial or area.unqueued else _replay_window(cat, area)
                if area.unqueued:
                    # (Checked whatever the windows: an optimistic abort resets any area.)
                    node.params["overlapping"] = True
                    entry, port = area.unqueued[0]
                    node.params["replay_refused"] = (
                        f"rows enter its redo area at #{entry} (input {port}) without a redo "
                        "queue, so a reset would lose them"
                    )
                if (
                    replay is not None
                    and area.overlapping
                    and node.op == "rstream"
                    and "diff" not in node.params
                    and replay.get("slide", 1) > 1
                ):
                    # RSTREAM repeats R(t) between the slides, released without a commit: a
                    # replay of the current contents would read them again, outside the
                    # transaction that committed them (a differential against txn='none' found
                    # them lost when only the contents after the next slide were replayed).
                    replay = None
                    node.params["replay_refused"] = (
                        "RSTREAM over an overlapping window that slides by more than one tick "
                        "repeats R(t) between the slides, which a reset does not rebuild yet; "
                        "use ISTREAM or DSTREAM, or a slide of one tick"
                    )
                if replay is not None and area.overlapping and node.op in _WINDOWS:
                    # The overlapping window itself commits (an ISTREAM or DSTREAM fused with an
                    # aggregate above it, planned without a strategy): its rows leave with their
                    # ends and stay in later results whose other rows later transactions read,
                    # which no reset can make again. (Under a strategy the planner does not fuse
                    # them: planner.diff_commit.)
                    replay = None
                    node.params["replay_refused"] = (
                        "ISTREAM or DSTREAM of an aggregate over an overlapping window: the "
                        "window's rows leave the redo area when committed but stay in later "
                        "results, which a write between two commits would make from two states "
                        "of a resource; use RSTREAM over a window sliding by one tick, or a "
                        "window whose slide equals its range"
                    )
                if replay is not None:
                    node.params["replay"] = replay
                elif partial and not area.unqueued:
                    node.params["replay_refused"] = (
                        f"it shares operators that read a resource with query '{shared[0]}', "
                        "including a commit operator, which are not planned again inside each "
                        "redo area (paper 002 §3.4): read the resource in one of them only"
                    )
            if m == area.commit:
                _note(
                    node,
                    f"commits {label}'s transactions (paper 002 §3.2)"
                    + ("; its redo area holds an overlapping window" if area.overlapping else ""),
                )
            if m in gates:
                ports = ", ".join(str(p) for c, p in area.queues if c == m)
                _note(
                    node,
                    f"gatekeeper of the redo area of #{area.commit} (§6), its input {ports} queued",
                )
            elif m != area.commit:
                _note(node, f"in the redo area of #{area.commit} (§3.4)")
    for name, area in out.items():
        # A query with windows above its reads whose operators stayed in a reader's area (its
        # own area has no replay: Fig. 8's window join) commits nothing of its own, and each
        # row of a pair it emits was read by the transaction its row came in: its results leave
        # at that area's commits, which find the kept reads of each still current.
        holder = cat.nodes[area.commit].params.get("redo_area")
        label = cat.queries[name].name
        if area.queues and holder not in (None, area.commit):
            # (Its operators in that area whose output leaves it: toward its own output.)
            inside = {i for i, n in cat.nodes.items() if n.params.get("redo_area") == holder}
            read_outside = {j for i, n in cat.nodes.items() if i not in inside for j in n.inputs}
            for m in inside & read_outside:
                if cat.nodes[m].owner == label:
                    cat.nodes[m].params["held_exit"] = True
            _note(
                cat.nodes[area.commit],
                f"{label}'s own results leave at the commits of #{holder}, "
                "whose redo area holds its operators (its own area has no replay yet, paper 002 "
                "§3.4)",
            )
    return out


def _areas(cat: Any, first_new: int) -> dict[str, RedoArea]:
    """The redo area of each query added since ``first_new`` that reads a resource, by name."""
    out: dict[str, RedoArea] = {}
    for name, q in cat.queries.items():
        if q.sink_id < first_new:
            continue
        tree = _subtree_nodes(cat, q.out_id)
        if not any(cat.nodes[i].op in _REFERENCE for i in tree):
            continue
        area = redo_area([_role(cat.nodes[i]) for i in sorted(tree)], q.out_id)
        if area is not None:
            out[name] = area
    return out


#: Plan keys of an area's marks: a copy is marked for its own area, not its original's.
_MARKS = (
    "redo_area",
    "held_exit",
    "txn_query",
    "gatekeeper",
    "top_window",
    "commit",
    "overlapping",
    "replay",
    "replay_refused",
)


def plan_again(cat: Any, first_new: int, areas: dict[str, RedoArea]) -> list[tuple[Any, Any, str]]:
    """Plans again, inside each redo area of ``areas`` (by query name) whose commit operator is
    new, the members it cannot hold alone (paper 002 §3.4: an area's only exit is its commit
    operator), and returns the copies as (copy, original, query name):

    * members of another area too, when neither area holds the other (two queries windowing one
      stream-valued query that reads a resource: a reset of one area would rebuild the
      operators the other reads), or when the other's lies inside it and has redo queues (a
      query with a window above its reads, read by another: its outputs leave through its own
      commit, not before this area's);
    * members an earlier script planned (``id < first_new``): they run already, marked for their
      own query, and a query registered now reads its copies from the engine's progress on,
      which is what it would see of their output (SEMANTICS.md §4.5);

    and every member below those in the area (the copies read copies). What feeds the area from
    outside (a stream, a window below a gatekeeper) stays shared; the originals stay with the
    query that planned them (its own output, its own area), but for a query of this script whose
    own area no reset could replay (Fig. 8's window join, two top windows): its operators stay
    whole in its largest reader's area, as with one reader. Originals of this script that no
    operator reads any more go. The copies are numbered after what they read
    (:func:`renumber_in_order`), as :func:`redo_area` takes a plan in id order.

    Two queries windowing j, which joins s with resource x: both areas need j's join, project
    and ISTREAM (#2 #3 #4), so each gets its own, and j's output keeps the originals:

    >>> from cq_py.planner import Catalog, Planner
    >>> from cq_py.parser import parse
    >>> cat, _ = Planner(Catalog(), executor="scheduled").plan(parse(
    ...     "REGISTER STREAM s(k BIGINT, a BIGINT);"
    ...     "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
    ...     "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
    ...     "REGISTER QUERY q1 AS ISTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);"
    ...     "REGISTER QUERY q2 AS ISTREAM(SELECT MAX(v) AS m FROM j [Range 3 Slide 1]);"))
    >>> [(i, n.op, n.owner) for i, n in cat.nodes.items() if n.op == "reference_join"]
    [(2, 'reference_join', 'j'), (6, 'reference_join', 'q1'), (13, 'reference_join', 'q2')]
    >>> cat.nodes[6].note.split("; ")[0]
    'planned again inside the redo area of #9, from #2 (paper 002 §3.4)'
    """
    needs: dict[str, set[int]] = {}
    for name, area in areas.items():
        mine = set(area.members)
        if area.commit < first_new or area.commit not in cat.nodes:
            continue
        need = {m for m in mine if m < first_new}
        for other, theirs in areas.items():
            held = set(theirs.members)
            if other == name or not mine & held:
                continue
            # A query with a commit of its own (a window above its reads: redo queues) whose
            # area lies inside this one: its output must leave through that commit, not before
            # this area's, so this area plans its operators again (a differential with an
            # updater found its outputs mixing two states of a resource under 2pl).
            # (Only where that commit is the query's output: a window committing itself, fused
            # with ISTREAM below the query's top, is no exit a copy could keep.)
            nested = (
                held < mine and bool(theirs.queues) and theirs.commit == cat.queries[other].out_id
            )
            if nested or not (mine <= held or held <= mine):
                need |= mine & held
        if not need or area.commit in need:
            continue  # (a shared commit operator: left as it is, and refused to reset)
        # Below a copied member, what it reads in the area is copied too: else the original
        # would read it from outside the area.
        needs[name] = _reach(sorted(need), _inputs_among(cat, mine))
    # An inner query whose area no reset can replay (Fig. 8's window join: two top windows)
    # keeps its operators in its largest reader's area, as with one reader (its output leaving
    # that area once across resets); left with the originals alone, its own area would refuse.
    for inner, area in areas.items():
        members = set(area.members)
        unreplayable = area.queues and (area.unqueued or _replay_window(cat, area) is None)
        if inner in needs or not unreplayable or not area.overlapping or min(members) < first_new:
            continue
        readers = [n for n, need in needs.items() if members <= need]
        if readers:
            keeper = max(readers, key=lambda n: len(areas[n].members))
            needs[keeper] -= members
            if not needs[keeper]:
                del needs[keeper]
    made: list[tuple[Any, Any, str]] = []
    for name, need in needs.items():
        owner = cat.queries[name].name
        copied: dict[int, int] = {}
        for m in sorted(need):  # (ids in plan order: producers first)
            original = cat.nodes[m]
            params = {k: v for k, v in copy.deepcopy(original.params).items() if k not in _MARKS}
            # (An earlier script's commit by ISTREAM or DSTREAM planned as RSTREAM with its
            # difference taken at that commit: inside this area it is no commit, so it is again
            # the operator it was written as.)
            op = params.pop("diff", None) or original.op
            node = replace(
                original,
                op=op,
                id=cat.next_id,
                inputs=[copied.get(i, i) for i in original.inputs],
                params=params,
                schema=list(original.schema),
                owner=owner,
                note="",
                checks=list(original.checks),
            )
            cat.next_id += 1
            cat.nodes[node.id] = node
            copied[m] = node.id
            made.append((node, original, name))
        for m in areas[name].members:
            if m not in need:
                cat.nodes[m].inputs = [copied.get(i, i) for i in cat.nodes[m].inputs]
    if not made:
        return made
    # What no operator reads any more (a window two readers shared, each now reading its own).
    kept = {q.out_id for q in cat.queries.values()} | {q.sink_id for q in cat.queries.values()}
    candidates = {i for need in needs.values() for i in need} | {c.id for c, _, _ in made}
    while True:
        read = {i for n in cat.nodes.values() for i in n.inputs}
        gone = {i for i in candidates if i >= first_new and i not in read and i not in kept}
        gone &= set(cat.nodes)
        if not gone:
            break
        for i in gone:
            del cat.nodes[i]
    renumber_in_order(cat, first_new)
    return [(c, o, name) for c, o, name in made if cat.nodes.get(c.id) is c]


def _inputs_among(cat: Any, members: set[int]) -> Callable[[int], list[int]]:
    """The inputs of an operator that are among ``members`` (a step for :func:`_reach`)."""
    return lambda i: [j for j in cat.nodes[i].inputs if j in members]


def _replay_window(cat: Any, area: RedoArea) -> dict[str, Any] | None:
    """Where a reset area replays from (§3.4, §4.1.3), for the executor: the area's top window
    (``range`` and ``slide`` in ticks, or ``rows``), whether the replay must rebuild its
    ``current`` contents or only those after its next slide, and the ``lookback`` in ticks its
    input rows need from the sources through the windows below it.

    The contents after the next slide are enough when the window itself commits, or RSTREAM.
    ISTREAM and DSTREAM compare each instant with the one before, whose rows a replay must make
    again (a row leaving at the next slide cancels an equal row entering); and a [Rows n]
    window changes with every row, so its current rows are replayed. Below the top window, a
    [Range r] window reaches r ticks back (its rows ending at t started at t − r), [Range r
    Slide s] r + s, [Now] none, and a join planned with its windows inside its widest. None for
    a shape no replay rebuilds (several top windows, an unbounded or row window below the top
    one); the executor then refuses to reset such an area."""
    members = set(area.members)
    tops = _top_windows(cat, area.members)
    if len(tops) != 1:
        return None
    top = cat.nodes[tops[0]]
    lookback: dict[int, int | None] = {}

    def reach(i: int) -> int | None:
        """How far back (ticks) the rows leaving member ``i`` need its area's inputs."""
        if i not in lookback:
            own = [_lookback(w) for w in _windows_of(cat.nodes[i])]
            below = [reach(j) for j in cat.nodes[i].inputs if j in members]
            known = [b for b in own + below if b is not None]
            lookback[i] = (
                None
                if len(known) < len(own) + len(below)
                else max([0, *known[: len(own)]]) + max([0, *known[len(own) :]])
            )
        return lookback[i]

    below = [reach(j) for j in top.inputs if j in members]
    known = [b for b in below if b is not None]
    if len(known) < len(below):
        return None
    commit = cat.nodes[area.commit].op
    out: dict[str, Any] = {"lookback": max([0, *known])}
    if top.op == "row_window":
        return {**out, "rows": int(top.params["rows"]), "current": True}
    if top.op == "slide_window":
        rng, slide = int(top.params["range"]["ticks"]), int(top.params["slide"]["ticks"])
    elif top.op == "window" and top.params.get("kind") == "range":
        rng, slide = int(top.params["range"]["ticks"]), 1
    else:
        return None
    current = commit in ("istream", "dstream")
    return {**out, "range": rng, "slide": slide, "current": current}


def _note(node: Any, what: str) -> None:
    node.note = f"{node.note}; {what}" if node.note else what


def _subtree_nodes(cat: Any, root: int) -> set[int]:
    return _reach([root], lambda i: [j for j in cat.nodes[i].inputs if j in cat.nodes])
