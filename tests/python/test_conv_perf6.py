"""Compiled ResNet-step kernels: im2col's window views stored by shared kernels (fusion's
slab stores: views of one rank stacked along a new dim share up to 6 stores a kernel),
and compiled adaptive average pooling's index tensors as graph constants (no aranges
or index arithmetic computed on every call). Values against torch where it is installed,
and the kernel counts from the profiler."""
import collections
import re

import numpy as np
import pytest

import symtrace as st
import symtrace.profiler as sp

F = st.nn.functional


def _kernels(fn, *args):
    """{kernel name without its k<n>_ prefix: launches} of one call of fn (warmed up)."""
    fn(*args)
    with sp.profile() as p:
        out = fn(*args)
    agg = collections.Counter()
    for r in p.rows:
        agg[re.sub(r"^k\d+_", "", r.name)] += r.calls
    return agg, out


def _views(x):
    return st.stack([x[:, :, i:i + 6, j:j + 6] for i in range(3) for j in range(3)], 2)


def test_stacked_window_views_share_kernels():
    x = st.tensor(np.random.RandomState(0).randn(2, 3, 8, 8).astype(np.float32))
    agg, y = _kernels(st.compile(_views), x)
    assert agg["slab"] == 2            # 9 window views: 5 + 4 stores (was 9 kernels)
    np.testing.assert_array_equal(y.numpy(), _views(x).numpy())


def test_stacked_views_of_several_sources_and_dtypes():
    def f(a, b):
        return st.stack([a[:, 1:], a[:, :-1], b.t()[:, 1:], b.t()[:, :-1].to(st.float64)], 0)
    ra = np.random.RandomState(1)
    a = st.tensor(ra.randn(5, 7))
    b = st.tensor(ra.randn(7, 5).astype(np.float32))
    agg, y = _kernels(st.compile(f), a, b)
    np.testing.assert_array_equal(y.numpy(), f(a, b).numpy())
    an, bn = a.numpy(), b.numpy().T
    np.testing.assert_array_equal(y.numpy(), np.stack([an[:, 1:], an[:, :-1], bn[:, 1:], bn[:, :-1]], 0))


def test_cat_of_views_keeps_one_store_each():
    # parts along the cat dim itself do not share (their slices' sizes may differ)
    def f(x):
        return st.cat([x[:, 1:], x[:, :2], x[:, ::2]], 1)
    x = st.tensor(np.arange(24, dtype=np.float32).reshape(4, 6))
    agg, y = _kernels(st.compile(f), x)
    xn = x.numpy()
    np.testing.assert_array_equal(y.numpy(), np.concatenate([xn[:, 1:], xn[:, :2], xn[:, ::2]], 1))


def test_stacked_views_dynamic_batch():
    cf = st.compile(_views, dynamic=True)
    r = np.random.RandomState(2)
    for n in (2, 5, 3):
        x = st.tensor(r.randn(n, 3, 8, 8).astype(np.float32))
        np.testing.assert_array_equal(cf(x).numpy(), _views(x).numpy())


def test_compiled_conv2d_im2col_values_and_kernels():
    torch = pytest.importorskip("torch")
    r = np.random.RandomState(3)
    xs = r.randn(4, 8, 12, 12).astype(np.float32)
    ws = (r.randn(8, 8, 3, 3) * 0.1).astype(np.float32)

    def f(x, w):
        y = F.conv2d(x, w, padding=1)
        (y * y).sum().backward()
        return y

    x = st.tensor(xs, requires_grad=True)
    w = st.tensor(ws, requires_grad=True)
    cf = st.compile(f)
    cf(x, w)
    x.grad = w.grad = None
    with sp.profile() as p:
        y = cf(x, w)
    slab = sum(r.calls for r in p.rows if r.name.endswith("_slab"))
    # forward im2col and the input gradient's im2col: 2 kernels each, not 9 (plus
    # the paddings' interiors)
    assert slab <= 8, slab
    tx = torch.tensor(xs, requires_grad=True)
    tw = torch.tensor(ws, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, padding=1)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,out", [((4, 8, 30, 30), 7), ((2, 3, 10, 7), (3, 4)), ((2, 3, 9), 4)])
def test_compiled_adaptive_avg_pool_constant_indices(shape, out):
    xs = np.random.RandomState(4).randn(*shape).astype(np.float32)
    pool = F.adaptive_avg_pool1d if len(shape) == 3 else F.adaptive_avg_pool2d

    def f(x):
        y = pool(x, out)
        (y * y).sum().backward()
        return y

    cf = st.compile(f)
    x = st.tensor(xs, requires_grad=True)
    cf(x)
    agg, _ = _kernels(lambda: cf(x))
    x.grad = None
    y = cf(x)
    # no index arithmetic on the call: aranges, floor divisions, window masks
    assert not [k for k in agg if "arange" in k or "floor_divide" in k or k in ("add_lt", "add_where")], agg
    # eager values: the same
    xe = st.tensor(xs, requires_grad=True)
    ye = pool(xe, out)
    (ye * ye).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ye.detach().numpy(), rtol=1e-6, atol=1e-6)
    torch = pytest.importorskip("torch")
    tx = torch.tensor(xs, requires_grad=True)
    tpool = torch.nn.functional.adaptive_avg_pool1d if len(shape) == 3 else torch.nn.functional.adaptive_avg_pool2d
    ty = tpool(tx, out)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_compiled_adaptive_avg_pool_kernel_count():
    xs = np.random.RandomState(5).randn(4, 8, 30, 30).astype(np.float32)

    def f(x):
        y = F.adaptive_avg_pool2d(x, 7)
        (y * y).sum().backward()
        return y

    cf = st.compile(f)
    x = st.tensor(xs, requires_grad=True)
    cf(x)
    agg, _ = _kernels(lambda: cf(x))
    assert sum(agg.values()) <= 34, agg    # was 60: about 30 of them index arithmetic
