"""cq on Spark vs Spark's own SQL, same session, same data (issue 7).

Two workloads over N events (default 10,000,000; 1,000 keys; timestamps in ms, strictly increasing,
999 events per second, none on a whole second):

* sliding: the average per key over a 10 s window sliding by 1 s.
    cq:    SELECT key, AVG(v) AS a FROM s [Range 10 SECONDS Slide 1 SECOND] GROUP BY key
    Spark: df.groupBy(window(ts, '10 seconds', '1 second'), key).agg(avg(v))
  cq's result is a relation: a row (key, a, start, end) holds over [start, end), whose instants are
  whole seconds τ; R(τ) holds the events of (τ - 10 s, τ]. Spark's row for the window [τ - 10 s, τ)
  averages the events of [τ - 10 s, τ): the same events, since none falls on a whole second. So
  each cq row stands for the Spark rows of its key with window.end in [start, end) — one, unless the
  average stayed the same from one second to the next (then cq keeps one row; the check expands it).
* rows: the average of each key's last 10 events, at every event.
    cq:    SELECT key, AVG(v) AS a FROM s [Partition By key Rows 10] GROUP BY key
    Spark: avg(v).over(Window.partitionBy(key).orderBy(ts).rowsBetween(-9, 0))
  A cq row (key, a, start, end) holds from an event of its key (start) to the next change; Spark
  gives one row per event, (key, ts, a).

Both sides are forced the same way: the result DataFrame written to Spark's ``noop`` sink. The data
are generated once into Parquet and read by both. ``--check`` (default for small N) also collects
both results and compares them as described above.

    python benchmarks/spark/bench_spark.py                      # 10^7 events, local[2]
    python benchmarks/spark/bench_spark.py --events 200000 --check
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import cq_py.spark
from cq_py.spark.files import start_session

HERE = Path(__file__).resolve().parent
SLIDING = (
    "REGISTER STREAM s(key INT, v DOUBLE);"
    "REGISTER QUERY q AS SELECT key, AVG(v) AS a FROM s [Range 10 SECONDS Slide 1 SECOND] "
    "GROUP BY key;"
)
ROWS = (
    "REGISTER STREAM s(key INT, v DOUBLE);"
    "REGISTER QUERY q AS SELECT key, AVG(v) AS a FROM s [Partition By key Rows 10] GROUP BY key;"
)


def session(master: str, partitions: int, arrow_batch: int) -> SparkSession:
    spark = start_session(
        SparkSession.builder.master(master)
        .appName("cq-spark-bench")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        # Rows per Arrow batch handed to cq's tasks (Spark SQL's own plans do not use Arrow).
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(arrow_batch))
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def generate(spark: SparkSession, n: int, keys: int, path: str) -> None:
    """N events: key and v pseudo-random from the event number, ts (ms) increasing, 999 a second,
    never on a whole second."""
    i = F.col("id")
    (
        spark.range(0, n, numPartitions=4)
        .select(
            F.pmod(F.xxhash64(i, F.lit(1)), F.lit(keys)).cast("long").alias("key"),
            (F.pmod(F.xxhash64(i, F.lit(2)), F.lit(1000)) / 10.0).alias("v"),
            (F.floor(i / 999) * 1000 + F.pmod(i, F.lit(999)) + 1).cast("long").alias("ts"),
        )
        .write.mode("overwrite")
        .parquet(path)
    )


# -- the four jobs ------------------------------------------------------------------------------


def cq_sliding(spark: SparkSession, df: DataFrame) -> DataFrame:
    return cq_py.spark.run(spark, SLIDING, {"s": df}, partitions=_partitions(spark))["q"]


def _partitions(spark: SparkSession) -> int:
    # cq splits its input as Spark SQL's shuffles do in this session.
    return int(spark.conf.get("spark.sql.shuffle.partitions"))


def sql_sliding(df: DataFrame) -> DataFrame:
    return df.groupBy(F.window(F.timestamp_millis("ts"), "10 seconds", "1 second"), "key").agg(
        F.avg("v").alias("a")
    )


def cq_rows(spark: SparkSession, df: DataFrame) -> DataFrame:
    return cq_py.spark.run(spark, ROWS, {"s": df}, partitions=_partitions(spark))["q"]


def sql_rows(df: DataFrame) -> DataFrame:
    w = Window.partitionBy("key").orderBy("ts").rowsBetween(-9, 0)
    return df.select("key", "ts", F.avg("v").over(w).alias("a"))


def force(df: DataFrame) -> float:
    """Seconds to compute ``df`` entirely (written to the noop sink)."""
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


# -- checks (small N: the results are collected) --------------------------------------------------


def check_sliding(cq: DataFrame, sql: DataFrame) -> int:
    """cq's rows expanded to one per whole second they hold == Spark's rows (key, window end,
    avg)."""
    expanded = cq.select(
        "key", "a", F.explode(F.sequence("start", F.col("end") - 1000, F.lit(1000))).alias("tau")
    )
    spark_rows = sql.select("key", "a", (F.unix_millis(F.col("window.end"))).alias("tau"))
    return _same(expanded, spark_rows, ["key", "tau"])


def check_rows(cq: DataFrame, sql: DataFrame) -> int:
    """At every event, the average Spark gives == the average of cq's row alive then."""
    events = sql.alias("e")
    rows = cq.alias("r")
    alive = events.join(
        rows,
        (F.col("e.key") == F.col("r.key"))
        & (F.col("r.start") <= F.col("e.ts"))
        & (F.col("r.end").isNull() | (F.col("e.ts") < F.col("r.end"))),
        "left",
    )
    bad = alive.filter(F.col("r.a").isNull() | (F.abs(F.col("e.a") - F.col("r.a")) > 1e-9)).count()
    if bad:
        raise AssertionError(f"rows: {bad} events whose average differs between cq and Spark SQL")
    return events.count()


def _same(a: DataFrame, b: DataFrame, on: list[str]) -> int:
    joined = a.alias("x").join(b.alias("y"), on, "full_outer")
    bad = joined.filter(
        F.col("x.a").isNull() | F.col("y.a").isNull() | (F.abs(F.col("x.a") - F.col("y.a")) > 1e-9)
    ).count()
    if bad:
        raise AssertionError(f"sliding: {bad} (key, instant) pairs differ between cq and Spark SQL")
    return b.count()


# -- the run ---------------------------------------------------------------------------------------


def measure(spark: SparkSession, df: DataFrame, repeat: int, check: bool) -> dict:
    results = {}
    for name, ours, theirs, checker in (
        ("sliding", cq_sliding, sql_sliding, check_sliding),
        ("rows", cq_rows, sql_rows, check_rows),
    ):
        cq_df, sql_df = ours(spark, df), theirs(df)
        # Interleaved, so that both sides see the same machine (other load comes and goes).
        cq_runs, sql_runs = [], []
        for _ in range(repeat):
            cq_runs.append(force(cq_df))
            sql_runs.append(force(sql_df))
        results[name] = {
            "cq_s": min(cq_runs),
            "sql_s": min(sql_runs),
            "cq_runs_s": cq_runs,
            "sql_runs_s": sql_runs,
        }
        if check:
            results[name]["checked_rows"] = checker(cq_df, sql_df)
    return results


def profile(spark: SparkSession, df: DataFrame, path: str, partitions: int) -> dict:
    """Where cq's time goes on the rows workload: the same pipeline cut after each step (each
    forced to the noop sink), and the engine alone on one core over the same events."""
    import pyarrow.parquet as pq

    import cq_py

    def drop(batches):
        for _ in batches:
            pass
        return iter([])

    # As cq_py.spark.run builds it: the columns cast to the script's types, an arrival sequence,
    # a shuffle by the key's hash (computed by the exchange, not stored), a sort by (ts, sequence).
    keyed = df.select(
        F.monotonically_increasing_id().alias("seq"),
        F.col("key").cast("long"),
        F.col("v").cast("double"),
        "ts",
    )
    shuffled = keyed.repartition(partitions, F.hash("key"))
    ordered = shuffled.sortWithinPartitions("ts", "seq").drop("seq")
    steps = {
        "read": df,
        "+ sequence": keyed,
        "+ shuffle by key": shuffled,
        "+ sort by time": ordered,
        "+ Arrow to Python (nothing done)": ordered.mapInArrow(drop, ordered.schema),
        "cq on Spark (all)": cq_rows(spark, df),
        # Spark SQL's plan for the same window: the same exchange, a sort, then the window.
        "Spark SQL: shuffle + sort only": df.repartition(partitions, "key").sortWithinPartitions(
            "key", "ts"
        ),
        "Spark SQL (all)": sql_rows(df),
    }
    out = {}
    for name, job in steps.items():
        force(job)
        out[name] = min(force(job) for _ in range(2))
    table = pq.read_table(path).sort_by("ts")
    eng = cq_py.Engine()
    eng.execute(ROWS)
    start = time.perf_counter()
    for batch in table.to_batches(max_chunksize=1 << 18):
        eng.push("s", batch)
        eng.fetch("q")
    eng.close()
    eng.fetch("q")
    out["engine alone, one core (driver)"] = time.perf_counter() - start
    return out


def chart(results: dict, events: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = {
        "sliding": "per-key AVG\n[Range 10 s Slide 1 s]",
        "rows": "per-key AVG\n[Partition By key Rows 10]",
    }
    fig, ax = plt.subplots(figsize=(6.4, 4))
    xs = range(len(results))
    cq_rate = [events / r["cq_s"] / 1e6 for r in results.values()]
    sql_rate = [events / r["sql_s"] / 1e6 for r in results.values()]
    ax.bar([x - 0.2 for x in xs], cq_rate, 0.4, label="cq on Spark (mapInArrow)")
    ax.bar([x + 0.2 for x in xs], sql_rate, 0.4, label="Spark SQL")
    for x, c, s in zip(xs, cq_rate, sql_rate, strict=True):
        ax.text(x - 0.2, c, f"{c:.2f}", ha="center", va="bottom", fontsize=8)
        ax.text(x + 0.2, s, f"{s:.2f}", ha="center", va="bottom", fontsize=8)
        ax.text(x, max(c, s) * 1.08, f"{c / s:.1f}×", ha="center", fontsize=10, weight="bold")
    ax.set_xticks(list(xs), [names[k] for k in results])
    ax.set_ylabel("million events / s")
    ax.set_ylim(0, max(cq_rate + sql_rate) * 1.4)
    ax.set_title(f"{events:,} events, local[2], same session and data")
    ax.legend(loc="upper center", ncol=2, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=10_000_000)
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("--master", default="local[2]")
    p.add_argument(
        "--partitions",
        type=int,
        default=2,
        help="spark.sql.shuffle.partitions (both sides; cq's partitions too)",
    )
    p.add_argument(
        "--arrow-batch",
        type=int,
        default=100_000,
        help="spark.sql.execution.arrow.maxRecordsPerBatch (cq's side only)",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs per job; the best is reported")
    p.add_argument(
        "--check",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compare the results (default: when --events <= 1,000,000)",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="also time the steps of cq's pipeline on the rows workload",
    )
    p.add_argument("--data", help="Parquet directory for the generated events (kept if given)")
    p.add_argument("--png", type=Path, help="bar chart of the throughputs")
    p.add_argument("--json", type=Path, help="write the figures as JSON")
    p.add_argument(
        "--replot",
        type=Path,
        metavar="JSON",
        help="only redraw --png from the figures a --json run saved",
    )
    args = p.parse_args(argv)
    if args.replot:
        saved = json.loads(args.replot.read_text())
        chart(saved["results"], saved["events"], args.png or HERE / "spark_bench.png")
        return 0
    check = args.check if args.check is not None else args.events <= 1_000_000

    spark = session(args.master, args.partitions, args.arrow_batch)
    tmp = None
    data = args.data
    if data is None:
        tmp = tempfile.mkdtemp(prefix="cq-spark-bench-")
        data = str(Path(tmp) / "events.parquet")
    try:
        if not Path(data).exists():
            generate(spark, args.events, args.keys, data)
        df = spark.read.parquet(data)
        # Warm-up: JIT, Python workers and the cq extension loaded, on 1% of the data.
        small = df.limit(max(args.events // 100, 1000))
        for job in (
            cq_sliding(spark, small),
            sql_sliding(small),
            cq_rows(spark, small),
            sql_rows(small),
        ):
            force(job)
        results = measure(spark, df, args.repeat, check)
        steps = profile(spark, df, data, args.partitions) if args.profile else None
    finally:
        spark.stop()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"{args.events:,} events, {args.keys} keys, {args.master}, "
        f"{args.partitions} shuffle partitions"
    )
    print(f"{'workload':<10}{'cq s':>9}{'cq ev/s':>14}{'SQL s':>9}{'SQL ev/s':>14}{'ratio':>8}")
    for name, r in results.items():
        print(
            f"{name:<10}{r['cq_s']:>9.2f}{args.events / r['cq_s']:>14,.0f}{r['sql_s']:>9.2f}"
            f"{args.events / r['sql_s']:>14,.0f}{r['sql_s'] / r['cq_s']:>7.2f}×"
            + (f"   checked {r['checked_rows']:,} rows" if "checked_rows" in r else "")
        )
    if steps:
        print("\nrows workload, cq's pipeline cut after each step (seconds):")
        for name, seconds in steps.items():
            print(f"  {name:<36}{seconds:>7.2f}")
        # No engine can make cq faster than the pipeline that feeds it through mapInArrow.
        bound = steps["Spark SQL (all)"] / steps["+ Arrow to Python (nothing done)"]
        print(
            f"  ratio bound through mapInArrow (Spark SQL / pipeline with no engine): {bound:.2f}x"
        )
    if args.png:
        chart(results, args.events, args.png)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "events": args.events,
                    "keys": args.keys,
                    "master": args.master,
                    "partitions": args.partitions,
                    "results": results,
                    "profile": steps,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
