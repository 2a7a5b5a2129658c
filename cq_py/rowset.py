"""Row sets: a query's results as runs handed to listeners, read with a cursor (paper 001 §3.3).

The paper's API is JDBC-like: a ``CQRowSet`` holds a continuous query, calls each
``CQRowSetListener`` when a run of the query has produced rows (``dataDistributed``), and the
listener reads those rows with a cursor (``next()``, ``getString(column)``). Here a
:class:`RowSet` is made by :meth:`cq_py.Engine.rowset`; its listeners are called once per *run*,
the instant at which the query emits rows, with a :class:`RowSetEvent` whose ``source`` is the row
set, positioned before that run's rows, and whose ``ts`` is the instant.

The rows stay Arrow: a delivery is split into runs by one vectorized comparison of its ``ts``
column and each run is a zero-copy slice. ``next()`` and ``get()`` are the user's cursor over it;
``to_arrow()`` hands the run whole.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from cq_py.errors import ArgumentError


class _Engine(Protocol):
    """What a row set needs of the engine that feeds it (cq_py.Engine)."""

    def drop(self, query: str) -> None: ...


@dataclass(frozen=True)
class RowSetMetaData:
    """The columns of a row set's rows (the paper's ``CQRowSetMetaData``): the query's user
    columns, then ``ts``.

    >>> m = RowSetMetaData(pa.schema([("a", pa.int64()), ("ts", pa.int64())]))
    >>> m.column_names, m.column_count, m.column_type("a")
    (['a', 'ts'], 2, DataType(int64))
    """

    schema: pa.Schema

    @property
    def column_names(self) -> list[str]:
        return list(self.schema.names)

    @property
    def column_count(self) -> int:
        return len(self.schema)

    def column_type(self, column: str) -> pa.DataType:
        """The Arrow type of ``column``."""
        return self.schema.field(column).type


@dataclass(frozen=True)
class RowSetEvent:
    """What a listener is called with (the paper's ``CQRowSetEvent``): ``source`` is the row set,
    positioned before the rows of the run; ``ts`` the instant of the run.

    >>> RowSetEvent(source=None, ts=5).ts
    5
    """

    source: Any
    ts: int


class RowSet:
    """A continuous query's results, run by run (the paper's ``CQRowSet``): made by
    :meth:`cq_py.Engine.rowset`, never directly.

    Listeners (:meth:`add_listener`) are called once per run with a :class:`RowSetEvent`; inside
    the call the row set holds that run's rows, the cursor before the first. Without listeners,
    the rows delivered wait in the row set: :meth:`next` walks over them and those it has passed
    are let go at the next delivery. Rows delivered to a row set are not also kept for
    :meth:`cq_py.Engine.fetch`. :meth:`stop` unregisters the query
    (:meth:`cq_py.Engine.drop`).

    >>> import cq_py
    >>> eng = cq_py.Engine()
    >>> eng.execute("REGISTER STREAM s(loc VARCHAR);")
    >>> rs = eng.rowset("MASTER s SELECT loc FROM s [Now]")
    >>> seen = []
    >>> def listener(event):
    ...     while event.source.next():
    ...         seen.append((event.ts, event.source.get("loc")))
    >>> rs.add_listener(listener)
    >>> eng.push("s", [{"loc": "/a", "ts": 1}, {"loc": "/b", "ts": 1}, {"loc": "/c", "ts": 4}])
    >>> eng.advance(5)
    >>> seen
    [(1, '/a'), (1, '/b'), (4, '/c')]
    >>> rs.stop()
    """

    def __init__(self, engine: _Engine, query: str, schema: pa.Schema):
        self._engine = engine
        self.query = query
        self.metadata = RowSetMetaData(schema)
        self._listeners: list[Callable[[RowSetEvent], Any]] = []
        # Batches delivered and not yet handed to the listeners (a listener that raised leaves
        # its run and the later ones here, for the next delivery).
        self._pending: collections.deque[pa.RecordBatch] = collections.deque()
        self._view = schema.empty_table()
        self._pos = -1
        self._row: dict[str, Any] | None = None
        self.stopped = False
        self._dispatching = False

    def __repr__(self) -> str:
        state = "stopped" if self.stopped else f"{len(self._listeners)} listeners"
        return f"<RowSet of {self.query!r}, {state}>"

    # -- listeners ----------------------------------------------------------------------------

    def add_listener(self, listener: Callable[[RowSetEvent], Any]) -> None:
        """Calls ``listener(event)`` once per run of the query from now on (and for runs already
        waiting, at the next push, advance or close). A listener that raises stops that delivery:
        the run it raised on and the later ones stay for the next one (every listener of the row
        set gets that run again then), and the exception reaches the call that delivered, as the
        ``__cause__`` of a :class:`cq_py.CallbackError`.

        >>> import cq_py
        >>> eng = cq_py.Engine(); eng.execute("REGISTER STREAM s(a INT);")
        >>> rs = eng.rowset("MASTER s SELECT a FROM s [Now]")
        >>> rs.add_listener(lambda e: print(e.ts, e.source.to_arrow().num_rows))
        >>> eng.push("s", [{"a": 1, "ts": 3}]); eng.advance(4)
        3 1
        """
        if not callable(listener):
            raise ArgumentError(
                f"add_listener takes a callable (called with a RowSetEvent); found "
                f"{listener!r} ({type(listener).__name__})"
            )
        self._live("add_listener")
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[RowSetEvent], Any]) -> None:
        """Stops calling ``listener``; an :class:`ArgumentError` when it was not added."""
        try:
            self._listeners.remove(listener)
        except ValueError:
            raise ArgumentError(
                f"remove_listener: {listener!r} is not a listener of the row set of '{self.query}'"
            ) from None

    # -- the cursor ---------------------------------------------------------------------------

    def next(self) -> bool:
        """Moves the cursor to the next row; False (and the cursor after the last row) when
        there is none.

        >>> import cq_py
        >>> eng = cq_py.Engine(); eng.execute("REGISTER STREAM s(a INT);")
        >>> rs = eng.rowset("MASTER s SELECT a FROM s [Now]")
        >>> eng.push("s", [{"a": 7, "ts": 0}]); eng.advance(1)
        >>> rs.next(), rs.get("a"), rs.next()
        (True, 7, False)
        """
        if self._pos < self._view.num_rows:
            self._pos += 1
        self._row = None
        return bool(self._pos < self._view.num_rows)

    def get(self, column: str) -> Any:
        """The value of ``column`` in the row under the cursor (the paper's ``getString``), as a
        Python value; names match whatever their case. An :class:`ArgumentError` before the
        first :meth:`next`, past the last row, or for a column the query does not have."""
        if not 0 <= self._pos < self._view.num_rows:
            where = "before the first row" if self._pos < 0 else "after the last row"
            raise ArgumentError(
                f"get({column!r}): the cursor of the row set of '{self.query}' is {where}; "
                "call next() and read while it returns True"
            )
        if self._row is None:
            self._row = self._view.slice(self._pos, 1).to_pylist()[0]
        if isinstance(column, str):
            if column in self._row:
                return self._row[column]
            folded = {k.lower(): k for k in self._row}
            if column.lower() in folded:
                return self._row[folded[column.lower()]]
        raise ArgumentError(
            f"get({column!r}): the query '{self.query}' has no such column; its columns are "
            f"{', '.join(self.metadata.column_names)}"
        )

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The rows after the cursor, as dicts, moving the cursor over them."""
        while self.next():
            if self._row is None:
                self._row = self._view.slice(self._pos, 1).to_pylist()[0]
            yield self._row

    def to_arrow(self) -> pa.Table:
        """The rows the cursor walks over, whole, as an Arrow table (the cursor stays): in a
        listener, the run's rows; otherwise the rows waiting since the last delivery."""
        return self._view

    # -- the end ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Unregisters the query (:meth:`cq_py.Engine.drop`): its operators that no other query
        uses are freed, and no listener is called any more. Stopping twice does nothing."""
        if not self.stopped:
            self._engine.drop(self.query)

    # -- delivery (cq_py.Engine) --------------------------------------------------------------

    def _live(self, call: str) -> None:
        if self.stopped:
            raise ArgumentError(
                f"{call}: the row set of '{self.query}' is stopped (its query was dropped)"
            )

    def _take(self, batch: pa.RecordBatch) -> None:
        """A batch of the query's results (a subscriber's callback: it never raises)."""
        if batch.num_rows:
            self._pending.append(batch)

    def _dispatch(self) -> None:
        """Hands the waiting runs to the listeners, in time order; without listeners, makes them
        the rows the cursor walks over. A listener's exception propagates with its run and the
        later ones still waiting."""
        if not self._pending or self._dispatching:
            # (A listener that pushes: its results join the queue the outer call goes through.)
            return
        self._dispatching = True
        try:
            self._hand_out()
        finally:
            self._dispatching = False

    def _hand_out(self) -> None:
        if not self._listeners:
            # The rows the cursor has not passed yet, then the new ones.
            rest = self._view.slice(min(self._pos + 1, self._view.num_rows))
            self._set_view(pa.Table.from_batches([*rest.to_batches(), *self._pending]))
            self._pending.clear()
            return
        while self._pending:
            batch = self._pending[0]
            ts = batch.column(batch.schema.get_field_index("ts")).to_numpy(zero_copy_only=False)
            # Where the instant changes: the runs of this batch (rows come in time order).
            cuts = [0, *(np.flatnonzero(ts[1:] != ts[:-1]) + 1).tolist(), len(ts)]
            for a, b in itertools.pairwise(cuts):
                self._set_view(pa.Table.from_batches([batch.slice(a, b - a)]))
                event = RowSetEvent(self, int(ts[a]))
                for listener in list(self._listeners):
                    try:
                        listener(event)
                    except BaseException:
                        # This run and the later ones wait for the next delivery.
                        self._pending[0] = batch.slice(a)
                        raise
                if self.stopped:  # a listener stopped the row set
                    self._pending.clear()
                    return
            self._pending.popleft()

    def _set_view(self, table: pa.Table) -> None:
        self._view, self._pos, self._row = table, -1, None
