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
float64 tensors are never cast, nor are tensors on another device type.
Ops that write into a given tensor (out=, in place) are not cast. Backward
runs with autocast off, in the dtypes the forward chose. Differences from
PyTorch: no cache of cast weights (each use casts again; a compiled graph
shares them), and softmax(x, dtype=...) under CUDA autocast still runs in
float32 when x is 16-bit."""
import functools

from .. import _C
from .._dtype import bfloat16, float16, dtype as _dtype_cls

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


class autocast:
    """autocast(device_type, dtype=None, enabled=True, cache_enabled=None)

    device_type: 'cpu' or 'cuda'. dtype: bfloat16 or float16 (default: the
    current autocast dtype of device_type: bfloat16 on the CPU, float16 on
    CUDA, as in PyTorch). enabled=False turns autocast off inside (for
    a region that must run in float32). cache_enabled is accepted for
    PyTorch's signature and has no effect. Usable as a decorator."""

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
        self._prevs = []

    def __enter__(self):
        # a stack, so that one object may be entered again inside itself
        self._prevs.append(_C._set_autocast(self.device, self._enabled, self.fast_dtype))
        return self

    def __exit__(self, *exc):
        enabled, dtype = self._prevs.pop()
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
