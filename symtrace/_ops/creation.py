"""Factories and devices: full/zeros/ones/empty and their *_like forms, arange, eye,
linspace, logspace, tril_indices/triu_indices; the device argument of a factory and
to_device (a differentiable move); from_numpy and numel; 0-d scalars of a tensor's dtype
(_scalar0, _zero_of) for the decomposed ops. Random factories live in random.py."""
import builtins
import math
import warnings

from .. import _C
from .._symint import dyn_inline
from .._dtype import _scalar_dtype, bool_, float32, float64, int64
from ._core import INT_VALUE, _attrs, _check_int, _check_tensor, _is_tensor, _op, _tname
from .elementwise import _check_fits, add, div, eq, lt, mul, pow, sub, to_dtype, where


# ---------------- creation ----------------
def _shape_args(size, fn):
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, int) or isinstance(s, bool):
            if hasattr(s, "__index__") and not isinstance(s, bool):
                continue
            raise TypeError(f"{fn}(): argument 'size' must be a tuple of ints, but found element "
                            f"of type {type(s).__name__}")
    return tuple(int(s) for s in size)


def _check_sizes(shape, fn):
    for s in shape:
        if s < 0:
            raise RuntimeError(f"{fn}(): Trying to create tensor with negative dimension {s}: {list(shape)}")


def _device_check(device):
    if device is not None and str(device) != "cpu":
        _C.empty((0,), float32, str(device))  # raises the device's error


# The default device of factory functions (symtrace.set_default_device): None is the CPU. A
# module global (not per thread, as torch's is) because symtrace.compile reads it as a constant.
_DEFAULT_DEVICE = None


def _dev(device):
    """The device argument of a factory op for _C.op: None (the CPU) or its string; no device
    means the default device (set_default_device)."""
    if device is None:
        return _DEFAULT_DEVICE
    if isinstance(device, int):
        return f"cuda:{device}"
    s = str(device)
    return None if s == "cpu" else s


class _ToDevice:
    """Tensor.to(device) under autograd: the gradient goes back to the source device."""
    _fn = None

    @classmethod
    def get(cls):
        if cls._fn is None:
            from ..autograd.function import Function

            class ToDevice(Function):
                @staticmethod
                def forward(ctx, x, dev):
                    ctx.src = x._device_str
                    return _C._to_device(x, dev)

                @staticmethod
                def backward(ctx, g):
                    return _C._to_device(g, ctx.src), None
            cls._fn = ToDevice
        return cls._fn


def to_device(x, device):
    """A copy of x on device (x itself when it is already there); differentiable."""
    _check_tensor(x, "to")
    dev = str(device) if not isinstance(device, int) else f"cuda:{device}"
    if x.requires_grad and _C._is_grad_enabled():
        return _ToDevice.get().apply(x, dev)
    return _C._to_device(x, dev)


def _rg(t, requires_grad):
    """Marks a freshly created leaf (creation ops' requires_grad=...)."""
    if requires_grad:
        t.requires_grad_(True)
    return t


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """full(size, fill_value, *, dtype=None)."""
    return _rg(_full(size, fill_value, dtype=dtype, device=device), requires_grad)


def _full(size, fill_value, *, dtype=None, device=None, like=None):
    """full's op; with like (a tensor, size None) the op takes its shape from like and its
    result keeps like's memory order (runtime/layout.c)."""
    if like is None:
        size = _shape_args((size,) if isinstance(size, int) else tuple(size), "full")
        _check_sizes(size, "full")
    ins = () if like is None else (like,)
    if _is_tensor(fill_value):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = _scalar_dtype(fill_value)
    _check_fits(fill_value, dtype, floats=False)
    if isinstance(fill_value, float) and not dtype.is_floating_point:
        # as torch: a float fill truncates toward zero for integer dtypes; bool is != 0
        fill_value = fill_value != 0 if dtype is bool_ else int(fill_value)
    if isinstance(fill_value, (bool, int)) and not dtype.is_floating_point:
        return _op(_C.OP_FULL, ins, _attrs(ints=(int(fill_value),), dims=size, flags=INT_VALUE, dtype=dtype),
                   None, _dev(device))
    return _op(_C.OP_FULL, ins, _attrs(floats=(float(fill_value),), dims=size, dtype=dtype), None, _dev(device))


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return full(_shape_args(size, "zeros"), 0, dtype=dtype or float32, device=device,
                requires_grad=requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return full(_shape_args(size, "ones"), 1, dtype=dtype or float32, device=device,
                requires_grad=requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    shape = _shape_args(size, "empty")
    _check_sizes(shape, "empty")
    return _rg(_C.empty(shape, dtype or float32, _dev(device)), requires_grad)


def _keeps_order(input, device):
    """Whether a *_like factory takes input as its op's shape operand, so that its result keeps
    input's memory order (preserve_format, as torch; runtime/layout.c): input is not row-major
    (size-1 dims' strides included: torch's empty_like keeps them) and the result stays on
    input's device. A row-major input takes the plain factory."""
    return not _row_major(input) and (device is None or _dev(device) == _dev(input.device))


def _row_major(t):
    """t's strides are its shape's row-major ones, size-1 dims included."""
    if not t.is_contiguous():
        return False
    expected = 1
    for n, s in zip(reversed(t.shape), reversed(t.stride())):
        if n == 0:
            return True
        if s != expected:
            return False
        expected *= n
    return True


@dyn_inline
def _like(fn, input, dtype, device, fill):
    # the *_like factories are dyn_inline: under dynamic shapes the translator follows
    # input.shape into the factory, so the new tensor's size stays symbolic
    _check_tensor(input, fn.__name__)
    if _keeps_order(input, device):
        return _full(None, fill, dtype=dtype or input.dtype, like=input)
    return fn(input.shape, dtype=dtype or input.dtype,
              device=input.device if device is None else device)


@dyn_inline
def zeros_like(input, *, dtype=None, device=None, requires_grad=False):
    return _rg(_like(zeros, input, dtype, device, 0), requires_grad)


@dyn_inline
def ones_like(input, *, dtype=None, device=None, requires_grad=False):
    return _rg(_like(ones, input, dtype, device, 1), requires_grad)


@dyn_inline
def empty_like(input, *, dtype=None, device=None, requires_grad=False):
    return _rg(_like(empty, input, dtype, device, 0), requires_grad)


@dyn_inline
def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):
    _check_tensor(input, "full_like")
    if _keeps_order(input, device):
        return _rg(_full(None, fill_value, dtype=dtype or input.dtype, like=input), requires_grad)
    return full(input.shape, fill_value, dtype=dtype or input.dtype,
                device=input.device if device is None else device, requires_grad=requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """arange(start=0, end, step=1, *, dtype=None)."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if _is_tensor(v) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    n = builtins.max(0, math.ceil((end - start) / step))
    if dtype is None:
        dtype = int64 if builtins.all(isinstance(v, int) for v in vals) else float32
    return _rg(_op(_C.OP_ARANGE, (), _attrs(floats=(float(start), float(step)), dims=(n,), dtype=dtype),
                   None, _dev(device)), requires_grad)


def from_numpy(ndarray):
    """from_numpy(ndarray): a tensor sharing ndarray's memory (through DLPack), as
    torch.from_numpy. A read-only array, which DLPack cannot export, is copied (with a
    warning; torch shares it)."""
    import numpy as np
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if builtins.any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with "
                         "negative strides are not currently supported. (You can probably work around "
                         "this by making a copy of your array  with array.copy().)")
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable: symtrace.from_numpy copies it (DLPack "
                      "cannot share read-only memory).", UserWarning, stacklevel=2)
        return _C.tensor(ndarray, None)
    return _C.from_dlpack(ndarray)


def numel(input):
    _check_tensor(input, "numel")
    return input.numel()


def _scalar0(input, value):
    """value as a 0-d tensor of input's dtype and device (keeps where() from promoting)."""
    return full((), value, dtype=input.dtype, device=input.device)


def _zero_of(t):
    return _scalar0(t, False if t.dtype is bool_ else 0)


# ---- creation, decomposed ----
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """eye(n, m=None, *, dtype=None, device=None): the n x m identity (m = n by default);
    as torch.eye."""
    _check_int(n, "eye", "n", 1)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is None:
        m = n
    _check_int(m, "eye", "m", 2)
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    hit = eq(arange(n, device=device).unsqueeze(1), arange(m, device=device))
    return _rg(to_dtype(hit, dtype or float32), requires_grad)


def _number(v, fn, name):
    if _is_tensor(v):
        if v.dim() != 0:
            raise RuntimeError(f"{fn}() expects {name} to be a 0-dimensional tensor, but got a "
                               f"tensor with {v.dim()} dimensions")
        return v.item()
    if not isinstance(v, (int, float)):
        raise TypeError(f"{fn}(): argument '{name}' must be Number, not {type(v).__name__}")
    return v


def _round_to(v, dtype):
    """The Python float v rounded (to nearest even) to a float dtype, on the host."""
    import struct
    v = float(v)
    if dtype is float64 or not math.isfinite(v):
        return v
    if dtype is float32:
        try:
            return struct.unpack("f", struct.pack("f", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    if str(dtype) == "symtrace.float16":
        try:
            return struct.unpack("e", struct.pack("e", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    b = struct.unpack("I", struct.pack("f", _round_to(v, float32)))[0]      # bfloat16
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return struct.unpack("f", struct.pack("I", b & 0xFFFFFFFF))[0]


def _steps_check(steps, fn):
    _check_int(steps, fn, "steps", 3)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """linspace(start, end, steps, *, dtype=None, device=None): steps evenly spaced values
    from start to end with torch's CPU kernel's arithmetic (_linspace_values); start and
    end may be 0-d tensors (their values are read). As torch.linspace."""
    start, end = _number(start, "linspace", "start"), _number(end, "linspace", "end")
    _steps_check(steps, "linspace")
    dtype = dtype or float32
    if dtype.is_floating_point:      # start and end as the dtype holds them, as torch
        start, end = _round_to(start, dtype), _round_to(end, dtype)
    else:
        start, end = int(start), int(end)
    if steps <= 1:
        return _rg(full((steps,), start, dtype=dtype, device=device), requires_grad)
    return _rg(_linspace_values(start, end, steps, dtype, device), requires_grad)


def _linspace_values(start, end, steps, dtype, device):
    """torch's linspace kernel, value for value: element i is start + step * i below
    steps // 2 and end - step * (steps - 1 - i) from there, where
    - float32 / float64: step = (end - start) / (steps - 1) in the dtype, each element one
      fused multiply-add (torch's kernel is built with FMA contraction);
    - float16 / bfloat16: every operation (the difference, the division, i as the dtype,
      the product, the sum) rounded to the dtype, as c10::Half / BFloat16 arithmetic;
    - integers: step in float64, the fused multiply-add in float64, truncated.
    The fused multiply-add c + a * m (m an integer below 2**26) is computed exactly in
    float64 without an fma: a split in two halves of 26 bits (Veltkamp) makes a * m's
    rounding error exact, and c's sum with the product carries its own (TwoSum)."""
    n = steps
    i = arange(n, dtype=float64, device=device)
    first = lt(i, n // 2)
    m = where(first, i, sub(n - 1, i))          # the multiplier of step
    if dtype in (float32, float64) or not dtype.is_floating_point:
        if dtype in (float32, float64):
            step = _round_to(_round_to(end - start, dtype) / (n - 1), dtype)
        else:
            step = (float(end) - float(start)) / (n - 1)
        a = where(first, full((), step, dtype=float64, device=device),
                  full((), -step, dtype=float64, device=device))
        c = where(first, full((), float(start), dtype=float64, device=device),
                  full((), float(end), dtype=float64, device=device))
        if dtype is float32:
            # step has 24 bits: a * m is exact in float64, one rounding of the sum
            return to_dtype(add(c, mul(a, m)), dtype)
        t = 134217729.0 * step                   # Veltkamp: step = hi + lo, 26 + 27 bits
        hi = t - (t - step)
        lo = step - hi
        sgn = where(first, full((), 1.0, dtype=float64, device=device),
                    full((), -1.0, dtype=float64, device=device))
        p = mul(a, m)
        pl = add(sub(mul(mul(sgn, hi), m), p), mul(mul(sgn, lo), m))   # p + pl == a * m
        s = add(p, c)
        bb = sub(s, p)
        sl = add(sub(p, sub(s, bb)), sub(c, bb))                        # s + sl == p + c
        return to_dtype(add(s, add(pl, sl)), dtype)
    # float16 / bfloat16: each c10 operation in float32, rounded to the dtype
    step = _round_to(_round_to(_round_to(end - start, float32), dtype) /
                     _round_to(n - 1, dtype), dtype)
    mh = to_dtype(to_dtype(m, dtype), float32)
    prod = to_dtype(to_dtype(mul(mh, full((), step, dtype=float32, device=device)), dtype), float32)
    r = where(first, add(full((), start, dtype=float32, device=device), prod),
              sub(full((), end, dtype=float32, device=device), prod))
    return to_dtype(r, dtype)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """logspace(start, end, steps, base=10.0, *, dtype=None, device=None): base ** linspace
    (the exponents in float64, as torch's kernel); as torch.logspace."""
    start, end = _number(start, "logspace", "start"), _number(end, "logspace", "end")
    _steps_check(steps, "logspace")
    dtype = dtype or float32
    if steps == 0:
        return _rg(full((0,), 0, dtype=dtype, device=device), requires_grad)
    if steps == 1:
        e = full((1,), start, dtype=dtype, device=device)
    else:
        s = _round_to(start, dtype) if dtype.is_floating_point else float(int(start))
        t = _round_to(end, dtype) if dtype.is_floating_point else float(int(end))
        step = (t - s) / (steps - 1)
        i = arange(steps, dtype=float64, device=device)
        e = where(lt(i, steps // 2), add(mul(i, step), s), sub(t, mul(sub(steps - 1, i), step)))
    return _rg(to_dtype(pow(float(base), to_dtype(e, float64)), dtype), requires_grad)


def _tri_indices(row, col, offset, lower, dtype, device, fn):
    for v, name, pos in ((row, "row", 1), (col, "col", 2), (offset, "offset", 3)):
        _check_int(v, fn, name, pos)
    if row < 0 or col < 0:
        raise RuntimeError(f"{fn}: row and col must be non-negative, got row={row} and col={col}")
    if dtype not in (int64, _C.int32):
        raise NotImplementedError(f"\"{fn}\" not implemented for '{_tname(dtype)}'")
    rows, cols = [], []
    for r in range(row):
        lo, hi = (0, builtins.min(col, r + offset + 1)) if lower else (builtins.max(0, r + offset), col)
        if hi > lo:
            rows += [r] * (hi - lo)
            cols += range(lo, hi)
    t = _C._trace_constant(_C.tensor([rows, cols], dtype)).reshape(2, len(rows))
    dev = _dev(device)
    return t if dev is None else to_device(t, dev)


def tril_indices(row, col, offset=0, *, dtype=int64, device=None):
    """tril_indices(row, col, offset=0, *, dtype=int64) -> (2, N) Tensor: the coordinates of
    the lower triangle (col - row <= offset) of a row x col matrix, row by row (built on the
    host: a constant, no graph break); as torch.tril_indices."""
    return _tri_indices(row, col, offset, True, dtype, device, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=int64, device=None):
    """triu_indices(row, col, offset=0, *, dtype=int64) -> (2, N) Tensor: the coordinates of
    the upper triangle (col - row >= offset); as torch.triu_indices."""
    return _tri_indices(row, col, offset, False, dtype, device, "triu_indices")


def _size_tensor(n, like):
    """n, a size under dynamic shapes (a SymInt: x * x.shape[0], x.sum() / x.numel()), as
    a 0-d tensor of like's dtype whose value follows the sizes: n ones summed (exact in
    float32 below 2 ** 24, in int64 always). The translator (frontend/tr_dynamic.c
    tr_dyn_size_operand) inlines it for the other operand of a tensor op; None (a half,
    bool or complex dtype): the size stays a guarded constant."""
    dt = like.dtype
    if dt == float32 or dt == float64:
        return ones((n,), dtype=dt, device=like.device).sum()
    if dt.is_floating_point or dt.is_complex or dt == bool_:
        return None
    return ones((n,), dtype=int64, device=like.device).sum().to(dt)
