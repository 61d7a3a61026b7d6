"""interpolate(..., antialias=True) for 4-d inputs: torch's _upsample_bilinear2d_aa,
_upsample_bicubic2d_aa and _upsample_lanczos2d_aa (the PIL-style separable resampling).

Per spatial dim, output point o reads the input around center = scale * (o + 0.5) (scale =
torch's area_pixel_compute_scale: in / out, 1 / scale_factor, or (in - 1) / (out - 1) with
align_corners) through a filter stretched by the downsampling factor: tap j weighs
filter((j + 0.5 - center) / max(scale, 1)), the weights of each output point normalised to
sum 1 (left as they are where they sum to 0). Filters: triangle (bilinear, support 1),
cubic convolution with a = -0.5 (bicubic, support 2; PIL's, not the -0.75 of the
non-antialiased bicubic), Lanczos-3 (support 3).

Each dim is resampled one of two ways (H first, then W), chosen per dim by a cost estimate:

- dense: the weights as an [out, in] matrix built with graph ops over aranges (they depend
  on shapes only, never on values) and a matmul, W_h @ x, x @ W_w^T: differentiable (the
  gradient is the transposed product, as torch's backward). Cheaper for small inputs
  (upsampling, small images), where a matmul's in-per-output products cost less than
  the banded path's per-tap ops.
- banded (_Banded): each output reads only the K taps of its window (torch's: the points
  whose filter weight can be non-zero), so per tap k < K one output-sized index_select of
  rows (dim 2), times a weight column [out], added in k's order; the taps past a shorter
  window's end masked to 0 (so an inf there does not make 0 * inf). The W dim is
  banded on a transposed copy (gathering rows is much faster than gathering single
  elements of the last dim). Index and weight tables come from python numbers (the
  float32 coordinate arithmetic rounded per op, as torch's float kernels) and are graph
  constants under a trace; the gradient gathers too, with the transposed tables (per
  input point, the outputs whose windows hold it), not index_select's scatter-add.
  Sizes are plain ints here (interpolate is not inlined for dynamic shapes).

STATS counts the path each dim took (tests check it).
"""
import math as _math

from .. import _C, _ops
from .._ops import _tname
from .._ops._core import f32 as _f32
from ..autograd.function import Function

STATS = {"dense": 0, "banded": 0, "banded_grad": 0}
_TABLES = {}   # (mode, size, out, align_corners, scale_factor, dtype) -> _band_tables(...)
_BAND_COST = 40   # a banded tap costs about this many matmul products (measured at image sizes, 1 thread)


def _triangle(x):
    return (1 - x.abs()).clamp(min=0)


def _cubic(x):
    a = -0.5
    t = x.abs()
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return _ops.where(t < 1, near, _ops.where(t < 2, far, _ops.zeros_like(t)))


def _lanczos3(x):
    t = x.abs()
    safe = _ops.where(t == 0, _ops.ones_like(t), t)        # sinc(0) = 1 without 0 / 0
    px = safe * _math.pi
    v = 3 * (px).sin() * (px / 3).sin() / (px * px)
    v = _ops.where(t == 0, _ops.ones_like(t), v)
    return _ops.where(t < 3, v, _ops.zeros_like(t))


# mode -> (filter, half width of the filter at scale 1)
_FILTERS = {"bilinear": (_triangle, 1.0), "bicubic": (_cubic, 2.0), "lanczos": (_lanczos3, 3.0)}


def _exact(v):
    """No rounding (float64 inputs, and the uint8 path's double-precision weights)."""
    return v


def _scale(size, out, align_corners, scale_factor, rnd):
    """torch's area_pixel_compute_scale, rounded by rnd (to float32 for float32 inputs)."""
    if align_corners:
        return rnd(rnd(size - 1) / (out - 1)) if out > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return rnd(1.0 / scale_factor)
    return rnd(rnd(size) / out)


def _weights(mode, size, out, align_corners, scale_factor, dtype, device, rnd):
    """[out, size] in dtype: the normalised filter weights of each output point."""
    filt, support = _FILTERS[mode]
    s = _scale(size, out, align_corners, scale_factor, rnd)
    inv = rnd(1.0 / s) if s >= 1.0 else 1.0
    center = _ops.arange(out, dtype=dtype, device=device).add(0.5).mul(s).reshape((out, 1))
    taps = _ops.arange(size, dtype=dtype, device=device).reshape((1, size))
    w = filt((taps - center + 0.5) * inv)
    total = w.sum(1, keepdim=True)
    return w / _ops.where(total == 0, _ops.ones_like(total), total)


def _py_filter(mode, x, rnd):
    """The filter at x in python numbers, each operation rounded by rnd (float32 inputs: as
    the graph ops of _weights compute it)."""
    t = abs(x)
    if mode == "bilinear":
        return rnd(1.0 - t) if t < 1.0 else 0.0
    if mode == "bicubic":
        a = -0.5
        if t < 1.0:
            return rnd(rnd(rnd(rnd(rnd((a + 2) * t) - (a + 3)) * t) * t) + 1)
        if t < 2.0:
            return rnd(rnd(rnd(rnd(rnd(rnd(a * t) - 5 * a) * t) + 8 * a) * t) - 4 * a)
        return 0.0
    if t == 0.0:
        return 1.0
    if t >= 3.0:
        return 0.0
    px = rnd(t * _math.pi)
    return rnd(rnd(rnd(3 * rnd(_math.sin(px))) * rnd(_math.sin(rnd(px / 3)))) / rnd(px * px))


def _band_tables(mode, size, out, align_corners, scale_factor, rnd):
    """(fwd, bwd): per dim, the banded path's tables as python lists. fwd: K, and per
    tap k < K (index [out], weight [out], valid [out] or None when every window has k + 1
    taps); bwd: the same from out to size (per input point, the outputs reading it)."""
    _, half = _FILTERS[mode]
    s = _scale(size, out, align_corners, scale_factor, rnd)
    inv = rnd(1.0 / s) if s >= 1.0 else 1.0
    support = half * s if s >= 1.0 else half
    rows = []   # per output: (first tap, weights of its window)
    for o in range(out):
        c = rnd(rnd(o + 0.5) * s)
        lo, hi = max(int(_math.floor(c - support)) - 1, 0), min(int(_math.ceil(c + support)) + 1, size)
        w = [_py_filter(mode, rnd(rnd(rnd(j - c) + 0.5) * inv), rnd) for j in range(lo, hi)]
        while len(w) > 1 and w[-1] == 0.0:
            w.pop()
        while len(w) > 1 and w[0] == 0.0:
            w.pop(0)
            lo += 1
        total = 0.0
        for v in w:
            total = rnd(total + v)
        rows.append((lo, [rnd(v / total) for v in w] if total != 0.0 else w))
    owners = [[] for _ in range(size)]
    for o, (lo, w) in enumerate(rows):
        for j, v in enumerate(w):
            owners[lo + j].append((o, v))
    return _columns([[(lo + j, v) for j, v in enumerate(w)] for lo, w in rows]), _columns(owners)


def _columns(lists):
    """Per k < the longest list: (index, weight, valid or None) over the lists' k-th pairs
    (a shorter list repeats its first point, weight 0, not valid)."""
    cols = []
    for k in range(max(len(p) for p in lists)):
        ok = [k < len(p) for p in lists]
        idx = [p[k][0] if v else (p[0][0] if p else 0) for p, v in zip(lists, ok)]
        wk = [p[k][1] if v else 0.0 for p, v in zip(lists, ok)]
        cols.append((idx, wk, None if all(ok) else ok))
    return cols


def _const(data, dtype, device):
    """A tensor of python numbers; under a trace a constant of the graph."""
    t = _C._trace_constant(_C.tensor(data, dtype))
    return t if str(t.device) == str(device) else t.to(device)


def _gather(y, tables):
    """sum over taps k of y's rows (dim 2) index_k times weight_k, masked where not valid."""
    r = None
    for i in range(0, len(tables), 3):
        idx, w, valid = tables[i:i + 3]
        shape = (idx.shape[0], 1)
        v = y.index_select(2, idx) * w.reshape(shape)
        if valid is not None:
            v = _ops.where(valid.reshape(shape), v, 0.0)
        r = v if r is None else r + v
    return r


class _Banded(Function):
    """y [N, C, size, L] -> [N, C, out, L], the rows resampled by the banded tables (their
    tensors in a row: fwd's n_fwd of them, then bwd's; a valid mask absent is None)."""
    @staticmethod
    def forward(ctx, y, n_fwd, *tables):
        ctx.n_fwd = n_fwd
        ctx.save_for_backward(*[t for t in tables[n_fwd:] if t is not None])
        ctx.has = [t is not None for t in tables[n_fwd:]]
        return _gather(y, tables[:n_fwd])

    @staticmethod
    def backward(ctx, g):
        STATS["banded_grad"] += 1
        saved = iter(ctx.saved_tensors)
        bwd = [next(saved) if h else None for h in ctx.has]
        return (_gather(g, bwd), None) + (None,) * (ctx.n_fwd + len(bwd))


def _banded_rows(y, mode, size, out, align_corners, scale_factor, rnd):
    """y [N, C, size, L] resampled along dim 2 by the banded path."""
    key = (mode, size, out, align_corners, scale_factor, y.dtype)
    if key not in _TABLES:
        _TABLES[key] = _band_tables(mode, size, out, align_corners, scale_factor, rnd)
    fwd, bwd = _TABLES[key]
    tables = []
    for idx, w, valid in fwd + bwd:
        tables += [_const(idx, _C.int64, y.device), _const(w, y.dtype, y.device),
                   None if valid is None else _const(valid, _C.bool, y.device)]
    return _Banded.apply(y, 3 * len(fwd), *tables)


def _use_banded(mode, size, out, scale_factor, align_corners, rnd):
    """Whether the banded path is estimated cheaper for a dim: K taps per output (K about
    2 * support + 1) at _BAND_COST products each against the matmul's `size`."""
    s = _scale(size, out, align_corners, scale_factor, rnd)
    k = 2 * _FILTERS[mode][1] * max(s, 1.0) + 1
    return size > _BAND_COST * k


def interpolate_aa(input, output_size, scale_factors, mode, align_corners):
    """input [N, C, H, W] (float32 or float64; uint8: _interp_aa_u8.py) resized to output_size [oh, ow] with the
    antialiasing filter of mode; scale_factors: [sh, sw] or None (as torch passes them)."""
    dt = input.dtype
    if dt is _C.uint8:
        from ._interp_aa_u8 import interpolate_aa_uint8
        return interpolate_aa_uint8(input, output_size, scale_factors, mode, align_corners)
    if not dt.is_floating_point or dt not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for '{_tname(dt)}'")
    rnd = _exact if dt is _C.float64 else _f32
    scales = scale_factors or [None, None]
    h, w = input.shape[2], input.shape[3]
    oh, ow = output_size
    y = input
    if _use_banded(mode, h, oh, scales[0], align_corners, rnd):
        STATS["banded"] += 1
        y = _banded_rows(y, mode, h, oh, align_corners, scales[0], rnd)
    else:
        STATS["dense"] += 1
        y = _weights(mode, h, oh, align_corners, scales[0], dt, input.device, rnd).matmul(y)
    if _use_banded(mode, w, ow, scales[1], align_corners, rnd):
        STATS["banded"] += 1
        y = _banded_rows(y.transpose(2, 3).contiguous(), mode, w, ow, align_corners, scales[1], rnd)
        return y.transpose(2, 3).contiguous()
    STATS["dense"] += 1
    return y.matmul(_weights(mode, w, ow, align_corners, scales[1], dt, input.device, rnd).t())
