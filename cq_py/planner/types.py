"""Column types as the planner and the core name them, and their CQL / Arrow counterparts."""

from __future__ import annotations

import pyarrow as pa

INT64 = "int64"
FLOAT64 = "float64"
UTF8 = "utf8"
BOOL = "bool"
NULL = "null"  # the type of an untyped NULL literal, until context gives it one

# CQL's canonical type names (parser.ast.TypeName.name) to core types.
FROM_CQL = {"BIGINT": INT64, "DOUBLE": FLOAT64, "VARCHAR": UTF8, "BOOLEAN": BOOL}
# How errors name core types: in the user's vocabulary, not ours.
CQL_NAME = {INT64: "BIGINT", FLOAT64: "DOUBLE", UTF8: "VARCHAR", BOOL: "BOOLEAN", NULL: "NULL"}
TO_ARROW = {
    INT64: pa.int64(),
    FLOAT64: pa.float64(),
    UTF8: pa.string(),
    BOOL: pa.bool_(),
    NULL: pa.null(),
}

NUMERIC = (INT64, FLOAT64)


def arrow_schema(fields: list[tuple[str, str]]) -> pa.Schema:
    """The Arrow schema of ``[(name, core type), ...]``.

    >>> arrow_schema([("a", "int64")])
    a: int64
    """
    return pa.schema([pa.field(n, TO_ARROW[t]) for n, t in fields])
