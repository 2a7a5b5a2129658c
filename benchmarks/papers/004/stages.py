"""Paper 004 §6's four input-rate stages (Fig. 5, an image: reconstructed as fixed multiples of
each distribution's FIFO capacity, one set of multiples for all nine distributions).

The FIFO capacity of a distribution is the highest arrival rate (tuples per paper second per
source) that the FIFO scheduler keeps up with: after priming and the burst, STAGE_S paper seconds
at the rate drop nothing and end with no more pending work than the burst left. Found by
bisection with the same engine and workload (swj_workload.py). The stages run at MULTIPLIERS times
it: below it, at it, and a quarter above, where a FIFO server's backlog still fits the buffer
(§6.3: adMandF drops nothing in stage 4) and one that starves old tuples' wide windows does not.

    python benchmarks/papers/004/stages.py            # writes stages.json
    python benchmarks/papers/004/stages.py --quick    # a coarse bisection, printed only
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import swj_workload as workload  # noqa: E402

DISTRIBUTIONS = ["random", "P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8"]
MULTIPLIERS = [0.5, 0.75, 1.0, 1.25]
PRIME_RATE = 50.0  # tuples/s per source before stage 1: slow enough to be processed
STAGE_S = 10.0
FILE = HERE / "stages.json"


def keeps_up(ws: list[int], rate: float, stage_s: float) -> bool:
    """Whether FIFO, at ``rate`` tuples per paper second per source after priming and the burst,
    drops nothing and ends the stage with at most the burst's pending pairs."""
    data = workload.build_input([rate], stage_s, PRIME_RATE)
    seen = workload.run_stages(ws, "fifo", data)
    burst = workload.QUERIES * 2 * workload.BURST
    return seen[-1]["dropped"] == seen[0]["dropped"] and seen[-1]["pending"] <= burst


def fifo_capacity(ws: list[int], steps: int, stage_s: float) -> float:
    """The highest rate (to a factor 2^(1/2^steps)) that FIFO keeps up with."""
    lo, hi = PRIME_RATE, PRIME_RATE
    while keeps_up(ws, hi, stage_s):
        lo, hi = hi, hi * 2
        if hi > 1e7:
            raise RuntimeError("FIFO never drops below 1e7 tuples/s: check the work clock")
    for _ in range(steps):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if keeps_up(ws, mid, stage_s) else (lo, mid)
    return lo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="coarse, printed only")
    args = parser.parse_args(argv)
    steps, stage_s = (2, STAGE_S) if args.quick else (6, STAGE_S)
    out: dict[str, object] = {
        "multipliers": MULTIPLIERS,
        "prime_rate": PRIME_RATE,
        "bisection": {"steps": steps, "stage_s": stage_s},
        "distributions": {},
    }
    started = time.perf_counter()
    for d in DISTRIBUTIONS:
        cap = fifo_capacity(workload.windows(d), steps, stage_s)
        rates = [round(cap * m, 1) for m in MULTIPLIERS]
        out["distributions"][d] = {"fifo_capacity": round(cap, 1), "stage_rates": rates}  # type: ignore[index]
        print(f"{d:7} FIFO capacity {cap:10.1f} tuples/s per source  stages {rates}", flush=True)
    print(f"{time.perf_counter() - started:.1f} s")
    if not args.quick:
        FILE.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
