"""More torch functions and Tensor methods (symtrace/_ops/extras.py, statistics.py, the
methods appended to symtrace/_tensor.py and symtrace/_settings.py) against torch: addmv, addr,
addbmm, chain_matmul, diagflat, sum_to_size, bincount, histc, histogram, histogramdd, cov,
corrcoef, renorm, unravel_index, trapezoid, trapz, cumulative_trapezoid, combinations, vander,
rsub, fill, narrow_copy, slice_scatter, index_reduce, empty_strided, as_strided, the
top-level in-place functions, apply_/map_, adjoint/H, the complex-number queries of real
tensors, dim_order, typename and the process settings (threads, default device,
determinism, matmul precision). A table of cases compares values, dtypes, shapes and the
gradients of every float input; a table of bad calls compares exception types and messages;
one compiled function using many of them is compared with eager. The tests at the end run
without torch too."""
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import symtrace as st
from conftest import dtype_name
from tensor_data import cycle_weights, raises_as_torch, to_numpy

nan, inf = math.nan, math.inf
RS = np.random.RandomState(7)
A = RS.uniform(-2, 2, (3, 4))
B = RS.uniform(-2, 2, (4, 5))
V3, V4, V5 = RS.uniform(-2, 2, 3), RS.uniform(-2, 2, 4), RS.uniform(-2, 2, 5)
POS = RS.uniform(0.5, 2, (3, 4))
DATA = RS.standard_normal(60)
PTS = RS.standard_normal((40, 2))


class Case:
    """inputs: (array, dtype name) pairs, made into tensors of both libraries; fn(L, *xs);
    grad: every float input requires grad and the gradients are compared too."""
    def __init__(self, inputs, fn, grad=False, tol=None):
        self.inputs, self.fn, self.grad, self.tol = inputs, fn, grad, tol


def T(L, a, dt="float32"):
    return L.tensor(np.asarray(a), dtype=getattr(L, dt))


def f32(*arrays):
    return [(a, "float32") for a in arrays]


def f64(*arrays):
    return [(a, "float64") for a in arrays]


def flat(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in flat(x)]
    return [out]


CASES = {
    # products
    "addmv": Case(f32(V3, A, V4), lambda L, i, m, v: L.addmv(i, m, v, beta=0.5, alpha=2), grad=True),
    "addmv_method_0d": Case(f64(np.array(1.5), A, V4), lambda L, i, m, v: i.addmv(m, v), grad=True),
    "addmv_beta0_nan": Case(f32(np.array([nan, 1., 2.]), A, V4), lambda L, i, m, v: L.addmv(i, m, v, beta=0)),
    "addmv_int": Case([(np.array([1, 2, 3]), "int64"), (np.arange(12).reshape(3, 4), "int64"),
                       (np.array([1, -1, 2, 0]), "int64")],
                      lambda L, i, m, v: L.addmv(i, m, v, beta=0.5, alpha=3)),
    "addr": Case(f32(A, V3, V4), lambda L, i, a, b: L.addr(i, a, b, beta=2, alpha=-0.5), grad=True),
    "addr_broadcast_method": Case(f64(V4, V3, V4), lambda L, i, a, b: i.addr(a, b), grad=True),
    "addr_promote": Case([(np.arange(12).reshape(3, 4), "int64"), (V3, "float32"), (V4, "float64")],
                         lambda L, i, a, b: L.addr(i, a, b)),
    "addr_int": Case([(np.arange(12).reshape(3, 4), "int64"), (np.array([1, 2, 3]), "int64"),
                      (np.array([4, 5, 6, 7]), "int64")], lambda L, i, a, b: L.addr(i, a, b, beta=2, alpha=3)),
    "addr_bool": Case([(np.array([[True, False, False], [False, False, True]]), "bool"),
                       (np.array([True, False]), "bool"), (np.array([True, False, True]), "bool")],
                      lambda L, i, a, b: (L.addr(i, a, b), L.addr(i, a, b, beta=False), L.addr(i, a, b, alpha=0))),
    "addbmm": Case(f32(RS.uniform(-1, 1, (2, 5)), RS.uniform(-1, 1, (3, 2, 4)), RS.uniform(-1, 1, (3, 4, 5))),
                   lambda L, i, a, b: L.addbmm(i, a, b, beta=0.5, alpha=2), grad=True),
    "addbmm_method_broadcast": Case(f64(V5, RS.uniform(-1, 1, (3, 2, 4)), RS.uniform(-1, 1, (3, 4, 5))),
                                    lambda L, i, a, b: i.addbmm(a, b), grad=True),
    "addbmm_int": Case([(np.ones((2, 4)), "int64"), (np.arange(30).reshape(3, 2, 5), "int64"),
                        (np.arange(60).reshape(3, 5, 4), "int64")], lambda L, i, a, b: L.addbmm(i, a, b, alpha=2)),
    "chain_matmul_4": Case(f64(RS.uniform(-1, 1, (2, 3)), RS.uniform(-1, 1, (3, 6)), RS.uniform(-1, 1, (6, 2)),
                               RS.uniform(-1, 1, (2, 4))), lambda L, *m: L.chain_matmul(*m), grad=True),
    "chain_matmul_3": Case(f32(RS.uniform(-1, 1, (5, 2)), RS.uniform(-1, 1, (2, 6)), RS.uniform(-1, 1, (6, 3))),
                           lambda L, *m: L.chain_matmul(*m), grad=True),
    "chain_matmul_1_2": Case(f32(A, B), lambda L, a, b: (L.chain_matmul(a), L.chain_matmul(a, b)), grad=True),
    # structure
    "diagflat": Case(f32(A), lambda L, x: (L.diagflat(x), x.diagflat(-2), L.diagflat(x[0], 1)), grad=True),
    "diagflat_int": Case([(np.array([[1, 2], [3, 4]]), "int64")], lambda L, x: L.diagflat(x, 1)),
    # (torch's vander cannot backward: its cumprod reads a tensor it wrote in place; see test_vander_grad)
    "vander": Case(f32(np.array([0.5, -1.5, 2., 1.25])), lambda L, x: (L.vander(x), L.vander(x, 3, True),
                                                                       L.vander(x, N=1), L.vander(x, 0))),
    "vander_int_bool_half": Case([(np.array([1, 2, -3]), "int32"), (np.array([True, False]), "bool"),
                                  (np.array([1.5, 2.]), "float16")],
                                 lambda L, a, b, c: (L.vander(a), L.vander(b, 3), L.vander(c, increasing=True))),
    "combinations": Case(f32(V4), lambda L, x: (L.combinations(x), L.combinations(x, 3),
                                                 L.combinations(x, 2, with_replacement=True),
                                                 L.combinations(x, 1), L.combinations(x, 0), L.combinations(x, 5)),
                         grad=True),
    "combinations_int_empty": Case([(np.array([3, 1, 2]), "int64"), (np.zeros(0), "int64")],
                                   lambda L, x, e: (L.combinations(x, 3, True), L.combinations(e),
                                                    L.combinations(e, 2, True))),
    "unravel_index": Case([(np.array([4, 1, 7, -1, -12]), "int64"), (np.array([[3, -2]]), "int32")],
                          lambda L, i, j: (L.unravel_index(i, (3, 4)), L.unravel_index(j, [2, 3, 1]),
                                           L.unravel_index(i, 5), L.unravel_index(i[0], (2, 2, 2)),
                                           L.unravel_index(i[0], ()))),
    # renorm
    "renorm": Case(f32(A), lambda L, x: (L.renorm(x, 2, 0, 1.5), x.renorm(1, 1, 2.0), L.renorm(x, inf, -1, 1.0),
                                         L.renorm(x, 3, 0, 100.)), grad=True),
    "renorm_half_3d": Case([(RS.uniform(-2, 2, (2, 3, 4)), "float16")], lambda L, x: L.renorm(x, 2, 1, 1.0),
                           tol=2e-3),
    # integration
    "trapezoid": Case(f32(A, np.array([0., 1., 3., 4.5])),
                      lambda L, y, x: (L.trapezoid(y), L.trapezoid(y, dx=0.5, dim=0), L.trapezoid(y, x),
                                       L.trapz(y, x), L.trapz(y, dx=2), L.trapz(y, dim=0)), grad=True),
    "trapezoid_x_2d": Case(f64(A, RS.uniform(0, 4, (3, 4)), RS.uniform(0, 4, (1, 4))),
                           lambda L, y, x, xb: (L.trapezoid(y, x), L.trapezoid(y, xb), L.trapezoid(y, x, dim=0)),
                           grad=True),
    "trapezoid_int_empty": Case([(np.array([[1, 2, 4], [3, 1, 1]]), "int64"), (np.ones((2, 0)), "float32"),
                                 (np.ones((2, 0)), "int64")],
                                lambda L, y, e, ei: (L.trapezoid(y), L.trapezoid(y, dx=2), L.trapezoid(e),
                                                     L.trapezoid(ei), L.trapezoid(e, T(L, np.zeros(0))),
                                                     L.trapezoid(y, T(L, [0, 1, 3], "int64")))),
    "cumulative_trapezoid": Case(f32(A, np.array([0., 1., 3., 4.5])),
                                 lambda L, y, x: (L.cumulative_trapezoid(y), L.cumulative_trapezoid(y, x),
                                                  L.cumulative_trapezoid(y, dx=2, dim=0)), grad=True),
    "cumulative_trapezoid_int_empty": Case([(np.array([1, 2, 4]), "int64"), (np.ones((2, 0)), "float32")],
                                           lambda L, y, e: (L.cumulative_trapezoid(y), L.cumulative_trapezoid(e))),
    # small ones
    "rsub": Case(f32(A, V4), lambda L, x, y: (L.rsub(x, y, alpha=2), L.rsub(x, 5), L.rsub(x, 1.5, alpha=-1)),
                 grad=True),
    "rsub_int": Case([(np.array([1, 2]), "int64")], lambda L, x: (L.rsub(x, 5), L.rsub(x, 5.5), L.rsub(x, 3, alpha=2))),
    "fill": Case(f32(A, np.array(2.5)), lambda L, x, v: (L.fill(x, 3), L.fill(x, v), L.fill(x, True)), grad=True),
    "fill_int": Case([(np.array([1, 2]), "int64")], lambda L, x: (L.fill(x, 3.7), L.fill(x, T(L, 2.)))),
    "narrow_copy": Case(f32(A), lambda L, x: (L.narrow_copy(x, 1, 1, 2), x.narrow_copy(0, 2, 1)), grad=True),
    # (torch's gradient of a negative start is zero, a torch bug: values only)
    "narrow_copy_negative_start": Case(f32(A), lambda L, x: x.narrow_copy(0, -1, 1)),
    "slice_scatter_method": Case(f32(A, np.ones((3, 2))), lambda L, x, s: (x.slice_scatter(s, 1, 0, 4, 2),
                                                                            L.slice_scatter(x, s, dim=1, start=2)),
                                 grad=True),
    "sum_to_size": Case(f32(RS.uniform(-1, 1, (2, 3, 4))),
                        lambda L, x: (x.sum_to_size(3, 1), x.sum_to_size((1, 4)), x.sum_to_size(2, 3, 4) * 1,
                                      x.sum_to_size(1, 1, 1), x.sum_to_size(4)), grad=True),
    "index_reduce": Case(f32(A[:, :2], np.array([[2., 1.], [4., 3.], [1., 7.], [0.5, 2.5]])),
                         lambda L, x, s: tuple(L.index_reduce(x, 0, L.tensor([0, 2, 0, 0]), s, r, include_self=i)
                                               for r in ("prod", "mean", "amax", "amin") for i in (True, False)),
                         grad=True, tol=2e-5),
    "index_reduce_dim1_method": Case(f64(A, RS.uniform(-1, 1, (3, 2))),
                                     lambda L, x, s: x.index_reduce(1, L.tensor([3, 1], dtype=L.int32), s, "mean"),
                                     grad=True),
    "index_reduce_int": Case([(np.array([[1, 2], [3, 4], [5, 6]]), "int64"),
                              (np.array([[2, 1], [4, 3], [1, 7], [2, 2]]), "int64")],
                             lambda L, x, s: tuple(L.index_reduce(x, 0, L.tensor([0, 2, 0, 0]), s, r, include_self=i)
                                                   for r in ("prod", "mean", "amax", "amin") for i in (True, False))),
    # counting
    "bincount": Case([(np.array([1, 3, 3, 0, 7]), "int64"), (np.array([2, 0, 2]), "int32")],
                     lambda L, x, y: (L.bincount(x), L.bincount(x, minlength=10), y.bincount(),
                                      L.bincount(y, None, 2))),
    "bincount_weights": Case([(np.array([1, 3, 3, 0]), "int64"), (np.array([.5, 1., 2., -1.]), "float32"),
                              (np.array([.5, 1., 2., -1.]), "float64"), (np.array([1, 2, 3, 4]), "int64"),
                              (np.array([True, False, True, True]), "bool")],
                             lambda L, x, a, b, c, d: (L.bincount(x, a), x.bincount(b, 6), L.bincount(x, c),
                                                       L.bincount(x, d))),
    "bincount_empty": Case([(np.zeros(0), "int64"), (np.zeros(0), "float32")],
                           lambda L, x, w: (L.bincount(x), L.bincount(x, minlength=3), L.bincount(x, w, 2))),
    "histc": Case(f32(DATA, np.array([1., 1., 1.]), np.array([[1., 2.], [0., 3.]]), np.zeros(0)),
                  lambda L, x, c, m, e: (L.histc(x, 7), L.histc(x, 4, -1, 1), x.histc(bins=5, min=-0.5, max=3),
                                         L.histc(c, 4), L.histc(m, 3), L.histc(e, 3))),
    "histc_f64_half": Case([(DATA, "float64"), (np.array([1., 2., 1., 0.5]), "float16")],
                           lambda L, x, h: (L.histc(x, 13), L.histc(h, 4, 0, 3))),
    "histc_nan_in_range": Case(f32(np.array([1., nan, 2., -inf, inf])), lambda L, x: L.histc(x, 3, 0, 3)),
    "histogram": Case(f32(DATA, RS.uniform(0, 1, 60), np.array([-1., 0., 0.5, 2.])),
                      lambda L, x, w, e: (L.histogram(x, 6), L.histogram(x, 4, range=(-1., 1.)),
                                          L.histogram(x, 5, weight=w), L.histogram(x, 5, range=(-1, 2), weight=w,
                                                                                   density=True),
                                          x.histogram(e), L.histogram(x, e, weight=w, density=True),
                                          x.histogram(3, density=True))),
    "histogram_edges_cases": Case(f32(np.array([1., 2., 1., 5., -1., 2.5, 3.]), np.array([0., 1., 2.5, 3.]),
                                      np.array([1., 1.]), np.array([[1., 2.], [0., 3.]]), np.zeros(0)),
                                  lambda L, x, e, c, m, z: (L.histogram(x, e), L.histogram(c, 4), L.histogram(m, 3),
                                                            L.histogram(z, 2))),
    "histogram_f64": Case(f64(DATA), lambda L, x: L.histogram(x, 9, range=(-2.5, 2.5))),
    "histogramdd": Case(f32(PTS, RS.uniform(0, 1, 40)),
                        lambda L, p, w: (L.histogramdd(p, [3, 4]), L.histogramdd(p, 2, range=[-1., 1., -1., 1.],
                                                                                  density=True),
                                         L.histogramdd(p, [2, 3], weight=w),
                                         L.histogramdd(p, [T(L, [-2., 0., 2.]), T(L, [-1., 0., 0.5, 3.])]))),
    "histogramdd_3d": Case(f32(RS.standard_normal((4, 5, 3)), RS.uniform(0, 1, (4, 5))),
                           lambda L, p, w: L.histogramdd(p, [2, 3, 2], weight=w, density=True)),
    # covariance
    "cov": Case(f32(A), lambda L, x: (L.cov(x), x.cov(correction=0), L.cov(x[0]), L.cov(x, correction=3)),
                grad=True),
    "cov_weights": Case([(A, "float32"), (np.array([1, 2, 0, 3]), "int64"), (np.array([1., 2., 0.5, 0.25]), "float32")],
                        lambda L, x, fw, aw: (L.cov(x, fweights=fw), L.cov(x, aweights=aw),
                                              L.cov(x, fweights=fw, aweights=aw), L.cov(x, correction=0, aweights=aw),
                                              x.cov(fweights=fw, aweights=aw, correction=2)), grad=True, tol=1e-5),
    "cov_int_half_f64w": Case([(np.array([[1, 2, 4], [3, 1, 1]]), "int64"), (A[:2, :3], "float16"),
                               (A, "float32"), (np.array([1., 2., 0.5, 0.25]), "float64")],
                              lambda L, i, h, x, w: (L.cov(i), L.cov(h), L.cov(x, aweights=w)), tol=3e-3),
    "cov_one_observation": Case([(A[:, :1], "float32"), (np.array([2]), "int64"), (np.array([1.5]), "float32")],
                                lambda L, x, fw, aw: (L.cov(x, fweights=fw), L.cov(x, aweights=aw),
                                                      L.cov(x, fweights=fw, aweights=aw, correction=0))),
    "corrcoef": Case(f32(A), lambda L, x: (L.corrcoef(x), x.corrcoef(), L.corrcoef(x[1])), grad=True),
    "corrcoef_int_const": Case([(np.array([[1, 2, 4], [3, 1, 1], [2, 2, 2]]), "int64")], lambda L, x: L.corrcoef(x)),
    # views and queries
    "adjoint_conj": Case(f32(RS.uniform(-1, 1, (2, 3, 4))),
                         lambda L, x: (L.adjoint(x), x.adjoint(), x[0].H, L.conj(x), x.conj_physical(),
                                       L.resolve_conj(x), L.resolve_neg(x), L.conj_physical(x)), grad=True),
    "as_strided": Case(f32(A), lambda L, x: (L.as_strided(x, (2, 2), (1, 2)), L.as_strided(x, (3,), (4,), 1)),
                       grad=True),
}

TOL = {"float32": 2e-6, "float64": 1e-12, "float16": 1e-3, "bfloat16": 8e-3}


def run(L, case):
    xs = []
    for a, dt in case.inputs:
        a = np.asarray(a)
        x = L.tensor(a.astype(np.float64) if a.dtype.kind == "f" else a, dtype=getattr(L, dt))
        if case.grad and x.dtype.is_floating_point:
            x.requires_grad_(True)
        xs.append(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = flat(case.fn(L, *xs))
    grads = None
    if case.grad:
        loss = None
        for v in outs:
            if isinstance(v, L.Tensor) and v.dtype.is_floating_point and v.requires_grad:
                term = (v * L.tensor(cycle_weights(tuple(v.shape)), dtype=v.dtype)).sum()
                loss = term if loss is None else loss + term
        loss.backward()
        grads = [None if x.grad is None else to_numpy(L.zeros_like(x) + x.grad) for x in xs]
    return outs, grads


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_torch(name, torch):
    case = CASES[name]
    so, sg = run(st, case)
    to, tg = run(torch, case)
    assert len(so) == len(to), name
    for k, (a, b) in enumerate(zip(so, to)):
        what = f"{name} output {k}"
        if not isinstance(b, torch.Tensor):
            assert a == b, what
            continue
        assert dtype_name(a.dtype) == dtype_name(b.dtype), f"{what}: dtype {a.dtype} vs {b.dtype}"
        assert tuple(a.shape) == tuple(b.shape), f"{what}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        if a.dtype.is_floating_point:
            tol = case.tol or TOL[dtype_name(a.dtype)]
            np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=tol, atol=tol, equal_nan=True, err_msg=what)
        else:
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=what)
    if case.grad:
        for k, (a, b) in enumerate(zip(sg, tg)):
            assert (a is None) == (b is None), f"{name}: grad of input {k} is {a} vs {b}"
            if a is not None:
                tol = case.tol or TOL[case.inputs[k][1]]
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True, err_msg=f"{name}: grad {k}")


def test_results_without_grad_as_torch(torch):
    """histc carries no gradient; fill/adjoint/conj keep the history. (torch's bincount and
    histogram results require grad but their backward raises; symtrace's carry none.)"""
    got = []
    for L in (st, torch):
        x = L.tensor([0.5, 1.5, 2.5], requires_grad=True)
        got.append([L.histc(x, 3).requires_grad, L.fill(x, 2.).requires_grad,
                    L.adjoint(x.reshape(1, 3)).requires_grad, L.conj(x) is x, x.resolve_neg() is x])
    assert got[0] == got[1] == [False, True, True, True, True]
    x = st.tensor([0.5, 1.5, 2.5], requires_grad=True)
    assert not st.histogram(x, 2).hist.requires_grad and not st.bincount(st.tensor([0, 1, 1]), x).requires_grad


def test_vander_grad():
    """d/dx of x ** k is k x ** (k - 1) (torch's vander cannot backward)."""
    xs = np.array([0.5, -1.5, 2., 1.25])
    x = st.tensor(xs, dtype=st.float64, requires_grad=True)
    w = cycle_weights((4, 4))
    (st.vander(x) * st.tensor(w)).sum().backward()
    powers = np.arange(3, -1, -1)
    want = (w * powers * xs[:, None] ** np.maximum(powers - 1, 0)).sum(1)
    np.testing.assert_allclose(to_numpy(x.grad), want, rtol=1e-12)


# ---------------------------------------------------------------- in place
INPLACE_TOP = [("abs_", ()), ("acos_", ()), ("acosh_", ()), ("arccos_", ()), ("arccosh_", ()), ("arcsin_", ()),
               ("arcsinh_", ()), ("arctan_", ()), ("arctanh_", ()), ("asin_", ()), ("asinh_", ()), ("atan_", ()),
               ("atanh_", ()), ("ceil_", ()), ("clamp_", (0.3, 0.6)), ("clamp_max_", (0.5,)),
               ("clamp_min_", (0.5,)), ("clip_", (None, 0.4)), ("cos_", ()), ("cosh_", ()), ("deg2rad_", ()),
               ("erf_", ()), ("exp2_", ()), ("exp_", ()), ("expm1_", ()), ("fix_", ()), ("floor_", ()),
               ("frac_", ()), ("log10_", ()), ("log1p_", ()), ("log2_", ()), ("log_", ()), ("logit_", ()),
               ("logit_", (0.2,)), ("nan_to_num_", ()), ("neg_", ()), ("negative_", ()), ("rad2deg_", ()),
               ("reciprocal_", ()), ("relu_", ()), ("round_", ()), ("rsqrt_", ()), ("sigmoid_", ()), ("sin_", ()),
               ("sinc_", ()), ("sinh_", ()), ("sqrt_", ()), ("square_", ()), ("tan_", ()), ("tanh_", ()),
               ("trunc_", ()), ("xlogy_", (2.5,)), ("fill_", (1.25,)), ("zero_", ())]


def test_top_level_inplace_as_torch(torch):
    base = [0.1, 0.45, 0.75, 2.5, -0.3]
    for name, args in INPLACE_TOP:
        outs = []
        for L in (st, torch):
            x = L.tensor(base)
            assert getattr(L, name)(x, *args) is x, name
            outs.append(to_numpy(x))
        np.testing.assert_allclose(outs[0], outs[1], rtol=2e-6, atol=1e-7, equal_nan=True, err_msg=name)
    outs = []
    for L in (st, torch):
        x = L.zeros(3, 2)
        L.index_put_(x, (L.tensor([0, 2]), L.tensor([1, 0])), L.tensor([5., 6.]))
        y = L.tensor([1., 2., 3.])
        L.addmv_(y, L.ones(3, 2), L.tensor([1., 2.]), alpha=2)
        z = L.arange(6.)
        L.as_strided_(z, (2, 2), (1, 2), 1)
        outs.append([to_numpy(x), to_numpy(y), to_numpy(z.contiguous()), tuple(z.stride())])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_inplace_methods_as_torch(torch):
    res = []
    for L in (st, torch):
        w = L.tensor([[0.5, -1.0], [2.0, 1.5], [0.3, 0.2]], requires_grad=True)
        y = w * 1
        assert y.renorm_(2, 0, 1.0) is y
        a = L.tensor([1., 2., 3.], requires_grad=True)
        z = a * 2
        assert z.addmv_(w, L.tensor([1., -1.]), beta=0.5) is z
        m = (w * 1).t().contiguous()
        assert m.addr_(L.tensor([1., 2.]), a, alpha=0.5) is m
        q = L.ones(2, 5) * a.sum()
        assert q.addbmm_(L.ones(3, 2, 4), L.ones(3, 4, 5) * 0.5) is q
        r = w * 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert r.index_reduce_(0, L.tensor([0, 0]), L.tensor([[2., 3.], [4., 0.5]]), "amax",
                                   include_self=False) is r
        loss = (y * 2).sum() + (z * L.tensor([1., 2., 3.])).sum() + (m * 3).sum() + q.sum() + (r * r).sum()
        loss.backward()
        res.append([to_numpy(t) for t in (y, z, m, q, r, w.grad, a.grad)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_apply_map_as_torch(torch):
    outs = []
    for L in (st, torch):
        x = L.tensor([[1., 2.], [3., 4.]])
        x[:, 1].apply_(lambda v: v * 10 + 1)                    # through a view: writes the base
        i = L.tensor([1, 2, 3]).apply_(lambda v: v / 2)        # int dtype truncates
        m = L.tensor([[1., 2.], [3., 4.]]).map_(L.tensor([10., 20.]), lambda a, b: a * b - 1)
        outs.append([x.tolist(), i.tolist(), m.tolist(), str(i.dtype).split(".")[-1]])
    assert outs[0] == outs[1]
    for case in (lambda L: L.ones(2, requires_grad=True).apply_(lambda v: v),
                 lambda L: L.ones(2).apply_(lambda v: "a"),
                 lambda L: L.ones(2).map_(L.ones(2, dtype=L.int64), lambda a, b: a)):
        raises_as_torch(case, torch, loose=True)


# ---------------------------------------------------------------- queries and settings
def test_queries_as_torch(torch):
    outs = []
    for L in (st, torch):
        x = L.ones(2, 3)
        o = [x.is_cpu, x.get_device(), L.get_device(x), L.is_conj(x), L.is_neg(x), x.is_conj(), x.is_neg(),
             x.is_inference(), L.is_inference(x), L.is_storage(x), L.is_storage(1)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = L.tensor(2.)
            o += [s.H is s, x.conj_physical_() is x, L.conj_physical_(x) is x]
        o += [L.typename(L.ones(1, dtype=getattr(L, d))).split(".", 1)[1]
              for d in ("float32", "float64", "float16", "bfloat16", "int32", "int64", "bool")]
        o += [L.typename(1), L.typename(len), L.typename(L.nn.Linear).split(".", 1)[1],
              L.typename(L.nn.Linear(1, 1)).split(".", 1)[1], L.typename(None), L.typename(math.sqrt)]
        outs.append(o)
    assert outs[0] == outs[1]
    with pytest.warns(UserWarning, match="deprecated on 0-D"):
        st.tensor(1.).H


@pytest.mark.parametrize("layout", ["contig", "t", "perm", "cl", "expand", "ones", "scalar", "vec", "equal"])
def test_dim_order_as_torch(layout, torch):
    def make(L):
        x = L.zeros(2, 3, 4, 5)
        return {"contig": x, "t": x[0].transpose(0, 2), "perm": x.permute(2, 0, 3, 1),
                "cl": x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
                "expand": L.zeros(3, 1, 4).expand(3, 2, 4),
                "ones": L.zeros(2, 1, 4), "scalar": L.tensor(1.), "vec": L.zeros(3)[::2],
                "equal": L.zeros(12).as_strided((3, 4), (1, 1))}[layout]
    for check in (False, True, []):
        got = []
        for L in (st, torch):
            try:
                got.append(make(L).dim_order(ambiguity_check=check))
            except RuntimeError as e:
                got.append(("error", str(e)))
        assert got[0] == got[1], (layout, check, got)
    raises_as_torch(lambda L: make(L).dim_order(ambiguity_check="x"), torch)


@pytest.fixture
def restore_settings():
    from symtrace import _settings
    from symtrace._ops import creation
    env = os.environ.get("SYMTRACE_NUM_THREADS")
    saved = (dict(_settings._threads), dict(_settings._det), list(_settings._precision), creation._DEFAULT_DEVICE)
    yield
    _settings._threads.update(saved[0])
    _settings._det.update(saved[1])
    _settings._precision[:] = saved[2]
    creation._DEFAULT_DEVICE = saved[3]
    if env is None:
        os.environ.pop("SYMTRACE_NUM_THREADS", None)
    else:
        os.environ["SYMTRACE_NUM_THREADS"] = env


def test_settings_as_torch(torch, restore_settings):
    t_state = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled(),
               torch.is_deterministic_algorithms_warn_only_enabled(), torch.get_float32_matmul_precision())
    try:
        steps = [lambda L: L.get_float32_matmul_precision(), lambda L: L.set_float32_matmul_precision("medium"),
                 lambda L: L.get_float32_matmul_precision(), lambda L: L.set_float32_matmul_precision("bad"),
                 lambda L: L.get_float32_matmul_precision(), lambda L: L.set_float32_matmul_precision("highest"),
                 lambda L: L.are_deterministic_algorithms_enabled(), lambda L: L.get_deterministic_debug_mode(),
                 lambda L: L.use_deterministic_algorithms(True, warn_only=True),
                 lambda L: (L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled(),
                            L.get_deterministic_debug_mode()),
                 lambda L: L.set_deterministic_debug_mode("error"),
                 lambda L: (L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled(),
                            L.get_deterministic_debug_mode()),
                 lambda L: L.use_deterministic_algorithms(False),
                 lambda L: (L.are_deterministic_algorithms_enabled(), L.get_deterministic_debug_mode()),
                 lambda L: L.set_num_threads(3), lambda L: L.get_num_threads()]
        for k, step in enumerate(steps):
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                got = [step(st)]
                nw = len(ws)
                got.append(step(torch))
            assert got[0] == got[1] and len(ws) == 2 * nw, (k, got, [str(w.message) for w in ws])
        assert os.environ["SYMTRACE_NUM_THREADS"] == "3"
        for case in (lambda L: L.set_num_threads(0), lambda L: L.set_num_threads(1.5),
                     lambda L: L.set_num_interop_threads(-1), lambda L: L.use_deterministic_algorithms(1),
                     lambda L: L.set_deterministic_debug_mode("bad"), lambda L: L.set_deterministic_debug_mode(3),
                     lambda L: L.set_deterministic_debug_mode(1.0), lambda L: L.set_float32_matmul_precision(1)):
            raises_as_torch(case, torch)
    finally:
        torch.set_num_threads(t_state[0])
        torch.use_deterministic_algorithms(t_state[1], warn_only=t_state[2])
        torch.set_float32_matmul_precision(t_state[3])


def test_interop_threads_once(restore_settings):
    from symtrace import _settings
    _settings._threads.update(interop=None, interop_locked=False)
    assert st.get_num_interop_threads() == os.sysconf("SC_NPROCESSORS_ONLN")
    st.set_num_interop_threads(3)
    assert st.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        st.set_num_interop_threads(2)


def test_set_num_threads_sizes_the_pool():
    """set_num_threads before the first compiled CPU kernel sets the pool's worker count (one
    thread per worker in /proc/self/task), in a fresh process."""
    code = ("import os, symtrace as st\n"
            "n0 = len(os.listdir('/proc/self/task'))\n"
            "st.set_num_threads(4)\n"
            "f = st.compile(lambda a: (a * 3).exp().sum(1))\n"
            "f(st.ones(512, 512))\n"
            "print(len(os.listdir('/proc/self/task')) - n0, st.get_num_threads())\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(st.__file__))))
    env.pop("SYMTRACE_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "4"]


def test_default_device(restore_settings):
    assert str(st.get_default_device()) == "cpu"
    st.set_default_device("cpu")
    assert st.zeros(2).device == "cpu" and st.get_default_device().type == "cpu"
    st.set_default_device(None)
    assert str(st.get_default_device()) == "cpu"
    with st.device("cuda:0"):
        assert str(st.get_default_device()) == "cuda:0"
        with st.device("cpu"):
            assert st.ones(1).device == "cpu" and str(st.get_default_device()) == "cpu"
        assert str(st.get_default_device()) == "cuda:0"
    assert str(st.get_default_device()) == "cpu"
    with pytest.raises(RuntimeError, match="bogus"):
        st.set_default_device("bogus")
    if st.cuda.is_available():
        st.set_default_device("cuda")
        try:
            for t in (st.zeros(2), st.tensor([1.]), st.arange(3), st.rand(2), st.eye(2), st.linspace(0, 1, 3),
                      st.empty_strided((2, 2), (1, 2)), st.tril_indices(3, 3), st.randperm(3)):
                assert t.device.type == "cuda"
            assert st.get_default_device().index == 0
        finally:
            st.set_default_device(None)
    else:
        st.set_default_device("cuda")
        with pytest.raises(RuntimeError):      # torch: AssertionError (not compiled with CUDA)
            st.zeros(2)
        st.set_default_device(None)
    assert st.zeros(2).device == "cpu"


def test_empty_strided_as_torch(torch):
    got = []
    for L in (st, torch):
        a = L.empty_strided((2, 3), (1, 2), dtype=L.float64, requires_grad=True)
        b = L.ones(2).new_empty_strided((3, 2), (1, 4))
        c = L.empty_strided((2, 0), (5, 1))
        got.append([tuple(a.stride()), a.is_contiguous(), a.requires_grad, a.is_leaf, dtype_name(a.dtype),
                    tuple(b.stride()), tuple(b.shape), dtype_name(b.dtype), tuple(c.shape)])
    assert got[0] == got[1]
    a = st.empty_strided((2, 3), (1, 2))
    a.fill_(2.)
    assert a.tolist() == [[2.] * 3] * 2


def test_warnings_as_torch(torch):
    for case in (lambda L: L.cov(L.tensor([[1., 2.]]), correction=2), lambda L: L.cov(L.tensor(3.)),
                 lambda L: L.corrcoef(L.ones(2, 1))):
        msgs = []
        for L in (st, torch):
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                r = case(L)
            msgs.append([str(w.message).split(" (Triggered internally")[0] for w in ws])
            msgs.append(to_numpy(r).tolist())
        assert msgs[0] == msgs[2] and len(msgs[0]) == 1 and np.array_equal(msgs[1], msgs[3], equal_nan=True)


# ---------------------------------------------------------------- errors
BAD = {
    "addmv_dims": lambda L: L.addmv(L.ones(2), L.ones(2, 3, 1), L.ones(3)),
    "addmv_vec": lambda L: L.addmv(L.ones(2), L.ones(2, 3), L.ones(3, 1)),
    "addmv_size": lambda L: L.addmv(L.ones(2), L.ones(2, 3), L.ones(4)),
    "addmv_input_size": lambda L: L.addmv(L.ones(3), L.ones(2, 3), L.ones(3)),
    "addmv_dtype": lambda L: L.addmv(L.ones(2, dtype=L.float64), L.ones(2, 3), L.ones(3)),
    "addmv_bool": lambda L: L.addmv(L.ones(2, dtype=L.bool), L.ones(2, 3, dtype=L.bool), L.ones(3, dtype=L.bool)),
    "addr_2d_vec": lambda L: L.addr(L.ones(2, 3), L.ones(2, 1), L.ones(3)),
    "addr_broadcast": lambda L: L.addr(L.ones(4, 3), L.ones(2), L.ones(3)),
    "addr_int_float_beta": lambda L: L.addr(L.ones(2, 3, dtype=L.int64), L.ones(2, dtype=L.int64),
                                            L.ones(3, dtype=L.int64), beta=0.5),
    "addr_int_float_alpha": lambda L: L.addr(L.ones(2, 3, dtype=L.int64), L.ones(2, dtype=L.int64),
                                             L.ones(3, dtype=L.int64), alpha=0.5),
    "addr_bool_beta_float": lambda L: L.addr(L.ones(2, 3), L.ones(2), L.ones(3), beta=True),
    "addbmm_batches": lambda L: L.addbmm(L.ones(2, 4), L.ones(3, 2, 5), L.ones(2, 5, 4)),
    "addbmm_2d": lambda L: L.addbmm(L.ones(2, 4), L.ones(2, 5), L.ones(2, 5, 4)),
    "addbmm_dtype": lambda L: L.addbmm(L.ones(2, 4), L.ones(3, 2, 5, dtype=L.float64), L.ones(3, 5, 4)),
    "addbmm_input_dtype": lambda L: L.addbmm(L.ones(2, 4, dtype=L.float64), L.ones(3, 2, 5), L.ones(3, 5, 4)),
    "addbmm_inner": lambda L: L.addbmm(L.ones(2, 4), L.ones(3, 2, 5), L.ones(3, 6, 4)),
    "chain_matmul_none": lambda L: L.chain_matmul(),
    "chain_matmul_1d": lambda L: L.chain_matmul(L.ones(2, 3), L.ones(3)),
    "chain_matmul_shapes": lambda L: L.chain_matmul(L.ones(2, 3), L.ones(4, 4)),
    "chain_matmul_dtype": lambda L: L.chain_matmul(L.ones(2, 3), L.ones(3, 4, dtype=L.float64)),
    "sum_to_size": lambda L: L.ones(2, 3).sum_to_size(4),
    "sum_to_size_longer": lambda L: L.ones(3).sum_to_size(2, 3),
    "bincount_negative": lambda L: L.bincount(L.tensor([-1, 3])),
    "bincount_2d": lambda L: L.bincount(L.tensor([[1, 3]])),
    "bincount_float": lambda L: L.bincount(L.tensor([1., 3.])),
    "bincount_bool": lambda L: L.bincount(L.tensor([True])),
    "bincount_weights": lambda L: L.bincount(L.tensor([1, 2]), L.tensor([1.])),
    "bincount_minlength": lambda L: L.bincount(L.tensor([1, 2]), minlength=-1),
    "histc_int": lambda L: L.histc(L.tensor([1, 2]), 4, 0, 3),
    "histc_bins": lambda L: L.histc(L.tensor([1., 2.]), 0),
    "histc_min_max": lambda L: L.histc(L.tensor([1., 2.]), 3, 3, 1),
    "histc_inf_range": lambda L: L.histc(L.tensor([1., 2.]), 3, float("-inf"), 1),
    "histc_inf_data": lambda L: L.histc(L.tensor([1., float("inf")]), 3),
    "histogram_int": lambda L: L.histogram(L.tensor([1, 2]), 4),
    "histogram_half": lambda L: L.histogram(L.tensor([1., 2.], dtype=L.float16), 4),
    "histogramdd_bfloat16": lambda L: L.histogramdd(L.ones(2, 2, dtype=L.bfloat16), 4),
    "index_reduce_0d": lambda L: L.index_reduce(L.tensor(2.), 0, L.tensor([0, 0]), L.tensor([3., 4.]), "prod"),
    "histogram_range": lambda L: L.histogram(L.tensor([1., 2.]), 4, range=(3., 1.)),
    "histogram_bins0": lambda L: L.histogram(L.tensor([1., 2.]), 0),
    "histogram_bins_dtype": lambda L: L.histogram(L.tensor([1., 2.]), L.tensor([0., 1.], dtype=L.float64)),
    "histogram_weight_dtype": lambda L: L.histogram(L.tensor([1., 2.]), 2, weight=L.tensor([1., 2.], dtype=L.float64)),
    "histogram_weight_shape": lambda L: L.histogram(L.tensor([1., 2., 1.]), 2, weight=L.tensor([1., 2.])),
    "histogram_nan": lambda L: L.histogram(L.tensor([1., float("nan")]), 3),
    "histogram_one_edge": lambda L: L.histogram(L.tensor([1., 2.]), L.tensor([1.])),
    "histogram_2d_edges": lambda L: L.histogram(L.tensor([1., 2.]), L.ones(2, 2)),
    "histogramdd_1d": lambda L: L.histogramdd(L.tensor([0., 1.]), bins=2),
    "histogramdd_range": lambda L: L.histogramdd(L.ones(3, 2), 2, range=[0., 1.]),
    "histogramdd_bins_count": lambda L: L.histogramdd(L.ones(3, 2), [2, 2, 2]),
    "histogramdd_edges_count": lambda L: L.histogramdd(L.ones(3, 2), [L.tensor([0., 1.])]),
    "cov_3d": lambda L: L.cov(L.ones(2, 2, 2)),
    "cov_bool": lambda L: L.cov(L.tensor([[True, False]])),
    "cov_fweights_float": lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1., 2., 0.])),
    "cov_aweights_int": lambda L: L.cov(L.ones(2, 3), aweights=L.tensor([1, 2, 0])),
    "cov_fweights_negative": lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1, -2, 3])),
    "cov_aweights_negative": lambda L: L.cov(L.ones(2, 3), aweights=L.tensor([1, -2., 3])),
    "cov_fweights_numel": lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1, 2])),
    "cov_fweights_2d": lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([[1, 2, 3]])),
    "cov_weights_zero": lambda L: L.cov(L.ones(2, 3), aweights=L.tensor([0., 0., 0.])),
    "corrcoef_3d": lambda L: L.corrcoef(L.ones(2, 2, 2)),
    "renorm_p": lambda L: L.renorm(L.ones(2, 2), 0, 0, 1),
    "renorm_maxnorm": lambda L: L.renorm(L.ones(2, 2), 2, 0, -1),
    "renorm_1d": lambda L: L.renorm(L.ones(2), 2, 0, 1),
    "renorm_int": lambda L: L.renorm(L.ones(2, 2, dtype=L.int64), 2, 0, 1),
    "renorm_dim": lambda L: L.renorm(L.ones(2, 2), 1, 2, 1),
    "unravel_float": lambda L: L.unravel_index(L.tensor([1.]), (2, 3)),
    "unravel_bool": lambda L: L.unravel_index(L.tensor([True]), (2, 3)),
    "unravel_negative_shape": lambda L: L.unravel_index(L.tensor([3]), (2, -3)),
    "unravel_zero_shape": lambda L: L.unravel_index(L.tensor([0]), (2, 0)),
    "unravel_shape_type": lambda L: L.unravel_index(L.tensor([0]), (2, 1.5)),
    "trapezoid_x_size": lambda L: L.trapezoid(L.ones(2, 3), L.ones(2)),
    "trapezoid_bool": lambda L: L.trapezoid(L.tensor([True, False])),
    "trapezoid_bool_x": lambda L: L.trapezoid(L.ones(2), L.tensor([True, False])),
    "trapezoid_0d": lambda L: L.trapezoid(L.tensor(1.)),
    "trapezoid_x_3d": lambda L: L.trapezoid(L.ones(2, 3), L.ones(1, 2, 3)),
    "trapezoid_x_number": lambda L: L.trapz(L.ones(2, 3), 0.5),
    "trapezoid_x_and_dx": lambda L: L.trapezoid(L.ones(2, 3), L.ones(3), dx=2),
    "cumulative_trapezoid_x_size": lambda L: L.cumulative_trapezoid(L.ones(2, 3), L.ones(2)),
    "cumulative_trapezoid_bool": lambda L: L.cumulative_trapezoid(L.tensor([True, False])),
    "combinations_r": lambda L: L.combinations(L.ones(3), -1),
    "combinations_2d": lambda L: L.combinations(L.ones(2, 2)),
    "combinations_0d": lambda L: L.combinations(L.tensor(1.)),
    "vander_2d": lambda L: L.vander(L.ones(2, 2)),
    "vander_n": lambda L: L.vander(L.ones(2), -1),
    "rsub_bool": lambda L: L.rsub(L.tensor([True]), L.tensor([True])),
    "rsub_int_alpha": lambda L: L.rsub(L.tensor([1, 2]), 5, alpha=0.5),
    "fill_value_1d": lambda L: L.fill(L.ones(2), L.tensor([2.])),
    "narrow_copy_range": lambda L: L.narrow_copy(L.ones(2, 3), 1, 2, 2),
    "index_reduce_reduce": lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0, 1]), L.ones(2, 2), "sum"),
    "index_reduce_dtype": lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0, 1]), L.ones(2, 2, dtype=L.float64),
                                                   "prod"),
    "index_reduce_count": lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0, 1, 1]), L.ones(2, 2), "prod"),
    "index_reduce_range": lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0, 5]), L.ones(2, 2), "prod"),
    "index_reduce_negative": lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([-1, 0]), L.ones(2, 2), "prod"),
    "index_reduce_index_float": lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0., 1.]), L.ones(2, 2), "prod"),
    "index_reduce_index_2d": lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([[0, 1]]), L.ones(2, 2), "prod"),
    "empty_strided_ndim": lambda L: L.empty_strided((2,), (1, 2)),
    "empty_strided_negative": lambda L: L.empty_strided((2, -1), (1, 2)),
    "empty_strided_negative_stride": lambda L: L.empty_strided((2, 3), (-1, 2)),
    "adjoint_1d": lambda L: L.adjoint(L.ones(3)),
    "H_3d": lambda L: L.ones(2, 3, 4).H,
    "H_1d": lambda L: L.ones(3).H,
    "addmv_inplace_shape": lambda L: L.ones(1).addmv_(L.ones(2, 3), L.ones(3)),
    "set_default_device": lambda L: L.set_default_device("bogus"),
}
LOOSE = {"addr_bool_beta_float", "addmv_inplace_shape", "histogram_2d_edges", "histogramdd_range",
         "rsub_bool", "histc_inf_data", "trapezoid_x_3d", "set_default_device", "trapezoid_x_number",
         "trapezoid_x_and_dx"}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_as_torch(name, torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_as_torch(BAD[name], torch, loose=name in LOOSE)


# ---------------------------------------------------------------- compiled
def _model(x, w, m, v, idx, src):
    a = st.addmv(v, m, w, beta=0.5)                             # (3,)
    b = st.addr(m, v, w, alpha=2)                               # (3, 4)
    c = st.vander(a, 3) + st.renorm(b, 2, 0, 1.0)[:, :3]        # (3, 3)
    d = st.trapezoid(c, dim=0) + st.cumulative_trapezoid(c, dx=0.5).sum(-1)
    e = st.cov(b) + st.corrcoef(b) + st.diagflat(d)
    f = st.combinations(x, 2).prod(-1).sum() + st.rsub(x, 1.0).sum()
    g = st.index_reduce(b, 0, idx, src, "mean") + st.fill(b, 0.5)
    h = st.unravel_index(idx, (2, 2))[1] * 1.0
    return e * f + g.sum() + h.sum() + st.addbmm(e, b.unsqueeze(0)[:, :, :3], m.t().unsqueeze(0)[:, :3, :])


def test_compiled_matches_eager():
    rs = np.random.RandomState(3)
    args = [st.tensor(rs.uniform(-1, 1, s).astype(np.float32)) for s in ((4,), (4,), (3, 4), (3,))]
    idx, src = st.tensor([2, 0]), st.tensor(rs.uniform(-1, 1, (2, 4)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ex = st.explain(_model, *args, idx, src)
        assert ex.graph_break_count == 0, ex.break_reasons
        results = []
        for fn in (_model, st.compile(_model)):
            xs = [a.detach().requires_grad_() for a in args]
            out = fn(*xs, idx, src)
            (out * st.tensor(cycle_weights(tuple(out.shape)), dtype=st.float32)).sum().backward()
            results.append([to_numpy(out)] + [to_numpy(x.grad) for x in xs])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


# ---------------------------------------------------------------- without torch
def test_literal_values():
    assert st.addmv(st.tensor([1., 1.]), st.tensor([[1., 2.], [3., 4.]]), st.tensor([1., 1.])).tolist() == [4., 8.]
    assert st.addr(st.zeros(2, 2), st.tensor([1., 2.]), st.tensor([3., 4.])).tolist() == [[3., 4.], [6., 8.]]
    assert st.vander(st.tensor([1, 2, 3])).tolist() == [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    assert st.combinations(st.tensor([1, 2, 3])).tolist() == [[1, 2], [1, 3], [2, 3]]
    assert [t.tolist() for t in st.unravel_index(st.tensor([4, 1, 7]), (3, 4))] == [[1, 0, 1], [0, 1, 3]]
    assert st.trapezoid(st.tensor([1., 2., 4.])).item() == 4.5
    assert st.cumulative_trapezoid(st.tensor([1., 2., 4.])).tolist() == [1.5, 4.5]
    assert st.bincount(st.tensor([1, 3, 3])).tolist() == [0, 1, 0, 2]
    assert st.histc(st.tensor([1., 2., 1.]), bins=4, min=0, max=3).tolist() == [0., 2., 1., 0.]
    h = st.histogram(st.tensor([1., 2., 1.]), 4, range=(0., 3.))
    assert h.hist.tolist() == [0., 2., 1., 0.] and h.bin_edges.tolist() == [0., 0.75, 1.5, 2.25, 3.]
    np.testing.assert_allclose(st.cov(st.tensor([[0., 1., 2.], [2., 1., 0.5]])).numpy(),
                               [[1., -0.75], [-0.75, 7 / 12]], rtol=1e-6)
    assert st.renorm(st.tensor([[1., 2.], [3., 4.]]), 1, 0, 5).tolist()[0] == [1., 2.]
    assert st.rsub(st.tensor([1, 2]), 5).tolist() == [4, 3]
    assert st.ones(2, 3, 4).sum_to_size(3, 1).tolist() == [[8.], [8.], [8.]]
    assert st.ones(2, 3, 4).transpose(0, 2).dim_order() == (2, 1, 0)
    assert st.typename(st.ones(1)) == "symtrace.FloatTensor" and st.typename(st.ones(1).int()) == "symtrace.IntTensor"
    with pytest.warns(UserWarning, match="index_reduce"):
        st._ops.extras._REDUCE_WARNED.clear()
        r = st.index_reduce(st.ones(3), 0, st.tensor([0, 0]), st.tensor([2., 3.]), "prod")
    assert r.tolist() == [6., 1., 1.]
    x = st.tensor([0.25, 4.])
    assert st.sqrt_(x) is x and x.tolist() == [0.5, 2.]
