"""DTS against the heartbeat baseline (paper 000 §4.2, Fig. 8) on a non-recursive script: two
streams, a UNION ALL of filtered [Range 10] windows and an equi-join of [Now] with [Range 10], both
under ISTREAM, so that both binary operators merge (and, under heartbeat, stall on) the two inputs.

    u: ISTREAM(SELECT id, val FROM s [Range 10] WHERE val % 2 = 0
               UNION ALL SELECT id, val FROM d [Range 10] WHERE val % 3 = 0)
    j: ISTREAM(SELECT s.id, s.val, d.val AS dval FROM s [Now], d [Range 10]
               WHERE s.id = d.id AND s.val % 5 = 0)

CQ_BENCH_ROWS input tuples in all (default 1,000,000), half on each stream, id = row % 4, pushed
in 65,536-row batches alternating between the streams; results consumed as they come. As in the
paper's Fig. 8, (a) every tuple has its own timestamp, or (b) four tuples share one. Configurations:
dts, and heartbeat with max_run 10, 20, 100 and 1000 (the paper's axis); heartbeat executes per
timestamp, DTS (run as a hybrid, SEMANTICS.md §5) over whole batches outside loops.

    pytest benchmarks/micro/executors --benchmark-only
    CQ_BENCH_ROWS=100000 pytest benchmarks/micro/executors --benchmark-only   # quicker
"""

import os

import numpy as np
import pyarrow as pa
import pytest

import cq_py

ROWS = int(os.environ.get("CQ_BENCH_ROWS", "1000000"))
BATCH = 65536
SCRIPT = """
REGISTER STREAM s(id INT, val INT);
REGISTER STREAM d(id INT, val INT);
REGISTER QUERY u AS ISTREAM(SELECT id, val FROM s [Range 10] WHERE val % 2 = 0
                            UNION ALL SELECT id, val FROM d [Range 10] WHERE val % 3 = 0);
REGISTER QUERY j AS ISTREAM(SELECT s.id, s.val, d.val AS dval FROM s [Now], d [Range 10]
                            WHERE s.id = d.id AND s.val % 5 = 0);
"""
CONFIGS = [pytest.param({"executor": "dts"}, id="dts")] + [
    pytest.param({"executor": "heartbeat", "max_run": n}, id=f"heartbeat-max_run{n}")
    for n in (10, 20, 100, 1000)
]


def make_inputs(rows: int, per_tick: int):
    """The two streams' batches (`per_tick` rows per tick, id = row % 4) and the expected result
    counts, computed here with numpy."""
    n = rows // 2
    i = np.arange(n, dtype=np.int64)
    ts, ids = i // per_tick, i % 4
    s = pa.table({"id": ids, "val": i, "ts": ts})
    d = pa.table({"id": ids, "val": i + n, "ts": ts})
    # j: every s row with val % 5 == 0 meets the d rows of its id inside [Range 10], ticks
    # t - 9 ... t.
    chosen = i % 5 == 0
    joined = 0
    for v in range(4):
        d_ticks = ts[ids == v]
        s_ticks = ts[chosen & (ids == v)]
        joined += int(
            (
                np.searchsorted(d_ticks, s_ticks, "right")
                - np.searchsorted(d_ticks, s_ticks - 9, "left")
            ).sum()
        )
    expected = {"u": int((i % 2 == 0).sum() + ((i + n) % 3 == 0).sum()), "j": joined}
    return s.to_batches(max_chunksize=BATCH), d.to_batches(max_chunksize=BATCH), expected


@pytest.fixture(scope="module", params=[1, 4], ids=["distinct-ts", "4-per-ts"])
def inputs(request):
    """The paper's two cases: each tuple at its own timestamp (a), four tuples per timestamp (b)."""
    return request.param, make_inputs(ROWS, request.param)


def run(inputs, options):
    s, d, _ = inputs
    eng = cq_py.Engine(**options)
    eng.execute(SCRIPT)
    out = {"u": 0, "j": 0}
    for q in ("u", "j"):
        eng.subscribe(q, lambda rb, q=q: out.__setitem__(q, out[q] + rb.num_rows))
    for x, y in zip(s, d, strict=True):
        eng.push("s", x)
        eng.push("d", y)
    eng.close()
    return out


@pytest.mark.parametrize("options", CONFIGS)
def test_executor(benchmark, inputs, options):
    per_tick, data = inputs
    benchmark.group = f"executors: union + join, {ROWS:,} tuples, {per_tick} per timestamp"
    out = benchmark.pedantic(run, args=(data, options), rounds=3, warmup_rounds=0)
    assert out == data[2]
    benchmark.extra_info["input_tuples"] = ROWS
    if benchmark.stats is not None:
        benchmark.extra_info["input_tuples_per_s"] = ROWS / benchmark.stats["mean"]
