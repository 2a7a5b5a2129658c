"""Bad input gets a clear exception of the package and leaves the engine as it was."""

import pyarrow as pa
import pytest

import cq_py

FILTER_QUERY = (
    "REGISTER STREAM s(a INT, b DOUBLE);"
    "REGISTER QUERY q AS ISTREAM(SELECT a, b*2 AS c FROM s [Range 10] WHERE b > 0.5);"
)


def engine():
    eng = cq_py.Engine()
    eng.execute(FILTER_QUERY)
    return eng


def test_syntax_error_reports_line_and_column():
    with pytest.raises(cq_py.CQLSyntaxError) as e:
        cq_py.Engine().execute(
            "REGISTER STREAM s(a INT);\nREGISTER QUERY q AS\n  SELECT a "
            "FROM s [Range 10 WHERE a > 1;"
        )
    assert (e.value.line, e.value.column) == (3, 29)
    assert "expected" in str(e.value)
    assert "WHERE" in str(e.value)
    assert "^" in str(e.value)


@pytest.mark.parametrize("separator", ["\x0c", "\x1c", "\x0b", "\u2028", "\x85"])
def test_a_semantic_error_shows_the_line_it_numbers(separator):
    """Found by the crash fuzzer: str.splitlines() breaks lines at these characters, the tokenizer
    (which numbers lines) only at '\\n', so the line shown under an error was another one."""
    line = f"REGISTER QUERY q AS SELECT a FROM s [Now]{separator}WHERE zz > 1;"
    with pytest.raises(cq_py.CQLSemanticError) as e:
        cq_py.Engine().execute("REGISTER STREAM s(a INT);\n" + line)
    assert (e.value.line, e.value.line_text) == (2, line)


@pytest.mark.parametrize("where", ["'x\udc80'", '"x\udc80"', "-- \udc80\n'x'"])
def test_text_with_a_lone_surrogate_is_a_syntax_error(where):
    """Found by the crash fuzzer: bytes that are not UTF-8, decoded with surrogateescape, reached
    the core in a string literal as a lone surrogate ('cq internal error ... malformed plan
    JSON'), and a name with one could not become an Arrow column name."""
    cql = (
        "REGISTER STREAM s(a VARCHAR);\n"
        f"REGISTER QUERY q AS SELECT a AS b FROM s WHERE a = {where};"
    )
    for run in (cq_py.explain, cq_py.Engine().execute):
        with pytest.raises(cq_py.CQLSyntaxError, match=r"lone surrogate \\udc80") as e:
            run(cql)
        assert e.value.line == 2
        assert "\udc80" not in e.value.line_text


def test_unknown_column_names_it_and_the_columns_that_exist():
    with pytest.raises(cq_py.CQLSemanticError) as e:
        cq_py.Engine().execute(
            "REGISTER STREAM s(a INT, b DOUBLE);\nREGISTER QUERY q AS SELECT a, zz FROM s [Now];"
        )
    msg = str(e.value)
    assert "'zz'" in msg
    assert "a, b" in msg
    assert (e.value.line, e.value.column) == (2, 31)


@pytest.mark.parametrize(
    ("cql", "needle"),
    [
        (
            "REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM nope;",
            "unknown stream, relation or query 'nope'",
        ),
        ("REGISTER STREAM s(a INT); REGISTER STREAM s(b INT);", "registered twice"),
        ("REGISTER STREAM s(a INT, a DOUBLE);", "declared twice"),
        (
            "REGISTER STREAM s(a VARCHAR); REGISTER QUERY q AS SELECT a + 1 FROM s;",
            "expects numbers",
        ),
        (
            "REGISTER STREAM s(a VARCHAR); REGISTER QUERY q AS SELECT a FROM s WHERE a > 1;",
            "cannot compare",
        ),
        (
            "REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s WHERE a;",
            "must be BOOLEAN",
        ),
        ("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a, a FROM s;", "twice"),
        (
            "REGISTER STREAM s(ts INT); REGISTER QUERY q AS ISTREAM(SELECT ts FROM s [Now]);",
            "clashes",
        ),
        (
            "REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT y.a FROM s AS x;",
            "unknown source 'y'",
        ),
    ],
)
def test_semantic_errors_say_what_is_wrong(cql, needle):
    with pytest.raises(cq_py.CQLSemanticError, match=needle):
        cq_py.Engine().execute(cql)


@pytest.mark.parametrize("table", [True, False])
def test_a_push_to_a_stream_declaring_ts_is_refused(table):
    # (The crash fuzzer: an Arrow table met a schema of None: TypeError.)
    eng = cq_py.Engine()
    eng.execute('REGISTER STREAM "select"(a INT, ts VARCHAR);')
    rows = [{"a": 1, "ts": "x"}]
    with pytest.raises(cq_py.InputError, match="ts"):
        eng.push("select", pa.Table.from_pylist(rows) if table else rows)


def test_a_failing_script_registers_nothing():
    eng = cq_py.Engine()
    with pytest.raises(cq_py.CQLSemanticError):
        eng.execute("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT b FROM s;")
    assert eng.stream_names() == []
    assert eng.query_names() == []
    eng.execute("REGISTER STREAM s(a INT);")  # the name is still free
    assert eng.stream_names() == ["s"]


def run_pushes(eng, tables):
    for t in tables:
        eng.push("s", t)
    eng.close()
    return eng.fetch("q").to_pylist()


GOOD = [
    pa.table({"a": [1, 2], "b": [0.9, 0.7], "ts": [0, 5]}),
    pa.table({"a": [3], "b": [0.8], "ts": [10]}),
]


@pytest.mark.parametrize(
    ("bad", "needle", "row"),
    [
        (pa.table({"a": [9, 9], "b": [0.9, 0.9], "ts": [6, 4]}), "must not decrease", 1),
        (pa.table({"a": [9], "b": [0.9], "ts": [3]}), "must not decrease", 0),
        (pa.table({"a": [9], "b": [0.9], "ts": pa.array([None], pa.int64())}), "null timestamp", 0),
        (pa.table({"a": [9], "ts": [7]}), "missing column 'b'", None),
        (pa.table({"a": ["x"], "b": [0.9], "ts": [7]}), "column 'a' must be BIGINT", None),
        (pa.table({"a": [9], "b": [0.9], "time": [7]}), "missing timestamp column 'ts'", None),
        (pa.table({"a": [9], "b": [0.9], "ts": ["7"]}), "timestamp column 'ts'", None),
    ],
)
def test_rejected_push_changes_nothing(bad, needle, row):
    expected = run_pushes(engine(), GOOD)
    eng = engine()
    eng.push("s", GOOD[0])
    with pytest.raises(cq_py.InputError, match=needle) as e:
        eng.push("s", bad)
    assert e.value.stream == "s"
    assert e.value.row == row
    eng.push("s", GOOD[1])
    eng.close()
    assert eng.fetch("q").to_pylist() == expected


def test_a_bad_batch_late_in_a_multi_batch_push_rejects_the_whole_push():
    eng = engine()
    good_then_bad = pa.concat_tables(
        [pa.table({"a": [5], "b": [0.9], "ts": [1]}), pa.table({"a": [6], "b": [0.9], "ts": [0]})]
    )
    assert good_then_bad.column("a").num_chunks == 2
    with pytest.raises(cq_py.InputError, match="row 1 has ts 0"):
        eng.push("s", good_then_bad)
    assert eng.fetch("q").num_rows == 0
    eng.push("s", pa.table({"a": [7], "b": [0.9], "ts": [0]}))  # ts 0 is still allowed
    assert eng.fetch("q").column("a").to_pylist() == [7]


def test_unknown_stream_and_push_after_close():
    eng = engine()
    with pytest.raises(cq_py.InputError, match="unknown stream 'nope'; registered streams: s"):
        eng.push("nope", GOOD[0])
    eng.close()
    with pytest.raises(cq_py.InputError, match="closed"):
        eng.push("s", GOOD[0])


def test_advance_is_a_promise_later_pushes_must_keep():
    eng = engine()
    eng.advance(100)
    with pytest.raises(cq_py.InputError, match="progress"):
        eng.push("s", pa.table({"a": [1], "b": [0.9], "ts": [50]}))
    eng.push("s", pa.table({"a": [1], "b": [0.9], "ts": [100]}))
    assert eng.fetch("q").num_rows == 1


def test_unknown_query_in_fetch_and_bad_options():
    eng = engine()
    with pytest.raises(cq_py.CQLSemanticError, match="unknown query 'x'; registered queries: q"):
        eng.fetch("x")
    with pytest.raises(ValueError, match="time_unit"):
        cq_py.Engine(time_unit="weeks")
    with pytest.raises(cq_py.InputError):
        cq_py.run(FILTER_QUERY, inputs={"nope": GOOD[0]})


def test_a_kernel_missing_from_the_build_is_refused_clearly(monkeypatch):
    """Every call the planner can produce has a kernel today, so a build without one is simulated:
    the refusal names the expression and its argument types, and registers nothing."""
    from cq_py.planner import expressions

    have = expressions.kernel_signatures()
    monkeypatch.setattr(
        expressions,
        "kernel_signatures",
        lambda: {n: ks for n, ks in have.items() if n != "case_when"},
    )
    cql = (
        "REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s [Now];"
        "REGISTER QUERY k AS SELECT a, CASE WHEN a > 1 THEN 1 ELSE 0 END AS big FROM s [Now];"
    )
    eng = cq_py.Engine()
    with pytest.raises(cq_py.CQLSemanticError) as e:
        eng.execute(cql)
    assert (
        "'CASE ... END' (case_when of BOOLEAN, BIGINT, BIGINT) is not available in this build yet"
    ) in str(e.value)
    assert (e.value.line, e.value.column) == (1, 99)  # at CASE
    assert eng.query_names() == []
    assert "Operators:" in cq_py.explain(cql)  # the plan itself is valid
