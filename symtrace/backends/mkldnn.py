"""symtrace.backends.mkldnn: oneDNN (mkldnn), which symtrace does not use: is_available() is
False; the enabled / deterministic flags are recorded and read back (torch's defaults)."""
import sys
import types
from contextlib import contextmanager

from . import ContextProp, _allow_nonbracketed_mutation, _check_bool

__all__ = ["is_available", "set_flags", "flags"]

_flags = {"enabled": True, "deterministic": False}


def is_available():
    """is_available() -> bool: False (symtrace is not built with oneDNN)."""
    return False


def _set_enabled(v):
    _flags["enabled"] = _check_bool(v, "set_enabled_mkldnn")


def _set_deterministic(v):
    _flags["deterministic"] = _check_bool(v, "set_deterministic_mkldnn")


def set_flags(_enabled=None, _deterministic=None, _fp32_precision="none"):
    """set_flags(_enabled=None, _deterministic=None) -> tuple: sets the given flags, returns the old."""
    orig = (_flags["enabled"], _flags["deterministic"], "none")
    if _enabled is not None:
        _set_enabled(_enabled)
    if _deterministic is not None:
        _set_deterministic(_deterministic)
    return orig


@contextmanager
def flags(enabled=False, deterministic=False, fp32_precision="none"):
    """flags(enabled=False, deterministic=False): sets the flags inside the block, then restores them."""
    with _allow_nonbracketed_mutation():
        orig = set_flags(enabled, deterministic, fp32_precision)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            set_flags(*orig)


class _MkldnnModule(types.ModuleType):
    enabled = ContextProp(lambda: _flags["enabled"], _set_enabled)
    deterministic = ContextProp(lambda: _flags["deterministic"], _set_deterministic)


sys.modules[__name__].__class__ = _MkldnnModule
