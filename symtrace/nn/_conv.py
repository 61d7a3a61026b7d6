"""Convolution, pooling, fold/unfold, interpolation and pixel/channel shuffle: torch.nn.functional's
conv1d/2d/3d, conv_transpose1d/2d/3d, max/avg/adaptive pooling in 1-d, 2-d and 3-d, lp_pool1d/2d/3d,
max_unpool1d/2d/3d, unfold/fold, interpolate, pixel_(un)shuffle and channel_shuffle, with torch's
signatures, checks and error messages.

Every op is written over symtrace's differentiable ops, so autograd comes from theirs and
symtrace.compile traces them into its graph: they branch on shapes only and never read
tensor values on the host. The index tensors they use are built from shapes with arange.

- im2col (_im2col): the windows of a [N, C, *S] input as [N, C, K, L] (K = kernel points,
  L = output positions): the input is padded (F.pad); for each kernel point, the window
  origins are one strided view of it (a slice with step = stride per dim), and the K views
  are stacked (_Windows). Non-overlapping windows (stride == kernel, no padding) are a
  reshape and permute instead; more than _VIEWS_MAX_K points read the flattened input with
  one index_select at the window points (index = sum over dims of
  (o * stride + k * dilation) * plane stride).
- conv = weight [OC, C*K] @ im2col [N, C*K, L] (one matmul; groups: [G, OC/G, C/G*K] @
  [N, G, C/G*K, L], a batched matmul). Stride 1 with an input that needs a gradient (and
  at least half as many input channels as output channels: its input gradient's im2col has
  OC * K rows, col2im's product C * K) goes through _conv_s1.py, whose input gradient is a
  convolution, not col2im.
- col2im (_col2im) is im2col's adjoint: each point's columns added into its window view of
  a zero output, each view clipped to the unpadded output, so the result is dense (a crop
  of a padded buffer would keep H and W from merging into one row in the reductions that
  read it, e.g. batch norm's backward: 4-5x slower) (_AddWindows; past _VIEWS_MAX_K
  points, index_add into a padded buffer, then cropped). _Windows (which pads inside) and
  _AddWindows are autograd Functions, each the other's gradient.
  fold is col2im; conv_transpose = col2im(weight^T @ x) (the gradient of conv with respect
  to its input).
- pooling front ends are written once for k spatial dims (_max_pool_impl, _avg_pool_impl,
  _adaptive_max_impl: torch's argument parsing, shape checks and
  messages for k = 2 and 3) over the n-d bodies below; the 1-d forms go through the 2-d ones
  as torch's do.
- max pooling: im2col padded with -inf, argmax over K, the values gathered at it (so the
  gradient goes to the first maximum of each window, as torch's); its indices are the
  window points' flat positions in the unpadded input, gathered at the same argmax.
- max unpooling: a scatter of the values into zeros of the output plane at those flat
  positions (its gradient: a gather at them). lp pooling is torch's formula over avg_pool
  (max_pool for norm_type = +-inf).
- avg pooling: im2col sum over K divided by torch's divisor (per output position, from
  the window's clipped extent). Adaptive avg pooling is in _adaptive_pool.py (window
  sums per dim, so a NaN or inf stays in its windows); adaptive max pooling reads
  fixed-size windows (the shorter ones repeat their last point) and takes their argmax as max pooling does.
- interpolate: index_select at torch's source indices (nearest) and the linear blend of two
  index_selects per dim (linear/bilinear), the coordinates computed as torch's kernels do
  (float32 for float32 inputs); antialias=True (and mode 'lanczos') goes to _interp_aa.py.
- dynamic shapes (symtrace.compile(dynamic=True)): conv and pooling front ends are dyn_inline,
  so their channel and spatial sizes stay symbols: window counts are (s + a) // b + c, crops
  to whole windows and the windows' slices follow them (the translator's _slice bounds),
  and divisors and averaging matrices are graph ops over aranges of symbolic length.
"""
import math as _math
import warnings as _warnings

from .. import _C, _ops
from ..autograd.function import Function
from .._ops import _check_tensor, _check_int, _tname
from .._ops._core import f32 as _f32
from .._symint import dyn_inline
from ..compiler import is_compiling as _is_compiling
from .functional import pad as _pad


# ---------------- argument helpers ----------------
def _seq(v):
    return isinstance(v, (list, tuple))


@dyn_inline
def _prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def _ctrunc(a, b):
    """a / b rounded toward zero (C's integer division)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _size_str(shape):
    return str(list(shape))


def _conv_param(v, k, name):
    """stride/padding/dilation/output_padding of a k-d convolution as a k-tuple (an int or
    a 1-sequence is repeated), or torch's error."""
    if _seq(v):
        v = tuple(v)
        if len(v) == 1:
            v = v * k
        if len(v) != k:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {k} values to "
                               f"match the convolution dimensions, but got {name}={list(v)}")
        return v
    return (v,) * k


def _pool_param(v, k, msg):
    """A pooling argument as a k-tuple (an int or a 1-sequence is repeated), or msg."""
    if _seq(v):
        v = tuple(v)
        if len(v) == 1:
            return v * k
        if len(v) != k:
            raise RuntimeError(msg)
        return v
    return (v,) * k


def _check1d(fname, arg, v):
    if _seq(v):
        if len(v) != 1:
            raise RuntimeError(f"{fname}() argument '{arg}' should contain one int (got {len(v)})")
        return v[0]
    return v


def _check_dim_range(input, lo, hi, fname):
    if not lo <= input.dim() <= hi:
        raise RuntimeError(f"Expected {lo} to {hi} dimensions, but got {input.dim()}-dimensional tensor for "
                           f"argument #1 'self' (while checking arguments for {fname})")


def _check_dtype(input, kernel, ints=(), floats=None):
    """torch's refusal of the dtypes its CPU kernel has no implementation for: every
    non-float dtype except those in ints (and the floats not in floats, when given)."""
    dt = input.dtype
    if dt not in ints and (not dt.is_floating_point or (floats is not None and dt not in floats)):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_tname(dt)}'")


# ---------------- windows: im2col and col2im ----------------
def _win_index(sizes, kernel, stride, dilation, blocks, device, offsets=None):
    """[K * L] int64: the flat position in a [*sizes] plane of point k of window l
    (window l starts at blocks' coordinate o * stride (+ offset), point k is k * dilation
    further along each dim); K-major."""
    k = len(sizes)
    idx = None
    mult = 1
    for i in reversed(range(k)):
        kk = _ops.arange(kernel[i], device=device) * (dilation[i] * mult)
        oo = _ops.arange(blocks[i], device=device) * (stride[i] * mult)
        if offsets is not None and offsets[i]:
            oo = oo + offsets[i] * mult
        sk = [1] * (2 * k)
        sk[i] = kernel[i]
        so = [1] * (2 * k)
        so[k + i] = blocks[i]
        term = kk.reshape(tuple(sk)) + oo.reshape(tuple(so))
        idx = term if idx is None else idx + term
        mult *= sizes[i]
    return idx.reshape(-1)


def _flat_pads(pads):
    """[(left, right) per spatial dim] -> F.pad's list (last dim first)."""
    out = []
    for left, right in reversed(pads):
        out += [left, right]
    return out


@dyn_inline
def _im2col(x, kernel, stride, dilation, pads, blocks, value=0.0):
    """x [N, C, *S] -> [N, C, K, L]: the kernel points of every window (see the file's
    docstring); pads: (left, right) per spatial dim, filled with value."""
    k = len(kernel)
    n, c = x.shape[0], x.shape[1]
    K, L = _prod(kernel), _prod(blocks)
    ones = all(kk == 1 for kk in kernel) and all(s == 1 for s in stride)
    disjoint = all(kernel[i] == stride[i] and (dilation[i] == 1 or kernel[i] == 1) for i in range(k))
    if K <= _VIEWS_MAX_K and not ones and not disjoint and not _is_compiling():
        # the padding inside the Function: its gradient (_AddWindows) comes out unpadded
        # and dense, not a crop of a padded buffer
        pp = tuple((p[0], p[1]) for p in pads)
        return _Windows.apply(x, tuple(kernel), tuple(stride), tuple(dilation), tuple(blocks), pp, value)
    if any(p != (0, 0) for p in pads):
        x = _pad(x, _flat_pads(pads), value=value)
    sizes = tuple(x.shape[2:])
    if ones:
        if sizes != tuple(blocks):
            for i in range(k):
                x = x._slice(2 + i, 0, blocks[i], 1)
        return x.reshape(n, c, 1, L)
    if disjoint:
        # non-overlapping windows: crop to whole windows, split each dim, move kernel dims first
        for i in range(k):
            # (compiled: cropped always, so that a graph for dynamic shapes holds at any size)
            if _is_compiling() or sizes[i] != blocks[i] * kernel[i]:
                x = x._slice(2 + i, 0, blocks[i] * kernel[i], 1)
        split = [n, c]
        for i in range(k):
            split += [blocks[i], kernel[i]]
        perm = [0, 1] + [3 + 2 * i for i in range(k)] + [2 + 2 * i for i in range(k)]
        return x.reshape(tuple(split)).permute(*perm).reshape(n, c, K, L)
    if K <= _VIEWS_MAX_K:
        # inlined under dynamic shapes: the views stacked as plain ops, whose gradient the
        # compiled graph derives for every batch size (a Function's traced backward keeps
        # the traced sizes)
        views = []
        for pt in _points(kernel):
            views.append(_window(x, pt, stride, dilation, blocks))
        return _ops.stack(views, 2).reshape(n, c, K, L)
    idx = _win_index(sizes, kernel, stride, dilation, blocks, x.device)
    return x.reshape(n, c, _prod(sizes)).index_select(2, idx).reshape(n, c, K, L)


# Up to this many kernel points, im2col stacks one strided view of the input per point
# and col2im adds each point's columns into such a view of a zero buffer (plain copies
# and adds, 3-5x faster than the index_select / index_add over positions they replace);
# each is the other's gradient (autograd Functions, so the backward does not go through
# K full-size slice gradients). More points keep the positions.
_VIEWS_MAX_K = 64


def _points(kernel):
    """The kernel's points (row-major), as index tuples."""
    pts = [()]
    for kk in kernel:
        pts = [p + (j,) for p in pts for j in range(kk)]
    return pts


@dyn_inline
def _window(x, pt, stride, dilation, blocks):
    """The strided view of x [N, C, *sizes] that holds kernel point pt of every window."""
    for i in range(len(pt)):
        o = pt[i] * dilation[i]
        x = x._slice(2 + i, o, o + stride[i] * (blocks[i] - 1) + 1, stride[i])
    return x


def _clipped(pt, sizes, stride, dilation, blocks, pads):
    """Kernel point pt's windows that land inside an unpadded [*sizes] plane (window o of
    dim i starts at o * stride - left pad): per dim (first window, end window, its
    first position), or None when none does."""
    out = []
    for i in range(len(pt)):
        off = pt[i] * dilation[i] - pads[i][0]
        lo = max(0, -(off // stride[i]))                       # ceil(-off / stride)
        hi = min(blocks[i], (sizes[i] - 1 - off) // stride[i] + 1)
        if lo >= hi:
            return None
        out.append((lo, hi, lo * stride[i] + off))
    return out


class _Windows(Function):
    """x [N, C, *sizes] padded by pads (fill value) -> [N, C, K, L]: the K window views
    stacked; gradient: _AddWindows, which leaves out the padding (so it is dense)."""
    @staticmethod
    def forward(ctx, x, kernel, stride, dilation, blocks, pads, value):
        ctx.geom = (tuple(x.shape[2:]), kernel, stride, dilation, blocks, pads)
        n, c = x.shape[0], x.shape[1]
        if any(p != (0, 0) for p in pads):
            x = _pad(x, _flat_pads(pads), value=value)
        views = [_window(x, pt, stride, dilation, blocks) for pt in _points(kernel)]
        return _ops.stack(views, 2).reshape(n, c, _prod(kernel), _prod(blocks))

    @staticmethod
    def backward(ctx, g):
        return (_AddWindows.apply(g, *ctx.geom),) + (None,) * 6


# _AddWindows forwards that left out a padding (tests check that the dense path ran)
STATS = {"add_windows_clipped": 0}


class _AddWindows(Function):
    """cols [N, C, K, L] -> [N, C, *sizes]: each point's columns added into its window view
    of zeros, the windows placed as in a buffer padded by pads whose padding is never
    written (each view clipped to the [*sizes] plane: the result is dense, no crop of a
    padded buffer; the right pads only say how far _Windows, the gradient, pads)."""
    @staticmethod
    def forward(ctx, cols, sizes, kernel, stride, dilation, blocks, pads):
        ctx.geom = (kernel, stride, dilation, blocks, pads)
        n, c = cols.shape[0], cols.shape[1]
        k = len(kernel)
        buf = _ops.zeros((n, c) + tuple(sizes), dtype=cols.dtype, device=cols.device)
        cv = cols.reshape((n, c, _prod(kernel)) + tuple(blocks))
        if any(p != (0, 0) for p in pads):
            STATS["add_windows_clipped"] += 1
        for j, pt in enumerate(_points(kernel)):
            clip = _clipped(pt, sizes, stride, dilation, blocks, pads)
            if clip is None:
                continue
            src, dst = cv[:, :, j], buf
            for i in range(k):
                lo, hi, start = clip[i]
                if lo or hi != blocks[i]:
                    src = src._slice(2 + i, lo, hi, 1)
                dst = dst._slice(2 + i, start, start + stride[i] * (hi - lo - 1) + 1, stride[i])
            dst.add_(src)
        return buf

    @staticmethod
    def backward(ctx, g):
        return (_Windows.apply(g, *ctx.geom, 0.0),) + (None,) * 6


def _col2im(cols, out, kernel, stride, dilation, padding, blocks):
    """im2col's adjoint: cols [N, C, K, L] (L = prod(blocks)) summed into a [N, C, *out]
    output, the windows placed as in one padded by padding on each side (up to
    _VIEWS_MAX_K points the padding is never written: _AddWindows clips; past it, a
    padded buffer is cropped)."""
    k = len(kernel)
    n, c = cols.shape[0], cols.shape[1]
    buf = tuple(max(out[i] + 2 * padding[i], (blocks[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1)
                for i in range(k))
    if _prod(kernel) <= _VIEWS_MAX_K:
        pads = tuple((padding[i], buf[i] - out[i] - padding[i]) for i in range(k))
        return _AddWindows.apply(cols, tuple(out), tuple(kernel), tuple(stride), tuple(dilation), tuple(blocks),
                                 pads)
    idx = _win_index(buf, kernel, stride, dilation, blocks, cols.device)
    y = _ops.zeros((n, c, _prod(buf)), dtype=cols.dtype, device=cols.device)
    y = y.index_add(2, idx, cols.reshape(n, c, _prod(kernel) * _prod(blocks))).reshape((n, c) + buf)
    cropped = False
    for i in range(k):
        if padding[i] or buf[i] != out[i]:
            y = y._slice(2 + i, padding[i], padding[i] + out[i], 1)
            cropped = True
    return y.contiguous() if cropped else y


# ---------------- convolution ----------------
_same_warned = [False]


def _conv_pads(padding, k, stride, dilation, ksize):
    """padding (ints or 'same'/'valid') -> [(left, right)] per spatial dim."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * k
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pads = []
        for i in range(k):
            total = dilation[i] * (ksize[i] - 1)
            pads.append((total // 2, total - total // 2))
        if any(a != b for a, b in pads) and not _same_warned[0]:
            _same_warned[0] = True
            _warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a "
                           "zero-padded copy of the input be created", stacklevel=4)
        return pads
    return [(p, p) for p in padding]


def _conv_checks(name, input, weight, bias, k, transposed, stride, padding, dilation, output_padding, groups):
    """torch's argument checks of a k-d (transposed) convolution, in torch's order.
    Returns (input batched, unbatched?, stride, padding, dilation, output_padding)."""
    _check_tensor(input, name)
    _check_tensor(weight, name, "weight")
    if bias is not None:
        _check_tensor(bias, name, "bias")
    nd = input.dim()
    if nd not in (k + 1, k + 2):
        raise RuntimeError(f"Expected {k + 1}D (unbatched) or {k + 2}D (batched) input to {name}, but got "
                           f"input of size: {_size_str(input.shape)}")
    unbatched = nd == k + 1
    if unbatched:
        input = input.unsqueeze(0)
    if weight.dim() < 3:
        raise RuntimeError("weight should have at least three dimensions")
    wk = weight.dim() - 2
    stride = _conv_param(stride, k, "stride")
    if wk != k:
        raise RuntimeError(f"expected stride to be a single integer value or a list of {wk} values to match "
                           f"the convolution dimensions, but got stride={list(stride)}")
    if not isinstance(padding, str):
        padding = _conv_param(padding, k, "padding")
    dilation = _conv_param(dilation, k, "dilation")
    if transposed:
        output_padding = _conv_param(output_padding, k, "output_padding")
    if not isinstance(padding, str) and any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if transposed and any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    ws = list(weight.shape)
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but "
                           f"got weight of size {ws} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{ws}] instead")
    c = input.shape[1]
    if not transposed:
        if c != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {ws}, expected input"
                               f"{_size_str(input.shape)} to have {ws[1] * groups} channels, but got {c} "
                               f"channels instead")
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != ws[0]):
            raise RuntimeError(f"Given weight of size {ws}, expected bias to be 1-dimensional with {ws[0]} "
                               f"elements, but got bias of size {_size_str(bias.shape)} instead")
    else:
        if c != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected input"
                               f"{_size_str(input.shape)} to have {ws[0]} channels, but got {c} channels "
                               f"instead")
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != ws[1] * groups):
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected bias to be 1-dimensional "
                               f"with {ws[1] * groups} elements, but got bias of size "
                               f"{_size_str(bias.shape)} instead")
        if any(not (op < s or op < d) for op, s, d in zip(output_padding, stride, dilation)):
            if k == 2:
                raise RuntimeError(
                    f"output padding must be smaller than either stride or dilation, but got "
                    f"output_padding_height: {output_padding[0]} output_padding_width: {output_padding[1]} "
                    f"stride_height: {stride[0]} stride_width: {stride[1]} dilation_height: {dilation[0]} "
                    f"dilation_width: {dilation[1]}")
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding: {output_padding[0]} stride: {stride[0]} dilation: "
                               f"{dilation[0]}")
    return input, unbatched, stride, padding, dilation, output_padding


def _check_same_dtype(input, weight, bias):
    if weight.dtype != input.dtype:
        raise RuntimeError(f"Input type ({_tname(input.dtype)}) and weight type ({_tname(weight.dtype)}) "
                           f"should be the same")
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(f"Input type ({_tname(input.dtype)}) and bias type ({_tname(bias.dtype)}) "
                           f"should be the same")


@dyn_inline
def _conv(name, k, input, weight, bias, stride, padding, dilation, groups):
    input, unbatched, stride, padding, dilation, _ = _conv_checks(
        name, input, weight, bias, k, False, stride, padding, dilation, None, groups)
    ksize = tuple(weight.shape[2:])
    pads = _conv_pads(padding, k, stride, dilation, ksize)
    spatial = tuple(input.shape[2:])
    padded = [spatial[i] + pads[i][0] + pads[i][1] for i in range(k)]
    eff = [dilation[i] * (ksize[i] - 1) + 1 for i in range(k)]
    if any(padded[i] < eff[i] for i in range(k)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than "
                           f"actual input size")
    _check_same_dtype(input, weight, bias)
    n, c = input.shape[0], input.shape[1]
    oc = weight.shape[0]
    blocks = tuple((padded[i] - eff[i]) // stride[i] + 1 for i in range(k))
    K, L = _prod(ksize), _prod(blocks)
    if (not _is_compiling() and input.requires_grad and 2 * c >= oc
            and _conv_s1.s1_ok(k, groups, stride, dilation, ksize, pads)):
        # stride 1: the input gradient as a convolution (nn/_conv_s1.py)
        y = _conv_s1.conv_s1(input, weight, dilation, pads, blocks).reshape(n, oc, L)
    elif groups == 1:
        cols = _im2col(input, ksize, stride, dilation, pads, blocks)      # [N, C, K, L]
        y = weight.reshape(oc, c * K).matmul(cols.reshape(n, c * K, L))
    else:
        cols = _im2col(input, ksize, stride, dilation, pads, blocks)      # [N, C, K, L]
        cg, ocg = c // groups, oc // groups
        y = weight.reshape(groups, ocg, cg * K).matmul(cols.reshape(n, groups, cg * K, L)).reshape(n, oc, L)
    if bias is not None:
        y = y + bias.reshape(1, oc, 1)
    y = y.reshape((n, oc) + blocks)
    return y.squeeze(0) if unbatched else y


def _conv_transpose(name, k, input, weight, bias, stride, padding, output_padding, groups, dilation):
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    input, unbatched, stride, padding, dilation, output_padding = _conv_checks(
        name, input, weight, bias, k, True, stride, padding, dilation, output_padding, groups)
    ksize = tuple(weight.shape[2:])
    spatial = tuple(input.shape[2:])
    out = tuple((spatial[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ksize[i] - 1) + output_padding[i]
                + 1 for i in range(k))
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, spatial))}). Calculated output "
                           f"size per channel: ({' x '.join(map(str, out))}). Output size is too small")
    _check_same_dtype(input, weight, bias)
    n, cin = input.shape[0], input.shape[1]
    ocg = weight.shape[1]
    oc = ocg * groups
    K, L = _prod(ksize), _prod(spatial)
    if groups == 1:
        cols = weight.reshape(cin, oc * K).t().matmul(input.reshape(n, cin, L))        # [N, OC*K, L]
    else:
        cg = cin // groups
        w = weight.reshape(groups, cg, ocg * K).transpose(1, 2)                         # [G, OCg*K, Cg]
        cols = w.matmul(input.reshape(n, groups, cg, L))                                 # [N, G, OCg*K, L]
    y = _col2im(cols.reshape(n, oc, K, L), out, ksize, stride, dilation, padding, spatial)
    if bias is not None:
        y = y + bias.reshape((1, oc) + (1,) * k)
    return y.squeeze(0) if unbatched else y


@dyn_inline
def conv1d(input, weight, bias=None, stride=[1], padding=[0], dilation=[1], groups=1):  # noqa: B006
    """conv1d(input [N, C, L] or [C, L], weight [OC, C/groups, K], bias=None, stride=1,
    padding=0 (or 'valid'/'same'), dilation=1, groups=1) (torch's builtin signature: the list
    defaults are never mutated)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@dyn_inline
def conv2d(input, weight, bias=None, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1):  # noqa: B006
    """conv2d(input [N, C, H, W] or [C, H, W], weight [OC, C/groups, KH, KW], bias=None,
    stride=1, padding=0 (or 'valid'/'same'), dilation=1, groups=1)."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@dyn_inline
def conv3d(input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1],  # noqa: B006
           groups=1):
    """conv3d(input [N, C, D, H, W] or [C, D, H, W], weight [OC, C/groups, KD, KH, KW],
    bias=None, stride=1, padding=0 (or 'valid'/'same'), dilation=1, groups=1)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=[1], padding=[0], output_padding=[0],  # noqa: B006
                     groups=1, dilation=[1]):  # noqa: B006
    """conv_transpose1d(input [N, C, L], weight [C, OC/groups, K], bias=None, stride=1, padding=0,
    output_padding=0, groups=1, dilation=1): the gradient of conv1d with respect to its input."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=[1, 1], padding=[0, 0],  # noqa: B006
                     output_padding=[0, 0], groups=1, dilation=[1, 1]):  # noqa: B006
    """conv_transpose2d(input [N, C, H, W], weight [C, OC/groups, KH, KW], bias=None, stride=1,
    padding=0, output_padding=0, groups=1, dilation=1)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=[1, 1, 1], padding=[0, 0, 0],  # noqa: B006
                     output_padding=[0, 0, 0], groups=1, dilation=[1, 1, 1]):  # noqa: B006
    """conv_transpose3d(input [N, C, D, H, W], weight [C, OC/groups, KD, KH, KW], bias=None,
    stride=1, padding=0, output_padding=0, groups=1, dilation=1)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


# ---------------- unfold / fold ----------------
def _pair_seq(v):
    if _seq(v):
        v = tuple(v)
        return v * 2 if len(v) == 1 else v
    return (v, v)


def _fold_checks(kernel_size, dilation, padding, stride):
    ks, dl, pd, sd = (_pair_seq(v) for v in (kernel_size, dilation, padding, stride))
    for name, v in (("kernel_size", ks), ("dilation", dl), ("padding", pd), ("stride", sd)):
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    if ks[0] <= 0 or ks[1] <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {ks[0]} "
                           f"kernel_width: {ks[1]}")
    if dl[0] <= 0 or dl[1] <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dl[0]} "
                           f"dilation_width: {dl[1]}")
    if pd[0] < 0 or pd[1] < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {pd[0]} pad_width: {pd[1]}")
    if sd[0] <= 0 or sd[1] <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {sd[0]} "
                           f"stride_width: {sd[1]}")
    return ks, dl, pd, sd


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """unfold(input [N, C, H, W] or [C, H, W], kernel_size, dilation=1, padding=0, stride=1)
    -> [N, C * KH * KW, L]: the sliding blocks (im2col)."""
    _check_tensor(input, "unfold")
    ks, dl, pd, sd = _fold_checks(kernel_size, dilation, padding, stride)
    nd = input.dim()
    shape = tuple(input.shape)
    if not ((nd == 3 and shape[0] != 0 and shape[1] != 0 and shape[2] != 0)
            or (nd == 4 and shape[1] != 0 and shape[2] != 0 and shape[3] != 0)):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {_size_str(shape)}")
    x = input.unsqueeze(0) if nd == 3 else input
    h, w = x.shape[2], x.shape[3]
    oh = (h + 2 * pd[0] - (dl[0] * (ks[0] - 1) + 1)) // sd[0] + 1
    ow = (w + 2 * pd[1] - (dl[1] * (ks[1] - 1) + 1)) // sd[1] + 1
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size=({ks[0]}, {ks[1]}), "
                           f"dilation=({dl[0]}, {dl[1]}), padding=({pd[0]}, {pd[1]}), calculated shape of the "
                           f"array of sliding blocks as ({oh}, {ow}), but its components must be at least one.")
    n, c = x.shape[0], x.shape[1]
    cols = _im2col(x, ks, sd, dl, [(pd[0], pd[0]), (pd[1], pd[1])], (oh, ow))
    y = cols.reshape(n, c * ks[0] * ks[1], oh * ow)
    return y.squeeze(0) if nd == 3 else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """fold(input [N, C * KH * KW, L] or [C * KH * KW, L], output_size, kernel_size, dilation=1,
    padding=0, stride=1) -> [N, C, *output_size]: the blocks summed into place (col2im)."""
    _check_tensor(input, "fold")
    osz = _pair_seq(output_size)
    if len(osz) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(osz)}")
    ks, dl, pd, sd = _fold_checks(kernel_size, dilation, padding, stride)
    if osz[0] <= 0 or osz[1] <= 0:
        raise RuntimeError(f"Expected output spatial size to be positive, but got: output_height = {osz[0]}, "
                           f"output_width = {osz[1]}")
    nd = input.dim()
    shape = tuple(input.shape)
    if not ((nd == 2 and shape[0] != 0 and shape[1] != 0) or (nd == 3 and shape[1] != 0 and shape[2] != 0)):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {_size_str(shape)}")
    bd = 0 if nd == 3 else -1
    planes = shape[bd + 1]
    if planes % (ks[0] * ks[1]):
        raise RuntimeError(f"Expected size of input's dimension {bd + 1} to be divisible by the product of "
                           f"kernel_size, but got input.size({bd + 1})={planes} and kernel_size=({ks[0]}, "
                           f"{ks[1]}).")
    length = shape[bd + 2]
    bh = (osz[0] + 2 * pd[0] - dl[0] * (ks[0] - 1) - 1) // sd[0] + 1
    bw = (osz[1] + 2 * pd[1] - dl[1] * (ks[1] - 1) - 1) // sd[1] + 1
    desc = (f"Given output_size=({osz[0]}, {osz[1]}), kernel_size=({ks[0]}, {ks[1]}), dilation=({dl[0]}, "
            f"{dl[1]}), padding=({pd[0]}, {pd[1]}), stride=({sd[0]}, {sd[1]}), ")
    if length != bh * bw:
        raise RuntimeError(f"{desc}expected size of input's dimension {bd + 2} to match the calculated number of "
                           f"sliding blocks {bh} * {bw} = {bh * bw}, but got input.size({bd + 2})={length}.")
    if bh < 1 or bw < 1:
        raise RuntimeError(f"{desc}calculated shape of the array of sliding blocks as ({bh}, {bw}), which is too "
                           f"small (non-positive)")
    x = input.unsqueeze(0) if nd == 2 else input
    n = x.shape[0]
    c = planes // (ks[0] * ks[1])
    y = _col2im(x.reshape(n, c, ks[0] * ks[1], length), tuple(osz), ks, sd, dl, pd, (bh, bw))
    return y.squeeze(0) if nd == 2 else y


# ---------------- pooling ----------------
@dyn_inline
def _pool_out(size, k, pad, stride, dilation, ceil_mode):
    """torch's pooling_output_shape (with its checks)."""
    if stride == 0:
        raise RuntimeError("stride should not be zero")
    if pad < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {pad}")
    if pad > _ctrunc((k - 1) * dilation + 1, 2):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pad}, "
                           f"kernel_size={k} and dilation={dilation}")
    num = size + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = num // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


_NUM = {1: "one", 2: "two", 3: "three"}


def _pool_args(fname, k, kernel_size, stride, padding, dilation=None):
    """(kernel, stride, padding[, dilation]) of a k-d pooling as k-tuples (an int or a
    1-sequence is repeated; stride None or [] is the kernel), or torch's error for a wrong
    length."""
    n = _NUM[k]
    either = "" if fname == "avg_pool3d" else "either "
    ks = _pool_param(kernel_size, k, f"{fname}: kernel_size must {either}be a single int, or a tuple of {n} ints")
    if stride is None or (_seq(stride) and len(stride) == 0):
        sd = ks
    else:
        sd = _pool_param(stride, k, f"{fname}: stride must {either}be omitted, a single int, or a tuple of {n} ints")
    pd = _pool_param(padding, k, f"{fname}: padding must {either}be a single int, or a tuple of {n} ints")
    if dilation is None:
        return ks, sd, pd
    return ks, sd, pd, _pool_param(dilation, k, f"{fname}: dilation must be either a single int, or a tuple of "
                                                f"{n} ints")


@dyn_inline
def _pool_shape_check(x, ks, sd, pd, dl, out, fn="", check_input_size=False):
    """torch's pool2d_shape_check or pool3d_shape_check (by len(ks); x unbatched or
    batched); fn names the 3-d op in its messages, check_input_size is avg_pool3d's check
    of the input against the kernel."""
    k = len(ks)
    names = ("H", "W") if k == 2 else ("T", "H", "W")

    def each(prefix, vals, sep=" "):
        return sep.join(f"{prefix}{n}: {v}" for n, v in zip(names, vals))
    if min(ks) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got {each('k', ks)}")
    if min(sd) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got {each('d', sd)}")
    if min(dl) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got {each('dilation', dl)}")
    s = tuple(x.shape)
    nd = len(s)
    if k == 2:
        if not ((nd == 3 and s[0] != 0 and s[1] != 0 and s[2] != 0)
                or (nd == 4 and s[1] != 0 and s[2] != 0 and s[3] != 0)):
            raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                               f"but got:{_size_str(s)}")
        if _ctrunc(ks[1], 2) < pd[1] or _ctrunc(ks[0], 2) < pd[0]:
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = "
                               f"{pd[1]}, padH = {pd[0]}, kW = {ks[1]}, kH = {ks[0]}")
    else:
        if any(s[i] == 0 for i in range(nd - 4, nd)):
            raise RuntimeError(f"{fn}: Expected input's non-batch dimensions to have positive length, but input "
                               f"has a shape of {_size_str(s)} and non-batch dimension 0 has length zero!")
        if check_input_size and any(s[nd - 3 + i] < ks[i] for i in range(3)):
            raise RuntimeError(f"input image ({each('', s[-3:])}) smaller than kernel size ({each('k', ks)})")
        if any(_ctrunc(ks[i], 2) < pd[i] for i in range(3)):
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got kT: {ks[0]} "
                               f"kW: {ks[2]} kH: {ks[1]} padT: {pd[0]} padW: {pd[2]} padH: {pd[1]}")
    if any(o < 1 for o in out):      # (not min(): its sizes stay symbolic)
        c = s[-k - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + s[-k:]))}). Calculated output size: "
                           f"({'x'.join(map(str, (c,) + tuple(out)))}). Output size is too small")


@dyn_inline
def _pool_pads(spatial, ks, sd, pd, dl, out):
    """(left, right) per dim: the padding, and on the right what ceil_mode's last windows
    need beyond it."""
    pads = []
    for i in range(len(ks)):
        need = (out[i] - 1) * sd[i] + dl[i] * (ks[i] - 1) + 1
        have = spatial[i] + 2 * pd[i]
        extra = need - have          # (not max(): under dynamic shapes a guard on > 0 only)
        pads.append((pd[i], pd[i] + (extra if extra > 0 else 0)))
    return pads


def _neg_fill(dtype):
    if dtype.is_floating_point:
        return -_math.inf
    return _ops.iinfo(dtype).min if dtype is not _C.bool else 0


@dyn_inline
def _max_pool_nd(x, ks, sd, pd, dl, out, return_indices):
    """x batched [N, C, *S]; the max of each window, and its flat index in S."""
    k = len(ks)
    n, c = x.shape[0], x.shape[1]
    spatial = tuple(x.shape[2:])
    pads = _pool_pads(spatial, ks, sd, pd, dl, out)
    cols = _im2col(x, ks, sd, dl, pads, out, _neg_fill(x.dtype))             # [N, C, K, L]
    am = cols.argmax(2, keepdim=True)                                         # [N, C, 1, L]
    y = cols.gather(2, am).reshape((n, c) + tuple(out))
    if not return_indices:
        return y
    K, L = _prod(ks), _prod(out)
    if x.dtype.is_floating_point:
        # ATen's loop takes every NaN it meets: a window's last NaN wins (argmax takes
        # the first); the value is NaN either way
        k_at = _ops.arange(K, device=x.device).reshape(1, 1, K, 1)
        last_nan = _ops.where(_ops.isnan(cols), k_at, -1).amax(2, keepdim=True)
        am = _ops.where(last_nan >= 0, last_nan, am)
    pos = _win_index(spatial, ks, sd, dl, out, x.device, offsets=[-p for p in pd]).reshape(1, 1, K, L)
    idx = pos.expand((n, c, K, L)).gather(2, am).reshape((n, c) + tuple(out))
    return y, idx


@dyn_inline
def _unbatch(r, unbatched):
    """A pooling result (a tensor, or a tuple with the indices) without the batch dim
    added for an unbatched input."""
    if not unbatched:
        return r
    return tuple(t.squeeze(0) for t in r) if isinstance(r, tuple) else r.squeeze(0)


@dyn_inline
def _max_pool_impl(k, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """max_pool2d / max_pool3d (k = 2, 3) with torch's checks, in torch's order."""
    fname = f"max_pool{k}d"
    _check_tensor(input, fname)
    ks, sd, pd, dl = _pool_args(fname, k, kernel_size, stride, padding, dilation)
    nd = input.dim()
    if nd not in (k + 1, k + 2):
        raise RuntimeError(f"non-empty {k + 1}D or {k + 2}D (batch mode) tensor expected for input")
    spatial = tuple(input.shape[-k:])
    out = tuple(_pool_out(spatial[i], ks[i], pd[i], sd[i], dl[i], ceil_mode) for i in range(k))
    _pool_shape_check(input, ks, sd, pd, dl, out, "max_pool3d_with_indices_out_cpu_template()")
    _check_dtype(input, fname, (_C.int64, _C.int32))
    x = input.unsqueeze(0) if nd == k + 1 else input
    return _unbatch(_max_pool_nd(x, ks, sd, pd, dl, out, return_indices), nd == k + 1)


def _max_pool2d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    return _max_pool_impl(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """max_pool2d_with_indices(...) -> (output, indices): max_pool2d with return_indices=True."""
    return _max_pool_impl(2, input, kernel_size, stride, padding, dilation, ceil_mode, True)


@dyn_inline
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """max_pool2d(input [N, C, H, W] or [C, H, W], kernel_size, stride=None (= kernel_size),
    padding=0, dilation=1, ceil_mode=False, return_indices=False): the max of each window
    (padding counts as -inf); with return_indices also the flat H*W index of each max."""
    return _max_pool_impl(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """max_pool3d_with_indices(...) -> (output, indices): max_pool3d with return_indices=True."""
    return _max_pool_impl(3, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """max_pool3d(input [N, C, D, H, W] or [C, D, H, W], kernel_size, stride=None (= kernel_size),
    padding=0, dilation=1, ceil_mode=False, return_indices=False): the max of each window
    (padding counts as -inf); with return_indices also the flat D*H*W index of each max."""
    return _max_pool_impl(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _max_pool1d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    _check_tensor(input, "max_pool1d")
    # torch's max_pool1d refuses a size-0 channel or length first (only the batch may be
    # empty); max_pool1d_with_indices leaves that to the 2-d op's own check below
    if input.dim() not in (2, 3) or (not return_indices and 0 in tuple(input.shape)[-2:]):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{_size_str(input.shape)}")

    def one(v, what, msg):
        if _seq(v):
            if len(v) != 1:
                raise RuntimeError(f"max_pool1d() {what} must be {msg} of size 1 but got size {len(v)}")
            return v[0]
        return v
    k = one(kernel_size, "kernel_size", "an int, list of ints or tuple of ints")
    if stride is None or (_seq(stride) and len(stride) == 0):
        s = k
    else:
        s = one(stride, "stride", "None, an int, list of ints, or tuple of ints")
    p = one(padding, "padding", "an int, list of ints, or tuple of ints")
    d = one(dilation, "dilation", "an int, list of ints or tuple of ints")
    if return_indices:  # torch's path: the 2-d op on [.., 1, L]
        r = _max_pool2d_impl(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, True)
        return tuple(t.squeeze(-2) for t in r)
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    o = _pool_out(input.shape[-1], k, p, s, d, ceil_mode)
    if o <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {o}")
    _check_dtype(input, "max_pool1d_impl")
    x = input.unsqueeze(0) if input.dim() == 2 else input
    y = _max_pool_nd(x, (k,), (s,), (p,), (d,), (o,), False)
    return y.squeeze(0) if input.dim() == 2 else y


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """max_pool1d_with_indices(...) -> (output, indices): max_pool1d with return_indices=True."""
    return _max_pool1d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """max_pool1d(input [N, C, L] or [C, L], kernel_size, stride=None (= kernel_size), padding=0,
    dilation=1, ceil_mode=False, return_indices=False)."""
    return _max_pool1d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@dyn_inline
def _avg_divisor(spatial, ks, sd, pd, out, count_include_pad, dtype, device):
    """[L]: torch's avg_pool divisor of each output position (the window clipped to the
    padded input, or to the input without count_include_pad)."""
    div = None
    for i in range(len(ks)):
        start = _ops.arange(out[i], device=device) * sd[i] - pd[i]
        # min(e, size) as e - max(e - size, 0): under dynamic shapes the size is an operand
        # (a 0-d tensor of the graph) where clamp(max=size) would make it a constant
        end = start + ks[i]
        end = end - (end - (spatial[i] + pd[i])).clamp(min=0)
        if count_include_pad:
            cnt = end - start
        else:
            cnt = end - (end - spatial[i]).clamp(min=0) - start.clamp(min=0)
        shape = [1] * len(ks)
        shape[i] = out[i]
        cnt = cnt.reshape(tuple(shape))
        div = cnt if div is None else div * cnt
    return div.clamp(min=1).reshape(-1).to(dtype)


@dyn_inline
def _avg_pool_nd(x, ks, sd, pd, out, ceil_mode, count_include_pad, divisor_override):
    n, c = x.shape[0], x.shape[1]
    spatial = tuple(x.shape[2:])
    dl = (1,) * len(ks)
    pads = _pool_pads(spatial, ks, sd, pd, dl, out)
    cols = _im2col(x, ks, sd, dl, pads, out, 0.0)                             # [N, C, K, L]
    fp = x.dtype.is_floating_point
    if divisor_override is not None:
        div = divisor_override
    elif all(p == (0, 0) for p in pads):
        div = _prod(ks)
        if fp:
            return cols.mean(2).reshape((n, c) + tuple(out))
    else:
        div = _avg_divisor(spatial, ks, sd, pd, out, count_include_pad, x.dtype, x.device)
    # integers: torch's kernel divides its integer sum (rounding toward zero)
    y = cols.sum(2) / div if fp else cols.sum(2).div(div, rounding_mode="trunc")
    return y.reshape((n, c) + tuple(out))


@dyn_inline
def _avg_pool_impl(k, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """avg_pool2d / avg_pool3d (k = 2, 3) with torch's checks, in torch's order."""
    fname = f"avg_pool{k}d"
    _check_tensor(input, fname)
    ks, sd, pd = _pool_args(fname, k, kernel_size, stride, padding)
    nd = input.dim()
    if k == 2:
        if divisor_override is not None and divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        if nd < 2:
            raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                               f"but got:{_size_str(input.shape)}")
    else:
        if nd not in (4, 5):
            raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
        if divisor_override is not None and divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    spatial = tuple(input.shape[-k:])
    out = tuple(_pool_out(spatial[i], ks[i], pd[i], sd[i], 1, ceil_mode) for i in range(k))
    _pool_shape_check(input, ks, sd, pd, (1,) * k, out, "avg_pool3d()", check_input_size=True)
    if k == 2:
        _check_dtype(input, "avg_pool2d", (_C.int64,))
    else:   # torch's CPU kernel: float, double and long only
        _check_dtype(input, "avg_pool3d_out_frame", (_C.int64,), (_C.float32, _C.float64))
    x = input.unsqueeze(0) if nd == k + 1 else input
    return _unbatch(_avg_pool_nd(x, ks, sd, pd, out, ceil_mode, count_include_pad, divisor_override), nd == k + 1)


@dyn_inline
def avg_pool2d(input, kernel_size, stride=[], padding=[0, 0], ceil_mode=False, count_include_pad=True,  # noqa: B006
               divisor_override=None):
    """avg_pool2d(input [N, C, H, W] or [C, H, W], kernel_size, stride=None/[] (= kernel_size),
    padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)."""
    return _avg_pool_impl(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=[], padding=[0, 0, 0], ceil_mode=False,  # noqa: B006
               count_include_pad=True, divisor_override=None):
    """avg_pool3d(input [N, C, D, H, W] or [C, D, H, W], kernel_size, stride=None/[] (= kernel_size),
    padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None); float32,
    float64 and int64 inputs, as torch's CPU kernel."""
    return _avg_pool_impl(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=[], padding=[0], ceil_mode=False, count_include_pad=True):  # noqa: B006
    """avg_pool1d(input [N, C, L] or [C, L], kernel_size, stride=None/[] (= kernel_size), padding=0,
    ceil_mode=False, count_include_pad=True)."""
    _check_tensor(input, "avg_pool1d")
    k = _check1d("avg_pool1d", "kernel_size", kernel_size)
    s = k if stride is None or (_seq(stride) and len(stride) == 0) else _check1d("avg_pool1d", "stride", stride)
    p = _check1d("avg_pool1d", "padding", padding)
    _check_dim_range(input, 2, 3, "avg_pool1d")
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def _list_with_default(out_size, defaults):
    if not _seq(out_size):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def _adaptive_bounds(size, out):
    """(starts, ends) of torch's adaptive windows over size, as python ints."""
    return ([(i * size) // out for i in range(out)], [-((-(i + 1) * size) // out) for i in range(out)])


def _empty_of(x, out):
    """An empty [N, C, *out] (some out is 0) read from x [N, C, *S], so that it is part of
    x's graph (its gradient, zeros, flows back as torch's)."""
    n, c = x.shape[0], x.shape[1]
    return x.reshape(n, c, _prod(x.shape[2:]))._slice(2, 0, 0, 1).reshape((n, c) + tuple(out))


def _adaptive_out(output_size, input, k):
    """output_size as a k-tuple (an int is repeated; None keeps that dim of input)."""
    osz = _list_with_default(output_size, tuple(input.shape))
    return tuple(osz) if _seq(osz) else (osz,) * k


def _nonempty_planes(input, fname, first=1):
    for i in range(first, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"{fname}(): Expected input to have non-zero size for non-batch dimensions, but "
                               f"input has sizes {_size_str(input.shape)} with dimension {i} being empty")


def _adaptive_max_nd(x, out, return_indices):
    """x batched [N, C, *S]: the max over torch's adaptive windows (and its flat index)."""
    k = len(out)
    spatial = tuple(x.shape[2:])
    n, c = x.shape[0], x.shape[1]
    if any(o == 0 for o in out):
        y = _empty_of(x, out)
        return (y, _ops.zeros((n, c) + tuple(out), dtype=_C.int64, device=x.device)) if return_indices else y
    # window i of dim d: points start_i .. end_i - 1, padded to the longest window by
    # repeating its last point (argmax keeps the first of equal values)
    idx = None
    mult = 1
    kmax = []
    for i in reversed(range(k)):
        starts, ends = _adaptive_bounds(spatial[i], out[i])
        km = max(e - s for s, e in zip(starts, ends))
        kmax.insert(0, km)
        o = _ops.arange(out[i], device=x.device).reshape(out[i], 1)
        st = (o * spatial[i]).div(out[i], rounding_mode="floor")
        en = -((-(o + 1) * spatial[i]).div(out[i], rounding_mode="floor"))
        pts = _ops.minimum(st + _ops.arange(km, device=x.device).reshape(1, km), en - 1)   # [O, Kmax]
        shape = [1] * (2 * k)
        shape[i] = km
        shape[k + i] = out[i]
        term = pts.t().reshape(tuple(shape)) * mult
        idx = term if idx is None else idx + term
        mult *= spatial[i]
    K, L = _prod(kmax), _prod(out)
    idx = idx.reshape(-1)
    cols = x.reshape(n, c, _prod(spatial)).index_select(2, idx).reshape(n, c, K, L)
    am = cols.argmax(2, keepdim=True)
    y = cols.gather(2, am).reshape((n, c) + tuple(out))
    if not return_indices:
        return y
    pos = idx.reshape(1, 1, K, L).expand((n, c, K, L)).gather(2, am).reshape((n, c) + tuple(out))
    return y, pos


def _adaptive_max_impl(k, input, output_size, return_indices):
    """adaptive_max_pool2d / adaptive_max_pool3d (k = 2, 3) with torch's checks."""
    fname = f"adaptive_max_pool{k}d"
    _check_tensor(input, fname)
    osz = _list_with_default(output_size, tuple(input.shape))
    nd = input.dim()
    if nd not in (k + 1, k + 2):
        raise RuntimeError(f"{fname}(): Expected {k + 1}D or {k + 2}D tensor, but got: {_size_str(input.shape)}")
    _nonempty_planes(input, fname)
    osz = tuple(osz) if _seq(osz) else (osz,) * k
    if len(osz) != k:
        raise RuntimeError(f"{fname}(): internal error: output_size.size() must be {k}")
    for o in osz:
        if o < 0:
            shape = tuple(input.shape[:-k]) + osz
            raise RuntimeError(f"Trying to create tensor with negative dimension {o}: {_size_str(shape)}")
    _check_dtype(input, fname if k == 2 else "adaptive_max_pool3d_cpu")
    x = input.unsqueeze(0) if nd == k + 1 else input
    return _unbatch(_adaptive_max_nd(x, osz, return_indices), nd == k + 1)


def _adaptive_max_pool2d_impl(input, output_size, return_indices):
    return _adaptive_max_impl(2, input, output_size, return_indices)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool2d_with_indices(...) -> (output, indices)."""
    return _adaptive_max_impl(2, input, output_size, True)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """adaptive_max_pool2d(input [N, C, H, W] or [C, H, W], output_size, return_indices=False)."""
    return _adaptive_max_impl(2, input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool3d_with_indices(...) -> (output, indices)."""
    return _adaptive_max_impl(3, input, output_size, True)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """adaptive_max_pool3d(input [N, C, D, H, W] or [C, D, H, W], output_size, return_indices=False)."""
    return _adaptive_max_impl(3, input, output_size, return_indices)


def _adaptive_max_pool1d_impl(input, output_size, return_indices):
    _check_tensor(input, "adaptive_max_pool1d")
    o = _check1d("adaptive_max_pool1d", "output_size", output_size)
    _check_dim_range(input, 2, 3, "adaptive_max_pool1d")
    r = _adaptive_max_pool2d_impl(input.unsqueeze(-2), (1, o), return_indices)
    return tuple(t.squeeze(-2) for t in r) if return_indices else r.squeeze(-2)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool1d_with_indices(...) -> (output, indices)."""
    return _adaptive_max_pool1d_impl(input, output_size, True)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """adaptive_max_pool1d(input [N, C, L] or [C, L], output_size, return_indices=False)."""
    return _adaptive_max_pool1d_impl(input, output_size, return_indices)


# ---------------- max unpooling ----------------
def _ntuple(v, k):
    """torch's _single/_pair/_triple: a sequence as a tuple (its length unchecked), else v
    repeated k times."""
    return tuple(v) if _seq(v) else (v,) * k


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """torch's _unpool_output_size: the spatial output size of max_unpool (the default
    (in - 1) * stride + kernel - 2 * padding, or output_size, its N, C dropped, checked to
    lie within a stride of the default)."""
    input_size = tuple(input.shape)
    k = len(kernel_size)
    default_size = [(input_size[-k + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(k)]
    if output_size is None:
        ret = default_size
    else:
        if len(output_size) == k + 2:
            output_size = output_size[2:]
        if len(output_size) != k:
            raise ValueError(f"output_size should be a sequence containing {k} or {k + 2} elements, but it has a "
                             f"length of '{len(output_size)}'")
        for d in range(k):
            min_size = default_size[d] - stride[d]
            max_size = default_size[d] + stride[d]
            if not (min_size < output_size[d] < max_size):
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {min_size} and '
                                 f'{max_size})')
        ret = output_size
    for d in range(k):
        if ret[d] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={ret[d]}")
    return ret


def _max_unpool_core(k, input, indices, out, stride=None):
    """torch's max_unpool2d / max_unpool3d (k = 2, 3) on [N, C, *S] or [C, *S]: zeros of the
    spatial size out, with each input value written at the flat position its index holds
    (a scatter; where indices repeat a position, the last in order wins, as torch's CPU
    kernel). Its gradient is the output's gradient gathered at indices. An index outside
    the output raises torch's error eagerly (a read of the indices on the host); while a
    graph is traced the check is skipped and such a value is dropped."""
    fn = f"max_unpooling{k}d"
    _check_tensor(input, f"max_unpool{k}d")
    _check_tensor(indices, f"max_unpool{k}d", "indices")
    if indices.dtype is not _C.int64:
        raise RuntimeError("elements in indices should be type int64"
                           + (f" but got: {_tname(indices.dtype)}" if k == 2 else ""))
    nd = input.dim()
    if nd not in (k + 1, k + 2):
        raise RuntimeError(f"Input to {fn} should be a {k + 1}d or {k + 2}d Tensor, but got a tensor with {nd} "
                           f"dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({_size_str(input.shape)}) but got indices tensor with shape: "
                           f"{_size_str(indices.shape)}")
    for i in range(1, nd):
        if input.shape[i] == 0:
            raise RuntimeError(f"{fn}_forward_out_cpu(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got {_size_str(input.shape)} with dimension {i} being empty.")
    if stride is not None and min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(stride)}")
    _check_dtype(input, f"max_unpool{k}d")
    x, ind = (input.unsqueeze(0), indices.unsqueeze(0)) if nd == k + 1 else (input, indices)
    n, c = x.shape[0], x.shape[1]
    P, L = _prod(out), _prod(x.shape[2:])
    shape = (n, c) + tuple(out)
    if n * c * P == 0:
        return _unbatch(_ops.zeros(shape, dtype=x.dtype, device=x.device), nd == k + 1)
    src, ind = x.reshape(n, c, L), ind.reshape(n, c, L)
    if _C._trace_active():   # no host read: invalid positions go to a spare slot, then cut off
        ind = _ops.where((ind < 0) | (ind >= P), P, ind)
        y = _ops.zeros((n, c, P + 1), dtype=x.dtype, device=x.device).scatter(2, ind, src)._slice(2, 0, P, 1)
    else:
        bad = ((ind < 0) | (ind >= P)).reshape(-1)
        if bad.any().item():     # torch reports the last invalid index in order
            last = _ops.where(bad, _ops.arange(bad.numel(), device=x.device), -1).amax()
            v = ind.reshape(-1)[last].item()
            raise RuntimeError(f"Found an invalid max index: {v} (output volumes are of size "
                               f"{'x'.join(map(str, out))})")
        y = _ops.zeros((n, c, P), dtype=x.dtype, device=x.device).scatter(2, ind, src)
    return _unbatch(y.reshape(shape), nd == k + 1)


def _max_unpool(k, input, indices, kernel_size, stride, padding, output_size):
    kernel_size = _ntuple(kernel_size, k)
    stride = _ntuple(stride, k) if stride is not None else kernel_size
    padding = _ntuple(padding, k)
    out = list(_unpool_output_size(input, kernel_size, stride, padding, output_size))
    if k == 1:   # torch's path: the 2-d op on [.., L, 1]
        return _max_unpool_core(2, input.unsqueeze(-1), indices.unsqueeze(-1), out + [1]).squeeze(-1)
    return _max_unpool_core(k, input, indices, out, stride if k == 3 else None)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_unpool1d(input [N, C, L] or [C, L], indices (max_pool1d's), kernel_size, stride=None
    (= kernel_size), padding=0, output_size=None) -> [N, C, L_out]: max_pool1d's partial
    inverse, zeros except at the indices."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_unpool2d(input [N, C, H, W] or [C, H, W], indices (max_pool2d's, flat H*W), kernel_size,
    stride=None (= kernel_size), padding=0, output_size=None) -> [N, C, H_out, W_out]."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_unpool3d(input [N, C, D, H, W] or [C, D, H, W], indices (max_pool3d's, flat D*H*W),
    kernel_size, stride=None (= kernel_size), padding=0, output_size=None)."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


# ---------------- power-average pooling ----------------
def _lp_pool(k, input, norm_type, kernel_size, stride, ceil_mode):
    """torch's lp_pool{k}d: (sum over each window of x^p)^(1/p), as avg_pool(x^p) * K, its
    sign(out) * relu(|out|) giving a zero gradient where a window's sum is 0; p = inf is
    max_pool of |x| (-inf: minus max_pool of -|x|)."""
    _check_tensor(input, f"lp_pool{k}d")
    maxp = (max_pool1d, max_pool2d, max_pool3d)[k - 1]
    avgp = (avg_pool1d, avg_pool2d, avg_pool3d)[k - 1]
    if k == 1:
        K = kernel_size
    else:   # torch unpacks _pair / _triple(kernel_size) first
        ks = _ntuple(kernel_size, k)
        if len(ks) != k:
            raise ValueError(f"too many values to unpack (expected {k})" if len(ks) > k
                             else f"not enough values to unpack (expected {k}, got {len(ks)})")
        K = _prod(ks)
    if isinstance(norm_type, (int, float)):
        if norm_type == _math.inf:
            return maxp(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -_math.inf:
            return -maxp(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avgp(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avgp(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (_ops.sign(out) * _ops.relu(_ops.abs(out))).mul(K).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """lp_pool1d(input [N, C, L] or [C, L], norm_type p, kernel_size, stride=None, ceil_mode=False):
    the p-norm of each window, (sum x^p)^(1/p)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """lp_pool2d(input [N, C, H, W] or [C, H, W], norm_type p, kernel_size, stride=None,
    ceil_mode=False): the p-norm of each window."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """lp_pool3d(input [N, C, D, H, W] or [C, D, H, W], norm_type p, kernel_size, stride=None,
    ceil_mode=False): the p-norm of each window."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# ---------------- pixel shuffle ----------------
def _pixel_args(input, factor, fn, arg):
    """(batch dims, C, H, W, r) of pixel_shuffle / pixel_unshuffle's input, checked as torch's."""
    _check_tensor(input, fn)
    _check_int(factor, fn, arg, 2)
    nd = input.dim()
    if nd < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input with {nd} "
                           f"dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{fn} expects a positive {arg}, but got {factor}")
    c, h, w = input.shape[-3], input.shape[-2], input.shape[-1]
    return tuple(input.shape[:-3]), c, h, w, factor


def pixel_shuffle(input, upscale_factor):
    """pixel_shuffle(input [*, C * r^2, H, W], r) -> [*, C, H * r, W * r]."""
    batch, c, h, w, r = _pixel_args(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    b = len(batch)
    oc = c // (r * r)
    x = input.reshape(batch + (oc, r, r, h, w))
    perm = list(range(b)) + [b, b + 3, b + 1, b + 4, b + 2]
    return x.permute(*perm).reshape(batch + (oc, h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """pixel_unshuffle(input [*, C, H * r, W * r], r) -> [*, C * r^2, H, W]."""
    batch, c, h, w, r = _pixel_args(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    b = len(batch)
    x = input.reshape(batch + (c, h // r, r, w // r, r))
    perm = list(range(b)) + [b, b + 2, b + 4, b + 1, b + 3]
    return x.permute(*perm).reshape(batch + (c * r * r, h // r, w // r))


def _channel_shuffle(input, groups, fn):
    _check_tensor(input, fn)
    _check_int(groups, fn, "groups", 2)
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{_size_str(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    shape = tuple(input.shape)
    c = shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    if groups == 1 or groups == c:
        return input.clone()
    return input.reshape((shape[0], groups, c // groups) + shape[2:]).transpose(1, 2).reshape(shape)


def channel_shuffle(input, groups):
    """channel_shuffle(input [N, C, *], groups) -> [N, C, *]: the channels read as
    [groups, C / groups] and transposed (ShuffleNet's shuffle)."""
    return _channel_shuffle(input, groups, "channel_shuffle")


def native_channel_shuffle(input, groups):
    """native_channel_shuffle(input, groups): channel_shuffle."""
    return _channel_shuffle(input, groups, "native_channel_shuffle")


# ---------------- interpolate ----------------


def _nearest_index(size, out, scale, exact, device):
    """torch's nearest (or nearest-exact) source index of each output position."""
    if not exact and out == size:
        return None
    if not exact and out == 2 * size:
        return _ops.arange(out, device=device).div(2, rounding_mode="floor")
    s = _f32(1.0 / scale) if scale is not None and scale > 0 else _f32(_f32(size) / out)
    pos = _ops.arange(out, dtype=_C.float32, device=device)
    if exact:
        pos = pos + 0.5
    return (pos * s).floor().to(_C.int64).clamp(max=size - 1)


def _src_scale(size, out, align_corners, scale, dtype):
    """(compute dtype, the input step per output position), rounded as torch's
    area_pixel_compute_scale in that dtype."""
    cdt = _C.float64 if dtype is _C.float64 else _C.float32
    rnd = (lambda v: v) if cdt is _C.float64 else _f32
    if align_corners:
        return cdt, (rnd(rnd(size - 1) / (out - 1)) if out > 1 else 0.0)
    return cdt, (rnd(1.0 / scale) if scale is not None and scale > 0 else rnd(rnd(size) / out))


def _linear_weights(size, out, align_corners, scale, dtype, device):
    """torch's linear interpolation of each output position: (i0, i1, w0, w1)."""
    cdt, s = _src_scale(size, out, align_corners, scale, dtype)
    pos = _ops.arange(out, dtype=cdt, device=device)
    src = pos * s if align_corners else ((pos + 0.5) * s - 0.5).clamp(min=0)
    i0 = src.to(_C.int64)
    i1 = (i0 + 1).clamp(max=size - 1)
    w1 = (src - i0.to(cdt)).clamp(0, 1)
    w0 = 1 - w1
    return i0, i1, w0.to(dtype), w1.to(dtype)


def _cubic_weights(size, out, align_corners, scale, dtype, device):
    """torch's bicubic interpolation of each output position (cubic convolution, A = -0.75):
    [(index, weight)] for the 4 taps at floor(src) - 1 .. floor(src) + 2, indices clamped to
    the input (upsample_bicubic2d's compute_indices_weights_cubic)."""
    cdt, s = _src_scale(size, out, align_corners, scale, dtype)
    pos = _ops.arange(out, dtype=cdt, device=device)
    src = pos * s if align_corners else (pos + 0.5) * s - 0.5
    base = src.floor().clamp(max=size - 1)
    t = (src - base).clamp(0, 1)
    base = base.to(_C.int64)
    a = -0.75

    def near(x):                   # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):                    # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    u = 1 - t
    weights = (far(t + 1), near(t), near(u), far(u + 1))
    return [((base + (j - 1)).clamp(0, size - 1), w.to(dtype)) for j, w in enumerate(weights)]


def _interp_size_error(spatial, out):
    names = ("D", "H", "W")[3 - len(spatial):]
    a = ", ".join(f"{n}: {v}" for n, v in zip(names, spatial))
    b = ", ".join(f"{n}: {v}" for n, v in zip(names, out))
    sep = " and " if len(spatial) == 1 else " "
    raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({a}){sep}output ({b})")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """interpolate(input [N, C, W], [N, C, H, W] or [N, C, D, H, W], size=None, scale_factor=None,
    mode='nearest', align_corners=None, recompute_scale_factor=None, antialias=False). Modes:
    'nearest', 'nearest-exact', 'area', 'linear' (3-d), 'bilinear' and 'bicubic' (4-d),
    'trilinear' (5-d), each separable: one index_select (nearest) or a weighted sum of 2
    (linear) or 4 (cubic) index_selects per spatial dim. antialias=True (4-d bilinear, bicubic,
    and 'lanczos', which requires it): _interp_aa.py."""
    _check_tensor(input, "interpolate")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    elif size is not None:
        scale_factors = None
        if _seq(size):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and output size of "
                                 f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and output "
                                 f"size in (o1, o2, ...,oK) format.")
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}")
            output_size = list(size)
        else:
            output_size = [size for _ in range(dim)]
    elif scale_factor is not None:
        output_size = None
        if _seq(scale_factor):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but "
                                 f"got input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                                 f"format and scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = list(scale_factor)
        else:
            scale_factors = [scale_factor for _ in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor is not None and recompute_scale_factor:
        output_size = [_math.floor(float(input.shape[i + 2]) * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    need = {"linear": 1, "bilinear": 2, "trilinear": 3}
    if mode in need and dim != need[mode] and dim in (1, 2, 3):
        raise NotImplementedError(f"Got {dim + 2}D input, but {mode} mode needs {need[mode] + 2}D input")
    known = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area")
    if mode == "lanczos" and dim == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if not ((mode in known and dim in (1, 2, 3)) or (mode in ("bicubic", "lanczos") and dim == 2)):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {dim + 2}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area "
                                  f"| nearest-exact (got {mode})")
    spatial = tuple(input.shape[2:])
    if output_size is None:
        output_size = [int(spatial[i] * scale_factors[i]) for i in range(dim)]
    if any(s <= 0 for s in spatial) or any(o <= 0 for o in output_size):
        _interp_size_error(spatial, output_size)
    if antialias:
        from ._interp_aa import interpolate_aa
        return interpolate_aa(input, output_size, scale_factors, mode, align_corners)
    _check_dtype(input, f"upsample_{mode.replace('-', '_')}{dim}d")
    if mode == "area":
        from ._adaptive_pool import _adaptive_avg_nd   # (it imports this module)
        return _adaptive_avg_nd(input, tuple(output_size))
    scales = scale_factors or [None] * dim
    x = input
    for i in range(dim):
        d = 2 + i
        n_in, n_out = spatial[i], output_size[i]
        if mode in ("nearest", "nearest-exact"):
            idx = _nearest_index(n_in, n_out, scales[i], mode == "nearest-exact", input.device)
            if idx is not None:
                x = x.index_select(d, idx)
        else:
            shape = [1] * input.dim()
            shape[d] = n_out
            if mode == "bicubic":
                taps = _cubic_weights(n_in, n_out, align_corners, scales[i], input.dtype, input.device)
            else:
                i0, i1, w0, w1 = _linear_weights(n_in, n_out, align_corners, scales[i], input.dtype, input.device)
                taps = ((i0, w0), (i1, w1))
            y = None
            for idx, w in taps:
                term = x.index_select(d, idx) * w.reshape(tuple(shape))
                y = term if y is None else y + term
            x = y
    return x.clone() if x is input else x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """upsample(...): the deprecated name of interpolate (warns as torch)."""
    _warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                   stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """upsample_nearest(...): interpolate(mode='nearest'), deprecated (warns as torch)."""
    _warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                   stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """upsample_bilinear(...): interpolate(mode='bilinear', align_corners=True), deprecated."""
    _warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                   stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------- torch-level forms (torch.conv2d, torch.max_pool2d, ...) ----------------
def _torch_max_pool1d(input, kernel_size, stride=[], padding=[0], dilation=[1], ceil_mode=False):  # noqa: B006
    """torch.max_pool1d(input, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)."""
    return _max_pool1d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, False)


def _torch_max_pool1d_with_indices(input, kernel_size, stride=[], padding=[0], dilation=[1],  # noqa: B006
                                   ceil_mode=False):
    """torch.max_pool1d_with_indices(...) -> (output, indices)."""
    return _max_pool1d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _torch_max_pool2d(input, kernel_size, stride=[], padding=[0, 0], dilation=[1, 1],  # noqa: B006
                      ceil_mode=False):
    """torch.max_pool2d(input, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)."""
    return _max_pool2d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, False)


def _torch_max_pool3d(input, kernel_size, stride=[], padding=[0, 0, 0], dilation=[1, 1, 1],  # noqa: B006
                      ceil_mode=False):
    """torch.max_pool3d(input, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)."""
    return _max_pool_impl(3, input, kernel_size, stride, padding, dilation, ceil_mode, False)


def _torch_adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d(input, output_size) -> (output, indices)."""
    return _adaptive_max_pool1d_impl(input, output_size, True)


for _f, _n in ((_torch_max_pool1d, "max_pool1d"), (_torch_max_pool1d_with_indices, "max_pool1d_with_indices"),
               (_torch_max_pool2d, "max_pool2d"), (_torch_max_pool3d, "max_pool3d"),
               (_torch_adaptive_max_pool1d, "adaptive_max_pool1d")):
    _f.__name__ = _f.__qualname__ = _n
del _f, _n

from . import _conv_s1  # noqa: E402  (it imports _im2col from here)
