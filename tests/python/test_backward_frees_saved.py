"""A compiled function's backward that does not retain the graph hands its
saved tensors to the backward program (runtime/cfn.c node_backward), and the
executor drops each input after its last reader (runtime/exec.c): the saved
activations of the last layers are freed while the backward still runs
through the first ones, as PyTorch frees a node's saved variables when it
has run. With retain_graph=True everything stays for the next backward."""
import gc

import numpy as np
import pytest

import symtrace as st

BACKENDS = ["interp"] + (["llvm"] if st._C._fe_backend_available("llvm") else [])
N = D = 512
LAYERS = 6
MB = N * D * 4          # one activation, one weight gradient


def chain(x, ws):
    h = x
    for w in ws:
        h = (h @ w).tanh()  # tanh's output saved for its rule and the next product
    return h.sum()


def peak_of_backward(cf, x, w, retain):
    y = cf(x, list(w))
    gc.collect()
    st.memory.reset_peak_stats()
    base = st.memory.memory_allocated()
    y.backward(retain_graph=retain)
    peak = st.memory.max_memory_allocated() - base
    return y, peak


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_frees_saved_activations_as_it_goes(backend):
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((N, D)).astype(np.float32)
    wn = [(rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32) for _ in range(LAYERS)]
    cf = st.compile(chain, backend=backend)
    x = st.tensor(xn)
    w = [st.tensor(a, requires_grad=True) for a in wn]
    cf(x, w).backward()     # compiles both graphs
    for t in w:
        t.grad = None

    # the backward's outputs (one weight gradient a layer) pile up while
    # it runs from the last layer to the first
    _, peak_retained = peak_of_backward(cf, x, w, retain=True)
    g_retained = [t.grad.numpy().copy() for t in w]
    for t in w:
        t.grad = None
    y, peak_freed = peak_of_backward(cf, x, w, retain=False)
    for t, g in zip(w, g_retained):
        np.testing.assert_array_equal(t.grad.numpy(), g)
    # retained, the saved outputs all stay to the end, under the pile of
    # gradients; handed over, each layer's are freed once its backward
    # has read them: several activations less at the peak
    assert peak_retained - peak_freed >= (LAYERS - 3) * MB, (peak_retained / MB, peak_freed / MB)
    # and the freed graph cannot run again
    with pytest.raises(RuntimeError, match="second time|freed"):
        y.backward()

    # float64 reference of the gradient
    h, hs = xn.astype(np.float64), []
    for a in wn:
        hs.append(h)
        h = np.tanh(h @ a)
    g = np.ones_like(h)
    for k in reversed(range(LAYERS)):
        t = np.tanh(hs[k] @ wn[k])
        gz = g * (1 - t * t)
        np.testing.assert_allclose(g_retained[k], hs[k].T @ gz, rtol=2e-3, atol=2e-3)
        g = gz @ wn[k].T


@pytest.mark.parametrize("backend", BACKENDS)
def test_retained_graph_runs_twice(backend):
    cf = st.compile(chain, backend=backend)
    x = st.randn(N, D)
    w = (st.randn(D, D) / 16.0).requires_grad_(True)
    y = cf(x, [w, w])
    y.backward(retain_graph=True)
    g1 = w.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * g1, rtol=1e-5, atol=1e-5)
