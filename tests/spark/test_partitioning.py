"""The partition key planner (cq_py.spark.partitioning): which key makes per-part engines exact.

No Spark here: the planner reads the plan only. The Spark tests (test_spark.py) check that the keys
it proves do give the local engine's results.
"""

import pytest

from cq_py import CQLSemanticError, CQLSyntaxError
from cq_py.spark.partitioning import PartitionPlan, partition_plan

STREAMS = (
    "REGISTER STREAM s(k INT, v DOUBLE, w INT);"
    "REGISTER STREAM r(id INT, name VARCHAR);"
    "REGISTER STREAM u(k INT, v DOUBLE, w INT);"
)


def plan(*queries: str) -> PartitionPlan:
    body = "".join(f"REGISTER QUERY q{i} AS {q};" for i, q in enumerate(queries, 1))
    return partition_plan(STREAMS + body)


def keyed(*queries: str) -> dict:
    p = plan(*queries)
    assert p.partitionable, p.blocker
    assert p.blocker is None
    return p.keys


def blocked(*queries: str) -> str:
    p = plan(*queries)
    assert not p.partitionable
    assert p.keys == {"s": None, "r": None, "u": None}, "no key at all when not partitionable"
    assert p.blocker
    return p.blocker


# -- row windows ---------------------------------------------------------------------------------


def test_partitioned_row_window_keys_its_stream():
    assert keyed("SELECT k, AVG(v) FROM s [Partition By k Rows 10] GROUP BY k") == {
        "s": "k",
        "r": None,
        "u": None,
    }


def test_plain_row_window_blocks_and_says_where():
    msg = blocked("SELECT k FROM s [Range 5]", "SELECT k, v FROM s [Rows 10]")
    assert msg == (
        "query q2: [Rows 10] on stream 's' is not partitioned (it counts the rows of every key)"
    )


def test_row_window_on_several_columns_partitions_on_any_of_them():
    assert keyed("SELECT k, w, v FROM s [Partition By k, w Rows 2]")["s"] in ("k", "w")
    # ... and the aggregate after it picks which.
    assert keyed("SELECT w, SUM(v) FROM s [Partition By k, w Rows 2] GROUP BY w")["s"] == "w"


def test_row_window_then_grouping_on_another_column_blocks():
    msg = blocked("SELECT w, COUNT(*) AS n FROM s [Partition By k Rows 3] GROUP BY w")
    assert msg.startswith("query q1: the aggregate COUNT(*) GROUP BY w does not group by the key")
    assert "'k' of s" in msg


def test_row_window_over_a_named_query_traces_the_key_through_it():
    keys = keyed(
        "ISTREAM(SELECT k AS kk, v FROM s [Range 10] WHERE v > 0)",
        "SELECT kk, MAX(v) FROM q1 [Partition By kk Rows 5] GROUP BY kk",
    )
    assert keys["s"] == "k"


def test_row_window_over_an_unpartitionable_named_query_names_that_query():
    msg = blocked("ISTREAM(SELECT k, v FROM s [Now])", "SELECT k, v FROM q1 [Rows 3]")
    assert msg == (
        "query q2: [Rows 3] on the output of query 'q1' is not partitioned (it counts "
        "the rows of every key)"
    )


# -- joins ---------------------------------------------------------------------------------------


def test_equi_join_keys_both_sides():
    assert keyed(
        "SELECT s.k, name FROM s [Range 10], r [Range 5] WHERE s.k = r.id AND s.v > 1"
    ) == {"s": "k", "r": "id", "u": None}


def test_join_on_two_equalities_picks_one_that_fits_the_rest():
    keys = keyed(
        "SELECT s.w, COUNT(*) AS n FROM s [Range 10], u [Range 10] "
        "WHERE s.k = u.k AND s.w = u.w GROUP BY s.w"
    )
    assert keys == {"s": "w", "r": None, "u": "w"}


def test_join_without_equality_blocks():
    msg = blocked("SELECT * FROM s [Range 10], r [Now] WHERE s.k < r.id")
    assert msg == "join in query q1 has no equality between its sides (every row meets every row)"


def test_join_on_an_expression_is_not_on_the_key():
    msg = blocked("SELECT * FROM s [Range 10], r [Now] WHERE s.k + 1 = r.id")
    assert msg == "join in query q1 is not on the partition key (on s.k + 1 = r.id)"


def test_two_joins_on_different_columns_of_one_stream_conflict():
    msg = blocked(
        "SELECT * FROM s [Range 10], r [Now] WHERE s.k = r.id",
        "SELECT * FROM s [Range 10], u [Now] WHERE s.w = u.w",
    )
    assert msg == (
        "join in query q2 is not on the partition key (on s.w = u.w), which the join of "
        "query q1 needs (they partition on 'id' of r, 'k' of s)"
    )


def test_three_way_join_chains_the_key():
    assert keyed(
        "SELECT s.k FROM s [Range 10], r [Range 10], u [Range 10] WHERE s.k = r.id AND r.id = u.k"
    ) == {"s": "k", "r": "id", "u": "k"}


def test_renamed_key_after_join_still_groups():
    assert (
        keyed(
            "SELECT r.id AS key, COUNT(*) AS n FROM s [Range 10], r [Range 10] "
            "WHERE s.k = r.id GROUP BY r.id"
        )["r"]
        == "id"
    )


# -- aggregates, DISTINCT and set operations ------------------------------------------------------


def test_aggregate_without_group_by_blocks():
    assert blocked("SELECT AVG(v) AS a FROM s [Range 10]") == (
        "query q1: the aggregate without GROUP BY (AVG(v)) needs every row"
    )


def test_group_by_expression_is_not_the_key():
    msg = blocked("SELECT k + 1, COUNT(*) FROM s [Range 10] GROUP BY k + 1")
    assert "does not group by the key" in msg


def test_group_by_through_a_rename_in_a_named_query():
    assert (
        keyed(
            "SELECT k AS key, v * 2 AS v2 FROM s [Range 10]",
            "SELECT key, SUM(v2) FROM q1 GROUP BY key",
        )["s"]
        == "k"
    )


def test_a_computed_column_named_like_the_key_is_not_the_key():
    msg = blocked(
        "SELECT w AS k, v FROM s [Range 10]",
        "SELECT k, COUNT(*) FROM q1 GROUP BY k",
        "SELECT k, COUNT(*) FROM s [Range 3] GROUP BY k",
    )
    assert "query q3" in msg
    assert "'w' of s" in msg


def test_distinct_is_safe_when_the_key_is_compared():
    assert keyed("SELECT DISTINCT k, w FROM s [Range 10]")["s"] in ("k", "w")
    assert (
        keyed(
            "SELECT DISTINCT k, w FROM s [Range 10]",
            "SELECT w, COUNT(*) FROM s [Range 10] GROUP BY w",
        )["s"]
        == "w"
    )
    msg = blocked(
        "SELECT DISTINCT v FROM s [Range 10]", "SELECT k, COUNT(*) FROM s [Range 10] GROUP BY k"
    )
    assert msg == (
        "query q2: the aggregate COUNT(*) GROUP BY k does not group by the key, which "
        "SELECT DISTINCT in query q1 needs (they partition on 'v' of s)"
    )


def test_union_all_of_two_inputs_partitioned_on_the_same_key():
    assert keyed(
        "SELECT k, COUNT(*) AS n FROM s [Range 10] GROUP BY k "
        "UNION ALL SELECT id, COUNT(*) AS n FROM r [Range 10] GROUP BY id"
    ) == {"s": "k", "r": "id", "u": None}


def test_aggregate_over_union_all_keys_both_branches():
    keys = keyed(
        "ISTREAM(SELECT k, v FROM s [Now] UNION ALL SELECT k, v FROM u [Now])",
        "SELECT k, SUM(v) FROM q1 [Range 100] GROUP BY k",
    )
    assert keys == {"s": "k", "r": None, "u": "k"}


def test_aggregate_over_union_all_with_a_computed_branch_blocks():
    msg = blocked(
        "ISTREAM(SELECT k, v FROM s [Now] UNION ALL SELECT w + k AS k, v FROM u [Now])",
        "SELECT k, SUM(v) FROM q1 [Range 100] GROUP BY k",
    )
    assert msg.startswith("query q2: the aggregate SUM(v) GROUP BY k does not group by the key")


def test_union_of_columns_in_swapped_positions_needs_a_consistent_key():
    # UNION (distinct) compares both columns; position 1 is k on one side, w on the other: the key
    # k of s and w of u — or w of s and k of u.
    keys = keyed("SELECT k, w FROM s [Range 10] UNION SELECT w, k FROM u [Range 10]")
    assert (keys["s"], keys["u"]) in (("k", "w"), ("w", "k"))


@pytest.mark.parametrize("op", ["EXCEPT", "INTERSECT"])
def test_except_intersect_compare_the_key(op):
    assert keyed(f"SELECT k FROM s [Range 10] {op} SELECT id FROM r [Range 10]") == {
        "s": "k",
        "r": "id",
        "u": None,
    }


@pytest.mark.parametrize("op", ["EXCEPT", "INTERSECT", "UNION"])
def test_set_operation_without_the_key_among_its_columns_blocks(op):
    msg = blocked(
        f"SELECT v FROM s [Range 10] {op} SELECT v FROM u [Range 10]",
        "SELECT k, COUNT(*) FROM s [Range 10] GROUP BY k",
    )
    assert f"which {op} in query q1 needs" in msg


# -- per-row operators ---------------------------------------------------------------------------


def test_script_without_stateful_operators_needs_no_key():
    p = plan(
        "ISTREAM(SELECT k, v * 2 AS v2 FROM s [Now] WHERE v > 0)",
        "SELECT * FROM s [Range 10 SECONDS Slide 1 SECOND]",
        "ISTREAM(SELECT v FROM s) <5>",
    )
    assert p.partitionable
    assert not p.stateful
    # ISTREAM over [Now] and over a window without ends compares nothing across keys.
    assert p.keys == {"s": None, "r": None, "u": None}


def test_istream_over_ending_lifetimes_needs_a_key_column():
    assert keyed("ISTREAM(SELECT w FROM s [Range 10])")["s"] == "w"
    msg = blocked("ISTREAM(SELECT v * 2 AS d FROM s [Range 10])")
    assert msg == (
        "query q1: ISTREAM compares whole rows, and none of their columns can be the partition key"
    )


def test_istream_of_aggregate_that_drops_the_key_blocks():
    msg = blocked("ISTREAM(SELECT AVG(v) AS a FROM s [Range 10] GROUP BY k)")
    assert msg.startswith("query q1: ISTREAM compares whole rows")


def test_dstream_and_istream_of_grouped_aggregate():
    assert (
        keyed(
            "DSTREAM(SELECT k, AVG(v) AS a FROM s [Range 10] GROUP BY k)",
            "ISTREAM(SELECT k, MAX(v) AS m FROM s [Range 10 SECONDS Slide 1 SECOND] GROUP BY k)",
        )["s"]
        == "k"
    )


def test_rstream_is_safe_with_any_key_and_flagged():
    p = plan("RSTREAM(SELECT k, COUNT(*) AS n FROM s [Range 5] GROUP BY k)")
    assert p.partitionable
    assert p.keys["s"] == "k"
    assert p.rstream
    assert not plan("SELECT k FROM s [Range 5]").rstream


@pytest.mark.parametrize(
    ("query", "why"),
    [
        (
            "RSTREAM(SELECT k FROM s [Range Unbounded] UNION ALL SELECT k FROM s [Range 2])",
            "[Range Unbounded] on stream 's'",
        ),
        (
            "RSTREAM(SELECT k, MAX(v) AS m FROM s [Partition By k Rows 3] GROUP BY k)",
            "[Partition By k Rows 3] on stream 's'",
        ),
        ("RSTREAM(SELECT k, COUNT(*) AS n FROM s [Range Unbounded] GROUP BY k)", "Unbounded"),
    ],
)
def test_rstream_over_rows_that_may_never_end_needs_every_row(query, why):
    # Past the progress RSTREAM emits R(t) while some row of R(t) ends later: a part holding only
    # never-ending rows cannot know that another part's row ends later (SEMANTICS.md §4.3).
    assert why in blocked(query)
    assert "RSTREAM over rows that may never end" in blocked(query)
    # A join's pair ends when its windowed side's row does.
    assert plan(
        "RSTREAM(SELECT s.k FROM s [Range 3], u [Range Unbounded] WHERE s.k = u.k)"
    ).partitionable


def test_a_widening_cast_carries_the_key_and_a_cast_of_a_string_does_not():
    # BIGINT -> DOUBLE keeps equal values equal and unequal ones apart (hashed as doubles);
    # VARCHAR -> DOUBLE makes one number of '1' and '1.0', and NULL of every 'x'.
    assert keyed("SELECT DISTINCT CAST(w AS DOUBLE) AS x FROM s [Now]")["s"] == "w"
    assert (
        "does not group by the key"
        in partition_plan(
            "REGISTER STREAM t(c VARCHAR);"
            "REGISTER QUERY q AS SELECT DISTINCT CAST(c AS DOUBLE) AS x FROM t [Now];"
        ).blocker
    )


def test_ordered_when_arrival_order_counts():
    assert plan("SELECT k, v FROM s [Partition By k Rows 2]").ordered
    assert not plan("SELECT k, COUNT(*) FROM s [Range 5] GROUP BY k").ordered


# -- relations and loops -------------------------------------------------------------------------


def test_relation_input_is_keyed_by_the_join():
    p = partition_plan(
        "REGISTER STREAM s(k INT, v DOUBLE); REGISTER RELATION dim(id INT, label VARCHAR);"
        "REGISTER QUERY q AS ISTREAM(SELECT s.k, label FROM s [Now], dim WHERE s.k = dim.id);"
    )
    assert p.partitionable
    assert p.keys == {"s": "k", "dim": "id"}
    assert p.relations == frozenset({"dim"})
    assert p.ordered
    assert p.key_types == {"s": "int64", "dim": "int64"}


def test_loop_that_keeps_the_key_is_partitionable():
    p = partition_plan(
        "REGISTER STREAM s(k INT, a INT);"
        "REGISTER QUERY c AS ISTREAM(SELECT k, a FROM s [Now] UNION ALL "
        "  SELECT k, a + 1 AS a FROM c [Now] WHERE a + 1 < 4) <Now>;"
        "REGISTER QUERY n AS SELECT k, COUNT(*) AS n FROM c [Range 10] GROUP BY k;"
    )
    assert p.partitionable
    assert p.keys == {"s": "k"}


def test_loop_that_changes_the_key_blocks():
    p = partition_plan(
        "REGISTER STREAM s(k INT, a INT);"
        "REGISTER QUERY c AS ISTREAM(SELECT k, a FROM s [Now] UNION ALL "
        "  SELECT k + 1 AS k, a + 1 AS a FROM c [Now] WHERE a + 1 < 4) <Now>;"
        "REGISTER QUERY n AS SELECT k, COUNT(*) AS n FROM c [Range 10] GROUP BY k;"
    )
    assert not p.partitionable
    # Around the loop k becomes k + 1: the loop's ISTREAM (its [Now] rows may start at any step)
    # compares rows none of whose columns keeps one value.
    assert p.blocker.startswith("query c: ISTREAM compares whole rows")


def test_stateful_operator_inside_a_loop_is_checked():
    p = partition_plan(
        "REGISTER STREAM s(k INT, a INT);"
        "REGISTER QUERY c AS ISTREAM(SELECT k, a FROM s [Now] UNION ALL "
        "  SELECT k, a + 1 AS a FROM c [Rows 2] WHERE a + 1 < 4) <Now>;"
    )
    assert not p.partitionable
    assert p.blocker.startswith("query c: [Rows 2] on the output of query 'c'")


def test_key_types_widen_for_hashing():
    p = partition_plan(
        "REGISTER STREAM s(k INT, v DOUBLE); REGISTER STREAM t(x DOUBLE);"
        "REGISTER QUERY q AS SELECT * FROM s [Range 3], t [Range 3] WHERE s.k = t.x;"
    )
    assert p.keys == {"s": "k", "t": "x"}
    assert p.key_types == {"s": "int64", "t": "float64"}


# -- errors are the engine's ---------------------------------------------------------------------


def test_bad_scripts_raise_the_engines_errors():
    with pytest.raises(CQLSyntaxError):
        partition_plan("REGISTER STREAM s(k INT; ")
    with pytest.raises(CQLSemanticError, match="unknown stream"):
        partition_plan("REGISTER QUERY q AS SELECT * FROM nowhere;")


def test_plan_is_frozen():
    p = plan("SELECT k FROM s [Now]")
    with pytest.raises(AttributeError):
        p.partitionable = False  # type: ignore[misc]


def test_istream_over_now_after_a_delay_needs_a_key():
    # The delayed [Now] rows start at (t + 2, 0) and end at (t + 2, 1): still step 0 starts, but
    # a delay may put rows anywhere, so the planner asks for a key rather than prove more.
    p = plan("ISTREAM(SELECT k, v FROM s [Now]) <2>", "ISTREAM(SELECT v * 2 AS d FROM q1 [Now])")
    assert not p.partitionable
    assert p.blocker.startswith("query q2: ISTREAM compares whole rows")
