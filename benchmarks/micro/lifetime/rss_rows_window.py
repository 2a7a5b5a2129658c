"""Peak memory of a 10,000,000-row window (issue 4's acceptance run).

    SELECT a, b FROM s [Rows 10000000] WHERE a >= 0

over 20,000,000 tuples of three int64 columns, pushed in 65,536-row batches, the output fetched as
it becomes final. Prints the peak RSS of the whole process (input data included) and the rows out.
Sizes by flag: --rows, --window, --batch, --lifetime direct|negative.

    python benchmarks/micro/lifetime/rss_rows_window.py
"""

import argparse
import resource
import time

import numpy as np
import pyarrow as pa

import cq_py


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--window", type=int, default=10_000_000)
    ap.add_argument("--batch", type=int, default=65_536)
    ap.add_argument("--lifetime", default="direct", choices=["direct", "negative"])
    args = ap.parse_args()

    rng = np.random.default_rng(4)
    data = pa.table(
        {
            "a": rng.integers(0, 1 << 40, args.rows),
            "b": rng.integers(0, 1000, args.rows),
            "c": rng.integers(0, 1000, args.rows),
            "ts": np.arange(args.rows, dtype=np.int64),
        }
    )
    eng = cq_py.Engine(lifetime=args.lifetime)
    eng.execute(
        f"REGISTER STREAM s(a INT, b INT, c INT);"
        f"REGISTER QUERY q AS SELECT a, b FROM s [Rows {args.window}] WHERE a >= 0;"
    )
    out_rows = 0

    def consume(batch: pa.RecordBatch) -> None:
        nonlocal out_rows
        out_rows += batch.num_rows

    eng.subscribe("q", consume)
    t0 = time.perf_counter()
    for batch in data.to_batches(max_chunksize=args.batch):
        eng.push("s", batch)
    eng.close()
    elapsed = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert out_rows == args.rows, (out_rows, args.rows)
    print(
        f"lifetime={args.lifetime} rows={args.rows:,} window=[Rows {args.window:,}] "
        f"batch={args.batch:,}: {elapsed:.2f} s, {args.rows / elapsed / 1e6:.1f} M tuples/s, "
        f"peak RSS {peak_mb:,.0f} MB, rows out {out_rows:,}"
    )


if __name__ == "__main__":
    main()
