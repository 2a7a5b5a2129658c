"""The options of a shared window join's bounded mode (paper 004), checked where the engine is
built: ``Engine(swj_buffer=B, swj_scheduler=..., swj_period_ms=..., swj_beta0=..., swj_clock=...,
swj_load=..., swj_trace=...)``. Every wrong value is an :class:`cq_py.ArgumentError` (a
``ValueError``) naming the option, what it takes and what was found, raised before anything is
built. The core checks the same names and ranges again (src_cpp/schedulers/), so a plan that
reaches it another way is refused too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cq_py.errors import ArgumentError

SCHEDULERS = ("mqt", "fifo", "mandf", "admandf")
LOADS = ("arrived", "oldest")
CLOCKS = ("work", "wall")
EXECUTORS = ("dts", "heartbeat")


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
