"""Everyday torch functions symtrace lacked, written over the existing ops with torch's
semantics and errors: the aliases clone, t, detach, select, absolute, positive, ravel,
fliplr and flipud; the products dot, vdot, mv and inner; broadcast_tensors and
broadcast_shapes; tensor_split, hsplit, vsplit, dsplit and split_with_sizes (views);
bitwise_and/or/xor/not (bools through the logical ops, integers byte by byte through a
256 x 256 table: exact, two's complement); the predicates is_same_size, is_signed and
is_complex; scalar_tensor; and the float functions tan, signbit, sgn, logit, erfinv, lgamma
and digamma. erfinv, lgamma and digamma are float64 formulas rounded to the result dtype,
wrapped in autograd.Functions whose backward is torch's derivative (erfinv: sqrt(pi)/2 *
exp(erfinv(x)^2); lgamma: digamma; digamma: trigamma). Nothing here reads tensor values
(tensor_split's index tensor excepted, as in torch)."""
import builtins
import collections.abc
import math

from .. import _C
from .._dtype import bool_, int32, int64
from ._core import _bshape, _check_int, _check_tensor, _is_tensor, _tname
from .dtypes import get_default_dtype
from .elementwise import (abs, add, clamp, cos, div, eq, erf, exp, floor_divide, ge, le, log,
                          logical_and, logical_not, logical_or, lt, mul, ne, neg, remainder,
                          result_type, round, sign, sin, sqrt, sub, to_dtype, where)
from .creation import full, to_device, zeros_like
from .float_math import _back, _float_unary, _opmath, _signbit, _wide, isinf, isnan
from .indexing import index_select
from .shape import flip, split
from .reductions import sum
from .linalg import matmul
from .sorting import _dim
from ..amp._policy import autocast_op


# ---- aliases and views ----
def clone(input, *, memory_format=None):
    """clone(input, *, memory_format=preserve_format): a copy of input (differentiable), as
    torch.clone: in input's memory order, or in memory_format's."""
    _check_tensor(input, "clone")
    return input.clone(memory_format=memory_format)


def t(input):
    """t(input): the transpose of a tensor of at most 2 dims, as torch.t (a view)."""
    _check_tensor(input, "t")
    return input.t()


def detach(input):
    """detach(input): input's values without gradient history (shares memory), as torch.detach."""
    _check_tensor(input, "detach")
    return input.detach()


def select(input, dim, index):
    """select(input, dim, index): the slice at index along dim, without that dim (a view), as
    torch.select."""
    _check_tensor(input, "select")
    return input.select(dim, index)


def absolute(input):
    """absolute(input) = abs(input), as torch.absolute."""
    _check_tensor(input, "absolute")
    return abs(input)


def positive(input):
    """positive(input): input itself (bool refused), as torch.positive."""
    _check_tensor(input, "positive")
    if input.dtype is bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def ravel(input):
    """ravel(input): input flattened to 1-D (a view when contiguous), as torch.ravel."""
    _check_tensor(input, "ravel")
    return input.reshape(-1)


def fliplr(input):
    """fliplr(input): input with dim 1 reversed (a copy; at least 2-D), as torch.fliplr."""
    _check_tensor(input, "fliplr")
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    """flipud(input): input with dim 0 reversed (a copy; at least 1-D), as torch.flipud."""
    _check_tensor(input, "flipud")
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


# ---- products ----
def _vector_product(fn, input, other, name):
    _check_tensor(input, fn)
    _check_tensor(other, fn, name)
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_tname(input.dtype)} and {_tname(other.dtype)}")
    if input.numel() != other.numel():
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.numel()}] and src "
                           f"[{other.numel()}] to have the same number of elements, but got "
                           f"{input.numel()} and {other.numel()} elements respectively")
    if input.dtype is bool_:
        raise NotImplementedError(f"\"{fn}\" not implemented for 'Bool'")
    return matmul(input, other)


@autocast_op("off")
def dot(input, tensor):
    """dot(input, tensor): the inner product of two 1-D tensors of one dtype, as torch.dot."""
    return _vector_product("dot", input, tensor, "tensor")


def vdot(input, other):
    """vdot(input, other): dot (symtrace has no complex dtypes to conjugate), as torch.vdot."""
    return _vector_product("vdot", input, other, "other")


@autocast_op("off", devices=("cpu",))
def mv(input, vec):
    """mv(input, vec): the product of an (n, m) matrix and an m-vector, as torch.mv."""
    _check_tensor(input, "mv")
    _check_tensor(vec, "mv", "vec")
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.dim()}, {vec.dim()}")
    if input.dtype is not vec.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_tname(vec.dtype)}, {_tname(input.dtype)}, and {_tname(vec.dtype)}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat "
                           f"({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]})")
    return matmul(input, vec)


def inner(input, other):
    """inner(input, other): sums of products over the last dims (shape input.shape[:-1] +
    other.shape[:-1]); a 0-d operand multiplies; as torch.inner."""
    _check_tensor(input, "inner")
    _check_tensor(other, "inner", "other")
    if input.dim() == 0 or other.dim() == 0:
        return mul(input, other)
    k = input.shape[-1]
    if other.shape[-1] != k:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input.shape)} and {list(other.shape)}")
    if input.dtype is not other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    r = matmul(input.reshape(-1, k), other.reshape(-1, k).transpose(0, 1))
    return r.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


# ---- broadcasting ----
def broadcast_tensors(*tensors):
    """broadcast_tensors(*tensors): the tensors expanded to their common broadcast shape
    (views), as torch.broadcast_tensors."""
    for i, x in enumerate(tensors):
        if not _is_tensor(x):
            raise TypeError(f"broadcast_tensors(): argument 'tensors' (position 1) must be tuple of "
                            f"Tensors, but found element of type {type(x).__name__} at pos {i}")
    shape = _bshape(*(tuple(x.shape) for x in tensors))
    return tuple(x.expand(shape) for x in tensors)


def broadcast_shapes(*shapes):
    """broadcast_shapes(*shapes) -> Size: the shape tensors of these shapes broadcast to (ints
    or sequences of ints), with torch's errors; as torch.broadcast_shapes."""
    shapes = tuple((s,) if isinstance(s, int) else s for s in shapes if s is not None)
    if not shapes:
        return _C.Size()
    for s in shapes:
        if not isinstance(s, collections.abc.Sequence):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of "
                               f"ints, got {s}")
    common = [1] * builtins.max(len(s) for s in shapes)
    for arg, s in enumerate(shapes):
        for i in range(-1, -1 - len(s), -1):
            if s[i] == common[i]:
                continue
            if common[i] == 1:
                if s[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = s[i]
            if s[i] == 1:
                continue
            if common[i] != s[i]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {s[i]} at {i}! "
                                   f"Mismatching argument at index {arg} had {s}; but expected shape "
                                   f"should be broadcastable to {common}")
    return _C.Size(common)


# ---- splits (views) ----
def _slices(input, d, bounds):
    return tuple(input._slice(d, s, e, 1) for s, e in bounds)


def tensor_split(input, indices_or_sections, dim=0):
    """tensor_split(input, indices_or_sections, dim=0): views of input along dim, into
    `sections` near-equal parts (the first n % sections one longer) or cut at the given
    indices (as Python slices: negative from the end, clamped, empty when reversed); a tensor
    argument (0-d: sections, 1-D: indices; int64) is read, as torch. As torch.tensor_split."""
    _check_tensor(input, "tensor_split")
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor "
                           "with 0 dims")
    ios = indices_or_sections
    if _is_tensor(ios):
        if ios.dim() > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor with "
                               f"{ios.dim()} dims")
        if ios.dtype is not int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of "
                               f"long, but got {_tname(ios.dtype)}")
        ios = ios.item() if ios.dim() == 0 else ios.tolist()
    d = _dim(dim, input.dim(), "tensor_split")
    n = input.shape[d]
    if isinstance(ios, int) and not isinstance(ios, bool):
        if not -2 ** 63 <= ios < 2 ** 63:
            raise ValueError("Overflow when unpacking long long")
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        if ios > (2 ** 63 - 1) // 8:           # as torch's std::vector of that many views
            raise RuntimeError("cannot create std::vector larger than max_size()")
        q, r = divmod(n, ios)
        bounds, s = [], 0
        for i in range(ios):
            e = s + q + (1 if i < r else 0)
            bounds.append((s, e))
            s = e
        return _slices(input, d, bounds)
    if not isinstance(ios, (list, tuple)):
        raise TypeError(f"tensor_split(): argument 'indices' must be tuple of ints, not "
                        f"{type(ios).__name__}")
    cuts = list(ios)
    bounds = []
    for s, e in zip([0] + cuts, cuts + [n]):
        s, e, _ = slice(s, e).indices(n)
        bounds.append((s, builtins.max(s, e)))
    return _slices(input, d, bounds)


def _hvd_split(fn, input, ios, min_dim, d):
    _check_tensor(input, fn)
    nd = input.dim()
    if nd < min_dim:
        raise RuntimeError(f"torch.{fn} requires a tensor with at least {min_dim} dimension, but got "
                           f"a tensor with {nd} dimensions!")
    if isinstance(ios, int) and not isinstance(ios, bool):
        n = input.shape[d]
        if ios == 0 or n % ios:
            raise RuntimeError(f"torch.{fn} attempted to split along dimension {d}, but the size of "
                               f"the dimension {n} is not divisible by the split_size {ios}!")
    return tensor_split(input, ios, d)


def hsplit(input, indices_or_sections):
    """hsplit(input, indices_or_sections): tensor_split along dim 1 (dim 0 of a 1-D tensor),
    sections dividing the dim exactly; as torch.hsplit."""
    _check_tensor(input, "hsplit")
    return _hvd_split("hsplit", input, indices_or_sections, 1, 1 if input.dim() > 1 else 0)


def vsplit(input, indices_or_sections):
    """vsplit(input, indices_or_sections): tensor_split along dim 0 of an at least 2-D tensor,
    sections dividing the dim exactly; as torch.vsplit."""
    return _hvd_split("vsplit", input, indices_or_sections, 2, 0)


def dsplit(input, indices_or_sections):
    """dsplit(input, indices_or_sections): tensor_split along dim 2 of an at least 3-D tensor,
    sections dividing the dim exactly; as torch.dsplit."""
    return _hvd_split("dsplit", input, indices_or_sections, 3, 2)


def split_with_sizes(input, split_sizes, dim=0):
    """split_with_sizes(input, split_sizes, dim=0): views of the given sizes along dim (they
    must be non-negative and sum to the dim's size), as torch.split_with_sizes."""
    _check_tensor(input, "split_with_sizes")
    sizes = list(split_sizes)
    for s in sizes:
        _check_int(s, "split_with_sizes", "split_sizes", 2)
    if builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={sizes}")
    return split(input, sizes, dim)


# ---- bitwise ----
_TABLES = {}


def _consts(op, nbytes, device):
    """(the 256 x 256 table of op on two bytes, flattened; the byte weights 256**j; the
    place values of the result bytes, the top one signed) as int64 tensors on device."""
    key = (op, nbytes, str(device))
    c = _TABLES.get(key)
    if c is None:
        import numpy as np
        a, b = np.arange(256)[:, None], np.arange(256)[None, :]
        table = {"and": a & b, "or": a | b, "xor": a ^ b}[op].reshape(-1).astype(np.int64)
        c = (_C.tensor(table, int64), _C.tensor([1 << (8 * j) for j in range(nbytes)], int64))
        if key[2] != "cpu":
            c = tuple(to_device(t, key[2]) for t in c)
        _TABLES[key] = c
    return c


def _bytes(x, weights):
    """The bytes of the int64 tensor x (two's complement, low first) along a new last dim:
    floor division by 256**j then the remainder mod 256, exact for negative x too."""
    return remainder(floor_divide(x.unsqueeze(-1), weights), 256)


def _bitwise_operands(fn, input, other):
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError(f"{fn}() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__})")
    for v in (input, other):
        if not _is_tensor(v) and not isinstance(v, (int, float)):
            raise TypeError(f"{fn}(): argument 'other' must be Tensor or Number, not {type(v).__name__}")
    dt = result_type(input, other)
    if dt.is_floating_point:
        raise NotImplementedError(f"\"{fn}_cpu\" not implemented for '{_tname(dt)}'")
    dev = (input if _is_tensor(input) else other).device
    a = to_dtype(input, dt) if _is_tensor(input) else full((), _wrapped(input, dt), dtype=dt, device=dev)
    b = to_dtype(other, dt) if _is_tensor(other) else full((), _wrapped(other, dt), dtype=dt, device=dev)
    return a, b, dt


_NBITS = {"symtrace.uint8": 8, "symtrace.int8": 8, "symtrace.int16": 16, "symtrace.int32": 32}


def _wrapped(v, dt):
    """An int scalar as torch's bitwise ops take it for a narrower integer dtype: wrapped
    (two's complement: int8 & -129 reads 127, uint8 | 300 reads 44), not refused."""
    n = _NBITS.get(str(dt))
    if n is None or isinstance(v, bool) or not isinstance(v, int):
        return v
    v %= 1 << n
    return v - (1 << n) if str(dt) != "symtrace.uint8" and v >= 1 << (n - 1) else v


def _memory_order(t):
    """t's dims from outermost to innermost in memory (strides descending; a size-1 dim
    after the others of its stride, where a row-major layout in that order gives it the
    same stride)."""
    st, sh = t.stride(), t.shape
    return sorted(range(t.dim()), key=lambda d: (-st[d], sh[d] == 1))


def _bitwise(fn, input, other, logical, op):
    """Bools: the logical op. Integers: byte by byte through a 256 x 256 table of op
    (index_select), the result bytes summed back at their place values, the top byte taken
    as signed (two's complement); in int64, exact, 8 (int32: 4) bytes an element."""
    a, b, dt = _bitwise_operands(fn, input, other)
    if dt is bool_:
        return logical(a, b)
    nbytes = {"symtrace.uint8": 1, "symtrace.int8": 1, "symtrace.int16": 2,
              "symtrace.int32": 4}.get(str(dt), 8)
    table, weights = _consts(op, nbytes, a.device)
    ba, bb = _bytes(to_dtype(a, int64), weights), _bytes(to_dtype(b, int64), weights)
    shape = _bshape(tuple(ba.shape), tuple(bb.shape))
    idx = add(mul(ba, 256), bb).expand(shape)
    # the gather runs in idx's memory order (the operands', runtime/layout.c), so that
    # the result keeps it as torch's TensorIterator does: (x.t() & 3).stride() is x.t()'s
    perm = _memory_order(idx)
    inv = [perm.index(d) for d in range(len(shape))]
    idx = idx.permute(perm)
    r = index_select(table, 0, idx.reshape(-1)).reshape(idx.shape).permute(inv)
    top = r.select(-1, nbytes - 1)
    low = sum(mul(r.narrow(-1, 0, nbytes - 1), weights.narrow(0, 0, nbytes - 1)), -1)
    if str(dt) != "symtrace.uint8":
        top = where(ge(top, 128), sub(top, 256), top)          # the signed top byte
    # top first: its memory order is the result's (low, a reduction's, is row-major)
    return to_dtype(add(mul(top, 1 << (8 * (nbytes - 1))), low), dt)


def bitwise_and(input, other):
    """bitwise_and(input, other): elementwise AND of integer or bool tensors (either may be a
    number), as torch.bitwise_and; floats refused as torch."""
    return _bitwise("bitwise_and", input, other, logical_and, "and")


def bitwise_or(input, other):
    """bitwise_or(input, other): elementwise OR of integer or bool tensors, as torch.bitwise_or."""
    return _bitwise("bitwise_or", input, other, logical_or, "or")


def bitwise_xor(input, other):
    """bitwise_xor(input, other): elementwise XOR of integer or bool tensors, as torch.bitwise_xor."""
    return _bitwise("bitwise_xor", input, other, ne, "xor")


def bitwise_not(input):
    """bitwise_not(input): ~input (logical not of bools, -1 - x for integers), as
    torch.bitwise_not."""
    _check_tensor(input, "bitwise_not")
    if input.dtype is bool_:
        return logical_not(input)
    if input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{_tname(input.dtype)}'")
    return sub(-1, input)


# ---- predicates, scalar_tensor ----
def is_same_size(input, other):
    """is_same_size(input, other) -> bool: the same shape, as torch.is_same_size."""
    _check_tensor(input, "is_same_size")
    _check_tensor(other, "is_same_size", "other")
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    """is_signed(input) -> bool: whether input's dtype is signed (all but bool), as torch."""
    _check_tensor(input, "is_signed")
    return input.dtype is not bool_


def is_complex(input):
    """is_complex(input) -> False: symtrace has no complex dtypes."""
    _check_tensor(input, "is_complex")
    return False


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None):
    """scalar_tensor(s, *, dtype=None, device=None): a 0-d tensor holding s, of the default
    float dtype unless dtype is given, as torch.scalar_tensor."""
    if _is_tensor(s):
        s = s.item()
    return full((), s, dtype=get_default_dtype() if dtype is None else dtype, device=device)


# ---- float functions ----
tan = _float_unary("tan", lambda x: div(sin(x), cos(x)), "wide", "the tangent")


def signbit(input):
    """signbit(input) -> bool Tensor: whether the sign bit is set (True for -0.0), as
    torch.signbit. Limitation: the sign bit of a NaN is not seen (False; torch reads the bit)."""
    _check_tensor(input, "signbit")
    if input.dtype is bool_:
        return zeros_like(input, dtype=bool_)
    return _signbit(input)


def sgn(input):
    """sgn(input): sign(input) for real tensors (0 for NaN), bools unchanged, as torch.sgn."""
    _check_tensor(input, "sgn")
    if input.dtype is bool_:
        return input.clone()
    return sign(input)


def logit(input, eps=None):
    """logit(input, eps=None) = log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is
    given (and not negative); integers give float32; as torch.logit."""
    _check_tensor(input, "logit")
    x, dt = _opmath(input)
    if eps is not None and eps >= 0:
        x = clamp(x, eps, 1 - eps)
    return _back(log(div(x, sub(1, x))), dt)


_PI = math.pi


def _reduced(x):
    """x - round(x): exact, so sin/tan of pi * it are those of pi * x up to sign, accurately."""
    return sub(x, round(x))


def _erfinv64(y):
    """erfinv in float64: torch's rational first guess (calc_erfinv) and two Newton steps on
    erf; in the tails (|y| >= 0.999) three Newton steps on erfc instead (to ~1e-15)."""
    a = (0.886226899, -1.645349621, 0.914624893, -0.140543331)
    b = (-2.118377725, 1.442710462, -0.329097515, 0.012229801)
    c = (-1.970840454, -1.624906493, 3.429567803, 1.641345311)
    dd = (3.543889200, 1.637067800)
    ay = abs(y)
    central = le(ay, 0.7)
    yc = where(central, y, 0.0)
    z = mul(yc, yc)
    num = add(mul(add(mul(add(mul(z, a[3]), a[2]), z), a[1]), z), a[0])
    dem = add(mul(add(mul(add(mul(add(mul(z, b[3]), b[2]), z), b[1]), z), b[0]), z), 1.0)
    xc = div(mul(yc, num), dem)
    yt = where(logical_or(central, logical_not(lt(ay, 1.0))), 0.9, ay)   # safe in the tail formula
    w = sqrt(neg(log(div(sub(1.0, yt), 2.0))))
    num = add(mul(add(mul(add(mul(w, c[3]), c[2]), w), c[1]), w), c[0])
    dem = add(mul(add(mul(w, dd[1]), dd[0]), w), 1.0)
    xt = div(where(lt(y, 0), neg(num), num), dem)
    x = where(central, xc, xt)
    k = 2.0 / math.sqrt(_PI)
    for _ in range(2):
        x = sub(x, div(sub(erf(x), y), mul(exp(neg(mul(x, x))), k)))
    # |y| >= 0.999: erf(x) - y cancels; Newton on erfc(x) = 1 - |y| (exact) instead, erfc
    # from its continued fraction (erfc(x) = exp(-x^2) / sqrt(pi) * F(x), 40 terms: to an ulp
    # for x >= 2), the step x + F / 2 - sqrt(pi) / 2 * exp(x^2 + log(1 - |y|)).
    tail = logical_and(ge(ay, 0.999), lt(ay, 1.0))
    logq = log(sub(1.0, where(tail, ay, 0.0)))
    xa = where(tail, abs(xt), 3.0)
    for _ in range(3):
        f = xa
        for j in range(40, 0, -1):
            f = add(xa, div(j / 2.0, f))
        xa = sub(add(xa, div(0.5, f)), mul(exp(add(mul(xa, xa), logq)), 0.5 * math.sqrt(_PI)))
    x = where(tail, where(lt(y, 0), neg(xa), xa), x)
    x = where(eq(ay, 1.0), mul(y, math.inf), x)
    return where(logical_or(lt(1.0, ay), isnan(y)), math.nan, x)


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _lgamma_lanczos(z):
    """lgamma(z) for z >= 0.5 (Lanczos, g = 7: ~1e-15 relative in gamma)."""
    zm = sub(z, 1.0)
    acc = full((), _LANCZOS[0], dtype=z.dtype, device=z.device)
    for i in range(1, 9):
        acc = add(acc, div(_LANCZOS[i], add(zm, float(i))))
    t = add(zm, 7.5)
    return add(sub(add(mul(add(zm, 0.5), log(t)), _HALF_LOG_2PI), t), log(acc))


def _lgamma64(x):
    """log|gamma(x)| in float64: Lanczos for x >= 0.5, lgamma(x + 1) - log(x) on (0, 0.5),
    the reflection log(pi / |sin(pi x)|) - lgamma(1 - x) for x <= 0 (inf at 0 and the
    negative integers), inf at +-inf, NaN at NaN."""
    big = ge(x, 0.5)
    small = logical_and(lt(0.0, x), logical_not(big))
    nonpos = logical_not(lt(0.0, x))           # x <= 0 (NaN: False)
    fin = logical_not(isinf(x))
    xs = where(logical_and(big, fin), x, 1.0)
    r_big = _lgamma_lanczos(xs)
    xp = where(small, x, 0.25)
    r_small = sub(_lgamma_lanczos(add(xp, 1.0)), log(xp))
    xn = where(logical_and(nonpos, fin), x, -0.5)
    s = abs(sin(mul(_reduced(xn), _PI)))
    r_neg = sub(sub(math.log(_PI), log(s)), _lgamma_lanczos(sub(1.0, xn)))   # s == 0: inf
    r = where(big, r_big, where(small, r_small, r_neg))
    r = where(logical_or(eq(x, 1.0), eq(x, 2.0)), 0.0, r)     # exact zeros, as libm
    r = where(isinf(x), math.inf, r)
    return where(isnan(x), math.nan, r)


def _digamma_pos(y):
    """digamma(y) for y > 0 (and +inf): ten steps of psi(y) = psi(y + 1) - 1 / y, then the
    asymptotic series at y + 10 (error ~1e-14)."""
    acc = None
    for k in range(10):
        term = div(1.0, add(y, float(k)))
        acc = term if acc is None else add(acc, term)
    z = add(y, 10.0)
    iz2 = div(1.0, mul(z, z))
    series = mul(iz2, sub(1.0 / 12, mul(iz2, sub(1.0 / 120, mul(iz2, sub(1.0 / 252, mul(
        iz2, sub(1.0 / 240, mul(iz2, 1.0 / 132)))))))))
    return sub(sub(sub(log(z), div(0.5, z)), series), acc)


def _digamma64(x):
    """digamma in float64, as torch's calc_digamma: -inf at +0 and +inf at -0, NaN at the
    negative integers and -inf, the reflection psi(1 - x) - pi / tan(pi x) below 0."""
    pos = lt(0.0, x)
    xp = where(pos, x, 1.0)
    r_pos = _digamma_pos(xp)
    xn = where(logical_and(logical_not(pos), logical_not(isinf(x))), x, -0.5)
    r = _reduced(xn)
    t = div(sin(mul(r, _PI)), cos(mul(r, _PI)))
    r_neg = sub(_digamma_pos(sub(1.0, xn)), div(_PI, t))
    r_neg = where(eq(r, 0.0), math.nan, r_neg)          # negative integers
    out = where(pos, r_pos, r_neg)
    out = where(eq(x, 0.0), where(_signbit(x), math.inf, -math.inf), out)
    out = where(eq(x, -math.inf), math.nan, out)
    return where(isnan(x), math.nan, out)


def _trigamma64(x):
    """trigamma (polygamma(1, x)) in float64: reflection below 0.5, ten recurrence steps and
    the asymptotic series (digamma's derivative, as torch's)."""
    refl = lt(x, 0.5)
    y = where(refl, sub(1.0, x), x)
    acc = None
    for k in range(10):
        yk = add(y, float(k))
        term = div(1.0, mul(yk, yk))
        acc = term if acc is None else add(acc, term)
    z = add(y, 10.0)
    iz = div(1.0, z)
    iz2 = mul(iz, iz)
    series = mul(iz, add(add(1.0, mul(iz, 0.5)), mul(iz, mul(iz, sub(1.0 / 6, mul(iz2, sub(
        1.0 / 30, mul(iz2, sub(1.0 / 42, mul(iz2, 1.0 / 30))))))))))
    res = add(acc, series)
    s = sin(mul(_reduced(x), _PI))
    return where(refl, sub(div(_PI * _PI, mul(s, s)), res), res)


def _special(fname, value64, deriv, doc):
    """fname(input): value64 (float64 -> float64) rounded to the result dtype (integers and
    bools give float32); under autograd an autograd.Function whose backward is
    grad * deriv(input, result), torch's derivative."""
    cls = None

    def value(input):
        x, dt = _wide(input)
        return _back(value64(x), dt)

    def f(input):
        nonlocal cls
        _check_tensor(input, fname)
        if not (input.requires_grad and _C._is_grad_enabled()):
            return value(input)
        if cls is None:
            from ..autograd.function import Function

            def forward(ctx, x):
                r = value(x)
                ctx.save_for_backward(x, r)
                return r

            def backward(ctx, grad):
                x, r = ctx.saved_tensors
                return mul(grad, deriv(x, r))

            cls = type(fname.capitalize(), (Function,), {"forward": staticmethod(forward),
                                                         "backward": staticmethod(backward)})
        return cls.apply(input)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = doc
    return f


erfinv = _special(
    "erfinv", _erfinv64,
    lambda x, r: mul(exp(mul(r, r)), 0.5 * math.sqrt(_PI)),
    "erfinv(input): the inverse error function (nan outside [-1, 1], +-inf at +-1), as "
    "torch.erfinv: torch's first guess refined by Newton steps in float64 (on erfc in the "
    "tails); gradient sqrt(pi)/2 * exp(erfinv(x)^2).")

digamma = _special(
    "digamma", _digamma64,
    lambda x, r: _back(_trigamma64(_wide(x)[0]), r.dtype),
    "digamma(input): the logarithmic derivative of gamma, as torch.digamma (-inf at 0, NaN at "
    "the negative integers), in float64; gradient trigamma(x).")

lgamma = _special(
    "lgamma", _lgamma64,
    lambda x, r: digamma(x) if x.dtype is r.dtype else to_dtype(digamma(x), r.dtype),
    "lgamma(input): log|gamma(input)| (inf at 0 and the negative integers), as torch.lgamma, in "
    "float64 (Lanczos, reflection below 0); gradient digamma(x).")
