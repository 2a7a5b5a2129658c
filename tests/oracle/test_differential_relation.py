"""Base relations (REGISTER RELATION) against the reference, for both lifetime methods.

Inputs are generated change tables: inserts and deletes of a few values (so copies of equal values
are common), ghosts (a copy inserted and deleted at one instant), runs of equal timestamps, pushed
in random batches with or without the ``op`` column (when all rows are inserts), with heartbeats in
between. The reference (``change_lifetimes``) gives each insert its lifetime: a delete ends the
oldest alive copy. Checked: the relation itself (its non-ghost tuples exactly, so which copy a
delete ends is checked too), ISTREAM, DSTREAM and RSTREAM of it, joins of every stream window with
a relation and of two relations, and aggregates over a relation.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.reference import (
    INF,
    alive_at,
    change_lifetimes,
    dstream,
    instants,
    istream,
    istream_of,
    join_at,
    lifetimes,
    rstream,
)
from oracle.test_differential_aggregate import aggregate
from oracle.test_differential_join import interleaving, stream
from oracle.test_differential_select import window_sql

EXAMPLES = examples(300)
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LIFETIMES = st.sampled_from(["direct", "negative"])

ARROW = {"int": pa.int64(), "double": pa.float64(), "str": pa.string()}
VALUES = {
    "int": st.one_of(st.none(), st.integers(0, 3)),
    "double": st.one_of(st.none(), st.sampled_from([0.5, 1.5, 2.5])),
    "str": st.one_of(st.none(), st.sampled_from(["x", "y"])),
}


@st.composite
def changes(
    draw, columns: tuple[tuple[str, str], ...] = (("k", "int"), ("d", "double")), max_rows: int = 24
):
    """Rows of a change table: each an insert of drawn values or a delete of a value alive then
    (often the one inserted just before, at the same instant: a ghost)."""
    n = draw(st.integers(0, max_rows))
    t = draw(st.integers(0, 3))
    alive: list[tuple] = []
    rows = []
    for _ in range(n):
        t += draw(st.sampled_from([0, 0, 1, 1, 2, 4]))
        if alive and draw(st.integers(0, 2)) == 0:
            v = alive[-1] if draw(st.integers(0, 3)) == 0 else draw(st.sampled_from(alive))
            alive.remove(v)
            op = "-"
        else:
            v = tuple(draw(VALUES[type_]) for _, type_ in columns)
            alive.append(v)
            op = "+"
        rows.append(
            {**{name: x for (name, _), x in zip(columns, v, strict=True)}, "op": op, "ts": t}
        )
    return rows


def change_table(rows: list[dict], columns, with_op: bool) -> pa.Table:
    fields = [(name, ARROW[type_]) for name, type_ in columns] + [("ts", pa.int64())]
    if with_op:
        fields.insert(-1, ("op", pa.string()))
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


def push_in_batches(
    draw, eng: cq_py.Engine, name: str, rows: list[dict], columns, heartbeats: bool = True
) -> None:
    """``rows`` cut into random batches, the op column left out when all are inserts (sometimes),
    with ``heartbeats`` an advance to the next batch's first timestamp between some of them (only
    when ``name`` is the only input: an advance is a promise about every input)."""
    with_op = any(r["op"] == "-" for r in rows) or draw(st.booleans())
    table = change_table(rows, columns, with_op)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(rows))), max_size=5))))
    bounds = [0] + [c for c in cuts if c < len(rows)] + [len(rows)]
    for lo, hi in pairwise(bounds):
        if hi > lo:
            eng.push(name, table.slice(lo, hi - lo))
            if heartbeats and hi < len(rows) and draw(st.booleans()):
                eng.advance(rows[hi]["ts"])


def fetch_relation(eng: cq_py.Engine, query: str, cols: list[str]) -> list[tuple]:
    return [
        (
            tuple(r[c] for c in cols),
            (r["start"], r["start_step"]),
            INF if r["end"] is None else (r["end"], r["end_step"]),
        )
        for r in eng.fetch(query).to_pylist()
    ]


def fetch_stream(eng: cq_py.Engine, query: str, cols: list[str]) -> Counter:
    return Counter(
        (tuple(r[c] for c in cols), (r["ts"], r["ts_step"])) for r in eng.fetch(query).to_pylist()
    )


def lasting(rel) -> Counter:
    """The tuples that are not ghosts (start < end), as a bag."""
    return Counter((v, s, e) for v, s, e in rel if s < e)


@SETTINGS
@given(
    st.data(), changes(), st.sampled_from(["", " WHERE k > 0", " WHERE d IS NOT NULL"]), LIFETIMES
)
def test_relation_equals_reference(data, rows, where, lifetime):
    body = f"SELECT k, d FROM r{where}"
    eng = cq_py.Engine(expose_steps=True, lifetime=lifetime)
    eng.execute(
        f"REGISTER RELATION r(k INT, d DOUBLE); REGISTER QUERY rel AS {body};"
        f"REGISTER QUERY i AS ISTREAM({body}); REGISTER QUERY d AS DSTREAM({body});"
        f"REGISTER QUERY rs AS RSTREAM({body});"
    )
    push_in_batches(data.draw, eng, "r", rows, (("k", "int"), ("d", "double")))
    eng.close()

    expected = [
        (v, s, e)
        for v, s, e in change_lifetimes(rows, ["k", "d"])
        if where != " WHERE k > 0" or (v[0] is not None and v[0] > 0)
        if where != " WHERE d IS NOT NULL" or v[1] is not None
    ]
    got = fetch_relation(eng, "rel", ["k", "d"])
    # Exactly the reference's tuples: the same copy ends at each delete. Ghosts may come or not.
    assert lasting(got) == lasting(expected), body
    assert fetch_stream(eng, "i", ["k", "d"]) == istream(expected), body
    assert fetch_stream(eng, "d", ["k", "d"]) == dstream(expected), body
    progress = rows[-1]["ts"] if rows else 0  # the engine's P: no advance goes beyond the last row
    assert fetch_stream(eng, "rs", ["k", "d"]) == rstream(expected, progress), body


# The left side of a join: a window on the stream s(a, b), or the relation q(a, b).
LEFTS = st.one_of(
    st.just(("now",)),
    st.just(("unbounded",)),
    st.integers(0, 6).map(lambda T: ("range", T)),
    st.tuples(st.integers(0, 7), st.integers(1, 4)).map(lambda p: ("slide", p[0], p[1])),
    st.integers(1, 3).map(lambda N: ("rows", N)),
    st.just(("relation",)),
)


@SETTINGS
@given(st.data(), LEFTS, changes(), st.sampled_from(["", "l.b < r.d"]), st.booleans(), LIFETIMES)
def test_join_with_a_relation_equals_reference(
    data, left, r_rows, residual, relation_first, lifetime
):
    """SELECT l.a, l.b, r.d FROM <s [window] | q> AS l, r WHERE l.a = r.k [AND l.b < r.d]."""
    if left == ("relation",):
        l_rows = data.draw(changes((("a", "int"), ("b", "double"))))
        l_from = "q AS l"
    else:
        l_rows = data.draw(stream(("a", "b")))
        l_from = f"s {window_sql(left)} AS l"
    sources = ["r", l_from] if relation_first else [l_from, "r"]
    conds = ["l.a = r.k"] + ([residual] if residual else [])
    body = f"SELECT l.a, l.b, r.d FROM {', '.join(sources)} WHERE {' AND '.join(conds)}"
    eng = cq_py.Engine(expose_steps=True, lifetime=lifetime)
    eng.execute(
        "REGISTER STREAM s(a INT, b DOUBLE); REGISTER RELATION q(a INT, b DOUBLE);"
        "REGISTER RELATION r(k INT, d DOUBLE);"
        f"REGISTER QUERY j AS {body}; REGISTER QUERY i AS ISTREAM({body});"
    )
    l_name = "q" if left == ("relation",) else "s"
    l_cols = (("a", "int"), ("b", "double"))
    r_cols = (("k", "int"), ("d", "double"))
    for name, rows in data.draw(interleaving(l_rows, r_rows)):
        if name == "t":  # interleaving names its second input t
            push_in_batches(data.draw, eng, "r", rows, r_cols, heartbeats=False)
        elif l_name == "q":
            push_in_batches(data.draw, eng, "q", rows, l_cols, heartbeats=False)
        else:
            eng.push(
                "s",
                pa.Table.from_pylist(
                    rows,
                    schema=pa.schema([("a", pa.int64()), ("b", pa.float64()), ("ts", pa.int64())]),
                ),
            )
    eng.close()

    if l_name == "q":
        lrel = change_lifetimes(l_rows, ["a", "b"])
    else:
        lrel = [
            ((r["a"], r["b"]), s, e)
            for r, (s, e) in zip(l_rows, lifetimes(l_rows, left), strict=True)
        ]
    rrel = change_lifetimes(r_rows, ["k", "d"])

    def on(lv, rv):
        if lv[0] is None or rv[0] is None or lv[0] != rv[0]:
            return False
        return not residual or (lv[1] is not None and rv[1] is not None and lv[1] < rv[1])

    def expected_at(t):
        return Counter((v[0], v[1], v[3]) for v in join_at(t, lrel, rrel, on).elements())

    got = fetch_relation(eng, "j", ["a", "b", "d"])
    for t in instants(lrel, rrel, got):
        assert alive_at(got, t) == expected_at(t), (t, body)
    assert fetch_stream(eng, "i", ["a", "b", "d"]) == istream_of(
        expected_at, instants(lrel, rrel)
    ), body


@SETTINGS
@given(
    st.data(),
    changes((("a", "int"), ("b", "double"), ("c", "str"))),
    st.sampled_from([None, "a", "c"]),
    st.sampled_from(["a", "b"]),
    st.booleans(),
    LIFETIMES,
)
def test_aggregate_over_a_relation_equals_reference(data, rows, key, x, having, lifetime):
    columns = (("a", "int"), ("b", "double"), ("c", "str"))
    items = (f"{key}, " if key else "") + (
        f"COUNT(*) AS n, COUNT({x}) AS nx, SUM({x}) AS sx, "
        f"AVG({x}) AS ax, MIN({x}) AS mn, MAX({x}) AS mx"
    )
    body = (
        f"SELECT {items} FROM r"
        + (f" GROUP BY {key}" if key else "")
        + (" HAVING COUNT(*) > 1" if having else "")
    )
    eng = cq_py.Engine(expose_steps=True, lifetime=lifetime)
    eng.execute(
        f"REGISTER RELATION r(a INT, b DOUBLE, c VARCHAR); REGISTER QUERY g AS {body};"
        f"REGISTER QUERY i AS ISTREAM({body});"
    )
    push_in_batches(data.draw, eng, "r", rows, columns)
    eng.close()

    rel = [
        (dict(zip(["a", "b", "c"], v, strict=True)), s, e)
        for v, s, e in change_lifetimes(rows, ["a", "b", "c"])
    ]

    def expected_at(t):
        return aggregate([v for v, s, e in rel if s <= t < e], key, x, having)

    cols = ([key] if key else []) + ["n", "nx", "sx", "ax", "mn", "mx"]
    got = fetch_relation(eng, "g", cols)
    changes_at = [((), s, e) for _, s, e in rel]
    for t in instants(changes_at, got):
        assert alive_at(got, t) == expected_at(t), (t, body)
    assert fetch_stream(eng, "i", cols) == istream_of(expected_at, instants(changes_at)), body
