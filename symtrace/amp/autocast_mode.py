"""autocast: a context manager (and decorator) that runs chosen ops in a
16-bit float dtype, after torch.autocast.

The policy lives in the runtime (runtime/autocast.c), so it holds for every
way an op is called and for compiled graphs (a graph records the casts; its
guards check the autocast state it was traced under):
  - matmul and linear (every product): float32 operands cast to the
    autocast dtype;
  - on CUDA, exp, log, pow, reciprocal, rsqrt, layer_norm, logsumexp,
    cross_entropy, softmax, log_softmax, sum and prod: 16-bit operands cast
    to float32; on the CPU, prod and cross_entropy;
  - on CUDA, scatter_add: its floating operands to the widest of them;
  - everything else runs in its operands' dtypes, with the usual type
    promotion (bfloat16 + float32 is float32).
Ops written in Python over the runtime's ops (addmm, baddbmm, addbmm, conv,
prelu, the losses, pad, trace, quantile, index_copy, dot, mv) follow torch's
lists through the decorator in _policy.py.
float64 tensors are never cast, nor are tensors on another device type.
Ops that write into a given tensor (out=, in place) are not cast. Backward
runs with autocast off, in the dtypes the forward chose. Differences from
PyTorch: no cache of cast weights (each use casts again; a compiled graph
shares them), and softmax(x, dtype=...) under CUDA autocast still runs in
float32 when x is 16-bit."""
import functools

from .. import _C
from .._dtype import bfloat16, float16, float64 as _float64, dtype as _dtype_cls

_DEVICE_TYPES = ("cpu", "cuda")


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"autocast: expected device_type of type str, got {type(device_type).__name__}")
    if device_type not in _DEVICE_TYPES:
        raise ValueError(f"autocast: unsupported device_type {device_type!r} (use 'cpu' or 'cuda')")


def is_autocast_enabled(device_type="cuda"):
    """Is autocast on for device_type ('cuda' by default, as PyTorch's)?"""
    _check_device_type(device_type)
    return _C._get_autocast(device_type)[0]


def get_autocast_dtype(device_type):
    """The dtype autocast uses (or would use) on device_type."""
    _check_device_type(device_type)
    return _C._get_autocast(device_type)[1]


_cache_enabled = [True]


def is_autocast_cache_enabled():
    """Does autocast cache its casts of weights (torch's flag; True by default)? symtrace keeps
    no such cache (see above), so the flag only records what was set."""
    return _cache_enabled[0]


def set_autocast_cache_enabled(enabled):
    """Sets the flag is_autocast_cache_enabled reads; autocast(cache_enabled=...) sets it inside."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _cache_enabled[0] = enabled


def clear_autocast_cache():
    """Empties autocast's cache of cast weights: nothing to do, symtrace keeps none."""


class autocast:
    """autocast(device_type, dtype=None, enabled=True, cache_enabled=None)

    device_type: 'cpu' or 'cuda'. dtype: bfloat16 or float16 (default: the
    current autocast dtype of device_type: bfloat16 on the CPU, float16 on
    CUDA, as in PyTorch). enabled=False turns autocast off inside (for
    a region that must run in float32). cache_enabled (default:
    is_autocast_cache_enabled()) is the flag inside the block, as PyTorch's;
    symtrace caches no casts. Usable as a decorator."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device_type(device_type)
        if dtype is None:
            dtype = get_autocast_dtype(device_type)
        if not isinstance(dtype, _dtype_cls):
            raise TypeError(f"autocast: dtype must be a symtrace dtype, got {type(dtype).__name__}")
        if dtype is not bfloat16 and dtype is not float16:
            raise ValueError(f"autocast: dtype must be symtrace.bfloat16 or symtrace.float16, got {dtype}")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: enabled must be a bool, got {type(enabled).__name__}")
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = enabled
        self._cache = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        self._prevs = []

    def __enter__(self):
        # a stack, so that one object may be entered again inside itself
        self._prevs.append((_C._set_autocast(self.device, self._enabled, self.fast_dtype), _cache_enabled[0]))
        _cache_enabled[0] = self._cache
        return self

    def __exit__(self, *exc):
        (enabled, dtype), _cache_enabled[0] = self._prevs.pop()
        _C._set_autocast(self.device, enabled, dtype)
        return False

    def __call__(self, fn):
        device, dtype, enabled = self.device, self.fast_dtype, self._enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(device, dtype=dtype, enabled=enabled):
                return fn(*args, **kwargs)
        return wrapper

    def __repr__(self):
        return f"autocast({self.device!r}, dtype={self.fast_dtype}, enabled={self._enabled})"


def _cast(value, device_type, dtype):
    """Floating tensors on device_type (not float64) cast to dtype, inside
    lists, tuples and dict values."""
    if hasattr(value, "dtype") and hasattr(value, "device"):
        ok = (value.dtype.is_floating_point and value.dtype is not _float64 and
              str(value.device).split(":")[0] == device_type)
        return value.to(dtype) if ok else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """For an autograd.Function's forward, as torch.amp.custom_fwd: notes
    the autocast state for custom_bwd; with cast_inputs (a dtype), when
    autocast is on for device_type, the forward runs with autocast off on
    its floating inputs cast to cast_inputs (and custom_bwd's backward with
    autocast off too)."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(*args, **kwargs):
        ctx = args[0]
        on, dtype = _C._get_autocast(device_type)
        # with cast_inputs the forward runs with autocast off: so will backward
        ctx._fwd_used_autocast, ctx._dtype = on and cast_inputs is None, dtype
        if cast_inputs is None or not on:
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(ctx, *_cast(args[1:], device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))
    return forward


def custom_bwd(bwd=None, *, device_type):
    """For an autograd.Function's backward, as torch.amp.custom_bwd: runs
    it under the autocast state its forward ran under (backward otherwise
    runs with autocast off)."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return backward
