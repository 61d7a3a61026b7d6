# Reductions: sum mean prod amax amin argmax argmin max min, over dims given as
# None / int / negative int / tuple, with keepdim; against numpy float64 and torch.
import numpy as np
import pytest

import symtrace as st
from conftest import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_close, check_torch,
                      make, is_float, RTOL)

DIMS = [None, 0, -1, 1, (0, 2), (-1, 0)]
DIMKEEP = [(d, k) for d in DIMS for k in (False, True) if not (d is None and k)]
SHAPE = (3, 4, 5)


def _np_dim(dim):
    return dim if dim is None or isinstance(dim, int) else tuple(dim)


def _atol(x, name, dim):
    if not is_float(name):
        return None
    return RTOL[name] * max(1.0, float(np.abs(x).sum(axis=_np_dim(dim)).max() if x.size else 1.0))


def _call(fn, x, dim, keepdim):
    if dim is None:
        return fn(x)
    return fn(x, dim, keepdim=keepdim)


@pytest.mark.parametrize("dim,keepdim", DIMKEEP, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", ["contig", "transposed"])
def test_sum(dtype, dim, keepdim, layout):
    x = make(SHAPE, dtype, layout)
    exp = x.np.astype(np.float64 if is_float(dtype) else np.int64).sum(axis=_np_dim(dim), keepdims=keepdim)
    out = dtype if is_float(dtype) else "int64"  # ints and bool sum to int64, as torch
    assert_close(_call(st.sum, x.st, dim, keepdim), exp, dtype=out, atol=_atol(x.np, dtype, dim))
    assert_close(_call(lambda t, *a, **k: t.sum(*a, **k), x.st, dim, keepdim), exp, dtype=out,
                 atol=_atol(x.np, dtype, dim))


@pytest.mark.parametrize("dim,keepdim", DIMKEEP, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mean(dtype, dim, keepdim):
    x = make(SHAPE, dtype, "strided")
    exp = x.np.mean(axis=_np_dim(dim), keepdims=keepdim)
    assert_close(_call(st.mean, x.st, dim, keepdim), exp, dtype=dtype, atol=_atol(x.np, dtype, dim))
    assert_close(_call(lambda t, *a, **k: t.mean(*a, **k), x.st, dim, keepdim), exp, dtype=dtype,
                 atol=_atol(x.np, dtype, dim))


@pytest.mark.parametrize("dim", [None, 0, 1, -1], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
def test_prod(dtype, dim):
    x = make((3, 4, 3), dtype, "contig", low=0.5 if is_float(dtype) else -2, high=1.5 if is_float(dtype) else 2)
    exp = x.np.astype(np.float64 if is_float(dtype) else np.int64).prod(axis=dim)
    out = dtype if is_float(dtype) else "int64"
    got = st.prod(x.st) if dim is None else st.prod(x.st, dim)
    assert_close(got, exp, dtype=out, rtol=None if is_float(dtype) else None)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_amax_amin(dtype, dim, keepdim):
    x = make(SHAPE, dtype, "transposed")
    d = () if dim is None else dim
    ax = None if dim is None else _np_dim(dim)
    assert_close(st.amax(x.st, d, keepdim), x.np.max(axis=ax, keepdims=keepdim), dtype=dtype)
    assert_close(st.amin(x.st, dim=d, keepdim=keepdim), x.np.min(axis=ax, keepdims=keepdim), dtype=dtype)
    assert_close(x.st.amax(d, keepdim=keepdim), x.np.max(axis=ax, keepdims=keepdim), dtype=dtype)


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), (-1, False), (-1, True)], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
def test_argmax_argmin(dtype, dim, keepdim):
    x = make(SHAPE, dtype, "strided", low=-3, high=3)  # ints: ties; the first index wins
    if dim is None:
        assert_close(st.argmax(x.st), np.argmax(x.np), dtype="int64")
        assert_close(st.argmin(x.st), np.argmin(x.np), dtype="int64")
        return
    ea = np.argmax(x.np, axis=dim)
    ei = np.argmin(x.np, axis=dim)
    if keepdim:
        ea, ei = np.expand_dims(ea, dim), np.expand_dims(ei, dim)
    assert_close(st.argmax(x.st, dim, keepdim=keepdim), ea, dtype="int64")
    assert_close(st.argmin(x.st, dim=dim, keepdim=keepdim), ei, dtype="int64")
    assert_close(x.st.argmax(dim, keepdim), ea, dtype="int64")


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + ["bool"])
def test_max_min_dim(dtype, dim, keepdim):
    x = make(SHAPE, dtype, "transposed", low=-3, high=3)
    for fn, ref in [(st.max, np.max), (st.min, np.min)]:
        r = fn(x.st, dim, keepdim=keepdim)
        v, i = r  # a (values, indices) pair
        exp = ref(x.np, axis=dim, keepdims=keepdim)
        assert_close(r.values, exp, dtype=dtype)
        assert_close(v, exp, dtype=dtype)
        assert_close(r.indices, i.numpy(), dtype="int64")
        idx = i.numpy() if keepdim else np.expand_dims(i.numpy(), dim)
        # the indices point at the extreme values
        np.testing.assert_array_equal(np.take_along_axis(x.np, idx, axis=dim),
                                      ref(x.np, axis=dim, keepdims=True))
    v, i = x.st.max(dim=dim)
    assert tuple(v.shape) == tuple(np.max(x.np, axis=dim).shape)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_max_min_all(dtype):
    x = make(SHAPE, dtype, "strided")
    m = st.max(x.st)
    assert m.dim() == 0 and tuple(m.shape) == ()
    assert_close(m, x.np.max(), dtype=dtype)
    assert_close(st.min(x.st), x.np.min(), dtype=dtype)
    assert_close(x.st.max(), x.np.max(), dtype=dtype)
    assert x.st.max().item() == (x.np.max().item() if dtype != "bool" else bool(x.np.max()))


def test_reduce_0d_and_item():
    x = st.tensor(2.5)
    assert_close(st.sum(x), np.float64(2.5), dtype="float32")
    assert_close(st.mean(x), np.float64(2.5), dtype="float32")
    s = st.sum(st.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert s.dim() == 0 and s.item() == 10.0


def test_reduce_large_row_accuracy():
    # accumulation accuracy over a longer row (float32 sum of 4096 values)
    x = make((2, 4096), "float32", low=0, high=1)
    assert_close(st.sum(x.st, 1), x.np.sum(1), dtype="float32", rtol=1e-5)
    assert_close(st.mean(x.st, 1), x.np.mean(1), dtype="float32", rtol=1e-5)
    h = make((4096,), "float16", low=0, high=1)
    assert_close(st.sum(h.st), h.np.sum(), dtype="float16", rtol=1e-2)


def test_reduce_empty(torch):
    x = make((0, 3), "float32")
    check_torch(lambda t: st.sum(t, 0), lambda t: torch.sum(t, 0), x)
    check_torch(lambda t: st.sum(t), lambda t: torch.sum(t), x)
    check_torch(lambda t: st.prod(t, 0), lambda t: torch.prod(t, 0), x)
    check_torch(lambda t: st.amax(t, 0), lambda t: torch.amax(t, 0), x)  # torch raises
    check_torch(lambda t: st.amax(t, 1), lambda t: torch.amax(t, 1), x)


REDS = {
    "sum": lambda m, x, d, k: m.sum(x, d, keepdim=k) if d is not None else m.sum(x),
    "mean": lambda m, x, d, k: m.mean(x, d, keepdim=k) if d is not None else m.mean(x),
    "amax": lambda m, x, d, k: m.amax(x, d if d is not None else (), keepdim=k),
    "amin": lambda m, x, d, k: m.amin(x, d if d is not None else (), keepdim=k),
    "argmax": lambda m, x, d, k: m.argmax(x, d, keepdim=k) if not isinstance(d, tuple) else m.argmax(x),
    "argmin": lambda m, x, d, k: m.argmin(x, d, keepdim=k) if not isinstance(d, tuple) else m.argmin(x),
    "prod": lambda m, x, d, k: m.prod(x, d, keepdim=k) if isinstance(d, int) else m.prod(x),
    "max": lambda m, x, d, k: tuple(m.max(x, d, keepdim=k)) if isinstance(d, int) else m.max(x),
    "min": lambda m, x, d, k: tuple(m.min(x, d, keepdim=k)) if isinstance(d, int) else m.min(x),
}


@pytest.mark.parametrize("dim", [None, 1, (0, 2)], ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", list(REDS))
def test_reduction_torch(torch, name, dtype, dim):
    x = make((2, 3, 4), dtype, "transposed", low=-2, high=2)
    f = REDS[name]
    if name in ("max", "min") and isinstance(dim, int):
        # indices of ties may differ legitimately; compare values, check indices by value
        check_torch(lambda t: f(st, t, dim, False)[0], lambda t: f(torch, t, dim, False)[0], x)
        return
    for keepdim in (False, True):
        check_torch(lambda t: f(st, t, dim, keepdim), lambda t: f(torch, t, dim, keepdim), x,
                    atol=None if not is_float(dtype) else RTOL[dtype] * 8)


@pytest.mark.parametrize("p", [0.5, 0.3, -1.0, -2.5, 0, 1, 1.5, 2, 3])
def test_norm_gradients_at_zero_entries_as_torch(p):
    """norm's gradient where an entry is 0: finite (0) for p < 1 as torch's, where
    |x|^p has an infinite slope or (p < 0) the norm itself is 0; p = 0 is differentiable
    (a zero gradient). Rows with zeros, all zeros, and none."""
    rows = [[1.0, 0.0, -2.0], [0.0, 0.0, 0.0], [1.0, 2.0, -3.0]]
    x = st.tensor(rows, dtype=st.float64, requires_grad=True)
    y = st.norm(x, p, 1)
    want = [np.sum(np.abs(r) > 0) if p == 0 else
            (0.0 if p < 0 and 0 in r else np.sum(np.abs(r) ** p) ** (1 / p)) for r in map(np.array, rows)]
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12)
    y.sum().backward()
    g = x.grad.numpy()
    assert np.isfinite(g).all()
    if p < 1:
        assert g[0][1] == 0 and (g[1] == 0).all()
    torch = pytest.importorskip("torch")
    tx = torch.tensor(rows, dtype=torch.float64, requires_grad=True)
    torch.norm(tx, p, 1).sum().backward()
    tg = tx.grad.numpy() if tx.grad is not None else np.zeros_like(g)   # torch: None for p = 0
    np.testing.assert_allclose(g, tg, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_norms_and_std_round_once_as_torch(torch, dtype):
    # torch accumulates half types in float and rounds the result once: the squares,
    # their sum and the root (norm), the variance and its root (std) stay in float
    x = make((64, 37), dtype, low=-3, high=3)
    for f in (lambda a: a.norm(), lambda a: a.norm(dim=1), lambda a: a.norm(p=3, dim=0),
              lambda a: a.std(1), lambda a: a.std(), lambda a: a.var(0),
              lambda a: (st if isinstance(a, st.Tensor) else torch).linalg.vector_norm(a, dim=1),
              lambda a: (st if isinstance(a, st.Tensor) else torch).std_mean(a, 1)[0]):
        check_torch(f, f, x, rtol=0, atol=0)
