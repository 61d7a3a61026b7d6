# symtrace.linalg (torch.linalg composed of symtrace ops) and torch's top-level linear
# algebra functions and Tensor methods: values against torch.linalg over batched random
# matrices (float64 tight, float32), reconstruction invariants and numpy references (these
# run without torch), gradients against torch, torch's errors, edge shapes, and compiled
# functions (symtrace.compile) against eager.
import math
import warnings

import numpy as np
import pytest

import symtrace as st
from conftest import ERRORS, assert_close, rng_for

# torch's own deprecation warnings (torch.cholesky, torch.qr, torch.lu, ...)
pytestmark = pytest.mark.filterwarnings("ignore:torch\\.[a-z_]+ is deprecated:UserWarning")

L = st.linalg
TOL = {"float64": dict(rtol=1e-10, atol=1e-10), "float32": dict(rtol=1e-4, atol=1e-4)}
GTOL = {"float64": dict(rtol=1e-8, atol=1e-9), "float32": dict(rtol=3e-3, atol=3e-3)}
NP = {"float64": np.float64, "float32": np.float32}


def rand(shape, dtype="float64", key=(), shift=0.0):
    """Random values; shift * I added to the trailing square matrices (well conditioned)."""
    a = rng_for(shape, dtype, *key).standard_normal(shape)
    if shift:
        a = a + shift * np.eye(shape[-1])
    return a.astype(NP[dtype])


def spd(shape, dtype="float64", key=()):
    """Random symmetric positive-definite matrices."""
    a = rng_for(shape, dtype, "spd", *key).standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(NP[dtype])


def S(a):
    return st.tensor(np.ascontiguousarray(a))


def npy(t):
    return np.array(t.detach().numpy())


def close(got, exp, dtype="float64", **kw):
    """got (a symtrace tensor or a tuple of them) against exp (torch tensors / numpy arrays)."""
    if isinstance(exp, (tuple, list)):
        assert len(got) == len(exp)
        for g, e in zip(got, exp):
            close(g, e, dtype, **kw)
        return
    tol = dict(TOL[dtype])
    tol.update(kw)
    if hasattr(exp, "detach"):
        if not exp.is_floating_point():
            assert_close(got, exp)
            return
        assert_close(got.detach(), exp.detach(), **tol)
    else:
        np.testing.assert_allclose(npy(got), exp, **tol)


def grads(torch, st_fn, th_fn, arrays, dtype="float64", wkey=0, **kw):
    """st_fn / th_fn on leaves holding the arrays: same values; then the gradients of
    sum(out * w) (w random) against torch's."""
    ss = [S(a).requires_grad_(True) for a in arrays]
    ts = [torch.from_numpy(np.ascontiguousarray(a).copy()).requires_grad_(True) for a in arrays]
    got, exp = st_fn(*ss), th_fn(*ts)
    close(got, exp, dtype, **GTOL[dtype])
    w = rng_for("w", tuple(exp.shape), wkey).uniform(0.5, 1.5, tuple(exp.shape)).astype(NP[dtype])
    (got * S(w)).sum().backward()
    (exp * torch.from_numpy(w)).sum().backward()
    tol = dict(GTOL[dtype])
    tol.update(kw)
    for s, t in zip(ss, ts):
        assert s.grad is not None
        assert_close(s.grad, t.grad, **tol)


# ---------------------------------------------------------------- values against torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 5, 5)])
def test_square_vs_torch(torch, dtype, shape):
    n = shape[-1]
    a = rand(shape, dtype, shift=n)
    b = rand(shape[:-1] + (2,), dtype, key=("b",))
    A, TA = S(a), torch.from_numpy(a)
    B, TB = S(b), torch.from_numpy(b)
    tl = torch.linalg
    close(L.det(A), tl.det(TA), dtype, rtol=1e-9 if dtype == "float64" else 1e-4)
    close(L.slogdet(A), tl.slogdet(TA), dtype)
    close(L.inv(A), tl.inv(TA), dtype)
    close(L.inv_ex(A), tl.inv_ex(TA), dtype)
    close(L.solve(A, B), tl.solve(TA, TB), dtype)
    close(L.solve(A, B[..., 0]), tl.solve(TA, TB[..., 0]), dtype)
    close(L.solve(A, B.mT, left=False), tl.solve(TA, TB.mT, left=False), dtype)
    close(L.solve_ex(A, B), tl.solve_ex(TA, TB), dtype)
    close(L.lu_factor(A), tl.lu_factor(TA), dtype)       # pivots exactly LAPACK's
    close(L.lu_factor_ex(A), tl.lu_factor_ex(TA), dtype)
    close(L.lu(A), tl.lu(TA), dtype)
    LU, piv = L.lu_factor(A)
    TLU, tpiv = tl.lu_factor(TA)
    for left in (True, False):
        for adj in (True, False):
            rhs, trhs = (B, TB) if left else (B.mT, TB.mT)
            close(L.lu_solve(LU, piv, rhs, left=left, adjoint=adj),
                  tl.lu_solve(TLU, tpiv, trhs, left=left, adjoint=adj), dtype)
    for upper in (True, False):
        for unit in (True, False):
            close(L.solve_triangular(A, B, upper=upper, unitriangular=unit),
                  tl.solve_triangular(TA, TB, upper=upper, unitriangular=unit), dtype)
            close(L.solve_triangular(A, B.mT, upper=upper, left=False, unitriangular=unit),
                  tl.solve_triangular(TA, TB.mT, upper=upper, left=False, unitriangular=unit), dtype)
    p = spd(shape, dtype)
    P, TP = S(p), torch.from_numpy(p)
    close(L.cholesky(P), tl.cholesky(TP), dtype)
    close(L.cholesky(P, upper=True), tl.cholesky(TP, upper=True), dtype)
    close(L.cholesky_ex(P), tl.cholesky_ex(TP), dtype)
    sym_tol = dict(rtol=1e-9, atol=1e-9) if dtype == "float64" else dict(rtol=2e-4, atol=2e-4)
    close(L.eigvalsh(P), tl.eigvalsh(TP), dtype, **sym_tol)
    close(L.eigvalsh(A, "U"), tl.eigvalsh(TA, "U"), dtype, **sym_tol)
    close(L.eigh(A)[0], tl.eigh(TA)[0], dtype, **sym_tol)
    close(L.svdvals(A), tl.svdvals(TA), dtype, **sym_tol)
    close(L.qr(A), tl.qr(TA), dtype)                  # LAPACK's signs: Q and R themselves
    close(L.pinv(A), tl.pinv(TA), dtype, **sym_tol)
    close(L.pinv(P, hermitian=True), tl.pinv(TP, hermitian=True), dtype, **sym_tol)
    close(L.matrix_rank(A), tl.matrix_rank(TA))
    close(L.matrix_exp(A * 0.3), tl.matrix_exp(TA * 0.3), dtype, **sym_tol)
    close(L.matrix_exp(A), tl.matrix_exp(TA), dtype, rtol=1e-9 if dtype == "float64" else 1e-4)
    close(L.matrix_power(A, 3), tl.matrix_power(TA, 3), dtype, **sym_tol)
    close(L.matrix_power(A, -2), tl.matrix_power(TA, -2), dtype)
    close(L.matrix_power(A, 0), tl.matrix_power(TA, 0), dtype)
    for o in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        close(L.matrix_norm(A, o), tl.matrix_norm(TA, o), dtype, **sym_tol)
        close(L.cond(A, None if o == "nuc" else o), tl.cond(TA, None if o == "nuc" else o), dtype,
              **sym_tol)
    close(L.norm(A), tl.norm(TA), dtype)
    close(L.vector_norm(A, 3, dim=(-1, -2), keepdim=True),
          tl.vector_norm(TA, 3, dim=(-1, -2), keepdim=True), dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 5), (4, 1), (1, 4)])
def test_rectangular_vs_torch(torch, dtype, shape):
    a = rand(shape, dtype)
    A, TA = S(a), torch.from_numpy(a)
    tl = torch.linalg
    tol = dict(rtol=1e-9, atol=1e-9) if dtype == "float64" else dict(rtol=2e-4, atol=2e-4)
    for mode in ("reduced", "complete", "r"):
        close(L.qr(A, mode), tl.qr(TA, mode), dtype, **tol)
    close(L.lu_factor_ex(A), tl.lu_factor_ex(TA), dtype)
    close(L.lu(A), tl.lu(TA), dtype)
    close(L.svdvals(A), tl.svdvals(TA), dtype, **tol)
    for full in (True, False):
        got, exp = L.svd(A, full_matrices=full), tl.svd(TA, full_matrices=full)
        assert [tuple(t.shape) for t in got] == [tuple(t.shape) for t in exp]
        close(got[1], exp[1], dtype, **tol)
    close(L.pinv(A), tl.pinv(TA), dtype, **tol)
    close(L.matrix_rank(A), tl.matrix_rank(TA))
    close(L.matrix_norm(A, 2), tl.matrix_norm(TA, 2), dtype, **tol)
    m, n = shape[-2:]
    b = rand(shape[:-2] + (m, 2), dtype, key=("b",))
    B, TB = S(b), torch.from_numpy(b)
    for driver in (None, "gels", "gelsd", "gelss"):
        got, exp = L.lstsq(A, B, driver=driver), tl.lstsq(TA, TB, driver=driver)
        close(got, exp, dtype, **tol)
    close(L.lstsq(A, B[..., 0]).solution, tl.lstsq(TA, TB[..., 0]).solution, dtype, **tol)
    if m >= n:
        tau = rand(shape[:-2] + (n,), dtype, key=("tau",))
        close(L.householder_product(A, S(tau)), tl.householder_product(TA, torch.from_numpy(tau)),
              dtype, **tol)


def test_products_and_small_functions(torch):
    tl = torch.linalg
    x, y = rand((2, 4, 3), key=("x",)), rand((2, 4, 3), key=("y",))
    X, Y, TX, TY = S(x), S(y), torch.from_numpy(x), torch.from_numpy(y)
    close(L.cross(X, Y), tl.cross(TX, TY))
    close(L.cross(X, Y[:1]), tl.cross(TX, TY[:1]))                # broadcasting
    close(L.cross(X.mT, Y.mT, dim=1), tl.cross(TX.mT, TY.mT, dim=1))
    close(L.vecdot(X, Y), tl.vecdot(TX, TY))
    close(L.vecdot(X, Y, dim=0), tl.vecdot(TX, TY, dim=0))
    close(L.matmul(X, Y.mT), tl.matmul(TX, TY.mT))
    close(L.diagonal(X, offset=1), tl.diagonal(TX, offset=1))
    ms = [rand((3,), key=(1,)), rand((3, 5), key=(2,)), rand((5, 2), key=(3,)), rand((2, 6), key=(4,)),
          rand((6,), key=(5,))]
    close(L.multi_dot([S(m) for m in ms]), tl.multi_dot([torch.from_numpy(m) for m in ms]))
    close(L.multi_dot([S(m) for m in ms[1:4]]), tl.multi_dot([torch.from_numpy(m) for m in ms[1:4]]))
    v = rand((2, 4), key=("v",))
    close(L.vander(S(v)), tl.vander(torch.from_numpy(v)))
    close(L.vander(S(v), N=6), tl.vander(torch.from_numpy(v), N=6))
    close(L.vander(st.tensor([1, 2, 3]), N=4), tl.vander(torch.tensor([1, 2, 3]), N=4))
    a = rand((4, 6, 8, 3), key=("ti",))
    close(L.tensorinv(S(a)), tl.tensorinv(torch.from_numpy(a)), rtol=1e-8, atol=1e-9)
    a, b = rand((2, 6, 3), key=("ts",)), rand((6,), key=("tb",))
    close(L.tensorsolve(S(a), S(b), dims=(0,)),
          tl.tensorsolve(torch.from_numpy(a), torch.from_numpy(b), dims=(0,)), rtol=1e-8, atol=1e-9)
    close(L.tensorsolve(S(a.transpose(1, 0, 2)), S(b)),
          tl.tensorsolve(torch.from_numpy(a.transpose(1, 0, 2).copy()), torch.from_numpy(b)),
          rtol=1e-8, atol=1e-9)
    i = np.ones((2, 3, 3), np.int64)
    close(L.matrix_power(S(i), 3), tl.matrix_power(torch.from_numpy(i), 3))
    close(L.matrix_power(S(i), 0), tl.matrix_power(torch.from_numpy(i), 0))
    close(L.norm(X[0], 2), tl.norm(TX[0], 2))
    close(L.norm(X, 3, dim=1), tl.norm(TX, 3, dim=1))
    close(L.norm(X, "nuc", dim=(0, 2)), tl.norm(TX, "nuc", dim=(0, 2)))
    close(L.norm(X, math.inf, dim=(1, 2), keepdim=True), tl.norm(TX, math.inf, dim=(1, 2), keepdim=True))
    close(L.matrix_norm(X, -1, dim=(2, 0), keepdim=True), tl.matrix_norm(TX, -1, dim=(2, 0), keepdim=True))
    close(L.matrix_norm(X, "nuc", dim=(0, 2), keepdim=True),
          tl.matrix_norm(TX, "nuc", dim=(0, 2), keepdim=True))
    close(L.vector_norm(X.float(), dtype=st.float64), tl.vector_norm(TX.float(), dtype=torch.float64),
          rtol=1e-6)
    # out= (copied into), and the older pinv(A, rcond) / matrix_rank(A, tol) forms
    a = rand((2, 3, 3), shift=3)
    o = st.empty(2, 3, 3, dtype=st.float64)
    assert L.inv(S(a), out=o) is o
    close(o, tl.inv(torch.from_numpy(a)))
    sg, la = st.empty(2, dtype=st.float64), st.empty(2, dtype=st.float64)
    res = L.slogdet(S(a), out=(sg, la))
    assert res[0] is sg and res[1] is la
    close((sg, la), tl.slogdet(torch.from_numpy(a)))
    close(L.pinv(S(a), 0.5), tl.pinv(torch.from_numpy(a), 0.5))
    close(L.matrix_rank(S(a), 2.0), tl.matrix_rank(torch.from_numpy(a), 2.0))
    h = rand((3, 3), key=("h",)) * 0.2
    close(L.matrix_exp(S(h).half()), tl.matrix_exp(torch.from_numpy(h).float()).half(), rtol=2e-3,
          atol=2e-3)


def test_top_level_and_methods(torch):
    a = rand((2, 4, 4), shift=4)
    b = rand((2, 4, 3), key=("b",))
    A, TA, B, TB = S(a), torch.from_numpy(a), S(b), torch.from_numpy(b)
    for name in ("det", "logdet", "slogdet", "inverse", "matrix_exp", "pinverse"):
        close(getattr(st, name)(A), getattr(torch, name)(TA), rtol=1e-9)
        close(getattr(A, name)(), getattr(TA, name)(), rtol=1e-9)
    close(st.logdet(S(-np.eye(3))), torch.logdet(-torch.eye(3, dtype=torch.float64)))
    close(st.logdet(S(np.zeros((3, 3)))), torch.logdet(torch.zeros(3, 3, dtype=torch.float64)))
    close(st.matrix_power(A, 3), torch.matrix_power(TA, 3))
    close(A.matrix_power(-1), TA.matrix_power(-1))
    p = spd((2, 4, 4))
    P, TP = S(p), torch.from_numpy(p)
    close(st.cholesky(P), torch.cholesky(TP))
    close(P.cholesky(True), TP.cholesky(True))
    Lc, TLc = st.cholesky(P), torch.cholesky(TP)
    close(st.cholesky_solve(B, Lc), torch.cholesky_solve(TB, TLc))
    close(B.cholesky_solve(Lc.mT, True), TB.cholesky_solve(TLc.mT, True))
    close(st.cholesky_inverse(Lc), torch.cholesky_inverse(TLc))
    close(Lc.mT.cholesky_inverse(True), TLc.mT.cholesky_inverse(True))
    U, Sv, V = st.svd(B)
    TU, TSv, TV = torch.svd(TB)
    close(Sv, TSv, rtol=1e-9)
    close((U * Sv.unsqueeze(-2)) @ V.mT, TB)                     # V, not V^T
    assert [tuple(t.shape) for t in st.svd(B, some=False)] == [tuple(t.shape) for t in torch.svd(TB, some=False)]
    close(st.svd(B, compute_uv=False), torch.svd(TB, compute_uv=False), rtol=1e-9)
    close(B.svd()[1], TB.svd()[1], rtol=1e-9)
    close(st.qr(B, some=False), torch.qr(TB, some=False))
    close(B.qr(), TB.qr())
    LU, piv = L.lu_factor(A)
    TLU, tpiv = torch.linalg.lu_factor(TA)
    close(st.lu_unpack(LU, piv), torch.lu_unpack(TLU, tpiv))
    close(st.lu_unpack(LU, piv, unpack_data=False), torch.lu_unpack(TLU, tpiv, unpack_data=False))
    close(st.lu_unpack(LU, piv, unpack_pivots=False), torch.lu_unpack(TLU, tpiv, unpack_pivots=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(st.lu(A, get_infos=True), torch.lu(TA, get_infos=True))
        close(A.lu(), TA.lu())
        for upper in (True, False):
            for tr in (True, False):
                close(st.triangular_solve(B, A, upper, tr, not tr), torch.triangular_solve(TB, TA, upper, tr, not tr))
        close(B.triangular_solve(A[0]), TB.triangular_solve(TA[0]))
        x, y = rand((2, 3, 5), key=("x",)), rand((2, 3, 5), key=("y",))
        close(st.cross(S(x), S(y)), torch.cross(torch.from_numpy(x), torch.from_numpy(y)))
        close(S(x).cross(S(y), 1), torch.from_numpy(x).cross(torch.from_numpy(y), 1))
    close(st.norm(B, "nuc", dim=(1, 2)), torch.norm(TB, "nuc", dim=(1, 2)))
    c1, c2 = rand((2, 5, 3), key=("c1",)), rand((2, 30, 3), key=("c2",))
    C1, C2, T1, T2 = S(c1), S(c2), torch.from_numpy(c1), torch.from_numpy(c2)
    for p_ in (0.0, 0.5, 1.0, 2.0, 3.0, math.inf):
        close(st.cdist(C1, C2, p_), torch.cdist(T1, T2, p_))                  # 30 rows: matmul form for p=2
        close(st.cdist(C1, C2[:, :4], p_), torch.cdist(T1, T2[:, :4], p_))    # direct
    close(st.cdist(C1[:, None], C2[0]), torch.cdist(T1[:, None], T2[0]))      # batch broadcast


# ---------------------------------------------------------------- invariants (no torch)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_invariants(dtype):
    eps = 1e-12 if dtype == "float64" else 2e-5
    a = rand((3, 5, 5), dtype, key=("inv",), shift=5)
    r = rand((2, 6, 4), dtype, key=("rect",))
    A, R = S(a), S(r)
    I5 = np.eye(5)

    def near(x, y, scale=1.0):
        np.testing.assert_allclose(x, np.broadcast_to(y, x.shape), rtol=0, atol=eps * scale * 10)

    for X in (R, R.mT):
        m, n = X.shape[-2:]
        x = npy(X)
        Q, Rr = L.qr(X)
        near(npy(Q @ Rr), x, np.abs(x).max())
        near(npy(Q.mT @ Q), np.eye(min(m, n)))
        assert np.all(np.tril(npy(Rr), -1) == 0)
        Qc, Rc = L.qr(X, "complete")
        near(npy(Qc.mT @ Qc), np.eye(m))
        near(npy(Qc @ Rc), x, np.abs(x).max())
        U, Sv, Vh = L.svd(X)
        k = min(m, n)
        near(npy((U[..., :k] * Sv.unsqueeze(-2)) @ Vh[..., :k, :]), x, np.abs(x).max())
        near(npy(U.mT @ U), np.eye(m))
        near(npy(Vh @ Vh.mT), np.eye(n))
        s = npy(Sv)
        assert np.all(s[..., :-1] >= s[..., 1:]) and np.all(s >= 0)
        near(s, np.linalg.svd(x.astype(np.float64), compute_uv=False), s.max())
        P, Lm, Um = L.lu(X)
        near(npy(P @ Lm @ Um), x, np.abs(x).max())
        assert np.all(np.abs(npy(Lm)) <= 1 + eps)          # partial pivoting: |l| <= 1
        Pi = L.pinv(X)
        near(npy(X @ Pi @ X), x, np.abs(x).max())
        near(npy(Pi @ X @ Pi), npy(Pi), np.abs(npy(Pi)).max())
    p = spd((3, 5, 5), dtype, key=("inv",))
    P_ = S(p)
    w, V = L.eigh(P_)
    near(npy((V * w.unsqueeze(-2)) @ V.mT), p, np.abs(p).max())
    near(npy(V.mT @ V), I5)
    wn = npy(w)
    assert np.all(wn[..., :-1] <= wn[..., 1:])
    near(wn, np.linalg.eigvalsh(p.astype(np.float64)), np.abs(wn).max())
    Lc = L.cholesky(P_)
    near(npy(Lc @ Lc.mT), p, np.abs(p).max())
    assert np.all(np.triu(npy(Lc), 1) == 0)
    near(npy(L.inv(A) @ A), np.broadcast_to(I5, a.shape))
    near(npy(L.det(A)), np.linalg.det(a.astype(np.float64)), np.abs(np.linalg.det(a)).max())
    sign, la = L.slogdet(A)
    near(npy(sign * st.exp(la)), np.linalg.det(a.astype(np.float64)), np.abs(np.linalg.det(a)).max())
    b = rand((3, 5, 2), dtype, key=("rhs",))
    near(npy(A @ L.solve(A, S(b))), b, np.abs(b).max())
    near(npy(L.matrix_exp(A * 0.2) @ L.matrix_exp(A * -0.2)), np.broadcast_to(I5, a.shape))
    near(npy(L.matrix_exp(S(np.zeros((2, 3, 3), NP[dtype])))), np.broadcast_to(np.eye(3), (2, 3, 3)))
    d = np.diag(np.array([0.5, -1.0, 2.0], NP[dtype]))
    near(npy(L.matrix_exp(S(d))), np.diag(np.exp([0.5, -1.0, 2.0])), 8)
    big = npy(L.matrix_exp(S(d * 40)))                    # 7 squarings
    np.testing.assert_allclose(np.diag(big), np.exp([20.0, -40.0, 80.0]), rtol=eps * 10)
    assert np.all(big[~np.eye(3, dtype=bool)] == 0)
    # a rank-deficient matrix: orthonormal factors still, and rank 2
    rd = (rand((5, 2), dtype, key=("rd1",)) @ rand((2, 4), dtype, key=("rd2",)))
    U, Sv, Vh = L.svd(S(rd))
    near(npy(U.mT @ U), np.eye(5))
    near(npy((U[:, :4] * Sv) @ Vh), rd, np.abs(rd).max())
    assert L.matrix_rank(S(rd)).item() == 2
    # repeated eigenvalues and a zero matrix
    for m in (np.eye(4, dtype=NP[dtype]) * 2, np.zeros((4, 4), NP[dtype]), np.diag(np.array([1, 1, 3, 3], NP[dtype]))):
        w, V = L.eigh(S(m))
        near(npy(V.mT @ V), np.eye(4))
        near(npy((V * w) @ V.mT), m, 3)
        U, Sv, Vh = L.svd(S(m))
        near(npy((U * Sv) @ Vh), m, 3)
        near(npy(U.mT @ U), np.eye(4))


def test_numpy_references():
    """Values against numpy.linalg (runs without torch)."""
    a = rand((2, 4, 4), shift=4)
    A = S(a)
    np.testing.assert_allclose(npy(L.det(A)), np.linalg.det(a), rtol=1e-10)
    np.testing.assert_allclose(npy(L.inv(A)), np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    b = rand((2, 4, 3), key=("b",))
    np.testing.assert_allclose(npy(L.solve(A, S(b))), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(L.svdvals(A)), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(npy(L.matrix_norm(A, 2)), np.linalg.norm(a, 2, axis=(1, 2)), rtol=1e-10)
    np.testing.assert_allclose(npy(L.matrix_norm(A, "nuc")), np.linalg.norm(a, "nuc", axis=(1, 2)), rtol=1e-10)
    np.testing.assert_allclose(npy(L.cond(A)), np.linalg.cond(a), rtol=1e-9)
    np.testing.assert_allclose(npy(L.pinv(S(b))), np.linalg.pinv(b), rtol=1e-9, atol=1e-12)
    r = rand((6, 3), key=("r",))
    y = rand((6, 2), key=("y",))
    np.testing.assert_allclose(npy(L.lstsq(S(r), S(y)).solution), np.linalg.lstsq(r, y, rcond=None)[0],
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(npy(L.matrix_power(A, 5)), np.linalg.matrix_power(a, 5), rtol=1e-10)
    u, v = b[..., :3, :].transpose(0, 2, 1).copy(), b[..., 1:, :].transpose(0, 2, 1).copy()
    np.testing.assert_allclose(npy(L.cross(S(u), S(v))), np.cross(u, v), rtol=1e-12)
    assert npy(L.matrix_rank(S(np.ones((3, 4))))).item() == 1


# ---------------------------------------------------------------- gradients against torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gradients(torch, dtype):
    tl = torch.linalg
    a = rand((2, 4, 4), dtype, shift=4)
    b = rand((2, 4, 3), dtype, key=("b",))
    p = spd((2, 4, 4), dtype)
    r = rand((2, 5, 3), dtype, key=("r",))
    g = lambda sf, tf, *arrs, **kw: grads(torch, sf, tf, arrs, dtype, **kw)  # noqa: E731
    g(L.det, tl.det, a)
    g(lambda x: L.slogdet(x)[1], lambda x: tl.slogdet(x)[1], a)
    g(L.inv, tl.inv, a)
    g(L.solve, tl.solve, a, b)
    g(lambda x, y: L.solve(x, y, left=False), lambda x, y: tl.solve(x, y, left=False), a, b.swapaxes(-1, -2).copy())
    g(L.cholesky, tl.cholesky, p)                       # torch's symmetric gradient
    g(lambda x: L.cholesky(x, upper=True), lambda x: tl.cholesky(x, upper=True), p)
    for mode, x in (("reduced", r), ("reduced", a), ("complete", a), ("complete", r.swapaxes(-1, -2).copy())):
        g(lambda x: L.qr(x, mode)[0], lambda x: tl.qr(x, mode)[0], x)    # torch: no complete, m > n
        g(lambda x: L.qr(x, mode)[1], lambda x: tl.qr(x, mode)[1], x)
    # eigh: distinct eigenvalues; losses that do not depend on the eigenvectors' signs
    g(L.eigvalsh, tl.eigvalsh, p)
    g(lambda x: L.eigh(x)[1] ** 2 + L.eigh(x)[0].unsqueeze(-2),
      lambda x: tl.eigh(x)[1] ** 2 + tl.eigh(x)[0].unsqueeze(-2), p)
    g(lambda x: L.eigh(x, "U")[1] ** 2, lambda x: tl.eigh(x, "U")[1] ** 2, a)      # one triangle read
    # svd: distinct singular values; gauge-invariant losses (U S Vh, |U|^2, |Vh|^2)

    def svd_loss(lin, full):
        def f(x):
            U, Sv, Vh = lin.svd(x, full_matrices=full)
            k = Sv.shape[-1]
            return ((U[..., :k] * Sv.unsqueeze(-2)) @ Vh[..., :k, :]) ** 2 + \
                (U[..., :k] ** 2).sum(-1, keepdim=True) * 0.5 + \
                (Vh[..., :k, :] ** 2).sum(-2, keepdim=True)[..., :1, :1]
        return f
    for full in (False, True):
        for x in (r, r.swapaxes(-1, -2).copy(), a):
            g(svd_loss(L, full), svd_loss(tl, full), x)
    g(L.svdvals, tl.svdvals, r)
    g(lambda x: L.svd(x)[0] ** 2 @ L.svd(x)[2] ** 2, lambda x: tl.svd(x)[0] ** 2 @ tl.svd(x)[2] ** 2, a)
    g(L.pinv, tl.pinv, r)
    g(lambda x: L.matrix_exp(x), lambda x: tl.matrix_exp(x), a * 0.3)
    g(lambda x: L.matrix_exp(x), lambda x: tl.matrix_exp(x), a * 0.5 + 1.0)   # squarings
    for o in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        g(lambda x: L.matrix_norm(x, o), lambda x: tl.matrix_norm(x, o), r)
    g(lambda x: L.vector_norm(x, 3, dim=-1), lambda x: tl.vector_norm(x, 3, dim=-1), r)
    g(lambda x: L.norm(x), lambda x: tl.norm(x), r)
    g(lambda x: L.cond(x), lambda x: tl.cond(x), a)
    g(lambda x: L.cond(x, 1), lambda x: tl.matrix_norm(x, 1) * tl.matrix_norm(tl.inv(x), 1), a)  # torch's: no grad
    g(lambda x, y: L.lu_solve(*L.lu_factor(x), y), lambda x, y: tl.lu_solve(*tl.lu_factor(x), y), a, b)
    g(lambda x: L.lu(x)[1] + L.lu(x)[2], lambda x: tl.lu(x)[1] + tl.lu(x)[2], a)
    g(lambda x, y: L.solve_triangular(x, y, upper=True), lambda x, y: tl.solve_triangular(x, y, upper=True), a, b)
    g(lambda x, y: L.lstsq(x, y).solution, lambda x, y: tl.lstsq(x, y).solution, r, r[..., :2].copy())
    g(lambda x: L.matrix_power(x, -2), lambda x: tl.matrix_power(x, -2), a)
    g(lambda x, t: L.householder_product(x, t), lambda x, t: tl.householder_product(x, t), r, r[:, 0, :].copy())
    g(lambda x, y: st.cholesky_solve(y, L.cholesky(x)), lambda x, y: torch.cholesky_solve(y, tl.cholesky(x)), p, b)
    g(lambda x, y: st.cdist(x, y), lambda x, y: torch.cdist(x, y), r, r[:, :4].copy() + 0.1)
    g(st.logdet, torch.logdet, p)


# ---------------------------------------------------------------- errors
_ERR_CASES = {
    "inv nonsquare": lambda m, a: m.linalg.inv(a["r34"]),
    "inv int": lambda m, a: m.linalg.inv(a["i33"]),
    "inv 1-D": lambda m, a: m.linalg.inv(a["v3"]),
    "inv half": lambda m, a: m.linalg.inv(a["a33"].half()),
    "inv singular batch": lambda m, a: m.linalg.inv(a["z233"]),
    "inv singular": lambda m, a: m.linalg.inv(a["sing"]),
    "det int": lambda m, a: m.linalg.det(a["i33"]),
    "det half": lambda m, a: m.linalg.det(a["a33"].half()),
    "slogdet nonsquare": lambda m, a: m.linalg.slogdet(a["r34"]),
    "cholesky not pd": lambda m, a: m.linalg.cholesky(-a["eye3"]),
    "cholesky not pd batch": lambda m, a: m.linalg.cholesky(a["pdbatch"]),
    "cholesky half": lambda m, a: m.linalg.cholesky(a["a33"].half()),
    "eigh int": lambda m, a: m.linalg.eigh(a["i33"]),
    "eigh UPLO": lambda m, a: m.linalg.eigh(a["a33"], UPLO="X"),
    "eigvalsh nonsquare": lambda m, a: m.linalg.eigvalsh(a["r34"]),
    "svd int": lambda m, a: m.linalg.svd(a["i33"]),
    "svd half": lambda m, a: m.linalg.svd(a["a33"].half()),
    "svd driver cpu": lambda m, a: m.linalg.svd(a["a33"], driver="gesvd"),
    "qr mode": lambda m, a: m.linalg.qr(a["a33"], mode="bad"),
    "qr half": lambda m, a: m.linalg.qr(a["a33"].half()),
    "lu_factor int": lambda m, a: m.linalg.lu_factor(a["i33"]),
    "lu_factor 1-D": lambda m, a: m.linalg.lu_factor(a["v3"]),
    "lu_factor singular": lambda m, a: m.linalg.lu_factor(a["z33"]),
    "lu 1-D": lambda m, a: m.linalg.lu(a["v3"]),
    "lu_solve pivots dtype": lambda m, a: m.linalg.lu_solve(a["a33"], a["piv64"], a["a33"]),
    "lu_solve shapes": lambda m, a: m.linalg.lu_solve(*m.linalg.lu_factor(a["a33"]), a["r34"].mT),
    "solve nonsquare": lambda m, a: m.linalg.solve(a["r34"], a["v3"]),
    "solve int": lambda m, a: m.linalg.solve(a["i33"], a["v3"]),
    "solve shapes": lambda m, a: m.linalg.solve(a["a33"], a["r34"][0]),
    "solve shapes 2": lambda m, a: m.linalg.solve(a["a33"], a["r34"].mT[:, :2]),
    "solve dtype": lambda m, a: m.linalg.solve(a["a33"], a["a33"].float()),
    "solve right shapes": lambda m, a: m.linalg.solve(a["a33"], a["r34"].mT[:3, :2], left=False),
    "solve singular": lambda m, a: m.linalg.solve(a["z33"], a["a33"]),
    "solve batch": lambda m, a: m.linalg.solve(a["z233"], a["r34"].mT[:3].unsqueeze(0).expand(4, 3, 4)),
    "solve_triangular shapes": lambda m, a: m.linalg.solve_triangular(a["a33"], a["r34"].mT, upper=True),
    "solve_triangular 1-D": lambda m, a: m.linalg.solve_triangular(a["a33"], a["v3"], upper=True),
    "solve_triangular int": lambda m, a: m.linalg.solve_triangular(a["i33"], a["i33"], upper=True),
    "cross length": lambda m, a: m.linalg.cross(a["r34"][0], a["r34"][1]),
    "cross ndim": lambda m, a: m.linalg.cross(a["a33"], a["v3"]),
    "vecdot int": lambda m, a: m.linalg.vecdot(a["i33"], a["i33"]),
    "vecdot dtype": lambda m, a: m.linalg.vecdot(a["a33"], a["a33"].float()),
    "matrix_norm ord": lambda m, a: m.linalg.matrix_norm(a["a33"], 3),
    "matrix_norm ord str": lambda m, a: m.linalg.matrix_norm(a["a33"], "abc"),
    "matrix_norm 1-D": lambda m, a: m.linalg.matrix_norm(a["v3"]),
    "matrix_norm dim": lambda m, a: m.linalg.matrix_norm(a["a33"], dim=(0,)),
    "matrix_norm same dims": lambda m, a: m.linalg.matrix_norm(a["a33"], dim=(0, 0)),
    "matrix_norm int": lambda m, a: m.linalg.matrix_norm(a["i33"]),
    "norm 3-D with ord": lambda m, a: m.linalg.norm(a["z233"], 2),
    "norm 3 dims": lambda m, a: m.linalg.norm(a["z233"], dim=(0, 1, 2)),
    "norm str 1-D": lambda m, a: m.linalg.norm(a["v3"], "fro"),
    "vector_norm int": lambda m, a: m.linalg.vector_norm(a["i33"]),
    "multi_dot one": lambda m, a: m.linalg.multi_dot([a["a33"]]),
    "multi_dot 3-D": lambda m, a: m.linalg.multi_dot([a["a33"], a["z233"]]),
    "multi_dot shapes": lambda m, a: m.linalg.multi_dot([a["a33"], a["r34"].mT]),
    "multi_dot dtype": lambda m, a: m.linalg.multi_dot([a["a33"], a["a33"].float()]),
    "matrix_power nonsquare": lambda m, a: m.linalg.matrix_power(a["r34"], 2),
    "matrix_power float n": lambda m, a: m.linalg.matrix_power(a["a33"], 1.5),
    "matrix_power int negative": lambda m, a: m.linalg.matrix_power(a["i33"], -1),
    "matrix_exp int": lambda m, a: m.linalg.matrix_exp(a["i33"]),
    "matrix_exp 1-D": lambda m, a: m.linalg.matrix_exp(a["v3"]),
    "pinv int": lambda m, a: m.linalg.pinv(a["i33"]),
    "matrix_rank int": lambda m, a: m.linalg.matrix_rank(a["i33"]),
    "matrix_rank 1-D": lambda m, a: m.linalg.matrix_rank(a["v3"]),
    "cond 1-D": lambda m, a: m.linalg.cond(a["v3"]),
    "cond ord": lambda m, a: m.linalg.cond(a["a33"], 3),
    "cond fro nonsquare": lambda m, a: m.linalg.cond(a["r34"], "fro"),
    "lstsq shapes": lambda m, a: m.linalg.lstsq(a["r34"].mT, a["r34"][:, :2]),
    "lstsq dims": lambda m, a: m.linalg.lstsq(a["r34"].mT, a["z233"][:, :, :2].unsqueeze(0)),
    "lstsq driver": lambda m, a: m.linalg.lstsq(a["r34"].mT, a["r34"].mT, driver="abc"),
    "vander N": lambda m, a: m.linalg.vander(a["v3"], N=1),
    "tensorinv ind": lambda m, a: m.linalg.tensorinv(a["a33"], ind=0),
    "tensorinv shape": lambda m, a: m.linalg.tensorinv(a["r34"]),
    "householder tau": lambda m, a: m.linalg.householder_product(a["r34"].mT, a["r34"][0]),
    "householder wide": lambda m, a: m.linalg.householder_product(a["r34"], a["v3"]),
    "cdist 1-D": lambda m, a: m.cdist(a["v3"], a["v3"]),
    "cdist columns": lambda m, a: m.cdist(a["a33"], a["r34"]),
    "cdist int": lambda m, a: m.cdist(a["i33"], a["i33"]),
    "cdist p": lambda m, a: m.cdist(a["a33"], a["a33"], p=-1),
    "cdist mode": lambda m, a: m.cdist(a["a33"], a["a33"], compute_mode="x"),
    "cholesky_solve shapes": lambda m, a: m.cholesky_solve(a["r34"].mT, a["a33"]),
    "cholesky_solve 1-D": lambda m, a: m.cholesky_solve(a["v3"], a["a33"]),
    "cholesky_inverse nonsquare": lambda m, a: m.cholesky_inverse(a["r34"]),
    "lu_unpack pivots": lambda m, a: m.lu_unpack(a["a33"], a["piv64"]),
    "triangular_solve shapes": lambda m, a: m.triangular_solve(a["r34"].mT, a["a33"]),
    "triangular_solve 1-D": lambda m, a: m.triangular_solve(a["v3"], a["a33"]),
    "top cholesky not pd": lambda m, a: m.cholesky(-a["eye3"]),
    "top inverse singular": lambda m, a: m.inverse(a["z33"]),
    "top cross no dim of 3": lambda m, a: m.cross(a["r34"][:2], a["r34"][:2]),
    "top norm nuc 3-D": lambda m, a: m.norm(a["z233"], "nuc"),
}


def _err_inputs(mod):
    rng = rng_for("errors")
    vals = {"r34": rng.standard_normal((3, 4)), "a33": rng.standard_normal((3, 3)),
            "v3": rng.standard_normal(3), "i33": np.ones((3, 3), np.int64), "z33": np.zeros((3, 3)),
            "z233": np.zeros((2, 3, 3)), "sing": np.array([[1.0, 2.0], [2.0, 4.0]]), "eye3": np.eye(3),
            "pdbatch": np.stack([np.eye(3), -np.eye(3)]), "piv64": np.array([1, 2, 3])}
    if mod is st:
        return {k: st.tensor(v) for k, v in vals.items()}
    return {k: mod.from_numpy(np.asarray(v).copy()) for k, v in vals.items()}


def test_errors_as_torch(torch):
    ta, sa = _err_inputs(torch), _err_inputs(st)
    for name, f in _ERR_CASES.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as te:
                f(torch, ta)
        with pytest.raises(ERRORS) as se:
            f(st, sa)
        assert str(se.value).split("\n")[0] == str(te.value).split("\n")[0], name
        assert isinstance(se.value, type(te.value).__mro__[1] if type(te.value).__name__ == "_LinAlgError"
                          else type(te.value)), name
        if type(te.value).__name__ == "_LinAlgError":
            assert isinstance(se.value, L.LinAlgError), name


def test_singular_info_without_torch():
    z = st.zeros(2, 3, 3, dtype=st.float64)
    with pytest.raises(L.LinAlgError, match=r"linalg.inv: \(Batch element 0\): The diagonal element 1 is zero"):
        L.inv(z)
    assert issubclass(L.LinAlgError, RuntimeError)
    a = st.tensor(np.stack([np.eye(3), np.diag([1.0, 0.0, 2.0])]))
    assert L.inv_ex(a).info.tolist() == [0, 2]
    assert L.solve_ex(a, st.ones(2, 3, 1, dtype=st.float64)).info.tolist() == [0, 2]
    assert L.lu_factor_ex(a).info.tolist() == [0, 2]
    assert L.cholesky_ex(st.tensor(np.stack([np.eye(3), np.diag([1.0, -1.0, 2.0])]))).info.tolist() == [0, 2]
    d, la = L.slogdet(a)
    assert d.tolist() == [1.0, 0.0] and la[1].item() == -math.inf
    assert math.isinf(L.cond(st.zeros(3, 3, dtype=st.float64), 1).item())


# ---------------------------------------------------------------- edge shapes
def test_edge_shapes(torch):
    tl = torch.linalg
    for shape in [(0, 0), (2, 0, 0), (1, 1), (3, 1, 1)]:
        a = rand(shape, shift=2) if shape[-1] else np.zeros(shape)
        A, TA = S(a), torch.from_numpy(a)
        for name in ("det", "slogdet", "inv", "cholesky", "eigh", "eigvalsh", "matrix_exp", "svdvals",
                     "inv_ex", "cholesky_ex", "lu_factor_ex", "matrix_rank", "pinv"):
            close(getattr(L, name)(A), getattr(tl, name)(TA))
        close(L.cond(A), tl.cond(TA))
    for shape in [(3, 0), (0, 3), (2, 0, 4)]:
        a = np.zeros(shape)
        A, TA = S(a), torch.from_numpy(a)
        close(L.qr(A), tl.qr(TA))
        close(L.pinv(A), tl.pinv(TA))
        assert [tuple(t.shape) for t in L.svd(A)] == [tuple(t.shape) for t in tl.svd(TA)]
    # broadcast batch dims, vector right-hand sides, non-contiguous and expanded inputs
    a = rand((2, 1, 3, 3), shift=3)
    b = rand((4, 3, 2), key=("b",))
    A, TA, B, TB = S(a), torch.from_numpy(a), S(b), torch.from_numpy(b)
    close(L.solve(A, B), tl.solve(TA, TB))
    close(L.solve(A[:, 0], B[:2, :, 0]), tl.solve(TA[:, 0], TB[:2, :, 0]))
    close(L.solve_triangular(A, B, upper=False), tl.solve_triangular(TA, TB, upper=False))
    LU, piv = L.lu_factor(A)
    close(L.lu_solve(LU, piv, B), tl.lu_solve(*tl.lu_factor(TA), TB))
    c = rand((3, 4, 4), shift=4)
    close(L.inv(S(c).mT), tl.inv(torch.from_numpy(c).mT))
    close(L.det(S(c[0]).expand(2, 4, 4)), tl.det(torch.from_numpy(c[0]).expand(2, 4, 4)))
    close(L.eigvalsh(S(c)[:, ::2, ::2]), tl.eigvalsh(torch.from_numpy(c)[:, ::2, ::2]), rtol=1e-9)
    close(L.svdvals(S(c).mT[..., 1:]), tl.svdvals(torch.from_numpy(c).mT[..., 1:]), rtol=1e-9)
    # singular and repeated: LU pivots of a zero matrix, det 0, slogdet (0, -inf)
    for m in (np.zeros((3, 3)), np.ones((3, 3)), np.diag([2.0, 2.0, 1.0])):
        close(L.lu_factor_ex(S(m)), tl.lu_factor_ex(torch.from_numpy(m)))
        close(L.det(S(m)), tl.det(torch.from_numpy(m)))
        close(L.slogdet(S(m)), tl.slogdet(torch.from_numpy(m)))
        close(L.svdvals(S(m)), tl.svdvals(torch.from_numpy(m)))
        close(L.eigvalsh(S(m)), tl.eigvalsh(torch.from_numpy(m)))
        close(L.matrix_rank(S(m)), tl.matrix_rank(torch.from_numpy(m)))
        close(L.pinv(S(m)), tl.pinv(torch.from_numpy(m)))
    rd = rand((5, 2), key=(1,)) @ rand((2, 4), key=(2,))
    close(L.lstsq(S(rd), S(rd[:, :2]), driver="gelsd"),
          tl.lstsq(torch.from_numpy(rd), torch.from_numpy(rd[:, :2].copy()), driver="gelsd"), rtol=1e-8, atol=1e-9)


# ---------------------------------------------------------------- symtrace.compile
def test_compiled_against_eager():
    a = rand((2, 4, 4), shift=4)
    b = rand((2, 4, 3), key=("b",))

    def f(x, y):
        z = L.solve(x, y)
        return z.sum() + L.det(x).sum() + L.norm(z) + L.matrix_norm(x, 2).sum()

    def g(x):
        w, v = L.eigh(x + x.mT)
        U, Sv, Vh = L.svd(x)
        return (w.sum() + (v ** 2 * w.unsqueeze(-2)).sum() + (Sv * (U[..., 0, :] ** 2)).sum()
                + L.matrix_exp(x * 0.2).sum() + L.qr(x)[1].sum() + L.cholesky(x @ x.mT).sum()
                + L.inv(x).sum() + L.slogdet(x)[1].sum())

    st.reset()
    for fn, arrs in ((f, (a, b)), (g, (a,))):
        e = st.explain(fn, *[S(x) for x in arrs])
        assert e.graph_count == 1 and e.graph_break_count == 0, e.break_reasons
        cf = st.compile(fn)
        for step in range(2):                   # the second call runs the cached graph
            xs = [S(x * (1 + 0.1 * step)).requires_grad_(True) for x in arrs]
            ys = [S(x * (1 + 0.1 * step)).requires_grad_(True) for x in arrs]
            out, ref = cf(*xs), fn(*ys)
            np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-10)
            out.backward()
            ref.backward()
            for x, y in zip(xs, ys):
                np.testing.assert_allclose(npy(x.grad), npy(y.grad), rtol=1e-8, atol=1e-10)
    st.reset()
