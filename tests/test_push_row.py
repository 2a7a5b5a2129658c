"""Engine.push_row: one row at a time, with no Arrow object on the way, gives what pushing the same
rows as a table gives; bad rows raise InputError and leave the engine as it was (its snapshot
unchanged, byte for byte); an instant's results can be fetched once the push that completes it
returns. Also push()'s fast path for batches that already have the stream's schema."""

from __future__ import annotations

import datetime
import math
import re
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from oracle.reference import INF, equivalent

EXAMPLES = examples(150)

SCHEMA = "REGISTER STREAM s(a INT, b DOUBLE, c VARCHAR, f BOOLEAN);"
ARROW = pa.schema(
    [
        ("a", pa.int64()),
        ("b", pa.float64()),
        ("c", pa.string()),
        ("f", pa.bool_()),
        ("ts", pa.int64()),
    ]
)
# Stream- and relation-valued queries over every kind of operator a row meets: stateless, a
# row window with aggregates per partition, a sliding window, a self-join, DISTINCT.
QUERIES = {
    "w1": "ISTREAM(SELECT * FROM s [Now] WHERE a > 0)",
    "w5": "ISTREAM(SELECT a, AVG(b) AS m, COUNT(*) AS n FROM s [Partition By a Rows 2] GROUP BY a)",
    "slide": "SELECT c, SUM(a) AS t, MAX(b) AS x FROM s [Range 4 Slide 2] GROUP BY c",
    "joined": "DSTREAM(SELECT l.a, r.c FROM s [Range 3] AS l, s [Rows 2] AS r WHERE l.a = r.a)",
    "uniq": "RSTREAM(SELECT DISTINCT c, f FROM s [Rows 3])",
}
SCRIPT = SCHEMA + "".join(f"REGISTER QUERY {n} AS {q};" for n, q in QUERIES.items())


@st.composite
def rows(draw):
    n = draw(st.integers(0, 30))
    t = draw(st.integers(-3, 3))
    out = []
    for _ in range(n):
        t += draw(st.sampled_from([0, 0, 1, 1, 2, 5]))
        out.append(
            {
                "a": draw(st.one_of(st.none(), st.integers(-2, 3))),
                "b": draw(st.one_of(st.none(), st.sampled_from([0.0, 0.5, -1.5, 2.0, math.nan]))),
                "c": draw(st.one_of(st.none(), st.sampled_from(["x", "y", "é"]))),
                "f": draw(st.one_of(st.none(), st.booleans())),
                "ts": t,
            }
        )
    return out


def key(v):
    """A sort key for values that may be None or NaN."""
    return tuple((x is None, isinstance(x, float) and x != x, repr(x)) for x in v)


def results(eng: cq_py.Engine) -> dict[str, object]:
    """Every query's output in a form equal results share: streams as bags per instant, relations
    as their lifetimes (compared by equivalent)."""
    out: dict[str, object] = {}
    for q in eng.query_names():
        table = eng.fetch(q)
        names = [c for c in table.column_names if c not in ("ts", "ts_step", "start", "end")]
        names = [c for c in names if not c.endswith("_step")]
        got = table.to_pylist()
        if "ts" in table.column_names:
            out[q] = Counter(
                (tuple(repr(r[c]) for c in names), (r["ts"], r["ts_step"])) for r in got
            )
        else:
            out[q] = [
                (
                    tuple(repr(r[c]) for c in names),
                    (r["start"], r["start_step"]),
                    INF if r["end"] is None else (r["end"], r["end_step"]),
                )
                for r in got
            ]
    return out


def same(x: dict, y: dict) -> bool:
    return x.keys() == y.keys() and all(
        equivalent(x[q], y[q]) if isinstance(x[q], list) else x[q] == y[q] for q in x
    )


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(rows(), st.sampled_from(["direct", "negative"]), st.integers(0, 4))
def test_rows_pushed_one_at_a_time_give_what_one_table_gives(data, lifetime, advance_every):
    whole = cq_py.Engine(lifetime=lifetime, expose_steps=True)
    whole.execute(SCRIPT)
    whole.push("s", pa.Table.from_pylist(data, schema=ARROW))
    whole.close()

    one = cq_py.Engine(lifetime=lifetime, expose_steps=True)
    one.execute(SCRIPT)
    for i, r in enumerate(data):
        one.push_row("s", r["ts"], a=r["a"], b=r["b"], c=r["c"], f=r["f"])
        if advance_every and i % advance_every == 0:
            one.advance(r["ts"])  # (a heartbeat at the row's own time changes nothing)
    one.close()
    assert same(results(whole), results(one))


def test_an_instant_can_be_fetched_once_the_push_that_completes_it_returns():
    eng = cq_py.Engine()
    eng.execute(
        "REGISTER STREAM e(key BIGINT, val BIGINT);"
        "REGISTER QUERY w5 AS ISTREAM(SELECT key, AVG(val) AS a FROM e "
        "[Partition By key Rows 10] GROUP BY key);"
        "REGISTER QUERY w1 AS ISTREAM(SELECT * FROM e [Now] WHERE val > 499);"
    )
    eng.push_row("e", 0, key=1, val=600)
    assert eng.fetch("w1").to_pylist() == [{"key": 1, "val": 600, "ts": 0}]
    assert eng.fetch("w5").num_rows == 0  # more rows of ts 0 may come
    eng.push_row("e", 0, key=1, val=200)
    assert eng.fetch("w5").num_rows == 0
    eng.push_row("e", 3, key=2, val=10)  # completes ts 0
    assert eng.fetch("w5").to_pylist() == [{"key": 1, "a": 400.0, "ts": 0}]
    eng.advance(4)  # so does a heartbeat
    assert eng.fetch("w5").to_pylist() == [{"key": 2, "a": 10.0, "ts": 3}]


def test_values_convert_as_a_list_of_dicts_does():
    eng = cq_py.Engine()
    eng.execute(SCHEMA + "REGISTER QUERY q AS ISTREAM(SELECT * FROM s [Now]);")
    eng.push_row("s", 0, a=np.int32(7), b=3, c="é", f=np.True_)
    eng.push_row("s", 1, a=None, b=np.float32(0.5), c=None, f=None)
    eng.push_row("s", 2, a=-(2**63), b=float("nan"), c="", f=False)
    eng.push_row("s", np.int64(3), a=2**63 - 1, b=2**53, c="x", f=True)
    got = eng.fetch("q").to_pylist()
    assert got[:2] == [
        {"a": 7, "b": 3.0, "c": "é", "f": True, "ts": 0},
        {"a": None, "b": 0.5, "c": None, "f": None, "ts": 1},
    ]
    assert math.isnan(got[2].pop("b"))
    assert got[2] == {"a": -(2**63), "c": "", "f": False, "ts": 2}
    assert got[3] == {"a": 2**63 - 1, "b": 2.0**53, "c": "x", "f": True, "ts": 3}


def test_names_match_whatever_the_case_and_times_may_be_datetimes():
    eng = cq_py.Engine(time_unit="s")
    eng.execute(
        "REGISTER STREAM Trades(Price DOUBLE, stream INT, ts INT);"
        "REGISTER QUERY q AS ISTREAM(SELECT Price, stream, ts AS t FROM Trades [Now]);"
    )
    # Columns named like push_row's own parameters are values like any other.
    eng.push_row("trades", datetime.datetime(1970, 1, 1, 0, 0, 5), price=1.5, STREAM=2, ts=9)
    eng.push_row("TRADES", np.datetime64(6, "s"), Price=2.5, stream=3, TS=8)
    assert eng.fetch("q").to_pylist() == [
        {"Price": 1.5, "stream": 2, "t": 9, "ts": 5},
        {"Price": 2.5, "stream": 3, "t": 8, "ts": 6},
    ]


def test_a_relation_takes_inserts_and_deletes():
    eng = cq_py.Engine()
    eng.execute("REGISTER RELATION r(k INT, v VARCHAR); REGISTER QUERY q AS SELECT k, v FROM r;")
    eng.push_row("r", 1, k=1, v="a")
    eng.push_row("r", 2, k=2, v="b", op="+")
    eng.push_row("r", 5, k=1, v="a", op="-")
    eng.close()
    assert eng.fetch("q").to_pylist() == [
        {"k": 1, "v": "a", "start": 1, "end": 5},
        {"k": 2, "v": "b", "start": 2, "end": None},
    ]


BAD_ROWS = [
    # (stream, ts, values, words of the message)
    ("s", 5, {"a": "1", "b": 0.5, "c": "x", "f": True}, "column 'a' must be BIGINT"),
    ("s", 5, {"a": 1.0, "b": 0.5, "c": "x", "f": True}, "column 'a' must be BIGINT"),
    ("s", 5, {"a": True, "b": 0.5, "c": "x", "f": True}, "found True (bool)"),
    ("s", 5, {"a": 2**63, "b": 0.5, "c": "x", "f": True}, "outside int64"),
    ("s", 5, {"a": 1, "b": "0.5", "c": "x", "f": True}, "column 'b' must be DOUBLE"),
    ("s", 5, {"a": 1, "b": False, "c": "x", "f": True}, "column 'b' must be DOUBLE"),
    ("s", 5, {"a": 1, "b": 2**53 + 1, "c": "x", "f": True}, "holds exactly"),
    ("s", 5, {"a": 1, "b": 0.5, "c": 3, "f": True}, "column 'c' must be VARCHAR"),
    ("s", 5, {"a": 1, "b": 0.5, "c": b"x", "f": True}, "column 'c' must be VARCHAR"),
    ("s", 5, {"a": 1, "b": 0.5, "c": "\ud800", "f": True}, "not valid UTF-8"),
    ("s", 5, {"a": 1, "b": 0.5, "c": "x", "f": 1}, "column 'f' must be BOOLEAN"),
    ("s", 5, {"a": 1, "b": 0.5, "c": "x"}, "missing column 'f' (BOOLEAN)"),
    ("s", 5, {"a": 1, "b": 0.5, "c": "x", "f": True, "g": 1}, "unknown column 'g'"),
    ("s", 5, {"a": 1, "b": 0.5, "c": "x", "f": True, "op": "+"}, "unknown column 'op'"),
    ("s", 3, {"a": 1, "b": 0.5, "c": "x", "f": True}, "timestamps must not decrease"),
    ("s", None, {"a": 1, "b": 0.5, "c": "x", "f": True}, "the timestamp is None"),
    ("s", math.nan, {"a": 1, "b": 0.5, "c": "x", "f": True}, "the timestamp is nan"),
    ("s", 5.5, {"a": 1, "b": 0.5, "c": "x", "f": True}, "found 5.5 (float)"),
    ("s", "5", {"a": 1, "b": 0.5, "c": "x", "f": True}, "found '5' (str)"),
    ("s", True, {"a": 1, "b": 0.5, "c": "x", "f": True}, "found True (bool)"),
    ("s", 2**63 - 1, {"a": 1, "b": 0.5, "c": "x", "f": True}, "outside the engine's ticks"),
    ("nope", 5, {"a": 1}, "unknown stream 'nope'"),
    (None, 5, {"a": 1}, "named by a str"),
    (["s"], 5, {"a": 1}, "named by a str"),
    ("r", 5, {"k": "1"}, "column 'k' must be BIGINT"),
    ("r", 5, {"k": 1, "op": "x"}, "op at row 0 is 'x'"),
    ("r", 5, {"k": 1, "op": 1}, "column 'op' must be '+' (insert) or '-' (delete)"),
    ("r", 5, {"k": 9, "op": "-"}, "which is not in the relation"),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("stream", "ts", "values", "words"), BAD_ROWS)
def test_a_bad_row_raises_input_error_and_changes_nothing(stream, ts, values, words, threads):
    eng = cq_py.Engine(threads=threads)
    eng.execute(
        SCHEMA + "REGISTER RELATION r(k INT);"
        "REGISTER QUERY q AS ISTREAM(SELECT a, AVG(b) AS m FROM s [Partition By a Rows 2] "
        "GROUP BY a);"
        "REGISTER QUERY j AS SELECT s.a, r.k FROM s [Range 10], r WHERE s.a = r.k;"
    )
    eng.push_row("s", 4, a=1, b=0.5, c="x", f=True)
    eng.push_row("r", 4, k=1)
    before = eng.snapshot()
    with pytest.raises(cq_py.InputError, match=re.escape(words)):
        eng.push_row(stream, ts, **values)
    assert eng.snapshot() == before
    eng.push_row("s", 6, a=1, b=1.5, c="y", f=False)  # and it goes on
    eng.close()
    assert eng.fetch("q").to_pylist() == [
        {"a": 1, "m": 0.5, "ts": 4},
        {"a": 1, "m": 1.0, "ts": 6},
    ]


def test_a_closed_engine_refuses_rows():
    eng = cq_py.Engine()
    eng.execute(SCHEMA)
    eng.close()
    with pytest.raises(cq_py.InputError, match="the engine is closed"):
        eng.push_row("s", 1, a=1, b=0.5, c="x", f=True)


def test_subscribers_get_each_row_s_results_as_push_returns():
    eng = cq_py.Engine()
    eng.execute(SCHEMA + "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
    got: list[int] = []
    eng.subscribe("q", lambda b: got.extend(b.column("a").to_pylist()))
    eng.push_row("s", 1, a=5, b=None, c=None, f=None)
    assert got == [5]


def test_a_batch_with_the_stream_s_schema_is_pushed_as_it_is_and_checked_all_the_same(
    monkeypatch: pytest.MonkeyPatch,
):
    def no_conforming(*args: object) -> None:
        raise AssertionError("a batch that has the stream's schema needs no conforming")

    monkeypatch.setattr(cq_py.Engine, "_conform", no_conforming)
    eng = cq_py.Engine()
    eng.execute(SCHEMA + "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Now]);")
    ready = pa.RecordBatch.from_pylist(
        [{"a": 1, "b": 0.5, "c": "x", "f": True, "ts": 3}], schema=ARROW
    )
    eng.push("s", ready)
    assert eng.fetch("q").to_pylist() == [{"a": 1, "ts": 3}]
    before = eng.snapshot()
    for bad, words in [
        ({"ts": 2}, "timestamps must not decrease"),
        ({"ts": None}, "null timestamp at row 1"),
        ({"ts": 2**63 - 1}, "outside the engine's ticks"),
    ]:
        batch = pa.RecordBatch.from_pylist(
            [
                {"a": 1, "b": 0.5, "c": "x", "f": True, "ts": 4},
                {"a": 2, "b": 0.5, "c": "x", "f": True, **bad},
            ],
            schema=ARROW,
        )
        with pytest.raises(cq_py.InputError, match=words):
            eng.push("s", batch)
        assert eng.snapshot() == before
    fresh = cq_py.Engine()
    fresh.execute(SCHEMA)
    with pytest.raises(cq_py.InputError, match="outside the engine's ticks"):
        fresh.push("s", pa.RecordBatch.from_pylist([{"a": 1, "ts": -(2**63)}], schema=ARROW))


# Issue 29's W1 and W5 over one stream split by its key: with threads=2 each row goes to the engine
# of its key alone (RowParts), the other learning the input's progress when something reads.
PARTED = (
    "REGISTER STREAM e(key BIGINT, val BIGINT);"
    "REGISTER QUERY w1 AS ISTREAM(SELECT * FROM e [Now] WHERE val > 499);"
    "REGISTER QUERY w5 AS ISTREAM(SELECT key, AVG(val) AS a FROM e "
    "[Partition By key Rows 3] GROUP BY key);"
)


def parted_rows(n: int, seed: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.choice([0, 0, 1, 3], n))
    return [
        {"key": None if k == 7 else int(k), "val": int(v), "ts": int(t)}
        for k, v, t in zip(rng.integers(0, 8, n), rng.integers(0, 1000, n), ts, strict=True)
    ]


def bags(eng: cq_py.Engine, got: dict[str, list[pa.Table]] | None = None) -> dict[str, Counter]:
    return {
        q: Counter(map(repr, pa.concat_tables([*(got or {}).get(q, []), eng.fetch(q)]).to_pylist()))
        for q in eng.query_names()
    }


@pytest.mark.parametrize("executor", ["dts", "heartbeat"])
@pytest.mark.parametrize("threads", [1, 2])
def test_rows_pushed_one_at_a_time_give_what_the_table_gives_on_one_engine_or_several(
    executor, threads
):
    data = parted_rows(600, seed=threads)
    whole = cq_py.Engine(executor=executor, threads=1)
    whole.execute(PARTED)
    whole.push("e", pa.Table.from_pylist(data))
    whole.close()

    eng = cq_py.Engine(executor=executor, threads=threads)
    eng.execute(PARTED)
    assert ("Threads: 2 engines" in eng.explain()) == (threads == 2)
    got: dict[str, list[pa.Table]] = {q: [] for q in eng.query_names()}
    for i, r in enumerate(data):
        eng.push_row("e", r["ts"], key=r["key"], val=r["val"])
        if i % 7 == 0:
            for q in got:
                fetched = eng.fetch(q)
                # What is fetchable right after a push is final: below the row's time, or (W1,
                # stateless) at it.
                assert all(t <= r["ts"] for t in fetched.column("ts").to_pylist())
                got[q].append(fetched)
    eng.close()
    assert bags(eng, got) == bags(whole)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_results_of_an_instant_are_fetchable_when_the_row_completing_it_is_pushed(threads):
    eng = cq_py.Engine(threads=threads)
    eng.execute(PARTED)
    # Keys of both parts: the row completing an instant may go to the engine that has none of it.
    for t, key in enumerate(range(8)):
        eng.push_row("e", t, key=key, val=100 * key)
        assert eng.fetch("w5").to_pylist() == (
            [] if t == 0 else [{"key": key - 1, "a": 100.0 * (key - 1), "ts": t - 1}]
        )


@pytest.mark.parametrize("threads", [1, 2])
def test_a_row_back_in_time_is_refused_by_whichever_engine_its_key_goes_to(threads):
    eng = cq_py.Engine(threads=threads)
    eng.execute(PARTED)
    ref = cq_py.Engine(threads=1)
    ref.execute(PARTED)
    for e in (eng, ref):
        for key in range(8):
            e.push_row("e", 10, key=key, val=key)
        e.push_row("e", 20, key=0, val=5)  # the input is at 20; key 0's engine knows it
    for key in range(8):
        with pytest.raises(cq_py.InputError, match="timestamps must not decrease; row 0 has ts 15"):
            eng.push_row("e", 15, key=key, val=1)
    with pytest.raises(cq_py.InputError, match="column 'key' must be BIGINT"):
        eng.push_row("e", 30, key="1", val=1)
    with pytest.raises(cq_py.InputError, match="unknown column 'vla'"):
        eng.push_row("e", 30, key=1, val=1, vla=2)
    for e in (eng, ref):
        e.push_row("e", 20, key=3, val=7)
        e.close()
    assert bags(eng) == bags(ref)
