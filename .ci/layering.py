#!/usr/bin/env python3
"""The house's floors: each room (a folder of src_cpp/, a package or module of cq_py/) includes or
imports only rooms on floors below its own.

FLOORS below is the declared order, ground floor first. A file belongs to the room of the longest
path that holds it; a file in no room is an error too (a new folder or module is placed here
first). Within a room files include one another freely; rooms on one floor do not reach each
other (sideways). C++: every `#include "..."` (angle brackets are the system's), resolved against
src_cpp/ (the one include directory) and then the including file's folder; quoted includes that name
no file of the tree are left to the compiler. Python: every import statement, also those inside
functions (a lazy import still ties two modules), resolved to a file of cq_py/ or cq_core/; an
import of a package resolves to its __init__.py, whose parents are not counted (importing
cq_py.planner.types runs cq_py/__init__.py too, but takes nothing from it).

    python .ci/layering.py [--root DIR] [--floors]

Exit status 0 when every tie runs down a floor; 1 with one line per offending include or import:
file:line, what it names, and the two rooms with their floors.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

# Ground floor first. Parse -> plan -> execute: a floor is built only of what lies below it.
FLOORS: list[list[str]] = [
    # The C++ core (src_cpp/).
    ["src_cpp/base/"],  # errors, the JSON reader, the byte-level serializer, general containers
    ["src_cpp/time/"],  # logical time: Time{tick, step}, Duration
    # The batch format (columns, batches, their snapshots), columnar hashing; the schedulers of a
    # shared window join (pure policy over windows and counts: base only).
    ["src_cpp/batch/", "src_cpp/schedulers/"],
    # Arrow bridge, kernels, holders; the in-process store of updatable resources (paper 002).
    ["src_cpp/arrow/", "src_cpp/kernels/", "src_cpp/lifetime/", "src_cpp/txn/"],
    ["src_cpp/plan/"],  # reading operator specs
    ["src_cpp/rows/"],  # the row form of loops
    ["src_cpp/operators/"],  # operators, batch and row drivers
    ["src_cpp/executors/"],  # DTS and heartbeat
    ["src_cpp/engine/"],  # the facade
    ["cq_core/", "src_cpp/tests/"],  # the binding (C++ and its Python package); the C++ tests
    # The Python package (cq_py/), above the binding it drives.
    ["cq_py/errors.py"],
    ["cq_py/ticks.py", "cq_py/parser/", "cq_py/swj_options.py"],
    # Reading sources and planning; the multiple-query optimizer of MASTER queries (paper 001
    # §4) beside the planner, over parsed queries and arrival timestamps.
    ["cq_py/io/", "cq_py/planner/", "cq_py/optimizer/", "cq_py/txn.py"],
    ["cq_py/spark/partitioning.py", "cq_py/spark/lookback.py"],  # partition key, time slices
    # Engine(threads=N): one core engine per part of the input; REGISTER TABLE's cached views.
    # The in-process store of updatable resources (paper 002).
    [
        "cq_py/partitions.py",
        "cq_py/time_split.py",
        "cq_py/tables.py",
        "cq_py/rowset.py",
        "cq_py/resources.py",
    ],
    ["cq_py/engine.py"],
    ["cq_py/replay.py"],  # a paced replay of input files through an Engine (cq replay)
    ["cq_py/__init__.py"],
    ["cq_py/spark/tagging.py"],  # the united DataFrame both Spark runners build
    ["cq_py/spark/streaming.py", "cq_py/spark/files.py"],
    ["cq_py/spark/batch.py"],
    ["cq_py/spark/__init__.py"],
    ["cq_py/cli.py"],
    ["cq_py/__main__.py"],
]

SOURCES = {"src_cpp": (".h", ".cc"), "cq_core": (".h", ".cc", ".cpp", ".py"), "cq_py": (".py",)}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def room_of(rel: str) -> str | None:
    """The declared room holding ``rel`` (a path from the root): the longest that matches."""
    best = None
    for floor in FLOORS:
        for room in floor:
            if (rel == room or (room.endswith("/") and rel.startswith(room))) and (
                    best is None or len(room) > len(best)):
                best = room
    return best


FLOOR_OF = {room: k + 1 for k, floor in enumerate(FLOORS) for room in floor}


def source_files(root: Path) -> list[Path]:
    files = []
    for top, exts in SOURCES.items():
        if (root / top).is_dir():
            files += [p for p in (root / top).rglob("*") if p.is_file() and p.suffix in exts]
    return sorted(files)


def cpp_ties(root: Path, path: Path) -> list[tuple[int, str, Path]]:
    """(line, what the include says, the file it names) for each quoted include of a tree file."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        for base in (root / "src_cpp", path.parent):
            target = (base / m.group(1)).resolve()
            if target.is_file() and target.is_relative_to(root):
                out.append((n, f'#include "{m.group(1)}"', target))
                break
    return out


def module_file(root: Path, dotted: str) -> Path | None:
    base = root.joinpath(*dotted.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".pyi")):
        if cand.is_file():
            return cand
    return None


def py_ties(root: Path, path: Path) -> list[tuple[int, str, Path]]:
    """(line, the import statement's module, the file it names) for each import of a tree module."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except SyntaxError:
        return []  # not this check's business: the tests import every module
    package = path.relative_to(root).parent.parts
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                f = module_file(root, alias.name)
                if f:
                    out.append((node.lineno, f"import {alias.name}", f))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package[:len(package) - node.level + 1]
                mod = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            names: dict[Path, list[str]] = {}
            for alias in node.names:
                # `from pkg import name` takes a submodule when there is one, else from pkg.
                f = module_file(root, f"{mod}.{alias.name}") or module_file(root, mod)
                if f:
                    names.setdefault(f, []).append(alias.name)
            out += [(node.lineno, f"from {mod} import {', '.join(n)}", f) for f, n in names.items()]
    return out


def check(root: Path) -> tuple[list[str], int, int]:
    """Every breach of the floors under ``root``; with the counts of files and ties read."""
    root = root.resolve()
    errors: list[str] = []
    files = source_files(root)
    ties = 0
    for path in files:
        rel = path.relative_to(root).as_posix()
        room = room_of(rel)
        if room is None:
            errors.append(f"{rel}: on no floor: declare its folder in .ci/layering.py's FLOORS")
            continue
        found = py_ties(root, path) if path.suffix == ".py" else cpp_ties(root, path)
        for line, what, target in found:
            trel = target.relative_to(root).as_posix()
            troom = room_of(trel)
            if troom is None or troom == room:
                continue  # (a file on no floor is reported as such)
            ties += 1
            mine, theirs = FLOOR_OF[room], FLOOR_OF[troom]
            if theirs > mine:
                errors.append(f"{rel}:{line}: {what} runs up a floor: {room} (floor {mine}) "
                              f"may not reach {troom} (floor {theirs})")
            elif theirs == mine:
                errors.append(f"{rel}:{line}: {what} runs sideways: {room} and {troom} share "
                              f"floor {mine}, whose rooms do not reach each other")
    return errors, len(files), ties


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="the tree to check (default: this clone)")
    ap.add_argument("--floors", action="store_true", help="print the declared floors and exit")
    args = ap.parse_args(argv)
    if args.floors:
        for k in range(len(FLOORS), 0, -1):
            print(f"floor {k:2}: {'  '.join(FLOORS[k - 1])}")
        return 0
    errors, nfiles, ties = check(args.root)
    for e in errors:
        print(e)
    if errors:
        print(f"layering: {len(errors)} breach(es) of the floors declared in .ci/layering.py")
        return 1
    print(f"layering: {nfiles} files, {ties} includes and imports between rooms, all down a floor "
          f"({len(FLOORS)} floors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
