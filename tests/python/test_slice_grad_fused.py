"""The gradient of a slice is the incoming gradient written into zeros at the
slice (a slice_scatter, elementwise: it fuses with its neighbours) rather
than a scatter_add at an arange index, which ran as a serial scatter kernel.
Values against numpy and torch; the compiled backward launches no scatter."""
import numpy as np
import pytest

import symtrace as st
import symtrace.profiler as prof


def _kernel_names(fn, *args):
    return [r.name for r in _kernel_rows(fn, *args)]


def _kernel_rows(fn, *args):
    with prof.profile() as p:
        fn(*args)
    return p.rows


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


def _stack_windows(L, x):
    # im2col-style: K strided windows of x stacked (a traced cat: a chain of slice_scatters)
    return L.stack([x[:, :, i:i + x.shape[2] - 4] for i in range(5)], 2)


def test_dynamic_stack_backward_values_and_linear_cost():
    # under dynamic shapes the stack is a slice_scatter chain; its backward gave each
    # link's base the gradient with the link's slice zeroed: K full-size passes
    torch = pytest.importorskip("torch")

    def step(x, w):
        (_stack_windows(st, x) * w).sum().backward()

    f = st.compile(step, dynamic=True)
    for n in (9, 12, 15):
        xv = np.random.default_rng(n).standard_normal((2, 3, n)).astype(np.float32)
        wv = np.random.default_rng(n + 1).standard_normal((2, 3, 5, n - 4)).astype(np.float32)
        f(st.tensor(xv, requires_grad=True), st.tensor(wv))    # (a new size: traced)
        x = st.tensor(xv, requires_grad=True)
        rows = _kernel_rows(f, x, st.tensor(wv))
        tx = torch.tensor(xv, requires_grad=True)
        (_stack_windows(torch, tx) * torch.tensor(wv)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
        # kernels over the whole stacked tensor: its fill, the product and its sum; each
        # link's zeroed base gradient and each read's zero gradient added 2 per link
        full = sum(r.points == wv.size for r in rows)
        assert full <= 4, [(r.name, r.points) for r in rows]


def test_cat_backward_with_a_part_read_twice():
    # a cat whose parts are also used elsewhere, and a slice_scatter that is no cat
    # (its base is an input): gradients as torch's
    torch = pytest.importorskip("torch")

    def fn(L, a, b):
        c = L.cat([a, b * 2, a], 1)
        d = a.clone().slice_scatter(b[:, :2], 1, 1, 3)
        return (c * c).sum() + (d * 3).sum() + a.sum()

    av = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    bv = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    ta, tb = torch.tensor(av, requires_grad=True), torch.tensor(bv, requires_grad=True)
    fn(torch, ta, tb).backward()
    for dyn in (False, True):
        f = st.compile(lambda a, b: fn(st, a, b).backward(), dynamic=dyn)
        for _ in range(3):
            a, b = st.tensor(av, requires_grad=True), st.tensor(bv, requires_grad=True)
            f(a, b)
            np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6, atol=1e-6)
