"""Shared window joins against planning every join alone and against the reference (hypothesis).

Scripts of 2–6 queries ``SELECT * FROM a [Range w], b [Range w] WHERE a.k = b.k [AND residual]
[AND a filter of a]``, each ISTREAM'd or a relation, windows drawn so that they are often equal
(w = 1 among them; an occasional [Range 0]), over inputs with NULL keys, duplicate rows and
timestamps shared within and across the inputs, pushed whole, row by row or in runs of 7 rows
merged in time order. Every query's output with ``share_joins=True`` must be the same bag of rows
(ε-steps included) as with ``share_joins=False``, and equal the reference evaluator's
(oracle/script_reference.py, SEMANTICS.md §4), under each executor (oracle/conftest.py); under DTS
also when the engine is snapshotted and restored at a random cut.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.reference import Col, Lit, Op
from oracle.script_reference import (
    Evaluator,
    Input,
    Query,
    Select,
    Source,
    ToStream,
    render_inputs,
    render_queries,
)
from oracle.test_differential_scripts import check, pushes, table

EXAMPLES = examples(60)
INPUTS = [
    Input("a", False, (("k", "int"), ("x", "int"))),
    Input("b", False, (("k", "int"), ("y", "int"))),
]
RESIDUALS = {
    "": None,
    "a.x < b.y": Op("<", (Col("a.x", "int"), Col("b.y", "int"))),
    "a.x + b.y > 2": Op(">", (Op("+", (Col("a.x", "int"), Col("b.y", "int"))), Lit(2, "int"))),
}
FILTERS = {
    "": None,
    "a.x IS NOT NULL": Op("ISNOTNULL", (Col("a.x", "int"),)),
}


# Select lists: every column, or a few (the ISTREAM then compares fewer columns, and a pair
# starting often equals one ending at the same instant).
COLUMNS = {
    "*": (("a.k", "k"), ("a.x", "x"), ("b.k", "bk"), ("b.y", "y")),
    "keys": (("a.k", "k"), ("b.k", "bk")),
    "x": (("a.x", "x"),),
}


def query(
    name: str, w: int, residual: str, filter_a: str, istream: bool, columns: str = "*"
) -> Query:
    conds = [Op("=", (Col("a.k", "int"), Col("b.k", "int")))]
    conds += [c for c in (RESIDUALS[residual], FILTERS[filter_a]) if c is not None]
    where = conds[0]
    for c in conds[1:]:
        where = Op("AND", (where, c))
    items = tuple((Col(c, "int"), alias) for c, alias in COLUMNS[columns])
    sel = Select(items, (Source("a", "a", ("range", w)), Source("b", "b", ("range", w))), where)
    return Query(name, ToStream("ISTREAM", sel) if istream else sel)


@st.composite
def scripts(draw):
    n = draw(st.integers(2, 6))
    pool = [*draw(st.lists(st.integers(1, 7), min_size=1, max_size=3)), 1]
    windows = [draw(st.sampled_from(pool)) if draw(st.integers(0, 9)) else 0 for _ in range(n)]
    residual = draw(st.sampled_from(sorted(RESIDUALS)))
    filter_a = draw(st.sampled_from(sorted(FILTERS)))
    # Mostly ISTREAM queries (fused with their routes: swj_route_istream), some relations.
    istream = draw(st.sampled_from([0.5, 0.9, 1.0]))
    return [
        query(
            f"q{i}",
            w,
            residual,
            filter_a,
            draw(st.floats(0, 1)) < istream,
            draw(st.sampled_from(sorted(COLUMNS))),
        )
        for i, w in enumerate(windows)
    ]


def fused_routes(queries) -> int:
    """How many routes explain() shows fused with their ISTREAM."""
    text = cq_py.explain(render_inputs(INPUTS) + "\n" + render_queries(queries))
    return sum("Route [Range" in line and "+ ISTREAM" in line for line in text.splitlines())


def shares_an_istream(queries) -> bool:
    """True when the planner must fuse a route with its ISTREAM: a shared join (two windows of
    at least 1 among the queries) and an ISTREAM query alone over its window (a route read by
    two queries is left as it is)."""
    count = Counter(_window(q) for q in queries if _window(q) > 0)
    return len(count) >= 2 and any(
        isinstance(q.body, ToStream) and count[_window(q)] == 1 for q in queries if _window(q)
    )


def _window(q: Query) -> int:
    sel = q.body.inner if isinstance(q.body, ToStream) else q.body
    return int(sel.sources[0].window[1])


@st.composite
def rows(draw, value: str):
    t = draw(st.integers(0, 2))
    out = []
    for _ in range(draw(st.integers(0, 16))):
        t += draw(st.sampled_from([0, 0, 1, 1, 2, 4]))
        row = {
            "k": draw(st.one_of(st.none(), st.integers(0, 2))),
            value: draw(st.one_of(st.none(), st.integers(0, 3))),
            "ts": t,
        }
        out.append(row)
        if draw(st.integers(0, 5)) == 0:
            out.append(dict(row))  # a duplicate
    return out


def run(config: dict, queries, data, chunk, rank, cut: int | None) -> dict:
    """Every query's whole output; with ``cut``, the engine is snapshotted and restored before
    the first push at or after that many pushes."""
    eng = cq_py.Engine(expose_steps=True, **config)
    eng.execute(render_inputs(INPUTS) + "\n" + render_queries(queries))
    for k, (i, part) in enumerate(pushes(INPUTS, data, chunk, rank)):
        if k == cut:
            eng = cq_py.Engine.restore(eng.snapshot())
        if i == "advance":
            eng.advance(part)
        else:
            eng.push(i.name, table(i, part))
    eng.close()
    return {q.name: eng.fetch(q.name) for q in queries}


def bag(t: pa.Table) -> Counter:
    return Counter(tuple(sorted(r.items())) for r in t.to_pylist())


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    scripts(),
    rows("x"),
    rows("y"),
    st.sampled_from([None, 1, 7]),
    st.permutations(["a", "b"]),
    st.integers(0, 40),
)
def test_shared_joins_equal_joins_alone_and_the_reference(
    executor, queries, a_rows, b_rows, chunk, rank, cut
):
    data = {"a": a_rows, "b": b_rows}
    n_pushes = len(pushes(INPUTS, data, chunk, rank))
    snapshot = executor["executor"] == "dts" and n_pushes > 0
    shared = run(executor, queries, data, chunk, rank, None)
    alone = run({**executor, "share_joins": False}, queries, data, chunk, rank, None)
    cut_run = run(executor, queries, data, chunk, rank, cut % n_pushes) if snapshot else shared
    times = [r["ts"] for r in itertools.chain(a_rows, b_rows)]
    ref = Evaluator(INPUTS, queries, data, progress=max(times, default=0))
    script = render_queries(queries)
    if shares_an_istream(queries):
        assert fused_routes(queries) > 0, script
    for q in queries:
        assert bag(shared[q.name]) == bag(alone[q.name]), (q.name, script, data, chunk)
        assert bag(cut_run[q.name]) == bag(shared[q.name]), (q.name, script, data, chunk, cut)
        diff = check(q.name, ref.result(q.name), shared[q.name])
        assert diff is None, (diff, script, data, chunk)


def test_generated_scripts_do_share():
    """The generator's scripts plan shared joins (else the test above compared a plan with
    itself)."""
    qs = [
        query("q0", 1, "a.x < b.y", "a.x IS NOT NULL", True),
        query("q1", 5, "a.x < b.y", "a.x IS NOT NULL", False),
    ]
    text = cq_py.explain(render_inputs(INPUTS) + "\n" + render_queries(qs))
    assert "SharedWindowJoin" in text, text
    assert "Route [Range 1] (slices 1-1) + ISTREAM" in text, text
    assert fused_routes(qs) == 1
    assert shares_an_istream(qs)
