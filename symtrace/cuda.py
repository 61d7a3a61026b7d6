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
           "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats", "empty_cache", "nvrtc_library_dirs"]


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
