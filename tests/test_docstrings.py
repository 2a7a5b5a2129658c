"""The examples in the public docstrings run and print what they claim."""

import doctest
import importlib
import pkgutil

import pytest

import cq_py


def modules():
    yield cq_py
    for info in pkgutil.walk_packages(cq_py.__path__, "cq_py."):
        if info.name != "cq_py.__main__":
            yield importlib.import_module(info.name)


@pytest.mark.parametrize("module", list(modules()), ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
