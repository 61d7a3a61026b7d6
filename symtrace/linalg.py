"""symtrace.linalg: torch.linalg's API (norms, products, LU / Cholesky / QR factorizations,
solvers, inverses, determinants, symmetric eigendecomposition, SVD and what is built on it,
matrix functions), plus the helpers behind torch's top-level aliases (symtrace.det, slogdet,
inverse, svd, qr, lu_unpack, triangular_solve, cdist, ...) and the Tensor methods.

How it is computed. There is no LAPACK path: every algorithm is written with symtrace's own
tensor ops (matmul, elementwise, reductions, where, gather, ...) over batched [..., m, n]
inputs, so it runs on every device, differentiates through autograd and traces under
symtrace.compile. The loops are Python loops over the matrix dimension: LU with partial
pivoting, triangular solves, Cholesky and Householder QR take one step per row or column, each
step a few ops of O(n^2) work over the whole batch (O(n) ops in all, O(n^3) work); the Jacobi
methods (eigh by two-sided rotations, svd by one-sided rotations on the columns) apply n/2
disjoint rotations at once (a round-robin ordering: each index mixed with its partner's, O(n^2)
a round), n - 1 rounds a sweep (O(n^3)), until the off-diagonal part is below the dtype's
precision (about log2(n) + 6 sweeps; a cap of 40). That suits the small and medium matrices of
DL code (n up to a hundred or two: eigh of a 64 x 64 matrix takes about 0.1 s, of 128 x 128 a
second or two, on the CPU), not large ones. The eigenvalues and singular values are as
accurate as LAPACK's; the reconstruction V diag(L) V^T to about n * eps.

Host reads. Values are read on the host only to raise torch's errors (a singular matrix for
inv/solve, a matrix that is not positive-definite for cholesky, a zero pivot for lu_factor),
to stop the Jacobi sweeps and to choose how often matrix_exp squares. Under symtrace.compile
(a trace reads no values) the checks are skipped (the *_ex forms still return info), the
Jacobi methods run a fixed number of sweeps and matrix_exp squares a fixed number of times
under masks.

Gradients. Factorizations, solvers and determinants differentiate by composition (the exact
derivative of the computed function: torch's gradients); cholesky's is made symmetric, as
torch's. eigh/eigvalsh and svd/svdvals (iterative) have their own backward
(symtrace.autograd.Function) with torch's analytic formulas.

Where it differs from torch: the signs of eigen- and singular vectors (any sign is a valid
answer; LAPACK's choice is not reproduced); Q's columns past the rank of a rank-deficient
matrix; a singular matrix under symtrace.compile gives inf/nan instead of torch's error; det's
gradient at an exactly singular matrix is the adjugate (the derivative; torch returns 0);
gradients torch refuses (qr 'complete' with m > n, cond with p in 1, inf, 'fro', 'nuc') or
makes inf (repeated eigenvalues: their terms are dropped here) are given; lstsq's gels/gelsy
assume a full-rank A (gelsd/gelss handle any rank); lu_factor(pivot=False) works on the CPU
(torch: CUDA only); float16/bfloat16 matrix_exp runs in float32.
"""
import builtins
import math

from . import _C
from . import _ops as _o
from ._dtype import bool_, float16, bfloat16, float32, float64, int32, int64
from ._ops.extras import _LOWER
from ._ops._core import _bshape, _check_tensor, _is_tensor, _tname, _wrap
from ._ops.sorting import _return_type
from .autograd.function import Function
from .amp._policy import autocast_op

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh",
           "eigvalsh", "householder_product", "inv", "inv_ex", "lstsq", "lu", "lu_factor",
           "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex",
           "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot",
           "vector_norm"]


class LinAlgError(RuntimeError):
    """Raised by a symtrace.linalg function when the data makes the operation impossible
    (a singular matrix, one that is not positive-definite); a RuntimeError, as torch's."""


# ---- result types, as torch.return_types ----
_slogdet_t = _return_type("linalg_slogdet", ("sign", "logabsdet"))
_top_slogdet_t = _return_type("slogdet", ("sign", "logabsdet"))
_inv_ex_t = _return_type("linalg_inv_ex", ("inverse", "info"))
_solve_ex_t = _return_type("linalg_solve_ex", ("result", "info"))
_cholesky_ex_t = _return_type("linalg_cholesky_ex", ("L", "info"))
_lu_factor_t = _return_type("linalg_lu_factor", ("LU", "pivots"))
_lu_factor_ex_t = _return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_lu_t = _return_type("linalg_lu", ("P", "L", "U"))
_lu_unpack_t = _return_type("lu_unpack", ("P", "L", "U"))
_qr_t = _return_type("linalg_qr", ("Q", "R"))
_top_qr_t = _return_type("qr", ("Q", "R"))
_eigh_t = _return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
_svd_t = _return_type("linalg_svd", ("U", "S", "Vh"))
_top_svd_t = _return_type("svd", ("U", "S", "V"))
_lstsq_t = _return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
_triangular_solve_t = _return_type("triangular_solve", ("solution", "cloned_coefficient"))

_EPS = {float32: 1.1920928955078125e-07, float64: 2.220446049250313e-16}
_LOW = (float16, bfloat16)


# ================================================================ checks and helpers
def _mT(A):
    return A.transpose(-2, -1)


def _batch(A):
    return tuple(A.shape[:-2])


def _eps(A):
    return _EPS.get(A.dtype, _EPS[float32])


def _trace():
    """True while symtrace.compile traces: no value may be read on the host."""
    return _C._trace_active()


def _is_matrix(A, fn, name="A"):
    _check_tensor(A, fn, name)
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")


def _square(A, fn, name="A"):
    _is_matrix(A, fn, name)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _floating(A, fn, kernel=None, low=False):
    """torch's dtype checks: integer (and bool) inputs are refused; so are float16 and
    bfloat16 unless low, with torch's message (or its missing-kernel error when kernel
    names the LAPACK kernel that torch would call)."""
    if not A.dtype.is_floating_point:
        if kernel is not None and kernel.startswith("!"):
            raise NotImplementedError(f'"{kernel[1:]}" not implemented for \'{_tname(A.dtype)}\'')
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. "
                           f"Got {_tname(A.dtype)}")
    if A.dtype in _LOW and not low:
        if kernel is not None:
            raise NotImplementedError(f'"{kernel.lstrip("!")}" not implemented for '
                                      f'\'{_tname(A.dtype)}\'')
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got {_tname(A.dtype)}")


def _same_dtype(A, B, fn, a="A", b="B"):
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{fn}: Expected {a} and {b} to have the same dtype, but found {a} of "
                           f"type {_tname(A.dtype)} and {b} of type {_tname(B.dtype)} instead")


def _out(res, out, fn):
    """Copies res (a tensor or a tuple of tensors) into out=, as torch's out= variants."""
    if out is None:
        return res
    single = _is_tensor(res)
    rs = (res,) if single else tuple(res)
    os_ = (out,) if single and _is_tensor(out) else out
    if not isinstance(os_, (list, tuple)) or len(os_) != len(rs) or \
            not builtins.all(_is_tensor(o) for o in os_):
        raise TypeError(f"{fn}(): argument 'out' must be "
                        + ("Tensor" if single else f"a tuple of {len(rs)} Tensors"))
    if _C._is_grad_enabled() and builtins.any(r.requires_grad for r in rs):
        raise RuntimeError(f"{fn}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    for o, r in zip(os_, rs):
        if tuple(o.shape) != tuple(r.shape):
            raise RuntimeError(f"{fn}(): out= tensor of shape {list(o.shape)} does not match the "
                               f"result's shape {list(r.shape)} (symtrace cannot resize it)")
        o.copy_(r)
    return os_[0] if single else type(res)(*os_)


def _raise_info(info, fn, batched, message):
    """torch's error for the first nonzero info (a host read; skipped under a trace)."""
    if _trace() or info.numel() == 0:
        return
    flat = info.reshape(-1)
    bad = _o.ne(flat, 0)
    if not bool(_o.any(bad).item()):
        return
    i = int(_o.argmax(_o.to_dtype(bad, int32)).item())
    where = f"(Batch element {i}): " if batched else ""
    raise LinAlgError(f"{fn}: {where}{message(int(flat[i].item()))}")


def _zeros(shape, like, dtype=None):
    return _o.zeros(*shape, dtype=dtype or like.dtype, device=like.device)


def _ar(n, like):
    return _o.arange(n, device=like.device)


def _eye(n, like, m=None):
    return _o.eye(n, n if m is None else m, dtype=like.dtype, device=like.device)


def _first_true(flags):
    """flags (..., k) bool -> (..., ) int32: 1 + the index of the first True, 0 if none
    (LAPACK's info)."""
    if flags.shape[-1] == 0:
        return _o.zeros(*flags.shape[:-1], dtype=int32, device=flags.device)
    fi = _o.to_dtype(flags, int32)
    first = _o.argmax(fi, -1)
    return _o.to_dtype(_o.where(_o.gt(_o.amax(fi, -1), 0), first + 1, 0), int32)


def _mask_set_col(M, j, col):
    """M with column j replaced by col (..., m)."""
    return _o.where(_o.eq(_ar(M.shape[-1], M), j), col.unsqueeze(-1), M)


# ================================================================ LU with partial pivoting
def _lu_core(A, pivot=True):
    """A (..., m, n) -> (LU, piv, perm, info): LAPACK getrf's packed factors (L unit lower
    below the diagonal, U on and above it), the 0-based pivot row of each step (..., k) int64,
    the row order perm (..., m) (row i of L U is row perm[i] of A) and info (..., ) int32 (1 +
    the first zero pivot, 0 if none). Partial pivoting picks the first largest |entry|, as
    LAPACK. A zero pivot leaves its column unscaled (zeros below), as LAPACK."""
    m, n = A.shape[-2:]
    k = builtins.min(m, n)
    batch = _batch(A)
    ri = _ar(m, A)
    rc = ri.unsqueeze(-1)
    ci = _ar(n, A)
    perm = ri.expand(batch + (m,)) if batch else ri
    pivs, zero = [], []
    for j in range(k):
        if pivot and j < m - 1:
            with _o._no_grad():
                cand = _o.where(_o.ge(ri, j), _o.abs(A[..., :, j].detach()), -1.0)
                p = _o.argmax(cand, -1, True)                     # (..., 1)
            rowj = A[..., j:j + 1, :]
            rowp = _o.gather(A, -2, p.unsqueeze(-1).expand(batch + (1, n)))
            isp = _o.eq(rc, p.unsqueeze(-1))
            A = _o.where(isp, rowj, _o.where(_o.eq(rc, j), rowp, A))
            vj = perm[..., j:j + 1]
            vp = _o.gather(perm, -1, p)
            perm = _o.where(_o.eq(ri, p), vj, _o.where(_o.eq(ri, j), vp, perm))
        else:
            p = _o.full(batch + (1,), j, dtype=int64, device=A.device)
        pivs.append(p)
        piv_val = A[..., j, j]
        zero.append(_o.eq(piv_val, 0).unsqueeze(-1))
        if j < m - 1:
            safe = _o.where(_o.eq(piv_val, 0), 1.0, piv_val)
            l = _o.where(_o.gt(ri, j), A[..., :, j] / safe.unsqueeze(-1), 0.0)   # (..., m)
            if j < n - 1:
                urow = _o.where(_o.gt(ci, j), A[..., j, :], 0.0)
                A = A - l.unsqueeze(-1) * urow.unsqueeze(-2)
            A = _o.where(_o.logical_and(_o.gt(rc, j), _o.eq(ci, j)), l.unsqueeze(-1), A)
    if k == 0:
        piv = _o.zeros(*(batch + (0,)), dtype=int64, device=A.device)
        info = _o.zeros(*batch, dtype=int32, device=A.device)
    else:
        piv = _o.cat(pivs, -1)
        info = _first_true(_o.cat(zero, -1))
    return A, piv, perm, info


def _perm_from_pivots(piv, m):
    """0-based pivots (..., k) int64 -> the row order perm (..., m) (LAPACK's swaps in turn)."""
    ri = _ar(m, piv)
    batch = tuple(piv.shape[:-1])
    perm = ri.expand(batch + (m,)) if batch else ri
    for j in range(piv.shape[-1]):
        p = piv[..., j:j + 1]
        vj = perm[..., j:j + 1]
        vp = _o.gather(perm, -1, p)
        perm = _o.where(_o.eq(ri, p), vj, _o.where(_o.eq(ri, j), vp, perm))
    return perm


def _perm_matrix(perm, dtype):
    """perm (..., m) -> P (..., m, m) with A = P (L U): P[perm[i], i] = 1."""
    m = perm.shape[-1]
    return _o.to_dtype(_o.eq(perm.unsqueeze(-2), _ar(m, perm).unsqueeze(-1)), dtype)


def _permute_rows(perm, B):
    """Rows of B in the order perm: (P^T B)[i] = B[perm[i]] (one matmul, broadcasting)."""
    return _o.matmul(_mT(_perm_matrix(perm, B.dtype)), B)


# ================================================================ triangular solves
def _trisolve(T, B, upper, unit=False):
    """Solves T X = B for X; T (..., n, n) triangular (the other triangle, and the diagonal
    when unit, is never read), B (..., n, k); batch dims broadcast. One row of X a step
    (forward or back substitution)."""
    n = T.shape[-1]
    if upper:
        T = _o.triu(T, 1 if unit else 0)
    else:
        T = _o.tril(T, -1 if unit else 0)
    batch = _bshape(_batch(T), _batch(B))
    k = B.shape[-1]
    rc = _ar(n, T).unsqueeze(-1)
    X = None
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        acc = B[..., i:i + 1, :]
        if X is not None:
            acc = acc - _o.matmul(T[..., i:i + 1, :], X)
        if not unit:
            acc = acc / T[..., i:i + 1, i:i + 1]
        X = _o.where(_o.eq(rc, i), acc, 0.0 if X is None else X)
    if X is None:
        return _zeros(batch + (n, k), T)
    if tuple(X.shape) != batch + (n, k):
        X = X.expand(batch + (n, k))
    return X


def _lu_solve_packed(LU, perm, B):
    """Solves A X = B from A's packed LU factors and row order."""
    Y = _trisolve(LU, _permute_rows(perm, B), upper=False, unit=True)
    return _trisolve(LU, Y, upper=True)


# ================================================================ Cholesky
def _sym_grad(A):
    """A, whose gradient is made symmetric: (G + G^T) / 2 (forward values are A's where A is
    symmetric, and within rounding of A elsewhere). torch's cholesky returns a symmetric
    gradient though it reads one triangle; this gives the same."""
    if not (A.requires_grad and _C._is_grad_enabled()):
        return A
    S = (A + _mT(A)) * 0.5
    return S + (A - S).detach()


def _chol_core(A):
    """Reads A's lower triangle -> (L, info): L L^T = A, column by column (as LAPACK potrf
    'L'); info = 1 + the first leading minor that is not positive-definite, 0 if none."""
    n = A.shape[-1]
    ri = _ar(n, A)
    L, bad = None, []
    for j in range(n):
        c = A[..., :, j]
        if L is not None:
            c = c - _o.matmul(L, L[..., j, :].unsqueeze(-1)).squeeze(-1)
        d = c[..., j]
        bad.append(_o.logical_not(_o.gt(d, 0)).unsqueeze(-1))
        dj = _o.sqrt(d)
        col = _o.where(_o.eq(ri, j), dj.unsqueeze(-1),
                       _o.where(_o.gt(ri, j), c / dj.unsqueeze(-1), 0.0))
        L = _o.where(_o.eq(ri, j), col.unsqueeze(-1), 0.0 if L is None else L)
    if L is None:
        return A * 0, _o.zeros(*_batch(A), dtype=int32, device=A.device)
    return L, _first_true(_o.cat(bad, -1))


# ================================================================ Householder QR
def _householder(A):
    """Householder QR of A (..., m, n) as LAPACK geqrf: -> (R, vs, taus), R (..., m, n) upper
    trapezoidal, and for each step j < min(m, n) the reflector H_j = I - tau_j v_j v_j^T (v_j
    (..., m), 1 at j, zeros above; tau_j (..., )): A = H_0 H_1 ... R. dlarfg's convention:
    R[j, j] = -sign(alpha) * ||x||, tau = 0 (H = I) where x has nothing below the diagonal."""
    m, n = A.shape[-2:]
    k = builtins.min(m, n)
    ri = _ar(m, A)
    ci = _ar(n, A)
    R, vs, taus = A, [], []
    for j in range(k):
        if j == m - 1:                  # no rows below: H = I
            break
        x = R[..., :, j]
        alpha = R[..., j, j]
        below = _o.where(_o.gt(ri, j), x, 0.0)
        s = _o.sum(below * below, -1)
        nz = _o.gt(s, 0)
        a2 = _o.where(nz, alpha, 1.0)    # stand-ins where H = I keep every value finite
        s2 = _o.where(nz, s, 1.0)
        beta = _o.where(_o.ge(a2, 0), -1.0, 1.0) * _o.sqrt(a2 * a2 + s2)
        tau = _o.where(nz, (beta - a2) / beta, 0.0)
        scale = _o.where(nz, 1.0 / (a2 - beta), 0.0)
        v = _o.where(_o.eq(ri, j), 1.0, below * scale.unsqueeze(-1))
        if j < n - 1:
            w = _o.matmul(v.unsqueeze(-2), R)                      # (..., 1, n)
            R = R - (tau.unsqueeze(-1) * v).unsqueeze(-1) * _o.where(_o.gt(ci, j), w, 0.0)
        colj = _o.where(_o.eq(ri, j), _o.where(nz, beta, alpha).unsqueeze(-1),
                        _o.where(_o.gt(ri, j), 0.0, x))
        R = _o.where(_o.eq(ci, j), colj.unsqueeze(-1), R)
        vs.append(v)
        taus.append(tau)
    return R, vs, taus


def _hh_apply(vs, taus, m, ncols, like):
    """H_0 H_1 ... H_{k-1} I[:, :ncols] (LAPACK orgqr): the reflectors applied from the last."""
    Q = _eye(m, like, ncols)
    for v, tau in zip(reversed(vs), reversed(taus)):
        Q = Q - (tau.unsqueeze(-1) * v).unsqueeze(-1) * _o.matmul(v.unsqueeze(-2), Q)
    batch = _batch(like)
    if tuple(Q.shape[:-2]) != batch:
        Q = Q.expand(batch + (m, ncols))
    return Q


# ================================================================ Jacobi rotations
def _rounds(n, like):
    """The rounds of one Jacobi sweep over n indices (a round-robin tournament: every pair
    once, each round's pairs disjoint): a list of (P, Q (h,) int64, the flat index P * n + Q,
    the partner of each index (n,) int64 (itself when unpaired), Ep, Eq (h, n) one-hot),
    made from arange (no host data, so they trace)."""
    N = n + (n % 2)
    M = N - 1
    out = []
    if n < 2:
        return out
    cols = _ar(n, like)
    i = _o.arange(1, N // 2, device=like.device)
    for r in range(M):
        a = _o.remainder(i + r, M)
        b = _o.remainder(r - i + M, M)
        if n % 2 == 0:
            a = _o.cat([_o.full((1,), M, dtype=int64, device=like.device), a])
            b = _o.cat([_o.full((1,), r, dtype=int64, device=like.device), b])
        if a.shape[0] == 0:
            continue
        Ep = _o.eq(a.unsqueeze(-1), cols)
        Eq = _o.eq(b.unsqueeze(-1), cols)
        partner = cols + _o.sum(_o.where(Ep, (b - a).unsqueeze(-1), 0) +
                                _o.where(Eq, (a - b).unsqueeze(-1), 0), 0)
        out.append((a, b, a * n + b, partner, _o.to_dtype(Ep, like.dtype),
                    _o.to_dtype(Eq, like.dtype)))
    return out


def _rotation(app, aqq, apq):
    """(c, s, t = s / c) of the Jacobi rotation that zeroes apq in [[app, apq], [apq, aqq]]
    (Golub and Van Loan's sym.schur2, the smaller angle): J = [[c, s], [-s, c]]."""
    nz = _o.ne(apq, 0)
    tau = (aqq - app) / (2.0 * _o.where(nz, apq, 1.0))
    t = _o.where(_o.ge(tau, 0), 1.0, -1.0) / (_o.abs(tau) + _o.sqrt(1.0 + tau * tau))
    t = _o.where(nz, t, 0.0)
    c = _o.rsqrt(1.0 + t * t)
    return c, t * c, t


def _round_coefs(c, s, rnd):
    """A round's rotations J (J[p,p] = J[q,q] = c, J[p,q] = s, J[q,p] = -s for each pair, the
    identity elsewhere) as per-index factors: column i of X J is cf[i] X[:, i] +
    sf[i] X[:, partner[i]], and row i of J^T X likewise (cf (..., n), sf (..., n))."""
    Ep, Eq = rnd[4], rnd[5]
    cf = 1.0 + _o.matmul((c - 1.0).unsqueeze(-2), Ep + Eq).squeeze(-2)
    sf = _o.matmul(s.unsqueeze(-2), Eq - Ep).squeeze(-2)
    return cf, sf


def _rot_cols(X, cf, sf, partner):
    """X J (O(n^2): each column mixed with its partner's)."""
    return X * cf.unsqueeze(-2) + _o.index_select(X, -1, partner) * sf.unsqueeze(-2)


def _rot_rows(X, cf, sf, partner):
    """J^T X."""
    return X * cf.unsqueeze(-1) + _o.index_select(X, -2, partner) * sf.unsqueeze(-1)


def _sweeps_cap(n, dtype):
    """Jacobi sweeps: the cap when stopping on convergence, and the fixed count in a trace.
    Quadratic convergence after the first few sweeps; about log2(n) + 5 (float32) or
    + 7 (float64) suffice for the matrices tested."""
    lg = builtins.max(1, math.ceil(math.log2(builtins.max(n, 2))))
    return 40, lg + (5 if dtype is float32 else 7)


def _sort_matrix(vals, descending):
    """The permutation matrix M (..., n, n) that sorts vals (..., n) (stable): vals @ M is
    sorted; a value-free rank computation (comparisons of every pair), so it traces."""
    n = vals.shape[-1]
    a, b = vals.unsqueeze(-1), vals.unsqueeze(-2)       # element i, element j
    idx = _ar(n, vals)
    jb = _o.lt(idx.unsqueeze(0), idx.unsqueeze(1))      # j < i
    first = _o.gt(b, a) if descending else _o.lt(b, a)
    before = _o.logical_or(first, _o.logical_and(_o.eq(b, a), jb))
    rank = _o.sum(before, -1)                            # position of element i
    return _o.to_dtype(_o.eq(rank.unsqueeze(-1), idx), vals.dtype)


def _jacobi_eigh(A):
    """A (..., n, n) symmetric -> (L ascending (..., n), V (..., n, n)): A = V diag(L) V^T.
    Each rotation sets its a_pq to 0 and updates a_pp, a_qq as app - t apq, aqq + t apq (the
    accurate form), so the eigenvalues are as accurate as LAPACK's."""
    n = A.shape[-1]
    eye = _eye(n, A)
    V = eye.expand(A.shape) if A.dim() > 2 else eye
    rounds = _rounds(n, A)
    pq = [_o.gt(_o.matmul(_mT(r[4]), r[5]) + _o.matmul(_mT(r[5]), r[4]), 0) for r in rounds]
    on_diag = _o.gt(eye, 0)
    cap, fixed = _sweeps_cap(n, A.dtype)
    tracing = _trace()
    offmask = 1.0 - eye
    tol = (_eps(A) * n) ** 2
    for sweep in range(fixed if tracing else cap):
        if not tracing:
            off = _o.sum(A * A * offmask, (-2, -1))
            tot = _o.sum(A * A, (-2, -1))
            if bool(_o.all(_o.le(off, tol * tot)).item()):
                break
        for rnd, pq_mask in zip(rounds, pq):
            P, Q, PQ, partner, Ep, Eq = rnd
            d = _o.diagonal(A, 0, -2, -1)
            apq = _o.index_select(A.reshape(_batch(A) + (n * n,)), -1, PQ)
            c, s, t = _rotation(_o.index_select(d, -1, P), _o.index_select(d, -1, Q), apq)
            cf, sf = _round_coefs(c, s, rnd)
            A = _rot_cols(_rot_rows(A, cf, sf, partner), cf, sf, partner)
            d = d + _o.matmul((t * apq).unsqueeze(-2), Eq - Ep).squeeze(-2)
            A = _o.where(on_diag, d.unsqueeze(-1), _o.where(pq_mask, 0.0, A))
            V = _rot_cols(V, cf, sf, partner)
        A = (A + _mT(A)) * 0.5
    L = _o.diagonal(A, 0, -2, -1)
    M = _sort_matrix(L, False)
    return _o.matmul(L.unsqueeze(-2), M).squeeze(-2), _o.matmul(V, M)


def _jacobi_svd(A, full):
    """A (..., m, n) -> (U, S descending, V) with A = U diag(S) V^T (one-sided Jacobi on the
    columns, Hestenes); U (..., m, m if full else k), V (..., n, n if full else k)."""
    m, n = A.shape[-2:]
    if m < n:
        U, S, V = _jacobi_svd(_mT(A), full)
        return V, S, U
    batch = _batch(A)
    eye = _eye(n, A)
    V = eye.expand(batch + (n, n)) if batch else eye
    rounds = _rounds(n, A)
    cap, fixed = _sweeps_cap(n, A.dtype)
    tracing = _trace()
    tol = _eps(A) * builtins.max(m, 2)
    U = A
    for sweep in range(fixed if tracing else cap):
        if not tracing and n > 1:
            G = _o.matmul(_mT(U), U)
            dg = _o.diagonal(G, 0, -2, -1)
            scale = _o.sqrt(dg.unsqueeze(-1) * dg.unsqueeze(-2))
            off = _o.where(_o.gt(scale, 0), _o.abs(G) / _o.where(_o.gt(scale, 0), scale, 1.0), 0.0)
            off = off * (1.0 - eye)
            if bool(_o.le(_o.amax(off), tol).item()):
                break
        for rnd in rounds:
            P, Q, _, partner = rnd[:4]
            norms = _o.sum(U * U, -2)
            UP, UQ = _o.index_select(U, -1, P), _o.index_select(U, -1, Q)
            c, s, _ = _rotation(_o.index_select(norms, -1, P), _o.index_select(norms, -1, Q),
                                _o.sum(UP * UQ, -2))
            cf, sf = _round_coefs(c, s, rnd)
            U = _rot_cols(U, cf, sf, partner)
            V = _rot_cols(V, cf, sf, partner)
    # the singular values as ||A v_i|| from the original A (one product; V's rounding moves
    # them only to second order), not as the norms of the rotated columns (every rotation's
    # rounding accumulated)
    V = V / _o.sqrt(_o.sum(V * V, -2, True))
    U = _o.matmul(A, V)
    S = _o.sqrt(_o.sum(U * U, -2))
    M = _sort_matrix(S, True)
    S = _o.matmul(S.unsqueeze(-2), M).squeeze(-2)
    U = _o.matmul(U, M)
    V = _o.matmul(V, M)
    pos = _o.gt(S, 0)
    U = U / _o.where(pos, S, 1.0).unsqueeze(-2)
    # orthonormal U: a Householder QR of U completes it (columns of zero singular values,
    # and the m - n more of the full U) and re-orthogonalizes the columns of tiny ones
    if m > 0 and n > 0:
        R, vs, taus = _householder(U)
        Q = _hh_apply(vs, taus, m, m if full else n, U)
        sg = _o.where(_o.lt(_o.diagonal(R, 0, -2, -1)[..., :n], 0), -1.0, 1.0)
        if full and m > n:
            sg = _o.cat([sg, _o.ones(*(tuple(sg.shape[:-1]) + (m - n,)), dtype=sg.dtype,
                                     device=sg.device)], -1)
        U = Q * sg.unsqueeze(-2)
    elif full:
        U = _eye(m, A).expand(batch + (m, m)) if batch else _eye(m, A)
    return U, S, V


# ================================================================ eigh and svd: own backward
def _safe_recip(E):
    """1 / E, 0 where E == 0 (the diagonal, and repeated eigen- or singular values)."""
    nz = _o.ne(E, 0)
    return _o.where(nz, 1.0 / _o.where(nz, E, 1.0), 0.0)


def _sym_from(A, upper):
    """The symmetric matrix that A's lower (or upper) triangle stands for."""
    if upper:
        return _o.triu(A) + _mT(_o.triu(A, 1))
    return _o.tril(A) + _mT(_o.tril(A, -1))


class _Eigh(Function):
    """eigh by Jacobi rotations; backward: torch's gA = sym(V (diag(gL) + (V^T gV) / E) V^T)
    with E_ij = L_j - L_i (i != j) and sym(X) = (X + X^T) / 2."""

    @staticmethod
    def forward(ctx, A, upper):
        L, V = _jacobi_eigh(_sym_from(A, upper))
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        inner = None
        if gV is not None:
            E = L.unsqueeze(-2) - L.unsqueeze(-1)
            inner = _o.matmul(_mT(V), gV) * _safe_recip(E)
        if gL is not None:
            dl = _o.diag_embed(gL)
            inner = dl if inner is None else inner + dl
        if inner is None:
            return None, None
        g = _o.matmul(_o.matmul(V, inner), _mT(V))
        return (g + _mT(g)) * 0.5, None


class _Eigvalsh(Function):
    """eigvalsh; backward gA = V diag(gL) V^T."""

    @staticmethod
    def forward(ctx, A, upper):
        L, V = _jacobi_eigh(_sym_from(A, upper))
        ctx.save_for_backward(V)
        return L

    @staticmethod
    def backward(ctx, gL):
        V, = ctx.saved_tensors
        return _o.matmul(V * gL.unsqueeze(-2), _mT(V)), None


class _Svd(Function):
    """svd by one-sided Jacobi; backward: torch's svd_backward (real case), on the first
    k = min(m, n) singular vectors (the others of a full U or Vh take no gradient):
    gA = U [(skew(U^T gU) / E) S + S (skew(V^T gV) / E) + diag(gS)] V^T
         + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T),  E_jk = S_k^2 - S_j^2."""

    @staticmethod
    def forward(ctx, A, full):
        U, S, V = _jacobi_svd(A, full)
        Vh = _mT(V)
        ctx.full = full
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        k = S.shape[-1]
        m, n = U.shape[-2], Vh.shape[-1]
        if ctx.full:
            U, Vh = U[..., :, :k], Vh[..., :k, :]
            gU = None if gU is None else gU[..., :, :k]
            gVh = None if gVh is None else gVh[..., :k, :]
        if gU is None and gVh is None:
            if gS is None:
                return None, None
            return _o.matmul(U * gS.unsqueeze(-2), Vh), None
        V = _mT(Vh)
        S2 = S * S
        F = _safe_recip(S2.unsqueeze(-2) - S2.unsqueeze(-1))
        inner = None
        if gU is not None:
            X = _o.matmul(_mT(U), gU)
            inner = (X - _mT(X)) * F * S.unsqueeze(-2)
        if gVh is not None:
            Y = _o.matmul(Vh, _mT(gVh))
            t = S.unsqueeze(-1) * ((Y - _mT(Y)) * F)
            inner = t if inner is None else inner + t
        if gS is not None:
            inner = inner + _o.diag_embed(gS)
        if m > k and gU is not None:
            gA = _o.matmul(U, inner)
            gUS = gU / S.unsqueeze(-2)
            gA = gA + gUS - _o.matmul(U, _o.matmul(_mT(U), gUS))
            gA = _o.matmul(gA, Vh)
        elif n > k and gVh is not None:
            gA = _o.matmul(inner, Vh)
            SgVh = gVh / S.unsqueeze(-1)
            gA = gA + SgVh - _o.matmul(_o.matmul(SgVh, V), Vh)
            gA = _o.matmul(U, gA)
        else:
            gA = _o.matmul(_o.matmul(U, inner), Vh)
        return gA, None


class _Svdvals(Function):
    """svdvals; backward gA = U diag(gS) V^T (the first k singular vectors)."""

    @staticmethod
    def forward(ctx, A):
        U, S, V = _jacobi_svd(A, False)
        ctx.save_for_backward(U, V)
        return S

    @staticmethod
    def backward(ctx, gS):
        U, V = ctx.saved_tensors
        return _o.matmul(U * gS.unsqueeze(-2), _mT(V))


# ================================================================ norms
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None) -> Tensor: the
    ord-norm of x over dim (every dim when None): any real ord, inf, -inf, 0 (the count of
    nonzeros); as torch.linalg.vector_norm."""
    _check_tensor(x, "linalg.vector_norm", "x")
    if isinstance(ord, (str, bool)) or _is_tensor(ord):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    return _out(_o._vector_norm(x, ord, dim, keepdim, dtype, "linalg.vector_norm"), out,
                "linalg.vector_norm")


def _backshift(d0, d1, nd):
    """The permutation moving dims d0, d1 last (in that order), and its inverse."""
    perm = [k for k in range(nd) if k not in (d0, d1)] + [d0, d1]
    inv = [0] * nd
    for i, p in enumerate(perm):
        inv[p] = i
    return perm, inv


def _matrix_norm_dims(A, dim, fn):
    if isinstance(dim, int) or len(dim) != 2:
        got = dim if isinstance(dim, int) else " ".join(str(d) for d in dim)
        raise RuntimeError(f"{fn}: dim must be a 2-tuple. Got {got}")
    d0, d1 = _wrap(dim[0], A.dim(), fn), _wrap(dim[1], A.dim(), fn)
    if d0 == d1:
        raise RuntimeError(f"{fn}: dims must be different. Got ({d0}, {d1})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """linalg.matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False, *, dtype=None) -> Tensor:
    'fro', 'nuc' (the sum of the singular values), inf / -inf (max / min row sum of |A|),
    1 / -1 (max / min column sum), 2 / -2 (largest / smallest singular value) over the two
    dims; as torch.linalg.matrix_norm."""
    fn = "linalg.matrix_norm"
    _check_tensor(A, fn, "A")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"{fn}: Order {ord} not supported.")
        low = ord == "fro"
    else:
        o = float(ord)
        if builtins.abs(o) not in (1.0, 2.0, math.inf):
            raise RuntimeError(f"{fn}: Order {ord} not supported.")
        low = builtins.abs(o) != 2.0
    _is_matrix(A, fn)
    _floating(A, fn, low=low)
    d0, d1 = _matrix_norm_dims(A, dim, fn)
    if dtype is not None and not dtype.is_floating_point:
        raise RuntimeError(f"{fn}: dtype should be floating point or complex, but got {_tname(dtype)}")
    if ord == "fro":
        return _out(vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype), out, fn)
    x = A if dtype is None else _o.to_dtype(A, dtype)
    if ord == "nuc" or builtins.abs(o) == 2.0:
        perm, inv = _backshift(d0, d1, A.dim())
        sv = svdvals(x.permute(*perm))
        if ord == "nuc":
            r = _o.sum(sv, -1)
        else:
            r = (_o.amax if o > 0 else _o.amin)(sv, -1)
        if keepdim:
            r = r.unsqueeze(-1).unsqueeze(-1).permute(*inv)
        return _out(r, out, fn)
    if builtins.abs(o) == math.inf:
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    s = _o._vector_norm(x, 1, d0, keepdim, None, fn)
    return _out((_o.amax if o > 0 else _o.amin)(s, d1, keepdim), out, fn)


def norm(input, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """linalg.norm(input, ord=None, dim=None, keepdim=False, *, dtype=None) -> Tensor: a vector
    norm (dim an int or one dim; ord None is 2 over every dim) or a matrix norm (dim two dims,
    or a 2-D input with ord given; ord a string is always a matrix norm); as torch.linalg.norm."""
    fn = "linalg.norm"
    _check_tensor(input, fn)
    dims = None
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"{fn}: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    elif ord is not None and input.dim() not in (1, 2):
        raise RuntimeError(f"{fn}: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {input.dim()}D.")
    if isinstance(ord, str) or (ord is not None and (
            (dims is not None and len(dims) == 2) or (dims is None and input.dim() == 2))):
        r = matrix_norm(input, ord, dims if dims is not None else (0, 1), keepdim, dtype=dtype)
    else:
        r = vector_norm(input, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    return _out(r, out, fn)


def cond(A, p=None, *, out=None):
    """linalg.cond(A, p=None) -> Tensor: the condition number ||A||_p ||A^-1||_p (p None or 2:
    largest / smallest singular value, -2 the inverse; 'fro', 'nuc', 1, -1, inf, -inf need
    square A, inf for a singular one); as torch.linalg.cond."""
    fn = "linalg.cond"
    _check_tensor(A, fn, "A")
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor must have at least 2 dimensions.")
    ord = 2 if p is None else p
    ok = ord in ("fro", "nuc") if isinstance(ord, str) else \
        float(ord) in (1.0, -1.0, 2.0, -2.0, math.inf, -math.inf)
    if not ok:
        raise RuntimeError(f"{fn} got an invalid norm type: {ord}")
    if A.numel() == 0:
        return _out(_o.zeros(*_batch(A), dtype=A.dtype if A.dtype.is_floating_point else float32,
                             device=A.device), out, fn)
    if not isinstance(ord, str) and builtins.abs(float(ord)) == 2.0:
        sv = svdvals(A)
        smax, smin = sv[..., 0], sv[..., -1]
        return _out(smin / smax if float(ord) < 0 else smax / smin, out, fn)
    shown = ord if isinstance(ord, str) else (f"{ord:f}" if isinstance(ord, float) else str(ord))
    _square(A, f"{fn}(ord={shown})")
    Ai, info = inv_ex(A)
    Ai = _o.where(_o.gt(info, 0).unsqueeze(-1).unsqueeze(-1), math.inf, Ai)
    r = matrix_norm(A, ord) * matrix_norm(Ai, ord)      # 0 * inf (a zero A) is inf, as torch
    return _out(_o.nan_to_num(r, math.inf, math.inf, -math.inf), out, fn)


# ================================================================ products
def matmul(input, other, *, out=None):
    """linalg.matmul(input, other) -> Tensor: as symtrace.matmul (torch.linalg.matmul)."""
    return _out(_o.matmul(input, other), out, "linalg.matmul")


@autocast_op("lower", ("cpu",))     # in torch's CPU autocast lower list
def vecdot(x, y, *, dim=-1, out=None):
    """linalg.vecdot(x, y, *, dim=-1) -> Tensor: sum(x * y, dim), broadcasting; floating
    dtypes; as torch.linalg.vecdot."""
    fn = "linalg.vecdot"
    _check_tensor(x, fn, "x")
    _check_tensor(y, fn, "y")
    _floating(x, fn, low=True)
    _same_dtype(x, y, fn, "x", "y")
    return _out(_o.sum(_o.mul(x, y), dim), out, fn)


def cross(input, other, *, dim=-1, out=None):
    """linalg.cross(input, other, *, dim=-1) -> Tensor: the cross product of 3-vectors along
    dim (other dims broadcast); as torch.linalg.cross."""
    fn = "linalg.cross"
    _check_tensor(input, fn)
    _check_tensor(other, fn, "other")
    if input.dim() != other.dim():
        raise RuntimeError(f"{fn}: inputs must have the same number of dimensions.")
    d = _wrap(dim, input.dim(), fn)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"{fn}: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {_tname(input.dtype)} but found {_tname(other.dtype)}")
    a = [input.narrow(d, i, 1) for i in range(3)]
    b = [other.narrow(d, i, 1) for i in range(3)]
    r = _o.cat([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], d)
    return _out(r, out, fn)




def multi_dot(tensors, *, out=None):
    """linalg.multi_dot(tensors) -> Tensor: the product of 2-D matrices (the first may be a
    1-D row, the last a 1-D column), multiplied in the cheapest order (torch's dynamic
    programming over the chain); as torch.linalg.multi_dot."""
    fn = "multi_dot()"
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"{fn}: expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        _check_tensor(t, "multi_dot", f"tensors[{i}]")
    first, last = ts[0].dim() == 1, ts[-1].dim() == 1
    if ts[0].dim() not in (1, 2):
        raise RuntimeError(f"{fn}: the first tensor must be 1D or 2D but got {ts[0].dim()}D")
    if ts[-1].dim() not in (1, 2):
        raise RuntimeError(f"{fn}: the last tensor must be 1D or 2D but got {ts[-1].dim()}D")
    for i in range(1, len(ts) - 1):
        if ts[i].dim() != 2:
            raise RuntimeError(f"{fn}: tensor {i} must be 2D but got {ts[i].dim()}D")
    for i, t in enumerate(ts):
        if t.dtype is not ts[0].dtype:
            raise RuntimeError(f"{fn}: all tensors must have be the same dtype but tensor 0 is "
                               f"{_LOWER.get(str(ts[0].dtype))} and tensor {i} {_LOWER.get(str(t.dtype))}")
    if first:
        ts[0] = ts[0].unsqueeze(0)
    if last:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(len(ts) - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise RuntimeError(f"{fn}: tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                               f"{list(ts[i + 1].shape)} cannot be multiplied")
    dims = [t.shape[0] for t in ts] + [ts[-1].shape[1]]
    n = len(ts)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for ln in range(1, n):
        for i in range(n - ln):
            j = i + ln
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def chain(i, j):
        if i == j:
            return ts[i]
        return _o.matmul(chain(i, split[i][j]), chain(split[i][j] + 1, j))

    r = chain(0, n - 1)
    if first:
        r = r.squeeze(0)
    if last:
        r = r.squeeze(-1)
    return _out(r, out, "linalg.multi_dot")


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """linalg.diagonal(A, *, offset=0, dim1=-2, dim2=-1) -> Tensor: the diagonals of the
    matrices (a view); as torch.linalg.diagonal."""
    return _o.diagonal(A, offset, dim1, dim2)


def matrix_power(A, n, *, out=None):
    """linalg.matrix_power(A, n) -> Tensor: A^n for an integer n (binary powering; n = 0 the
    identity, n < 0 powers of inv(A)); as torch.linalg.matrix_power."""
    fn = "linalg.matrix_power"
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    _square(A, fn)
    if n == 0:
        e = _o.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        return _out(e.expand(A.shape).clone() if A.dim() > 2 else e, out, fn)
    if n < 0:
        A, n = inv(A), -n
    if n == 1:
        return _out(_o.clone(A), out, fn)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else _o.matmul(z, z)
        if bit:
            result = z if result is None else _o.matmul(result, z)
    return _out(result, out, fn)


# ================================================================ matrix exponential
def _taylor(X, deg):
    """sum_{i <= deg} X^i / i!, by Paterson and Stockmeyer (about 2 sqrt(deg) products)."""
    q = math.ceil(math.sqrt(deg + 1))
    pw = [_eye(X.shape[-1], X), X]
    for _ in range(2, q + 1):
        pw.append(_o.matmul(pw[-1], X))
    coef = [1.0 / math.factorial(i) for i in range(deg + 1)]
    chunks = math.ceil((deg + 1) / q)

    def block(j):
        b = None
        for i in range(q):
            if j * q + i <= deg:
                t = pw[i] * coef[j * q + i]
                b = t if b is None else b + t
        return b

    r = block(chunks - 1)
    for j in range(chunks - 2, -1, -1):
        r = block(j) + _o.matmul(pw[q], r)
    return r


_EXP_TRACE_SQUARINGS = 40


def matrix_exp(A):
    """linalg.matrix_exp(A) -> Tensor: e^A by scaling and squaring (A / 2^s, s chosen per
    matrix from its 1-norm, a Taylor polynomial of degree 18 (float64) or 10 (float32) in
    Paterson-Stockmeyer form, then s squarings; float16 and bfloat16 computed in float32).
    Under a trace s is capped at 40 (norms up to about 1e12). As torch.linalg.matrix_exp."""
    fn = "linalg.matrix_exp"
    _square(A, fn)
    _floating(A, fn, low=True)
    if A.dtype in _LOW:
        return _o.to_dtype(matrix_exp(_o.to_dtype(A, float32)), A.dtype)
    n = A.shape[-1]
    if n == 0:
        return _o.clone(A)
    if n == 1:
        return _o.exp(A)
    deg = 18 if A.dtype is float64 else 10
    with _o._no_grad():
        nrm = _o.amax(_o.sum(_o.abs(A.detach()), -2), -1)
        s = _o.clamp(_o.ceil(_o.log2(nrm)), min=0)
        s = _o.where(_o.isfinite(s), s, 0.0)
        if _trace():
            smax = _EXP_TRACE_SQUARINGS
            s = _o.clamp(s, max=float(smax))
            uniform = False
        else:
            smax = int(_o.amax(s).item()) if s.numel() else 0
            uniform = s.numel() <= 1 or bool(_o.eq(_o.amin(s), _o.amax(s)).item())
    T = _taylor(A / _o.exp2(s).unsqueeze(-1).unsqueeze(-1), deg)
    for i in range(smax):
        T2 = _o.matmul(T, T)
        T = T2 if uniform else _o.where(_o.lt(i, s).unsqueeze(-1).unsqueeze(-1), T2, T)
    return T


# ================================================================ LU, determinants, inverses, solvers
def _lu_checks(A, fn):
    _check_tensor(A, fn, "A")
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    _floating(A, fn, kernel="!lu_cpu")


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """linalg.lu_factor_ex(A, *, pivot=True, check_errors=False) -> (LU, pivots, info): LAPACK
    getrf's packed LU factors of A (..., m, n) with partial pivoting, the 1-based int32 pivots
    and info (1 + the first zero pivot, 0 if none); pivot=False factors without row exchanges.
    As torch.linalg.lu_factor_ex."""
    fn = "torch.linalg.lu_factor_ex"
    _lu_checks(A, "torch.lu_factor")
    LU, piv, _, info = _lu_core(A, pivot)
    if check_errors:
        _raise_info(info, fn, A.dim() > 2,
                    lambda i: f"U[{i},{i}] is zero and using it on lu_solve would result in a "
                              "division by zero. If you still want to perform the factorization, "
                              "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    res = _lu_factor_ex_t(LU, _o.to_dtype(piv + 1, int32), info)
    return _out(res, out, "linalg.lu_factor_ex")


def lu_factor(A, *, pivot=True, out=None):
    """linalg.lu_factor(A, *, pivot=True) -> (LU, pivots): as lu_factor_ex, raising torch's
    error for a zero pivot (a host read, skipped under symtrace.compile)."""
    _lu_checks(A, "torch.lu_factor")
    LU, piv, _, info = _lu_core(A, pivot)
    if not _trace() and info.numel() and bool(_o.any(_o.ne(info, 0)).item()):
        flat = info.reshape(-1)
        i = int(_o.argmax(_o.to_dtype(_o.ne(flat, 0), int32)).item())
        v = int(flat[i].item())
        where = f"(Batch element {i}): " if A.dim() > 2 else ""
        raise RuntimeError(f"torch.linalg.lu_factor: {where}U[{v},{v}] is zero and using it on "
                           "lu_solve would result in a division by zero. If you still want to "
                           "perform the factorization, consider calling linalg.lu(A, pivot) or "
                           "linalg.lu_factor_ex(A, pivot)")
    return _out(_lu_factor_t(LU, _o.to_dtype(piv + 1, int32)), out, "linalg.lu_factor")


def _unpack(LU, perm, dtype):
    m, n = LU.shape[-2:]
    k = builtins.min(m, n)
    L = _o.tril(LU[..., :, :k], -1) + _eye(m, LU, k)
    U = _o.triu(LU[..., :k, :])
    return _perm_matrix(perm, dtype), L, U


def lu(A, *, pivot=True, out=None):
    """linalg.lu(A, *, pivot=True) -> (P, L, U): A = P L U, P a permutation matrix, L (m, k)
    unit lower triangular, U (k, n) upper triangular; as torch.linalg.lu."""
    _lu_checks(A, "linalg.lu")
    LU, _, perm, _ = _lu_core(A, pivot)
    return _out(_lu_t(*_unpack(LU, perm, A.dtype)), out, "linalg.lu")


def _solve_shapes(A, B, left, fn):
    """B as a matrix (a vector B made a column, or a row when left=False) and whether it was a
    vector; torch's shape error."""
    vec = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    B2 = B.unsqueeze(-1 if left else -2) if vec else B
    if B2.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor B must have at least 2 dimensions.")
    ok = A.shape[-1] == B2.shape[-2] if left else A.shape[-1] == B2.shape[-1]
    if not ok:
        raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B2.shape[-2]}x{B2.shape[-1]})")
    _bshape(_batch(A), _batch(B2))
    return B2, vec


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """linalg.lu_solve(LU, pivots, B, *, left=True, adjoint=False) -> Tensor: the solution of
    A X = B (A^T X = B when adjoint; X A = B when not left) from lu_factor's (LU, pivots); as
    torch.linalg.lu_solve."""
    fn = "linalg.lu_solve"
    _square(LU, fn, "LU")
    _check_tensor(pivots, fn, "pivots")
    _check_tensor(B, fn, "B")
    if pivots.dtype is not int32:
        raise RuntimeError(f"{fn}: pivots should be a Tensor of scalar type torch.int32")
    _floating(LU, fn)
    _same_dtype(LU, B, fn, "LU", "B")
    if B.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor B must have at least 2 dimensions.")
    _solve_shapes(LU, B, left, fn)
    n = LU.shape[-1]
    perm = _perm_from_pivots(_o.to_dtype(pivots, int64) - 1, n)
    if not left:                       # X A = B  <=>  A^T X^T = B^T
        return _out(_mT(lu_solve(LU, pivots, _mT(B), adjoint=not adjoint)), out, fn)
    if not adjoint:
        X = _lu_solve_packed(LU, perm, B)
    else:                              # A^T = U^T L^T P^T:  X = P L^-T U^-T B
        Y = _trisolve(_mT(LU), B, upper=False)
        Y = _trisolve(_mT(LU), Y, upper=True, unit=True)
        X = _o.matmul(_perm_matrix(perm, Y.dtype), Y)
    return _out(X, out, fn)


def _lu_diag_sign(A):
    """The diagonal of U and the permutation's sign (as A's dtype) of A's LU."""
    LU, piv, _, _ = _lu_core(A)
    n = A.shape[-1]
    nswap = _o.sum(_o.ne(piv, _ar(n, A)), -1)
    return _o.diagonal(LU, 0, -2, -1), _o.to_dtype(1 - 2 * _o.remainder(nswap, 2), A.dtype)


def det(A, *, out=None):
    """linalg.det(A) -> Tensor: the determinant, from the LU factors (the product of U's
    diagonal and the pivots' sign); as torch.linalg.det."""
    fn = "linalg.det"
    _square(A, fn)
    _floating(A, fn, kernel="lu_cpu")
    d, sg = _lu_diag_sign(A)
    return _out(_o.prod(d, -1) * sg, out, fn)


def _slogdet(A, fn):
    _square(A, fn)
    _floating(A, fn)
    d, sg = _lu_diag_sign(A)
    sign = sg * _o.prod(_o.sign(d), -1)
    return sign, _o.sum(_o.log(_o.abs(d)), -1)


def slogdet(A, *, out=None):
    """linalg.slogdet(A) -> (sign, logabsdet): det(A) = sign * exp(logabsdet) (sign 0 and
    logabsdet -inf for a singular A); as torch.linalg.slogdet."""
    return _out(_slogdet_t(*_slogdet(A, "linalg.slogdet")), out, "linalg.slogdet")


def inv_ex(A, *, check_errors=False, out=None):
    """linalg.inv_ex(A, *, check_errors=False) -> (inverse, info): A^-1 by LU (solving A X = I)
    and info (1 + the first zero pivot of U, 0 if none); as torch.linalg.inv_ex."""
    fn = "linalg.inv"
    _square(A, fn)
    _floating(A, fn)
    LU, _, perm, info = _lu_core(A)
    if check_errors:
        _raise_info(info, fn, A.dim() > 2,
                    lambda i: f"The diagonal element {i} is zero, the inversion could not be "
                              "completed because the input matrix is singular.")
    X = _lu_solve_packed(LU, perm, _eye(A.shape[-1], A))
    return _out(_inv_ex_t(X, info), out, "linalg.inv_ex")


def inv(A, *, out=None):
    """linalg.inv(A) -> Tensor: A^-1 (LU with partial pivoting, then n triangular solves);
    a singular A raises torch's LinAlgError (a host read, skipped under symtrace.compile);
    as torch.linalg.inv."""
    return _out(inv_ex(A, check_errors=True)[0], out, "linalg.inv")


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """linalg.solve_ex(A, B, *, left=True, check_errors=False) -> (result, info): the solution
    of A X = B (X A = B when not left; B a vector or a batch of vectors allowed), broadcasting
    batch dims, and getrf's info; as torch.linalg.solve_ex."""
    fn = "linalg.solve"
    _square(A, fn)
    _floating(A, fn)
    _check_tensor(B, fn, "B")
    _same_dtype(A, B, fn)
    B2, vec = _solve_shapes(A, B, left, fn)
    if not left:
        A, B2 = _mT(A), _mT(B2)
    LU, _, perm, info = _lu_core(A)
    if check_errors:
        _raise_info(info, "torch.linalg.solve", A.dim() > 2,
                    lambda i: "The solver failed because the input matrix is singular.")
    X = _lu_solve_packed(LU, perm, B2)
    if not left:
        X = _mT(X)
    if vec:
        X = X.squeeze(-1 if left else -2)
    return _out(_solve_ex_t(X, info), out, "linalg.solve_ex")


def solve(A, B, *, left=True, out=None):
    """linalg.solve(A, B, *, left=True) -> Tensor: the solution of A X = B (X A = B when not
    left); a singular A raises torch's LinAlgError (skipped under symtrace.compile); as
    torch.linalg.solve."""
    return _out(solve_ex(A, B, left=left, check_errors=True)[0], out, "linalg.solve")


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """linalg.solve_triangular(A, B, *, upper, left=True, unitriangular=False) -> Tensor: the
    solution of A X = B (X A = B when not left) for a triangular A (only its upper or lower
    triangle is read, and not its diagonal when unitriangular); batch dims broadcast; as
    torch.linalg.solve_triangular."""
    fn = "linalg.solve_triangular"
    _square(A, fn)
    _is_matrix(B, fn, "B")
    _floating(A, fn, kernel="!triangular_solve_cpu")
    _floating(B, fn, kernel="!triangular_solve_cpu")
    if B.dtype is not A.dtype:
        B = _o.to_dtype(B, A.dtype)
    _solve_shapes(A, B, left, fn)
    if left:
        return _out(_trisolve(A, B, upper, unitriangular), out, fn)
    return _out(_mT(_trisolve(_mT(A), _mT(B), not upper, unitriangular)), out, fn)


# ================================================================ Cholesky
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """linalg.cholesky_ex(A, *, upper=False, check_errors=False) -> (L, info): the Cholesky
    factor (L L^T = A, or U^T U = A when upper) of a symmetric positive-definite A, reading
    only its lower (upper) triangle, and info (1 + the order of the first leading minor that
    is not positive-definite, where L holds nan); as torch.linalg.cholesky_ex."""
    fn = "linalg.cholesky"
    _square(A, fn)
    _floating(A, fn, kernel="cholesky_cpu")
    X = _sym_grad(A)
    L, info = _chol_core(_mT(X) if upper else X)
    if check_errors:
        _raise_info(info, fn, A.dim() > 2,
                    lambda i: "The factorization could not be completed because the input is not "
                              f"positive-definite (the leading minor of order {i} is not "
                              "positive-definite).")
    return _out(_cholesky_ex_t(_mT(L) if upper else L, info), out, "linalg.cholesky_ex")


def cholesky(A, *, upper=False, out=None):
    """linalg.cholesky(A, *, upper=False) -> Tensor: as cholesky_ex, raising torch's
    LinAlgError for a matrix that is not positive-definite (skipped under symtrace.compile)."""
    return _out(cholesky_ex(A, upper=upper, check_errors=True)[0], out, "linalg.cholesky")


# ================================================================ QR and Householder products
def qr(A, mode="reduced", *, out=None):
    """linalg.qr(A, mode='reduced') -> (Q, R): A = Q R by Householder reflections (LAPACK's
    signs: R's diagonal is -sign(pivot) * norm); 'reduced' Q (m, k), R (k, n); 'complete'
    Q (m, m), R (m, n); 'r' R only (Q empty); as torch.linalg.qr."""
    fn = "linalg.qr"
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'")
    _is_matrix(A, fn)
    _floating(A, fn, kernel="geqrf_cpu")
    m, n = A.shape[-2:]
    k = builtins.min(m, n)
    R, vs, taus = _householder(A)
    if mode == "r":
        return _out(_qr_t(_o.zeros(0, dtype=A.dtype, device=A.device), R[..., :k, :]), out, fn)
    if mode == "complete":
        return _out(_qr_t(_hh_apply(vs, taus, m, m, A), R), out, fn)
    return _out(_qr_t(_hh_apply(vs, taus, m, k, A), R[..., :k, :]), out, fn)


def householder_product(A, tau, *, out=None):
    """linalg.householder_product(A, tau) -> Tensor: the first n columns of H_0 ... H_{k-1},
    H_j = I - tau_j v_j v_j^T, v_j the j-th column of A below the diagonal with a 1 on it (as
    LAPACK orgqr, e.g. from geqrf's output); as torch.linalg.householder_product."""
    fn = "torch.linalg.householder_product"
    _check_tensor(A, fn, "input")
    _check_tensor(tau, fn, "tau")
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() >= 1 and n < tau.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if A.dim() - tau.dim() != 1:
        raise RuntimeError(f"{fn}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.dim()} and input.ndim is equal to {A.dim()}")
    if tuple(tau.shape[:-1]) != _batch(A):
        raise RuntimeError(f"{fn}: Expected batch dimensions of tau to be equal to input.shape[:-2], "
                           f"but got {list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{fn}: tau dtype {_tname(tau.dtype)} does not match input dtype "
                           f"{_tname(A.dtype)}")
    _floating(A, fn, kernel="!orgqr_cpu")
    ri = _ar(m, A)
    vs = [_o.where(_o.eq(ri, j), 1.0, _o.where(_o.gt(ri, j), A[..., :, j], 0.0))
          for j in range(tau.shape[-1])]
    taus = [tau[..., j] for j in range(tau.shape[-1])]
    return _out(_hh_apply(vs, taus, m, n, A), out, fn)


# ================================================================ eigh, svd and what uses them
def _uplo(UPLO):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO in ("U", "u")


def eigh(A, UPLO="L", *, out=None):
    """linalg.eigh(A, UPLO='L') -> (eigenvalues, eigenvectors): A = V diag(L) V^T for the
    symmetric matrix A's lower (UPLO='U': upper) triangle stands for; eigenvalues ascending;
    Jacobi rotations (each eigenvector's sign may differ from torch's); gradients by torch's
    formula (distinct eigenvalues); as torch.linalg.eigh."""
    fn = "linalg.eigh"
    _square(A, fn)
    _floating(A, fn, kernel="!linalg_eigh_cpu")
    upper = _uplo(UPLO)
    if A.shape[-1] == 0:
        return _out(_eigh_t(_zeros(_batch(A) + (0,), A), _o.clone(A)), out, fn)
    return _out(_eigh_t(*_Eigh.apply(A, upper)), out, fn)


def eigvalsh(A, UPLO="L", *, out=None):
    """linalg.eigvalsh(A, UPLO='L') -> Tensor: eigh's eigenvalues (ascending); as
    torch.linalg.eigvalsh."""
    fn = "linalg.eigh"
    _square(A, fn)
    _floating(A, fn, kernel="!linalg_eigh_cpu")
    upper = _uplo(UPLO)
    if A.shape[-1] == 0:
        return _out(_zeros(_batch(A) + (0,), A), out, "linalg.eigvalsh")
    return _out(_Eigvalsh.apply(A, upper), out, "linalg.eigvalsh")


def _svd_checks(A, driver, fn="linalg.svd"):
    _is_matrix(A, fn)
    _floating(A, fn, kernel="linalg_svd_cpu")
    if driver is not None:
        if A.device.type == "cpu":
            raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                               "CUDA inputs with cuSOLVER backend.")
        if driver not in ("gesvd", "gesvdj", "gesvda"):
            raise RuntimeError(f"torch.linalg.svd: unknown driver {driver}")


def svd(A, full_matrices=True, *, driver=None, out=None):
    """linalg.svd(A, full_matrices=True, *, driver=None) -> (U, S, Vh): A = U diag(S) Vh, S
    descending; one-sided Jacobi rotations (singular vectors' signs may differ from torch's);
    U (m, m) and Vh (n, n) when full_matrices, else (m, k) and (k, n); driver (CUDA only in
    torch) is accepted and ignored; gradients by torch's formula (distinct singular values);
    as torch.linalg.svd."""
    _svd_checks(A, driver)
    m, n = A.shape[-2:]
    if A.numel() == 0:
        b, k = _batch(A), builtins.min(m, n)
        mu, nv = (m, n) if full_matrices else (k, k)
        U = _eye(m, A, mu).expand(b + (m, mu))
        Vh = _eye(nv, A, n).expand(b + (nv, n))
        return _out(_svd_t(U, _zeros(b + (k,), A), Vh), out, "linalg.svd")
    return _out(_svd_t(*_Svd.apply(A, bool(full_matrices))), out, "linalg.svd")


def svdvals(A, *, driver=None, out=None):
    """linalg.svdvals(A, *, driver=None) -> Tensor: the singular values, descending; as
    torch.linalg.svdvals."""
    _svd_checks(A, driver)
    if A.numel() == 0:
        return _out(_zeros(_batch(A) + (builtins.min(A.shape[-2:]),), A), out, "linalg.svdvals")
    return _out(_Svdvals.apply(A), out, "linalg.svdvals")


def _atol_rtol(A, atol, rtol):
    """torch's get_atol_rtol: tensors; rtol defaults to eps * max(m, n), or 0 where atol > 0."""
    def t(v):
        return v if _is_tensor(v) else _o.full((), float(v), dtype=A.dtype, device=A.device)
    a = t(0.0 if atol is None else atol)
    if rtol is not None:
        return a, t(rtol)
    default = _eps(A) * builtins.max(A.shape[-2], A.shape[-1])
    if atol is None:
        return a, t(default)
    return a, _o.where(_o.gt(a, 0), 0.0, default)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """linalg.pinv(A, *, atol=None, rtol=None, hermitian=False) -> Tensor: the pseudo-inverse
    V diag(1/S) U^T from the SVD (eigh when hermitian), singular values at or below
    max(atol, rtol * S_max) dropped (also the older pinv(A, rcond, hermitian), rcond as
    rtol); as torch.linalg.pinv."""
    if rcond is not None:
        rtol = rcond
    if not _is_tensor(A) or A.dim() < 2 or A.dtype not in (float32, float64):
        what = f"{_tname(A.dtype)}{{{list(A.shape)}}}" if _is_tensor(A) else type(A).__name__
        raise RuntimeError(f"linalg.pinv({what}): expected a tensor with 2 or more dimensions of "
                           "float, double, cfloat or cdouble types")
    m, n = A.shape[-2:]
    if A.numel() == 0:
        return _out(_zeros(_batch(A) + (n, m), A), out, "linalg.pinv")
    a, r = _atol_rtol(A, atol, rtol)
    if hermitian:
        L, V = eigh(A)
        absL = _o.abs(L)
        tol = _o.maximum(a.unsqueeze(-1), r.unsqueeze(-1) * _o.amax(absL, -1, True))
        big = _o.gt(absL, tol)
        Li = _o.where(big, 1.0 / _o.where(big, L, 1.0), 0.0)
        return _out(_o.matmul(V * Li.unsqueeze(-2), _mT(V)), out, "linalg.pinv")
    U, S, Vh = svd(A, full_matrices=False)
    tol = _o.maximum(a.unsqueeze(-1), r.unsqueeze(-1) * S[..., :1])
    big = _o.gt(S, tol)
    Si = _o.where(big, 1.0 / _o.where(big, S, 1.0), 0.0)
    return _out(_o.matmul(_mT(Vh) * Si.unsqueeze(-2), _mT(U)), out, "linalg.pinv")


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """linalg.matrix_rank(A, *, atol=None, rtol=None, hermitian=False) -> int64 Tensor: the
    number of singular values (|eigenvalues| when hermitian) above max(atol, rtol * S_max)
    (also the older matrix_rank(A, tol, hermitian)); as torch.linalg.matrix_rank."""
    fn = "torch.linalg.matrix_rank"
    _check_tensor(A, fn, "input")
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor input must have at least 2 dimensions.")
    if A.dtype not in (float32, float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    if A.numel() == 0:
        return _out(_o.zeros(*_batch(A), dtype=int64, device=A.device), out, fn)
    a, r = _atol_rtol(A, atol, rtol)
    if hermitian:
        S = _o.abs(eigvalsh(A))
        smax = _o.amax(S, -1, True)
    else:
        S = svdvals(A)
        smax = S[..., :1]
    tol_ = _o.maximum(a.unsqueeze(-1), r.unsqueeze(-1) * smax)
    return _out(_o.sum(_o.gt(S, tol_), -1), out, fn)


def lstsq(A, B, rcond=None, *, driver=None):
    """linalg.lstsq(A, B, rcond=None, *, driver=None) -> (solution, residuals, rank,
    singular_values): the least-squares solution of A X = B (the minimum-norm one when m < n).
    gels / gelsy (the default): by QR, assuming full rank; gelsd / gelss: by the SVD
    (pseudo-inverse; rank-deficient A allowed). rank (gelsy, gelsd, gelss), singular_values
    (gelsd, gelss) and residuals (m > n, full rank, not gelsy) as torch; the outputs a driver
    does not give are empty. As torch.linalg.lstsq."""
    fn = "torch.linalg.lstsq"
    _check_tensor(A, fn, "self")
    _check_tensor(B, fn, "b")
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if B.dim() < 1:
        raise RuntimeError(f"{fn}: other must have at least 1 dimension.")
    _floating(A, "linalg.lstsq")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{fn}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_tname(A.dtype)} and other's dtype {_tname(B.dtype)}")
    diff = A.dim() - B.dim()
    if not 0 <= diff <= 1:
        raise RuntimeError(f"{fn}: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    B2 = B.unsqueeze(-1) if diff else B
    if A.shape[-2] != B2.shape[-2]:
        raise RuntimeError(f"{fn}: input.size(-2) should match other.size({-1 if diff else -2})")
    drv = "gelsy" if driver is None else driver
    if drv not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{fn}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    m, n = A.shape[-2:]
    rc = _eps(A) * builtins.max(m, n) if rcond is None else rcond
    svd_driver = drv in ("gelsd", "gelss")
    if svd_driver:
        X = _o.matmul(pinv(A, rtol=rc), B2)
    elif m >= n:
        Q, R = qr(A)
        X = _trisolve(R, _o.matmul(_mT(Q), B2), upper=True)
    else:
        Q, R = qr(_mT(A))
        X = _o.matmul(Q, _trisolve(_mT(R), B2, upper=False))
    empty = _o.zeros(0, dtype=A.dtype, device=A.device)
    rank = sv = None
    if drv != "gels":
        S = svdvals(A)
        sv = S
        rank = _o.sum(_o.gt(S, rc * S[..., :1]), -1) if S.shape[-1] else \
            _o.zeros(*_batch(A), dtype=int64, device=A.device)
    residuals = empty
    if m > n and drv != "gelsy":
        full = True
        if svd_driver and not _trace():
            full = bool(_o.all(_o.eq(rank, n)).item())
        if full:
            residuals = _o.sum(_o.square(_o.matmul(A, X) - B2), -2)
    if diff:
        X = X.squeeze(-1)
    return _lstsq_t(X, residuals,
                    rank if rank is not None else _o.zeros(0, dtype=int64, device=A.device),
                    sv if svd_driver else empty)


# ================================================================ tensor forms, Vandermonde
def tensorinv(A, ind=2, *, out=None):
    """linalg.tensorinv(A, ind=2) -> Tensor: the inverse of A seen as a matrix of its first ind
    dims by the rest (of shape A.shape[ind:] + A.shape[:ind]); as torch.linalg.tensorinv."""
    _check_tensor(A, "linalg.tensorinv", "A")
    if not isinstance(ind, int) or ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    r = inv(A.reshape(rows, cols)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))
    return _out(r, out, "linalg.tensorinv")


def tensorsolve(A, B, dims=None, *, out=None):
    """linalg.tensorsolve(A, B, dims=None) -> Tensor: X with tensordot(A, X, X.ndim) = B (the
    dims of A listed in dims moved last first); as torch.linalg.tensorsolve."""
    _check_tensor(A, "linalg.tensorsolve", "A")
    _check_tensor(B, "linalg.tensorsolve", "B")
    nd = A.dim()
    if dims is not None:
        ds = [_wrap(d, nd, "linalg.tensorsolve") for d in dims]
        A = A.permute(*([k for k in range(nd) if k not in ds] + ds))
    rshape = tuple(A.shape[B.dim():])
    rp, bp = math.prod(rshape), B.numel()
    if rp != bp:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                           f"== prod(self.shape[:other.ndim]), but got {rp} != {bp}")
    return _out(solve(A.reshape(rp, rp), B.reshape(-1)).reshape(rshape), out, "linalg.tensorsolve")


def vander(x, N=None):
    """linalg.vander(x, N=None) -> Tensor: the Vandermonde matrix [1, x, x^2, ..., x^(N-1)]
    along a new last dim (N = x.shape[-1] by default); as torch.linalg.vander."""
    _check_tensor(x, "linalg.vander", "x")
    if x.dtype in _LOW or x.dtype is bool_:
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, "
                           f"but got {_tname(x.dtype)}")
    x_ = x.unsqueeze(-1) if x.dim() == 0 else x
    n = x_.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    shape = tuple(x_.shape)
    r = _o.cumprod(x_.unsqueeze(-1).expand(shape + (n - 1,)), -1)
    ones = _o.ones(*(shape + (1,)), dtype=r.dtype, device=r.device)
    return _o.cat([ones, r], -1)
