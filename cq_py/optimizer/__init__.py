"""Multiple-query optimization of MASTER queries (paper 001 §4.2–§4.5), beside the planner: base
groups (§4.2), the arrival-log similarity of groups and their clustering (§4.3), re-clustering
when the arrival pattern changes (§4.5). Reads parsed queries and timestamps only.

>>> from cq_py.optimizer import QueryProfile, base_groups
>>> a = QueryProfile("a", frozenset({"clock"}), {"s": 10.0})
>>> base_groups([a, a], 0.5)
[[0, 1]]
"""

from cq_py.optimizer.clusters import Clock, QueryGroups
from cq_py.optimizer.groups import (
    NOW,
    QueryProfile,
    base_groups,
    complete_linkage,
    jaccard,
    profile_of,
    similarity,
    similarity_matrix,
    use_set,
    window_ratio,
)

__all__ = [
    "NOW",
    "Clock",
    "QueryGroups",
    "QueryProfile",
    "base_groups",
    "complete_linkage",
    "jaccard",
    "profile_of",
    "similarity",
    "similarity_matrix",
    "use_set",
    "window_ratio",
]
