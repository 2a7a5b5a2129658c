"""Engine(max_memory=...) stops a state that grows with unbounded input before it outgrows the
machine: pushes are refused, change nothing, and the results so far stay reachable."""

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

import cq_py
from cq_py.cli import cli
from cq_py.engine import resident_bytes

DISTINCT = (
    "REGISTER STREAM s(k INT, v DOUBLE);"
    "REGISTER QUERY q AS SELECT DISTINCT k, v FROM s [Range Unbounded];"
)


def rows(lo, n):
    rng = np.random.default_rng(lo)
    return pa.table(
        {
            "k": rng.integers(0, 1000, n),
            "v": rng.random(n),
            "ts": np.arange(lo, lo + n, dtype=np.int64),
        }
    )


def test_pushes_are_refused_once_the_process_passes_the_bound_and_nothing_changes():
    limit = resident_bytes() + 40 * 2**20
    eng = cq_py.Engine(max_memory=limit)
    eng.execute(DISTINCT)
    pushed = fetched = 0

    def fill() -> None:
        nonlocal pushed, fetched
        for _ in range(100):  # DISTINCT over [Range Unbounded] keeps ~200 MB per million rows
            eng.push("s", rows(pushed, 100_000))
            pushed += 100_000
            fetched += eng.fetch("q").num_rows

    with pytest.raises(cq_py.MemoryLimitError) as e:
        fill()
    assert 0 < pushed < 10_000_000
    assert e.value.limit == limit
    assert e.value.used > limit
    assert "push to 's' refused" in str(e.value)
    assert "nothing changed" in str(e.value)
    with pytest.raises(cq_py.MemoryLimitError, match=r"advance\(.*\) refused"):
        eng.advance(pushed + 5)
    blob = eng.snapshot()
    eng.close()  # fetch, snapshot and close still work
    fetched += eng.fetch("q").num_rows
    assert fetched == pushed  # every pushed row (all distinct), none of the refused push
    again = cq_py.Engine.restore(blob)
    assert again._max_memory == limit


def test_no_bound_by_default_and_the_bound_is_checked():
    assert cq_py.Engine()._max_memory is None
    for bad in (0, -1, 1.5, "4G", True):
        with pytest.raises(cq_py.ArgumentError, match="max_memory must be a positive integer"):
            cq_py.Engine(max_memory=bad)


def test_cq_run_max_memory(tmp_path):
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "examples" / "sensors"
    args = [
        "run",
        str(script / "sensors.cql"),
        "-i",
        f"readings={script / 'readings.csv'}",
        "-q",
        "-o",
        str(tmp_path / "o"),
    ]
    result = CliRunner().invoke(cli, [*args, "--max-memory", "1M"])
    assert result.exit_code == 1
    assert "refused: the process holds" in result.stderr
    assert "(cq run: --max-memory SIZE)" in result.stderr
    assert "nothing was written" in result.stderr
    assert CliRunner().invoke(cli, [*args, "--max-memory", "64G"]).exit_code == 0
    bad = CliRunner().invoke(cli, [*args, "--max-memory", "lots"])
    assert bad.exit_code == 2
    assert "expected a size such as 4G" in bad.output
