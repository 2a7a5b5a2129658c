"""Direct vs Negative Tuple lifetimes (paper 003 §5's micro-benchmark, single thread).

STRu(ca VARCHAR, cb INT, cc VARCHAR), one tuple per tick, CQ_BENCH_ROWS tuples (default
1,000,000) in 65,536-row batches, results consumed as they become final:

    select:   SELECT * FROM STRu [W] WHERE cb > 3      (cb uniform in 0..9: 60 % pass)
    project:  SELECT ca, cb FROM STRu [W]

for W = [Rows N], N = 10 ... 1,000,000, under lifetime="direct" and lifetime="negative"; and the
direct select over [Range T]. pytest-benchmark groups each (query, window): the parenthesised
factors in its table are the ratio negative / direct. benchmarks/papers/003 reproduces the whole
figure with plots.

    pytest benchmarks/micro/lifetime --benchmark-only
"""

import os

import numpy as np
import pyarrow as pa
import pytest

import cq_py

ROWS = int(os.environ.get("CQ_BENCH_ROWS", "1000000"))
BATCH = int(os.environ.get("CQ_BENCH_BATCH", "65536"))
QUERIES = {
    "select": "SELECT * FROM STRu {w} WHERE cb > 3",
    "project": "SELECT ca, cb FROM STRu {w}",
}
SIZES = [10, 100, 1000, 10000, 100000, 1000000]


@pytest.fixture(scope="module")
def batches():
    rng = np.random.default_rng(2026)
    ca = pa.array(np.char.add("s", (np.arange(ROWS) % 1000).astype(str)))
    table = pa.table(
        {"ca": ca, "cb": rng.integers(0, 10, ROWS), "cc": ca, "ts": np.arange(ROWS, dtype=np.int64)}
    )
    return table.to_batches(max_chunksize=BATCH)


@pytest.fixture(scope="module")
def selected(batches):
    import pyarrow.compute as pc

    return sum(pc.sum(pc.greater(b["cb"], 3)).as_py() for b in batches)


def run(batches, query: str, lifetime: str) -> int:
    eng = cq_py.Engine(lifetime=lifetime)
    eng.execute(
        f"REGISTER STREAM STRu(ca VARCHAR, cb INT, cc VARCHAR); REGISTER QUERY q AS {query};"
    )
    out = [0]
    eng.subscribe("q", lambda rb: out.__setitem__(0, out[0] + rb.num_rows))
    for b in batches:
        eng.push("STRu", b)
    eng.close()
    return out[0]


def record(benchmark, rows_out: int) -> None:
    benchmark.extra_info["rows"] = ROWS
    benchmark.extra_info["rows_out"] = rows_out
    if benchmark.stats is not None:
        benchmark.extra_info["tuples_per_s"] = ROWS / benchmark.stats["mean"]


@pytest.mark.parametrize("lifetime", ["direct", "negative"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(QUERIES))
def test_rows_window(benchmark, batches, selected, name, n, lifetime):
    benchmark.group = f"{name} [Rows {n}]"
    query = QUERIES[name].format(w=f"[Rows {n}]")
    out = benchmark.pedantic(run, args=(batches, query, lifetime), rounds=3, warmup_rounds=1)
    assert out == (selected if name == "select" else ROWS)
    record(benchmark, out)


@pytest.mark.parametrize("t", [10, 1000, 100000])
def test_range_select_direct(benchmark, batches, selected, t):
    benchmark.group = "select [Range T], direct"
    query = QUERIES["select"].format(w=f"[Range {t}]")
    out = benchmark.pedantic(run, args=(batches, query, "direct"), rounds=5, warmup_rounds=1)
    assert out == selected
    record(benchmark, out)
