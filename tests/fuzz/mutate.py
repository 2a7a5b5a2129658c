"""Seeds and mutations of the crash fuzzer (see README.md here).

Seeds are the conformance scripts (every ``statement`` block of ``tests/conformance/**/*.cqlt``,
after the ``statement ok`` blocks before it, with the file's engine options) and the examples
(``examples/**/*.cql``). A case is one seed mutated a few times, at the token level (delete,
duplicate, swap, replace by other tokens and keywords, splice statements of another script,
numbers made extreme, windows / delays / types / aggregates / stream and set operators changed)
or at the byte level (random bytes, invalid UTF-8, NULs, very long names, truncation), with
engine options varied. ``case(seed, k)`` is a pure function of its arguments: a run of N cases
is the same whatever the order, the parallelism or the machine.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from cq_py.parser.tokenizer import KEYWORDS, tokenize

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "tests" / "conformance"
EXAMPLES = ROOT / "examples"
# Scripts of paper 002's resources and models (the conformance files and examples have none).
STORE_SEEDS = Path(__file__).resolve().parent / "seeds"
# The share of cases drawn from the seeds that register resources or models.
STORE_SHARE = 0.25

# Engine options a conformance file may set that a case keeps (mode is the runner's own).
ENGINE_OPTIONS = ("time_unit", "lifetime", "executor", "auto_delay", "expose_steps", "hybrid")


@dataclass(frozen=True)
class Seed:
    name: str  # file (and line of the statement block)
    text: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Case:
    """One input: CQL text and engine options; ``origin`` says how it was made, for reports;
    ``data_seed`` seeds the rows the worker pushes."""

    text: str
    options: dict[str, Any]
    origin: str
    data_seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "options": self.options,
            "origin": self.origin,
            "data_seed": self.data_seed,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> Case:
        return Case(d["text"], d["options"], d.get("origin", ""), d.get("data_seed", 0))


# =============================================================================================
# Seeds
# =============================================================================================


@lru_cache(maxsize=1)
def seeds() -> tuple[Seed, ...]:
    """Every seed script, in a fixed order."""
    from conformance.cqlt import file_options, parse  # tests/ is on the path (pyproject.toml)

    out: list[Seed] = []
    for path in sorted(CONFORMANCE.rglob("*.cqlt")):
        text = path.read_text()
        name = str(path.relative_to(ROOT))
        opts = {k: v for k, v in file_options(text, name).items() if k in ENGINE_OPTIONS}
        accepted: list[str] = []
        for block in parse(text, name):
            if block.kind != "statement":
                continue
            out.append(Seed(f"{name}:{block.lineno}", "\n".join([*accepted, block.text]), opts))
            if not block.error:
                accepted.append(block.text)
    out.extend(
        Seed(str(path.relative_to(ROOT)), path.read_text(), {})
        for path in [*sorted(EXAMPLES.rglob("*.cql")), *sorted(STORE_SEEDS.glob("*.cql"))]
    )
    return tuple(out)


def _uses_store(toks: list[str] | tuple[str, ...]) -> bool:
    """Whether the tokens register a resource or a model."""
    return any(
        a.upper() == "REGISTER" and b.upper() in ("RESOURCE", "MODEL")
        for a, b in itertools.pairwise(toks)
    )


@lru_cache(maxsize=1)
def store_seeds() -> tuple[int, ...]:
    """The indices of the seeds that register resources or models."""
    return tuple(i for i, toks in enumerate(_seed_tokens()) if _uses_store(toks))


def _tokens(text: str) -> list[str]:
    """The script's tokens as text; a text that does not tokenize is split at white space."""
    try:
        return [t.text for t in tokenize(text) if t.text]
    except Exception:  # noqa: BLE001 - whatever the tokenizer does with it, the fuzzer goes on
        return text.split()


@lru_cache(maxsize=1)
def _seed_tokens() -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(_tokens(s.text)) for s in seeds())


# =============================================================================================
# Material for mutations
# =============================================================================================

# Words the parser reads by context, next to the reserved ones.
CONTEXT_WORDS = [
    "Now",
    "Range",
    "Rows",
    "Slide",
    "Unbounded",
    "Partition",
    "STREAM",
    "RELATION",
    "QUERY",
    "ms",
    "s",
    "min",
    "h",
    "d",
    "SECONDS",
    "MILLISECONDS",
    "DAYS",
    "INT",
    "BIGINT",
    "DOUBLE",
    "VARCHAR",
    "BOOLEAN",
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "ts",
    "start",
    "end",
    "op",
    "ts_step",
]
OPERATORS = [
    "(",
    ")",
    ",",
    ";",
    ".",
    "[",
    "]",
    "<",
    ">",
    "<=",
    ">=",
    "<>",
    "!=",
    "=",
    "+",
    "-",
    "*",
    "/",
    "%",
]
LITERALS = [
    "NULL",
    "TRUE",
    "FALSE",
    "''",
    "'x'",
    "'a''b'",
    "1.5",
    "0",
    "-1",
    "1e308",
    '"q"',
    "'\u00e9'",
    "2",
]
EXTREME_NUMBERS = [
    "0",
    "-1",
    "1",
    "2",
    "7",
    "2147483648",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551616",
    "1" + "0" * 30,
    "9" * 400,
    "9" * 5000,
    "0.0",
    "-0.0",
    "1e308",
    "1e309",
    "1e-400",
    "4.9e-324",
    "1.7976931348623157e308",
    "0001",
    "1.",
    ".5",
]
WINDOWS = [
    "[Now]",
    "[Range 0]",
    "[Range 1]",
    "[Range 3]",
    "[Range Unbounded]",
    "[Range 9223372036854775807]",
    "[Range 9223372036854775808]",
    "[Range 1 d]",
    "[Range 106752 d]",
    "[Range 1 ms]",
    "[Range 2 SECONDS]",
    "[Rows 0]",
    "[Rows 1]",
    "[Rows 3]",
    "[Rows 9223372036854775807]",
    "[Range 4 Slide 2]",
    "[Range 2 Slide 4]",
    "[Range 0 Slide 1]",
    "[Range 5 Slide 0]",
    "[Range 9223372036854775807 Slide 1]",
    "[Range 3 Slide 9223372036854775807]",
    "[Partition By a Rows 2]",
    "[Partition By a, b Rows 1]",
    "[Partition By zz Rows 1]",
    "[Partition By k Rows 0]",
    "[Now Now]",
    "[]",
    "[",
    "[Range]",
    "[Rows -1]",
]
DELAYS = [
    "<Now>",
    "<1>",
    "<2>",
    "<0>",
    "<9223372036854775807>",
    "<9223372036854775808>",
    "<1 SECOND>",
    "<1 d>",
    "<Range>",
    "<>",
    "<Now",
    "<-1>",
]
TYPES = [
    "INT",
    "BIGINT",
    "INTEGER",
    "DOUBLE",
    "FLOAT",
    "REAL",
    "VARCHAR",
    "VARCHAR(0)",
    "VARCHAR(3)",
    "CHAR(1)",
    "STRING",
    "BOOLEAN",
    "BOOL",
    "DATE",
    "TIMESTAMP",
]
AGGREGATES = ["COUNT", "SUM", "AVG", "MIN", "MAX", "FOO", "count", "Sum"]
STREAM_OPS = ["ISTREAM", "DSTREAM", "RSTREAM"]
SET_OPS = [["UNION"], ["UNION", "ALL"], ["EXCEPT"], ["INTERSECT"], ["EXCEPT", "ALL"]]
# Characters that have broken tokenizers: controls, NUL, BOM, zero-width, line separators that
# str.splitlines() honours and '\n'-counting does not, letters whose case maps change length or
# land on ASCII, digits of other scripts, a lone surrogate, an emoji.
ODD_CHARS = [
    "\x00",
    "\x01",
    "\x7f",
    "\ufeff",
    "\u200b",
    "\u2028",
    "\x0b",
    "\x0c",
    "\x85",
    "\r",
    "\t",
    "\u00e9",
    "\u00df",
    "\u0131",
    "\ufb01",
    "\u0663",
    "\u00b2",
    "\ud800",
    "\U0001f600",
    "\\",
    '"',
    "'",
    "`",
    "$",
    "#",
    "@",
    "?",
    "{",
    "}",
    "|",
    "&",
    "^",
    "~",
]
TYPE_WORDS = {t.upper() for t in TYPES} | {"VARCHAR", "CHAR"}
AGGREGATE_WORDS = {"COUNT", "SUM", "AVG", "MIN", "MAX"}


@lru_cache(maxsize=1)
def token_pool() -> tuple[str, ...]:
    corpus = {t for toks in _seed_tokens() for t in toks}
    return tuple(sorted(corpus | KEYWORDS | set(CONTEXT_WORDS) | set(OPERATORS) | set(LITERALS)))


def _is_number(tok: str) -> bool:
    return bool(tok) and (tok[0].isdigit() or (tok[0] == "." and tok[1:2].isdigit()))


def _is_name(tok: str) -> bool:
    return bool(tok) and (tok[0].isalpha() or tok[0] == "_") and tok.upper() not in KEYWORDS


def _span(toks: list[str], start: int, open_: str, close: str) -> int:
    """The index just after the ``close`` matching ``toks[start] == open_`` (or the end)."""
    depth = 0
    for j in range(start, len(toks)):
        if toks[j] == open_:
            depth += 1
        elif toks[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(toks)


def _statements(toks: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for t in toks:
        out[-1].append(t)
        if t == ";":
            out.append([])
    return [s for s in out if s]


# =============================================================================================
# Token-level mutations: each takes (rng, tokens) and changes tokens in place; returns its name.
# =============================================================================================

Mutation = Callable[[random.Random, list[str]], str]


def m_delete(rng: random.Random, toks: list[str]) -> str:
    i = rng.randrange(len(toks))
    del toks[i : i + rng.choice([1, 1, 2, 3])]
    return "delete"


def m_duplicate(rng: random.Random, toks: list[str]) -> str:
    i = rng.randrange(len(toks))
    k = rng.choice([1, 1, 2, 4])
    toks[i:i] = toks[i : i + k]
    return "duplicate"


def m_swap(rng: random.Random, toks: list[str]) -> str:
    i = rng.randrange(len(toks))
    j = min(i + 1, len(toks) - 1) if rng.random() < 0.5 else rng.randrange(len(toks))
    toks[i], toks[j] = toks[j], toks[i]
    return "swap"


def m_replace(rng: random.Random, toks: list[str]) -> str:
    toks[rng.randrange(len(toks))] = rng.choice(token_pool())
    return "replace"


def m_insert(rng: random.Random, toks: list[str]) -> str:
    toks.insert(rng.randrange(len(toks) + 1), rng.choice(token_pool()))
    return "insert"


def m_keyword(rng: random.Random, toks: list[str]) -> str:
    words = sorted(KEYWORDS) + CONTEXT_WORDS
    toks[rng.randrange(len(toks))] = rng.choice(words)
    return "keyword"


def m_splice(rng: random.Random, toks: list[str]) -> str:
    """A statement of another seed inserted at a statement boundary, or in place of one."""
    other = _statements(list(rng.choice(_seed_tokens())))
    if not other:
        return "splice(none)"
    piece = rng.choice(other)
    mine = _statements(toks)
    k = rng.randrange(len(mine) + 1)
    if mine and rng.random() < 0.4:
        mine[min(k, len(mine) - 1)] = piece
    else:
        mine.insert(k, piece)
    toks[:] = [t for s in mine for t in s]
    return "splice"


def m_splice_run(rng: random.Random, toks: list[str]) -> str:
    """A run of a few tokens of another seed, anywhere."""
    other = rng.choice(_seed_tokens())
    if not other:
        return "splice_run(none)"
    i = rng.randrange(len(other))
    toks[rng.randrange(len(toks) + 1) : 0] = other[i : i + rng.randint(1, 8)]
    return "splice_run"


def m_number(rng: random.Random, toks: list[str]) -> str:
    spots = [i for i, t in enumerate(toks) if _is_number(t)]
    i = rng.choice(spots) if spots else rng.randrange(len(toks))
    unit = toks[i].lstrip("0123456789") if spots else ""
    value = rng.choice(EXTREME_NUMBERS)
    if unit.isalpha() and rng.random() < 0.5:
        value += unit  # a glued unit kept: 10ms -> 9223372036854775808ms
    if rng.random() < 0.2:
        toks[i : i + 1] = ["-", value]
    else:
        toks[i] = value
    return "number"


def m_window(rng: random.Random, toks: list[str]) -> str:
    spots = [i for i, t in enumerate(toks) if t == "["]
    new = _tokens(rng.choice(WINDOWS)) or ["["]
    if not spots:
        after = [i + 1 for i, t in enumerate(toks) if _is_name(t)]
        toks[rng.choice(after) if after else 0 : 0] = new
        return "window(added)"
    i = rng.choice(spots)
    toks[i : _span(toks, i, "[", "]")] = new
    return "window"


def m_delay(rng: random.Random, toks: list[str]) -> str:
    new = rng.choice(DELAYS).replace("<", "< ").replace(">", " >").split()
    spots = [i for i in range(1, len(toks)) if toks[i] == "<" and toks[i - 1] == ")"]
    if spots and rng.random() < 0.7:
        i = rng.choice(spots)
        end = next((j + 1 for j in range(i, min(i + 5, len(toks))) if toks[j] == ">"), i + 1)
        toks[i:end] = new
        return "delay"
    closes = [i + 1 for i, t in enumerate(toks) if t == ")"]
    toks[rng.choice(closes) if closes else len(toks) : 0] = new
    return "delay(added)"


def m_type(rng: random.Random, toks: list[str]) -> str:
    spots = [i for i, t in enumerate(toks) if t.upper() in TYPE_WORDS]
    if not spots:
        return m_replace(rng, toks)
    i = rng.choice(spots)
    end = _span(toks, i + 1, "(", ")") if i + 1 < len(toks) and toks[i + 1] == "(" else i + 1
    toks[i:end] = _tokens(rng.choice(TYPES))
    return "type"


def m_aggregate(rng: random.Random, toks: list[str]) -> str:
    spots = [i for i, t in enumerate(toks) if t.upper() in AGGREGATE_WORDS]
    if not spots:
        names = [i for i, t in enumerate(toks) if _is_name(t)]
        if not names:
            return m_replace(rng, toks)
        i = rng.choice(names)
        toks[i : i + 1] = [rng.choice(AGGREGATES), "(", toks[i], ")"]
        return "aggregate(added)"
    i = rng.choice(spots)
    r = rng.random()
    if r < 0.5:
        toks[i] = rng.choice(AGGREGATES)
    elif r < 0.7 and i + 1 < len(toks) and toks[i + 1] == "(":
        toks.insert(i + 2, "DISTINCT")
    elif i + 1 < len(toks) and toks[i + 1] == "(":
        toks[i + 2 : _span(toks, i + 1, "(", ")") - 1] = rng.choice(
            [["*"], [], ["1", ",", "2"], ["NULL"], ["COUNT", "(", "*", ")"]]
        )
    return "aggregate"


def m_stream_op(rng: random.Random, toks: list[str]) -> str:
    spots = [i for i, t in enumerate(toks) if t.upper() in STREAM_OPS]
    if spots and rng.random() < 0.6:
        toks[rng.choice(spots)] = rng.choice(STREAM_OPS)
        return "stream_op"
    selects = [i for i, t in enumerate(toks) if t.upper() == "SELECT"]
    if not selects:
        return m_keyword(rng, toks)
    i = rng.choice(selects)
    end = next((j for j in range(i, len(toks)) if toks[j] == ";"), len(toks))
    toks[i:end] = [rng.choice(STREAM_OPS), "(", *toks[i:end], ")"]
    return "stream_op(added)"


def m_set_op(rng: random.Random, toks: list[str]) -> str:
    spots = [i for i, t in enumerate(toks) if t.upper() in ("UNION", "EXCEPT", "INTERSECT")]
    if spots:
        i = rng.choice(spots)
        end = i + 2 if i + 1 < len(toks) and toks[i + 1].upper() == "ALL" else i + 1
        toks[i:end] = rng.choice(SET_OPS)
        return "set_op"
    # Close a query's SELECT with a set operation over a copy of itself.
    selects = [i for i, t in enumerate(toks) if t.upper() == "SELECT"]
    if not selects:
        return m_keyword(rng, toks)
    i = rng.choice(selects)
    end = next((j for j in range(i, len(toks)) if toks[j] in (";", ")")), len(toks))
    toks[end:end] = rng.choice(SET_OPS) + toks[i:end]
    return "set_op(added)"


def m_rename(rng: random.Random, toks: list[str]) -> str:
    """A name replaced by another name of the script (names confused), or by a huge one."""
    spots = [i for i, t in enumerate(toks) if _is_name(t)]
    if not spots:
        return m_insert(rng, toks)
    i = rng.choice(spots)
    if rng.random() < 0.85:
        toks[i] = toks[rng.choice(spots)]
        return "rename"
    toks[i] = rng.choice(["x" * 100_000, "\u00e9" * 20_000, '"' + "q" * 50_000 + '"', "_"])
    return "rename(long)"


def m_long_chain(rng: random.Random, toks: list[str]) -> str:
    """An operand made into a long chain, or nested deep: flat chains plan, deep nesting is a
    positioned error."""
    # (Not a name made huge by rename(long): 1,000 copies of it are a 20 MB text, which takes
    # seconds per pass to read, and the case's timeout then.)
    spots = [i for i, t in enumerate(toks) if (_is_name(t) or _is_number(t)) and len(t) < 1000]
    if not spots:
        return m_insert(rng, toks)
    i = rng.choice(spots)
    n = rng.choice([50, 200, 1000])
    op = rng.choice(["AND", "OR", "+", "-", "*", "UNION ALL"])
    kind = rng.random()
    if kind < 0.5:
        toks[i : i + 1] = (f" {op} ".join([toks[i]] * n)).split()
    elif kind < 0.75:
        toks[i : i + 1] = ["("] * n + [toks[i]] + [")"] * n
    else:
        toks[i : i + 1] = [toks[i], "IN", "(", *", ".join(str(k) for k in range(n)).split(), ")"]
    return "long_chain"


# Mutations that keep a script's shape (mostly valid: it runs, with odd values and constructs)...
SHAPE_MUTATIONS: list[tuple[Mutation, int]] = [
    (m_number, 5),
    (m_window, 5),
    (m_delay, 3),
    (m_type, 3),
    (m_aggregate, 3),
    (m_stream_op, 3),
    (m_set_op, 3),
    (m_rename, 3),
    (m_splice, 4),
    (m_long_chain, 1),
]
# ... and those that break it anywhere (the parser's and the checks' errors).
RAW_MUTATIONS: list[tuple[Mutation, int]] = [
    (m_delete, 6),
    (m_duplicate, 4),
    (m_swap, 4),
    (m_replace, 6),
    (m_insert, 4),
    (m_keyword, 4),
    (m_splice_run, 2),
]


# =============================================================================================
# Byte-level mutations: text in, text out.
# =============================================================================================


def b_random_bytes(rng: random.Random, text: str) -> str:
    data = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(data) + 1)
        if data and rng.random() < 0.5:
            data[min(i, len(data) - 1)] = rng.randrange(256)
        else:
            data[i:i] = bytes([rng.randrange(256)])
    # Invalid UTF-8 reaches a str API as U+FFFD or as lone surrogates (surrogateescape).
    return data.decode("utf-8", rng.choice(["replace", "surrogateescape"]))


def b_invalid_utf8(rng: random.Random, text: str) -> str:
    data = bytearray(text.encode("utf-8", "surrogatepass"))
    bad = rng.choice(
        [b"\xff", b"\xc0\x80", b"\xe2\x82", b"\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]
    )
    i = rng.randrange(len(data) + 1)
    data[i:i] = bad
    return data.decode("utf-8", rng.choice(["replace", "surrogateescape"]))


def b_odd_chars(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        text = text[:i] + rng.choice(ODD_CHARS) + text[i:]
    return text


def b_truncate(rng: random.Random, text: str) -> str:
    return text[: rng.randrange(len(text) + 1)]


def b_long_literal(rng: random.Random, text: str) -> str:
    i = rng.randrange(len(text) + 1)
    piece = rng.choice(
        [
            "'" + "s" * 200_000 + "'",
            " " * 100_000,
            "-- " + "c" * 100_000 + "\n",
            "/* " + "*" * 100_000 + " */",
            "9" * 100_000,
            "((((((((((" * 20,
        ]
    )
    return text[:i] + piece + text[i:]


BYTE_MUTATIONS: list[tuple[Callable[[random.Random, str], str], int]] = [
    (b_random_bytes, 4),
    (b_invalid_utf8, 2),
    (b_odd_chars, 4),
    (b_truncate, 2),
    (b_long_literal, 1),
]


def _pick(rng: random.Random, weighted: list[tuple[Any, int]]) -> Any:
    return rng.choices([m for m, _ in weighted], [w for _, w in weighted])[0]


def _options(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    opts = dict(base)
    if rng.random() < 0.3:
        opts["executor"] = rng.choice(["dts", "heartbeat"])
    if rng.random() < 0.3:
        opts["lifetime"] = rng.choice(["direct", "negative"])
    if rng.random() < 0.2:
        opts["hybrid"] = rng.choice([True, False])
    if rng.random() < 0.1:
        opts["time_unit"] = rng.choice(["s", "ms", "us", "ns"])
    if rng.random() < 0.15:
        opts["auto_delay"] = not opts.get("auto_delay", False)
    if rng.random() < 0.1:
        opts["expose_steps"] = not opts.get("expose_steps", False)
    return opts


def _store_options(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    """Options of a script with resources or models: the scheduled executor with a store (the
    worker makes it), a transaction strategy, a redo policy, a batch size, the gatekeeper on or
    off — or, now and then, the other executors' mix (which refuses resources)."""
    if rng.random() < 0.1:
        return {**_options(rng, base), "resources": True}
    opts = dict(base)
    opts.update(
        executor="scheduled",
        resources=True,
        txn=rng.choice(["none", "none", "2pl", "snapshot", "optimistic"]),
        redo=rng.choice(["always", "on_change"]),
        batch=rng.choice([1, 1, 2, 3, 50]),
        gatekeeper=rng.random() < 0.7,
        threads=rng.choice([1, 1, 1, 2]),
        lock_timeout=rng.choice([0.0, 0.5]),
    )
    if rng.random() < 0.5:
        opts["scheduler"] = "round_robin"
    if rng.random() < 0.1:
        opts["time_unit"] = rng.choice(["s", "ms"])
    if rng.random() < 0.1:
        opts["expose_steps"] = True
    return opts


def case(seed: int, k: int, store_share: float = STORE_SHARE) -> Case:
    """Case ``k`` of a run seeded ``seed``: half of the cases only change a script's values and
    constructs (so that most of them run), a third break its syntax too, the rest also get
    byte-level damage. A share ``store_share`` of them start from a script of resources and
    models (runs over them alone take 1.0)."""
    rng = random.Random(f"cq-fuzz:{seed}:{k}")
    store = rng.random() < store_share
    i = rng.choice(store_seeds()) if store else rng.randrange(len(seeds()))
    toks = list(_seed_tokens()[i])
    r = rng.random()
    mutations = SHAPE_MUTATIONS if r < 0.5 else SHAPE_MUTATIONS + RAW_MUTATIONS
    done: list[str] = []
    for _ in range(rng.choice([1, 1, 2, 2, 3, 4])):
        if not toks:
            toks = ["REGISTER"]
        done.append(_pick(rng, mutations)(rng, toks))
    text = " ".join(toks)
    if r >= 0.85:
        mutation = _pick(rng, BYTE_MUTATIONS)
        text = mutation(rng, text)
        done.append(mutation.__name__[2:])
    options = _store_options if _uses_store(toks) else _options
    return Case(
        text,
        options(rng, seeds()[i].options),
        f"{seeds()[i].name} + {', '.join(done)}",
        data_seed=rng.randrange(2**32),
    )
