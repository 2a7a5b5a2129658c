"""Timestamps to ticks: the one place where a timestamp column (or an ``advance`` time) becomes the
engine's int64 ticks and is checked against the range of ticks the engine takes.

The core keeps logical time in int64 ticks and reserves the two extremes: ``2**63 - 1`` is +∞ (a
tuple that never ends, the progress after ``close()``) and ``-2**63`` is -∞ (no progress yet).
A row at either would be taken for infinity, so input ticks lie in ``[MIN_TICK, MAX_TICK]``.
Arrow timestamps are brought to the engine's unit by flooring (a tick holds every instant inside
it); a conversion that leaves that range is refused, never wrapped. Everything here is
vectorized (Arrow compute kernels over the whole column), no Python per row.

>>> import pyarrow as pa
>>> to_ticks(pa.array([1500, -1500], pa.timestamp("us")), "ms").to_pylist()
[1, -2]
"""

from __future__ import annotations

from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from cq_py.errors import InputError

__all__ = ["MAX_TICK", "MIN_TICK", "UNITS", "tick_range", "to_ticks"]

MAX_TICK = 2**63 - 2  # 2**63 - 1 is +∞ in the core (src_cpp/time/time.h, Time::kInfTick)
MIN_TICK = -(2**63) + 1  # -2**63 is -∞ (Time::kMinTick)
UNITS = ("s", "ms", "us", "ns")  # coarse to fine, a factor 1000 apart

Column: TypeAlias = pa.Array | pa.ChunkedArray


def tick_range() -> str:
    """The accepted ticks, for messages."""
    return (
        f"ticks from {MIN_TICK} to {MAX_TICK} (the extremes of int64, ±{2**63 - 1} and "
        f"{-(2**63)}, stand for ±∞)"
    )


def to_ticks(
    col: Column, time_unit: str, *, where: str = "", column: str = "ts", stream: str | None = None
) -> Column:
    """``col`` (integers, or an Arrow timestamp of any unit and zone) as int64 ticks of
    ``time_unit``, nulls kept. Raises :class:`InputError` naming ``column``, the first offending
    row (0-based) and its value when a value lies outside the ticks the engine takes, or when
    the column is of another type. ``where`` starts the messages (e.g. ``"push to 's'"``).

    >>> import pyarrow as pa
    >>> to_ticks(pa.array([2**62], pa.timestamp("s")), "ms")
    Traceback (most recent call last):
    cq_py.errors.InputError: timestamp column 'ts': row 0 holds 4611686018427387904 s since the \
epoch, 4611686018427387904000 ms: outside the engine's ticks from -9223372036854775807 to \
9223372036854775806 (the extremes of int64, ±9223372036854775807 and -9223372036854775808, \
stand for ±∞)
    """
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    t = col.type
    prefix = f"{where}: " if where else ""

    def refuse(row: int, value: int, shown: str) -> InputError:
        return InputError(
            f"{prefix}timestamp column '{column}': row {row} holds {shown}: outside "
            f"the engine's {tick_range()}",
            stream=stream,
            row=row,
        )

    if pa.types.is_timestamp(t):
        values = col.cast(pa.int64())  # the stored count of t.unit since the epoch, in UTC
        have, want = UNITS.index(t.unit), UNITS.index(time_unit)
        factor = 1000 ** abs(want - have)
        if want > have:  # a finer unit: multiply, after checking that the product fits
            bad = _outside(values, -(-MIN_TICK // factor), MAX_TICK // factor)
            if bad is not None:
                row, v = bad
                raise refuse(row, v, f"{v} {t.unit} since the epoch, {v * factor} {time_unit}")
            return pc.multiply(values, pa.scalar(factor, pa.int64()))
        if want < have:  # a coarser unit: floor (integer division truncates towards zero)
            k = pa.scalar(factor, pa.int64())
            quotient = pc.divide(values, k)
            below = pc.less(values, pc.multiply(quotient, k))
            values = pc.if_else(below, pc.subtract(quotient, pa.scalar(1, pa.int64())), quotient)
        bad = _outside(values, MIN_TICK, MAX_TICK)
        if bad is not None:
            row, v = bad
            raise refuse(row, v, f"{v} {time_unit} since the epoch")
        return values
    if pa.types.is_integer(t):
        bad = _outside(col, MIN_TICK, MAX_TICK)
        if bad is not None:
            raise refuse(bad[0], bad[1], str(bad[1]))
        return col if pa.types.is_int64(t) else col.cast(pa.int64())
    raise InputError(
        f"{prefix}timestamp column '{column}' must hold integers (ticks) or an Arrow "
        f"timestamp; found {t}",
        stream=stream,
    )


def _outside(values: Column, lo: int, hi: int) -> tuple[int, int] | None:
    """The first row of integer ``values`` outside ``[lo, hi]`` and its value, or None: one
    min/max pass, and only on failure one more to find the row."""
    if len(values) == 0:
        return None
    bounds = pc.min_max(values)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is None or (low >= lo and high <= hi):
        return None
    t = values.type
    out = pc.greater(values, pa.scalar(hi, t))
    if not pa.types.is_unsigned_integer(t):
        out = pc.or_(out, pc.less(values, pa.scalar(lo, t)))
    row = pc.index(out, True).as_py()
    return row, values[row].as_py()
