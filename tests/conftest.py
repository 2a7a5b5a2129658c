"""Hypothesis profiles for every generator in the suite.

By default (README's `pytest`, and CI) every property test draws its examples from a fixed seed
(``derandomize``): the same examples on every run, so CI is reproducible and a red run is a bug, not
bad luck. ``CQ_HYPOTHESIS_SEED=random`` draws new examples on each run (long runs, with
``CQ_HYPOTHESIS_EXAMPLES=N`` raising each generator's number of examples); any other value of it is
a seed to draw from (``pytest -p hypothesis --hypothesis-seed`` does the same for one run).
"""

import os

import pytest
from hypothesis import settings

settings.register_profile("fixed", derandomize=True, database=None, print_blob=True)
settings.register_profile("random", print_blob=True)
_seed = os.environ.get("CQ_HYPOTHESIS_SEED")
settings.load_profile("fixed" if _seed is None else "random")


def pytest_collection_modifyitems(items):
    """A numeric CQ_HYPOTHESIS_SEED seeds every hypothesis test of the run."""
    if _seed in (None, "random"):
        return
    import hypothesis

    for item in items:
        test = getattr(item, "obj", None)
        if test is not None and hasattr(test, "hypothesis"):
            hypothesis.seed(int(_seed))(test)


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL server of the suite's own (tests/postgres_server.py), for the whole session.
    Under CI (CI=true) a missing PostgreSQL or psycopg fails the tests that need it: .ci/run
    installs both, and these tests must never skip there."""
    from postgres_server import binaries, postgres

    missing = []
    if binaries() is None:
        missing.append("the PostgreSQL server (apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing.append("psycopg (pip install 'cq[postgres]')")
    if missing:
        message = "needs " + " and ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must install it (.ci/run)")
        pytest.skip(message)
    with postgres() as server:
        yield server
