"""A slow, literal evaluator of issue 31's MASTER semantics, for the engine's master trigger to be
checked against (paper 001 §2.1).

``MASTER m1, …, mk SELECT …`` is stream-valued. Its instants are the distinct timestamps of rows
of the masters (streams, clocks). At instant τ it emits, with ts = τ, the select list of every
tuple c of the SELECT's relation R with c ∈ R(τ) and start(c) ∈ (τp, τ], τp being the previous
instant (−∞ before the first). For select-project-join, c is a combination of one lifetime tuple
per FROM entry, start(c) the latest start among them and end(c) the earliest end. Arrivals at τ
come before the run at τ. A query registered at progress p sees stream rows (and master instants)
from p on, and tables whole; a clock ticks at o + k·d below the progress reached before close().

Times are (tick, step) pairs; ``[Now]`` gives a lifetime of one ε step, ``[Range T]`` T ticks, no
window ∞. Nothing here is shared with the engine.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Time = tuple[float, int]
INF: Time = (math.inf, 0)
Row = tuple[Any, ...]


@dataclass(frozen=True)
class From:
    """A FROM entry: a stream with ``window`` "now", a number of ticks, or None (unbounded); or a
    table (its lifetimes given whole)."""

    name: str
    window: str | int | None = None


def stream_lifetimes(
    rows: Sequence[tuple[int, Row]], window: str | int | None, since: int | None
) -> list[tuple[Time, Time, Row]]:
    """A stream's rows as lifetime tuples under ``window``, from progress ``since`` on."""
    out = []
    for t, values in rows:
        if since is not None and t < since:
            continue
        start: Time = (t, 0)
        if window == "now":
            end: Time = (t, 1)
        elif window is None:
            end = INF
        else:
            end = (t + int(window), 0)
        if start < end:
            out.append((start, end, values))
    return out


def relation(
    sources: Sequence[Sequence[tuple[Time, Time, Row]]],
    where: Callable[[tuple[Row, ...]], bool],
    select: Callable[[tuple[Row, ...]], Row],
) -> list[tuple[Time, Time, Row]]:
    """R of a select-project-join: every combination alive somewhere, as a lifetime tuple."""
    out = []
    for combo in itertools.product(*sources):
        start = max(c[0] for c in combo)
        end = min(c[1] for c in combo)
        values = tuple(c[2] for c in combo)
        if start < end and where(values):
            out.append((start, end, select(values)))
    return out


def instants(
    masters: Sequence[str],
    streams: Mapping[str, Sequence[tuple[int, Row]]],
    clocks: Mapping[str, tuple[int, int]],
    since: int | None,
    final: int,
) -> list[Time]:
    """The distinct timestamps of the masters' rows (from ``since`` on); clocks' ticks below
    ``final``, the progress reached before close()."""
    times: set[int] = set()
    for m in masters:
        if m in clocks:
            every, offset = clocks[m]
            times.update(range(offset, final, every))
        else:
            times.update(t for t, _ in streams[m])
    return sorted((t, 0) for t in times if since is None or t >= since)


def master(r: Sequence[tuple[Time, Time, Row]], runs: Sequence[Time]) -> Counter[tuple[float, Row]]:
    """The MASTER query's output over R at the instants ``runs``: a bag of (ts, row)."""
    out: Counter[tuple[float, Row]] = Counter()
    previous: Time = (-math.inf, 0)
    for tau in runs:
        for start, end, values in r:
            if previous < start <= tau < end:
                out[(tau[0], values)] += 1
        previous = tau
    return out


def istream(r: Sequence[tuple[Time, Time, Row]]) -> Counter[tuple[float, Row]]:
    """ISTREAM(R), literally: R(t) − R(t⁻) as bags at every instant where something changes,
    reported at ticks (only step-0 instants occur for inputs at step 0)."""
    events = sorted({start for start, _, _ in r} | {end for _, end, _ in r if end != INF})
    out: Counter[tuple[float, Row]] = Counter()
    before: Counter[Row] = Counter()
    for t in events:
        now = Counter(v for start, end, v in r if start <= t < end)
        for v, n in (now - before).items():
            out[(t[0], v)] += n
        before = now
    return out
