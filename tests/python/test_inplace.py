# In-place ops (add_ sub_ mul_ div_ zero_ fill_ copy_ clamp_): they return self,
# modify the storage (so a view's base sees them), broadcast the other operand,
# and keep self's dtype; plus clone (a copy) and detach (shares storage).
import numpy as np
import pytest

import symtrace as st
from conftest import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_close, check_torch, make, is_float

INPLACE = {
    "add_": lambda t, o: t.add_(o), "sub_": lambda t, o: t.sub_(o), "mul_": lambda t, o: t.mul_(o),
    "div_": lambda t, o: t.div_(o), "clamp_": lambda t, o: t.clamp_(-0.5, 0.5),
    "zero_": lambda t, o: t.zero_(), "fill_": lambda t, o: t.fill_(2),
    "copy_": lambda t, o: t.copy_(o), "add_alpha": lambda t, o: t.add_(o, alpha=2),
    "add_scalar": lambda t, o: t.add_(3), "mul_scalar": lambda t, o: t.mul_(0.5),
}
NP = {
    "add_": lambda a, o: a + o, "sub_": lambda a, o: a - o, "mul_": lambda a, o: a * o,
    "div_": lambda a, o: a / o, "clamp_": lambda a, o: np.clip(a, -0.5, 0.5),
    "zero_": lambda a, o: np.zeros_like(a), "fill_": lambda a, o: np.full_like(a, 2),
    "copy_": lambda a, o: np.broadcast_to(o, a.shape), "add_alpha": lambda a, o: a + 2 * o,
    "add_scalar": lambda a, o: a + 3, "mul_scalar": lambda a, o: a * 0.5,
}


@pytest.mark.parametrize("layout", ["contig", "transposed", "strided"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_float(name, dtype, layout):
    x = make((3, 4), dtype, layout)
    o = make((4,), dtype, low=0.5, high=2)
    ptr = x.st.data_ptr()
    r = INPLACE[name](x.st, o.st)
    assert r is x.st, "in-place op must return self"
    assert x.st.data_ptr() == ptr and tuple(x.st.shape) == (3, 4)
    assert_close(x.st, NP[name](x.np, o.np), dtype=dtype)


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_modifies_view_base(name):
    base = make((4, 6), "float32")
    o = make((3,), "float32", low=0.5, high=2)
    v = base.st[1:, ::2]  # a strided view of the base
    r = INPLACE[name](v, o.st)
    assert r is v
    exp = base.np.copy()
    exp[1:, ::2] = NP[name](exp[1:, ::2], o.np)
    assert_close(base.st, exp, dtype="float32")
    # a transposed view
    base2 = make((3, 5), "float32")
    o2 = make((3,), "float32", low=0.5, high=2)
    INPLACE[name](base2.st.T, o2.st)
    exp2 = base2.np.copy()
    exp2.T[...] = NP[name](exp2.T, o2.np)
    assert_close(base2.st, exp2, dtype="float32")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_torch(torch, name, dtype):
    x = make((2, 3, 4), dtype, "transposed", low=-2, high=2)
    o = make((3, 4), dtype if name != "div_" else dtype, low=1, high=2)

    def run(t, u):
        t = t.clone()
        r = INPLACE[name](t, u)
        assert r is t
        return t
    check_torch(run, run, x, o)


def test_inplace_int_semantics(torch):
    # int tensor += float tensor keeps int? torch: result type float cannot be cast to int -> error
    x = make((3,), "int64")
    f = make((3,), "float32")
    check_torch(lambda a, b: a.clone().add_(b), lambda a, b: a.clone().add_(b), x, f)
    check_torch(lambda a, b: a.clone().div_(2), lambda a, b: a.clone().div_(2), x, f)
    # float += int is fine
    check_torch(lambda a, b: b.clone().add_(a), lambda a, b: b.clone().add_(a), x, f)
    # int *= python int stays int
    check_torch(lambda a, b: a.clone().mul_(3), lambda a, b: a.clone().mul_(3), x, f)
    # copy_ casts
    check_torch(lambda a, b: a.clone().copy_(b), lambda a, b: a.clone().copy_(b), x, f)
    check_torch(lambda a, b: b.clone().copy_(a), lambda a, b: b.clone().copy_(a), x, f)
    # broadcasting the other operand to a larger shape is an error
    y = make((3, 1), "float32")
    check_torch(lambda a, b: a.clone().add_(b), lambda a, b: a.clone().add_(b), f, y)


@pytest.mark.parametrize("dtype", INT_DTYPES + ["bool"])
def test_fill_zero_copy_ints(dtype):
    x = make((3, 4), dtype, "transposed")
    assert x.st.zero_() is x.st
    assert_close(x.st, np.zeros((3, 4)), dtype=dtype)
    v = True if dtype == "bool" else 7
    x.st.fill_(v)
    assert_close(x.st, np.full((3, 4), v), dtype=dtype)
    o = make((3, 4), dtype)
    x.st.copy_(o.st)
    assert_close(x.st, o.np, dtype=dtype)


def test_clone_and_detach():
    x = make((3, 4), "float32", "transposed")
    c = x.st.clone()
    assert c.data_ptr() != x.st.data_ptr()
    assert_close(c, x.np, dtype="float32")
    c.fill_(0)
    assert_close(x.st, x.np, dtype="float32")
    d = x.st.detach()
    d.fill_(1)
    assert_close(x.st, np.ones((3, 4)), dtype="float32")
    cc = x.st.clone()
    assert tuple(cc.shape) == (3, 4)


def test_fill_with_tensor_and_self_copy():
    x = make((2, 3), "float32")
    x.st.fill_(st.tensor(4.0))
    assert_close(x.st, np.full((2, 3), 4.0), dtype="float32")
    y = make((3, 3), "float32")
    y.st.copy_(y.st.T.clone())
    assert_close(y.st, y.np.T, dtype="float32")


def test_inplace_forms_of_out_of_place_methods_match_torch():
    torch = pytest.importorskip("torch")
    cases = [("floor_", ()), ("sin_", ()), ("cos_", ()), ("ceil_", ()), ("round_", ()),
             ("sign_", ()), ("erf_", ()), ("pow_", (2,)), ("remainder_", (0.7,)),
             ("floor_divide_", (0.7,)), ("eq_", (0.5,)), ("ge_", (0.0,)), ("lt_", (0.0,)),
             ("logical_not_", ()), ("clip_", (-0.5, 0.5)), ("cumsum_", (0,))]
    a = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    for name, args in cases:
        x, t = st.tensor(a), torch.tensor(a)
        assert getattr(x, name)(*args) is x
        getattr(t, name)(*args)
        np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
        if name in ("sin_", "cos_", "pow_", "clip_", "cumsum_", "erf_"):
            xg, tg = st.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
            y, z = xg * 1, tg * 1
            getattr(y, name)(*args)
            getattr(z, name)(*args)
            y.sum().backward()
            z.sum().backward()
            np.testing.assert_allclose(xg.grad.numpy(), tg.grad.numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=name)
    x = st.tensor([5.0, -7.0])
    x.div_(2, rounding_mode="floor")
    assert x.tolist() == [2.0, -4.0]
