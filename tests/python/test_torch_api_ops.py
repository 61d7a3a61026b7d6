# PyTorch APIs that symtrace decomposes onto its existing ops (symtrace/_ops/,
# Tensor methods in symtrace/_tensor.py, inference_mode in symtrace/autograd):
# tril/triu, var/std, norm, outer/mm/bmm/addmm/baddbmm, addcmul/addcdiv, lerp,
# allclose/equal/isclose, broadcast_to/repeat/tile/unbind/narrow/flip/roll,
# type_as/mT/mH/nbytes, from_numpy, nan_to_num, cumsum, one_hot, einsum and
# inference_mode. Each is compared with torch (values, dtypes, shapes, errors),
# on non-contiguous inputs too, with gradients against torch's, and a subset
# under symtrace.compile with no graph break.
import math
import warnings

import numpy as np
import pytest

import symtrace as st
from conftest import ERRORS, LAYOUTS, assert_close, check_torch, make, rng_for

INF = float("inf")
NP = {"float32": np.float32, "float64": np.float64}


def grads(torch, st_fn, th_fn, arrays, dtype="float32", rtol=1e-4, atol=1e-5):
    """Forward values and input gradients (of sum(out * random weights)) against torch."""
    sx = [st.tensor(np.asarray(a, dtype=NP[dtype])).requires_grad_() for a in arrays]
    tx = [torch.tensor(np.asarray(a, dtype=NP[dtype]), requires_grad=True) for a in arrays]
    so, to = st_fn(*sx), th_fn(*tx)
    assert_close(so.detach(), to.detach(), rtol=rtol, atol=atol)
    w = rng_for("w", tuple(to.shape)).standard_normal(tuple(to.shape)).astype(NP[dtype])
    (so * st.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for i, (a, b) in enumerate(zip(sx, tx)):
        assert a.grad is not None, f"no gradient for input {i}"
        assert_close(a.grad, b.grad, rtol=rtol, atol=atol, msg=f"grad of input {i}")


def rnd(*shape, key=0, low=-2.0, high=2.0):
    return rng_for("rnd", shape, key).uniform(low, high, size=shape)


# ---------------- tril / triu ----------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4), (5, 3)])
def test_tril_triu(torch, dtype, layout, shape):
    x = make(shape, dtype, layout)
    for k in (0, 1, -1, 2, -3, 10, -10):
        check_torch(lambda t: st.tril(t, k), lambda t: torch.tril(t, k), x)
        check_torch(lambda t: st.triu(t, k), lambda t: torch.triu(t, k), x)
    check_torch(lambda t: t.tril(), lambda t: t.tril(), x)
    check_torch(lambda t: t.triu(diagonal=1), lambda t: t.triu(diagonal=1), x)


def test_tril_triu_inplace_grad_errors(torch):
    x = make((3, 4), "float32")
    a, b = x.st.clone(), x.th.clone()
    assert a.tril_(1) is a
    assert_close(a, b.tril_(1))
    a, b = x.st.clone(), x.th.clone()
    a.triu_(-1)
    assert_close(a, b.triu_(-1))
    v = x.st.clone()[:, 1:]          # in place through a view writes the base
    v.triu_()
    assert v[1, 0].item() == 0
    grads(torch, lambda t: st.tril(t, -1) * 2 + st.triu(t, 1), lambda t: t.tril(-1) * 2 + t.triu(1),
          [rnd(2, 3, 4)])
    for bad in ((4,), ()):
        check_torch(st.tril, torch.tril, make(bad))
        check_torch(st.triu, torch.triu, make(bad))
    with pytest.raises(TypeError):
        st.tril(x.st, 1.5)
    with pytest.raises(TypeError):
        st.tril([[1, 2], [3, 4]])


# ---------------- var / std ----------------
VAR_CASES = [((), {}), ((1,), {}), ((-1,), {"keepdim": True}), (((0, 2),), {}),
             (([1, -1],), {"keepdim": True}), ((0,), {"correction": 0}), ((None,), {"correction": 2}),
             ((2,), {"correction": 0.5, "keepdim": True}), ((1, False), {}), ((1, True, True), {}),
             ((False,), {}), ((True,), {}), ((), {"dim": 1, "unbiased": False}), (((),), {})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_var_std(torch, dtype, layout):
    x = make((3, 4, 5), dtype, layout)
    for args, kw in VAR_CASES:
        for name in ("var", "std", "var_mean", "std_mean"):
            check_torch(lambda t: getattr(st, name)(t, *args, **kw),
                        lambda t: getattr(torch, name)(t, *args, **kw), x, msg=f"{name}{args}{kw}")
        check_torch(lambda t: t.var(*args, **kw), lambda t: t.var(*args, **kw), x)
        check_torch(lambda t: t.std(*args, **kw), lambda t: t.std(*args, **kw), x)


def test_var_std_edges_grad_errors(torch):
    grads(torch, lambda t: st.var(t, 1), lambda t: torch.var(t, 1), [rnd(3, 4)])
    grads(torch, lambda t: st.std(t, (0, 2), keepdim=True, correction=0),
          lambda t: torch.std(t, (0, 2), keepdim=True, correction=0), [rnd(3, 4, 5)])
    grads(torch, lambda t: st.std(t), lambda t: torch.std(t), [rnd(6)], dtype="float64", rtol=1e-9, atol=1e-9)
    grads(torch, lambda t: sum(st.var_mean(t, 0)), lambda t: sum(torch.var_mean(t, 0)), [rnd(4, 3)])
    # float16 computes in float32 and returns float16
    x = make((4, 6), "float16")
    check_torch(lambda t: st.var(t, 1), lambda t: torch.var(t, 1), x, rtol=1e-2, atol=1e-2)
    # 0-d input, and dims whose count is <= correction: nan with a warning, as torch
    s = make((), "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_torch(lambda t: st.var(t, 0), lambda t: torch.var(t, 0), s)
        check_torch(lambda t: st.std(t), lambda t: torch.std(t), make((1, 3)))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert math.isnan(st.var(st.ones(1, 3), 0)[0].item())
    y = make((3, 4), "float32")
    for bad in [lambda m, t: m.var(t, 2), lambda m, t: m.var(t, (0, 0)), lambda m, t: m.std(t, -3)]:
        check_torch(lambda t: bad(st, t), lambda t: bad(torch, t), y)
    check_torch(st.var, torch.var, make((3,), "int64"))
    check_torch(st.std, torch.std, make((3,), "bool"))
    with pytest.raises(TypeError):
        st.var(y.st, 0, unbiased=False, correction=0)


# ---------------- norm ----------------
NORM_PS = [2, "fro", 1, INF, -INF, 0, 3, 0.5, 1.5, None]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_norm(torch, dtype, layout):
    x = make((3, 4, 5), dtype, layout, low=-3, high=3)
    for p in NORM_PS:
        for dim, keep in ((None, False), (None, True), (0, False), (-1, True), ((0, 2), False),
                          ((-1, 1), True), ([1], False)):
            check_torch(lambda t: st.norm(t, p, dim, keep), lambda t: torch.norm(t, p, dim, keep), x,
                        msg=f"p={p} dim={dim} keepdim={keep}")
        check_torch(lambda t: t.norm(p, dim=1), lambda t: t.norm(p, dim=1), x)
    check_torch(lambda t: t.norm(), lambda t: t.norm(), x)


def test_norm_dtype_grad_errors(torch):
    x = make((3, 4), "float32")
    check_torch(lambda t: st.norm(t, 3, 1, dtype=st.float64), lambda t: torch.norm(t, 3, 1, dtype=torch.float64), x)
    for p in (2, 1, 3, INF, "fro", -INF):
        grads(torch, lambda t: st.norm(t, p, dim=1), lambda t: torch.norm(t, p, dim=1), [rnd(3, 4, key=p)])
    grads(torch, lambda t: st.norm(t), lambda t: torch.norm(t), [rnd(2, 3, 2)])
    # a zero vector: torch's gradient is 0 there, not nan
    grads(torch, lambda t: st.norm(t, 2, dim=1), lambda t: torch.norm(t, 2, dim=1),
          [np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]])])
    grads(torch, lambda t: st.norm(t, 3, dim=1), lambda t: torch.norm(t, 3, dim=1),
          [np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 2.0]])])
    for bad in [lambda m, t: m.norm(t, 2, 5), lambda m, t: m.norm(t, "fro", (0, 1, 0)),
                lambda m, t: m.norm(t, "abc"), lambda m, t: m.norm(t, 2, 1, dtype=m.int64)]:
        check_torch(lambda t: bad(st, t), lambda t: bad(torch, t), x)
    check_torch(st.norm, torch.norm, make((3,), "int64"))
    check_torch(lambda t: st.norm(t, INF), lambda t: torch.norm(t, INF), make((0, 3)))
    # the nuclear norm (an SVD, symtrace.linalg) and matrix_norm's errors for strings
    check_torch(lambda t: st.norm(t, "nuc"), lambda t: torch.norm(t, "nuc"), x)
    check_torch(lambda t: st.norm(t, "nuc", dim=(0, 2), keepdim=True),
                lambda t: torch.norm(t, "nuc", dim=(0, 2), keepdim=True), make((3, 2, 4), "float64"))
    check_torch(lambda t: st.norm(t, "nuc"), lambda t: torch.norm(t, "nuc"), make((2, 3, 4)))


# ---------------- products ----------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_outer_mm_bmm(torch, layout):
    a, b = make((3,), "float32", layout), make((4,), "float64", layout)
    check_torch(st.outer, torch.outer, a, b)
    check_torch(st.ger, torch.outer, make((3,), "int64"), b)
    check_torch(lambda u, v: u.outer(v), lambda u, v: u.outer(v), a, a)
    m1, m2 = make((3, 4), "float32", layout), make((4, 5), "float32", layout)
    check_torch(st.mm, torch.mm, m1, m2)
    check_torch(lambda u, v: u.mm(v), lambda u, v: u.mm(v), m1, m2)
    b1, b2 = make((2, 3, 4), "float32", layout), make((2, 4, 5), "float32", layout)
    check_torch(st.bmm, torch.bmm, b1, b2)
    check_torch(lambda u, v: u.bmm(v), lambda u, v: u.bmm(v), b1, b2)
    check_torch(st.bmm, torch.bmm, make((2, 3, 4), "int64"), make((2, 4, 2), "int64"))


def test_products_errors_grad(torch):
    m = make((3, 4))
    for args in [(make((3, 4)), make((3,))), (make((3,)), make((3,))), (m, make((5, 2))),
                 (m, make((4, 2), "float64"))]:
        check_torch(st.outer, torch.outer, *args[:2])
        check_torch(st.mm, torch.mm, *args)
    for args in [(make((2, 3, 4)), make((2, 5, 2))), (make((3, 4)), make((2, 4, 2))),
                 (make((2, 3, 4)), make((4, 2))), (make((2, 3, 4)), make((1, 4, 2))),
                 (make((2, 3, 4)), make((2, 4, 2), "float64"))]:
        check_torch(st.bmm, torch.bmm, *args)
    grads(torch, st.outer, torch.outer, [rnd(3), rnd(4)])
    grads(torch, st.mm, torch.mm, [rnd(3, 4), rnd(4, 2)])
    grads(torch, st.bmm, torch.bmm, [rnd(2, 3, 4), rnd(2, 4, 2)])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_addmm_baddbmm(torch, layout):
    m1, m2 = make((3, 4), "float32", layout), make((4, 5), "float32", layout)
    for inp in ((3, 5), (5,), (1, 5), (3, 1), ()):
        i = make(inp, "float32", layout)
        for kw in ({}, {"beta": 0.5}, {"alpha": 2}, {"beta": 0, "alpha": -1.5}, {"beta": 2, "alpha": 0.25}):
            check_torch(lambda a, b, c: st.addmm(a, b, c, **kw), lambda a, b, c: torch.addmm(a, b, c, **kw),
                        i, m1, m2, msg=f"{inp} {kw}")
            check_torch(lambda a, b, c: a.addmm(b, c, **kw), lambda a, b, c: a.addmm(b, c, **kw), i, m1, m2)
    b1, b2 = make((2, 3, 4), "float32", layout), make((2, 4, 5), "float32", layout)
    for inp in ((2, 3, 5), (3, 5), (1, 5), ()):
        i = make(inp, "float32", layout)
        for kw in ({}, {"beta": 0.5, "alpha": 2}, {"beta": 0}):
            check_torch(lambda a, b, c: st.baddbmm(a, b, c, **kw), lambda a, b, c: torch.baddbmm(a, b, c, **kw),
                        i, b1, b2)
            check_torch(lambda a, b, c: a.baddbmm(b, c, **kw), lambda a, b, c: a.baddbmm(b, c, **kw), i, b1, b2)
    li = [make(s, "int64") for s in ((3, 5), (3, 4), (4, 5))]
    check_torch(lambda a, b, c: st.addmm(a, b, c, beta=2, alpha=3),
                lambda a, b, c: torch.addmm(a, b, c, beta=2, alpha=3), *li)


def test_addmm_nan_beta0_errors_grad(torch):
    nan_in = st.full((3, 2), float("nan"))
    r = st.addmm(nan_in, st.ones(3, 4), st.ones(4, 2), beta=0)
    assert r.tolist() == [[4.0, 4.0]] * 3
    m1, m2 = make((3, 4)), make((4, 2))
    for inp in [make((3, 3)), make((2,)), make((2, 2)), make((1, 3, 2)), make((3, 2), "float64")]:
        check_torch(st.addmm, torch.addmm, inp, m1, m2)
    check_torch(st.addmm, torch.addmm, make((3, 2)), make((4,)), m2)
    check_torch(st.addmm, torch.addmm, make((3, 2)), m1, make((5, 2)))
    check_torch(st.baddbmm, torch.baddbmm, make((3, 2)), make((2, 3, 4)), make((3, 4, 2)))
    check_torch(st.baddbmm, torch.baddbmm, make((4, 2)), make((2, 3, 4)), make((2, 4, 2)))
    li = [make(s, "int64") for s in ((3, 2), (3, 4), (4, 2))]
    check_torch(lambda a, b, c: st.addmm(a, b, c, beta=0.5), lambda a, b, c: torch.addmm(a, b, c, beta=0.5), *li)
    grads(torch, lambda a, b, c: st.addmm(a, b, c, beta=0.5, alpha=2),
          lambda a, b, c: torch.addmm(a, b, c, beta=0.5, alpha=2), [rnd(2), rnd(3, 4), rnd(4, 2)])
    grads(torch, lambda a, b, c: st.baddbmm(a, b, c, alpha=-1), lambda a, b, c: torch.baddbmm(a, b, c, alpha=-1),
          [rnd(1, 3, 2), rnd(2, 3, 4), rnd(2, 4, 2)])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_addcmul_addcdiv(torch, layout):
    x, a = make((3, 4), "float32", layout), make((4,), "float32", layout, rng=rng_for("a", layout))
    b = make((3, 1), "float32", layout, low=0.5, high=2.0)
    for value in (1, 0.5, -2):
        check_torch(lambda i, u, v: st.addcmul(i, u, v, value=value),
                    lambda i, u, v: torch.addcmul(i, u, v, value=value), x, a, b)
        check_torch(lambda i, u, v: st.addcdiv(i, u, v, value=value),
                    lambda i, u, v: torch.addcdiv(i, u, v, value=value), x, a, b)
        check_torch(lambda i, u, v: i.addcmul(u, v, value=value), lambda i, u, v: i.addcmul(u, v, value=value), x, a, b)
        check_torch(lambda i, u, v: i.addcdiv(u, v, value=value), lambda i, u, v: i.addcdiv(u, v, value=value), x, a, b)
    # promotion across the three, integer tensors, and the refused integer division
    li, lf = make((3,), "int64"), make((3,), "float64")
    check_torch(st.addcmul, torch.addcmul, li, li, li)
    check_torch(st.addcmul, torch.addcmul, li, lf, li)
    check_torch(st.addcdiv, torch.addcdiv, li, lf, li)
    check_torch(st.addcdiv, torch.addcdiv, lf, li, li)
    check_torch(st.addcmul, torch.addcmul, make((3,)), make((4,)), make((3,)))


def test_addc_inplace_grad(torch):
    x, a, b = make((3, 4)), make((3, 4)), make((4,), low=0.5, high=2)
    s, t = x.st.clone(), x.th.clone()
    assert s.addcmul_(a.st, b.st, value=0.5) is s
    assert_close(s, t.addcmul_(a.th, b.th, value=0.5))
    s.addcdiv_(a.st, b.st, value=-1)
    assert_close(s, t.addcdiv_(a.th, b.th, value=-1))
    with pytest.raises(ERRORS):      # the broadcast result must fit self, as torch
        st.zeros(4).addcmul_(a.st, b.st)
    grads(torch, lambda i, u, v: st.addcmul(i, u, v, value=0.3), lambda i, u, v: torch.addcmul(i, u, v, value=0.3),
          [rnd(3, 4), rnd(3, 1), rnd(4)])
    grads(torch, lambda i, u, v: st.addcdiv(i, u, v, value=2), lambda i, u, v: torch.addcdiv(i, u, v, value=2),
          [rnd(3, 4), rnd(4), rnd(3, 4, low=0.5, high=2)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_lerp(torch, dtype, layout):
    x, e = make((3, 4), dtype, layout), make((3, 4), dtype, layout, rng=rng_for("end", layout))
    for w in (0.0, 0.3, 0.5, 0.7, 1.0, -0.5, 2):
        check_torch(lambda a, b: st.lerp(a, b, w), lambda a, b: torch.lerp(a, b, w), x, e)
        check_torch(lambda a, b: a.lerp(b, w), lambda a, b: a.lerp(b, w), x, e)
    wt = make((4,), dtype, layout, low=-0.5, high=1.5)       # both sides of 0.5
    check_torch(st.lerp, torch.lerp, x, e, wt)
    check_torch(st.lerp, torch.lerp, x, make((2, 1, 4), dtype, layout), wt)
    check_torch(lambda a, b: st.lerp(a, b, st.tensor(0.25, dtype=st.float64)),
                lambda a, b: torch.lerp(a, b, torch.tensor(0.25, dtype=torch.float64)), x, e)


def test_lerp_inplace_grad_errors(torch):
    x, e, w = make((3, 4)), make((4,)), make((3, 4), low=-0.5, high=1.5)
    s, t = x.st.clone(), x.th.clone()
    assert s.lerp_(e.st, 0.75) is s
    assert_close(s, t.lerp_(e.th, 0.75))
    s.lerp_(e.st, w.st)
    assert_close(s, t.lerp_(e.th, w.th))
    with pytest.raises(ERRORS):
        e.st.clone().lerp_(x.st, 0.5)
    check_torch(lambda a, b: st.lerp(a, b, 0.5), lambda a, b: torch.lerp(a, b, 0.5), x, make((4,), "float64"))
    check_torch(st.lerp, torch.lerp, x, x, make((4,), "float64"))
    check_torch(lambda a, b: st.lerp(a, b, 0.5), lambda a, b: torch.lerp(a, b, 0.5), make((3,), "int64"),
                make((3,), "int64"))
    check_torch(lambda a, b: st.lerp(a, b, 0.5), lambda a, b: torch.lerp(a, b, 0.5), x, make((3,)))
    grads(torch, lambda a, b, c: st.lerp(a, b, c), lambda a, b, c: torch.lerp(a, b, c),
          [rnd(3, 4), rnd(3, 4, key=1), rnd(4, low=-0.5, high=1.5)])
    for w in (0.2, 0.8):
        grads(torch, lambda a, b: st.lerp(a, b, w), lambda a, b: torch.lerp(a, b, w), [rnd(3), rnd(3, key=2)])


@pytest.mark.parametrize("name", ["sqrt", "exp", "neg", "abs", "tanh", "sigmoid", "log", "rsqrt", "reciprocal"])
def test_unary_inplace(torch, name):
    x = make((3, 4), "float32", low=0.5, high=2.0)
    s, t = x.st.clone(), x.th.clone()
    v = s[:, 1:]                              # through a view: the base sees it
    assert getattr(v, name + "_")() is v
    getattr(t[:, 1:], name + "_")()
    assert_close(s, t)
    # int64 in place: neg_/abs_ work, the float results can't be written back (as torch)
    check_torch(lambda a: getattr(a.clone(), name + "_")(), lambda a: getattr(a.clone(), name + "_")(),
                make((3,), "int64"))
    # in place on a non-leaf keeps the gradient right
    a = st.tensor(x.np.astype(np.float32)).requires_grad_()
    b = torch.tensor(x.np.astype(np.float32), requires_grad=True)
    ys, yt = a * 2, b * 2
    getattr(ys, name + "_")()
    getattr(yt, name + "_")()
    ys.sum().backward()
    yt.sum().backward()
    assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


INPLACE_GRAD = {   # name: (symtrace in place, torch reference)
    "tril_": (lambda y: y.tril_(1), lambda y: y.tril_(1)),
    "triu_": (lambda y: y.triu_(-1), lambda y: y.triu_(-1)),
    "lerp_": (lambda y: y.lerp_(y * 3, 0.7), lambda y: y.lerp_(y * 3, 0.7)),
    "nan_to_num_": (lambda y: y.nan_to_num_(), lambda y: y.nan_to_num_()),
    "abs_": (lambda y: y.abs_(), lambda y: y.abs_()),
    "log_": (lambda y: (y * y + 1).log_(), lambda y: (y * y + 1).log_()),
    # self among the arguments: torch's saved-tensor check refuses these, symtrace
    # computes them from the values before the write (the out-of-place formula)
    "addcmul_self": (lambda y: y.addcmul_(y, y, value=0.5), lambda y: y + 0.5 * y * y),
    "lerp_self_weight": (lambda y: y.lerp_(y * 3 + 1, y), lambda y: torch_lerp(y, y * 3 + 1, y)),
}


def torch_lerp(a, b, w):
    return a + w * (b - a)


@pytest.mark.parametrize("name", list(INPLACE_GRAD))
def test_inplace_on_non_leaf_grad(torch, name):
    """In place on a tensor inside the graph: the gradient flows through the values
    before the write, as in torch."""
    fn, tfn = INPLACE_GRAD[name]
    grads(torch, lambda t: fn(t * 2 - 0.5), lambda t: tfn(t * 2 - 0.5), [rnd(3, 4, key=name)])
    if name != "log_":                          # (log_ writes into a temporary)
        with pytest.raises(RuntimeError):       # a leaf that requires grad refuses, as torch
            fn(st.ones(3, 4, requires_grad=True))


# ---------------- value queries ----------------
def test_allclose_isclose_equal(torch):
    x = make((3, 4), "float32", "transposed")
    for d, kw in [(1e-7, {}), (1e-3, {}), (1e-3, {"atol": 1e-2}), (1e-3, {"rtol": 0, "atol": 0}),
                  (0.0, {"rtol": 0, "atol": 0}), (1e-6, {"rtol": 1e-3})]:
        s2, t2 = x.st + d, x.th + d
        assert st.allclose(x.st, s2, **kw) is torch.allclose(x.th, t2, **kw)
        assert x.st.allclose(s2, **kw) is x.th.allclose(t2, **kw)
        assert_close(st.isclose(x.st, s2, **kw), torch.isclose(x.th, t2, **kw))
    vals = [0.0, float("nan"), INF, -INF, 1.0]
    a, b = st.tensor(vals), st.tensor([0.0, float("nan"), INF, INF, 1.0 + 1e-9])
    ta, tb = torch.tensor(vals), torch.tensor([0.0, float("nan"), INF, INF, 1.0 + 1e-9])
    for en in (False, True):
        assert_close(st.isclose(a, b, equal_nan=en), torch.isclose(ta, tb, equal_nan=en))
        assert st.allclose(a, a, equal_nan=en) is torch.allclose(ta, ta, equal_nan=en)
    li, lj = st.tensor([1, 2, 100]), st.tensor([1, 3, 101])
    assert_close(st.isclose(li, lj, atol=1), torch.isclose(torch.tensor([1, 2, 100]), torch.tensor([1, 3, 101]), atol=1))
    assert_close(st.isclose(li, lj, rtol=0.01), torch.isclose(torch.tensor([1, 2, 100]), torch.tensor([1, 3, 101]), rtol=0.01))
    bt = st.tensor([True, False])
    assert st.allclose(bt, bt) and not st.allclose(bt, st.tensor([True, True]))
    r = x.st[:1]                                             # broadcasting, as torch
    assert st.allclose(r.expand(3, 4), r) and not st.allclose(x.st, r)
    assert torch.allclose(x.th[:1].expand(3, 4), x.th[:1]) and not torch.allclose(x.th, x.th[:1])
    for bad in [(make((3,)), make((3,), "float64")), (make((2,)), make((3,)))]:
        check_torch(st.isclose, torch.isclose, *bad)
        with pytest.raises(ERRORS):
            st.allclose(bad[0].st, bad[1].st)
    with pytest.raises(RuntimeError, match="rtol"):
        st.isclose(x.st, x.st, rtol=-1)
    # equal: shapes, dtypes (compared by value), nan
    assert st.equal(x.st, x.st.contiguous()) is True
    assert st.equal(x.st, x.st + 1) is False
    assert st.equal(st.ones(2), st.ones(3)) is torch.equal(torch.ones(2), torch.ones(3))
    assert st.equal(st.tensor([1]), st.tensor([1.0])) is torch.equal(torch.tensor([1]), torch.tensor([1.0]))
    n = st.tensor([float("nan")])
    assert st.equal(n, n.clone()) is torch.equal(torch.tensor([float("nan")]), torch.tensor([float("nan")]))
    assert st.equal(st.zeros(0, 3), st.zeros(0, 3)) and x.st.equal(x.st)
    assert not st.equal(st.zeros(3, 1), st.zeros(1, 3))


# ---------------- movement ----------------
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_broadcast_repeat_tile(torch, dtype, layout):
    x = make((3, 4), dtype, layout)
    for size in [(3, 4), (2, 3, 4), (-1, 4), (2, -1, -1), (5, 3, 4)]:
        check_torch(lambda t: st.broadcast_to(t, size), lambda t: torch.broadcast_to(t, size), x)
        check_torch(lambda t: t.broadcast_to(size), lambda t: t.broadcast_to(size), x)
    for bad in [(4, 4), (3,), (-1, 4, 4)]:
        check_torch(lambda t: st.broadcast_to(t, bad), lambda t: torch.broadcast_to(t, bad), x)
    for reps in [(1, 1), (2, 3), (1, 3), (2, 1, 1), (0, 2), (2, 2, 3, 1), [3, 1]]:
        check_torch(lambda t: t.repeat(*reps), lambda t: t.repeat(*reps), x, msg=str(reps))
        check_torch(lambda t: t.repeat(reps), lambda t: t.repeat(reps), x)
    for bad in [(2,), (2, -1)]:
        check_torch(lambda t: t.repeat(*bad), lambda t: t.repeat(*bad), x)
    with pytest.raises(TypeError):
        x.st.repeat()
    for dims in [(2,), (), (2, 1), (1, 2, 3), [2, 2]]:
        check_torch(lambda t: st.tile(t, dims), lambda t: torch.tile(t, dims), x)
        check_torch(lambda t: t.tile(dims), lambda t: t.tile(dims), x)
    check_torch(lambda t: t.tile(2, 2), lambda t: t.tile(2, 2), x)
    check_torch(lambda t: st.tile(t, 2), lambda t: torch.tile(t, 2), x)


def test_repeat_copies_and_grad(torch):
    base = st.arange(3.0).reshape(3, 1)
    for reps in [(1, 1), (1, 4), (2, 1)]:     # a fresh tensor even when nothing repeats
        r = base.repeat(*reps)
        r.fill_(7.0)
        assert base.tolist() == [[0.0], [1.0], [2.0]]
        assert r.is_contiguous()
    assert st.tensor(5.0).repeat(()).tolist() == 5.0
    with pytest.raises(TypeError):
        st.tensor(5.0).repeat()
    assert_close(st.tensor(5.0).repeat(2, 3), torch.tensor(5.0).repeat(2, 3))
    grads(torch, lambda t: t.repeat(2, 1, 3), lambda t: t.repeat(2, 1, 3), [rnd(3, 2)])
    grads(torch, lambda t: st.tile(t.transpose(0, 1), (2,)), lambda t: torch.tile(t.transpose(0, 1), (2,)),
          [rnd(3, 2)])
    grads(torch, lambda t: st.broadcast_to(t, (2, 3, 4)), lambda t: torch.broadcast_to(t, (2, 3, 4)), [rnd(3, 1)])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_unbind_narrow(torch, layout):
    x = make((3, 4, 5), "float32", layout)
    for d in (0, 1, -1, 2):
        check_torch(lambda t: st.unbind(t, d), lambda t: torch.unbind(t, d), x)
        check_torch(lambda t: t.unbind(d), lambda t: t.unbind(d), x)
    check_torch(st.unbind, torch.unbind, x)
    for d, s, n in [(0, 0, 3), (0, 1, 2), (1, -2, 2), (-1, 4, 1), (2, 5, 0), (1, -4, 4), (0, 3, 0)]:
        check_torch(lambda t: st.narrow(t, d, s, n), lambda t: torch.narrow(t, d, s, n), x, msg=f"{d} {s} {n}")
        check_torch(lambda t: t.narrow(d, s, n), lambda t: t.narrow(d, s, n), x)
    for d, s, n in [(0, 1, 5), (0, -4, 1), (0, 4, 0), (0, 1, -1), (3, 0, 1), (-4, 0, 1)]:
        check_torch(lambda t: st.narrow(t, d, s, n), lambda t: torch.narrow(t, d, s, n), x)
    check_torch(lambda t: st.narrow(t, 0, st.tensor(1), 2), lambda t: torch.narrow(t, 0, torch.tensor(1), 2), x)
    for bad in [lambda m, t: m.unbind(t, 3), lambda m, t: m.unbind(t, -4)]:
        check_torch(lambda t: bad(st, t), lambda t: bad(torch, t), x)
    check_torch(st.unbind, torch.unbind, make(()))
    check_torch(lambda t: st.narrow(t, 0, 0, 1), lambda t: torch.narrow(t, 0, 0, 1), make(()))


def test_unbind_narrow_views_grad(torch):
    x = st.zeros(3, 4)
    st.narrow(x, 1, 1, 2).fill_(1.0)
    x.unbind(0)[2].fill_(2.0)
    assert x.tolist() == [[0, 1, 1, 0], [0, 1, 1, 0], [2, 2, 2, 2]]
    grads(torch, lambda t: st.narrow(t, 1, 1, 2) * 3, lambda t: torch.narrow(t, 1, 1, 2) * 3, [rnd(3, 4)])
    grads(torch, lambda t: st.unbind(t, 1)[0] - 2 * st.unbind(t, 1)[2],
          lambda t: torch.unbind(t, 1)[0] - 2 * torch.unbind(t, 1)[2], [rnd(3, 4)])


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_flip_roll(torch, dtype, layout):
    x = make((3, 4, 5), dtype, layout)
    for dims in [(0,), (-1,), (0, 2), (1, 0, 2), (), [1]]:
        check_torch(lambda t: st.flip(t, dims), lambda t: torch.flip(t, dims), x)
        check_torch(lambda t: t.flip(dims), lambda t: t.flip(dims), x)
    check_torch(lambda t: t.flip(0, 2), lambda t: t.flip(0, 2), x)
    for shifts, dims in [(1, 0), (-1, -1), (7, 2), ((1, 2), (0, 1)), ((-3, 5), (2, -1)), (13, None),
                         (-2, None), (0, 1), (4, 1), ((1,), (2,)), ((1, 1), (0, 0))]:
        check_torch(lambda t: st.roll(t, shifts, dims), lambda t: torch.roll(t, shifts, dims), x,
                    msg=f"{shifts} {dims}")
        check_torch(lambda t: t.roll(shifts, dims), lambda t: t.roll(shifts, dims), x)


def test_flip_roll_edges_grad_errors(torch):
    x = make((3, 4))
    for bad in [lambda m, t: m.flip(t, (0, 0)), lambda m, t: m.flip(t, (2,)), lambda m, t: m.flip(t, 0),
                lambda m, t: m.roll(t, (1, 2), 0), lambda m, t: m.roll(t, 1, (0, 1)), lambda m, t: m.roll(t, 1, 5),
                lambda m, t: m.roll(t, (), ()), lambda m, t: m.roll(t, (1, 2))]:
        check_torch(lambda t: bad(st, t), lambda t: bad(torch, t), x)
    for t0 in (make(()), make((0, 3)), make((1, 3))):
        check_torch(lambda t: st.flip(t, (0,)), lambda t: torch.flip(t, (0,)), t0)
        check_torch(lambda t: st.roll(t, 1), lambda t: torch.roll(t, 1), t0)
        check_torch(lambda t: st.roll(t, 1, 0), lambda t: torch.roll(t, 1, 0), t0)
    y = st.arange(4.0)                      # new tensors, never views of the input
    for r in (st.flip(y, ()), st.roll(y, 0, 0), st.roll(y, 4)):
        r.fill_(9.0)
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0]
    grads(torch, lambda t: st.flip(t, (0, 1)), lambda t: torch.flip(t, (0, 1)), [rnd(3, 4)])
    grads(torch, lambda t: st.roll(t, (1, -1), (0, 1)), lambda t: torch.roll(t, (1, -1), (0, 1)), [rnd(3, 4)])
    grads(torch, lambda t: st.roll(t, 5), lambda t: torch.roll(t, 5), [rnd(3, 4)])


def test_type_as_mt_nbytes(torch):
    x = make((2, 3, 4), "float32", "transposed")
    for other in (make((1,), "int64"), make((2,), "float64"), make((1,), "bool"), make((), "float32")):
        check_torch(lambda a, b: a.type_as(b), lambda a, b: a.type_as(b), x, other)
    check_torch(lambda t: t.mT, lambda t: t.mT, x)
    check_torch(lambda t: t.mH, lambda t: t.mH, make((3, 4), "float64", "strided"))
    m = x.st.mT
    assert m.stride() == tuple(x.th.mT.stride())
    m[0, 0, 0] = 42.0                        # a view
    assert x.st[0, 0, 0].item() == 42.0
    for bad in (make((3,)),):
        with pytest.raises(RuntimeError):
            bad.st.mT
        with pytest.raises(RuntimeError):
            bad.st.mH
    for shape, dt in [((2, 3), "float32"), ((5,), "float64"), ((4, 2), "int64"), ((3,), "int32"),
                      ((7,), "bool"), ((2, 2), "float16"), ((), "float32")]:
        t = make(shape, dt)
        assert t.st.nbytes == t.th.nbytes and t.st.itemsize == t.th.itemsize
    assert make((3, 4), "float32", "expanded").st.nbytes == 48   # numel * itemsize, as torch


def test_from_numpy(torch):
    for dt in (np.float32, np.float64, np.float16, np.int32, np.int64, np.bool_):
        a = (np.arange(12) % 3).astype(dt).reshape(3, 4)
        t = st.from_numpy(a)
        assert_close(t, torch.from_numpy(a))
    a = np.arange(12.0).reshape(3, 4)
    t = st.from_numpy(a)
    a[1, 2] = -5.0                            # shared memory, both ways
    assert t[1, 2].item() == -5.0
    t[0, 0] = 9.0
    assert a[0, 0] == 9.0
    v = st.from_numpy(a.T[:, ::2])            # non-contiguous arrays keep their strides
    assert tuple(v.shape) == (4, 2) and v.stride() == (1, 8)
    assert_close(v, torch.from_numpy(a.T[:, ::2]))
    assert st.from_numpy(np.array(2.5)).shape == ()
    for bad in ([1, 2], np.arange(4)[::-1], np.arange(3, dtype=np.uint16), np.zeros(2, np.complex64)):
        with pytest.raises(ERRORS):
            st.from_numpy(bad)
    with pytest.raises(ValueError, match="negative"):
        st.from_numpy(np.arange(4)[::-1])
    ro = np.arange(3.0)
    ro.setflags(write=False)
    with pytest.warns(UserWarning):
        assert st.from_numpy(ro).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "bool"])
def test_nan_to_num(torch, dtype):
    vals = [0.0, float("nan"), INF, -INF, 1.5, -2.0]
    if dtype in ("int64", "bool"):
        x = make((6,), dtype)
    else:
        x = make((6,), dtype, values=np.array(vals))
    for kw in ({}, {"nan": 1.0}, {"posinf": 100.0}, {"neginf": -7.0}, {"nan": -1, "posinf": 2, "neginf": 3}):
        check_torch(lambda t: st.nan_to_num(t, **kw), lambda t: torch.nan_to_num(t, **kw), x)
        check_torch(lambda t: t.nan_to_num(**kw), lambda t: t.nan_to_num(**kw), x)
    s, t = x.st.clone(), x.th.clone()
    assert s.nan_to_num_(nan=4.0) is s
    assert_close(s, t.nan_to_num_(nan=4.0))
    r = st.nan_to_num(x.st)
    r.fill_(0)                                 # a new tensor, also for integers
    assert_close(x.st, x.th)


def test_nan_to_num_grad_layout(torch):
    vals = np.array([[0.5, float("nan"), INF], [-INF, 1.5, -2.0]])
    x = make((2, 3), "float32", values=vals)
    check_torch(lambda t: st.nan_to_num(t.T), lambda t: torch.nan_to_num(t.T), x)
    grads(torch, lambda t: st.nan_to_num(t * 2, posinf=1.0), lambda t: torch.nan_to_num(t * 2, posinf=1.0), [vals])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cumsum(torch, dtype, layout):
    x = make((3, 4, 5), dtype, layout)
    for d in (0, 1, 2, -1, -3):
        check_torch(lambda t: st.cumsum(t, d), lambda t: torch.cumsum(t, d), x)
        check_torch(lambda t: t.cumsum(d), lambda t: t.cumsum(d), x)
        check_torch(lambda t: st.cumsum(t, dim=d, dtype=st.float64), lambda t: torch.cumsum(t, dim=d, dtype=torch.float64), x)
    check_torch(lambda t: st.cumsum(t, 3), lambda t: torch.cumsum(t, 3), x)
    check_torch(lambda t: st.cumsum(t, -4), lambda t: torch.cumsum(t, -4), x)


def test_cumsum_edges_grad(torch):
    for shape, d in [((), 0), ((), -1), ((0, 3), 0), ((0, 3), 1), ((7,), 0), ((1, 1), 1)]:
        for dt in ("float32", "int64"):
            check_torch(lambda t: st.cumsum(t, d), lambda t: torch.cumsum(t, d), make(shape, dt))
    check_torch(lambda t: st.cumsum(t, 1, dtype=st.int64), lambda t: torch.cumsum(t, 1, dtype=torch.int64),
                make((3, 4), "float32", low=-5, high=5))
    check_torch(lambda t: st.cumsum(t, 0), lambda t: torch.cumsum(t, 0), make((5, 2), "float16"), rtol=1e-2, atol=1e-2)
    big = make((4, 200), "float32")          # a longer scan: float32 within tolerance
    check_torch(lambda t: st.cumsum(t, 1), lambda t: torch.cumsum(t, 1), big, rtol=1e-4, atol=1e-4)
    large = st.tensor([2 ** 40, 3, -(2 ** 41), 5])   # exact integers (well below 2**53)
    assert st.cumsum(large, 0).tolist() == np.cumsum([2 ** 40, 3, -(2 ** 41), 5]).tolist()
    grads(torch, lambda t: st.cumsum(t, 1), lambda t: torch.cumsum(t, 1), [rnd(3, 4)])
    grads(torch, lambda t: st.cumsum(t.transpose(0, 1), 0), lambda t: torch.cumsum(t.transpose(0, 1), 0),
          [rnd(3, 4, 2)], dtype="float64", rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n", [129, 255, 256, 257, 16384 + 3, 1_000_000])
def test_cumsum_long_scans_in_blocks(torch, n):
    """Past one block (128) cumsum works in blocks: linear memory (a 1e6-long scan
    asked for 4 TB as one triangular product), the same values and gradients."""
    x = make((n,), "float64")
    check_torch(lambda t: st.cumsum(t, 0), lambda t: torch.cumsum(t, 0), x, rtol=1e-10, atol=1e-9)
    xi = make((2, n), "int64", low=-3, high=4)
    check_torch(lambda t: st.cumsum(t, 1), lambda t: torch.cumsum(t, 1), xi)
    if n < 20000:
        grads(torch, lambda t: st.cumsum(t.transpose(0, 1), 0), lambda t: torch.cumsum(t.transpose(0, 1), 0),
              [rnd(n, 2)], dtype="float64", rtol=1e-9, atol=1e-9)


# ---------------- one_hot ----------------
def test_one_hot(torch):
    F = torch.nn.functional
    idx = make((2, 3), "int64", low=0, high=4)
    check_torch(lambda t: st._ops._one_hot(t), lambda t: F.one_hot(t), idx)
    for n in (5, 7, -1):
        check_torch(lambda t: st._ops._one_hot(t, n), lambda t: F.one_hot(t, n), idx)
    check_torch(lambda t: st._ops._one_hot(t.T, 6), lambda t: F.one_hot(t.T, 6), idx)
    check_torch(lambda t: st._ops._one_hot(t, num_classes=3), lambda t: F.one_hot(t, num_classes=3),
                make((4,), "int64", values=np.array([0, 2, 1, 2])))
    check_torch(lambda t: st._ops._one_hot(t, 3), lambda t: F.one_hot(t, 3), make((0,), "int64"))
    check_torch(st._ops._one_hot, F.one_hot, make((), "int64", values=np.array(2)))
    for vals, n in [([-1, 2], -1), ([1, 2], 2), ([1, 5], 3), ([-1, 0], 3), ([1], 0), ([1], -2), ([], -1), ([], 0)]:
        check_torch(lambda t: st._ops._one_hot(t, n), lambda t: F.one_hot(t, n),
                    make((len(vals),), "int64", values=np.array(vals, dtype=np.int64)))
    check_torch(st._ops._one_hot, F.one_hot, make((3,), "int32", low=0, high=3))
    check_torch(st._ops._one_hot, F.one_hot, make((3,), "float32", low=0, high=3))


# ---------------- einsum ----------------
EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bqhd,bkhd->bhqk", [(2, 4, 3, 5), (2, 6, 3, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij,ij->ij", [(3, 4), (1, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ijk->kj", [(2, 3, 4)]),
    ("ij,kj", [(2, 3), (4, 1)]),
    ("ij,jk", [(2, 3), (1, 4)]),
    ("ba,AB", [(2, 3), (3, 2)]),
    ("Ba,ab", [(2, 3), (3, 2)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("i,i,i->", [(3,), (3,), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,kl->ijkl", [(2, 3), (4, 1)]),
    ("bij,jk->bk", [(2, 3, 4), (4, 5)]),
    ("bij,bjk->", [(1, 3, 4), (5, 4, 2)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,jk->ik", [(5, 2, 3), (3, 4)]),
    ("i...j,...j", [(2, 1, 3), (4, 3)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("b...,b...->b", [(2, 3, 4), (2, 3, 4)]),
    ("i j , j k -> i k", [(3, 4), (4, 5)]),
    ("", [()]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES, ids=[c[0] or "empty" for c in EINSUM_CASES])
def test_einsum(torch, eq, shapes):
    ops = [make(s, "float32", "transposed" if len(s) >= 2 and k % 2 else "contig", rng=rng_for(eq, k))
           for k, s in enumerate(shapes)]
    check_torch(lambda *t: st.einsum(eq, *t), lambda *t: torch.einsum(eq, *t), *ops, rtol=1e-4, atol=1e-5)
    check_torch(lambda *t: st.einsum(eq, list(t)), lambda *t: torch.einsum(eq, list(t)), *ops,
                rtol=1e-4, atol=1e-5)
    if shapes[0]:
        grads(torch, lambda *t: st.einsum(eq, *t), lambda *t: torch.einsum(eq, *t),
              [rnd(*s, key=k) for k, s in enumerate(shapes)])


def test_einsum_dtypes_errors(torch):
    for dt in ("float64", "int64"):
        a, b = make((3, 4), dt), make((4, 2), dt)
        check_torch(lambda u, v: st.einsum("ij,jk->ki", u, v), lambda u, v: torch.einsum("ij,jk->ki", u, v), a, b)
    a, b = make((2, 3)), make((3, 4))
    bad = ["ij,jk->i.k", "ij,jk->ii", "ij,jk->iz", "ij", "ij,jk,kl", "ijk,jk", "ij,jk->j->i", "i1,jk",
           "....i,jk", "i...j...,jk", "ij,jj"]
    for eq in bad:
        check_torch(lambda u, v: st.einsum(eq, u, v), lambda u, v: torch.einsum(eq, u, v), a, b, msg=eq)
    check_torch(lambda u, v: st.einsum("ij,jk", u, v), lambda u, v: torch.einsum("ij,jk", u, v), a, make((4, 4)))
    check_torch(lambda u, v: st.einsum("ij,jk", u, v), lambda u, v: torch.einsum("ij,jk", u, v), a,
                make((3, 4), "float64"))
    check_torch(lambda u, v: st.einsum("...i,...i", u, v), lambda u, v: torch.einsum("...i,...i", u, v),
                make((2, 3)), make((4, 3)))
    # a repeated subscript takes a diagonal (test_models9.py has the cases against torch)
    assert st.einsum("ii->i", st.eye(3) * 2).tolist() == [2, 2, 2]
    check_torch(lambda u, v: st.einsum("ij,jj->i", u, v), lambda u, v: torch.einsum("ij,jj->i", u, v),
                a, make((3, 3)))
    with pytest.raises(ERRORS):
        st.einsum("i")
    with pytest.raises(TypeError):
        st.einsum("i", [1, 2])


def test_einsum_one_matmul():
    """Two operands with a contraction: one matmul, the rest metadata (no mul/sum
    over a broadcast product)."""
    a, b = st.randn(2, 3, 4, 5), st.randn(2, 3, 6, 5)
    e = st.explain(lambda u, v: st.einsum("bhqd,bhkd->bhqk", u, v), a, b)
    text = str(e)
    assert e.graph_break_count == 0 and text.count("matmul(") == 1, text
    assert "mul(" not in text.replace("matmul(", "") and " sum(" not in text, text


# ---------------- inference_mode ----------------
def test_inference_mode():
    x = st.randn(3, requires_grad=True)
    assert not st.is_inference_mode_enabled()
    with st.inference_mode():
        assert not st.is_grad_enabled() and st.is_inference_mode_enabled()
        y = x * 2
        with st.inference_mode(False):         # changes nothing inside
            assert not st.is_grad_enabled()
    assert not y.requires_grad and st.is_grad_enabled() and not st.is_inference_mode_enabled()
    with st.inference_mode(False):
        assert st.is_grad_enabled() and not st.is_inference_mode_enabled()
        assert (x * 2).requires_grad

    @st.inference_mode
    def f(t):
        return t * 3, st.is_grad_enabled()

    @st.inference_mode()
    def g(t):
        return t * 3

    @st.inference_mode(mode=False)
    def h(t):
        return t * 3

    r, enabled = f(x)
    assert not enabled and not r.requires_grad and f.__name__ == "f"
    assert not g(x).requires_grad and h(x).requires_grad
    assert st.is_grad_enabled()
    with pytest.raises(ValueError):
        with st.inference_mode():
            raise ValueError("inside")
    assert st.is_grad_enabled() and not st.is_inference_mode_enabled()
    assert st.autograd.inference_mode is st.inference_mode

    def under_compile(t):
        with st.inference_mode():
            return t * 2 + 1
    out = st.compile(under_compile)(x)
    assert not out.requires_grad and out.tolist() == (x.detach() * 2 + 1).tolist()


# ---------------- under symtrace.compile ----------------
_B = st.randn(5)
_W = st.randn(4, 5)
COMPILED = {
    "tril": (lambda x: st.tril(x, -1) + x.triu(1) * 2, lambda t, x: t.tril(x, -1) + x.triu(1) * 2),
    "var": (lambda x: st.var(x, 1) + x.std(0, keepdim=True).sum(),
            lambda t, x: t.var(x, 1) + x.std(0, keepdim=True).sum()),
    "norm": (lambda x: st.norm(x) + st.norm(x, 1, dim=1) + x.norm(float("inf"), dim=-1),
             lambda t, x: t.norm(x) + t.norm(x, 1, dim=1) + x.norm(float("inf"), dim=-1)),
    "einsum": (lambda x: st.einsum("ij,kj->ik", x, x) + st.einsum("ij->j", x).sum(),
               lambda t, x: t.einsum("ij,kj->ik", x, x) + t.einsum("ij->j", x).sum()),
    "cumsum": (lambda x: st.cumsum(x, 1) - x.cumsum(0), lambda t, x: t.cumsum(x, 1) - x.cumsum(0)),
    "roll": (lambda x: st.roll(x, (1, -1), (0, 1)) + x.roll(2), lambda t, x: t.roll(x, (1, -1), (0, 1)) + x.roll(2)),
    "repeat": (lambda x: x.repeat(2, 1, 3), lambda t, x: x.repeat(2, 1, 3)),
    "lerp": (lambda x: st.lerp(x, x * 2 + 1, 0.3) + st.lerp(x, -x, 0.8),
             lambda t, x: t.lerp(x, x * 2 + 1, 0.3) + t.lerp(x, -x, 0.8)),
    "addmm": (lambda x: st.addmm(_B, x, _W, beta=0.5, alpha=2),
              lambda t, x: t.addmm(torch_of(_B, t), x, torch_of(_W, t), beta=0.5, alpha=2)),
    "flip_narrow": (lambda x: x.flip(0) + st.narrow(x, 0, 0, 3),
                    lambda t, x: x.flip(0) + t.narrow(x, 0, 0, 3)),
    "nan_to_num": (lambda x: st.nan_to_num(x / (x > 0)), lambda t, x: t.nan_to_num(x / (x > 0))),
}


def torch_of(s, torch):
    return torch.tensor(np.asarray(s.tolist(), dtype=np.float32))


@pytest.mark.parametrize("name", list(COMPILED))
def test_compiled(torch, name):
    fn, tfn = COMPILED[name]
    x = make((3, 4), "float32", "transposed")
    eager = fn(x.st)
    out = st.compile(fn)(x.st)
    assert_close(out, eager, rtol=1e-5, atol=1e-5)
    assert_close(out, tfn(torch, x.th), rtol=1e-4, atol=1e-4)
    e = st.explain(fn, x.st)
    assert e.graph_break_count == 0 and e.graph_count == 1, str(e)
    assert_close(e.out, eager, rtol=1e-5, atol=1e-5)


def test_compiled_backward():
    """The decomposed ops' gradients through a compiled function match eager's."""
    def f(x):
        return (st.cumsum(x, 1) * st.tril(x) + st.einsum("ij,kj->ik", x, x) + st.var(x, 0)).sum() \
            + st.norm(x) + st.lerp(x, x * x, 0.7).sum() + x.repeat(2, 1).sum()
    base = np.asarray(st.randn(4, 4).tolist(), dtype=np.float32)
    xe, xc = st.tensor(base).requires_grad_(), st.tensor(base).requires_grad_()
    f(xe).backward()
    st.compile(f)(xc).backward()
    assert_close(xc.grad, xe.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert st.explain(f, st.tensor(base)).graph_break_count == 0


def test_value_queries_break_the_graph():
    def f(x):
        y = x * 2
        return y + (1.0 if st.allclose(y, y) else 0.0)
    x = st.randn(3)
    e = st.explain(f, x)
    assert e.graph_break_count == 1 and "item" in e.break_reasons[0].reason
    assert_close(e.out, (x * 2 + 1).numpy())

    def g(i):
        return st._ops._one_hot(i, 4) * 2      # num_classes given: no value read under trace
    i = st.tensor([0, 3, 1])
    e = st.explain(g, i)
    assert e.graph_break_count == 0
    assert e.out.tolist() == [[2, 0, 0, 0], [0, 0, 0, 2], [0, 2, 0, 0]]


# ---------------- repeat_interleave ----------------
@pytest.mark.parametrize("repeats,dim", [(2, 1), (3, None), (1, 0), (2, -1), ("t", 1), ("t1", 0)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_repeat_interleave(torch, repeats, dim, layout):
    x = make((2, 3, 4), "float32", layout)
    if repeats == "t":
        rs, rt = st.tensor([1, 0, 2]), torch.tensor([1, 0, 2])
    elif repeats == "t1":
        rs, rt = st.tensor([3]), torch.tensor([3])
    else:
        rs = rt = repeats
    check_torch(lambda a: a.repeat_interleave(rs, dim), lambda a: a.repeat_interleave(rt, dim), x)
    check_torch(lambda a: st.repeat_interleave(a, rs, dim), lambda a: torch.repeat_interleave(a, rt, dim), x)


def test_repeat_interleave_errors_and_grad(torch):
    x = make((2, 3), "float32")
    for r, d in ((-1, 0), ([1, 2], 1)):
        with pytest.raises(ERRORS):
            st.repeat_interleave(x.st, r, d)
    with pytest.raises(ERRORS):
        st.repeat_interleave(x.st, st.tensor([1.0, 2.0]), 0)
    s = x.st.detach().requires_grad_(True)
    t = x.th.detach().requires_grad_(True)
    w = np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32)
    (s.repeat_interleave(2, 1) * st.tensor(w)).sum().backward()
    (t.repeat_interleave(2, 1) * torch.from_numpy(w)).sum().backward()
    assert_close(s.grad, t.grad)


def test_repeat_interleave_int_is_one_graph():
    def f(k):
        return k.repeat_interleave(3, dim=1) * 2.0
    k = st.randn(2, 2, 5, 4)
    st.reset()
    rep = st.explain(f, k)
    assert rep.graph_count == 1 and rep.graph_break_count == 0, str(rep)
    np.testing.assert_array_equal(st.compile(f)(k).numpy(), f(k).numpy())
