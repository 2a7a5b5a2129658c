"""Engine(batch_size=N): a push of any size is validated whole, then run N rows at a time, with the
results of one batch and memory that follows the queries' state instead of the push's size."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from child import child_env, time_bound
from oracle.reference import INF, equivalent

EXAMPLES = examples(150)
TESTS = Path(__file__).resolve().parent

SCRIPT = (
    "REGISTER STREAM s(k INT, v DOUBLE); REGISTER RELATION r(k INT, w VARCHAR);"
    "REGISTER QUERY w1 AS ISTREAM(SELECT * FROM s [Now] WHERE v > 0.5);"
    "REGISTER QUERY w5 AS ISTREAM(SELECT k, AVG(v) AS a FROM s [Partition By k Rows 3] GROUP BY k);"
    "REGISTER QUERY slide AS SELECT k, COUNT(*) AS n FROM s [Range 4 Slide 2] GROUP BY k;"
    "REGISTER QUERY rows AS DSTREAM(SELECT k, v FROM s [Rows 4]);"
    "REGISTER QUERY joined AS SELECT s.k, s.v, r.w FROM s [Range 3], r WHERE s.k = r.k;"
)
EXECUTORS = [
    {"executor": "dts"},
    {"executor": "dts", "hybrid": False},
    {"executor": "heartbeat", "max_run": 1},
]


@st.composite
def inputs(draw):
    t = draw(st.integers(0, 2))
    s, r, alive = [], [], []
    for _ in range(draw(st.integers(0, 40))):
        t += draw(st.sampled_from([0, 0, 1, 2, 3]))
        if draw(st.integers(0, 4)) == 0:  # a change of the relation
            if alive and draw(st.booleans()):
                k, w = alive.pop(draw(st.integers(0, len(alive) - 1)))
                r.append({"k": k, "w": w, "op": "-", "ts": t})
            else:
                k, w = draw(st.integers(0, 3)), draw(st.sampled_from(["x", None]))
                alive.append((k, w))
                r.append({"k": k, "w": w, "op": "+", "ts": t})
            continue
        s.append(
            {
                "k": draw(st.one_of(st.none(), st.integers(0, 3))),
                "v": draw(st.one_of(st.none(), st.sampled_from([0.0, 0.75, 1.5]))),
                "ts": t,
            }
        )
    return s, r


def results(eng: cq_py.Engine) -> dict[str, object]:
    """Each query's output as equal results share it: streams as bags per instant, relations as
    lifetimes (compared with equivalent)."""
    out: dict[str, object] = {}
    for q in eng.query_names():
        t = eng.fetch(q)
        names = [c for c in t.column_names if c not in ("ts", "start", "end", "ts_step")]
        names = [c for c in names if not c.endswith("_step")]
        if "ts" in t.column_names:
            out[q] = Counter(
                (tuple(r[c] for c in names), (r["ts"], r["ts_step"])) for r in t.to_pylist()
            )
        else:
            out[q] = [
                (
                    tuple(r[c] for c in names),
                    (r["start"], r["start_step"]),
                    INF if r["end"] is None else (r["end"], r["end_step"]),
                )
                for r in t.to_pylist()
            ]
    return out


def run(options: dict, s: list, r: list, batch_size: int, pieces: int) -> dict[str, object]:
    """The script over s and r: r pushed first, whole; s in `pieces` pushes."""
    eng = cq_py.Engine(expose_steps=True, batch_size=batch_size, **options)
    eng.execute(SCRIPT)
    schema = pa.schema([("k", pa.int64()), ("v", pa.float64()), ("ts", pa.int64())])
    changes = pa.schema(
        [("k", pa.int64()), ("w", pa.string()), ("op", pa.string()), ("ts", pa.int64())]
    )
    if r:
        eng.push("r", pa.Table.from_pylist(r, schema=changes))
    # Equal timestamps across the relation's changes and the stream: the stream starts after them.
    start = r[-1]["ts"] if r else None
    s = [row for row in s if start is None or row["ts"] >= start]
    table = pa.Table.from_pylist(s, schema=schema)
    size = max(1, -(-len(s) // pieces))
    for at in range(0, len(s), size):
        eng.push("s", table.slice(at, size))
    eng.close()
    return results(eng)


@pytest.mark.parametrize("options", EXECUTORS, ids=["dts", "dts-published", "heartbeat"])
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(inputs(), st.sampled_from([1, 2, 3, 7]), st.sampled_from([1, 2]))
def test_results_do_not_depend_on_the_batch_size(options, data, batch_size, pieces):
    s, r = data
    whole = run(options, s, r, 65536, 1)
    sliced = run(options, s, r, batch_size, pieces)
    assert whole.keys() == sliced.keys()
    for q in whole:
        if isinstance(whole[q], list):
            assert equivalent(whole[q], sliced[q]), q
        else:
            assert whole[q] == sliced[q], q


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True, None, 2**63])
def test_batch_size_must_be_a_positive_integer(bad):
    with pytest.raises(cq_py.ArgumentError, match="batch_size must be a positive integer"):
        cq_py.Engine(batch_size=bad)
    with pytest.raises(cq_py.ArgumentError, match="batch_size"):
        cq_py.run("REGISTER STREAM s(a INT);", batch_size=bad)


def test_run_takes_the_batch_size_and_a_snapshot_keeps_it():
    out = cq_py.run(
        "REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Rows 1]);",
        inputs={"s": pa.table({"a": [1, 2, 3], "ts": [0, 0, 1]})},
        batch_size=1,
    )
    assert out["q"].to_pylist() == [{"a": 2, "ts": 0}, {"a": 3, "ts": 1}]
    eng = cq_py.Engine(batch_size=2)
    assert cq_py.Engine.restore(eng.snapshot())._batch_size == 2


def test_a_rejected_push_runs_none_of_its_batches():
    # The bad row is in the last slice: nothing of the slices before it may have run.
    eng = cq_py.Engine(batch_size=2)
    eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
    before = eng.snapshot()
    with pytest.raises(cq_py.InputError, match="row 5 has ts 1 after ts 6"):
        eng.push("s", pa.table({"a": [1, 2, 3, 4, 5, 6], "ts": [1, 2, 3, 4, 6, 1]}))
    assert eng.snapshot() == before
    assert eng.fetch("q").num_rows == 0


PEAK = """
import json, sys
import numpy as np, pyarrow as pa
import cq_py
from cq_py.engine import resident_bytes
mode, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
def events():
    return pa.table({"ts": np.arange(n, dtype=np.int64), "key": rng.integers(0, 1000, n),
                     "val": rng.integers(0, 1000, n)})
STREAMS = "REGISTER STREAM a(key INT, val INT); REGISTER STREAM b(key INT, val INT);"
if mode == "w5":
    query = "ISTREAM(SELECT key, AVG(val) AS m FROM a [Partition By key Rows 10] GROUP BY key)"
    inputs = {"a": events()}
else:  # a join of two inputs, merged by time
    query = ("ISTREAM(SELECT a.key, a.val, b.val AS w FROM a [Range 10], b [Range 10] "
             "WHERE a.key = b.key)")
    inputs = {"a": events(), "b": events()}
cq_py.run(STREAMS + "REGISTER QUERY q AS ISTREAM(SELECT key FROM a [Now]);",
          inputs={"a": inputs["a"].slice(0, 1000)})  # code and pools in
before = resident_bytes()
# One engine: what is measured is how a push is cut into batches (threads=2 adds a second engine's
# state and the merge of the outputs: benchmarks/micro/push prints both).
out = cq_py.run(STREAMS + f"REGISTER QUERY q AS {query};", inputs=inputs, batch_size=65536,
                threads=1)
# VmHWM: this process's own peak. (ru_maxrss also keeps the peak of the process it was forked
# from, across exec: the test runner's, hundreds of MB late in a full run.)
with open("/proc/self/status") as f:
    peak = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
print(json.dumps({"growth": peak - before, "rows": out["q"].num_rows,
                  "output": out["q"].nbytes}))
"""


def peak_growth(mode: str, n: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PEAK, mode, str(n)],
        env=child_env(TESTS),
        # Not the checkout: `python -c` puts the working directory first on sys.path, and a
        # checkout's cq_core has no extension when cq was installed from it (CI).
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=time_bound(300),
        check=True,
    )
    return json.loads(done.stdout)


def test_one_large_push_runs_in_memory_bounded_by_the_state_and_the_output():
    # 1,000,000 rows (24 MB in, 24 MB out) of a query whose state is 10 rows per key: run as one
    # batch the push held every row of it until its end (ISTREAM keeps the rows of instants not
    # complete), ~500 MB; sliced, what grows is the output and a slice's work.
    got = peak_growth("w5", 1_000_000)
    assert got["rows"] > 990_000
    assert got["growth"] < got["output"] + 150 * 2**20, got


def test_inputs_merged_by_time_run_in_bounded_memory():
    # Two inputs of 2,000,000 rows each: run() merges them a batch_size piece of each at a time.
    # Merged whole, each piece held its input's instants open until the other's piece came
    # (~200 MB for a join whose state is 10 ticks of rows); now ~25 MB.
    got = peak_growth("join", 2_000_000)
    assert got["rows"] > 0
    assert got["growth"] < got["output"] + 80 * 2**20, got
