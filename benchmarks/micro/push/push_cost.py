"""Event-at-a-time pushes and the memory of one large push (issue 29's items 4 and 5).

    W1  ISTREAM(SELECT * FROM e [Now] WHERE val > 499)
    W5  ISTREAM(SELECT key, AVG(val) AS a FROM e [Partition By key Rows 10] GROUP BY key)

over events with ts one per ms from 0, key uniform in 0..999, val uniform int64 in 0..999.

Per push: --pushes events (default 100,000) pushed one at a time, Python included, the results
fetched at the end, in microseconds per push: through ``Engine.push_row`` (the row API) on the
default ``Engine()`` (threads: the machine's cores; W1 and W5 then run on that many engines, the
stream split by key) and on ``Engine(threads=1)``, and for comparison ``push`` of a one-row
RecordBatch that already has the stream's schema (made before the clock starts) and of a one-row
list of dicts. Then what a call alone costs: an empty Python function taking push_row's
arguments, and the binding's push_row refusing the row at once (pybind11's share). Each run's
output is checked against a numpy/pandas reference (W1: the rows with val > 499; W5: the rows
whose key's average of its last 10 values changed).

Memory: W5 over --rows events (default 10,000,000) through ``cq_py.run`` in a fresh process, one
table in, peak RSS of the whole process (input and output included) from getrusage, and the time of
the run; with ``--one-batch`` also with ``batch_size`` as large as the input (the whole push as one
batch, as before the engine cut pushes into batches).

    python benchmarks/micro/push/push_cost.py [--pushes 100000] [--rows 10000000] [--one-batch]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

import cq_py
from cq_py.engine import machine_cores

QUERIES = {
    "W1": "ISTREAM(SELECT * FROM e [Now] WHERE val > 499)",
    "W5": "ISTREAM(SELECT key, AVG(val) AS a FROM e [Partition By key Rows 10] GROUP BY key)",
}
STREAM = "REGISTER STREAM e(key BIGINT, val BIGINT);"


def events(n: int, seed: int = 29) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "key": rng.integers(0, 1000, n),
            "val": rng.integers(0, 1000, n),
            "ts": np.arange(n, dtype=np.int64),
        }
    )


def expected_rows(workload: str, t: pa.Table) -> int:
    """Rows the workload outputs, computed without cq."""
    df = t.to_pandas()
    if workload == "W1":
        return int((df["val"] > 499).sum())
    # One row per input row whose key's average over its last 10 rows differs from the one
    # before (ts are distinct, so every instant holds one change of one key).
    mean = df.groupby("key")["val"].rolling(10, min_periods=1).mean().reset_index(level=0)
    before = mean.groupby("key")["val"].shift()
    return int((mean["val"] != before).sum())


def per_push(workload: str, t: pa.Table, how: str, threads: int | None = None) -> float:
    """Microseconds per push of one event, over every row of t, on Engine(threads=threads)."""
    eng = cq_py.Engine(threads=threads)
    eng.execute(STREAM + f"REGISTER QUERY q AS {QUERIES[workload]};")
    n = t.num_rows
    key, val, ts = (t.column(c).to_pylist() for c in ("key", "val", "ts"))
    if how.startswith("push_row"):
        push_row = eng.push_row
        start = time.perf_counter()
        for i in range(n):
            push_row("e", ts[i], key=key[i], val=val[i])
        elapsed = time.perf_counter() - start
    elif how == "push(RecordBatch)":
        batches = t.to_batches(max_chunksize=1)
        start = time.perf_counter()
        for b in batches:
            eng.push("e", b)
        elapsed = time.perf_counter() - start
    else:
        start = time.perf_counter()
        for i in range(n):
            eng.push("e", [{"key": key[i], "val": val[i], "ts": ts[i]}])
        elapsed = time.perf_counter() - start
    eng.close()
    got = eng.fetch("q").num_rows
    want = expected_rows(workload, t)
    assert got == want, (workload, how, got, want)
    return elapsed / n * 1e6


MEMORY = """
import inspect, json, resource, sys, time
sys.path.insert(0, sys.argv[3])
from push_cost import QUERIES, STREAM, events
import cq_py
t = events(int(sys.argv[1]))
# (A cq from before Engine had batch_size runs every push as one batch.)
sized = "batch_size" in inspect.signature(cq_py.Engine).parameters
start = time.perf_counter()
out = cq_py.run(STREAM + f"REGISTER QUERY q AS {QUERIES['W5']};", inputs={"e": t},
                **({"batch_size": int(sys.argv[2])} if sized else {}))
elapsed = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
# VmHWM: this process's own peak (ru_maxrss keeps the forking parent's too, across exec).
with open("/proc/self/status") as f:
    peak = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
print(json.dumps({"peak": peak, "seconds": elapsed, "rows": out["q"].num_rows,
                  "sys": usage.ru_stime}))
"""


def memory(rows: int, batch_size: int) -> dict:
    here = str(__import__("pathlib").Path(__file__).resolve().parent)
    done = subprocess.run(
        [sys.executable, "-c", MEMORY, str(rows), str(batch_size), here],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def binding_call() -> dict[str, float]:
    """Microseconds per call, in the loop push_row's callers write: a Python function taking the
    same arguments and doing nothing (the interpreter's share: the call, the keyword dict), and
    the binding's push_row refusing the row at once (pybind11's dispatch and argument conversion
    on top: its ts is no int)."""
    eng = cq_py.Engine(threads=1)
    eng.execute(STREAM)
    n = 200_000
    out = {}

    def nothing(stream: str, ts: object, /, **values: object) -> None:
        return None

    core = eng._core
    names = ("key", "val")
    for what, call in (
        ("python", lambda i: nothing("e", i, key=i, val=i)),
        ("pybind11", lambda i: core.push_row("e", None, {"key": i, "val": i}, names)),
    ):
        start = time.perf_counter()
        for i in range(n):
            call(i)
        out[what] = (time.perf_counter() - start) / n * 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pushes", type=int, default=100_000)
    ap.add_argument(
        "--batch-pushes",
        type=int,
        default=None,
        help="pushes for push(RecordBatch) and push([dict]) (default: --pushes)",
    )
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--one-batch", action="store_true")
    ap.add_argument(
        "--only", choices=["push", "memory"], default=None, help="run one half of the benchmark"
    )
    args = ap.parse_args()

    if args.only != "memory":
        t = events(args.pushes)
        fewer = t.slice(0, args.batch_pushes or args.pushes)
        print(f"per push, {args.pushes:,} pushes of one event (us):")
        print(f"  {'':22s} {'W1':>8s} {'W5':>8s}")
        default = machine_cores()
        for how, threads in (
            (f"push_row threads={default}", None),
            ("push_row threads=1", 1),
            ("push(RecordBatch)", None),
            ("push([dict])", None),
        ):
            rows = t if how.startswith("push_row") else fewer
            cost = {w: per_push(w, rows, how, threads) for w in QUERIES}
            pushes = "" if rows is t else f"   ({rows.num_rows:,} pushes)"
            print(f"  {how:22s} {cost['W1']:8.2f} {cost['W5']:8.2f}{pushes}")
        bare = binding_call()
        print(
            f"  a call alone: {bare['python']:.2f} us in Python (an empty function with push_row's "
            f"arguments), {bare['pybind11']:.2f} us through the binding (push_row refusing at once)"
        )
    if args.only != "push":
        print(f"W5 over {args.rows:,} events through cq_py.run (one table in, fresh process):")
        sizes = [65536] + ([args.rows] if args.one_batch else [])
        for size in sizes:
            m = memory(args.rows, size)
            print(
                f"  batch_size={size:<10,} peak RSS {m['peak'] / 2**20:7,.0f} MiB, "
                f"{m['seconds']:.2f} s ({m['sys']:.2f} s in the kernel), {m['rows']:,} rows out"
            )
        want = expected_rows("W5", events(args.rows))
        assert m["rows"] == want, (m["rows"], want)


if __name__ == "__main__":
    main()
