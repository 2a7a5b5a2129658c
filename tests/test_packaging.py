"""Every Python package of the repository is installed by ``pip install .``: pyproject.toml lists
packages by name, and one left out installs without error and fails on import (cq_py.optimizer
once did, caught only by CI's fresh install)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_in_pyproject():
    # (The line as written; tomllib is Python 3.11's, and cq supports 3.10.)
    line = re.search(r"^packages = (\[.*\])$", (ROOT / "pyproject.toml").read_text(), re.M)
    assert line, "pyproject.toml lists its packages on one line: packages = [...]"
    listed = set(ast.literal_eval(line.group(1)))
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("cq_py", "cq_core")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found <= listed, f"packages pip would leave out: {sorted(found - listed)}"
