"""The crash fuzzer's worker process: runs cases given one per line (JSON) on stdin and answers one
line (JSON) per case on stdout, so that a crash or a hang of the engine ends this process and not
pytest (runner.py watches it).

A case goes through ``cq_py.explain()``, ``Engine.execute()`` and, when the script is accepted, a
short run: a few generated rows pushed to every registered stream and relation, in time order
across them, an ``advance``, ``close()``, then ``fetch()`` of every query and ``explain()``.
Every step must end in a result or in an exception of ``cq_py.errors`` (``CQError``); a rejected
step changes nothing, so the run goes on after it. An answer is ``{"status": "ok"}`` or
``{"status": "bug", "kind": ..., "message": ..., "where": ..., "traceback": ...}``.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

import cq_py
from cq_py.errors import CQError
from cq_py.parser.tokenizer import tokenize
from fuzz.store import Bug, StoreFeed

# A loop gets small bounds: a runaway is found quickly (RunawayLoopError, a package error) — too
# many ε steps in a tick, too many rows (they multiply), or a loop that goes on by itself from tick
# to tick after close() (a tick delay, <2> or <1 SECOND>, or an RSTREAM in the loop).
MAX_LOOP_STEPS = 300
MAX_LOOP_TICKS = 1000
MAX_LOOP_ROWS = 100_000
# RSTREAM emits its relation at every tick: closed, RSTREAM over [Range 2 d] in milliseconds
# emits 172,800,000 times per row, correctly and for minutes. An engine whose RSTREAM may emit
# past this many ticks after its inputs is advanced and not closed.
RSTREAM_TICKS = 10_000
EXPLAIN_OPTIONS = ("time_unit", "expose_steps", "auto_delay")

VALUES: dict[str, list[Any]] = {
    "int64": [0, 1, -1, 2, 7, 42, 2**63 - 1, -(2**63), None],
    "double": [0.0, -0.0, 1.5, -2.25, 1e308, -1e308, 5e-324, math.inf, -math.inf, math.nan, None],
    "string": ["", "a", "b", "\u00e9", "x" * 300, "\x00", "'", "NULL", None],
    "bool": [True, False, None],
}


def _check_error(e: CQError, text: str, step: str) -> None:
    """A package error must render, and a CQL error's position must lie in the text, its line
    shown being the text's line."""
    try:
        message = str(e)
    except Exception as inner:
        raise Bug(
            f"{step}: str() of {type(e).__name__} raised {type(inner).__name__}: {inner}"
        ) from inner
    if not message:
        raise Bug(f"{step}: {type(e).__name__} with an empty message")
    line = getattr(e, "line", None)
    if isinstance(e, (cq_py.CQLSyntaxError, cq_py.CQLSemanticError)) and line is not None:
        lines = text.split("\n")
        if not 1 <= line <= len(lines):
            raise Bug(
                f"{step}: {type(e).__name__} at line {line} of a {len(lines)}-line text: "
                f"{message[:300]}"
            )
        column = getattr(e, "column", None) or 1
        shown = getattr(e, "line_text", "")
        # A lone surrogate is shown as U+FFFD (it cannot be printed).
        if shown and shown != re.sub("[\ud800-\udfff]", "\ufffd", lines[line - 1].rstrip("\r")):
            raise Bug(
                f"{step}: {type(e).__name__} shows line {line} as {shown[:80]!r}, which is "
                f"{lines[line - 1][:80]!r}"
            )
        if not 1 <= column <= len(lines[line - 1]) + 1:
            raise Bug(
                f"{step}: {type(e).__name__} at column {column} of a line of "
                f"{len(lines[line - 1])} characters"
            )


def _step(log: list[str], name: str, text: str, fn, *args):
    """fn(*args); a package error is checked and logged, anything else is a bug."""
    try:
        return fn(*args)
    except CQError as e:
        _check_error(e, text, name)
        log.append(f"{name}: {type(e).__name__}")
        return None


def _rows(rng: random.Random, eng: cq_py.Engine, name: str) -> list[dict[str, Any]]:
    schema = eng.stream_schema(name)
    relation = name in eng.relation_names()
    rows = []
    ts = 0
    for _ in range(rng.randint(0, 6)):
        ts += rng.choice([0, 0, 1, 1, 2, 5])
        row = {f.name: rng.choice(VALUES.get(str(f.type), [None])) for f in schema}
        if relation and rng.random() < 0.3 and rows:
            row = {k: v for k, v in rng.choice(rows).items() if k not in ("op", "ts")}
            row["op"] = "-"
        elif relation:
            row["op"] = "+"
        row["ts"] = ts
        rows.append(row)
    return rows


def _table(rows: list[dict[str, Any]], schema: pa.Schema, relation: bool) -> pa.Table:
    fields = (
        list(schema)
        + ([pa.field("op", pa.string())] if relation else [])
        + [pa.field("ts", pa.int64())]
    )
    # A declared column named ts (or op) gives way: the engine refuses such a push, by name.
    by_name = {f.name: f for f in fields}
    return pa.table({n: pa.array([r.get(n) for r in rows], f.type) for n, f in by_name.items()})


def _statements(text: str) -> list[str]:
    """The text's statements (cut at ';'), each as its tokens' texts; none when it does not
    tokenize."""
    try:
        tokens = tokenize(text)
    except CQError:
        return []
    out: list[list[str]] = [[]]
    for t in tokens:
        if t.text == ";":
            out.append([])
        elif t.text:
            out[-1].append(t.text)
    return [" ".join(s) for s in out if s]


def _loops(eng: cq_py.Engine) -> list[list[int]]:
    from cq_py.planner import loops

    nodes = eng._catalog.nodes
    succ = loops.successors(nodes)
    return [c for c in loops.strongly_connected(nodes, succ) if loops.is_loop(c, succ)]


def _rstream_runs_long(eng: cq_py.Engine) -> bool:
    nodes = eng._catalog.nodes.values()
    if not any(n.op == "rstream" for n in nodes):
        return False
    spans = [n.params.get(k, {}).get("ticks", 0) for n in nodes for k in ("range", "duration")]
    return sum(spans) > RSTREAM_TICKS


class _Feed:
    """Generated rows for each input, handed out in time order across the inputs, a chunk at a
    time; an input gets its rows when it is first seen registered."""

    def __init__(self, rng: random.Random, eng: cq_py.Engine):
        self.rng, self.eng = rng, eng
        self.pending: list[tuple[int, int, str, list[dict[str, Any]]]] = []
        self.known: set[str] = set()
        self.last = 0

    def refresh(self) -> None:
        for name in self.eng.stream_names():
            if name in self.known:
                continue
            self.known.add(name)
            rows = _rows(self.rng, self.eng, name)
            # One push per row or per few rows, merged by time across the inputs; an input
            # registered later starts at the time reached.
            for r in rows:
                r["ts"] += self.last
            chunk = self.rng.choice([1, 2, 100])
            for i in range(0, len(rows), chunk):
                self.pending.append((rows[i]["ts"], len(self.pending), name, rows[i : i + chunk]))
        self.pending.sort()

    def push(self, log: list[str], text: str, count: int, store: StoreFeed | None = None) -> None:
        relations = set(self.eng.relation_names())
        for _, _, name, rows in self.pending[:count]:
            self.last = max(self.last, rows[-1]["ts"])
            table = _table(rows, self.eng.stream_schema(name), name in relations)
            if store is None:
                _step(log, f"push {name}", text, self.eng.push, name, table)
                continue
            # With resources, a store transaction may come between pushes; a rejected push
            # (a model's wrong answer, a lock timeout) must emit nothing.
            store.between(lambda what, fn, *a: _step(log, what, text, fn, *a))
            _drain(self.eng, log, text)
            failed = len(log)
            _step(log, f"push {name}", text, self.eng.push, name, table)
            if len(log) > failed:
                emitted = _drain(self.eng, log, text)
                if emitted:
                    raise Bug(f"push {name} was rejected ({log[-1]}) and emitted {emitted} rows")
        del self.pending[:count]


def _drain(eng: cq_py.Engine, log: list[str], text: str) -> int:
    """Fetches every query's rows; how many there were."""
    got = [_step(log, f"fetch {q}", text, eng.fetch, q) for q in eng.query_names()]
    return sum(t.num_rows for t in got if t is not None)


def _registered(eng: cq_py.Engine, store: StoreFeed | None) -> tuple[list[str], ...]:
    return (
        eng.stream_names(),
        eng.relation_names(),
        eng.query_names(),
        sorted(eng._catalog.resources),
        store.store.names() if store else [],
    )


def _execute(
    log: list[str], cql: str, eng: cq_py.Engine, text: str, store: StoreFeed | None
) -> None:
    """``eng.execute(cql)``: when it is rejected, nothing is registered (nor defined in the
    store)."""
    before, n = _registered(eng, store), len(log)
    _step(log, "execute" if cql is text else "execute statement", cql, eng.execute, cql)
    if len(log) > n and _registered(eng, store) != before:
        raise Bug(
            f"execute was rejected ({log[-1]}) and changed what is registered: {before} -> "
            f"{_registered(eng, store)}"
        )


def run_case(case: dict[str, Any], note: Callable[[str], None] = lambda _: None) -> str:
    """Runs one case; raises Bug (or any non-package exception) when it goes wrong. Says how far
    it went: "rejected" (by execute) or "ran". ``note("loop")`` tells the runner, before the
    data, that the script has a loop (what a hang there is about)."""
    text, options = case["text"], dict(case["options"])
    log: list[str] = []
    _step(
        log,
        "explain",
        text,
        lambda: cq_py.explain(text, **{k: v for k, v in options.items() if k in EXPLAIN_OPTIONS}),
    )
    rng = random.Random(case.get("data_seed", 0))
    store: StoreFeed | None = None
    if options.pop("resources", False):
        # Paper 002: an in-process store with rows for the resources and callables for the
        # models, some set before the script registers them.
        options["resources"] = cq_py.ResourceStore()
        store = StoreFeed(rng, options["resources"], text)
        store.prepare(lambda what, fn, *a: _step(log, what, text, fn, *a))
    eng = _step(
        log,
        "Engine()",
        text,
        lambda: cq_py.Engine(
            max_loop_steps=MAX_LOOP_STEPS,
            max_loop_ticks=MAX_LOOP_TICKS,
            max_loop_rows=MAX_LOOP_ROWS,
            **options,
        ),
    )
    if eng is None:
        return "rejected"
    feed = _Feed(rng, eng)
    whole = rng.random() < 0.75
    before = len(log)
    if whole:
        _execute(log, text, eng, text, store)
    if not whole or len(log) > before:
        # Statement by statement, with rows pushed in between: queries registered mid-run, and
        # what is valid of a damaged script runs too (a rejected statement leaves the engine as
        # it was).
        for statement in _statements(text):
            _execute(log, statement, eng, text, store)
            feed.refresh()
            if store:
                store.refresh(lambda what, fn, *a: _step(log, what, text, fn, *a), eng)
            if _loops(eng):
                note("loop")
            feed.push(log, text, rng.choice([0, 0, 1, 2]), store)
        if not eng.stream_names():
            return "rejected"
    feed.refresh()
    if store:
        store.refresh(lambda what, fn, *a: _step(log, what, text, fn, *a), eng)
    if _loops(eng):
        note("loop")
    feed.push(log, text, len(feed.pending), store)
    _step(log, "advance", text, eng.advance, feed.last + rng.choice([0, 1, 3, 20]))
    if not _rstream_runs_long(eng):
        _step(log, "close", text, eng.close)
    for q in eng.query_names():
        _step(log, f"fetch {q}", text, eng.fetch, q)
    _step(log, "explain()", text, eng.explain)
    return "ran"


def answer(case: dict[str, Any], note: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    # How test_fuzz.py checks that a crash and a hang are caught (they are not engine inputs).
    if case["options"].pop("__crash__", False):
        os.kill(os.getpid(), signal.SIGSEGV)
    if case["options"].pop("__hang__", False):
        time.sleep(3600)
    try:
        if case["options"].pop("__raise__", False):
            raise KeyError("a non-package exception, as a bug in the engine would raise")
        return {"status": "ok", "kind": run_case(case, note)}
    except Bug as e:
        return {
            "status": "bug",
            "kind": "Bug",
            "message": str(e),
            "where": "check",
            "traceback": "",
        }
    except BaseException as e:  # noqa: BLE001 - any other exception is what the fuzzer looks for
        tb = traceback.extract_tb(e.__traceback__)
        last = tb[-1] if tb else None
        where = f"{Path(last.filename).name}:{last.name}" if last else "?"
        return {
            "status": "bug",
            "kind": type(e).__name__,
            "message": str(e)[:2000],
            "where": where,
            "traceback": "".join(traceback.format_exception(e))[-6000:],
        }


def main() -> None:
    # Results go to the original stdout; anything else printed goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    sys.stdout = sys.stderr

    def note(what: str) -> None:
        out.write(json.dumps({"note": what}) + "\n")
        out.flush()

    for line in sys.stdin:
        result = answer(json.loads(line), note)
        out.write(json.dumps(result) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
