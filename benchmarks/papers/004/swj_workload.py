"""Paper 004 §6's workload, generated: ten shared window joins over two streams, four rate stages.

- **Queries**: ``SELECT * FROM A [Range wi], B [Range wi] WHERE A.loc = B.loc`` for ten windows,
  either random in [1, 3,000] ms (a fixed seed) or one of P1–P8 (patterns.json).
- **Buffer**: B = 5,000 tuples per source; 80 % of it processed before stage 1 (4,000 tuples per
  source arrive slowly enough to be processed, 1,000 per source arrive just before stage 1).
- **Stages**: four input rates (tuples per second per source), each a fixed multiple of the
  distribution's FIFO capacity (stages.json), rate measured every 0.5 s, beta0 = 0.05.

Time is scaled: the paper's prototype (a 2000s PC) served far fewer tuples per second than the
bounded join does here, so at the paper's time scale this server would never be overloaded
before a 5,000-tuple buffer stopped holding a 3 s window. One paper millisecond is ``SCALE_NS``
nanoseconds of the work clock: windows, periods, stages and rates are stated in paper time (ms,
tuples per paper second) and scaled when the engine is built and the input stamped.

Input is built column-wise with numpy (no per-row Python loops) and pushed through the public
Engine API with ``executor="dts"`` and the work clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import cq_py

HERE = Path(__file__).resolve().parent
QUERIES = 10
MAX_WINDOW_MS = 3000
BUFFER = 5000
PRIMED = 4000  # per source, arrive and are processed before stage 1
BURST = 1000  # per source, arrive just before stage 1
PERIOD_MS = 500
BETA0 = 0.05
LOCATIONS = 100
SEED = 4
SCALE_NS = 10_000  # work-clock nanoseconds per paper millisecond


def windows(distribution: str, seed: int = SEED) -> list[int]:
    """The ten windows (ms, ascending) of ``"random"`` or a pattern ``"P1"`` … ``"P8"``.

    >>> windows("P1")[-1]
    3000
    """
    if distribution == "random":
        rng = np.random.default_rng(seed)
        return sorted(int(w) for w in rng.integers(1, MAX_WINDOW_MS + 1, QUERIES))
    patterns = json.loads((HERE / "patterns.json").read_text())["patterns"]
    if distribution not in patterns:
        raise ValueError(
            f"distribution: expected 'random' or one of {sorted(patterns)}, found {distribution!r}"
        )
    return list(patterns[distribution]["windows_ms"])


def script(ws: list[int]) -> str:
    """The CQL of §6: two streams and one query per window (paper ms, scaled to ns ticks)."""
    head = "REGISTER STREAM a(loc INT, x BIGINT); REGISTER STREAM b(loc INT, y BIGINT);"
    return head + "".join(
        f"REGISTER QUERY q{i} AS SELECT * FROM a [Range {w * SCALE_NS}], "
        f"b [Range {w * SCALE_NS}] WHERE a.loc = b.loc;"
        for i, w in enumerate(ws, 1)
    )


@dataclass
class Input:
    a: pa.Table
    b: pa.Table
    stage_starts_ms: list[float]  # the time each of the four stages begins
    arrived_before_stage1: int  # per source


def timestamps(counts_rates: list[tuple[int, float]], start_ms: float) -> np.ndarray:
    """Evenly spaced arrival times (ms) for consecutive segments of (count, tuples per second)."""
    parts, t = [], start_ms
    for count, rate in counts_rates:
        gap = 1000.0 / rate
        parts.append(t + gap * np.arange(count))
        t += gap * count
    return np.concatenate(parts) if parts else np.zeros(0)


def build_input(
    stage_rates: list[float],
    stage_s: float,
    prime_rate: float,
    seed: int = SEED,
    locations: int = LOCATIONS,
) -> Input:
    """The two sources' tuples: PRIMED at ``prime_rate`` (tuples per paper second per source),
    BURST at once, then ``stage_s`` paper seconds at each stage rate. Keys uniform over
    ``locations``; times in ns ticks (paper ms x SCALE_NS)."""
    rng = np.random.default_rng(seed)
    prime = timestamps([(PRIMED, prime_rate)], 0.0)
    burst_at = prime[-1] + 1000.0 / prime_rate
    burst = np.full(BURST, burst_at)
    segs = [(max(1, int(r * stage_s)), r) for r in stage_rates]
    stages = timestamps(segs, burst_at + 1.0)
    starts, t = [], burst_at + 1.0
    for count, rate in segs:
        starts.append(t)
        t += count * 1000.0 / rate
    ts_ms = np.concatenate([prime, burst, stages])

    def side(offset_ns: int, name: str) -> pa.Table:
        ts = (ts_ms * SCALE_NS).astype(np.int64) + offset_ns
        return pa.table(
            {
                "loc": pa.array(rng.integers(0, locations, len(ts)), pa.int32()),
                name: pa.array(np.arange(len(ts), dtype=np.int64)),
                "ts": pa.array(ts),
            }
        )

    return Input(side(0, "x"), side(1, "y"), starts, PRIMED + BURST)


def engine(
    ws: list[int], scheduler: str, clock: str = "work", buffer: int = BUFFER, **options: Any
) -> cq_py.Engine:
    """A bounded-mode engine with §6's parameters running the ten queries."""
    eng = cq_py.Engine(
        time_unit="ns",
        executor="dts",
        swj_buffer=buffer,
        swj_scheduler=scheduler,
        swj_period_ms=PERIOD_MS * SCALE_NS / 1e6,
        swj_beta0=BETA0,
        swj_clock=clock,
        **options,
    )
    eng.execute(script(ws))
    return eng


def counters(eng: cq_py.Engine) -> dict[str, int]:
    """Processed, dropped and pending (tuple, query) pairs summed over the queries, and arrivals
    (tuples taken in, both sources) of the engine's one shared join."""
    (join,) = eng.shared_joins()
    out = {what: int(sum(join[what].values())) for what in ("processed", "dropped", "pending")}
    out["arrivals"] = int(join["arrivals"])
    return out


def run_stages(
    ws: list[int], scheduler: str, data: Input, keep: bool = False, **options: Any
) -> Any:
    """Pushes ``data`` stage by stage; the counters at the end of priming (before the burst) and
    after each stage. Differences against the first are the pairs of tuples arrived since. With
    ``keep``, also the engine, not closed (its trace)."""
    eng = engine(ws, scheduler, **options)
    cuts_ns = [int(s * SCALE_NS) for s in data.stage_starts_ms[1:]]
    bounds = [PRIMED, *(int(np.searchsorted(data.a.column("ts").to_numpy(), c)) for c in cuts_ns)]
    bounds.append(data.a.num_rows)
    seen, at = [], 0
    for end in bounds:
        eng.push("a", data.a.slice(at, end - at))
        eng.push("b", data.b.slice(at, end - at))
        at = end
        seen.append(counters(eng))
    if keep:
        return seen, eng
    eng.close()
    return seen
