"""Reproduces paper 002's measurements on the engine (``Engine(executor="scheduled")``).

* **Fig. 7** (``--fig7``): Fig. 6's query — a stream joined with resource x (each row matches
  one), then AVG over ``[Range r Slide s]`` — n rows pushed at once under ``txn="2pl"``,
  ``redo="always"``: the reference join's evaluations per commit (``Engine.commit_log()``) with
  the gatekeeper constraint (batch 1) and without it (batch n), summed over the full windows,
  against equations (1) and (2) and the pure-Python model (model.py).
* **Update throughput** (``--updates``): the same query over ``[Range W]``, W = 10, 100, 1,000,
  rows pushed while a writer thread commits one-row updates of x as fast as the store lets it;
  per strategy, the writer's commits per second and the engine's rows per second. Under ``2pl``
  a read holds x's shared lock until its transaction commits, and each commit replays the
  window (``redo``: x changed), so the writer waits longer as the window grows; ``snapshot``
  holds the lock only while it pins a version.

    python benchmarks/papers/002/reproduce.py            # both, a few minutes
    python benchmarks/papers/002/reproduce.py --updates --rows 20000

Prints tables; README.md beside it compares them with the paper.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import cq_py

HERE = Path(__file__).resolve().parent
KEYS = 1000
STRATEGIES = ("none", "2pl", "snapshot", "optimistic")


def _model():
    spec = importlib.util.spec_from_file_location("paper002_model", HERE / "model.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def script(window: str, commit: str = "RSTREAM") -> str:
    """Fig. 6's query in CQL: j joins s with x, q averages j over ``window``; ``commit`` (the
    relation-to-stream operator above the window) commits."""
    return (
        "REGISTER STREAM s(k BIGINT, a BIGINT);"
        "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
        "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
        f"REGISTER QUERY q AS {commit}(SELECT AVG(v) AS m FROM j {window});"
    )


def engine(window: str, commit: str = "RSTREAM", **options: object) -> cq_py.Engine:
    store = cq_py.ResourceStore()
    store.load("x", pa.table({"id": np.arange(KEYS), "v": np.arange(KEYS, dtype=float)}), ["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, **options)
    eng.execute(script(window, commit))
    return eng


def stream(rows: int, seed: int = 1) -> pa.Table:
    """One row per tick from tick 1, keys uniform over x's."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "k": rng.integers(0, KEYS, rows),
            "a": rng.integers(0, 100, rows),
            "ts": np.arange(1, rows + 1, dtype=np.int64),
        }
    )


def fig7(r: int, s: int, n: int, constraint: bool) -> list[int]:
    """The join's evaluations per commit of q, partial first windows included, as
    tests/txn/test_fig67.py runs them: s = 1 commits by RSTREAM with one row per tick from tick 1;
    s > 1 by ISTREAM with ticks from 0 (the slide boundaries, multiples of s, fall where the
    model's windows end)."""
    eng = engine(
        f"[Range {r} Slide {s}]",
        "RSTREAM" if s == 1 else "ISTREAM",
        txn="2pl",
        redo="always",
        gatekeeper=constraint,
        batch=1 if constraint else n,
    )
    first = 1 if s == 1 else 0
    rows = pa.table({"k": np.arange(n), "a": np.arange(n), "ts": np.arange(n) + first})
    eng.push("s", rows)
    eng.close()
    join = next(op for op, st in eng.stats()["operators"].items() if "reads" in st)
    last = n if s == 1 else n - 1  # (after the last row the window only empties)
    log = [c for c in eng.commit_log().to_pylist() if c["query"] == "q"]
    return [dict(c["evaluations"])[join] for c in log if c["instant"] <= last]


def print_fig7(ns: list[int]) -> None:
    model = _model()
    print("Fig. 7: the reference join's evaluations summed over the full windows")
    print(
        "| r | s | n | constraint (batch 1) | eq. (1) | model | none, batch n | eq. (2) | model |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r, s in ((4, 1), (7, 2), (10, 3)):
        for n in ns:
            if n < r:
                continue
            runs = [model.run(model.fig67_tree(n, r, s), b, c) for b, c in ((1, True), (n, False))]
            partial = len(runs[0].partial())
            best, worst = (sum(fig7(r, s, n, c)[partial:]) for c in (True, False))
            m_best, m_worst = (sum(c.evaluations["join"] for c in x.full()) for x in runs)
            print(
                f"| {r} | {s} | {n} | {best:,} | {model.eq1(n, r, s):,} | {m_best:,} "
                f"| {worst:,} | {model.eq2(n, r, s):,} | {m_worst:,} |"
            )


def updates(strategy: str, window: int, rows: int, chunk: int = 100) -> tuple[float, float]:
    """(writer commits per second, engine rows per second) while ``rows`` rows are pushed
    ``chunk`` at a time and a writer thread upserts one row of x per transaction."""
    eng = engine(f"[Range {window}]", txn=strategy)
    store = eng.resources
    data = stream(rows)
    done = threading.Event()
    commits = [0]
    rng = np.random.default_rng(7)
    keys = rng.integers(0, KEYS, 1 << 16).tolist()
    values = rng.random(1 << 16).tolist()

    def writer() -> None:
        k = 0
        while not done.is_set():
            with store.transaction(timeout=60.0, writer="updater") as tx:
                tx.upsert("x", [{"id": keys[k & 0xFFFF], "v": values[k & 0xFFFF]}])
            commits[0] += 1
            k += 1

    thread = threading.Thread(target=writer)
    thread.start()
    start = time.perf_counter()
    try:
        for at in range(0, rows, chunk):
            eng.push("s", data.slice(at, chunk))
        eng.close()
    finally:
        wall = time.perf_counter() - start
        done.set()
        thread.join()
    return commits[0] / wall, rows / wall


def print_updates(rows: int, repeat: int) -> None:
    print(f"\nUpdate throughput ({rows:,} rows pushed, best of {repeat}, strategies interleaved)")
    print("| window | " + " | ".join(f"{s}: updates/s | {s}: rows/s" for s in STRATEGIES) + " |")
    print("|---|" + "---|---|" * len(STRATEGIES))
    for window in (10, 100, 1000):
        best: dict[str, tuple[float, float]] = dict.fromkeys(STRATEGIES, (0.0, 0.0))
        for _ in range(repeat):
            for s in STRATEGIES:
                u, r = updates(s, window, rows)
                best[s] = (max(best[s][0], u), max(best[s][1], r))
        cells = " | ".join(f"{best[s][0]:,.0f} | {best[s][1]:,.0f}" for s in STRATEGIES)
        print(f"| {window:,} | {cells} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fig7", action="store_true", help="only Fig. 7")
    parser.add_argument("--updates", action="store_true", help="only the update throughput")
    parser.add_argument("--rows", type=int, default=1500, help="rows pushed per update run")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    both = not (args.fig7 or args.updates)
    if args.fig7 or both:
        print_fig7([5, 10, 25, 50, 100])
    if args.updates or both:
        print_updates(args.rows, args.repeat)


if __name__ == "__main__":
    main()
