"""Small dense linear algebra for symtrace.distributions, composed of existing ops (no
LAPACK in symtrace): the Cholesky factor of a batch of small symmetric positive-definite
matrices and lower-triangular solves. Both are column/row loops of n steps over the
batch (O(n) ops of O(batch * n^2) work each), unrolled under symtrace.compile and
differentiable through autograd; meant for the event sizes of MultivariateNormal
(up to a few tens), not for large matrices."""
from .. import _C
from .._dtype import int64
from .._ops import arange, eye, sqrt, stack, where, zeros


def _cholesky_ex(A):
    """_cholesky_ex(A) -> (L, info): L the lower Cholesky factor of the symmetric matrices
    A (..., n, n) (only the lower triangle is read, as LAPACK's), info an int64 tensor of
    A's batch shape: 0 where A is positive definite, else the order of the first leading
    minor that is not (as torch.linalg.cholesky_ex). Where info > 0, L holds nan."""
    n = A.shape[-1]
    idx = arange(n, device=A.device)
    cols = []
    info = zeros(tuple(A.shape[:-2]), dtype=int64, device=A.device)
    for j in range(n):
        v = A[..., :, j]
        if j:
            prev = stack(cols, -1)                              # (..., n, j)
            v = v - (prev * prev[..., j:j + 1, :]).sum(-1)      # A[:, j] - L[:, :j] L[j, :j]
        piv = v[..., j]
        bad = (piv <= 0) | (piv != piv)
        info = where((info == 0) & bad, j + 1, info)
        d = sqrt(piv)
        cols.append(where(idx >= j, v / d.unsqueeze(-1), 0.0))
    return stack(cols, -1), info


def cholesky(A):
    """cholesky(A) -> L, lower-triangular with L @ L.mT == A, for symmetric positive-definite
    A (..., n, n). In eager mode a matrix that is not positive definite raises torch's
    RuntimeError (the check reads values; it is skipped while symtrace.compile traces)."""
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cholesky: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.dim() >= 2 else 1} by {A.shape[-1] if A.dim() else 1} matrices")
    # the values of the lower triangle (as LAPACK reads), the gradient of the symmetric part
    # (torch's cholesky backward returns a symmetric gradient)
    sym = (A + A.mT) * 0.5
    low = A.tril() + A.tril(-1).mT
    L, info = _cholesky_ex(sym + (low - sym).detach())
    if not _C._trace_active() and info.numel():
        bad = int(info.max().item())
        if bad > 0:
            raise RuntimeError(
                "linalg.cholesky: The factorization could not be completed because the input is "
                f"not positive-definite (the leading minor of order {bad} is not positive-definite).")
    return L


def solve_tril_vec(L, b):
    """solve_tril_vec(L, b) -> x with L @ x == b: forward substitution for lower-triangular
    L (..., n, n) and vectors b (..., n); the batch dims broadcast."""
    n = L.shape[-1]
    xs = []
    for i in range(n):
        r = b[..., i]
        if i:
            r = r - (L[..., i, :i] * stack(xs, -1)).sum(-1)
        xs.append(r / L[..., i, i])
    return stack(xs, -1)


def solve_tril(L, B):
    """solve_tril(L, B) -> X with L @ X == B for lower-triangular L (..., n, n) and B
    (..., n, m); the batch dims broadcast (torch.linalg.solve_triangular(L, B, upper=False))."""
    x = solve_tril_vec(L.unsqueeze(-3), B.mT)     # (..., m, n): one solve per column of B
    return x.mT


def tril_inverse(L):
    """tril_inverse(L) -> L^-1 for lower-triangular L (..., n, n)."""
    n = L.shape[-1]
    return solve_tril(L, eye(n, dtype=L.dtype, device=L.device).expand(L.shape))


def cholesky_inverse(L):
    """cholesky_inverse(L) -> (L @ L.mT)^-1 for lower-triangular L (..., n, n)."""
    Li = tril_inverse(L)
    return Li.mT @ Li
