"""GROUP BY and aggregates against the reference: at every instant the relation must hold the
SQL aggregate of R(t) per group (no row for an empty group), for both lifetime methods; HAVING
and ISTREAM on top.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.reference import INF, alive_at, dstream_of, instants, istream_of, lifetimes
from oracle.test_differential_select import window_sql, windows

EXAMPLES = examples(300)
SCHEMA = "REGISTER STREAM s(a INT, b DOUBLE, c VARCHAR);"


@st.composite
def stream(draw):
    n = draw(st.integers(0, 25))
    t = draw(st.integers(0, 3))
    rows = []
    for _ in range(n):
        t += draw(st.sampled_from([0, 0, 1, 1, 2, 4]))
        rows.append(
            {
                "a": draw(st.one_of(st.none(), st.integers(-2, 3))),
                "b": draw(st.one_of(st.none(), st.sampled_from([0.0, 0.5, -1.5, 2.0, 3.25]))),
                "c": draw(st.one_of(st.none(), st.sampled_from(["x", "y"]))),
                "ts": t,
            }
        )
    return rows


def aggregate(values: list[dict], key: str | None, x: str, having: bool) -> Counter:
    groups: dict = {}
    for v in values:
        groups.setdefault(v[key] if key else (), []).append(v)
    out: Counter = Counter()
    for k, vs in groups.items():
        xs = [v[x] for v in vs if v[x] is not None]
        row = (
            len(vs),
            len(xs),
            sum(xs) if xs else None,
            (sum(xs) / len(xs)) if xs else None,
            min(xs) if xs else None,
            max(xs) if xs else None,
        )
        if having and not len(vs) > 1:
            continue
        out[((k,) if key else ()) + row] += 1
    return out


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    stream(),
    windows,
    st.sampled_from([None, "a", "c"]),
    st.sampled_from(["a", "b"]),
    st.booleans(),
    st.integers(1, 5),
    st.sampled_from(["direct", "negative"]),
    st.sampled_from([1, 3, 65536]),
)
def test_aggregate_equals_reference(
    executor, rows, window, key, x, having, batch, lifetime, batch_size
):
    items = (f"{key}, " if key else "") + (
        f"COUNT(*) AS n, COUNT({x}) AS nx, SUM({x}) AS sx, "
        f"AVG({x}) AS ax, MIN({x}) AS mn, MAX({x}) AS mx"
    )
    body = (
        f"SELECT {items} FROM s {window_sql(window)}"
        + (f" GROUP BY {key}" if key else "")
        + (" HAVING COUNT(*) > 1" if having else "")
    )
    # batch_size: the core runs each push in slices of that many rows (Engine's docstring).
    eng = cq_py.Engine(expose_steps=True, lifetime=lifetime, batch_size=batch_size, **executor)
    eng.execute(SCHEMA + f"REGISTER QUERY r AS {body};")
    # ISTREAM and DSTREAM in scripts of their own: not sharing the aggregate, each is fused with
    # it when it can be (no HAVING: cq_py/planner/fusion.py).
    eng.execute(f"REGISTER QUERY i AS ISTREAM({body});")
    eng.execute(f"REGISTER QUERY d AS DSTREAM({body});")
    table = pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [("a", pa.int64()), ("b", pa.float64()), ("c", pa.string()), ("ts", pa.int64())]
        ),
    )
    for off in range(0, len(rows), batch):
        eng.push("s", table.slice(off, batch))
    eng.close()

    rel = [(r, s, e) for r, (s, e) in zip(rows, lifetimes(rows, window), strict=True)]

    def expected_at(t):
        return aggregate([r for r, s, e in rel if s <= t < e], key, x, having)

    cols = ([key] if key else []) + ["n", "nx", "sx", "ax", "mn", "mx"]
    got = [
        (
            tuple(r[c] for c in cols),
            (r["start"], r["start_step"]),
            INF if r["end"] is None else (r["end"], r["end_step"]),
        )
        for r in eng.fetch("r").to_pylist()
    ]
    points = instants([((), s, e) for _, s, e in rel], got)
    for t in points:
        assert alive_at(got, t) == expected_at(t), (t, body)
    points = instants([((), s, e) for _, s, e in rel])
    for q, of in (("i", istream_of), ("d", dstream_of)):
        got_q = Counter(
            (tuple(r[c] for c in cols), (r["ts"], r["ts_step"])) for r in eng.fetch(q).to_pylist()
        )
        assert got_q == of(expected_at, points), (q, body)
