"""The training run of cq's profile-guided build (setup.py, CQ_PGO): a mix of what cq is used for,
run once by an instrumented build so that GCC learns which branches are hot and lays out and inlines
the C++ core for them (as CPython's --enable-optimizations does with its test suite).

The mix covers the engine's parts in proportion to how real scripts use them, not one benchmark:
the bundled examples (sensors, trading, paper 000's recursive average, paper 003's micro-benchmark
queries), windows of every kind, joins, grouped aggregates, set operations, the three relation-to-
stream operators, relations with deletes, both lifetime methods, both executors, and the loop
executor with and without the hybrid. It only needs what the build environment has (pyarrow and
numpy; no click, no pandas) and takes about five seconds instrumented.

    PYTHONPATH=<instrumented package dir>:<source root> python cmake/pgo_training.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

import cq_py
from cq_py.io.readers import merge_by_time

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ROWS = 40_000
BATCH = 8_192


def push_all(cql: str, tables: dict[str, pa.Table], **options) -> int:
    """Runs ``cql`` over every table, pushed in time order in batches as ``cq run`` pushes a file,
    consuming the output as it comes; returns the number of rows produced."""
    eng = cq_py.Engine(**options)
    eng.execute(cql)
    out = [0]
    for q in eng.query_names():
        eng.subscribe(q, lambda rb: out.__setitem__(0, out[0] + rb.num_rows))
    for name, batch in merge_by_time({n: t.to_batches(max_chunksize=BATCH) for n, t in tables.items()}):
        eng.push(name, batch)
    eng.close()
    return out[0]


def examples() -> None:
    sensors = (EXAMPLES / "sensors" / "sensors.cql").read_text()
    cq_py.run(sensors, inputs={"readings": pacsv.read_csv(EXAMPLES / "sensors" / "readings.csv")})
    trading = EXAMPLES / "trading"
    inputs = {n: pacsv.read_csv(trading / f"{n}.csv") for n in ("market", "initial_resource", "stock_stream")}
    for hybrid in (True, False):
        cq_py.run((trading / "trading.cql").read_text(), inputs=inputs, hybrid=hybrid)


def recursive_average() -> None:
    """Paper 000's Fig. 7 query with 1 and 2 small queries, timestamps all distinct and four a tick."""
    for per_ts in (1, 4):
        n = ROWS // 2
        table = pa.table({"id": np.arange(n) % 4, "val": np.arange(1, n + 1),
                          "ts": np.arange(n, dtype=np.int64) // per_ts})
        for k in (1, 2):
            cql = (EXAMPLES / "recursive_avg" / f"avg{k}.cql").read_text()
            for hybrid in (True, False):
                push_all(cql, {"input": table}, hybrid=hybrid)


def stream_queries(rng: np.random.Generator) -> None:
    """Windows, joins, aggregates and set operations over two streams, by both lifetime methods
    and both executors."""
    n = ROWS
    ts = np.sort(rng.integers(0, n // 2, n)).astype(np.int64)
    a = pa.table({"k": rng.integers(0, 50, n), "v": rng.integers(-100, 100, n),
                  "x": rng.normal(size=n), "s": pa.array(rng.choice(["p", "q", "r", None], n)), "ts": ts})
    b = pa.table({"k": rng.integers(0, 50, n), "w": rng.integers(0, 10, n), "ts": ts})
    queries = [
        "ISTREAM(SELECT k, v * 2 + 1 AS y FROM a [Range 100] WHERE v > 0 AND s IS NOT NULL)",
        "SELECT k, COUNT(*) AS c, SUM(v) AS sv, AVG(x) AS ax, MIN(v) AS lo, MAX(x) AS hi "
        "FROM a [Range 500 Slide 50] GROUP BY k HAVING COUNT(*) > 2",
        "RSTREAM(SELECT k, AVG(v) AS av FROM a [Rows 1000] GROUP BY k)",
        "DSTREAM(SELECT * FROM a [Partition By k Rows 3])",
        "ISTREAM(SELECT a.k, a.v, b.w FROM a [Range 20], b [Range 20] WHERE a.k = b.k AND b.w < 3)",
        "SELECT DISTINCT k, s FROM a [Range 200]",
        "SELECT k FROM a [Range 50] UNION SELECT k FROM b [Range 50]",
        "SELECT k FROM a [Range 50] EXCEPT SELECT k FROM b [Range 10]",
        "SELECT k FROM a [Rows 100] INTERSECT SELECT k FROM b [Rows 100]",
        "ISTREAM(SELECT k, CASE WHEN v < 0 THEN 'neg' WHEN v = 0 THEN 'zero' ELSE 'pos' END AS sign, "
        "CAST(x AS VARCHAR) AS xs FROM a [Now] WHERE k IN (1, 2, 3) OR v BETWEEN 10 AND 20)",
        "SELECT COUNT(DISTINCT k) AS dk, SUM(w) AS sw FROM b [Range Unbounded]",
        "SELECT * FROM a [Now] UNION ALL SELECT k, w AS v, 0.0 AS x, 'b' AS s FROM b [Now]",
    ]
    header = "REGISTER STREAM a(k INT, v INT, x DOUBLE, s VARCHAR); REGISTER STREAM b(k INT, w INT);"
    script = header + "".join(f"REGISTER QUERY q{i} AS {q};" for i, q in enumerate(queries))
    for options in ({"lifetime": "direct"}, {"lifetime": "negative"},
                    {"executor": "heartbeat", "max_run": 20}):
        push_all(script, {"a": a, "b": b}, **options)
    micro = (EXAMPLES / "lifetime" / "microbench.cql").read_text()
    u = pa.table({"ca": pa.array(rng.choice(["x", "y"], n)), "cb": rng.integers(0, 8, n),
                  "cc": pa.array(rng.choice(["u", "v"], n)), "ts": ts * 10})
    b0 = pa.table({"ca": rng.integers(0, 1000, n), "cb": pa.array(rng.choice(["m", "n"], n)),
                   "cc": rng.integers(0, 9, n), "ts": ts * 10})
    for lifetime in ("direct", "negative"):
        push_all(micro, {"STRu": u, "STRb0": b0, "STRb1": b0}, lifetime=lifetime)


def relation_queries(rng: np.random.Generator) -> None:
    """A stream joined with a relation that rows are inserted into and deleted from."""
    n = ROWS // 2
    ca = np.arange(n)
    t = np.concatenate([2 * ca, 2 * ca + 201])
    order = np.argsort(t, kind="stable")
    changes = pa.table({"ca": np.concatenate([ca, ca])[order],
                        "op": np.repeat(np.array(["+", "-"]), n)[order], "ts": t[order]})
    s = pa.table({"ca": ca, "ts": 2 * ca + 1})
    for lifetime in ("direct", "negative"):
        push_all("REGISTER STREAM a(ca INT); REGISTER RELATION r(ca INT);"
                 "REGISTER QUERY q AS ISTREAM(SELECT a.ca FROM a [Now], r WHERE a.ca = r.ca);"
                 "REGISTER QUERY c AS SELECT COUNT(*) AS n FROM r;", {"a": s, "r": changes}, lifetime=lifetime)


def main() -> None:
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    examples()
    recursive_average()
    stream_queries(rng)
    relation_queries(rng)
    print(f"pgo training: {time.perf_counter() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
