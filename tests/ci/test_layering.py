"""The layering check (.ci/layering.py): the tree keeps its floors, and a tie that breaks them fails
the check with the file, the line and the two floors."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "layering.py"

pytestmark = pytest.mark.skipif(not (ROOT / "src_cpp").is_dir(), reason="needs the source tree")


def layering(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the sources the check reads."""
    for top in ("src_cpp", "cq_core", "cq_py"):
        shutil.copytree(
            ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("*.so", "__pycache__")
        )
    return tmp_path


def plant(path: Path, after: str, line: str) -> int:
    """Puts ``line`` into ``path`` right after the first line starting with ``after``; returns its
    line number."""
    lines = path.read_text().splitlines()
    at = next(i for i, text in enumerate(lines) if text.startswith(after)) + 1
    lines.insert(at, line)
    path.write_text("\n".join(lines) + "\n")
    return at + 1


def test_the_tree_keeps_its_floors():
    run = layering(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all down a floor" in run.stdout


# Each case: the file, the line the tie goes after, the tie, what the check says after
# "file:line: ".
PLANTED = {
    "up a floor": (
        "src_cpp/base/errors.h",
        "#include <string>",
        '#include "operators/operator.h"',
        (
            '#include "operators/operator.h" runs up a floor: src_cpp/base/ (floor 1) '
            "may not reach src_cpp/operators/ (floor 7)"
        ),
    ),
    # The tie this layout removed: the row form below the operators that drive it.
    "rows to operators": (
        "src_cpp/rows/row_operator.h",
        "#include",
        '#include "operators/operator.h"',
        (
            '#include "operators/operator.h" runs up a floor: src_cpp/rows/ (floor 6) '
            "may not reach src_cpp/operators/ (floor 7)"
        ),
    ),
    "sideways": (
        "src_cpp/kernels/datum.h",
        "#include",
        '#include "lifetime/expiration_set.h"',
        (
            '#include "lifetime/expiration_set.h" runs sideways: src_cpp/kernels/ and '
            "src_cpp/lifetime/ share floor 4, whose rooms do not reach each other"
        ),
    ),
    # The Spark runners' old circle: streaming reached back into batch (inside a function, too).
    "lazy import": (
        "cq_py/spark/streaming.py",
        "    from pyspark.sql import DataFrame",
        "    from cq_py.spark import batch",
        (
            "from cq_py.spark import batch runs up a floor: cq_py/spark/streaming.py (floor 20) "
            "may not reach cq_py/spark/batch.py (floor 21)"
        ),
    ),
}


@pytest.mark.parametrize("case", PLANTED)
def test_a_planted_tie_fails_naming_file_line_and_floors(tree, case):
    path, after, tie, says = PLANTED[case]
    line = plant(tree / path, after, tie)
    run = layering(tree)
    assert run.returncode == 1
    assert run.stdout.splitlines() == [
        f"{path}:{line}: {says}",
        "layering: 1 breach(es) of the floors declared in .ci/layering.py",
    ]


def test_a_folder_on_no_floor_fails(tree):
    (tree / "src_cpp/storage").mkdir()
    (tree / "src_cpp/storage/spill.h").write_text('#pragma once\n#include "base/errors.h"\n')
    run = layering(tree)
    assert run.returncode == 1
    assert "src_cpp/storage/spill.h: on no floor: declare its folder" in run.stdout
