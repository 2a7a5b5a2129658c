"""Each relation tuple reaches each operator once under its expiration holder.

A holder id is a pending tuple's identity downstream (src_cpp/lifetime/LIFETIMES.md): select,
project and union all pass it on, and every stateful consumer keeps one slot per id. A bag union
of two branches over the same relation — ``SELECT * FROM v UNION ALL SELECT * FROM v``, or two
filters of one row window — would bring a pending tuple twice under one id. This pass gives the
later branch its own ids: a ``reissue_holders`` operator, which hands out fresh ids and forwards
each end under them.
"""

from __future__ import annotations

from collections.abc import Callable

from cq_py.planner.logical import PENDING, Catalog, Node
from cq_py.planner.operators import descriptor


def identity_sources(cat: Catalog, node: int, known: dict[int, set[int]] | None = None) -> set[int]:
    """The operators whose holder ids reach ``node``'s output unchanged: up through filters,
    projections and unions to the first operator of another kind. ``known`` holds answers for
    other operators found earlier in the same graph, taken as they are (separate_identities keeps
    only the pending ones): a chain of a thousand unions is then walked once, not once per union."""
    out: set[int] = set()
    seen: set[int] = set()
    todo = [node]
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        n = cat.nodes[x]
        if known is not None and x in known:
            out |= known[x]
        elif descriptor(n.op).keeps_identity and n.inputs:
            todo.extend(n.inputs)
        else:
            out.add(x)
    return out


def separate_identities(cat: Catalog, first_new: int, new_id: Callable[[], int]) -> None:
    """Puts a ``reissue_holders`` operator on each branch of a relation's union that carries
    pending tuples an earlier branch carries too.

    Example: ``REGISTER QUERY v AS SELECT a FROM s [Rows 1]; REGISTER QUERY w AS SELECT * FROM v
    UNION ALL SELECT * FROM v;`` reads v's row window directly on the first branch and through a
    reissue on the second.
    """
    # The pending sources reaching each operator, found so far: a chain of unions is walked once.
    known: dict[int, set[int]] = {}
    for uid in sorted(i for i in cat.nodes if i >= first_new):
        union = cat.nodes[uid]
        if union.op != "union_all" or union.kind != "relation":
            continue
        carried: set[int] = set()
        for port, i in enumerate(list(union.inputs)):
            if i not in known:
                known[i] = {
                    s for s in identity_sources(cat, i, known) if cat.nodes[s].lifetime == PENDING
                }
            pending = known[i]
            if pending & carried:
                src = cat.nodes[i]
                relay = Node(
                    new_id(),
                    "reissue_holders",
                    [i],
                    {},
                    list(src.schema),
                    kind=src.kind,
                    lifetime=PENDING,
                    owner=union.owner,
                    pos=union.pos,
                    label="Reissue expiration holders (the tuples come twice)",
                )
                cat.nodes[relay.id] = relay
                union.inputs[port] = relay.id
                pending = {relay.id}
                known.clear()  # what reached through this union has changed
            carried |= pending
