"""Paper 004 §6's workload (swj_workload.py) through the bounded shared join: every scheduler's
counters add up to queries × arrivals after priming, the burst and a stage, and the primed tuples
are all processed before stage 1."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import swj_workload as workload


@pytest.mark.parametrize("scheduler", ["mqt", "fifo", "mandf", "admandf"])
def test_counters_add_up(scheduler):
    ws = workload.windows("P1")
    data = workload.build_input([2000.0], 0.5, 50.0)
    seen = workload.run_stages(ws, scheduler, data)
    assert seen[0]["pending"] == 0  # priming is processed before stage 1
    for c in seen:
        assert c["processed"] + c["dropped"] + c["pending"] == workload.QUERIES * c["arrivals"]
    # The join takes a tuple in once the other input's progress covers it: the last of each
    # source waits at the frontier.
    assert data.a.num_rows + data.b.num_rows - 2 <= seen[-1]["arrivals"]


def test_windows():
    assert workload.windows("P1")[-1] == workload.MAX_WINDOW_MS
    ws = workload.windows("random")
    assert len(ws) == workload.QUERIES
    assert ws == sorted(ws)
    assert ws[0] >= 1
    assert ws[-1] <= workload.MAX_WINDOW_MS
    with pytest.raises(ValueError, match="P9"):
        workload.windows("P9")
