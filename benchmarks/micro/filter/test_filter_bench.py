"""A windowed filter and projection under ISTREAM against the physical reference, in one run.

    ISTREAM(SELECT a, b*2 AS c FROM s [Range 10] WHERE b > 0.5)

over CQ_BENCH_ROWS rows (default 10,000,000: a int64, b float64 uniform in [0, 1), ts = row
number) pushed in CQ_BENCH_BATCH-row batches (default 65,536), results consumed as they are
produced; the reference is a plain ``pyarrow.compute`` filter ``b > 0.5`` of the same batches.
pytest-benchmark's table shows both and their ratio (the parenthesised factors).
"""

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import cq_py

ROWS = int(os.environ.get("CQ_BENCH_ROWS", "10000000"))
BATCH = int(os.environ.get("CQ_BENCH_BATCH", "65536"))
FILTER_QUERY = (
    "REGISTER STREAM s(a INT, b DOUBLE);"
    "REGISTER QUERY q AS ISTREAM(SELECT a, b*2 AS c FROM s [Range 10] WHERE b > 0.5);"
)


@pytest.fixture(scope="module")
def batches():
    rng = np.random.default_rng(20261121)
    table = pa.table(
        {
            "a": rng.integers(0, 1_000_000, ROWS),
            "b": rng.random(ROWS),
            "ts": np.arange(ROWS, dtype=np.int64),
        }
    )
    return table.to_batches(max_chunksize=BATCH)


@pytest.fixture(scope="module")
def expected_rows(batches):
    # Timestamps are distinct and `a` is random: no value ends and restarts at the same instant
    # with the same (a, c), so ISTREAM keeps exactly the filtered rows (checked, not assumed).
    return sum(pc.sum(pc.greater(b["b"], 0.5)).as_py() for b in batches)


def run_filter_query(batches):
    eng = cq_py.Engine()
    eng.execute(FILTER_QUERY)
    produced = []
    eng.subscribe("q", lambda rb: produced.append(rb.num_rows))
    for b in batches:
        eng.push("s", b)
    eng.close()
    return sum(produced)


def record_rate(benchmark):
    benchmark.extra_info["rows"] = ROWS
    if benchmark.stats is not None:  # None under --benchmark-disable (CI runs it once, untimed)
        benchmark.extra_info["rows_per_s"] = ROWS / benchmark.stats["mean"]


def run_reference(batches):
    n = 0
    for b in batches:
        n += b.filter(pc.greater(b["b"], 0.5)).num_rows
    return n


@pytest.mark.benchmark(group="filter", min_rounds=5, warmup=True)
def test_cq_filter(benchmark, batches, expected_rows):
    out = benchmark(run_filter_query, batches)
    assert out == expected_rows
    record_rate(benchmark)


@pytest.mark.benchmark(group="filter", min_rounds=5, warmup=True)
def test_pyarrow_filter_reference(benchmark, batches, expected_rows):
    out = benchmark(run_reference, batches)
    assert out == expected_rows
    record_rate(benchmark)
