"""A slow, obviously-correct evaluator of SEMANTICS.md §4 for the engine's results to be checked
against.

It shares nothing with the engine but the meaning of CQL: expressions are small trees of its own
(``Col``, ``Lit``, ``Op``) evaluated row by row with Python numbers, windows turn each input row
into a lifetime [start, end) of logical times (tick, step), and ISTREAM is computed literally as
the bag difference R(t) − R(t⁻) at every instant where something starts or ends.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

INF = (math.inf, 0)


def wrap64(x: int) -> int:
    """Two's-complement int64 wrap-around, as the engine (and Spark) do on overflow."""
    return (x + 2**63) % 2**64 - 2**63


@dataclass(frozen=True)
class Col:
    name: str
    type: str  # "int" | "double" | "str" | "bool"


@dataclass(frozen=True)
class Lit:
    value: Any
    type: str


@dataclass(frozen=True)
class Op:
    # + - * / % neg = <> < <= > >= AND OR NOT ISNULL ISNOTNULL; CASE (c1, v1, ..., [else]: an
    # odd number of args has an ELSE); CAST_int CAST_double CAST_str CAST_bool (x,)
    op: str
    args: tuple


Expr = Col | Lit | Op

# ---- CAST as Spark's non-ANSI CAST (SEMANTICS.md §3.3; src_cpp/kernels/cast.cc has the same rules)

_SPACE = "".join(map(chr, range(0x21))) + "\x7f"  # trimmed at both ends of a string


def java_long(d: float) -> int:
    """Java's (long) d: truncation toward zero, NaN is 0, saturation out of range."""
    if math.isnan(d):
        return 0
    return (
        max(-(2**63), min(2**63 - 1, int(d)))
        if math.isfinite(d)
        else (2**63 - 1 if d > 0 else -(2**63))
    )


def java_string(d: float) -> str:
    """Java's Double.toString: the shortest digits that read back as d (Python's repr has them),
    plain for exponents -3..6, else d.dddE±n."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, d) < 0 else ""
    if d == 0:
        return sign + "0.0"
    _, digit_tuple, exponent = Decimal(repr(abs(d))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    e = len(digit_tuple) + int(exponent) - 1  # d = 0.<digits> x 10^(e+1)
    if e < -3 or e > 6:
        return f"{sign}{digits[0]}.{digits[1:] or '0'}E{e}"
    if e < 0:
        return f"{sign}0.{'0' * (-e - 1)}{digits}"
    whole = digits.ljust(e + 1, "0")
    return f"{sign}{whole[: e + 1]}.{whole[e + 1 :] or '0'}"


def string_to_long(s: str) -> int | None:
    m = re.fullmatch(r"([+-]?)([0-9]*)(?:\.([0-9]*))?", s.strip(_SPACE))
    if not m or not (m.group(2) or m.group(3)):
        return None
    v = int(m.group(2) or "0") * (-1 if m.group(1) == "-" else 1)
    return v if -(2**63) <= v < 2**63 else None


def string_to_double(s: str) -> float | None:
    t = s.strip(_SPACE)
    if t.lower() == "nan" or t in ("+NaN", "-NaN"):
        return math.nan
    if t.lower() in ("inf", "+inf", "infinity", "+infinity"):
        return math.inf
    if t.lower() in ("-inf", "-infinity"):
        return -math.inf
    if re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?", t):
        return float(t.rstrip("fFdD"))
    m = re.fullmatch(
        r"([+-]?)(0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?", t
    )
    return float.fromhex(m.group(1) + m.group(2)) if m else None


def string_to_bool(s: str) -> bool | None:
    t = s.strip(_SPACE).lower()
    return (
        True
        if t in ("t", "true", "y", "yes", "1")
        else False
        if t in ("f", "false", "n", "no", "0")
        else None
    )


def cast(v: Any, from_: str, to: str) -> Any:
    if v is None or from_ == to:
        return v
    if from_ == "str":
        return {"int": string_to_long, "double": string_to_double, "bool": string_to_bool}[to](v)
    if to == "str":
        return (
            java_string(v)
            if from_ == "double"
            else ("true" if v else "false")
            if from_ == "bool"
            else str(v)
        )
    if to == "bool":
        return v != 0
    if to == "int":
        return java_long(v) if from_ == "double" else int(v)
    return float(v)


def case_values(e: Op) -> list:
    """The value arguments of a CASE: each THEN, and the ELSE if there is one."""
    return list(e.args[1::2]) + ([e.args[-1]] if len(e.args) % 2 else [])


def result_type(e: Expr) -> str:
    if isinstance(e, (Col, Lit)):
        return e.type
    if e.op.startswith("CAST_"):
        return e.op[5:]
    if e.op == "CASE":
        ts = {result_type(v) for v in case_values(e)}
        return "double" if ts == {"int", "double"} else ts.pop()
    if e.op in ("+", "-", "*", "%"):
        ts = [result_type(a) for a in e.args]
        return "double" if "double" in ts else "int"
    if e.op == "/":
        return "double"
    if e.op == "neg":
        return result_type(e.args[0])
    return "bool"


def evaluate(e: Expr, row: dict) -> Any:
    if isinstance(e, Col):
        return row[e.name]
    if isinstance(e, Lit):
        return e.value
    op = e.op
    if op == "AND":
        a, b = evaluate(e.args[0], row), evaluate(e.args[1], row)
        if a is False or b is False:
            return False
        return None if a is None or b is None else True
    if op == "OR":
        a, b = evaluate(e.args[0], row), evaluate(e.args[1], row)
        if a is True or b is True:
            return True
        return None if a is None or b is None else False
    if op == "ISNULL":
        return evaluate(e.args[0], row) is None
    if op == "ISNOTNULL":
        return evaluate(e.args[0], row) is not None
    if op == "CASE":
        # An odd count has an ELSE last: the pairs stop before it.
        for cond, value in zip(e.args[0::2], e.args[1::2], strict=False):
            if evaluate(cond, row) is True:
                return cast(evaluate(value, row), result_type(value), result_type(e))
        if len(e.args) % 2 == 0:
            return None
        return cast(evaluate(e.args[-1], row), result_type(e.args[-1]), result_type(e))
    if op.startswith("CAST_"):
        return cast(evaluate(e.args[0], row), result_type(e.args[0]), result_type(e))
    vals = [evaluate(a, row) for a in e.args]
    if any(v is None for v in vals):
        return None
    if op == "NOT":
        return not vals[0]
    if op == "neg":
        return wrap64(-vals[0]) if result_type(e) == "int" else -vals[0]
    types = [result_type(a) for a in e.args]
    a, b = vals
    if op in ("=", "<>", "<", "<=", ">", ">="):
        if "double" in types:  # the int side is compared as a double
            a, b = float(a), float(b)
        return {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if op == "/":
        return None if b == 0 else float(a) / float(b)
    if result_type(e) == "double":
        a, b = float(a), float(b)
        if op == "%":
            return None if b == 0 else math.fmod(a, b)
        return {"+": a + b, "-": a - b, "*": a * b}[op]
    if op == "%":
        if b == 0:
            return None
        r = abs(a) % abs(b)
        return wrap64(-r if a < 0 else r)
    return wrap64({"+": a + b, "-": a - b, "*": a * b}[op])


def ceil_to(x: int, s: int) -> int:
    return -((-x) // s) * s


def lifetimes(rows: list[dict], window: tuple) -> list[tuple[tuple, tuple]]:
    """(start, end) of every input row under a window, straight from SEMANTICS.md §4.1:
    ("now",) ⟨v, t, t+ε⟩ · ("range", T) ⟨v, t, t+T⟩ · ("unbounded",) ⟨v, t, ∞⟩ ·
    ("slide", T, S) ⟨v, ⌈t/S⌉S, ⌈(t+T)/S⌉S⟩ · ("rows", N) ⟨v, t_i, t_{i+N}⟩ ·
    ("partition", key, N) the same within each value of column `key` (arrival order)."""
    ts = [r["ts"] for r in rows]
    kind = window[0]
    if kind == "now":
        return [((t, 0), (t, 1)) for t in ts]
    if kind == "range":
        return [((t, 0), (t + window[1], 0)) for t in ts]
    if kind == "unbounded":
        return [((t, 0), INF) for t in ts]
    if kind == "slide":
        T, S = window[1], window[2]
        return [((ceil_to(t, S), 0), (ceil_to(t + T, S), 0)) for t in ts]
    if kind == "rows":
        N = window[1]
        return [((t, 0), (ts[i + N], 0) if i + N < len(ts) else INF) for i, t in enumerate(ts)]
    assert kind == "partition"
    key, N = window[1], window[2]
    out = []
    for i, r in enumerate(rows):
        later = [j for j in range(i + 1, len(rows)) if rows[j][key] == r[key]]
        end = (ts[later[N - 1]], 0) if len(later) >= N else INF
        out.append(((ts[i], 0), end))
    return out


def relation(
    rows: list[dict], window: tuple, where: Expr | None, select: list[Expr]
) -> list[tuple[tuple, tuple, tuple]]:
    """The lifetime tuples (values, start, end) of SELECT select FROM s [window] WHERE where.
    The window applies to the stream first, the WHERE to the relation (a row filtered out still
    counts in a row window)."""
    out = []
    for r, (start, end) in zip(rows, lifetimes(rows, window), strict=True):
        if where is not None and evaluate(where, r) is not True:
            continue
        out.append((tuple(evaluate(e, r) for e in select), start, end))
    return out


def change_lifetimes(changes: list[dict], columns: list[str]) -> list[tuple[tuple, tuple, tuple]]:
    """The lifetime tuples (values, start, end) of a REGISTER RELATION input (SEMANTICS.md §6): a
    table of changes in time order, each row an insert (``op`` '+', or no ``op``) or a delete ('-').
    An insert at t starts a copy [t, ...); a delete at t ends the oldest copy of its values still
    alive (bag semantics, NULL equals NULL); copies alive at the end never end. A delete with no
    alive copy raises ValueError."""
    copies: list[list] = []  # [values, start, end or None], in insertion order: oldest first
    for i, r in enumerate(changes):
        v, t = tuple(r[c] for c in columns), (r["ts"], 0)
        if r.get("op", "+") == "+":
            copies.append([v, t, None])
            continue
        alive = [c for c in copies if c[2] is None and c[0] == v]
        if not alive:
            raise ValueError(f"row {i} deletes {v}, which is not alive")
        alive[0][2] = t
    return [(v, s, INF if e is None else e) for v, s, e in copies]


def _changes(rel) -> tuple[dict, dict]:
    """Bags of the values starting and ending at each instant."""
    starts: dict[tuple, Counter] = {}
    ends: dict[tuple, Counter] = {}
    for v, s, e in rel:
        starts.setdefault(s, Counter())[v] += 1
        ends.setdefault(e, Counter())[v] += 1
    return starts, ends


def _difference(first: dict, second: dict) -> Counter:
    """Counter of (values, t) for first(t) − second(t) as bags, at every finite instant."""
    out: Counter = Counter()
    for t, bag in first.items():
        if t != INF:
            for v, n in (bag - second.get(t, Counter())).items():
                out[(v, t)] += n
    return out


def istream(rel: list[tuple[tuple, tuple, tuple]]) -> Counter:
    """ISTREAM as bags per instant: Counter of (values, instant) for v in R(t) − R(t⁻)."""
    starts, ends = _changes(rel)
    return _difference(starts, ends)


def dstream(rel: list[tuple[tuple, tuple, tuple]]) -> Counter:
    """DSTREAM as bags per instant: Counter of (values, instant) for v in R(t⁻) − R(t)."""
    starts, ends = _changes(rel)
    return _difference(ends, starts)


def rstream(rel: list[tuple[tuple, tuple, tuple]], p: int) -> Counter:
    """RSTREAM as bags per tick (SEMANTICS.md §4.3): all of R((T, 0)) at every tick T while R is
    non-empty, up to ``p``, the engine's progress before close() (the latest timestamp or advance of
    any of its inputs), and beyond ``p`` only while R(T) holds a tuple that ends at a finite time —
    read as a relation, whatever the physical tuples: some value's multiplicity drops below its
    multiplicity at T at some later instant."""
    out: Counter = Counter()
    if not rel:
        return out
    changes = instants(rel)
    first = min(s[0] for _, s, _ in rel)
    last = max([p] + [t[0] for t in changes])
    for tick in range(first, last + 1):
        now = alive_at(rel, (tick, 0))
        if not now:
            continue
        if tick > p and not any(
            alive_at(rel, t)[v] < n for t in changes if t > (tick, 0) for v, n in now.items()
        ):
            continue
        for v, n in now.items():
            out[(v, (tick, 0))] += n
    return out


def alive_at(rel, t) -> Counter:
    return Counter(v for v, s, e in rel if s <= t < e)


def equivalent(rel_a, rel_b) -> bool:
    """Equal R(t) at every instant where either relation changes (SEMANTICS.md §4.8; ghosts
    allowed)."""
    instants = (
        {s for _, s, _ in rel_a}
        | {e for _, _, e in rel_a}
        | {s for _, s, _ in rel_b}
        | {e for _, _, e in rel_b}
    )
    return all(alive_at(rel_a, t) == alive_at(rel_b, t) for t in instants)


def instants(*rels) -> list[tuple]:
    """Every instant at which one of the relations changes, in order."""
    return sorted(
        {s for rel in rels for _, s, _ in rel} | {e for rel in rels for _, _, e in rel if e != INF}
    )


def join_at(t, left, right, on) -> Counter:
    """The SQL join of left(t) and right(t) (lists of (values, start, end)) on on(lv, rv)."""
    lv = [v for v, s, e in left if s <= t < e]
    rv = [v for v, s, e in right if s <= t < e]
    return Counter(a + b for a in lv for b in rv if on(a, b))


def dstream_of(at, points) -> Counter:
    """DSTREAM of a relation given as R(t) at its change instants: R(previous instant) − R(t)."""
    return _changes_of(at, points, inserted=False)


def istream_of(at, points) -> Counter:
    """ISTREAM of a relation given as R(t) at its change instants: R(t) − R(previous instant)."""
    return _changes_of(at, points, inserted=True)


def _changes_of(at, points, inserted: bool) -> Counter:
    out: Counter = Counter()
    before: Counter = Counter()
    for t in points:
        now = at(t)
        for v, n in ((now - before) if inserted else (before - now)).items():
            out[(v, t)] += n
        before = now
    return out


# ---- resources (paper 002) ---------------------------------------------------------------------


def frozen_resource(rows: list[dict], columns: list[str]) -> list[tuple[tuple, tuple, tuple]]:
    """A resource frozen at one version: a static relation, every row alive at every instant."""
    return [(tuple(r[c] for c in columns), (-math.inf, 0), INF) for r in rows]


def reference_join(
    left: list[tuple[tuple, tuple, tuple]],
    version_at,
    on,
) -> list[tuple[tuple, tuple, tuple]]:
    """The lifetime tuples of a stream's windowed rows ``left`` (values, start, end) joined with
    a resource read when each row is processed: ``version_at(k, start)`` is the resource frozen at
    the version the k-th row read (``frozen_resource``), and a result lives as its stream row does.
    Joined with one version throughout, this is the join of two relations at every instant."""
    out = []
    for k, (lv, s, e) in enumerate(left):
        for rv, _, _ in version_at(k, s):
            if on(lv, rv):
                out.append((lv + rv, s, e))
    return out
