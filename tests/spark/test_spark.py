"""cq on Spark (cq_py.spark.run) gives the local engine's results, on a real local SparkSession.

Every test runs a script both ways over the same data and compares the outputs as bags. Values are
multiples of 1/4, so sums and averages are exact whatever the order rows are added in (Spark's
Arrow batches and the local run's chunk the data differently).
"""

import warnings

import numpy as np
import pyarrow as pa
import pytest

import cq_py
from cq_py import CQLSemanticError, InputError
from cq_py.spark import CQPartitionWarning, partition_plan, run


def events(n: int, keys: int, span: int, seed: int, key: str = "k") -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            key: rng.integers(0, keys, n),
            "v": rng.integers(0, 40, n) / 4.0,
            "w": rng.integers(0, 3, n),
            "ts": np.sort(rng.integers(0, span, n)),
        }
    )


def bag(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def spark_vs_local(spark, cql: str, inputs: dict[str, pa.Table], **options) -> dict[str, int]:
    """Runs ``cql`` on Spark and locally; asserts equal outputs; returns each query's row count."""
    local = cq_py.run(cql, inputs=inputs, **{k: v for k, v in options.items() if k != "partitions"})
    frames = {name: spark.createDataFrame(t) for name, t in inputs.items()}
    out = run(spark, cql, inputs=frames, **options)
    assert list(out) == list(local)
    counts = {}
    for q, df in out.items():
        got = df.toArrow()
        assert got.schema == local[q].schema, q
        assert bag(got) == bag(local[q]), q
        counts[q] = local[q].num_rows
    return counts


def no_warning():
    return warnings.catch_warnings(action="error", category=CQPartitionWarning)


def test_row_windows_and_grouped_aggregates_by_key(spark):
    cql = """
    REGISTER STREAM s(k INT, v DOUBLE, w INT);
    REGISTER QUERY last3 AS SELECT k, AVG(v) AS a, COUNT(*) AS n
        FROM s [Partition By k Rows 3] GROUP BY k;
    REGISTER QUERY sums AS ISTREAM(SELECT k, SUM(v) AS sv, MAX(w) AS mw
        FROM s [Range 20] GROUP BY k);
    REGISTER QUERY slid AS SELECT k, MIN(v) AS lo
        FROM s [Range 50 Slide 10] GROUP BY k HAVING COUNT(*) > 1;
    REGISTER QUERY hot AS ISTREAM(SELECT k, v * 2 AS v2 FROM s [Now] WHERE v > 8);
    """
    assert partition_plan(cql).keys == {"s": "k"}
    with no_warning():
        counts = spark_vs_local(spark, cql, {"s": events(3000, 25, 600, 1)})
    assert all(c > 100 for c in counts.values()), counts


def test_equal_timestamps_keep_their_input_order_in_row_windows(spark):
    # 40 rows per tick: which rows a [Rows 2] window holds depends on the order within a tick.
    n = 2000
    t = pa.table({"k": np.arange(n) % 5, "v": (np.arange(n) % 17) / 4.0, "ts": np.arange(n) // 40})
    cql = (
        "REGISTER STREAM s(k INT, v DOUBLE);"
        "REGISTER QUERY q AS ISTREAM(SELECT k, SUM(v) AS sv FROM s [Partition By k Rows 2] "
        "GROUP BY k);"
    )
    with no_warning():
        assert spark_vs_local(spark, cql, {"s": t})["q"] > 100


def test_join_on_the_key_then_group(spark):
    cql = """
    REGISTER STREAM orders(k INT, v DOUBLE, w INT);
    REGISTER STREAM clicks(uid INT, v DOUBLE, w INT);
    REGISTER QUERY j AS ISTREAM(SELECT o.k, o.v, c.w FROM orders [Range 30] AS o, clicks [Now] AS c
                                WHERE o.k = c.uid AND c.v > 2);
    REGISTER QUERY per_user AS SELECT c.uid, COUNT(*) AS n, SUM(o.v) AS total
                               FROM orders [Range 30] AS o, clicks [Range 10] AS c
                               WHERE o.k = c.uid GROUP BY c.uid;
    """
    assert partition_plan(cql).keys == {"orders": "k", "clicks": "uid"}
    with no_warning():
        counts = spark_vs_local(
            spark,
            cql,
            {"orders": events(1500, 40, 500, 2), "clicks": events(1500, 40, 500, 3, key="uid")},
        )
    assert all(c > 50 for c in counts.values()), counts


def test_set_operations_and_distinct_on_the_key(spark):
    cql = """
    REGISTER STREAM a(k INT, v DOUBLE, w INT);
    REGISTER STREAM b(k INT, v DOUBLE, w INT);
    REGISTER QUERY only_a AS ISTREAM(SELECT k, w FROM a [Range 15]
        EXCEPT SELECT k, w FROM b [Range 15]);
    REGISTER QUERY both AS SELECT k FROM a [Range 15] INTERSECT SELECT k FROM b [Range 15];
    REGISTER QUERY either AS SELECT DISTINCT k, w FROM a [Range 5];
    """
    assert partition_plan(cql).keys == {"a": "k", "b": "k"}
    with no_warning():
        spark_vs_local(spark, cql, {"a": events(800, 30, 400, 4), "b": events(800, 30, 400, 5)})


def test_unpartitionable_script_runs_in_one_partition_and_names_the_blocker(spark):
    cql = """
    REGISTER STREAM s(k INT, v DOUBLE, w INT);
    REGISTER QUERY recent AS SELECT k, v FROM s [Rows 5];
    REGISTER QUERY total AS ISTREAM(SELECT COUNT(*) AS n, SUM(v) AS sv FROM s [Range 25]);
    """
    with pytest.warns(
        CQPartitionWarning,
        match=r"one partition: query recent: \[Rows 5\] on stream 's' "
        r"is not partitioned",
    ):
        counts = spark_vs_local(spark, cql, {"s": events(1000, 10, 300, 6)})
    assert counts["recent"] == 1000


def test_aggregate_without_group_by_is_named(spark):
    cql = (
        "REGISTER STREAM s(k INT, v DOUBLE, w INT);"
        "REGISTER QUERY m AS ISTREAM(SELECT MAX(v) AS top FROM s [Range 10]);"
    )
    with pytest.warns(
        CQPartitionWarning, match=r"the aggregate without GROUP BY \(MAX\(v\) \+ ISTREAM\)"
    ):
        spark_vs_local(spark, cql, {"s": events(500, 10, 200, 7)})


def test_stateless_script_keeps_sparks_partitions(spark):
    cql = (
        "REGISTER STREAM s(k INT, v DOUBLE, w INT);"
        "REGISTER QUERY f AS ISTREAM(SELECT k, v + w AS x FROM s [Now] WHERE w <> 1);"
        "REGISTER QUERY later AS ISTREAM(SELECT k FROM s [Now]) <7>;"
    )
    assert not partition_plan(cql).stateful
    with no_warning():
        spark_vs_local(spark, cql, {"s": events(1000, 10, 300, 8)})


def test_relation_with_deletes_joined_on_the_key(spark):
    rel = pa.table(
        {
            "id": [1, 2, 3, 1, 2, 4, 1],
            "label": ["a", "b", "c", "a", "b", "d", "A"],
            "op": ["+", "+", "+", "-", "-", "+", "+"],
            "ts": [0, 0, 5, 40, 60, 70, 90],
        }
    )
    cql = """
    REGISTER STREAM s(k INT, v DOUBLE, w INT);
    REGISTER RELATION dim(id INT, label VARCHAR);
    REGISTER QUERY tagged AS ISTREAM(SELECT s.k, dim.label, s.v FROM s [Now], dim
        WHERE s.k = dim.id);
    REGISTER QUERY alive AS SELECT id, label FROM dim;
    """
    assert partition_plan(cql).keys == {"s": "k", "dim": "id"}
    with no_warning():
        counts = spark_vs_local(spark, cql, {"s": events(600, 6, 150, 9), "dim": rel})
    assert counts["tagged"] > 50
    assert counts["alive"] == 5


def test_relation_no_operator_keys_is_split_by_its_values(spark):
    # dim meets no stateful operator (no key), but s's aggregate makes the script split: dim's
    # deletes must land where their inserts did.
    n = 60
    ids = np.arange(n) % 20
    rel = pa.table(
        {
            "id": np.concatenate([ids, ids[:30]]),
            "label": [f"l{i}" for i in np.concatenate([ids, ids[:30]])],
            "op": ["+"] * n + ["-"] * 30,
            "ts": np.concatenate([np.arange(n), 100 + np.arange(30)]),
        }
    )
    cql = """
    REGISTER STREAM s(k INT, v DOUBLE, w INT);
    REGISTER RELATION dim(id INT, label VARCHAR);
    REGISTER QUERY per_k AS SELECT k, COUNT(*) AS n FROM s [Range 10] GROUP BY k;
    REGISTER QUERY alive AS SELECT id, label FROM dim WHERE id > 2;
    """
    p = partition_plan(cql)
    assert p.keys == {"s": "k", "dim": None}
    assert p.stateful
    with no_warning():
        counts = spark_vs_local(
            spark, cql, {"s": events(300, 6, 150, 13), "dim": rel}, partitions=4
        )
    assert counts["alive"] == 51


def test_rstream_reaches_the_same_last_tick_in_every_partition(spark):
    # Rows that never end: RSTREAM emits them at every tick up to the last input tick, which
    # only one partition's data reaches. The partition proof keeps such an RSTREAM whole (past the
    # progress it emits rows that never end while a row of another key ends later, which a part
    # cannot know: cq_py/spark/partitioning.py), and says so; the result is the local one.
    t = pa.table(
        {
            "k": [1, 2, 3, 4, 5, 6],
            "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "w": [0] * 6,
            "ts": [0, 3, 5, 9, 20, 60],
        }
    )
    cql = (
        "REGISTER STREAM s(k INT, v DOUBLE, w INT);"
        "REGISTER QUERY r AS RSTREAM(SELECT k, COUNT(*) AS n FROM s GROUP BY k);"
    )
    with pytest.warns(CQPartitionWarning, match="RSTREAM over rows that may never end"):
        counts = spark_vs_local(spark, cql, {"s": t})
    assert counts["r"] == 61 + 58 + 56 + 52 + 41 + 1  # ticks from each start to 60


def test_spark_timestamps_and_time_unit(spark):
    rng = np.random.default_rng(10)
    n = 500
    micros = np.sort(rng.integers(0, 20_000_000, n)).astype("datetime64[us]")
    t = pa.table(
        {
            "k": rng.integers(0, 8, n),
            "v": rng.integers(0, 9, n) / 4.0,
            "ts": pa.array(micros, pa.timestamp("us", tz="UTC")),
        }
    )
    cql = (
        "REGISTER STREAM s(k INT, v DOUBLE);"
        "REGISTER QUERY q AS SELECT k, SUM(v) AS sv FROM s [Range 2 SECONDS Slide 500 MS] "
        "GROUP BY k;"
    )
    with no_warning():
        assert spark_vs_local(spark, cql, {"s": t}, time_unit="ms")["q"] > 50


def test_a_recursive_script_that_keeps_the_key(spark):
    cql = """
    REGISTER STREAM s(k INT, v DOUBLE, w INT);
    REGISTER QUERY c AS ISTREAM(SELECT k, w FROM s [Now] UNION ALL
                                SELECT k, w + 1 AS w FROM c [Now] WHERE w + 1 < 4) <Now>;
    REGISTER QUERY n AS SELECT k, COUNT(*) AS n FROM c [Range 10] GROUP BY k;
    """
    assert partition_plan(cql).keys == {"s": "k"}
    with no_warning():
        spark_vs_local(spark, cql, {"s": events(400, 12, 200, 11)})


def test_several_partitions_are_used(spark):
    t = events(2000, 50, 400, 12)
    cql = (
        "REGISTER STREAM s(k INT, v DOUBLE, w INT);"
        "REGISTER QUERY q AS SELECT k, COUNT(*) AS n FROM s [Range 10] GROUP BY k;"
    )
    out = run(spark, cql, inputs={"s": spark.createDataFrame(t)}, partitions=3)
    assert out["q"].rdd.getNumPartitions() == 3
    from pyspark.sql import functions as F

    used = out["q"].select(F.spark_partition_id().alias("p")).distinct().count()
    assert used == 3


def test_bad_inputs_raise_the_packages_errors(spark):
    cql = "REGISTER STREAM s(k INT, v DOUBLE); REGISTER QUERY q AS SELECT k FROM s [Now];"
    df = spark.createDataFrame([(1, 2.0, 3)], "k long, v double, ts long")
    with pytest.raises(InputError, match="unknown stream 'nope'; registered streams: s"):
        run(spark, cql, inputs={"nope": df})
    with pytest.raises(InputError, match="missing column 'v' \\(DOUBLE\\); found columns: k, ts"):
        run(spark, cql, inputs={"s": df.select("k", "ts")})
    with pytest.raises(InputError, match="column 'k' must be BIGINT; found Spark type string"):
        run(spark, cql, inputs={"s": df.selectExpr("'x' AS k", "v", "ts")})
    with pytest.raises(InputError, match="missing timestamp column 'time'"):
        run(spark, cql, inputs={"s": df}, ts="time")
    with pytest.raises(CQLSemanticError, match="unknown stream"):
        run(spark, "REGISTER QUERY q AS SELECT * FROM s;", inputs={})
    with pytest.raises(cq_py.ArgumentError, match="maps stream names to DataFrames"):
        run(spark, cql, inputs=[df])
    with pytest.raises(cq_py.ArgumentError, match="partitions must be a positive integer"):
        run(spark, cql, inputs={"s": df}, partitions=0)
    with pytest.raises(cq_py.ArgumentError, match="hybrid must be True or False"):
        run(spark, cql, inputs={"s": df}, hybrid="no")


def test_no_inputs_gives_empty_results_with_the_declared_schema(spark):
    out = run(
        spark,
        "REGISTER STREAM s(k INT, v DOUBLE); REGISTER QUERY q AS ISTREAM(SELECT k FROM s [Now]);",
    )
    got = out["q"].toArrow()
    assert got.num_rows == 0
    assert got.schema.names == ["k", "ts"]


def test_double_keys_that_the_engine_equates_meet_in_one_partition(spark):
    # The engine joins and groups -0.0 with 0.0 and NaN with NaN; the partition hash must too.
    a = pa.table({"x": [0.0, float("nan"), -0.0, 1.5, 0.0], "ts": [0, 0, 1, 1, 2]})
    b = pa.table({"y": [-0.0, float("nan"), 0.0, 1.5], "ts": [2, 2, 3, 3]})
    cql = (
        "REGISTER STREAM a(x DOUBLE); REGISTER STREAM b(y DOUBLE);"
        "REGISTER QUERY j AS ISTREAM(SELECT x, y FROM a [Range 10], b [Now] WHERE a.x = b.y);"
        "REGISTER QUERY g AS SELECT x, COUNT(*) AS n FROM a GROUP BY x;"
    )
    local = cq_py.run(cql, inputs={"a": a, "b": b})
    out = run(
        spark,
        cql,
        inputs={"a": spark.createDataFrame(a), "b": spark.createDataFrame(b)},
        partitions=4,
    )

    def norm(t):
        return sorted(
            (tuple("NaN" if v != v else v for v in r.values()) for r in t.to_pylist()), key=repr
        )

    for q in ("j", "g"):
        assert norm(out[q].toArrow()) == norm(local[q]), q
    assert local["j"].num_rows == 8
