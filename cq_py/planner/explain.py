"""``explain()``: the registered streams and queries, every operator with its inputs, window,
lifetime property and delay, the loops (strongly connected parts) and the execution order."""

from __future__ import annotations

from cq_py.planner import loops
from cq_py.planner import types as T
from cq_py.planner.logical import Catalog
from cq_py.planner.operators import find
from cq_py.planner.shared_joins import describe


def _cols(cols: list[tuple[str, str]]) -> str:
    return ", ".join(f"{n} {T.CQL_NAME[t]}" for n, t in cols)


def render(cat: Catalog, executor: str = "dts") -> str:
    """The catalog's plan as text (stable: tests and conformance files compare it). The execution
    order is the DTS order, or for ``executor="heartbeat"`` (which runs no loops) the topological
    order its core executor reports.

    >>> from cq_py.parser import parse
    >>> from cq_py.planner import Planner, Catalog
    >>> script = parse("REGISTER STREAM s(a INT);"
    ...                "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Range 5]);")
    >>> cat, _ = Planner(Catalog()).plan(script)
    >>> print(render(cat))  # doctest: +NORMALIZE_WHITESPACE
    Streams:
      s(a BIGINT)
    Queries:
      q: stream (a BIGINT, ts); reads s
    Operators:
      #0 StreamScan s  [s]  -> stream
      #1 Window [Range 5] <- #0  [q]  -> relation, constant duration 5 ticks
      #2 Project a <- #1  [q]  -> relation, constant duration 5 ticks
      #3 ISTREAM <- #2  [q]  -> stream
      #4 Output q <- #3  [q]  -> stream
    Loops: none
    Execution order (DTS): #0 #1 #2 #3 #4
    Firing points: #0 (input), #1 (expirations)
    """
    lines = ["Streams:"]
    for s in cat.streams.values():
        kind = " (relation)" if s.relation else ""
        lines.append(f"  {s.name}({_cols(s.columns)}){kind}")
    lines.append("Queries:")
    for q in cat.queries.values():
        times = "ts" if q.kind == "stream" else "start, end"
        cols = _cols(q.columns)
        reads = f"; reads {', '.join(q.references)}" if q.references else ""
        lines.append(f"  {q.name}: {q.kind} ({cols + ', ' if cols else ''}{times}){reads}")
    lines.append("Operators:")
    for i in sorted(cat.nodes):
        n = cat.nodes[i]
        ins = (" <- " + ", ".join(f"#{x}" for x in n.inputs)) if n.inputs else ""
        prop = n.kind if n.kind == "stream" else f"{n.kind}, {n.lifetime}"
        lines.append(f"  #{n.id} {n.label}{ins}  [{n.owner}]  -> {prop}")
    lines += describe(cat)
    lines += _redo_areas(cat)
    order = loops.dts_order(cat.nodes)
    loop_lines: list[str] = []
    _loops(order, cat, loop_lines, 1)
    lines += ["Loops:", *loop_lines] if loop_lines else ["Loops: none"]
    if executor in ("heartbeat", "scheduled"):
        lines.append(f"Execution order ({executor}, topological): " + _order(order))
    else:
        lines.append("Execution order (DTS): " + _order(order))
    fire = [
        f"#{i} ({d.firing})"
        for i, n in sorted(cat.nodes.items())
        if (d := find(n.op)) is not None
        and d.firing
        and not (d.firing == "expirations" and n.params.get("kind") == "unbounded")
    ]
    lines.append("Firing points: " + (", ".join(fire) or "none"))
    return "\n".join(lines) + "\n"


def _loops(order: loops.Order, cat: Catalog, out: list[str], depth: int) -> None:
    """One line per loop (strongly connected part), nested loops indented under their loop."""
    for item in order:
        if not isinstance(item, loops.Loop):
            continue
        owners: list[str] = []
        for v in item.members:
            if cat.nodes[v].owner not in owners:
                owners.append(cat.nodes[v].owner)
        # A query on the loop whose operators are all shared with another query (sub-plan reuse):
        # its output is in the loop and a query of the loop reads it.
        readers = {
            r.lower() for q in cat.queries.values() if q.name in owners for r in q.references
        }
        for q in cat.queries.values():
            if q.out_id in item.members and q.name not in owners and q.name.lower() in readers:
                owners.append(q.name)
        cut = cat.nodes[item.cut_at[0]]
        where = "" if cut.inserted else f" of {cut.owner}"  # an inserted delay's label says where
        out.append(
            f"{'  ' * depth}loop of {', '.join(owners)}: operators "
            f"{' '.join(f'#{v}' for v in item.members)}; cut at #{cut.id} {cut.label}{where}"
        )
        _loops(item.order, cat, out, depth + 1)


def _order(order: loops.Order) -> str:
    parts = []
    for item in order:
        if isinstance(item, loops.Loop):
            cut = ", ".join(f"#{v}" for v in item.cut_at)
            parts.append(f"[loop cut at {cut}: {_order(item.order)}]")
        else:
            parts.append(f"#{item}")
    return " ".join(parts)


def _redo_areas(cat: Catalog) -> list[str]:
    """Paper 002's redo areas the planner marked (planner/redo_areas.py): each commit operator,
    its members and gatekeepers, and the operators planned again inside it; nothing when no
    query reads a resource."""
    areas: dict[int, list[int]] = {}
    for i in sorted(cat.nodes):
        area = cat.nodes[i].params.get("redo_area")
        if area is not None:
            areas.setdefault(area, []).append(i)
    if not areas:
        return []
    lines = ["Redo areas (paper 002 §3.4; §6's gatekeepers):"]
    for commit, members in sorted(areas.items()):
        gates = [m for m in members if cat.nodes[m].params.get("gatekeeper")]
        lines.append(
            f"  #{commit} {cat.nodes[commit].note}: members "
            + " ".join(f"#{m}" for m in members)
            + "; gatekeepers "
            + "; ".join(f"#{g} ({cat.nodes[g].note.split('(§6), ')[-1]})" for g in gates)
        )
        # Operators another query planned, copied into this area (its only exit its commit).
        lines += [
            f"    #{m} {part}"
            for m in members
            for part in cat.nodes[m].note.split("; ")
            if part.startswith("planned again")
        ]
    return lines
