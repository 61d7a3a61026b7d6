# symtrace.nn.functional: softmax, log_softmax, layer_norm, gelu (both forms),
# cross_entropy (ignore_index, each reduction), dropout (statistics, p=0, p=1,
# eval), relu; against numpy float64 and torch.
import math

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F
from conftest import (FLOAT_DTYPES, LAYOUTS, assert_close, check_torch, make, rng_for, RTOL)

_erf = np.vectorize(math.erf)


def np_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_softmax(dtype, dim, layout):
    x = make((3, 4, 9), dtype, layout, low=-4, high=4)
    assert_close(F.softmax(x.st, dim), np_softmax(x.np, dim), dtype=dtype)
    assert_close(F.softmax(x.st, dim=dim), np_softmax(x.np, dim), dtype=dtype)
    assert_close(st.softmax(x.st, dim), np_softmax(x.np, dim), dtype=dtype)
    assert_close(x.st.softmax(dim), np_softmax(x.np, dim), dtype=dtype)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_log_softmax(dtype, dim, layout):
    x = make((3, 4, 9), dtype, layout, low=-4, high=4)
    exp = np_log_softmax(x.np, dim)
    atol = RTOL[dtype] * 4
    assert_close(F.log_softmax(x.st, dim), exp, dtype=dtype, atol=atol)
    assert_close(st.log_softmax(x.st, dim=dim), exp, dtype=dtype, atol=atol)
    assert_close(x.st.log_softmax(dim), exp, dtype=dtype, atol=atol)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_softmax_stability_and_masking(dtype):
    # large logits must not overflow; -inf entries get probability 0
    big = 1e4 if dtype != "float16" else 3e4
    x = make((2, 5), dtype, values=np.array([[big, big - 1, big - 2, 0, -big], [1, 2, 3, 4, 5]]))
    assert_close(F.softmax(x.st, -1), np_softmax(x.np, -1), dtype=dtype)
    assert_close(F.log_softmax(x.st, -1), np_log_softmax(x.np, -1), dtype=dtype, atol=RTOL[dtype] * 4)
    m = st.tensor([[0.0, float("-inf"), 1.0], [float("-inf"), 2.0, 2.0]]).to(getattr(st, dtype))
    p = F.softmax(m, -1)
    mn = np.array([[0.0, -np.inf, 1.0], [-np.inf, 2.0, 2.0]])
    assert_close(p, np_softmax(mn, -1), dtype=dtype)


def test_softmax_ints_and_dtype_arg(torch):
    x = make((3, 5), "float32")
    check_torch(lambda a: F.softmax(a, -1, dtype=st.float64), lambda a: torch.softmax(a, -1, dtype=torch.float64), x)
    xi = make((3, 5), "int64")
    check_torch(lambda a: F.softmax(a, -1), lambda a: torch.nn.functional.softmax(a, -1), xi)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", ["contig", "transposed", "strided"])
def test_softmax_torch(torch, dtype, layout):
    x = make((2, 3, 8), dtype, layout, low=-5, high=5)
    for dim in (0, 1, 2, -1):
        check_torch(lambda a: F.softmax(a, dim), lambda a: torch.nn.functional.softmax(a, dim), x)
        check_torch(lambda a: F.log_softmax(a, dim), lambda a: torch.nn.functional.log_softmax(a, dim), x,
                    atol=RTOL[dtype] * 4)


def np_layer_norm(x, ns, w, b, eps):
    axes = tuple(range(x.ndim - len(ns), x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("ns", [(8,), (3, 8)], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", ["contig", "strided", "transposed"])
def test_layer_norm(dtype, ns, affine, layout):
    x = make((2, 3, 8), dtype, layout, low=-3, high=3)
    w = make(ns, dtype, low=0.5, high=1.5) if affine else None
    b = make(ns, dtype) if affine else None
    eps = 1e-5
    exp = np_layer_norm(x.np, ns, w.np if affine else None, b.np if affine else None, eps)
    atol = RTOL[dtype] * 5
    got = F.layer_norm(x.st, ns, w.st if affine else None, b.st if affine else None, eps)
    assert_close(got, exp, dtype=dtype, atol=atol)
    got = F.layer_norm(x.st, list(ns), weight=w.st if affine else None, bias=b.st if affine else None)
    assert_close(got, exp, dtype=dtype, atol=atol)


def test_layer_norm_eps_and_constant_rows():
    x = make((2, 4), "float64", values=np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0]]))
    for eps in (1e-5, 0.1):
        assert_close(F.layer_norm(x.st, (4,), None, None, eps), np_layer_norm(x.np, (4,), None, None, eps),
                     dtype="float64")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_layer_norm_torch(torch, dtype):
    x = make((4, 16), dtype, "transposed", low=-2, high=2)
    w = make((16,), dtype)
    b = make((16,), dtype)
    f_st = lambda a, w_, b_: F.layer_norm(a, (16,), w_, b_, 1e-5)
    f_th = lambda a, w_, b_: torch.nn.functional.layer_norm(a, (16,), w_, b_, 1e-5)
    check_torch(f_st, f_th, x, w, b, atol=RTOL[dtype] * 5)
    check_torch(lambda a: F.layer_norm(a, [16]), lambda a: torch.nn.functional.layer_norm(a, [16]), x,
                atol=RTOL[dtype] * 5)


def np_gelu(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gelu(dtype, approximate, layout):
    x = make((3, 4, 5), dtype, layout, low=-4, high=4)
    exp = np_gelu(x.np, approximate)
    assert_close(F.gelu(x.st, approximate=approximate), exp, dtype=dtype)
    if approximate == "none":
        assert_close(F.gelu(x.st), exp, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_gelu_relu_torch(torch, dtype):
    x = make((2, 3, 4), dtype, "strided", low=-4, high=4)
    for ap in ("none", "tanh"):
        check_torch(lambda a: F.gelu(a, approximate=ap), lambda a: torch.nn.functional.gelu(a, approximate=ap), x)
    check_torch(F.relu, torch.nn.functional.relu, x)
    assert_close(F.relu(x.st), np.maximum(x.np, 0), dtype=dtype)


def np_cross_entropy(logits, target, ignore_index=-100, reduction="mean"):
    lsm = np_log_softmax(logits, 1)
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    nll = -np.take_along_axis(lsm, safe[:, None], axis=1)[:, 0]
    nll = np.where(valid, nll, 0.0)
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    return nll.sum() / valid.sum() if valid.sum() else np.float64(np.nan)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore", [None, -100, 3])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cross_entropy(dtype, ignore, reduction):
    n, c = 8, 5
    logits = make((n, c), dtype, "transposed", low=-3, high=3)
    rng = rng_for("ce", ignore, reduction)
    tgt = rng.integers(0, c, size=n)
    if ignore is not None:
        tgt[[1, 4]] = ignore
    t = st.tensor(tgt)
    kw = {"reduction": reduction}
    if ignore is not None:
        kw["ignore_index"] = ignore
    exp = np_cross_entropy(logits.np, tgt, -100 if ignore is None else ignore, reduction)
    got = F.cross_entropy(logits.st, t, **kw)
    atol = RTOL[dtype] * (4 if reduction != "sum" else 4 * n)
    assert_close(got, exp, dtype=dtype, atol=atol)


def test_cross_entropy_default_args_and_all_ignored():
    logits = make((4, 3), "float32")
    tgt = np.array([0, 2, 1, 1])
    assert_close(F.cross_entropy(logits.st, st.tensor(tgt)), np_cross_entropy(logits.np, tgt), dtype="float32")
    all_ign = st.tensor([-100, -100, -100, -100])
    r = F.cross_entropy(logits.st, all_ign)  # mean over zero targets is nan, as torch
    assert tuple(r.shape) == () and math.isnan(r.item())
    r = F.cross_entropy(logits.st, all_ign, reduction="sum")
    assert r.item() == 0.0


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_cross_entropy_torch(torch, dtype):
    logits = make((6, 7), dtype, "strided", low=-4, high=4)
    tgt = make((6,), "int64", values=np.array([0, 6, -100, 3, 2, -100]))
    for red in ("mean", "sum", "none"):
        check_torch(lambda a, b: F.cross_entropy(a, b, reduction=red),
                    lambda a, b: torch.nn.functional.cross_entropy(a, b, reduction=red), logits, tgt,
                    atol=RTOL[dtype] * 20)
    tgt2 = make((6,), "int64", values=np.array([0, 6, 1, 3, 2, 1]))
    check_torch(lambda a, b: F.cross_entropy(a, b, ignore_index=1),
                lambda a, b: torch.nn.functional.cross_entropy(a, b, ignore_index=1), logits, tgt2,
                atol=RTOL[dtype] * 8)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.8])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_dropout_statistics(dtype, p):
    n = 20000
    x = st.ones(n, dtype=getattr(st, dtype))
    st.manual_seed(1)
    y = F.dropout(x, p, True)
    assert tuple(y.shape) == (n,) and y.dtype == x.dtype
    v = y.float().numpy().astype(np.float64)
    zero = v == 0
    frac = zero.mean()
    sigma = math.sqrt(p * (1 - p) / n)
    assert abs(frac - p) < 5 * sigma, (frac, p)
    scale = 1.0 / (1.0 - p)
    np.testing.assert_allclose(v[~zero], scale, rtol=max(RTOL[dtype], 1e-6))
    # the mean is preserved in expectation
    assert abs(v.mean() - 1.0) < 6 * math.sqrt(p / (1 - p) / n)
    # x is untouched
    assert (x.float().numpy() == 1).all()


def test_dropout_p0_p1_eval_and_seed():
    x = make((4, 50), "float32", "transposed")
    assert_close(F.dropout(x.st, 0.0, True), x.np, dtype="float32")
    assert_close(F.dropout(x.st, 1.0, True), np.zeros_like(x.np), dtype="float32")
    assert_close(F.dropout(x.st, 0.5, False), x.np, dtype="float32")
    assert_close(F.dropout(x.st, p=0.5, training=False), x.np, dtype="float32")
    st.manual_seed(123)
    a = F.dropout(x.st, 0.5, True).numpy()
    st.manual_seed(123)
    b = F.dropout(x.st, 0.5, True).numpy()
    np.testing.assert_array_equal(a, b)
    c = F.dropout(x.st, 0.5, True).numpy()
    assert not np.array_equal(a != 0, c != 0)
    # default: p=0.5, training=True
    d = F.dropout(st.ones(10000)).numpy()
    assert 0.45 < (d == 0).mean() < 0.55 and set(np.unique(d)) <= {0.0, 2.0}
    # non-contiguous input: kept entries equal x / (1 - p)
    y = F.dropout(x.st, 0.25, True).numpy()
    keep = y != 0
    np.testing.assert_allclose(y[keep], x.np[keep] / 0.75, rtol=1e-6)


def test_dropout_torch_semantics(torch):
    # torch rejects p outside [0, 1]; so must we
    x = make((10,), "float32")
    check_torch(lambda a: F.dropout(a, 1.5, True), lambda a: torch.nn.functional.dropout(a, 1.5, True), x)
    check_torch(lambda a: F.dropout(a, -0.1, True), lambda a: torch.nn.functional.dropout(a, -0.1, True), x)
