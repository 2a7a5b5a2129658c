"""A CQL script over Spark DataFrames: one cq engine per partition, through ``mapInArrow``.

The inputs are tagged and united into one DataFrame (:mod:`cq_py.spark.tagging`: a tag, a
partition hash, the timestamp in ticks, an arrival sequence when ties must keep their order, and
each input's columns under its own prefix), repartitioned by the key
:func:`~cq_py.spark.partitioning.partition_plan` proved safe, sorted by time within each
partition, and handed to ``mapInArrow``: each task runs one :class:`cq_py.Engine` over its Arrow
batches and emits every query's rows in one wide schema (a query tag and each query's columns
under its own prefix), which :func:`run` splits per query.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cq_py.engine import Engine
from cq_py.errors import ArgumentError, InputError
from cq_py.spark.partitioning import CQPartitionWarning, partition_plan
from cq_py.spark.tagging import (
    SEQ,
    TAG,
    TS,
    InputSpec,
    partition_by,
    refuse_resources,
    spark_schema,
    tagged,
    united_key_type,
)
from cq_py.swj_options import refuse_on_spark

__all__ = ["CQPartitionWarning", "run"]

QUERY = "__cq_query"


def run(
    spark: SparkSession,
    cql_text: str,
    inputs: dict[str, DataFrame] | None = None,
    ts: str = "ts",
    *,
    partitions: int | None = None,
    chunk_rows: int = 1 << 18,
    persist: bool = False,
    **engine_options: Any,
) -> dict[str, DataFrame]:
    """Runs ``cql_text`` on Spark over DataFrames and returns every query's output as a DataFrame.

    ``inputs`` maps stream and relation names to DataFrames whose timestamp column is ``ts``
    (integer ticks or a Spark TIMESTAMP, read in the engine's ``time_unit``); a relation's
    DataFrame holds changes, with an optional ``op`` column ('+' / '-'). Unlike local
    :func:`cq_py.run`, inputs need not be in time order: each partition is sorted by time, rows with
    equal timestamps keeping their input order. The results equal :func:`cq_py.run`'s on the same
    data, as bags (Spark does not keep an order): a stream-valued query's rows carry its columns and
    ``ts``, a relation-valued query's its columns and ``start``, ``end`` (null: alive at the end).

    The inputs are split into ``partitions`` parts (default: Spark's default parallelism) by
    the key :func:`cq_py.spark.partition_plan` proves safe; a script without one runs in a single
    partition and warns (:class:`CQPartitionWarning`) naming the operator that needs every row.
    Each task pushes its rows to its engine ``chunk_rows`` at a time. ``engine_options`` go to
    :class:`cq_py.Engine`. Errors in the script or the inputs' columns are raised here; errors in
    the data that an engine finds (a null timestamp, a delete of a row that is not there) come when
    a result is computed, as Spark's exception from the task, whose message ends with cq's. The
    DataFrames are lazy and share one plan: each action runs the engines
    again, unless ``persist=True`` keeps the engines' output (memory and disk) for all of them —
    worth it when several queries' results are read (the CLI does so).

    >>> rows = [(1, 2.0, 0), (2, 3.0, 1)]
    >>> s = spark.createDataFrame(rows, "k int, v double, ts long")  # doctest: +SKIP
    >>> out = run(spark, "REGISTER STREAM s(k INT, v DOUBLE);"  # doctest: +SKIP
    ...           "REGISTER QUERY q AS SELECT k, AVG(v) AS a FROM s [Partition By k Rows 10] "
    ...           "GROUP BY k;", inputs={"s": s})
    >>> sorted(out["q"].collect())  # doctest: +SKIP
    [Row(k=1, a=2.0, start=0, end=None), Row(k=2, a=3.0, start=1, end=None)]
    """
    if inputs is not None and not isinstance(inputs, Mapping):
        raise ArgumentError(
            f"run(inputs=...) maps stream names to DataFrames, e.g. {{'s': df}}; "
            f"found {type(inputs).__name__}"
        )
    inputs = dict(inputs or {})
    if any(getattr(df, "isStreaming", False) for df in inputs.values()):
        from cq_py.spark import streaming  # Structured Streaming: engine state across micro-batches

        return streaming.run(spark, cql_text, inputs, ts, partitions=partitions, **engine_options)
    if not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise ArgumentError(f"chunk_rows must be a positive integer; found {chunk_rows!r}")
    if partitions is not None and (not isinstance(partitions, int) or partitions < 1):
        raise ArgumentError(f"partitions must be a positive integer; found {partitions!r}")
    refuse_on_spark(engine_options)
    # The script is checked on the driver, with the engine's own errors, before any job runs.
    # Spark runs a task per core: each task's engine runs on one thread unless asked otherwise.
    eng = Engine(**{"threads": 1, **engine_options})
    eng.execute(cql_text)
    refuse_resources(eng)
    plan = partition_plan(cql_text, eng.time_unit)
    streams = {name.lower(): name for name in eng.stream_names()}
    given: list[tuple[str, DataFrame]] = []
    for name, df in inputs.items():
        if not isinstance(name, str) or name.lower() not in streams:
            known = ", ".join(eng.stream_names()) or "(none)"
            raise InputError(f"unknown stream {name!r}; registered streams: {known}", stream=name)
        if not isinstance(df, DataFrame):
            raise InputError(
                f"input '{name}' must be a Spark DataFrame; found {type(df).__name__}", stream=name
            )
        given.append((streams[name.lower()], df))
    if partitions is None:
        # One engine per core: each Python task costs a worker round trip, and an engine streams
        # through a large partition as fast as through a small one.
        partitions = spark.sparkContext.defaultParallelism
    if not plan.partitionable:
        warnings.warn(
            f"cq on Spark: the script runs in one partition: {plan.blocker}",
            CQPartitionWarning,
            stacklevel=2,
        )

    specs = [InputSpec(tag, name, eng, plan) for tag, (name, _) in enumerate(given)]
    key_type = united_key_type(plan, [s.name for s in specs])
    parts = [
        tagged(df, spec, specs, ts, plan, key_type, eng.time_unit)
        for spec, (_, df) in zip(specs, given, strict=True)
    ]
    queries = [(q, eng.query_schema(q)) for q in eng.query_names()]
    out_schema = _output_schema(queries)
    worker = _PartitionEngine(cql_text, engine_options, specs, queries, out_schema, chunk_rows)

    if parts:
        data = parts[0]
        for p in parts[1:]:
            data = data.union(p)
        if plan.rstream:
            # RSTREAM emits at every tick up to the furthest the input reached: every engine must
            # reach the same last tick as one engine over all the data would.
            last = data.agg(F.max(TS)).first()
            assert last is not None  # an aggregate without GROUP BY has one row
            worker.last_tick = last[0]
        if not plan.partitionable:
            data = data.repartition(1)
        elif plan.stateful or plan.relations:
            # A relation's deletes must meet their inserts: split it by its values even when no
            # operator needs a key (an unkeyed input's hash is over all its columns). Spark hashes
            # the expression as it shuffles: a stored hash column would be one more column moved.
            data = data.repartition(partitions, partition_by(specs, key_type))
        # else: rows meet no other row; Spark's partitions stay as they are.
        data = data.sortWithinPartitions(*([TS, SEQ] if plan.ordered else [TS]))
        # The sequence only orders ties: it is not sent to Python (every column costs there).
        result = data.drop(SEQ).mapInArrow(worker, spark_schema(out_schema))
        if persist:
            result = result.persist(StorageLevel.MEMORY_AND_DISK)
    else:
        result = spark.createDataFrame([], spark_schema(out_schema))
    if len(queries) == 1:
        return {queries[0][0]: result}
    return {
        q: result.filter(F.col(QUERY) == i).select(
            *[F.col(_qcol(i, f.name)).alias(f.name) for f in schema]
        )
        for i, (q, schema) in enumerate(queries)
    }


# -- outputs --------------------------------------------------------------------------------------


def _qcol(query: int, name: str) -> str:
    return f"__cq_q{query}_{name}"


def _output_schema(queries: list[tuple[str, pa.Schema]]) -> pa.Schema:
    """What the tasks emit: one query's own columns, or for several a query number and each
    query's columns under its prefix (the others' null)."""
    if len(queries) == 1:
        return pa.schema([f.with_nullable(True) for f in queries[0][1]])
    fields = [pa.field(QUERY, pa.int32(), nullable=False)]
    for i, (_, schema) in enumerate(queries):
        fields += [pa.field(_qcol(i, f.name), f.type) for f in schema]
    return pa.schema(fields)


class _PartitionEngine:
    """The function each task runs: one engine over the task's sorted Arrow batches."""

    def __init__(
        self,
        cql: str,
        options: dict[str, Any],
        specs: list[InputSpec],
        queries: list[tuple[str, pa.Schema]],
        out_schema: pa.Schema,
        chunk_rows: int,
    ):
        self.cql = cql
        self.options = options
        self.inputs = [
            (s.tag, s.name, [col for _, col, _ in s.united], [name for name, _, _ in s.united])
            for s in specs
        ]
        self.queries = [q for q, _ in queries]
        self.schemas = queries
        self.out_schema = out_schema
        self.chunk_rows = chunk_rows
        self.last_tick: int | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        eng: Engine | None = None
        pending: list[pa.RecordBatch] = []
        rows = 0
        for batch in batches:
            if not batch.num_rows:
                continue
            if eng is None:
                eng = Engine(**{"threads": 1, **self.options})
                eng.execute(self.cql)
            pending.append(batch)
            rows += batch.num_rows
            if rows >= self.chunk_rows:
                yield from self._feed(eng, pa.Table.from_batches(pending))
                pending, rows = [], 0
        if eng is None:
            return  # an empty partition: no engine, no rows
        if pending:
            yield from self._feed(eng, pa.Table.from_batches(pending))
        if self.last_tick is not None:
            eng.advance(self.last_tick)
        eng.close()
        yield from self._results(eng)

    def _feed(self, eng: Engine, chunk: pa.Table) -> Iterator[pa.RecordBatch]:
        single = len(self.inputs) == 1
        tags = None if single else chunk.column(TAG)
        for tag, name, cols, names in self.inputs:
            part = chunk if single else chunk.filter(pc.equal(tags, tag))
            if part.num_rows:
                eng.push(name, part.select([*cols, TS]).rename_columns([*names, TS]), ts=TS)
        # The partition is sorted by time: no later row of any input is earlier than this one.
        eng.advance(chunk.column(TS)[-1].as_py())
        yield from self._results(eng)

    def _results(self, eng: Engine) -> Iterator[pa.RecordBatch]:
        for i, q in enumerate(self.queries):
            table = eng.fetch(q)
            if table.num_rows:
                for batch in table.to_batches():  # the engine's chunks, not copied
                    yield self._wide(i, batch)

    def _wide(self, query: int, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` of query number ``query`` in the shared output schema (the other queries'
        columns null)."""
        n = batch.num_rows
        if len(self.schemas) == 1:
            return pa.RecordBatch.from_arrays(batch.columns, schema=self.out_schema)
        arrays = [pa.array(np.full(n, query, dtype=np.int32))]
        for i, (_, schema) in enumerate(self.schemas):
            arrays.extend(
                batch.column(f.name) if i == query else pa.nulls(n, f.type) for f in schema
            )
        return pa.RecordBatch.from_arrays(arrays, schema=self.out_schema)
