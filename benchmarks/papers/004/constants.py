"""The work clock's constants (ns per job, per scanned tuple, per emitted pair), measured.

The bounded shared join counts its work (``shared_joins()[0]["work"]``: jobs, scanned, emitted).
Runs of §6's workload with a buffer too large to drop anything, different schedulers (jobs per
tuple: FIFO one, MQT one per segment), window distributions and key counts (partners per probe)
give one equation each (keys from 30 to 300 locations: fewer make the ten queries' results, not
the join, dominate): the thread's CPU time for the whole push and close (taking tuples in,
jobs, and the rows reaching the ten queries) = job·jobs + scan·scanned + pair·emitted. A
least-squares fit over the runs (the fastest of ``--repeat`` per run: CPU time is less disturbed by
neighbours than elapsed time, not immune) gives the three constants; src_cpp/operators/swj_bounded.h
holds the values in use.

    python benchmarks/papers/004/constants.py            # fit and print
    python benchmarks/papers/004/constants.py --quick    # fewer, smaller runs
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import swj_workload as workload  # noqa: E402

RUNS = [
    (dist, scheduler, locations)
    for dist in ("random", "P1", "P4")
    for scheduler in ("fifo", "mqt")
    for locations in (30, 100, 300)
]


def work(
    dist: str, scheduler: str, locations: int, rate: float, stage_s: float
) -> dict[str, float]:
    """One run without drops: the join's work counters and the CPU time it took (ns)."""
    data = workload.build_input([rate], stage_s, 100.0, locations=locations)
    eng = workload.engine(workload.windows(dist), scheduler, buffer=10**7)
    started = time.thread_time_ns()
    eng.push("a", data.a)
    eng.push("b", data.b)
    eng.close()
    cpu = time.thread_time_ns() - started
    (join,) = eng.shared_joins()
    return {**{k: float(v) for k, v in join["work"].items()}, "cpu": float(cpu)}


def fit(rows: list[dict[str, float]]) -> tuple[np.ndarray, float]:
    """Least squares of CPU time (ns) on jobs, scanned, emitted, each run's equation divided by its
    time (relative errors: the big runs would rule otherwise): the constants and R²."""
    x = np.array([[r["jobs"], r["scanned"], r["emitted"]] for r in rows])
    y = np.array([r["cpu"] for r in rows])
    coef, *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
    r2 = 1.0 - float(np.sum((y - x @ coef) ** 2)) / float(np.sum((y - y.mean()) ** 2))
    return coef, r2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, smaller runs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration")
    args = parser.parse_args(argv)
    runs = RUNS[::3] if args.quick else RUNS
    repeat = 1 if args.quick else args.repeat
    started = time.perf_counter()
    rows = []
    head = ("dist", "sched", "keys", "jobs", "scanned", "emitted", "cpu ms")
    print("{:7} {:5} {:>5} {:>9} {:>10} {:>10} {:>9}".format(*head))
    for dist, scheduler, locations in runs:
        stage_s = 2.0 if args.quick else 5.0
        r = min(
            (work(dist, scheduler, locations, 1000.0, stage_s) for _ in range(repeat)),
            key=lambda r: r["cpu"],
        )
        rows.append(r)
        print(
            f"{dist:7} {scheduler:5} {locations:5d} {r['jobs']:9.0f} {r['scanned']:10.0f} "
            f"{r['emitted']:10.0f} {r['cpu'] / 1e6:9.2f}",
            flush=True,
        )
    (job, scan, pair), r2 = fit(rows)
    print(
        f"fit: job {job:.1f} ns, scanned tuple {scan:.2f} ns, emitted pair {pair:.2f} ns, "
        f"R² {r2:.4f}"
    )
    print(f"{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
