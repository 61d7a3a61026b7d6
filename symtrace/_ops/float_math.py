"""Float functions decomposed onto the elementwise primitives: the nan/inf tests and the
tolerance comparisons (isclose, allclose, equal), nan_to_num; the exp/log family
(log1p, expm1, log2, log10, exp2, ...), trunc/frac/fmod, hyperbolic and inverse
trigonometric functions, atan2; and the binary float functions (logaddexp, hypot, xlogy,
copysign, heaviside, float_power, ...), with the precision helpers they run in
(_to_float, _wide, _opmath, _back); and angle, real and imag for real tensors."""
import builtins
import math

from .. import _C
from .._dtype import bool_, float32, float64, int64
from .._symint import dyn_inline
from ._core import _FMAX, _check_tensor, _is_tensor, _tname
from .elementwise import (_pow, abs, add, ceil, clamp, div, eq, exp, floor, ge, gt, le, log,
                          logical_and, logical_not, logical_or, lt, mul, ne, neg, pow, reciprocal,
                          remainder, result_type, round, sin, sqrt, sub, tanh, to_dtype, where)
from .dtypes import get_default_dtype
from .creation import _scalar0, full, ones_like, zeros_like


# ---- nan and inf tests ----
# dyn_inline: an integer input's all-False / all-True result is a *_like of it, whose
# size stays an expression under dynamic shapes (not the traced call's plain ints)
@dyn_inline
def isnan(input):
    """isnan(input) -> bool Tensor: x != x (False for integer and bool tensors)."""
    _check_tensor(input, "isnan")
    if not input.dtype.is_floating_point:
        return zeros_like(input, dtype=bool_)
    return ne(input, input)


@dyn_inline
def isinf(input):
    """isinf(input) -> bool Tensor: |x| == inf (False for integer and bool tensors)."""
    _check_tensor(input, "isinf")
    if not input.dtype.is_floating_point:
        return zeros_like(input, dtype=bool_)
    return eq(abs(input), float("inf"))


@dyn_inline
def isfinite(input):
    """isfinite(input) -> bool Tensor: neither nan nor +-inf (True for integer and bool tensors)."""
    _check_tensor(input, "isfinite")
    if not input.dtype.is_floating_point:
        return ones_like(input, dtype=bool_)
    return lt(abs(input), float("inf"))   # nan < inf is False


# ---- comparisons as Python bools ----
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool Tensor:
    |input - other| <= atol + rtol * |other| (or equal); as torch.isclose."""
    _check_tensor(input, "isclose")
    _check_tensor(other, "isclose", "other")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{_tname(input.dtype)} did not match {_tname(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = eq(input, other)
    if equal_nan and input.dtype.is_floating_point:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    if rtol == 0 and atol == 0:
        return close
    a, b = (to_dtype(input, float32), to_dtype(other, float32)) if input.dtype is bool_ else (input, other)
    allowed = add(abs(mul(b, rtol)), atol)
    actual = abs(sub(a, b))
    return logical_or(close, logical_and(isfinite(actual), le(actual, allowed)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """allclose(...) -> bool: isclose(...) everywhere (a value query: .item(); under
    symtrace.compile it breaks the graph, as in torch). As torch.allclose."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):
    """equal(input, other) -> bool: same shape and equal elements (nan is unequal); a value
    query (.item()), as torch.equal."""
    _check_tensor(input, "equal")
    _check_tensor(other, "equal", "other")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(eq(input, other).all().item())


# ---- nan and inf replaced ----
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """nan_to_num(input, nan=0.0, posinf=None, neginf=None): nan, +inf and -inf replaced
    (by default with 0 and the dtype's largest and lowest finite values); as torch.nan_to_num."""
    _check_tensor(input, "nan_to_num")
    if not input.dtype.is_floating_point:
        return input.clone()
    big = _FMAX[str(input.dtype)]
    r = where(isnan(input), _scalar0(input, nan), input)
    r = where(eq(input, math.inf), _scalar0(input, big if posinf is None else posinf), r)
    return where(eq(input, -math.inf), _scalar0(input, -big if neginf is None else neginf), r)


# ---- the precision the formulas below run in, and argument checks ----
_LN2 = math.log(2.0)
_INV_LN2 = 1.0 / math.log(2.0)
_INV_LN10 = 1.0 / math.log(10.0)


def _to_float(input):
    """input as a float tensor: integers and bools become float32 (torch's default dtype)."""
    return input if input.dtype.is_floating_point else to_dtype(input, float32)


def _wide(input):
    """(x, dtype): x in float64, where the multi-step formulas below run so that a
    float32 result stays within an ulp of libm's; dtype is the result's."""
    x = _to_float(input)
    return (x if x.dtype is float64 else to_dtype(x, float64)), x.dtype


def _opmath(input):
    """(x, dtype): float16/bfloat16 raised to float32 (torch's opmath); integers to float32."""
    x = _to_float(input)
    return (x if x.dtype in (float32, float64) else to_dtype(x, float32)), x.dtype


def _back(r, dt):
    return r if r.dtype is dt else to_dtype(r, dt)


def _pos_arg(fn, name, pos, v):
    raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {type(v).__name__}")


def _two_tensors(fn, input, other, name="other"):
    if not _is_tensor(input):
        _pos_arg(fn, "input", 1, input)
    if not _is_tensor(other):
        _pos_arg(fn, name, 2, other)


def _float_unary(fname, core, prec, doc):
    def f(input):
        _check_tensor(input, fname)
        x, dt = (_wide if prec == "wide" else _opmath)(input)
        return _back(core(x), dt)
    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"{fname}(input) -> Tensor: {doc} (as torch.{fname}; integer and bool inputs give float32)."
    return f


# ---- exp / log family ----
def _log1p(x):
    """log(1 + x) to an ulp or two in x's own precision: with u = fl(1 + x), the
    rounding error e = (u - 1) - x is exact, and log(1 + x) = log(u) - e / u to
    second order in e (Goldberg's correction). u == 0 and u == +-inf take log(u)."""
    u = add(x, 1)
    e = sub(sub(u, 1), x)
    bad = logical_or(eq(u, 0), eq(abs(u), math.inf))
    return sub(log(u), div(where(bad, 0.0, e), where(bad, 1.0, u)))


def _expm1(x):
    """exp(x) - 1 without cancellation: 2t / (1 - t) with t = tanh(x / 2) for |x| < 0.5
    (no cancellation there), exp(x) - 1 elsewhere."""
    small = lt(abs(x), 0.5)
    t = tanh(mul(where(small, x, 0.0), 0.5))
    return where(small, div(add(t, t), sub(1.0, t)), sub(exp(x), 1))


log1p = _float_unary("log1p", _log1p, "opmath", "log(1 + input), accurate for small |input|")
expm1 = _float_unary("expm1", _expm1, "opmath", "exp(input) - 1, accurate for small |input|")


def _log_base(fname, inv_ln, base):
    def core(x):
        r = mul(log(x), inv_ln)
        if x.dtype is float64:   # exact at exact powers of the base, as libm (a float32
            n = round(r)         # result is rounded from float64, so exact there already)
            hit = logical_and(eq(pow(float(base), n), x), le(abs(sub(n, r)), 1e-12))
            r = add(r, where(hit, sub(n, r), 0.0).detach())
        return r
    return _float_unary(fname, core, "wide", f"the base-{base} logarithm")


log2 = _log_base("log2", _INV_LN2, 2)
log10 = _log_base("log10", _INV_LN10, 10)


def exp2(input):
    """exp2(input) -> Tensor: 2 ** input (as torch.exp2; integer and bool inputs give float32)."""
    _check_tensor(input, "exp2")
    return _pow(2.0, _to_float(input))     # in input's memory order (pow's row-major form)


def square(input):
    """square(input) -> Tensor: input * input (bool gives int64, as torch.square)."""
    _check_tensor(input, "square")
    if input.dtype is bool_:
        input = to_dtype(input, int64)
    return mul(input, input)


def trunc(input):
    """trunc(input) -> Tensor: rounded toward zero (integers unchanged, a copy); as torch.trunc."""
    _check_tensor(input, "trunc")
    if input.dtype is bool_:
        raise NotImplementedError("\"trunc\" not implemented for 'Bool'")
    if not input.dtype.is_floating_point:
        return input.clone()
    return where(lt(input, 0), ceil(input), floor(input))


fix = trunc


def frac(input):
    """frac(input) -> Tensor: input - trunc(input), the fractional part with input's sign
    (floating dtypes only, as torch.frac)."""
    _check_tensor(input, "frac")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"frac\" not implemented for '{_tname(input.dtype)}'")
    return sub(input, trunc(input))


def fmod(input, other):
    """fmod(input, other) -> Tensor: C's fmod, the remainder of input / other truncated
    toward zero, with the sign of the dividend (remainder() takes the divisor's sign):
    sign(input) * remainder(|input|, |other|), exact. other a tensor or a number.
    Integer division by zero raises torch's ZeroDivisionError (a zero tensor element: the
    remainder's check in runtime/eager.c, on CPU outside a trace)."""
    _check_tensor(input, "fmod")
    if not _is_tensor(other) and not isinstance(other, (int, float)):
        raise TypeError(f"fmod(): argument 'other' (position 2) must be Tensor or Number, not "
                        f"{type(other).__name__}")
    dt = result_type(input, other)
    if dt is bool_:
        raise NotImplementedError("\"fmod\" not implemented for 'Bool'")
    if not dt.is_floating_point and not _is_tensor(other):
        # a number divisor of an integer tensor is first converted to its dtype, wrapping
        # as torch's does (uint8: -2 is 254)
        bits = dt.itemsize * 8
        other = int(other) & ((1 << bits) - 1)
        if dt.is_signed and other >= 1 << (bits - 1):
            other -= 1 << bits
        if other == 0:
            raise RuntimeError("ZeroDivisionError")
        other = full((), other, dtype=dt, device=input.device)
    a = to_dtype(input, dt)
    if not dt.is_floating_point and _is_tensor(other):
        # integers: |INT_MIN| wraps, so no abs(): the floor remainder (divisor's sign)
        # moved back by the divisor where its sign is not the dividend's
        b = to_dtype(other, dt)
        r = remainder(a, b)
        fix = logical_and(ne(r, 0), ne(lt(r, 0), lt(a, 0)))
        return where(fix, sub(r, b), r)
    if _is_tensor(other):
        b = to_dtype(other, dt)
        b = where(lt(b, 0), neg(b), b)
    else:
        b = builtins.abs(other)
    neg_a = lt(a, 0)
    r = remainder(where(neg_a, neg(a), a), b)     # |a| mod |b|: sign-free, no adjustment
    return where(neg_a, neg(r), r)


# ---- hyperbolic ----
def _sinh(x):
    small = lt(abs(x), 1.0)
    e = _expm1(where(small, x, 0.0))
    rs = mul(add(e, div(e, add(e, 1))), 0.5)   # (e^x - e^-x) / 2 from e = expm1(x)
    xl = where(small, 1.0, x)
    neg_ = lt(xl, 0)
    t = exp(mul(where(neg_, neg(xl), xl), 0.5))
    h = mul(t, mul(t, 0.5))                      # e^|x| / 2, finite as long as sinh is
    rl = sub(h, div(0.25, h))
    return where(small, rs, where(neg_, neg(rl), rl))


def _cosh(x):
    t = exp(mul(abs(x), 0.5))
    h = mul(t, mul(t, 0.5))
    return add(h, div(0.25, h))


def _asinh(x):
    neg_ = lt(x, 0)
    a = where(neg_, neg(x), x)
    big = gt(a, 2.0 ** 28)
    s = where(big, 1.0, a)
    ss = mul(s, s)
    r = _log1p(add(s, div(ss, add(sqrt(add(ss, 1)), 1))))
    r = where(big, add(log(where(big, a, 1.0)), _LN2), r)
    return where(neg_, neg(r), r)


def _acosh(x):
    big = gt(x, 2.0 ** 28)
    s = where(big, 2.0, x)
    t = sub(s, 1)
    r = _log1p(add(t, sqrt(mul(t, add(s, 1)))))
    r = where(lt(x, 1), _scalar0(x, math.nan), r)
    return where(big, add(log(where(big, x, 2.0)), _LN2), r)


def _atanh(x):
    neg_ = lt(x, 0)
    a = where(neg_, neg(x), x)
    r = mul(_log1p(div(add(a, a), sub(1.0, a))), 0.5)
    return where(neg_, neg(r), r)


sinh = _float_unary("sinh", _sinh, "wide", "the hyperbolic sine")
cosh = _float_unary("cosh", _cosh, "wide", "the hyperbolic cosine")
asinh = _float_unary("asinh", _asinh, "wide", "the inverse hyperbolic sine")
acosh = _float_unary("acosh", _acosh, "wide", "the inverse hyperbolic cosine (nan below 1)")
atanh = _float_unary("atanh", _atanh, "wide", "the inverse hyperbolic tangent (nan outside [-1, 1])")
arcsinh, arccosh, arctanh = asinh, acosh, atanh


# ---- inverse trigonometric: Cephes' atan (a rational approximation on
# |w| <= 0.66 after the reductions atan(x) = pi/2 - atan(1/x) and
# pi/4 + atan((x-1)/(x+1))), evaluated in float64 (within an ulp or two of
# libm in float64; float32 results are rounded from it) ----
_T3P8 = 2.41421356237309504880      # tan(3 pi / 8)
_MOREBITS = 6.123233995736765886130e-17
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
           -1.228866684490136173410e2, -6.485021904942025371773e1)
_ATAN_Q = (2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
           4.853903996359136964868e2, 1.945506571482613964425e2)


def _horner(z, coefs, monic=False):
    r = add(z, coefs[0]) if monic else add(mul(z, coefs[0]), coefs[1])
    for c in coefs[1 if monic else 2:]:
        r = add(mul(r, z), c)
    return r


def _atan64(x):
    """atan of a float64 tensor; odd in x without an abs() on the differentiable path
    (so the gradient at 0 is 1)."""
    ax = abs(x)
    big = gt(ax, _T3P8)
    mid = logical_and(gt(ax, 0.66), logical_not(big))
    s = where(lt(x, 0), _scalar0(x, -1.0), _scalar0(x, 1.0))
    xb = where(big, x, 1.0)
    xm = where(mid, x, 0.0)
    w = where(big, div(-1.0, xb), where(mid, div(sub(xm, s), add(mul(s, xm), 1)), x))
    z = mul(w, w)
    k = add(w, mul(w, div(mul(z, _horner(z, _ATAN_P)), _horner(z, _ATAN_Q, monic=True))))
    y0 = where(big, _scalar0(x, math.pi / 2), where(mid, _scalar0(x, math.pi / 4), _scalar0(x, 0.0)))
    mb = where(big, _scalar0(x, _MOREBITS), where(mid, _scalar0(x, _MOREBITS / 2), _scalar0(x, 0.0)))
    return where(eq(x, 0), x, add(mul(y0, s), add(k, mul(mb, s))))   # atan(-0.0) = -0.0


def _asin64(x):
    return _atan64(div(x, sqrt(mul(sub(1.0, x), add(x, 1)))))


def _acos64(x):
    return mul(_atan64(sqrt(div(sub(1.0, x), add(x, 1)))), 2.0)


atan = _float_unary("atan", _atan64, "wide", "the arctangent")
asin = _float_unary("asin", _asin64, "wide", "the arcsine (nan outside [-1, 1])")
acos = _float_unary("acos", _acos64, "wide", "the arccosine (nan outside [-1, 1])")
arctan, arcsin, arccos = atan, asin, acos


def _signbit(x):
    """x < 0 or x is -0.0 (1 / -0.0 == -inf): the sign bit, as a bool tensor."""
    if not x.dtype.is_floating_point:
        return lt(x, 0)
    return logical_or(lt(x, 0), logical_and(eq(x, 0), lt(reciprocal(x), 0)))


def atan2(input, other):
    """atan2(input, other) -> Tensor: the angle of the point (other, input), in [-pi, pi],
    with C's special values (signed zeros, infinities); broadcasting; integer and bool
    inputs give float32. As torch.atan2 (arctan2)."""
    _two_tensors("atan2", input, other)
    dt = result_type(input, other)
    dt = dt if dt.is_floating_point else float32
    y = to_dtype(input, float64)
    x = to_dtype(other, float64)
    c1 = ge(abs(x), abs(y))             # |y / x| <= 1 (false for nan)
    # |x| >= |y|: atan(y / x), plus pi toward y's side where x is negative (or -0.0);
    # at (0, 0) a constant +-0 / 1 (y's sign), so the gradient there is 0, as torch's
    c1x = logical_and(c1, ne(x, 0))
    zero = where(_signbit(y), _scalar0(x, -0.0), _scalar0(x, 0.0))
    q1 = div(where(c1x, y, zero), where(c1x, x, 1.0))
    off = where(_signbit(y), _scalar0(x, -math.pi), _scalar0(x, math.pi))
    r1 = where(_signbit(x), add(_atan64(q1), off), _atan64(q1))
    # |y| > |x|: +-pi/2 - atan(x / y)
    q2 = div(where(c1, 0.0, x), where(c1, 1.0, y))
    r2 = sub(where(lt(y, 0), _scalar0(x, -math.pi / 2), _scalar0(x, math.pi / 2)), _atan64(q2))
    r = where(c1, r1, r2)
    both = logical_and(isinf(x), isinf(y))   # +-pi/4, +-3pi/4
    corner = mul(where(gt(x, 0), _scalar0(x, math.pi / 4), _scalar0(x, 3 * math.pi / 4)),
                 where(lt(y, 0), _scalar0(x, -1.0), _scalar0(x, 1.0)))
    return _back(where(both, corner, r), dt)


arctan2 = atan2


# ---- binary float functions ----
def _float_pair(fn, input, other, ints_ok=False):
    """input and other (tensors) promoted to their float result dtype; (a, b, dtype)."""
    _two_tensors(fn, input, other)
    dt = result_type(input, other)
    if not dt.is_floating_point:
        if not ints_ok:
            raise NotImplementedError(f"\"{fn}\" not implemented for '{_tname(dt)}'")
        dt = float32
    work = dt if dt in (float32, float64) else float32
    return to_dtype(input, work), to_dtype(other, work), dt


def _logaddexp(a, b, base2=False):
    d = sub(a, b)
    pos = gt(d, 0)
    m = where(pos, a, b)
    ad = where(pos, d, neg(d))           # |a - b|, differentiable with slope -1 at a tie
    if base2:
        r = add(m, mul(_log1p(pow(2.0, neg(ad))), _INV_LN2))
    else:
        r = add(m, _log1p(exp(neg(ad))))
    return where(logical_and(eq(a, b), isinf(a)), a, r)


def logaddexp(input, other):
    """logaddexp(input, other) -> Tensor: log(exp(input) + exp(other)) without overflow
    (max + log1p(exp(-|input - other|))); floating dtypes; as torch.logaddexp."""
    a, b, dt = _float_pair("logaddexp", input, other)
    return _back(_logaddexp(a, b), dt)


def logaddexp2(input, other):
    """logaddexp2(input, other) -> Tensor: log2(2**input + 2**other) without overflow;
    floating dtypes; as torch.logaddexp2."""
    a, b, dt = _float_pair("logaddexp2", input, other)
    return _back(_logaddexp(a, b, base2=True), dt)


def hypot(input, other):
    """hypot(input, other) -> Tensor: sqrt(input**2 + other**2) without overflow or
    underflow (inf if either is infinite, even with a nan); floating dtypes; as torch.hypot."""
    a, b, dt = _float_pair("hypot", input, other)
    if dt is not float64:              # float32 and below: exact squares in float64
        a, b = to_dtype(a, float64), to_dtype(b, float64)
        r = sqrt(add(mul(a, a), mul(b, b)))
    else:                              # |m| sqrt(1 + (n/m)^2), |m| >= |n|
        c = ge(abs(a), abs(b))
        m, n = where(c, a, b), where(c, b, a)
        q = div(n, where(eq(m, 0), 1.0, m))
        r = mul(abs(m), sqrt(add(mul(q, q), 1)))
    r = where(logical_or(isinf(a), isinf(b)), _scalar0(r, math.inf), r)
    return _back(r, dt)


def deg2rad(input):
    """deg2rad(input) -> Tensor: input * pi / 180 (integers give float32); as torch.deg2rad."""
    _check_tensor(input, "deg2rad")
    return mul(_to_float(input), math.pi / 180)


def rad2deg(input):
    """rad2deg(input) -> Tensor: input * 180 / pi (integers give float32); as torch.rad2deg."""
    _check_tensor(input, "rad2deg")
    return mul(_to_float(input), 180 / math.pi)


def clamp_min(input, min):
    """clamp_min(input, min) = clamp(input, min=min)."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """clamp_max(input, max) = clamp(input, max=max)."""
    return clamp(input, max=max)


def logical_xor(input, other):
    """logical_xor(input, other) -> bool Tensor: exactly one of them nonzero; as torch."""
    _two_tensors("logical_xor", input, other)
    return ne(to_dtype(input, bool_), to_dtype(other, bool_))


def _float_scalar_pair(fn, input, other):
    """Tensors or numbers (at least one tensor) in their float result dtype; (a, b, dtype)."""
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError(f"{fn}(): expected at least one Tensor argument, got "
                        f"{type(input).__name__} and {type(other).__name__}")
    dt = result_type(input, other)
    dt = dt if dt.is_floating_point else float32
    ref = input if _is_tensor(input) else other

    def conv(v):
        if _is_tensor(v):
            return to_dtype(v, dt)
        return full((), v, dtype=dt, device=ref.device)
    return conv(input), conv(other), dt


def xlogy(input, other):
    """xlogy(input, other) -> Tensor: input * log(other), 0 where input == 0 (unless other is
    nan); either may be a number; as torch.xlogy."""
    x, y, dt = _float_scalar_pair("xlogy", input, other)
    # log(y) is kept where x == 0 unless it is infinite there (d/dx = log(y), as torch)
    safe = logical_and(eq(x, 0), logical_or(le(y, 0), eq(y, math.inf)))
    r = mul(x, log(where(safe, 1.0, y)))
    return where(isnan(y), _scalar0(r, math.nan), r)


def sinc(input):
    """sinc(input) -> Tensor: sin(pi x) / (pi x), 1 at 0 (gradient 0 there); as torch.sinc."""
    _check_tensor(input, "sinc")
    x, dt = _opmath(input)
    zero = eq(x, 0)
    p = mul(where(zero, 1.0, x), math.pi)
    return _back(where(zero, 1.0, div(sin(p), p)), dt)


def heaviside(input, values):
    """heaviside(input, values) -> Tensor: 0 where input < 0, values where input == 0, 1
    where input > 0 (same dtypes required, as torch.heaviside)."""
    _two_tensors("heaviside", input, values, "values")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return where(eq(input, 0), values, to_dtype(gt(input, 0), input.dtype))


def copysign(input, other):
    """copysign(input, other) -> Tensor: |input| with the sign (bit) of other, -0.0
    included; other a tensor or a number; integers give float32; as torch.copysign."""
    _check_tensor(input, "copysign")
    x, y, dt = _float_scalar_pair("copysign", input, other)
    if not _is_tensor(other):
        negy = math.copysign(1.0, float(other)) < 0
        return neg(abs(x)) if negy else abs(x)
    r = where(_signbit(y), neg(abs(x)), abs(x))
    if y.requires_grad and _C._is_grad_enabled():
        # other's gradient is zero, but the result needs one through it, as torch's:
        # minus a zero that reads y (a 0 subtracted keeps -0.0)
        r = sub(r, where(zeros_like(y, dtype=bool_), y, 0.0))
    return r


def float_power(input, exponent):
    """float_power(input, exponent) -> float64 Tensor: pow in double precision (either
    may be a number); as torch.float_power."""
    if not _is_tensor(input) and not _is_tensor(exponent):
        raise TypeError("float_power(): expected at least one Tensor argument")
    a = to_dtype(input, float64) if _is_tensor(input) else float(input)
    b = to_dtype(exponent, float64) if _is_tensor(exponent) else float(exponent)
    return pow(a, b)


# ---- torch's complex-number functions on real tensors (symtrace has no complex dtypes) ----
def angle(input):
    """angle(input): the argument of a real number: pi where input < 0, 0 elsewhere, nan kept;
    integer and bool tensors give the default float dtype; as torch.angle (gradient 0)."""
    _check_tensor(input, "angle")
    x = input if input.dtype.is_floating_point else to_dtype(input, get_default_dtype())
    zero = zeros_like(x)
    return where(ne(x, x), x, where(lt(x, 0), add(zero, math.pi), zero))


def real(input):
    """real(input): input itself (a real tensor is its own real part), as torch.real."""
    _check_tensor(input, "real")
    return input


def imag(input):
    """imag(input): torch's RuntimeError (a real tensor has no imaginary part)."""
    _check_tensor(input, "imag")
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
