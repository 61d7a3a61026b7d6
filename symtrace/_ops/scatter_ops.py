"""Writes by index and value-dependent selections: scatter, scatter_reduce, index_add,
index_copy, index_fill and masked_scatter (onto the scatter and scatter_add primitives, a
running count and dense one-hots); nonzero and argwhere; and one_hot (_one_hot, for
nn.functional.one_hot). Reads by index are in indexing.py."""
import builtins
import math

from .. import _C
from .._dtype import bool_, int64
from ._core import _attrs, _bshape, _check_tensor, _is_tensor, _no_grad, _tname, _wrap
from .dtypes import iinfo
from .elementwise import (add, clamp, div, eq, floor_divide, gt, lt, maximum, minimum, mul, ne,
                          remainder, sub, to_dtype, where)
from .creation import _scalar0, _zero_of, arange, full, ones, ones_like, to_device, zeros
from .indexing import _bad_index, _raise_flat_range, _scatter, _scatter_add, index_select, scatter_add
from .shape import cat, movedim, stack
from .reductions import amax, amin, any, prod, sum
from .scans import _scan
from ..amp._policy import autocast_op


# ---- one_hot ----
def _one_hot(tensor, num_classes=-1):
    """one_hot(tensor, num_classes=-1) -> int64 tensor of shape tensor.shape + (num_classes,)
    (nn.functional.one_hot). num_classes=-1 reads the largest class (.item(): a graph break
    under symtrace.compile); the range checks also read values, so they are skipped while a
    graph is being traced (a class out of range then gives a row of zeros)."""
    _check_tensor(tensor, "one_hot", "tensor")
    if tensor.dtype is not int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    elif num_classes == -1 or not _C._trace_active():
        if amin(tensor).item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        top = amax(tensor).item()
        if num_classes == -1:
            num_classes = top + 1
        elif top >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return to_dtype(eq(tensor.unsqueeze(-1), arange(num_classes, device=tensor.device)), int64)


# ---- scatter ----
def _check_index(index, fn, dtypes=(int64,)):
    _check_tensor(index, fn, "index")
    if index.dtype not in dtypes:
        raise RuntimeError(f"{fn}(): Expected dtype int64 for index")


def _hits(input, dim, index):
    """How many points of index land on each element of input (int64, input's shape)."""
    return scatter_add(zeros(tuple(input.shape), dtype=int64, device=input.device), dim, index,
                       ones(tuple(index.shape), dtype=int64, device=input.device))


def _mean_of(total, count, dtype):
    """total / count (count > 0): true division for floats, floor division for integers."""
    if dtype.is_floating_point:
        return div(total, to_dtype(count, dtype))
    return floor_divide(total, to_dtype(count, dtype))   # in total's dtype (int8 stays int8)


def _scatter_replace(input, dim, index, src):
    """input with input[.. index[p] ..] = src[p]: the scatter primitive. An element hit
    more than once gets one of its values (the last in point order on the CPU; any one on
    a GPU), where torch leaves the choice unspecified."""
    return _scatter(input, dim, index, src)


_DENSE_LIMIT = 2 ** 27


def _scatter_dense(input, d, index, src, reduce, include_self, fn):
    """scatter with reduce = prod / amax / amin: a one-hot of index over input's dim d
    (index.numel() * input.size(d) elements) and a reduction of the masked src values; the
    rows of input beyond index's extent in the other dims are joined back by cat. Over
    _DENSE_LIMIT elements, amax / amin sort instead (_extreme_by_sort); prod raises. amax /
    amin get torch's gradient (_extreme_grad)."""
    N = input.shape[d]
    ishape = tuple(index.shape)
    s = src
    for k, e in enumerate(ishape):
        if s.shape[k] != e:
            s = s._slice(k, 0, e, 1)
    extreme = reduce != "prod" and input.dtype is not bool_
    if index.numel() * N > _DENSE_LIMIT and not extreme:
        raise NotImplementedError(f"{fn}(reduce='{reduce}'): the dense decomposition needs "
                                  f"index.numel() * input.size(dim) = {index.numel() * N} elements, "
                                  f"over symtrace's limit of {_DENSE_LIMIT}")
    # where something lands, from scatter_add's counts: its kernel also checks index's
    # bounds, which the one-hot alone would not (an index out of range matches nothing)
    full_hit = gt(_hits(input, d, index), 0)
    base, hit = _hit_region(input, full_hit, d, index)
    if not extreme:
        return _rest_rows(input, d, ishape, _by_one_hot(base, hit, d, index, s, reduce, include_self))
    with _no_grad():
        if index.numel() * N > _DENSE_LIMIT:
            out = _extreme_by_sort(base.detach(), hit, d, index, s.detach(), reduce, include_self)
        else:
            out = _by_one_hot(base.detach(), hit, d, index, s.detach(), reduce, include_self)
        out = _rest_rows(input.detach(), d, ishape, out)
    return _extreme_grad(out, input, full_hit, d, index, s, include_self)


def _by_one_hot(base, hit, d, index, s, reduce, include_self):
    """The reduction over index's region of input (base): a one-hot of index over dim d."""
    N, dt = base.shape[d], base.dtype
    onehot = eq(index.unsqueeze(-1), arange(N, device=base.device))
    if reduce == "prod":
        ident = 1
    elif dt.is_floating_point:
        ident = -math.inf if reduce == "amax" else math.inf
    elif dt is bool_:
        ident = reduce == "amin"
    else:
        info = iinfo(dt)
        ident = info.min if reduce == "amax" else info.max
    vals = where(onehot, s.unsqueeze(-1), _scalar0(base, ident))
    red = {"prod": prod, "amax": amax, "amin": amin}[reduce](vals, d)
    if red.dtype is not dt:  # prod of small ints gives int64: back to input's (wrapping) dtype
        red = to_dtype(red, dt)
    red = movedim(red, -1, d)
    if include_self:
        red = {"prod": mul, "amax": maximum, "amin": minimum}[reduce](base, red)
    return where(hit, red, base)


def _hit_region(input, hit, d, index):
    """(input, hit: whether something lands on each element of input), both cut to index's
    extent in the dims other than d."""
    base = input
    for k, e in enumerate(tuple(index.shape)):
        if k != d and base.shape[k] != e:
            base = base._slice(k, 0, e, 1)
            hit = hit._slice(k, 0, e, 1)
    return base, hit


def _extreme_by_sort(base, hit, d, index, s, reduce, include_self):
    """amax / amin over index's region of input (base), in O(n log n) for an index too large
    for the one-hot (a GNN's edges): each point gets a key (its target row and its place in
    the other dims); a stable sort by value, then by key, puts each key's extreme first
    (amin) or last (amax) in its run; those are scattered (the others to a spare slot). A
    NaN among a key's values wins, as torch's."""
    from .sorting import argsort
    from .float_math import isnan
    N, dt = base.shape[d], base.dtype
    idx0, s0 = movedim(index, d, 0), movedim(s, d, 0)          # (points along d, *rest)
    rest = tuple(idx0.shape[1:])
    P = math.prod(rest)
    col = arange(P, device=base.device).reshape(rest) if rest else arange(1, device=base.device).reshape(())
    keys = add(mul(idx0, P), col).reshape(-1)
    vals = s0.reshape(-1)
    by_val = argsort(vals, stable=True)                          # NaN last, as torch's sort
    perm = index_select(by_val, 0, argsort(index_select(keys, 0, by_val), stable=True))
    sk, sv = index_select(keys, 0, perm), index_select(vals, 0, perm)
    new = ne(sk._slice(0, 1, sk.shape[0], 1), sk._slice(0, 0, sk.shape[0] - 1, 1))
    edge = ones((1,), dtype=bool_, device=base.device)
    pick = cat([new, edge]) if reduce == "amax" else cat([edge, new])
    spare = N * P
    flat = _scatter(zeros((spare + 1,), dtype=dt, device=base.device), 0, where(pick, sk, spare), sv)
    red = flat._slice(0, 0, spare, 1)
    if dt.is_floating_point:
        nan = _scatter_add(zeros((spare,), dtype=int64, device=base.device), 0, keys,
                           to_dtype(isnan(vals), int64))
        red = where(gt(nan, 0), _scalar0(base, math.nan), red)
    red = movedim(red.reshape((N,) + rest), 0, d)
    if include_self:
        red = (maximum if reduce == "amax" else minimum)(base, red)
    return where(hit, red, base)


_EXTREME = None


def _extreme_fn():
    """An autograd.Function: value is out (amax / amin values, computed without history),
    gradient torch's scatter_reduce_backward rule for them: with self_is = (input == out),
    src_is = (src == out.gather(d, index)) and n = self_is.scatter_add(d, index, src_is),
    input gets self_is * (grad / n) (0 where something lands when include_self=False) and
    src gets src_is * (grad / n).gather(d, index). Plain products, as torch's: a NaN
    gradient, or n = 0 (a NaN result), gives NaN to every element of its group."""
    global _EXTREME
    if _EXTREME is None:
        from ..autograd.function import Function

        class ScatterExtremeBackward(Function):
            @staticmethod
            def forward(ctx, input, src, out, index, d, self_is, src_is, keep_self):
                ctx.geom = (index, d, self_is, src_is, keep_self)
                return out.clone()

            @staticmethod
            def backward(ctx, grad):
                index, d, self_is, src_is, keep_self = ctx.geom
                dt = grad.dtype
                n = scatter_add(to_dtype(self_is, dt), d, index, to_dtype(src_is, dt))
                spread = div(grad, n)
                g_self = mul(to_dtype(self_is, dt), spread)
                if keep_self is not None:       # include_self=False: 0 where something lands
                    g_self = where(keep_self, g_self, _zero_of(g_self))
                g_src = mul(to_dtype(src_is, dt), spread.gather(d, index))
                return (g_self, g_src) + (None,) * 6
        _EXTREME = ScatterExtremeBackward
    return _EXTREME


def _extreme_grad(out, input, hit, d, index, s, include_self):
    """out (amax / amin values over all of input, no history) with torch's gradient
    (_extreme_fn); hit: whether something lands on each element of input."""
    from ..autograd.grad_mode import is_grad_enabled
    if not (is_grad_enabled() and (input.requires_grad or s.requires_grad)):
        return out
    with _no_grad():
        self_is = eq(input.detach(), out)
        src_is = eq(s.detach(), out.gather(d, index))
    keep = None if include_self else eq(hit, False)
    return _extreme_fn().apply(input, s, out, index, d, self_is, src_is, keep)


def _rest_rows(input, d, ishape, out):
    """out (index's region of input) with the rows of input that index does not reach
    joined back by cat."""
    for k in range(input.dim()):               # the rows index does not reach
        if k != d and ishape[k] < input.shape[k]:
            rest = input
            for j in range(input.dim()):
                if j == k:
                    rest = rest._slice(j, ishape[j], input.shape[j], 1)
                elif j != d and j > k and ishape[j] < input.shape[j]:
                    rest = rest._slice(j, 0, ishape[j], 1)
            out = cat([out, rest], k)
    return out


def _scatter_args(input, dim, index, src, fn):
    _check_tensor(input, fn)
    _check_index(index, fn)
    d = _wrap(dim, builtins.max(input.dim(), 1), fn)
    if index.dim() != input.dim() and index.numel():
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if _is_tensor(src) and src.dtype is not input.dtype:
        raise RuntimeError(f"{fn}(): Expected self.dtype to be equal to src.dtype")
    return d


def _scatter_src(input, dim, index, src, value, fn):
    """(dim wrapped, src as a tensor: value filled to index's shape) for scatter and
    scatter_, with torch's checks."""
    if src is not None and value is not None:
        raise TypeError(f"{fn}(): give src or value, not both")
    if src is None:
        src = value
    if src is None:
        raise TypeError(f"{fn}() missing required argument 'src' or 'value'")
    d = _scatter_args(input, dim, index, src, fn.rstrip("_"))
    if not _is_tensor(src):
        # torch converts the value (refusing one that overflows input's dtype) only
        # when something is scattered: an empty index writes nothing
        src = full(tuple(index.shape), src if index.numel() else 0, dtype=input.dtype,
                   device=input.device)
    return d, src


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """scatter(input, dim, index, src | value, *, reduce=None): a copy of input with
    out[..., index[p], ...] = src[p] along dim for every point p of index (or = value, a
    number): the scatter primitive, O(index) after a copy of input. Where index repeats
    a position, torch leaves the result unspecified; symtrace writes one of the values
    (the last in point order on the CPU). reduce='add' accumulates (scatter_add);
    reduce='multiply' multiplies (see scatter_reduce). As torch.scatter."""
    d, src = _scatter_src(input, dim, index, src, value, "scatter")
    if index.numel() == 0:
        return input.clone()
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    if reduce == "add":
        return scatter_add(input, d, index, src)
    if reduce == "multiply":
        return _scatter_dense(input, d, index, src, "prod", True, "scatter")
    with _bad_index(RuntimeError):
        return _scatter_replace(input, d, index, src)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce(input, dim, index, src, reduce, *, include_self=True): src reduced into
    input at index along dim with reduce = 'sum' | 'mean' (scatter_adds: any size,
    differentiable) or 'prod' | 'amax' | 'amin' (a dense one-hot of index over input's dim:
    index.numel() * input.size(dim) elements, NotImplementedError over 2**27). include_self
    False leaves input's own values out where something is scattered. Integer 'mean' floors.
    As torch.scatter_reduce."""
    d = _scatter_args(input, dim, index, src, "scatter_reduce")
    _check_tensor(src, "scatter_reduce", "src")
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)      # torch's aliases
    if reduce not in ("sum", "mean", "prod", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if reduce == "mean" and input.dtype is bool_:   # (as torch's kernels, by the index's size)
        kern = "scatter_gather_tensor_cpu_reduce_mean" if index.numel() else "div_floor_cpu"
        raise NotImplementedError(f"\"{kern}\" not implemented for 'Bool'")
    if index.numel() == 0:
        return input.clone()
    if reduce in ("prod", "amax", "amin"):
        with _bad_index(RuntimeError):
            return _scatter_dense(input, d, index, src, reduce, include_self, "scatter_reduce")
    cnt = _hits(input, d, index)
    hit = gt(cnt, 0)
    base = input if include_self else where(hit, _zero_of(input), input)
    total = scatter_add(base, d, index, src)
    if reduce == "sum":
        return total
    n = add(cnt, 1) if include_self else where(hit, cnt, 1)
    return where(hit, _mean_of(total, n, input.dtype), input)


def _index_along(input, dim, index, source, fn):
    """(d, index expanded to source's shape) for the index_* ops."""
    _check_tensor(input, fn)
    _check_tensor(index, fn, "index")
    if index.dtype not in (int64, _C.int32):
        raise RuntimeError(f"{fn}(): Expected dtype int32/int64 for index")
    if index.dim() > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    nd = builtins.max(input.dim(), 1)
    d = _wrap(dim, nd, fn)
    _check_tensor(source, fn, "source")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{fn}(): self ({_tname(input.dtype)}) and source ({_tname(source.dtype)}) "
                           f"must have the same scalar type")
    src = source if source.dim() else source.reshape(1)
    ishape = tuple(input.shape) if input.dim() else (1,)
    if src.dim() != len(ishape) or builtins.any(src.shape[k] != ishape[k]
                                                for k in range(len(ishape)) if k != d):
        raise RuntimeError(f"{fn}(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {list(ishape)} at dimension {d} and source "
                           f"slice shape: {list(src.shape)} at dimension {d}.")
    if src.shape[d] != index.numel():
        raise RuntimeError(f"{fn}(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim) ({src.shape[d]})")
    shape = [1] * len(ishape)
    shape[d] = index.numel()
    idx = to_dtype(index.reshape(tuple(shape)), int64).expand(tuple(src.shape))
    return d, idx, src


def index_add(input, dim, index, source, *, alpha=1):
    """index_add(input, dim, index, source, *, alpha=1): input with alpha * source[.., i, ..]
    added at input[.., index[i], ..] along dim (repeats accumulate): one scatter_add; as
    torch.index_add."""
    d, idx, src = _index_along(input, dim, index, source, "index_add")
    if alpha != 1:
        src = mul(src, alpha)
        if input.dtype is bool_:   # bool * 2 is int64: back to bool (nonzero), as torch's
            src = to_dtype(src, bool_)
    x = input if input.dim() else input.reshape(1)
    with _bad_index(IndexError, "index out of range in self: {}"):    # torch's text, then ours
        r = _scatter_add(x, d, idx, src)
    return r if input.dim() else r.reshape(())


@autocast_op("promote")
def index_copy(input, dim, index, source):
    """index_copy(input, dim, index, source): input with input[.., index[i], ..] = source[.., i, ..]
    along dim (the scatter primitive); a repeated index gets one of its sources (torch:
    unspecified); as torch.index_copy."""
    d, idx, src = _index_along(input, dim, index, source, "index_copy")
    x = input if input.dim() else input.reshape(1)
    with _bad_index(IndexError, "index_copy_(): {}"):
        r = _scatter_replace(x, d, idx, src)
    return r if input.dim() else r.reshape(())


def _index_fill_checked(input, dim, index, value):
    """(d, size of dim d, index wrapped (1-D), value as a 0-d tensor of input's dtype) for
    index_fill and index_fill_, with torch's checks."""
    _check_tensor(input, "index_fill")
    _check_tensor(index, "index_fill", "index")
    if index.dtype is not int64:
        raise RuntimeError("index_fill_(): Expected dtype int64 for index.")
    if index.dim() > 1:
        raise IndexError("index_fill_(): Index is supposed to be a vector")
    nd = input.dim()
    d = _wrap(dim, builtins.max(nd, 1), "index_fill")
    n = input.shape[d] if nd else 1
    if _is_tensor(value):
        if value.dim() != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor "
                               f"with {value.dim()} dimension(s).")
        val = to_dtype(value, input.dtype)
    else:
        val = full((), value, dtype=input.dtype, device=input.device)
    idx = index.reshape(-1)
    return d, n, where(lt(idx, 0), add(idx, n), idx), val


def _index_fill_args(input, dim, index, value):
    """(d, index expanded over the other dims, value expanded alike) for index_fill_'s
    in-place scatter (no autograd: a slice named twice is simply written twice)."""
    d, n, idx, val = _index_fill_checked(input, dim, index, value)
    shape = list(input.shape) if input.dim() else [1]
    shape[d] = idx.numel()
    along = [1] * len(shape)
    along[d] = idx.numel()
    return d, idx.reshape(tuple(along)).expand(tuple(shape)), val.expand(tuple(shape))


def index_fill(input, dim, index, value):
    """index_fill(input, dim, index, value): input with the slices index (negative from the
    end) along dim set to value (a number or a 0-d tensor, which gets a gradient: each
    slice once, a repeated index too); as torch.index_fill."""
    d, n, idx, val = _index_fill_checked(input, dim, index, value)
    nd = input.dim()
    # the slices named, counted by a scatter_add: its kernel also checks the index's bounds
    # (a one-hot against arange matched nothing for an index out of range, and went on)
    hit = gt(_scatter_add(zeros((n,), dtype=int64, device=input.device), 0, idx, ones_like(idx)), 0)
    shape = [1] * nd
    if nd:
        shape[d] = n
    return where(hit.reshape(tuple(shape)), val, input)


def masked_scatter(input, mask, source):
    """masked_scatter(input, mask, source): input (broadcast with mask) with the positions
    where mask is True filled, in row-major order, from the leading elements of source: the
    positions are a log-depth running count of mask, then an index_select and a where (no
    value read; the eager mode check that source is large enough reads one count). As
    torch.masked_scatter."""
    _check_tensor(input, "masked_scatter")
    _check_tensor(mask, "masked_scatter", "mask")
    _check_tensor(source, "masked_scatter", "source")
    if mask.dtype is not bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_tname(mask.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{_tname(input.dtype)} and {_tname(source.dtype)}")
    shape = _bshape(tuple(input.shape), tuple(mask.shape))
    x, m = input.expand(shape), mask.expand(shape)
    k = source.numel()
    flat = m.reshape(-1)
    if not _C._trace_active() and flat.numel() and sum(flat).item() > k:
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as "
                           "the ones in mask")
    if k == 0 or flat.numel() == 0:
        return x.clone()
    pos = sub(_scan(to_dtype(flat, int64), 0, add), 1)
    vals = index_select(source.reshape(-1), 0, clamp(pos, 0, k - 1)).reshape(shape)
    return where(m, vals, x)


# ---- value-dependent selections ----
def nonzero(input, *, as_tuple=False):
    """nonzero(input, *, as_tuple=False): the coordinates of the nonzero elements, row-major,
    as an int64 (N, input.dim()) tensor, or as_tuple a tuple of input.dim() 1-D tensors. The
    count depends on values, which are read (.tolist(): a graph break under compile, as in
    torch). As torch.nonzero."""
    _check_tensor(input, "nonzero")
    flat = input.detach().reshape(-1)   # indices only: no autograd view (a stale split output)
    nz = flat if flat.dtype is bool_ else ne(flat, 0)
    ids = _C.tensor([i for i, v in enumerate(nz.tolist()) if v], int64)
    if input.device.type != "cpu":
        ids = to_device(ids, input.device)
    shape = tuple(input.shape)
    coords, stride = [], 1
    for s in reversed(shape):
        coords.append(remainder(floor_divide(ids, stride), s) if s > 1 else mul(ids, 0))
        stride *= s
    coords = coords[::-1]
    if as_tuple:
        return tuple(coords) if coords else (ids,)
    if not coords:
        return zeros(ids.shape[0], 0, dtype=int64, device=input.device)
    return stack(coords, 1)


def argwhere(input):
    """argwhere(input) = nonzero(input); as torch.argwhere."""
    return nonzero(input)


# ---- writes at positions: index_put, put, and the *_scatter functions of torch ----
def _positions(input, key):
    """The row-major positions in input of the elements input[key] selects (any key
    __getitem__ takes), as an int64 tensor of that result's shape: O(result)
    (_C._index_positions), with __getitem__'s placement, checks and errors."""
    return _C._index_positions(input, key)


def _put_flat_(t, pos, v, accumulate=False):
    """Writes v (1-D, t's dtype) at the row-major positions pos (1-D int64) of t, in
    place (accumulate: added): one scatter (scatter_add) into a flat view of t
    (contiguous t: O(len(pos)) without autograd, the copy of t skipped; with it, the write
    into the view gets a CopySlices node), else into a flat copy written back."""
    opid = _C.OP_SCATTER_ADD if accumulate else _C.OP_SCATTER
    if t.is_contiguous():
        flat = t.view(-1)
        _C.op(opid, (flat, pos, v), _attrs(ints=(0,)), flat)
    else:
        src = t.clone() if t.requires_grad and _C._is_grad_enabled() else t
        new = _C.op(opid, (src.reshape(-1), pos, v), _attrs(ints=(0,)))
        t.copy_(new.reshape(tuple(t.shape)))


def _put_values(input, pos, values, fn):
    """values (a number or a tensor of input's dtype) broadcast to pos's shape, flat."""
    if not _is_tensor(values):
        values = full((), values, dtype=input.dtype, device=input.device)
    if values.dtype != input.dtype:
        raise RuntimeError(f"{fn}: Index put requires the source and destination dtypes match, got "
                           f"{_tname(input.dtype)} for the destination and {_tname(values.dtype)} for "
                           f"the source.")
    try:
        v = values.expand(tuple(pos.shape))
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(pos.shape)}") from None
    return v.reshape(-1)


def _put_at(input, pos, values, accumulate, fn):
    """input with values (broadcast to pos's shape, of input's dtype) written at the
    flat positions pos (accumulate: added), differentiable in input and values."""
    flat, p, v = input.reshape(-1), pos.reshape(-1), _put_values(input, pos, values, fn)
    out = index_add(flat, 0, p, v) if accumulate else _scatter(flat, 0, p, v)
    return out.reshape(tuple(input.shape))


def _index_put_args(input, indices, values, fn):
    """(flat positions, flat values) of index_put and index_put_, with torch's checks."""
    _check_tensor(input, fn)
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for k, i in enumerate(indices):
        if not _is_tensor(i):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type(i).__name__}")
    pos = _positions(input, tuple(indices))
    return pos.reshape(-1), _put_values(input, pos, values, fn.rstrip("_"))


def index_put(input, indices, values, accumulate=False):
    """index_put(input, indices, values, accumulate=False): input with input[indices] =
    values (accumulate: +=), a new tensor; indices a tuple of index tensors (the dims
    they index, from the first), as torch.index_put."""
    p, v = _index_put_args(input, indices, values, "index_put")
    out = index_add(input.reshape(-1), 0, p, v) if accumulate else _scatter(input.reshape(-1), 0, p, v)
    return out.reshape(tuple(input.shape))


def _put_args(input, index, source):
    """(flat positions, flat source) of put and put_, with torch's checks."""
    _check_tensor(input, "put")
    _check_index(index, "put")
    n = input.numel()
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, index.numel() = "
                           f"{index.numel()}")
    # positions in input seen as 1-D: only the shape counts (a 0-stride stand-in)
    shape1 = _scalar0(input, 0).expand((n,))
    try:
        pos = _positions(shape1, index.reshape(-1)) if n else index.reshape(-1)
    except IndexError as e:
        _raise_flat_range(e, index, n)
    return pos, _put_values(input, pos, source.reshape(-1), "put")


def put(input, index, source, accumulate=False):
    """put(input, index, source, accumulate=False): input (seen as 1-D) with source written
    at index (negative positions wrap; accumulate: added), as torch.put."""
    p, v = _put_args(input, index, source)
    out = index_add(input.reshape(-1), 0, p, v) if accumulate else _scatter(input.reshape(-1), 0, p, v)
    return out.reshape(tuple(input.shape))


def select_scatter(input, src, dim, index):
    """select_scatter(input, src, dim, index): input with input.select(dim, index)
    replaced by src, as torch.select_scatter."""
    _check_tensor(input, "select_scatter")
    d = _wrap(dim, input.dim(), "select_scatter")
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    key = (slice(None),) * d + (index,)
    return _scatter_view(input, src, _positions(input, key), "select_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """diagonal_scatter(input, src, offset=0, dim1=0, dim2=1): input with its diagonal
    replaced by src, as torch.diagonal_scatter."""
    _check_tensor(input, "diagonal_scatter")
    from .linalg import diagonal
    with _no_grad():
        pos = diagonal(arange(input.numel(), device=input.device).reshape(tuple(input.shape)),
                       offset, dim1, dim2)
    return _scatter_view(input, src, pos, "diagonal_scatter")


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """as_strided_scatter(input, src, size, stride, storage_offset=None): input (contiguous
    positions) with the elements as_strided(size, stride, storage_offset) reaches replaced
    by src, as torch.as_strided_scatter."""
    _check_tensor(input, "as_strided_scatter")
    with _no_grad():
        ar = arange(input.numel(), device=input.device)
        pos = ar.as_strided(tuple(size), tuple(stride)) if storage_offset is None else \
            ar.as_strided(tuple(size), tuple(stride), storage_offset)
    return _scatter_view(input, src, pos, "as_strided_scatter")


def _scatter_view(input, src, pos, fn):
    _check_tensor(src, fn, "src")
    if tuple(src.shape) != tuple(pos.shape):
        raise RuntimeError(f"{fn}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(pos.shape)}")
    return _put_at(input, pos, src.to(input.dtype) if src.dtype != input.dtype else src, False, fn)
