"""Shared window joins against every join planned alone (paper 004's queries, exact mode).

    python benchmarks/micro/swj/bench_swj.py                         # 10 queries, 3 match rates
    python benchmarks/micro/swj/bench_swj.py --queries 2 5 10 20 --matches 1
    python benchmarks/micro/swj/bench_swj.py --instr --rows 20000    # one run each, for callgrind

The script: streams ``A(loc INT, v INT)`` and ``B(loc INT, w INT)``, one tuple per ms each (ts
0, 1, 2, … on both), and n queries ``ISTREAM(SELECT * FROM A [Range w], B [Range w] WHERE
A.loc = B.loc)`` whose windows are drawn uniformly from [1, 3000] ms (seeded; the largest is set
to 3000). ``loc`` is uniform over 3000 / m values, so that a probe meets m partners on average at
the largest window: m = 0.1, 1 and 10 (``--matches``). The same script runs with the default
``Engine()`` (one shared window join and a route per query) and with ``share_joins=False`` (n hash
joins over 2n windows); every output of the shared run is checked equal to the other's (row count
and an order-free checksum).

Seconds: ``Engine.push`` of 65,536-row batches of A and B in turn, then ``close`` and a ``fetch``
of every query; runs interleaved (shared, alone, alone, shared, …), best of ``--repeat``, as input
tuples (A and B) per second. ``--instr`` runs each plan once and prints nothing but its result
check: ``instr_swj.sh`` runs it under callgrind to count instructions (README.md).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyarrow as pa

import cq_py

BATCH = 65_536
WIDEST = 3000


def windows(n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    w = sorted(int(x) for x in rng.integers(1, WIDEST + 1, n))
    w[-1] = WIDEST
    return w


def script(ws: list[int]) -> str:
    text = "REGISTER STREAM A(loc INT, v INT); REGISTER STREAM B(loc INT, w INT);\n"
    for i, w in enumerate(ws):
        text += (
            f"REGISTER QUERY q{i} AS ISTREAM(SELECT * FROM A [Range {w}], B [Range {w}] "
            "WHERE A.loc = B.loc);\n"
        )
    return text


def inputs(rows: int, matches: float, seed: int = 7) -> tuple[pa.Table, pa.Table]:
    keys = max(1, round(WIDEST / matches))
    rng = np.random.default_rng(seed)
    ts = np.arange(rows, dtype=np.int64)
    a = pa.table({"loc": rng.integers(0, keys, rows), "v": np.arange(rows), "ts": ts})
    b = pa.table({"loc": rng.integers(0, keys, rows), "w": np.arange(rows), "ts": ts})
    return a, b


def once(text: str, a: pa.Table, b: pa.Table, share: bool) -> tuple[float, dict[str, tuple]]:
    eng = cq_py.Engine(share_joins=share, threads=1)
    eng.execute(text)
    start = time.perf_counter()
    for x, y in zip(
        a.to_batches(max_chunksize=BATCH), b.to_batches(max_chunksize=BATCH), strict=True
    ):
        eng.push("A", x)
        eng.push("B", y)
    eng.close()
    out = {q: eng.fetch(q) for q in eng.query_names()}
    seconds = time.perf_counter() - start
    return seconds, {q: checksum(t) for q, t in out.items()}


def checksum(t: pa.Table) -> tuple[int, int]:
    """Row count and an order-free sum of row hashes."""
    if t.num_rows == 0:
        return 0, 0
    cols = [np.asarray(c.to_numpy(zero_copy_only=False), dtype=np.int64) for c in t.columns]
    h = np.zeros(t.num_rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k, c in enumerate(cols):
            h = h * np.uint64(0x100000001B3) + (c.astype(np.uint64) ^ np.uint64(k * 0x9E3779B9))
    return t.num_rows, int(h.sum(dtype=np.uint64))


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rows", type=int, default=200_000, help="tuples per input (default 200,000)")
    p.add_argument("--queries", type=int, nargs="+", default=[10])
    p.add_argument("--matches", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=4)
    p.add_argument(
        "--instr",
        choices=["shared", "alone", "none"],
        help="one run of one plan, or (none) all but the pushes (callgrind's baseline)",
    )
    args = p.parse_args()
    if args.instr:
        ws = windows(args.queries[0], args.seed)
        a, b = inputs(args.rows, args.matches[0])
        if args.instr == "none":
            a, b = a.slice(0, 0), b.slice(0, 0)
        _, sums = once(script(ws), a, b, args.instr != "alone")
        print(f"{args.instr}: {sum(n for n, _ in sums.values())} output rows")
        return
    print(f"rows per input {args.rows:,}; windows seed {args.seed}; best of {args.repeat}")
    print(
        "| queries | matches/probe | shared tuples/s | alone tuples/s | shared/alone "
        "| output rows |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for n in args.queries:
        ws = windows(n, args.seed)
        text = script(ws)
        for m in args.matches:
            a, b = inputs(args.rows, m)
            best = {True: float("inf"), False: float("inf")}
            sums = {}
            for r in range(args.repeat):
                for share in (True, False) if r % 2 == 0 else (False, True):
                    s, sums[share] = once(text, a, b, share)
                    best[share] = min(best[share], s)
            assert sums[True] == sums[False], (n, m)
            tuples = 2 * args.rows
            out = sum(k for k, _ in sums[True].values())
            print(
                f"| {n} | {m:g} | {tuples / best[True]:,.0f} | {tuples / best[False]:,.0f} | "
                f"{best[False] / best[True]:.2f}x | {out:,} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
