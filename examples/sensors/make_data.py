"""Generate ``readings.csv`` for the sensors example, deterministically (fixed seed).

    python examples/sensors/make_data.py            # writes examples/sensors/readings.csv

Four sensors report temperature (°C) and relative humidity (%) every ~0.2 s on average, so
about 2,000 readings span seven minutes. The boiler room runs hot (``hot`` fires), the freezer
dips below zero and the greenhouses get humid (``recent`` sees them); about 5 % of the humidity
cells are empty (a flaky hygrometer), which the queries must treat as NULL. Several sensors
sometimes report at the same millisecond, as real collectors do.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

ROWS = 2000
SEED = 20240521
START_MS = 1_716_249_600_000  # 2024-05-21T00:00:00Z in epoch milliseconds

SENSORS = np.array(["greenhouse-1", "greenhouse-2", "boiler-room", "freezer"])
# Per sensor: base temperature, swing of the slow daily-like cycle, noise, base humidity.
BASE_TEMP = np.array([24.0, 22.0, 29.0, 1.5])
SWING = np.array([5.0, 4.0, 2.5, 1.5])
NOISE = np.array([1.2, 1.0, 1.5, 0.8])
BASE_HUMIDITY = np.array([78.0, 84.0, 35.0, 60.0])


def make_table(rows: int = ROWS, seed: int = SEED) -> pa.Table:
    """The readings as an Arrow table, in non-decreasing ``ts`` order.

    >>> make_table(10).column_names
    ['ts', 'sensor', 'temp', 'humidity']
    """
    rng = np.random.default_rng(seed)
    # Gaps of 0..400 ms; a zero gap puts two sensors on the same millisecond.
    gaps = rng.integers(0, 401, size=rows)
    gaps[rng.random(rows) < 0.05] = 0
    ts = START_MS + np.cumsum(gaps)
    who = rng.integers(0, len(SENSORS), size=rows)
    phase = (ts - START_MS) / 120_000.0 * 2 * np.pi  # a two-minute cycle
    noise = NOISE[who] * rng.standard_normal(rows)
    temp = BASE_TEMP[who] + SWING[who] * np.sin(phase + who) + noise
    humidity = BASE_HUMIDITY[who] + 8.0 * rng.standard_normal(rows)
    humidity = np.clip(humidity, 5.0, 100.0)
    missing = rng.random(rows) < 0.05
    return pa.table(
        {
            "ts": pa.array(ts, pa.int64()),
            "sensor": pa.array(SENSORS[who]),
            "temp": pa.array(np.round(temp, 2)),
            "humidity": pa.array(np.round(humidity, 1), mask=missing),
        }
    )


def main(path: str | None = None) -> str:
    """Write the CSV (default: ``readings.csv`` next to this script) and return its path."""
    path = path or str(Path(__file__).resolve().parent / "readings.csv")
    table = make_table()
    # No quoting (pyarrow always quotes the header): the values need none, and the file stays
    # pleasant to read.
    with Path(path).open("wb") as out:
        out.write((",".join(table.column_names) + "\n").encode())
        pacsv.write_csv(table, out, pacsv.WriteOptions(include_header=False, quoting_style="none"))
    return path


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else None))
