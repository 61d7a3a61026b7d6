"""Functional ops: argument normalization in PyTorch's conventions, then one
call into symtrace._C (the logic lives in C: shape/dtype inference, errors,
kernels). Every public name mirrors torch's."""
import builtins
import collections
import math

from . import _C
from ._dtype import float32, int64, bool_, _scalar_dtype

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


mm = bmm = matmul


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


def numel(input):
    _check_tensor(input, "numel")
    return input.numel()


__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
