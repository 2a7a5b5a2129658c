"""Tests and benchmarks are named after what they test, not after the milestone that added them."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Milestone words of the project's history: they say when a test was written, not what it checks.
MILESTONES = re.compile(r"slice", re.IGNORECASE)


def python_files():
    return [p for d in ("tests", "benchmarks") for p in sorted((REPO / d).rglob("*.py"))]


def test_no_test_or_benchmark_file_is_named_after_a_milestone():
    files = python_files()
    assert len(files) > 10, f"tests/ and benchmarks/ not found under {REPO}"
    assert [
        str(p.relative_to(REPO)) for p in files if MILESTONES.search(str(p.relative_to(REPO)))
    ] == []


def test_no_test_function_is_named_after_a_milestone():
    defs = re.compile(r"^\s*def (test_\w+)", re.MULTILINE)
    named = [
        f"{p.relative_to(REPO)}::{name}"
        for p in python_files()
        for name in defs.findall(p.read_text(encoding="utf-8"))
        if MILESTONES.search(name)
    ]
    assert named == []
