"""Small torch functions and aliases (symtrace/_ops/aliases.py and the Tensor methods
appended to symtrace/_tensor.py) against torch: clone, t, detach, select, tan, dot, vdot,
mv, inner, ravel, broadcast_tensors, broadcast_shapes, fliplr, flipud, tensor_split,
hsplit, vsplit, dsplit, split_with_sizes, bitwise_and/or/xor/not (and ^), signbit, sgn,
logit, erfinv, lgamma, digamma, the predicates, scalar_tensor, the comparison and
arithmetic aliases and their in-place forms. A table of cases compares values, dtypes,
shapes and x.grad; a table of bad calls compares exception types and messages; the
special functions are checked on grids. The tests without torch also run on the venv
without it."""
import math

import numpy as np
import pytest

import symtrace as st
from conftest import dtype_name
from tensor_data import as_list, cycle_weights, raises_as_torch, to_numpy

nan, inf = math.nan, math.inf

R = np.random.RandomState(0).uniform(-2, 2, (3, 4))
V = np.array([1.5, -2., 0.25])
INTS = np.array([5, -3, 0, 7, -(2 ** 62) - 5, 2 ** 62 + 7, -(2 ** 63), 2 ** 63 - 1])
INTS2 = np.array([3, -6, -1, 12, 2 ** 40 + 1, -(2 ** 61), -1, 12345])
I32 = np.array([5, -3, 0, 7, -(2 ** 31), 2 ** 31 - 1])
I32B = np.array([3, -6, -1, -1, -1, 12345])
BOOLS = np.array([True, False, True, False])
BOOLS2 = np.array([True, True, False, False])
GRID = np.array([-2.5, -0.5, -1e-3, 0., 1e-3, 0.3, 0.5, 0.9, 1., 1.5, 2., 3.7, 10., 40.])


class Case:
    def __init__(self, data, dtype, fn, grad=False, tol=None):
        self.data, self.dtype, self.fn, self.grad, self.tol = data, dtype, fn, grad, tol


def T(L, a, dt):
    return L.tensor(np.asarray(a), dtype=getattr(L, dt))


CASES = {
    # aliases and views
    "clone": Case(R, "float32", lambda L, x: L.clone(x), grad=True),
    "t": Case(R, "float32", lambda L, x: L.t(x), grad=True),
    "detach": Case(R, "float64", lambda L, x: L.detach(x) * 2),
    "select": Case(R, "float32", lambda L, x: L.select(x, 1, -2), grad=True),
    "absolute": Case(R, "float32", lambda L, x: (L.absolute(x), x.absolute()), grad=True),
    "positive": Case(R, "float32", lambda L, x: L.positive(x) * 1, grad=True),
    "ravel": Case(R, "float32", lambda L, x: L.ravel(x.t()), grad=True),
    "ravel_method": Case(R, "int64", lambda L, x: x.ravel()),
    "fliplr": Case(R, "float32", lambda L, x: L.fliplr(x), grad=True),
    "flipud": Case(R, "float64", lambda L, x: x.flipud(), grad=True),
    "flipud_1d": Case(V, "float32", lambda L, x: L.flipud(x)),
    # products
    "dot": Case(V, "float32", lambda L, x: L.dot(x, T(L, [1., 2., 3.], "float32")), grad=True),
    "dot_int": Case(np.array([1, 2, 3]), "int64", lambda L, x: x.dot(T(L, [4, 5, -6], "int64"))),
    "dot_half": Case(V, "float16", lambda L, x: L.dot(x, x)),
    "vdot": Case(V, "float64", lambda L, x: L.vdot(x, T(L, [1., 0.5, 2.], "float64")), grad=True),
    "mv": Case(R, "float32", lambda L, x: L.mv(x, T(L, [1., 2., 3., 4.], "float32")), grad=True),
    "mv_method": Case(R, "float64", lambda L, x: x.mv(T(L, [1., -1., 3., 0.], "float64")), grad=True),
    "inner_2d": Case(R, "float32", lambda L, x: L.inner(x, T(L, np.arange(8.).reshape(2, 4), "float32")), grad=True),
    "inner_1d": Case(V, "float32", lambda L, x: x.inner(x), grad=True),
    "inner_0d": Case(np.array(2.), "float32", lambda L, x: L.inner(x, T(L, R, "float32")), grad=True),
    "inner_3d": Case(np.arange(24.).reshape(2, 3, 4), "float64", lambda L, x: L.inner(x, x[0]), grad=True),
    # broadcasting
    "broadcast_tensors": Case(V, "float32", lambda L, x: L.broadcast_tensors(x, T(L, [[1.], [2.]], "float32"),
                                                                            T(L, 3., "float32")), grad=True),
    # splits
    "tensor_split_sections": Case(np.arange(7.), "float32", lambda L, x: L.tensor_split(x, 3), grad=True),
    "tensor_split_indices": Case(np.arange(7.), "float32", lambda L, x: L.tensor_split(x, [1, 5, 3, 10]), grad=True),
    "tensor_split_negative": Case(np.arange(7), "int64", lambda L, x: x.tensor_split([-2])),
    "tensor_split_tuple_dim1": Case(R, "float32", lambda L, x: L.tensor_split(x, (1, 3), dim=1), grad=True),
    "tensor_split_sections_dim": Case(R, "float32", lambda L, x: x.tensor_split(3, -1), grad=True),
    "tensor_split_tensor_sections": Case(np.arange(7), "int64", lambda L, x: L.tensor_split(x, L.tensor(3))),
    "tensor_split_tensor_indices": Case(np.arange(7), "int64", lambda L, x: L.tensor_split(x, L.tensor([1, 4]))),
    "tensor_split_more_than_size": Case(np.arange(2), "int64", lambda L, x: L.tensor_split(x, 4)),
    "hsplit": Case(R, "float32", lambda L, x: L.hsplit(x, 2), grad=True),
    "hsplit_1d": Case(np.arange(4.), "float32", lambda L, x: x.hsplit(2)),
    "hsplit_list": Case(R, "float32", lambda L, x: L.hsplit(x, [1, 2])),
    "vsplit": Case(np.arange(24.).reshape(4, 6), "float32", lambda L, x: L.vsplit(x, [3]), grad=True),
    "dsplit": Case(np.arange(24.).reshape(2, 3, 4), "float64", lambda L, x: x.dsplit(2), grad=True),
    "split_with_sizes": Case(R, "float32", lambda L, x: L.split_with_sizes(x, [1, 0, 2]), grad=True),
    "split_with_sizes_dim": Case(R, "float32", lambda L, x: x.split_with_sizes([3, 1], dim=-1)),
    # bitwise
    "bitwise_and_int64": Case(INTS, "int64", lambda L, x: L.bitwise_and(x, T(L, INTS2, "int64"))),
    "bitwise_or_int64": Case(INTS, "int64", lambda L, x: L.bitwise_or(x, T(L, INTS2, "int64"))),
    "bitwise_xor_int64": Case(INTS, "int64", lambda L, x: L.bitwise_xor(x, T(L, INTS2, "int64"))),
    "bitwise_and_int32": Case(I32, "int32", lambda L, x: x.bitwise_and(T(L, I32B, "int32"))),
    "bitwise_or_int32": Case(I32, "int32", lambda L, x: x.bitwise_or(T(L, I32B, "int32"))),
    "bitwise_xor_int32": Case(I32, "int32", lambda L, x: x.bitwise_xor(T(L, I32B, "int32"))),
    "bitwise_and_mixed_widths": Case(I32, "int32", lambda L, x: L.bitwise_and(x, T(L, I32B, "int64"))),
    "bitwise_and_scalar": Case(INTS, "int64", lambda L, x: (L.bitwise_and(x, 6), L.bitwise_or(-8, x),
                                                           L.bitwise_xor(x, True))),
    "bitwise_bool": Case(BOOLS, "bool", lambda L, x: (L.bitwise_and(x, T(L, BOOLS2, "bool")),
                                                     L.bitwise_or(x, T(L, BOOLS2, "bool")),
                                                     L.bitwise_xor(x, T(L, BOOLS2, "bool")), L.bitwise_not(x))),
    "bitwise_bool_int": Case(BOOLS, "bool", lambda L, x: (L.bitwise_xor(x, T(L, [1, 3, -2, 0], "int64")),
                                                         L.bitwise_and(x, 3))),
    "bitwise_broadcast": Case(np.array([[1], [6]]), "int64", lambda L, x: L.bitwise_or(x, T(L, [8, 2, 4], "int64"))),
    "bitwise_not_int": Case(INTS, "int64", lambda L, x: (L.bitwise_not(x), x.bitwise_not())),
    "bitwise_not_int32": Case(I32, "int32", lambda L, x: L.bitwise_not(x)),
    "xor_operator": Case(BOOLS, "bool", lambda L, x: (x ^ T(L, BOOLS2, "bool"), True ^ x)),
    "xor_operator_int": Case(INTS, "int64", lambda L, x: x ^ T(L, INTS2, "int64")),
    "bitwise_empty": Case(np.zeros((0, 2), np.int64), "int64", lambda L, x: L.bitwise_and(x, 3)),
    # float functions
    "tan": Case(GRID, "float32", lambda L, x: L.tan(x), grad=True),
    "tan_float64_method": Case(GRID, "float64", lambda L, x: x.tan(), grad=True),
    "tan_int": Case(np.array([1, 2, -3]), "int64", lambda L, x: L.tan(x)),
    "tan_half": Case(GRID, "bfloat16", lambda L, x: L.tan(x)),
    "signbit": Case(np.array([-0., 0., -1., 2., -inf, inf, nan]), "float32", lambda L, x: L.signbit(x)),
    "signbit_int": Case(np.array([-1, 0, 4]), "int32", lambda L, x: x.signbit()),
    "signbit_bool": Case(BOOLS, "bool", lambda L, x: L.signbit(x)),
    "sgn": Case(np.array([-2., 0., 3., nan, -inf, -0.]), "float32", lambda L, x: L.sgn(x), grad=True),
    "sgn_int": Case(np.array([-2, 0, 3]), "int64", lambda L, x: x.sgn()),
    "sgn_bool": Case(BOOLS, "bool", lambda L, x: L.sgn(x)),
    "logit": Case(np.array([0.25, 0.5, 0.9, 1e-3]), "float32", lambda L, x: L.logit(x), grad=True),
    "logit_edges": Case(np.array([0., 1., 2., -1.]), "float32", lambda L, x: L.logit(x)),
    "logit_eps": Case(np.array([0., 0.05, 0.25, 0.95, 1., 2.]), "float64", lambda L, x: L.logit(x, eps=0.1), grad=True),
    "logit_eps_negative": Case(np.array([0.3]), "float32", lambda L, x: x.logit(-1.)),
    "logit_int": Case(np.array([1, 0]), "int64", lambda L, x: L.logit(x)),
    "logit_half": Case(np.array([0.25, 0.75]), "float16", lambda L, x: L.logit(x)),
    "erfinv": Case(np.array([-1., -0.999, -0.5, 0., 1e-5, 0.3, 0.7, 0.71, 0.99, 0.999999, 1., 1.5, nan]),
                   "float32", lambda L, x: L.erfinv(x)),
    "erfinv_grad": Case(np.linspace(-0.99, 0.99, 23), "float64", lambda L, x: x.erfinv(), grad=True),
    "erfinv_int_bool": Case(np.array([0, 1, -1, 2]), "int64", lambda L, x: (L.erfinv(x), L.erfinv(x > 0))),
    "lgamma": Case(np.concatenate([GRID, [-1., -2., inf, -inf, nan, 1e-20, 1e10, 171.6]]), "float32",
                   lambda L, x: L.lgamma(x)),
    "lgamma_grad": Case(GRID[GRID != 0], "float64", lambda L, x: L.lgamma(x), grad=True),
    "lgamma_int": Case(np.array([3, 0, -2, 10]), "int64", lambda L, x: x.lgamma()),
    "digamma": Case(np.concatenate([GRID, [-0., -1., -2., inf, -inf, nan, 1e-8, -1e-8, 1e8]]), "float32",
                    lambda L, x: L.digamma(x)),
    "digamma_grad": Case(GRID[GRID != 0], "float64", lambda L, x: x.digamma(), grad=True),
    "digamma_bool": Case(BOOLS, "bool", lambda L, x: L.digamma(x)),
    "lgamma_half": Case(GRID, "float16", lambda L, x: L.lgamma(x)),
    "scalar_tensor": Case(np.array(0.), "float32", lambda L, x: (L.scalar_tensor(3), L.scalar_tensor(True),
                                                                  L.scalar_tensor(2.5, dtype=L.float64),
                                                                  L.scalar_tensor(3, dtype=L.int64),
                                                                  L.scalar_tensor(L.tensor(2)))),
    # arithmetic and comparison aliases as methods
    "method_aliases": Case(R, "float32", lambda L, x: (
        x.multiply(2.), x.subtract(T(L, V[:1], "float32"), alpha=2), x.divide(3.),
        x.divide(T(L, [2.], "float32"), rounding_mode="floor"), x.negative(), x.greater(0.), x.less(0.5),
        x.not_equal(x[0]), x.greater_equal(x[1]), x.less_equal(-0.5)), grad=True),
}




def run(L, case):
    kind = np.asarray(case.data).dtype.kind
    x = L.tensor(np.asarray(case.data, dtype=np.float64 if kind == "f" else None), dtype=getattr(L, case.dtype))
    if case.grad:
        x.requires_grad_(True)
    outs = as_list(case.fn(L, x))
    grad = None
    if case.grad:
        loss = None
        for v in outs:
            if v.dtype.is_floating_point and v.requires_grad:
                w = L.tensor(cycle_weights(tuple(v.shape)), dtype=v.dtype)
                term = (v * w).sum()
                loss = term if loss is None else loss + term
        loss.backward()
        grad = to_numpy(L.zeros_like(x) + x.grad)      # (torch's grad of sgn is a ZeroTensor)
    return outs, grad


TOL = {"float32": 2e-6, "float64": 1e-12, "float16": 1e-3, "bfloat16": 8e-3}
LOOSE_TOL = {"lgamma": 2e-6, "digamma": 2e-6, "erfinv": 2e-6, "lgamma_grad": 1e-10, "digamma_grad": 1e-8,
             "erfinv_grad": 1e-10}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_torch(name, torch):
    case = CASES[name]
    so, sg = run(st, case)
    to, tg = run(torch, case)
    assert len(so) == len(to)
    for k, (a, b) in enumerate(zip(so, to)):
        what = f"{name} output {k}"
        assert dtype_name(a.dtype) == dtype_name(b.dtype), f"{what}: dtype {a.dtype} vs {b.dtype}"
        assert tuple(a.shape) == tuple(b.shape), f"{what}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        if a.dtype.is_floating_point:
            tol = LOOSE_TOL.get(name, TOL[dtype_name(a.dtype)])
            np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=tol, atol=tol, equal_nan=True, err_msg=what)
        else:
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=what)
    if case.grad:
        tol = LOOSE_TOL.get(name, TOL[case.dtype])
        np.testing.assert_allclose(sg, tg, rtol=tol, atol=tol, equal_nan=True, err_msg=f"{name}: x.grad")


@pytest.mark.parametrize("fn,lo,hi", [("erfinv", -1.0, 1.0), ("lgamma", -30.5, 60.0), ("digamma", -30.5, 60.0),
                                      ("tan", -20.0, 20.0)])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_special_function_grids(fn, lo, hi, dt, torch):
    """Dense grids (the tails of erfinv included) against torch: ~1e-6 for float32, and
    1e-10 relative (1e-13 absolute near zeros) for float64."""
    xs = np.linspace(lo, hi, 20001)
    if fn == "erfinv":
        xs = np.concatenate([xs, 1 - np.logspace(-15 if dt == "float64" else -7, -1, 60),
                             -1 + np.logspace(-15 if dt == "float64" else -7, -1, 60)])
    a = to_numpy(getattr(st, fn)(st.tensor(xs, dtype=getattr(st, dt)))).astype(np.float64)
    b = getattr(torch, fn)(torch.tensor(xs, dtype=getattr(torch, dt))).double().numpy()
    fin = np.isfinite(b)
    np.testing.assert_array_equal(a[~fin], b[~fin])
    if dt == "float32":
        np.testing.assert_allclose(a[fin], b[fin], rtol=2e-6, atol=1e-6)
    else:
        np.testing.assert_allclose(a[fin], b[fin], rtol=1e-10, atol=1e-13)


def test_predicates_and_sizes(torch):
    for L in (st, torch):
        x = L.tensor([[1., 2.]])
        got = (L.is_same_size(x, L.zeros(1, 2)), L.is_same_size(x, L.zeros(2)), L.is_signed(x),
               L.is_signed(L.tensor([True])), L.is_signed(L.tensor([1])), L.is_complex(x),
               x.is_same_size(L.zeros(1, 2)), x.is_signed(), x.is_complex(), x.nelement(), x.ndimension())
        if L is st:
            mine = got
        else:
            assert mine == got == (True, False, True, False, True, False, True, True, False, 2, 2)


def test_broadcast_shapes_as_torch(torch):
    for shapes in [((2, 1), (3,)), (2, (3, 1)), ((), (1,)), ((1, 0), (3, 1)), ((5,), [1, 5], None), ()]:
        assert st.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))


def test_inplace_variants_as_torch(torch):
    ops = [("tan_", ()), ("logit_", ()), ("logit_", (0.2,)), ("erfinv_", ()), ("lgamma_", ()), ("digamma_", ()),
           ("sgn_", ()), ("multiply_", (2.,)), ("subtract_", (0.5,)), ("divide_", (4.,)), ("negative_", ()),
           ("absolute_", ())]
    for name, args in ops:
        outs = []
        for L in (st, torch):
            x = L.tensor([0.1, 0.4, 0.75, 0.9])
            y = getattr(x, name)(*args)
            assert y is x, name
            outs.append(to_numpy(x))
        np.testing.assert_allclose(outs[0], outs[1], rtol=2e-6, err_msg=name)
    for name, other in (("bitwise_and_", [6, 3, 12, -1]), ("bitwise_or_", [6, 3, 12, -1]),
                        ("bitwise_xor_", [6, 3, 12, -1]), ("bitwise_not_", None)):
        outs = []
        for L in (st, torch):
            x = L.tensor([5, -3, 10, 7])
            y = getattr(x, name)(*(() if other is None else (L.tensor(other),)))
            assert y is x
            outs.append(x.tolist())
        assert outs[0] == outs[1], name
    outs = []
    for L in (st, torch):
        x = L.tensor([True, False])
        x ^= L.tensor([True, True])
        outs.append(x.tolist())
        z = L.tensor([7., 8.])
        z.divide_(L.tensor([2., 3.]), rounding_mode="trunc")
        outs.append(z.tolist())
    assert outs[:2] == outs[2:]


def test_inplace_under_autograd(torch):
    grads = []
    for L in (st, torch):
        w = L.tensor([0.2, 0.5, 1.3], requires_grad=True)
        y = w * 1
        y.tan_()
        z = w * 2
        z.lgamma_()
        u = w * 0.5
        u.erfinv_()
        ((y + z + u) * L.tensor([1., 2., 3.])).sum().backward()
        grads.append(to_numpy(w.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)


# ---------------------------------------------------------------- errors
BAD = {
    "dot_size": lambda L: L.dot(L.tensor([1., 2]), L.tensor([1., 2, 3])),
    "dot_dtype": lambda L: L.dot(L.tensor([1., 2]), L.tensor([1, 2])),
    "dot_dims": lambda L: L.dot(L.ones(2, 2), L.ones(2)),
    "dot_bool": lambda L: L.dot(L.tensor([True]), L.tensor([True])),
    "vdot_dtype": lambda L: L.vdot(L.tensor([1., 2]), L.tensor([1, 2])),
    "mv_size": lambda L: L.mv(L.ones(2, 3), L.ones(2)),
    "mv_dims": lambda L: L.mv(L.ones(2, 3), L.ones(3, 1)),
    "mv_vector": lambda L: L.mv(L.ones(3), L.ones(3)),
    "mv_dtype": lambda L: L.mv(L.ones(2, 3), L.ones(3, dtype=L.float64)),
    "inner_size": lambda L: L.inner(L.ones(2, 3), L.ones(4)),
    "inner_dtype": lambda L: L.inner(L.ones(2, 3), L.ones(3, dtype=L.float64)),
    "fliplr_1d": lambda L: L.fliplr(L.ones(3)),
    "flipud_0d": lambda L: L.flipud(L.tensor(1.)),
    "tensor_split_zero": lambda L: L.tensor_split(L.arange(7), 0),
    "tensor_split_0d": lambda L: L.tensor_split(L.tensor(1), 2),
    "tensor_split_tensor_2d": lambda L: L.tensor_split(L.arange(7), L.tensor([[1, 4]])),
    "tensor_split_tensor_float": lambda L: L.tensor_split(L.arange(7), L.tensor([1.])),
    "tensor_split_dim": lambda L: L.tensor_split(L.arange(7), 2, dim=1),
    "hsplit_divisible": lambda L: L.hsplit(L.ones(2, 4), 3),
    "hsplit_zero": lambda L: L.hsplit(L.ones(2, 4), 0),
    "hsplit_0d": lambda L: L.hsplit(L.tensor(1.), 2),
    "vsplit_1d": lambda L: L.vsplit(L.ones(4), 2),
    "vsplit_divisible": lambda L: L.vsplit(L.ones(4, 2), 3),
    "dsplit_2d": lambda L: L.dsplit(L.ones(2, 2), 2),
    "dsplit_divisible": lambda L: L.dsplit(L.ones(2, 2, 4), 3),
    "split_with_sizes_sum": lambda L: L.split_with_sizes(L.arange(4), [1, 2]),
    "split_with_sizes_negative": lambda L: L.split_with_sizes(L.arange(4), [1, -1, 4]),
    "broadcast_shapes_mismatch": lambda L: L.broadcast_shapes((2, 1), (3, 4)),
    "broadcast_shapes_negative": lambda L: L.broadcast_shapes((-1,),),
    "broadcast_shapes_type": lambda L: L.broadcast_shapes("ab"),
    "broadcast_tensors_mismatch": lambda L: L.broadcast_tensors(L.ones(2, 1), L.ones(3, 2)),
    "bitwise_and_float": lambda L: L.bitwise_and(L.tensor([5, 3]), L.tensor([3., 1.])),
    "bitwise_and_float_scalar": lambda L: L.bitwise_and(L.tensor([5, 3]), 2.5),
    "bitwise_or_float": lambda L: L.bitwise_or(L.tensor([1.]), L.tensor([1.])),
    "bitwise_not_float": lambda L: L.bitwise_not(L.tensor([1.])),
    "positive_bool": lambda L: L.positive(L.tensor([True])),
    "select_index": lambda L: L.select(L.ones(2, 3), 1, 5),
    "t_3d": lambda L: L.t(L.ones(2, 3, 4)),
}
LOOSE = {"broadcast_shapes_type", "select_index"}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_as_torch(name, torch):
    raises_as_torch(BAD[name], torch, loose=name in LOOSE)


# ---------------------------------------------------------------- without torch
def test_literal_values():
    a = st.tensor([12, -7, 2 ** 62 + 3, -(2 ** 63)])
    b = st.tensor([10, 5, -1, 2 ** 63 - 1])
    assert st.bitwise_and(a, b).tolist() == [8, 1, 2 ** 62 + 3, 0]
    assert st.bitwise_or(a, b).tolist() == [14, -3, -1, -1]
    assert st.bitwise_xor(a, b).tolist() == [6, -4, -(2 ** 62) - 4, -1]
    assert st.bitwise_not(a).tolist() == [-13, 6, -(2 ** 62) - 4, 2 ** 63 - 1]
    assert (st.tensor([True, False]) ^ st.tensor([True, True])).tolist() == [False, True]
    assert [p.tolist() for p in st.tensor_split(st.arange(7), 3)] == [[0, 1, 2], [3, 4], [5, 6]]
    assert st.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert st.dot(st.tensor([1., 2.]), st.tensor([3., 4.])).item() == 11.0
    assert st.erfinv(st.tensor([0.5])).item() == pytest.approx(0.4769362762044699, rel=1e-6)
    assert st.lgamma(st.tensor([0.5], dtype=st.float64)).item() == pytest.approx(math.lgamma(0.5), rel=1e-14)
    assert st.lgamma(st.tensor([-2.5], dtype=st.float64)).item() == pytest.approx(math.lgamma(-2.5), rel=1e-13)
    assert st.digamma(st.tensor([1.0], dtype=st.float64)).item() == pytest.approx(-0.5772156649015329, rel=1e-14)
    assert st.tan(st.tensor([0.7], dtype=st.float64)).item() == pytest.approx(math.tan(0.7), rel=1e-15)
    assert st.signbit(st.tensor([-0.0, 0.0])).tolist() == [True, False]
    x = st.tensor([1., 2.])
    assert st.positive(x) is x and st.is_complex(x) is False and x.nelement() == 2


def test_bitwise_under_compile_matches_eager():
    def f(a, b):
        return st.bitwise_and(a, b) + st.bitwise_xor(a, 5), st.bitwise_not(a)

    cf = st.compile(f, backend="interp")
    a, b = st.tensor([5, -3, 12]), st.tensor([3, 6, -1])
    for u, v in zip(cf(a, b), f(a, b)):
        assert u.tolist() == v.tolist()


@pytest.mark.parametrize("dt", ["int64", "int32"])
def test_bitwise_random_against_numpy(dt):
    rs = np.random.RandomState(3)
    info = np.iinfo(dt)
    u = rs.randint(info.min, info.max, size=(50, 40), dtype=dt)
    v = rs.randint(info.min, info.max, size=(40,), dtype=dt)
    u[0, :4] = [info.min, info.max, -1, 0]
    U, V = st.tensor(u), st.tensor(v)
    for fn, ref in ((st.bitwise_and, np.bitwise_and), (st.bitwise_or, np.bitwise_or),
                    (st.bitwise_xor, np.bitwise_xor)):
        r = fn(U, V)
        assert r.dtype == getattr(st, dt)
        np.testing.assert_array_equal(r.numpy(), ref(u, v))
    np.testing.assert_array_equal(st.bitwise_not(U).numpy(), np.invert(u))


def test_and_or_invert_operators_on_integers_are_bitwise(torch):
    """& | ~ on integer tensors are bitwise as torch's; on bool tensors logical."""
    for lib_a, lib_b in ((st, torch),):
        got, want = [], []
        for lib, out in ((lib_a, got), (lib_b, want)):
            a, b, m = lib.tensor([5, -6, 0]), lib.tensor([3, 2, -1]), lib.tensor([True, False, True])
            out += [r.tolist() for r in (a & b, a | b, ~a, a & 1, 3 | a, m & m, ~m, True & m, m | False, a & m)]
        assert got == want
