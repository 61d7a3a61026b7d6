"""symtrace.cuda: CUDA devices, as torch.cuda names them.

The CUDA driver (libcuda.so.1) and NVRTC are loaded at run time, so one
build works with or without a GPU: without one, is_available() is False,
device_count() is 0, and asking for a "cuda" tensor or synchronize() raises
RuntimeError("CUDA is not available: ...").

NVRTC is looked for in $SYMTRACE_NVRTC_PATH, then in the lib directories of
the nvidia-cuda-nvrtc wheel (site-packages/nvidia/*/lib) found here and
passed to C, then by the system loader and /usr/local/cuda/lib64.
"""
import glob as _glob
import os as _os
import sys as _sys

from . import _C
from ._dtype import float32 as _float32

__all__ = ["is_available", "device_count", "synchronize", "get_device_name",
           "current_device", "nvrtc_status", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats", "empty_cache", "nvrtc_library_dirs",
           "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed"]


def _wheel_lib_dirs(pattern):
    """The nvidia/*/lib directories of installed pip wheels holding a file
    matching pattern, newest CUDA first."""
    dirs = []
    for p in _sys.path:
        if not p or not _os.path.isdir(_os.path.join(p, "nvidia")):
            continue
        for d in sorted(_glob.glob(_os.path.join(p, "nvidia", "*", "lib")), reverse=True):
            if _glob.glob(_os.path.join(d, pattern)) and d not in dirs:
                dirs.append(d)
    return dirs


def nvrtc_library_dirs():
    """The lib directories of installed nvidia-cuda-nvrtc wheels (newest CUDA first)."""
    return _wheel_lib_dirs("libnvrtc.so*")


_C._nvrtc_set_search_path(":".join(nvrtc_library_dirs()) or None)
# matmuls on the GPU go to cuBLAS when it loads (SYMTRACE_CUBLAS=0: never):
# nvidia-cublas, or torch's nvidia/cu13/lib
_C._cublas_set_search_path(":".join(_wheel_lib_dirs("libcublas.so*")) or None)


def cublas_status():
    """(True, library) when cuBLAS loads for GPU matmuls, else (False, reason)."""
    return _C._cublas_status()


def is_available():
    """True when a CUDA driver is loaded and sees at least one GPU."""
    return bool(_C._cuda_is_available())


def device_count():
    """The number of GPUs the CUDA driver sees (0 without a driver)."""
    return int(_C._cuda_device_count())


def _index(device):
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    s = str(device)
    if s == "cuda":
        return 0
    if s.startswith("cuda:"):
        return int(s[5:])
    raise RuntimeError(f"Expected a CUDA device, got {device!r}")


def _require():
    if not is_available():
        # the driver's own explanation (no libcuda, cuInit failed, no GPU)
        _C.empty((0,), _float32, "cuda")
        raise RuntimeError("CUDA is not available")


def synchronize(device=None):
    """Waits for all kernels and copies queued on a GPU (default: all)."""
    _require()
    _C._cuda_synchronize(-1 if device is None else _index(device))


def current_device():
    _require()
    return 0


def get_device_name(device=None):
    _require()
    return _C._cuda_device_name(_index(device))


def _dev(device):
    return f"cuda:{_index(device)}"


def memory_allocated(device=None):
    """Bytes of tensors alive on the GPU (torch.cuda.memory_allocated)."""
    from . import memory
    return memory.memory_allocated(_dev(device))


def max_memory_allocated(device=None):
    from . import memory
    return memory.max_memory_allocated(_dev(device))


def memory_reserved(device=None):
    from . import memory
    return memory.memory_reserved(_dev(device))


def max_memory_reserved(device=None):
    from . import memory
    return memory.max_memory_reserved(_dev(device))


def reset_peak_memory_stats(device=None):
    from . import memory
    memory.reset_peak_stats(_dev(device))


def empty_cache():
    """Returns the GPU's fully free cached segments to the driver (no-op without a GPU)."""
    if is_available():
        from . import memory
        memory.empty_cache("cuda")


def nvrtc_status():
    """(True, version, library) when NVRTC loads, else (False, reason)."""
    return _C._nvrtc_status()


# ---- random number generator state ----
# symtrace has ONE counter-based generator (runtime/random.c) shared by the CPU and
# every GPU, so these are symtrace.random's functions seen from torch.cuda's names:
# seeding or restoring "the GPU's" generator also reseeds or restores the CPU's, and
# every device's state is the same int64 [seed, offset] tensor. get_rng_state /
# set_rng_state take a device as torch does and, as torch, need a GPU (RuntimeError
# without one); the seeding functions work without one (torch defers them lazily).


def get_rng_state(device="cuda"):
    """The generator's state as an int64 Tensor [seed, offset] (symtrace.get_rng_state;
    one generator serves every device)."""
    _require()
    _index(device)
    from . import random
    return random.get_rng_state()


def set_rng_state(new_state, device="cuda"):
    """Sets the generator's state (shared by every device, the CPU included)."""
    _require()
    _index(device)
    from . import random
    random.set_rng_state(new_state)


def get_rng_state_all():
    """One state per GPU ([] without one); all equal, the generator being shared."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    """Sets the state of each GPU from new_states: the generator being shared, the last
    one wins (all equal when they come from get_rng_state_all)."""
    new_states = list(new_states)
    from . import random
    for st in new_states:  # checked before any is applied
        random._unpack_state(st, "set_rng_state_all")
    for i, st in enumerate(new_states):
        set_rng_state(st, i)


def manual_seed(seed):
    """Seeds the generator (shared: the CPU's too); works without a GPU."""
    from . import random
    random.manual_seed(seed)


def manual_seed_all(seed):
    """Seeds the generator of every GPU: the one shared generator (the CPU's too)."""
    manual_seed(seed)


def seed():
    """Seeds the (shared) generator with a non-deterministic number."""
    from . import random
    random.seed()


def seed_all():
    seed()


def initial_seed():
    """The shared generator's seed (symtrace.initial_seed)."""
    from . import random
    return random.initial_seed()
