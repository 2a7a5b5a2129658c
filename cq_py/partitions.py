"""``Engine(threads=N)``: N core engines, each running one part of the input, on all cores.

The inputs are split by the key :func:`cq_py.spark.partitioning.partition_catalog` proves safe
(every window, join and aggregate relates only rows of one key value), as the Spark runner splits
them (SEMANTICS.md §7): a keyed input by the hash of its key (computed in the core,
``_core.partition_rows``, numbers hashed as doubles: equal keys meet, a BIGINT key and a DOUBLE
key that compare equal too), a relation without a key by its first column (a delete must meet the
row it ends), a stream without a key in N contiguous runs of rows (no operator relates two of its
rows: no hashing, no copy). Each part's engine runs on its own thread with the GIL released, so
the parts run at once: a stream's pushes, ``advance``, ``close`` and draining run in the core
(``_core.EngineGroup``), on threads of its own, engine k always on thread k, with the GIL
released for the whole call.

Every engine sees the whole input's progress: after a push, the engines that got none of its rows
are told how far the input has come (``advance_input``), so all complete the same instants and an
instant's results are fetchable when one engine's would be. ``push_row``'s rows need no split:
each goes to the engine of its key in one call into the core (``_core.RowParts``, which keeps how
far each engine has been told), and the others are told lazily: before anything reads results,
checks a timestamp against them, or adds a plan. A push is checked
whole before any engine runs a row (and a relation's deletes in every part), so a rejected push
changes nothing in any engine. Each query's output is the union of the parts' outputs, merged in
time order by a stable k-way merge in the core, every thread writing output columns: rows of
equal times in part order, then in each part's order (parts whose times do not overlap go out
as they are, uncopied).

Internal to :mod:`cq_py.engine`, which maps the core's errors (``_core.CoreError``) as for one
engine: this module raises them as the core does.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cq_core import _core
from cq_py.planner.logical import Catalog
from cq_py.spark.partitioning import PartitionPlan

__all__ = ["Layout", "Partitions", "join_annex", "split_annex"]

# Keys are hashed as doubles whatever their numeric type: a BIGINT key and a DOUBLE key that compare
# equal (a join of an INT column with a DOUBLE one) land in one part, and a script registered later
# that compares them needs no other split of the rows that came before.
_AS_DOUBLE = True


@dataclass(frozen=True)
class Layout:
    """How an engine's inputs are split: into ``parts`` engines, each input by its key column
    (None: a stream in contiguous runs, a relation by all its values). ``blocker`` says why a
    script runs on one engine (None when it need not)."""

    parts: int
    keys: dict[str, str | None]
    blocker: str | None = None

    @staticmethod
    def of(plan: PartitionPlan, threads: int, catalog: Catalog) -> Layout:
        """The layout of ``plan`` on ``threads`` cores: one engine when nothing is to gain. A
        relation without a key is split by its first column: a delete meets the row it ends (equal
        rows have equal first columns), and a query registered later that joins or groups the
        relation on that column (the usual key) can still run on the same split."""
        if not plan.partitionable:
            return Layout(1, {}, plan.blocker)
        if threads == 1:
            return Layout(1, {})
        keys = dict(plan.keys)
        for s in catalog.streams.values():
            if s.relation and keys.get(s.name) is None and s.columns:
                keys[s.name] = s.columns[0][0]
        return Layout(threads, keys)

    def describe(self, threads: int) -> str:
        """The line ``explain`` prints about the split.

        >>> print(Layout(2, {"s": "k"}).describe(2))
        Threads: 2 engines, one per part of the input: s split by key k
        """
        if self.parts == 1:
            why = f": {self.blocker}" if self.blocker else ""
            return f"Threads: one engine (threads={threads}){why}"
        split = ", ".join(
            f"{name} split by key {key}" if key else f"{name} any way (rows meet no other row)"
            for name, key in self.keys.items()
        )
        return f"Threads: {self.parts} engines, one per part of the input: {split or 'no input'}"


@dataclass(frozen=True)
class _Input:
    """What routing a push needs of one input: the index of its key column (none for a stream
    without a key)."""

    relation: bool
    width: int  # declared columns
    key: tuple[int, ...]


class Partitions:
    """``parts`` core engines, one per part of the input, driven as one (the calls of
    ``_core.Engine`` that :class:`cq_py.Engine` makes, on Arrow record batches)."""

    def __init__(
        self, cores: list[_core.Engine], layout: Layout, catalog: Catalog, batch_size: int
    ):
        self.cores = cores
        self.layout = layout
        self.batch_size = batch_size
        self._inputs: dict[str, _Input] = {}
        # push_row's rows, each to the engine of its key in one call; it keeps each input's
        # progress and how far each engine has been told it (push_row tells the others only when
        # something needs it: ``_catch_up``), and whether an error stopped the engines.
        self.rows = _core.RowParts(list(cores))
        self.set_inputs(catalog)
        self._pool: ThreadPoolExecutor | None = None
        # The engines driven as one by the core (pushes of streams, advance, close, drain): each
        # engine on its own thread, the same one every call.
        self._group = _core.EngineGroup(cores)

    # -- plans ------------------------------------------------------------------------------

    def set_layout(self, layout: Layout, catalog: Catalog) -> None:
        """Takes a layout that keeps the split of every input that has rows in the engines (a
        script registered while they run), and the catalog's inputs."""
        self.layout = layout
        self.set_inputs(catalog)

    def set_inputs(self, catalog: Catalog) -> None:
        """Reads the inputs' key columns from the catalog (after a script registered more)."""
        for s in catalog.streams.values():
            key = self.layout.keys.get(s.name)
            idx = tuple(i for i, (n, _) in enumerate(s.columns) if n == key)
            self._inputs[s.name] = _Input(s.relation, len(s.columns), idx)
            self.rows.set_key(s.name, idx[0] if idx else -1)

    def add_plan(self, plan: str) -> None:
        """Adds a plan fragment to every engine (the first refuses it for all, changing nothing)."""
        self._usable()
        self._catch_up()
        for core in self.cores:
            core.add_plan(plan)

    # -- data in ------------------------------------------------------------------------------

    def push(self, stream: str, batches: list[pa.RecordBatch]) -> None:
        """Pushes conformed ``batches`` (the declared columns, a relation's op, int64 ticks) of
        ``stream``: checked whole, split, each part run by its engine, all engines told the
        input's progress."""
        self._usable()
        self._catch_up()
        info = self._inputs[stream]
        first = self.cores[0]
        # The whole push, checked once (all engines have the same progress): columns, types,
        # timestamps, op values. A relation's deletes are checked in each part below.
        first.check(stream, [b.__arrow_c_array__() for b in batches], deletes=False)
        n = sum(b.num_rows for b in batches)
        if n == 0:
            return
        tail = next(b for b in reversed(batches) if b.num_rows)
        last = int(tail.column(tail.num_columns - 1)[-1].as_py())
        if not info.relation:
            # A stream, all in the core (EngineGroup.push, the GIL released throughout): a keyed
            # stream's rows routed by the hash of the key in one columnar pass, each engine's
            # thread gathering its own rows; a stream without a key in contiguous runs, uncopied.
            # Every engine runs its part at once, then learns the input's progress.
            key = info.key[0] if info.key else -1
            caps = [b.__arrow_c_array__() for b in batches]
            self._grouped(
                lambda: self._group.push(stream, caps, key, _AS_DOUBLE, self.batch_size, last)
            )
            self._moved(stream, last)
            return
        table = pa.Table.from_batches(batches)
        parts = len(self.cores)
        # A relation's changes are few: routed once, its deletes checked in every part first.
        keys = table.select(list(info.key)).combine_chunks().to_batches()[0]
        order, counts = _core.partition_rows(keys.__arrow_c_array__(), parts, _AS_DOUBLE)
        bounds = np.concatenate([[0], np.cumsum(counts)])
        if table.num_columns == info.width + 2:
            self._check_deletes(stream, table, order, bounds)

        def part(p: int) -> None:
            rows = order[bounds[p] : bounds[p + 1]]
            if len(rows):
                chunk = table.take(rows)
                self.cores[p].push(stream, [b.__arrow_c_array__() for b in chunk.to_batches()])
            self.cores[p].advance_input(stream, last)

        self._each(part, range(parts))
        self._moved(stream, last)

    def _check_deletes(
        self, stream: str, table: pa.Table, order: np.ndarray, bounds: np.ndarray
    ) -> None:
        """A relation's deletes checked in every part, before any part runs: the first failing
        row of the whole push is the error (each part's rows named by the push's row numbers)."""
        errors: list[_core.CoreError] = []
        for p, core in enumerate(self.cores):
            rows = order[bounds[p] : bounds[p + 1]]
            if not len(rows):
                continue
            part = table.take(rows)
            try:
                core.check(stream, [b.__arrow_c_array__() for b in part.to_batches()], rows=rows)
            except _core.CoreError as e:
                errors.append(e)
        if errors:
            raise min(errors, key=lambda e: -1 if e.args[3] is None else e.args[3])

    def advance(self, tick: int) -> None:
        """Every engine's inputs to ``tick`` (the engines run what completes, at once)."""
        self._usable()
        self._grouped(lambda: self._group.advance(tick))
        for stream in self._inputs:
            self._moved(stream, tick)

    def close(self) -> None:
        """Closes every engine (at once), after telling each how far every input has come."""
        if self.cores[0].closed:
            return
        self._usable()
        self._catch_up()
        self._grouped(self._group.close)

    @property
    def closed(self) -> bool:
        """Whether the engines are closed."""
        return bool(self.cores[0].closed)

    # -- results out --------------------------------------------------------------------------

    def drain(self, query: str, order_by: Sequence[int]) -> list[pa.RecordBatch]:
        """Every engine's new rows of ``query``, merged (in the core) in the order of the int64
        columns ``order_by`` (a stream's time, a relation's start): rows of equal times in part
        order, each part's in its own order."""
        self._catch_up()
        caps = self._group.drain(query, list(order_by), self.batch_size)
        return [pa.RecordBatch._import_from_c_capsule(s, a) for s, a in caps]

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self, annex: bytes) -> bytes:
        """One snapshot of all engines: engine 0's, whose annex holds ``annex`` and the others'
        snapshots (:func:`join_annex`); its checksum covers them all."""
        self._catch_up()
        others = [core.snapshot(b"") for core in self.cores[1:]]
        return bytes(self.cores[0].snapshot(join_annex(annex, others)))

    def restore(self, data: bytes | bytearray | memoryview, others: list[bytes]) -> None:
        """Restores every engine from :meth:`snapshot`'s bytes (``others``: the snapshots of
        engines 1, 2, ... that its annex holds)."""
        self.cores[0].restore(data)
        for core, blob in zip(self.cores[1:], others, strict=True):
            core.restore(blob)

    # -- internals ----------------------------------------------------------------------------

    def _usable(self) -> None:
        self.rows.check_usable()

    def _moved(self, stream: str, tick: int) -> None:
        """Every engine knows that ``stream`` has come to ``tick``."""
        self.rows.moved(stream, tick)

    def _catch_up(self) -> None:
        """Tells every engine the progress push_row brought to the others."""
        self.rows.catch_up()

    def _grouped(self, call: Callable[[], Any]) -> None:
        """``call()``, a call of the engine group: an error while running (a runaway loop) stops
        the whole engine, as it stops one."""
        try:
            call()
        except _core.CoreError as e:
            self._stop_on(e)
            raise

    def _stop_on(self, error: BaseException) -> None:
        """An error while running (a runaway loop, an internal error) stops every engine:
        RowParts keeps it, and every later call checks it (:meth:`_usable`)."""
        if isinstance(error, _core.CoreError) and error.args[0] in ("runaway", "internal"):
            self.rows.stop(error.args[0], error.args[1])

    def _each(self, run: Callable[[int], Any], parts: Iterable[int]) -> None:
        """``run(p)`` for every part at once (part 0 on this thread), all of them run to the
        end; then the first part's error, if any. An error while running (a runaway loop) stops
        the whole engine, as it stops one."""
        parts = list(parts)
        if self._pool is None and len(parts) > 1:
            self._pool = ThreadPoolExecutor(len(self.cores) - 1, thread_name_prefix="cq-part")
        futures: list[Future[Any]] = []
        if len(parts) > 1:
            assert self._pool is not None
            futures = [self._pool.submit(run, p) for p in parts[1:]]
        errors: list[BaseException] = []
        try:
            run(parts[0])
        except BaseException as e:  # noqa: BLE001 - re-raised below, after the others finish
            errors.append(e)
        for f in futures:
            error = f.exception()
            if error is not None:
                errors.append(error)
        if errors:
            self._stop_on(errors[0])
            raise errors[0]


def join_annex(annex: bytes, others: list[bytes]) -> bytes:
    """``annex`` (JSON: no NUL byte) then, after a NUL, each of ``others`` after its length.

    >>> split_annex(join_annex(b'{"a": 1}', [b"xy", b""]))
    (b'{"a": 1}', [b'xy', b''])
    """
    out = [annex, b"\0"]
    for blob in others:
        out += [struct.pack("<Q", len(blob)), blob]
    return b"".join(out)


def split_annex(annex: bytes) -> tuple[bytes, list[bytes]]:
    """:func:`join_annex` undone: (the JSON, the other engines' snapshots); a ValueError for
    bytes it did not make. An annex without a NUL is one engine's: (annex, [])."""
    head, sep, rest = annex.partition(b"\0")
    if not sep:
        return annex, []
    blobs, at = [], 0
    view = memoryview(rest)
    while at < len(rest):
        if at + 8 > len(rest):
            raise ValueError("a partition snapshot's length is cut short")
        (size,) = struct.unpack_from("<Q", rest, at)
        at += 8
        if size > len(rest) - at:
            raise ValueError("a partition snapshot runs past the end of the snapshot")
        blobs.append(bytes(view[at : at + size]))
        at += size
    return head, blobs
