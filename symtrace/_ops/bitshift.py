"""The bit shifts bitwise_left_shift and bitwise_right_shift (the << and >> of integer tensors),
written exactly over integer mul, floor_divide, remainder and pow, with torch's semantics:
two's complement wrap of the left shift in the result dtype; an arithmetic right shift for
the signed dtypes, a logical one for uint8; a negative shift or one >= the bit width gives 0
(left) or the sign fill (right). Every intermediate fits int64: no overflow is relied on."""
from .._dtype import bool_, int64
from ._core import _bshape, _is_tensor, _tname
from .elementwise import (add, floor_divide, ge, logical_or, lt, mul, pow, remainder, result_type,
                          sub, to_dtype, where)
from .creation import full

_SHIFT_BITS = {"symtrace.uint8": 8, "symtrace.int8": 8, "symtrace.int16": 16, "symtrace.int32": 32,
         "symtrace.int64": 64}


def _shift_operands(fn, kernel, input, other):
    """(input, shift) as int64 tensors holding the values torch shifts (a number first wrapped to
    the result dtype, a shift first cast to it, as torch does), the result dtype and its bits."""
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError(f"{fn}() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__})")
    for name, v in (("input", input), ("other", other)):
        if not _is_tensor(v) and (not isinstance(v, (int, float)) or isinstance(v, complex)):
            raise TypeError(f"{fn}(): argument '{name}' must be Tensor or Number, "
                            f"not {type(v).__name__}")
    if _is_tensor(input) and _is_tensor(other):
        _bshape(tuple(input.shape), tuple(other.shape))    # torch's broadcast error, first
    dt = result_type(input, other)
    if dt.is_floating_point or dt is bool_:
        raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for '{_tname(dt)}'")
    bits = _SHIFT_BITS[str(dt)]
    dev = (input if _is_tensor(input) else other).device

    def as64(v):
        if _is_tensor(v):
            return to_dtype(to_dtype(v, dt), int64)
        v = int(v) % (1 << bits)                       # the number wrapped to dt, as torch's
        if str(dt) != "symtrace.uint8" and v >= 1 << (bits - 1):
            v -= 1 << bits
        return full((), v, dtype=int64, device=dev)
    return as64(input), as64(other), dt, bits


def _check_inplace(fn, input, other):
    """An in-place shift: torch first checks that the result dtype casts to input's."""
    dt = result_type(input, other)
    if dt.is_floating_point and not input.dtype.is_floating_point:
        raise RuntimeError(f"result type {_tname(dt)} can't be cast to the desired output type "
                           f"{_tname(input.dtype)}")


def _wrap_bits(r, dt, bits):
    """r (int64, in [-2**62, 2**62]) reduced to dt's range modulo 2**bits, then cast to dt."""
    r = remainder(r, 1 << bits)
    if str(dt) != "symtrace.uint8":
        r = where(ge(r, 1 << (bits - 1)), sub(r, 1 << bits), r)
    return to_dtype(r, dt)


def _shl64(a, s):
    """a << s modulo 2**64 (int64 a, int64 s in [0, 63]) over 32-bit halves, exactly: for
    s >= 32 the low half shifted by s - 32 is the high half, the low half 0."""
    lo, hi = remainder(a, 1 << 32), floor_divide(a, 1 << 32)
    big = ge(s, 32)
    hi, lo, t = where(big, lo, hi), where(big, 0, lo), where(big, sub(s, 32), s)
    p = pow(2, t)
    low = mul(lo, p)                                   # < 2**63
    high = remainder(add(mul(hi, p), floor_divide(low, 1 << 32)), 1 << 32)
    high = where(ge(high, 1 << 31), sub(high, 1 << 32), high)
    return add(mul(high, 1 << 32), remainder(low, 1 << 32))


def bitwise_left_shift(input, other):
    """bitwise_left_shift(input, other): input << other for integer tensors (either may be a
    number), as torch: wraps in the result dtype; a shift < 0 or >= the bit width gives 0."""
    a, s, dt, bits = _shift_operands("bitwise_left_shift", "lshift", input, other)
    bad = logical_or(lt(s, 0), ge(s, bits))
    s = where(bad, 0, s)
    if bits == 64:
        r = to_dtype(_shl64(a, s), dt)
    else:
        r = _wrap_bits(mul(a, pow(2, s)), dt, bits)       # |a| < 2**31, 2**s <= 2**31
    return where(bad, 0, r)


def bitwise_right_shift(input, other):
    """bitwise_right_shift(input, other): input >> other for integer tensors, as torch:
    arithmetic for signed dtypes (floor division by 2**other), logical for uint8; a shift < 0
    or >= the bit width gives the sign fill (-1 or 0)."""
    a, s, dt, bits = _shift_operands("bitwise_right_shift", "rshift", input, other)
    s = where(logical_or(lt(s, 0), ge(s, bits)), bits, s)   # floor(a / 2**bits): the sign fill
    half = floor_divide(s, 2)                               # two steps keep 2**k <= 2**32
    r = floor_divide(floor_divide(a, pow(2, half)), pow(2, sub(s, half)))
    return to_dtype(r, dt)
