"""Rematerialization in compiled backward graphs (ir/backward.c): a saved
value that only pointwise backward statements read and that pointwise
forward statements make from values saved anyway is recomputed in the
backward instead of saved. GELU's erf term is the case in point. The saved
set is read through SYMTRACE_SAVED_LOG=1 (runtime/cfn.c)."""
import math
import re

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F


def saved(capfd):
    err = capfd.readouterr().err
    m = re.findall(r"symtrace saved for backward: (\d+) values", err)
    assert m, err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("  ") and " = " in ln]
    return int(m[-1]), lines


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_gelu_erf_term_not_saved(backend, capfd, monkeypatch):
    if backend == "llvm" and not st._C._fe_backend_available("llvm"):
        pytest.skip("no llvm backend in this build")
    monkeypatch.setenv("SYMTRACE_SAVED_LOG", "1")
    rng = np.random.default_rng(0)
    xn, wn, gn = rng.standard_normal((16, 8)), rng.standard_normal((8, 32)), rng.standard_normal((16, 32))

    def f(x, w, g):
        return (F.gelu(x @ w) * g).sum()

    cf = st.compile(f, backend=backend)
    x = st.tensor(xn.astype(np.float32), requires_grad=True)
    w = st.tensor(wn.astype(np.float32), requires_grad=True)
    capfd.readouterr()
    cf(x, w, st.tensor(gn.astype(np.float32))).backward()
    n, lines = saved(capfd)
    # x and w for the product's gradient, x @ w and g for GELU's; not the
    # erf term (nor its argument): they are recomputed from x @ w
    assert n == 4, lines
    assert not any(re.search(r"= (add|erf|mul)\(", ln) for ln in lines), lines
    # float64 reference: d gelu(z) / dz = Phi(z) + z phi(z)
    z = xn @ wn
    phi = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    big_phi = 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    dz = gn * (big_phi + z * phi)
    np.testing.assert_allclose(x.grad.numpy(), dz @ wn.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), xn.T @ dz, rtol=1e-4, atol=1e-5)


def test_product_operand_stays_saved(capfd, monkeypatch):
    """x * 3 is pointwise in x (saved for x * x's gradient) but a product
    reads it in the backward (w's gradient): it stays saved."""
    monkeypatch.setenv("SYMTRACE_SAVED_LOG", "1")

    def f(x, w):
        return ((x * 3.0) @ w).sum() + (x * x).sum()

    cf = st.compile(f, backend="interp")
    x = st.randn(5, 4, requires_grad=True)
    w = st.randn(4, 6, requires_grad=True)
    capfd.readouterr()
    cf(x, w).backward()
    n, lines = saved(capfd)
    assert any(re.search(r"= mul\(", ln) for ln in lines), lines
    xn, wn = x.detach().numpy().astype(np.float64), w.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(w.grad.numpy(), (3 * xn).T @ np.ones((5, 6)), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.ones((5, 6)) @ wn.T + 2 * xn, rtol=1e-5,
                               atol=1e-5)
