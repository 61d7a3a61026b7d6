# tests/python/dynamic_helpers.py - what the dynamic-shape module tests share
# (test_dynamic_modules.py, test_dynamic_conv.py): a clean frontend per test with
# SYMTRACE_DYNAMIC unset, the graph count, and a compiled module run against eager
# over several batch sizes (outputs, and the input's and parameters' grads).
import numpy as np
import pytest

import symtrace as st


@pytest.fixture(autouse=True)
def fresh_dynamic(monkeypatch):
    """Autouse in the modules that import it."""
    monkeypatch.delenv("SYMTRACE_DYNAMIC", raising=False)
    st.reset()
    yield
    st.reset()


def graphs():
    return st._C._fe_stats()["graphs"]


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def run_module(make, shape_of, sizes=(4, 3, 5), backward=False):
    """The compiled module against eager on the same parameters, per size:
    outputs, and with backward the input's and the parameters' grads."""
    st.manual_seed(0)
    net = make()
    c = st.compile(net, dynamic=True, backend="interp")
    rng = np.random.default_rng(1)
    for n in sizes:
        xv = rng.standard_normal(shape_of(n)).astype(np.float32)
        outs = []
        for fn in (c, net):
            x = st.tensor(xv, requires_grad=backward)
            for p in net.parameters():
                p.grad = None
            y = fn(x)
            if backward:
                (y * y).sum().backward()
                outs.append((y.detach().numpy(), x.grad.numpy(),
                             [p.grad.numpy().copy() for p in net.parameters()]))
            else:
                outs.append((y.detach().numpy(),))
        (got, want) = outs
        close(got[0], want[0])
        if backward:
            close(got[1], want[1])
            for a, b in zip(got[2], want[2]):
                close(a, b, 1e-4)
    return net
