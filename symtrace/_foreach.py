"""torch's list-wise _foreach_* functions (torch._foreach_mul_, _foreach_add_, _foreach_lerp_,
_foreach_norm, ...), as EMA and optimizer code calls them: one ordinary symtrace op per
tensor of the list (no fused multi-tensor kernel). Out-of-place forms return a tuple of new
tensors, in-place forms update each tensor and return the list given, as torch does. The
second operand of a binary op may be a number, a list of numbers, a list of tensors or one
tensor; lists must have as many entries as the first list. symtrace/__init__.py exports
them."""
import numbers

from . import _ops as _o
from ._tensor import Tensor

__all__ = []


def _check_list(name, tensors, what="self"):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument '{what}' must be a list or tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{what}' must be a list of Tensors, "
                            f"but found an element of type {type(t).__name__}")
    return tensors


def _operands(name, n, other, what="other"):
    """other, spread to n operands: a number or one tensor repeated, or a list of n."""
    if isinstance(other, (list, tuple)):
        if len(other) != n:
            if other and all(isinstance(o, Tensor) for o in other):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, "
                                   f"got {n} and {len(other)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        for o in other:
            if not isinstance(o, (Tensor, numbers.Number)):
                raise TypeError(f"{name}(): argument '{what}' must hold Tensors or numbers, "
                                f"not {type(o).__name__}")
        return list(other)
    if isinstance(other, Tensor):
        if name.startswith(("_foreach_mul", "_foreach_div", "_foreach_add", "_foreach_sub")) \
                and other.ndim == 0:
            return [other] * n
        if other.ndim == 1 and other.numel() == n and what in ("scalars", "value"):
            return [float(v) for v in other.tolist()]
        raise RuntimeError(f"{name}(): a single tensor operand must be 0-dimensional, got "
                           f"shape {tuple(other.shape)}")
    if isinstance(other, numbers.Number):
        return [other] * n
    raise TypeError(f"{name}(): argument '{what}' must be a number, a Tensor or a list, "
                    f"not {type(other).__name__}")


def _finish(tensors, results, inplace):
    """results: new tensors (out-of-place) or, in place, the values the tensors take (None
    where an in-place method already updated the tensor)."""
    if not inplace:
        return tuple(results)
    for t, r in zip(tensors, results):
        if r is not None:
            t.copy_(r)
    return tensors


def _method(t, base):
    """t's in-place method for base (Tensor.mul_), or None."""
    return getattr(t, base + "_", None)


def _make_binary(base, fn, alpha_ok=False):
    def make(inplace):
        name = f"_foreach_{base}{'_' if inplace else ''}"

        def f(self, other, *, alpha=None):
            ts = _check_list(name, self)
            if alpha is not None and not alpha_ok:
                raise TypeError(f"{name}() got an unexpected keyword argument 'alpha'")
            if alpha is not None and not isinstance(other, Tensor) and \
                    not (isinstance(other, (list, tuple)) and other and isinstance(other[0], Tensor)):
                raise TypeError(f"{name}(): alpha is only taken with a Tensor or a list of "
                                f"Tensors as the second operand")
            ops = _operands(name, len(ts), other)
            a = 1 if alpha is None else alpha
            ops = [o if a == 1 else o * a for o in ops]
            if inplace and base in ("add", "sub", "mul", "div"):
                for t, o in zip(ts, ops):
                    _method(t, base)(o)
                return ts
            return _finish(ts, [fn(t, o) for t, o in zip(ts, ops)], inplace)
        f.__name__ = f.__qualname__ = name
        return f
    return make(False), make(True)


def _make_unary(base, fn):
    def make(inplace):
        name = f"_foreach_{base}{'_' if inplace else ''}"

        def f(self):
            ts = _check_list(name, self)
            if inplace and _method(ts[0], base) is not None:
                for t in ts:
                    _method(t, base)()
                return ts
            return _finish(ts, [fn(t) for t in ts], inplace)
        f.__name__ = f.__qualname__ = name
        return f
    return make(False), make(True)


def _export(name, fn):
    globals()[name] = fn
    __all__.append(name)


def _tensor_like(t, o):
    """o, or the number o as a tensor like t (maximum / minimum take tensors)."""
    return o if isinstance(o, Tensor) else _o.full_like(t, o)


_BINARY = {
    "add": (lambda t, o: t + o, True), "sub": (lambda t, o: t - o, True),
    "mul": (lambda t, o: t * o, False), "div": (lambda t, o: t / o, False),
    "maximum": (lambda t, o: _o.maximum(t, _tensor_like(t, o)), False),
    "minimum": (lambda t, o: _o.minimum(t, _tensor_like(t, o)), False),
    "clamp_min": (lambda t, o: _o.maximum(t, _tensor_like(t, o)), False),
    "clamp_max": (lambda t, o: _o.minimum(t, _tensor_like(t, o)), False),
}
for _b, (_fn, _alpha) in _BINARY.items():
    _oop, _inp = _make_binary(_b, _fn, _alpha)
    _export(f"_foreach_{_b}", _oop)
    _export(f"_foreach_{_b}_", _inp)

_UNARY = ["abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc"]
for _u in _UNARY:
    _oop, _inp = _make_unary(_u, getattr(_o, _u))
    _export(f"_foreach_{_u}", _oop)
    _export(f"_foreach_{_u}_", _inp)


def _pow(inplace):
    name = f"_foreach_pow{'_' if inplace else ''}"

    def f(self, exponent):
        if isinstance(self, numbers.Number) and not inplace:      # _foreach_pow(2.0, list)
            ts = _check_list(name, exponent, "exponent")
            return tuple(_o.pow(self, t) for t in ts)
        ts = _check_list(name, self)
        ops = _operands(name, len(ts), exponent, "exponent")
        if inplace:
            for t, e in zip(ts, ops):
                t.pow_(e)
            return ts
        return tuple(_o.pow(t, e) for t, e in zip(ts, ops))
    f.__name__ = f.__qualname__ = name
    return f


def _lerp(inplace):
    name = f"_foreach_lerp{'_' if inplace else ''}"

    def f(self, tensors1, weight):
        ts = _check_list(name, self)
        ends = _check_list(name, tensors1, "tensors1")
        if len(ends) != len(ts):
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                               f"{len(ts)} and {len(ends)}")
        ws = _operands(name, len(ts), weight, "weight")
        if inplace:
            for t, e, w in zip(ts, ends, ws):
                t.lerp_(e, w)
            return ts
        return tuple(_o.lerp(t, e, w) for t, e, w in zip(ts, ends, ws))
    f.__name__ = f.__qualname__ = name
    return f


def _addc(base, op):
    def make(inplace):
        name = f"_foreach_{base}{'_' if inplace else ''}"

        def f(self, tensor1, tensor2, scalars=None, *, value=None):
            ts = _check_list(name, self)
            a = _check_list(name, tensor1, "tensor1")
            b = _check_list(name, tensor2, "tensor2")
            if not len(a) == len(b) == len(ts):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                                   f"{len(ts)}, {len(a)} and {len(b)}")
            if scalars is not None and value is not None:
                raise TypeError(f"{name}() got both 'scalars' and 'value'")
            v = scalars if scalars is not None else (1 if value is None else value)
            if value is not None and not isinstance(value, numbers.Number):
                raise TypeError(f"{name}(): argument 'value' must be a number, "
                                f"not {type(value).__name__}")
            vs = _operands(name, len(ts), v, "scalars")
            if inplace:
                for t, x, y, s in zip(ts, a, b, vs):
                    getattr(t, base + "_")(x, y, value=s)
                return ts
            return tuple(op(t, x, y, value=s) for t, x, y, s in zip(ts, a, b, vs))
        f.__name__ = f.__qualname__ = name
        return f
    return make(False), make(True)


for _n, _f in (("pow", _pow), ("lerp", _lerp)):
    _export(f"_foreach_{_n}", _f(False))
    _export(f"_foreach_{_n}_", _f(True))
for _n, _op in (("addcmul", _o.addcmul), ("addcdiv", _o.addcdiv)):
    _oop, _inp = _addc(_n, _op)
    _export(f"_foreach_{_n}", _oop)
    _export(f"_foreach_{_n}_", _inp)


def _foreach_norm(self, ord=2, dtype=None):
    """A 0-d tensor per tensor: its vector norm of order ord."""
    ts = _check_list("_foreach_norm", self)
    from .linalg import vector_norm
    return tuple(vector_norm(t, ord, dtype=dtype) for t in ts)


def _foreach_max(self):
    ts = _check_list("_foreach_max", self)
    return tuple(t.max() for t in ts)


def _foreach_clone(self):
    return tuple(t.clone() for t in _check_list("_foreach_clone", self))


def _foreach_zero_(self):
    ts = _check_list("_foreach_zero_", self)
    for t in ts:
        t.zero_()
    return ts


def _foreach_copy_(self, src, non_blocking=False):
    ts = _check_list("_foreach_copy_", self)
    ss = _check_list("_foreach_copy_", src, "src")
    if len(ss) != len(ts):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                           f"{len(ts)} and {len(ss)}")
    for t, s in zip(ts, ss):
        t.copy_(s)
    return ts


__all__ += ["_foreach_norm", "_foreach_max", "_foreach_clone", "_foreach_zero_",
            "_foreach_copy_"]
