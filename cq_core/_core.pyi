"""Typed surface of the private binding (cq_core/_core.cpp). Users import cq_py instead."""

from typing import Any, Optional

import numpy as np
import numpy.typing as npt

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
                 batch_size: int = 65536, scheduler: str = "round_robin", batch: int = 1,
                 gatekeeper: bool = True, txn: str = "none",
                 lock_timeout: float = 10.0, redo: str = "on_change") -> None: ...
    def add_plan(self, plan_json: str) -> None: ...
    # Each batch: the declared columns, for a relation optionally its op column (utf8 '+'/'-'),
    # then the int64 timestamp in ticks.
    def push(self, stream: str, batches: list[ArrowCapsules]) -> None: ...
    # One row: `values` by the names in `names` (the declared columns in order, a relation's "op"
    # optionally after them), converted as push() converts a list of dicts, at tick `ts`. False,
    # with nothing done, when the row is not in that exact form (cq_py resolves it, or refuses it).
    def push_row(self, stream: str, ts: object, values: dict[str, object],
                 names: tuple[str, ...]) -> bool: ...
    # push()'s checks without running (deletes: a relation's deletes against its alive rows; rows:
    # the row number each row reports in messages).
    def check(self, stream: str, batches: list[ArrowCapsules], deletes: bool = True,
              rows: Optional[npt.NDArray[np.int64]] = None) -> None: ...
    # One input's progress to `tick`, as a push of rows up to it would, without rows.
    def advance_input(self, stream: str, tick: int) -> None: ...
    def advance_inputs(self, streams: list[str], tick: int) -> None: ...
    def advance(self, tick: int, step: int = 0) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def drain(self, query: str) -> list[ArrowCapsules]: ...
    def watch(self, queries: list[str]) -> None: ...
    def drain_watched(self) -> list[tuple[int, list[ArrowCapsules]]]: ...
    def output_schema(self, query: str) -> list[tuple[str, str]]: ...
    def queries(self) -> list[str]: ...
    def explain(self) -> str: ...
    def evaluations(self) -> list[tuple[int, int]]: ...
    # The commit log as four record batches (cq::txn::CommitLogColumns): records (query, area,
    # instant, outcome, begin, end), offsets (one row more: evaluations, versions), evaluations
    # (operator, evaluations), versions (record, resource, version).
    def commit_log(
        self,
    ) -> tuple[ArrowCapsules, ArrowCapsules, ArrowCapsules, ArrowCapsules]: ...
    # (operator id, reads) of every reference operator; (area, commits, aborts) of every redo
    # area; (reads, ends of transactions) dropped from the logs' fronts.
    def read_counts(self) -> list[tuple[int, int]]: ...
    def commit_counts(self) -> list[tuple[int, int, int]]: ...
    def logs_dropped(self) -> tuple[int, int]: ...
    # (holder ids in use, the holder table's size).
    def holder_table_size(self) -> tuple[int, int]: ...
    # (area, query, lock waits, resets, rows replayed, transactions locked after optimistic
    # aborts) per redo area's transaction manager.
    def transaction_managers(self) -> list[tuple[int, str, int, int, int, int]]: ...
    def shared_join_report(self, id: int) -> str: ...
    # Paper 002: resources the reference operators of later plans read. A store's resource of
    # that name, or a Python reader with lookup(keys) and scan() returning (stamp, capsules).
    def bind_store_resource(self, name: str, store: ResourceStore) -> None: ...
    def bind_resource(
        self, name: str, names: list[str], types: list[str], key: list[int], reader: Any
    ) -> None: ...
    # A model: a Python reader with apply(arg capsules) returning (version, result capsules).
    def bind_model(self, name: str, reader: Any) -> None: ...
    # The latest 2**20 reads: (operator ids, resource codes, resource names, versions, instants,
    # rows).
    def read_log(
        self,
    ) -> tuple[
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
        list[str],
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
    ]: ...
    # The whole engine's state between calls, with `annex` stored unread beside it.
    def snapshot(self, annex: bytes = b"") -> bytes: ...
    # Replaces the state by a snapshot of an engine with the same options and plans (atomic).
    def restore(self, data: bytes | bytearray | memoryview) -> None: ...

class KeyIndex:
    """A resource's rows by key (cq::txn::KeyIndex), from a record batch of the key's columns;
    a CoreError when two rows share a key."""
    def __init__(self, resource: str, rows: ArrowCapsules) -> None: ...
    def match(self, probes: ArrowCapsules) -> npt.NDArray[np.int64]:
        """The row holding each probe's key (a batch of the key's columns, of its types), -1
        when none does."""

def partition_rows(batch: ArrowCapsules, parts: int,
                   as_double: bool = False) -> tuple[npt.NDArray[np.int64], list[int]]:
    """(order, counts): the rows of a batch of key columns grouped by their part among `parts`
    (part 0's rows, then part 1's, ..., each in input order), and the rows in each part."""

def part_rows(batch: ArrowCapsules, parts: int, part: int,
              as_double: bool = False) -> npt.NDArray[np.int64]:
    """The rows of a batch of key columns in part `part` among `parts` (those partition_rows puts
    there), in order."""

class EngineGroup:
    """Engines that each run one part of the input, driven as one (src_cpp/engine/engine_group.h):
    every call runs on the group's threads, engine k always on thread k, the GIL released."""
    def __init__(self, engines: list[Engine]) -> None: ...
    def push(self, stream: str, batches: list[ArrowCapsules], key: int, as_double: bool,
             slice_rows: int, last: int) -> None:
        """A stream's push, checked whole before: rows routed by the hash of column `key` (each
        engine gathering its rows `slice_rows` at a time), or with key < 0 in contiguous runs;
        then every engine's input comes to `last`."""
    def advance(self, tick: int) -> None: ...
    def close(self) -> None: ...
    def drain(self, query: str, time: list[int], chunk_rows: int) -> list[ArrowCapsules]:
        """Every engine's new rows of `query` merged in the order of its int64 columns `time`
        (equal times in engine order), in record batches of at most `chunk_rows` rows."""

def merge_by_time(parts: list[list[ArrowCapsules]], time: list[int],
                  chunk_rows: int = 65536) -> list[ArrowCapsules]:
    """Several parts' drained outputs, each in the order of its int64 columns `time`, merged in
    that order (equal times in part order, each part's in its own order), in record batches of
    at most `chunk_rows` rows."""

class RowParts:
    """Engine(threads=N)'s engines fed one row at a time: each row goes to the engine of its key
    alone; the others are told the input's progress when catch_up() is called."""
    def __init__(self, engines: list[Engine]) -> None: ...
    # Input `stream` is split by its declared column `key` (-1: its rows go to the first engine).
    def set_key(self, stream: str, key: int) -> None: ...
    # Engine.push_row's, to the engine of the row's key.
    def push_row(self, stream: str, ts: object, values: dict[str, object],
                 names: tuple[str, ...]) -> bool: ...
    # Every engine knows that `stream` came to `tick` (a push split over all, an advance).
    def moved(self, stream: str, tick: int) -> None: ...
    # Tells every engine the progress that rows pushed to the others brought.
    def catch_up(self) -> None: ...
    def progress(self, stream: str) -> int: ...
    # An error while running (kind 'runaway' or 'internal') stops every engine.
    def stop(self, kind: str, what: str) -> None: ...
    # CoreError, naming the error that stopped the engines, if one did.
    def check_usable(self) -> None: ...

def snapshot_annex(data: bytes | bytearray | memoryview) -> bytes:
    """The annex of a snapshot, once its header and checksum are checked."""

def kernel_signatures() -> list[tuple[str, list[str], str, str, int]]:
    """(name, argument types, result type, doc, repeat) of every registered kernel. A variadic
    kernel has repeat > 0: its first `repeat` argument types recur one or more times, the rest
    follow once (case_when: [bool, T, T] with repeat 2 is (bool, T)+ T)."""

# The stage of the profile-guided build this core was compiled at: 'USE', 'OFF' or 'GENERATE'.
pgo: str

def mqt_segments(windows: list[int]) -> tuple[list[tuple[int, int]], str, list[float]]:
    """A shared window join's MQT segments for windows w1 <= ... <= wn (ticks, each >= 1;
    CoreError('input', ...) otherwise): the segments as (j, k) pairs (queries j+1..k), their text
    as paper 004 §6.2 writes orders ('1,2,3-10') and each query's weight."""

def operator_descriptors() -> list[dict[str, str | bool]]:
    """What each registered operator is (src_cpp/operators/descriptor.h): name, description,
    output, firing, lifetimes, partition, columns, role (strings), keeps_identity, shareable,
    tracks_lifetimes, arrival_order and negative_form (booleans)."""

class ResourceStore:
    """The in-process store of updatable resources (src_cpp/txn/resource_store.h)."""

    def __init__(self) -> None: ...
    def define(self, name: str, names: list[str], types: list[str], key: list[int]) -> None: ...
    def define_model(self, name: str) -> None: ...
    def undefine(self, name: str) -> bool: ...
    def begin_exclusive(self, names: list[str], timeout_s: float) -> None: ...
    def end_exclusive(self, names: list[str], writer: str, changed: bool) -> int: ...
    def has(self, name: str) -> bool: ...
    def names(self) -> list[str]: ...
    def spec(self, name: str) -> tuple[list[str], list[str], list[int]]: ...
    def commit(self, changes: list[tuple[str, str, tuple[object, object]]], timeout_s: float, writer: str) -> int:
        """Applies (resource, 'upsert' | 'delete' | 'replace', Arrow capsules) as one commit."""
    def current(self, name: str) -> tuple[int, tuple[object, object]]: ...
    def lock_shared(self, name: str, holder: str, timeout_s: float) -> bool: ...
    def unlock_shared(self, name: str, holder: str) -> None: ...
    def holders(self, name: str) -> list[str]: ...
    def version(self) -> int: ...
    def update_log(self) -> list[tuple[int, int, str, list[str], int, int]]: ...
