"""Instructions per input tuple on paper 003's cells, counted by callgrind inside the executor.

The wall-clock reproduction (``reproduce.py``) wanders by tens of percent on a shared machine;
instruction counts do not, so a change to the engine is checked against the previous main with
this script: one callgrind run per tree, all cells (the four queries of Fig. 3, row and time
windows of 100 and 10,000, direct and negative) in one process, a dump between cells.

    python benchmarks/papers/003/instructions.py --rows 200000 TREE [TREE ...]

Each TREE is a directory put first on ``PYTHONPATH`` (it holds ``cq_py`` and a ``cq_core`` built
with symbols, ``CMAKE_BUILD_TYPE=RelWithDebInfo``); the trees run at once, one process each. The
first tree is the baseline: every other column gives its change against it. Needs valgrind.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CELLS = [
    (query, kind, size, method)
    for query in ("select", "project", "union all", "join")
    for kind in ("rows", "time")
    for size in (100, 10_000)
    for method in ("direct", "negative")
]


def child(rows: int) -> None:
    """Runs every cell in this process, asking callgrind for a dump after each."""
    sys.path.insert(0, str(HERE))
    import reproduce

    import cq_py

    data = reproduce.streams(rows, 65_536)
    for query, kind, size, method in CELLS:
        template, inputs = reproduce.QUERIES[query]
        per_side = size if len(inputs) == 1 else max(1, size // 2)
        window = f"[Rows {per_side}]" if kind == "rows" else f"[Range {per_side} MILLISECONDS]"
        options = dict(reproduce.METHODS[method])
        if "threads" in inspect.signature(cq_py.Engine).parameters:
            options["threads"] = 1  # the paper's single thread; older trees had no such option
        _, out = reproduce.run(data, template.format(w=window), inputs, options)
        # callgrind_control is answered by this process while it runs Python (nothing of it is
        # counted: only the executor is), so wait by spinning rather than in a system call.
        dump = subprocess.Popen(
            ["callgrind_control", "-d", str(os.getpid())],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while dump.poll() is None:
            sum(range(1000))
        print(f"cell {out}", file=sys.stderr, flush=True)


def count(tree: str, rows: int, out: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": tree, "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out / 'cg.out'}",
            "--toggle-collect=*DtsExecutor::Push*",
            "--toggle-collect=*DtsExecutor::AdvanceTo*",
            sys.executable,
            __file__,
            "--child",
            "--rows",
            str(rows),
        ],
        env=env,
        cwd=out,  # not a checkout: the tree on PYTHONPATH is the one imported
        stderr=(out / "valgrind.log").open("wb"),
    )


def totals(out: Path) -> list[tuple[int, int]]:
    """(output rows, instructions) per cell, in CELLS order."""
    log = (out / "valgrind.log").read_text()
    outs = [int(m) for m in re.findall(r"^cell (\d+)$", log, re.M)]
    dumps = {int(p.name.rsplit(".", 1)[1]): p for p in out.glob("cg.out.*")}
    result = []
    for i, rows_out in enumerate(outs):
        summary = re.search(r"^summary: (\d+)", dumps[i + 1].read_text(), re.M)
        result.append((rows_out, int(summary.group(1)) if summary else 0))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", help="directories put first on PYTHONPATH")
    ap.add_argument("--rows", type=int, default=200_000, help="tuples per stream")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.rows)
        return
    if not args.trees:
        ap.error("name at least one tree")
    with tempfile.TemporaryDirectory() as tmp:
        dirs = [Path(tmp) / str(i) for i in range(len(args.trees))]
        procs = []
        for tree, d in zip(args.trees, dirs, strict=True):
            d.mkdir()
            procs.append(count(str(Path(tree).resolve()), args.rows, d))
        for p, d in zip(procs, dirs, strict=True):
            if p.wait() != 0:
                sys.exit(f"callgrind run failed: see {d / 'valgrind.log'}")
        results = [totals(d) for d in dirs]
    for r, tree in zip(results, args.trees, strict=True):
        if len(r) != len(CELLS):
            sys.exit(f"{tree}: {len(r)} of {len(CELLS)} cells counted")
    head = f"{'query':10} {'window':16} {'method':9}"
    print(head + "".join(f" {Path(t).name[:18]:>18}" for t in args.trees) + "   instr/tuple")
    worst = 0.0
    for i, (query, kind, size, method) in enumerate(CELLS):
        tuples = args.rows * (2 if query in ("union all", "join") else 1)
        outs = {r[i][0] for r in results}
        if len(outs) != 1:
            sys.exit(f"{query} {kind} {size} {method}: output rows differ between trees: {outs}")
        base = results[0][i][1]
        cells = [f" {base / tuples:18.1f}"]
        for r in results[1:]:
            change = r[i][1] / base - 1 if base else 0.0
            worst = max(worst, change)
            cells.append(f" {r[i][1] / tuples:10.1f} {100 * change:+6.1f}%")
        label = f"[Rows {size}]" if kind == "rows" else f"[Range {size} ms]"
        print(f"{query:10} {label:16} {method:9}" + "".join(cells))
    if len(results) > 1:
        print(f"largest increase against {args.trees[0]}: {100 * worst:+.1f}%")


if __name__ == "__main__":
    main()
