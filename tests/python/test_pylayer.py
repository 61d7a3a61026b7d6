# Custom autograd functions: symtrace.autograd.Function (alias PyLayer, Paddle's
# name) with static forward(ctx, ...) / backward(ctx, ...): save_for_backward,
# saved_tensors (and Paddle's ctx.saved_tensor()), needs_input_grad,
# mark_non_differentiable, non-tensor arguments, several outputs, None
# gradients, errors for a wrong number or shape of gradients, use inside a
# bigger graph, inputs that don't require grad, apply under no_grad.
#
# Tests taking the `L` fixture run with symtrace and with torch ([torch] ids),
# so their expectations are checked to be torch's behaviour.
import numpy as np
import pytest

import symtrace as st


@pytest.fixture(params=["symtrace", "torch"])
def L(request):
    if request.param == "torch":
        return pytest.importorskip("torch")
    return st


def T(L, a, grad=False, dtype="float64"):
    t = L.tensor(np.array(a, dtype=np.float64, order="C"), dtype=getattr(L, dtype))
    return t.requires_grad_() if grad else t


def N(t):
    t = t.detach()
    if t.dtype.is_floating_point:
        t = t.double()
    return np.array(t.numpy())


RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
W = RNG.standard_normal((5, 4))
B = RNG.standard_normal(5)


def make_exp(L, log=None):
    class Exp(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if log is not None:
                log.append(("forward", L.is_grad_enabled()))
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            if log is not None:
                log.append(("backward", tuple(g.shape)))
            (y,) = ctx.saved_tensors
            return g * y

    return Exp


def test_custom_exp(L):
    log = []
    Exp = make_exp(L, log)
    x = T(L, A, grad=True)
    y = Exp.apply(x)
    assert log == [("forward", False)]  # forward runs without recording
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    assert "Exp" in y.grad_fn.name()
    np.testing.assert_allclose(N(y), np.exp(A), rtol=1e-12)
    g = RNG.standard_normal((3, 4))
    y.backward(T(L, g))
    assert log[1] == ("backward", (3, 4))
    np.testing.assert_allclose(N(x.grad), g * np.exp(A), rtol=1e-12)


def test_custom_exp_gradcheck():
    from importlib import import_module
    gc = import_module("symtrace.autograd.gradcheck")
    x = T(st, A, grad=True)
    assert gc.gradcheck(make_exp(st).apply, (x,))


def test_backward_called_once_for_output_used_twice(L):
    log = []
    Exp = make_exp(L, log)
    x = T(L, A, grad=True)
    y = Exp.apply(x)
    (y * 2 + y * y).sum().backward()
    assert [e[0] for e in log] == ["forward", "backward"]
    np.testing.assert_allclose(N(x.grad), (2 + 2 * np.exp(A)) * np.exp(A), rtol=1e-12)


def make_linear(L, seen):
    class ScaledLinear(L.autograd.Function):
        """scale * (x @ w.T + b), scale a Python float."""

        @staticmethod
        def forward(ctx, x, w, b, scale):
            ctx.save_for_backward(x, w)
            ctx.scale = scale
            return (x @ w.T + b) * scale

        @staticmethod
        def backward(ctx, g):
            seen.append(tuple(ctx.needs_input_grad))
            x, w = ctx.saved_tensors
            g = g * ctx.scale
            gx = g @ w if ctx.needs_input_grad[0] else None
            gw = g.T @ x if ctx.needs_input_grad[1] else None
            gb = g.sum(0) if ctx.needs_input_grad[2] else None
            return gx, gw, gb, None

    return ScaledLinear


def test_custom_linear_with_scalar_argument(L):
    seen = []
    Lin = make_linear(L, seen)
    x, w, b = T(L, A, grad=True), T(L, W, grad=True), T(L, B, grad=True)
    y = Lin.apply(x, w, b, 0.5)
    np.testing.assert_allclose(N(y), (A @ W.T + B) * 0.5, rtol=1e-12)
    g = RNG.standard_normal((3, 5))
    y.backward(T(L, g))
    assert seen == [(True, True, True, False)]
    np.testing.assert_allclose(N(x.grad), 0.5 * g @ W, rtol=1e-12)
    np.testing.assert_allclose(N(w.grad), 0.5 * g.T @ A, rtol=1e-12)
    np.testing.assert_allclose(N(b.grad), 0.5 * g.sum(0), rtol=1e-12)


def test_needs_input_grad_partial(L):
    seen = []
    Lin = make_linear(L, seen)
    x, w, b = T(L, A), T(L, W, grad=True), T(L, B)
    Lin.apply(x, w, b, 2.0).sum().backward()
    assert seen == [(False, True, False, False)]
    assert x.grad is None and b.grad is None
    np.testing.assert_allclose(N(w.grad), 2.0 * np.ones((3, 5)).T @ A, rtol=1e-12)


def test_non_tensor_arguments_of_several_kinds(L):
    class Affine(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, a, name, flag, shift):
            assert isinstance(a, float) and name == "n" and flag is True and shift is None
            ctx.a = a
            return x * a

        @staticmethod
        def backward(ctx, g):
            return g * ctx.a, None, None, None, None

    x = T(L, A, grad=True)
    Affine.apply(x, 3.0, "n", True, None).sum().backward()
    np.testing.assert_allclose(N(x.grad), np.full((3, 4), 3.0))


def test_several_outputs_one_non_differentiable(L):
    calls = []

    class SortLike(L.autograd.Function):
        """(2x, x*x, argmax of x along dim 1 (int), a mask marked non-differentiable)."""

        @staticmethod
        def forward(ctx, x):
            idx = x.argmax(1)
            mask = (x > 0).double()
            ctx.mark_non_differentiable(idx, mask)
            ctx.save_for_backward(x)
            return x * 2, x * x, idx, mask

        @staticmethod
        def backward(ctx, g1, g2, gidx, gmask):
            calls.append((g1 is None, g2 is None))
            (x,) = ctx.saved_tensors
            r = 0
            if g1 is not None:
                r = r + g1 * 2
            if g2 is not None:
                r = r + g2 * 2 * x
            return r

    x = T(L, A, grad=True)
    a, b, idx, mask = SortLike.apply(x)
    assert a.requires_grad and b.requires_grad
    assert not idx.requires_grad and not mask.requires_grad
    np.testing.assert_array_equal(N(idx), A.argmax(1))
    (a.sum() + (b * 3).sum()).backward()
    np.testing.assert_allclose(N(x.grad), 2 + 6 * A, rtol=1e-12)
    x.grad = None
    # only one output used: the other's gradient is zeros (torch materializes) or None
    a, b, _, _ = SortLike.apply(x)
    b.sum().backward()
    np.testing.assert_allclose(N(x.grad), 2 * A, rtol=1e-12)
    assert len(calls) == 2


def test_backward_returning_none_for_an_input(L):
    class OnlyFirst(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * 2 + y

        @staticmethod
        def backward(ctx, g):
            return g * 2, None

    x, y = T(L, A, grad=True), T(L, A, grad=True)
    z = OnlyFirst.apply(x, y)
    z.sum().backward()
    np.testing.assert_allclose(N(x.grad), np.full((3, 4), 2.0))
    assert y.grad is None
    # upstream of a None gradient: the branch contributes nothing
    u = T(L, A, grad=True)
    (OnlyFirst.apply(x.detach(), u * 3) + u).sum().backward()
    np.testing.assert_allclose(N(u.grad), np.ones((3, 4)))


def test_pylayer_alias_and_saved_tensor_method():
    assert st.autograd.PyLayer is st.autograd.Function or issubclass(st.autograd.PyLayer, st.autograd.Function)
    assert st.autograd.PyLayerContext is st.autograd.FunctionCtx or \
        issubclass(st.autograd.PyLayerContext, st.autograd.FunctionCtx)
    ctxs = []

    class Cube(st.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctxs.append(ctx)
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensor()  # Paddle's spelling
            return g * 3 * x * x

    x = T(st, A, grad=True)
    Cube.apply(x).sum().backward()
    assert isinstance(ctxs[0], st.autograd.PyLayerContext)
    assert isinstance(ctxs[0], st.autograd.FunctionCtx)
    np.testing.assert_allclose(N(x.grad), 3 * A * A, rtol=1e-12)


def test_wrong_number_of_gradients(L):
    class Bad(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g

    x, w = T(L, A, grad=True), T(L, A, grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients") as ei:
        Bad.apply(x, w).sum().backward()
    msg = str(ei.value)
    assert "Bad" in msg and "expected 2" in msg and "got 1" in msg, msg


def test_too_many_gradients(L):
    class Bad(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, g, None

    x = T(L, A, grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(x).sum().backward()


def test_wrong_gradient_shape(L):
    class BadShape(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.T  # [4, 3] for a [3, 4] input

    x = T(L, A, grad=True)
    with pytest.raises(RuntimeError, match="invalid gradient at index 0") as ei:
        BadShape.apply(x).sum().backward()
    msg = str(ei.value)
    assert "[4, 3]" in msg and "[3, 4]" in msg, msg


def test_pylayer_inside_bigger_graph(L):
    Exp = make_exp(L)
    seen = []
    Lin = make_linear(L, seen)
    F = L.nn.functional
    r = np.random.default_rng(1)
    xs, ws, bs, vs = r.standard_normal((3, 4)), r.standard_normal((5, 4)), r.standard_normal(5), \
        r.standard_normal((5, 2))
    t = L.tensor([0, 1, 1])
    grads = []
    for custom in (True, False):
        x, w, b, v = (T(L, a, grad=True) for a in (xs, ws, bs, vs))
        h = Lin.apply(x.tanh(), w, b, 0.7) if custom else (x.tanh() @ w.T + b) * 0.7
        e = Exp.apply(h * 0.1) if custom else (h * 0.1).exp()
        loss = F.cross_entropy(e @ v, t) + (e * h).mean()
        loss.backward()
        grads.append([N(loss)] + [N(p.grad) for p in (x, w, b, v)])
    for got, exp in zip(*grads):
        np.testing.assert_allclose(got, exp, rtol=1e-12, atol=1e-12)


def test_inputs_not_requiring_grad(L):
    log = []
    Exp = make_exp(L, log)
    x = T(L, A)
    y = Exp.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_allclose(N(y), np.exp(A), rtol=1e-12)
    z = T(L, A, grad=True)
    (y * z).sum().backward()   # y is a constant in a bigger graph
    np.testing.assert_allclose(N(z.grad), np.exp(A), rtol=1e-12)
    assert [e[0] for e in log] == ["forward"]  # backward never called


def test_apply_under_no_grad(L):
    log = []
    Exp = make_exp(L, log)
    x = T(L, A, grad=True)
    with L.no_grad():
        y = Exp.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    assert [e[0] for e in log] == ["forward"]


def test_retain_graph_and_freed_graph(L):
    log = []
    Exp = make_exp(L, log)
    x = T(L, A, grad=True)
    y = Exp.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(N(x.grad), 2 * np.exp(A), rtol=1e-12)
    y2 = Exp.apply(x).sum()
    y2.backward()
    with pytest.raises(RuntimeError):
        y2.backward()


def test_modified_saved_tensor_detected(L):
    Exp = make_exp(L)
    x = T(L, A, grad=True)
    y = Exp.apply(x)
    with L.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_autograd_grad_through_pylayer(L):
    Exp = make_exp(L)
    x = T(L, A, grad=True)
    (gx,) = L.autograd.grad(Exp.apply(x).sum(), x)
    np.testing.assert_allclose(N(gx), np.exp(A), rtol=1e-12)
    assert x.grad is None


def test_custom_function_on_views_and_float32(L):
    Exp = make_exp(L)
    base = T(L, A, grad=True, dtype="float32")
    y = Exp.apply(base.T[1:])   # a non-contiguous view input
    y.sum().backward()
    exp = np.zeros((3, 4))
    exp[:, 1:] = np.exp(A.astype(np.float32)[:, 1:])
    assert base.grad.dtype == L.float32
    np.testing.assert_allclose(N(base.grad), exp, rtol=1e-6)


def test_saved_tensors_freed_after_backward_and_no_cycles():
    """ctx.save_for_backward keeps an intermediate until backward; backward frees
    it while the output is still alive; dropping the graph frees everything by
    reference counting alone (no cycle through ctx)."""
    import gc
    MB = 1 << 20

    class TwiceExp(st.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            h = x * 2  # a 1 MiB intermediate, only reachable through ctx
            ctx.save_for_backward(h)
            return h.exp().sum()

        @staticmethod
        def backward(ctx, g):
            (h,) = ctx.saved_tensors
            return g * 2 * h.exp()

    x = st.tensor(np.full(MB // 4, 0.1), dtype=st.float32).requires_grad_()
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        base = st.memory.memory_allocated()
        y = TwiceExp.apply(x)
        assert st.memory.memory_allocated() - base >= MB
        y.backward()
        assert st.memory.memory_allocated() - base < MB + MB // 2  # x.grad only
        x.grad = None
        del y
        assert st.memory.memory_allocated() - base < 4096
        y = TwiceExp.apply(x)
        del y  # never backwarded
        assert st.memory.memory_allocated() - base < 4096
    finally:
        if was_enabled:
            gc.enable()


def test_once_differentiable_backward():
    from symtrace.autograd.function import once_differentiable

    class Sq(st.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            assert not st.is_grad_enabled()
            return 2 * x * g

    x = st.tensor([3.0, -1.0], requires_grad=True)
    Sq.apply(x).sum().backward()
    assert x.grad.tolist() == [6.0, -2.0]
