"""cq: continuous queries in CQL over Arrow, on one machine or on Spark.

>>> import pyarrow as pa, cq_py
>>> t = pa.table({"a": [1, 2], "b": [0.2, 0.7], "ts": [0, 1]})
>>> cq_py.run("REGISTER STREAM s(a INT, b DOUBLE);"
...           "REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Range 10] WHERE b > 0.5);",
...           inputs={"s": t})["q"].to_pylist()
[{'a': 2, 'ts': 1}]
"""

from cq_py import txn
from cq_py.engine import Engine, explain, run
from cq_py.errors import (
    ArgumentError,
    CallbackError,
    CQError,
    CQLSemanticError,
    CQLSyntaxError,
    InputError,
    LockTimeout,
    MemoryLimitError,
    ResourceError,
    RunawayLoopError,
    SnapshotError,
)
from cq_py.resources import ResourceStore
from cq_py.rowset import RowSet, RowSetEvent, RowSetMetaData

__version__ = "0.1.0"
__all__ = [
    "ArgumentError",
    "CQError",
    "CQLSemanticError",
    "CQLSyntaxError",
    "CallbackError",
    "Engine",
    "InputError",
    "LockTimeout",
    "MemoryLimitError",
    "ResourceError",
    "ResourceStore",
    "RowSet",
    "RowSetEvent",
    "RowSetMetaData",
    "RunawayLoopError",
    "SnapshotError",
    "explain",
    "run",
    "txn",
]
