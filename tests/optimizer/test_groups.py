"""Base groups, USE sets, similarities and complete-linkage clustering (cq_py/optimizer/groups.py,
paper 001 §4.2–§4.3), against answers computed by hand and a brute-force clustering."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from cq_py import optimizer as mqo
from cq_py.optimizer import Clock, QueryGroups
from cq_py.parser import parse


def profile(name, masters, **widths):
    return mqo.QueryProfile(name, frozenset(masters), widths)


# ---- base groups (§4.2) ------------------------------------------------------------------------


def test_a_profile_takes_the_masters_and_each_sources_widest_window():
    text = (
        "REGISTER QUERY q AS MASTER Clock30, access SELECT a.x FROM Access [Range 5 SECONDS] a, "
        "Status [Now], URLs, Access [Range 60 SECONDS] b, Logs [Rows 3] WHERE a.x = b.x;"
    )
    q = parse(text).statements[0]
    p = mqo.profile_of("q", q.query, lambda d: d.value * 1000 if d.unit == "s" else d.value)
    assert p.masters == {"clock30", "access"}
    assert p.widths == {"access": 60000.0, "status": mqo.NOW, "urls": math.inf, "logs": None}


def test_window_ratios():
    assert mqo.window_ratio(30.0, 60.0) == 0.5
    assert mqo.window_ratio(60.0, 30.0) == 0.5
    assert mqo.window_ratio(mqo.NOW, mqo.NOW) == 1.0
    assert mqo.window_ratio(mqo.NOW, 5.0) == 0.0
    assert mqo.window_ratio(math.inf, math.inf) == 1.0
    assert mqo.window_ratio(math.inf, 5.0) == 0.0
    assert mqo.window_ratio(None, None) == 0.0  # count windows: never compared
    assert mqo.window_ratio(None, 5.0) == 0.0


def test_base_groups_by_hand():
    qs = [
        profile("q0", ["c30"], access=5.0, urls=math.inf),
        profile("q1", ["c30"], access=10.0, status=1.0),  # access 5/10 = 0.5: with q0
        profile("q2", ["c30"], access=30.0),  # 10/30 < 0.5: not with q0 and q1
        profile("q3", ["c60"], access=5.0),  # other masters
        profile("q4", ["c30"], status=1.0),  # no source in common with q0
        profile("q5", ["c30"], access=60.0, urls=math.inf),  # with q2 (30/60)
        profile("q6", ["c60"], access=8.0),  # with q3 (5/8)
        profile("q7", ["c30"], status=mqo.NOW),  # [Now] against q4's 1.0: 0
    ]
    assert mqo.base_groups(qs, 0.5) == [[0, 1], [2, 5], [3, 6], [4], [7]]
    # θ1 = 1: only equal windows; q4 reads status as q1 does, through the same window.
    assert mqo.base_groups(qs, 1.0) == [[0], [1, 4], [2], [3], [5], [6], [7]]
    # θ1 small: q2 joins q0 and q1 (5/30 = 0.17 ≥ 0.1), q5 does not (5/60 = 0.083); q4 still
    # shares nothing with q0.
    assert mqo.base_groups(qs, 0.1) == [[0, 1, 2], [3, 6], [4], [5], [7]]


def test_a_query_joins_the_first_group_it_agrees_with_entirely():
    # b agrees with a and with c, a not with c: greedy in registration order.
    a, b, c = profile("a", ["m"], s=4.0), profile("b", ["m"], s=6.0), profile("c", ["m"], s=9.0)
    assert mqo.base_groups([a, c, b], 0.6) == [[0, 2], [1]]
    assert mqo.base_groups([c, a, b], 0.6) == [[0, 2], [1]]
    assert mqo.base_groups([b, a, c], 0.6) == [[0, 1], [2]]


@st.composite
def profiles(draw):
    out = []
    for k in range(draw(st.integers(0, 12))):
        masters = draw(st.sets(st.sampled_from(["c1", "c2", "s"]), min_size=1, max_size=2))
        widths = draw(
            st.dictionaries(
                st.sampled_from(["a", "b", "t"]),
                st.sampled_from([mqo.NOW, 1.0, 2.0, 5.0, 10.0, math.inf, None]),
                min_size=1,
                max_size=3,
            )
        )
        out.append(mqo.QueryProfile(f"q{k}", frozenset(masters), widths))
    return out


@settings(max_examples=examples(200), deadline=None)
@given(profiles(), st.sampled_from([0.1, 0.5, 1.0]))
def test_base_groups_hold_only_queries_that_agree_pairwise(qs, theta1):
    groups = mqo.base_groups(qs, theta1)
    assert sorted(k for g in groups for k in g) == list(range(len(qs)))
    for g in groups:
        assert g == sorted(g)
        for i, j in itertools.combinations(g, 2):
            p, q = qs[i], qs[j]
            common = p.widths.keys() & q.widths.keys()
            assert p.masters == q.masters
            assert common
            assert all(mqo.window_ratio(p.widths[s], q.widths[s]) >= theta1 for s in common)
    # Greedy: a query starts a group only when it disagrees with someone in every earlier one.
    for gi, g in enumerate(groups):
        first = g[0]
        for earlier in groups[:gi]:
            if earlier[0] < first:
                members = [m for m in earlier if m < first]
                assert not all(
                    mqo.base_groups([qs[m], qs[first]], theta1) == [[0, 1]] for m in members
                )


# ---- USE sets and mqo.similarity (§4.3) --------------------------------------------------------


def test_use_sets_by_hand():
    arrivals = np.array([0, 3, 4, 7, 10, 12, 20])
    runs = np.array([4, 12])
    assert mqo.use_set(arrivals, runs, 5.0).tolist() == [0, 3, 4, 10, 12]  # (−1, 4] and (7, 12]
    assert mqo.use_set(arrivals, runs, 1.0).tolist() == [4, 12]
    assert mqo.use_set(arrivals, runs, mqo.NOW).tolist() == [4, 12]
    assert mqo.use_set(arrivals, runs, math.inf).tolist() == [0, 3, 4, 7, 10, 12]
    assert mqo.use_set(arrivals, runs, None).tolist() == [0, 3, 4, 7, 10, 12]
    assert mqo.use_set(arrivals, np.array([], dtype=np.int64), 5.0).tolist() == []
    assert mqo.use_set(np.array([], dtype=np.int64), runs, 5.0).tolist() == []


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.integers(0, 40), max_size=15).map(sorted),
    st.lists(st.integers(0, 40), max_size=6).map(lambda v: sorted(set(v))),
    st.sampled_from([mqo.NOW, 1.0, 3.0, 10.0, math.inf]),
)
def test_use_sets_against_their_definition(arrivals, runs, width):
    def read(a, tau):
        if width == mqo.NOW:
            return a == tau
        return tau - width < a <= tau

    want = [a for a in arrivals if any(read(a, tau) for tau in runs)]
    got = mqo.use_set(np.array(arrivals, dtype=np.int64), np.array(runs, dtype=np.int64), width)
    assert got.tolist() == want


def test_similarity_by_hand():
    u1 = {"access": np.array([1, 2, 3, 4]), "status": np.array([5, 10])}
    u2 = {"access": np.array([3, 4, 5]), "status": np.array([5, 10]), "other": np.array([1])}
    assert mqo.jaccard(u1["access"], u2["access"]) == 2 / 5
    assert mqo.similarity(u1, u2) == 2 / 5  # the least over access (0.4) and status (1)
    assert mqo.similarity(u1, {"urls": np.array([1])}) == 0.0  # nothing in common
    assert mqo.similarity({"a": np.array([])}, {"a": np.array([])}) == 1.0  # J(∅, ∅) = 1
    assert mqo.similarity(None, u2) == 0.0


# ---- complete linkage ----------------------------------------------------------------------


def brute_force_complete_linkage(sim, theta2):
    clusters = [[i] for i in range(len(sim))]
    while len(clusters) > 1:
        best = None
        for a, b in itertools.combinations(range(len(clusters)), 2):
            link = min(sim[i][j] for i in clusters[a] for j in clusters[b])
            if best is None or link > best[0]:
                best = (link, a, b)
        if best[0] < theta2:
            break
        _, a, b = best
        clusters[a] = sorted(clusters[a] + clusters[b])
        del clusters[b]
    return sorted(clusters, key=lambda c: c[0])


def test_complete_linkage_by_hand():
    s = np.array(
        [
            [1.0, 0.8, 0.3, 0.05],
            [0.8, 1.0, 0.6, 0.05],
            [0.3, 0.6, 1.0, 0.05],
            [0.05, 0.05, 0.05, 1.0],
        ]
    )
    # 0-1 first (0.8); then {0,1} to 2 is min(0.3, 0.6) = 0.3, to 3 is 0.05.
    assert mqo.complete_linkage(s, 0.5) == [[0, 1], [2], [3]]
    assert mqo.complete_linkage(s, 0.3) == [[0, 1, 2], [3]]
    assert mqo.complete_linkage(s, 0.01) == [[0, 1, 2, 3]]
    assert mqo.complete_linkage(np.ones((1, 1)), 0.1) == [[0]]
    assert mqo.complete_linkage(np.ones((0, 0)), 0.1) == []


@st.composite
def similarity_matrices(draw):
    n = draw(st.integers(1, 9))
    s = np.ones((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            s[i, j] = s[j, i] = draw(st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.5, 0.5, 0.9, 1.0]))
    return s


@settings(max_examples=examples(300), deadline=None)
@given(similarity_matrices(), st.sampled_from([0.05, 0.1, 0.5, 1.0]))
def test_complete_linkage_equals_the_brute_force_one(s, theta2):
    got = mqo.complete_linkage(s, theta2)
    assert got == brute_force_complete_linkage(s, theta2)
    for c in got:  # every two members at least θ2 similar
        assert all(s[i, j] >= theta2 for i, j in itertools.combinations(c, 2))


def test_a_dropped_query_leaves_its_group_and_the_others_keep_their_clusters():
    # a and c run at s's arrivals (every 5), b at t's (every 5, 1 later): all read every s
    # arrival of the period. d runs on a clock every 7 and reads 1 tick: s's 0, 35, 70 (3/20).
    g = QueryGroups(theta1=0.5, theta2=0.2, period=100, streams={"s", "t"})
    g.clocks["c"] = Clock(every=7, offset=0)
    for name, master, width in [("a", "s", 10.0), ("b", "t", 10.0), ("c", "s", 8.0)]:
        g.add(profile(name, [master], s=width))
    g.add(profile("d", ["c"], s=1.0))
    g.note("s", np.arange(0, 100, 5))
    g.note("t", np.arange(1, 100, 5))
    g.follow(100)
    assert g.groups()["base_groups"] == [["a", "c"], ["b"], ["d"]]
    assert g.groups()["clusters"] == [["a", "c", "b"], ["d"]]
    g.remove("a")
    after = g.groups()
    assert after == {
        "base_groups": [["b"], ["c"], ["d"]],
        "clusters": [["b", "c"], ["d"]],
        "log_period": [0, 100],
    }
    g.remove("nobody")  # (nothing)
    assert g.groups() == after
    g.remove("d")
    assert g.logging == {"s", "t"}


ticks = st.lists(st.integers(0, 30), max_size=8).map(lambda t: np.array(sorted(t), np.int64))
group_uses = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["a", "b", "c"]), ticks, max_size=3),
)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(group_uses, min_size=1, max_size=6))
def test_the_similarity_matrix_equals_each_pairs_similarity(uses):
    # (The matrix is what clustering reads; similarity() is §4.3's definition, pair by pair.)
    sim = mqo.similarity_matrix(uses)
    for a, b in itertools.product(range(len(uses)), repeat=2):
        expected = 1.0 if a == b else mqo.similarity(uses[a], uses[b])
        assert math.isclose(sim[a, b], expected), (a, b)
