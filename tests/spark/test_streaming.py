"""cq on Spark Structured Streaming: engine state carried across micro-batches and checkpoints.

The input is written as Parquet files into a directory a file source watches; each query's output
goes through ``foreachBatch`` into a dict keyed by batch id (a batch Spark runs again replaces its
earlier rows, as an idempotent sink does). Expected rows come from one local engine that took all
the input: with one input stream every bucket's engine ends at the last input tick (Spark's final
watermark), which is where the local engine's pushes leave it.
"""

import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cq_py
import cq_py.spark
from cq_py.spark import streaming

SCRIPT = """
REGISTER STREAM s(k INT, v DOUBLE);
REGISTER QUERY agg AS ISTREAM(SELECT k, SUM(v) AS total, COUNT(*) AS n
    FROM s [Range 40] GROUP BY k);
REGISTER QUERY last3 AS SELECT k, MAX(v) AS top FROM s [Partition By k Rows 3] GROUP BY k;
"""
SCHEMA = "k BIGINT, v DOUBLE, ts BIGINT"
_T0 = int(time.time())


def _data(n=240, seed=7):
    # Distinct timestamps: a row window counts rows of one timestamp in arrival order, which a
    # file source does not fix (the streaming runner orders such ties by value).
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "k": rng.integers(0, 6, n),
            "v": np.round(rng.random(n), 3),
            "ts": np.sort(rng.choice(np.arange(1_000, 3_000), n, replace=False)),
        }
    )


def _write_parts(folder, table, parts, first=0):
    """Time-ordered slices of ``table`` as Parquet files part-<i>. A file source takes files in
    modification-time order, so each file gets its own second (files written within one
    millisecond could come in any order, and later rows before earlier ones would be late)."""
    bounds = np.linspace(0, table.num_rows, len(parts) + 1).astype(int) if parts else []
    for i, p in enumerate(parts):
        path = str(Path(folder) / f"part-{first + p:03d}.parquet")
        pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]), path)
        mtime = _T0 + first + p
        os.utime(path, (mtime, mtime))


def _expected(table, cql=SCRIPT):
    eng = cq_py.Engine()
    eng.execute(cql)
    eng.push("s", table)
    return {q: _bag(eng.fetch(q).to_pylist()) for q in eng.query_names()}


def _bag(rows):
    return sorted(tuple(sorted(r.items())) for r in rows)


class _Collect:
    """A foreachBatch sink keyed by batch id: a replayed batch replaces, never adds."""

    def __init__(self):
        self.batches = {}

    def __call__(self, df, batch_id):
        self.batches[batch_id] = [r.asDict() for r in df.collect()]

    def rows(self):
        return _bag([r for rows in self.batches.values() for r in rows])


def _start(df, sink, checkpoint, **options):
    writer = df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
    for k, v in options.items():
        writer = writer.option(k, v)
    return writer.trigger(availableNow=True).start()


def _run_all(outs, sinks, ck):
    queries = [_start(outs[q], sinks[q], str(Path(ck) / q)) for q in outs]
    for q in queries:
        q.awaitTermination()
    return queries


def test_stream_equals_local_engine(spark, tmp_path):
    table = _data()
    src = tmp_path / "in"
    src.mkdir()
    _write_parts(src, table, [0, 1, 2])
    outs = cq_py.spark.run(
        spark,
        SCRIPT,
        inputs={
            "s": spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 2).parquet(str(src))
        },
    )
    assert set(outs) == {"agg", "last3"}
    assert outs["agg"].isStreaming
    assert outs["agg"].columns == ["k", "total", "n", "ts"]
    assert outs["last3"].columns == ["k", "top", "start", "end"]
    sinks = {q: _Collect() for q in outs}
    _run_all(outs, sinks, str(tmp_path / "ck"))
    want = _expected(table)
    for q in outs:
        assert len(sinks[q].batches) >= 2  # state really crossed micro-batches
        assert sinks[q].rows() == want[q], q
    assert want["agg"]
    assert want["last3"]


class _FailOnce(_Collect):
    """Fails the query in batch ``fail_at`` (after the engines' state for it was computed but
    before the batch commits): the restart must run that batch again from the state before it."""

    def __init__(self, fail_at):
        super().__init__()
        self.fail_at = fail_at

    def __call__(self, df, batch_id):
        if batch_id == self.fail_at:
            df.collect()  # the stateful step runs and its tasks write their state...
            self.fail_at = None
            raise RuntimeError("sink down")  # ...but the batch never commits
        super().__call__(df, batch_id)


def test_restart_from_checkpoint_loses_and_duplicates_nothing(spark, tmp_path):
    table = _data(seed=11)
    src, ck = tmp_path / "in", str(tmp_path / "ck")
    src.mkdir()
    head, tail = table.slice(0, 150), table.slice(150)
    _write_parts(src, head, [0, 1])

    def outputs():
        return cq_py.spark.run(
            spark,
            SCRIPT,
            inputs={
                "s": spark.readStream.schema(SCHEMA)
                .option("maxFilesPerTrigger", 1)
                .parquet(str(src))
            },
        )

    # First run: two files, then the query stops (availableNow ends it).
    sink = _Collect()
    _start(outputs()["agg"], sink, ck).awaitTermination()
    first = dict(sink.batches)
    assert first
    # More files arrive while it is down; the restarted query fails in its second batch, before
    # the batch commits.
    _write_parts(src, tail, [0, 1], first=2)
    failing = _FailOnce(fail_at=max(first) + 2)
    failing.batches = dict(first)
    q = _start(outputs()["agg"], failing, ck)
    with pytest.raises(Exception, match="sink down"):
        q.awaitTermination()
    # Restarted again from the same checkpoint: the failed batch runs again, then the rest.
    _start(outputs()["agg"], failing, ck).awaitTermination()
    assert failing.rows() == _expected(table)["agg"]
    assert max(failing.batches) > max(first) + 2


def test_idle_bucket_advances_with_the_watermark(spark, tmp_path):
    """A window in a bucket that gets no more rows still expires when time passes elsewhere: the
    event-time timeout wakes it and advances its engine to the watermark."""
    src = tmp_path / "in"
    src.mkdir()
    cql = (
        "REGISTER STREAM s(k INT, v DOUBLE);"
        "REGISTER QUERY gone AS DSTREAM(SELECT k, COUNT(*) AS n FROM s [Range 10] GROUP BY k);"
    )
    # Two keys in different buckets (Spark's hash of the key as BIGINT, mod 2).
    buckets = spark.sql("SELECT id AS k, pmod(hash(id), 2) AS b FROM range(20)").collect()
    k0 = buckets[0]["k"]
    k1 = next(r["k"] for r in buckets if r["b"] != buckets[0]["b"])
    first = pa.table({"k": [k0, k1], "v": [1.0, 1.0], "ts": [100, 100]})
    pq.write_table(first, src / "part-000.parquet")
    outs = cq_py.spark.run(
        spark, cql, inputs={"s": spark.readStream.schema(SCHEMA).parquet(str(src))}, partitions=2
    )
    sink, ck = _Collect(), str(tmp_path / "ck")
    _start(outs["gone"], sink, ck).awaitTermination()
    assert sink.rows() == []
    # Later rows only for k0; k1's bucket gets none, yet its window ends at 110 too.
    later = pa.table({"k": [k0], "v": [2.0], "ts": [500]})
    pq.write_table(later, src / "part-001.parquet")
    _start(outs["gone"], sink, ck).awaitTermination()
    whole = pa.concat_tables([first, later])
    assert sink.rows() == _expected(whole, cql)["gone"]
    assert {(r["k"], r["ts"]) for r in map(dict, sink.rows())} == {(k0, 110), (k1, 110)}


def test_late_rows_are_dropped(spark, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    cql = (
        "REGISTER STREAM s(k INT, v DOUBLE);REGISTER QUERY q AS ISTREAM(SELECT k, v FROM s [Now]);"
    )
    pq.write_table(
        pa.table({"k": [0, 0], "v": [1.0, 2.0], "ts": [100, 200]}), src / "part-000.parquet"
    )
    outs = cq_py.spark.run(
        spark, cql, inputs={"s": spark.readStream.schema(SCHEMA).parquet(str(src))}, partitions=1
    )
    sink, ck = _Collect(), str(tmp_path / "ck")
    _start(outs["q"], sink, ck).awaitTermination()
    # 150 is below the watermark (200) the engine was advanced to; 200 and 300 are not.
    pq.write_table(
        pa.table({"k": [0, 0, 0], "v": [3.0, 4.0, 5.0], "ts": [150, 200, 300]}),
        src / "part-001.parquet",
    )
    _start(outs["q"], sink, ck).awaitTermination()
    got = sorted((dict(r)["v"], dict(r)["ts"]) for r in sink.rows())
    assert got == [(1.0, 100), (2.0, 200), (4.0, 200), (5.0, 300)]
    kept = pa.table({"k": [0] * 4, "v": [1.0, 2.0, 4.0, 5.0], "ts": [100, 200, 200, 300]})
    assert sink.rows() == _expected(kept, cql)["q"]


def test_bad_inputs_fail_on_the_driver(spark, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    stream = spark.readStream.schema("k BIGINT, ts BIGINT").parquet(str(src))
    cql = (
        "REGISTER STREAM s(k INT, v DOUBLE); REGISTER STREAM t(k INT);"
        "REGISTER QUERY q AS SELECT k FROM s [Now];"
    )
    with pytest.raises(cq_py.InputError, match="missing column 'v'"):
        cq_py.spark.run(spark, cql, inputs={"s": stream})
    with pytest.raises(cq_py.InputError, match="unknown stream 'x'"):
        cq_py.spark.run(spark, cql, inputs={"x": stream})
    with pytest.raises(cq_py.InputError, match="streaming"):
        cq_py.spark.run(spark, cql, inputs={"s": stream, "t": spark.range(1)})
    with pytest.raises(cq_py.CQError, match="executor='scheduled'"):
        streaming.run(
            spark,
            "REGISTER STREAM s(k INT); REGISTER QUERY q AS SELECT k FROM s [Now];",
            inputs={"s": stream},
            executor="scheduled",
        )


def test_join_of_two_streams(spark, tmp_path):
    """Two inputs in one engine per bucket (joined on the key); Spark's watermark is the minimum
    of theirs. Results before the last tick equal the local engine's (at the last tick more rows
    may still come, so a stream emits nothing there yet; cq_py.run closes and does)."""
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    ta = pa.table(
        {
            "k": [1, 2, 1, 2, 1, 2],
            "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "ts": [10, 10, 20, 20, 30, 30],
        }
    )
    tb = pa.table({"k": [1, 2, 1, 2], "y": [7, 8, 9, 10], "ts": [12, 12, 25, 30]})
    pq.write_table(ta, tmp_path / "a" / "p.parquet")
    pq.write_table(tb, tmp_path / "b" / "p.parquet")
    cql = (
        "REGISTER STREAM a(k INT, x DOUBLE); REGISTER STREAM b(k INT, y INT);"
        "REGISTER QUERY j AS ISTREAM(SELECT a.k, x, y FROM a [Range 10], b [Range 10] "
        "WHERE a.k = b.k);"
    )
    out = cq_py.spark.run(
        spark,
        cql,
        inputs={
            "a": spark.readStream.schema("k BIGINT, x DOUBLE, ts BIGINT").parquet(
                str(tmp_path / "a")
            ),
            "b": spark.readStream.schema("k BIGINT, y BIGINT, ts BIGINT").parquet(
                str(tmp_path / "b")
            ),
        },
    )
    sink = _Collect()
    _start(out["j"], sink, str(tmp_path / "ck")).awaitTermination()
    local = cq_py.run(cql, inputs={"a": ta, "b": tb})["j"].to_pylist()
    assert sink.rows() == _bag([r for r in local if r["ts"] < 30])
    assert len(sink.rows()) == 5
