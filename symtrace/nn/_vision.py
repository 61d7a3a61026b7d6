"""Spatial sampling and fractional pooling: torch.nn.functional's affine_grid, grid_sample
(4-d input: bilinear, nearest, bicubic; 5-d input: bilinear (= trilinear), nearest; padding
'zeros', 'border', 'reflection') and fractional_max_pool2d/3d(_with_indices), with torch's
signatures, checks, warnings and messages.

Each is composed of symtrace's differentiable ops (floor, round, where, gather, matmul), so
autograd comes from theirs and symtrace.compile traces them into its graph; nothing reads a
tensor value on the host.

- affine_grid: the base grid [*S, k + 1] (torch's linspace(-1, 1) scaled by (n - 1) / n without
  align_corners, 0 for a size of 1) times theta^T: one batched matmul.
- grid_sample: each output point reads a few input points ("taps": 2^k corners for linear,
  1 for nearest, 4 x 4 for bicubic) at source coordinates computed as ATen's
  grid_sampler_compute_source_index (unnormalize, then clip or reflect-and-clip), with weights
  computed as ATen's; the taps are one gather from the flattened input planes, the taps out of
  bounds read 0 (where), and the weighted taps are summed. The floor of a coordinate carries no
  gradient, so the gradient with respect to the grid is the derivative of the weights (and of
  the clip / reflection: 0 at and beyond the borders, as ATen's clip_coordinates_set_grad);
  nearest's is 0.
- fractional max pooling: ATen's interval sequence per plane and dim (computed in the input's
  dtype from the plane's random sample, so the windows are torch's exactly), the windows read
  with one gather, their argmax (the first maximum, or the last NaN, as ATen's loop) and the
  values gathered at it; without _random_samples the samples are symtrace.rand's (torch's shape
  and range).
"""
import warnings as _warnings

from .. import _C, _ops
from .._ops import _check_tensor, _tname


def _prod(xs):
    p = 1
    for v in xs:
        p *= v
    return p


def _seq(v):
    return isinstance(v, (list, tuple))


# ---------------- affine_grid ----------------
def _linspace_from_neg_one(n, align_corners, dtype, device):
    """ATen's linspace_from_neg_one: n points in [-1, 1] (scaled by (n - 1) / n without
    align_corners); a single 0 for n <= 1."""
    if n <= 1:
        return _ops.zeros(1, dtype=dtype, device=device)
    r = _ops.linspace(-1, 1, n, dtype=dtype, device=device)
    if not align_corners:
        r = r * (n - 1) / n
    return r


def _base_grid(spatial, align_corners, dtype, device):
    """[prod(S), k + 1]: the (x, y[, z], 1) of each output point, x along the last dim."""
    k = len(spatial)
    cols = []
    for j in range(k):                                     # x is the last spatial dim
        d = k - 1 - j
        shape = [1] * k
        shape[d] = max(spatial[d], 1)
        v = _linspace_from_neg_one(spatial[d], align_corners, dtype, device).reshape(tuple(shape))
        cols.append(v.expand(tuple(spatial)))
    cols.append(_ops.ones(tuple(spatial), dtype=dtype, device=device))
    return _ops.stack(cols, -1).reshape(_prod(spatial), k + 1)


def affine_grid(theta, size, align_corners=None):
    """affine_grid(theta [N, 2, 3] or [N, 3, 4], size [N, C, H, W] or [N, C, D, H, W],
    align_corners=None) -> the sampling grid [N, H, W, 2] or [N, D, H, W, 3] of the affine maps."""
    _check_tensor(theta, "affine_grid", "theta")
    if align_corners is None:
        _warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                       "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                       "documentation of grid_sample for details.", stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                             f"Got {tuple(theta.shape)}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                             f"Got {tuple(theta.shape)}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        _warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                       "align_corners=True. This is not an intended use case of affine_grid. See the "
                       "documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return _affine_grid_generator(theta, size, align_corners)


def _affine_grid_generator(theta, size, align_corners):
    """torch.affine_grid_generator(theta, size, align_corners): affine_grid without its Python-level
    checks (an empty size gives an empty grid)."""
    _check_tensor(theta, "affine_grid_generator", "theta")
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    spatial = size[2:]
    n, k = size[0], len(spatial)
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        raise RuntimeError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size {size}. "
                           f"Got {tuple(theta.shape)}.")
    if theta.shape[0] != n:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {k + 1}] but "
                           f"got: [{theta.shape[0]}, {k + 1}].")
    base = _base_grid(spatial, bool(align_corners), theta.dtype, theta.device)  # [P, k + 1]
    grid = _ops.matmul(base, theta.transpose(1, 2))                            # [N, P, k]
    return grid.reshape(tuple([n] + list(spatial) + [k]))


# ---------------- grid_sample ----------------
_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADS = {"zeros": 0, "border": 1, "reflection": 2}


def _unnormalize(c, size, align_corners, vectorized):
    """ATen's grid_sampler_unnormalize: [-1, 1] -> [0, size - 1] (align_corners) or
    [-0.5, size - 0.5]; vectorized: the 4-d CPU kernel's form of the same."""
    if vectorized:
        if align_corners:
            return (c + 1) * ((size - 1) / 2)
        return (c + 1) * (size / 2) - 0.5
    if align_corners:
        return ((c + 1) / 2) * (size - 1)
    return ((c + 1) * size - 1) / 2


def _clip(c, size):
    """ATen's clip_coordinates: c clamped to [0, size - 1], NaN to 0; its gradient is 0 at and
    beyond the borders (clip_coordinates_set_grad)."""
    hi = size - 1
    return _ops.where(c > 0, _ops.where(c < hi, c, _ops.full_like(c, hi)), _ops.zeros_like(c))


def _reflect(c, twice_low, twice_high):
    """ATen's reflect_coordinates: c reflected at the borders twice_low / 2 and twice_high / 2
    until it lies between them."""
    if twice_low == twice_high:           # 0, with a zero gradient (where: no 0 * inf)
        return _ops.where(_ops.ones_like(c, dtype=_C.bool), _ops.zeros_like(c), c)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    a = (c - lo).abs()
    flips = (a / span).floor().detach()
    extra = a - flips * span
    even = (flips - 2 * (flips / 2).floor()) == 0
    return _ops.where(even, extra + lo, (span - extra) + lo)


def _pad_coord(c, size, padding_mode, align_corners):
    """ATen's compute_coordinates: the padding mode applied to a source coordinate."""
    if padding_mode == 1:
        return _clip(c, size)
    if padding_mode == 2:
        if align_corners:
            c = _reflect(c, 0, 2 * (size - 1))
        else:
            c = _reflect(c, -1, 2 * size - 1)
        return _clip(c, size)
    return c


def _cubic_weights(t):
    """ATen's get_cubic_upsample_coefficients (A = -0.75) of the fraction t: 4 weights."""
    A = -0.75

    def cc1(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def cc2(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    return [cc2(t + 1.0), cc1(t), cc1(1.0 - t), cc2((1.0 - t) + 1.0)]


def _gather_taps(input, taps, out):
    """input [N, C, *S]; taps: a list of (integer source coordinates per spatial dim, each a
    float tensor [N, *out] holding whole numbers; weight [N, *out] or None). The taps out of
    bounds read 0; the result [N, C, *out] is the weighted sum of the taps."""
    n, c = input.shape[0], input.shape[1]
    spatial = tuple(input.shape[2:])
    L = _prod(out)
    strides = [_prod(spatial[d + 1:]) for d in range(len(spatial))]
    pos, ok, ws = [], [], []
    for coords, w in taps:
        p, m = None, None
        for d, cd in enumerate(coords):
            i = cd.detach().to(_C.int64)
            md = (cd >= 0) & (cd < spatial[d])           # on the float: no int64 overflow to mistake
            m = md if m is None else m & md
            term = i * strides[d]
            p = term if p is None else p + term
        pos.append(_ops.where(m, p, _ops.zeros_like(p)).reshape(n, L))
        ok.append(m.reshape(n, L))
        ws.append(None if w is None else w.reshape(n, L))
    T = len(taps)
    idx = _ops.stack(pos, 1).reshape(n, 1, T * L).expand((n, c, T * L))
    vals = input.reshape(n, c, _prod(spatial)).gather(2, idx).reshape(n, c, T, L)
    vals = _ops.where(_ops.stack(ok, 1).reshape(n, 1, T, L), vals, _ops.zeros_like(vals))
    if ws[0] is not None:
        vals = vals * _ops.stack(ws, 1).reshape(n, 1, T, L)
    r = vals[:, :, 0] if T == 1 else vals.sum(2)
    return r.reshape((n, c) + tuple(out))


def _grid_sample_taps(grid, spatial, mode, padding_mode, align_corners):
    """The taps (see _gather_taps) of each output point of grid [N, *out, k] over an input of
    spatial sizes S (grid[..., 0] is x, along the last dim of S)."""
    k = len(spatial)
    vec = k == 2                                      # torch's 4-d CPU kernel is the vectorized one
    # per spatial dim d (0 = the first of S), the grid coordinate that addresses it
    cs = [grid[..., k - 1 - d] for d in range(k)]
    if mode == 2:                                     # bicubic (4-d only)
        src = [_unnormalize(cs[d], spatial[d], align_corners, vec) for d in range(k)]
        base = [s.floor().detach() for s in src]
        wts = [_cubic_weights(src[d] - base[d]) for d in range(k)]
        taps = []
        for j in range(4):                            # y offsets, then x offsets (ATen's order)
            for i in range(4):
                cy = _pad_coord(base[0] + (j - 1), spatial[0], padding_mode, align_corners)
                cx = _pad_coord(base[1] + (i - 1), spatial[1], padding_mode, align_corners)
                taps.append(([cy, cx], wts[1][i] * wts[0][j]))
        return taps
    src = [_pad_coord(_unnormalize(cs[d], spatial[d], align_corners, vec), spatial[d], padding_mode,
                      align_corners) for d in range(k)]
    if mode == 1:                                     # nearest: round half to even, as nearbyint
        # the weight is 1 with a zero gradient: the grid gets torch's zero gradient
        one = _ops.where(_ops.ones_like(src[0], dtype=_C.bool), _ops.ones_like(src[0]), src[0])
        return [([s.detach().round() for s in src], one)]
    lo = [s.floor().detach() for s in src]
    taps = []
    for corner in range(1 << k):
        coords, w = [], None
        # the weight is a product over x, y[, z] in that order (ATen's)
        for d in reversed(range(k)):
            up = (corner >> (k - 1 - d)) & 1
            wd = (src[d] - lo[d]) if up else ((lo[d] + 1) - src[d])
            w = wd if w is None else w * wd
        for d in range(k):
            up = (corner >> (k - 1 - d)) & 1
            coords.append(lo[d] + 1 if up else lo[d])
        taps.append((coords, w))
    return taps


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners) with
    ATen's checks (modes as ints: bilinear 0, nearest 1, bicubic 2; zeros 0, border 1,
    reflection 2)."""
    _check_tensor(input, "grid_sampler")
    _check_tensor(grid, "grid_sampler", "grid")
    if grid.dim() < 1 or grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but "
                           f"got grid with sizes {list(grid.shape)}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {_tname(input.dtype)} but found {_tname(grid.dtype)}")
    if input.dim() not in (4, 5) or input.dim() != grid.dim():
        nd = 4 if input.dim() == 4 else 5
        raise RuntimeError(f"grid_sampler(): expected {nd}D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")
    if interpolation_mode == 2 and input.dim() != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.is_floating_point():
        kern = "grid_sampler_2d_cpu_kernel_impl" if input.dim() == 4 else "grid_sampler_3d_cpu"
        raise NotImplementedError(f"\"{kern}\" not implemented for '{_tname(input.dtype)}'")
    spatial = tuple(input.shape[2:])
    out = tuple(grid.shape[1:-1])
    if input.numel() == 0 or grid.numel() == 0:
        return _ops.zeros((input.shape[0], input.shape[1]) + out, dtype=input.dtype, device=input.device) \
            + (input.sum() + grid.sum()) * 0
    taps = _grid_sample_taps(grid, spatial, interpolation_mode, padding_mode, align_corners)
    return _gather_taps(input, taps, out)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """grid_sample(input [N, C, H, W] or [N, C, D, H, W], grid [N, Ho, Wo, 2] or [N, Do, Ho, Wo, 3],
    mode='bilinear', padding_mode='zeros', align_corners=None) -> [N, C, Ho, Wo] (or
    [N, C, Do, Ho, Wo]): input sampled at the grid's normalized (x, y[, z]) locations."""
    if mode != "bilinear" and mode != "nearest" and mode != "bicubic":
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode != "zeros" and padding_mode != "border" and padding_mode != "reflection":
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        _warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                       "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                       "documentation of grid_sample for details.", stacklevel=2)
        align_corners = False
    return _grid_sampler(input, grid, _MODES[mode], _PADS[padding_mode], align_corners)


# ---------------- fractional max pooling ----------------
def _as_float(v, dtype):
    """v rounded to dtype (ATen computes the interval step in the input's scalar type)."""
    import struct
    if dtype is _C.float32:
        return struct.unpack("f", struct.pack("f", v))[0]
    if dtype is _C.float16:
        return struct.unpack("e", struct.pack("e", v))[0]
    if dtype is _C.bfloat16:                        # float32 bits rounded to the top 16, ties to even
        b = struct.unpack("I", struct.pack("f", v))[0]
        b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
        return struct.unpack("f", struct.pack("I", b & 0xFFFFFFFF))[0]
    return v


def _intervals(sample, in_size, out_size, pool, dtype):
    """ATen's generate_intervals for every plane at once: sample [N, C] (the plane's random
    sample for this dim) -> the window starts [N, C, out_size] (int64)."""
    dev = sample.device
    if out_size > 1:
        alpha = _as_float(_as_float(float(in_size - pool), dtype) / _as_float(float(out_size - 1), dtype), dtype)
        i = _ops.arange(out_size, dtype=sample.dtype, device=dev)
        s = sample.unsqueeze(-1)
        seq = ((i + s) * alpha).to(_C.int64) - (s * alpha).to(_C.int64)
        last = _ops.arange(out_size, device=dev) == out_size - 1
        return _ops.where(last, _ops.full_like(seq, in_size - pool), seq)
    return _ops.full(tuple(sample.shape) + (out_size,), in_size - pool, dtype=_C.int64, device=dev)


def _fractional_max_pool(k, input, kernel_size, output_size, output_ratio, _random_samples):
    """fractional_max_pool2d / 3d (k = 2, 3) -> (output, indices); torch's checks and messages."""
    fname = f"fractional_max_pool{k}d"
    _check_tensor(input, fname)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fname} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if k == 2 and len(output_ratio) > 2:
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = tuple(output_ratio) if _seq(output_ratio) else (output_ratio,) * k
        output_size = [int(input.size(-k + i) * ratio[i]) for i in range(k)]
    if _random_samples is None:
        n_batch = 1 if input.dim() == k + 1 else input.size(0)
        _random_samples = _ops.rand(n_batch, input.size(-k - 1), k, dtype=input.dtype, device=input.device)
    ks = tuple(kernel_size) if _seq(kernel_size) else (kernel_size,) * k
    osz = tuple(output_size) if _seq(output_size) else (output_size,) * k
    ints = "tuple of Ints" if k == 2 else "tuple of three Ints"
    if len(ks) != k:
        raise RuntimeError(f"{fname}: kernel_size must either be a single Int or {ints}")
    if len(osz) != k:
        raise RuntimeError(f"{fname}: output_size must either be a single Int or {ints}")
    where = f"{fname}()" if k == 2 else "fractional_max_pool3d_out()"
    nd = input.dim()
    if nd not in (k + 1, k + 2):
        raise RuntimeError(f"{where}: Expected {k + 1}D or {k + 2}D tensor, but got: {list(input.shape)}")
    for i in range(1, nd):
        if input.shape[i] <= 0:
            raise RuntimeError(f"{where}: Expected input to have non-zero size for non-batch dimensions, but "
                               f"got{list(input.shape)} with dimension {i} being empty.")
    spatial = tuple(input.shape[-k:])
    names = ("height", "width") if k == 2 else ("time", "height", "width")
    for d in range(k):
        # ATen: out + pool - 1 <= in for 2-d, out + pool - 1 < in for 3-d
        bad = osz[d] + ks[d] - 1 > spatial[d] if k == 2 else osz[d] + ks[d] - 1 >= spatial[d]
        if bad:
            raise RuntimeError(f"{where}: pool {names[d]} {ks[d]} too large relative to input {names[d]} "
                               f"{spatial[d]}")
    rs = _random_samples
    _check_tensor(rs, fname, "_random_samples")
    n = 1 if nd == k + 1 else input.shape[0]
    c = input.shape[-k - 1]
    if rs.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if rs.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {rs.dim()}")
    if rs.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if rs.shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if rs.shape[2] != k:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {k}; got {rs.shape[2]}.")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{fname}_out_frame\" not implemented for '{_tname(input.dtype)}'")
    x = input.unsqueeze(0) if nd == k + 1 else input
    if any(o == 0 for o in osz):
        shape = tuple(x.shape[:2]) + osz
        y = _ops.zeros(shape, dtype=x.dtype, device=x.device) + x.sum() * 0
        r = (y, _ops.zeros(shape, dtype=_C.int64, device=x.device))
    else:
        r = _fractional_nd(x, ks, osz, rs[:n].detach())
    if nd == k + 1:
        r = (r[0].squeeze(0), r[1].squeeze(0))
    return r


def _fractional_nd(x, ks, osz, rs):
    """x [N, C, *S]; the max over each fractional window and its flat index in S."""
    k = len(ks)
    n, c = x.shape[0], x.shape[1]
    spatial = tuple(x.shape[2:])
    # the sample of dim d: ATen reads sample[0] for W and sample[1] for H in 2-d, and
    # sample[0], [1], [2] for T, H, W in 3-d
    order = (1, 0) if k == 2 else (0, 1, 2)
    idx = None
    for d in range(k):
        starts = _intervals(rs[:, :, order[d]], spatial[d], osz[d], ks[d], x.dtype)        # [N, C, O]
        pts = starts.unsqueeze(-1) + _ops.arange(ks[d], device=x.device)                   # [N, C, O, K]
        # axes: N, C, O_0..O_{k-1}, K_0..K_{k-1}
        shape = [n, c] + [1] * (2 * k)
        shape[2 + d] = osz[d]
        shape[2 + k + d] = ks[d]
        term = pts.reshape(tuple(shape)) * _prod(spatial[d + 1:])
        idx = term if idx is None else idx + term
    K, L = _prod(ks), _prod(osz)
    idx = idx.expand(tuple([n, c] + list(osz) + list(ks))).reshape(n, c, L * K)
    cols = x.reshape(n, c, _prod(spatial)).gather(2, idx).reshape(n, c, L, K)
    am = cols.argmax(3, keepdim=True)
    if x.dtype.is_floating_point:
        # ATen's loop takes a NaN whenever it meets one: the last NaN of a window wins
        nan = cols.isnan()
        last = (K - 1) - nan.flip(3).to(_C.int64).argmax(3, keepdim=True)
        am = _ops.where(nan.any(3, keepdim=True), last, am)
    y = cols.gather(3, am).reshape((n, c) + tuple(osz))
    pos = idx.reshape(n, c, L, K).gather(3, am).reshape((n, c) + tuple(osz))
    return y, pos


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool2d_with_indices(input [N, C, H, W] or [C, H, W], kernel_size, output_size=None,
    output_ratio=None, return_indices=False, _random_samples=None) -> (output, indices)."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None) -> output, or (output, indices) with return_indices."""
    r = _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return r if return_indices else r[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool3d_with_indices(input [N, C, T, H, W] or [C, T, H, W], kernel_size, output_size=None,
    output_ratio=None, return_indices=False, _random_samples=None) -> (output, indices)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None) -> output, or (output, indices) with return_indices."""
    r = _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return r if return_indices else r[0]


def _torch_grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners): grid_sample with
    the modes as ints (bilinear 0, nearest 1, bicubic 2; zeros 0, border 1, reflection 2)."""
    if interpolation_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): invalid interpolation_mode {interpolation_mode}")
    if padding_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): invalid padding_mode {padding_mode}")
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, bool(align_corners))


_torch_grid_sampler.__name__ = _torch_grid_sampler.__qualname__ = "grid_sampler"
_affine_grid_generator.__name__ = _affine_grid_generator.__qualname__ = "affine_grid_generator"
