"""The training run of the profile-guided build (cmake/pgo_training.py, used by `CQ_PGO=1 pip
install .`). The default build has no profile, so CI builds none: this runs the training mix on the
installed core instead, so that a change to the API it drives breaks here and not in a user's
opt-in build (which would quietly fall back to no profile)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_training_mix_runs_on_the_installed_core(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "cmake" / "pgo_training.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr.startswith("pgo training:"), run.stderr
