"""A hand-written recursive-descent parser for CQL (SEMANTICS.md §3), producing the nodes of
:mod:`ast`.

Queries are parsed by one function per grammar level; expressions by precedence climbing (Pratt),
with the binding powers below. The parser checks syntax only: names, types and whether a window
sits on a stream are the semantic analysis' business.

Every error is a :class:`CQLSyntaxError` at the first offending token, saying what was expected and
what was found; parsing stops there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cq_py.errors import CQLSyntaxError
from cq_py.parser import ast
from cq_py.parser.tokenizer import DURATION_UNITS, Token, TokenKind, syntax_error, tokenize

__all__ = ["MAX_NESTING", "parse", "parse_expression", "parse_query"]

#: How deeply queries and expressions may nest (parentheses, operands of unary operators, ...).
#: Far above anything written by hand; it exists so that a pathological script is a syntax error
#: rather than a RecursionError from deep inside the parser.
MAX_NESTING = 100

# Binding powers, lowest first. Comparisons, IS, BETWEEN and IN share one level and do not chain
# (as in PostgreSQL): `a < b < c` is far more often a mistake than a comparison of booleans.
_OR, _AND, _NOT, _PREDICATE, _ADDITIVE, _MULTIPLICATIVE, _UNARY = range(1, 8)

_BINARY_OPERATORS: dict[str, int] = {
    "OR": _OR,
    "AND": _AND,
    "+": _ADDITIVE,
    "-": _ADDITIVE,
    "*": _MULTIPLICATIVE,
    "/": _MULTIPLICATIVE,
    "%": _MULTIPLICATIVE,
}
_COMPARISONS = frozenset({"=", "<>", "<", "<=", ">", ">="})

#: Type spellings (upper-cased) -> canonical TypeName.name.
_TYPES: dict[str, str] = {
    "INT": "BIGINT",
    "INTEGER": "BIGINT",
    "BIGINT": "BIGINT",
    "DOUBLE": "DOUBLE",
    "FLOAT": "DOUBLE",
    "REAL": "DOUBLE",
    "VARCHAR": "VARCHAR",
    "CHAR": "VARCHAR",
    "STRING": "VARCHAR",
    "BOOLEAN": "BOOLEAN",
    "BOOL": "BOOLEAN",
}
_TYPES_WITH_LENGTH = frozenset({"VARCHAR", "CHAR"})
_TYPE_HINT = "a type (INT, BIGINT, DOUBLE, VARCHAR, BOOLEAN, ...)"

_STREAM_OPERATORS = frozenset({"ISTREAM", "DSTREAM", "RSTREAM"})
_NAME_KINDS = (TokenKind.IDENT, TokenKind.QUOTED_IDENT)


class _Parser:
    """Parser state: the token list and a cursor. One instance parses one text."""

    def __init__(self, source: str) -> None:
        self.text = source
        self.tokens = tokenize(source)
        self.i = 0
        self.depth = 0
        self.in_master = False  # the paper's bare-duration windows ([5second]) are allowed

    # =========================================================================================
    # Token access
    # =========================================================================================

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind is not TokenKind.EOF:
            self.i += 1
        return tok

    @staticmethod
    def _is_op(tok: Token, *ops: str) -> bool:
        return tok.kind is TokenKind.OPERATOR and tok.value in ops

    @staticmethod
    def _is_kw(tok: Token, *keywords: str) -> bool:
        return tok.kind is TokenKind.KEYWORD and tok.value in keywords

    @staticmethod
    def _is_word(tok: Token, *words: str) -> bool:
        # Contextual words (Now, Range, STREAM, units ...) are plain identifiers; a quoted
        # identifier never counts, so "Now" in double quotes stays a name.
        return tok.kind is TokenKind.IDENT and str(tok.value).upper() in words

    def at_op(self, *ops: str) -> bool:
        return self._is_op(self.tok, *ops)

    def at_kw(self, *keywords: str) -> bool:
        return self._is_kw(self.tok, *keywords)

    def at_word(self, *words: str) -> bool:
        return self._is_word(self.tok, *words)

    def at_end(self) -> bool:
        return self.tok.kind is TokenKind.EOF

    def accept_op(self, op: str) -> Token | None:
        return self.advance() if self.at_op(op) else None

    def accept_kw(self, keyword: str) -> Token | None:
        return self.advance() if self.at_kw(keyword) else None

    def accept_word(self, word: str) -> Token | None:
        return self.advance() if self.at_word(word) else None

    def expect_op(self, op: str, context: str) -> Token:
        if not self.at_op(op):
            raise self.expected(f"'{op}' {context}")
        return self.advance()

    def expect_kw(self, keyword: str, context: str) -> Token:
        if not self.at_kw(keyword):
            raise self.expected(f"{keyword} {context}")
        return self.advance()

    # =========================================================================================
    # Errors and nesting
    # =========================================================================================

    def error(self, message: str, tok: Token | None = None) -> CQLSyntaxError:
        tok = tok or self.tok
        return syntax_error(self.text, message, tok.line, tok.column, tok.text)

    def expected(self, what: str, hint: str = "") -> CQLSyntaxError:
        """``expected <what>, found <current token>[ (<hint>)]``."""
        suffix = f" ({hint})" if hint else ""
        return self.error(f"expected {what}, found {self.tok.describe()}{suffix}")

    @contextmanager
    def nested(self) -> Iterator[None]:
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise self.error(
                    f"query or expression nested too deeply at "
                    f"{self.tok.describe()}: at most {MAX_NESTING} levels of "
                    "parentheses, operators and subqueries"
                )
            yield
        finally:
            self.depth -= 1

    # =========================================================================================
    # Names, numbers, durations, types
    # =========================================================================================

    def name(self, what: str) -> str:
        """An identifier, plain or double-quoted; reserved words get a hint about quoting."""
        tok = self.tok
        if tok.kind in _NAME_KINDS:
            self.advance()
            return str(tok.value)
        if tok.kind is TokenKind.KEYWORD:
            raise self.expected(
                what, f'{tok.value} is a reserved word; write "{tok.text}" to use it as a name'
            )
        raise self.expected(what)

    def alias(self, what: str) -> str | None:
        """``[AS] name`` after a select item or a source; None when there is none."""
        if self.accept_kw("AS"):
            return self.name(what)
        if self.tok.kind in _NAME_KINDS:
            return str(self.advance().value)
        return None

    def integer(self, what: str) -> int:
        tok = self.tok
        if tok.kind is not TokenKind.INTEGER:
            raise self.expected(what)
        self.advance()
        assert isinstance(tok.value, int)
        return tok.value

    def column_ref(self, what: str) -> ast.ColumnRef:
        """``name`` or ``qualifier.name``."""
        start = self.tok
        first = self.name(what)
        if self.accept_op("."):
            return ast.ColumnRef(self.name("a column name after '.'"), first, start.pos)
        return ast.ColumnRef(first, None, start.pos)

    def duration(self, context: str) -> ast.Duration:
        """``integer [unit]`` or a unit glued to the integer (``10ms``)."""
        tok = self.tok
        if tok.kind is TokenKind.DURATION:
            self.advance()
            assert isinstance(tok.value, tuple)
            value, glued_unit = tok.value
            return ast.Duration(value, glued_unit, tok.pos)
        if tok.kind is not TokenKind.INTEGER:
            raise self.expected(
                f"a duration (a whole number, optionally with a time unit) {context}"
            )
        self.advance()
        assert isinstance(tok.value, int)
        unit: str | None = None
        if self.tok.kind is TokenKind.IDENT:
            unit = DURATION_UNITS.get(str(self.tok.value).upper())
            if unit is not None:
                self.advance()
        return ast.Duration(tok.value, unit, tok.pos)

    def type_name(self, context: str) -> ast.TypeName:
        tok = self.tok
        spelled = str(tok.value).upper() if tok.kind is TokenKind.IDENT else ""
        canonical = _TYPES.get(spelled)
        if canonical is None:
            raise self.expected(f"{_TYPE_HINT} {context}")
        self.advance()
        length: int | None = None
        if spelled in _TYPES_WITH_LENGTH and self.accept_op("("):
            length = self.integer(f"a length after {spelled}(")
            self.expect_op(")", f"after the length of {spelled}")
        return ast.TypeName(canonical, length, tok.pos)

    # =========================================================================================
    # Statements
    # =========================================================================================

    def script(self) -> ast.Script:
        statements: list[ast.Statement] = []
        while True:
            while self.accept_op(";"):
                pass  # empty statements, e.g. ";;" or a lone ";" at the end, are harmless
            if self.at_end():
                return ast.Script(tuple(statements), source=self.text)
            statements.append(self.statement())
            if not self.accept_op(";") and not self.at_end():
                raise self.expected("';' at the end of the statement")

    def statement(self) -> ast.Statement:
        start = self.tok
        if not self.accept_kw("REGISTER"):
            hint = ""
            if self.at_kw("SELECT", *_STREAM_OPERATORS) or self.at_op("("):
                hint = "a query must be registered: REGISTER QUERY name AS ..."
            raise self.expected(
                "a statement (REGISTER STREAM, RELATION, QUERY, CLOCK, TABLE, RESOURCE or MODEL)",
                hint,
            )
        if self.accept_word("STREAM"):
            name = self.name("a stream name after REGISTER STREAM")
            return ast.RegisterStream(name, self.column_defs("stream"), start.pos)
        if self.accept_word("RELATION"):
            name = self.name("a relation name after REGISTER RELATION")
            return ast.RegisterRelation(name, self.column_defs("relation"), start.pos)
        if self.accept_word("QUERY"):
            name = self.name("a query name after REGISTER QUERY")
            self.accept_kw("AS")
            if self.at_word("MASTER"):
                return ast.RegisterQuery(name, self.master(), start.pos)
            return ast.RegisterQuery(name, self.query(), start.pos)
        if self.accept_word("CLOCK"):
            name = self.name("a clock name after REGISTER CLOCK")
            if not self.accept_word("EVERY"):
                raise self.expected(f"EVERY after the clock name '{name}'")
            every = self.duration("after EVERY")
            offset = self.duration("after OFFSET") if self.accept_word("OFFSET") else None
            return ast.RegisterClock(name, every, offset, start.pos)
        if self.accept_word("TABLE"):
            name = self.name("a table name after REGISTER TABLE")
            if not self.accept_kw("FROM"):
                raise self.expected(f"FROM 'url' after the table name '{name}'")
            url = self.string("a database url in quotes after FROM (e.g. 'sqlite:///data.db')")
            remote = None
            if self.accept_word("TABLE"):
                remote = self.string("the database's table name in quotes after TABLE")
            return ast.RegisterTable(name, url, remote, (), start.pos)
        if self.accept_word("RESOURCE"):
            return self.register_resource(start)
        if self.accept_word("MODEL"):
            name = self.name("a model name after REGISTER MODEL")
            args = self.column_defs("model")
            if not self.accept_word("RETURNS"):
                raise self.expected(f"RETURNS (col TYPE, ...) after the arguments of '{name}'")
            return ast.RegisterModel(name, args, self.column_defs("model result"), start.pos)
        raise self.expected(
            "STREAM, RELATION, QUERY, CLOCK, TABLE, RESOURCE or MODEL after REGISTER"
        )

    def register_resource(self, start: Token) -> ast.RegisterResource:
        name = self.name("a resource name after REGISTER RESOURCE")
        columns = self.column_defs("resource")
        key: tuple[str, ...] = ()
        if self.accept_word("KEY"):
            if not self.accept_op("("):
                raise self.expected(f"(col, ...) after KEY of resource '{name}'")
            names = [self.name("a key column")]
            while self.accept_op(","):
                names.append(self.name("a key column"))
            if not self.accept_op(")"):
                raise self.expected("')' after the key's columns")
            key = tuple(names)
        url = remote = None
        if self.accept_kw("FROM"):
            url = self.string("a database url in quotes after FROM (e.g. 'sqlite:///data.db')")
            if self.accept_word("TABLE"):
                remote = self.string("the database's table name in quotes after TABLE")
        access, access_pos = ("key" if key else "scan"), start.pos
        if self.at_word("ACCESS"):
            access_pos = self.tok.pos
            self.advance()
            if self.accept_word("KEY"):
                access = "key"
            elif self.accept_word("SCAN"):
                access = "scan"
            else:
                raise self.expected("KEY or SCAN after ACCESS")
        return ast.RegisterResource(name, columns, key, url, remote, access, start.pos, access_pos)

    def string(self, what: str) -> str:
        tok = self.tok
        if tok.kind is not TokenKind.STRING:
            raise self.expected(what)
        self.advance()
        return str(tok.value)

    def master(self) -> ast.Master:
        """``MASTER m1[, m2 ...] SELECT ...``: a whole query, never an operand (paper 001 §2.1)."""
        kw = self.advance()
        pos = self.tok.pos
        masters = [ast.MasterName(self.name("a stream or clock name after MASTER"), pos)]
        while self.accept_op(","):
            pos = self.tok.pos
            masters.append(ast.MasterName(self.name("a stream or clock name after ','"), pos))
        if not self.at_kw("SELECT"):
            raise self.expected("',' or SELECT after the MASTER sources")
        self.in_master = True
        try:
            select = self.select()
        finally:
            self.in_master = False
        if self.at_kw("UNION", "EXCEPT", "INTERSECT"):
            raise self.expected(
                "';' after the MASTER query",
                "a MASTER query is a whole query: it cannot be an operand of "
                f"{self.tok.value}; register it and the other query apart",
            )
        return ast.Master(tuple(masters), select, kw.pos)

    def column_defs(self, what: str) -> tuple[ast.ColumnDef, ...]:
        self.expect_op("(", f"after the {what} name")
        columns: list[ast.ColumnDef] = []
        while True:
            start = self.tok
            name = self.name("a column name")
            columns.append(ast.ColumnDef(name, self.type_name(f"for column '{name}'"), start.pos))
            if self.accept_op(")"):
                return tuple(columns)
            if not self.accept_op(","):
                raise self.expected("')' or ',' after column definition")

    # =========================================================================================
    # Queries
    # =========================================================================================

    def query(self) -> ast.Query:
        """``term ((UNION [ALL] | EXCEPT) term)*``: the loosest set operators, left-associative."""
        with self.nested():
            start = self.tok
            left = self.intersect_term()
            while True:
                if self.accept_kw("UNION"):
                    op = "UNION ALL" if self.accept_kw("ALL") else "UNION"
                elif self.accept_kw("EXCEPT"):
                    self.reject_all("EXCEPT")
                    op = "EXCEPT"
                else:
                    return left
                left = ast.SetOp(op, left, self.intersect_term(), start.pos)

    def intersect_term(self) -> ast.Query:
        """``primary (INTERSECT primary)*`` -- INTERSECT binds tighter, as in SQL."""
        start = self.tok
        left = self.query_primary()
        while self.accept_kw("INTERSECT"):
            self.reject_all("INTERSECT")
            left = ast.SetOp("INTERSECT", left, self.query_primary(), start.pos)
        return left

    def reject_all(self, op: str) -> None:
        if self.at_kw("ALL"):
            raise self.expected(f"a query after {op}", f"{op} ALL is not supported; use {op}")

    def query_primary(self) -> ast.Query:
        if self.at_word("MASTER") and self.peek(1).kind in _NAME_KINDS:
            raise self.expected(
                "a query (SELECT, ISTREAM, DSTREAM, RSTREAM or '(')",
                "MASTER may only start the whole query of REGISTER QUERY name AS MASTER ..., "
                "not an operand of a set operation, ISTREAM/DSTREAM/RSTREAM or parentheses",
            )
        if self.at_kw("SELECT"):
            return self.select()
        if self.at_kw(*_STREAM_OPERATORS):
            return self.stream_op()
        if self.accept_op("("):
            inner = self.query()
            self.expect_op(")", "after the query in parentheses")
            return inner
        raise self.expected("a query (SELECT, ISTREAM, DSTREAM, RSTREAM or '(')")

    def stream_op(self) -> ast.StreamOp:
        kw = self.advance()
        kind = str(kw.value)
        self.expect_op("(", f"after {kind}")
        inner = self.query()
        self.expect_op(")", f"to close {kind}(")
        delay = self.delay() if self.at_op("<") else None
        return ast.StreamOp(kind, inner, delay, kw.pos)

    def delay(self) -> ast.Delay:
        """``<Now>`` or ``<d>``; the tokenizer left these as '<' ... '>'."""
        lt = self.advance()
        if self.accept_word("NOW"):
            result = ast.Delay("now", None, lt.pos)
        elif self.tok.kind in (TokenKind.INTEGER, TokenKind.DURATION):
            result = ast.Delay("duration", self.duration("in the delay"), lt.pos)
        else:
            raise self.expected("Now or a duration after '<' in a delay")
        self.expect_op(">", "to close the delay")
        return result

    def select(self) -> ast.Select:
        kw = self.advance()
        distinct = self.accept_kw("DISTINCT") is not None
        items = [self.select_item()]
        while self.accept_op(","):
            items.append(self.select_item())
        if not self.accept_kw("FROM"):
            raise self.expected("',' or FROM after select item")
        sources = [self.source()]
        while self.accept_op(","):
            sources.append(self.source())
        where = self.expression() if self.accept_kw("WHERE") else None
        group_by: list[ast.Expr] = []
        if self.accept_kw("GROUP"):
            self.expect_kw("BY", "after GROUP")
            group_by.append(self.expression())
            while self.accept_op(","):
                group_by.append(self.expression())
        having = self.expression() if self.accept_kw("HAVING") else None
        return ast.Select(
            tuple(items), tuple(sources), where, tuple(group_by), having, distinct, kw.pos
        )

    def select_item(self) -> ast.SelectItem:
        start = self.tok
        if self.accept_op("*"):
            return ast.SelectItem(ast.Star(None, start.pos), None, start.pos)
        if (
            start.kind in _NAME_KINDS
            and self._is_op(self.peek(1), ".")
            and self._is_op(self.peek(2), "*")
        ):
            for _ in range(3):  # name '.' '*'
                self.advance()
            return ast.SelectItem(ast.Star(str(start.value), start.pos), None, start.pos)
        expr = self.expression()
        return ast.SelectItem(expr, self.alias("a column alias after AS"), start.pos)

    def source(self) -> ast.Source:
        start = self.tok
        if self.at_op("("):
            raise self.expected(
                "a stream, relation or query name",
                "a subquery in FROM must be registered as a named query",
            )
        name = self.name("a stream, relation or query name")
        window = self.window() if self.at_op("[") else None
        return ast.Source(name, window, self.alias("an alias after AS"), start.pos)

    def window(self) -> ast.Window:
        lb = self.advance()
        if self.accept_word("NOW"):
            result = ast.Window("now", pos=lb.pos)
        elif self.accept_word("RANGE"):
            if self.accept_word("UNBOUNDED"):
                result = ast.Window("unbounded", pos=lb.pos)
            else:
                range_ = self.duration("after Range")
                if self.accept_word("SLIDE"):
                    slide = self.duration("after Slide")
                    result = ast.Window("range_slide", range=range_, slide=slide, pos=lb.pos)
                else:
                    if not self.at_op("]"):
                        raise self.expected("a time unit, Slide or ']' after the range")
                    result = ast.Window("range", range=range_, pos=lb.pos)
        elif self.in_master and self.tok.kind in (TokenKind.INTEGER, TokenKind.DURATION):
            # Paper 001's window: a bare duration, [5second] = [Range 5 SECONDS].
            result = ast.Window("range", range=self.duration("in the window"), pos=lb.pos)
        elif self.accept_word("ROWS"):
            result = ast.Window("rows", rows=self.integer("a row count after Rows"), pos=lb.pos)
        elif self.accept_word("PARTITION"):
            self.expect_kw("BY", "after Partition")
            if self.at_word("ROWS") and self.peek(1).kind is TokenKind.INTEGER:
                # "[Partition By Rows 1]" would otherwise read Rows as a column and complain
                # about the 1.
                raise self.expected("a column name after Partition By")
            columns = [self.column_ref("a column name after Partition By")]
            while self.accept_op(","):
                columns.append(self.column_ref("a column name after ','"))
            if not self.accept_word("ROWS"):
                raise self.expected("',' or Rows after partition column")
            rows = self.integer("a row count after Rows")
            result = ast.Window(
                "partition_rows", rows=rows, partition_by=tuple(columns), pos=lb.pos
            )
        else:
            raise self.expected("Now, Range, Rows or Partition By in a window")
        self.expect_op("]", "to close the window")
        return result

    # =========================================================================================
    # Expressions
    # =========================================================================================

    def expression(self, min_bp: int = 0) -> ast.Expr:
        """Precedence climbing: parse an operand, then fold in operators binding >= ``min_bp``."""
        with self.nested():
            start = self.tok
            left = self.prefix(min_bp)
            after_predicate = False
            while True:
                tok = self.tok
                if self.at_predicate_operator():
                    if min_bp > _PREDICATE:
                        return left
                    if after_predicate:
                        raise self.expected(
                            "AND, OR or the end of the expression after a comparison",
                            "comparisons do not chain; add parentheses",
                        )
                    left = self.predicate(left, start.pos)
                    after_predicate = True
                    continue
                op = self.binary_operator(tok)
                if op is None or _BINARY_OPERATORS[op] < min_bp:
                    return left
                self.advance()
                # Left-associative: the right operand only takes operators binding tighter.
                right = self.expression(_BINARY_OPERATORS[op] + 1)
                left = ast.Binary(op, left, right, start.pos)
                after_predicate = False

    @staticmethod
    def binary_operator(tok: Token) -> str | None:
        if tok.kind in (TokenKind.OPERATOR, TokenKind.KEYWORD) and tok.value in _BINARY_OPERATORS:
            return str(tok.value)
        return None

    def at_predicate_operator(self) -> bool:
        tok = self.tok
        # NOT in operator position can only start NOT BETWEEN / NOT IN; predicate() says so
        # if anything else follows.
        return self._is_op(tok, *_COMPARISONS) or self._is_kw(tok, "IS", "BETWEEN", "IN", "NOT")

    def prefix(self, min_bp: int) -> ast.Expr:
        tok = self.tok
        if self.at_kw("NOT"):
            if min_bp > _NOT:
                raise self.expected("an operand", "write (NOT ...) in parentheses here")
            self.advance()
            return ast.Unary("NOT", self.expression(_NOT), tok.pos)
        if self.accept_op("-"):
            return ast.Unary("-", self.expression(_UNARY), tok.pos)
        return self.primary()

    def predicate(self, left: ast.Expr, pos: ast.Pos) -> ast.Expr:
        """The operator after ``left`` is a comparison, IS, [NOT] BETWEEN or [NOT] IN."""
        tok = self.tok
        if self._is_op(tok, *_COMPARISONS):
            self.advance()
            return ast.Binary(str(tok.value), left, self.expression(_ADDITIVE), pos)
        if self.accept_kw("IS"):
            negated = self.accept_kw("NOT") is not None
            self.expect_kw("NULL", "after IS NOT" if negated else "after IS")
            return ast.IsNull(left, negated, pos)
        negated = self.accept_kw("NOT") is not None
        if self.accept_kw("BETWEEN"):
            # Bounds sit above the predicate level so that the AND here is BETWEEN's own.
            low = self.expression(_ADDITIVE)
            self.expect_kw("AND", "between the bounds of BETWEEN")
            high = self.expression(_ADDITIVE)
            return ast.Between(left, low, high, negated, pos)
        if self.accept_kw("IN"):
            self.expect_op("(", "after IN")
            items = [self.expression()]
            while self.accept_op(","):
                items.append(self.expression())
            if not self.accept_op(")"):
                raise self.expected("',' or ')' in the IN list")
            return ast.InList(left, tuple(items), negated, pos)
        raise self.expected("BETWEEN or IN after NOT")

    def primary(self) -> ast.Expr:
        tok = self.tok
        kind = tok.kind
        if kind is TokenKind.INTEGER:
            self.advance()
            return ast.Literal(tok.value, "int", tok.pos)
        if kind is TokenKind.DECIMAL:
            self.advance()
            return ast.Literal(tok.value, "double", tok.pos)
        if kind is TokenKind.STRING:
            self.advance()
            return ast.Literal(tok.value, "string", tok.pos)
        if kind is TokenKind.KEYWORD:
            if tok.value in ("TRUE", "FALSE"):
                self.advance()
                return ast.Literal(tok.value == "TRUE", "bool", tok.pos)
            if tok.value == "NULL":
                self.advance()
                return ast.Literal(None, "null", tok.pos)
            if tok.value == "CASE":
                return self.case()
            if tok.value == "CAST":
                return self.cast()
        if kind is TokenKind.IDENT and self._is_op(self.peek(1), "("):
            return self.function_call()
        if kind in _NAME_KINDS:
            return self.column_ref("a column name")
        if self.accept_op("("):
            inner = self.expression()
            self.expect_op(")", "to close '('")
            return inner
        if kind is TokenKind.DURATION:
            raise self.expected(
                "an expression", "a number with a time unit is only allowed in windows and delays"
            )
        raise self.expected("an expression")

    def function_call(self) -> ast.FuncCall:
        name_tok = self.advance()
        self.advance()  # '('
        name = str(name_tok.value).upper()
        if self.at_op("*"):
            if name != "COUNT":
                raise self.expected("an expression", "only COUNT accepts *")
            star = self.advance()
            self.expect_op(")", "after COUNT(*")
            return ast.FuncCall(name, (ast.Star(None, star.pos),), False, name_tok.pos)
        distinct = self.accept_kw("DISTINCT") is not None
        args: list[ast.Expr] = []
        if distinct or not self.at_op(")"):
            args.append(self.expression())
            while self.accept_op(","):
                args.append(self.expression())
        if not self.accept_op(")"):
            raise self.expected(f"',' or ')' in the arguments of {name_tok.text}")
        return ast.FuncCall(name, tuple(args), distinct, name_tok.pos)

    def case(self) -> ast.Case:
        kw = self.advance()
        operand = None if self.at_kw("WHEN") else self.expression()
        whens: list[tuple[ast.Expr, ast.Expr]] = []
        while self.accept_kw("WHEN"):
            condition = self.expression()
            self.expect_kw("THEN", "after the WHEN condition")
            whens.append((condition, self.expression()))
        if not whens:
            raise self.expected("WHEN in CASE")
        else_ = self.expression() if self.accept_kw("ELSE") else None
        if not self.accept_kw("END"):
            raise self.expected(
                "END to close CASE" if else_ is not None else "WHEN, ELSE or END in CASE"
            )
        return ast.Case(operand, tuple(whens), else_, kw.pos)

    def cast(self) -> ast.Cast:
        kw = self.advance()
        self.expect_op("(", "after CAST")
        operand = self.expression()
        self.expect_kw("AS", "in CAST(... AS type)")
        to = self.type_name("after AS in CAST")
        self.expect_op(")", "to close CAST(")
        return ast.Cast(operand, to, kw.pos)

    # =========================================================================================
    # Entry points for fragments
    # =========================================================================================

    def end_of_fragment(self, what: str) -> None:
        self.accept_op(";")
        if self.tok.kind is not TokenKind.EOF:
            raise self.expected(f"end of input after the {what}")


def parse(text: str) -> ast.Script:
    """Parse a CQL script into an :class:`ast.Script` (statements in order, ``source`` = text).

    Statements end with ``;``; the last one may omit it. Raises :class:`CQLSyntaxError` at the
    first error.

    >>> script = parse("REGISTER STREAM s(id INT, price DOUBLE);")
    >>> script.statements[0]  # doctest: +NORMALIZE_WHITESPACE
    RegisterStream(name='s', columns=(ColumnDef(name='id', type=TypeName(name='BIGINT', length=None,
    pos=Pos(line=1, column=22)), pos=Pos(line=1, column=19)), ColumnDef(name='price',
    type=TypeName(name='DOUBLE', length=None, pos=Pos(line=1, column=33)),
    pos=Pos(line=1, column=27))), pos=Pos(line=1, column=1))
    """
    return _Parser(text).script()


def parse_query(text: str) -> ast.Query:
    """Parse one query (what follows ``REGISTER QUERY name AS``); a trailing ``;`` is allowed.

    >>> q = parse_query("ISTREAM(SELECT a FROM s [Now]) <Now>")
    >>> (q.kind, q.delay.kind, q.query.sources[0].window.kind)
    ('ISTREAM', 'now', 'now')
    """
    parser = _Parser(text)
    query = parser.query()
    parser.end_of_fragment("query")
    return query


def parse_expression(text: str) -> ast.Expr:
    """Parse one expression.

    >>> parse_expression("a + b * 2") == ast.Binary("+", ast.ColumnRef("a"),
    ...     ast.Binary("*", ast.ColumnRef("b"), ast.Literal(2, "int")))
    True
    """
    parser = _Parser(text)
    expr = parser.expression()
    parser.end_of_fragment("expression")
    return expr
