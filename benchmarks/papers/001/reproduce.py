"""Paper 001 §5 reproduced: 500 MASTER queries over 8 hours of Access, Status and URLs, run with
the multiple-query optimizer and without it; base groups and clusters against the paper's
(69 base groups, 15-30 clusters), service time per arrival and the latency it implies at replay
speeds k (Fig. 8).

    python benchmarks/papers/001/reproduce.py            # 500 queries, 8 h (a few minutes)
    python benchmarks/papers/001/reproduce.py --quick    # 50 queries, 1 h (CI)

Service time: each arrival of the trace (Access and Status rows, clock ticks; arrivals of one
timestamp together) is pushed, then the engine advanced past its timestamp, so every run it
triggers has completed and reached the queries' subscribers; s is the wall time of those calls.
Latency at replay speed k (the trace played k times faster) follows a single server:
C = max(a/k, C_prev) + s, latency = C - a/k. k* is the speed at which the engine without the
optimizer is busy 90 % of the replay.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workload  # noqa: E402  (beside this file)

import cq_py  # noqa: E402

CONFIGS = {
    # name: Engine options
    "mqo=False": {"mqo": False},
    "optimized": {"mqo": True, "theta1": 0.5, "theta2": 0.1},
    "exact sharing": {"mqo": True, "theta1": 1.0, "theta2": 1.0},
}


def run(
    config: dict, data: workload.Data, qs: list[workload.Query], db: Path, one_script: bool
) -> dict:
    """One replay of the trace: registration time, service time per step, groups over time.
    The queries are registered one ``execute`` each, or all in one (``one_script``)."""
    eng = cq_py.Engine(threads=1, **config)
    eng.execute(workload.setup_script(db))
    t = time.perf_counter()
    if one_script:
        eng.execute("".join(q.cql for q in qs))
    else:
        for q in qs:
            eng.execute(q.cql)
    registration = time.perf_counter() - t
    delivered = [0]

    def count(batch) -> None:
        delivered[0] += batch.num_rows

    for q in qs:
        eng.subscribe(q.name, count)
    operators = len(re.findall(r"^\s+#\d+ ", eng.explain(), re.M))
    steps: list[tuple[int, float]] = []  # (ts, service seconds)
    clusters: list[tuple[list[int], int, int]] = []  # (log period, base groups, clusters)
    arrivals = workload.arrivals(data)
    period = 1_800_000
    next_look = arrivals[0][0] + period
    k = 0
    while k < len(arrivals):
        ts = arrivals[k][0]
        access, status = [], []
        while k < len(arrivals) and arrivals[k][0] == ts:
            _, src, row = arrivals[k]
            (access if src == "access" else status if src == "status" else []).append(row)
            k += 1
        # (The rows taken out of the trace before the clock starts: a replay reads them ready.)
        rows_a = data.access.take(access) if access else None
        rows_s = data.status.take(status) if status else None
        t = time.perf_counter()
        if rows_a is not None:
            eng.push("access", rows_a)
        if rows_s is not None:
            eng.push("status", rows_s)
        eng.advance(ts + 1)
        steps.append((ts, time.perf_counter() - t))
        if ts + 1 >= next_look:
            g = eng.query_groups()
            if g["log_period"] and (not clusters or clusters[-1][0] != g["log_period"]):
                clusters.append((g["log_period"], len(g["base_groups"]), len(g["clusters"])))
            next_look += period
    eng.close()
    groups = eng.query_groups()
    return {
        "registration_s": registration,
        "steps": steps,
        "clusters": clusters,
        "base_groups": len(groups["base_groups"]),
        "operators": operators,
        "delivered": delivered[0],
    }


def fresh_run(
    config: dict, data: workload.Data, qs: list[workload.Query], db: Path, one_script: bool
) -> dict:
    """:func:`run` in a process of its own: a configuration run after another in one process
    took a third longer (the first one's heap left behind), which is not the engine's cost."""
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(run, config, data, qs, db, one_script).result()


def latencies(steps: list[tuple[int, float]], k: float) -> np.ndarray:
    """Latency of each step at replay speed ``k`` (seconds): a single server, C = max(a/k,
    C_prev) + s."""
    c, out = -np.inf, []
    for ts, s in steps:
        a = ts / 1000 / k
        c = max(a, c) + s
        out.append(c - a)
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="50 queries over 1 hour (CI)")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--hours", type=float, default=workload.HOURS)
    ap.add_argument("--repeat", type=int, default=2, help="interleaved rounds, best kept")
    ap.add_argument("--png", default=str(HERE / "fig8.png"), help="'' for none")
    ap.add_argument("--json", default="", help="write every figure here")
    ap.add_argument(
        "--per-query",
        action="store_true",
        help="register the queries one execute each instead of all in one script (the paper "
        "registers the 500 before the trace, as cq replay reads a script file)",
    )
    args = ap.parse_args()
    args.one_script = not args.per_query
    if args.quick:
        args.queries, args.hours = 50, 1.0
    rows = round(workload.ACCESS_ROWS * args.hours / workload.HOURS)
    data = workload.generate(hours=args.hours, access_rows=rows)
    qs = workload.queries(args.queries)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "urls.sqlite"
        workload.write_urls(db, data.locations)
        # Interleaved, the order turned each round; per configuration the round with the least
        # total service time is kept (the first replay in a process also warms caches).
        names = list(CONFIGS)
        for round_ in range(args.repeat):
            for name in names if round_ % 2 == 0 else names[::-1]:
                r = fresh_run(CONFIGS[name], data, qs, db, args.one_script)
                total = sum(s for _, s in r["steps"])
                print(
                    f"round {round_ + 1} {name:14} registration {r['registration_s']:.2f} s, "
                    f"service {total:.2f} s over {len(r['steps'])} steps, {r['operators']} "
                    f"operators, {r['delivered']} rows delivered",
                    flush=True,
                )
                best = results.get(name)
                if best is None or total < sum(s for _, s in best["steps"]):
                    results[name] = r
    span_s = data.span_ms / 1000
    off_total = sum(s for _, s in results["mqo=False"]["steps"])
    k_star = 0.9 * span_s / off_total
    print(
        f"\n{args.queries} queries, {args.hours:g} h, {data.access.num_rows} Access rows, "
        f"{data.status.num_rows} Status rows; k* = {k_star:,.0f}\n"
    )
    print("| replay speed k | " + " | ".join(f"{n}: mean latency" for n in CONFIGS) + " | ratio |")
    print("|---:|" + "---:|" * (len(CONFIGS) + 1))
    for label, k in [("1", 1), ("10", 10), ("100", 100), ("k*", k_star), ("2k*", 2 * k_star)]:
        means = [latencies(results[n]["steps"], k).mean() for n in CONFIGS]
        print(
            f"| {label} ({k:,.0f}) | "
            + " | ".join(f"{m * 1e3:.2f} ms" for m in means)
            + f" | {means[0] / means[1]:.2f}x |"
        )
    wall_clock = wall_clock_check(data, qs, k_star, args.repeat, args.one_script)
    print("\n| total service time | " + " | ".join(CONFIGS) + " |")
    print("|---|" + "---:|" * len(CONFIGS))
    print(
        "| seconds | "
        + " | ".join(f"{sum(s for _, s in results[n]['steps']):.2f}" for n in CONFIGS)
        + " |"
    )
    print("\n| theta1 | base groups | implied by the queries | paper |")
    print("|---:|---:|---:|---:|")
    for theta1 in (1.0, 0.5, 0.2):
        eng = cq_py.Engine(threads=1, theta1=theta1)
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "urls.sqlite"
            workload.write_urls(db, data.locations)
            eng.execute(workload.setup_script(db) + "".join(q.cql for q in qs))
        found = len(eng.query_groups()["base_groups"])
        paper = "69" if theta1 == 0.5 else "-"
        print(f"| {theta1} | {found} | {workload.implied_base_groups(qs, theta1)} | {paper} |")
    print("\nClusters at each check (optimized, theta2 = 0.1; the paper: 15-30 at all times):")
    for period, groups, clusters in results["optimized"]["clusters"]:
        print(
            f"  log [{period[0] / 1000:,.0f} s, {period[1] / 1000:,.0f} s): "
            f"{groups} base groups, {clusters} clusters"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"k_star": k_star, "results": results, "wall_clock": wall_clock}, indent=1)
        )
    if args.png:
        plot(results, k_star, Path(args.png))


def total(steps: list[tuple[int, float]]) -> float:
    """The service seconds of a run's steps."""
    return sum(s for _, s in steps)


def wall_clock_check(
    data: workload.Data, qs: list[workload.Query], k: float, repeat: int, one_script: bool
) -> list[dict]:
    """``cq replay --speed k`` (optimized) against the latency model over back-to-back service
    times, printed; the figures of each round. Each round runs the optimized configuration back
    to back, then the paced replays right after, so both see the load of the same minutes (the
    machine is shared: a burst of other work during the rounds above would weigh on one side
    only); on each side the round with the least service time is kept, as above."""
    # The back-to-back run never gives up its CPU; a replay spinning through every gap between
    # arrivals (Status comes every STATUS_EVERY_MS, the longest gap) holds it too, so the two
    # time the engine alike. With the default spin the replay sleeps most of each gap, and its
    # arrivals start on a CPU and caches the machine's other tenants used meanwhile.
    spin_through = 2 * workload.STATUS_EVERY_MS / 1000 / k
    spins = {f"--spin {spin_through:.4f}": spin_through, "default spin": None}
    print(
        f"\nWall-clock replay at k* (cq replay --speed {k:,.0f}, optimized, the queries in one "
        f"script), each round after a back-to-back run of its own:"
    )
    rounds: list[dict] = []
    for round_ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "urls.sqlite"
            workload.write_urls(db, data.locations)
            steps = fresh_run(CONFIGS["optimized"], data, qs, db, one_script)["steps"]
        paced = {label: wall_clock_replay(data, qs, k, spin) for label, spin in spins.items()}
        rounds.append({"back_to_back": steps, "paced": paced})
        print(
            f"  round {round_ + 1}: back to back {total(steps):.2f} s of service; "
            + "; ".join(
                f"{label} {m * 1e3:.2f} ms, {total(p):.2f} s of service"
                for label, (m, p) in paced.items()
            ),
            flush=True,
        )
    steps = min((r["back_to_back"] for r in rounds), key=total)
    computed = latencies(steps, k).mean()
    print(
        f"  The latency model over the back-to-back service times ({total(steps):.2f} s): "
        f"{computed * 1e3:.2f} ms."
    )
    for label in spins:
        measured, paced = min((r["paced"][label] for r in rounds), key=lambda m: total(m[1]))
        model = latencies(paced, k).mean()
        print(
            f"  {label}: mean latency {measured * 1e3:.2f} ms, {measured / computed:.2f}x the "
            f"model (within 25 %: {'yes' if abs(measured / computed - 1) <= 0.25 else 'no'}). "
            f"Paced, the arrivals took {total(paced):.2f} s of service "
            f"({total(paced) / total(steps):.2f}x back to back); the model over those: "
            f"{model * 1e3:.2f} ms ({measured / model:.2f}x)"
            + ("" if one_script else "; the run above registered one query per execute")
        )
    return rounds


def wall_clock_replay(
    data: workload.Data, qs: list[workload.Query], k: float, spin: float | None = None
) -> tuple[float, list[tuple[int, float]]]:
    """The mean latency (seconds) of ``cq replay --speed k [--spin spin]`` over the trace written
    to files (the optimizer on, every query subscribed, arrivals paced by the wall clock), and
    each arrival's (timestamp, service seconds) as the replay measured them."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        workload.write_urls(d / "urls.sqlite", data.locations)
        script = d / "queries.cql"
        script.write_text(
            workload.setup_script(d / "urls.sqlite") + "\n".join(q.cql for q in qs) + "\n"
        )
        pq.write_table(data.access, d / "access.parquet")
        pq.write_table(data.status, d / "status.parquet")
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "cq_py",
                "replay",
                str(script),
                "--input",
                f"access={d / 'access.parquet'}",
                "--input",
                f"status={d / 'status.parquet'}",
                "--speed",
                repr(k),
                "--latencies",
                str(d / "latencies.csv"),
                *([] if spin is None else ["--spin", repr(spin)]),
            ],
            check=True,
            capture_output=True,
            text=True,
            # Not the checkout: `python -m` puts the working directory first on sys.path, and a
            # checkout's cq_py has no built core (an installed one does).
            cwd=d,
        )
        print(f"  cq replay: {out.stdout.strip()}")
        t = pacsv.read_csv(d / "latencies.csv")
        lat = t["latency_ms"].to_numpy()
        paced = list(
            zip(t["ts"].to_pylist(), (t["service_ms"].to_numpy() / 1000).tolist(), strict=True)
        )
        return float(lat.mean()) / 1000, paced


def plot(results: dict, k_star: float, path: Path) -> None:
    """Fig. 8: latency of each arrival against its time in the trace, at k*."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    for name in ("mqo=False", "optimized"):
        steps = results[name]["steps"]
        ts = np.array([t for t, _ in steps]) / 3_600_000
        ax.plot(ts, latencies(steps, k_star) * 1e3, lw=0.7, label=name)
    ax.set_xlabel("arrival time in the trace (h)")
    ax.set_ylabel(f"latency at k* = {k_star:,.0f} (ms)")
    ax.set_title("Paper 001 Fig. 8: processing latency per arrival, 500 MASTER queries")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
