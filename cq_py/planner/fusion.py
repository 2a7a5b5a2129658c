"""Fused relation-to-stream operators: ISTREAM or DSTREAM over a grouped aggregate, planned as one.

An aggregate knows, at every instant, which groups changed and their old and new values. Each
group has one result row, and that row holds the group's keys, so no two rows of the relation are
equal: ``ISTREAM`` of it is the new rows of the groups whose value changed, ``DSTREAM`` their old
ones. Planned apart, the aggregate hands every change to the ISTREAM as an ending and a starting
tuple (under the direct method through an expiration holder), and the ISTREAM keeps them until
their instant and takes a bag difference; fused, the aggregate writes the stream's rows itself
(``istream_aggregate``, ``dstream_aggregate``: operators/aggregate.h). DuckDB and Velox fuse
operators in their physical planners in the same way, where one's output shape lets the next be
skipped.

The rewrite applies when the ISTREAM or DSTREAM reads the aggregate through projections that only
pick or rename its columns and keep every GROUP BY key (rows stay unique), each operator on the
way read by the next alone (nothing else sees the relation), all planned by this script. HAVING
(a filter) and computed columns are not fused: a filter may drop a group's new row and keep its
old one, and an expression may map two values to one.

The second rewrite fuses a grouped aggregate with the window ``[Partition By k1, … Rows N]`` it
reads when the window's partition columns are the GROUP BY keys (``fuse_rows_window``): each
group's relation is then its last N rows, which the aggregate keeps in a ring per group
(``rows_per_group``: operators/aggregate.h, kRows), so that no row leaves the window with an end
still pending (an expiration holder, a tracker of pending ends, a sort of the ends each instant).
It applies outside loops, where the window is read by the aggregate alone and every argument is a
number or a boolean (a ring keeps 8 bytes per argument); as the relation-to-stream fusion, it is
what Flink's planner does with a ``ROW_NUMBER() <= N`` over a partition feeding an aggregate.

The third rewrite fuses ISTREAM with an equi-join of two windows of constant duration (``[Range
T]``, ``[Now]``, ``[Range Unbounded]``) it reads through projections that only pick columns
(``_istream_join``): a pair starts when its later row arrives, so the join emits the pairs it
makes at their start, and takes the bag difference only against the pairs that end at that instant,
which it finds in its index (``istream_join``: operators/istream_join.h). The windows go into the
operator, which reads their streams, so it is the same under both lifetime methods. It applies
outside loops, where each operator on the way is read by the next alone and the join has no
residual predicate.

The same fusion for a query of a shared window join (``_istream_route``, planned by
cq_py/planner/shared_joins.py before the fusions): ISTREAM over the query's route, through
projections that only pick columns, becomes ``swj_route_istream`` (operators/swj_route_istream.h),
which emits each pair at its start and takes the bag difference against the query's pairs ending
there, which it keeps (the shared join's index holds the rows for the widest window only).

The fourth rewrite (``_istream_now``) drops the ``[Now]`` window and the ISTREAM above it
where an ISTREAM reads a ``[Now]`` window of a registered stream through filters and
projections only: such a tuple lives on [t, t + ε), and a registered stream's timestamps are
whole ticks (ε-steps come only from delays inside queries), so no tuple of the relation ends at
an instant where another starts and ``ISTREAM`` emits every tuple at its start, as it is. The
filters and projections then run over the stream itself, under either lifetime method: nothing
is kept, nothing expires (``ISTREAM(SELECT * FROM e [Now] WHERE val > 499)``, issue 29's W1,
becomes scan → filter → projection → output).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cq_py.planner import types as T
from cq_py.planner.logical import STREAM, Catalog, Node
from cq_py.planner.loops import is_loop, strongly_connected, successors
from cq_py.planner.sharing import renumber, replace_node

FUSED = {"istream": "istream_aggregate", "dstream": "dstream_aggregate"}


def fuse_relation_to_stream(cat: Catalog, first_new: int, keep_reads: bool = False) -> None:
    """Fuses each new ISTREAM and DSTREAM with the grouped aggregate it reads, where the rows it
    reads are the aggregate's (see the module's docstring), then numbers the new operators
    without gaps. With ``keep_reads`` (a transaction strategy), not an aggregate over resource
    reads or model calls: its ISTREAM or DSTREAM commits the reads' transactions from whole
    results (redo_areas.py), which a fused aggregate does not keep.

    Example: ``ISTREAM(SELECT key, AVG(val) AS a FROM e [Range 10] GROUP BY key)`` plans as
    window → ``istream_aggregate`` → projection (key, a) → output: three operators, no ISTREAM.
    """
    fused = False
    readers = cat.consumers()
    for i in sorted(cat.nodes):
        n = cat.nodes.get(i)
        if i < first_new or n is None or n.op not in FUSED:
            continue
        chain = _chain(cat, readers, n, first_new)
        if chain is None:
            continue
        agg, projects = chain
        below = cat.nodes[agg.inputs[0]]
        over_now = below.op == "window" and below.params.get("kind") == "now"
        if keep_reads and not over_now and _reads_resources(cat, agg.id):
            continue  # (over [Now] R changes between ticks, which RSTREAM does not see)
        agg.op = FUSED[n.op]
        agg.label += " + " + n.label.split(" ")[0]
        for m in (agg, *projects):
            m.kind, m.lifetime = "stream", STREAM
        for key in ("lifetime", "expiration"):  # (the aggregate's own stay: it tracks its input)
            n.params.pop(key, None)
        replace_node(cat, n.id, (projects[-1] if projects else agg).id)
        readers = cat.consumers()
        fused = True
    if fused:
        renumber(cat, first_new)


def _reads_resources(cat: Catalog, root: int) -> bool:
    """Whether a reference operator (a resource read, a model call) lies at or below ``root``."""
    seen, todo = set(), [root]
    while todo:
        i = todo.pop()
        if i in seen or i not in cat.nodes:
            continue
        seen.add(i)
        if cat.nodes[i].op in ("reference_join", "model_apply"):
            return True
        todo += cat.nodes[i].inputs
    return False


def _chain(
    cat: Catalog, readers: dict[int, list[int]], n: Node, first_new: int
) -> tuple[Node, list[Node]] | None:
    """The aggregate ``n`` reads and the projections between them (lowest first), or None when
    the rows ``n`` reads are not the aggregate's result rows whole."""
    projects: list[Node] = []
    # Column k of the current node comes from column cols[k] of the aggregate (found below).
    p = cat.nodes[n.inputs[0]]
    picks: list[list[int]] = []
    while p.op == "project":
        exprs = p.params.get("exprs", [])
        if not all(e.get("kind") == "column" for e in exprs):
            return None
        picks.append([int(e["index"]) for e in exprs])
        projects.append(p)
        p = cat.nodes[p.inputs[0]]
    if p.op != "aggregate" or p.id < first_new:
        return None
    on_the_way = [p, *reversed(projects)]
    for below, above in zip(on_the_way, [*on_the_way[1:], n], strict=True):
        if readers[below.id] != [above.id] or below.id < first_new:
            return None
    # Trace the aggregate's columns up through the projections: every key must reach n.
    cols = list(range(len(p.schema)))
    for pick in reversed(picks):
        cols = [cols[k] for k in pick]
    keys = len(p.params.get("keys", []))
    if not set(range(keys)) <= set(cols):
        return None
    return p, list(reversed(projects))


AGGREGATES = ("aggregate", "istream_aggregate", "dstream_aggregate")


def _looped(cat: Catalog) -> set[int]:
    """The operators on a loop (which the fusions leave alone)."""
    succ = successors(cat.nodes)
    return {i for comp in strongly_connected(cat.nodes, succ) if is_loop(comp, succ) for i in comp}


def fuse_rows_window(cat: Catalog, first_new: int) -> None:
    """Plans each new grouped aggregate over ``[Partition By <its GROUP BY keys> Rows N]`` as one
    operator reading the window's stream (see the module's docstring), then numbers the new
    operators without gaps.

    Example: ``SELECT key, AVG(val) FROM e [Partition By key Rows 10] GROUP BY key`` plans as
    scan → aggregate (each group's last 10 rows) → projection → output: no window operator.
    """
    looped = _looped(cat)
    readers = cat.consumers()
    fused = False
    for i in sorted(cat.nodes):
        agg = cat.nodes.get(i)
        if i < first_new or agg is None or agg.op not in AGGREGATES:
            continue
        w = cat.nodes[agg.inputs[0]]
        if (
            w.op != "partition_row_window"
            or w.id < first_new
            or readers[w.id] != [agg.id]
            or {agg.id, w.id, w.inputs[0]} & looped
            or cat.nodes[w.inputs[0]].kind != "stream"
        ):
            continue
        keys = agg.params.get("keys", [])
        if not keys or not all(k.get("kind") == "column" for k in keys):
            continue
        if {int(k["index"]) for k in keys} != {int(k) for k in w.params["keys"]}:
            continue
        args = [a["arg"] for a in agg.params.get("aggregates", []) if a.get("arg") is not None]
        if any(a.get("type") not in (T.INT64, T.FLOAT64, T.BOOL, T.NULL) for a in args):
            continue
        agg.params["rows_per_group"] = int(w.params["rows"])
        agg.inputs = [w.inputs[0]]
        agg.label += " over " + w.label.removeprefix("Window ")
        del cat.nodes[w.id]
        readers = cat.consumers()
        fused = True
    if fused:
        renumber(cat, first_new)


CONSTANT_WINDOWS = ("range", "now", "unbounded")


def fuse_istreams(cat: Catalog, first_new: int, over_now: bool = True) -> None:
    """The ISTREAM fusions, in one walk over the ISTREAMs this script planned outside loops: each
    is fused with a join of windows (``_istream_join``) or, with ``over_now``, with a ``[Now]``
    window of a registered stream (``_istream_now``); then the new operators are numbered without
    gaps. (A query registered while the engine runs takes ``over_now=False``: its window fills
    from p.)"""

    def fuse(n: Node, readers: dict[int, list[int]], looped: set[int]) -> bool:
        return (
            _istream_join(cat, first_new, n, readers, looped)
            or _istream_route(cat, first_new, n, readers, looped)
            or (over_now and _istream_now(cat, first_new, n, readers, looped))
        )

    _each_new_istream(cat, first_new, fuse)


def _istream_join(
    cat: Catalog, first_new: int, n: Node, readers: dict[int, list[int]], looped: set[int]
) -> bool:
    """Plans ISTREAM ``n`` of an equi-join of two constant-duration windows as one operator
    reading the windows' streams (see the module's docstring); False when it does not read one.

    Example: ``ISTREAM(SELECT a.key, a.val, b.val AS w FROM a [Range 10], b [Range 10] WHERE
    a.key = b.key)`` plans as scans → ``istream_join`` → projection → output: no window, no
    ISTREAM.
    """
    found = _join_of_windows(cat, readers, n, first_new, looped)
    if found is None:
        return False
    join, projects, windows, compared = found
    join.op = "istream_join"
    join.inputs = [w.inputs[0] for w in windows]
    join.params["windows"] = [_window_params(w) for w in windows]
    join.params["compare"] = compared
    join.label += (
        " over " + ", ".join(w.label.removeprefix("Window ") for w in windows) + " + ISTREAM"
    )
    for m in (join, *projects):
        m.kind, m.lifetime = "stream", STREAM
    replace_node(cat, n.id, (projects[-1] if projects else join).id)
    for w in {w.id: w for w in windows}.values():
        del cat.nodes[w.id]
    return True


def _each_new_istream(
    cat: Catalog,
    first_new: int,
    fuse: Callable[[Node, dict[int, list[int]], set[int]], bool],
) -> None:
    """Calls ``fuse(n, readers, looped)`` for each ISTREAM this script planned outside loops (True
    when it rewrote the plan: the readers are then found again), then numbers the new operators
    without gaps if any was."""
    looped = _looped(cat)
    readers = cat.consumers()
    fused = False
    for i in sorted(cat.nodes):
        n = cat.nodes.get(i)
        if i < first_new or n is None or n.op != "istream" or i in looped:
            continue
        if fuse(n, readers, looped):
            readers = cat.consumers()
            fused = True
    if fused:
        renumber(cat, first_new)


def _window_params(w: Node) -> dict[str, Any]:
    return {k: v for k, v in w.params.items() if k in ("kind", "range")}


def _join_of_windows(
    cat: Catalog, readers: dict[int, list[int]], n: Node, first_new: int, looped: set[int]
) -> tuple[Node, list[Node], list[Node], list[int]] | None:
    """The join ``n`` reads, the projections between them (lowest first), the join's two windows
    and the join's columns ``n`` compares; None when ``n`` does not read such a join alone."""
    found = _read_alone(cat, readers, n, first_new, looped, "join")
    if found is None:
        return None
    p, projects, cols = found
    if p.params.get("residual") is not None:
        return None
    windows = [cat.nodes[w] for w in p.inputs]
    for w in windows:
        if (
            w.op != "window"
            or w.params.get("kind") not in CONSTANT_WINDOWS
            or w.id < first_new
            or w.id in looped
            or set(readers[w.id]) != {p.id}
            or cat.nodes[w.inputs[0]].kind != "stream"
        ):
            return None
    return p, projects, windows, cols


def _read_alone(
    cat: Catalog, readers: dict[int, list[int]], n: Node, first_new: int, looped: set[int], op: str
) -> tuple[Node, list[Node], list[int]] | None:
    """The operator ``op`` that ISTREAM ``n`` reads through projections that only pick columns,
    each on the way read by the next alone, planned by this script and outside loops; with the
    projections (lowest first) and the operator's columns ``n`` compares. None otherwise."""
    projects: list[Node] = []
    picks: list[list[int]] = []
    p = cat.nodes[n.inputs[0]]
    while p.op == "project":
        exprs = p.params.get("exprs", [])
        if not all(e.get("kind") == "column" for e in exprs):
            return None
        picks.append([int(e["index"]) for e in exprs])
        projects.append(p)
        p = cat.nodes[p.inputs[0]]
    if p.op != op:
        return None
    on_the_way = [p, *reversed(projects)]
    for below, above in zip(on_the_way, [*on_the_way[1:], n], strict=True):
        if readers[below.id] != [above.id] or below.id < first_new or below.id in looped:
            return None
    cols = list(range(len(p.schema)))
    for pick in reversed(picks):
        cols = [cols[k] for k in pick]
    return p, list(reversed(projects)), sorted(set(cols))


def _istream_route(
    cat: Catalog, first_new: int, n: Node, readers: dict[int, list[int]], looped: set[int]
) -> bool:
    """Plans ISTREAM ``n`` of a route of a shared window join (exact mode) as one operator,
    ``swj_route_istream`` (operators/swj_route_istream.h): the route emits each pair of its
    query at its start, less those equal to a pair of the query ending there; False when ``n``
    does not read such a route alone.

    Example: ``ISTREAM(SELECT * FROM a [Range 5], b [Range 5] WHERE a.k = b.k)`` beside the same
    query over ``[Range 9]`` plans as one ``shared_window_join`` and, per query, a
    ``swj_route_istream`` (and a projection): no ISTREAM.
    """
    found = _read_alone(cat, readers, n, first_new, looped, "swj_route")
    if found is None:
        return False
    route, projects, compared = found
    if route.params.get("upto"):
        return False  # bounded mode: a route of two tags
    shared = cat.nodes[route.inputs[0]]
    route.op = "swj_route_istream"
    route.params["compare"] = compared
    route.params["window"] = shared.params["windows"][route.params["slice"] - 1]
    route.label += " + ISTREAM"
    for m in (route, *projects):
        m.kind, m.lifetime = "stream", STREAM
    replace_node(cat, n.id, (projects[-1] if projects else route).id)
    return True


def _istream_now(
    cat: Catalog, first_new: int, n: Node, readers: dict[int, list[int]], looped: set[int]
) -> bool:
    """Plans ISTREAM ``n`` of a ``[Now]`` window of a registered stream, read through filters and
    projections each read by the next alone, as those filters and projections over the stream
    (see the module's docstring); False when it does not read one. At least one filter or
    projection is on the way (``SELECT`` always plans one): it carries the label that
    ``explain()`` shows.

    Example: ``ISTREAM(SELECT key, val FROM e [Now] WHERE val > 499)`` plans as scan → filter →
    projection → output: no window, no ISTREAM.
    """
    chain: list[Node] = []  # highest first
    p = cat.nodes[n.inputs[0]]
    while p.op in ("filter", "project"):
        chain.append(p)
        p = cat.nodes[p.inputs[0]]
    if not chain or p.op != "window" or p.params.get("kind") != "now":
        return False
    if cat.nodes[p.inputs[0]].op != "stream_scan":
        return False
    on_the_way = [p, *reversed(chain)]
    if any(
        readers[below.id] != [above.id] or below.id < first_new or below.id in looped
        for below, above in zip(on_the_way, [*on_the_way[1:], n], strict=True)
    ):
        return False
    chain[-1].inputs = list(p.inputs)
    for m in chain:
        m.kind, m.lifetime = "stream", STREAM
    chain[0].label += " (ISTREAM of [Now] fused: over the stream)"
    del cat.nodes[p.id]
    replace_node(cat, n.id, chain[0].id)
    return True
