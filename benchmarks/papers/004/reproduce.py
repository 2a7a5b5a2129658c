"""Paper 004 §6: MQT, FIFO, MandF and adMandF on random and P1–P8 windows through the four
input-rate stages of stages.json (write and commit it first: ``python stages.py``).

Per stage, cumulative over the tuples arrived since the end of priming (the burst and stage 1 on):
processed, dropped and pending % of their (tuple, query) pairs, from ``Engine.shared_joins()``.

    python benchmarks/papers/004/reproduce.py                 # the table and figs7_24.png
    python benchmarks/papers/004/reproduce.py --quick --png ''   # seconds, for CI
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import stages  # noqa: E402
import workload  # noqa: E402

SCHEDULERS = ["mqt", "fifo", "mandf", "admandf"]


def measure(
    dist: str, scheduler: str, rates: list[float], stage_s: float
) -> list[dict[str, float]]:
    """Per stage: processed, dropped and pending % of the pairs of tuples arrived since priming."""
    data = workload.build_input(rates, stage_s, stages.PRIME_RATE)
    seen = workload.run_stages(workload.windows(dist), scheduler, data)
    base, rows = seen[0], []
    for c in seen[1:]:
        pairs = workload.QUERIES * (c["arrivals"] - base["arrivals"])
        rows.append(
            {w: 100.0 * (c[w] - base[w]) / pairs for w in ("processed", "dropped", "pending")}
        )
    return rows


def plot(results: dict[str, dict[str, list[dict[str, float]]]], path: str) -> None:
    """Figs. 7–24: processed % and dropped % per distribution, one line per scheduler."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dists = list(results)
    fig, axes = plt.subplots(len(dists), 2, figsize=(9, 2.2 * len(dists)), squeeze=False)
    for row, d in zip(axes, dists, strict=True):
        for ax, what in zip(row, ("processed", "dropped"), strict=True):
            for s in SCHEDULERS:
                ys = [r[what] for r in results[d][s]]
                ax.plot(range(1, len(ys) + 1), ys, marker="o", label=s)
            ax.set_title(f"{d}: {what} %", fontsize=9)
            ax.set_xticks(range(1, 5))
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="random and P1, short stages")
    parser.add_argument("--png", default=str(HERE / "figs7_24.png"), help="'' skips plotting")
    args = parser.parse_args(argv)
    if not stages.FILE.exists():
        raise SystemExit(f"{stages.FILE} missing: run stages.py and commit it first")
    plan = json.loads(stages.FILE.read_text())["distributions"]
    dists = ["random", "P1"] if args.quick else stages.DISTRIBUTIONS
    stage_s = 0.5 if args.quick else stages.STAGE_S
    started = time.perf_counter()
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    print(f"{'dist':7} {'sched':8} " + " ".join(f"st{i} proc/drop/pend %" for i in range(1, 5)))
    for d in dists:
        results[d] = {}
        for s in SCHEDULERS:
            rows = measure(d, s, plan[d]["stage_rates"], stage_s)
            results[d][s] = rows
            cells = " ".join(
                f"{r['processed']:5.1f}/{r['dropped']:5.1f}/{r['pending']:5.1f}" for r in rows
            )
            print(f"{d:7} {s:8} {cells}", flush=True)
    print(f"{time.perf_counter() - started:.1f} s")
    if args.png:
        plot(results, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
