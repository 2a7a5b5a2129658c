"""cq's compiled core (private). Users import :mod:`cq_py`; this package holds only the binding."""

from cq_core._core import (
    CoreError,
    Engine,
    kernel_signatures,
    mqt_segments,
    operator_descriptors,
)

__all__ = ["CoreError", "Engine", "kernel_signatures", "mqt_segments", "operator_descriptors"]
