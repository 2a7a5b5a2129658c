"""benchmarks/papers/004/patterns.json: P1–P8 follow §6.2's rules and give the MQT orders it lists,
and the check that says so fails on windows that break a rule or an order."""

import copy
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "papers" / "004" / "patterns.py"

pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="needs the source tree")


@pytest.fixture(scope="module")
def patterns():
    spec = importlib.util.spec_from_file_location("patterns004", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_file_is_what_the_script_builds_and_checks_clean(patterns):
    data = json.loads(patterns.FILE.read_text(encoding="utf-8"))
    assert data == patterns.build()
    assert patterns.check(data) == []
    assert patterns.main([]) == 0


def test_the_orders_come_from_the_matrix(patterns):
    assert patterns.mqt_order([5, 10, 15]) == "1-3"  # equal gaps: one segment
    assert patterns.mqt_order([1, 3, 10]) == "1,2,3"  # rising gaps: one query each
    assert patterns.mqt_order([2, 3, 10]) == "1-2,3"


def test_a_broken_rule_or_order_is_reported(patterns):
    data = patterns.build()
    wrong_order = copy.deepcopy(data)
    wrong_order["patterns"]["P4"]["windows_ms"][4] = 1600  # w5 ≥ 1,500: 1-5 no longer a segment
    errs = patterns.check(wrong_order)
    assert any("P4: the MQT matrix of" in e for e in errs)
    not_rising = copy.deepcopy(data)
    not_rising["patterns"]["P1"]["windows_ms"][1] = 2  # gap 1 after gap 1
    assert any("P1: expected gaps rising from 1" in e for e in patterns.check(not_rising))
    no_jump = copy.deepcopy(data)
    no_jump["patterns"]["P8"]["windows_ms"][8] = 2000  # M = 100 < d = 1,000
    assert any("P8: expected a jump" in e for e in patterns.check(no_jump))
