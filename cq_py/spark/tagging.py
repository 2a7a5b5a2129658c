"""The united DataFrame both Spark runners build (:mod:`cq_py.spark.batch`, one pass over
DataFrames, and :mod:`cq_py.spark.streaming`, micro-batches): every input tagged into one schema.

A row of the united DataFrame holds its input's tag (when there are several inputs), its partition
hash (when asked), its timestamp in ticks, an arrival sequence (when ties must keep their order),
and each input's columns under its own prefix, the other inputs' null. Internal to ``cq_py.spark``.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from cq_py.engine import OP, Engine
from cq_py.errors import CQError, InputError
from cq_py.planner import types as T
from cq_py.spark.partitioning import PartitionPlan

TAG, PART, TS, SEQ = "__cq_tag", "__cq_part", "__cq_ts", "__cq_seq"
SPARK_TYPES = {
    T.INT64: ST.LongType(),
    T.FLOAT64: ST.DoubleType(),
    T.UTF8: ST.StringType(),
    T.BOOL: ST.BooleanType(),
}
# Spark types each core type accepts from an input DataFrame (as Engine.push accepts Arrow types).
ACCEPTS = {
    T.INT64: (ST.ByteType, ST.ShortType, ST.IntegerType, ST.LongType, ST.NullType),
    T.FLOAT64: (
        ST.ByteType,
        ST.ShortType,
        ST.IntegerType,
        ST.LongType,
        ST.FloatType,
        ST.DoubleType,
        ST.NullType,
    ),
    T.UTF8: (ST.StringType, ST.NullType),
    T.BOOL: (ST.BooleanType, ST.NullType),
}
MICROS_PER_TICK = {"s": 1_000_000, "ms": 1_000, "us": 1}


class InputSpec:
    """One input's place in the united DataFrame: its tag, columns and key."""

    def __init__(self, tag: int, name: str, eng: Engine, plan: PartitionPlan):
        self.tag = tag
        self.name = name
        self.relation = name in plan.relations
        self.columns = [(f.name, core_type(f.type)) for f in eng.stream_schema(name)]
        self.key = plan.keys.get(name)
        # (own name, united DataFrame column, core type) for each of this input's columns: user
        # columns, then a relation's op.
        self.united = [(c, _icol(tag, c), t) for c, t in self.columns]
        if self.relation:
            self.united.append((OP, _icol(tag, OP), T.UTF8))


def core_type(t: pa.DataType) -> str:
    """The core type (``cq_py.planner.types``) of an Arrow type the engine declares."""
    return next(k for k, v in T.TO_ARROW.items() if v == t)


def _icol(tag: int, name: str) -> str:
    return f"__cq_i{tag}_{name}"


def united_key_type(plan: PartitionPlan, names: list[str]) -> ST.DataType | None:
    """One Spark type for all keys, so that equal keys (1 and 1.0) hash alike."""
    types = {plan.key_types[n] for n in names if plan.keys.get(n) is not None}
    if not types:
        return None
    if types <= {T.INT64, T.FLOAT64}:
        return SPARK_TYPES[T.FLOAT64 if T.FLOAT64 in types else T.INT64]
    (only,) = types  # the planner only equates keys of one type (or numbers)
    return SPARK_TYPES[only]


def _find(df: DataFrame, name: str) -> str | None:
    """``name`` among ``df``'s columns: exactly, else whatever the case (as CQL names match)."""
    if name in df.columns:
        return name
    return next((c for c in df.columns if c.lower() == name.lower()), None)


def tagged(
    df: DataFrame,
    spec: InputSpec,
    specs: list[InputSpec],
    ts: str,
    plan: PartitionPlan,
    key_type: ST.DataType | None,
    time_unit: str,
    part: bool = False,
) -> DataFrame:
    """``df`` in the united schema: tag, partition hash (if ``part``), ticks, sequence, every
    input's columns (this one's checked and cast, the others' null)."""
    types = {f.name: f.dataType for f in df.schema.fields}
    found = ", ".join(df.columns) or "(none)"
    cols: dict[str, Column] = {}
    for name, t in spec.columns:
        have = _find(df, name)
        if have is None:
            raise InputError(
                f"input '{spec.name}': missing column '{name}' ({T.CQL_NAME[t]}); "
                f"found columns: {found}",
                stream=spec.name,
            )
        if not isinstance(types[have], ACCEPTS[t]):
            raise InputError(
                f"input '{spec.name}': column '{name}' must be {T.CQL_NAME[t]}; found "
                f"Spark type {types[have].simpleString()}",
                stream=spec.name,
            )
        cols[name] = F.col(have).cast(SPARK_TYPES[t])
    op = _find(df, OP) if spec.relation else None
    if spec.relation:
        cols[OP] = F.col(op).cast("string") if op is not None else F.lit("+")
    elif _find(df, OP) is not None and not any(c.lower() == OP for c, _ in spec.columns):
        raise InputError(
            f"input '{spec.name}': column '{_find(df, OP)}' marks inserts and deletes, "
            f"which only a relation takes; '{spec.name}' is a stream",
            stream=spec.name,
        )
    if ts not in types:
        raise InputError(
            f"input '{spec.name}': missing timestamp column '{ts}'; found columns: {found}",
            stream=spec.name,
        )
    ticks = _ticks(F.col(ts), types[ts], spec.name, ts, time_unit)

    # One input needs no tag (every column moved costs in the shuffle and the Arrow transfer).
    select = [F.lit(spec.tag).cast("int").alias(TAG)] if len(specs) > 1 else []
    if part:
        select.append(_input_hash(spec, cols, key_type).alias(PART))
    select.append(ticks.alias(TS))
    if plan.ordered:
        # The input's own order, for rows with equal timestamps (row windows count in arrival
        # order; a relation's delete ends the oldest copy).
        select.append(F.monotonically_increasing_id().alias(SEQ))
    for other in specs:
        for name, col, t in other.united:
            value = cols[name] if other is spec else F.lit(None).cast(SPARK_TYPES[t])
            select.append(value.alias(col))
    return df.select(*select)


def _input_hash(spec: InputSpec, cols: dict[str, Column], key_type: ST.DataType | None) -> Column:
    """The hash that places a row of ``spec``: of its key, else of all its values."""
    if spec.key is not None:
        assert key_type is not None  # keyed inputs have one (united_key_type)
        return F.hash(cols[spec.key].cast(key_type))
    # Any split is right for an input no stateful operator reads; a relation's changes must
    # still find their rows, so the hash is over the values
    # (not over the op column: a delete must meet its insert).
    values = [c for name, c in cols.items() if not (spec.relation and name == OP)]
    return F.hash(*values) if values else F.lit(0)


def partition_by(specs: list[InputSpec], key_type: ST.DataType | None) -> Column:
    """:func:`_input_hash` over the united DataFrame's columns: by each row's tag, its input's."""

    def own(spec: InputSpec) -> Column:
        return _input_hash(spec, {name: F.col(col) for name, col, _ in spec.united}, key_type)

    if len(specs) == 1:
        return own(specs[0])
    by_tag = F.when(F.col(TAG) == specs[0].tag, own(specs[0]))
    for spec in specs[1:]:
        by_tag = by_tag.when(F.col(TAG) == spec.tag, own(spec))
    return by_tag


def _ticks(col: Column, t: ST.DataType, stream: str, ts: str, unit: str) -> Column:
    if isinstance(t, (ST.ByteType, ST.ShortType, ST.IntegerType, ST.LongType)):
        return col.cast("long")
    if isinstance(t, ST.TimestampType):
        micros = F.unix_micros(col)
        if unit == "ns":
            return micros * F.lit(1000)
        # Floor to the engine's unit, as the local engine floors an Arrow timestamp.
        d = MICROS_PER_TICK[unit]
        return F.floor(micros / F.lit(d)).cast("long") if d != 1 else micros
    raise InputError(
        f"input '{stream}': timestamp column '{ts}' must hold integers (ticks) or a "
        f"Spark TIMESTAMP; found {t.simpleString()}",
        stream=stream,
    )


def spark_schema(schema: pa.Schema) -> ST.StructType:
    """The Spark schema of an output Arrow schema (what ``mapInArrow`` is told it returns)."""
    types = {
        pa.int32(): ST.IntegerType(),
        pa.int64(): ST.LongType(),
        pa.float64(): ST.DoubleType(),
        pa.string(): ST.StringType(),
        pa.bool_(): ST.BooleanType(),
    }
    return ST.StructType([ST.StructField(f.name, types[f.type], f.nullable) for f in schema])


def refuse_resources(eng: Engine) -> None:
    """Scripts reading resources or models (paper 002) do not run on Spark: a :class:`CQError`
    saying why.

    >>> refuse_resources(Engine())
    """
    if eng.resources_read():
        raise CQError(
            "a script reading resources or models (paper 002) does not run on Spark: they are "
            "read when each row is processed, which Spark's tasks would do apart, each at its own "
            f"time; found {', '.join(eng.resources_read())}"
        )
