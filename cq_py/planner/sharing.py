"""Sub-plan reuse: operators that compute the same thing from the same inputs are planned once.

Flink's optimizer does the same by default (``table.optimizer.reuse-sub-plan-enabled``). In CQL
scripts it is common: paper 000's Fig. 7 with one small query has ``avg_delay_0`` and
``all_avg_delay`` both ``ISTREAM(SELECT * FROM avg_0) <Now>``, so two identical ISTREAMs would
keep the same relation twice and two delays would feed the same rows back twice, at every instant
of the loop. After this pass both queries' outputs read one delay.

It runs once the script is planned whole — references resolved, ``auto_delay``'s delays inserted,
lifetimes known — so it never changes what any query computes: ``auto_delay`` rewires every
reader of the stream operator it delays, which is only the same as before for operators that were
already one.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from cq_py.planner.logical import Catalog, Node
from cq_py.planner.operators import descriptor


def _key(n: Node) -> tuple[Any, ...]:
    return (
        n.op,
        tuple(n.inputs),
        json.dumps(n.params, sort_keys=True, default=str),
        tuple(tuple(c) for c in n.schema),
        n.kind,
        n.lifetime,
        n.inserted,
    )


def share_subplans(cat: Catalog, first_new: int) -> None:
    """Merges each operator added since ``first_new`` into an earlier one of the same script that
    reads the same inputs with the same parameters, until none is left, then numbers the remaining
    new operators without gaps. Operators of earlier scripts are never reused: they hold state
    from rows pushed before this script, which a query registered now must not see (its windows
    and aggregates start empty, as if it were alone).

    Example: for ``REGISTER QUERY a AS ISTREAM(SELECT * FROM r) <Now>; REGISTER QUERY b AS
    ISTREAM(SELECT * FROM r) <Now>;`` the ISTREAM and the delay of ``b`` go, and ``b``'s output
    reads ``a``'s delay.
    """
    any_merged = False
    changed = True
    while changed:  # merging two operators may make their readers identical in turn
        changed = False
        first: dict[tuple[Any, ...], int] = {}
        # Kept until a merge changes the graph: rebuilt per pair, they made a union of a thousand
        # branches over one window quadratic to plan.
        readers = cat.consumers()
        known: dict[int, set[int]] = {}
        for i in sorted(cat.nodes):
            n = cat.nodes[i]
            if i < first_new or not descriptor(n.op).shareable:
                continue
            k = _key(n)
            if k not in first:
                first[k] = i
            elif not _read_together(cat, readers, known, i, first[k]):
                replace_node(cat, i, first[k])
                readers, known = cat.consumers(), {}
                any_merged = changed = True
    if any_merged:
        renumber(cat, first_new)


def _receivers(
    cat: Catalog, readers: dict[int, list[int]], node: int, stop: Collection[int] = ()
) -> set[int]:
    """The operators that see the tuples of ``node`` with their identity: its readers, and the
    readers of those that pass tuples on unchanged (``readers``: ``cat.consumers()``). The walk
    ends at the first one in ``stop``."""
    seen: set[int] = set()
    todo = [node]
    while todo:
        for r in readers[todo.pop()]:
            if r not in seen:
                seen.add(r)
                if r in stop:
                    return seen
                if descriptor(cat.nodes[r].op).keeps_identity:
                    todo.append(r)
    return seen


def _read_together(
    cat: Catalog, readers: dict[int, list[int]], known: dict[int, set[int]], a: int, b: int
) -> bool:
    """Whether merging ``a`` into ``b`` would make one operator see the same relation tuple
    twice (``X EXCEPT X``, a self-join, a union of two filters of one window). Operators keep
    one slot per expiration holder id, so a tuple must reach each of them once. Streams carry no
    such identity: a stream tuple read twice is just two tuples. ``known`` keeps the receivers of
    each ``b`` while the graph is unchanged: a thousand branches of a union over one window are
    each compared with the first, whose receivers are the whole chain of unions."""
    if cat.nodes[a].kind == "stream":
        return False
    if b not in known:
        known[b] = _receivers(cat, readers, b)
    return bool(_receivers(cat, readers, a, known[b]) & known[b])


def replace_node(cat: Catalog, old: int, new: int) -> None:
    """Removes operator ``old``: its readers and its query read ``new`` instead."""
    del cat.nodes[old]
    for n in cat.nodes.values():
        n.inputs = [new if i == old else i for i in n.inputs]
    for q in cat.queries.values():
        if q.out_id == old:
            q.out_id = new


def renumber(cat: Catalog, first_new: int, order: list[int] | None = None) -> None:
    """Numbers the operators from ``first_new`` on without gaps, in their order (or in
    ``order``, which lists each of them once)."""
    if order is None:
        order = sorted(i for i in cat.nodes if i >= first_new)
    ids = {old: first_new + k for k, old in enumerate(order)}

    def m(i: int) -> int:
        return ids.get(i, i)

    cat.nodes = {m(i): n for i, n in sorted(cat.nodes.items(), key=lambda kv: m(kv[0]))}
    for n in cat.nodes.values():
        n.id = m(n.id)
        n.inputs = [m(i) for i in n.inputs]
    for q in cat.queries.values():
        q.out_id, q.sink_id = m(q.out_id), m(q.sink_id)
    for s in cat.streams.values():
        s.scan_id = m(s.scan_id)
    cat.next_id = first_new + len(ids)
