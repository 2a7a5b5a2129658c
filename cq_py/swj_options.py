"""The options of a shared window join's bounded mode (paper 004), checked where the engine is
built: ``Engine(swj_buffer=B, swj_scheduler=..., swj_period_ms=..., swj_beta0=..., swj_clock=...,
swj_load=..., swj_trace=...)``. Every wrong value is an :class:`cq_py.ArgumentError` (a
``ValueError``) naming the option, what it takes and what was found, raised before anything is
built. The core checks the same names and ranges again (src_cpp/schedulers/), so a plan that
reaches it another way is refused too.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cq_py.errors import ArgumentError, CQError

SCHEDULERS = ("mqt", "fifo", "mandf", "admandf")
LOADS = ("arrived", "oldest")
CLOCKS = ("work", "wall")


@dataclass(frozen=True)
class SwjOptions:
    """Bounded mode's options, checked. ``buffer`` is None in the default, exact mode (then the
    other fields are their defaults and unused)."""

    buffer: int | None = None
    scheduler: str = "mqt"
    period_ms: float = 500.0
    beta0: float = 0.05
    clock: str = "work"
    load: str = "arrived"
    trace: bool = False

    @property
    def bounded(self) -> bool:
        """Whether tuples can be dropped (a buffer was given)."""
        return self.buffer is not None

    def annex(self) -> dict[str, Any]:
        """The ``Engine(swj_...)`` options a snapshot keeps to rebuild the same plan (none in
        exact mode, so that exact engines' snapshots stay as they were).

        >>> SwjOptions(buffer=10).annex()["swj_buffer"]
        10
        """
        if self.buffer is None:
            return {}
        return {
            "swj_buffer": self.buffer,
            "swj_scheduler": self.scheduler,
            "swj_period_ms": self.period_ms,
            "swj_beta0": self.beta0,
            "swj_clock": self.clock,
            "swj_load": self.load,
            "swj_trace": self.trace,
        }

    def plan_params(self, time_unit: str) -> dict[str, Any] | None:
        """The ``"bounded"`` parameters of a ``shared_window_join`` operator (None in exact mode):
        the period in ticks of ``time_unit`` and the nanoseconds a tick is worth (the work
        clock's constants are in nanoseconds, src_cpp/operators/swj_bounded.h).

        >>> SwjOptions(buffer=10).plan_params("ms")["period"]
        500.0
        """
        if self.buffer is None:
            return None
        tick_ns = _TICK_NS[time_unit]
        return {
            "buffer": self.buffer,
            "scheduler": self.scheduler,
            "period": self.period_ms * 1e6 / tick_ns,
            "beta0": self.beta0,
            "clock": self.clock,
            "load": self.load,
            "trace": self.trace,
            "tick_ns": tick_ns,
        }


_TICK_NS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


def refuse_on_spark(engine_options: dict[str, Any]) -> None:
    """Bounded shared joins run on one engine only: on Spark a :class:`CQError` (each task's
    engine would bound and schedule its own part, which is not the paper's buffer).

    >>> refuse_on_spark({"share_joins": True})
    """
    if engine_options.get("swj_buffer") is not None:
        raise CQError(
            "bounded shared joins (swj_buffer="
            f"{engine_options['swj_buffer']!r}) do not run on Spark: each task's engine would "
            "bound and schedule its own part of the input; run them on one cq_py.Engine"
        )


def _found(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def _name(option: str, value: Any, accepted: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in accepted:
        raise ArgumentError(
            f"Engine option {option} must be one of {', '.join(map(repr, accepted))}; "
            f"found {_found(value)}"
        )
    return value


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a real number (not a bool), else None."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        return None
    return float(value)


def swj_options(
    *,
    buffer: Any = None,
    scheduler: Any = None,
    period_ms: Any = 500,
    beta0: Any = 0.05,
    clock: Any = "work",
    load: Any = "arrived",
    trace: Any = False,
    executor: Any = "dts",
) -> SwjOptions:
    """Checks bounded mode's options as ``Engine(swj_...)`` takes them and returns them.

    ``buffer`` (tuples per side, at least 1) turns bounded mode on; ``scheduler`` then defaults to
    ``"mqt"``, and a scheduler without a buffer is an error, as is bounded mode under the
    ``"heartbeat"`` executor. ``period_ms`` is above 0; ``beta0`` in [0, 1].

    >>> swj_options(buffer=5000, scheduler="admandf").scheduler
    'admandf'
    >>> try:
    ...     swj_options(buffer=5000, scheduler="lifo")
    ... except ArgumentError as e:
    ...     print(e)
    Engine option swj_scheduler must be one of 'mqt', 'fifo', 'mandf', 'admandf'; found 'lifo' (str)
    """
    if buffer is not None and (
        isinstance(buffer, (bool, np.bool_))
        or not isinstance(buffer, (int, np.integer))
        or not 1 <= buffer <= 2**63 - 1
    ):
        raise ArgumentError(
            f"Engine option swj_buffer must be a whole number of tuples per side, at least 1 (at "
            f"most {2**63 - 1}), or None (no bound); found {_found(buffer)}"
        )
    if scheduler is not None:
        _name("swj_scheduler", scheduler, SCHEDULERS)
        if buffer is None:
            raise ArgumentError(
                f"Engine option swj_scheduler={scheduler!r} needs swj_buffer (the tuples each side "
                f"holds): scheduling only applies to bounded buffers; found swj_buffer=None"
            )
    period = _number(period_ms)
    if period is None or not math.isfinite(period) or period <= 0:
        raise ArgumentError(
            "Engine option swj_period_ms must be a finite number above 0; "
            f"found {_found(period_ms)}"
        )
    beta = _number(beta0)
    if beta is None or not 0 <= beta <= 1:
        raise ArgumentError(f"Engine option swj_beta0 must be in [0, 1]; found {_found(beta0)}")
    _name("swj_clock", clock, CLOCKS)
    _name("swj_load", load, LOADS)
    if not isinstance(trace, bool):
        raise ArgumentError(f"Engine option swj_trace must be True or False; found {_found(trace)}")
    if buffer is not None and executor != "dts":
        raise ArgumentError(
            f"bounded shared joins (swj_buffer={buffer!r}) need executor='dts'; found "
            f"executor={executor!r}"
        )
    return SwjOptions(
        buffer=None if buffer is None else int(buffer),
        scheduler=scheduler or "mqt",
        period_ms=period,
        beta0=beta,
        clock=clock,
        load=load,
        trace=trace,
    )


def shared_join_nodes(catalog: Any) -> list[dict[str, Any]]:
    """The shared window joins of a planned catalog (cq_py/planner/shared_joins.py's operators):
    ``id``, ``members`` (the routes' queries, smallest window first), ``windows``, ``bounded``.
    """
    nodes = catalog.nodes
    out = []
    for i in sorted(nodes):
        n = nodes[i]
        if n.op != "shared_window_join":
            continue
        routes = sorted(
            (
                r
                for r in nodes.values()
                if r.op in ("swj_route", "swj_route_istream") and r.inputs == [i]
            ),
            key=lambda r: r.params["slice"],
        )
        readers = _readers(catalog, [r.id for r in routes])
        out.append(
            {
                "id": i,
                "members": [r.owner for r in routes],
                "windows": list(n.params["windows"]),
                "readers": [readers[r.id] or [r.owner] for r in routes],
                "bounded": "bounded" in n.params,
            }
        )
    return out


def _readers(catalog: Any, routes: list[int]) -> dict[int, list[str]]:
    """The queries that read each route: a query identical to a member (sub-plan reuse gave
    them one join) reads the member's route too. A query's operators are found walking up from
    its output, stopping at another query's output (a query reading a query is no member)."""
    outs: dict[int, set[str]] = {}
    for name, q in catalog.queries.items():
        outs.setdefault(q.out_id, set()).add(name)
    found: dict[int, list[str]] = {r: [] for r in routes}
    for name, q in sorted(catalog.queries.items()):
        seen, todo = set(), [q.out_id]
        while todo:
            i = todo.pop()
            if i in seen or i not in catalog.nodes or name not in outs.get(i, {name}):
                continue
            seen.add(i)
            if i in found:
                found[i].append(name)
                continue
            todo += catalog.nodes[i].inputs
    return found


def shared_join_entry(join: dict[str, Any], report: str | None) -> dict[str, Any]:
    """What ``Engine.shared_joins()`` says of one shared join: ``join`` (from
    :func:`shared_join_nodes`) with its MQT segments, and in bounded mode the core's report
    (src_cpp/operators/swj_bounded.h) as counters per member query, and the ``work`` done: jobs
    run, partners scanned and pairs emitted, whatever the clock.
    """
    from cq_core import mqt_segments

    entry = {**join, "segments": mqt_segments(join["windows"])[1]}
    if report is None:
        return entry
    r = json.loads(report)
    # Counters by query: every query reading a member's route has the member's.
    readers = join["readers"]
    for what in ("processed", "dropped", "pending"):
        entry[what] = {q: v for qs, v in zip(readers, r[what], strict=True) for q in qs}
    entry["dropping"] = [q for qs, d in zip(readers, r["dropped"], strict=True) if d for q in qs]
    for what in (
        "arrivals",
        "evicted",
        "buffered",
        "buffer",
        "scheduler",
        "load",
        "method",
        "beta",
        "work",
    ):
        entry[what] = r[what]
    entry["clock"] = r["clock"]
    entry["clock_kind"] = r["clock_kind"]
    entry["weights"] = r["weights"]
    return entry


_PERIODS = pa.schema(
    [
        ("time", pa.float64()),
        ("rate", pa.int64()),
        ("S", pa.float64()),
        ("alpha", pa.float64()),
        ("beta", pa.float64()),
        ("beta_now", pa.float64()),
        ("beta_next", pa.float64()),
        ("rate_next", pa.float64()),
        ("high", pa.bool_()),
        ("method", pa.string()),
        ("case", pa.int64()),
        ("open", pa.bool_()),
    ]
)
_JOBS = pa.schema(
    [
        ("tuple", pa.int64()),
        ("side", pa.string()),
        ("ts", pa.int64()),
        ("from", pa.int64()),
        ("to", pa.int64()),
        ("outcome", pa.string()),
        ("clock", pa.float64()),
    ]
)


def trace_tables(report: str, jobs: bool) -> dict[str, pa.Table]:
    """A bounded shared join's report as Arrow tables: ``periods`` and, when traced, ``jobs``
    (an outcome ``processed`` ran queries from+1..to; ``partly`` ran them and dropped to+1..n;
    ``given up`` and ``evicted`` dropped from+1..to).

    >>> r = '{"periods": {"time": [500.0], "rate": [3], "S": [1.5], "alpha": [NaN], "beta": [NaN],'
    >>> r += ' "beta_now": [0.5], "beta_next": [NaN], "rate_next": [NaN], "high": [false],'
    >>> r += ' "method": ["MQT"], "case": [0], "open": [false]}, "jobs": {}}'
    >>> trace_tables(r, False)["periods"].column("rate").to_pylist()
    [3]
    """
    r = json.loads(report)
    out = {"periods": _table(r["periods"], _PERIODS)}
    if jobs:
        out["jobs"] = _table(r["jobs"], _JOBS)
    return out


def _table(columns: dict[str, list[Any]], schema: pa.Schema) -> pa.Table:
    return pa.table({f.name: pa.array(columns[f.name], f.type) for f in schema}, schema=schema)
