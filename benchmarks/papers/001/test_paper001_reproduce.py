"""The reproduction of paper 001 §5 keeps running (CI: ``reproduce.py --quick``, one round): its
tables come out, and the base groups it finds equal those the generated queries imply."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_reproduce_quick():
    # (No plot: matplotlib is the bench extra's, CI installs the test extra.)
    run = subprocess.run(
        [
            sys.executable,
            str(HERE / "reproduce.py"),
            "--quick",
            "--repeat",
            "1",
            "--png",
            "",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    out = run.stdout
    assert "| k* (" in out
    for found, implied in re.findall(r"^\| [\d.]+ \| (\d+) \| (\d+) \|", out, re.M):
        assert found == implied
    assert len(re.findall(r"^\| [\d.]+ \| (\d+) \| (\d+) \|", out, re.M)) == 3
