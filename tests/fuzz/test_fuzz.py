"""The crash fuzzer (README.md here): mutated conformance scripts and examples end in a result or
in a cq_py package error, through explain, execute and a short run — never in another exception,
a crash or a hang.

CI runs a fixed-seed short run (CQ_FUZZ_CASES cases, 150 by default, well under a minute); a long
run is ``CQ_FUZZ_CASES=50000 CQ_FUZZ_JOBS=2 pytest tests/fuzz`` or runner.py from the command line.
"""

from __future__ import annotations

import os
import warnings

import pytest

from fuzz.mutate import STORE_SHARE, Case, case, seeds, store_seeds
from fuzz.runner import Finding, Result, Worker, run

CASES = int(os.environ.get("CQ_FUZZ_CASES", "150"))
SEED = int(os.environ.get("CQ_FUZZ_SEED", "0"))
JOBS = int(os.environ.get("CQ_FUZZ_JOBS", "1"))
TIMEOUT = float(os.environ.get("CQ_FUZZ_TIMEOUT", "30"))
# 1.0: only the scripts of resources and models (paper 002).
STORE = float(os.environ.get("CQ_FUZZ_STORE_SHARE", str(STORE_SHARE)))

# Failures the fuzzer finds that other items of issue 27 fix (or that are reported and not fixed
# yet), by what they raise: warnings here, not failures, until those fixes land (then delete the
# entry).
KNOWN: dict = {}


def _known(r: Result) -> str:
    return next((name for name, match in KNOWN.items() if match(r)), "")


def test_fuzz_cases_are_deterministic():
    assert len(seeds()) > 100
    a, b = case(SEED, 7), case(SEED, 7)
    assert (a.text, a.options, a.data_seed) == (b.text, b.options, b.data_seed)
    assert {case(SEED, k).text for k in range(20)} != {case(SEED + 1, k).text for k in range(20)}


def test_the_short_run_reaches_resources_models_and_every_strategy():
    """Of the CI run's cases, a share starts from a script of resources and models and runs on
    the scheduled executor with a store, under every transaction strategy."""
    assert len(store_seeds()) >= 8
    cases = [case(SEED, k, STORE) for k in range(CASES)]
    stored = [c for c in cases if c.options.get("resources")]
    assert len(stored) >= 0.15 * STORE * CASES / STORE_SHARE
    assert {c.options.get("txn") for c in stored} >= {"none", "2pl", "snapshot", "optimistic"}


def test_the_worker_reports_crashes_hangs_and_bugs():
    """The harness cannot pass vacuously: a non-package exception, a segfault and a hang in a case
    are each reported, and the worker goes on with the next case."""
    w = Worker(timeout=120)  # a worker starting on a busy machine may take seconds
    try:
        ok = w.run(
            Case("REGISTER STREAM s(a INT); REGISTER QUERY q AS SELECT a FROM s [Now];", {}, "ok")
        )
        assert ok.status == "ok", ok
        bad = w.run(Case("REGISTER STREAM s(a INT);", {"__raise__": True}, "bug"))
        assert (bad.status, bad.kind) == ("bug", "KeyError"), bad
        assert "non-package exception" in bad.message
        crash = w.run(Case("", {"__crash__": True}, "crash"))
        assert (crash.status, crash.kind) == ("crash", "SIGSEGV"), crash
        w.run(Case("", {}, "start the next worker"))
        w.timeout = 3
        hang = w.run(Case("", {"__hang__": True}, "hang"))
        assert hang.status == "hang", hang
        w.timeout = 120
        assert w.run(Case("REGISTER STREAM s(a INT);", {}, "after")).status == "ok"
    finally:
        w.stop()


def test_fuzz_fixed_seed():
    report = run(
        range(CASES),
        SEED,
        TIMEOUT,
        JOBS,
        minimise_seconds=120,
        known=lambda r: bool(_known(r)),
        store_share=STORE,
    )
    assert report.cases == CASES
    known = [f for f in report.findings if _known(f.result)]
    for f in known:
        warnings.warn(f"known ({_known(f.result)}): case #{f.index}", stacklevel=1)
    new: list[Finding] = [f for f in report.findings if not _known(f.result)]
    if new:
        report.findings = new
        pytest.fail(report.summary(), pytrace=False)
