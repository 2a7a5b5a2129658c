"""Whole random scripts against the script reference (``script_reference.py``), in every
configuration.

The generator draws what the per-shape tests never combine: several streams and a relation (some
left empty), named queries that read inputs and one another — registered in a shuffled order, so a
query often reads one registered after it, inside set operations too — joins, aggregates with and
without GROUP BY / HAVING, DISTINCT, UNION ALL / UNION / EXCEPT / INTERSECT with differently named
operands, every window over base streams and over derived streams (whose rows sit at ε-steps after
``<Now>`` or DSTREAM of ``[Now]``), ISTREAM / DSTREAM / RSTREAM with delays read by other queries,
and a second batch of queries registered while the engine runs (after ``advance(cut)``, with
relations pushed before and after it, and copies of earlier queries that sub-plan sharing could
confuse). Inputs are pushed whole (one push per input) or merged in time order in chunks of 1 or 7
rows with heartbeats in between.

Each example runs in every configuration: executor dts (hybrid on and off) and heartbeat, under
both lifetime methods, and scheduled (batch 7, gatekeeper constraint off) under the negative
one. ``CQ_HYPOTHESIS_EXAMPLES`` sets the number of scripts (default 300, drawn from a fixed seed:
tests/conftest.py; CQ_HYPOTHESIS_SEED=random draws new ones).
"""

from __future__ import annotations

import os
from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.reference import INF, Col, Lit, Op
from oracle.script_reference import (
    Agg,
    Evaluator,
    Input,
    Query,
    Relation,
    Select,
    SetOp,
    Source,
    Stream,
    ToStream,
    compare_relations,
    item_type,
    norm_row,
    render_inputs,
    render_queries,
)

EXAMPLES = examples(300)

# On one engine: two engines (threads=2) may refuse a late script these draw, which
# test_differential_threads.py checks.
CONFIGS = {
    name: {**options, "threads": 1}
    for name, options in {
        "dts-direct": {"executor": "dts", "lifetime": "direct"},
        "dts-negative": {"executor": "dts", "lifetime": "negative"},
        "dts-published-direct": {"executor": "dts", "lifetime": "direct", "hybrid": False},
        "dts-published-negative": {"executor": "dts", "lifetime": "negative", "hybrid": False},
        "heartbeat-direct": {"executor": "heartbeat", "lifetime": "direct"},
        "heartbeat-negative": {"executor": "heartbeat", "lifetime": "negative", "max_run": 1},
        "scheduled-b7-negative": {
            "executor": "scheduled",
            "lifetime": "negative",
            "batch": 7,
            "gatekeeper": False,
        },
    }.items()
}

ARROW = {"int": pa.int64(), "double": pa.float64(), "str": pa.string(), "bool": pa.bool_()}
VALUES = {
    "int": st.one_of(st.none(), st.integers(0, 3)),
    "str": st.one_of(st.none(), st.sampled_from(["a", "b"])),
}


# ---- scripts ---------------------------------------------------------------------------------


class Avail:
    """What a query may read: inputs and the named queries generated before it."""

    def __init__(self):
        self.sources: list[tuple[str, str, list]] = []  # (name, "stream" | "relation", columns)

    def add(self, name: str, kind: str, columns: list) -> None:
        self.sources.append((name, kind, list(columns)))


def windows(columns: list):
    keys = [c for c, _ in columns]
    return st.one_of(
        st.none(),
        st.just(("now",)),
        st.just(("unbounded",)),
        st.integers(0, 6).map(lambda T: ("range", T)),
        st.tuples(st.integers(0, 7), st.integers(1, 4)).map(lambda p: ("slide", p[0], p[1])),
        st.integers(1, 3).map(lambda N: ("rows", N)),
        st.tuples(st.sampled_from(keys), st.integers(1, 2)).map(
            lambda p: ("partition", p[0], p[1])
        ),
    )


def literal(draw, type_: str) -> Lit:
    if type_ == "int":
        return Lit(draw(st.integers(0, 4)), "int")
    if type_ == "double":
        return Lit(draw(st.sampled_from([0.5, 1.0, 2.5])), "double")
    if type_ == "bool":
        return Lit(draw(st.booleans()), "bool")
    return Lit(draw(st.sampled_from(["a", "b", "z"])), "str")


def value_expr(draw, scope: list, type_: str):
    """An expression of ``type_`` over the scope's columns (qualified names), or a literal."""
    cols = [Col(n, t) for n, t in scope if t == type_]
    if type_ == "double":
        ints = [Col(n, t) for n, t in scope if t == "int"]
        if ints and draw(st.booleans()):
            return Op("CAST_double", (draw(st.sampled_from(ints)),))
    if not cols or draw(st.integers(0, 5)) == 0:
        return literal(draw, type_)
    c = draw(st.sampled_from(cols))
    if type_ == "int" and draw(st.integers(0, 3)) == 0:
        return Op(draw(st.sampled_from(["+", "*"])), (c, literal(draw, "int")))
    return c


def condition(draw, scope: list, depth: int = 0):
    kind = draw(st.integers(0, 5 if depth < 1 else 3))
    if kind == 4 or kind == 5:
        return Op(
            draw(st.sampled_from(["AND", "OR"])),
            (condition(draw, scope, depth + 1), condition(draw, scope, depth + 1)),
        )
    name, type_ = draw(st.sampled_from(scope))
    col = Col(name, type_)
    if kind == 3:
        return Op(draw(st.sampled_from(["ISNULL", "ISNOTNULL"])), (col,))
    same = [Col(n, t) for n, t in scope if t == type_ and n != name]
    other = draw(st.sampled_from(same)) if same and draw(st.booleans()) else literal(draw, type_)
    ops = ["=", "<>", "<", "<=", ">", ">="] if type_ == "int" else ["=", "<>"]
    return Op(draw(st.sampled_from(ops)), (col, other))


def select(draw, avail: Avail, want: list | None = None, prefix: str = "a") -> Select:
    """A SELECT over one or two sources; ``want`` fixes the item types (the right operand of a
    set operation); items are named prefix0, prefix1, ..."""
    n_sources = draw(st.integers(1, 2))
    sources, scope = [], []
    for i in range(n_sources):
        named = [x for x in avail.sources if x[0].startswith("q")]
        pool = named if named and draw(st.booleans()) else avail.sources
        name, kind, columns = draw(st.sampled_from(pool))
        window = draw(windows(columns)) if kind == "stream" else None
        sources.append(Source(name, f"x{i}", window))
        scope += [(f"x{i}.{c}", t) for c, t in columns]
    where = condition(draw, scope) if draw(st.integers(0, 2)) == 0 else None
    ints = [Col(n, t) for n, t in scope if t == "int"]
    mode = (
        "plain"
        if want is not None
        else draw(st.sampled_from(["plain", "plain", "plain", "distinct", "aggregate", "group"]))
    )
    if want is not None and draw(st.integers(0, 3)) == 0:
        mode = "distinct"
    if mode in ("plain", "distinct"):
        types = want or draw(
            st.lists(st.sampled_from(["int", "int", "str"]), min_size=1, max_size=2)
        )
        items = tuple((value_expr(draw, scope, t), f"{prefix}{i}") for i, t in enumerate(types))
        return Select(items, tuple(sources), where, distinct=mode == "distinct")

    def agg():
        fn = draw(st.sampled_from(["COUNT*", "COUNT", "SUM", "AVG", "MIN", "MAX"]))
        if fn == "COUNT*" or not ints:
            return Agg("COUNT")
        return Agg(fn, draw(st.sampled_from(ints)), distinct=draw(st.integers(0, 4)) == 0)

    aggs = [agg() for _ in range(draw(st.integers(1, 2)))]
    having = None
    if draw(st.integers(0, 3)) == 0:
        having = (draw(st.sampled_from([">", "<=", "="])), agg(), draw(st.integers(0, 3)))
    if mode == "aggregate":
        items = tuple((a, f"{prefix}{i}") for i, a in enumerate(aggs))
        return Select(items, tuple(sources), where, having=having)
    keys = draw(
        st.lists(
            st.sampled_from([Col(n, t) for n, t in scope]), min_size=1, max_size=2, unique=True
        )
    )
    shown = draw(st.lists(st.sampled_from(keys), max_size=len(keys), unique=True))
    items = tuple((e, f"{prefix}{i}") for i, e in enumerate(shown + aggs))
    return Select(items, tuple(sources), where, group_by=tuple(keys), having=having)


def columns_of(q, avail: Avail) -> list:
    if isinstance(q, ToStream):
        return columns_of(q.inner, avail)
    if isinstance(q, SetOp):
        return columns_of(q.left, avail)
    types = {}
    for s in q.sources:
        cols = next(c for n, _, c in avail.sources if n == s.name)
        types.update({f"{s.alias}.{c}": t for c, t in cols})
    return [(alias, item_type(e, types)) for e, alias in q.items]


def relation_expr(draw, avail: Avail):
    left = select(draw, avail, prefix=draw(st.sampled_from(["a", "b"])))
    if draw(st.integers(0, 2)) > 0:
        return left
    want = [t for _, t in columns_of(left, avail)]
    op = draw(st.sampled_from(["UNION ALL", "UNION", "EXCEPT", "INTERSECT"]))
    right = select(draw, avail, want=want, prefix="r")
    body = SetOp(op, left, right)
    if draw(st.integers(0, 3)) == 0:
        body = SetOp(
            draw(st.sampled_from(["UNION ALL", "EXCEPT"])),
            body,
            select(draw, avail, want=want, prefix="s"),
        )
    return body


@st.composite
def scripts(draw):
    inputs = []
    for i in range(draw(st.integers(1, 3))):
        extra = draw(
            st.lists(st.sampled_from([("v", "int"), ("c", "str")]), max_size=2, unique=True)
        )
        inputs.append(Input(f"s{i}", False, (("k", "int"), *extra)))
    if draw(st.booleans()):
        inputs.append(Input("r0", True, (("k", "int"), ("v", "int"))))
    avail = Avail()
    for i in inputs:
        avail.add(i.name, "relation" if i.relation else "stream", i.columns)
    n = draw(st.integers(1, 5))
    phased = n > 1 and draw(st.integers(0, 2)) == 0
    first_late = draw(st.integers(1, n - 1)) if phased else n
    queries: list[Query] = []
    for i in range(n):
        phase = int(i >= first_late)
        early = [q for q in queries if q.phase == 0]
        if phase == 1 and early and draw(st.integers(0, 3)) == 0:
            body = draw(st.sampled_from(early)).body  # the same sub-plans again, registered later
        else:
            body = relation_expr(draw, avail)
            kind = draw(st.sampled_from(["relation", "ISTREAM", "DSTREAM", "RSTREAM"]))
            if kind != "relation":
                body = ToStream(
                    kind, body, draw(st.sampled_from([None, None, "now", "now", 1, 3, 5]))
                )
        q = Query(f"q{i}", body, phase)
        queries.append(q)
        avail.add(
            q.name, "stream" if isinstance(body, ToStream) else "relation", columns_of(body, avail)
        )
    # Registered in a shuffled order within each phase: queries read ones registered after them.
    order = [draw(st.permutations([q for q in queries if q.phase == p])) for p in (0, 1)]
    return inputs, order[0] + order[1]


@st.composite
def datasets(draw, inputs: list[Input]):
    data = {}
    for i in inputs:
        n = draw(st.sampled_from([0, 1, 3, 6, 10, 14]))
        t = draw(st.integers(0, 4))
        rows, alive = [], []
        for _ in range(n):
            t += draw(st.sampled_from([0, 0, 1, 1, 2, 3, 5]))
            if i.relation and alive and draw(st.integers(0, 2)) == 0:
                v = draw(st.sampled_from(alive))
                alive.remove(v)
                rows.append(
                    {**dict(zip([c for c, _ in i.columns], v, strict=True)), "op": "-", "ts": t}
                )
                continue
            v = tuple(draw(VALUES[ty]) for _, ty in i.columns)
            alive.append(v)
            row = {**dict(zip([c for c, _ in i.columns], v, strict=True)), "ts": t}
            if i.relation:
                row["op"] = "+"
            rows.append(row)
        data[i.name] = rows
    return data


# ---- running ---------------------------------------------------------------------------------


def table(i: Input, rows: list) -> pa.Table:
    fields = (
        [(c, ARROW[t]) for c, t in i.columns]
        + ([("op", pa.string())] if i.relation else [])
        + [("ts", pa.int64())]
    )
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


def pushes(inputs: list[Input], data: dict, chunk, rank: list) -> list:
    """The push calls, in order: (input, rows) or ("advance", t). ``chunk`` None pushes each input
    whole, one after the other; else the inputs merged in time order (ties in ``rank`` order of
    inputs), in runs of at most ``chunk`` rows of one input, with a heartbeat after each run."""
    if chunk is None:
        return [
            (i, data[i.name])
            for i in sorted(inputs, key=lambda i: rank.index(i.name))
            if data[i.name]
        ]
    merged = sorted(
        (
            (r["ts"], rank.index(i.name), j, i, r)
            for i in inputs
            for j, r in enumerate(data[i.name])
        ),
        key=lambda x: x[:3],
    )
    out: list = []
    for _, _, _, i, r in merged:
        if out and out[-1][0] is i and len(out[-1][1]) < chunk:
            out[-1][1].append(r)
        else:
            if out:
                out.append(("advance", out[-1][1][-1]["ts"]))
            out.append((i, [r]))
    return out


def run_engine(config: dict, inputs, queries, data, chunk, rank, cut) -> dict:
    eng = cq_py.Engine(expose_steps=True, **config)
    eng.execute(render_inputs(inputs) + "\n" + render_queries([q for q in queries if q.phase == 0]))
    late = [q for q in queries if q.phase == 1]

    def push_all(part):
        for i, rows in pushes(inputs, part, chunk, rank):
            if i == "advance":
                eng.advance(rows)
            else:
                eng.push(i.name, table(i, rows))

    if late:
        push_all({n: [r for r in rows if r["ts"] < cut] for n, rows in data.items()})
        eng.advance(cut)
        eng.execute(render_queries(late))
        push_all({n: [r for r in rows if r["ts"] >= cut] for n, rows in data.items()})
    else:
        push_all(data)
    eng.close()
    return {q.name: eng.fetch(q.name) for q in queries}


def check(name: str, want, got: pa.Table) -> str | None:
    """None when the engine's result for a query equals the reference's; else what differs."""
    cols = [c for c, _ in want.columns]
    rows = got.to_pylist()
    if isinstance(want, Stream):
        stamps = [(r["ts"], r["ts_step"]) for r in rows]
        if stamps != sorted(stamps):
            return f"{name}: rows out of time order: {stamps}"
        mine = Counter((norm_row(r[c] for c in cols), (r["ts"], r["ts_step"])) for r in rows)
        theirs = Counter(want.rows)
        if mine != theirs:
            return (
                f"{name}: engine has {sorted((mine - theirs).items(), key=repr)} too many, "
                f"{sorted((theirs - mine).items(), key=repr)} too few"
            )
        return None
    assert isinstance(want, Relation)
    tuples = [
        (
            norm_row(r[c] for c in cols),
            (r["start"], r["start_step"]),
            INF if r["end"] is None else (r["end"], r["end_step"]),
        )
        for r in rows
    ]
    diff = compare_relations(tuples, want.rel)
    return f"{name}: {diff}" if diff else None


def describe(inputs, queries, data, chunk, cut) -> str:
    text = render_inputs(inputs) + "\n" + render_queries([q for q in queries if q.phase == 0])
    late = [q for q in queries if q.phase == 1]
    if late:
        text += f"\n-- after advance({cut}):\n" + render_queries(late)
    shown = {n: [tuple(r.values()) for r in rows] for n, rows in data.items()}
    return f"{text}\ninputs {shown}\nchunk {chunk}"


@st.composite
def cases(draw):
    inputs, queries = draw(scripts())
    data = draw(datasets(inputs))
    chunk = draw(st.sampled_from([None, 1, 7]))
    rank = draw(st.permutations([i.name for i in inputs]))
    times = [r["ts"] for rows in data.values() for r in rows]
    cut = None
    if any(q.phase == 1 for q in queries):
        cut = draw(st.integers(min(times, default=0), max(times, default=0) + 2))
    return inputs, queries, data, chunk, rank, cut


# CQ_HYPOTHESIS_SHRINK=0 reports the first failing script as drawn (shrinking a script can take
# minutes).
PHASES = [
    p for p in Phase if p != Phase.shrink or os.environ.get("CQ_HYPOTHESIS_SHRINK", "1") != "0"
]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=PHASES,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
@given(cases())
def test_scripts_equal_reference(case):
    inputs, queries, data, chunk, rank, cut = case
    times = [r["ts"] for rows in data.values() for r in rows] + ([cut] if cut is not None else [])
    ref = Evaluator(inputs, queries, data, progress=max(times, default=0), cut=cut)
    want = {q.name: ref.result(q.name) for q in queries}
    failures = []
    for config_name, config in CONFIGS.items():
        try:
            got = run_engine(config, inputs, queries, data, chunk, rank, cut)
        except cq_py.CQError as e:
            failures.append(f"[{config_name}] {type(e).__name__}: {e}")
            continue
        except RuntimeError as e:
            failures.append(f"[{config_name}] {e}")
            continue
        for q in queries:
            if not want[q.name].uncertain:
                diff = check(q.name, want[q.name], got[q.name])
                if diff:
                    failures.append(f"[{config_name}] {diff}")
    assert not failures, (
        describe(inputs, queries, data, chunk, cut) + "\n" + "\n".join(failures[:12])
    )


def test_generator_reaches_its_shapes():
    """The shapes the generator exists for come out of it (a check that the generator cannot
    silently lose one): forward references inside set operations, multi-input RSTREAM, derived
    streams at ε-steps under every window kind, delayed RSTREAM read by another query, queries
    registered mid-run over relations."""
    seen: Counter = Counter()

    @settings(
        max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(cases())
    def look(case):
        _inputs, queries, _data, _chunk, _rank, _cut = case
        kinds = {q.name: q.body for q in queries}
        position = {q.name: i for i, q in enumerate(queries)}

        def reads(body):
            if isinstance(body, ToStream):
                return reads(body.inner)
            if isinstance(body, SetOp):
                return reads(body.left) | reads(body.right)
            return {s.name for s in body.sources}

        for q in queries:
            inner = q.body.inner if isinstance(q.body, ToStream) else q.body
            if isinstance(inner, SetOp) and any(
                position.get(n, -1) > position[q.name] for n in reads(inner)
            ):
                seen["forward reference in a set operation"] += 1
            if isinstance(q.body, ToStream) and q.body.op == "RSTREAM" and len(reads(inner)) >= 2:
                seen["RSTREAM over two inputs"] += 1
            if (
                isinstance(q.body, ToStream)
                and q.body.delay is not None
                and any(q.name in reads(o.body) for o in queries)
            ):
                seen["delayed stream read by another query"] += 1
                if q.body.op == "RSTREAM":
                    seen["delayed RSTREAM read by another query"] += 1
                if isinstance(inner, Select) and (
                    inner.distinct
                    or inner.group_by is not None
                    or any(isinstance(e, Agg) for e, _ in inner.items)
                ):
                    seen["delayed stream of an aggregate or DISTINCT read by another query"] += 1
            if q.phase == 1 and any(n == "r0" for n in reads(q.body)):
                seen["mid-run query over a relation"] += 1
            for s in inner.sources if isinstance(inner, Select) else ():
                body = kinds.get(s.name)
                if isinstance(body, ToStream) and body.delay == "now" and s.window:
                    seen[f"window {s.window[0]} over a derived stream at ε-steps"] += 1

    look()
    wanted = [
        "forward reference in a set operation",
        "RSTREAM over two inputs",
        "delayed stream read by another query",
        "delayed RSTREAM read by another query",
        "delayed stream of an aggregate or DISTINCT read by another query",
        "mid-run query over a relation",
    ] + [
        f"window {w} over a derived stream at ε-steps"
        for w in ("now", "range", "unbounded", "slide", "rows", "partition")
    ]
    missing = [w for w in wanted if not seen[w]]
    assert not missing, (missing, seen)
