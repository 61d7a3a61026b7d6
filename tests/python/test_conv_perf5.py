# CNN speed on the CPU (round 5), each path against torch where it is installed and
# against numpy (or an adjoint identity) where not:
# - col2im without a padded buffer (nn/_conv.py's _AddWindows clips each kernel point's
#   view to the unpadded output): the input gradient of a strided / padded convolution,
#   conv_transpose and fold come out dense, not as a crop of a padded buffer (a crop keeps
#   H and W from merging into one row in the batch-norm backward reductions that read it).
#   _conv.STATS counts the clipped forwards.
# - the stride-1 convolution's im2col and product per batch chunk (nn/_conv_s1.py's
#   _chunks) when the whole batch's im2col is large: values and gradients against torch,
#   bit for bit against the unchunked path; _conv_s1.STATS["chunked"] counts it.
# - fusion/fuse.c host_slabs: a batch norm's reduction no longer hosts the store of its
#   output into the interior of the next convolution's padding (rows of W in rows of
#   W + 2 kept its H and W from merging: 2-5x slower); a store of its own copies it. A
#   slice of a dim the reduction does not merge with the one before it (a cat along dim
#   0, a cat along a layer norm's last dim) is still hosted.
# - adaptive average pooling, sizes that do not divide (nn/_adaptive_pool.py's
#   _WindowSums): the forward adds one output-sized gather per window point (no
#   reduction over rows of Kmax), the gradient gathers each point's windows (no
#   scatter-add), compiled
#   and eager (the window-sum fallback for non-finite values); NaN / inf stay in their
#   windows; _adaptive_pool.STATS["gather_grad"] counts it.
import numpy as np
import pytest

import symtrace as st
from dynamic_helpers import fresh_dynamic  # noqa: F401  (autouse: a clean frontend per test)
import symtrace.nn.functional as F
from symtrace.nn import _conv as C
from symtrace.nn import _adaptive_pool as AP
from symtrace.nn import _conv_s1 as S1


CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _torch():
    """torch, or None where it is not installed (the numpy checks still run)."""
    try:
        import torch
    except ImportError:
        return None
    return torch

# (input shape, weight shape, kwargs): strides 2 and 3, padding, dilation, groups, odd sizes
CASES = [
    ((2, 4, 9, 11), (6, 4, 3, 3), dict(stride=2, padding=1)),
    ((2, 4, 10, 7), (5, 4, 3, 2), dict(stride=(3, 2), padding=(2, 1), dilation=(1, 2))),
    ((2, 4, 9, 11), (6, 2, 3, 3), dict(stride=2, padding=1, groups=2)),
    ((1, 3, 11, 9), (4, 3, 5, 5), dict(stride=3, padding=4)),
    ((2, 3, 13), (4, 3, 3), dict(stride=2, padding=2, dilation=2)),
    ((1, 2, 5, 6, 7), (3, 2, 3, 3, 3), dict(stride=2, padding=1)),
    ((2, 4, 8, 8), (8, 4, 3, 3), dict(stride=2, padding=1)),          # the ResNet's shape kind
    ((2, 5, 9, 9), (5, 5, 3, 3), dict(stride=1, padding=1)),          # stride 1 (_conv_s1 or not)
]


def _case(i, dtype=np.float32):
    xs, ws, kw = CASES[i]
    rng = np.random.default_rng(10 + i)
    return (rng.standard_normal(xs).astype(dtype), (rng.standard_normal(ws) * 0.3).astype(dtype),
            (rng.standard_normal(ws[0]) * 0.1).astype(dtype), kw, rng)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_strided_conv_grads_match_torch(i, mode):
    torch = pytest.importorskip("torch")
    xv, wv, bv, kw, rng = _case(i)
    k = xv.ndim - 2
    tf = getattr(torch.nn.functional, f"conv{k}d")
    ty = tf(torch.tensor(xv), torch.tensor(wv), torch.tensor(bv), **kw)
    gv = rng.standard_normal(tuple(ty.shape)).astype(np.float32)

    def f(x, w, b, g):
        y = CONV[k](x, w, b, **kw)
        (y * g).sum().backward()
        return y

    run = f if mode == "eager" else st.compile(f)
    c0 = dict(C.STATS)
    for _ in range(2):
        x, w, b = (st.tensor(v, requires_grad=True) for v in (xv, wv, bv))
        y = run(x, w, b, st.tensor(gv))
        tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xv, wv, bv))
        (tf(tx, tw, tb, **kw) * torch.tensor(gv)).sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
        for a, ta in ((x, tx), (w, tw), (b, tb)):
            np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-4)
        assert x.grad.is_contiguous()
    if kw.get("stride", 1) != 1:
        # the strided input gradient went through the clipped col2im
        assert C.STATS["add_windows_clipped"] > c0["add_windows_clipped"]


@pytest.mark.parametrize("i", [0, 1, 3, 5])
def test_strided_conv_grads_adjoint_float64(i):
    # without torch: <conv(x), g> = <x, grad_x> (conv is linear in x)
    xv, wv, _, kw, rng = _case(i, np.float64)
    k = xv.ndim - 2
    x = st.tensor(xv, requires_grad=True)
    y = CONV[k](x, st.tensor(wv), None, **kw)
    gv = rng.standard_normal(tuple(y.shape))
    c0 = dict(C.STATS)
    (y * st.tensor(gv)).sum().backward()
    assert C.STATS["add_windows_clipped"] == c0["add_windows_clipped"] + 1
    lin = float((y.detach().numpy() * gv).sum())
    assert lin == pytest.approx(float((xv * x.grad.numpy()).sum()), rel=1e-10)


def _fold_ref(cols, out, ks, sd, dl, pd):
    """numpy col2im: cols [N, C*K, L] added into a padded [N, C, *out] buffer, then cropped."""
    n, ck, L = cols.shape
    K = ks[0] * ks[1]
    c = ck // K
    bh = (out[0] + 2 * pd[0] - dl[0] * (ks[0] - 1) - 1) // sd[0] + 1
    bw = (out[1] + 2 * pd[1] - dl[1] * (ks[1] - 1) - 1) // sd[1] + 1
    buf = np.zeros((n, c, out[0] + 2 * pd[0], out[1] + 2 * pd[1]), cols.dtype)
    cv = cols.reshape(n, c, ks[0], ks[1], bh, bw)
    for a in range(ks[0]):
        for b in range(ks[1]):
            for i in range(bh):
                for j in range(bw):
                    buf[:, :, i * sd[0] + a * dl[0], j * sd[1] + b * dl[1]] += cv[:, :, a, b, i, j]
    return buf[:, :, pd[0]:pd[0] + out[0], pd[1]:pd[1] + out[1]]


@pytest.mark.parametrize("geom", [((3, 3), (2, 2), (1, 1), (1, 1), (9, 8)),
                                  ((2, 3), (3, 1), (1, 2), (2, 1), (10, 7)),
                                  ((3, 3), (1, 1), (1, 1), (3, 3), (5, 5))])   # windows all in the padding too
def test_fold_dense_and_exact(geom):
    ks, sd, dl, pd, out = geom
    rng = np.random.default_rng(4)
    bh = (out[0] + 2 * pd[0] - dl[0] * (ks[0] - 1) - 1) // sd[0] + 1
    bw = (out[1] + 2 * pd[1] - dl[1] * (ks[1] - 1) - 1) // sd[1] + 1
    cv = rng.standard_normal((2, 3 * ks[0] * ks[1], bh * bw)).astype(np.float32)
    c0 = dict(C.STATS)
    x = st.tensor(cv, requires_grad=True)
    y = F.fold(x, out, ks, dilation=dl, padding=pd, stride=sd)
    assert C.STATS["add_windows_clipped"] == c0["add_windows_clipped"] + 1
    assert tuple(y.shape) == (2, 3) + out and y.is_contiguous()
    np.testing.assert_allclose(y.detach().numpy(), _fold_ref(cv, out, ks, sd, dl, pd), rtol=1e-5, atol=1e-5)
    # the gradient is unfold's (im2col, padding in zeros)
    gv = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    (y * st.tensor(gv)).sum().backward()
    want = F.unfold(st.tensor(gv), ks, dilation=dl, padding=pd, stride=sd).numpy()
    np.testing.assert_array_equal(x.grad.numpy(), want)
    torch = _torch()
    if torch is None:   # (checked against numpy above)
        return
    ty = torch.nn.functional.fold(torch.tensor(cv), out, ks, dilation=dl, padding=pd, stride=sd)
    np.testing.assert_allclose(y.detach().numpy(), ty.numpy(), rtol=1e-5, atol=1e-5)


def test_add_windows_unpadded_output_matches_padded_crop():
    # the Function itself: [N, C, *sizes] (not the padded sizes), the same sums in the same
    # order as the padded buffer's crop (bit for bit), and NaN / inf in columns that only
    # reach the padding left out as before
    rng = np.random.default_rng(6)
    kernel, stride, dil, blocks, sizes, pads = (3, 3), (2, 2), (1, 1), (5, 6), (9, 11), ((1, 1), (1, 1))
    cv = rng.standard_normal((2, 3, 9, 30)).astype(np.float32)
    cv[0, 0, 0, 0] = np.nan     # point (0, 0) of window (0, 0): row -1, col -1 (padding)
    cv[1, 2, 8, 29] = np.inf    # point (2, 2) of window (4, 5): row 9, col 11 (padding)
    y = C._AddWindows.apply(st.tensor(cv), sizes, kernel, stride, dil, blocks, pads)
    assert tuple(y.shape) == (2, 3) + sizes and y.is_contiguous()
    assert np.isfinite(y.numpy()).all()
    full = np.zeros((2, 3, 11, 13), np.float32)
    c6 = cv.reshape(2, 3, 3, 3, 5, 6)
    for a in range(3):
        for b in range(3):
            full[:, :, a:a + 9:2, b:b + 11:2] += c6[:, :, a, b]
    np.testing.assert_array_equal(y.numpy(), full[:, :, 1:10, 1:12])


def test_conv_transpose_strided_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    xv = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    wv = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    kw = dict(stride=2, padding=1, output_padding=1)
    c0 = dict(C.STATS)
    x = st.tensor(xv, requires_grad=True)
    y = F.conv_transpose2d(x, st.tensor(wv), **kw)
    assert C.STATS["add_windows_clipped"] == c0["add_windows_clipped"] + 1
    tx = torch.tensor(xv, requires_grad=True)
    ty = torch.nn.functional.conv_transpose2d(tx, torch.tensor(wv), **kw)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    gv = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    (y * st.tensor(gv)).sum().backward()
    (ty * torch.tensor(gv)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_max_pool_padded_grad_matches_torch():
    # im2col padded with -inf inside _Windows: the gradient leaves the padding out
    torch = pytest.importorskip("torch")
    xv = np.random.default_rng(8).standard_normal((2, 3, 9, 10)).astype(np.float32)
    xv[0, 0, 0, 0] = np.nan
    x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
    y = F.max_pool2d(x, 3, 2, 1)
    ty = torch.nn.functional.max_pool2d(tx, 3, 2, 1)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_strided_conv_double_backward_matches_torch():
    # create_graph: _AddWindows' gradient (_Windows, padding inside) is differentiated again
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    xv = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    wv = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)

    def run(L, T):
        x, w = T(xv, requires_grad=True), T(wv, requires_grad=True)
        h = L.tanh(L.nn.functional.conv2d(x, w, None, stride=2, padding=1))
        gx, = L.autograd.grad(h.square().sum(), x, create_graph=True)
        gx.square().sum().backward()
        return gx.detach().numpy(), w.grad.numpy(), x.grad.numpy()

    got = run(st, lambda a, requires_grad: st.tensor(a, requires_grad=requires_grad))
    want = run(torch, lambda a, requires_grad: torch.tensor(a, requires_grad=requires_grad))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


# ---------------- stride-1 convolutions per batch chunk ----------------
S1_CASES = [   # (input shape, weight shape, kwargs), all on the _conv_s1 path
    ((7, 4, 9, 11), (5, 4, 3, 3), dict(padding=1)),                       # chunks of 2: 2+2+2+1
    ((5, 3, 8, 7), (3, 3, 3, 2), dict(padding=(2, 1), dilation=(2, 1))),
    ((6, 3, 13), (4, 3, 5), dict(padding=2)),
    ((3, 2, 5, 6, 4), (3, 2, 3, 3, 3), dict(padding=1)),
]


def _small_chunks(monkeypatch, x_shape, w_shape):
    """Thresholds that chunk x's batch into pieces of 2 samples."""
    per = w_shape[1] * int(np.prod(w_shape[2:])) * int(np.prod(x_shape[2:])) * 4   # (same-size output)
    monkeypatch.setattr(S1, "_CHUNK_MIN", per)
    monkeypatch.setattr(S1, "_CHUNK_BYTES", 2 * per + 1)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("i", range(len(S1_CASES)))
def test_chunked_conv_s1_matches_torch_and_unchunked_bits(i, mode, monkeypatch):
    xs, ws, kw = S1_CASES[i]
    rng = np.random.default_rng(30 + i)
    xv = rng.standard_normal(xs).astype(np.float32)
    wv = (rng.standard_normal(ws) * 0.3).astype(np.float32)
    bv = (rng.standard_normal(ws[0]) * 0.1).astype(np.float32)
    k = len(xs) - 2
    y0 = CONV[k](st.tensor(xv), st.tensor(wv), None, **kw)
    gv = rng.standard_normal(tuple(y0.shape)).astype(np.float32)

    def f(x, w, b, g):
        y = CONV[k](x, w, b, **kw)
        (y * g).sum().backward()
        return y

    def run():
        st.reset()
        x, w, b = (st.tensor(v, requires_grad=True) for v in (xv, wv, bv))
        y = (f if mode == "eager" else st.compile(f))(x, w, b, st.tensor(gv))
        return [y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()]

    c0 = dict(S1.STATS)
    plain = run()
    assert S1.STATS["chunked"] == c0["chunked"] and S1.STATS["backward"] > c0["backward"]
    _small_chunks(monkeypatch, xs, ws)
    c1 = dict(S1.STATS)
    got = run()
    # the forward and the input gradient's convolution (of g: as many samples) both chunked
    assert S1.STATS["chunked"] - c1["chunked"] >= 2
    for a, b in zip(got, plain):
        np.testing.assert_array_equal(a, b)
    torch = _torch()
    if torch is None:   # (checked against numpy above)
        return
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xv, wv, bv))
    ty = getattr(torch.nn.functional, f"conv{k}d")(tx, tw, tb, **kw)
    (ty * torch.tensor(gv)).sum().backward()
    for a, ta in zip(got, (ty.detach(), tx.grad, tw.grad, tb.grad)):
        np.testing.assert_allclose(a, ta.numpy(), rtol=1e-4, atol=1e-4)


def test_chunked_conv_s1_default_thresholds_resnet_layer():
    # ResNet's 32x32 layer (batch 16, 16 channels: a 9.4 MB im2col) is chunked by default;
    # its 16x16 layer (4.7 MB) is not
    x = st.zeros((16, 16, 32, 32), requires_grad=True)
    assert S1._chunks(x, (3, 3), (32, 32)) == [(0, 4), (4, 8), (8, 12), (12, 16)]
    assert S1._chunks(st.zeros((16, 32, 16, 16)), (3, 3), (16, 16)) == [(0, 16)]
    c0 = dict(S1.STATS)
    y = F.conv2d(x, st.zeros((16, 16, 3, 3), requires_grad=True), None, padding=1)
    assert S1.STATS["chunked"] == c0["chunked"] + 1 and tuple(y.shape) == (16, 16, 32, 32)


def test_chunked_conv_s1_double_backward_matches_torch(monkeypatch):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(40)
    xv = rng.standard_normal((5, 3, 7, 6)).astype(np.float32)
    wv = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    _small_chunks(monkeypatch, xv.shape, wv.shape)

    def run(L, T):
        x, w = T(xv, requires_grad=True), T(wv, requires_grad=True)
        h = L.tanh(L.nn.functional.conv2d(x, w, None, padding=1))
        gx, = L.autograd.grad(h.square().sum(), x, create_graph=True)
        (gx.square().sum() + h.sum()).backward()
        return gx.detach().numpy(), w.grad.numpy(), x.grad.numpy()

    c0 = dict(S1.STATS)
    got = run(st, lambda a, requires_grad: st.tensor(a, requires_grad=requires_grad))
    assert S1.STATS["chunked"] > c0["chunked"]
    want = run(torch, lambda a, requires_grad: torch.tensor(a, requires_grad=requires_grad))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


# ---------------- slab stores of a padding, outside the norm's reduction ----------------
def _bn_relu_ref(xv):
    m = xv.mean((0, 2, 3), keepdims=True, dtype=np.float64)
    v = ((xv - m) ** 2).mean((0, 2, 3), keepdims=True)
    return np.maximum((xv - m) / np.sqrt(v + 1e-5), 0)


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_padding_store_not_hosted_by_norm_reduction(backend):
    from symtrace import _C
    if not _C._fe_backend_available(backend):
        pytest.skip(f"{backend} backend not available")
    xv = np.random.default_rng(50).standard_normal((2, 3, 8, 40)).astype(np.float32)

    def f(x):
        y = F.relu(F.batch_norm(x, None, None, training=True))
        return F.pad(y, (1, 1, 1, 1)) * 2, st.cat([y, y * 3], 0)

    g, ins = st.memory.trace_graph(f, st.tensor(xv))
    cg = g.compile(backend=backend)
    padded, stacked = (o.numpy() for o in cg.run(*ins))
    y = _bn_relu_ref(xv)
    np.testing.assert_allclose(padded, np.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1))) * 2, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(stacked, np.concatenate([y, y * 3], 0), rtol=1e-4, atol=1e-5)
    kernels = ["kernel " + k for k in cg.kernel_ir().split("kernel ")[1:]]
    red = [k for k in kernels if k.split(":")[0].split("_")[1:2] == ["mean"]]
    assert len(red) == 1, [k.split(":")[0] for k in kernels]
    # the reduction writes both parts of the cat along dim 0 (whole blocks), not the
    # padding's interior: that is a slab store of its own
    assert red[0].count("slab of stmt") == 2, red[0]
    assert any(k.split(":")[0].endswith("_slab") for k in kernels), [k.split(":")[0] for k in kernels]


def test_layer_norm_cat_on_last_dim_still_hosted():
    # the norm reduces only the last dim: slices of it cut no merged row, so the norm's
    # kernel still writes both parts of the cat (no copy kernel)
    from symtrace import _C
    if not _C._fe_backend_available("llvm"):
        pytest.skip("llvm backend not available")
    xv = np.random.default_rng(51).standard_normal((6, 40)).astype(np.float32)
    def f(x):
        y = F.layer_norm(x, (40,))
        return st.cat([y, y * 3], 1)

    g, ins = st.memory.trace_graph(f, st.tensor(xv))
    cg = g.compile(backend="llvm")
    got = cg.run(*ins)[0].numpy()
    m = xv.mean(1, keepdims=True)
    y = (xv - m) / np.sqrt(xv.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, np.concatenate([y, y * 3], 1), rtol=1e-4, atol=1e-5)
    kernels = ["kernel " + k for k in cg.kernel_ir().split("kernel ")[1:]]
    assert len(kernels) == 1 and kernels[0].count("slab of stmt") == 2, cg.kernel_ir()


# ---------------- adaptive average pooling: the gradient by gathers ----------------
AP_CASES = [((2, 3, 7, 7), (3, 3)), ((2, 2, 10, 9), (7, 4)), ((1, 2, 5, 6), (8, 9)),   # out > size too
            ((2, 3, 11), (4,)), ((1, 2, 5, 7, 6), (2, 3, 4)), ((2, 2, 9, 8), (4, 8))]
APOOL = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}


def _ap_numpy(xv, out):
    """numpy float64: the windows' means (summed window by window: an inf stays in its
    windows) and each dim's window matrix scaled by 1 / extent (for the gradient)."""
    import itertools
    k = len(out)
    bounds = [[((o * s) // n, -((-(o + 1) * s) // n)) for o in range(n)] for s, n in zip(xv.shape[-k:], out)]
    y = np.zeros(xv.shape[:-k] + tuple(out))
    for pos in itertools.product(*[range(n) for n in out]):
        sl = tuple(slice(*bounds[d][pos[d]]) for d in range(k))
        w = xv[(Ellipsis,) + sl].astype(np.float64)
        y[(Ellipsis,) + pos] = w.reshape(w.shape[:-k] + (-1,)).mean(-1)
    mats = []
    for (s, n), b in zip(zip(xv.shape[-k:], out), bounds):
        m = np.zeros((n, s))
        for o, (a, e) in enumerate(b):
            m[o, a:e] = 1.0 / (e - a)
        mats.append(m)
    return y, mats


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("case", range(len(AP_CASES)))
def test_adaptive_avg_gather_grad_values(case, mode):
    xs, out = AP_CASES[case]
    rng = np.random.default_rng(60 + case)
    xv = rng.standard_normal(xs).astype(np.float32)
    wv = rng.standard_normal(xs[:2] + out).astype(np.float32)
    k = len(out)

    def f(x, w):
        y = APOOL[k](x, out if k > 1 else out[0])
        (y * w).sum().backward()
        return y

    c0 = dict(AP.STATS)
    x = st.tensor(xv, requires_grad=True)
    if mode == "eager":
        xv[(0,) * xv.ndim] = np.inf       # eager: the window sums run for a non-finite input only
        x = st.tensor(xv, requires_grad=True)
        y = f(x, st.tensor(wv))
    else:
        y = st.compile(f)(x, st.tensor(wv))
    assert AP.STATS["gather_grad"] > c0["gather_grad"]
    want, mats = _ap_numpy(xv, out)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-5)
    # the gradient: w through each dim's transposed (scaled) window matrix
    g = wv.astype(np.float64)
    for i in reversed(range(k)):
        ax = g.ndim - k + i
        g = np.moveaxis(np.tensordot(mats[i].T, np.moveaxis(g, ax, 0), axes=(1, 0)), 0, ax)
    np.testing.assert_allclose(x.grad.numpy(), g, rtol=1e-5, atol=1e-5)
    torch = _torch()
    if torch is None:   # (checked against numpy above)
        return
    tx = torch.tensor(xv, requires_grad=True)
    ty = getattr(torch.nn.functional, f"adaptive_avg_pool{k}d")(tx, out if k > 1 else out[0])
    (ty * torch.tensor(wv)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_adaptive_avg_compiled_no_scatter_no_kmax_reduction():
    xv = np.random.default_rng(70).standard_normal((4, 8, 30, 30)).astype(np.float32)

    def f(x):
        y = F.adaptive_avg_pool2d(x, (7, 7))
        (y * y).sum().backward()
        return y

    cf = st.compile(f)
    cf(st.tensor(xv, requires_grad=True))
    with st.profiler.profile() as p:
        cf(st.tensor(xv, requires_grad=True))
    table = p.table(top=200)
    assert "index_select" in table and "scatter" not in table, table
    # the forward's window sums are adds of output-sized gathers: the only reduction
    # left is the loss's sum (a sum over rows of Kmax was the forward's slow kernel)
    assert table.count("(reduce)") == 1, table


def test_adaptive_avg_nan_grad_stays_in_its_windows():
    # a NaN upstream gradient of one window reaches only that window's points, as torch
    xv = np.random.default_rng(71).standard_normal((1, 1, 10, 9)).astype(np.float32)
    wv = np.ones((1, 1, 4, 4), np.float32)
    wv[0, 0, 1, 2] = np.nan

    def f(x, w):
        (F.adaptive_avg_pool2d(x, (4, 4)) * w).sum().backward()
        return x.grad

    x = st.tensor(xv, requires_grad=True)
    st.compile(f)(x, st.tensor(wv))
    got = np.isnan(x.grad.numpy()[0, 0])
    want = np.zeros((10, 9), bool)
    want[(1 * 10) // 4:-((-2 * 10) // 4), (2 * 9) // 4:-((-3 * 9) // 4)] = True
    np.testing.assert_array_equal(got, want)
