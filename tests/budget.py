"""How many examples a property test draws: its own default in a normal run (README's `pytest`, CI),
or ``CQ_HYPOTHESIS_EXAMPLES=N`` for every generator at once (long runs; see tests/conftest.py for
the seed)."""

import os


def examples(default: int) -> int:
    """The number of examples for a generator whose normal run draws ``default``.

    >>> examples(300) == int(os.environ.get("CQ_HYPOTHESIS_EXAMPLES") or 300)
    True
    """
    value = os.environ.get("CQ_HYPOTHESIS_EXAMPLES")
    return int(value) if value else default
