"""Shared helpers of the functional ops (symtrace._ops): the attrs tuple and flag bits
that _C.op takes, tensor and int argument checks, dim wrapping, torch's dtype names for
error messages, a number rounded to float32 (f32), the largest finite value of each float dtype and the broadcast of
shapes. It imports nothing else from symtrace._ops, so every other file can import it."""
import builtins
import math
import struct

from .. import _C

KEEPDIM, HAS_WEIGHT, HAS_BIAS, TANH, HAS_MIN, HAS_MAX, INT_VALUE = 1, 2, 4, 8, 16, 32, 64

_op = _C.op


def f32(v):
    """The float32 nearest the Python number v, as a Python float (torch's float32 opmath
    scalars and coordinates); beyond float32's range, an infinity of v's sign."""
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _attrs(ints=None, floats=None, dims=None, flags=0, dtype=None):
    return (ints, floats, dims, flags, dtype)


def _dims(dim, ndim=None):
    """dim as PyTorch takes it (None, int, or a sequence) -> tuple or None (all)."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        return tuple(dim)
    return (dim,)


def _no_grad():
    """autograd.no_grad() (imported when first used: autograd imports the ops)."""
    from ..autograd.grad_mode import no_grad
    return no_grad()


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _check_tensor(x, fn, name="input"):
    if not _is_tensor(x):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _wrap(dim, nd, fn):
    if not -nd <= dim < builtins.max(nd, 1):
        raise IndexError(f"{fn}: Dimension out of range (expected to be in range of "
                         f"[{-nd}, {nd - 1}], but got {dim})")
    return dim + nd if dim < 0 else dim


_TNAME = {"symtrace.float32": "Float", "symtrace.float64": "Double", "symtrace.float16": "Half",
          "symtrace.bfloat16": "BFloat16", "symtrace.int32": "Int", "symtrace.int64": "Long",
          "symtrace.uint8": "Byte", "symtrace.int8": "Char", "symtrace.int16": "Short",
          "symtrace.bool": "Bool"}
_FMAX = {"symtrace.float32": 3.4028234663852886e38, "symtrace.float64": 1.7976931348623157e308,
         "symtrace.float16": 65504.0, "symtrace.bfloat16": 3.3895313892515355e38}


def _tname(dt):
    """A dtype as torch's error messages name it ('Float', 'Long', ...)."""
    return _TNAME.get(str(dt), str(dt))


def _check_grad_dtype(input, dtype):
    """torch refuses an integer or bool dtype= on a sum, prod, cumsum, cumprod or nansum
    whose input needs a gradient in grad mode (the result could not carry it)."""
    if getattr(dtype, "is_floating_point", True) is False and _is_tensor(input) and \
            input.requires_grad and _C._is_grad_enabled():   # (bad dtypes are refused later)
        raise RuntimeError(f"Autograd not support dtype: {_tname(dtype)}")


def _wrap_dims(dims, nd, fn):
    """Wrapped, checked reduction dims (a 0-d tensor takes dim 0 and -1, as in torch)."""
    out = tuple(_wrap(d, builtins.max(nd, 1), fn) for d in dims)
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"{fn}: dim {d} appears multiple times in the list of dims")
    return out


def _check_int(v, fn, name, pos):
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be int, not {type(v).__name__}")


def _bshape(*shapes):
    """The broadcast of shapes (torch's rule), or a RuntimeError naming the mismatch."""
    nd = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for k, v in enumerate((1,) * (nd - len(s)) + tuple(s)):
            if v != 1:
                if out[k] not in (1, v):
                    raise RuntimeError(f"The size of tensor a ({out[k]}) must match the size of "
                                       f"tensor b ({v}) at non-singleton dimension {k}")
                out[k] = v
    return tuple(out)
