"""Binding and typing of scalar expressions: syntax tree in, typed expression (ready for the core's
kernels) out. Every call is checked against the core's kernel registry, so the planner never asks
the core for something it cannot run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Optional

from cq_py.errors import CQLSemanticError
from cq_py.parser import ast
from cq_py.planner import types as T

# Operators of the syntax tree and the kernels that implement them.
BINARY_KERNELS = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "divide", "%": "modulo",
    "=": "equal", "<>": "not_equal", "<": "less", "<=": "less_equal", ">": "greater",
    ">=": "greater_equal", "AND": "and", "OR": "or",
}
ARITHMETIC = {"+", "-", "*", "/", "%"}
COMPARISON = {"=", "<>", "<", "<=", ">", ">="}
AGGREGATES = {"COUNT", "SUM", "AVG", "MIN", "MAX"}


@lru_cache(maxsize=1)
def kernel_signatures() -> frozenset[tuple[str, tuple[str, ...], str]]:
    """(name, argument types, result type) of every kernel the core registered."""
    from cq_core import kernel_signatures as sigs

    return frozenset((name, tuple(args), result) for name, args, result, _doc in sigs())


def kernel_result(name: str, args: tuple[str, ...]) -> Optional[str]:
    for n, a, r in kernel_signatures():
        if n == name and a == args:
            return r
    return None


@dataclass(frozen=True)
class TypedExpr:
    """An expression bound to input column indexes, with its type. ``to_plan()`` is the JSON the
    core compiles (kernels/expression.h)."""

    kind: str  # "column" | "literal" | "call"
    type: str
    index: int = -1
    value: object = None
    fn: str = ""
    args: tuple["TypedExpr", ...] = ()
    text: str = field(default="", compare=False)  # how the user wrote it, for names and explain

    def to_plan(self) -> dict:
        if self.kind == "column":
            return {"kind": "column", "index": self.index, "type": self.type}
        if self.kind == "literal":
            return {"kind": "literal", "type": self.type, "value": self.value}
        return {"kind": "call", "fn": self.fn, "type": self.type,
                "args": [a.to_plan() for a in self.args]}


def literal(value: object, type_: str, text: str = "") -> TypedExpr:
    return TypedExpr("literal", type_, value=value, text=text or repr(value))


@dataclass
class Scope:
    """The columns an expression may refer to: one entry per input column, with the source name
    and alias it may be qualified by."""

    columns: list[tuple[str, str]]  # (name, type) in input order
    qualifiers: set[str]  # lower-cased names the single source answers to
    source_label: str  # for messages: "stream 's'"

    def resolve(self, ref: ast.ColumnRef, err: Callable[[str, ast.Pos], CQLSemanticError]) -> TypedExpr:
        if ref.qualifier is not None and ref.qualifier.lower() not in self.qualifiers:
            raise err(f"unknown source '{ref.qualifier}' in '{ref.qualifier}.{ref.name}'; "
                      f"the query reads {self.source_label}", ref.pos)
        matches = [i for i, (n, _) in enumerate(self.columns) if n.lower() == ref.name.lower()]
        if not matches:
            have = ", ".join(n for n, _ in self.columns) or "(none)"
            raise err(f"unknown column '{ref.name}' in {self.source_label}; columns that exist: {have}",
                      ref.pos)
        i = matches[0]
        name, type_ = self.columns[i]
        return TypedExpr("column", type_, index=i, text=name)


class ExpressionBinder:
    """Types expressions over one scope. ``err(message, pos)`` builds the CQLSemanticError with the
    script's line text, so messages point at the construct."""

    def __init__(self, scope: Scope, err: Callable[[str, ast.Pos], CQLSemanticError]):
        self.scope = scope
        self.err = err

    # -- entry points -----------------------------------------------------------------------

    def bind(self, e: ast.Expr) -> TypedExpr:
        return self._bind(e)

    def bind_predicate(self, e: ast.Expr) -> TypedExpr:
        t = self._coerce_null(self._bind(e), T.BOOL)
        if t.type != T.BOOL:
            raise self.err(f"a condition must be BOOLEAN, found {T.CQL_NAME[t.type]} "
                           f"('{t.text}')", e.pos)
        return t

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _coerce_null(t: TypedExpr, to: str) -> TypedExpr:
        if t.type == T.NULL and t.kind == "literal":
            return literal(None, to, "NULL")
        return t

    def _cast(self, t: TypedExpr, to: str) -> TypedExpr:
        if t.type == to:
            return t
        t = self._coerce_null(t, to)
        if t.type == to:
            return t
        if t.type == T.INT64 and to == T.FLOAT64:
            return TypedExpr("call", T.FLOAT64, fn="cast_float64", args=(t,), text=t.text)
        raise AssertionError(f"no implicit cast from {t.type} to {to}")

    def _call(self, fn: str, args: tuple[TypedExpr, ...], text: str, pos: ast.Pos) -> TypedExpr:
        result = kernel_result(fn, tuple(a.type for a in args))
        if result is None:
            found = ", ".join(T.CQL_NAME[a.type] for a in args)
            raise self.err(f"'{text}': no operator {fn} for ({found})", pos)
        return TypedExpr("call", result, fn=fn, args=args, text=text)

    # -- the cases --------------------------------------------------------------------------

    def _bind(self, e: ast.Expr) -> TypedExpr:
        if isinstance(e, ast.Literal):
            return self._literal(e)
        if isinstance(e, ast.ColumnRef):
            return self.scope.resolve(e, self.err)
        if isinstance(e, ast.Unary):
            return self._unary(e)
        if isinstance(e, ast.Binary):
            return self._binary(e)
        if isinstance(e, ast.IsNull):
            arg = self._bind(e.operand)
            fn = "is_not_null" if e.negated else "is_null"
            return self._call(fn, (arg,), f"{arg.text} IS {'NOT ' if e.negated else ''}NULL", e.pos)
        if isinstance(e, ast.Between):
            # x BETWEEN a AND b  ≡  x >= a AND x <= b (SQL's definition)
            lo = ast.Binary(">=", e.operand, e.low, e.pos)
            hi = ast.Binary("<=", e.operand, e.high, e.pos)
            both: ast.Expr = ast.Binary("AND", lo, hi, e.pos)
            return self._bind(ast.Unary("NOT", both, e.pos) if e.negated else both)
        if isinstance(e, ast.InList):
            # x IN (a, b)  ≡  x = a OR x = b, which gives SQL's NULL behaviour for free
            ors: ast.Expr = ast.Binary("=", e.operand, e.items[0], e.pos)
            for item in e.items[1:]:
                ors = ast.Binary("OR", ors, ast.Binary("=", e.operand, item, e.pos), e.pos)
            return self._bind(ast.Unary("NOT", ors, e.pos) if e.negated else ors)
        if isinstance(e, ast.FuncCall):
            if e.name in AGGREGATES:
                raise self.err(f"aggregate {e.name}(...) is not supported yet (this build runs "
                               "SELECT/WHERE over one windowed stream)", e.pos)
            raise self.err(f"unknown function '{e.name}'", e.pos)
        if isinstance(e, ast.Star):
            raise self.err("'*' is only allowed as a select item or in COUNT(*)", e.pos)
        if isinstance(e, (ast.Case, ast.Cast)):
            what = "CASE" if isinstance(e, ast.Case) else "CAST"
            raise self.err(f"{what} is not supported yet (this build runs the foundation slice)",
                           e.pos)
        raise self.err(f"unsupported expression {type(e).__name__}", getattr(e, "pos", ast.NOPOS))

    def _literal(self, e: ast.Literal) -> TypedExpr:
        if e.type == "int":
            v = int(e.value)  # type: ignore[arg-type]
            if not -(2**63) <= v < 2**63:
                raise self.err(f"integer literal {v} does not fit in BIGINT", e.pos)
            return literal(v, T.INT64, str(v))
        if e.type == "double":
            return literal(float(e.value), T.FLOAT64, repr(float(e.value)))  # type: ignore[arg-type]
        if e.type == "string":
            return literal(str(e.value), T.UTF8, "'" + str(e.value).replace("'", "''") + "'")
        if e.type == "bool":
            return literal(bool(e.value), T.BOOL, "TRUE" if e.value else "FALSE")
        return literal(None, T.NULL, "NULL")

    def _unary(self, e: ast.Unary) -> TypedExpr:
        if e.op == "-" and isinstance(e.operand, ast.Literal) and e.operand.type == "int":
            # -9223372036854775808 is a BIGINT although 9223372036854775808 alone is not.
            v = -int(e.operand.value)  # type: ignore[arg-type]
            if not -(2**63) <= v < 2**63:
                raise self.err(f"integer literal {v} does not fit in BIGINT", e.pos)
            return literal(v, T.INT64, str(v))
        arg = self._bind(e.operand)
        if e.op == "NOT":
            arg = self._coerce_null(arg, T.BOOL)
            if arg.type != T.BOOL:
                raise self.err(f"NOT expects BOOLEAN, found {T.CQL_NAME[arg.type]} ('{arg.text}')",
                               e.pos)
            return self._call("not", (arg,), f"NOT {arg.text}", e.pos)
        arg = self._coerce_null(arg, T.INT64)
        if arg.type not in T.NUMERIC:
            raise self.err(f"unary '-' expects a number, found {T.CQL_NAME[arg.type]} ('{arg.text}')",
                           e.pos)
        return self._call("negate", (arg,), f"-{arg.text}", e.pos)

    def _binary(self, e: ast.Binary) -> TypedExpr:
        left, right = self._bind(e.left), self._bind(e.right)
        text = f"{left.text} {e.op} {right.text}"
        fn = BINARY_KERNELS[e.op]
        if e.op in ("AND", "OR"):
            left, right = self._coerce_null(left, T.BOOL), self._coerce_null(right, T.BOOL)
            for side in (left, right):
                if side.type != T.BOOL:
                    raise self.err(f"{e.op} expects BOOLEAN operands, found {T.CQL_NAME[side.type]} "
                                   f"('{side.text}')", e.pos)
            return self._call(fn, (left, right), text, e.pos)
        # NULL takes the type of the other side (or BIGINT when both are NULL).
        if left.type == T.NULL:
            left = self._coerce_null(left, right.type if right.type != T.NULL else T.INT64)
        if right.type == T.NULL:
            right = self._coerce_null(right, left.type)
        if e.op in ARITHMETIC:
            for side in (left, right):
                if side.type not in T.NUMERIC:
                    raise self.err(f"'{e.op}' expects numbers, found {T.CQL_NAME[side.type]} "
                                   f"('{side.text}')", e.pos)
            # '/' is always DOUBLE (SPEC §3); otherwise DOUBLE when either side is.
            target = T.FLOAT64 if e.op == "/" or T.FLOAT64 in (left.type, right.type) else T.INT64
            return self._call(fn, (self._cast(left, target), self._cast(right, target)), text, e.pos)
        # comparisons
        if left.type in T.NUMERIC and right.type in T.NUMERIC:
            target = T.FLOAT64 if T.FLOAT64 in (left.type, right.type) else T.INT64
            left, right = self._cast(left, target), self._cast(right, target)
        elif left.type != right.type:
            raise self.err(f"cannot compare {T.CQL_NAME[left.type]} with {T.CQL_NAME[right.type]} "
                           f"in '{text}'", e.pos)
        return self._call(fn, (left, right), text, e.pos)
