"""sweep_scalars.py - a random sweep of symtrace's eager ops against torch's (CPU):
binary and unary ops with tensor / Python scalar operands across dtypes (type promotion),
integer division and overflow (div rounding modes, floor_divide, remainder, fmod with
negatives and zero divisors), shifts, comparisons and clamp with NaN, stable sort /
argsort with NaN and -0.0, unique / unique_consecutive with inverse and counts. Each case
compares the result's dtype, shape and values (NaN equal, -0.0 distinct), or the error's
type. Prints the cases that differ; not part of the test suite.

    PYTHONPATH=. .venv/bin/python scripts/sweep_scalars.py [N] [SEED]
"""
import math
import random
import sys

import numpy as np
import torch

import symtrace as st

DTYPES = ["int8", "uint8", "int16", "int32", "int64", "bool", "float16", "bfloat16",
          "float32", "float64"]
INTS = ["int8", "uint8", "int16", "int32", "int64"]


def values(rng, dt, n):
    if dt == "bool":
        return [rng.random() < 0.5 for _ in range(n)]
    if dt in INTS:
        info = np.iinfo(dt)
        pool = [0, 1, -1, 2, -2, 3, -7, 7, int(info.min), int(info.max), 100, -100, 5]
        return [int(np.clip(rng.choice(pool), info.min, info.max)) for _ in range(n)]
    pool = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 3.0, -7.0, float("nan"), float("inf"),
            float("-inf"), 1e-3, 65504.0, 1e30]
    return [rng.choice(pool) for _ in range(n)]


def scalar(rng):
    return rng.choice([0, 1, -1, 2, -3, 7, 300, -129, 2 ** 40, True, False, 0.0, -0.0, 0.5,
                       -2.5, 3.0, float("nan"), float("inf"), float("-inf"), 1e300])


def make(m, vals, dt):
    if dt in ("float16", "bfloat16"):
        return m.tensor(vals, dtype=m.float64).to(getattr(m, dt))
    return m.tensor(vals, dtype=getattr(m, dt))


def canon(r):
    """('ok', dtype, shape, values) for a tensor (or tuple), ('err', type) for an error."""
    if isinstance(r, tuple):
        return tuple(canon(x) for x in r)
    if isinstance(r, (torch.Tensor, st.Tensor)):
        dt = str(r.dtype).split(".")[-1]
        x = r.detach()
        if dt in ("float16", "bfloat16"):
            x = x.to(x.float().dtype if False else (torch.float64 if isinstance(x, torch.Tensor) else st.float64))
        v = x.tolist()
        return ("ok", dt, tuple(r.shape), repr(v))
    return ("ok", type(r).__name__, repr(r))


def run(m, fn):
    try:
        return canon(fn(m))
    except Exception as e:   # noqa: BLE001 - the sweep compares error types
        return ("err", type(e).__name__)


BINARY = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod",
          "pow", "atan2", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt",
          "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
          "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "hypot",
          "copysign", "nextafter", "xlogy", "div_trunc", "div_floor"]
UNARY = ["neg", "abs", "sign", "sqrt", "exp", "log", "floor", "ceil", "round", "trunc",
         "frac", "reciprocal", "rsqrt", "sigmoid", "bitwise_not", "logical_not", "square",
         "sgn", "signbit", "isnan", "isinf", "isfinite", "nan_to_num", "positive", "exp2",
         "expm1", "log1p", "sin", "tanh", "erf", "relu", "isneginf", "isposinf", "fix"]


def binary_case(rng):
    op = rng.choice(BINARY)
    da, db = rng.choice(DTYPES), rng.choice(DTYPES)
    n = rng.choice([1, 3, 5])
    a, b = values(rng, da, n), values(rng, db, n)
    form = rng.choice(["tt", "ts", "st", "t0", "inplace", "inplace_s"])
    s = scalar(rng)

    def fn(m):
        ta, tb = make(m, a, da), make(m, b, db)
        if form == "ts":
            tb = s
        elif form == "st":
            ta, tb = s, tb
        elif form == "t0":
            tb = make(m, b[:1], db).reshape(())
        if op in ("div_trunc", "div_floor"):
            f = lambda x, y: m.div(x, y, rounding_mode=op[4:])
        else:
            f = getattr(m, op)
        if form.startswith("inplace"):
            y = s if form == "inplace_s" else tb
            meth = {"div_trunc": "div_", "div_floor": "div_"}.get(op, op + "_")
            if not hasattr(ta, meth):
                return f(ta, y)
            kw = {"rounding_mode": op[4:]} if op in ("div_trunc", "div_floor") else {}
            return getattr(ta, meth)(y, **kw)
        if form == "st" and not isinstance(ta, (torch.Tensor, st.Tensor)):
            # a Python scalar first: through the reflected operators where there are some
            ops = {"add": "__radd__", "sub": "__rsub__", "mul": "__rmul__", "div": "__rtruediv__",
                   "floor_divide": "__rfloordiv__", "remainder": "__rmod__", "pow": "__rpow__",
                   "bitwise_and": "__rand__", "bitwise_or": "__ror__", "bitwise_xor": "__rxor__",
                   "bitwise_left_shift": "__rlshift__", "bitwise_right_shift": "__rrshift__"}
            if op in ops:
                return getattr(tb, ops[op])(ta)
            return f(ta, tb)
        return f(ta, tb)
    return (op, da, db, form, a, b, s), fn


def unary_case(rng):
    op = rng.choice(UNARY)
    da = rng.choice(DTYPES)
    a = values(rng, da, rng.choice([1, 4]))
    inplace = rng.random() < 0.3

    def fn(m):
        ta = make(m, a, da)
        if inplace and hasattr(ta, op + "_"):
            return getattr(ta, op + "_")()
        return getattr(m, op)(ta)
    return (op, da, inplace, a), fn


def clamp_case(rng):
    da = rng.choice(DTYPES)
    a = values(rng, da, 5)
    lo, hi = rng.choice([None, scalar(rng)]), rng.choice([None, scalar(rng)])
    tens = rng.random() < 0.4

    def fn(m):
        ta = make(m, a, da)
        if tens:
            tl = None if lo is None else m.full((5,), float(lo) if not isinstance(lo, bool) else lo)
            th = None if hi is None else m.full((5,), float(hi) if not isinstance(hi, bool) else hi)
            return m.clamp(ta, tl, th)
        return m.clamp(ta, lo, hi)
    return ("clamp", da, a, lo, hi, tens), fn


def sort_case(rng):
    da = rng.choice(["float32", "float64", "float16", "bfloat16", "int32", "int64", "int8",
                     "uint8", "bool"])
    n = rng.choice([3, 8, 17, 40])
    a = values(rng, da, n)
    desc = rng.random() < 0.5
    which = rng.choice(["sort", "argsort", "msort", "topk", "kthvalue"])

    def fn(m):
        ta = make(m, a, da)
        if which == "sort":
            r = m.sort(ta, stable=True, descending=desc)
            return (r[0], r[1])
        if which == "argsort":
            return m.argsort(ta, stable=True, descending=desc)
        if which == "msort":
            return m.msort(ta)
        if which == "topk":
            r = m.topk(ta, min(3, n), largest=not desc)
            return (r[0],)
        r = m.kthvalue(ta, min(2, n))
        return (r[0],)
    return (which, da, desc, a), fn


def unique_case(rng):
    da = rng.choice(["float32", "float64", "int32", "int64", "int8", "uint8", "bool", "float16"])
    a = values(rng, da, rng.choice([4, 9]))
    kw = dict(return_inverse=rng.random() < 0.5, return_counts=rng.random() < 0.5)
    which = rng.choice(["unique", "unique_consecutive", "unique_sorted_false"])

    def fn(m):
        ta = make(m, a, da)
        if which == "unique":
            r = m.unique(ta, **kw)
        elif which == "unique_sorted_false":
            r = m.unique(ta, sorted=False, **kw)
            if not isinstance(r, tuple):
                r = (r,)
            r = tuple(x.sort().values if i == 0 else x.sort().values for i, x in enumerate(r))
        else:
            r = m.unique_consecutive(ta, **kw)
        return r if isinstance(r, tuple) else (r,)
    return (which, da, kw, a), fn


KINDS = [binary_case] * 6 + [unary_case] * 2 + [clamp_case, sort_case, unique_case]


def same(t, s):
    if t == s:
        return True
    if isinstance(t, tuple) and isinstance(s, tuple) and len(t) == len(s) and t and \
            isinstance(t[0], tuple):
        return all(same(a, b) for a, b in zip(t, s))
    if t[0] == s[0] == "ok" and len(t) == 4 and len(s) == 4 and t[1:3] == s[1:3]:
        tv, sv = eval(t[3], {"nan": math.nan, "inf": math.inf}), eval(s[3], {"nan": math.nan, "inf": math.inf})
        ta, sa = np.array(tv, dtype=np.float64), np.array(sv, dtype=np.float64)
        if ta.shape != sa.shape:
            return False
        if t[1].startswith(("float", "bfloat")):
            close = np.isclose(ta, sa, rtol=1e-6, atol=0, equal_nan=True)
            return bool(close.all())
    return False


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    bad = 0
    for k in range(seed, seed + n):
        rng = random.Random(k)
        desc, fn = rng.choice(KINDS)(rng)
        t, s = run(torch, fn), run(st, fn)
        if not same(t, s):
            bad += 1
            print(k, desc, "\n   torch   ", t, "\n   symtrace", s)
    print(f"{bad} of {n} differ")


if __name__ == "__main__":
    main()
