"""The planner's view of the core's operator descriptors (cq_core.operator_descriptors(),
src_cpp/operators/descriptor.h): every operator the planner emits is described, and what it plans
agrees with what the descriptor says the operator emits."""

from pathlib import Path

import pytest

from conformance import cqlt
from cq_py.errors import CQError
from cq_py.parser import parse
from cq_py.planner import Catalog, Planner
from cq_py.planner.operators import descriptor, descriptors, find

CORPUS = sorted((Path(__file__).parents[1] / "conformance").rglob("*.cqlt"))


def _scripts():
    """Each conformance file's statement blocks that the planner accepts, as the runner executes
    them: one script each, in order."""
    for path in CORPUS:
        blocks = cqlt.parse(path.read_text(), str(path))
        texts = [b.text for b in blocks if b.kind == "statement" and not b.error]
        if any(t.strip() for t in texts):
            yield path.name, texts


def _plan(texts: list[str]) -> Catalog:
    cat = Catalog()
    for text in texts:
        cat, _ = Planner(cat, "ms", text).plan(parse(text))
    return cat


def test_the_corpus_reaches_most_operators():
    assert len(CORPUS) >= 80
    seen: set[str] = set()
    for _, texts in _scripts():
        try:
            cat = _plan(texts)
        except CQError:
            continue
        seen |= {n.op for n in cat.nodes.values()}
    # Every operator but the one a query registered while the engine runs needs, and the
    # reference operators, planned under executor='scheduled' only (the corpus runs under every
    # executor; tests/txn/ covers them).
    assert {d.name for d in descriptors()} - seen <= {
        "relation_since",
        "reference_join",
        "model_apply",
    }


@pytest.mark.parametrize(
    ("name", "texts"), list(_scripts()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_planned_operator_is_described_and_emits_its_kind(name, texts):
    try:
        cat = _plan(texts)
    except CQError:
        pytest.skip("a script the planner refuses (its file expects that)")
    for n in cat.nodes.values():
        d = find(n.op)
        assert d is not None, f"{name}: #{n.id} {n.op} has no descriptor"
        if d.output == "as input":
            assert n.kind == cat.nodes[n.inputs[0]].kind, f"{name}: #{n.id} {n.op}"
        else:
            assert n.kind == d.output, f"{name}: #{n.id} {n.op}"


def test_the_facts_the_planner_relies_on():
    # Holder ids pass unchanged through these (a second read of a relation must be told apart);
    # a reference join's key lookup finds at most one row per stream row, a model call one.
    assert {d.name for d in descriptors() if d.keeps_identity} == {
        "filter",
        "project",
        "union_all",
        "relation_since",
        "reference_join",
        "model_apply",
    }
    # Sources are one per registered name, outputs one per query: never shared; nor a reference
    # operator, each query's own read (paper 002: a query's reads commit together).
    assert {d.name for d in descriptors() if not d.shareable} == {
        "sink",
        "stream_scan",
        "relation_scan",
        "reference_join",
        "model_apply",
    }
    assert {d.name for d in descriptors() if d.relation_to_stream} == {
        "istream",
        "dstream",
        "rstream",
        "istream_aggregate",
        "dstream_aggregate",
        "istream_join",
        "swj_route_istream",
        "master_trigger",
    }
    assert {d.name: d.firing for d in descriptors() if d.firing} == {
        "stream_scan": "input",
        "relation_scan": "input",
        "window": "expirations",
        "slide_window": "expirations",
        "rstream": "every tick",
        "delay": "delayed output",
    }
    assert descriptor("join").lifetimes == "join"
    assert descriptor("row_window").partition == "never"
    assert descriptor("window").negative_form
    assert not descriptor("join").negative_form
    with pytest.raises(KeyError):
        descriptor("no_such_operator")
