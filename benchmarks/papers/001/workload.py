"""Paper 001 §5's data and queries, generated (the paper's web-server logs are not published).

- **Access**: 1,600 page requests in 8 hours, irregular and in bursts: bursts start at random
  (exponential gaps), hold a geometric number of requests (mean 8) a few hundred ms apart.
  Columns ip, location (a page, drawn with Zipf-like weights), host.
- **Status**: the server's load every 5 s, in [0, 1) (a slow random walk); columns host, load.
- **URLs**: a SQLite table of exactly the 510 locations occurring in Access (location, title,
  size), read by ``REGISTER TABLE``.
- **Queries** (§5): every one joins Access, Status and URLs on the same condition, projects a
  random list of columns, and 388 of every 500 select ``status.load > c`` (c uniform in [0, 1),
  two decimals); the master is one of Table 2's eight sources (Access, Status, Clock30a/b,
  Clock60a/b/c/d; b/c/d 15/30/45 s after a); Access and Status windows each one of 1, 5, 30, 60 s,
  URLs unbounded.

Everything is drawn from ``random.Random(seed)``: the same data and queries on every machine.
Times are in ms from 0.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

HOURS = 8
ACCESS_ROWS = 1600
LOCATIONS = 510
STATUS_EVERY_MS = 5_000
MASTERS = [
    "access",
    "status",
    "clock30a",
    "clock30b",
    "clock60a",
    "clock60b",
    "clock60c",
    "clock60d",
]
WINDOWS_S = [1, 5, 30, 60]
COLUMNS = ["access.ip", "access.location", "status.load", "urls.title", "urls.size"]
# Table 2: the clocks' periods and offsets, in seconds.
CLOCKS = {
    "clock30a": (30, 0),
    "clock30b": (30, 15),
    "clock60a": (60, 0),
    "clock60b": (60, 15),
    "clock60c": (60, 30),
    "clock60d": (60, 45),
}


@dataclass
class Data:
    access: pa.Table  # ip, location, host, ts
    status: pa.Table  # host, load, ts
    locations: list[str]
    span_ms: int


def generate(hours: float = HOURS, access_rows: int = ACCESS_ROWS, seed: int = 1) -> Data:
    """The streams of ``hours`` hours (Access scaled to ``access_rows``; the URLs are the
    locations Access holds, ``LOCATIONS`` of them at full size).

    >>> d = generate(hours=1, access_rows=200)
    >>> d.access.num_rows, d.status.num_rows, len(set(d.access["location"].to_pylist()))
    (200, 720, 64)
    """
    rnd = random.Random(seed)
    span = int(hours * 3_600_000)
    n_loc = max(1, round(LOCATIONS * access_rows / ACCESS_ROWS))
    pages = [f"/page/{i:03d}.html" for i in range(n_loc)]
    # Every page at least once, the rest by Zipf-like popularity, in random order.
    weights = [1 / (i + 1) for i in range(n_loc)]
    visits = pages + rnd.choices(pages, weights, k=access_rows - n_loc)
    rnd.shuffle(visits)
    times: list[int] = []
    while len(times) < access_rows:
        start = rnd.randrange(0, span - 60_000)
        t = start
        for _ in range(min(access_rows - len(times), 1 + int(rnd.expovariate(1 / 7)))):
            times.append(t)
            t += rnd.randint(50, 1500)
    times.sort()
    access = pa.table(
        {
            "ip": [f"10.0.{rnd.randrange(256)}.{rnd.randrange(256)}" for _ in times],
            "location": visits,
            "host": ["www"] * len(times),
            "ts": pa.array(times, pa.int64()),
        }
    )
    load, loads = 0.3, []
    for _ in range(0, span, STATUS_EVERY_MS):
        load = min(0.99, max(0.0, load + rnd.uniform(-0.05, 0.05)))
        loads.append(round(load, 4))
    status = pa.table(
        {
            "host": ["www"] * len(loads),
            "load": loads,
            "ts": pa.array(range(0, span, STATUS_EVERY_MS), pa.int64()),
        }
    )
    return Data(access, status, pages, span)


def write_urls(path: Path, locations: list[str]) -> None:
    """The URLs table in a SQLite file."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE urls(location TEXT, title TEXT, size INTEGER)")
        c.executemany(
            "INSERT INTO urls VALUES (?, ?, ?)",
            [(loc, f"title {i}", 1000 + 37 * i) for i, loc in enumerate(locations)],
        )


def setup_script(db: Path) -> str:
    """Access, Status, the URLs table and Table 2's clocks."""
    clocks = "".join(
        f"REGISTER CLOCK {name} EVERY {every} SECONDS"
        + (f" OFFSET {offset} SECONDS;" if offset else ";")
        for name, (every, offset) in CLOCKS.items()
    )
    return (
        "REGISTER STREAM access(ip VARCHAR, location VARCHAR, host VARCHAR);"
        "REGISTER STREAM status(host VARCHAR, load DOUBLE);"
        f"REGISTER TABLE urls FROM 'sqlite:///{db}';" + clocks
    )


@dataclass(frozen=True)
class Query:
    name: str
    master: str
    access_s: int
    status_s: int
    load: float | None
    cql: str


def queries(n: int = 500, seed: int = 1) -> list[Query]:
    """``n`` REGISTER QUERY statements of §5's shape (388 of every 500 with a load condition).

    >>> [q.master for q in queries(3)]
    ['clock60a', 'access', 'clock60b']
    """
    rnd = random.Random(seed)
    with_load = set(rnd.sample(range(n), round(n * 388 / 500)))
    out = []
    for i in range(n):
        master = rnd.choice(MASTERS)
        a, s = rnd.choice(WINDOWS_S), rnd.choice(WINDOWS_S)
        proj = ", ".join(sorted(rnd.sample(COLUMNS, rnd.randint(1, len(COLUMNS)))))
        load = rnd.randint(0, 99) / 100 if i in with_load else None
        where = "access.location = urls.location AND access.host = status.host"
        if load is not None:
            where += f" AND status.load > {load}"
        cql = (
            f"REGISTER QUERY q{i} AS MASTER {master} SELECT {proj} FROM access "
            f"[Range {a} SECONDS], status [Range {s} SECONDS], urls WHERE {where};"
        )
        out.append(Query(f"q{i}", master, a, s, load, cql))
    return out


def implied_base_groups(qs: list[Query], theta1: float) -> int:
    """How many base groups §4.2 makes of ``qs``: with windows of 1, 5, 30 and 60 s, a ratio
    ≥ θ1 relates only windows whose classes (the connected runs of ratios ≥ θ1, each fully
    related when θ1 ≤ 0.5) agree, so the count is the number of distinct (master, Access class,
    Status class) triples.

    >>> implied_base_groups(queries(500), 0.5) <= 8 * 3 * 3
    True
    """

    def cls(w: int) -> int:
        ws = sorted(WINDOWS_S)
        k = ws.index(w)
        while k and ws[k - 1] / ws[k] >= theta1:
            k -= 1
        return k

    return len({(q.master, cls(q.access_s), cls(q.status_s)) for q in qs})


def arrivals(d: Data) -> list[tuple[int, str, int]]:
    """Every arrival of the trace in time order: (ts, source, row index; -1 for a clock tick).
    Clock ticks are arrivals too (§5 measures every arrival's processing)."""
    out = [(int(t), "access", i) for i, t in enumerate(d.access["ts"].to_pylist())]
    out += [(int(t), "status", i) for i, t in enumerate(d.status["ts"].to_pylist())]
    for name, (every, offset) in CLOCKS.items():
        out += [(t, name, -1) for t in range(offset * 1000, d.span_ms, every * 1000)]
    order = {name: k for k, name in enumerate(["access", "status", *CLOCKS])}
    out.sort(key=lambda a: (a[0], order[a[1]], a[2]))
    return out
