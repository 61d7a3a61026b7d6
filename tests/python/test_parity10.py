# Parity leftovers against torch (round 10): adaptive average pooling exact for NaN / inf
# (no averaging-matrix matmul that spreads them over the channel), adaptive max pooling's
# NaN propagation, and the gradients of finite windows staying finite. Each against a
# numpy reference (windows summed one by one, as torch's kernel) and, where it is
# installed, torch; eager and compiled (static and dynamic=True), each compiled function
# called 3 times.
import itertools

import numpy as np
import pytest

import symtrace as st
from dynamic_helpers import fresh_dynamic  # noqa: F401  (autouse: a clean frontend per test)
import symtrace.nn.functional as F

MODES = ["eager", "compiled", "dynamic"]


def _fn(f, mode):
    if mode == "eager":
        return f
    return st.compile(f, dynamic=(mode == "dynamic"), backend="interp")


def _bounds(size, out):
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _ref_adaptive(x, out, op):
    """numpy: op (sum-mean or max) over each adaptive window of x's last len(out) dims."""
    k = len(out)
    lead = x.shape[:-k]
    wins = [_bounds(s, o) for s, o in zip(x.shape[-k:], out)]
    y = np.empty(lead + tuple(out), np.float64)
    for pos in itertools.product(*[range(o) for o in out]):
        sl = tuple(slice(*wins[d][pos[d]]) for d in range(k))
        w = x[(Ellipsis,) + sl].astype(np.float64).reshape(lead + (-1,))
        if op == "avg":
            ext = np.prod([wins[d][pos[d]][1] - wins[d][pos[d]][0] for d in range(k)])
            y[(Ellipsis,) + pos] = w.sum(-1) / ext
        else:
            with np.errstate(invalid="ignore"):
                y[(Ellipsis,) + pos] = np.where(np.isnan(w).any(-1), np.nan, w.max(-1))
    return y


def _with_nonfinite(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[3] = np.nan
    flat[-1] = np.inf
    flat[len(flat) // 2] = -np.inf
    return x


CASES = [  # (k, input shape, output size)
    (2, (2, 3, 7, 9), (2, 3)),
    (2, (2, 3, 7, 9), (3, 3)),
    (2, (1, 2, 5, 7), (2, 2)),
    (2, (2, 3, 4, 5), (6, 7)),      # outputs larger than the input: overlapping windows
    (1, (2, 3, 11), (4,)),
    (3, (1, 2, 5, 4, 7), (2, 3, 3)),
]
AVG = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}
MAX = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}


def _sizes(shape, k, mode):
    """The input shapes of the 3 calls: dynamic mode grows the spatial dims."""
    if mode != "dynamic":
        return [shape] * 3
    return [shape[:-k] + tuple(s + d for s in shape[-k:]) for d in (0, 2, 1)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_adaptive_avg_keeps_nonfinite_in_its_windows(case, mode):
    # the averaging matrix's zeros times a NaN or inf made the whole channel NaN (fuzz seed
    # 930220); torch keeps them in the windows that contain them
    k, shape, out = CASES[case]
    f = _fn(lambda x: AVG[k](x, out if k > 1 else out[0]), mode)
    for i, sh in enumerate(_sizes(shape, k, mode)):
        xv = _with_nonfinite(sh, i)
        x = st.tensor(xv, requires_grad=True)
        y = f(x)
        want = _ref_adaptive(xv, out, "avg")
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-6)
        y.sum().backward()
        g = x.grad.numpy()
        assert np.isfinite(g).all()     # finite windows' gradients stay finite
        # each output's window means pass back a total of 1
        assert g.sum() == pytest.approx(float(y.numel()), rel=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_adaptive_avg_nonfinite_matches_torch(case, mode):
    torch = pytest.importorskip("torch")
    k, shape, out = CASES[case]
    tf = {1: torch.nn.functional.adaptive_avg_pool1d, 2: torch.nn.functional.adaptive_avg_pool2d,
          3: torch.nn.functional.adaptive_avg_pool3d}[k]
    o = out if k > 1 else out[0]
    f = _fn(lambda x: AVG[k](x, o), mode)
    for i, sh in enumerate(_sizes(shape, k, mode)):
        xv = _with_nonfinite(sh, i + 10)
        x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
        y, ty = f(x), tf(tx, o)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
        w = np.random.default_rng(i).standard_normal(tuple(ty.shape)).astype(np.float32)
        (y * st.tensor(w)).sum().backward()
        (ty * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_adaptive_avg_half_nonfinite_matches_torch(dtype, mode):
    # the fuzzer's program: float16, 3 x 2 planes into 2 x 2 windows
    torch = pytest.importorskip("torch")
    f = _fn(lambda x: F.adaptive_avg_pool2d(x, 2), mode)
    for i, sh in enumerate(_sizes((3, 3, 3, 2), 2, mode)):
        xv = _with_nonfinite(sh, i)
        y = f(st.tensor(xv).to(getattr(st, dtype)))
        ty = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(xv).to(getattr(torch, dtype)), 2)
        assert y.dtype == getattr(st, dtype)
        np.testing.assert_allclose(y.float().numpy(), ty.float().numpy(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_adaptive_max_nan_stays_in_its_windows(case, mode):
    k, shape, out = CASES[case]
    o = out if k > 1 else out[0]
    f = _fn(lambda x: MAX[k](x, o), mode)
    for i, sh in enumerate(_sizes(shape, k, mode)):
        xv = _with_nonfinite(sh, i)
        x = st.tensor(xv, requires_grad=True)
        y = f(x)
        np.testing.assert_array_equal(y.detach().numpy(), _ref_adaptive(xv, out, "max").astype(np.float32))
        y.sum().backward()
        assert np.isfinite(x.grad.numpy()).all()


def test_adaptive_pools_nonfinite_grad_matches_torch():
    torch = pytest.importorskip("torch")
    xv = _with_nonfinite((2, 3, 7, 9), 5)
    for sf, tf in ((F.adaptive_max_pool2d, torch.nn.functional.adaptive_max_pool2d),
                   (F.adaptive_avg_pool2d, torch.nn.functional.adaptive_avg_pool2d)):
        x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
        sf(x, (3, 4)).sum().backward()
        tf(tx, (3, 4)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_adaptive_avg_dynamic_one_graph():
    # divisible and non-divisible sizes share the dynamic graph (Kmax is a bound there)
    f = st.compile(lambda x: F.adaptive_avg_pool2d(x, 3), dynamic=True, backend="interp")
    for h, w in ((8, 8), (9, 9), (12, 10), (13, 7)):
        xv = _with_nonfinite((2, 2, h, w), h)
        np.testing.assert_allclose(f(st.tensor(xv)).numpy(), _ref_adaptive(xv, (3, 3), "avg"),
                                   rtol=1e-5, atol=1e-6)
    assert st._C._fe_stats()["graphs"] == 1


# ---------------- scatter_reduce amax / amin gradients: torch's rule ----------------
# torch (scatter_reduce_backward): self_is = (self == out), src_is = (src == out.gather),
# n = self_is.scatter_add(src_is); grad_self = self_is * grad / n (then 0 where something
# lands if include_self=False), grad_src = src_is * (grad / n).gather. Plain products: a
# NaN gradient (or n = 0 for a NaN result) reaches every element of its group.
SCATTER_INDEX = [[0, 1], [2, 0], [1, 1]]


def _scatter_run(lib, mode, xv, sv, dtype, reduce, include_self, wv, dim=1, post=None, x_grad=True):
    def f(x, s):
        y = x.scatter_reduce(dim, lib.tensor(SCATTER_INDEX), s, reduce, include_self=include_self)
        return post(lib, y) if post else y
    g = f if lib is not st else _fn(f, mode)
    res = []
    for _ in range(3):
        x = lib.tensor(xv).to(getattr(lib, dtype)).requires_grad_(x_grad)
        s = lib.tensor(sv).to(getattr(lib, dtype)).requires_grad_()
        y = g(x, s)
        (y.float() * lib.tensor(wv)).sum().backward()
        res.append((y.float().detach().numpy(), x.grad.float().numpy() if x_grad else None,
                    s.grad.float().numpy()))
    return res


def _same(got, want, tol):
    for a, b in zip(got, want):
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("mode", MODES)
def test_scatter_amax_bf16_nan_gradient_matches_torch(mode):
    # fuzz seed 910065: pow(v, 0.5) of a negative amax result has a NaN gradient, which
    # torch passes to the input's elements that are not the result (0 * nan); symtrace
    # masked it to 0
    torch = pytest.importorskip("torch")
    xv = np.array([[2.25, -1.03125, -0.62109375], [-0.392578125, 2.25, 0.34765625],
                   [1.046875, 0.3203125, -0.10302734375], [-2.78125, 0.8984375, 2.4375]], np.float32)
    idx = (np.arange(12) * 7 + 1) % 3     # the fuzzer's index
    wv = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)

    def run(lib):
        def f(x):
            v = x.clone().scatter_reduce(-1, lib.tensor(idx.reshape(4, 3)), x, "amax", include_self=True)
            return lib.pow(v, 0.5)
        g = f if lib is not st else _fn(f, mode)
        out = []
        for _ in range(3):
            x = lib.tensor(xv).to(lib.bfloat16).requires_grad_()
            y = g(x)
            (y.float() * lib.tensor(wv)).sum().backward()
            out.append((y.float().detach().numpy(), x.grad.float().numpy()))
        return out
    got, want = run(st), run(torch)
    assert np.isnan(want[0][1]).any()
    for a, b in zip(got, want):
        _same(a, b, 1e-2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_extreme_gradient_matches_torch(reduce, include_self, dtype, mode):
    # ties (integer values), a NaN in input and in src, and a NaN in the upstream grad
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    xv = rng.integers(-2, 3, (4, 3)).astype(np.float32)
    sv = rng.integers(-2, 3, (3, 2)).astype(np.float32)
    xv[3, 1] = np.nan
    sv[2, 0] = np.nan
    wv = rng.standard_normal((4, 3)).astype(np.float32)
    wv[0, 2] = np.nan
    for dim in (0, 1):
        got = _scatter_run(st, mode, xv, sv, dtype, reduce, include_self, wv, dim)
        want = _scatter_run(torch, mode, xv, sv, dtype, reduce, include_self, wv, dim)
        for a, b in zip(got, want):
            _same(a, b, 1e-2)


@pytest.mark.parametrize("mode", MODES)
def test_scatter_extreme_ties_expected_values(mode):
    # no torch needed: input [[1, 5, 0]], src [[5, 5]] at [[1, 1]] along dim 1, amax:
    # out[0, 1] = 5 shared by input's own 5 and both src values: 1/3 each
    wv = np.ones((1, 3), np.float32)
    global SCATTER_INDEX
    saved, SCATTER_INDEX = SCATTER_INDEX, [[1, 1]]
    try:
        for include_self, gx in ((True, [1, 1 / 3, 1]), (False, [1, 0, 1])):
            for y, g_x, g_s in _scatter_run(st, mode, np.array([[1, 5, 0]], np.float32),
                                            np.array([[5, 5]], np.float32), "float32", "amax",
                                            include_self, wv):
                np.testing.assert_array_equal(y, [[1, 5, 0]])
                np.testing.assert_allclose(g_x, [gx], rtol=1e-6)
                np.testing.assert_allclose(g_s, [[1 / 3, 1 / 3]], rtol=1e-6)
    finally:
        SCATTER_INDEX = saved


@pytest.mark.parametrize("mode", MODES)
def test_scatter_extreme_src_grad_only_every_call(mode):
    # only src needs grad (a GNN's messages into a fresh buffer): the compiled entry's
    # cached calls kept the result's requires_grad and src's gradient
    sv = np.array([[1, 4], [3, 3], [2, 0]], np.float32)
    wv = np.ones((4, 3), np.float32)
    for y, _, g_s in _scatter_run(st, mode, np.zeros((4, 3), np.float32), sv, "float32", "amax",
                                  False, wv, dim=0, x_grad=False):
        np.testing.assert_array_equal(y, [[1, 3, 0], [2, 4, 0], [3, 0, 0], [0, 0, 0]])
        np.testing.assert_array_equal(g_s, [[1, 1], [1, 1], [1, 0]])


def test_scatter_extreme_double_backward_matches_torch():
    # the Function's backward is made of differentiable ops: create_graph=True works
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.tensor([[1., 5., 0.], [2., 2., 3.]], requires_grad=True)
        s = lib.tensor([[5., 1.], [2., 7.]], requires_grad=True)
        y = x.scatter_reduce(1, lib.tensor([[1, 1], [0, 2]]), s, "amax")
        w = lib.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
        gx, gs = lib.autograd.grad((y * w).sum(), (x, s), create_graph=True)
        gw, = lib.autograd.grad((gx * gx).sum() + (gs * gs).sum(), (w,))
        return gx.detach().numpy(), gs.detach().numpy(), gw.numpy()
    for a, b in zip(run(st), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# ---------------- argsort of a split output whose base was written in place ----------------
def _split_then_write(lib, x, op, inplace=True):
    b = x * 1
    a, c = b.split(3) if op != "unbind" else (b.unbind(0)[0], None)
    if inplace:
        b.add_(1)
    if op == "unbind":
        return a.reshape(-1).argsort()
    return getattr(a, op)()


def _raises_as_torch(lib, mode, op, grad, inplace, no_grad=False):
    """(None or the message) of each of 3 calls."""
    g = (lambda x: _split_then_write(lib, x, op, inplace))
    g = _fn(g, mode) if lib is st else g
    res = []
    for n in range(3):
        shape = (6,) if op != "unbind" else (2, 3)
        x = lib.tensor(np.arange(6, dtype=np.float32)[::-1].copy().reshape(shape) + n).requires_grad_(grad)
        try:
            if no_grad:
                with lib.no_grad():
                    g(x)
            else:
                g(x)
            res.append(None)
        except RuntimeError as e:
            res.append(str(e).split(".")[0])
    return res


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["argsort", "sort", "unbind", "argmax"])
def test_argsort_reads_a_stale_split_view_as_torch(op, mode):
    # torch's argsort is sort's indices: it reads the view's history and raises (symtrace's
    # host-side argsort returned indices); argmax does not read it in either
    got = _raises_as_torch(st, mode, op, True, True)
    want = [None] * 3 if op == "argmax" else [
        "Output 0 of Split is a view and its base or another view of its base has been modified "
        "inplace" if op != "unbind" else
        "Output 0 of Unbind is a view and its base or another view of its base has been modified "
        "inplace"] * 3
    assert got == want


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["no_write", "no_grad_input", "no_grad_mode"])
def test_argsort_of_split_view_runs_where_torch_does(case, mode):
    got = _raises_as_torch(st, mode, "argsort", case != "no_grad_input", case != "no_write",
                           no_grad=case == "no_grad_mode")
    assert got == [None] * 3


@pytest.mark.parametrize("op", ["argsort", "sort", "unbind", "argmax"])
def test_argsort_stale_view_matches_torch(op):
    torch = pytest.importorskip("torch")
    assert _raises_as_torch(st, "eager", op, True, True) == _raises_as_torch(torch, "eager", op, True, True)
    for case in ("no_write", "no_grad_input", "no_grad_mode"):
        args = (op, case != "no_grad_input", case != "no_write")
        assert (_raises_as_torch(st, "eager", *args, no_grad=case == "no_grad_mode")
                == _raises_as_torch(torch, "eager", *args, no_grad=case == "no_grad_mode"))


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_interpolate_area_keeps_nonfinite_in_its_windows(mode):
    # interpolate(mode="area") is adaptive average pooling: it went through the old
    # averaging-matrix code until that was removed from _conv.py
    torch = pytest.importorskip("torch")
    f = st.compile(lambda x: F.interpolate(x, size=(3, 2), mode="area")) if mode == "compiled" \
        else (lambda x: F.interpolate(x, size=(3, 2), mode="area"))
    for i in range(3):
        xv = np.random.default_rng(i).standard_normal((2, 3, 7, 5)).astype(np.float32)
        xv[0, 1, 0, 0] = np.nan
        xv[1, 2, 6, 4] = np.inf
        y = f(st.tensor(xv))
        ty = torch.nn.functional.interpolate(torch.tensor(xv), size=(3, 2), mode="area")
        np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-5, atol=1e-6)
        assert np.isfinite(y.numpy()).sum() == np.isfinite(ty.numpy()).sum() == 2 * 3 * 6 - 2
