"""Binding and typing of scalar expressions: syntax tree in, typed expression out.

Types follow SQL as Spark and DuckDB have it: BIGINT and DOUBLE mix as DOUBLE, ``/`` is always
DOUBLE, AVG is DOUBLE, comparisons need comparable types, AND/OR/NOT need BOOLEAN, an untyped NULL
takes the type its context asks for. Every call names the kernel that will compute it; whether the
core has that kernel yet is checked when a plan is executed (:func:`missing_kernels`), so that
``explain`` can show any valid script.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass, replace
from functools import lru_cache
from typing import Any

from cq_py.errors import CQLSemanticError
from cq_py.parser import ast
from cq_py.planner import types as T

# Operators of the syntax tree and the kernels that implement them.
BINARY_KERNELS = {
    "+": "add",
    "-": "subtract",
    "*": "multiply",
    "/": "divide",
    "%": "modulo",
    "=": "equal",
    "<>": "not_equal",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
    "AND": "and",
    "OR": "or",
}
ARITHMETIC = {"+", "-", "*", "/", "%"}
AGGREGATES = {"COUNT", "SUM", "AVG", "MIN", "MAX"}
CAST_KERNELS = {
    T.INT64: "cast_int64",
    T.FLOAT64: "cast_float64",
    T.UTF8: "cast_utf8",
    T.BOOL: "cast_bool",
}

#: How deeply a bound expression may nest calls. Long chains of AND, OR, IN items and BIGINT + or *
#: are balanced (see :meth:`ExpressionBinder._binary`) and stay far below it; what is left — a
#: chain of hundreds of '-', or of '+' over DOUBLE — is refused with a positioned error rather than
#: handed on: the plan copies and serialises expressions recursively, and so does the core.
MAX_EXPRESSION_DEPTH = 100

Err = Callable[[str, ast.Pos], CQLSemanticError]


@dataclass(frozen=True)
class KernelSignature:
    """A kernel the core registered (src_cpp/kernels/registry.h). A variadic kernel has
    ``repeat`` > 0: its first ``repeat`` argument types recur one or more times and the rest
    follow once, so case_when over T, ``(bool, T, T)`` with repeat 2, takes (bool, T)+ T."""

    name: str
    args: tuple[str, ...]
    result: str
    repeat: int = 0

    def accepts(self, args: tuple[str, ...]) -> bool:
        """Whether a call with these argument types binds to this kernel (Kernel::Accepts)."""
        if not self.repeat:
            return args == self.args
        n, m, r = len(args), len(self.args), self.repeat
        if n < m or (n - m) % r:
            return False
        groups, tail = args[: n - (m - r)], args[n - (m - r) :]
        return all(t == self.args[i % r] for i, t in enumerate(groups)) and tail == self.args[r:]


@lru_cache(maxsize=1)
def kernel_signatures() -> dict[str, list[KernelSignature]]:
    """The kernels the core registered, by name."""
    from cq_core import kernel_signatures as sigs

    out: dict[str, list[KernelSignature]] = {}
    for name, args, result, _doc, repeat in sigs():
        out.setdefault(name, []).append(KernelSignature(name, tuple(args), result, repeat))
    return out


def has_kernel(fn: str, args: tuple[str, ...], result: str) -> bool:
    return any(k.result == result and k.accepts(args) for k in kernel_signatures().get(fn, []))


@dataclass(frozen=True)
class TypedExpr:
    """An expression bound to input column indexes, with its type.

    ``kind`` is "column", "literal", "call", "agg" (an aggregate, before the planner replaces it
    by a column of the aggregate's output) or "start" (the row's start tick). ``to_plan()`` is
    the JSON the core compiles (src_cpp/kernels/expression.h). ``text`` is how the user wrote
    it, for names and messages.
    """

    kind: str
    type: str
    index: int = -1
    value: object = None
    fn: str = ""
    args: tuple[TypedExpr, ...] = ()
    distinct: bool = False
    text: str = field(default="", compare=False)
    pos: ast.Pos = field(default=ast.NOPOS, compare=False)
    prec: int = field(default=9, compare=False)  # how tightly `text` binds (PRECEDENCE)
    depth: int = field(default=1, init=False, compare=False, repr=False)  # calls nested, plus one

    def __post_init__(self) -> None:
        if self.args:
            object.__setattr__(self, "depth", 1 + max([a.depth for a in self.args]))

    # Immutable: a copied catalog shares its expressions (a deep copy would recurse down them).
    def __copy__(self) -> TypedExpr:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> TypedExpr:
        return self

    def to_plan(self) -> dict[str, Any]:
        if self.kind == "column":
            return {"kind": "column", "index": self.index, "type": self.type}
        if self.kind == "literal":
            return {"kind": "literal", "type": self.type, "value": self.value}
        if self.kind == "start":  # the row's start tick (planner/master_sharing.py)
            return {"kind": "start", "type": self.type}
        if self.kind == "agg":
            raise AssertionError(
                "aggregates are planned as an aggregate operator, not an expression"
            )
        return {
            "kind": "call",
            "fn": self.fn,
            "type": self.type,
            "args": [a.to_plan() for a in self.args],
        }

    def walk(self) -> Iterator[TypedExpr]:
        """This expression and every sub-expression, depth first (iterative: nested generators
        would cost each node the depth above it)."""
        todo = [self]
        while todo:
            e = todo.pop()
            yield e
            todo += reversed(e.args)

    def columns(self) -> set[int]:
        return {e.index for e in self.walk() if e.kind == "column"}

    def shifted(self, mapping: Callable[[int], int]) -> TypedExpr:
        """The same expression with column indexes mapped (when its input changes shape)."""
        if self.kind == "column":
            return TypedExpr(
                "column", self.type, index=mapping(self.index), text=self.text, pos=self.pos
            )
        if not self.args:
            return self
        return TypedExpr(
            self.kind,
            self.type,
            self.index,
            self.value,
            self.fn,
            tuple(a.shifted(mapping) for a in self.args),
            self.distinct,
            self.text,
            self.pos,
        )


# How tightly each operator binds, as the parser reads them (higher binds tighter); expression
# texts get the parentheses this requires and no more, so ``(i + 1) * 2`` reads back as written.
PRECEDENCE = {
    "or": 1,
    "and": 2,
    "not": 3,
    "equal": 4,
    "not_equal": 4,
    "less": 4,
    "less_equal": 4,
    "greater": 4,
    "greater_equal": 4,
    "is_null": 4,
    "is_not_null": 4,
    "add": 5,
    "subtract": 5,
    "multiply": 6,
    "divide": 6,
    "modulo": 6,
    "negate": 7,
}
COMPARISON_PREC = 4
NON_ASSOCIATIVE = {"subtract", "divide", "modulo"}
# The operators, and result types, whose chains give the same value in any grouping: three-valued
# AND and OR, and '+' and '*' over BIGINT (it wraps). Not DOUBLE, whose rounding depends on it.
_ASSOCIATIVE = {"AND": (T.BOOL,), "OR": (T.BOOL,), "+": (T.INT64,), "*": (T.INT64,)}


def paren(t: TypedExpr, parent: int = 9, right_of: str = "") -> str:
    """``t``'s text as an operand of an operator of precedence ``parent`` (``right_of``: the
    operator when ``t`` is its right operand)."""
    if t.kind == "call" and t.fn == "cast_float64" and t.args:  # implicit: shows as its operand
        return paren(t.args[0], parent, right_of)
    wrap = t.prec < parent or (
        t.prec == parent and (parent == COMPARISON_PREC or (right_of in NON_ASSOCIATIVE))
    )
    return f"({t.text})" if wrap else t.text


def literal(value: object, type_: str, text: str = "", pos: ast.Pos = ast.NOPOS) -> TypedExpr:
    return TypedExpr("literal", type_, value=value, text=text or repr(value), pos=pos)


def missing_kernels(e: TypedExpr) -> list[TypedExpr]:
    """The calls of ``e`` that the core cannot compute (yet)."""
    return [
        sub
        for sub in e.walk()
        if sub.kind == "call" and not has_kernel(sub.fn, tuple(a.type for a in sub.args), sub.type)
    ]


def conjuncts(e: ast.Expr | None) -> list[ast.Expr]:
    """``a AND b AND c`` as [a, b, c] (the planner places each one where it can run first).

    Iterative: a WHERE of ten thousand ANDs is a left spine ten thousand deep.

    >>> from cq_py.parser import parse_expression
    >>> [c.name for c in conjuncts(parse_expression("a AND (b AND c) AND d"))]
    ['a', 'b', 'c', 'd']
    """
    out: list[ast.Expr] = []
    todo = [] if e is None else [e]
    while todo:
        x = todo.pop()
        if isinstance(x, ast.Binary) and x.op == "AND":
            todo += [x.right, x.left]
        else:
            out.append(x)
    return out


def balanced(fn: str, op: str, operands: list[TypedExpr], result: str, pos: ast.Pos) -> TypedExpr:
    """``operands[0] op operands[1] op ...`` as a balanced tree of calls of the associative kernel
    ``fn``, so that ten thousand operands nest fourteen deep. Each node's text is its operands'
    texts joined by ``op``, as the user would write that part; two operands give the one call
    ``a op b``.

    >>> a, b, c = (TypedExpr("column", T.BOOL, index=i, text=n) for i, n in enumerate("abc"))
    >>> t = balanced("and", "AND", [a, b, c], T.BOOL, ast.NOPOS)
    >>> t.text, t.depth
    ('a AND b AND c', 3)
    """
    prec = PRECEDENCE[fn]

    def build(lo: int, hi: int) -> TypedExpr:  # recursion depth log2(len(operands))
        if hi - lo == 1:
            return operands[lo]
        mid = (lo + hi + 1) // 2  # leans left: three operands group as (a op b) op c, as written
        left, right = build(lo, mid), build(mid, hi)
        return ExpressionBinder.call(
            fn, (left, right), result, f"{paren(left, prec)} {op} {paren(right, prec, fn)}", pos
        )

    return build(0, len(operands))


def expr_key(e: ast.Expr) -> tuple[object, ...]:
    """``e``'s structure as a flat tuple, equal for expressions that are equal (positions aside),
    built without recursion: a key for a call whose arguments nest deeper than hashing the AST
    node (which recurses) allows, such as ``SUM(a + a + ...)``.

    >>> from cq_py.parser import parse_query
    >>> q = parse_query("SELECT f(a + 1) FROM s")
    >>> expr_key(q.items[0].expr)[:3]
    ('FuncCall', 'F', ('args', 1))
    """
    out: list[object] = []
    todo: list[object] = [e]
    while todo:
        x = todo.pop()
        if isinstance(x, tuple):
            out.append(("args", len(x)))
            todo.extend(reversed(x))
        elif is_dataclass(x) and not isinstance(x, type):
            out.append(type(x).__name__)
            todo.extend(reversed([getattr(x, f.name) for f in fields(x) if f.compare]))
        else:
            out.append(x)
    return tuple(out)


@dataclass
class Scope:
    """The columns an expression may refer to: the concatenated columns of the query's sources.

    ``sources`` lists, per FROM entry, the names it answers to (its name and alias, lower-cased),
    the label used in messages, and its slice [start, stop) of the columns. ``models`` maps each
    call of a model (paper 002) to the column its model_apply adds after the sources' columns.
    """

    columns: list[tuple[str, str]]
    sources: list[tuple[set[str], str, int, int]]
    models: dict[tuple[object, ...], int] = field(default_factory=dict)  # by expr_key

    def labels(self) -> str:
        return ", ".join(label for _, label, _, _ in self.sources)

    def source_of(self, qualifier: str, pos: ast.Pos, err: Err) -> tuple[int, int]:
        for names, _, start, stop in self.sources:
            if qualifier.lower() in names:
                return start, stop
        raise err(f"unknown source '{qualifier}'; the query reads {self.labels()}", pos)

    def resolve(self, ref: ast.ColumnRef, err: Err) -> TypedExpr:
        if ref.qualifier is not None:
            start, stop = self.source_of(ref.qualifier, ref.pos, err)
            candidates = range(start, stop)
        else:
            candidates = range(len(self.columns))
        matches = [i for i in candidates if self.columns[i][0].lower() == ref.name.lower()]
        if not matches:
            if ref.qualifier is not None:
                have = ", ".join(n for n, _ in self.columns[start:stop]) or "(none)"
                raise err(
                    f"unknown column '{ref.qualifier}.{ref.name}'; columns of "
                    f"'{ref.qualifier}': {have}",
                    ref.pos,
                )
            have = ", ".join(n for n, _ in self.columns) or "(none)"
            raise err(
                f"unknown column '{ref.name}' in {self.labels()}; columns that exist: {have}",
                ref.pos,
            )
        if len(matches) > 1:
            owners = [label for i in matches for _, label, s, e in self.sources if s <= i < e]
            raise err(
                f"column '{ref.name}' is ambiguous: it exists in {' and '.join(owners)}; "
                "qualify it (source.column)",
                ref.pos,
            )
        i = matches[0]
        name, type_ = self.columns[i]
        text = f"{ref.qualifier}.{name}" if ref.qualifier else name
        return TypedExpr("column", type_, index=i, text=text, pos=ref.pos)


class ExpressionBinder:
    """Types expressions over a scope. ``err(message, pos)`` builds the CQLSemanticError with the
    script's line text, so messages point at the construct.

    ``allow_aggregates`` says whether aggregate calls may appear (SELECT and HAVING, not WHERE or
    GROUP BY); the aggregates found are collected in ``aggregates``.
    """

    def __init__(self, scope: Scope, err: Err, allow_aggregates: str = ""):
        self.scope = scope
        self.err = err
        self.allow_aggregates = allow_aggregates  # "" when not allowed, else the clause's name
        self.in_aggregate = False

    # -- entry points -----------------------------------------------------------------------

    def bind(self, e: ast.Expr) -> TypedExpr:
        return self._bind(e)

    def bind_predicate(self, e: ast.Expr, clause: str = "WHERE") -> TypedExpr:
        t = self.coerce_null(self._bind(e), T.BOOL)
        if t.type != T.BOOL:
            raise self.err(
                f"the {clause} condition must be BOOLEAN, found {T.CQL_NAME[t.type]} ('{t.text}')",
                e.pos,
            )
        return t

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def coerce_null(t: TypedExpr, to: str) -> TypedExpr:
        if t.type == T.NULL and t.kind == "literal":
            return literal(None, to, "NULL", t.pos)
        return t

    @staticmethod
    def cast(t: TypedExpr, to: str) -> TypedExpr:
        """An implicit cast (NULL to anything, BIGINT to DOUBLE); anything else is a bug here."""
        if t.type == to:
            return t
        t = ExpressionBinder.coerce_null(t, to)
        if t.type == to:
            return t
        if t.type == T.INT64 and to == T.FLOAT64:
            if t.kind == "literal":
                assert t.value is None or isinstance(t.value, int)  # a BIGINT literal's value
                value = None if t.value is None else float(t.value)
                return literal(value, T.FLOAT64, t.text, t.pos)
            return TypedExpr(
                "call", T.FLOAT64, fn="cast_float64", args=(t,), text=t.text, pos=t.pos
            )
        raise AssertionError(f"no implicit cast from {t.type} to {to}")

    @staticmethod
    def unify(types: list[str]) -> str | None:
        """The common type of several branches (CASE, set operations), or None."""
        real = [t for t in types if t != T.NULL]
        if not real:
            return T.NULL
        if all(t in T.NUMERIC for t in real):
            return T.FLOAT64 if T.FLOAT64 in real else T.INT64
        return real[0] if all(t == real[0] for t in real) else None

    @staticmethod
    def call(
        fn: str, args: tuple[TypedExpr, ...], result: str, text: str, pos: ast.Pos
    ) -> TypedExpr:
        return TypedExpr(
            "call", result, fn=fn, args=args, text=text, pos=pos, prec=PRECEDENCE.get(fn, 9)
        )

    # -- the cases --------------------------------------------------------------------------

    def _bind(self, e: ast.Expr) -> TypedExpr:
        return self._shallow_enough(self._bind_node(e), e.pos)

    def _shallow_enough(self, t: TypedExpr, pos: ast.Pos) -> TypedExpr:
        if t.depth > MAX_EXPRESSION_DEPTH:
            raise self.err(
                f"expression nested too deeply: at most {MAX_EXPRESSION_DEPTH} "
                "levels of operations (a chain of '-', '/', '%', or of '+' or '*' over "
                "DOUBLE, counts one level per operator: group it with parentheses)",
                pos,
            )
        return t

    def _bind_node(self, e: ast.Expr) -> TypedExpr:
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
            return self.call(
                fn,
                (arg,),
                T.BOOL,
                f"{paren(arg, COMPARISON_PREC + 1)} IS {'NOT ' if e.negated else ''}NULL",
                e.pos,
            )
        if isinstance(e, ast.Between):
            # x BETWEEN a AND b  ≡  x >= a AND x <= b (SQL's definition)
            lo = ast.Binary(">=", e.operand, e.low, e.pos)
            hi = ast.Binary("<=", e.operand, e.high, e.pos)
            both: ast.Expr = ast.Binary("AND", lo, hi, e.pos)
            bound = self._bind(ast.Unary("NOT", both, e.pos) if e.negated else both)
            x, a, b = (
                paren(self._bind(v), COMPARISON_PREC + 1) for v in (e.operand, e.low, e.high)
            )
            return replace(
                bound,
                text=f"{x} {'NOT ' if e.negated else ''}BETWEEN {a} AND {b}",
                prec=COMPARISON_PREC,
            )
        if isinstance(e, ast.InList):
            # x IN (a, b)  ≡  x = a OR x = b, which gives SQL's NULL behaviour for free; a
            # balanced OR, so that thousands of items nest a dozen deep.
            ors = balanced(
                "or",
                "OR",
                [self._bind(ast.Binary("=", e.operand, item, e.pos)) for item in e.items],
                T.BOOL,
                e.pos,
            )
            if e.negated:
                ors = self.call(
                    "not", (ors,), T.BOOL, f"NOT {paren(ors, PRECEDENCE['not'])}", e.pos
                )
            bound = self._shallow_enough(ors, e.pos)
            items = ", ".join(self._bind(i).text for i in e.items)
            x = paren(self._bind(e.operand), COMPARISON_PREC + 1)
            return replace(
                bound, text=f"{x} {'NOT ' if e.negated else ''}IN ({items})", prec=COMPARISON_PREC
            )
        if isinstance(e, ast.Case):
            return self._case(e)
        if isinstance(e, ast.Cast):
            return self._cast_expr(e)
        if isinstance(e, ast.FuncCall):
            index = self.scope.models.get(expr_key(e), -1) if self.scope.models else -1
            if index >= 0:
                name, type_ = self.scope.columns[index]
                return TypedExpr("column", type_, index=index, text=name, pos=e.pos)
            if e.name in AGGREGATES:
                return self._aggregate(e)
            raise self.err(
                f"unknown function '{e.name}' (the functions are the aggregates "
                f"{', '.join(sorted(AGGREGATES))})",
                e.pos,
            )
        if isinstance(e, ast.Star):
            raise self.err("'*' is only allowed as a select item or in COUNT(*)", e.pos)
        raise self.err(f"unsupported expression {type(e).__name__}", getattr(e, "pos", ast.NOPOS))

    def _literal(self, e: ast.Literal) -> TypedExpr:
        if e.type == "int":
            assert isinstance(e.value, int)  # the tokenizer reads an integer literal as an int
            v = e.value
            if not -(2**63) <= v < 2**63:
                raise self.err(f"integer literal {v} does not fit in BIGINT", e.pos)
            return literal(v, T.INT64, str(v), e.pos)
        if e.type == "double":
            assert isinstance(e.value, float)  # and a decimal one as a float
            return literal(e.value, T.FLOAT64, repr(e.value), e.pos)
        if e.type == "string":
            return literal(str(e.value), T.UTF8, "'" + str(e.value).replace("'", "''") + "'", e.pos)
        if e.type == "bool":
            return literal(bool(e.value), T.BOOL, "TRUE" if e.value else "FALSE", e.pos)
        return literal(None, T.NULL, "NULL", e.pos)

    def _unary(self, e: ast.Unary) -> TypedExpr:
        if e.op == "-" and isinstance(e.operand, ast.Literal) and e.operand.type == "int":
            # -9223372036854775808 is a BIGINT although 9223372036854775808 alone is not.
            assert isinstance(e.operand.value, int)
            v = -e.operand.value
            if not -(2**63) <= v < 2**63:
                raise self.err(f"integer literal {v} does not fit in BIGINT", e.pos)
            return literal(v, T.INT64, str(v), e.pos)
        arg = self._bind(e.operand)
        if e.op == "NOT":
            arg = self.coerce_null(arg, T.BOOL)
            if arg.type != T.BOOL:
                raise self.err(
                    f"NOT expects BOOLEAN, found {T.CQL_NAME[arg.type]} ('{arg.text}')", e.pos
                )
            return self.call("not", (arg,), T.BOOL, f"NOT {paren(arg, PRECEDENCE['not'])}", e.pos)
        arg = self.coerce_null(arg, T.INT64)
        if arg.type not in T.NUMERIC:
            raise self.err(
                f"unary '-' expects a number, found {T.CQL_NAME[arg.type]} ('{arg.text}')", e.pos
            )
        return self.call("negate", (arg,), arg.type, f"-{paren(arg, PRECEDENCE['negate'])}", e.pos)

    def _binary(self, e: ast.Binary) -> TypedExpr:
        """``a op b``. The parser builds ``a op b op c ...`` left-deep, so the chain's left spine
        is walked here without recursion, one run of equal operators at a time."""
        spine: list[ast.Binary] = []
        x: ast.Expr = e
        while isinstance(x, ast.Binary):
            spine.append(x)
            x = x.left
        spine.reverse()  # the innermost (leftmost) operator first
        acc = self._bind(x)
        k = 0
        while k < len(spine):
            j = k
            while j < len(spine) and spine[j].op == spine[k].op:
                j += 1
            acc = self._chain(acc, spine[k:j])
            k = j
        return acc

    def _chain(self, first: TypedExpr, run: list[ast.Binary]) -> TypedExpr:
        """``first op r1 op r2 ...`` for a run of one operator, typed and checked step by step
        as written. While every step is AND, OR, or '+' or '*' over BIGINT, the operands go into
        one balanced tree: three-valued AND and OR are associative, and BIGINT arithmetic wraps, so
        any grouping gives the same value. From a step that is not (a DOUBLE operand, another
        operator) on, the steps nest left to right, as written."""
        op = run[0].op
        operands = [first]  # of a balanced tree still to be built, all of one type
        acc: TypedExpr | None = None  # the left-to-right fold, once there is one
        for b in run:
            right = self._bind(b.right)
            if acc is None:
                # Checked against a stand-in for the operands so far: their type is all it needs.
                left = operands[0] if len(operands) == 1 else TypedExpr("column", operands[0].type)
                step = self._binary_step(op, left, right, b.pos)
                if op in _ASSOCIATIVE and step.type in _ASSOCIATIVE[op]:
                    if len(operands) == 1:
                        operands[0] = self.coerce_null(operands[0], step.type)
                    operands.append(self.coerce_null(right, step.type))
                    continue
                acc = (
                    operands[0]
                    if len(operands) == 1
                    else balanced(BINARY_KERNELS[op], op, operands, operands[0].type, b.pos)
                )
            acc = self._shallow_enough(self._binary_step(op, acc, right, b.pos), b.pos)
        if acc is None:
            return balanced(BINARY_KERNELS[op], op, operands, operands[0].type, run[-1].pos)
        return acc

    def binary(self, op: str, left: TypedExpr, right: TypedExpr, pos: ast.Pos) -> TypedExpr:
        """``left op right`` (a CQL operator: ``">"``, ``"-"``, ...) over two bound expressions,
        typed and checked as the binder types a written one.

        >>> b = ExpressionBinder(Scope([("a", T.INT64)], []), None)
        >>> e = b.binary(">", TypedExpr("column", T.INT64, index=0, text="a"),
        ...              literal(3, T.INT64), ast.NOPOS)
        >>> e.fn, e.type, e.text
        ('greater', 'bool', 'a > 3')
        """
        return self._binary_step(op, left, right, pos)

    def _binary_step(self, op: str, left: TypedExpr, right: TypedExpr, pos: ast.Pos) -> TypedExpr:
        """``left op right``, both bound."""
        fn = BINARY_KERNELS[op]
        text = f"{paren(left, PRECEDENCE[fn])} {op} {paren(right, PRECEDENCE[fn], fn)}"
        if op in ("AND", "OR"):
            left, right = self.coerce_null(left, T.BOOL), self.coerce_null(right, T.BOOL)
            for side in (left, right):
                if side.type != T.BOOL:
                    raise self.err(
                        f"{op} expects BOOLEAN operands, found {T.CQL_NAME[side.type]} "
                        f"('{side.text}')",
                        pos,
                    )
            return self.call(fn, (left, right), T.BOOL, text, pos)
        # NULL takes the type of the other side (or BIGINT when both are NULL).
        if left.type == T.NULL:
            left = self.coerce_null(left, right.type if right.type != T.NULL else T.INT64)
        if right.type == T.NULL:
            right = self.coerce_null(right, left.type)
        if op in ARITHMETIC:
            for side in (left, right):
                if side.type not in T.NUMERIC:
                    raise self.err(
                        f"'{op}' expects numbers, found {T.CQL_NAME[side.type]} ('{side.text}')",
                        pos,
                    )
            # '/' is always DOUBLE (SEMANTICS.md §3); otherwise DOUBLE when either side is.
            target = T.FLOAT64 if op == "/" or T.FLOAT64 in (left.type, right.type) else T.INT64
            return self.call(
                fn, (self.cast(left, target), self.cast(right, target)), target, text, pos
            )
        common = self.unify([left.type, right.type])
        if common is None:
            raise self.err(
                f"cannot compare {T.CQL_NAME[left.type]} with {T.CQL_NAME[right.type]} in '{text}'",
                pos,
            )
        return self.call(fn, (self.cast(left, common), self.cast(right, common)), T.BOOL, text, pos)

    def _case(self, e: ast.Case) -> TypedExpr:
        conds: list[TypedExpr] = []
        for cond, _ in e.whens:
            if e.operand is not None:
                # CASE x WHEN v ...  ≡  CASE WHEN x = v ...
                conds.append(
                    self.bind_predicate(ast.Binary("=", e.operand, cond, cond.pos), "WHEN")
                )
            else:
                conds.append(self.bind_predicate(cond, "WHEN"))
        results = [self._bind(r) for _, r in e.whens]
        else_ = self._bind(e.else_) if e.else_ is not None else literal(None, T.NULL, "NULL", e.pos)
        branches = [*results, else_]
        target = self.unify([b.type for b in branches])
        if target is None:
            found = ", ".join(T.CQL_NAME[b.type] for b in branches)
            raise self.err(f"the branches of CASE have incompatible types: {found}", e.pos)
        if target == T.NULL:
            target = T.INT64
        args: list[TypedExpr] = []
        for c, r in zip(conds, results, strict=True):
            args += [c, self.cast(r, target)]
        args.append(self.cast(else_, target))
        return self.call("case_when", tuple(args), target, "CASE ... END", e.pos)

    def _cast_expr(self, e: ast.Cast) -> TypedExpr:
        arg = self._bind(e.operand)
        to = T.FROM_CQL[e.to.name]
        if arg.type == to:
            return arg
        if arg.type == T.NULL:
            return literal(None, to, "NULL", e.pos)
        return self.call(CAST_KERNELS[to], (arg,), to, f"CAST({arg.text} AS {e.to.name})", e.pos)

    def _aggregate(self, e: ast.FuncCall) -> TypedExpr:
        if not self.allow_aggregates:
            raise self.err(
                f"aggregate {e.name}(...) is not allowed here; aggregates belong in SELECT "
                "or HAVING",
                e.pos,
            )
        if self.in_aggregate:
            raise self.err(f"aggregate {e.name}(...) inside another aggregate", e.pos)
        if e.name == "COUNT" and len(e.args) == 1 and isinstance(e.args[0], ast.Star):
            return TypedExpr("agg", T.INT64, fn="count_star", text="COUNT(*)", pos=e.pos)
        if len(e.args) != 1:
            raise self.err(f"{e.name} takes one argument, found {len(e.args)}", e.pos)
        self.in_aggregate = True
        try:
            arg = self._bind(e.args[0])
        finally:
            self.in_aggregate = False
        name = e.name.lower()
        text = f"{e.name}({'DISTINCT ' if e.distinct else ''}{arg.text})"
        if name == "count":
            result = T.INT64
        elif name in ("sum", "avg"):
            arg = self.coerce_null(arg, T.INT64)
            if arg.type not in T.NUMERIC:
                raise self.err(
                    f"{e.name} expects a number, found {T.CQL_NAME[arg.type]} ('{arg.text}')", e.pos
                )
            result = T.FLOAT64 if name == "avg" else arg.type
        else:  # min, max
            arg = self.coerce_null(arg, T.INT64)
            result = arg.type
        return TypedExpr(
            "agg", result, fn=name, args=(arg,), distinct=e.distinct, text=text, pos=e.pos
        )
