"""The DTS executor on recursive scripts (paper 000 §3.2): loops run instant by instant, runaway
loops stop with an error naming the loop, and the hybrid and the published executor agree."""

from __future__ import annotations

import pyarrow as pa
import pytest

import cq_py



def loop(name: str, step: str, cond: str = "", delay: str = "<Now>") -> str:
    """A query that feeds itself `step` of its own rows (while `cond`) through `delay`."""
    where = f" WHERE {cond}" if cond else ""
    return (f"REGISTER STREAM s(a INT); REGISTER QUERY {name} AS ISTREAM(SELECT a FROM s [Now] "
            f"UNION ALL SELECT {step} AS a FROM {name} [Now]{where}) {delay};")


def run_from(cql: str, at: int = 0, **options):
    """An engine with `cql` and a row a = 1 pushed at `at`."""
    eng = cq_py.Engine(**options)
    eng.execute(cql)
    eng.push("s", [{"a": 1, "ts": at}])
    return eng


COUNTER = loop("c", "a + 1", "a + 1 < 4")


def rows(eng, q):
    return eng.fetch(q).to_pylist()


@pytest.mark.parametrize("hybrid", [True, False])
@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_a_loop_counts_up_one_epsilon_at_a_time(hybrid, lifetime):
    eng = run_from(COUNTER, 5, expose_steps=True, hybrid=hybrid, lifetime=lifetime)
    eng.push("s", [{"a": 2, "ts": 7}])
    eng.close()
    assert rows(eng, "c") == [
        {"a": 1, "ts": 5, "ts_step": 1}, {"a": 2, "ts": 5, "ts_step": 2}, {"a": 3, "ts": 5, "ts_step": 3},
        {"a": 2, "ts": 7, "ts_step": 1}, {"a": 3, "ts": 7, "ts_step": 2}]


@pytest.mark.parametrize("hybrid", [True, False])
@pytest.mark.parametrize("window,expected", [
    ("[Range 10 Slide 5]", [(1, 10, 1), (2, 12, 1), (2, 15, 1), (3, 15, 1), (3, 20, 1)]),
    ("[Range 5 Slide 5]", [(1, 10, 1), (2, 12, 1), (2, 15, 1), (3, 15, 1)]),
    ("[Range 0 Slide 5]", [(1, 10, 1), (2, 12, 1)])])
def test_a_slide_window_in_a_loop_starts_a_tuple_at_an_epsilon_step_at_the_next_boundary(hybrid, window, expected):
    # Slide boundaries sit at step 0 (SPEC §4): 1 at 10+1ε is after the boundary 10 and starts at
    # 15, as 2 at 12+1ε does; both end at the boundary at or after t + T (with [Range 5] 15+1ε →
    # 20: the 3 that 2 at 15+1ε starts at 20 meets the 3 ending there, and ISTREAM sees no change;
    # with [Range 0] each is a ghost at 15, and nothing comes round). Both lifetime methods.
    cql = ("REGISTER STREAM s(a INT); REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now] UNION ALL "
           f"SELECT a + 1 AS a FROM q {window} WHERE a + 1 < 4) <Now>;")
    data = pa.table({"a": [1, 2], "ts": [10, 12]})
    for lifetime in ("direct", "negative"):
        out = cq_py.run(cql, inputs={"s": data}, expose_steps=True, hybrid=hybrid, lifetime=lifetime)["q"]
        assert [(r["a"], r["ts"], r["ts_step"]) for r in out.to_pylist()] == expected, lifetime


def test_results_of_a_loop_are_final_at_the_inputs_progress():
    eng = run_from(COUNTER, 5, expose_steps=True)
    assert rows(eng, "c") == []  # (5, 0) may still get rows: nothing at tick 5 is final
    eng.advance(6)
    assert [r["a"] for r in rows(eng, "c")] == [1, 2, 3]


def test_a_tick_delay_loop_runs_over_later_ticks():
    eng = run_from(loop("c", "a * 2", "a * 2 < 20", "<3>"))
    eng.close()
    assert [(r["a"], r["ts"]) for r in rows(eng, "c")] == [(1, 3), (2, 6), (4, 9), (8, 12), (16, 15)]


def test_a_runaway_loop_is_an_error_naming_it_and_the_engine_stays_stopped():
    eng = run_from(loop("grow", "a + 1"), max_loop_steps=1000)
    with pytest.raises(cq_py.RunawayLoopError, match=r"more than 1000 ε steps at tick 0 in the loop of queries grow"):
        eng.advance(1)
    with pytest.raises(cq_py.RunawayLoopError, match="stopped at an earlier error"):
        eng.push("s", [{"a": 1, "ts": 2}])
    with pytest.raises(cq_py.RunawayLoopError):
        eng.close()


def test_long_loops_settle_under_the_default_limit():
    eng = run_from(loop("grow", "a + 1", "a + 1 <= 20000"))
    eng.close()
    out = eng.fetch("grow")
    assert out.num_rows == 20000 and out["a"].to_pylist() == list(range(1, 20001))


@pytest.mark.parametrize("value", [0, -1, 1.5])
def test_limits_must_be_positive_integers(value):
    with pytest.raises(ValueError, match="max_loop_steps"):
        cq_py.Engine(max_loop_steps=value)


def test_a_loop_without_delay_is_rejected_and_runs_with_auto_delay():
    cql = ("REGISTER STREAM s(a INT);"
           "REGISTER QUERY c AS ISTREAM(SELECT a FROM s [Now] UNION ALL "
           "SELECT a + 1 AS a FROM c [Now] WHERE a + 1 < 4);")
    with pytest.raises(cq_py.CQLSemanticError, match="c → c"):
        cq_py.Engine().execute(cql)
    eng = cq_py.Engine(auto_delay=True, expose_steps=True)
    eng.execute(cql)
    eng.push("s", [{"a": 1, "ts": 0}])
    eng.close()
    assert [(r["a"], r["ts_step"]) for r in rows(eng, "c")] == [(1, 1), (2, 2), (3, 3)]


def test_queries_registered_later_join_a_running_loop():
    eng = run_from(COUNTER)
    eng.execute("REGISTER QUERY doubled AS ISTREAM(SELECT a * 2 AS a FROM c [Now]);")
    eng.push("s", [{"a": 2, "ts": 4}])
    eng.close()
    assert [r["a"] for r in rows(eng, "c")] == [1, 2, 3, 2, 3]
    # Tick 0 was not complete when `doubled` came (rows at (0, 0) could still arrive), so it sees
    # the whole loop of tick 0.
    assert [r["a"] for r in rows(eng, "doubled")] == [2, 4, 6, 4, 6]


@pytest.mark.parametrize("hybrid", [True, False])
@pytest.mark.parametrize("advanced, seen", [(0, [10, 20, 40, 80, 160]), (1, [10, 20, 40, 80, 160]),
                                            (4, [20, 40, 80, 160])])
def test_a_query_registered_while_a_delay_holds_rows_takes_its_rows_from_then_on(hybrid, advanced, seen):
    # A query registered at progress p reads c's rows from p on (SPEC §4), also those the delay
    # emitted before: registered at 1, `d` sees c's row at 3 (emitted at tick 0); at 4, from 6 on.
    eng = run_from(loop("c", "a * 2", "a * 2 < 20", "<3>"), hybrid=hybrid)
    if advanced:
        eng.advance(advanced)
    eng.execute("REGISTER QUERY d AS ISTREAM(SELECT a * 10 AS a FROM c [Now]);")
    eng.close()
    assert [(r["a"], r["ts"]) for r in rows(eng, "c")] == [(1, 3), (2, 6), (4, 9), (8, 12), (16, 15)]
    assert [r["a"] for r in rows(eng, "d")] == seen


@pytest.mark.parametrize("script", ["avg1", "avg2", "avg4"])
def test_hybrid_and_published_dts_agree_on_the_paper_queries(script):
    with open(f"{__file__.rsplit('/tests/', 1)[0]}/examples/recursive_avg/{script}.cql") as f:
        cql = f.read()
    data = pa.table({"id": [i % 4 for i in range(40)], "val": list(range(40)),
                     "ts": [i // 4 for i in range(40)]})
    out = [cq_py.run(cql, inputs={"input": data}, expose_steps=True, hybrid=h) for h in (True, False)]
    for q in out[0]:
        assert out[0][q].num_rows > 0
        assert sorted(out[0][q].to_pylist(), key=repr) == sorted(out[1][q].to_pylist(), key=repr), q


@pytest.mark.parametrize("hybrid", [True, False])
def test_group_and_partition_keys_outside_the_small_id_range_find_their_own_state(hybrid):
    # Loops find a single integer key's group or partition in a flat array (small non-negative
    # ids) and every other key through a hash index: NULL, negative and large keys, mixed with
    # small ones, must each keep to their own partition (Rows 1) and group.
    keys = [None, -1, 0, 3, 65535, 65536, 2**40, 3, -1, None, 65536, 0, 2**40, 70000, 65535]
    eng = cq_py.Engine(hybrid=hybrid)
    eng.execute("REGISTER STREAM s(a INT, b INT); REGISTER QUERY q AS RSTREAM(SELECT a, SUM(b) AS s, "
                "COUNT(*) AS n FROM s [Partition By a Rows 1] GROUP BY a);")
    eng.push("s", [{"a": k, "b": i + 1, "ts": i} for i, k in enumerate(keys)])
    eng.close()
    last = {(r["a"], r["ts"]): (r["s"], r["n"]) for r in rows(eng, "q")}
    t = len(keys) - 1
    # At the last tick each key's one row is its latest: b = 1 + the index of its last occurrence.
    expected = {k: (max(i for i, x in enumerate(keys) if x == k) + 1, 1) for k in set(keys)}
    assert {k: last[(k, t)] for k in expected} == expected
    assert len([key for key, ts in last if ts == t]) == len(expected)
