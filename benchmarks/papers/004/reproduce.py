"""Paper 004 §6: MQT, FIFO, MandF and adMandF on random and P1–P8 windows through the four
input-rate stages of stages.json (written and committed first: ``python stages.py``).

Per stage, cumulative over the tuples arrived since the end of priming (the burst and stage 1 on):
processed, dropped and pending % of their (tuple, query) pairs, from ``Engine.shared_joins()``.
Then each claim of §6.3 against ours, and three figures: Figs. 7–24 (processed and dropped % per
distribution, one line per scheduler), Fig. 5 (the input rate of the stages) and adMandF's β and
method over time on P1 and P4 (from ``Engine.shared_join_trace``).

    python benchmarks/papers/004/reproduce.py                    # ~15 s; table, claims, PNGs
    python benchmarks/papers/004/reproduce.py --quick --png ''   # random, P1, P4; no plot (CI)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import stages  # noqa: E402
import swj_workload as workload  # noqa: E402

SCHEDULERS = ["mqt", "fifo", "mandf", "admandf"]
MQT_DROPS = ["P1", "P4", "P7", "P8"]  # §6.3.2: where MQT leaves queries unrun
MQT_CLEAN = ["P2", "P3", "P5", "P6"]

Rows = list[dict[str, float]]


def measure(
    dist: str, scheduler: str, rates: list[float], stage_s: float, **options: Any
) -> tuple[Rows, Any]:
    """Per stage: processed, dropped and pending % of the pairs of tuples arrived since priming;
    and the engine (its trace)."""
    data = workload.build_input(rates, stage_s, stages.PRIME_RATE)
    seen, eng = workload.run_stages(workload.windows(dist), scheduler, data, keep=True, **options)
    base, rows = seen[0], []
    for c in seen[1:]:
        pairs = workload.QUERIES * (c["arrivals"] - base["arrivals"])
        rows.append(
            {w: 100.0 * (c[w] - base[w]) / pairs for w in ("processed", "dropped", "pending")}
        )
    return rows, eng


def claims(results: dict[str, dict[str, Rows]]) -> list[tuple[str, str, bool]]:
    """Each claim of §6.3 (and the issue's targets drawn from it) at stage 4: (claim, ours, met)."""
    last = {d: {s: rows[-1] for s, rows in by.items()} for d, by in results.items()}
    dists = list(last)
    out = []

    def add(claim: str, cells: list[str], met: bool) -> None:
        out.append((claim, "; ".join(cells), met))

    drops = [f"{d} {last[d]['admandf']['dropped']:.1f}" for d in dists]
    add(
        "adMandF drops no query (random, P1–P8)",
        drops,
        all(last[d]["admandf"]["dropped"] == 0 for d in dists),
    )
    gaps = {
        d: last[d]["admandf"]["processed"]
        - max(last[d][s]["processed"] for s in SCHEDULERS if s != "admandf")
        for d in dists
    }
    add(
        "adMandF processes the most (≥ best of MQT, FIFO, MandF − 0.5 point)",
        [f"{d} {g:+.1f}" for d, g in gaps.items()],
        all(g >= -0.5 for g in gaps.values()),
    )
    where = [d for d in dists if last[d]["mqt"]["dropped"] >= 1.0]
    above = {d: last[d]["admandf"]["processed"] - last[d]["mqt"]["processed"] for d in where}
    add(
        "adMandF above MQT wherever MQT drops ≥ 1 %",
        [f"{d} {g:+.1f}" for d, g in above.items()],
        all(g > 0 for g in above.values()),
    )
    named = [d for d in MQT_DROPS if d in last]
    if named:
        dropping = [d for d in named if last[d]["mqt"]["dropped"] > 0]
        add(
            "MQT drops in at least three of P1, P4, P7, P8",
            [f"{d} {last[d]['mqt']['dropped']:.1f}" for d in named],
            len(dropping) >= min(3, len(named)),
        )
    clean = [d for d in MQT_CLEAN if d in last]
    if clean:
        add(
            "MQT drops in none of P2, P3, P5, P6",
            [f"{d} {last[d]['mqt']['dropped']:.1f}" for d in clean],
            all(last[d]["mqt"]["dropped"] == 0 for d in clean),
        )
        close = {d: last[d]["admandf"]["processed"] - last[d]["mqt"]["processed"] for d in clean}
        add(
            "adMandF within 1 point of MQT in P2, P3, P5, P6",
            [f"{d} {g:+.1f}" for d, g in close.items()],
            all(abs(g) <= 1.0 for g in close.values()),
        )
    same = [d for d in ("P2", "P6") if d in last]
    if same:
        diff = {d: last[d]["admandf"]["processed"] - last[d]["fifo"]["processed"] for d in same}
        add(
            "P2, P6: adMandF processes as FIFO does",
            [f"{d} {g:+.1f}" for d, g in diff.items()],
            all(abs(g) <= 0.5 for g in diff.values()),
        )
    more = [d for d in ("P3", "P5") if d in last]
    if more:
        diff = {d: last[d]["admandf"]["processed"] - last[d]["fifo"]["processed"] for d in more}
        add(
            "P3, P5: adMandF processes more than FIFO",
            [f"{d} {g:+.1f}" for d, g in diff.items()],
            all(g > 0 for g in diff.values()),
        )
    return out


def plot_panels(results: dict[str, dict[str, Rows]], path: str) -> None:
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
            ax.set_title(f"{d}: {what} % (cumulative from stage 1)", fontsize=9)
            ax.set_xticks(range(1, 5))
    axes[0][0].legend(fontsize=7)
    axes[-1][0].set_xlabel("stage")
    axes[-1][1].set_xlabel("stage")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_stages(plan: dict[str, Any], path: str) -> None:
    """Fig. 5: the input rate per source over paper time, priming, burst and four stages."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3))
    prime_s = workload.PRIMED / stages.PRIME_RATE
    for d in ("random", "P1"):
        rates = plan[d]["stage_rates"]
        xs = [0, prime_s] + [prime_s + stages.STAGE_S * i for i in range(1, 5)]
        ys = [stages.PRIME_RATE, *rates, rates[-1]]
        ax.step(xs, ys, where="post", label=f"{d} (P1–P8 alike)" if d == "P1" else d)
    ax.axvline(prime_s, color="grey", ls=":", lw=1)
    ax.annotate(f"burst: {workload.BURST} per source", (prime_s, stages.PRIME_RATE), fontsize=8)
    ax.set_xlabel("paper seconds")
    ax.set_ylabel("tuples / paper s / source")
    ax.set_title("Fig. 5 (reconstructed): stages at 0.5, 0.75, 1, 1.25 x FIFO capacity", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_timeline(traces: dict[str, Any], path: str) -> None:
    """adMandF's β in force and its method per period, stages shaded (P1 and P4)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(traces), 1, figsize=(8, 2.4 * len(traces)), squeeze=False)
    for (d, periods), (ax,) in zip(traces.items(), axes, strict=True):
        t = [p["time"] / (1000 * workload.SCALE_NS) for p in periods]
        ax.step(t, [p["beta"] for p in periods], where="post", label="β in force")
        fifo = [1.0 if p["method"] == "FIFO" else 0.0 for p in periods]
        ax.fill_between(t, 0, fifo, step="post", alpha=0.2, color="tab:red", label="FIFO")
        ax.set_xlim(workload.PRIMED / stages.PRIME_RATE - 2, t[-1])
        ax.set_ylim(0, 1.05)
        ax.set_title(f"adMandF on {d}: β and method per 0.5 s period", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    axes[-1][0].set_xlabel("paper seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="random, P1 and P4 only")
    parser.add_argument("--png", default=str(HERE), help="directory for the PNGs; '' skips them")
    parser.add_argument(
        "--stage1", type=float, default=None, help="sweep: stage 1 at this multiple of capacity"
    )
    parser.add_argument("--load", default="arrived", help="swj_load: arrived or oldest")
    parser.add_argument("--clock", default="work", help="swj_clock: work or wall (time-scaled)")
    args = parser.parse_args(argv)
    if not stages.FILE.exists():
        raise SystemExit(f"{stages.FILE} missing: run stages.py and commit it first")
    plan = json.loads(stages.FILE.read_text())["distributions"]
    dists = ["random", "P1", "P4"] if args.quick else stages.DISTRIBUTIONS
    started = time.perf_counter()
    results: dict[str, dict[str, Rows]] = {}
    traces: dict[str, Any] = {}
    heads = " | ".join(f"stage {i} proc / drop / pend %" for i in range(1, 5))
    print(f"| dist | scheduler | {heads} |")
    print("|---|---|" + "---:|" * 4)
    for d in dists:
        results[d] = {}
        for s in SCHEDULERS:
            rates = list(plan[d]["stage_rates"])
            if args.stage1 is not None:
                rates[0] = round(plan[d]["fifo_capacity"] * args.stage1, 1)
            rows, eng = measure(d, s, rates, stages.STAGE_S, clock=args.clock, swj_load=args.load)
            results[d][s] = rows
            if s == "admandf" and d in ("P1", "P4"):
                (join,) = eng.shared_joins()
                traces[d] = eng.shared_join_trace(join["id"])["periods"].to_pylist()
            cells = " | ".join(
                f"{r['processed']:5.1f} / {r['dropped']:4.1f} / {r['pending']:4.1f}" for r in rows
            )
            print(f"| {d} | {s} | {cells} |", flush=True)
    print()
    print("| claim (§6.3, stage 4) | ours | met |")
    print("|---|---|---|")
    for claim, ours, met in claims(results):
        print(f"| {claim} | {ours} | {'yes' if met else 'no'} |")
    print(f"\n{time.perf_counter() - started:.1f} s")
    if args.png:
        out = Path(args.png)
        plot_panels(results, str(out / "figs7_24.png"))
        plot_stages(plan, str(out / "fig5_stages.png"))
        plot_timeline(traces, str(out / "admandf_timeline.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
