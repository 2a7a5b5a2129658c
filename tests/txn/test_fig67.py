"""Paper 002's Fig. 6/7 on the engine: a stream joined with x (each row matches one), then AVG
over [Range r Slide s], n rows pushed at once, txn="2pl", redo="always". The join's evaluations
per commit equal those of the pure-Python model (benchmarks/papers/002/model.py) commit by
commit, partial first windows included; summed over the full windows they are eq. (1) with the
gatekeeper constraint (any batch) and eq. (2) without it (batch >= n). The results are those of
the same query without concurrency control, each instant committed once.

s = 1 commits by RSTREAM, one row per tick from tick 1; s > 1 by ISTREAM, ticks from 0, so that
the engine's slide boundaries (multiples of s) fall where the model's windows end. Under a
strategy ISTREAM is computed at the commit from whole results (RSTREAM with ``diff``), so the
aggregate lies inside the area, as Fig. 6's does."""

from __future__ import annotations

import importlib.util
import resource
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

import cq_py
from cq_py import ResourceStore

ROOT = Path(__file__).resolve().parents[2]


def _model() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "paper002_model", ROOT / "benchmarks" / "papers" / "002" / "model.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["paper002_model"] = module  # (its dataclasses look themselves up there)
    spec.loader.exec_module(module)
    return module


MODEL = _model()


def _script(r: int, s: int) -> str:
    commit = "RSTREAM" if s == 1 else "ISTREAM"
    return (
        "REGISTER STREAM s(k BIGINT, a BIGINT);"
        "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
        "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
        f"REGISTER QUERY q AS {commit}(SELECT AVG(v) AS m FROM j [Range {r} Slide {s}]);"
    )


def _run(r: int, s: int, n: int, txn: str = "2pl", **options: Any) -> cq_py.Engine:
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(10 * i)} for i in range(n)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn=txn, **options)
    eng.execute(_script(r, s))
    first = 1 if s == 1 else 0
    eng.push("s", pa.Table.from_pylist([{"k": t, "a": t, "ts": t + first} for t in range(n)]))
    eng.close()
    return eng


def _join(eng: cq_py.Engine) -> int:
    return next(op for op, st in eng.stats()["operators"].items() if "reads" in st)


def _per_commit(eng: cq_py.Engine, s: int, n: int) -> list[int]:
    """The join's evaluations per commit of q for the instants of the n rows (after them the
    window only empties: the model stops at its last row)."""
    last = n if s == 1 else n - 1
    join = _join(eng)
    log = [c for c in eng.commit_log().to_pylist() if c["query"] == "q"]
    instants = [c["instant"] for c in log]
    assert instants == sorted(set(instants))  # each instant committed once
    assert all(c["outcome"] == "commit" for c in log)
    return [dict(c["evaluations"])[join] for c in log if c["instant"] <= last]


SIZES = (
    [(4, 1, n) for n in (5, 6, 7, 10, 25, 50, 100)]
    + [(7, 2, n) for n in (7, 10, 25, 100)]
    + [(10, 3, n) for n in (10, 11, 25, 100)]
)


@pytest.mark.parametrize(("r", "s", "n"), SIZES)
def test_with_the_constraint_each_full_window_costs_r_at_any_batch(r: int, s: int, n: int) -> None:
    model = MODEL.run(MODEL.fig67_tree(n, r, s), batch=1, constraint=True)
    expected = [c.evaluations["join"] for c in model.commits]
    for batch in (1, 7):
        got = _per_commit(_run(r, s, n, batch=batch, gatekeeper=True, redo="always"), s, n)
        assert got == expected
        partial = len(model.partial())
        assert got[partial:] == [r] * len(model.full())
        assert sum(got[partial:]) == MODEL.eq1(n, r, s)


@pytest.mark.parametrize(("r", "s", "n"), SIZES)
def test_without_it_at_batch_n_the_kth_costs_n_minus_ks(r: int, s: int, n: int) -> None:
    model = MODEL.run(MODEL.fig67_tree(n, r, s), batch=n, constraint=False)
    expected = [c.evaluations["join"] for c in model.commits]
    got = _per_commit(_run(r, s, n, batch=n, gatekeeper=False, redo="always"), s, n)
    assert got == expected
    full = got[len(model.partial()) :]
    assert full == [n - k * s for k in range(len(full))]
    assert sum(full) == MODEL.eq2(n, r, s)


def test_eq1_and_eq2_at_r4_s1_n100_are_388_and_5044() -> None:
    best = _per_commit(_run(4, 1, 100, batch=1, gatekeeper=True, redo="always"), 1, 100)
    worst = _per_commit(_run(4, 1, 100, batch=100, gatekeeper=False, redo="always"), 1, 100)
    assert sum(best[3:]) == 388
    assert sum(worst[3:]) == 5044


@pytest.mark.parametrize(("r", "s"), [(4, 1), (7, 2), (10, 3)])
@pytest.mark.parametrize(
    "options", [{"batch": 1}, {"batch": 7}, {"batch": 40, "gatekeeper": False}]
)
def test_redone_results_equal_those_without_control(
    r: int, s: int, options: dict[str, Any]
) -> None:
    n = 40
    plain = _run(r, s, n, txn="none", **options)
    q, j = plain.fetch("q").to_pylist(), plain.fetch("j").to_pylist()
    assert len(q) > n // s
    for txn in ("2pl", "snapshot", "optimistic"):
        for redo in ("always", "on_change"):
            eng = _run(r, s, n, txn=txn, redo=redo, **options)
            assert eng.fetch("q").to_pylist() == q
            # j's rows leave the area from a member: sent once, replays or not.
            assert eng.fetch("j").to_pylist() == j
            area = next(iter(eng.stats()["areas"].values()))
            assert (area["resets"] > 0) == (redo == "always")


def test_ten_thousand_resets_leave_the_holder_table_and_memory_flat() -> None:
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(100)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn="2pl", redo="always")
    eng.execute(_script(4, 1))
    sizes, rss = [], []
    tick = 1
    for _ in range(10):
        rows = [{"k": (tick + t) % 100, "a": t, "ts": tick + t} for t in range(1000)]
        tick += 1000
        eng.push("s", pa.Table.from_pylist(rows))
        sizes.append(eng._core.holder_table_size())
        rss.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    area = next(iter(eng.stats()["areas"].values()))
    assert area["resets"] >= 9999
    # The holder table and the process's peak memory stop growing after the first pushes.
    assert sizes[-1][1] == sizes[2][1]
    assert sizes[-1][0] <= sizes[2][0]
    assert rss[-1] - rss[2] < 8 * 1024  # KiB


@pytest.mark.parametrize(
    "options", [{"batch": 1}, {"batch": 5}, {"batch": 60, "gatekeeper": False}]
)
def test_several_rows_per_tick_are_sent_once_across_resets(options: dict[str, Any]) -> None:
    # Resets fall between two rows of one tick: j's rows (leaving the area from a member) and q's
    # still go out once each, as without control.
    n, per = 20, 3
    rows = [
        {"k": (t * per + i) % n, "a": t * per + i, "ts": t + 1}
        for t in range(n)
        for i in range(per)
    ]

    def run(txn: str) -> cq_py.Engine:
        store = ResourceStore()
        store.load("x", [{"id": i, "v": float(10 * i)} for i in range(n)], key=["id"])
        eng = cq_py.Engine(
            executor="scheduled", resources=store, threads=1, txn=txn, redo="always", **options
        )
        eng.execute(_script(4, 1))
        eng.push("s", pa.Table.from_pylist(rows))
        eng.close()
        return eng

    plain, eng = run("none"), run("2pl")
    assert eng.fetch("j").to_pylist() == plain.fetch("j").to_pylist()
    assert eng.fetch("q").to_pylist() == plain.fetch("q").to_pylist()
    assert next(iter(eng.stats()["areas"].values()))["resets"] > 0


@pytest.mark.parametrize(("r", "s"), [(4, 1), (7, 2), (10, 3)])
def test_results_equal_dts_over_a_static_relation(r: int, s: int) -> None:
    n = 30
    eng = _run(r, s, n, batch=1, redo="always")
    dts = cq_py.Engine(threads=1)
    commit = "RSTREAM" if s == 1 else "ISTREAM"
    dts.execute(
        "REGISTER STREAM s(k BIGINT, a BIGINT); REGISTER RELATION x (id BIGINT, v DOUBLE);"
        "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
        f"REGISTER QUERY q AS {commit}(SELECT AVG(v) AS m FROM j [Range {r} Slide {s}]);"
    )
    first = 1 if s == 1 else 0
    dts.push(
        "x", pa.Table.from_pylist([{"id": i, "v": float(10 * i), "ts": first} for i in range(n)])
    )
    dts.push("s", pa.Table.from_pylist([{"k": t, "a": t, "ts": t + first} for t in range(n)]))
    dts.close()
    assert eng.fetch("q").to_pylist() == dts.fetch("q").to_pylist()
    assert eng.fetch("j").to_pylist() == dts.fetch("j").to_pylist()


@pytest.mark.parametrize(("r", "s"), [(7, 2), (10, 3)])
def test_s_above_one_commits_istream_at_each_slide_from_whole_results(r: int, s: int) -> None:
    # In CQL, AVG over a window sliding by s > 1 commits by ISTREAM. Under a strategy it is
    # RSTREAM inside the area with the difference taken at the commit (once the window itself
    # committed, fused with the aggregate, and a strategy refused it): one commit per slide,
    # at the slide boundaries, and the results of no control.
    n = 25
    eng = _run(r, s, n, batch=1, redo="always")
    plan = eng.explain()
    assert "ISTREAM computed at the commit from whole results" in plan
    log = [c for c in eng.commit_log().to_pylist() if c["query"] == "q"]
    assert [c["instant"] % s for c in log] == [0] * len(log)
    assert [c["instant"] for c in log][: n // s] == [k * s for k in range(n // s)]
    assert eng.fetch("q").to_pylist() == _run(r, s, n, txn="none").fetch("q").to_pylist()
