"""Adaptive average pooling: torch.nn.functional's adaptive_avg_pool1d/2d/3d, with torch's
signatures, checks and error messages (the front end's helpers are _conv.py's).

Exact for non-finite inputs: a NaN or inf stays in the windows that contain it, as in
torch's kernel (an averaging-matrix matmul spread it over every output of the channel,
0 * nan being nan). Each output is the sum over its window divided by the window's
extent per dim (torch's sum / kh / kw), computed as:

- every output 1 (global pooling): a mean over the spatial dims (keepdim).
- whole windows (every size divides its output; not where the code is inlined for dynamic
  shapes): a reshape that splits each spatial dim into (out, size // out), a sum over the
  leading dims' window dims, then one over the last dim's, divided by the window's size.
- otherwise, one spatial dim at a time: the dim's windows as one index_select at the
  points start_o + k, k < Kmax (the longest window), the padding points (k past the
  window's end) replaced by 0 with where, and a sum over k (dynamic shapes); else
  (_WindowSums) one output-sized index_select per k, masked likewise, added in k's
  order (the sum over rows of Kmax was the slower part). The gradient (_WindowSums)
  gathers too: each point adds the upstream gradient of the windows that hold it (at
  most ceil(out / size) + 1), one index_select per rank, so a finite window's gradient
  stays finite (index_select's own gradient, a scatter-add, was 2-3x torch compiled).
  Its index tensors and the windows' extents are built from python ints (_window_indices)
  and passed into the Function, so that a compiled graph holds them as constants.
  Inlined for dynamic shapes, the plain ops and their autodiff.

- eager (not compiling, no trace recording: the sizes are ints and the values can be
  looked at), non-divisible sizes, window matrices of at most _MAT_MAX entries: each
  spatial dim contracted by a matmul with its 0/1 window matrix [out, size] (the last dim:
  [rows, S] @ [S, O]; another: [O, S] @ [rows, S, after], the matrix broadcast, so that
  nothing is transposed and the result is contiguous), then divided by the extents, as
  torch. Exact whenever the input is finite; a NaN or inf (0 * inf is NaN) makes its
  product rows non-finite, and a result with any non-finite value is computed again by
  the window sums above (one reduction over the small result decides). Its gradient
  (_WindowProducts) is the transposed products, and for a non-finite upstream gradient
  (it would spread in them too) the window sums' gradient. The path taken is counted in
  STATS.

dynamic shapes (symtrace.compile(dynamic=True)): the window bounds are graph ops over
aranges of the symbolic size, and under compile Kmax is the bound ceil(S / O) + 1 and
only outputs of 1 skip the window sums (the global mean), so that one graph serves sizes
that divide and sizes that do not. Half-precision inputs are summed in float32 (torch's
accumulation type) and rounded once at the end.
"""
from .. import _C, _ops
from .._ops import _check_tensor
from .._symint import dyn_inline
from ..autograd import grad as _grad
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..compiler import is_compiling as _is_compiling
from ._conv import (_adaptive_bounds, _adaptive_out, _check1d, _check_dim_range, _check_dtype, _empty_of,
                    _nonempty_planes, _prod, _size_str, _unbatch)


# calls of each path (tests check which one ran; not counted while the translator inlines
# the code for dynamic shapes, where a dict write would specialize the graph)
STATS = {"matmul": 0, "matmul_fallback": 0, "grad_fallback": 0, "windows": 0, "global": 0, "whole": 0,
         "gather_grad": 0}
_MATS = {}   # (size, out, dtype, device) -> the 0/1 window matrix [out, size]
_MAT_MAX = 1 << 20   # entries of a window matrix (made from a python list, once)


def _tensor(data, dtype, device):
    t = _C.tensor(data, dtype)
    return t if str(t.device) == str(device) else t.to(device)


def _window_matrix(size, out, dtype, device):
    """[out, size] 0/1: row o marks torch's adaptive window o (eager: python ints)."""
    key = (size, out, dtype, str(device))
    m = _MATS.get(key)
    if m is None:
        if len(_MATS) > 64:
            _MATS.clear()
        starts, ends = _adaptive_bounds(size, out)
        rows = [[1.0 if starts[o] <= i < ends[o] else 0.0 for i in range(size)] for o in range(out)]
        m = _MATS[key] = _tensor(rows, dtype=dtype, device=device)
    return m


def _products(y, spatial, out, back=False):
    """y [N, C, *spatial] contracted with each dim's 0/1 window matrix (back: its transpose,
    y [N, C, *out] -> [N, C, *spatial])."""
    k = len(out)
    for i in reversed(range(k)):
        if spatial[i] == out[i]:
            continue
        m = _window_matrix(spatial[i], out[i], y.dtype, y.device)
        src, dst = (out[i], spatial[i]) if back else (spatial[i], out[i])
        shape = tuple(y.shape)
        d = 2 + i
        after = 1
        for s in shape[d + 1:]:
            after *= s
        if after == 1:   # the last dim: [rows, S] @ [S, O]
            r = y.reshape(-1, src).matmul(m if back else m.t())
        else:            # [O, S] @ [rows, S, after], m broadcast: no transposed copy
            r = (m.t() if back else m).matmul(y.reshape(-1, src, after))
        y = r.reshape(shape[:d] + (dst,) + shape[d + 1:])
    return y


def _divide(y, spatial, out):
    """y [N, C, *out] divided by the windows' extents, dim by dim (torch's sum / kh / kw)."""
    k = len(out)
    for i in range(k):
        if spatial[i] == out[i]:
            continue
        starts, ends = _adaptive_bounds(spatial[i], out[i])
        cnt = _tensor([float(e - s) for s, e in zip(starts, ends)], dtype=y.dtype, device=y.device)
        y = y / cnt.reshape((out[i],) + (1,) * (k - 1 - i))
    return y


class _WindowProducts(Function):
    """Eager adaptive means by window-matrix products (see the module docstring); the
    gradient is the transposed products, or, for an upstream gradient that is not finite
    (its NaN / inf would spread in them too), the window sums' gradient."""
    @staticmethod
    def forward(ctx, y, spatial, out):
        ctx.geom = (spatial, out)
        ctx.save_for_backward(y)
        return _divide(_products(y, spatial, out), spatial, out)

    @staticmethod
    def backward(ctx, g):
        spatial, out = ctx.geom
        # (a finite g, the small one, gives finite products: 0 * finite is 0)
        if bool(g.isfinite().all()):
            gx = _products(_divide(g, spatial, out), spatial, out, back=True)
        else:
            STATS["grad_fallback"] += 1
            y, = ctx.saved_tensors
            create = is_grad_enabled()
            with enable_grad():
                yd = y.detach().requires_grad_(True)
                gx, = _grad(_window_means(yd, spatial, out), yd, g, create_graph=create)
        return gx, None, None


def _matmul_sums(y, spatial, out):
    """y [N, C, *spatial] (float32/float64): the adaptive means by 0/1 window-matrix products,
    or None when the result is not finite (a NaN/inf input spreads in a product) or a
    matrix would be too large."""
    if any(spatial[i] * out[i] > _MAT_MAX for i in range(len(out))):
        return None
    r = _WindowProducts.apply(y, tuple(spatial), tuple(out))
    return r if bool(r.isfinite().all()) else None


@dyn_inline
def _windows(size, out, device):
    """Dim of `size` into `out` adaptive windows: (idx [out * Kmax] int64 (in range: the
    padding points repeat the window's start), valid [out, Kmax] bool, count [out] int64,
    Kmax)."""
    if _is_compiling():
        kmax = (size - 1) // out + 2   # >= every window's extent, whatever size is
    else:
        starts, ends = _adaptive_bounds(size, out)
        kmax = max(e - s for s, e in zip(starts, ends))
    o = _ops.arange(out, device=device).reshape(out, 1)
    start = (o * size) // out
    end = -((-(o + 1) * size) // out)
    pts = start + _ops.arange(kmax, device=device).reshape(1, kmax)
    valid = pts < end
    return _ops.where(valid, pts, start).reshape(out * kmax), valid, (end - start).reshape(out), kmax


@dyn_inline
def _gathered_sums(y, d, size, out):
    """y's dim d (of `size`) summed over `out` adaptive windows (one index_select at every
    window's points, the padding points masked), and the windows' extents."""
    idx, valid, count, kmax = _windows(size, out, y.device)
    shape = tuple(y.shape)
    cols = y.index_select(d, idx).reshape(shape[:d] + (out, kmax) + shape[d + 1:])
    mask = valid.reshape((out, kmax) + (1,) * (len(shape) - d - 1))
    zero = _ops.zeros((), dtype=y.dtype, device=y.device)
    return _ops.where(mask, cols, zero).sum(d + 1), count


def _const(data, dtype, device):
    """A tensor of python numbers; under a trace a constant of the graph (so a compiled graph
    holds it, where aranges and index arithmetic were tiny kernels on every call)."""
    t = _C._trace_constant(_C.tensor(data, dtype))
    return t if str(t.device) == str(device) else t.to(device)


def _window_indices(size, out, device, cdt):
    """_WindowSums' index tensors for a dim of `size` in `out` adaptive windows, built from
    python ints as graph constants (a 30x30 -> 7x7 forward and backward computed them in
    about 30 tiny kernels a compiled call): (points, owners, count).
    points: per window point j, (index [out] int64 of the windows' j-th points (a window's
    start where it is shorter), valid [out] bool, or None when every window has j + 1
    points); owners: per j, the j-th window of every point of the dim (its lowest where it
    lies in fewer), the same way; count [out] of dtype cdt: the windows' extents."""
    starts, ends = _adaptive_bounds(size, out)

    def table(first, last):   # j-th members of ranges [first, last)
        res = []
        for j in range(max(e - f for f, e in zip(first, last))):
            ok = [f + j < e for f, e in zip(first, last)]
            idx = [f + j if v else f for f, v in zip(first, ok)]
            res.append((_const(idx, _C.int64, device), None if all(ok) else _const(ok, _C.bool, device)))
        return res

    lo = [(i * out) // size for i in range(size)]
    hi = [-((-(i + 1) * out) // size) for i in range(size)]
    count = _const([float(e - f) for f, e in zip(starts, ends)], cdt, device)
    return table(starts, ends), table(lo, hi), count


class _WindowSums(Function):
    """y's dim d summed over adaptive windows, the j-th points of every window gathered at
    once for each j < Kmax and added; the gradient gathers too:
    each point adds the upstream gradient of the (at most a few) windows that hold it, one
    index_select per rank, in window order, instead of index_select's gradient, a
    scatter-add (whose autodiff also did the upstream elementwise work once per window
    point: 2-3x torch compiled). A NaN / inf stays in its windows' points."""
    @staticmethod
    def forward(ctx, y, d, size, out, layout, *tables):
        # tables: _window_indices' points and owners flattened (layout: _unflatten's), passed
        # in so that they are constants of the graph that calls this, not of the Function
        points, owners = _unflatten(layout, tables)
        ctx.geom = (d, size, out, layout)
        ctx.save_for_backward(*tables)
        # the windows' j-th points, one output-sized index_select each, added in window
        # point order (a sum over a padded [out, Kmax] gather ran rows of Kmax: slower)
        rest = (1,) * (y.dim() - d - 1)
        r = None
        for idx, valid in points:
            v = y.index_select(d, idx)
            if valid is not None:   # windows shorter than j + 1: their start read, then masked to 0
                v = _ops.where(valid.reshape((out,) + rest), v, 0.0)
            r = v if r is None else r + v
        return r

    @staticmethod
    def backward(ctx, g):
        d, size, out, layout = ctx.geom
        STATS["gather_grad"] += 1
        tables = ctx.saved_tensors
        nd = g.dim()
        gx = None
        for idx, valid in _unflatten(layout, tables)[1]:
            v = g.index_select(d, idx)
            if valid is not None:
                v = _ops.where(valid.reshape((size,) + (1,) * (nd - d - 1)), v, 0.0)
            gx = v if gx is None else gx + v
        return (gx, None, None, None, None) + (None,) * len(tables)


def _unflatten(layout, tables):
    """(points, owners) of _window_indices from their tensors in a row (layout: per table,
    per j whether a valid mask follows the index)."""
    res, at = [], 0
    for flags in layout:
        part = []
        for has in flags:
            part.append((tables[at], tables[at + 1] if has else None))
            at += 2 if has else 1
        res.append(part)
    return res


@dyn_inline
def _window_sums(y, d, size, out):
    """y's dim d (of `size`) summed over `out` adaptive windows, and the windows' extents
    (_WindowSums; inlined for dynamic shapes, the plain ops of _gathered_sums)."""
    if _is_compiling():
        return _gathered_sums(y, d, size, out)
    points, owners, count = _window_indices(size, out, y.device, y.dtype)
    layout, tables = [], []
    for part in (points, owners):
        layout.append(tuple(v is not None for _, v in part))
        for idx, v in part:
            tables += [idx] if v is None else [idx, v]
    return _WindowSums.apply(y, d, size, out, tuple(layout), *tables), count


@dyn_inline
def _window_means(y, spatial, out):
    """y [N, C, *spatial] -> [N, C, *out]: the window sums dim by dim, then divided."""
    k = len(out)
    counts = []
    for i in range(k):
        if spatial[i] == out[i]:
            continue
        y, cnt = _window_sums(y, 2 + i, spatial[i], out[i])
        counts.append((i, cnt))
    for i, cnt in counts:   # torch's sum / kd / kh / kw, in the input's (accumulation) dtype
        y = y / cnt.to(y.dtype).reshape((out[i],) + (1,) * (k - 1 - i))
    return y


@dyn_inline
def _adaptive_avg_nd(x, out):
    """x batched [N, C, *S] -> [N, C, *out]."""
    k = len(out)
    spatial = tuple(x.shape[2:])
    n, c = x.shape[0], x.shape[1]
    if any(o == 0 for o in out):
        return _empty_of(x, out)
    if all(o == 1 for o in out):
        # a mean over the spatial dims, keepdim: its gradient is a broadcast (the split
        # below reshapes [N, C, 1, S...] back from an expanded view: an unravel load per
        # point that made ResNet's fused batch-norm backward 5x slower per point)
        if not _is_compiling():
            STATS["global"] += 1
        return x.mean(tuple(range(2, 2 + k)), keepdim=True)
    # (inlined for dynamic shapes: never, so that the graph does not depend on whether the
    # sizes divide)
    if not _is_compiling() and all(spatial[i] % out[i] == 0 for i in range(k)):
        split = [n, c]
        for i in range(k):
            split += [out[i], spatial[i] // out[i]]
        wins = [spatial[i] // out[i] for i in range(k)]
        if wins[-1] == 1 or all(w == 1 for w in wins[:-1]):
            return x.reshape(tuple(split)).mean(tuple(3 + 2 * i for i in range(k)))
        # the windows of the leading dims summed first, then the last dim's: the gradient
        # then broadcasts along whole rows (one mean over every window dim broadcasts
        # each point window-width times along the row: 4x slower compiled)
        STATS["whole"] += 1
        dt = x.dtype
        y = x.float() if dt in (_C.float16, _C.bfloat16) else x
        lead = (n, c)
        for i in range(k - 1):   # [*lead, O_i, K_i, rest] summed over K_i (rest contiguous)
            y = y.reshape(lead + (out[i], wins[i], _prod(spatial[i + 1:]))).sum(len(lead) + 1)
            lead = lead + (out[i],)
        y = y.reshape(lead + (out[-1], wins[-1])).sum(-1) / float(_prod(wins))
        return y.to(dt) if y.dtype != dt else y
    dt = x.dtype
    y = x.float() if dt in (_C.float16, _C.bfloat16) else x
    if not _is_compiling() and not _C._trace_active():
        r = _matmul_sums(y, spatial, out)
        if r is not None:
            STATS["matmul"] += 1
            return r.to(dt) if r.dtype != dt else r
        STATS["matmul_fallback"] += 1
    if not _is_compiling():   # (a dict write inlined under dynamic shapes would specialize)
        STATS["windows"] += 1
    y = _window_means(y, spatial, out)
    return y.to(dt) if y.dtype != dt else y


@dyn_inline
def _adaptive_avg_impl(k, input, output_size):
    """adaptive_avg_pool2d / adaptive_avg_pool3d (k = 2, 3) with torch's checks."""
    fname = f"adaptive_avg_pool{k}d"
    _check_tensor(input, fname)
    osz = _adaptive_out(output_size, input, k)
    if len(osz) != k:
        raise RuntimeError(f"{fname}: output_size must be {k}")
    if any(o < 0 for o in osz):
        got = f"{osz[0]}, {osz[1]}" + (f",{osz[2]}" if k == 3 else "")
        raise RuntimeError(f"{fname}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{got}}}")
    nd = input.dim()
    if nd not in (k + 1, k + 2):
        raise RuntimeError(f"{fname}(): Expected {k + 1}D or {k + 2}D tensor, but got {_size_str(input.shape)}")
    # torch's 2-d average checks only the spatial dims (no channel is fine), the 3-d all
    _nonempty_planes(input, fname, nd - 2 if k == 2 else 1)
    _check_dtype(input, fname if k == 2 else "adaptive_avg_pool3d_cpu")
    x = input.unsqueeze(0) if nd == k + 1 else input
    return _unbatch(_adaptive_avg_nd(x, osz), nd == k + 1)


@dyn_inline
def adaptive_avg_pool2d(input, output_size):
    """adaptive_avg_pool2d(input [N, C, H, W] or [C, H, W], output_size (int, pair; None keeps
    that dim)): the mean over torch's adaptive windows."""
    return _adaptive_avg_impl(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """adaptive_avg_pool3d(input [N, C, D, H, W] or [C, D, H, W], output_size (int, triple;
    None keeps that dim)): the mean over torch's adaptive windows."""
    return _adaptive_avg_impl(3, input, output_size)


def adaptive_avg_pool1d(input, output_size):
    """adaptive_avg_pool1d(input [N, C, L] or [C, L], output_size)."""
    _check_tensor(input, "adaptive_avg_pool1d")
    o = _check1d("adaptive_avg_pool1d", "output_size", output_size)
    _check_dim_range(input, 2, 3, "adaptive_avg_pool1d")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, o)).squeeze(-2)
