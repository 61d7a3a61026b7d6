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
import symtrace.nn.functional as F

MODES = ["eager", "compiled", "dynamic"]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("SYMTRACE_DYNAMIC", raising=False)
    st.reset()
    yield
    st.reset()


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
