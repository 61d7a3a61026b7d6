# The version check of a compiled backward (runtime/cfn.c, CompiledFunctionBackward):
# a saved tensor written in place after the forward raises only when the backward
# that runs reads it, as eager autograd raises only when a node that saved it runs.
# Found by scripts/fuzz_views.py: z = x * 2; y = z.exp(); y.mul_(2); return z
# (the in-place write is a graph break, y an output of the prefix graph whose
# backward saves exp's result) raised from the second call on, for a backward
# from z alone, which never needs exp's output.
import pytest

import symtrace as st


def outcome(fn, backward_of):
    b = st.rand(3, requires_grad=True)
    outs = fn(b.clone())
    try:
        backward_of(outs).sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return "raise"
    return [round(v, 5) for v in (b.grad * 0 + 1).tolist()]


def written_after(x):
    z = x * 2
    y = z.exp()
    y.mul_(2)
    return z, y


def read_after(x):
    z = x * 2
    y = z.exp()
    w = y * z
    y.mul_(2)
    return z, w


CASES = [
    (written_after, lambda o: o[0], "ok"),       # z's gradient does not read exp's output
    (written_after, lambda o: o[1], "raise"),    # y's does (mul_ then exp's node)
    (read_after, lambda o: o[0], "ok"),
    # w = y * z saved y in eager; the compiled backward recomputed exp(z) from z (a
    # rematerialization) and gave the gradient of the values before the write: a
    # graph output is saved now, never recomputed
    (read_after, lambda o: o[1], "raise"),
]


@pytest.mark.parametrize("fn,pick,want", CASES)
def test_compiled_raises_exactly_where_eager_raises(fn, pick, want):
    st.reset()
    cf = st.compile(fn)
    for _ in range(3):
        e = outcome(fn, pick)
        c = outcome(cf, pick)
        assert (e == "raise") == (want == "raise")
        assert c == e
