# tests/python/test_detached_write_nonfinite.py - a write through a detached
# alias (v = y.detach(); v.fill_(2)) or under no_grad into a tensor that
# requires grad keeps the tensor's history: traced, its new value is the
# written one plus an exact zero that carries the old value's gradient
# (runtime/trace.c zero_keeping_grad). That zero was old - old, NaN where
# the old value was NaN or inf, and the compiled result came out NaN.
import numpy as np
import pytest

import symtrace as st

XS = np.array([-1., 4., -9., 16., 0.25], dtype=np.float32)


def detached_fill(x):
    v = (x ** 0.5).detach()
    v.fill_(2.0)
    return v


def detached_setitem(x):
    v = (x ** 0.5).detach()
    v[1:3] = 2.0
    return v * 3


def nograd_fill(x, w):
    y = x.log()                   # NaN for the negative entries, -inf at 0
    with st.no_grad():
        y.fill_(1.5)
    return (y * w).sum(), y


@pytest.mark.parametrize("fn", [detached_fill, detached_setitem])
def test_detached_write_over_nan_is_the_written_value(fn):
    want = fn(st.tensor(XS)).numpy()
    g = st.compile(fn)
    for rg in (False, True, True, True):     # the cached calls are the ones that went NaN
        got = g(st.tensor(XS, requires_grad=rg))
        np.testing.assert_array_equal(got.numpy(), want)


def test_nograd_write_over_nan_keeps_the_history_and_the_value():
    xs = np.array([-1., 0., 2., 5.], dtype=np.float32)
    w = st.tensor(np.array([1., 2., 3., 4.], dtype=np.float32))
    res = []
    for compiled in (False, True):
        f = st.compile(nograd_fill) if compiled else nograd_fill
        for _ in range(3):
            x = st.tensor(xs, requires_grad=True)
            loss, y = f(x, w)
            loss.backward()
            res.append((loss.item(), y.detach().numpy().copy(), x.grad.numpy().copy()))
    eager = res[0]
    np.testing.assert_array_equal(eager[1], np.full(4, 1.5, np.float32))
    for loss, y, gx in res[1:]:
        assert loss == eager[0]
        np.testing.assert_array_equal(y, eager[1])
        # finite old values: the gradient goes on into log's backward as eagerly
        np.testing.assert_allclose(gx[2:], eager[2][2:], rtol=1e-6)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    g = st.compile(detached_fill)
    for _ in range(3):
        got = g(st.tensor(XS, requires_grad=True)).numpy()
    want = detached_fill(torch.tensor(XS, requires_grad=True)).numpy()
    np.testing.assert_array_equal(got, want)
