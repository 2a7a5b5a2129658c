"""Runs every ``*.cqlt`` file under tests/conformance, a run-mode file under each configuration of
the matrix (see README.md here), and checks that the runner itself cannot pass vacuously."""

import os
from pathlib import Path

import pytest

import cq_py
from configurations import CONFIGURATIONS
from conformance.cqlt import Failure, FormatError, Skipped, file_options, run_file, run_text

HERE = Path(__file__).resolve().parent
FILES = sorted(HERE.rglob("*.cqlt"))
# CQLT_IGNORE_SKIPS=1 runs the cases behind `skip` blocks too (are the known bugs still there?).
IGNORE_SKIPS = os.environ.get("CQLT_IGNORE_SKIPS", "") not in ("", "0")


def test_the_corpus_is_there():
    areas = {p.relative_to(HERE).parts[0] for p in FILES}
    assert {
        "plan",
        "windows",
        "joins",
        "aggregates",
        "set_operations",
        "streams",
        "relations",
        "recursion",
        "input_errors",
    } <= areas, f"conformance areas found: {sorted(areas)}"
    assert not [p for p in FILES if "slice" in str(p.relative_to(HERE))]  # features, not milestones


# The matrix (README.md here): every run-mode file runs under every engine configuration
# (SEMANTICS.md §5: the same results) × each way of splitting its push blocks × with or without a
# snapshot and restore after every push (dts and heartbeat: a scheduled engine takes no snapshot).
# A file
# that names one of these options in its `options` block runs only where the matrix agrees with it
# (a file about hybrid=false runs under the dts configurations with hybrid=false); plan-mode files
# run once.
BATCHES = {"whole": "all", "by1": 1, "by7": 7}


def _matrix() -> dict[str, dict]:
    out = {}
    for engine, options in CONFIGURATIONS.items():
        for batch, rows in BATCHES.items():
            for snapshot in (False, True) if options["executor"] != "scheduled" else (False,):
                name = f"{engine}-{batch}{'-snapshot' if snapshot else ''}"
                out[name] = {**options, "batch_rows": rows, "snapshot": snapshot}
    return out


MATRIX = _matrix()


def _agrees(config: dict, opts: dict) -> bool:
    for key in ("executor", "lifetime", "batch_rows", "snapshot", "threads"):
        if key in opts and config[key] != opts[key]:
            return False
    # hybrid is an option of the dts executor: a file that names it is about dts.
    return "hybrid" not in opts or (
        config["executor"] == "dts" and config.get("hybrid", True) == opts["hybrid"]
    )


def _runs(path: Path) -> list:
    opts = file_options(path.read_text(), str(path))
    name = str(path.relative_to(HERE))
    if opts.get("mode", "run") != "run":
        return [pytest.param(path, None, id=name)]
    runs = [pytest.param(path, c, id=f"{name}[{k}]") for k, c in MATRIX.items() if _agrees(c, opts)]
    assert runs, f"{name}: its options leave no configuration of the matrix"
    return runs


@pytest.mark.parametrize(("path", "config"), [r for p in FILES for r in _runs(p)])
def test_conformance(path, config):
    skipped = failed = None
    try:
        checked = run_file(path, root=HERE, ignore_skips=IGNORE_SKIPS, defaults=config)
    except Skipped as s:
        skipped = f"{s.where}: {s.reason}"
    except (Failure, FormatError) as e:
        failed = str(e)
    # Outside the except clauses, so that pytest shows the message and not a chain of tracebacks.
    if skipped:
        pytest.skip(skipped)
    if failed:
        pytest.fail(failed, pytrace=False)
    assert checked > 0


# ---------------------------------------------------------------------------------------------
# The runner must catch mistakes: each case is a good file and the same file with one mistake.
# ---------------------------------------------------------------------------------------------

RUN = """\
statement ok
REGISTER STREAM s(a INT, b DOUBLE);
REGISTER QUERY q AS ISTREAM(SELECT a, b * 2 AS c FROM s [Range 10] WHERE b > 0.5);

push s
a,b,ts
1,0.9,0
2,0.1,1
3,1,4

query q
----
a,c,ts
{rows}
"""

STATEMENT_ERROR = """\
statement error {cls} at {at}
REGISTER STREAM s(a INT);
REGISTER QUERY q AS SELECT zz FROM s;
----
{message}
"""

PLAN = """\
options mode=plan

statement ok
REGISTER STREAM s(a INT);
REGISTER QUERY q AS SELECT a FROM s [Range 5];

explain
----
{line1}
{line2}

statement {verdict}
REGISTER QUERY r AS SELECT a FROM q [Now];
"""

PUSH_ERROR = """\
statement ok
REGISTER STREAM s(a INT);

push s
a,ts
1,5

push error s {cls}
a,ts
2,{ts}
----
must not decrease
"""

# Two fetches: the first at progress 4 (rows before 4 are final), the second after close.
TWO_FETCHES = """\
statement ok
REGISTER STREAM s(a INT);
REGISTER QUERY q AS ISTREAM(SELECT a FROM s [Range 2]);

push s
a,ts
1,0
2,3
3,4

query q
----
a,ts
{first}

close

query q
----
a,ts
{second}
"""

GOOD_AND_BAD = {
    "wrong expected rows": (
        RUN.format(rows="1,1.8,0\n3,2.0,4"),
        RUN.format(rows="1,1.8,0\n3,2.2,4"),
    ),
    "a missing expected row": (RUN.format(rows="1,1.8,0\n3,2.0,4"), RUN.format(rows="1,1.8,0")),
    "an extra expected row": (
        RUN.format(rows="1,1.8,0\n3,2.0,4"),
        RUN.format(rows="1,1.8,0\n3,2.0,4\n3,2.0,4"),
    ),
    "rows in the wrong order": (
        RUN.format(rows="1,1.8,0\n3,2.0,4"),
        RUN.format(rows="3,2.0,4\n1,1.8,0"),
    ),
    "NULL expected where a value is": (
        RUN.format(rows="1,1.8,0\n3,2.0,4"),
        RUN.format(rows="1,,0\n3,2.0,4"),
    ),
    "wrong header": (
        RUN.format(rows="1,1.8,0\n3,2.0,4"),
        RUN.format(rows="1,1.8,0\n3,2.0,4").replace("a,c,ts", "a,b,ts"),
    ),
    "wrong error text": (
        STATEMENT_ERROR.format(cls="CQLSemanticError", at="2:28", message="unknown column 'zz'"),
        STATEMENT_ERROR.format(cls="CQLSemanticError", at="2:28", message="unknown column 'yy'"),
    ),
    "wrong error class": (
        STATEMENT_ERROR.format(cls="CQLSemanticError", at="2:28", message="'zz'"),
        STATEMENT_ERROR.format(cls="CQLSyntaxError", at="2:28", message="'zz'"),
    ),
    "wrong error position": (
        STATEMENT_ERROR.format(cls="CQLSemanticError", at="2:28", message="'zz'"),
        STATEMENT_ERROR.format(cls="CQLSemanticError", at="1:28", message="'zz'"),
    ),
    "an expected error that does not happen": (
        STATEMENT_ERROR.format(cls="CQLSemanticError", at="2:28", message="'zz'"),
        STATEMENT_ERROR.format(cls="CQLSemanticError", at="2:28", message="'zz'").replace(
            "zz", "a"
        ),
    ),
    "a wrong explain line": (
        PLAN.format(line1="Window [Range 5] <- #0", line2="Output q", verdict="error"),
        PLAN.format(line1="Window [Range 6] <- #0", line2="Output q", verdict="error"),
    ),
    "explain lines out of order": (
        PLAN.format(line1="Window [Range 5] <- #0", line2="Output q", verdict="error"),
        PLAN.format(line1="Output q", line2="Window [Range 5] <- #0", verdict="error"),
    ),
    "plan mode: an expected error that does not happen": (
        PLAN.format(line1="StreamScan s", line2="Output q", verdict="error"),
        PLAN.format(line1="StreamScan s", line2="Output q", verdict="error").replace(
            "FROM q [Now]", "FROM q"
        ),
    ),
    "plan mode: statement ok that fails": (
        PLAN.format(line1="StreamScan s", line2="Output q", verdict="error"),
        PLAN.format(line1="StreamScan s", line2="Output q", verdict="ok"),
    ),
    "a push error that does not happen": (
        PUSH_ERROR.format(cls="InputError", ts=4),
        PUSH_ERROR.format(cls="InputError", ts=6),
    ),
    "a final row expected only in a later block": (
        TWO_FETCHES.format(first="1,0\n2,3", second="3,4"),
        TWO_FETCHES.format(first="1,0", second="2,3\n3,4"),
    ),
    "an expected row that never comes": (
        TWO_FETCHES.format(first="1,0\n2,3", second="3,4"),
        TWO_FETCHES.format(first="1,0\n2,3\n3,4", second="3,4"),
    ),
    "an expected row at the last fetch, never final": (
        TWO_FETCHES.format(first="1,0\n2,3\n3,4", second="").split("close")[0],
        TWO_FETCHES.format(first="1,0\n2,3\n3,4\n4,4", second="").split("close")[0],
    ),
    "a push error of the wrong class": (
        PUSH_ERROR.format(cls="InputError", ts=4),
        PUSH_ERROR.format(cls="CQLSemanticError", ts=4),
    ),
}


@pytest.mark.parametrize("mistake", list(GOOD_AND_BAD))
def test_runner_catches_mistakes(mistake):
    good, bad = GOOD_AND_BAD[mistake]
    assert run_text(good, "good.cqlt") > 0  # the same file without the mistake passes
    with pytest.raises(Failure) as e:
        run_text(bad, "bad.cqlt")
    assert str(e.value).startswith("bad.cqlt:")


def test_runner_rejects_malformed_files_and_reports_skips():
    for text in [
        "statment ok\nREGISTER STREAM s(a INT);\n",  # unknown directive
        "query q\na,ts\n",  # no ----
        "statement ok\nREGISTER STREAM s(a INT);\n\noptions mode=plan\n",  # options late
        "options mode=plan\n\npush s\na,ts\n1,1\n",
    ]:  # push in plan mode
        with pytest.raises(FormatError):
            run_text(text, "bad.cqlt")
    with pytest.raises(Skipped, match="not built yet"):
        run_text(
            "statement ok\nREGISTER STREAM s(a INT);\n\nskip not built yet\n\n"
            "query nope\n----\nx\n",
            "skip.cqlt",
        )


# ---------------------------------------------------------------------------------------------
# The matrix: what each axis does to a run, and which configurations a file's options leave.
# ---------------------------------------------------------------------------------------------


def test_the_matrix_is_whole():
    # dts on one engine: 2 lifetimes x 2 hybrid x 3 batches x 2; heartbeat: 2 x 3 x 2; dts on two
    # engines (threads=2): 2 lifetimes x 3 batches x 2; scheduled: 2 batch x 2 gatekeeper x 2
    # lifetimes x 3 batches.
    assert len(MATRIX) == 72
    assert not [c for c in MATRIX.values() if c["snapshot"] and c["executor"] == "scheduled"]
    assert {
        (c["executor"], c["lifetime"], c.get("hybrid", True), c["batch_rows"], c["snapshot"])
        for c in MATRIX.values()
    } >= {("dts", "negative", False, 7, True), ("heartbeat", "direct", True, 1, True)}
    assert {c["threads"] for c in MATRIX.values()} == {1, 2}
    scheduled = {
        (c["batch"], c["gatekeeper"], c["lifetime"], c["batch_rows"])
        for c in MATRIX.values()
        if c["executor"] == "scheduled"
    }
    assert len(scheduled) == 24
    assert (7, False, "negative", 1) in scheduled


def test_a_file_runs_where_its_options_agree():
    def configs(options: str) -> list[dict]:
        path = HERE / "_matrix_probe.cqlt"
        try:
            path.write_text(f"options {options}\n\nclose\n" if options else "close\n")
            return [p.values[1] for p in _runs(path)]
        finally:
            path.unlink()

    assert len(configs("")) == 72
    published = configs("executor=dts hybrid=false")
    assert len(published) == 12
    assert all(c["hybrid"] is False for c in published)
    heartbeat = configs("executor=heartbeat")
    assert len(heartbeat) == 12
    assert sum(c["snapshot"] for c in heartbeat) == 6
    assert len(configs("executor=scheduled")) == 24
    assert len(configs("lifetime=direct batch_rows=all snapshot=false")) == 8
    assert len(configs("threads=1")) == 60
    assert configs("mode=plan") == [None]


def test_batch_rows_splits_each_push(monkeypatch):
    sizes = []
    push = cq_py.Engine.push

    def spy(self, stream, data, ts="ts"):
        sizes.append(data.num_rows)
        return push(self, stream, data, ts=ts)

    monkeypatch.setattr(cq_py.Engine, "push", spy)
    good = TWO_FETCHES.format(first="1,0\n2,3", second="3,4")
    for rows, want in (("all", [3]), (1, [1, 1, 1]), (2, [2, 1]), (7, [3])):
        sizes.clear()
        assert run_text(good, "good.cqlt", defaults={"batch_rows": rows}) > 0
        assert sizes == want


def test_snapshot_restores_after_every_push(monkeypatch):
    restored = []
    restore = cq_py.Engine.restore.__func__

    def spy(cls, data):
        restored.append(len(data))
        return restore(cls, data)

    monkeypatch.setattr(cq_py.Engine, "restore", classmethod(spy))
    good = TWO_FETCHES.format(first="1,0\n2,3", second="3,4")
    assert run_text(good, "good.cqlt", defaults={"batch_rows": 1, "snapshot": True}) > 0
    assert len(restored) == 4  # three pushes of one row, and close
    with pytest.raises(FormatError, match="needs executor=dts or heartbeat"):
        run_text(good, "good.cqlt", defaults={"executor": "scheduled", "snapshot": True})


def test_a_skip_block_may_name_the_configurations_it_applies_to():
    text = (
        "statement ok\nREGISTER STREAM s(a INT);\n\n"
        "skip lifetime=negative snapshot=true a bug of one corner\n\n"
        "query nope\n----\nx\n"
    )
    with pytest.raises(Skipped, match=r"^skip.cqlt:4: a bug of one corner$"):
        run_text(text, "skip.cqlt", defaults={"lifetime": "negative", "snapshot": True})
    with pytest.raises(Failure, match="unknown query 'nope'"):  # the skip does not apply
        run_text(text, "skip.cqlt", defaults={"lifetime": "negative"})
