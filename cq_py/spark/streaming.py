"""cq on Spark Structured Streaming (SEMANTICS.md §7): engine state carried across micro-batches.

:func:`run` takes streaming DataFrames (file, rate, Kafka, ... sources) and returns one streaming
DataFrame per registered query. ``cq_py.spark.run`` comes here when any input ``isStreaming``.

How it runs
-----------
* Every input row goes to a *bucket*: ``pmod(hash(key), partitions)`` where ``key`` is the column
  :func:`cq_py.spark.partition_plan` proves safe for that input (cast to one type for all inputs,
  so equal keys of joined streams meet), a hash of the whole row for an input no stateful operator
  reads, and bucket 0 for everything when the script is not partitionable (it then runs in one
  engine, and a :class:`~cq_py.spark.CQPartitionWarning` says why). ``partitions`` (the number of
  buckets) defaults to ``spark.sql.shuffle.partitions``.
* Rows stay Arrow end to end: the inputs are repartitioned by bucket and each task packs a
  bucket's rows of the micro-batch into one Arrow IPC blob (``mapInArrow``); the stateful step
  sees one blob row per bucket, never a pandas row per input row; results leave as IPC blobs that
  a last ``mapInArrow`` unpacks into the query's columns.
* The stateful step is ``groupBy(bucket).applyInPandasWithState`` with an event-time timeout
  (chosen over Spark 4's ``transformWithStateInPandas``, which needs the RocksDB state store
  provider set on the session; this one works with Spark's default state store). Its
  state per bucket is the engine snapshot (``Engine.snapshot()`` bytes: options, script and all
  operator state) plus a little bookkeeping. Spark writes that state to the query's checkpoint with
  every micro-batch, atomically with the batch's offsets, so a query restarted from its checkpoint
  restores each bucket's engine (``Engine.restore``) exactly as it was after the last committed
  batch and continues: with a replayable source and an idempotent sink (file sink, or
  ``foreachBatch`` keyed by batch id) no output row is lost or duplicated.

Time and lateness
-----------------
* Each input gets an event-time watermark with zero delay, so Spark's global watermark is the
  minimum over the inputs (that have delivered any row) of their latest timestamp. In every
  micro-batch each bucket first advances its engine to the watermark (``Engine.advance``) and then
  pushes its new rows, in time order per input. Buckets without new rows are woken by the
  event-time timeout whenever the watermark moves, and advance too: progress is global, so a
  window in a quiet bucket expires when time passes elsewhere, as in the one-engine run.
* A result row is emitted once it is final in its bucket. When Spark's watermark has passed tick
  ``t`` (with ``availableNow`` that includes the extra no-data batch Spark runs at the end), every
  result at times before ``t`` has been emitted, equal to the local engine's. There is no close in
  a stream: a relation-valued query's rows come out when their end is known, and rows still alive
  never come out.
* A row is *late* when its timestamp is below the watermark its bucket has been advanced to, or
  below the latest timestamp its bucket already took from that input. Late rows are dropped, never
  pushed: Spark drops packed blobs wholly below the watermark (its ``numRowsDroppedByWatermark``
  counts blobs, not rows), and the stateful step drops the remaining late rows, counts them per
  bucket and logs a warning with the running count (logger ``cq_py.spark.streaming``, on the
  executors). Timestamps must be at or after the epoch (Spark's first watermark is the epoch).
* Rows with equal timestamps in one input reach a bucket in an order Spark does not fix; for a
  script where that order matters (``[Rows n]`` windows, relation deletes) they are ordered by
  their values, so that a re-run micro-batch computes the same result.

Sinks
-----
Each returned DataFrame is a projection of one stateful plan. Spark runs every started
``writeStream`` as its own query with its own checkpoint, so each sink runs its own copy of the
engines (correct, but the work is repeated per query sink).

Changing the script, the engine options, ``ts`` or ``partitions`` between runs on one checkpoint is
refused with a :class:`cq_py.CQError` from the first micro-batch that restores a bucket.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import warnings
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cq_py.engine import Engine
from cq_py.errors import ArgumentError, CQError, InputError
from cq_py.spark.partitioning import CQPartitionWarning, partition_plan
from cq_py.spark.tagging import (
    MICROS_PER_TICK,
    PART,
    TAG,
    TS,
    InputSpec,
    refuse_resources,
    spark_schema,
    tagged,
    united_key_type,
)
from cq_py.swj_options import refuse_on_spark

if TYPE_CHECKING:  # the executors import this module too: only the driver needs these names
    import pandas as pd
    from pyspark.sql import Column, SparkSession
    from pyspark.sql.streaming.state import GroupState

__all__ = ["run"]

log = logging.getLogger("cq_py.spark.streaming")

# Columns of the internal frames; the prefix keeps them apart from user columns.
_EVENT_US = "__cq_event_us"
_EVENT = "__cq_event_time"
_DATA = "__cq_data"
_QUERY = "__cq_query"
_WATERMARK_DELAY_KEY = "spark.watermarkDelayMs"  # EventTimeWatermark.delayKey in Spark
_STATE_SCHEMA = "snapshot binary, meta string"
_FORMAT = 1  # the bookkeeping's version, stored in the state


def run(
    spark: SparkSession,
    cql_text: str,
    inputs: dict[str, Any] | None = None,
    ts: str = "ts",
    *,
    partitions: int | None = None,
    **engine_options: Any,
) -> dict[str, Any]:
    """Runs ``cql_text`` over streaming DataFrames; returns one streaming DataFrame per query.

    ``inputs`` maps registered stream or relation names to streaming DataFrames holding the
    declared columns and the timestamp column ``ts`` (integer ticks of ``time_unit``, or a Spark
    TIMESTAMP); a relation's may hold an ``op`` column. Each output has the query's columns, as
    :func:`cq_py.run` returns them. Rows are split into ``partitions`` buckets (default
    ``spark.sql.shuffle.partitions``; keep it when restarting from a checkpoint), one engine each.
    Start one ``writeStream`` per output, each with its own ``checkpointLocation``. The module
    documentation gives the semantics of time, late rows and restarts.

    >>> schema = "k BIGINT, v DOUBLE, ts BIGINT"
    >>> src = spark.readStream.schema(schema).parquet("in/")  # doctest: +SKIP
    >>> out = cq_py.spark.run(spark, "REGISTER STREAM s(k INT, v DOUBLE);"  # doctest: +SKIP
    ...     "REGISTER QUERY q AS ISTREAM(SELECT k, SUM(v) AS t FROM s [Range 10] GROUP BY k);",
    ...     inputs={"s": src})
    >>> (out["q"].writeStream.format("parquet").option("path", "out/q")  # doctest: +SKIP
    ...     .option("checkpointLocation", "ck/q").trigger(availableNow=True).start())
    """
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    refuse_on_spark(engine_options)
    # Spark runs a task per core: each task's engine runs on one thread unless asked otherwise.
    eng = Engine(
        **{"threads": 1, **engine_options}
    )  # options and script are checked here, on the driver
    eng.execute(cql_text)
    refuse_resources(eng)
    eng.snapshot()  # an engine that cannot be checkpointed (executor='scheduled') fails here
    plan = partition_plan(cql_text, eng.time_unit)
    if partitions is None:
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
        raise ArgumentError(f"partitions must be a positive integer; found {partitions!r}")
    if not plan.partitionable:
        warnings.warn(
            f"cq on Spark: the script runs in one engine: {plan.blocker}",
            CQPartitionWarning,
            stacklevel=3,
        )
        partitions = 1
    streams = {name.lower(): name for name in eng.stream_names()}
    given = []
    for name, df in (inputs or {}).items():
        if not isinstance(name, str) or name.lower() not in streams:
            eng._stream(str(name))  # raises the engine's InputError naming the known streams
        if not isinstance(df, DataFrame) or not df.isStreaming:
            raise InputError(
                f"input '{name}' must be a streaming Spark DataFrame (all inputs "
                "stream, or none does)",
                stream=name,
            )
        given.append((streams[name.lower()], df))
    if not given:
        raise InputError("cq_py.spark.run on streams needs at least one input DataFrame")

    specs = [InputSpec(tag, name, eng, plan) for tag, (name, _) in enumerate(given)]
    key_type = united_key_type(plan, [s.name for s in specs])
    # Equal timestamps are ordered by value in the stateful step (no arrival sequence: Spark's
    # row ids are not stable across micro-batches).
    unsequenced = dataclasses.replace(plan, ordered=False)
    frames = []
    for spec, (_, df) in zip(specs, given, strict=True):
        frame = tagged(df, spec, specs, ts, unsequenced, key_type, eng.time_unit, part=True)
        bucket = F.pmod(F.col(PART), F.lit(partitions)) if partitions > 1 else F.lit(0)
        frame = (
            frame.withColumn(PART, bucket.cast("int"))
            .withColumn(_EVENT, _event_time(F.col(TS), eng.time_unit))
            # One watermark per input: Spark's global watermark is their minimum.
            .withWatermark(_EVENT, "0 seconds")
        )
        frames.append(frame)
    union = frames[0]
    for frame in frames[1:]:
        union = union.union(frame)
    # All rows of a bucket go to one task, which packs them into one blob: the stateful step sees
    # one row per bucket and micro-batch (pyspark 4.0 with pandas 3 mis-reads a group's chunk
    # offsets as floats when a group has several rows in one Arrow batch).
    packed = (
        union.drop(_EVENT)
        .repartition(partitions, PART)
        .mapInArrow(_Pack(eng.time_unit), f"{PART} int, {_EVENT_US} bigint, {_DATA} binary")
        # The blobs' event time is the column the stateful step's late filter reads. Spark
        # forbids a second withWatermark, and mapInArrow's new columns lose the inputs'
        # watermark mark, so the mark (Spark's column metadata key) is set here.
        .select(
            F.col(PART),
            F.col(_DATA),
            F.timestamp_micros(F.col(_EVENT_US)).alias(_EVENT, metadata={_WATERMARK_DELAY_KEY: 0}),
        )
    )
    fingerprint = hashlib.sha256(
        json.dumps(
            [cql_text, ts, partitions, sorted((k, repr(v)) for k, v in engine_options.items())]
        ).encode()
    ).hexdigest()
    layout = [
        (s.tag, s.name, [col for _, col, _ in s.united], [name for name, _, _ in s.united])
        for s in specs
    ]
    step = _Step(cql_text, dict(engine_options), layout, fingerprint, plan.ordered)
    by_query = packed.groupBy(PART).applyInPandasWithState(
        step,
        f"{_QUERY} string, {_DATA} binary",
        _STATE_SCHEMA,
        "append",
        GroupStateTimeout.EventTimeTimeout,
    )
    out = {}
    for q in eng.query_names():
        schema = eng.query_schema(q)
        out[q] = (
            by_query.filter(F.col(_QUERY) == q)
            .select(_DATA)
            .mapInArrow(_Unpack(), spark_schema(schema))
        )
    return out


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _read_ipc(blob: bytes | pa.Buffer) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


# -- executor-side functions (pickled into the tasks) --------------------------------------------


class _Pack:
    """``mapInArrow`` after the repartition by bucket: all rows of the task's micro-batch become
    one row per bucket, holding the bucket's rows as one Arrow IPC blob and their latest time as
    event-time microseconds + 1 (see :func:`_event_time`)."""

    def __init__(self, unit: str):
        self.unit = unit

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = [b for b in batches if b.num_rows]
        if not got:
            return
        rows = pa.Table.from_batches(got)
        order = pc.sort_indices(rows.column(PART))  # stable: rows keep their order
        rows = rows.take(order)
        keys = rows.column(PART).to_numpy()
        rows = rows.drop_columns([PART])
        starts = np.concatenate(([0], np.flatnonzero(np.diff(keys)) + 1))
        ends = np.append(starts[1:], len(keys))
        blobs, last = [], []
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            part = rows.slice(s, e - s)
            blobs.append(_ipc(part))
            last.append(_tick_to_us(pc.max(part.column(TS)).as_py(), self.unit) + 1)
        yield pa.record_batch(
            {
                PART: pa.array(keys[starts], pa.int32()),
                _EVENT_US: pa.array(last, pa.int64()),
                _DATA: pa.array(blobs, pa.binary()),
            }
        )


def _event_time(ticks: Column, unit: str) -> Column:
    """A row's event time for Spark's watermark: its tick in microseconds, plus one. Spark drops
    rows whose event time is not above the watermark; the extra microsecond keeps a row whose
    tick equals the latest tick seen (the engine takes equal timestamps) and a row at the epoch."""
    from pyspark.sql import functions as F

    if unit == "ns":
        us = (ticks - F.pmod(ticks, F.lit(1000))) / F.lit(1000)
    else:
        us = ticks * F.lit(MICROS_PER_TICK[unit])
    return F.timestamp_micros(us.cast("bigint") + F.lit(1))


def _tick_to_us(tick: int, unit: str) -> int:
    return tick // 1000 if unit == "ns" else tick * MICROS_PER_TICK[unit]


def _watermark_tick(watermark_ms: int, unit: str) -> int:
    """The first tick a row may still have once Spark's watermark is ``watermark_ms``: Spark keeps
    rows whose event time (last tick in µs + 1) is above it, so their ticks are at least this."""
    us = watermark_ms * 1000
    return us * 1000 if unit == "ns" else us // MICROS_PER_TICK[unit]


class _Step:
    """The ``applyInPandasWithState`` function: one bucket's engine, restored from the state,
    advanced to the watermark, fed the micro-batch's rows, drained, and saved back."""

    def __init__(
        self,
        cql: str,
        options: dict[str, Any],
        layout: list[tuple[int, str, list[str], list[str]]],
        fingerprint: str,
        ordered: bool,
    ):
        self.cql, self.options, self.layout = cql, options, layout
        self.fingerprint, self.ordered = fingerprint, ordered

    def __call__(
        self, key: tuple[Any, ...], frames: Iterable[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        import pandas as pd

        bucket = int(key[0])
        if state.exists:
            snapshot, meta = state.get
            meta = json.loads(meta)
            if meta.get("fingerprint") != self.fingerprint or meta.get("format") != _FORMAT:
                raise CQError(
                    "this checkpoint holds engines of a different cq script, engine "
                    "options, timestamp column or bucket count; start the query from a "
                    "new checkpoint location"
                )
            eng = Engine.restore(bytes(snapshot))
        else:
            eng = Engine(**{"threads": 1, **self.options})
            eng.execute(self.cql)
            meta = {
                "format": _FORMAT,
                "fingerprint": self.fingerprint,
                "advanced": None,
                "last": {},
                "late": 0,
            }
        watermark = state.getCurrentWatermarkMs()
        target = _watermark_tick(watermark, eng.time_unit)
        if meta["advanced"] is None or target > meta["advanced"]:
            eng.advance(target)
            meta["advanced"] = target
        late = 0
        for name, table in self._inputs(frames):
            floor = max(meta["advanced"], meta["last"].get(name, meta["advanced"]))
            keep = pc.greater_equal(table.column(TS), floor)
            kept = table.filter(keep)
            late += table.num_rows - kept.num_rows
            if kept.num_rows:
                eng.push(name, kept, ts=TS)
                meta["last"][name] = int(pc.max(kept.column(TS)).as_py())
        if late:
            meta["late"] += late
            log.warning(
                "cq bucket %d dropped %d late rows (%d in all): below the watermark or "
                "below an earlier row of their input",
                bucket,
                late,
                meta["late"],
            )
        queries, blobs = [], []
        for q in eng.query_names():
            result = eng.fetch(q)
            if result.num_rows:
                queries.append(q)
                blobs.append(_ipc(result))
        state.update((eng.snapshot(), json.dumps(meta)))
        # Wake this bucket as soon as the watermark passes where it is now, even with no rows.
        state.setTimeoutTimestamp(max(watermark, 1))
        if queries:
            yield pd.DataFrame({_QUERY: queries, _DATA: blobs})

    def _inputs(self, frames: Iterable[pd.DataFrame]) -> Iterator[tuple[str, pa.Table]]:
        """The micro-batch's rows per input, as Arrow tables in the order the engine takes them:
        inputs interleaved by time, each sorted by time (and, when equal timestamps are ordered
        by arrival, by value: Spark fixes no arrival order across tasks)."""
        from cq_py.io.readers import merge_by_time

        parts = [_read_ipc(blob) for frame in frames for blob in frame[_DATA]]
        if not parts:
            return
        rows = pa.concat_tables(parts, promote_options="default")
        tables: dict[str, pa.Table] = {}
        for tag, stream, prefixed, declared in self.layout:
            # tagging.tagged adds no tag column when there is one input.
            table = (
                rows.filter(pc.equal(rows.column(TAG), tag)) if TAG in rows.column_names else rows
            )
            if table.num_rows == 0:
                continue
            table = table.select([*prefixed, TS]).rename_columns([*declared, TS])
            keys = [TS] + (declared if self.ordered else [])
            tables[stream] = table.sort_by([(k, "ascending") for k in keys])
        if len(tables) <= 1:
            yield from tables.items()
            return
        # As cq_py.run pushes several inputs: cut into time-ordered slices, interleaved.
        for name, part in merge_by_time({n: t.to_batches() for n, t in tables.items()}, TS):
            yield name, pa.Table.from_batches([part])


class _Unpack:
    """``mapInArrow`` over one query's result blobs: the rows, in the query's schema."""

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for blobs in batches:
            for blob in blobs.column(0):
                yield from _read_ipc(blob.as_buffer()).to_batches()
