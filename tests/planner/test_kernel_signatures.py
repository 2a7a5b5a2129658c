"""The planner's view of the core's kernel registry (cq_core.kernel_signatures()): exact
signatures, and variadic ones such as case_when, (bool, T)+ T, matched as Kernel::Accepts does."""

from cq_py.planner.expressions import KernelSignature, has_kernel, kernel_signatures

B, I, F, S = "bool", "int64", "float64", "utf8"


def test_variadic_signature_matches_repeated_groups_then_the_tail():
    k = KernelSignature("case_when", (B, I, I), I, repeat=2)
    assert k.accepts((B, I, I))
    assert k.accepts((B, I, B, I, I))
    assert k.accepts((B, I) * 100 + (I,))
    assert not k.accepts((B, I))  # no ELSE
    assert not k.accepts((I,))
    assert not k.accepts((B, I, I, I))  # a value where a condition goes
    assert not k.accepts((B, I, B, F, I))
    assert not k.accepts((I, I, I))
    fixed = KernelSignature("add", (I, I), I)
    assert fixed.accepts((I, I))
    assert not fixed.accepts((I, I, I))
    assert not fixed.accepts((I,))


def test_the_core_has_case_when_for_any_arity_and_every_cast():
    for t in (I, F, S, B):
        assert has_kernel("case_when", (B, t) * 20 + (t,), t)
        assert not has_kernel("case_when", (B, t) * 20 + (t,), B if t != B else I)  # wrong result
    for fn, to in (("cast_int64", I), ("cast_float64", F), ("cast_utf8", S), ("cast_bool", B)):
        for src in (I, F, S, B):
            assert has_kernel(fn, (src,), to) == (src != to), (fn, src)
    assert all(k.repeat == 0 for name, ks in kernel_signatures().items() if name != "case_when" for k in ks)
