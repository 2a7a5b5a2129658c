"""One event per push, through Engine.push_row, for W1 and W5 (push_cost.py has the whole story:
this keeps the row path measured under pytest-benchmark, and from rotting in CI).

    W1  ISTREAM(SELECT * FROM e [Now] WHERE val > 499)
    W5  ISTREAM(SELECT key, AVG(val) AS a FROM e [Partition By key Rows 10] GROUP BY key)

CQ_BENCH_PUSHES events (default 100,000, or CQ_BENCH_ROWS / 10 when that is smaller) with ts one
per ms, key uniform in 0..999, val in 0..999; the output is checked against push_cost.py's
reference. extra_info carries microseconds per push.
"""

import os
import sys
from pathlib import Path

import pytest

import cq_py

sys.path.insert(0, str(Path(__file__).resolve().parent))
from push_cost import QUERIES, STREAM, events, expected_rows

ROWS = int(os.environ.get("CQ_BENCH_ROWS", "10000000"))
PUSHES = int(os.environ.get("CQ_BENCH_PUSHES", str(min(100_000, ROWS // 10))))


@pytest.fixture(scope="module")
def data():
    t = events(PUSHES)
    return t, [t.column(c).to_pylist() for c in ("key", "val", "ts")]


def push_rows(workload, columns):
    eng = cq_py.Engine()
    eng.execute(STREAM + f"REGISTER QUERY q AS {QUERIES[workload]};")
    push_row = eng.push_row
    for key, val, ts in zip(*columns, strict=True):
        push_row("e", ts, key=key, val=val)
    eng.close()
    return eng.fetch("q").num_rows


@pytest.mark.parametrize("workload", list(QUERIES))
@pytest.mark.benchmark(group="push_row", min_rounds=3, warmup=False)
def test_push_row(benchmark, data, workload):
    table, columns = data
    out = benchmark(push_rows, workload, columns)
    assert out == expected_rows(workload, table)
    benchmark.extra_info["pushes"] = PUSHES
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["us_per_push"] = benchmark.stats["mean"] / PUSHES * 1e6
