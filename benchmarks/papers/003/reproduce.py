"""Reproduces paper 003's micro-benchmark (§5, Fig. 5): direct vs Negative Tuple lifetimes.

Streams STRu(ca VARCHAR, cb INT, cc VARCHAR), STRb0/STRb1(ca INT, cb VARCHAR, cc INT); one tuple per
millisecond, ca increasing by one (so every join input meets exactly one tuple); the four queries
of Fig. 3 — select (`cb > 3`), project (`ca, cb`), union all, equi-join on ca — over row windows
([Rows N], N = 10 … 1,000,000; binary queries N/2 per side) and time windows ([Range T], T = 10 ms
… 1,000 s; binary T/2). Three methods: direct, negative, and direct with insertion-sorted
expiration sets (the baseline the paper saw collapse). Single thread, 65,536-row batches, results
consumed as they become final; throughput = input tuples / s.

    pip install .[bench]
    python benchmarks/papers/003/reproduce.py            # default sizes, a few minutes
    python benchmarks/papers/003/reproduce.py --full     # adds 10^7 windows over 2.5 * 10^7 tuples

Prints a table and writes fig5.png (throughput against window size, one panel per query and
window kind) beside this file. README.md compares the curves with the paper's claims.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import cq_py

HERE = Path(__file__).resolve().parent
SCHEMA = (
    "REGISTER STREAM STRu(ca VARCHAR, cb INT, cc VARCHAR);"
    "REGISTER STREAM STRb0(ca INT, cb VARCHAR, cc INT);"
    "REGISTER STREAM STRb1(ca INT, cb VARCHAR, cc INT);"
)
QUERIES = {
    "select": ("SELECT * FROM STRu {w} WHERE cb > 3", ("STRu",)),
    "project": ("SELECT ca, cb FROM STRu {w}", ("STRu",)),
    "union all": ("SELECT * FROM STRb0 {w} UNION ALL SELECT * FROM STRb1 {w}", ("STRb0", "STRb1")),
    "join": ("SELECT * FROM STRb0 {w}, STRb1 {w} WHERE STRb0.ca = STRb1.ca", ("STRb0", "STRb1")),
}
METHODS = {
    "direct": {"lifetime": "direct"},
    "negative": {"lifetime": "negative"},
    "direct, insertion sort": {"lifetime": "direct", "expiration": "insertion_sort"},
}


def streams(rows: int, batch: int) -> dict[str, list[pa.RecordBatch]]:
    rng = np.random.default_rng(3)
    ts = np.arange(rows, dtype=np.int64)
    names = pa.array(np.char.add("v", (np.arange(rows) % 1000).astype(str)))
    u = pa.table({"ca": names, "cb": rng.integers(0, 10, rows), "cc": names, "ts": ts})
    b = {
        f"STRb{k}": pa.table(
            {
                "ca": np.arange(rows),
                "cb": pa.array([f"s{k}"] * rows),
                "cc": np.full(rows, k),
                "ts": ts,
            }
        )
        for k in (0, 1)
    }
    return {
        "STRu": u.to_batches(max_chunksize=batch),
        **{k: t.to_batches(max_chunksize=batch) for k, t in b.items()},
    }


def run(data, query: str, inputs: tuple[str, ...], options: dict) -> tuple[float, int]:
    eng = cq_py.Engine(**options)
    eng.execute(SCHEMA + f"REGISTER QUERY q AS {query};")
    out = [0]
    eng.subscribe("q", lambda rb: out.__setitem__(0, out[0] + rb.num_rows))
    t0 = time.perf_counter()
    for batches in zip(*(data[i] for i in inputs), strict=True):
        for name, b in zip(inputs, batches, strict=True):
            eng.push(name, b)
    eng.close()
    return time.perf_counter() - t0, out[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="tuples per stream")
    ap.add_argument("--batch", type=int, default=65_536)
    ap.add_argument(
        "--full",
        action="store_true",
        help="also 10,000,000-row windows (over 25,000,000 tuples per stream)",
    )
    ap.add_argument(
        "--insertion-limit",
        type=int,
        default=10_000,
        help="largest window run with insertion sort (it is quadratic)",
    )
    args = ap.parse_args()
    sizes = [10, 100, 1_000, 10_000, 100_000, 1_000_000] + ([10_000_000] if args.full else [])
    # A window must fill and slide: the 10^7 windows of --full run over 2.5 * 10^7 tuples per
    # stream.
    big = max(args.rows, 25_000_000)
    datasets: dict[int, dict] = {}

    def data_for(size: int) -> tuple[int, dict]:
        n = args.rows if size < args.rows else big
        if n not in datasets:
            datasets[n] = streams(n, args.batch)
        return n, datasets[n]

    results = []  # (query, kind, size, method, tuples/s)
    print(f"{'query':10} {'window':16} " + " ".join(f"{m:>24}" for m in METHODS))
    for qname, (template, inputs) in QUERIES.items():
        for kind in ("rows", "time"):
            for size in sizes:
                rows, data = data_for(size)
                per_side = size if len(inputs) == 1 else max(1, size // 2)
                window = (
                    f"[Rows {per_side}]" if kind == "rows" else f"[Range {per_side} MILLISECONDS]"
                )
                cells = []
                for method, options in METHODS.items():
                    if "insertion" in method and size > args.insertion_limit:
                        cells.append(f"{'(skipped)':>24}")
                        continue
                    seconds, _ = run(data, template.format(w=window), inputs, options)
                    rate = len(inputs) * rows / seconds
                    results.append((qname, kind, size, method, rate))
                    cells.append(f"{rate / 1e6:>20.2f} M/s")
                label = f"[Rows {size}]" if kind == "rows" else f"[Range {size} ms]"
                print(f"{qname:10} {label:16} " + " ".join(cells), flush=True)
    plot(results)


def plot(results) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(16, 7), sharex=False)
    for col, qname in enumerate(QUERIES):
        for row, kind in enumerate(("rows", "time")):
            ax = axes[row][col]
            for method in METHODS:
                pts = sorted(
                    (s, r) for q, k, s, m, r in results if q == qname and k == kind and m == method
                )
                if pts:
                    ax.plot(
                        [p[0] for p in pts], [p[1] / 1e6 for p in pts], marker="o", label=method
                    )
            ax.set_xscale("log")
            ax.set_title(f"{qname}, {'row' if kind == 'rows' else 'time'} window")
            ax.set_xlabel("window (rows)" if kind == "rows" else "window (ms)")
            ax.set_ylabel("M input tuples / s")
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend()
    fig.suptitle("cq: direct vs Negative Tuple lifetimes (paper 003, Fig. 5)")
    fig.tight_layout()
    out = HERE / "fig5.png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
