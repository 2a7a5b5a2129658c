"""A loop turning many rows at one instant (issue 27, G3): CQ_BENCH_LOOP_ROWS rows (default 40,000)
enter

    ping: ISTREAM(SELECT a, b FROM s [Now]
                  UNION ALL SELECT a + 1 AS a, b FROM ping [Now] WHERE a < 10) <Now>

at one timestamp, or one per tick, and go round ten times. At one timestamp every instant of the
loop holds all of them: its cost must grow with the rows, not with their square (ISTREAM's bag
difference once compared every start with every end: 5,000 / 10,000 / 20,000 / 40,000 rows took
1.7 / 9.0 / 34 / 166 s; now 0.02 / 0.03 / 0.06 / 0.21 s). Timing is reported, never asserted; the
C++ test rows_test.cc `bag_difference_of_a_large_instant_is_linear_and_exact` counts the work.

    pytest benchmarks/micro/executors/test_loop_instant_bench.py --benchmark-only
    CQ_BENCH_LOOP_ROWS=5000 pytest benchmarks/micro/executors/test_loop_instant_bench.py \
        --benchmark-only
"""

import os

import pyarrow as pa
import pytest

import cq_py

ROWS = int(os.environ.get("CQ_BENCH_LOOP_ROWS", "40000"))
SCRIPT = (
    "REGISTER STREAM s(a INT, b INT); REGISTER QUERY ping AS ISTREAM(SELECT a, b FROM s [Now] "
    "UNION ALL SELECT a + 1 AS a, b FROM ping [Now] WHERE a < 10) <Now>;"
)


@pytest.mark.parametrize("per_tick", ["one-timestamp", "one-per-tick"])
@pytest.mark.parametrize(
    "options",
    [{}, {"hybrid": False}, {"lifetime": "negative"}],
    ids=["hybrid", "published", "negative"],
)
def test_loop_instant(benchmark, per_tick, options):
    ts = [5] * ROWS if per_tick == "one-timestamp" else list(range(ROWS))
    data = pa.table({"a": [0] * ROWS, "b": list(range(ROWS)), "ts": ts})
    benchmark.group = f"loop instant: {ROWS:,} rows, ten rounds each"
    out = benchmark.pedantic(
        lambda: cq_py.run(SCRIPT, inputs={"s": data}, **options)["ping"], rounds=3, warmup_rounds=0
    )
    assert out.num_rows == 11 * ROWS  # a = 0 ... 10 for every row
    benchmark.extra_info["input_rows"] = ROWS
    if benchmark.stats is not None:
        benchmark.extra_info["rows_per_s"] = ROWS / benchmark.stats["mean"]
