"""symtrace.autograd.Variable: the legacy name of a tensor (torch.autograd.Variable).
Variable(data, requires_grad=False) returns a plain Tensor aliasing data's storage
outside its history; isinstance(x, Variable) holds for every tensor."""
import warnings

from .. import _C

__all__ = ["Variable"]


class VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.TensorBase)


class Variable(metaclass=VariableMeta):
    """Variable(data=None, requires_grad=False, volatile=False) -> Tensor: data detached (a
    new leaf sharing its storage) with requires_grad set; an empty tensor without data."""

    def __new__(cls, data=None, requires_grad=False, volatile=False, _grad_fn=None):
        if data is None:
            data = _C.empty((0,), _C.float32)
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
        t = data.detach()
        if requires_grad:
            if not (t.dtype.is_floating_point or t.dtype.is_complex):
                raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
            t.requires_grad_(True)
        return t
