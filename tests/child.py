"""The environment of a child interpreter that imports what this process imports: the same cq_py
and cq_core (an installed package, a source tree, or the sanitizer's build put first on the path),
plus any directories a test needs first.

    env = child_env(TESTS)  # then subprocess.run([sys.executable, ...], env=env, cwd=elsewhere)
"""

import os
import sys
from pathlib import Path


def time_bound(seconds: float) -> float:
    """A child's time bound: ``seconds`` times CQ_TEST_TIMEOUT_SCALE, which the sanitizer run
    (tests/sanitize/run.sh) sets, since the same work takes several times longer under ASan.

    >>> time_bound(120) >= 120
    True
    """
    return seconds * float(os.environ.get("CQ_TEST_TIMEOUT_SCALE", "1"))


def child_env(*first: str | Path) -> dict[str, str]:
    """os.environ with PYTHONPATH = ``first`` + this process's sys.path.

    >>> child_env("/x")["PYTHONPATH"].split(os.pathsep)[0]
    '/x'
    """
    path = [str(p) for p in first] + [p for p in sys.path if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))
