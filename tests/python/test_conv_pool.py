"""Convolution, pooling, fold/unfold, interpolate and pixel shuffle (symtrace/nn/_conv.py and the
modules in symtrace/nn/modules/conv.py, pooling.py, pixelshuffle.py) against torch: tables of
configurations compare values, shapes, dtypes and the gradients (of a random-weighted sum) of
every input; a table of bad calls compares exception types and messages; the modules'
initialisation, reprs and state_dicts; a small CNN trained 3 steps with SGD gives torch's
losses, eagerly and under symtrace.compile."""
import math
import re
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as snn
import symtrace.nn.functional as SF

try:  # the 3.12 venv has no torch: the numpy-referenced and compile tests run, the rest skip
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

RTOL, ATOL = 1e-4, 1e-5


def _lib(L):
    return (st, snn, SF) if L is st else (torch, torch.nn, TF)


def _to_np(r):
    return r.detach().numpy() if hasattr(r, "detach") else np.asarray(r)


def _run(L, fn, arrays, grad):
    ts = [L.tensor(a, requires_grad=(i in grad)) for i, a in enumerate(arrays)]
    r = fn(L, *ts)
    outs = list(r) if isinstance(r, (tuple, list)) else [r]
    grads = []
    if grad:
        f = outs[0]
        w = np.random.RandomState(7).uniform(-1, 1, tuple(f.shape)).astype(_to_np(f).dtype)
        (f * L.tensor(w)).sum().backward()
        grads = [None if ts[i].grad is None else ts[i].grad.numpy().copy() for i in grad]
    return outs, grads


def compare(fn, *arrays, grad=(0,), rtol=RTOL, atol=ATOL):
    """fn(L, *tensors) in symtrace and torch: the outputs (values, shapes, dtypes) and the
    gradients of the inputs in grad agree."""
    so, sg = _run(st, fn, arrays, grad)
    to, tg = _run(torch, fn, arrays, grad)
    assert len(so) == len(to)
    for a, b in zip(so, to):
        assert tuple(a.shape) == tuple(b.shape), (tuple(a.shape), tuple(b.shape))
        a, b = _to_np(a), _to_np(b)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    for a, b in zip(sg, tg):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * 10)
    return so


R = np.random.RandomState(0)


def rnd(*shape, dtype=np.float32):
    return R.standard_normal(shape).astype(dtype)


# ---------------- without torch: numpy references ----------------
def _np_conv2d(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dil[0]:i * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                           j * dil[1]:j * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, g * ocg:(g + 1) * ocg] += np.einsum("nchw,oc->nohw", patch, w[g * ocg:(g + 1) * ocg, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


NP_CONV = [((2, 4, 9, 8), (6, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1),
           ((2, 4, 11, 10), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
           ((1, 3, 8, 8), (3, 1, 3, 3), (2, 2), (2, 2), (2, 2), 3),
           ((2, 2, 6, 7), (4, 2, 1, 1), (1, 1), (0, 0), (1, 1), 1),
           ((2, 2, 8, 6), (4, 2, 2, 2), (2, 2), (0, 0), (1, 1), 1)]


@pytest.mark.parametrize("xs,ws,stride,pad,dil,groups", NP_CONV)
def test_conv2d_numpy_reference_and_input_gradient_is_conv_transpose(xs, ws, stride, pad, dil, groups):
    rs = np.random.RandomState(11)
    x, w, b = rs.randn(*xs), rs.randn(*ws), rs.randn(ws[0])
    X = st.tensor(x, requires_grad=True)
    W = st.tensor(w)
    y = SF.conv2d(X, W, st.tensor(b), stride, pad, dil, groups)
    np.testing.assert_allclose(y.detach().numpy(), _np_conv2d(x, w, b, stride, pad, dil, groups), rtol=1e-10,
                               atol=1e-10)
    g = rs.randn(*y.shape)
    (y * st.tensor(g)).sum().backward()
    # d(conv)/dx is the transposed convolution of the output gradient (output_padding restores the size)
    op = tuple(xs[2 + i] - ((y.shape[2 + i] - 1) * stride[i] - 2 * pad[i] + dil[i] * (ws[2 + i] - 1) + 1)
               for i in range(2))
    t = SF.conv_transpose2d(st.tensor(g), W, None, stride, pad, op, groups, dil)
    np.testing.assert_allclose(X.grad.numpy(), t.numpy(), rtol=1e-10, atol=1e-10)
    # and conv1d is conv2d over a height of 1
    y1 = SF.conv1d(st.tensor(x[:, :, 0]), st.tensor(w[:, :, 0]), None, stride[1], pad[1], dil[1], groups)
    ref = _np_conv2d(x[:, :, :1], w[:, :, :1], np.zeros(ws[0]), (1, stride[1]), (0, pad[1]), (1, dil[1]), groups)
    np.testing.assert_allclose(y1.numpy(), ref[:, :, 0], rtol=1e-10, atol=1e-10)


def test_pooling_numpy_reference():
    rs = np.random.RandomState(12)
    x = rs.randn(2, 3, 7, 7)
    y, idx = SF.max_pool2d(st.tensor(x), 3, 2, 1, ceil_mode=True, return_indices=True)
    a = SF.avg_pool2d(st.tensor(x), 3, 2, 1, ceil_mode=True, count_include_pad=False)
    a2 = SF.avg_pool2d(st.tensor(x), 3, 2, 1, count_include_pad=True)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=np.nan)
    assert tuple(y.shape) == (2, 3, 4, 4) and tuple(a2.shape) == (2, 3, 4, 4)
    for i in range(4):
        for j in range(4):
            win = xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].reshape(2, 3, -1)
            np.testing.assert_allclose(y.numpy()[:, :, i, j], np.nanmax(win, -1), rtol=1e-12)
            np.testing.assert_allclose(a.numpy()[:, :, i, j], np.nanmean(win, -1), rtol=1e-12)
            np.testing.assert_allclose(a2.numpy()[:, :, i, j], np.nansum(win, -1) / 9, rtol=1e-12)
            np.testing.assert_array_equal(np.take_along_axis(x.reshape(2, 3, -1), idx.numpy()[:, :, i:i + 1, j],
                                                             -1)[..., 0], y.numpy()[:, :, i, j])
    x = rs.randn(2, 3, 7, 8)
    aa = SF.adaptive_avg_pool2d(st.tensor(x), (3, 5)).numpy()
    for i in range(3):
        for j in range(5):
            h0, h1 = (i * 7) // 3, -((-(i + 1) * 7) // 3)
            w0, w1 = (j * 8) // 5, -((-(j + 1) * 8) // 5)
            np.testing.assert_allclose(aa[:, :, i, j], x[:, :, h0:h1, w0:w1].mean((2, 3)), rtol=1e-12)


def test_unfold_fold_roundtrip_numpy():
    rs = np.random.RandomState(13)
    x = rs.randn(2, 3, 7, 6)
    cols = SF.unfold(st.tensor(x), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1))
    back = SF.fold(cols, (7, 6), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)).numpy()
    count = SF.fold(SF.unfold(st.ones(1, 1, 7, 6, dtype=st.float64), (3, 2), dilation=(1, 2), padding=1,
                              stride=(2, 1)), (7, 6), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)).numpy()
    np.testing.assert_allclose(back, x * count, rtol=1e-12)
    assert repr(snn.Conv2d(3, 8, 3, stride=2, bias=False)) == ("Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), "
                                                               "bias=False)")
    assert repr(snn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"


# ---------------- convolution ----------------
CONV = [
    # (name, function, input shape, weight shape, bias?, kwargs)
    ("1d", "conv1d", (2, 4, 11), (6, 4, 3), True, {}),
    ("1d_stride_pad_dil", "conv1d", (2, 4, 17), (6, 4, 3), True, dict(stride=2, padding=2, dilation=2)),
    ("1d_groups", "conv1d", (2, 6, 9), (4, 3, 2), True, dict(groups=2, padding=1)),
    ("1d_same_even", "conv1d", (2, 3, 10), (5, 3, 4), True, dict(padding="same")),
    ("1d_same_dil", "conv1d", (1, 3, 10), (5, 3, 4), False, dict(padding="same", dilation=3)),
    ("1d_valid", "conv1d", (2, 3, 10), (5, 3, 4), True, dict(padding="valid")),
    ("1d_unbatched", "conv1d", (4, 12), (6, 4, 3), True, dict(padding=1)),
    ("2d", "conv2d", (2, 3, 9, 8), (5, 3, 3, 3), True, {}),
    ("2d_nobias", "conv2d", (2, 3, 9, 8), (5, 3, 3, 3), False, dict(padding=1)),
    ("2d_stride_pad", "conv2d", (2, 3, 11, 10), (4, 3, 3, 3), True, dict(stride=2, padding=1)),
    ("2d_asym", "conv2d", (2, 3, 11, 10), (4, 3, 3, 2), True, dict(stride=(2, 1), padding=(1, 0),
                                                                    dilation=(1, 2))),
    ("2d_dilation", "conv2d", (1, 2, 12, 12), (3, 2, 3, 3), True, dict(dilation=2, padding=2)),
    ("2d_groups", "conv2d", (2, 6, 7, 7), (9, 2, 3, 3), True, dict(groups=3, padding=1)),
    ("2d_depthwise", "conv2d", (2, 4, 8, 8), (4, 1, 3, 3), True, dict(groups=4, padding=1)),
    ("2d_depthwise_mult", "conv2d", (2, 3, 8, 8), (6, 1, 3, 3), True, dict(groups=3, stride=2)),
    ("2d_same_even", "conv2d", (2, 3, 8, 9), (4, 3, 4, 2), True, dict(padding="same")),
    ("2d_same_odd", "conv2d", (2, 3, 8, 9), (4, 3, 3, 5), True, dict(padding="same", dilation=2)),
    ("2d_1x1", "conv2d", (2, 5, 6, 7), (3, 5, 1, 1), True, {}),
    ("2d_1x1_stride", "conv2d", (2, 5, 6, 7), (3, 5, 1, 1), True, dict(stride=2)),
    ("2d_patchify", "conv2d", (2, 3, 9, 8), (4, 3, 2, 2), True, dict(stride=2)),
    ("2d_unbatched", "conv2d", (3, 7, 6), (4, 3, 3, 3), True, dict(padding=1)),
    ("2d_kernel_eq_input", "conv2d", (2, 3, 4, 4), (5, 3, 4, 4), True, {}),
    ("2d_tuple_stride_list", "conv2d", (2, 3, 9, 9), (4, 3, 3, 3), True, dict(stride=[2], padding=[1, 2])),
]


@needs_torch
@pytest.mark.parametrize("case", CONV, ids=[c[0] for c in CONV])
def test_conv(case):
    _, fname, xs, ws, has_bias, kw = case
    arrays = [rnd(*xs), rnd(*ws) * 0.3] + ([rnd(ws[0])] if has_bias else [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(lambda L, x, w, *b: getattr(_lib(L)[2], fname)(x, w, *b, **kw), *arrays,
                grad=tuple(range(len(arrays))))


@needs_torch
def test_conv_float64_and_torch_level_names():
    x, w, b = rnd(2, 3, 7, 7, dtype=np.float64), rnd(4, 3, 3, 3, dtype=np.float64), rnd(4, dtype=np.float64)
    compare(lambda L, x, w, b: L.conv2d(x, w, b, 1, 1), x, w, b, grad=(0, 1, 2), rtol=1e-10, atol=1e-10)
    compare(lambda L, x, w: L.conv1d(x, w, None, 2), x[:, :, 0], w[:, :, 0], grad=(0, 1), rtol=1e-10,
            atol=1e-10)


@needs_torch
def test_conv_empty_batch():
    compare(lambda L, x, w: _lib(L)[2].conv2d(x, w, padding=1), rnd(0, 3, 5, 5), rnd(4, 3, 3, 3), grad=())


CONV_T = [
    ("1d", "conv_transpose1d", (2, 4, 7), (4, 3, 3), True, {}),
    ("1d_stride_pad_outpad", "conv_transpose1d", (2, 4, 7), (4, 3, 3), True,
     dict(stride=3, padding=1, output_padding=2)),
    ("1d_groups_dil", "conv_transpose1d", (2, 4, 7), (4, 2, 3), True, dict(groups=2, dilation=2)),
    ("1d_unbatched", "conv_transpose1d", (4, 7), (4, 3, 2), False, dict(stride=2)),
    ("2d", "conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 3), True, {}),
    ("2d_stride2", "conv_transpose2d", (2, 4, 5, 6), (4, 3, 4, 4), True, dict(stride=2, padding=1)),
    ("2d_outpad", "conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 3), True,
     dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
    ("2d_groups", "conv_transpose2d", (2, 6, 4, 4), (6, 2, 3, 3), True, dict(groups=3, stride=2)),
    ("2d_dilation", "conv_transpose2d", (1, 2, 5, 5), (2, 3, 3, 2), False,
     dict(dilation=(2, 3), padding=1, stride=2, output_padding=1)),
    ("2d_unbatched", "conv_transpose2d", (4, 5, 5), (4, 2, 2, 2), True, dict(stride=2)),
]


@needs_torch
@pytest.mark.parametrize("case", CONV_T, ids=[c[0] for c in CONV_T])
def test_conv_transpose(case):
    _, fname, xs, ws, has_bias, kw = case
    arrays = [rnd(*xs), rnd(*ws) * 0.3] + ([rnd(ws[1] * kw.get("groups", 1))] if has_bias else [])
    compare(lambda L, x, w, *b: getattr(_lib(L)[2], fname)(x, w, *b, **kw), *arrays,
            grad=tuple(range(len(arrays))))


# ---------------- pooling ----------------
POOL = [
    ("max2d", lambda F, x: F.max_pool2d(x, 2), (2, 3, 8, 8)),
    ("max2d_odd", lambda F, x: F.max_pool2d(x, 2), (2, 3, 7, 9)),
    ("max2d_stride_pad", lambda F, x: F.max_pool2d(x, 3, 2, 1), (2, 3, 9, 8)),
    ("max2d_ceil", lambda F, x: F.max_pool2d(x, 3, 2, ceil_mode=True), (2, 3, 10, 9)),
    ("max2d_ceil_pad", lambda F, x: F.max_pool2d(x, (3, 2), (2, 2), (1, 1), ceil_mode=True), (1, 2, 8, 7)),
    ("max2d_dilation", lambda F, x: F.max_pool2d(x, 2, 1, 1, dilation=2), (2, 2, 7, 7)),
    ("max2d_indices", lambda F, x: F.max_pool2d(x, 3, 2, 1, return_indices=True), (2, 3, 9, 8)),
    ("max2d_indices_ceil", lambda F, x: F.max_pool2d(x, 2, 2, 1, 1, True, True), (1, 2, 8, 9)),
    ("max2d_indices_unbatched", lambda F, x: F.max_pool2d_with_indices(x, 2, 1, dilation=2), (3, 6, 6)),
    ("max2d_unbatched", lambda F, x: F.max_pool2d(x, 2), (3, 6, 6)),
    ("max1d", lambda F, x: F.max_pool1d(x, 3, 2, 1), (2, 3, 11)),
    ("max1d_ceil_dil", lambda F, x: F.max_pool1d(x, 2, 2, 0, 2, True), (2, 3, 12)),
    ("max1d_indices", lambda F, x: F.max_pool1d(x, 3, 2, 1, return_indices=True), (2, 3, 11)),
    ("max1d_unbatched", lambda F, x: F.max_pool1d(x, 2), (3, 8)),
    ("avg2d", lambda F, x: F.avg_pool2d(x, 2), (2, 3, 8, 8)),
    ("avg2d_pad", lambda F, x: F.avg_pool2d(x, 3, 2, 1), (2, 3, 9, 8)),
    ("avg2d_pad_exclude", lambda F, x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (2, 3, 9, 8)),
    ("avg2d_ceil", lambda F, x: F.avg_pool2d(x, 3, 2, ceil_mode=True), (2, 3, 10, 9)),
    ("avg2d_ceil_pad", lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (2, 3, 10, 9)),
    ("avg2d_ceil_pad_exclude", lambda F, x: F.avg_pool2d(x, (3, 2), 2, (1, 1), True, False), (2, 3, 10, 9)),
    ("avg2d_divisor", lambda F, x: F.avg_pool2d(x, 3, 2, 1, divisor_override=4), (2, 3, 9, 8)),
    ("avg2d_unbatched", lambda F, x: F.avg_pool2d(x, (2, 3), (1, 2)), (3, 6, 7)),
    ("avg1d", lambda F, x: F.avg_pool1d(x, 3, 2, 1), (2, 3, 11)),
    ("avg1d_ceil_exclude", lambda F, x: F.avg_pool1d(x, 4, 3, 2, True, False), (2, 3, 11)),
    ("aavg2d_1", lambda F, x: F.adaptive_avg_pool2d(x, 1), (2, 3, 7, 6)),
    ("aavg2d_div", lambda F, x: F.adaptive_avg_pool2d(x, (4, 3)), (2, 3, 8, 6)),
    ("aavg2d_nondiv", lambda F, x: F.adaptive_avg_pool2d(x, (3, 4)), (2, 3, 7, 10)),
    ("aavg2d_none", lambda F, x: F.adaptive_avg_pool2d(x, (None, 4)), (2, 3, 7, 10)),
    ("aavg2d_upsample", lambda F, x: F.adaptive_avg_pool2d(x, 6), (2, 3, 4, 5)),
    ("aavg2d_unbatched", lambda F, x: F.adaptive_avg_pool2d(x, 3), (3, 7, 5)),
    ("aavg1d", lambda F, x: F.adaptive_avg_pool1d(x, 4), (2, 3, 11)),
    ("amax2d", lambda F, x: F.adaptive_max_pool2d(x, (3, 4)), (2, 3, 7, 10)),
    ("amax2d_indices", lambda F, x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True), (2, 3, 7, 5)),
    ("amax2d_1", lambda F, x: F.adaptive_max_pool2d(x, 1, True), (2, 3, 5, 5)),
    ("amax2d_upsample", lambda F, x: F.adaptive_max_pool2d(x, (5, 7), True), (1, 2, 3, 4)),
    ("amax2d_unbatched", lambda F, x: F.adaptive_max_pool2d(x, 2), (3, 5, 5)),
    ("amax1d", lambda F, x: F.adaptive_max_pool1d(x, 4, True), (2, 3, 11)),
]


@needs_torch
@pytest.mark.parametrize("case", POOL, ids=[c[0] for c in POOL])
def test_pool(case):
    _, fn, shape = case
    compare(lambda L, x: fn(_lib(L)[2], x), rnd(*shape))


@needs_torch
def test_integer_pooling_as_torch():
    x = np.random.RandomState(2).randint(-50, 50, (2, 3, 7, 8))
    for fn in (lambda F, x: F.max_pool2d(x, 3, 2, 1, return_indices=True), lambda F, x: F.avg_pool2d(x, 2),
               lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
               lambda F, x: F.max_pool1d(x[0], 2, return_indices=True),
               lambda F, x: F.conv2d(x, x[:4, :, :2, :2], stride=2)):
        compare(lambda L, x: fn(_lib(L)[2], x), x, grad=(), rtol=0, atol=0)
    for fn in (lambda F, x: F.interpolate(x, scale_factor=2), lambda F, x: F.adaptive_avg_pool2d(x, 2),
               lambda F, x: F.adaptive_max_pool2d(x, 2), lambda F, x: F.max_pool2d(x.bool(), 2),
               lambda F, x: F.avg_pool2d(x.int(), 2), lambda F, x: F.max_pool1d(x[0], 2)):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            fn(SF, st.tensor(x))
        with pytest.raises(NotImplementedError, match="not implemented for"):
            fn(TF, torch.tensor(x))


@needs_torch
def test_max_pool_ties_gradient_goes_to_first_max():
    # a ReLU'd input has windows of equal values: the gradient goes to one element (torch's argmax)
    x = np.maximum(rnd(2, 3, 8, 8), 0)
    x[:, :, :4, :4] = 1.0
    compare(lambda L, x: _lib(L)[2].max_pool2d(x, 2, 1, return_indices=True), x)
    compare(lambda L, x: _lib(L)[2].max_pool2d(x, 3, 2, 1), x)


@needs_torch
def test_pool_float64_and_torch_level_names():
    x = rnd(2, 3, 9, dtype=np.float64)
    compare(lambda L, x: L.max_pool1d(x, 3, 2, 1), x, rtol=1e-12, atol=1e-12)
    compare(lambda L, x: L.max_pool1d_with_indices(x, 3, 2, 1), x, rtol=1e-12, atol=1e-12)
    compare(lambda L, x: L.avg_pool1d(x, 3, 2, 1, False, False), x, rtol=1e-12, atol=1e-12)
    compare(lambda L, x: L.adaptive_avg_pool1d(x, 4), x, rtol=1e-12, atol=1e-12)
    compare(lambda L, x: L.adaptive_max_pool1d(x, 4), x, rtol=1e-12, atol=1e-12)
    compare(lambda L, x: L.max_pool2d(x, (2, 3), [], 1, 1, True), x.reshape(2, 3, 3, 3), rtol=1e-12,
            atol=1e-12)


# ---------------- interpolate, pixel shuffle, fold ----------------
INTERP = [
    ("nearest_1d_size", dict(size=7), (2, 3, 5)),
    ("nearest_1d_scale", dict(scale_factor=2.5), (2, 3, 5)),
    ("nearest_2d_x2", dict(scale_factor=2), (2, 3, 4, 5)),
    ("nearest_2d_size", dict(size=(7, 3)), (2, 3, 10, 5)),
    ("nearest_2d_third", dict(size=(15, 13)), (1, 2, 10, 9)),
    ("nearest_2d_scale_down", dict(scale_factor=(0.5, 0.7)), (2, 3, 10, 9)),
    ("nearest_exact", dict(size=(7, 11), mode="nearest-exact"), (2, 3, 10, 5)),
    ("linear", dict(size=9, mode="linear"), (2, 3, 5)),
    ("linear_align", dict(scale_factor=1.7, mode="linear", align_corners=True), (2, 3, 5)),
    ("bilinear", dict(size=(7, 9), mode="bilinear"), (2, 3, 4, 5)),
    ("bilinear_down", dict(size=(3, 2), mode="bilinear"), (2, 3, 8, 7)),
    ("bilinear_align", dict(size=(7, 9), mode="bilinear", align_corners=True), (2, 3, 4, 5)),
    ("bilinear_scale", dict(scale_factor=(1.5, 2.25), mode="bilinear"), (2, 3, 4, 5)),
    ("bilinear_recompute", dict(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True), (2, 3, 4, 5)),
    ("area", dict(size=(3, 4), mode="area"), (2, 3, 7, 9)),
    ("area_scale", dict(scale_factor=0.5, mode="area"), (2, 3, 8, 6)),
]


@needs_torch
@pytest.mark.parametrize("case", INTERP, ids=[c[0] for c in INTERP])
def test_interpolate(case):
    _, kw, shape = case
    compare(lambda L, x: _lib(L)[2].interpolate(x, **kw), rnd(*shape))


@needs_torch
def test_interpolate_upsample_modules_and_deprecated_names():
    x = rnd(2, 3, 4, 5)
    for m in ("Upsample(scale_factor=2)", "Upsample(size=(5, 7), mode='bilinear', align_corners=True)",
              "UpsamplingNearest2d(scale_factor=3)", "UpsamplingBilinear2d(size=(6, 6))"):
        so = compare(lambda L, x: eval("_lib(L)[1]." + m)(x), x)
        assert so
        assert repr(eval("snn." + m)) == repr(eval("torch.nn." + m))
    for name in ("upsample", "upsample_nearest", "upsample_bilinear"):
        for lib in (SF, TF):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                getattr(lib, name)(st.tensor(x) if lib is SF else torch.tensor(x), size=(6, 7))
            assert [str(m.message) for m in w] == [f"`nn.functional.{name}` is deprecated. Use "
                                                   "`nn.functional.interpolate` instead."]


@needs_torch
def test_pixel_shuffle_unfold_fold():
    compare(lambda L, x: L.pixel_shuffle(x, 2), rnd(2, 8, 3, 4))
    compare(lambda L, x: L.pixel_shuffle(x, 3), rnd(2, 1, 18, 2, 3))
    compare(lambda L, x: L.pixel_unshuffle(x, 2), rnd(2, 3, 4, 6))
    compare(lambda L, x: _lib(L)[1].PixelShuffle(2)(x), rnd(8, 3, 4))
    compare(lambda L, x: _lib(L)[1].PixelUnshuffle(3)(x), rnd(1, 2, 3, 6))
    compare(lambda L, x: _lib(L)[2].unfold(x, 3), rnd(2, 3, 6, 7))
    compare(lambda L, x: _lib(L)[2].unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)), rnd(2, 3, 6, 7))
    compare(lambda L, x: _lib(L)[2].unfold(x, 2, stride=2), rnd(3, 6, 6))
    compare(lambda L, x: _lib(L)[1].Unfold(2, 1, 1, 2)(x), rnd(1, 2, 5, 5))
    compare(lambda L, x: _lib(L)[2].fold(x, (6, 7), 3), rnd(2, 27, 20))
    compare(lambda L, x: _lib(L)[2].fold(x, (6, 7), (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
            rnd(2, 18, 24))
    compare(lambda L, x: _lib(L)[1].Fold((4, 4), 2, stride=2)(x), rnd(12, 4))
    assert repr(snn.Fold((4, 5), 2, stride=2)) == repr(torch.nn.Fold((4, 5), 2, stride=2))
    assert repr(snn.Unfold(3, padding=1)) == repr(torch.nn.Unfold(3, padding=1))
    assert repr(snn.PixelShuffle(2)) == repr(torch.nn.PixelShuffle(2))
    assert repr(snn.PixelUnshuffle(2)) == repr(torch.nn.PixelUnshuffle(2))


# ---------------- errors ----------------
def _no_size(msg):
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)",
                  lambda m: repr(tuple(int(v) for v in m.group(1).split(",") if v.strip())), msg)


X4 = (2, 4, 10, 10)
ERRORS = [
    ("conv_channels", lambda F, T: F.conv2d(T(X4), T((8, 3, 3, 3)))),
    ("conv_kernel_too_big", lambda F, T: F.conv2d(T(X4), T((8, 4, 11, 11)))),
    ("conv_kernel_too_big_1d", lambda F, T: F.conv1d(T((2, 4, 2)), T((8, 4, 3)))),
    ("conv_groups_weight", lambda F, T: F.conv2d(T(X4), T((3, 2, 3, 3)), groups=2)),
    ("conv_groups_input", lambda F, T: F.conv2d(T((2, 6, 10, 10)), T((8, 2, 3, 3)), groups=4)),
    ("conv_groups_at_least", lambda F, T: F.conv2d(T(X4), T((2, 4, 3, 3)), groups=3)),
    ("conv_input_dims", lambda F, T: F.conv2d(T((2, 4, 10, 10, 1)), T((8, 4, 3, 3)))),
    ("conv1d_input_dims", lambda F, T: F.conv1d(T((2, 4, 10, 3)), T((8, 4, 3)))),
    ("conv_weight_dims", lambda F, T: F.conv2d(T(X4), T((8, 4, 3)))),
    ("conv_weight_2d", lambda F, T: F.conv2d(T(X4), T((8, 4)))),
    ("conv_bias", lambda F, T: F.conv2d(T(X4), T((8, 4, 3, 3)), T((7,)))),
    ("conv_stride0", lambda F, T: F.conv2d(T(X4), T((8, 4, 3, 3)), stride=0)),
    ("conv_negpad", lambda F, T: F.conv2d(T(X4), T((8, 4, 3, 3)), padding=-1)),
    ("conv_dil0", lambda F, T: F.conv2d(T(X4), T((8, 4, 3, 3)), dilation=0)),
    ("conv_groups0", lambda F, T: F.conv2d(T(X4), T((8, 4, 3, 3)), groups=0)),
    ("conv_same_strided", lambda F, T: F.conv2d(T(X4), T((8, 4, 3, 3)), padding="same", stride=2)),
    ("conv_bad_padding_string", lambda F, T: F.conv2d(T(X4), T((8, 4, 3, 3)), padding="foo")),
    ("conv_stride_len", lambda F, T: F.conv2d(T(X4), T((8, 4, 3, 3)), stride=(1, 1, 1))),
    ("convT_channels", lambda F, T: F.conv_transpose2d(T(X4), T((3, 8, 3, 3)))),
    ("convT_outpad", lambda F, T: F.conv_transpose2d(T(X4), T((4, 8, 3, 3)), stride=2, output_padding=2)),
    ("convT_groups", lambda F, T: F.conv_transpose2d(T(X4), T((4, 8, 3, 3)), groups=3)),
    ("convT_bias", lambda F, T: F.conv_transpose2d(T(X4), T((4, 8, 3, 3)), T((7,)))),
    ("convT_padding_str", lambda F, T: F.conv_transpose2d(T(X4), T((4, 8, 3, 3)), padding="same")),
    ("max2d_pad", lambda F, T: F.max_pool2d(T(X4), 3, padding=2)),
    ("max2d_pad_eff", lambda F, T: F.max_pool2d(T(X4), 2, dilation=3, padding=2)),
    ("max2d_too_small", lambda F, T: F.max_pool2d(T(X4), 11)),
    ("max2d_kernel0", lambda F, T: F.max_pool2d(T(X4), 0)),
    ("max2d_kernel_neg", lambda F, T: F.max_pool2d(T(X4), -1)),
    ("max2d_stride_neg", lambda F, T: F.max_pool2d(T(X4), 3, stride=-1)),
    ("max2d_dil0", lambda F, T: F.max_pool2d(T(X4), 3, dilation=0)),
    ("max2d_negpad", lambda F, T: F.max_pool2d(T(X4), 3, padding=-1)),
    ("max2d_dims", lambda F, T: F.max_pool2d(T((10,)), 3)),
    ("max2d_empty", lambda F, T: F.max_pool2d(T((2, 0, 4, 4)), 2)),
    ("max2d_kernel_len", lambda F, T: F.max_pool2d(T(X4), (3, 3, 3))),
    ("max2d_stride_len", lambda F, T: F.max_pool2d(T(X4), 3, stride=(1, 2, 3))),
    ("max2d_indices_pad", lambda F, T: F.max_pool2d(T(X4), 3, padding=2, return_indices=True)),
    ("max1d_pad", lambda F, T: F.max_pool1d(T((2, 4, 10)), 3, padding=2)),
    ("max1d_small", lambda F, T: F.max_pool1d(T((2, 4, 2)), 3)),
    ("max1d_dims", lambda F, T: F.max_pool1d(T((10,)), 3)),
    ("max1d_kernel0", lambda F, T: F.max_pool1d(T((2, 4, 10)), 0)),
    ("max1d_stride0", lambda F, T: F.max_pool1d(T((2, 4, 10)), 3, stride=0)),
    ("max1d_dil0", lambda F, T: F.max_pool1d(T((2, 4, 10)), 3, dilation=0)),
    ("max1d_kernel_len", lambda F, T: F.max_pool1d(T((2, 4, 10)), (3, 3))),
    ("avg2d_pad", lambda F, T: F.avg_pool2d(T(X4), 3, padding=2)),
    ("avg2d_too_small", lambda F, T: F.avg_pool2d(T(X4), 11)),
    ("avg2d_divisor0", lambda F, T: F.avg_pool2d(T(X4), 3, divisor_override=0)),
    ("avg2d_stride0", lambda F, T: F.avg_pool2d(T(X4), 3, stride=0)),
    ("avg2d_kernel_len", lambda F, T: F.avg_pool2d(T(X4), (1, 2, 3))),
    ("avg2d_dims", lambda F, T: F.avg_pool2d(T((2, 4, 10, 10, 2)), 3)),
    ("avg1d_small", lambda F, T: F.avg_pool1d(T((2, 4, 2)), 3)),
    ("avg1d_kernel_len", lambda F, T: F.avg_pool1d(T((2, 4, 10)), (3, 3))),
    ("avg1d_dims", lambda F, T: F.avg_pool1d(T((2, 4, 10, 4)), 3)),
    ("aavg2d_len", lambda F, T: F.adaptive_avg_pool2d(T(X4), (1, 3, 3))),
    ("aavg2d_neg", lambda F, T: F.adaptive_avg_pool2d(T(X4), -1)),
    ("aavg2d_dims", lambda F, T: F.adaptive_avg_pool2d(T((2, 4, 3, 3, 3)), 2)),
    ("aavg2d_empty", lambda F, T: F.adaptive_avg_pool2d(T((2, 4, 0, 3)), 2)),
    ("aavg2d_default_dims", lambda F, T: F.adaptive_avg_pool2d(T((10,)), (1, 3))),
    ("aavg1d_len", lambda F, T: F.adaptive_avg_pool1d(T((3, 10)), (3, 2))),
    ("aavg1d_dims", lambda F, T: F.adaptive_avg_pool1d(T((10,)), 3)),
    ("amax2d_dims", lambda F, T: F.adaptive_max_pool2d(T((2, 4, 3, 3, 3)), 2)),
    ("amax2d_len", lambda F, T: F.adaptive_max_pool2d(T(X4), (1, 2, 3))),
    ("amax2d_empty", lambda F, T: F.adaptive_max_pool2d(T((2, 4, 0, 3)), 2)),
    ("amax1d_dims", lambda F, T: F.adaptive_max_pool1d(T((10,)), 2)),
    ("amax1d_len", lambda F, T: F.adaptive_max_pool1d(T((2, 3, 10)), (2, 2))),
    ("shuffle_channels", lambda F, T: F.pixel_shuffle(T((2, 5, 3, 3)), 2)),
    ("shuffle_dims", lambda F, T: F.pixel_shuffle(T((5, 3)), 2)),
    ("shuffle_factor", lambda F, T: F.pixel_shuffle(T((2, 4, 3, 3)), 0)),
    ("shuffle_float", lambda F, T: F.pixel_shuffle(T((2, 4, 3, 3)), 2.0)),
    ("unshuffle_h", lambda F, T: F.pixel_unshuffle(T((2, 4, 3, 3)), 2)),
    ("unshuffle_w", lambda F, T: F.pixel_unshuffle(T((2, 4, 4, 3)), 2)),
    ("unshuffle_factor", lambda F, T: F.pixel_unshuffle(T((2, 4, 4, 4)), 0)),
    ("unfold_too_small", lambda F, T: F.unfold(T((2, 4, 10, 7)), 11)),
    ("unfold_kernel0", lambda F, T: F.unfold(T(X4), 0)),
    ("unfold_stride0", lambda F, T: F.unfold(T(X4), 3, stride=0)),
    ("unfold_negpad", lambda F, T: F.unfold(T(X4), 3, padding=-1)),
    ("unfold_dil0", lambda F, T: F.unfold(T(X4), 3, dilation=0)),
    ("unfold_dims", lambda F, T: F.unfold(T((2, 4, 10, 10, 1)), 3)),
    ("unfold_kernel_len", lambda F, T: F.unfold(T(X4), (1, 2, 3))),
    ("fold_blocks", lambda F, T: F.fold(T((2, 36, 63)), (10, 10), 3)),
    ("fold_planes", lambda F, T: F.fold(T((2, 35, 64)), (10, 10), 3)),
    ("fold_dims", lambda F, T: F.fold(T((2, 36, 64, 1)), (10, 10), 3)),
    ("fold_kernel0", lambda F, T: F.fold(T((2, 36, 64)), (10, 10), 0)),
    ("fold_small", lambda F, T: F.fold(T((2, 36, 1)), (2, 2), 3)),
    ("interp_size_len", lambda F, T: F.interpolate(T(X4), size=(3,))),
    ("interp_scale_len", lambda F, T: F.interpolate(T((2, 3, 10)), scale_factor=(2, 2))),
    ("interp_size_type", lambda F, T: F.interpolate(T((2, 3, 10)), size=(2.5,))),
    ("interp_linear_4d", lambda F, T: F.interpolate(T(X4), mode="linear", size=3)),
    ("interp_bilinear_3d", lambda F, T: F.interpolate(T((2, 3, 10)), mode="bilinear", size=3)),
    ("interp_bad_mode", lambda F, T: F.interpolate(T(X4), mode="foo", size=3)),
    ("interp_2d_input", lambda F, T: F.interpolate(T((2, 3)), size=3)),
    ("interp_nothing", lambda F, T: F.interpolate(T(X4))),
    ("interp_both", lambda F, T: F.interpolate(T(X4), size=2, scale_factor=2)),
    ("interp_size0", lambda F, T: F.interpolate(T(X4), size=0)),
    ("interp_size0_1d", lambda F, T: F.interpolate(T((2, 3, 10)), size=0)),
    ("interp_scale_small", lambda F, T: F.interpolate(T(X4), scale_factor=0.01)),
    ("interp_align_nearest", lambda F, T: F.interpolate(T(X4), size=3, align_corners=True)),
    ("interp_recompute_size", lambda F, T: F.interpolate(T(X4), size=3, recompute_scale_factor=True)),
    ("interp_antialias", lambda F, T: F.interpolate(T((2, 3, 10)), size=2, antialias=True)),
]


def _outcome(F, lib, fn):
    def T(shape):
        return lib.zeros(*shape) if shape else lib.zeros(())
    try:
        fn(F, T)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, _no_size(str(e).split("\n")[0])
    return None


@needs_torch
@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_torch(case):
    _, fn = case
    want = _outcome(TF, torch, fn)
    assert want is not None, "torch accepts this call"
    assert _outcome(SF, st, fn) == want


def test_conv_dtype_mismatch_and_non_float_interpolate():
    with pytest.raises(RuntimeError, match=r"Input type \(Float\) and weight type \(Double\) should be the same"):
        SF.conv2d(st.zeros(1, 2, 4, 4), st.zeros(1, 2, 3, 3, dtype=st.float64))
    with pytest.raises(NotImplementedError, match="bicubic"):
        SF.interpolate(st.zeros(1, 2, 4), size=3, mode="bicubic")


# ---------------- modules ----------------
MODULES = [
    "Conv1d(4, 6, 3)", "Conv1d(4, 6, 3, stride=2, padding=1, bias=False)", "Conv1d(4, 6, 4, padding='same')",
    "Conv2d(3, 8, 3)", "Conv2d(4, 8, (3, 2), stride=(2, 1), padding=(1, 0), dilation=2, groups=2)",
    "Conv2d(3, 6, 3, padding='same', padding_mode='reflect')", "Conv2d(3, 6, 3, padding=1, padding_mode='circular')",
    "Conv2d(3, 6, 3, padding=2, padding_mode='replicate', bias=False)", "Conv2d(3, 6, 3, padding='valid')",
    "ConvTranspose1d(4, 6, 3, stride=2, output_padding=1)",
    "ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=1)",
    "ConvTranspose2d(4, 2, (2, 3), bias=False, dilation=2)",
    "MaxPool1d(3, 2, 1)", "MaxPool2d(2)", "MaxPool2d(3, stride=2, padding=1, ceil_mode=True)",
    "AvgPool1d(3, 2, 1, count_include_pad=False)", "AvgPool2d(2)", "AvgPool2d(3, 2, 1, True, False, 5)",
    "AdaptiveAvgPool1d(3)", "AdaptiveAvgPool2d((2, None))", "AdaptiveMaxPool1d(4)", "AdaptiveMaxPool2d(2)",
]


def _module_input(m):
    nd = 3 if "1d" in m else 4
    c = int(re.search(r"\((\d+)", m).group(1)) if "Conv" in m else 4
    return rnd(*((2, c, 9) if nd == 3 else (2, c, 9, 8)))


@needs_torch
@pytest.mark.parametrize("expr", MODULES)
def test_module_matches_torch(expr):
    st.manual_seed(0)
    torch.manual_seed(0)
    sm, tm = eval("snn." + expr), eval("torch.nn." + expr)
    assert repr(sm) == repr(tm)
    assert list(sm.state_dict()) == list(tm.state_dict())
    sd = {k: st.tensor(v.numpy()) for k, v in tm.state_dict().items()}
    sm.load_state_dict(sd)
    x = _module_input(expr)
    so, sg = _run(st, lambda L, x: sm(x), [x], (0,))
    to, tg = _run(torch, lambda L, x: tm(x), [x], (0,))
    np.testing.assert_allclose(_to_np(so[0]), _to_np(to[0]), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(sg[0], tg[0], rtol=RTOL, atol=ATOL * 10)
    for (n, p), (tn, tp) in zip(sm.named_parameters(), tm.named_parameters()):
        assert n == tn
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=RTOL, atol=ATOL * 10)


@needs_torch
@pytest.mark.parametrize("cls,args", [("Conv2d", (16, 32, 3)), ("Conv1d", (8, 4, 5)), ("ConvTranspose2d", (8, 6, 3)),
                                      ("Conv2d", (6, 12, 3, 1, 0, 1, 3))])
@needs_torch
def test_conv_init_as_torch(cls, args):
    m = getattr(snn, cls)(*args)
    t = getattr(torch.nn, cls)(*args)
    assert tuple(m.weight.shape) == tuple(t.weight.shape) and tuple(m.bias.shape) == tuple(t.bias.shape)
    fan_in = t.weight.shape[1] * math.prod(t.weight.shape[2:])
    bound = 1 / math.sqrt(fan_in)   # kaiming_uniform_(a=sqrt(5)): gain sqrt(2 / 6) * sqrt(3 / fan_in)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.8 * bound and w.std() > 0.4 * bound   # spread over the range
    assert m.weight.requires_grad and m.bias.requires_grad


@needs_torch
def test_conv_module_errors_and_output_size():
    for kw in (dict(padding_mode="foo"), dict(padding="foo"), dict(groups=3), dict(groups=0),
               dict(padding="same", stride=2)):
        with pytest.raises(ValueError) as se:
            snn.Conv2d(4, 8, 3, **kw)
        with pytest.raises(ValueError) as te:
            torch.nn.Conv2d(4, 8, 3, **kw)
        assert type(se.value) is type(te.value)
        if "padding_mode" not in kw and kw.get("padding") != "foo":   # those print sets (unordered)
            assert str(se.value) == str(te.value)
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        snn.ConvTranspose2d(4, 8, 3, padding_mode="reflect")
    sm, tm = snn.ConvTranspose2d(4, 8, 3, stride=2), torch.nn.ConvTranspose2d(4, 8, 3, stride=2)
    sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = rnd(2, 4, 10, 10)
    for size in ((22, 21), (2, 8, 22, 22)):
        a = sm(st.tensor(x), output_size=size)
        b = tm(torch.tensor(x), output_size=size)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=RTOL, atol=ATOL)
    for size in ((30, 30), (1, 1, 1)):
        with pytest.raises(ValueError) as se:
            sm(st.tensor(x), output_size=size)
        with pytest.raises(ValueError) as te:
            tm(torch.tensor(x), output_size=size)
        assert _no_size(str(se.value)) == _no_size(str(te.value))


def test_same_padding_even_kernel_warns_once_as_torch():
    import symtrace.nn._conv as C
    C._same_warned[0] = False
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        SF.conv2d(st.zeros(1, 1, 5, 5), st.zeros(1, 1, 2, 2), padding="same")
        SF.conv2d(st.zeros(1, 1, 5, 5), st.zeros(1, 1, 2, 2), padding="same")
    assert [str(m.message) for m in w] == ["Using padding='same' with even kernel lengths and odd dilation may "
                                           "require a zero-padded copy of the input be created"]


# ---------------- signatures of the torch-level forms ----------------
TORCH_LEVEL = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
               "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d", "batch_norm",
               "instance_norm", "pixel_shuffle", "pixel_unshuffle"]


@needs_torch
@pytest.mark.parametrize("name", TORCH_LEVEL)
def test_torch_level_signature(name):
    import test_functional_signatures as S
    assert hasattr(torch, name)
    assert S._diff(S._params(getattr(st, name)), S._params(getattr(torch, name))) is None


# ---------------- a small CNN: eager and compiled training as torch's ----------------
class _Net:
    @staticmethod
    def build(nn):
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(32, 5))


def _train(L, model, x, y, steps=3):
    opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    crit = _lib(L)[1].CrossEntropyLoss()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses


def _cnn_pair():
    torch.manual_seed(0)
    tm = _Net.build(torch.nn)
    sm = _Net.build(snn)
    sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return sm, tm


@needs_torch
def test_small_cnn_trains_as_torch():
    rs = np.random.RandomState(3)
    x, y = rs.randn(6, 3, 12, 12).astype(np.float32), rs.randint(0, 5, 6)
    sm, tm = _cnn_pair()
    sl = _train(st, sm, st.tensor(x), st.tensor(y))
    tl = _train(torch, tm, torch.tensor(x), torch.tensor(y))
    np.testing.assert_allclose(sl, tl, rtol=1e-4, atol=1e-4)
    for k, v in tm.state_dict().items():   # parameters and running statistics after 3 steps
        np.testing.assert_allclose(sm.state_dict()[k].numpy(), v.numpy(), rtol=1e-4, atol=1e-4, err_msg=k)
    sm.eval()
    tm.eval()
    np.testing.assert_allclose(sm(st.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-4)


def _st_cnn_pair():
    st.manual_seed(0)
    a, b = _Net.build(snn), _Net.build(snn)
    b.load_state_dict(a.state_dict())
    return a, b


def test_small_cnn_compiled_as_eager():
    rs = np.random.RandomState(4)
    x, y = rs.randn(4, 3, 12, 12).astype(np.float32), rs.randint(0, 5, 4)
    eager, compiled_src = _st_cnn_pair()
    el = _train(st, eager, st.tensor(x), st.tensor(y))
    cl = _train(st, st.compile(compiled_src), st.tensor(x), st.tensor(y))
    np.testing.assert_allclose(cl, el, rtol=1e-5, atol=1e-5)
    for k, v in eager.state_dict().items():
        np.testing.assert_allclose(compiled_src.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=k)
    # the forward is captured whole, in training (batch statistics, running statistics
    # updated in place) and in eval
    m, _ = _st_cnn_pair()
    for mode in ("train", "eval"):
        getattr(m, mode)()
        ex = st.explain(m, st.tensor(x))
        assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    np.testing.assert_allclose(ex.out.detach().numpy(), m(st.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


# im2col / col2im as window views (up to _VIEWS_MAX_K kernel points) against the positions
# path (index_select / index_add) and torch: values and gradients
VIEW_CASES = [
    ("conv2d", (2, 4, 9, 8), (6, 2, 3, 3), dict(stride=2, padding=1, dilation=1, groups=2)),
    ("conv2d", (2, 3, 9, 10), (4, 3, 2, 3), dict(stride=(1, 2), padding=(2, 0), dilation=(2, 1))),
    ("conv2d", (1, 4, 7, 7), (4, 1, 3, 3), dict(padding=1, groups=4)),
    ("conv1d", (2, 3, 11), (5, 3, 4), dict(stride=3, padding=2, dilation=2)),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 2), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose1d", (2, 2, 7), (2, 3, 5), dict(stride=2, dilation=2)),
]


@pytest.mark.parametrize("case", range(len(VIEW_CASES)))
def test_window_views_match_the_positions_path(case, monkeypatch):
    from symtrace.nn import _conv
    fn, xs, ws, kw = VIEW_CASES[case]
    rs = np.random.RandomState(case)
    x0, w0 = rs.randn(*xs).astype(np.float32), rs.randn(*ws).astype(np.float32)

    def run():
        x, w = st.tensor(x0).requires_grad_(), st.tensor(w0).requires_grad_()
        y = getattr(SF, fn)(x, w, **kw)
        (y * y).sum().backward()
        return [t.detach().numpy() for t in (y, x.grad, w.grad)]

    views = run()
    monkeypatch.setattr(_conv, "_VIEWS_MAX_K", 0)
    positions = run()
    for a, b in zip(views, positions):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    if torch is not None:
        x, w = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
        y = getattr(torch.nn.functional, fn)(x, w, **kw)
        (y * y).sum().backward()
        for a, b in zip(views, (y, x.grad, w.grad)):
            np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-3, atol=1e-3)


def test_max_pool_and_fold_through_window_views_match_torch():
    if torch is None:
        pytest.skip("needs torch")
    rs = np.random.RandomState(9)
    a = rs.randn(2, 3, 8, 9).astype(np.float32)
    for lib, Fn in ((st, SF), (torch, torch.nn.functional)):
        x = lib.tensor(a, requires_grad=True)
        p = Fn.max_pool2d(x, 3, stride=2, padding=1)
        u = Fn.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
        f = Fn.fold(u * 2, (8, 9), (2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
        ((p * p).sum() + (f * x).sum()).backward()
        if lib is st:
            mine = [t.detach().numpy() for t in (p, u, f, x.grad)]
        else:
            for m, t in zip(mine, (p, u, f, x.grad)):
                np.testing.assert_allclose(m, t.detach().numpy(), rtol=1e-4, atol=1e-4)


CONV3D = [("Conv3d", (4, 6, (3, 2, 3)), {}, (2, 4, 7, 6, 8)),
          ("Conv3d", (4, 6, (3, 2, 3)), dict(stride=2, padding=1), (2, 4, 7, 6, 8)),
          ("Conv3d", (4, 6, (3, 2, 3)), dict(stride=(1, 2, 1), padding=(1, 0, 2), dilation=(2, 1, 1), groups=2),
           (2, 4, 7, 6, 8)),
          ("Conv3d", (4, 6, 3), dict(padding=1, padding_mode="reflect", bias=False), (4, 5, 6, 7)),
          ("ConvTranspose3d", (4, 6, (3, 2, 3)), dict(stride=2, padding=1, output_padding=1), (2, 4, 5, 4, 3)),
          ("ConvTranspose3d", (4, 6, (3, 2, 3)), dict(stride=(2, 1, 2), groups=2, dilation=(1, 2, 1)),
           (2, 4, 5, 4, 3))]


@needs_torch
@pytest.mark.parametrize("case", range(len(CONV3D)))
def test_conv3d_modules_match_torch(case):
    cls, args, kw, xs = CONV3D[case]
    torch.manual_seed(case)
    tm = getattr(torch.nn, cls)(*args, **kw)
    sm = getattr(snn, cls)(*args, **kw)
    assert repr(sm) == repr(tm)
    sm.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.RandomState(case).randn(*xs).astype(np.float32)
    tx, sx = torch.tensor(x, requires_grad=True), st.tensor(x).requires_grad_()
    ty, sy = tm(tx), sm(sx)
    (ty * ty).sum().backward()
    (sy * sy).sum().backward()
    np.testing.assert_allclose(sy.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(sm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-4, atol=1e-3)
    st.reset()
    cm = st.compile(sm)
    np.testing.assert_allclose(cm(st.tensor(x)).detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)


@needs_torch
def test_conv3d_errors_match_torch():
    for bad in (lambda L: L.nn.functional.conv3d(L.ones(2, 3, 4), L.ones(1, 3, 1, 1, 1)),
                lambda L: L.nn.functional.conv3d(L.ones(1, 3, 4, 4, 4), L.ones(1, 2, 1, 1, 1)),
                lambda L: L.nn.functional.conv_transpose3d(L.ones(1, 3, 4, 4), L.ones(3, 1, 1, 1, 1))):
        with pytest.raises(RuntimeError) as want:
            bad(torch)
        with pytest.raises(RuntimeError, match=re.escape(str(want.value))):
            bad(st)


def test_max_pool_indices_of_windows_with_several_nans():
    # ATen's pooling loop takes every NaN it meets: the last NaN of a window wins
    torch = pytest.importorskip("torch")
    nan = float("nan")
    a = np.random.default_rng(0).standard_normal((1, 2, 4, 6)).astype(np.float32)
    xs, xt = st.tensor(a), torch.tensor(a)
    for (i, j) in ((0, 0), (0, 1), (1, 1), (2, 4), (3, 5), (3, 4)):
        xs[0, 0, i, j] = nan
        xt[0, 0, i, j] = nan
    for f, g in ((lambda a: st.nn.functional.max_pool2d(a, 2, return_indices=True),
                  lambda a: torch.nn.functional.max_pool2d(a, 2, return_indices=True)),
                 (lambda a: st.nn.functional.max_pool1d(a.reshape(1, 2, 24), 4, return_indices=True),
                  lambda a: torch.nn.functional.max_pool1d(a.reshape(1, 2, 24), 4, return_indices=True))):
        (vs, is_), (vt, it) = f(xs), g(xt)
        assert is_.tolist() == it.tolist()
        np.testing.assert_array_equal(vs.numpy(), vt.numpy())
