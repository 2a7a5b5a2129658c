"""MASTER queries over a database table changed mid-run (paper 001 §3.2, §4.4, §4.6): with the
table in SQLite, changed through sqlite3 and applied by ``refresh_tables()``, every query's rows
equal those with the optimizer off (``mqo=False``) and the literal evaluator of issue 31's
semantics (tests/oracle/master.py), queries registered before the rows or at random points,
under both executors."""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.master import INF, instants, master, relation, stream_lifetimes
from planner.test_master_sharing import masters_rows, relation_rows, stream_rows

CLOCKS = {"c1": (3, 1)}
WINDOWS = {"now": "[Now]", None: "", 2: "[Range 2]", 3: "[Range 3]", 4: "[4]", 6: "[6]"}


def _setup(path: Path) -> str:
    return (
        "REGISTER STREAM a(k INT, v INT); REGISTER STREAM m(x INT);"
        f"REGISTER CLOCK c1 EVERY 3 OFFSET 1; REGISTER TABLE r FROM 'sqlite:///{path}';"
    )


def _cql(name: str, q) -> str:
    masters, join, wa, threshold, _ = q
    if join:
        return (
            f"REGISTER QUERY {name} AS MASTER {', '.join(masters)} SELECT a.v AS c0, r.z AS c1 "
            f"FROM a {WINDOWS[wa]}, r WHERE a.k = r.k AND a.v >= {threshold};"
        )
    return (
        f"REGISTER QUERY {name} AS MASTER {', '.join(masters)} SELECT a.v AS c0 "
        f"FROM a {WINDOWS[wa]} WHERE a.v >= {threshold};"
    )


def _changes(rel):
    out = [(t, "+", k, z) for t, (k, z), _ in rel] + [
        (d, "-", k, z) for _, (k, z), d in rel if d is not None
    ]
    return sorted(out, key=lambda c: (c[0], c[1] == "+"))


def _run(path: Path, executor: str, streams, queries, mqo: bool):
    with sqlite3.connect(path) as c:
        c.execute("DROP TABLE IF EXISTS r")
        c.execute("DROP TABLE IF EXISTS cq_log_r")
        c.execute("CREATE TABLE r (k INTEGER, z INTEGER)")
    eng = cq_py.Engine(executor=executor, threads=1, mqo=mqo, log_period=0.003)
    eng.execute(_setup(path))
    events = sorted(
        [(t, 0, name, vals) for name in ("a", "m") for t, vals in streams[name]]
        + [(t, 1, "r", (op, k, z)) for t, op, k, z in _changes(streams["r"])],
        key=lambda e: (e[0], e[1], e[2]),
    )
    todo = sorted(range(len(queries)), key=lambda k: -1 if queries[k][4] is None else queries[k][4])

    def register_upto(t):
        while todo and (queries[todo[0]][4] is None or queries[todo[0]][4] <= t):
            k = todo.pop(0)
            if queries[k][4] is not None:
                eng.advance(queries[k][4])
            eng.execute(_cql(f"q{k}", queries[k]))

    for t, _, name, vals in events:
        register_upto(t)
        if name == "r":
            op, k, z = vals
            eng.advance(t)
            with sqlite3.connect(path) as c:
                if op == "+":
                    c.execute("INSERT INTO r VALUES (?, ?)", (k, z))
                else:
                    c.execute(
                        "DELETE FROM r WHERE rowid = "
                        "(SELECT rowid FROM r WHERE k = ? AND z = ? LIMIT 1)",
                        (k, z),
                    )
            eng.refresh_tables()
        else:
            cols = ("k", "v") if name == "a" else ("x",)
            eng.push(name, [{**dict(zip(cols, vals, strict=True)), "ts": t}])
    register_upto(2**40)
    eng.close()
    return [
        Counter((r.pop("ts"), tuple(r.values())) for r in eng.fetch(f"q{k}").to_pylist())
        for k in range(len(queries))
    ]


def _expected(streams, queries, k):
    masters, join, wa, threshold, at = queries[k]
    times = [t for name in ("a", "m") for t, _ in streams[name]]
    times += [c[0] for c in _changes(streams["r"])]
    final = max(times + [q[4] for q in queries if q[4] is not None] + [-(2**62)])
    p = (at, 0) if at is not None else (-math.inf, 0)
    rel = [
        (max((t, 0), p), (d, 0) if d is not None else INF, (kk, z))
        for t, (kk, z), d in streams["r"]
    ]
    rel = [x for x in rel if x[0] < x[1]]
    lives = stream_lifetimes(streams["a"], wa, at)
    if join:
        r = relation(
            [lives, rel],
            lambda v: v[0][0] == v[1][0] and v[0][1] >= threshold,
            lambda v: (v[0][1], v[1][1]),
        )
    else:
        r = relation([lives], lambda v: v[0][1] >= threshold, lambda v: (v[0][1],))
    return master(r, instants(list(masters), streams, CLOCKS, at, final))


query = st.tuples(
    st.sampled_from([("m",), ("c1",), ("a",), ("c1", "m")]),
    st.sampled_from([0, 1, 1]),
    st.one_of(st.sampled_from([3, 4, 6]), st.sampled_from(list(WINDOWS))),
    st.integers(0, 30),
    st.one_of(st.none(), st.integers(0, 13)),
)


@pytest.mark.parametrize("executor", ["dts", "heartbeat"])
@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    a=stream_rows, m=masters_rows, r=relation_rows, queries=st.lists(query, min_size=2, max_size=4)
)
def test_a_table_changed_mid_run_gives_each_query_its_own_rows(
    tmp_path_factory, executor, a, m, r, queries
) -> None:
    path = tmp_path_factory.mktemp("mt") / "r.db"
    streams = {"a": a, "m": m, "r": r}
    shared = _run(path, executor, streams, queries, True)
    alone = _run(path, executor, streams, queries, False)
    for k in range(len(queries)):
        expected = _expected(streams, queries, k)
        assert alone[k] == expected, k
        assert shared[k] == expected, k


def test_rows_inserted_and_deleted_mid_run_reach_the_shared_queries(tmp_path: Path) -> None:
    streams = {
        "a": [(1, (1, 10)), (2, (2, 20)), (5, (1, 30)), (9, (1, 40))],
        "m": [(3, (0,)), (6, (0,)), (10, (0,))],
        # (insert time, (k, z), delete time): k=1 from 2 to 8, k=2 from 4 on, k=1 again from 9.
        "r": [(2, (1, 7), 8), (4, (2, 8), None), (9, (1, 9), None)],
    }
    queries = [
        (("m",), 1, 4, 0, None),
        (("m",), 1, 3, 15, None),  # one base group with the first: one shared join
        (("m",), 1, 6, 0, 5),  # registered at 5: the table whole, a's rows from 5 on
    ]
    for executor in ("dts", "heartbeat"):
        shared = _run(tmp_path / "r.db", executor, streams, queries, True)
        alone = _run(tmp_path / "r.db", executor, streams, queries, False)
        for k in range(len(queries)):
            assert shared[k] == alone[k] == _expected(streams, queries, k), (executor, k)
        # At 6, a@2 (k 2) and r's k 2 (from 4) met at 4 but a@2 left at 6: not alive then.
        assert shared[0] == Counter({(3, (10, 7)): 1, (6, (30, 7)): 1, (10, (40, 9)): 1})
        assert sum(shared[2].values()) > 0
