"""More torch functions written over the existing ops, with torch's semantics and errors:
the products addmv, addr, addbmm and chain_matmul; diagflat, vander, combinations and
unravel_index; renorm; trapezoid, trapz and cumulative_trapezoid; rsub; fill, narrow_copy,
index_reduce; empty_strided and as_strided; the complex-number queries of a real tensor
(conj, resolve_conj, is_conj, ...) and adjoint; and the top-level in-place functions
(torch.abs_(t) is t.abs_(), ...). Autograd and symtrace.compile come from the ops they are
made of. Nothing here reads tensor values, except the range checks of index_reduce (skipped
while symtrace.compile traces)."""
import builtins
import itertools
import operator
import warnings

from .. import _C
from .._dtype import bool_, float16, float32, int64
from ._core import _check_int, _check_tensor, _is_tensor, _tname, _wrap
from .elementwise import (add, div, floor_divide, gt, logical_and, logical_or, mul, remainder, sub,
                          to_dtype, where)
from .creation import _scalar0, full, zeros
from .dtypes import promote_types
from .float_math import _back
from .reductions import _vector_norm, amax, amin, sum
from .linalg import _HALF, _beta_alpha_sum, _half_beta_alpha_sum, diag, matmul
from .scans import cumprod, cumsum
from .shape import cat, flip
from .scatter_ops import scatter_reduce
from ..amp._policy import autocast_op

_LOWER = {"symtrace.float32": "float", "symtrace.float64": "double", "symtrace.float16": "c10::Half",
          "symtrace.bfloat16": "c10::BFloat16", "symtrace.int32": "int", "symtrace.int64": "long int",
          "symtrace.uint8": "unsigned char", "symtrace.int8": "signed char", "symtrace.int16": "short int",
          "symtrace.bool": "bool"}


# ---------------- products ----------------
@autocast_op("off", devices=("cpu",))      # torch: float32 on the CPU, the autocast dtype on CUDA
@autocast_op("lower", devices=("cuda",))
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """addmv(input, mat, vec, *, beta=1, alpha=1) = beta * input + alpha * (mat @ vec), input
    broadcast to (n,) (beta = 0 ignores it, NaN included); one dtype for all three; as
    torch.addmv."""
    _check_tensor(input, "addmv")
    _check_tensor(mat, "addmv", "mat")
    _check_tensor(vec, "addmv", "vec")
    if not (mat.dim() == 2 and vec.dim() == 1 and input.dim() <= 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, "
                           f"{vec.dim()}")
    n, m = mat.shape
    if m != vec.shape[0] or not (input.numel() == n or input.numel() == 1):
        raise RuntimeError(f"size mismatch, got input ({input.shape[0] if input.dim() else 1}), mat "
                           f"({n}x{m}), vec ({vec.shape[0]})")
    if not (input.dtype is mat.dtype is vec.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_tname(input.dtype)}, {_tname(mat.dtype)}, and {_tname(vec.dtype)}")
    if input.dtype is bool_:
        raise NotImplementedError("\"addmv_impl_cpu\" not implemented for 'Bool'")
    if input.dtype in _HALF:
        return _half_addmv(input, mat, vec, beta, alpha)
    return _beta_alpha_sum(input, matmul(mat, vec), beta, alpha)


def _half_addmv(input, mat, vec, beta, alpha):
    """addmv of float16 / bfloat16 operands as torch 2.13's CPU kernels: the input added to
    alpha times the float32 product and the sum rounded once. torch's half gemv (float16;
    bfloat16 up to 4096 matrix elements, beyond which oneDNN computes in float32) first
    rounds beta and alpha to the dtype and input * beta to it (beta 0 or 1: nothing)."""
    dt = input.dtype
    if dt is float16 or mat.numel() <= 4096:
        if beta not in (0, 1):
            beta_h = full((), beta, dtype=dt).item()
            input = to_dtype(mul(to_dtype(input, float32), beta_h), dt)
            beta = 1
        alpha = full((), alpha, dtype=dt).item()
    return _half_beta_alpha_sum(input, mat, vec, beta, alpha)


def addmv_(input, mat, vec, *, beta=1, alpha=1):
    """addmv_(input, mat, vec, *, beta=1, alpha=1): input.addmv_(...), as torch.addmv_."""
    _check_tensor(input, "addmv_")
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


def _check_1d(v, name, fn):
    if v.dim() != 1:
        raise RuntimeError(f"{fn}: Expected 1-D argument {name}, but got {v.dim()}-D")


def _check_scalar(dt, v, name):
    """torch's check_addr_scalar: a bool scalar only for bool results, no float scalar for
    integral ones."""
    if isinstance(v, bool) and dt is not bool_:
        raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if not dt.is_floating_point and isinstance(v, float):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating "
                           f"point number.")


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """addr(input, vec1, vec2, *, beta=1, alpha=1) = beta * input + alpha * outer(vec1, vec2), in
    the promoted dtype of the three, input broadcast to (n, m) (beta = 0 ignores it); for bools
    (beta and input) or (alpha and vec1 and vec2); as torch.addr."""
    _check_tensor(input, "addr")
    _check_tensor(vec1, "addr", "vec1")
    _check_tensor(vec2, "addr", "vec2")
    _check_1d(vec1, "vec1", "addr")
    _check_1d(vec2, "vec2", "addr")
    shape = (vec1.shape[0], vec2.shape[0])
    inp = input.expand(shape)
    dt = promote_types(promote_types(input.dtype, vec1.dtype), vec2.dtype)   # all >= 1-D here
    _check_scalar(dt, beta, "beta")
    _check_scalar(dt, alpha, "alpha")
    a, v1, v2 = (to_dtype(t, dt) for t in (inp, vec1, vec2))
    if dt is bool_:
        prod = logical_and(v1.unsqueeze(1), v2) if alpha else zeros(shape, dtype=bool_, device=a.device)
        return logical_or(a, prod) if beta else prod
    prod = mul(v1.unsqueeze(1) if alpha == 1 else mul(v1, alpha).unsqueeze(1), v2)
    if beta == 0:
        return prod
    return add(a if beta == 1 else mul(a, beta), prod)


@autocast_op("lower")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """addbmm(input, batch1, batch2, *, beta=1, alpha=1) = beta * input + alpha * sum_b
    batch1[b] @ batch2[b] (one matrix product over the batch and inner dims together), input
    broadcast to (n, p); as torch.addbmm."""
    _check_tensor(input, "addbmm")
    _check_tensor(batch1, "addbmm", "batch1")
    _check_tensor(batch2, "addbmm", "batch2")
    if batch1.dim() >= 2 and batch2.dim() >= 3:
        input.expand((batch1.shape[1], batch2.shape[2]))       # torch's first error
    if batch1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, n, k = batch1.shape
    if batch2.shape[0] != b:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {b} and "
                           f"{batch2.shape[0]}")
    if batch2.shape[1] != k:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({n}x{k} and {batch2.shape[1]}x"
                           f"{batch2.shape[2]})")
    if batch1.dtype is not batch2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_tname(batch1.dtype)} "
                           f"and {_tname(batch2.dtype)}")
    if input.dtype is not batch2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_tname(input.dtype)} "
                           f"and {_tname(batch2.dtype)}")
    p = batch2.shape[2]
    prod = matmul(batch1.permute(1, 0, 2).reshape(n, b * k), batch2.reshape(b * k, p))
    return _beta_alpha_sum(input, prod, beta, alpha)


_CHAIN_WARNED = []


def _multi_dot_order(dims):
    """torch's matrix_chain_order: the split table s of the cheapest parenthesisation of
    matrices with p = dims (CLRS 15.2)."""
    n = len(dims) - 1
    m = [[0] * n for _ in range(n)]
    s = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            m[i][j] = None
            for k in range(i, j):
                q = m[i][k] + m[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if m[i][j] is None or q < m[i][j]:
                    m[i][j], s[i][j] = q, k
    return s


def _chain(ms, s, i, j):
    if i == j:
        return ms[i]
    k = s[i][j]
    return matmul(_chain(ms, s, i, k), _chain(ms, s, k + 1, j))


def chain_matmul(*matrices):
    """chain_matmul(*matrices): the product of 2-D matrices, in the cheapest order (torch's
    multi_dot: a cost comparison for three, the matrix-chain table beyond); deprecated in
    torch, which warns once; as torch.chain_matmul."""
    if not _CHAIN_WARNED:
        _CHAIN_WARNED.append(True)
        warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                      "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                      "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, t in enumerate(matrices):
        _check_tensor(t, "chain_matmul", f"matrices[{i}]")
        if t.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {t.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    for i, t in enumerate(matrices[1:], 1):
        if t.dtype is not matrices[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 "
                               f"is {_LOWER.get(str(matrices[0].dtype))} and tensor {i} "
                               f"{_LOWER.get(str(t.dtype))}")
        a = matrices[i - 1]
        if a.shape[1] != t.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes {list(a.shape)} "
                               f"and {list(t.shape)} cannot be multiplied")
    ms = list(matrices)
    if len(ms) == 2:
        return matmul(ms[0], ms[1])
    if len(ms) == 3:
        a, b, c, d = ms[0].shape[0], ms[1].shape[0], ms[2].shape[0], ms[2].shape[1]
        if (a * c) * (b + d) > (b * d) * (a + c):
            return matmul(ms[0], matmul(ms[1], ms[2]))
        return matmul(matmul(ms[0], ms[1]), ms[2])
    dims = [m.shape[0] for m in ms] + [ms[-1].shape[1]]
    return _chain(ms, _multi_dot_order(dims), 0, len(ms) - 1)


# ---------------- structure ----------------
def diagflat(input, offset=0):
    """diagflat(input, offset=0): the square matrix with input flattened on diagonal offset;
    as torch.diagflat."""
    _check_tensor(input, "diagflat")
    _check_int(offset, "diagflat", "offset", 2)
    return diag(input.reshape(-1), offset)


def vander(x, N=None, increasing=False):
    """vander(x, N=None, increasing=False): the Vandermonde matrix, columns x**(N-1) ... x**0
    (reversed with increasing), as torch's running product (cumprod) of [1, x, x, ...]: in x's
    dtype promoted with int64 (bools and int32 give int64); as torch.vander."""
    _check_tensor(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if N is not None:
        _check_int(N, "vander", "N", 2)
        if N < 0:
            raise RuntimeError("N must be non-negative.")
    dt = _C.result_type(_C.empty((0,), x.dtype), _C.empty((0,), int64))
    r = full((x.shape[0], n), 1, dtype=dt, device=x.device)
    if n > 1:
        xs = to_dtype(x, dt).unsqueeze(1).expand((x.shape[0], n - 1))
        r = cumprod(cat([r._slice(1, 0, 1, 1), xs], 1), 1)
    return r if increasing else flip(r, (1,))


def combinations(input, r=2, with_replacement=False):
    """combinations(input, r=2, with_replacement=False): the r-element combinations of a 1-D
    tensor's elements, (C, r) in lexicographic order of positions (r = 0: an empty 1-D tensor);
    one index_select (differentiable, no value read); as torch.combinations."""
    _check_tensor(input, "combinations")
    _check_int(r, "combinations", "r", 2)
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return full((0,), 0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return full((0, r), 0, dtype=input.dtype, device=input.device)
    # indexing with a list: its positions are a constant of a traced graph (no graph break)
    return input[[i for row in rows for i in row]].reshape(len(rows), r)


def unravel_index(indices, shape):
    """unravel_index(indices, shape) -> tuple of Tensors: the coordinates in shape of flat
    indices (floor_divide by the row-major strides, then remainder by the sizes: negative
    indices count from the end, as torch's); int64; as torch.unravel_index."""
    _check_tensor(indices, "unravel_index", "indices")
    if indices.dtype.is_floating_point or indices.dtype is bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}".replace(
            "symtrace.", "torch."))
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    elif isinstance(shape, (list, tuple)):
        for d in shape:
            if not isinstance(d, int) or isinstance(d, bool):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
        shape = tuple(shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if builtins.any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(shape)}")
    if 0 in shape and indices.numel():
        raise RuntimeError("ZeroDivisionError")
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)), func=operator.mul))))
    idx = to_dtype(indices, int64)
    if 0 in shape:              # nothing to divide: empty coordinates
        return tuple(full(tuple(indices.shape), 0, dtype=int64, device=idx.device) for _ in shape)
    return tuple(remainder(floor_divide(idx, c), n) for c, n in zip(coefs, shape))


# ---------------- renorm ----------------
def renorm(input, p, dim, maxnorm):
    """renorm(input, p, dim, maxnorm): each slice along dim whose p-norm exceeds maxnorm scaled
    by maxnorm / (norm + 1e-7) (the norm in float32 for half types), the others unchanged;
    differentiable, as torch.renorm."""
    _check_tensor(input, "renorm")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm):g}")
    nd = input.dim()
    if nd <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {nd} dimensions")
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got "
                         f"{dim})")
    d = dim % nd
    dims = tuple(k for k in range(nd) if k != d)
    dt = input.dtype
    acc = float32 if dt.is_floating_point and dt.itemsize == 2 else None
    norm = _vector_norm(input, p, dims, True, acc, "linalg.vector_norm")
    factor = where(gt(norm, maxnorm), div(maxnorm, add(norm, 1e-7)), _scalar0(norm, 1.0))
    return mul(input, _back(factor, dt))


# ---------------- integration ----------------
def _zeros_except(y, d):
    return zeros(tuple(s for k, s in enumerate(y.shape) if k != d), dtype=y.dtype, device=y.device)


def _dx_of(x, y, d, fn):
    """x's differences along d, x viewed against y as torch's trapezoid does (a 1-D x along d,
    fewer dims padded in front)."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{fn}: There must be one `x` value for each sample point")
        sizes = [1] * y.dim()
        sizes[d] = x.shape[0]
        xv = x.reshape(tuple(sizes))
    elif x.dim() < y.dim():
        xv = x.reshape((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    else:
        xv = x
    n = xv.shape[d]
    return sub(xv._slice(d, 1, builtins.max(n, 1), 1), xv._slice(d, 0, builtins.max(n - 1, 0), 1))


def _y_dim(y, dim, fn):
    _check_tensor(y, fn, "y")
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap(dim, y.dim(), fn)


def _dx_scalar(dx, fn):
    if isinstance(dx, bool) or not isinstance(dx, (int, float)):
        raise RuntimeError(f"{fn}: Currently, we only support dx as a real number.")
    return float(dx)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """trapezoid(y, x=None, *, dx=None, dim=-1): the trapezoid rule along dim, with sample
    points x (a tensor: 1-D along dim, or broadcasting after its differences are taken) or a
    constant spacing dx (default 1); zeros for an empty dim; as torch.trapezoid."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments - got both x "
                        "and dx")
    if x is not None and not _is_tensor(x):
        raise TypeError(f"trapezoid(): argument 'x' (position 2) must be Tensor, not {type(x).__name__} "
                        f"(a spacing is dx=)")
    d = _y_dim(y, dim, "trapezoid")
    if y.shape[d] == 0:
        return _zeros_except(y, d)
    n = y.shape[d]
    left, right = y._slice(d, 0, n - 1, 1), y._slice(d, 1, n, 1)
    if x is not None:
        if y.dtype is bool_ or x.dtype is bool_:
            raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is not "
                               "supported")
        return div(sum(mul(add(left, right), _dx_of(x, y, d, "trapezoid")), d), 2.0)
    if y.dtype is bool_:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    step = 1.0 if dx is None else _dx_scalar(dx, "trapezoid")
    ends = mul(add(y.select(d, 0), y.select(d, -1)), 0.5)
    return mul(sub(sum(y, d), ends), step)


def trapz(y, x=None, *, dx=None, dim=-1):
    """trapz(y, x, *, dim=-1) / trapz(y, *, dx=1, dim=-1): trapezoid, as torch.trapz."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """cumulative_trapezoid(y, x=None, *, dx=None, dim=-1): the running trapezoid-rule sums
    along dim (one element fewer than y there), as torch.cumulative_trapezoid."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments - got "
                        "both x and dx")
    fn = "cumulative_trapezoid"
    if x is not None and not _is_tensor(x):
        raise TypeError(f"{fn}(): argument 'x' (position 2) must be Tensor, not {type(x).__name__} "
                        f"(a spacing is dx=)")
    d = _y_dim(y, dim, fn)
    n = y.shape[d]
    left, right = y._slice(d, 0, builtins.max(n - 1, 0), 1), y._slice(d, builtins.min(1, n), n, 1)
    if x is not None:
        if y.dtype is bool_ or x.dtype is bool_:
            raise RuntimeError(f"{fn}: received a bool input for `x` or `y`, but bool is not supported")
        return div(cumsum(mul(add(left, right), _dx_of(x, y, d, fn)), d), 2.0)
    if y.dtype is bool_:
        raise RuntimeError(f"{fn}: received a bool input for `y`, but bool is not supported")
    step = 1.0 if dx is None else _dx_scalar(dx, fn)
    return cumsum(mul(add(left, right), step / 2.0), d)


# ---------------- small ones ----------------
def rsub(input, other, *, alpha=1):
    """rsub(input, other, *, alpha=1) = other - alpha * input (other a tensor or a number); as
    torch.rsub."""
    _check_tensor(input, "rsub")
    dt = _C.result_type(input, other)
    if dt is bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    return sub(other, input, alpha=alpha)   # sub refuses a float alpha for an integer result


def _fill_value(input, value, fn):
    if _is_tensor(value):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        return to_dtype(value, input.dtype) if value.dtype is not input.dtype else value
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{fn}(): argument 'value' (position 2) must be Number, not "
                        f"{type(value).__name__}")
    return _scalar0(input, value)


def fill(input, value):
    """fill(input, value): a new tensor of input's shape and dtype holding value (a number or a
    0-d tensor, whose gradient is the sum of the result's; input's is zero); as torch.fill."""
    _check_tensor(input, "fill")
    v = _fill_value(input, value, "fill")
    if not (input.requires_grad or v.requires_grad):
        return v.expand(tuple(input.shape)).clone()
    return where(full((), True, dtype=bool_, device=input.device), v, input)


def fill_(input, value):
    """fill_(input, value): input.fill_(value), as torch.fill_."""
    _check_tensor(input, "fill_")
    return input.fill_(value)


def zero_(input):
    """zero_(input): input.zero_(), as torch.zero_."""
    _check_tensor(input, "zero_")
    return input.zero_()


def narrow_copy(input, dim, start, length):
    """narrow_copy(input, dim, start, length): narrow(...) copied into a new tensor, as
    torch.narrow_copy."""
    from .shape import narrow
    return narrow(input, dim, start, length).clone()


_REDUCE_WARNED = []


def _index_reduce_args(input, dim, index, source, reduce, fn, include_self=True):
    _check_tensor(input, fn)
    _check_tensor(index, fn, "index")
    _check_tensor(source, fn, "source")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin "
                           f"but got {reduce}.")
    if not _REDUCE_WARNED:
        _REDUCE_WARNED.append(True)
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning,
                      stacklevel=3)
    nd = builtins.max(input.dim(), 1)
    d = _wrap(dim, nd, "index_reduce_")
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()} with type: {_tname(index.dtype)} and size: {list(index.shape)}")
    if index.dtype not in (int64, _C.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_tname(index.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_tname(input.dtype)}) and source "
                           f"({_tname(source.dtype)}) must have the same scalar type")
    if input.dim() == 0 and source.dim() != 0:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified "
                           f"dimension. Got self.shape = [] source.shape = {list(source.shape)}")
    src = source if source.dim() else source.reshape(1)
    x = input if input.dim() else input.reshape(1)
    if src.dim() != x.dim() or builtins.any(src.shape[k] != x.shape[k] for k in range(x.dim()) if k != d):
        raise RuntimeError(f"index_reduce_(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {list(x.shape)} at dimension {d} and source "
                           f"slice shape: {list(src.shape)} at dimension {d}.")
    if src.shape[d] != index.numel():
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({src.shape[d]}), for dim: {d}")
    if input.dtype is bool_:   # torch's kernels that have no bool case
        kern = ("index_reduce_func_exclude_input_init" if not include_self else
                "index_func_" if input.dim() <= 1 else "div_floor_cpu" if reduce == "mean" else None)
        if kern:
            raise NotImplementedError(f"\"{kern}\" not implemented for 'Bool'")
    idx = to_dtype(index.reshape(-1), int64)
    if idx.numel() and not _C._trace_active():
        if amin(idx).item() < 0 or amax(idx).item() >= x.shape[d]:
            raise IndexError("index out of range in self")
    shape = [1] * x.dim()
    shape[d] = idx.numel()
    return x, d, idx.reshape(tuple(shape)).expand(tuple(src.shape)), src


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """index_reduce(input, dim, index, source, reduce, *, include_self=True): input with the
    slices source[.., i, ..] reduced into input[.., index[i], ..] along dim by reduce = 'prod' |
    'mean' | 'amax' | 'amin' (integer means floor); include_self=False leaves input's own values
    out where something lands; scatter_reduce with the index expanded (differentiable); a
    beta API in torch, which warns once. As torch.index_reduce."""
    x, d, idx, src = _index_reduce_args(input, dim, index, source, reduce, "index_reduce",
                                        include_self)
    r = scatter_reduce(x, d, idx, src, reduce, include_self=include_self)
    return r if input.dim() else r.reshape(())


# ---------------- strided factories ----------------
def _storage_size(size, stride):
    if builtins.any(s == 0 for s in size):
        return 0
    return 1 + builtins.sum((s - 1) * st for s, st in zip(size, stride))


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False): an
    uninitialised tensor of that size and those strides (a strided view over fresh storage of
    the size they need); as torch.empty_strided."""
    from .creation import _shape_args, empty
    from .dtypes import get_default_dtype
    size = _shape_args((tuple(size),), "empty_strided")
    stride = _shape_args((tuple(stride),), "empty_strided")
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    base = empty(_storage_size(size, stride), dtype=dtype or get_default_dtype(), device=device)
    r = base.as_strided(size, stride, 0)
    if requires_grad:
        r.requires_grad_(True)
    return r


def as_strided(input, size, stride, storage_offset=None):
    """as_strided(input, size, stride, storage_offset=None): input.as_strided(...), a view of
    input's storage; as torch.as_strided."""
    _check_tensor(input, "as_strided")
    if storage_offset is None:
        return input.as_strided(size, stride)
    return input.as_strided(size, stride, storage_offset)


def as_strided_(input, size, stride, storage_offset=None):
    """as_strided_(input, size, stride, storage_offset=None): input.as_strided_(...), as
    torch.as_strided_."""
    _check_tensor(input, "as_strided_")
    return input.as_strided_(size, stride, storage_offset)


# ---------------- real tensors: the complex-number queries ----------------
def conj(input):
    """conj(input): input itself (symtrace has no complex dtypes), as torch.conj of a real tensor."""
    _check_tensor(input, "conj")
    return input


def conj_physical(input):
    """conj_physical(input): input itself for a real tensor, as torch.conj_physical."""
    _check_tensor(input, "conj_physical")
    return input


def conj_physical_(input):
    """conj_physical_(input): input (nothing to conjugate), as torch.conj_physical_."""
    _check_tensor(input, "conj_physical_")
    return input


def resolve_conj(input):
    """resolve_conj(input): input itself (no conjugate bit), as torch.resolve_conj."""
    _check_tensor(input, "resolve_conj")
    return input


def resolve_neg(input):
    """resolve_neg(input): input itself (no negative bit), as torch.resolve_neg."""
    _check_tensor(input, "resolve_neg")
    return input


def is_conj(input):
    """is_conj(input) -> False: symtrace tensors have no conjugate bit."""
    _check_tensor(input, "is_conj")
    return False


def is_neg(input):
    """is_neg(input) -> False: symtrace tensors have no negative bit."""
    _check_tensor(input, "is_neg")
    return False


def is_inference(input):
    """is_inference(input) -> False: symtrace has no inference tensors (inference_mode only
    switches recording off), so no tensor is one."""
    _check_tensor(input, "is_inference")
    return False


def adjoint(input):
    """adjoint(input): the transpose of the last two dims (a view; the conjugate transpose of a
    real tensor), as torch.adjoint."""
    _check_tensor(input, "adjoint")
    if input.dim() < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {input.dim()}-D tensor.")
    return input.transpose(-2, -1)


def get_device(input):
    """get_device(input) -> int: -1 for a CPU tensor, else the GPU's index; as torch.get_device."""
    _check_tensor(input, "get_device")
    return input.get_device()


# ---------------- top-level in-place functions: torch.X_(t, ...) is t.X_(...) ----------------
_INPLACE = ("abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
            "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
            "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "erf_", "exp2_", "exp_", "expm1_",
            "fix_", "floor_", "frac_", "index_put_", "log10_", "log1p_", "log2_", "log_", "logit_",
            "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_",
            "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
            "trunc_", "xlogy_")


def _inplace_fn(name):
    def f(input, *args, **kwargs):
        _check_tensor(input, name)
        return getattr(input, name)(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{name}(input, ...): input.{name}(...), in place, as torch.{name}."
    return f


for _n in _INPLACE:
    globals()[_n] = _inplace_fn(_n)
del _n
