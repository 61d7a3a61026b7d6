# symtrace.nn.functional's affine_grid, grid_sample, fractional_max_pool2d/3d(_with_indices) and
# ctc_loss, and nn.FractionalMaxPool2d/3d, nn.CTCLoss and nn.AdaptiveLogSoftmaxWithLoss: values
# and gradients (of inputs, grids, thetas and parameters) against torch with identical inputs and
# weights, torch's errors and warnings, and compiled (symtrace.compile) cases against eager.
import copy
import re
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F
from conftest import assert_close

# torch's (and symtrace's) warning for AdaptiveLogSoftmaxWithLoss's zero-width tail Linears
pytestmark = pytest.mark.filterwarnings("ignore:Initializing zero-element tensors is a no-op:UserWarning")

TOL = {"float64": dict(rtol=1e-10, atol=1e-10), "float32": dict(rtol=1e-5, atol=1e-5)}
# float32 gradients sum many products (the grid's: differences of neighbouring inputs times
# the output weights): a slightly looser relative tolerance
GRAD_TOL = {"float64": dict(rtol=1e-10, atol=1e-10), "float32": dict(rtol=1e-4, atol=1e-5)}


def _pair(a, torch, grad=True):
    """A symtrace leaf and a torch leaf holding the numpy array a (requiring grad when float)."""
    a = np.ascontiguousarray(a)
    g = grad and a.dtype.kind == "f"
    return st.tensor(a, requires_grad=g), torch.tensor(a.copy(), requires_grad=g)


def _backward_both(torch, got, exp, rng):
    """(got * w).sum().backward() and (exp * w).sum().backward() with the same random w."""
    w = rng.uniform(0.5, 1.5, size=tuple(exp.shape)).astype(str(exp.dtype).split(".")[-1])
    (got * st.tensor(w)).sum().backward()
    (exp * torch.tensor(w)).sum().backward()


def _msg(e):
    """An error message with torch's spellings of sizes and dtypes made symtrace's."""
    m = re.sub(r"torch\.Size\(\[([^\]]*)\]\)",
               lambda g: repr(tuple(int(v) for v in g.group(1).split(",") if v.strip())), str(e))
    return m.replace("torch.", "symtrace.")


def _same_error(torch, st_call, th_call):
    """Both calls raise; the same exception type and message."""
    with pytest.raises(Exception) as te:
        th_call()
    with pytest.raises(Exception) as se:
        st_call()
    assert type(se.value) is type(te.value), (se.value, te.value)
    assert _msg(se.value) == _msg(te.value)


# ---------------------------------------------------------------- grid_sample
MODES_2D = [(m, p, a) for m in ("bilinear", "nearest", "bicubic") for p in ("zeros", "border", "reflection")
            for a in (False, True)]
MODES_3D = [(m, p, a) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")
            for a in (False, True)]


def _grid_case(torch, dtype, spatial, out, mode, padding, align, grid_values=None, seed=0):
    rng = np.random.default_rng(seed)
    k = len(spatial)
    x = rng.standard_normal((2, 3) + spatial).astype(dtype)
    if grid_values is None:
        g = rng.uniform(-1.4, 1.4, (2,) + out + (k,)).astype(dtype)   # some points out of bounds
    else:
        g = rng.choice(np.asarray(grid_values), size=(2,) + out + (k,)).astype(dtype)
    xs, xt = _pair(x, torch)
    gs, gt = _pair(g, torch)
    got = F.grid_sample(xs, gs, mode=mode, padding_mode=padding, align_corners=align)
    exp = torch.nn.functional.grid_sample(xt, gt, mode=mode, padding_mode=padding, align_corners=align)
    assert_close(got.detach(), exp.detach(), **TOL[dtype])
    _backward_both(torch, got, exp, rng)
    assert_close(xs.grad, xt.grad, **GRAD_TOL[dtype])
    assert_close(gs.grad, gt.grad, **GRAD_TOL[dtype])   # nearest: zeros, as torch's
    if mode == "nearest":
        assert not gs.grad.numpy().any()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode,padding,align", MODES_2D)
def test_grid_sample_2d(torch, dtype, mode, padding, align):
    _grid_case(torch, dtype, (4, 5), (3, 4), mode, padding, align)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode,padding,align", MODES_3D)
def test_grid_sample_3d(torch, dtype, mode, padding, align):
    _grid_case(torch, dtype, (3, 4, 5), (2, 3, 2), mode, padding, align)


# grid points exactly on the borders, the centres and past them: the clip and reflection
# gradients there follow ATen's (0 at and beyond a border)
KINKS = [-3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0]


@pytest.mark.parametrize("mode,padding,align", MODES_2D)
def test_grid_sample_2d_at_borders(torch, mode, padding, align):
    _grid_case(torch, "float64", (4, 5), (3, 4), mode, padding, align, grid_values=KINKS, seed=1)


@pytest.mark.parametrize("mode,padding,align", MODES_3D)
def test_grid_sample_3d_at_borders(torch, mode, padding, align):
    _grid_case(torch, "float64", (3, 4, 5), (2, 3, 2), mode, padding, align, grid_values=KINKS, seed=2)


def test_grid_sample_single_pixel_and_empty(torch):
    # a 1 x 1 input (reflection's span is 0) and empty batch / channels
    for mode in ("bilinear", "nearest", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            for align in (False, True):
                rng = np.random.default_rng(3)
                x, g = rng.standard_normal((1, 2, 1, 1)), rng.uniform(-2, 2, (1, 2, 3, 2))
                xs, xt = _pair(x, torch)
                gs, gt = _pair(g, torch)
                got = F.grid_sample(xs, gs, mode, pad, align)
                exp = torch.nn.functional.grid_sample(xt, gt, mode, pad, align)
                assert_close(got.detach(), exp.detach(), **TOL["float64"])
                _backward_both(torch, got, exp, rng)
                assert_close(xs.grad, xt.grad, **TOL["float64"])
                assert_close(gs.grad, gt.grad, **TOL["float64"])
    for xshape, gshape in (((2, 0, 4, 5), (2, 3, 3, 2)), ((0, 3, 4, 5), (0, 3, 3, 2))):
        got = F.grid_sample(st.zeros(xshape), st.zeros(gshape), align_corners=False)
        exp = torch.nn.functional.grid_sample(torch.zeros(xshape), torch.zeros(gshape), align_corners=False)
        assert tuple(got.shape) == tuple(exp.shape)


def test_grid_sample_errors_and_warning(torch):
    TF = torch.nn.functional
    x, g = np.zeros((2, 3, 4, 5), np.float32), np.zeros((2, 3, 3, 2), np.float32)
    cases = [
        (x, g.astype(np.float64), {}),
        (x, g[:1], {}),
        (x, g[..., :1], {}),
        (x[:, :, :0], g, {}),
        (x[0], g[0], {}),
        (x, g[:, None], {}),
        (x[:, :, None], np.zeros((2, 1, 3, 3, 3), np.float32), {"mode": "bicubic"}),
        (x, g, {"mode": "foo"}),
        (x, g, {"padding_mode": "foo"}),
        (x.reshape(2, 3, 20), g[:, 0], {}),
        (x.astype(np.int32), g.astype(np.int32), {}),
    ]
    for a, b, kw in cases:
        kw = dict({"align_corners": False}, **kw)
        _same_error(torch, lambda: F.grid_sample(st.tensor(a), st.tensor(b), **kw),
                    lambda: TF.grid_sample(torch.tensor(a), torch.tensor(b), **kw))
    # align_corners=None: torch's warning, then align_corners=False
    for lib, fn in ((st, F.grid_sample), (torch, TF.grid_sample)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn(lib.tensor(x), lib.tensor(g))
        assert len(w) == 1 and "Default grid_sample and affine_grid behavior has changed" in str(w[0].message)


# ---------------------------------------------------------------- affine_grid
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 1, 4), (2, 1, 3, 4, 5), (2, 1, 1, 2, 1)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid(torch, dtype, size, align):
    rng = np.random.default_rng(len(size) * 10 + align)
    k = len(size) - 2
    theta = rng.standard_normal((size[0], k, k + 1)).astype(dtype)
    ts, tt = _pair(theta, torch)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        got = F.affine_grid(ts, list(size), align_corners=align)
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        exp = torch.nn.functional.affine_grid(tt, list(size), align_corners=align)
    assert [str(w.message) for w in ws] == [str(w.message) for w in wt]   # unit-size grid warning
    assert_close(got.detach(), exp.detach(), **TOL[dtype])
    _backward_both(torch, got, exp, rng)
    assert_close(ts.grad, tt.grad, **GRAD_TOL[dtype])


def test_affine_grid_errors(torch):
    TF = torch.nn.functional
    th = np.zeros((2, 2, 3), np.float32)
    cases = [(th.astype(np.int32), [2, 3, 4, 5]), (th, [2, 3, 4, 5, 6]), (th, [2, 3, 4]), (th, [2, 3, 0, 5]),
             (np.zeros((2, 3, 4), np.float32), [2, 3, 4, 5])]
    for a, size in cases:
        _same_error(torch, lambda: F.affine_grid(st.tensor(a), size, align_corners=False),
                    lambda: TF.affine_grid(torch.tensor(a), size, align_corners=False))
    for lib, fn in ((st, F.affine_grid), (torch, TF.affine_grid)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn(lib.tensor(th), [2, 3, 4, 5])
        assert len(w) == 1 and "align_corners=False since 1.3.0" in str(w[0].message)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_affine_grid_then_grid_sample_theta_grad(torch, mode):
    # the spatial-transformer chain: the gradient reaches theta through the grid
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2, 5, 6))
    theta = np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.05]], [[1.2, -0.3, -0.2], [0.25, 0.8, 0.1]]])
    xs, xt = _pair(x, torch)
    ts, tt = _pair(theta, torch)
    got = F.grid_sample(xs, F.affine_grid(ts, [2, 2, 4, 3], align_corners=False), mode, "border", False)
    exp = torch.nn.functional.grid_sample(xt, torch.nn.functional.affine_grid(tt, [2, 2, 4, 3], align_corners=False),
                                          mode, "border", False)
    assert_close(got.detach(), exp.detach(), **TOL["float64"])
    _backward_both(torch, got, exp, rng)
    assert_close(xs.grad, xt.grad, **TOL["float64"])
    assert_close(ts.grad, tt.grad, **TOL["float64"])


# ---------------------------------------------------------------- fractional max pooling
FRAC_CASES = [
    (2, (2, 3, 7, 9), (2, 3), (4, 5)),
    (2, (3, 8, 8), 3, (5, 5)),          # unbatched
    (2, (2, 3, 9, 9), 2, (8, 8)),       # overlapping windows
    (2, (1, 2, 5, 5), 2, (1, 1)),
    (3, (2, 2, 6, 7, 8), 2, (3, 4, 5)),
    (3, (2, 5, 6, 4), (2, 3, 1), (2, 3, 3)),   # unbatched
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(FRAC_CASES)))
def test_fractional_max_pool_given_samples(torch, dtype, case):
    k, shape, ks, osz = FRAC_CASES[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal(shape).astype(dtype)
    x[..., 0, :2] = x[..., 0, 2:3]            # ties: the first maximum wins, as ATen's loop
    n = 1 if len(shape) == k + 1 else shape[0]
    samples = rng.random((n, shape[-k - 1], k)).astype(dtype)
    xs, xt = _pair(x, torch)
    got, gi = getattr(F, f"fractional_max_pool{k}d")(xs, ks, osz, return_indices=True,
                                                        _random_samples=st.tensor(samples))
    exp, ei = getattr(torch.nn.functional, f"fractional_max_pool{k}d")(xt, ks, osz, return_indices=True,
                                                                       _random_samples=torch.tensor(samples))
    np.testing.assert_array_equal(got.detach().numpy(), exp.detach().numpy())   # exactly torch's windows
    assert_close(gi, ei)
    _backward_both(torch, got, exp, rng)
    assert_close(xs.grad, xt.grad, **TOL[dtype])
    # the _with_indices form, and the module with the samples as its buffer
    wi = getattr(F, f"fractional_max_pool{k}d_with_indices")(xs, ks, osz, _random_samples=st.tensor(samples))
    np.testing.assert_array_equal(wi[1].numpy(), ei.numpy())
    m = getattr(nn, f"FractionalMaxPool{k}d")(ks, osz, return_indices=True, _random_samples=st.tensor(samples))
    assert list(dict(m.named_buffers())) == ["_random_samples"]
    mo, mi = m(xs)
    np.testing.assert_array_equal(mo.detach().numpy(), exp.detach().numpy())
    np.testing.assert_array_equal(mi.numpy(), ei.numpy())


@pytest.mark.parametrize("k", [2, 3])
def test_fractional_max_pool_random_samples_and_ratio(torch, k):
    # without _random_samples: symtrace.rand's draw of torch's shape [N, C, k] and dtype
    shape = (2, 3, 9, 10) if k == 2 else (2, 3, 7, 8, 9)
    x = st.randn(*shape, dtype=st.float64)
    fn = getattr(F, f"fractional_max_pool{k}d")
    st.manual_seed(7)
    a, ai = fn(x, 2, output_ratio=(0.5,) * k, return_indices=True)
    st.manual_seed(7)
    rs = st.rand(2, 3, k, dtype=st.float64)
    b, bi = fn(x, 2, output_ratio=(0.5,) * k, return_indices=True, _random_samples=rs)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(ai.numpy(), bi.numpy())
    exp = getattr(torch.nn.functional, f"fractional_max_pool{k}d")(
        torch.tensor(x.numpy()), 2, output_ratio=(0.5,) * k, return_indices=True,
        _random_samples=torch.tensor(rs.numpy()))
    np.testing.assert_array_equal(a.numpy(), exp[0].numpy())
    np.testing.assert_array_equal(ai.numpy(), exp[1].numpy())
    assert tuple(a.shape) == tuple(int(s * 0.5) for s in shape[:2]) or a.shape[2:] == exp[0].shape[2:]
    # the module: output_ratio as a float
    m = getattr(nn, f"FractionalMaxPool{k}d")(2, output_ratio=0.5)
    assert tuple(m(x).shape) == tuple(exp[0].shape)


def test_fractional_max_pool_errors(torch):
    TF = torch.nn.functional
    x = np.zeros((2, 3, 4, 5), np.float32)
    r2 = np.zeros((2, 3, 2), np.float32)
    cases2 = [
        (x, (2,), dict(output_ratio=0.5)),
        (x, (2,), {}),
        (x, (3, (3, 4)), dict(_random_samples=r2)),
        (x, (2, (3, 3)), dict(_random_samples=r2[:1])),
        (x, (2, (3, 3)), dict(_random_samples=r2[:, :2])),
        (x, (2, (3, 3)), dict(_random_samples=np.zeros((2, 3, 3), np.float32))),
        (x, (2, (3, 3)), dict(_random_samples=r2.astype(np.float64))),
        (x, (2, (3, 3)), dict(_random_samples=np.zeros((2, 3, 2, 1), np.float32))),
        (x[:, :, :0], (2, (3, 3)), {}),
        (x, ((2, 2, 2), (3, 3)), {}),
        (x, (2, (3, 3, 3)), {}),
        (x, (2,), dict(output_ratio=(0.5, 0.5, 0.5))),
        (x.astype(np.int32), (2, (3, 3)), dict(_random_samples=r2.astype(np.int32))),
    ]
    for a, args, kw in cases2:
        skw = {k: (st.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        tkw = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        _same_error(torch, lambda: F.fractional_max_pool2d(st.tensor(a), *args, **skw),
                    lambda: TF.fractional_max_pool2d(torch.tensor(a), *args, **tkw))
    x3 = np.zeros((2, 3, 4, 5, 6), np.float32)
    r3 = np.zeros((2, 3, 3), np.float32)
    cases3 = [((2, (3, 3, 4)), r3), ((2, (2, 3, 4)), r3[:, :, :2]), ((2, (2, 3, 4)), r3[:1]),
              (((2, 2), (2, 3, 4)), r3), ((2, (2, 3)), r3)]
    for args, r in cases3:
        _same_error(torch, lambda: F.fractional_max_pool3d(st.tensor(x3), *args, _random_samples=st.tensor(r)),
                    lambda: TF.fractional_max_pool3d(torch.tensor(x3), *args, _random_samples=torch.tensor(r)))
    for args, kw in (((0, (3, 4, 5)), {}), ((2,), dict(output_ratio=1.5)), ((2,), {}), ((2, 3, 0.5), {})):
        cls = "FractionalMaxPool3d" if args[0] == 0 else "FractionalMaxPool2d"
        _same_error(torch, lambda: getattr(nn, cls)(*args, **kw), lambda: getattr(torch.nn, cls)(*args, **kw))


# ---------------------------------------------------------------- ctc_loss
# (T, C, target lengths, input lengths, options)
CTC_CASES = [
    (6, 5, [3, 2, 1], [6, 6, 6], {}),
    (6, 5, [3, 2, 1], [6, 4, 2], dict(concat=True)),
    (7, 4, [2, 3, 2, 1], [7, 5, 6, 3], dict(repeats=True)),           # repeated labels: no skips
    (6, 5, [3, 3, 1], [6, 2, 6], {}),                                   # impossible: inf, NaN grad
    (6, 5, [3, 3, 1], [6, 2, 6], dict(zero_infinity=True)),
    (6, 5, [3, 3, 3], [6, 4, 5], dict(repeats=True, zero_infinity=True)),
    (6, 5, [3, 0, 2], [6, 3, 0], dict(reduction="mean")),
    (6, 5, [3, 0, 2], [6, 3, 1], dict(reduction="sum", tuples=True)),
    (8, 6, [4, 2, 3, 1], [8, 7, 5, 3], dict(reduction="mean", concat=True, tuples=True)),
    (5, 4, [2, 1], [5, 4], dict(blank=3)),
    (6, 5, [3], [6], dict(unbatched=True)),
    (6, 5, [2], [5], dict(unbatched=True, reduction="mean")),
    (3, 4, [0, 0], [3, 2], {}),                                         # empty targets
    (1, 4, [1, 0], [1, 1], {}),                                         # one time step
    (4, 4, [0, 1, 2], [0, 4, 0], {}),                                   # empty inputs: -0.0 and inf
    (4, 4, [0, 1, 2], [0, 4, 0], dict(zero_infinity=True, reduction="mean")),
]


def _ctc_run(torch, dtype, T, C, tls, ils, opts, seed):
    rng = np.random.default_rng(seed)
    n = len(tls)
    blank = opts.get("blank", 0)
    labels = [c for c in range(C) if c != blank]
    x = rng.standard_normal((T, n, C)).astype(dtype)
    tg = rng.choice(labels, size=(n, max(max(tls), 1)))
    if opts.get("repeats"):
        tg[:, 1::2] = tg[:, 0::2][:, :tg[:, 1::2].shape[1]]
    if opts.get("concat"):
        tg = np.concatenate([tg[i, :tls[i]] for i in range(n)])
    if opts.get("unbatched"):
        x, tg = x[:, 0], tg[0]
    kw = dict(blank=blank, reduction=opts.get("reduction", "none"), zero_infinity=opts.get("zero_infinity", False))
    if opts.get("tuples"):
        sl, tlen = (tuple(ils), tuple(tls)), (tuple(ils), tuple(tls))
    elif opts.get("unbatched"):
        sl = (st.tensor(np.int64(ils[0])), st.tensor(np.int64(tls[0])))
        tlen = (torch.tensor(ils[0]), torch.tensor(tls[0]))
    else:
        sl = (st.tensor(np.array(ils)), st.tensor(np.array(tls)))
        tlen = (torch.tensor(ils), torch.tensor(tls))
    # through log_softmax (the usual use) and on log-probabilities as the leaf
    xs, xt = _pair(x, torch)
    d = x.ndim - 1
    lp = torch.tensor(x).log_softmax(d).numpy()
    ls, lt = _pair(lp, torch)
    for (s_in, t_in) in ((xs.log_softmax(d), xt.log_softmax(d)), (ls, lt)):
        got = F.ctc_loss(s_in, st.tensor(tg), *sl, **kw)
        exp = torch.nn.functional.ctc_loss(t_in, torch.tensor(tg), *tlen, **kw)
        assert_close(got.detach(), exp.detach(), **TOL[dtype])
        _backward_both(torch, got, exp, rng)
    for s, t in ((xs, xt), (ls, lt)):
        g, e = s.grad.numpy(), t.grad.numpy()
        np.testing.assert_array_equal(np.isnan(g), np.isnan(e))   # NaN where torch's is (impossible)
        assert_close(st.tensor(np.nan_to_num(g)), np.nan_to_num(e), **GRAD_TOL[dtype])
    # the module gives the same
    m = nn.CTCLoss(blank=blank, reduction=kw["reduction"], zero_infinity=kw["zero_infinity"])
    assert_close(m(ls.detach(), st.tensor(tg), *sl), exp.detach(), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(CTC_CASES)))
def test_ctc_loss(torch, dtype, case):
    T, C, tls, ils, opts = CTC_CASES[case]
    _ctc_run(torch, dtype, T, C, tls, ils, opts, seed=case)


def test_ctc_loss_impossible_alignment_values(torch):
    # input too short for the target (a repeat needs a blank between, so [1, 1, 2] needs 4
    # steps and has 3): inf, or 0 with zero_infinity; 'mean' of an inf is inf
    lp = torch.randn(4, 2, 3, dtype=torch.float64).log_softmax(2)
    tg = [[1, 1, 2], [1, 2, 0]]
    for zi in (False, True):
        for red in ("none", "sum", "mean"):
            got = F.ctc_loss(st.tensor(lp.numpy()), st.tensor(np.array(tg)), (3, 4), (3, 2), reduction=red,
                             zero_infinity=zi)
            exp = torch.nn.functional.ctc_loss(lp, torch.tensor(tg), (3, 4), (3, 2), reduction=red, zero_infinity=zi)
            assert_close(got, exp, **TOL["float64"])
            if red == "none":
                assert got.numpy()[0] == (0.0 if zi else np.inf)


def test_ctc_loss_errors(torch):
    TF = torch.nn.functional
    lp = np.zeros((5, 3, 4))
    tg = np.array([[1, 1, 2], [1, 2, 3], [2, 0, 0]])
    il, tl = np.array([5, 2, 5]), np.array([3, 3, 1])
    cases = [
        (lp, tg, np.array([6, 2, 5]), tl, {}),
        (lp, tg, il, np.array([4, 3, 1]), {}),
        (lp, tg, il[:2], tl, {}),
        (lp, tg, il, tl[:2], {}),
        (lp, tg, il, tl, dict(blank=4)),
        (lp, tg, il, tl, dict(blank=-1)),
        (lp[0], tg, il, tl, {}),
        (lp[None], tg, il, tl, {}),
        (lp, tg[None], il, tl, {}),
        (lp, np.array([1, 2, 3, 1, 2, 3]), il, tl, {}),
        (lp, tg, il, tl, dict(reduction="foo")),
        (lp[None], tg, il[:1], tl[:1], dict(blank=9)),
        (lp, tg[None], il, tl, dict(blank=9)),
        (lp.astype(np.int32), tg[None], il, tl, dict(blank=9)),
        (lp, tg, np.array([6, 2, 5]), tl[:2], {}),
        (lp, tg, il, np.array([5, 2, 3]), {}),
        (lp, tg[:2], il, tl, {}),
        (lp, tg, np.array([-1, 2, 5]), tl, {}),
        (lp, tg, il, np.array([-1, 3, 1]), {}),
        (lp, tg, il.astype(np.float32), tl, {}),
        (lp, tg, il, tl.astype(np.float64), {}),
        (lp.astype(np.int32), tg, il, tl, {}),
    ]
    for a, t, i, L, kw in cases:
        _same_error(torch, lambda: F.ctc_loss(st.tensor(a), st.tensor(t), st.tensor(i), st.tensor(L), **kw),
                    lambda: TF.ctc_loss(torch.tensor(a), torch.tensor(t), torch.tensor(i), torch.tensor(L), **kw))
    # lengths that are neither tensors nor tuples of ints: a TypeError, as torch's
    for bad in ((5, 3), ([5, 2, 5], [3, 3, 1.0])):
        with pytest.raises(TypeError):
            TF.ctc_loss(torch.tensor(lp), torch.tensor(tg), *bad)
        with pytest.raises(TypeError):
            F.ctc_loss(st.tensor(lp), st.tensor(tg), *bad)
    # a target class past C: torch reads out of bounds; symtrace refuses
    with pytest.raises(IndexError, match="target index out of range"):
        F.ctc_loss(st.tensor(lp), st.tensor(np.array([[1, 7, 2], [1, 2, 3], [2, 0, 0]])), (5, 5, 5), (3, 3, 1))


# ---------------------------------------------------------------- AdaptiveLogSoftmaxWithLoss
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax(torch, dtype, head_bias):
    tdt, sdt = getattr(torch, dtype), getattr(st, dtype)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0, head_bias=head_bias).to(tdt)
    sm = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0, head_bias=head_bias, dtype=sdt)
    # torch's parameter names and shapes
    assert [(k, tuple(v.shape)) for k, v in sm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    assert isinstance(sm.head, nn.Linear) and isinstance(sm.tail, nn.ModuleList)
    assert all(isinstance(t, nn.Sequential) and len(t) == 2 for t in sm.tail)
    assert sm.cutoffs == tm.cutoffs and sm.shortlist_size == tm.shortlist_size and sm.head_size == tm.head_size
    sm.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(head_bias)
    x = rng.standard_normal((7, 16)).astype(dtype)
    target = np.array([0, 3, 4, 8, 9, 14, 19])
    xs, xt = _pair(x, torch)
    got = sm(xs, st.tensor(target))
    exp = tm(xt, torch.tensor(target))
    assert type(got).__name__ == "_ASMoutput" and got._fields == ("output", "loss")
    assert_close(got.output.detach(), exp.output.detach(), **TOL[dtype])
    assert_close(got.loss.detach(), exp.loss.detach(), **TOL[dtype])
    (got.loss + got.output.sum()).backward()
    (exp.loss + exp.output.sum()).backward()
    assert_close(xs.grad, xt.grad, **GRAD_TOL[dtype])
    tp = dict(tm.named_parameters())
    for name, p in sm.named_parameters():
        assert_close(p.grad, tp[name].grad, **GRAD_TOL[dtype])
    assert_close(sm.log_prob(xs).detach(), tm.log_prob(xt).detach(), **TOL[dtype])
    # predict: rows whose head argmax is in the shortlist and rows that are not
    xp = np.concatenate([x, 3 * rng.standard_normal((25, 16)).astype(dtype)])
    np.testing.assert_array_equal(sm.predict(st.tensor(xp)).numpy(), tm.predict(torch.tensor(xp)).numpy())
    # unbatched: a 0-d target and a 1-d input
    g1, e1 = sm(xs[2], st.tensor(np.int64(8))), tm(xt[2], torch.tensor(8))
    assert tuple(g1.output.shape) == () and tuple(g1.loss.shape) == ()
    assert_close(g1.output.detach(), e1.output.detach(), **TOL[dtype])


def test_adaptive_log_softmax_init_and_errors(torch):
    st.manual_seed(0)
    m = nn.AdaptiveLogSoftmaxWithLoss(32, 50, [10, 30], div_value=4.0)
    # torch's initialization: every Linear kaiming_uniform(a=sqrt(5)), bound 1/sqrt(fan_in)
    for name, p in m.named_parameters():
        bound = 1 / np.sqrt(p.shape[1])
        v = p.detach().numpy()
        assert np.abs(v).max() <= bound and np.abs(v).max() > 0.5 * bound, name
    for args in (([8, 10, []]), ([8, 10, [5, 3]]), ([8, 10, [0, 3]]), ([8, 10, [3, 10]]), ([8, 10, [3, 3]]),
                 ([8, 10, [2.5]])):
        _same_error(torch, lambda: nn.AdaptiveLogSoftmaxWithLoss(*args),
                    lambda: torch.nn.AdaptiveLogSoftmaxWithLoss(*args))
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
    sm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
    x = np.zeros((4, 8), np.float32)
    for xi, ti in ((x, np.array([1, 2, 3])), (x[None], np.array([1, 2, 3, 4])), (x[0], np.array([1, 2, 3, 4])),
                   (x, np.array([[1, 2, 3, 4]])), (x, np.array([0, 2, 10, 4])), (x, np.array([0, -1, 3, 4])),
                   (x, np.array(3))):
        _same_error(torch, lambda: sm(st.tensor(xi), st.tensor(ti)), lambda: tm(torch.tensor(xi), torch.tensor(ti)))


# ---------------------------------------------------------------- module signatures and reprs
def test_module_reprs(torch):
    for s, t in ((nn.FractionalMaxPool2d(2, 3), torch.nn.FractionalMaxPool2d(2, 3)),
                 (nn.FractionalMaxPool3d(2, output_ratio=0.5), torch.nn.FractionalMaxPool3d(2, output_ratio=0.5)),
                 (nn.CTCLoss(blank=1), torch.nn.CTCLoss(blank=1))):
        assert repr(s) == repr(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch warns about its zero-element Linear here
        t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
    assert repr(s) == repr(t)
    m = nn.FractionalMaxPool2d((2, 3), output_size=4)
    assert m.kernel_size == (2, 3) and m.output_size == (4, 4) and m.output_ratio is None


# ---------------------------------------------------------------- compiled
class _SpatialTransformer(nn.Module):
    """A localization net predicts theta; affine_grid + grid_sample warp the input; a head classifies."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Linear(2 * 6 * 7, 6)
        self.head = nn.Linear(2 * 5 * 4, 3)

    def forward(self, x, y):
        theta = self.loc(x.flatten(1)).reshape(-1, 2, 3) * 0.1 + st.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        grid = F.affine_grid(theta, [x.shape[0], 2, 5, 4], align_corners=False)
        z = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
        z = z + F.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=True)
        return F.cross_entropy(self.head(z.flatten(1)), y)


def test_compiled_spatial_transformer_matches_eager():
    st.manual_seed(0)
    me = _SpatialTransformer()
    mc = copy.deepcopy(me)
    st.reset()
    cm = st.compile(mc)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 2, 6, 7)).astype(np.float32)
    y = st.tensor(rng.integers(0, 3, 3))
    xe, xc = st.tensor(a, requires_grad=True), st.tensor(a, requires_grad=True)
    le, lc = me(xe, y), cm(xc, y)
    np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
    le.backward()
    lc.backward()
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)
    stats = st._C._fe_stats()
    assert stats["graphs"] == 1 and stats["breaks"] == 0 and stats["fallbacks"] == 0, stats


def test_compiled_ctc_loss_matches_eager():
    rng = np.random.default_rng(1)
    T, N, C = 6, 3, 5
    a = rng.standard_normal((T, N, C)).astype(np.float32)
    # sequence 1 is impossible (3 labels with a repeat need 4 steps, it has 3): zero_infinity
    tg = st.tensor(np.array([[1, 2, 3], [2, 2, 3], [4, 1, 0]]))
    il, tl = st.tensor(np.array([6, 3, 4])), st.tensor(np.array([3, 3, 2]))

    def fn(x, tg, il, tl):
        return F.ctc_loss(x.log_softmax(2), tg, il, tl, reduction="mean", zero_infinity=True)

    e = st.explain(fn, st.tensor(a), tg, il, tl)
    assert e.graph_break_count == 0 and e.graph_count == 1, str(e)
    xe, xc = st.tensor(a, requires_grad=True), st.tensor(a, requires_grad=True)
    le, lc = fn(xe, tg, il, tl), st.compile(fn)(xc, tg, il, tl)
    np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
    le.backward()
    lc.backward()
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-4, atol=1e-6)
    assert np.isfinite(xc.grad.numpy()).all() and not xc.grad.numpy()[:, 1].any()


# ---------------------------------------------------------------- references without torch
# (these run in the 3.12 venv too: numpy references and finite differences)
def _ctc_brute_force(lp, target, blank):
    """-log of the summed probability of every alignment of target in lp [T, C] (enumerated)."""
    import itertools
    T, C = lp.shape
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or c != path[i - 1])]
        if collapsed == list(target):
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


@pytest.mark.parametrize("target,blank", [([1, 2], 0), ([1, 1], 0), ([2], 1), ([], 0), ([0, 2, 0], 1)])
def test_ctc_loss_matches_alignment_enumeration_and_finite_differences(target, blank):
    rng = np.random.default_rng(len(target) + 10 * blank)
    T, C = 5, 3
    x = rng.standard_normal((T, C))
    lp = x - np.log(np.exp(x).sum(1, keepdims=True))
    exp = _ctc_brute_force(lp, target, blank)

    def loss(a):
        return F.ctc_loss(a.log_softmax(1), st.tensor(np.array(target, dtype=np.int64)), (T,), (len(target),),
                          blank=blank, reduction="sum")

    xs = st.tensor(x, requires_grad=True)
    got = loss(xs)
    np.testing.assert_allclose(got.item(), exp, rtol=1e-10)
    got.backward()
    # through log_softmax, torch's gradient convention is the true derivative: finite differences
    num = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[i] = 1e-6
        num[i] = (loss(st.tensor(x + d)).item() - loss(st.tensor(x - d)).item()) / 2e-6
    np.testing.assert_allclose(xs.grad.numpy(), num, rtol=1e-5, atol=1e-7)


def test_ctc_loss_forms_agree():
    # padded and concatenated targets, tensors and tuples, batched and unbatched: one loss
    rng = np.random.default_rng(3)
    lp = st.tensor(rng.standard_normal((6, 2, 4))).log_softmax(2)
    padded = np.array([[1, 3, 3], [2, 1, 0]])
    concat = np.array([1, 3, 3, 2, 1])
    a = F.ctc_loss(lp, st.tensor(padded), st.tensor(np.array([6, 5])), st.tensor(np.array([3, 2])), reduction="none")
    b = F.ctc_loss(lp, st.tensor(concat), (6, 5), (3, 2), reduction="none")
    c = F.ctc_loss(lp[:5, 1], st.tensor(padded[1, :2]), st.tensor(np.int64(5)), st.tensor(np.int64(2)),
                   reduction="none")
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)
    np.testing.assert_allclose(c.item(), a.numpy()[1], rtol=1e-12)
    assert tuple(c.shape) == ()
    mean = F.ctc_loss(lp, st.tensor(padded), (6, 5), (3, 2))
    np.testing.assert_allclose(mean.item(), (a.numpy() / np.array([3, 2])).mean(), rtol=1e-12)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_identity_affine_grid_samples_the_input(mode, align):
    # the identity transform's grid hits the pixel centres: every mode returns the input
    rng = np.random.default_rng(4)
    x = st.tensor(rng.standard_normal((2, 3, 4, 5)))
    theta = st.tensor(np.tile(np.eye(2, 3), (2, 1, 1)))
    y = F.grid_sample(x, F.affine_grid(theta, [2, 3, 4, 5], align_corners=align), mode, "zeros", align)
    np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=1e-12, atol=1e-12)
    if mode != "bicubic":
        x3 = st.tensor(rng.standard_normal((1, 2, 3, 4, 5)))
        t3 = st.tensor(np.eye(3, 4)[None])
        y3 = F.grid_sample(x3, F.affine_grid(t3, [1, 2, 3, 4, 5], align_corners=align), mode, "zeros", align)
        np.testing.assert_allclose(y3.numpy(), x3.numpy(), rtol=1e-12, atol=1e-12)


def test_grid_sample_gradient_matches_finite_differences():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 4, 5))
    g = rng.uniform(-1.2, 1.2, (1, 3, 2, 2))
    w = rng.standard_normal((1, 2, 3, 2))
    for mode, pad in (("bilinear", "reflection"), ("bicubic", "border"), ("bilinear", "zeros")):
        def f(gv):
            return (F.grid_sample(st.tensor(x), gv, mode, pad, False) * st.tensor(w)).sum()

        gs = st.tensor(g, requires_grad=True)
        f(gs).backward()
        num = np.zeros_like(g)
        for i in np.ndindex(*g.shape):
            d = np.zeros_like(g)
            d[i] = 1e-6
            num[i] = (f(st.tensor(g + d)).item() - f(st.tensor(g - d)).item()) / 2e-6
        np.testing.assert_allclose(gs.grad.numpy(), num, rtol=1e-5, atol=1e-6, err_msg=f"{mode} {pad}")


def _fractional_reference(x, ks, osz, samples):
    """ATen's fractional max pooling loop (2-d) in numpy: (values, indices)."""
    n, c, H, W = x.shape

    def intervals(u, size, out, pool):
        alpha = np.float64(size - pool) / (out - 1) if out > 1 else 0.0
        seq = [int((i + u) * alpha) - int(u * alpha) for i in range(out)]
        seq[-1] = size - pool
        return seq

    vals = np.zeros((n, c) + osz)
    idx = np.zeros((n, c) + osz, dtype=np.int64)
    for b in range(n):
        for p in range(c):
            sw = intervals(samples[b, p, 0], W, osz[1], ks[1])
            sh = intervals(samples[b, p, 1], H, osz[0], ks[0])
            for i, h0 in enumerate(sh):
                for j, w0 in enumerate(sw):
                    win = x[b, p, h0:h0 + ks[0], w0:w0 + ks[1]]
                    a = int(np.argmax(win))
                    vals[b, p, i, j] = win.flat[a]
                    idx[b, p, i, j] = (h0 + a // ks[1]) * W + w0 + a % ks[1]
    return vals, idx


def test_fractional_max_pool2d_matches_reference_loop():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 9, 11))
    samples = rng.random((2, 3, 2))
    for ks, osz in (((2, 3), (5, 6)), ((3, 2), (7, 4))):
        v, i = F.fractional_max_pool2d(st.tensor(x), ks, osz, return_indices=True,
                                       _random_samples=st.tensor(samples))
        rv, ri = _fractional_reference(x, ks, osz, samples)
        np.testing.assert_array_equal(v.numpy(), rv)
        np.testing.assert_array_equal(i.numpy(), ri)


def test_adaptive_log_softmax_is_a_distribution():
    st.manual_seed(1)
    m = nn.AdaptiveLogSoftmaxWithLoss(12, 15, [3, 8], div_value=2.0, dtype=st.float64)
    x = st.randn(6, 12, dtype=st.float64)
    lp = m.log_prob(x).detach()
    np.testing.assert_allclose(lp.exp().sum(1).numpy(), np.ones(6), rtol=1e-12)
    t = np.array([0, 2, 3, 7, 8, 14])
    out = m(x, st.tensor(t))
    np.testing.assert_allclose(out.output.detach().numpy(), lp.numpy()[np.arange(6), t], rtol=1e-12)
    np.testing.assert_allclose(out.loss.item(), -lp.numpy()[np.arange(6), t].mean(), rtol=1e-12)
    np.testing.assert_array_equal(m.predict(x).numpy(), lp.numpy().argmax(1))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_precision(torch, dtype):
    # fractional windows computed in the input's type as ATen's (exact); grid_sample and
    # affine_grid within the type's rounding
    tdt, sdt = getattr(torch, dtype), getattr(st, dtype)
    rng = np.random.default_rng(8)
    x = torch.tensor(rng.standard_normal((2, 3, 17, 19)), dtype=tdt)
    rs = torch.tensor(rng.random((2, 3, 2)), dtype=tdt)
    xs, rss = st.tensor(x.float().numpy()).to(sdt), st.tensor(rs.float().numpy()).to(sdt)
    a, ai = torch.nn.functional.fractional_max_pool2d(x, 2, (13, 11), return_indices=True, _random_samples=rs)
    b, bi = F.fractional_max_pool2d(xs, 2, (13, 11), return_indices=True, _random_samples=rss)
    assert_close(bi, ai)
    assert_close(b, a, rtol=0, atol=0)
    g = torch.tensor(rng.uniform(-1.2, 1.2, (2, 3, 3, 2)), dtype=tdt)
    gs = st.tensor(g.float().numpy()).to(sdt)
    for mode in ("bilinear", "nearest", "bicubic"):
        assert_close(F.grid_sample(xs, gs, mode, "reflection", False),
                     torch.nn.functional.grid_sample(x, g, mode, "reflection", False))
    th = torch.tensor(rng.standard_normal((2, 2, 3)), dtype=tdt)
    assert_close(F.affine_grid(st.tensor(th.float().numpy()).to(sdt), [2, 3, 4, 5], False),
                 torch.nn.functional.affine_grid(th, [2, 3, 4, 5], False))


def test_torch_level_aliases(torch):
    # torch.grid_sampler (modes as ints) and torch.affine_grid_generator (no Python-level checks)
    rng = np.random.default_rng(9)
    x, g = rng.standard_normal((2, 3, 4, 5)), rng.uniform(-1.2, 1.2, (2, 3, 2, 2))
    for mode in (0, 1, 2):
        for pad in (0, 1, 2):
            assert_close(st.grid_sampler(st.tensor(x), st.tensor(g), mode, pad, True),
                         torch.grid_sampler(torch.tensor(x), torch.tensor(g), mode, pad, True), **TOL["float64"])
    th = rng.standard_normal((2, 2, 3))
    for size in ([2, 3, 4, 5], [2, 3, 0, 5]):
        assert_close(st.affine_grid_generator(st.tensor(th), size, False),
                     torch.affine_grid_generator(torch.tensor(th), size, False), **TOL["float64"])
    _same_error(torch, lambda: st.affine_grid_generator(st.tensor(th), [2, 3, 4], False),
                lambda: torch.affine_grid_generator(torch.tensor(th), [2, 3, 4], False))
    # an unknown mode: torch returns uninitialized memory; symtrace refuses
    with pytest.raises(RuntimeError, match="invalid interpolation_mode"):
        st.grid_sampler(st.tensor(x), st.tensor(g), 5, 0, False)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_non_finite_grid(torch, mode):
    # NaN and +-inf grid coordinates: border / reflection clip them as ATen's (NaN -> 0); zeros
    # reads nothing for them; bicubic's taps give NaN as torch's
    x = np.arange(20, dtype=np.float64).reshape(1, 1, 4, 5) + 1
    g = np.array([[[[np.nan, 0.3], [0.2, np.nan], [np.inf, 0.0], [-np.inf, 0.5], [1e20, 0.1]]]])
    for pad in ("zeros", "border", "reflection"):
        for align in (False, True):
            assert_close(F.grid_sample(st.tensor(x), st.tensor(g), mode, pad, align),
                         torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode, pad, align),
                         **TOL["float64"], msg=f"{pad} {align}")


def test_fractional_max_pool_nan(torch):
    # a NaN wins its window; with two, the last one (ATen's loop)
    rng = np.random.default_rng(10)
    x = rng.standard_normal((1, 2, 6, 6))
    x[0, 0, 0, 0] = x[0, 0, 0, 1] = x[0, 1, 2, 2] = np.nan
    rs = rng.random((1, 2, 2))
    xs, xt = _pair(x, torch)
    got, gi = F.fractional_max_pool2d(xs, 2, (4, 4), return_indices=True, _random_samples=st.tensor(rs))
    exp, ei = torch.nn.functional.fractional_max_pool2d(xt, 2, (4, 4), return_indices=True,
                                                        _random_samples=torch.tensor(rs))
    assert_close(gi, ei)
    assert_close(got.detach(), exp.detach(), **TOL["float64"])
    _backward_both(torch, got, exp, rng)
    assert_close(xs.grad, xt.grad, **TOL["float64"])


def test_compiled_adaptive_log_softmax_and_fractional_pool_match_eager():
    # both are captured whole (the target check runs eagerly only) and agree with eager
    st.manual_seed(2)
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0)
    rng = np.random.default_rng(11)
    t = st.tensor(np.array([0, 3, 5, 7, 9]))
    rs = st.tensor(rng.random((1, 2, 2)).astype(np.float32))

    def fn(x, img):
        o = m(x, t)
        pooled = F.fractional_max_pool2d(img, 2, (4, 4), _random_samples=rs)
        return o.loss + o.output.sum() + pooled.sum()

    a, b = rng.standard_normal((5, 8)).astype(np.float32), rng.standard_normal((1, 2, 7, 7)).astype(np.float32)
    e = st.explain(fn, st.tensor(a), st.tensor(b))
    assert e.graph_break_count == 0 and e.graph_count == 1, str(e)
    xe, xc = st.tensor(a, requires_grad=True), st.tensor(a, requires_grad=True)
    ie, ic = st.tensor(b, requires_grad=True), st.tensor(b, requires_grad=True)
    le = fn(xe, ie)
    le.backward()
    ge = [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad()
    lc = st.compile(fn)(xc, ic)
    lc.backward()
    np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ic.grad.numpy(), ie.grad.numpy(), rtol=1e-4, atol=1e-6)
    for g, p in zip(ge, m.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-4, atol=1e-6)
