"""Semantic analysis and planning: syntax tree → typed logical operators → the core's plan."""

from cq_py.planner.explain import render as explain
from cq_py.planner.logical import Catalog, Node, QueryDef, StreamDef
from cq_py.planner.planner import Planner

__all__ = ["Catalog", "Node", "Planner", "QueryDef", "StreamDef", "explain"]
