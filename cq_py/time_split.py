"""``cq_py.run(..., threads=N)`` split by time: where the input's slices and their warm-ups start.

When the whole input is known and :func:`cq_py.spark.lookback.lookback_catalog` bounds how far back
the script looks, engine k runs the input rows with ts in ``[T_k, T_{k+1})`` after a warm-up of the
rows just before ``T_k``, and keeps its outputs with ts in ``[T_k, T_{k+1})``. The inputs are sorted
by ts, so every slice is a zero-copy slice of the input table, and every output a zero-copy slice
of an engine's output: no hashing of keys, no copy of rows, no merge. This module finds the
``T_k`` (even shares of the rows of the largest input) and each input's warm-up start, with
vectorised numpy over the timestamps and, for ``[Partition By k Rows n]``, the key column.

Internal to :func:`cq_py.run` (:mod:`cq_py.engine`), which runs the engines.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cq_py.spark.lookback import Lookback

__all__ = ["bounds", "cut_by_time", "ticks_of", "warmup_start"]


def ticks_of(column: pa.ChunkedArray) -> np.ndarray | None:
    """The timestamps of an input as int64 ticks (a view when they are int64 already), or None
    when they are not integers without nulls (then the input is not split by time).

    >>> ticks_of(pa.chunked_array([[1, 2, 2]])).tolist()
    [1, 2, 2]
    """
    if not pa.types.is_integer(column.type) or column.null_count:
        return None
    one = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return np.asarray(one).astype(np.int64, copy=False)


def bounds(ts: np.ndarray, parts: int) -> list[int]:
    """The slices' starts ``T_1 < ... < T_{parts-1}`` (``T_0`` is the beginning of time): the
    timestamps at even shares of the rows of ``ts``, fewer when equal timestamps make two
    coincide (a timestamp's rows all go to one slice).

    >>> bounds(np.array([0, 1, 2, 3, 4, 5]), 3)
    [2, 4]
    >>> bounds(np.array([7, 7, 7, 7]), 2)
    []
    """
    out: list[int] = []
    n = len(ts)
    for k in range(1, parts):
        t = int(ts[min(n - 1, k * n // parts)])
        if t > int(ts[0]) and (not out or t > out[-1]):
            out.append(t)
    return out


def warmup_start(
    ts: np.ndarray,
    table: pa.Table,
    start: int,
    lookback: Lookback,
    limit: int,
    at: int | None = None,
) -> int | None:
    """The first row of the warm-up of the slice that starts at row ``start`` of an input (its
    timestamps ``ts``, its rows ``table``) and at time ``at`` (T_k: by default the row's ts; an
    input may have no row at T_k, or none after it): the union of the rows with ts within
    ``lookback.ticks`` of ``at``, the ``lookback.rows`` rows before it, and for each
    ``(column, n)`` of ``lookback.per_key`` the rows back to where every value of the column met
    before ``start`` has ``min(n, its rows before start)`` rows. None when that warm-up would be
    longer than ``limit`` rows (then a time split saves nothing: the caller runs one engine).

    >>> t = pa.table({"k": np.arange(10_000) % 3, "ts": np.arange(10_000)})
    >>> ts = np.arange(10_000)
    >>> warmup_start(ts, t, 9_000, Lookback(per_key=(("k", 2),)), 9_000)  # 6 rows: 2 per key
    8994
    >>> warmup_start(ts, t, 9_000, Lookback(ticks=1, rows=5), 9_000)
    8995
    >>> print(warmup_start(ts, t, 9_000, Lookback(rows=3), 2))
    None
    """
    first = start
    if lookback.ticks:
        t = int(ts[start]) if at is None else at
        first = min(first, int(np.searchsorted(ts, t - lookback.ticks, "left")))
    if lookback.rows:
        first = min(first, max(0, start - lookback.rows))
    for column, n in lookback.per_key:
        if start - first > limit:
            return None
        keyed = _keyed_start(table.column(column).slice(0, start), n, start - first, limit)
        if keyed is None:
            return None
        first = min(first, keyed)
    return None if start - first > limit else first


def _keyed_start(keys: pa.ChunkedArray, n: int, known: int, limit: int) -> int | None:
    """The warm-up start for ``[Partition By key Rows n]`` of the rows ``keys`` before a slice: a
    suffix, doubling from ``known`` rows, in which every key met before has min(n, its rows)
    rows. One pass over all the rows (which keys are met), then one count of each suffix tried;
    keys short of ``n`` rows in the longest suffix allowed are looked for before it (rare keys
    whose rows all lie in it)."""
    codes, width = _codes(keys)
    s = len(codes)
    if s == 0:
        return 0
    met = np.zeros(width, dtype=bool)
    met[codes] = True

    def enough(m: int) -> bool:
        return not (met & (np.bincount(codes[s - m :], minlength=width) < n)).any()

    m = min(max(known, n * int(met.sum())), max(limit, 1))
    failed = 0  # the longest suffix known too short
    while True:
        a = max(0, s - m)
        if a == 0:
            return 0 if s <= limit else None
        short = met & (np.bincount(codes[a:], minlength=width) < n)
        if not short.any():
            break
        if m >= limit:
            return None if short[codes[:a]].any() else a
        failed, m = m, min(limit, 2 * m)
    # Halve the gap between a suffix too short and one long enough a few times: the doubling
    # overshoots by up to half, rows the warm-up would run for nothing.
    for _ in range(6):
        mid = (failed + m) // 2
        if mid <= failed:
            break
        if enough(mid):
            m = mid
        else:
            failed = mid
    return s - m


def _codes(keys: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """Small non-negative integers, equal for equal keys (nulls one more value), and their bound:
    the keys themselves when they are such integers, else their dictionary's indices. Values the
    engine holds equal but the dictionary tells apart (0.0 and -0.0) only make the warm-up longer.
    """
    one = keys.chunk(0) if keys.num_chunks == 1 else keys.combine_chunks()
    if pa.types.is_integer(one.type) and not one.null_count and len(one):
        values = np.asarray(one)
        lo, hi = int(values.min()), int(values.max())
        if lo >= 0 and hi < (1 << 22):
            return values.astype(np.int64, copy=False), hi + 1
    encoded = pc.dictionary_encode(one, null_encoding="encode")
    return np.asarray(encoded.indices).astype(np.int64, copy=False), len(encoded.dictionary)


def cut_by_time(table: pa.Table, lo: int | None, hi: int | None) -> pa.Table:
    """The rows of a stream query's output (in time order) with ``lo <= ts < hi`` (None: no
    bound), as a zero-copy slice.

    >>> cut_by_time(pa.table({"ts": [1, 2, 2, 3]}), 2, 3).column("ts").to_pylist()
    [2, 2]
    """
    ts = table.column("ts")
    i = 0 if lo is None else _first_at_or_after(ts, lo)
    j = table.num_rows if hi is None else _first_at_or_after(ts, hi)
    return table.slice(i, max(0, j - i))


def _first_at_or_after(ts: pa.ChunkedArray, t: int) -> int:
    offset = 0
    for chunk in ts.chunks:
        if len(chunk) == 0:
            continue
        values = np.asarray(chunk.cast(pa.int64()))
        if values[-1] >= t:
            return offset + int(np.searchsorted(values, t, "left"))
        offset += len(chunk)
    return offset
