"""The orthogonal polynomials of torch.special (chebyshev_polynomial_t/u/v/w, their shifted_
forms, hermite_polynomial_h/he, laguerre_polynomial_l, legendre_polynomial_p), decomposed
onto the elementwise primitives as torch's kernels (ATen's Math.h) compute them: the
special values, the trigonometric forms for large n inside (-1, 1), else the three-term
recurrence, in the result's precision. The degree n is a tensor or a number (truncated to an
integer per element, as torch's cast; a non-finite n counts as negative, as on x86); the
recurrence is unrolled to the largest n, which a tensor n has to be read for (a value read:
a graph break under symtrace.compile). No gradient, as torch's. symtrace.special names them."""
import builtins
import math

from .. import _C
from .._dtype import float32, float64, int64
from ._core import _bshape, _is_tensor, _tname
from .elementwise import (abs, add, cos, div, eq, gt, logical_and, logical_or, lt, mul, ne, neg,
                          remainder, sin, sub, to_dtype, where)
from .creation import full
from .float_math import acos, isfinite, trunc
from .special_core import _nondiff, _out


def _args(fn, input, n):
    """(x in the result dtype, n as an int64 tensor, n as that dtype, the largest n) of one
    broadcast shape."""
    for pos, (nm, v) in enumerate((("input", input), ("n", n)), 1):
        if not _is_tensor(v) and not (isinstance(v, (int, float)) and not isinstance(v, bool)):
            raise TypeError(f"special_{fn}(): argument '{nm}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")
    if not _is_tensor(input) and not _is_tensor(n):
        raise TypeError(f"special_{fn}(): expected at least one Tensor argument")
    dt = _C.result_type(input, n)
    if not dt.is_floating_point:
        dt = float32
    if dt not in (float32, float64):
        raise NotImplementedError(f"\"{fn}_cpu\" not implemented for '{_tname(dt)}'")
    ref = input if _is_tensor(input) else n
    x = to_dtype(input, dt) if _is_tensor(input) else full((), input, dtype=dt, device=ref.device)
    if _is_tensor(n):
        nf = n if n.dtype.is_floating_point else None
        if nf is not None:       # torch's static_cast<int64_t>: toward zero; NaN/inf negative
            nf = where(isfinite(nf), nf, -1.0)
            ni = to_dtype(trunc(nf), int64)
        else:
            ni = to_dtype(n, int64)
        nmax = int(ni.max().item()) if ni.numel() else 0
    else:
        v = float(n)
        ni_v = int(v) if math.isfinite(v) else -1
        ni = full((), ni_v, dtype=int64, device=ref.device)
        nmax = ni_v
    shape = _bshape(tuple(x.shape), tuple(ni.shape))
    x = x.expand(shape) if tuple(x.shape) != shape else x
    ni = ni.expand(shape) if tuple(ni.shape) != shape else ni
    return x, ni, to_dtype(ni, dt), nmax


def _recurrence(n, nmax, p, q, step, res):
    """res with the n-th term of the recurrence r_k = step(k, r_{k-1}, r_{k-2}) (r_0 = p,
    r_1 = q) where 2 <= n <= nmax."""
    for k in range(2, nmax + 1):
        r = step(k, q, p)
        res = where(eq(n, k), r, res)
        p, q = q, r
    return res


def _even(n):
    return eq(remainder(n, 2), 0)


def _pm(cond, a, b):
    return where(cond, a, b)


def _cheb_family(fn, kind, shifted):
    """chebyshev_polynomial_{t,u,v,w} and their shifted forms."""
    big_n = {("t", False): 6, ("u", False): 8, ("v", False): 8, ("w", False): 8,
             ("t", True): 6, ("u", True): 6, ("v", True): 6, ("w", True): 4}[(kind, shifted)]

    def value(input, n_):
        x0, n, nf, nmax = _args(fn, input, n_)
        if shifted:
            y = sub(add(x0, x0), 1.0)
            at_one, at_m1 = eq(x0, 1.0), eq(x0, 0.0)
        else:
            y = x0
            at_one, at_m1 = eq(x0, 1.0), eq(x0, -1.0)
        two_y = add(y, y)
        q1 = {"t": y, "u": two_y, "v": sub(two_y, 1.0), "w": add(two_y, 1.0)}[kind]
        one = full((), 1.0, dtype=y.dtype, device=y.device)
        res = where(eq(n, 0), one, where(eq(n, 1), q1, mul(y, 0.0)))
        res = _recurrence(n, nmax, one, q1, lambda k, q, p: sub(mul(two_y, q), p), res)
        # the trigonometric forms, inside (-1, 1) for large n
        inside = logical_and(gt(n, big_n), lt(abs(y), 1.0))
        theta = acos(where(inside, y, 0.5))
        np1 = add(nf, 1.0)
        two_n1 = add(add(nf, nf), 1.0)
        even = _even(n)
        if kind == "t":
            trig = cos(mul(nf, theta))
        elif kind == "u":
            s = sin(theta)
            trig = where(ne(s, 0.0), div(sin(mul(np1, theta)), s),
                         div(mul(np1, cos(mul(np1, theta))), y))
        elif kind == "v":
            h = div(theta, 2.0)
            trig = where(ne(sin(h), 1.0), div(cos(mul(add(nf, 0.5), theta)), cos(h)),
                         _pm(even, two_n1, neg(two_n1)))
        else:
            h = div(theta, 2.0)
            alt = _pm(even, one, neg(one))
            trig = where(ne(cos(h), 1.0), div(sin(mul(add(nf, 0.5), theta)), sin(h)),
                         alt if shifted else where(gt(y, 0.0), two_n1, alt))
        res = where(inside, trig, res)
        # the ends of the interval
        if kind == "t":
            e1, em1 = one, _pm(even, one, neg(one))
        elif kind == "u":
            e1, em1 = np1, _pm(even, np1, neg(np1))
        elif kind == "v":
            e1, em1 = one, _pm(even, two_n1, neg(two_n1))
        else:
            e1, em1 = two_n1, _pm(even, one, neg(one))
        if shifted:
            res = where(at_m1, em1, res)
            res = where(at_one, e1, res)
        else:
            ends = eq(abs(y), 1.0)
            if kind in ("t", "u"):
                res = where(ends, where(logical_or(gt(y, 0.0), even), e1, neg(e1)), res)
            else:
                res = where(ends, where(gt(y, 0.0), e1, em1), res)
        return where(lt(n, 0), 0.0, res)
    return value


def _hermite_value(fn, physicists):
    def value(input, n_):
        x, n, nf, nmax = _args(fn, input, n_)
        limit = 128 if x.dtype is float32 else 512
        one = full((), 1.0, dtype=x.dtype, device=x.device)
        q1 = add(x, x) if physicists else x
        res = where(eq(n, 0), one, where(eq(n, 1), q1, mul(x, 0.0)))
        if physicists:     # r = 2x q - 2(k-1) p
            step = lambda k, q, p: sub(mul(q1, q), mul(p, float(2 * (k - 1))))  # noqa: E731
        else:              # r = x q - (k-1) p
            step = lambda k, q, p: sub(mul(x, q), mul(p, float(k - 1)))  # noqa: E731
        res = _recurrence(n, builtins.min(nmax, limit), one, q1, step, res)
        res = where(gt(n, limit), math.nan, res)
        return where(lt(n, 0), 0.0, res)
    return value


def _laguerre_value(input, n_):
    x, n, nf, nmax = _args("laguerre_polynomial_l", input, n_)
    one = full((), 1.0, dtype=x.dtype, device=x.device)
    omx = sub(1.0, x)
    res = where(eq(n, 0), one, where(eq(n, 1), omx, mul(x, 0.0)))
    res = _recurrence(n, nmax, one, omx, lambda k, q, p: div(sub(
        mul(add(omx, float(2 * (k - 1))), q), mul(p, float(k - 1))), float(k)), res)
    res = where(eq(abs(x), 0.0), one, res)
    return where(lt(n, 0), 0.0, res)


def _legendre_value(input, n_):
    x, n, nf, nmax = _args("legendre_polynomial_p", input, n_)
    one = full((), 1.0, dtype=x.dtype, device=x.device)
    res = where(eq(n, 0), one, where(eq(n, 1), x, mul(x, 0.0)))
    res = _recurrence(n, nmax, one, x, lambda k, q, p: div(sub(
        mul(mul(x, float(2 * k - 1)), q), mul(p, float(k - 1))), float(k)), res)
    ends = eq(abs(x), 1.0)
    res = where(ends, where(logical_or(gt(x, 0.0), _even(n)), one, neg(one)), res)
    return where(lt(n, 0), 0.0, res)


def _poly(fn, value, doc):
    def f(input, n, *, out=None):
        return _out(_nondiff(value, input, n), out, "special_" + fn)
    f.__name__ = f.__qualname__ = "_" + fn
    f.__doc__ = f"{fn}(input, n, *, out=None) -> Tensor: {doc}, as torch.special.{fn}."
    return f


_chebyshev_polynomial_t = _poly("chebyshev_polynomial_t", _cheb_family(
    "chebyshev_polynomial_t", "t", False), "the Chebyshev polynomial of the first kind T_n")
_chebyshev_polynomial_u = _poly("chebyshev_polynomial_u", _cheb_family(
    "chebyshev_polynomial_u", "u", False), "the Chebyshev polynomial of the second kind U_n")
_chebyshev_polynomial_v = _poly("chebyshev_polynomial_v", _cheb_family(
    "chebyshev_polynomial_v", "v", False), "the Chebyshev polynomial of the third kind V_n")
_chebyshev_polynomial_w = _poly("chebyshev_polynomial_w", _cheb_family(
    "chebyshev_polynomial_w", "w", False), "the Chebyshev polynomial of the fourth kind W_n")
_shifted_chebyshev_polynomial_t = _poly("shifted_chebyshev_polynomial_t", _cheb_family(
    "shifted_chebyshev_polynomial_t", "t", True), "T_n(2x - 1)")
_shifted_chebyshev_polynomial_u = _poly("shifted_chebyshev_polynomial_u", _cheb_family(
    "shifted_chebyshev_polynomial_u", "u", True), "U_n(2x - 1)")
_shifted_chebyshev_polynomial_v = _poly("shifted_chebyshev_polynomial_v", _cheb_family(
    "shifted_chebyshev_polynomial_v", "v", True), "V_n(2x - 1)")
_shifted_chebyshev_polynomial_w = _poly("shifted_chebyshev_polynomial_w", _cheb_family(
    "shifted_chebyshev_polynomial_w", "w", True), "W_n(2x - 1)")
_hermite_polynomial_h = _poly("hermite_polynomial_h", _hermite_value(
    "hermite_polynomial_h", True), "the physicists' Hermite polynomial H_n")
_hermite_polynomial_he = _poly("hermite_polynomial_he", _hermite_value(
    "hermite_polynomial_he", False), "the probabilists' Hermite polynomial He_n")
_laguerre_polynomial_l = _poly("laguerre_polynomial_l", _laguerre_value,
                               "the Laguerre polynomial L_n")
_legendre_polynomial_p = _poly("legendre_polynomial_p", _legendre_value,
                               "the Legendre polynomial P_n")

