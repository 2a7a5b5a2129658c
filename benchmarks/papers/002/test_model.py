"""Paper 002's model of the scheduled executor (model.py): Fig. 6/7's per-commit join evaluations
and their sums against equations (1) and (2), and the properties of Fig. 8's counts (with the
gatekeeper constraint they vary < 1 % across batch sizes and never exceed those without; without
it they grow with the batch size), the committed outputs equal to a direct computation."""

from __future__ import annotations

import doctest
import importlib.util
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _load():
    # Under a name of its own: other benchmark directories are on sys.path in the same run.
    spec = importlib.util.spec_from_file_location("paper002_model", HERE / "model.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


model = _load()
WINDOWS = [(4, 1), (7, 2), (10, 3)]


def test_docstring_examples():
    assert doctest.testmod(model).failed == 0


def test_the_papers_numbers():
    assert model.eq1(100, 4, 1) == 388
    assert model.eq2(100, 4, 1) == 5044


def join_counts(commits):
    return [c.evaluations["join"] for c in commits]


@pytest.mark.parametrize(("r", "s"), WINDOWS)
@pytest.mark.parametrize("partial", [True, False])
def test_constraint_costs_r_per_commit_at_any_batch(r, s, partial):
    for n in range(max(5, r), 101):
        for batch in {1, 3, n}:
            run = model.run(model.fig67_tree(n, r, s, partial), batch, constraint=True)
            full = join_counts(run.full())
            assert len(full) == (n - r) // s + 1
            assert full == [r] * len(full), (n, batch)
            assert sum(full) == model.eq1(n, r, s)
            # The partial first windows: each costs its own rows, 1, 1 + s, ... below r.
            assert join_counts(run.partial()) == (list(range(r % s or s, r, s)) if partial else [])


@pytest.mark.parametrize(("r", "s"), WINDOWS)
@pytest.mark.parametrize("partial", [True, False])
def test_batch_round_robin_without_constraint_costs_n_minus_ks(r, s, partial):
    for n in range(max(5, r), 101):
        for batch in (n, n + 3) if n % 10 == 0 else (n,):
            run = model.run(model.fig67_tree(n, r, s, partial), batch, constraint=False)
            full = join_counts(run.full())
            assert full == [n - k * s for k in range(len(full))], (n, batch)
            assert sum(full) == model.eq2(n, r, s)
            # Every partial window takes all n rows in too, before its commit resets them.
            assert join_counts(run.partial()) == [n] * len(run.partial())


def test_small_batches_lie_between_the_bounds():
    n, r, s = 40, 4, 1
    sums = [
        sum(join_counts(model.run(model.fig67_tree(n, r, s), b, constraint=False).full()))
        for b in range(1, n + 1)
    ]
    assert all(model.eq1(n, r, s) <= x <= model.eq2(n, r, s) for x in sums)
    assert sums[-1] == model.eq2(n, r, s)
    assert sums[0] < sums[-1]


def test_without_overlap_nothing_is_reset():
    run = model.run(model.fig67_tree(20, 4, 4), batch=20, constraint=False)
    assert run.resets == 0
    assert join_counts(run.commits) == [20, 0, 0, 0, 0]


def test_bad_batch():
    with pytest.raises(ValueError, match="batch must be at least 1, got 0"):
        model.run(model.fig67_tree(10, 4, 1), batch=0, constraint=True)


def test_fig8_data_is_seeded_and_exact():
    a = model.fig8_data(7, 0.15, 0.9, 0.1)
    assert a == model.fig8_data(7, 0.15, 0.9, 0.1)
    assert a != model.fig8_data(8, 0.15, 0.9, 0.1)
    assert (a.theta, a.sel1, a.sel2, a.sel3) == (15, 90, 10, 50)
    x_p = dict(zip(a.x["k"], a.x["p"], strict=True))
    y_p = dict(zip(a.y["k"], a.y["p"], strict=True))
    # Each stream row matches one resource row, and the branches pass exactly 90 % and 10 %.
    assert sorted(a.s1["k"]) == a.x["k"] == list(range(1000))
    assert sum(x_p[k] < a.sel1 for k in a.s1["k"]) == 900
    assert sum(y_p[k] < a.sel2 for k in a.s2["k"]) == 100
    with pytest.raises(ValueError, match=r"theta must be a multiple of 0\.01 in"):
        model.fig8_data(1, 1.5)


# (θ⋈3, sel1, sel2) as README's table; 200 rows per stream keep CI's smoke short.
@pytest.mark.parametrize("setting", model.FIG8_SETTINGS)
def test_fig8_counts(setting):
    table = model.fig8_table(rows=200, size=200, settings=[setting])  # checks the outputs too
    assert [r.n for r in table] == list(range(1, 11))
    with_ = [sum(r.with_.values()) for r in table]
    without = [sum(r.without.values()) for r in table]
    assert max(with_) < 1.01 * min(with_)
    # The gatekeepers feed the area only what the next commit needs, whatever the batch.
    assert len({r.reference(r.with_) for r in table}) == 1
    for r in table:
        assert all(r.with_[j] <= r.without[j] for j in model.REFERENCE_JOINS)
        assert sum(r.with_.values()) <= sum(r.without.values())
    # Without the constraint a larger batch lets more rows into the area before each commit.
    assert without[0] < without[4] < without[9]
    assert all(w >= without[0] for w in without)
    assert table[0].ratio < table[9].ratio


def test_readme_table_is_the_models():
    # README's rows at n = 10 (full size, seed 1) are what model.py --table prints.
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    line = r"^\| ([\d.]+) \| ([\d.]+)/([\d.]+) \| 10 \| ([\d,]+ \| .*) \|$"
    rows = re.findall(line, readme, re.M)
    assert len(rows) == len(model.FIG8_SETTINGS)
    for theta, sel1, sel2, cells in rows:
        setting = (float(theta), float(sel1), float(sel2))
        (r,) = model.fig8_table(batches=range(10, 11), settings=[setting])
        want = [
            r.commits,
            sum(r.with_.values()),
            sum(r.without.values()),
            r.reference(r.with_),
            r.reference(r.without),
        ]
        got = [int(c.replace(",", "")) for c in cells.split(" | ")[:5]]
        assert got == want, setting
        assert cells.split(" | ")[5] == f"{r.ratio:.2f}"
