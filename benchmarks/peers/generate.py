"""The peer benchmark's data, generated deterministically and cached as Parquet.

Each stream is ``(ts, key, val)``, all int64: ``ts`` is one event per millisecond from 0, ``key``
and ``val`` are uniform in 0..999, drawn from a splitmix64 hash of the event's number and the
stream's seed (numpy's generators may change between releases; a hash of the row number does not,
so the same files come out on every machine). W1–W3 and W5 read the stream ``e`` (10,000,000
events by default); W4 joins two streams ``a`` and ``b`` (1,000,000 events each by default, a
tenth of ``e``).

Files are cached under ``benchmarks/peers/data/`` (git-ignored), one per stream and size, named
with the generator's version so that a change here never reads stale files::

    python benchmarks/peers/generate.py                          # 10,000,000 events, W4 1,000,000
    python benchmarks/peers/generate.py --events 100000 --data-dir /tmp/peers

>>> t = stream("e", 3)
>>> t.column_names, t["ts"].to_pylist()
(['ts', 'key', 'val'], [0, 1, 2])
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# Bumped whenever the data change, so that cached files of another version are not read.
VERSION = 1
DATA_DIR = Path(__file__).resolve().parent / "data"
EVENTS = 10_000_000
KEYS = 1000
VALUES = 1000
# One seed per stream: a, b and e are independent draws.
SEEDS = {"e": 1, "a": 2, "b": 3}
ROW_GROUP = 1 << 20


def _splitmix64(x: np.ndarray) -> np.ndarray:
    # uint64 arithmetic wraps modulo 2**64, which is what splitmix64 wants.
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def stream(name: str, events: int) -> pa.Table:
    """The stream ``name`` (``e``, ``a`` or ``b``) with ``events`` rows, built in memory.

    >>> stream("a", 2).to_pylist() == stream("a", 5).slice(0, 2).to_pylist()
    True
    """
    if name not in SEEDS:
        raise ValueError(f"no stream {name!r}: the streams are {', '.join(SEEDS)}")
    if events < 0:
        raise ValueError(f"events must be >= 0, found {events}")
    ts = np.arange(events, dtype=np.int64)
    h = _splitmix64(ts.astype(np.uint64) + np.uint64(SEEDS[name] << 48))
    # The low and high halves of one hash give the two columns; the modulo's bias is ~2e-7.
    key = ((h & np.uint64(0xFFFFFFFF)) % np.uint64(KEYS)).astype(np.int64)
    val = ((h >> np.uint64(32)) % np.uint64(VALUES)).astype(np.int64)
    return pa.table({"ts": ts, "key": key, "val": val})


def path(name: str, events: int, data_dir: Path = DATA_DIR) -> Path:
    """Where the cached Parquet file of stream ``name`` at ``events`` rows lives.

    >>> path("e", 1000, Path("/tmp/d")).name
    'e-1000-v1.parquet'
    """
    return Path(data_dir) / f"{name}-{events}-v{VERSION}.parquet"


def cached(name: str, events: int, data_dir: Path = DATA_DIR) -> Path:
    """The Parquet file of stream ``name`` at ``events`` rows, written first if not cached yet.

    >>> import tempfile
    >>> p = cached("b", 10, Path(tempfile.mkdtemp()))
    >>> pq.read_table(p).num_rows
    10
    """
    target = path(name, events, data_dir)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed, so that an interrupted run leaves no half file in the cache.
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        pq.write_table(stream(name, events), partial, row_group_size=ROW_GROUP)
        partial.replace(target)
    return target


def load(name: str, events: int, data_dir: Path = DATA_DIR) -> pa.Table:
    """Stream ``name`` at ``events`` rows as an Arrow table in memory, read from the cache.

    >>> import tempfile
    >>> load("e", 4, Path(tempfile.mkdtemp())).equals(stream("e", 4))
    True
    """
    return pq.read_table(cached(name, events, data_dir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=EVENTS, help="events of e (W1-W3, W5)")
    parser.add_argument(
        "--join-events",
        type=int,
        default=None,
        help="events of a and b each (W4; default events/10)",
    )
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    join = args.events // 10 if args.join_events is None else args.join_events
    for name, events in (("e", args.events), ("a", join), ("b", join)):
        print(cached(name, events, args.data_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
