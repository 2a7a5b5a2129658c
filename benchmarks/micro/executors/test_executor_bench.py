"""DTS against the heartbeat baseline (paper 000 §4.2, Fig. 8) on a non-recursive script: two streams,
a UNION ALL of filtered [Range 10] windows and an equi-join of [Now] with [Range 10], both under
ISTREAM, so that both binary operators merge (and, under heartbeat, stall on) the two inputs.

    u: ISTREAM(SELECT id, val FROM s [Range 10] WHERE val % 2 = 0
               UNION ALL SELECT id, val FROM d [Range 10] WHERE val % 3 = 0)
    j: ISTREAM(SELECT s.id, s.val, d.val AS dval FROM s [Now], d [Range 10]
               WHERE s.id = d.id AND s.val % 5 = 0)

CQ_BENCH_ROWS input tuples in all (default 1,000,000), half on each stream, one per tick and
id = tick % 4, pushed in 65,536-row batches alternating between the streams; results consumed as
they come. Configurations: dts, and heartbeat with max_run 10, 20, 100 and 1000 (the paper's
axis). Every timestamp is distinct, the paper's case (a): heartbeat executes per timestamp.

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
    pytest.param({"executor": "heartbeat", "max_run": n}, id=f"heartbeat-max_run{n}") for n in (10, 20, 100, 1000)]


def make_inputs(rows: int):
    """The two streams' batches and the expected result counts."""
    n = rows // 2
    ts = np.arange(n, dtype=np.int64)
    s = pa.table({"id": ts % 4, "val": ts, "ts": ts})
    d = pa.table({"id": ts % 4, "val": ts + n, "ts": ts})
    # u: the filtered rows of both streams; j: each s row with val % 5 == 0 meets the d rows of its
    # id at ticks t, t - 4, t - 8 (those inside [Range 10] that exist).
    s_val, d_val = ts, ts + n
    joined = ts[s_val % 5 == 0]
    expected = {"u": int((s_val % 2 == 0).sum() + (d_val % 3 == 0).sum()),
                "j": int((joined >= 0).sum() + (joined >= 4).sum() + (joined >= 8).sum())}
    return s.to_batches(max_chunksize=BATCH), d.to_batches(max_chunksize=BATCH), expected


@pytest.fixture(scope="module")
def inputs():
    return make_inputs(ROWS)


def run(inputs, options):
    s, d, _ = inputs
    eng = cq_py.Engine(**options)
    eng.execute(SCRIPT)
    out = {"u": 0, "j": 0}
    for q in out:
        eng.subscribe(q, lambda rb, q=q: out.__setitem__(q, out[q] + rb.num_rows))
    for x, y in zip(s, d):
        eng.push("s", x)
        eng.push("d", y)
    eng.close()
    return out


@pytest.mark.parametrize("options", CONFIGS)
def test_executor(benchmark, inputs, options):
    benchmark.group = f"executors: union + join, {ROWS:,} tuples"
    out = benchmark.pedantic(run, args=(inputs, options), rounds=3, warmup_rounds=0)
    assert out == inputs[2]
    benchmark.extra_info["input_tuples"] = ROWS
    if benchmark.stats is not None:
        benchmark.extra_info["input_tuples_per_s"] = ROWS / benchmark.stats["mean"]
