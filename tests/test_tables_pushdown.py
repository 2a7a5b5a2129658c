"""Filters on database tables sent to the database (cq_py/tables.py, Views.push_down; paper 001
§4.6): every query gives the same rows as the same engine keeping the filters itself, for
generated predicates and data (NULLs, text differing only in case, a column that folds case in
SQLite), with the table changed mid-run through sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py

KEYS = st.integers(-2, 3)
TEXTS = st.sampled_from(["a", "A", "b", "it's", None])
ROWS = st.lists(
    st.tuples(st.one_of(st.none(), KEYS), TEXTS, st.sampled_from([0, 1, None])), max_size=8
)


@st.composite
def predicates(draw, depth: int = 2) -> str:
    atoms = [
        st.builds(
            lambda op, v: f"t.k {op} {v}", st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), KEYS
        ),
        st.builds(
            lambda op, v: f"t.s {op} '{v}'",
            st.sampled_from(["=", "<>"]),
            st.sampled_from(["a", "A", "b"]),
        ),
        st.builds(lambda v: f"t.s = '{v}'", st.just("it''s")),
        st.sampled_from(["t.b = TRUE", "t.b <> FALSE", "t.k IS NULL", "t.s IS NOT NULL"]),
        st.builds(
            lambda lo, hi, neg: f"t.k {'NOT ' if neg else ''}BETWEEN {lo} AND {hi}",
            KEYS,
            KEYS,
            st.booleans(),
        ),
        st.builds(
            lambda vs, neg: f"t.k {'NOT ' if neg else ''}IN ({', '.join(map(str, vs))})",
            st.lists(KEYS, min_size=1, max_size=3),
            st.booleans(),
        ),
        st.builds(lambda neg: f"t.s {'NOT ' if neg else ''}IN ('a', 'B')", st.booleans()),
        st.just("t.k + 1 > 1"),  # arithmetic: stays in the engine
        st.just("t.s < 'b'"),  # text order: stays in the engine
    ]
    if depth == 0:
        return draw(st.one_of(atoms))
    kind = draw(st.sampled_from(["atom", "and", "or", "not"]))
    if kind == "atom":
        return draw(st.one_of(atoms))
    if kind == "not":
        return f"NOT ({draw(predicates(depth - 1))})"
    op = "AND" if kind == "and" else "OR"
    return f"({draw(predicates(depth - 1))}) {op} ({draw(predicates(depth - 1))})"


def _engine(path: Path, pred: str, push: bool) -> cq_py.Engine:
    eng = cq_py.Engine()
    if not push:
        eng._tables.push_down = lambda script, new: (script, [])  # the filters stay in cq
    eng.execute(
        f"REGISTER TABLE t FROM 'sqlite:///{path}'; REGISTER STREAM e(k INT);"
        f"REGISTER QUERY rel AS SELECT t.k, t.s, t.b FROM t WHERE {pred};"
        f"REGISTER QUERY hits AS ISTREAM(SELECT e.k, t.s FROM e [Now], t "
        f"WHERE e.k = t.k AND {pred});"
        f"REGISTER QUERY m AS MASTER e SELECT t.s FROM e [Now], t WHERE e.k = t.k AND {pred};"
    )
    return eng


def _rows(eng: cq_py.Engine, q: str) -> list[tuple]:
    return sorted((tuple(r.values()) for r in eng.fetch(q).to_pylist()), key=repr)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=ROWS,
    later=ROWS,
    pred=predicates(),
    nocase=st.booleans(),
    change=st.sampled_from(
        [
            "UPDATE t SET k = k + 1 WHERE s = 'a'",
            "DELETE FROM t WHERE k > 0",
            "UPDATE t SET s = 'A'",
        ]
    ),
)
def test_pushed_filters_give_the_rows_of_filters_kept_in_cq(
    tmp_path_factory, rows, later, pred, nocase, change
) -> None:
    path = tmp_path_factory.mktemp("push") / "t.db"
    with sqlite3.connect(path) as c:
        c.execute(
            f"CREATE TABLE t (k INTEGER, s TEXT{' COLLATE NOCASE' if nocase else ''}, b BOOLEAN)"
        )
        c.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    pushed, kept = _engine(path, pred, True), _engine(path, pred, False)
    arrivals = [{"k": k, "ts": ts} for ts, k in enumerate([0, 1, 2, 3, -1, None], 1)]
    for eng in (pushed, kept):
        eng.push("e", arrivals)
    with sqlite3.connect(path) as c:
        c.executemany("INSERT INTO t VALUES (?, ?, ?)", later)
        c.execute(change)
    for eng in (pushed, kept):
        eng.refresh_tables()
        eng.push("e", [{"k": k, "ts": ts} for ts, k in enumerate([0, 1, 2, 3, -1], 10)])
        eng.close()
    for q in ("rel", "hits", "m"):
        assert _rows(pushed, q) == _rows(kept, q), q
    # Every atom but the two kept in cq is sent: so is the whole predicate without them.
    if "t.k + 1" not in pred and "t.s < 'b'" not in pred:
        assert " WHERE (" in pushed.explain()
        assert " WHERE (" not in kept.explain()


def test_a_pushed_filter_shows_in_explain_and_runs_in_the_database(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE t (k INTEGER, s TEXT, b BOOLEAN)")
        c.executemany("INSERT INTO t VALUES (?, ?, ?)", [(1, "a", 1), (5, "b", 0)])
    eng = _engine(path, "t.k > 2 AND t.s < 'z'", True)
    text = eng.explain()
    assert 'SELECT "k", "s", "b" FROM "t" WHERE ("k" > 2)' in text
    # Equal SQL texts share one cached copy: the three queries read one view.
    assert text.count('WHERE ("k" > 2)') == 1
    eng.close()
    assert _rows(eng, "rel") == [(5, "b", False, -(2**63 - 1), None)]


def test_postgres_runs_the_pushed_filters_as_cq_does(pg_server) -> None:
    pg_server.psql(
        "DROP TABLE IF EXISTS pushed; CREATE TABLE pushed (k bigint, s text, b boolean);"
        "INSERT INTO pushed VALUES (1, 'a', true), (2, 'A', false), (NULL, 'b', NULL), "
        "(3, NULL, true), (0, 'it''s', false)"
    )
    url = pg_server.url()
    for pred in [
        "t.s = 'a'",
        "t.s <> 'a' OR t.k IS NULL",
        "NOT (t.k IN (1, 2)) AND t.b = TRUE",
        "t.s IN ('A', 'it''s') OR t.k BETWEEN 2 AND 3",
    ]:
        results = []
        for push in (True, False):
            eng = cq_py.Engine()
            if not push:
                eng._tables.push_down = lambda script, new: (script, [])
            eng.execute(
                f"REGISTER TABLE t FROM '{url}' TABLE 'pushed';"
                f"REGISTER QUERY rel AS SELECT t.k, t.s FROM t WHERE {pred};"
            )
            assert (" WHERE (" in eng.explain()) == push
            pg_server.psql("UPDATE pushed SET s = s WHERE k = 1")  # a change to refresh
            eng.refresh_tables()
            eng.close()
            results.append(_rows(eng, "rel"))
        assert results[0] == results[1], pred


@pytest.mark.parametrize("pred", ["t.k + 1 > 1", "t.s < 'b'", "t.k > 1.5"])
def test_filters_that_may_differ_in_sql_stay_in_cq(tmp_path: Path, pred: str) -> None:
    path = tmp_path / "t.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE t (k INTEGER, s TEXT, b BOOLEAN)")
    eng = _engine(path, pred, True)
    assert "WHERE (" not in eng.explain()
