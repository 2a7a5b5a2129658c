"""Engine.query_groups() and Engine.recluster(): base groups as queries register, clusters found
on the arrival log when a period ends, found again when the arrival pattern changes (paper 001
§4.2–§4.5), kept across snapshots; mqo=False keeps every query alone."""

from __future__ import annotations

import pytest

import cq_py
from cq_py.errors import ArgumentError

SCHEMA = (
    "REGISTER STREAM access(x INT); REGISTER STREAM s1(y INT); REGISTER STREAM s2(y INT);"
    "REGISTER CLOCK a EVERY 30 SECONDS; REGISTER CLOCK b EVERY 30 SECONDS OFFSET 15 SECONDS;"
)


def feed(eng, rows, upto):
    """Each stream's rows below ``upto`` (ms) not pushed yet, then every stream advanced there."""
    for name in ("access", "s1", "s2"):
        mine = [r for r in rows.get(name, []) if feed.sent.get(name, -1) < r < upto]
        if mine:
            col = "x" if name == "access" else "y"
            eng.push(name, [{col: 1, "ts": t} for t in mine])
            feed.sent[name] = mine[-1]
    eng.advance(upto)


feed.sent = {}
# q1 and q2 in base groups and clusters of their own, no period logged (mqo=False).
TWO_ALONE = {"base_groups": [["q1"], ["q2"]], "clusters": [["q1"], ["q2"]], "log_period": None}


@pytest.fixture(autouse=True)
def _fresh_feed():
    feed.sent = {}


def test_clocks_with_offsets_cluster_by_the_arrivals_their_runs_read():
    # Access arrives every second. q1 and q2 run every 30 s, 15 s apart, reading a minute:
    # in the first 100 s q1 reads 0..90 s (91 arrivals), q2 0..75 s (76): Jaccard 76/91. q3 and
    # q4 read one second only: their runs' own arrival (0, 30, 60, 90 s; 15, 45, 75 s) - nothing
    # in common with each other, 4/91 and 3/76 of what q1 and q2 read.
    eng = cq_py.Engine(log_period=100.0)
    eng.execute(
        SCHEMA + "REGISTER QUERY q1 AS MASTER a SELECT x FROM access [Range 60 SECONDS];"
        "REGISTER QUERY q2 AS MASTER b SELECT x FROM access [Range 60 SECONDS];"
        "REGISTER QUERY q3 AS MASTER a SELECT x FROM access [Range 1 SECOND];"
        "REGISTER QUERY q4 AS MASTER b SELECT x FROM access [Range 1 SECOND];"
    )
    alone = [["q1"], ["q2"], ["q3"], ["q4"]]  # different masters, or windows 60 times apart
    assert eng.query_groups() == {"base_groups": alone, "clusters": alone, "log_period": None}
    rows = {"access": list(range(0, 300_000, 1000))}
    feed(eng, rows, 99_000)
    assert eng.query_groups()["clusters"] == alone  # the first period has not ended
    feed(eng, rows, 100_000)
    assert eng.query_groups() == {
        "base_groups": alone,
        "clusters": [["q1", "q2"], ["q3"], ["q4"]],
        "log_period": [0, 100_000],
    }
    # With θ2 above 76/91 = 0.835 q1 and q2 stay apart.
    apart = cq_py.Engine(log_period=100.0, theta2=0.9)
    apart.execute(
        SCHEMA + "REGISTER QUERY q1 AS MASTER a SELECT x FROM access [Range 60 SECONDS];"
        "REGISTER QUERY q2 AS MASTER b SELECT x FROM access [Range 60 SECONDS];"
    )
    feed.sent = {}
    feed(apart, rows, 100_000)
    assert apart.query_groups()["clusters"] == [["q1"], ["q2"]]


def test_equal_masters_and_comparable_windows_make_one_base_group():
    eng = cq_py.Engine(theta1=0.5)
    eng.execute(
        SCHEMA + "REGISTER QUERY q1 AS MASTER a SELECT x FROM access [Range 60 SECONDS];"
        "REGISTER QUERY q2 AS MASTER a SELECT x FROM access [Range 30 SECONDS];"
        "REGISTER QUERY q3 AS MASTER a SELECT x FROM access [Range 10 SECONDS];"
    )
    eng.execute("REGISTER QUERY q4 AS MASTER a SELECT x FROM access [Range 20 SECONDS];")
    groups = eng.query_groups()
    assert groups["base_groups"] == [["q1", "q2"], ["q3", "q4"]]
    # Queries that are no MASTER query are not grouped.
    eng.execute("REGISTER QUERY plain AS ISTREAM(SELECT x FROM access [Range 60 SECONDS]);")
    assert eng.query_groups()["base_groups"] == [["q1", "q2"], ["q3", "q4"]]


def streams_in_step_then_apart():
    # s1 and s2 arrive together in the first 100 s, 20 s apart after: q1 (MASTER s1) and q2
    # (MASTER s2), each reading 5 s of access, read the same arrivals, then none in common.
    return {
        "access": list(range(0, 400_000, 1000)),
        "s1": [*range(10_000, 100_000, 10_000), *range(110_000, 400_000, 40_000)],
        "s2": [*range(10_000, 100_000, 10_000), *range(130_000, 400_000, 40_000)],
    }


def two_stream_masters(**options):
    eng = cq_py.Engine(log_period=100.0, **options)
    eng.execute(
        SCHEMA + "REGISTER QUERY q1 AS MASTER s1 SELECT x FROM access [Range 5 SECONDS];"
        "REGISTER QUERY q2 AS MASTER s2 SELECT x FROM access [Range 5 SECONDS];"
    )
    return eng


def test_clusters_are_found_again_when_the_arrival_pattern_changes():
    eng = two_stream_masters()
    rows = streams_in_step_then_apart()
    feed(eng, rows, 100_000)
    assert eng.query_groups()["clusters"] == [["q1", "q2"]]
    feed(eng, rows, 199_000)
    assert eng.query_groups()["clusters"] == [["q1", "q2"]]  # checked only when a period ends
    feed(eng, rows, 200_000)
    assert eng.query_groups() == {
        "base_groups": [["q1"], ["q2"]],
        "clusters": [["q1"], ["q2"]],
        "log_period": [100_000, 200_000],
    }


def test_recluster_forces_a_clustering_on_the_last_period():
    eng = two_stream_masters()
    rows = streams_in_step_then_apart()
    feed(eng, rows, 100_000)
    feed(eng, rows, 180_000)
    eng.recluster()
    # [80 s, 180 s): s1 at 90, 110, 150 s; s2 at 90, 130, 170 s: each reads 15 arrivals, the 5
    # of 86..90 s in common: 5/25 ≥ θ2 = 0.1, together still; θ2 = 0.3 would part them.
    assert eng.query_groups() == {
        "base_groups": [["q1"], ["q2"]],
        "clusters": [["q1", "q2"]],
        "log_period": [80_000, 180_000],
    }
    strict = two_stream_masters(theta2=0.3)
    feed.sent = {}
    feed(strict, rows, 100_000)
    feed(strict, rows, 180_000)
    assert strict.query_groups()["clusters"] == [["q1", "q2"]]  # (0 s - 100 s: all in common)
    strict.recluster()
    assert strict.query_groups()["clusters"] == [["q1"], ["q2"]]
    off = two_stream_masters(mqo=False)
    feed.sent = {}
    feed(off, rows, 180_000)
    off.recluster()
    assert off.query_groups() == TWO_ALONE


def test_single_row_pushes_are_logged_too():
    eng = two_stream_masters()
    for t in range(0, 100_001, 1000):
        eng.push_row("access", t, x=1)
        if t and t % 10_000 == 0 and t < 100_000:
            eng.push_row("s1", t, y=1)
            eng.push_row("s2", t, y=1)
    eng.advance(100_001)
    assert eng.query_groups()["clusters"] == [["q1", "q2"]]


def test_with_mqo_off_every_query_is_alone():
    eng = cq_py.Engine(mqo=False, log_period=100.0)
    eng.execute(
        SCHEMA + "REGISTER QUERY q1 AS MASTER a SELECT x FROM access [Range 60 SECONDS];"
        "REGISTER QUERY q2 AS MASTER a SELECT x FROM access [Range 60 SECONDS];"
    )
    feed(eng, {"access": list(range(0, 200_000, 1000))}, 150_000)
    assert eng.query_groups() == TWO_ALONE


def test_a_snapshot_keeps_the_log_and_the_clusters():
    rows = streams_in_step_then_apart()
    eng = two_stream_masters()
    feed(eng, rows, 150_000)
    again = cq_py.Engine.restore(eng.snapshot())
    assert (
        again.query_groups()
        == eng.query_groups()
        == {
            "base_groups": [["q1"], ["q2"]],
            "clusters": [["q1", "q2"]],
            "log_period": [0, 100_000],
        }
    )
    sent = dict(feed.sent)
    feed(eng, rows, 200_000)
    feed.sent = sent
    feed(again, rows, 200_000)
    assert again.query_groups() == eng.query_groups()
    assert again.query_groups()["clusters"] == [["q1"], ["q2"]]


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("theta1", 0, "theta1 must be a number in (0, 1]; found 0"),
        ("theta1", 1.5, "theta1 must be a number in (0, 1]; found 1.5"),
        ("theta2", -0.1, "theta2 must be a number in (0, 1]"),
        ("theta2", "0.1", "theta2 must be a number in (0, 1]"),
        ("log_period", 0, "log_period must be a positive number of seconds"),
        ("log_period", float("inf"), "log_period must be a positive number of seconds"),
        ("mqo", "yes", "mqo must be True or False"),
    ],
)
def test_bad_options_are_refused(option, value, expected):
    with pytest.raises(ArgumentError, match=expected.replace("(", r"\(").replace("]", r"\]")):
        cq_py.Engine(**{option: value})
    with pytest.raises(ValueError, match=option):  # (ArgumentError is one)
        cq_py.Engine(**{option: value})


def test_explain_shows_the_groups_and_clusters():
    eng = two_stream_masters()
    assert "base groups: q1; q2" in eng.explain()
    assert "each base group alone until the first log period ends" in eng.explain()
    feed(eng, streams_in_step_then_apart(), 100_000)
    text = eng.explain()
    assert "theta1 0.5, theta2 0.1, log period 100 s" in text
    assert "clusters (on the arrivals of [0, 100000)): q1, q2" in text
    assert "mqo=False: every query alone" in two_stream_masters(mqo=False).explain()
    assert "Query groups" not in cq_py.Engine().explain()


def test_a_dropped_query_leaves_the_groups_also_after_a_restore():
    eng = two_stream_masters()
    eng.execute("REGISTER QUERY q3 AS MASTER s1 SELECT x FROM access [Range 4 SECONDS];")
    feed(eng, streams_in_step_then_apart(), 150_000)
    assert eng.query_groups()["base_groups"] == [["q1", "q3"], ["q2"]]
    assert eng.query_groups()["clusters"] == [["q1", "q3", "q2"]]
    eng.drop("q1")
    want = {"base_groups": [["q2"], ["q3"]], "clusters": [["q2", "q3"]], "log_period": [0, 100_000]}
    assert eng.query_groups() == want
    assert cq_py.Engine.restore(eng.snapshot()).query_groups() == want
