"""Bounded shared window joins (paper 004, ``Engine(swj_buffer=B, ...)``;
src_cpp/operators/swj_bounded.h): each query's rows are exactly the exact result's rows of the
(tuple, query) pairs the trace logs processed; processed + dropped + pending add up; no side holds
more than B; rows, counters and traces do not depend on how the input is pushed; MandF follows
[S >= alpha]; MQT on P1 serves query 1 of every buffered tuple before any query 2."""

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest

import cq_py
from cq_py.errors import ArgumentError, CQError

REPO = Path(__file__).resolve().parents[1]
SCHEDULERS = ("mqt", "fifo", "mandf", "admandf")


def script(windows):
    return "REGISTER STREAM a(k INT, x INT); REGISTER STREAM b(k INT, y INT);" + "".join(
        f"REGISTER QUERY q{i} AS SELECT * FROM a [Range {w}], b [Range {w}] WHERE a.k = b.k;"
        for i, w in enumerate(windows, 1)
    )


def inputs(n, gap, keys, seed=7):
    """n tuples per side, a's at even multiples of gap/2 and b's at odd ones (so a tuple is named
    by its side and time), keys drawn from range(keys)."""
    rng = random.Random(seed)
    a = pa.table(
        {
            "k": [rng.randrange(keys) for _ in range(n)],
            "x": list(range(n)),
            "ts": [gap * i for i in range(n)],
        }
    )
    b = pa.table(
        {
            "k": [rng.randrange(keys) for _ in range(n)],
            "y": list(range(n)),
            "ts": [gap * i + gap // 2 for i in range(n)],
        }
    )
    return a, b


def run(windows, a, b, chunks=None, time_unit="ns", check=None, **options):
    """Runs the queries; ``chunks``: a seed for random push sizes, interleaving the streams.
    ``check(engine)`` is called between pushes."""
    eng = cq_py.Engine(time_unit=time_unit, **options)
    eng.execute(script(windows))
    if chunks is None:
        eng.push("a", a)
        eng.push("b", b)
    else:
        rng = random.Random(chunks)
        at = {"a": 0, "b": 0}
        tables = {"a": a, "b": b}
        while any(at[s] < tables[s].num_rows for s in at):
            s = rng.choice([s for s in at if at[s] < tables[s].num_rows])
            size = rng.choice([1, 2, 3, 7, 20, 64])
            eng.push(s, tables[s].slice(at[s], size))
            at[s] += size
            if check:
                check(eng)
    eng.close()
    rows = {
        f"q{i}": sorted(
            (r["x"], r["y"], r["start"], r["end"]) for r in eng.fetch(f"q{i}").to_pylist()
        )
        for i in range(1, len(windows) + 1)
    }
    return eng, rows


def processed_pairs(jobs):
    """(side, ts, query) of every pair the trace logs processed."""
    done = set()
    for r in jobs.to_pylist():
        if r["outcome"] in ("processed", "partly"):
            for q in range(r["from"] + 1, r["to"] + 1):
                done.add((r["side"], r["ts"], q))
    return done


def producer(row, a_ts, b_ts):
    """The tuple whose job emits a pair: the later one (the left first at equal times)."""
    x, y = row[0], row[1]
    return ("left", a_ts[x]) if a_ts[x] > b_ts[y] else ("right", b_ts[y])


def counters_add_up(entry):
    for q in entry["members"]:
        assert (
            entry["processed"][q] + entry["dropped"][q] + entry["pending"][q] == entry["arrivals"]
        )


# An overload: a tuple every 20 ns on each side, a job costs 352 ns and more (the work clock).
WINDOWS = [100, 400, 1500, 6000]
BUFFER = 40


@pytest.fixture(scope="module")
def overload():
    a, b = inputs(300, 40, 6)
    _, exact = run(WINDOWS, a, b)
    return a, b, exact


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_rows_are_the_exact_rows_of_the_pairs_logged_processed(overload, scheduler):
    a, b, exact = overload
    sizes = []

    def check(eng):
        (entry,) = eng.shared_joins()
        assert max(entry["buffered"]) <= BUFFER
        counters_add_up(entry)
        sizes.append(sum(entry["pending"].values()))

    opts = {
        "swj_buffer": BUFFER,
        "swj_scheduler": scheduler,
        "swj_trace": True,
        "swj_period_ms": 0.0005,
    }
    eng, rows = run(WINDOWS, a, b, chunks=3, check=check, **opts)
    assert max(sizes) > 0  # work was pending between pushes
    (entry,) = eng.shared_joins()
    counters_add_up(entry)
    assert entry["arrivals"] == 600
    assert entry["evicted"] > 0
    assert sum(entry["dropped"].values()) > 0
    assert entry["processed"]["q1"] > 0
    jobs = eng.shared_join_trace(entry["id"])["jobs"]
    done = processed_pairs(jobs)
    a_ts = a.column("ts").to_pylist()
    b_ts = b.column("ts").to_pylist()
    for i in range(1, len(WINDOWS) + 1):
        q = f"q{i}"
        want = [r for r in exact[q] if (*producer(r, a_ts, b_ts), i) in done]
        assert rows[q] == want, q
        # The counters are the trace's.
        assert entry["processed"][q] == sum(1 for p in done if p[2] == i)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_rows_counters_and_traces_do_not_depend_on_the_pushes(overload, scheduler):
    a, b, _ = overload
    opts = {
        "swj_buffer": BUFFER,
        "swj_scheduler": scheduler,
        "swj_trace": True,
        "swj_period_ms": 0.0005,
    }
    runs = [run(WINDOWS, a, b, chunks=c, **opts) for c in (None, 1, 2)]
    first_eng, first_rows = runs[0]
    first = first_eng.shared_joins()
    trace = first_eng.shared_join_trace(first[0]["id"])
    for eng, rows in runs[1:]:
        assert rows == first_rows
        assert eng.shared_joins() == first
        other = eng.shared_join_trace(first[0]["id"])
        assert other["jobs"].equals(trace["jobs"])
        # (NaN, where a policy has no such figure, is unequal to itself: compared as text.)
        assert str(other["periods"].to_pylist()) == str(trace["periods"].to_pylist())
        assert other["periods"].num_rows > 10


def test_a_buffer_far_above_need_drops_nothing_and_gives_exact_rows():
    # A tuple every 80 us on each side (a us tick): the jobs' work is a tenth of the time or
    # less (checked below from the join's own count). B holds every tuple of the widest window.
    windows = [50, 200, 900, 3000]
    a, b = inputs(400, 80, 5)
    _, exact = run(windows, a, b, time_unit="us")
    for scheduler in SCHEDULERS:
        eng, rows = run(
            windows, a, b, chunks=5, time_unit="us", swj_buffer=10_000, swj_scheduler=scheduler
        )
        (entry,) = eng.shared_joins()
        assert rows == exact, scheduler
        assert sum(entry["dropped"].values()) == 0
        assert sum(entry["pending"].values()) == 0
        assert entry["processed"] == dict.fromkeys(entry["members"], 800)
        assert entry["work"]["busy"] <= 0.1 * 80 * 400, scheduler
        # The clock kept pace with the input: the server was never far behind.
        assert entry["clock"] < 80 * 400 + 10


def test_mandf_decides_fifo_exactly_when_the_load_reaches_alpha():
    a, b = inputs(400, 900, 6)  # about the server's capacity: both methods get decided
    for load in ("arrived", "oldest"):
        eng, _ = run(
            WINDOWS,
            a,
            b,
            swj_buffer=BUFFER,
            swj_scheduler="mandf",
            swj_load=load,
            swj_period_ms=0.002,
            swj_beta0=0.3,
        )
        (entry,) = eng.shared_joins()
        periods = eng.shared_join_trace(entry["id"])["periods"].to_pylist()
        with_arrivals = [p for p in periods if p["rate"] > 0]
        assert len(with_arrivals) > 10
        methods = set()
        for p in with_arrivals:
            fifo = p["S"] >= p["alpha"] * (1 - 1e-12)
            assert p["method"] == ("FIFO" if fifo else "MQT"), p
            methods.add(p["method"])
        assert methods == {"FIFO", "MQT"}, load  # both were decided


def test_mqt_serves_query_1_of_every_buffered_tuple_before_any_query_2_on_p1():
    patterns = json.loads((REPO / "benchmarks/papers/004/patterns.json").read_text())
    windows = patterns["patterns"]["P1"]["windows_ms"]  # as ticks: 1 to 3,000 ns
    a, b = inputs(300, 2, 4)  # a tuple per ns: a backlog from the start
    eng, _ = run(windows, a, b, swj_buffer=10_000, swj_scheduler="mqt", swj_trace=True)
    (entry,) = eng.shared_joins()
    assert entry["segments"] == "1,2,3,4,5,6,7,8,9,10"
    arrivals = sorted(
        [("left", t) for t in a.column("ts").to_pylist()]
        + [("right", t) for t in b.column("ts").to_pylist()],
        key=lambda s: s[1],
    )
    query1 = set()
    checked = 0
    clock = float("-inf")
    for job in eng.shared_join_trace(entry["id"])["jobs"].to_pylist():
        if job["from"] == 0:
            query1.add((job["side"], job["ts"]))
        elif job["from"] < 2 <= job["to"]:
            # Every tuple taken in before this job started has had its query 1.
            taken = [s for s in arrivals if s[1] <= clock]
            assert all(s in query1 for s in taken)
            checked += 1
        clock = job["clock"]
    assert checked == 600  # every tuple reached query 2 (nothing was evicted)
    assert entry["dropped"] == dict.fromkeys(entry["members"], 0)


def test_a_window_wider_than_b_tuples_drops_its_pairs_and_is_named():
    # A tuple every 40 us per side (a light load) and B = 10: a side holds 400 us, less than
    # [Range 1000].
    a, b = inputs(200, 40, 3)
    eng, _ = run([100, 300, 1000], a, b, time_unit="us", swj_buffer=10, swj_scheduler="fifo")
    (entry,) = eng.shared_joins()
    assert entry["dropping"] == ["q3"]
    assert entry["dropped"]["q3"] > 0
    assert entry["processed"]["q1"] == 400
    counters_add_up(entry)


@pytest.mark.parametrize(("pattern", "gap", "beta0"), [("P1", 600, 0.6), ("P4", 1200, 0.3)])
def test_the_four_schedulers_run_different_jobs_on(pattern, gap, beta0):
    # Loads about the server's capacity, where MandF and adMandF switch at different times.
    patterns = json.loads((REPO / "benchmarks/papers/004/patterns.json").read_text())
    windows = patterns["patterns"][pattern]["windows_ms"]
    a, b = inputs(300, gap, 4)
    traces = []
    for scheduler in SCHEDULERS:
        eng, _ = run(
            windows,
            a,
            b,
            swj_buffer=60,
            swj_scheduler=scheduler,
            swj_trace=True,
            swj_period_ms=0.002,
            swj_beta0=beta0,
        )
        (entry,) = eng.shared_joins()
        jobs = eng.shared_join_trace(entry["id"])["jobs"]
        traces.append(jobs.select(["tuple", "from", "to"]).to_pylist())
    assert len({str(t) for t in traces}) == 4


def test_bounded_mode_options_are_checked_at_construction():
    with pytest.raises(ArgumentError, match="need executor='dts'; found executor='heartbeat'"):
        cq_py.Engine(executor="heartbeat", swj_buffer=10)
    with pytest.raises(ArgumentError, match="swj_scheduler='mqt' needs swj_buffer"):
        cq_py.Engine(swj_scheduler="mqt")
    with pytest.raises(ArgumentError, match="swj_buffer must be a whole number"):
        cq_py.Engine(swj_buffer=0)
    with pytest.raises(ArgumentError, match="swj_clock must be one of 'work', 'wall'"):
        cq_py.Engine(swj_buffer=5, swj_clock="cpu")


def test_bounded_mode_is_refused_on_spark():
    from cq_py.spark import batch

    with pytest.raises(CQError, match="do not run on Spark"):
        batch.run(None, script([1, 2]), swj_buffer=10)  # type: ignore[arg-type]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_a_snapshot_and_restore_at_a_cut_change_nothing(overload, scheduler):
    a, b, _ = overload
    opts = {
        "swj_buffer": BUFFER,
        "swj_scheduler": scheduler,
        "swj_trace": True,
        "swj_period_ms": 0.0005,
    }
    whole, rows = run(WINDOWS, a, b, **opts)
    eng = cq_py.Engine(time_unit="ns", **opts)
    eng.execute(script(WINDOWS))
    eng.push("a", a.slice(0, 170))
    eng.push("b", b.slice(0, 130))
    (cut,) = eng.shared_joins()
    assert sum(cut["pending"].values()) > 0  # the cut holds work in hand
    data = eng.snapshot()
    back = cq_py.Engine.restore(data)
    assert back.snapshot() == data
    back.push("a", a.slice(170))
    back.push("b", b.slice(130))
    back.close()
    assert back.shared_joins() == whole.shared_joins()
    for i in range(1, len(WINDOWS) + 1):
        got = sorted(
            (r["x"], r["y"], r["start"], r["end"]) for r in back.fetch(f"q{i}").to_pylist()
        )
        assert got == rows[f"q{i}"]
    (entry,) = whole.shared_joins()
    assert back.shared_join_trace(entry["id"])["jobs"].equals(
        whole.shared_join_trace(entry["id"])["jobs"]
    )


def test_exact_mode_has_no_counters_and_no_trace():
    eng = cq_py.Engine()
    eng.execute(script([2, 5]))
    (entry,) = eng.shared_joins()
    assert entry["bounded"] is False
    assert "processed" not in entry
    assert entry["members"] == ["q1", "q2"]
    assert entry["windows"] == [2, 5]
    with pytest.raises(ArgumentError, match="the id of a bounded shared join"):
        eng.shared_join_trace(entry["id"])


def test_the_wall_clock_runs_and_counts_alike(overload):
    a, b, _ = overload
    eng, _ = run(WINDOWS, a, b, swj_buffer=BUFFER, swj_clock="wall")
    (entry,) = eng.shared_joins()
    assert entry["clock_kind"] == "wall"
    counters_add_up(entry)


@pytest.mark.parametrize("seed", range(12))
def test_random_scripts_with_equal_times_nulls_and_duplicates(seed):
    # Equal timestamps within and across the inputs, NULL keys, duplicate rows, equal windows and
    # w = 1, a random scheduler, buffer and push chunking. A tuple is named by its place in the
    # arrival order (time, the left input first, then input order), which the scheduler's ids
    # follow.
    rng = random.Random(seed)
    windows = [1]
    while len(set(windows)) < 2:  # (one window: a join alone, nothing shared)
        windows = sorted(rng.choice([1, 3, 3, 40, 150, 600]) for _ in range(rng.randint(2, 4)))
    n = 150
    span = rng.choice([6000, 60_000])  # an overload, or about the server's capacity
    tables = []
    for name in ("x", "y"):
        ts = sorted(rng.randrange(0, span, 7) for _ in range(n))
        keys = [rng.choice([0, 1, 2, None]) for _ in range(n)]
        tables.append(pa.table({"k": keys, name: list(range(n)), "ts": ts}))
    a, b = tables
    opts = {
        "swj_buffer": rng.choice([5, 20, 80]),
        "swj_scheduler": rng.choice(SCHEDULERS),
        "swj_trace": True,
        "swj_period_ms": 0.0004,
        "swj_load": rng.choice(["arrived", "oldest"]),
    }
    _, exact = run(windows, a, b)
    eng, rows = run(windows, a, b, chunks=seed, **opts)
    _, whole = run(windows, a, b, **opts)
    assert rows == whole
    (entry,) = eng.shared_joins()
    counters_add_up(entry)
    order = sorted(
        [(t, 0, i) for i, t in enumerate(a.column("ts").to_pylist())]
        + [(t, 1, i) for i, t in enumerate(b.column("ts").to_pylist())]
    )
    place = {(side, i): p for p, (_, side, i) in enumerate(order)}
    done = set()
    for job in eng.shared_join_trace(entry["id"])["jobs"].to_pylist():
        if job["outcome"] in ("processed", "partly"):
            done |= {(job["tuple"], q) for q in range(job["from"] + 1, job["to"] + 1)}
    # Every query is counted, those identical to a member (one route) with the member.
    assert sorted(entry["processed"]) == sorted(rows)
    for i, queries in enumerate(entry["readers"], start=1):
        for q in queries:
            want = [r for r in exact[q] if (max(place[(0, r[0])], place[(1, r[1])]), i) in done]
            assert rows[q] == want, (q, opts, windows)


def test_bounded_mode_is_refused_on_spark_streaming():
    from cq_py.spark import streaming

    with pytest.raises(CQError, match="do not run on Spark"):
        streaming.run(None, script([1, 2]), swj_buffer=10)  # type: ignore[arg-type]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_output_is_held_at_the_oldest_tuple_with_work_left(overload, scheduler):
    # ISTREAM outputs fetched between pushes: each query's rows come in time order, and what was
    # fetched early is what one run gives (nothing went out before its tuple's jobs ran).
    a, b, _ = overload
    queries = "".join(
        f"REGISTER QUERY i{i} AS ISTREAM(SELECT x, y FROM a [Range {w}], b [Range {w}] "
        "WHERE a.k = b.k);"
        for i, w in enumerate(WINDOWS, 1)
    )
    text = "REGISTER STREAM a(k INT, x INT); REGISTER STREAM b(k INT, y INT);" + queries
    opts = {"swj_buffer": BUFFER, "swj_scheduler": scheduler, "time_unit": "ns"}
    whole = cq_py.run(text, {"a": a, "b": b}, **opts)
    eng = cq_py.Engine(**opts)
    eng.execute(text)
    got: dict[str, list[dict]] = {f"i{i}": [] for i in range(1, len(WINDOWS) + 1)}
    for lo in range(0, 300, 25):
        eng.push("a", a.slice(lo, 25))
        eng.push("b", b.slice(lo, 25))
        for q in got:
            got[q] += eng.fetch(q).to_pylist()
    eng.close()
    for q in got:
        got[q] += eng.fetch(q).to_pylist()
        ts = [r["ts"] for r in got[q]]
        assert ts == sorted(ts), q
        assert sorted(map(str, got[q])) == sorted(map(str, whole[q].to_pylist())), q
    assert any(got.values())
