# CNN speed on the CPU (round 4): adaptive average pooling's fast paths, each against
# torch where it is installed and a numpy reference (windows summed one by one) where not:
# - eager, sizes that do not divide: 0/1 window-matrix products (nn/_adaptive_pool.py's
#   _matmul_sums), with the window sums as the fallback when the result is not finite
#   (a NaN / inf input, a finite sum that overflows); STATS counts the path taken.
# - compiled (a recorded trace) and dynamic shapes: the window sums, along the last dim
#   (each pooled dim moved last), values and gradients.
import itertools

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F
from symtrace.nn import _adaptive_pool as AP


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("SYMTRACE_DYNAMIC", raising=False)
    st.reset()
    yield
    st.reset()


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


def _delta(before):
    return {k: AP.STATS[k] - before[k] for k in before}


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
