"""interpolate(uint8 input, ..., antialias=True): torch's fixed-point uint8 resampling (the
Pillow-SIMD scheme torchvision's Resize on uint8 images relies on), bit for bit.

Per spatial dim (W first, then H; a dim whose size does not change is skipped), the
filter weights of _interp_aa.py are computed on the host in double precision over each
output point's window of taps, as torch does (window [trunc(center - support + 0.5),
trunc(center + support + 0.5)), at most 2 * ceil(support) + 1 taps), then scaled to
integers: precision p = the largest (< 22) with round(w_max * 2^(p+1)) < 2^15 (w_max: the
dim's largest weight), each weight rounded half away from zero at 2^p. A pass is
clamp((sum of taps * weights + 2^(p-1)) >> p, 0, 255) in int64 (an index_select of the
taps, a product and a sum), so each pass rounds and clamps to uint8 as torch's does.
The weights depend on shapes only; no gradient (uint8).
"""
import math as _math

from .. import _C
from ._interp_aa import _FILTERS, _exact, _py_filter, _scale


def _int_taps(mode, size, out, align_corners, scale_factor):
    """(index [out * K] flat, int weights [out * K], K, precision) of one dim."""
    s = _scale(size, out, align_corners, scale_factor, _exact)   # in double precision
    half = _FILTERS[mode][1]
    support = half * s if s >= 1.0 else half
    inv = 1.0 / s if s >= 1.0 else 1.0
    k = int(_math.ceil(support)) * 2 + 1
    index, weights = [], []
    for o in range(out):
        center = s * (o + 0.5)
        xmin = max(int(center - support + 0.5), 0)
        xsize = max(0, min(min(int(center + support + 0.5), size) - xmin, k))
        w = [_py_filter(mode, (j + xmin - center + 0.5) * inv, _exact) for j in range(xsize)]
        total = sum(w)
        if total != 0.0:
            w = [v / total for v in w]
        index += [min(xmin + j, size - 1) for j in range(k)]
        weights.append(w + [0.0] * (k - xsize))
    w_max = max((v for w in weights for v in w), default=0.0)
    p = 0
    while p < 22 and int(0.5 + w_max * (1 << (p + 1))) < (1 << 15):
        p += 1
    scaled = [int(-0.5 + v * (1 << p)) if v < 0 else int(0.5 + v * (1 << p)) for w in weights for v in w]
    return index, scaled, k, p


def _const(values, device):
    """A 1-d int64 tensor of python ints (a constant of the graph under a trace)."""
    t = _C._trace_constant(_C.tensor(values, _C.int64)).reshape(len(values))
    return t if t.device == device else t.to(device)


def _pass(x, d, mode, out, align_corners, scale_factor):
    """x int64 [N, C, H, W] resampled along dim d to out points (rounded, clamped to 0..255)."""
    index, scaled, k, p = _int_taps(mode, x.shape[d], out, align_corners, scale_factor)
    idx, w = _const(index, x.device), _const(scaled, x.device)
    taps = x.index_select(d, idx)
    shape = list(x.shape)
    shape[d:d + 1] = [out, k]
    wshape = [1] * len(shape)
    wshape[d], wshape[d + 1] = out, k
    acc = (taps.reshape(tuple(shape)) * w.reshape(tuple(wshape))).sum(d + 1)
    if p > 0:
        acc = (acc + (1 << (p - 1))).div(1 << p, rounding_mode="floor")
    return acc.clamp(0, 255)


def interpolate_aa_uint8(input, output_size, scale_factors, mode, align_corners):
    """input uint8 [N, C, H, W] resized to output_size as torch's uint8 antialiased kernels."""
    scales = scale_factors or [None, None]
    x = input.to(_C.int64)
    if output_size[1] != input.shape[3]:
        x = _pass(x, 3, mode, output_size[1], align_corners, scales[1])
    if output_size[0] != input.shape[2]:
        x = _pass(x, 2, mode, output_size[0], align_corners, scales[0])
    return x.to(_C.uint8)
