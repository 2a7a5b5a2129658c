"""Shared window joins (paper 004, after Hammad et al., VLDB 2003): the joins of one script that
differ only in their windows are planned as one join and a route per query.

Ten queries ``SELECT * FROM A [Range w], B [Range w] WHERE A.loc = B.loc`` differing only in ``w``
plan as twenty windows and ten hash joins, each keeping both inputs for its own window. Shared,
they plan as one ``shared_window_join`` over the windows of the widest query, which keeps each
tuple once and probes once; each result carries its *slice*, the first query whose window holds
it, and each query's ``swj_route`` keeps the slices up to its own and ends the rows at its window
(src_cpp/operators/shared_window_join.h, swj_route.h). Every query gets exactly the rows of its
own join.

Joins share when all of this holds:
  * they are planned by the same script (an earlier script's operators hold state of rows pushed
    before), and none is on a loop;
  * each input is a ``[Range w]`` window over a stream operator, maybe under filters of that one
    source (the WHERE conjuncts the planner puts above the window: a filter of a stream commutes
    with a time window), with the same w on both sides;
  * they read the same stream operators through the same filters, with the same keys and residual
    (after sub-plan reuse, which has made equal windows of one stream one operator);
  * the engine runs the direct method (``lifetime="direct"``) and ``share_joins`` is on.

Every other join is left alone, and ``explain()`` says why (:func:`describe`). The pass runs after
sub-plan reuse and the fusions, and numbers the script's operators again in an order where each
comes after its inputs.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cq_py.planner import loops
from cq_py.planner.logical import Catalog, Node
from cq_py.planner.sharing import renumber, replace_node

SHARED = "shared_window_join"
ROUTE = "swj_route"
# A route, or a route fused with its query's ISTREAM (fusion.py's _istream_route).
ROUTES = (ROUTE, "swj_route_istream")


@dataclass(frozen=True)
class _Side:
    """A join input as sharing sees it: a [Range w] window of a stream operator, under filters."""

    source: int  # the stream operator the window reads
    window: int  # ticks
    filters: tuple[str, ...]  # the filters' predicates, bottom up, as plan JSON


def share_joins(
    cat: Catalog,
    first_new: int,
    new_id: Callable[[], int],
    *,
    enabled: bool = True,
    lifetime: str = "direct",
    bounded: dict[str, Any] | None = None,
) -> None:
    """Plans each group of this script's joins that differ only in their windows as one shared
    window join with a route per join, and notes on every other join of the script why it was
    left alone (``Node.note``, which ``explain()`` shows).

    ``bounded`` (``SwjOptions.plan_params``; None: exact mode) makes each shared join bounded
    (src_cpp/operators/swj_bounded.h): its results carry two tags, and each route takes the rows
    whose tags hold its query.

    Example: ``SELECT * FROM a [Range 5], b [Range 5] WHERE a.k = b.k`` and the same with
    ``[Range 9]`` become the windows [Range 9] of a and b, one ``shared_window_join`` with windows
    [5, 9], and two routes that the queries read where they read their joins.
    """
    joins = [n for i, n in sorted(cat.nodes.items()) if i >= first_new and n.op == "join"]
    if not joins:
        return
    if not enabled:
        for j in joins:
            j.note = "share_joins=False"
        return
    if lifetime != "direct":
        for j in joins:
            j.note = f"lifetime={lifetime!r} (a shared join runs under the direct method)"
        return
    on_loop = loops.loop_members(loops.new_part(cat, first_new))
    groups: dict[tuple[Any, ...], list[tuple[Node, int]]] = {}
    for j in joins:
        if j.id in on_loop:
            j.note = "it is on a loop"
            continue
        sides = []
        for name, i in zip(("left", "right"), j.inputs, strict=True):
            side = _side(cat, i)
            if isinstance(side, str):
                j.note = f"its {name} input is {side}, not a [Range w] window of a stream"
                break
            sides.append(side)
        else:
            left, right = sides
            if left.window != right.window:
                j.note = f"its windows differ ([Range {left.window}] and [Range {right.window}])"
                continue
            if left.window == 0:
                j.note = "its windows are [Range 0] (every pair is a ghost)"
                continue
            key = (
                left.source,
                left.filters,
                right.source,
                right.filters,
                _text(j.params.get("left_keys")),
                _text(j.params.get("right_keys")),
                _text(j.params.get("residual")),
                j.params.get("expiration"),
            )
            groups.setdefault(key, []).append((j, left.window))
    changed = False
    for members in groups.values():
        if len(members) < 2:
            members[0][0].note = (
                "no other join of this script reads the same streams through the same "
                "filters with the same keys and residual"
            )
            continue
        _share(cat, members, new_id, bounded)
        changed = True
    if changed:
        _drop_unread(cat, first_new)
        renumber_in_order(cat, first_new)


def _text(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _side(cat: Catalog, i: int) -> _Side | str:
    """Input ``i`` of a join as a [Range w] window of a stream under filters, or what it is."""
    filters: list[str] = []
    n = cat.nodes[i]
    while n.op == "filter" and n.kind == "relation":
        filters.append(_text(n.params["predicate"]))
        n = cat.nodes[n.inputs[0]]
    if n.op != "window" or n.params.get("kind") != "range":
        return f"#{n.id} {n.label}"
    return _Side(n.inputs[0], int(n.params["range"]["ticks"]), tuple(reversed(filters)))


def _share(
    cat: Catalog,
    members: list[tuple[Node, int]],
    new_id: Callable[[], int],
    bounded: dict[str, Any] | None = None,
) -> None:
    """One shared join over the inputs of the widest member, and a route in place of each."""
    members = sorted(members, key=lambda m: (m[1], m[0].id))
    windows = [w for _, w in members]
    widest = members[-1][0]
    segments = mqt_segments(windows)
    names = ", ".join(f"{j.owner} [Range {w}]" for j, w in members)
    shared = Node(
        new_id(),
        SHARED,
        list(widest.inputs),
        {**widest.params, "windows": windows, **({"bounded": bounded} if bounded else {})},
        [*widest.schema, ("slice", "int64"), *([("upto", "int64")] if bounded else [])],
        kind="relation",
        lifetime=widest.lifetime,
        owner=widest.owner,
        pos=widest.pos,
        label="SharedWindowJoin"
        + widest.label.removeprefix("HashJoin").removeprefix("Join")
        + f" windows {_list(windows)}"
        + (f" bounded {bounded['buffer']} per side, {bounded['scheduler']}" if bounded else ""),
        checks=list(widest.checks),
        note=f"members {names}; MQT segments {segments}",
    )
    cat.nodes[shared.id] = shared
    for k, (j, w) in enumerate(members, start=1):
        route = Node(
            new_id(),
            ROUTE,
            [shared.id],
            {"slice": k, "shrink": windows[-1] - w, **({"upto": True} if bounded else {})},
            list(j.schema),
            kind="relation",
            lifetime=j.lifetime,
            owner=j.owner,
            pos=j.pos,
            label=f"Route [Range {w}] (slices 1-{k})",
        )
        cat.nodes[route.id] = route
        replace_node(cat, j.id, route.id)


def _list(windows: list[int]) -> str:
    return "[" + ", ".join(str(w) for w in windows) + "]"


def mqt_segments(windows: list[int]) -> str:
    """The MQT segments of a shared join with these windows (ticks, non-decreasing, each at least
    1), as paper 004 §6.2 writes execution orders (src_cpp/schedulers/swj_scheduler.h).

    >>> mqt_segments([1, 2, 3, 3000])
    '1-3,4'
    """
    from cq_core import mqt_segments as core

    return core(windows)[1]


def _drop_unread(cat: Catalog, first_new: int) -> None:
    """Removes this script's windows and filters that nothing reads any more (the inputs of the
    joins a route replaced)."""
    outputs = {q.out_id for q in cat.queries.values()} | {q.sink_id for q in cat.queries.values()}
    while True:
        readers = cat.consumers()
        unread = [
            i
            for i, n in cat.nodes.items()
            if i >= first_new
            and not readers[i]
            and n.op in ("window", "filter")
            and i not in outputs
        ]
        if not unread:
            return
        for i in unread:
            del cat.nodes[i]


def renumber_in_order(cat: Catalog, first_new: int) -> None:
    """Numbers the operators from ``first_new`` on without gaps, each after the operators it reads
    (but for a loop's back edges), otherwise in their present order."""
    new = sorted(i for i in cat.nodes if i >= first_new)
    waiting = {i: sum(1 for x in cat.nodes[i].inputs if x in new and x != i) for i in new}
    readers: dict[int, list[int]] = {i: [] for i in new}
    for i in new:
        for x in cat.nodes[i].inputs:
            if x in readers and x != i:
                readers[x].append(i)
    ready = [i for i in new if waiting[i] == 0]
    heapq.heapify(ready)
    placed: list[int] = []
    left = set(new)
    while left:
        # A loop has no operator whose inputs are all placed: its first one goes next.
        i = heapq.heappop(ready) if ready else min(left)
        if i not in left:
            continue
        left.discard(i)
        placed.append(i)
        for r in readers[i]:
            waiting[r] -= 1
            if waiting[r] == 0 and r in left:
                heapq.heappush(ready, r)
    renumber(cat, first_new, placed)


def describe(cat: Catalog) -> list[str]:
    """``explain()``'s lines on joins: each shared window join with its windows, members and MQT
    segments, then each join left alone with the reason; nothing when the plan has no join."""
    shared = [n for _, n in sorted(cat.nodes.items()) if n.op == SHARED]
    # (A join left alone may have been fused with its ISTREAM since: fusion.fuse_istreams.)
    alone = [n for _, n in sorted(cat.nodes.items()) if n.op in ("join", "istream_join")]
    if not shared and not alone:
        return []
    lines = ["Shared joins:" + ("" if shared else " none")]
    for n in shared:
        routes = [
            r
            for r in sorted(cat.nodes)
            if cat.nodes[r].op in ROUTES and cat.nodes[r].inputs == [n.id]
        ]
        lines.append(
            f"  #{n.id} windows {_list(n.params['windows'])}; {n.note}; routes "
            + " ".join(f"#{r}" for r in routes)
        )
    if alone:
        lines.append("Joins left alone:")
        lines += [
            f"  #{n.id} [{n.owner}]: {n.note or 'planned by an earlier script'}" for n in alone
        ]
    return lines
