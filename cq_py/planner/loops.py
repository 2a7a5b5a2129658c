"""Loops of the operator graph (paper 000 §3): the delay rule and the DTS execution order.

A cycle of query references must pass through a delay, or the query contradicts itself (§2.2). The
check finds the strongly connected parts of the graph without its delay operators; any such part
with a cycle is a loop without a delay. The DTS order (§3.2, Fig. 6) orders the graph's strongly
connected parts topologically and, inside each loop, cuts the edges leaving its delays (their
output lies in the future) and orders the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Union

from cq_py.errors import CQLSemanticError
from cq_py.parser import ast
from cq_py.planner.logical import STREAM, Catalog, Node
from cq_py.planner.operators import descriptor


def successors(
    nodes: dict[int, Node], keep: Callable[[int, int], bool] = lambda a, b: True
) -> dict[int, list[int]]:
    """Edges producer → consumer among ``nodes``, those for which keep(producer, consumer)."""
    succ: dict[int, list[int]] = {i: [] for i in nodes}
    for n in nodes.values():
        for i in n.inputs:
            if i in nodes and keep(i, n.id):
                succ[i].append(n.id)
    for v in succ.values():
        v.sort()
    return succ


def strongly_connected(vertices: Iterable[int], succ: dict[int, list[int]]) -> list[list[int]]:
    """Tarjan's algorithm, iterative (plans can be deep); the components in reverse topological
    order."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in sorted(vertices):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            ws = succ.get(v, [])
            if i < len(ws):
                work.append((v, i + 1))
                w = ws[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def is_loop(comp: list[int], succ: dict[int, list[int]]) -> bool:
    return len(comp) > 1 or comp[0] in succ.get(comp[0], [])


def find_cycle(comp: list[int], succ: dict[int, list[int]]) -> list[int]:
    """One cycle inside a strongly connected component, as a list of nodes (first = last - 1)."""
    members = set(comp)
    start = comp[0]
    parent: dict[int, int] = {}
    frontier = [start]
    seen = {start}
    while frontier:  # BFS for the shortest way back to `start`
        nxt = []
        for v in frontier:
            for w in succ[v]:
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return list(reversed(path))
                if w not in seen:
                    seen.add(w)
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def queries_on(cycle: list[int], cat: Catalog) -> list[str]:
    names: list[str] = []
    for i in cycle:
        owner = cat.nodes[i].owner
        if owner and (not names or names[-1] != owner):
            names.append(owner)
    if len(names) > 1 and names[0] == names[-1]:
        names.pop()
    return names


def new_part(cat: Catalog, first_new: int) -> dict[int, Node]:
    """The operators a script added (ids from ``first_new`` on). Every loop through one of them
    lies among them: an operator of an earlier script never reads a later one, so a cycle cannot
    leave the new part. Checking loops there alone keeps registering a query independent of how
    many were registered before (issue 31, 4g).

    >>> cat = Catalog(nodes={0: Node(0, "stream_scan", []), 1: Node(1, "window", [0])})
    >>> sorted(new_part(cat, 1))
    [1]
    """
    return {i: n for i, n in cat.nodes.items() if i >= first_new}


def loop_members(nodes: dict[int, Node]) -> set[int]:
    """The operators of ``nodes`` that lie on a loop among them."""
    succ = successors(nodes)
    return {v for comp in strongly_connected(nodes, succ) if is_loop(comp, succ) for v in comp}


def delay_free_loops(cat: Catalog, first_new: int = 0) -> list[list[int]]:
    nodes = {i: n for i, n in new_part(cat, first_new).items() if n.op != "delay"}
    succ = successors(nodes)
    return [find_cycle(c, succ) for c in strongly_connected(nodes, succ) if is_loop(c, succ)]


def check(
    cat: Catalog,
    first_new: int,
    auto_delay: bool,
    err: Callable[[str, ast.Pos], CQLSemanticError],
    new_id: Callable[[], int],
) -> None:
    """Rejects loops without a delay, or (auto_delay) inserts an ε delay after one stream operator
    of each such loop, rewiring the stream operator's consumers to read the delay."""
    while True:
        found = delay_free_loops(cat, first_new)
        if not found:
            return
        cycle = found[0]
        names = queries_on(cycle, cat)
        first = cat.queries.get(names[0].lower()) if names else None
        pos = first.pos if first else cat.nodes[cycle[0]].pos
        ring = " → ".join(names + names[:1])
        if not auto_delay:
            raise err(
                f"the queries {ring} form a loop without a delay: a loop must pass through a "
                "delay (paper 000 §3.1); write <Now> after the ISTREAM(...), DSTREAM(...) or "
                "RSTREAM(...) of one of them, or create the engine with auto_delay=True",
                pos,
            )
        stream_ops = [i for i in cycle if descriptor(cat.nodes[i].op).relation_to_stream]
        if not stream_ops:
            raise err(
                f"the queries {ring} form a loop of relations without a stream operator; "
                "a delay applies to streams only, so no delay can be inserted: turn one of "
                "them into a stream with ISTREAM(...) <Now>",
                pos,
            )
        insert_delay_after(cat, cat.nodes[min(stream_ops)], new_id)


def insert_delay_after(cat: Catalog, op: Node, new_id: Callable[[], int]) -> Node:
    delay = Node(
        new_id(),
        "delay",
        [op.id],
        {"duration": {"ticks": 0, "steps": 1}},
        op.schema,
        kind="stream",
        lifetime=STREAM,
        owner=op.owner,
        pos=op.pos,
        label=f"Delay <Now> (ε) — inserted by auto_delay after the {op.op.upper()} of {op.owner}",
        inserted=True,
    )
    for n in cat.nodes.values():
        n.inputs = [delay.id if i == op.id else i for i in n.inputs]
    for q in cat.queries.values():
        if q.out_id == op.id:
            q.out_id = delay.id
    cat.nodes[delay.id] = delay
    return delay


Order = list[Union[int, "Loop"]]


class Loop:
    """A strongly connected part in the DTS order: where it is cut, and its own order inside."""

    def __init__(self, members: list[int], cut_at: list[int], order: Order):
        self.members = members
        self.cut_at = cut_at
        self.order = order


def dts_order(nodes: dict[int, Node], succ: dict[int, list[int]] | None = None) -> Order:
    """Producers before consumers; each loop becomes a Loop ordered after cutting its delays."""
    if succ is None:
        succ = successors(nodes)
    comps = strongly_connected(nodes, succ)
    comp_of = {v: k for k, c in enumerate(comps) for v in c}
    indeg = [0] * len(comps)
    edges: dict[int, set[int]] = {k: set() for k in range(len(comps))}
    for v, ws in succ.items():
        for w in ws:
            a, b = comp_of[v], comp_of[w]
            if a != b and b not in edges[a]:
                edges[a].add(b)
                indeg[b] += 1
    ready = [k for k in range(len(comps)) if indeg[k] == 0]
    order: Order = []
    while ready:
        k = min(ready, key=lambda c: comps[c][0])  # smallest id first: follows registration
        ready.remove(k)
        comp = comps[k]
        if is_loop(comp, succ):
            # Cut the loop at one delay (the last registered: in nested loops, the outer one) and
            # order what remains, which may still hold inner loops (paper 000, Fig. 6).
            members = {v: nodes[v] for v in comp}
            delays = [v for v in comp if nodes[v].op == "delay"]
            assert delays, "every loop passed the delay check"
            cut = max(delays)
            inner = {a: [b for b in succ[a] if b in members and a != cut] for a in comp}
            order.append(Loop(comp, [cut], dts_order(members, inner)))
        else:
            order.append(comp[0])
        for b in sorted(edges[k]):
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    return order
