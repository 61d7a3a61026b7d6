# Autograd follow-ups compared with torch 2.13: in-place writes under no_grad
# inside symtrace.compile, a second backward through a graph that saved
# nothing, a custom Function's grad_fn as its ctx, autograd.grad on a hooked
# non-leaf, the non-leaf .grad warning, copy_ over a history, integer dtype=
# on reductions that would need a gradient, and torch's error texts.
#
# Tests taking the `L` fixture run with symtrace and with torch ([torch] ids),
# so their expectations are checked to be torch's behaviour. Compiled programs
# are called several times (the first call translates, later ones run the
# compiled graph).
import warnings

import numpy as np
import pytest

import symtrace as st


from autograd_vs_torch import L, N, T, close  # noqa: F401  (L: a fixture)


needs_compile = pytest.mark.skipif(not hasattr(st, "compile"), reason="symtrace.compile is not built")

INPLACE = "modified by an inplace operation"


def outcome(L, fn, values):
    """fn(L, *inputs) then backward: (output, input grads) or the error's type and text."""
    ins = [T(L, v) for v in values]
    try:
        out = fn(L, *ins)
        out.backward()
    except RuntimeError as e:
        return ("raised", str(e))
    return (N(out).tolist(), [None if i.grad is None else N(i.grad).tolist() for i in ins])


def check_compiled(fn, values, want, calls=3):
    """fn eagerly and over several compiled calls gives `want` (torch's, or its
    expected values): the same numbers, or an error containing the same text."""
    def same(got, k):
        if want[0] == "raised":
            assert got[0] == "raised" and want[1] in got[1], (k, got)
        else:
            np.testing.assert_allclose(got[0], want[0], rtol=1e-5, err_msg=str(k))
            for g, w in zip(got[1], want[1]):
                assert (g is None) == (w is None), (k, got)
                if w is not None:
                    np.testing.assert_allclose(g, w, rtol=1e-5, err_msg=str(k))
    st.reset()
    try:
        same(outcome(st, fn, values), "eager")
        cf = st.compile(fn)
        for k in range(calls):
            same(outcome(st, cf, values), f"compiled call {k}")
    finally:
        st.reset()


def torch_or(fn, values, expected):
    """torch's outcome of fn where torch is there (checked to equal `expected`)."""
    try:
        import torch
    except ImportError:
        return expected
    got = outcome(torch, fn, values)
    if expected[0] == "raised":
        assert got[0] == "raised" and expected[1] in got[1], got
    else:
        assert got == expected, got
    return expected


# ---------------- 1. in-place writes under no_grad, compiled ----------------

def _sigmoid_scaled_under_no_grad(L, a):
    c = a.sigmoid()          # saves its output
    with L.no_grad():
        c.mul_(2)
    return c.sum()


def _shifted_under_no_grad(L, a):
    c = a * 2                # saves nothing of c
    with L.no_grad():
        c.add_(1)
    return (c * c).sum()


def _view_scaled_under_no_grad(L, a):
    c = a * 2
    v = c[:2]
    with L.no_grad():
        v.mul_(3)            # through a view: c changes, keeps its history
    return (c * a).sum()


def _overwritten_under_no_grad(L, a):
    b = a.clone()
    with L.no_grad():
        b.copy_(a * 5)
    return (b * b).sum()


def _saved_operand_without_grad_written(L, a):
    w = L.ones(2) * 3
    c = a * w                # saves w for a's gradient
    w.add_(1)                # a value that needs no gradient, in grad mode
    return c.sum()


@needs_compile
def test_compiled_no_grad_write_into_a_saved_output_raises_as_eager():
    want = torch_or(_sigmoid_scaled_under_no_grad, [[1., 2.]], ("raised", INPLACE))
    check_compiled(_sigmoid_scaled_under_no_grad, [[1., 2.]], want)


@needs_compile
def test_compiled_write_into_a_saved_operand_that_needs_no_grad_raises():
    want = torch_or(_saved_operand_without_grad_written, [[1., 2.]], ("raised", INPLACE))
    check_compiled(_saved_operand_without_grad_written, [[1., 2.]], want)


@needs_compile
@pytest.mark.parametrize("fn, want", [
    (_shifted_under_no_grad, (67.0, [[12., -12., 28.]])),
    (_view_scaled_under_no_grad, (48.0, [[8., -16., 12.]])),
    (_overwritten_under_no_grad, (350.0, [[10., -20., 30.]])),
])
def test_compiled_no_grad_write_keeps_the_history(fn, want):
    # eager: the written tensor keeps its grad_fn, later uses send it gradients
    want = torch_or(fn, [[1., -2., 3.]], want)
    check_compiled(fn, [[1., -2., 3.]], want)


@needs_compile
def test_compiled_no_grad_write_that_keeps_the_history_stays_one_graph():
    st.reset()
    cf = st.compile(lambda a: _view_scaled_under_no_grad(st, a))
    try:
        for _ in range(2):
            cf(T(st, [1., -2., 3.])).backward()
        codes = st._C._fe_stats()["codes"]
        assert not any("__resume" in k for k in codes), codes
    finally:
        st.reset()


# ---------------- 2. a second backward through a graph that saved nothing ----------------

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
         "after they have already been freed).")


def test_second_backward_through_views_and_a_sum(L):
    a = L.ones(2, requires_grad=True)
    y = a.reshape(2, 1)[0].sum()
    y.backward()
    y.backward()          # nothing was saved: torch runs it again
    close(a.grad, [2., 0.])


def test_second_backward_through_ops_that_save_nothing(L):
    a = T(L, [1., 2.])
    y = ((a + 1) - a.t() * 1 + L.cat([a, a])[:2]).sum()   # * 1 saves its scalar
    y2 = (a + 1).neg().sum()
    y2.backward()
    y2.backward()
    close(a.grad, [-2., -2.])
    y.backward()
    with pytest.raises(RuntimeError) as ei:
        y.backward()      # the scalar of * 1 was saved (as torch saves it)
    assert str(ei.value).startswith(FREED)


def test_second_backward_through_a_scalar_product_raises(L):
    a = T(L, [1., 2.])
    y = (a * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError) as ei:
        y.backward()
    assert str(ei.value).startswith(FREED)


def _twice(L):
    class Twice(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None
    return Twice


def _saving(L):
    class Saving(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x
    return Saving


def test_second_backward_through_a_custom_function_without_saved_tensors(L):
    a = T(L, [1., 2.])
    y = _twice(L).apply(a, 3.0).sum()
    y.backward()
    y.backward()
    close(a.grad, [6., 6.])


def test_second_backward_through_a_custom_function_reading_freed_tensors_raises(L):
    a = T(L, [1., 2.])
    y = _saving(L).apply(a)
    y.sum().backward()
    close(a.grad, [2., 4.])
    with pytest.raises(RuntimeError) as ei:
        y.sum().backward()
    assert str(ei.value).startswith(FREED)
    with pytest.raises(RuntimeError) as ei:
        y.grad_fn.saved_tensors
    assert str(ei.value).startswith(FREED)


def test_custom_function_retained_graph_keeps_its_saved_tensors(L):
    a = T(L, [1., 2.])
    y = _saving(L).apply(a)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    close(a.grad, [4., 8.])


# ---------------- 3. a custom Function's grad_fn is its ctx ----------------

def _scaled(L, seen):
    class Scaled(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, k):
            seen.append(ctx)
            ctx.k = k
            ctx.save_for_backward(x, w)
            return x * w * k

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w * ctx.k, g * x * ctx.k, None
    return Scaled


def test_custom_function_grad_fn_is_its_ctx(L):
    seen = []
    a, w = T(L, [1., 2.]), T(L, [3., 4.], grad=False)
    y = _scaled(L, seen).apply(a, w, 2.0)
    gf = y.grad_fn
    assert gf is seen[0] and y.grad_fn is gf
    assert type(gf).__name__ == "ScaledBackward" and gf.name() == "ScaledBackward"
    assert gf.k == 2.0 and gf.needs_input_grad == (True, False, False)
    x, ww = gf.saved_tensors
    assert x is a
    close(ww, [3., 4.])
    assert gf.next_functions[0][0].variable is a
    (ga,) = gf.apply(L.ones(2))[:1]     # torch's ctx.apply runs backward
    close(ga, [6., 8.])
    y.sum().backward()
    close(a.grad, [6., 8.])


def test_custom_function_ctx_is_its_backward_class_even_when_not_recorded(L):
    seen = []
    with L.no_grad():
        _scaled(L, seen).apply(T(L, [1.]), T(L, [2.]), 1.0)
    assert type(seen[0]).__name__ == "ScaledBackward"


def test_custom_function_ctx_that_keeps_its_output_is_collected():
    import gc

    class Keep(st.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.me, ctx.y = ctx, y
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    gc.collect()
    base = st._C._autograd_stats()["nodes_alive"]
    a = T(st, [1., 2.])
    for _ in range(20):
        y = Keep.apply(a)
        gf = y.grad_fn
        y.sum().backward(retain_graph=True)
        del y, gf
    gc.collect()
    assert st._C._autograd_stats()["nodes_alive"] == base
    close(a.grad, [40., 40.])


@needs_compile
def test_compiled_custom_functions_get_their_backward_class_as_ctx():
    Twice = _twice(st)
    seen = []
    Scaled = _scaled(st, seen)

    def f(a, w):
        return (Twice.apply(a, 3.0) * Scaled.apply(a, w, 2.0)).sum()
    st.reset()
    cf = st.compile(f)
    try:
        for k in range(3):
            a, w = T(st, [1., 2.]), T(st, [3., 4.])
            cf(a, w).backward()
            close(a.grad, [36., 96.])     # d/da 6 a^2 w
            close(w.grad, [6., 24.])
        assert seen and all(type(c).__name__ == "ScaledBackward" for c in seen)
    finally:
        st.reset()


# ---------------- 4. autograd.grad on a non-leaf with a tensor hook ----------------

def test_grad_of_a_hooked_non_leaf_input_is_after_its_hook(L):
    # the graph stops at b: its hook runs, then its gradient is taken
    a = T(L, [1., 2.])
    b = a * 2
    b.register_hook(lambda g: g * 10)
    (gb,) = L.autograd.grad((b * b).sum(), b)
    close(gb, [40., 80.])


@pytest.mark.parametrize("order", ["ba", "ab"])
def test_grad_of_a_hooked_non_leaf_that_the_graph_runs_through(L, order):
    # b's node runs on (a is asked for too): b's gradient is taken before its hook,
    # which still reaches a (torch 2.13's engine)
    a = T(L, [1., 2.])
    b = a * 2
    b.register_hook(lambda g: g * 10)
    got = L.autograd.grad((b * b).sum(), [b, a] if order == "ba" else [a, b])
    gb, ga = got if order == "ba" else got[::-1]
    close(gb, [4., 8.])
    close(ga, [80., 160.])


# ---------------- 5. reading .grad of a non-leaf warns ----------------

NON_LEAF = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
            ".grad attribute won't be populated during autograd.backward(). If you indeed want "
            "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
            "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access "
            "the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more "
            "information.")


def grad_warnings(read):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        value = read()
    return value, [x for x in w if "not a leaf Tensor" in str(x.message)]


def test_non_leaf_grad_read_warns_each_time(L):
    a = T(L, [1., 2.])
    b = a * 2
    b.sum().backward()
    g, w = grad_warnings(lambda: (b.grad, b.grad)[0])
    assert g is None and len(w) == 2
    assert all(x.category is UserWarning and str(x.message).startswith(NON_LEAF) for x in w)
    assert w[0].filename == __file__   # attributed to the reading line


def test_grad_reads_that_do_not_warn(L):
    a = T(L, [1., 2.])
    b = a * 2
    b.retain_grad()
    c = a * 3
    c.grad = L.ones(2)
    d = L.ones(2) * 2
    with L.no_grad():
        e = a * 2
    for t in (a, b, c, d, e, a.detach()):
        _, w = grad_warnings(lambda: t.grad)
        assert not w, t
    _, w = grad_warnings(lambda: a[:1].grad)     # a view of a leaf is no leaf
    assert len(w) == 1


# ---------------- 6. copy_ over a tensor's history ----------------

def test_copy_over_a_history_sends_it_zeros(L):
    a, b = T(L, [3., 4.]), T(L, [1., 2.])
    x = b.clone()
    x.copy_(a * 1)
    (x * 2).sum().backward()
    close(b.grad, [0., 0.])        # torch's CopyBackwards: zeros, not None
    close(a.grad, [2., 2.])
    assert x.grad_fn.name().endswith("CopyBackwards")


def test_copy_of_a_function_of_itself_sends_the_gradient_through(L):
    b = T(L, [1., 2.])
    x = b * 3
    x.copy_(x + x.detach())        # the new value depends on the old one
    (x * x).sum().backward()
    close(b.grad, [36., 72.])


def test_copy_broadcast_from_a_smaller_source(L):
    a, b = T(L, [3.]), T(L, [[1., 2.], [3., 4.]])
    x = b.clone()
    x.copy_(a)
    (x * x).sum().backward()
    close(b.grad, [[0., 0.], [0., 0.]])
    close(a.grad, [24.])


# ---------------- 7. an integer dtype= where a gradient is needed ----------------

INT_DTYPE_OPS = {
    "sum": lambda x, d: x.sum(dtype=d), "sum_dim": lambda x, d: x.sum(0, dtype=d),
    "prod": lambda x, d: x.prod(dtype=d), "prod_dim": lambda x, d: x.prod(0, dtype=d),
    "cumsum": lambda x, d: x.cumsum(0, dtype=d), "cumprod": lambda x, d: x.cumprod(0, dtype=d),
    "nansum": lambda x, d: x.nansum(dtype=d),
}


@pytest.mark.parametrize("op", sorted(INT_DTYPE_OPS))
@pytest.mark.parametrize("dt, name", [("int64", "Long"), ("int32", "Int")])
def test_integer_dtype_on_an_input_that_requires_grad_raises(L, op, dt, name):
    fn = INT_DTYPE_OPS[op]
    a = T(L, [1., 2.])
    with pytest.raises(RuntimeError, match=f"^Autograd not support dtype: {name}$"):
        fn(a, getattr(L, dt))
    with L.no_grad():
        r = fn(a, getattr(L, dt))          # no gradient wanted: fine
    assert not r.requires_grad and not r.dtype.is_floating_point
    r = fn(T(L, [1., 2.], grad=False), getattr(L, dt))
    assert not r.dtype.is_floating_point
    r = fn(a, L.float64)
    assert r.dtype == L.float64 and r.requires_grad


def test_torch_functions_with_an_integer_dtype_raise(L):
    a = T(L, [1., 2.])
    for f in (lambda: L.sum(a, dtype=L.int64), lambda: L.cumsum(a, 0, dtype=L.int64),
              lambda: L.prod(a, dtype=L.int64)):
        with pytest.raises(RuntimeError, match="^Autograd not support dtype: Long$"):
            f()


def test_mean_with_an_integer_dtype_names_the_optional_dtype(L):
    for a in (T(L, [1., 2.]), T(L, [1., 2.], grad=False)):
        with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. "
                                               "Optional dtype must be either a floating point "
                                               "or complex dtype. Got: Long"):
            a.mean(dtype=L.int64)


@needs_compile
def test_compiled_integer_dtype_raises_as_eager():
    def f(a):
        return a.sum(dtype=st.int64)
    st.reset()
    cf = st.compile(f)
    try:
        for _ in range(3):
            with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
                cf(T(st, [1., 2.]))
            assert cf(T(st, [1., 2.], grad=False)).tolist() == 3
    finally:
        st.reset()


# ---------------- 8. error texts ----------------

def test_custom_backward_returning_a_number(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 1.0

    with pytest.raises(RuntimeError, match="^expected Variable or None \\(got float\\)$"):
        F.apply(T(L, [1., 2.])).sum().backward()


@pytest.mark.parametrize("leaf", [True, False])
def test_hook_returning_a_non_tensor(L, leaf):
    a = T(L, [1., 2.])
    t = a if leaf else a * 2
    t.register_hook(lambda g: "x")
    with pytest.raises(TypeError, match="^expected Variable, but hook returned 'str'$"):
        (t * 3).sum().backward()


def version_error(dt, shape, which, now=1, was=0, anomaly=False):
    hint = ("the backtrace further above shows the operation that failed to compute its "
            "gradient. The variable in question was changed in there or anywhere later. Good "
            "luck!" if anomaly else
            "enable anomaly detection to find the operation that failed to compute its "
            "gradient, with (torch|symtrace).autograd.set_detect_anomaly\\(True, "
            "check_nan=False\\).")
    w = f", which is output {which[0]} of {which[1]}," if which else ""
    return (f"^one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: \\[(torch|symtrace).{dt}Tensor \\[{shape}\\]\\]{w} is at "
            f"version {now}; expected version {was} instead. Hint: {hint}$")


def test_version_error_of_a_saved_output(L):
    a = T(L, [[1., 2., 3.], [4., 5., 6.]])
    c = a.sigmoid()
    c.mul_(2)
    with pytest.raises(RuntimeError, match=version_error("Float", "2, 3", (0, "Sigmoid"))):
        c.sum().backward()


def test_version_error_of_a_saved_scalar_output_under_no_grad(L):
    a = L.tensor(2.0, dtype=L.float64, requires_grad=True)
    c = a.exp()
    with L.no_grad():
        c.add_(1)
    with pytest.raises(RuntimeError, match=version_error("Double", "", (0, "Exp"))):
        c.backward()


def test_version_error_of_a_saved_leaf(L):
    a, w = T(L, [1., 2.]), T(L, [3., 4.], grad=False)
    c = a * w
    w.add_(1)
    with pytest.raises(RuntimeError, match=version_error("Float", "2", None)):
        c.sum().backward()


def test_version_error_under_anomaly_mode(L):
    a = T(L, [1., 2.])
    c = a.exp()
    c.add_(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with L.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match=version_error("Float", "2", (0, "Exp"),
                                                                 anomaly=True)):
                c.sum().backward()


def test_version_error_of_a_custom_function_saved_output(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    y = F.apply(T(L, [1., 2.]))
    with L.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match=version_error("Float", "2", (0, "F"))):
        y.sum().backward()


def test_version_error_of_a_custom_function_saved_input(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x

    x = T(L, [1., 2.])
    y = x * 1
    z = F.apply(y)
    y.add_(1)          # torch names the saved input's history now: add_'s
    with pytest.raises(RuntimeError, match=version_error("Float", "2", (0, "Add"))):
        z.sum().backward()
