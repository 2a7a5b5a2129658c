"""Sub-plan reuse (cq_py/planner/sharing.py): identical operators are planned once, and sharing
never changes what a query computes."""

import re

import pyarrow as pa
import pytest

import cq_py


def _operators(text: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^  #(\d+) (.*)$", text, re.M)}


def _output_reads(text: str, query: str) -> int:
    m = re.search(rf"^  #\d+ Output {query} <- #(\d+)", text, re.M)
    assert m, text
    return int(m.group(1))


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*[c.to_pylist() for c in table.columns], strict=True))


SCRIPT = """
REGISTER STREAM s(k INT, v INT);
REGISTER QUERY a AS ISTREAM(SELECT k, v FROM s [Range 3] WHERE v > 1) <Now>;
REGISTER QUERY b AS ISTREAM(SELECT k, v FROM s [Range 3] WHERE v > 1) <Now>;
REGISTER QUERY c AS SELECT k, SUM(v) AS t FROM s [Range 3] GROUP BY k;
REGISTER QUERY d AS SELECT k, SUM(v) AS t FROM s [Rows 3] GROUP BY k;
"""

DATA = pa.table({"k": [1, 2, 1, 2, 1, 1], "v": [5, 1, 2, 7, 3, 0], "ts": [1, 2, 2, 4, 6, 9]})


def test_identical_queries_share_every_operator():
    text = cq_py.explain(SCRIPT)
    ops = _operators(text)
    assert _output_reads(text, "a") == _output_reads(text, "b")
    # One [Range 3] window serves a, b and c; d's [Rows 3] is another window.
    assert sum("Window [Range 3]" in o for o in ops.values()) == 1
    assert sum("Window [Rows 3]" in o for o in ops.values()) == 1
    assert sum(o.startswith("ISTREAM") for o in ops.values()) == 1
    assert sum(o.startswith("Delay") for o in ops.values()) == 1
    # Ids have no gaps: the merged operators gave theirs back.
    assert sorted(ops) == list(range(len(ops)))


@pytest.mark.parametrize("executor", ["dts", "heartbeat"])
def test_shared_outputs_equal_unshared_ones(executor):
    shared = cq_py.Engine(executor=executor)
    shared.execute(SCRIPT)
    shared.push("s", DATA)
    shared.close()
    got = {q: _rows(shared.fetch(q)) for q in ("a", "b", "c", "d")}  # fetch drains
    for q in got:
        alone = cq_py.Engine(executor=executor)
        alone.execute(
            SCRIPT.split("REGISTER QUERY")[0]
            + "REGISTER QUERY"
            + next(p for p in SCRIPT.split("REGISTER QUERY")[1:] if p.strip().startswith(q + " "))
        )
        alone.push("s", DATA)
        alone.close()
        assert got[q] == _rows(alone.fetch(q)), q
    assert got["a"] == got["b"] == [(1, 2, 2), (1, 3, 6), (1, 5, 1), (2, 7, 4)]


def test_a_later_script_does_not_reuse_running_operators():
    # The running [Range 3] window and SUM hold rows pushed before `late` was registered; a query
    # registered now starts from empty windows, as it would alone.
    e = cq_py.Engine()
    e.execute(SCRIPT)
    before = _operators(e.explain())
    e.push("s", DATA.slice(0, 3))
    e.execute("REGISTER QUERY late AS SELECT k, SUM(v) AS t FROM s [Range 3] GROUP BY k;")
    text = e.explain()
    assert _output_reads(text, "late") != _output_reads(text, "c")
    assert len(_operators(text)) > len(before) + 1
    e.push("s", DATA.slice(3))
    e.close()
    # (k, t, start, end): k = 2 sums 7 alone from 4, where c, which saw the row of tick 2, has 8.
    assert _rows(e.fetch("late")) == [(1, 0, 9, 12), (1, 3, 6, 9), (2, 7, 4, 7)]
    assert (2, 8, 4, 5) in _rows(e.fetch("c"))


def test_auto_delay_still_delays_one_reader_only():
    # auto_delay cuts the loop after q1's ISTREAM; q2 is the same text but outside the loop, so its
    # rows must not be delayed.
    script = """
    REGISTER STREAM s(a INT);
    REGISTER QUERY loopy AS SELECT a FROM s [Now] UNION ALL SELECT a FROM q1 [Now] WHERE a < 0;
    REGISTER QUERY q1 AS ISTREAM(SELECT * FROM loopy);
    REGISTER QUERY q2 AS ISTREAM(SELECT * FROM loopy);
    """
    e = cq_py.Engine(auto_delay=True, expose_steps=True)
    e.execute(script)
    e.push("s", pa.table({"a": [1, 2], "ts": [1, 2]}))
    e.close()
    assert _rows(e.fetch("q1")) == [(1, 1, 1), (2, 2, 1)]
    assert _rows(e.fetch("q2")) == [(1, 1, 0), (2, 2, 0)]
    loop_line = next(line for line in e.explain().splitlines() if "loop of" in line)
    assert "q2" not in loop_line


def test_different_parameters_are_not_shared():
    text = cq_py.explain("""
    REGISTER STREAM s(k INT, v INT);
    REGISTER QUERY x AS ISTREAM(SELECT k FROM s [Now]) <Now>;
    REGISTER QUERY y AS ISTREAM(SELECT k FROM s [Now]) <2>;
    REGISTER QUERY z AS DSTREAM(SELECT k FROM s [Now]) <Now>;
    """)
    ops = _operators(text)
    assert len({_output_reads(text, q) for q in "xyz"}) == 3
    assert sum(o.startswith("ISTREAM") for o in ops.values()) == 1  # x and y share it
    assert sum(o.startswith("Delay") for o in ops.values()) == 3
