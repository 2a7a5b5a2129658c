"""Joins against the reference: the relation of a join must equal, at every instant, the SQL join
of the two windowed relations at that instant (SEMANTICS.md §4.2), for both lifetime methods.

s(a INT, b DOUBLE) and t(k INT, d DOUBLE), every window of SEMANTICS.md §4.1 on each side, an
equi-join on s.a = t.k (NULL joins nothing), optionally a residual comparison of s.b and t.d and a
filter on s alone, pushed in interleaved random batches.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.reference import INF, alive_at, instants, istream_of, join_at, lifetimes
from oracle.test_differential_select import window_sql

EXAMPLES = examples(300)
SCHEMA = "REGISTER STREAM s(a INT, b DOUBLE); REGISTER STREAM t(k INT, d DOUBLE);"

windows = st.one_of(
    st.just(("now",)),
    st.just(("unbounded",)),
    st.integers(0, 6).map(lambda T: ("range", T)),
    st.tuples(st.integers(0, 7), st.integers(1, 4)).map(lambda p: ("slide", p[0], p[1])),
    st.integers(1, 3).map(lambda N: ("rows", N)),
)


@st.composite
def stream(draw, names):
    n = draw(st.integers(0, 14))
    t = draw(st.integers(0, 3))
    rows = []
    for _ in range(n):
        t += draw(st.sampled_from([0, 0, 1, 2, 3]))
        rows.append(
            {
                names[0]: draw(st.one_of(st.none(), st.integers(0, 3))),
                names[1]: draw(st.one_of(st.none(), st.sampled_from([0.5, 1.5, 2.5]))),
                "ts": t,
            }
        )
    return rows


@st.composite
def interleaving(draw, s_rows, t_rows):
    """Chunks of s and t in an order that keeps each stream in time order."""
    chunks = []
    for name, rows in (("s", s_rows), ("t", t_rows)):
        cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(rows))), max_size=4))))
        bounds = [0] + [c for c in cuts if c < len(rows)] + [len(rows)]
        chunks.append([(name, rows[a:b]) for a, b in itertools.pairwise(bounds) if b > a])
    order = []
    i = j = 0
    while i < len(chunks[0]) or j < len(chunks[1]):
        if j >= len(chunks[1]) or (i < len(chunks[0]) and draw(st.booleans())):
            order.append(chunks[0][i])
            i += 1
        else:
            order.append(chunks[1][j])
            j += 1
    return order


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.data(),
    windows,
    windows,
    st.sampled_from(["", "s.b < t.d", "s.b + t.d > 2"]),
    st.sampled_from(["", "s.b IS NOT NULL", "s.a > 0"]),
    st.sampled_from(["direct", "negative"]),
)
def test_join_equals_reference(executor, data, w1, w2, residual, filter_s, lifetime):
    s_rows = data.draw(stream(("a", "b")))
    t_rows = data.draw(stream(("k", "d")))
    conds = ["s.a = t.k"] + [c for c in (residual, filter_s) if c]
    body = (
        f"SELECT s.a, s.b, t.d FROM s {window_sql(w1)}, t {window_sql(w2)} "
        f"WHERE {' AND '.join(conds)}"
    )
    eng = cq_py.Engine(expose_steps=True, lifetime=lifetime, **executor)
    eng.execute(SCHEMA + f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});")
    schemas = {
        "s": pa.schema([("a", pa.int64()), ("b", pa.float64()), ("ts", pa.int64())]),
        "t": pa.schema([("k", pa.int64()), ("d", pa.float64()), ("ts", pa.int64())]),
    }
    for name, rows in data.draw(interleaving(s_rows, t_rows)):
        eng.push(name, pa.Table.from_pylist(rows, schema=schemas[name]))
    eng.close()

    def keep_s(r):
        if filter_s == "s.b IS NOT NULL":
            return r["b"] is not None
        if filter_s == "s.a > 0":
            return r["a"] is not None and r["a"] > 0
        return True

    left = [
        ((r["a"], r["b"]), s, e)
        for r, (s, e) in zip(s_rows, lifetimes(s_rows, w1), strict=True)
        if keep_s(r)
    ]
    right = [
        ((r["k"], r["d"]), s, e) for r, (s, e) in zip(t_rows, lifetimes(t_rows, w2), strict=True)
    ]

    def on(lv, rv):
        if lv[0] is None or rv[0] is None or lv[0] != rv[0]:
            return False
        if residual == "s.b < t.d":
            return lv[1] is not None and rv[1] is not None and lv[1] < rv[1]
        if residual == "s.b + t.d > 2":
            return lv[1] is not None and rv[1] is not None and lv[1] + rv[1] > 2
        return True

    def expected_at(t):
        return Counter((v[0], v[1], v[3]) for v in join_at(t, left, right, on).elements())

    got = [
        (
            (r["a"], r["b"], r["d"]),
            (r["start"], r["start_step"]),
            INF if r["end"] is None else (r["end"], r["end_step"]),
        )
        for r in eng.fetch("r").to_pylist()
    ]
    points = instants(left, right, got)
    for t in points:
        assert alive_at(got, t) == expected_at(t), (t, body)
    got_i = Counter(
        ((r["a"], r["b"], r["d"]), (r["ts"], r["ts_step"])) for r in eng.fetch("i").to_pylist()
    )
    assert got_i == istream_of(expected_at, instants(left, right)), body
