"""A replay paced by the wall clock: inputs pushed as their timestamps come due at ``speed``
times real time, and each arrival's latency measured from when it was due until every result it
brings has reached the engine's subscribers (paper 001 §5's measure; ``cq replay``).

Arrivals are the rows of one timestamp, of every input together, and the ticks of the registered
clocks: an arrival at event time t is due ``(t - t0) / speed`` seconds after the replay starts (t0
the first arrival's time). Its rows are pushed when it is due (or at once when the engine is
behind), then the engine advances past t, which runs every query it triggers and hands their
results to the subscribers; its latency ends there. Every arrival is cut out of the inputs before
the clock starts, and the wait for one sleeps until shortly before it is due and spins the rest:
between due times the replay does nothing that would count in a latency but the engine's calls.
"""

from __future__ import annotations

import contextlib
import gc
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

__all__ = ["SPIN_S", "Arrival", "ReplayReport", "arrivals", "replay", "wait_until"]

# How long before an arrival is due the replay stops sleeping and spins on the clock: a sleep
# wakes late (0.15 ms on average on a 2-core machine others share, more under load), which would
# count in the arrival's latency; woken this early, the replay is running when the arrival is due.
# Spinning costs at most this much CPU per arrival, so a slow replay stays idle between arrivals.
SPIN_S = 0.002


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


Arrival = tuple[int, list[tuple[str, pa.RecordBatch]]]
"""An arrival: its time in ticks and its pushes, (input, rows of that time) in the order the
replay makes them (none for a clock's tick)."""


def arrivals(eng: Engine, inputs: Mapping[str, Iterable[pa.RecordBatch]], ts: str) -> list[Arrival]:
    """Every arrival of a replay of ``inputs`` into ``eng``, in time order: the rows of each
    timestamp (of every input together), and the registered clocks' ticks between the first and
    the last of them. Prepared whole before a replay's clock starts, so that between two due times
    the replay does nothing but wait and call the engine.

    >>> eng = Engine()
    >>> eng.execute("REGISTER STREAM s(a INT); REGISTER CLOCK c EVERY 4;")
    >>> [(t, [(s, rows.num_rows) for s, rows in pushes])
    ...  for t, pushes in arrivals(eng, {"s": [pa.record_batch({"a": [1, 2, 3], "ts": [2, 2, 9]})]},
    ...                            "ts")]
    [(2, [('s', 2)]), (4, []), (8, []), (9, [('s', 1)])]
    """
    found: list[Arrival] = []

    def arrive(t: int, stream: str, rows: pa.RecordBatch) -> None:
        if found and found[-1][0] == t:
            found[-1][1].append((stream, rows))
        else:
            found.append((t, [(stream, rows)]))

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
    if not found:
        return found
    # A clock's tick at a row's time is part of that arrival (the advance past it runs both).
    rows_at = {t for t, _ in found}
    ticks = [c for c in eng.clock_ticks(found[0][0], found[-1][0]) if c not in rows_at]
    return list(heapq.merge(found, ((c, []) for c in ticks), key=lambda a: a[0]))


def wait_until(due: float, spin: float = SPIN_S) -> None:
    """Returns once ``time.perf_counter()`` has reached ``due``, never before: sleeping until
    ``spin`` seconds before it, spinning the rest.

    >>> due = time.perf_counter() + 0.003
    >>> wait_until(due)
    >>> time.perf_counter() >= due
    True
    """
    left = due - time.perf_counter()
    if left > spin:
        time.sleep(left - spin)
    while time.perf_counter() < due:
        pass


def replay(
    eng: Engine,
    inputs: Mapping[str, Iterable[pa.RecordBatch]],
    speed: float,
    ts: str = "ts",
    sleep: bool = True,
    spin: float = SPIN_S,
) -> ReplayReport:
    """Pushes ``inputs`` (per input, record batches in time order, integer ticks in column ``ts``)
    into ``eng`` paced at ``speed`` times real time, then closes it; the latency of each arrival.
    ``sleep=False`` replays as fast as the engine goes (each arrival due at once). Between
    arrivals the replay sleeps until ``spin`` seconds before the next is due and spins the rest
    (:func:`wait_until`); a ``spin`` longer than the gaps keeps the CPU the replay's throughout,
    as a run that pushes back to back does, at the cost of one core busy.

    The inputs are read whole and cut into arrivals (:func:`arrivals`) before the clock starts,
    so the replay holds them all in memory.

    >>> eng = Engine()
    >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
    >>> r = replay(eng, {"s": [pa.record_batch({"a": [1, 2], "ts": [0, 5]})]}, speed=1000.0)
    >>> r.ticks.tolist(), eng.fetch("q")["a"].to_pylist()
    ([0, 5], [1, 2])
    """
    if not speed > 0:
        raise ValueError(f"replay speed must be positive; found {speed!r}")
    if not spin >= 0:
        raise ValueError(f"replay spin must be zero or more seconds; found {spin!r}")
    seconds_per_tick = TIME_UNIT_NS[eng.time_unit] / 1e9 / speed
    plan = arrivals(eng, inputs, ts)
    t0 = plan[0][0] if plan else 0
    offsets = [(t - t0) * seconds_per_tick for t, _ in plan]
    latencies = [0.0] * len(plan)
    services = [0.0] * len(plan)
    with _no_collection():
        origin = time.perf_counter()
        for i, (t, pushes) in enumerate(plan):
            if sleep:
                due = origin + offsets[i]
                wait_until(due, spin)
                start = time.perf_counter()
            else:
                due = start = time.perf_counter()
            for stream, rows in pushes:
                eng.push(stream, rows, ts=ts)
            eng.advance(t + 1)
            end = time.perf_counter()
            latencies[i] = end - due
            services[i] = end - start
        wall = time.perf_counter() - origin if plan else 0.0
    eng.close()
    return ReplayReport(
        np.array([t for t, _ in plan], dtype=np.int64),
        np.array(latencies),
        np.array(services),
        wall,
    )


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """No garbage collection while a replay's clock runs: a collection would land in some
    arrival's latency. The objects made before are frozen (a later collection need not walk
    them), the loop's garbage waits until after."""
    collecting = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        gc.unfreeze()
