"""SymInt: a tensor size while symtrace.compile(dynamic=True) translates a
frame (frontend/tr_dynamic.c).

It is an int with the real value, so the translated code computes what it
always does; what the translator learns is where the value came from. +, -,
*, //, %, unary - and abs() on SymInts and ints give SymInts (their expressions
become reshape targets and creation sizes of the graph); a comparison
records a guard on the relation it found (x.shape[0] > 2), so the compiled
graph is used only where the code would take the same branches. Anything
else (hashing, formatting, true division, float(), int(), passing it to
code the translator does not follow) specializes it: its value becomes a
constant of the guards. Outside a translation it behaves as its int.
"""
from . import _C


def _spec(x):
    return _C._sym_spec(x)


class SymInt(int):
    __slots__ = ()

    # arithmetic that stays symbolic
    def __add__(self, o): return _C._sym_op(0, self, o)
    def __radd__(self, o): return _C._sym_op(0, o, self)
    def __sub__(self, o): return _C._sym_op(1, self, o)
    def __rsub__(self, o): return _C._sym_op(1, o, self)
    def __mul__(self, o): return _C._sym_op(2, self, o)
    def __rmul__(self, o): return _C._sym_op(2, o, self)
    def __floordiv__(self, o): return _C._sym_op(3, self, o)
    def __rfloordiv__(self, o): return _C._sym_op(3, o, self)
    def __mod__(self, o): return _C._sym_op(4, self, o)
    def __rmod__(self, o): return _C._sym_op(4, o, self)
    def __neg__(self): return _C._sym_op(5, self, 0)
    def __pos__(self): return self
    # abs(n): a guard on n >= 0, then n or -n (both expressions)
    def __abs__(self): return self if self >= 0 else -self

    # comparisons: a guard on the relation
    def __lt__(self, o): return _C._sym_cmp(0, self, o)
    def __le__(self, o): return _C._sym_cmp(1, self, o)
    def __eq__(self, o): return _C._sym_cmp(2, self, o)
    def __ne__(self, o): return _C._sym_cmp(3, self, o)
    def __gt__(self, o): return _C._sym_cmp(4, self, o)
    def __ge__(self, o): return _C._sym_cmp(5, self, o)
    def __bool__(self): return _C._sym_cmp(3, self, 0)

    # everything else specializes
    def __hash__(self): return hash(_spec(self))
    def __index__(self): return _spec(self)
    def __int__(self): return _spec(self)
    def __float__(self): return float(_spec(self))
    def __invert__(self): return ~_spec(self)
    def __truediv__(self, o): return _spec(self) / o
    def __rtruediv__(self, o): return o / _spec(self)
    def __pow__(self, o, m=None): return pow(_spec(self), o, m)
    def __rpow__(self, o): return o ** _spec(self)
    def __divmod__(self, o): return divmod(_spec(self), o)
    def __rdivmod__(self, o): return divmod(o, _spec(self))
    def __lshift__(self, o): return _spec(self) << o
    def __rshift__(self, o): return _spec(self) >> o
    def __and__(self, o): return _spec(self) & o
    def __or__(self, o): return _spec(self) | o
    def __xor__(self, o): return _spec(self) ^ o
    # the reflected ones too: int's own (1 << n) would read the value unguarded
    def __rlshift__(self, o): return o << _spec(self)
    def __rrshift__(self, o): return o >> _spec(self)
    def __rand__(self, o): return o & _spec(self)
    def __ror__(self, o): return o | _spec(self)
    def __rxor__(self, o): return o ^ _spec(self)
    def __round__(self, n=None): return round(_spec(self), n)
    def __repr__(self): return repr(_spec(self))
    def __str__(self): return str(_spec(self))
    def __format__(self, spec): return format(_spec(self), spec)
    def __reduce__(self): return (int, (_spec(self),))


def _lz(x):
    return _C._lazy_spec(x)


class _LazyScalar:
    """Shared by LazyInt and LazyFloat: a number argument of a frame being
    translated, guarded only when its value is used. Passed on, stored or
    returned as it is, it is read from the frame again on every call (no
    guard on its value); any operation specializes it: its value becomes a
    guarded constant, as every number argument was before."""
    __slots__ = ()

    def __add__(self, o): return _lz(self) + o
    def __radd__(self, o): return o + _lz(self)
    def __sub__(self, o): return _lz(self) - o
    def __rsub__(self, o): return o - _lz(self)
    def __mul__(self, o): return _lz(self) * o
    def __rmul__(self, o): return o * _lz(self)
    def __truediv__(self, o): return _lz(self) / o
    def __rtruediv__(self, o): return o / _lz(self)
    def __floordiv__(self, o): return _lz(self) // o
    def __rfloordiv__(self, o): return o // _lz(self)
    def __mod__(self, o): return _lz(self) % o
    def __rmod__(self, o): return o % _lz(self)
    def __divmod__(self, o): return divmod(_lz(self), o)
    def __rdivmod__(self, o): return divmod(o, _lz(self))
    def __pow__(self, o, m=None): return pow(_lz(self), o, m) if m is not None else _lz(self) ** o
    def __rpow__(self, o): return o ** _lz(self)
    def __neg__(self): return -_lz(self)
    def __pos__(self): return +_lz(self)
    def __abs__(self): return abs(_lz(self))
    def __lt__(self, o): return _lz(self) < o
    def __le__(self, o): return _lz(self) <= o
    def __eq__(self, o): return _lz(self) == o
    def __ne__(self, o): return _lz(self) != o
    def __gt__(self, o): return _lz(self) > o
    def __ge__(self, o): return _lz(self) >= o
    def __bool__(self): return bool(_lz(self))
    def __hash__(self): return hash(_lz(self))
    def __int__(self): return int(_lz(self))
    def __float__(self): return float(_lz(self))
    def __round__(self, n=None): return round(_lz(self), n)
    def __repr__(self): return repr(_lz(self))
    def __str__(self): return str(_lz(self))
    def __format__(self, spec): return format(_lz(self), spec)


class LazyInt(_LazyScalar, int):
    __slots__ = ()

    def __index__(self): return _lz(self)
    def __invert__(self): return ~_lz(self)
    def __lshift__(self, o): return _lz(self) << o
    def __rshift__(self, o): return _lz(self) >> o
    def __rlshift__(self, o): return o << _lz(self)
    def __rrshift__(self, o): return o >> _lz(self)
    def __and__(self, o): return _lz(self) & o
    def __rand__(self, o): return o & _lz(self)
    def __or__(self, o): return _lz(self) | o
    def __ror__(self, o): return o | _lz(self)
    def __xor__(self, o): return _lz(self) ^ o
    def __rxor__(self, o): return o ^ _lz(self)
    def __reduce__(self): return (int, (_lz(self),))


class LazyFloat(_LazyScalar, float):
    __slots__ = ()

    def __reduce__(self): return (float, (_lz(self),))


def dyn_inline(fn):
    """Marks a library function whose shape math dynamic shapes can follow:
    under symtrace.compile(dynamic=True) the translator inlines it (its
    tensors' sizes are SymInts there, so reshape targets and creation sizes
    stay expressions) instead of running it for real on plain ints. A graph
    break inside it translates the frame again with static shapes. Only
    +, -, *, //, % and comparisons on sizes, and shape-taking calls the
    translator knows (view/reshape/expand, zeros/ones/full/empty, cat)."""
    fn._symtrace_dyn_inline = True
    return fn
