"""symtrace.nn.parameter: Parameter (a Tensor subclass that a Module registers
as a parameter, a leaf that requires grad by default), Buffer (a tensor that
a Module registers as a buffer when assigned as an attribute), and the
placeholders of lazy modules, UninitializedParameter / UninitializedBuffer
(torch.nn.parameter's names)."""
import weakref

from .. import _C
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad as _no_grad  # noqa: F401  (used by nn and optim)

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "UninitializedTensorMixin", "is_lazy"]


class Parameter(Tensor):
    """Parameter(data=None, requires_grad=True): a leaf aliasing data's storage."""

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
        memo[id(self)] = r    # (attributes set on it are not copied: torch's Parameter drops them)
        return r

    # pickling: Tensor.__reduce_ex__ (class, data, requires_grad; no .grad, as torch)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class _BufferMeta(type):
    """isinstance(x, Buffer) also holds for tensors flagged as buffers (UninitializedBuffer), as torch's."""

    def __instancecheck__(cls, instance):
        if cls is Buffer and isinstance(instance, _C.TensorBase) and getattr(instance, "_is_buffer", False):
            return True
        # type.__instancecheck__'s answer, written so that the translator follows it in
        # compiled code (Module.__setattr__, in module.train(), asks isinstance(v, Buffer))
        return cls in type(instance).__mro__


class Buffer(Tensor, metaclass=_BufferMeta):
    """Buffer(data=None, *, persistent=True): data (detached, keeping
    requires_grad) marked as a buffer: assigned as a Module attribute it is
    registered with register_buffer(name, it, persistent). torch returns a
    plain Tensor flagged as a buffer; symtrace's tensors take no attributes,
    so this is a Tensor subclass carrying `persistent`."""
    __slots__ = ("persistent",)

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.empty((0,), _C.float32)
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Buffer(): argument 'data' must be Tensor, not {type(data).__name__}")
        t = _C._make_subclass(cls, data.detach(), data.requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass

    @property
    def _is_buffer(self):
        return True

    def __reduce_ex__(self, proto):
        return (_rebuild_buffer, (self.detach(), self.requires_grad, self.persistent))


def _rebuild_buffer(data, requires_grad, persistent):
    return Buffer(data.requires_grad_(requires_grad) if requires_grad else data, persistent=persistent)


# ---------------- uninitialized parameters and buffers (lazy modules) ----------------
_UNINIT_MSG = ("Attempted to use an uninitialized parameter in {}. This error happens when you are using a "
               "`LazyModule` or explicitly manipulating `torch.nn.parameter.{}` objects. When using "
               "LazyModules Call `forward` with a dummy batch to initialize the parameters before calling "
               "torch functions")
# what may be used on an uninitialized tensor (torch's _allowed_methods), besides attributes
# that are not methods (dtype, device, requires_grad, grad, is_leaf, ...)
_ALLOWED = frozenset({"size", "copy_", "is_complex", "is_floating_point", "half", "float", "double", "char",
                      "short", "int", "long", "cuda", "cpu", "to", "get_device"})
# operators (looked up on the type, not through __getattribute__)
_BLOCKED_DUNDERS = ("__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
                    "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__", "__rfloordiv__",
                    "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
                    "__pos__", "__abs__", "__invert__", "__and__", "__rand__", "__or__", "__ror__", "__xor__",
                    "__rxor__", "__lshift__", "__rshift__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__",
                    "__ne__", "__getitem__", "__setitem__", "__len__", "__iter__", "__bool__", "__float__",
                    "__int__", "__index__", "__array__", "__contains__")


def _blocked(name):
    def method(self, *args, **kwargs):
        raise ValueError(_UNINIT_MSG.format(f"<function Tensor.{name}>", type(self).__name__))
    method.__name__ = name
    return method


class UninitializedTensorMixin:
    """The behaviour shared by UninitializedParameter and UninitializedBuffer:
    no data (an empty tensor standing for its dtype, device and requires_grad)
    until materialize(shape); any other use raises ValueError as torch's."""
    __hash__ = Tensor.__hash__
    _pickle_by_reduce = True      # symtrace.save pickles it by __reduce_ex__ (no data), not as a storage
    for _n in _BLOCKED_DUNDERS:
        locals()[_n] = _blocked(_n)
    del _n

    def __getattribute__(self, name):
        v = object.__getattribute__(self, name)
        if (name.startswith("__") or name in _ALLOWED or not callable(v) or name in UninitializedTensorMixin.__dict__
                or name in type(self).__dict__):
            return v
        if isinstance(getattr(type(self), name, None), (property, staticmethod, classmethod)):
            return v
        raise ValueError(_UNINIT_MSG.format(f"<method '{name}' of 'Tensor' objects>", type(self).__name__))

    def materialize(self, shape, device=None, dtype=None):
        """materialize(shape, device=None, dtype=None) -> None: this tensor takes storage of shape
        (uninitialized memory) and becomes its cls_to_become (Parameter or Tensor), in place as
        torch's: references taken before (an optimizer, `w = m.weight`) see the new data."""
        if device is None:
            device = self.device
        if dtype is None:
            dtype = self.dtype
        if isinstance(shape, int):
            shape = (shape,)
        data = _C.empty(tuple(int(s) for s in shape), dtype, None if str(device) == "cpu" else str(device))
        try:
            _C.TensorBase._set_data(self, data)
            object.__setattr__(self, "__class__", self.cls_to_become)
        except TypeError:   # a class of another layout: a new object takes this one's place
            pass
        else:
            for k in ("_owners", "_materialized"):
                self.__dict__.pop(k, None)
            from .modules.module import _bump_epoch
            _bump_epoch()
            return
        if self.cls_to_become is Parameter:
            new = Parameter(data, self.requires_grad)
        else:
            new = data.requires_grad_(True) if self.requires_grad else data
        self.__dict__["_materialized"] = new
        self._replace_in_owners(new)

    def _add_owner(self, module, table, name):
        """Module registration: module.<table>[name] holds this tensor (held weakly)."""
        owners = self.__dict__.setdefault("_owners", [])
        owners.append((weakref.ref(module), table, name))

    def _replace_in_owners(self, new):
        for ref, table, name in self.__dict__.get("_owners", ()):
            m = ref()
            if m is None:
                continue
            d = m.__dict__.get(table)
            if d is not None and d.get(name) is self:
                d[name] = new
                if isinstance(new, UninitializedTensorMixin):
                    new._add_owner(m, table, name)
        from .modules.module import _bump_epoch
        _bump_epoch()

    def _converted(self, t):
        """Module._apply: an uninitialized tensor of t's dtype and device in this one's place."""
        new = type(self)._like(self, t)
        self._replace_in_owners(new)
        return new

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing "
                           "their attributes.")

    @property
    def data(self):
        return Tensor.detach(self)

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        r = type(self)._like(self, self)
        memo[id(self)] = r
        return r


def is_lazy(param):
    """is_lazy(param) -> bool: param is an UninitializedParameter or UninitializedBuffer."""
    return isinstance(param, UninitializedTensorMixin)


def _empty_of(device, dtype):
    dev = None if device is None or str(device) == "cpu" else str(device)
    return _C.empty((0,), dtype or _C.float32, dev)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """UninitializedParameter(requires_grad=True, device=None, dtype=None): a Parameter
    whose shape is not known yet (lazy modules); materialize(shape) makes it a Parameter."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return _C._make_subclass(cls, _empty_of(device, dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    @staticmethod
    def _like(old, t):
        return UninitializedParameter(old.requires_grad, t.device, t.dtype)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """UninitializedBuffer(requires_grad=False, device=None, dtype=None, persistent=True): a
    buffer whose shape is not known yet (lazy modules); materialize(shape) makes it a Tensor."""
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        r = _C._make_subclass(cls, _empty_of(device, dtype), requires_grad)
        r.__dict__["persistent"] = persistent
        return r

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

    @property
    def _is_buffer(self):
        return True

    @staticmethod
    def _like(old, t):
        return UninitializedBuffer(old.requires_grad, t.device, t.dtype, old.__dict__.get("persistent", True))

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad, None, None, self.__dict__.get("persistent", True)))
