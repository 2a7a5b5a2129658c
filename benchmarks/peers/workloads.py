"""The peer benchmark's five workloads: each one's CQL for cq, the SQL that computes the same
result in DuckDB (and Spark SQL), and the check that two results are equal.

cq's results follow docs/SEMANTICS.md: ISTREAM(R) emits ⟨v, t⟩ for each v in R(t) − R(t⁻), a bag
difference (§4.3), over the windows of §4.1. The SQL below computes exactly that, not a batch
query that resembles it; README.md explains each query. Every result is compared with cq's on the
columns ``COLUMNS`` (in that order): row count, the integer columns as a bag of rows (an
order-free 64-bit checksum), and the DOUBLE columns row by row after sorting on the integer
columns, equal to 1e-9 relative. A difference raises :class:`Mismatch`.

The data (generate.py) have strictly increasing timestamps from 0 in every stream; the SQL relies
on it where it says so (ceilings by integer division of non-negative numbers; arrival order equal
to timestamp order).

>>> sorted(WORKLOADS)
['W1', 'W2', 'W3', 'W4', 'W5']
>>> WORKLOADS["W3"].columns
('key', 'c', 'ts')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

RELATIVE = 1e-9  # the tolerance of DOUBLE columns (averages)


class Mismatch(Exception):
    """Two engines' results of one workload differ: the benchmark stops, its figures are void."""


@dataclass(frozen=True)
class Dialect:
    """The few places where DuckDB's SQL and Spark's differ.

    >>> DUCKDB.div("ts + 999", 1000)
    '((ts + 999) // 1000)'
    """

    name: str
    div_op: str  # integer division (both truncate; the SQL divides non-negative numbers only)

    def div(self, x: str, y: int) -> str:
        return f"(({x}) {self.div_op} {y})"


DUCKDB = Dialect("duckdb", "//")
SPARK = Dialect("spark", "div")

STREAM = "REGISTER STREAM {name} (key BIGINT, val BIGINT);"


@dataclass(frozen=True)
class Workload:
    """One workload: cq's script and query, the streams it reads, its output columns, and the SQL
    of each peer variant (a function of the dialect) keyed by the variant's label.

    >>> WORKLOADS["W1"].streams
    ('e',)
    """

    name: str
    query: str  # the CQL query, as the table writes it
    streams: tuple[str, ...]
    columns: tuple[str, ...]
    sql: dict[str, Callable[[Dialect], str]] = field(default_factory=dict)
    # The peer variants Spark runs (its plain range join would take minutes).
    spark: tuple[str, ...] = ("",)

    @property
    def cql(self) -> str:
        """The whole script cq runs: the streams, then the query registered as ``q``.

        >>> print(WORKLOADS["W1"].cql)
        REGISTER STREAM e (key BIGINT, val BIGINT);
        REGISTER QUERY q AS ISTREAM(SELECT * FROM e [Now] WHERE val > 499);
        """
        streams = "\n".join(STREAM.format(name=s) for s in self.streams)
        return f"{streams}\nREGISTER QUERY q AS {self.query};"


# W2: [Range 10 SECONDS Slide 1 SECOND] in ms. An event at t lives on [⌈t/S⌉·S, ⌈t/S⌉·S + T)
# (SEMANTICS.md §4.1; T is a multiple of S), so at the instant j·S the window holds the events
# of the panes j − T/S + 1 .. j, pane p being the events with ⌈t/S⌉ = p.
RANGE_T, SLIDE_S = 10_000, 1000
PANES = RANGE_T // SLIDE_S


def _w1(d: Dialect) -> str:
    # [Now] lives one ε: at its timestamp a row is in R(t) and in no R(t⁻), so each is emitted.
    return "SELECT key, val, ts FROM e WHERE val > 499"


def _w2(d: Dialect) -> str:
    # Per key, the state (sum, count) changes only where a pane enters (j = p) or leaves
    # (j = p + T/S). The full join gives the net change at each such (key, j); summed in j order
    # it gives the state at j, and the state before j is that minus the change. The running sum
    # runs over (key, j) without PARTITION BY, which DuckDB sorts twice as fast: every key's
    # changes add up to zero (each pane leaves as it entered), so the sum starts at 0 on each key.
    # ISTREAM emits (key, avg) where the group exists and did not before, or its average is new.
    pane = d.div(f"ts + {SLIDE_S - 1}", SLIDE_S)
    return f"""
WITH panes AS (
  SELECT key, {pane} AS p, CAST(SUM(val) AS BIGINT) AS s, COUNT(*) AS c
  FROM e GROUP BY key, {pane}
), net AS (
  SELECT coalesce(i.key, o.key) AS key, coalesce(i.p, o.p + {PANES}) AS j,
         coalesce(i.s, 0) - coalesce(o.s, 0) AS ds, coalesce(i.c, 0) - coalesce(o.c, 0) AS dc
  FROM panes i FULL OUTER JOIN panes o ON i.key = o.key AND i.p = o.p + {PANES}
), state AS (
  SELECT key, j, ds, dc, SUM(ds) OVER w AS s, SUM(dc) OVER w AS c FROM net
  WINDOW w AS (ORDER BY key, j ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT key, CAST(s AS DOUBLE) / c AS a, j * {SLIDE_S} AS ts
FROM state
WHERE c > 0 AND (c = dc OR CAST(s AS DOUBLE) / c <> CAST(s - ds AS DOUBLE) / (c - dc))
"""


def _w3(d: Dialect) -> str:
    # [Range 1 SECOND Slide 1 SECOND]: at j·1000 the window holds pane j alone. ISTREAM emits the
    # count of (key, j) unless the key had the same count in pane j − 1 (an anti join: DuckDB
    # runs it twice as fast as LAG over a window).
    pane = d.div("ts + 999", 1000)
    return f"""
WITH panes AS (
  SELECT key, {pane} AS j, COUNT(*) AS c FROM e GROUP BY key, {pane}
)
SELECT p.key, p.c, p.j * 1000 AS ts
FROM panes p LEFT JOIN panes q ON q.key = p.key AND q.j = p.j - 1 AND q.c = p.c
WHERE q.key IS NULL
"""


# W4: a pair joins while both rows live: [max(ta, tb), min(ta, tb) + 1001), not empty when
# |ta − tb| <= 1000 (SEMANTICS.md §4.2).
JOIN_RANGE = 1001


def _w4(pairs: Callable[[Dialect], str]) -> Callable[[Dialect], str]:
    # ISTREAM's bag difference (SEMANTICS.md §4.3): a value (key, av, bv) is emitted at t as many
    # times as its copies starting at t outnumber those ending at t, which is SQL's EXCEPT ALL of
    # the ends from the starts. Only a start that meets the end of an equal value at the same
    # instant can be cancelled, and there are a handful (3 in 2,000,000 at 1,000,000 events a
    # side), so the other starts are emitted as they are and EXCEPT ALL runs on the few values
    # that clash: twice as fast in DuckDB as EXCEPT ALL (or a GROUP BY) over all of them.
    same = "x.key = y.key AND x.av = y.av AND x.bv = y.bv AND x.t = y.t"

    def sql(d: Dialect) -> str:
        return f"""
WITH {pairs(d)},
starts AS (SELECT key, av, bv, s AS t FROM pairs),
ends AS (SELECT key, av, bv, e AS t FROM pairs),
clash AS (
  SELECT DISTINCT key, av, bv, t FROM starts x WHERE EXISTS (SELECT 1 FROM ends y WHERE {same})
)
SELECT key, av, bv, t AS ts FROM starts x WHERE NOT EXISTS (SELECT 1 FROM clash y WHERE {same})
UNION ALL
(
  SELECT key, av, bv, t FROM starts x WHERE EXISTS (SELECT 1 FROM clash y WHERE {same})
  EXCEPT ALL
  SELECT key, av, bv, t FROM ends x WHERE EXISTS (SELECT 1 FROM clash y WHERE {same})
)
"""

    return sql


def _plain_pairs(d: Dialect) -> str:
    return f"""pairs AS (
  SELECT a.key AS key, a.val AS av, b.val AS bv,
         greatest(a.ts, b.ts) AS s, least(a.ts, b.ts) + {JOIN_RANGE} AS e
  FROM a JOIN b
    ON a.key = b.key AND b.ts BETWEEN a.ts - {JOIN_RANGE - 1} AND a.ts + {JOIN_RANGE - 1}
)"""


def _bucketed_pairs(d: Dialect) -> str:
    # Buckets of 1001 ms: partners lie in the same bucket or a neighbour, so b is copied into its
    # bucket and both neighbours and the join runs on (key, bucket) equality, then the range.
    return f"""bb AS (
  SELECT b.key, b.val, b.ts, {d.div("b.ts", JOIN_RANGE)} + o.o AS bucket
  FROM b CROSS JOIN (VALUES (-1), (0), (1)) AS o(o)
), pairs AS (
  SELECT a.key AS key, a.val AS av, bb.val AS bv,
         greatest(a.ts, bb.ts) AS s, least(a.ts, bb.ts) + {JOIN_RANGE} AS e
  FROM a JOIN bb ON a.key = bb.key AND {d.div("a.ts", JOIN_RANGE)} = bb.bucket
  WHERE a.ts - bb.ts BETWEEN -{JOIN_RANGE - 1} AND {JOIN_RANGE - 1}
)"""


def _w5(d: Dialect) -> str:
    # [Partition By key Rows 10]: at each event of a key its group averages the key's last 10
    # events (timestamps are unique, so arrival order is ts order and one event changes the group
    # per instant). ISTREAM emits the new average unless the key's previous one was the same.
    return """
WITH w AS (
  SELECT key, ts,
         AVG(val) OVER (PARTITION BY key ORDER BY ts ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS a
  FROM e
), p AS (
  SELECT key, ts, a, LAG(a) OVER (PARTITION BY key ORDER BY ts) AS pa FROM w
)
SELECT key, a, ts FROM p WHERE pa IS NULL OR pa <> a
"""


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload(
            "W1",
            "ISTREAM(SELECT * FROM e [Now] WHERE val > 499)",
            ("e",),
            ("key", "val", "ts"),
            {"": _w1},
        ),
        Workload(
            "W2",
            "ISTREAM(SELECT key, AVG(val) AS a FROM e [Range 10 SECONDS Slide 1 SECOND] "
            "GROUP BY key)",
            ("e",),
            ("key", "a", "ts"),
            {"": _w2},
        ),
        Workload(
            "W3",
            "ISTREAM(SELECT key, COUNT(*) AS c FROM e [Range 1 SECOND Slide 1 SECOND] "
            "GROUP BY key)",
            ("e",),
            ("key", "c", "ts"),
            {"": _w3},
        ),
        Workload(
            "W4",
            # cq refuses two output columns named val, so b's gets another name (and a's too).
            "ISTREAM(SELECT a.key, a.val AS av, b.val AS bv FROM a [Range 1001], b [Range 1001] "
            "WHERE a.key = b.key)",
            ("a", "b"),
            ("key", "av", "bv", "ts"),
            {"bucketed join": _w4(_bucketed_pairs), "plain range join": _w4(_plain_pairs)},
            spark=("bucketed join",),
        ),
        Workload(
            "W5",
            "ISTREAM(SELECT key, AVG(val) AS a FROM e [Partition By key Rows 10] GROUP BY key)",
            ("e",),
            ("key", "a", "ts"),
            {"": _w5},
        ),
    ]
}


# -- checking -------------------------------------------------------------------------------


def _mix(x: np.ndarray) -> np.ndarray:
    # splitmix64's finaliser: every input bit reaches every output bit.
    z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _columns(t: pa.Table, w: Workload, who: str) -> pa.Table:
    missing = [c for c in w.columns if c not in t.column_names]
    if missing:
        raise Mismatch(
            f"{w.name}: {who}'s result has no column {', '.join(missing)}; "
            f"expected {', '.join(w.columns)}, found {', '.join(t.column_names)}"
        )
    return t.select(list(w.columns))


def _is_float(t: pa.DataType) -> bool:
    return bool(pa.types.is_floating(t))


def checksum(t: pa.Table) -> int:
    """An order-free checksum of the integer columns of ``t``: the sum, modulo 2**64, of a
    64-bit hash of each row (a row's columns hashed together, so that values cannot move
    between rows unnoticed).

    >>> a = pa.table({"k": [1, 2], "ts": [5, 6]})
    >>> b = pa.table({"k": [2, 1], "ts": [5, 6]})
    >>> checksum(a) == checksum(a.take([1, 0])), checksum(a) == checksum(b)
    (True, False)
    """
    h = np.zeros(t.num_rows, dtype=np.uint64)
    for name in t.column_names:
        if _is_float(t.schema.field(name).type):
            continue
        col = t[name].cast(pa.int64()).to_numpy().view(np.uint64)
        h = _mix(h * np.uint64(0x100000001B3) + col + np.uint64(0x9E3779B97F4A7C15))
    with np.errstate(over="ignore"):
        return int(h.sum(dtype=np.uint64))


def compare(w: Workload, expected: pa.Table, got: pa.Table, who: str) -> None:
    """Raises :class:`Mismatch` unless ``got`` (``who``'s result) equals ``expected`` (cq's) as
    a bag of rows: same row count, same integer columns (checksum), DOUBLE columns equal to 1e-9
    relative row by row, after sorting both on the integer columns.

    >>> w = WORKLOADS["W2"]
    >>> e = pa.table({"key": [1, 2], "a": [0.5, 1.0], "ts": [0, 0]})
    >>> compare(w, e, e.take([1, 0]), "DuckDB")
    >>> compare(w, e, pa.table({"key": [1, 2], "a": [0.5, 1.5], "ts": [0, 0]}), "DuckDB")
    Traceback (most recent call last):
    ...
    workloads.Mismatch: W2: DuckDB's a differs from cq's in 1 of 2 rows; first: key=2, ts=0: ...
    """
    expected = _columns(expected, w, "cq")
    got = _columns(got, w, who)
    if got.num_rows != expected.num_rows:
        raise Mismatch(
            f"{w.name}: {who} gives {got.num_rows:,} rows, cq {expected.num_rows:,}"
            f" (checksums {checksum(got):#x} and {checksum(expected):#x})"
        )
    ours, theirs = checksum(expected), checksum(got)
    if ours != theirs:
        raise Mismatch(
            f"{w.name}: {who}'s rows differ from cq's ({got.num_rows:,} rows each; checksum of "
            f"the integer columns {theirs:#x}, cq {ours:#x})"
        )
    floats = [c for c in w.columns if _is_float(expected.schema.field(c).type)]
    if not floats:
        return
    ints = [c for c in w.columns if c not in floats]
    order = [(c, "ascending") for c in ["ts", *[c for c in ints if c != "ts"], *floats]]
    e_sorted, g_sorted = expected.sort_by(order), got.sort_by(order)
    for c in ints:
        if not e_sorted[c].equals(g_sorted[c].cast(e_sorted[c].type)):
            raise Mismatch(f"{w.name}: {who}'s {c} differs from cq's after sorting")
    for c in floats:
        x = e_sorted[c].to_numpy(zero_copy_only=False)
        y = g_sorted[c].to_numpy(zero_copy_only=False)
        bad = ~(np.abs(x - y) <= RELATIVE * np.maximum(np.abs(x), np.abs(y)))
        n = int(bad.sum())
        if n:
            i = int(np.argmax(bad))
            where = ", ".join(f"{k}={e_sorted[k][i].as_py()}" for k in ints)
            raise Mismatch(
                f"{w.name}: {who}'s {c} differs from cq's in {n:,} of {len(x):,} rows; "
                f"first: {where}: {y[i]!r}, cq {x[i]!r}"
            )


def fingerprint(t: pa.Table, w: Workload) -> str:
    """What is printed of a checked result: rows, integer checksum, sums of DOUBLE columns.

    >>> fingerprint(pa.table({"key": [1], "a": [0.5], "ts": [3]}), WORKLOADS["W2"])[:7]
    '1 rows,'
    """
    t = _columns(t, w, "cq")
    sums = [
        f"sum({c}) {pc.sum(t[c]).as_py() or 0:.6f}"
        for c in w.columns
        if _is_float(t.schema.field(c).type)
    ]
    return ", ".join([f"{t.num_rows:,} rows", f"checksum {checksum(t):#018x}", *sums])
