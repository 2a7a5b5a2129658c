"""The engine users drive: register CQL, push data, read results (SEMANTICS.md §6).

Python parses, checks and plans; the C++ core (``cq_core._core``) runs the plan over Arrow batches
that cross the boundary as Arrow C Data Interface capsules, without copies.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import datetime
import functools
import json
import math
import operator
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cq_core import _core
from cq_py.errors import (
    ArgumentError,
    CallbackError,
    CQError,
    CQLSemanticError,
    InputError,
    MemoryLimitError,
    ResourceError,
    RunawayLoopError,
    SnapshotError,
    from_core,
)
from cq_py.io.databases import DatabaseError
from cq_py.optimizer import Clock, QueryGroups, base_groups, profile_of
from cq_py.parser import ast, parse
from cq_py.partitions import Layout, Partitions, split_annex
from cq_py.planner import Catalog, Planner
from cq_py.planner import explain as render_plan
from cq_py.planner import types as T
from cq_py.planner.expressions import missing_kernels
from cq_py.planner.logical import Node, QueryDef, StreamDef
from cq_py.planner.master_sharing import MasterShares, wider
from cq_py.planner.operators import find
from cq_py.planner.planner import TIME_UNIT_NS
from cq_py.resources import DatabaseResource, ModelReader, ResourceStore
from cq_py.rowset import RowSet
from cq_py.spark.partitioning import CQPartitionWarning, partition_catalog
from cq_py.swj_options import shared_join_entry, shared_join_nodes, swj_options, trace_tables
from cq_py.tables import TableView, Views
from cq_py.ticks import MAX_TICK, MIN_TICK, UNITS, tick_range, to_ticks

LIFETIMES = ("direct", "negative")
EXECUTORS = ("dts", "heartbeat", "scheduled")
SCHEDULERS = ("round_robin",)  # executor="scheduled"'s policies (src_cpp/schedulers/)
# Paper 002's concurrency control of resource reads (src_cpp/txn/transaction_manager.h): "none"
# reads whatever is current; 2pl, snapshot and optimistic make each redo area's reads one
# transaction, committed by its commit operator.
TXNS = ("none", "2pl", "snapshot", "optimistic")
# When a redo area holding an overlapping window is reset and replayed at a commit (§4.1.3).
REDOS = ("on_change", "always")
# A store resource's column types as the planner and CQL name them.
_TYPE_NAMES = {
    pa.int64(): T.INT64,
    pa.float64(): T.FLOAT64,
    pa.string(): T.UTF8,
    pa.bool_(): T.BOOL,
}
_ARROW_OF = {t: a for a, t in _TYPE_NAMES.items()}
_CQL_NAMES = {
    pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE",
    pa.string(): "VARCHAR",
    pa.bool_(): "BOOLEAN",
}
TIME_UNITS = UNITS
OP = "op"  # the column of a relation's input that marks inserts ('+') and deletes ('-')


def _printable(text: str) -> str:
    r"""`text` with control characters escaped (line breaks kept): a message that quotes damaged
    bytes stays one readable message.

    >>> _printable("a\x01b")
    'a\\x01b'
    """
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


def _core_error(e: _core.CoreError) -> CQError | RuntimeError:
    """The one place where the core's error categories become cq_py exceptions."""
    return from_core(*e.args)


def _found(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ArgumentError(
            f"Engine option {name} must be one of {', '.join(map(repr, choices))}; "
            f"found {_found(value)}"
        )
    return value


def _flag(name: str, value: Any) -> bool:
    # Only a real boolean: "no" or "false" would be true, and 1 is a likely slip for a count.
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"Engine option {name} must be True or False; found {_found(value)}")
    return bool(value)


def _positive(name: str, value: Any, top: float, what: str) -> float:
    """A number in (0, top] (top = inf: finite), else an ArgumentError saying it is ``what``."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not 0 < value <= top
        or value == float("inf")
    ):
        raise ArgumentError(f"Engine option {name} must be {what}; found {_found(value)}")
    return float(value)


def _count(name: str, value: Any) -> int:
    """A positive integer the core can hold (int64)."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, np.integer))
        or not 1 <= value <= 2**63 - 1
    ):
        raise ArgumentError(
            f"Engine option {name} must be a positive integer (at most "
            f"{2**63 - 1}); found {_found(value)}"
        )
    return int(value)


MAX_THREADS = 1024


def machine_cores() -> int:
    """The cores this process may run on: ``Engine(threads=...)``'s default. The CPUs it is
    allowed (its affinity, which a container or ``taskset`` narrows) where the system says,
    else ``os.cpu_count()``.

    >>> machine_cores() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _threads(value: Any) -> int:
    if value is None:
        return min(machine_cores(), MAX_THREADS)
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, np.integer))
        or not 1 <= value <= MAX_THREADS
    ):
        raise ArgumentError(
            f"Engine option threads must be a positive integer (at most {MAX_THREADS}) or None "
            f"(the machine's cores); found {_found(value)}"
        )
    return int(value)


def _cql_text(cql: Any, call: str) -> str:
    if not isinstance(cql, str):
        hint = (
            " (decode bytes first: cql.decode('utf-8'))"
            if isinstance(cql, (bytes, bytearray))
            else ""
        )
        raise ArgumentError(f"{call} takes CQL text as a str; found {type(cql).__name__}{hint}")
    return cql


def resident_bytes() -> int:
    """The resident memory of this process, in bytes: from /proc on Linux, the peak from
    getrusage elsewhere (macOS; a bound on the peak still stops growth)."""
    try:
        return int(Path("/proc/self/statm").read_bytes().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        pass
    try:
        import resource
    except ImportError:
        raise ArgumentError(
            "Engine option max_memory needs Linux or macOS (the process's memory "
            "cannot be measured here)"
        ) from None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # bytes on macOS


def _page_size() -> int:
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 4096


_PAGE = _page_size()


class _Subscriber:
    """A callback of :meth:`Engine.subscribe` and the batches it has not taken yet."""

    __slots__ = ("backlog", "callback")

    def __init__(self, callback: Callable[[pa.RecordBatch], Any]):
        self.callback = callback
        self.backlog: collections.deque[pa.RecordBatch] = collections.deque()


def _rows_prefix(rows: list[dict[str, Any]], key: str, n: int) -> pa.Array:
    """Column ``key`` of the first ``n`` rows, as pyarrow would convert it."""
    return pa.array([r.get(key) for r in rows[:n]])


def _series_prefix(series: Any, n: int) -> pa.Array:
    """The first ``n`` values of a pandas Series, as pyarrow would convert them."""
    return pa.array(series.iloc[:n], from_pandas=True)


def _unconvertible(
    where: str,
    stream: str,
    error: Exception,
    columns: Mapping[str, Callable[[int], pa.Array]],
    n: int,
    value: Callable[[str, int], Any],
) -> InputError:
    """The :class:`InputError` for rows Arrow could not convert: the first column that does not
    convert on its own and, by bisection over its prefixes (the error path only, a logarithmic
    number of conversions), the first row that makes it fail."""
    for name, prefix in columns.items():
        try:
            prefix(n)
            continue
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            pass
        lo, hi = 0, n  # prefix(lo) converts, prefix(hi) does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                prefix(mid)
                lo = mid
            except (pa.ArrowException, OverflowError, TypeError, ValueError):
                hi = mid
        row = hi - 1
        v = value(name, row)
        detail = "; ".join(map(str, error.args)) if error.args else str(error)
        why = (
            "Arrow cannot hold"
            if row == 0
            else "does not share an Arrow type with the rows before it"
        )
        return InputError(
            f"{where}: column '{name}' does not convert to an Arrow column: "
            f"row {row} holds {_found(v)}, which {why} ({detail})",
            stream=stream,
            row=row,
        )
    return InputError(
        f"{where}: the data does not convert to an Arrow table: {error}", stream=stream
    )


class Engine:
    """A continuous-query engine on this machine.

    Options: ``time_unit`` gives durations (``[Range 5 SECONDS]``) and Arrow timestamp inputs their
    meaning in ticks ('s', 'ms', 'us' or 'ns'); ``lifetime`` and ``executor`` choose the execution
    strategy (SEMANTICS.md §5); ``expose_steps=True`` adds the ε-step columns to results;
    ``auto_delay=True`` puts an ε delay into each loop that has none;
    ``expiration="insertion_sort"`` replaces the lazy sorting of expiration sets by insertion sort
    (the baseline of paper 003 §4.2). ``fuse=False`` plans an ISTREAM or DSTREAM of a grouped
    aggregate as two operators instead of one (cq_py/planner/fusion.py says when they fuse; the
    results are the same). ``share_joins=False`` plans every join alone instead of sharing the
    joins of a script that differ only in their ``[Range w]`` windows as one shared window join
    (paper 004; cq_py/planner/shared_joins.py says when they share, ``explain()`` which did and
    why the others did not; the results are the same). ``swj_buffer=B`` runs each shared join in
    bounded mode (lossy, opt-in; paper 004): each side holds B tuples, the work is scheduled by
    ``swj_scheduler`` ("mqt", "fifo", "mandf", "admandf") on a ``swj_clock`` ("work": counted
    work, independent of how input is pushed; "wall": elapsed time), with periods of
    ``swj_period_ms``, β0 ``swj_beta0`` and load ``swj_load``; :meth:`shared_joins` counts the
    (tuple, query) pairs processed, dropped and pending, :meth:`shared_join_trace` gives the
    periods and, with ``swj_trace=True``, the jobs (cq_py/swj_options.py; dts only, one engine).
    For ``executor="dts"``,
    ``hybrid=False`` splits time per instant everywhere instead of only inside loops (paper 000
    as published); ``max_run`` is the heartbeat executor's limit on consecutive executions of
    one operator. ``executor="scheduled"`` (paper 002 §5) runs the heartbeat executor's queues
    with one row per item under a scheduler policy: ``scheduler`` ("round_robin") picks whose turn
    it is, ``batch`` (default 1) is how many evaluations (rows taken from an input queue) an
    operator gets per turn, and ``gatekeeper`` switches §6's gatekeeper constraint (no effect
    until resources are planned: without them there are no gatekeepers). :meth:`stats` gives
    each operator's evaluations. The results are DTS's.

    Paper 002's resources and models run under ``executor="scheduled"``: ``resources`` is the
    :class:`cq_py.ResourceStore` that ``REGISTER RESOURCE`` without a url reads and whose models
    ``REGISTER MODEL`` calls (a new empty store by default, :attr:`resources`); ``txn`` is the
    concurrency control of those reads: ``"none"`` (each read sees the resource as it stands),
    ``"2pl"`` (shared locks from a transaction's first read to its commit), ``"snapshot"`` (all
    of a redo area's resources locked, pinned at one version, released) or ``"optimistic"``
    (last-update stamps validated at the commit, the transaction aborted when one moved), each
    redo area's reads one transaction at a time, ended by its commit operator
    (:meth:`commit_log`); a read waits at most ``lock_timeout`` seconds for a lock.
    ``redo`` ("on_change" or "always") says when a redo area holding an overlapping window is
    reset and replayed at a commit (§4.1.3). :meth:`read_log` lists the reads.

    A loop of recursive queries that does not settle is stopped with :class:`RunawayLoopError`,
    naming the loop, when it takes more than ``max_loop_steps`` ε steps in one tick (default
    1,000,000); when more than ``max_loop_rows`` rows go round it in one tick, or past its inputs'
    progress in all (default 10,000,000: rows that multiply); or when it still produces rows at
    more than ``max_loop_ticks`` ticks past its inputs' progress (default 1,000,000: a loop that
    keeps going after ``close()`` or an ``advance`` far ahead). Ticks are counted where the loop
    produces rows, not as time passes: a countdown of 3,600 steps with a delay of ``<1 SECOND>``
    uses 3,600 of them in any ``time_unit``. After the error the engine takes no more input, but
    :meth:`fetch` still returns the results final before it (below the inputs' progress).

    ``batch_size`` (rows; default 65,536) is how many rows the core hands its operators at a time:
    a larger push (a table of 10,000,000 rows given to :meth:`push` or :func:`run`) is validated
    whole, then run as slices of that many rows, with the same results as one batch. Every
    operator's output is then the size of a slice, not of the input, so a query whose state is
    bounded runs in bounded memory however large the input. 65,536 rows make slices large enough
    that the per-batch work (a call per operator, a few allocations) is spread over many rows,
    and small enough that a slice's columns (512 KiB of int64) stay in cache and below the C
    allocator's mapping threshold, so each slice reuses the memory the one before freed instead of
    mapping, faulting in and zeroing fresh pages (which took a third of the time of one
    10,000,000-row batch). It is the batch size ``cq run`` reads files in, too.

    ``max_memory`` (bytes; default None, no bound) stops an engine whose state outgrows the
    machine: windows over unbounded input (``[Range Unbounded]``, relations, DISTINCT, joins and
    aggregates over them) keep what they have seen, so memory grows with the input. While the
    process's resident memory is above the bound, ``push`` and ``advance`` are refused with
    :class:`MemoryLimitError` and change nothing; ``fetch``, ``snapshot`` and ``close`` still work.

    ``threads`` (default None: the machine's cores, :func:`machine_cores`) runs that many core
    engines, each on its own thread with one part of the input, when the script has a partition
    key: one that every window, join and aggregate relates rows of (the key
    :func:`cq_py.spark.partition_plan` proves, as for Spark). A keyed input is split by the hash
    of its key, a relation without a key by its values, a stream without a key (one no operator
    relates two rows of) in runs of rows; every engine sees every input's progress, and each
    query's output is merged in time order (rows of equal times in part order). Results equal
    one engine's as bags per instant. A script without such a key runs on one engine, which
    ``explain()`` says, with a :class:`cq_py.spark.CQPartitionWarning` naming the operator when
    ``threads`` was asked for. The split is decided by the scripts executed before the first
    push or advance (an earlier split is redone then); once input has come, a script that needs
    another split of an input already split (a key of its own, or a key for an input split
    without one) is refused with :class:`CQLSemanticError`, as Flink and Spark keep a running
    job's partitioning: execute every script first, or use ``threads=1``. Snapshots hold every
    engine's state and restore with the same number of engines.

    >>> import pyarrow as pa, cq_py
    >>> eng = cq_py.Engine()
    >>> eng.execute("REGISTER STREAM s(a INT, b DOUBLE);"
    ...             "REGISTER QUERY q AS ISTREAM(SELECT a, b * 2 AS c FROM s [Range 10] "
    ...             "WHERE b > 0.5);")
    >>> eng.push("s", pa.table({"a": [1, 2], "b": [0.1, 0.9], "ts": [0, 1]}))
    >>> eng.fetch("q").to_pylist()
    [{'a': 2, 'c': 1.8, 'ts': 1}]
    """

    def __init__(
        self,
        time_unit: str = "ms",
        lifetime: str = "direct",
        executor: str = "dts",
        *,
        expose_steps: bool = False,
        auto_delay: bool = False,
        expiration: str = "lazy",
        hybrid: bool = True,
        fuse: bool = True,
        share_joins: bool = True,
        max_loop_steps: int = 1_000_000,
        max_run: int = 20,
        scheduler: str = "round_robin",
        batch: int = 1,
        gatekeeper: bool = True,
        max_loop_ticks: int = 1_000_000,
        max_loop_rows: int = 10_000_000,
        max_memory: int | None = None,
        batch_size: int = 65_536,
        threads: int | None = None,
        mqo: bool = True,
        theta1: float = 0.5,
        theta2: float = 0.1,
        log_period: float = 1800.0,
        swj_buffer: int | None = None,
        swj_scheduler: str | None = None,
        swj_period_ms: float = 500,
        swj_beta0: float = 0.05,
        swj_clock: str = "work",
        swj_load: str = "arrived",
        swj_trace: bool = False,
        resources: ResourceStore | None = None,
        txn: str = "none",
        redo: str = "on_change",
        lock_timeout: float = 10.0,
    ):
        # Every option is checked here, with the package's error: the core's binding would
        # otherwise answer a wrong type with its whole signature, or take "no" for True.
        self.expiration = _choice("expiration", expiration, ("lazy", "insertion_sort"))
        self.time_unit = _choice("time_unit", time_unit, TIME_UNITS)
        self.lifetime = _choice("lifetime", lifetime, LIFETIMES)
        self.executor = _choice("executor", executor, EXECUTORS)
        self.expose_steps = _flag("expose_steps", expose_steps)
        self.auto_delay = _flag("auto_delay", auto_delay)
        self.hybrid = _flag("hybrid", hybrid)
        self.fuse = _flag("fuse", fuse)
        self.share_joins = _flag("share_joins", share_joins)
        self._max_loop_steps = _count("max_loop_steps", max_loop_steps)
        self._max_run = _count("max_run", max_run)
        self.scheduler = _choice("scheduler", scheduler, SCHEDULERS)
        self._batch = _count("batch", batch)
        self.gatekeeper = _flag("gatekeeper", gatekeeper)
        self.txn = _choice("txn", txn, TXNS)
        self.redo = _choice("redo", redo, REDOS)
        if (
            isinstance(lock_timeout, (bool, np.bool_))
            or not isinstance(lock_timeout, (int, float, np.integer, np.floating))
            or not 0 <= lock_timeout < 1e9
        ):
            raise ArgumentError(
                "Engine option lock_timeout must be a number of seconds, 0 or more; found "
                f"{_found(lock_timeout)}"
            )
        self.lock_timeout = float(lock_timeout)
        if txn != "none" and self.executor != "scheduled":
            raise ArgumentError(
                f"Engine option txn={txn!r} runs under executor='scheduled' only (its commit "
                f"operators hold their output until their transaction commits); found "
                f"executor={self.executor!r}"
            )
        if resources is not None and not isinstance(resources, ResourceStore):
            raise ArgumentError(
                f"Engine option resources must be a cq_py.ResourceStore; found {_found(resources)}"
            )
        #: The in-process store that REGISTER RESOURCE without a url reads (paper 002).
        self.resources = resources if resources is not None else ResourceStore()
        # The resources bound to the core so far, by lower-cased name: the call binding each to
        # a core (again on every core built later).
        self._bound: dict[str, Callable[[_core.Engine], None]] = {}
        # The store resources the script being executed defined (undefined if it is refused).
        self._defined: list[str] = []
        # Resources' database connections by SQLite file (one file, one lock: see _Connection).
        self._connections: dict[str, Any] = {}
        self._max_loop_ticks = _count("max_loop_ticks", max_loop_ticks)
        self._max_loop_rows = _count("max_loop_rows", max_loop_rows)
        self._max_memory = None if max_memory is None else _count("max_memory", max_memory)
        self._batch_size = _count("batch_size", batch_size)
        self._threads = _threads(threads)
        self.mqo = _flag("mqo", mqo)
        self._theta1 = _positive("theta1", theta1, 1.0, "a number in (0, 1]")
        self._theta2 = _positive("theta2", theta2, 1.0, "a number in (0, 1]")
        self._log_period = _positive(
            "log_period", log_period, float("inf"), "a positive number of seconds"
        )
        # Bounded shared joins (paper 004; cq_py/swj_options.py): checked here, run on one engine
        # (B tuples per side of the whole input, not of a part).
        self._swj = swj_options(
            buffer=swj_buffer,
            scheduler=swj_scheduler,
            period_ms=swj_period_ms,
            beta0=swj_beta0,
            clock=swj_clock,
            load=swj_load,
            trace=swj_trace,
            executor=self.executor,
        )
        if self._swj.bounded:
            self._threads = 1
        # Warn of a script that runs on one engine only when threads were asked for.
        self._threads_asked = threads is not None and self._threads > 1
        if self._max_memory is not None:
            resident_bytes()  # refuses the option where it cannot be measured
        self._catalog = Catalog()
        self._cql: list[str] = []  # the texts execute() registered, in order (for snapshots)
        # Whether input has come (a push or an advance): a query registered from then on sees the
        # relations as they stand and re-derives the relation-valued queries it reads (SEMANTICS.md
        # §4).
        self._running = False
        self._late: list[bool] = []  # for each text of _cql: registered while running
        self._core = self._new_core()
        # With threads > 1 and a partition key: the engines of the parts (self._core is the
        # first). The plan fragments added so far, to build them again when the split changes.
        self._parts: Partitions | None = None
        self._layout: Layout | None = None  # decided by the first execute()
        self._plans: list[str] = []
        self._advanced: int | None = None  # the last advance(), for engines built before any plan
        self._subscribers: dict[str, list[_Subscriber]] = {}
        self._watched: list[str] | None = None  # the subscribed queries as the core has them
        self._backlogged: set[str] = set()  # queries whose callbacks raised at the last delivery
        # push_row's inputs as the caller names them: (registered name, declared column names).
        self._row_inputs: dict[str, tuple[str, tuple[str, ...]]] = {}
        # What push_row hands a row in its exact form to: the one engine, or the parts' router.
        self._rows: _core.Engine | _core.RowParts = self._core
        # push's inputs that need no conforming: (stream, ts column) -> the Arrow schema they have.
        self._ready_schemas: dict[tuple[str, str], pa.Schema] = {}
        # REGISTER TABLE's cached views (cq_py/tables.py), and the furthest tick any input has
        # reached: where refresh_tables() applies their changes.
        self._tables = Views()
        self._table_tick = MIN_TICK
        # Each input's furthest tick (by lower-cased name) and the last advance(): the clocks
        # (REGISTER CLOCK) tick as the least of them passes their ticks. Per clock: its period,
        # offset and next tick.
        self._progress: dict[str, int] = {}
        self._floor = MIN_TICK
        self._clocks: dict[str, list[int]] = {}
        self._restoring = False
        # Row sets (rowset()) by query name; the queries dropped (drop()): where in _cql each
        # was dropped (for snapshots), and their lower-cased names (for messages).
        self._rowsets: dict[str, list[RowSet]] = {}
        self._drops: list[tuple[int, str]] = []
        self._dropped: set[str] = set()
        # MASTER queries' base groups and clusters (paper 001 §4.2–§4.5, cq_py/optimizer), the
        # arrival log they are found on, and the period of that log in ticks.
        self._groups = QueryGroups(
            self._theta1,
            self._theta2,
            max(1, int(self._log_period * 10**9) // TIME_UNIT_NS[self.time_unit]),
            enabled=self.mqo,
        )
        # The windows and joins the MASTER queries of a base group share (§4.4,
        # planner/master_sharing.py), and each stream's pushes so far (a part tells its rows from
        # those of a query registered later by them).
        self._master_shares = MasterShares(enabled=self.mqo, negative=self.lifetime == "negative")
        self._pushes: dict[str, int] = {}
        self._base_groups: tuple[list[str], list[list[int]]] = ([], [])
        # For each text of _cql, what its sharing choices read (pushes, progress, floor), so that
        # a restored engine plans it the same way.
        self._share_inputs: list[dict[str, Any]] = []

    # -- CQL ----------------------------------------------------------------------------------

    def execute(self, cql: str) -> None:
        """Registers the streams and queries of ``cql`` (one or more statements).

        Either every statement is registered or, on the first error, none is.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s [Now];")
        >>> eng.query_names()
        ['q']
        """
        script = parsed = parse(_cql_text(cql, "execute()"))
        new_views: list[TableView] = []
        if any(isinstance(st, ast.RegisterTable) for st in script.statements):
            script, new_views = self._tables.resolve(script)
        if not self._running and (new_views or self._tables):
            try:
                script, pushed = self._tables.push_down(script, new_views)
            except DatabaseError as e:
                self._tables.discard(new_views)
                raise CQLSemanticError(f"a view over a database table: {e}") from None
            new_views += pushed
        try:
            self._execute(cql, script)
        except BaseException:
            self._tables.discard(new_views)
            raise
        if script is not parsed:
            self._tables.commit(new_views, script)
            for view in new_views:
                assert view.content is not None
                if not self._restoring:  # (restoring: the core's state holds the rows)
                    self._push_table(view.input, view.content.schema.empty_table(), view.content)
            # Rows are in: a query registered from now on sees the tables as they stand.
            self._running = self._running or bool(new_views)
        self._start_clocks()

    def _execute(self, cql: str, script: ast.Script) -> None:
        planner = Planner(
            self._catalog,
            self.time_unit,
            cql,
            self.expose_steps,
            self.auto_delay,
            self.expiration,
            late=self._running,
            fuse=self.fuse,
            share_joins=self.share_joins,
            lifetime=self.lifetime,
            swj_bounded=self._swj.plan_params(self.time_unit),
            master_shares=self._master_shares,
            executor=self.executor,
            txn=self.txn,
        )
        shares = self._master_shares
        kept = [(p, list(p.members)) for p in shares.parts]
        bound = dict(self._bound)
        self._defined = []
        try:
            self._share_groups(script, planner.ticks)
            catalog, ops = planner.plan(script)
            _check_runnable(ops, planner, self.executor)
            # (The split refused before anything is bound or defined in the store.)
            layout = self._layout_for(catalog) if self._threads != 1 else None
            self._bind_resources(catalog, ops)
            plan = json.dumps({"operators": [op.to_plan() for op in ops]}) if ops else None
            try:
                self._add_plan(plan, catalog, layout)
            except _core.CoreError as e:
                raise _core_error(e) from None
        except BaseException:
            shares.parts = [p for p, _ in kept]
            for p, members in kept:
                p.members = members
            # A resource bound for a rejected script is bound again (with the columns then
            # declared) by the next script that reads it; one it defined in the store is not
            # defined there any more.
            self._bound = bound
            for name in self._defined:
                self.resources._core.undefine(name)
            raise
        shares.commit(catalog, len(kept))
        self._share_inputs.append(
            {"pushes": dict(self._pushes), "progress": dict(self._progress), "floor": self._floor}
        )
        self._catalog = catalog
        self._cql.append(cql)
        self._late.append(self._running)
        self._group_queries(script, planner.ticks)

    def _replay_share_inputs(self, inputs: Any) -> None:
        """Restoring: the pushes, progress and floor a text's sharing choices read when it was
        first executed (None in snapshots older than sharing, which share nothing)."""
        if inputs is None:
            return
        if not (
            isinstance(inputs, dict)
            and all(isinstance(inputs.get(k), dict) for k in ("pushes", "progress"))
            and type(inputs.get("floor")) is int
            and all(type(v) is int for k in ("pushes", "progress") for v in inputs[k].values())
        ):
            raise ValueError("its sharing inputs are not counts and ticks")
        self._pushes, self._progress, self._floor = (
            dict(inputs["pushes"]),
            dict(inputs["progress"]),
            inputs["floor"],
        )

    def _share_groups(self, script: ast.Script, ticks: Callable[[ast.Duration], int]) -> None:
        """For the planner: the base group each MASTER query of ``script`` joins (its first
        member, and each stream's widest window in it), and how far the streams have come."""
        shares = self._master_shares
        shares.groups = {}
        if not self.mqo:
            return
        shares.pushed = dict(self._pushes)
        shares.last_row = dict(self._progress)
        shares.floor = self._floor if self._floor > MIN_TICK else None
        new = [
            profile_of(st.name, st.query, ticks)
            for st in script.statements
            if isinstance(st, ast.RegisterQuery) and isinstance(st.query, ast.Master)
        ]
        if not new:
            return
        profiles = self._groups.profiles + new
        # The groups of the queries registered before, kept while no query was dropped: one
        # registration places one query, not every query again.
        cached, groups_before = self._base_groups
        known = groups_before if cached == [p.name for p in self._groups.profiles] else None
        groups = base_groups(profiles, self._theta1, known)
        self._base_groups = ([p.name for p in profiles], groups)
        first_new = len(self._groups.profiles)
        for group in groups:
            if group[-1] < first_new:
                continue  # (no query of this script in it)
            names = [profiles[k].name for k in group]
            widths: dict[str, int | None] = {}
            for k in group:
                for stream, w in profiles[k].widths.items():
                    if w is None:
                        continue
                    ticks_w = None if math.isinf(w) else int(w)
                    widths[stream] = wider(widths.get(stream, ticks_w), ticks_w)
            for n in names:
                shares.groups[n.lower()] = (names[0].lower(), widths)

    def _group_queries(self, script: ast.Script, ticks: Callable[[ast.Duration], int]) -> None:
        """The MASTER queries ``script`` registered join the optimizer's base groups (``ticks``:
        the planner's conversion of durations)."""
        groups = self._groups
        for key, sdef in self._catalog.streams.items():
            if sdef.origin == "clock":
                groups.clocks[key] = Clock(sdef.every, sdef.offset)
            elif not sdef.relation:
                groups.streams.add(key)
        for st in script.statements:
            if isinstance(st, ast.RegisterQuery) and isinstance(st.query, ast.Master):
                groups.add(profile_of(st.name, st.query, ticks))

    def _bind_resources(self, catalog: Catalog, ops: list[Node]) -> None:
        """Binds each model the model_apply operators of ``ops`` call (the store's, by name:
        :meth:`ResourceStore.set_model`) and each resource their reference joins read (paper 002)
        to the core, the first time one is used. A resource without a url is the store's of
        that name (defined with the declared columns and key when the store lacks it; a
        :class:`CQLSemanticError` naming both when they differ), with one a
        :class:`DatabaseResource` of its table."""
        # Every resource of the store checked against its declaration before any is defined
        # there: a rejected script leaves the store as it was.
        for op in ops:
            if op.op == "reference_join" and op.params["resource"].lower() not in self._bound:
                st = catalog.resources[op.params["resource"].lower()]
                assert isinstance(st, ast.RegisterResource)
                if st.url is None:
                    self._check_store_resource(st)
        for op in ops:
            if op.op == "model_apply" and op.params["model"].lower() not in self._bound:
                returns = pa.schema([(n, _ARROW_OF[t]) for n, t in op.params["returns"]])
                model = ModelReader(self.resources, op.params["model"], returns)

                def bind_model(core: _core.Engine, m: ModelReader = model) -> None:
                    core.bind_model(m.name, m)

                self._bound[op.params["model"].lower()] = bind_model
                bind_model(self._core)
            if op.op != "reference_join" or op.params["resource"].lower() in self._bound:
                continue
            st = catalog.resources[op.params["resource"].lower()]
            assert isinstance(st, ast.RegisterResource)
            cols = [(c.name, T.FROM_CQL[c.type.name]) for c in st.columns]
            names = [n.lower() for n, _ in cols]
            key = [names.index(k.lower()) for k in st.key]
            if st.url is None:
                self._bind_store_resource(st, cols, key)
                continue
            try:
                reader = DatabaseResource(
                    st.url, st.remote or st.name, cols, list(st.key), st.name, self._connections
                )
            except ResourceError as e:
                raise CQLSemanticError(
                    f"resource '{st.name}': {e}", st.pos.line, st.pos.column
                ) from None
            if self.txn != "none":
                try:  # (before anything is registered: 2pl on DuckDB, optimistic unversioned)
                    reader.check_strategy(self.txn)
                except ResourceError:
                    reader.close()
                    raise
            spec = ([n for n, _ in cols], [t for _, t in cols], key)

            def bind(core: _core.Engine, args: tuple[Any, ...] = (st.name, *spec, reader)) -> None:
                core.bind_resource(*args)

            self._bound[st.name.lower()] = bind
            bind(self._core)

    def _check_store_resource(self, st: ast.RegisterResource) -> None:
        """REGISTER RESOURCE without a url: a :class:`CQLSemanticError` unless it has a key and
        the store lacks ``st.name`` or holds it with the declared columns and key."""
        store = self.resources
        cols = [(c.name, T.FROM_CQL[c.type.name]) for c in st.columns]
        declared = (
            "("
            + ", ".join(f"{c.name} {c.type.name}" for c in st.columns)
            + ") KEY ("
            + ", ".join(st.key)
            + ")"
        )
        if not st.key:
            raise CQLSemanticError(
                f"resource '{st.name}' of the in-process store needs a KEY (col, ...): the "
                "store keeps keyed tables",
                st.pos.line,
                st.pos.column,
            )
        if st.name not in store.names():
            return
        have, have_key = store.schema(st.name)
        fits = [f.name.lower() for f in have] == [n.lower() for n, _ in cols] and [
            k.lower() for k in have_key
        ] == [k.lower() for k in st.key]
        fits = fits and all(
            _TYPE_NAMES.get(f.type) == t for f, (_, t) in zip(have, cols, strict=True)
        )
        if not fits:
            stored = (
                "("
                + ", ".join(f"{f.name} {_CQL_NAMES.get(f.type, f.type)}" for f in have)
                + ") KEY ("
                + ", ".join(have_key)
                + ")"
            )
            raise CQLSemanticError(
                f"resource '{st.name}' is registered as {declared}, but the store holds it as "
                f"{stored}",
                st.pos.line,
                st.pos.column,
            )

    def _bind_store_resource(
        self, st: ast.RegisterResource, cols: list[tuple[str, str]], key: list[int]
    ) -> None:
        """REGISTER RESOURCE without a url: the store's resource ``st.name`` (defined there with
        the declared columns and key when the store lacks it)."""
        store = self.resources
        self._check_store_resource(st)
        if st.name not in store.names():
            try:
                store._core.define(st.name, [n for n, _ in cols], [t for _, t in cols], key)
            except _core.CoreError as e:
                raise _core_error(e) from None
            self._defined.append(st.name)
        name = st.name

        def bind(core: _core.Engine) -> None:
            core.bind_store_resource(name, store._core)

        self._bound[st.name.lower()] = bind
        bind(self._core)

    def resources_read(self) -> list[str]:
        """The resources and models (paper 002) the registered queries read, lower-cased, in
        name order.

        >>> Engine().resources_read()
        []
        """
        return sorted(self._bound)

    def read_log(self) -> pa.Table:
        """The reads of resources the reference operators made (paper 002), in order: the
        ``operator`` (its id in :meth:`explain`), the ``resource``, the ``version`` read (the
        store's commit number, a database table's last-update stamp), the ``instant`` (the
        timestamp of the row being processed) and the resource's ``rows`` read. The engine keeps
        the latest 2**20 (a continuous query keeps no log without bound); :meth:`stats` counts
        every read.

        >>> Engine().read_log().num_rows
        0
        """
        op, resource, names, version, instant, rows = self._core.read_log()
        return pa.table(
            {
                "operator": pa.array(op, pa.int64()),
                "resource": pa.DictionaryArray.from_arrays(
                    pa.array(resource, pa.int32()), pa.array(names, pa.string())
                ),
                "version": pa.array(version, pa.int64()),
                "instant": pa.array(instant, pa.int64()),
                "rows": pa.array(rows, pa.int64()),
            }
        )

    def commit_log(self) -> pa.Table:
        """The ends of redo areas' transactions (paper 002 §3.5), in order (the latest 2**20;
        :meth:`stats` counts every one): the ``query`` whose
        commit operator ended it, its redo ``area`` (the commit operator's id in
        :meth:`explain`), the ``instant`` committed, the ``outcome`` ("commit", or "abort" when
        optimistic validation failed: the instant is redone), ``begin`` and ``end`` (its first
        read and its end), ``evaluations`` (operator id -> evaluations since the previous
        commit, the area's operators) and ``versions`` (every (resource, version) it read).
        Empty under ``txn="none"``. With :meth:`read_versions`, what :func:`cq_py.txn.check`
        takes.

        >>> Engine().commit_log().num_rows
        0
        """
        records, offsets, evaluations, versions = self._commit_log_batches()
        # The core's offsets are int64 (its one integer type); a map's are int32.
        start = offsets.column("evaluations").cast(pa.int32())
        read_at = offsets.column("versions").cast(pa.int32())
        stamp = pa.timestamp("ns", tz="UTC")
        return pa.table(
            {
                "query": records.column("query"),
                "area": records.column("area"),
                "instant": records.column("instant"),
                "outcome": records.column("outcome"),
                "begin": records.column("begin").view(stamp),
                "end": records.column("end").view(stamp),
                "evaluations": pa.MapArray.from_arrays(
                    start,
                    evaluations.column("operator"),
                    evaluations.column("evaluations"),
                    type=pa.map_(pa.int64(), pa.int64()),
                ),
                "versions": pa.MapArray.from_arrays(
                    read_at,
                    versions.column("resource"),
                    versions.column("version"),
                    type=pa.map_(pa.string(), pa.int64()),
                ),
            }
        )

    def read_versions(self) -> pa.Table:
        """The read log :func:`cq_py.txn.check` takes: one row per (committed transaction,
        resource, version) of :meth:`commit_log`, its ``query``, ``instant``, ``resource`` and
        ``version`` (an aborted transaction's instant is redone: the redo's reads count).

        >>> Engine().read_versions().column_names
        ['query', 'instant', 'resource', 'version']
        """
        records, _, _, versions = self._commit_log_batches()
        committed = pc.equal(records.column("outcome"), "commit")
        read = versions.filter(pc.array_take(committed, versions.column("record")))
        record = read.column("record")
        return pa.table(
            {
                "query": pc.array_take(records.column("query"), record),
                "instant": pc.array_take(records.column("instant"), record),
                "resource": read.column("resource"),
                "version": read.column("version"),
            }
        )

    def _commit_log_batches(
        self,
    ) -> tuple[pa.RecordBatch, pa.RecordBatch, pa.RecordBatch, pa.RecordBatch]:
        """The core's commit log as record batches, built there column by column (it keeps up
        to 2**20 records): ``records`` (query, area, instant, outcome, begin, end), ``offsets``
        (one row more: where each record's ``evaluations`` and ``versions`` begin), the
        ``evaluations`` (operator, evaluations) and the ``versions`` (record, resource,
        version) of all records in order.

        >>> [b.num_rows for b in Engine()._commit_log_batches()]
        [0, 1, 0, 0]
        """
        records, offsets, evaluations, versions = self._core.commit_log()
        return (
            pa.RecordBatch._import_from_c_capsule(*records),
            pa.RecordBatch._import_from_c_capsule(*offsets),
            pa.RecordBatch._import_from_c_capsule(*evaluations),
            pa.RecordBatch._import_from_c_capsule(*versions),
        )

    def _new_core(self) -> _core.Engine:
        core = self._make_core()
        for bind in getattr(self, "_bound", {}).values():
            bind(core)
        return core

    def _make_core(self) -> _core.Engine:
        return _core.Engine(
            lifetime=self.lifetime,
            executor=self.executor,
            expose_steps=self.expose_steps,
            hybrid=self.hybrid,
            max_loop_steps=self._max_loop_steps,
            max_run=self._max_run,
            max_loop_ticks=self._max_loop_ticks,
            max_loop_rows=self._max_loop_rows,
            batch_size=self._batch_size,
            scheduler=self.scheduler,
            batch=self._batch,
            gatekeeper=self.gatekeeper,
            txn=self.txn,
            lock_timeout=self.lock_timeout,
            redo=self.redo,
        )

    def _add_plan(self, plan: str | None, catalog: Catalog, layout: Layout | None) -> None:
        """Adds a plan fragment (None: the script added no operator) to the engines, splitting
        the input as ``layout`` says (:meth:`_layout_for` the whole catalog; None under one
        thread); atomic, as execute() is."""
        if layout is None:
            if plan is not None:
                self._core.add_plan(plan)
            return
        old = self._layout
        same = old is not None and (layout.parts, layout.keys) == (old.parts, old.keys)
        if same or self._running_with_plans():
            # The same split, or (input has come) one that keeps every input already split as it
            # is (_layout_for): the new inputs and those nothing read yet take their keys.
            if plan is not None:
                if self._parts is not None:
                    self._parts.add_plan(plan)
                else:
                    self._core.add_plan(plan)
            self._layout = layout
            if self._parts is not None:
                self._parts.set_layout(layout, catalog)
        else:
            # No input has come (or no plan is there yet): the engines are built again for the
            # new split, with every fragment so far; the old ones stay until all is added.
            cores = [self._new_core() for _ in range(layout.parts)]
            for core in cores:
                for p in [*self._plans, *([plan] if plan is not None else [])]:
                    core.add_plan(p)
                if self._advanced is not None:
                    core.advance(self._advanced)
            if (
                layout.parts == 1
                and self._threads_asked
                and (self._layout is None or self._layout.parts > 1)
            ):
                warnings.warn(
                    f"cq: Engine(threads={self._threads}) runs the script on one engine: "
                    f"{layout.blocker}",
                    CQPartitionWarning,
                    stacklevel=3,
                )
            self._core = cores[0]
            self._parts = (
                Partitions(cores, layout, catalog, self._batch_size) if layout.parts > 1 else None
            )
            self._rows = self._core if self._parts is None else self._parts.rows
            self._layout = layout
        if plan is not None:
            self._plans.append(plan)

    def _running_with_plans(self) -> bool:
        """Whether the engines hold state of input that came (then they are not built again)."""
        return self._running and bool(self._plans)

    def _layout_for(self, catalog: Catalog) -> Layout:
        """How to split the inputs of ``catalog`` (every script so far and the new one); a
        :class:`CQLSemanticError` when input has come and the split would have to change."""
        if not self._running_with_plans() or self._layout is None:
            return Layout.of(partition_catalog(catalog), self._threads, catalog)
        if self._layout.parts == 1:
            return self._layout  # (a script that runs on one engine never gains a key)
        # The inputs whose rows sit in the engines as they were split: relations (they keep their
        # rows), and streams some operator reads. A stream nothing read yet may take a key now.
        read = {i for n in self._catalog.nodes.values() for i in n.inputs}
        fixed = {
            s.name: self._layout.keys.get(s.name)
            for s in self._catalog.streams.values()
            if s.relation or s.scan_id in read
        }
        plan = partition_catalog(catalog, fixed)
        if not plan.partitionable:
            raise CQLSemanticError(
                f"the script cannot be registered while the engine runs: its input is split "
                f"over {self._layout.parts} engines (Engine(threads={self._threads})), and "
                f"{plan.blocker}. Execute every script before the first push or advance, or "
                "use Engine(threads=1)"
            )
        return Layout.of(plan, self._layout.parts, catalog)

    def clock_ticks(self, start: int, stop: int) -> list[int]:
        """The ticks of every registered clock (``REGISTER CLOCK``) in [start, stop), in order,
        each once: the instants a paced replay must reach besides its inputs' rows.

        >>> eng = Engine()
        >>> eng.execute("REGISTER CLOCK c EVERY 10 OFFSET 5; REGISTER CLOCK d EVERY 15;")
        >>> eng.clock_ticks(0, 40)
        [0, 5, 15, 25, 30, 35]
        """
        ticks = [
            Clock(s.every, s.offset).ticks(start, stop)
            for s in self._catalog.streams.values()
            if s.origin == "clock"
        ]
        return np.unique(np.concatenate(ticks)).tolist() if ticks else []

    def input_names(self) -> list[str]:
        """Names of the inputs a caller feeds — streams and relations, not clocks (which tick by
        themselves) nor database tables (read from their database) — in registration order.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER CLOCK c EVERY 10;")
        >>> eng.stream_names(), eng.input_names()
        (['s', 'c'], ['s'])
        """
        return [
            s.name for s in self._catalog.streams.values() if s.origin not in ("clock", "table")
        ]

    def stream_names(self) -> list[str]:
        """Names of the registered inputs — streams and relations — in registration order."""
        return [s.name for s in self._catalog.streams.values()]

    def relation_names(self) -> list[str]:
        """Names of the registered relations (``REGISTER RELATION``), in registration order: the
        inputs that take changes (an ``op`` column) rather than a stream of rows.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER RELATION r(k INT);")
        >>> eng.stream_names(), eng.relation_names()
        (['s', 'r'], ['r'])
        """
        return [s.name for s in self._catalog.streams.values() if s.relation]

    def stream_schema(self, stream: str) -> pa.Schema:
        """The declared user columns of ``stream`` or relation (without the timestamp, and
        without a relation's ``op`` column)."""
        return T.arrow_schema(self._stream(stream).columns)

    def query_names(self) -> list[str]:
        """Names of the registered queries, in registration order."""
        return [q.name for q in self._catalog.queries.values()]

    def query_schema(self, query: str) -> pa.Schema:
        """The schema of the rows ``fetch(query)`` returns: user columns and time columns."""
        self._query(query)
        return pa.schema(
            [
                pa.field(n, T.TO_ARROW[t])
                for n, t in self._core.output_schema(self._query(query).name)
            ]
        )

    def query_groups(self) -> dict[str, Any]:
        """The MASTER queries' base groups (paper 001 §4.2: equal masters, a common source, and
        on every common source windows at least ``theta1`` as wide as each other) and clusters
        (§4.3: base groups whose runs read nearly the same arrivals in the last ``log_period``,
        every two at least ``theta2`` similar), as query names; ``log_period`` is the span
        ``[t0, t1)`` in ticks of the arrival log the clusters were found on (None until the
        first period has passed: each base group is its own cluster until then). With
        ``mqo=False`` every query is alone.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER CLOCK c EVERY 10 SECONDS;"
        ...             "REGISTER QUERY q1 AS MASTER c SELECT a FROM s [Range 10 SECONDS];"
        ...             "REGISTER QUERY q2 AS MASTER c SELECT a FROM s [Range 6 SECONDS];")
        >>> eng.query_groups()
        {'base_groups': [['q1', 'q2']], 'clusters': [['q1', 'q2']], 'log_period': None}
        """
        return self._groups.groups()

    def recluster(self) -> None:
        """Clusters the MASTER queries' base groups again now, on the arrival log of the last
        ``log_period`` (paper 001 §4.5; the engine does it by itself at the end of every period
        where a cluster's similarities fell below ``theta2``). Nothing with ``mqo=False``.

        >>> eng = Engine(mqo=False); eng.recluster()
        """
        self._groups.recluster(self._least())

    def explain(self) -> str:
        """The registered streams and queries, every operator (inputs, window, lifetime property,
        delay), the loops and the execution order (DTS's, or the heartbeat executor's topological
        order).

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s [Range 5];")
        >>> print(eng.explain().splitlines()[0])
        Streams:
        """
        text = render_plan(self._catalog, self.executor)
        if self._tables:
            text += self._tables.describe()
        if self.executor == "scheduled":
            gates = [
                f"#{i}"
                for i, n in sorted(self._catalog.nodes.items())
                if n.params.get("gatekeeper")
            ]
            text += (
                f"Scheduler: {self.scheduler}, batch {self._batch}, gatekeeper constraint "
                f"{'on' if self.gatekeeper else 'off'} (gatekeepers: {' '.join(gates) or 'none'})\n"
            )
        if self._threads > 1 and self._layout is not None:
            text += self._layout.describe(self._threads) + "\n"
        if self._groups.profiles:
            text += self._describe_groups()
        return text

    def stats(self) -> dict[str, Any]:
        """What the executor did so far: ``{"operators": {id: {"evaluations": n}}}`` by the
        operator ids :meth:`explain` shows, with ``"reads"`` for the reference operators (their
        reads of resources and models, :meth:`read_log`). An evaluation (paper 002 §5.1) takes
        one row from one of the operator's input queues under ``executor="scheduled"``, one
        timestamp's rows under ``"heartbeat"``; with ``threads`` the engines' counts are summed.
        The DTS executor does not count them: :class:`ArgumentError` names the executors that
        do.

        >>> eng = Engine(executor="scheduled", batch=2)
        >>> eng.execute("REGISTER STREAM s(a INT);"
        ...             "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
        >>> eng.push("s", pa.table({"a": [1, 2, 3], "ts": [0, 0, 1]}))
        >>> [op["evaluations"] for op in eng.stats()["operators"].values()][:2]
        [3, 3]
        """
        if self.executor == "dts":
            raise ArgumentError(
                "stats() counts evaluations under executor='scheduled' or 'heartbeat'; found "
                "executor='dts'"
            )
        counts: dict[int, int] = {}
        for core in self._parts.cores if self._parts is not None else [self._core]:
            for op, n in core.evaluations():
                counts[op] = counts.get(op, 0) + n
        out: dict[int, dict[str, int]] = {op: {"evaluations": n} for op, n in counts.items()}
        # Reference operators (paper 002) also count their reads of resources and models.
        for op, n in self._core.read_counts():
            out.setdefault(op, {"evaluations": 0})["reads"] = n
        if self.txn == "none":
            return {"operators": out}
        # Paper 002: each redo area's transactions (its commit operator's id names it).
        areas: dict[int, dict[str, Any]] = {}
        for area, query, waits, resets, replayed, locked in self._core.transaction_managers():
            areas[area] = {
                "query": query,
                "commits": 0,
                "aborts": 0,
                "lock_waits": waits,
                "resets": resets,
                "replayed": replayed,
                # optimistic transactions that locked after aborts in a row (to commit at all)
                "locked_after_aborts": locked,
            }
        for area, commits, aborts in self._core.commit_counts():
            a = areas.setdefault(
                area,
                {
                    "query": "",
                    "commits": 0,
                    "aborts": 0,
                    "lock_waits": 0,
                    "resets": 0,
                    "replayed": 0,
                },
            )
            a["commits"], a["aborts"] = commits, aborts
        # Each area's operators (explain() lists them too), to sum what an area evaluated.
        for i, node in sorted(self._catalog.nodes.items()):
            member_of = node.params.get("redo_area")
            if member_of in areas:
                areas[member_of].setdefault("members", []).append(i)
        return {"operators": out, "areas": areas}

    def _describe_groups(self) -> str:
        g = self._groups.groups()
        where = (
            f"on the arrivals of [{g['log_period'][0]}, {g['log_period'][1]})"
            if g["log_period"]
            else "each base group alone until the first log period ends"
        )
        lines = [
            "Query groups (paper 001 §4.2-§4.5"
            + (
                f"; theta1 {self._theta1}, theta2 {self._theta2}, log period "
                f"{self._log_period:g} s):"
                if self.mqo
                else "; mqo=False: every query alone):"
            ),
            "  base groups: " + "; ".join(", ".join(b) for b in g["base_groups"]),
            f"  clusters ({where}): " + "; ".join(", ".join(c) for c in g["clusters"]),
        ]
        parts = [p for p in self._master_shares.parts if len(p.members) > 1]
        if parts:
            lines.append(
                "  shared parts (§4.4; windows, joins and the master trigger planned once, each "
                "member keeping the trigger's tuples in its own windows):"
            )
            for p in parts:
                widths = ", ".join(
                    f"{s} {'unbounded' if w is None else '[Now]' if w == 0 else f'[Range {w}]'}"
                    for s, w in p.widths.items()
                )
                lines.append(
                    f"    #{p.node} ({widths}; trigger #{p.trigger}): {', '.join(p.members)}"
                )
        else:
            lines.append("  shared parts (§4.4): none (no two queries of a base group share)")
        return "\n".join(lines) + "\n"

    def shared_joins(self) -> list[dict[str, Any]]:
        """Each shared window join of the plan (paper 004): its operator ``id``, ``members`` (the
        queries, smallest window first), ``windows``, MQT ``segments``, ``readers`` (per member,
        the queries that read its route: a query identical to a member shares it) and
        ``bounded``; in bounded mode (``swj_buffer``) also, per query, the (tuple, query) pairs
        ``processed``,
        ``dropped`` and ``pending`` (they add up to the tuples taken in), the members that dropped
        any (``dropping``), the ``clock``, the ``work`` done (jobs, scanned, emitted) and the
        scheduler's state (cq_py/swj_options.py).

        >>> eng = Engine()
        >>> q = "SELECT * FROM a [Range {0}], b [Range {0}] WHERE a.k = b.k"
        >>> eng.execute("REGISTER STREAM a(k INT); REGISTER STREAM b(k INT);"
        ...             f"REGISTER QUERY q1 AS {q.format(2)}; REGISTER QUERY q2 AS {q.format(5)};")
        >>> eng.shared_joins()[0]["members"]
        ['q1', 'q2']
        """
        return [
            shared_join_entry(j, self._core.shared_join_report(j["id"]) if j["bounded"] else None)
            for j in shared_join_nodes(self._catalog)
        ]

    def shared_join_trace(self, id: int) -> dict[str, pa.Table]:
        """The trace of bounded shared join ``id`` (an ``id`` of :meth:`shared_joins`):
        ``"periods"``, a table of one row per period (time, rate, S, alpha, beta, beta_now,
        beta_next, rate_next, high, method, case, open), and with ``swj_trace=True``
        ``"jobs"``: every job and eviction (tuple, side, ts, from, to, outcome, clock).

        >>> eng = Engine(swj_buffer=100, swj_trace=True)
        >>> q = "SELECT * FROM a [Range {0}], b [Range {0}] WHERE a.k = b.k"
        >>> eng.execute("REGISTER STREAM a(k INT); REGISTER STREAM b(k INT);"
        ...             f"REGISTER QUERY q1 AS {q.format(2)}; REGISTER QUERY q2 AS {q.format(5)};")
        >>> sorted(eng.shared_join_trace(eng.shared_joins()[0]["id"]))
        ['jobs', 'periods']
        """
        ids = [j["id"] for j in shared_join_nodes(self._catalog) if j["bounded"]]
        if not isinstance(id, int) or id not in ids:
            raise ArgumentError(
                f"shared_join_trace(id) takes the id of a bounded shared join "
                f"({', '.join(map(str, ids)) or 'none in this plan'}); found {id!r}"
            )
        return trace_tables(self._core.shared_join_report(id), self._swj.trace)

    # -- data in ------------------------------------------------------------------------------

    def push(self, stream: str, data: Any, ts: str = "ts") -> None:
        """Pushes rows to ``stream`` (a stream or a relation): a pyarrow Table or RecordBatch, a
        pandas DataFrame, a list of dicts, or anything exporting the Arrow PyCapsule stream
        interface. ``ts`` names the column holding each row's timestamp (int ticks, or an Arrow
        timestamp converted to ``time_unit``).

        Timestamps must be non-null and non-decreasing, also across pushes. A rejected push raises
        :class:`cq_py.InputError` and changes nothing.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT);"
        ...             "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
        >>> eng.push("s", [{"a": 1, "ts": 5}])
        >>> eng.fetch("q").to_pylist()
        [{'a': 1, 'ts': 5}]

        A relation (``REGISTER RELATION``) takes changes: an ``op`` column says ``'+'`` (insert)
        or ``'-'`` (delete) for each row; without it every row is an insert. A delete ends the
        oldest alive copy of its values; deleting a row that is not alive is an ``InputError``.

        >>> eng = Engine()
        >>> eng.execute("REGISTER RELATION r(k INT); REGISTER QUERY q AS SELECT k FROM r;")
        >>> eng.push("r", [{"k": 1, "op": "+", "ts": 2}, {"k": 2, "op": "+", "ts": 3},
        ...                {"k": 1, "op": "-", "ts": 7}])
        >>> eng.close()
        >>> eng.fetch("q").to_pylist()
        [{'k': 1, 'start': 2, 'end': 7}, {'k': 2, 'start': 3, 'end': None}]
        """
        sdef = self._catalog.streams.get(stream.lower()) if isinstance(stream, str) else None
        if sdef is None:
            known = ", ".join(self.stream_names()) or "(none)"
            raise InputError(
                f"unknown stream {stream!r}; registered streams: {known}", stream=stream
            )
        self._not_a_table(sdef)
        if not isinstance(ts, str):
            raise ArgumentError(f"push(ts=...) names the timestamp column; found {_found(ts)}")
        if self._core.closed:
            raise InputError(
                f"the engine is closed; push to '{sdef.name}' rejected", stream=sdef.name
            )
        self._check_memory(f"push to '{sdef.name}'")
        ready = self._ready(sdef, ts)  # (None when ts is a declared column: refused below)
        if (
            isinstance(data, (pa.RecordBatch, pa.Table))
            and ready is not None
            and data.schema.equals(ready)
        ):
            # Already what the core takes (the declared columns in order and types, then int64
            # ticks): nothing to convert. The core checks the timestamps as for any push.
            parts = data.to_batches() if isinstance(data, pa.Table) else [data]
            batches = [b for b in parts if b.num_rows]
        else:
            table = self._to_table(data, sdef.name)
            if table is None:
                return
            batches = self._conform(table, sdef.name, sdef.columns, ts, sdef.relation)
        self._push_batches(sdef.name, batches)

    def push_row(self, stream: str, ts: Any, /, **values: Any) -> None:
        """Pushes one row to ``stream`` at time ``ts``, its values by column name: the same as
        ``push(stream, [{**values, "ts": ts}])``, with the same results, but with no Arrow object
        on the way: the values go straight into the core (a few microseconds a row, for engines
        fed one event at a time). The results of an instant can be fetched (and reach
        subscribers) at the latest when the push that completes it returns: the first row of a
        later time, or an :meth:`advance` past it.

        ``ts`` is a tick (an integer) or a ``datetime`` / ``numpy.datetime64`` /
        ``pandas.Timestamp``, converted to ticks of ``time_unit`` as a timestamp column is. Every
        declared column must be given (None for a null), and no other; names match as in CQL,
        whatever the case, when the exact spelling is not declared. Values are taken as in a list
        of dicts: any integer for BIGINT, a float or an integer for DOUBLE (NaN is a value, None a
        null), str for VARCHAR, bool for BOOLEAN. A relation (``REGISTER RELATION``) takes
        ``op='+'`` (insert, the default) or ``op='-'`` (delete). A missing or unknown column, a
        value of another type, a missing, NaN or decreasing ``ts``, an unknown stream or a closed
        engine raises :class:`InputError` and changes nothing.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM e(key BIGINT, val BIGINT);"
        ...             "REGISTER QUERY q AS "
        ...             "ISTREAM(SELECT key, val FROM e [Now] WHERE val > 499);")
        >>> eng.push_row("e", 0, key=7, val=900)
        >>> eng.push_row("e", 1, key=8, val=10)
        >>> eng.fetch("q").to_pylist()
        [{'key': 7, 'val': 900, 'ts': 0}]
        >>> eng.push_row("e", 2, key=7, vla=3)
        Traceback (most recent call last):
        cq_py.errors.InputError: push_row to 'e': missing column 'val' (BIGINT); given: key, vla
        """
        # The common case in one call: the stream as registered, the declared names exactly, an
        # int tick. Anything else (other spellings, a datetime, a relation's op, an error) takes
        # _push_row_resolved, which puts the row in that form or refuses it with its message.
        row = self._row_inputs.get(stream) if type(stream) is str else None
        if self._max_memory is not None:
            self._check_memory(f"push to '{stream}'")
        try:
            if row is None or not self._rows.push_row(row[0], ts, values, row[1]):
                self._push_row_resolved(stream, ts, values)
        except _core.CoreError as e:
            raise self._stopped(e, f"push to '{stream}'") from None
        self._running = True
        name = row[0] if row is not None else str(stream)
        tick = ts if type(ts) is int else self._row_tick(name, ts)
        if self._groups.logging:
            self._groups.note_one(name, tick)
        self._moved(name, tick)
        if self._subscribers:
            self._deliver(f"push to '{stream}'")

    def _push_row_resolved(self, stream: Any, ts: Any, values: dict[str, Any]) -> None:
        """push_row of a row not in the binding's exact form: the stream's and columns' names
        resolved as in CQL, the time converted, or an :class:`InputError`."""
        name, names = self._row_input(stream)
        args = self._row_values(name, values)
        if len(args) > len(names):
            names = (*names, OP)
        if type(ts) is not int or not MIN_TICK <= ts <= MAX_TICK:
            ts = self._row_tick(name, ts)
        if not self._rows.push_row(name, int(ts), dict(zip(names, args, strict=True)), names):
            raise RuntimeError(f"cq internal error (please report): push_row to '{name}' refused")

    def _push_batches(self, stream: str, batches: list[pa.RecordBatch]) -> None:
        """The one way rows reach the core: ``batches`` of ``stream``, conformed (the declared
        columns, a relation's op, the timestamp in ticks), validated whole by the core, then run
        ``batch_size`` rows at a time; subscribers served after."""
        try:
            if self._parts is None:
                self._core.push(stream, [b.__arrow_c_array__() for b in batches])
            else:
                self._parts.push(stream, batches)
        except _core.CoreError as e:
            raise self._stopped(e, f"push to '{stream}'") from None
        self._running = True
        if self._groups.logging:
            for b in batches:  # (the timestamps in ticks: the last column, as conformed)
                self._groups.note(stream, b.column(b.num_columns - 1).to_numpy())
        if batches and batches[-1].num_rows and stream not in self._tables.inputs():
            last = batches[-1]
            self._moved(stream, int(last.column(last.num_columns - 1)[-1].as_py()))
        self._deliver(f"push to '{stream}'")

    def _moved(self, name: str, tick: int) -> None:
        """Input ``name`` reached ``tick``: the tables and the clocks follow."""
        key = name.lower()
        self._pushes[key] = self._pushes.get(key, 0) + 1
        if tick > self._progress.get(key, MIN_TICK):
            self._progress[key] = tick
        if self._tables:
            self._tables_follow(tick)
        if self._clocks:
            self._clocks_follow(self._least())
        if self._groups.next_check is not None:  # (a period runs: MASTER queries' arrivals came)
            self._groups.follow(self._least())

    def _least(self) -> int:
        """The least progress of the inputs the clocks wait for: every stream and relation but
        the clocks and the tables (which follow the others)."""
        ticks = [
            max(self._progress.get(k, MIN_TICK), self._floor)
            for k, s in self._catalog.streams.items()
            if s.origin not in ("clock", "table")
        ]
        return min(ticks, default=self._floor)

    def _start_clocks(self) -> None:
        """The clocks a script registered: a clock registered while the engine runs ticks from
        its progress on (a query registered at p sees input from p on)."""
        since = self._least() if self._running else MIN_TICK
        for key, s in self._catalog.streams.items():
            if s.origin == "clock" and key not in self._clocks:
                first = s.offset
                if since > first:
                    first += -(-(since - first) // s.every) * s.every
                self._clocks[key] = [s.every, first]
        if self._running and not self._restoring:
            self._clocks_follow(since)

    def _clocks_follow(self, upto: int) -> None:
        """Every clock's ticks below ``upto`` pushed, and its progress moved to ``upto``: a tick
        fires once the progress passes it (a firing point, paper 000 §3.2)."""
        if upto <= MIN_TICK:
            return
        cores = self._parts.cores if self._parts is not None else [self._core]
        try:
            names = []
            for key, state in self._clocks.items():
                every, first = state
                name = self._catalog.streams[key].name
                names.append(name)
                if first < upto:
                    ticks = np.arange(first, upto, every, dtype=np.int64)
                    state[1] = int(ticks[-1]) + every
                    batch = pa.record_batch([pa.array(ticks)], names=["ts"])
                    if self._parts is None:
                        self._core.push(name, [batch.__arrow_c_array__()])
                    else:
                        self._parts.push(name, [batch])
            for core in cores:  # (one run of the operators for every clock)
                core.advance_inputs(names, upto)
        except _core.CoreError as e:
            raise self._stopped(e, "ticking the clocks") from None

    def _not_a_table(self, sdef: StreamDef) -> None:
        if sdef.origin == "clock":
            raise InputError(
                f"'{sdef.name}' is a clock; the engine makes its ticks, nothing is pushed to it",
                stream=sdef.name,
            )
        if sdef.origin == "table":
            raise InputError(
                f"'{sdef.name}' is a database table ({sdef.url}); it changes through its "
                "database: call refresh_tables() instead of pushing to it",
                stream=sdef.name,
            )

    def _tables_follow(self, tick: int) -> None:
        """The tables' inputs move on with the furthest input: a table changes only when
        refresh_tables() applies its changes, at that tick, so nothing below it is held back."""
        if tick <= self._table_tick:
            return
        self._table_tick = tick
        try:
            for core in self._parts.cores if self._parts is not None else [self._core]:
                for name in self._tables.inputs():
                    core.advance_input(name, tick)
        except _core.CoreError as e:
            raise self._stopped(e, "moving the tables' progress") from None

    def _push_table(self, name: str, deleted: pa.Table, inserted: pa.Table) -> None:
        """A table's changes as a relation's: deletes, then inserts, at the furthest tick."""
        if not deleted.num_rows and not inserted.num_rows:
            return
        changes = pa.concat_tables([deleted, inserted.cast(deleted.schema)])
        ops = np.repeat(np.array(["-", "+"]), [deleted.num_rows, inserted.num_rows])
        changes = changes.append_column(OP, pa.array(ops, pa.string())).append_column(
            "ts", pa.array(np.full(changes.num_rows, self._table_tick), pa.int64())
        )
        sdef = self._stream(name)
        self._push_batches(name, self._conform(changes, name, sdef.columns, "ts", True))

    def refresh_tables(self) -> None:
        """Applies what changed in the databases of ``REGISTER TABLE`` since the last refresh, at
        the furthest tick any input has reached: inserts as arrivals, updates and deletes as the
        difference between the view's SQL run again and the cached copy (paper 001 §4.6). Every
        database is read before anything is applied: a database error is an
        :class:`InputError` naming the table, applies nothing, and the engine goes on.

        >>> eng = Engine(); eng.refresh_tables()  # no tables: nothing to do
        """
        if not self._tables:
            return
        if self._core.closed:
            raise InputError("the engine is closed; refresh_tables() rejected")
        try:
            changes = self._tables.read()
        except DatabaseError as e:
            raise InputError(f"refresh_tables(): {e}; nothing was applied") from None
        for view, deleted, inserted, content, position in changes:
            self._push_table(view.input, deleted, inserted)
            view.content, view.position = content, position

    def advance(self, t: Any) -> None:
        """Promises that no input below ``t`` will come on any stream (a heartbeat): results up
        to ``t`` become final. ``t`` is a tick (an integer), or a ``datetime`` /
        ``numpy.datetime64`` / ``pandas.Timestamp``, converted to ticks of ``time_unit`` as an
        Arrow timestamp column is. A time outside the engine's ticks (``-(2**63 - 1)`` to
        ``2**63 - 2``; the extremes stand for ±∞) is an :class:`InputError`: :meth:`close` ends
        the input; anything else is an :class:`ArgumentError`.

        >>> eng = Engine(); eng.advance(10)
        """
        tick = self._tick(t)
        self._check_memory(f"advance({t!r})")
        if self._tables:
            self._table_tick = max(self._table_tick, tick)
        if self._clocks and not self._core.closed:
            # The clocks' ticks below the new progress go in first: the advance moves every
            # input, the clocks too, past them.
            floor, self._floor = self._floor, max(self._floor, tick)
            try:
                self._clocks_follow(self._least())
            finally:
                self._floor = floor
        try:
            if self._parts is None:
                self._core.advance(tick)
            else:
                self._parts.advance(tick)
        except _core.CoreError as e:
            raise self._stopped(e, f"advance({t!r})") from None
        self._floor = max(self._floor, tick)
        if tick < MAX_TICK and self._groups.next_check is not None:
            self._groups.follow(self._least())
        if not self._plans:
            self._advanced = tick if self._advanced is None else max(self._advanced, tick)
        self._running = True
        self._deliver(f"advance({t!r})")

    def close(self) -> None:
        """Ends the input: time advances to infinity and every result becomes final. Pushing
        afterwards is an :class:`InputError`; closing twice does nothing.

        >>> eng = Engine(); eng.close()
        """
        if self._clocks and not self._core.closed:
            # A clock ticks up to the progress reached before close(), not beyond (issue 31).
            self._clocks_follow(max([self._floor, *self._progress.values()]))
        try:
            if self._parts is None:
                self._core.close()
            else:
                self._parts.close()
        except _core.CoreError as e:
            raise self._stopped(e, "close()") from None
        # (No refresh comes after close: the tables' connections go now, not when collected.)
        self._tables.close()
        self._deliver("close()")

    # -- results out --------------------------------------------------------------------------

    def fetch(self, query: str) -> pa.Table:
        """What ``query`` produced since the last fetch, as a table (drained).

        A stream-valued query's rows carry the user columns and ``ts``; a relation-valued query's
        carry the user columns and ``start``, ``end`` (null = still alive at close). For a query
        with subscribers, it returns what a callback that raised did not take (see
        :class:`CallbackError`), which then is no longer delivered to it.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY r AS SELECT a FROM s [Range 3];")
        >>> eng.push("s", [{"a": 7, "ts": 1}])
        >>> eng.fetch("r").to_pylist()
        [{'a': 7, 'start': 1, 'end': 4}]
        """
        q = self._query(query)
        subscribers = self._subscribers.get(q.name, [])
        # Every subscriber's backlog is a tail of the same sequence of batches: the longest holds
        # what some callback has not taken.
        batches = list(max((s.backlog for s in subscribers), key=len, default=()))
        for s in subscribers:
            s.backlog.clear()
        batches += self._drain(q.name)
        table = pa.Table.from_batches(batches, schema=self.query_schema(q.name))
        if q.kind == "relation" and table.num_rows > 1:
            # Rows become final in the order their ends are fixed; they are handed out in start
            # order (SEMANTICS.md §6), stably, by one vectorized sort.
            keys = [("start", "ascending")] + (
                [("start_step", "ascending")] if self.expose_steps else []
            )
            table = table.sort_by(keys)
        return table

    def subscribe(self, query: str, callback: Callable[[pa.RecordBatch], Any]) -> None:
        """Calls ``callback(batch)`` with each batch of ``query``'s results as they become final,
        starting with what is already there. Results given to subscribers are not also kept for
        :meth:`fetch`. When ``callback`` raises, the call that was delivering (``push``,
        ``advance``, ``close`` or this one) has been applied all the same and raises
        :class:`CallbackError`; the batch it raised on and the later ones stay for its next
        delivery or for :meth:`fetch`.

        >>> eng = Engine(); got = []
        >>> eng.execute("REGISTER STREAM s(a INT);"
        ...             "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
        >>> eng.subscribe("q", got.append)
        >>> eng.push("s", [{"a": 1, "ts": 0}])
        >>> got[0].num_rows
        1
        """
        q = self._query(query)
        if not callable(callback):
            raise ArgumentError(f"subscribe: callback must be callable, found {_found(callback)}")
        self._subscribers.setdefault(q.name, []).append(_Subscriber(callback))
        self._deliver(f"subscribe({q.name!r})")

    def rowset(self, query: str) -> RowSet:
        """A :class:`cq_py.rowset.RowSet` over a stream-valued query's results, run by run
        (paper 001 §3.3's ``CQRowSet``): ``query`` names a registered query, or is the text of
        one (``MASTER m SELECT ...``, ``ISTREAM(...)``), which is registered under a name of its
        own (``rs.query``) as :meth:`execute` would. Results already there wait for the first
        listener or ``next()``; the row set's :meth:`~cq_py.rowset.RowSet.stop` drops the query.

        An unknown name, or a relation-valued query (its rows have no instant of their own:
        wrap it in ``ISTREAM(...)``), is a :class:`CQLSemanticError`; a text that does not
        parse, a :class:`CQLSyntaxError`. Nothing is registered then.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM access(loc VARCHAR); REGISTER CLOCK c EVERY 10;")
        >>> rs = eng.rowset("MASTER c SELECT loc FROM access [Range 10]")
        >>> rs.metadata.column_names
        ['loc', 'ts']
        >>> rs.add_listener(lambda e: print(e.ts, [r["loc"] for r in e.source]))
        >>> eng.push("access", [{"loc": "/a", "ts": 3}, {"loc": "/b", "ts": 12}])
        10 ['/a']
        >>> eng.advance(25)
        20 ['/b']
        """
        if not isinstance(query, str):
            raise ArgumentError(
                f"rowset() takes a query's name or CQL text as a str; found {_found(query)}"
            )
        text = query.strip().rstrip(";").strip()
        anonymous = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) is None
        if anonymous:
            k = 1
            while self._catalog.lookup(f"rowset_{k}") is not None:
                k += 1
            self.execute(f"REGISTER QUERY rowset_{k} AS {text};")
            text = f"rowset_{k}"
        q = self._query(text)
        if q.kind != "stream":
            if anonymous:
                self.drop(q.name)
            raise CQLSemanticError(
                f"a row set follows a stream-valued query (MASTER, ISTREAM, DSTREAM, RSTREAM), "
                f"whose rows come at instants; found the relation-valued query '{q.name}': "
                "wrap it in ISTREAM(...)"
            )
        rs = RowSet(self, q.name, self.query_schema(q.name))
        self._rowsets.setdefault(q.name, []).append(rs)
        self._subscribers.setdefault(q.name, []).append(_Subscriber(rs._take))
        self._deliver(f"rowset({q.name!r})")
        return rs

    def drop(self, query: str) -> None:
        """Unregisters ``query``: its results stop, its row sets are stopped, and its operators
        that no other query uses are freed with their state; every other query goes on exactly
        as before (sub-plans shared inside a script stay for the queries still reading them).
        Dropping a query another query reads is a :class:`CQLSemanticError` naming them (drop
        those first); so is an unknown or already dropped query. Nothing changes then.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT);"
        ...             "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);"
        ...             "REGISTER QUERY r AS ISTREAM(SELECT a FROM s [Now] WHERE a > 1);")
        >>> eng.drop("q")
        >>> eng.query_names()
        ['r']
        """
        key = query.lower() if isinstance(query, str) else None
        q = self._catalog.queries.get(key) if key is not None else None
        if q is None:
            if key in self._dropped:
                known = ", ".join(self.query_names()) or "(none)"
                raise CQLSemanticError(
                    f"query {query!r} was dropped already; registered queries: {known}"
                )
            self._query(query)  # (the unknown query's error)
        assert q is not None
        assert key is not None
        readers = [
            o.name
            for o in self._catalog.queries.values()
            if o is not q and key in (r.lower() for r in o.references)
        ]
        if readers:
            raise CQLSemanticError(
                f"query '{q.name}' cannot be dropped: {', '.join(readers)} "
                f"{'reads' if len(readers) == 1 else 'read'} it; drop "
                f"{'that' if len(readers) == 1 else 'those'} first"
            )
        free = self._operators_of(q)
        plan = json.dumps({"drop": {"query": q.name, "operators": free}})
        try:
            if self._parts is not None:
                self._parts.add_plan(plan)
            else:
                self._core.add_plan(plan)
        except _core.CoreError as e:
            raise _core_error(e) from None
        catalog = self._catalog.fork()
        del catalog.queries[key]
        for i in free:
            del catalog.nodes[i]
        catalog._readers = None  # (operators of earlier scripts went: their readers too)
        self._catalog = catalog
        self._plans.append(plan)
        self._drops.append((len(self._cql), q.name))
        self._dropped.add(key)
        self._groups.remove(q.name)
        self._master_shares.forget(set(self._catalog.nodes))
        self._subscribers.pop(q.name, None)
        for rs in self._rowsets.pop(q.name, []):
            rs.stopped = True

    def _operators_of(self, q: QueryDef) -> list[int]:
        """The operators only ``q`` uses: those its output reads, directly or not, that no other
        query's output reads and that are no input's scan."""
        cat = self._catalog

        def upstream(starts: Iterable[int]) -> set[int]:
            seen: set[int] = set()
            todo = list(starts)
            while todo:
                i = todo.pop()
                if i not in seen and i in cat.nodes:
                    seen.add(i)
                    todo.extend(cat.nodes[i].inputs)
            return seen

        kept = upstream(o.sink_id for o in cat.queries.values() if o is not q)
        kept |= {s.scan_id for s in cat.streams.values()}
        free = upstream([q.sink_id]) - kept
        # An operator that feeds one left out (no output reads it) stays with it.
        readers = cat.consumers()
        while stays := {i for i in free if any(r not in free for r in readers[i])}:
            free -= stays
        return sorted(free)

    def _dispatch_rowsets(self, call: str, quiet: bool) -> None:
        """Hands each row set its waiting runs (after the subscribers have been served). A
        listener that raises leaves its run and the later ones for the next delivery, and
        raises :class:`CallbackError` (unless ``quiet``: a subscriber's error is raised)."""
        for name, sets in list(self._rowsets.items()):
            for rs in list(sets):
                try:
                    rs._dispatch()
                except Exception as error:
                    if quiet:
                        continue
                    rows = sum(b.num_rows for b in rs._pending)
                    raise CallbackError(
                        f"a listener of the row set of '{name}' raised "
                        f"{type(error).__name__}: {error}. The {call} was applied: do not retry "
                        f"it. The run it raised on and the later ones ({rows} rows) wait in the "
                        "row set: its listeners get them again at the next push, advance or close",
                        query=name,
                    ) from error

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The engine's whole state as bytes, taken between calls: its options, the CQL executed so
        far (in order), and the core's state — every operator's kept rows and accumulators, the
        pending expiration holders, each stream's progress, loops' queued rows, and the results not
        fetched yet. :meth:`restore` rebuilds an engine from it that continues exactly where this
        one is (a checkpoint). Subscribed callbacks are not saved, nor the results held for a
        callback that raised (:class:`CallbackError`: fetch them first). ``REGISTER TABLE``'s
        cached copies and change-log places are in it: the restored engine reconnects to the
        databases and applies at its next :meth:`refresh_tables` what changed since the snapshot.
        The cost is linear in the state (columns are copied as raw buffers). Under
        ``executor='dts'`` and ``'heartbeat'`` (the heartbeat executor's queued rows, heartbeats
        and end fixes are saved); a ``'scheduled'`` engine raises :class:`SnapshotError`.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT);"
        ...             "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Range 10]);")
        >>> eng.push("s", [{"a": 1, "ts": 0}])
        >>> blob = eng.snapshot()
        >>> again = Engine.restore(blob)
        >>> again.push("s", [{"a": 2, "ts": 5}])
        >>> again.fetch("q").to_pylist()  # the row of ts 0 was not fetched before the snapshot
        [{'a': 1, 'ts': 0}, {'a': 2, 'ts': 5}]
        """
        if self._bound:
            raise SnapshotError(
                "an engine whose queries read resources (paper 002) cannot be snapshotted: a "
                "resource is read as it stands when each row is processed, and what was read "
                "(and the resource's state to read on restore) is not part of a snapshot; found "
                "resources " + ", ".join(sorted(self._bound))
            )
        annex = json.dumps(
            {
                "cq_py": 1,
                "options": {
                    "time_unit": self.time_unit,
                    "lifetime": self.lifetime,
                    "executor": self.executor,
                    "expose_steps": self.expose_steps,
                    "auto_delay": self.auto_delay,
                    "expiration": self.expiration,
                    "hybrid": self.hybrid,
                    "fuse": self.fuse,
                    "share_joins": self.share_joins,
                    "max_loop_steps": self._max_loop_steps,
                    "max_run": self._max_run,
                    "max_loop_ticks": self._max_loop_ticks,
                    "max_loop_rows": self._max_loop_rows,
                    "max_memory": self._max_memory,
                    "batch_size": self._batch_size,
                    "threads": self._threads,
                    "mqo": self.mqo,
                    "theta1": self._theta1,
                    "theta2": self._theta2,
                    "log_period": self._log_period,
                    **self._swj.annex(),
                },
                "cql": self._cql,
                "late": self._late,
                # The queries dropped: after how many texts of "cql", by name.
                "drops": self._drops,
                "running": self._running,
                # Where the clocks are, and the inputs' progress they follow.
                "clocks": self._clocks,
                "progress": self._progress,
                "floor": self._floor,
                # The optimizer's arrival log and clusters (its base groups follow the CQL).
                "groups": self._groups.state(),
                # What each text's MASTER queries chose to share depended on (see _execute).
                "share_inputs": self._share_inputs,
                "pushes": self._pushes,
                # REGISTER TABLE's cached copies and change-log places, and the tick where
                # refresh_tables() applies changes.
                "tables": self._tables.state(),
                "table_tick": self._table_tick,
            }
        ).encode()
        try:
            if self._parts is None:
                return self._core.snapshot(annex)
            return self._parts.snapshot(annex)
        except _core.CoreError as e:
            raise _core_error(e) from None

    @classmethod
    def restore(cls, data: bytes | bytearray | memoryview) -> Engine:
        """A new engine rebuilt from :meth:`snapshot`'s bytes: made with the saved options, the
        saved CQL executed again, then the core's state restored into it. Damaged, truncated or
        foreign bytes raise :class:`SnapshotError` (an :class:`InputError`).

        >>> eng = Engine(lifetime="negative")
        >>> eng.execute("REGISTER STREAM s(k INT, v DOUBLE);"
        ...             "REGISTER QUERY q AS SELECT k, AVG(v) AS m FROM s [Range 10] GROUP BY k;")
        >>> eng.push("s", [{"k": 1, "v": 2.0, "ts": 0}])
        >>> again = Engine.restore(eng.snapshot())
        >>> again.lifetime, again.query_names()
        ('negative', ['q'])
        >>> again.push("s", [{"k": 1, "v": 4.0, "ts": 3}]); again.close()
        >>> again.fetch("q").to_pylist()
        [{'k': 1, 'm': 2.0, 'start': 0, 'end': 3}, {'k': 1, 'm': 3.0, 'start': 3, 'end': 10}, \
{'k': 1, 'm': 4.0, 'start': 10, 'end': 13}]
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ArgumentError(f"restore() takes a snapshot's bytes, found {type(data).__name__}")
        try:
            annex = _core.snapshot_annex(data)
        except _core.CoreError as e:
            raise _core_error(e) from None
        try:
            annex, others = split_annex(annex)
            saved = json.loads(annex)
            if not isinstance(saved, dict) or saved.get("cq_py") != 1:
                raise ValueError("no cq_py engine description")
            options, cql = saved["options"], saved["cql"]
            if (
                not isinstance(options, dict)
                or not isinstance(cql, list)
                or not all(isinstance(c, str) for c in cql)
            ):
                raise ValueError("a malformed engine description")
            # (Which texts were registered while the engine ran: absent from older snapshots.)
            late, running = saved.get("late", [False] * len(cql)), saved.get("running", False)
            if (
                not isinstance(late, list)
                or len(late) != len(cql)
                or not all(isinstance(x, bool) for x in late)
                or not isinstance(running, bool)
            ):
                raise ValueError("a malformed engine description")
        except (ValueError, KeyError, UnicodeDecodeError) as e:
            raise SnapshotError(
                f"not a snapshot of a cq_py.Engine ({_printable(str(e))}); "
                "was it taken by Engine.snapshot()?"
            ) from None
        # A snapshot older than threads ran on one engine; one older than shared joins planned
        # every join alone.
        options = (
            {"threads": 1, "share_joins": False, **options}
            if isinstance(options, dict)
            else options
        )
        try:
            eng = cls(**options)
            with warnings.catch_warnings():
                # (Said when the snapshot's engine executed them.)
                warnings.simplefilter("ignore", CQPartitionWarning)
                eng._restoring = True  # (the clocks tick once the core's state is back)
                drops = saved.get("drops", [])
                if not isinstance(drops, list) or not all(
                    isinstance(d, list)
                    and len(d) == 2
                    and type(d[0]) is int
                    and isinstance(d[1], str)
                    and 1 <= d[0] <= len(cql)
                    for d in drops
                ):
                    raise ValueError("its dropped queries are not a list of [position, name]")
                # (A snapshot older than MASTER sharing planned every MASTER query alone.)
                eng._master_shares.enabled = eng.mqo and "share_inputs" in saved
                inputs = saved.get("share_inputs") or [None] * len(cql)
                if not isinstance(inputs, list) or len(inputs) != len(cql):
                    raise ValueError("its sharing inputs do not match its scripts")
                for k, (text, registered_late) in enumerate(zip(cql, late, strict=True)):
                    eng._running = registered_late  # each text planned as it was
                    eng._replay_share_inputs(inputs[k])
                    eng.execute(text)
                    for at, name in drops:
                        if at == k + 1:
                            eng.drop(name)
            eng._running = running
            eng._restoring = False
            clocks, progress = saved.get("clocks", {}), saved.get("progress", {})
            floor = saved.get("floor", MIN_TICK)
            ints = (
                isinstance(clocks, dict)
                and clocks.keys() == eng._clocks.keys()
                and all(
                    isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v)
                    for v in clocks.values()
                )
                and isinstance(progress, dict)
                and all(type(v) is int for v in progress.values())
                and type(floor) is int
            )
            if not ints:
                raise ValueError("its clocks' state is not a clock's")
            eng._master_shares.enabled = eng.mqo
            eng._clocks, eng._progress, eng._floor = clocks, progress, floor
            pushes = saved.get("pushes", {})
            if not isinstance(pushes, dict) or not all(type(v) is int for v in pushes.values()):
                raise ValueError("its push counts are not counts")
            eng._pushes = pushes
            eng._groups.load(saved.get("groups"))
            # The tables as the snapshot's engine held them, whatever their databases hold now.
            eng._tables.load(saved.get("tables", {}))
            table_tick = saved.get("table_tick", MIN_TICK)
            if type(table_tick) is not int:
                raise ValueError("its tables' tick is not a tick")
            eng._table_tick = table_tick
        except (CQError, TypeError, ValueError) as e:
            # The bytes pass the checksum (which anyone can compute: they may still be damaged), but
            # this cq cannot rebuild the engine they describe.
            raise SnapshotError(
                f"the snapshot's engine cannot be rebuilt here: {_printable(str(e))}"
            ) from None
        engines = 1 if eng._parts is None else len(eng._parts.cores)
        if len(others) != engines - 1:
            raise SnapshotError(
                f"the snapshot holds {len(others) + 1} engines' states; its scripts run on "
                f"{engines} here (Engine(threads={eng._threads}))"
            )
        try:
            if eng._parts is None:
                eng._core.restore(data)
            else:
                eng._parts.restore(data, others)
        except _core.CoreError as e:
            raise _core_error(e) from None
        if eng._core.closed:
            eng._tables.close()  # (a closed engine's snapshot: no refresh will come)
        return eng

    # -- internals ----------------------------------------------------------------------------

    def _stream(self, name: str) -> StreamDef:
        s = self._catalog.streams.get(name.lower()) if isinstance(name, str) else None
        if s is None:
            known = ", ".join(self.stream_names()) or "(none)"
            raise InputError(f"unknown stream {name!r}; registered streams: {known}", stream=name)
        return s

    def _query(self, name: str) -> QueryDef:
        q = self._catalog.queries.get(name.lower()) if isinstance(name, str) else None
        if q is None:
            known = ", ".join(self.query_names()) or "(none)"
            raise CQLSemanticError(f"unknown query {name!r}; registered queries: {known}")
        return q

    def _ready(self, sdef: StreamDef, ts: str) -> pa.Schema | None:
        """The Arrow schema of a batch that :meth:`push` hands the core as it is: the declared
        columns in declared order and types, then ``ts`` as int64 ticks (None when ``ts`` is also a
        declared column, which :meth:`_conform` refuses)."""
        key = (sdef.name, ts)
        if key not in self._ready_schemas:
            fields = [pa.field(n, T.TO_ARROW[t]) for n, t in sdef.columns]
            clash = any(n == ts for n, _ in sdef.columns)
            self._ready_schemas[key] = None if clash else pa.schema([*fields, (ts, pa.int64())])
        return self._ready_schemas[key]

    def _row_input(self, stream: Any) -> tuple[str, tuple[str, ...]]:
        """push_row's (registered name, declared column names) of ``stream``, kept for the next
        row; an :class:`InputError` for an unknown stream."""
        if not isinstance(stream, str):
            raise InputError(
                f"push_row: the stream is named by a str; found {_found(stream)}", stream=None
            )
        sdef = self._stream(stream)
        self._not_a_table(sdef)
        row = (sdef.name, tuple(n for n, _ in sdef.columns))
        self._row_inputs[stream] = row
        return row

    def _row_values(self, stream: str, values: dict[str, Any]) -> list[Any]:
        """push_row's values in declared order (and a relation's op last) when the names given
        are not exactly the declared ones: matched as in CQL, whatever the case, or an
        :class:`InputError` naming what is missing or unknown."""
        sdef = self._stream(stream)
        given = dict(values)
        folded: dict[str, str] = {}
        for k in given:
            folded.setdefault(k.lower(), k)
        where = f"push_row to '{stream}'"
        shown = ", ".join(values) or "(none)"
        args = []
        for name, type_ in sdef.columns:
            key = name if name in given else folded.get(name.lower())
            if key is None or key not in given:
                raise InputError(
                    f"{where}: missing column '{name}' ({T.CQL_NAME[type_]}); given: {shown}",
                    stream=stream,
                )
            args.append(given.pop(key))
        if sdef.relation and all(n.lower() != OP for n, _ in sdef.columns):
            key = OP if OP in given else folded.get(OP)
            if key is not None and key in given:
                args.append(given.pop(key))
        if given:
            declared = ", ".join(f"{n} {T.CQL_NAME[t]}" for n, t in sdef.columns)
            op = " and op ('+' or '-')" if sdef.relation else ""
            raise InputError(
                f"{where}: unknown column{'s' if len(given) > 1 else ''} "
                f"{', '.join(map(repr, given))}; '{stream}' has ({declared}){op}",
                stream=stream,
            )
        return args

    def _row_tick(self, stream: str, ts: Any) -> int:
        """push_row's ``ts`` as a tick: an integer as it is, a datetime converted as a
        timestamp column is; anything else, or a time outside the ticks, an
        :class:`InputError`."""
        where = f"push_row to '{stream}'"
        if ts is None or (isinstance(ts, float) and ts != ts):
            raise InputError(
                f"{where}: the timestamp is {ts!r}; every row needs a time (an integer tick "
                "or a datetime)",
                stream=stream,
            )
        try:
            return self._tick(ts)
        except ArgumentError:
            raise InputError(
                f"{where}: the timestamp must be an integer tick or a datetime; found {_found(ts)}",
                stream=stream,
            ) from None
        except InputError:
            raise InputError(
                f"{where}: timestamp {ts!r} is outside the engine's {tick_range()}", stream=stream
            ) from None

    def _drain(self, query: str) -> list[pa.RecordBatch]:
        try:
            if self._parts is not None:
                q = self._query(query)
                names = self.query_schema(q.name).names
                # A stream's parts merged by time; a relation's by start, in which one engine
                # hands out rows wherever their ends are fixed in start order (a subscriber then
                # gets the same sequence from one engine and from several).
                at = "ts" if q.kind == "stream" else "start"
                time = [names.index(at)]
                if self.expose_steps:
                    time.append(names.index(f"{at}_step"))
                return self._parts.drain(query, time)
            caps = self._core.drain(query)
        except _core.CoreError as e:
            raise _core_error(e) from None
        return [pa.RecordBatch._import_from_c_capsule(s, a) for s, a in caps]

    def _drain_subscribed(self) -> list[tuple[str, list[_Subscriber], list[pa.RecordBatch]]]:
        """Every subscribed query's new batches: one core call for all of them on one engine
        (only the queries with rows come back), a merge per query on several."""
        if self._parts is not None:
            return [(n, subs, self._drain(n)) for n, subs in self._subscribers.items()]
        names = list(self._subscribers)
        try:
            if names != self._watched:  # (the core keeps the list between calls)
                self._core.watch(names)
                self._watched = names
            drained = self._core.drain_watched()
        except _core.CoreError as e:
            raise _core_error(e) from None
        if not drained and not self._backlogged:
            return []
        batches = {
            k: [pa.RecordBatch._import_from_c_capsule(s, a) for s, a in caps] for k, caps in drained
        }
        # A query without new rows is served too when a callback left a backlog (delivered again).
        for n in self._backlogged:
            if n in self._subscribers:
                batches.setdefault(names.index(n), [])
        return [(names[k], self._subscribers[names[k]], batches[k]) for k in sorted(batches)]

    def _stopped(self, e: _core.CoreError, call: str) -> CQError | RuntimeError:
        """The exception for a core error while data moved. After a runaway loop the subscribers
        first get what was final before the call (what fetch() returns); should a callback raise
        meanwhile, its batch stays in its backlog and the runaway is still the error raised."""
        err = _core_error(e)
        if isinstance(err, RunawayLoopError):
            with contextlib.suppress(CallbackError):
                self._deliver(call)
        return err

    def _deliver(self, call: str) -> None:
        """Hands every subscribed query's new results to its callbacks. A callback that raises
        keeps the batch it raised on and the later ones in its backlog (they are delivered again
        next time, or fetched); the others are served all the same, then the first failure is
        raised as a :class:`CallbackError` saying that ``call`` was applied."""
        failures: list[tuple[str, _Subscriber, Exception]] = []
        served = self._drain_subscribed()
        # Until every callback has returned (an interrupt may leave backlogs anywhere).
        self._backlogged.update(name for name, _, _ in served)
        for name, subscribers, batches in served:
            # Queued for every subscriber before any is called, so that an interrupt inside a
            # callback loses nothing either.
            for sub in subscribers:
                sub.backlog.extend(batches)
            for sub in subscribers:
                while sub.backlog:
                    try:
                        sub.callback(sub.backlog[0])
                    except Exception as e:  # noqa: BLE001 - the user's code: anything at all
                        failures.append((name, sub, e))
                        break
                    sub.backlog.popleft()
        self._backlogged = {name for name, _, _ in failures}
        if self._rowsets:
            self._dispatch_rowsets(call, bool(failures))
        if failures:
            name, sub, error = failures[0]
            kept = sum(b.num_rows for b in sub.backlog)
            more = f" ({len(failures) - 1} more callbacks raised too)" if len(failures) > 1 else ""
            callback = getattr(sub.callback, "__qualname__", None) or repr(sub.callback)
            raise CallbackError(
                f"the callback {callback} subscribed to query '{name}' raised "
                f"{type(error).__name__}: {error}{more}. The {call} was applied: do not retry it. "
                f"The {kept} result rows of '{name}' it did not take, from the batch it raised on, "
                f"are kept: delivered to it again at the next push, advance, close or subscribe, "
                f"or returned by fetch('{name}')",
                query=name,
            ) from error

    def _check_memory(self, call: str) -> None:
        if self._max_memory is None:
            return
        used = resident_bytes()
        if used > self._max_memory:
            raise MemoryLimitError(
                f"{call} refused: the process holds {used / 2**20:,.0f} MiB, more than "
                f"Engine(max_memory={self._max_memory}) ({self._max_memory / 2**20:,.0f} MiB); "
                "nothing changed. Windows over unbounded input ([Range Unbounded], relations, "
                "DISTINCT, joins and aggregates over them) keep what they have seen: fetch the "
                "results, snapshot() or close() the engine, or bound the windows",
                used=used,
                limit=self._max_memory,
            )

    def _tick(self, t: Any) -> int:
        """The tick ``advance(t)`` means: an integer as it is, a datetime converted as a
        timestamp column is; within the engine's ticks."""
        if isinstance(t, (datetime.datetime, np.datetime64)):
            coarse = ("Y", "M", "W", "D", "h", "m")  # units Arrow has no timestamps of
            if isinstance(t, np.datetime64) and np.datetime_data(t.dtype)[0] in coarse:
                t = t.astype("datetime64[s]")
            try:
                col = pa.array([t])
            except (pa.ArrowException, ValueError, TypeError) as e:
                raise ArgumentError(f"advance({t!r}): not a time Arrow can read ({e})") from None
            if not pa.types.is_timestamp(col.type) or col.null_count:
                raise ArgumentError(
                    f"advance({t!r}): not a point in time (Arrow reads it as "
                    f"{col.type}{', null' if col.null_count else ''})"
                )
            try:
                tick: int = to_ticks(col, self.time_unit)[0].as_py()
            except InputError:
                raise InputError(
                    f"advance({t!r}): outside the engine's {tick_range()} in "
                    f"'{self.time_unit}'; close() ends the input for good"
                ) from None
            return tick
        if isinstance(t, (bool, np.bool_)) or not hasattr(t, "__index__"):
            raise ArgumentError(
                f"advance() takes a tick (an integer) or a datetime; found {_found(t)}"
            )
        tick = operator.index(t)
        if not MIN_TICK <= tick <= MAX_TICK:
            raise InputError(
                f"advance({tick}): outside the engine's {tick_range()}; close() ends "
                "the input for good"
            )
        return tick

    @staticmethod
    def _to_table(data: Any, stream: str) -> pa.Table | None:
        """``data`` as an Arrow table (None for an empty list). Whatever the conversion to Arrow
        refuses is an :class:`InputError` naming the column, the row and the value."""
        if isinstance(data, pa.Table):
            return data
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
        where = f"push to '{stream}'"
        if isinstance(data, list):
            if not data:
                return None
            if not all(isinstance(r, dict) for r in data):
                raise InputError(f"{where}: a list of rows must hold dicts", stream=stream)
            try:
                return pa.Table.from_pylist(data)
            except (pa.ArrowException, OverflowError, TypeError, ValueError) as e:
                # As pyarrow does: the first row's keys are the columns.
                raise _unconvertible(
                    where,
                    stream,
                    e,
                    {k: functools.partial(_rows_prefix, data, k) for k in data[0]},
                    len(data),
                    lambda k, i: data[i].get(k),
                ) from None
        if type(data).__module__.split(".")[0] == "pandas":
            if type(data).__name__ != "DataFrame":
                raise InputError(
                    f"{where}: expected a pandas DataFrame (with a timestamp column); "
                    f"found a pandas {type(data).__name__}: .to_frame() or "
                    "pandas.DataFrame({...}) makes one",
                    stream=stream,
                )
            names = [str(c) for c in data.columns]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise InputError(
                    f"{where}: column {twice[0]!r} appears {names.count(twice[0])} "
                    "times in the DataFrame; each column must appear once",
                    stream=stream,
                )
            try:
                return pa.Table.from_pandas(data, preserve_index=False)
            except (pa.ArrowException, OverflowError, TypeError, ValueError) as e:
                cols = {str(c): data.iloc[:, i] for i, c in enumerate(data.columns)}
                prefixes = {k: functools.partial(_series_prefix, c) for k, c in cols.items()}
                raise _unconvertible(
                    where, stream, e, prefixes, len(data), lambda k, i: cols[k].iloc[i]
                ) from None
        if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
            try:
                return pa.table(data)
            except (pa.ArrowException, TypeError, ValueError) as e:
                raise InputError(
                    f"{where}: {type(data).__name__} does not convert to an Arrow table: {e}",
                    stream=stream,
                ) from None
        hint = (
            " (a dict of columns? pyarrow.table(d) makes a table of it)"
            if isinstance(data, dict)
            else ""
        )
        raise InputError(
            f"{where}: expected a pyarrow Table or RecordBatch, a pandas DataFrame, "
            f"a list of dicts or an object with __arrow_c_stream__; found "
            f"{type(data).__name__}{hint}",
            stream=stream,
        )

    def _conform(
        self,
        table: pa.Table,
        stream: str,
        columns: list[tuple[str, str]],
        ts: str,
        relation: bool = False,
    ) -> list[pa.RecordBatch]:
        """The table's declared columns and timestamp, in declared order and types (zero-copy when
        they already match), as record batches whose last column is the timestamp in ticks. A
        relation's ``op`` column, when there is one, goes just before the timestamp (the core
        checks its values)."""
        have = {f.name: f for f in table.schema}
        # Names match as in CQL, whatever the case, when the exact spelling is not there.
        folded = {f.name.lower(): f for f in table.schema}
        for name, _ in columns:
            if name not in have and name.lower() in folded:
                have[name] = folded[name.lower()]
        found = ", ".join(table.schema.names) or "(none)"
        if ts not in have:
            raise InputError(
                f"push to '{stream}': missing timestamp column '{ts}'; found columns: {found}",
                stream=stream,
            )
        used = [ts] + [have[n].name for n, _ in columns if n in have]
        if OP in folded:
            used.append(folded[OP].name)
        for name in used:
            times = len(table.schema.get_all_field_indices(name))
            if times > 1:
                raise InputError(
                    f"push to '{stream}': column '{name}' appears {times} times in "
                    "the data; each column must appear once",
                    stream=stream,
                )
        arrays, names = [], []
        for name, type_ in columns:
            if name == ts:
                raise InputError(
                    f"push to '{stream}': column '{name}' is both a declared column and "
                    "the timestamp; pass ts= the name of another column",
                    stream=stream,
                )
            f = have.get(name)
            if f is None:
                raise InputError(
                    f"push to '{stream}': missing column '{name}' "
                    f"({T.CQL_NAME[type_]}); found columns: {found}",
                    stream=stream,
                )
            arrays.append(self._cast_column(table.column(f.name), f.type, type_, stream, name))
            names.append(name)
        op = self._op_column(table, folded, columns, stream, relation)
        if op is not None:
            arrays.append(op)
            names.append(OP)
        arrays.append(self._ticks(table.column(ts), have[ts].type, stream, ts))
        names.append(ts)
        conformed = pa.Table.from_arrays(arrays, names=names)
        return [b for b in conformed.to_batches() if b.num_rows]

    @staticmethod
    def _op_column(
        table: pa.Table,
        folded: dict[str, pa.Field],
        columns: list[tuple[str, str]],
        stream: str,
        relation: bool,
    ) -> pa.ChunkedArray | None:
        """The ``op`` column of a push to a relation, as utf8; None when there is none (all
        inserts). An ``op`` column pushed to a stream that does not declare one is refused: only
        relations take deletes."""
        f = folded.get(OP)
        if f is None or any(name.lower() == OP for name, _ in columns):
            return None
        if not relation:
            raise InputError(
                f"push to '{stream}': column '{f.name}' marks inserts and deletes, "
                f"which only a relation takes; '{stream}' is a stream (REGISTER "
                "STREAM), whose rows are all inserts: drop the column, or register "
                "a relation",
                stream=stream,
            )
        col = table.column(f.name)
        if (
            (pa.types.is_dictionary(f.type) and pa.types.is_string(f.type.value_type))
            or pa.types.is_large_string(f.type)
            or pa.types.is_string_view(f.type)
            or pa.types.is_null(f.type)
        ):
            col = col.cast(pa.string())
        elif not pa.types.is_string(f.type):
            raise InputError(
                f"push to '{stream}': column '{f.name}' must hold '+' (insert) or '-' "
                f"(delete) as strings; found Arrow type {f.type}",
                stream=stream,
            )
        return col

    @staticmethod
    def _cast_column(
        col: pa.ChunkedArray, have: pa.DataType, want: str, stream: str, name: str
    ) -> pa.ChunkedArray:
        target = T.TO_ARROW[want]
        if have == target:
            return col
        # Dictionary-encoded columns (pandas and polars categoricals) are decoded by the cast:
        # what counts is the type of their values.
        values = have.value_type if pa.types.is_dictionary(have) else have
        ok = (
            pa.types.is_null(values)
            or (want == T.INT64 and pa.types.is_integer(values))
            or (want == T.FLOAT64 and (pa.types.is_floating(values) or pa.types.is_integer(values)))
            or (
                want == T.UTF8
                and (
                    pa.types.is_string(values)
                    or pa.types.is_large_string(values)
                    or pa.types.is_string_view(values)
                )
            )
            or (want == T.BOOL and pa.types.is_boolean(values))
        )
        if not ok:
            raise InputError(
                f"push to '{stream}': column '{name}' must be {T.CQL_NAME[want]}; found "
                f"Arrow type {have}",
                stream=stream,
            )
        try:
            return col.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InputError(
                f"push to '{stream}': column '{name}' does not fit {T.CQL_NAME[want]}: {e}",
                stream=stream,
            ) from None

    def _ticks(
        self, col: pa.ChunkedArray, have: pa.DataType, stream: str, ts: str
    ) -> pa.ChunkedArray:
        return to_ticks(col, self.time_unit, where=f"push to '{stream}'", column=ts, stream=stream)


def _check_runnable(nodes: list[Node], planner: Planner, executor: str) -> None:
    """Refuses, before anything is registered, a plan that uses operators or kernels the core does
    not have yet (``explain`` shows such plans all the same), and a recursive plan under the
    heartbeat and scheduled executors, which would deadlock on it."""
    from cq_py.planner import loops

    # (A loop through a new operator lies among the new ones: loops.new_part.)
    part = {n.id: n for n in nodes}
    ids = set(part)
    succ = loops.successors(part)
    for comp in loops.strongly_connected(part, succ):
        if executor in ("heartbeat", "scheduled") and ids & set(comp) and loops.is_loop(comp, succ):
            names = _from_first_registered(
                loops.queries_on(loops.find_cycle(comp, succ), planner.cat), planner
            )
            ring = " → ".join(names + names[:1])
            first = planner.cat.queries.get(names[0].lower()) if names else None
            raise planner.err(
                f"executor='{executor}' cannot run the recursive loop {ring} (it would "
                "deadlock: a binary operator on the loop waits for a heartbeat from its "
                "own output, paper 000 §2.3); use executor='dts'",
                first.pos if first else nodes[0].pos,
            )
    for n in nodes:
        if find(n.op) is None:
            raise planner.err(
                f"the operator '{n.op}' (in '{n.owner}') is not available in "
                "this build yet; cq_py.explain() shows the plan",
                n.pos,
            )
        for e in n.checks:
            for call in missing_kernels(e):
                args = ", ".join(T.CQL_NAME[a.type] for a in call.args)
                raise planner.err(
                    f"'{call.text}' ({call.fn} of {args}) is not available in this build yet",
                    call.pos,
                )


def _from_first_registered(names: list[str], planner: Planner) -> list[str]:
    """The queries of a loop (in data-flow order), rotated to start at the first registered."""
    registered = [q.lower() for q in planner.cat.queries]
    if not names or any(n.lower() not in registered for n in names):
        return names
    k = min(range(len(names)), key=lambda i: registered.index(names[i].lower()))
    return names[k:] + names[:k]


def explain(
    cql: str,
    time_unit: str = "ms",
    *,
    expose_steps: bool = False,
    auto_delay: bool = False,
    share_joins: bool = True,
    fuse: bool = True,
) -> str:
    """The plan of ``cql`` without running it: every statement parsed and checked, every operator
    with its inputs, windows, lifetime properties and delays, the loops and the DTS order
    (``fuse`` and ``share_joins`` as for :class:`Engine`).

    >>> plan = explain("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s;")
    >>> print(plan.splitlines()[3])
      q: relation (a BIGINT, start, end); reads s
    """
    cql = _cql_text(cql, "explain()")
    time_unit = _choice("time_unit", time_unit, TIME_UNITS)
    planner = Planner(
        Catalog(),
        time_unit,
        cql,
        _flag("expose_steps", expose_steps),
        _flag("auto_delay", auto_delay),
        fuse=_flag("fuse", fuse),
        share_joins=_flag("share_joins", share_joins),
    )
    catalog, _ = planner.plan(parse(cql))
    return render_plan(catalog)


def _engine_options() -> list[str]:
    import inspect

    return [p for p in inspect.signature(Engine.__init__).parameters if p != "self"]


def run(
    cql: str, inputs: Mapping[str, Any] | None = None, ts: str = "ts", **engine_options: Any
) -> dict[str, pa.Table]:
    """Runs the CQL script ``cql`` over complete inputs, closes the engine, and returns
    ``{query name: pyarrow.Table}`` with the whole output of every registered query.

    ``inputs`` maps the name of each registered stream or relation to its data: a pyarrow Table or
    RecordBatch, a pandas DataFrame, a list of dicts (one per row), or anything with the Arrow
    PyCapsule interface (``__arrow_c_stream__``: polars, DuckDB, ...). Columns are matched by name
    (as in CQL, whatever the case); extra columns are ignored; values are cast to the declared
    types (any integer to BIGINT, integers or floats to DOUBLE, any string kind or a dictionary /
    categorical column to VARCHAR). An input left out gets no rows.

    ``ts`` names the column holding each row's timestamp: integers (ticks of the engine's
    ``time_unit``) or an Arrow / pandas timestamp, floored to ``time_unit``. Ticks lie within
    ``-(2**63 - 1)`` to ``2**63 - 2`` (the extremes of int64 stand for ±∞). Each input must be in
    non-decreasing timestamp order (it is not sorted; an out-of-order row is an InputError naming
    it); the inputs are merged in time order across streams (rows with equal timestamps from
    different inputs in any order), pushed, then the engine is closed.

    A relation's data (``REGISTER RELATION``) holds changes: an optional ``op`` column of ``'+'``
    (insert) and ``'-'`` (delete, of the oldest alive copy of the row's values).

    ``engine_options`` are :class:`Engine`'s: ``time_unit`` ('ms'), ``lifetime``, ``executor``,
    ``expose_steps``, ``auto_delay``, ``hybrid``, ``fuse``, ``share_joins``, ``max_loop_steps``,
    ``max_run``, ``scheduler``, ``batch``, ``gatekeeper``,
    ``expiration``, ``max_memory``, ``threads``, ``batch_size``: the inputs are pushed whole and
    the engine runs them ``batch_size`` rows (65,536) at a time, so memory follows the queries'
    state and the output, not the size of the inputs.

    With ``threads`` above 1 (the default: the machine's cores) and a script whose outputs look
    back a bounded stretch (:func:`cq_py.spark.lookback.lookback_plan`: stream-valued queries over
    time and row windows, joins, exact aggregates), the inputs are cut in time: each thread's
    engine runs one stretch after a warm-up of the rows just before it and gives that stretch's
    outputs, the same as one engine's. Other scripts run as ``Engine(threads=N)`` does (split by
    a partition key, or on one engine).

    Output: a stream-valued query (ISTREAM / DSTREAM / RSTREAM) gives its columns and ``ts``, in
    time order; a relation-valued query gives its columns, ``start`` and ``end`` (the interval in
    which the row is in the relation; ``end`` null: still there at the end), in start order. With
    ``expose_steps=True`` the ε-steps come too (``ts_step``, ``start_step``, ``end_step``).

    Errors: :class:`CQLSyntaxError` / :class:`CQLSemanticError` for the script (line, column),
    :class:`InputError` for the data (``stream`` and ``row`` say where), :class:`RunawayLoopError`
    for a recursive query that does not settle, :class:`MemoryLimitError` past ``max_memory``,
    :class:`ArgumentError` for a wrong argument or option. Nothing is returned on error.

    >>> import pyarrow as pa, cq_py
    >>> t = pa.table({"a": [1, 2, 3], "b": [0.4, 0.6, 0.9], "ts": [1, 2, 3]})
    >>> out = cq_py.run("REGISTER STREAM s(a INT, b DOUBLE);"
    ...                 "REGISTER QUERY q AS ISTREAM(SELECT a, b*2 AS c FROM s [Range 10] "
    ...                 "WHERE b > 0.5);"
    ...                 "REGISTER QUERY w AS SELECT a FROM s [Range 2];",
    ...                 inputs={"s": t})
    >>> out["q"].to_pylist()
    [{'a': 2, 'c': 1.2, 'ts': 2}, {'a': 3, 'c': 1.8, 'ts': 3}]
    >>> out["w"].to_pylist()
    [{'a': 1, 'start': 1, 'end': 3}, {'a': 2, 'start': 2, 'end': 4}, {'a': 3, 'start': 3, 'end': 5}]
    """
    known = _engine_options()
    for option in engine_options:
        if option not in known:
            raise ArgumentError(
                f"run(): unknown engine option {option!r}; the options are {', '.join(known)}"
            )
    if inputs is None:
        inputs = {}
    if not isinstance(inputs, Mapping):
        raise ArgumentError(
            f"run(inputs=...) maps stream names to their data, e.g. "
            f"{{'s': table}}; found {type(inputs).__name__}"
        )
    if not isinstance(ts, str):
        raise ArgumentError(f"run(ts=...) names the timestamp column; found {_found(ts)}")
    text = _cql_text(cql, "run()")
    threads = _threads(engine_options.get("threads"))
    eng = Engine(**{**engine_options, "threads": 1}) if threads > 1 else Engine(**engine_options)
    eng.execute(text)
    # Unknown names fail before anything runs.
    names = {name: eng._stream(name).name for name in inputs}
    if len(set(names.values())) < len(names):
        twice = [n for n in names if list(names.values()).count(names[n]) > 1]
        raise InputError(
            f"run(inputs=...): {' and '.join(map(repr, twice))} name the same stream "
            f"'{names[twice[0]]}'",
            stream=names[twice[0]],
        )
    converted = {names[name]: Engine._to_table(data, names[name]) for name, data in inputs.items()}
    tables = {k: v for k, v in converted.items() if v is not None and v.num_rows}
    if threads > 1:
        sliced = _run_sliced(eng, text, tables, ts, threads, engine_options)
        if sliced is not None:
            return sliced
        # No time split: the key-partitioned engines (or one, saying why), as Engine(threads=N).
        eng = Engine(**engine_options)
        eng.execute(text)
    _push_all(eng, tables, ts)
    eng.close()
    return {q: eng.fetch(q) for q in eng.query_names()}


def _push_all(eng: Engine, tables: dict[str, pa.Table], ts: str) -> None:
    """Pushes ``tables`` (stream name -> rows in time order) to ``eng`` merged in time order."""
    pushed = dict.fromkeys(tables, 0)
    if len(tables) == 1:
        pieces: Iterable[tuple[str, Any]] = tables.items()
    else:
        # Merged batch_size rows at a time: a round of the merge pushes one piece per input, and
        # the instants a piece leaves open wait for the other inputs' pieces (zero-copy slices).
        pieces = _merge_by_time(
            {n: t.to_batches(max_chunksize=eng._batch_size) for n, t in tables.items()},
            ts,
            eng.time_unit,
        )
    for name, piece in pieces:
        try:
            eng.push(name, piece, ts=ts)
        except InputError as e:
            if e.row is None or len(tables) == 1:
                raise
            # The engine counts rows within one push; the user wants the row of the input.
            row = pushed[name] + e.row
            raise InputError(
                f"{e.message} (row {row} of inputs[{name!r}])", stream=name, row=row
            ) from None
        pushed[name] += piece.num_rows


def _run_sliced(
    first: Engine,
    text: str,
    tables: dict[str, pa.Table],
    ts: str,
    threads: int,
    options: Mapping[str, Any],
) -> dict[str, pa.Table] | None:
    """:func:`run` on ``threads`` engines, each over a slice of time of the inputs after a warm-up
    (:mod:`cq_py.time_split`; ``first`` has executed ``text`` and runs the first slice, on the
    calling thread); None when the script or the data allow no time split (the caller runs as
    ``Engine(threads=N)`` does). Any error of a slice runs the whole again the usual way, which
    reports it as one engine would."""
    from cq_py.spark.lookback import lookback_catalog
    from cq_py.time_split import bounds, cut_by_time, ticks_of, warmup_start

    plan = lookback_catalog(first._catalog)
    if not plan.sliceable or not tables or first.expose_steps:
        return None
    ticks = {n: ticks_of(t.column(ts)) if ts in t.column_names else None for n, t in tables.items()}
    times = {n: t for n, t in ticks.items() if t is not None}
    if len(times) < len(ticks):
        return None
    largest = max(tables, key=lambda n: tables[n].num_rows)
    # A share shorter than a batch is one push for one engine: planning another engine and
    # handing it to a thread costs more than the share (a few milliseconds).
    cuts = bounds(times[largest], min(threads, tables[largest].num_rows // first._batch_size))
    if not cuts:
        return None
    # Each input's slices as rows: slice k is [edges[k], edges[k + 1]).
    edges = {
        n: [0, *(int(np.searchsorted(t, c, "left")) for c in cuts), len(t)]
        for n, t in times.items()
    }
    for n, t in times.items():
        if any(0 < e < len(t) and t[e - 1] > t[e] for e in edges[n]):
            return None  # out of order: the usual run names the row

    def one(k: int) -> dict[str, pa.Table] | None:
        """Slice k's outputs; None when its warm-up would be as long as the slice."""
        # A warm-up as long as the slice (of the largest input) saves nothing.
        limit = edges[largest][k + 1] - edges[largest][k] - 1
        part = {}
        for name, t in times.items():
            lo, hi = edges[name][k], edges[name][k + 1]
            warm = (
                warmup_start(t, tables[name], lo, plan.lookback[name], limit, cuts[k - 1])
                if k
                else 0
            )
            if warm is None:
                return None
            if hi > warm:
                part[name] = tables[name].slice(warm, hi - warm)
        if k:
            eng = Engine(**{**options, "threads": 1})
            eng.execute(text)
        else:
            eng = first
        _push_all(eng, part, ts)
        eng.close()
        lo_t = cuts[k - 1] if k else None
        hi_t = cuts[k] if k < len(cuts) else None
        return {q: cut_by_time(eng.fetch(q), lo_t, hi_t) for q in eng.query_names()}

    # Slices 1.. on the pool's threads (their warm-ups and engines made there, while slice 0 runs
    # here): the engines release the GIL while they run.
    pool = _slice_pool()
    later = [pool.submit(one, k) for k in range(1, len(cuts) + 1)]
    try:
        outs = [one(0)] + [f.result() for f in later]
    except CQError:
        concurrent.futures.wait(later)  # the usual run that follows has the cores
        return None
    if any(o is None for o in outs):
        return None
    return {q: pa.concat_tables([o[q] for o in outs if o is not None]) for q in first.query_names()}


@functools.cache
def _slice_pool() -> Any:
    """The threads that run the time slices of :func:`run` after the first (kept: starting threads
    costs a millisecond or two a run)."""
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(MAX_THREADS - 1, thread_name_prefix="cq-slice")


def _merge_by_time(
    named: dict[str, Iterable[pa.RecordBatch]], ts: str, time_unit: str
) -> Iterator[tuple[str, pa.RecordBatch]]:
    from cq_py.io.readers import merge_by_time

    return merge_by_time({n: iter(b) for n, b in named.items()}, ts=ts, time_unit=time_unit)
