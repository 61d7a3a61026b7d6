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


from autograd_vs_torch import L, N, T, close  # noqa: F401  (L: a fixture)


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


# ---------------- autograd.grad and backward ----------------

def test_grad_materialize_grads(L):
    a, b = T(L, [1., 2.]), T(L, [3.])
    ga, gb = L.autograd.grad((a * a).sum(), [a, b], materialize_grads=True)
    close(ga, [2., 4.])
    close(gb, [0.])
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed"):
        L.autograd.grad((a * a).sum(), [a, b], materialize_grads=True, allow_unused=False)


def test_grad_is_grads_batched(L):
    a = T(L, [1., 2.])
    (j,) = L.autograd.grad(a * a, a, grad_outputs=L.eye(2), is_grads_batched=True)
    close(j, [[2., 0.], [0., 4.]])


def test_unused_input_error_names_its_index(L):
    a, b = T(L, [1., 2.]), T(L, [3.])
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to "
                                           "not have been used in the graph"):
        L.autograd.grad((a * a).sum(), [a, b])


def test_grad_output_of_a_wrong_shape(L):
    a = T(L, [1., 2.])
    with pytest.raises(RuntimeError, match="Mismatch in shape: grad_output\\[0\\] has a shape of "
                                           ".*3.* and output\\[0\\] has a shape of .*2"):
        L.autograd.grad([a * 3], a, grad_outputs=[L.ones(3)])


def test_grad_checks_the_outputs_before_the_inputs(L):
    a = T(L, [1., 2.], grad=False)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does "
                                           "not have a grad_fn"):
        L.autograd.grad((a * a).sum(), a)


FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
         "after they have already been freed). Saved intermediate values")


def test_second_backward_error_text(L):
    a = T(L, [1., 2.])
    y = a.exp().sum()
    y.backward()
    with pytest.raises(RuntimeError) as ei:
        y.backward()
    assert str(ei.value).startswith(FREED), str(ei.value)


@pytest.mark.parametrize("how", ["grad", "backward"])
def test_create_graph_with_retain_graph_false_frees_the_graph(L, how):
    a = T(L, [1., 2.])
    y = a.exp().sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "grad":
            (g,) = L.autograd.grad(y, a, create_graph=True, retain_graph=False)
        else:
            y.backward(create_graph=True, retain_graph=False)
            g = a.grad
    assert g.requires_grad
    with pytest.raises(RuntimeError) as ei:
        L.autograd.grad(y, a)
    assert str(ei.value).startswith(FREED)


def test_hessian_vector_product_then_third_order(L):
    a, v = T(L, [1., 2.]), T(L, [1., -1.], grad=False)
    y = (a.sin() * a.exp()).sum()
    (g,) = L.autograd.grad(y, a, create_graph=True)
    (hv,) = L.autograd.grad((g * v).sum(), a, create_graph=True)
    (t,) = L.autograd.grad(hv.sum(), a)
    x = np.array([1., 2.])
    close(g, np.exp(x) * (np.sin(x) + np.cos(x)))
    close(hv, 2 * np.exp(x) * np.cos(x) * [1., -1.])
    close(t, 2 * np.exp(x) * (np.cos(x) - np.sin(x)) * [1., -1.])


def test_backward_inputs_empty_error_text(L):
    a = T(L, [1., 2.])
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty"):
        (a * a).sum().backward(inputs=[])


# ---------------- grad mode ----------------

def test_bare_no_grad_and_enable_grad_decorators(L):
    @L.no_grad
    def f(x):
        return x * 2, L.is_grad_enabled()

    @L.enable_grad
    def g(x):
        return x * 2

    y, on = f(T(L, [1.]))
    assert not y.requires_grad and not on and L.is_grad_enabled()
    with L.no_grad():
        assert g(T(L, [1.])).requires_grad


@pytest.mark.parametrize("mode", ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"])
def test_decorated_generator_runs_its_steps_in_the_mode(L, mode):
    inside = {"no_grad": False, "enable_grad": True, "set_grad_enabled": False,
              "inference_mode": False}[mode]
    deco = {"no_grad": L.no_grad, "enable_grad": L.enable_grad,
            "set_grad_enabled": lambda: L.set_grad_enabled(False),  # sets the mode at once
            "inference_mode": L.inference_mode}[mode]()
    outside = not inside

    @deco
    def gen(x):
        got = yield L.is_grad_enabled(), (x * 2).requires_grad
        yield got, L.is_grad_enabled()
        return "done"

    with L.set_grad_enabled(outside):
        it = gen(T(L, [1.]))
        first = next(it)
        between = L.is_grad_enabled()
        second = it.send("sent")
        with pytest.raises(StopIteration) as stop:
            next(it)
    assert first == (inside, inside) and between == outside
    assert second == ("sent", inside) and stop.value.value == "done"
    assert L.is_grad_enabled()


def test_decorated_generator_throw_and_close_run_in_the_mode(L):
    seen = []

    @L.no_grad()
    def gen():
        try:
            yield 1
        except ValueError:
            seen.append(("throw", L.is_grad_enabled()))
            yield 2
        finally:
            seen.append(("close", L.is_grad_enabled()))

    it = gen()
    next(it)
    assert it.throw(ValueError()) == 2
    it.close()
    assert seen == [("throw", False), ("close", False)] and L.is_grad_enabled()


def test_set_grad_enabled_wants_a_bool(L):
    with pytest.raises(TypeError, match="must be bool, not str"):
        L.set_grad_enabled("yes")
    assert L.is_grad_enabled()


# ---------------- compiled: in-place writes into values saved for backward ----------------

def _sigmoid_then_scaled(a):
    c = a.sigmoid()       # saves its output
    c.mul_(2)
    return c.sum()


def _saved_operand_zeroed(a, w):
    b = a * 1
    c = b * w             # saves b (for w's gradient) and w
    b.zero_()
    return c.sum()


def _tanh_then_shifted(a):
    c = (a * 2).tanh()
    c.add_(1)
    return (c * 3).sum()


@needs_compile
@pytest.mark.parametrize("fn", [_sigmoid_then_scaled, _saved_operand_zeroed, _tanh_then_shifted])
def test_compiled_write_into_a_saved_value_raises_as_eager(fn):
    n = fn.__code__.co_argcount
    st.reset()
    cf = st.compile(fn)
    try:
        for f in (fn, cf, cf, cf):   # eager, then the translation and two compiled calls
            out = f(*[T(st, [1., 2.]) for _ in range(n)])
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                out.backward()
    finally:
        st.reset()


@needs_compile
def test_compiled_in_place_write_no_saved_value_needs_stays_one_graph():
    def f(a, w):
        b = a * w
        c = b + 2         # add saves nothing
        b.relu_()         # relu_ saves its own result
        return (c * b).sum()
    eager_vs_compiled(f, [1., -2., 3.], [0.5, 1., -1.])
    st.reset()
    cf = st.compile(f)
    try:
        cf(T(st, [1., -2., 3.]), T(st, [0.5, 1., -1.]))
        codes = st._C._fe_stats()["codes"]
        assert not any("__resume" in k for k in codes), codes
    finally:
        st.reset()
