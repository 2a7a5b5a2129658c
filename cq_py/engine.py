"""The engine users drive: register CQL, push data, read results (SPEC §6).

Python parses, checks and plans; the C++ core (``cq_core._core``) runs the plan over Arrow batches
that cross the boundary as Arrow C Data Interface capsules, without copies.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Optional

import pyarrow as pa
import pyarrow.compute as pc

from cq_core import _core
from cq_py.errors import CQError, CQLSemanticError, InputError, RunawayLoopError, SnapshotError
from cq_py.parser import parse
from cq_py.planner import Catalog, Planner
from cq_py.planner import explain as render_plan
from cq_py.planner import types as T
from cq_py.planner.expressions import missing_kernels
from cq_py.planner.logical import DESCRIPTIONS, Node

LIFETIMES = ("direct", "negative")
EXECUTORS = ("dts", "heartbeat")
TIME_UNITS = ("s", "ms", "us", "ns")
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
    kind, message, stream, row = e.args
    if kind == "input":
        return InputError(message, stream=stream, row=row)
    if kind == "semantic":
        return CQLSemanticError(message)
    if kind == "runaway":
        return RunawayLoopError(message)
    if kind == "snapshot":
        return SnapshotError(message)
    return RuntimeError(f"cq internal error (please report): {message}")


class Engine:
    """A continuous-query engine on this machine.

    Options: ``time_unit`` gives durations (``[Range 5 SECONDS]``) and Arrow timestamp inputs their
    meaning in ticks ('s', 'ms', 'us' or 'ns'); ``lifetime`` and ``executor`` choose the execution
    strategy (SPEC §5); ``expose_steps=True`` adds the ε-step columns to results; ``auto_delay=True``
    puts an ε delay into each loop that has none; ``expiration="insertion_sort"`` replaces the lazy
    sorting of expiration sets by insertion sort (the baseline of paper 003 §4.2). For
    ``executor="dts"``, ``hybrid=False`` splits time per instant everywhere instead of only inside
    loops (paper 000 as published), and ``max_loop_steps`` bounds the ε steps one loop may take in
    one tick before it is reported as a runaway; ``max_run`` is the heartbeat executor's limit on
    consecutive executions of one operator.

    >>> import pyarrow as pa, cq_py
    >>> eng = cq_py.Engine()
    >>> eng.execute("REGISTER STREAM s(a INT, b DOUBLE);"
    ...             "REGISTER QUERY q AS ISTREAM(SELECT a, b * 2 AS c FROM s [Range 10] WHERE b > 0.5);")
    >>> eng.push("s", pa.table({"a": [1, 2], "b": [0.1, 0.9], "ts": [0, 1]}))
    >>> eng.fetch("q").to_pylist()
    [{'a': 2, 'c': 1.8, 'ts': 1}]
    """

    def __init__(self, time_unit: str = "ms", lifetime: str = "direct", executor: str = "dts",
                 *, expose_steps: bool = False, auto_delay: bool = False, expiration: str = "lazy",
                 hybrid: bool = True, max_loop_steps: int = 1_000_000, max_run: int = 20):
        if expiration not in ("lazy", "insertion_sort"):
            raise ValueError(f"expiration must be 'lazy' or 'insertion_sort'; found {expiration!r}")
        self.expiration = expiration
        if time_unit not in TIME_UNITS:
            raise ValueError(f"time_unit must be one of {', '.join(TIME_UNITS)}; found {time_unit!r}")
        if lifetime not in LIFETIMES:
            raise ValueError(f"lifetime must be one of {', '.join(LIFETIMES)}; found {lifetime!r}")
        if executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}; found {executor!r}")
        self.lifetime = lifetime
        self.executor = executor
        self.time_unit = time_unit
        self.expose_steps = expose_steps
        self.auto_delay = auto_delay
        self._catalog = Catalog()
        for name, value in (("max_loop_steps", max_loop_steps), ("max_run", max_run)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; found {value!r}")
        self.hybrid = hybrid
        self._max_loop_steps = max_loop_steps
        self._max_run = max_run
        self._cql: list[str] = []  # the texts execute() registered, in order (for snapshots)
        self._core = _core.Engine(lifetime=lifetime, executor=executor, expose_steps=expose_steps,
                                  hybrid=hybrid, max_loop_steps=max_loop_steps, max_run=max_run)
        self._subscribers: dict[str, list[Callable[[pa.RecordBatch], Any]]] = {}

    # -- CQL ----------------------------------------------------------------------------------

    def execute(self, cql: str) -> None:
        """Registers the streams and queries of ``cql`` (one or more statements).

        Either every statement is registered or, on the first error, none is.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s [Now];")
        >>> eng.query_names()
        ['q']
        """
        script = parse(cql)
        planner = Planner(self._catalog, self.time_unit, cql, self.expose_steps, self.auto_delay,
                          self.expiration)
        catalog, ops = planner.plan(script)
        _check_runnable(ops, planner, self.executor)
        if ops:
            plan = json.dumps({"operators": [op.to_plan() for op in ops]})
            try:
                self._core.add_plan(plan)
            except _core.CoreError as e:
                raise _core_error(e) from None
        self._catalog = catalog
        self._cql.append(cql)

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
        return pa.schema([pa.field(n, T.TO_ARROW[t]) for n, t in self._core.output_schema(self._query(query).name)])

    def explain(self) -> str:
        """The registered streams and queries, every operator (inputs, window, lifetime property,
        delay), the loops and the execution order (DTS's, or the heartbeat executor's topological
        order).

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s [Range 5];")
        >>> print(eng.explain().splitlines()[0])
        Streams:
        """
        return render_plan(self._catalog, self.executor)

    # -- data in ------------------------------------------------------------------------------

    def push(self, stream: str, data: Any, ts: str = "ts") -> None:
        """Pushes rows to ``stream`` (a stream or a relation): a pyarrow Table or RecordBatch, a
        pandas DataFrame, a list of dicts, or anything exporting the Arrow PyCapsule stream
        interface. ``ts`` names the column holding each row's timestamp (int ticks, or an Arrow
        timestamp converted to ``time_unit``).

        Timestamps must be non-null and non-decreasing, also across pushes. A rejected push raises
        :class:`cq_py.InputError` and changes nothing.

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
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
            raise InputError(f"unknown stream {stream!r}; registered streams: {known}", stream=stream)
        if self._core.closed:
            raise InputError(f"the engine is closed; push to '{sdef.name}' rejected", stream=sdef.name)
        table = self._to_table(data, sdef.name)
        if table is None:
            return
        batches = self._conform(table, sdef.name, sdef.columns, ts, sdef.relation)
        try:
            self._core.push(sdef.name, [b.__arrow_c_array__() for b in batches])
        except _core.CoreError as e:
            raise _core_error(e) from None
        self._deliver()

    def advance(self, t: int) -> None:
        """Promises that no input below tick ``t`` will come on any stream (a heartbeat): results up
        to ``t`` become final.

        >>> eng = Engine(); eng.advance(10)
        """
        try:
            self._core.advance(int(t))
        except _core.CoreError as e:
            raise _core_error(e) from None
        self._deliver()

    def close(self) -> None:
        """Ends the input: time advances to infinity and every result becomes final. Pushing
        afterwards is an :class:`InputError`; closing twice does nothing.

        >>> eng = Engine(); eng.close()
        """
        try:
            self._core.close()
        except _core.CoreError as e:
            raise _core_error(e) from None
        self._deliver()

    # -- results out --------------------------------------------------------------------------

    def fetch(self, query: str) -> pa.Table:
        """What ``query`` produced since the last fetch, as a table (drained).

        A stream-valued query's rows carry the user columns and ``ts``; a relation-valued query's
        carry the user columns and ``start``, ``end`` (null = still alive at close).

        >>> eng = Engine()
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY r AS SELECT a FROM s [Range 3];")
        >>> eng.push("s", [{"a": 7, "ts": 1}])
        >>> eng.fetch("r").to_pylist()
        [{'a': 7, 'start': 1, 'end': 4}]
        """
        q = self._query(query)
        batches = self._drain(q.name)
        table = pa.Table.from_batches(batches, schema=self.query_schema(q.name))
        if q.kind == "relation" and table.num_rows > 1:
            # Rows become final in the order their ends are fixed; they are handed out in start
            # order (SPEC §6), stably, by one vectorized sort.
            keys = [("start", "ascending")] + ([("start_step", "ascending")] if self.expose_steps else [])
            table = table.sort_by(keys)
        return table

    def subscribe(self, query: str, callback: Callable[[pa.RecordBatch], Any]) -> None:
        """Calls ``callback(batch)`` with each batch of ``query``'s results as they become final,
        starting with what is already there. Results given to subscribers are not also kept for
        :meth:`fetch`.

        >>> eng = Engine(); got = []
        >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
        >>> eng.subscribe("q", got.append)
        >>> eng.push("s", [{"a": 1, "ts": 0}])
        >>> got[0].num_rows
        1
        """
        q = self._query(query)
        if not callable(callback):
            raise TypeError(f"callback must be callable, found {type(callback).__name__}")
        self._subscribers.setdefault(q.name, []).append(callback)
        self._deliver()

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The engine's whole state as bytes, taken between calls: its options, the CQL executed so
        far (in order), and the core's state — every operator's kept rows and accumulators, the
        pending expiration holders, each stream's progress, loops' queued rows, and the results not
        fetched yet. :meth:`restore` rebuilds an engine from it that continues exactly where this
        one is (a checkpoint). Subscribed callbacks are not saved. The cost is linear in the state
        (columns are copied as raw buffers). Only under ``executor='dts'``: a heartbeat engine
        raises :class:`SnapshotError`.

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
        annex = json.dumps({
            "cq_py": 1,
            "options": {"time_unit": self.time_unit, "lifetime": self.lifetime, "executor": self.executor,
                        "expose_steps": self.expose_steps, "auto_delay": self.auto_delay,
                        "expiration": self.expiration, "hybrid": self.hybrid,
                        "max_loop_steps": self._max_loop_steps, "max_run": self._max_run},
            "cql": self._cql,
        }).encode()
        try:
            return self._core.snapshot(annex)
        except _core.CoreError as e:
            raise _core_error(e) from None

    @classmethod
    def restore(cls, data: bytes | bytearray | memoryview) -> "Engine":
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
            raise TypeError(f"a snapshot is bytes, found {type(data).__name__}")
        try:
            annex = _core.snapshot_annex(data)
        except _core.CoreError as e:
            raise _core_error(e) from None
        try:
            saved = json.loads(annex)
            if not isinstance(saved, dict) or saved.get("cq_py") != 1:
                raise ValueError("no cq_py engine description")
            options, cql = saved["options"], saved["cql"]
            if not isinstance(options, dict) or not isinstance(cql, list) or not all(isinstance(c, str) for c in cql):
                raise ValueError("a malformed engine description")
        except (ValueError, KeyError, UnicodeDecodeError) as e:
            raise SnapshotError(f"not a snapshot of a cq_py.Engine ({_printable(str(e))}); "
                                "was it taken by Engine.snapshot()?") from None
        try:
            eng = cls(**options)
            for text in cql:
                eng.execute(text)
        except (CQError, TypeError, ValueError) as e:
            # The bytes pass the checksum (which anyone can compute: they may still be damaged), but
            # this cq cannot rebuild the engine they describe.
            raise SnapshotError(f"the snapshot's engine cannot be rebuilt here: {_printable(str(e))}") from None
        try:
            eng._core.restore(data)
        except _core.CoreError as e:
            raise _core_error(e) from None
        return eng

    # -- internals ----------------------------------------------------------------------------

    def _stream(self, name: str):
        s = self._catalog.streams.get(name.lower())
        if s is None:
            known = ", ".join(self.stream_names()) or "(none)"
            raise InputError(f"unknown stream {name!r}; registered streams: {known}", stream=name)
        return s

    def _query(self, name: str):
        q = self._catalog.queries.get(name.lower()) if isinstance(name, str) else None
        if q is None:
            known = ", ".join(self.query_names()) or "(none)"
            raise CQLSemanticError(f"unknown query {name!r}; registered queries: {known}")
        return q

    def _drain(self, query: str) -> list[pa.RecordBatch]:
        try:
            caps = self._core.drain(query)
        except _core.CoreError as e:
            raise _core_error(e) from None
        return [pa.RecordBatch._import_from_c_capsule(s, a) for s, a in caps]

    def _deliver(self) -> None:
        for name, callbacks in self._subscribers.items():
            for batch in self._drain(name):
                for cb in callbacks:
                    cb(batch)

    @staticmethod
    def _to_table(data: Any, stream: str) -> Optional[pa.Table]:
        if isinstance(data, pa.Table):
            return data
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
        if isinstance(data, list):
            if not data:
                return None
            if not all(isinstance(r, dict) for r in data):
                raise InputError(f"push to '{stream}': a list of rows must hold dicts", stream=stream)
            return pa.Table.from_pylist(data)
        if type(data).__module__.split(".")[0] == "pandas":
            return pa.Table.from_pandas(data, preserve_index=False)
        if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
            return pa.table(data)
        raise InputError(f"push to '{stream}': expected a pyarrow Table or RecordBatch, a pandas "
                         f"DataFrame or a list of dicts; found {type(data).__name__}", stream=stream)

    def _conform(self, table: pa.Table, stream: str, columns: list[tuple[str, str]],
                 ts: str, relation: bool = False) -> list[pa.RecordBatch]:
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
            raise InputError(f"push to '{stream}': missing timestamp column '{ts}'; found columns: "
                             f"{found}", stream=stream)
        arrays, names = [], []
        for name, type_ in columns:
            if name == ts:
                raise InputError(f"push to '{stream}': column '{name}' is both a declared column and "
                                 "the timestamp; pass ts= the name of another column", stream=stream)
            f = have.get(name)
            if f is None:
                raise InputError(f"push to '{stream}': missing column '{name}' "
                                 f"({T.CQL_NAME[type_]}); found columns: {found}", stream=stream)
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
    def _op_column(table: pa.Table, folded: dict[str, pa.Field], columns: list[tuple[str, str]],
                   stream: str, relation: bool) -> Optional[pa.ChunkedArray]:
        """The ``op`` column of a push to a relation, as utf8; None when there is none (all
        inserts). An ``op`` column pushed to a stream that does not declare one is refused: only
        relations take deletes."""
        f = folded.get(OP)
        if f is None or any(name.lower() == OP for name, _ in columns):
            return None
        if not relation:
            raise InputError(f"push to '{stream}': column '{f.name}' marks inserts and deletes, "
                             f"which only a relation takes; '{stream}' is a stream (REGISTER "
                             "STREAM), whose rows are all inserts: drop the column, or register "
                             "a relation", stream=stream)
        col = table.column(f.name)
        if pa.types.is_dictionary(f.type) and pa.types.is_string(f.type.value_type):
            col = col.cast(pa.string())
        elif pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type) or pa.types.is_null(f.type):
            col = col.cast(pa.string())
        elif not pa.types.is_string(f.type):
            raise InputError(f"push to '{stream}': column '{f.name}' must hold '+' (insert) or '-' "
                             f"(delete) as strings; found Arrow type {f.type}", stream=stream)
        return col

    @staticmethod
    def _cast_column(col: pa.ChunkedArray, have: pa.DataType, want: str, stream: str,
                     name: str) -> pa.ChunkedArray:
        target = T.TO_ARROW[want]
        if have == target:
            return col
        ok = (pa.types.is_null(have)
              or (want == T.INT64 and pa.types.is_integer(have))
              or (want == T.FLOAT64 and (pa.types.is_floating(have) or pa.types.is_integer(have)))
              or (want == T.UTF8 and (pa.types.is_string(have) or pa.types.is_large_string(have)
                                      or pa.types.is_string_view(have)))
              or (want == T.BOOL and pa.types.is_boolean(have)))
        if not ok:
            raise InputError(f"push to '{stream}': column '{name}' must be {T.CQL_NAME[want]}; found "
                             f"Arrow type {have}", stream=stream)
        try:
            return col.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InputError(f"push to '{stream}': column '{name}' does not fit "
                             f"{T.CQL_NAME[want]}: {e}", stream=stream) from None

    def _ticks(self, col: pa.ChunkedArray, have: pa.DataType, stream: str, ts: str) -> pa.ChunkedArray:
        if pa.types.is_int64(have):
            return col
        if pa.types.is_integer(have):
            return col.cast(pa.int64())
        if pa.types.is_timestamp(have):
            # Floor to the engine's unit: a tick holds every instant inside it.
            unit = pa.timestamp(self.time_unit, have.tz)
            return pc.cast(col, unit, safe=False).cast(pa.int64())
        raise InputError(f"push to '{stream}': timestamp column '{ts}' must hold integers (ticks) or "
                         f"an Arrow timestamp; found {have}", stream=stream)


def _check_runnable(nodes: list[Node], planner: Planner, executor: str) -> None:
    """Refuses, before anything is registered, a plan that uses operators or kernels the core does
    not have yet (``explain`` shows such plans all the same), and a recursive plan under the
    heartbeat executor, which would deadlock on it."""
    available = set(_core_operator_names())
    from cq_py.planner import loops

    ids = {n.id for n in nodes}
    succ = loops.successors(planner.cat.nodes)
    for comp in loops.strongly_connected(planner.cat.nodes, succ):
        if executor == "heartbeat" and ids & set(comp) and loops.is_loop(comp, succ):
            names = _from_first_registered(
                loops.queries_on(loops.find_cycle(comp, succ), planner.cat), planner)
            ring = " → ".join(names + names[:1])
            first = planner.cat.queries.get(names[0].lower()) if names else None
            raise planner.err(f"executor='heartbeat' cannot run the recursive loop {ring} (it would "
                              "deadlock: a binary operator on the loop waits for a heartbeat from its "
                              "own output, paper 000 §2.3); use executor='dts'",
                              first.pos if first else nodes[0].pos)
    for n in nodes:
        if n.op not in available:
            raise planner.err(f"{DESCRIPTIONS.get(n.op, n.op)} (in '{n.owner}') is not available in "
                              "this build yet; cq_py.explain() shows the plan", n.pos)
        for e in n.checks:
            for call in missing_kernels(e):
                args = ", ".join(T.CQL_NAME[a.type] for a in call.args)
                raise planner.err(f"'{call.text}' ({call.fn} of {args}) is not available in this "
                                  "build yet", call.pos)


def _from_first_registered(names: list[str], planner: Planner) -> list[str]:
    """The queries of a loop (in data-flow order), rotated to start at the first registered."""
    registered = [q.lower() for q in planner.cat.queries]
    if not names or any(n.lower() not in registered for n in names):
        return names
    k = min(range(len(names)), key=lambda i: registered.index(names[i].lower()))
    return names[k:] + names[:k]


def _core_operator_names() -> list[str]:
    from cq_core import operator_names

    return operator_names()


def explain(cql: str, time_unit: str = "ms", *, expose_steps: bool = False,
            auto_delay: bool = False) -> str:
    """The plan of ``cql`` without running it: every statement parsed and checked, every operator
    with its inputs, windows, lifetime properties and delays, the loops and the DTS order.

    >>> print(explain("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s;").splitlines()[3])
      q: relation (a BIGINT, start, end); reads s
    """
    planner = Planner(Catalog(), time_unit, cql, expose_steps, auto_delay)
    catalog, _ = planner.plan(parse(cql))
    return render_plan(catalog)


def run(cql: str, inputs: Optional[dict[str, Any]] = None, ts: str = "ts",
        **engine_options: Any) -> dict[str, pa.Table]:
    """Runs ``cql`` over complete inputs and returns the output of every registered query.

    Inputs are pushed in time order across streams, then the engine is closed.

    >>> import pyarrow as pa, cq_py
    >>> t = pa.table({"a": [1, 2, 3], "b": [0.4, 0.6, 0.9], "ts": [1, 2, 3]})
    >>> out = cq_py.run("REGISTER STREAM s(a INT, b DOUBLE);"
    ...                 "REGISTER QUERY q AS ISTREAM(SELECT a, b*2 AS c FROM s [Range 10] WHERE b > 0.5);",
    ...                 inputs={"s": t})
    >>> out["q"].column("a").to_pylist()
    [2, 3]
    """
    eng = Engine(**engine_options)
    eng.execute(cql)
    inputs = inputs or {}
    for name in inputs:
        eng._stream(name)  # unknown names fail before anything runs
    tables = {name: Engine._to_table(data, name) for name, data in inputs.items()}
    tables = {k: v for k, v in tables.items() if v is not None and v.num_rows}
    if len(tables) == 1:
        (name, table), = tables.items()
        eng.push(name, table, ts=ts)
    elif tables:
        for name, batch in _merge_by_time({n: t.to_batches() for n, t in tables.items()}, ts):
            eng.push(name, batch, ts=ts)
    eng.close()
    return {q: eng.fetch(q) for q in eng.query_names()}


def _merge_by_time(named: dict[str, Iterable[pa.RecordBatch]], ts: str):
    from cq_py.io.readers import merge_by_time

    return merge_by_time({n: iter(b) for n, b in named.items()}, ts=ts)
