"""Shared window joins (cq_py/planner/shared_joins.py): which joins of a script share, what
``explain()`` says of them and of every join left alone, and the plan they make."""

import re

import pyarrow as pa
import pytest

import cq_py
from cq_py.planner.shared_joins import mqt_segments

STREAMS = "REGISTER STREAM a(k INT, x INT); REGISTER STREAM b(k INT, y INT);"


def _query(name: str, w: int, where: str = "a.k = b.k", istream: bool = True) -> str:
    body = f"SELECT * FROM a [Range {w}], b [Range {w}] WHERE {where}"
    return f"REGISTER QUERY {name} AS {f'ISTREAM({body})' if istream else body};"


def _operators(text: str) -> dict[int, str]:
    return {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"^  #(\d+) (.*?)(?: <- [#\d, ]+)?  \[", text, re.M)
    }


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    if title not in lines:
        return []
    out = []
    for line in lines[lines.index(title) + 1 :]:
        if not line.startswith("  "):
            break
        out.append(line.strip())
    return out


def test_joins_that_differ_in_their_windows_share_one_join():
    text = cq_py.explain(STREAMS + _query("q1", 5) + _query("q2", 9) + _query("q3", 2))
    ops = _operators(text)
    assert sum(o.startswith("SharedWindowJoin") for o in ops.values()) == 1
    assert not any(o.startswith("HashJoin") for o in ops.values())
    assert sum(o.startswith("Route") for o in ops.values()) == 3
    # The widest query's windows alone remain.
    assert sorted(o for o in ops.values() if o.startswith("Window")) == [
        "Window [Range 9]",
        "Window [Range 9]",
    ]
    shared = _section(text, "Shared joins:")
    assert len(shared) == 1
    assert re.fullmatch(
        r"#\d+ windows \[2, 5, 9\]; members q3 \[Range 2\], q1 \[Range 5\], q2 \[Range 9\]; "
        r"MQT segments [0-9,-]+; routes #\d+ #\d+ #\d+",
        shared[0],
    ), shared
    assert "Joins left alone:" not in text
    # Each operator comes after the operators it reads.
    for m in re.finditer(r"^  #(\d+) .*? <- ([#\d, ]+)  \[", text, re.M):
        assert all(int(i) < int(m.group(1)) for i in re.findall(r"\d+", m.group(2))), m.group(0)


def test_explain_says_why_each_join_is_left_alone():
    script = (
        STREAMS
        + "REGISTER STREAM c(k INT, z INT);"
        + _query("q1", 5)
        + "REGISTER QUERY q2 AS SELECT * FROM a [Range 5], b [Range 7] WHERE a.k = b.k;"
        + "REGISTER QUERY q3 AS SELECT * FROM a [Rows 2], b [Range 5] WHERE a.k = b.k;"
        + "REGISTER QUERY q4 AS SELECT * FROM a [Range 3], c [Range 3] WHERE a.k = c.k;"
        + _query("q5", 0)
    )
    alone = _section(cq_py.explain(script), "Joins left alone:")
    assert len(alone) == 5, alone
    reasons = dict(line.split(": ", 1) for line in alone)
    by_query = {re.search(r"\[(\w+)\]", k).group(1): v for k, v in reasons.items()}
    assert by_query["q1"].startswith("no other join of this script reads the same streams")
    assert by_query["q2"] == "its windows differ ([Range 5] and [Range 7])"
    assert re.fullmatch(
        r"its left input is #\d+ Window \[Rows 2\], not a \[Range w\] window of a stream",
        by_query["q3"],
    )
    assert by_query["q4"].startswith("no other join")
    assert by_query["q5"] == "its windows are [Range 0] (every pair is a ghost)"
    assert _section(cq_py.explain(script), "Shared joins: none") == []
    assert "Shared joins: none" in cq_py.explain(script)


def test_keys_residuals_and_filters_must_be_equal():
    script = (
        STREAMS
        + _query("q1", 5, "a.k = b.k AND a.x < b.y")
        + _query("q2", 9, "a.k = b.k AND a.x < b.y")
        + _query("q3", 5, "a.k = b.k AND a.x > b.y")
        + _query("q4", 5, "a.x = b.y")
        + _query("q5", 4, "a.k = b.k AND a.x > 1")
        + _query("q6", 8, "a.x > 1 AND a.k = b.k")
        + _query("q7", 6, "a.k = b.k AND a.x > 2")
    )
    text = cq_py.explain(script)
    shared = _section(text, "Shared joins:")
    members = sorted(re.search(r"members (.*?);", s).group(1) for s in shared)
    # q5 and q6 filter a alike (below their windows): they share; q7 filters it otherwise.
    assert members == ["q1 [Range 5], q2 [Range 9]", "q5 [Range 4], q6 [Range 8]"]
    alone = " ".join(_section(text, "Joins left alone:"))
    for q in ("q3", "q4", "q7"):
        assert f"[{q}]" in alone


def test_share_joins_false_and_the_negative_method_leave_every_join_alone():
    script = STREAMS + _query("q1", 5) + _query("q2", 9)
    off = cq_py.explain(script, share_joins=False)
    assert "SharedWindowJoin" not in off
    assert [line.split(": ", 1)[1] for line in _section(off, "Joins left alone:")] == [
        "share_joins=False"
    ] * 2
    eng = cq_py.Engine(lifetime="negative")
    eng.execute(script)
    reasons = [line.split(": ", 1)[1] for line in _section(eng.explain(), "Joins left alone:")]
    assert reasons == ["lifetime='negative' (a shared join runs under the direct method)"] * 2
    eng = cq_py.Engine()
    eng.execute(script)
    assert "SharedWindowJoin" in eng.explain()


def test_a_script_without_joins_explains_as_before():
    assert "joins" not in cq_py.explain(STREAMS + "REGISTER QUERY q AS SELECT * FROM a [Range 3];")


def test_joins_of_different_scripts_do_not_share():
    eng = cq_py.Engine()
    eng.execute(STREAMS + _query("q1", 5))
    eng.execute(_query("q2", 9))
    text = eng.explain()
    assert "SharedWindowJoin" not in text
    assert len(_section(text, "Joins left alone:")) == 2


def test_a_join_on_a_loop_is_left_alone():
    script = (
        "REGISTER STREAM s(k INT);"
        "REGISTER QUERY l AS ISTREAM(SELECT k FROM s [Now] UNION ALL "
        "SELECT s.k AS k FROM s [Range 3], l [Range 3] WHERE s.k = l.k) <Now>;"
        "REGISTER QUERY m AS ISTREAM(SELECT s.k FROM s [Range 5], l [Range 5] WHERE s.k = l.k);"
    )
    text = cq_py.explain(script)
    alone = dict(line.split(": ", 1) for line in _section(text, "Joins left alone:"))
    assert [v for k, v in alone.items() if "[l]" in k] == ["it is on a loop"]


def test_mqt_segments_follow_the_schedulers_matrix():
    # Paper 004 §6.2: the first queries close together are served one by one, then the rest.
    assert mqt_segments([1, 2, 3, 3000]) == "1-3,4"
    assert mqt_segments([5, 5]) == "1-2"


@pytest.mark.parametrize("executor", ["dts", "heartbeat"])
def test_shared_queries_equal_unshared_ones(executor):
    script = (
        STREAMS
        + _query("q1", 3)
        + _query("q2", 6, istream=False)
        + _query("q3", 1)
        + _query("q4", 6)
    )
    a = pa.table({"k": [1, None, 1, 2, 1, 1], "x": [5, 1, 2, 7, 3, 0], "ts": [0, 1, 1, 3, 4, 9]})
    b = pa.table({"k": [1, 1, 2, None, 1], "y": [0, 1, 2, 3, 4], "ts": [0, 1, 3, 5, 9]})
    out = {
        share: cq_py.run(script, {"a": a, "b": b}, executor=executor, share_joins=share)
        for share in (True, False)
    }
    for q in ("q1", "q2", "q3", "q4"):
        assert sorted(map(repr, out[True][q].to_pylist())) == sorted(
            map(repr, out[False][q].to_pylist())
        ), q
    assert out[True]["q4"].num_rows > out[True]["q1"].num_rows > out[True]["q3"].num_rows > 0


def test_bad_options_and_input_still_raise_the_packages_errors():
    with pytest.raises(cq_py.ArgumentError, match="share_joins"):
        cq_py.Engine(share_joins="yes")
    eng = cq_py.Engine()
    eng.execute(STREAMS + _query("q1", 3) + _query("q2", 6))
    eng.push("a", pa.table({"k": [1], "x": [1], "ts": [5]}))
    with pytest.raises(cq_py.InputError, match="'a'"):
        eng.push("a", pa.table({"k": [1], "x": [1], "ts": [4]}))
    # The rejected push changed nothing.
    eng.push("b", pa.table({"k": [1], "y": [2], "ts": [8]}))
    eng.close()
    assert eng.fetch("q2").to_pylist() == [{"k": 1, "x": 1, "b_k": 1, "y": 2, "ts": 8}]
    assert eng.fetch("q1").to_pylist() == []
