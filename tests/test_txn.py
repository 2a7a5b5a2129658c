"""cq_py.txn.check, the checker of transactional reads (paper 002 §3): each kind of violation on
hand-made logs, and random logs against a brute-force reading of the definitions."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from cq_py.txn import check
from tests.budget import examples

# x updated at 100 (v1) and 300 (v3), y at 200 (v2): x's states are v0 until 100, v1 in
# [100, 300), v3 from 300; y's v0 until 200, v2 from 200.
UPDATES = {"version": [1, 2, 3], "at": [100, 200, 300], "resources": [["x"], ["y"], ["x"]]}


def _commits(*rows: tuple[str, int, str, int, int]) -> dict[str, list[object]]:
    keys = ("query", "instant", "outcome", "begin", "end")
    return {k: [r[i] for r in rows] for i, k in enumerate(keys)}


def _reads(*rows: tuple[str, int, str, int]) -> dict[str, list[object]]:
    keys = ("query", "instant", "resource", "version")
    return {k: [r[i] for r in rows] for i, k in enumerate(keys)}


def _kinds(violations: list[cq_py.txn.Violation]) -> list[tuple[str, str, int, str | None]]:
    return [(v.kind, v.query, v.instant, v.resource) for v in violations]


def test_states_current_together_during_the_transaction_are_no_violation() -> None:
    commits = _commits(("q", 1, "commit", 50, 90), ("q", 2, "commit", 150, 160))
    reads = _reads(("q", 1, "x", 0), ("q", 1, "y", 0), ("q", 2, "x", 1), ("q", 2, "y", 0))
    assert check(commits, reads, UPDATES) == []


def test_each_kind_of_violation() -> None:
    commits = _commits(
        ("a", 1, "commit", 150, 160),  # x at two versions
        ("b", 1, "commit", 150, 350),  # x v1 ends at 300, y v2 starts at 200: fine together...
        ("c", 1, "commit", 350, 360),  # ... but not during [350, 360]
        ("d", 1, "commit", 0, 400),  # x v3 (from 300) and y v0 (until 200): never together
        ("e", 1, "commit", 0, 400),  # version 2 never changed x
        ("f", 1, "commit", 0, 10),
        ("f", 1, "commit", 20, 30),  # committed twice
        ("g", 1, "abort", 0, 400),  # aborted: whatever it read does not count
    )
    reads = _reads(
        ("a", 1, "x", 0),
        ("a", 1, "x", 1),
        ("b", 1, "x", 1),
        ("b", 1, "y", 2),
        ("c", 1, "x", 1),
        ("c", 1, "y", 2),
        ("d", 1, "x", 3),
        ("d", 1, "y", 0),
        ("e", 1, "x", 2),
        ("g", 1, "x", 3),
        ("g", 1, "y", 0),
    )
    found = check(commits, reads, UPDATES)
    assert _kinds(found) == [
        ("never_current_together", "a", 1, None),  # (v0 ends where v1 starts)
        ("two_versions", "a", 1, "x"),
        ("not_current_during", "c", 1, None),
        ("never_current_together", "d", 1, None),
        ("unknown_version", "e", 1, "x"),
        ("committed_twice", "f", 1, None),
    ]
    assert "[0, 1]" in found[1].detail
    assert "[200, 300)" in found[2].detail


def test_the_logs_as_tables_with_timestamps() -> None:
    # The update log as ResourceStore.update_log() gives it: timestamps in UTC.
    store = cq_py.ResourceStore()
    store.load("x", [{"id": 1, "v": 10}], key=["id"])
    with store.transaction() as tx:
        tx.upsert("x", [{"id": 1, "v": 11}])
    log = store.update_log()
    first, second = log["at"].to_pylist()
    commits = pa.table(
        {
            "query": ["q", "q"],
            "instant": [1, 2],
            "outcome": ["commit", "commit"],
            "begin": pa.array([first, second], pa.timestamp("ns", tz="UTC")),
            "end": pa.array(
                [first, second + dt.timedelta(microseconds=1)], pa.timestamp("ns", tz="UTC")
            ),
        }
    )
    reads = _reads(("q", 1, "x", 1), ("q", 2, "x", 1))
    # Instant 2 began when version 2 was published: version 1 was no longer current.
    assert _kinds(check(commits, reads, log)) == [("not_current_during", "q", 2, None)]


def test_a_missing_column_is_named() -> None:
    with pytest.raises(ValueError, match="the read log has no column 'version'; found: query"):
        check(_commits(), {"query": [], "instant": [], "resource": []}, UPDATES)
    with pytest.raises(ValueError, match="the update log has no column 'resources'"):
        check(_commits(), _reads(), {"version": [1], "at": [1]})


def test_an_engines_own_logs_check_with_reads_taken_from_the_commit_log() -> None:
    # check(eng.commit_log(), None, store.update_log()): each transaction's reads are the
    # versions its commit log row lists. x written between two windows is no violation; the
    # same commit log with a transaction's versions made two of x is.
    store = cq_py.ResourceStore()
    store.load("x", [{"id": 1, "pos": 10.0}], key=["id"])
    # (Under snapshot the open transaction holds no lock: the write goes through between pushes.)
    eng = cq_py.Engine(executor="scheduled", resources=store, txn="snapshot")
    eng.execute(
        "REGISTER STREAM e(k BIGINT);"
        "REGISTER RESOURCE x (id BIGINT, pos DOUBLE) KEY (id);"
        "REGISTER QUERY j AS ISTREAM(SELECT e.k, x.pos FROM e [Now], x WHERE e.k = x.id);"
        "REGISTER QUERY c AS ISTREAM(SELECT AVG(pos) AS c FROM j [Range 2 Slide 2]);"
    )
    eng.push("e", [{"k": 1, "ts": 0}, {"k": 1, "ts": 1}, {"k": 1, "ts": 3}])  # commits 0 and 2
    with store.transaction() as tx:
        tx.upsert("x", [{"id": 1, "pos": 9.0}])
    eng.push("e", [{"k": 1, "ts": 5}])
    eng.close()
    log = eng.commit_log()
    assert sorted({v for m in log["versions"].to_pylist() for _, v in m}) == [1, 2]
    assert check(log, None, store.update_log()) == []
    two = log.set_column(
        log.schema.get_field_index("versions"),
        "versions",
        pa.array([[("x", 1), ("x", 2)]] * log.num_rows, log.schema.field("versions").type),
    )
    assert "two_versions" in {v.kind for v in check(two, None, store.update_log())}
    with pytest.raises(ValueError, match="pass read_log=None"):
        check(log, eng.read_log(), store.update_log())
    with pytest.raises(ValueError, match="column 'versions'"):
        check(_commits(), None, UPDATES)


@st.composite
def logs(draw: st.DrawFn) -> tuple[dict[str, list[object]], ...]:
    names = ["x", "y", "z"]
    n = draw(st.integers(0, 5))
    changed = [
        draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        for _ in range(n)
    ]
    updates = {
        "version": list(range(1, n + 1)),
        "at": [10 * (k + 1) for k in range(n)],
        "resources": changed,
    }
    txns = draw(st.lists(st.tuples(st.sampled_from(["q", "r"]), st.integers(0, 3)), max_size=6))
    commits: list[tuple[str, int, str, int, int]] = []
    reads: list[tuple[str, int, str, int]] = []
    for q, t in txns:
        begin = draw(st.integers(0, 10 * n + 10))
        end = begin + draw(st.integers(0, 30))
        commits.append((q, t, draw(st.sampled_from(["commit", "commit", "abort"])), begin, end))
        reads += [
            (q, t, draw(st.sampled_from(names)), draw(st.integers(0, n + 1)))
            for _ in range(draw(st.integers(0, 4)))
        ]
    return _commits(*commits), _reads(*reads), updates


def _brute(commits: dict, reads: dict, updates: dict) -> set[tuple[str, str, int, str | None]]:
    """The definitions read literally, one transaction and one resource at a time."""
    big = float("inf")
    out: set[tuple[str, str, int, str | None]] = set()
    keys = list(
        zip(
            commits["query"],
            commits["instant"],
            commits["outcome"],
            commits["begin"],
            commits["end"],
            strict=True,
        )
    )
    done: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for q, t, outcome, b, e in keys:
        if outcome == "commit":
            done.setdefault((q, t), []).append((b, e))
    for (q, t), spans in done.items():
        if len(spans) > 1:
            out.add(("committed_twice", q, t, None))
        mine = [(r, v) for rq, rt, r, v in zip(*reads.values(), strict=True) if (rq, rt) == (q, t)]
        lo, hi, any_known = -big, big, False
        for r in {r for r, _ in mine}:
            versions = {v for rr, v in mine if rr == r}
            changes = [
                (ver, at) for ver, at, res in zip(*updates.values(), strict=True) if r in res
            ]
            good = [v for v in versions if v == 0 or any(ver == v for ver, _ in changes)]
            if versions - set(good):
                out.add(("unknown_version", q, t, r))
            if len(set(good)) > 1:
                out.add(("two_versions", q, t, r))
            for v in good:
                any_known = True
                start = -big if v == 0 else next(at for ver, at in changes if ver == v)
                later = [at for ver, at in changes if ver > v]
                lo, hi = max(lo, start), min(hi, min(later, default=big))
        if not any_known:
            continue
        if lo >= hi:
            out.add(("never_current_together", q, t, None))
        elif any(b >= hi or lo > e for b, e in spans):
            out.add(("not_current_during", q, t, None))
    return out


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_random_logs_agree_with_the_definitions(given_logs: tuple[dict, ...]) -> None:
    commits, reads, updates = given_logs
    assert set(_kinds(check(commits, reads, updates))) == _brute(commits, reads, updates)
