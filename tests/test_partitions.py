"""``Engine(threads=N)`` (cq_py/partitions.py): N core engines on the partition key give one
engine's results, as bags per instant, in time order; the split, its explain line and its
warning; scripts registered later; pushes and rows routed; a rejected push changing no engine;
snapshots of every engine. The randomized comparison with one engine is
tests/oracle/test_differential_threads.py."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

import cq_py
from cq_core import _core
from cq_py.spark import CQPartitionWarning

EVENTS = "REGISTER STREAM e(key BIGINT, val BIGINT);"
# The workloads (W1-W5, W4 on two streams) and a few more shapes over one or two inputs.
SCRIPTS = {
    "W1": "REGISTER QUERY q AS ISTREAM(SELECT * FROM e [Now] WHERE val > 499);",
    "W2": "REGISTER QUERY q AS ISTREAM(SELECT key, AVG(val) AS a "
    "FROM e [Range 10 SECONDS Slide 1 SECOND] GROUP BY key);",
    "W3": "REGISTER QUERY q AS ISTREAM(SELECT key, COUNT(*) AS c "
    "FROM e [Range 1 SECOND Slide 1 SECOND] GROUP BY key);",
    "W5": "REGISTER QUERY q AS ISTREAM(SELECT key, AVG(val) AS a "
    "FROM e [Partition By key Rows 10] GROUP BY key);",
    "relation-valued": "REGISTER QUERY q AS SELECT key, SUM(val) AS s, COUNT(*) AS c "
    "FROM e [Range 50] GROUP BY key HAVING COUNT(*) > 1;",
    "distinct-dstream": "REGISTER QUERY q AS DSTREAM(SELECT DISTINCT key FROM e [Range 20]);",
    "rstream": "REGISTER QUERY q AS RSTREAM(SELECT key, MAX(val) AS m FROM e [Range 7] "
    "GROUP BY key);",
    "two-queries": "REGISTER QUERY q AS ISTREAM(SELECT key, val FROM e [Range 5]);"
    "REGISTER QUERY p AS SELECT key, MIN(val) AS m FROM e [Partition By key Rows 3] "
    "GROUP BY key;",
}


def events(n: int, keys: int = 17, seed: int = 0, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    # Runs of equal timestamps, so that instants hold rows of several keys and parts.
    ts = start + np.cumsum(rng.integers(0, 3, n))
    return pa.table({"key": rng.integers(0, keys, n), "val": rng.integers(0, 1000, n), "ts": ts})


def bag(table: pa.Table) -> Counter:
    return Counter(tuple(r.values()) for r in table.to_pylist())


def time_of(table: pa.Table) -> list:
    col = "ts" if "ts" in table.column_names else "start"
    return table.column(col).to_pylist()


def run(script: str, inputs: dict, threads: int, **options) -> dict[str, pa.Table]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CQPartitionWarning)
        return cq_py.run(script, inputs, threads=threads, **options)


@pytest.mark.parametrize("name", list(SCRIPTS))
@pytest.mark.parametrize("lifetime", ["direct", "negative"])
def test_results_equal_one_engine(name, lifetime):
    script = EVENTS + SCRIPTS[name]
    data = {"e": events(3000)}
    one = run(script, data, 1, lifetime=lifetime, batch_size=256)
    for threads in (2, 3):
        many = run(script, data, threads, lifetime=lifetime, batch_size=256)
        for q, table in one.items():
            assert bag(many[q]) == bag(table), (threads, q)
            assert time_of(many[q]) == sorted(time_of(many[q]))


def test_equal_times_come_in_a_deterministic_order():
    script = EVENTS + SCRIPTS["W5"]
    data = {"e": events(2000, keys=5)}
    first = run(script, data, 2)["q"]
    assert first.equals(run(script, data, 2)["q"])


def test_two_inputs_joined_on_an_int_and_a_double_key():
    # a.k BIGINT = b.k DOUBLE: keys hashed as doubles, so 3 and 3.0 meet in one engine.
    script = (
        "REGISTER STREAM a(k BIGINT, v BIGINT); REGISTER STREAM b(k DOUBLE, w BIGINT);"
        "REGISTER QUERY q AS ISTREAM(SELECT a.k, a.v, b.w FROM a [Range 20], b [Range 20] "
        "WHERE a.k = b.k);"
    )
    ea, eb = events(1500, seed=1), events(1500, seed=2)
    data = {
        "a": ea.rename_columns(["k", "v", "ts"]),
        "b": pa.table({"k": eb["key"].cast(pa.float64()), "w": eb["val"], "ts": eb["ts"]}),
    }
    one = run(script, data, 1)["q"]
    assert one.num_rows > 100
    assert bag(run(script, data, 2)["q"]) == bag(one)


def test_explain_says_how_the_input_is_split():
    eng = cq_py.Engine(threads=2)
    eng.execute(EVENTS + SCRIPTS["W5"] + "REGISTER RELATION r(x INT, y INT);")
    assert (
        "Threads: 2 engines, one per part of the input: e split by key key, r split by key x"
        in (eng.explain())
    )
    eng = cq_py.Engine(threads=2)
    eng.execute(EVENTS + SCRIPTS["W1"])
    assert "e any way (rows meet no other row)" in eng.explain()
    assert "Threads" not in cq_py.Engine(threads=1).explain()


def test_a_script_without_a_key_runs_on_one_engine_and_says_why():
    script = EVENTS + "REGISTER QUERY q AS SELECT COUNT(*) AS n FROM e [Range 10];"
    eng = cq_py.Engine(threads=2)
    with pytest.warns(CQPartitionWarning, match=r"threads=2.*COUNT\(\*\).*needs every row"):
        eng.execute(script)
    assert "Threads: one engine (threads=2): query q: the aggregate without GROUP BY" in (
        eng.explain()
    )
    eng.push("e", events(100))
    eng.close()
    assert eng.fetch("q").num_rows > 0
    # The default (the machine's cores) says so in explain() only.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cq_py.Engine().execute(script)


def test_the_split_is_redone_until_input_comes():
    # A keyed script, then (before any push) one that needs every row: one engine for both.
    eng = cq_py.Engine(threads=2)
    eng.execute(EVENTS + SCRIPTS["W5"])
    assert "Threads: 2 engines" in eng.explain()
    with pytest.warns(CQPartitionWarning):
        eng.execute("REGISTER QUERY n AS ISTREAM(SELECT COUNT(*) AS n FROM e [Range 10]);")
    assert "Threads: one engine" in eng.explain()
    data = events(500)
    eng.push("e", data)
    eng.close()
    one = run(
        EVENTS + SCRIPTS["W5"] + "REGISTER QUERY n AS ISTREAM(SELECT COUNT(*) AS n "
        "FROM e [Range 10]);",
        {"e": data},
        1,
    )
    assert bag(eng.fetch("q")) == bag(one["q"])
    assert bag(eng.fetch("n")) == bag(one["n"])


def test_a_late_script_that_keeps_the_split_runs_and_one_that_does_not_is_refused():
    early = EVENTS + "REGISTER RELATION r(key BIGINT, name VARCHAR);" + SCRIPTS["W5"]
    late_ok = (
        "REGISTER QUERY j AS ISTREAM(SELECT e.key, r.name FROM e [Now], r WHERE e.key = r.key);"
    )
    late_bad = "REGISTER QUERY n AS ISTREAM(SELECT COUNT(*) AS n FROM e [Range 10]);"
    names = pa.table({"key": list(range(17)), "name": [f"k{i}" for i in range(17)], "ts": [0] * 17})
    first, second = events(400), events(400, seed=3, start=2000)
    results = {}
    for threads in (1, 2):
        eng = cq_py.Engine(threads=threads)
        eng.execute(early)
        eng.push("r", names)
        eng.push("e", first)
        if threads == 2:
            with pytest.raises(cq_py.CQLSemanticError, match=r"while the engine runs.*every row"):
                eng.execute(late_bad)
            assert eng.query_names() == ["q"]
        eng.execute(late_ok)
        eng.push("e", second)
        eng.close()
        results[threads] = {q: bag(eng.fetch(q)) for q in ("q", "j")}
    assert results[2] == results[1]
    assert sum(results[1]["j"].values()) == 400


def test_a_late_key_for_a_stream_split_in_runs_is_refused():
    eng = cq_py.Engine(threads=2)
    eng.execute(EVENTS + SCRIPTS["W1"])
    assert "e any way" in eng.explain()
    eng.push("e", events(100))
    with pytest.raises(cq_py.CQLSemanticError, match=r"already split: e any way"):
        eng.execute(SCRIPTS["W5"].replace("QUERY q", "QUERY q5"))
    # A stream no query read yet takes the key the late script needs.
    eng.execute("REGISTER STREAM f(key BIGINT, val BIGINT);")
    eng.push("f", events(10))
    eng.execute(SCRIPTS["W5"].replace("QUERY q", "QUERY q5").replace("FROM e", "FROM f"))
    assert "f split by key key" in eng.explain()


def test_a_rejected_push_changes_no_engine():
    script = EVENTS + SCRIPTS["W5"]
    good = events(200)
    ref = cq_py.Engine(threads=1)
    eng = cq_py.Engine(threads=2)
    for e in (ref, eng):
        e.execute(script)
        e.push("e", good)
    last = good["ts"][-1].as_py()
    # Rows of both parts; the last goes back in time: nothing of the push may run anywhere.
    bad = pa.table({"key": list(range(10)), "val": [1] * 10, "ts": [last + 1] * 9 + [last - 1]})
    with pytest.raises(cq_py.InputError, match="row 9") as err:
        eng.push("e", bad)
    assert err.value.row == 9
    with pytest.raises(cq_py.InputError):
        eng.push_row("e", last - 1, key=3, val=1)
    rest = events(200, seed=5, start=last + 1)
    for e in (ref, eng):
        e.push("e", rest)
        e.close()
    assert bag(eng.fetch("q")) == bag(ref.fetch("q"))


def test_a_delete_missing_in_one_part_rejects_the_whole_push():
    script = (
        "REGISTER RELATION r(k BIGINT, v BIGINT);"
        "REGISTER QUERY q AS SELECT k, SUM(v) AS s FROM r GROUP BY k;"
    )
    inserts = pa.table({"k": list(range(8)), "v": [1] * 8, "op": ["+"] * 8, "ts": [1] * 8})
    changes = pa.table(
        {
            "k": [0, 1, 2, 3, 4, 5, 6, 9],
            "v": [1] * 8,
            "op": ["-"] * 7 + ["-"],  # the last deletes a row never inserted
            "ts": [2] * 8,
        }
    )
    results = {}
    for threads in (1, 2):
        eng = cq_py.Engine(threads=threads)
        eng.execute(script)
        eng.push("r", inserts)
        with pytest.raises(cq_py.InputError, match=r"row 7 deletes \(k=9, v=1\)") as err:
            eng.push("r", changes)
        assert err.value.row == 7
        eng.push("r", changes.slice(0, 7))
        eng.close()
        results[threads] = bag(eng.fetch("q"))
    assert results[2] == results[1]


def test_push_row_routes_each_row_and_results_come_when_the_instant_completes():
    script = EVENTS + SCRIPTS["W5"]
    data = events(300, keys=7)
    ref = run(script, {"e": data}, 1)["q"]
    eng = cq_py.Engine(threads=2)
    eng.execute(script)
    got = []
    for r in data.to_pylist():
        eng.push_row("e", r["ts"], key=r["key"], val=r["val"])
        fetched = eng.fetch("q")
        # What one engine has final below the row's time is final here too.
        assert all(t < r["ts"] for t in time_of(fetched))
        got.append(fetched)
    eng.close()
    got.append(eng.fetch("q"))
    assert bag(pa.concat_tables(got)) == bag(ref)
    # A key of the wrong type is push_row's error, whichever engine the row would go to.
    with pytest.raises(cq_py.InputError, match="closed"):
        eng.push_row("e", 10**6, key=1, val=1)
    eng = cq_py.Engine(threads=2)
    eng.execute(script)
    with pytest.raises(cq_py.InputError, match="column 'key' must be BIGINT"):
        eng.push_row("e", 0, key="x", val=1)


@pytest.mark.parametrize(
    ("ktype", "keys"),
    [
        ("VARCHAR", ["a", "b", None, "c"]),
        ("DOUBLE", [1.5, -0.0, 0.0, None, 3]),
        ("BIGINT", [1, None, 2**62, -5]),
    ],
)
def test_push_row_sends_a_row_where_push_sends_it(ktype, keys):
    # Rows of one key pushed one by one, with push_row and with push, meet in one engine: a
    # [Partition By k Rows 2] window counts them together.
    script = (
        f"REGISTER STREAM s(k {ktype}, v BIGINT);"
        "REGISTER QUERY q AS ISTREAM(SELECT k, SUM(v) AS t FROM s [Partition By k Rows 2] "
        "GROUP BY k);"
    )
    rows = [{"k": keys[i % len(keys)], "v": i, "ts": i // 3} for i in range(40)]
    got = {}
    for how in ("row", "push", "one"):
        eng = cq_py.Engine(threads=1 if how == "one" else 2)
        eng.execute(script)
        for i, r in enumerate(rows):
            if how == "row" or i % 2:
                eng.push_row("s", r["ts"], k=r["k"], v=r["v"])
            else:
                eng.push(
                    "s",
                    pa.table({"k": pa.array([r["k"]], T[ktype]), "v": [r["v"]], "ts": [r["ts"]]}),
                )
        eng.close()
        got[how] = bag(eng.fetch("q"))
    assert got["row"] == got["push"] == got["one"]


T = {"VARCHAR": pa.string(), "DOUBLE": pa.float64(), "BIGINT": pa.int64()}


def test_subscribers_get_every_part_in_time_order():
    script = EVENTS + SCRIPTS["W2"]
    data = events(2000)
    eng = cq_py.Engine(threads=2)
    eng.execute(script)
    got: list[pa.RecordBatch] = []
    eng.subscribe("q", got.append)
    for k in range(0, 2000, 300):
        eng.push("e", data.slice(k, 300))
    eng.close()
    table = pa.Table.from_batches(got)
    assert time_of(table) == sorted(time_of(table))
    assert bag(table) == bag(run(script, {"e": data}, 1)["q"])


@pytest.mark.parametrize("name", ["W2", "W5", "two-queries"])
def test_a_snapshot_holds_every_engine(name):
    script = EVENTS + SCRIPTS[name]
    first, rest = events(600), events(600, seed=9, start=2000)
    eng = cq_py.Engine(threads=2)
    eng.execute(script)
    eng.push("e", first)
    before = {q: eng.fetch(q) for q in eng.query_names()}
    eng.push_row("e", 1999, key=1, val=5)  # told to the other engine lazily: in the snapshot
    blob = eng.snapshot()
    again = cq_py.Engine.restore(blob)
    assert "Threads: 2 engines" in again.explain()
    for e in (eng, again):
        e.push("e", rest)
        e.close()
    one = run(
        script,
        {"e": pa.concat_tables([first, pa.table({"key": [1], "val": [5], "ts": [1999]}), rest])},
        1,
    )
    for q in eng.query_names():
        want = bag(one[q])
        assert bag(before[q]) + bag(eng.fetch(q)) == want
        assert bag(before[q]) + bag(again.fetch(q)) == want


def test_a_snapshot_of_one_engine_restores_as_one_and_damage_is_refused():
    eng = cq_py.Engine(threads=2)
    eng.execute(EVENTS + SCRIPTS["W5"])
    eng.push("e", events(100))
    blob = bytearray(eng.snapshot())
    blob[-5] ^= 0xFF  # in the second engine's state, inside the first's annex
    with pytest.raises(cq_py.SnapshotError):
        cq_py.Engine.restore(bytes(blob))
    one = cq_py.Engine(threads=1)
    one.execute(EVENTS + SCRIPTS["W5"])
    assert "Threads" not in cq_py.Engine.restore(one.snapshot()).explain()


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2", 10**6])
def test_threads_must_be_a_positive_count(bad):
    with pytest.raises(cq_py.ArgumentError, match="threads"):
        cq_py.Engine(threads=bad)


def test_the_default_is_the_machines_cores():
    from cq_py.engine import machine_cores

    assert cq_py.Engine()._threads == machine_cores() >= 1


def test_a_runaway_loop_in_one_engine_stops_them_all():
    script = (
        "REGISTER STREAM s(k INT);"
        "REGISTER QUERY c AS ISTREAM(SELECT k FROM s [Now] UNION ALL SELECT k FROM c [Now]) <1>;"
    )
    got = {}
    for threads in (1, 2):
        eng = cq_py.Engine(threads=threads, max_loop_ticks=100)
        eng.execute(script)
        assert ("Threads: 2 engines" in eng.explain()) == (threads == 2)
        # One key: only its engine runs away (the second: the first checks a push whole); the
        # other, which got no row, must stop too.
        keys = pa.record_batch([pa.array(range(100), pa.int64())], names=["k"])
        order, counts = _core.partition_rows(keys.__arrow_c_array__(), 2, True)
        key = int(order[counts[0]])  # the first of part 1
        eng.push("s", pa.table({"k": [key, key], "ts": [0, 1]}))
        with pytest.raises(cq_py.RunawayLoopError, match="runaway loop"):
            eng.advance(1000)
        later = pa.table({"k": list(range(8)), "ts": [5000] * 8})
        for call in (
            lambda e, later=later: e.push("s", later),
            lambda e: e.advance(6000),
            lambda e: e.close(),
        ):
            with pytest.raises(cq_py.RunawayLoopError, match="stopped at an earlier error"):
                call(eng)
        got[threads] = bag(eng.fetch("c"))
    assert got[2] == got[1]


@pytest.mark.parametrize("threads", [2, 3])
def test_a_stream_split_in_runs_gives_one_engines_rows(threads):
    # W1 reads rows that meet no other row: each push is cut into contiguous runs. One push (a
    # run over one input) gives one engine's table row for row: its parts' outputs follow one
    # another. Over several pushes, rows of one time that came in two pushes may sit in two
    # engines, and come in engine order (deterministic, as SPEC asks of equal times).
    script = EVENTS + SCRIPTS["W1"]
    data = events(5000)
    one = run(script, {"e": data}, 1, batch_size=300)["q"]
    assert run(script, {"e": data}, threads, batch_size=300)["q"].equals(one)

    def pushed() -> pa.Table:
        eng = cq_py.Engine(threads=threads, batch_size=300)
        eng.execute(script)
        got = []
        for k in range(0, 5000, 777):
            eng.push("e", data.slice(k, 777))
            got.append(eng.fetch("q"))
        eng.close()
        got.append(eng.fetch("q"))
        return pa.concat_tables(got)

    first = pushed()
    assert bag(first) == bag(one)
    assert time_of(first) == sorted(time_of(first))
    assert pushed().equals(first)


def test_a_rejected_push_changes_no_engine_of_a_stream_split_in_runs():
    script = EVENTS + SCRIPTS["W1"]
    good, rest = events(300), events(300, seed=4, start=10_000)
    last = good["ts"][-1].as_py()
    bad = pa.table({"key": [1] * 6, "val": [900] * 6, "ts": [last + 1] * 5 + [last - 1]})
    out = {}
    for threads in (1, 2):
        eng = cq_py.Engine(threads=threads)
        eng.execute(script)
        eng.push("e", good)
        with pytest.raises(cq_py.InputError, match="row 5") as err:
            eng.push("e", bad)
        assert err.value.row == 5
        eng.push("e", rest)
        eng.close()
        out[threads] = eng.fetch("q")
    assert bag(out[2]) == bag(out[1])


@pytest.mark.parametrize(
    ("ktype", "keys"),
    [
        ("VARCHAR", ["a", "b", None, "c", "dd"]),
        ("DOUBLE", [1.5, -0.0, 0.0, None, 3.0, float("nan")]),
        ("BIGINT", [1, None, 2**62, -5, 7]),
    ],
)
def test_a_push_of_many_batches_routes_every_key_type(ktype, keys):
    # Keys with NULLs, strings, -0.0 and NaN, pushed as a table of several record batches (an
    # empty one last): equal keys meet in one engine, whatever batch they come in.
    script = (
        f"REGISTER STREAM s(k {ktype}, v BIGINT);"
        "REGISTER QUERY q AS ISTREAM(SELECT k, SUM(v) AS t FROM s [Partition By k Rows 3] "
        "GROUP BY k);"
    )
    n = 600
    table = pa.table(
        {
            "k": pa.array([keys[i * 7 % len(keys)] for i in range(n)], T[ktype]),
            "v": list(range(n)),
            "ts": [i // 4 for i in range(n)],
        }
    )
    empty = pa.RecordBatch.from_pylist([], schema=table.schema)
    data = pa.Table.from_batches([*table.to_batches(max_chunksize=130), empty])

    def rows(table: pa.Table) -> Counter:  # NaN as a value equal to itself
        return Counter(tuple("NaN" if x != x else x for x in r.values()) for r in table.to_pylist())

    one = run(script, {"s": data}, 1)["q"]
    for threads in (2, 3):
        many = run(script, {"s": data}, threads, batch_size=64)["q"]
        assert rows(many) == rows(one)
        assert time_of(many) == sorted(time_of(many))


def test_steps_shown_merge_by_time_and_step():
    # expose_steps: the parts' rows merge by (ts, ts_step).
    script = EVENTS + SCRIPTS["two-queries"]
    data = {"e": events(1500)}
    one = run(script, data, 1, expose_steps=True)
    many = run(script, data, 2, expose_steps=True, batch_size=100)
    for q, table in one.items():
        assert bag(many[q]) == bag(table)
        at = "ts" if "ts" in table.column_names else "start"
        keys = list(zip(many[q][at].to_pylist(), many[q][f"{at}_step"].to_pylist(), strict=True))
        assert keys == sorted(keys)


def test_a_snapshot_after_pushes_in_runs_holds_every_engine():
    script = EVENTS + SCRIPTS["W1"]
    first, rest = events(800), events(800, seed=2, start=5000)
    eng = cq_py.Engine(threads=2)
    eng.execute(script)
    eng.push("e", first)
    before = eng.fetch("q")
    again = cq_py.Engine.restore(eng.snapshot())
    want = run(script, {"e": pa.concat_tables([first, rest])}, 1)["q"]
    for e in (eng, again):
        e.push("e", rest)
        e.close()
        got = pa.concat_tables([before, e.fetch("q")])
        assert bag(got) == bag(want)
        assert time_of(got) == sorted(time_of(got))
