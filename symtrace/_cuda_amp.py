"""symtrace.cuda.amp: torch.cuda.amp's deprecated spellings, kept because
older training scripts use them (`from torch.cuda.amp import GradScaler,
autocast`): GradScaler(...) is amp.GradScaler('cuda', ...), autocast(...) is
amp.autocast('cuda', ...), custom_fwd / custom_bwd are amp's with
device_type='cuda'. Each warns FutureWarning, as torch's. Importable as a
module (symtrace.cuda is a module, so this one is registered in sys.modules)."""
import functools
import warnings

from . import amp as _amp
from ._dtype import float16 as _float16

__all__ = ["GradScaler", "autocast", "custom_fwd", "custom_bwd"]


def _deprecated(old, new):
    warnings.warn(f"`torch.cuda.amp.{old}(args...)` is deprecated. Please use `torch.amp.{new}('cuda', "
                  f"args...)` instead.", FutureWarning, stacklevel=3)


class GradScaler(_amp.GradScaler):
    """GradScaler(init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True): amp.GradScaler('cuda', ...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        _deprecated("GradScaler", "GradScaler")
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


class autocast(_amp.autocast):
    """autocast(enabled=True, dtype=symtrace.float16, cache_enabled=True):
    amp.autocast('cuda', ...)."""

    def __init__(self, enabled=True, dtype=_float16, cache_enabled=True):
        _deprecated("autocast", "autocast")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """amp.custom_fwd(device_type='cuda', cast_inputs=cast_inputs)."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    if fwd is None:
        return functools.partial(_amp.custom_fwd, device_type="cuda", cast_inputs=cast_inputs)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """amp.custom_bwd(device_type='cuda')."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    if bwd is None:
        return functools.partial(_amp.custom_bwd, device_type="cuda")
    return _amp.custom_bwd(bwd, device_type="cuda")
