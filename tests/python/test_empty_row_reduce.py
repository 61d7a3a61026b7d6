# Reductions over an empty row in kernels with a per-point epilogue
# (fusion/kernel.c st_kernel_outer_stores): a row sum stored beside a
# per-point output, `s = x.sum(1, keepdim=True); x - s`, is one kernel whose
# epilogue runs per point of the row. With an empty row (x of shape [N, 0])
# that epilogue visits no point, so the sum [N, 1] was never written and
# the caller saw whatever its buffer held before (the value of an earlier
# call: cross_entropy's mean over 0 rows after a call with rows gave 0, not
# nan). Every backend now makes those stores per outer point when the row
# is empty: llvm, interp and the NVRTC renderer (run on the CPU by cudaemu).
import math

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F

BACKENDS = ["llvm", "interp", "cudaemu"]


def _dirty_pool():
    """Leaves freed blocks full of 7s in the caching allocator, so that an
    output the kernel does not write shows up as 7s, not as fresh zeros."""
    junk = [st.full((4, 8), 7.0) + 0.0 for _ in range(4)]
    junk += [st.full((4, 1), 7.0) + 0.0 for _ in range(4)]
    del junk


@pytest.mark.parametrize("backend", BACKENDS)
def test_sum_beside_per_point_output(backend):
    def f(x):
        s = x.sum(1, keepdim=True)
        return x - s, s

    g = st.compile(f, backend=backend, dynamic=True)
    for n in (3, 0, 0, 0):
        _dirty_pool()
        y, s = g(st.ones(4, n))
        assert tuple(y.shape) == (4, n)
        assert s.flatten().tolist() == [float(n)] * 4, (backend, n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mean_and_count_of_empty_rows(backend):
    def f(x, t):
        m = x.mean(1, keepdim=True)
        valid = t != -100
        return x - m, m, st.where(valid, t, 0), valid.sum()

    g = st.compile(f, backend=backend, dynamic=True)
    for n in (5, 0, 0):
        _dirty_pool()
        x = st.arange(3 * n, dtype=st.float32).reshape(3, n)
        t = st.arange(n) - 2
        y, m, w, c = g(x, t)
        assert tuple(y.shape) == (3, n) and tuple(w.shape) == (n,)
        want_m = x.numpy().mean(1) if n else [math.nan] * 3
        np.testing.assert_allclose(m.flatten().numpy(), want_m)
        assert c.item() == n, (backend, n)


@pytest.mark.parametrize("reduction, want", [("mean", math.nan), ("sum", 0.0)])
def test_cross_entropy_over_no_rows_after_rows(reduction, want):
    """eager: the op's cached kernel is reused for 0 rows after a call with rows"""
    for rg in (False, True):
        x = st.randn(4, 5, requires_grad=rg)
        t = st.tensor([0, 1, 2, 3])
        assert math.isfinite(F.cross_entropy(x, t, reduction=reduction).item())
        del x, t
        for _ in range(3):
            _dirty_pool()
            x0 = st.randn(0, 5, requires_grad=rg)
            r = F.cross_entropy(x0, st.zeros(0, dtype=st.int64), reduction=reduction)
            got = r.item()
            assert (math.isnan(got) if math.isnan(want) else got == want), (reduction, rg, got)
            if rg:
                r.backward()
                assert tuple(x0.grad.shape) == (0, 5)


def test_cross_entropy_no_rows_matches_torch():
    torch = pytest.importorskip("torch")
    for reduction in ("mean", "sum", "none"):
        F.cross_entropy(st.randn(6, 3), st.tensor([0, 1, 2, 0, 1, 2]), reduction=reduction)
        got = F.cross_entropy(st.zeros(0, 3), st.zeros(0, dtype=st.int64), reduction=reduction)
        ref = torch.nn.functional.cross_entropy(torch.zeros(0, 3),
                                                torch.zeros(0, dtype=torch.int64),
                                                reduction=reduction)
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
