"""Dropout under autograd keeps a bool keep mask, as torch's native_dropout:
eager records where(rand(like x) >= p, x * 1/(1-p), 0) (runtime/eager.c
dropout_recorded) and the trace records the same statements (runtime/trace.c
emit_dropout), so the tape and the compiled backward graph hold one byte a
point instead of a float32 mask. These tests check the mask's dtype and
memory, that eager (with and without grad) and compiled draw the same mask
from the same seed, that gradients are the mask times 1/(1-p), and the edge
p = 1 (zeros, no nan)."""
import gc
import re

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F

BACKENDS = ["interp"] + (["llvm"] if st._C._fe_backend_available("llvm") else [])


def test_eager_tape_holds_a_bool_mask():
    mem = st.memory.memory_allocated
    x = st.ones(256, 1024, requires_grad=True)   # 1 MiB
    gc.collect()             # earlier tests' garbage goes first
    base = mem()
    h = x + 1
    y = F.dropout(h, 0.25)
    del h
    gc.collect()
    # y (float32) and the keep mask (bool): the float mask of the old
    # recording, and h (which a mask product used to keep), are gone
    assert mem() - base == y.numel() * 4 + y.numel() * 1, mem() - base
    y.sum().backward()
    keep = y.detach().numpy() != 0
    np.testing.assert_array_equal(x.grad.numpy(), (keep / np.float32(0.75)).astype(np.float32))
    assert 0.70 < keep.mean() < 0.80


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eager_same_mask_with_and_without_grad(dtype):
    x = st.randn(64, 33).to(getattr(st, dtype)) + 5.0
    st.manual_seed(3)
    a = F.dropout(x, 0.4)
    xr = x.detach().requires_grad_(True)
    st.manual_seed(3)
    b = F.dropout(xr, 0.4)
    assert b.dtype == x.dtype and b.requires_grad
    np.testing.assert_array_equal(a.numpy(), b.detach().numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_saves_the_bool_mask(backend, capfd, monkeypatch):
    monkeypatch.setenv("SYMTRACE_SAVED_LOG", "1")
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((16, 8)).astype(np.float32)
    wn = rng.standard_normal((8, 32)).astype(np.float32)
    gn = rng.standard_normal((16, 32)).astype(np.float32)

    def f(x, w, g):
        return (F.dropout(x @ w, 0.5) * g).sum()

    cf = st.compile(f, backend=backend)
    x = st.tensor(xn, requires_grad=True)
    w = st.tensor(wn, requires_grad=True)
    g = st.tensor(gn)
    capfd.readouterr()
    st.manual_seed(11)
    cf(x, w, g).backward()
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("  ") and " = " in ln]
    assert lines, err[-2000:]
    masks = [ln for ln in lines if "[16, 32]" in ln and "= input()" not in ln]
    # the one [16, 32] value saved is the keep mask, as bool; no float mask
    assert len(masks) == 1 and re.search(r"\bbool\b", masks[0]) and "= ge(" in masks[0], lines
    # the same seed gives eager the same mask: gradients agree
    xe = st.tensor(xn, requires_grad=True)
    we = st.tensor(wn, requires_grad=True)
    st.manual_seed(11)
    ye = F.dropout(xe @ we, 0.5)
    (ye * g).sum().backward()
    keep = ye.detach().numpy() != 0
    assert 0.35 < keep.mean() < 0.65
    dz = gn * keep / 0.5
    np.testing.assert_allclose(x.grad.numpy(), dz @ wn.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), xn.T @ dz, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), we.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["eager"] + BACKENDS)
def test_p_one_gives_zeros_and_zero_gradients(backend):
    def f(x):
        return (F.dropout(x * 2.0, 1.0) + x).sum()

    fn = f if backend == "eager" else st.compile(f, backend=backend)
    x = st.randn(8, 8, requires_grad=True)
    y = fn(x)
    y.backward()
    np.testing.assert_allclose(y.item(), x.detach().numpy().sum(), rtol=1e-5)
    g = x.grad.numpy()
    assert np.isfinite(g).all()
    np.testing.assert_array_equal(g, np.ones((8, 8), np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_half_precision_dropout_keeps_dtype(backend):
    def f(x):
        return F.dropout(x, 0.5)

    x = (st.randn(32, 32) + 3.0).to(st.bfloat16).requires_grad_(True)
    cf = st.compile(f, backend=backend)
    y = cf(x)
    assert y.dtype == st.bfloat16
    y.float().sum().backward()
    keep = y.detach().float().numpy() != 0
    np.testing.assert_array_equal(x.grad.float().numpy(), keep * 2.0)
