# Autograd API corners compared with torch: custom Functions (mark_dirty,
# setup_context style, apply with keyword arguments, extra None gradients,
# saved outputs under double backward, versions taken after forward),
# autograd.grad (materialize_grads, is_grads_batched, retain_graph=False with
# create_graph, error texts), grad-mode decorators (generators, bare
# @no_grad, set_grad_enabled's argument) and the same programs under
# symtrace.compile, called several times (the first call translates, later
# ones run the compiled graph).
#
# Tests taking the `L` fixture run with symtrace and with torch ([torch] ids),
# so their expectations are checked to be torch's behaviour.
import warnings

import numpy as np
import pytest

import symtrace as st


@pytest.fixture(params=["symtrace", "torch"])
def L(request):
    if request.param == "torch":
        return pytest.importorskip("torch")
    return st


def T(L, a, grad=True):
    return L.tensor(np.array(a, dtype=np.float32), requires_grad=grad)


def N(t):
    return None if t is None else np.array(t.detach().double().numpy())


def close(a, b):
    np.testing.assert_allclose(N(a), np.array(b, dtype=np.float64), rtol=1e-5, atol=1e-6)


# ---------------- autograd.Function: mark_dirty ----------------

def doubler(L):
    class Double(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Double


def test_mark_dirty_returns_the_input_with_the_node_as_history(L):
    a = T(L, [1., 2.])
    b = a.clone()
    c = doubler(L).apply(b)
    assert c is b and c.requires_grad and "Double" in c.grad_fn.name()
    (c * c).sum().backward()
    close(c, [2., 4.])
    close(a.grad, [8., 16.])


def test_mark_dirty_on_a_leaf_that_requires_grad_raises(L):
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        doubler(L).apply(T(L, [1., 2.]))


def test_mark_dirty_not_returned_raises(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not "
                                           "returned"):
        F.apply(T(L, [1., 2.]).clone())


def test_mark_dirty_input_without_grad_gets_history_from_the_other(L):
    class AddInto(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            x.add_(y)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g, g * 3

    a, w = T(L, [1., 2.], grad=False), T(L, [3., 4.])
    c = AddInto.apply(a, w)
    assert c is a and a.requires_grad and not a.is_leaf
    c.sum().backward()
    close(a, [4., 6.])
    close(w.grad, [3., 3.])


def test_mark_dirty_bumps_the_version_and_old_savers_see_it(L):
    # b.sin() saved b; the Function wrote b: sin's backward must refuse
    a = T(L, [1., 2.])
    b = a * 1
    s = b.sin()
    v = b._version
    doubler(L).apply(b)
    assert b._version > v
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()


def test_mark_dirty_on_a_view_goes_into_the_base_history(L):
    a = T(L, [1., 2., 3.])
    b = a * 1
    v = b[:2]
    r = doubler(L).apply(v)
    assert r is v
    (b * b).sum().backward()
    close(b, [2., 4., 3.])
    close(a.grad, [8., 16., 6.])


def test_saved_input_marked_dirty_is_read_at_its_final_version(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x

    a = T(L, [1., 2.])
    F.apply(a.clone()).sum().backward()
    close(a.grad, [2., 4.])


# ---------------- autograd.Function: styles, arguments, gradients ----------------

def scaled(L):
    class Scaled(L.autograd.Function):
        @staticmethod
        def forward(x, k=2.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.k = k
            ctx.seen = ctx.needs_input_grad
            ctx.save_for_backward(x, output)

        @staticmethod
        def backward(ctx, g):
            x, out = ctx.saved_tensors
            return g * ctx.k + 0 * out, None
    return Scaled


def test_setup_context_style(L):
    a = T(L, [1., 2.])
    y = scaled(L).apply(a, 3.0)
    y.sum().backward()
    close(y, [3., 6.])
    close(a.grad, [3., 3.])
    y = scaled(L).apply(T(L, [1., 2.], grad=False))  # no node: setup_context still runs
    close(y, [2., 4.])


def test_setup_context_defaults_and_keywords(L):
    a = T(L, [1., 2.])
    scaled(L).apply(a).sum().backward()
    close(a.grad, [2., 2.])
    a.grad = None
    scaled(L).apply(a, k=5.0).sum().backward()
    close(a.grad, [5., 5.])


def kw_function(L, seen):
    class KW(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, w=None, k=2.0):
            seen.append(ctx.needs_input_grad)
            return x * k * (1 if w is None else w)

        @staticmethod
        def backward(ctx, g):
            return (g,) + (None,) * (len(ctx.needs_input_grad) - 1)
    return KW


def test_apply_with_keywords_binds_them_to_positions(L):
    seen = []
    KW = kw_function(L, seen)
    a, w = T(L, [1., 2.]), T(L, [3., 4.])
    KW.apply(a, w=w, k=3.0).sum().backward()
    assert seen == [(True, True, False)]
    close(a.grad, [1., 1.])
    KW.apply(x=a).sum().backward()
    assert seen[-1] == (True,)
    with pytest.raises(TypeError, match="missing required argument: 'w' \\(position 1\\)"):
        KW.apply(a, k=3.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        KW.apply(a, bogus=1)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        KW.apply(a, x=a)


def test_extra_trailing_none_gradients_are_allowed(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    a = T(L, [1., 2.])
    F.apply(a).sum().backward()
    close(a.grad, [2., 2.])


def test_save_for_backward_of_a_non_tensor_names_it(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but "
                                        "argument 1 is of type int"):
        F.apply(T(L, [1.]))


def test_double_backward_through_a_saved_output(L):
    class Exp(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    a = T(L, [1., 2.])
    y = Exp.apply(a)
    (g,) = L.autograd.grad(y.sum(), a, create_graph=True)
    assert g.requires_grad
    (h,) = L.autograd.grad(g.sum(), a)
    close(g, np.exp([1., 2.]))
    close(h, np.exp([1., 2.]))


# ---------------- the same Functions inside symtrace.compile ----------------

needs_compile = pytest.mark.skipif(not hasattr(st, "compile"), reason="symtrace.compile is not built")


def eager_vs_compiled(fn, *values, calls=3):
    """fn's result and input gradients, eagerly and over several compiled calls
    (the first translates, the later ones run the compiled graph): all equal."""
    def run(f):
        ins = [T(st, v) for v in values]
        out = f(*ins)
        out.backward()
        return N(out), [N(i.grad) for i in ins]
    st.reset()
    want = run(fn)
    cf = st.compile(fn)
    try:
        for k in range(calls):
            got = run(cf)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-5, err_msg=f"call {k}")
            for g, w in zip(got[1], want[1]):
                np.testing.assert_allclose(g, w, rtol=1e-5, err_msg=f"call {k}")
    finally:
        st.reset()
    return want


@needs_compile
def test_compiled_mark_dirty():
    Double = doubler(st)

    def f(a):
        b = a * 1
        return (Double.apply(b) ** 2).sum()
    out, (ga,) = eager_vs_compiled(f, [1., 2., 3.])
    assert out == 56.0 and ga.tolist() == [8., 16., 24.]


@needs_compile
def test_compiled_mark_dirty_on_a_view():
    Double = doubler(st)

    def f(a):
        b = a * 1
        Double.apply(b[:2])
        return (b * b).sum()
    out, (ga,) = eager_vs_compiled(f, [1., 2., 3.])
    assert out == 29.0 and ga.tolist() == [8., 16., 6.]


@needs_compile
def test_compiled_setup_context_and_keywords():
    Scaled = scaled(st)
    KW = kw_function(st, [])

    def f(a):
        return (Scaled.apply(a, 3.0) ** 2).sum() + KW.apply(x=a).sum()
    out, (ga,) = eager_vs_compiled(f, [1., 2., 3.])
    np.testing.assert_allclose(ga, [19., 37., 55.])  # KW.backward returns g as is


@needs_compile
def test_compiled_function_whose_forward_breaks_keeps_its_saved_tensors():
    # forward reads a value (.item()): the trace of apply fails and the call
    # runs as Python; its forward must not be captured apart from apply (the
    # saved tensors and ctx attributes would be lost on later calls)
    class E(st.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k * float(x.sum().item() > 0)
            ctx.save_for_backward(x)
            return x * k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.k * x, None

    def f(a):
        return (E.apply(a * 2, 3.0) ** 2).sum()
    out, (ga,) = eager_vs_compiled(f, [1., 2., 3.])
    np.testing.assert_allclose(ga, [144., 576., 1296.])
