"""The CQL syntax tree: plain frozen dataclasses that declare their fields (as sqlglot's nodes do).

Every node carries ``pos``, the (line, column) where it starts in the script, so that the semantic
checks can point at the construct they reject. Nodes hold syntax only: names are not resolved and
types are not known here; that is the planner's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pos:
    line: int
    column: int


NOPOS = Pos(0, 0)


# ---------------------------------------------------------------------------------------------
# Types, durations, windows
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TypeName:
    """A column type. ``name`` is canonical: BIGINT (INT, INTEGER, BIGINT), DOUBLE (DOUBLE, FLOAT,
    REAL), VARCHAR (VARCHAR, CHAR, STRING) or BOOLEAN; ``length`` is the (n) of VARCHAR(n) and
    CHAR(n)."""

    name: str
    length: int | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Duration:
    """``value`` in ``unit``: None for bare ticks, else one of 'ms', 's', 'min', 'h', 'd'."""

    value: int
    unit: str | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Window:
    """``kind`` is one of 'now', 'range', 'range_slide', 'unbounded', 'rows', 'partition_rows'."""

    kind: str
    range: Duration | None = None
    slide: Duration | None = None
    rows: int | None = None
    partition_by: tuple[ColumnRef, ...] = ()
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Delay:
    """``<Now>`` (kind 'now', one ε) or ``<d>`` (kind 'duration')."""

    kind: str
    duration: Duration | None = None
    pos: Pos = field(default=NOPOS, compare=False)


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """``type`` is 'int', 'double', 'string', 'bool' or 'null'."""

    value: object
    type: str
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class ColumnRef:
    name: str
    qualifier: str | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Star:
    """``*`` or ``s.*`` in a select list, or the argument of COUNT(*)."""

    qualifier: str | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Unary:
    """``op`` is '-' or 'NOT'."""

    op: str
    operand: Expr
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Binary:
    """``op`` is one of + - * / % = <> < <= > >= AND OR (``!=`` is normalised to ``<>``)."""

    op: str
    left: Expr
    right: Expr
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class IsNull:
    operand: Expr
    negated: bool = False
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Between:
    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class InList:
    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Case:
    """``CASE [operand] WHEN a THEN b ... [ELSE e] END``; ``whens`` holds (condition, result)
    pairs."""

    operand: Expr | None
    whens: tuple[tuple[Expr, Expr], ...]
    else_: Expr | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Cast:
    operand: Expr
    to: TypeName
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class FuncCall:
    """A function or aggregate call; ``name`` is upper-cased. COUNT(*) has ``args == (Star(),)``."""

    name: str
    args: tuple[Expr, ...]
    distinct: bool = False
    pos: Pos = field(default=NOPOS, compare=False)


Expr = (
    Literal | ColumnRef | Star | Unary | Binary | IsNull | Between | InList | Case | Cast | FuncCall
)


# ---------------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SelectItem:
    expr: Expr
    alias: str | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Source:
    """A FROM entry: a registered stream, relation or named query, with an optional window."""

    name: str
    window: Window | None = None
    alias: str | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Select:
    items: tuple[SelectItem, ...]
    sources: tuple[Source, ...]
    where: Expr | None = None
    group_by: tuple[Expr, ...] = ()
    having: Expr | None = None
    distinct: bool = False
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class StreamOp:
    """ISTREAM / DSTREAM / RSTREAM over a query, with an optional delay suffix."""

    kind: str
    query: Query
    delay: Delay | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class SetOp:
    """``op`` is 'UNION ALL', 'UNION', 'EXCEPT' or 'INTERSECT'."""

    op: str
    left: Query
    right: Query
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class MasterName:
    """One source of a MASTER clause: a stream, a stream-valued query or a clock."""

    name: str
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class Master:
    """``MASTER m1, ..., mk SELECT ...`` (paper 001 §2.1): a stream of the SELECT's new tuples at
    each instant of the masters. Only the whole query of a ``REGISTER QUERY`` may be one."""

    masters: tuple[MasterName, ...]
    select: Select
    pos: Pos = field(default=NOPOS, compare=False)


Query = Select | StreamOp | SetOp | Master


# ---------------------------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type: TypeName
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class RegisterStream:
    name: str
    columns: tuple[ColumnDef, ...]
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class RegisterRelation:
    name: str
    columns: tuple[ColumnDef, ...]
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class RegisterQuery:
    name: str
    query: Query
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class RegisterClock:
    """``REGISTER CLOCK name EVERY d [OFFSET o]``: a stream that ticks at o + k·d, k ≥ 0."""

    name: str
    every: Duration
    offset: Duration | None = None
    pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class RegisterTable:
    """``REGISTER TABLE name FROM 'url' [TABLE 'remote']``: a database table read as a relation.
    ``columns`` are empty as parsed; the engine fills them from the database's catalog. ``where``
    (never parsed) holds the filters a query's view of the table sends to the database."""

    name: str
    url: str
    remote: str | None = None
    columns: tuple[ColumnDef, ...] = ()
    pos: Pos = field(default=NOPOS, compare=False)
    where: str = ""


@dataclass(frozen=True)
class RegisterResource:
    """``REGISTER RESOURCE name (col TYPE, ...) [KEY (col, ...)] [FROM 'url' [TABLE 'tbl']]
    [ACCESS KEY | ACCESS SCAN]``: a keyed table that others update while queries read it (paper
    002). No url: the engine's in-process store. ``access`` is 'key' (a lookup by the key) or
    'scan' (a nested loop); by default 'key' when there is a key, else 'scan'."""

    name: str
    columns: tuple[ColumnDef, ...]
    key: tuple[str, ...] = ()
    url: str | None = None
    remote: str | None = None
    access: str = "key"
    pos: Pos = field(default=NOPOS, compare=False)
    access_pos: Pos = field(default=NOPOS, compare=False)


@dataclass(frozen=True)
class RegisterModel:
    """``REGISTER MODEL name (col TYPE, ...) RETURNS (col TYPE, ...)``: a function other programs
    update (paper 002's models), called as ``name(args)`` on Arrow batches."""

    name: str
    args: tuple[ColumnDef, ...]
    returns: tuple[ColumnDef, ...]
    pos: Pos = field(default=NOPOS, compare=False)


Statement = (
    RegisterStream
    | RegisterRelation
    | RegisterQuery
    | RegisterClock
    | RegisterTable
    | RegisterResource
    | RegisterModel
)


@dataclass(frozen=True)
class Script:
    statements: tuple[Statement, ...]
    source: str = field(default="", compare=False, repr=False)
