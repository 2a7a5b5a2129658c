"""A slow, obviously-correct evaluator of whole CQL scripts (SEMANTICS.md §3–§4), for random scripts
to be checked against.

The engine's per-shape references (``reference.py``, ``recursive.py``) check one query shape each.
This one takes a script as a whole: several streams and relations, named queries that read one
another (registered in any order), joins, aggregates, set operations, DISTINCT, every window on base
and derived streams, ISTREAM / DSTREAM / RSTREAM with delays, and queries registered while the
engine runs. It shares nothing with the engine but the meaning of CQL: scripts are small trees of
its own (``Select``, ``SetOp``, ``ToStream``), rendered to CQL text for the engine.

A relation is a piecewise-constant function from logical time (tick, ε-step) to bags (``Rel``);
every relational operator is computed pointwise, at every instant where an input changes, straight
from SEMANTICS.md §4.2 ("at every t, the SQL result over R(t)"). Streams are lists of (values, time)
in arrival order.

Queries registered while the engine runs (phase 1, after ``advance(p)``) see (SEMANTICS.md §4.5):
stream rows from p on, so their windows fill from p; base relations whole, each tuple alive at p as
[max(start, p), end); an earlier stream-valued query's rows from p on; an earlier relation-valued
query as if written inline, re-derived from p by the same rules.

Where a result depends on the order of rows that share an instant in a derived stream (``[Rows N]``
or ``[Partition By k Rows N]`` over a stream with different values at one instant, which
SEMANTICS.md §4.1 leaves to arrival order), the query is *uncertain* and its result is not compared.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from itertools import product

from oracle.reference import INF, Col, Lit, Op, ceil_to, change_lifetimes, evaluate

Time = tuple  # (tick, step); INF = (math.inf, 0)
Expr = Col | Lit | Op


# ---- scripts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    name: str
    relation: bool  # REGISTER RELATION (changes with an op column) or REGISTER STREAM
    columns: tuple  # ((name, type), ...), type in int | double | str | bool


@dataclass(frozen=True)
class Source:
    name: str  # an input or a named query
    alias: str
    window: tuple | None = None  # reference.lifetimes' windows; None: none written


@dataclass(frozen=True)
class Agg:
    fn: str  # COUNT(*) is ("COUNT", None); COUNT SUM AVG MIN MAX
    arg: Expr | None = None
    distinct: bool = False


@dataclass(frozen=True)
class Select:
    items: tuple  # ((Expr | Agg, alias), ...)
    sources: tuple  # (Source, ...)
    where: Expr | None = None
    group_by: tuple | None = None  # (Expr, ...); items that are not Agg are among them
    having: tuple | None = None  # (op, Agg, int literal)
    distinct: bool = False


@dataclass(frozen=True)
class SetOp:
    op: str  # UNION ALL | UNION | EXCEPT | INTERSECT
    left: QExpr
    right: QExpr


@dataclass(frozen=True)
class ToStream:
    op: str  # ISTREAM | DSTREAM | RSTREAM
    inner: QExpr
    delay: object = None  # None, "now" (one ε) or a number of ticks


QExpr = Select | SetOp | ToStream


@dataclass(frozen=True)
class Query:
    name: str
    body: QExpr
    phase: int = 0  # 1: registered while the engine runs, after advance(cut)


CQL_TYPES = {"int": "BIGINT", "double": "DOUBLE", "str": "VARCHAR", "bool": "BOOLEAN"}


def render_expr(e: Expr) -> str:
    if isinstance(e, Col):
        return e.name
    if isinstance(e, Lit):
        if e.value is None:
            return "NULL"
        if e.type == "bool":
            return "TRUE" if e.value else "FALSE"
        if e.type == "str":
            return "'" + e.value.replace("'", "''") + "'"
        return f"({e.value!r})" if e.value < 0 else repr(e.value)
    a = [render_expr(x) for x in e.args]
    if e.op == "NOT":
        return f"(NOT {a[0]})"
    if e.op == "ISNULL":
        return f"({a[0]} IS NULL)"
    if e.op == "ISNOTNULL":
        return f"({a[0]} IS NOT NULL)"
    if e.op == "neg":
        return f"(-{a[0]})"
    if e.op.startswith("CAST_"):
        return f"CAST({a[0]} AS {CQL_TYPES[e.op[5:]]})"
    return f"({a[0]} {e.op} {a[1]})"


def render_agg(a: Agg) -> str:
    if a.arg is None:
        return "COUNT(*)"
    return f"{a.fn}({'DISTINCT ' if a.distinct else ''}{render_expr(a.arg)})"


def render_window(w: tuple | None) -> str:
    if w is None:
        return ""
    kind = w[0]
    if kind == "now":
        return " [Now]"
    if kind == "unbounded":
        return " [Range Unbounded]"
    if kind == "range":
        return f" [Range {w[1]}]"
    if kind == "slide":
        return f" [Range {w[1]} Slide {w[2]}]"
    if kind == "rows":
        return f" [Rows {w[1]}]"
    return f" [Partition By {w[1]} Rows {w[2]}]"


def render(q: QExpr) -> str:
    if isinstance(q, ToStream):
        delay = "" if q.delay is None else " <Now>" if q.delay == "now" else f" <{q.delay}>"
        return f"{q.op}({render(q.inner)}){delay}"
    if isinstance(q, SetOp):
        right = render(q.right)
        return (
            f"{render(q.left)} {q.op} {'(' + right + ')' if isinstance(q.right, SetOp) else right}"
        )
    items = ", ".join(
        f"{render_agg(e) if isinstance(e, Agg) else render_expr(e)} AS {alias}"
        for e, alias in q.items
    )
    sources = ", ".join(f"{s.name}{render_window(s.window)} AS {s.alias}" for s in q.sources)
    text = f"SELECT {'DISTINCT ' if q.distinct else ''}{items} FROM {sources}"
    if q.where is not None:
        text += f" WHERE {render_expr(q.where)}"
    if q.group_by is not None:
        text += " GROUP BY " + ", ".join(render_expr(e) for e in q.group_by)
    if q.having is not None:
        op, agg, value = q.having
        text += f" HAVING {render_agg(agg)} {op} {value}"
    return text


def render_inputs(inputs: list[Input]) -> str:
    return "\n".join(
        f"REGISTER {'RELATION' if i.relation else 'STREAM'} {i.name} ("
        + ", ".join(f"{c} {CQL_TYPES[t]}" for c, t in i.columns)
        + ");"
        for i in inputs
    )


def render_queries(queries: list[Query]) -> str:
    return "\n".join(f"REGISTER QUERY {q.name} AS {render(q.body)};" for q in queries)


# ---- relations as functions of time ---------------------------------------------------------


class Rel:
    """R(t) as a piecewise-constant function: ``bags[i]`` holds for ``points[i] <= t <
    points[i+1]`` (the last for ever); R is empty before ``points[0]``. Consecutive bags differ."""

    def __init__(self, points: list, bags: list):
        self.points, self.bags = [], []
        before: Counter = Counter()
        for t, bag in zip(points, bags, strict=True):
            positive = +bag
            if positive != before:
                self.points.append(t)
                self.bags.append(positive)
                before = positive

    def at(self, t: Time) -> Counter:
        i = bisect_right(self.points, t) - 1
        return self.bags[i] if i >= 0 else Counter()

    @staticmethod
    def of_lifetimes(tuples) -> Rel:
        """From lifetime tuples (values, start, end)."""
        points = sorted(
            {s for _, s, e in tuples if s < e} | {e for _, s, e in tuples if s < e and e != INF}
        )
        return Rel(points, [Counter(v for v, s, e in tuples if s <= t < e) for t in points])


def pointwise(rels: list[Rel], f) -> Rel:
    """The relation f(R1(t), ..., Rn(t)) at every t."""
    points = sorted({t for r in rels for t in r.points})
    return Rel(points, [f([r.at(t) for r in rels]) for t in points])


def compare_relations(got: list, want: Rel) -> str | None:
    """None when the engine's lifetime tuples are equivalent to ``want`` (SEMANTICS.md §4.8: same
    R(t) at every t, ghosts allowed); else the first instant where they differ."""
    mine = Rel.of_lifetimes(got)
    for t in sorted(set(mine.points) | set(want.points)):
        if mine.at(t) != want.at(t):
            return f"at {t}: engine {dict(mine.at(t))} expected {dict(want.at(t))}"
    return None


# ---- evaluation ------------------------------------------------------------------------------


@dataclass
class Stream:
    rows: list  # [(values, time)] in arrival order (time order; ties in emission order)
    columns: list  # [(name, type)]
    ambiguous: bool = False  # different values share an instant: their order is the engine's
    uncertain: bool = False  # a result that depends on such an order


@dataclass
class Relation:
    rel: Rel
    columns: list
    uncertain: bool = False


def shift(t: Time, delay) -> Time:
    if delay is None:
        return t
    return (t[0], t[1] + 1) if delay == "now" else (t[0] + delay, t[1])


def window_ceil(t: Time, s: int) -> Time:
    """⌈t/S⌉·S on (tick, step) time: boundaries sit at step 0 (SEMANTICS.md §4.1)."""
    if t == INF:
        return INF
    return (ceil_to(t[0], s), 0) if t[1] == 0 else ((t[0] // s + 1) * s, 0)


def window_lifetimes(rows: list, columns: list, window: tuple | None) -> list:
    """(values, start, end) of each stream row (values, time) under a window (SEMANTICS.md §4.1), on
    (tick, step) time; rows in arrival order."""
    kind = (window or ("unbounded",))[0]
    out = []
    for i, (v, t) in enumerate(rows):
        if kind == "now":
            start, end = t, (t[0], t[1] + 1)
        elif kind == "range":
            start, end = t, (t[0] + window[1], t[1])
        elif kind == "unbounded":
            start, end = t, INF
        elif kind == "slide":
            start, end = window_ceil(t, window[2]), window_ceil((t[0] + window[1], t[1]), window[2])
        elif kind == "rows":
            n = window[1]
            start, end = t, rows[i + n][1] if i + n < len(rows) else INF
        else:  # partition
            k = [c for c, _ in columns].index(window[1])
            same = [j for j in range(i + 1, len(rows)) if rows[j][0][k] == v[k]]
            start, end = t, rows[same[window[2] - 1]][1] if len(same) >= window[2] else INF
        out.append((v, start, end))
    return out


def normalize(v):
    """Values as compared: doubles rounded (AVG's division), NaN and -0.0 made comparable."""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return round(v, 9) + 0.0
    return v


def norm_row(values) -> tuple:
    return tuple(normalize(x) for x in values)


class Evaluator:
    """The results of every query of a script over given inputs.

    ``data`` maps each input to its rows (dicts with the input's columns, ``ts`` and, for
    relations, ``op``) in push order; ``cut`` is the progress at which phase-1 queries were
    registered (``advance(cut)`` before their ``execute``); ``progress`` is P, the engine's
    progress before ``close()`` (SEMANTICS.md §4.3: where RSTREAM stops for tuples that never
    end)."""

    def __init__(
        self,
        inputs: list[Input],
        queries: list[Query],
        data: dict,
        progress: int,
        cut: int | None = None,
    ):
        self.inputs = {i.name: i for i in inputs}
        self.queries = {q.name: q for q in queries}
        self.data = data
        self.progress = progress
        self.cut = cut
        self.memo: dict = {}

    def world(self, q: Query) -> Time | None:
        return (self.cut, 0) if q.phase == 1 else None

    def result(self, name: str) -> Stream | Relation:
        q = self.queries[name]
        return self.eval(q.body, self.world(q))

    # A source read at world p (None: from the start).
    def source(self, name: str, p: Time | None) -> Stream | Relation:
        key = ("source", name, p)
        if key in self.memo:
            return self.memo[key]
        if name in self.inputs:
            i = self.inputs[name]
            cols = list(i.columns)
            rows = self.data.get(name, [])
            if i.relation:
                tuples = [
                    (norm_row(v), (s[0], 0), e)
                    for v, s, e in change_lifetimes(rows, [c for c, _ in cols])
                ]
                if p is not None:
                    tuples = [(v, max(s, p), e) for v, s, e in tuples if e > p]
                out = Relation(Rel.of_lifetimes(tuples), cols)
            else:
                out = Stream(
                    [
                        (norm_row(r[c] for c, _ in cols), (r["ts"], 0))
                        for r in rows
                        if p is None or (r["ts"], 0) >= p
                    ],
                    cols,
                )
        else:
            q = self.queries[name]
            if isinstance(q.body, ToStream):
                s = self.eval(q.body, self.world(q))
                rows = [(v, t) for v, t in s.rows if p is None or t >= p]
                out = Stream(rows, s.columns, ambiguous_rows(rows), s.uncertain)
            else:
                # A relation-valued query read by a later-registered one is re-derived from p.
                out = self.eval(q.body, p if p is not None else self.world(q))
        self.memo[key] = out
        return out

    def eval(self, q: QExpr, p: Time | None):
        key = ("expr", id(q), p)
        if key not in self.memo:
            self.memo[key] = (q, self._eval(q, p))  # q kept alive: its id stays unique
        return self.memo[key][1]

    def _eval(self, q: QExpr, p: Time | None):
        if isinstance(q, ToStream):
            inner = self.eval(q.inner, p)
            return self.to_stream(q, inner)
        if isinstance(q, SetOp):
            left, right = self.eval(q.left, p), self.eval(q.right, p)
            op = q.op

            def f(bags):
                a, b = bags
                if op == "UNION ALL":
                    return a + b
                if op == "UNION":
                    return Counter(set(a) | set(b))
                if op == "EXCEPT":
                    return Counter(set(a) - set(b))
                return Counter(set(a) & set(b))

            return Relation(
                pointwise([left.rel, right.rel], f), left.columns, left.uncertain or right.uncertain
            )
        return self.select(q, p)

    def to_stream(self, q: ToStream, inner: Relation) -> Stream:
        rel = inner.rel
        rows = []
        if q.op in ("ISTREAM", "DSTREAM"):
            before: Counter = Counter()
            for t, bag in zip(rel.points, rel.bags, strict=True):
                change = bag - before if q.op == "ISTREAM" else before - bag
                before = bag
                for v, n in sorted(change.items(), key=repr):
                    rows.extend([(v, shift(t, q.delay))] * n)
        else:
            rows = [(v, shift(t, q.delay)) for v, t in rstream_rows(rel, self.progress)]
        return Stream(rows, inner.columns, ambiguous_rows(rows), inner.uncertain)

    def select(self, q: Select, p: Time | None) -> Relation:
        inputs, uncertain = [], False
        for s in q.sources:
            src = self.source(s.name, p)
            uncertain |= src.uncertain
            if isinstance(src, Stream):
                if s.window is not None and s.window[0] in ("rows", "partition") and src.ambiguous:
                    uncertain = True
                rel = Rel.of_lifetimes(window_lifetimes(src.rows, src.columns, s.window))
            else:
                rel = src.rel
            inputs.append((s.alias, src.columns, rel))
        names = [f"{alias}.{c}" for alias, cols, _ in inputs for c, _ in cols]

        def at(bags):
            joined: Counter = Counter()
            for combo in product(*[list(b.items()) for b in bags]):
                values, n = (), 1
                for v, m in combo:
                    values += v
                    n *= m
                joined[values] += n
            rows = []
            for values, n in joined.items():
                row = dict(zip(names, values, strict=True))
                if q.where is None or evaluate(q.where, row) is True:
                    rows.append((row, n))
            return self.project(q, rows)

        rel = pointwise([r for _, _, r in inputs], at)
        return Relation(rel, self.columns(q, inputs), uncertain)

    def columns(self, q: Select, inputs) -> list:
        types = {f"{alias}.{c}": t for alias, cols, _ in inputs for c, t in cols}
        return [(alias, item_type(e, types)) for e, alias in q.items]

    @staticmethod
    def project(q: Select, rows: list) -> Counter:
        out: Counter = Counter()
        aggregated = q.group_by is not None or any(isinstance(e, Agg) for e, _ in q.items)
        if not aggregated:
            for row, n in rows:
                out[norm_row(evaluate(e, row) for e, _ in q.items)] += n
        else:
            groups: dict = {}
            for row, n in rows:
                key = tuple(evaluate(g, row) for g in (q.group_by or ()))
                groups.setdefault(key, []).extend([row] * n)
            for key, members in groups.items():
                if q.having is not None:
                    op, agg, value = q.having
                    got = aggregate(agg, members)
                    if got is None or not evaluate(
                        Op(op, (Lit(got, "double"), Lit(value, "int"))), {}
                    ):
                        continue
                values = []
                for e, _ in q.items:
                    values.append(
                        aggregate(e, members)
                        if isinstance(e, Agg)
                        else key[list(q.group_by).index(e)]
                    )
                out[norm_row(values)] += 1
        if q.distinct:
            out = Counter(set(out))
        return out


def aggregate(a: Agg, rows: list):
    if a.arg is None:
        return len(rows)
    vals = [evaluate(a.arg, r) for r in rows]
    vals = [v for v in vals if v is not None]
    if a.distinct:
        vals = list(set(vals))
    if a.fn == "COUNT":
        return len(vals)
    if not vals:
        return None
    if a.fn == "SUM":
        return sum(vals)
    if a.fn == "AVG":
        return sum(vals) / len(vals)
    return min(vals) if a.fn == "MIN" else max(vals)


def item_type(e, types: dict) -> str:
    if isinstance(e, Agg):
        if e.fn == "COUNT":
            return "int"
        if e.fn == "AVG":
            return "double"
        return expr_type(e.arg, types)
    return expr_type(e, types)


def expr_type(e: Expr, types: dict) -> str:
    if isinstance(e, Col):
        return types[e.name]
    if isinstance(e, Lit):
        return e.type
    if e.op in ("+", "-", "*", "%"):
        ts = {expr_type(a, types) for a in e.args}
        return "double" if "double" in ts else "int"
    if e.op == "/":
        return "double"
    if e.op == "neg":
        return expr_type(e.args[0], types)
    if e.op.startswith("CAST_"):
        return e.op[5:]
    return "bool"


def ambiguous_rows(rows: list) -> bool:
    """True when two different values share an instant: their order is the engine's to choose."""
    seen: dict = {}
    return any(seen.setdefault(t, v) != v for v, t in rows)


def rstream_rows(rel: Rel, progress: int) -> list:
    """RSTREAM (SEMANTICS.md §4.3): all of R(T) at every tick T (step 0) while R is non-empty; after
    close(), at every tick up to P (``progress``, inclusive), and beyond P only at ticks where R(T)
    holds a tuple whose end is finite — read on R as a function, whatever its tuples' split: some
    value whose multiplicity drops below its multiplicity at T at a later instant."""
    if not rel.points:
        return []
    out = []
    first = rel.points[0][0]
    last = max(progress, *(t[0] for t in rel.points))
    for tick in range(int(first), int(last) + 1):
        t = (tick, 0)
        bag = rel.at(t)
        if not bag:
            continue
        if tick > progress:
            later = [b for u, b in zip(rel.points, rel.bags, strict=True) if u > t]
            if not any(b[v] < n for v, n in bag.items() for b in later):
                continue
        for v, n in sorted(bag.items(), key=repr):
            out.extend([(v, t)] * n)
    return out
