"""GROUP BY against the reference where the aggregate's strategies differ (direct = negative =
reference): keys of every type and several keys at once (the encoded-key path), NULL keys and
values, DISTINCT aggregates, MIN/MAX of strings and booleans, a WHERE between window and
aggregate (a selection vector on a constant-duration input), integer keys spread wide enough to
outgrow the direct-indexed group table, batch size 1 and batches cut inside runs of equal
timestamps; and a UNION ALL of two streams pushed out of time order, which reaches the
constant-duration path ([Range Unbounded] on both sides) with rows to sort before they are used.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from oracle.reference import (
    INF,
    alive_at,
    dstream_of,
    instants,
    istream_of,
    lifetimes,
    relation,
    wrap64,
)
from oracle.test_differential_select import (
    EXAMPLES,
    SCHEMA,
    Col,
    bool_expr,
    data,
    render,
    run_engine,
    window_sql,
    windows,
)

KEYS = ["a", "b", "c", "f"]
SCHEMA_PA = pa.schema(
    [
        ("a", pa.int64()),
        ("b", pa.float64()),
        ("c", pa.string()),
        ("f", pa.bool_()),
        ("ts", pa.int64()),
    ]
)


def items(x: str, y: str) -> list[tuple[str, str]]:
    """(SQL, name) of the aggregates computed: over the number x, and MIN/MAX over y."""
    return [
        ("COUNT(*)", "n"),
        (f"COUNT({x})", "nx"),
        (f"SUM({x})", "sx"),
        (f"AVG({x})", "ax"),
        (f"MIN({y})", "mn"),
        (f"MAX({y})", "mx"),
        (f"COUNT(DISTINCT {x})", "dn"),
        (f"SUM(DISTINCT {x})", "ds"),
        (f"AVG(DISTINCT {x})", "da"),
    ]


def grouped(values: list[dict], keys: list[str], x: str, y: str) -> Counter:
    """SELECT keys, aggregates FROM values GROUP BY keys, as SQL computes it."""
    groups: dict = {}
    for v in values:
        groups.setdefault(tuple(v[k] for k in keys), []).append(v)
    out: Counter = Counter()
    for k, vs in groups.items():
        xs = [v[x] for v in vs if v[x] is not None]
        ys = [v[y] for v in vs if v[y] is not None]
        dx = sorted(set(xs))

        def total(z):
            return wrap64(sum(z)) if x == "a" else float(sum(z))

        out[
            (
                *k,
                len(vs),
                len(xs),
                total(xs) if xs else None,
                sum(xs) / len(xs) if xs else None,
                min(ys) if ys else None,
                max(ys) if ys else None,
                len(dx),
                total(dx) if dx else None,
                sum(dx) / len(dx) if dx else None,
            )
        ] += 1
    return out


def spread(rows: list[dict], factor: int) -> list[dict]:
    """Integer keys scaled apart: the direct-indexed group table grows, or gives way to hashing."""
    return [dict(r, a=None if r["a"] is None else r["a"] * factor) for r in rows]


def check(got_rel, got_istream, got_dstream, cols, rel, keys, x, y, body):
    def expected_at(t):
        return grouped([v for v, s, e in rel if s <= t < e], keys, x, y)

    got = [
        (
            tuple(r[c] for c in cols),
            (r["start"], r["start_step"]),
            INF if r["end"] is None else (r["end"], r["end_step"]),
        )
        for r in got_rel
    ]
    for t in instants([((), s, e) for _, s, e in rel], got):
        assert alive_at(got, t) == expected_at(t), (t, body)
    points = instants([((), s, e) for _, s, e in rel])
    got_i = Counter((tuple(r[c] for c in cols), (r["ts"], r["ts_step"])) for r in got_istream)
    assert got_i == istream_of(expected_at, points), body
    got_d = Counter((tuple(r[c] for c in cols), (r["ts"], r["ts_step"])) for r in got_dstream)
    assert got_d == dstream_of(expected_at, points), body


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    data(),
    windows,
    st.one_of(st.none(), bool_expr()),
    st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
    st.sampled_from(["a", "b"]),
    st.sampled_from(KEYS),
    st.sampled_from([1, 1, 3000, 40000]),
    st.sampled_from(["direct", "negative"]),
)
def test_grouping_equals_reference(executor, dataset, window, where, keys, x, y, factor, lifetime):
    rows, cuts = dataset
    rows = spread(rows, factor)
    aggs = items(x, y)
    select = ", ".join(keys + [f"{sql} AS {name}" for sql, name in aggs])
    body = (
        f"SELECT {select} FROM s {window_sql(window)}"
        + (f" WHERE {render(where)}" if where else "")
        + (f" GROUP BY {', '.join(keys)}" if keys else "")
    )
    # ISTREAM and DSTREAM in scripts of their own: not sharing the aggregate, each is fused with
    # it (cq_py/planner/fusion.py).
    out = run_engine(
        [
            SCHEMA + f"REGISTER QUERY r AS {body};",
            f"REGISTER QUERY i AS ISTREAM({body});",
            f"REGISTER QUERY d AS DSTREAM({body});",
        ],
        rows,
        cuts,
        lifetime,
        executor,
    )
    # The relation of whole input rows that the aggregate sees: the window, then the WHERE.
    rel = [
        (dict(zip(KEYS, v, strict=True)), s, e)
        for v, s, e in relation(rows, window, where, [Col(k, "") for k in KEYS])
    ]
    check(
        out["r"].to_pylist(),
        out["i"].to_pylist(),
        out["d"].to_pylist(),
        keys + [n for _, n in aggs],
        rel,
        keys,
        x,
        y,
        body,
    )


@st.composite
def two_streams(draw):
    """Rows of s and t, each in time order but not with each other, and the order of the pushes."""

    def rows_of():
        n = draw(st.integers(0, 12))
        t = draw(st.integers(0, 6))
        out = []
        for _ in range(n):
            t += draw(st.sampled_from([0, 0, 1, 2, 3]))
            out.append(
                {
                    "a": draw(st.one_of(st.none(), st.integers(-2, 2))),
                    "b": draw(st.one_of(st.none(), st.sampled_from([0.0, 0.5, -1.5]))),
                    "c": draw(st.one_of(st.none(), st.sampled_from(["x", "y"]))),
                    "f": draw(st.one_of(st.none(), st.booleans())),
                    "ts": t,
                }
            )
        return out

    s, t = rows_of(), rows_of()
    # Pushes: (stream, how many rows), until both are used up.
    pushes, left = [], {"s": len(s), "t": len(t)}
    while left["s"] or left["t"]:
        name = draw(st.sampled_from([k for k in left if left[k]]))
        k = draw(st.integers(1, left[name]))
        pushes.append((name, k))
        left[name] -= k
    return s, t, pushes


constant_windows = st.one_of(
    st.just(("unbounded",)),
    st.just(("unbounded",)),
    st.just(("now",)),
    st.integers(0, 4).map(lambda T: ("range", T)),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    two_streams(),
    constant_windows,
    constant_windows,
    st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
    st.sampled_from(["a", "b"]),
    st.sampled_from(KEYS),
    st.sampled_from(["direct", "negative"]),
)
def test_grouping_of_union_equals_reference(executor, streams, w1, w2, keys, x, y, lifetime):
    s_rows, t_rows, pushes = streams
    aggs = items(x, y)
    select = ", ".join(keys + [f"{sql} AS {name}" for sql, name in aggs])
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    eng = cq_py.Engine(expose_steps=True, lifetime=lifetime, **executor)
    eng.execute(
        SCHEMA + "REGISTER STREAM t(a INT, b DOUBLE, c VARCHAR, f BOOLEAN);"
        f"REGISTER QUERY u AS SELECT a, b, c, f FROM s {window_sql(w1)} "
        f"UNION ALL SELECT a, b, c, f FROM t {window_sql(w2)};"
        f"REGISTER QUERY r AS SELECT {select} FROM u{group};"
    )
    eng.execute(f"REGISTER QUERY i AS ISTREAM(SELECT {select} FROM u{group});")
    eng.execute(f"REGISTER QUERY d AS DSTREAM(SELECT {select} FROM u{group});")
    at = {"s": 0, "t": 0}
    for name, k in pushes:
        src = s_rows if name == "s" else t_rows
        eng.push(name, pa.Table.from_pylist(src[at[name] : at[name] + k], schema=SCHEMA_PA))
        at[name] += k
    eng.close()
    rel = [
        (r, s, e)
        for rows, w in ((s_rows, w1), (t_rows, w2))
        for r, (s, e) in zip(rows, lifetimes(rows, w), strict=True)
    ]
    body = f"{select} over {window_sql(w1)} UNION ALL {window_sql(w2)}{group}"
    check(
        eng.fetch("r").to_pylist(),
        eng.fetch("i").to_pylist(),
        eng.fetch("d").to_pylist(),
        keys + [n for _, n in aggs],
        rel,
        keys,
        x,
        y,
        body,
    )
