"""The heartbeat executor (SEMANTICS.md §5, paper 000 §2.3): the same results as DTS on scripts
where two streams meet (the stall of a binary operator, holder ids recycled while an end waits in a
queue), its refusal of recursive scripts, its options, and its explain order. The scheduled
executor (paper 002), on the same queues, is held to the same properties beside it. The
differential tests (tests/oracle) and the conformance corpus run under every executor too; the
core's own refusal of a cycle is tested in src_cpp/tests/heartbeat_test.cc."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from cq_core import _core
from oracle.reference import INF, equivalent

RECURSIVE = (
    "REGISTER QUERY a AS ISTREAM(SELECT x FROM s [Now] UNION ALL SELECT x FROM b [Now]) <Now>;"
    "REGISTER QUERY b AS ISTREAM(SELECT x FROM a [Now] WHERE x < 3);"
)


def run(cql: str, pushes: list, close: bool = True, **options) -> dict[str, list[dict]]:
    """Registers `cql`, pushes (stream, rows) and (None, t) advances, closes; rows per query."""
    eng = cq_py.Engine(**options)
    eng.execute(cql)
    for stream, rows in pushes:
        if stream is None:
            eng.advance(rows)
        else:
            eng.push(stream, rows)
    if close:
        eng.close()
    return {q: eng.fetch(q).to_pylist() for q in eng.query_names()}


def bags(out: dict[str, list[dict]]) -> dict[str, Counter]:
    return {q: Counter(tuple(sorted(r.items())) for r in rows) for q, rows in out.items()}


def lifetimes(rows: list[dict]) -> list[tuple]:
    """Relation rows as the oracle's (values, start, end), for `equivalent` (ghosts allowed)."""
    times = {"start", "end", "start_step", "end_step"}
    return [
        (
            tuple(v for k, v in sorted(r.items()) if k not in times),
            (r["start"], r["start_step"]),
            INF if r["end"] is None else (r["end"], r["end_step"]),
        )
        for r in rows
    ]


# ---- the same results as DTS -------------------------------------------------------------------


def test_a_binary_operator_holds_rows_back_until_its_other_input_has_progressed():
    cql = (
        "REGISTER STREAM s(a INT); REGISTER STREAM t(k INT);"
        "REGISTER QUERY u AS SELECT a FROM s [Range 3] UNION ALL SELECT k AS a FROM t [Rows 1];"
    )
    pushes = [("s", [{"a": 1, "ts": 0}, {"a": 2, "ts": 5}]), ("t", [{"k": 7, "ts": 2}])]
    hb = cq_py.Engine(executor="heartbeat")
    hb.execute(cql)
    for stream, rows in pushes:
        hb.push(stream, rows)
    # t has reached 2 only: the row of s at 5 waits in the union's queue.
    assert hb.fetch("u").to_pylist() == [{"a": 1, "start": 0, "end": 3}]
    hb.close()
    assert bags({"u": hb.fetch("u").to_pylist()}) == bags(
        {"u": [{"a": 7, "start": 2, "end": None}, {"a": 2, "start": 5, "end": 8}]}
    )
    assert bags(run(cql, pushes, executor="dts")) == bags(run(cql, pushes, executor="heartbeat"))


def test_holder_ids_are_not_reused_while_their_end_waits_in_a_queue():
    # Found by a random search with the pins switched off: the union of s waits for t, the
    # aggregate of s releases ids whose ends are still queued there, and the aggregate of t would
    # take them for its new rows, which the union merges in before those ends.
    cql = (
        "REGISTER STREAM s(a INT); REGISTER STREAM t(k INT);"
        "REGISTER QUERY u AS SELECT k AS x FROM t [Rows 1] GROUP BY k "
        "UNION ALL SELECT a AS x FROM s [Rows 2] GROUP BY a;"
    )
    pushes = [
        ("s", [{"a": 1, "ts": 2}, {"a": 0, "ts": 3}, {"a": 2, "ts": 4}]),
        ("t", [{"k": 1, "ts": 2}, {"k": 0, "ts": 3}]),
        ("s", [{"a": 0, "ts": 6}, {"a": 0, "ts": 6}, {"a": 1, "ts": 9}]),
        ("t", [{"k": 0, "ts": 4}]),
    ]
    want = bags(run(cql, pushes, executor="dts"))
    for max_run in (1, 2, 20):
        assert bags(run(cql, pushes, executor="heartbeat", max_run=max_run)) == want


BRANCHES = {
    "plain": "SELECT {c} AS x FROM {s} {w}",
    "count": "SELECT COUNT(*) AS x FROM {s} {w}",
    "group": "SELECT {c} AS x FROM {s} {w} GROUP BY {c}",
}
WINDOWS = [
    "[Now]",
    "[Range 2]",
    "[Range 3 Slide 2]",
    "[Rows 1]",
    "[Rows 2]",
    "[Partition By {c} Rows 1]",
    "[Range Unbounded]",
]


COLUMNS = {"s": "a", "t": "k", "w": "c"}
STREAMS = "REGISTER STREAM s(a INT); REGISTER STREAM t(k INT); REGISTER STREAM w(c INT);"


@st.composite
def pushes(draw):
    """Interleaved pushes to s, t and w (each in time order) with advances between them."""
    steps, clock = [], dict.fromkeys(COLUMNS, 0)
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.integers(0, 4)) == 0:
            now = max(clock.values()) + draw(st.integers(0, 2))
            clock = dict.fromkeys(COLUMNS, now)
            steps.append((None, now))
            continue
        name = draw(st.sampled_from(list(COLUMNS)))
        rows = []
        for _ in range(draw(st.integers(1, 3))):
            clock[name] += draw(st.sampled_from([0, 0, 1, 2, 3]))
            rows.append({COLUMNS[name]: draw(st.integers(0, 2)), "ts": clock[name]})
        steps.append((name, rows))
    return steps


def branch(draw, stream: str) -> str:
    col = COLUMNS[stream]
    return BRANCHES[draw(st.sampled_from(list(BRANCHES)))].format(
        c=col, s=stream, w=draw(st.sampled_from(WINDOWS)).format(c=col)
    )


@st.composite
def two_level_script(draw):
    """l (over t) and r (over s) meet in j, j meets m (over any stream) in u: JOIN or UNION ALL at
    each level, so that binary operators wait on each other; ISTREAM and DSTREAM of u."""
    left, right, m = (
        branch(draw, "t"),
        branch(draw, "s"),
        branch(draw, draw(st.sampled_from("stw"))),
    )
    j = draw(
        st.sampled_from(
            [
                "SELECT l.x, r.x AS y FROM l, r WHERE l.x = r.x",
                "SELECT x FROM l UNION ALL SELECT x FROM r",
            ]
        )
    )
    u = draw(
        st.sampled_from(
            [
                "SELECT j.x, m.x AS z FROM j, m WHERE j.x = m.x",
                "SELECT x FROM j UNION ALL SELECT x FROM m",
            ]
        )
    )
    return (
        f"{STREAMS} REGISTER QUERY l AS {left};"
        f"REGISTER QUERY r AS {right}; REGISTER QUERY m AS {m}; REGISTER QUERY j AS {j};"
        f"REGISTER QUERY u AS {u}; REGISTER QUERY i AS ISTREAM({u});"
        f"REGISTER QUERY d AS DSTREAM({u});"
    )


def final_part(rows: list[dict], progress: float) -> Counter:
    """Stream rows below the progress, which are final (SEMANTICS.md §4.8), as a bag."""
    return Counter(
        tuple(sorted(r.items())) for r in rows if (r["ts"], r["ts_step"]) < (progress, 0)
    )


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    two_level_script(),
    pushes(),
    st.sampled_from([1, 3, 20]),
    st.sampled_from(["direct", "negative"]),
)
def test_streams_meeting_give_the_dts_results_final_at_the_same_progress(
    cql, steps, max_run, lifetime
):
    engines = {
        "dts": cq_py.Engine(lifetime=lifetime, expose_steps=True),
        "heartbeat": cq_py.Engine(
            executor="heartbeat", max_run=max_run, lifetime=lifetime, expose_steps=True
        ),
        # Paper 002's executor on the same queues, `batch` rows per turn (as many as max_run).
        "scheduled": cq_py.Engine(
            executor="scheduled", batch=max_run, lifetime=lifetime, expose_steps=True, threads=1
        ),
    }
    try:
        engines["dts"].execute(cql)
    except cq_py.CQLSemanticError:  # a construct the planner refuses (for both executors)
        return
    engines["heartbeat"].execute(cql)
    engines["scheduled"].execute(cql)
    out: dict[str, dict[str, list]] = {
        ex: {q: [] for q in ("l", "r", "m", "j", "u", "i", "d")} for ex in engines
    }
    progress = dict.fromkeys(COLUMNS, -math.inf)

    def step(method: str, *args) -> None:
        for ex, eng in engines.items():
            getattr(eng, method)(*args)
            for q, fetched in out[ex].items():
                fetched.extend(eng.fetch(q).to_pylist())

    for stream, rows in steps:
        if stream is None:
            step("advance", rows)
            progress = {k: max(v, rows) for k, v in progress.items()}
        else:
            step("push", stream, rows)
            progress[stream] = max(progress[stream], rows[-1]["ts"])
        # What is final below the inputs' progress is there under every executor.
        for q in ("i", "d"):
            p = min(progress.values())
            for ex in ("heartbeat", "scheduled"):
                assert final_part(out[ex][q], p) == final_part(out["dts"][q], p), (ex, q, p, cql)
    step("close")
    want = out["dts"]
    for ex in ("heartbeat", "scheduled"):
        got = out[ex]
        for q in ("l", "r", "m", "j", "u"):  # relations: the same R(t) at every t
            assert equivalent(lifetimes(got[q]), lifetimes(want[q])), (ex, q, cql)
        for q in ("i", "d"):  # streams: the same bag at every timestamp, in time order
            assert bags(got)[q] == bags(want)[q], (ex, q, cql)
            stamps = [(r["ts"], r["ts_step"]) for r in got[q]]
            assert stamps == sorted(stamps), (ex, q, cql)


def test_queries_added_to_a_running_engine_see_what_dts_shows_them():
    def go(executor: str) -> dict[str, list]:
        eng = cq_py.Engine(executor=executor)
        eng.execute(
            "REGISTER STREAM s(a INT); REGISTER STREAM t(b INT);"
            "REGISTER QUERY q1 AS ISTREAM(SELECT a FROM s [Rows 2]);"
        )
        eng.push("s", [{"a": 1, "ts": 1}, {"a": 2, "ts": 2}])
        eng.push("t", [{"b": 1, "ts": 1}])
        eng.execute(
            "REGISTER QUERY q2 AS DSTREAM(SELECT a, b FROM s [Rows 1], t [Range 3] WHERE a = b);"
        )
        out: dict[str, list] = {}
        for action in (
            lambda: eng.push("s", [{"a": 1, "ts": 3}, {"a": 3, "ts": 4}]),
            lambda: eng.push("t", [{"b": 1, "ts": 3}, {"b": 3, "ts": 4}]),
            lambda: eng.advance(6),
            eng.close,
        ):
            action()
            for q in eng.query_names():
                out.setdefault(q, []).append(eng.fetch(q).to_pylist())
        return out

    assert go("heartbeat") == go("dts")  # the same rows at every fetch
    assert go("scheduled") == go("dts")


@pytest.mark.parametrize("executor", ["dts", "heartbeat", "scheduled"])
@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_a_union_of_two_streams_feeding_a_join(executor, lifetime):
    # j(0) = {0 from t, 0 and 0 from s}, m(0) = {0, 0}: 6 rows of u at 0; j(1) = {0, 0},
    # m(1) = {0}: 2 rows at 1.
    cql = (
        "REGISTER STREAM s(a INT); REGISTER STREAM t(k INT);"
        "REGISTER QUERY j AS SELECT k AS x FROM t [Now] UNION ALL SELECT a AS x FROM s [Now];"
        "REGISTER QUERY u AS SELECT j.x, m.a FROM j, s [Now] AS m WHERE j.x = m.a;"
    )
    pushes = [
        ("s", [{"a": 0, "ts": 0}, {"a": 0, "ts": 0}, {"a": 0, "ts": 1}]),
        ("t", [{"k": 0, "ts": 0}, {"k": 0, "ts": 1}]),
    ]
    rows = run(cql, pushes, executor=executor, lifetime=lifetime)["u"]
    assert Counter(r["start"] for r in rows) == Counter({0: 6, 1: 2})


# ---- what it refuses -----------------------------------------------------------------------


def test_a_recursive_script_is_refused_naming_its_loop_and_nothing_changes():
    eng = cq_py.Engine(executor="heartbeat")
    eng.execute("REGISTER STREAM s(x INT); REGISTER QUERY q AS ISTREAM(SELECT x FROM s [Range 2]);")
    before = eng.explain()
    with pytest.raises(cq_py.CQLSemanticError) as e:
        eng.execute(RECURSIVE)
    message = str(e.value)
    assert "executor='heartbeat' cannot run the recursive loop a → b → a" in message
    assert "use executor='dts'" in message
    assert (e.value.line, e.value.column) == (1, 1)  # at the first query of the loop
    assert eng.query_names() == ["q"]
    assert eng.explain() == before
    eng.push("s", [{"x": 1, "ts": 0}, {"x": 2, "ts": 3}])
    assert eng.fetch("q").to_pylist() == [{"x": 1, "ts": 0}, {"x": 2, "ts": 3}]


def test_max_run_must_be_a_positive_integer():
    for bad in (0, -1, 1.5, "20"):
        with pytest.raises(ValueError, match="max_run must be a positive integer"):
            cq_py.Engine(executor="heartbeat", max_run=bad)
    with pytest.raises(_core.CoreError, match="max_run must be at least 1"):
        _core.Engine(executor="heartbeat", max_run=0)
    with pytest.raises(_core.CoreError, match="expected 'dts', 'heartbeat' or 'scheduled'"):
        _core.Engine(executor="hb")


def test_explain_shows_the_executors_order():
    cql = (
        "REGISTER STREAM s(a INT); REGISTER STREAM t(k INT);"
        "REGISTER QUERY j AS ISTREAM(SELECT a, k FROM s [Range 2], t [Now] WHERE a = k);"
    )
    eng = cq_py.Engine(executor="heartbeat", max_run=5)
    eng.execute(cql)
    line = [x for x in eng.explain().splitlines() if x.startswith("Execution order")]
    core_order = [ln.split()[0].rstrip(":") for ln in eng._core.explain().splitlines()]
    assert line == ["Execution order (heartbeat, topological): " + " ".join(core_order)]
    assert "Execution order (DTS)" in cq_py.explain(cql)
