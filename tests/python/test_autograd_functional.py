# symtrace.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) and
# symtrace.autograd.gradgradcheck against torch.autograd's on the same functions
# and float64 values: results (nesting, shapes, dtypes, values), create_graph
# (which results carry history, and their gradients), strict-mode and argument
# errors in torch's words, and a function compiled with symtrace.compile against
# eager.
import numpy as np
import pytest

import symtrace as st

# torch.func's own imports warn about torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

rng = np.random.default_rng(11)
A = rng.standard_normal((2, 3))
B = rng.standard_normal((3, 2))
V3 = rng.standard_normal(3)
W1 = rng.standard_normal((3, 4)) * 0.5
B1 = rng.standard_normal(4) * 0.1
W2 = rng.standard_normal((4, 2)) * 0.5
X = rng.standard_normal((5, 3))

TOL = dict(rtol=1e-10, atol=1e-12)


def _mlp(L, x, w1, b1, w2):
    return L.tanh(x @ w1 + b1) @ w2


# name -> (function of (library, *inputs), input arrays); vector-valued functions
FUNCS = {
    "poly": (lambda L, x: x ** 3 - 2 * x * x + 0.5 * x, [V3]),
    "tanh_exp": (lambda L, x: (x.tanh() * x.exp()).sum(1), [A]),
    "tuple_in": (lambda L, x, y: (x @ y).exp(), [A, B]),
    "tuple_out": (lambda L, x: (x.sin() * 2, (x * x).sum(), x.tanh()[0]), [A]),
    "tuple_in_out": (lambda L, x, y: (x @ y, (x.exp() * y.T).sum(0)), [A, B]),
    "mlp": (lambda L, w1, b1, w2: _mlp(L, L.tensor(X, dtype=L.float64), w1, b1, w2), [W1, B1, W2]),
    "partly_unused": (lambda L, x, y: (x * 3).cos(), [V3, V3[::-1].copy()]),
}
# name -> scalar functions (for hessian, vhp, hvp)
SCALAR = {
    "poly": (lambda L, x: (x ** 4 - 3 * x ** 3 + x).sum(), [V3]),
    "tanh_exp": (lambda L, x: (x.tanh() * x.exp()).sum(), [A]),
    "tuple_in": (lambda L, x, y: ((x @ y).sin() ** 2).sum(), [A, B]),
    "mlp_loss": (lambda L, w1, b1, w2: (_mlp(L, L.tensor(X, dtype=L.float64), w1, b1, w2) ** 2).mean(),
                 [W1, B1, W2]),
    "partly_unused": (lambda L, x, y: (x.exp() * 2).sum() + y.sum(), [V3, V3]),
}


def _inputs(L, arrs, requires_grad=False):
    return tuple(L.tensor(a, dtype=L.float64, requires_grad=requires_grad) for a in arrs)


def _pack(xs, tupled):
    return xs if tupled else xs[0]


def _compare(got, exp, path="res", check_rg=True):
    """Same nesting (tuples or lists), shapes, dtypes, values and (check_rg) which
    results carry history; without check_rg, only the blocks that are not zero."""
    import torch
    if isinstance(exp, (tuple, list)):
        assert type(got) is type(exp) and len(got) == len(exp), (path, type(got), got, exp)
        for k, (g, e) in enumerate(zip(got, exp)):
            _compare(g, e, f"{path}[{k}]", check_rg)
        return
    assert isinstance(exp, torch.Tensor) and isinstance(got, st.Tensor), (path, type(got), type(exp))
    assert tuple(got.shape) == tuple(exp.shape), (path, got.shape, exp.shape)
    assert str(got.dtype).split(".")[-1] == str(exp.dtype).split(".")[-1], (path, got.dtype, exp.dtype)
    if check_rg or bool((exp != 0).any()):
        assert got.requires_grad == exp.requires_grad, (path, got.requires_grad, exp.requires_grad)
    np.testing.assert_allclose(got.detach().numpy(), exp.detach().numpy(), err_msg=path, **TOL)


def _leaves(res):
    if isinstance(res, (tuple, list)):
        return [t for r in res for t in _leaves(r)]
    return [res]


def _run(L, api, fn, arrs, tupled=True, v=None, requires_grad=False, **kw):
    """(inputs, result) of L.autograd.functional.<api> on fn at arrs."""
    xs = _inputs(L, arrs, requires_grad)
    args = [lambda *t: fn(L, *t), _pack(xs, tupled)]
    if v is not None:
        args.append(_pack(tuple(L.tensor(a, dtype=L.float64) for a in v), tupled or len(v) > 1))
    return xs, getattr(L.autograd.functional, api)(*args, **kw)


def _check(torch, api, fn, arrs, tupled=True, v=None, create_graph=False, **kw):
    """The API on both libraries: results equal; with create_graph, the gradient of
    the sum of the squares of the results that carry history equals torch's too.
    torch's forward-mode results are slices of one batched tensor: its zero blocks
    have a history where symtrace's have none."""
    kw = dict(kw, create_graph=create_graph) if create_graph else kw
    sx, sres = _run(st, api, fn, arrs, tupled, v, requires_grad=create_graph, **kw)
    tx, tres = _run(torch, api, fn, arrs, tupled, v, requires_grad=create_graph, **kw)
    forward = "forward-mode" in (kw.get("strategy"), kw.get("outer_jacobian_strategy"))
    _compare(sres, tres, check_rg=not forward)
    if create_graph:
        s_l = [t for t in _leaves(sres) if t.requires_grad]
        t_l = [t for t in _leaves(tres) if t.requires_grad]
        assert len(s_l) == len(t_l) > 0
        sg = st.autograd.grad(sum((t * t).sum() for t in s_l), sx, allow_unused=True)
        tg = torch.autograd.grad(sum((t * t).sum() for t in t_l), tx, allow_unused=True)
        for a, b in zip(sg, tg):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-11)
    return sres


def _out_arrays(fn, arrs, seed):
    """Random cotangents shaped like fn's outputs (computed with numpy via torch)."""
    import torch
    out = fn(torch, *_inputs(torch, arrs))
    outs = out if isinstance(out, tuple) else (out,)
    r = np.random.default_rng(seed)
    return [r.standard_normal(tuple(o.shape)) for o in outs], isinstance(out, tuple)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_vjp_jvp_against_torch(name, torch):
    fn, arrs = FUNCS[name]
    vs, _ = _out_arrays(fn, arrs, 1)
    tupled = len(arrs) > 1
    _check(torch, "vjp", fn, arrs, tupled, v=vs)
    vin = [np.random.default_rng(2).standard_normal(a.shape) for a in arrs]
    _check(torch, "jvp", fn, arrs, tupled, v=vin)
    if name in ("tanh_exp", "mlp", "tuple_in_out"):   # create_graph: results and their gradients
        _check(torch, "vjp", fn, arrs, tupled, v=vs, create_graph=True)
        _check(torch, "jvp", fn, arrs, tupled, v=vin, create_graph=True)


def test_vjp_jvp_single_tensor_forms(torch):
    # not-tuple inputs give not-tuple results; v may be omitted for one element
    fn = lambda L, x: (x.exp() * 3).sum()  # noqa: E731
    for api in ("vjp", "jvp"):
        _check(torch, api, fn, [V3[:1]] if api == "jvp" else [V3], tupled=False)
    _check(torch, "vjp", FUNCS["poly"][0], [V3], tupled=False, v=[V3 * 2])


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_jacobian_against_torch(name, torch):
    fn, arrs = FUNCS[name]
    tupled = len(arrs) > 1
    _check(torch, "jacobian", fn, arrs, tupled)
    # vectorize=True (same loop here) and forward-mode (double-vjp here) give the same values
    _check(torch, "jacobian", fn, arrs, tupled, vectorize=True)
    _check(torch, "jacobian", fn, arrs, tupled, vectorize=True, strategy="forward-mode")
    if name in ("tanh_exp", "tuple_in", "tuple_out"):
        _check(torch, "jacobian", fn, arrs, tupled, create_graph=True)


def test_jacobian_nesting(torch):
    # one input, one output: a tensor; tuple input: tuple over inputs; tuple
    # output: tuple over outputs; both: tuple (outputs) of tuples (inputs)
    jac = st.autograd.functional.jacobian
    x, y = _inputs(st, [A, B])
    j = jac(lambda a: a.sin(), x)
    assert isinstance(j, st.Tensor) and tuple(j.shape) == (2, 3, 2, 3)
    j = jac(lambda a: a.sin(), (x,))
    assert isinstance(j, tuple) and len(j) == 1 and tuple(j[0].shape) == (2, 3, 2, 3)
    j = jac(lambda a, b: (a @ b, a.sum()), (x, y))
    assert [[tuple(t.shape) for t in r] for r in j] == [[(2, 2, 2, 3), (2, 2, 3, 2)], [(2, 3), (3, 2)]]


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_hessian_vhp_hvp_against_torch(name, torch):
    fn, arrs = SCALAR[name]
    tupled = len(arrs) > 1
    _check(torch, "hessian", fn, arrs, tupled)
    _check(torch, "hessian", fn, arrs, tupled, vectorize=True, outer_jacobian_strategy="forward-mode")
    vin = [np.random.default_rng(3).standard_normal(a.shape) for a in arrs]
    _check(torch, "vhp", fn, arrs, tupled, v=vin)
    _check(torch, "hvp", fn, arrs, tupled, v=vin)
    if name in ("tanh_exp", "mlp_loss"):
        _check(torch, "hessian", fn, arrs, tupled, create_graph=True)
        _check(torch, "vhp", fn, arrs, tupled, v=vin, create_graph=True)
        _check(torch, "hvp", fn, arrs, tupled, v=vin, create_graph=True)


def test_hessian_closed_form():
    # f = sum(x^4) / 12 + x0 * x1: H = diag(x^2) + [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    x = st.tensor(V3, dtype=st.float64)
    h = st.autograd.functional.hessian(lambda t: (t ** 4).sum() / 12 + t[0] * t[1], x)
    want = np.diag(V3 ** 2)
    want[0, 1] = want[1, 0] = 1.0
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-12, atol=1e-14)
    assert not x.requires_grad and x.grad is None


def _errors(torch, call):
    """call(L) raises in both libraries: the same type and message (library names aside)."""
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(Exception) as se:
        call(st)
    assert type(se.value).__name__ == type(te.value).__name__, (se.value, te.value)
    assert str(se.value).replace("symtrace", "torch") == str(te.value), (str(se.value), str(te.value))


def _F(L):
    return L.autograd.functional


def _x(L, a=V3):
    return L.tensor(a, dtype=L.float64)


STRICT_CASES = {
    # an output that does not depend on the input at all
    "vjp_independent_output": lambda L: _F(L).vjp(lambda x: _x(L) * 2, _x(L), _x(L), strict=True),
    "vjp_unused_input": lambda L: _F(L).vjp(lambda x, y: x * 2, (_x(L), _x(L)), _x(L), strict=True),
    "jvp_unused_input": lambda L: _F(L).jvp(lambda x, y: x * 2, (_x(L), _x(L)), (_x(L), _x(L)), strict=True),
    "jacobian_unused_input": lambda L: _F(L).jacobian(lambda x, y: x.exp(), (_x(L), _x(L)), strict=True),
    "jacobian_linear_create_graph": lambda L: _F(L).jacobian(lambda x: x * 2, _x(L), strict=True,
                                                             create_graph=True),
    "hessian_linear": lambda L: _F(L).hessian(lambda x: (x * 2).sum(), _x(L), strict=True),
    "vhp_linear": lambda L: _F(L).vhp(lambda x: (x * 2).sum(), _x(L), _x(L), strict=True),
    "hvp_linear": lambda L: _F(L).hvp(lambda x: (x * 2).sum(), _x(L), _x(L), strict=True),
    "vhp_unused": lambda L: _F(L).vhp(lambda x, y: (x ** 3).sum() + y.sum(), (_x(L), _x(L)),
                                      (_x(L), _x(L)), strict=True),
    "jacobian_strict_vectorize": lambda L: _F(L).jacobian(lambda x: x.exp(), _x(L), strict=True, vectorize=True),
    "jacobian_strict_forward": lambda L: _F(L).jacobian(lambda x: x.exp(), _x(L), strict=True, vectorize=True,
                                                        strategy="forward-mode"),
}

ARG_CASES = {
    "input_not_tensor": lambda L: _F(L).vjp(lambda x: x, 3.0, _x(L)),
    "input_tuple_not_tensor": lambda L: _F(L).jacobian(lambda x, y: x, (_x(L), [1.0])),
    "output_not_tensor": lambda L: _F(L).vjp(lambda x: 3, _x(L), _x(L)),
    "output_tuple_not_tensor": lambda L: _F(L).jacobian(lambda x: (x, 1), _x(L)),
    "jvp_output_not_tensor": lambda L: _F(L).jvp(lambda x: [x], _x(L), _x(L)),
    "v_not_tensor": lambda L: _F(L).vjp(lambda x: x * 2, _x(L), 1.0),
    "v_wrong_length": lambda L: _F(L).vjp(lambda x: (x, x), _x(L), (_x(L),)),
    "v_single_for_tuple": lambda L: _F(L).jvp(lambda x: x, _x(L), (_x(L), _x(L))),
    "v_wrong_size": lambda L: _F(L).vjp(lambda x: x * 2, _x(L), _x(L, V3[:2])),
    "v_wrong_size_entry": lambda L: _F(L).jvp(lambda x, y: x * y, (_x(L), _x(L)), (_x(L), _x(L, V3[:2]))),
    "vjp_v_none_vector": lambda L: _F(L).vjp(lambda x: x * 2, _x(L)),
    "jvp_v_none_vector": lambda L: _F(L).jvp(lambda x: x * 2, _x(L)),
    "hvp_v_none_vector": lambda L: _F(L).hvp(lambda x: x.sum(), _x(L)),
    "hessian_vector_output": lambda L: _F(L).hessian(lambda x: x * 2, _x(L)),
    "hessian_tuple_output": lambda L: _F(L).hessian(lambda x: (x.sum(),), _x(L)),
    "vhp_vector_output": lambda L: _F(L).vhp(lambda x: x * 2, _x(L), _x(L)),
    "hvp_tuple_output": lambda L: _F(L).hvp(lambda x: (x.sum(), x.sum()), _x(L), _x(L)),
    "bad_strategy": lambda L: _F(L).jacobian(lambda x: x, _x(L), strategy="sideways"),
    "hessian_bad_strategy": lambda L: _F(L).hessian(lambda x: x.sum(), _x(L), outer_jacobian_strategy="x"),
    "forward_create_graph": lambda L: _F(L).jacobian(lambda x: x, _x(L), create_graph=True,
                                                     strategy="forward-mode"),
    "forward_not_vectorized": lambda L: _F(L).jacobian(lambda x: x.exp(), _x(L), strategy="forward-mode"),
    "hessian_forward_not_vectorized": lambda L: _F(L).hessian(lambda x: (x ** 3).sum(), _x(L),
                                                              outer_jacobian_strategy="forward-mode"),
}


@pytest.mark.parametrize("name", sorted(STRICT_CASES))
def test_strict_mode_errors_as_torch(name, torch):
    _errors(torch, STRICT_CASES[name])


@pytest.mark.parametrize("name", sorted(ARG_CASES))
def test_argument_errors_as_torch(name, torch):
    _errors(torch, ARG_CASES[name])


def test_strict_message_names_input():
    with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 1. "
                                           "This is not allowed in strict mode."):
        st.autograd.functional.vjp(lambda x, y: x * 2, (_x(st), _x(st)), _x(st), strict=True)


def test_not_strict_gives_zeros_for_unused_inputs():
    x, y = _x(st), _x(st)
    out, (gx, gy) = st.autograd.functional.vjp(lambda a, b: a * 2, (x, y), _x(st, np.ones(3)))
    np.testing.assert_array_equal(gx.numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(gy.numpy(), np.zeros(3))
    h = st.autograd.functional.hessian(lambda a, b: (a ** 3).sum() + b.sum(), (x, y))
    np.testing.assert_array_equal(h[1][1].numpy(), np.zeros((3, 3)))
    np.testing.assert_array_equal(h[0][1].numpy(), np.zeros((3, 3)))


def test_inputs_left_untouched():
    # the given tensors are neither made to require grad nor given a .grad
    x = _x(st)
    w = st.tensor(V3, dtype=st.float64, requires_grad=True)
    st.autograd.functional.jacobian(lambda a: (a * w).exp(), x)
    st.autograd.functional.hvp(lambda a: (a * w).exp().sum(), x, x)
    assert not x.requires_grad and x.grad is None and w.grad is None


def test_compiled_function_against_eager():
    def f(x, w):
        return (x @ w).tanh().pow(2).sum(1)

    cf = st.compile(f, backend="llvm")
    x, w = _inputs(st, [A, B])
    F = st.autograd.functional
    for api, kw in (("jacobian", {}), ("jacobian", dict(create_graph=True))):
        e = getattr(F, api)(f, (x, w), **kw)
        c = getattr(F, api)(cf, (x, w), **kw)
        for a, b in zip(_leaves(c), _leaves(e)):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    v = st.tensor(rng.standard_normal(2), dtype=st.float64)
    for api in ("vjp",):
        (eo, ev), (co, cv) = getattr(F, api)(f, (x, w), v), getattr(F, api)(cf, (x, w), v)
        np.testing.assert_allclose(co.numpy(), eo.numpy(), rtol=1e-10)
        for a, b in zip(cv, ev):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    g = lambda x, w: f(x, w).sum()  # noqa: E731
    cg = st.compile(g, backend="llvm")
    he, hc = F.hessian(g, (x, w)), F.hessian(cg, (x, w))
    for a, b in zip(_leaves(hc), _leaves(he)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-11)


# ---------------- gradgradcheck ----------------
GG_FUNCS = {
    "tanh_matmul": (lambda L, x, w: (x @ w).tanh(), [A, B]),
    "exp_sum": (lambda L, x: (x.exp() * x).sum(0), [A]),
    "mlp": (lambda L, w1, b1, w2: _mlp(L, L.tensor(X[:2], dtype=L.float64), w1, b1, w2), [W1, B1, W2]),
}


@pytest.mark.parametrize("name", sorted(GG_FUNCS))
def test_gradgradcheck_passes_as_torch(name, torch):
    fn, arrs = GG_FUNCS[name]
    for L in (st, torch):
        xs = _inputs(L, arrs, requires_grad=True)
        assert L.autograd.gradgradcheck(lambda *t: fn(L, *t), xs) is True
    xs = _inputs(st, arrs, requires_grad=True)
    assert st.autograd.gradgradcheck(lambda *t: fn(st, *t), xs, gen_non_contig_grad_outputs=True)
    # given grad_outputs (not requiring grad: only the inputs are checked)
    out = fn(st, *xs)
    go = st.tensor(rng.standard_normal(tuple(out.shape)), dtype=st.float64)
    assert st.autograd.gradgradcheck(lambda *t: fn(st, *t), xs, (go,))


def _bad_double_backward(L):
    class Cube(L.autograd.Function):
        """x^3 whose backward is right but not differentiable the right way."""
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 3 * a * a.detach()   # d/da of this is 3 g a, not 6 g a
    return Cube.apply


def test_gradgradcheck_catches_a_wrong_double_backward(torch):
    for L in (st, torch):
        x = L.tensor(V3, dtype=L.float64, requires_grad=True)
        f = _bad_double_backward(L)
        assert L.autograd.gradcheck(f, (x,))
        assert L.autograd.gradgradcheck(f, (x,), raise_exception=False) is False
        with pytest.raises(RuntimeError, match="(?i)jacobian mismatch"):
            L.autograd.gradgradcheck(f, (x,))


def test_gradgradcheck_argument_checks():
    x = st.tensor(V3, dtype=st.float64, requires_grad=True)
    with pytest.raises(AssertionError, match="check_fwd_over_rev or check_rev_over_rev"):
        st.autograd.gradgradcheck(lambda t: t * t, (x,), check_rev_over_rev=False)
    with pytest.raises(NotImplementedError, match="forward-mode"):
        st.autograd.gradgradcheck(lambda t: t * t, (x,), check_fwd_over_rev=True)


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"])
def test_signatures_as_torch(name, torch):
    import inspect

    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    assert params(getattr(st.autograd.functional, name)) == params(getattr(torch.autograd.functional, name))
    assert params(st.autograd.gradgradcheck) == params(torch.autograd.gradgradcheck)
