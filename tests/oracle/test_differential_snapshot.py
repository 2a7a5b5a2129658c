"""Engine snapshots against uninterrupted runs (hypothesis): the scripts and inputs of the other
differential families — selections under every window with ISTREAM/DSTREAM/RSTREAM and delays,
UNION ALL, joins, grouped aggregates (keys of every type, DISTINCT, MIN/MAX of strings), set
operations, base relations with deletes, and recursive scripts (loops with ε and tick delays) — run
once straight through and once cut at several random points: at each cut the engine is
snapshotted, thrown away and rebuilt with ``Engine.restore`` (options and CQL from the snapshot),
sometimes after fetching what was there, sometimes restored twice from the same bytes. Every
query's output over the whole run must be the same bag of rows, ε-steps included, and stream rows
must stay in time order. Both lifetime methods; DTS hybrid and as published, and the heartbeat
executor (its queues saved; not for the recursive scripts, which it does not run); one engine or
two (``threads``). Set CQ_SNAPSHOT_EXAMPLES to run more than the default 120 per family.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.recursive import script
from oracle.test_differential_join import interleaving
from oracle.test_differential_join import stream as join_stream
from oracle.test_differential_join import windows as join_windows
from oracle.test_differential_recursive import inputs as recursive_inputs
from oracle.test_differential_recursive import scripts
from oracle.test_differential_relation import change_table, changes
from oracle.test_differential_select import (
    SCHEMA,
    bool_expr,
    data,
    plain_select_expr,
    render,
    window_sql,
    windows,
)

EXAMPLES = examples(int(os.environ.get("CQ_SNAPSHOT_EXAMPLES", "120")))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LIFETIMES = st.sampled_from(["direct", "negative"])
# DTS hybrid, DTS as published, and the heartbeat executor (its queues saved).
HYBRID = st.sampled_from([True, False, "heartbeat"])

S_SCHEMA = pa.schema(
    [
        ("a", pa.int64()),
        ("b", pa.float64()),
        ("c", pa.string()),
        ("f", pa.bool_()),
        ("ts", pa.int64()),
    ]
)


def rows_of(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


def run(
    options: dict,
    cql: str,
    actions: list,
    cuts: set[int] = frozenset(),
    fetch_before: set[int] = frozenset(),
    twice: set[int] = frozenset(),
) -> dict[str, list[tuple]]:
    """Runs ``actions`` — ("push", stream, table) or ("advance", tick) — then close(), and returns
    every query's rows. Before action k for k in ``cuts`` (k == len(actions): before close; k >
    that: after close) the engine is snapshotted and replaced by a restored one; with k in
    ``fetch_before`` its results are fetched first, with k in ``twice`` it is restored twice from
    the same bytes (the first copy pushed on and thrown away: restoring must not share state)."""
    eng = cq_py.Engine(expose_steps=True, **options)
    eng.execute(cql)
    out: dict[str, list[tuple]] = {q: [] for q in eng.query_names()}

    def fetch():
        for q in out:
            out[q] += rows_of(eng.fetch(q))

    def cut(k):
        nonlocal eng
        if k in fetch_before:
            fetch()
        blob = eng.snapshot()
        if k in twice:
            decoy = cq_py.Engine.restore(blob)
            for action in actions[k : k + 1]:
                if action[0] == "push":
                    decoy.push(action[1], action[2])
            decoy.close()
            fetch_all = {q: decoy.fetch(q) for q in out}
            del decoy, fetch_all
        eng = cq_py.Engine.restore(blob)

    for k, action in enumerate(actions):
        if k in cuts:
            cut(k)
        if action[0] == "push":
            eng.push(action[1], action[2])
        else:
            eng.advance(action[1])
    if len(actions) in cuts:
        cut(len(actions))
    eng.close()
    if len(actions) + 1 in cuts:
        cut(len(actions) + 1)
    fetch()
    return out


def assert_same(options: dict, cql: str, actions: list, plan) -> None:
    """The run cut as `plan` says gives what the uninterrupted run gives (on one engine or two,
    as the plan draws: a snapshot of two holds both)."""
    cuts, fetch_before, twice, threads = plan
    options = {**options, "threads": threads}
    if options.get("hybrid") == "heartbeat":
        del options["hybrid"]
        options["executor"] = "heartbeat"
    expected = run(options, cql, actions)
    got = run(options, cql, actions, cuts, fetch_before, twice)
    eng = cq_py.Engine(**options)
    eng.execute(cql)
    for q, rows in expected.items():
        assert Counter(got[q]) == Counter(rows), (q, cql, options, sorted(cuts))
        if "ts" in eng.query_schema(q).names:  # stream rows leave in time order
            ts = eng.query_schema(q).names.index("ts")
            stamps = [(r[ts], r[ts + 1]) for r in got[q]]
            assert stamps == sorted(stamps), (q, cql)


@st.composite
def cut_plan(draw, n_actions: int):
    """Where to cut a run of n actions: one to four points (before any action, before close() or
    after it), some with a fetch first, some restored twice; and on how many engines it runs."""
    points = st.integers(0, n_actions + 1)
    cuts = set(draw(st.lists(points, min_size=1, max_size=4)))
    fetch_before = {k for k in cuts if draw(st.booleans())}
    twice = {k for k in cuts if k < n_actions and draw(st.integers(0, 3)) == 0}
    return cuts, fetch_before, twice, draw(st.sampled_from([1, 2]))


def stream_actions(rows: list[dict], cuts: list[int], heartbeats: bool = True) -> list:
    """Pushes of `rows` (to s) cut at `cuts`, each followed by an advance to its last timestamp."""
    table = pa.Table.from_pylist(rows, schema=S_SCHEMA)
    bounds = [0, *cuts, len(rows)]
    actions = []
    for lo, hi in itertools.pairwise(bounds):
        if hi > lo:
            actions.append(("push", "s", table.slice(lo, hi - lo)))
            if heartbeats:
                actions.append(("advance", rows[hi - 1]["ts"]))
    return actions


@SETTINGS
@given(
    st.data(),
    data(),
    windows,
    windows,
    st.one_of(st.none(), bool_expr()),
    st.lists(plain_select_expr(), min_size=1, max_size=2),
    LIFETIMES,
    HYBRID,
)
def test_select_and_union_survive_snapshots(draw, dataset, w1, w2, where, select, lifetime, hybrid):
    rows, cuts = dataset
    items = ", ".join(f"{render(e)} AS x{i}" for i, e in enumerate(select))
    body = f"SELECT {items} FROM s {window_sql(w1)}" + (f" WHERE {render(where)}" if where else "")
    union = f"{body} UNION ALL SELECT {items} FROM s {window_sql(w2)}"
    cql = SCHEMA + (
        f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});"
        f"REGISTER QUERY d AS DSTREAM({body}); REGISTER QUERY rs AS RSTREAM({body});"
        f"REGISTER QUERY dl AS ISTREAM({body}) <3>; REGISTER QUERY dn AS DSTREAM({body}) <Now>;"
        f"REGISTER QUERY u AS {union}; REGISTER QUERY ui AS ISTREAM({union});"
        # the same relation twice in one union: its second branch is reissued
        "REGISTER QUERY uu AS SELECT * FROM r UNION ALL SELECT * FROM r;"
    )
    actions = stream_actions(rows, cuts)
    assert_same(
        {"lifetime": lifetime, "hybrid": hybrid}, cql, actions, draw.draw(cut_plan(len(actions)))
    )


@SETTINGS
@given(
    st.data(),
    data(),
    windows,
    st.one_of(st.none(), bool_expr()),
    st.lists(st.sampled_from(["a", "b", "c", "f"]), max_size=2, unique=True),
    st.sampled_from(["a", "b"]),
    st.sampled_from(["a", "b", "c", "f"]),
    st.sampled_from([1, 3000, 40000]),
    LIFETIMES,
    HYBRID,
)
def test_aggregates_survive_snapshots(
    draw, dataset, window, where, keys, x, y, factor, lifetime, hybrid
):
    rows, cuts = dataset
    rows = [dict(r, a=None if r["a"] is None else r["a"] * factor) for r in rows]
    select = ", ".join(
        [
            *keys,
            (
                f"COUNT(*) AS n, COUNT({x}) AS nx, SUM({x}) AS sx, AVG({x}) AS ax, MIN({y}) AS mn, "
                f"MAX({y}) AS mx, COUNT(DISTINCT {y}) AS dy"
            ),
        ]
    )
    body = (
        f"SELECT {select} FROM s {window_sql(window)}"
        + (f" WHERE {render(where)}" if where else "")
        + (f" GROUP BY {', '.join(keys)}" if keys else "")
    )
    cql = SCHEMA + f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});"
    actions = stream_actions(rows, cuts, heartbeats=draw.draw(st.booleans()))
    assert_same(
        {"lifetime": lifetime, "hybrid": hybrid}, cql, actions, draw.draw(cut_plan(len(actions)))
    )


@SETTINGS
@given(
    st.data(),
    join_windows,
    join_windows,
    st.sampled_from(["", " AND s.b < t.d"]),
    st.sampled_from(["", "DISTINCT "]),
    LIFETIMES,
    HYBRID,
)
def test_joins_survive_snapshots(draw, w1, w2, residual, distinct, lifetime, hybrid):
    s_rows = draw.draw(join_stream(("a", "b")))
    t_rows = draw.draw(join_stream(("k", "d")))
    sources = f"s {window_sql(w1)}, t {window_sql(w2)}"
    body = f"SELECT {distinct}s.a, s.b, t.d FROM {sources} WHERE s.a = t.k{residual}"
    cql = (
        "REGISTER STREAM s(a INT, b DOUBLE); REGISTER STREAM t(k INT, d DOUBLE);"
        f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});"
    )
    schemas = {
        "s": pa.schema([("a", pa.int64()), ("b", pa.float64()), ("ts", pa.int64())]),
        "t": pa.schema([("k", pa.int64()), ("d", pa.float64()), ("ts", pa.int64())]),
    }
    actions = [
        ("push", name, pa.Table.from_pylist(rows, schema=schemas[name]))
        for name, rows in draw.draw(interleaving(s_rows, t_rows))
    ]
    assert_same(
        {"lifetime": lifetime, "hybrid": hybrid}, cql, actions, draw.draw(cut_plan(len(actions)))
    )


@SETTINGS
@given(
    st.data(),
    data(),
    windows,
    windows,
    st.sampled_from(["UNION", "EXCEPT", "INTERSECT"]),
    LIFETIMES,
    HYBRID,
)
def test_set_operations_survive_snapshots(draw, dataset, w1, w2, op, lifetime, hybrid):
    rows, cuts = dataset
    body = f"SELECT a, c FROM s {window_sql(w1)} {op} SELECT a, c FROM s {window_sql(w2)}"
    cql = SCHEMA + f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});"
    actions = stream_actions(rows, cuts)
    assert_same(
        {"lifetime": lifetime, "hybrid": hybrid}, cql, actions, draw.draw(cut_plan(len(actions)))
    )


@SETTINGS
@given(st.data(), changes(), changes((("a", "int"), ("b", "double"))), windows, LIFETIMES, HYBRID)
def test_relations_survive_snapshots(draw, r_rows, q_rows, window, lifetime, hybrid):
    """A base relation with deletes under ISTREAM/DSTREAM/RSTREAM, an aggregate over it, and joins
    of a stream window and of another relation with it."""
    cql = (
        "REGISTER STREAM s(a INT, b DOUBLE, c VARCHAR, f BOOLEAN); "
        "REGISTER RELATION r(k INT, d DOUBLE);"
        "REGISTER RELATION q(a INT, b DOUBLE);"
        "REGISTER QUERY rel AS SELECT k, d FROM r WHERE k > 0; "
        "REGISTER QUERY i AS ISTREAM(SELECT k, d FROM r);"
        "REGISTER QUERY d AS DSTREAM(SELECT k, d FROM r); "
        "REGISTER QUERY rs AS RSTREAM(SELECT k, d FROM r);"
        "REGISTER QUERY g AS SELECT k, COUNT(*) AS n, SUM(d) AS sd, MAX(d) AS md FROM r GROUP BY k;"
        f"REGISTER QUERY j AS SELECT s.a, s.b, r.d FROM s {window_sql(window)}, r WHERE s.a = r.k;"
        "REGISTER QUERY jq AS SELECT q.a, q.b, r.d FROM q, r WHERE q.a = r.k;"
    )
    s_rows = draw.draw(join_stream(("a", "b")))
    s_rows = [dict(r, c=None, f=None) for r in s_rows]
    # Every input in one time order: pushes to s, r and q interleaved by timestamp in chunks.
    events = sorted(
        [(r["ts"], 0, "s", r) for r in s_rows]
        + [(r["ts"], 1, "r", r) for r in r_rows]
        + [(r["ts"], 2, "q", r) for r in q_rows],
        key=lambda e: e[0],
    )
    actions, i = [], 0
    while i < len(events):
        j = i + draw.draw(st.integers(1, 4))
        chunk = events[i:j]
        for name in ("s", "r", "q"):
            part = [e[3] for e in chunk if e[2] == name]
            if not part:
                continue
            if name == "s":
                actions.append(("push", "s", pa.Table.from_pylist(part, schema=S_SCHEMA)))
            else:
                cols = (
                    (("k", "int"), ("d", "double"))
                    if name == "r"
                    else (("a", "int"), ("b", "double"))
                )
                actions.append(("push", name, change_table(part, cols, True)))
        i = j
        if i < len(events) and draw.draw(st.booleans()):
            actions.append(("advance", events[i][0]))
    assert_same(
        {"lifetime": lifetime, "hybrid": hybrid}, cql, actions, draw.draw(cut_plan(len(actions)))
    )


@pytest.mark.parametrize("lifetime", ["direct", "negative"])
@pytest.mark.parametrize("hybrid", [True, False])
@SETTINGS
@given(st.data(), scripts(), recursive_inputs)
def test_recursive_scripts_survive_snapshots(lifetime, hybrid, draw, queries, rows):
    """Loops (one query, several, nested) with ε and tick delays: a cut between pushes may fall
    while a loop still has rows queued at its entries and instants to run."""
    table = pa.table({"a": [a for _, a in rows], "ts": [t for t, _ in rows]})
    bounds = sorted(
        set(draw.draw(st.lists(st.integers(1, len(rows)), max_size=3))) | {0, len(rows)}
    )
    actions = [
        ("push", "s", table.slice(lo, hi - lo)) for lo, hi in itertools.pairwise(bounds) if hi > lo
    ]
    assert_same(
        {"lifetime": lifetime, "hybrid": hybrid},
        script(queries),
        actions,
        draw.draw(cut_plan(len(actions))),
    )
