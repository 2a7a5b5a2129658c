"""The cost of paper 002's concurrency control when nothing updates: Fig. 1's shape, a stream
joined with a resource by key (the in-process store) and a sliding window over the join, one row
per tick, on the scheduled executor, under each strategy against ``txn="none"``.

    q_avg:  RSTREAM(SELECT AVG(pos) AS a FROM j [Range W])   -- commits at every tick
    q_wide: ISTREAM(SELECT * FROM j [Range W])               -- ISTREAM taken at the commit

A commit must cost the reads it adds, not the window it keeps: W is 10 and 1,000. Rows:
CQ_BENCH_ROWS / 50 (default 20,000), pushed 100 at a time (the rows of one push commit one by
one).

    pytest benchmarks/micro/txn --benchmark-only
"""

import os

import pytest

import cq_py
from cq_py.resources import ResourceStore

ROWS = int(os.environ.get("CQ_BENCH_ROWS", "1000000")) // 50
KEYS = 50
QUERIES = {
    "q_avg": "RSTREAM(SELECT AVG(pos) AS a FROM j [Range {w}])",
    "q_wide": "ISTREAM(SELECT * FROM j [Range {w}])",
}


def run(txn: str, query: str, w: int, rows: list[dict]) -> int:
    """Pushes ``rows`` through Fig. 1's shape under ``txn``; returns the rows q emitted."""
    store = ResourceStore()
    store.load("x", [{"id": i, "pos": float(i)} for i in range(KEYS)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, txn=txn)
    eng.execute(
        "REGISTER STREAM e(k BIGINT, n BIGINT);"
        "REGISTER RESOURCE x (id BIGINT, pos DOUBLE) KEY (id) ACCESS KEY;"
        "REGISTER QUERY j AS ISTREAM(SELECT e.n, e.k, x.pos FROM e [Now], x WHERE e.k = x.id);"
        f"REGISTER QUERY q AS {QUERIES[query].format(w=w)};"
    )
    for s in range(0, len(rows), 100):
        eng.push("e", rows[s : s + 100])
    eng.close()
    return eng.fetch("q").num_rows


@pytest.mark.parametrize("w", [10, 1000])
@pytest.mark.parametrize("query", sorted(QUERIES))
@pytest.mark.parametrize("txn", ["none", "2pl", "snapshot", "optimistic"])
def test_strategy_without_updates(benchmark, txn: str, query: str, w: int) -> None:
    rows = [{"k": i % KEYS, "n": i, "ts": i} for i in range(ROWS)]
    got = benchmark.pedantic(run, args=(txn, query, w, rows), rounds=3, iterations=1)
    # RSTREAM: every instant from the first row until the window is empty; ISTREAM: each row once.
    assert got == (ROWS + w - 1 if query == "q_avg" else ROWS)
    if benchmark.stats is not None:
        benchmark.extra_info["rows_per_s"] = ROWS / benchmark.stats["min"]
