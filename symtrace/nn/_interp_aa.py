"""interpolate(..., antialias=True) for 4-d inputs: torch's _upsample_bilinear2d_aa,
_upsample_bicubic2d_aa and _upsample_lanczos2d_aa (the PIL-style separable resampling).

Per spatial dim, output point o reads the input around center = scale * (o + 0.5) (scale =
torch's area_pixel_compute_scale: in / out, 1 / scale_factor, or (in - 1) / (out - 1) with
align_corners) through a filter stretched by the downsampling factor: tap j weighs
filter((j + 0.5 - center) / max(scale, 1)), the weights of each output point normalised to
sum 1 (left as they are where they sum to 0). Filters: triangle (bilinear, support 1),
cubic convolution with a = -0.5 (bicubic, support 2; PIL's, not the -0.75 of the
non-antialiased bicubic), Lanczos-3 (support 3).

The weights of a dim are a dense [out, in] matrix built with graph ops over aranges (they
depend on shapes only, never on values), so the resize is two matmuls,
W_h @ x @ W_w^T: differentiable (the gradient is the transposed product, as torch's
backward), and symtrace.compile traces it like any other op.
"""
import math as _math

from .. import _C, _ops
from .._ops import _tname


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


def interpolate_aa(input, output_size, scale_factors, mode, align_corners):
    """input [N, C, H, W] (float32 or float64; uint8: _interp_aa_u8.py) resized to output_size [oh, ow] with the
    antialiasing filter of mode; scale_factors: [sh, sw] or None (as torch passes them)."""
    dt = input.dtype
    if dt is _C.uint8:
        from ._interp_aa_u8 import interpolate_aa_uint8
        return interpolate_aa_uint8(input, output_size, scale_factors, mode, align_corners)
    if not dt.is_floating_point or dt not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for '{_tname(dt)}'")
    from ._conv import _f32
    rnd = (lambda v: v) if dt is _C.float64 else _f32
    scales = scale_factors or [None, None]
    h, w = input.shape[2], input.shape[3]
    wh = _weights(mode, h, output_size[0], align_corners, scales[0], dt, input.device, rnd)
    ww = _weights(mode, w, output_size[1], align_corners, scales[1], dt, input.device, rnd)
    return wh.matmul(input.matmul(ww.t()))
