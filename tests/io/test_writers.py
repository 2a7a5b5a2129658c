"""Per-query output writers: CSV, Parquet and JSON Lines round-trips, empty outputs, JSON text."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from cq_py.io.readers import open_input
from cq_py.io.writers import QueryWriter, encode_json_lines, open_writer

FORMATS = ["csv", "parquet", "jsonl"]

SCHEMA = pa.schema(
    [
        ("sensor", pa.string()),
        ("temp", pa.float64()),
        ("n", pa.int64()),
        ("ok", pa.bool_()),
        ("ts", pa.int64()),
    ]
)


def result_batches(n: int = 500, size: int = 64) -> list[pa.RecordBatch]:
    rng = np.random.default_rng(3)
    sensor = np.array(["boiler", "", 'q"uote', "com,ma", "new\nline", "é😀"], dtype=object)[
        rng.integers(0, 6, n)
    ]
    sensor[::31] = None
    table = pa.table(
        {
            "sensor": pa.array(sensor, pa.string()),
            "temp": pa.array(np.round(rng.normal(25, 8, n), 3), mask=rng.random(n) < 0.05),
            "n": pa.array(rng.integers(-(2**40), 2**40, n), pa.int64()),
            "ok": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.05),
            "ts": pa.array(np.cumsum(rng.integers(0, 10, n)), pa.int64()),
        },
        schema=SCHEMA,
    )
    return table.to_batches(max_chunksize=size)


def read_back(path: str, fmt: str) -> pa.Table:
    if fmt == "parquet":
        return pq.read_table(path)
    user = pa.schema([f for f in SCHEMA if f.name != "ts"])
    return pa.Table.from_batches(list(open_input(path, schema=user)), schema=None)


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip(tmp_path: Path, fmt: str) -> None:
    batches = result_batches()
    with open_writer(tmp_path / "out", "hot", fmt, SCHEMA) as writer:  # type: ignore[arg-type]
        for b in batches:
            writer.write(b)
    assert writer.path == str(tmp_path / "out" / f"hot.{fmt}")
    assert writer.rows == 500
    got = read_back(writer.path, fmt).select(SCHEMA.names)
    assert got.equals(pa.Table.from_batches(batches)), got.schema


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_query_without_rows_still_gets_a_file(tmp_path: Path, fmt: str) -> None:
    writer = open_writer(tmp_path, "quiet", fmt, SCHEMA)  # type: ignore[arg-type]
    assert not writer.opened
    writer.close()
    path = Path(writer.path)
    assert path.exists()
    assert writer.rows == 0
    if fmt == "csv":
        assert path.read_text() == '"sensor","temp","n","ok","ts"\n'
    elif fmt == "parquet":
        table = pq.read_table(path)
        assert table.num_rows == 0
        assert table.schema.names == SCHEMA.names
    else:
        assert path.read_bytes() == b""


def test_schema_comes_from_the_first_batch_when_not_given(tmp_path: Path) -> None:
    writer = QueryWriter(tmp_path / "q.parquet", "parquet")
    writer.write(pa.record_batch({"a": [1, 2]}))
    writer.write(pa.record_batch({"a": [3]}))
    writer.close()
    assert pq.read_table(writer.path).column("a").to_pylist() == [1, 2, 3]


def test_batches_are_cast_to_the_file_schema(tmp_path: Path) -> None:
    # A column that was all-null in an early batch must not fix the file's type to null.
    schema = pa.schema([("x", pa.float64()), ("ts", pa.int64())])
    writer = QueryWriter(tmp_path / "q.csv", "csv", schema)
    writer(pa.record_batch({"x": pa.nulls(2), "ts": pa.array([1, 2])}))  # callable, for subscribe
    writer(pa.record_batch({"x": pa.array([1.5], pa.float32()), "ts": pa.array([3], pa.int32())}))
    writer.close()
    assert Path(writer.path).read_text() == '"x","ts"\n,1\n,2\n1.5,3\n'


def test_tables_are_accepted_too(tmp_path: Path) -> None:
    table = pa.Table.from_batches(result_batches(100, 30))
    for fmt in FORMATS:
        with open_writer(tmp_path, "t", fmt) as w:  # type: ignore[arg-type]
            w.write(table)
        assert read_back(w.path, fmt).select(SCHEMA.names).equals(table)


def test_write_after_close_and_unknown_format(tmp_path: Path) -> None:
    w = QueryWriter(tmp_path / "q.csv", "csv", SCHEMA)
    w.close()
    w.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        w.write(result_batches(3)[0])
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        open_writer(tmp_path, "q", "xml")  # type: ignore[arg-type]


def test_empty_batches_write_nothing(tmp_path: Path) -> None:
    with open_writer(tmp_path, "e", "jsonl", SCHEMA) as w:
        w.write(result_batches(10)[0].slice(0, 0))
    assert Path(w.path).read_bytes() == b""
    assert w.rows == 0


# -- JSON Lines text --------------------------------------------------------------------------


def test_json_lines_match_python_json() -> None:
    table = pa.Table.from_batches(result_batches(200))
    lines = encode_json_lines(table).decode("utf-8").split("\n")
    assert lines[-1] == ""
    assert len(lines) == 201
    assert [json.loads(line) for line in lines[:-1]] == table.to_pylist()


def test_json_special_values() -> None:
    batch = pa.record_batch(
        {
            "f": [float("nan"), float("inf"), -0.0, 30.0, 1e20, 2.5e-7],
            "n": pa.nulls(6),
            "d": pa.array(["x", "y", "x", None, "x", "y"]).dictionary_encode(),
            "t": pa.array([0, 1, 2, 3, None, 5], pa.timestamp("ms")),
        }
    )
    rows = [json.loads(line) for line in encode_json_lines(batch).splitlines()]
    assert [r["f"] for r in rows] == [None, None, -0.0, 30.0, 1e20, 2.5e-7]
    # A whole float stays a float in the text, so readers do not infer an integer column.
    assert b'"f":30.0' in encode_json_lines(batch)
    assert all(r["n"] is None for r in rows)
    assert [r["d"] for r in rows] == ["x", "y", "x", None, "x", "y"]
    assert rows[1]["t"] == "1970-01-01T00:00:00.001"
    assert rows[4]["t"] is None


def test_json_rejects_nested_types_clearly() -> None:
    with pytest.raises(TypeError, match="use --format parquet"):
        encode_json_lines(pa.record_batch({"l": pa.array([[1, 2]])}))


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs",)))),
        min_size=1,
        max_size=20,
    ),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20),
)
def test_json_strings_and_floats_survive_any_content(
    strings: list[str | None], floats: list[float]
) -> None:
    n = min(len(strings), len(floats))
    batch = pa.record_batch(
        {"s": pa.array(strings[:n], pa.string()), 'we"ird\nkey': pa.array(floats[:n], pa.float64())}
    )
    rows = [json.loads(line) for line in encode_json_lines(batch).decode().split("\n")[:-1]]
    assert [r["s"] for r in rows] == strings[:n]
    want = [x if math.isfinite(x) else None for x in floats[:n]]
    assert [r['we"ird\nkey'] for r in rows] == want
