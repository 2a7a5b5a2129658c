"""Registering paper 001 §5's queries one ``execute`` each (issue 31, 4g: 500 in at most 10 s).

The queries are §5's shape: MASTER drawn from Access, Status and six clocks (Table 2), Access and
Status windows drawn from 1, 5, 30, 60 s, the URLs table (a SQLite file, 510 rows) unbounded, a
random projection, and ``Status.Load > c`` in 388 of every 500. CQ_BENCH_QUERIES sets how many
(default 500; 50 when the benchmark is disabled, as in CI). The baseline registers the same
queries as one script. Each run checks that every query is registered and that one of them,
fed a burst of rows, the last three give what they give registered without the others.
"""

from __future__ import annotations

import os
import random
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest

import cq_py

QUERIES = int(os.environ.get("CQ_BENCH_QUERIES", "500"))
# Paper 001 §5's streams, table, clocks and masters, as its reproduction declares them.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "papers" / "001"))
from workload import MASTERS, setup_script  # noqa: E402

COLUMNS = ["access.ip", "access.location", "status.load", "urls.title", "urls.size", "status.host"]
WINDOWS = ["[Range 1 SECONDS]", "[Range 5 SECONDS]", "[Range 30 SECONDS]", "[Range 60 SECONDS]"]


def queries(n: int, seed: int = 1) -> list[str]:
    """``n`` REGISTER QUERY statements of §5's shape."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        proj = ", ".join(rnd.sample(COLUMNS, rnd.randint(1, len(COLUMNS))))
        load = f" AND status.load > {rnd.randint(0, 99) / 100}" if i % 500 < 388 else ""
        out.append(
            f"REGISTER QUERY q{i} AS MASTER {rnd.choice(MASTERS)} SELECT {proj} "
            f"FROM access {rnd.choice(WINDOWS)}, status {rnd.choice(WINDOWS)}, urls "
            f"WHERE access.location = urls.location AND access.host = status.host{load};"
        )
    return out


@pytest.fixture(scope="module")
def urls_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("registration") / "urls.sqlite"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE urls(location TEXT, title TEXT, size INTEGER)")
        c.executemany(
            "INSERT INTO urls VALUES (?, ?, ?)", [(f"/p{i}", f"t{i}", i) for i in range(510)]
        )
    return db


def burst(eng: cq_py.Engine) -> None:
    for t in range(0, 120_000, 2_500):
        eng.push("status", [{"host": f"h{t % 3}", "load": (t % 97) / 97, "ts": t}])
        eng.push(
            "access", [{"ip": "10.0.0.1", "location": f"/p{t % 510}", "host": f"h{t % 3}", "ts": t}]
        )
    eng.close()


def output(eng: cq_py.Engine, query: str) -> Counter:
    return Counter(tuple(r.values()) for r in eng.fetch(query).to_pylist())


def check(eng: cq_py.Engine, db: Path, statements: list[str]) -> None:
    assert len(eng.query_names()) == len(statements)
    burst(eng)
    # The last three queries registered without the others give the same rows.
    alone = cq_py.Engine(threads=1)
    alone.execute(setup_script(db) + "".join(statements[-3:]))
    burst(alone)
    names = alone.query_names()
    want = [output(alone, q) for q in names]  # (fetch drains: read once)
    assert [output(eng, q) for q in names] == want
    assert sum(sum(w.values()) for w in want) > 0


def register(db: Path, statements: list[str], one_script: bool) -> cq_py.Engine:
    eng = cq_py.Engine(threads=1)
    eng.execute(setup_script(db))
    if one_script:
        eng.execute("".join(statements))
    else:
        for s in statements:
            eng.execute(s)
    return eng


def _size(benchmark) -> int:
    n = 50 if benchmark.disabled and "CQ_BENCH_QUERIES" not in os.environ else QUERIES
    benchmark.extra_info["queries"] = n
    return n


@pytest.mark.benchmark(group="registration", min_rounds=1, warmup=False)
def test_register_one_execute_each(benchmark, urls_db):
    statements = queries(_size(benchmark))
    eng = benchmark.pedantic(register, args=(urls_db, statements, False), rounds=1, iterations=1)
    check(eng, urls_db, statements)


@pytest.mark.benchmark(group="registration", min_rounds=1, warmup=False)
def test_register_as_one_script(benchmark, urls_db):
    statements = queries(_size(benchmark))
    eng = benchmark.pedantic(register, args=(urls_db, statements, True), rounds=1, iterations=1)
    check(eng, urls_db, statements)
