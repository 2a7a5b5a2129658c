"""The reproduction of paper 004 §6 keeps running (CI: ``reproduce.py --quick``): its table has a
row per distribution and scheduler whose processed + dropped + pending add up to 100 % at every
stage, and the claims table comes out."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_reproduce_quick():
    # (No plot: matplotlib is the bench extra's, CI installs the test extra.)
    run = subprocess.run(
        [sys.executable, str(HERE / "reproduce.py"), "--quick", "--png", ""],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    rows = re.findall(r"^\| (random|P\d) \| (\w+) \| (.*) \|$", run.stdout, re.M)
    assert [(d, s) for d, s, _ in rows] == [
        (d, s) for d in ("random", "P1", "P4") for s in ("mqt", "fifo", "mandf", "admandf")
    ]
    for _, _, cells in rows:
        stages = [list(map(float, c.split("/"))) for c in cells.split("|")]
        assert len(stages) == 4
        for stage in stages:
            assert abs(sum(stage) - 100.0) < 0.2
    assert "| MQT drops in at least three of P1, P4, P7, P8 |" in run.stdout
