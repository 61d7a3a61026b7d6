# cross_entropy given the rows' log-sum-exp (functional.cross_entropy passes
# it for float32/float64 logits): the loss is x[t] - lse picked, and the
# gradient exp(x - lse) * w with -w scattered at the targets, no softmax
# recomputed over the rows (ir/autodiff.c r_cross_entropy). Checked against
# the two-operand op and numpy, eager and compiled, every reduction, with
# ignored rows; a malformed lse operand is an error naming it.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C
from symtrace._ops import _attrs

RED = {"none": 0, "mean": 1, "sum": 2}


def ce_op(x, t, lse=None, ignore=-100, reduction="mean"):
    ins = (x, t) if lse is None else (x, t, lse)
    return _C.op(_C.OP_CROSS_ENTROPY, ins, _attrs(ints=(ignore, RED[reduction])))


def lse_of(x):
    m = x.detach().amax(1, keepdim=True)
    return (x.detach() - m).exp().sum(1, keepdim=True).log() + m


def np_ref(x, t, ignore, reduction):
    m = x.max(1, keepdims=True)
    lse = (np.log(np.exp(x - m).sum(1, keepdims=True)) + m)[:, 0]
    valid = t != ignore
    li = np.where(valid, lse - x[np.arange(len(t)), np.where(valid, t, 0)], 0.0)
    if reduction == "none":
        return li
    if reduction == "sum":
        return li.sum()
    return li.sum() / valid.sum()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lse_operand_matches_two_operand_op(reduction, dtype):
    rng = np.random.default_rng(1)
    xv = (rng.standard_normal((7, 11)) * 3).astype(dtype)
    tv = np.array([3, -100, 0, 10, 5, -100, 2])
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    outs, grads = [], []
    for use_lse in (False, True):
        x = st.tensor(xv, requires_grad=True)
        t = st.tensor(tv)
        loss = ce_op(x, t, lse_of(x) if use_lse else None, reduction=reduction)
        np.testing.assert_allclose(loss.detach().numpy(), np_ref(xv.astype(np.float64), tv, -100, reduction),
                                   rtol=rtol, atol=rtol)
        (loss.sum() if reduction == "none" else loss).backward()
        outs.append(loss.detach().numpy())
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=rtol, atol=rtol)
    np.testing.assert_allclose(grads[1], grads[0], rtol=rtol, atol=rtol)
    assert np.all(grads[1][[1, 5]] == 0)  # ignored rows get no gradient


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_compiled_gradient_equals_eager(backend):
    if backend == "llvm" and not _C._fe_backend_available("llvm"):
        pytest.skip("llvm backend not built")
    import symtrace.nn.functional as F
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((16, 300)).astype(np.float32)
    tv = rng.integers(0, 300, 16)
    tv[[3, 9]] = -100
    w = st.tensor(rng.standard_normal((300, 300)).astype(np.float32) * 0.05, requires_grad=True)

    def step(x, t):
        loss = F.cross_entropy(x @ w, t)
        loss.backward()
        return loss

    x, t = st.tensor(xv), st.tensor(tv)
    le = step(x, t)
    ge = w.grad.numpy().copy()
    w.grad = None
    cs = st.compile(step, backend=backend)
    lc = cs(x, t)
    np.testing.assert_allclose(float(lc), float(le), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), ge, rtol=1e-4, atol=1e-6)


def test_bad_lse_operand_is_an_error():
    x = st.randn(4, 5)
    t = st.tensor(np.array([0, 1, 2, 3]))
    with pytest.raises(RuntimeError, match="log-sum-exp"):
        ce_op(x, t, st.zeros(4))
    with pytest.raises(RuntimeError, match="log-sum-exp"):
        ce_op(x, t, st.zeros(4, 1, dtype=st.float64))


def np_logsumexp(x, dims, keepdim):
    m = np.max(x, axis=dims, keepdims=True)
    m0 = np.where(np.isinf(m), 0.0, m)
    with np.errstate(divide="ignore"):
        r = np.log(np.sum(np.exp(x - m0), axis=dims, keepdims=True)) + m0
    return r if keepdim else np.squeeze(r, axis=dims)


@pytest.mark.parametrize("dims,keepdim", [(1, False), (-1, True), ((0, 2), False), ((0, 1, 2), True)])
@pytest.mark.parametrize("backend", ["eager", "llvm", "interp"])
def test_logsumexp_values_and_infinities(dims, keepdim, backend):
    if backend == "llvm" and not _C._fe_backend_available("llvm"):
        pytest.skip("llvm backend not built")
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 7, 5)) * 20).astype(np.float32)  # exp would overflow unshifted
    x[1, 2, :] = -np.inf   # a row of -inf: -inf
    x[2, 3, 1] = np.inf    # one +inf: +inf
    f = (lambda t: st.logsumexp(t, dims, keepdim))
    if backend != "eager":
        f = st.compile(f, backend=backend)
    got = f(st.tensor(x)).numpy()
    want = np_logsumexp(x.astype(np.float64), dims, keepdim)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_logsumexp_gradient_is_softmax():
    rng = np.random.default_rng(4)
    xv = rng.standard_normal((3, 6))
    gv = np.array([1.0, -2.0, 0.5])
    x = st.tensor(xv, requires_grad=True)
    (x.logsumexp(1) * st.tensor(gv)).sum().backward()
    sm = np.exp(xv - xv.max(1, keepdims=True))
    sm /= sm.sum(1, keepdims=True)
    np.testing.assert_allclose(x.grad.numpy(), sm * gv[:, None], rtol=1e-12, atol=1e-14)
    # integers are computed in the default float, as torch does
    r = st.logsumexp(st.tensor(np.array([1, 2, 3])), 0)
    assert r.dtype == st.float32
    np.testing.assert_allclose(float(r), np.log(np.exp([1.0, 2.0, 3.0]).sum()), rtol=1e-6)
