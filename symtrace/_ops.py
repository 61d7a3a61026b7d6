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
        return r
    flags = (HAS_MIN if min is not None else 0) | (HAS_MAX if max is not None else 0)
    ints = builtins.all(v is None or (isinstance(v, int)) for v in (min, max))
    if ints:
        flags |= INT_VALUE
        return _op(_C.OP_CLAMP, (input,), _attrs(ints=(int(min or 0), int(max or 0)), flags=flags))
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
    if _C._is_grad_enabled() and builtins.any(t.requires_grad for t in parts):
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
        dtype = int64 if builtins.all(isinstance(v, int) for v in vals) else float32
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


# ======================================================================
# More of torch's API, decomposed onto the ops above (no kernels of their
# own): autograd comes from the primitives, and symtrace.compile traces them
# into one graph. Only functions whose result *shape* depends on tensor
# values (nonzero, masked_select, ...) read values, as torch also must.
# ======================================================================
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
    return pow(2.0, _to_float(input))


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
    Integer division by a zero *tensor* element gives 0 (torch raises ZeroDivisionError,
    which needs a read of the values); a zero number divisor raises as torch."""
    _check_tensor(input, "fmod")
    if not _is_tensor(other) and not isinstance(other, (int, float)):
        raise TypeError(f"fmod(): argument 'other' (position 2) must be Tensor or Number, not "
                        f"{type(other).__name__}")
    dt = result_type(input, other)
    if dt is bool_:
        raise NotImplementedError("\"fmod\" not implemented for 'Bool'")
    if not dt.is_floating_point and not _is_tensor(other) and other == 0:
        raise RuntimeError("ZeroDivisionError")
    a = to_dtype(input, dt)
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
    # |x| >= |y|: atan(y / x), plus pi toward y's side where x is negative (or -0.0)
    q1 = div(where(c1, y, 0.0), where(logical_and(c1, ne(x, 0)), x, 1.0))
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
    return where(_signbit(y), neg(abs(x)), abs(x))


def float_power(input, exponent):
    """float_power(input, exponent) -> float64 Tensor: pow in double precision (either
    may be a number); as torch.float_power."""
    if not _is_tensor(input) and not _is_tensor(exponent):
        raise TypeError("float_power(): expected at least one Tensor argument")
    a = to_dtype(input, float64) if _is_tensor(input) else float(input)
    b = to_dtype(exponent, float64) if _is_tensor(exponent) else float(exponent)
    return pow(a, b)


# ---- reductions and scans ----
def _reduce_dims(input, dim, fn):
    """dim as a tuple of wrapped dims, or None for every dim (None, () and [])."""
    dims = _dims(dim)
    if not dims:
        return None
    _wrap_dims(dims, input.dim(), fn)
    return dims


def any(input, dim=None, keepdim=False):
    """any(input, dim=None, keepdim=False) -> bool Tensor: some element nonzero (over dim:
    an int or a tuple; every dim when None); False for an empty reduction; as torch.any."""
    _check_tensor(input, "any")
    nz = ne(input, 0)
    if isinstance(dim, (list, tuple)) and not dim:     # dim=(): nothing reduced, as torch
        return nz
    return gt(sum(nz, _reduce_dims(input, dim, "any"), keepdim), 0)


def all(input, dim=None, keepdim=False):
    """all(input, dim=None, keepdim=False) -> bool Tensor: every element nonzero (True for
    an empty reduction); as torch.all."""
    _check_tensor(input, "all")
    if isinstance(dim, (list, tuple)) and not dim:
        return ne(input, 0)
    return eq(sum(eq(input, 0), _reduce_dims(input, dim, "all"), keepdim), 0)


def count_nonzero(input, dim=None):
    """count_nonzero(input, dim=None) -> int64 Tensor: the number of nonzeros over dim (an
    int or a tuple; every dim when None); as torch.count_nonzero."""
    _check_tensor(input, "count_nonzero")
    nz = input if input.dtype is bool_ else ne(input, 0)
    return sum(nz, _reduce_dims(input, dim, "count_nonzero"))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """nansum(input, dim=None, keepdim=False, *, dtype=None): sum with nan counted as 0;
    as torch.nansum."""
    _check_tensor(input, "nansum")
    if dtype is not None:
        input = to_dtype(input, dtype)
    if input.dtype.is_floating_point:
        input = where(isnan(input), _scalar0(input, 0), input)
    return sum(input, _reduce_dims(input, dim, "nansum"), keepdim)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """nanmean(input, dim=None, keepdim=False, *, dtype=None): the mean of the non-nan
    elements (nan where there are none); floating dtypes; as torch.nanmean."""
    _check_tensor(input, "nanmean")
    if dtype is not None:
        input = to_dtype(input, dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but "
                           f"got {_tname(input.dtype)}")
    dims = _reduce_dims(input, dim, "nanmean")
    keep = logical_not(isnan(input))
    s = sum(where(keep, input, _scalar0(input, 0)), dims, keepdim)
    return div(s, to_dtype(sum(keep, dims, keepdim), s.dtype))


def _scan(x, d, combine):
    """Inclusive scan of x along dim d: out[i] = x[0] (+) x[1] (+) ... (+) x[i], for an
    associative combine, as ceil(log2 n) Hillis-Steele steps (each one index_select of the
    values k places back and one combine): O(n log n) work, no value reads, differentiable."""
    n = x.shape[d]
    idx = arange(n, device=x.device)
    shape = [1] * x.dim()
    shape[d] = n
    k = 1
    while k < n:
        back = index_select(x, d, clamp(sub(idx, k), min=0))
        x = where(ge(idx, k).reshape(tuple(shape)), combine(x, back), x)
        k *= 2
    return x


def cumprod(input, dim, *, dtype=None):
    """cumprod(input, dim, *, dtype=None): running products along dim, as torch.cumprod
    (integers and bools give int64, exact with int64 wraparound). A log-depth scan of
    multiplications, so zeros are fine, also for the gradient; float results may differ
    from a left-to-right product in the last bits."""
    _check_tensor(input, "cumprod")
    if dtype is not None:
        input = to_dtype(input, dtype)
    d = _wrap(dim, builtins.max(input.dim(), 1), "cumprod")
    x = to_dtype(input, input.dtype if input.dtype.is_floating_point else int64)
    if x.dim() == 0:
        return x.clone() if x is input else x
    r = _scan(x, d, mul)
    return r.clone() if r is input else r


def logcumsumexp(input, dim):
    """logcumsumexp(input, dim): log(cumsum(exp(input), dim)) computed stably, as a
    log-depth scan of logaddexp (no overflow or underflow from a common shift); floating
    dtypes; as torch.logcumsumexp."""
    _check_tensor(input, "logcumsumexp")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp\" not implemented for '{_tname(input.dtype)}'")
    d = _wrap(dim, builtins.max(input.dim(), 1), "logcumsumexp")
    x, dt = _opmath(input)
    if x.dim() == 0:
        return input.clone()
    r = _scan(x, d, _logaddexp)
    return r.clone() if r is input else _back(r, dt)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """diff(input, n=1, dim=-1, prepend=None, append=None): the n-th forward difference
    along dim (after joining prepend and append there); bools use xor; as torch.diff."""
    _check_tensor(input, "diff")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    _check_int(n, "diff", "n", 2)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap(dim, input.dim(), "diff")
    if n == 0:                       # torch ignores prepend and append then
        return input.clone()
    parts = []
    for name, t in (("prepend", prepend), (None, input), ("append", append)):
        if t is None:
            continue
        if name is not None:
            _check_tensor(t, "diff", name)
            if t.dim() != input.dim():
                raise RuntimeError(f"diff expects prepend or append to be the same dimension as "
                                   f"input")
        parts.append(t)
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x._slice(d, 1, m, 1), x._slice(d, 0, builtins.max(m - 1, 0), 1)
        x = ne(hi, lo) if x.dtype is bool_ else sub(hi, lo)
    return x.clone() if x is input else x


def dist(input, other, p=2):
    """dist(input, other, p=2) -> 0-d Tensor: the p-norm of input - other (broadcast);
    floating dtypes; as torch.dist."""
    _check_tensor(input, "dist")
    _check_tensor(other, "dist", "other")
    for t in (input, other):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                               f"Got {_tname(t.dtype)} instead.")
    return _vector_norm(sub(input, other), p, None, False, None, "dist")


_aminmax = collections.namedtuple("aminmax", ["min", "max"])


def aminmax(input, *, dim=None, keepdim=False):
    """aminmax(input, *, dim=None, keepdim=False) -> (min, max); as torch.aminmax."""
    _check_tensor(input, "aminmax")
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        mn, mx = amin(input), amax(input)
        if keepdim:
            mn, mx = mn.reshape((1,) * input.dim()), mx.reshape((1,) * input.dim())
        return _aminmax(mn, mx)
    d = _wrap(dim, builtins.max(input.dim(), 1), "aminmax")
    if input.dim() and input.shape[d] == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if input.dim() == 0:
        return _aminmax(input.clone(), input.clone())
    return _aminmax(amin(input, d, keepdim), amax(input, d, keepdim))


# ---- creation ----
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """eye(n, m=None, *, dtype=None, device=None): the n x m identity (m = n by default);
    as torch.eye."""
    _check_int(n, "eye", "n", 1)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is None:
        m = n
    _check_int(m, "eye", "m", 2)
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    hit = eq(arange(n, device=device).unsqueeze(1), arange(m, device=device))
    return _rg(to_dtype(hit, dtype or float32), requires_grad)


def _number(v, fn, name):
    if _is_tensor(v):
        if v.dim() != 0:
            raise RuntimeError(f"{fn}() expects {name} to be a 0-dimensional tensor, but got a "
                               f"tensor with {v.dim()} dimensions")
        return v.item()
    if not isinstance(v, (int, float)):
        raise TypeError(f"{fn}(): argument '{name}' must be Number, not {type(v).__name__}")
    return v


def _round_to(v, dtype):
    """The Python float v rounded (to nearest even) to a float dtype, on the host."""
    import struct
    v = float(v)
    if dtype is float64 or not math.isfinite(v):
        return v
    if dtype is float32:
        try:
            return struct.unpack("f", struct.pack("f", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    if str(dtype) == "symtrace.float16":
        try:
            return struct.unpack("e", struct.pack("e", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    b = struct.unpack("I", struct.pack("f", _round_to(v, float32)))[0]      # bfloat16
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return struct.unpack("f", struct.pack("I", b & 0xFFFFFFFF))[0]


def _steps_check(steps, fn):
    _check_int(steps, fn, "steps", 3)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """linspace(start, end, steps, *, dtype=None, device=None): steps evenly spaced values
    from start to end, with torch's formula (from start for the first half, from end for the
    second; in the dtype for floats, in float64 for integers, which truncate);
    start and end may be 0-d tensors (their values are read). As torch.linspace."""
    start, end = _number(start, "linspace", "start"), _number(end, "linspace", "end")
    _steps_check(steps, "linspace")
    dtype = dtype or float32
    work = dtype if dtype in (float32, float64) else (float32 if dtype.is_floating_point else float64)
    if dtype.is_floating_point:      # start and end as the dtype holds them, as torch
        start, end = _round_to(start, dtype), _round_to(end, dtype)
    else:
        start, end = int(start), int(end)
    if steps <= 1:
        return _rg(full((steps,), start, dtype=dtype, device=device), requires_grad)
    s = full((), start, dtype=work, device=device)
    e = full((), end, dtype=work, device=device)
    step = div(sub(e, s), steps - 1)
    i = arange(steps, dtype=work, device=device)
    lo = add(s, mul(step, i))
    hi = sub(e, mul(step, sub(steps - 1, i)))
    r = where(lt(i, steps // 2), lo, hi)
    return _rg(to_dtype(r, dtype), requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """logspace(start, end, steps, base=10.0, *, dtype=None, device=None): base ** linspace
    (the exponents in float64, as torch's kernel); as torch.logspace."""
    start, end = _number(start, "logspace", "start"), _number(end, "logspace", "end")
    _steps_check(steps, "logspace")
    dtype = dtype or float32
    if steps == 0:
        return _rg(full((0,), 0, dtype=dtype, device=device), requires_grad)
    if steps == 1:
        e = full((1,), start, dtype=dtype, device=device)
    else:
        s = _round_to(start, dtype) if dtype.is_floating_point else float(int(start))
        t = _round_to(end, dtype) if dtype.is_floating_point else float(int(end))
        step = (t - s) / (steps - 1)
        i = arange(steps, dtype=float64, device=device)
        e = where(lt(i, steps // 2), add(mul(i, step), s), sub(t, mul(sub(steps - 1, i), step)))
    return _rg(to_dtype(pow(float(base), to_dtype(e, float64)), dtype), requires_grad)


def _tri_indices(row, col, offset, lower, dtype, device, fn):
    for v, name, pos in ((row, "row", 1), (col, "col", 2), (offset, "offset", 3)):
        _check_int(v, fn, name, pos)
    if row < 0 or col < 0:
        raise RuntimeError(f"{fn}: row and col must be non-negative, got row={row} and col={col}")
    if dtype not in (int64, _C.int32):
        raise NotImplementedError(f"\"{fn}\" not implemented for '{_tname(dtype)}'")
    rows, cols = [], []
    for r in range(row):
        lo, hi = (0, builtins.min(col, r + offset + 1)) if lower else (builtins.max(0, r + offset), col)
        if hi > lo:
            rows += [r] * (hi - lo)
            cols += range(lo, hi)
    t = _C.tensor([rows, cols], dtype).reshape(2, len(rows))
    return t if _dev(device) is None else to_device(t, device)


def tril_indices(row, col, offset=0, *, dtype=int64, device=None):
    """tril_indices(row, col, offset=0, *, dtype=int64) -> (2, N) Tensor: the coordinates of
    the lower triangle (col - row <= offset) of a row x col matrix, row by row (built on the
    host: a constant, no graph break); as torch.tril_indices."""
    return _tri_indices(row, col, offset, True, dtype, device, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=int64, device=None):
    """triu_indices(row, col, offset=0, *, dtype=int64) -> (2, N) Tensor: the coordinates of
    the upper triangle (col - row >= offset); as torch.triu_indices."""
    return _tri_indices(row, col, offset, False, dtype, device, "triu_indices")


def _bshape(*shapes):
    """The broadcast of shapes (torch's rule), or a RuntimeError naming the mismatch."""
    nd = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for k, v in enumerate((1,) * (nd - len(s)) + tuple(s)):
            if v != 1:
                if out[k] not in (1, v):
                    raise RuntimeError(f"The size of tensor a ({out[k]}) must match the size of "
                                       f"tensor b ({v}) at non-singleton dimension {k}")
                out[k] = v
    return tuple(out)


def _zero_of(t):
    return _scalar0(t, False if t.dtype is bool_ else 0)


def _embed_last(v, offset):
    """(..., n) -> (..., m, m), m = n + |offset|: v on the diagonal col - row == offset."""
    n = v.shape[-1]
    m = n + builtins.abs(offset)
    r = arange(m, device=v.device).unsqueeze(1)
    c = arange(m, device=v.device)
    on = eq(sub(c, r), offset)
    if n == 0:
        return full(tuple(v.shape[:-1]) + (m, m), 0, dtype=v.dtype, device=v.device)
    idx = clamp(minimum(r, c), max=n - 1).reshape(-1)
    vals = index_select(v, v.dim() - 1, idx).reshape(tuple(v.shape[:-1]) + (m, m))
    return where(on, vals, _zero_of(v))


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """diag_embed(input, offset=0, dim1=-2, dim2=-1): a tensor whose diagonals (offset) in the
    planes (dim1, dim2) hold input's last dim, zeros elsewhere; as torch.diag_embed."""
    _check_tensor(input, "diag_embed")
    nd = input.dim() + 1
    d1, d2 = _wrap(dim1, nd, "diag_embed"), _wrap(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    v = input if input.dim() else input.reshape(1)
    return movedim(_embed_last(v, offset), (nd - 2, nd - 1), (d1, d2))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """diagonal(input, offset=0, dim1=0, dim2=1): the diagonal (col - row == offset) of the
    planes (dim1, dim2), appended as the last dim; as torch.diagonal, except that the result
    is a copy (an index_select), not a view: writing into it leaves input unchanged."""
    _check_tensor(input, "diagonal")
    nd = input.dim()
    d1, d2 = _wrap(dim1, nd, "diagonal"), _wrap(dim2, nd, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    x = input.permute(*([k for k in range(nd) if k not in (d1, d2)] + [d1, d2]))
    R, C = x.shape[-2:]
    L = builtins.max(0, builtins.min(R, C - offset) if offset >= 0 else builtins.min(R + offset, C))
    batch = tuple(x.shape[:-2])
    if L == 0:
        return full(batch + (0,), 0, dtype=input.dtype, device=input.device)
    i = arange(L, device=input.device)
    idx = add(mul(add(i, builtins.max(0, -offset)), C), add(i, builtins.max(0, offset)))
    return index_select(x.reshape(batch + (R * C,)), len(batch), idx)


def diag(input, diagonal=0):
    """diag(input, diagonal=0): a 1-D input -> the square matrix with it on that diagonal;
    a 2-D input -> that diagonal as a 1-D tensor (a copy); as torch.diag."""
    _check_tensor(input, "diag")
    _check_int(diagonal, "diag", "diagonal", 2)
    if input.dim() == 1:
        return _embed_last(input, diagonal)
    if input.dim() == 2:
        return globals()["diagonal"](input, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def trace(input):
    """trace(input) -> 0-d Tensor: the sum of a matrix's main diagonal (integers give
    int64); as torch.trace."""
    _check_tensor(input, "trace")
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype is bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return sum(diagonal(input))


# ---- random ----
def _check_std_values(std, fn):
    """torch refuses a negative std; for a tensor that is a read of its values, done in
    eager mode only (skipped while symtrace.compile traces)."""
    if _is_tensor(std):
        if std.numel() and not _C._trace_active() and amin(std).item() < 0:
            raise RuntimeError(f"{fn} expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"{fn} expects std >= 0.0, but found std {std}")


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """normal(mean, std=1.0, size=None): samples of N(mean, std^2): randn * std + mean, for
    tensor means and/or stds (broadcast; the result is differentiable in both) or numbers
    with a size; as torch.normal."""
    if not _is_tensor(mean) and not _is_tensor(std):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, "
                            "float), but expected (float mean, float std, tuple of ints size)")
        _check_std_values(std, "normal")
        shape = _shape_args((size,) if isinstance(size, int) else tuple(size), "normal")
        _check_sizes(shape, "normal")
        r = add(mul(randn(shape, dtype=_rand_dtype(dtype, "normal"), device=device), std), mean)
        return _rg(r, requires_grad)
    if size is not None:
        raise TypeError("normal(): size can only be given with a number mean and std")
    _check_std_values(std, "normal")
    ref = mean if _is_tensor(mean) else std
    dt = result_type(mean, std)
    if not dt.is_floating_point:
        raise RuntimeError(f"normal expects floating point mean and std, got {_tname(dt)}")
    shape = _bshape(*(tuple(t.shape) for t in (mean, std) if _is_tensor(t)))
    return add(mul(randn(shape, dtype=dt, device=ref.device), std), mean)


def bernoulli(input, p=None, *, generator=None):
    """bernoulli(input, p=None) -> Tensor of input's dtype: 1 with probability input (or p,
    a number), else 0: rand < p. Probabilities are not checked to lie in [0, 1] (torch does;
    that reads the values). As torch.bernoulli."""
    _check_tensor(input, "bernoulli")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bernoulli\" not implemented for '{_tname(input.dtype)}'")
    u = rand(tuple(input.shape), dtype=float64 if input.dtype is float64 else float32,
             device=input.device)
    return to_dtype(lt(u, input if p is None else p), input.dtype)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """multinomial(input, num_samples, replacement=False) -> int64 Tensor: category indices
    drawn with probabilities proportional to the rows of input (1-D or 2-D). Gumbel-max:
    argmax(log p + Gumbel noise) is an exact draw; with replacement, num_samples independent
    draws; without, one set of noise and num_samples successive argmaxes with the chosen
    categories masked out (the Gumbel-top-k trick: successive draws without replacement,
    as torch; zero-probability categories come last). O(num_samples * categories) work.
    The checks of the values (no negative, inf or nan entries, a positive sum) run in eager
    mode only."""
    _check_tensor(input, "multinomial")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_tname(input.dtype)}")
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    _check_int(num_samples, "multinomial", "num_samples", 2)
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    w = to_dtype(input.detach(), float64)
    if not _C._trace_active() and w.numel():
        bad, low = stack([any(logical_or(logical_not(isfinite(w)), lt(w, 0))).to(float64),
                          amin(sum(w, -1))]).tolist()
        if bad:
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if low <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    pos = gt(w, 0)
    logw = where(pos, log(where(pos, w, 1.0)), _scalar0(w, -_FMAX["symtrace.float64"]))
    batch = tuple(w.shape[:-1])

    def gumbel(shape):
        return neg(log(neg(log(rand(shape, dtype=float64, device=input.device)))))
    if replacement or num_samples == 1:
        keys = add(logw.unsqueeze(-2), gumbel(batch + (num_samples, n)))
        return argmax(keys, -1)
    keys = add(logw, gumbel(batch + (n,)))
    cats = arange(n, device=input.device)
    out = []
    for _ in range(num_samples):
        i = argmax(keys, -1, keepdim=True)
        out.append(i)
        keys = where(eq(cats, i), _scalar0(keys, -math.inf), keys)
    return cat(out, -1)


_RANDPERM_DEVICE_MAX = 2048


def randperm(n, *, generator=None, dtype=int64, device=None, requires_grad=False):
    """randperm(n, *, dtype=int64, device=None): a random permutation of 0..n-1, drawn
    from symtrace's generator (reproducible after manual_seed). Up to n = 2048 it is the
    ranks of n float64 uniforms (an n x n comparison, ties broken by position, then a
    scatter: traced by symtrace.compile); above that a host shuffle (Python's random, seeded
    by one int64 drawn from the generator: a value read, so a graph break under compile)."""
    _check_int(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if n <= _RANDPERM_DEVICE_MAX:
        k = rand(n, dtype=float64, device=device)
        i = arange(n, device=device)
        ki, kj = k.unsqueeze(1), k.unsqueeze(0)
        before = logical_or(lt(kj, ki), logical_and(eq(kj, ki), lt(i.unsqueeze(0), i.unsqueeze(1))))
        rank = sum(before, 1)
        perm = scatter_add(zeros(n, dtype=int64, device=device), 0, rank, i)
    else:
        import random as _random
        seed = randint(0, 2 ** 62, (1,)).item()
        vals = list(range(n))
        _random.Random(seed).shuffle(vals)
        perm = _C.tensor(vals, int64)
        if _dev(device) is not None:
            perm = to_device(perm, device)
    return _rg(to_dtype(perm, dtype), requires_grad)


# ---- dtype queries ----
class finfo:
    """finfo(type=float32): the numerical properties of a floating dtype (bits, eps, max,
    min, tiny = smallest_normal, resolution, dtype), as torch.finfo."""
    _TABLE = {
        "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
        "bfloat16": (16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01),
        "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e+38, 1.1754943508222875e-38, 1e-06),
        "float64": (64, 2.220446049250313e-16, 1.7976931348623157e+308, 2.2250738585072014e-308, 1e-15),
    }

    def __init__(self, type=None):
        if type is None:
            type = float32
        name = str(type)[9:] if isinstance(type, _C.dtype) else None
        if name not in self._TABLE:
            raise TypeError("symtrace.finfo() requires a floating point input type. Use "
                            "symtrace.iinfo to handle 'symtrace.finfo'")
        self.bits, self.eps, self.max, self.tiny, self.resolution = self._TABLE[name]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """iinfo(type): the range of an integer dtype (bits, min, max, dtype), as torch.iinfo."""
    _TABLE = {"int32": 32, "int64": 64}

    def __init__(self, type):
        if type is bool_:
            raise TypeError("symtrace.bool is not supported by symtrace.iinfo")
        name = str(type)[9:] if isinstance(type, _C.dtype) else None
        if name not in self._TABLE:
            raise TypeError("symtrace.iinfo() requires an integer input type. Use symtrace.finfo "
                            "to handle 'symtrace.iinfo'")
        self.bits = self._TABLE[name]
        self.min, self.max = -2 ** (self.bits - 1), 2 ** (self.bits - 1) - 1
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"


def is_floating_point(input):
    """is_floating_point(input) -> bool: input's dtype is a floating one; as torch."""
    _check_tensor(input, "is_floating_point")
    return input.dtype.is_floating_point


def is_nonzero(input):
    """is_nonzero(input) -> bool: the single element of input is nonzero (a value read);
    as torch.is_nonzero."""
    _check_tensor(input, "is_nonzero")
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item() != 0)


def _check_dtype(v, fn, name, pos):
    if not isinstance(v, _C.dtype):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be torch.dtype, not "
                        f"{type(v).__name__}")


def can_cast(from_, to):
    """can_cast(from_, to) -> bool: PyTorch's casting rule (no float to integer, nothing but
    bool to bool); as torch.can_cast."""
    _check_dtype(from_, "can_cast", "from_", 1)
    _check_dtype(to, "can_cast", "to", 2)
    return _can_cast(from_, to)


def promote_types(type1, type2):
    """promote_types(type1, type2) -> dtype: the smallest dtype both promote to; as
    torch.promote_types."""
    _check_dtype(type1, "promote_types", "type1", 1)
    _check_dtype(type2, "promote_types", "type2", 2)
    return _C.result_type(_C.empty((0,), type1), _C.empty((0,), type2))


def get_default_dtype():
    """get_default_dtype() -> symtrace.float32 (the dtype of float factories and of float
    results from integer inputs)."""
    return float32


def set_default_dtype(d):
    """set_default_dtype(d): only float32, the default already, is accepted: symtrace's C
    factories and type promotion fix float32 as the default float dtype."""
    _check_dtype(d, "set_default_dtype", "d", 1)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if d is not float32:
        raise NotImplementedError(f"set_default_dtype({d}): symtrace's default float dtype is fixed "
                                  "at float32")


# ---- shape ----
def _dim_list(v, fn, name):
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    if isinstance(v, (list, tuple)) and builtins.all(isinstance(d, int) and not isinstance(d, bool)
                                                      for d in v):
        return list(v)
    raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")


def movedim(input, source, destination):
    """movedim(input, source, destination): a view with the dims in source moved to the
    positions in destination (ints or sequences), the others in their order; as torch.movedim."""
    _check_tensor(input, "movedim")
    src = _dim_list(source, "movedim", "source")
    dst = _dim_list(destination, "movedim", "destination")
    nd = input.dim()
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should "
                           f"contain the same number of dims as destination ({dst} dims)")
    src = [_wrap(d, nd, "movedim") for d in src]
    dst = [_wrap(d, nd, "movedim") for d in dst]
    if nd == 0:
        return input.reshape(())
    for name, ds, orig in (("source", src, source), ("destination", dst, destination)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(_dim_list(orig, 'movedim', name))})")
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(k for k in range(nd) if k not in src)
    order = [next(rest) if o is None else o for o in order]
    return input.permute(*order)


moveaxis = movedim


def swapaxes(input, axis0, axis1):
    """swapaxes(input, axis0, axis1) = transpose(input, axis0, axis1); as torch.swapaxes."""
    return transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):
    """swapdims(input, dim0, dim1) = transpose(input, dim0, dim1); as torch.swapdims."""
    return transpose(input, dim0, dim1)


def unflatten(input, dim, sizes):
    """unflatten(input, dim, sizes): dim split into sizes (one may be -1); as torch.unflatten."""
    _check_tensor(input, "unflatten")
    d = _wrap(dim, input.dim(), "unflatten")
    sizes = _dim_list(sizes, "unflatten", "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d] if input.dim() else 1
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or n % known:
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of "
                               f"dim {dim} ({n}) in the input tensor")
        sizes[sizes.index(-1)] = n // known
    elif known != n:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim "
                           f"{dim} ({n}) in the input tensor")
    shape = tuple(input.shape)
    return input.reshape(shape[:d] + tuple(sizes) + shape[d + 1:])


def _tensor_seq(tensors, fn):
    if _is_tensor(tensors) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not _is_tensor(t):
            raise TypeError(f"{fn}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


def _atleast(nd, tensors, fn):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_atleast(nd, (t,), fn) for t in tensors[0])
    if len(tensors) != 1:
        return tuple(_atleast(nd, (t,), fn) for t in tensors)
    t = tensors[0]
    _check_tensor(t, fn, "tensors")
    k = t.dim()
    if k >= nd:
        return t
    if nd == 1:
        return t.reshape(1)
    if nd == 2:
        return t.reshape((1,) * (2 - k) + tuple(t.shape))
    if k == 0:
        return t.reshape(1, 1, 1)
    if k == 1:
        return t.reshape(1, t.shape[0], 1)
    return t.unsqueeze(-1)


def atleast_1d(*tensors):
    """atleast_1d(*tensors): each tensor as a view with at least 1 dim (a tensor for one
    argument, a tuple otherwise); as torch.atleast_1d."""
    return _atleast(1, tensors, "atleast_1d")


def atleast_2d(*tensors):
    """atleast_2d(*tensors): at least 2 dims (leading unit dims); as torch.atleast_2d."""
    return _atleast(2, tensors, "atleast_2d")


def atleast_3d(*tensors):
    """atleast_3d(*tensors): at least 3 dims ((N,) -> (1, N, 1), (M, N) -> (M, N, 1));
    as torch.atleast_3d."""
    return _atleast(3, tensors, "atleast_3d")


def hstack(tensors):
    """hstack(tensors): cat along dim 1 (dim 0 for 1-D inputs); as torch.hstack."""
    ts = [atleast_1d(t) for t in _tensor_seq(tensors, "hstack")]
    return cat(ts, 0 if ts and ts[0].dim() == 1 else 1)


def vstack(tensors):
    """vstack(tensors): cat along dim 0 of the inputs made at least 2-D; as torch.vstack."""
    return cat([atleast_2d(t) for t in _tensor_seq(tensors, "vstack")], 0)


row_stack = vstack


def dstack(tensors):
    """dstack(tensors): cat along dim 2 of the inputs made at least 3-D; as torch.dstack."""
    return cat([atleast_3d(t) for t in _tensor_seq(tensors, "dstack")], 2)


def column_stack(tensors):
    """column_stack(tensors): 0-D and 1-D inputs as columns (N, 1), then cat along dim 1;
    as torch.column_stack."""
    ts = _tensor_seq(tensors, "column_stack")
    return cat([t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in ts], 1)


def rot90(input, k=1, dims=(0, 1)):
    """rot90(input, k=1, dims=(0, 1)): rotated by 90 degrees k times, from dims[0] toward
    dims[1] (flips and a transpose); as torch.rot90."""
    _check_tensor(input, "rot90")
    dims = list(dims)
    nd = input.dim()
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    if dims[0] == dims[1] or builtins.abs(dims[0] - dims[1]) == nd:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    for i, d in enumerate(dims):
        if not -nd <= d < nd:
            raise RuntimeError(f"Rotation dim{i} out of range, dim{i} = {d}")
    d0, d1 = dims[0] % nd, dims[1] % nd
    k = k % 4
    if k == 1:
        return flip(input, [d1]).transpose(d0, d1)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return flip(input, [d0]).transpose(d0, d1)
    return input.clone()


def tensordot(a, b, dims=2, out=None):
    """tensordot(a, b, dims=2): contracts the last `dims` dims of a with the first of b,
    or the dims listed in dims = ([a dims], [b dims]); one matmul of the two operands
    permuted and flattened; as torch.tensordot."""
    _check_tensor(a, "tensordot", "a")
    _check_tensor(b, "tensordot", "b")
    if out is not None:
        raise NotImplementedError("tensordot(out=...) is not supported")
    if _is_tensor(dims):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of lists or an int")
        da, db = _dim_list(dims[0], "tensordot", "dims"), _dim_list(dims[1], "tensordot", "dims")
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    da = [_wrap(d, a.dim(), "tensordot") for d in da]
    db = [_wrap(d, b.dim(), "tensordot") for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} "
                               f"in dim {x} and second has size {b.shape[y]} in dim {y}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_tname(a.dtype)} but found {_tname(b.dtype)}")
    fa = [k for k in range(a.dim()) if k not in da]
    fb = [k for k in range(b.dim()) if k not in db]
    sa, sb = [a.shape[k] for k in fa], [b.shape[k] for k in fb]
    K = math.prod(a.shape[k] for k in da)
    am = a.permute(*(fa + da)).reshape(math.prod(sa), K)
    bm = b.permute(*(db + fb)).reshape(K, math.prod(sb))
    return matmul(am, bm).reshape(tuple(sa + sb))


def kron(input, other):
    """kron(input, other): the Kronecker product (input's dims interleaved with other's, one
    broadcast product); as torch.kron."""
    _check_tensor(input, "kron")
    _check_tensor(other, "kron", "other")
    nd = builtins.max(input.dim(), other.dim())
    sa = (1,) * (nd - input.dim()) + tuple(input.shape)
    sb = (1,) * (nd - other.dim()) + tuple(other.shape)
    ia = builtins.sum(((s, 1) for s in sa), ())
    ib = builtins.sum(((1, s) for s in sb), ())
    return mul(input.reshape(ia), other.reshape(ib)).reshape(tuple(x * y for x, y in zip(sa, sb)))


def block_diag(*tensors):
    """block_diag(*tensors): the tensors (0-D, 1-D as a row, or 2-D) along the diagonal of a
    zero matrix, in their promoted dtype; as torch.block_diag."""
    mats = []
    for i, t in enumerate(tensors):
        _check_tensor(t, "block_diag", f"tensors[{i}]")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.dim()} dimensions")
        mats.append(t.reshape(1, 1) if t.dim() == 0 else (t.reshape(1, -1) if t.dim() == 1 else t))
    if not mats:
        return zeros(1, 0)
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = _C.result_type(_C.empty((1,), dt), m)
    ncols = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    dev = mats[0].device
    for m in mats:
        r, c = m.shape
        pieces = [zeros(r, left, dtype=dt, device=dev), to_dtype(m, dt),
                  zeros(r, ncols - left - c, dtype=dt, device=dev)]
        rows.append(cat(pieces, 1))
        left += c
    return cat(rows, 0)


def meshgrid(*tensors, indexing=None):
    """meshgrid(*tensors, indexing='ij'|'xy'): the coordinate grids of 0-D/1-D tensors (as
    expanded views); indexing None warns and means 'ij', as torch.meshgrid."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        _check_tensor(t, "meshgrid", f"tensors[{i}]")
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "
                               f"{t.dim()}D")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have the "
                               "same dtype")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: "
                           f"{indexing}")
    sizes = [t.numel() for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for t, ax in zip(tensors, axes):
        shape = [1] * len(tensors)
        shape[ax] = t.numel()
        out.append(t.reshape(tuple(shape)).expand(tuple(sizes)))
    return tuple(out)


def cartesian_prod(*tensors):
    """cartesian_prod(*tensors): the rows of the Cartesian product of 1-D tensors, (N, k)
    (one tensor: itself); as torch.cartesian_prod."""
    for i, t in enumerate(tensors):
        _check_tensor(t, "cartesian_prod", f"tensors[{i}]")
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def take_along_dim(input, indices, dim=None):
    """take_along_dim(input, indices, dim=None): gather along dim with input and indices
    broadcast in the other dims (both flattened when dim is None); as torch.take_along_dim."""
    _check_tensor(input, "take_along_dim")
    _check_tensor(indices, "take_along_dim", "indices")
    if indices.dtype is not int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_tname(indices.dtype)}")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    nd = input.dim()
    d = _wrap(dim, nd, "take_along_dim")
    if indices.dim() != nd:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number "
                           f"of dimensions, but got {nd} dimensions for input, and {indices.dim()} "
                           f"dimensions for indices")
    s_in, s_ix = list(input.shape), list(indices.shape)
    s_in[d] = s_ix[d]
    shape = list(_bshape(tuple(s_in), tuple(s_ix)))
    idx = indices.expand(tuple(shape))
    shape[d] = input.shape[d]
    return gather(input.expand(tuple(shape)), d, idx)


def take(input, index):
    """take(input, index): input flattened, read at index (negative indices count from the
    end); the result has index's shape; as torch.take."""
    _check_tensor(input, "take")
    _check_tensor(index, "take", "index")
    if index.dtype is not int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_tname(index.dtype)}")
    n = input.numel()
    flat = input.reshape(-1)
    idx = index.reshape(-1)
    idx = where(lt(idx, 0), add(idx, n), idx)
    return index_select(flat, 0, idx).reshape(tuple(index.shape))


# ---- indexing and scatter ----
def _check_index(index, fn, dtypes=(int64,)):
    _check_tensor(index, fn, "index")
    if index.dtype not in dtypes:
        raise RuntimeError(f"{fn}(): Expected dtype int64 for index")


def _hits(input, dim, index):
    """How many points of index land on each element of input (int64, input's shape)."""
    return scatter_add(zeros(tuple(input.shape), dtype=int64, device=input.device), dim, index,
                       ones(tuple(index.shape), dtype=int64, device=input.device))


def _mean_of(total, count, dtype):
    """total / count (count > 0): true division for floats, floor division for integers."""
    if dtype.is_floating_point:
        return div(total, to_dtype(count, dtype))
    return floor_divide(total, count)


def _scatter_replace(input, dim, index, src):
    """input with input[.. index[p] ..] = src[p]: a scatter_add of src into zeros and of
    ones into a count, then a where. Exact for unique indices; an element hit more than
    once gets the mean of its values (floor mean for integers, any for bool), where torch
    leaves the choice unspecified."""
    cnt = _hits(input, dim, index)
    hit = gt(cnt, 0)
    summed = scatter_add(zeros(tuple(input.shape), dtype=input.dtype, device=input.device), dim,
                         index, src)
    if input.dtype is bool_:
        return where(hit, summed, input)
    return where(hit, _mean_of(summed, where(hit, cnt, 1), input.dtype), input)


_DENSE_LIMIT = 2 ** 27


def _scatter_dense(input, d, index, src, reduce, include_self, fn):
    """scatter with reduce = prod / amax / amin: a one-hot of index over input's dim d
    (index.numel() * input.size(d) elements) and a reduction of the masked src values; the
    rows of input beyond index's extent in the other dims are joined back by cat."""
    N = input.shape[d]
    if index.numel() * N > _DENSE_LIMIT:
        raise NotImplementedError(f"{fn}(reduce='{reduce}'): the dense decomposition needs "
                                  f"index.numel() * input.size(dim) = {index.numel() * N} elements, "
                                  f"over symtrace's limit of {_DENSE_LIMIT}")
    ishape = tuple(index.shape)
    s = src
    for k, e in enumerate(ishape):
        if s.shape[k] != e:
            s = s._slice(k, 0, e, 1)
    onehot = eq(index.unsqueeze(-1), arange(N, device=input.device))
    dt = input.dtype
    if reduce == "prod":
        ident = 1
    elif dt.is_floating_point:
        ident = -math.inf if reduce == "amax" else math.inf
    elif dt is bool_:
        ident = reduce == "amin"
    else:
        info = iinfo(dt)
        ident = info.min if reduce == "amax" else info.max
    vals = where(onehot, s.unsqueeze(-1), _scalar0(input, ident))
    red = {"prod": prod, "amax": amax, "amin": amin}[reduce](vals, d)
    red = movedim(red, -1, d)
    hit = movedim(any(onehot, d), -1, d)
    base = input
    for k, e in enumerate(ishape):
        if k != d and base.shape[k] != e:
            base = base._slice(k, 0, e, 1)
    if include_self:
        red = {"prod": mul, "amax": maximum, "amin": minimum}[reduce](base, red)
    out = where(hit, red, base)
    for k in range(input.dim()):               # the rows index does not reach
        if k != d and ishape[k] < input.shape[k]:
            rest = input
            for j in range(input.dim()):
                if j == k:
                    rest = rest._slice(j, ishape[j], input.shape[j], 1)
                elif j != d and j > k and ishape[j] < input.shape[j]:
                    rest = rest._slice(j, 0, ishape[j], 1)
            out = cat([out, rest], k)
    return out


def _scatter_args(input, dim, index, src, fn):
    _check_tensor(input, fn)
    _check_index(index, fn)
    d = _wrap(dim, builtins.max(input.dim(), 1), fn)
    if index.dim() != input.dim() and index.numel():
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if _is_tensor(src) and src.dtype is not input.dtype:
        raise RuntimeError(f"{fn}(): Expected self.dtype to be equal to src.dtype")
    return d


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """scatter(input, dim, index, src | value, *, reduce=None): a copy of input with
    out[..., index[p], ...] = src[p] along dim for every point p of index (or = value, a
    number). Non-accumulating scatter as a scatter_add of src and of a count, then a where:
    exact for unique indices; where index repeats a position, torch leaves the result
    unspecified and symtrace gives the mean of the values written there (floor mean for
    integers). reduce='add' accumulates (scatter_add); reduce='multiply' multiplies (see
    scatter_reduce). As torch.scatter."""
    if src is not None and value is not None:
        raise TypeError("scatter(): give src or value, not both")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    d = _scatter_args(input, dim, index, src, "scatter")
    if index.numel() == 0:
        return input.clone()
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    if not _is_tensor(src):
        if reduce is None:
            return where(gt(_hits(input, d, index), 0), _scalar0(input, src), input)
        src = full(tuple(index.shape), src, dtype=input.dtype, device=input.device)
    if reduce == "add":
        return scatter_add(input, d, index, src)
    if reduce == "multiply":
        return _scatter_dense(input, d, index, src, "prod", True, "scatter")
    return _scatter_replace(input, d, index, src)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce(input, dim, index, src, reduce, *, include_self=True): src reduced into
    input at index along dim with reduce = 'sum' | 'mean' (scatter_adds: any size,
    differentiable) or 'prod' | 'amax' | 'amin' (a dense one-hot of index over input's dim:
    index.numel() * input.size(dim) elements, NotImplementedError over 2**27). include_self
    False leaves input's own values out where something is scattered. Integer 'mean' floors.
    As torch.scatter_reduce."""
    d = _scatter_args(input, dim, index, src, "scatter_reduce")
    _check_tensor(src, "scatter_reduce", "src")
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)      # torch's aliases
    if reduce not in ("sum", "mean", "prod", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if index.numel() == 0:
        return input.clone()
    if reduce in ("prod", "amax", "amin"):
        return _scatter_dense(input, d, index, src, reduce, include_self, "scatter_reduce")
    cnt = _hits(input, d, index)
    hit = gt(cnt, 0)
    base = input if include_self else where(hit, _zero_of(input), input)
    total = scatter_add(base, d, index, src)
    if reduce == "sum":
        return total
    n = add(cnt, 1) if include_self else where(hit, cnt, 1)
    return where(hit, _mean_of(total, n, input.dtype), input)


def _index_along(input, dim, index, source, fn):
    """(d, index expanded to source's shape) for the index_* ops."""
    _check_tensor(input, fn)
    _check_tensor(index, fn, "index")
    if index.dtype not in (int64, _C.int32):
        raise RuntimeError(f"{fn}(): Expected dtype int32/int64 for index")
    if index.dim() > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    nd = builtins.max(input.dim(), 1)
    d = _wrap(dim, nd, fn)
    _check_tensor(source, fn, "source")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{fn}(): self ({_tname(input.dtype)}) and source ({_tname(source.dtype)}) "
                           f"must have the same scalar type")
    src = source if source.dim() else source.reshape(1)
    ishape = tuple(input.shape) if input.dim() else (1,)
    if src.dim() != len(ishape) or builtins.any(src.shape[k] != ishape[k]
                                                for k in range(len(ishape)) if k != d):
        raise RuntimeError(f"{fn}(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {list(ishape)} at dimension {d} and source "
                           f"slice shape: {list(src.shape)} at dimension {d}.")
    if src.shape[d] != index.numel():
        raise RuntimeError(f"{fn}(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim) ({src.shape[d]})")
    shape = [1] * len(ishape)
    shape[d] = index.numel()
    idx = to_dtype(index.reshape(tuple(shape)), int64).expand(tuple(src.shape))
    return d, idx, src


def index_add(input, dim, index, source, *, alpha=1):
    """index_add(input, dim, index, source, *, alpha=1): input with alpha * source[.., i, ..]
    added at input[.., index[i], ..] along dim (repeats accumulate): one scatter_add; as
    torch.index_add."""
    d, idx, src = _index_along(input, dim, index, source, "index_add")
    if alpha != 1:
        src = mul(src, alpha)
    x = input if input.dim() else input.reshape(1)
    r = scatter_add(x, d, idx, src)
    return r if input.dim() else r.reshape(())


def index_copy(input, dim, index, source):
    """index_copy(input, dim, index, source): input with input[.., index[i], ..] = source[.., i, ..]
    along dim; a repeated index gets the mean of its sources (torch: unspecified); as
    torch.index_copy."""
    d, idx, src = _index_along(input, dim, index, source, "index_copy")
    x = input if input.dim() else input.reshape(1)
    r = _scatter_replace(x, d, idx, src)
    return r if input.dim() else r.reshape(())


def index_fill(input, dim, index, value):
    """index_fill(input, dim, index, value): input with the slices index (negative from the
    end) along dim set to value (a number or a 0-d tensor, which gets a gradient); as
    torch.index_fill."""
    _check_tensor(input, "index_fill")
    _check_tensor(index, "index_fill", "index")
    if index.dtype is not int64:
        raise RuntimeError("index_fill_(): Expected dtype int64 for index.")
    if index.dim() > 1:
        raise IndexError("index_fill_(): Index is supposed to be a vector")
    nd = input.dim()
    d = _wrap(dim, builtins.max(nd, 1), "index_fill")
    n = input.shape[d] if nd else 1
    if _is_tensor(value):
        if value.dim() != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor "
                               f"with {value.dim()} dimension(s).")
        val = to_dtype(value, input.dtype)
    else:
        val = full((), value, dtype=input.dtype, device=input.device)
    idx = index.reshape(-1)
    idx = where(lt(idx, 0), add(idx, n), idx)
    hit = any(eq(arange(n, device=input.device).unsqueeze(1), idx), 1)
    shape = [1] * nd
    if nd:
        shape[d] = n
    return where(hit.reshape(tuple(shape)), val, input)


def masked_scatter(input, mask, source):
    """masked_scatter(input, mask, source): input (broadcast with mask) with the positions
    where mask is True filled, in row-major order, from the leading elements of source: the
    positions are a log-depth running count of mask, then an index_select and a where (no
    value read; the eager mode check that source is large enough reads one count). As
    torch.masked_scatter."""
    _check_tensor(input, "masked_scatter")
    _check_tensor(mask, "masked_scatter", "mask")
    _check_tensor(source, "masked_scatter", "source")
    if mask.dtype is not bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_tname(mask.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{_tname(input.dtype)} and {_tname(source.dtype)}")
    shape = _bshape(tuple(input.shape), tuple(mask.shape))
    x, m = input.expand(shape), mask.expand(shape)
    k = source.numel()
    flat = m.reshape(-1)
    if not _C._trace_active() and flat.numel() and sum(flat).item() > k:
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as "
                           "the ones in mask")
    if k == 0 or flat.numel() == 0:
        return x.clone()
    pos = sub(_scan(to_dtype(flat, int64), 0, add), 1)
    vals = index_select(source.reshape(-1), 0, clamp(pos, 0, k - 1)).reshape(shape)
    return where(m, vals, x)


def masked_select(input, mask):
    """masked_select(input, mask) -> 1-D Tensor: the elements of input (broadcast with mask)
    where mask is True. Its length depends on mask's values, which are read (.tolist(): a
    graph break under symtrace.compile, as in torch); differentiable in input. As
    torch.masked_select."""
    _check_tensor(input, "masked_select")
    _check_tensor(mask, "masked_select", "mask")
    if mask.dtype is not bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask")
    shape = _bshape(tuple(input.shape), tuple(mask.shape))
    keep = [i for i, v in enumerate(mask.expand(shape).reshape(-1).tolist()) if v]
    idx = _C.tensor(keep, int64)
    if input.device.type != "cpu":
        idx = to_device(idx, input.device)
    return index_select(input.expand(shape).reshape(-1), 0, idx)


def nonzero(input, *, as_tuple=False):
    """nonzero(input, *, as_tuple=False): the coordinates of the nonzero elements, row-major,
    as an int64 (N, input.dim()) tensor, or as_tuple a tuple of input.dim() 1-D tensors. The
    count depends on values, which are read (.tolist(): a graph break under compile, as in
    torch). As torch.nonzero."""
    _check_tensor(input, "nonzero")
    flat = input.reshape(-1)
    nz = flat if flat.dtype is bool_ else ne(flat, 0)
    ids = _C.tensor([i for i, v in enumerate(nz.tolist()) if v], int64)
    if input.device.type != "cpu":
        ids = to_device(ids, input.device)
    shape = tuple(input.shape)
    coords, stride = [], 1
    for s in reversed(shape):
        coords.append(remainder(floor_divide(ids, stride), s) if s > 1 else mul(ids, 0))
        stride *= s
    coords = coords[::-1]
    if as_tuple:
        return tuple(coords) if coords else (ids,)
    if not coords:
        return zeros(ids.shape[0], 0, dtype=int64, device=input.device)
    return stack(coords, 1)


def argwhere(input):
    """argwhere(input) = nonzero(input); as torch.argwhere."""
    return nonzero(input)


__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
