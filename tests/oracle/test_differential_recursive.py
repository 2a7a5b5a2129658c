"""Recursive scripts against the recursive reference evaluator (hypothesis): loops through one
query, loops through several queries (several delays per loop), nested loops (a query in a loop of
its own and in a larger one), ISTREAM and DSTREAM, ε and tick delays, time and row windows and an
aggregate inside loops; every lifetime method, with the DTS executor hybrid (time-split only inside
loops) and as published (time-split everywhere). Set CQ_HYPOTHESIS_EXAMPLES to run more than 300.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.recursive import EPS, Branch, Query, evaluate, script

EXAMPLES = examples(300)

TIME_WINDOWS = st.sampled_from([("now",), ("range", 1), ("range", 2), ("range", 3), ("unbounded",)])
# Rows windows only over the input: rows a loop produces at one instant have no arrival order.
INPUT_WINDOWS = st.one_of(TIME_WINDOWS, st.sampled_from([("rows", 1), ("rows", 2)]))


@st.composite
def scripts(draw):
    n = draw(st.integers(1, 3))
    names = [f"q{i}" for i in range(n)]
    queries = []
    for i, name in enumerate(names):
        branches = []
        if i == 0 or draw(st.booleans()):
            branches.append(
                Branch(
                    "s",
                    draw(INPUT_WINDOWS),
                    draw(st.integers(0, 2)),
                    draw(st.one_of(st.none(), st.integers(1, 6))),
                )
            )
        for j in range(draw(st.integers(0 if branches else 1, 2))):
            # Fed-back values grow by k >= 1 and stop at a bound: every loop settles. A query reads
            # at least one earlier query (or s), so that its columns can be known.
            src = draw(st.sampled_from(names if branches or j else names[:i]))
            branches.append(
                Branch(
                    src,
                    draw(TIME_WINDOWS),
                    draw(st.integers(1, 2)),
                    draw(st.integers(2, 7)),
                    agg=draw(st.booleans()),
                )
            )
        queries.append(
            Query(
                name,
                draw(st.sampled_from(["ISTREAM", "DSTREAM"])),
                tuple(branches),
                draw(st.sampled_from([EPS, EPS, 1, 2])),
            )
        )
    return queries


inputs = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), min_size=1, max_size=7).map(
    lambda rows: sorted(rows, key=lambda r: r[0])
)


def run_engine(queries, rows, cuts, **options) -> dict:
    eng = cq_py.Engine(expose_steps=True, **options)
    eng.execute(script(queries))
    table = pa.table({"a": [a for _, a in rows], "ts": [t for t, _ in rows]})
    start = 0
    for cut in [*sorted(set(cuts)), len(rows)]:
        if cut > start:
            eng.push("s", table.slice(start, cut - start))
            start = cut
    eng.close()
    out = {}
    for q in queries:
        t = eng.fetch(q.name).to_pydict()
        out[q.name] = Counter(
            ((tk, sp), a) for a, tk, sp in zip(t["a"], t["ts"], t["ts_step"], strict=True)
        )
    return out


@pytest.mark.parametrize("lifetime", ["direct", "negative"])
@pytest.mark.parametrize("hybrid", [True, False])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries=scripts(), rows=inputs, cuts=st.lists(st.integers(0, 7), max_size=3))
def test_recursive_scripts_match_the_oracle(lifetime, hybrid, queries, rows, cuts):
    expected = evaluate(queries, rows)
    got = run_engine(queries, rows, cuts, lifetime=lifetime, hybrid=hybrid)
    assert got == expected, script(queries)


def test_the_oracle_sees_a_loop_settle():
    # q0 feeds itself a + 1 until 4: 1 at 0, then 2, 3 one ε apart each.
    q = [Query("q0", "ISTREAM", (Branch("s", ("now",)), Branch("q0", ("now",), 1, 4)), EPS)]
    out = evaluate(q, [(0, 1)])["q0"]
    assert out == Counter({((0, 1), 1): 1, ((0, 2), 2): 1, ((0, 3), 3): 1})
    assert run_engine(q, [(0, 1)], [])["q0"] == out
