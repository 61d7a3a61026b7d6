"""symtrace.backends: torch.backends' flags and queries (cudnn, cuda, mps, mkldnn, openmp,
opt_einsum, cpu), so that training scripts setting torch.backends.* run unchanged.

symtrace uses none of cuDNN, MPS, oneDNN (mkldnn), OpenMP or opt_einsum: their is_available()
is False and their flags are recorded, validated as torch validates them, and read back.
backends.cuda.matmul.allow_tf32 is the float32 matmul precision (symtrace.set/
get_float32_matmul_precision), as in torch. Bare assignments such as
``backends.cudnn.benchmark = True`` are allowed unless disable_global_flags() was called; the
flags() context managers always are (torch's rule)."""
from contextlib import contextmanager as _contextmanager

_state = {"allow_nonbracketed_mutation": True}


def disable_global_flags():
    """disable_global_flags(): from now on, flags may be set only inside a flags() context manager."""
    _state["allow_nonbracketed_mutation"] = False


def flags_frozen():
    """flags_frozen() -> bool: True after disable_global_flags()."""
    return not _state["allow_nonbracketed_mutation"]


@_contextmanager
def _allow_nonbracketed_mutation():
    old = _state["allow_nonbracketed_mutation"]
    _state["allow_nonbracketed_mutation"] = True
    try:
        yield
    finally:
        _state["allow_nonbracketed_mutation"] = old


class ContextProp:
    """A module attribute read by getter() and written by setter(value), refused while the
    flags are frozen (see disable_global_flags)."""

    def __init__(self, getter, setter):
        self.getter = getter
        self.setter = setter

    def __get__(self, obj, objtype=None):
        return self.getter()

    def __set__(self, obj, val):
        if flags_frozen():
            raise RuntimeError(f"not allowed to set {obj.__name__} flags after disable_global_flags; "
                               f"please use flags() context manager instead")
        self.setter(val)


def _check_bool(value, setter_name):
    if not isinstance(value, bool):
        raise RuntimeError(f"{setter_name} expects a bool, but got {type(value).__name__}")
    return value


from . import cpu, cuda, cudnn, mkldnn, mps, openmp, opt_einsum  # noqa: E402,F401

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp", "opt_einsum", "disable_global_flags",
           "flags_frozen"]
