"""A resource read from a database table (``REGISTER RESOURCE ... FROM 'url' TABLE 't'``;
cq_py.resources.DatabaseResource over cq_py/io/databases.py, wrapped by the binding's PyResource):
the reference join over SQLite and PostgreSQL tables gives what it gives over the in-process store
holding the same rows, each read logs the table's last-update stamp, and changes committed by
another connection between pushes show in later rows (checked against the oracle frozen at the
table's content per logged stamp)."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import cq_py
from cq_py import CQLSemanticError
from cq_py.resources import ResourceStore, install_versioning
from oracle.reference import Col, frozen_resource, istream, reference_join, relation

QUERY = (
    "REGISTER STREAM s(k BIGINT, a BIGINT);"
    "REGISTER QUERY q AS ISTREAM(SELECT s.a, x.v, x.name FROM s [Range 4], x "
    "WHERE s.k = x.id AND x.v < 3.0);"
)
ROWS = [{"id": i, "v": 0.5 * i, "name": f"n{i}"} for i in range(10)]


def stream(seed: int, n: int, t0: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out, t = [], t0
    for i in range(n):
        t += rng.choice([0, 1, 2])
        out.append({"k": rng.randint(0, 12), "a": i, "ts": t})
    return out


def resource_sql(url: str | None, access: str) -> str:
    where = f" FROM '{url}' TABLE 'things'" if url else ""
    return (
        f"REGISTER RESOURCE x (id BIGINT, v DOUBLE, name VARCHAR) KEY (id){where} ACCESS {access};"
    )


def engine(url: str | None, access: str, store: ResourceStore | None = None) -> cq_py.Engine:
    eng = cq_py.Engine(executor="scheduled", threads=1, resources=store)
    eng.execute(resource_sql(url, access) + QUERY)
    return eng


def got(eng: cq_py.Engine) -> Counter:
    return Counter(((r["a"], r["v"], r["name"]), (r["ts"], 0)) for r in eng.fetch("q").to_pylist())


def oracle(rows: list[dict], version_at) -> Counter:
    left = relation(rows, ("range", 4), None, [Col("a", "int"), Col("k", "int")])
    joined = reference_join(left, version_at, lambda lv, rv: lv[1] == rv[0] and rv[1] < 3.0)
    return istream([((a, v, name), s, e) for (a, _, _, v, name), s, e in joined])


def sqlite_table(path: Path, rows: list[dict]) -> str:
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE things (id INTEGER, v REAL, name TEXT)")
        c.executemany("INSERT INTO things VALUES (:id, :v, :name)", rows)
    return f"sqlite:///{path}"


@pytest.mark.parametrize("access", ["KEY", "SCAN"])
def test_a_sqlite_table_joins_as_the_store_holding_its_rows(tmp_path: Path, access: str) -> None:
    url = sqlite_table(tmp_path / "r.db", ROWS)
    store = ResourceStore()
    store.load("x", ROWS, key=["id"])
    rows = stream(1, 40)
    results = []
    for eng in (engine(url, access), engine(None, access, store)):
        eng.push("s", rows)
        eng.close()
        results.append(got(eng))
    assert (
        results[0]
        == results[1]
        == oracle(rows, lambda _, s: frozen_resource(ROWS, ["id", "v", "name"]))
    )
    assert results[0]  # (rows matched)


def test_sqlite_changes_between_pushes_show_with_their_stamps(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    url = sqlite_table(path, ROWS)
    install_versioning(url, ["things"])
    eng = engine(url, "KEY")
    pushes: list[list[dict]] = []
    rng = random.Random(7)
    for k in range(4):
        pushes.append(stream(k, 10, pushes[-1][-1]["ts"] + 1 if pushes else 0))
        eng.push("s", pushes[-1])
        with sqlite3.connect(path) as c:  # another connection, committed
            c.execute(
                "UPDATE things SET v = ? WHERE id = ?", (rng.choice([0.0, 9.0]), rng.randint(0, 6))
            )
            c.execute("DELETE FROM things WHERE id = ?", (rng.randint(0, 9),))
    eng.close()
    log = eng.read_log().to_pylist()
    assert len(log) == sum(map(len, pushes))
    stamps = [e["version"] for e in log]
    assert stamps == sorted(stamps)
    assert len(set(stamps)) == 4  # one per push: a commit came between each two
    # The table as each stamp saw it, replayed: the same changes, from the same seed.
    rng = random.Random(7)
    table = {r["id"]: dict(r) for r in ROWS}
    by_stamp = {}
    for k in range(4):
        by_stamp[sorted(set(stamps))[k]] = frozen_resource(
            list(table.values()), ["id", "v", "name"]
        )
        v, i = rng.choice([0.0, 9.0]), rng.randint(0, 6)
        if i in table:
            table[i]["v"] = v
        table.pop(rng.randint(0, 9), None)
    stamp_at = {(e["instant"], 0): e["version"] for e in log}
    rows = [r for p in pushes for r in p]
    assert got(eng) == oracle(rows, lambda _, s: by_stamp[stamp_at[s]])


def test_postgres_table_joins_as_the_store_holding_its_rows(pg_server) -> None:
    pg_server.psql(
        "DROP TABLE IF EXISTS things;"
        "CREATE TABLE things (id bigint, v double precision, name text);"
        + "".join(f"INSERT INTO things VALUES ({r['id']}, {r['v']}, '{r['name']}');" for r in ROWS)
    )
    install_versioning(pg_server.url(), ["things"])
    rows = stream(3, 30)
    eng = engine(pg_server.url(), "KEY")
    eng.push("s", rows)
    eng.close()
    assert got(eng) == oracle(rows, lambda _, s: frozen_resource(ROWS, ["id", "v", "name"]))
    assert len(set(eng.read_log()["version"].to_pylist())) == 1


@pytest.mark.parametrize(
    ("ddl", "message"),
    [
        ("CREATE TABLE others (id INTEGER)", "no table 'things'"),
        (
            "CREATE TABLE things (id INTEGER, v TEXT, name TEXT)",
            "table 'things' has no column v DOUBLE",
        ),
    ],
)
def test_a_table_unlike_the_declaration_is_refused(tmp_path: Path, ddl: str, message: str) -> None:
    path = tmp_path / "r.db"
    with sqlite3.connect(path) as c:
        c.execute(ddl)
    eng = cq_py.Engine(executor="scheduled", threads=1)
    with pytest.raises(CQLSemanticError, match=message):
        eng.execute(resource_sql(f"sqlite:///{path}", "KEY") + QUERY)
    assert eng.query_names() == []


def test_a_database_error_during_a_read_is_a_resource_error(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    url = sqlite_table(path, ROWS)
    eng = engine(url, "KEY")
    with sqlite3.connect(path) as c:
        c.execute("DROP TABLE things")
    with pytest.raises(cq_py.ResourceError, match=r"resource table 'things'.*no such table"):
        eng.push("s", pa.Table.from_pylist([{"k": 1, "a": 0, "ts": 0}]))
    # The engine stopped there; it says so as a package error (it used to say "cq internal
    # error (please report)").
    with pytest.raises(cq_py.InputError, match=r"stopped at an earlier error .*ResourceError"):
        eng.push("s", pa.Table.from_pylist([{"k": 1, "a": 1, "ts": 1}]))


def test_a_duckdb_table_joins_as_the_store_holding_its_rows(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "r.duckdb"
    with duckdb.connect(str(path)) as c:
        c.execute("CREATE TABLE things (id BIGINT, v DOUBLE, name VARCHAR)")
        c.executemany("INSERT INTO things VALUES (?, ?, ?)", [tuple(r.values()) for r in ROWS])
    rows = stream(4, 30)
    eng = engine(f"duckdb:///{path}", "KEY")
    eng.push("s", rows)
    eng.close()
    assert got(eng) == oracle(rows, lambda _, s: frozen_resource(ROWS, ["id", "v", "name"]))
    # DuckDB has no triggers, so no last-update stamps: every read logs stamp 0.
    assert set(eng.read_log()["version"].to_pylist()) == {0}


def test_a_key_of_two_columns_looks_up_both_in_sqlite_and_the_store(tmp_path: Path) -> None:
    content = [{"a": a, "b": b, "w": f"{a}/{b}"} for a in range(3) for b in ("p", "q")]
    path = tmp_path / "r.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE pairs (a INTEGER, b TEXT, w TEXT)")
        c.executemany("INSERT INTO pairs VALUES (:a, :b, :w)", content)
    store = ResourceStore()
    store.load("y", content, key=["a", "b"])
    rng = random.Random(3)
    rows = [
        {"k": rng.randint(0, 3), "s": rng.choice(["p", "q", "r", None]), "ts": t} for t in range(40)
    ]
    results = []
    for where in (f" FROM 'sqlite:///{path}' TABLE 'pairs'", ""):
        eng = cq_py.Engine(executor="scheduled", threads=1, resources=store)
        eng.execute(
            "REGISTER STREAM t(k BIGINT, s VARCHAR);"
            f"REGISTER RESOURCE y (a BIGINT, b VARCHAR, w VARCHAR) KEY (a, b){where};"
            "REGISTER QUERY q AS ISTREAM(SELECT t.k, y.w FROM t [Now], y "
            "WHERE y.b = t.s AND t.k = y.a);"
        )
        eng.push("t", rows)
        eng.close()
        results.append(Counter((r["k"], r["w"], r["ts"]) for r in eng.fetch("q").to_pylist()))
    want = Counter(
        (r["k"], f"{r['k']}/{r['s']}", r["ts"]) for r in rows if r["k"] < 3 and r["s"] in ("p", "q")
    )
    assert results[0] == results[1] == want


def test_a_snapshot_copy_with_two_rows_of_one_key_is_an_input_error_naming_the_resource(
    tmp_path: Path,
) -> None:
    # The copy's lookups match probes with the core's KeyIndex, which refuses the copy at the
    # first lookup as the core refuses any lookup's rows: naming the resource, not the table.
    url = sqlite_table(tmp_path / "r.db", [*ROWS, ROWS[2]])
    eng = cq_py.Engine(executor="scheduled", threads=1, txn="snapshot")
    eng.execute(resource_sql(url, "KEY") + QUERY)
    with pytest.raises(cq_py.InputError, match=r"resource 'x' returned two rows with one key"):
        eng.push("s", pa.Table.from_pylist([{"k": 1, "a": 0, "ts": 1}]))
