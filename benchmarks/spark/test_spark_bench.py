"""cq on Spark vs Spark SQL (bench_spark.py) under pytest-benchmark, at CQ_BENCH_ROWS events
(default 1,000,000; CI runs 200,000): each workload's two results are checked against each other,
and the events/s of each side are reported in ``extra_info``.

    pytest benchmarks/spark --benchmark-only
    python benchmarks/spark/bench_spark.py       # the full 10^7-event run, with a table and a chart
"""

import os
import sys
from pathlib import Path

import pytest

# pytest runs in importlib mode (pyproject.toml): the script beside this file is imported by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_spark as bs

EVENTS = int(os.environ.get("CQ_BENCH_ROWS", "1000000"))


@pytest.fixture(scope="module")
def spark():
    session = bs.session("local[2]", 8, 100_000)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def events(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("spark-bench") / "events.parquet")
    bs.generate(spark, EVENTS, 1000, path)
    return spark.read.parquet(path)


WORKLOADS = {
    "sliding": (bs.cq_sliding, bs.sql_sliding, bs.check_sliding),
    "rows": (bs.cq_rows, bs.sql_rows, bs.check_rows),
}


@pytest.mark.parametrize("workload", list(WORKLOADS))
@pytest.mark.parametrize("side", ["cq", "spark_sql"])
def test_spark_workload(benchmark, spark, events, workload, side):
    ours, theirs, check = WORKLOADS[workload]
    benchmark.group = f"spark {workload}, {EVENTS:,} events"
    df = ours(spark, events) if side == "cq" else theirs(events)
    benchmark.pedantic(bs.force, args=(df,), rounds=1, iterations=1)
    benchmark.extra_info["events"] = EVENTS
    if benchmark.stats is not None:
        benchmark.extra_info["events_per_s"] = EVENTS / benchmark.stats["mean"]
    if side == "cq":
        # The two sides agree (bench_spark.py explains how their rows correspond).
        assert check(df, theirs(events)) > 0
