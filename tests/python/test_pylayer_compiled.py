# A PyLayer (symtrace.autograd.Function) inside a traced, compiled function:
# frontend/pylayer_trace.c captures Cls.forward into the trace and traces
# Cls.backward into the custom VJP of that region (st_ir_region), which the
# backward graph (ir/backward.c) inlines instead of differentiating the
# forward's statements. Functions are traced with _C._cfn_from_trace and call
# _C._cfn_pylayer(Cls, *args), what the translator calls for Cls.apply(*args)
# during a translation. Values and gradients must equal eager's (eager
# Cls.apply), including backwards that differ from the forward's derivative,
# saved tensors, several outputs, None gradients and non-tensor arguments;
# what cannot be captured fails the trace with a reason.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C
from symtrace.autograd import Function

BACKENDS = ["interp", "llvm"]


def np_of(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x


class StraightThrough(Function):
    """round() forward, identity gradient: not the forward's derivative."""
    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, g):
        return g


class ScaledTanh(Function):
    """tanh forward; backward reads the saved output, scales by a constant
    argument, and gives no gradient to the scale tensor."""
    @staticmethod
    def forward(ctx, x, s, k):
        y = (x * s).tanh()
        ctx.save_for_backward(y, s)
        ctx.k = k
        return y

    @staticmethod
    def backward(ctx, g):
        y, s = ctx.saved_tensors
        return g * (1 - y * y) * s * ctx.k, None, None


class TwoOut(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b, a + b

    @staticmethod
    def backward(ctx, g1, g2):
        a, b = ctx.saved_tensors
        return g1 * b + g2, g1 * a + g2


class Bad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * float(g.sum())  # a data read


class ReturnsInput(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def fn_square(x, w):
    return (_C._cfn_pylayer(Square, x @ w) + 1).sum(dim=1)


def fn_ste(x, w):
    return (_C._cfn_pylayer(StraightThrough, x * 3) * w).sum()


def fn_scaled(x, w, s):
    return _C._cfn_pylayer(ScaledTanh, x @ w, s, 0.5).mean(dim=0)


def fn_two(x, w):
    p, q = _C._cfn_pylayer(TwoOut, x, w)
    return (p * p).sum() + q.sum(), q


def fn_only_one_used(x, w):
    p, q = _C._cfn_pylayer(TwoOut, x, w)
    return (p.exp()).sum()


def eager_version(fn):
    """The same function with Cls.apply."""
    def run(*args):
        orig = _C._cfn_pylayer
        try:
            _C._cfn_pylayer = lambda cls, *a: cls.apply(*a)
            return fn(*args)
        finally:
            _C._cfn_pylayer = orig
    return run


CASES = [
    ("square", fn_square, [(3, 4), (4, 5)], (0, 1)),
    ("straight_through", fn_ste, [(3, 4), (3, 4)], (0, 1)),
    ("scaled", fn_scaled, [(3, 4), (4, 5), (5,)], (0, 1, 2)),
    ("two_outputs", fn_two, [(3, 4), (3, 4)], (0, 1)),
    ("one_output_used", fn_only_one_used, [(3, 4), (3, 4)], (0, 1)),
]


def make(shapes, grad, seed):
    st.manual_seed(seed)
    ts = [st.randn(*s) for s in shapes]
    for k in grad:
        ts[k].requires_grad_(True)
    return ts


@pytest.mark.parametrize("backend", BACKENDS + ["eager"])
@pytest.mark.parametrize("name,fn,shapes,grad", CASES, ids=[c[0] for c in CASES])
def test_pylayer_compiled_matches_eager(backend, name, fn, shapes, grad):
    args = make(shapes, grad, 1)
    cf = _C._cfn_from_trace(fn, tuple(args), backend=backend)
    assert cf.has_backward == (backend != "eager")
    new = make(shapes, grad, 2)
    ref = [a.detach().clone() for a in new]
    for k in grad:
        ref[k].requires_grad_(True)
    got = cf(*new)
    exp = eager_version(fn)(*ref)
    got = got if isinstance(got, tuple) else (got,)
    exp = exp if isinstance(exp, tuple) else (exp,)
    for g, e in zip(got, exp):
        np.testing.assert_allclose(np_of(g), np_of(e), rtol=1e-5, atol=1e-6)
    sum(((o * (k + 1)).sum() for k, o in enumerate(got)), st.zeros(())).backward()
    sum(((o * (k + 1)).sum() for k, o in enumerate(exp)), st.zeros(())).backward()
    for k in grad:
        if ref[k].grad is None:  # backward returned None for it
            assert new[k].grad is None or not np_of(new[k].grad).any()
            continue
        assert new[k].grad is not None, k
        np.testing.assert_allclose(np_of(new[k].grad), np_of(ref[k].grad),
                                   rtol=1e-5, atol=1e-6)


def test_custom_gradient_is_used_not_the_forwards():
    # round() has zero derivative; the straight-through backward says 1
    x = st.randn(3, 4, requires_grad=True)
    w = st.ones(3, 4)
    cf = _C._cfn_from_trace(fn_ste, (x, w))
    x2 = st.randn(3, 4, requires_grad=True)
    cf(x2, w).backward()
    np.testing.assert_allclose(np_of(x2.grad), 3 * np.ones((3, 4)), rtol=1e-6)


def test_traced_call_result_has_gradients():
    # the translation's own result (the eager run while tracing) carries
    # an eager tape node, as Cls.apply's would
    x = st.randn(3, 4, requires_grad=True)
    w = st.randn(4, 5, requires_grad=True)
    _C._trace_begin()
    y = fn_square(x, w)
    _C._trace_end((y,))
    y.sum().backward()
    xr, wr = x.detach().clone().requires_grad_(True), w.detach().clone().requires_grad_(True)
    (((xr @ wr) * (xr @ wr)) + 1).sum(dim=1).sum().backward()
    np.testing.assert_allclose(np_of(w.grad), np_of(wr.grad), rtol=1e-5, atol=1e-5)


def test_region_in_graph_and_backward_graph():
    x = st.randn(3, 4, requires_grad=True)
    w = st.randn(4, 5, requires_grad=True)
    cf = _C._cfn_from_trace(fn_square, (x, w))
    # the backward graph holds the traced backward (g * 2 * x), not the
    # forward's VJP (which would also be mul statements; check values above)
    assert "mul" in cf.backward_graph
    assert cf.num_backward_kernels > 0
    assert "custom_vjp: statements" in cf.graph and "reading 1 forward values" in cf.graph


def test_data_read_in_backward_fails_the_trace():
    x = st.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"data-dependent: float\(tensor\)"):
        _C._cfn_from_trace(lambda x: _C._cfn_pylayer(Bad, x).sum(), (x,))


def test_returning_an_input_fails_the_trace():
    x = st.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="did not compute"):
        _C._cfn_from_trace(lambda x: _C._cfn_pylayer(ReturnsInput, x * 1).sum(), (x,))


def test_nested_outside_trace_is_plain_apply():
    x = st.randn(3, requires_grad=True)
    y = _C._cfn_pylayer(Square, x)
    y.sum().backward()
    np.testing.assert_allclose(np_of(x.grad), 2 * np_of(x), rtol=1e-6)
