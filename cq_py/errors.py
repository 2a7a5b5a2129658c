"""The exceptions cq raises. Every message says what was expected and what was found."""

from __future__ import annotations


class CQError(Exception):
    """Base class of every error cq raises on purpose."""


class CQLSyntaxError(CQError):
    """The CQL text does not parse.

    Carries ``line`` and ``column`` (1-based), the offending ``text`` (the token found) and
    ``line_text`` (the whole source line). ``str(err)`` shows the line with a caret under the
    column.

    >>> import cq_py
    >>> try:
    ...     cq_py.Engine().execute("REGISTER STREAM s(a INT,);")
    ... except cq_py.CQLSyntaxError as e:
    ...     (e.line, e.column)
    (1, 25)
    """

    def __init__(self, message: str, line: int, column: int, text: str = "", line_text: str = ""):
        self.message = message
        self.line = line
        self.column = column
        self.text = text
        self.line_text = line_text
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"line {self.line}, column {self.column}: {self.message}"
        if not self.line_text:
            return head
        caret = " " * (self.column - 1) + "^"
        return f"{head}\n  {self.line_text}\n  {caret}"


class CQLSemanticError(CQError):
    """The CQL parses but means nothing valid: unknown names, wrong types, a window on a relation,
    a loop without a delay, ... ``line`` and ``column`` point at the offending construct when
    known."""

    def __init__(
        self, message: str, line: int | None = None, column: int | None = None, line_text: str = ""
    ):
        self.message = message
        self.line = line
        self.column = column
        self.line_text = line_text
        super().__init__(self._render())

    def _render(self) -> str:
        if self.line is None:
            return self.message
        head = f"line {self.line}, column {self.column}: {self.message}"
        if not self.line_text:
            return head
        caret = " " * ((self.column or 1) - 1) + "^"
        return f"{head}\n  {self.line_text}\n  {caret}"


class InputError(CQError):
    """Data pushed to the engine is not acceptable: unknown stream, schema mismatch, null or
    decreasing timestamps, a push after ``close()``. ``stream`` and ``row`` (0-based within the
    push) say where, when known. A rejected push changes nothing in the engine."""

    def __init__(self, message: str, stream: str | None = None, row: int | None = None):
        self.message = message
        self.stream = stream
        self.row = row
        super().__init__(message)


class ArgumentError(CQError, ValueError, TypeError):
    """An argument of a cq_py call has the wrong type or value: an :class:`cq_py.Engine` option
    (``Engine(hybrid="no")``, ``max_loop_steps=2**64``), the time given to ``advance`` (``1.5``,
    ``"10"``), CQL text that is not a ``str``, ``cq_py.run``'s ``inputs`` or options. The message
    names the argument, what it takes and what was found. A subclass of ``ValueError`` and
    ``TypeError`` too, so that code catching either keeps working.

    >>> import cq_py
    >>> try:
    ...     cq_py.Engine(hybrid="no")
    ... except cq_py.ArgumentError as e:
    ...     print(e)
    Engine option hybrid must be True or False; found 'no' (str)
    """


class CallbackError(CQError):
    """A callback given to :meth:`cq_py.Engine.subscribe` raised while results were delivered to
    it. The call that delivered them (``push``, ``advance``, ``close`` or ``subscribe``) was
    applied all the same: it must not be retried (a retried push is a decreasing timestamp). The
    batch the callback raised on and every later result of its query are kept: they are delivered
    again, from that batch on, at the next call that delivers, or returned by ``fetch(query)``.
    The callback's exception is ``__cause__``; ``query`` names the query.

    >>> import cq_py
    >>> eng = cq_py.Engine()
    >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
    >>> def fails(batch): raise ValueError("disk full")
    >>> eng.subscribe("q", fails)
    >>> try:
    ...     eng.push("s", [{"a": 1, "ts": 0}])
    ... except cq_py.CallbackError as e:
    ...     print(e.query, e.__cause__)
    q disk full
    >>> eng.fetch("q").to_pylist()  # the row the callback did not take
    [{'a': 1, 'ts': 0}]
    """

    def __init__(self, message: str, query: str | None = None):
        self.message = message
        self.query = query
        super().__init__(message)


class SnapshotError(InputError):
    """Bytes given to :meth:`cq_py.Engine.restore` are not a snapshot cq can restore: damaged or
    truncated, of another format version, or (restoring into a core directly) taken of other
    queries or options; or a snapshot was asked of an engine that cannot take one
    (``executor='scheduled'``). A subclass of :class:`InputError`: a snapshot is input too.

    >>> import cq_py
    >>> try:
    ...     cq_py.Engine.restore(b"not a snapshot")
    ... except cq_py.SnapshotError as e:
    ...     print(e)
    not a cq snapshot (its first bytes are not a snapshot's)
    """


class MemoryLimitError(CQError):
    """The process's resident memory is above ``Engine(max_memory=...)``: the ``push`` or
    ``advance`` was refused and changed nothing. The engine stays usable: ``fetch``,
    ``snapshot`` and ``close`` work. ``used`` and ``limit`` are in bytes.

    >>> import cq_py
    >>> eng = cq_py.Engine(max_memory=1)
    >>> eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
    >>> try:
    ...     eng.push("s", [{"a": 1, "ts": 0}])
    ... except cq_py.MemoryLimitError as e:
    ...     print(str(e)[:22], e.limit)
    push to 's' refused: t 1
    """

    def __init__(self, message: str, used: int, limit: int):
        self.message = message
        self.used = used
        self.limit = limit
        super().__init__(message)


class RunawayLoopError(CQError):
    """A recursive query's loop did not settle: it took more than ``max_loop_steps`` ε steps inside
    one tick (SEMANTICS.md §2), more than ``max_loop_rows`` rows went round it in one tick or past
    its inputs' progress, or it kept producing rows at more than ``max_loop_ticks`` ticks past its
    inputs' progress (after ``close()``, or an ``advance`` far ahead; see :class:`cq_py.Engine`).
    The message names the loop's queries. The engine takes no more input after it (operators
    stopped half way through an instant; every later call says so), but ``fetch`` still returns
    the results that were final before it.

    >>> import cq_py
    >>> eng = cq_py.Engine(max_loop_steps=100)
    >>> eng.execute("REGISTER STREAM s(a INT);"
    ...             "REGISTER QUERY c AS ISTREAM(SELECT a FROM s [Now] UNION ALL "
    ...             "SELECT a + 1 AS a FROM c [Now]) <Now>;")
    >>> try:
    ...     eng.push("s", [{"a": 1, "ts": 0}]); eng.close()
    ... except cq_py.RunawayLoopError as e:
    ...     print(str(e)[:33])
    runaway loop: more than 100 ε ste
    """


class LockTimeout(CQError):
    """A transaction waited longer than its timeout for a resource's lock (paper 002): the message
    names the resource and the queries holding it.

    >>> import cq_py
    >>> store = cq_py.ResourceStore()
    >>> store.load("x", [{"id": 1}], key=["id"])
    >>> store._core.lock_shared("x", "q1", 1.0)  # a query reading x under 2PL
    True
    >>> try:
    ...     with store.transaction(timeout=0.01) as tx:
    ...         tx.upsert("x", [{"id": 2}])
    ... except cq_py.LockTimeout as e:
    ...     print(e)
    resource 'x' stayed locked past the timeout by query 'q1'
    """


class ResourceError(CQError):
    """A database holding resources (paper 002) cannot be used as asked: it does not open, a
    table is missing, it cannot keep last-update stamps, or it cannot be locked as the strategy
    needs.

    >>> import cq_py.resources
    >>> try:
    ...     cq_py.resources.install_versioning("sqlite:///nowhere/x.db", ["x"])
    ... except ResourceError as e:
    ...     print(str(e).split(": ")[-1])
    the database does not open (unable to open database file)
    """


def from_core(
    kind: str, message: str, stream: str | None = None, row: int | None = None
) -> CQError | RuntimeError:
    """The exception for an error the core reports as (kind, message, stream, row)
    (``cq_core._core.CoreError``'s arguments): the one place where its kinds become cq_py's.

    >>> from_core("lock_timeout", "resource 'x' stayed locked")
    LockTimeout("resource 'x' stayed locked")
    """
    if kind == "input":
        return InputError(message, stream=stream, row=row)
    if kind == "semantic":
        return CQLSemanticError(message)
    if kind == "runaway":
        return RunawayLoopError(message)
    if kind == "snapshot":
        return SnapshotError(message)
    if kind == "lock_timeout":
        return LockTimeout(message)
    return RuntimeError(f"cq internal error (please report): {message}")
