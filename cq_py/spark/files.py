"""Files in and out of cq on Spark, for ``cq run ... --spark``: CSV, Parquet and JSON Lines read by
Spark (never through the driver); results written by Spark in parallel, then gathered into the
files a local run writes.
"""

from __future__ import annotations

import csv
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as ST

from cq_py.engine import OP, Engine
from cq_py.errors import InputError
from cq_py.io.readers import detect_format
from cq_py.io.writers import EXTENSIONS, OutputFormat, QueryWriter, open_writer
from cq_py.spark.tagging import SPARK_TYPES, core_type

__all__ = ["read_input", "session", "start_session", "write_output"]


def session(master: str) -> tuple[SparkSession, bool]:
    """A SparkSession on ``master`` (the running one if there is one) and whether it is new (the
    caller then stops it when done).

    >>> spark, created = session("local[2]")  # doctest: +SKIP
    """
    running = SparkSession.getActiveSession()
    if running is not None:
        return running, False
    spark = start_session(
        SparkSession.builder.master(master)
        .appName("cq")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


def start_session(builder: SparkSession.Builder) -> SparkSession:
    """``builder.getOrCreate()``, with the Python workers able to import this cq.

    Spark starts its Python workers as ``python3 -m pyspark.daemon`` in the JVM's working
    directory, which the driver's directory becomes; ``-m`` puts that directory first on the
    workers' ``sys.path``. Started from a source checkout, workers would then import its
    ``cq_core/`` (which holds no compiled module) instead of the installed package, so the JVM is
    started in a directory of its own. On a local master the workers also run the driver's
    interpreter (``PYSPARK_PYTHON``, when not set) rather than whatever ``python3`` is on the PATH,
    which may lack cq.

    >>> spark = start_session(SparkSession.builder.master("local[2]"))  # doctest: +SKIP
    """
    if SparkSession.getActiveSession() is not None:
        return builder.getOrCreate()
    master = builder._options.get("spark.master", "") if hasattr(builder, "_options") else ""
    if not master or master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cwd = Path.cwd()
    os.chdir(tempfile.mkdtemp(prefix="cq-spark-"))
    try:
        return builder.getOrCreate()
    finally:
        os.chdir(cwd)


def read_input(
    spark: SparkSession, path: str | os.PathLike[str], eng: Engine, stream: str, ts: str
) -> DataFrame:
    """``path`` as a DataFrame for ``stream`` of ``eng``: a CSV file is read with the declared
    types (its header names the columns; the timestamp is integer ticks, or a timestamp when its
    first value is not an integer), Parquet and JSON Lines with their own types.

    >>> path = "examples/sensors/readings.csv"
    >>> df = read_input(spark, path, eng, "readings", "ts")  # doctest: +SKIP
    """
    fmt = detect_format(path)
    if fmt == "parquet":
        return spark.read.parquet(str(path))
    if fmt == "jsonl":
        return spark.read.json(str(path))
    if str(path).endswith((".gz", ".bz2")):
        raise InputError(
            f"{path}: compressed CSV is not read on Spark; decompress it first", stream=stream
        )
    declared = {f.name.lower(): SPARK_TYPES[core_type(f.type)] for f in eng.stream_schema(stream)}
    if stream in eng.relation_names():
        declared[OP] = ST.StringType()
    with Path(path).open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        first = next(reader, None)
    if not header:
        raise InputError(
            f"{path}: empty CSV file (expected a header naming the columns)", stream=stream
        )
    fields = []
    for i, name in enumerate(header):
        t: ST.DataType
        if name == ts:
            value = first[i] if first is not None and i < len(first) else ""
            t = ST.LongType() if _is_int(value) else ST.TimestampType()
        else:
            t = declared.get(name.lower(), ST.StringType())
        fields.append(ST.StructField(name, t, True))
    return (
        spark.read.option("header", True)
        .option("mode", "FAILFAST")
        .schema(ST.StructType(fields))
        .csv(str(path))
    )


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def write_output(
    df: DataFrame,
    directory: Path,
    query: str,
    fmt: OutputFormat,
    schema: pa.Schema,
    order: list[str],
) -> QueryWriter:
    """Writes ``df``, sorted by the ``order`` columns, to ``directory/query.<ext>``: the file a
    local ``cq run`` writes (same name, format and writer). Spark writes the sorted rows as
    Parquet part files into a hidden directory beside it, in parallel; the driver then streams
    them, part by part, into a staged :class:`~cq_py.io.writers.QueryWriter` and removes the
    parts. The writer is returned closed but not committed: :meth:`QueryWriter.commit` moves the
    file into place, :meth:`QueryWriter.discard` drops it. ``directory`` must be one the Spark
    workers write to (any directory on a local master; a shared file system on a cluster).

    >>> out_dir = Path("out").absolute()
    >>> w = write_output(out["q"], out_dir, "q", "csv", schema, ["ts"])  # doctest: +SKIP
    >>> w.commit(); w.path, w.rows  # doctest: +SKIP
    ('/home/me/out/q.csv', 178)
    """
    Path(directory).mkdir(parents=True, exist_ok=True)
    parts = Path(directory) / f".{query}.{EXTENSIONS[fmt]}.spark-parts"
    writer = open_writer(directory, query, fmt, schema, staged=True)
    try:
        (df.orderBy(*order) if order else df).write.mode("overwrite").parquet(str(parts))
        # Range partitioning numbers the parts in sort order.
        for part in sorted(parts.glob("part-*.parquet")):
            for batch in pq.ParquetFile(part).iter_batches():
                writer.write(batch)
        writer.close(schema)
    except BaseException:
        writer.discard()
        raise
    finally:
        shutil.rmtree(parts, ignore_errors=True)
    return writer
