"""Small number functions of torch written over the elementwise primitives: round with
torch's decimals= (the primitive rounds to an integer; this round replaces it in symtrace and
symtrace._ops); isposinf, isneginf and isreal; fmax and fmin (NaN-ignoring maximum and minimum); ldexp; frexp and
nextafter, exact (the binary exponent found from log2 and corrected by comparisons with
exact powers of two, the step a power of two, so every result is the exact IEEE one,
subnormals included); gcd and lcm of integer tensors (Euclid's algorithm unrolled to its
worst case, 46 steps for int32 and 92 for int64, each a where)."""
import builtins
import collections
import math

from .._dtype import bfloat16, bool_, float16, float32, float64, int32
from .._symint import dyn_inline
from ._core import _bshape, _check_tensor, _tname
from .elementwise import (abs, add, div, eq, floor, floor_divide, ge, gt, le, log, logical_and,
                          logical_not, logical_or, lt, mul, ne, neg, pow, remainder, result_type,
                          sub, to_dtype, where)
from .elementwise import round as _round
from .creation import full, ones_like, zeros_like
from .float_math import _two_tensors, isinf, isnan
from .special_core import _out, _with_grad

_INV_LN2 = 1.0 / math.log(2.0)


# ---- round(input, *, decimals=0) ----
def round(input, *, decimals=0, out=None):
    """round(input, *, decimals=0, out=None) -> Tensor: rounded half to even to decimals
    decimal places (negative: to the left of the point), computed as torch's:
    round(x * 10**d) / 10**d, or round(x / 10**-d) * 10**-d; gradient 0; as torch.round."""
    _check_tensor(input, "round")
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round(): argument 'decimals' must be int, not {type(decimals).__name__}")
    if decimals == 0:
        return _out(_round(input), out, "round")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"round_cpu\" not implemented for '{_tname(input.dtype)}'")
    if input.dtype in (float16, bfloat16):
        # torch scales half inputs in float32 (x * 10**d overflows float16)
        return _out(round(input.float(), decimals=decimals).to(input.dtype), out, "round")
    p = 10.0 ** builtins.abs(decimals)
    r = mul(_round(div(input, p)), p) if decimals < 0 else div(_round(mul(input, p)), p)
    return _out(r, out, "round")


# ---- predicates ----
# dyn_inline: an integer input's constant result is a *_like of it, whose size stays
# an expression under dynamic shapes
@dyn_inline
def isposinf(input, *, out=None):
    """isposinf(input, *, out=None) -> bool Tensor: input == +inf (False for integers and
    bools), as torch.isposinf."""
    _check_tensor(input, "isposinf")
    r = eq(input, math.inf) if input.dtype.is_floating_point else zeros_like(input, dtype=bool_)
    return _out(r, out, "isposinf")


@dyn_inline
def isneginf(input, *, out=None):
    """isneginf(input, *, out=None) -> bool Tensor: input == -inf (False for integers and
    bools), as torch.isneginf."""
    _check_tensor(input, "isneginf")
    r = eq(input, -math.inf) if input.dtype.is_floating_point else zeros_like(input, dtype=bool_)
    return _out(r, out, "isneginf")


@dyn_inline
def isreal(input):
    """isreal(input) -> bool Tensor: all True (symtrace has no complex dtypes), as torch.isreal."""
    _check_tensor(input, "isreal")
    return ones_like(input, dtype=bool_)


# ---- fmax / fmin ----
def _fminmax(fn, input, other, cmp, out):
    _two_tensors(fn, input, other)
    dt = result_type(input, other)
    a, b = to_dtype(input, dt), to_dtype(other, dt)
    take_a = cmp(a, b)
    if dt.is_floating_point:
        take_a = logical_or(take_a, isnan(b))
    return _out(where(take_a, a, b), out, fn)


def fmax(input, other, *, out=None):
    """fmax(input, other, *, out=None) -> Tensor: the elementwise maximum, a NaN ignored where
    the other value is not NaN (gradient to input where input >= other or other is NaN), as
    torch.fmax."""
    return _fminmax("fmax", input, other, ge, out)


def fmin(input, other, *, out=None):
    """fmin(input, other, *, out=None) -> Tensor: the elementwise minimum, a NaN ignored where
    the other value is not NaN, as torch.fmin."""
    return _fminmax("fmin", input, other, le, out)


# ---- ldexp ----
def ldexp(input, other, *, out=None):
    """ldexp(input, other, *, out=None) -> Tensor: input * 2 ** other in their promoted float
    dtype (integers give float32), as torch.ldexp."""
    _two_tensors("ldexp", input, other)
    dt = result_type(input, other)
    dt = dt if dt.is_floating_point else float32
    return _out(mul(to_dtype(input, dt), pow(2.0, to_dtype(other, dt))), out, "ldexp")


# ---- exact exponent arithmetic: frexp and nextafter ----
# per float dtype: (mantissa bits, exponent of the smallest subnormal, largest finite)
_FMT = {"symtrace.float64": (53, -1074, 1.7976931348623157e308),
        "symtrace.float32": (24, -149, 3.4028234663852886e38),
        "symtrace.float16": (11, -24, 65504.0),
        "symtrace.bfloat16": (8, -133, 3.3895313892515355e38)}


def _pow2(e):
    """2.0 ** e for an integral float64 tensor e in [-1074, 1023] (exact)."""
    return pow(2.0, e)


def _scale2(x, e):
    """x * 2 ** -e, exact for |e| <= 2098 (two exact halves, so no power overflows)."""
    h = floor(div(e, 2.0))
    return div(div(x, _pow2(h)), _pow2(sub(e, h)))


def _frexp64(x):
    """(m, e) of a finite nonzero float64 tensor x (other values give junk there): x = m 2^e,
    0.5 <= |m| < 1, e from log2 |x| then corrected by one step either way."""
    ax = abs(x)
    e = add(floor(mul(log(ax), _INV_LN2)), 1.0)
    m = _scale2(ax, e)
    e = where(ge(m, 1.0), add(e, 1.0), where(lt(m, 0.5), sub(e, 1.0), e))
    return _scale2(x, e), e


_FrexpResult = collections.namedtuple("frexp", ["mantissa", "exponent"])


def frexp(input, *, out=None):
    """frexp(input, *, out=None) -> (mantissa, exponent): input = mantissa * 2 ** exponent with
    0.5 <= |mantissa| < 1 (mantissa input's dtype, exponent int32; 0, inf and NaN give
    themselves and exponent 0), exact; as torch.frexp (gradient 2 ** -exponent)."""
    _check_tensor(input, "frexp")
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x64 = input.detach() if input.dtype is float64 else to_dtype(input.detach(), float64)
    special = logical_or(eq(x64, 0.0), logical_or(isinf(x64), isnan(x64)))
    _, e = _frexp64(where(special, 1.0, x64))
    e = where(special, 0.0, e)
    m = _scale2(input if input.dtype is float64 else to_dtype(input, float64), e)
    res = _FrexpResult(to_dtype(m, input.dtype), to_dtype(e, int32))
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("frexp(): argument 'out' must be tuple of Tensors")
        return _FrexpResult(_out(res.mantissa, out[0], "frexp"), _out(res.exponent, out[1], "frexp"))
    return res


def _nextafter_value(x, y):
    """The float after x toward y, in x's dtype (x and y of one float dtype and shape)."""
    bits, emin, big = _FMT[str(x.dtype)]
    w = x if x.dtype is float64 else to_dtype(x, float64)
    wy = y if y.dtype is float64 else to_dtype(y, float64)
    zero = eq(w, 0.0)
    fin = logical_not(logical_or(isinf(w), isnan(w)))
    safe = where(logical_and(fin, logical_not(zero)), w, 1.0)
    m, e = _frexp64(safe)
    up = gt(wy, w)                          # toward +inf
    away = eq(up, gt(w, 0.0))               # moving away from zero
    # the spacing of x's dtype at x: 2^(e - bits), halved below an exact power of two
    # when moving toward zero; never below the smallest subnormal
    k = sub(e, float(bits))
    k = where(logical_and(logical_not(away), eq(abs(m), 0.5)), sub(k, 1.0), k)
    k = where(lt(k, float(emin)), float(emin), k)
    ulp = _pow2(k)
    step = where(up, ulp, neg(ulp))
    r = add(x, to_dtype(step, x.dtype))    # exact: the result is representable
    r = where(logical_and(eq(r, 0.0), lt(w, 0.0)), neg(r), r)     # -min toward 0: -0.0
    tiny = math.ldexp(1.0, emin)
    r = where(zero, to_dtype(where(up, full((), tiny, dtype=float64, device=x.device),
                                   full((), -tiny, dtype=float64, device=x.device)), x.dtype), r)
    r = where(isinf(w), to_dtype(where(gt(w, 0.0), full((), big, dtype=float64, device=x.device),
                                       full((), -big, dtype=float64, device=x.device)), x.dtype), r)
    r = where(eq(w, wy), y, r)
    return where(logical_or(isnan(w), isnan(wy)), full((), math.nan, dtype=x.dtype,
                                                        device=x.device), r)


def nextafter(input, other, *, out=None):
    """nextafter(input, other, *, out=None) -> Tensor: the next floating-point value after input
    toward other (other where they are equal; floating dtypes, promoted to one), bit-exact,
    subnormals included; as torch.nextafter (gradient 1 to input, 0 to other)."""
    _two_tensors("nextafter", input, other)
    dt = result_type(input, other)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{_tname(dt)}'")
    x, y = to_dtype(input, dt), to_dtype(other, dt)
    shape = _bshape(tuple(x.shape), tuple(y.shape))
    x = x.expand(shape) if tuple(x.shape) != shape else x
    y = y.expand(shape) if tuple(y.shape) != shape else y
    return _out(_with_grad("nextafter", _nextafter_value,
                           (lambda a, b, r: ones_like(a), lambda a, b, r: zeros_like(b)), x, y),
                out, "nextafter")


# ---- gcd / lcm ----
_EUCLID_STEPS = {"symtrace.uint8": 14, "symtrace.int8": 14, "symtrace.int16": 26,
                 "symtrace.int32": 46, "symtrace.int64": 92}


def _int_pair(fn, input, other):
    _two_tensors(fn, input, other)
    dt = result_type(input, other)
    if dt.is_floating_point or dt is bool_:
        raise NotImplementedError(f"\"{fn}_cpu\" not implemented for '{_tname(dt)}'")
    return to_dtype(input, dt), to_dtype(other, dt), dt


def _gcd(a, b, dt):
    """gcd(|a|, |b|) by Euclid's algorithm (a, b = b mod a, a while a != 0), unrolled to the
    most steps any pair of dtype dt takes (consecutive Fibonacci numbers)."""
    a, b = abs(a), abs(b)
    for _ in range(_EUCLID_STEPS[str(dt)]):
        nz = ne(a, 0)
        a, b = where(nz, remainder(b, where(nz, a, 1)), a), where(nz, a, b)
    return b


def gcd(input, other, *, out=None):
    """gcd(input, other, *, out=None) -> Tensor: the greatest common divisor of integer
    tensors (gcd(0, 0) = 0), as torch.gcd."""
    a, b, dt = _int_pair("gcd", input, other)
    return _out(_gcd(a, b, dt), out, "gcd")


def lcm(input, other, *, out=None):
    """lcm(input, other, *, out=None) -> Tensor: the least common multiple of integer tensors,
    |a / gcd(a, b) * b| (0 where the gcd is 0), as torch.lcm."""
    a, b, dt = _int_pair("lcm", input, other)
    g = _gcd(a, b, dt)
    nz = ne(g, 0)
    r = abs(mul(floor_divide(a, where(nz, g, 1)), b))
    return _out(where(nz, r, zeros_like(r)), out, "lcm")

