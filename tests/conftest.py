"""Hypothesis profiles for every generator in the suite.

By default (README's `pytest`, and CI) every property test draws its examples from a fixed seed
(``derandomize``): the same examples on every run, so CI is reproducible and a red run is a bug, not
bad luck. ``CQ_HYPOTHESIS_SEED=random`` draws new examples on each run (long runs, with
``CQ_HYPOTHESIS_EXAMPLES=N`` raising each generator's number of examples); any other value of it is
a seed to draw from (``pytest -p hypothesis --hypothesis-seed`` does the same for one run).
"""

import os

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
