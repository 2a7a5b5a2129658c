"""``cq run ... --spark``: Spark reads the files and runs the script; the outputs are the files the
local run writes. The session fixture is running, so the command reuses it (and leaves it
running)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
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


def read_file(path: Path, fmt: str) -> pa.Table:
    return {"csv": pacsv.read_csv, "parquet": pq.read_table, "jsonl": pajson.read_json}[fmt](path)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_run_example_on_spark_writes_the_files_the_local_run_writes(
    spark, tmp_path: Path, fmt: str
):
    # It was: Spark wrote DIR/<query>.<ext>/ directories of part files in its own format.
    out, local = tmp_path / "out", tmp_path / "local"
    result = cq(
        "run",
        SCRIPT,
        "--input",
        f"readings={READINGS}",
        "--spark",
        "local[2]",
        "--partitions",
        "3",
        "--output",
        out,
        "--format",
        fmt,
    )
    assert result.exit_code == 0, result.output
    ran = cq(
        "run", SCRIPT, "--input", f"readings={READINGS}", "--output", local, "--format", fmt, "-q"
    )
    assert ran.exit_code == 0, ran.output
    assert result.stdout.splitlines() == ran.stdout.replace(str(local), str(out)).splitlines()
    assert sorted(p.name for p in out.iterdir()) == [f"hot.{fmt}", f"recent.{fmt}"]
    for q in ("hot", "recent"):
        got, want = read_file(out / f"{q}.{fmt}", fmt), read_file(local / f"{q}.{fmt}", fmt)
        assert got.schema == want.schema, q
        assert bag(got) == bag(want), q
        assert want.num_rows > 100, q
        # Sorted by time like the local output (equal times may come in another order).
        assert (
            got.column("ts" if "ts" in got.column_names else "start").to_pylist()
            == want.column("ts" if "ts" in want.column_names else "start").to_pylist()
        )
    if fmt == "csv":  # the same writer: the same bytes, up to the order of equal times
        for q in ("hot", "recent"):
            assert sorted((out / f"{q}.csv").read_text().splitlines()) == sorted(
                (local / f"{q}.csv").read_text().splitlines()
            )


def test_readme_example_on_spark_reads_and_writes_relative_to_where_cq_runs(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # It was: relative paths were resolved in the Spark JVM's temporary working directory —
    # PATH_NOT_FOUND for the input, and outputs reported as outs/hot.csv/ but written there.
    shutil.copytree(SCRIPT.parent, tmp_path / "examples" / "sensors")
    monkeypatch.chdir(tmp_path)
    result = cq(
        "run",
        "examples/sensors/sensors.cql",
        "--input",
        "readings=examples/sensors/readings.csv",
        "--output",
        "outs/",
        "--spark",
    )
    assert result.exit_code == 0, result.output
    local = cq_py.run(SCRIPT.read_text(), inputs={"readings": pacsv.read_csv(READINGS)})
    assert result.stdout.splitlines() == [
        f"hot: {local['hot'].num_rows} rows -> outs/hot.csv",
        f"recent: {local['recent'].num_rows} rows -> outs/recent.csv",
    ]
    assert sorted(p.name for p in (tmp_path / "outs").iterdir()) == ["hot.csv", "recent.csv"]
    assert normalized(pacsv.read_csv(tmp_path / "outs" / "hot.csv")) == normalized(local["hot"])


def test_run_on_spark_prints_csv_and_warns_when_not_partitionable(spark, tmp_path: Path):
    rng = np.random.default_rng(3)
    n = 300
    data = pa.table(
        {"ts": np.arange(n) * 10, "k": rng.integers(0, 5, n), "v": rng.integers(0, 8, n) / 2}
    )
    path = tmp_path / "s.parquet"
    pq.write_table(data, path)
    script = tmp_path / "q.cql"
    script.write_text(
        "REGISTER STREAM s(k INT, v DOUBLE);\n"
        "REGISTER QUERY top AS ISTREAM(SELECT MAX(v) AS m FROM s [Rows 4]);\n"
    )
    result = CliRunner().invoke(
        cli, ["run", str(script), "--input", f"s={path}", "--spark"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert (
        "cq: warning: cq on Spark: the script runs in one partition: query top: [Rows 4] on "
        "stream 's' is not partitioned"
    ) in result.stderr
    printed = result.stdout.split("\n", 1)
    assert printed[0] == "-- top"
    got = pacsv.read_csv(pa.py_buffer(printed[1].encode()))
    local = cq_py.run(script.read_text(), inputs={"s": data})["top"]
    assert bag(got) == bag(local)
    assert local.num_rows > 10


def test_partitions_needs_spark(tmp_path: Path):
    result = CliRunner().invoke(
        cli, ["run", str(SCRIPT), "--input", f"readings={READINGS}", "--partitions", "2"]
    )
    assert result.exit_code == 2
    assert "--partitions needs --spark" in result.output


def test_bad_data_found_in_a_task_is_reported_as_cq_reports_it(spark, tmp_path: Path):
    path = tmp_path / "s.parquet"
    pq.write_table(
        pa.table({"k": [1, 2, 3], "v": [1.0, 2.0, 3.0], "ts": pa.array([1, None, 3], pa.int64())}),
        path,
    )
    script = tmp_path / "q.cql"
    script.write_text(
        "REGISTER STREAM s(k INT, v DOUBLE);\n"
        "REGISTER QUERY q AS SELECT k, COUNT(*) AS n FROM s [Range 5] GROUP BY k;\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["run", str(script), "--input", f"s={path}", "--spark", "--output", str(out)]
    )
    assert result.exit_code == 1
    assert "cq: error: stream 's': null timestamp at row 0 (in a Spark task)" in result.stderr
    assert f"nothing was written to {out}/" in result.stderr
    assert not out.exists() or list(out.iterdir()) == []
