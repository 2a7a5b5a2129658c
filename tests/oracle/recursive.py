"""A slow, obviously-correct evaluator of recursive scripts (SEMANTICS.md §2, §4; paper 000 §3.1),
for the DTS executor's loops to be checked against.

Scripts come from one family, general enough for loops, nested loops and several delays per loop:

    REGISTER QUERY qi AS ISTREAM|DSTREAM( branch UNION ALL branch ... ) <delay>;
    branch := SELECT a + k AS a FROM src [window] [WHERE a + k < B]
            | SELECT MAX(a) + k AS a FROM src [window] [HAVING MAX(a) + k < B]

where src is the input stream ``s(a INT)`` or any qi (itself included). The evaluator walks the
instants (tick, step) in order. At an instant u every query's relation R(u) is computed from the
rows its sources hold at times <= u — all known, because a delay puts a query's output strictly
after the instant that produced it — then ISTREAM emits R(u) − R(u⁻) and DSTREAM R(u⁻) − R(u) at
u + delay.
Instants are every time a row lands and every time a window may drop it; computing R at extra
instants changes nothing, so over-approximating them is safe.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import dataclass

INF = (math.inf, 0)
EPS = "eps"


@dataclass(frozen=True)
class Branch:
    src: str
    window: tuple  # ("now",) | ("range", T) | ("unbounded",) | ("rows", N)
    k: int = 0
    bound: int | None = None
    agg: bool = False  # MAX(a) + k over the window instead of a + k per row

    def cql(self) -> str:
        w = {"now": "[Now]", "unbounded": "[Range Unbounded]"}.get(self.window[0])
        if w is None:
            w = (
                f"[Range {self.window[1]}]"
                if self.window[0] == "range"
                else f"[Rows {self.window[1]}]"
            )
        if self.agg:
            value = f"MAX(a) + {self.k}"
            cond = f" HAVING {value} < {self.bound}" if self.bound is not None else ""
            return f"SELECT {value} AS a FROM {self.src} {w}{cond}"
        value = f"a + {self.k}" if self.k else "a"
        cond = f" WHERE {value} < {self.bound}" if self.bound is not None else ""
        return f"SELECT {value} AS a FROM {self.src} {w}{cond}"


@dataclass(frozen=True)
class Query:
    name: str
    op: str  # "ISTREAM" | "DSTREAM"
    branches: tuple
    delay: object  # EPS or a number of ticks

    def cql(self) -> str:
        body = " UNION ALL ".join(b.cql() for b in self.branches)
        d = "<Now>" if self.delay == EPS else f"<{self.delay}>"
        return f"REGISTER QUERY {self.name} AS {self.op}({body}) {d};"


def script(queries: list[Query]) -> str:
    return "REGISTER STREAM s(a INT);\n" + "\n".join(q.cql() for q in queries)


def shift(t: tuple, d) -> tuple:
    return (t[0], t[1] + 1) if d == EPS else (t[0] + d, t[1])


def alive(rows: list[tuple], window: tuple, u: tuple) -> list[int]:
    """Values of the rows (time, value), in arrival order, alive at u under the window; rows at
    times > u do not exist yet, and a [Rows N] row whose N-th successor is not there yet is
    alive."""
    known = [r for r in rows if r[0] <= u]
    out = []
    for i, (t, v) in enumerate(known):
        kind = window[0]
        if kind == "now":
            end = (t[0], t[1] + 1)
        elif kind == "range":
            end = (t[0] + window[1], t[1])
        elif kind == "unbounded":
            end = INF
        else:
            n = window[1]
            end = known[i + n][0] if i + n < len(known) else INF
        if t <= u < end:
            out.append(v)
    return out


def evaluate(
    queries: list[Query], inputs: list[tuple[int, int]], max_instants: int = 200_000
) -> dict:
    """Counter of ((tick, step), a) per query, for input rows (ts, a) of stream s."""
    streams: dict[str, list] = {"s": [((ts, 0), a) for ts, a in inputs]}
    for q in queries:
        streams[q.name] = []
    widths = {b.window[1] for q in queries for b in q.branches if b.window[0] == "range"}
    heap: list = []

    def landed(t: tuple) -> None:
        for c in [t, (t[0], t[1] + 1)] + [(t[0] + w, t[1]) for w in widths]:
            heapq.heappush(heap, c)

    for t, _ in streams["s"]:
        landed(t)
    before = {q.name: Counter() for q in queries}
    out = {q.name: Counter() for q in queries}
    last = None
    steps = 0
    while heap:
        u = heapq.heappop(heap)
        if u == last:
            continue
        last = u
        steps += 1
        assert steps < max_instants, "the script does not settle"
        now = {}
        for q in queries:
            bag = Counter()
            for b in q.branches:
                vals = alive(streams[b.src], b.window, u)
                if b.agg:  # MAX: one value, none over an empty window
                    vals = [max(vals)] if vals else []
                shifted = (v + b.k for v in vals)
                bag.update(v for v in shifted if b.bound is None or v < b.bound)
            now[q.name] = bag
        for q in queries:
            change = (
                now[q.name] - before[q.name] if q.op == "ISTREAM" else before[q.name] - now[q.name]
            )
            if change:
                at = shift(u, q.delay)
                for v, n in change.items():
                    out[q.name][(at, v)] += n
                    streams[q.name].extend([(at, v)] * n)
                landed(at)
            before[q.name] = now[q.name]
    return out
