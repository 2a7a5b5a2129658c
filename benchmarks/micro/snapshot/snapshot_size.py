"""Size and time of an engine snapshot, and of restoring it, for a representative state.

    SELECT k, AVG(v) AS m FROM s [Range 1000] GROUP BY k

over --rows tuples (default 1,000,000: one a tick, 100 keys), pushed in 65,536-row batches, the
results fetched as they come. The state then is the last 1,000 ticks of input (the window's
retained rows), the groups' accumulators and open results. Also a [Rows N] variant (--window rows)
whose state holds N pending expiration holders. Prints the snapshot's size, the time to take it
and to restore it (Engine.restore: engine rebuilt from the saved CQL, then the state read back),
the median of --repeat runs, and checks that the restored engine goes on like the original.

    python benchmarks/micro/snapshot/snapshot_size.py [--rows 1000000] [--range 1000] \
        [--window range|rows]
"""

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa

import cq_py


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--range", type=int, default=1000)
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--window", default="range", choices=["range", "rows"])
    ap.add_argument("--lifetime", default="direct", choices=["direct", "negative"])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    rng = np.random.default_rng(7)
    n = args.rows
    data = pa.table(
        {"k": rng.integers(0, args.keys, n), "v": rng.random(n), "ts": np.arange(n, dtype=np.int64)}
    )
    window = f"[Range {args.range}]" if args.window == "range" else f"[Rows {args.range}]"
    eng = cq_py.Engine(lifetime=args.lifetime)
    eng.execute(
        f"REGISTER STREAM s(k INT, v DOUBLE);"
        f"REGISTER QUERY q AS SELECT k, AVG(v) AS m FROM s {window} GROUP BY k;"
    )
    t0 = time.perf_counter()
    for off in range(0, n, 65_536):
        eng.push("s", data.slice(off, 65_536))
        eng.fetch("q")
    push_s = time.perf_counter() - t0

    takes, restores = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        blob = eng.snapshot()
        takes.append(time.perf_counter() - t)
        t = time.perf_counter()
        again = cq_py.Engine.restore(blob)
        restores.append(time.perf_counter() - t)

    # The restored engine and the original go on alike.
    tail = pa.table(
        {
            "k": rng.integers(0, args.keys, 5000),
            "v": rng.random(5000),
            "ts": np.arange(n, n + 5000, dtype=np.int64),
        }
    )
    for e in (eng, again):
        e.push("s", tail)
        e.close()
    same = (
        eng.fetch("q")
        .sort_by([("start", "ascending"), ("k", "ascending")])
        .equals(again.fetch("q").sort_by([("start", "ascending"), ("k", "ascending")]))
    )

    print(
        f"query: SELECT k, AVG(v) FROM s {window} GROUP BY k ({args.lifetime}), {n:,} tuples, "
        f"{args.keys} keys (pushed in {push_s:.2f} s)"
    )
    print(
        f"snapshot: {len(blob):,} bytes ({len(blob) / 2**20:.2f} MiB); "
        f"take {statistics.median(takes) * 1e3:.2f} ms, "
        f"restore {statistics.median(restores) * 1e3:.2f} ms (median of {args.repeat})"
    )
    print(f"restored engine continues like the original: {same}")


if __name__ == "__main__":
    main()
