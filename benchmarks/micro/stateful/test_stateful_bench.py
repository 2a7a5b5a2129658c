"""Stateful operators, direct vs negative (issue 5's targets: equi-join >= 10M input tuples/s,
grouped AVG over [Range T] >= 20M tuples/s; single thread, 65,536-row batches).

    join: SELECT * FROM a [Range 100], b [Range 100] WHERE a.ca = b.ca   (each tuple matches one)
    avg:  SELECT cb, AVG(ca) FROM a [Range 1000] GROUP BY cb            (10 groups)

over CQ_BENCH_ROWS tuples per stream (default 1,000,000), one per tick, results consumed as they
come. pytest-benchmark's factors in each group are negative / direct.

    pytest benchmarks/micro/stateful --benchmark-only
"""

import os

import numpy as np
import pyarrow as pa
import pytest

import cq_py

ROWS = int(os.environ.get("CQ_BENCH_ROWS", "1000000"))
BATCH = 65536


@pytest.fixture(scope="module")
def streams():
    rng = np.random.default_rng(5)
    a = pa.table({"ca": np.arange(ROWS), "cb": rng.integers(0, 10, ROWS), "ts": np.arange(ROWS, dtype=np.int64)})
    b = pa.table({"ca": np.arange(ROWS), "cc": rng.integers(0, 10, ROWS), "ts": np.arange(ROWS, dtype=np.int64)})
    return a.to_batches(max_chunksize=BATCH), b.to_batches(max_chunksize=BATCH)


def run(streams, query, lifetime, both):
    eng = cq_py.Engine(lifetime=lifetime)
    eng.execute(f"REGISTER STREAM a(ca INT, cb INT); REGISTER STREAM b(ca INT, cc INT); REGISTER QUERY q AS {query};")
    out = [0]
    eng.subscribe("q", lambda rb: out.__setitem__(0, out[0] + rb.num_rows))
    for x, y in zip(*streams):
        eng.push("a", x)
        if both:
            eng.push("b", y)
    eng.close()
    return out[0]


def record(benchmark, tuples):
    benchmark.extra_info["input_tuples"] = tuples
    if benchmark.stats is not None:
        benchmark.extra_info["input_tuples_per_s"] = tuples / benchmark.stats["mean"]


@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_equi_join(benchmark, streams, lifetime):
    benchmark.group = "equi-join [Range 100]"
    out = benchmark.pedantic(run, args=(streams, "SELECT * FROM a [Range 100], b [Range 100] WHERE a.ca = b.ca",
                                        lifetime, True), rounds=3, warmup_rounds=1)
    assert out == ROWS
    record(benchmark, 2 * ROWS)


@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_grouped_avg(benchmark, streams, lifetime):
    benchmark.group = "grouped AVG [Range 1000]"
    out = benchmark.pedantic(run, args=(streams, "SELECT cb, AVG(ca) AS v FROM a [Range 1000] GROUP BY cb",
                                        lifetime, False), rounds=3, warmup_rounds=1)
    assert out > 0
    record(benchmark, ROWS)
