"""The stock trading example of paper 000 (Fig. 1), ``examples/trading/``, over its bundled data.

The expected purchases and money are worked out by hand below from the scenario in
``examples/trading/make_data.py``; the engine must reproduce them with every execution strategy,
through ``cq_py.run`` and through ``cq run``. Without its ``<Now>`` delay the script is refused,
and with ``auto_delay=True`` it runs and buys the same.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from click.testing import CliRunner

import cq_py
from cq_py.cli import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "trading"
SCRIPT = EXAMPLE / "trading.cql"
STREAMS = ("market", "initial_resource", "stock_stream")

# --- the hand computation --------------------------------------------------------------------
# Rule: buy 1000 shares of a stock when price < 500, its latest stock_stream row has volume 0, and
# money > price * 1000. A purchase at t changes the money from t + ε (the <Now> delay), so the
# next tick sees it.
M0 = 2_000_000  # initial_resource at 0
M1 = M0 - 480 * 1000  # ts 2, stock 1 at 480:  2,000,000 > 480,000  -> 1,520,000
M2 = M1 - 450 * 1000  # ts 5, stock 2 at 450:  1,520,000 > 450,000  -> 1,070,000
M3 = M2 - 320 * 1000  # ts 7, stock 3 at 320 (sold at 7, so volume 0 at 7) -> 750,000
M4 = M3 - 490 * 1000  # ts 10, stock 4 at 490:   750,000 > 490,000  ->   260,000
#                               ts 13, stock 2 at 300:   260,000 > 300,000 is false: refused
#                               ts 14, stock 2 at 260:   260,000 > 260,000 is false: refused
M5 = M4 - 259 * 1000  # ts 15, stock 2 at 259:   260,000 > 259,000  ->     1,000
#                               ts 18, stock 1 at 2:       1,000 > 2,000 is false: refused
assert (M1, M2, M3, M4, M5) == (1_520_000, 1_070_000, 750_000, 260_000, 1_000)

BUYS = [  # (id, volume, price, ts)
    (1, 1000, 480, 2),
    (2, 1000, 450, 5),
    (3, 1000, 320, 7),
    (4, 1000, 490, 10),
    (2, 1000, 259, 15),
]
RESOURCE_STREAM = [(M0, 0), (M1, 2), (M2, 5), (M3, 7), (M4, 10), (M5, 15)]  # (money, ts)
# [Rows 1]: each value lives until the next one arrives; the last is alive at close (end None).
RESOURCE = [(M0, 0, 2), (M1, 2, 5), (M2, 5, 7), (M3, 7, 10), (M4, 10, 15), (M5, 15, None)]

# Market ticks not bought, and why (id, price, ts).
REFUSED = {
    (1, 500, 1): "price not below 500",
    (3, 300, 4): "2000 shares of stock 3 held",
    (5, 100, 4): "stock 5 has no stock_stream row",
    (1, 400, 8): "stock 1 held since 3; the rows for 2 (at 6) and 3 (at 7) leave it alone",
    (2, 430, 10): "stock 2 held since 6",
    (2, 300, 13): "money 260,000 is not > 300,000",
    (2, 260, 14): "money 260,000 is not > 260,000",
    (1, 2, 18): "money 1,000 is not > 2,000",
    (4, 480, 18): "stock 4 held since 11",
}

# [Partition By id Rows 1]: a row of a stock lives until the next row of the same stock.
STOCK = [  # (id, volume, price, start, end)
    (1, 0, 0, 0, 3),
    (2, 0, 0, 0, 6),
    (3, 2000, 350, 0, 7),
    (4, 0, 0, 0, 11),
    (1, 1000, 480, 3, 17),
    (2, 1000, 450, 6, 12),
    (3, 0, 0, 7, 9),
    (3, 1000, 320, 9, None),
    (4, 1000, 490, 11, None),
    (2, 0, 0, 12, 16),
    (2, 1000, 259, 16, None),
    (1, 0, 0, 17, None),
]

OPTIONS = [
    pytest.param({}, id="direct-hybrid"),
    pytest.param({"lifetime": "negative"}, id="negative"),
    pytest.param({"hybrid": False}, id="no-hybrid"),
    pytest.param({"lifetime": "negative", "hybrid": False}, id="negative-no-hybrid"),
]


# --- helpers ---------------------------------------------------------------------------------


def script() -> str:
    return SCRIPT.read_text(encoding="utf-8")


def script_without_delay() -> str:
    text = script()
    assert text.count(") <Now>;") == 1
    return text.replace(") <Now>;", ");")


def inputs() -> dict[str, pa.Table]:
    return {name: pacsv.read_csv(EXAMPLE / f"{name}.csv") for name in STREAMS}


def tuples(table: pa.Table, columns: tuple[str, ...]) -> list[tuple]:
    return list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def assert_hand_computation(results: dict[str, pa.Table]) -> None:
    assert tuples(results["buy_event"], ("id", "volume", "price", "ts")) == BUYS
    assert tuples(results["resource_stream"], ("money", "ts")) == RESOURCE_STREAM
    assert tuples(results["resource"], ("money", "start", "end")) == RESOURCE
    stock = tuples(results["stock"], ("id", "volume", "price", "start", "end"))
    assert sorted(stock, key=lambda r: (r[3], r[0])) == STOCK


# --- the run ---------------------------------------------------------------------------------


@pytest.mark.parametrize("options", OPTIONS)
def test_purchases_and_money_match_the_hand_computation(options):
    assert_hand_computation(cq_py.run(script(), inputs=inputs(), **options))


def test_every_tick_not_bought_has_its_reason():
    buys = {(i, p, t) for i, _, p, t in BUYS}
    market = set(tuples(inputs()["market"], ("id", "price", "ts")))
    assert buys <= market
    assert market - buys == set(REFUSED)


def test_money_never_goes_negative():
    results = cq_py.run(script(), inputs=inputs())
    assert min(m for m, _ in tuples(results["resource_stream"], ("money", "ts"))) >= 0
    assert min(m for m, *_ in tuples(results["resource"], ("money", "start", "end"))) >= 0
    # The cash actually left, the initial money less every purchase made so far, never goes
    # negative and is what the engine holds as `resource` after each purchase: no money is spent
    # twice (which same-instant purchases would do, see the last test).
    cash = M0
    after = {}
    for _, volume, price, ts in tuples(results["buy_event"], ("id", "volume", "price", "ts")):
        cash -= volume * price
        assert cash >= 0
        after[ts] = cash
    held = {
        start: money for money, start, _ in tuples(results["resource"], ("money", "start", "end"))
    }
    assert after == {ts: held[ts] for ts in after}


def test_engine_pushed_tick_by_tick_gives_the_same():
    eng = cq_py.Engine(expose_steps=True)
    eng.execute(script())
    tables = inputs()
    rows = sorted(
        ((r["ts"], name, r) for name, t in tables.items() for r in t.to_pylist()),
        key=lambda x: x[0],
    )
    for _, name, row in rows:
        eng.push(name, [row])
    eng.close()
    results = {q: eng.fetch(q) for q in eng.query_names()}
    assert_hand_computation(results)
    # The money changes one ε after the purchase (the delay), purchases sit at step 0.
    assert set(results["buy_event"].column("ts_step").to_pylist()) == {0}
    assert set(results["resource_stream"].column("ts_step").to_pylist()) == {1}


# --- the command line ------------------------------------------------------------------------


def cq(*args: str | Path):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def input_args() -> list[str]:
    return [a for name in STREAMS for a in ("--input", f"{name}={EXAMPLE / f'{name}.csv'}")]


@pytest.mark.parametrize("batch_size", ["65536", "1"])
def test_cq_run_writes_the_hand_computation(tmp_path, batch_size):
    result = cq("run", SCRIPT, *input_args(), "--output", tmp_path, "--batch-size", batch_size)
    assert result.exit_code == 0, result.output
    assert "buy_event: 5 rows" in result.output
    # The CSV writer leaves `end` empty for a value still alive at close.
    schema = {"end": pa.int64()}
    results = {
        q: pacsv.read_csv(
            tmp_path / f"{q}.csv", convert_options=pacsv.ConvertOptions(column_types=schema)
        )
        for q in ("buy_event", "resource_stream", "resource", "stock")
    }
    assert_hand_computation(results)


def test_cq_run_refuses_the_script_without_its_delay(tmp_path):
    bare = tmp_path / "trading_no_delay.cql"
    bare.write_text(script_without_delay(), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(bare), *input_args()])
    assert result.exit_code == 1
    assert "loop without a delay" in result.output


# --- the delay -------------------------------------------------------------------------------

LOOP = ["buy_event", "resource_stream", "resource"]  # each feeds the next, resource feeds buy_event


def test_the_script_without_its_delay_is_refused_naming_the_loop():
    with pytest.raises(cq_py.CQLSemanticError, match="loop without a delay") as info:
        cq_py.Engine().execute(script_without_delay())
    named = re.search(r"the queries (\S+(?: → \S+)+) form a loop", str(info.value))
    assert named, str(info.value)
    ring = named.group(1).split(" → ")
    assert ring[0] == ring[-1]
    start = ring.index("buy_event")
    assert ring[start:-1] + ring[:start] == LOOP


def test_a_delay_on_buy_event_instead_leaves_the_inner_loop_without_one():
    # resource_stream reads resource, which reads resource_stream: a loop of its own, which a
    # delay on buy_event does not cut.
    text = script_without_delay().replace("m.price * 1000);", "m.price * 1000) <Now>;")
    inner = "(resource_stream → resource → resource_stream|resource → resource_stream → resource)"
    with pytest.raises(cq_py.CQLSemanticError, match=f"the queries {inner} form a loop"):
        cq_py.Engine().execute(text)


@pytest.mark.parametrize("options", OPTIONS)
def test_auto_delay_runs_the_script_without_its_delay_and_buys_the_same(options):
    eng = cq_py.Engine(auto_delay=True, **options)
    eng.execute(script_without_delay())
    assert "inserted by auto_delay" in eng.explain()
    for name, table in inputs().items():
        eng.push(name, table)
    eng.close()
    assert_hand_computation({q: eng.fetch(q) for q in eng.query_names()})


# --- the data --------------------------------------------------------------------------------


def test_bundled_data_is_what_make_data_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("trading_make_data", EXAMPLE / "make_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(str(tmp_path))
    for name in STREAMS:
        assert (tmp_path / f"{name}.csv").read_bytes() == (EXAMPLE / f"{name}.csv").read_bytes()


# --- what the script does with purchases at one instant (why the bundled data has none) ------


def test_two_purchases_at_one_instant_both_spend_the_same_money():
    """Both ticks at 1 see money 600,000 and qualify: the script buys both (850,000 in all). Each
    purchase yields its own new money at 1 + ε from the same old value (150,000 and 200,000);
    [Rows 1] keeps one of them, so one purchase's cost is forgotten. The money the engine holds
    stays positive, but the cash actually left is 600,000 - 850,000 = -250,000."""
    eng = cq_py.Engine()
    eng.execute(script())
    eng.push("initial_resource", [{"money": 600_000, "ts": 0}])
    eng.push(
        "stock_stream",
        [{"id": 1, "volume": 0, "price": 0, "ts": 0}, {"id": 2, "volume": 0, "price": 0, "ts": 0}],
    )
    eng.push("market", [{"id": 1, "price": 450, "ts": 1}, {"id": 2, "price": 400, "ts": 1}])
    eng.close()
    buys = tuples(eng.fetch("buy_event"), ("id", "volume", "price", "ts"))
    assert sorted(buys) == [(1, 1000, 450, 1), (2, 1000, 400, 1)]
    assert 600_000 - sum(v * p for _, v, p, _ in buys) == -250_000
    new_money = sorted(tuples(eng.fetch("resource_stream"), ("money", "ts")))
    assert new_money == [(150_000, 1), (200_000, 1), (600_000, 0)]
    resource = tuples(eng.fetch("resource"), ("money", "start", "end"))
    alive = [m for m, _, end in resource if end is None]
    assert len(alive) == 1
    assert alive[0] in (150_000, 200_000)
