"""symtrace.backends.opt_einsum: symtrace's einsum contracts left to right and never calls
opt_einsum, so is_available() is False, enabled False and strategy None, as torch without the
opt_einsum package; setting enabled=True or a strategy raises torch's ValueError."""
import sys
import types
from contextlib import contextmanager

from . import ContextProp, _allow_nonbracketed_mutation

__all__ = ["is_available", "get_opt_einsum", "set_flags", "flags"]

_flags = {"enabled": False, "strategy": None}


def is_available():
    """is_available() -> bool: False (symtrace's einsum does not use opt_einsum)."""
    return False


def get_opt_einsum():
    """get_opt_einsum() -> None: the opt_einsum package is not used."""
    return None


def _set_enabled(_enabled):
    if _enabled:
        raise ValueError(f"opt_einsum is not available, so setting `enabled` to {_enabled} will not reap the "
                         f"benefits of calculating an optimal path for einsum. symtrace.einsum will fall back to "
                         f"contracting from left to right. To enable this optimal path calculation, please "
                         f"install opt-einsum.")
    _flags["enabled"] = _enabled


def _set_strategy(_strategy):
    raise ValueError(f"opt_einsum is not available, so setting `strategy` to {_strategy} will not be "
                     f"meaningful. symtrace.einsum will bypass path calculation and simply contract from left "
                     f"to right. Please install opt_einsum or unset `strategy`.")


def set_flags(_enabled=None, _strategy=None):
    """set_flags(_enabled=None, _strategy=None) -> tuple: sets the given flags, returns the old."""
    orig = (_flags["enabled"], None)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return orig


@contextmanager
def flags(enabled=None, strategy=None):
    """flags(enabled=None, strategy=None): sets the flags inside the block, then restores them."""
    with _allow_nonbracketed_mutation():
        orig = set_flags(enabled, strategy)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            set_flags(*orig)


class _OptEinsumModule(types.ModuleType):
    enabled = ContextProp(lambda: _flags["enabled"], _set_enabled)
    strategy = ContextProp(lambda: _flags["strategy"], _set_strategy)


sys.modules[__name__].__class__ = _OptEinsumModule
