"""The first call of a compiled function runs eagerly while it is traced
(runtime/trace.c). The trace maps every tensor it sees to its graph value;
it used to hold each of them to the end of the call, so the first call kept
every intermediate alive (BERT base: a 7.3 GB first step against 4.7 GB
for the compiled ones). Now a sweep drops the tensors only the trace holds,
and the first call peaks as an eager run does."""
import gc

import numpy as np
import pytest

import symtrace as st

BACKENDS = ["interp"] + (["llvm"] if st._C._fe_backend_available("llvm") else [])
N = 256 * 1024            # 1 MiB of float32
STEPS = 40                # 80 intermediates of 1 MiB


def chain(x):
    for _ in range(STEPS):
        x = x * 1.0001 + 0.5
    return x.sum()


def expected(xn):
    x = xn.astype(np.float64)
    for _ in range(STEPS):
        x = x * 1.0001 + 0.5
    return x.sum()


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_first_call_does_not_hold_intermediates(backend, grad):
    xn = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    x = st.tensor(xn, requires_grad=grad)
    cf = st.compile(chain, backend=backend)
    gc.collect()
    st.memory.reset_peak_stats()
    base = st.memory.memory_allocated()
    y = cf(x)             # translated: runs eagerly under the trace
    first_peak = st.memory.max_memory_allocated() - base
    np.testing.assert_allclose(y.item(), expected(xn), rtol=1e-4)
    # an eager run needs about two live intermediates at a time (mul and
    # scalar-add save nothing for backward); the 80 the trace held were 80 MiB
    assert first_peak < 8 * N * 4, first_peak / (N * 4)
    if grad:
        y.backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full(N, 1.0001 ** STEPS, np.float32),
                                   rtol=1e-4)
        x.grad = None
    y2 = cf(x)            # the compiled run
    np.testing.assert_allclose(y2.item(), y.item(), rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_view_outlives_its_dropped_base(backend):
    """A base only the trace holds, with a live view: the view's storage
    keeps the base's slot (a sweep drops a storage's tensors together or
    not at all), so an in-place write into the view after many other
    intermediates died is still traced through to the values."""
    def f(x):
        y = x * 2.0
        v = y[1:3]
        y = None
        for _ in range(STEPS):          # dead intermediates: sweeps run
            x = x * 1.0001 + 0.5
        v.add_(1.0)
        return v.sum() + x.sum()

    xn = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    cf = st.compile(f, backend=backend)
    xs = st.tensor(xn)
    y1 = cf(xs).item()
    y2 = cf(st.tensor(xn)).item()       # the compiled run
    xr = xn.astype(np.float64)
    for _ in range(STEPS):
        xr = xr * 1.0001 + 0.5
    want = (xn[1:3] * 2.0 + 1.0).sum() + xr.sum()
    np.testing.assert_allclose(y1, want, rtol=1e-5)
    np.testing.assert_allclose(y2, want, rtol=1e-5)
