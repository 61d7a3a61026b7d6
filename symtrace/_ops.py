"""Functional ops: argument normalization in PyTorch's conventions, then one
call into symtrace._C (the logic lives in C: shape/dtype inference, errors,
kernels). Every public name mirrors torch's."""
import builtins
import collections
import math
import warnings

from . import _C
from ._dtype import float32, float64, int64, bool_, _scalar_dtype

KEEPDIM, HAS_WEIGHT, HAS_BIAS, TANH, HAS_MIN, HAS_MAX, INT_VALUE = 1, 2, 4, 8, 16, 32, 64

_op = _C.op


def _attrs(ints=None, floats=None, dims=None, flags=0, dtype=None):
    return (ints, floats, dims, flags, dtype)


def _dims(dim, ndim=None):
    """dim as PyTorch takes it (None, int, or a sequence) -> tuple or None (all)."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        return tuple(dim)
    return (dim,)


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _check_tensor(x, fn, name="input"):
    if not _is_tensor(x):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


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


def isnan(input):
    """isnan(input) -> bool Tensor: x != x (False for integer and bool tensors)."""
    _check_tensor(input, "isnan")
    if not input.dtype.is_floating_point:
        return zeros_like(input, dtype=bool_)
    return ne(input, input)


def isinf(input):
    """isinf(input) -> bool Tensor: |x| == inf (False for integer and bool tensors)."""
    _check_tensor(input, "isinf")
    if not input.dtype.is_floating_point:
        return zeros_like(input, dtype=bool_)
    return eq(abs(input), float("inf"))


def isfinite(input):
    """isfinite(input) -> bool Tensor: neither nan nor +-inf (True for integer and bool tensors)."""
    _check_tensor(input, "isfinite")
    if not input.dtype.is_floating_point:
        return ones_like(input, dtype=bool_)
    return lt(abs(input), float("inf"))   # nan < inf is False


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
pow = _binary(_C.OP_POW, "pow")
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
    """other * alpha, with torch's rule that a bool result takes alpha as a bool."""
    if alpha == 1:
        return other
    if _is_tensor(other) and other.dtype is bool_ and (not _is_tensor(input) or input.dtype is bool_):
        return other if alpha else logical_and(other, False)
    return mul(other, alpha) if _is_tensor(other) else other * alpha


def add(input, other, *, alpha=1, out=None):
    """add(input, other, *, alpha=1): input + alpha * other."""
    other = _scale(input, other, alpha)
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError("add(): expected at least one Tensor argument")
    return _op(_C.OP_ADD, (input, other), None, out)


def sub(input, other, *, alpha=1, out=None):
    """sub(input, other, *, alpha=1): input - alpha * other."""
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
    """where(condition, input, other): elementwise choice, broadcasting."""
    if input is None and other is None:
        raise NotImplementedError("where(condition) (nonzero) is not supported; pass input and other")
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
        return r
    flags = (HAS_MIN if min is not None else 0) | (HAS_MAX if max is not None else 0)
    ints = all(v is None or (isinstance(v, int)) for v in (min, max))
    if ints:
        flags |= INT_VALUE
        return _op(_C.OP_CLAMP, (input,), _attrs(ints=(min or 0, max or 0), flags=flags))
    return _op(_C.OP_CLAMP, (input,),
               _attrs(floats=(float(min) if min is not None else 0.0,
                              float(max) if max is not None else 0.0), flags=flags))


clip = clamp


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


_INT_RANGE = {"symtrace.int32": (-2**31, 2**31 - 1), "symtrace.int64": (-2**63, 2**63 - 1)}


def _check_fits(value, dtype):
    """torch refuses a fill value that overflows an integer dtype."""
    lim = _INT_RANGE.get(str(dtype))
    if lim is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        if value != value or not (lim[0] <= value <= lim[1]):
            raise RuntimeError(f"value cannot be converted to type {str(dtype)[9:]} without overflow")


def _can_cast(src, dst):
    """PyTorch's canCast: no float -> integral, no non-bool -> bool."""
    if src.is_floating_point and not dst.is_floating_point:
        return False
    return not (dst is bool_ and src is not bool_)


def to_dtype(input, dtype):
    _check_tensor(input, "to")
    if input.dtype is dtype:
        return input
    return _op(_C.OP_CAST, (input,), _attrs(dtype=dtype))


# ---------------- reductions ----------------
def _reduce(opid, input, dim, keepdim, fname):
    _check_tensor(input, fname)
    dims = _dims(dim)
    return _op(opid, (input,), _attrs(dims=dims, flags=KEEPDIM if keepdim else 0))


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """sum(input, dim=None, keepdim=False, *, dtype=None)."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _reduce(_C.OP_SUM, input, dim, keepdim, "sum")


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """mean(input, dim=None, keepdim=False, *, dtype=None)."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _reduce(_C.OP_MEAN, input, dim, keepdim, "mean")


def prod(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _reduce(_C.OP_PROD, input, dim, keepdim, "prod")


def amax(input, dim=(), keepdim=False):
    """amax(input, dim=(), keepdim=False): () reduces every dim, as in torch."""
    return _reduce(_C.OP_AMAX, input, None if dim == () else dim, keepdim, "amax")


def logsumexp(input, dim, keepdim=False):
    """logsumexp(input, dim, keepdim=False) = log(sum(exp(input), dim)),
    computed stably (the max subtracted first), as torch.logsumexp."""
    _check_tensor(input, "logsumexp")
    if not input.dtype.is_floating_point:  # torch computes integers in the default float
        input = to_dtype(input, _C.float32)
    return _reduce(_C.OP_LOGSUMEXP, input, dim, keepdim, "logsumexp")


def amin(input, dim=(), keepdim=False):
    return _reduce(_C.OP_AMIN, input, None if dim == () else dim, keepdim, "amin")


def argmax(input, dim=None, keepdim=False):
    """argmax(input, dim=None, keepdim=False): None means the flattened input."""
    _check_tensor(input, "argmax")
    if dim is None:
        r = _op(_C.OP_ARGMAX, (input.reshape(-1),), _attrs())
        return r.reshape((1,) * input.dim()) if keepdim else r
    return _reduce(_C.OP_ARGMAX, input, dim, keepdim, "argmax")


def argmin(input, dim=None, keepdim=False):
    _check_tensor(input, "argmin")
    if dim is None:
        r = _op(_C.OP_ARGMIN, (input.reshape(-1),), _attrs())
        return r.reshape((1,) * input.dim()) if keepdim else r
    return _reduce(_C.OP_ARGMIN, input, dim, keepdim, "argmin")


_minmax = collections.namedtuple("return_types", ["values", "indices"])


def max(input, dim=None, keepdim=False):
    """max(input) -> 0-d; max(input, dim, keepdim) -> (values, indices);
    max(input, other) -> maximum."""
    _check_tensor(input, "max")
    if _is_tensor(dim):
        return maximum(input, dim)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return amax(input)
    src = input.int() if input.dtype is bool_ else input
    return _minmax(amax(input, dim, keepdim), argmax(src, dim, keepdim))


def min(input, dim=None, keepdim=False):
    _check_tensor(input, "min")
    if _is_tensor(dim):
        return minimum(input, dim)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return amin(input)
    src = input.int() if input.dtype is bool_ else input
    return _minmax(amin(input, dim, keepdim), argmin(src, dim, keepdim))


def softmax(input, dim, dtype=None):
    _check_tensor(input, "softmax")
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _op(_C.OP_SOFTMAX, (input,), _attrs(ints=(dim,)))


def log_softmax(input, dim, dtype=None):
    _check_tensor(input, "log_softmax")
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _op(_C.OP_LOG_SOFTMAX, (input,), _attrs(ints=(dim,)))


# ---------------- matmul, indexing ----------------
def matmul(input, other):
    """matmul(input, other): 1-D, 2-D and batched with broadcasting."""
    _check_tensor(input, "matmul")
    _check_tensor(other, "matmul", "other")
    return _op(_C.OP_MATMUL, (input, other))


def mm(input, mat2):
    """mm(input, mat2): the product of two matrices, no broadcasting (as torch.mm)."""
    _check_tensor(input, "mm")
    _check_tensor(mat2, "mm", "mat2")
    if input.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    _mat_check(input, mat2)
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_tname(input.dtype).lower()} != {_tname(mat2.dtype).lower()}")
    return matmul(input, mat2)


def _mat_check(a, b):
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} "
                           f"and {b.shape[0]}x{b.shape[1]})")


def bmm(input, mat2):
    """bmm(input, mat2): batched products of 3-D tensors with equal batch sizes, no
    broadcasting (as torch.bmm)."""
    _check_tensor(input, "bmm")
    _check_tensor(mat2, "bmm", "mat2")
    _bmm_check(input, mat2)
    return matmul(input, mat2)


def _bmm_check(b1, b2):
    if b1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b2.shape[0] != b1.shape[0] or b2.shape[1] != b1.shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b1.shape[0]}, {b1.shape[2]}] but got: [{b2.shape[0]}, {b2.shape[1]}].")
    if b1.dtype is not b2.dtype:
        raise RuntimeError(f"expected scalar type {_tname(b1.dtype)} but found {_tname(b2.dtype)}")


def index_select(input, dim, index):
    _check_tensor(input, "index_select")
    _check_tensor(index, "index_select", "index")
    return _op(_C.OP_INDEX_SELECT, (input, index), _attrs(ints=(dim,)))


def gather(input, dim, index):
    _check_tensor(input, "gather")
    _check_tensor(index, "gather", "index")
    try:
        return _op(_C.OP_GATHER, (input, index), _attrs(ints=(dim,)))
    except IndexError as e:  # torch reports gather's bad index as a RuntimeError
        raise RuntimeError(str(e)) from None


def scatter_add(input, dim, index, src):
    """scatter_add(input, dim, index, src): a copy of input with
    out[..., index[p], ...] += src[p] along dim, for every point p of index
    (repeated indices accumulate)."""
    _check_tensor(input, "scatter_add")
    _check_tensor(index, "scatter_add", "index")
    _check_tensor(src, "scatter_add", "src")
    return _op(_C.OP_SCATTER_ADD, (input, index, src), _attrs(ints=(dim,)))


# ---------------- movement ----------------
def reshape(input, shape):
    _check_tensor(input, "reshape")
    return input.reshape(shape)


def flatten(input, start_dim=0, end_dim=-1):
    """flatten(input, start_dim=0, end_dim=-1)."""
    _check_tensor(input, "flatten")
    nd = input.dim()
    if nd == 0:
        return input.reshape(1)
    s = start_dim + nd if start_dim < 0 else start_dim
    e = end_dim + nd if end_dim < 0 else end_dim
    if not (0 <= s < nd and 0 <= e < nd):
        raise IndexError(f"flatten: dimension out of range for a tensor of shape {list(input.shape)} "
                         f"(start_dim={start_dim}, end_dim={end_dim})")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape
    return input.reshape(shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def permute(input, dims):
    _check_tensor(input, "permute")
    return input.permute(*dims)


def transpose(input, dim0, dim1):
    _check_tensor(input, "transpose")
    return input.transpose(dim0, dim1)


def squeeze(input, dim=None):
    _check_tensor(input, "squeeze")
    return input.squeeze(dim)


def unsqueeze(input, dim):
    _check_tensor(input, "unsqueeze")
    return input.unsqueeze(dim)


def _wrap(dim, nd, fn):
    if not -nd <= dim < builtins.max(nd, 1):
        raise IndexError(f"{fn}: Dimension out of range (expected to be in range of "
                         f"[{-nd}, {nd - 1}], but got {dim})")
    return dim + nd if dim < 0 else dim


def cat(tensors, dim=0):
    """cat(tensors, dim=0): joins along an existing dim (type promotion as torch)."""
    if _is_tensor(tensors) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"cat(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not _is_tensor(t):
            raise TypeError(f"cat(): expected a sequence of Tensors, but element {i} is "
                            f"{type(t).__name__}")
    # torch skips 1-D empty tensors in cat (legacy behaviour)
    parts = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)] or tensors[:1]
    ref = parts[0]
    nd = ref.dim()
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap(dim, nd, "cat")
    dt = ref.dtype
    total = 0
    for i, t in enumerate(parts):
        if t.dim() != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{t.dim()} (shapes {list(ref.shape)} and {list(t.shape)})")
        for k in range(nd):
            if k != d and t.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref.shape[k]} but got size {t.shape[k]} for "
                                   f"tensor number {i} in the list (shapes {list(ref.shape)} "
                                   f"and {list(t.shape)}).")
        total += t.shape[d]
        if i:
            dt = _C.result_type(_C.empty((1,), dt), t)
    shape = list(ref.shape)
    shape[d] = total
    if _C._is_grad_enabled() and any(t.requires_grad for t in parts):
        from .autograd.function import Function

        class _Cat(Function):
            """cat's backward hands each input its slice of the gradient."""
            @staticmethod
            def forward(ctx, *ts):
                return _cat_into(ts, d, shape, dt)

            @staticmethod
            def backward(ctx, g):
                return split(g, [t.shape[d] for t in parts], d)
        return _Cat.apply(*parts)
    return _cat_into(parts, d, shape, dt)


def _cat_into(parts, d, shape, dt):
    out = _C.empty(tuple(shape), dt)
    off = 0
    for t in parts:
        n = t.shape[d]
        if n:
            _op(_C.OP_COPY, (t,), None, out._slice(d, off, off + n, 1))
        off += n
    return out


concat = concatenate = cat


def stack(tensors, dim=0):
    if _is_tensor(tensors) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"stack(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if not _is_tensor(t):
            raise TypeError(f"stack(): expected a sequence of Tensors, but element {i} is "
                            f"{type(t).__name__}")
        if t.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(tensors[0].shape)} at entry 0 and {list(t.shape)} at entry {i}")
    d = _wrap(dim, tensors[0].dim() + 1, "stack")
    return cat([t.unsqueeze(d) for t in tensors], d)


def split(tensor, split_size_or_sections, dim=0):
    """split(tensor, split_size_or_sections, dim=0) -> tuple of views."""
    _check_tensor(tensor, "split", "tensor")
    nd = tensor.dim()
    d = _wrap(dim, nd, "split")
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s <= 0 and not (s == 0 and n == 0):
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
                               if s == 0 else f"split expects split_size be non-negative, but got split_size={s}")
        sizes = [s] * (n // s) + ([n % s] if n % s else []) if s else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got split_sizes={sizes}")
    out, off = [], 0
    for s in sizes:
        out.append(tensor._slice(d, off, off + s, 1))
        off += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    _check_tensor(input, "chunk")
    if not isinstance(chunks, int) or isinstance(chunks, bool):
        raise TypeError(f"chunk(): argument 'chunks' must be int, not {type(chunks).__name__}")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap(dim, input.dim(), "chunk")
    n = input.shape[d]
    size = (n + chunks - 1) // chunks if n else 0
    if size == 0:
        return tuple(input._slice(d, 0, 0, 1) for _ in range(builtins.min(chunks, 1) if n else chunks))
    return split(input, size, d)


# ---------------- creation ----------------
def _shape_args(size, fn):
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, int) or isinstance(s, bool):
            if hasattr(s, "__index__") and not isinstance(s, bool):
                continue
            raise TypeError(f"{fn}(): argument 'size' must be a tuple of ints, but found element "
                            f"of type {type(s).__name__}")
    return tuple(int(s) for s in size)


def _check_sizes(shape, fn):
    for s in shape:
        if s < 0:
            raise RuntimeError(f"{fn}(): Trying to create tensor with negative dimension {s}: {list(shape)}")


def _device_check(device):
    if device is not None and str(device) != "cpu":
        _C.empty((0,), float32, str(device))  # raises the device's error


def _dev(device):
    """The device argument of a factory op for _C.op: None (the CPU) or its string."""
    if device is None:
        return None
    if isinstance(device, int):
        return f"cuda:{device}"
    s = str(device)
    return None if s == "cpu" else s


class _ToDevice:
    """Tensor.to(device) under autograd: the gradient goes back to the source device."""
    _fn = None

    @classmethod
    def get(cls):
        if cls._fn is None:
            from .autograd.function import Function

            class ToDevice(Function):
                @staticmethod
                def forward(ctx, x, dev):
                    ctx.src = x._device_str
                    return _C._to_device(x, dev)

                @staticmethod
                def backward(ctx, g):
                    return _C._to_device(g, ctx.src), None
            cls._fn = ToDevice
        return cls._fn


def to_device(x, device):
    """A copy of x on device (x itself when it is already there); differentiable."""
    _check_tensor(x, "to")
    dev = str(device) if not isinstance(device, int) else f"cuda:{device}"
    if x.requires_grad and _C._is_grad_enabled():
        return _ToDevice.get().apply(x, dev)
    return _C._to_device(x, dev)


def _rg(t, requires_grad):
    """Marks a freshly created leaf (creation ops' requires_grad=...)."""
    if requires_grad:
        t.requires_grad_(True)
    return t


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """full(size, fill_value, *, dtype=None)."""
    return _rg(_full(size, fill_value, dtype=dtype, device=device), requires_grad)


def _full(size, fill_value, *, dtype=None, device=None):
    size = _shape_args((size,) if isinstance(size, int) else tuple(size), "full")
    _check_sizes(size, "full")
    if _is_tensor(fill_value):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = _scalar_dtype(fill_value)
    if isinstance(fill_value, float) and not dtype.is_floating_point:
        # as torch: a float fill truncates toward zero for integer dtypes; bool is != 0
        fill_value = fill_value != 0 if dtype is bool_ else int(fill_value)
    if isinstance(fill_value, (bool, int)) and not dtype.is_floating_point:
        return _op(_C.OP_FULL, (), _attrs(ints=(int(fill_value),), dims=size, flags=INT_VALUE, dtype=dtype),
                   None, _dev(device))
    return _op(_C.OP_FULL, (), _attrs(floats=(float(fill_value),), dims=size, dtype=dtype), None, _dev(device))


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return full(_shape_args(size, "zeros"), 0, dtype=dtype or float32, device=device,
                requires_grad=requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return full(_shape_args(size, "ones"), 1, dtype=dtype or float32, device=device,
                requires_grad=requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    shape = _shape_args(size, "empty")
    _check_sizes(shape, "empty")
    return _rg(_C.empty(shape, dtype or float32, _dev(device)), requires_grad)


def _like(fn, input, dtype, device, *args, **kw):
    _check_tensor(input, fn.__name__)
    return fn(input.shape, *args, dtype=dtype or input.dtype,
              device=input.device if device is None else device, **kw)


def zeros_like(input, *, dtype=None, device=None):
    return _like(zeros, input, dtype, device)


def ones_like(input, *, dtype=None, device=None):
    return _like(ones, input, dtype, device)


def empty_like(input, *, dtype=None, device=None):
    return _like(empty, input, dtype, device)


def full_like(input, fill_value, *, dtype=None, device=None):
    _check_tensor(input, "full_like")
    return full(input.shape, fill_value, dtype=dtype or input.dtype,
                device=input.device if device is None else device)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """arange(start=0, end, step=1, *, dtype=None)."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if _is_tensor(v) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    n = builtins.max(0, math.ceil((end - start) / step))
    if dtype is None:
        dtype = int64 if all(isinstance(v, int) for v in vals) else float32
    return _rg(_op(_C.OP_ARANGE, (), _attrs(floats=(float(start), float(step)), dims=(n,), dtype=dtype),
                   None, _dev(device)), requires_grad)


def _rand_dtype(dtype, fn):
    dtype = dtype or float32
    if not dtype.is_floating_point:
        raise RuntimeError(f"{fn}: expected a floating point dtype, got {dtype}")
    return dtype


def rand(*size, dtype=None, device=None, generator=None, requires_grad=False):
    shape = _shape_args(size, "rand")
    _check_sizes(shape, "rand")
    return _rg(_op(_C.OP_RAND, (), _attrs(floats=(0.0, 1.0), dims=shape,
                                          dtype=_rand_dtype(dtype, "rand")), None, _dev(device)),
               requires_grad)


def randn(*size, dtype=None, device=None, generator=None, requires_grad=False):
    shape = _shape_args(size, "randn")
    _check_sizes(shape, "randn")
    return _rg(_op(_C.OP_RANDN, (), _attrs(floats=(0.0, 1.0), dims=shape,
                                          dtype=_rand_dtype(dtype, "randn")), None, _dev(device)),
               requires_grad)


def randint(low, high=None, size=None, *, dtype=None, device=None, generator=None):
    """randint(low=0, high, size, *, dtype=int64)."""
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    shape = _shape_args(tuple(size), "randint")
    _check_sizes(shape, "randint")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _op(_C.OP_RANDINT, (), _attrs(ints=(int(low), int(high)), dims=shape, dtype=dtype or int64),
               None, _dev(device))


def rand_like(input, *, dtype=None, device=None):
    _check_tensor(input, "rand_like")
    return rand(input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randn_like(input, *, dtype=None, device=None):
    _check_tensor(input, "randn_like")
    return randn(input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randint_like(input, low, high=None, *, dtype=None, device=None):
    _check_tensor(input, "randint_like")
    return randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device)


def manual_seed(seed):
    """Seeds the counter-based generator used by rand/randn/randint/dropout."""
    _C.manual_seed(int(seed))


def initial_seed():
    return _C.initial_seed()


def from_numpy(ndarray):
    """from_numpy(ndarray): a tensor sharing ndarray's memory (through DLPack), as
    torch.from_numpy. A read-only array, which DLPack cannot export, is copied (with a
    warning; torch shares it)."""
    import numpy as np
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if builtins.any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with "
                         "negative strides are not currently supported. (You can probably work around "
                         "this by making a copy of your array  with array.copy().)")
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable: symtrace.from_numpy copies it (DLPack "
                      "cannot share read-only memory).", UserWarning, stacklevel=2)
        return _C.tensor(ndarray, None)
    return _C.from_dlpack(ndarray)


def numel(input):
    _check_tensor(input, "numel")
    return input.numel()


# ---------------- decomposed ops ----------------
# PyTorch APIs written over the ops above (no kernels of their own): autograd
# comes from theirs, and symtrace.compile traces their primitive ops into the
# graph. They branch on shapes and dtypes only, never on tensor values (the value
# queries allclose/equal and one_hot's class count excepted).
_TNAME = {"symtrace.float32": "Float", "symtrace.float64": "Double", "symtrace.float16": "Half",
          "symtrace.bfloat16": "BFloat16", "symtrace.int32": "Int", "symtrace.int64": "Long",
          "symtrace.bool": "Bool"}
_FMAX = {"symtrace.float32": 3.4028234663852886e38, "symtrace.float64": 1.7976931348623157e308,
         "symtrace.float16": 65504.0, "symtrace.bfloat16": 3.3895313892515355e38}


def _tname(dt):
    """A dtype as torch's error messages name it ('Float', 'Long', ...)."""
    return _TNAME.get(str(dt), str(dt))


def _wrap_dims(dims, nd, fn):
    """Wrapped, checked reduction dims (a 0-d tensor takes dim 0 and -1, as in torch)."""
    out = tuple(_wrap(d, builtins.max(nd, 1), fn) for d in dims)
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"{fn}: dim {d} appears multiple times in the list of dims")
    return out


def _scalar0(input, value):
    """value as a 0-d tensor of input's dtype and device (keeps where() from promoting)."""
    return full((), value, dtype=input.dtype, device=input.device)


def _check_int(v, fn, name, pos):
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be int, not {type(v).__name__}")


# ---- triangles ----
def _tri(input, diagonal, lower, fn):
    _check_tensor(input, fn)
    _check_int(diagonal, fn, "diagonal", 2)
    if input.dim() < 2:
        raise RuntimeError(f"{fn}: input tensor must have at least 2 dimensions")
    m, n = input.shape[-2:]
    rows = arange(m, device=input.device).unsqueeze(1) + diagonal
    cols = arange(n, device=input.device)
    keep = le(cols, rows) if lower else ge(cols, rows)
    return where(keep, input, _scalar0(input, False if input.dtype is bool_ else 0))


def tril(input, diagonal=0):
    """tril(input, diagonal=0): the lower triangle (col - row <= diagonal) of the last
    two dims, zeros elsewhere; batched; as torch.tril."""
    return _tri(input, diagonal, True, "tril")


def triu(input, diagonal=0):
    """triu(input, diagonal=0): the upper triangle (col - row >= diagonal) of the last
    two dims, zeros elsewhere; batched; as torch.triu."""
    return _tri(input, diagonal, False, "triu")


# ---- variance, standard deviation, norms ----
def _var_mean(input, dim, unbiased, keepdim, correction, fn):
    _check_tensor(input, fn)
    if isinstance(dim, bool):        # the legacy var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{fn}(): argument 'unbiased' given twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{fn}(): arguments 'unbiased' and 'correction' cannot both be given")
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    nd = input.dim()
    dims = _dims(dim)
    if dims:
        wd = _wrap_dims(dims, nd, fn)
        n = math.prod(input.shape[d] for d in wd) if nd else 1
    else:                             # None, () and []: every dim
        dims, n = None, input.numel()
    c = correction if correction is not None else (0 if unbiased is False else 1)
    if n - c <= 0:
        warnings.warn(f"{fn}(): degrees of freedom is <= 0. Correction should be strictly less than "
                      "the reduction factor (input numel divided by output numel).", stacklevel=3)
    x = input if input.dtype in (float32, float64) else to_dtype(input, float32)
    m = mean(x, dims, True)
    d = sub(x, m)
    v = div(sum(mul(d, d), dims, keepdim), builtins.max(0, n - c))
    if not keepdim:
        m = m.reshape(v.shape)
    if x is not input:
        v, m = to_dtype(v, input.dtype), to_dtype(m, input.dtype)
    return v, m


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """var(input, dim=None, *, correction=1, keepdim=False): sum((x - mean)^2) / (N - correction)
    (also the legacy var(input, dim, unbiased, keepdim) and var(input, unbiased)); as torch.var."""
    return _var_mean(input, dim, unbiased, keepdim, correction, "var")[0]


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """std(input, dim=None, *, correction=1, keepdim=False) = sqrt(var); as torch.std."""
    return sqrt(_var_mean(input, dim, unbiased, keepdim, correction, "std")[0])


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """var_mean(input, dim=None, *, correction=1, keepdim=False) -> (var, mean); as torch.var_mean."""
    return _var_mean(input, dim, unbiased, keepdim, correction, "var_mean")


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """std_mean(input, dim=None, *, correction=1, keepdim=False) -> (std, mean); as torch.std_mean."""
    v, m = _var_mean(input, dim, unbiased, keepdim, correction, "std_mean")
    return sqrt(v), m


def _safe_root(s, p):
    """s ** (1/p) for s >= 0 whose gradient at s == 0 is 0 (torch's norm backward
    masks the zero norm), not inf * 0 = nan."""
    zero = eq(s, 0)
    s1 = where(zero, _scalar0(s, 1), s)
    r = sqrt(s1) if p == 2 else pow(s1, 1.0 / p)
    return where(zero, _scalar0(s, 0), r)


def _vector_norm(input, p, dim, keepdim, dtype, fn):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. "
                           f"Got {_tname(input.dtype)}")
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"{fn}: dtype should be floating point or complex, but got {_tname(dtype)}")
        input = to_dtype(input, dtype)
    dims = _dims(dim) or None
    if dims is not None:
        _wrap_dims(dims, input.dim(), fn)
    p = float(p)
    if p in (math.inf, -math.inf):
        if input.numel() == 0:
            raise RuntimeError(f"{fn} cannot compute the {p} norm on an empty tensor because the "
                               "operation does not have an identity")
        red = amax if p > 0 else amin
        return red(abs(input), () if dims is None else dims, keepdim)
    if p == 0:
        return sum(to_dtype(ne(input, 0), input.dtype), dims, keepdim)
    if p == 1:
        return sum(abs(input), dims, keepdim)
    if p == 2:
        return _safe_root(sum(mul(input, input), dims, keepdim), 2)
    return _safe_root(sum(pow(abs(input), p), dims, keepdim), p)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """norm(input, p='fro', dim=None, keepdim=False, dtype=None): the vector p-norm over dim
    (every dim when None) for p = 'fro' (2), any real p, inf, -inf or 0 (the count of
    nonzeros); 'nuc' is not supported (it needs an SVD). As torch.norm."""
    _check_tensor(input, "norm")
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            p = 2
        elif p == "nuc":
            raise NotImplementedError("norm(p='nuc'): the nuclear norm (an SVD) is not supported")
        elif p == "fro":
            raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                               + " ".join(str(d) for d in dim))
        else:
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    elif p is None:
        p = 2
    return _vector_norm(input, p, dim, keepdim, dtype, "linalg.vector_norm")


# ---- products ----
def outer(input, vec2):
    """outer(input, vec2): the outer product of two 1-D tensors (as torch.outer)."""
    _check_tensor(input, "outer")
    _check_tensor(vec2, "outer", "vec2")
    if input.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.dim()}-D")
    if vec2.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    return mul(input.unsqueeze(1), vec2)


ger = outer


def _beta_alpha_sum(input, prod, beta, alpha):
    """beta * input + alpha * prod, input broadcast to prod's shape (never the reverse);
    beta == 0 ignores input's values (nan included), as torch does."""
    if not prod.dtype.is_floating_point:   # torch takes beta and alpha as integers here
        beta, alpha = int(beta), int(alpha)
    if input.dtype is not prod.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_tname(input.dtype)} "
                           f"and {_tname(prod.dtype)}")
    inp = input.expand(prod.shape)
    if alpha != 1:
        prod = mul(prod, alpha)
    if beta == 0:
        return prod
    return add(inp if beta == 1 else mul(inp, beta), prod)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """addmm(input, mat1, mat2, *, beta=1, alpha=1) = beta * input + alpha * (mat1 @ mat2);
    as torch.addmm."""
    _check_tensor(input, "addmm")
    _check_tensor(mat1, "addmm", "mat1")
    _check_tensor(mat2, "addmm", "mat2")
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.dim() != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.dim()}-D tensor")
    _mat_check(mat1, mat2)
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_tname(mat1.dtype).lower()} != {_tname(mat2.dtype).lower()}")
    return _beta_alpha_sum(input, matmul(mat1, mat2), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """baddbmm(input, batch1, batch2, *, beta=1, alpha=1) = beta * input + alpha * bmm(batch1, batch2);
    as torch.baddbmm."""
    _check_tensor(input, "baddbmm")
    _check_tensor(batch1, "baddbmm", "batch1")
    _check_tensor(batch2, "baddbmm", "batch2")
    _bmm_check(batch1, batch2)
    return _beta_alpha_sum(input, matmul(batch1, batch2), beta, alpha)


def addcmul(input, tensor1, tensor2, *, value=1):
    """addcmul(input, tensor1, tensor2, *, value=1) = input + value * tensor1 * tensor2; as torch.addcmul."""
    _check_tensor(input, "addcmul")
    _check_tensor(tensor1, "addcmul", "tensor1")
    _check_tensor(tensor2, "addcmul", "tensor2")
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
    diff = sub(end, input)
    if _is_tensor(weight):
        if weight.dim() and weight.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {_tname(input.dtype).lower()} for `weight` but got "
                               f"dtype {_tname(weight.dtype).lower()}")
        return where(lt(abs(weight), 0.5), add(input, mul(weight, diff)),
                     sub(end, mul(diff, sub(1, weight))))
    if builtins.abs(weight) < 0.5:
        return add(input, mul(diff, weight))
    return sub(end, mul(diff, 1 - weight))


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


# ---- movement ----
def broadcast_to(input, size):
    """broadcast_to(input, size): input expanded to size (a view; -1 keeps a size); as
    torch.broadcast_to."""
    _check_tensor(input, "broadcast_to")
    return input.expand(tuple(size))


def _repeat(input, sizes):
    """Tensor.repeat(*sizes): input tiled sizes[i] times along dim i (new leading dims
    for extra sizes), a new tensor; an expand of interleaved unit dims, then a reshape."""
    sizes = tuple(int(s) for s in sizes)
    nd = input.dim()
    if len(sizes) < nd:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    shape = (1,) * (len(sizes) - nd) + tuple(input.shape)
    out = [r * s for r, s in zip(sizes, shape)]
    for r in sizes:
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {r}: {out}")
    inter, big = [], []
    for r, s in zip(sizes, shape):
        inter += [1, s]
        big += [r, s]
    e = input.reshape(tuple(inter)).expand(tuple(big))
    # a copy always (an expand of unit sizes can reshape into a stride-0 view)
    e = e.clone() if e.is_contiguous() else e.contiguous()
    return e.reshape(tuple(out))


def tile(input, dims):
    """tile(input, dims): repeat with dims padded by leading 1s to input's rank; as torch.tile."""
    _check_tensor(input, "tile")
    if not isinstance(dims, (list, tuple)):
        raise TypeError(f"tile(): argument 'dims' (position 2) must be tuple of ints, not "
                        f"{type(dims).__name__}")
    dims = tuple(dims)
    return _repeat(input, (1,) * (input.dim() - len(dims)) + dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """repeat_interleave(input, repeats, dim=None): each element repeated `repeats` times along
    dim (input flattened when dim is None); as torch.repeat_interleave. An int (or one-element)
    repeats is a view expanded then reshaped; per-element repeats (a tensor or a list) need the
    counts' values (under compile a graph break) and gather by an index built from them."""
    _check_tensor(input, "repeat_interleave")
    if repeats is None:
        raise NotImplementedError("repeat_interleave(repeats): the one-argument form is not supported")
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = _wrap(dim, builtins.max(input.dim(), 1), "repeat_interleave")
    if input.dim() == 0:
        input = input.reshape(1)
    if _is_tensor(repeats):
        if repeats.dim() > 1:
            raise RuntimeError("repeat_interleave: repeats must be 0-dim or 1-dim tensor")
        if repeats.dtype.is_floating_point or repeats.dtype is bool_:
            raise RuntimeError(f"repeat_interleave: repeats has to be Long or Int tensor, "
                               f"got {repeats.dtype}")
        repeats = repeats.tolist()
    if isinstance(repeats, (list, tuple)):
        if len(repeats) == 1:
            repeats = repeats[0]
        else:
            n = input.shape[d]
            if len(repeats) != n:
                raise RuntimeError(f"repeat_interleave: repeats must have the same size as input "
                                   f"along dim, but got repeats.size(0) = {len(repeats)} and "
                                   f"input.size({dim}) = {n}")
            if builtins.any(r < 0 for r in repeats):
                raise RuntimeError("repeat_interleave: repeats can not be negative")
            idx = [i for i, r in enumerate(repeats) for _ in range(int(r))]
            return index_select(input, d, _C.tensor(idx, int64).to(input.device)
                                if input.device.type != "cpu" else _C.tensor(idx, int64))
    r = int(repeats)
    if r < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    shape = tuple(input.shape)
    big = shape[:d + 1] + (r,) + shape[d + 1:]
    out = shape[:d] + (shape[d] * r,) + shape[d + 1:]
    return input.unsqueeze(d + 1).expand(big).reshape(out)


def unbind(input, dim=0):
    """unbind(input, dim=0) -> tuple of the slices along dim (views); as torch.unbind."""
    _check_tensor(input, "unbind")
    if input.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap(dim, input.dim(), "unbind")
    return tuple(input.select(d, i) for i in range(input.shape[d]))


def narrow(input, dim, start, length):
    """narrow(input, dim, start, length): the view input[..., start:start+length, ...] along dim
    (start may be negative or a 0-d tensor); as torch.narrow."""
    _check_tensor(input, "narrow")
    if input.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, input.dim(), "narrow")
    if _is_tensor(start):
        start = start.item()
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    n = input.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return input._slice(d, start, start + length, 1)


def flip(input, dims):
    """flip(input, dims): a copy with the order of elements reversed along dims (an
    index_select with a reversed arange); as torch.flip."""
    _check_tensor(input, "flip")
    if not isinstance(dims, (list, tuple)):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not "
                        f"{type(dims).__name__}")
    nd = input.dim()
    r = input
    for d in _wrap_dims(dims, nd, "flip"):
        n = r.shape[d] if nd else 1
        if n > 1:
            r = index_select(r, d, arange(n - 1, -1, -1, device=input.device))
    return input.clone() if r is input else r


def roll(input, shifts, dims=None):
    """roll(input, shifts, dims=None): elements shifted cyclically along dims (the flattened
    input when None), an index_select per dim with the rotated arange (a cat of two slices
    traces into far more ops); as torch.roll."""
    _check_tensor(input, "roll")
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return roll(flatten(input), shifts, 0).reshape(input.shape)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if input.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    r = input
    for s, d in zip(shifts, dims):
        d = _wrap(d, input.dim(), "roll")
        n = r.shape[d]
        s = s % n if n else 0
        if s:   # out[i] = r[(i - s) mod n]
            idx = remainder(arange(n - s, 2 * n - s, device=input.device), n)
            r = index_select(r, d, idx)
    return input.clone() if r is input else r


# ---- elementwise and scans ----
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


def cumsum(input, dim, *, dtype=None):
    """cumsum(input, dim, *, dtype=None): running sums along dim, as torch.cumsum; integer
    and bool inputs give int64. Computed as a product with a triangular matrix of ones (n x n
    for a dim of size n, so O(n^2) memory and work): in the input's dtype for float32/float64,
    float32 for float16/bfloat16, float64 for integers and bools (exact while the sums stay
    below 2**53 in magnitude)."""
    _check_tensor(input, "cumsum")
    if dtype is not None:
        input = to_dtype(input, dtype)
    nd = input.dim()
    d = _wrap(dim, builtins.max(nd, 1), "cumsum")
    dt = input.dtype
    out_dt = dt if dt.is_floating_point else int64
    work = dt if dt in (float32, float64) else (float32 if dt.is_floating_point else float64)
    if nd == 0:
        return to_dtype(input, out_dt) if out_dt is not dt else input.clone()
    x = to_dtype(input, work).transpose(d, -1)
    n = x.shape[-1]
    idx = arange(n, device=input.device)
    tri = to_dtype(le(idx.unsqueeze(1), idx), work)       # tri[i, j] = i <= j
    return to_dtype(matmul(x, tri).transpose(d, -1), out_dt)


def _one_hot(tensor, num_classes=-1):
    """one_hot(tensor, num_classes=-1) -> int64 tensor of shape tensor.shape + (num_classes,)
    (nn.functional.one_hot). num_classes=-1 reads the largest class (.item(): a graph break
    under symtrace.compile); the range checks also read values, so they are skipped while a
    graph is being traced (a class out of range then gives a row of zeros)."""
    _check_tensor(tensor, "one_hot", "tensor")
    if tensor.dtype is not int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    elif num_classes == -1 or not _C._trace_active():
        if amin(tensor).item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        top = amax(tensor).item()
        if num_classes == -1:
            num_classes = top + 1
        elif top >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return to_dtype(eq(tensor.unsqueeze(-1), arange(num_classes, device=tensor.device)), int64)


# ---- einsum ----
def _einsum_term(text, base, what):
    """Labels of one einsum term: letters, and None for an ellipsis."""
    labels, i = [], 0
    while i < len(text):
        c = text[i]
        if c == ".":
            if text[i:i + 3] != "..." or None in labels:
                why = "for which an ellipsis was already found" if None in labels else \
                    "that is not part of any ellipsis (...)"
                raise RuntimeError(f"einsum(): found '.' for {what} {why}")
            labels.append(None)
            i += 3
            continue
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            if c != " ":
                raise RuntimeError(f"einsum(): invalid subscript given at index {base + i} in the "
                                   "equation string, subscripts must be in [a-zA-Z]")
        else:
            labels.append(c)
        i += 1
    return labels


def _einsum_sum(t, keys, drop):
    """Sums t over the keys in drop; returns (t, remaining keys)."""
    pos = [i for i, k in enumerate(keys) if k in drop]
    if not pos:
        return t, keys
    return sum(t, tuple(pos)), [k for k in keys if k not in drop]


def _einsum_align(t, keys, order):
    """t permuted to order's sequence of its keys, unit dims for order's keys it lacks."""
    perm = [keys.index(k) for k in order if k in keys]
    if perm != list(range(len(perm))):
        t = t.permute(*perm)
    for i, k in enumerate(order):
        if k not in keys:
            t = t.unsqueeze(i)
    return t


def _einsum_pair(a, ak, b, bk, later):
    """Contracts two operands, keeping the keys in later: batch keys (both sides, kept),
    contracted keys (both sides, summed) and each side's free keys; one batched matmul
    (a product with broadcasting when nothing is contracted)."""
    a, ak = _einsum_sum(a, ak, {k for k in ak if k not in bk and k not in later})
    b, bk = _einsum_sum(b, bk, {k for k in bk if k not in ak and k not in later})
    batch = [k for k in ak if k in bk and k in later]
    contr = [k for k in ak if k in bk and k not in later]
    afree = [k for k in ak if k not in bk]
    bfree = [k for k in bk if k not in ak]
    order = batch + afree + bfree
    if not contr:
        return mul(_einsum_align(a, ak, order), _einsum_align(b, bk, order)), order
    for k in contr:                   # a size-1 side broadcasts: sum the other side first
        sa, sb = a.shape[ak.index(k)], b.shape[bk.index(k)]
        if sa != sb:
            if sa == 1:
                b = sum(b, bk.index(k), True)
            else:
                a = sum(a, ak.index(k), True)
    a = _einsum_align(a, ak, batch + afree + contr)
    b = _einsum_align(b, bk, batch + contr + bfree)
    nb, na = len(batch), len(afree)
    fa, fb = tuple(a.shape[nb:nb + na]), tuple(b.shape[nb + len(contr):])
    kk = math.prod(a.shape[nb + na:])
    r = matmul(a.reshape(tuple(a.shape[:nb]) + (math.prod(fa), kk)),
               b.reshape(tuple(b.shape[:nb]) + (kk, math.prod(fb))))
    return r.reshape(tuple(r.shape[:nb]) + fa + fb), order


def einsum(equation, *operands):
    """einsum(equation, *operands): Einstein summation ('ij,jk->ik'; an implicit output is
    the labels seen once, sorted; '...' broadcasts), operands also as one list. Pairs of
    operands contract left to right, each as one batched matmul. A label repeated within one
    operand (a diagonal, 'ii->i') is not supported. As torch.einsum."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for i, t in enumerate(operands):
        _check_tensor(t, "einsum", f"operands[{i}]")
        if t.dtype is not operands[0].dtype:
            raise RuntimeError(f"expected scalar type {_tname(operands[0].dtype)} but found {_tname(t.dtype)}")
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    terms, base = [], 0
    for k, text in enumerate(lhs.split(",")):
        terms.append(_einsum_term(text, base, f"operand {k}"))
        base += len(text) + 1
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    nell = 0
    for i, (lab, t) in enumerate(zip(terms, operands)):
        nl = len(lab) - (None in lab)
        if None not in lab and nl != t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) does not match "
                               f"the number of dimensions ({t.dim()}) for operand {i} and no ellipsis was given")
        if nl > t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) is more than "
                               f"the number of dimensions ({t.dim()}) for operand {i}")
        if None in lab:
            nell = builtins.max(nell, t.dim() - nl)
    ops, sizes = [], {}
    for i, (lab, t) in enumerate(zip(terms, operands)):
        keys = []
        for c in lab:                 # ellipsis dims become keys 0..nell-1, right-aligned
            keys += list(range(nell - (t.dim() - len(lab) + 1), nell)) if c is None else [c]
        for k, s in zip(keys, t.shape):
            if keys.count(k) > 1:
                raise NotImplementedError(f"einsum(): subscript {k} repeated in operand {i} (a "
                                          "diagonal) is not supported")
            seen = sizes.setdefault(k, s)
            if seen != s and seen != 1 and s != 1:
                what = f"subscript {k}" if isinstance(k, str) else "an ellipsis dimension"
                raise RuntimeError(f"einsum(): {what} has size {s} for operand {i} which does not "
                                   f"broadcast with previously seen size {seen}")
            if seen == 1:
                sizes[k] = s
        ops.append((t, keys))
    if arrow < 0:
        counts = collections.Counter(k for _, keys in ops for k in keys if isinstance(k, str))
        out = list(range(nell)) + sorted(k for k, c in counts.items() if c == 1)
    else:
        out = []
        for c in _einsum_term(equation[arrow + 2:], arrow + 2, "output"):
            if c is None:
                out += list(range(nell))
                continue
            if c not in sizes:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                                   "for any input operand")
            if c in out:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            out.append(c)
    t, keys = ops[0]
    for i in range(1, len(ops)):
        later = set(out).union(*(set(kk) for _, kk in ops[i + 1:]))
        t, keys = _einsum_pair(t, keys, ops[i][0], ops[i][1], later)
    t, keys = _einsum_sum(t, keys, {k for k in keys if k not in out})
    return _einsum_align(t, keys, out)


__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
