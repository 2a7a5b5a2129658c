"""Stateful operators, direct vs negative (issue 5's targets: equi-join >= 10M input tuples/s,
grouped AVG over [Range T] >= 20M tuples/s; single thread, 65,536-row batches).

    join: SELECT * FROM a [Range 100], b [Range 100] WHERE a.ca = b.ca   (each tuple matches one)
    avg:  SELECT cb, AVG(ca) FROM a [Range 1000] GROUP BY cb            (10 groups)
    relation: ISTREAM(SELECT a.ca FROM a [Now], r WHERE a.ca = r.ca)   (r: a relation whose row
          ca = i is inserted at 2i and deleted at 2i + 201; each tuple of a, at 2i + 1, matches one)

over CQ_BENCH_ROWS tuples per stream (default 1,000,000), one per tick, results consumed as they
come. pytest-benchmark's factors in each group are negative / direct.

    pytest benchmarks/micro/stateful --benchmark-only
"""

import os

import numpy as np
import pyarrow as pa
import pytest

import cq_py
from cq_py.io.readers import merge_by_time

ROWS = int(os.environ.get("CQ_BENCH_ROWS", "1000000"))
BATCH = 65536


@pytest.fixture(scope="module")
def streams():
    rng = np.random.default_rng(5)
    a = pa.table(
        {
            "ca": np.arange(ROWS),
            "cb": rng.integers(0, 10, ROWS),
            "ts": np.arange(ROWS, dtype=np.int64),
        }
    )
    b = pa.table(
        {
            "ca": np.arange(ROWS),
            "cc": rng.integers(0, 10, ROWS),
            "ts": np.arange(ROWS, dtype=np.int64),
        }
    )
    return a.to_batches(max_chunksize=BATCH), b.to_batches(max_chunksize=BATCH)


def run(streams, query, lifetime, both):
    eng = cq_py.Engine(lifetime=lifetime)
    eng.execute(
        "REGISTER STREAM a(ca INT, cb INT); REGISTER STREAM b(ca INT, cc INT); "
        f"REGISTER QUERY q AS {query};"
    )
    out = [0]
    eng.subscribe("q", lambda rb: out.__setitem__(0, out[0] + rb.num_rows))
    for x, y in zip(*streams, strict=True):
        eng.push("a", x)
        if both:
            eng.push("b", y)
    eng.close()
    return out[0]


def record(benchmark, tuples):
    benchmark.extra_info["input_tuples"] = tuples
    if benchmark.stats is not None:
        benchmark.extra_info["input_tuples_per_s"] = tuples / benchmark.stats["mean"]


@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_equi_join(benchmark, streams, lifetime):
    benchmark.group = "equi-join [Range 100]"
    out = benchmark.pedantic(
        run,
        args=(
            streams,
            "SELECT * FROM a [Range 100], b [Range 100] WHERE a.ca = b.ca",
            lifetime,
            True,
        ),
        rounds=3,
        warmup_rounds=1,
    )
    assert out == ROWS
    record(benchmark, 2 * ROWS)


@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_grouped_avg(benchmark, streams, lifetime):
    benchmark.group = "grouped AVG [Range 1000]"
    out = benchmark.pedantic(
        run,
        args=(streams, "SELECT cb, AVG(ca) AS v FROM a [Range 1000] GROUP BY cb", lifetime, False),
        rounds=3,
        warmup_rounds=1,
    )
    assert out > 0
    record(benchmark, ROWS)


@pytest.fixture(scope="module")
def stream_and_changes():
    ca = np.arange(ROWS)
    t = np.concatenate([2 * ca, 2 * ca + 201])
    order = np.argsort(t, kind="stable")
    changes = pa.table(
        {
            "ca": np.concatenate([ca, ca])[order],
            "op": np.repeat(np.array(["+", "-"]), ROWS)[order],
            "ts": t[order],
        }
    )
    a = pa.table({"ca": ca, "ts": 2 * ca + 1})
    return a.to_batches(max_chunksize=BATCH), changes.to_batches(max_chunksize=BATCH)


def run_relation(inputs, lifetime):
    eng = cq_py.Engine(lifetime=lifetime)
    eng.execute(
        "REGISTER STREAM a(ca INT); REGISTER RELATION r(ca INT);"
        "REGISTER QUERY q AS ISTREAM(SELECT a.ca FROM a [Now], r WHERE a.ca = r.ca);"
    )
    out = [0]
    eng.subscribe("q", lambda rb: out.__setitem__(0, out[0] + rb.num_rows))
    for name, batch in merge_by_time({"a": iter(inputs[0]), "r": iter(inputs[1])}):
        eng.push(name, batch)
    eng.close()
    return out[0]


@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_stream_relation_join(benchmark, stream_and_changes, lifetime):
    benchmark.group = "stream [Now] x relation (inserts and deletes)"
    out = benchmark.pedantic(
        run_relation, args=(stream_and_changes, lifetime), rounds=3, warmup_rounds=1
    )
    assert out == ROWS
    record(benchmark, 3 * ROWS)  # a's tuples and r's inserts and deletes
