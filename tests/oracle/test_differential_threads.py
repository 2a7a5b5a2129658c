"""``Engine(threads=2)`` against one engine and the script reference, on the whole random scripts
of ``test_differential_scripts.py``: several streams and a relation, named queries reading one
another, joins, aggregates, set operations, every window, ISTREAM / DSTREAM / RSTREAM with
delays, queries registered while the engine runs, inputs pushed whole or in chunks of 1 or 7 rows
with heartbeats between them.

A script with a partition key runs on two engines; its results must equal one engine's as bags per
instant (a stream's rows with their times, in time order; a relation's R(t) at every t) and the
reference's. A script without one runs on one engine (nothing to compare but the warning-free
run). A script registered while the engines run that needs another split of an input they hold
is refused with the package's error, and the engine takes the rest of the input unchanged. The
cases that do run split are counted: ``test_many_scripts_run_split`` checks the generator gives
enough of them.
"""

from __future__ import annotations

import warnings
from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, given, settings

import cq_py
from budget import examples
from cq_py.spark import CQPartitionWarning
from oracle.reference import INF
from oracle.script_reference import (
    Evaluator,
    Rel,
    Stream,
    compare_relations,
    norm_row,
    render_inputs,
    render_queries,
)
from oracle.test_differential_scripts import PHASES, cases, check, describe, pushes, table

EXAMPLES = examples(150)
CONFIGS = {
    "dts-direct": {"executor": "dts", "lifetime": "direct"},
    "dts-negative": {"executor": "dts", "lifetime": "negative"},
}


def run_engine(config: dict, threads: int, inputs, queries, data, chunk, rank, cut):
    """test_differential_scripts.run_engine with ``threads``; also whether the engine ran split,
    and whether the late queries were refused (then they are left out)."""
    eng = cq_py.Engine(expose_steps=True, threads=threads, **config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CQPartitionWarning)
        eng.execute(
            render_inputs(inputs) + "\n" + render_queries([q for q in queries if q.phase == 0])
        )
    split = "Threads: 2 engines" in eng.explain()
    late = [q for q in queries if q.phase == 1]
    refused = False

    def push_all(part):
        for i, rows in pushes(inputs, part, chunk, rank):
            if i == "advance":
                eng.advance(rows)
            else:
                eng.push(i.name, table(i, rows))

    if late:
        push_all({n: [r for r in rows if r["ts"] < cut] for n, rows in data.items()})
        eng.advance(cut)
        try:
            eng.execute(render_queries(late))
        except cq_py.CQLSemanticError as e:
            # Only a split engine refuses, and only with the split's error.
            if threads == 1 or not split or "while the engine runs" not in str(e):
                raise
            refused = True
        push_all({n: [r for r in rows if r["ts"] >= cut] for n, rows in data.items()})
    else:
        push_all(data)
    eng.close()
    names = [q.name for q in queries if not (refused and q.phase == 1)]
    return {q: eng.fetch(q) for q in names}, split, refused


def same(name: str, stream: bool, one: pa.Table, two: pa.Table) -> str | None:
    """None when two engines' output of a query equals one engine's (as bags per instant)."""
    cols = [c for c in one.column_names if c not in ("ts", "ts_step", "start", "start_step")]
    cols = [c for c in cols if c not in ("end", "end_step")]
    if stream:
        stamps = [(r["ts"], r["ts_step"]) for r in two.to_pylist()]
        if stamps != sorted(stamps):
            return f"{name}: rows out of time order: {stamps}"

        def bag(t: pa.Table) -> Counter:
            return Counter(
                (norm_row(r[c] for c in cols), r["ts"], r["ts_step"]) for r in t.to_pylist()
            )

        if bag(one) != bag(two):
            return f"{name}: one engine {bag(one)} two {bag(two)}"
        return None

    def lifetimes(t: pa.Table) -> list:
        return [
            (
                norm_row(r[c] for c in cols),
                (r["start"], r["start_step"]),
                INF if r["end"] is None else (r["end"], r["end_step"]),
            )
            for r in t.to_pylist()
        ]

    diff = compare_relations(lifetimes(two), Rel.of_lifetimes(lifetimes(one)))
    return f"{name}: {diff}" if diff else None


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
def test_two_engines_equal_one_and_the_reference(case):
    inputs, queries, data, chunk, rank, cut = case
    times = [r["ts"] for rows in data.values() for r in rows] + ([cut] if cut is not None else [])
    ref = Evaluator(inputs, queries, data, progress=max(times, default=0), cut=cut)
    want = {q.name: ref.result(q.name) for q in queries}
    failures = []
    for config_name, config in CONFIGS.items():
        one, _, _ = run_engine(config, 1, inputs, queries, data, chunk, rank, cut)
        two, _, _ = run_engine(config, 2, inputs, queries, data, chunk, rank, cut)
        for q in queries:
            if q.name not in two or want[q.name].uncertain:
                continue
            diff = same(q.name, isinstance(want[q.name], Stream), one[q.name], two[q.name])
            diff = diff or check(q.name, want[q.name], two[q.name])
            if diff:
                failures.append(f"[{config_name}] {diff}")
    assert not failures, (
        describe(inputs, queries, data, chunk, cut) + "\n" + "\n".join(failures[:12])
    )


def test_many_scripts_run_split():
    """The generator's scripts run on two engines often enough for the comparison to mean
    something (counted over the same examples, drawn from the fixed seed)."""
    seen: Counter = Counter()

    @settings(
        max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(cases())
    def look(case):
        inputs, queries, _data, _chunk, _rank, _cut = case
        eng = cq_py.Engine(threads=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CQPartitionWarning)
            eng.execute(render_inputs(inputs) + "\n" + render_queries(queries))
        seen["split" if "Threads: 2 engines" in eng.explain() else "one"] += 1

    look()
    assert seen["split"] >= 0.25 * sum(seen.values()), seen
