"""Engine(threads=2) against threads=1 on the issue's W2, W3 and W5 (issue 29, item 6).

    python benchmarks/micro/threads/bench_threads.py                  # 1,000,000 and 10,000,000
    python benchmarks/micro/threads/bench_threads.py --events 1000000 --repeat 3 --profile

Data as benchmarks/peers generates it: ``ts`` one event per ms from 0, ``key`` and ``val`` uniform
in 0..999 (a splitmix64 hash of the event number, so the same rows everywhere), built in memory
before any timing. Two ways in: ``run`` (``cq_py.run`` over the whole table, the engine closed,
every output row in Arrow) and ``push`` (``Engine.push`` of 65,536-row batches, then ``close`` and
``fetch``). Runs are interleaved (threads=1 then 2, then 2 then 1, ...) and the best of
``--repeat`` is reported, with the ratio; each threads=2 result is checked equal to threads=1's as a
bag of rows (row count and an order-free checksum). ``--profile`` also prints where the time of a
threads=2 ``run`` goes (routing the input, the engines, merging the output). No timing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

import cq_py

SCRIPTS = {
    "W1": "ISTREAM(SELECT * FROM e [Now] WHERE val > 499)",
    "W0": "SELECT key FROM e [Now] WHERE val > 2000",
    "W2": "ISTREAM(SELECT key, AVG(val) AS a FROM e [Range 10 SECONDS Slide 1 SECOND] GROUP BY key)",
    "W3": "ISTREAM(SELECT key, COUNT(*) AS c FROM e [Range 1 SECOND Slide 1 SECOND] GROUP BY key)",
    "W5": "ISTREAM(SELECT key, AVG(val) AS a FROM e [Partition By key Rows 10] GROUP BY key)",
}
BATCH = 65_536


def splitmix64(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def events(n: int, seed: int = 1) -> pa.Table:
    i = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h1 = splitmix64(i * np.uint64(2) + np.uint64(seed))
        h2 = splitmix64(i * np.uint64(2) + np.uint64(seed) + np.uint64(1))
    return pa.table(
        {
            "ts": pa.array(i.astype(np.int64)),
            "key": pa.array((h1 % np.uint64(1000)).astype(np.int64)),
            "val": pa.array((h2 % np.uint64(1000)).astype(np.int64)),
        }
    )


def script(workload: str) -> str:
    return f"REGISTER STREAM e(key BIGINT, val BIGINT); REGISTER QUERY q AS {SCRIPTS[workload]};"


def via_run(workload: str, data: pa.Table, threads: int) -> pa.Table:
    return cq_py.run(script(workload), {"e": data}, threads=threads)["q"]


def via_push(workload: str, data: pa.Table, threads: int) -> pa.Table:
    eng = cq_py.Engine(threads=threads)
    eng.execute(script(workload))
    for batch in data.to_batches(BATCH):
        eng.push("e", batch)
    eng.close()
    return eng.fetch("q")


def checksum(table: pa.Table) -> tuple[int, int]:
    """(rows, an order-free sum of a hash of each row): equal for equal bags."""
    h = np.zeros(table.num_rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in table.columns:
            values = col.to_numpy()
            bits = values.view(np.uint64) if values.dtype.itemsize == 8 else values.astype(np.uint64)
            h = splitmix64(h * np.uint64(31) + bits)
    return table.num_rows, int(h.sum(dtype=np.uint64))


def timed(f: Callable[[], pa.Table]) -> tuple[float, pa.Table]:
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def profile(workload: str, data: pa.Table) -> None:
    """Where a threads=2 run's time goes, by cProfile's cumulative times of the main steps."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    via_run(workload, data, 2)
    prof.disable()
    stats = pstats.Stats(prof)
    wanted = ("partition_rows", "check", "_each", "drain", "take", "argsort", "push")
    rows = []
    for (file, _, name), (_, _, _, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
        if any(w == name or name.endswith(w) for w in wanted):
            rows.append((cum, f"{name} ({file.rsplit('/', 1)[-1]})"))
    for cum, what in sorted(rows, reverse=True)[:10]:
        print(f"    {cum:8.3f} s  {what}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--workloads", default="W2,W3,W5")
    ap.add_argument("--ways", default="run,push")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    ways = {"run": via_run, "push": via_push}
    print(f"cq {cq_py.__version__}, machine cores {cq_py.engine.machine_cores()}", flush=True)
    table = []
    for n in args.events:
        data = events(n)
        for workload in args.workloads.split(","):
            for way in args.ways.split(","):
                best = {1: float("inf"), 2: float("inf")}
                sums = {}
                for rep in range(args.repeat):
                    for threads in (1, 2) if rep % 2 == 0 else (2, 1):
                        seconds, out = timed(lambda: ways[way](workload, data, threads))
                        best[threads] = min(best[threads], seconds)
                        sums[threads] = checksum(out)
                        print(
                            f"  {workload} {way} {n:>11,} threads={threads}: {seconds:7.3f} s",
                            flush=True,
                        )
                        del out
                if sums[1] != sums[2]:
                    print(f"{workload} {way}: threads=2 differs: {sums}", file=sys.stderr)
                    return 1
                table.append((workload, way, n, best[1], best[2], sums[1][0]))
                if args.profile and way == "run":
                    profile(workload, data)
    print("\n| workload | way | events | threads=1 | threads=2 | speed-up | output rows |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for workload, way, n, one, two, rows in table:
        print(
            f"| {workload} | {way} | {n:,} | {n / one / 1e6:.2f} M/s ({one:.2f} s) | "
            f"{n / two / 1e6:.2f} M/s ({two:.2f} s) | {one / two:.2f}x | {rows:,} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
