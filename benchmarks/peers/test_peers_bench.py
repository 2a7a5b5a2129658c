"""The peer benchmark (run.py) at a small size, and its SQL against cq row by row.

CI runs it as ``CQ_BENCH_ROWS=200000 pytest benchmarks``: W1–W5 on both engines over
CQ_BENCH_ROWS events (default 200,000; W4 a tenth of that a side), every result checked equal to
cq's. The SQL is also compared with cq's output row by row on data built to hit ISTREAM's corner
cases (few keys and values: equal averages one instant after another, a key that leaves and
comes back, join values with many copies that start where an equal one ends). No timing is
asserted.

    pytest benchmarks/peers
"""

import doctest
import json
import os
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import cq_py

# pytest runs in importlib mode (pyproject.toml): the modules beside this file are imported by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate
import run
import workloads as wl

EVENTS = int(os.environ.get("CQ_BENCH_ROWS", "200000"))


def corner_data(events: int, keys: int, values: int, seed: int) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    ts = np.arange(events, dtype=np.int64)
    # Bursts of ts spaced past the windows (W2's 10 s, W4's 1001 ms), so groups and join
    # partners empty and come back.
    ts = ts + (ts // 2500) * 11_000
    return {
        s: pa.table(
            {"ts": ts, "key": rng.integers(0, keys, events), "val": rng.integers(0, values, events)}
        )
        for s in ("e", "a", "b")
    }


def corner_events(name: str) -> int:
    # W4 over few keys pairs every row with ~1000 others: fewer events keep it quick, and one
    # burst of 1,200 ms still lets pairs end where equal ones start.
    return 1200 if name == "W4" else 4000


def sorted_rows(t: pa.Table, w: wl.Workload) -> pa.Table:
    t = t.select(list(w.columns))
    return t.sort_by([(c, "ascending") for c in w.columns])


@pytest.mark.parametrize(
    ("keys", "values", "seed"), [(1000, 1000, 1), (5, 10, 2), (2, 3, 3), (1, 2, 4)]
)
@pytest.mark.parametrize("name", list(wl.WORKLOADS))
def test_duckdb_sql_equals_cq_row_by_row(name, keys, values, seed):
    w = wl.WORKLOADS[name]
    tables = corner_data(corner_events(name), keys, values, seed)
    ours = cq_py.run(w.cql, inputs={s: tables[s] for s in w.streams})["q"]
    con = duckdb.connect()
    for s, t in tables.items():
        con.register(s, t)
    for variant, sql in w.sql.items():
        theirs = con.sql(sql(wl.DUCKDB)).to_arrow_table()
        wl.compare(w, ours, theirs, f"DuckDB {variant}")
        a, b = sorted_rows(ours, w), sorted_rows(theirs, w)
        for c in w.columns:
            x, y = a[c].to_numpy(), b[c].to_numpy()
            if x.dtype.kind == "f":
                np.testing.assert_allclose(y, x, rtol=wl.RELATIVE, atol=0)
            else:
                np.testing.assert_array_equal(y, x.astype(y.dtype))


def test_the_corner_data_reach_the_corners():
    # What the data above are for: without the bag difference (W4) and the instants where a
    # group only loses rows (W2), or the comparison with the previous value (W5), the SQL would
    # give other results, and compare() says so.
    naive = {
        "W2": "SELECT key, AVG(val) OVER (PARTITION BY key ORDER BY (ts + 999) // 1000 "
        "RANGE BETWEEN 9 PRECEDING AND CURRENT ROW) AS a, ((ts + 999) // 1000) * 1000 AS ts "
        "FROM e QUALIFY row_number() OVER (PARTITION BY key, (ts + 999) // 1000) = 1",
        "W4": f"WITH {wl._bucketed_pairs(wl.DUCKDB)} SELECT key, av, bv, s AS ts FROM pairs",
        "W5": "SELECT key, AVG(val) OVER (PARTITION BY key ORDER BY ts ROWS 9 PRECEDING) AS a, "
        "ts FROM e",
    }
    for name, sql in naive.items():
        w = wl.WORKLOADS[name]
        tables = corner_data(corner_events(name), 2, 3, 3)
        con = duckdb.connect()
        for s, t in tables.items():
            con.register(s, t)
        ours = cq_py.run(w.cql, inputs={s: tables[s] for s in w.streams})["q"]
        with pytest.raises(wl.Mismatch, match=name):
            wl.compare(w, ours, con.sql(sql).to_arrow_table(), "naive SQL")


@pytest.fixture(scope="module")
def bench_tables(tmp_path_factory):
    data = tmp_path_factory.mktemp("peers-data")
    sizes = {"e": EVENTS, "a": max(1, EVENTS // 10), "b": max(1, EVENTS // 10)}
    return {s: generate.load(s, n, data) for s, n in sizes.items()}


@pytest.fixture(scope="module")
def cq_results(bench_tables):
    # Each workload's cq result: the cq case stores it; a DuckDB case run alone computes it.
    return {}


SIDES = [(name, "cq", "") for name in wl.WORKLOADS] + [
    (name, "DuckDB", v) for name, w in wl.WORKLOADS.items() for v in w.sql
]


@pytest.mark.parametrize(
    ("name", "engine", "variant"),
    SIDES,
    ids=[f"{n}-{e}{'-' + v if v else ''}" for n, e, v in SIDES],
)
def test_peer_workload(benchmark, bench_tables, cq_results, name, engine, variant):
    # pytest-benchmark's face of run.py: one side of one workload, events/s in extra_info.
    w = wl.WORKLOADS[name]
    threads = os.cpu_count() or 1
    if engine == "cq":
        side = run.cq_side(w, bench_tables, threads)
    else:
        side = run.duckdb_sides(w, run.duckdb_connection(bench_tables, threads), [variant])[0]
    benchmark.group = f"peers {name}, {run.events_of(w, bench_tables):,} events"
    out = benchmark.pedantic(side.run, rounds=1, iterations=1)
    benchmark.extra_info["events"] = run.events_of(w, bench_tables)
    if benchmark.stats is not None:
        benchmark.extra_info["events_per_s"] = (
            run.events_of(w, bench_tables) / benchmark.stats["mean"]
        )
    if engine == "cq":
        cq_results[name] = out
    else:
        if name not in cq_results:
            cq_results[name] = run.cq_side(w, bench_tables, threads).run()
        wl.compare(w, cq_results[name], out, side.label)
    assert out.num_rows > 0


def test_benchmark_runs_and_checks_every_result(tmp_path, capsys):
    out = tmp_path / "peers.json"
    args = ["--events", str(EVENTS), "--repeat", "2", "--threads", "2", "--png", ""]
    assert run.main([*args, "--data-dir", str(tmp_path), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert list(result["seconds"]) == list(wl.WORKLOADS)
    for name, sides in result["seconds"].items():
        labels = (
            {"cq", "DuckDB"}
            if name != "W4"
            else {"cq", *(f"DuckDB {v}" for v in wl.WORKLOADS[name].sql)}
        )
        assert set(sides) == labels
        assert all(len(s) == 2 for s in sides.values())
        assert f"{name}: " in printed
    # The table: one row per workload, two for W4 (bucketed and plain join), with the ratio.
    rows = [line for line in printed.splitlines() if line.startswith("| W")]
    assert len(rows) == 6
    assert all(line.rstrip(" |").endswith("×") for line in rows)
    cq_threads = run.cq_threads(2)
    assert f"cq, {cq_threads} thread" in printed


def test_a_difference_stops_the_benchmark(tmp_path, monkeypatch, capsys):
    # W3's DuckDB query made to miss the instants where a key's count repeats: the run stops
    # with an error and prints no table.
    w = wl.WORKLOADS["W3"]
    wrong = wl.Workload(
        w.name,
        w.query,
        w.streams,
        w.columns,
        {"": lambda d: "SELECT key, COUNT(*) AS c, ((ts + 999) // 1000) * 1000 AS ts "
                       "FROM e GROUP BY ALL"},
    )  # fmt: skip
    monkeypatch.setitem(wl.WORKLOADS, "W3", wrong)
    code = run.main(
        ["--events", "20000", "--workloads", "W3", "--repeat", "1", "--png", "",
         "--data-dir", str(tmp_path)]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    assert "error: results differ" in captured.err
    assert "W3: DuckDB gives" in captured.err
    assert "| W3" not in captured.out


def test_chart(tmp_path):
    png = tmp_path / "peers.png"
    args = ["--events", "5000", "--workloads", "W1,W4", "--repeat", "1", "--png", str(png)]
    assert run.main([*args, "--data-dir", str(tmp_path)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_data_are_deterministic(tmp_path):
    # The same rows from the cache and from scratch, whatever the size, and uniform domains.
    e = generate.load("e", 100_000, tmp_path)
    assert e.equals(generate.stream("e", 100_000))
    assert e.slice(0, 1000).equals(generate.stream("e", 1000))
    assert e["ts"].to_pylist()[:3] == [0, 1, 2]
    for c in ("key", "val"):
        counts = np.bincount(e[c].to_numpy(), minlength=1000)
        assert len(counts) == 1000
        assert counts.min() > 50  # 100 expected each
    assert not generate.stream("a", 1000).equals(generate.stream("b", 1000))


@pytest.mark.parametrize("module", [generate, wl, run], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
