"""Semantic analysis and planning: syntax tree → typed logical operators → the core's plan."""

from cq_py.planner.planner import Catalog, LogicalOp, Planner, QueryDef, StreamDef

__all__ = ["Catalog", "LogicalOp", "Planner", "QueryDef", "StreamDef"]
