"""The conformance corpus under Spark (ARCHITECTURE.md §3.11's matrix): every run-mode ``.cqlt``
file's accepted statements and pushes, run once on the local engine and once through cq_py.spark.run
(with its partition key, or in one partition with the warning), give the same final results.

Only the end state is compared (after close): the files' intermediate ``query`` checks concern
what is final at each push, which a batch run on Spark does not expose. Every accepted statement
is registered before any data, on both sides; blocks that the file expects to fail are left out;
``advance`` is left out on both sides (a promise that changes no result, except how far RSTREAM
runs, which a batch run takes from the data).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import cq_py
from conformance.cqlt import OPTIONS, _Runner, parse
from cq_py.spark import CQPartitionWarning, run

CORPUS = Path(__file__).resolve().parents[1] / "conformance"
TS = "__cqlt_ts"  # lower case: the pushes' column names are lower-cased


def run_mode_files() -> list[Path]:
    out = []
    for path in sorted(CORPUS.rglob("*.cqlt")):
        blocks = parse(path.read_text(), str(path))
        options = blocks[0].args if blocks and blocks[0].kind == "options" else []
        if "mode=plan" not in options:
            out.append(path)
    return out


def replay(path: Path) -> tuple[str, dict, dict[str, pa.Table], cq_py.Engine]:
    """The file's accepted script and pushes (per stream, in push order, the timestamp renamed to
    one name), the engine options, and a local engine that has run them and is closed."""
    blocks = parse(path.read_text(), str(path))
    runner = _Runner(blocks, str(path))
    options = dict(runner.options)
    eng = cq_py.Engine(**options)
    script: list[str] = []
    pushes: dict[str, list[pa.Table]] = {}
    for b in blocks:
        if b.kind == "skip" and runner.applies(b.when):  # (not a skip of a snapshot run, say)
            pytest.skip(
                f"{path.name}:{b.lineno}: the file skips a known bug from here: {b.raw_args}"
            )
        if b.kind == "close":
            break
        if b.kind == "statement" and not b.error:
            # Every statement first, on both sides (a query the file registers after some data
            # would see only the later rows there; here both runs see all of them).
            eng.execute(b.text)
            script.append(b.text)
    for b in blocks:
        if b.kind == "close":
            break
        if b.kind == "push" and not b.error:
            stream = b.args[0]
            table = runner.table(b, eng, stream, b.ts)
            eng.push(stream, table, ts=b.ts)
            name = eng._stream(stream).name
            pushes.setdefault(name, []).append(
                table.rename_columns([TS if c == b.ts else c for c in table.column_names])
            )
    eng.close()
    inputs = {}
    for name, tables in pushes.items():
        # The pushes of one stream may name their columns in another order or case, and a
        # relation's pushes may leave out the op column (all inserts).
        lowered = [t.rename_columns([c.lower() for c in t.column_names]) for t in tables]
        columns = list(dict.fromkeys(c for t in lowered for c in t.column_names))
        types = {f.name: f.type for t in reversed(lowered) for f in t.schema if f.type != pa.null()}
        full = []
        for t in lowered:
            filled = t
            for c in columns:
                if c not in t.column_names:
                    fill = (
                        pa.array(["+"] * t.num_rows)
                        if c == "op"
                        else pa.nulls(t.num_rows, types.get(c, pa.null()))
                    )
                    filled = filled.append_column(c, fill)
            full.append(
                filled.select(columns).cast(
                    pa.schema([(c, types.get(c, pa.null())) for c in columns])
                )
            )
        inputs[name] = pa.concat_tables(full)
    return "\n".join(script), options, inputs, eng


def in_pieces(spark, table: pa.Table, pieces: int = 3):
    """``table`` as a DataFrame of at least ``pieces`` partitions, rows in order: a run that does
    not split the data by a key runs an engine per input partition, so a wrong plan shows."""
    step = max(1, -(-table.num_rows // pieces))
    parts = [
        spark.createDataFrame(table.slice(i, step)) for i in range(0, max(table.num_rows, 1), step)
    ]
    df = parts[0]
    for p in parts[1:]:
        df = df.union(p)
    return df


def bag(table: pa.Table) -> list[tuple]:
    def value(v):
        return "NaN" if isinstance(v, float) and v != v else v  # NaN equals NaN here

    return sorted((tuple(value(v) for v in r.values()) for r in table.to_pylist()), key=repr)


@pytest.mark.parametrize("path", run_mode_files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_conformance_file_on_spark(spark, path):
    script, options, inputs, eng = replay(path)
    if not eng.query_names():
        pytest.skip(f"{path.name}: no query is registered")
    frames = {name: in_pieces(spark, t) for name, t in inputs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CQPartitionWarning)  # some scripts cannot be split
        out = run(spark, script, frames, ts=TS, partitions=3, persist=True, **options)
    try:
        for q in eng.query_names():
            want = eng.fetch(q)
            got = out[q].toArrow()
            assert got.schema == want.schema, q
            assert bag(got) == bag(want), f"{path.name}: query {q}"
    finally:
        for df in out.values():
            df.unpersist()


def test_the_spark_leg_covers_the_corpus():
    files = run_mode_files()
    assert len(files) >= 15
    assert {p.parent.name for p in files} >= {
        "windows",
        "joins",
        "aggregates",
        "set_operations",
        "streams",
        "relations",
        "recursion",
    }
    assert set(OPTIONS) >= {"time_unit", "expose_steps"}
