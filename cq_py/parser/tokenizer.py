"""The CQL tokenizer: turns a whole script into a list of tokens, each with its 1-based position.

Only a small set of words is *reserved* (:data:`KEYWORDS`): they can never be names unless
double-quoted. Every other word -- window words (``Now``, ``Range``, ``Rows`` ...), type names, time
units, ``STREAM``/``RELATION``/``QUERY`` -- is an ordinary identifier that the parser recognises by
context, so a column may still be called ``start``, ``rows`` or ``ms``.

``<Now>`` and ``<5>`` are not special here: they come out as ``<`` ... ``>`` and the parser, which
knows it has just closed an ``ISTREAM(...)``, reads them as a delay.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass

from cq_py.errors import CQLSyntaxError
from cq_py.parser.ast import Pos

__all__ = [
    "DURATION_UNITS",
    "KEYWORDS",
    "Token",
    "TokenKind",
    "TokenValue",
    "source_line",
    "syntax_error",
    "tokenize",
]

#: Words that can only be used as names when double-quoted. Kept deliberately small: each one is a
#: word whose meaning as a name would make the grammar ambiguous.
KEYWORDS: frozenset[str] = frozenset(
    {
        "ALL",
        "AND",
        "AS",
        "BETWEEN",
        "BY",
        "CASE",
        "CAST",
        "DISTINCT",
        "DSTREAM",
        "ELSE",
        "END",
        "EXCEPT",
        "FALSE",
        "FROM",
        "GROUP",
        "HAVING",
        "IN",
        "INTERSECT",
        "IS",
        "ISTREAM",
        "NOT",
        "NULL",
        "OR",
        "REGISTER",
        "RSTREAM",
        "SELECT",
        "THEN",
        "TRUE",
        "UNION",
        "WHEN",
        "WHERE",
    }
)

#: Spellings of a duration unit (upper-cased) -> the canonical unit of :class:`ast.Duration`.
#: The short canonical codes are accepted too, so that ``10ms``, ``5s`` and ``[Range 2 min]`` read
#: as one would expect.
DURATION_UNITS: dict[str, str] = {
    "MS": "ms",
    "MILLISECOND": "ms",
    "MILLISECONDS": "ms",
    "S": "s",
    "SECOND": "s",
    "SECONDS": "s",
    "MIN": "min",
    "MINUTE": "min",
    "MINUTES": "min",
    "H": "h",
    "HOUR": "h",
    "HOURS": "h",
    "D": "d",
    "DAY": "d",
    "DAYS": "d",
}

# Longest first, so that "<=" is never read as "<" followed by "=".
_OPERATORS: tuple[str, ...] = (
    "<>",
    "!=",
    "<=",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "=",
    "<",
    ">",
    "(",
    ")",
    ",",
    ";",
    ".",
    "[",
    "]",
)
# Half of a UTF-16 pair, alone: what undecodable bytes become under errors="surrogateescape".
_SURROGATE = re.compile("[\ud800-\udfff]")
# A set, not a string: "" (past the end) must not count as a digit.
_DIGITS = frozenset("0123456789")
_MAX_INTEGER_DIGITS = 100  # a longer integer literal is refused as it is read (see _number)


class TokenKind(enum.Enum):
    """What a token is. ``value`` depends on the kind (see :class:`Token`)."""

    IDENT = "identifier"
    QUOTED_IDENT = "quoted identifier"
    KEYWORD = "keyword"
    INTEGER = "integer"
    DECIMAL = "decimal"
    DURATION = "duration"
    STRING = "string"
    OPERATOR = "operator"
    EOF = "end of input"


TokenValue = str | int | float | tuple[int, str] | None


@dataclass(frozen=True, slots=True)
class Token:
    """One lexical token.

    ``value`` by kind: IDENT -> the name as written; QUOTED_IDENT -> the name without quotes, ``""``
    unescaped; KEYWORD -> the upper-cased word; INTEGER -> ``int``; DECIMAL -> ``float``; DURATION
    (a unit glued to an integer, ``10ms``) -> ``(10, 'ms')``; STRING -> the text without quotes,
    ``''`` unescaped; OPERATOR -> the operator (``!=`` normalised to ``<>``); EOF -> ``None``.
    ``text`` is always the exact source text (empty for EOF).
    """

    kind: TokenKind
    text: str
    value: TokenValue
    line: int
    column: int

    @property
    def pos(self) -> Pos:
        return Pos(self.line, self.column)

    def describe(self) -> str:
        """How an error message names this token: ``';'``, ``string 'abc'``, ``end of input``."""
        if self.kind is TokenKind.EOF:
            return "end of input"
        if self.kind is TokenKind.STRING:
            return f"string {self.text}"
        return f"'{self.text}'"


def source_line(source: str, line: int) -> str:
    """The text of 1-based ``line`` of ``source`` without its line break ('' if out of range).

    Lines are split on ``\\n`` only -- the same rule the tokenizer counts lines by -- so that the
    reported line number and the shown line always agree.
    """
    lines = source.split("\n")
    if 1 <= line <= len(lines):
        return lines[line - 1].rstrip("\r")
    return ""


def syntax_error(
    source: str, message: str, line: int, column: int, text: str = ""
) -> CQLSyntaxError:
    """Build a :class:`CQLSyntaxError` pointing at ``line``/``column`` of ``source``."""
    return CQLSyntaxError(message, line, column, text, source_line(source, line))


def _is_ident_start(ch: str) -> bool:
    return ch.isalpha() or ch == "_"


def _is_ident_part(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


class _Lexer:
    """Single pass over the text, tracking line and column as it goes."""

    def __init__(self, source: str) -> None:
        self.src = source
        self.i = 0
        self.line = 1
        self.col = 1
        self.tokens: list[Token] = []
        # Where the last real token ended: an error "found end of input" is shown there rather
        # than after trailing blank lines and comments, which would point at nothing useful.
        self.end_line = 1
        self.end_col = 1

    # -- low-level movement ------------------------------------------------------------------

    def _peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.src[j] if j < len(self.src) else ""

    def _advance(self, n: int = 1) -> None:
        for _ in range(n):
            if self.src[self.i] == "\n":
                self.line += 1
                self.col = 1
            else:
                self.col += 1
            self.i += 1

    def _error(self, message: str, line: int, column: int, text: str) -> CQLSyntaxError:
        return syntax_error(self.src, message, line, column, text)

    def _emit(self, kind: TokenKind, start: int, line: int, col: int, value: TokenValue) -> None:
        self.tokens.append(Token(kind, self.src[start : self.i], value, line, col))
        self.end_line, self.end_col = self.line, self.col

    # -- the scanner --------------------------------------------------------------------------

    def run(self) -> list[Token]:
        while self.i < len(self.src):
            ch = self._peek()
            if ch.isspace():
                self._advance()
            elif ch == "-" and self._peek(1) == "-":
                while self.i < len(self.src) and self._peek() != "\n":
                    self._advance()
            elif ch == "/" and self._peek(1) == "*":
                self._block_comment()
            elif _is_ident_start(ch):
                self._word()
            elif ch in _DIGITS or (ch == "." and self._peek(1) in _DIGITS):
                self._number()
            elif ch == "'":
                self._string()
            elif ch == '"':
                self._quoted_ident()
            else:
                self._operator()
        self.tokens.append(Token(TokenKind.EOF, "", None, self.end_line, self.end_col))
        return self.tokens

    def _block_comment(self) -> None:
        line, col = self.line, self.col
        end = self.src.find("*/", self.i + 2)
        if end < 0:
            raise self._error(
                "unterminated comment: expected '*/', found end of input", line, col, "/*"
            )
        self._advance(end + 2 - self.i)

    def _word(self) -> None:
        start, line, col = self.i, self.line, self.col
        while self.i < len(self.src) and _is_ident_part(self._peek()):
            self._advance()
        word = self.src[start : self.i]
        upper = word.upper()
        if upper in KEYWORDS:
            self._emit(TokenKind.KEYWORD, start, line, col, upper)
        else:
            self._emit(TokenKind.IDENT, start, line, col, word)

    def _number(self) -> None:
        start, line, col = self.i, self.line, self.col
        is_integer = True
        while self._peek() in _DIGITS:
            self._advance()
        if self._peek() == ".":
            is_integer = False
            self._advance()
            while self._peek() in _DIGITS:
                self._advance()
        # An exponent only when digits really follow, so that "1e" stays an error below rather
        # than silently becoming "1" and a name "e".
        if self._peek() in ("e", "E"):
            sign = 1 if self._peek(1) in ("+", "-") else 0
            nxt = self._peek(1 + sign)
            if nxt in _DIGITS:
                is_integer = False
                self._advance(1 + sign)
                while self._peek() in _DIGITS:
                    self._advance()
        number = self.src[start : self.i]
        digits = len(number.lstrip("0"))
        if is_integer and digits > _MAX_INTEGER_DIGITS:
            # Python refuses to convert such a literal (past sys.get_int_max_str_digits()), and no
            # CQL integer comes near: BIGINT has 19 digits. Shorter ones are checked by the planner.
            raise self._error(
                f"integer literal out of range: {digits} digits (a BIGINT has at most 19)",
                line,
                col,
                number[:20] + "...",
            )
        if _is_ident_part(self._peek()):
            # A word glued to a number is only meaningful as a duration unit: "10ms".
            unit_start = self.i
            while self.i < len(self.src) and _is_ident_part(self._peek()):
                self._advance()
            unit = DURATION_UNITS.get(self.src[unit_start : self.i].upper())
            if unit is None or not is_integer:
                text = self.src[start : self.i]
                raise self._error(
                    f"expected a number or a whole number with a time unit (like 10ms), "
                    f"found '{text}'",
                    line,
                    col,
                    text,
                )
            self._emit(TokenKind.DURATION, start, line, col, (int(number), unit))
        elif is_integer:
            self._emit(TokenKind.INTEGER, start, line, col, int(number))
        else:
            value = float(number)
            if math.isinf(value):
                raise self._error(f"decimal literal out of range: '{number}'", line, col, number)
            self._emit(TokenKind.DECIMAL, start, line, col, value)

    def _quoted(self, quote: str, what: str) -> tuple[int, int, int, str]:
        """Scan a ``quote``-delimited item where a doubled quote stands for one quote."""
        start, line, col = self.i, self.line, self.col
        self._advance()
        parts: list[str] = []
        while True:
            j = self.src.find(quote, self.i)
            if j < 0:
                first_line = self.src[start:].split("\n", 1)[0]
                raise self._error(
                    f"unterminated {what}: expected a closing {quote}, found end of input",
                    line,
                    col,
                    first_line,
                )
            parts.append(self.src[self.i : j])
            self._advance(j + 1 - self.i)
            if self._peek() == quote:
                parts.append(quote)
                self._advance()
            else:
                return start, line, col, "".join(parts)

    def _string(self) -> None:
        start, line, col, value = self._quoted("'", "string literal")
        self._emit(TokenKind.STRING, start, line, col, value)

    def _quoted_ident(self) -> None:
        start, line, col, value = self._quoted('"', "quoted identifier")
        if not value:
            raise self._error(
                'expected a name between the double quotes, found ""', line, col, '""'
            )
        self._emit(TokenKind.QUOTED_IDENT, start, line, col, value)

    def _operator(self) -> None:
        start, line, col = self.i, self.line, self.col
        for op in _OPERATORS:
            if self.src.startswith(op, self.i):
                self._advance(len(op))
                self._emit(TokenKind.OPERATOR, start, line, col, "<>" if op == "!=" else op)
                return
        ch = self._peek()
        raise self._error(f"unexpected character {ch!r}", line, col, ch)


def tokenize(source: str) -> list[Token]:
    """Split CQL ``source`` into tokens; the list always ends with one EOF token.

    Raises :class:`CQLSyntaxError` (with line and column) on an unterminated string, quoted
    identifier or block comment, a character that starts no token, or a lone surrogate anywhere
    (text decoded from bytes that are not UTF-8, with ``errors="surrogateescape"``): no name or
    string may hold one, as Arrow and the core keep text as UTF-8.

    >>> [(t.kind.name, t.value) for t in tokenize("SELECT a -- note\\nFROM s [Range 10ms]")]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('KEYWORD', 'SELECT'), ('IDENT', 'a'), ('KEYWORD', 'FROM'), ('IDENT', 's'),
     ('OPERATOR', '['), ('IDENT', 'Range'), ('DURATION', (10, 'ms')), ('OPERATOR', ']'),
     ('EOF', None)]
    """
    bad = _SURROGATE.search(source)
    if bad:
        i = bad.start()
        line = source.count("\n", 0, i) + 1
        column = i - source.rfind("\n", 0, i)
        shown = _SURROGATE.sub("\ufffd", source_line(source, line))
        raise CQLSyntaxError(
            f"the text is not valid Unicode: it holds the lone surrogate "
            f"{ascii(bad.group())[1:-1]} (was it decoded from bytes that are not "
            "UTF-8?)",
            line,
            column,
            "\ufffd",
            shown,
        )
    return _Lexer(source).run()
