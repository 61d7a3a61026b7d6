"""Reductions: the sum/mean/prod/amax/amin/argmax/argmin/logsumexp kernels, max and min
(with their (values, indices) form), softmax and log_softmax; and, decomposed onto them,
var/std (and *_mean), norm, any/all, count_nonzero, nansum/nanmean, dist and aminmax.
Running ops along a dim (cumsum, cumprod, ...) are in scans.py."""
import builtins
import collections
import math
import warnings

from .. import _C
from .._dtype import bfloat16, bool_, float16, float32, float64, uint8
from ._core import (KEEPDIM, _attrs, _check_grad_dtype, _check_tensor, _dims, _is_tensor, _op, _tname,
                    _wrap, _wrap_dims)
from .elementwise import (abs, div, eq, exp, gt, log, logical_not, maximum, minimum, mul, ne, pow, sqrt, sub,
                          to_dtype, where)
from .creation import _scalar0
from .._symint import dyn_inline
from .float_math import isnan
from .indexing import gather


# ---------------- reductions ----------------
def _reduce(opid, input, dim, keepdim, fname):
    _check_tensor(input, fname)
    dims = _dims(dim)
    return _op(opid, (input,), _attrs(dims=dims, flags=KEEPDIM if keepdim else 0))


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """sum(input, dim=None, keepdim=False, *, dtype=None)."""
    _check_grad_dtype(input, dtype)
    if dtype is not None:
        input = to_dtype(input, dtype)
    r = _reduce(_C.OP_SUM, input, dim, keepdim, "sum")
    # an explicit small integer dtype is kept (the kernel widens to int64; wrapping agrees)
    return r if dtype is None or r.dtype is dtype else to_dtype(r, dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """mean(input, dim=None, keepdim=False, *, dtype=None)."""
    if getattr(dtype, "is_floating_point", True) is False:
        raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be either "
                           f"a floating point or complex dtype. Got: {_tname(dtype)}")
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _reduce(_C.OP_MEAN, input, dim, keepdim, "mean")


def prod(input, dim=None, keepdim=False, *, dtype=None):
    if isinstance(dim, (tuple, list)):      # torch.prod reduces one dim or all of them
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    _check_grad_dtype(input, dtype)
    if dtype is not None:
        input = to_dtype(input, dtype)
    r = _reduce(_C.OP_PROD, input, dim, keepdim, "prod")
    # an explicit small integer dtype is kept (the kernel widens to int64; wrapping agrees)
    return r if dtype is None or r.dtype is dtype else to_dtype(r, dtype)


def amax(input, dim=(), keepdim=False):
    """amax(input, dim=(), keepdim=False): () reduces every dim, as in torch."""
    return _reduce(_C.OP_AMAX, input, None if dim == () else dim, keepdim, "amax")


def logsumexp(input, dim, keepdim=False):
    """logsumexp(input, dim, keepdim=False) = log(sum(exp(input), dim)),
    computed stably (the max subtracted first), as torch.logsumexp."""
    _check_tensor(input, "logsumexp")
    if not input.dtype.is_floating_point:  # torch computes integers in the default float
        input = to_dtype(input, _C.float32)
    if input.numel() == 0:   # the kernel's max step rejects an empty reduction: log(0) = -inf
        return log(sum(exp(input), dim, keepdim))
    return _reduce(_C.OP_LOGSUMEXP, input, dim, keepdim, "logsumexp")


def amin(input, dim=(), keepdim=False):
    return _reduce(_C.OP_AMIN, input, None if dim == () else dim, keepdim, "amin")


def _flat_values(input):
    """input.reshape(-1) of a detached alias: for results without a gradient (indices), so
    that a split output whose base was written in place is read as torch reads it (no
    view of it is made in autograd's sense, which torch refuses)."""
    return input.detach().reshape(-1)


def argmax(input, dim=None, keepdim=False):
    """argmax(input, dim=None, keepdim=False): None means the flattened input."""
    _check_tensor(input, "argmax")
    if dim is None:
        r = _op(_C.OP_ARGMAX, (_flat_values(input),), _attrs())
        return r.reshape((1,) * input.dim()) if keepdim else r
    return _reduce(_C.OP_ARGMAX, input, dim, keepdim, "argmax")


def argmin(input, dim=None, keepdim=False):
    _check_tensor(input, "argmin")
    if dim is None:
        r = _op(_C.OP_ARGMIN, (_flat_values(input),), _attrs())
        return r.reshape((1,) * input.dim()) if keepdim else r
    return _reduce(_C.OP_ARGMIN, input, dim, keepdim, "argmin")


_minmax = collections.namedtuple("return_types", ["values", "indices"])


def _minmax_dim(input, dim, keepdim, red, arg):
    """max/min along dim. When a gradient is wanted the values are gathered at the
    returned indices, so ties send it to that index only, as torch (amax/amin split it)."""
    src = input.int() if input.dtype is bool_ else input
    if input.dim() == 0 and input.requires_grad and _C._is_grad_enabled():
        # a 0-d input is its own value; amin/amax's backward would save it, so an in-place
        # write to it afterwards failed the backward (torch saves only the index)
        return _minmax(input.clone(), arg(src, dim, keepdim))
    if not (input.requires_grad and _C._is_grad_enabled() and input.dim() > 0
            and input.numel() > 0):
        return _minmax(red(input, dim, keepdim), arg(src, dim, keepdim))
    d = _wrap(dim, input.dim(), red.__name__[1:])
    idx = arg(src, d, True)
    vals = gather(input, d, idx)
    if not keepdim:
        idx, vals = idx.squeeze(d), vals.squeeze(d)
    return _minmax(vals, idx)


def max(input, dim=None, keepdim=False):
    """max(input) -> 0-d; max(input, dim, keepdim) -> (values, indices);
    max(input, other) -> maximum."""
    _check_tensor(input, "max")
    if _is_tensor(dim):
        return maximum(input, dim)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return amax(input)
    return _minmax_dim(input, dim, keepdim, amax, argmax)


def min(input, dim=None, keepdim=False):
    _check_tensor(input, "min")
    if _is_tensor(dim):
        return minimum(input, dim)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return amin(input)
    return _minmax_dim(input, dim, keepdim, amin, argmin)


def softmax(input, dim, dtype=None):
    _check_tensor(input, "softmax")
    if dtype is not None:
        input = to_dtype(input, dtype)
    if input.numel() == 0 and input.dtype.is_floating_point:   # nothing to normalise
        _wrap(dim, input.dim(), "softmax")
        return input.clone()
    return _op(_C.OP_SOFTMAX, (input,), _attrs(ints=(dim,)))


def log_softmax(input, dim, dtype=None):
    _check_tensor(input, "log_softmax")
    if dtype is not None:
        input = to_dtype(input, dtype)
    if input.numel() == 0 and input.dtype.is_floating_point:   # nothing to normalise
        _wrap(dim, input.dim(), "log_softmax")
        return input.clone()
    return _op(_C.OP_LOG_SOFTMAX, (input,), _attrs(ints=(dim,)))


# ---- variance, standard deviation, norms ----
# dyn_inline (symtrace/_symint.py): under dynamic shapes the count n and the divisor
# n - c stay expressions of the sizes (the divisor a 0-d tensor of the graph)
@dyn_inline
def _var_mean(input, dim, unbiased, keepdim, correction, fn, root=False):
    _check_tensor(input, fn)
    if isinstance(dim, bool):        # the legacy var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{fn}(): argument 'unbiased' given twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{fn}(): arguments 'unbiased' and 'correction' cannot both be given")
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    nd = input.dim()
    dims = _dims(dim)
    if dims:
        wd = _wrap_dims(dims, nd, fn)
        n = 1
        for d in wd if nd else ():
            n = n * input.shape[d]
    else:                             # None, () and []: every dim
        dims, n = None, input.numel()
    c = correction if correction is not None else (0 if unbiased is False else 1)
    if n - c <= 0:
        warnings.warn(f"{fn}(): degrees of freedom is <= 0. Correction should be strictly less than "
                      "the reduction factor (input numel divided by output numel).", stacklevel=3)
    x = input if input.dtype in (float32, float64) else to_dtype(input, float32)
    m = mean(x, dims, True)
    d = sub(x, m)
    dof = n - c if n - c > 0 else 0
    v = sum(mul(d, d), dims, keepdim) / dof
    if not keepdim:
        m = m.reshape(v.shape)
    if root:                          # std: the root before the one rounding to a half type;
        # its gradient at std == 0 (equal values) is 0, as torch's, not inf * 0 = NaN
        v = _safe_root(v, 2) if v.requires_grad else sqrt(v)
    if x is not input:
        v, m = to_dtype(v, input.dtype), to_dtype(m, input.dtype)
    return v, m


@dyn_inline
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """var(input, dim=None, *, correction=1, keepdim=False): sum((x - mean)^2) / (N - correction)
    (also the legacy var(input, dim, unbiased, keepdim) and var(input, unbiased)); as torch.var."""
    return _var_mean(input, dim, unbiased, keepdim, correction, "var")[0]


@dyn_inline
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """std(input, dim=None, *, correction=1, keepdim=False) = sqrt(var); as torch.std."""
    return _var_mean(input, dim, unbiased, keepdim, correction, "std", root=True)[0]


@dyn_inline
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """var_mean(input, dim=None, *, correction=1, keepdim=False) -> (var, mean); as torch.var_mean."""
    return _var_mean(input, dim, unbiased, keepdim, correction, "var_mean")


@dyn_inline
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """std_mean(input, dim=None, *, correction=1, keepdim=False) -> (std, mean); as torch.std_mean."""
    return _var_mean(input, dim, unbiased, keepdim, correction, "std_mean", root=True)


def _safe_root(s, p):
    """s ** (1/p) for s >= 0 whose gradient at s == 0 is 0 (torch's norm backward
    masks the zero norm), not inf * 0 = nan."""
    zero = eq(s, 0)
    s1 = where(zero, _scalar0(s, 1), s)
    r = sqrt(s1) if p == 2 else pow(s1, 1.0 / p)
    return where(zero, _scalar0(s, 0), r)


def _vector_norm(input, p, dim, keepdim, dtype, fn):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. "
                           f"Got {_tname(input.dtype)}")
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"{fn}: dtype should be floating point or complex, but got {_tname(dtype)}")
        input = to_dtype(input, dtype)
    dims = _dims(dim) or None
    if dims is not None:
        _wrap_dims(dims, input.dim(), fn)
    p = float(p)
    if input.dtype in (float16, bfloat16) and p not in (math.inf, -math.inf, 0.0):
        # torch accumulates half types in float and rounds once: squares and the root too
        return to_dtype(_vector_norm(to_dtype(input, float32), p, dim, keepdim, None, fn),
                        input.dtype)
    if input.numel() == 0 and (p < 0 or p == math.inf):
        # no identity: refused over every dim or an empty one, as torch's (its words)
        if dims is None:
            raise RuntimeError(f"{fn} cannot compute the {p:g} norm on an empty tensor because the "
                               "operation does not have an identity")
        for d in dims:
            if input.shape[d] == 0:
                raise RuntimeError(f"{fn} cannot compute the {p:g} norm on the dimension {d}because "
                                   "this dimension is empty and the operation does not have an identity")
    if p in (math.inf, -math.inf):
        red = amax if p > 0 else amin
        return red(abs(input), () if dims is None else dims, keepdim)
    if p == 0:   # the count of nonzeros; differentiable with a zero gradient, as torch's
        cnt = sum(to_dtype(ne(input, 0), input.dtype), dims, keepdim)
        if not input.requires_grad:
            return cnt
        return where(eq(cnt, cnt), cnt, sum(input, dims, keepdim))
    if p == 1:
        return sum(abs(input), dims, keepdim)
    if p == 2:
        return _safe_root(sum(mul(input, input), dims, keepdim), 2)
    a = abs(input)
    if 0 < p < 1:   # |x|^p at x = 0 has an infinite slope: torch's gradient there is 0
        zero = eq(a, 0)
        return _safe_root(sum(where(zero, 0.0, pow(where(zero, 1.0, a), p)), dims, keepdim), p)
    if p < 0:       # a zero entry makes the norm 0, with a zero gradient (torch's)
        zero = eq(a, 0)
        r = pow(sum(pow(where(zero, 1.0, a), p), dims, keepdim), 1.0 / p)
        return where(gt(sum(to_dtype(zero, input.dtype), dims, keepdim), 0), 0.0, r)
    return _safe_root(sum(pow(a, p), dims, keepdim), p)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """norm(input, p='fro', dim=None, keepdim=False, dtype=None): the vector p-norm over dim
    (every dim when None) for p = 'fro' (2), any real p, inf, -inf or 0 (the count of
    nonzeros); 'nuc' the nuclear norm of the matrices in the two dims (symtrace.linalg's
    matrix_norm). As torch.norm."""
    _check_tensor(input, "norm")
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            p = 2
        else:   # 'nuc', or a call that matrix_norm refuses with torch's error
            from ..linalg import matrix_norm
            dims = list(range(input.dim())) if dim is None else ([dim] if isinstance(dim, int) else dim)
            return matrix_norm(input, p, dims, keepdim, dtype=dtype)
    elif p is None:
        p = 2
    return _vector_norm(input, p, dim, keepdim, dtype, "linalg.vector_norm")


# ---- reductions, decomposed ----
def _reduce_dims(input, dim, fn):
    """dim as a tuple of wrapped dims, or None for every dim (None, () and [])."""
    dims = _dims(dim)
    if not dims:
        return None
    _wrap_dims(dims, input.dim(), fn)
    return dims


def any(input, dim=None, keepdim=False):
    """any(input, dim=None, keepdim=False) -> bool Tensor: some element nonzero (over dim:
    an int or a tuple; every dim when None); False for an empty reduction; as torch.any."""
    _check_tensor(input, "any")
    nz = ne(input, 0)
    if isinstance(dim, (list, tuple)) and not dim:     # dim=(): nothing reduced, as torch
        return nz.to(uint8) if input.dtype is uint8 else nz
    r = gt(sum(nz, _reduce_dims(input, dim, "any"), keepdim), 0)
    return r.to(uint8) if input.dtype is uint8 else r     # torch keeps uint8 for uint8


def all(input, dim=None, keepdim=False):
    """all(input, dim=None, keepdim=False) -> bool Tensor: every element nonzero (True for
    an empty reduction); as torch.all."""
    _check_tensor(input, "all")
    if isinstance(dim, (list, tuple)) and not dim:
        r = ne(input, 0)
    else:
        r = eq(sum(eq(input, 0), _reduce_dims(input, dim, "all"), keepdim), 0)
    return r.to(uint8) if input.dtype is uint8 else r


def count_nonzero(input, dim=None):
    """count_nonzero(input, dim=None) -> int64 Tensor: the number of nonzeros over dim (an
    int or a tuple; every dim when None); as torch.count_nonzero."""
    _check_tensor(input, "count_nonzero")
    nz = input if input.dtype is bool_ else ne(input, 0)
    return sum(nz, _reduce_dims(input, dim, "count_nonzero"))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """nansum(input, dim=None, keepdim=False, *, dtype=None): sum with nan counted as 0;
    as torch.nansum."""
    _check_tensor(input, "nansum")
    _check_grad_dtype(input, dtype)
    if dtype is not None:
        input = to_dtype(input, dtype)
    if input.dtype.is_floating_point:
        input = where(isnan(input), _scalar0(input, 0), input)
    r = sum(input, _reduce_dims(input, dim, "nansum"), keepdim)
    # an explicit integer dtype is the result's (sum widens integers to int64)
    return r if dtype is None or r.dtype is dtype else to_dtype(r, dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """nanmean(input, dim=None, keepdim=False, *, dtype=None): the mean of the non-nan
    elements (nan where there are none); floating dtypes; as torch.nanmean."""
    _check_tensor(input, "nanmean")
    if not input.dtype.is_floating_point:   # input's dtype, whatever dtype= says (torch's)
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but "
                           f"got {_tname(input.dtype)}")
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError("nanmean(): could not infer output dtype. Optional dtype must be either "
                               f"a floating point or complex dtype. Got: {_tname(dtype)}")
        input = to_dtype(input, dtype)
    dims = _reduce_dims(input, dim, "nanmean")
    keep = logical_not(isnan(input))
    s = sum(where(keep, input, _scalar0(input, 0)), dims, keepdim)
    return div(s, to_dtype(sum(keep, dims, keepdim), s.dtype))


def dist(input, other, p=2):
    """dist(input, other, p=2) -> 0-d Tensor: the p-norm of input - other (broadcast);
    floating dtypes; as torch.dist."""
    _check_tensor(input, "dist")
    _check_tensor(other, "dist", "other")
    for t in (input, other):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                               f"Got {_tname(t.dtype)} instead.")
    return _vector_norm(sub(input, other), p, None, False, None, "dist")


_aminmax = collections.namedtuple("aminmax", ["min", "max"])


def aminmax(input, *, dim=None, keepdim=False):
    """aminmax(input, *, dim=None, keepdim=False) -> (min, max); as torch.aminmax."""
    _check_tensor(input, "aminmax")
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        mn, mx = amin(input), amax(input)
        if keepdim:
            mn, mx = mn.reshape((1,) * input.dim()), mx.reshape((1,) * input.dim())
        return _aminmax(mn, mx)
    d = _wrap(dim, builtins.max(input.dim(), 1), "aminmax")
    if input.dim() and input.shape[d] == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if input.dim() == 0:
        return _aminmax(input.clone(), input.clone())
    return _aminmax(amin(input, d, keepdim), amax(input, d, keepdim))
