"""A replay paced by the wall clock: inputs pushed as their timestamps come due at ``speed``
times real time, and each arrival's latency measured from when it was due until every result it
brings has reached the engine's subscribers (paper 001 §5's measure; ``cq replay``).

Arrivals are the rows of one timestamp, of every input together, and the ticks of the registered
clocks: an arrival at event time t is due ``(t - t0) / speed`` seconds after the replay starts (t0
the first arrival's time). Its rows are pushed when it is due (or at once when the engine is
behind), then the engine advances past t, which runs every query it triggers and hands their
results to the subscribers; its latency ends there.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from cq_py.engine import Engine
from cq_py.io.readers import merge_by_time
from cq_py.planner.planner import TIME_UNIT_NS
from cq_py.ticks import to_ticks

__all__ = ["ReplayReport", "replay"]


@dataclass
class ReplayReport:
    """What a replay measured: each arrival's event time (ticks), latency and service time (the
    engine's calls for it: its pushes and the advance that completed it; seconds), and how long
    the replay took (``wall``)."""

    ticks: np.ndarray
    latencies: np.ndarray
    services: np.ndarray
    wall: float

    @property
    def busy(self) -> float:
        """The seconds the engine was busy: every arrival's service."""
        return float(self.services.sum())

    def summary(self) -> str:
        """One line per figure, in milliseconds.

        >>> seconds = np.array([0.001, 0.003])
        >>> r = ReplayReport(np.array([1, 2]), seconds, seconds, 1.0)
        >>> for part in r.summary().split("; "):
        ...     print(part)
        arrivals 2
        latency mean 2.000 ms, median 2.000 ms, p99 2.980 ms, max 3.000 ms
        busy 0.4 % of 1.00 s
        """
        lat = self.latencies * 1000
        if len(lat) == 0:
            return "arrivals 0"
        return (
            f"arrivals {len(lat)}; latency mean {lat.mean():.3f} ms, median "
            f"{np.median(lat):.3f} ms, p99 {np.percentile(lat, 99):.3f} ms, max {lat.max():.3f} "
            f"ms; busy {100 * self.busy / self.wall:.1f} % of {self.wall:.2f} s"
        )


def _ticks(batch: pa.RecordBatch, ts: str, unit: str) -> np.ndarray:
    """Column ``ts`` in ticks of ``unit`` (integers as they are, Arrow timestamps converted)."""
    ticks = to_ticks(batch.column(ts), unit, where="replay", column=ts)
    return np.asarray(ticks.to_numpy(zero_copy_only=False), dtype=np.int64)


def _runs(batch: pa.RecordBatch, ts: str, unit: str) -> Iterator[tuple[int, pa.RecordBatch]]:
    """The rows of ``batch`` by timestamp: (t in ticks, zero-copy slice), in order."""
    t = _ticks(batch, ts, unit)
    starts = np.flatnonzero(np.concatenate(([True], t[1:] != t[:-1])))
    ends = np.append(starts[1:], len(t))
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        yield int(t[a]), batch.slice(a, b - a)


def replay(
    eng: Engine,
    inputs: Mapping[str, Iterable[pa.RecordBatch]],
    speed: float,
    ts: str = "ts",
    sleep: bool = True,
) -> ReplayReport:
    """Pushes ``inputs`` (per input, record batches in time order, integer ticks in column ``ts``)
    into ``eng`` paced at ``speed`` times real time, then closes it; the latency of each arrival.
    ``sleep=False`` replays as fast as the engine goes (each arrival due at once).

    >>> eng = Engine()
    >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
    >>> r = replay(eng, {"s": [pa.record_batch({"a": [1, 2], "ts": [0, 5]})]}, speed=1000.0)
    >>> r.ticks.tolist(), eng.fetch("q")["a"].to_pylist()
    ([0, 5], [1, 2])
    """
    if not speed > 0:
        raise ValueError(f"replay speed must be positive; found {speed!r}")
    seconds_per_tick = TIME_UNIT_NS[eng.time_unit] / 1e9 / speed
    ticks: list[int] = []
    lat: list[float] = []
    services: list[float] = []
    pushing = 0.0  # the pending arrival's pushes so far
    origin: tuple[float, int] | None = None  # (wall time, tick) of the first arrival
    pending: tuple[int, float] | None = None  # the arrival pushed and not completed: (t, due)

    def due(t: int) -> float:
        assert origin is not None
        return origin[0] + (t - origin[1]) * seconds_per_tick

    def wait(t: int) -> float:
        nonlocal origin
        if origin is None:
            origin = (time.perf_counter(), t)
        d = due(t)
        if sleep:
            while (left := d - time.perf_counter()) > 0:
                time.sleep(min(left, 0.05))
        return d if sleep else time.perf_counter()

    def complete(t: int, d: float, pushed: float = 0.0) -> None:
        start = time.perf_counter()
        eng.advance(t + 1)
        end = time.perf_counter()
        ticks.append(t)
        lat.append(end - d)
        services.append(pushed + end - start)

    def arrive(t: int, stream: str, rows: pa.RecordBatch) -> None:
        nonlocal pending, pushing
        if pending is not None and t > pending[0]:
            complete(*pending, pushing)
            for c in eng.clock_ticks(pending[0] + 1, t):  # clock ticks between arrivals
                complete(c, wait(c))
            pending = None
        if pending is None:
            pending = (t, wait(t))
            pushing = 0.0
        start = time.perf_counter()
        eng.push(stream, rows, ts=ts)
        pushing += time.perf_counter() - start

    # merge_by_time's batches start in time order but may overlap (one input's batch runs past
    # the start of the next input's): their runs of one timestamp wait in a heap until no later
    # batch can bring an earlier one (batches start no earlier than the last one started).
    waiting: list[tuple[int, int, str, pa.RecordBatch]] = []
    seq = 0
    for stream, batch in merge_by_time(inputs, ts=ts, time_unit=eng.time_unit):
        if batch.num_rows == 0:
            continue
        first = int(_ticks(batch.slice(0, 1), ts, eng.time_unit)[0])
        while waiting and waiting[0][0] < first:
            t, _, name, rows = heapq.heappop(waiting)
            arrive(t, name, rows)
        for t, rows in _runs(batch, ts, eng.time_unit):
            heapq.heappush(waiting, (t, seq, stream, rows))
            seq += 1
    while waiting:
        t, _, name, rows = heapq.heappop(waiting)
        arrive(t, name, rows)
    if pending is not None:
        complete(*pending, pushing)
    eng.close()
    wall = time.perf_counter() - origin[0] if origin is not None else 0.0
    return ReplayReport(np.array(ticks, dtype=np.int64), np.array(lat), np.array(services), wall)
