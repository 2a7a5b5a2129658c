"""Write the trading example's input CSVs from the scenario below (deterministic, no randomness).

    python examples/trading/make_data.py            # writes market.csv, initial_resource.csv
                                                    # and stock_stream.csv next to this script

One trading session of 19 ticks over five stocks. The rule of ``trading.cql`` (paper 000, Fig. 1):
buy 1000 shares of a stock when its price is below 500, no shares of it are held (its latest
``stock_stream`` row says volume 0) and the money is strictly greater than price * 1000.
Purchases do not update the holdings by themselves: the broker confirms each one on
``stock_stream`` one tick later, as an external system would.

The session shows five purchases, refusals for each reason (price not below 500, shares held,
stock not tracked, money short by a little and by nothing), holdings kept per stock (a row for one
stock leaves the others alone) and a holding that changes at the same instant as a tick for it.
No two ticks at one instant both qualify for a purchase: the script checks them against the same
money and would buy both (see README.md, "Purchases at the same instant").
"""

from __future__ import annotations

import sys
from pathlib import Path

# (ts, stream, values): values in the stream's declared column order (ts is written last).
#   market(id, price) · initial_resource(money) · stock_stream(id, volume, price)
# The comment after each row says what the engine does with it; money is in yen.
SCENARIO: list[tuple[int, str, tuple[int, ...]]] = [
    (0, "initial_resource", (2_000_000,)),  # the money: 2,000,000 (from 0+ε)
    (0, "stock_stream", (1, 0, 0)),  # stocks 1, 2 and 4 start with no shares,
    (0, "stock_stream", (2, 0, 0)),
    (0, "stock_stream", (3, 2000, 350)),  # stock 3 with 2000 shares bought at 350;
    (0, "stock_stream", (4, 0, 0)),  # stock 5 is not tracked at all
    (1, "market", (1, 500)),  # no: the price must be below 500
    (2, "market", (1, 480)),  # BUY 1: 2,000,000 > 480,000
    (3, "stock_stream", (1, 1000, 480)),  # broker confirms 1000 shares of stock 1
    (4, "market", (3, 300)),  # no: 2000 shares of stock 3 held
    (4, "market", (5, 100)),  # no: stock 5 has no holding row
    (5, "market", (2, 450)),  # BUY 2: 1,520,000 > 450,000
    (6, "stock_stream", (2, 1000, 450)),  # broker confirms stock 2
    (7, "stock_stream", (3, 0, 0)),  # stock 3 sold (the script credits no money) ...
    (7, "market", (3, 320)),  # ... and at this very instant BUY 3:
    #     volume 0 is alive at 7; 1,070,000 > 320,000
    (8, "market", (1, 400)),  # no: stock 1 still held, the rows for 2 and 3
    #     did not replace its row (Partition By id)
    (9, "stock_stream", (3, 1000, 320)),  # broker confirms stock 3
    (10, "market", (4, 490)),  # BUY 4: 750,000 > 490,000 ...
    (10, "market", (2, 430)),  # ... at the same instant, no: stock 2 held
    (11, "stock_stream", (4, 1000, 490)),  # broker confirms stock 4
    (12, "stock_stream", (2, 0, 0)),  # stock 2 sold
    (13, "market", (2, 300)),  # REFUSED: 260,000 is not > 300,000 (money out)
    (14, "market", (2, 260)),  # REFUSED: 260,000 is not > 260,000 (strict)
    (15, "market", (2, 259)),  # BUY 5: 260,000 > 259,000, leaves 1,000
    (16, "stock_stream", (2, 1000, 259)),  # broker confirms stock 2
    (17, "stock_stream", (1, 0, 0)),  # stock 1 sold
    (18, "market", (1, 2)),  # REFUSED: 1,000 is not > 2,000
    (18, "market", (4, 480)),  # no: stock 4 held
]

COLUMNS = {
    "market": ("id", "price"),
    "initial_resource": ("money",),
    "stock_stream": ("id", "volume", "price"),
}


def rows(stream: str) -> list[tuple[int, ...]]:
    """The rows of ``stream``, each as its values followed by ``ts``, in time order.

    >>> rows("initial_resource")
    [(2000000, 0)]
    """
    return [(*values, ts) for ts, name, values in SCENARIO if name == stream]


def main(directory: str | None = None) -> list[str]:
    """Write one CSV per input stream into ``directory`` (default: next to this script)."""
    directory = directory or str(Path(__file__).resolve().parent)
    paths = []
    for stream, columns in COLUMNS.items():
        path = str(Path(directory) / f"{stream}.csv")
        with Path(path).open("w", encoding="utf-8", newline="\n") as out:
            out.write(",".join((*columns, "ts")) + "\n")
            out.writelines(",".join(map(str, row)) + "\n" for row in rows(stream))
        paths.append(path)
    return paths


if __name__ == "__main__":
    print("\n".join(main(sys.argv[1] if len(sys.argv) > 1 else None)))
