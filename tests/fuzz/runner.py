"""Runs fuzz cases in worker processes (worker.py) with a timeout, and minimises what fails.

A worker that dies (a segfault, an abort) or does not answer in time is a finding for the case it
was given, and is replaced; pytest itself never crashes. A finding is minimised — statements, then
tokens, then characters dropped while the failure stays the same kind — and reported with its
reproducer.

Long runs from the command line (PYTHONPATH must let it import cq_py, and tests/ is added)::

    python tests/fuzz/runner.py --cases 50000 --seed 1 --jobs 2 --report /tmp/fuzz.json
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from child import child_env  # noqa: E402 - needs tests/ on sys.path, set above
from fuzz.mutate import STORE_SHARE, Case, _tokens, case  # noqa: E402


@dataclass
class Result:
    status: str  # "ok", "bug", "crash" or "hang"
    kind: str = ""
    message: str = ""
    where: str = ""
    traceback: str = ""

    @property
    def signature(self) -> str:
        """What must stay the same while a reproducer is minimised."""
        if self.status in ("crash", "hang"):
            return self.status + ":" + self.kind
        return f"{self.kind}@{self.where}"


@dataclass
class Finding:
    case: Case
    result: Result
    reproducer: Case | None = None
    index: int = -1

    def describe(self) -> str:
        r = self.result
        rep = self.reproducer or self.case
        lines = [
            f"{r.status}: {r.kind} at {r.where}: {r.message[:500]}",
            f"  case #{self.index} from {self.case.origin}",
            f"  options: {rep.options}, data_seed {rep.data_seed}",
            "  minimised reproducer:" if self.reproducer else "  input:",
            "    " + repr(rep.text if len(rep.text) < 3000 else rep.text[:3000] + "..."),
        ]
        if r.traceback:
            lines.append("  " + r.traceback.strip().replace("\n", "\n  ")[-2500:])
        return "\n".join(lines)


class Worker:
    """One worker process; ``run`` gives it a case and waits at most ``timeout`` seconds."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.buffer = b""

    def _start(self) -> subprocess.Popen:
        # The worker imports what this process imports: the same cq_py, and tests/ for fuzz.*.
        env = child_env(TESTS)
        return subprocess.Popen(
            [sys.executable, "-m", "fuzz.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=str(TESTS),
        )

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()  # this process's own child, by its handle
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                if f:
                    f.close()
            self.proc = None
            self.buffer = b""

    def run(self, c: Case) -> Result:
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self.proc = self._start()
        assert self.proc.stdin
        assert self.proc.stdout
        try:
            self.proc.stdin.write((json.dumps(c.to_json()) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        deadline = time.monotonic() + self.timeout
        fd = self.proc.stdout.fileno()
        notes: set[str] = set()  # what the worker said about the case before its answer
        while True:
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.stop()
                    notes_ = " and a ".join(sorted(notes))
                    where = f" (in a script with a {notes_})" if notes else ""
                    return Result("hang", f"no answer in {self.timeout:g} s{where}")
                ready, _, _ = select.select([fd], [], [], left)
                if ready:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        return self._died()
                    self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            d = json.loads(line)
            if "note" in d:
                notes.add(d["note"])
                continue
            return Result(
                d["status"],
                d.get("kind", ""),
                d.get("message", ""),
                d.get("where", ""),
                d.get("traceback", ""),
            )

    def _died(self) -> Result:
        assert self.proc is not None
        code = self.proc.wait()
        self.stop()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return Result("crash", name, f"the worker died of {name}")
        return Result("crash", f"exit {code}", f"the worker exited with status {code}")


# =============================================================================================
# Minimisation
# =============================================================================================


def _ddmin(items: list, still_fails: Callable[[list], bool], budget: Callable[[], bool]) -> list:
    """Zeller's delta debugging, simplified: drop chunks of halving size while it still fails."""
    n = 2
    while len(items) >= 2 and budget():
        chunk = max(1, len(items) // n)
        reduced = False
        for start in range(0, len(items), chunk):
            if not budget():
                break
            candidate = items[:start] + items[start + chunk :]
            if candidate and still_fails(candidate):
                items, reduced = candidate, True
                n = max(n - 1, 2)
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(items), n * 2)
    return items


def minimise(worker: Worker, finding: Finding, seconds: float = 120.0) -> Case:
    """A smaller input failing the same way: statements, tokens, then characters dropped."""
    signature = finding.result.signature
    stop_at = time.monotonic() + seconds
    opts, data_seed = finding.case.options, finding.case.data_seed

    def fails(text: str) -> bool:
        return worker.run(Case(text, opts, "minimise", data_seed)).signature == signature

    def budget() -> bool:
        return time.monotonic() < stop_at

    text = finding.case.text
    toks = _tokens(text)
    if " ".join(toks) != text and fails(" ".join(toks)):
        text = " ".join(toks)  # spacing normalised, when that keeps the failure
    if text == " ".join(toks):
        statements: list[list[str]] = [[]]
        for t in toks:
            statements[-1].append(t)
            if t == ";":
                statements.append([])
        statements = [s for s in statements if s]
        kept = _ddmin(statements, lambda ss: fails(" ".join(t for s in ss for t in s)), budget)
        toks = [t for s in kept for t in s]
        toks = _ddmin(toks, lambda ts: fails(" ".join(ts)), budget)
        text = " ".join(toks)
    if len(text) < 5000:
        text = "".join(_ddmin(list(text), lambda cs: fails("".join(cs)), budget))
    return Case(text, opts, finding.case.origin, data_seed)


# =============================================================================================
# Runs
# =============================================================================================


@dataclass
class Report:
    cases: int = 0
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)

    def by_signature(self) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = {}
        for f in self.findings:
            out.setdefault(f.result.signature, []).append(f)
        return out

    def summary(self) -> str:
        groups = self.by_signature()
        head = (
            f"{self.cases} cases in {self.seconds:.0f} s: "
            + ", ".join(f"{n} {k}" for k, n in sorted(self.outcomes.items()))
            + f"; {len(self.findings)} findings of {len(groups)} kinds"
        )
        parts = [head]
        for sig, fs in groups.items():
            parts.append(f"\n[{len(fs)}x] {sig}\n" + fs[0].describe())
        return "\n".join(parts)


def run(
    indices: Iterable[int],
    seed: int,
    timeout: float,
    jobs: int = 1,
    max_findings: int = 50,
    minimise_seconds: float = 120.0,
    progress: Callable[[Report], None] | None = None,
    known: Callable[[Result], bool] = lambda r: False,
    store_share: float = STORE_SHARE,
) -> Report:
    """Cases ``indices`` of the run seeded ``seed``, on ``jobs`` workers. The first finding of
    each kind (signature) is minimised, unless it is ``known``."""
    indices = list(indices)
    report = Report()
    start = time.monotonic()
    workers = [Worker(timeout) for _ in range(jobs)]
    seen: set[str] = set()

    def task(w: Worker, share: list[int]) -> list[tuple[int, Case, Result]]:
        out = []
        for k in share:
            c = case(seed, k, store_share)
            r = w.run(c)
            out.append((k, c, r))
        return out

    try:
        batch = 50 * jobs
        for b in range(0, len(indices), batch):
            part = indices[b : b + batch]
            with ThreadPoolExecutor(jobs) as pool:
                shares = [part[j::jobs] for j in range(jobs)]
                results = [x for chunk in pool.map(task, workers, shares) for x in chunk]
            for k, c, r in sorted(results, key=lambda x: x[0]):
                report.cases += 1
                report.outcomes[r.status if r.status != "ok" else f"ok ({r.kind})"] += 1
                if r.status != "ok" and len(report.findings) < max_findings:
                    f = Finding(c, r, index=k)
                    if r.signature not in seen and minimise_seconds > 0 and not known(r):
                        seen.add(r.signature)
                        f.reproducer = minimise(workers[0], f, minimise_seconds)
                    report.findings.append(f)
            report.seconds = time.monotonic() - start
            if progress:
                progress(report)
    finally:
        for w in workers:
            w.stop()
    report.seconds = time.monotonic() - start
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0, help="index of the first case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--max-findings", type=int, default=500)
    ap.add_argument("--minimise-seconds", type=float, default=120.0)
    ap.add_argument("--report", help="write the findings here as JSON")
    ap.add_argument(
        "--store-share",
        type=float,
        default=STORE_SHARE,
        help="share of the cases drawn from the scripts of resources and models (1: only them)",
    )
    args = ap.parse_args(argv)

    def progress(r: Report) -> None:
        print(
            f"\r{r.cases} cases, {r.seconds:.0f} s, {len(r.findings)} findings",
            end="",
            file=sys.stderr,
            flush=True,
        )

    report = run(
        range(args.first, args.first + args.cases),
        args.seed,
        args.timeout,
        args.jobs,
        args.max_findings,
        args.minimise_seconds,
        progress,
        store_share=args.store_share,
    )
    print(file=sys.stderr)
    print(report.summary())
    if args.report:
        Path(args.report).write_text(
            json.dumps(
                {
                    "cases": report.cases,
                    "seconds": report.seconds,
                    "outcomes": dict(report.outcomes),
                    "findings": [
                        {
                            "index": f.index,
                            "signature": f.result.signature,
                            "result": f.result.__dict__,
                            "case": f.case.to_json(),
                            "reproducer": f.reproducer.to_json() if f.reproducer else None,
                        }
                        for f in report.findings
                    ],
                },
                indent=1,
            )
        )
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
