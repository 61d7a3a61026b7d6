"""The error-function family of torch.special, decomposed onto the elementwise primitives:
erfc (also torch.erfc), erfcx, ndtr, ndtri and log_ndtr; and entr and xlog1py. They run in
float64 (float32 and half results are rounded from it) with torch's special values, except
ndtr, which is torch's (1 + erf(x / sqrt(2))) / 2 in the input's own precision, as torch
computes it. Gradients are torch's formulas (special_core._with_grad). Only erfc is public
here (torch.erfc); symtrace.special names the others."""
import math

from .elementwise import (add, clamp, div, eq, erf, exp, ge, gt, le, log, logical_and, logical_or, lt,
                          mul, neg, round, sqrt, sub, where)
from .._dtype import float64
from .float_math import _log1p, _opmath, isinf, isnan
from .special_core import _back, _no_half, _out, _pair, _polevl, _unary64, _with_grad, _w64
from ._core import _check_tensor

_SQRT1_2 = math.sqrt(0.5)
_ISQRTPI = 1.0 / math.sqrt(math.pi)
_SQRT2PI = math.sqrt(2.0 * math.pi)
_INF = math.inf


def _expx2(x, sign):
    """exp(sign * x * x) for finite x without the error of rounding x * x: x = hi + lo with
    hi = round(128 x) / 128, whose square is exact (Cephes' expx2). |x| is clamped to 40,
    where the result has long under- or overflowed (and hi * lo could overflow)."""
    x = clamp(x, -40.0, 40.0)
    hi = div(round(mul(x, 128.0)), 128.0)
    lo = sub(x, hi)
    return mul(exp(mul(mul(hi, hi), sign)),
               exp(mul(add(mul(mul(hi, lo), 2.0), mul(lo, lo)), sign)))


def _erfcx_cf(x):
    """erfcx(x) for x >= 2 (or +inf): 1 / (sqrt(pi) F) with F = x + (1/2) / (x + 1 / (x +
    (3/2) / ...)), the continued fraction of erfc, 60 terms (an ulp or two at x = 2)."""
    f = x
    for j in range(60, 0, -1):
        f = add(x, div(j / 2.0, f))
    return div(_ISQRTPI, f)


def _erfc64(x):
    """erfc in float64: 1 - erf(x) below 2 (at most ~5e-15 relative lost at 2), else
    exp(-x^2) erfcx(x) from the continued fraction."""
    big = ge(x, 2.0)                       # NaN: False
    xb = where(big, x, 2.0)
    rb = mul(_expx2(where(isinf(xb), 2.0, xb), -1.0), _erfcx_cf(xb))
    return where(big, rb, sub(1.0, erf(where(big, 0.0, x))))


def _erfcx64(x, sq=None):
    """erfcx(x) = exp(x^2) erfc(x) in float64: the continued fraction from 2 on, below it
    exp(x^2) (1 - erf(x)) (+inf at -inf and wherever it overflows, as torch's). sq: x^2
    as torch's float32 kernel rounds it (its error, amplified by exp, dominates there), used
    for negative x."""
    big = ge(x, 2.0)
    rb = _erfcx_cf(where(big, x, 2.0))
    xs = where(big, 0.0, x)
    ninf = eq(xs, -_INF)
    e = _expx2(where(ninf, 0.0, xs), 1.0)
    if sq is not None:
        e = where(lt(xs, 0.0), exp(sq), e)
    rs = mul(e, sub(1.0, erf(xs)))
    return where(big, rb, where(ninf, _INF, rs))


def _ndtr_value(x):
    """torch's ndtr: (1 + erf(x / sqrt(2))) / 2 in the input's precision (opmath)."""
    w, dt = _opmath(x)
    return _back(mul(add(erf(mul(w, _SQRT1_2)), 1.0), 0.5), dt)


def _log_ndtr64(x, t):
    """log(ndtr(x)) in float64, as torch's: log(erfcx(-t) / 2) - t^2 below x = -1 (no
    underflow however negative x is), log1p(-erfc(t) / 2) from -1 on; t = x / sqrt(2) (as
    torch rounds it: in the input's precision)."""
    low = lt(x, -1.0)
    tl = where(low, t, -1.0)
    rl = sub(log(mul(_erfcx64(neg(tl)), 0.5)), mul(tl, tl))
    rl = where(eq(tl, -_INF), -_INF, rl)
    rh = _log1p(mul(_erfc64(where(low, 0.0, t)), -0.5))
    return where(low, rl, rh)


# ndtri: Cephes' rational approximations (as torch's calc_ndtri)
_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.00000000000000000000E0, 1.95448858338141759834E0, 4.67627912898881538453E0,
             8.63602421390890590575E1, -2.25462687854119370527E2, 2.00260212380060660359E2,
             -8.20372256168333339912E1, 1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.00000000000000000000E0, 1.57799883256466749731E1, 4.53907635128879210584E1,
             4.13172038254672030440E1, 1.50425385692907503408E1, 2.50464946208309415979E0,
             -1.42182922854787788574E-1, -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.00000000000000000000E0, 6.02427039364742014255E0, 3.67983563856160859403E0,
             1.37702099489081330271E0, 2.16236993594496635890E-1, 1.34204006088543189037E-2,
             3.28014464682127739104E-4, 2.89247864745380683936E-6, 6.79019408009981274425E-9)
_EXPM2 = 0.13533528323661269189     # exp(-2)


def _ndtri64(y0):
    """The inverse of ndtr in float64 (Cephes' ndtri, as torch's calc_ndtri): a rational
    function of y - 1/2 in the middle, of 1 / sqrt(-2 log y) in the tails."""
    upper = gt(y0, 1.0 - _EXPM2)
    y = where(upper, sub(1.0, y0), y0)
    mid = gt(y, _EXPM2)
    ym = sub(where(mid, y, 0.5), 0.5)
    y2 = mul(ym, ym)
    xm = mul(add(ym, mul(ym, div(mul(y2, _polevl(y2, _NDTRI_P0)), _polevl(y2, _NDTRI_Q0)))),
             _SQRT2PI)
    yt = where(logical_or(mid, le(y, 0.0)), 0.1, y)
    x = sqrt(mul(log(yt), -2.0))
    x0 = sub(x, div(log(x), x))
    z = div(1.0, x)
    x1 = where(lt(x, 8.0), div(mul(z, _polevl(z, _NDTRI_P1)), _polevl(z, _NDTRI_Q1)),
               div(mul(z, _polevl(z, _NDTRI_P2)), _polevl(z, _NDTRI_Q2)))
    xt = sub(x0, x1)
    xt = where(upper, xt, neg(xt))
    r = where(mid, xm, xt)
    r = where(eq(y0, 0.0), -_INF, where(eq(y0, 1.0), _INF, r))
    return where(logical_or(logical_or(lt(y0, 0.0), gt(y0, 1.0)), isnan(y0)), math.nan, r)


def _entr64(x):
    """-x log(x) for x > 0, 0 at 0, -inf below 0, NaN at NaN (torch.special.entr)."""
    pos = gt(x, 0.0)
    r = mul(neg(x), log(where(pos, x, 1.0)))
    r = where(eq(x, 0.0), 0.0, where(lt(x, 0.0), -_INF, r))
    return where(isnan(x), math.nan, r)


# ---- public (torch.erfc) and the torch.special ones symtrace.special binds ----
def _d_erfc(x, r):
    return mul(exp(neg(mul(x, x))), -2.0 * _ISQRTPI)


def _d_erfcx(x, r):
    return sub(mul(mul(x, r), 2.0), 2.0 * _ISQRTPI)


_erfc_value = _unary64(_erfc64)


def _erfcx_value(x):
    w, dt = _opmath(x)
    sq = None if dt is float64 else _w64(mul(w, w))     # rounded as torch's float kernel
    return _back(_erfcx64(_w64(w), sq), dt)


def _log_ndtr_value(x):
    w, dt = _opmath(x)
    return _back(_log_ndtr64(_w64(w), _w64(mul(w, _SQRT1_2))), dt)


_ndtri_value = _unary64(_ndtri64)
_entr_value = _unary64(_entr64)


def erfc(input, *, out=None):
    """erfc(input, *, out=None) -> Tensor: the complementary error function 1 - erf(input),
    without cancellation for large input (as torch.erfc; integers give float32)."""
    _check_tensor(input, "erfc")
    return _out(_with_grad("erfc", _erfc_value, (_d_erfc,), input), out, "erfc")


def _erfcx(input, *, out=None):
    """erfcx(input, *, out=None) -> Tensor: the scaled complementary error function
    exp(input^2) * erfc(input), as torch.special.erfcx."""
    _check_tensor(input, "special_erfcx")
    _no_half(input, "erfcx")
    return _out(_with_grad("erfcx", _erfcx_value, (_d_erfcx,), input), out, "special_erfcx")


def _ndtr(input, *, out=None):
    """ndtr(input, *, out=None) -> Tensor: the standard normal CDF, (1 + erf(x / sqrt(2))) / 2
    as torch.special.ndtr computes it (in the input's precision)."""
    _check_tensor(input, "special_ndtr")
    return _out(_ndtr_value(input), out, "special_ndtr")


def _d_log_ndtr(x, r):
    return mul(exp(neg(add(r, mul(mul(x, x), 0.5)))), 1.0 / _SQRT2PI)


def _log_ndtr(input, *, out=None):
    """log_ndtr(input, *, out=None) -> Tensor: log of the standard normal CDF, accurate for
    very negative input (no underflow), as torch.special.log_ndtr."""
    _check_tensor(input, "special_log_ndtr")
    _no_half(input, "log_ndtr")
    return _out(_with_grad("log_ndtr", _log_ndtr_value, (_d_log_ndtr,), input), out,
                "special_log_ndtr")


def _d_ndtri(x, r):
    return mul(exp(mul(mul(r, r), 0.5)), _SQRT2PI)


def _ndtri(input, *, out=None):
    """ndtri(input, *, out=None) -> Tensor: the inverse of ndtr (-inf at 0, inf at 1, NaN
    outside [0, 1]), as torch.special.ndtri."""
    _check_tensor(input, "special_ndtri")
    _no_half(input, "ndtri")
    return _out(_with_grad("ndtri", _ndtri_value, (_d_ndtri,), input), out, "special_ndtri")


def _d_entr(x, r):
    return neg(add(log(x), 1.0))


def _entr(input, *, out=None):
    """entr(input, *, out=None) -> Tensor: -x ln(x) for x > 0, 0 at 0, -inf for x < 0, as
    torch.special.entr (gradient -(1 + ln x))."""
    _check_tensor(input, "special_entr")
    return _out(_with_grad("entr", _entr_value, (_d_entr,), input), out, "special_entr")


def _xlog1py_value(x, y):
    dt = x.dtype
    x, y = _w64(x), _w64(y)
    r = mul(x, _log1p(y))
    r = where(eq(x, 0.0), 0.0, r)
    return _back(where(isnan(y), math.nan, r), dt)


def _d_xlog1py_x(x, y, r):
    d = _log1p(y)
    return where(logical_and(eq(x, 0.0), le(y, -1.0)), 0.0, d)


def _d_xlog1py_y(x, y, r):
    return div(x, add(y, 1.0))


def _xlog1py(input, other, *, out=None):
    """xlog1py(input, other, *, out=None) -> Tensor: input * log1p(other), 0 where input is 0
    (unless other is NaN); either may be a number; as torch.special.xlog1py."""
    x, y, _ = _pair("xlog1py", input, other, numbers=True)
    return _out(_with_grad("xlog1py", _xlog1py_value, (_d_xlog1py_x, _d_xlog1py_y), x, y), out,
                "special_xlog1py")

