"""Every differential test runs under each executor, since all strategies must give the same
results (SEMANTICS.md §5): DTS as cq runs it (hybrid: whole batches outside loops) and as published
(hybrid=False: every operator instant by instant), and the heartbeat executor with max_run 1
(control moves to the consumers after every execution) and 20 (the default: runs of executions,
output queued meanwhile), the scheduled executor (paper 002 §5: round robin, one row per
evaluation) with batch 1, each on one engine; and DTS on two engines (``threads=2``: one per part
of the input where the script has a partition key)."""

import pytest

EXECUTORS = {
    "dts": {"executor": "dts", "threads": 1},
    "dts-published": {"executor": "dts", "hybrid": False, "threads": 1},
    "heartbeat-run1": {"executor": "heartbeat", "max_run": 1, "threads": 1},
    "heartbeat-run20": {"executor": "heartbeat", "max_run": 20, "threads": 1},
    "scheduled-b1": {"executor": "scheduled", "batch": 1, "threads": 1},
    "dts-threads2": {"executor": "dts", "threads": 2},
}


@pytest.fixture(scope="module", params=list(EXECUTORS))
def executor(request) -> dict:
    """Engine options choosing the executor (module scope: hypothesis runs its examples in one
    test call, which a function-scoped fixture would not reset between)."""
    return EXECUTORS[request.param]
