"""Sorting and selection, as torch: sort, argsort, msort, topk, kthvalue, median and
nanmedian, mode, quantile and nanquantile, unique and unique_consecutive, searchsorted and
bucketize, cummax and cummin, isin; and their result types (symtrace.return_types-like
namedtuples: .values/.indices and tuple unpacking).

How they are computed. An order that depends on values is found on the host: the input is
copied to the CPU (float16/bfloat16 as their float32 view, which orders the same) and read
with .numpy(), then numpy's stable argsort orders it (NaN as the largest value, as torch).
That read is a value read, like nonzero's: under symtrace.compile it breaks the graph and
the call runs eagerly. The int64 indices so found are made a tensor on the input's device,
and the values are read from the input with gather/index_select, so gradients flow to the
input as torch's do (to the selected positions). Ties keep their original order (stable;
torch's unstable sort may order ties differently, its values are the same).

Value-free: cummax/cummin (a log-depth scan of (value, index) pairs with where, as
scans._scan) and isin (broadcast comparisons in chunks; the host past 2**28 comparisons)
read no values and trace into graphs; quantile sorts (a read) and then interpolates with
differentiable ops, as torch's quantile does."""
import builtins
import collections
import math

import numpy as np

from .. import _C
from .._symint import dyn_inline
from .._dtype import bfloat16, bool_, float16, float32, float64, int32, int64
from ._core import _check_int, _check_tensor, _is_tensor, _no_grad, _tname
from .elementwise import (ceil, clamp, eq, floor, ge, le, lerp, logical_and, logical_not,
                          logical_or, lt, mul, round, sub, to_dtype, where)
from .creation import arange, full, to_device, zeros
from .float_math import isnan
from .indexing import gather, index_select
from .rank_select import _rank_fits, _rank_topk_indices
from .shape import movedim
from .reductions import any, sum
from ..amp._policy import autocast_op


# ---- result types, as torch.return_types ----
class return_types:
    """The (values, indices) result types, one per function, as torch.return_types: tuples
    with .values and .indices."""


def _return_type(name, fields=("values", "indices")):
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"symtrace.return_types.{name}(\n{body})"

    t = type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                             "__module__": __name__, "__qualname__": "return_types." + name})
    setattr(return_types, name, t)
    return t


_sort_t = _return_type("sort")
_topk_t = _return_type("topk")
_kthvalue_t = _return_type("kthvalue")
_median_t = _return_type("median")
_nanmedian_t = _return_type("nanmedian")
_mode_t = _return_type("mode")
_cummax_t = _return_type("cummax")
_cummin_t = _return_type("cummin")


# ---- helpers ----
def _dim(dim, nd, fn):
    """dim wrapped into [0, max(nd, 1)), with torch's IndexError (a 0-d tensor takes 0 and -1)."""
    _check_int(dim, fn, "dim", 2)
    n = builtins.max(nd, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def _host(x):
    """x's values as a new numpy array on the host (float16/bfloat16 as float32). A value
    read: a graph break under symtrace.compile, as nonzero."""
    with _no_grad():
        t = x.detach()
        if t.dtype in (float16, bfloat16):
            t = to_dtype(t, float32)
        if t._device_str != "cpu":
            t = to_device(t, "cpu")
        return np.array(t.numpy(), copy=True)


def _long(a, like, dtype=int64):
    """The integer numpy array a as an int64 (or int32) tensor on like's device."""
    t = _C.tensor(np.array(a, dtype=np.int32 if dtype is int32 else np.int64, order="C"), dtype)
    return t if like._device_str == "cpu" else to_device(t, like._device_str)


def _order(a, axis, descending):
    """Stable argsort of the numpy array a along axis, NaN largest. descending keeps ties
    (NaNs too, which come first) in their original order, as torch's stable sort."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    o = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(o, axis)


def _is_float(t):
    return t.dtype.is_floating_point


def _no_bool(input, what):
    if input.dtype is bool_:
        raise NotImplementedError(f'"{what}" not implemented for \'Bool\'')


def _write_out(res, out, fn):
    """Copies the results into out= tensors (same shapes), as torch's out= variants."""
    if out is None:
        return res
    if not isinstance(out, (list, tuple)) or len(out) != len(res) or \
            not builtins.all(_is_tensor(o) for o in out):
        raise TypeError(f"{fn}(): argument 'out' must be a tuple of {len(res)} Tensors")
    if _C._is_grad_enabled() and builtins.any(r.requires_grad for r in res):
        raise RuntimeError(f"{fn}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    for o, r in zip(out, res):
        if tuple(o.shape) != tuple(r.shape):
            raise RuntimeError(f"{fn}(): out= tensor of shape {list(o.shape)} does not match the "
                               f"result's shape {list(r.shape)} (symtrace cannot resize it)")
        o.copy_(r)
    return type(res)(*out)


def _take_positions(input, d, pos, keepdim, rtype):
    """(values, indices) from pos, the original indices along dim d (a numpy array of the
    input's shape with dim d of size 1); values by gather (differentiable)."""
    x = input if input.dim() else input.reshape(1)
    idx = _long(pos, input)
    vals = gather(x, d, idx)
    if input.dim() == 0:
        return rtype(vals.reshape(()), idx.reshape(()))
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return rtype(vals, idx)


def _select(input, dim, keepdim, fn, pick, rtype):
    """A value-selecting reduction along dim: pick(rows) -> the chosen original index of
    each row, rows being a (..., n) numpy array (n > 0)."""
    nd = input.dim()
    d = _dim(dim, nd, fn)
    n = input.shape[d] if nd else 1
    if n == 0:
        raise IndexError(f"{fn}(): Expected reduction dim {d} to have non-zero size.")
    a = np.moveaxis(_host(input if nd else input.reshape(1)), d, -1)
    if a.size == 0:
        pos = np.zeros(a.shape[:-1], np.int64)
    else:
        pos = pick(a)
    return _take_positions(input, d, np.expand_dims(pos, d), keepdim, rtype)


# ---- sort, argsort, msort, topk ----
def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """sort(input, dim=-1, descending=False, stable=False, *, out=None) -> (values, indices):
    input sorted along dim, NaN as the largest value, as torch.sort. The order is found on the
    host (a value read: a graph break under symtrace.compile) with a stable sort whatever
    `stable` says (ties in their original order; torch's unstable sort may order ties
    differently); values are gather(input, dim, indices), differentiable."""
    _check_tensor(input, "sort")
    d = _dim(dim, input.dim(), "sort")
    x = input if input.dim() else input.reshape(1)
    idx = _long(_order(_host(x), d, bool(descending)), input)
    vals = gather(x, d, idx)
    if input.dim() == 0:
        vals, idx = vals.reshape(()), idx.reshape(())
    return _write_out(_sort_t(vals, idx), out, "sort")


def argsort(input, dim=-1, descending=False, stable=False):
    """argsort(input, dim=-1, descending=False, stable=False) -> int64 Tensor: the indices that
    sort input along dim (NaN largest, ties in original order), as torch.argsort. A host read
    (a graph break under symtrace.compile). torch's is sort's indices, so it reads input's
    history as sort does: an output of split / unbind whose base was since written in place
    raises (grad mode on and input requiring grad), argmax's kind of op does not."""
    _check_tensor(input, "argsort")
    if input.requires_grad and _C._is_grad_enabled():
        _ = input.grad_fn      # a multi-view output's stale history raises here, as torch's
    d = _dim(dim, input.dim(), "argsort")
    x = input if input.dim() else input.reshape(1)
    idx = _long(_order(_host(x), d, bool(descending)), input)
    return idx.reshape(()) if input.dim() == 0 else idx


def msort(input):
    """msort(input) = sort(input, dim=0).values, as torch.msort (a host read)."""
    _check_tensor(input, "msort")
    return sort(input, 0).values


@dyn_inline
def topk(input, k, dim=-1, largest=True, sorted=True):
    """topk(input, k, dim=-1, largest=True, sorted=True) -> (values, indices): the k largest
    (or smallest) elements along dim, NaN the largest, as torch.topk. The order is found on the
    host (under symtrace.compile, rows short enough are ranked by graph ops instead,
    rank_select.py: no break); the result is always sorted (torch's
    sorted=False order is unspecified); among equal values the lower index comes first.
    Values are gathered from input, so the gradient goes to the selected elements."""
    _check_tensor(input, "topk")
    _check_int(k, "topk", "k", 2)
    nd = input.dim()
    d = _dim(dim, nd, "topk")
    n = input.shape[d] if nd else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if input.dtype is bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    x = input if nd else input.reshape(1)
    if _rank_fits(x, d):
        # in a graph: ranks counted by graph ops (rank_select.py), the same order, no read
        idx = _rank_topk_indices(x, d, k, bool(largest))
    else:
        o = _order(_host(x), d, bool(largest))
        idx = _long(np.take(o, np.arange(k), axis=d), input)
    vals = gather(x, d, idx)
    if nd == 0:
        vals, idx = vals.reshape(()), idx.reshape(())
    return _topk_t(vals, idx)


# ---- kthvalue, median, nanmedian, mode ----
def kthvalue(input, k, dim=-1, keepdim=False):
    """kthvalue(input, k, dim=-1, keepdim=False) -> (values, indices): the k-th smallest element
    along dim (1-based; NaN the largest), as torch.kthvalue. Found on the host (a graph break
    under symtrace.compile); among equal values the index is that of the stable order (torch
    may return another of the equal elements)."""
    _check_tensor(input, "kthvalue")
    _check_int(k, "kthvalue", "k", 2)
    _no_bool(input, "kthvalue_cpu")
    nd = input.dim()
    d = _dim(dim, nd, "kthvalue")
    n = input.shape[d] if nd else 1
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _select(input, d, keepdim, "kthvalue",
                   lambda a: np.argsort(a, axis=-1, kind="stable")[..., k - 1], _kthvalue_t)


def _median_pick(ignore_nan):
    def pick(a):
        n = a.shape[-1]
        o = np.argsort(a, axis=-1, kind="stable")
        nnan = np.isnan(a).sum(-1) if a.dtype.kind == "f" else np.zeros(a.shape[:-1], np.int64)
        if ignore_nan:
            m = n - nnan
            pos = np.where(m > 0, (m - 1) // 2, 0)
        else:                       # a row with NaN: its first NaN (as torch)
            pos = np.where(nnan > 0, n - nnan, (n - 1) // 2)
        return np.take_along_axis(o, pos[..., None], -1)[..., 0]
    return pick


_EVEN = None


def _evenly_distributed():
    """An autograd.Function: value is the result, and the gradient is spread evenly over the
    elements mask marks (torch's evenly_distribute_backward, for median() without dim)."""
    global _EVEN
    if _EVEN is None:
        from ..autograd.function import Function

        class EvenlyDistributed(Function):
            @staticmethod
            def forward(ctx, input, value, mask):
                ctx.mask = mask
                return value.clone()

            @staticmethod
            def backward(ctx, grad):
                m = ctx.mask
                g = where(m, grad / sum(m), 0.0)
                return g, None, None
        _EVEN = EvenlyDistributed
    return _EVEN


def _median_all(input, ignore_nan, fn):
    _check_tensor(input, fn)
    _no_bool(input, "median_cpu")
    flat = input.reshape(-1)
    if flat.numel() == 0:
        if not _is_float(input):
            raise RuntimeError(f"{fn}() of an empty {_tname(input.dtype)} tensor is undefined "
                               "(torch returns an unspecified value)")
        return full((), math.nan, dtype=input.dtype, device=input.device)
    i = _median_pick(ignore_nan)(_host(flat)[None])[0]
    with _no_grad():
        value = index_select(flat.detach(), 0, _long(np.array([i]), input)).reshape(())
    if not (input.requires_grad and _C._is_grad_enabled()):
        return value
    with _no_grad():
        d = input.detach()
        mask = isnan(d) if math.isnan(value.item()) else eq(d, value)
    return _evenly_distributed().apply(input, value, mask)


def median(input, dim=None, keepdim=False):
    """median(input) -> 0-d Tensor; median(input, dim, keepdim=False) -> (values, indices):
    the lower median (of an even count, the smaller middle value), as torch.median; NaN if
    there is one (the dim form points at a row's first NaN). Found on the host (a graph break
    under symtrace.compile). Gradients as torch: without dim spread evenly over the elements
    equal to the median, with dim to the selected element (among equal values that of the
    stable order; torch may pick another)."""
    if dim is None:
        return _median_all(input, False, "median")
    _check_tensor(input, "median")
    _no_bool(input, "median_out")
    return _select(input, dim, keepdim, "median", _median_pick(False), _median_t)


def nanmedian(input, dim=None, keepdim=False):
    """nanmedian(input[, dim, keepdim]): median ignoring NaN (NaN where a row is all NaN), as
    torch.nanmedian; a host read, gradients as median."""
    if dim is None:
        return _median_all(input, True, "nanmedian")
    _check_tensor(input, "nanmedian")
    _no_bool(input, "median_out")
    return _select(input, dim, keepdim, "nanmedian", _median_pick(True), _nanmedian_t)


def _mode_pick(a):
    lead, n = a.shape[:-1], a.shape[-1]
    a2 = a.reshape(-1, n)
    rows = a2.shape[0]
    o = np.argsort(a2, axis=-1, kind="stable")
    s = np.take_along_axis(a2, o, -1)
    start = np.ones((rows, n), bool)
    start[:, 1:] = s[:, 1:] != s[:, :-1]           # NaN != NaN: each NaN a run of its own
    end = np.ones((rows, n), bool)
    end[:, :-1] = start[:, 1:]
    gid = np.cumsum(start.ravel()) - 1
    cnt = np.bincount(gid, minlength=1)[gid].reshape(rows, n)
    p = np.argmax(np.where(end, cnt, -1), axis=-1)  # the first (smallest) most frequent value
    return o[np.arange(rows), p].reshape(lead)      # its last occurrence


def mode(input, dim=-1, keepdim=False):
    """mode(input, dim=-1, keepdim=False) -> (values, indices): the most frequent value along
    dim (the smallest of equally frequent ones) and the index of its last occurrence, as
    torch.mode. Found on the host (a graph break under symtrace.compile); each NaN counts as
    a value of its own (torch's choice among NaNs is unspecified)."""
    _check_tensor(input, "mode")
    return _select(input, dim, keepdim, "mode", _mode_pick, _mode_t)


# ---- quantile, nanquantile ----
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, fn):
    _check_tensor(input, fn)
    if not _is_tensor(q):
        if isinstance(q, bool) or not isinstance(q, (int, float)):
            raise TypeError(f"{fn}(): argument 'q' must be Tensor or float, not {type(q).__name__}")
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q:g}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or "
                           f"nearest, but got {interpolation}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if _is_tensor(q) and q.dim() > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (float32, float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if _is_tensor(q):
        if q.dtype is not input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if q._device_str != input._device_str:
            raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")
        if q.numel() and not _C._trace_active():
            qa = _host(q)
            if not ((qa >= 0) & (qa <= 1)).all():
                raise RuntimeError("quantile() q values must be in the range [0, 1]")
        qv, scalar_q = q.reshape(-1), q.dim() == 0
    else:
        qv, scalar_q = full((1,), q, dtype=input.dtype, device=input.device), True
    nd = input.dim()
    if dim is None:
        x = input.reshape(-1)
        out_shape = (1,) * nd if keepdim else ()
    else:
        d = _dim(dim, nd, fn)
        x = movedim(input, d, -1) if nd else input.reshape(1)
        shape = list(input.shape)
        if nd:
            if keepdim:
                shape[d] = 1
            else:
                del shape[d]
        out_shape = tuple(shape)
    srt = sort(x, -1).values                          # (..., n)
    n = srt.shape[-1]
    lead = tuple(srt.shape[:-1])
    with _no_grad():
        nan_at = isnan(srt.detach())
        if ignore_nan:
            cnt = sum(logical_not(nan_at), -1, keepdim=True)
            ranks = mul(qv, sub(cnt, 1))
            ranks = where(lt(ranks, 0), 0.0, ranks)
        else:
            ranks = where(any(nan_at, -1, keepdim=True), float(n - 1), mul(qv, n - 1))
        ranks = ranks.expand(lead + (qv.shape[0],))
        if interpolation == "lower":
            ranks = floor(ranks)
        elif interpolation == "higher":
            ranks = ceil(ranks)
        elif interpolation == "nearest":
            ranks = round(ranks)
        below = to_dtype(ranks, int64)
        if interpolation in ("linear", "midpoint"):
            weights = full(tuple(ranks.shape), 0.5, dtype=input.dtype, device=input.device) \
                if interpolation == "midpoint" else sub(ranks, to_dtype(below, input.dtype))
            above = to_dtype(ceil(ranks), int64)
    r = gather(srt, -1, below)
    if interpolation in ("linear", "midpoint"):
        r = lerp(r, gather(srt, -1, above), weights)
    if scalar_q:
        return r.reshape(out_shape)
    return movedim(r, -1, 0).reshape((qv.shape[0],) + out_shape)


@autocast_op("fp32", devices=("cpu",))
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile(input, q, dim=None, keepdim=False, *, interpolation='linear'): the q-th
    quantiles (q a float or a 1-D tensor of input's dtype, in [0, 1]) along dim (the flattened
    input when None), as torch.quantile: sorted values (a host read: a graph break under
    symtrace.compile) interpolated between the two nearest ranks (linear, lower, higher,
    midpoint, nearest); NaN where a row has one. A tensor q adds its length as the first dim
    of the result. Differentiable (gather and lerp), float32/float64 only, as torch."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


@autocast_op("fp32", devices=("cpu",))
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """nanquantile(...): quantile ignoring NaN (NaN where a row is all NaN), as
    torch.nanquantile."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


# ---- unique, unique_consecutive ----
def _unique_result(values, inverse, counts, return_inverse, return_counts, like):
    if not return_inverse and not return_counts:
        return values
    out = [values]
    if return_inverse:
        out.append(_long(inverse, like))
    if return_counts:
        out.append(_long(counts, like))
    return tuple(out)


def _runs(start, n):
    """(first positions, run id of each position, run lengths) of a run-start mask."""
    first = np.flatnonzero(start)
    gid = np.cumsum(start) - 1
    counts = np.diff(np.append(first, n)).astype(np.int64)
    return first, gid.astype(np.int64), counts


def _rows(input, d, fn):
    """input with dim d first, as an (n, -1) host array, for the dim= forms."""
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    dd = _dim(d, input.dim(), fn)
    n = input.shape[dd]
    if n and input.numel() == 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    a = np.moveaxis(_host(input), dd, 0)
    a = a.reshape(n, -1) if n else a.reshape(0, 0)
    return dd, n, a


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None): the
    distinct elements in ascending order (each NaN distinct, last), and optionally the index of
    each input element in them (input's shape) and their counts, as torch.unique; with dim,
    the distinct slices along dim in lexicographic order. The count depends on values, which
    are read on the host (a graph break under symtrace.compile). Always sorted (as torch on
    CPU). The output does not require grad (torch's has no derivative either)."""
    _check_tensor(input, "unique")
    if dim is not None:
        d, n, a = _rows(input, dim, "unique")
        if n == 0:
            order = np.zeros(0, np.int64)
        elif a.shape[1] == 0:
            order = np.arange(n)
        else:
            order = np.lexsort(a.T[::-1])
        s = a[order]
        start = np.ones(n, bool)
        if n > 1:
            start[1:] = np.any(s[1:] != s[:-1], axis=1)
        first, gid, counts = _runs(start, n)
        inverse = np.empty(n, np.int64)
        inverse[order] = gid
        with _no_grad():
            values = index_select(input.detach(), d, _long(order[first], input))
        return _unique_result(values, inverse, counts, return_inverse, return_counts, input)
    flat = input.reshape(-1)
    a = _host(flat)
    n = a.size
    order = np.argsort(a, kind="stable")
    s = a[order]
    start = np.ones(n, bool)
    start[1:] = s[1:] != s[:-1]
    first, gid, counts = _runs(start, n)
    inverse = np.empty(n, np.int64)
    inverse[order] = gid
    with _no_grad():
        values = index_select(flat.detach(), 0, _long(order[first], input))
    return _unique_result(values, inverse.reshape(tuple(input.shape)), counts, return_inverse,
                          return_counts, input)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """unique_consecutive(input, return_inverse=False, return_counts=False, dim=None): each run
    of consecutive equal elements (slices along dim) collapsed to one, with the optional
    inverse indices and run lengths, as torch.unique_consecutive. A host read (a graph break
    under symtrace.compile); the output does not require grad."""
    _check_tensor(input, "unique_consecutive")
    if dim is not None:
        d, n, a = _rows(input, dim, "unique_consecutive")
        start = np.ones(n, bool)
        if n > 1:
            start[1:] = np.any(a[1:] != a[:-1], axis=1)
        first, gid, counts = _runs(start, n)
        with _no_grad():
            values = index_select(input.detach(), d, _long(first, input))
        return _unique_result(values, gid, counts, return_inverse, return_counts, input)
    flat = input.reshape(-1)
    a = _host(flat)
    n = a.size
    start = np.ones(n, bool)
    start[1:] = a[1:] != a[:-1]
    first, gid, counts = _runs(start, n)
    with _no_grad():
        values = index_select(flat.detach(), 0, _long(first, input))
    return _unique_result(values, gid.reshape(tuple(input.shape)), counts, return_inverse,
                          return_counts, input)


# ---- searchsorted, bucketize ----
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
    sorter=None): for each value of input, the index where it would be inserted into the
    innermost dim of sorted_sequence to keep it sorted (the first such index, or the last with
    right=True / side='right'); sorted_sequence is 1-D or matches input's leading dims; sorter
    sorts an unsorted sequence. As torch.searchsorted: int64 (int32) indices of input's shape.
    Found with numpy's searchsorted on the host (a value read: a graph break under
    symtrace.compile); NaN in sorted_sequence sorts last there."""
    _check_tensor(sorted_sequence, "searchsorted", "sorted_sequence")
    bd = sorted_sequence
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if side == "left" and right:
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got "
                               "side of left while right was True")
        right = side == "right"
    scalar = not _is_tensor(input)
    if scalar and not isinstance(input, (bool, int, float)):
        raise TypeError(f"searchsorted(): argument 'input' must be Tensor or Number, not "
                        f"{type(input).__name__}")
    if sorter is not None:
        _check_tensor(sorter, "searchsorted", "sorter")
        if tuple(sorter.shape) != tuple(bd.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, "
                               f"but got boundary tensor {list(bd.shape)}and got sorter tensor "
                               f"{list(sorter.shape)}")
        if sorter.dtype is not int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got "
                               f"dtype {_tname(sorter.dtype)}")
    in_dim = 0 if scalar else input.dim()
    if in_dim == 0 and bd.dim() != 1:
        raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries "
                           f"tensor dimension is 1, but we got boundaries tensor dim({bd.dim()}) and "
                           f"input value's dim(0) numel(1)")
    if bd.dim() == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, "
                           "but got 0 dimension")
    if bd.dim() != 1 and (bd.dim() != in_dim or tuple(bd.shape[:-1]) != tuple(input.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           f"first N-1 dimensions of boundaries tensor and input value tensor must "
                           f"match, but we got boundaries tensor {list(bd.shape)} and input value "
                           f"tensor {list(input.shape)}")
    # the boundaries and values are compared in their common dtype (bool values
    # against float / int boundaries, as torch): refused only when that is bool
    if _C.result_type(bd, input) is bool_:
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    b = _host(bd)
    v = np.asarray(input) if scalar else _host(input)
    if sorter is not None:
        srt = _host(sorter)
        m = bd.shape[-1]
        if srt.size and (srt.min() < 0 or srt.max() >= m):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        b = np.take_along_axis(b, srt, -1)
    common = np.result_type(b.dtype, v.dtype)
    b, v = b.astype(common, copy=False), v.astype(common, copy=False)
    if b.ndim == 1:
        r = _bisect(b.reshape(1, -1), v.reshape(1, -1), right).reshape(v.shape)
    else:
        n = int(np.prod(b.shape[:-1]))
        r = _bisect(b.reshape(n, b.shape[-1]), v.reshape(n, v.shape[-1]), right).reshape(v.shape)
    return _long(np.asarray(r), bd, int32 if out_int32 else int64)


def _bisect(b, v, right):
    """Per row i, the insertion points of v[i] in b[i] by torch's binary search: it moves
    right while not (b[mid] >= v) (left) / not (b[mid] > v) (right), so a NaN value, or a NaN
    boundary met on the way, counts as greater than everything (numpy's searchsorted sorts
    NaN last instead: other indices)."""
    lo = np.zeros(v.shape, np.int64)
    hi = np.full(v.shape, b.shape[-1], np.int64)
    if b.shape[-1] == 0 or v.size == 0:
        return lo
    with np.errstate(invalid="ignore"):
        while True:
            act = lo < hi
            if not act.any():
                return lo
            mid = (lo + hi) >> 1
            mv = np.take_along_axis(b, np.minimum(mid, b.shape[-1] - 1), -1)
            go = ~(mv > v) if right else ~(mv >= v)
            lo = np.where(act & go, mid + 1, lo)
            hi = np.where(act & ~go, mid, hi)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """bucketize(input, boundaries, *, out_int32=False, right=False): the index of the bucket
    of each value of input between the 1-D sorted boundaries (searchsorted(boundaries, input,
    right=right)), as torch.bucketize; a host read."""
    _check_tensor(boundaries, "bucketize", "boundaries")
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ---- cummax, cummin ----
def _cum_extreme(input, dim, fn, rtype, later_wins):
    """(values, indices) of the running max/min along dim: a log-depth scan of (value,
    index, isnan) with where (no value read). The later element wins a tie (torch's >= / <=)
    and a NaN wins over everything (it then stays), as torch; values are gathered from input
    at the indices (gradient to the selected elements, as torch)."""
    _check_tensor(input, fn)
    nd = input.dim()
    d = _dim(dim, nd, fn)
    x = input if nd else input.reshape(1)
    n = x.shape[d]
    with _no_grad():
        v = x.detach()
        if v.dtype is bool_:
            v = to_dtype(v, int32)
        isn = isnan(v)
        shape = [1] * x.dim()
        shape[d] = n
        pos = arange(n, device=x.device)
        idx = pos.reshape(tuple(shape)).expand(tuple(x.shape)).contiguous()
        k = 1
        while k < n:
            src = clamp(sub(pos, k), min=0)
            bv, bi, bn = index_select(v, d, src), index_select(idx, d, src), index_select(isn, d, src)
            keep = logical_or(isn, logical_and(logical_not(bn), later_wins(v, bv)))
            take = logical_and(ge(pos, k).reshape(tuple(shape)), logical_not(keep))
            v, idx, isn = where(take, bv, v), where(take, bi, idx), where(take, bn, isn)
            k *= 2
    vals = gather(x, d, idx)
    if nd == 0:
        vals, idx = vals.reshape(()), idx.reshape(())
    return rtype(vals, idx)


def cummax(input, dim):
    """cummax(input, dim) -> (values, indices): the running maximum along dim and where it was
    found (the latest of equal values; NaN propagates), as torch.cummax. No value read."""
    return _cum_extreme(input, dim, "cummax", _cummax_t, ge)


def cummin(input, dim):
    """cummin(input, dim) -> (values, indices): the running minimum along dim, as
    torch.cummin (see cummax)."""
    return _cum_extreme(input, dim, "cummin", _cummin_t, le)


# ---- isin ----
_ISIN_CHUNK = 1 << 24
_ISIN_DENSE = 1 << 28


def _as_tensor(v, like):
    """A number as isin's other operand: a 0-d tensor of the dtype torch's promotion of a
    wrapped number gives with like (a bool stays bool, and is refused below)."""
    if isinstance(v, bool):
        return full((), v, dtype=bool_, device=like.device)
    if not isinstance(v, (int, float)):
        raise TypeError(f"isin(): argument 'test_elements' must be Tensor or Number, not "
                        f"{type(v).__name__}")
    return full((), v, dtype=_C.result_type(like, v), device=like.device)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """isin(elements, test_elements, *, assume_unique=False, invert=False) -> bool Tensor of
    elements' shape: whether each element is in test_elements (either may be a number), as
    torch.isin; NaN is in nothing. Broadcast comparisons in chunks of 2**24 (no value read,
    traceable); past 2**28 comparisons, numpy's isin on the host."""
    e_t, t_t = _is_tensor(elements), _is_tensor(test_elements)
    if not e_t and not t_t:
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but expected "
                        "one of: (Tensor elements, Tensor test_elements, *, bool assume_unique, bool "
                        "invert), (Tensor elements, Number test_element, ...), (Number element, "
                        "Tensor test_elements, ...)")
    if not e_t:
        elements = _as_tensor(elements, test_elements)
    if not t_t:
        test_elements = _as_tensor(test_elements, elements)
    if elements.dtype is bool_ or test_elements.dtype is bool_:
        raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    shape = tuple(elements.shape)
    e = elements.reshape(-1)
    t = test_elements.reshape(-1)
    n, m = e.numel(), t.numel()
    if n == 0 or m == 0:
        r = zeros(shape, dtype=bool_, device=elements.device)
    elif n * m <= _ISIN_DENSE:
        with _no_grad():
            step = builtins.max(1, _ISIN_CHUNK // n)
            r = None
            e2 = e.reshape(n, 1)
            for s in range(0, m, step):
                part = any(eq(e2, t._slice(0, s, builtins.min(s + step, m), 1).reshape(1, -1)), 1)
                r = part if r is None else logical_or(r, part)
        r = r.reshape(shape)
    else:
        a, b = _host(e), _host(t)
        hit = np.isin(a, b) & ~np.isnan(a) if a.dtype.kind == "f" else np.isin(a, b)
        r = _C.tensor(np.ascontiguousarray(hit), bool_).reshape(shape)
        if elements._device_str != "cpu":
            r = to_device(r, elements._device_str)
    return logical_not(r) if invert else r
