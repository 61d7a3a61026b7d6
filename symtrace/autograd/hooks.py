"""Gradient hooks of one tensor's gradient slot (Tensor.register_hook,
Tensor.register_post_accumulate_grad_hook). The C engine holds one
_GradHooks per slot (a leaf's own, or an output of a grad_fn: see
st_ad_set_hooks in runtime/st_runtime.h) and calls it with the slot's whole
gradient before that gradient is used; retain_grad is the engine's own and
runs after these, as in PyTorch."""
from collections import OrderedDict

from .. import _C
from ..utils.hooks import RemovableHandle


def _name(hook):
    return getattr(hook, "__name__", None) or type(hook).__name__


def _tensor_kind(t):
    return f"{t.device.type}.{t.dtype}"


class _GradHooks:
    __slots__ = ("pre", "post")

    def __init__(self):
        self.pre = OrderedDict()    # id -> hook(grad) -> Tensor or None
        self.post = OrderedDict()   # id -> hook(leaf) -> None

    def __call__(self, grad):
        for hook in tuple(self.pre.values()):
            r = hook(grad)
            if r is None:
                continue
            if not isinstance(r, _C.TensorBase):
                raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
            if tuple(r.shape) != tuple(grad.shape):
                raise RuntimeError(f"hook '{_name(hook)}' has changed the size of value "
                                   f"(was {list(grad.shape)} got {list(r.shape)})")
            if r.dtype != grad.dtype or r.device != grad.device:
                raise RuntimeError(f"hook '{_name(hook)}' has changed the type of value "
                                   f"(was {_tensor_kind(grad)} got {_tensor_kind(r)})")
            grad = r
        return grad

    def _post(self, tensor):
        for hook in tuple(self.post.values()):
            if hook(tensor) is not None:
                raise RuntimeError(f"post accumulate grad hook '{_name(hook)}' returned a "
                                   "value; it must return None")


def _slot_hooks(tensor, what):
    if not tensor.requires_grad:
        raise RuntimeError(f"cannot register a {what} on a tensor that doesn't require gradient")
    h = _C._grad_hooks(tensor)
    if h is None:
        h = _GradHooks()
        _C._set_grad_hooks(tensor, h)
    return h


def _handle(table, hook):
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(table)
    table[handle.id] = hook
    return handle


def register_hook(tensor, hook):
    """Tensor.register_hook: hook(grad) -> Tensor or None runs each time the
    gradient with respect to tensor is computed; a returned tensor replaces it."""
    return _handle(_slot_hooks(tensor, "hook").pre, hook)


def register_post_accumulate_grad_hook(tensor, hook):
    """Tensor.register_post_accumulate_grad_hook: hook(tensor) runs after
    backward() has accumulated into the leaf's .grad."""
    if not tensor.is_leaf:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    return _handle(_slot_hooks(tensor, "post accumulate grad hook").post, hook)
