"""End to end through every layer: CQL → planner → C++ operators → Arrow, against hand-computed
results."""

import pyarrow as pa
import pytest

import cq_py

FILTER_QUERY = (
    "REGISTER STREAM s(a INT, b DOUBLE);"
    "REGISTER QUERY q AS ISTREAM(SELECT a, b*2 AS c FROM s [Range 10] WHERE b > 0.5);"
)


def test_acceptance_query_returns_the_rows_with_b_over_half():
    table = pa.table(
        {"a": [1, 2, 3, 4, 5, 6], "b": [0.1, 0.6, 0.5, 0.9, None, 0.51], "ts": [0, 1, 1, 5, 7, 30]}
    )
    q = cq_py.run(FILTER_QUERY, inputs={"s": table})["q"]
    assert q.schema.names == ["a", "c", "ts"]
    assert q.schema.types == [pa.int64(), pa.float64(), pa.int64()]
    assert q.to_pylist() == [
        {"a": 2, "c": 1.2, "ts": 1},
        {"a": 4, "c": 1.8, "ts": 5},
        {"a": 6, "c": 1.02, "ts": 30},
    ]


def test_relation_form_reports_lifetimes():
    out = cq_py.run(
        "REGISTER STREAM s(a INT, b DOUBLE);"
        "REGISTER QUERY r AS SELECT a, b*2 AS c FROM s [Range 10] WHERE b > 0.5;",
        inputs={"s": pa.table({"a": [1, 2], "b": [0.7, 0.1], "ts": [3, 4]})},
    )["r"]
    assert out.schema.names == ["a", "c", "start", "end"]
    assert out.to_pylist() == [{"a": 1, "c": 1.4, "start": 3, "end": 13}]


def test_unbounded_and_missing_window_never_end():
    cql = (
        "REGISTER STREAM s(a INT);"
        "REGISTER QUERY u AS SELECT a FROM s [Range Unbounded];"
        "REGISTER QUERY n AS SELECT a FROM s;"
    )
    out = cq_py.run(cql, inputs={"s": pa.table({"a": [7], "ts": [2]})})
    for name in "un":
        assert out[name].to_pylist() == [{"a": 7, "start": 2, "end": None}]


def test_now_window_lasts_one_epsilon_step():
    eng = cq_py.Engine(expose_steps=True)
    eng.execute(
        "REGISTER STREAM s(a INT); REGISTER QUERY r AS SELECT a FROM s [Now];"
        "REGISTER QUERY i AS ISTREAM(SELECT a FROM s [Now]);"
    )
    eng.push("s", pa.table({"a": [1, 1], "ts": [5, 6]}))
    assert eng.fetch("r").to_pylist() == [
        {"a": 1, "start": 5, "end": 5, "start_step": 0, "end_step": 1},
        {"a": 1, "start": 6, "end": 6, "start_step": 0, "end_step": 1},
    ]
    assert eng.fetch("i").to_pylist() == [
        {"a": 1, "ts": 5, "ts_step": 0},
        {"a": 1, "ts": 6, "ts_step": 0},
    ]


def test_istream_emits_nothing_for_a_value_that_ends_and_restarts_at_the_same_instant():
    # (1, 0.9) lives on [0, 10); the same value starts again at 10: R(10) − R(10⁻) is empty.
    table = pa.table({"a": [1, 2, 1, 1], "b": [0.9, 0.9, 0.9, 0.9], "ts": [0, 3, 10, 10]})
    q = cq_py.run(FILTER_QUERY, inputs={"s": table})["q"]
    # At 10 two copies start and one ends: exactly one copy is new.
    assert q.to_pylist() == [
        {"a": 1, "c": 1.8, "ts": 0},
        {"a": 2, "c": 1.8, "ts": 3},
        {"a": 1, "c": 1.8, "ts": 10},
    ]


@pytest.mark.parametrize("batch", [1, 2, 3, 1000])
@pytest.mark.parametrize("batch_size", [1, 2, 65536])
def test_results_do_not_depend_on_batch_boundaries(batch, batch_size):
    ts = [0, 0, 0, 4, 4, 10, 10, 10, 14, 20, 20, 30]
    a = [1, 1, 2, 3, 3, 1, 1, 2, 3, 1, 9, 1]
    b = [0.9] * len(ts)
    # Range 10: at 10 the three rows of 0 end as three equal rows start; at 14 one 3 starts as two
    # end; at 20 only 9 is new (1 was alive until 20); at 30 the 1 of 20 ends as a 1 starts.
    expected = [(1, 0), (1, 0), (2, 0), (3, 4), (3, 4), (9, 20)]
    eng = cq_py.Engine(batch_size=batch_size)  # the core's own slices of each push
    eng.execute(FILTER_QUERY)
    table = pa.table({"a": a, "b": b, "ts": ts})
    for off in range(0, len(ts), batch):
        eng.push("s", table.slice(off, batch))
    eng.close()
    got = [(r["a"], r["ts"]) for r in eng.fetch("q").to_pylist()]
    assert got == expected


def test_ghost_lifetimes_never_reach_istream():
    out = cq_py.run(
        "REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Range 0]);",
        inputs={"s": pa.table({"a": [1, 2], "ts": [1, 2]})},
    )
    assert out["q"].num_rows == 0


def test_time_units_turn_durations_and_timestamps_into_ticks():
    ts = pa.array([1_000_000, 4_000_000, 12_000_000], pa.timestamp("us"))  # 1 s, 4 s, 12 s
    table = pa.table({"a": [1, 2, 3], "ts": ts})
    out = cq_py.run(
        "REGISTER STREAM s(a INT); REGISTER QUERY r AS SELECT a FROM s [Range 5 SECONDS];",
        inputs={"s": table},
        time_unit="ms",
    )["r"]
    assert out.to_pylist() == [
        {"a": 1, "start": 1000, "end": 6000},
        {"a": 2, "start": 4000, "end": 9000},
        {"a": 3, "start": 12000, "end": 17000},
    ]
    with pytest.raises(cq_py.CQLSemanticError, match="whole number of ticks"):
        cq_py.Engine(time_unit="s").execute(
            "REGISTER STREAM s(a INT); REGISTER QUERY r AS SELECT a FROM s [Range 5 MS];"
        )


def test_epoch_microseconds_work():
    base = 1_700_000_000_000_000
    table = pa.table({"a": [1, 2], "ts": [base, base + 7]})
    out = cq_py.run(
        "REGISTER STREAM s(a INT); REGISTER QUERY r AS SELECT a FROM s [Range 10];",
        inputs={"s": table},
        time_unit="us",
    )["r"]
    assert out.column("end").to_pylist() == [base + 10, base + 17]


def test_expressions_follow_sql_semantics():
    table = pa.table(
        {
            "i": pa.array([7, -7, None, 9223372036854775807, 5], pa.int64()),
            "d": [2.0, 0.0, 1.5, 1.0, None],
            "s": ["abc", "abd", None, "", "b"],
            "f": [True, False, None, True, False],
            "ts": [0, 1, 2, 3, 4],
        }
    )
    cql = (
        "REGISTER STREAM t(i INT, d DOUBLE, s VARCHAR, f BOOLEAN);"
        "REGISTER QUERY q AS ISTREAM(SELECT i + 1 AS inc, i / d AS ratio, i % 3 AS m, -i AS neg,"
        " s < 'abd' AS lt, f AND i > 0 AS both, f OR NOT f AS taut, d IS NULL AS dnull,"
        " i BETWEEN 0 AND 8 AS btw, s IN ('abc', 'b') AS inl"
        " FROM t [Now]);"
    )
    rows = cq_py.run(cql, inputs={"t": table})["q"].to_pylist()
    assert [r["inc"] for r in rows] == [8, -6, None, -9223372036854775808, 6]  # wraps like Spark
    assert [r["ratio"] for r in rows] == [3.5, None, None, 9223372036854775807 / 1.0, None]
    assert [r["m"] for r in rows] == [1, -1, None, 1, 2]  # sign of the dividend
    assert [r["neg"] for r in rows] == [-7, 7, None, -9223372036854775807, -5]
    assert [r["lt"] for r in rows] == [True, False, None, True, False]
    assert [r["both"] for r in rows] == [True, False, None, True, False]
    assert [r["taut"] for r in rows] == [True, True, None, True, True]  # NULL OR NULL is NULL
    assert [r["dnull"] for r in rows] == [False, False, False, False, True]
    assert [r["btw"] for r in rows] == [True, False, None, False, True]
    assert [r["inl"] for r in rows] == [True, False, None, False, True]


def test_where_keeps_only_true_rows():
    table = pa.table({"a": [1, None, 3], "ts": [0, 1, 2]})
    out = cq_py.run(
        "REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now] "
        "WHERE NOT a = 1);",
        inputs={"s": table},
    )["q"]
    assert out.column("a").to_pylist() == [3]  # NOT NULL is NULL: row 2 is dropped


def test_select_star_alias_and_qualified_names():
    cql = (
        "REGISTER STREAM s(a INT, b VARCHAR);"
        "REGISTER QUERY q AS ISTREAM(SELECT *, x.a * 10 AS a10 FROM s [Now] AS x "
        "WHERE x.b <> 'no');"
    )
    out = cq_py.run(cql, inputs={"s": pa.table({"a": [1, 2], "b": ["yes", "no"], "ts": [0, 0]})})[
        "q"
    ]
    assert out.to_pylist() == [{"a": 1, "b": "yes", "a10": 10, "ts": 0}]


def test_push_accepts_pandas_and_lists_and_record_batches():
    pd = pytest.importorskip("pandas")
    eng = cq_py.Engine()
    eng.execute(
        "REGISTER STREAM s(a INT, b DOUBLE); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);"
    )
    eng.push("s", pd.DataFrame({"a": [1], "b": [0.5], "ts": [0]}))
    eng.push("s", [{"a": 2, "b": 1.0, "ts": 1}])
    eng.push("s", pa.record_batch({"a": pa.array([3], pa.int32()), "b": [1], "ts": [2]}))
    eng.push("s", [])
    assert eng.fetch("q").column("a").to_pylist() == [1, 2, 3]
    assert eng.fetch("q").num_rows == 0  # fetch drains


def test_subscribe_receives_batches_as_they_are_produced_and_fetch_does_not_repeat_them():
    eng = cq_py.Engine()
    eng.execute(FILTER_QUERY)
    got = []
    eng.subscribe("q", got.append)
    eng.push("s", pa.table({"a": [1, 2], "b": [0.9, 0.1], "ts": [0, 1]}))
    assert sum(b.num_rows for b in got) == 1
    eng.push("s", pa.table({"a": [3], "b": [0.8], "ts": [2]}))
    assert [r["a"] for b in got for r in b.to_pylist()] == [1, 3]
    assert eng.fetch("q").num_rows == 0


def test_queries_registered_in_several_executes_share_the_stream():
    eng = cq_py.Engine()
    eng.execute("REGISTER STREAM s(a INT);")
    eng.execute("REGISTER QUERY q1 AS ISTREAM(SELECT a FROM s [Now] WHERE a > 1);")
    eng.execute("REGISTER QUERY q2 AS ISTREAM(SELECT a FROM s [Now] WHERE a < 3);")
    eng.push("s", pa.table({"a": [1, 2, 3], "ts": [0, 1, 2]}))
    assert eng.fetch("q1").column("a").to_pylist() == [2, 3]
    assert eng.fetch("q2").column("a").to_pylist() == [1, 2]


def test_zero_copy_input_columns_pass_through():
    # A projection of bare columns over an unfiltered batch hands back pyarrow's own buffers.
    a = pa.array(range(1000), pa.int64())
    eng = cq_py.Engine()
    eng.execute(
        "REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Range Unbounded]);"
    )
    eng.push("s", pa.table({"a": a, "ts": a}))
    out = eng.fetch("q")
    assert out.column("a").chunk(0).buffers()[1].address == a.buffers()[1].address


def test_explain_lists_the_operators_in_execution_order():
    eng = cq_py.Engine()
    eng.execute(FILTER_QUERY)
    text = eng.explain()
    for part in [
        "StreamScan s",
        "Window [Range 10] <- #0",
        "Filter b > 0.5 <- #1",
        "Project a, b * 2 AS c <- #2",
        "ISTREAM <- #3",
        "Output q <- #4",
        "constant duration 10 ticks",
        "Execution order (DTS): #0 #1 #2 #3 #4 #5",
    ]:
        assert part in text, part


def test_union_all_of_streams_merges_them_by_time():
    # A row window over the union counts tuples in time order, whichever stream was pushed first.
    cql = (
        "REGISTER STREAM s(a INT); REGISTER STREAM t(a INT);"
        "REGISTER QUERY st AS ISTREAM(SELECT a FROM s [Now]) UNION ALL ISTREAM(SELECT a "
        "FROM t [Now]);"
        "REGISTER QUERY w AS SELECT * FROM st [Rows 2];"
    )
    eng = cq_py.Engine()
    eng.execute(cql)
    eng.push("s", pa.table({"a": [1, 2], "ts": [0, 10]}))
    eng.push("t", pa.table({"a": [3, 4], "ts": [5, 6]}))
    eng.close()
    assert [(r["a"], r["ts"]) for r in eng.fetch("st").to_pylist()] == [
        (1, 0),
        (3, 5),
        (4, 6),
        (2, 10),
    ]
    assert [(r["a"], r["start"], r["end"]) for r in eng.fetch("w").to_pylist()] == [
        (1, 0, 6),
        (3, 5, 10),
        (4, 6, None),
        (2, 10, None),
    ]
