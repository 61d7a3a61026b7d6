"""Elementwise ops with kernels of their own: the unary and binary primitives
(neg, exp, ..., mul, pow, eq, ...), add/sub with alpha, div with its rounding modes,
result_type, where, clamp, masked_fill (with its integer range check), the dtype cast
to_dtype; and addcmul, addcdiv and lerp written over them."""
import builtins
import math

from .. import _C
from .._dtype import bfloat16, bool_, float16, float32, float64, uint8
from ._core import f32 as _f32, HAS_MAX, HAS_MIN, INT_VALUE, _attrs, _check_tensor, _is_tensor, _op, _tname


# ---------------- elementwise ----------------
def _unary(opid, fname):
    def f(input):
        _check_tensor(input, fname)
        return _op(opid, (input,))
    f.__name__ = fname
    f.__doc__ = f"{fname}(input) -> Tensor, elementwise (as torch.{fname})."
    return f


neg = _unary(_C.OP_NEG, "neg")
exp = _unary(_C.OP_EXP, "exp")
log = _unary(_C.OP_LOG, "log")
sqrt = _unary(_C.OP_SQRT, "sqrt")
rsqrt = _unary(_C.OP_RSQRT, "rsqrt")
tanh = _unary(_C.OP_TANH, "tanh")
sigmoid = _unary(_C.OP_SIGMOID, "sigmoid")
relu = _unary(_C.OP_RELU, "relu")
erf = _unary(_C.OP_ERF, "erf")
abs = _unary(_C.OP_ABS, "abs")
logical_not = _unary(_C.OP_LOGICAL_NOT, "logical_not")
sin = _unary(_C.OP_SIN, "sin")
cos = _unary(_C.OP_COS, "cos")
reciprocal = _unary(_C.OP_RECIPROCAL, "reciprocal")
floor = _unary(_C.OP_FLOOR, "floor")
ceil = _unary(_C.OP_CEIL, "ceil")
round = _unary(_C.OP_ROUND, "round")
sign = _unary(_C.OP_SIGN, "sign")
negative = neg


def _binary(opid, fname):
    def f(input, other):
        if not _is_tensor(input) and not _is_tensor(other):
            raise TypeError(f"{fname}(): expected at least one Tensor argument, "
                            f"got {type(input).__name__} and {type(other).__name__}")
        return _op(opid, (input, other))
    f.__name__ = fname
    f.__doc__ = f"{fname}(input, other) -> Tensor, broadcasting (as torch.{fname})."
    return f


mul = _binary(_C.OP_MUL, "mul")
_pow = _binary(_C.OP_POW, "pow")


def pow(input, exponent):
    """pow(input, exponent) -> Tensor, broadcasting (as torch.pow). A number's power of a
    tensor is row-major, as torch's; the other forms keep the operands' memory order."""
    r = _pow(input, exponent)
    return r if _is_tensor(input) else r.contiguous()
maximum = _binary(_C.OP_MAXIMUM, "maximum")
minimum = _binary(_C.OP_MINIMUM, "minimum")
eq = _binary(_C.OP_EQ, "eq")
ne = _binary(_C.OP_NE, "ne")
lt = _binary(_C.OP_LT, "lt")
le = _binary(_C.OP_LE, "le")
gt = _binary(_C.OP_GT, "gt")
ge = _binary(_C.OP_GE, "ge")
logical_and = _binary(_C.OP_LOGICAL_AND, "logical_and")
logical_or = _binary(_C.OP_LOGICAL_OR, "logical_or")
floor_divide = _binary(_C.OP_FLOOR_DIVIDE, "floor_divide")
remainder = _binary(_C.OP_REMAINDER, "remainder")
multiply = mul
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne


def _scale(input, other, alpha):
    """other * alpha, with torch's rules: computed in the result's dtype; a bool result takes
    alpha as a bool, an integer or bool result refuses a float alpha, a bool alpha needs a
    bool result."""
    if isinstance(alpha, bool) and (_is_tensor(input) or _is_tensor(other)) and \
            result_type(input, other) is not bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if alpha == 1:
        return other
    if isinstance(alpha, float) and (_is_tensor(input) or _is_tensor(other)) and \
            not result_type(input, other).is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if (_is_tensor(input) or _is_tensor(other)) and result_type(input, other) is bool_:
        if _is_tensor(other):
            return other if alpha else logical_and(other, False)
        return bool(other) and bool(alpha)
    if not _is_tensor(other):
        return other * alpha
    rt = result_type(input, other)  # in the result's dtype: uint8 1 * -1 is -1 for int32 + uint8
    return mul(other if other.dtype is rt else to_dtype(other, rt), alpha)


def add(input, other, *, alpha=1, out=None):
    """add(input, other, *, alpha=1): input + alpha * other."""
    other = _scale(input, other, alpha)
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError("add(): expected at least one Tensor argument")
    return _op(_C.OP_ADD, (input, other), None, out)


def _check_no_bool_sub(input, other):
    """torch refuses a bool operand of a subtraction (before any alpha scaling)."""
    if not (_is_tensor(input) or _is_tensor(other)):
        return

    def is_bool(v):
        return (_is_tensor(v) and v.dtype is bool_) or isinstance(v, bool)
    if is_bool(input) and is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if is_bool(input) or is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def sub(input, other, *, alpha=1, out=None):
    """sub(input, other, *, alpha=1): input - alpha * other."""
    _check_no_bool_sub(input, other)
    other = _scale(input, other, alpha)
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError("sub(): expected at least one Tensor argument")
    return _op(_C.OP_SUB, (input, other), None, out)


subtract = sub


def div(input, other, *, rounding_mode=None):
    """div(input, other, *, rounding_mode=None|'floor'|'trunc')."""
    if rounding_mode is None:
        return _op(_C.OP_DIV, (input, other))
    if rounding_mode == "floor":
        return _op(_C.OP_FLOOR_DIVIDE, (input, other))
    if rounding_mode == "trunc":
        dt = result_type(input, other)
        if dt is uint8:
            # unsigned: a negative number operand wraps into uint8 (torch's), every
            # quotient is >= 0 and truncation is the floor
            q = _op(_C.OP_FLOOR_DIVIDE, (input, other))
            return q if q.dtype is dt else q.to(dt)
        if not dt.is_floating_point and dt is not bool_:
            # integers: floor quotient, one up where it rounded down a negative
            # non-exact quotient (exact for every int64; the float path is not)
            q = _op(_C.OP_FLOOR_DIVIDE, (input, other))
            r = remainder(input, other)
            if not _is_tensor(other):
                differ = ge(input, 0) if other < 0 else lt(input, 0)
            elif not _is_tensor(input):
                differ = ge(other, 0) if input < 0 else lt(other, 0)
            else:
                differ = ne(lt(input, 0), lt(other, 0))
            up = logical_and(ne(r, 0), differ)
            q = add(q, up.to(q.dtype))
            return q if q.dtype is dt else q.to(dt)
        q = _op(_C.OP_DIV, (input, other))
        r = where(q < 0, ceil(q), floor(q))
        dt = result_type(input, other)
        return r if r.dtype is dt else r.to(dt)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                     f"but found '{rounding_mode}'")


divide = true_divide = div


def result_type(tensor1, tensor2):
    """The dtype PyTorch's type promotion gives tensor1 op tensor2."""
    return _C.result_type(tensor1, tensor2)


def where(condition, input=None, other=None):
    """where(condition, input, other): elementwise choice, broadcasting; where(condition) is
    nonzero(condition, as_tuple=True) (a value read)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where(): give both input and other, or neither")
    return _op(_C.OP_WHERE, (condition, input, other))


def clamp(input, min=None, max=None):
    """clamp(input, min=None, max=None)."""
    _check_tensor(input, "clamp")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if _is_tensor(min) or _is_tensor(max):
        r = input
        if min is not None:
            r = maximum(r, min)
        if max is not None:
            r = minimum(r, max)
        if builtins.any(_is_tensor(t) and t.requires_grad for t in (input, min, max)):
            return _clamp_grads(input, min, max, r)
        return r
    flags = (HAS_MIN if min is not None else 0) | (HAS_MAX if max is not None else 0)
    # the bounds are converted to the result's dtype, checked as torch's
    rdt = input.dtype
    for v in (min, max):
        r = rdt if v is None else _C.result_type(input, v)
        if r.is_floating_point and not rdt.is_floating_point or rdt is bool_:
            rdt = r
    if rdt is bool_:
        kernel = "clamp_min" if max is None else "clamp_max" if min is None else "clamp"
        raise NotImplementedError(f"\"{kernel}_scalar_cpu\" not implemented for 'Bool'")
    for v in (min, max):
        if v is not None:
            _check_fits(v, rdt)
    ints = builtins.all(v is None or (isinstance(v, int)) for v in (min, max))
    if ints:
        flags |= INT_VALUE
        return _op(_C.OP_CLAMP, (input,), _attrs(ints=(int(min or 0), int(max or 0)), flags=flags))
    return _op(_C.OP_CLAMP, (input,),
               _attrs(floats=(float(min) if min is not None else 0.0,
                              float(max) if max is not None else 0.0), flags=flags))


clip = clamp


def _clamp_grads(x, lo, hi, r):
    """clamp with tensor bounds, r its value, with torch's gradients (clamp_backward_min_max):
    x's where lo <= x <= hi, lo's where x < lo < hi, hi's where x > hi or hi < lo; none
    elsewhere (x below lo == hi, NaNs): where() picks the operand that gets each element's
    gradient, the rest reads r without one; r's NaNs are kept."""
    out = r.detach()
    if hi is not None:
        pick_hi = gt(x, hi) if lo is None else logical_or(gt(x, hi), lt(hi, lo))
        out = where(pick_hi, hi, out)
    if lo is not None:
        pick_lo = lt(x, lo) if hi is None else logical_and(lt(x, lo), lt(lo, hi))
        out = where(pick_lo, lo, out)
    inside = ge(x, lo) if hi is None else le(x, hi) if lo is None else \
        logical_and(ge(x, lo), le(x, hi))
    out = where(inside, x, out)
    if r.dtype.is_floating_point:
        # a NaN (in x, or a bound) stays in the value where a bound took the gradient (hi <
        # lo, x > hi with a NaN lo): torch's value is maximum / minimum's NaN
        out = where(ne(r, r), add(out, r.detach()), out)
    return out if out.dtype is r.dtype else to_dtype(out, r.dtype)


def masked_fill(input, mask, value):
    """masked_fill(input, mask, value): value where mask is True."""
    _check_tensor(input, "masked_fill")
    _check_tensor(mask, "masked_fill", "mask")
    if _is_tensor(value):
        if value.dim() != 0:
            raise RuntimeError("masked_fill only supports a 0-dimensional value tensor, "
                               f"but got tensor with {value.dim()} dimension(s).")
        value = value.item()
    _check_fits(value, input.dtype)
    if isinstance(value, bool) or isinstance(value, int):
        return _op(_C.OP_MASKED_FILL, (input, mask), _attrs(ints=(int(value),), flags=INT_VALUE))
    return _op(_C.OP_MASKED_FILL, (input, mask), _attrs(floats=(float(value),)))


_INT_RANGE = {"symtrace.uint8": (0, 255), "symtrace.int8": (-128, 127),
              "symtrace.int16": (-2**15, 2**15 - 1),
              "symtrace.int32": (-2**31, 2**31 - 1), "symtrace.int64": (-2**63, 2**63 - 1)}


_C_TYPE = {"symtrace.uint8": "uint8_t", "symtrace.int8": "int8_t", "symtrace.int16": "int16_t",
           "symtrace.int32": "int", "symtrace.int64": "int64_t"}


# the largest finite value of the float dtypes a Python float can overflow, and torch's name
_FLOAT_MAX = {"symtrace.float32": (3.4028234663852886e38, "float"),
              "symtrace.float16": (65504.0, "c10::Half"),
              "symtrace.bfloat16": (3.3895313892515355e38, "c10::BFloat16")}


def _check_fits(value, dtype, floats=True, halves=True):
    """torch refuses a scalar that overflows the dtype it is converted to (c10's checked
    convert: a negative int for uint8 only needs |value| <= 255, and wraps; a finite number
    beyond a float dtype's largest, infinities and NaN pass). halves=False: float16 and
    bfloat16 take any number (torch's fill_ converts those unchecked); floats=False: no
    float dtype is checked (full(): its internal uses build float32 numbers beyond range)."""
    fl = _FLOAT_MAX.get(str(dtype)) if floats else None
    if fl is not None and (halves or dtype is float32) and isinstance(value, (int, float)) \
            and not isinstance(value, bool):
        v = float(value) if not isinstance(value, int) or builtins.abs(value) < 2 ** 1000 \
            else math.inf
        if v == v and builtins.abs(v) != math.inf and builtins.abs(v) > fl[0]:
            raise RuntimeError(f"value cannot be converted to type {fl[1]} without overflow")
        return
    lim = _INT_RANGE.get(str(dtype))
    if lim is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        lo = -lim[1] if lim[0] == 0 and isinstance(value, int) else lim[0]
        if value != value or not (lo <= value <= lim[1]):
            raise RuntimeError(f"value cannot be converted to type {_C_TYPE[str(dtype)]} "
                               "without overflow")


def to_dtype(input, dtype):
    _check_tensor(input, "to")
    if input.dtype is dtype:
        return input
    return _op(_C.OP_CAST, (input,), _attrs(dtype=dtype))


# ---- products and interpolation ----
def _fma_kind(*ts):
    """The float dtype of torch's CPU kernels that fuse a multiply and an add (fma) in
    float32, where every tensor has it and lives on the CPU; else None."""
    dt = ts[0].dtype
    if dt not in (float32, float16, bfloat16) or ts[0]._device_str != "cpu":
        return None
    return dt if builtins.all(t.dtype is dt and t._device_str == "cpu" for t in ts) else None


def _fma(a, b, c):
    """a * b + c rounded once to float32 (a, b, c float32): float64 holds the product
    exactly, so only the sum rounds (then to float32), as the fused multiply-add of
    torch's kernels."""
    def d(x):
        return to_dtype(x, float64) if _is_tensor(x) else x
    return to_dtype(add(d(c), mul(d(a), d(b))), float32)   # c first: its memory order


def addcmul(input, tensor1, tensor2, *, value=1):
    """addcmul(input, tensor1, tensor2, *, value=1) = input + value * tensor1 * tensor2; as
    torch.addcmul. float32 and halves (on the CPU) as torch's kernel: (value * tensor1) in
    float32, then one fused multiply-add with tensor2 and input, rounded once."""
    _check_tensor(input, "addcmul")
    _check_tensor(tensor1, "addcmul", "tensor1")
    _check_tensor(tensor2, "addcmul", "tensor2")
    if input.dtype is bool_ and tensor1.dtype is bool_ and tensor2.dtype is bool_:
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    dt = _fma_kind(input, tensor1, tensor2)
    if dt is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        a, b, c = (to_dtype(t, float32) for t in (tensor1, tensor2, input))
        if value != 1:
            a = mul(a, _f32(value))
        return to_dtype(_fma(a, b, c), dt)
    p = mul(tensor1, tensor2)
    return add(input, p if value == 1 else mul(p, value))


def addcdiv(input, tensor1, tensor2, *, value=1):
    """addcdiv(input, tensor1, tensor2, *, value=1) = input + value * tensor1 / tensor2 (true
    division; two integer tensors are refused, as torch.addcdiv does)."""
    _check_tensor(input, "addcdiv")
    _check_tensor(tensor1, "addcdiv", "tensor1")
    _check_tensor(tensor2, "addcdiv", "tensor2")
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future "
                           "release addcdiv will perform a true division of tensor1 and tensor2. Use "
                           "(input + value * tensor1 / tensor2) for float inputs.")
    dt = _fma_kind(input, tensor1, tensor2)
    if dt is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        # torch's kernel: input + (value * tensor1) / tensor2, in float32
        a, b, c = (to_dtype(t, float32) for t in (tensor1, tensor2, input))
        if value != 1:
            a = mul(a, _f32(value))
        return to_dtype(add(c, div(a, b)), dt)
    q = div(tensor1, tensor2)
    return add(input, q if value == 1 else mul(q, value))


def lerp(input, end, weight):
    """lerp(input, end, weight) = input + weight * (end - input), computed as torch does
    (from end when |weight| >= 0.5); weight a number or a tensor; broadcasting. As torch.lerp."""
    _check_tensor(input, "lerp")
    _check_tensor(end, "lerp", "end")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"lerp_kernel_scalar" not implemented for \'{_tname(input.dtype)}\'')
    if end.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {_tname(input.dtype).lower()} for `end` but got dtype "
                           f"{_tname(end.dtype).lower()}")
    if _is_tensor(weight) and weight.dim() and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {_tname(input.dtype).lower()} for `weight` but got "
                           f"dtype {_tname(weight.dtype).lower()}")
    if input.dtype in (float16, bfloat16):
        # torch computes half lerp in float32 (end - input overflows float16 otherwise)
        w = to_dtype(weight, float32) if _is_tensor(weight) else weight
        return lerp(to_dtype(input, float32), to_dtype(end, float32), w).to(input.dtype)
    diff = sub(end, input)
    if _fma_kind(input, end, *([weight] if _is_tensor(weight) else [])) is float32:
        # torch's kernel: fma(weight, diff, input), or fma(-diff, 1 - weight, end) from
        # |weight| >= 0.5 on, weight and 1 - weight in float32
        if _is_tensor(weight):
            return where(lt(abs(weight), 0.5), _fma(weight, diff, input),
                         _fma(neg(diff), sub(1, weight), end))
        w = _f32(weight)
        if builtins.abs(w) < 0.5:
            return _fma(diff, w, input)
        return _fma(neg(diff), _f32(1 - w), end)
    if _is_tensor(weight):
        return where(lt(abs(weight), 0.5), add(input, mul(weight, diff)),
                     sub(end, mul(diff, sub(1, weight))))
    if builtins.abs(weight) < 0.5:
        return add(input, mul(diff, weight))
    return sub(end, mul(diff, 1 - weight))


# where(condition) is nonzero(condition, as_tuple=True), and nonzero is written over the
# ops above: imported last, once every name here is defined (__init__ imports this file
# before scatter_ops and everything that needs it).
from .scatter_ops import nonzero  # noqa: E402
