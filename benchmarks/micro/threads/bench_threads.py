"""Engine(threads=2) against threads=1 on the issue's W2, W3 and W5 (issue 29, item 6).

    python benchmarks/micro/threads/bench_threads.py                  # 1,000,000 and 10,000,000
    python benchmarks/micro/threads/bench_threads.py --events 1000000 --ways run --where

Data as benchmarks/peers generates it: ``ts`` one event per ms from 0, ``key`` and ``val`` uniform
in 0..999 (a splitmix64 hash of the event number: the same rows everywhere), built in memory
before any timing. Two ways in: ``run`` (``cq_py.run`` over the whole table: the engine closed,
every output row in Arrow) and ``push`` (``Engine.push`` of 65,536-row batches, then ``close`` and
``fetch``). Runs are interleaved (threads=1 then 2, then 2 then 1, ...), the best of ``--repeat``
reported with the ratio; every threads=2 result is checked equal to threads=1's as a bag of rows
(row count and an order-free checksum).

The machine may be shared: each run also prints how many cores other processes kept busy meanwhile
(from /proc/stat, less this process's own time), so that a run two threads could not overlap is
seen as such. ``--where`` prints, for a threads=2 ``run`` of each workload, where its time went:
the pushes (checking the input whole, then the engine group: the split, each engine on its own
thread), merging the outputs in time order, and the rest; with the CPU time of the calling thread
and of the group's other threads. ``--workloads W1`` runs the stateless W1 too (split in
contiguous runs). No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import cq_py
from cq_core import _core
from cq_py import partitions

SCRIPTS = {
    "W1": "ISTREAM(SELECT * FROM e [Now] WHERE val > 499)",
    "W2": "ISTREAM(SELECT key, AVG(val) AS a "
    "FROM e [Range 10 SECONDS Slide 1 SECOND] GROUP BY key)",
    "W3": "ISTREAM(SELECT key, COUNT(*) AS c FROM e [Range 1 SECOND Slide 1 SECOND] GROUP BY key)",
    "W5": "ISTREAM(SELECT key, AVG(val) AS a FROM e [Partition By key Rows 10] GROUP BY key)",
}
BATCH = 65_536


def splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def events(n: int, seed: int = 1) -> pa.Table:
    i = np.arange(n, dtype=np.uint64)
    h1 = splitmix64(i * np.uint64(2) + np.uint64(seed))
    h2 = splitmix64(i * np.uint64(2) + np.uint64(seed + 1))
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


WAYS: dict[str, Callable[[str, pa.Table, int], pa.Table]] = {"run": via_run, "push": via_push}


def checksum(table: pa.Table) -> tuple[int, int]:
    """(rows, an order-free sum of a hash of each row): equal for equal bags."""
    h = np.zeros(table.num_rows, dtype=np.uint64)
    for col in table.columns:
        values = col.to_numpy()
        bits = values.view(np.uint64) if values.dtype.itemsize == 8 else values.astype(np.uint64)
        with np.errstate(over="ignore"):
            h = splitmix64(h * np.uint64(31) + bits)
    return table.num_rows, int(h.sum(dtype=np.uint64))


def busy_jiffies() -> int:
    """Jiffies the machine's CPUs spent busy (all but idle and iowait), from /proc/stat."""
    try:
        with Path("/proc/stat").open() as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return 0
    return sum(fields) - fields[3] - fields[4]


def measured(f: Callable[[], pa.Table]) -> tuple[float, float, pa.Table]:
    """(seconds, cores other processes kept busy meanwhile, the result)."""
    hz = os.sysconf("SC_CLK_TCK")
    busy, own = busy_jiffies(), os.times()
    t0 = time.perf_counter()
    out = f()
    seconds = time.perf_counter() - t0
    mine = sum(os.times()[:2]) - sum(own[:2])
    others = max(0.0, (busy_jiffies() - busy) / hz - mine) / seconds
    return seconds, others, out


class Where:
    """Where a threads=2 run's time goes, from hooks around Partitions: its pushes (checking the
    input whole, then the engine group: splitting, each engine on its thread), draining (the
    merge in time order), the rest (converting the input, Python); and the CPU time of this
    thread and of the engine group's other threads. A run split by time (``cq_py.run`` over
    time slices) has no Partitions: each slice's push is timed instead (when it started after
    the call, its seconds and its thread's CPU seconds)."""

    def __init__(self) -> None:
        self.push = 0.0
        self.merge = 0.0
        self.slices: list[tuple[str, float, float, float]] = []

    def __enter__(self) -> Where:
        self.saved = (partitions.Partitions.push, partitions.Partitions.drain)
        self.saved_push_all = cq_py.engine._push_all
        push, drain = self.saved
        push_all = self.saved_push_all
        me = self
        self.t0 = time.perf_counter()

        def timed_push_all(*args: Any) -> None:
            t0, c0 = time.perf_counter(), time.thread_time()
            push_all(*args)
            t1 = time.perf_counter()
            name = threading.current_thread().name
            me.slices.append((name, t0 - me.t0, t1 - t0, time.thread_time() - c0))

        cq_py.engine._push_all = timed_push_all

        def timed_push(self: Any, *args: Any) -> None:
            t0 = time.perf_counter()
            push(self, *args)
            me.push += time.perf_counter() - t0

        def timed_drain(self: Any, *args: Any) -> Any:
            t0 = time.perf_counter()
            out = drain(self, *args)
            me.merge += time.perf_counter() - t0
            return out

        partitions.Partitions.push = timed_push  # type: ignore[method-assign]
        partitions.Partitions.drain = timed_drain  # type: ignore[method-assign]
        self.cpu = (time.thread_time(), time.process_time())
        return self

    def __exit__(self, *exc: object) -> None:
        main, proc = time.thread_time() - self.cpu[0], time.process_time() - self.cpu[1]
        self.main, self.others = main, proc - main
        partitions.Partitions.push, partitions.Partitions.drain = self.saved
        cq_py.engine._push_all = self.saved_push_all

    def report(self, total: float) -> str:
        rest = total - self.push - self.merge
        if self.slices:
            each = "; ".join(
                f"{name}: from {start * 1e3:.1f} ms, {sec:.3f} s (CPU {cpu:.3f} s)"
                for name, start, sec, cpu in sorted(self.slices, key=lambda x: x[1])
            )
            return (
                f"    total {total:.3f} s, split by time: the slices' pushes {each}; CPU: this "
                f"thread {self.main:.3f} s, the other threads {self.others:.3f} s"
            )
        return (
            f"    total {total:.3f} s: pushes {self.push:.3f} s (checked, split, engines at once), "
            f"merging outputs {self.merge:.3f} s, the rest (converting the input, Python) "
            f"{rest:.3f} s; CPU: this thread {self.main:.3f} s, the engines' other threads "
            f"{self.others:.3f} s"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--workloads", default="W2,W3,W5")
    ap.add_argument("--ways", default="run,push")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--where", action="store_true", help="where a threads=2 run's time goes")
    args = ap.parse_args(argv)
    print(f"cq {cq_py.__version__} (core {_core.pgo}), cores {cq_py.engine.machine_cores()}")
    table = []
    for n in args.events:
        data = events(n)
        for workload in args.workloads.split(","):
            for way in args.ways.split(","):
                best = {1: (float("inf"), 0.0), 2: (float("inf"), 0.0)}
                sums = {}
                for rep in range(args.repeat):
                    for threads in (1, 2) if rep % 2 == 0 else (2, 1):
                        run = WAYS[way]
                        seconds, others, out = measured(
                            lambda run=run, w=workload, t=threads, d=data: run(w, d, t)
                        )
                        best[threads] = min(best[threads], (seconds, others))
                        sums[threads] = checksum(out)
                        del out
                        print(
                            f"  {workload} {way} {n:>11,} threads={threads}: {seconds:7.3f} s"
                            f"  (other processes: {others:.1f} cores)",
                            flush=True,
                        )
                if sums[1] != sums[2]:
                    print(f"{workload} {way}: threads=2 differs: {sums}", file=sys.stderr)
                    return 1
                table.append((workload, way, n, best[1], best[2], sums[1][0]))
                if args.where and way == "run":
                    with Where() as where:
                        seconds, others, _ = measured(lambda w=workload, d=data: via_run(w, d, 2))
                    print(where.report(seconds) + f" (other processes: {others:.1f} cores)")
    print(
        "\n| workload | way | events | threads=1 | threads=2 | speed-up | output rows |"
        "\n|---|---|---:|---:|---:|---:|---:|"
    )
    for workload, way, n, (one, o1), (two, o2), rows in table:
        print(
            f"| {workload} | {way} | {n:,} | {n / one / 1e6:.2f} M/s ({one:.2f} s) | "
            f"{n / two / 1e6:.2f} M/s ({two:.2f} s) | {one / two:.2f}x | {rows:,} |"
            + (f" busy machine: {max(o1, o2):.1f} other cores |" if max(o1, o2) > 0.2 else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
