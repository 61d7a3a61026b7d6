"""torch's top-level linear algebra functions, over symtrace.linalg: det, logdet, slogdet,
inverse, cholesky, cholesky_solve, cholesky_inverse, pinverse, matrix_power, matrix_exp,
svd (torch.svd's (U, S, V) and some=), qr (some=), lu, lu_unpack, triangular_solve, cross
(dim=None) and cdist; symtrace/__init__.py exports them and the Tensor methods call them."""
import builtins
import math

from . import linalg as _la
from . import _ops as _o
from ._dtype import float32, float64, int32, int64
from ._ops._core import _check_tensor, _tname
from .amp._policy import autocast_op

_mT = _la._mT


def det(input):
    """det(input) -> Tensor: as symtrace.linalg.det (torch.det)."""
    return _la.det(input)


def slogdet(input):
    """slogdet(input) -> (sign, logabsdet): as symtrace.linalg.slogdet (torch.slogdet)."""
    return _la._top_slogdet_t(*_la._slogdet(input, "linalg.slogdet"))


def logdet(input):
    """logdet(input) -> Tensor: log(det(input)); nan for a negative determinant, -inf for a
    zero one; as torch.logdet."""
    sign, la = _la._slogdet(input, "linalg.slogdet")
    return _o.where(_o.lt(sign, 0), math.nan, la)


def inverse(input, *, out=None):
    """inverse(input) -> Tensor: as symtrace.linalg.inv (torch.inverse)."""
    return _la.inv(input, out=out)


def cholesky(input, upper=False, *, out=None):
    """cholesky(input, upper=False) -> Tensor: the Cholesky factor (torch.cholesky)."""
    L, info = _la.cholesky_ex(input, upper=upper)
    _la._raise_info(info, "cholesky", input.dim() > 2,
                    lambda i: "The factorization could not be completed because the input is not "
                              f"positive-definite (the leading minor of order {i} is not "
                              "positive-definite).")
    return _la._out(L, out, "cholesky")


def cholesky_solve(B, L, upper=False, *, out=None):
    """cholesky_solve(B, L, upper=False) -> Tensor: the solution of A X = B where A = L L^T
    (U^T U when upper) from its Cholesky factor; batch dims broadcast; as torch.cholesky_solve."""
    _check_tensor(B, "cholesky_solve", "input")
    _check_tensor(L, "cholesky_solve", "input2")
    if B.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.dim()} dimensions instead")
    if L.dim() < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L.dim()} dimensions instead")
    if L.shape[-1] != L.shape[-2] or L.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{L.shape[-2]} by {L.shape[-1]} but each b matrix is {B.shape[-2]} by "
                           f"{B.shape[-1]}")
    _la._floating(L, "cholesky_solve", kernel="!cholesky_solve_cpu")
    if B.dtype is not L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_tname(B.dtype)} and A of type {_tname(L.dtype)} instead.")
    Lo = _mT(L) if upper else L
    Y = _la._trisolve(Lo, B, upper=False)
    return _la._out(_la._trisolve(_mT(Lo), Y, upper=True), out, "cholesky_solve")


def cholesky_inverse(L, upper=False, *, out=None):
    """cholesky_inverse(L, upper=False) -> Tensor: (L L^T)^-1 (U^T U when upper) from a
    Cholesky factor; as torch.cholesky_inverse."""
    _la._square(L, "cholesky_inverse", "A")
    _la._floating(L, "cholesky_inverse", kernel="!cholesky_inverse_cpu")
    return _la._out(cholesky_solve(_la._eye(L.shape[-1], L).expand(L.shape), L, upper),
                    out, "cholesky_inverse")


def pinverse(input, rcond=1e-15):
    """pinverse(input, rcond=1e-15) -> Tensor: linalg.pinv(input, rtol=rcond) (torch.pinverse)."""
    return _la.pinv(input, rtol=rcond)


def matrix_power(input, n, *, out=None):
    """matrix_power(input, n) -> Tensor: as symtrace.linalg.matrix_power (torch.matrix_power)."""
    return _la.matrix_power(input, n, out=out)


def matrix_exp(A):
    """matrix_exp(A) -> Tensor: as symtrace.linalg.matrix_exp (torch.matrix_exp)."""
    return _la.matrix_exp(A)


def svd(input, some=True, compute_uv=True, *, out=None):
    """svd(input, some=True, compute_uv=True) -> (U, S, V): input = U diag(S) V^T (V, not
    V^T); some=False gives the full U and V; compute_uv=False gives zero-filled full U and V,
    as torch.svd."""
    if not compute_uv:
        S = _la.svdvals(input)
        m, n = input.shape[-2:]
        b = _la._batch(input)
        return _la._out(_la._top_svd_t(_la._zeros(b + (m, m), input), S,
                                       _la._zeros(b + (n, n), input)), out, "svd")
    U, S, Vh = _la.svd(input, full_matrices=not some)
    return _la._out(_la._top_svd_t(U, S, _mT(Vh)), out, "svd")


def qr(input, some=True, *, out=None):
    """qr(input, some=True) -> (Q, R): linalg.qr with mode 'reduced' (some) or 'complete'
    (torch.qr)."""
    Q, R = _la.qr(input, "reduced" if some else "complete")
    return _la._out(_la._top_qr_t(Q, R), out, "qr")


_lu_info_t = _la._return_type("_lu_with_info", ("LU", "pivots", "info"))


def lu(A, pivot=True, get_infos=False, out=None):
    """lu(A, pivot=True, get_infos=False) -> (LU, pivots) or (LU, pivots, infos): linalg's
    lu_factor_ex without its check (torch.lu)."""
    LU, piv, info = _la.lu_factor_ex(A, pivot=pivot)
    res = _lu_info_t(LU, piv, info) if get_infos else (LU, piv)
    return _la._out(res, out, "lu") if out is not None else res


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True) -> (P, L, U): the
    permutation matrix and the triangular factors of lu_factor's output (empty tensors for
    what is not unpacked); as torch.lu_unpack."""
    fn = "torch.lu_unpack"
    _check_tensor(LU_data, "lu_unpack", "LU_data")
    _check_tensor(LU_pivots, "lu_unpack", "LU_pivots")
    if LU_pivots.dtype is not int32:
        raise RuntimeError(f"{fn}: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.")
    if LU_data.dim() < 2:
        raise RuntimeError(f"{fn}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2:]
    empty = _o.zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    P = L = U = empty
    if unpack_pivots:
        perm = _la._perm_from_pivots(_o.to_dtype(LU_pivots, int64) - 1, m)
        P = _la._perm_matrix(perm, LU_data.dtype)
    if unpack_data:
        k = builtins.min(m, n)
        L = _o.tril(LU_data[..., :, :k], -1) + _la._eye(m, LU_data, k)
        U = _o.triu(LU_data[..., :k, :])
    return _la._out(_la._lu_unpack_t(P, L, U), out, "lu_unpack")


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """triangular_solve(b, A, upper=True, transpose=False, unitriangular=False) ->
    (solution, cloned_coefficient): the solution of A X = b (A^T X = b when transpose) and a
    copy of A, batch dims broadcast; as torch.triangular_solve."""
    b = input
    _check_tensor(b, "triangular_solve", "input")
    _check_tensor(A, "triangular_solve", "A")
    if b.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but "
                           f"it has {b.dim()} dimensions instead")
    if A.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, but "
                           f"it has {A.dim()} dimensions instead")
    if A.shape[-1] != A.shape[-2] or A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is "
                           f"{A.shape[-2]} by {A.shape[-1]} but each b matrix is {b.shape[-2]} by "
                           f"{b.shape[-1]}")
    _la._floating(A, "triangular_solve", kernel="!triangular_solve_cpu")
    if b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_tname(b.dtype)} and A of type {_tname(A.dtype)} instead.")
    T = _mT(A) if transpose else A
    X = _la._trisolve(T, b, upper != transpose, unitriangular)
    batch = tuple(X.shape[:-2])
    C = A.expand(batch + tuple(A.shape[-2:])).clone() if tuple(A.shape[:-2]) != batch else A.clone()
    return _la._out(_la._triangular_solve_t(X, C), out, "triangular_solve")


def cross(input, other, dim=None, *, out=None):
    """cross(input, other, dim=None) -> Tensor: linalg.cross along dim (None: the first dim of
    size 3, as torch's deprecated default); as torch.cross."""
    _check_tensor(input, "cross")
    _check_tensor(other, "cross", "other")
    if dim is None:
        shape = _o.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dims = [d for d, s in enumerate(shape) if s == 3]
        if not dims:
            raise RuntimeError("no dimension of size 3 in input")
        dim = dims[0]
    return _la.cross(input, other, dim=dim, out=out)


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


@autocast_op("fp32")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """cdist(x1, x2, p=2.0, compute_mode='use_mm_for_euclid_dist_if_necessary') -> Tensor: the
    p-norm distances (..., P, R) between the rows of x1 (..., P, M) and x2 (..., R, M), batch
    dims broadcast. p = 2 uses torch's matmul form (|a|^2 - 2 a.b + |b|^2, clamped at 0, with
    a zero gradient where a distance is 0) when
    compute_mode asks for it (if_necessary: P or R > 25), else the norms of the differences
    (P x R x M values); as torch.cdist."""
    _check_tensor(x1, "cdist", "x1")
    _check_tensor(x2, "cdist", "x2")
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {_tname(t.dtype)}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {_tname(x1.dtype)} but found {_tname(x2.dtype)}")
    if x1.dtype not in (float32, float64):
        raise NotImplementedError(f'"cdist" not implemented for \'{_tname(x1.dtype)}\'')
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    P, R = x1.shape[-2], x2.shape[-2]
    batch = _o.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    x1 = x1.expand(batch + tuple(x1.shape[-2:]))
    x2 = x2.expand(batch + tuple(x2.shape[-2:]))
    mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or
                     (compute_mode == _CDIST_MODES[0] and (P > 25 or R > 25)))
    if mm:
        n1 = _o.sum(_o.square(x1), -1, True)
        n2 = _o.sum(_o.square(x2), -1, True)
        a = _o.cat([x1 * -2.0, n1, _o.ones_like(n1)], -1)
        b = _o.cat([x2, _o.ones_like(n2), n2], -1)
        d2 = _o.matmul(a, _mT(b))
        # sqrt(max(d2, 0)) whose gradient is 0 where the distance is 0 (torch's subgradient
        # in _euclidean_dist_backward), not sqrt's infinite derivative times clamp's 0 (NaN)
        pos = _o.gt(d2, 0)
        return _o.where(pos, _o.sqrt(_o.where(pos, d2, _o.ones_like(d2))), _o.zeros_like(d2))
    return _o._vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1, False, None, "cdist")
