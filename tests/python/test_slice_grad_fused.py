"""The gradient of a slice is the incoming gradient written into zeros at the
slice (a slice_scatter, elementwise: it fuses with its neighbours) rather
than a scatter_add at an arange index, which ran as a serial scatter kernel.
Values against numpy and torch; the compiled backward launches no scatter."""
import numpy as np
import pytest

import symtrace as st
import symtrace.profiler as prof


def _kernel_names(fn, *args):
    with prof.profile() as p:
        fn(*args)
    return [r.name for r in p.rows]


@pytest.mark.parametrize("sl", [(Ellipsis, slice(0, 16)), (slice(None), slice(1, 7, 2)),
                                (slice(2, None, 3),), (Ellipsis, slice(-5, None))])
def test_slice_grad_values_and_no_scatter(sl):
    xv = np.random.default_rng(0).standard_normal((4, 6, 18)).astype(np.float32)
    yshape = xv[sl].shape
    gv = np.random.default_rng(1).standard_normal(yshape).astype(np.float32)

    def step(x, g):
        (x[sl] * 2.0).backward(g)

    f = st.compile(step)
    want = np.zeros_like(xv)
    want[sl] = 2 * gv
    for i in range(3):
        x = st.tensor(xv, requires_grad=True)
        if i == 2:
            names = _kernel_names(f, x, st.tensor(gv))
            assert not any("scatter_add" in n for n in names), names
        else:
            f(x, st.tensor(gv))
        np.testing.assert_array_equal(x.grad.numpy(), want)


def test_chunked_gates_grad_matches_torch():
    torch = pytest.importorskip("torch")
    wv = np.random.default_rng(2).standard_normal((8, 64)).astype(np.float32)

    def gates(L, w):
        i, f, c, o = w.chunk(4, 1)
        return (i.sigmoid() * c.tanh() + f.sigmoid() * o.tanh()).sum()

    h = st.compile(lambda w: gates(st, w).backward())
    tw = torch.tensor(wv, requires_grad=True)
    gates(torch, tw).backward()
    for _ in range(3):
        w = st.tensor(wv, requires_grad=True)
        h(w)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-6)
