# Type promotion: result dtypes of mixed-dtype ops for every pair of our dtypes,
# tensor with Python scalar, 0-d tensors with dimensioned tensors; against the
# table in conftest (numpy-only) and against torch.
import numpy as np
import pytest

import symtrace as st
from conftest import (ALL_DTYPES, NP_DTYPE, assert_close, check_torch, dtype_name, is_float, make,
                      promote, promote_scalar, sd)

PAIRS = [(a, b) for a in ALL_DTYPES for b in ALL_DTYPES]
OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "maximum": st.maximum,
       "where": lambda a, b: st.where(st.ones(a.shape, dtype=st.bool), a, b)}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("a,b", PAIRS)
def test_pair_promotion_table(a, b, op):
    x = make((2, 3), a, low=0, high=2)
    y = make((3,), b, low=0, high=2)
    exp = promote(a, b)
    r = OPS[op](x.st, y.st)
    assert dtype_name(r.dtype) == exp, (a, b, op, dtype_name(r.dtype), exp)
    xf, yf = x.np.astype(np.float64), y.np.astype(np.float64)
    ref = {"add": lambda: xf + yf, "mul": lambda: xf * yf, "maximum": lambda: np.maximum(xf, yf),
           "where": lambda: np.broadcast_to(xf, (2, 3))}[op]()
    if exp == "bool":
        ref = ref != 0
    assert_close(r, ref, dtype=exp)


@pytest.mark.parametrize("a,b", PAIRS)
def test_pair_promotion_torch(torch, a, b):
    x = make((2, 3), a, low=0, high=2)
    y = make((2, 3), b, "transposed", low=1, high=2)
    assert promote(a, b) == dtype_name(torch.promote_types(getattr(torch, a), getattr(torch, b)))
    for f in (lambda p, q: p + q, lambda p, q: p - q, lambda p, q: p * q, lambda p, q: p / q,
              lambda p, q: p == q, lambda p, q: p < q):
        check_torch(f, f, x, y)
    check_torch(st.maximum, torch.maximum, x, y)
    check_torch(st.minimum, torch.minimum, x, y)
    check_torch(st.pow, torch.pow, x, y)
    check_torch(lambda c, p, q: st.where(c, p, q), lambda c, p, q: torch.where(c, p, q),
                make((2, 3), "bool"), x, y)
    check_torch(lambda p, q: st.cat([p, q]), lambda p, q: torch.cat([p, q]), x, y)


SCALARS = [2, -3, 2.5, True, False, 0.0]


@pytest.mark.parametrize("s", SCALARS, ids=repr)
@pytest.mark.parametrize("a", ALL_DTYPES)
def test_scalar_promotion_table(a, s):
    x = make((2, 3), a, low=0, high=2)
    exp = promote_scalar(a, s)
    for r in (x.st + s, s + x.st, x.st * s, s * x.st, st.add(x.st, s), st.mul(x.st, s)):
        assert dtype_name(r.dtype) == exp, (a, s, dtype_name(r.dtype), exp)
    ref = x.np.astype(np.float64) + float(s)
    if exp == "bool":
        ref = ref != 0
    elif not is_float(exp):  # integer results wrap, as C casts do (uint8: 1 - 3 == 254)
        ref = ref.astype(np.int64).astype(NP_DTYPE[exp])
    assert_close(x.st + s, ref, dtype=exp)


@pytest.mark.parametrize("s", SCALARS, ids=repr)
@pytest.mark.parametrize("a", ALL_DTYPES)
def test_scalar_promotion_torch(torch, a, s):
    x = make((2, 3), a, low=1, high=2)
    for f in (lambda p: p + s, lambda p: s + p, lambda p: p - s, lambda p: s - p, lambda p: p * s,
              lambda p: p / 2, lambda p: 2 / p, lambda p: p ** 2, lambda p: p == s, lambda p: p > s,
              lambda p: p.masked_fill(p > 1, s), lambda p: p.clamp(min=0),
              lambda p: st.where(p > 1, p, s) if isinstance(p, st.Tensor) else torch.where(p > 1, p, s)):
        check_torch(f, f, x)


@pytest.mark.parametrize("a,b", [("float32", "float64"), ("int32", "int64"), ("int64", "float16"),
                                 ("float16", "float64"), ("bool", "int32"), ("int32", "float64"),
                                 ("bfloat16", "float32"), ("uint8", "int8"), ("int8", "int64"),
                                 ("uint8", "float16"), ("int16", "int32"), ("bool", "uint8")])
def test_zero_dim_tensor_promotion(torch, a, b):
    # a 0-d tensor does not raise the result dtype within its category, as torch
    x = make((3,), a)
    z = make((), b, low=1, high=2)
    check_torch(lambda p, q: p + q, lambda p, q: p + q, x, z)
    check_torch(lambda p, q: q * p, lambda p, q: q * p, x, z)
    x0 = make((), a)
    check_torch(lambda p, q: p + q, lambda p, q: p + q, x0, z)


def test_result_dtype_of_unary_float_ops(torch):
    for a in ALL_DTYPES:
        x = make((4,), a, low=1, high=2)
        for name in ("exp", "sqrt", "sigmoid", "tanh"):
            check_torch(getattr(st, name), getattr(torch, name), x)
        check_torch(st.mean, torch.mean, x)
        check_torch(st.sum, torch.sum, x)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_ops_with_numbers_compute_in_float(torch, dt):
    # torch's opmath: a Python number (or a 0-d float32/int tensor) meets a half tensor in
    # float, not rounded to the half type first (half(0.5) * 1e5 is 49984, not inf)
    x = make((4,), dt, values=[0.5, 3.0, -0.25, 1e-3])
    for f in (lambda a: a * 1e5, lambda a: a / 1e-5, lambda a: a * 100000, lambda a: a + 1e-4,
              lambda a: a - 0.1, lambda a: 3.3 * a, lambda a: a * a.new_tensor(1e5).float()
              if False else a * 7.77, lambda a: 1e5 - a):
        check_torch(f, f, x, rtol=0, atol=0)
    check_torch(lambda a: a * st.tensor(1e5), lambda a: a * torch.tensor(1e5), x, rtol=0, atol=0)
