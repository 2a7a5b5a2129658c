"""P1–P8 of paper 004 §6.2: ten query windows per pattern, built from the section's rules and
checked against the MQT execution orders it lists.

The rules (§6.2, Fig. 6 being an image, read from the text): windows w1 ≤ … ≤ w10 = 3,000 ms; the
gaps between consecutive windows (the first gap is w1 itself) either rise from 1 (eq. 1) or do not
increase from 500 (eq. 2); with a *jump*, the gap after e = 20, 50 or 80 % of the queries is M, with
d < M < max (d the last gap). Without a jump the sequence is eq. 1 or eq. 2 throughout.

    pattern  gaps             jump after   §6.2's MQT order
    P1       rising           -            1,2,3,4,5,6,7,8,9,10
    P2       non-increasing   -            1-10
    P3       rising           50 %         1,2,3,4,5,6-10
    P4       non-increasing   50 %         1-5,6-10
    P5       rising           20 %         1,2,3-10
    P6       non-increasing   20 %         1-10
    P7       rising           80 %         1,2,3,4,5,6,7,8,9-10
    P8       non-increasing   80 %         1-8,9-10

The construction: rising gaps 1, 1 + s, 1 + 2s, … (s = 66 without a jump, the rounding added to the
last gap; s = 50 before a jump, steps of 10 after it, continuing from the gap before the jump);
non-increasing gaps 500 then equal gaps (2,500 spread over nine, the larger first, without a jump;
200 before and after a jump). M takes what is left of 3,000.

    python benchmarks/papers/004/patterns.py           # check patterns.json (exit 1 on a mismatch)
    python benchmarks/papers/004/patterns.py --write   # write it anew

The C++ tests (src_cpp/tests/swj_scheduler_test.cc) read the same file and check the orders with
the engine's own MQT matrix.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from fractions import Fraction
from pathlib import Path

N = 10
MAX = 3000
HERE = Path(__file__).resolve().parent
FILE = HERE / "patterns.json"

# (name, kind, jump after this many queries or None, the order §6.2 lists)
PATTERNS: list[tuple[str, str, int | None, str]] = [
    ("P1", "rising", None, "1,2,3,4,5,6,7,8,9,10"),
    ("P2", "non-increasing", None, "1-10"),
    ("P3", "rising", 5, "1,2,3,4,5,6-10"),
    ("P4", "non-increasing", 5, "1-5,6-10"),
    ("P5", "rising", 2, "1,2,3-10"),
    ("P6", "non-increasing", 2, "1-10"),
    ("P7", "rising", 8, "1,2,3,4,5,6,7,8,9-10"),
    ("P8", "non-increasing", 8, "1-8,9-10"),
]


def gaps_of(kind: str, jump: int | None) -> list[int]:
    """The ten gaps of a pattern (the first is w1)."""
    if jump is None:
        if kind == "rising":
            gaps = [1 + 66 * i for i in range(N)]
            gaps[-1] += MAX - sum(gaps)
            return gaps
        rest = MAX - 500
        q, r = divmod(rest, N - 1)
        return [500] + [q + 1] * r + [q] * (N - 1 - r)
    if kind == "rising":
        before = [1 + 50 * i for i in range(jump)]
        after = [before[-1] + 10 * (i + 1) for i in range(N - jump - 1)]
    else:
        before = [500] + [200] * (jump - 1)
        after = [200] * (N - jump - 1)
    return [*before, MAX - sum(before) - sum(after), *after]


def windows_of(gaps: list[int]) -> list[int]:
    out, w = [], 0
    for g in gaps:
        w += g
        out.append(w)
    return out


def mqt_order(windows: list[int]) -> str:
    """The segments of the MQT matrix R[j][k] = (k − j)/(w_k − w_j), w_0 = 0: from level j the
    largest R (ties: the largest k), as §6.2 writes them. Exact, on fractions."""
    w = [0, *windows]
    n = len(windows)
    parts, j = [], 0
    while j < n:
        best = max(range(j + 1, n + 1), key=lambda k: (Fraction(k - j, w[k] - w[j]), k))
        parts.append(str(j + 1) if best == j + 1 else f"{j + 1}-{best}")
        j = best
    return ",".join(parts)


def rule_errors(kind: str, jump: int | None, gaps: list[int]) -> list[str]:
    """What in ``gaps`` breaks §6.2's rules."""
    errs = []
    if len(gaps) != N or sum(gaps) != MAX:
        errs.append(f"expected {N} gaps summing to {MAX}, found {len(gaps)} summing to {sum(gaps)}")
    seq = [g for i, g in enumerate(gaps) if jump is None or i != jump]
    pairs = list(itertools.pairwise(seq))
    if kind == "rising" and (seq[0] != 1 or any(a >= b for a, b in pairs)):
        errs.append(f"expected gaps rising from 1 (eq. 1), found {seq}")
    if kind == "non-increasing" and (seq[0] != 500 or any(a < b for a, b in pairs)):
        errs.append(f"expected gaps not increasing from 500 (eq. 2), found {seq}")
    if jump is not None:
        m = gaps[jump]
        if not (gaps[-1] < m < MAX) or m <= max(seq):
            errs.append(f"expected a jump d < M < {MAX} above every other gap, found M = {m}")
    return errs


def build() -> dict[str, object]:
    out: dict[str, object] = {
        "source": "paper 004 §6.2 (see patterns.py for the rules and the construction)",
        "queries": N,
        "max_window_ms": MAX,
        "patterns": {},
    }
    patterns: dict[str, object] = {}
    for name, kind, jump, order in PATTERNS:
        gaps = gaps_of(kind, jump)
        patterns[name] = {
            "gaps": kind,
            "jump_after_percent": None if jump is None else jump * 100 // N,
            "windows_ms": windows_of(gaps),
            "mqt_order": order,
        }
    out["patterns"] = patterns
    return out


def check(data: dict[str, object]) -> list[str]:
    """Every way ``data`` differs from the rules and from §6.2's orders."""
    errs = []
    pats = data.get("patterns")
    if not isinstance(pats, dict) or sorted(pats) != [p[0] for p in PATTERNS]:
        return [f"expected patterns {[p[0] for p in PATTERNS]}, found {pats!r:.200}"]
    for name, kind, jump, order in PATTERNS:
        p = pats[name]
        w = p["windows_ms"]
        gaps = [b - a for a, b in itertools.pairwise([0, *w])]
        errs += [f"{name}: {e}" for e in rule_errors(kind, jump, gaps)]
        if p["mqt_order"] != order:
            errs.append(f"{name}: expected the order {order!r} of §6.2, found {p['mqt_order']!r}")
        got = mqt_order(w)
        if got != order:
            errs.append(f"{name}: the MQT matrix of {w} gives {got!r}, §6.2 lists {order!r}")
    return errs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--write", action="store_true", help="write patterns.json anew")
    args = ap.parse_args(argv)
    if args.write:
        data = build()
        errs = check(data)
        if errs:
            print("\n".join(errs))
            return 1
        FILE.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {FILE.name}")
        return 0
    errs = check(json.loads(FILE.read_text(encoding="utf-8")))
    if errs:
        print("\n".join(errs))
        return 1
    print(f"{FILE.name}: P1–P8 follow §6.2's rules and give its MQT orders")
    return 0


if __name__ == "__main__":
    sys.exit(main())
