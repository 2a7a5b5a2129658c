"""Engine.commit_log() and read_versions() are built from columns the core makes
(cq::txn::CommitLogAsColumns), not from a Python tuple per record: on a log of thousands of
transactions, commits and aborts, reading one or two resources, they give the tables the former
per-record construction gives, type for type, and cq_py.txn.check the same verdicts."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

import cq_py
from cq_py import ResourceStore

STREAM = (
    "REGISTER STREAM s(k BIGINT, a BIGINT);"
    "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
    "REGISTER RESOURCE y (id BIGINT, w DOUBLE) KEY (id);"
)
# q's area reads x and y (two versions per transaction); m's reads x through a join of its own.
QUERIES = (
    "REGISTER QUERY j AS ISTREAM(SELECT s.k, x.v FROM s [Now], x WHERE s.k = x.id);"
    "REGISTER QUERY q AS RSTREAM(SELECT j.k, y.w FROM j [Now], y WHERE j.k = y.id);"
    "REGISTER QUERY j2 AS ISTREAM(SELECT s.k, x.v FROM s [Now], x WHERE s.k = x.id);"
    "REGISTER QUERY m AS RSTREAM(SELECT AVG(v) AS m FROM j2 [Range 4 Slide 1]);"
)


def _large_log(rows: int, chunk: int) -> tuple[cq_py.Engine, ResourceStore]:
    """An optimistic engine after ``rows`` rows, a tick each, with a write between chunks: the
    instant read before the write and committed after it aborts and is redone."""
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(16)], key=["id"])
    store.load("y", [{"id": i, "w": float(i)} for i in range(16)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, txn="optimistic")
    eng.execute(STREAM + QUERIES)
    for start in range(0, rows, chunk):
        ticks = range(start, min(rows, start + chunk))
        eng.push("s", pa.Table.from_pylist([{"k": t % 16, "a": t, "ts": t + 1} for t in ticks]))
        with store.transaction(timeout=5, writer="w") as tx:
            name, value = ("y", "w") if start % 2 else ("x", "v")
            tx.upsert(name, [{"id": start % 16, value: 0.5}])
    eng.close()
    return eng, store


def _records_the_old_way(eng: cq_py.Engine) -> list[tuple[Any, ...]]:
    """The core's log as the tuples its binding used to return, one per record: (query, area,
    instant, committed, [(op, evaluations)], [(resource, version)], begin ns, end ns)."""
    records, offsets, evaluations, versions = (b.to_pylist() for b in eng._commit_log_batches())
    ops = [(e["operator"], e["evaluations"]) for e in evaluations]
    reads = [(v["resource"], v["version"]) for v in versions]
    read_at = [o["versions"] for o in offsets]
    assert [v["record"] for v in versions] == [
        k for k in range(len(records)) for _ in range(read_at[k + 1] - read_at[k])
    ]
    return [
        (
            r["query"],
            r["area"],
            r["instant"],
            r["outcome"] == "commit",
            ops[offsets[k]["evaluations"] : offsets[k + 1]["evaluations"]],
            reads[offsets[k]["versions"] : offsets[k + 1]["versions"]],
            r["begin"],
            r["end"],
        )
        for k, r in enumerate(records)
    ]


def _commit_log_the_old_way(records: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table(
        {
            "query": pa.array([r[0] for r in records], pa.string()),
            "area": pa.array([r[1] for r in records], pa.int64()),
            "instant": pa.array([r[2] for r in records], pa.int64()),
            "outcome": pa.array(["commit" if r[3] else "abort" for r in records], pa.string()),
            "begin": pa.array([r[6] for r in records], pa.timestamp("ns", tz="UTC")),
            "end": pa.array([r[7] for r in records], pa.timestamp("ns", tz="UTC")),
            "evaluations": pa.array([r[4] for r in records], pa.map_(pa.int64(), pa.int64())),
            "versions": pa.array([r[5] for r in records], pa.map_(pa.string(), pa.int64())),
        }
    )


def _read_versions_the_old_way(records: list[tuple[Any, ...]]) -> pa.Table:
    rows = [(r[0], r[2], name, version) for r in records if r[3] for name, version in r[5]]
    return pa.table(
        {
            "query": pa.array([r[0] for r in rows], pa.string()),
            "instant": pa.array([r[1] for r in rows], pa.int64()),
            "resource": pa.array([r[2] for r in rows], pa.string()),
            "version": pa.array([r[3] for r in rows], pa.int64()),
        }
    )


def test_a_large_log_gives_the_tables_of_the_per_record_construction() -> None:
    rows = 3000
    eng, store = _large_log(rows, chunk=100)
    log = eng.commit_log()
    records = _records_the_old_way(eng)
    assert log.equals(_commit_log_the_old_way(records), check_metadata=True)
    assert eng.read_versions().equals(_read_versions_the_old_way(records), check_metadata=True)
    # What the log holds, counted apart from it: every instant of each query committed once,
    # the aborts the writes caused, and the areas' counts of both.
    commits = {k: (a["commits"], a["aborts"]) for k, a in eng.stats()["areas"].items()}
    assert sorted(commits) == sorted(set(log["area"].to_pylist()))
    for area, (n_commits, n_aborts) in commits.items():
        outcomes = [r[3] for r in records if r[1] == area]
        assert (outcomes.count(True), outcomes.count(False)) == (n_commits, n_aborts)
    assert sum(n for _, n in commits.values()) > 0  # the writes caused aborts
    q = [r for r in records if r[0] == "q" and r[3]]
    assert len(q) >= rows
    assert all(dict(r[5]).keys() == {"x", "y"} for r in q)
    assert all(r[4] for r in records)  # every record counts its area's evaluations
    assert cq_py.txn.check(log, eng.read_versions(), store.update_log()) == []


def test_an_empty_log_has_the_types_of_the_per_record_construction() -> None:
    eng = cq_py.Engine()
    assert eng.commit_log().equals(_commit_log_the_old_way([]), check_metadata=True)
    assert eng.read_versions().equals(_read_versions_the_old_way([]), check_metadata=True)
