# symtrace.func (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap,
# functional_call) and symtrace.nn.utils.stateless.functional_call against
# torch.func on the same functions and float64 values: results (structure,
# shapes, values, which carry history), composition (grad of grad, jacrev of
# jacrev, vmap of grad, hessian of an MLP loss through functional_call), torch's
# errors, and a compiled function differentiated against eager.
import warnings
from collections import namedtuple

import numpy as np
import pytest

import symtrace as st
import symtrace.func as sfunc

# torch.func's own imports warn about torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

rng = np.random.default_rng(5)
A = rng.standard_normal((2, 3))
V3 = rng.standard_normal(3)
V3B = rng.standard_normal(3)
BATCH = rng.standard_normal((4, 3))
X = rng.standard_normal((5, 3))
Y = rng.standard_normal((5, 2))
TOL = dict(rtol=1e-10, atol=1e-12)
P = namedtuple("P", "a b")


def _t(L, a, requires_grad=False):
    return L.tensor(a, dtype=L.float64, requires_grad=requires_grad)


def _compare(got, exp, path="res"):
    """Same structure (tuple / list / dict / namedtuple), shapes, dtypes, values
    and which tensors carry history."""
    import torch
    if isinstance(exp, dict):
        assert isinstance(got, dict) and list(got) == list(exp), (path, got, exp)
        for k in exp:
            _compare(got[k], exp[k], f"{path}[{k!r}]")
        return
    if isinstance(exp, (tuple, list)):
        assert type(got).__name__ == type(exp).__name__ and len(got) == len(exp), (path, type(got), type(exp))
        for k, (g, e) in enumerate(zip(got, exp)):
            _compare(g, e, f"{path}[{k}]")
        return
    if not isinstance(exp, torch.Tensor):
        assert got == exp, (path, got, exp)
        return
    assert isinstance(got, st.Tensor), (path, type(got))
    assert tuple(got.shape) == tuple(exp.shape), (path, got.shape, exp.shape)
    assert str(got.dtype).split(".")[-1] == str(exp.dtype).split(".")[-1], (path, got.dtype, exp.dtype)
    assert got.requires_grad == exp.requires_grad, (path, got.requires_grad, exp.requires_grad)
    np.testing.assert_allclose(got.detach().numpy(), exp.detach().numpy(), err_msg=path, **TOL)


def _both(torch, make):
    """make(L, F) for L = symtrace with F = symtrace.func and L = torch with torch.func."""
    import torch.func as tf
    return make(st, sfunc), make(torch, tf)


def _check(torch, make):
    got, exp = _both(torch, make)
    _compare(got, exp)
    return got


# ---------------- functions ----------------
def poly(x):
    return (x ** 4 - 3 * x ** 3 + 0.5 * x).sum()


def tanh_exp(x):
    return (x.tanh() * x.exp()).sum()


def two_args(x, y):
    return ((x * y).sin() + x.exp() * y ** 2).sum()


def vec_fn(x):
    return x.sin() * x.sum()


def tuple_out(x, y):
    return (x * y).exp(), (x.tanh() * y).sum()


def _mlp_pair(L):
    """A two-layer MLP with the same weights in both libraries, and its loss."""
    net = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.Tanh(), L.nn.Linear(4, 2)).double()
    r = np.random.default_rng(9)
    with L.no_grad():
        for p in net.parameters():
            p.copy_(_t(L, r.standard_normal(tuple(p.shape)) * 0.5))
    return net


def _params(L, net):
    return {k: v.detach() for k, v in net.named_parameters()}


def _loss(L, F, net):
    def loss(params, x, y):
        return ((F.functional_call(net, params, (x,)) - y) ** 2).mean()
    return loss


def test_closed_forms():
    # f = sum(x^4) / 12 + x0 x1: grad x^3 / 3 + (x1, x0, 0), Hessian diag(x^2) + the swap
    f = lambda x: (x ** 4).sum() / 12 + x[0] * x[1]  # noqa: E731
    g_want = V3 ** 3 / 3 + np.array([V3[1], V3[0], 0.0])
    h_want = np.diag(V3 ** 2)
    h_want[0, 1] = h_want[1, 0] = 1.0
    x = _t(st, V3)
    np.testing.assert_allclose(sfunc.grad(f)(x).numpy(), g_want, **TOL)
    np.testing.assert_allclose(sfunc.hessian(f)(x).numpy(), h_want, **TOL)
    np.testing.assert_allclose(sfunc.jacrev(sfunc.jacrev(f))(x).numpy(), h_want, **TOL)
    np.testing.assert_allclose(sfunc.grad(lambda t: sfunc.grad(f)(t)[2])(x).numpy(), [0, 0, V3[2] ** 2], **TOL)
    # vec_fn = sin(x) * sum(x): J = diag(cos(x)) S + sin(x) 1^T
    j_want = np.diag(np.cos(V3)) * V3.sum() + np.sin(V3)[:, None]
    np.testing.assert_allclose(sfunc.jacrev(vec_fn)(x).numpy(), j_want, **TOL)
    np.testing.assert_allclose(sfunc.jacfwd(vec_fn)(x).numpy(), j_want, **TOL)
    np.testing.assert_allclose(sfunc.jvp(vec_fn, (x,), (_t(st, V3B),))[1].numpy(), j_want @ V3B, **TOL)
    _, fn = sfunc.vjp(vec_fn, x)
    np.testing.assert_allclose(fn(_t(st, V3B))[0].numpy(), V3B @ j_want, **TOL)
    # vmap of grad: one gradient per row; nothing left behind on the inputs
    xb = _t(st, BATCH)
    got = sfunc.vmap(sfunc.grad(f))(xb).numpy()
    want = np.stack([r ** 3 / 3 + np.array([r[1], r[0], 0.0]) for r in BATCH])
    np.testing.assert_allclose(got, want, **TOL)
    assert not x.requires_grad and x.grad is None and not xb.requires_grad


# ---------------- grad, grad_and_value ----------------
@pytest.mark.parametrize("f", [poly, tanh_exp])
def test_grad_against_torch(f, torch):
    _check(torch, lambda L, F: F.grad(f)(_t(L, V3)))
    _check(torch, lambda L, F: F.grad(f)(_t(L, A)))
    _check(torch, lambda L, F: F.grad_and_value(f)(_t(L, V3)))


def test_grad_argnums_aux_and_kwargs(torch):
    _check(torch, lambda L, F: F.grad(two_args)(_t(L, V3), _t(L, V3B)))
    _check(torch, lambda L, F: F.grad(two_args, argnums=1)(_t(L, V3), _t(L, V3B)))
    _check(torch, lambda L, F: F.grad(two_args, argnums=(1, 0))(_t(L, V3), _t(L, V3B)))
    _check(torch, lambda L, F: F.grad(two_args, argnums=-1)(_t(L, V3), _t(L, V3B)))
    _check(torch, lambda L, F: F.grad(lambda x, y: (two_args(x, y), {"s": x.sin(), "n": [y * 3]}),
                                      has_aux=True)(_t(L, V3), _t(L, V3B)))
    _check(torch, lambda L, F: F.grad_and_value(lambda x, y: (two_args(x, y), (x * 2,)), argnums=(0, 1),
                                                has_aux=True)(_t(L, V3), _t(L, V3B)))
    _check(torch, lambda L, F: F.grad(lambda x, *, scale: (x.exp() * scale).sum())(_t(L, V3), scale=_t(L, V3B)))


def test_grad_of_pytree_arguments(torch):
    def f(d, p):
        return (d["u"].exp() * d["w"][0]).sum() + (p.a * p.b).sin().sum()
    _check(torch, lambda L, F: F.grad(f, argnums=(0, 1))({"u": _t(L, V3), "w": [_t(L, V3B)]},
                                                         P(_t(L, V3), _t(L, A[0]))))


def test_grad_is_functional(torch):
    # no requires_grad needed, no .grad left, no history in the result
    x = _t(st, V3)
    g = sfunc.grad(tanh_exp)(x)
    assert not x.requires_grad and x.grad is None and not g.requires_grad
    # inside no_grad the transform still differentiates (torch's rule)
    with st.no_grad():
        _compare(sfunc.grad(tanh_exp)(x), torch.func.grad(tanh_exp)(_t(torch, V3)))
    # an input that requires grad: the result is differentiable with respect to it
    _check(torch, lambda L, F: F.grad(tanh_exp)(_t(L, V3, True)))
    xs, xt = _t(st, V3, True), _t(torch, V3, True)
    (hs,) = st.autograd.grad(sfunc.grad(tanh_exp)(xs).sum(), xs)
    (ht,) = torch.autograd.grad(torch.func.grad(tanh_exp)(xt).sum(), xt)
    _compare(hs, ht)
    assert xs.grad is None


def test_grad_keeps_history_of_captured_tensors(torch):
    # w is captured (not an argument) and requires grad: the gradient is a
    # function of w, differentiable by ordinary autograd, as with torch's levels
    got = {}
    for L, F in ((st, sfunc), (torch, torch.func)):
        w = _t(L, V3B, True)
        g = F.grad(lambda x: (x * w).sin().sum() + (x ** 3).sum())(_t(L, V3))
        assert g.requires_grad
        (gw,) = L.autograd.grad((g ** 2).sum(), w)
        got[L.__name__] = (g, gw)
    for a, b in zip(got["symtrace"], got["torch"]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL)


# ---------------- vjp, jvp ----------------
def test_vjp_against_torch(torch):
    def make(L, F):
        out, fn = F.vjp(tuple_out, _t(L, V3), _t(L, V3B))
        return out, fn((_t(L, A[0]), _t(L, 1.5)))
    _check(torch, make)

    def make_aux(L, F):
        out, fn, aux = F.vjp(lambda x: (vec_fn(x), x.cos()), _t(L, V3), has_aux=True)
        return out, fn(_t(L, V3B)), aux
    _check(torch, make_aux)

    def make_pytree(L, F):
        out, fn = F.vjp(lambda d: {"a": d["x"].exp(), "b": [d["x"] * d["y"]]}, {"x": _t(L, V3), "y": _t(L, V3B)})
        return out, fn({"a": _t(L, V3B), "b": [_t(L, V3)]})
    _check(torch, make_pytree)


def test_vjp_fn_create_graph(torch):
    # vjp_fn's result is differentiable with respect to a cotangent that requires grad
    def make(L, F):
        _, fn = F.vjp(vec_fn, _t(L, V3))
        c = _t(L, V3B, True)
        (r,) = fn(c)
        return r, L.autograd.grad((r ** 2).sum(), c)[0]
    _check(torch, make)


def test_jvp_against_torch(torch):
    _check(torch, lambda L, F: F.jvp(vec_fn, (_t(L, V3),), (_t(L, V3B),)))
    _check(torch, lambda L, F: F.jvp(tuple_out, (_t(L, V3), _t(L, V3B)), (_t(L, V3B), _t(L, V3))))
    _check(torch, lambda L, F: F.jvp(lambda x: (x.exp(), {"c": x * 0 + 1}), (_t(L, V3),), (_t(L, V3B),),
                                     has_aux=True))
    # an output independent of the input: zero tangent (strict: torch's error)
    _check(torch, lambda L, F: F.jvp(lambda x: (x.exp(), _t(L, A)), (_t(L, V3),), (_t(L, V3B),)))


# ---------------- jacrev, jacfwd, hessian ----------------
@pytest.mark.parametrize("api", ["jacrev", "jacfwd"])
def test_jacobians_against_torch(api, torch):
    _check(torch, lambda L, F: getattr(F, api)(vec_fn)(_t(L, V3)))
    _check(torch, lambda L, F: getattr(F, api)(lambda x: x.exp() @ x.T)(_t(L, A)))
    _check(torch, lambda L, F: getattr(F, api)(tuple_out, argnums=(0, 1))(_t(L, V3), _t(L, V3B)))
    _check(torch, lambda L, F: getattr(F, api)(tuple_out, argnums=1)(_t(L, V3), _t(L, V3B)))
    _check(torch, lambda L, F: getattr(F, api)(lambda d: [d["x"].sin(), d["x"] * d["y"]])(
        {"x": _t(L, V3), "y": _t(L, V3B)}))
    _check(torch, lambda L, F: getattr(F, api)(lambda x: (x.exp(), x.sum()), has_aux=True)(_t(L, V3)))
    # an output that does not depend on the argument: zeros
    _check(torch, lambda L, F: getattr(F, api)(lambda x, y: y.exp())(_t(L, V3), _t(L, V3B)))


def test_jacfwd_all_arguments(torch):
    _check(torch, lambda L, F: F.jacfwd(two_args, argnums=None)(_t(L, V3), _t(L, V3B)))


def test_hessian_against_torch(torch):
    _check(torch, lambda L, F: F.hessian(tanh_exp)(_t(L, V3)))
    _check(torch, lambda L, F: F.hessian(two_args, argnums=(0, 1))(_t(L, V3), _t(L, V3B)))


def test_hessian_of_mlp_loss_with_functional_call(torch):
    got, exp = _both(torch, lambda L, F: F.hessian(_loss(L, F, _mlp_pair(L)))(
        _params(L, _mlp_pair(L)), _t(L, X), _t(L, Y)))
    assert list(got) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert tuple(got["0.weight"]["2.bias"].shape) == (4, 3, 2)
    _compare(got, exp)


# ---------------- composition ----------------
def test_grad_of_grad(torch):
    _check(torch, lambda L, F: F.grad(lambda x: F.grad(tanh_exp)(x).sum())(_t(L, V3)))
    _check(torch, lambda L, F: F.grad(F.grad(lambda x: (x.sin() * x ** 2).sum()))(_t(L, 0.7)))
    # third derivative
    _check(torch, lambda L, F: F.grad(F.grad(F.grad(lambda x: x.exp() * x ** 4)))(_t(L, 0.3)))
    # mixed: the gradient with respect to y of a function of grad_x
    _check(torch, lambda L, F: F.grad(lambda y: (F.grad(two_args)(_t(L, V3), y) ** 2).sum())(_t(L, V3B)))
    # through a hessian, a jvp and a vjp_fn
    f = lambda x: (x.sin() * x.exp()).sum() * x[0]  # noqa: E731
    _check(torch, lambda L, F: F.grad(lambda x: F.hessian(f)(x).sum())(_t(L, V3)))
    _check(torch, lambda L, F: F.grad(lambda x: F.jvp(vec_fn, (x,), (x * 1.5,))[1].sum())(_t(L, V3)))
    _check(torch, lambda L, F: F.grad(lambda c: F.vjp(vec_fn, _t(L, V3))[1](c)[0].pow(2).sum())(_t(L, V3B)))


def test_jacrev_of_jacrev(torch):
    _check(torch, lambda L, F: F.jacrev(F.jacrev(vec_fn))(_t(L, V3)))
    _check(torch, lambda L, F: F.jacfwd(F.jacrev(lambda x, y: (x * y).sin()), argnums=1)(_t(L, V3), _t(L, V3B)))


def test_vmap_of_grad_and_jacrev(torch):
    _check(torch, lambda L, F: F.vmap(F.grad(tanh_exp))(_t(L, BATCH)))
    _check(torch, lambda L, F: F.vmap(F.jacrev(vec_fn))(_t(L, BATCH)))
    _check(torch, lambda L, F: F.vmap(F.grad(two_args), in_dims=(0, None))(_t(L, BATCH), _t(L, V3B)))
    # per-sample gradients of an MLP loss
    def per_sample(L, F):
        net = _mlp_pair(L)
        loss = _loss(L, F, net)
        return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(_params(L, net), _t(L, X), _t(L, Y))
    _check(torch, per_sample)


def test_grad_of_vmap(torch):
    _check(torch, lambda L, F: F.grad(lambda x: F.vmap(vec_fn)(x).pow(2).sum())(_t(L, BATCH)))


# ---------------- vmap ----------------
def test_vmap_dims_against_torch(torch):
    b = _t
    _check(torch, lambda L, F: F.vmap(vec_fn)(b(L, BATCH)))
    _check(torch, lambda L, F: F.vmap(vec_fn, in_dims=1)(b(L, BATCH.T.copy())))
    _check(torch, lambda L, F: F.vmap(vec_fn, in_dims=-1, out_dims=1)(b(L, BATCH.T.copy())))
    _check(torch, lambda L, F: F.vmap(lambda x: x.sum())(b(L, BATCH)))
    _check(torch, lambda L, F: F.vmap(lambda x, y: (x * y, y), in_dims=(0, None), out_dims=(1, None))(
        b(L, BATCH), b(L, V3B)))
    _check(torch, lambda L, F: F.vmap(lambda d, s: [d["u"] * s, {"k": d["v"].sum()}],
                                      in_dims=({"u": 0, "v": 1}, None), out_dims=[0, {"k": 0}])(
        {"u": b(L, BATCH), "v": b(L, BATCH.T.copy())}, 2.0))
    _check(torch, lambda L, F: F.vmap(lambda p: p.a * p.b, in_dims=(P(0, 1),))(P(b(L, BATCH), b(L, BATCH.T.copy()))))
    _check(torch, lambda L, F: F.vmap(lambda x, *, k: x * k)(b(L, BATCH), k=b(L, V3B)))
    _check(torch, lambda L, F: F.vmap(F.vmap(lambda x, y: x * y), in_dims=(0, None))(
        b(L, BATCH), b(L, V3B)))
    _check(torch, lambda L, F: F.vmap(vec_fn, chunk_size=3)(b(L, BATCH)))
    _check(torch, lambda L, F: F.vmap(lambda x: x.sum(0))(b(L, np.zeros((0, 3)))))


def test_vmap_is_differentiable(torch):
    def make(L, F):
        x = _t(L, BATCH, True)
        y = F.vmap(lambda r: (r.exp() * r.sum()))(x)
        return y, L.autograd.grad((y ** 2).sum(), x)[0]
    _check(torch, make)


def test_vmap_randomness():
    x = _t(st, BATCH)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        sfunc.vmap(lambda r: r + st.rand(3, dtype=st.float64))(x)
    st.manual_seed(0)
    same = sfunc.vmap(lambda r: st.rand(3, dtype=st.float64) + r * 0, randomness="same")(x)
    assert all(np.array_equal(same[0].numpy(), same[k].numpy()) for k in range(4))
    diff = sfunc.vmap(lambda r: st.rand(3, dtype=st.float64) + r * 0, randomness="different")(x)
    assert not np.array_equal(diff[0].numpy(), diff[1].numpy())
    # 'same' leaves the generator where one sample's draw leaves it
    st.manual_seed(0)
    sfunc.vmap(lambda r: st.rand(3) + r[0], randomness="same")(x)
    after = st.rand(2).numpy()
    st.manual_seed(0)
    st.rand(3)
    np.testing.assert_array_equal(after, st.rand(2).numpy())


def _errors(torch, call):
    """call(L, F) raises in both libraries: the same type and message (library names aside)."""
    import torch.func as tf
    with pytest.raises(Exception) as te:
        call(torch, tf)
    with pytest.raises(Exception) as se:
        call(st, sfunc)
    assert type(se.value).__name__ == type(te.value).__name__, (se.value, te.value)
    assert str(se.value).replace("symtrace", "torch") == str(te.value), (str(se.value), str(te.value))


def _x(L, a=BATCH):
    return _t(L, a)


VMAP_ERRORS = {
    "batch_sizes": lambda L, F: F.vmap(lambda a, b: a + b)(_x(L), _x(L, A)),
    "in_dims_list": lambda L, F: F.vmap(lambda a, b: a + b, in_dims=[0, 0])(_x(L), _x(L)),
    "in_dims_float": lambda L, F: F.vmap(lambda a: a, in_dims=0.5)(_x(L)),
    "in_dims_none": lambda L, F: F.vmap(lambda a: a, in_dims=None)(_x(L)),
    "in_dims_structure": lambda L, F: F.vmap(lambda a, b: a + b, in_dims=(0,))(_x(L), _x(L)),
    "in_dims_dict_keys": lambda L, F: F.vmap(lambda a, d: a, in_dims=(0, {"v": 0}))(_x(L), {"u": _x(L)}),
    "in_dim_float_leaf": lambda L, F: F.vmap(lambda a: a, in_dims=(0.5,))(_x(L)),
    "in_dim_out_of_range": lambda L, F: F.vmap(lambda a: a, in_dims=2)(_x(L)),
    "in_dim_non_tensor": lambda L, F: F.vmap(lambda a: a)(1.0),
    "no_inputs": lambda L, F: F.vmap(lambda: 1)(),
    "all_none": lambda L, F: F.vmap(lambda a: a, in_dims=(None,))(_x(L)),
    "randomness_arg": lambda L, F: F.vmap(lambda a: a, randomness="x"),
    "chunk_size": lambda L, F: F.vmap(lambda a: a, chunk_size=0),
    "out_dims_str": lambda L, F: F.vmap(lambda a: a, out_dims="a")(_x(L)),
    "out_dims_structure": lambda L, F: F.vmap(lambda a: a, out_dims=(0, 1))(_x(L)),
    "out_dims_structure_tuple": lambda L, F: F.vmap(lambda a: (a, a), out_dims=(0, 1, 2))(_x(L)),
    "out_dims_range": lambda L, F: F.vmap(lambda a: a, out_dims=2)(_x(L)),
    "out_dims_range_scalar": lambda L, F: F.vmap(lambda a: a.sum(), out_dims=1)(_x(L)),
    "output_float": lambda L, F: F.vmap(lambda a: 1.0)(_x(L)),
    "output_none": lambda L, F: F.vmap(lambda a: (a, None))(_x(L)),
    "batched_with_none_out_dim": lambda L, F: F.vmap(lambda a: a, out_dims=None)(_x(L)),
}


@pytest.mark.parametrize("name", sorted(VMAP_ERRORS))
def test_vmap_errors_as_torch(name, torch):
    _errors(torch, VMAP_ERRORS[name])


def test_vmap_unbatched_outputs(torch):
    _check(torch, lambda L, F: F.vmap(lambda a, c: (a * 2, c), in_dims=(0, None), out_dims=(0, None))(
        _x(L), _t(L, V3)))
    _check(torch, lambda L, F: F.vmap(lambda a: (a, 3), out_dims=(0, None))(_x(L)))


TRANSFORM_ERRORS = {
    "grad_not_scalar": lambda L, F: F.grad(vec_fn)(_t(L, V3)),
    "grad_not_tensor": lambda L, F: F.grad(lambda x: 1.0)(_t(L, V3)),
    "grad_aux_not_pair": lambda L, F: F.grad(lambda x: x.sum(), has_aux=True)(_t(L, V3)),
    "grad_aux_not_tensor": lambda L, F: F.grad(lambda x: (x.sum(), {"n": 3}), has_aux=True)(_t(L, V3)),
    "vjp_aux_not_tensor": lambda L, F: F.vjp(lambda x: (x, 3), _t(L, V3), has_aux=True),
    "grad_argnum_range": lambda L, F: F.grad(poly, argnums=1)(_t(L, V3)),
    "grad_argnum_type": lambda L, F: F.grad(poly, argnums=[0])(_t(L, V3)),
    "grad_argnums_empty": lambda L, F: F.grad(poly, argnums=())(_t(L, V3)),
    "grad_argnums_repeated": lambda L, F: F.grad(two_args, argnums=(0, 0))(_t(L, V3), _t(L, V3)),
    "grad_non_tensor_arg": lambda L, F: F.grad(lambda x: x)(1.0),
    "vjp_non_tensor_output": lambda L, F: F.vjp(lambda x: 1.0, _t(L, V3)),
    "vjp_int_output": lambda L, F: F.vjp(lambda x: (x > 0).long(), _t(L, V3)),
    "vjp_cotangent_structure": lambda L, F: F.vjp(tuple_out, _t(L, V3), _t(L, V3))[1](_t(L, V3)),
    "jvp_primals_not_tuple": lambda L, F: F.jvp(vec_fn, _t(L, V3), (_t(L, V3),)),
    "jvp_structure": lambda L, F: F.jvp(vec_fn, (_t(L, V3),), [_t(L, V3)]),
    "jvp_empty": lambda L, F: F.jvp(vec_fn, (), ()),
    "jvp_strict_independent": lambda L, F: F.jvp(lambda x: _t(L, V3) * 2, (_t(L, V3),), (_t(L, V3),),
                                                 strict=True),
    "jacrev_chunk": lambda L, F: F.jacrev(vec_fn, chunk_size=0),
    "jacfwd_randomness": lambda L, F: F.jacfwd(vec_fn, randomness="x")(_t(L, V3)),
    "jacfwd_random_op": lambda L, F: F.jacfwd(lambda x: x * L.rand(3, dtype=L.float64))(_t(L, V3)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORM_ERRORS))
def test_transform_errors_as_torch(name, torch):
    _errors(torch, TRANSFORM_ERRORS[name])


# ---------------- functional_call ----------------
def test_functional_call_against_torch(torch):
    def make(L, F):
        net = _mlp_pair(L)
        r = np.random.default_rng(3)
        new = {k: _t(L, r.standard_normal(tuple(v.shape))) for k, v in net.named_parameters()}
        out = F.functional_call(net, new, (_t(L, X),))
        half = ({k: v for k, v in new.items() if k.startswith("0.")},
                {k: v for k, v in new.items() if k.startswith("2.")})
        out2 = F.functional_call(net, half, _t(L, X))            # a tuple of dicts, args not a tuple
        part = F.functional_call(net, {"2.bias": new["2.bias"]}, args=(), kwargs={"input": _t(L, X)})
        orig = net(_t(L, X))                                      # the module's own weights are back
        return out, out2, part, orig
    _check(torch, make)


def test_functional_call_gradients_and_buffers(torch):
    def make(L, F):
        net = L.nn.Sequential(L.nn.Linear(3, 3), L.nn.BatchNorm1d(3)).double()
        with L.no_grad():
            net[0].weight.copy_(_t(L, np.eye(3) + 0.1 * A[0][:, None]))
            net[0].bias.copy_(_t(L, V3B))
        params = {k: _t(L, v.detach().numpy(), True) for k, v in net.named_parameters()}
        bufs = {k: v.clone() for k, v in net.named_buffers()}
        out = F.functional_call(net, (params, bufs), (_t(L, X),))
        grads = L.autograd.grad((out ** 3).sum(), list(params.values()))
        # the running statistics went to the given buffers, not the module's
        return out, grads, bufs["1.running_mean"], net[1].running_mean
    _check(torch, make)


def test_functional_call_tied_weights_and_strict(torch):
    def make_tied(L, F, tie):
        net = L.nn.Sequential(L.nn.Linear(3, 3, bias=False), L.nn.Linear(3, 3, bias=False)).double()
        with L.no_grad():
            net[0].weight.copy_(_t(L, A[0][:, None] * A[1]))
        net[1].weight = net[0].weight
        w = _t(L, np.eye(3) * 2)
        return F.functional_call(net, {"0.weight": w}, (_t(L, X),), tie_weights=tie)
    for tie in (True, False):
        _compare(make_tied(st, sfunc, tie), make_tied(torch, torch.func, tie))
    _errors(torch, lambda L, F: F.functional_call(L.nn.Linear(3, 2), {"weight": _t(L, A)}, (_t(L, X),),
                                                  strict=True))
    _errors(torch, lambda L, F: F.functional_call(L.nn.Linear(3, 2), {"weight": _t(L, A), "bias": _t(L, V3[:2]),
                                                                      "extra": _t(L, V3)}, (_t(L, X),),
                                                  strict=True))
    _errors(torch, lambda L, F: F.functional_call(L.nn.Linear(3, 2), ({"weight": _t(L, A)}, {"weight": _t(L, A)}),
                                                  (_t(L, X),)))
    _errors(torch, lambda L, F: F.functional_call(L.nn.Linear(3, 2), 3, (_t(L, X),)))


def test_functional_call_restores_on_error():
    net = st.nn.Linear(3, 2)
    w = net.weight
    with pytest.raises(RuntimeError):
        sfunc.functional_call(net, {"weight": st.zeros(5, 7)}, (st.zeros(4, 3),))
    assert net.weight is w and isinstance(net.weight, st.nn.Parameter)


def test_stateless_functional_call_is_deprecated_alias(torch):
    from symtrace.nn.utils import stateless
    net = _mlp_pair(st)
    new = {k: v * 2 for k, v in _params(st, net).items()}
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = stateless.functional_call(net, new, (_t(st, X),))
    np.testing.assert_allclose(out.numpy(), sfunc.functional_call(net, new, (_t(st, X),)).numpy(), **TOL)
    tnet = _mlp_pair(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp = torch.nn.utils.stateless.functional_call(tnet, {k: v * 2 for k, v in _params(torch, tnet).items()},
                                                       (_t(torch, X),))
    np.testing.assert_allclose(out.numpy(), exp.detach().numpy(), **TOL)


# ---------------- compiled ----------------
def test_grad_through_compiled_function_against_eager():
    def f(x, w):
        return ((x @ w).tanh() ** 2).sum()

    cf = st.compile(f, backend="llvm")
    x, w = _t(st, X), _t(st, A.T.copy())
    for tr in (lambda g: sfunc.grad(g, argnums=(0, 1)), lambda g: sfunc.jacrev(g, argnums=1),
               lambda g: sfunc.grad(lambda a, b: sfunc.grad(g, argnums=1)(a, b).pow(2).sum())):
        e, c = tr(f)(x, w), tr(cf)(x, w)
        for a, b in zip(e if isinstance(e, tuple) else (e,), c if isinstance(c, tuple) else (c,)):
            assert not b.requires_grad
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-9, atol=1e-11)
    # vmap of the compiled function's gradient: per-sample gradients
    e = sfunc.vmap(sfunc.grad(f, argnums=1), in_dims=(0, None))(_t(st, X[:, None, :]), w)
    c = sfunc.vmap(sfunc.grad(cf, argnums=1), in_dims=(0, None))(_t(st, X[:, None, :]), w)
    np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-9, atol=1e-11)


def _params_of(fn):
    import inspect
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
                                  "functional_call"])
def test_signatures_as_torch(name, torch):
    assert _params_of(getattr(sfunc, name)) == _params_of(getattr(torch.func, name))
    if name == "functional_call":
        from symtrace.nn.utils import stateless
        assert _params_of(stateless.functional_call) == _params_of(torch.nn.utils.stateless.functional_call)
