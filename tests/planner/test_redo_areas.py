"""cq_py.planner.redo_areas: the commit operator, redo queues, redo area and gatekeepers of paper
002 §3.2, §3.4 and §6 on the plans of the paper's figures, worked out by hand."""

from __future__ import annotations

import pytest

import cq_py
from cq_py.parser import parse
from cq_py.planner import Catalog, Planner
from cq_py.planner.logical import Node
from cq_py.planner.redo_areas import Op, RedoArea, redo_area


def test_fig8_two_reference_joins_a_window_join_and_an_aggregate() -> None:
    # S1 -> x-join -> filter1 -> window \\
    #                                 join (θ) -> filter3 -> [Rows 10] -> AVG -> RSTREAM
    # S2 -> y-join -> filter2 -> window /
    plan = [
        Op(0, "source"),
        Op(1, "reference", (0,)),
        Op(2, "other", (1,)),
        Op(3, "window", (2,)),  # r = s = 10: no overlap
        Op(4, "source"),
        Op(5, "reference", (4,)),
        Op(6, "other", (5,)),
        Op(7, "window", (6,)),
        Op(8, "other", (3, 7)),
        Op(9, "other", (8,)),
        Op(10, "window", (9,), overlaps=True),  # [Rows 10], slides by one row
        Op(11, "other", (10,)),
        Op(12, "relation_to_stream", (11,)),
    ]
    assert redo_area(plan, 12) == RedoArea(
        commit=12,
        members=[1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12],
        queues=[(1, 0), (5, 0)],
        gatekeepers=[1, 5],
        overlapping=True,
    )


def test_a_window_meeting_referenced_rows_gets_a_queue_rule_2() -> None:
    # A -> x-join -> window (overlapping) \\
    #                                       join -> AVG -> ISTREAM
    # B -----------> window               /
    plan = [
        Op(0, "source"),
        Op(1, "reference", (0,)),
        Op(2, "window", (1,), overlaps=True),
        Op(3, "source"),
        Op(4, "window", (3,)),
        Op(5, "other", (2, 4)),
        Op(6, "other", (5,)),
        Op(7, "relation_to_stream", (6,)),
    ]
    area = redo_area(plan, 7)
    assert area is not None
    assert (area.commit, area.queues, area.gatekeepers) == (7, [(1, 0), (4, 0)], [1, 4])
    assert area.members == [1, 2, 4, 5, 6, 7]
    assert area.overlapping


def test_without_a_window_the_top_reference_operator_commits_and_nothing_is_queued() -> None:
    plan = [
        Op(0, "source"),
        Op(1, "reference", (0,)),
        Op(2, "reference", (1,)),
        Op(3, "other", (2,)),
    ]
    # Both reference operators are members: a row's transaction holds both reads (the area held
    # only the top one, and reads of the first resource were in no transaction).
    assert redo_area(plan, 3) == RedoArea(commit=2, members=[1, 2])


def test_a_query_reading_no_resource_has_no_area() -> None:
    plan = [Op(0, "source"), Op(1, "window", (0,)), Op(2, "relation_to_stream", (1,))]
    assert redo_area(plan, 2) is None


def test_a_window_below_the_references_is_outside_the_area() -> None:
    # S -> [Range 5] -> x-join -> [Range 3 Slide 3] -> COUNT -> ISTREAM: the first window feeds
    # the reference operator, which has no reference upstream: its input (the window) is queued,
    # and the window below stays outside.
    plan = [
        Op(0, "source"),
        Op(1, "window", (0,), overlaps=True),
        Op(2, "reference", (1,)),
        Op(3, "window", (2,)),
        Op(4, "other", (3,)),
        Op(5, "relation_to_stream", (4,)),
    ]
    area = redo_area(plan, 5)
    assert area is not None
    assert (area.commit, area.queues, area.members) == (5, [(2, 0)], [2, 3, 4, 5])
    assert not area.overlapping


def test_rows_entering_the_area_without_a_queue_are_listed() -> None:
    # A -> x-join -> join -> [Range 4] -> AVG -> ISTREAM: the join's other input, a stream B with
    # no window, enters the area where no rule puts a redo queue; a reset would lose B's rows.
    plan = [
        Op(0, "source"),
        Op(1, "reference", (0,)),
        Op(2, "source"),
        Op(3, "other", (1, 2)),
        Op(4, "window", (3,), overlaps=True),
        Op(5, "other", (4,)),
        Op(6, "relation_to_stream", (5,)),
    ]
    area = redo_area(plan, 6)
    assert area is not None
    assert (area.queues, area.unqueued) == ([(1, 0)], [(3, 1)])


def test_a_join_planned_with_its_windows_inside_queues_its_plain_stream() -> None:
    # ISTREAM(j1 [Range 4] ⋈ B [Range 4]) as one operator reading j1 (which reads x) and B: a
    # window to rule (2), so B's input is queued and the join is a gatekeeper; a [Rows 5] above.
    from types import SimpleNamespace

    from cq_py.planner.redo_areas import _role

    join = SimpleNamespace(
        id=3,
        op="istream_join",
        inputs=[1, 2],
        params={"windows": [{"kind": "range", "range": {"ticks": 4}}] * 2},
    )
    assert _role(join) == Op(3, "window", (1, 2), overlaps=True)
    plan = [
        Op(0, "source"),
        Op(1, "reference", (0,)),
        Op(2, "source"),
        _role(join),
        Op(4, "window", (3,), overlaps=True, rows=True),
        Op(5, "fused_to_stream", (4,)),
    ]
    area = redo_area(plan, 5)
    assert area is not None
    assert (area.commit, area.queues, area.gatekeepers) == (5, [(1, 0), (3, 1)], [1, 3])
    assert area.unqueued == []


# ---- operators planned again inside each redo area (paper 002 §3.4) ------------------------

_STREAM = (
    "REGISTER STREAM s(k BIGINT, a BIGINT);REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
)
_J = "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"


def _plan(*scripts: str) -> tuple[Catalog, list[list[Node]]]:
    """The catalog after planning ``scripts`` one after another (as execute() calls do), and
    the operators each added."""
    cat, added = Catalog(), []
    for text in scripts:
        cat, new = Planner(cat, executor="scheduled").plan(parse(text))
        added.append(new)
    return cat, added


def _areas(cat: Catalog) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i in sorted(cat.nodes):
        if (a := cat.nodes[i].params.get("redo_area")) is not None:
            out.setdefault(a, []).append(i)
    return out


def _ops(cat: Catalog, ids: list[int]) -> list[tuple[str, str]]:
    return [(cat.nodes[i].op, cat.nodes[i].owner) for i in ids]


def test_two_readers_each_get_their_own_join_and_j_keeps_the_originals() -> None:
    cat, _ = _plan(
        _STREAM
        + _J
        + "REGISTER QUERY q1 AS RSTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);"
        + "REGISTER QUERY q2 AS RSTREAM(SELECT MAX(v) AS m FROM j [Range 3 Slide 1]);"
    )
    q = cat.queries
    areas = _areas(cat)
    # j's own area: its original join, committing a row at a time, read by its output.
    j_join = next(i for i, n in cat.nodes.items() if n.op == "reference_join" and n.owner == "j")
    assert areas[j_join] == [j_join]
    assert cat.nodes[q["j"].out_id].inputs == [j_join + 1]
    copies = {}
    for name in ("q1", "q2"):
        area = next(m for a, m in areas.items() if cat.nodes[a].params.get("txn_query") == name)
        commit = cat.nodes[area[0]].params["redo_area"]
        assert cat.nodes[commit].params["commit"]
        assert "replay" in cat.nodes[commit].params
        # The copies: the join (its gatekeeper), the projection and ISTREAM, owned by the reader,
        # reading j's [Now] window (outside every area, shared).
        assert _ops(cat, area[:3]) == [
            ("reference_join", name),
            ("project", name),
            ("istream", name),
        ]
        assert cat.nodes[area[0]].params["gatekeeper"]
        assert cat.nodes[area[0]].inputs == cat.nodes[j_join].inputs
        for k, copy in enumerate(area[:3]):
            assert cat.nodes[copy].note.startswith(
                f"planned again inside the redo area of #{commit}, from #{j_join + k} "
                "(paper 002 §3.4)"
            )
        # The area's only exit is its commit operator.
        readers = cat.consumers()
        assert all(set(readers[m]) <= set(area) for m in area if m != commit)
        copies[name] = area[:3]
    assert not set(copies["q1"]) & set(copies["q2"])
    # Producers before consumers, as the executor and redo_area() read the plan.
    assert all(i < n.id for n in cat.nodes.values() for i in n.inputs)


def test_readers_registered_later_copy_the_running_operators() -> None:
    # j runs already (an earlier script): its operators are the engine's, marked for j, so a
    # reader registered now, even alone, gets copies of its own (reading s from now on).
    cat, (first, second, third) = _plan(
        _STREAM + _J,
        "REGISTER QUERY q1 AS RSTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);",
        "REGISTER QUERY q2 AS DSTREAM(SELECT MAX(v) AS m FROM j [Rows 3]);",
    )
    old = {n.id for n in first}
    for name, new in (("q1", second), ("q2", third)):
        joins = [n for n in new if n.op == "reference_join"]
        assert [n.owner for n in joins] == [name]
        assert joins[0].params["gatekeeper"]
        assert joins[0].params["redo_area"] in {n.id for n in new}
        # Nothing of the earlier script is marked for the new area.
        area = joins[0].params["redo_area"]
        assert all(cat.nodes[i].params.get("redo_area") != area for i in old)
    assert all(i < n.id for n in cat.nodes.values() for i in n.inputs)


def test_a_window_two_readers_share_is_copied_too() -> None:
    # q1 and q2 read the same window of j (sub-plan reuse plans it once): each area gets its own
    # window as well, and the shared original, read by nobody then, goes.
    cat, _ = _plan(
        _STREAM
        + _J
        + "REGISTER QUERY q1 AS ISTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 4]);"
        + "REGISTER QUERY q2 AS DSTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 4]);"
    )
    windows = [n for n in cat.nodes.values() if n.op == "slide_window"]
    assert sorted(n.owner for n in windows) == ["q1", "q2"]
    assert len({n.params["redo_area"] for n in windows}) == 2
    assert len([n for n in cat.nodes.values() if n.op == "reference_join"]) == 3


def test_a_query_inside_its_readers_area_is_not_copied() -> None:
    # One reader (Fig. 6): j's operators lie in q's area, as j's whole area does; nothing copied.
    cat, _ = _plan(
        _STREAM + _J + "REGISTER QUERY q AS RSTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);"
    )
    assert len([n for n in cat.nodes.values() if n.op == "reference_join"]) == 1
    assert not any("planned again" in n.note for n in cat.nodes.values())


def test_a_query_with_a_commit_of_its_own_inside_its_readers_area_is_copied() -> None:
    # q (a window above j's reads) read by r: r's area plans j's and q's operators again, so q
    # commits its own results (left in r's area, q's results went out before r's commit, and
    # under 2pl mixed two states of x: tests/txn/test_serializability.py).
    text = (
        _STREAM
        + _J
        + "REGISTER QUERY q AS ISTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);"
        + "REGISTER QUERY r AS ISTREAM(SELECT * FROM q [Range 2]);"
    )
    cat, _ = Planner(Catalog(), executor="scheduled", txn="2pl").plan(parse(text))
    joins = [n for n in cat.nodes.values() if n.op == "reference_join"]
    assert sorted(n.owner for n in joins) == ["j", "r"]
    commits = [n for n in cat.nodes.values() if n.params.get("commit")]
    assert sorted(n.params["txn_query"] for n in commits) == ["q", "r"]
    assert len({n.params["redo_area"] for n in joins}) == 2
    assert all("replay" in n.params for n in commits)


def test_sub_plan_reuse_of_a_later_script_does_not_merge_the_copies() -> None:
    # The same reader registered twice, in two scripts while the engine runs: operators of an
    # earlier script are never reused (planner/sharing.py), so each keeps its own copies.
    reader = "REGISTER QUERY {} AS RSTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);"
    cat, _ = _plan(_STREAM + _J, reader.format("q1"), reader.format("q2"))
    joins = [n for n in cat.nodes.values() if n.op == "reference_join"]
    assert [n.owner for n in joins] == ["j", "q1", "q2"]
    assert len({n.params["redo_area"] for n in joins}) == 3


def test_a_window_join_no_reset_replays_stays_whole_in_its_larger_readers_area() -> None:
    # Fig. 8's window join (two top windows: its own area has no replay) read by two queries:
    # the larger reader's area holds the originals, as with one reader; the other's holds copies
    # of both reference joins and the window join.
    cat, _ = _plan(
        "REGISTER STREAM s1(k BIGINT, a BIGINT); REGISTER STREAM s2(k BIGINT, a BIGINT);"
        "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
        "REGISTER RESOURCE y (id BIGINT, p BIGINT) KEY (id) ACCESS SCAN;"
        "REGISTER QUERY j1 AS ISTREAM(SELECT s1.a, x.v FROM s1 [Now], x WHERE s1.k = x.id);"
        "REGISTER QUERY j2 AS ISTREAM(SELECT s2.a FROM s2 [Now], y WHERE s2.k = y.id);"
        "REGISTER QUERY j3 AS ISTREAM(SELECT l.a AS a1, r.a AS a2, l.v FROM "
        "j1 [Range 3] AS l, j2 [Range 3] AS r WHERE l.a = r.a);"
        "REGISTER QUERY q0 AS ISTREAM(SELECT AVG(v) AS m FROM j3 [Rows 3]);"
        "REGISTER QUERY q1 AS RSTREAM(SELECT MAX(v) AS m FROM j3 [Range 4 Slide 1]);"
    )
    joins = {n.id: n for n in cat.nodes.values() if n.op == "reference_join"}
    # (q1's area, RSTREAM above its aggregate, is the larger: the join stays whole in it.)
    assert sorted(n.owner for n in joins.values()) == ["j1", "j2", "q0", "q0"]
    q1 = {n.params["redo_area"] for n in joins.values() if n.owner != "q0"}
    q0 = {n.params["redo_area"] for n in joins.values() if n.owner == "q0"}
    assert len(q0) == len(q1) == 1
    assert q0 != q1
    assert cat.nodes[q1.pop()].params["txn_query"] == "q1"
    # No commit of j1's, j2's or j3's own (their areas lie inside q0's); each reader's commit
    # has a replay.
    commits = [n for n in cat.nodes.values() if n.params.get("commit")]
    assert sorted(n.params["txn_query"] for n in commits) == ["q0", "q1"]
    assert all("replay" in n.params for n in commits if n.params["txn_query"] in ("q0", "q1"))
    # j3's own results leave at the commits of the area holding its operators (explain() says
    # so): its output operator is marked, and the executor holds what it sends outside.
    noted = [n for n in cat.nodes.values() if "j3's own results leave at the commits" in n.note]
    assert len(noted) == 1
    assert noted[0].owner == "j3"
    (held,) = [n for n in cat.nodes.values() if n.params.get("held_exit")]
    assert held.owner == "j3"
    assert held.params["redo_area"] == noted[0].params["redo_area"]
    assert any(held.id in n.inputs and "redo_area" not in n.params for n in cat.nodes.values())


def test_a_script_refused_after_its_areas_were_marked_leaves_explain_whole() -> None:
    # Found by the crash fuzzer: a reader refused later (y unlike the store's) left its area's
    # commit id in the params of j's nodes, which the engine's catalog shares, and explain()
    # raised KeyError. The reader's area now holds copies of j's operators, not j's own.
    store = cq_py.ResourceStore()
    store.load("y", [{"id": 1}], key=["id"])  # (unlike the declaration below)
    eng = cq_py.Engine(executor="scheduled", resources=store)
    eng.execute(
        "REGISTER STREAM s(k BIGINT, a BIGINT); REGISTER RESOURCE x (id BIGINT, v DOUBLE) "
        "KEY (id); REGISTER RESOURCE y (id BIGINT, p BIGINT) KEY (id) ACCESS SCAN; "
        "REGISTER QUERY j AS ISTREAM(SELECT s.k, s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
    )
    before = eng.explain()
    with pytest.raises(cq_py.CQLSemanticError, match="resource 'y'"):
        eng.execute(
            "REGISTER QUERY q AS DSTREAM(SELECT SUM(v) AS t FROM j [Range 2], y "
            "WHERE j.a = y.p GROUP BY a);"
        )
    assert eng.explain() == before


@pytest.mark.parametrize("commit", ["ISTREAM", "DSTREAM"])
@pytest.mark.parametrize("window", ["[Range 4 Slide 1]", "[Range 7 Slide 2]", "[Rows 4]"])
def test_under_a_strategy_istream_over_reads_commits_as_rstream_with_its_difference(
    commit: str, window: str
) -> None:
    # ISTREAM or DSTREAM over an aggregate of resource reads: under a strategy not fused with
    # the aggregate, which lies inside the area, and planned as RSTREAM with "diff", whose
    # replay starts after the next slide; without one, fused as before.
    text = (
        "REGISTER STREAM s(k BIGINT, a BIGINT);"
        "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
        "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
        f"REGISTER QUERY q AS {commit}(SELECT AVG(v) AS m FROM j {window});"
    )
    cat, _ = Planner(Catalog(), executor="scheduled", txn="2pl").plan(parse(text))
    (commit_op,) = [n for n in cat.nodes.values() if n.params.get("commit") and n.owner == "q"]
    assert commit_op.op == "rstream"
    assert commit_op.params["diff"] == commit.lower()
    assert "replay_refused" not in commit_op.params
    assert commit_op.params["replay"].get("current", False) == ("Rows" in window)
    ops = {n.op for n in cat.nodes.values() if n.owner == "q"}
    assert "aggregate" in ops
    assert not ops & {"istream_aggregate", "dstream_aggregate"}
    plain, _ = Planner(Catalog(), executor="scheduled").plan(parse(text))
    ops = {n.op for n in plain.nodes.values() if n.owner == "q"}
    assert f"{commit.lower()}_aggregate" in ops
    assert not [n for n in plain.nodes.values() if "diff" in n.params]
