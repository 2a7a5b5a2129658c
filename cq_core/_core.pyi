"""Typed surface of the private binding (cq_core/_core.cpp). Users import cq_py instead."""

from typing import Optional

class CoreError(RuntimeError):
    """args = (kind: 'input' | 'semantic' | 'runaway' | 'snapshot' | 'internal', message, stream | None,
    row | None)."""

# (schema capsule "arrow_schema", array capsule "arrow_array") of one record batch.
ArrowCapsules = tuple[object, object]

class Engine:
    def __init__(self, lifetime: str = "direct", executor: str = "dts",
                 expose_steps: bool = False, hybrid: bool = True,
                 max_loop_steps: int = 1000000, max_run: int = 20,
                 max_loop_ticks: int = 1000000, max_loop_rows: int = 10000000,
                 batch_size: int = 65536) -> None: ...
    def add_plan(self, plan_json: str) -> None: ...
    # Each batch: the declared columns, for a relation optionally its op column (utf8 '+'/'-'),
    # then the int64 timestamp in ticks.
    def push(self, stream: str, batches: list[ArrowCapsules]) -> None: ...
    # One row: `values` by the names in `names` (the declared columns in order, a relation's "op"
    # optionally after them), converted as push() converts a list of dicts, at tick `ts`. False,
    # with nothing done, when the row is not in that exact form (cq_py resolves it, or refuses it).
    def push_row(self, stream: str, ts: object, values: dict[str, object],
                 names: tuple[str, ...]) -> bool: ...
    def advance(self, tick: int, step: int = 0) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def drain(self, query: str) -> list[ArrowCapsules]: ...
    def output_schema(self, query: str) -> list[tuple[str, str]]: ...
    def queries(self) -> list[str]: ...
    def explain(self) -> str: ...
    # The whole engine's state between calls, with `annex` stored unread beside it.
    def snapshot(self, annex: bytes = b"") -> bytes: ...
    # Replaces the state by a snapshot of an engine with the same options and plans (atomic).
    def restore(self, data: bytes | bytearray | memoryview) -> None: ...

def snapshot_annex(data: bytes | bytearray | memoryview) -> bytes:
    """The annex of a snapshot, once its header and checksum are checked."""

def kernel_signatures() -> list[tuple[str, list[str], str, str, int]]:
    """(name, argument types, result type, doc, repeat) of every registered kernel. A variadic
    kernel has repeat > 0: its first `repeat` argument types recur one or more times, the rest
    follow once (case_when: [bool, T, T] with repeat 2 is (bool, T)+ T)."""

# The stage of the profile-guided build this core was compiled at: 'USE', 'OFF' or 'GENERATE'.
pgo: str

def operator_descriptors() -> list[dict[str, str | bool]]:
    """What each registered operator is (src_cpp/operators/descriptor.h): name, description,
    output, firing, lifetimes, partition, columns, role (strings), keeps_identity, shareable,
    tracks_lifetimes, arrival_order and negative_form (booleans)."""
