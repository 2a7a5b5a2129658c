"""Bounded shared joins' options (cq_py.swj_options, paper 004): every accepted name and range,
and each wrong value refused with an ArgumentError (a ValueError) naming the option, what it takes
and what was found."""

import math

import numpy as np
import pytest

import cq_py
from cq_py.swj_options import CLOCKS, LOADS, SCHEDULERS, SwjOptions, swj_options


def test_the_defaults_are_exact_mode():
    got = swj_options()
    assert got == SwjOptions()
    assert not got.bounded
    assert (got.scheduler, got.period_ms, got.beta0, got.clock, got.load, got.trace) == (
        "mqt",
        500.0,
        0.05,
        "work",
        "arrived",
        False,
    )


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("load", LOADS)
@pytest.mark.parametrize("clock", CLOCKS)
def test_every_accepted_name(scheduler, load, clock):
    got = swj_options(buffer=5000, scheduler=scheduler, load=load, clock=clock, trace=True)
    assert (got.buffer, got.scheduler, got.load, got.clock, got.trace) == (
        5000,
        scheduler,
        load,
        clock,
        True,
    )
    assert got.bounded


def test_edges_of_the_ranges_are_accepted():
    assert swj_options(buffer=1).buffer == 1
    assert swj_options(buffer=np.int64(7)).buffer == 7
    assert swj_options(buffer=2**63 - 1).buffer == 2**63 - 1
    assert swj_options(buffer=3).scheduler == "mqt"  # a buffer alone: MQT
    assert swj_options(beta0=0).beta0 == 0.0
    assert swj_options(beta0=1).beta0 == 1.0
    assert swj_options(period_ms=0.001).period_ms == 0.001
    assert swj_options(period_ms=np.float64(250)).period_ms == 250.0


BAD = [
    (
        {"buffer": 10, "scheduler": "MQT"},
        (
            "Engine option swj_scheduler must be one of 'mqt', 'fifo', 'mandf', 'admandf'; "
            "found 'MQT' (str)"
        ),
    ),
    (
        {"buffer": 10, "scheduler": 3},
        "must be one of 'mqt', 'fifo', 'mandf', 'admandf'; found 3 (int)",
    ),
    (
        {"load": "newest"},
        "Engine option swj_load must be one of 'arrived', 'oldest'; found 'newest' (str)",
    ),
    ({"clock": "cpu"}, "Engine option swj_clock must be one of 'work', 'wall'; found 'cpu' (str)"),
    (
        {"buffer": 0},
        "Engine option swj_buffer must be a whole number of tuples per side, at least 1",
    ),
    ({"buffer": -5}, "found -5 (int)"),
    ({"buffer": 2.0}, "found 2.0 (float)"),
    ({"buffer": True}, "found True (bool)"),
    ({"buffer": "5000"}, "found '5000' (str)"),
    ({"buffer": 2**63}, f"found {2**63} (int)"),
    (
        {"scheduler": "fifo"},
        (
            "Engine option swj_scheduler='fifo' needs swj_buffer (the tuples each side holds): "
            "scheduling only applies to bounded buffers; found swj_buffer=None"
        ),
    ),
    (
        {"period_ms": 0},
        "Engine option swj_period_ms must be a finite number above 0; found 0 (int)",
    ),
    ({"period_ms": -500}, "found -500 (int)"),
    ({"period_ms": math.inf}, "found inf (float)"),
    ({"period_ms": math.nan}, "found nan (float)"),
    ({"period_ms": "500"}, "found '500' (str)"),
    ({"beta0": 1.5}, "Engine option swj_beta0 must be in [0, 1]; found 1.5 (float)"),
    ({"beta0": -0.01}, "found -0.01 (float)"),
    ({"beta0": math.nan}, "found nan (float)"),
    ({"beta0": None}, "found None (NoneType)"),
    ({"trace": 1}, "Engine option swj_trace must be True or False; found 1 (int)"),
    (
        {"buffer": 100, "executor": "heartbeat"},
        "bounded shared joins (swj_buffer=100) need executor='dts'; found executor='heartbeat'",
    ),
]


@pytest.mark.parametrize(("options", "message"), BAD)
def test_bad_values_are_argument_errors_naming_expected_and_found(options, message):
    with pytest.raises(cq_py.ArgumentError) as err:
        swj_options(**options)
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)


def test_exact_mode_runs_under_either_executor():
    assert not swj_options(executor="heartbeat").bounded
