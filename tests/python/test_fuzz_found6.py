# Regressions of the bugs the fuzzers (scripts/fuzz_compile.py with and without --dynamic,
# fuzz_views.py, fuzz_guards.py, fuzz_memplan.py) found after the detached-writes /
# object-identity / autograd.Function side-effects merge, each with expected values,
# eager and compiled (the compiled functions called several times: the capture and the
# cached entries).

import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401

W = [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("base_write", [False, True])
def test_view_of_a_detached_alias_written_with_grad(mode, base_write):
    # v = x.detach() is an autograd root of its own: v.sub_(x * 2) gives it a history
    # (SubBackward), and w, a view of v, takes that history (torch: requires_grad True,
    # gradient -2 per element into x). The cached compiled entry returned w remade as a
    # view of x through the detach (no gradient); with a later write into x it was
    # re-derived through the detach too (fuzz_views seed 800186)
    def f(x):
        v = x.detach()
        w = v.reshape(1, -1)
        v.sub_(x * 2)
        if base_write:
            x.add_(1)
        return w, x

    g = maybe_compiled(f, mode)
    for k in range(3):
        b = st.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        w, x = g(b.clone())
        first = 0.0 if base_write else -1.0
        assert w.tolist() == [[first, first - 1, first - 2, first - 3, first - 4, first - 5]]
        assert w.requires_grad and x.requires_grad, k
        (w * st.tensor(W)).sum().backward()
        assert b.grad.tolist() == [[-2.0, -4.0, -6.0], [-8.0, -10.0, -12.0]], k
        b.grad = None
        (x * st.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
        assert b.grad.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], k
