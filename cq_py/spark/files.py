"""Files in and out of cq on Spark, for ``cq run ... --spark``: CSV, Parquet and JSON Lines read by
Spark (never through the driver), results written by Spark's writers.
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as ST

from cq_py.engine import OP, Engine
from cq_py.errors import InputError
from cq_py.io.readers import detect_format
from cq_py.spark.batch import SPARK_TYPES, _core_type

__all__ = ["read_input", "session", "start_session", "write_output"]


def session(master: str) -> tuple[SparkSession, bool]:
    """A SparkSession on ``master`` (the running one if there is one) and whether it is new (the
    caller then stops it when done).

    >>> spark, created = session("local[2]")  # doctest: +SKIP
    """
    running = SparkSession.getActiveSession()
    if running is not None:
        return running, False
    spark = start_session(SparkSession.builder.master(master).appName("cq")
                          .config("spark.ui.showConsoleProgress", "false")
                          .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
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
    cwd = os.getcwd()
    os.chdir(tempfile.mkdtemp(prefix="cq-spark-"))
    try:
        return builder.getOrCreate()
    finally:
        os.chdir(cwd)


def read_input(spark: SparkSession, path: str | os.PathLike[str], eng: Engine, stream: str,
               ts: str) -> DataFrame:
    """``path`` as a DataFrame for ``stream`` of ``eng``: a CSV file is read with the declared
    types (its header names the columns; the timestamp is integer ticks, or a timestamp when its
    first value is not an integer), Parquet and JSON Lines with their own types.

    >>> df = read_input(spark, "examples/sensors/readings.csv", eng, "readings", "ts")  # doctest: +SKIP
    """
    fmt = detect_format(path)
    if fmt == "parquet":
        return spark.read.parquet(str(path))
    if fmt == "jsonl":
        return spark.read.json(str(path))
    if str(path).endswith((".gz", ".bz2")):
        raise InputError(f"{path}: compressed CSV is not read on Spark; decompress it first",
                         stream=stream)
    declared = {f.name.lower(): SPARK_TYPES[_core_type(f.type)] for f in eng.stream_schema(stream)}
    if stream in eng.relation_names():
        declared[OP] = ST.StringType()
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        first = next(reader, None)
    if not header:
        raise InputError(f"{path}: empty CSV file (expected a header naming the columns)",
                         stream=stream)
    fields = []
    for i, name in enumerate(header):
        if name == ts:
            value = first[i] if first is not None and i < len(first) else ""
            t = ST.LongType() if _is_int(value) else ST.TimestampType()
        else:
            t = declared.get(name.lower(), ST.StringType())
        fields.append(ST.StructField(name, t, True))
    return (spark.read.option("header", True).option("mode", "FAILFAST")
            .schema(ST.StructType(fields)).csv(str(path)))


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def write_output(df: DataFrame, directory: Path, query: str, fmt: str) -> Path:
    """Writes ``df`` with Spark's writer to ``directory/query.fmt/`` (one part file per task) and
    returns that path.

    >>> write_output(out["q"], Path("out"), "q", "csv")  # doctest: +SKIP
    PosixPath('out/q.csv')
    """
    target = directory / f"{query}.{fmt}"
    writer = df.write.mode("overwrite")
    if fmt == "csv":
        writer.option("header", True).csv(str(target))
    elif fmt == "parquet":
        writer.parquet(str(target))
    else:  # JSON Lines, nulls written as null as the local writer does
        writer.option("ignoreNullFields", False).json(str(target))
    return target

