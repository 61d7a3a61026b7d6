"""symtrace.backends.cuda: torch.backends.cuda's flags. matmul.allow_tf32 is the float32 matmul
precision, as torch wires it: reading gives get_float32_matmul_precision() != "highest", setting
True / False sets "high" / "highest" (symtrace's matmuls stay full float32 either way; see
_settings.py). The reduced-precision reduction flags, the scaled-dot-product-attention kernel
flags and the preferred linear-algebra library are recorded, checked as torch checks them and read
back: symtrace's scaled_dot_product_attention has one (math) implementation and its linear algebra
uses neither cuSOLVER nor MAGMA."""
import contextlib
import enum
import warnings

from . import _check_bool
from .. import _settings

__all__ = ["is_built", "matmul", "preferred_linalg_library", "sdp_kernel", "enable_flash_sdp",
           "flash_sdp_enabled", "enable_mem_efficient_sdp", "mem_efficient_sdp_enabled", "enable_math_sdp",
           "math_sdp_enabled", "enable_cudnn_sdp", "cudnn_sdp_enabled", "allow_fp16_bf16_reduction_math_sdp",
           "fp16_bf16_reduction_math_sdp_allowed", "is_flash_attention_available"]


def is_built():
    """is_built() -> bool: True: symtrace's one build runs on CUDA GPUs when a driver is present
    (the driver and NVRTC are loaded at run time; symtrace.cuda.is_available() says whether one is)."""
    return True


def _parse_reduction_setting(value, attr_name):
    def ensure_bool(obj, which):
        if isinstance(obj, bool):
            return obj
        raise TypeError(f"{attr_name} expects a bool for {which}, but got {type(obj)!r}")

    if isinstance(value, bool):
        return value, True
    if isinstance(value, (list, tuple)):
        if not value:
            raise TypeError(f"{attr_name} expects at least one boolean argument")
        if len(value) > 2:
            raise TypeError(f"{attr_name} expects at most two boolean arguments")
        allow = ensure_bool(value[0], "allow_reduced_precision")
        if len(value) == 1:
            return allow, True
        return allow, ensure_bool(value[1], "allow_splitk")
    raise TypeError(f"{attr_name} expects a bool or a tuple/list of bools, but got {type(value)!r}")


class cuBLASModule:
    """backends.cuda.matmul: allow_tf32 (the float32 matmul precision), the fp16 / bf16
    reduced-precision reduction flags (with their _split_k halves) and allow_fp16_accumulation."""

    _red = {"fp16": [True, True], "bf16": [True, True]}
    _fp16_acc = [False]

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _settings.get_float32_matmul_precision() != "highest"
        for kind in ("fp16", "bf16"):
            if name == f"allow_{kind}_reduced_precision_reduction":
                return self._red[kind][0]
            if name == f"allow_{kind}_reduced_precision_reduction_split_k":
                return self._red[kind][1]
        if name == "allow_fp16_accumulation":
            return self._fp16_acc[0]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _check_bool(value, "set_allow_tf32_cublas")
            _settings.set_float32_matmul_precision("high" if value else "highest")
            return
        for kind in ("fp16", "bf16"):
            if name == f"allow_{kind}_reduced_precision_reduction":
                allow, splitk = _parse_reduction_setting(value, name)
                if allow and not splitk:
                    raise RuntimeError("allow_splitk=False is not supported when reduced precision "
                                       "reductions are enabled")
                self._red[kind][:] = [allow, splitk]
                return
        if name == "allow_fp16_accumulation":
            self._fp16_acc[0] = _check_bool(value, "set_allow_fp16_accumulation_cublas")
            return
        raise AttributeError("Unknown attribute " + name)


matmul = cuBLASModule()


class _LinalgBackend(enum.IntEnum):
    """The linear-algebra libraries torch may prefer on a GPU (torch._C._LinalgBackend)."""
    Default = 0
    Cusolver = 1
    Magma = 2

    def __str__(self):
        return f"_LinalgBackend.{self.name}"


_LinalgBackends = {"default": _LinalgBackend.Default, "cusolver": _LinalgBackend.Cusolver,
                   "magma": _LinalgBackend.Magma}
_linalg = [_LinalgBackend.Default]


def preferred_linalg_library(backend=None):
    """preferred_linalg_library(backend=None) -> _LinalgBackend: the preferred GPU linear-algebra
    library ("default"; symtrace has neither cuSOLVER nor MAGMA, so choosing one raises as torch
    built without it)."""
    if backend is None:
        pass
    elif isinstance(backend, (str, _LinalgBackend)):
        if isinstance(backend, str):
            if backend not in _LinalgBackends:
                raise RuntimeError(f"Unknown input value. Choose from: {', '.join(_LinalgBackends)}.")
            backend = _LinalgBackends[backend]
        if backend == _LinalgBackend.Cusolver:
            raise RuntimeError("Cannot set preferred backend to cuSOLVER if symtrace has not been compiled "
                               "with cuSOLVER.")
        if backend == _LinalgBackend.Magma:
            raise RuntimeError("Cannot set preferred backend to MAGMA if symtrace has not been compiled "
                               "with MAGMA.")
        _linalg[0] = backend
    else:
        raise RuntimeError("Unknown input value type.")
    return _linalg[0]


# ---- scaled dot product attention kernels ----
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True, "fp16_bf16_reduction_math": False}


def flash_sdp_enabled():
    """flash_sdp_enabled() -> bool: the flash-attention flag (recorded; True by default)."""
    return _sdp["flash"]


def enable_flash_sdp(enabled):
    """enable_flash_sdp(enabled): sets the flash-attention flag."""
    _sdp["flash"] = _check_bool(enabled, "set_sdp_use_flash")


def mem_efficient_sdp_enabled():
    """mem_efficient_sdp_enabled() -> bool: the memory-efficient-attention flag (True by default)."""
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled):
    """enable_mem_efficient_sdp(enabled): sets the memory-efficient-attention flag."""
    _sdp["mem_efficient"] = _check_bool(enabled, "set_sdp_use_mem_efficient")


def math_sdp_enabled():
    """math_sdp_enabled() -> bool: the math-attention flag (True by default)."""
    return _sdp["math"]


def enable_math_sdp(enabled):
    """enable_math_sdp(enabled): sets the math-attention flag."""
    _sdp["math"] = _check_bool(enabled, "set_sdp_use_math")


def cudnn_sdp_enabled():
    """cudnn_sdp_enabled() -> bool: the cuDNN-attention flag (True by default)."""
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled):
    """enable_cudnn_sdp(enabled): sets the cuDNN-attention flag."""
    _sdp["cudnn"] = _check_bool(enabled, "set_sdp_use_cudnn")


def allow_fp16_bf16_reduction_math_sdp(enabled):
    """allow_fp16_bf16_reduction_math_sdp(enabled): sets the fp16/bf16 reduction flag of math attention."""
    _sdp["fp16_bf16_reduction_math"] = _check_bool(enabled, "set_math_sdp_allow_fp16_bf16_reduction")


def fp16_bf16_reduction_math_sdp_allowed():
    """fp16_bf16_reduction_math_sdp_allowed() -> bool: that flag (False by default)."""
    return _sdp["fp16_bf16_reduction_math"]


def is_flash_attention_available():
    """is_flash_attention_available() -> bool: False (symtrace has no FlashAttention kernel)."""
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    sets the four attention-kernel flags inside the block and restores them after; deprecated, as
    torch's (a FutureWarning)."""
    warnings.warn("`symtrace.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager "
                  "will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, "
                  "with updated signature.", FutureWarning, stacklevel=3)
    saved = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math), mem_efficient=bool(enable_mem_efficient),
                cudnn=bool(enable_cudnn))
    try:
        yield {}
    finally:
        _sdp.update(saved)
