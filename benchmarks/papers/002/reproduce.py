"""Reproduces paper 002's measurements on the engine (``Engine(executor="scheduled")``).

* **Fig. 7** (``--fig7``): Fig. 6's query — a stream joined with resource x (each row matches
  one), then AVG over ``[Range r Slide s]`` — n rows pushed at once under ``txn="2pl"``,
  ``redo="always"``: the reference join's evaluations per commit (``Engine.commit_log()``) with
  the gatekeeper constraint (batch 1) and without it (batch n), summed over the full windows,
  against equations (1) and (2) and the pure-Python model (model.py).
* **Fig. 8** (``--fig8``): the reconstructed tree of model.py (``fig8_tree``) in CQL — S1 and S2
  each joined with a 1,000-row resource by a scan (sel1, sel2 on the joins' outputs), the results
  joined over ``[Range 10]`` windows within one ten-tick window (⋈3, sel3 on its output), alpha =
  AVG over ``[Rows 10]`` committing by ISTREAM — with ``fig8_data``'s columns, 1,000 rows per
  stream pushed at once, ``2pl``, ``redo="always"``, batch n = 1..10 with and without the
  gatekeeper constraint: the reference joins' and all operators' evaluations, alpha's outputs
  against the same script over static relations, and the throughput with/without the
  constraint at n = 10 (best of 5, interleaved).
* **Update throughput** (``--updates``): the same query over ``[Range W]``, W = 10, 100, 1,000,
  rows pushed while a writer thread commits one-row updates of x as fast as the store lets it;
  per strategy, the writer's commits per second and the engine's rows per second. Under ``2pl``
  a read holds x's shared lock until its transaction commits, and each commit replays the
  window (``redo``: x changed), so the writer waits longer as the window grows; ``snapshot``
  holds the lock only while it pins a version.

    python benchmarks/papers/002/reproduce.py            # all three, a few minutes
    python benchmarks/papers/002/reproduce.py --fig8 --png fig8_engine.png
    python benchmarks/papers/002/reproduce.py --updates --rows 20000

Prints tables; README.md beside it compares them with the paper.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import cq_py

HERE = Path(__file__).resolve().parent
KEYS = 1000
STRATEGIES = ("none", "2pl", "snapshot", "optimistic")


def _model():
    spec = importlib.util.spec_from_file_location("paper002_model", HERE / "model.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def script(window: str, commit: str = "RSTREAM") -> str:
    """Fig. 6's query in CQL: j joins s with x, q averages j over ``window``; ``commit`` (the
    relation-to-stream operator above the window) commits."""
    return (
        "REGISTER STREAM s(k BIGINT, a BIGINT);"
        "REGISTER RESOURCE x (id BIGINT, v DOUBLE) KEY (id);"
        "REGISTER QUERY j AS ISTREAM(SELECT s.a, x.v FROM s [Now], x WHERE s.k = x.id);"
        f"REGISTER QUERY q AS {commit}(SELECT AVG(v) AS m FROM j {window});"
    )


def engine(window: str, commit: str = "RSTREAM", **options: object) -> cq_py.Engine:
    store = cq_py.ResourceStore()
    store.load("x", pa.table({"id": np.arange(KEYS), "v": np.arange(KEYS, dtype=float)}), ["id"])
    eng = cq_py.Engine(executor="scheduled", resources=store, threads=1, **options)
    eng.execute(script(window, commit))
    return eng


def stream(rows: int, seed: int = 1) -> pa.Table:
    """One row per tick from tick 1, keys uniform over x's."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "k": rng.integers(0, KEYS, rows),
            "a": rng.integers(0, 100, rows),
            "ts": np.arange(1, rows + 1, dtype=np.int64),
        }
    )


def fig7(r: int, s: int, n: int, constraint: bool) -> list[int]:
    """The join's evaluations per commit of q, partial first windows included, as
    tests/txn/test_fig67.py runs them: s = 1 commits by RSTREAM with one row per tick from tick 1;
    s > 1 by ISTREAM with ticks from 0 (the slide boundaries, multiples of s, fall where the
    model's windows end), which a strategy plans as RSTREAM with the difference taken at the
    commit."""
    eng = engine(
        f"[Range {r} Slide {s}]",
        "RSTREAM" if s == 1 else "ISTREAM",
        txn="2pl",
        redo="always",
        gatekeeper=constraint,
        batch=1 if constraint else n,
    )
    first = 1 if s == 1 else 0
    rows = pa.table({"k": np.arange(n), "a": np.arange(n), "ts": np.arange(n) + first})
    eng.push("s", rows)
    eng.close()
    join = next(op for op, st in eng.stats()["operators"].items() if "reads" in st)
    last = n if s == 1 else n - 1  # (after the last row the window only empties)
    log = [c for c in eng.commit_log().to_pylist() if c["query"] == "q"]
    return [dict(c["evaluations"])[join] for c in log if c["instant"] <= last]


def print_fig7(ns: list[int]) -> None:
    model = _model()
    print("Fig. 7: the reference join's evaluations summed over the full windows")
    print(
        "| r | s | n | constraint (batch 1) | eq. (1) | model | none, batch n | eq. (2) | model |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r, s in ((4, 1), (7, 2), (10, 3)):
        for n in ns:
            if n < r:
                continue
            runs = [model.run(model.fig67_tree(n, r, s), b, c) for b, c in ((1, True), (n, False))]
            partial = len(runs[0].partial())
            m_best, m_worst = (sum(c.evaluations["join"] for c in x.full()) for x in runs)
            best, worst = (f"{sum(fig7(r, s, n, c)[partial:]):,}" for c in (True, False))
            print(
                f"| {r} | {s} | {n} | {best} | {model.eq1(n, r, s):,} | {m_best:,} "
                f"| {worst} | {model.eq2(n, r, s):,} | {m_worst:,} |"
            )


# Fig. 8 ---------------------------------------------------------------------------------------

#: Fig. 8's settings: (θ⋈3, sel1, sel2), as model.py's table.
FIG8_SETTINGS = ((0.5, 0.5, 0.5), (0.15, 0.5, 0.5), (0.5, 0.9, 0.1), (0.15, 0.9, 0.1))


def fig8_script(data, resources: bool = True, db: str | None = None) -> str:
    """Fig. 8's tree in CQL over ``data`` (model.fig8_data). S1 and S2 arrive as one stream S
    (``side`` 1 or 2), so that one push brings both at once, as the paper's 1,000 rows per stream
    are there before the run (two pushes would let the first stream's gatekeeper run alone
    through its rows before the second came). ⋈3 pairs rows of one ten-tick window (``w``, the
    window's number) as the later one arrives, as the model's window join does: each side's
    [Range 10] holds every earlier row of its window. ``resources=False``: x and y are static
    relations (the outputs every strategy must give). ``db``: a SQLite file holding x and y
    (:func:`fig8_sqlite`), read as database resources instead of the in-process store."""
    kind = "RESOURCE" if resources else "RELATION"

    def access(name: str) -> str:
        if not resources:
            return ""
        where = f" FROM 'sqlite:///{db}' TABLE '{name}'" if db else ""
        return f" KEY (k){where} ACCESS SCAN"

    side = "SELECT i, k, u, v, w FROM S [Now] WHERE side = "
    return (
        "REGISTER STREAM S (side BIGINT, i BIGINT, k BIGINT, u BIGINT, v BIGINT, w BIGINT);"
        f"REGISTER {kind} x (k BIGINT, p BIGINT, a BIGINT){access('x')};"
        f"REGISTER {kind} y (k BIGINT, p BIGINT, a BIGINT){access('y')};"
        f"REGISTER QUERY S1 AS ISTREAM({side}1); REGISTER QUERY S2 AS ISTREAM({side}2);"
        "REGISTER QUERY j1 AS ISTREAM(SELECT S1.i, S1.u, S1.v, S1.w, x.a FROM S1 [Now], x "
        f"WHERE S1.k = x.k AND x.p < {data.sel1});"
        "REGISTER QUERY j2 AS ISTREAM(SELECT S2.i, S2.u, S2.v, S2.w FROM S2 [Now], y "
        f"WHERE S2.k = y.k AND y.p < {data.sel2});"
        "REGISTER QUERY j3 AS ISTREAM(SELECT l.i AS i1, r.i AS i2, l.a AS a "
        "FROM j1 [Range 10] AS l, j2 [Range 10] AS r "
        f"WHERE l.w = r.w AND (l.u + r.u) % 100 < {data.theta} "
        f"AND (l.v + r.v) % 100 < {data.sel3});"
        "REGISTER QUERY alpha AS ISTREAM(SELECT AVG(a) AS m FROM j3 [Rows 10]);"
    )


def _fig8_tables(data) -> dict[str, pa.Table]:
    """x, y and S: S1's rows then S2's at each tick (side 1, 2), in time order."""

    def stream(side: int, cols: dict) -> pa.Table:
        ts = np.asarray(cols["ts"], dtype=np.int64)
        return pa.table(
            {
                "side": np.full(len(ts), side),
                "i": np.arange(len(ts)),
                "k": cols["k"],
                "u": cols["u"],
                "v": cols["v"],
                "w": (ts - 1) // 10,
                "ts": ts,
            }
        )

    both = pa.concat_tables([stream(1, data.s1), stream(2, data.s2)])
    order = pc.sort_indices(both, [("ts", "ascending"), ("side", "ascending")])
    return {"x": pa.table(data.x), "y": pa.table(data.y), "S": both.take(order)}


def fig8_sqlite(data, path: Path) -> str:
    """Writes x and y into a new SQLite file at ``path`` (the paper's resources are database
    tables, each read costing what a query does); returns the path for :func:`fig8_run`."""
    import sqlite3

    tables = _fig8_tables(data)
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as con:
        for name in ("x", "y"):
            con.execute(f"CREATE TABLE {name} (k INTEGER PRIMARY KEY, p INTEGER, a INTEGER)")
            cols = [tables[name][c].to_numpy().tolist() for c in ("k", "p", "a")]
            con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", zip(*cols, strict=True))
    con.close()
    return str(path)


def fig8_run(
    data, n: int = 1, constraint: bool = True, txn: str = "2pl", db: str | None = None
) -> tuple[cq_py.Engine, float]:
    """Runs Fig. 8 on the engine: both streams' rows pushed at once; (engine, the process's CPU
    seconds from the push to close(): on this shared machine wall seconds also count the time
    other tenants hold the core). ``db``: x and y read from that SQLite file
    (:func:`fig8_sqlite`) instead of the in-process store."""
    tables = _fig8_tables(data)
    store = cq_py.ResourceStore()
    if db is None:
        store.load("x", tables["x"], ["k"])
        store.load("y", tables["y"], ["k"])
    eng = cq_py.Engine(
        executor="scheduled",
        resources=store,
        threads=1,
        txn=txn,
        redo="always",
        batch=n,
        gatekeeper=constraint,
    )
    eng.execute(fig8_script(data, db=db))
    start = time.process_time()
    eng.push("S", tables["S"])
    eng.close()
    return eng, time.process_time() - start


def fig8_static(data) -> list[dict]:
    """alpha's outputs over static relations x and y (DTS, no resources): what every run gives."""
    tables = _fig8_tables(data)
    eng = cq_py.Engine(threads=1)
    eng.execute(fig8_script(data, resources=False))
    eng.push("x", tables["x"].append_column("ts", pa.array(np.zeros(len(tables["x"]), np.int64))))
    eng.push("y", tables["y"].append_column("ts", pa.array(np.zeros(len(tables["y"]), np.int64))))
    eng.push("S", tables["S"])
    eng.close()
    return eng.fetch("alpha").to_pylist()


def fig8_counts(eng: cq_py.Engine) -> tuple[int, int, int]:
    """(reference-join evaluations, all evaluations in alpha's redo area, commits)."""
    stats = eng.stats()
    ops = stats["operators"]
    joins = sum(st["evaluations"] for st in ops.values() if "reads" in st)
    (area,) = (a for a in stats["areas"].values() if a["query"] == "alpha")
    return joins, sum(ops[m]["evaluations"] for m in area["members"]), area["commits"]


def print_fig8(ns: list[int], rows: int, repeat: int, png: str, db: str = "store") -> None:
    model = _model()
    print(f"\nFig. 8 on the engine ({rows:,} rows per stream, x and y {rows:,} rows, seed 1)")
    print(
        "| θ⋈3 | sel1/sel2 | n | commits | ⋈1+⋈2 with | model (fig8_cql) | ⋈1+⋈2 without "
        "| ratio | all with | all without | ratio | row-commit model's ⋈1+⋈2 ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    curves: dict[str, tuple[list[int], list[int]]] = {}
    for theta, sel1, sel2 in FIG8_SETTINGS:
        data = model.fig8_data(1, theta, sel1, sel2, rows=rows, size=rows)
        want = fig8_static(data)
        cql = model.fig8_cql(data)
        with_, without = [], []
        differ = {True: 0, False: 0}
        mismatches = 0
        for n in ns:
            counts = []
            for constraint in (True, False):
                eng, _ = fig8_run(data, n, constraint)
                got = eng.fetch("alpha").to_pylist()
                if [g["ts"] for g in got] != [w["ts"] for w in want]:
                    raise AssertionError(f"alpha: other instants than the static run: {theta}, {n}")
                # (Values may differ where [Rows 10] cuts between rows of one instant, whose
                # order the join's kept rows give: README.md.)
                differ[constraint] += sum(g != w for g, w in zip(got, want, strict=True))
                counts.append(fig8_counts(eng))
                if constraint and counts[-1][0] != cql[1]:
                    mismatches += 1
            runs = [model.run(model.fig8_tree(data), n, c) for c in (True, False)]
            m = [sum(r.evaluations[op] for op in ("join1", "join2")) for r in runs]
            (jw, aw, commits), (jo, ao, _) = counts
            with_.append(jw)
            without.append(jo)
            print(
                f"| {theta} | {sel1}/{sel2} | {n} | {commits} | {jw:,} | {cql[1]:,} | {jo:,} "
                f"| {jo / jw:.2f} | {aw:,} | {ao:,} | {ao / aw:.2f} | {m[1] / m[0]:.2f} |"
            )
        curves[f"θ⋈3 {theta}, sel {sel1}/{sel2}"] = (with_, without)
        print(
            f"alpha's outputs against the static run, all n: {len(want) * len(ns):,} per setting; "
            f"values differing: {differ[True]:,} with the constraint, {differ[False]:,} without; "
            f"constrained reference-join counts off the model's: {mismatches} of {len(ns)}"
        )
        if mismatches:
            raise AssertionError(f"the engine's constrained counts are not fig8_cql's: {theta}")
    if png:
        _plot_fig8(ns, curves, png)
    print_fig8_throughput(ns[-1], rows, repeat, db)


def print_fig8_throughput(n: int, rows: int, repeat: int, db: str = "store") -> None:
    """Fig. 8's throughput with and without the constraint at batch ``n``, x and y in the
    in-process store or (``db="sqlite"``) a SQLite file: best of ``repeat``, interleaved, beside
    the ratio of reference-join evaluations the engine made and the two models' ratios."""
    import tempfile

    model = _model()
    print(
        f"\nThroughput at n = {n}, x and y in {'a SQLite file' if db == 'sqlite' else 'the store'}"
        f" (rows of both streams per CPU second, best of {repeat}, interleaved)"
    )
    print(
        "| θ⋈3 | sel1/sel2 | with | without | ratio | engine's ⋈1+⋈2 ratio "
        "| row-commit model's ⋈1+⋈2 ratio |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for theta, sel1, sel2 in FIG8_SETTINGS:
            data = model.fig8_data(1, theta, sel1, sel2, rows=rows, size=rows)
            path = fig8_sqlite(data, Path(tmp) / "fig8.db") if db == "sqlite" else None
            best = {True: float("inf"), False: float("inf")}
            joins = {}
            for _ in range(repeat):
                for constraint in (True, False):
                    eng, seconds = fig8_run(data, n, constraint, db=path)
                    best[constraint] = min(best[constraint], seconds)
                    joins[constraint] = fig8_counts(eng)[0]
            runs = [model.run(model.fig8_tree(data), n, c) for c in (True, False)]
            m = [sum(r.evaluations[op] for op in ("join1", "join2")) for r in runs]
            print(
                f"| {theta} | {sel1}/{sel2} | {2 * rows / best[True]:,.0f} | "
                f"{2 * rows / best[False]:,.0f} | {best[False] / best[True]:.2f} | "
                f"{joins[False] / joins[True]:.2f} | {m[1] / m[0]:.2f} |"
            )


def _plot_fig8(ns: list[int], curves: dict[str, tuple[list[int], list[int]]], png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    colours = ("C0", "C1", "C2", "C3")
    for (label, (with_, without)), colour in zip(curves.items(), colours, strict=False):
        ax.plot(ns, with_, "-o", color=colour, label=f"{label}, constraint")
        ax.plot(ns, without, "--x", color=colour, label=f"{label}, none")
    ax.set_xlabel("batch n (round robin)")
    ax.set_ylabel("reference-join evaluations (⋈1 + ⋈2)")
    ax.set_title("Fig. 8 on the engine: 2PL, redo always")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


def updates(strategy: str, window: int, rows: int, chunk: int = 100) -> tuple[float, float]:
    """(writer commits per second, engine rows per second) while ``rows`` rows are pushed
    ``chunk`` at a time and a writer thread upserts one row of x per transaction."""
    eng = engine(f"[Range {window}]", txn=strategy)
    store = eng.resources
    data = stream(rows)
    done = threading.Event()
    commits = [0]
    rng = np.random.default_rng(7)
    keys = rng.integers(0, KEYS, 1 << 16).tolist()
    values = rng.random(1 << 16).tolist()

    def writer() -> None:
        k = 0
        while not done.is_set():
            with store.transaction(timeout=60.0, writer="updater") as tx:
                tx.upsert("x", [{"id": keys[k & 0xFFFF], "v": values[k & 0xFFFF]}])
            commits[0] += 1
            k += 1

    thread = threading.Thread(target=writer)
    thread.start()
    start = time.perf_counter()
    try:
        for at in range(0, rows, chunk):
            eng.push("s", data.slice(at, chunk))
        eng.close()
    finally:
        wall = time.perf_counter() - start
        done.set()
        thread.join()
    return commits[0] / wall, rows / wall


def print_updates(rows: int, repeat: int) -> None:
    print(f"\nUpdate throughput ({rows:,} rows pushed, best of {repeat}, strategies interleaved)")
    print("| window | " + " | ".join(f"{s}: updates/s | {s}: rows/s" for s in STRATEGIES) + " |")
    print("|---|" + "---|---|" * len(STRATEGIES))
    for window in (10, 100, 1000):
        best: dict[str, tuple[float, float]] = dict.fromkeys(STRATEGIES, (0.0, 0.0))
        for _ in range(repeat):
            for s in STRATEGIES:
                u, r = updates(s, window, rows)
                best[s] = (max(best[s][0], u), max(best[s][1], r))
        cells = " | ".join(f"{best[s][0]:,.0f} | {best[s][1]:,.0f}" for s in STRATEGIES)
        print(f"| {window:,} | {cells} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fig7", action="store_true", help="only Fig. 7")
    parser.add_argument("--fig8", action="store_true", help="only Fig. 8")
    parser.add_argument("--updates", action="store_true", help="only the update throughput")
    parser.add_argument("--fig8-rows", type=int, default=1000, help="rows per stream (Fig. 8)")
    parser.add_argument("--png", default=str(HERE / "fig8_engine.png"), help="'' for none")
    parser.add_argument("--rows", type=int, default=1500, help="rows pushed per update run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--fig8-db",
        choices=("store", "sqlite"),
        default="store",
        help="where Fig. 8's throughput runs read x and y (sqlite: a database file, 4 min more)",
    )
    args = parser.parse_args()
    both = not (args.fig7 or args.fig8 or args.updates)
    if args.fig7 or both:
        print_fig7([5, 10, 25, 50, 100])
    if args.fig8 or both:
        print_fig8(list(range(1, 11)), args.fig8_rows, 5, args.png, args.fig8_db)
    if args.updates or both:
        print_updates(args.rows, args.repeat)


if __name__ == "__main__":
    main()
