# Elementwise ops: unary, binary (with broadcasting), comparisons, logical ops,
# where / masked_fill / clamp, casts and Python operators; against a float64 numpy
# reference and against torch, over every dtype and contiguous and strided views.
import math

import numpy as np
import pytest

import symtrace as st
from conftest import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, assert_close,
                      check_torch, make, sd, is_float, exact_in, promote)

_erf = np.vectorize(math.erf)

# name -> (numpy reference, input range, result keeps int dtype)
UNARY = {
    "neg": (lambda x: -x, (-2, 2), True),
    "exp": (np.exp, (-2, 2), False),
    "log": (np.log, (0.1, 3), False),
    "sqrt": (np.sqrt, (0.1, 3), False),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 3), False),
    "tanh": (np.tanh, (-2, 2), False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-3, 3), False),
    "relu": (lambda x: np.maximum(x, 0), (-2, 2), True),
    "erf": (_erf, (-2, 2), False),
    "abs": (np.abs, (-2, 2), True),
}

SHAPES = [(3, 5), (2, 3, 4)]


def _int_range(lo, hi):
    return (max(int(math.ceil(lo)), 1 if lo > 0 else int(lo)), int(hi))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_numpy(name, dtype, layout):
    ref, (lo, hi), keeps_int = UNARY[name]
    if not is_float(dtype):
        lo, hi = _int_range(lo, hi)
    x = make((3, 5), dtype, layout, low=lo, high=hi)
    out_dtype = dtype if (is_float(dtype) or keeps_int) else "float32"
    expected = ref(x.np.astype(np.float64))
    if not is_float(out_dtype):
        expected = expected.astype(np.int64)
    assert_close(getattr(st, name)(x.st), expected, dtype=out_dtype)
    assert_close(getattr(x.st, name)(), expected, dtype=out_dtype)


@pytest.mark.parametrize("layout", ["contig", "transposed", "strided"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_torch(torch, name, dtype, layout):
    _, (lo, hi), _ = UNARY[name]
    if not is_float(dtype):
        lo, hi = _int_range(lo, hi)
    x = make((2, 3, 4), dtype, layout, low=lo, high=hi)
    check_torch(getattr(st, name), getattr(torch, name), x)


def test_unary_0d_and_empty():
    for shape in [(), (0,), (2, 0, 3)]:
        x = make(shape, "float32")
        assert_close(st.exp(x.st), np.exp(x.np), dtype="float32")
        assert_close(st.neg(x.st), -x.np, dtype="float32")


# ---------------------------------------------------------------- binary
BINARY = {
    "add": (np.add, (-2, 2), (-2, 2)),
    "sub": (np.subtract, (-2, 2), (-2, 2)),
    "mul": (np.multiply, (-2, 2), (-2, 2)),
    "div": (np.divide, (-2, 2), (0.5, 2)),
    "pow": (np.power, (0.5, 2), (-2, 2)),
    "maximum": (np.maximum, (-2, 2), (-2, 2)),
    "minimum": (np.minimum, (-2, 2), (-2, 2)),
}
BCAST = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((5,), ()),
         ((1, 3), (2, 1))]


def _binary_inputs(name, dtype, sa, sb, layout="contig"):
    _, ra, rb = BINARY[name]
    if not is_float(dtype):
        ra = (0, 3) if name == "pow" else (-3, 3)
        rb = (0, 3) if name == "pow" else ((1, 3) if name == "div" else (-3, 3))
    a = make(sa, dtype, layout, low=ra[0], high=ra[1])
    b = make(sb, dtype, layout, low=rb[0], high=rb[1])
    return a, b


@pytest.mark.parametrize("shapes", BCAST, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_numpy(name, dtype, shapes):
    ref = BINARY[name][0]
    a, b = _binary_inputs(name, dtype, *shapes)
    out_dtype = dtype
    if name == "div" and not is_float(dtype):
        out_dtype = "float32"
    exp = ref(a.np.astype(np.float64), b.np.astype(np.float64))
    if not is_float(out_dtype):
        exp = exp.astype(np.int64)
    rtol = None
    if name == "pow" and dtype in ("float16", "bfloat16"):
        rtol = 2 * {"float16": 1e-2, "bfloat16": 2e-2}[dtype]
    assert_close(getattr(st, name)(a.st, b.st), exp, dtype=out_dtype, rtol=rtol)
    assert_close(getattr(a.st, name)(b.st), exp, dtype=out_dtype, rtol=rtol)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_torch(torch, name, dtype, layout):
    a, b = _binary_inputs(name, dtype, (2, 3, 4), (2, 3, 4), layout)
    check_torch(getattr(st, name), getattr(torch, name), a, b)
    # broadcast a strided/transposed view against a row
    a2, c = _binary_inputs(name, dtype, (2, 3, 4), (4,), layout)
    check_torch(getattr(st, name), getattr(torch, name), a2, c)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
def test_add_sub_alpha(dtype):
    a, b = _binary_inputs("add", dtype, (3, 4), (4,))
    alpha = 2 if not is_float(dtype) else 0.5
    assert_close(st.add(a.st, b.st, alpha=alpha), a.np + alpha * b.np, dtype=dtype)
    assert_close(st.sub(a.st, b.st, alpha=alpha), a.np - alpha * b.np, dtype=dtype)
    assert_close(a.st.add(b.st, alpha=alpha), a.np + alpha * b.np, dtype=dtype)


def test_add_alpha_torch(torch):
    a, b = _binary_inputs("add", "float32", (3, 4), (3, 1))
    check_torch(lambda x, y: st.add(x, y, alpha=3), lambda x, y: torch.add(x, y, alpha=3), a, b)
    check_torch(lambda x, y: st.sub(x, y, alpha=-1.5), lambda x, y: torch.sub(x, y, alpha=-1.5), a, b)


# ---------------------------------------------------------------- comparisons
CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
       "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", list(CMP))
def test_compare(name, dtype):
    # small value range so equality actually happens
    a = make((4, 5), dtype, "contig", low=-1, high=1)
    b = make((4, 5), dtype, "strided", low=-1, high=1)
    if is_float(dtype):  # round to halves so ties occur
        a = make((4, 5), dtype, values=np.round(a.np * 2) / 2)
        b = make((4, 5), dtype, values=np.round(b.np * 2) / 2)
    exp = CMP[name](a.np, b.np)
    assert_close(getattr(st, name)(a.st, b.st), exp, dtype="bool")
    assert_close(getattr(a.st, name)(b.st), exp, dtype="bool")
    # against a broadcast row and a python number
    assert_close(getattr(st, name)(a.st, b.st[0]), CMP[name](a.np, b.np[0]), dtype="bool")
    if dtype != "bool":
        assert_close(getattr(st, name)(a.st, 0), CMP[name](a.np, 0), dtype="bool")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", list(CMP))
def test_compare_torch(torch, name, dtype):
    a = make((2, 3, 4), dtype, "transposed", low=-1, high=1)
    b = make((3, 4), dtype, "contig", low=-1, high=1)
    check_torch(getattr(st, name), getattr(torch, name), a, b)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_logical(dtype):
    a = make((3, 4), dtype, low=-1, high=1)
    b = make((4,), dtype, low=-1, high=1)
    an, bn = a.np != 0, b.np != 0
    assert_close(st.logical_not(a.st), ~an, dtype="bool")
    assert_close(st.logical_and(a.st, b.st), an & bn, dtype="bool")
    assert_close(st.logical_or(a.st, b.st), an | bn, dtype="bool")
    assert_close(a.st.logical_not(), ~an, dtype="bool")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_logical_torch(torch, dtype):
    a = make((3, 4), dtype, "transposed", low=-1, high=1)
    b = make((3, 4), dtype, "strided", low=-1, high=1)
    check_torch(st.logical_not, torch.logical_not, a)
    check_torch(st.logical_and, torch.logical_and, a, b)
    check_torch(st.logical_or, torch.logical_or, a, b)


# ---------------------------------------------------------------- where, masked_fill, clamp
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", ["contig", "transposed"])
def test_where(dtype, layout):
    c = make((3, 4), "bool", layout)
    a = make((3, 4), dtype, layout)
    b = make((4,), dtype)
    assert_close(st.where(c.st, a.st, b.st), np.where(c.np, a.np, b.np), dtype=dtype)
    # condition broadcast
    c1 = make((3, 1), "bool")
    assert_close(st.where(c1.st, a.st, b.st), np.where(c1.np, a.np, b.np), dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_where_torch(torch, dtype):
    c = make((2, 3, 4), "bool", "strided")
    a = make((2, 3, 4), dtype, "transposed")
    b = make((3, 1), dtype)
    check_torch(st.where, torch.where, c, a, b)
    if dtype != "bool":
        check_torch(lambda c_, a_: st.where(c_, a_, 0.0), lambda c_, a_: torch.where(c_, a_, 0.0), c, a)
    m = make((2, 3, 4), dtype)
    check_torch(st.where, torch.where, c, a, m)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_masked_fill(dtype):
    x = make((3, 4), dtype)
    m = make((3, 4), "bool")
    v = True if dtype == "bool" else (2 if dtype in INT_DTYPES else -1.5)
    assert_close(x.st.masked_fill(m.st, v), np.where(m.np, v, x.np), dtype=dtype)
    m1 = make((4,), "bool")
    assert_close(x.st.masked_fill(m1.st, v), np.where(m1.np, v, x.np), dtype=dtype)
    # the input is unchanged
    assert_close(x.st, x.np, dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_masked_fill_torch(torch, dtype):
    x = make((2, 3, 4), dtype, "transposed")
    m = make((3, 4), "bool")
    check_torch(lambda a, b: a.masked_fill(b, -3), lambda a, b: a.masked_fill(b, -3), x, m)
    check_torch(lambda a, b: a.masked_fill(b, float("-inf")), lambda a, b: a.masked_fill(b, float("-inf")), x, m)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
@pytest.mark.parametrize("layout", ["contig", "strided"])
def test_clamp(dtype, layout):
    x = make((4, 6), dtype, layout, low=-3, high=3)
    # (uint8 wraps a -1 bound to 255, as torch: test_clamp_torch checks that)
    lo, hi = ((0 if dtype == "uint8" else -1), 2) if not is_float(dtype) else (-0.5, 1.25)
    assert_close(st.clamp(x.st, lo, hi), np.clip(x.np, lo, hi), dtype=dtype)
    assert_close(x.st.clamp(min=lo), np.maximum(x.np, lo), dtype=dtype)
    assert_close(x.st.clamp(max=hi), np.minimum(x.np, hi), dtype=dtype)
    assert_close(st.clamp(x.st, min=lo, max=hi), np.clip(x.np, lo, hi), dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_clamp_torch(torch, dtype):
    x = make((2, 3, 4), dtype, "transposed", low=-3, high=3)
    check_torch(lambda a: st.clamp(a, -1, 2), lambda a: torch.clamp(a, -1, 2), x)
    check_torch(lambda a: st.clamp(a, -0.5, 1.5), lambda a: torch.clamp(a, -0.5, 1.5), x)
    check_torch(lambda a: a.clamp(min=0), lambda a: a.clamp(min=0), x)


# ---------------------------------------------------------------- casts
CAST_METHODS = {"float": "float32", "double": "float64", "half": "float16",
                "bfloat16": "bfloat16", "long": "int64", "int": "int32", "bool": "bool"}


def _cast_ref(a, src, dst):
    if dst == "bool":
        return a != 0
    if dst in INT_DTYPES:
        return np.trunc(a.astype(np.float64)).astype(np.int64) if is_float(src) else a.astype(np.int64)
    return exact_in(a.astype(np.float64), dst)


@pytest.mark.parametrize("dst", ALL_DTYPES)
@pytest.mark.parametrize("src", ALL_DTYPES)
def test_cast(src, dst):
    x = make((3, 5), src, "strided", low=-3, high=3)
    exp = _cast_ref(x.np, src, dst)
    assert_close(x.st.to(sd(dst)), exp, dtype=dst)
    assert_close(x.st.to(dtype=sd(dst)), exp, dtype=dst)


@pytest.mark.parametrize("method", list(CAST_METHODS))
@pytest.mark.parametrize("src", ALL_DTYPES)
def test_cast_methods(src, method):
    dst = CAST_METHODS[method]
    x = make((2, 3), src, "transposed", low=-3, high=3)
    assert_close(getattr(x.st, method)(), _cast_ref(x.np, src, dst), dtype=dst)


@pytest.mark.parametrize("dst", ALL_DTYPES)
@pytest.mark.parametrize("src", ALL_DTYPES)
def test_cast_torch(torch, src, dst):
    x = make((2, 3, 4), src, "transposed", low=-3, high=3)
    check_torch(lambda a: a.to(sd(dst)), lambda a: a.to(getattr(torch, dst)), x)


def test_cast_rounding_values(torch):
    vals = [0.1, 1.0 / 3, 1e-3, 65504.0, 70000.0, -2.5, 1e-8, 3.14159265358979]
    for dst in ["float16", "bfloat16", "float32"]:
        x = st.tensor(vals, dtype=st.float64)
        got = x.to(sd(dst))
        exp = torch.tensor(vals, dtype=torch.float64).to(getattr(torch, dst))
        assert_close(got, exp, rtol=0, atol=0)


def test_cast_same_dtype_values_unchanged():
    x = make((4,), "float32")
    y = x.st.to(st.float32)
    assert_close(y, x.np, dtype="float32")


# ---------------------------------------------------------------- python operators
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_python_operators_float(dtype):
    x = make((3, 4), dtype, low=0.5, high=2)
    y = make((4,), dtype, low=0.5, high=2)
    a, b = x.np, y.np
    cases = [
        (x.st + y.st, a + b), (x.st - y.st, a - b), (x.st * y.st, a * b), (x.st / y.st, a / b),
        (x.st + 2, a + 2), (2 + x.st, 2 + a), (x.st - 2, a - 2), (2 - x.st, 2 - a),
        (x.st * 2.5, a * 2.5), (2.5 * x.st, 2.5 * a), (x.st / 2, a / 2), (2 / x.st, 2 / a),
        (x.st ** 2, a ** 2), (2 ** x.st, 2 ** a), (x.st ** y.st, a ** b), (x.st ** 0.5, a ** 0.5),
        (-x.st, -a), (abs(-x.st), a),
    ]
    for i, (got, exp) in enumerate(cases):
        assert_close(got, exp, dtype=dtype, msg="case %d" % i)
    for got, exp in [(x.st < 1, a < 1), (x.st <= 1, a <= 1), (x.st > 1, a > 1),
                     (x.st >= 1, a >= 1), (x.st == y.st, a == b), (x.st != y.st, a != b),
                     (1 < x.st, 1 < a), (x.st < y.st, a < b)]:
        assert_close(got, exp, dtype="bool")


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_python_operators_int(dtype):
    x = make((3, 4), dtype, low=1, high=4)
    a = x.np
    for got, exp, d in [(x.st + 2, a + 2, dtype), (3 - x.st, 3 - a, dtype), (x.st * 3, a * 3, dtype),
                        (x.st ** 2, a ** 2, dtype), (2 ** x.st, 2 ** a, dtype),
                        (x.st / 2, a / 2, "float32"), (2 / x.st, 2 / a, "float32"),
                        (x.st + 0.5, a + 0.5, "float32"), (-x.st, -a, dtype),
                        (abs(-x.st), (-a) % 256 if dtype == "uint8" else a, dtype)]:  # uint8: abs is identity
        assert_close(got, exp, dtype=d)


def test_python_operators_bool():
    p = make((3, 4), "bool")
    q = make((4,), "bool")
    assert_close(~p.st, ~p.np, dtype="bool")
    assert_close(p.st & q.st, p.np & q.np, dtype="bool")
    assert_close(p.st | q.st, p.np | q.np, dtype="bool")
    assert_close(p.st == q.st, p.np == q.np, dtype="bool")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_python_operators_torch(torch, dtype):
    x = make((2, 3), dtype, "transposed", low=1, high=3)
    y = make((3,), dtype, low=1, high=3)
    ops = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
           lambda a, b: a + 2, lambda a, b: 2 - a, lambda a, b: 2 / a, lambda a, b: a * 0.5,
           lambda a, b: a ** 2, lambda a, b: 2 ** a, lambda a, b: -a, lambda a, b: abs(a),
           lambda a, b: a < 2, lambda a, b: a >= b, lambda a, b: a == b, lambda a, b: ~(a > b),
           lambda a, b: (a > 1) & (b < 2), lambda a, b: (a > 1) | (b < 2), lambda a, b: a + True]
    for i, f in enumerate(ops):
        check_torch(f, f, x, y, msg="op %d" % i)


# ---------------------------------------------------------------- special values
def test_special_values(torch):
    vals = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e30, -1e30, 88.0, -88.0]
    x = st.tensor(vals)
    tx = torch.tensor(vals)
    for name in ["exp", "tanh", "sigmoid", "relu", "abs", "neg", "erf"]:
        assert_close(getattr(st, name)(x), getattr(torch, name)(tx), msg=name)
    for name in ["log", "sqrt", "rsqrt"]:  # nan/inf for negatives and zero, as torch
        assert_close(getattr(st, name)(x), getattr(torch, name)(tx), msg=name)
    assert_close(st.maximum(x, st.tensor(0.0)), torch.maximum(tx, torch.tensor(0.0)))
    assert_close(x / 0, tx / 0)


@pytest.mark.parametrize("call", [
    lambda m: m.sub(m.tensor([1, 2]), 5, alpha=0.5),
    lambda m: m.add(m.tensor([1, 2]), m.tensor([1, 2]), alpha=0.5),
    lambda m: m.tensor([1, 2]).add_(m.tensor([1, 2]), alpha=0.5),
    lambda m: m.tensor([1, 2]).sub_(3, alpha=1.5),
    lambda m: m.rsub(m.tensor([1, 2]), 3, alpha=0.5),
])
def test_float_alpha_refused_for_an_integer_result(call):
    """add/sub/rsub with a float alpha where the result is an integer: torch's error."""
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a "
                                           "floating point number."):
        call(st)
    assert st.add(st.tensor([1.0, 2.0]), st.tensor([1, 2]), alpha=0.5).tolist() == [1.5, 3.0]
    assert st.add(st.tensor([1, 2]), 2.5, alpha=2).tolist() == [6.0, 7.0]
