"""interpolate(antialias=True)'s banded path (symtrace/nn/_interp_aa.py: per output only the
taps of its window, index_selects of rows and a weighted sum; the gradient gathers with the
transposed tables): values and gradients against torch, eager and compiled, which path
the cost estimate picks (STATS), and banded == dense without torch."""
import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as SF
from symtrace.nn import _interp_aa as M


def _rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.fixture
def force(monkeypatch):
    """force(cost): the banded path's cost per tap (0: every dim banded, huge: every dim dense)."""
    return lambda cost: monkeypatch.setattr(M, "_BAND_COST", cost)


def _run(a, g, kw):
    x = st.tensor(a, requires_grad=True)
    y = SF.interpolate(x, antialias=True, **kw)
    y.backward(st.tensor(g))
    return y.detach().numpy(), x.grad.numpy()


CASES = [
    ((2, 3, 64, 80), dict(size=(56, 56))),          # mild downsampling, uneven windows
    ((1, 2, 96, 96), dict(size=(24, 24))),          # scale 4
    ((1, 2, 33, 47), dict(size=(70, 20))),          # up in H, down in W
    ((1, 1, 40, 31), dict(scale_factor=(0.37, 0.61))),
    ((1, 1, 9, 8), dict(size=(1, 3))),
]
MODES = [("bilinear", False), ("bilinear", True), ("bicubic", False), ("bicubic", True), ("lanczos", False)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,ac", MODES, ids=[f"{m}-ac{int(a)}" for m, a in MODES])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_banded_values_and_grads_as_torch(case, mode, ac, dtype, force):
    torch = pytest.importorskip("torch")
    force(0)
    shape, kw = case
    kw = dict(kw, mode=mode, align_corners=ac)
    a = _rand(shape, dtype)
    xt = torch.tensor(a, requires_grad=True)
    yt = torch.nn.functional.interpolate(xt, antialias=True, **kw)
    g = _rand(tuple(yt.shape), dtype, 1)
    yt.backward(torch.tensor(g))
    before = dict(M.STATS)
    got = _run(a, g, kw)
    assert M.STATS["banded"] - before["banded"] == 2 and M.STATS["dense"] == before["dense"]
    assert M.STATS["banded_grad"] - before["banded_grad"] == 2
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert got[0].dtype == np.dtype(dtype)
    np.testing.assert_allclose(got[0], yt.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(got[1], xt.grad.numpy(), rtol=tol, atol=tol)


def test_image_size_takes_banded_path_as_torch():
    # the default cost estimate: 256x320 -> 224x224 (torchvision's Resize) bands both dims
    torch = pytest.importorskip("torch")
    a = _rand((1, 3, 256, 320), "float32")
    xt = torch.tensor(a, requires_grad=True)
    yt = torch.nn.functional.interpolate(xt, size=(224, 224), mode="bilinear", antialias=True)
    g = _rand(tuple(yt.shape), "float32", 1)
    yt.backward(torch.tensor(g))
    before = dict(M.STATS)
    y, gx = _run(a, g, dict(size=(224, 224), mode="bilinear"))
    assert M.STATS["banded"] - before["banded"] == 2 and M.STATS["dense"] == before["dense"]
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_small_upsampling_takes_dense_path():
    before = dict(M.STATS)
    SF.interpolate(st.zeros(1, 1, 16, 16), size=(32, 32), mode="bicubic", antialias=True)
    assert M.STATS["dense"] - before["dense"] == 2 and M.STATS["banded"] == before["banded"]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
def test_banded_compiled_as_torch(mode, force):
    torch = pytest.importorskip("torch")
    force(0)

    def fn(F, x):
        return F.interpolate(x * 2, size=(20, 13), mode=mode, antialias=True).sin()

    a = _rand((2, 3, 48, 40), "float32")
    xt = torch.tensor(a, requires_grad=True)
    yt = fn(torch.nn.functional, xt)
    (yt * yt).sum().backward()
    ex = st.explain(lambda x: fn(SF, x), st.tensor(a))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    c = st.compile(lambda x: fn(SF, x))
    before = M.STATS["banded_grad"]
    for _ in range(2):
        x = st.tensor(a, requires_grad=True)
        y = c(x)
        (y * y).sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert M.STATS["banded_grad"] > before


# ---------------- without torch ----------------
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
def test_banded_equals_dense(mode, force):
    a = _rand((2, 2, 45, 37), "float64")
    g = _rand((2, 2, 13, 50), "float64", 1)
    kw = dict(size=(13, 50), mode=mode)
    force(0)
    banded = _run(a, g, kw)
    force(1e9)
    dense = _run(a, g, kw)
    for b, d in zip(banded, dense):
        np.testing.assert_allclose(b, d, rtol=1e-12, atol=1e-12)


def test_banded_by_hand(force):
    # W 4 -> 2 (as test_interp_aa's dense case): taps 0, 1, 2 and 1, 2, 3 weigh 0.75, 0.75, 0.25 / 1.75
    force(0)
    x = st.tensor([[[[0.0, 1.0, 2.0, 3.0]]]], requires_grad=True)
    before = M.STATS["banded"]
    y = SF.interpolate(x, size=(1, 2), mode="bilinear", antialias=True)
    assert M.STATS["banded"] - before == 2
    np.testing.assert_allclose(y.detach().numpy().ravel(), [1.25 / 1.75, 4.0 / 1.75], rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy().ravel(), np.array([0.75, 1.0, 1.0, 0.75]) / 1.75, rtol=1e-6)
