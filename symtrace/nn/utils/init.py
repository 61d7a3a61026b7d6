"""symtrace.nn.utils.init: skip_init, as torch.nn.utils.init."""
import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """skip_init(module_cls, *args, **kwargs) -> module_cls(*args, **kwargs)
    with device= passed on, for classes whose constructor takes `device`, as
    torch's. torch builds the module on the meta device and gives it
    uninitialized storage; symtrace has no meta device, so the parameters are
    initialized as usual (any values are valid for "uninitialized")."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs)
