"""Per-query output writers: each query's results stream batch by batch into ``DIR/<query>.<ext>``.

A writer opens its file lazily, on the first batch (or at :meth:`QueryWriter.close` with the
schema it is given, so a query that produced no row still gets a file with its header/schema),
appends every batch as it comes (memory stays bounded by one batch) and closes at the end.

>>> import pyarrow as pa, tempfile
>>> out = tempfile.mkdtemp()
>>> with open_writer(out, "hot", "csv") as w:
...     w.write(pa.record_batch({"sensor": ["a"], "ts": [5]}))
>>> open(w.path).read()
'"sensor","ts"\\n"a",5\\n'
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import TracebackType
from typing import IO, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from cq_py.errors import ArgumentError

__all__ = ["EXTENSIONS", "OutputFormat", "QueryWriter", "encode_json_lines", "open_writer"]

OutputFormat = Literal["csv", "parquet", "jsonl"]

#: File extension written for each output format.
EXTENSIONS: dict[str, str] = {"csv": "csv", "parquet": "parquet", "jsonl": "jsonl"}


class QueryWriter:
    """Appends one query's result batches to ``path`` in ``format``.

    Use :func:`open_writer` to build one under an output directory. ``rows`` counts what was
    written. A batch whose schema differs from the file's (e.g. a column that was all-null, hence
    typed ``null``, in the first batch) is cast to the file's schema.

    With ``staged=True`` the rows go to a hidden temporary file beside ``path`` (``.NAME.partial``),
    which :meth:`commit` moves into place and :meth:`discard` removes: a run that fails half way
    leaves no partial file, and an earlier run's file stays as it was.

    >>> import pyarrow as pa, tempfile, os
    >>> w = QueryWriter(os.path.join(tempfile.mkdtemp(), "q.parquet"), "parquet")
    >>> w.write(pa.record_batch({"x": [1, 2]})); w.close(); w.rows
    2
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        format: OutputFormat,
        schema: pa.Schema | None = None,
        *,
        staged: bool = False,
    ):
        if format not in EXTENSIONS:
            raise ArgumentError(f"unknown output format {format!r}: expected csv, parquet or jsonl")
        self.path = os.fspath(path)
        target = Path(self.path)
        self.staged = staged
        # Beside the target, so that commit() is a rename within one file system.
        self._file = str(target.with_name(f".{target.name}.partial")) if staged else self.path
        self.format: OutputFormat = format
        self.schema = schema
        self.rows = 0
        self._writer: pacsv.CSVWriter | pq.ParquetWriter | None = None  # CSV and Parquet
        self._stream: IO[bytes] | None = None  # JSON Lines
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------

    def _open(self, schema: pa.Schema) -> None:
        self.schema = schema
        if self.format == "csv":
            self._writer = pacsv.CSVWriter(self._file, schema)
        elif self.format == "parquet":
            self._writer = pq.ParquetWriter(self._file, schema)
        else:
            self._stream = Path(self._file).open("wb")  # noqa: SIM115 - open until close()

    def _close_file(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._stream is not None:
            self._stream.close()

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Append ``batch`` (a record batch or a table) to the file, opening it on first use."""
        if self._closed:
            raise ValueError(f"writer for {self.path!r} is closed")
        if not self.opened:
            self._open(self.schema if self.schema is not None else batch.schema)
        assert self.schema is not None
        if batch.schema != self.schema:
            batch = batch.cast(self.schema)
        if batch.num_rows == 0:
            return
        if self._stream is not None:
            self._stream.write(encode_json_lines(batch))
        else:
            assert self._writer is not None  # opened above
            if isinstance(batch, pa.Table):
                self._writer.write_table(batch)
            else:
                self._writer.write_batch(batch)
        self.rows += batch.num_rows

    __call__ = write  # so a writer can be handed to ``Engine.subscribe`` directly

    def close(self, schema: pa.Schema | None = None) -> None:
        """Finish the file. If nothing was written, create it now with ``schema`` (or the one
        given at construction): a CSV gets its header line, a Parquet file its schema, a JSON
        Lines file is empty."""
        if self._closed:
            return
        if not self.opened:
            self._open(schema or self.schema or pa.schema([]))
        self._closed = True
        self._close_file()

    def commit(self, schema: pa.Schema | None = None) -> None:
        """Finish the file (as :meth:`close`) and, when staged, move it into place."""
        self.close(schema)
        if self.staged and Path(self._file).exists():
            Path(self._file).replace(self.path)

    def discard(self) -> None:
        """Give the output up: a staged writer's temporary file is removed (``path`` is left as
        it was); an unstaged writer's file is closed, as far as it was written."""
        if not self._closed:
            self._close_file()
        self._closed = True
        if self.staged:
            Path(self._file).unlink(missing_ok=True)

    @property
    def opened(self) -> bool:
        """Whether the file has been created (a batch came, or the writer was closed)."""
        return self._writer is not None or self._stream is not None

    def __enter__(self) -> QueryWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_writer(
    directory: str | os.PathLike[str],
    query: str,
    format: OutputFormat,
    schema: pa.Schema | None = None,
    *,
    staged: bool = False,
) -> QueryWriter:
    """A :class:`QueryWriter` for ``directory/<query>.<ext>``; the directory is created if needed.
    ``staged``: see :class:`QueryWriter`.

    >>> import tempfile
    >>> open_writer(tempfile.mkdtemp(), "hot", "jsonl").path.endswith("hot.jsonl")
    True
    """
    if format not in EXTENSIONS:
        raise ArgumentError(f"unknown output format {format!r}: expected csv, parquet or jsonl")
    Path(directory).mkdir(parents=True, exist_ok=True)
    return QueryWriter(
        Path(directory) / f"{query}.{EXTENSIONS[format]}", format, schema, staged=staged
    )


# --------------------------------------------------------------------------------------------
# JSON Lines, vectorized: every column becomes an array of JSON texts, then rows are joined
# element-wise. pyarrow has no JSON writer and pandas is not a runtime dependency.


def _concat(*parts: pa.Array | str) -> pa.Array:
    """Element-wise concatenation of large_string arrays and literal strings (null if any is)."""
    args = [pa.scalar(p, pa.large_string()) if isinstance(p, str) else p for p in parts]
    return pc.binary_join_element_wise(*args, pa.scalar("", pa.large_string()))


_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_string(arr: pa.Array) -> pa.Array:
    """JSON string literals (quoted, escaped) for a string array; nulls stay null."""
    arr = arr.cast(pa.large_string())
    # Backslash first, so the escapes added afterwards are not escaped again.
    arr = pc.replace_substring(arr, "\\", "\\\\")
    arr = pc.replace_substring(arr, '"', '\\"')
    if pc.any(pc.match_substring_regex(arr, "[\\x00-\\x1f]")).as_py():
        for code in range(0x20):
            char = chr(code)
            arr = pc.replace_substring(arr, char, _CONTROL_ESCAPES.get(char, f"\\u{code:04x}"))
    return _concat('"', arr, '"')


def _json_values(arr: pa.Array) -> pa.Array:
    """The JSON text of every value of ``arr`` (``null`` for nulls) as a large_string array."""
    t = arr.type
    if pa.types.is_dictionary(t):
        return _json_values(arr.cast(t.value_type))
    if pa.types.is_null(t):
        out = pa.nulls(len(arr), pa.large_string())
    elif pa.types.is_boolean(t):
        out = pc.if_else(
            arr, pa.scalar("true", pa.large_string()), pa.scalar("false", pa.large_string())
        )
    elif pa.types.is_integer(t) or pa.types.is_decimal(t):
        out = arr.cast(pa.large_string())
    elif pa.types.is_floating(t):
        text = arr.cast(pa.large_string())
        # Keep a float a float when read back ("30" would be inferred as an integer) and write
        # NaN/Infinity, which JSON cannot express, as null (as pandas and Spark do).
        integral = pc.invert(pc.match_substring_regex(text, "[.eEn]"))
        text = pc.if_else(integral, _concat(text, ".0"), text)
        out = pc.if_else(pc.is_finite(arr), text, pa.scalar(None, pa.large_string()))
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        out = _json_string(arr)
    elif pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        # ISO 8601 ("1970-01-01T00:00:00.001", "Z" for UTC), which pyarrow's JSON reader parses.
        text = arr.cast(pa.large_string())
        if pa.types.is_timestamp(t):
            text = pc.replace_substring(text, " ", "T", max_replacements=1)
        out = _json_string(text)
    else:
        raise TypeError(
            f"cannot write a column of type {t} as JSON Lines; "
            "use --format parquet for nested or binary data"
        )
    return pc.fill_null(out, pa.scalar("null", pa.large_string()))


def encode_json_lines(batch: pa.RecordBatch | pa.Table) -> bytes:
    """``batch`` as JSON Lines: one object per row, keys in column order, ``\\n`` after each.

    >>> import pyarrow as pa
    >>> encode_json_lines(pa.record_batch({"s": ['a"b', None], "x": [1.0, 2.5]}))
    b'{"s":"a\\\\"b","x":1.0}\\n{"s":null,"x":2.5}\\n'
    """
    if batch.num_rows == 0:
        return b""
    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks().to_batches()[0]
    parts: list[pa.Array | str] = []
    for i, name in enumerate(batch.schema.names):
        key = json.dumps(name) + ":"
        parts.append(("{" if i == 0 else ",") + key)
        parts.append(_json_values(batch.column(i)))
    parts.append("}\n" if parts else "{}\n")
    if not any(isinstance(p, pa.Array) for p in parts):
        rows: int = batch.num_rows
        return b"{}\n" * rows
    lines = _concat(*parts)
    # The row texts are contiguous in the result's data buffer: hand that range over as is.
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)
    start, end = offsets[lines.offset], offsets[lines.offset + len(lines)]
    text: bytes = lines.buffers()[2][start:end].to_pybytes()
    return text
