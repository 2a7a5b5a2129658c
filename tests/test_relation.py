"""Base relations (REGISTER RELATION) end to end: changes pushed in every form the API takes, joins
with streams, hand-computed results, and bad input refused with the engine left as it was."""

import pandas as pd
import pyarrow as pa
import pytest

import cq_py

LIFETIMES = pytest.mark.parametrize("lifetime", ["direct", "negative"])

PRICES = (
    "REGISTER RELATION prices(id INT, price DOUBLE);"
    "REGISTER QUERY p AS SELECT id, price FROM prices;"
    "REGISTER QUERY added AS ISTREAM(SELECT id, price FROM prices);"
    "REGISTER QUERY removed AS DSTREAM(SELECT id, price FROM prices);"
)


def changes(rows):
    """(id, price, op, ts) tuples as a table of changes."""
    return pa.table(
        {
            "id": [r[0] for r in rows],
            "price": [r[1] for r in rows],
            "op": [r[2] for r in rows],
            "ts": [r[3] for r in rows],
        }
    )


def lasting(table):
    """The rows of a relation-valued result that are not ghosts (start = end)."""
    return [r for r in table.to_pylist() if r["start"] != r["end"]]


def engine(cql=PRICES, **options):
    eng = cq_py.Engine(**options)
    eng.execute(cql)
    return eng


@LIFETIMES
def test_inserts_and_deletes_become_lifetimes(lifetime):
    eng = engine(lifetime=lifetime)
    eng.push(
        "prices",
        changes([(1, 10.0, "+", 1), (2, 20.0, "+", 2), (1, 10.0, "-", 5), (1, 11.0, "+", 5)]),
    )
    eng.close()
    assert eng.fetch("p").to_pylist() == [
        {"id": 1, "price": 10.0, "start": 1, "end": 5},
        {"id": 2, "price": 20.0, "start": 2, "end": None},  # alive at close: never ends
        {"id": 1, "price": 11.0, "start": 5, "end": None},
    ]
    assert eng.fetch("added").to_pylist() == [
        {"id": 1, "price": 10.0, "ts": 1},
        {"id": 2, "price": 20.0, "ts": 2},
        {"id": 1, "price": 11.0, "ts": 5},
    ]
    assert eng.fetch("removed").to_pylist() == [{"id": 1, "price": 10.0, "ts": 5}]


@LIFETIMES
def test_a_delete_ends_the_oldest_alive_copy(lifetime):
    eng = engine(lifetime=lifetime)
    # Three copies of (7, 1.0); the deletes at 4 and 6 end the copies of 1 and 2, in that order.
    eng.push("prices", changes([(7, 1.0, "+", 1), (7, 1.0, "+", 2), (7, 1.0, "+", 3)]))
    eng.push("prices", changes([(7, 1.0, "-", 4)]))
    eng.push("prices", changes([(7, 1.0, "-", 6)]))
    eng.close()
    assert [(r["start"], r["end"]) for r in eng.fetch("p").to_pylist()] == [
        (1, 4),
        (2, 6),
        (3, None),
    ]


@LIFETIMES
def test_nulls_are_equal_when_a_delete_looks_for_its_row(lifetime):
    eng = engine(lifetime=lifetime)
    eng.push("prices", changes([(None, 1.0, "+", 1), (None, None, "+", 1), (None, None, "-", 3)]))
    eng.close()
    rows = eng.fetch("p").to_pylist()  # in start order; the order within an instant is not given
    assert sorted(rows, key=lambda r: r["price"] is None) == [
        {"id": None, "price": 1.0, "start": 1, "end": None},
        {"id": None, "price": None, "start": 1, "end": 3},
    ]


@LIFETIMES
def test_a_ghost_changes_nothing(lifetime):
    eng = engine(lifetime=lifetime)
    # Inserted and deleted at 3, in one push and across two pushes: alive at no instant.
    eng.push("prices", changes([(1, 1.0, "+", 3), (1, 1.0, "-", 3), (2, 2.0, "+", 3)]))
    eng.push("prices", changes([(2, 2.0, "-", 3)]))
    eng.close()
    assert lasting(eng.fetch("p")) == []
    assert eng.fetch("added").num_rows == 0
    assert eng.fetch("removed").num_rows == 0


@pytest.mark.parametrize(
    "form",
    ["table", "record_batch", "pandas", "dicts", "no_op", "large_string", "dictionary", "chunked"],
)
def test_push_takes_changes_in_every_form(form):
    rows = [
        {"id": 1, "price": 1.5, "op": "+", "ts": 1},
        {"id": 2, "price": 2.5, "op": "+", "ts": 2},
    ]
    table = pa.Table.from_pylist(rows)
    data = {
        "table": table,
        "record_batch": table.to_batches()[0],
        "pandas": pd.DataFrame(rows),
        "dicts": rows,
        "no_op": table.drop_columns(["op"]),  # no op column: every row is an insert
        "large_string": table.set_column(2, "op", table["op"].cast(pa.large_string())),
        "dictionary": table.set_column(2, "op", table["op"].dictionary_encode()),
        "chunked": pa.concat_tables([table.slice(0, 1), table.slice(1)]),
    }[form]
    eng = engine()
    eng.push("prices", data)
    eng.push("prices", [{"id": 1, "price": 1.5, "op": "-", "ts": 4}])
    eng.close()
    assert [(r["id"], r["start"], r["end"]) for r in eng.fetch("p").to_pylist()] == [
        (1, 1, 4),
        (2, 2, None),
    ]


@LIFETIMES
def test_stream_window_joins_a_relation(lifetime):
    cql = (
        "REGISTER STREAM orders(id INT, qty INT); REGISTER RELATION prices(id INT, price DOUBLE);"
        "REGISTER QUERY cost AS ISTREAM(SELECT o.id, o.qty * p.price AS total "
        "FROM orders [Now] AS o, prices AS p WHERE o.id = p.id);"
        "REGISTER QUERY both AS SELECT o.id, p.price FROM prices AS p, orders [Range 3] AS o "
        "WHERE o.id = p.id;"
    )
    eng = engine(cql, lifetime=lifetime)
    eng.push("prices", changes([(1, 10.0, "+", 0), (2, 20.0, "+", 0)]))
    eng.push("orders", pa.table({"id": [1, 2, 3], "qty": [2, 1, 5], "ts": [1, 2, 2]}))
    eng.push("prices", changes([(1, 10.0, "-", 4), (1, 12.0, "+", 4)]))
    eng.push("orders", pa.table({"id": [1], "qty": [3], "ts": [5]}))
    eng.close()
    # At 5 the price of 1 is 12 (the change at 4); order 3 has no price.
    assert eng.fetch("cost").to_pylist() == [
        {"id": 1, "total": 20.0, "ts": 1},
        {"id": 2, "total": 20.0, "ts": 2},
        {"id": 1, "total": 36.0, "ts": 5},
    ]
    # Order 1 at 1 lives [1, 4) in the window; its price ends at 4; order 1 at 5 meets the new
    # price. (Ghosts, start = end, may come too: the negative method pairs order 1 with the price
    # of 4 at 4.)
    assert lasting(eng.fetch("both")) == [
        {"id": 1, "price": 10.0, "start": 1, "end": 4},
        {"id": 2, "price": 20.0, "start": 2, "end": 5},
        {"id": 1, "price": 12.0, "start": 5, "end": 8},
    ]


@LIFETIMES
def test_aggregate_and_rstream_over_a_relation(lifetime):
    cql = (
        "REGISTER RELATION r(g VARCHAR, v INT);"
        "REGISTER QUERY s AS SELECT g, SUM(v) AS total FROM r GROUP BY g;"
        "REGISTER QUERY every AS RSTREAM(SELECT COUNT(*) AS n FROM r);"
    )
    eng = engine(cql, lifetime=lifetime)
    eng.push(
        "r",
        pa.table(
            {
                "g": ["a", "a", "b", "a"],
                "v": [1, 2, 5, 1],
                "op": ["+", "+", "+", "-"],
                "ts": [0, 1, 1, 3],
            }
        ),
    )
    eng.close()
    assert eng.fetch("s").to_pylist() == [
        {"g": "a", "total": 1, "start": 0, "end": 1},
        {"g": "a", "total": 3, "start": 1, "end": 3},
        {"g": "b", "total": 5, "start": 1, "end": None},
        {"g": "a", "total": 2, "start": 3, "end": None},
    ]
    assert [(r["n"], r["ts"]) for r in eng.fetch("every").to_pylist()] == [
        (1, 0),
        (3, 1),
        (3, 2),
        (2, 3),
    ]


def test_run_feeds_relations_and_streams():
    out = cq_py.run(
        "REGISTER STREAM s(k INT); REGISTER RELATION names(k INT, name VARCHAR);"
        "REGISTER QUERY q AS ISTREAM(SELECT s.k, n.name FROM s [Now], names AS n WHERE s.k = n.k);",
        inputs={
            "s": pa.table({"k": [1, 1, 2], "ts": [1, 6, 7]}),
            "names": pa.table(
                {
                    "k": [1, 2, 1],
                    "name": ["one", "two", "one"],
                    "op": ["+", "+", "-"],
                    "ts": [0, 0, 5],
                }
            ),
        },
    )
    assert out["q"].to_pylist() == [
        {"k": 1, "name": "one", "ts": 1},
        {"k": 2, "name": "two", "ts": 7},
    ]


def test_explain_shows_the_relation_scan():
    eng = engine()
    assert "RelationScan prices" in eng.explain()
    assert eng.relation_names() == ["prices"]


# -- errors ---------------------------------------------------------------------------------------


@LIFETIMES
def test_deleting_a_row_that_is_not_alive_is_refused_and_changes_nothing(lifetime):
    eng = engine(lifetime=lifetime)
    eng.push("prices", changes([(1, 10.0, "+", 1)]))
    # Row 2 deletes the second copy of (1, 10.0): there is only one. Row 0 is fine on its own.
    bad = changes([(3, 3.0, "+", 2), (1, 10.0, "-", 2), (1, 10.0, "-", 2)])
    with pytest.raises(cq_py.InputError) as e:
        eng.push("prices", bad)
    msg = str(e.value)
    for part in ("relation 'prices'", "row 2", "id=1, price=10", "ts 2", "not in the relation"):
        assert part in msg, msg
    assert e.value.row == 2
    assert e.value.stream == "prices"
    # Nothing of the rejected push happened: (3, 3.0) was not inserted, (1, 10.0) is still alive.
    with pytest.raises(cq_py.InputError, match="row 0 deletes"):
        eng.push("prices", changes([(3, 3.0, "-", 2)]))
    eng.push("prices", changes([(1, 10.0, "-", 4)]))
    eng.close()
    assert eng.fetch("p").to_pylist() == [{"id": 1, "price": 10.0, "start": 1, "end": 4}]
    assert eng.fetch("removed").to_pylist() == [{"id": 1, "price": 10.0, "ts": 4}]


def test_a_missing_delete_is_found_across_the_batches_of_one_push():
    eng = engine()
    table = pa.concat_tables(
        [changes([(1, 1.0, "+", 1)]), changes([(1, 1.0, "-", 2), (1, 1.0, "-", 2)])]
    )
    assert table["op"].num_chunks == 2
    with pytest.raises(cq_py.InputError, match="row 2 deletes") as e:
        eng.push("prices", table)
    assert e.value.row == 2


@pytest.mark.parametrize(
    ("op", "found"),
    [("x", "'x'"), ("", "''"), ("++", "'++'"), (None, "NULL"), ("insert", "'insert'")],
)
def test_bad_op_values_are_refused(op, found):
    eng = engine()
    with pytest.raises(cq_py.InputError) as e:
        eng.push(
            "prices",
            pa.table(
                {
                    "id": [1, 2],
                    "price": [1.0, 2.0],
                    "op": pa.array(["+", op], pa.string()),
                    "ts": [1, 2],
                }
            ),
        )
    assert f"op at row 1 is {found}; expected '+' (insert) or '-' (delete)" in str(e.value)
    assert e.value.row == 1
    eng.push("prices", [{"id": 5, "price": 5.0, "op": "+", "ts": 0}])  # the engine is as it was
    eng.close()
    assert eng.fetch("p").num_rows == 1


def test_an_op_column_that_is_not_text_is_refused():
    with pytest.raises(cq_py.InputError, match="column 'op' must hold '\\+' \\(insert\\) or '-'"):
        engine().push("prices", pa.table({"id": [1], "price": [1.0], "op": [1], "ts": [1]}))


def test_an_op_column_on_a_stream_is_refused():
    eng = engine("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s;")
    with pytest.raises(cq_py.InputError, match="only a relation takes; 's' is a stream"):
        eng.push("s", [{"a": 1, "op": "-", "ts": 1}])
    eng.push("s", [{"a": 1, "ts": 1}])  # and nothing changed
    # A stream that declares a column named op is another matter.
    eng2 = engine(
        "REGISTER STREAM t(op VARCHAR); REGISTER QUERY q AS ISTREAM(SELECT op FROM t [Now]);"
    )
    eng2.push("t", [{"op": "-", "ts": 1}])
    assert eng2.fetch("q").to_pylist() == [{"op": "-", "ts": 1}]


def test_a_relation_may_not_declare_op():
    with pytest.raises(cq_py.CQLSemanticError, match="may not declare a column 'op'"):
        engine("REGISTER RELATION r(op VARCHAR, v INT);")


@pytest.mark.parametrize(
    "window", ["[Now]", "[Range 5]", "[Rows 2]", "[Range Unbounded]", "[Partition By k Rows 1]"]
)
def test_a_window_on_a_relation_is_a_semantic_error(window):
    eng = cq_py.Engine()
    with pytest.raises(
        cq_py.CQLSemanticError, match="a window applies to a stream; 'r' is a relation"
    ):
        eng.execute(f"REGISTER RELATION r(k INT); REGISTER QUERY q AS SELECT k FROM r {window};")
    assert eng.stream_names() == []


def test_decreasing_timestamps_on_a_relation_are_refused():
    eng = engine()
    eng.push("prices", changes([(1, 1.0, "+", 5)]))
    with pytest.raises(cq_py.InputError, match="relation 'prices': timestamps must not decrease"):
        eng.push("prices", changes([(1, 1.0, "-", 4)]))
    eng.push("prices", changes([(1, 1.0, "-", 5)]))
    eng.close()
    assert lasting(eng.fetch("p")) == []
