"""Row sets and dropping queries (issue 31 item 5; cq_py/rowset.py, Engine.rowset, Engine.drop):
listeners once per run with the run's rows, the cursor, and drop() freeing what no other query
uses while every other query's output stays what it is in an engine that never had the dropped
query, under both executors and both lifetime methods."""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from cq_py.rowset import RowSet, RowSetEvent

CONFIGS = [
    ("dts", "direct"),
    ("dts", "negative"),
    ("heartbeat", "direct"),
    ("heartbeat", "negative"),
]
STREAMS = (
    "REGISTER STREAM a(k INT, v INT); REGISTER STREAM b(k INT, w INT);"
    "REGISTER CLOCK c1 EVERY 3 OFFSET 1; REGISTER CLOCK c2 EVERY 4;"
)


def _rows(seed: int, n: int = 60) -> list[tuple[int, str, dict[str, int]]]:
    rnd = random.Random(seed)
    out, t = [], 0
    for _ in range(n):
        t += rnd.choice([0, 1, 1, 2])
        if rnd.random() < 0.5:
            out.append((t, "a", {"k": rnd.randint(0, 3), "v": rnd.randint(0, 9)}))
        else:
            out.append((t, "b", {"k": rnd.randint(0, 3), "w": rnd.randint(0, 9)}))
    return out


def _bag(table: pa.Table) -> Counter:
    return Counter(tuple(sorted(r.items())) for r in table.to_pylist())


# -- listeners and the cursor --------------------------------------------------------------------


def _engine(**options) -> cq_py.Engine:
    eng = cq_py.Engine(threads=1, **options)
    eng.execute(STREAMS)
    return eng


def _feed(eng: cq_py.Engine, rows, upto: int | None = None) -> None:
    for t, name, vals in rows:
        eng.push(name, [{**vals, "ts": t}])
    if upto is not None:
        eng.advance(upto)


@pytest.mark.parametrize("config", CONFIGS)
def test_listener_once_per_run_with_its_rows(config) -> None:
    executor, lifetime = config
    query = "MASTER c1, a SELECT a.v, b.w FROM a [Range 3], b WHERE a.k = b.k"
    rows = _rows(1)
    # The expected runs: the same query fetched whole from another engine, grouped by ts.
    ref = _engine(executor=executor, lifetime=lifetime)
    ref.execute(f"REGISTER QUERY q AS {query};")
    _feed(ref, rows)
    ref.close()
    expected: dict[int, Counter] = {}
    for r in ref.fetch("q").to_pylist():
        expected.setdefault(r["ts"], Counter())[(r["v"], r["w"])] += 1

    eng = _engine(executor=executor, lifetime=lifetime)
    rs = eng.rowset(query)
    assert rs.metadata.column_names == ["v", "w", "ts"]
    got: dict[int, Counter] = {}

    def listener(event: RowSetEvent) -> None:
        assert event.source is rs
        assert event.ts not in got, "one call per run"
        table = rs.to_arrow()
        assert set(table.column("ts").to_pylist()) == {event.ts}
        bag: Counter = Counter()
        while rs.next():  # positioned before the run's rows
            bag[(rs.get("v"), rs.get("W"))] += 1
        assert bag == _bag_pairs(table)
        got[event.ts] = bag

    rs.add_listener(listener)
    _feed(eng, rows)
    eng.close()
    assert got == expected
    assert expected, "the script produces runs"


def _bag_pairs(table: pa.Table) -> Counter:
    return Counter(zip(table.column("v").to_pylist(), table.column("w").to_pylist(), strict=True))


def test_rowset_of_a_registered_query_and_iteration() -> None:
    eng = _engine()
    eng.execute("REGISTER QUERY q AS ISTREAM(SELECT v FROM a [Now]);")
    eng.push("a", [{"k": 1, "v": 5, "ts": 1}])
    rs = eng.rowset("q")
    assert rs.query == "q"
    assert isinstance(rs, RowSet)
    eng.push("a", [{"k": 1, "v": 6, "ts": 2}, {"k": 1, "v": 7, "ts": 3}])
    eng.advance(4)
    # No listener: the rows wait, the cursor walks over them all (the result already there too).
    assert [r["v"] for r in rs] == [5, 6, 7]
    assert not rs.next()
    eng.push("a", [{"k": 1, "v": 8, "ts": 5}])
    eng.advance(6)
    assert rs.to_arrow().column("v").to_pylist() == [8]
    assert rs.next()
    assert rs.get("v") == 8
    assert rs.get("ts") == 5


def test_a_listener_that_stops_its_rowset() -> None:
    eng = _engine()
    rs = eng.rowset("MASTER a SELECT v FROM a [Now]")
    calls = []

    def once(event: RowSetEvent) -> None:
        calls.append(event.ts)
        event.source.stop()

    rs.add_listener(once)
    eng.push("a", [{"k": 1, "v": 1, "ts": 1}, {"k": 1, "v": 2, "ts": 2}])
    eng.advance(5)
    assert calls == [1]
    assert rs.stopped
    assert rs.query not in eng.query_names()
    rs.stop()  # twice: nothing


# -- bad input -----------------------------------------------------------------------------------


def test_bad_input_changes_nothing() -> None:
    eng = _engine()
    eng.execute(
        "REGISTER QUERY base AS ISTREAM(SELECT k, v FROM a [Now]);"
        "REGISTER QUERY reader AS ISTREAM(SELECT v FROM base [Now]);"
    )
    with pytest.raises(cq_py.CQLSemanticError, match="unknown query 'nope'; registered"):
        eng.rowset("nope")
    with pytest.raises(cq_py.CQLSemanticError, match="unknown query 'nope'"):
        eng.drop("nope")
    with pytest.raises(cq_py.CQLSyntaxError):
        eng.rowset("MASTER a SELEC v FROM a")
    with pytest.raises(cq_py.CQLSemanticError, match="relation-valued query 'rowset_1'"):
        eng.rowset("SELECT v FROM a [Range 3]")
    with pytest.raises(cq_py.CQLSemanticError, match="'base' cannot be dropped: reader reads it"):
        eng.drop("base")
    with pytest.raises(cq_py.ArgumentError, match="takes a query's name or CQL text"):
        eng.rowset(3)  # type: ignore[arg-type]
    assert eng.query_names() == ["base", "reader"]
    rs = eng.rowset("reader")
    with pytest.raises(cq_py.ArgumentError, match="add_listener takes a callable"):
        rs.add_listener("print")  # type: ignore[arg-type]
    with pytest.raises(cq_py.ArgumentError, match="before the first row"):
        rs.get("v")
    eng.push("a", [{"k": 1, "v": 4, "ts": 0}])
    eng.advance(1)
    assert rs.next()
    with pytest.raises(cq_py.ArgumentError, match="no such column; its columns are v, ts"):
        rs.get("w")
    eng.drop("reader")
    eng.drop("base")  # (nothing reads it any more)
    with pytest.raises(cq_py.CQLSemanticError, match="'reader' was dropped already"):
        eng.drop("reader")
    with pytest.raises(cq_py.ArgumentError, match="is stopped"):
        rs.add_listener(print)
    assert eng.query_names() == []


def test_a_listener_that_raises() -> None:
    """The push is applied (the engine's contract for callbacks: CallbackError); the
    run the listener raised on, and the later ones, come again at the next delivery: each run
    reaches the listener's successful calls exactly once, none is lost."""
    eng = _engine()
    rs = eng.rowset("MASTER a SELECT v FROM a [Now]")
    done: list[tuple[int, list[int]]] = []
    fail = {3}

    def listener(event: RowSetEvent) -> None:
        if event.ts in fail:
            fail.discard(event.ts)
            raise ValueError(f"no run {event.ts}")
        done.append((event.ts, [r["v"] for r in event.source]))

    rs.add_listener(listener)
    with pytest.raises(cq_py.CallbackError, match=r"no run 3\. The push to .a. was applied") as e:
        eng.push("a", [{"k": 0, "v": t * 10, "ts": t} for t in range(1, 6)])
    assert isinstance(e.value.__cause__, ValueError)
    assert e.value.query == rs.query
    assert done == [(1, [10]), (2, [20])]
    eng.advance(10)
    assert done == [(t, [t * 10]) for t in range(1, 6)]
    assert eng.fetch(rs.query).num_rows == 0  # (delivered to the row set, not kept twice)


# -- drop ------------------------------------------------------------------------------------------

# Queries over a, b and the clocks: shared sub-plans (q1 and q2 are the same query), joins that
# differ only in their windows (shared window joins under the direct method), row windows
# (expiration holders), aggregates, MASTER queries.
QUERIES = {
    "q1": "ISTREAM(SELECT k, v FROM a [Range 4] WHERE v > 2)",
    "q2": "ISTREAM(SELECT k, v FROM a [Range 4] WHERE v > 2)",
    "j1": "ISTREAM(SELECT a.v, b.w FROM a [Range 3], b [Range 3] WHERE a.k = b.k)",
    "j2": "ISTREAM(SELECT a.v, b.w FROM a [Range 6], b [Range 6] WHERE a.k = b.k)",
    "m1": "MASTER c1 SELECT a.v, b.w FROM a [Range 3], b WHERE a.k = b.k AND a.v > 1",
    "m2": "MASTER c2, b SELECT a.v, b.w FROM a [Range 3], b WHERE a.k = b.k",
    "g1": "SELECT k, SUM(v) AS s FROM a [Rows 3] GROUP BY k",
    "g2": "ISTREAM(SELECT k, COUNT(*) AS n FROM b [Range 5] GROUP BY k)",
    "r1": "SELECT k, v FROM a [Partition By k Rows 2]",
}
# Scripts: one text registering several queries (their sub-plans shared) and queries alone.
SCRIPTS = [["q1", "q2", "j1", "j2"], ["m1"], ["m2", "g1"], ["g2", "r1"]]


def _register(eng: cq_py.Engine, without: str | None) -> None:
    for script in SCRIPTS:
        text = "".join(f"REGISTER QUERY {q} AS {QUERIES[q]};" for q in script if q != without)
        if text:
            eng.execute(text)


def _outputs(config, drop: str | None, rows, hybrid: bool = True) -> dict[str, Counter]:
    """Every query's output, ``drop`` registered and dropped half way (or never registered:
    ``drop`` negative, e.g. "-q1")."""
    executor, lifetime = config
    eng = _engine(executor=executor, lifetime=lifetime, hybrid=hybrid)
    never = drop[1:] if drop and drop.startswith("-") else None
    _register(eng, never)
    half = len(rows) // 2
    _feed(eng, rows[:half])
    out: dict[str, Counter] = {q: _bag(eng.fetch(q)) for q in eng.query_names()}
    if drop and not never:
        before = len(eng._core.explain().splitlines())
        eng.drop(drop)
        freed = before - len(eng._core.explain().splitlines())
        assert freed >= 1
        assert drop not in eng.query_names()
        assert "Output " + drop not in eng.explain()
    _feed(eng, rows[half:])
    eng.close()
    for q in eng.query_names():
        out[q] = out[q] + _bag(eng.fetch(q))
    if drop:
        out.pop(drop.lstrip("-"), None)
    return out


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("drop", list(QUERIES))
def test_dropping_one_leaves_the_others_as_without_it(config, drop) -> None:
    rows = _rows(7, 80)
    got = _outputs(config, drop, rows)
    want = _outputs(config, "-" + drop, rows)
    assert got == want
    assert any(got.values())


@pytest.mark.parametrize("drop", ["q1", "m1", "g1"])
def test_drop_under_published_dts(drop) -> None:
    """hybrid=False runs everything below the inputs in regions: the regions lose members."""
    rows = _rows(3, 60)
    assert _outputs(CONFIGS[0], drop, rows, hybrid=False) == _outputs(
        CONFIGS[0], "-" + drop, rows, hybrid=False
    )


def test_shared_operators_stay_for_the_other_query() -> None:
    eng = _engine()
    eng.execute("".join(f"REGISTER QUERY {q} AS {QUERIES[q]};" for q in ("q1", "q2")))
    ops = eng._core.explain().splitlines()
    eng.drop("q1")
    left = eng._core.explain().splitlines()
    # Only q1's output goes: the window, filter and ISTREAM are q2's as well.
    assert len(ops) - len(left) == 1
    eng.push("a", [{"k": 1, "v": 5, "ts": 1}])
    eng.close()
    assert eng.fetch("q2").to_pylist() == [{"k": 1, "v": 5, "ts": 1}]


def test_drop_then_snapshot_restore_and_register_again() -> None:
    rows = _rows(11, 60)
    eng = _engine()
    _register(eng, None)
    _feed(eng, rows[:30])
    eng.drop("j1")
    eng.drop("m1")
    again = cq_py.Engine.restore(eng.snapshot())
    assert again.query_names() == eng.query_names()
    for e in (eng, again):
        _feed(e, rows[30:])
        e.close()
    for q in eng.query_names():
        assert _bag(again.fetch(q)) == _bag(eng.fetch(q))
    # A dropped name may be registered again (a new query, from the progress reached).
    eng2 = _engine()
    eng2.execute("REGISTER QUERY q AS ISTREAM(SELECT v FROM a [Now]);")
    eng2.drop("q")
    eng2.execute("REGISTER QUERY q AS ISTREAM(SELECT v FROM a [Now] WHERE v > 1);")
    eng2.push("a", [{"k": 0, "v": 1, "ts": 0}, {"k": 0, "v": 2, "ts": 1}])
    eng2.close()
    assert eng2.fetch("q").column("v").to_pylist() == [2]
    eng2.drop("q")  # after close(): the engine lets it go all the same


def test_registering_leaves_earlier_operators_as_they_were() -> None:
    """Planning works in a fork of the catalog that shares the earlier operators (4g): neither a
    script that fails nor one that registers may change them."""
    import copy

    eng = _engine()
    _register(eng, None)
    before = copy.deepcopy(eng._catalog)
    with pytest.raises(cq_py.CQLSemanticError):
        eng.execute("REGISTER QUERY bad AS ISTREAM(SELECT nope FROM a [Now]);")
    eng.execute("REGISTER QUERY later AS " + QUERIES["m1"] + ";")
    for i, node in before.nodes.items():
        assert eng._catalog.nodes[i] == node
    for name, q in before.queries.items():
        assert (eng._catalog.queries[name].out_id, eng._catalog.queries[name].lifetime) == (
            q.out_id,
            q.lifetime,
        )


LOOP = (
    "REGISTER QUERY la AS ISTREAM(SELECT v FROM a [Now] UNION ALL SELECT v FROM lb [Now]) <Now>;"
    "REGISTER QUERY lb AS ISTREAM(SELECT v + 1 AS v FROM la [Now] WHERE v < 5);"
)


@pytest.mark.parametrize("hybrid", [True, False])
@pytest.mark.parametrize("lifetime", ["direct", "negative"])
@pytest.mark.parametrize("together", [True, False])
def test_drop_a_reader_of_a_loop(hybrid, lifetime, together) -> None:
    """A query reading a recursive loop's output runs in the loop's region; dropping it leaves
    the loop as it was. The loop's queries read each other: neither can be dropped."""
    reader = "REGISTER QUERY lr AS ISTREAM(SELECT v FROM la [Range 2] WHERE v > 2);"
    rows = _rows(5, 40)

    def run(with_reader: bool) -> dict[str, Counter]:
        eng = _engine(lifetime=lifetime, hybrid=hybrid)
        if together:
            eng.execute(LOOP + (reader if with_reader else ""))
        else:
            eng.execute(LOOP)
            if with_reader:
                eng.execute(reader)
        _feed(eng, rows[:20])
        out = {q: _bag(eng.fetch(q)) for q in ("la", "lb")}
        if with_reader:
            with pytest.raises(cq_py.CQLSemanticError, match="'la' cannot be dropped: lb"):
                eng.drop("la")
            eng.drop("lr")
        _feed(eng, rows[20:])
        eng.close()
        return {q: out[q] + _bag(eng.fetch(q)) for q in ("la", "lb")}

    got, want = run(True), run(False)
    assert got == want
    assert got["lb"]


def test_drop_on_engines_of_parts() -> None:
    """Engine(threads=2) with a partition key (k): the drop reaches every part's engine."""
    script = {
        "p1": "ISTREAM(SELECT k, SUM(v) AS s FROM a [Range 5] GROUP BY k)",
        "p2": "ISTREAM(SELECT k, COUNT(*) AS n FROM a [Range 3] GROUP BY k)",
    }
    rows = [(t, "a", {"k": t % 4, "v": t}) for t in range(40)]

    def run(drop: bool) -> Counter:
        eng = cq_py.Engine(threads=2)
        eng.execute(
            "REGISTER STREAM a(k INT, v INT);"
            + "".join(
                f"REGISTER QUERY {q} AS {text};" for q, text in script.items() if drop or q != "p1"
            )
        )
        assert eng._parts is not None
        _feed(eng, rows[:20])
        out = _bag(eng.fetch("p2"))
        if drop:
            eng.drop("p1")
        _feed(eng, rows[20:])
        eng.close()
        return out + _bag(eng.fetch("p2"))

    assert run(True) == run(False)


@pytest.mark.parametrize("config", CONFIGS)
def test_drop_while_rows_wait_for_the_other_input(config) -> None:
    """Under the heartbeat executor a join's queues hold rows (and end fixes of row windows)
    while its other input has not moved: dropping it then lets them go."""
    executor, lifetime = config
    join = "ISTREAM(SELECT a.v, b.w FROM a [Rows 2], b [Rows 2] WHERE a.k = b.k)"
    other = "ISTREAM(SELECT k, v FROM a [Rows 2])"

    def run(drop: bool) -> Counter:
        eng = _engine(executor=executor, lifetime=lifetime)
        eng.execute(
            f"REGISTER QUERY o AS {other};" + (f"REGISTER QUERY j AS {join};" if drop else "")
        )
        eng.push("b", [{"k": 1, "w": 0, "ts": 0}])
        eng.push("a", [{"k": t % 2, "v": t, "ts": t} for t in range(1, 12)])
        out = _bag(eng.fetch("o"))
        if drop:
            eng.drop("j")
        eng.push("b", [{"k": 1, "w": 5, "ts": 12}])
        eng.push("a", [{"k": 1, "v": 99, "ts": 13}])
        eng.close()
        return out + _bag(eng.fetch("o"))

    assert run(True) == run(False)


def test_the_catalogs_readers_as_computed_whole() -> None:
    """Catalog.consumers() adds the new operators' edges to those fork() found (4g): after
    scripts of every kind, late ones, drops and failures, it equals the whole computation."""
    from cq_py.planner.logical import Catalog

    def whole(cat: Catalog) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {i: [] for i in cat.nodes}
        for n in cat.nodes.values():
            for i in n.inputs:
                out[i].append(n.id)
        return {k: sorted(v) for k, v in out.items()}

    def same(eng: cq_py.Engine) -> None:
        got = {k: sorted(v) for k, v in eng._catalog.consumers().items()}
        assert got == whole(eng._catalog)

    eng = _engine(auto_delay=True)
    for script in SCRIPTS:
        eng.execute("".join(f"REGISTER QUERY {q} AS {QUERIES[q]};" for q in script))
        same(eng)
    eng.execute(LOOP)
    same(eng)
    _feed(eng, _rows(2, 20))
    eng.execute("REGISTER QUERY late AS ISTREAM(SELECT k, s FROM g1);")  # re-derives g1
    same(eng)
    eng.drop("q1")
    same(eng)
    with pytest.raises(cq_py.CQLSemanticError):
        eng.execute("REGISTER QUERY bad AS ISTREAM(SELECT nope FROM a [Now]);")
    eng.execute(
        "REGISTER QUERY x AS ISTREAM(SELECT v FROM a [Now] UNION ALL SELECT v FROM y [Now]);"
        "REGISTER QUERY y AS ISTREAM(SELECT v FROM x [Now] WHERE v < 3);"
    )  # a loop auto_delay cuts
    assert "inserted by auto_delay" in eng.explain()
    same(eng)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scripts=st.lists(
        st.lists(st.sampled_from(sorted(QUERIES)), min_size=1, max_size=3, unique=True),
        min_size=1,
        max_size=3,
    ),
    drops=st.integers(1, 3),
    at=st.integers(0, 60),
    seed=st.integers(0, 2**16),
    config=st.sampled_from(CONFIGS),
)
def test_random_drops_as_never_registered(scripts, drops, at, seed, config) -> None:
    """Random scripts of the queries above (each name once; a script's queries share
    sub-plans), several dropped at one random point: the rest give what an engine that never
    had the dropped ones gives."""
    seen: set[str] = set()
    scripts = [[q for q in s if not (q in seen or seen.add(q))] for s in scripts]
    scripts = [s for s in scripts if s]
    names = [q for s in scripts for q in s]
    dropped = set(random.Random(seed).sample(names, min(drops, len(names))))
    rows = _rows(seed, 60)
    executor, lifetime = config

    def run(drop: bool) -> dict[str, Counter]:
        eng = _engine(executor=executor, lifetime=lifetime)
        for s in scripts:
            kept = [q for q in s if drop or q not in dropped]
            if kept:
                eng.execute("".join(f"REGISTER QUERY {q} AS {QUERIES[q]};" for q in kept))
        _feed(eng, rows[:at])
        out = {q: _bag(eng.fetch(q)) for q in eng.query_names() if q not in dropped}
        if drop:
            for q in sorted(dropped):
                eng.drop(q)
        _feed(eng, rows[at:])
        eng.close()
        return {q: out[q] + _bag(eng.fetch(q)) for q in out}

    assert run(True) == run(False)


def test_a_listener_that_pushes() -> None:
    """A listener may push (an application reacting to a run): the runs that push completes
    come after the current one, each once, in time order."""
    eng = _engine()
    rs = eng.rowset("MASTER a SELECT v FROM a [Now]")
    seen: list[int] = []

    def listener(event: RowSetEvent) -> None:
        seen.append(event.ts)
        if event.ts < 4:
            # (Completes the run at ts + 1: delivered after this one, not inside it.)
            eng.push("a", [{"k": 0, "v": 0, "ts": event.ts + 2}])

    rs.add_listener(listener)
    eng.push("a", [{"k": 0, "v": 0, "ts": 0}, {"k": 0, "v": 0, "ts": 1}])
    assert seen == [0, 1, 2, 3, 4]
    eng.advance(10)
    assert seen == [0, 1, 2, 3, 4, 5]


def test_drop_a_master_another_query_uses_and_a_query_over_a_table(tmp_path) -> None:
    import sqlite3

    db = tmp_path / "t.sqlite"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t(k INTEGER, name TEXT)")
        c.executemany("INSERT INTO t VALUES (?, ?)", [(0, "zero"), (1, "one")])
    n1 = "REGISTER QUERY n1 AS MASTER a SELECT a.v, t.name FROM a [Now], t WHERE a.k = t.k;"

    def run(with_n1: bool) -> Counter:
        eng = _engine()
        eng.execute(
            f"REGISTER TABLE t FROM 'sqlite:///{db}';"
            "REGISTER QUERY ticks AS ISTREAM(SELECT k FROM a [Now]);"
            "REGISTER QUERY m AS MASTER ticks SELECT b.w FROM b [Range 5];"
            + (n1 if with_n1 else "")
            + "REGISTER QUERY n2 AS MASTER a SELECT t.name FROM a [Now], t WHERE a.k = t.k;"
        )
        with pytest.raises(cq_py.CQLSemanticError, match="'ticks' cannot be dropped: m reads"):
            eng.drop("ticks")
        _feed(eng, _rows(4, 20)[:10])
        out = _bag(eng.fetch("n2"))
        if with_n1:
            eng.drop("n1")
        _feed(eng, _rows(4, 20)[10:])
        eng.close()
        assert eng.query_names() == ["ticks", "m", "n2"]
        return out + _bag(eng.fetch("n2"))

    got = run(True)
    assert got == run(False)
    assert got
