"""Tests of the CQL tokenizer and parser (SEMANTICS.md §3): every construct's AST, precedence,
positions, error messages, and a fuzz test that mutated scripts only ever fail with CQLSyntaxError.

ASTs are compared against explicitly built nodes; ``pos`` is excluded from node equality, so the
positions are checked separately.
"""

from __future__ import annotations

import doctest
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py.parser
import cq_py.parser.parser
import cq_py.parser.tokenizer
from budget import examples
from cq_py.errors import CQLSyntaxError
from cq_py.parser import ast, parse, parse_expression, parse_query
from cq_py.parser.parser import MAX_NESTING
from cq_py.parser.tokenizer import TokenKind, tokenize

# ---------------------------------------------------------------------------------------------
# Builders that keep the expected trees short
# ---------------------------------------------------------------------------------------------

Pos = ast.Pos


def col(name: str, qualifier: str | None = None) -> ast.ColumnRef:
    return ast.ColumnRef(name, qualifier)


def lit(value: object) -> ast.Literal:
    kinds = {bool: "bool", int: "int", float: "double", str: "string", type(None): "null"}
    return ast.Literal(value, kinds[type(value)])


def bin_(op: str, left: ast.Expr, right: ast.Expr) -> ast.Binary:
    return ast.Binary(op, left, right)


def item(expr: ast.Expr, alias: str | None = None) -> ast.SelectItem:
    return ast.SelectItem(expr, alias)


def src(name: str, window: ast.Window | None = None, alias: str | None = None) -> ast.Source:
    return ast.Source(name, window, alias)


def select(
    items: list[ast.SelectItem],
    sources: list[ast.Source],
    where: ast.Expr | None = None,
    group_by: tuple[ast.Expr, ...] = (),
    having: ast.Expr | None = None,
    distinct: bool = False,
) -> ast.Select:
    return ast.Select(tuple(items), tuple(sources), where, group_by, having, distinct)


def simple(*names: str, source: str = "s") -> ast.Select:
    """SELECT names FROM source."""
    return select([item(col(n)) for n in names], [src(source)])


def dur(value: int, unit: str | None = None) -> ast.Duration:
    return ast.Duration(value, unit)


def query_of(text: str) -> ast.Query:
    """The query of ``REGISTER QUERY q AS <text>;``, checking the statement around it too."""
    script = parse(f"REGISTER QUERY q AS {text};")
    assert len(script.statements) == 1
    stmt = script.statements[0]
    assert isinstance(stmt, ast.RegisterQuery)
    assert stmt.name == "q"
    return stmt.query


def where_of(condition: str) -> ast.Expr | None:
    q = query_of(f"SELECT a FROM s WHERE {condition}")
    assert isinstance(q, ast.Select)
    return q.where


def window_of(window: str) -> ast.Window | None:
    q = query_of(f"SELECT a FROM s {window}")
    assert isinstance(q, ast.Select)
    return q.sources[0].window


# ---------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------


def kinds_values(text: str) -> list[tuple[str, object]]:
    return [(t.kind.name, t.value) for t in tokenize(text)][:-1]


def test_tokenizer_numbers() -> None:
    assert kinds_values("1 1.5 .5 1. 1e3 2E-2 3e+1 007") == [
        ("INTEGER", 1),
        ("DECIMAL", 1.5),
        ("DECIMAL", 0.5),
        ("DECIMAL", 1.0),
        ("DECIMAL", 1000.0),
        ("DECIMAL", 0.02),
        ("DECIMAL", 30.0),
        ("INTEGER", 7),
    ]


def test_tokenizer_glued_duration_units() -> None:
    assert kinds_values("10ms 5s 2min 3h 1d 4SECONDS") == [
        ("DURATION", (10, "ms")),
        ("DURATION", (5, "s")),
        ("DURATION", (2, "min")),
        ("DURATION", (3, "h")),
        ("DURATION", (1, "d")),
        ("DURATION", (4, "s")),
    ]


def test_tokenizer_strings_and_quoted_identifiers() -> None:
    assert kinds_values("'it''s' '' \"we\"\"ird\" \"select\"") == [
        ("STRING", "it's"),
        ("STRING", ""),
        ("QUOTED_IDENT", 'we"ird'),
        ("QUOTED_IDENT", "select"),
    ]


def test_tokenizer_string_spanning_lines() -> None:
    tokens = tokenize("'a\nb' x")
    assert tokens[0].value == "a\nb"
    assert (tokens[1].line, tokens[1].column) == (2, 4)


def test_tokenizer_operators() -> None:
    ops = "+ - * / % = <> != < <= > >= ( ) , ; . [ ]"
    assert [v for _, v in kinds_values(ops)] == [
        "+",
        "-",
        "*",
        "/",
        "%",
        "=",
        "<>",
        "<>",
        "<",
        "<=",
        ">",
        ">=",
        "(",
        ")",
        ",",
        ";",
        ".",
        "[",
        "]",
    ]
    assert all(k == "OPERATOR" for k, _ in kinds_values(ops))
    assert next(t.text for t in tokenize("!=")) == "!="  # text stays as written


def test_tokenizer_keywords_are_case_insensitive_and_contextual_words_are_identifiers() -> None:
    assert kinds_values("select FrOm Range now ms") == [
        ("KEYWORD", "SELECT"),
        ("KEYWORD", "FROM"),
        ("IDENT", "Range"),
        ("IDENT", "now"),
        ("IDENT", "ms"),
    ]


def test_tokenizer_delay_is_lexed_as_angle_brackets() -> None:
    assert kinds_values(")<Now> <5>") == [
        ("OPERATOR", ")"),
        ("OPERATOR", "<"),
        ("IDENT", "Now"),
        ("OPERATOR", ">"),
        ("OPERATOR", "<"),
        ("INTEGER", 5),
        ("OPERATOR", ">"),
    ]


def test_tokenizer_comments_and_positions() -> None:
    text = "a -- one\n  /* two\n three */ b\n/**/c--"
    tokens = tokenize(text)
    assert [(t.text, t.line, t.column) for t in tokens] == [
        ("a", 1, 1),
        ("b", 3, 11),
        ("c", 4, 5),
        ("", 4, 6),
    ]
    assert tokens[-1].kind is TokenKind.EOF


def test_tokenizer_eof_sits_after_the_last_token() -> None:
    eof = tokenize("x\n\n  -- trailing\n")[-1]
    assert (eof.line, eof.column) == (1, 2)
    assert (tokenize("")[-1].line, tokenize("")[-1].column) == (1, 1)


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("a 'open", 1, 3, "unterminated string literal"),
        ('a\n  "open', 2, 3, "unterminated quoted identifier"),
        ("x /* never closed", 1, 3, "unterminated comment"),
        ("a ! b", 1, 3, "unexpected character '!'"),
        ("a\n\t@", 2, 2, "unexpected character '@'"),
        ("12abc", 1, 1, "found '12abc'"),
        ("1.5ms", 1, 1, "found '1.5ms'"),
    ],
)
def test_tokenizer_errors(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(CQLSyntaxError) as info:
        tokenize(text)
    assert (info.value.line, info.value.column) == (line, column)
    assert message in info.value.message


# ---------------------------------------------------------------------------------------------
# Statements and types
# ---------------------------------------------------------------------------------------------


def test_register_stream_and_relation() -> None:
    script = parse(
        "REGISTER STREAM market(id INT, price INT);\n"
        "REGISTER RELATION stock(id BIGINT, name VARCHAR(20), ok BOOLEAN)"
    )
    assert script.statements == (
        ast.RegisterStream(
            "market",
            (
                ast.ColumnDef("id", ast.TypeName("BIGINT")),
                ast.ColumnDef("price", ast.TypeName("BIGINT")),
            ),
        ),
        ast.RegisterRelation(
            "stock",
            (
                ast.ColumnDef("id", ast.TypeName("BIGINT")),
                ast.ColumnDef("name", ast.TypeName("VARCHAR", 20)),
                ast.ColumnDef("ok", ast.TypeName("BOOLEAN")),
            ),
        ),
    )


@pytest.mark.parametrize(
    ("spelled", "canonical", "length"),
    [
        ("INT", "BIGINT", None),
        ("integer", "BIGINT", None),
        ("BigInt", "BIGINT", None),
        ("DOUBLE", "DOUBLE", None),
        ("float", "DOUBLE", None),
        ("REAL", "DOUBLE", None),
        ("VARCHAR", "VARCHAR", None),
        ("VARCHAR(255)", "VARCHAR", 255),
        ("char(1)", "VARCHAR", 1),
        ("CHAR", "VARCHAR", None),
        ("STRING", "VARCHAR", None),
        ("BOOLEAN", "BOOLEAN", None),
        ("bool", "BOOLEAN", None),
    ],
)
def test_types(spelled: str, canonical: str, length: int | None) -> None:
    stmt = parse(f"REGISTER STREAM s(x {spelled});").statements[0]
    assert isinstance(stmt, ast.RegisterStream)
    assert stmt.columns[0].type == ast.TypeName(canonical, length)


def test_register_query_with_and_without_as() -> None:
    with_as = parse("REGISTER QUERY q AS SELECT a FROM s;")
    without_as = parse("REGISTER QUERY q SELECT a FROM s;")
    assert with_as == without_as
    assert with_as.statements == (ast.RegisterQuery("q", simple("a")),)


def test_last_semicolon_may_be_omitted_and_empty_statements_are_skipped() -> None:
    expected = (ast.RegisterQuery("q", simple("a")), ast.RegisterQuery("r", simple("b")))
    assert (
        parse("REGISTER QUERY q AS SELECT a FROM s; REGISTER QUERY r AS SELECT b FROM s").statements
        == expected
    )
    assert (
        parse(
            ";;REGISTER QUERY q AS SELECT a FROM s;;\nREGISTER QUERY r AS SELECT b FROM s;;"
        ).statements
        == expected
    )
    assert parse("").statements == ()
    assert parse("  -- only a comment\n").statements == ()


def test_script_keeps_its_source() -> None:
    text = "REGISTER STREAM s(a INT);"
    assert parse(text).source == text


def test_quoted_identifiers_may_be_reserved_words() -> None:
    script = parse(
        'REGISTER STREAM "select"("from" INT);\n'
        'REGISTER QUERY "q" AS SELECT "from" AS "end" FROM "select";'
    )
    assert script.statements == (
        ast.RegisterStream("select", (ast.ColumnDef("from", ast.TypeName("BIGINT")),)),
        ast.RegisterQuery("q", select([item(col("from"), "end")], [src("select")])),
    )


def test_contextual_words_may_be_names() -> None:
    q = query_of("SELECT now, range, rows, ms, stream FROM query [Rows 1] rows")
    assert q == select(
        [item(col(n)) for n in ("now", "range", "rows", "ms", "stream")],
        [src("query", ast.Window("rows", rows=1), "rows")],
    )


# ---------------------------------------------------------------------------------------------
# Windows, durations and delays
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[Now]", ast.Window("now")),
        ("[Range 10]", ast.Window("range", range=dur(10))),
        ("[Range 10 seconds]", ast.Window("range", range=dur(10, "s"))),
        ("[Range 10ms]", ast.Window("range", range=dur(10, "ms"))),
        (
            "[Range 1 MINUTE Slide 10 SECONDS]",
            ast.Window("range_slide", range=dur(1, "min"), slide=dur(10, "s")),
        ),
        ("[Range 2 hours Slide 30]", ast.Window("range_slide", range=dur(2, "h"), slide=dur(30))),
        ("[Range Unbounded]", ast.Window("unbounded")),
        ("[Rows 3]", ast.Window("rows", rows=3)),
        (
            "[Partition By id Rows 1]",
            ast.Window("partition_rows", rows=1, partition_by=(col("id"),)),
        ),
        (
            "[Partition By s.id, kind Rows 5]",
            ast.Window("partition_rows", rows=5, partition_by=(col("id", "s"), col("kind"))),
        ),
        ("[ now ]", ast.Window("now")),
        ("[RANGE unbounded]", ast.Window("unbounded")),
        (
            "[partition by id rows 2]",
            ast.Window("partition_rows", rows=2, partition_by=(col("id"),)),
        ),
    ],
)
def test_windows(text: str, expected: ast.Window) -> None:
    assert window_of(text) == expected


@pytest.mark.parametrize(
    ("unit", "canonical"),
    [
        ("MILLISECOND", "ms"),
        ("milliseconds", "ms"),
        ("MS", "ms"),
        ("SECOND", "s"),
        ("Seconds", "s"),
        ("s", "s"),
        ("MINUTE", "min"),
        ("minutes", "min"),
        ("min", "min"),
        ("HOUR", "h"),
        ("hours", "h"),
        ("h", "h"),
        ("DAY", "d"),
        ("days", "d"),
        ("d", "d"),
    ],
)
def test_duration_units(unit: str, canonical: str) -> None:
    assert window_of(f"[Range 7 {unit}]") == ast.Window("range", range=dur(7, canonical))
    assert window_of(f"[Range 7{unit}]") == ast.Window("range", range=dur(7, canonical))


@pytest.mark.parametrize(
    ("suffix", "expected"),
    [
        ("", None),
        ("<Now>", ast.Delay("now")),
        ("< NOW >", ast.Delay("now")),
        ("<5>", ast.Delay("duration", dur(5))),
        ("<5 seconds>", ast.Delay("duration", dur(5, "s"))),
        ("<10ms>", ast.Delay("duration", dur(10, "ms"))),
    ],
)
def test_delays(suffix: str, expected: ast.Delay | None) -> None:
    for kind in ("ISTREAM", "DSTREAM", "RSTREAM"):
        assert query_of(f"{kind}(SELECT a FROM s) {suffix}") == ast.StreamOp(
            kind, simple("a"), expected
        )


def test_source_with_window_and_aliases() -> None:
    q = query_of("SELECT a FROM s [Now] AS x, t y, u [Rows 2] z, v")
    assert q == select(
        [item(col("a"))],
        [
            src("s", ast.Window("now"), "x"),
            src("t", None, "y"),
            src("u", ast.Window("rows", rows=2), "z"),
            src("v"),
        ],
    )


# ---------------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------------


def test_select_full() -> None:
    q = query_of(
        "SELECT DISTINCT s.*, *, a, b AS x, c y FROM s WHERE a > 1 "
        "GROUP BY a, s.b HAVING COUNT(*) >= 2"
    )
    assert q == select(
        [
            item(ast.Star("s")),
            item(ast.Star()),
            item(col("a")),
            item(col("b"), "x"),
            item(col("c"), "y"),
        ],
        [src("s")],
        where=bin_(">", col("a"), lit(1)),
        group_by=(col("a"), col("b", "s")),
        having=bin_(">=", ast.FuncCall("COUNT", (ast.Star(),)), lit(2)),
        distinct=True,
    )


def test_set_operators() -> None:
    a, b, c = simple("a"), simple("b"), simple("c")
    assert query_of("SELECT a FROM s UNION ALL SELECT b FROM s") == ast.SetOp("UNION ALL", a, b)
    assert query_of("SELECT a FROM s UNION SELECT b FROM s") == ast.SetOp("UNION", a, b)
    assert query_of("SELECT a FROM s EXCEPT SELECT b FROM s") == ast.SetOp("EXCEPT", a, b)
    assert query_of("SELECT a FROM s INTERSECT SELECT b FROM s") == ast.SetOp("INTERSECT", a, b)
    # Left-associative.
    assert query_of("SELECT a FROM s UNION SELECT b FROM s EXCEPT SELECT c FROM s") == ast.SetOp(
        "EXCEPT", ast.SetOp("UNION", a, b), c
    )
    # INTERSECT binds tighter than UNION and EXCEPT, on either side.
    assert query_of(
        "SELECT a FROM s UNION ALL SELECT b FROM s INTERSECT SELECT c FROM s"
    ) == ast.SetOp("UNION ALL", a, ast.SetOp("INTERSECT", b, c))
    assert query_of(
        "SELECT a FROM s INTERSECT SELECT b FROM s EXCEPT SELECT c FROM s"
    ) == ast.SetOp("EXCEPT", ast.SetOp("INTERSECT", a, b), c)
    # Parentheses override.
    assert query_of("SELECT a FROM s UNION (SELECT b FROM s EXCEPT SELECT c FROM s)") == ast.SetOp(
        "UNION", a, ast.SetOp("EXCEPT", b, c)
    )


def test_set_operator_after_where_and_inside_stream_operator() -> None:
    q = query_of("ISTREAM(SELECT a FROM s WHERE a = 1 UNION ALL SELECT b FROM s) <Now>")
    assert q == ast.StreamOp(
        "ISTREAM",
        ast.SetOp(
            "UNION ALL",
            select([item(col("a"))], [src("s")], bin_("=", col("a"), lit(1))),
            simple("b"),
        ),
        ast.Delay("now"),
    )


def test_nested_stream_operators_and_parentheses() -> None:
    q = query_of("((RSTREAM((ISTREAM(SELECT a FROM s) <1>))))")
    assert q == ast.StreamOp(
        "RSTREAM", ast.StreamOp("ISTREAM", simple("a"), ast.Delay("duration", dur(1)))
    )
    # A delay belongs to its stream operator: it cannot follow a parenthesised one.
    with pytest.raises(CQLSyntaxError, match="expected ';' at the end of the statement"):
        query_of("(ISTREAM(SELECT a FROM s)) <1>")


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", lit(42)),
        ("1.5", lit(1.5)),
        (".5", lit(0.5)),
        ("1e3", lit(1000.0)),
        ("'x''y'", lit("x'y")),
        ("TRUE", lit(True)),
        ("false", lit(False)),
        ("NULL", lit(None)),
        ("a", col("a")),
        ("s.a", col("a", "s")),
        ('"S"."A b"', col("A b", "S")),
    ],
)
def test_primaries(text: str, expected: ast.Expr) -> None:
    assert parse_expression(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a + b * c", bin_("+", col("a"), bin_("*", col("b"), col("c")))),
        ("a * b + c", bin_("+", bin_("*", col("a"), col("b")), col("c"))),
        ("(a + b) * c", bin_("*", bin_("+", col("a"), col("b")), col("c"))),
        ("a - b - c", bin_("-", bin_("-", col("a"), col("b")), col("c"))),
        ("a / b % c", bin_("%", bin_("/", col("a"), col("b")), col("c"))),
        ("a OR b AND c", bin_("OR", col("a"), bin_("AND", col("b"), col("c")))),
        ("a AND b OR c", bin_("OR", bin_("AND", col("a"), col("b")), col("c"))),
        ("a OR b OR c", bin_("OR", bin_("OR", col("a"), col("b")), col("c"))),
        ("NOT a = 1 AND b", bin_("AND", ast.Unary("NOT", bin_("=", col("a"), lit(1))), col("b"))),
        ("NOT a OR NOT b", bin_("OR", ast.Unary("NOT", col("a")), ast.Unary("NOT", col("b")))),
        ("NOT NOT a", ast.Unary("NOT", ast.Unary("NOT", col("a")))),
        ("a AND NOT b", bin_("AND", col("a"), ast.Unary("NOT", col("b")))),
        ("a + 1 < b * 2", bin_("<", bin_("+", col("a"), lit(1)), bin_("*", col("b"), lit(2)))),
        (
            "a = 1 AND b <> 2 OR c != 3",
            bin_(
                "OR",
                bin_("AND", bin_("=", col("a"), lit(1)), bin_("<>", col("b"), lit(2))),
                bin_("<>", col("c"), lit(3)),
            ),
        ),
        ("-a * b", bin_("*", ast.Unary("-", col("a")), col("b"))),
        ("a * -b + c", bin_("+", bin_("*", col("a"), ast.Unary("-", col("b"))), col("c"))),
    ],
)
def test_precedence(text: str, expected: ast.Expr) -> None:
    assert parse_expression(text) == expected


@pytest.mark.parametrize("op", ["=", "<>", "<", "<=", ">", ">="])
def test_comparisons(op: str) -> None:
    assert parse_expression(f"a {op} 1") == bin_(op, col("a"), lit(1))


def test_unary_minus() -> None:
    assert parse_expression("-1") == ast.Unary("-", lit(1))
    assert parse_expression("- -a") == ast.Unary("-", ast.Unary("-", col("a")))
    assert parse_expression("a - -b") == bin_("-", col("a"), ast.Unary("-", col("b")))
    assert parse_expression("-s.x + 1") == bin_("+", ast.Unary("-", col("x", "s")), lit(1))


def test_predicates() -> None:
    a = col("a")
    assert parse_expression("a IS NULL") == ast.IsNull(a)
    assert parse_expression("a IS NOT NULL") == ast.IsNull(a, negated=True)
    assert parse_expression("a BETWEEN 1 AND b + 2") == ast.Between(
        a, lit(1), bin_("+", col("b"), lit(2))
    )
    assert parse_expression("a NOT BETWEEN -1 AND 1") == ast.Between(
        a, ast.Unary("-", lit(1)), lit(1), negated=True
    )
    assert parse_expression("a IN (1, 'x', b)") == ast.InList(a, (lit(1), lit("x"), col("b")))
    assert parse_expression("a NOT IN (1)") == ast.InList(a, (lit(1),), negated=True)
    # BETWEEN's AND is its own; the next AND is a conjunction.
    assert parse_expression("a BETWEEN 1 AND 2 AND b") == bin_(
        "AND", ast.Between(a, lit(1), lit(2)), col("b")
    )
    assert parse_expression("a + 1 IS NULL OR b IN (2)") == bin_(
        "OR", ast.IsNull(bin_("+", a, lit(1))), ast.InList(col("b"), (lit(2),))
    )
    assert parse_expression("NOT a IS NULL") == ast.Unary("NOT", ast.IsNull(a))


def test_case() -> None:
    assert parse_expression(
        "CASE WHEN a > 1 THEN 'big' WHEN a > 0 THEN 'small' ELSE 'none' END"
    ) == ast.Case(
        None,
        ((bin_(">", col("a"), lit(1)), lit("big")), (bin_(">", col("a"), lit(0)), lit("small"))),
        lit("none"),
    )
    assert parse_expression("case a when 1 then b end") == ast.Case(col("a"), ((lit(1), col("b")),))
    assert parse_expression("CASE WHEN a THEN CASE WHEN b THEN 1 END END + 1") == bin_(
        "+", ast.Case(None, ((col("a"), ast.Case(None, ((col("b"), lit(1)),))),)), lit(1)
    )


def test_cast() -> None:
    assert parse_expression("CAST(a + 1 AS DOUBLE)") == ast.Cast(
        bin_("+", col("a"), lit(1)), ast.TypeName("DOUBLE")
    )
    assert parse_expression("cast(a as varchar(3))") == ast.Cast(
        col("a"), ast.TypeName("VARCHAR", 3)
    )
    assert parse_expression("CAST(x AS int)") == ast.Cast(col("x"), ast.TypeName("BIGINT"))


def test_function_calls() -> None:
    assert parse_expression("COUNT(*)") == ast.FuncCall("COUNT", (ast.Star(),))
    assert parse_expression("count(DISTINCT s.x)") == ast.FuncCall(
        "COUNT", (col("x", "s"),), distinct=True
    )
    assert parse_expression("avg(val)") == ast.FuncCall("AVG", (col("val"),))
    assert parse_expression("f()") == ast.FuncCall("F", ())
    assert parse_expression("Round(a * 2, 1)") == ast.FuncCall(
        "ROUND", (bin_("*", col("a"), lit(2)), lit(1))
    )
    assert parse_expression("MAX(a) - MIN(a)") == bin_(
        "-", ast.FuncCall("MAX", (col("a"),)), ast.FuncCall("MIN", (col("a"),))
    )
    # A quoted name is a column, never a function: "f"(1) does not parse as a call.
    with pytest.raises(CQLSyntaxError):
        parse_expression('"f"(1)')


def test_select_item_aliases_with_expressions() -> None:
    q = query_of("SELECT a, b*2 AS c, -a neg, SUM(b) total FROM s")
    assert q == select(
        [
            item(col("a")),
            item(bin_("*", col("b"), lit(2)), "c"),
            item(ast.Unary("-", col("a")), "neg"),
            item(ast.FuncCall("SUM", (col("b"),)), "total"),
        ],
        [src("s")],
    )


# ---------------------------------------------------------------------------------------------
# The paper's queries and the brief's examples
# ---------------------------------------------------------------------------------------------

PAPER_SCRIPT = """\
REGISTER STREAM market(id INT, price INT);
REGISTER QUERY buy_event AS
  ISTREAM(SELECT m.id, m.price, 1000 AS volume FROM market [Now] AS m, resource AS r, stock AS s
          WHERE m.price < 500 AND s.id = m.id AND s.volume = 0 AND r.money >= m.price * 1000) <Now>;
REGISTER QUERY resource_stream AS
  ISTREAM(SELECT r.money - b.price * b.volume AS money FROM buy_event [Now] AS b, resource AS r);
REGISTER QUERY resource AS SELECT money FROM resource_stream [Rows 1];
REGISTER QUERY stock AS SELECT * FROM stock_stream [Partition By id Rows 1];
"""


def test_paper_stock_trading_script() -> None:
    where = bin_(
        "AND",
        bin_(
            "AND",
            bin_(
                "AND",
                bin_("<", col("price", "m"), lit(500)),
                bin_("=", col("id", "s"), col("id", "m")),
            ),
            bin_("=", col("volume", "s"), lit(0)),
        ),
        bin_(">=", col("money", "r"), bin_("*", col("price", "m"), lit(1000))),
    )
    expected = (
        ast.RegisterStream(
            "market",
            (
                ast.ColumnDef("id", ast.TypeName("BIGINT")),
                ast.ColumnDef("price", ast.TypeName("BIGINT")),
            ),
        ),
        ast.RegisterQuery(
            "buy_event",
            ast.StreamOp(
                "ISTREAM",
                select(
                    [item(col("id", "m")), item(col("price", "m")), item(lit(1000), "volume")],
                    [
                        src("market", ast.Window("now"), "m"),
                        src("resource", None, "r"),
                        src("stock", None, "s"),
                    ],
                    where,
                ),
                ast.Delay("now"),
            ),
        ),
        ast.RegisterQuery(
            "resource_stream",
            ast.StreamOp(
                "ISTREAM",
                select(
                    [
                        item(
                            bin_(
                                "-",
                                col("money", "r"),
                                bin_("*", col("price", "b"), col("volume", "b")),
                            ),
                            "money",
                        )
                    ],
                    [src("buy_event", ast.Window("now"), "b"), src("resource", None, "r")],
                ),
            ),
        ),
        ast.RegisterQuery(
            "resource",
            select([item(col("money"))], [src("resource_stream", ast.Window("rows", rows=1))]),
        ),
        ast.RegisterQuery(
            "stock",
            select(
                [item(ast.Star())],
                [
                    src(
                        "stock_stream",
                        ast.Window("partition_rows", rows=1, partition_by=(col("id"),)),
                    )
                ],
            ),
        ),
    )
    assert parse(PAPER_SCRIPT).statements == expected


def test_brief_examples() -> None:
    assert parse(
        "REGISTER QUERY q AS ISTREAM(SELECT a, b*2 AS c FROM s [Range 10] WHERE b > 0.5);"
    ).statements == (
        ast.RegisterQuery(
            "q",
            ast.StreamOp(
                "ISTREAM",
                select(
                    [item(col("a")), item(bin_("*", col("b"), lit(2)), "c")],
                    [src("s", ast.Window("range", range=dur(10)))],
                    bin_(">", col("b"), lit(0.5)),
                ),
            ),
        ),
    )
    assert parse_query(
        "SELECT id, AVG(val) AS v FROM x [Partition By x.id Rows 1] GROUP BY id HAVING COUNT(*) > 1"
    ) == select(
        [item(col("id")), item(ast.FuncCall("AVG", (col("val"),)), "v")],
        [src("x", ast.Window("partition_rows", rows=1, partition_by=(col("id", "x"),)))],
        group_by=(col("id"),),
        having=bin_(">", ast.FuncCall("COUNT", (ast.Star(),)), lit(1)),
    )
    assert parse_query(
        "(SELECT a FROM s [Range 5 seconds]) UNION ALL "
        "(SELECT a FROM t [Range 1 MINUTE Slide 10 SECONDS])"
    ) == ast.SetOp(
        "UNION ALL",
        select([item(col("a"))], [src("s", ast.Window("range", range=dur(5, "s")))]),
        select(
            [item(col("a"))],
            [src("t", ast.Window("range_slide", range=dur(1, "min"), slide=dur(10, "s")))],
        ),
    )


def test_keywords_are_case_insensitive() -> None:
    # The paper's names are all lower case, so only keywords, types and window words change.
    assert parse(PAPER_SCRIPT.lower()) == parse(PAPER_SCRIPT)
    swapped = re.sub(r"\b[A-Z][A-Za-z]*\b", lambda m: m.group(0).swapcase(), PAPER_SCRIPT)
    assert "rEGISTER" not in swapped
    assert "register" in swapped
    assert "nOW" in swapped
    assert parse(swapped) == parse(PAPER_SCRIPT)
    assert parse_query(
        "select distinct a from s [range 1 slide 1] where a is not null "
        "group by a having count(*) > 0 union all select a from s"
    ) == parse_query(
        "SELECT DISTINCT a FROM s [RANGE 1 SLIDE 1] WHERE a IS NOT NULL "
        "GROUP BY a HAVING COUNT(*) > 0 UNION ALL SELECT a FROM s"
    )


def test_names_keep_their_spelling() -> None:
    assert parse_query("SELECT Price FROM Market M") == select(
        [item(col("Price"))], [src("Market", None, "M")]
    )


def test_comments_anywhere() -> None:
    commented = """
    -- the stream
    REGISTER /* inline */ STREAM market( -- columns follow
        id INT, /* the key */ price INT); -- trailing
    /* a block
       over lines */
    REGISTER QUERY q AS SELECT a -- no ; here
      FROM s [Range /* ten */ 10]; -- done
    """
    assert (
        parse(commented).statements
        == parse(
            "REGISTER STREAM market(id INT, price INT);"
            "REGISTER QUERY q AS SELECT a FROM s [Range 10];"
        ).statements
    )


def test_parse_fragments_accept_a_trailing_semicolon() -> None:
    assert parse_query("SELECT a FROM s;") == simple("a")
    assert parse_expression("a;") == col("a")


# ---------------------------------------------------------------------------------------------
# Positions
# ---------------------------------------------------------------------------------------------


def test_positions_are_those_of_the_first_token() -> None:
    text = (
        "REGISTER STREAM s(a INT);\n"
        "REGISTER QUERY q AS\n"
        "  ISTREAM(SELECT (a + 1) * 2 AS x, s.*\n"
        "          FROM s [Range 5 s] AS t WHERE a IS NULL) <Now>;"
    )
    stream, reg = parse(text).statements
    assert isinstance(stream, ast.RegisterStream)
    assert isinstance(reg, ast.RegisterQuery)
    assert stream.pos == Pos(1, 1)
    assert stream.columns[0].pos == Pos(1, 19)
    assert stream.columns[0].type.pos == Pos(1, 21)
    assert reg.pos == Pos(2, 1)
    op = reg.query
    assert isinstance(op, ast.StreamOp)
    assert op.pos == Pos(3, 3)
    assert op.delay is not None
    assert op.delay.pos == Pos(4, 52)
    sel = op.query
    assert isinstance(sel, ast.Select)
    assert sel.pos == Pos(3, 11)
    first, star = sel.items
    assert first.pos == Pos(3, 18)
    mul = first.expr
    assert isinstance(mul, ast.Binary)
    assert mul.op == "*"
    assert mul.pos == Pos(3, 18)  # the '(' that starts the left operand
    assert isinstance(mul.left, ast.Binary)
    assert mul.left.pos == Pos(3, 19)
    assert mul.right.pos == Pos(3, 28)
    assert star.pos == Pos(3, 36)
    assert star.expr.pos == Pos(3, 36)
    source = sel.sources[0]
    assert source.pos == Pos(4, 16)
    assert source.window is not None
    assert source.window.pos == Pos(4, 18)
    assert source.window.range is not None
    assert source.window.range.pos == Pos(4, 25)
    assert sel.where is not None
    assert sel.where.pos == Pos(4, 41)


def test_position_of_set_operation_is_its_first_token() -> None:
    q = parse_query("(SELECT a FROM s)\n  UNION SELECT b FROM t")
    assert isinstance(q, ast.SetOp)
    assert q.pos == Pos(1, 1)
    assert q.left.pos == Pos(1, 2)
    assert q.right.pos == Pos(2, 9)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

Q = "REGISTER QUERY q AS "

ERROR_CASES = [
    # (script, line, column, found text, message)
    ("REGISTER STREAM s(a INT,);", 1, 25, ")", "expected a column name, found ')'"),
    (
        "REGISTER STREAM s(a INT;",
        1,
        24,
        ";",
        "expected ')' or ',' after column definition, found ';'",
    ),
    (
        "REGISTER STREAM s(a INT",
        1,
        24,
        "",
        "expected ')' or ',' after column definition, found end of input",
    ),
    (
        "REGISTER STREAM s(a TEXT);",
        1,
        21,
        "TEXT",
        (
            "expected a type (INT, BIGINT, DOUBLE, VARCHAR, BOOLEAN, ...) for column 'a', "
            "found 'TEXT'"
        ),
    ),
    (
        "REGISTER VIEW s(a INT);",
        1,
        10,
        "VIEW",
        (
            "expected STREAM, RELATION, QUERY, CLOCK, TABLE, RESOURCE or MODEL after REGISTER, "
            "found 'VIEW'"
        ),
    ),
    (
        "SELECT a FROM s;",
        1,
        1,
        "SELECT",
        (
            "expected a statement (REGISTER STREAM, RELATION, QUERY, CLOCK, TABLE, RESOURCE or "
            "MODEL), found 'SELECT' (a query must be registered: REGISTER QUERY name AS ...)"
        ),
    ),
    (
        Q + "SELECT a FROM s\nREGISTER QUERY r AS SELECT a FROM s;",
        2,
        1,
        "REGISTER",
        "expected ';' at the end of the statement, found 'REGISTER'",
    ),
    (Q + "SELECT a, FROM s;", 1, 31, "FROM", "expected an expression, found 'FROM'"),
    (Q + "SELECT a b c FROM s;", 1, 32, "c", "expected ',' or FROM after select item, found 'c'"),
    (
        Q + "SELECT a FROM s [Range 5 secs];",
        1,
        46,
        "secs",
        "expected a time unit, Slide or ']' after the range, found 'secs'",
    ),
    (
        Q + "SELECT a FROM s [Tumble 5];",
        1,
        38,
        "Tumble",
        "expected Now, Range, Rows or Partition By in a window, found 'Tumble'",
    ),
    (Q + "SELECT a FROM s [Rows];", 1, 42, "]", "expected a row count after Rows, found ']'"),
    (
        Q + "SELECT a FROM s [Partition By id 5];",
        1,
        54,
        "5",
        "expected ',' or Rows after partition column, found '5'",
    ),
    (
        Q + "SELECT a FROM s [Partition By Rows 1];",
        1,
        51,
        "Rows",
        "expected a column name after Partition By, found 'Rows'",
    ),
    (
        Q + "SELECT a FROM s [Range 1.5];",
        1,
        44,
        "1.5",
        (
            "expected a duration (a whole number, optionally with a time unit) after Range, "
            "found '1.5'"
        ),
    ),
    (Q + "SELECT a FROM s [Now;", 1, 41, ";", "expected ']' to close the window, found ';'"),
    (Q + "ISTREAM(SELECT a FROM s <Now>;", 1, 45, "<", "expected ')' to close ISTREAM(, found '<'"),
    (
        Q + "ISTREAM(SELECT a FROM s) <Later>;",
        1,
        47,
        "Later",
        "expected Now or a duration after '<' in a delay, found 'Later'",
    ),
    (
        Q + "ISTREAM(SELECT a FROM s) <Now;",
        1,
        50,
        ";",
        "expected '>' to close the delay, found ';'",
    ),
    (
        Q + "SELECT a = b = c FROM s;",
        1,
        34,
        "=",
        (
            "expected AND, OR or the end of the expression after a comparison, found '=' "
            "(comparisons do not chain; add parentheses)"
        ),
    ),
    (Q + "SELECT a FROM s WHERE a IS 1;", 1, 48, "1", "expected NULL after IS, found '1'"),
    (
        Q + "SELECT a FROM s WHERE a BETWEEN 1, 2;",
        1,
        54,
        ",",
        "expected AND between the bounds of BETWEEN, found ','",
    ),
    (
        Q + "SELECT a FROM s WHERE a IN (1 2);",
        1,
        51,
        "2",
        "expected ',' or ')' in the IN list, found '2'",
    ),
    (
        Q + "SELECT a FROM s WHERE a NOT LIKE 'x';",
        1,
        49,
        "LIKE",
        "expected BETWEEN or IN after NOT, found 'LIKE'",
    ),
    (
        Q + "SELECT a FROM s WHERE a = NOT b;",
        1,
        47,
        "NOT",
        "expected an operand, found 'NOT' (write (NOT ...) in parentheses here)",
    ),
    (Q + "SELECT CASE a END FROM s;", 1, 35, "END", "expected WHEN in CASE, found 'END'"),
    (
        Q + "SELECT CASE WHEN a THEN 1 ELSE 2 FROM s;",
        1,
        54,
        "FROM",
        "expected END to close CASE, found 'FROM'",
    ),
    (
        Q + "SELECT CAST(a INT) FROM s;",
        1,
        35,
        "INT",
        "expected AS in CAST(... AS type), found 'INT'",
    ),
    (
        Q + "SELECT SUM(*) FROM s;",
        1,
        32,
        "*",
        "expected an expression, found '*' (only COUNT accepts *)",
    ),
    (
        Q + "SELECT f(a b) FROM s;",
        1,
        32,
        "b",
        "expected ',' or ')' in the arguments of f, found 'b'",
    ),
    (Q + "SELECT (a + b FROM s;", 1, 35, "FROM", "expected ')' to close '(', found 'FROM'"),
    (
        Q + "SELECT a FROM (SELECT a FROM s);",
        1,
        35,
        "(",
        (
            "expected a stream, relation or query name, found '(' "
            "(a subquery in FROM must be registered as a named query)"
        ),
    ),
    (
        Q + "SELECT a FROM s EXCEPT ALL SELECT a FROM t;",
        1,
        44,
        "ALL",
        "expected a query after EXCEPT, found 'ALL' (EXCEPT ALL is not supported; use EXCEPT)",
    ),
    (
        Q + "SELECT 10ms FROM s;",
        1,
        28,
        "10ms",
        (
            "expected an expression, found '10ms' "
            "(a number with a time unit is only allowed in windows and delays)"
        ),
    ),
    (
        Q + "SELECT 'abc FROM s;",
        1,
        28,
        "'abc FROM s;",
        "unterminated string literal: expected a closing ', found end of input",
    ),
    (Q + "SELECT a # b FROM s;", 1, 30, "#", "unexpected character '#'"),
    (
        "REGISTER STREAM select(a INT);",
        1,
        17,
        "select",
        (
            "expected a stream name after REGISTER STREAM, found 'select' "
            '(SELECT is a reserved word; write "select" to use it as a name)'
        ),
    ),
    (
        Q,
        1,
        20,
        "",
        ("expected a query (SELECT, ISTREAM, DSTREAM, RSTREAM or '('), found end of input"),
    ),
    # Multi-line scripts: the position is in the line where the offending token is.
    (
        "REGISTER STREAM s(\n  a INT,\n  b DOUBL\n);",
        3,
        5,
        "DOUBL",
        (
            "expected a type (INT, BIGINT, DOUBLE, VARCHAR, BOOLEAN, ...) for column 'b', "
            "found 'DOUBL'"
        ),
    ),
    (
        (
            "REGISTER STREAM s(a INT);\n\nREGISTER QUERY q AS\n  SELECT a\n  FROM s [Range 10\n"
            "  WHERE a > 1;"
        ),
        6,
        3,
        "WHERE",
        "expected a time unit, Slide or ']' after the range, found 'WHERE'",
    ),
    (
        "REGISTER QUERY q AS SELECT a\n  FROM s WHERE\n  -- nothing here\n",
        2,
        15,
        "",
        "expected an expression, found end of input",
    ),
    (
        "REGISTER QUERY q AS\n  SELECT a FROM s /* unclosed\n\n",
        2,
        19,
        "/*",
        "unterminated comment: expected '*/', found end of input",
    ),
]


@pytest.mark.parametrize(("text", "line", "column", "found", "message"), ERROR_CASES)
def test_errors(text: str, line: int, column: int, found: str, message: str) -> None:
    with pytest.raises(CQLSyntaxError) as info:
        parse(text)
    err = info.value
    assert (err.line, err.column) == (line, column)
    assert err.message == message
    assert err.text == found
    assert err.line_text == text.split("\n")[line - 1]


def test_error_renders_the_line_with_a_caret() -> None:
    with pytest.raises(CQLSyntaxError) as info:
        parse("REGISTER STREAM s(a INT);\nREGISTER STREAM t(a INT,);")
    assert str(info.value) == (
        "line 2, column 25: expected a column name, found ')'\n"
        "  REGISTER STREAM t(a INT,);\n"
        "                          ^"
    )


def test_first_error_stops_parsing() -> None:
    with pytest.raises(CQLSyntaxError) as info:
        parse("REGISTER STREAM s(a INT,);\nREGISTER QUERY ;")
    assert info.value.line == 1


def test_fragment_errors() -> None:
    with pytest.raises(CQLSyntaxError, match="expected end of input after the query, found 'x'"):
        parse_query("SELECT a FROM s; x")
    with pytest.raises(CQLSyntaxError, match="expected end of input after the expression"):
        parse_expression("a b")


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    depth = MAX_NESTING // 2
    assert parse_expression("(" * depth + "a" + ")" * depth) == col("a")
    assert parse_expression("-" * 1 + " -" * (depth - 1) + "a") is not None
    assert isinstance(parse_query("(" * depth + "SELECT a FROM s" + ")" * depth), ast.Select)
    for text in (
        "(" * 5000 + "a" + ")" * 5000,
        "- " * 5000 + "a",
        "NOT " * 5000 + "a",
        "f(" * 5000 + ")" * 5000,
    ):
        with pytest.raises(CQLSyntaxError, match="nested too deeply"):
            parse_expression(text)
    with pytest.raises(CQLSyntaxError, match="nested too deeply"):
        parse_query("ISTREAM(" * 5000 + "SELECT a FROM s" + ")" * 5000)


@pytest.mark.parametrize("module", [cq_py.parser, cq_py.parser.parser, cq_py.parser.tokenizer])
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module)  # type: ignore[arg-type]
    assert result.attempted > 0
    assert result.failed == 0


# ---------------------------------------------------------------------------------------------
# Fuzzing: mutated valid scripts parse or raise CQLSyntaxError, nothing else
# ---------------------------------------------------------------------------------------------

VALID_SCRIPTS = [
    PAPER_SCRIPT,
    (
        "REGISTER RELATION r(k VARCHAR(8), v DOUBLE, ok BOOLEAN);\n"
        "REGISTER QUERY q AS ISTREAM(SELECT a, b*2 AS c FROM s [Range 10] WHERE b > 0.5);"
    ),
    (
        "REGISTER QUERY agg SELECT id, AVG(val) AS v FROM x [Partition By x.id Rows 1]\n"
        "  GROUP BY id HAVING COUNT(*) > 1 AND COUNT(DISTINCT v) BETWEEN 1 AND 9;"
    ),
    (
        "REGISTER QUERY u AS (SELECT a FROM s [Range 5 seconds]) UNION ALL\n"
        "  (SELECT a FROM t [Range 1 MINUTE Slide 10 SECONDS]) /* set */ INTERSECT\n"
        "  SELECT a FROM w [Range Unbounded] EXCEPT SELECT a FROM z [Now] -- end\n"
    ),
    (
        "REGISTER QUERY c AS DSTREAM(SELECT DISTINCT CASE WHEN x IS NOT NULL THEN 'it''s' ELSE "
        "CAST(y AS VARCHAR) END AS k, -x % 3, s.* FROM s WHERE x NOT IN (1, 2.5, .5e1) OR NOT "
        '"y" = TRUE) <10ms>;\nREGISTER QUERY d RSTREAM(SELECT * FROM c) <5 seconds>'
    ),
]

FRAGMENTS = [
    "SELECT",
    "FROM",
    "WHERE",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    "Now",
    "Range",
    "Rows",
    "Slide",
    "Partition By",
    "ISTREAM",
    "UNION ALL",
    "INTERSECT",
    "CASE",
    "WHEN",
    "THEN",
    "END",
    "--",
    "/*",
    "*/",
    "'",
    '"',
    "1.5",
    "10ms",
    "1e",
    ",",
    ";",
    ".",
    "*",
    "NOT",
    "IS",
    "NULL",
    "BETWEEN",
    "AND",
    "IN",
    "CAST",
    "AS",
    "REGISTER",
    "QUERY",
    "STREAM",
    "x",
    "\n",
    " ",
    "-",
]

_PIECES = re.compile(r"\s+|\w+|'(?:[^']|'')*'|\"[^\"]*\"|<=|>=|<>|!=|--|/\*|\*/|.", re.S)


@st.composite
def mutated_scripts(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(VALID_SCRIPTS))
    for _ in range(draw(st.integers(1, 4))):
        pieces = _PIECES.findall(text)
        action = draw(
            st.sampled_from(
                [
                    "delete",
                    "insert",
                    "swap",
                    "duplicate",
                    "char_delete",
                    "char_insert",
                    "char_replace",
                ]
            )
        )
        if action in ("delete", "insert", "swap", "duplicate"):
            i = draw(st.integers(0, len(pieces) - 1))
            if action == "delete":
                del pieces[i]
            elif action == "insert":
                pieces.insert(i, draw(st.sampled_from(FRAGMENTS)))
            elif action == "duplicate":
                pieces.insert(i, pieces[i])
            else:
                j = draw(st.integers(0, len(pieces) - 1))
                pieces[i], pieces[j] = pieces[j], pieces[i]
            text = "".join(pieces)
        else:
            i = draw(st.integers(0, max(len(text) - 1, 0)))
            char = draw(
                st.one_of(st.sampled_from("'\"()[]<>;,.-*/=!%e0_ \n\t\r#@"), st.characters())
            )
            if action == "char_delete":
                text = text[:i] + text[i + 1 :]
            elif action == "char_insert":
                text = text[:i] + char + text[i:]
            else:
                text = text[:i] + char + text[i + 1 :]
    return text


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_scripts())
def test_mutated_scripts_only_raise_syntax_errors(text: str) -> None:
    try:
        script = parse(text)
    except CQLSyntaxError as e:
        err = e
    else:
        assert isinstance(script, ast.Script)
        return
    lines = text.split("\n")
    assert 1 <= err.line <= len(lines)
    assert err.line_text == lines[err.line - 1].rstrip("\r")
    assert 1 <= err.column <= len(err.line_text) + 1
    # The offending text is what stands at the reported position.
    first_line_of_text = err.text.split("\n")[0].rstrip("\r")
    assert err.line_text[err.column - 1 :].startswith(first_line_of_text)
    assert err.message.startswith(("expected", "unexpected", "unterminated", "query or", "decimal"))
