"""Which key a script can be partitioned on, proved from its plan (SEMANTICS.md §7).

Splitting the inputs by a key and running one engine per part gives the local engine's result (as
a bag) exactly when every operator that relates several rows only relates rows of one key value:

* ``[Rows n]`` counts every row of its stream: never partitionable.
* ``[Partition By k, ... Rows n]`` must partition on the key (one of its columns carries it).
* A join must have an equality between the key columns of both sides.
* An aggregate must GROUP BY the key; so must DISTINCT, UNION, EXCEPT and INTERSECT, which the
  planner builds as aggregates over all compared columns (so the key must be one of them).
* ISTREAM and DSTREAM compare whole rows (a value ending and starting again at one instant emits
  nothing, SEMANTICS.md §4): the key must be one of the compared columns — unless the lifetimes
  never end (``[Range Unbounded]``), so no end can meet a start.
* RSTREAM emits R(t) at every tick, a union over keys: safe with any key (the Spark runner
  advances every part to the same last tick, which is where a never-ending R stops) — when every
  row of R ends. Past the progress, at close, RSTREAM emits R(t) only while some row of R(t) ends
  later (SEMANTICS.md §4.3): a row that never ends ([Range Unbounded], [Rows n], a relation, what
  is derived from them) is emitted there while a row of another key ends later, which its part
  cannot know. Such an RSTREAM needs every row.
* Time windows (``[Range]``, ``[Now]``, ``[Range d Slide d]``, unbounded), filters, projections,
  UNION ALL and delays act per row: safe with any key.

"Carries the key" is traced through the plan: a column keeps the key through filters, windows,
renames and projections that copy it (a widening cast BIGINT → DOUBLE keeps equal values equal),
through joins (each side's columns) and UNION ALL (both branches' column at that position must
carry it), and through the GROUP BY columns of an aggregate; a column computed by any other
expression does not carry it. Loops are followed around, so a recursive script is partitionable
only if every operator on the loop is. Each stateful operator thus demands that one of a few
(input, column) choices be the key; a small search finds one choice per input consistent with all
demands. Inputs no stateful operator reads get no key (any split works for them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from cq_py.parser import parse
from cq_py.planner import Catalog, Node, Planner
from cq_py.planner import types as T
from cq_py.planner.logical import UNBOUNDED, constant
from cq_py.planner.operators import descriptor

__all__ = ["CQPartitionWarning", "PartitionPlan", "partition_catalog", "partition_plan"]

# A set of (input name, column name) that must all be the key of their input; None when a column
# is computed (it cannot carry the key).
Origin: TypeAlias = frozenset[tuple[str, str]]
Origins: TypeAlias = Origin | None


class CQPartitionWarning(UserWarning):
    """The script has no partition key cq can prove safe: it runs in one Spark partition, or on
    one engine of ``cq_py.Engine(threads=N)``."""


@dataclass(frozen=True)
class PartitionPlan:
    """How to split a script's inputs so that one engine per part gives the whole result.

    ``keys`` maps every registered input (stream or relation) to its key column, or None when the
    input may be split any way (no stateful operator reads it — or nothing is partitionable, in
    which case every value is None). ``partitionable`` is False when some operator needs all rows
    in one place; ``blocker`` then says which. ``ordered`` is True when rows with equal timestamps
    must keep their arrival order (row windows count in arrival order; a relation's deletes end the
    oldest copy), ``relations`` names the inputs that are relations, and ``stateful`` is False for
    a script any split gives right (no operator relates two rows).

    >>> p = partition_plan("REGISTER STREAM s(k INT, v DOUBLE);"
    ...                    "REGISTER QUERY q AS SELECT k, AVG(v) FROM s [Partition By k Rows 10] "
    ...                    "GROUP BY k;")
    >>> p.keys, p.partitionable, p.blocker
    ({'s': 'k'}, True, None)
    """

    keys: dict[str, str | None]
    partitionable: bool
    blocker: str | None = None
    ordered: bool = False
    relations: frozenset[str] = frozenset()
    stateful: bool = False
    key_types: dict[str, str] = field(default_factory=dict)  # input -> core type of its key column
    rstream: bool = False  # RSTREAM runs to the last input tick: every part must reach the same


@dataclass
class _Demand:
    """A stateful operator's demand: one of ``options`` must hold; ``what`` names it in messages."""

    node: Node
    options: list[Origin]
    what: str

    @property
    def name(self) -> str:
        """The operator in a few words, for a conflict message."""
        n = self.node
        d = descriptor(n.op)
        if d.partition == "join keys":
            return f"the join of query {n.owner}"
        if d.partition == "group keys":
            return f"{_aggregate(n)} in query {n.owner}"
        if d.partition == "partition keys":
            return f"{_window(n)} in query {n.owner}"
        return f"{d.description} in query {n.owner}"


def partition_plan(cql_text: str, time_unit: str = "ms") -> PartitionPlan:
    """The partition key of every input of ``cql_text``, or why there is none.

    The script is parsed and planned as the engine would (errors are the engine's:
    :class:`cq_py.CQLSyntaxError`, :class:`cq_py.CQLSemanticError`).

    >>> p = partition_plan("REGISTER STREAM s(k INT, v DOUBLE);"
    ...                    "REGISTER QUERY q2 AS SELECT k, v FROM s [Rows 10];")
    >>> p.partitionable
    False
    >>> print(p.blocker)
    query q2: [Rows 10] on stream 's' is not partitioned (it counts the rows of every key)
    """
    planner = Planner(Catalog(), time_unit, cql_text)
    cat, _ = planner.plan(parse(cql_text))
    return partition_catalog(cat)


def partition_catalog(cat: Catalog, fixed: Mapping[str, str | None] | None = None) -> PartitionPlan:
    """:func:`partition_plan` of a catalog the planner has built: every input and query registered
    in it (what :class:`cq_py.Engine` has executed so far, for ``Engine(threads=N)``).

    ``fixed`` holds the keys some inputs must keep (a column, or None: split any way), as for an
    engine whose inputs are already split: a plan that needs another key for one of them is not
    partitionable, and its blocker says which operator needs what.

    >>> from cq_py.parser import parse
    >>> text = "REGISTER STREAM s(k INT, v INT); REGISTER QUERY q AS SELECT DISTINCT k FROM s;"
    >>> cat, _ = Planner(Catalog(), "ms", text).plan(parse(text))
    >>> partition_catalog(cat).keys
    {'s': 'k'}
    """
    nodes = cat.nodes
    inputs = {s.name: s for s in cat.streams.values()}
    relations = frozenset(s.name for s in cat.streams.values() if s.relation)
    tracer = _Tracer(nodes)
    demands: list[_Demand] = []
    ordered = bool(relations)
    # RSTREAM emits at every tick: every part must reach the same last tick.
    rstream = any(descriptor(n.op).firing == "every tick" for n in nodes.values())
    for node in sorted(nodes.values(), key=lambda n: n.id):
        d = _demand(node, nodes, tracer)
        if descriptor(node.op).arrival_order:
            ordered = True
        if d is not None:
            demands.append(d)

    none = dict.fromkeys(inputs)
    for d in demands:
        if not d.options:
            return PartitionPlan(none, False, d.what, ordered, relations, True, rstream=rstream)
    chosen = _solve(demands, fixed)
    if chosen is None:
        blocker = _conflict(demands) if _solve(demands) is None else _unfixed(demands, fixed or {})
        return PartitionPlan(none, False, blocker, ordered, relations, True, rstream=rstream)
    keys = {name: chosen.get(name) for name in inputs}
    types = {name: dict(inputs[name].columns)[col] for name, col in keys.items() if col is not None}
    return PartitionPlan(keys, True, None, ordered, relations, bool(demands), types, rstream)


class _Tracer:
    """Which input columns a plan column copies (its origins), followed through loops.

    The walk keeps its own stack: a plan may be as deep as the core takes (2,000 operators in a
    row, a long UNION ALL), deeper than Python's recursion."""

    def __init__(self, nodes: dict[int, Node]):
        self.nodes = nodes

    def origins(self, node_id: int, index: int) -> Origins:
        return self._trace((node_id, index))

    def _step(self, key: tuple[int, int]) -> Origins | list[tuple[int, int]]:
        """The origins of column ``key`` = (node, index) when its node says them, else the
        columns they are the union of (one for most operators; every input's for UNION ALL)."""
        node_id, index = key
        n = self.nodes[node_id]
        d = descriptor(n.op)
        if d.columns == "source":
            name: str = n.params["stream" if d.role == "stream source" else "relation"]
            return frozenset({(name, n.schema[index][0])})
        if d.columns == "project":
            return self._column(n.inputs[0], n.params["exprs"][index])
        if d.columns == "group keys":
            keys = n.params["keys"]
            return self._column(n.inputs[0], keys[index]) if index < len(keys) else None
        if d.columns == "concat":
            width = len(self.nodes[n.inputs[0]].schema)
            if index < width:
                return [(n.inputs[0], index)]
            return [(n.inputs[1], index - width)]
        if d.columns == "merge":
            return [(i, index) for i in n.inputs]
        if d.columns == "extend":  # (columns past its input's are read from a resource)
            return [(n.inputs[0], index)] if index < len(self.nodes[n.inputs[0]].schema) else None
        # Filters, windows, ISTREAM/DSTREAM/RSTREAM, delays and sinks pass columns on unchanged.
        return [(n.inputs[0], index)]

    @staticmethod
    def _column(input_id: int, expr: dict[str, Any]) -> Origins | list[tuple[int, int]]:
        # A widening cast keeps equal keys equal (and the runner hashes keys in a common type);
        # a cast of a string to a number does not ('1' and '1.0' are one number, 'x' NULL).
        while (
            expr.get("kind") == "call"
            and expr.get("fn") == "cast_float64"
            and expr["args"][0].get("type") in (T.INT64, T.FLOAT64, T.BOOL)
        ):
            expr = expr["args"][0]
        if expr.get("kind") != "column":
            return None
        return [(input_id, expr["index"])]

    def _trace(self, start: tuple[int, int]) -> Origins:
        # Frames: [column, the columns it unites, the next of them, the union so far (None:
        # some column is computed)]. A column met again on the path is around a loop and back:
        # what enters the loop elsewhere decides (induction on steps), so it adds nothing.
        path: set[tuple[int, int]] = set()
        stack: list[list[Any]] = []
        done: Origins = None

        def enter(key: tuple[int, int]) -> tuple[bool, Origins]:
            if key in path:
                return True, frozenset()
            step = self._step(key)
            if not isinstance(step, list):
                return True, step
            path.add(key)
            stack.append([key, step, 0, set()])
            return False, None

        finished, done = enter(start)
        returned = finished
        while stack:
            frame = stack[-1]
            if returned:
                frame[3] = None if done is None or frame[3] is None else frame[3] | done
                frame[2] += 1
                returned = False
            if frame[3] is None or frame[2] == len(frame[1]):
                stack.pop()
                path.discard(frame[0])
                done = None if frame[3] is None else frozenset(frame[3])
                returned = True
                continue
            returned, done = enter(frame[1][frame[2]])
        return done

    def _expr(self, input_id: int, expr: dict[str, Any]) -> Origins:
        """The origins of an expression over ``input_id``'s columns: a column's, else None."""
        step = self._column(input_id, expr)
        return self._trace(step[0]) if isinstance(step, list) else step

    def options(self, node_id: int, indexes: Iterable[int]) -> list[Origin]:
        out: list[Origin] = []
        for i in indexes:
            o = self.origins(node_id, i)
            if o is not None and o not in out:
                out.append(o)
        return out


def _demand(n: Node, nodes: dict[int, Node], tracer: _Tracer) -> _Demand | None:
    """What ``n`` needs of the key, or None if it acts per row."""
    where = f"query {n.owner}"
    rule = descriptor(n.op).partition
    if descriptor(n.op).firing == "every tick":
        never = _never_ends(n.inputs[0], nodes)
        if never is not None:
            return _Demand(
                n,
                [],
                f"{where}: RSTREAM over rows that may never end ({never}) emits them past the "
                "progress while a row of any key ends later",
            )
    if rule == "never" and descriptor(n.op).columns == "extend":
        return _Demand(
            n, [], f"{where}: {n.label} reads a resource or model (paper 002): one engine runs it"
        )
    if rule == "never":
        return _Demand(
            n,
            [],
            f"{where}: {_window(n)} on {_source(n, nodes)} is not partitioned "
            "(it counts the rows of every key)",
        )
    if rule == "partition keys":
        return _Demand(
            n,
            tracer.options(n.inputs[0], n.params["keys"]),
            f"{where}: {_window(n)} on {_source(n, nodes)} does not partition on the key",
        )
    if rule == "join keys":
        options = []
        for lk, rk in zip(n.params["left_keys"], n.params["right_keys"], strict=True):
            lo = tracer._expr(n.inputs[0], lk)
            ro = tracer._expr(n.inputs[1], rk)
            if lo is not None and ro is not None and (lo | ro) not in options:
                options.append(lo | ro)
        if not n.params["left_keys"]:
            return _Demand(
                n,
                [],
                f"join in query {n.owner} has no equality between its sides "
                "(every row meets every row)",
            )
        return _Demand(
            n,
            options,
            f"join in query {n.owner} is not on the partition key "
            f"({n.label.removeprefix('HashJoin ')})",
        )
    if rule == "group keys":
        options = tracer.options(n.id, range(len(n.params["keys"])))
        if not n.params["keys"]:
            return _Demand(
                n,
                [],
                f"{where}: the aggregate without GROUP BY "
                f"({n.label.removeprefix('Aggregate ')}) needs every row",
            )
        return _Demand(n, options, f"{where}: {_aggregate(n)} does not group by the key")
    if rule == "whole rows":
        source = nodes[n.inputs[0]]
        if source.lifetime == UNBOUNDED or (
            source.lifetime == constant("ε") and not _delayed(source, nodes)
        ):
            # No end can meet a start of an equal row: [Range Unbounded] never ends; [Now] ends
            # one ε after its start, at step 1, where no row starts unless a delay put it there.
            return None
        return _Demand(
            n,
            tracer.options(n.inputs[0], range(len(source.schema))),
            f"{where}: {descriptor(n.op).description} compares whole rows, and none of their "
            "columns can be the partition key",
        )
    return None


def _never_ends(node_id: int, nodes: dict[int, Node]) -> str | None:
    """What makes a row of ``node_id``'s relation live forever, or None when every row ends: rows
    of relations, unbounded and row windows may stay for good; time windows end their rows;
    other operators' rows end when all their inputs' do (an aggregate's group), a join's pair
    when either of its rows does. Around a loop: may never end (nothing proves the contrary).
    (Walked with its own stack, as :class:`_Tracer` is.)"""

    def own(n: Node) -> tuple[bool, str | None]:
        """(decided, why) when ``n`` decides by itself; (False, None) when its inputs do."""
        d = descriptor(n.op)
        if d.role == "relation source" or n.op == "relation_since":
            return True, f"relation '{n.params.get('relation', n.owner)}'"
        if d.partition in ("never", "partition keys"):
            return True, f"{_window(n)} on {_source(n, nodes)}"
        if "rows_per_group" in n.params:
            # An aggregate that took in its [Partition By k Rows N] (planner/fusion.py): its
            # results stand for the window's rows, as they did planned apart.
            window = n.label.split(" over ", 1)[1].split(" + ", 1)[0]
            return True, f"{window} on {_source(n, nodes)}"
        if d.firing == "expirations":  # time windows
            return True, (
                f"{_window(n)} on {_source(n, nodes)}" if n.lifetime == UNBOUNDED else None
            )
        if d.output == "stream":
            return True, None  # a stream's rows have no lifetime: a window over it gives them one
        return False, None

    known: dict[int, str | None] = {}
    path: set[int] = set()
    # Frames: [node, its inputs, the next of them, whether all inputs must never end (a join)].
    stack: list[list[Any]] = []
    done: str | None = None

    def enter(i: int) -> bool:
        nonlocal done
        if i in known:
            done = known[i]
            return True
        if i in path:
            done = "a loop"
            return True
        decided, why = own(nodes[i])
        if decided or not nodes[i].inputs:
            done = known[i] = why
            return True
        path.add(i)
        stack.append([i, nodes[i].inputs, 0, descriptor(nodes[i].op).columns == "concat"])
        return False

    returned = enter(node_id)
    while stack:
        frame = stack[-1]
        node, inputs, k, join = frame
        if returned:
            returned = False
            last = k + 1 == len(inputs)
            # A join's pair may live forever only if both rows may; anything else if one may.
            if (done is None) == join or last:
                stack.pop()
                path.discard(node)
                known[node] = done
                returned = True
                continue
            frame[2] += 1
        returned = enter(inputs[frame[2]])
    return done


def _delayed(n: Node, nodes: dict[int, Node]) -> bool:
    """Whether rows reaching ``n`` may have passed a delay (and so start after step 0)."""
    seen, todo = set(), [n.id]
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        if descriptor(nodes[i].op).firing == "delayed output":
            return True
        todo.extend(nodes[i].inputs)
    return False


def _window(n: Node) -> str:
    return n.label.removeprefix("Window ")


def _aggregate(n: Node) -> str:
    if n.label == "Distinct":
        return "SELECT DISTINCT"
    if n.label.startswith("UNION"):
        return "UNION"
    for op in ("EXCEPT", "INTERSECT"):
        if n.label.startswith(op):
            return op
    return f"the aggregate {n.label.removeprefix('Aggregate ')}"


def _source(n: Node, nodes: dict[int, Node]) -> str:
    src = nodes[n.inputs[0]]
    if descriptor(src.op).role == "stream source":
        return f"stream '{src.params['stream']}'"
    return f"the output of query '{src.owner}'"


def _solve(
    demands: list[_Demand], fixed: Mapping[str, str | None] | None = None
) -> dict[str, str] | None:
    """One key column per input that meets every demand (depth-first, fewest options first),
    keeping the keys ``fixed`` gives (an input fixed to None takes no key)."""
    order = sorted(demands, key=lambda d: len(d.options))
    fixed = fixed or {}
    unkeyed = {s for s, c in fixed.items() if c is None}
    start = {s: c for s, c in fixed.items() if c is not None}

    def search(k: int, chosen: dict[str, str]) -> dict[str, str] | None:
        if k == len(order):
            return chosen
        for option in order[k].options:
            if any(s in unkeyed for s, _ in option):
                continue
            if all(chosen.get(s, c) == c for s, c in option):
                # An option naming one input twice (two different columns) can never hold.
                if len({s for s, _ in option}) != len(option):
                    continue
                found = search(k + 1, chosen | dict(option))
                if found is not None:
                    return found
        return None

    return search(0, start)


def _conflict(demands: list[_Demand]) -> str:
    """The first operator, in plan order, whose demand cannot be met together with the earlier."""
    for k in range(1, len(demands) + 1):
        if _solve(demands[:k]) is None:
            earlier = demands[: k - 1]
            first = _solve(earlier) or {}
            keyed = ", ".join(f"'{c}' of {s}" for s, c in sorted(first.items()))
            inputs = {s for o in demands[k - 1].options for s, _ in o}
            others = [d.name for d in earlier if any(s in inputs for o in d.options for s, _ in o)]
            return (
                f"{demands[k - 1].what}, which {', '.join(others) or 'the operators before it'} "
                f"need{'s' if len(others) == 1 else ''} (they partition on {keyed})"
            )
    raise AssertionError("no conflict among demands that cannot all be met")


def _unfixed(demands: list[_Demand], fixed: Mapping[str, str | None]) -> str:
    """Why the demands cannot keep the ``fixed`` keys: the first operator, in plan order, that
    needs another."""
    split = ", ".join(
        f"{s} by '{c}'" if c is not None else f"{s} any way" for s, c in sorted(fixed.items())
    )
    for k in range(1, len(demands) + 1):
        if _solve(demands[:k], fixed) is None:
            return f"{demands[k - 1].what} (the inputs are already split: {split})"
    raise AssertionError("no demand breaks the fixed keys")
