"""UNION, EXCEPT, INTERSECT and SELECT DISTINCT against the reference: at every instant, the SQL
set operation of the two windowed relations (duplicates removed), for both lifetime methods."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.reference import INF, alive_at, instants, istream_of, relation
from oracle.test_differential_select import (
    EXAMPLES,
    SCHEMA,
    bool_expr,
    data,
    plain_select_expr,
    render,
    run_engine,
    window_sql,
    windows,
)

OPS = {
    "UNION": lambda lhs, rhs: set(lhs) | set(rhs),
    "EXCEPT": lambda lhs, rhs: set(lhs) - set(rhs),
    "INTERSECT": lambda lhs, rhs: set(lhs) & set(rhs),
    "DISTINCT": lambda lhs, _: set(lhs),
}


@settings(
    max_examples=max(60, EXAMPLES // 2),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    data(),
    windows,
    windows,
    st.one_of(st.none(), bool_expr()),
    st.one_of(st.none(), bool_expr()),
    st.lists(plain_select_expr(), min_size=1, max_size=2),
    st.sampled_from(sorted(OPS)),
    st.sampled_from(["direct", "negative"]),
)
def test_set_operation_equals_reference(
    executor, dataset, w1, w2, where1, where2, select, op, lifetime
):
    rows, cuts = dataset
    items = ", ".join(f"{render(e)} AS x{i}" for i, e in enumerate(select))

    def branch(w, where, distinct=""):
        return f"SELECT {distinct}{items} FROM s {window_sql(w)}" + (
            f" WHERE {render(where)}" if where else ""
        )

    body = (
        branch(w1, where1, "DISTINCT ")
        if op == "DISTINCT"
        else f"{branch(w1, where1)} {op} {branch(w2, where2)}"
    )
    out = run_engine(
        SCHEMA + f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});",
        rows,
        cuts,
        lifetime,
        executor,
    )
    names = [f"x{i}" for i in range(len(select))]
    left = relation(rows, w1, where1, select)
    right = relation(rows, w2, where2, select) if op != "DISTINCT" else []

    def expected_at(t):
        return Counter(OPS[op](alive_at(left, t).elements(), alive_at(right, t).elements()))

    got = [
        (
            tuple(r[n] for n in names),
            (r["start"], r["start_step"]),
            INF if r["end"] is None else (r["end"], r["end_step"]),
        )
        for r in out["r"].to_pylist()
    ]
    for t in instants(left, right, got):
        assert alive_at(got, t) == expected_at(t), (t, body)
    got_i = Counter(
        (tuple(r[n] for n in names), (r["ts"], r["ts_step"])) for r in out["i"].to_pylist()
    )
    assert got_i == istream_of(expected_at, instants(left, right)), body
