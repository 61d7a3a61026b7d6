"""symtrace.backends.cudnn: torch.backends.cudnn's flags. symtrace has no cuDNN (its GPU kernels
are its own): is_available() is False and version() None, as torch built without cuDNN; the flags
(enabled, benchmark, deterministic, allow_tf32, depthwise_kernel) are recorded and read back,
with torch's defaults and type checks, and change nothing in symtrace's kernels."""
import sys
import types
from contextlib import contextmanager

from . import ContextProp, _allow_nonbracketed_mutation, _check_bool

__all__ = ["is_available", "version", "is_acceptable", "set_flags", "flags"]

_flags = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True,
          "depthwise_kernel": "auto"}


def is_available():
    """is_available() -> bool: False (symtrace does not use cuDNN)."""
    return False


def version():
    """version() -> None: no cuDNN is loaded."""
    return None


def is_acceptable(tensor):
    """is_acceptable(tensor) -> bool: False (no cuDNN kernel would run it)."""
    return False


def _setter(name, setter_name):
    def set_(value):
        _flags[name] = _check_bool(value, setter_name)
    return set_


def _set_depthwise_kernel(value):
    if not isinstance(value, str):
        raise RuntimeError(f"set_cudnn_depthwise_kernel expects a string, but got {type(value).__name__}")
    _flags["depthwise_kernel"] = value


_SETTERS = {"enabled": _setter("enabled", "set_enabled_cudnn"),
            "benchmark": _setter("benchmark", "set_benchmark_cudnn"),
            "deterministic": _setter("deterministic", "set_deterministic_cudnn"),
            "allow_tf32": _setter("allow_tf32", "set_allow_tf32_cudnn"),
            "depthwise_kernel": _set_depthwise_kernel}


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none", _depthwise_kernel=None):
    """set_flags(...) -> tuple: sets the flags given (not None) and returns the previous ones in
    set_flags' argument order (benchmark_limit is None: no cuDNN)."""
    orig = (_flags["enabled"], _flags["benchmark"], None, _flags["deterministic"], _flags["allow_tf32"],
            "none", _flags["depthwise_kernel"])
    for name, v in (("enabled", _enabled), ("benchmark", _benchmark), ("deterministic", _deterministic),
                    ("allow_tf32", _allow_tf32), ("depthwise_kernel", _depthwise_kernel)):
        if v is not None:
            _SETTERS[name](v)
    return orig


@contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """flags(enabled=False, benchmark=False, ...): a context manager setting the cuDNN flags (torch's
    defaults) and restoring the previous ones on exit."""
    with _allow_nonbracketed_mutation():
        orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32, fp32_precision,
                         depthwise_kernel)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            set_flags(*orig)


def _prop(name):
    return ContextProp(lambda: _flags[name], _SETTERS[name])


class _CudnnModule(types.ModuleType):
    enabled = _prop("enabled")
    benchmark = _prop("benchmark")
    deterministic = _prop("deterministic")
    allow_tf32 = _prop("allow_tf32")
    depthwise_kernel = _prop("depthwise_kernel")
    benchmark_limit = None       # torch's is None without cuDNN


sys.modules[__name__].__class__ = _CudnnModule
