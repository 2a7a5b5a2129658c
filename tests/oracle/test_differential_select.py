"""The engine against the reference evaluator on generated queries and data (hypothesis).

Queries: SELECT <generated expressions, CASE and CAST included> FROM s <every window of SEMANTICS.md
§4.1> [WHERE <generated condition>], as a relation and under ISTREAM, DSTREAM and RSTREAM. Data:
nulls, ties and bursts of equal timestamps, pushed in random batch sizes (batch boundaries inside
runs of equal timestamps included), with heartbeats in between. Set CQ_HYPOTHESIS_EXAMPLES to run
more than the default 300.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.reference import INF, Col, Lit, Op, dstream, equivalent, istream, relation, rstream

EXAMPLES = examples(300)

COLUMNS = {"a": "int", "b": "double", "c": "str", "f": "bool"}
SCHEMA = "REGISTER STREAM s(a INT, b DOUBLE, c VARCHAR, f BOOLEAN);"

ints = st.one_of(st.none(), st.integers(-4, 4))
doubles = st.one_of(st.none(), st.sampled_from([0.0, 0.5, -1.5, 2.0, 3.25]))
# Besides words, strings that CAST reads as numbers or booleans (none that reads as NaN, which no
# equality would match).
strs = st.one_of(
    st.none(), st.sampled_from(["", "x", "y", "xy", "1", " -2 ", "2.5", "1e1", "t", "No"])
)
bools = st.one_of(st.none(), st.booleans())


def num_leaf():
    return st.one_of(
        st.just(Col("a", "int")),
        st.just(Col("b", "double")),
        st.integers(-3, 3).map(lambda v: Lit(v, "int")),
        st.sampled_from([0.0, 0.5, -2.5]).map(lambda v: Lit(v, "double")),
        st.just(Lit(None, "int")),
        st.sampled_from(["CAST_int", "CAST_double"]).map(lambda op: Op(op, (Col("c", "str"),))),
    )


def cond_leaf():
    """A WHEN condition: TRUE, FALSE, NULL or a comparison that may be NULL."""
    return st.one_of(
        st.just(Col("f", "bool")),
        st.sampled_from([True, False, None]).map(lambda v: Lit(v, "bool")),
        st.tuples(st.sampled_from(["=", "<", ">="]), num_leaf(), num_leaf()).map(
            lambda t: Op(t[0], (t[1], t[2]))
        ),
        st.tuples(
            st.sampled_from(["=", "<"]),
            st.just(Col("c", "str")),
            st.sampled_from(["x", "1"]).map(lambda v: Lit(v, "str")),
        ).map(lambda t: Op(t[0], (t[1], t[2]))),
    )


def case_of(values, min_size=1):
    """CASE WHEN c THEN v ... [ELSE e] END over values drawn from ``values``."""
    return st.tuples(
        st.lists(st.tuples(cond_leaf(), values), min_size=min_size, max_size=3),
        st.one_of(st.none(), values),
    ).map(
        lambda t: Op(
            "CASE", tuple(x for pair in t[0] for x in pair) + ((t[1],) if t[1] is not None else ())
        )
    )


def num_expr():
    return st.recursive(
        num_leaf(),
        lambda inner: st.one_of(
            st.tuples(st.sampled_from(["+", "-", "*", "/", "%"]), inner, inner).map(
                lambda t: Op(t[0], (t[1], t[2]))
            ),
            inner.map(lambda x: Op("neg", (x,))),
            st.tuples(
                st.sampled_from(["CAST_int", "CAST_double"]),
                st.one_of(inner, st.just(Col("c", "str")), st.just(Col("f", "bool"))),
            ).map(lambda t: Op(t[0], (t[1],))),
            case_of(inner),
        ),
        max_leaves=4,
    )


def str_expr():
    return st.one_of(
        st.just(Col("c", "str")),
        st.one_of(num_expr(), st.just(Col("f", "bool"))).map(lambda x: Op("CAST_str", (x,))),
        case_of(
            st.one_of(
                st.just(Col("c", "str")),
                st.sampled_from(["", "x", "1"]).map(lambda v: Lit(v, "str")),
                num_leaf().map(lambda x: Op("CAST_str", (x,))),
            )
        ),
    )


def bool_expr():
    leaf = st.one_of(
        st.just(Col("f", "bool")),
        st.booleans().map(lambda v: Lit(v, "bool")),
        st.tuples(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), num_expr(), num_expr()).map(
            lambda t: Op(t[0], (t[1], t[2]))
        ),
        st.tuples(
            st.sampled_from(["=", "<", ">="]),
            str_expr(),
            st.sampled_from(["", "x", "xy", "z", "1"]).map(lambda v: Lit(v, "str")),
        ).map(lambda t: Op(t[0], (t[1], t[2]))),
        st.tuples(
            st.sampled_from(["ISNULL", "ISNOTNULL"]),
            st.one_of(num_expr(), str_expr(), st.just(Col("f", "bool"))),
        ).map(lambda t: Op(t[0], (t[1],))),
        st.one_of(num_expr(), st.just(Col("c", "str"))).map(lambda x: Op("CAST_bool", (x,))),
        # Not a NULL literal as a value: a CASE of NULLs only would be a BIGINT.
        case_of(
            st.one_of(
                cond_leaf().filter(lambda e: not (isinstance(e, Lit) and e.value is None)),
                st.just(Col("c", "str")).map(lambda x: Op("CAST_bool", (x,))),
            )
        ),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(st.sampled_from(["AND", "OR"]), inner, inner).map(
                lambda t: Op(t[0], (t[1], t[2]))
            ),
            inner.map(lambda x: Op("NOT", (x,))),
        ),
        max_leaves=4,
    )


def render(e) -> str:
    if isinstance(e, Col):
        return e.name
    if isinstance(e, Lit):
        if e.value is None:
            return "NULL"
        if e.type == "bool":
            return "TRUE" if e.value else "FALSE"
        if e.type == "str":
            return "'" + e.value + "'"
        return f"({e.value!r})" if e.value < 0 else repr(e.value)
    a = [render(x) for x in e.args]
    if e.op == "CASE":
        # An odd count has an ELSE last: the pairs stop before it.
        whens = " ".join(f"WHEN {c} THEN {v}" for c, v in zip(a[0::2], a[1::2], strict=False))
        return f"(CASE {whens}{f' ELSE {a[-1]}' if len(a) % 2 else ''} END)"
    if e.op.startswith("CAST_"):
        return f"CAST({a[0]} AS {CQL_TYPES[e.op[5:]]})"
    if e.op == "neg":
        return f"(-{a[0]})"
    if e.op == "NOT":
        return f"(NOT {a[0]})"
    if e.op == "ISNULL":
        return f"({a[0]} IS NULL)"
    if e.op == "ISNOTNULL":
        return f"({a[0]} IS NOT NULL)"
    return f"({a[0]} {e.op} {a[1]})"


CQL_TYPES = {"int": "BIGINT", "double": "DOUBLE", "str": "VARCHAR", "bool": "BOOLEAN"}


def plain_select_expr():
    # A select item may not be a bare NULL (it would have no type).
    return st.one_of(num_expr(), bool_expr(), str_expr()).filter(
        lambda e: not (isinstance(e, Lit) and e.value is None)
    )


@st.composite
def data(draw):
    n = draw(st.integers(0, 40))
    ts, t = [], draw(st.integers(0, 5))
    for _ in range(n):
        t += draw(st.sampled_from([0, 0, 1, 1, 2, 5]))  # many ties and bursts
        ts.append(t)
    rows = [
        {"a": draw(ints), "b": draw(doubles), "c": draw(strs), "f": draw(bools), "ts": x}
        for x in ts
    ]
    if draw(st.integers(0, 7)) == 0:
        cuts = list(range(1, n))  # batch size 1
    else:
        cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=6))))
    return rows, cuts


windows = st.one_of(
    st.just(("now",)),
    st.just(("unbounded",)),
    st.integers(0, 6).map(lambda T: ("range", T)),
    st.tuples(st.integers(0, 7), st.integers(1, 4)).map(lambda p: ("slide", p[0], p[1])),
    st.integers(1, 4).map(lambda N: ("rows", N)),
    st.tuples(st.sampled_from(["a", "c"]), st.integers(1, 3)).map(
        lambda p: ("partition", p[0], p[1])
    ),
)


def window_sql(w) -> str:
    if w[0] == "slide":
        return f"[Range {w[1]} Slide {w[2]}]"
    if w[0] == "rows":
        return f"[Rows {w[1]}]"
    if w[0] == "partition":
        return f"[Partition By {w[1]} Rows {w[2]}]"
    return {"now": "[Now]", "unbounded": "[Range Unbounded]"}.get(w[0]) or f"[Range {w[1]}]"


def run_engine(
    cql: str | list[str], rows: list[dict], cuts: list[int], lifetime: str, executor: dict
) -> dict[str, pa.Table]:
    """The engine's results for ``cql`` (scripts executed one after the other, before any input:
    operators of different scripts are never shared) over ``rows`` pushed in pieces at ``cuts``."""
    eng = cq_py.Engine(expose_steps=True, lifetime=lifetime, **executor)
    for text in [cql] if isinstance(cql, str) else cql:
        eng.execute(text)
    schema = pa.schema(
        [
            ("a", pa.int64()),
            ("b", pa.float64()),
            ("c", pa.string()),
            ("f", pa.bool_()),
            ("ts", pa.int64()),
        ]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    bounds = [0, *cuts, len(rows)]
    for lo, hi in itertools.pairwise(bounds):
        if hi > lo:
            eng.push("s", table.slice(lo, hi - lo))
            eng.advance(rows[hi - 1]["ts"])  # a heartbeat at the last timestamp changes nothing
    eng.close()
    return {q: eng.fetch(q) for q in eng.query_names()}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    data(),
    windows,
    st.one_of(st.none(), bool_expr()),
    st.lists(plain_select_expr(), min_size=1, max_size=3),
    st.sampled_from(["direct", "negative"]),
)
def test_engine_equals_reference(executor, dataset, window, where, select, lifetime):
    """Both lifetime methods (SEMANTICS.md §5) against the reference: direct = negative = oracle."""
    rows, cuts = dataset
    items = ", ".join(f"{render(e)} AS x{i}" for i, e in enumerate(select))
    body = f"SELECT {items} FROM s {window_sql(window)}" + (
        f" WHERE {render(where)}" if where else ""
    )
    cql = SCHEMA + (
        f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});"
        f"REGISTER QUERY d AS DSTREAM({body}); REGISTER QUERY rs AS RSTREAM({body});"
        f"REGISTER QUERY dl AS ISTREAM({body}) <3>; REGISTER QUERY dn AS DSTREAM({body}) <Now>;"
    )
    out = run_engine(cql, rows, cuts, lifetime, executor)
    names = [f"x{i}" for i in range(len(select))]

    expected_rel = relation(rows, window, where, select)
    got_rel = [
        (
            tuple(r[n] for n in names),
            (r["start"], r["start_step"]),
            INF if r["end"] is None else (r["end"], r["end_step"]),
        )
        for r in out["r"].to_pylist()
    ]
    assert equivalent(got_rel, expected_rel), cql

    def bag(query):
        return Counter(
            (tuple(r[n] for n in names), (r["ts"], r["ts_step"])) for r in out[query].to_pylist()
        )

    assert bag("i") == istream(expected_rel), cql
    assert bag("d") == dstream(expected_rel), cql
    # Delays: <d> adds d ticks, <Now> one ε-step (SEMANTICS.md §2).
    assert bag("dl") == Counter(
        {(v, (t[0] + 3, t[1])): n for (v, t), n in istream(expected_rel).items()}
    ), cql
    assert bag("dn") == Counter(
        {(v, (t[0], t[1] + 1)): n for (v, t), n in dstream(expected_rel).items()}
    ), cql
    progress = rows[-1]["ts"] if rows else 0  # the engine's P: no advance goes beyond the last row
    assert bag("rs") == rstream(expected_rel, progress), cql
    # Stream rows come in time order.
    for query in ("i", "d", "rs"):
        stamps = [(r["ts"], r["ts_step"]) for r in out[query].to_pylist()]
        assert stamps == sorted(stamps), (query, cql)


@settings(
    max_examples=max(50, EXAMPLES // 3),
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
    st.sampled_from(["direct", "negative"]),
)
def test_union_all_equals_reference(executor, dataset, w1, w2, where1, where2, select, lifetime):
    """UNION ALL of two windows of the stream (a bag union of lifetimes), as a relation and
    under the three relation-to-stream operators."""
    rows, cuts = dataset
    items = ", ".join(f"{render(e)} AS x{i}" for i, e in enumerate(select))

    def branch(w, where):
        return f"SELECT {items} FROM s {window_sql(w)}" + (
            f" WHERE {render(where)}" if where else ""
        )

    body = f"{branch(w1, where1)} UNION ALL {branch(w2, where2)}"
    cql = SCHEMA + (
        f"REGISTER QUERY r AS {body}; REGISTER QUERY i AS ISTREAM({body});"
        f"REGISTER QUERY d AS DSTREAM({body}); REGISTER QUERY rs AS RSTREAM({body});"
        f"REGISTER QUERY dl AS ISTREAM({body}) <3>; REGISTER QUERY dn AS DSTREAM({body}) <Now>;"
    )
    out = run_engine(cql, rows, cuts, lifetime, executor)
    names = [f"x{i}" for i in range(len(select))]
    expected = relation(rows, w1, where1, select) + relation(rows, w2, where2, select)
    got = [
        (
            tuple(r[n] for n in names),
            (r["start"], r["start_step"]),
            INF if r["end"] is None else (r["end"], r["end_step"]),
        )
        for r in out["r"].to_pylist()
    ]
    assert equivalent(got, expected), cql

    def bag(query):
        return Counter(
            (tuple(r[n] for n in names), (r["ts"], r["ts_step"])) for r in out[query].to_pylist()
        )

    assert bag("i") == istream(expected), cql
    assert bag("d") == dstream(expected), cql
    assert bag("rs") == rstream(expected, rows[-1]["ts"] if rows else 0), cql
