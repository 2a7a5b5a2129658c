"""The ``.cqlt`` conformance format: a parser into blocks, and an executor (see README.md here).

A file is a list of blocks separated by blank lines. :func:`parse` turns the text into
:class:`Block` objects that remember their file line numbers; :func:`run_text` / :func:`run_file`
execute them, either against one ``cq_py.Engine`` (``mode=run``) or against ``cq_py.explain`` of an
accumulated script (``mode=plan``), and raise :class:`Failure` (an ``AssertionError``) with
``file:line: what was expected / what was found`` at the first block that does not hold, or
:class:`Skipped` when a ``skip`` block is reached. In ``mode=run`` two options of the runner
itself vary how the same file drives the engine: ``batch_rows=N`` pushes each ``push`` block N
rows at a time, and ``snapshot=true`` replaces the engine after every push by one restored from
its snapshot (the matrix of test_conformance.py runs every file under each).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

import cq_py
from cq_py.parser import ast
from cq_py.parser.parser import parse as parse_cql

__all__ = [
    "Block",
    "Failure",
    "FormatError",
    "Skipped",
    "file_options",
    "parse",
    "run_file",
    "run_text",
]

SEPARATOR = "----"
ERROR_CLASSES = {
    "CQLSyntaxError": cq_py.CQLSyntaxError,
    "CQLSemanticError": cq_py.CQLSemanticError,
    "InputError": cq_py.InputError,
}
MODES = ("run", "plan")
# Column types a `push` header may name explicitly (`a:VARCHAR`) to override the declared type.
HEADER_TYPES = {
    "BIGINT": pa.int64(),
    "INT": pa.int64(),
    "INT32": pa.int32(),
    "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
    "NULL": pa.null(),
}


# =============================================================================================
# Errors of the runner
# =============================================================================================


class FormatError(Exception):
    """The ``.cqlt`` file itself is malformed (an unknown directive, a missing ``----`` ...)."""


class Failure(AssertionError):
    """A block did not hold: ``file:line: what was expected / what was found``."""


class Skipped(Exception):
    """A ``skip <reason>`` block was reached: ``reason`` says why the rest of the file is
    skipped, ``where`` is ``file:line`` of the block."""

    def __init__(self, reason: str, where: str):
        self.reason = reason
        self.where = where
        super().__init__(f"{where}: {reason}")


def _batch_rows(v: str) -> str | int:
    if v == "all":
        return v
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"expected 'all' or a number of rows >= 1, found {v!r}")
    return n


def _bool(v: str) -> bool:
    if v.lower() in ("true", "1", "yes"):
        return True
    if v.lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, found {v!r}")


# Options of the `options` block: name -> how its value is read.
OPTIONS: dict[str, Callable[[str], Any]] = {
    "mode": str,
    "time_unit": str,
    "lifetime": str,
    "executor": str,
    "auto_delay": _bool,
    "expose_steps": _bool,
    "hybrid": _bool,
    "threads": int,
    "fuse": _bool,
    # The runner's own, not the engine's: how a push block is split into pushes ("all": one push;
    # N: N rows at a time), and whether the engine is snapshotted and restored after every push.
    "batch_rows": _batch_rows,
    "snapshot": _bool,
}


# =============================================================================================
# Parsing
# =============================================================================================


@dataclass
class Line:
    text: str
    lineno: int  # 1-based line in the file


@dataclass
class Block:
    """One directive with its body.

    ``kind`` is the directive (``options``, ``statement``, ``explain``, ``push``, ``advance``,
    ``close``, ``query``, ``skip``); ``args`` the words after it; ``body`` the lines before ``----``
    (CQL, or a CSV header and rows); ``expected`` the lines after ``----`` (None when absent).
    """

    kind: str
    args: list[str]
    lineno: int
    body: list[Line] = field(default_factory=list)
    expected: list[Line] | None = None
    error: bool = False  # the `... error` form: the action must fail
    error_class: str | None = None
    at: tuple[int, int] | None = None
    raw_args: str = ""
    ts: str = "ts"  # push: the timestamp column (`ts=` argument)
    when: dict[str, Any] = field(default_factory=dict)  # skip: the configurations it applies to

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.body)


def _is_comment(line: str) -> bool:
    # `#3 Window ...` (an operator id at the start of an explain line) is not a comment.
    return line.startswith("#") and not (len(line) > 1 and line[1].isdigit())


def parse(text: str, where: str = "<cqlt>") -> list[Block]:
    """The blocks of a ``.cqlt`` text; ``where`` names the file in error messages."""
    groups: list[list[Line]] = []
    current: list[Line] = []
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip():
            if current:
                groups.append(current)
                current = []
            continue
        if _is_comment(line):
            continue
        current.append(Line(line, i))
    if current:
        groups.append(current)
    blocks = [_block(g, where) for g in groups]
    for k, b in enumerate(blocks):
        if b.kind == "options" and k != 0:
            raise FormatError(f"{where}:{b.lineno}: 'options' must be the first block of the file")
    return blocks


def _block(lines: list[Line], where: str) -> Block:
    head = lines[0]
    words = head.text.split()
    kind, args = words[0].lower(), words[1:]
    raw_args = head.text.strip()[len(words[0]) :].strip()
    rest = lines[1:]

    def fail(msg: str, lineno: int = head.lineno) -> FormatError:
        return FormatError(f"{where}:{lineno}: {msg}")

    body, expected = rest, None
    seps = [k for k, line in enumerate(rest) if line.text.strip() == SEPARATOR]
    if seps:
        if len(seps) > 1:
            raise fail(f"more than one '{SEPARATOR}' in one block", rest[seps[1]].lineno)
        body, expected = rest[: seps[0]], rest[seps[0] + 1 :]
    b = Block(kind, args, head.lineno, body, expected, raw_args=raw_args)

    if kind == "options":
        if rest:
            raise fail("'options' takes one line")
        for a in args:
            key, eq, value = a.partition("=")
            if not eq or key not in OPTIONS:
                raise fail(
                    f"unknown option {a!r}; options are {', '.join(k + '=...' for k in OPTIONS)}"
                )
            try:
                v = OPTIONS[key](value)
            except ValueError as e:
                raise fail(f"option {key}: {e}") from None
            if key == "mode" and v not in MODES:
                raise fail(f"mode must be run or plan, found {value!r}")
    elif kind == "statement":
        if not args or args[0] not in ("ok", "error"):
            raise fail("expected 'statement ok' or 'statement error'")
        b.error = args[0] == "error"
        if not b.error:
            if len(args) > 1:
                raise fail("'statement ok' takes no arguments")
            if expected is not None:
                raise fail(f"'statement ok' has no '{SEPARATOR}' section")
        else:
            _error_args(b, args[1:], fail, allow_at=True)
        if not body:
            raise fail("a statement block needs at least one line of CQL")
    elif kind == "explain":
        if args:
            raise fail("'explain' takes no arguments")
        if body:
            raise fail(f"'explain' is followed directly by '{SEPARATOR}'", body[0].lineno)
        if not expected:
            raise fail(f"'explain' needs '{SEPARATOR}' and at least one expected line")
    elif kind == "push":
        b.error = bool(args) and args[0] == "error" and len(args) > 1
        rest_args = args[1:] if b.error else args
        if not rest_args:
            raise fail("'push' needs a stream name")
        stream, extra = rest_args[0], rest_args[1:]
        b.args = [stream]
        b.ts = "ts"
        leftover = []
        for a in extra:
            if a.startswith("ts="):
                b.ts = a[3:]
            else:
                leftover.append(a)
        if b.error:
            _error_args(b, leftover, fail, allow_at=False)
        elif leftover:
            raise fail(f"unexpected {' '.join(leftover)!r} after the stream name")
        elif expected is not None:
            raise fail(f"'push' has no '{SEPARATOR}' section (use 'push error' to expect an error)")
        if not body:
            raise fail("a push block needs a CSV header line")
    elif kind == "advance":
        b.error = bool(args) and args[0] == "error"
        rest_args = args[1:] if b.error else args
        if not rest_args:
            raise fail("'advance' needs a time")
        try:
            b.args = [str(int(rest_args[0]))]
        except ValueError:
            raise fail(f"'advance' needs an integer time, found {rest_args[0]!r}") from None
        if b.error:
            _error_args(b, rest_args[1:], fail, allow_at=False)
        elif len(rest_args) > 1 or expected is not None or body:
            raise fail("'advance <t>' takes one line")
        if body:
            raise fail(f"'advance error' is followed directly by '{SEPARATOR}'", body[0].lineno)
    elif kind == "close":
        if args or rest:
            raise fail("'close' takes one line and no arguments")
    elif kind == "query":
        b.error = bool(args) and args[0] == "error"
        rest_args = args[1:] if b.error else args
        if not rest_args:
            raise fail("'query' needs a query name")
        b.args = [rest_args[0]]
        if b.error:
            _error_args(b, rest_args[1:], fail, allow_at=False)
        else:
            if len(rest_args) > 1:
                raise fail(
                    f"unexpected {' '.join(rest_args[1:])!r} after the query name (rows "
                    "are compared as bags per timestamp: there is no 'rowsort' to ask)"
                )
            if body:
                raise fail(f"'query' is followed directly by '{SEPARATOR}'", body[0].lineno)
            if not expected:
                raise fail(f"'query' needs '{SEPARATOR}' and a CSV header line")
    elif kind == "skip":
        # `skip [option=value ...] reason`: with options, only in the configurations that have
        # them all (a bug of one corner of the matrix).
        for a in args:
            key, eq, value = a.partition("=")
            if not eq or key not in OPTIONS or key == "mode":
                break
            try:
                b.when[key] = OPTIONS[key](value)
            except ValueError as e:
                raise fail(f"skip: option {key}: {e}") from None
            raw_args = raw_args[len(a) :].strip()
        b.raw_args = raw_args
        if not raw_args:
            raise fail("'skip' needs a reason")
    else:
        raise fail(
            f"unknown directive {words[0]!r}; directives are options, statement, explain, "
            "push, advance, close, query, skip"
        )
    return b


def _error_args(b: Block, args: list[str], fail, allow_at: bool) -> None:
    k = 0
    while k < len(args):
        a = args[k]
        if a in ERROR_CLASSES:
            b.error_class = a
        elif a == "at" and allow_at and k + 1 < len(args):
            line, _, col = args[k + 1].partition(":")
            try:
                b.at = (int(line), int(col))
            except ValueError:
                raise fail(f"'at' needs LINE:COLUMN, found {args[k + 1]!r}") from None
            k += 1
        else:
            raise fail(
                f"unexpected {a!r}; expected {' or '.join(ERROR_CLASSES)}"
                + (" or 'at L:C'" if allow_at else "")
            )
        k += 1


# =============================================================================================
# CSV cells
# =============================================================================================


@dataclass(frozen=True)
class Cell:
    text: str
    quoted: bool


def split_csv(line: str) -> list[Cell]:
    """Cells of one CSV line: ``,`` separates, ``"..."`` quotes (``""`` inside is one quote);
    unquoted cells are stripped of surrounding spaces."""
    cells: list[Cell] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] == " ":
            i += 1
        if i < n and line[i] == '"':
            i += 1
            buf = []
            while True:
                if i >= n:
                    raise ValueError(f"unterminated quote in {line!r}")
                if line[i] == '"':
                    if i + 1 < n and line[i + 1] == '"':
                        buf.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(line[i])
                i += 1
            while i < n and line[i] == " ":
                i += 1
            if i < n and line[i] != ",":
                raise ValueError(f"text after a closing quote in {line!r}")
            cells.append(Cell("".join(buf), True))
        else:
            j = line.find(",", i)
            j = n if j < 0 else j
            cells.append(Cell(line[i:j].strip(), False))
            i = j
        if i >= n:
            return cells
        i += 1  # the comma
        if i >= n:
            cells.append(Cell("", False))
            return cells


def is_null(c: Cell) -> bool:
    return not c.quoted and (c.text == "" or c.text.upper() == "NULL")


def to_value(c: Cell, type_: pa.DataType) -> Any:
    """A CSV cell as a Python value of ``type_`` (empty or unquoted NULL = None)."""
    if is_null(c):
        return None
    t = c.text
    if pa.types.is_integer(type_):
        return int(t)
    if pa.types.is_floating(type_):
        return float(t)
    if pa.types.is_boolean(type_):
        return _bool(t)
    if pa.types.is_null(type_):
        raise ValueError(f"a NULL column holds only empty cells, found {t!r}")
    return t


def render(v: Any) -> str:
    """A value as the expectation compares it: floats by repr, NULL as NULL, strings quoted."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace('"', '""') + '"'
    return str(v)


# =============================================================================================
# Executing
# =============================================================================================


class _Runner:
    def __init__(
        self,
        blocks: list[Block],
        where: str,
        ignore_skips: bool = False,
        defaults: dict[str, Any] | None = None,
    ):
        self.blocks = blocks
        self.where = where
        self.ignore_skips = ignore_skips
        self.options: dict[str, Any] = dict(defaults or {})
        if blocks and blocks[0].kind == "options":
            for a in blocks[0].args:
                key, _, value = a.partition("=")
                self.options[key] = OPTIONS[key](value)
        self.mode = self.options.pop("mode", "run")
        # Runner options are kept apart: self.options are the engine's (tests/spark reads them).
        self.batch_rows: str | int = self.options.pop("batch_rows", "all")
        self.snapshot: bool = self.options.pop("snapshot", False)
        if self.snapshot and self.options.get("executor") == "scheduled":
            raise FormatError(
                f"{where}: snapshot=true needs executor=dts or heartbeat (a scheduled engine "
                "takes no snapshot)"
            )
        self.engine: cq_py.Engine | None = None
        self.script: list[str] = []  # plan mode: the accumulated statements
        self.checked = 0  # blocks that checked something
        # What is final (SEMANTICS.md §4.8): each input's latest pushed timestamp, the latest
        # advance, close; and what each query reads (named query -> the names in its FROM clauses).
        self.latest: dict[str, int] = {}
        self.advanced: int | None = None
        self.closed = False
        self.reads: dict[str, set[str]] = {}
        # Per query: rows expected by a block but not final yet, and rows fetched before a block
        # expected them (both carried over to the next `query` block of that query).
        self.owed: dict[str, Counter] = {}
        self.early: dict[str, Counter] = {}
        self.last_time: dict[str, tuple] = {}
        self.owed_at: dict[str, int] = {}  # the line of the block that first expected them

    # -- helpers --------------------------------------------------------------------------------

    def fail(self, b: Block, msg: str) -> Failure:
        return Failure(f"{self.where}:{b.lineno}: {msg}")

    def eng(self) -> cq_py.Engine:
        if self.engine is None:
            self.engine = cq_py.Engine(**self.options)
        return self.engine

    def run(self) -> int:
        for b in self.blocks:
            if b.kind == "options":
                continue
            if b.kind == "skip":
                if self.ignore_skips or not self.applies(b.when):
                    continue
                raise Skipped(b.raw_args, f"{self.where}:{b.lineno}")
            if self.mode == "plan" and b.kind not in ("statement", "explain"):
                raise FormatError(
                    f"{self.where}:{b.lineno}: '{b.kind}' is not allowed in "
                    "mode=plan (nothing runs there)"
                )
            getattr(self, "_" + b.kind)(b)
            self.checked += 1
        self.settle()
        return self.checked

    def applies(self, when: dict[str, Any]) -> bool:
        """Does this run's configuration have every option of ``when`` (engine defaults
        included)?"""
        mine = {
            "executor": "dts",
            "lifetime": "direct",
            "hybrid": True,
            "time_unit": "ms",
            "auto_delay": False,
            "expose_steps": False,
            **self.options,
            "batch_rows": self.batch_rows,
            "snapshot": self.snapshot,
        }
        if mine["executor"] != "dts":
            mine["hybrid"] = None  # an option of the dts executor only
        return all(mine.get(k) == v for k, v in when.items())

    # -- expected errors ------------------------------------------------------------------------

    def expect_error(
        self, b: Block, action: Callable[[], Any], what: str, line_offset: int = 0
    ) -> None:
        want = b.error_class or "an error of cq_py"
        try:
            action()
        except cq_py.CQError as e:
            self.check_error(b, e, line_offset)
            return
        except Exception as e:
            raise self.fail(
                b,
                f"{what}: expected {want}, found {type(e).__name__} (not an "
                f"exception of cq_py: an engine bug?): {e}",
            ) from e
        raise self.fail(b, f"{what}: expected {want}, but it succeeded")

    def check_error(self, b: Block, e: Exception, line_offset: int) -> None:
        name = type(e).__name__
        msg = str(e)
        if b.error_class and not isinstance(e, ERROR_CLASSES[b.error_class]):
            raise self.fail(b, f"expected {b.error_class}, found {name}: {msg}")
        if b.at is not None:
            line, col = getattr(e, "line", None), getattr(e, "column", None)
            if line is None:
                raise self.fail(
                    b,
                    f"expected an error at {b.at[0]}:{b.at[1]}, found {name} "
                    f"without a position: {msg}",
                )
            got = (line - line_offset, col)
            if got != b.at:
                raise self.fail(
                    b,
                    f"expected an error at {b.at[0]}:{b.at[1]} of the block, found "
                    f"it at {got[0]}:{got[1]}: {msg}",
                )
        for expected in b.expected or []:
            if expected.text.strip() not in msg:
                raise Failure(
                    f"{self.where}:{expected.lineno}: expected the error message to contain "
                    f"{expected.text.strip()!r}; found {name}: {msg}"
                )

    # -- directives -----------------------------------------------------------------------------

    def _statement(self, b: Block) -> None:
        if self.mode == "plan":
            prefix = "".join(s + "\n" for s in self.script)
            script = prefix + b.text + "\n"
            offset = prefix.count("\n")
            if b.error:
                self.expect_error(
                    b, lambda: cq_py.explain(script, **self.options), "statement error", offset
                )
                return
            try:
                cq_py.explain(script, **self.options)
            except Exception as e:
                line = getattr(e, "line", None)
                at = f" (at {line - offset}:{e.column} of the block)" if line else ""
                raise self.fail(
                    b, f"statement ok: expected success, found {type(e).__name__}{at}: {e}"
                ) from e
            self.script.append(b.text)
            return
        if b.error:
            self.expect_error(b, lambda: self.eng().execute(b.text), "statement error")
            return
        try:
            self.eng().execute(b.text)
        except Exception as e:
            raise self.fail(
                b, f"statement ok: expected success, found {type(e).__name__}: {e}"
            ) from e
        for st in parse_cql(b.text).statements:
            if isinstance(st, ast.RegisterQuery):
                self.reads[st.name.lower()] = _sources(st.query)

    def _explain(self, b: Block) -> None:
        try:
            if self.mode == "plan":
                text = cq_py.explain("".join(s + "\n" for s in self.script), **self.options)
            else:
                text = self.eng().explain()
        except Exception as e:
            raise self.fail(b, f"explain: found {type(e).__name__}: {e}") from e
        actual = text.splitlines()
        pos = 0
        last = None
        for line in b.expected or []:
            want = line.text
            k = next((i for i in range(pos, len(actual)) if want in actual[i]), None)
            if k is None:
                anywhere = [a for a in actual if want in a]
                why = f" (it occurs only before the line matched by {last!r})" if anywhere else ""
                raise Failure(
                    f"{self.where}:{line.lineno}: explain: expected a line containing "
                    f"{want!r}{' after ' + repr(last) if last else ''}{why}; found:\n" + text
                )
            pos, last = k + 1, want

    def _push(self, b: Block) -> None:
        stream, ts = b.args[0], b.ts
        eng = self.eng()
        try:
            table = self.table(b, eng, stream, ts)
        except ValueError as e:
            raise FormatError(f"{self.where}:{b.lineno}: push {stream}: {e}") from None
        if b.error:
            # Pushed whole: the block's rows are one push that must be rejected as a whole.
            self.expect_error(b, lambda: eng.push(stream, table, ts=ts), f"push {stream}")
            self.restore(b, f"push error {stream}")
            return
        n = table.num_rows if self.batch_rows == "all" else self.batch_rows
        for at in range(0, max(table.num_rows, 1), max(n, 1)):
            part = table.slice(at, n)
            try:
                self.engine.push(stream, part, ts=ts)
            except Exception as e:
                rows = (
                    ""
                    if part.num_rows == table.num_rows
                    else f" (rows {at + 1}..{at + part.num_rows} of the block, pushed alone)"
                )
                raise self.fail(
                    b, f"push {stream}{rows}: expected success, found {type(e).__name__}: {e}"
                ) from e
            if part.num_rows:
                t = max(part.column(ts).to_pylist())
                key = stream.lower()
                self.latest[key] = max(self.latest.get(key, t), t)
            self.restore(b, f"push {stream}")

    def restore(self, b: Block, after: str) -> None:
        """With ``snapshot=true``: the engine from here on is one restored from its snapshot
        (``Engine.restore`` makes it with the saved options and CQL, then restores the core's
        state), so every later block checks that a snapshot loses and duplicates nothing."""
        if not self.snapshot or self.engine is None:
            return
        try:
            fresh = cq_py.Engine.restore(self.engine.snapshot())
        except Exception as e:
            raise self.fail(
                b, f"snapshot and restore after {after}: found {type(e).__name__}: {e}"
            ) from e
        if fresh.explain() != self.engine.explain():
            raise self.fail(
                b,
                f"snapshot and restore after {after}: the restored engine's plan "
                f"differs:\n{fresh.explain()}\nfrom the original's:\n"
                f"{self.engine.explain()}",
            )
        self.engine = fresh

    def table(self, b: Block, eng: cq_py.Engine, stream: str, ts: str) -> pa.Table:
        """The push block's CSV as a table typed by the stream's declared columns (a header cell
        ``name:TYPE`` overrides; undeclared columns are VARCHAR, the timestamp BIGINT)."""
        try:
            declared = {f.name.lower(): f.type for f in eng.stream_schema(stream)}
        except cq_py.CQError:
            declared = {}  # an unknown stream: the push itself reports it
        header = split_csv(b.body[0].text)
        names, types = [], []
        for c in header:
            name, _, tname = c.text.partition(":")
            if tname:
                if tname.upper() not in HEADER_TYPES:
                    raise ValueError(
                        f"unknown type {tname!r} in the header; types are {', '.join(HEADER_TYPES)}"
                    )
                t = HEADER_TYPES[tname.upper()]
            elif name == ts:
                t = pa.int64()
            else:
                t = declared.get(name.lower(), pa.string())
            names.append(name)
            types.append(t)
        cols: list[list[Any]] = [[] for _ in names]
        for line in b.body[1:]:
            cells = split_csv(line.text)
            if len(cells) != len(names):
                raise ValueError(f"line {line.lineno}: {len(cells)} cells for {len(names)} columns")
            for k, (c, t) in enumerate(zip(cells, types, strict=True)):
                try:
                    cols[k].append(to_value(c, t))
                except ValueError as e:
                    raise ValueError(f"line {line.lineno}: column {names[k]} ({t}): {e}") from None
        return pa.table([pa.array(v, t) for v, t in zip(cols, types, strict=True)], names=names)

    def _advance(self, b: Block) -> None:
        t = int(b.args[0])
        if b.error:
            self.expect_error(b, lambda: self.eng().advance(t), f"advance {t}")
            return
        try:
            self.eng().advance(t)
        except Exception as e:
            raise self.fail(
                b, f"advance {t}: expected success, found {type(e).__name__}: {e}"
            ) from e
        self.advanced = t if self.advanced is None else max(self.advanced, t)
        self.restore(b, f"advance {t}")

    def _close(self, b: Block) -> None:
        try:
            self.eng().close()
        except Exception as e:
            raise self.fail(b, f"close: expected success, found {type(e).__name__}: {e}") from e
        self.closed = True
        self.restore(b, "close")

    def _query(self, b: Block) -> None:
        name = b.args[0]
        eng = self.eng()
        if b.error:
            self.expect_error(b, lambda: eng.fetch(name), f"query {name}")
            return
        try:
            schema = eng.query_schema(name)
            got = eng.fetch(name)
        except Exception as e:
            raise self.fail(b, f"query {name}: found {type(e).__name__}: {e}") from e
        exp = b.expected or []
        header = [c.text for c in split_csv(exp[0].text)]
        if header != schema.names:
            raise Failure(
                f"{self.where}:{exp[0].lineno}: query {name}: expected the columns "
                f"{','.join(header)}; found {','.join(schema.names)}"
            )
        want: list[tuple[str, ...]] = []
        for line in exp[1:]:
            cells = split_csv(line.text)
            if len(cells) != len(header):
                raise FormatError(
                    f"{self.where}:{line.lineno}: {len(cells)} cells for {len(header)} columns"
                )
            try:
                want.append(
                    tuple(render(to_value(c, f.type)) for c, f in zip(cells, schema, strict=True))
                )
            except ValueError as e:
                raise FormatError(f"{self.where}:{line.lineno}: {e}") from None
        rows = got.to_pylist()
        found = [tuple(render(r[n]) for n in schema.names) for r in rows]
        self.compare(b, name, schema.names, want, found, [_time(r, schema.names) for r in rows])

    def compare(
        self,
        b: Block,
        name: str,
        columns: list[str],
        want: list[tuple[str, ...]],
        found: list[tuple[str, ...]],
        times: list[tuple],
    ) -> None:
        """Checks one fetch against one block's rows as SEMANTICS.md §4 defines results: a stream as
        a bag of rows per timestamp, in time order; a relation as its lifetime tuples (ghosts, start
        = end, may appear). What is final — stream rows before P, the progress of the query's
        inputs (their latest timestamp or advance; +∞ after close), tuples that end before P —
        must be exactly what the file expects by now. The rest may come now or later: a row the
        block expects that is not final yet, or a row fetched before a block expects it, is
        carried over to the next block of the query (and to the end of the file)."""
        key = name.lower()
        stream = "ts" in columns
        if stream:
            order = [
                _time(dict(zip(columns, r, strict=True)), columns, rendered=True) for r in want
            ]
            bad = next((k for k in range(1, len(order)) if order[k] < order[k - 1]), None)
            if bad is not None:
                raise self.fail(
                    b,
                    f"query {name}: the expected rows are not in time order "
                    f"(row {bad + 1}, {','.join(want[bad])}, comes before row "
                    f"{bad}, {','.join(want[bad - 1])})",
                )
            last = self.last_time.get(key)
            for t, r in zip(times, found, strict=True):
                if last is not None and t < last:
                    raise self.fail(
                        b,
                        f"query {name}: the engine's rows are not in time order: "
                        f"{','.join(r)} comes after a row at {last}",
                    )
                last = t
            if last is not None:
                self.last_time[key] = last
        ghosts = Counter()
        if not stream:
            steps = "start_step" in columns
            s, e = columns.index("start"), columns.index("end")
            ss, es = (columns.index("start_step"), columns.index("end_step")) if steps else (s, e)
            ghosts = Counter(r for r in found if r[s] == r[e] and r[ss] == r[es])
        expected = self.owed.pop(key, Counter()) + Counter(want)
        fetched = self.early.pop(key, Counter()) + Counter(found)
        missing, extra = expected - fetched, fetched - expected
        # A ghost is a tuple alive nowhere: one found and not expected is no extra tuple. (Without
        # the step columns, [t, t) may also be a tuple of one ε: tolerated the same way.)
        extra -= ghosts
        p = self.progress(key)
        due_missing = [r for r in missing.elements() if self.due(r, columns, p)]
        due_extra = [r for r in extra.elements() if self.due(r, columns, p)]
        if due_missing or due_extra:

            def show(rows) -> str:
                return "\n".join("  " + ",".join(r) for r in sorted(rows)) or "  (no rows)"

            final = "+inf" if p == math.inf else p
            raise self.fail(
                b,
                f"query {name}: the rows final at the inputs' progress {final} "
                f"differ\nexpected and not found ({len(due_missing)} rows):\n"
                f"{show(due_missing)}\nfound and not expected "
                f"({len(due_extra)} rows):\n{show(due_extra)}\nexpected in this "
                f"block:\n{show(want)}\nfetched:\n{show(found)}",
            )
        if missing:
            self.owed[key] = missing
            self.owed_at.setdefault(key, b.lineno)
        else:
            self.owed_at.pop(key, None)
        if extra:
            self.early[key] = extra

    def progress(self, query: str) -> float:
        """P of a query: the least progress of the inputs it reads (through named queries)."""
        if self.closed:
            return math.inf
        inputs: set[str] = set()
        todo, seen = [query], set()
        while todo:
            q = todo.pop()
            if q in seen:
                continue
            seen.add(q)
            if q in self.reads:
                todo.extend(self.reads[q])
            else:
                inputs.add(q)
        if self.options.get("hybrid") is False:
            # As published, DTS time-splits the whole graph as one region: an instant runs once
            # every input has passed it, so a result is final only below the least of them all.
            inputs = {n.lower() for n in self.eng().stream_names()}
        floor = -math.inf if self.advanced is None else self.advanced
        return min((max(self.latest.get(i, -math.inf), floor) for i in inputs), default=floor)

    @staticmethod
    def due(row: tuple[str, ...], columns: list[str], p: float) -> bool:
        """Is the row final at progress p: a stream row before p, a tuple that ends before p."""
        cell = row[columns.index("ts" if "ts" in columns else "end")]
        return cell != "NULL" and int(cell) < p

    def settle(self) -> None:
        """At the end of the file: a row fetched that no block expected is an extra
        row, final or not (the file's blocks list every row the engine gives up to its last
        block); rows a block expected that were not final when it ran must come out once
        everything is final, so the engine is closed (if the file did not) and drained."""
        for key, early in self.early.items():
            rows = "\n".join("  " + ",".join(r) for r in sorted(early.elements()))
            raise Failure(
                f"{self.where}: query {key}: these rows were fetched, but no block of the "
                f"file expects them:\n{rows}"
            )
        if not self.owed or self.engine is None:
            return
        if not self.closed:
            try:
                self.engine.close()
            except Exception as e:
                raise Failure(
                    f"{self.where}: closing the engine at the end of the file to see the "
                    f"rows that were expected before they were final: found "
                    f"{type(e).__name__}: {e}"
                ) from e
            self.closed = True
        for key, owed in self.owed.items():
            schema = self.engine.query_schema(key)
            fetched = self.early.get(key, Counter()) + Counter(
                tuple(render(r[n]) for n in schema.names)
                for r in self.engine.fetch(key).to_pylist()
            )
            lost = owed - fetched
            if lost:
                rows = "\n".join("  " + ",".join(r) for r in sorted(lost.elements()))
                raise Failure(
                    f"{self.where}:{self.owed_at[key]}: query {key}: these expected "
                    f"rows never came out, not even after close():\n{rows}"
                )


def _sources(q: Any) -> set[str]:
    """The names a query reads in its FROM clauses (lower case)."""
    if isinstance(q, ast.Select):
        return {src.name.lower() for src in q.sources}
    if isinstance(q, ast.StreamOp):
        return _sources(q.query)
    if isinstance(q, ast.Master):
        return _sources(q.select) | {m.name.lower() for m in q.masters}
    return _sources(q.left) | _sources(q.right)


def _time(row: dict, columns: list[str], rendered: bool = False) -> tuple:
    """The (tick, step) of a stream row (its time columns as values, or as rendered cells)."""
    if "ts" not in columns:
        return ()

    def num(v: Any) -> Any:
        return int(v) if rendered and v != "NULL" else v

    return (num(row["ts"]), num(row["ts_step"]) if "ts_step" in columns else 0)


# =============================================================================================
# Entry points
# =============================================================================================


def run_text(
    text: str,
    where: str = "<cqlt>",
    ignore_skips: bool = False,
    defaults: dict[str, Any] | None = None,
) -> int:
    """Runs a ``.cqlt`` text; returns the number of blocks checked. Raises :class:`Failure`,
    :class:`FormatError` or :class:`Skipped`. With ``ignore_skips``, ``skip`` blocks are passed
    over (to see whether the cases behind them still fail). ``defaults`` are options (of the
    engine, or the runner's ``batch_rows`` and ``snapshot``) for those the file's ``options`` block
    does not set: one configuration of the matrix."""
    blocks = parse(text, where)
    if not [b for b in blocks if b.kind != "options"]:
        raise FormatError(f"{where}: the file has no blocks")
    return _Runner(blocks, where, ignore_skips, defaults).run()


def run_file(
    path: str | Path,
    root: Path | None = None,
    ignore_skips: bool = False,
    defaults: dict[str, Any] | None = None,
) -> int:
    path = Path(path)
    where = str(path.relative_to(root)) if root else str(path)
    return run_text(path.read_text(), where, ignore_skips, defaults)


def file_options(text: str, where: str = "<cqlt>") -> dict[str, Any]:
    """The options a file's ``options`` block sets (``mode`` included), read as the runner does."""
    blocks = parse(text, where)
    if not blocks or blocks[0].kind != "options":
        return {}
    return {k: OPTIONS[k](v) for k, _, v in (a.partition("=") for a in blocks[0].args)}
