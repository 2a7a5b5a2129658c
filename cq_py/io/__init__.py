"""File I/O for cq: streaming readers, a time-ordered merge of inputs, per-query writers.

>>> from cq_py.io import open_input, merge_by_time, open_writer  # doctest: +SKIP
"""

from cq_py.io.readers import detect_format, merge_by_time, open_input, row_count
from cq_py.io.writers import QueryWriter, encode_json_lines, open_writer

__all__ = [
    "QueryWriter",
    "detect_format",
    "encode_json_lines",
    "merge_by_time",
    "open_input",
    "open_writer",
    "row_count",
]
