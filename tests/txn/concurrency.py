"""The serializability harness of paper 002 (issue 32's "Serializability under real concurrency"):
Fig. 1's query run while an updater converts the whole resource it reads, then judged by the
checker (``cq_py.txn.check``) and by the value oracle (``tests/oracle``'s script evaluator with the
resource frozen at each version an output read).

Fig. 1 (§1): a stream e1, e2, ... joined with relational data x, the results aggregated four at a
time; meanwhile another system converts x into x'. Example 1.1: x holds positions in yards and x'
the same positions in metres, and the aggregate is the centre of four positions — a window that
read x for some rows and x' for others gives a wrong centre. Here:

* ``e(k, n)``: one row per tick (``ts = n``), ``k`` a key of x;
* ``x(id, pos, unit)``: the resource (the in-process store, an SQLite or a PostgreSQL table);
* ``j``: ``e [Now]`` joined with x on ``k = id`` (the reference join);
* ``q``: RSTREAM (or ISTREAM: ``stream``) of the centre (AVG), the units seen (MIN, MAX) and
  the rows' first and last ``n`` (which say what the output's window held) over
  ``j [Range 4 Slide 4]``: every four rows, the commit operator of their transaction (Def. 3.2).

Each update is one transaction converting every row (yards <-> metres), so two states mixed in one
window show as two versions read (and, nearly always, as two units). The updater is a thread for
the store and another process (plain sqlite3 or psycopg) for the databases; it updates at seeded
moments during the pushes, asynchronously: the pusher waits a moment for the update to commit,
never for the updater's lock (under 2PL the updater waits for the reading transaction's commit).

Run as a script, this module is that updater process (``python concurrency.py updater KIND URL``:
says it is ready once connected, then reads ``update U`` lines, answers one JSON line per update).
"""

from __future__ import annotations

import contextlib
import json
import queue
import random
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

ROWS = 8  # rows of x
WINDOW = 4  # the aggregate's [Range 4 Slide 4]
YARD = 0.9144  # metres

# Fig. 1's queries in CQL (oracle_outputs writes the same as the value oracle's trees).
Q_J = "ISTREAM(SELECT e.n, x.pos, x.unit FROM e [Now], x WHERE e.k = x.id)"
Q_Q = (
    "{stream}(SELECT AVG(j.pos) AS centre, MIN(j.unit) AS unit_lo, MAX(j.unit) AS unit_hi, "
    "MIN(j.n) AS first, MAX(j.n) AS last, COUNT(*) AS c FROM j [Range {range} Slide {slide}])"
)


def content(u: int) -> list[dict]:
    """x after ``u`` conversions: positions in yards (u even) or metres (u odd)."""
    metres = u % 2 == 1
    return [
        {
            "id": i,
            "pos": (10.0 + 7.0 * i) * (YARD if metres else 1.0),
            "unit": "m" if metres else "yd",
        }
        for i in range(ROWS)
    ]


def script(url: str | None, slide: int = WINDOW, stream: str = "RSTREAM") -> str:
    """Fig. 1's script for the engine; ``url``: x's database (None: the store); ``slide``: the
    window's (below ``WINDOW``: overlapping windows, whose rows later windows keep); ``stream``:
    q's relation-to-stream operator."""
    where = f" FROM '{url}' TABLE 'x'" if url else ""
    return (
        "REGISTER STREAM e(k BIGINT, n BIGINT);"
        f"REGISTER RESOURCE x (id BIGINT, pos DOUBLE, unit VARCHAR) KEY (id){where} ACCESS KEY;"
        f"REGISTER QUERY j AS {Q_J};"
        f"REGISTER QUERY q AS {Q_Q.format(stream=stream, range=WINDOW, slide=slide)};"
    )


def stream(seed: int, n: int) -> list[dict]:
    rng = random.Random(seed)
    return [{"k": rng.randrange(ROWS), "n": i, "ts": i} for i in range(1, n + 1)]


def update_moments(seed: int, n: int, updates: int) -> list[int]:
    """After which pushes (row n) the updater is told to convert x: seeded, inside windows (after
    a row that is not a window's last), so that under no control some window reads two states."""
    rng = random.Random(seed * 7919 + 1)
    inside = [i for i in range(1, n) if i % WINDOW]
    return sorted(rng.sample(inside, updates))


# ---- updaters --------------------------------------------------------------------------------


@dataclass
class UpdateLog:
    """What the updater committed: per update ``u``, the resource's ``version`` it made, and
    when: the store publishes a version at one known moment (``at``); a database's COMMIT took
    effect at some moment between ``at`` (taken before COMMIT, every row written) and ``after``
    (taken once it returned)."""

    versions: dict[int, list[dict]]  # version -> x's content
    #: {"version", "at", "resources"}, and "update": whether an update made it (not the load).
    rows: list[dict] = field(default_factory=list)
    committed: int = 0  # updates committed (rows may also hold the store's first load)
    #: The stamps the database's own log (cq_py.resources.update_log) holds for x, when in one.
    logged: set[int] | None = None
    failures: list[str] = field(default_factory=list)

    def table(self, moment: str = "at") -> pa.Table:
        """The update log for ``cq_py.txn.check``, each commit at its ``moment`` ("at", or
        "after": the latest it can have taken effect)."""
        return pa.table(
            {
                "version": pa.array([r["version"] for r in self.rows], pa.int64()),
                "at": pa.array([r.get(moment, r["at"]) for r in self.rows], pa.int64()),
                "resources": pa.array([r["resources"] for r in self.rows], pa.list_(pa.string())),
            }
        )


class StoreUpdater:
    """An updater thread converting the store's x, one transaction per update."""

    def __init__(self, store: Any, timeout: float = 30.0):
        self.store, self.timeout = store, timeout
        version, _ = store.read_version("x")
        self.log = UpdateLog({version: content(0)})
        self._todo: queue.Queue[int | None] = queue.Queue()
        self._done: queue.Queue[int] = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from cq_py import LockTimeout

        while (u := self._todo.get()) is not None:
            try:
                with self.store.transaction(timeout=self.timeout, writer=f"update {u}") as tx:
                    tx.upsert("x", content(u))
            except LockTimeout as e:
                self.log.failures.append(f"update {u}: {e}")
            self._done.put(u)

    def request(self, u: int) -> None:
        self._todo.put(u)

    def settled(self, seconds: float) -> bool:
        try:
            self._done.get(timeout=seconds)
            return True
        except queue.Empty:
            return False

    def finish(self) -> UpdateLog:
        self._todo.put(None)
        self._thread.join(timeout=60)
        log = self.store.update_log()
        updates = set()
        for r in log.select(["version", "at", "writer"]).to_pylist():
            if r["writer"].startswith("update "):
                self.log.versions[r["version"]] = content(int(r["writer"].split()[1]))
                self.log.committed += 1
                updates.add(r["version"])
        # The store's own log: every commit with its time, the load's included.
        self.log.rows = [
            {"version": v, "at": at, "resources": res, "update": v in updates}
            for v, at, res in zip(
                log["version"].to_pylist(),
                log["at"].cast(pa.int64()).to_pylist(),
                log["resources"].to_pylist(),
                strict=True,
            )
        ]
        return self.log


class ProcessUpdater:
    """An updater in another process (this file run as a script) converting a database's x."""

    def __init__(self, kind: str, url: str, ready_within: float = 60.0):
        self._proc = subprocess.Popen(
            [sys.executable, __file__, "updater", kind, url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._url = url
        self.log = UpdateLog({0: content(0)})
        self._answers: queue.Queue[dict] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._pending = 0
        # Ready once connected: a process still starting (Python, psycopg, the connection: a
        # second or more on a loaded machine) would take the updates after the pushes, and the
        # run would check no concurrency at all.
        try:
            ready = self._answers.get(timeout=ready_within)
        except queue.Empty:
            self._proc.kill()
            raise RuntimeError(f"no updater connected to {url} in {ready_within} s") from None
        if ready != {"ready": True}:
            raise RuntimeError(f"the updater's first line is {ready}, expected it ready")

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._answers.put(json.loads(line))
        self._answers.put({"outcome": "the updater process ended", "u": None})

    def request(self, u: int) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"update {u}\n")
        self._proc.stdin.flush()
        self._pending += 1

    def _take(self, answer: dict) -> None:
        self._pending -= 1
        if answer["outcome"] != "ok":
            self.log.failures.append(f"update {answer['u']}: {answer['outcome']}")
            return
        self.log.versions[answer["version"]] = content(answer["u"])
        self.log.committed += 1
        self.log.rows.append(
            {
                "version": answer["version"],
                "at": answer["at"],
                "after": answer["after"],
                "resources": ["x"],
                "update": True,
            }
        )

    def settled(self, seconds: float) -> bool:
        try:
            self._take(self._answers.get(timeout=seconds))
            return True
        except queue.Empty:
            return False

    def finish(self) -> UpdateLog:
        while self._pending:
            self._take(self._answers.get(timeout=60))
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=30)
        from cq_py.resources import update_log

        self.log.logged = set(update_log(self._url, ["x"])["version"].to_pylist())
        return self.log


UPDATER_WAIT = 60.0  # seconds an update waits for its lock
# Seconds an SQLite updater sleeps between tries to take the write lock: with Linux's default
# timer slack (50 us) a try every ~0.12 ms, at ~0.2 of a core while it waits. Under 2PL the
# engine commits a window and takes the lock again for the next one's first read in the same
# push, ~55 us later (median, measured): a try every ~0.17 ms (sleeping 100 us) left 1 to 3 of
# 20 seeds with no update committed during the pushes, every ~0.12 ms 0 to 2 (machine loaded).
POLL = 50e-6


def _begin_sqlite(conn: Any, wait: float = UPDATER_WAIT, poll: float = POLL) -> None:
    """``BEGIN IMMEDIATE`` (SQLite's write lock), tried every ``poll`` seconds for ``wait``
    seconds, as a writer that means to get its turn does. SQLite queues no one: its own busy
    handler sleeps 1, 2, 5, 10 ... 100 ms between tries, so under 2PL a writer waiting with it
    never found the lock free while rows were pushed (0 of 20 seeds) and committed after the
    close. On timeout the error is SQLite's own ("database is locked"), as with its handler."""
    deadline = time.monotonic() + wait
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as e:
                if e.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                    raise
            time.sleep(poll)
    finally:
        # Its statements, once it holds the lock, wait as before.
        conn.execute(f"PRAGMA busy_timeout = {round(wait * 1000)}")


def _updater_main(kind: str, url: str) -> None:
    """The updater process: one transaction per ``update U`` line converting every row of x."""
    if kind == "sqlite":
        conn: Any = sqlite3.connect(
            url.removeprefix("sqlite:///"), timeout=UPDATER_WAIT, isolation_level=None
        )
        param = "?"
    else:
        import psycopg

        conn = psycopg.connect(url, autocommit=True)
        conn.execute(f"SET lock_timeout = {round(UPDATER_WAIT * 1000)}")
        param = "%s"
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        u = int(line.split()[1])
        try:
            if kind == "sqlite":
                _begin_sqlite(conn)
            else:
                conn.execute("BEGIN")
            for row in content(u):
                conn.execute(
                    f"UPDATE x SET pos = {param}, unit = {param} WHERE id = {param}",
                    (row["pos"], row["unit"], row["id"]),
                )
            stamp = conn.execute("SELECT stamp FROM cq_stamps WHERE table_name = 'x'").fetchone()[0]
            at = time.time_ns()
            conn.execute("COMMIT")
            after = time.time_ns()
            answer = {"u": u, "outcome": "ok", "version": int(stamp), "at": at, "after": after}
        except Exception as e:  # noqa: BLE001 - reported to the harness, which fails the run
            with contextlib.suppress(Exception):  # (no transaction left to roll back)
                conn.execute("ROLLBACK")
            answer = {"u": u, "outcome": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)


# ---- writers in other processes ----------------------------------------------------------

# A writer in another process: plain sqlite3 (busy timeout) or psycopg (lock_timeout), running
# statements separated by ";" ("SLEEP s" waits inside the transaction) in one transaction. It says
# "start" before writing, then one JSON line: its outcome and how long the write took.
WRITER = r"""
import json, sys, time
kind, url, sql, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
print("start", flush=True)
t0 = time.monotonic()
try:
    if kind == "sqlite":
        import sqlite3
        c = sqlite3.connect(url, timeout=timeout, isolation_level=None)
        c.execute("BEGIN IMMEDIATE")
        run = c.execute
    else:
        import psycopg
        c = psycopg.connect(url)
        c.execute(f"SET lock_timeout = {max(1, round(timeout * 1000))}")
        run = c.execute
    for one in sql.split(";"):
        if one.strip().startswith("SLEEP"):
            time.sleep(float(one.split()[1]))
        else:
            run(one)
    c.commit()
    c.close()
    out = "ok"
except Exception as e:
    out = f"{type(e).__name__}: {e}"
print(json.dumps({"outcome": out, "seconds": time.monotonic() - t0}), flush=True)
"""


def writer(kind: str, target: str, sql: str, timeout: float) -> subprocess.Popen:
    """Starts a writer process (``kind`` sqlite: ``target`` the file; postgresql: the url)
    running ``sql``; returns once it is about to write."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, kind, target, sql, str(timeout)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "start"
    return proc


def finished(proc: subprocess.Popen, within: float = 20.0) -> dict:
    # (Not communicate(): the "start" line's readline may have buffered the rest already.)
    proc.wait(timeout=within)
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    assert out.strip(), f"the writer died ({proc.returncode}): {err}"
    return json.loads(out.strip().splitlines()[-1])


def blocked(proc: subprocess.Popen, for_seconds: float = 0.6) -> bool:
    """Whether the writer is still waiting after ``for_seconds``."""
    time.sleep(for_seconds)
    return proc.poll() is None


# ---- a run -----------------------------------------------------------------------------------


@dataclass
class Run:
    """One seeded run: what the engine emitted and logged, what the updater committed, and when
    each row was pushed (ns: before and after its push)."""

    rows: list[dict]  # e's rows pushed
    output: list[dict]  # q's rows, each with the time it was ``delivered``
    read_log: pa.Table
    commit_log: pa.Table | None  # the engine's, when it has one
    updates: UpdateLog
    pushed: dict[int, tuple[int, int]]


def run(
    eng: Any,
    updater: StoreUpdater | ProcessUpdater,
    seed: int,
    n: int = 24,
    updates: int = 3,
    settle: float = 0.1,
    between_windows: bool = False,
) -> Run:
    """Pushes ``n`` rows of e one at a time into ``eng`` (Fig. 1's script executed), telling
    ``updater`` to convert x after the seeded moments (``between_windows``: after a window's
    last row instead, the harness's control: nothing to detect), waiting at most ``settle``
    seconds for each update to commit."""
    rows = stream(seed, n)
    moments = update_moments(seed, n, updates)
    if between_windows:
        moments = [WINDOW * (m // WINDOW + 1) for m in moments]
    pushed: dict[int, tuple[int, int]] = {}
    output: list[dict] = []

    def delivered(batch: pa.RecordBatch) -> None:
        # Results are delivered once committed: the time bounds each output's commit above.
        at = time.time_ns()
        output.extend(dict(row, delivered=at) for row in batch.to_pylist())

    eng.subscribe("q", delivered)
    u = 0
    try:
        for r in rows:
            t0 = time.time_ns()
            eng.push("e", [r])
            pushed[r["n"]] = (t0, time.time_ns())
            if r["n"] in moments:
                u += 1
                updater.request(u)
                updater.settled(settle)
        eng.close()
    finally:
        log = updater.finish()
    commit_log = eng.commit_log() if hasattr(eng, "commit_log") else None
    return Run(rows, output, eng.read_log(), commit_log, log, pushed)


# ---- judging a run ---------------------------------------------------------------------------


def concurrent_updates(r: Run) -> int:
    """How many updates surely took effect before the last push returned (their commit's latest
    moment, ``after`` for a database): those the run tested concurrently with the query. An
    update that waited past the pushes (for a lock it never got between two windows) commits
    after the close, and the run checks nothing about it."""
    end = max(after for _, after in r.pushed.values())
    return sum(1 for u in r.updates.rows if u["update"] and u.get("after", u["at"]) <= end)


def transactions(r: Run) -> tuple[pa.Table, pa.Table]:
    """(commit log, read log) of q's committed transactions as ``cq_py.txn.check`` takes them.

    An output of q at instant t read the rows of its window (``first`` .. ``last``, one per
    tick); TXN(e) (Def. 3.1) is their reads of x. Windows do not overlap (Slide = Range), so a
    row's last read in the read log is the one its committed transaction used (a redone read
    comes after the aborted one). Begin and end bound the transaction's from the outside: the
    first row's push began before any read of it, and the output was delivered after its
    commit (the engine's commit log has no times).
    """
    reads = r.read_log.to_pylist()
    last_read: dict[int, int] = {}
    for e in reads:
        if e["resource"] == "x":
            last_read[e["instant"]] = e["version"]
    commits: dict[str, list] = {k: [] for k in ("query", "instant", "outcome", "begin", "end")}
    txn_reads: dict[str, list] = {k: [] for k in ("query", "instant", "resource", "version")}
    for o in r.output:
        t = o["ts"]
        commits["query"].append("q")
        commits["instant"].append(t)
        commits["outcome"].append("commit")
        commits["begin"].append(r.pushed[o["first"]][0])
        commits["end"].append(o["delivered"])
        for k in range(o["first"], o["last"] + 1):
            txn_reads["query"].append("q")
            txn_reads["instant"].append(t)
            txn_reads["resource"].append("x")
            txn_reads["version"].append(last_read[k])
    return pa.table(commits), pa.table(txn_reads)


def oracle_outputs(
    r: Run, versions: set[int], slide: int = WINDOW, stream: str = "RSTREAM"
) -> dict[int, dict[int, list[tuple]]]:
    """For each version of x in ``versions``, q's output rows by instant as ``tests/oracle``'s
    script evaluator gives them with x frozen at that version (a relation whose rows never
    change) over the run's stream; q's window slides by ``slide``, ``stream`` emits it."""
    from oracle.reference import Col, Op
    from oracle.script_reference import Agg, Evaluator, Input, Query, Select, Source, ToStream

    inputs = [
        Input("e", False, (("k", "int"), ("n", "int"))),
        Input("x", True, (("id", "int"), ("pos", "double"), ("unit", "str"))),
    ]
    j = ToStream(
        "ISTREAM",
        Select(
            (
                (Col("e.n", "int"), "n"),
                (Col("x.pos", "double"), "pos"),
                (Col("x.unit", "str"), "unit"),
            ),
            (Source("e", "e", ("now",)), Source("x", "x")),
            Op("=", (Col("e.k", "int"), Col("x.id", "int"))),
        ),
    )
    q = ToStream(
        stream,
        Select(
            (
                (Agg("AVG", Col("j.pos", "double")), "centre"),
                (Agg("MIN", Col("j.unit", "str")), "unit_lo"),
                (Agg("MAX", Col("j.unit", "str")), "unit_hi"),
                (Agg("MIN", Col("j.n", "int")), "first"),
                (Agg("MAX", Col("j.n", "int")), "last"),
                (Agg("COUNT", None), "c"),
            ),
            (Source("j", "j", ("slide", WINDOW, slide)),),
        ),
    )
    out: dict[int, dict[int, list[tuple]]] = {}
    for v in versions:
        data = {"e": r.rows, "x": [dict(x, ts=0) for x in r.updates.versions[v]]}
        ev = Evaluator(inputs, [Query("j", j), Query("q", q)], data, progress=max(r.pushed))
        by_t: dict[int, list[tuple]] = {}
        for values, t in ev.result("q").rows:
            by_t.setdefault(t[0], []).append(values)
        out[v] = by_t
    return out


def engine_rows(r: Run) -> dict[int, list[tuple]]:
    """q's output rows by instant, as the oracle writes them."""
    from oracle.script_reference import norm_row

    by_t: dict[int, list[tuple]] = {}
    columns = ("centre", "unit_lo", "unit_hi", "first", "last", "c")
    for o in r.output:
        by_t.setdefault(o["ts"], []).append(norm_row(o[c] for c in columns))
    return by_t


@dataclass
class Verdict:
    """What a run shows: the checker's violations, the outputs that differ from the oracle at
    the version they read (among those that read one), and the instants q emitted twice."""

    violations: list
    wrong: list[str]
    twice: list[int]
    updates: int  # updates committed


def judge(r: Run) -> Verdict:
    from cq_py.txn import check

    commit_log, reads = transactions(r)
    # A database's commit took effect at an unknown moment between the two times logged: a
    # transaction is judged serializable if it is with the commits at either end (one resource,
    # so each violation depends on one commit's moment monotonically).
    at, after = (check(commit_log, reads, r.updates.table(m)) for m in ("at", "after"))
    also = {(v.kind, v.query, v.instant, v.resource) for v in after}
    violations = [v for v in at if (v.kind, v.query, v.instant, v.resource) in also]
    read_at: dict[int, set[int]] = {}
    for t, v in zip(reads["instant"].to_pylist(), reads["version"].to_pylist(), strict=True):
        read_at.setdefault(t, set()).add(v)
    single = {t: next(iter(vs)) for t, vs in read_at.items() if len(vs) == 1}
    want = oracle_outputs(r, set(single.values()))
    got = engine_rows(r)
    wrong = [
        f"at {t} (x at version {v}): engine {got.get(t)} oracle {want[v].get(t)}"
        for t, v in sorted(single.items())
        if got.get(t) != want[v].get(t)
    ]
    twice = sorted(t for t, rows in got.items() if len(rows) > 1)
    return Verdict(violations, wrong, twice, r.updates.committed)


def mixed(r: Run, slide: int, stream: str = "RSTREAM") -> list[str]:
    """For overlapping windows (``slide`` below ``WINDOW``), whose rows were read by several
    transactions (the read log cannot tell which read an output used): the outputs of q (emitted
    by ``stream``) that read more than one state of x. Each conversion changes every row's unit,
    so an output read one state when its units agree and it equals the oracle's at one of x's
    versions."""
    want = oracle_outputs(r, set(r.updates.versions), slide, stream)
    got = engine_rows(r)
    return [
        f"at {t}: engine {rows}"
        for t, rows in sorted(got.items())
        if any(row[1] != row[2] for row in rows) or not any(want[v].get(t) == rows for v in want)
    ]


if __name__ == "__main__":
    if sys.argv[1:2] == ["updater"]:
        _updater_main(sys.argv[2], sys.argv[3])
