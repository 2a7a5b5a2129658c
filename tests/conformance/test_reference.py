"""The expected rows of the run-mode conformance files against the reference evaluator
(tests/oracle/script_reference.py), which shares nothing with the engine but the meaning of CQL.

The rows of a ``.cqlt`` file are computed by hand from SEMANTICS.md §4; here they are also computed
mechanically, so that a slip of the hand is not taken for the engine's behaviour (nor the engine's
behaviour copied into a file). A file's statements are parsed with cq_py's parser and turned into
the reference's own query trees, its accepted pushes are the reference's input, and the rows of all
the ``query`` blocks of a query, taken together, must be the reference's whole result: a stream as
a bag of rows per instant, a relation as the same R(t) at every instant (SEMANTICS.md §4's
equality). Only queries whose last block comes after ``close`` are compared (before it, a file need
not have seen every row). ``skip`` blocks are passed over: a file that records an engine bug still
has its expectations checked here.

The reference does not run every file: not loops, ``auto_delay``, other time units, queries
registered after data, or constructs it has no tree for (``[Partition By]`` on two columns, HAVING
beyond ``aggregate op integer``...). ``REFERENCE_FILES`` lists the files checked, and
``test_the_reference_covers_the_feature_folders`` keeps every file of the folders written against
it (joins, aggregates, set operations, ...) on that list.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from conformance.cqlt import file_options, parse, split_csv, to_value
from cq_py.parser import ast
from cq_py.parser.parser import parse as parse_cql
from oracle.reference import INF, Col, Lit, Op
from oracle.script_reference import (
    Agg,
    Evaluator,
    Input,
    Query,
    Rel,
    Relation,
    Select,
    SetOp,
    Source,
    Stream,
    ToStream,
    compare_relations,
    item_type,
    norm_row,
)

HERE = Path(__file__).resolve().parent
TYPES = {"BIGINT": "int", "DOUBLE": "double", "VARCHAR": "str", "BOOLEAN": "bool"}
ARROW = {"int": pa.int64(), "double": pa.float64(), "str": pa.string(), "bool": pa.bool_()}
TICKS = {None: 1, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX")
# Folders whose files are all written against the reference: every file there must be checkable.
COVERED = ("joins", "aggregates", "set_operations", "windows", "streams", "relations")


class Unsupported(Exception):
    """The reference evaluator cannot run this file (the message says why)."""


# ---- CQL to the reference's trees -----------------------------------------------------------


class Translator:
    def __init__(self, inputs: dict[str, Input], queries: dict[str, ast.Query]):
        self.inputs = inputs
        self.asts = queries
        self.columns: dict[str, list] = {n: list(i.columns) for n, i in inputs.items()}
        self.trees: dict[str, Any] = {}

    def query(self, name: str, seen: tuple = ()) -> Any:
        if name in seen:
            raise Unsupported(f"a recursive loop through {name}")
        if name not in self.trees:
            self.trees[name], self.columns[name] = self.body(self.asts[name], (*seen, name))
        return self.trees[name]

    def source_columns(self, name: str, seen: tuple) -> list:
        if name in self.asts:
            self.query(name, seen)
        if name not in self.columns:
            raise Unsupported(f"unknown source {name}")
        return self.columns[name]

    def body(self, q: ast.Query, seen: tuple) -> tuple[Any, list]:
        if isinstance(q, ast.StreamOp):
            inner, cols = self.body(q.query, seen)
            delay = None
            if q.delay is not None:
                delay = "now" if q.delay.kind == "now" else self.ticks(q.delay.duration)
            return ToStream(q.kind, inner, delay), cols
        if isinstance(q, ast.SetOp):
            (left, cols), (right, _) = self.body(q.left, seen), self.body(q.right, seen)
            # BIGINT with DOUBLE unifies to DOUBLE (SEMANTICS.md §3): a cast below the operator.
            left, right, cols = self.unify(left, right, cols, self.columns_of(right, seen))
            return SetOp(q.op, left, right), cols
        return self.select(q, seen)

    def columns_of(self, q: Any, seen: tuple) -> list:
        if isinstance(q, ToStream):
            return self.columns_of(q.inner, seen)
        if isinstance(q, SetOp):
            return self.columns_of(q.left, seen)
        types = {
            f"{s.alias}.{c}": t for s in q.sources for c, t in self.source_columns(s.name, seen)
        }
        return [(alias, item_type(e, types)) for e, alias in q.items]

    def unify(self, left: Any, right: Any, lcols: list, rcols: list) -> tuple[Any, Any, list]:
        if len(lcols) != len(rcols):
            raise Unsupported("set operands of different widths")
        out = []
        for (name, lt), (_, rt) in zip(lcols, rcols, strict=True):
            if lt != rt and {lt, rt} != {"int", "double"}:
                raise Unsupported(f"set operands of types {lt} and {rt}")
            out.append((name, "double" if "double" in (lt, rt) else lt))
        return self.cast(left, out), self.cast(right, out), out

    def cast(self, q: Any, cols: list) -> Any:
        if not isinstance(q, Select):
            if all(t != "double" for _, t in cols):
                return q
            raise Unsupported("a cast to DOUBLE below a nested set operation")
        items = []
        for (e, alias), (_, t) in zip(q.items, cols, strict=True):
            widen = t == "double" and not isinstance(e, Agg) and self.type_of(e, q) == "int"
            items.append((Op("CAST_double", (e,)) if widen else e, alias))
        return Select(tuple(items), q.sources, q.where, q.group_by, q.having, q.distinct)

    def type_of(self, e: Any, q: Select) -> str:
        types = {f"{s.alias}.{c}": t for s in q.sources for c, t in self.columns[s.name]}
        return item_type(e, types)

    def ticks(self, d: ast.Duration) -> int:
        return d.value * TICKS[d.unit]

    def window(self, w: ast.Window | None, cols: list) -> tuple | None:
        if w is None:
            return None
        if w.kind == "now":
            return ("now",)
        if w.kind == "unbounded":
            return ("unbounded",)
        if w.kind == "range":
            return ("range", self.ticks(w.range))
        if w.kind == "range_slide":
            return ("slide", self.ticks(w.range), self.ticks(w.slide))
        if w.kind == "rows":
            return ("rows", w.rows)
        if len(w.partition_by) != 1:
            raise Unsupported("[Partition By] on several columns")
        return ("partition", w.partition_by[0].name.lower(), w.rows)

    def select(self, q: ast.Select, seen: tuple) -> tuple[Select, list]:
        scope = []
        sources = []
        for s in q.sources:
            name = s.name.lower()
            cols = self.source_columns(name, seen)
            alias = (s.alias or s.name).lower()
            scope.append((alias, cols))
            sources.append(Source(name, alias, self.window(s.window, cols)))
        types = {f"{a}.{c}": t for a, cols in scope for c, t in cols}

        def expr(e: ast.Expr) -> Any:
            if isinstance(e, ast.Literal):
                kind = {"string": "str", "null": "int"}.get(e.type, e.type)
                return Lit(e.value, kind)
            if isinstance(e, ast.ColumnRef):
                name = e.name.lower()
                owners = [
                    a
                    for a, cols in scope
                    if (e.qualifier is None or a == e.qualifier.lower())
                    and name in (c for c, _ in cols)
                ]
                if len(owners) != 1:
                    raise Unsupported(f"column {e.name} resolves to {owners}")
                return Col(f"{owners[0]}.{name}", types[f"{owners[0]}.{name}"])
            if isinstance(e, ast.Unary):
                return Op("neg" if e.op == "-" else "NOT", (expr(e.operand),))
            if isinstance(e, ast.Binary):
                return Op(e.op, (expr(e.left), expr(e.right)))
            if isinstance(e, ast.IsNull):
                return Op("ISNOTNULL" if e.negated else "ISNULL", (expr(e.operand),))
            if isinstance(e, ast.Between):
                x = expr(e.operand)
                out = Op("AND", (Op(">=", (x, expr(e.low))), Op("<=", (x, expr(e.high)))))
                return Op("NOT", (out,)) if e.negated else out
            if isinstance(e, ast.InList):
                x = expr(e.operand)
                out = None
                for item in e.items:
                    eq = Op("=", (x, expr(item)))
                    out = eq if out is None else Op("OR", (out, eq))
                return Op("NOT", (out,)) if e.negated else out
            if isinstance(e, ast.Case):
                args: list = []
                for cond, value in e.whens:
                    c = expr(cond) if e.operand is None else Op("=", (expr(e.operand), expr(cond)))
                    args += [c, expr(value)]
                if e.else_ is not None:
                    args.append(expr(e.else_))
                return Op("CASE", tuple(args))
            if isinstance(e, ast.Cast):
                return Op("CAST_" + TYPES[e.to.name], (expr(e.operand),))
            raise Unsupported(f"the expression {type(e).__name__}")

        def aggregate(e: ast.FuncCall) -> Agg:
            if e.args and isinstance(e.args[0], ast.Star):
                return Agg("COUNT", None)
            return Agg(e.name, expr(e.args[0]), e.distinct)

        items = []
        for item in q.items:
            e = item.expr
            if isinstance(e, ast.Star):
                for alias, cols in scope:
                    if e.qualifier is None or alias == e.qualifier.lower():
                        items += [(Col(f"{alias}.{c}", t), c) for c, t in cols]
                continue
            if isinstance(e, ast.FuncCall) and e.name in AGGREGATES:
                value: Any = aggregate(e)
            else:
                value = expr(e)
            if item.alias is None and not isinstance(e, ast.ColumnRef):
                raise Unsupported("a select item without a name")
            items.append((value, (item.alias or e.name).lower()))
        group_by = tuple(expr(g) for g in q.group_by) if q.group_by else None
        aggregated = group_by is not None or any(isinstance(v, Agg) for v, _ in items)
        if aggregated and any(
            not isinstance(v, Agg) and v not in (group_by or ()) for v, _ in items
        ):
            raise Unsupported("a select item that is neither an aggregate nor a GROUP BY key")
        having = None
        if q.having is not None:
            h = q.having
            if not (
                isinstance(h, ast.Binary)
                and isinstance(h.left, ast.FuncCall)
                and isinstance(h.right, ast.Literal)
                and h.right.type == "int"
            ):
                raise Unsupported("HAVING other than 'aggregate op integer'")
            having = (h.op, aggregate(h.left), h.right.value)
        sel = Select(
            tuple(items),
            tuple(sources),
            expr(q.where) if q.where is not None else None,
            group_by,
            having,
            q.distinct,
        )
        return sel, [(alias, item_type(v, types)) for v, alias in items]


# ---- a file ----------------------------------------------------------------------------------


def reference_case(path: Path) -> tuple[Evaluator, dict, set, dict]:
    """The reference's evaluator for a file, the expected rows of each query (header, rows), the
    queries to compare, and the file's options. Raises Unsupported."""
    text = path.read_text()
    where = str(path.relative_to(HERE))
    options = file_options(text, where)
    if options.get("mode", "run") != "run":
        raise Unsupported("mode=plan")
    if options.get("time_unit", "ms") != "ms" or options.get("auto_delay"):
        raise Unsupported("time_unit or auto_delay")
    inputs: dict[str, Input] = {}
    queries: dict[str, ast.Query] = {}
    data: dict[str, list] = {}
    expected: dict[str, list] = {}
    last_block_closed: dict[str, bool] = {}
    progress, started, closed = 0, False, False
    for b in parse(text, where):
        if b.kind == "statement" and not b.error:
            if started:
                raise Unsupported("statements after data (queries registered while running)")
            for st in parse_cql(b.text).statements:
                if isinstance(st, (ast.RegisterClock, ast.RegisterTable)) or (
                    isinstance(st, ast.RegisterQuery) and isinstance(st.query, ast.Master)
                ):
                    # (tests/oracle/master.py and tests/test_master.py check MASTER queries.)
                    raise Unsupported("clocks, tables and MASTER queries")
                if isinstance(st, ast.RegisterQuery):
                    queries[st.name.lower()] = st.query
                else:
                    cols = tuple((c.name.lower(), TYPES[c.type.name]) for c in st.columns)
                    inputs[st.name.lower()] = Input(
                        st.name.lower(), isinstance(st, ast.RegisterRelation), cols
                    )
        elif b.kind == "push" and not b.error:
            started = True
            name = b.args[0].lower()
            types = dict(inputs[name].columns)
            header = [c.text.lower() for c in split_csv(b.body[0].text)]
            if any(":" in h for h in header):
                raise Unsupported("typed push headers")
            for line in b.body[1:]:
                row = {}
                for h, cell in zip(header, split_csv(line.text), strict=True):
                    if h == b.ts.lower():
                        row["ts"] = int(cell.text)
                    elif h == "op":
                        row["op"] = cell.text
                    else:
                        row[h] = to_value(cell, ARROW[types[h]])
                data.setdefault(name, []).append(row)
                progress = max(progress, row["ts"])
        elif b.kind == "advance" and not b.error:
            started = True
            progress = max(progress, int(b.args[0]))
        elif b.kind == "close":
            closed = True
        elif b.kind == "query" and not b.error:
            name = b.args[0].lower()
            header = [c.text for c in split_csv(b.expected[0].text)]
            rows = [split_csv(line.text) for line in b.expected[1:]]
            expected.setdefault(name, [header, []])[1].extend(rows)
            last_block_closed[name] = closed
    if not any(last_block_closed.values()):
        raise Unsupported("no query is fetched after close")
    tr = Translator(inputs, queries)
    trees = [Query(n, tr.query(n)) for n in queries]
    ev = Evaluator(list(inputs.values()), trees, data, progress)
    return ev, expected, {n for n, c in last_block_closed.items() if c}, options


def compare(name: str, want: Any, header: list[str], rows: list) -> str | None:
    """None when the file's rows for a query are the reference's result; else what differs."""
    types = [t for _, t in want.columns]
    n = len(types)

    def values(cells) -> tuple:
        return norm_row(to_value(c, ARROW[t]) for c, t in zip(cells[:n], types, strict=True))

    def cell(cells, col: str) -> int | None:
        if col not in header:
            return None
        c = cells[header.index(col)]
        return None if c.text in ("", "NULL") else int(c.text)

    if isinstance(want, Stream):
        steps = "ts_step" in header
        mine = Counter(
            (values(r), (cell(r, "ts"), cell(r, "ts_step")) if steps else cell(r, "ts"))
            for r in rows
        )
        theirs = Counter((v, t if steps else t[0]) for v, t in want.rows)
        if mine != theirs:
            return (
                f"{name}: the file has {sorted((mine - theirs).elements(), key=repr)} too many, "
                f"{sorted((theirs - mine).elements(), key=repr)} too few"
            )
        return None
    assert isinstance(want, Relation)
    if "start_step" in header:
        tuples = [
            (
                values(r),
                (cell(r, "start"), cell(r, "start_step")),
                INF if cell(r, "end") is None else (cell(r, "end"), cell(r, "end_step")),
            )
            for r in rows
        ]
        diff = compare_relations(tuples, want.rel)
        return f"{name}: {diff}" if diff else None
    # Without the step columns a tuple [t, t) is a ghost or a tuple of one ε (alive at (t, 0)):
    # the file is right if the reference's R(t, 0) lies between the two readings at every tick.
    strict, loose = [], []
    for r in rows:
        start, end = cell(r, "start"), cell(r, "end")
        lifetime = (values(r), (start, 0), INF if end is None else (end, 0))
        if end == start:
            loose.append((values(r), (start, 0), (start, 1)))
        else:
            strict.append(lifetime)
            loose.append(lifetime)
    low, high = Rel.of_lifetimes(strict), Rel.of_lifetimes(loose)
    for tick in sorted({t for t, _ in want.rel.points} | {t for t, _ in high.points}):
        at = (tick, 0)
        ref, lo, hi = want.rel.at(at), low.at(at), high.at(at)
        if lo - ref or ref - hi:
            return f"{name}: at tick {tick}: the file has {dict(lo)} expected {dict(ref)}"
    return None


def _support(path: Path) -> str | None:
    try:
        reference_case(path)
    except Unsupported as e:
        return str(e)
    return None


FILES = sorted(HERE.rglob("*.cqlt"))
REFERENCE_FILES = [p for p in FILES if _support(p) is None]


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=lambda p: str(p.relative_to(HERE)))
def test_expected_rows_equal_the_reference(path):
    ev, expected, complete, _ = reference_case(path)
    assert complete, "no query of the file is fetched after close"
    failures = []
    for name in sorted(complete):
        want = ev.result(name)
        if want.uncertain:
            continue  # rows of one instant in an order SEMANTICS.md §4 leaves to the engine
        header, rows = expected[name]
        diff = compare(name, want, header, rows)
        if diff:
            failures.append(diff)
    assert not failures, "\n".join(failures)


def test_the_reference_covers_the_feature_folders():
    def has_rows(p: Path) -> bool:
        return any(b.kind == "query" and not b.error for b in parse(p.read_text(), str(p)))

    missing = {
        str(p.relative_to(HERE)): _support(p)
        for p in FILES
        if p.relative_to(HERE).parts[0] in COVERED and p not in REFERENCE_FILES and has_rows(p)
    }
    assert len(REFERENCE_FILES) >= 30
    assert not missing, f"files the reference cannot check: {missing}"
