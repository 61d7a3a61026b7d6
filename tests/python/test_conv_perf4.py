# CNN speed on the CPU (round 4): adaptive average pooling's fast paths, each against
# torch where it is installed and a numpy reference (windows summed one by one) where not:
# - eager, sizes that do not divide: 0/1 window-matrix products (nn/_adaptive_pool.py's
#   _matmul_sums), with the window sums as the fallback when the result is not finite
#   (a NaN / inf input, a finite sum that overflows); STATS counts the path taken.
# - compiled (a recorded trace) and dynamic shapes: the window sums, values and gradients.
# - outputs of 1 (global pooling, ResNet's head): a mean over the spatial dims whose gradient
#   is a broadcast; sizes that divide: the leading dims' windows summed before the last's.
import itertools

import numpy as np
import pytest

import symtrace as st
from dynamic_helpers import fresh_dynamic  # noqa: F401  (autouse: a clean frontend per test)
import symtrace.nn.functional as F
from symtrace.nn import _adaptive_pool as AP


def _bounds(size, out):
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _ref(x, out, acc=np.float64):
    """numpy (sums in acc): the mean over each adaptive window of x's last len(out) dims."""
    k = len(out)
    lead = x.shape[:-k]
    wins = [_bounds(s, o) for s, o in zip(x.shape[-k:], out)]
    y = np.empty(lead + tuple(out), np.float64)
    for pos in itertools.product(*[range(o) for o in out]):
        sl = tuple(slice(*wins[d][pos[d]]) for d in range(k))
        w = x[(Ellipsis,) + sl].astype(acc).reshape(lead + (-1,))
        ext = np.prod([wins[d][pos[d]][1] - wins[d][pos[d]][0] for d in range(k)])
        with np.errstate(invalid="ignore", over="ignore"):
            y[(Ellipsis,) + pos] = w.sum(-1) / ext
    return y


def _ref_grad(shape, out, w):
    """numpy: d(sum(pool(x) * w))/dx, each window's weight / extent added to its points."""
    k = len(out)
    wins = [_bounds(s, o) for s, o in zip(shape[-k:], out)]
    g = np.zeros(shape, np.float64)
    for pos in itertools.product(*[range(o) for o in out]):
        sl = tuple(slice(*wins[d][pos[d]]) for d in range(k))
        ext = np.prod([wins[d][pos[d]][1] - wins[d][pos[d]][0] for d in range(k)])
        g[(Ellipsis,) + sl] += (w[(Ellipsis,) + pos] / ext)[(Ellipsis,) + (None,) * k]
    return g


POOL = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}

CASES = [  # (input shape, output size): none divides its output in every dim
    ((2, 3, 30, 30), (7, 7)),
    ((2, 4, 57, 43), (6, 9)),
    ((3, 14, 13), (3, 5)),          # no batch dim
    ((2, 3, 5, 7), (2, 7)),         # one dim kept as it is
    ((1, 2, 4, 5), (6, 7)),         # outputs larger than the input: overlapping windows
    ((2, 3, 11), (4,)),
    ((1, 2, 9, 7, 10), (4, 3, 3)),
]


def _call(x, out):
    return POOL[len(out)](x, out if len(out) > 1 else out[0])


def _counts():
    return dict(AP.STATS)


def _delta(before, keys=("matmul", "matmul_fallback", "windows")):
    return {k: AP.STATS[k] - before[k] for k in keys}


@pytest.mark.parametrize("case", range(len(CASES)))
def test_eager_matmul_path_values_and_grads(case):
    shape, out = CASES[case]
    rng = np.random.default_rng(case)
    xv = rng.standard_normal(shape).astype(np.float32)
    x = st.tensor(xv, requires_grad=True)
    c0 = _counts()
    y = _call(x, out)
    assert _delta(c0) == {"matmul": 1, "matmul_fallback": 0, "windows": 0}
    assert tuple(y.shape) == shape[:-len(out)] + out
    # contiguous as torch's (the products moved the pooled dims): x.view(n, -1) works
    assert y.is_contiguous()
    assert tuple(y.view(-1).shape) == (int(np.prod(y.shape)),)
    np.testing.assert_allclose(y.detach().numpy(), _ref(xv, out), rtol=1e-5, atol=1e-6)
    w = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    (y * st.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _ref_grad(shape, out, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_eager_matmul_path_matches_torch(case):
    torch = pytest.importorskip("torch")
    shape, out = CASES[case]
    rng = np.random.default_rng(100 + case)
    xv = rng.standard_normal(shape).astype(np.float32)
    x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
    y = _call(x, out)
    ty = {1: torch.nn.functional.adaptive_avg_pool1d, 2: torch.nn.functional.adaptive_avg_pool2d,
          3: torch.nn.functional.adaptive_avg_pool3d}[len(out)](tx, out if len(out) > 1 else out[0])
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    (y * st.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, "both_inf", "overflow"])
def test_eager_nonfinite_falls_back_to_window_sums(bad):
    # a NaN / inf times the window matrix's zeros would spread over the channel: the
    # product is not finite, so the window sums compute the result again (exact)
    xv = np.random.default_rng(7).standard_normal((2, 3, 13, 11)).astype(np.float32)
    if bad == "both_inf":
        xv[0, 1, 2, 3], xv[0, 1, 3, 4] = np.inf, -np.inf
    elif bad == "overflow":    # finite values whose window sum is inf (torch's too)
        xv[1, 2, 0:3, 0:2] = 3e38
    else:
        xv[0, 1, 2, 3] = bad
        xv[1, 0, 12, 10] = bad
    x = st.tensor(xv, requires_grad=True)
    c0 = _counts()
    y = F.adaptive_avg_pool2d(x, (4, 3))
    assert _delta(c0) == {"matmul": 0, "matmul_fallback": 1, "windows": 1}
    want = _ref(xv, (4, 3), np.float32 if bad == "overflow" else np.float64)   # torch's float32 sums
    got = y.detach().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    assert (got[~fin & ~np.isnan(want)] == want[~fin & ~np.isnan(want)]).all()   # the infs, signed
    assert fin.sum() > 0.9 * fin.size     # the other windows stay finite
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-5, atol=1e-6)
    y.sum().backward()
    g = x.grad.numpy()
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, _ref_grad(xv.shape, (4, 3), np.ones(want.shape)), rtol=1e-5, atol=1e-6)


def test_eager_nonfinite_matches_torch():
    torch = pytest.importorskip("torch")
    xv = np.random.default_rng(3).standard_normal((2, 3, 10, 9)).astype(np.float32)
    xv[0, 0, 1, 1], xv[0, 2, 9, 8], xv[1, 1, 5, 0] = np.nan, np.inf, -np.inf
    x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
    y, ty = F.adaptive_avg_pool2d(x, (3, 4)), torch.nn.functional.adaptive_avg_pool2d(tx, (3, 4))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_eager_matmul_path_dtypes(dtype):
    # half inputs are summed in float32 and rounded once, as torch's accumulation
    xv = np.random.default_rng(5).standard_normal((2, 3, 11, 9)).astype(np.float32)
    c0 = _counts()
    y = F.adaptive_avg_pool2d(st.tensor(xv).to(getattr(st, dtype)), (4, 5))
    assert _delta(c0)["matmul"] == 1
    assert y.dtype == getattr(st, dtype)
    tol = 1e-12 if dtype == "float64" else 1e-2
    np.testing.assert_allclose(y.double().numpy(), _ref(xv, (4, 5)), rtol=tol, atol=tol if tol < 1e-3 else 2e-2)
    torch = pytest.importorskip("torch")
    ty = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(xv).to(getattr(torch, dtype)), (4, 5))
    np.testing.assert_array_equal(y.double().numpy(), ty.double().numpy())


def test_eager_divisible_and_kept_sizes_skip_the_products():
    # sizes that divide their outputs: a reshape and a mean (no product, no window sums)
    c0 = _counts()
    xv = np.random.default_rng(1).standard_normal((2, 3, 12, 8)).astype(np.float32)
    y = F.adaptive_avg_pool2d(st.tensor(xv), (4, 2))
    assert _delta(c0) == {"matmul": 0, "matmul_fallback": 0, "windows": 0}
    np.testing.assert_allclose(y.numpy(), _ref(xv, (4, 2)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("case", [0, 1, 3, 4, 6])
def test_compiled_window_sums_values_grads_nonfinite(case, dynamic):
    # under a trace no value can be looked at: the window sums (exact for NaN / inf),
    # each pooled dim moved last; called twice with other values (and one NaN / inf)
    shape, out = CASES[case]

    def f(x):
        y = _call(x, out)
        (y * y.detach()).sum().backward()
        return y

    g = st.compile(f, dynamic=dynamic)
    c0 = _counts()
    for i in range(3):
        rng = np.random.default_rng(10 * case + i)
        xv = rng.standard_normal(shape).astype(np.float32)
        if i == 2:
            xv.reshape(-1)[1], xv.reshape(-1)[-2] = np.nan, np.inf
        x = st.tensor(xv, requires_grad=True)
        y = g(x).detach().numpy()
        want = _ref(xv, out)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
        w = np.where(np.isfinite(want), want, 0.0) if i < 2 else None
        if w is not None:
            np.testing.assert_allclose(x.grad.numpy(), _ref_grad(shape, out, w), rtol=1e-5, atol=1e-5)
    assert _delta(c0)["matmul"] == 0
    # (static: the recorded trace ran the window sums; dynamic: the translator inlines them
    # and does not count)
    assert _delta(c0)["windows"] >= (0 if dynamic else 1)


def test_compiled_window_sums_match_torch_grads():
    torch = pytest.importorskip("torch")
    xv = np.random.default_rng(11).standard_normal((2, 5, 31, 17)).astype(np.float32)
    xv[1, 3, 30, 0] = np.inf
    w = np.random.default_rng(12).standard_normal((2, 5, 7, 4)).astype(np.float32)

    def f(x, w):
        y = F.adaptive_avg_pool2d(x, (7, 4))
        (y * w).sum().backward()
        return y

    x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
    y = st.compile(f)(x, st.tensor(w))
    ty = torch.nn.functional.adaptive_avg_pool2d(tx, (7, 4))
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


GLOBAL = [((2, 3, 7, 9), (1, 1)), ((3, 5, 8), (1, 1)), ((2, 3, 11), (1,)), ((1, 2, 3, 4, 5), (1, 1, 1))]


@pytest.mark.parametrize("mode", ["eager", "compiled", "dynamic"])
@pytest.mark.parametrize("case", range(len(GLOBAL)))
def test_global_pool_mean_values_grads_nonfinite(case, mode):
    shape, out = GLOBAL[case]

    def f(x, w):
        y = _call(x, out)
        (y * w).sum().backward()
        return y

    g = f if mode == "eager" else st.compile(f, dynamic=(mode == "dynamic"))
    c0 = dict(AP.STATS)
    for i in range(3):
        sh = shape if mode != "dynamic" else shape[:-len(out)] + tuple(s + i for s in shape[-len(out):])
        rng = np.random.default_rng(case * 10 + i)
        xv = rng.standard_normal(sh).astype(np.float32)
        if i == 2:
            xv.reshape(-1)[0] = np.nan
        want = _ref(xv, out)
        w = rng.standard_normal(want.shape).astype(np.float32)
        x = st.tensor(xv, requires_grad=True)
        y = g(x, st.tensor(w))
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), _ref_grad(sh, out, w), rtol=1e-5, atol=1e-6)
    if mode != "dynamic":
        assert _delta(c0, ("global",))["global"] >= 1
    assert _delta(c0, ("matmul", "whole"))["matmul"] == 0


def test_global_pool_gradient_is_a_broadcast():
    # ResNet's head: the gradient of the pool reaches the last batch norm's backward as a
    # broadcast view, no reshape of an expanded view (an unravel load per point)
    torch = pytest.importorskip("torch")
    xv = np.random.default_rng(2).standard_normal((4, 6, 8, 8)).astype(np.float32)
    x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
    y = F.adaptive_avg_pool2d(x, (1, 1))
    assert tuple(y.shape) == (4, 6, 1, 1)
    np.testing.assert_allclose(y.detach().numpy(),
                               torch.nn.functional.adaptive_avg_pool2d(tx, (1, 1)).detach().numpy(), rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(xv.shape, 1 / 64, np.float32))
    # a mean straight over x: no reshape node between (before: MeanBackward0 of a
    # ReshapeBackward0 of x, the split [4, 6, 1, 8, 1, 8])
    assert y.grad_fn.name() == "MeanBackward0"
    assert [f.name() for f, _ in y.grad_fn.next_functions] == ["AccumulateGrad"]


DIVIDE = [((2, 3, 12, 8), (4, 2)), ((2, 3, 6, 9), (2, 3)), ((1, 2, 4, 6, 6), (2, 3, 2))]


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("case", range(len(DIVIDE)))
def test_whole_windows_two_stage_sums(case, mode):
    shape, out = DIVIDE[case]

    def f(x, w):
        y = _call(x, out)
        (y * w).sum().backward()
        return y

    g = f if mode == "eager" else st.compile(f)
    c0 = dict(AP.STATS)
    for i in range(2):
        rng = np.random.default_rng(40 + case * 10 + i)
        xv = rng.standard_normal(shape).astype(np.float32)
        if i == 1:
            xv.reshape(-1)[5], xv.reshape(-1)[-1] = np.inf, -np.inf
        want = _ref(xv, out)
        assert np.isfinite(want).sum() > want.size // 2    # the inf stays in its window
        w = rng.standard_normal(want.shape).astype(np.float32)
        x = st.tensor(xv, requires_grad=True)
        y = g(x, st.tensor(w))
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), _ref_grad(shape, out, w), rtol=1e-5, atol=1e-6)
    assert _delta(c0, ("whole", "matmul", "windows")) == {"whole": 2, "matmul": 0, "windows": 0}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_whole_windows_half_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    xv = np.random.default_rng(9).standard_normal((2, 3, 12, 8)).astype(np.float32)
    y = F.adaptive_avg_pool2d(st.tensor(xv).to(getattr(st, dtype)), (3, 2))
    ty = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(xv).to(getattr(torch, dtype)), (3, 2))
    assert y.dtype == getattr(st, dtype)
    np.testing.assert_array_equal(y.float().numpy(), ty.float().numpy())


# ---------------- stride-1 convolution: the input gradient as a convolution ----------------
from symtrace.nn import _conv_s1 as S1  # noqa: E402

CONVS = [  # (k, input shape, weight shape, kwargs): every one takes the stride-1 path
    (2, (2, 4, 9, 7), (4, 4, 3, 3), dict(padding=1)),
    (2, (2, 3, 8, 8), (5, 3, 3, 3), dict(padding=0)),                 # C >= OC / 2, no padding
    (2, (1, 6, 7, 10), (4, 6, 5, 3), dict(padding=(2, 0))),
    (2, (2, 4, 9, 9), (4, 4, 3, 3), dict(padding=2, dilation=2)),
    (2, (2, 3, 6, 7), (3, 3, 4, 2), dict(padding="same")),            # even kernel: uneven pads
    (2, (4, 9, 9), (4, 4, 3, 3), dict(padding=1)),                    # no batch dim
    (1, (2, 5, 11), (6, 5, 3), dict(padding=1)),
    (1, (2, 4, 13), (4, 4, 5), dict(padding=4, dilation=2)),
    (3, (1, 3, 5, 6, 4), (3, 3, 3, 3, 3), dict(padding=1)),
]
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _conv_case(case, seed, dtype=np.float32):
    k, xs, ws, kw = CONVS[case]
    rng = np.random.default_rng(seed)
    xv = rng.standard_normal(xs).astype(dtype)
    wv = (rng.standard_normal(ws) * 0.3).astype(dtype)
    bv = rng.standard_normal(ws[0]).astype(dtype)
    return k, xv, wv, bv, kw, rng


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv_s1_values_and_grads_match_torch(case, mode):
    torch = pytest.importorskip("torch")
    k, xv, wv, bv, kw, rng = _conv_case(case, case)
    ty = getattr(torch.nn.functional, f"conv{k}d")(
        torch.tensor(xv), torch.tensor(wv), torch.tensor(bv), **kw)
    gv = rng.standard_normal(tuple(ty.shape)).astype(np.float32)

    def f(x, w, b, g):
        y = CONV[k](x, w, b, **kw)
        (y * g).sum().backward()
        return y

    run = f if mode == "eager" else st.compile(f)
    c0 = dict(S1.STATS)
    for it in range(2):
        x, w, b = (st.tensor(v, requires_grad=True) for v in (xv, wv, bv))
        y = run(x, w, b, st.tensor(gv))
        tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xv, wv, bv))
        ty = getattr(torch.nn.functional, f"conv{k}d")(tx, tw, tb, **kw)
        (ty * torch.tensor(gv)).sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
        for a, ta in ((x, tx), (w, tw), (b, tb)):
            np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert S1.STATS["forward"] > c0["forward"] and S1.STATS["backward"] > c0["backward"]


@pytest.mark.parametrize("case", [0, 4, 6, 8])
def test_conv_s1_grads_numpy_float64(case):
    # without torch: the input gradient against the adjoint identity <conv(x), g> =
    # <x, grad_x>, and the weight gradient by finite differences of that product
    k, xv, wv, bv, kw, rng = _conv_case(case, 100 + case, np.float64)
    x, w = st.tensor(xv, requires_grad=True), st.tensor(wv, requires_grad=True)
    y = CONV[k](x, w, None, **kw)
    gv = rng.standard_normal(tuple(y.shape))
    (y * st.tensor(gv)).sum().backward()
    c0 = dict(S1.STATS)
    assert c0["backward"] >= 1
    lin = float((y.detach().numpy() * gv).sum())
    assert lin == pytest.approx(float((xv * x.grad.numpy()).sum()), rel=1e-9)   # linear in x
    assert lin == pytest.approx(float((wv * w.grad.numpy()).sum()), rel=1e-9)   # and in w


def test_conv_s1_double_backward_matches_torch():
    # a gradient penalty: the input gradient (through _ConvS1 again) is differentiated
    torch = pytest.importorskip("torch")
    k, xv, wv, bv, kw, rng = _conv_case(0, 7)
    w2 = (rng.standard_normal((3, 4, 3, 3)) * 0.3).astype(np.float32)

    def run(L, T):
        x = T(xv, requires_grad=True)
        w, v = T(wv, requires_grad=True), T(w2, requires_grad=True)
        h = L.nn.functional.conv2d(L.tanh(L.nn.functional.conv2d(x, w, None, padding=1)), v, None, padding=1)
        gx, = L.autograd.grad(h.square().sum(), x, create_graph=True)
        (gx.square().sum() + h.sum()).backward()
        return gx.detach().numpy(), w.grad.numpy(), v.grad.numpy(), x.grad.numpy()

    c0 = dict(S1.STATS)
    got = run(st, lambda a, requires_grad: st.tensor(a, requires_grad=requires_grad))
    assert S1.STATS["backward"] - c0["backward"] >= 4    # each conv, then again
    want = run(torch, lambda a, requires_grad: torch.tensor(a, requires_grad=requires_grad))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("what", ["stride2", "groups", "wide_pad", "no_input_grad", "few_channels", "1x1",
                                  "dynamic"])
def test_conv_s1_not_taken(what):
    # the other convolutions keep col2im (values and gradients still torch's)
    xv = np.random.default_rng(3).standard_normal((2, 4, 8, 9)).astype(np.float32)
    wv = np.random.default_rng(4).standard_normal((4, 4, 3, 3)).astype(np.float32)
    kw, needs = dict(padding=1), True
    if what == "stride2":
        kw["stride"] = 2
    elif what == "groups":
        kw["groups"], wv = 2, wv[:, :2]
    elif what == "wide_pad":
        kw["padding"] = 3
    elif what == "no_input_grad":
        needs = False
    elif what == "few_channels":
        wv = np.random.default_rng(4).standard_normal((9, 4, 3, 3)).astype(np.float32)
    elif what == "1x1":
        wv, kw = wv[:, :, :1, :1], {}
    x, w = st.tensor(xv, requires_grad=needs), st.tensor(wv, requires_grad=True)
    c0 = dict(S1.STATS)
    if what == "dynamic":
        y = st.compile(lambda x, w: F.conv2d(x, w, None, **kw), dynamic=True)(x, w)
    else:
        y = F.conv2d(x, w, None, **kw)
    y.sum().backward()
    assert S1.STATS == c0
    torch = pytest.importorskip("torch")
    tx, tw = torch.tensor(xv, requires_grad=needs), torch.tensor(wv, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, None, **kw)
    ty.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-3)
    if needs:
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_conv_s1_frozen_weight_and_module():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.Conv2d(5, 6, 3, padding=1)
    sm = st.nn.Conv2d(5, 6, 3, padding=1)
    sm.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    sm.weight.requires_grad_(False)
    tm.weight.requires_grad_(False)
    xv = np.random.default_rng(5).standard_normal((3, 5, 7, 6)).astype(np.float32)
    x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
    c0 = dict(S1.STATS)
    sm(x).relu().sum().backward()
    tm(tx).relu().sum().backward()
    assert S1.STATS["backward"] == c0["backward"] + 1
    assert sm.weight.grad is None
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sm.bias.grad.numpy(), tm.bias.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_eager_huge_window_matrix_uses_window_sums():
    # a window matrix past _MAT_MAX entries is not built (a python list of it): window sums
    n = AP._MAT_MAX // 3 + 4    # (not a multiple of 3)
    xv = np.random.default_rng(8).standard_normal((1, 2, n)).astype(np.float32)
    c0 = _counts()
    y = F.adaptive_avg_pool1d(st.tensor(xv), 3)
    assert _delta(c0) == {"matmul": 0, "matmul_fallback": 1, "windows": 1}
    np.testing.assert_allclose(y.numpy(), _ref(xv, (3,)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_eager_products_nonfinite_upstream_gradient_matches_torch(bad):
    # the transposed products would spread a non-finite upstream gradient over the channel
    # (0 * inf); the window sums' gradient keeps it in the windows, as torch's
    torch = pytest.importorskip("torch")
    xv = np.random.default_rng(12).standard_normal((2, 3, 7, 5)).astype(np.float32)
    w = np.random.default_rng(13).standard_normal((2, 3, 3, 2)).astype(np.float32)
    w[1, 2, 0, 1] = bad
    x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
    c0 = dict(AP.STATS)
    (F.adaptive_avg_pool2d(x, (3, 2)) * st.tensor(w)).sum().backward()
    assert _delta(c0, ("matmul", "grad_fallback")) == {"matmul": 1, "grad_fallback": 1}
    (torch.nn.functional.adaptive_avg_pool2d(tx, (3, 2)) * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(np.isfinite(x.grad.numpy()), np.isfinite(tx.grad.numpy()))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_eager_products_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    xv = np.random.default_rng(14).standard_normal((2, 3, 9, 7)).astype(np.float32)

    def run(L, x):
        y = L.nn.functional.adaptive_avg_pool2d(x, (4, 3))
        g, = L.autograd.grad((y.square() * y).sum(), x, create_graph=True)
        (g.square().sum()).backward()
        return g.detach().numpy(), x.grad.numpy()

    c0 = dict(AP.STATS)
    got = run(st, st.tensor(xv, requires_grad=True))
    assert _delta(c0, ("matmul",))["matmul"] == 1
    want = run(torch, torch.tensor(xv, requires_grad=True))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
