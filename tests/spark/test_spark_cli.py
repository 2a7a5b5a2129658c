"""``cq run ... --spark``: Spark reads the files, runs the script and writes the results, which
equal the local run's. The session fixture is running, so the command reuses it (and leaves it
running)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

import cq_py
from cq_py.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "sensors" / "sensors.cql"
READINGS = ROOT / "examples" / "sensors" / "readings.csv"


def cq(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def bag(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def normalized(table: pa.Table) -> list[tuple]:
    def norm(v):
        return round(float(v), 9) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
    return sorted((tuple(norm(v) for v in r.values()) for r in table.to_pylist()), key=repr)


def read_dir(spark, path: Path, fmt: str) -> pa.Table:
    reader = {"csv": lambda p: spark.read.option("header", True).option("inferSchema", True).csv(p),
              "parquet": spark.read.parquet, "jsonl": spark.read.json}[fmt]
    return reader(str(path)).toArrow()


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_run_example_on_spark_writes_what_the_local_run_gives(spark, tmp_path: Path, fmt: str):
    out = tmp_path / "out"
    result = cq("run", SCRIPT, "--input", f"readings={READINGS}", "--spark", "local[2]",
                "--partitions", "3", "--output", out, "--format", fmt)
    assert result.exit_code == 0, result.output
    local = cq_py.run(SCRIPT.read_text(), inputs={"readings": pacsv.read_csv(READINGS)})
    assert result.stdout.splitlines() == [
        f"hot: {local['hot'].num_rows} rows -> {out / f'hot.{fmt}'}/",
        f"recent: {local['recent'].num_rows} rows -> {out / f'recent.{fmt}'}/",
    ]
    for q in ("hot", "recent"):
        got = read_dir(spark, out / f"{q}.{fmt}", fmt).select(local[q].schema.names)
        # Text formats lose the types: compare numbers as floats, rounded alike.
        want, have = normalized(local[q]), normalized(got)
        assert have == want and len(want) > 100, q


def test_run_on_spark_prints_csv_and_warns_when_not_partitionable(spark, tmp_path: Path):
    rng = np.random.default_rng(3)
    n = 300
    data = pa.table({"ts": np.arange(n) * 10, "k": rng.integers(0, 5, n), "v": rng.integers(0, 8, n) / 2})
    path = tmp_path / "s.parquet"
    pq.write_table(data, path)
    script = tmp_path / "q.cql"
    script.write_text("REGISTER STREAM s(k INT, v DOUBLE);\n"
                      "REGISTER QUERY top AS ISTREAM(SELECT MAX(v) AS m FROM s [Rows 4]);\n")
    result = CliRunner().invoke(cli, ["run", str(script), "--input", f"s={path}", "--spark"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert ("cq: warning: cq on Spark: the script runs in one partition: query top: [Rows 4] on "
            "stream 's' is not partitioned") in result.stderr
    printed = result.stdout.split("\n", 1)
    assert printed[0] == "-- top"
    got = pacsv.read_csv(pa.py_buffer(printed[1].encode()))
    local = cq_py.run(script.read_text(), inputs={"s": data})["top"]
    assert bag(got) == bag(local) and local.num_rows > 10


def test_partitions_needs_spark(tmp_path: Path):
    result = CliRunner().invoke(cli, ["run", str(SCRIPT), "--input", f"readings={READINGS}",
                                      "--partitions", "2"])
    assert result.exit_code == 2 and "--partitions needs --spark" in result.output
