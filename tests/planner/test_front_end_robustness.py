"""The front end only ever raises CQLSyntaxError or CQLSemanticError, whatever the text.

Random token sequences and random mutations of valid scripts (the paper scripts and the examples)
go through the whole front end: parse, name and type checks, loop analysis and explain.
"""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cq_py
from budget import examples
from cq_py.parser.tokenizer import tokenize

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [p.read_text() for p in sorted((ROOT / "examples").rglob("*.cql"))]
TOKENS = sorted(
    {t.text for s in SCRIPTS for t in tokenize(s) if t.text}
    | {
        "(",
        ")",
        ",",
        ";",
        "[",
        "]",
        "<",
        ">",
        "*",
        ".",
        "NULL",
        "CASE",
        "WHEN",
        "THEN",
        "END",
        "CAST",
        "AS",
        "DISTINCT",
        "HAVING",
        "GROUP",
        "BY",
        "EXCEPT",
        "INTERSECT",
        "DSTREAM",
        "RSTREAM",
        "REGISTER",
        "RELATION",
        "Slide",
        "Unbounded",
        "'x'",
        "1.5",
        "-",
        "/",
        "%",
        "IN",
        "BETWEEN",
    }
)


def front_end(text: str, **options) -> None:
    try:
        cq_py.explain(text, **options)
    except (cq_py.CQLSyntaxError, cq_py.CQLSemanticError) as e:
        err = e
    else:
        return
    assert str(err)
    if err.line is not None:
        assert 1 <= err.line <= max(1, text.count("\n") + 1)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=40))
def test_random_token_sequences(tokens):
    front_end(" ".join(tokens))
    front_end("REGISTER STREAM s(a INT, b DOUBLE); REGISTER QUERY q AS " + " ".join(tokens))


@st.composite
def mutated(draw):
    script = draw(st.sampled_from(SCRIPTS))
    toks = [t.text for t in tokenize(script) if t.text]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "swap", "replace"]))
        i = draw(st.integers(0, len(toks) - 1))
        if kind == "delete" and len(toks) > 1:
            del toks[i]
        elif kind == "insert":
            toks.insert(i, draw(st.sampled_from(TOKENS)))
        elif kind == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        else:
            toks[i] = draw(st.sampled_from(TOKENS))
    return " ".join(toks)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.booleans())
def test_mutated_scripts(text, auto_delay):
    front_end(text, auto_delay=auto_delay)


def test_every_example_script_explains():
    assert SCRIPTS
    for s in SCRIPTS:
        assert "Execution order (DTS)" in cq_py.explain(s)
