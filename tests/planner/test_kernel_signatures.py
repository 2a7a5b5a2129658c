"""The planner's view of the core's kernel registry (cq_core.kernel_signatures()): exact
signatures, and variadic ones such as case_when, (bool, T)+ T, matched as Kernel::Accepts does."""

from cq_py.planner.expressions import KernelSignature, has_kernel, kernel_signatures

BOOL, INT, DBL, STR = "bool", "int64", "float64", "utf8"


def test_variadic_signature_matches_repeated_groups_then_the_tail():
    k = KernelSignature("case_when", (BOOL, INT, INT), INT, repeat=2)
    assert k.accepts((BOOL, INT, INT))
    assert k.accepts((BOOL, INT, BOOL, INT, INT))
    assert k.accepts((BOOL, INT) * 100 + (INT,))
    assert not k.accepts((BOOL, INT))  # no ELSE
    assert not k.accepts((INT,))
    assert not k.accepts((BOOL, INT, INT, INT))  # a value where a condition goes
    assert not k.accepts((BOOL, INT, BOOL, DBL, INT))
    assert not k.accepts((INT, INT, INT))
    fixed = KernelSignature("add", (INT, INT), INT)
    assert fixed.accepts((INT, INT))
    assert not fixed.accepts((INT, INT, INT))
    assert not fixed.accepts((INT,))


def test_the_core_has_case_when_for_any_arity_and_every_cast():
    for t in (INT, DBL, STR, BOOL):
        assert has_kernel("case_when", (BOOL, t) * 20 + (t,), t)
        assert not has_kernel(
            "case_when", (BOOL, t) * 20 + (t,), BOOL if t != BOOL else INT
        )  # wrong result
    for fn, to in (
        ("cast_int64", INT),
        ("cast_float64", DBL),
        ("cast_utf8", STR),
        ("cast_bool", BOOL),
    ):
        for src in (INT, DBL, STR, BOOL):
            assert has_kernel(fn, (src,), to) == (src != to), (fn, src)
    assert all(
        k.repeat == 0 for name, ks in kernel_signatures().items() if name != "case_when" for k in ks
    )
