"""REGISTER TABLE and Engine.refresh_tables() (issue 31 item 3; cq_py/tables.py) against a real
SQLite file changed with the sqlite3 module, a real PostgreSQL server changed with psql, and DuckDB
when installed: INSERT, UPDATE and DELETE made by the database's own client show after
refresh_tables(), at the furthest tick reached."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import cq_py
from cq_py.tables import bag_difference
from cq_py.ticks import MIN_TICK

QUERIES = (
    "REGISTER STREAM s(k INT);"
    "REGISTER QUERY rel AS SELECT k, v FROM t;"
    "REGISTER QUERY hits AS ISTREAM(SELECT s.k, t.v FROM s [Now], t WHERE s.k = t.k);"
)


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _script(eng: cq_py.Engine, run: Callable[[str], None]) -> tuple[list, list]:
    """The same changes through the database's client, whatever the database."""
    eng.push("s", [{"k": 1, "ts": 5}, {"k": 2, "ts": 6}])
    run("INSERT INTO t VALUES (3, 'c')")
    eng.refresh_tables()  # at 6, the furthest tick
    eng.push("s", [{"k": 3, "ts": 10}])
    run("UPDATE t SET v = 'B' WHERE k = 2")
    eng.refresh_tables()  # at 10
    eng.push("s", [{"k": 2, "ts": 20}])
    run("DELETE FROM t WHERE k = 1")
    eng.advance(30)
    eng.refresh_tables()  # at 30
    eng.push("s", [{"k": 1, "ts": 31}, {"k": 2, "ts": 31}])
    eng.close()
    return _rows(eng.fetch("rel")), _rows(eng.fetch("hits"))


EXPECTED_REL = sorted(
    [
        (1, "a", MIN_TICK, 30),
        (2, "b", MIN_TICK, 10),
        (3, "c", 6, None),
        (2, "B", 10, None),
    ]
)
# An arrival at the tick of a refresh sees the change: the change comes in at that tick.
EXPECTED_HITS = sorted([(1, "a", 5), (2, "b", 6), (3, "c", 10), (2, "B", 20), (2, "B", 31)])


@pytest.fixture
def sqlite_table(tmp_path: Path) -> Path:
    path = tmp_path / "t.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE t (k INTEGER, v TEXT)")
        c.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        c.execute("CREATE TABLE other (k INTEGER, w TEXT)")
        c.execute("CREATE TABLE odd (k INTEGER, when_ DATE)")
    return path


def _sqlite(path: Path) -> Callable[[str], None]:
    def run(sql: str) -> None:
        with sqlite3.connect(path) as c:
            c.execute(sql)

    return run


@pytest.mark.parametrize("executor", ["dts", "heartbeat"])
@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_sqlite_changes_show_after_refresh(
    sqlite_table: Path, executor: str, lifetime: str
) -> None:
    eng = cq_py.Engine(executor=executor, lifetime=lifetime)
    eng.execute(f"REGISTER TABLE t FROM 'sqlite:///{sqlite_table}';" + QUERIES)
    assert eng.stream_schema("t").names == ["k", "v"]
    rel, hits = _script(eng, _sqlite(sqlite_table))
    assert rel == EXPECTED_REL
    assert hits == EXPECTED_HITS


def test_postgres_changes_made_with_psql_show_after_refresh(pg_server) -> None:
    pg_server.psql("DROP TABLE IF EXISTS t; CREATE TABLE t (k bigint, v text);")
    pg_server.psql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    eng = cq_py.Engine()
    eng.execute(f"REGISTER TABLE t FROM '{pg_server.url()}';" + QUERIES)
    rel, hits = _script(eng, pg_server.psql)
    assert rel == EXPECTED_REL
    assert hits == EXPECTED_HITS


def test_duckdb_changes_show_after_refresh(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    path = str(tmp_path / "t.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE t (k BIGINT, v VARCHAR); INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    con.close()

    def run(sql: str) -> None:
        c = duckdb.connect(path)
        c.execute(sql)
        c.close()

    eng = cq_py.Engine()
    eng.execute(f"REGISTER TABLE t FROM 'duckdb:///{path}';" + QUERIES)
    rel, hits = _script(eng, run)
    assert rel == EXPECTED_REL
    assert hits == EXPECTED_HITS


def test_a_second_name_shares_the_cached_copy(sqlite_table: Path) -> None:
    url = f"sqlite:///{sqlite_table}"
    eng = cq_py.Engine()
    eng.execute(
        f"REGISTER TABLE t FROM '{url}'; REGISTER TABLE t2 FROM '{url}' TABLE 't';"
        "REGISTER QUERY q AS SELECT t2.k FROM t2;"
    )
    eng.execute(f"REGISTER TABLE t3 FROM '{url}' TABLE 't'; REGISTER QUERY q3 AS SELECT k FROM t3;")
    assert eng.explain().count("RelationScan") == 1
    _sqlite(sqlite_table)("INSERT INTO t VALUES (9, 'z')")
    eng.advance(4)
    eng.refresh_tables()
    eng.close()
    assert (
        _rows(eng.fetch("q"))
        == _rows(eng.fetch("q3"))
        == [
            (1, MIN_TICK, None),
            (2, MIN_TICK, None),
            (9, 4, None),
        ]
    )


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("REGISTER TABLE x FROM 'sqlite:///{path}.none';", "the database does not open"),
        ("REGISTER TABLE x FROM 'sqlite:///{path}' TABLE 'nope';", "no table 'nope'"),
        (
            "REGISTER TABLE x FROM 'sqlite:///{path}' TABLE 'odd';",
            "table 'odd', column 'when_' has type 'DATE', which cq lacks",
        ),
        ("REGISTER TABLE x FROM 'mysql://h/d';", "expected sqlite:///..., postgresql://"),
    ],
)
def test_bad_tables_register_nothing(sqlite_table: Path, statement: str, message: str) -> None:
    eng = cq_py.Engine()
    eng.execute("REGISTER STREAM s(k INT);")
    with pytest.raises(cq_py.CQLSemanticError) as e:
        eng.execute(
            "REGISTER STREAM s2(k INT);"
            + statement.format(path=sqlite_table)
            + "REGISTER QUERY q AS SELECT k FROM s;"
        )
    assert message in str(e.value)
    assert "REGISTER TABLE x" in str(e.value)
    assert (eng.stream_names(), eng.query_names()) == (["s"], [])


def test_a_table_whose_queries_fail_to_plan_is_not_kept(sqlite_table: Path) -> None:
    eng = cq_py.Engine()
    with pytest.raises(cq_py.CQLSemanticError, match="unknown stream, relation or query 'nope'"):
        eng.execute(
            f"REGISTER TABLE t FROM 'sqlite:///{sqlite_table}';"
            "REGISTER QUERY q AS SELECT k FROM nope;"
        )
    assert eng.stream_names() == []
    eng.refresh_tables()  # nothing registered, nothing read


def test_a_database_error_in_refresh_applies_nothing(sqlite_table: Path) -> None:
    url = f"sqlite:///{sqlite_table}"
    eng = cq_py.Engine()
    eng.execute(
        f"REGISTER TABLE t FROM '{url}'; REGISTER TABLE other FROM '{url}';"
        "REGISTER STREAM s(k INT);"
        "REGISTER QUERY q AS SELECT k, v FROM t;"
    )
    run = _sqlite(sqlite_table)
    run("INSERT INTO t VALUES (5, 'e')")
    run("DROP TABLE cq_log_other")  # the change log of the second table is gone
    eng.advance(3)
    with pytest.raises(cq_py.InputError) as e:
        eng.refresh_tables()
    assert "table 'other'" in str(e.value)
    assert "nothing was applied" in str(e.value)
    # The engine goes on, and the first table's insert was not applied.
    eng.push("s", [{"k": 1, "ts": 4}])
    eng.close()
    assert _rows(eng.fetch("q")) == [(1, "a", MIN_TICK, None), (2, "b", MIN_TICK, None)]


def test_tables_are_fed_by_their_database_only(sqlite_table: Path) -> None:
    eng = cq_py.Engine()
    eng.execute(f"REGISTER TABLE t FROM 'sqlite:///{sqlite_table}';")
    with pytest.raises(cq_py.InputError, match="call refresh_tables"):
        eng.push("t", [{"k": 1, "v": "x", "ts": 1}])
    with pytest.raises(cq_py.InputError, match="call refresh_tables"):
        eng.push_row("t", 1, k=1, v="x")
    eng.close()
    with pytest.raises(cq_py.InputError, match="closed"):
        eng.refresh_tables()


def _checkpointed(eng: cq_py.Engine, run: Callable[[str], None]) -> tuple[list, list]:
    """_script's changes with a snapshot after the first refresh, the database changed between
    snapshot and restore, and the rest on the restored engine."""
    eng.push("s", [{"k": 1, "ts": 5}, {"k": 2, "ts": 6}])
    run("INSERT INTO t VALUES (3, 'c')")
    eng.refresh_tables()  # at 6
    blob = eng.snapshot()
    eng.close()
    # Made after the snapshot: the restored engine applies it at its next refresh (at 10), not
    # when it is restored; its cached copy is the snapshot's, not the table as it stands now.
    run("UPDATE t SET v = 'B' WHERE k = 2")
    again = cq_py.Engine.restore(blob)
    again.push("s", [{"k": 2, "ts": 7}, {"k": 3, "ts": 10}])
    again.refresh_tables()  # at 10
    again.push("s", [{"k": 2, "ts": 20}])
    run("DELETE FROM t WHERE k = 1")
    again.advance(30)
    again.refresh_tables()  # at 30
    again.push("s", [{"k": 1, "ts": 31}, {"k": 2, "ts": 31}])
    again.close()
    return _rows(again.fetch("rel")), _rows(again.fetch("hits"))


@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_a_snapshot_carries_the_cached_copy_and_the_change_log_position(
    sqlite_table: Path, lifetime: str
) -> None:
    eng = cq_py.Engine(lifetime=lifetime)
    eng.execute(f"REGISTER TABLE t FROM 'sqlite:///{sqlite_table}';" + QUERIES)
    rel, hits = _checkpointed(eng, _sqlite(sqlite_table))
    assert rel == EXPECTED_REL
    # (hits were fetched from the restored engine: all of them, none fetched before.)
    assert hits == sorted([*EXPECTED_HITS, (2, "b", 7)])


def test_postgres_a_snapshot_carries_the_change_log_position(pg_server) -> None:
    pg_server.psql("DROP TABLE IF EXISTS t; CREATE TABLE t (k bigint, v text);")
    pg_server.psql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    eng = cq_py.Engine()
    eng.execute(f"REGISTER TABLE t FROM '{pg_server.url()}';" + QUERIES)
    rel, hits = _checkpointed(eng, pg_server.psql)
    assert rel == EXPECTED_REL
    assert hits == sorted([*EXPECTED_HITS, (2, "b", 7)])


def test_a_snapshot_of_a_table_pushed_down_keeps_its_filtered_copy(sqlite_table: Path) -> None:
    url = f"sqlite:///{sqlite_table}"
    eng = cq_py.Engine()
    eng.execute(
        f"REGISTER TABLE t FROM '{url}'; REGISTER QUERY big AS SELECT k, v FROM t WHERE k > 1;"
    )
    blob = eng.snapshot()
    _sqlite(sqlite_table)("INSERT INTO t VALUES (4, 'd'), (0, 'z')")
    again = cq_py.Engine.restore(blob)
    assert again.explain() == eng.explain()
    again.advance(3)
    again.refresh_tables()
    again.close()
    assert _rows(again.fetch("big")) == [(2, "b", MIN_TICK, None), (4, "d", 3, None)]


def test_a_closed_engines_snapshot_restores_closed(sqlite_table: Path) -> None:
    eng = cq_py.Engine()
    eng.execute(f"REGISTER TABLE t FROM 'sqlite:///{sqlite_table}';" + QUERIES)
    eng.push("s", [{"k": 2, "ts": 4}])
    eng.close()
    again = cq_py.Engine.restore(eng.snapshot())
    with pytest.raises(cq_py.InputError, match="closed"):
        again.refresh_tables()
    assert _rows(again.fetch("hits")) == [(2, "b", 4)]


@pytest.mark.parametrize("where", ["", " AND t.k > 1"])  # the latter goes to the database
def test_master_over_a_table_under_negative_names_the_table(sqlite_table: Path, where) -> None:
    eng = cq_py.Engine(lifetime="negative")
    with pytest.raises(cq_py.CQLSemanticError, match="MASTER over the relation 't' needs"):
        eng.execute(
            f"REGISTER TABLE t FROM 'sqlite:///{sqlite_table}'; REGISTER STREAM s(k INT);"
            "REGISTER QUERY q AS MASTER s SELECT s.k, t.v FROM s [Now], t WHERE s.k = t.k" + where
        )
    assert eng.query_names() == []
    assert eng.stream_names() == []


def test_bag_difference_counts_copies() -> None:
    old = pa.table({"a": [1, 1, 1, None, 2], "b": ["x", "x", "y", None, "z"]})
    new = pa.table({"a": [1, None, None, 3], "b": ["x", None, None, "w"]})
    deleted, inserted = bag_difference(old, new)
    assert _rows(deleted) == sorted([(1, "x"), (1, "y"), (2, "z")])
    assert Counter(tuple(r.values()) for r in inserted.to_pylist()) == Counter(
        [(None, None), (3, "w")]
    )


def test_a_master_query_reads_a_table_changed_mid_run(sqlite_table: Path) -> None:
    eng = cq_py.Engine()
    eng.execute(
        f"REGISTER TABLE t FROM 'sqlite:///{sqlite_table}'; REGISTER STREAM s(k INT);"
        "REGISTER CLOCK c EVERY 10;"
        "REGISTER QUERY on_s AS MASTER s SELECT s.k, t.v FROM s [now], t WHERE s.k = t.k;"
        "REGISTER QUERY on_c AS MASTER c SELECT k, v FROM t;"
    )
    eng.push("s", [{"k": 1, "ts": 5}])
    _sqlite(sqlite_table)("UPDATE t SET v = 'A' WHERE k = 1")
    eng.refresh_tables()  # at 5: (1, 'a') ends, (1, 'A') starts
    eng.push("s", [{"k": 1, "ts": 8}, {"k": 1, "ts": 12}])
    eng.close()
    # s at 5 saw the update (it came at 5, before the run at 5); so did 8 and 12.
    assert _rows(eng.fetch("on_s")) == [(1, "A", 5), (1, "A", 8), (1, "A", 12)]
    # The clock at 0 emits the table whole; at 10, what started since: the update's row.
    assert _rows(eng.fetch("on_c")) == [(1, "A", 10), (1, "a", 0), (2, "b", 0)]


def test_postgres_an_insert_committed_after_a_later_one_is_not_lost(pg_server) -> None:
    # PostgreSQL numbers the change log from a sequence when a row is written, not when its
    # transaction commits: a slow writer's entry can be committed after a higher one was read.
    import psycopg

    pg_server.psql("DROP TABLE IF EXISTS late; CREATE TABLE late (k bigint);")
    eng = cq_py.Engine()
    eng.execute(
        f"REGISTER TABLE late FROM '{pg_server.url()}'; REGISTER QUERY rel AS SELECT k FROM late;"
    )
    slow = psycopg.connect(pg_server.url())  # a transaction left open
    slow.execute("INSERT INTO late VALUES (1)")
    pg_server.psql("INSERT INTO late VALUES (2)")  # a later id, committed first
    eng.advance(5)
    eng.refresh_tables()
    slow.commit()
    slow.close()
    eng.advance(10)
    eng.refresh_tables()
    eng.advance(20)
    eng.refresh_tables()  # nothing twice
    eng.close()
    assert _rows(eng.fetch("rel")) == [(1, 10, None), (2, 5, None)]


def test_postgres_concurrent_writers_lose_and_repeat_no_insert(pg_server) -> None:
    # Writers on their own connections hold their transactions open for random spells while
    # the engine refreshes: every key must arrive exactly once, whatever the commit order.
    import random
    import threading

    import psycopg

    pg_server.psql("DROP TABLE IF EXISTS busy; CREATE TABLE busy (k bigint);")
    eng = cq_py.Engine()
    eng.execute(
        f"REGISTER TABLE busy FROM '{pg_server.url()}'; REGISTER QUERY rel AS SELECT k FROM busy;"
    )

    def writer(w: int) -> None:
        rng = random.Random(w)
        with psycopg.connect(pg_server.url()) as conn:
            for i in range(15):
                conn.execute("INSERT INTO busy VALUES (%s)", (w * 100 + i,))
                time.sleep(rng.random() * 0.01)
                conn.commit()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    tick = 0
    while any(t.is_alive() for t in threads):
        tick += 1
        eng.advance(tick)
        eng.refresh_tables()
    for t in threads:
        t.join()
    eng.advance(tick + 1)
    eng.refresh_tables()
    eng.close()
    keys = [k for k, _, _ in _rows(eng.fetch("rel"))]
    assert keys == sorted(w * 100 + i for w in range(4) for i in range(15))
