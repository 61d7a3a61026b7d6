"""More torch functions and Tensor methods: the window functions (hann, hamming, blackman,
bartlett, kaiser), asarray, frombuffer, gradient, range, the top-level in-place ldexp_,
erfc_, i0_, gcd_, lcm_, detach_, unsafe_split/unsafe_chunk/unsafe_split_with_sizes,
nonzero_static, vmap, cond, the warn-always and flush-denormal settings, the legacy autocast
settings (over runtime/autocast.c's state, through symtrace.amp), the sym_* helpers (plain
numbers, and symtrace's SymInt), and the Tensor methods new, resize_, resize_as_,
pin_memory, is_pinned, share_memory_, is_shared, hardshrink, prelu, slice_inverse and
the unsafe_* ones (attached to Tensor at the end). symtrace/__init__.py exports them."""
import builtins
import math
import warnings

from . import _C
from . import _ops as _o
from ._dtype import float32, float64, float16, bfloat16, int64, bool_, dtype as _dtype_cls
from ._ops._core import _check_tensor
from ._ops.extras import _LOWER, _inplace_fn
from ._symint import SymInt
from ._tensor import Tensor
from .amp import autocast_mode as _ac
from .func import vmap  # noqa: F401  (torch.vmap is torch.func.vmap)

_int, _float, _bool = builtins.int, builtins.float, builtins.bool


# ---------------- window functions ----------------
def _window_check(name, window_length, dtype):
    if isinstance(window_length, _bool) or not isinstance(window_length, _int):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dt = _o.get_default_dtype() if dtype is None else dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    return dt


def _window(name, n, periodic, dtype, device, requires_grad, body):
    """torch's frame: empty for 0, [1] for 1, else body(arange(N), N) over N = n (+1 when
    periodic, the last value dropped)."""
    dt = _window_check(name, n, dtype)
    if n <= 1:
        w = _o.ones(n, dtype=dt, device=device)
    else:
        m = n + 1 if periodic else n
        w = body(_o.arange(m, dtype=dt, device=device), m)
        if periodic:
            w = w[:n]
    if requires_grad:
        w.requires_grad_(True)
    return w


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None,
                   device=None, pin_memory=False, requires_grad=False):
    """hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
    device=None, requires_grad=False) -> Tensor: alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda a, m: (a * (math.pi * 2.0 / (m - 1))).cos() * (-beta) + alpha)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """hann_window(window_length, periodic=True, *, dtype=None, device=None,
    requires_grad=False) -> Tensor: hamming_window with alpha = beta = 0.5."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda a, m: (a * (math.pi * 2.0 / (m - 1))).cos() * (-0.5) + 0.5)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """blackman_window(window_length, periodic=True, *, dtype=None, device=None,
    requires_grad=False) -> Tensor: 0.42 - 0.5 cos(2 pi n / (N-1)) + 0.08 cos(4 pi n / (N-1))."""
    def body(a, m):
        w = a * (math.pi / (m - 1))
        return (w * 4).cos() * 0.08 - (w * 2).cos() * 0.5 + 0.42
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, body)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """bartlett_window(window_length, periodic=True, *, dtype=None, device=None,
    requires_grad=False) -> Tensor: 1 - |2n / (N - 1) - 1|, torch's triangle."""
    def body(a, m):
        w = a * (2.0 / (m - 1))
        half = ((m - 1) >> 1) + 1
        return _o.cat([w[:half], 2 - w[half:]])
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, body)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None,
    requires_grad=False) -> Tensor: I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N-1)/2."""
    def body(a, m):
        al = (m - 1) / 2.0
        r = ((1 - ((a - al) / al) ** 2).clamp_min(0)).sqrt() * beta
        return _o.i0(r) / _o.i0(_o.full((), beta, dtype=a.dtype, device=a.device))
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, body)


# ---------------- asarray, frombuffer, range ----------------
def _np():
    import numpy
    return numpy


def _tname(dt):
    return {float32: "Float", float64: "Double", float16: "Half", bfloat16: "BFloat16", int64: "Long",
            _C.int32: "Int", bool_: "Bool"}.get(dt, str(dt))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor: obj
    as a tensor, sharing memory with obj (a tensor, a numpy array, a DLPack capsule or a
    buffer-protocol object) when dtype and device allow and copy is not True; copy=False
    raises where a copy is needed. A tensor that needs no copy is returned itself; one that
    does keeps no history; requires_grad unset: obj's (warns when that is True, as torch).
    As torch.asarray."""
    np = _np()
    dev = _o._dev(device)

    def _finish(t, shared):
        if copy is False and not shared:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        if requires_grad and not t.requires_grad:
            t = t if t.is_leaf else t.detach()
            t.requires_grad_(True)
        elif not requires_grad and t.requires_grad:
            t = t.detach()
        return t

    if isinstance(obj, _C.TensorBase):
        if requires_grad is None and obj.requires_grad:
            warnings.warn("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
                          "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
                          "warning.", UserWarning, stacklevel=2)
        if requires_grad is None:
            requires_grad = obj.requires_grad
        same_dt = dtype is None or obj.dtype is dtype
        same_dev = dev is None or str(obj.device) == str(dev)
        if copy is False and not same_dt:
            raise ValueError(f"can't alias tensor with dtype '{_tname(obj.dtype)}' into dtype "
                             f"'{_tname(dtype)}'.")
        if copy is False and not same_dev:
            raise ValueError(f"can't alias tensor on device '{obj.device}' into device '{dev}'.")
        if same_dt and same_dev and not copy:
            if requires_grad == obj.requires_grad:
                return obj
            return _finish(obj, True)
        t = obj.detach()
        t = t.to(device=dev, dtype=dtype) if dev is not None else t.to(dtype or t.dtype)
        if copy and t.data_ptr() == obj.data_ptr():
            t = t.clone()
        return _finish(t, True) if requires_grad else t
    arr = None
    if isinstance(obj, np.ndarray) or (hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple))):
        arr = obj
    elif not isinstance(obj, (list, tuple, _int, _float, _bool, np.generic)):
        try:
            arr = np.frombuffer(memoryview(obj), dtype=np.uint8)
        except TypeError:
            arr = None
        if arr is not None:   # raw bytes: read as dtype (float32 by default), as torch's
            return frombuffer(obj, dtype=dtype or _o.get_default_dtype(), requires_grad=_bool(requires_grad))
    if arr is not None:
        if isinstance(arr, np.ndarray):
            want = dtype
            base = arr
            if copy or not arr.flags.writeable or arr.dtype.kind not in "fiub" or arr.dtype.itemsize == 1 \
                    and arr.dtype.kind != "b":
                t = _C.tensor(np.ascontiguousarray(arr), None)
                shared = False
            else:
                t = _C.from_dlpack(base)
                shared = True
        else:
            t, want, shared = _C.from_dlpack(arr), dtype, True
        if want is not None and t.dtype is not want:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{_tname(t.dtype)}' into dtype "
                                 f"'{_tname(want)}'.")
            t, shared = t.to(want), False
        if dev is not None and str(t.device) != str(dev):
            if copy is False:
                raise ValueError(f"can't alias tensor on device '{t.device}' into device '{dev}'.")
            t, shared = _o.to_device(t, dev), False
        if copy and shared:
            t, shared = t.clone(), False
        if copy is False and not shared:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        if requires_grad:
            t.requires_grad_(True)
        return t
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    if isinstance(obj, np.generic):
        obj = np.asarray(obj)
    t = _C.tensor(obj, dtype)
    if dev is not None:
        t = _o.to_device(t, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


_NP_DT = {float32: "float32", float64: "float64", float16: "float16", int64: "int64",
          _C.int32: "int32", bool_: "bool"}


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor: a 1-D
    tensor over the bytes of a buffer-protocol object, sharing its memory (a read-only buffer
    is copied: DLPack cannot export it), as torch.frombuffer."""
    np = _np()
    try:
        mv = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    nbytes = mv.nbytes
    es = dtype.itemsize
    if nbytes == 0 or count == 0:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if offset < 0 or offset >= nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({nbytes} bytes) minus 1")
    if count < 0:
        if (nbytes - offset) % es:
            raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be "
                             f"a multiple of element size ({es})")
        count = (nbytes - offset) // es
    elif offset + count * es > nbytes:
        raise ValueError(f"requested buffer length ({count} * {es} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({nbytes} bytes)")
    raw = np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv, dtype=np.uint8,
                        count=count * es, offset=offset)
    if dtype is bfloat16:    # numpy has no bfloat16: widen the bits to float32's (a copy)
        t = _bf16_from_bytes(raw)
    else:
        arr = raw.view(np.dtype(_NP_DT[dtype]))
        t = _C.from_dlpack(arr) if raw.flags.writeable else _C.tensor(arr.copy(), None)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _bf16_from_bytes(raw):
    np = _np()
    bits = raw.view(np.uint16).astype(np.uint32) << 16
    return _C.tensor(bits.view(np.float32), None).to(bfloat16)


def range(start, end, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """range(start, end, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    start, start + step, ... up to end inclusive, in the default float dtype unless dtype says
    otherwise; deprecated (warns), as torch.range."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior "
                  "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
                  "values in [start, end).", UserWarning, stacklevel=2)
    vals = [v.item() if isinstance(v, _C.TensorBase) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = _int(math.floor((end - start) / step)) + 1
    dt = _o.get_default_dtype() if dtype is None else dtype
    r = (_o.arange(n, dtype=float64) * _float(step) + _float(start)).to(dt)
    dev = _o._dev(device)
    if dev is not None:
        r = _o.to_device(r, dev)
    if requires_grad:
        r.requires_grad_(True)
    if out is not None:
        if tuple(out.shape) != (n,):
            out.resize_(n)
        with _o._no_grad():
            out.copy_(r)
        return out
    return r


# ---------------- gradient ----------------
def _slice(t, d, a=None, b=None):
    return t.narrow(d, *_span(t.shape[d], a, b))


def _span(n, a, b):
    a = 0 if a is None else (a + n if a < 0 else a)
    b = n if b is None else (b + n if b < 0 else b)
    return a, b - a


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """gradient(input, *, spacing=1, dim=None, edge_order=1) -> tuple of Tensors: the estimated
    derivative of input along each dim in dim (every dim by default): central differences
    inside, one-sided ones of edge_order 1 or 2 at the ends; spacing a number, a number per
    dim, or a 1-D tensor of coordinates per dim; as torch.gradient."""
    _check_tensor(input, "gradient")
    nd = input.dim()
    dims_given = dim is not None
    if dim is None:
        dims = list(builtins.range(nd))
    elif isinstance(dim, _int):
        dims = [dim]
    else:
        dims = list(dim)
    wrapped = []
    for d in dims:
        if not -builtins.max(nd, 1) <= d < builtins.max(nd, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-builtins.max(nd, 1)}, "
                             f"{builtins.max(nd, 1) - 1}], but got {d})")
        w = d % builtins.max(nd, 1)
        if w in wrapped:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        wrapped.append(w)
    if isinstance(spacing, _C.TensorBase):
        raise TypeError("gradient(): argument 'spacing' must be a Number or a list of Numbers or Tensors, "
                        "not Tensor")
    if isinstance(spacing, (list, tuple)):
        sp = list(spacing)
        if len(sp) != len(wrapped):
            if dims_given:
                raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing "
                                   f"and dim arguments to have the same length, but got a spacing argument of "
                                   f"length {len(sp)} and a dim argument of length {len(wrapped)}.")
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to 'self.dim() = {nd}', since dim argument was not given, but got a list "
                               f"of length {len(sp)}")
    else:
        sp = [spacing] * len(wrapped)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in wrapped:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    coords = [s for s in sp if isinstance(s, _C.TensorBase)]
    if coords and len(coords) != len(sp):
        raise TypeError("gradient(): spacing must be all numbers or all tensors")
    x = input if input.dtype.is_floating_point else input.to(_o.get_default_dtype())
    out = []
    for d, s in zip(wrapped, sp):
        if isinstance(s, _C.TensorBase):
            if s.dim() != 1:
                raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, "
                                   f"but got an element with {s.dim()} dimensions!")
            out.append(_gradient_coords(x, s, d, edge_order))
        else:
            out.append(_gradient_uniform(x, s, d, edge_order))
    return tuple(out)


def _gradient_uniform(x, h, d, edge_order):
    center = (_slice(x, d, 2) - _slice(x, d, 0, -2)) / h
    if edge_order == 1:
        pre = (_slice(x, d, 1, 2) - _slice(x, d, 0, 1)) / h
        app = (_slice(x, d, -1) - _slice(x, d, -2, -1)) / h
    else:
        pre = (_slice(x, d, 0, 1) * -1.5 + _slice(x, d, 1, 2) * 2 - _slice(x, d, 2, 3) * 0.5) / h
        app = (_slice(x, d, -3, -2) * 0.5 + _slice(x, d, -2, -1) * -2 + _slice(x, d, -1) * 1.5) / h
    return _o.cat([pre, center / 2, app], d)


def _gradient_coords(x, c, d, edge_order):
    shape = [1] * x.dim()
    shape[d] = -1
    dx = c.diff(1, 0)
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    cc = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * _slice(x, d, 0, -2) + b * _slice(x, d, 1, -1) + cc * _slice(x, d, 2)
    if edge_order == 1:
        pre = (_slice(x, d, 1, 2) - _slice(x, d, 0, 1)) / dx[0]
        app = (_slice(x, d, -1) - _slice(x, d, -2, -1)) / dx[-1]
    else:
        d0, d1 = dx[0], dx[1]
        pre = (-(2.0 * d0 + d1) / (d0 * (d0 + d1)) * _slice(x, d, 0, 1) + (d0 + d1) / (d0 * d1) * _slice(x, d, 1, 2)
               + (-d0) / (d1 * (d0 + d1)) * _slice(x, d, 2, 3))
        e1, e2 = dx[-1], dx[-2]
        app = (e1 / (e2 * (e1 + e2)) * _slice(x, d, -3, -2) - (e1 + e2) / (e1 * e2) * _slice(x, d, -2, -1)
               + (2 * e1 + e2) / (e1 * (e1 + e2)) * _slice(x, d, -1))
    return _o.cat([pre, center, app], d)


# ---------------- small functions ----------------
for _n in ("ldexp_", "erfc_", "i0_", "gcd_", "lcm_"):
    globals()[_n] = _inplace_fn(_n)
del _n


def detach_(input):
    """detach_(input) -> input: input leaves the graph in place (Tensor.detach_), as torch's."""
    _check_tensor(input, "detach_")
    return input.detach_()


def unsafe_split(tensor, split_size, dim=0):
    """unsafe_split(tensor, split_size, dim=0) -> tuple: split(tensor, split_size, dim), as
    torch.unsafe_split: views that allow in-place writes under autograd."""
    _check_tensor(tensor, "unsafe_split")
    if isinstance(split_size, _bool) or not isinstance(split_size, _int):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _unsafe(_o.split(tensor, split_size, dim))


def _unsafe(views):
    """views as plain views: torch's unsafe_* forms allow in-place writes into them."""
    for v in views:
        v._multi_view(0, 0)
    return tuple(views)


def unsafe_chunk(input, chunks, dim=0):
    """unsafe_chunk(input, chunks, dim=0) -> tuple: chunk(input, chunks, dim)."""
    _check_tensor(input, "unsafe_chunk")
    return _unsafe(_o.chunk(input, chunks, dim))


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """unsafe_split_with_sizes(input, split_sizes, dim=0) -> tuple: split_with_sizes(...)."""
    _check_tensor(input, "unsafe_split_with_sizes")
    return _unsafe(_o.split_with_sizes(input, split_sizes, dim))


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero_static(input, *, size, fill_value=-1) -> Tensor [size, input.dim()] int64: the
    first size indices of nonzero(input), rows of fill_value after them, as torch's."""
    _check_tensor(input, "nonzero_static")
    if isinstance(size, _bool) or not isinstance(size, _int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    nz = _o.nonzero(input)[:size]
    k = nz.shape[0]
    if k < size:
        fill = _o.full((size - k, input.dim()), fill_value, dtype=int64, device=input.device)
        nz = _o.cat([nz, fill], 0)
    return nz


def cond(pred, true_fn, false_fn, operands=()):
    """cond(pred, true_fn, false_fn, operands=()) -> true_fn(*operands) when pred (a bool or a
    one-element tensor) holds, else false_fn(*operands); torch.cond's eager semantics (under
    symtrace.compile a tensor pred breaks the graph: one branch runs)."""
    if not isinstance(pred, (_bool, _int, _float, _C.TensorBase)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if isinstance(pred, _C.TensorBase) and pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not isinstance(operands, (tuple, list)):
        operands = (operands,)
    fn = true_fn if _bool(pred) else false_fn
    return fn(*operands)


# ---------------- settings ----------------
_warn_always = [False]


def set_warn_always(b):
    """set_warn_always(b): whether warnings that warn once warn every time (torch's flag)."""
    if not isinstance(b, _bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always[0] = b


def is_warn_always_enabled():
    """is_warn_always_enabled() -> bool: as set by set_warn_always (False by default)."""
    return _warn_always[0]


def set_flush_denormal(mode):
    """set_flush_denormal(mode) -> bool: whether flushing denormals could be set: False,
    symtrace's kernels do not change the CPU's denormal mode (torch returns False too where
    the CPU lacks the feature)."""
    if not isinstance(mode, _bool):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning,
                  stacklevel=3)


def _check_bool(name, v, pos):
    if not isinstance(v, _bool):
        raise TypeError(f"{name}(): argument 'enabled' (position {pos}) must be bool, not {type(v).__name__}")


def _set_enabled(device_type, enabled):
    _C._set_autocast(device_type, enabled, _ac.get_autocast_dtype(device_type))


def _set_dtype(device_type, dtype):
    _C._set_autocast(device_type, _ac.is_autocast_enabled(device_type), dtype)


def set_autocast_enabled(*args):
    """set_autocast_enabled(device_type, enabled) or set_autocast_enabled(enabled) (CUDA):
    turns autocast on or off outside a with-block, as torch's."""
    if len(args) == 1:
        _check_bool("set_autocast_enabled", args[0], 1)
        return _set_enabled("cuda", args[0])
    if len(args) != 2:
        raise TypeError("set_autocast_enabled() takes (device_type, enabled) or (enabled)")
    _ac._check_device_type(args[0])
    _check_bool("set_autocast_enabled", args[1], 2)
    _set_enabled(args[0], args[1])


def set_autocast_dtype(device_type, dtype):
    """set_autocast_dtype(device_type, dtype): the dtype autocast uses on device_type."""
    _ac._check_device_type(device_type)
    _set_dtype(device_type, dtype)


def is_autocast_cpu_enabled():
    """is_autocast_cpu_enabled() -> bool: deprecated, is_autocast_enabled('cpu')."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return _ac.is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    """set_autocast_cpu_enabled(enabled): deprecated, set_autocast_enabled('cpu', enabled)."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    if not isinstance(enabled, _bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _set_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """get_autocast_cpu_dtype() -> dtype: deprecated, get_autocast_dtype('cpu')."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _ac.get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    """set_autocast_cpu_dtype(dtype): deprecated, set_autocast_dtype('cpu', dtype)."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    _set_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    """get_autocast_gpu_dtype() -> dtype: deprecated, get_autocast_dtype('cuda')."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return _ac.get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    """set_autocast_gpu_dtype(dtype): deprecated, set_autocast_dtype('cuda', dtype)."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    _set_dtype("cuda", dtype)


is_autocast_cache_enabled = _ac.is_autocast_cache_enabled
set_autocast_cache_enabled = _ac.set_autocast_cache_enabled
clear_autocast_cache = _ac.clear_autocast_cache


# ---------------- sym_* ----------------
def _num(name, a):
    if isinstance(a, _bool) or not isinstance(a, (_int, _float)):
        raise AssertionError(f"expected (<class 'int'>, <class 'float'>), got {type(a)}")


def sym_max(a, b):
    """sym_max(a, b): max of two numbers, a float when either is (a SymInt stays one)."""
    _num("sym_max", a)
    _num("sym_max", b)
    if isinstance(a, _float) or isinstance(b, _float):
        return _float(builtins.max(a, b))
    return builtins.max(a, b)


def sym_min(a, b):
    """sym_min(a, b): min of two numbers, a float when either is (a SymInt stays one)."""
    _num("sym_min", a)
    _num("sym_min", b)
    if isinstance(a, _float) or isinstance(b, _float):
        return _float(builtins.min(a, b))
    return builtins.min(a, b)


def sym_int(a):
    """sym_int(a): a SymInt itself, else int(a) (truncating)."""
    return a if isinstance(a, SymInt) else _int(a)


def sym_float(a):
    """sym_float(a): float(a)."""
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return _float(a)


def sym_not(a):
    """sym_not(a): not a."""
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


def sym_ite(b, t, f):
    """sym_ite(b, t, f): t if b else f (b a bool; t and f of one type)."""
    if not isinstance(b, _bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sqrt(a):
    """sym_sqrt(a): math.sqrt(a)."""
    return math.sqrt(a)


def sym_sum(*args):
    """sym_sum(a, b, ...) or sym_sum([a, b, ...]): their sum (SymInts stay symbolic)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


# ---------------- Tensor methods ----------------
def _new(self, *args, device=None):
    """new(*args, device=None) -> Tensor: the legacy constructor, in self's dtype: new() empty,
    new(*sizes) / new(Size) uninitialized, new(sequence) a copy of its data, new(tensor) that
    tensor (of self's dtype) itself, as torch's."""
    dev = self.device if device is None else device
    if not args:
        return _o.empty(0, dtype=self.dtype, device=dev)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, _C.TensorBase):
            if a.dtype is not self.dtype:
                raise TypeError(f"expected {self.dtype} (got {a.dtype})")
            return a.detach() if a.requires_grad else a.view_as(a)
        if isinstance(a, _C.Size):
            return _o.empty(tuple(a), dtype=self.dtype, device=dev)
        if isinstance(a, (_float, _bool)):
            raise TypeError(f"new(): data must be a sequence (got {type(a).__name__})")
        if not isinstance(a, _int):
            t = _C.tensor(a, self.dtype)
            return t if device is None and self.device.type == "cpu" else _o.to_device(t, _o._dev(dev))
    for s in args:
        if isinstance(s, _bool) or not isinstance(s, _int):
            raise TypeError(f"new() received an invalid combination of arguments - got "
                            f"({', '.join(type(s).__name__ for s in args)})")
    return _o.empty(tuple(args), dtype=self.dtype, device=dev)


def _resize_(self, *sizes, memory_format=None):
    """resize_(*sizes, memory_format=None) -> self: self reshaped in place to sizes, contiguous,
    over the same storage from its offset (the first elements in memory order). Growing past
    the storage moves self to a larger one that starts with the old one's elements (the rest
    uninitialized, as torch's)."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple, _C.Size)):
        sizes = tuple(sizes[0])
    sizes = tuple(_int(s) for s in sizes)
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(sizes)}: "
                           f"{list(sizes)}")
    if sizes == tuple(self.shape) and self.is_contiguous():
        return self
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= builtins.max(s, 1)
    strides = tuple(reversed(strides))
    n = 1
    for s in sizes:
        n *= s
    total, off = self._storage_nbytes() // self.element_size(), self.storage_offset()
    if n > total - off:
        base = _o.empty(off + n, dtype=self.dtype, device=self.device)
        if total:
            base.narrow(0, 0, total).copy_(self.as_strided((total,), (1,), 0))
        self._set_data(base.as_strided(sizes, strides, off))
        return self
    return self._become(self.as_strided(sizes, strides, off))


def _set_(self, source=None, storage_offset=0, size=None, stride=None):
    """set_(source=None, storage_offset=0, size=None, stride=None) -> self: self shares source's
    memory (its geometry, or size/stride from storage_offset of its storage); set_() makes self
    empty; as torch's (symtrace has no Storage objects: source is a tensor)."""
    if source is not None and not isinstance(source, _C.TensorBase):
        raise TypeError(f"set_(): argument 'source' must be Tensor, not {type(source).__name__}")
    if self.requires_grad and self.is_leaf and _C._is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if source is None:
        new = _o.empty(0, dtype=self.dtype, device=self.device)
    else:
        if source.dtype != self.dtype:
            raise RuntimeError(f"Could not set tensor of type {_LOWER[str(source.dtype)]} to a tensor "
                               f"of type {_LOWER[str(self.dtype)]}")
        if size is None:
            new = source
        else:
            size = tuple(size)
            if stride is None:
                stride, acc = [], 1
                for s in reversed(size):
                    stride.append(acc)
                    acc *= builtins.max(s, 1)
                stride = tuple(reversed(stride))
            new = source.as_strided(size, tuple(stride), storage_offset)
    self._set_data(new)
    self._bump_version()
    return self


def _resize_as_(self, the_template, *, memory_format=None):
    """resize_as_(the_template, *, memory_format=None) -> self: self.resize_(the_template.shape)."""
    _check_tensor(the_template, "resize_as_", "the_template")
    return _resize_(self, tuple(the_template.shape))


def _pin_memory(self, device=None):
    """pin_memory(device=None) -> Tensor: refused without an accelerator, as torch's CPU build;
    with CUDA, a contiguous copy (symtrace has no page-locked host memory)."""
    from . import cuda
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return self.clone()


def _is_pinned(self, device=None):
    """is_pinned(device=None) -> bool: False (no page-locked host memory in symtrace)."""
    return False


def _share_memory_(self):
    """share_memory_() -> self: a no-op (symtrace's multiprocessing pickles copies)."""
    return self


def _is_shared(self):
    """is_shared() -> bool: False (symtrace has no shared-memory storages)."""
    return False


def _slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    """slice_inverse(src, dim=0, start=None, end=None, step=1) -> Tensor: self's storage viewed
    with src's sizes, strides and offset (the base self was sliced from), as torch's."""
    _check_tensor(src, "slice_inverse", "src")
    return self.as_strided(tuple(src.shape), tuple(src.stride()), src.storage_offset())


_METHODS = {
    "new": _new, "resize_": _resize_, "resize_as_": _resize_as_, "set_": _set_, "pin_memory": _pin_memory,
    "is_pinned": _is_pinned, "share_memory_": _share_memory_, "is_shared": _is_shared,
    "slice_inverse": _slice_inverse, "unsafe_split": unsafe_split, "unsafe_chunk": unsafe_chunk,
    "unsafe_split_with_sizes": unsafe_split_with_sizes,
}
for _k, _f in _METHODS.items():
    if not hasattr(Tensor, _k):
        _f.__name__ = _f.__qualname__ = _k
        setattr(Tensor, _k, _f)


def _hardshrink(self, lambd=0.5):
    """hardshrink(lambd=0.5) -> Tensor: F.hardshrink(self, lambd)."""
    from .nn import functional as F
    return F.hardshrink(self, lambd)


def _prelu(self, weight):
    """prelu(weight) -> Tensor: F.prelu(self, weight)."""
    from .nn import functional as F
    return F.prelu(self, weight)


def _nonzero_static(self, *, size, fill_value=-1):
    """nonzero_static(*, size, fill_value=-1) -> Tensor: symtrace.nonzero_static(self, ...)."""
    return nonzero_static(self, size=size, fill_value=fill_value)


for _k, _f in (("hardshrink", _hardshrink), ("prelu", _prelu), ("nonzero_static", _nonzero_static)):
    if not hasattr(Tensor, _k):
        _f.__name__ = _f.__qualname__ = _k
        setattr(Tensor, _k, _f)
del _k, _f
