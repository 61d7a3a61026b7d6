"""symtrace.nn.Parameter: a Tensor subclass that a Module registers as a
parameter (a leaf that requires grad by default)."""
from .. import _C
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad as _no_grad  # noqa: F401  (used by nn and optim)


class Parameter(Tensor):
    """Parameter(data=None, requires_grad=True): a leaf aliasing data's storage."""
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty((0,), _C.float32)
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        return _C._make_subclass(cls, data.detach(), requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        r = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = r
        return r

    # pickling: Tensor.__reduce_ex__ (class, data, requires_grad; no .grad, as torch)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

