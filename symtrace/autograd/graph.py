"""symtrace.autograd.graph: hooks on the tensors autograd saves for backward, as
torch.autograd.graph: saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks.

    with symtrace.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = f(x)          # every tensor saved for backward goes through pack_hook
    y.sum().backward()    # ... and comes back through unpack_hook

The pairs live on a thread-local stack in the C runtime (st_ad_saved_hooks_push in
runtime/st_runtime.h); the innermost pair packs. Op nodes pack at record time and
unpack each time a backward runs them; autograd.Function's ctx.save_for_backward packs
once its node is recorded and ctx.saved_tensors unpacks (function.py). As in torch:
pack_hook(tensor) -> any object runs with grad mode off; unpack_hook(obj) -> Tensor
runs on every backward through the node (twice with retain_graph=True and two
backwards); with hooks, an in-place change of a saved tensor is not detected (the
hooks own the value); a pack hook that modifies its input in place raises; the packed
objects are released with the node's saved tensors (after a backward without
retain_graph, or when the graph goes).

Differences from torch:
- a saved *output* reaches pack_hook as a detached alias (requires_grad False), not
  as the output itself: torch's identity hook on an output makes a reference cycle
  through the output's grad_fn that even gc does not free. Saved inputs are the
  inputs themselves, as torch.
- what unpack_hook returns must have the saved tensor's dtype and shape (and the
  gradients' device), or backward raises RuntimeError naming the node (torch fails
  later, or silently casts a dtype).
- under symtrace.compile: while any pair is active, frames run as plain Python (the
  eval-frame hook is suspended, as symtrace.compiler.disable does), so compiled graphs,
  whose "CompiledFunctionBackward" nodes keep their saved tensors in C, never skip the
  hooks: the call runs eagerly and each op's saved tensors are packed.
"""
import contextlib
import threading

from .. import _C

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]

_tls = threading.local()   # .disabled: the error message of disable_saved_tensors_hooks


class saved_tensors_hooks:
    """Context manager: pack_hook(tensor) -> object runs on each tensor saved for
    backward inside it, unpack_hook(object) -> Tensor when backward needs it. Nestable:
    the innermost pair applies. Reusable, not reentrant (as torch's)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        msg = getattr(_tls, "disabled", None)
        if msg is not None:
            raise RuntimeError(msg)
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        # compiled frames keep their saved tensors in C: run them plain meanwhile
        _C._fe_suspend(1)

    def __exit__(self, *args):
        _C._fe_suspend(-1)
        _C._pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Tensors saved for backward inside it are kept on the CPU and moved back to their
    device when backward needs them (torch.autograd.graph.save_on_cpu). A CPU tensor is
    kept as it is (no copy), as torch. pin_memory is accepted; symtrace has no pinned
    host memory, so the copies are plain synchronous ones. device_type as torch's
    (only "cuda" means anything here)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        self.pin_memory = bool(pin_memory)
        self.device_type = device_type

        def pack_to_cpu(tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Inside it, entering saved_tensors_hooks (or save_on_cpu) raises
    RuntimeError(error_message); entering it while hooks are active raises the same
    (as torch 2.13)."""
    prev = getattr(_tls, "disabled", None)
    if _C._saved_tensors_hooks_top() is not None:
        raise RuntimeError(error_message)
    _tls.disabled = error_message
    try:
        yield
    finally:
        _tls.disabled = prev


def _current_hooks():
    """The innermost (pack_hook, unpack_hook) on this thread, or None."""
    return _C._saved_tensors_hooks_top()
