"""Streaming input readers and the time-ordered merge the command line feeds the engine with.

Every reader yields :class:`pyarrow.RecordBatch` es of at most ``batch_size`` rows and holds one
block of the file in memory at a time, so a file of any size streams in bounded memory.

>>> import pyarrow as pa, pyarrow.csv as pacsv, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "s.csv")
>>> pacsv.write_csv(pa.table({"ts": [1, 2, 3], "v": [1.0, 2.0, 3.0]}), path)
>>> [b.num_rows for b in open_input(path, batch_size=2)]
[2, 1]
"""

from __future__ import annotations

import csv
import heapq
import io
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from cq_py.errors import ArgumentError, InputError
from cq_py.ticks import UNITS, to_ticks

__all__ = [
    "FORMATS",
    "Format",
    "detect_format",
    "merge_by_time",
    "open_input",
    "row_count",
    "source_line",
]

Format = Literal["csv", "parquet", "jsonl"]

#: The input formats and the file extensions that select them.
FORMATS: dict[Format, tuple[str, ...]] = {
    "csv": (".csv", ".tsv"),
    "parquet": (".parquet", ".pq"),
    "jsonl": (".jsonl", ".ndjson", ".json"),
}

# pyarrow decompresses CSV and JSON transparently when the path ends with one of these.
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".zst", ".lz4", ".br")

# Bounds on the byte block the CSV/JSON parsers read at once. The floor keeps a wide header or a
# long row inside the first block (pyarrow refuses a row that straddles too many blocks); the
# ceiling stays well inside pyarrow's int32 block size.
_MIN_BLOCK_BYTES = 1 << 16
_MAX_BLOCK_BYTES = 1 << 28
_SAMPLE_BYTES = 1 << 16


def detect_format(path: str | os.PathLike[str]) -> Format:
    """The format of ``path`` from its extension (a trailing compression suffix is ignored).

    >>> detect_format("data/readings.csv.gz"), detect_format("x.pq"), detect_format("x.ndjson")
    ('csv', 'parquet', 'jsonl')
    """
    name = os.fspath(path).lower()
    for suffix in _COMPRESSION_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    for fmt, extensions in FORMATS.items():
        if name.endswith(extensions):
            return fmt
    known = ", ".join(ext for exts in FORMATS.values() for ext in exts)
    raise InputError(
        f"cannot tell the format of {os.fspath(path)!r} from its extension: expected one of {known}"
    )


def _normalize_format(fmt: str | None, path: str | os.PathLike[str]) -> Format:
    if fmt is None:
        return detect_format(path)
    lowered = fmt.lower()
    aliases: dict[str, Format] = {
        "csv": "csv",
        "parquet": "parquet",
        "pq": "parquet",
        "jsonl": "jsonl",
        "ndjson": "jsonl",
        "json": "jsonl",
    }
    if lowered not in aliases:
        raise InputError(f"unknown input format {fmt!r}: expected csv, parquet or jsonl")
    return aliases[lowered]


def row_count(path: str | os.PathLike[str], format: str | None = None) -> int | None:
    """Rows in ``path`` when that is cheap to know (Parquet footer metadata), else ``None``.

    >>> row_count("readings.csv") is None
    True
    """
    try:
        fmt = _normalize_format(format, path)
    except InputError:
        return None
    if fmt != "parquet":
        return None
    try:
        rows: int = pq.ParquetFile(os.fspath(path)).metadata.num_rows
        return rows
    except (OSError, pa.ArrowException):
        return None


def open_input(
    path: str | os.PathLike[str],
    format: str | None = None,
    batch_size: int = 65536,
    *,
    schema: pa.Schema | None = None,
    block_size: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Stream the rows of a CSV, Parquet or JSON Lines file as record batches.

    The format comes from the extension (``.csv``/``.tsv``, ``.parquet``/``.pq``,
    ``.jsonl``/``.ndjson``/``.json``, optionally followed by ``.gz`` etc.) unless ``format`` is
    given. Batches hold at most ``batch_size`` rows; memory is bounded by one parser block
    (``block_size`` bytes, by default sized from a sample to hold about ``batch_size`` rows), never
    by the file size.

    ``schema`` gives the types of the columns it names (other columns, such as the timestamp, are
    inferred). Pass a stream's declared schema: CSV and JSON inference looks at the first block
    only, so a column that is empty there would otherwise be typed ``null`` and fail later.

    In CSV, an unquoted empty cell is null (``""`` is the empty string); nothing else is. In JSON
    Lines, a missing key is null. Parquet is decoded one row group at a time, so there the bound
    is the writer's row-group size.

    Errors (missing file, unreadable or malformed content) raise :class:`cq_py.InputError` naming
    the file.

    >>> for batch in open_input("readings.parquet", batch_size=1000):  # doctest: +SKIP
    ...     engine.push("readings", batch)
    """
    if batch_size <= 0:
        raise ArgumentError(f"batch_size must be positive, got {batch_size!r}")
    fmt = _normalize_format(format, path)
    spath = os.fspath(path)
    if not Path(spath).exists():
        raise InputError(f"input file {spath!r} does not exist")
    if Path(spath).is_dir():
        raise InputError(f"input path {spath!r} is a directory, expected a file")
    return _guarded(_open(spath, fmt, batch_size, schema, block_size), spath, fmt, schema)


def _open(
    path: str, fmt: Format, batch_size: int, schema: pa.Schema | None, block_size: int | None
) -> Iterator[pa.RecordBatch]:
    if fmt == "parquet":
        pf = pq.ParquetFile(path)
        batches: Iterable[pa.RecordBatch] = pf.iter_batches(batch_size=batch_size)
        if schema is not None:
            batches = (_conform(b, schema) for b in batches)
        yield from batches
        return
    blocks = block_size or _block_size_for(path, batch_size)
    if fmt == "csv":
        delimiter = "\t" if _strip_compression(path).lower().endswith(".tsv") else ","
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=blocks),
            # Quoted values may hold line breaks (cq's own writer emits them as they are), so the
            # block splitter must respect quotes.
            parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types={f.name: f.type for f in schema} if schema is not None else None,
                # Only a truly empty cell is null, so that sensor "NA" stays a string and what
                # cq's own CSV writer produces (nulls empty, strings quoted) reads back unchanged.
                null_values=[""],
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
            ),
        )
    else:
        parse = pajson.ParseOptions(
            explicit_schema=schema if schema is not None else None,
            unexpected_field_behavior="infer",
        )
        reader = pajson.open_json(
            path, read_options=pajson.ReadOptions(block_size=blocks), parse_options=parse
        )
    with reader:
        for batch in reader:
            yield from _split(batch, batch_size)


def _guarded(
    batches: Iterator[pa.RecordBatch], path: str, fmt: Format, schema: pa.Schema | None = None
) -> Iterator[pa.RecordBatch]:
    # Readers fail lazily (the first block is parsed on first next()); turn pyarrow's errors into
    # one exception type that names the file, so callers need not know pyarrow's.
    rows = 0
    try:
        for batch in batches:
            yield batch
            rows += batch.num_rows
    except InputError:
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        label = {"csv": "CSV", "parquet": "Parquet", "jsonl": "JSON Lines"}[fmt]
        located = _locate_csv_error(path, str(exc), rows, schema) if fmt == "csv" else None
        if located is not None:
            row, message = located
            raise InputError(f"cannot read {path!r} as CSV: {message}", row=row) from exc
        raise InputError(f"cannot read {path!r} as {label}: {exc}") from exc


# -- where in a file: the line an editor shows --------------------------------------------------
# pyarrow's CSV errors name a column by its 0-based number and no line; these look the place up
# again with Python's csv module, only after an error.

_CONVERSION = re.compile(
    r"In CSV column #(\d+): CSV conversion error to (\w+): invalid value '(.*)'$", re.DOTALL
)
_COLUMNS = re.compile(r"CSV parse error: Expected (\d+) columns?, got (\d+)")
_CQL_TYPES = {
    pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE",
    pa.string(): "VARCHAR",
    pa.bool_(): "BOOLEAN",
}


def _csv_records(path: str) -> Iterator[tuple[int, list[str]]]:
    """The header and every data record of a CSV file as (the line it starts on, its fields),
    skipping empty lines as pyarrow does."""
    delimiter = "\t" if _strip_compression(path).lower().endswith(".tsv") else ","
    # input_stream decompresses by extension, as pyarrow's reader does.
    with io.TextIOWrapper(pa.input_stream(path), encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        end = 0
        for record in reader:
            start, end = end + 1, reader.line_num
            if record:
                yield start, record


def source_line(path: str | os.PathLike[str], row: int) -> int | None:
    """The 1-based line of a CSV or JSON Lines file on which its data row ``row`` (0-based,
    after a CSV's header) starts, as an editor shows it; None for Parquet or when the file
    cannot be read again. An error path: it reads the file up to that row in Python.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "s.csv")
    >>> _ = open(path, "w").write('ts,note\\n1,"two\\nlines"\\n\\n2,x\\n')
    >>> source_line(path, 1)
    5
    """
    spath = os.fspath(path)
    try:
        fmt = detect_format(spath)
        if fmt == "csv":
            for i, (line, _) in enumerate(_csv_records(spath)):
                if i == row + 1:  # the header comes first
                    return line
        elif fmt == "jsonl":
            with io.TextIOWrapper(pa.input_stream(spath), encoding="utf-8-sig") as f:
                seen = -1
                for number, text in enumerate(f, 1):
                    if text.strip():
                        seen += 1
                        if seen == row:
                            return number
    except (OSError, ValueError, csv.Error, pa.ArrowException, InputError):
        pass
    return None


def _locate_csv_error(
    path: str, message: str, first: int, schema: pa.Schema | None
) -> tuple[int, str] | None:
    """The data row and a message naming the line and the column by name for pyarrow's CSV
    conversion and column-count errors, looked for from data row ``first`` on (the rows before
    were read); None when the message is another or the place is not found."""
    conversion, count = _CONVERSION.search(message), _COLUMNS.search(message)
    if conversion is None and count is None:
        return None
    try:
        records = _csv_records(path)
        _, header = next(records)
        for row, (line, record) in enumerate(records):
            if row < first:
                continue
            if count is not None and len(record) != len(header):
                return row, (
                    f"line {line} has {len(record)} fields, the header "
                    f"{len(header)} ({', '.join(header)})"
                )
            if conversion is not None:
                index, arrow_type, value = int(conversion[1]), conversion[2], conversion[3]
                if index < len(record) and record[index] == value:
                    name = header[index] if index < len(header) else f"#{index + 1}"
                    declared = (
                        schema.field(name).type
                        if schema is not None and name in schema.names
                        else None
                    )
                    want = (
                        _CQL_TYPES.get(declared, str(declared))
                        if declared is not None
                        else f"{arrow_type} (as in the rows before it)"
                    )
                    return row, f"line {line}, column '{name}': expected {want}, found {value!r}"
    except (OSError, ValueError, csv.Error, pa.ArrowException, StopIteration):
        pass
    return None


def _strip_compression(path: str) -> str:
    for suffix in _COMPRESSION_SUFFIXES:
        if path.lower().endswith(suffix):
            return path[: -len(suffix)]
    return path


def _block_size_for(path: str, batch_size: int) -> int:
    """Bytes per parser block so that one block holds about ``batch_size`` rows."""
    try:
        # input_stream decompresses by extension, so the sample measures decoded rows.
        with pa.input_stream(path) as stream:
            sample = stream.read(_SAMPLE_BYTES)
    except (OSError, pa.ArrowException):
        return _MIN_BLOCK_BYTES  # the reader itself will report the problem
    lines = sample.count(b"\n")
    per_row = len(sample) / lines if lines else len(sample) or 64
    wanted = int(per_row * batch_size * 1.1)
    return max(_MIN_BLOCK_BYTES, min(_MAX_BLOCK_BYTES, wanted))


def _split(batch: pa.RecordBatch, batch_size: int) -> Iterator[pa.RecordBatch]:
    # Slices are zero-copy views into the parsed block.
    for start in range(0, batch.num_rows, batch_size):
        yield batch.slice(start, batch_size)


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Cast the columns ``schema`` names to its types (Parquet files carry their own types)."""
    wanted = {f.name: f.type for f in schema}
    if all(f.name not in wanted or f.type == wanted[f.name] for f in batch.schema):
        return batch
    fields = [pa.field(f.name, wanted.get(f.name, f.type), nullable=True) for f in batch.schema]
    try:
        return batch.cast(pa.schema(fields))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"columns do not match the declared types {schema}: {exc}") from exc


# --------------------------------------------------------------------------------------------
# merge_by_time


def _ts_keys(
    batch: pa.RecordBatch, name: str, ts: str, time_unit: str | None, base: int = 0
) -> np.ndarray:
    """The timestamps of ``batch`` as int64 on one scale, so that inputs compare with each other.
    Errors name the row counted from the input's first (``base`` rows come before ``batch``)."""
    index = batch.schema.get_field_index(ts)
    if index < 0:
        raise InputError(
            f"input {name!r} has no timestamp column {ts!r}: found columns "
            f"{', '.join(batch.schema.names) or '(none)'}",
            stream=name,
        )
    col = batch.column(index)
    if col.null_count:
        # Report the first offending row; vectorized, no scan in Python.
        row = base + int(pc.index(pc.is_null(col), True).as_py())
        raise InputError(
            f"input {name!r}: null timestamp in column {ts!r} at row {row}", stream=name, row=row
        )
    # Integers are ticks of the engine's unit; timestamps are brought to that unit (or to ns when
    # the unit is not an Arrow one) so both kinds of input line up, as the engine will see them.
    try:
        ticks = to_ticks(
            col,
            time_unit if time_unit in UNITS else "ns",
            where=f"input {name!r}",
            column=ts,
            stream=name,
        )
    except InputError as exc:
        if exc.row is None:
            raise
        raise InputError(
            exc.message.replace(f"row {exc.row} ", f"row {base + exc.row} ", 1),
            stream=name,
            row=base + exc.row,
        ) from None
    values: np.ndarray = ticks.to_numpy(zero_copy_only=False)
    return values


class _Head:
    """The unconsumed part of one input's current batch and its timestamps."""

    __slots__ = ("batch", "it", "keys", "name", "rows")

    def __init__(self, name: str, it: Iterator[pa.RecordBatch]):
        self.name = name
        self.it = it
        self.batch: pa.RecordBatch | None = None
        self.keys: np.ndarray = np.empty(0, dtype=np.int64)
        self.rows = 0  # rows of this input taken so far

    def refill(self, ts: str, time_unit: str | None) -> bool:
        """Load the next non-empty batch; False when the input is exhausted."""
        for batch in self.it:
            if batch.num_rows:
                self.keys = _ts_keys(batch, self.name, ts, time_unit, self.rows)
                self.batch = batch
                return True
        self.batch = None
        return False

    def take(self, n: int) -> pa.RecordBatch:
        assert self.batch is not None
        out = self.batch.slice(0, n)
        self.batch = self.batch.slice(n)
        self.rows += n
        self.keys = self.keys[n:]
        return out


def merge_by_time(
    named_iterators: Mapping[str, Iterable[pa.RecordBatch]],
    ts: str = "ts",
    *,
    time_unit: str | None = "ms",
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Interleave several time-ordered inputs into one sequence of ``(name, batch)`` in time order.

    A k-way merge at the batch level, in rounds: the head batch of every input is held, the
    round's bound ``B`` is the smallest *last* timestamp among the heads, and every head is cut at
    ``B`` (binary search, zero-copy slice). All rows of a round have timestamps in ``(B_prev, B]``,
    so any row yielded in a later round is later than every row of an earlier round; within a round
    the slices come in order of their first timestamp. Hence the first timestamps of the yielded
    batches never decrease, and a batch is never older than anything yielded ``len(inputs)``
    batches before it. Each input's own rows keep their order; rows with equal timestamps from
    different inputs may come in any order.

    The inputs must each be in non-decreasing time order: this is not checked here (the engine
    reports a violation with both timestamps), but every row is still yielded exactly once.
    Integer timestamps are ticks of ``time_unit``; Arrow timestamps are converted to it.

    >>> import pyarrow as pa
    >>> a = [pa.record_batch({"ts": [1, 4, 9]})]
    >>> b = [pa.record_batch({"ts": [2, 3]}), pa.record_batch({"ts": [9, 10]})]
    >>> [(n, x.column(0).to_pylist()) for n, x in merge_by_time({"a": a, "b": b})]
    [('a', [1]), ('b', [2, 3]), ('a', [4, 9]), ('b', [9]), ('b', [10])]
    """
    heads = [_Head(name, iter(batches)) for name, batches in named_iterators.items()]
    live = [h for h in heads if h.refill(ts, time_unit)]
    while live:
        bound = min(int(h.keys[-1]) for h in live)
        cuts: list[tuple[int, int, _Head, int]] = []
        for order, head in enumerate(live):
            if int(head.keys[-1]) == bound:
                # The head that sets the bound goes whole, even if out of order inside, so every
                # round makes progress and no row is lost or repeated.
                n = len(head.keys)
            else:
                n = int(np.searchsorted(head.keys, bound, side="right"))
            if n:
                cuts.append((int(head.keys[0]), order, head, n))
        # heapq on (first ts, input order): the round's slices in time order, stable on ties.
        heapq.heapify(cuts)
        while cuts:
            _, _, head, n = heapq.heappop(cuts)
            yield head.name, head.take(n)
        live = [h for h in live if h.keys.size or h.refill(ts, time_unit)]
