"""A checker of transactional reads (paper 002 §3): did every committed transaction see one
committed state of each resource, serializable with the updates?

A query that reads updatable resources commits, at each instant, the rows it emits; the reads in
their derivation are the transaction TXN(e) (Def. 3.1). Which state a read saw depends on timing,
so tests check the logs rather than fixed rows: :func:`check` takes

* the **commit log**: one row per transaction, ``query``, ``instant`` (its tick), ``outcome``
  (``"commit"`` or ``"abort"``), ``begin`` and ``end`` (when its first read was made and when it
  committed or aborted: timestamps, or integer nanoseconds);
* the **read log**: one row per (transaction, resource, version) read, ``query``, ``instant``,
  ``resource``, ``version``;
* the **update log**: one row per update transaction, ``version``, ``at`` (when it was published)
  and ``resources`` (the names it changed), as :meth:`cq_py.ResourceStore.update_log` gives it. A
  resource's version is the update that made its state; version 0 is the state it was defined
  with, current until its first update.

and returns the violations among the committed transactions:

* ``two_versions``: one resource read at two versions;
* ``never_current_together``: the states read of different resources were never current at the
  same moment (no serial order puts the transaction anywhere among the updates);
* ``not_current_during``: they were, but at no moment between the transaction's begin and end;
* ``unknown_version``: a version the update log does not hold, or one that did not change that
  resource;
* ``committed_twice``: a query committed one instant more than once.

The work is columnar (pyarrow group-bys and numpy searches); only violations become objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Violation", "check"]

_NEVER = np.iinfo(np.int64).min  # (before every update)
_FOREVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Violation:
    """One violation :func:`check` found: its ``kind``, the transaction (``query``,
    ``instant``), the ``resource`` concerned (None when it concerns several) and a ``detail``
    saying what was read when."""

    kind: str
    query: str
    instant: int
    resource: str | None
    detail: str

    def __str__(self) -> str:
        on = f" of '{self.resource}'" if self.resource else ""
        return f"{self.kind}{on} in '{self.query}' at {self.instant}: {self.detail}"


def check(commit_log: Any, read_log: Any, update_log: Any) -> list[Violation]:
    """The violations of the committed transactions in ``commit_log`` (see the module's
    docstring for the three logs' columns), in (query, instant) order; empty when every
    transaction read one state of each resource, current together at a moment during it.

    ``read_log`` None takes each transaction's reads from the commit log's ``versions`` (what
    ``Engine.commit_log()`` gives: the versions the transaction read itself), so an engine's
    run is checked with ``check(eng.commit_log(), None, store.update_log())``.

    Each log is a pyarrow Table or anything ``pa.table`` takes (a dict of columns, a list of
    row dicts); a missing column is a ``ValueError`` naming it.

    >>> updates = {"version": [1, 2], "at": [100, 200], "resources": [["x"], ["y"]]}
    >>> commits = {"query": ["q", "q"], "instant": [1, 2], "outcome": ["commit", "commit"],
    ...            "begin": [150, 150], "end": [160, 250]}
    >>> reads = {"query": ["q", "q", "q", "q"], "instant": [1, 1, 2, 2],
    ...          "resource": ["x", "y", "x", "y"], "version": [1, 0, 1, 2]}
    >>> check(commits, reads, updates)
    []
    >>> reads["version"][3] = 0  # instant 2 read y's first state, gone at 200
    >>> commits["begin"][1] = 210  # ... and began after that
    >>> for v in check(commits, reads, updates):
    ...     print(v.kind, v.query, v.instant)
    ...     print(v.detail)
    not_current_during q 2
    current together during [100, 200) ns, not during the transaction [210, 250] ns
    """
    commits = _log(
        commit_log,
        "commit log",
        {"query": pa.string(), "instant": pa.int64(), "outcome": pa.string()},
        ("begin", "end"),
    )
    reads = _log(
        _own_reads(commits) if read_log is None else read_log,
        "read log",
        {
            "query": pa.string(),
            "instant": pa.int64(),
            "resource": pa.string(),
            "version": pa.int64(),
        },
        (),
    )
    updates = _log(
        update_log,
        "update log",
        {"version": pa.int64(), "resources": pa.list_(pa.string())},
        ("at",),
    )
    committed = commits.filter(pc.equal(commits["outcome"], "commit"))
    twice = committed.group_by(["query", "instant"]).aggregate([("outcome", "count")])
    out = _each(
        twice.filter(pc.greater(twice["outcome_count"], 1)),
        "committed_twice",
        lambda r: f"committed {r['outcome_count']} times",
    )
    lo, hi, known = _current(reads, updates)
    reads = reads.append_column("lo", pa.array(lo)).append_column("hi", pa.array(hi))
    out += _each(
        reads.filter(pa.array(~known)),
        "unknown_version",
        lambda r: f"version {r['version']} did not change '{r['resource']}' (update log)",
    )
    reads = reads.filter(pa.array(known))
    per_resource = reads.group_by(["query", "instant", "resource"]).aggregate(
        [("version", "min"), ("version", "max"), ("version", "distinct")]
    )
    out += _each(
        per_resource.filter(pc.not_equal(per_resource["version_min"], per_resource["version_max"])),
        "two_versions",
        lambda r: f"read at versions {sorted(r['version_distinct'])}",
    )
    together = reads.group_by(["query", "instant"]).aggregate([("lo", "max"), ("hi", "min")])
    together = together.join(
        committed.select(["query", "instant", "begin", "end"]), ["query", "instant"]
    )
    never = pc.greater_equal(together["lo_max"], together["hi_min"])
    outside = pc.and_(
        pc.invert(never),
        pc.or_(
            pc.greater_equal(together["begin"], together["hi_min"]),
            pc.greater(together["lo_max"], together["end"]),
        ),
    )
    out += _each(
        together.filter(never),
        "never_current_together",
        lambda r: "no moment had every state read current at once",
    )
    out += _each(
        together.filter(outside),
        "not_current_during",
        lambda r: (
            f"current together during [{_ns(r['lo_max'])}, {_ns(r['hi_min'])}) ns, not during "
            f"the transaction [{r['begin']}, {r['end']}] ns"
        ),
    )
    # Only committed transactions count (an aborted one emitted nothing).
    keys = set(zip(*(committed[c].to_pylist() for c in ("query", "instant")), strict=True))
    # (A transaction committed twice joins twice: one violation of each kind is enough.)
    unique = {
        (v.kind, v.query, v.instant, v.resource): v for v in out if (v.query, v.instant) in keys
    }
    return sorted(unique.values(), key=lambda v: (v.query, v.instant, v.kind, v.resource or ""))


def _each(rows: pa.Table, kind: str, detail: Any) -> list[Violation]:
    """A violation of ``kind`` per row of ``rows`` (few: the violations only)."""
    return [
        Violation(kind, r["query"], r["instant"], r.get("resource"), detail(r))
        for r in rows.to_pylist()
    ]


def _current(reads: pa.Table, updates: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each read, when the state it read was current, [lo, hi) in ns, and whether its
    version is known (0, or an update that changed that resource)."""
    n = reads.num_rows
    lo = np.full(n, _NEVER, dtype=np.int64)
    hi = np.full(n, _FOREVER, dtype=np.int64)
    known = np.zeros(n, dtype=bool)
    res = updates["resources"].combine_chunks()
    names = pc.list_flatten(res).to_numpy(zero_copy_only=False)
    parent = pc.list_parent_indices(res).to_numpy()
    version = updates["version"].to_numpy()[parent]
    at = updates["at"].to_numpy()[parent]
    read_names = reads["resource"].to_numpy(zero_copy_only=False)
    read_versions = reads["version"].to_numpy()
    for name in np.unique(read_names):
        rows = np.flatnonzero(read_names == name)
        mine = names == name
        order = np.argsort(version[mine], kind="stable")
        # Version 0 first (the state it was defined with), then the updates that changed it; each
        # state is current from its update until the next one.
        vs = np.concatenate(([0], version[mine][order]))
        starts = np.concatenate(([_NEVER], at[mine][order]))
        ends = np.concatenate((at[mine][order], [_FOREVER]))
        v = read_versions[rows]
        i = np.minimum(np.searchsorted(vs, v), len(vs) - 1)
        known[rows] = vs[i] == v
        lo[rows] = starts[i]
        hi[rows] = ends[i]
    return lo, hi, known


def _own_reads(commits: pa.Table) -> pa.Table:
    """The read log of an engine's commit log: per transaction, each (resource, version) of its
    ``versions`` column."""
    if "versions" not in commits.column_names:
        raise ValueError(
            "read_log=None takes the reads from the commit log's column 'versions' "
            f"(Engine.commit_log()); found: {', '.join(commits.column_names)}"
        )
    versions = commits["versions"].combine_chunks()
    # (A map's entries as a list of (key, value) structs, which Arrow flattens.)
    lists = pa.ListArray.from_arrays(
        versions.offsets, pa.StructArray.from_arrays([versions.keys, versions.items], ["k", "v"])
    )
    entries = lists.flatten()
    rows = lists.value_parent_indices()
    return pa.table(
        {
            "query": commits["query"].take(rows),
            "instant": commits["instant"].take(rows),
            "resource": entries.field("k"),
            "version": entries.field("v"),
        }
    )


def _log(data: Any, what: str, columns: dict[str, pa.DataType], times: tuple[str, ...]) -> pa.Table:
    """``data`` as a table with ``columns`` cast to their types and the ``times`` columns as
    int64 nanoseconds; a ValueError naming a missing column or one that does not cast."""
    table = data if isinstance(data, pa.Table) else pa.table(data)
    fields: dict[str, pa.Array | pa.ChunkedArray] = {}
    for name, type_ in [*columns.items(), *((t, pa.int64()) for t in times)]:
        if name not in table.column_names:
            hint = (
                " (Engine.read_log() lists reads per operator: pass read_log=None to take "
                "each transaction's from the commit log)"
                if what == "read log" and "operator" in table.column_names
                else ""
            )
            raise ValueError(
                f"the {what} has no column '{name}'; found: {', '.join(table.column_names)}" + hint
            )
        col = table[name]
        if name in times and pa.types.is_timestamp(col.type):
            col = pc.cast(col, pa.timestamp("ns", tz=col.type.tz)).cast(pa.int64())
        try:
            fields[name] = col.cast(type_)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise ValueError(
                f"the {what}'s column '{name}' is {col.type}, expected {type_}: {e}"
            ) from None
    for name in table.column_names:
        fields.setdefault(name, table[name])
    return pa.table(fields)


def _ns(t: int) -> str:
    return "-inf" if t == _NEVER else "inf" if t == _FOREVER else str(t)
