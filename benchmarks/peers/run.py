"""cq against DuckDB (and, with ``--spark``, Spark SQL) on the five workloads of workloads.py, same
data, results checked equal, one table and a chart.

    python benchmarks/peers/run.py                  # 10,000,000 events (W4: 1,000,000 a side)
    python benchmarks/peers/run.py --events 1000000 --threads 1
    python benchmarks/peers/run.py --spark          # adds a Spark SQL column (slow)

Every engine starts from the same Arrow tables in memory (read from generate.py's Parquet cache
before any timing) and its timing ends when every output row is materialised in an Arrow table:
``cq_py.run`` for cq, ``con.sql(...).to_arrow_table()`` for DuckDB, ``DataFrame.toArrow()`` for
Spark (its inputs read from the same Parquet files and cached in Spark before any timing). Runs are
interleaved — each repetition runs every workload on every engine, cq first in repetitions 1, 3,
... and last in 2, 4, ... — and the best of ``--repeat`` (3) is reported. Each result is compared
with cq's first (workloads.compare): a difference stops the benchmark with an error.

``--threads N`` (default: the machine's cores) sets DuckDB's ``threads`` and Spark's ``local[N]``;
cq gets ``threads=N`` only if its Engine takes that option (the table says how many threads cq
used). Events/s count the events of the input (W4: of one side, as the issue does).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import inspect
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

import cq_py

# pytest runs in importlib mode (pyproject.toml) and this file is also run as a script: the
# modules beside it are imported by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate
import workloads as wl

HERE = Path(__file__).resolve().parent
CQ = "cq"
DUCK = "DuckDB"
SPARK = "Spark SQL"


def cq_threads(threads: int) -> int:
    """How many threads cq runs on when asked for ``threads``: that many if ``cq_py.Engine``
    takes a ``threads`` option, else 1.

    >>> cq_threads(1)
    1
    """
    return threads if "threads" in inspect.signature(cq_py.Engine).parameters else 1


@dataclass
class Side:
    """One engine's (or one peer variant's) way of running a workload, and its timings."""

    engine: str  # CQ, DUCK or SPARK
    variant: str  # the peer variant of the workload ("" for the only one)
    run: Callable[[], pa.Table]
    seconds: list[float] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.engine} {self.variant}".strip()


def timed(run: Callable[[], pa.Table]) -> tuple[float, pa.Table]:
    """Seconds taken by ``run()`` (collected garbage first, so that no earlier result is freed
    inside the timing), and its result.

    >>> s, t = timed(lambda: pa.table({"x": [1]}))
    >>> s >= 0, t.num_rows
    (True, 1)
    """
    gc.collect()
    start = time.perf_counter()
    table = run()
    return time.perf_counter() - start, table


def cq_side(w: wl.Workload, tables: dict[str, pa.Table], threads: int) -> Side:
    # Asked for explicitly, one thread too: the Engine's default is the machine's cores.
    options: dict[str, Any] = {"threads": threads} if cq_threads(threads) == threads else {}
    inputs = {s: tables[s] for s in w.streams}
    return Side(CQ, "", lambda: cq_py.run(w.cql, inputs=inputs, **options)["q"])


def duckdb_connection(tables: dict[str, pa.Table], threads: int) -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET enable_progress_bar = false")
    for name, table in tables.items():
        con.register(name, table)
    return con


def duckdb_sides(w: wl.Workload, con: Any, variants: list[str]) -> list[Side]:
    def runner(sql: str) -> Callable[[], pa.Table]:
        return lambda: con.sql(sql).to_arrow_table()

    return [Side(DUCK, v, runner(w.sql[v](wl.DUCKDB))) for v in variants]


def spark_session(threads: int, paths: dict[str, Path]) -> Any:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{threads}]")
        .appName("cq-peers")
        .config("spark.sql.shuffle.partitions", str(threads))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.maxResultSize", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for name, p in paths.items():
        df = spark.read.parquet(str(p.resolve())).cache()
        df.count()  # cached before any timing, as the other engines' inputs are in memory
        df.createOrReplaceTempView(name)
    return spark


def spark_sides(w: wl.Workload, spark: Any) -> list[Side]:
    def runner(sql: str) -> Callable[[], pa.Table]:
        return lambda: spark.sql(sql).toArrow()

    return [Side(SPARK, v, runner(w.sql[v](wl.SPARK))) for v in w.spark]


def rate(events: int, seconds: float) -> str:
    """Events per second, short.

    >>> rate(10_000_000, 0.5), rate(1_000_000, 4.0), rate(20_000, 5.0), rate(500, 13.9)
    ('20.0 M', '0.25 M', '4.0 k', '36')
    """
    r = events / seconds
    if r >= 1e5:
        return f"{r / 1e6:.1f} M" if r >= 1e7 else f"{r / 1e6:.2f} M"
    return f"{r / 1e3:.1f} k" if r >= 1e3 else f"{r:.0f}"


def events_of(w: wl.Workload, tables: dict[str, pa.Table]) -> int:
    """The events a workload's rate counts: its input's, or one side's for a join (W4)."""
    return int(tables[w.streams[0]].num_rows)


def interleaved(
    plans: dict[str, list[Side]],
    tables: dict[str, pa.Table],
    repeat: int,
    log: Callable[[str], None],
) -> dict[str, str]:
    """Runs every side of every workload ``repeat`` times, interleaved, checking each result
    against cq's first; returns each workload's fingerprint (rows, checksum)."""
    reference: dict[str, pa.Table] = {}
    prints: dict[str, str] = {}
    for rep in range(repeat):
        for name, sides in plans.items():
            w = wl.WORKLOADS[name]
            # cq first in repetitions 1, 3, ... (its first result is the reference), last in 2, 4.
            for side in sides if rep % 2 == 0 else list(reversed(sides)):
                seconds, out = timed(side.run)
                side.seconds.append(seconds)
                if name not in reference:
                    reference[name] = out
                    prints[name] = wl.fingerprint(out, w)
                else:
                    wl.compare(w, reference[name], out, side.label)
                speed = rate(events_of(w, tables), seconds)
                log(
                    f"  {name} {side.label:<28} rep {rep + 1}: {seconds:8.3f} s "
                    f"({speed} events/s), {out.num_rows:,} rows, equal"
                )
                del out
    return prints


def git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def table_rows(
    plans: dict[str, list[Side]], tables: dict[str, pa.Table], threads: int, spark: bool
) -> Iterator[list[str]]:
    """The printed table: one row per workload and DuckDB variant (W4 has two), cq's figure
    repeated beside each."""
    cq_n = cq_threads(threads)
    head = [
        "workload",
        "events",
        f"cq, {cq_n} thread{'s' if cq_n > 1 else ''}"
        + ("" if cq_n == threads else " (Engine takes no threads=)"),
        f"DuckDB, {threads} thread{'s' if threads > 1 else ''}",
        "cq / DuckDB",
    ]
    if spark:
        head += [f"Spark SQL, local[{threads}]", "cq / Spark"]
    yield head
    for name, sides in plans.items():
        w = wl.WORKLOADS[name]
        n = events_of(w, tables)
        cq = next(s for s in sides if s.engine == CQ)
        best = min(cq.seconds)
        for duck in (s for s in sides if s.engine == DUCK):
            theirs = min(duck.seconds)
            label = name + (f" (DuckDB: {duck.variant})" if duck.variant else "")
            row = [
                label,
                f"{n:,}" + (" a side" if len(w.streams) > 1 else ""),
                f"{best:.3f} s, {rate(n, best)}/s",
                f"{theirs:.3f} s, {rate(n, theirs)}/s",
                f"{theirs / best:.2f}×",
            ]
            if spark:
                sp = [s for s in sides if s.engine == SPARK and s.variant == duck.variant]
                row += (
                    [f"{min(sp[0].seconds):.3f} s, {rate(n, min(sp[0].seconds))}/s",
                     f"{min(sp[0].seconds) / best:.2f}×"]
                    if sp
                    else ["—", "—"]
                )  # fmt: skip
            yield row


def markdown(rows: list[list[str]]) -> str:
    """Rows as a Markdown table, the first row its head.

    >>> print(markdown([["a", "b"], ["1", "2"]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def _series(side: Side) -> str:
    # W4's bucketed join is DuckDB's usual way of running it, so it shares the DuckDB bars; the
    # plain range join gets bars of its own.
    return side.engine if side.variant in ("", "bucketed join") else side.label


def chart(plans: dict[str, list[Side]], tables: dict[str, pa.Table], png: Path, title: str) -> None:
    """Events/s of every side of every workload, grouped by workload, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = list(dict.fromkeys(_series(s) for sides in plans.values() for s in sides))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(series)
    for k, label in enumerate(series):
        xs, ys = [], []
        for i, (name, sides) in enumerate(plans.items()):
            for s in sides:
                if _series(s) == label:
                    xs.append(i + (k - (len(series) - 1) / 2) * width)
                    ys.append(events_of(wl.WORKLOADS[name], tables) / min(s.seconds))
        bars = ax.bar(xs, ys, width, label=label)
        ax.bar_label(bars, [f"{y / 1e6:.2g} M" for y in ys], fontsize=7)
    ax.set_xticks(range(len(plans)), list(plans))
    ax.set_yscale("log")
    ax.set_ylabel("events/s (best of the runs; W4: one side)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=generate.EVENTS, help="events of W1-W3, W5")
    p.add_argument("--join-events", type=int, help="events of each W4 stream (default events/10)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--repeat", type=int, default=3, help="runs of each side; the best is reported")
    p.add_argument("--workloads", default=",".join(wl.WORKLOADS), help="e.g. W2,W5")
    p.add_argument("--no-plain", action="store_true", help="skip W4's plain range join in DuckDB")
    p.add_argument("--spark", action="store_true", help="add Spark SQL (needs pyspark; slow)")
    p.add_argument("--data-dir", type=Path, default=generate.DATA_DIR)
    p.add_argument("--png", default=str(HERE / "peers.png"), help="the chart ('' for none)")
    p.add_argument("--json", type=Path, help="write every timing and the settings here")
    args = p.parse_args(argv)
    names = [n.strip().upper() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in wl.WORKLOADS]
    if unknown or not names:
        p.error(f"--workloads: unknown {', '.join(unknown) or '(none given)'}; "
                f"the workloads are {', '.join(wl.WORKLOADS)}")  # fmt: skip
    args.workloads = names
    for option in ("events", "threads", "repeat"):
        if getattr(args, option) < 1:
            p.error(f"--{option} must be at least 1, found {getattr(args, option)}")
    if args.join_events is None:
        args.join_events = max(1, args.events // 10)
    if args.spark and importlib.util.find_spec("pyspark") is None:
        p.error(
            "--spark runs Spark SQL through pyspark, which is not installed (pip install pyspark)"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    load_before = os.getloadavg()
    sizes = {"e": args.events, "a": args.join_events, "b": args.join_events}
    needed = sorted({s for n in args.workloads for s in wl.WORKLOADS[n].streams})
    paths = {s: generate.cached(s, sizes[s], args.data_dir) for s in needed}
    tables = {s: generate.load(s, sizes[s], args.data_dir) for s in needed}
    con = duckdb_connection(tables, args.threads)
    spark = spark_session(args.threads, paths) if args.spark else None
    plans: dict[str, list[Side]] = {}
    for name in args.workloads:
        w = wl.WORKLOADS[name]
        variants = [v for v in w.sql if not (args.no_plain and v == "plain range join")]
        plans[name] = [cq_side(w, tables, args.threads), *duckdb_sides(w, con, variants)]
        if spark is not None:
            plans[name] += spark_sides(w, spark)
    print(
        f"{args.events:,} events (W4: {args.join_events:,} a side), best of {args.repeat}, "
        f"threads {args.threads} (cq: {cq_threads(args.threads)}), data in {args.data_dir}"
    )
    try:
        prints = interleaved(plans, tables, args.repeat, lambda line: print(line, flush=True))
    except wl.Mismatch as e:
        print(f"error: results differ, no figures: {e}", file=sys.stderr)
        return 1
    finally:
        if spark is not None:
            spark.stop()
    rows = list(table_rows(plans, tables, args.threads, spark is not None))
    import duckdb

    machine = (
        f"{os.cpu_count()} cores, {platform.machine()}, load average "
        f"{load_before[0]:.1f} before and {os.getloadavg()[0]:.1f} after"
    )
    versions = f"cq {git_commit()}, DuckDB {duckdb.__version__}, pyarrow {pa.__version__}"
    print()
    print(markdown(rows))
    print()
    for name in plans:
        print(f"{name}: {wl.WORKLOADS[name].query}")
    for name, fp in prints.items():
        print(f"{name}: {fp}; every engine's result equal")
    print(f"{machine}; {versions}; {time.perf_counter() - started:.0f} s in all")
    if args.png:
        title = (
            f"{args.events:,} events (W4: {args.join_events:,} a side), "
            f"best of {args.repeat}; DuckDB {args.threads} threads, cq {cq_threads(args.threads)}"
        )
        chart(plans, tables, Path(args.png), title)
        print(f"chart: {args.png}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "events": args.events,
                    "join_events": args.join_events,
                    "threads": args.threads,
                    "cq_threads": cq_threads(args.threads),
                    "repeat": args.repeat,
                    "machine": machine,
                    "versions": versions,
                    "results": prints,
                    "seconds": {
                        name: {s.label: s.seconds for s in sides} for name, sides in plans.items()
                    },
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
