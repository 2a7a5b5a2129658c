"""The CQL front end: tokenizer, recursive-descent parser and syntax tree.

>>> from cq_py.parser import parse, ast
>>> script = parse("REGISTER QUERY q AS SELECT a FROM s [Range 10 seconds];")
>>> script.statements[0].query.sources[0].window == ast.Window("range", ast.Duration(10, "s"))
True
"""

from cq_py.parser import ast
from cq_py.parser.parser import parse, parse_expression, parse_query

__all__ = ["ast", "parse", "parse_expression", "parse_query"]
