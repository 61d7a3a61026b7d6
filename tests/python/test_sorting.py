"""Sorting and selection (symtrace/_ops/sorting.py) against torch: sort, argsort, msort,
topk, kthvalue, median, nanmedian, mode, quantile, nanquantile, unique,
unique_consecutive, searchsorted, bucketize, cummax, cummin and isin. A table of cases
compares values, indices, dtypes, shapes and x.grad after backward of a weighted sum
(NaN and infinities, ties, negative dims, keepdim, empty and 0-d tensors, integer and
bool inputs); a table of bad calls compares the exception type and message. Where torch
leaves the index of equal values unspecified (its unstable sort, quickselect), the case
checks values only, and that the indices point at elements with those values. The
tests without torch (result types, literal values, symtrace.compile) also run on the
venv without it."""
import math

import numpy as np
import pytest

import symtrace as st
from conftest import dtype_name
from tensor_data import as_list, cycle_weights, raises_as_torch, to_numpy

nan, inf = math.nan, math.inf

# A: NaN, infinities, ties and signed zeros; A2: NaN and infinities, no ties within a row;
# R: distinct values (every order unique); I: integers with ties; B: bools.
A = np.array([[2., nan, 1., 2., -inf], [nan, 1., inf, 0., -0.], [3., 3., 3., 1., 2.]])
A2 = np.array([[2., nan, 1., 5., -inf], [nan, 1., inf, 0., -3.], [4., 3., 9., 1., 2.]])
R = (np.random.RandomState(0).permutation(24).reshape(2, 3, 4) * 0.5 - 3.0)
I = np.array([[3, -1, 3, 0, 2], [1, 1, 1, 4, 4], [0, 2, 5, 2, 0]])
B = np.array([True, False, True, True, False])
M = np.array([[2., 1., 2., 1., 3.], [5., 5., 4., 4., 4.], [0.5, 7., 0.5, 7., 7.]])
Q = np.array([0.0, 0.1, 0.25, 0.5, 0.625, 0.9, 1.0])


class Case:
    """fn(lib, x) -> tensor or tuple of tensors; grad: check x.grad of a weighted sum of the
    first output; ties: compare values only (indices: where gather says they point)."""

    def __init__(self, data, dtype, fn, grad=False, ties=None, tol=None):
        self.data, self.dtype, self.fn, self.grad, self.ties, self.tol = data, dtype, fn, grad, ties, tol


def srt(**kw):
    return lambda L, x: L.sort(x, **kw)


CASES = {
    # sort / argsort / msort
    "sort_nan_inf_ties_stable": Case(A, "float32", srt(stable=True), grad=True),
    "sort_nan_desc_stable_dim0": Case(A, "float32", srt(dim=0, descending=True, stable=True), grad=True),
    "sort_desc_stable_rows": Case(A, "float64", srt(descending=True, stable=True), grad=True),
    "sort_distinct_dim1_desc": Case(R, "float64", srt(dim=1, descending=True), grad=True),
    "sort_distinct_negdim": Case(R, "float32", srt(dim=-3), grad=True),
    "sort_positional_args": Case(R, "float32", lambda L, x: L.sort(x, 2, True), grad=True),
    "sort_int64_stable": Case(I, "int64", srt(stable=True)),
    "sort_int32_desc_stable": Case(I, "int32", srt(dim=0, descending=True, stable=True)),
    "sort_bool_stable": Case(B, "bool", srt(stable=True)),
    "sort_float16_stable": Case(A, "float16", srt(stable=True), grad=True),
    "sort_bfloat16_desc_stable": Case(A, "bfloat16", srt(descending=True, stable=True)),
    "sort_0d": Case(np.array(3.5), "float32", srt(), grad=True),
    "sort_0d_dim_minus1": Case(np.array(3.5), "float32", srt(dim=-1, descending=True)),
    "sort_empty_rows": Case(np.zeros((0, 3)), "float32", srt(dim=0)),
    "sort_empty_cols": Case(np.zeros((2, 0)), "float32", srt()),
    "sort_method": Case(R, "float32", lambda L, x: x.sort(1, descending=True), grad=True),
    "sort_stable_none": Case(A2, "float32", srt(stable=None)),
    "argsort_desc_stable": Case(A, "float32", lambda L, x: L.argsort(x, dim=1, descending=True, stable=True)),
    "argsort_int_stable": Case(I, "int64", lambda L, x: L.argsort(x, stable=True)),
    "argsort_method_0d": Case(np.array(2.), "float32", lambda L, x: x.argsort()),
    "msort": Case(R, "float32", lambda L, x: L.msort(x), grad=True),
    "msort_int_method": Case(I, "int64", lambda L, x: x.msort()),
    # topk
    "topk_k3": Case(R, "float32", lambda L, x: L.topk(x, 3), grad=True),
    "topk_smallest_dim0": Case(R, "float64", lambda L, x: L.topk(x, 1, dim=0, largest=False), grad=True),
    "topk_nan_inf": Case(A2, "float32", lambda L, x: L.topk(x, 2), grad=True),
    "topk_nan_smallest": Case(A2, "float32", lambda L, x: L.topk(x, 3, largest=False), grad=True),
    "topk_k0": Case(R, "float32", lambda L, x: L.topk(x, 0, dim=1)),
    "topk_0d": Case(np.array(1.5), "float32", lambda L, x: L.topk(x, 1), grad=True),
    "topk_int": Case(R * 2, "int64", lambda L, x: L.topk(x, 2, dim=-2)),
    "topk_method_kw": Case(R, "float32", lambda L, x: x.topk(k=2, dim=0, largest=True, sorted=True), grad=True),
    "topk_ties_values": Case(I, "int64", lambda L, x: L.topk(x, 3), ties=-1),
    "topk_float16": Case(R, "float16", lambda L, x: L.topk(x, 2), grad=True),
    # kthvalue
    "kthvalue_keepdim": Case(R, "float32", lambda L, x: L.kthvalue(x, 2, 1, True), grad=True),
    "kthvalue_negdim": Case(R, "float64", lambda L, x: L.kthvalue(x, 3, dim=-3 + 1), grad=True),
    "kthvalue_nan_last": Case(A2, "float32", lambda L, x: L.kthvalue(x, 5), grad=True),
    "kthvalue_0d": Case(np.array(1.5), "float32", lambda L, x: L.kthvalue(x, 1, 0, True)),
    "kthvalue_ties_values": Case(I, "int64", lambda L, x: L.kthvalue(x, 2), ties=-1),
    "kthvalue_method": Case(R, "float32", lambda L, x: x.kthvalue(1, dim=0), grad=True),
    # median / nanmedian
    "median_all_even_count": Case(R, "float32", lambda L, x: L.median(x), grad=True),
    "median_all_ties_grad_spread": Case(np.array([3., 1., 3., 2., 3.]), "float32", lambda L, x: L.median(x), grad=True),
    "median_all_nan_grad_spread": Case(np.array([3., nan, 3., nan, 3.]), "float64", lambda L, x: L.median(x), grad=True),
    "median_all_int": Case(I, "int64", lambda L, x: L.median(x)),
    "median_all_empty": Case(np.zeros(0), "float32", lambda L, x: L.median(x)),
    "median_all_0d": Case(np.array(-2.), "float32", lambda L, x: x.median(), grad=True),
    "median_dim_keepdim": Case(R, "float32", lambda L, x: L.median(x, 2, keepdim=True), grad=True),
    "median_dim_neg": Case(R, "float64", lambda L, x: L.median(x, -2), grad=True),
    "median_dim_nan_first": Case(np.array([[2., nan, 2.5, 1., nan], [1., 4., 3., 0., 2.]]), "float32",
                                 lambda L, x: L.median(x, 1), grad=True),
    "median_dim_0d": Case(np.array(3.), "float32", lambda L, x: L.median(x, 0, keepdim=True)),
    "median_dim_empty_other": Case(np.zeros((3, 0)), "float32", lambda L, x: L.median(x, 0)),
    "median_dim_ties_values": Case(M, "float32", lambda L, x: L.median(x, 1), ties=1),
    "nanmedian_all": Case(np.array([nan, 3., 1., nan, 2.]), "float32", lambda L, x: L.nanmedian(x), grad=True),
    "nanmedian_all_nan": Case(np.array([nan, nan]), "float32", lambda L, x: L.nanmedian(x), grad=True),
    "nanmedian_dim": Case(A2, "float64", lambda L, x: L.nanmedian(x, 1), grad=True),
    "nanmedian_dim_allnan_row": Case(np.array([[nan, nan, nan], [1., nan, 0.]]), "float32",
                                     lambda L, x: x.nanmedian(1, True), ties=1),
    # mode
    "mode_float": Case(M, "float32", lambda L, x: L.mode(x), grad=True),
    "mode_int": Case(I, "int64", lambda L, x: L.mode(x, 1)),
    "mode_dim0_keepdim": Case(I, "int32", lambda L, x: L.mode(x, 0, True)),
    "mode_bool": Case(B, "bool", lambda L, x: L.mode(x)),
    "mode_0d": Case(np.array(3.), "float32", lambda L, x: x.mode()),
    "mode_empty_other": Case(np.zeros((3, 0)), "float32", lambda L, x: L.mode(x, 0)),
    # quantile / nanquantile
    "quantile_scalar_all": Case(R, "float32", lambda L, x: L.quantile(x, 0.3), grad=True),
    "quantile_scalar_all_keepdim": Case(R, "float64", lambda L, x: L.quantile(x, 0.75, keepdim=True), grad=True),
    "quantile_q_dim_keepdim": Case(R, "float64", lambda L, x: L.quantile(x, L.tensor(Q, dtype=L.float64), 1, True), grad=True),
    "quantile_q_negdim": Case(R, "float32", lambda L, x: L.quantile(x, L.tensor(Q[1:4], dtype=L.float32), dim=-1), grad=True),
    "quantile_nan_rows": Case(A, "float64", lambda L, x: L.quantile(x, L.tensor([0.2, 0.5], dtype=L.float64), dim=1)),
    "quantile_0d": Case(np.array(3.), "float32", lambda L, x: L.quantile(x, 0.5, dim=0, keepdim=True)),
    "quantile_0d_q_keepdim": Case(np.array(3.), "float32", lambda L, x: L.quantile(x, L.tensor([0.5]), keepdim=True)),
    "quantile_q0d_tensor": Case(R, "float32", lambda L, x: L.quantile(x, L.tensor(0.4), dim=0), grad=True),
    "nanquantile_rows": Case(np.array([[1., 2., 3., 4.], [nan, 1., 2., 3.], [nan, nan, nan, nan]]), "float32",
                             lambda L, x: L.nanquantile(x, 0.4, dim=1), grad=True),
    "nanquantile_q_all": Case(A, "float64", lambda L, x: x.nanquantile(L.tensor(Q, dtype=L.float64)), grad=True),
    "quantile_method": Case(R, "float32", lambda L, x: x.quantile(0.5, dim=2, keepdim=True), grad=True),
    # unique / unique_consecutive
    "unique_int_all": Case(I, "int64", lambda L, x: L.unique(x, return_inverse=True, return_counts=True)),
    "unique_float_nan": Case(np.array([nan, 1., nan, 1., -0., 0.]), "float32",
                             lambda L, x: L.unique(x, return_counts=True)),
    "unique_plain": Case(A, "float32", lambda L, x: L.unique(x)),
    "unique_inverse_only": Case(I, "int32", lambda L, x: L.unique(x, sorted=False, return_inverse=True)),
    "unique_bool": Case(B, "bool", lambda L, x: L.unique(x, return_counts=True)),
    "unique_0d": Case(np.array(3.), "float32", lambda L, x: L.unique(x, return_inverse=True, return_counts=True)),
    "unique_empty": Case(np.zeros((0, 2)), "float32", lambda L, x: L.unique(x, return_inverse=True, return_counts=True)),
    "unique_dim0": Case(np.array([[1, 2], [1, 2], [0, 5], [1, 0]]), "int64",
                        lambda L, x: L.unique(x, dim=0, return_inverse=True, return_counts=True)),
    "unique_dim1": Case(np.array([[1, 2, 1], [3, 0, 3]]), "int64",
                        lambda L, x: L.unique(x, dim=1, return_inverse=True, return_counts=True)),
    "unique_dim_neg": Case(np.array([[1, 2, 1], [3, 0, 3]]), "float32", lambda L, x: x.unique(dim=-1)),
    "unique_dim_empty_selected": Case(np.zeros((0, 3)), "float32", lambda L, x: L.unique(x, dim=0, return_counts=True)),
    "unique_bfloat16": Case(A, "bfloat16", lambda L, x: x.unique(return_counts=True)),
    "unique_consecutive": Case(np.array([1, 1, 2, 2, 3, 1, 1, 2]), "int64",
                               lambda L, x: L.unique_consecutive(x, return_inverse=True, return_counts=True)),
    "unique_consecutive_nan": Case(np.array([nan, nan, 1., 1.]), "float32",
                                   lambda L, x: L.unique_consecutive(x, return_counts=True)),
    "unique_consecutive_2d": Case(I, "int64", lambda L, x: x.unique_consecutive(return_inverse=True)),
    "unique_consecutive_dim0": Case(np.array([[1, 2], [1, 2], [2, 2], [1, 2]]), "int64",
                                    lambda L, x: L.unique_consecutive(x, True, True, 0)),
    "unique_consecutive_dim1": Case(np.array([[1, 1, 2], [3, 3, 2]]), "int64",
                                    lambda L, x: L.unique_consecutive(x, return_counts=True, dim=1)),
    "unique_consecutive_0d": Case(np.array(2.), "float32",
                                  lambda L, x: L.unique_consecutive(x, return_inverse=True, return_counts=True)),
    # searchsorted / bucketize
    "searchsorted_1d": Case(np.array([1, 3, 5, 7]), "int64",
                            lambda L, x: L.searchsorted(x, L.tensor([[3, 6, 9], [0, 7, 1]]))),
    "searchsorted_right": Case(np.array([1., 3., 3., 7.]), "float32",
                               lambda L, x: L.searchsorted(x, L.tensor([3., 6., -inf, inf, nan]), right=True)),
    "searchsorted_side_right": Case(np.array([1., 3., 3., 7.]), "float64",
                                    lambda L, x: L.searchsorted(x, L.tensor([3., 0.5], dtype=L.float64), side="right")),
    "searchsorted_side_left_right_false": Case(np.array([1., 3., 3., 7.]), "float32",
                                               lambda L, x: L.searchsorted(x, L.tensor([3.]), side="left")),
    "searchsorted_nd": Case(np.array([[1., 3, 5, 7], [2, 4, 6, 8]]), "float32",
                            lambda L, x: L.searchsorted(x, L.tensor([[3., 6., 9.], [3., 6., 1.]]))),
    "searchsorted_int_seq_float_values": Case(np.array([1, 3, 5, 7]), "int64",
                                              lambda L, x: L.searchsorted(x, L.tensor([3.5, 6., 3.]))),
    "searchsorted_out_int32": Case(np.array([1, 3, 5, 7]), "int32",
                                   lambda L, x: L.searchsorted(x, L.tensor([3, 6], dtype=L.int32), out_int32=True)),
    "searchsorted_sorter": Case(np.array([5, 1, 7, 3]), "int64",
                                lambda L, x: L.searchsorted(x, L.tensor([3, 6]), sorter=L.tensor([1, 3, 0, 2]))),
    "searchsorted_scalar": Case(np.array([1, 3, 5, 7]), "int64", lambda L, x: L.searchsorted(x, 5, right=True)),
    "searchsorted_0d_value": Case(np.array([1, 3, 5, 7]), "int64", lambda L, x: L.searchsorted(x, L.tensor(3))),
    "searchsorted_empty_seq": Case(np.zeros(0), "float32", lambda L, x: L.searchsorted(x, L.tensor([3.]))),
    "bucketize": Case(np.array([1., nan, 3., 9., -1.]), "float32",
                      lambda L, x: L.bucketize(x, L.tensor([1., 3, 5, 7]), right=True)),
    "bucketize_left_int32": Case(np.array([[1, 4], [7, 8]]), "int64",
                                 lambda L, x: L.bucketize(x, L.tensor([1, 3, 5, 7]), out_int32=True)),
    "bucketize_scalar": Case(np.array([1., 3, 5]), "float32", lambda L, x: L.bucketize(3, x)),
    # cummax / cummin
    "cummax_nan": Case(np.array([1., nan, 2., nan, 3.]), "float32", lambda L, x: L.cummax(x, 0), grad=True),
    "cummax_rows_ties": Case(A, "float32", lambda L, x: L.cummax(x, 1), grad=True),
    "cummin_rows_ties": Case(A, "float64", lambda L, x: L.cummin(x, dim=-1), grad=True),
    "cummax_dim0": Case(R, "float32", lambda L, x: L.cummax(x, 0), grad=True),
    "cummin_long_dim": Case(np.sin(np.arange(37.) * 1.7).round(1), "float32", lambda L, x: L.cummin(x, 0), grad=True),
    "cummin_int_ties": Case(I, "int64", lambda L, x: L.cummin(x, 1)),
    "cummax_int32": Case(I, "int32", lambda L, x: x.cummax(0)),
    "cummax_bool": Case(B, "bool", lambda L, x: L.cummax(x, 0)),
    "cummin_bool": Case(B, "bool", lambda L, x: L.cummin(x, 0)),
    "cummax_0d": Case(np.array(3.), "float32", lambda L, x: L.cummax(x, 0), grad=True),
    "cummax_empty": Case(np.zeros((3, 0)), "float32", lambda L, x: L.cummax(x, 0)),
    "cummax_float16": Case(A, "float16", lambda L, x: x.cummax(1), grad=True),
    # isin
    "isin_int_float": Case(np.array([1, 2, 3]), "int64", lambda L, x: L.isin(x, L.tensor([2.0]))),
    "isin_nan": Case(np.array([1., nan, 2.]), "float32", lambda L, x: L.isin(x, L.tensor([nan, 1.]))),
    "isin_2d_invert": Case(I, "int64", lambda L, x: L.isin(x, L.tensor([[2, 3], [7, 0]]), invert=True)),
    "isin_scalar_element": Case(np.array([2, 3]), "int64", lambda L, x: L.isin(2, x)),
    "isin_scalar_test": Case(np.array([1, 2]), "int64", lambda L, x: L.isin(x, 2)),
    "isin_float_scalar": Case(np.array([0.1, 0.2]), "float32", lambda L, x: (L.isin(x, 0.1), L.isin(0.2, x))),
    "isin_float64_scalar": Case(np.array([0.1, 0.2]), "float64", lambda L, x: L.isin(x, 0.1)),
    "isin_mixed_precision": Case(np.array([0.1, 0.5]), "float32",
                                 lambda L, x: L.isin(x, L.tensor([0.1, 0.5], dtype=L.float64))),
    "isin_int_float_scalar": Case(np.array([1, 2]), "int64", lambda L, x: (L.isin(x, 2.0), L.isin(2.5, x))),
    "isin_empty_test": Case(np.array([1., 2.]), "float32", lambda L, x: L.isin(x, L.zeros(0))),
    "isin_empty_elements": Case(np.zeros((0, 2)), "float32", lambda L, x: L.isin(x, L.tensor([1.]))),
    "isin_assume_unique": Case(R, "float32", lambda L, x: L.isin(x, x[0, 0], assume_unique=True)),
}


# ---------------------------------------------------------------- running a case


def run(L, case):
    x = L.tensor(np.asarray(case.data, dtype=np.float64 if case.dtype not in ("int32", "int64", "bool")
                            else None), dtype=getattr(L, case.dtype))
    if case.grad:
        x.requires_grad_(True)
    outs = as_list(case.fn(L, x))
    grad = None
    if case.grad:
        v = outs[0]
        w = L.tensor(cycle_weights(tuple(v.shape)), dtype=v.dtype)
        (v * w).sum().backward()
        grad = to_numpy(x.grad)
    return x, outs, grad


def _same(a, b, what, tol=None):
    assert dtype_name(a.dtype) == dtype_name(b.dtype), f"{what}: dtype {a.dtype} vs {b.dtype}"
    assert tuple(a.shape) == tuple(b.shape), f"{what}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if tol is None:
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=what)
    else:
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=tol, atol=tol, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_torch(name, torch):
    case = CASES[name]
    sx, so, sg = run(st, case)
    tx, to, tg = run(torch, case)
    assert len(so) == len(to), f"{len(so)} outputs vs torch's {len(to)}"
    assert type(so[0]).__name__ == "Tensor"
    tol = case.tol if case.tol is not None else (
        1e-2 if case.dtype in ("float16", "bfloat16") else 1e-6 if case.dtype == "float32" else 1e-12)
    for k, (a, b) in enumerate(zip(so, to)):
        if case.ties is not None and k == 1:      # indices of equal values: unspecified in torch
            _check_points_at(sx, so[0], a, case.ties)
            assert dtype_name(a.dtype) == dtype_name(b.dtype) and tuple(a.shape) == tuple(b.shape)
            continue
        _same(a, b, f"{name} output {k}", tol if a.dtype.is_floating_point else None)
    if case.grad:
        np.testing.assert_allclose(sg, tg, rtol=tol or 1e-12, atol=tol or 1e-12, equal_nan=True,
                                   err_msg=f"{name}: x.grad")


def _check_points_at(x, values, indices, dim):
    """Every index names an element of x equal to the value beside it."""
    xv = to_numpy(x)
    idx = to_numpy(indices)
    vals = to_numpy(values)
    d = dim % max(xv.ndim, 1)
    if idx.ndim < xv.ndim:
        idx, vals = np.expand_dims(idx, d), np.expand_dims(vals, d)
    picked = np.take_along_axis(xv, idx, d)
    np.testing.assert_array_equal(picked, vals)


def test_sort_result_types_and_unpacking(torch):
    s = st.sort(st.tensor([3., 1., 2.]))
    t = torch.sort(torch.tensor([3., 1., 2.]))
    v, i = s
    assert isinstance(s, tuple) and s.values is v and s.indices is i and s[0] is v
    assert v.tolist() == t.values.tolist() and i.tolist() == t.indices.tolist()
    assert repr(s).startswith("symtrace.return_types.sort(\nvalues=tensor([1., 2., 3.]),\nindices=")
    tv = torch.tensor([1., 2., 3.])
    for name, r, tr in (("topk", st.topk(v, 1), torch.topk(tv, 1)),
                        ("kthvalue", st.kthvalue(v, 1), torch.kthvalue(tv, 1)),
                        ("median", st.median(v, 0), torch.median(tv, 0)),
                        ("nanmedian", st.nanmedian(v, 0), torch.nanmedian(tv, 0)),
                        ("mode", st.mode(v), torch.mode(tv)),
                        ("cummax", st.cummax(v, 0), torch.cummax(tv, 0)),
                        ("cummin", st.cummin(v, 0), torch.cummin(tv, 0))):
        assert type(r).__name__ == type(tr).__name__ == name
        assert r._fields == ("values", "indices") and len(r) == len(tr) == 2
    assert st.return_types.sort is type(s)


# ---------------------------------------------------------------- errors
X23 = np.zeros((2, 3), np.float32)
BAD = {
    "sort_dim": lambda L: L.sort(L.tensor(X23), dim=5),
    "sort_dim_0d": lambda L: L.sort(L.tensor(3.), dim=1),
    "argsort_dim": lambda L: L.argsort(L.tensor(X23), -3),
    "topk_k_big": lambda L: L.topk(L.arange(5.), 6),
    "topk_k_negative": lambda L: L.topk(L.arange(5.), -1),
    "topk_0d_k2": lambda L: L.topk(L.tensor(3.), 2),
    "topk_dim": lambda L: L.topk(L.tensor(X23), 1, dim=3),
    "topk_bool": lambda L: L.topk(L.tensor([True, False]), 1),
    "topk_k_float": lambda L: L.topk(L.arange(5.), 2.0),
    "kthvalue_k_big": lambda L: L.kthvalue(L.arange(5.), 6),
    "kthvalue_k_zero": lambda L: L.kthvalue(L.arange(5.), 0),
    "kthvalue_empty": lambda L: L.kthvalue(L.zeros(0), 1),
    "kthvalue_bool": lambda L: L.kthvalue(L.tensor([True]), 1),
    "median_dim_empty": lambda L: L.median(L.zeros(0, 3), 0),
    "median_dim": lambda L: L.median(L.arange(4.), 3),
    "median_bool": lambda L: L.median(L.tensor([True, False])),
    "median_bool_dim": lambda L: L.median(L.tensor([True, False]), 0),
    "nanmedian_bool": lambda L: L.nanmedian(L.tensor([True])),
    "mode_dim_empty": lambda L: L.mode(L.zeros(0, 3), 0),
    "mode_dim": lambda L: L.mode(L.tensor(X23), 2),
    "quantile_int": lambda L: L.quantile(L.arange(5), 0.5),
    "quantile_half": lambda L: L.quantile(L.tensor([1., 2.], dtype=L.float16), 0.5),
    "quantile_q_big": lambda L: L.quantile(L.arange(5.), 1.5),
    "quantile_q_negative": lambda L: L.quantile(L.arange(5.), -0.1),
    "quantile_q_values": lambda L: L.quantile(L.arange(5.), L.tensor([0.5, 1.5])),
    "quantile_q_dtype": lambda L: L.quantile(L.arange(5.), L.tensor([0.5], dtype=L.float64)),
    "quantile_q_2d": lambda L: L.quantile(L.arange(5.), L.tensor([[0.5]])),
    "quantile_interpolation": lambda L: L.quantile(L.arange(5.), 0.5, interpolation="foo"),
    "quantile_empty": lambda L: L.quantile(L.tensor([]), 0.5),
    "quantile_dim": lambda L: L.quantile(L.tensor(X23), 0.5, dim=2),
    "nanquantile_q_big": lambda L: L.nanquantile(L.arange(5.), 2.0),
    "unique_dim_0d": lambda L: L.unique(L.tensor(1.), dim=0),
    "unique_dim_zero_other": lambda L: L.unique(L.zeros(3, 0), dim=0),
    "unique_dim_out_of_range": lambda L: L.unique(L.tensor(X23), dim=2),
    "searchsorted_side": lambda L: L.searchsorted(L.tensor([1, 3]), 5, side="foo"),
    "searchsorted_side_right": lambda L: L.searchsorted(L.tensor([1, 3]), 5, right=True, side="left"),
    "searchsorted_dims": lambda L: L.searchsorted(L.tensor([[1, 3, 5, 7], [2, 4, 6, 8]]), L.tensor([[3], [4], [5]])),
    "searchsorted_dims_1d_value": lambda L: L.searchsorted(L.tensor([[1, 3, 5, 7]]), L.tensor([1, 2])),
    "searchsorted_0d_boundaries": lambda L: L.searchsorted(L.tensor(3), L.tensor([3, 6])),
    "searchsorted_scalar_nd": lambda L: L.searchsorted(L.tensor([[1, 3, 5, 7]]), 3),
    "searchsorted_sorter_size": lambda L: L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3]), sorter=L.tensor([0, 1, 2])),
    "searchsorted_sorter_dtype": lambda L: L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3]), sorter=L.tensor([0., 1, 2, 3])),
    "searchsorted_sorter_range": lambda L: L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3]), sorter=L.tensor([0, 1, 2, 4])),
    "searchsorted_bool": lambda L: L.searchsorted(L.tensor([False, True]), L.tensor([True])),
    "bucketize_2d": lambda L: L.bucketize(L.tensor([3, 6, 9]), L.tensor([[1, 3, 5, 7]])),
    "cummax_dim": lambda L: L.cummax(L.tensor(X23), 2),
    "cummin_dim_none": lambda L: L.cummin(L.arange(3.), dim=None),
    "isin_bool": lambda L: L.isin(L.tensor([True, False]), L.tensor([True])),
    "isin_two_numbers": lambda L: L.isin(2, 3),
    "isin_bool_scalar": lambda L: L.isin(L.tensor([1, 2]), True),
}
# messages that differ from torch's on purpose (the type still matches): torch's argument
# parser lists its overloads; symtrace names the argument.
LOOSE = {"topk_k_float", "cummin_dim_none", "isin_two_numbers"}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_as_torch(name, torch):
    raises_as_torch(BAD[name], torch, loose=name in LOOSE)


# ---------------------------------------------------------------- without torch
def test_literal_values():
    x = st.tensor([2., nan, 1., 2., -inf, 0.])
    s = st.sort(x, stable=True)
    assert s.indices.tolist() == [4, 5, 2, 0, 3, 1]
    d = st.sort(x, descending=True, stable=True)
    assert d.indices.tolist() == [1, 0, 3, 2, 5, 4]
    assert st.topk(x, 2).indices.tolist() == [1, 0]
    assert st.kthvalue(st.tensor([3., 1., 2.]), 2).values.item() == 2.0
    assert st.median(st.tensor([4., 1., 3., 2.])).item() == 2.0           # the lower median
    assert math.isnan(st.median(x).item()) and st.nanmedian(x).item() == 1.0
    m = st.mode(st.tensor([[2, 1, 2, 1, 3]]), 1)
    assert m.values.tolist() == [1] and m.indices.tolist() == [3]
    assert st.quantile(st.tensor([1., 2., 3., 4., 10.]), 0.9).item() == pytest.approx(7.6)
    assert st.quantile(st.tensor([1., 2., 3., 4.]), 0.5, interpolation="nearest").item() == 3.0  # rank 1.5 -> 2
    u, inv, cnt = st.unique(st.tensor([3, 1, 3, 2]), return_inverse=True, return_counts=True)
    assert (u.tolist(), inv.tolist(), cnt.tolist()) == ([1, 2, 3], [2, 0, 2, 1], [1, 1, 2])
    assert st.searchsorted(st.tensor([1, 3, 5, 7]), st.tensor([3, 6])).tolist() == [1, 3]
    assert st.bucketize(st.tensor([3, 6]), st.tensor([1, 3, 5, 7]), right=True).tolist() == [2, 3]
    cm = st.cummax(st.tensor([1., nan, 2.]), 0)
    assert cm.indices.tolist() == [0, 1, 1]
    assert st.isin(st.tensor([1, 2, 3]), st.tensor([3, 1]), invert=True).tolist() == [False, True, False]


def test_grad_goes_to_selected_elements():
    x = st.tensor([[3., 1., 2.], [0., 5., 4.]], requires_grad=True)
    v = st.topk(x, 2).values
    (v * st.tensor([[1., 10.], [100., 1000.]])).sum().backward()
    assert x.grad.tolist() == [[1., 0., 10.], [0., 100., 1000.]]
    y = st.tensor([3., 1., 3., 2., 3.], requires_grad=True)
    st.median(y).backward()
    np.testing.assert_allclose(y.grad.numpy(), [1 / 3, 0, 1 / 3, 0, 1 / 3])


def test_out_argument():
    x = st.tensor([3., 1., 2.])
    v, i = st.empty(3), st.empty(3, dtype=st.int64)
    r = st.sort(x, out=(v, i))
    assert r.values is v and v.tolist() == [1., 2., 3.] and i.tolist() == [1, 2, 0]
    with pytest.raises(RuntimeError, match="does not match"):
        st.sort(x, out=(st.empty(2), i))


def test_isin_host_path_matches_dense(monkeypatch):
    from symtrace._ops import sorting
    e = st.tensor([1., nan, 2., 5., 7.])
    t = st.tensor([7., nan, 1.])
    dense = st.isin(e, t).tolist()
    monkeypatch.setattr(sorting, "_ISIN_DENSE", 0)
    assert st.isin(e, t).tolist() == dense == [True, False, False, False, True]
    assert st.isin(e, t, invert=True).tolist() == [not b for b in dense]


def test_isin_chunks(monkeypatch):
    from symtrace._ops import sorting
    monkeypatch.setattr(sorting, "_ISIN_CHUNK", 6)       # 2 test elements a chunk for 3 elements
    assert st.isin(st.tensor([1, 4, 6]), st.tensor([9, 8, 7, 6, 5, 4, 3])).tolist() == [False, True, True]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_topk_under_compile_matches_eager(backend):
    if backend == "llvm" and not st._C._fe_backend_available("llvm"):
        pytest.skip("no llvm backend")

    def f(x):
        y = x * 2 + 1
        v, i = st.topk(y, 2, dim=1)
        s = st.sort(y, dim=0, descending=True).values
        return v.sum(1) * 3, i, s, st.cummax(y, 1).indices

    cf = st.compile(f, backend=backend)
    for seed in range(2):
        st.manual_seed(seed)
        x = st.randn(4, 5)
        got, want = cf(x), f(x)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    xg = st.randn(3, 4, requires_grad=True)
    xe = xg.detach().clone().requires_grad_(True)
    cf(xg)[0].sum().backward()
    f(xe)[0].sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xe.grad.numpy(), rtol=1e-6)


def test_values_and_indices_of_a_view_and_of_a_big_tensor():
    base = st.arange(60.).reshape(6, 10)
    x = base.transpose(0, 1)[::2]            # a strided view
    v, i = st.sort(x, dim=1, descending=True)
    ref = np.sort(x.numpy(), axis=1)[:, ::-1]
    assert v.numpy().tolist() == ref.tolist()
    big = st.tensor(np.random.RandomState(1).permutation(100000).astype(np.float32))
    assert st.topk(big, 3).values.tolist() == [99999., 99998., 99997.]
    assert st.kthvalue(big, 1).values.item() == 0.0
