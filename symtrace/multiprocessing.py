"""symtrace.multiprocessing: how multiprocessing (queues, pools, Process
arguments) sends tensors, as torch.multiprocessing's reductions: registered
with multiprocessing's ForkingPickler when symtrace is imported. A non-leaf
that requires grad is refused (its graph cannot cross processes); anything
else pickles as with pickle (Tensor.__reduce_ex__): bytes through the pipe,
no shared memory, so the receiver gets a copy."""
import multiprocessing
from multiprocessing.reduction import ForkingPickler

__all__ = ["init_reductions"]


def _reduce_tensor(t):
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the data, "
            "call detach() on the tensor before serializing (e.g., putting it on the queue).")
    return t.__reduce_ex__(4)


def init_reductions():
    """Registers the reduction for Tensor and Parameter (ForkingPickler's
    table is keyed by exact class; other subclasses go through their own
    __reduce_ex__, which is Tensor's)."""
    from ._tensor import Tensor
    from .nn.parameter import Parameter
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, _reduce_tensor)


def __getattr__(name):   # the rest of multiprocessing, as torch.multiprocessing re-exports it
    return getattr(multiprocessing, name)
