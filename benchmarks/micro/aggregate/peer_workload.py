"""W2, W3 or W5 of the peer benchmark (benchmarks/peers) on one engine, pushed as the peer
benchmark's ``cq_py.run`` pushes (65,536 rows at a time): what ``instructions.sh`` counts, and a
split of the seconds (push, close, fetch) with the process's peak memory.

    python benchmarks/micro/aggregate/peer_workload.py W2 1000000
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "peers"))

import generate  # benchmarks/peers/generate.py and workloads.py
import workloads

import cq_py


def main(workload: str, events: int) -> None:
    """Runs ``workload`` over ``events`` events and prints its rows, seconds and memory.

    >>> main("W3", 3000)  # doctest: +ELLIPSIS
    W3 events=3000 rows=... push ...
    """
    batches = generate.stream("e", events).to_batches(max_chunksize=65536)
    eng = cq_py.Engine(threads=1)
    query = workloads.WORKLOADS[workload].query
    eng.execute(workloads.STREAM.format(name="e") + f" REGISTER QUERY q AS {query};")
    t0 = time.perf_counter()
    for b in batches:
        eng.push("e", b)
    t1 = time.perf_counter()
    eng.close()
    t2 = time.perf_counter()
    out = eng.fetch("q")
    t3 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rate = events / (t3 - t0) / 1e6
    print(
        f"{workload} events={events} rows={out.num_rows} push {t1 - t0:.3f} s "
        f"close {t2 - t1:.3f} s fetch {t3 - t2:.3f} s: {rate:.2f} M events/s, peak {peak:.0f} MB"
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
