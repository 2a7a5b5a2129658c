"""A pure-Python discrete model of the scheduled executor of paper 002 (§5, §6, §7): operators
joined by FIFO queues of rows, a batch round-robin scheduler, redo queues, the commit operator, and
``redo="always"`` under 2PL (§4.1.3: at each commit of an area holding an overlapping window the
redo area is reset and replayed from its redo queues). It counts every evaluation (one row taken
from an input queue, §5.1) per operator and per commit, so that the engine's counts can later be
checked against it. It imports nothing from cq_py or cq_core on purpose: it is the yardstick.

Two trees are built here:

* Fig. 6/7: a stream joined with a resource x (each row matches one), then AVG over
  ``[Rows r Slide s]``; n rows pushed at once. ``eq1``/``eq2`` are the paper's equations (1), (2).
* Fig. 8 (reconstructed, see README.md): S1 ⋈1 x → sel1, S2 ⋈2 y → sel2, ⋈3 (a window join over
  ``[Range 10 Slide 10]``) → sel3 → alpha = AVG over ``[Rows 10]``; ``fig8_data`` makes the data.

    python model.py --table          # the Fig. 8 table (README) and fig8_evaluations.png
"""

from __future__ import annotations

import argparse
import bisect
import random
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
INF = float("inf")


class Row:
    """A row on a queue: ``tick`` orders it (the time of its latest source row), ``replay_from``
    is the oldest source tick that must be fed again to rebuild it (the start of its window-join
    window, else its own tick), ``ident`` names it (source ticks) and ``values`` carries columns."""

    __slots__ = ("ident", "replay_from", "tick", "values")

    def __init__(self, tick: int, replay_from: int, ident: tuple[int, ...], values: dict) -> None:
        self.tick = tick
        self.replay_from = replay_from
        self.ident = ident
        self.values = values


class Queue(deque):
    """A FIFO queue of rows that knows its producer, so that an empty queue's progress (the
    earliest tick it can still receive) is read from upstream heads (§5.1: progress is a head)."""

    def __init__(self, producer: Operator | None = None) -> None:
        super().__init__()
        self.producer = producer

    def frontier(self) -> float:
        if self:
            return self[0].tick
        if self.producer is None:
            return INF  # a source queue: its n rows were pushed at once, nothing else comes
        return min(q.frontier() for q in self.producer.inputs)


class Operator:
    """One operator in row form: ``evaluate`` takes one row from an input queue."""

    def __init__(self, name: str, inputs: list[Queue]) -> None:
        self.name = name
        self.inputs = inputs
        self.output = Queue(self)
        self.evaluations = 0

    def evaluable(self) -> bool:
        return bool(self.inputs[0])

    def evaluate(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        """Rebuild the state from the operator's spec (stateless operators keep nothing)."""


class ReferenceJoin(Operator):
    """Stream ⋈ resource: a SCAN nested loop over the resource's rows (cost |resource| reads per
    evaluation, one evaluation per stream row); the output carries the matched row's columns."""

    def __init__(
        self, name: str, inputs: list[Queue], resource: list[dict], on: tuple[str, str]
    ) -> None:
        super().__init__(name, inputs)
        self.stream_key, resource_key = on
        # The nested loop's matches, looked up: the model counts evaluations, not comparisons.
        self.matches: dict[object, list[dict]] = {}
        for r in resource:
            self.matches.setdefault(r[resource_key], []).append(r)

    def evaluate(self) -> None:
        row = self.inputs[0].popleft()
        self.evaluations += 1
        for match in self.matches.get(row.values[self.stream_key], ()):
            values = {**row.values, **{f"{self.name}.{c}": v for c, v in match.items()}}
            self.output.append(Row(row.tick, row.replay_from, row.ident, values))


class Select(Operator):
    """A selection: keeps a row when ``predicate(values)`` holds."""

    def __init__(self, name: str, inputs: list[Queue], predicate: Callable[[dict], bool]) -> None:
        super().__init__(name, inputs)
        self.predicate = predicate

    def evaluate(self) -> None:
        row = self.inputs[0].popleft()
        self.evaluations += 1
        if self.predicate(row.values):
            self.output.append(row)


class WindowJoin(Operator):
    """Binary join over tumbling ``[Range width Slide width]`` windows of ticks (r = s): the two
    inputs are merged by tick (left first on ties), so its output order does not depend on the
    schedule; a row taken is matched with the other side's rows of the same window."""

    def __init__(
        self,
        name: str,
        inputs: list[Queue],
        width: int,
        predicate: Callable[[dict, dict], bool],
    ) -> None:
        super().__init__(name, inputs)
        self.width = width
        self.predicate = predicate
        self.reset()

    def reset(self) -> None:
        self.window = -1
        self.kept: tuple[list[Row], list[Row]] = ([], [])

    def _side(self) -> int | None:
        left, right = self.inputs
        if left and left[0].tick <= right.frontier():
            return 0
        if right and right[0].tick < left.frontier():
            return 1
        return None

    def evaluable(self) -> bool:
        return self._side() is not None

    def evaluate(self) -> None:
        side = self._side()
        assert side is not None
        row = self.inputs[side].popleft()
        self.evaluations += 1
        window = (row.tick - 1) // self.width
        if window != self.window:
            self.window = window
            self.kept = ([], [])
        start = window * self.width + 1
        for other in self.kept[1 - side]:
            a, b = (row, other) if side == 0 else (other, row)
            if self.predicate(a.values, b.values):
                self.output.append(
                    Row(row.tick, start, a.ident + b.ident, {**a.values, **b.values})
                )
        self.kept[side].append(row)


@dataclass
class Commit:
    """One commit of the commit operator: the window's last position, its size, the value, and
    the evaluations per operator since the previous commit."""

    position: int
    size: int
    partial: bool
    value: float
    evaluations: dict[str, int]


class Aggregate(Operator):
    """alpha, the commit operator: AVG(column) over ``[Rows r Slide s]`` of its input positions. The
    k-th window holds positions ks+1..ks+r (k < 0: the partial first windows, clipped at 1), and
    is emitted when its last position arrives. After a reset it knows which replayed positions it
    already committed, and skips them (an evaluation each, no output twice)."""

    def __init__(
        self, name: str, inputs: list[Queue], column: str, r: int, s: int, partial: bool
    ) -> None:
        super().__init__(name, inputs)
        self.column, self.r, self.s, self.partial = column, r, s, partial
        self.replay_from: list[int] = []  # per position (1-based), the tick that rebuilds it
        self.idents: list[tuple[int, ...]] = []
        self.position = 0
        self.first_kept = 1  # positions below it are committed and not in any later window
        self.window: deque[tuple[int, float]] = deque()
        first = r % s or s  # the first window end: r − js > 0, or r without partial windows
        self.next_end = first if partial else r
        self.outputs: list[tuple[int, float]] = []

    def evaluate(self) -> Commit | None:
        row = self.inputs[0].popleft()
        self.evaluations += 1
        self.position += 1
        p = self.position
        if p <= len(self.idents):
            # Replayed: the same row again at the same position (the schedule changes no output).
            assert self.idents[p - 1] == row.ident, (p, self.idents[p - 1], row.ident)
        else:
            self.idents.append(row.ident)
            self.replay_from.append(row.replay_from)
        if p >= self.first_kept:
            self.window.append((p, row.values[self.column]))
        if p < self.next_end:
            return None
        while self.window and self.window[0][0] <= p - self.r:
            self.window.popleft()
        value = sum(v for _, v in self.window) / len(self.window)
        self.outputs.append((p, value))
        self.next_end = p + self.s
        self.first_kept = max(1, p - self.r + self.s + 1)
        return Commit(p, len(self.window), len(self.window) < self.r, value, {})

    def replay_point(self) -> int:
        """The oldest source tick the next commit can need: that rebuilding its first row."""
        return self.replay_from[self.first_kept - 1]

    def reset(self) -> None:
        # Rebuilt from its spec, then told where the replay starts: the first position whose
        # rows are rebuilt from the replay point (positions are in replay_from order).
        t0 = self.replay_point()
        self.position = self.replay_from.index(t0)
        self.window = deque()


@dataclass
class Tree:
    """The operators in round-robin order, the gatekeepers (their input carries a redo queue),
    the commit operator, and the source rows of each redo queue."""

    operators: list[Operator]
    gatekeepers: list[Operator]
    commit: Aggregate
    sources: dict[str, list[Row]]  # gatekeeper name → all its source rows (its redo queue)


@dataclass
class Run:
    """The result of running a tree to the end: commits in order, evaluations per operator, the
    evaluations after the last commit, resets and rows replayed."""

    commits: list[Commit]
    evaluations: dict[str, int]
    tail: dict[str, int]
    resets: int
    replayed: int
    outputs: list[tuple[int, float]] = field(default_factory=list)

    def full(self) -> list[Commit]:
        return [c for c in self.commits if not c.partial]

    def partial(self) -> list[Commit]:
        return [c for c in self.commits if c.partial]


def run(tree: Tree, batch: int, constraint: bool, redo: bool = True) -> Run:
    """Run ``tree`` with a batch round-robin scheduler (§7.2: pick the next evaluable operator in
    list order, evaluate it up to ``batch`` times) until nothing can be evaluated.

    With ``constraint`` (§6), before every evaluation: a gatekeeper may not evaluate while any
    other operator of the redo area can, and among gatekeepers only the one whose next row is
    earliest. With ``redo`` every commit resets the redo area (queues emptied, states rebuilt)
    and feeds each redo queue again from the oldest tick the next commit can need.

    >>> r = run(fig67_tree(n=10, r=4, s=1), batch=10, constraint=True)
    >>> [c.evaluations["join"] for c in r.full()]
    [4, 4, 4, 4, 4, 4, 4]
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    ops = tree.operators
    gatekeepers = {id(g) for g in tree.gatekeepers}
    inner = [op for op in ops if id(op) not in gatekeepers]
    inputs = {g.name: g.inputs[0] for g in tree.gatekeepers}
    redo_queues = {name: deque(rows) for name, rows in tree.sources.items()}
    for name, rows in tree.sources.items():
        inputs[name].extend(rows)
    overlapping = tree.commit.r > tree.commit.s
    commits: list[Commit] = []
    last = {op.name: 0 for op in ops}
    resets = replayed = 0

    def earliest_gatekeeper() -> Operator | None:
        ready = [g for g in tree.gatekeepers if g.inputs[0]]
        return min(ready, key=lambda g: g.inputs[0][0].tick) if ready else None

    def may_evaluate(op: Operator) -> bool:
        if not op.evaluable():
            return False
        if not constraint or id(op) not in gatekeepers:
            return True
        return not any(o.evaluable() for o in inner) and earliest_gatekeeper() is op

    def reset_and_replay() -> int:
        t0 = tree.commit.replay_point()
        for op in ops:
            op.output.clear()
            op.reset()
        fed = 0
        for name, rq in redo_queues.items():
            while rq and rq[0].tick < t0:
                rq.popleft()  # no retained state depends on it any more
            q = inputs[name]
            untaken = len(q)
            q.clear()
            q.extend(rq)
            fed += len(rq) - untaken
        return fed

    turn = 0
    while True:
        for k in range(len(ops)):
            op = ops[(turn + k) % len(ops)]
            if may_evaluate(op):
                turn = (turn + k) % len(ops)
                break
        else:
            break
        for _ in range(batch):
            if not may_evaluate(op):
                break
            commit = op.evaluate()
            if commit is None:
                continue
            counts = {o.name: o.evaluations for o in ops}
            commit.evaluations = {n: counts[n] - last[n] for n in counts}
            last = counts
            commits.append(commit)
            if redo and overlapping:
                replayed += reset_and_replay()
                resets += 1
        turn += 1
    evaluations = {o.name: o.evaluations for o in ops}
    tail = {n: evaluations[n] - last[n] for n in evaluations}
    return Run(commits, evaluations, tail, resets, replayed, list(tree.commit.outputs))


# Fig. 6/7 -------------------------------------------------------------------------------------


def eq1(n: int, r: int, s: int) -> int:
    """Equation (1), the best schedule's join evaluations: N_best = r(⌊(n−r)/s⌋+1).

    >>> eq1(100, 4, 1)
    388
    """
    return r * ((n - r) // s + 1)


def eq2(n: int, r: int, s: int) -> int:
    """Equation (2), the worst schedule's: N_worst = Σ_{k=0}^{⌊(n−r)/s⌋} (n − ks).

    >>> eq2(100, 4, 1)
    5044
    """
    return sum(n - k * s for k in range((n - r) // s + 1))


def fig67_tree(n: int, r: int, s: int, partial: bool = True) -> Tree:
    """Fig. 6's tree: a stream of n rows (one per tick) ⋈ x (each row matches one row of x), then
    alpha = AVG(x.a) over [Rows r Slide s], the commit operator; the join is the gatekeeper.

    >>> len(fig67_tree(5, 4, 1).sources["join"])
    5
    """
    x = [{"k": k, "a": 10 * k} for k in range(n)]
    stream = Queue()
    join = ReferenceJoin("join", [stream], x, ("k", "k"))
    alpha = Aggregate("alpha", [join.output], "join.a", r, s, partial)
    rows = [Row(t, t, (t,), {"k": t - 1}) for t in range(1, n + 1)]
    return Tree([join, alpha], [join], alpha, {"join": rows})


# Fig. 8 ---------------------------------------------------------------------------------------


@dataclass
class Fig8Data:
    """Fig. 8's data as plain columns: resources x, y (key k, selection column p, AVG column a) and
    streams s1, s2 (tick ts, key k, window-join column u, sel3 column v); the predicates'
    thresholds in percent (sel1: x.p < sel1, sel2: y.p < sel2, ⋈3: (s1.u + s2.u) % 100 < theta,
    sel3: (s1.v + s2.v) % 100 < sel3)."""

    x: dict[str, list[int]]
    y: dict[str, list[int]]
    s1: dict[str, list[int]]
    s2: dict[str, list[int]]
    theta: int
    sel1: int
    sel2: int
    sel3: int


def fig8_data(
    seed: int,
    theta: float,
    sel1: float = 0.5,
    sel2: float = 0.5,
    sel3: float = 0.5,
    rows: int = 1000,
    size: int = 1000,
) -> Fig8Data:
    """Seeded data for Fig. 8 whose selectivities are realised by the values, so that every
    count is exact for a seed (the engine benchmark runs the same columns).

    Each stream's keys are a permutation of the resource's (each row matches exactly one row, the
    paper's θ⋈1 = 1/|x|), and the resource's column p takes every value 0..99 equally often, so
    sel1 and sel2 pass exactly sel·rows rows when rows = size; ⋈3's and sel3's columns are uniform
    0..99.

    >>> d = fig8_data(1, 0.5, rows=100, size=100)
    >>> sum(p < d.sel1 for p in d.x["p"]), len(d.s1["ts"])
    (50, 100)
    """
    for name, v in (("theta", theta), ("sel1", sel1), ("sel2", sel2), ("sel3", sel3)):
        if not 0 <= v <= 1 or round(v * 100) != v * 100:
            raise ValueError(f"{name} must be a multiple of 0.01 in [0, 1], got {v}")
    if rows < 1 or size < 1:
        raise ValueError(f"rows and size must be positive, got rows={rows}, size={size}")
    rng = random.Random(seed)

    def resource() -> dict[str, list[int]]:
        keys = list(range(size))
        p = [k % 100 for k in keys]
        rng.shuffle(p)
        return {"k": keys, "p": p, "a": [rng.randrange(1000) for _ in keys]}

    def stream() -> dict[str, list[int]]:
        keys: list[int] = []
        while len(keys) < rows:
            perm = list(range(size))
            rng.shuffle(perm)
            keys += perm
        return {
            "ts": list(range(1, rows + 1)),
            "k": keys[:rows],
            "u": [rng.randrange(100) for _ in range(rows)],
            "v": [rng.randrange(100) for _ in range(rows)],
        }

    x, y = resource(), resource()
    s1, s2 = stream(), stream()
    pct = [round(v * 100) for v in (theta, sel1, sel2, sel3)]
    return Fig8Data(x, y, s1, s2, *pct)


def _rows(cols: dict[str, list[int]]) -> list[dict[str, int]]:
    return [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]


def fig8_tree(data: Fig8Data) -> Tree:
    """Fig. 8's tree (reconstructed): S1 ⋈1 x → sel1, S2 ⋈2 y → sel2, ⋈3 over [Range 10 Slide 10]
    → sel3 → alpha = AVG(x.a) over [Rows 10]. Redo queues on S1 and S2 (§3.4.1 rule (1)), so ⋈1 and
    ⋈2 are the gatekeepers; alpha is the commit operator. Round-robin order: leaves to root.

    >>> [op.name for op in fig8_tree(fig8_data(1, 0.5, rows=20, size=20)).operators]
    ['join1', 'sel1', 'join2', 'sel2', 'join3', 'sel3', 'alpha']
    """
    d = data
    q1, q2 = Queue(), Queue()
    # Stream columns are prefixed with their stream, resource columns with their join.
    join1 = ReferenceJoin("join1", [q1], _rows(d.x), ("s1.k", "k"))
    sel1 = Select("sel1", [join1.output], lambda v: v["join1.p"] < d.sel1)
    join2 = ReferenceJoin("join2", [q2], _rows(d.y), ("s2.k", "k"))
    sel2 = Select("sel2", [join2.output], lambda v: v["join2.p"] < d.sel2)
    join3 = WindowJoin(
        "join3",
        [sel1.output, sel2.output],
        10,
        lambda a, b: (a["s1.u"] + b["s2.u"]) % 100 < d.theta,
    )
    sel3 = Select("sel3", [join3.output], lambda v: (v["s1.v"] + v["s2.v"]) % 100 < d.sel3)
    alpha = Aggregate("alpha", [sel3.output], "join1.a", 10, 1, partial=True)

    def source(name: str, cols: dict[str, list[int]]) -> list[Row]:
        return [
            Row(t, t, (t,), {f"{name}.{c}": v for c, v in r.items()})
            for t, r in zip(cols["ts"], _rows(cols), strict=True)
        ]

    ops: list[Operator] = [join1, sel1, join2, sel2, join3, sel3, alpha]
    return Tree(
        ops, [join1, join2], alpha, {"join1": source("s1", d.s1), "join2": source("s2", d.s2)}
    )


def _fig8_pairs(data: Fig8Data) -> list[tuple[tuple[int, int, int], int]]:
    """alpha's input computed directly: each pair of ⋈3 passing sel1, sel2, θ⋈3 and sel3 as
    (order key, x.a), in the order ⋈3 emits them: by the later row (left first on equal ticks),
    then by the earlier one."""
    d = data
    x = dict(zip(d.x["k"], zip(d.x["p"], d.x["a"], strict=True), strict=True))
    y = dict(zip(d.y["k"], d.y["p"], strict=True))
    left = [r for r in _rows(d.s1) if x[r["k"]][0] < d.sel1]
    right = [r for r in _rows(d.s2) if y[r["k"]] < d.sel2]
    pairs = []
    for a in left:
        for b in right:
            if (a["ts"] - 1) // 10 != (b["ts"] - 1) // 10:
                continue
            if (a["u"] + b["u"]) % 100 >= d.theta or (a["v"] + b["v"]) % 100 >= d.sel3:
                continue
            if a["ts"] > b["ts"]:
                pairs.append(((a["ts"], 0, b["ts"]), x[a["k"]][1]))
            else:
                pairs.append(((b["ts"], 1, a["ts"]), x[a["k"]][1]))
    return sorted(pairs)


def fig8_static(data: Fig8Data) -> list[tuple[int, float]]:
    """alpha's outputs computed directly from the data, without queues, scheduler or resets: the
    values every schedule must commit (position in alpha's input, AVG over the last 10 positions).

    >>> d = fig8_data(1, 0.5, rows=200, size=200)
    >>> fig8_static(d) == run(fig8_tree(d), batch=3, constraint=False).outputs
    True
    """
    pairs = _fig8_pairs(data)
    values = [v for _, v in pairs]
    out = []
    for p in range(1, len(values) + 1):
        window = values[max(0, p - 10) : p]
        out.append((p, sum(window) / len(window)))
    return out


def fig8_cql(data: Fig8Data, rows: int = 10, lookback: int = 10) -> tuple[int, int]:
    """Fig. 8 as CQL runs it, with the gatekeeper constraint: (commits, reference-join
    evaluations). In CQL alpha is a relation per instant, committed at each instant its window
    changes (the window join's pairs of one tick arrive together), not at each row as
    ``fig8_tree``'s alpha does. Its ISTREAM is taken at the commit, between whole committed
    results, so an instant whose new pairs leave the AVG as it was still commits, emitting
    nothing. Under the constraint a gatekeeper takes no row past the instant being committed (an
    input's progress is its queue head), so with ``redo="always"`` each commit at tau costs the
    reference joins the rows from the replay point through tau once more: the replay rebuilds
    alpha's ``rows`` current rows, from the oldest one's tick less the window join's
    ``lookback`` (its [Range 10] windows), or from the first row while alpha has held fewer.
    Plus every row's first pass. The schedule does not enter, so this holds for every batch n;
    without the constraint the gatekeepers' run-ahead depends on the round robin and is not
    modelled here.

    >>> fig8_cql(fig8_data(1, 0.5, rows=100, size=100))
    (45, 2188)
    """
    d = data
    pairs = _fig8_pairs(d)
    ticks = [key[0] for key, _ in pairs]
    source = sorted(d.s1["ts"] + d.s2["ts"])
    evaluations, commits = len(source), 0
    for tau in sorted(set(ticks)):
        upto = bisect.bisect_right(ticks, tau)
        commits += 1
        start = ticks[upto - rows] - lookback if upto >= rows else source[0]
        evaluations += bisect.bisect_right(source, tau) - bisect.bisect_left(source, start)
    return commits, evaluations


# The Fig. 8 settings the README's table reports: (θ⋈3, sel1, sel2).
FIG8_SETTINGS = [(0.5, 0.5, 0.5), (0.15, 0.5, 0.5), (0.5, 0.9, 0.1), (0.15, 0.9, 0.1)]
REFERENCE_JOINS = ("join1", "join2")


@dataclass
class Fig8Row:
    """One line of the table: evaluations with and without the constraint at batch n."""

    theta: float
    sel1: float
    sel2: float
    n: int
    with_: dict[str, int]
    without: dict[str, int]
    commits: int

    def reference(self, evaluations: dict[str, int]) -> int:
        return sum(evaluations[j] for j in REFERENCE_JOINS)

    @property
    def ratio(self) -> float:
        """Reference-join evaluations without/with the constraint."""
        return self.reference(self.without) / self.reference(self.with_)


def fig8_table(
    seed: int = 1,
    rows: int = 1000,
    size: int = 1000,
    batches: range = range(1, 11),
    settings: list[tuple[float, float, float]] = FIG8_SETTINGS,
) -> list[Fig8Row]:
    """Runs Fig. 8's tree for every setting and batch n, with and without the constraint; the
    committed outputs are checked against ``fig8_static`` on the way.

    >>> [round(r.ratio, 2) > 1 for r in fig8_table(rows=100, size=100, batches=range(9, 11),
    ...                                             settings=[(0.5, 0.5, 0.5)])]
    [True, True]
    """
    table = []
    for theta, sel1, sel2 in settings:
        data = fig8_data(seed, theta, sel1, sel2, rows=rows, size=size)
        expected = fig8_static(data)
        for n in batches:
            runs = [run(fig8_tree(data), n, constraint) for constraint in (True, False)]
            for r in runs:
                if r.outputs != expected:
                    raise AssertionError(f"θ={theta}, n={n}: outputs differ from the static run")
            table.append(
                Fig8Row(
                    theta, sel1, sel2, n, runs[0].evaluations, runs[1].evaluations, len(expected)
                )
            )
    return table


def print_table(table: list[Fig8Row]) -> None:
    print("| θ⋈3 | sel1/sel2 | n | commits | all with | all without | ⋈1+⋈2 with | ⋈1+⋈2 without "
          "| ratio ⋈1+⋈2 | ratio all |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in table:
        w, wo = sum(r.with_.values()), sum(r.without.values())
        print(
            f"| {r.theta} | {r.sel1}/{r.sel2} | {r.n} | {r.commits} | {w:,} | {wo:,} "
            f"| {r.reference(r.with_):,} | {r.reference(r.without):,} | {r.ratio:.2f} "
            f"| {wo / w:.2f} |"
        )


def print_operators(table: list[Fig8Row], batches: tuple[int, ...] = (1, 10)) -> None:
    names = list(table[0].with_)
    print("| θ⋈3 | sel1/sel2 | n | constraint | " + " | ".join(names) + " |")
    print("|---" * (4 + len(names)) + "|")
    for r in table:
        if r.n in batches:
            for label, ev in (("with", r.with_), ("without", r.without)):
                cells = " | ".join(f"{ev[n]:,}" for n in names)
                print(f"| {r.theta} | {r.sel1}/{r.sel2} | {r.n} | {label} | {cells} |")


def plot(table: list[Fig8Row], png: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("the PNG needs matplotlib (the bench extra); --png '' skips it") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(FIG8_SETTINGS), figsize=(4 * len(FIG8_SETTINGS), 3.4))
    for ax, (theta, sel1, sel2) in zip(axes, FIG8_SETTINGS, strict=True):
        rs = [r for r in table if (r.theta, r.sel1, r.sel2) == (theta, sel1, sel2)]
        ns = [r.n for r in rs]
        ax.plot(ns, [sum(r.without.values()) for r in rs], "o-", label="all, without")
        ax.plot(ns, [sum(r.with_.values()) for r in rs], "s-", label="all, with")
        ax.plot(ns, [r.reference(r.without) for r in rs], "o--", label="⋈1+⋈2, without")
        ax.plot(ns, [r.reference(r.with_) for r in rs], "s--", label="⋈1+⋈2, with")
        ax.set_title(f"θ⋈3 = {theta}, sel1/sel2 = {sel1}/{sel2}", fontsize=9)
        ax.set_xlabel("batch n")
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("evaluations")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", action="store_true", help="print Fig. 8's table")
    parser.add_argument("--eq", action="store_true", help="print Fig. 7's counts against (1), (2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rows", type=int, default=1000, help="rows per stream and resource")
    parser.add_argument("--png", default=str(HERE / "fig8_evaluations.png"), help="'' for none")
    args = parser.parse_args(argv)
    if args.eq:
        print("| r | s | n | Σ join, constraint | eq. (1) | Σ join, batch ≥ n, none | eq. (2) |")
        print("|---|---|---|---|---|---|---|")
        for r, s in ((4, 1), (7, 2), (10, 3)):
            for n in (10, 25, 50, 100):
                best = run(fig67_tree(n, r, s), n, True).full()
                worst = run(fig67_tree(n, r, s), n, False).full()
                print(
                    f"| {r} | {s} | {n} | {sum(c.evaluations['join'] for c in best):,} "
                    f"| {eq1(n, r, s):,} | {sum(c.evaluations['join'] for c in worst):,} "
                    f"| {eq2(n, r, s):,} |"
                )
        n, r, s = 12, 4, 1
        for label, batch, constraint in (
            ("constraint, batch 1", 1, True),
            ("none, batch n", n, False),
        ):
            result = run(fig67_tree(n, r, s), batch, constraint)
            full = [c.evaluations["join"] for c in result.full()]
            partial = [c.evaluations["join"] for c in result.partial()]
            print(f"\nr={r}, s={s}, n={n}, {label}: join evaluations per commit {full} "
                  f"(sum {sum(full)}), partial first windows apart {partial}")  # fmt: skip
    if args.table:
        table = fig8_table(args.seed, args.rows, args.rows)
        print_table(table)
        print()
        print_operators(table)
        if args.png:
            plot(table, Path(args.png))
            print(f"saved {args.png}")
    if not (args.eq or args.table):
        parser.print_help(sys.stderr)


if __name__ == "__main__":
    main()
