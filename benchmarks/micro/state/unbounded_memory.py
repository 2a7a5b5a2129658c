"""How the memory of a process grows with the state of windows over unbounded input.

A query over ``[Range Unbounded]`` keeps every row it has seen (a window that never expires, a
join side, a DISTINCT or GROUP BY with MIN/MAX that must be able to retract), so the engine's
memory grows with its input. This pushes --rows rows (one a tick, 1,000 keys, 65,536 per push,
results fetched as they come, so that only the operators' state stays) into one query at a time,
in a fresh process each, and prints the growth of the resident set (RSS, from /proc) per million
rows, under both lifetimes.

    python benchmarks/micro/state/unbounded_memory.py [--rows 2000000]
"""

import argparse
import json
import subprocess
import sys

QUERIES = {
    "window (relation)": "SELECT k, v FROM s [Range Unbounded]",
    "ISTREAM of the window": "ISTREAM(SELECT k, v FROM s [Range Unbounded])",
    "DISTINCT": "SELECT DISTINCT k, v FROM s [Range Unbounded]",
    "GROUP BY MAX": "SELECT k, MAX(v) AS m FROM s [Range Unbounded] GROUP BY k",
    "join with a relation": "SELECT s.k, s.v, r.w FROM s [Range Unbounded], r WHERE s.k = r.k",
}


STEP = 65536  # rows per push


def one(query: str, lifetime: str, rows: int) -> float:
    import numpy as np
    import pyarrow as pa

    import cq_py
    from cq_py.engine import resident_bytes

    eng = cq_py.Engine(lifetime=lifetime)
    eng.execute(
        "REGISTER STREAM s(k INT, v DOUBLE); REGISTER RELATION r(k INT, w DOUBLE);"
        f"REGISTER QUERY q AS {query};"
    )
    eng.push(
        "r", pa.table({"k": np.arange(1000), "w": np.ones(1000), "ts": np.zeros(1000, np.int64)})
    )
    rng = np.random.default_rng(1)
    # The first push brings the code and Arrow's pools in; growth is measured from there.
    start_rows, start = None, None
    for lo in range(0, rows, STEP):
        n = min(STEP, rows - lo)
        eng.push(
            "s",
            pa.table(
                {
                    "k": rng.integers(0, 1000, n),
                    "v": rng.random(n),
                    "ts": np.arange(lo, lo + n, dtype=np.int64),
                }
            ),
        )
        eng.fetch("q")
        if start is None:
            start_rows, start = lo + n, resident_bytes()
    return (resident_bytes() - start) / (rows - start_rows) * 1e6 / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--one", nargs=2, metavar=("QUERY", "LIFETIME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rows <= STEP:
        # Growth is measured after the first push, so one push measures nothing.
        ap.error(f"--rows must be above {STEP:,} (one push), found {args.rows:,}")
    if args.one:
        print(json.dumps(one(QUERIES[args.one[0]], args.one[1], args.rows)))
        return
    print(f"MB of resident memory per million rows ({args.rows:,} rows pushed)")
    print(f"{'query':28} {'direct':>8} {'negative':>9}")
    for name in QUERIES:
        cells = []
        for lifetime in ("direct", "negative"):
            out = subprocess.run(
                [sys.executable, __file__, "--rows", str(args.rows), "--one", name, lifetime],
                capture_output=True,
                text=True,
                check=True,
            )
            cells.append(json.loads(out.stdout))
        print(f"{name:28} {cells[0]:8.0f} {cells[1]:9.0f}")


if __name__ == "__main__":
    main()
