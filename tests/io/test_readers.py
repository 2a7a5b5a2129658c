"""Streaming readers (CSV, Parquet, JSON Lines) and the batch-level time merge."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from cq_py.errors import InputError
from cq_py.io.readers import detect_format, merge_by_time, open_input, row_count

SCHEMA = pa.schema(
    [
        ("sensor", pa.string()),
        ("temp", pa.float64()),
        ("humidity", pa.float64()),
        ("ok", pa.bool_()),
    ]
)


def sample_table(n: int = 1000) -> pa.Table:
    rng = np.random.default_rng(7)
    sensors = np.array(["a", "b", "c,d", 'say "hi"'])[rng.integers(0, 4, n)].astype(object)
    sensors[::97] = None
    sensors[min(5, n - 1)] = ""  # the empty string is not null
    humidity = pa.array(np.round(rng.uniform(0, 100, n), 1), mask=rng.random(n) < 0.1)
    return pa.table(
        {
            "ts": pa.array(np.cumsum(rng.integers(0, 5, n)), pa.int64()),
            "sensor": pa.array(sensors, pa.string()),
            "temp": pa.array(np.round(rng.normal(20, 5, n), 2)),
            "humidity": humidity,
            "ok": pa.array(rng.random(n) < 0.5),
        }
    )


def write_as(table: pa.Table, path: Path) -> Path:
    fmt = detect_format(path)
    if fmt == "csv":
        pacsv.write_csv(table, path)
    elif fmt == "parquet":
        pq.write_table(table, path, row_group_size=300)
    else:
        # Written independently of cq's own JSON writer.
        lines = [json.dumps(row) for row in table.to_pylist()]
        path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "name", ["in.csv", "in.parquet", "in.pq", "in.jsonl", "in.ndjson", "in.json", "in.csv.gz"]
)
def test_each_format_gives_the_same_data_in_bounded_batches(tmp_path: Path, name: str) -> None:
    table = sample_table()
    path = tmp_path / name
    if name.endswith(".gz"):
        with pa.CompressedOutputStream(str(path), "gzip") as out:
            pacsv.write_csv(table, out)
    else:
        write_as(table, path)
    batches = list(open_input(path, batch_size=128, schema=SCHEMA))
    assert all(0 < b.num_rows <= 128 for b in batches)
    assert len(batches) >= 1000 // 128
    got = pa.Table.from_batches(batches).select(table.column_names)
    assert got.equals(table), (got.schema, table.schema)


def test_format_argument_overrides_the_extension(tmp_path: Path) -> None:
    table = sample_table(50)
    path = tmp_path / "readings.txt"
    pacsv.write_csv(table, path)
    with pytest.raises(InputError, match=r"cannot tell the format .*readings\.txt"):
        open_input(path)
    got = pa.Table.from_batches(list(open_input(path, format="csv", schema=SCHEMA)))
    assert got.select(table.column_names).equals(table)


def test_detect_format() -> None:
    assert detect_format("x.CSV") == "csv"
    assert detect_format("dir.d/x.tsv") == "csv"
    assert detect_format("x.parquet") == detect_format("x.pq") == "parquet"
    assert {detect_format(f"x.{e}") for e in ("jsonl", "ndjson", "json", "jsonl.gz")} == {"jsonl"}
    with pytest.raises(InputError, match=r"expected one of \.csv"):
        detect_format("x.xlsx")


def test_unknown_format_name(tmp_path: Path) -> None:
    path = write_as(sample_table(5), tmp_path / "a.csv")
    with pytest.raises(InputError, match="unknown input format 'xml'"):
        open_input(path, format="xml")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        open_input(tmp_path / "nope.csv")
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        open_input(tmp_path / "d.csv")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("bad.parquet", b"this is not parquet"),
        ("bad.csv", b"ts,temp\n1,2.5\n2,warm\n"),
        ("bad.jsonl", b'{"ts": 1, "temp": 2.5}\n{"ts": 2, "temp": \n'),
    ],
)
def test_malformed_content_is_an_input_error_naming_the_file(
    tmp_path: Path, name: str, content: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    schema = pa.schema([("temp", pa.float64())])
    with pytest.raises(InputError, match=f"cannot read .*{name}"):
        list(open_input(path, schema=schema))


def test_declared_types_survive_a_first_block_without_values(tmp_path: Path) -> None:
    # Inference looks at the first block only; the declared schema must win over it.
    n = 5000
    humidity = pa.array([None] * (n - 10) + [50.5] * 10, pa.float64())
    table = pa.table({"ts": pa.array(range(n), pa.int64()), "humidity": humidity})
    path = tmp_path / "late.csv"
    pacsv.write_csv(table, path)
    schema = pa.schema([("humidity", pa.float64())])
    batches = list(open_input(path, batch_size=1000, schema=schema, block_size=4096))
    assert pa.Table.from_batches(batches).equals(table)


def test_parquet_columns_are_cast_to_the_declared_types(tmp_path: Path) -> None:
    path = tmp_path / "i.parquet"
    pq.write_table(
        pa.table({"ts": [1, 2], "v": pa.array([1, 2], pa.int32()), "s": ["1", "x"]}), path
    )
    (batch,) = open_input(path, schema=pa.schema([("v", pa.int64())]))
    assert batch.schema.field("v").type == pa.int64()
    with pytest.raises(InputError, match="declared types"):
        list(open_input(path, schema=pa.schema([("s", pa.int64())])))


def test_csv_reading_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    # pyarrow reads a few dozen blocks ahead (~2 MB here) whatever the file size.
    n = 800_000
    table = pa.table(
        {"ts": pa.array(np.arange(n), pa.int64()), "temp": pa.array(np.linspace(0, 1, n))}
    )
    path = tmp_path / "big.csv"
    pacsv.write_csv(table, path)
    size = path.stat().st_size
    base = pa.total_allocated_bytes()
    peak = 0
    rows = 0
    for batch in open_input(path, batch_size=1000):
        assert batch.num_rows <= 1000
        rows += batch.num_rows
        peak = max(peak, pa.total_allocated_bytes() - base)
    assert rows == n
    assert peak < size / 5, (peak, size)


def test_row_count_is_known_for_parquet_only(tmp_path: Path) -> None:
    table = sample_table(321)
    assert row_count(write_as(table, tmp_path / "a.parquet")) == 321
    assert row_count(write_as(table, tmp_path / "a.csv")) is None
    assert row_count(tmp_path / "a.unknown") is None


# -- merge_by_time --------------------------------------------------------------------------


def batches_of(ts: list[int], size: int, start_id: int = 0) -> list[pa.RecordBatch]:
    table = pa.table(
        {
            "ts": pa.array(ts, pa.int64()),
            "id": pa.array(range(start_id, start_id + len(ts)), pa.int64()),
        }
    )
    return table.to_batches(max_chunksize=size) if len(ts) else []


def test_merge_example() -> None:
    a = batches_of([1, 4, 9], 3)
    b = batches_of([2, 3], 2) + batches_of([9, 10], 2)
    got = [(n, x.column("ts").to_pylist()) for n, x in merge_by_time({"a": a, "b": b})]
    assert got == [("a", [1]), ("b", [2, 3]), ("a", [4, 9]), ("b", [9]), ("b", [10])]


inputs_strategy = st.lists(
    st.tuples(st.lists(st.integers(0, 60), max_size=80).map(sorted), st.integers(1, 25)),
    min_size=1,
    max_size=5,
)


@settings(max_examples=examples(300), deadline=None)
@given(inputs_strategy)
def test_merge_is_time_ordered_and_complete(inputs: list[tuple[list[int], int]]) -> None:
    named = {f"s{i}": batches_of(ts, size) for i, (ts, size) in enumerate(inputs)}
    out = list(merge_by_time(named))
    k = len(inputs)

    # Every row exactly once, and each input's rows in their own order.
    seen = Counter((name, i) for name, b in out for i in b.column("id").to_pylist())
    assert seen == Counter((f"s{j}", i) for j, (ts, _) in enumerate(inputs) for i in range(len(ts)))
    for j in range(k):
        ids = [i for name, b in out if name == f"s{j}" for i in b.column("id").to_pylist()]
        assert ids == sorted(ids)

    assert all(b.num_rows > 0 for _, b in out)
    lo = [b.column("ts")[0].as_py() for _, b in out]
    hi = [b.column("ts")[-1].as_py() for _, b in out]
    # Batch starts never go back in time ...
    assert lo == sorted(lo)
    # ... and a batch is never older than anything yielded k batches (one round) before it.
    for j in range(len(out)):
        for i in range(j - k + 1):
            assert hi[i] <= lo[j]


def test_merge_does_not_read_ahead_more_than_one_batch_per_input() -> None:
    pulled = Counter()

    def source(name: str, start: int):
        for r in range(50):
            pulled[name] += 1
            ts = pa.array([start + 10 * r, start + 10 * r + 5], pa.int64())
            yield pa.record_batch({"ts": ts})

    total = 0
    for _, batch in merge_by_time({"a": source("a", 0), "b": source("b", 3)}):
        total += batch.num_rows
        # Rows handed out so far come from at most the batches pulled so far.
        assert total <= 2 * (pulled["a"] + pulled["b"])
        assert abs(pulled["a"] - pulled["b"]) <= 2
    assert total == 200


def test_merge_skips_empty_batches_and_inputs() -> None:
    empty = pa.record_batch({"ts": pa.array([], pa.int64())})
    got = list(merge_by_time({"a": [empty, *batches_of([1, 2], 5), empty], "b": [], "c": [empty]}))
    assert [(n, b.num_rows) for n, b in got] == [("a", 2)]


def test_merge_out_of_order_input_still_yields_every_row_once() -> None:
    # Disorder is the engine's to report; the merge must neither lose rows nor loop forever.
    a = batches_of([5, 1, 9, 2], 2)
    b = batches_of([0, 3, 4, 8], 3, start_id=100)
    out = list(merge_by_time({"a": a, "b": b}))
    ids = sorted(i for _, x in out for i in x.column("id").to_pylist())
    assert ids == [0, 1, 2, 3, 100, 101, 102, 103]


def test_merge_compares_timestamps_of_different_units() -> None:
    secs = pa.record_batch({"ts": pa.array([1, 3], pa.timestamp("s")), "src": ["s", "s"]})
    millis = pa.record_batch(
        {"ts": pa.array([1500, 2500, 3500], pa.timestamp("ms")), "src": ["m"] * 3}
    )
    out = list(merge_by_time({"s": [secs], "m": [millis]}, time_unit="ms"))
    got = [(n, b.column("src").to_pylist(), b.num_rows) for n, b in out]
    # Round 1 is cut at 3 s = 3000 ms: compared in raw units, 3 would sort before 1500.
    assert got == [("s", ["s", "s"], 2), ("m", ["m", "m"], 2), ("m", ["m"], 1)]


def test_merge_mixes_integer_ticks_and_timestamps_in_the_engine_unit() -> None:
    ticks = pa.record_batch({"ts": pa.array([1000, 2000], pa.int64())})  # ms ticks
    stamps = pa.record_batch({"ts": pa.array([1, 1500_000], pa.timestamp("us"))})
    out = list(merge_by_time({"t": [ticks], "u": [stamps]}, time_unit="ms"))
    # 1 us and 1.5 s are 0 and 1500 ms: the bound is 1500, so tick 1000 comes before tick 2000.
    assert [(n, b.num_rows) for n, b in out] == [("u", 2), ("t", 1), ("t", 1)]


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (pa.record_batch({"time": pa.array([1], pa.int64())}), "no timestamp column 'ts'.*time"),
        (pa.record_batch({"ts": pa.array([1, None], pa.int64())}), "null timestamp"),
        (
            pa.record_batch({"ts": pa.array(["2024-01-01"])}),
            "integers \\(ticks\\) or an Arrow timestamp",
        ),
    ],
)
def test_merge_rejects_unusable_timestamps(batch: pa.RecordBatch, message: str) -> None:
    with pytest.raises(InputError, match=message):
        list(merge_by_time({"s": [batch]}))


def test_merge_of_readers_over_files(tmp_path: Path) -> None:
    table = sample_table(700)
    a = write_as(table.slice(0, 400), tmp_path / "a.csv")
    b = write_as(table.slice(400), tmp_path / "b.parquet")
    out = list(
        merge_by_time(
            {
                "a": open_input(a, batch_size=50, schema=SCHEMA),
                "b": open_input(b, batch_size=64, schema=SCHEMA),
            }
        )
    )
    assert sum(x.num_rows for _, x in out) == 700
    lo = [x.column("ts")[0].as_py() for _, x in out]
    assert lo == sorted(lo)


def test_csv_quoted_line_breaks_across_blocks(tmp_path: Path) -> None:
    # cq's own CSV writer leaves line breaks inside quoted values; blocks must not split there.
    n = 3000
    table = pa.table(
        {
            "ts": pa.array(range(n), pa.int64()),
            "note": pa.array([f'line {i}\nmore, "quoted"' for i in range(n)]),
        }
    )
    path = tmp_path / "notes.csv"
    pacsv.write_csv(table, path)
    batches = list(open_input(path, batch_size=100, block_size=4096))
    assert pa.Table.from_batches(batches).equals(table)
