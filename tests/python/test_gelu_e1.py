# gelu given erf(x / sqrt(2)) + 1 by its caller (functional.gelu passes it
# for float32/float64 inputs that require grad): the forward is bit for bit
# the one-operand op's, the gradient reads the operand back instead of
# evaluating erf again (ir/autodiff.c r_gelu); eager and compiled; a
# malformed operand is an error naming it.
import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F
from symtrace import _C
from symtrace._ops import _attrs


def e1_of(x):
    return st.erf(x.detach() * 0.7071067811865476) + 1.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_operand_form_equals_one_operand_form(dtype):
    rng = np.random.default_rng(0)
    xv = (rng.standard_normal((6, 33)) * 3).astype(dtype)
    gv = rng.standard_normal((6, 33)).astype(dtype)
    res = []
    for two in (False, True):
        x = st.tensor(xv, requires_grad=True)
        ins = (x, e1_of(x)) if two else (x,)
        y = _C.op(_C.OP_GELU, ins, _attrs())
        (y * st.tensor(gv)).sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(res[1][0], res[0][0])  # the forward: bit for bit
    # the rule: the same ops (a kernel may contract them into fmas differently)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6 if dtype == np.float32 else 1e-14,
                               atol=1e-7 if dtype == np.float32 else 1e-15)
    # and against the formula
    from math import erf, exp, pi, sqrt
    d = np.vectorize(lambda v: 0.5 * (1 + erf(v / sqrt(2))) + v * exp(-v * v / 2) / sqrt(2 * pi))
    np.testing.assert_allclose(res[1][1], gv * d(xv.astype(np.float64)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_compiled_gelu_mlp_gradient(backend):
    if backend == "llvm" and not _C._fe_backend_available("llvm"):
        pytest.skip("llvm backend not built")
    rng = np.random.default_rng(1)
    w1 = st.tensor(rng.standard_normal((24, 40)).astype(np.float32) * 0.3, requires_grad=True)
    w2 = st.tensor(rng.standard_normal((40, 5)).astype(np.float32) * 0.3, requires_grad=True)
    x = st.tensor(rng.standard_normal((16, 24)).astype(np.float32))

    def step(x):
        loss = ((F.gelu(x @ w1) @ w2) ** 2).mean()
        loss.backward()
        return loss

    le = float(step(x))
    g1, g2 = w1.grad.numpy().copy(), w2.grad.numpy().copy()
    w1.grad = w2.grad = None
    lc = float(st.compile(step, backend=backend)(x))
    assert abs(lc - le) <= 1e-6 * abs(le)
    np.testing.assert_allclose(w1.grad.numpy(), g1, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(w2.grad.numpy(), g2, rtol=1e-5, atol=1e-7)


def test_bad_operand_is_an_error():
    x = st.randn(3, 4)
    with pytest.raises(RuntimeError, match="erf operand"):
        _C.op(_C.OP_GELU, (x, st.randn(3, 5)), _attrs())
    with pytest.raises(RuntimeError, match="erf operand"):
        _C.op(_C.OP_GELU, (x, st.randn(3, 4, dtype=st.float64)), _attrs())
