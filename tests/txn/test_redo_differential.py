"""Redo against no control: with nothing updated, every output under 2pl and optimistic, redo
"always" and "on_change", equals txn="none"'s, batch 1, 3 and 50, the constraint on and off.

Two generators:

* Fig. 6's shape, with irregular timestamps (gaps, several rows per tick), a window
  [Range r Slide s] with r > s, ISTREAM, DSTREAM or RSTREAM committing, an aggregate or plain
  rows from small domains. (It found RSTREAM's rows between slides lost after a reset when
  s > 1, a shape now refused; and, once rows repeated, ISTREAM and DSTREAM over the window
  emitting a row that a leaving equal row had cancelled: a reset replayed only the window after
  its next slide, not the rows its commit operator compares with.)
* Fig. 8's shape: two streams through reference joins, a window join over [Range w], and a
  [Rows n] window above it (the area's top window, which changes with every row), or a
  [Range r Slide s] window (whose replay reaches back through the join's windows)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import cq_py
from cq_py import ResourceStore

_STRATEGIES = [(txn, redo) for txn in ("2pl", "optimistic") for redo in ("always", "on_change")]


def _run(txn: str, script: str, pushes: dict[str, list[dict]], **options: object) -> list:
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i % 3)} for i in range(6)], key=["id"])
    store.load("y", [{"id": i, "p": i % 2} for i in range(6)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn=txn, **options)
    eng.execute(script)
    for name, rows in pushes.items():
        eng.push(name, pa.Table.from_pylist(rows))
    eng.close()
    # The same bag per timestamp (the order of a relation's rows within an instant is free).
    return sorted(eng.fetch("q").to_pylist(), key=lambda row: (row["ts"], sorted(row.items())))


def _options(rng: random.Random) -> dict[str, object]:
    return {"batch": rng.choice([1, 3, 50]), "gatekeeper": rng.random() < 0.5}


def _rows(rng: random.Random, n: int, top: int) -> list[dict]:
    ticks = sorted(rng.randint(0, top) for _ in range(rng.randint(5, n)))
    return [{"k": rng.randrange(6), "a": rng.randrange(2), "ts": t} for t in ticks]


@pytest.mark.parametrize("seed", range(40))
def test_slide_window_redone_outputs_equal_those_without_control(seed: int) -> None:
    rng = random.Random(seed)
    r = rng.randint(2, 6)
    s = rng.randint(1, r - 1)
    rows = _rows(rng, 30, 40)
    select = rng.choice(["MAX(v) AS m", "SUM(v) AS m", "v", "a, v", "DISTINCT v"])
    options = _options(rng)
    for commit in ("ISTREAM", "DSTREAM") + (("RSTREAM",) if s == 1 else ()):
        script = (
            "REGISTER STREAM s(k BIGINT, a BIGINT);"
            "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
            "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
            f"REGISTER QUERY q AS {commit}(SELECT {select} FROM j [Range {r} Slide {s}]);"
        )
        want = _run("none", script, {"s": rows}, **options)
        for txn, redo in _STRATEGIES:
            got = _run(txn, script, {"s": rows}, redo=redo, **options)
            assert got == want, (commit, select, txn, redo)


@pytest.mark.parametrize("seed", range(60))
def test_windows_over_a_window_join_redone_outputs_equal_those_without_control(seed: int) -> None:
    rng = random.Random(seed)
    w = rng.randint(1, 5)
    n = rng.randint(2, 6)
    r = rng.randint(2, 6)
    s = rng.randint(1, r - 1)
    top = f"[Rows {n}]" if seed % 2 == 0 else f"[Range {r} Slide {s}]"
    # A stream read by no reference join on the right: its window gets a redo queue (§3.4.1
    # rule (2)) as its rows meet rows that read x.
    right = "s2" if seed % 3 == 0 else "j2"
    pushes = {"s1": _rows(rng, 25, 30), "s2": _rows(rng, 25, 30)}
    select = rng.choice(["AVG(v) AS m", "COUNT(*) AS m", "v", "a1, v"])
    options = _options(rng)
    commits = ("ISTREAM", "DSTREAM") + (("RSTREAM",) if seed % 2 == 0 or s == 1 else ())
    for commit in commits:
        script = (
            "REGISTER STREAM s1(k BIGINT, a BIGINT); REGISTER STREAM s2(k BIGINT, a BIGINT);"
            "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
            "REGISTER RESOURCE y (id BIGINT, p BIGINT) KEY (id) ACCESS SCAN;"
            "REGISTER QUERY j1 AS ISTREAM(SELECT s1.a, x.v FROM s1 [Now], x WHERE s1.k = x.id);"
            "REGISTER QUERY j2 AS ISTREAM(SELECT s2.a FROM s2 [Now], y "
            "WHERE s2.k = y.id AND y.p = 0);"
            "REGISTER QUERY j3 AS ISTREAM(SELECT l.a AS a1, r.a AS a2, l.v FROM "
            f"j1 [Range {w}] AS l, {right} [Range {w}] AS r WHERE l.a = r.a);"
            f"REGISTER QUERY q AS {commit}(SELECT {select} FROM j3 {top});"
        )
        want = _run("none", script, pushes, **options)
        for txn, redo in _STRATEGIES:
            got = _run(txn, script, pushes, redo=redo, **options)
            assert got == want, (commit, select, txn, redo)
