"""How far back in time a script looks: the proof that lets ``cq_py.run`` split its inputs by time.

``cq_py.run(..., threads=N)`` knows the whole input. Engine k can then take the rows with ts in
``[T_k, T_{k+1})``, plus a warm-up of the rows just before ``T_k`` that rebuilds the state its first
outputs depend on, and keep only its outputs with ts in ``[T_k, T_{k+1})``: the slices' outputs,
one after the other, are the one engine's output (as bags per timestamp), with no hashing of keys
and no merge. This module proves, from the plan, how much warm-up suffices (a
:class:`Lookback` per input), or says why no warm-up does (a blocker):

* ``[Range r]`` looks back ``r`` ticks; ``[Range r Slide s]`` at most ``r + s``; ``[Now]`` nothing.
* ``[Rows n]`` looks back ``n`` rows; ``[Partition By k Rows n]`` back until every key met
  before has ``n`` rows (data-dependent: :mod:`cq_py.time_split` finds it).
* ISTREAM and DSTREAM compare the relation with its value one instant before: the lookback of
  the instant ``T_k - 1``, one tick more.
* Filters, projections, UNION ALL and joins look back as far as their inputs (the furthest).
* Aggregates must be exact, the same whatever rows came and went before (COUNT, MIN, MAX; SUM
  and AVG of integers, which the core sums exactly in 128 bits): a floating-point sum that ran
  over the whole history differs in its last bits from one that started at the warm-up.

Anything else is refused: unbounded windows (they remember everything), relations and tables,
delays and loops, MASTER, RSTREAM (it repeats its relation at every tick: a warm-up would not tell
when it last did), relation-valued queries (a row's interval would be cut at ``T_k``), windows
over a query's output (their lookback compounds), and every operator not named here.

>>> plan = lookback_plan("REGISTER STREAM e(key INT, val INT);"
...                   "REGISTER QUERY q AS ISTREAM(SELECT key, COUNT(*) AS c FROM e "
...                   "[Range 1000 Slide 1000] GROUP BY key);")
>>> plan.lookback["e"], plan.blocker
(Lookback(ticks=2002, rows=0, per_key=()), None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cq_py.parser import parse
from cq_py.planner import Catalog, Node, Planner
from cq_py.planner import types as T
from cq_py.planner.logical import STREAM

__all__ = ["Lookback", "LookbackPlan", "lookback_catalog", "lookback_plan"]

# Aggregates whose result depends only on the rows in the window, not on the order they came and
# went in: COUNT, MIN and MAX of anything; SUM and AVG of integers (an exact 128-bit sum).
_EXACT = {"count_star", "count", "min", "max"}
_EXACT_OF_INTEGERS = {"sum", "avg"}
_AGGREGATES = {"aggregate", "istream_aggregate", "dstream_aggregate"}
# Operators that compare a relation with its value one instant before.
_COMPARING = {"istream", "dstream", "istream_aggregate", "dstream_aggregate", "istream_join"}
_PER_ROW = {"project", "filter", "union_all", "sink", "join", "istream", "dstream", "istream_join"}


@dataclass(frozen=True)
class Lookback:
    """The warm-up an input needs before ``T_k``: the rows with ts ≥ ``T_k - ticks``, and the
    ``rows`` rows before ``T_k``, and for each ``(column, n)`` of ``per_key`` the rows back to where
    every value of the column met before ``T_k`` has ``n`` rows (the union of the three)."""

    ticks: int = 0
    rows: int = 0
    per_key: tuple[tuple[str, int], ...] = ()

    def union(self, other: Lookback) -> Lookback:
        """The warm-up that covers both.

        >>> Lookback(5, 0, (("k", 3),)).union(Lookback(2, 7, (("k", 4),)))
        Lookback(ticks=5, rows=7, per_key=(('k', 4),))
        """
        keyed = dict(self.per_key)
        for col, n in other.per_key:
            keyed[col] = max(n, keyed.get(col, 0))
        return Lookback(
            max(self.ticks, other.ticks), max(self.rows, other.rows), tuple(sorted(keyed.items()))
        )


@dataclass(frozen=True)
class LookbackPlan:
    """The warm-up of every input (``lookback``), or why the script cannot be split by time
    (``blocker``, then ``lookback`` is empty)."""

    lookback: dict[str, Lookback] = field(default_factory=dict)
    blocker: str | None = None

    @property
    def sliceable(self) -> bool:
        """Whether the inputs may be split by time."""
        return self.blocker is None


class _Refused(Exception):
    """A part of the plan whose lookback cannot be bounded; the message says which."""


def lookback_plan(cql_text: str, time_unit: str = "ms") -> LookbackPlan:
    """The time-slicing proof of ``cql_text``: its warm-up per input, or why there is none.

    >>> print(lookback_plan("REGISTER STREAM s(k INT, v DOUBLE);"
    ...            "REGISTER QUERY q AS ISTREAM(SELECT k, SUM(v) FROM s [Range 10] GROUP BY k);"
    ...            ).blocker)
    query q: SUM(v) of DOUBLE values is not exact (it depends on the order rows came and went)
    """
    planner = Planner(Catalog(), time_unit, cql_text)
    cat, _ = planner.plan(parse(cql_text))
    return lookback_catalog(cat)


def lookback_catalog(cat: Catalog) -> LookbackPlan:
    """:func:`lookback_plan` of a catalog the planner has built.

    >>> text = "REGISTER STREAM s(k INT); REGISTER QUERY q AS ISTREAM(SELECT k FROM s [Rows 3]);"
    >>> cat, _ = Planner(Catalog(), "ms", text).plan(parse(text))
    >>> lookback_catalog(cat).lookback
    {'s': Lookback(ticks=1, rows=3, per_key=())}
    """
    if not cat.nodes:
        return LookbackPlan(blocker="no query is registered")
    for s in cat.streams.values():
        if s.relation:
            return LookbackPlan(blocker=f"'{s.name}' is a relation (its rows live until deleted)")
    nodes = cat.nodes
    found: dict[int, dict[str, Lookback]] = {}
    try:
        sinks = [n for n in nodes.values() if n.op == "sink"]
        for sink in sinks:
            if nodes[sink.inputs[0]].kind != STREAM:
                raise _Refused(
                    f"query {sink.owner} gives a relation (its rows' intervals would be cut at "
                    "the slices' bounds)"
                )
        for node in nodes.values():
            _lookback(node.id, nodes, found, set())
    except _Refused as e:
        return LookbackPlan(blocker=str(e))
    total: dict[str, Lookback] = {s.name: Lookback() for s in cat.streams.values()}
    for node in nodes.values():
        if node.op == "sink":
            for name, lb in found[node.id].items():
                total[name] = total[name].union(lb)
    return LookbackPlan(total)


def _lookback(
    node_id: int, nodes: dict[int, Node], found: dict[int, dict[str, Lookback]], path: set[int]
) -> dict[str, Lookback]:
    """The warm-up per input that gives ``node_id``'s output right from ``T_k`` on. Plans that
    pass the checks have no loops (delays are refused), so the depth is the longest query's."""
    if node_id in found:
        return found[node_id]
    if node_id in path:
        raise _Refused(f"query {nodes[node_id].owner} is recursive")
    n = nodes[node_id]
    where = f"query {n.owner}"
    if n.op == "stream_scan":
        out = {n.params["stream"]: Lookback()}
    elif n.op in ("window", "slide_window", "row_window", "partition_row_window"):
        out = {_source(n, nodes): _window(n, nodes)}
    elif n.op in _AGGREGATES or n.op in _PER_ROW:
        if n.op in _AGGREGATES:
            _exact(n, nodes)
        path.add(node_id)
        out = {}
        for i in n.inputs:
            for name, lb in _lookback(i, nodes, found, path).items():
                out[name] = out.get(name, Lookback()).union(lb)
        path.discard(node_id)
        if n.op == "istream_join":
            # A join that took in its two windows (planner/fusion.py): each over its stream.
            for w, i in zip(n.params["windows"], n.inputs, strict=True):
                name = _scanned(nodes[i], n.owner)
                out[name] = out[name].union(_time_window(w, n.owner))
        if "rows_per_group" in n.params:
            # An aggregate that took in its [Partition By k Rows n] (planner/fusion.py).
            name = _source(n, nodes)
            col = _key_column(n, nodes)
            out[name] = out[name].union(Lookback(0, 0, ((col, int(n.params["rows_per_group"])),)))
        if n.op in _COMPARING:
            # The relation one instant before T_k: its lookback, from T_k - 1.
            out = {k: Lookback(v.ticks + 1, v.rows, v.per_key) for k, v in out.items()}
    else:
        raise _Refused(f"{where}: {n.label} cannot be split by time")
    found[node_id] = out
    return out


def _window(n: Node, nodes: dict[int, Node]) -> Lookback:
    """A window's warm-up over the stream it reads (windows over a query's output are refused)."""
    p = n.params
    if n.op == "slide_window":
        # The window of the last slide boundary at or before t: rows newer than t - range - slide.
        return Lookback(int(p["range"]["ticks"]) + int(p["slide"]["ticks"]) + 1)
    if n.op == "row_window":
        return Lookback(0, int(p["rows"]))
    if n.op == "partition_row_window":
        keys = [int(k) for k in p["keys"]]
        if len(keys) != 1:
            raise _Refused(
                f"query {n.owner}: {n.label.removeprefix('Window ')} partitions by several "
                "columns (cq finds the warm-up of one key column)"
            )
        col = nodes[n.inputs[0]].schema[keys[0]][0]
        return Lookback(0, 0, ((col, int(p["rows"])),))
    return _time_window(p, n.owner, n.label.removeprefix("Window "))


def _time_window(p: dict[str, Any], owner: str, label: str | None = None) -> Lookback:
    """The warm-up of a time window of parameters ``p`` (a window's, or one a join took in)."""
    if set(p) - {"kind", "range"}:
        raise _Refused(f"query {owner}: a window of parameters {sorted(p)} cannot be split by time")
    if p.get("kind") == "now":
        return Lookback()
    if p.get("kind") == "range":
        return Lookback(int(p["range"]["ticks"]) + 1)
    raise _Refused(f"query {owner}: {label or p.get('kind')} remembers every row")


def _source(n: Node, nodes: dict[int, Node]) -> str:
    """The stream a window reads, which must be a registered stream."""
    return _scanned(nodes[n.inputs[0]], n.owner)


def _scanned(src: Node, owner: str) -> str:
    """The registered stream ``src`` scans; refused when it is another query's output."""
    if src.op != "stream_scan":
        raise _Refused(
            f"query {owner}: a window over the output of query {src.owner} (its lookback "
            "compounds with the query's)"
        )
    return str(src.params["stream"])


def _key_column(n: Node, nodes: dict[int, Node]) -> str:
    keys = n.params["keys"]
    if len(keys) != 1:
        raise _Refused(
            f"query {n.owner}: a row window partitioned by several columns (cq finds the warm-up "
            "of one key column)"
        )
    return str(nodes[n.inputs[0]].schema[int(keys[0]["index"])][0])


def _exact(n: Node, nodes: dict[int, Node]) -> None:
    """Refuses an aggregate whose result depends on the order its rows came and went in."""
    for a in n.params.get("aggregates", []):
        fn = a["fn"]
        if fn in _EXACT:
            continue
        arg = a.get("arg") or {}
        if fn in _EXACT_OF_INTEGERS and arg.get("type") in (T.INT64, T.BOOL):
            continue
        names = n.params.get("names", [])
        what = next((x for x in names if x.upper().startswith(fn.upper() + "(")), fn.upper())
        raise _Refused(
            f"query {n.owner}: {what} of {str(arg.get('type', '?')).replace('float64', 'DOUBLE')}"
            " values is not exact (it depends on the order rows came and went)"
        )
