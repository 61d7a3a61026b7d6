"""Process-wide settings with torch's names: the CPU thread counts (get/set_num_threads,
get/set_num_interop_threads), the default device of factory functions (set/get_default_device),
the determinism flags (use_deterministic_algorithms and friends), the float32 matmul precision,
and typename / is_storage.

Threads: the LLVM backend's CPU pool (llvm_backend/pool.c) starts on the first compiled CPU
kernel with SYMTRACE_NUM_THREADS threads (nproc when unset) and keeps its size.
set_num_threads(n) sets SYMTRACE_NUM_THREADS, so it sizes the pool when called before the pool
starts, and the pool of every process forked later (DataLoader workers); after the pool has
started, the running pool keeps its size (torch resizes its pool), while get_num_threads()
reports n, as torch's does. symtrace has no inter-op pool: the interop count is recorded and,
as torch's, may be set once, before any parallel work.

use_deterministic_algorithms only records the flags: symtrace's CPU kernels are deterministic
(fixed reduction orders, no atomics); on a GPU its scatter-adds (index_add, scatter_add, the
backward of gathers and embeddings) accumulate with atomics, which torch in deterministic mode
would refuse or replace, and symtrace does neither. symtrace has no TF32 or reduced-precision
float32 matmul on the CPU, so the matmul precision is recorded only."""
import os

from . import _C
from ._ops import creation as _creation

_threads = {"intra": None, "interop": None, "interop_locked": False}


def _nproc():
    try:
        return os.sysconf("SC_NPROCESSORS_ONLN")
    except (AttributeError, ValueError, OSError):    # pragma: no cover
        return os.cpu_count() or 1


def get_num_threads():
    """get_num_threads() -> int: the CPU threads symtrace's kernels use: the last
    set_num_threads, else SYMTRACE_NUM_THREADS, else the number of CPUs online (the pool's own
    rule, at most 256)."""
    if _threads["intra"] is not None:
        return _threads["intra"]
    e = os.environ.get("SYMTRACE_NUM_THREADS")
    try:
        n = int(e) if e else 0
    except ValueError:
        n = 0
    n = n if n > 0 else _nproc()
    return max(1, min(n, 256))


def set_num_threads(n):
    """set_num_threads(n): the CPU threads for symtrace's kernels (SYMTRACE_NUM_THREADS): it
    sizes the thread pool when called before the first compiled CPU kernel runs, and the pools
    of processes forked later; a pool already running keeps its size (see the module's notes)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _threads["intra"] = n
    os.environ["SYMTRACE_NUM_THREADS"] = str(n)


def get_num_interop_threads():
    """get_num_interop_threads() -> int: the recorded inter-op thread count (symtrace runs ops
    one after another; default: the number of CPUs online, torch's default)."""
    v = _threads["interop"]
    return v if v is not None else _nproc()


def set_num_interop_threads(n):
    """set_num_interop_threads(n): records the inter-op thread count; as torch, once only."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _threads["interop_locked"]:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _threads["interop"] = n
    _threads["interop_locked"] = True


# ---- default device ----
def set_default_device(device):
    """set_default_device(device): the device factory functions (tensor, zeros, ones, full,
    empty, arange, eye, linspace, logspace, rand, randn, randint, randperm, ...) use when given
    no device; None restores the CPU. symtrace's own code calls them too (nn modules create
    their parameters there, as torch's do). Process-wide (torch's is per thread)."""
    if device is None:
        _creation._DEFAULT_DEVICE = None
        return
    from ._tensor import device as _device
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"
    d = _device(device)
    _creation._DEFAULT_DEVICE = None if str(d) == "cpu" else str(d)


def get_default_device():
    """get_default_device() -> device: the default device of factory functions (device('cpu')
    unless set_default_device changed it; a GPU without index gives the current one)."""
    from ._tensor import device as _device
    d = _creation._DEFAULT_DEVICE
    if d is None:
        return _device("cpu")
    dev = _device(d)
    if dev.index is None:
        return _C.empty((0,), _C.float32, d).device     # the device actually used
    return dev


# ---- determinism ----
_det = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """use_deterministic_algorithms(mode, *, warn_only=False): records the flags (symtrace's CPU
    kernels are deterministic; see the module's notes for the GPU)."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, "
                        f"not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _det["mode"], _det["warn_only"] = mode, warn_only if mode else False


def are_deterministic_algorithms_enabled():
    """are_deterministic_algorithms_enabled() -> bool: the flag use_deterministic_algorithms set."""
    return _det["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    """is_deterministic_algorithms_warn_only_enabled() -> bool: the warn_only flag."""
    return _det["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """set_deterministic_debug_mode(debug_mode): 'default' / 0, 'warn' / 1 or 'error' / 2: the
    same flags as use_deterministic_algorithms, as torch."""
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = modes[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """get_deterministic_debug_mode() -> int: 0 (off), 1 (warn) or 2 (error), as torch."""
    if not _det["mode"]:
        return 0
    return 1 if _det["warn_only"] else 2


# ---- float32 matmul precision ----
_precision = ["highest"]


def set_float32_matmul_precision(precision):
    """set_float32_matmul_precision(precision): 'highest', 'high' or 'medium', recorded (symtrace's
    CPU matmul is always full float32); another string warns and changes nothing, as torch."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _precision[0] = precision


def get_float32_matmul_precision():
    """get_float32_matmul_precision() -> str: the precision last set ('highest' by default)."""
    return _precision[0]


# ---- type queries ----
def typename(obj, /):
    """typename(obj) -> str: a tensor's type() ('symtrace.FloatTensor', ...), else the object's
    module and qualified name, as torch.typename."""
    if isinstance(obj, _C.TensorBase):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def is_storage(obj, /):
    """is_storage(obj) -> bool: False (symtrace exposes no storage objects)."""
    return False
