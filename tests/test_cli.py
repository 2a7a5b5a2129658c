"""The ``cq`` command line, end to end over the bundled sensors example and small scripts."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from cq_py.cli import cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "sensors"
SCRIPT = EXAMPLE / "sensors.cql"
READINGS = EXAMPLE / "readings.csv"


def cq(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def write_file(table: pa.Table, path: Path, fmt: str) -> Path:
    """``table`` as an input file of ``fmt`` (csv, parquet or jsonl)."""
    if fmt == "csv":
        pacsv.write_csv(table, path)
    elif fmt == "parquet":
        pq.write_table(table, path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in table.to_pylist()))
    return path


def readings() -> pd.DataFrame:
    return pd.read_csv(READINGS)


def expected_hot() -> pa.Table:
    """``hot`` computed independently of the engine, with pyarrow.compute."""
    t = pacsv.read_csv(READINGS)
    keep = pc.and_(pc.greater(t["temp"], 30.0), pc.is_valid(t["humidity"]))
    t = t.filter(keep)
    temp_f = pc.add(pc.multiply(t["temp"], 1.8), 32.0)
    return pa.table({"sensor": t["sensor"], "temp": t["temp"], "temp_f": temp_f, "ts": t["ts"]})


def expected_recent() -> pd.DataFrame:
    """``recent`` computed with pandas: each qualifying reading lives for [ts, ts + 5 s)."""
    d = readings()
    # SQL: NULL > 90 is unknown, and "temp < 0 OR unknown" keeps the row only when temp < 0;
    # pandas' NaN > 90 is False, which selects the same rows.
    d = d[(d.temp < 0.0) | (d.humidity > 90.0)]
    return pd.DataFrame({"sensor": d.sensor, "temp": d.temp, "start": d.ts, "end": d.ts + 5000})


def canonical(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return df.sort_values(by, kind="stable").reset_index(drop=True)


def read_output(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pandas()
    if path.suffix == ".jsonl":
        return pd.DataFrame([json.loads(line) for line in path.read_text().splitlines()])
    return pd.read_csv(path)


# -- cq run ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_run_example_writes_every_query(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "out"
    result = cq("run", SCRIPT, "--input", f"readings={READINGS}", "--output", out, "--format", fmt)
    assert result.exit_code == 0, result.output

    hot_want = expected_hot().to_pandas()
    recent_want = expected_recent()
    assert sorted(p.name for p in out.iterdir()) == [f"hot.{fmt}", f"recent.{fmt}"]
    assert result.stdout.splitlines() == [
        f"hot: {len(hot_want)} rows -> {out / f'hot.{fmt}'}",
        f"recent: {len(recent_want)} rows -> {out / f'recent.{fmt}'}",
    ]

    hot = read_output(out / f"hot.{fmt}")
    assert list(hot.columns) == ["sensor", "temp", "temp_f", "ts"]
    assert hot.ts.is_monotonic_increasing
    by = ["ts", "sensor", "temp"]
    pd.testing.assert_frame_equal(canonical(hot, by), canonical(hot_want, by), check_dtype=False)

    recent = read_output(out / f"recent.{fmt}")
    assert list(recent.columns) == ["sensor", "temp", "start", "end"]
    by = ["start", "sensor", "temp"]
    pd.testing.assert_frame_equal(
        canonical(recent, by), canonical(recent_want, by), check_dtype=False
    )


def test_example_data_is_what_make_data_generates(tmp_path: Path) -> None:
    regenerated = tmp_path / "readings.csv"
    subprocess.run(
        [sys.executable, str(EXAMPLE / "make_data.py"), str(regenerated)],
        check=True,
        capture_output=True,
    )
    assert regenerated.read_bytes() == READINGS.read_bytes()
    d = readings()
    assert 1500 <= len(d) <= 3000
    assert d.ts.is_monotonic_increasing
    assert d.humidity.isna().sum() > 0
    assert d.sensor.nunique() >= 3


def test_run_prints_csv_to_stdout_without_output() -> None:
    result = cq("run", SCRIPT, "-i", f"readings={READINGS}")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    hot_at, recent_at = lines.index("-- hot"), lines.index("-- recent")
    assert lines[hot_at + 1] == '"sensor","temp","temp_f","ts"'
    assert recent_at - hot_at - 2 == expected_hot().num_rows
    assert lines[recent_at + 1] == '"sensor","temp","start","end"'
    assert len(lines) - recent_at - 2 == len(expected_recent())
    assert result.stderr == ""  # no progress bar when stderr is not a terminal


@pytest.mark.parametrize("source", ["parquet", "jsonl"])
def test_input_formats_and_batch_sizes_give_the_same_results(tmp_path: Path, source: str) -> None:
    table = pacsv.read_csv(READINGS)
    path = tmp_path / f"readings.{source}"
    if source == "parquet":
        pq.write_table(table, path, row_group_size=256)
    else:
        path.write_text("\n".join(json.dumps(r) for r in table.to_pylist()) + "\n")
    base = cq("run", SCRIPT, "-i", f"readings={READINGS}", "-o", tmp_path / "a")
    other = cq("run", SCRIPT, "-i", f"readings={path}", "-o", tmp_path / "b", "--batch-size", "37")
    assert base.exit_code == 0, base.output
    assert other.exit_code == 0, other.output
    for name in ("hot.csv", "recent.csv"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()


def test_several_inputs_are_merged_in_time(tmp_path: Path) -> None:
    script = tmp_path / "two.cql"
    script.write_text(
        "REGISTER STREAM a(x INT);\nREGISTER STREAM b(y DOUBLE, tag VARCHAR);\n"
        "REGISTER QUERY qa AS ISTREAM(SELECT x * 2 AS x2 FROM a [Now]);\n"
        "REGISTER QUERY qb AS SELECT tag, y FROM b [Range 3] WHERE y >= 0.5;\n"
    )
    a = pa.table({"ts": pa.array(range(0, 3000, 3), pa.int64()), "x": pa.array(range(1000))})
    b = pa.table(
        {
            "ts": pa.array(range(0, 3000, 2), pa.int64()),
            "y": pa.array([(i % 10) / 10 for i in range(1500)]),
            "tag": pa.array([f"t{i % 7}" for i in range(1500)]),
        }
    )
    pacsv.write_csv(a, tmp_path / "a.csv")
    pq.write_table(b, tmp_path / "b.parquet", row_group_size=100)
    result = cq(
        "run",
        script,
        "-i",
        f"a={tmp_path / 'a.csv'}",
        "-i",
        f"B={tmp_path / 'b.parquet'}",
        "-o",
        tmp_path / "out",
        "-f",
        "parquet",
        "--batch-size",
        "64",
    )
    assert result.exit_code == 0, result.output

    qa = pq.read_table(tmp_path / "out" / "qa.parquet")
    assert qa.column("x2").to_pylist() == [2 * x for x in range(1000)]
    assert qa.column("ts").to_pylist() == list(range(0, 3000, 3))
    qb = pq.read_table(tmp_path / "out" / "qb.parquet").to_pandas()
    bd = b.to_pandas()
    bd = bd[bd.y >= 0.5]
    want = pd.DataFrame({"tag": bd.tag, "y": bd.y, "start": bd.ts, "end": bd.ts + 3})
    by = ["start", "tag"]
    pd.testing.assert_frame_equal(canonical(qb, by), canonical(want, by), check_dtype=False)


def test_timestamp_column_option_and_time_unit(tmp_path: Path) -> None:
    script = tmp_path / "s.cql"
    script.write_text(
        "REGISTER STREAM s(v INT);\nREGISTER QUERY q AS SELECT v FROM s [Range 2 SECONDS];\n"
    )
    # Epoch microseconds in a column named "time".
    pacsv.write_csv(
        pa.table({"time": pa.array([1_000_000, 5_000_000], pa.int64()), "v": [1, 2]}),
        tmp_path / "s.csv",
    )
    result = cq("run", script, "-i", f"s={tmp_path / 's.csv'}", "--ts", "time", "--time-unit", "us")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == [
        '"v","start","end"',
        "1,1000000,3000000",
        "2,5000000,7000000",
    ]


RELATION_SCRIPT = (
    "REGISTER STREAM orders(id INT, qty INT);\nREGISTER RELATION prices(id INT, price DOUBLE);\n"
    "REGISTER QUERY cost AS ISTREAM(SELECT o.id, o.qty * p.price AS total "
    "FROM orders [Now] AS o, prices AS p WHERE o.id = p.id);\n"
    "REGISTER QUERY current AS SELECT id, price FROM prices;\n"
)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_run_feeds_a_relation_from_a_file_of_changes(tmp_path: Path, fmt: str) -> None:
    script = tmp_path / "r.cql"
    script.write_text(RELATION_SCRIPT)
    prices = pa.table(
        {
            "ts": [0, 0, 4, 4],
            "id": [1, 2, 1, 1],
            "price": [10.0, 20.0, 10.0, 12.0],
            "op": ["+", "+", "-", "+"],
        }
    )
    path = write_file(prices, tmp_path / f"prices.{fmt}", fmt)
    pacsv.write_csv(
        pa.table({"ts": [1, 2, 5], "id": [1, 2, 1], "qty": [2, 1, 3]}), tmp_path / "o.csv"
    )
    result = cq(
        "run",
        script,
        "-i",
        f"prices={path}",
        "-i",
        f"orders={tmp_path / 'o.csv'}",
        "--batch-size",
        "2",
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[lines.index("-- cost") + 1 : lines.index("-- current")] == [
        '"id","total","ts"',
        "1,20,1",
        "2,20,2",
        "1,36,5",
    ]
    assert lines[lines.index("-- current") + 1 :] == [
        '"id","price","start","end"',
        "1,10,0,4",
        "2,20,0,",
        "1,12,4,",
    ]


def test_run_relation_file_without_op_inserts_every_row(tmp_path: Path) -> None:
    script = tmp_path / "r.cql"
    script.write_text(RELATION_SCRIPT)
    pacsv.write_csv(pa.table({"ts": [0, 3], "id": [1, 2], "price": [1.5, 2.5]}), tmp_path / "p.csv")
    result = cq("run", script, "-i", f"prices={tmp_path / 'p.csv'}")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[lines.index("-- current") + 1 :] == [
        '"id","price","start","end"',
        "1,1.5,0,",
        "2,2.5,3,",
    ]


def test_run_relation_delete_of_a_missing_row_names_the_file_row(tmp_path: Path) -> None:
    script = tmp_path / "r.cql"
    script.write_text(RELATION_SCRIPT)
    path = tmp_path / "p.csv"
    path.write_text("ts,id,price,op\n0,1,1.5,+\n1,1,1.5,-\n2,1,1.5,-\n")
    assert_fails(
        cq("run", script, "-i", f"prices={path}", "--batch-size", "2"),
        1,
        "relation 'prices': line 4 deletes (id=1, price=1.5) at ts 2",
        f"(in {path})",
    )


def test_a_query_with_no_rows_gets_a_header_only_file(tmp_path: Path) -> None:
    script = tmp_path / "s.cql"
    script.write_text(
        SCRIPT.read_text() + "\nREGISTER QUERY never AS "
        "SELECT sensor FROM readings [Now] WHERE temp > 1000;"
    )
    result = cq("run", script, "-i", f"readings={READINGS}", "-o", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "o" / "never.csv").read_text() == '"sensor","start","end"\n'
    assert f"never: 0 rows -> {tmp_path / 'o' / 'never.csv'}" in result.stdout


def test_a_run_without_input_is_refused_unless_no_input_says_so(tmp_path: Path) -> None:
    # It was: empty results and exit code 0, for what is almost surely a forgotten --input.
    assert_fails(
        cq("run", SCRIPT, "-o", tmp_path / "o", "--quiet"),
        2,
        "no --input given",
        "reads readings",
        "--no-input",
    )
    assert not (tmp_path / "o").exists()
    result = cq("run", SCRIPT, "-o", tmp_path / "o", "--quiet", "--no-input")
    assert result.exit_code == 0, result.output
    assert "hot: 0 rows" in result.stdout
    assert "recent: 0 rows" in result.stdout
    assert_fails(cq("run", SCRIPT, "--no-input", "-i", f"readings={READINGS}"), 2, "--no-input")


def test_a_stream_left_without_input_is_warned_about(tmp_path: Path) -> None:
    script = tmp_path / "two.cql"
    script.write_text(SCRIPT.read_text() + "\nREGISTER STREAM other(x INT);\n")
    result = cq("run", script, "-i", f"readings={READINGS}", "-o", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert "cq: warning: no --input for 'other': it stays empty" in result.stderr


def test_a_clock_needs_no_input_and_is_not_warned_about(tmp_path: Path) -> None:
    # (A clock ticks by itself; it was warned about as an input left empty.)
    script = tmp_path / "clock.cql"
    script.write_text(SCRIPT.read_text() + "\nREGISTER CLOCK every_min EVERY 1 MINUTES;\n")
    result = cq("run", script, "-i", f"readings={READINGS}", "-o", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr


# -- cq explain -----------------------------------------------------------------------------


def test_explain_prints_the_operators() -> None:
    result = cq("explain", SCRIPT)
    assert result.exit_code == 0, result.output
    for word in (
        "readings",
        "hot",
        "recent",
        "StreamScan",
        "Window",
        "Filter",
        "Project",
        "ISTREAM",
        "Output",
    ):
        assert word in result.stdout
    assert "[Range 10000]" in result.stdout
    assert "[Range 5000]" in result.stdout


def test_explain_time_unit_changes_durations() -> None:
    result = cq("explain", SCRIPT, "--time-unit", "s")
    assert result.exit_code == 0
    assert "[Range 10]" in result.stdout


# -- errors -----------------------------------------------------------------------------------


def assert_fails(result: Result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.output)
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def test_missing_input_file(tmp_path: Path) -> None:
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={tmp_path / 'nope.csv'}"),
        2,
        "nope.csv",
        "does not exist",
        "--input",
    )


@pytest.mark.parametrize("value", ["readings", "=x.csv", "readings=", "readings:x.csv"])
def test_bad_name_path(value: str) -> None:
    assert_fails(cq("run", SCRIPT, "-i", value), 2, "expected NAME=PATH", repr(value))


def test_unknown_input_extension(tmp_path: Path) -> None:
    path = tmp_path / "readings.xlsx"
    path.write_text("x")
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}"), 2, "cannot tell the format", ".parquet"
    )


def test_unknown_stream_name(tmp_path: Path) -> None:
    assert_fails(
        cq("run", SCRIPT, "-i", f"temps={READINGS}"),
        2,
        "registers no stream or relation 'temps'",
        "readings",
    )


def test_duplicate_stream(tmp_path: Path) -> None:
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={READINGS}", "-i", f"readings={READINGS}"),
        2,
        "more than once",
    )


def test_missing_script(tmp_path: Path) -> None:
    assert_fails(cq("run", tmp_path / "none.cql"), 2, "does not exist")


def test_bad_output_format() -> None:
    assert_fails(cq("run", SCRIPT, "-o", "x", "--format", "xml"), 2, "'xml' is not one of")
    assert_fails(cq("run", SCRIPT, "--format", "parquet"), 2, "needs --output")


def test_syntax_error(tmp_path: Path) -> None:
    script = tmp_path / "bad.cql"
    script.write_text("REGISTER STREAM s(a INT);\nREGISTER QUERY q AS SELEC a FROM s [Now];\n")
    result = cq("run", script)
    assert_fails(result, 1, "cq: error:", "bad.cql", "line 2")
    assert cq("explain", script).exit_code == 1


def test_semantic_error(tmp_path: Path) -> None:
    script = tmp_path / "bad.cql"
    script.write_text("REGISTER STREAM s(a INT);\nREGISTER QUERY q AS SELECT b FROM s [Now];\n")
    assert_fails(cq("explain", script), 1, "cq: error:", "'b'")


def test_malformed_input_content(tmp_path: Path) -> None:
    path = tmp_path / "readings.csv"
    path.write_text("ts,sensor,temp,humidity\n1,a,20.5,50\n2,b,warm,50\n")
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}"), 1, "cq: error:", "cannot read", "readings.csv"
    )


def test_input_missing_a_declared_column(tmp_path: Path) -> None:
    path = tmp_path / "readings.csv"
    path.write_text("ts,sensor,temp\n1,a,20.5\n")
    assert_fails(cq("run", SCRIPT, "-i", f"readings={path}"), 1, "cq: error:", "humidity")


def test_out_of_order_input(tmp_path: Path) -> None:
    path = tmp_path / "readings.csv"
    path.write_text("ts,sensor,temp,humidity\n5,a,20.5,50\n3,b,31.0,50\n")
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}", "-o", tmp_path / "o"),
        1,
        "cq: error:",
        "'readings'",
        f"line 3 has ts 3 after ts 5 of the row before it (in {path})",
    )


def test_out_of_order_row_is_located_in_the_file_across_batches(tmp_path: Path) -> None:
    d = readings()
    d.loc[1234, "ts"] = d.loc[1233, "ts"] - 1
    path = tmp_path / "readings.csv"
    d.to_csv(path, index=False)
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}", "--batch-size", "100"),
        1,
        "line 1236 has ts",
        f"(in {path})",
    )


def test_missing_timestamp_column(tmp_path: Path) -> None:
    path = tmp_path / "readings.csv"
    path.write_text("time,sensor,temp,humidity\n5,a,20.5,50\n")
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}"),
        1,
        "cq: error:",
        "no timestamp column 'ts'",
        "time",
    )


def test_module_entry_point(tmp_path: Path) -> None:
    # Run outside the source tree: `python -m` puts the working directory first on sys.path, and
    # the tests exercise the installed package.
    proc = subprocess.run(
        [sys.executable, "-m", "cq_py", "explain", str(SCRIPT)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ISTREAM" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "cq_py", "run", str(SCRIPT), "-i", "oops"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "expected NAME=PATH" in proc.stderr


# -- progress bar ---------------------------------------------------------------------------


class FakeTTY:
    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal_and_not_when_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cq_py import cli as cli_module

    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    bar = cli_module._progress(2000, disabled=False)
    bar.update(1000)
    bar.refresh()
    bar.close()
    assert "rows" in tty.text
    assert "2.00k" in tty.text
    assert cli_module._progress(2000, disabled=True).disable
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    assert cli_module._progress(None, disabled=False).disable


@pytest.mark.parametrize(("source", "total"), [("parquet", 2000), ("csv", None)])
def test_progress_total_comes_from_parquet_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, total: int | None
) -> None:
    from cq_py import cli as cli_module

    path = READINGS
    if source == "parquet":
        path = tmp_path / "r.parquet"
        pq.write_table(pacsv.read_csv(READINGS), path)
    seen: list[tuple[int | None, int]] = []
    real = cli_module._progress

    def spy(total: int | None, disabled: bool):  # type: ignore[no-untyped-def]
        bar = real(total, disabled=True)
        update = bar.update

        def counting_update(n: int) -> bool | None:
            seen.append((total, n))
            return update(n)

        bar.update = counting_update  # type: ignore[method-assign]
        return bar

    monkeypatch.setattr(cli_module, "_progress", spy)
    result = cq(
        "run", SCRIPT, "-i", f"readings={path}", "-o", tmp_path / "o", "--batch-size", "300"
    )
    assert result.exit_code == 0, result.output
    assert {t for t, _ in seen} == {total}
    assert sum(n for _, n in seen) == len(readings())
    assert max(n for _, n in seen) <= 300


def test_run_with_auto_delay_runs_a_loop_that_has_no_delay(tmp_path):
    script = tmp_path / "loop.cql"
    script.write_text(
        "REGISTER STREAM s(a INT);\nREGISTER QUERY c AS ISTREAM(SELECT a FROM s [Now] "
        "UNION ALL SELECT a + 1 AS a FROM c [Now] WHERE a + 1 < 3);\n"
    )
    data = tmp_path / "s.csv"
    data.write_text("a,ts\n1,0\n")
    refused = cq("run", script, "--input", f"s={data}", "-q")
    assert refused.exit_code == 1
    assert "c → c" in refused.output
    ran = cq(
        "run", script, "--input", f"s={data}", "-q", "--auto-delay", "--output", tmp_path / "out"
    )
    assert ran.exit_code == 0, ran.output
    assert (tmp_path / "out" / "c.csv").read_text().split() == ['"a","ts"', "1,0", "2,0"]


# -- where a bad value is, and what a failed run leaves ------------------------------------------


def test_a_bad_csv_value_names_the_column_and_the_line(tmp_path: Path) -> None:
    # It was: "In CSV column #2: CSV conversion error to double: invalid value 'warm'", no line.
    path = tmp_path / "readings.csv"
    path.write_text('ts,sensor,temp,humidity\n1,"a\nb",20.5,50\n\n2,b,21,50\n3,c,warm,50\n')
    result = cq("run", SCRIPT, "-i", f"readings={path}")
    assert_fails(
        result,
        1,
        f"cannot read '{path}' as CSV: line 6, column 'temp': expected DOUBLE, found 'warm'",
    )
    assert "#2" not in result.stderr


def test_a_bad_csv_value_after_many_blocks_names_its_line(tmp_path: Path) -> None:
    d = readings().astype({"humidity": object})
    d.loc[1345, "humidity"] = "n/a"
    path = tmp_path / "readings.csv"
    d.to_csv(path, index=False)
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}", "--batch-size", "100"),
        1,
        "line 1347, column 'humidity': expected DOUBLE, found 'n/a'",
    )


def test_a_csv_row_with_missing_fields_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "readings.csv"
    path.write_text("ts,sensor,temp,humidity\n1,a,20.5,50\n2,b,21\n")
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}"),
        1,
        "line 3 has 3 fields, the header 4 (ts, sensor, temp, humidity)",
    )


@pytest.mark.parametrize(
    ("fmt", "place"), [("csv", "line 4"), ("jsonl", "line 3"), ("parquet", "data row 3")]
)
def test_a_null_timestamp_names_its_place(tmp_path: Path, fmt: str, place: str) -> None:
    table = pa.table(
        {
            "ts": pa.array([1, 2, None, 4], pa.int64()),
            "sensor": ["a"] * 4,
            "temp": [1.0] * 4,
            "humidity": [1.0] * 4,
        }
    )
    path = write_file(table, tmp_path / f"readings.{fmt}", fmt)
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}"),
        1,
        f"null timestamp in column 'ts' at {place} (in {path})",
    )


def test_a_timestamp_outside_the_engine_range_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "readings.csv"
    path.write_text(f"ts,sensor,temp,humidity\n1,a,20.5,50\n{2**63 - 1},b,21,50\n")
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}"),
        1,
        "timestamp column 'ts': line 3 holds 9223372036854775807: outside the engine's ticks",
    )


def test_a_failed_run_writes_nothing_and_says_so(tmp_path: Path) -> None:
    # It was: the outputs of the rows before the error were left, with no word about them.
    out = tmp_path / "o"
    good = cq("run", SCRIPT, "-i", f"readings={READINGS}", "-o", out, "-q")
    assert good.exit_code == 0, good.output
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    d = readings()
    d.loc[1500, "ts"] = 0
    path = tmp_path / "readings.csv"
    d.to_csv(path, index=False)
    assert_fails(
        cq("run", SCRIPT, "-i", f"readings={path}", "-o", out, "--batch-size", "100"),
        1,
        "line 1502",
        f"nothing was written to {out}/ (partial outputs removed)",
    )
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the earlier run's files


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (MemoryError(), "out of memory: the engine's state outgrew this machine"),
        (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
        (ZeroDivisionError("boom"), "unexpected ZeroDivisionError: boom (please report it"),
    ],
)
def test_no_failure_prints_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException, words: str
) -> None:
    import cq_py

    def fails(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise error

    monkeypatch.delenv("CQ_TRACEBACK", raising=False)
    monkeypatch.setattr(cq_py.Engine, "push", fails)
    result = CliRunner().invoke(
        cli, ["run", str(SCRIPT), "-i", f"readings={READINGS}", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert words in result.stderr
    assert "nothing was written" in result.stderr
    assert list((tmp_path / "o").iterdir()) == []
    monkeypatch.setattr(cq_py, "explain", fails)
    result = CliRunner().invoke(cli, ["explain", str(SCRIPT)])
    assert result.exit_code == 1
    assert words in result.stderr
    assert result.stderr.count("\n") == 1


def test_engine_options_reach_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import cq_py

    seen: list[dict] = []
    real = cq_py.Engine.__init__

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs)
        real(self, *args, **kwargs)

    monkeypatch.setattr(cq_py.Engine, "__init__", spy)
    result = cq(
        "run",
        SCRIPT,
        "-i",
        f"readings={READINGS}",
        "-q",
        "--lifetime",
        "negative",
        "--executor",
        "heartbeat",
        "--no-hybrid",
        "--max-loop-steps",
        "77",
        "--time-unit",
        "s",
        "--max-loop-ticks",
        "78",
        "--max-loop-rows",
        "79",
        "--batch-size",
        "80",
        "--threads",
        "3",
    )
    assert result.exit_code == 0, result.output
    assert seen[0] == {
        "time_unit": "s",
        "auto_delay": False,
        "lifetime": "negative",
        "executor": "heartbeat",
        "hybrid": False,
        "max_loop_steps": 77,
        "max_loop_ticks": 78,
        "max_loop_rows": 79,
        "max_memory": None,
        "batch_size": 80,
        "threads": 3,
    }


def test_a_runaway_loop_names_the_option_that_raises_the_bound(tmp_path: Path) -> None:
    script = tmp_path / "loop.cql"
    script.write_text(
        "REGISTER STREAM s(a INT);\nREGISTER QUERY c AS ISTREAM(SELECT a FROM s [Now] "
        "UNION ALL SELECT a + 1 AS a FROM c [Now]) <Now>;\n"
    )
    data = tmp_path / "s.csv"
    data.write_text("a,ts\n1,0\n")
    result = cq("run", script, "--input", f"s={data}", "-q", "--max-loop-steps", "50")
    assert_fails(result, 1, "more than 50 ε steps", "(cq run: --max-loop-steps N)")
    # A loop with a tick delay that keeps going after its input ends (issue 27 G1), and one whose
    # rows multiply: each names its own bound and the option that sets it.
    ticking = tmp_path / "ticking.cql"
    ticking.write_text(
        "REGISTER STREAM s(a INT);\nREGISTER QUERY twice AS ISTREAM(SELECT a FROM s [Now] "
        "UNION ALL SELECT a * 2 AS a FROM twice [Now] WHERE a * 2 < 100) <2>;\n"
    )
    zero = tmp_path / "zero.csv"
    zero.write_text("a,ts\n0,0\n")
    result = cq("run", ticking, "--input", f"s={zero}", "-q", "--max-loop-ticks", "40")
    assert_fails(
        result,
        1,
        "rows at more than 40 ticks past its inputs' progress",
        "(cq run: --max-loop-ticks N)",
    )
    result = cq("run", ticking, "--input", f"s={zero}", "-q", "--max-loop-rows", "30")
    assert_fails(result, 1, "more than 30 rows went round", "(cq run: --max-loop-rows N)")
    refused = cq("run", script, "--input", f"s={data}", "--executor", "heartbeat")
    assert_fails(refused, 1, "executor='heartbeat' cannot run the recursive loop")


def test_a_failing_output_write_is_reported_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cq_py.io.writers import QueryWriter

    def full(self, batch):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device", self.path)

    monkeypatch.setattr(QueryWriter, "write", full)
    result = cq("run", SCRIPT, "-i", f"readings={READINGS}", "-o", tmp_path / "o", "-q")
    assert_fails(result, 1, "cq: error: No space left on device: ", "nothing was written")
    assert "callback" not in result.stderr


def test_threads_run_the_same_results_and_stay_off_spark(tmp_path: Path) -> None:
    # The sensors script groups by sensor: on two engines, split by sensor, the files hold the same
    # rows (a relation's in start order, a stream's in time order, equal times in part order).
    out = {}
    for threads in ("1", "2"):
        result = cq(
            "run", SCRIPT, "-i", f"readings={READINGS}", "-q", "--threads", threads,
            "-o", tmp_path / threads, "-f", "parquet",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        out[threads] = {
            p.name: sorted(map(repr, pq.read_table(p).to_pylist()))
            for p in (tmp_path / threads).iterdir()
        }
    assert out["1"] == out["2"]
    assert out["1"]
    result = cq("run", SCRIPT, "-i", f"readings={READINGS}", "--threads", "2", "--spark")
    assert result.exit_code == 2
    assert "--threads is for a run on this machine" in result.output
    result = cq("run", SCRIPT, "-i", f"readings={READINGS}", "--threads", "0")
    assert result.exit_code == 2


def test_replay_paces_the_example_and_reports_latency(tmp_path):
    out = tmp_path / "latencies.csv"
    result = cq(
        "replay", SCRIPT, "--input", f"readings={READINGS}", "--speed", "1000", "--latencies", out
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("arrivals ")
    assert "latency mean" in result.output
    assert "result rows" in result.output
    lat = pacsv.read_csv(out)
    assert lat.column_names == ["ts", "latency_ms", "service_ms"]
    assert lat.num_rows == int(result.output.split()[1].rstrip(";"))
    # An arrival's latency holds its service (the engine's calls for it), and more when queued.
    latency, service = lat["latency_ms"].to_numpy(), lat["service_ms"].to_numpy()
    assert (service > 0).all()
    assert (latency >= service - 1e-6).all()


def test_replay_spinning_through_every_gap_gives_the_same_arrivals_and_rows():
    args = ["replay", SCRIPT, "--input", f"readings={READINGS}", "--speed", "1000"]
    slept, spun = cq(*args), cq(*args, "--spin", "1")
    assert slept.exit_code == 0, slept.output
    assert spun.exit_code == 0, spun.output
    assert slept.output.split(";")[0] == spun.output.split(";")[0]  # arrivals N
    assert slept.output.split("; ")[-1] == spun.output.split("; ")[-1]  # N result rows
    result = cq(*args, "--spin", "-0.5")
    assert result.exit_code == 2
    assert "--spin" in result.output


def test_replay_refuses_a_speed_that_is_not_positive():
    result = CliRunner().invoke(
        cli, ["replay", str(SCRIPT), "--input", f"readings={READINGS}", "--speed", "0"]
    )
    assert result.exit_code == 2
    assert "--speed" in result.output
    assert "0.0 is not in the range x>0" in result.output
