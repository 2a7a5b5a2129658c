"""Paper 002's redo areas as the planner marks them (cq_py/planner/redo_areas.py) on queries that
read resources: the commit operator, the gatekeepers and the area's members in the plan the
scheduled executor runs and in explain(); the gatekeeper constraint changes the order of
evaluation, never the results."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import cq_py
from cq_py import ResourceStore

# Fig. 6's query in CQL: each row of s joined with x (a stream-valued query j), then AVG over a
# sliding window of j (q), the relation-to-stream operator above that window committing.
SCRIPT = (
    "REGISTER STREAM s(k BIGINT, a BIGINT);"
    "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
    "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
    "REGISTER QUERY q AS RSTREAM(SELECT AVG(v) AS m FROM j [Range 4 Slide 1]);"
)


def _engine(**options: object) -> cq_py.Engine:
    store = ResourceStore()
    store.load("x", [{"id": i, "v": float(i)} for i in range(5)], key=["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, **options)
    eng.execute(SCRIPT)
    return eng


def test_the_area_runs_from_the_reference_join_to_the_rstream_above_the_window() -> None:
    text = _engine().explain()
    ops = {
        line.split()[0]: line
        for line in text.splitlines()
        if line.startswith("  #") and "  -> " in line
    }
    join = next(k for k, line in ops.items() if "ReferenceJoin" in line)
    rstream = next(k for k, line in ops.items() if " RSTREAM " in line)
    area = next(line for line in text.splitlines() if line.startswith(f"  {rstream} commits"))
    assert "commits q's transactions (paper 002 §3.2)" in area
    assert "its redo area holds an overlapping window" in area
    # Every operator from the reference join up to RSTREAM, the outputs and j's sources outside.
    members = area.split("members ")[1].split(";")[0].split()
    between = [k for k in ops if int(join[1:]) <= int(k[1:]) <= int(rstream[1:])]
    assert members == [k for k in between if "Output" not in ops[k]]
    assert area.endswith(f"gatekeepers {join} (its input 0 queued)")
    assert f"gatekeeper constraint on (gatekeepers: {join})" in text


def _run(seed: int, **options: object) -> list[dict]:
    eng = _engine(**options)
    rng = random.Random(seed)
    rows = [{"k": rng.randrange(5), "a": rng.randrange(100), "ts": t} for t in range(30)]
    eng.push("s", pa.Table.from_pylist(rows))
    eng.close()
    return eng.fetch("q").to_pylist()


@pytest.mark.parametrize("seed", range(4))
def test_the_constraint_changes_no_result(seed: int) -> None:
    expected = _run(seed, gatekeeper=False, batch=1)
    assert expected
    for batch in (1, 7, 50):
        assert _run(seed, gatekeeper=True, batch=batch) == expected
        assert _run(seed, gatekeeper=False, batch=batch) == expected
