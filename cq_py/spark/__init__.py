"""cq on Spark (SEMANTICS.md §7): a script over Spark DataFrames, one engine per partition via
``mapInArrow``.

:func:`run` needs pyspark (``pip install cq[spark]``); :func:`partition_plan` does not.
"""

from __future__ import annotations

from typing import Any

from cq_py.spark.partitioning import CQPartitionWarning, PartitionPlan, partition_plan

__all__ = ["CQPartitionWarning", "PartitionPlan", "partition_plan", "run"]


def __getattr__(name: str) -> Any:
    # pyspark is imported only when the Spark runner is used: the partition planner works
    # without it.
    if name == "run":
        from cq_py.spark import batch

        return batch.run
    raise AttributeError(f"module 'cq_py.spark' has no attribute {name!r}")
