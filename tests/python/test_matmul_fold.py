"""LLVM matmul batch folding (llvm_backend/matmul.c): a batched product
whose B is one matrix for every batch (a Linear layer's weight applied to
[batch, seq, in]) runs as one product of batch*seq rows when A's rows, and
the rows the gemm writes, run on across batches with one stride. Every
layout that may or may not fold is checked against numpy: contiguous and
sliced A, transposed A, a weight used transposed, batch dims of size 1,
two batch dims, a direct store, a bias / residual add epilogue, a GELU
epilogue, an output written through a transposed view, and a B that
differs per batch (never folded)."""
import numpy as np
import pytest

import symtrace as st

pytestmark = pytest.mark.skipif(not st._C._fe_backend_available("llvm"), reason="no llvm backend")


def _check(fn, ref, *xs, tol=1e-4):
    cf = st.compile(fn, backend="llvm")
    ts = [st.tensor(x) for x in xs]
    cf(*ts)                                  # traces (runs eagerly)
    with st.profiler.profile() as prof:
        out = cf(*ts).numpy()                # the compiled graph
    assert any(r.kind == "matmul" for r in prof.rows), prof.table()
    k = xs[0].shape[-1]
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * np.sqrt(k))


def _rand(rng, *shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64])
@pytest.mark.parametrize("bshape", [(8,), (2, 3), (4, 1), (1, 5), (1,)])
@pytest.mark.parametrize("mkn", [(128, 256, 96), (7, 5, 3), (1, 9, 4)])
def test_shared_weight(dtype, bshape, mkn):
    # float16 and int64 take the packed paths (not BLAS operands)
    M, K, N = mkn
    rng = np.random.default_rng(M + 10 * K + 100 * N + len(bshape))
    a = _rand(rng, *bshape, M, K, dtype=dtype)
    w = _rand(rng, K, N, dtype=dtype)
    if dtype == np.float16:
        ref = (a.astype(np.float32) @ w.astype(np.float32)).astype(np.float16)
        _check(lambda a, w: a @ w, ref, a, w, tol=2e-2)
    else:
        _check(lambda a, w: a @ w, a @ w, a, w)


@pytest.mark.parametrize("epi", ["none", "bias", "residual", "gelu", "scale"])
def test_linear_layouts(epi):
    rng = np.random.default_rng(3)
    B, S, K, N = 4, 64, 48, 80
    x = _rand(rng, B, S, K)
    w = _rand(rng, N, K)                      # torch Linear layout: x @ w.t()
    b = _rand(rng, N)
    r = _rand(rng, B, S, N)
    y = x @ w.T
    if epi == "none":
        fn, ref = (lambda x, w, b, r: x @ w.t()), y
    elif epi == "bias":
        fn, ref = (lambda x, w, b, r: x @ w.t() + b), y + b
    elif epi == "residual":
        fn, ref = (lambda x, w, b, r: x @ w.t() + r), y + r
    elif epi == "gelu":
        fn = lambda x, w, b, r: st.nn.functional.gelu(x @ w.t() + b)  # noqa: E731
        t = y + b
        from math import erf
        ref = (0.5 * t * (1 + np.vectorize(erf)(t / np.sqrt(2)))).astype(np.float32)
    else:
        fn, ref = (lambda x, w, b, r: (x @ w.t()) * 0.5 + r), y * 0.5 + r
    _check(fn, ref, x, w, b, r)


def test_sliced_a_does_not_fold_wrongly():
    # rows of each batch are contiguous but batches sit 2*S rows apart
    rng = np.random.default_rng(5)
    big = _rand(rng, 3, 2 * 33, 20)
    w = _rand(rng, 20, 11)
    _check(lambda a, w: a[:, :33] @ w, big[:, :33] @ w, big, w)
    # every second row: one stride, folds
    _check(lambda a, w: a[:, ::2] @ w, big[:, ::2] @ w, big, w)
    # a column slice: rows stride 20, one stride across batches
    _check(lambda a, w: a[:, :, 3:17] @ w[3:17], big[:, :, 3:17] @ w[3:17], big, w)


def test_transposed_a():
    rng = np.random.default_rng(6)
    a = _rand(rng, 5, 24, 40)                 # used as [5, 40, 24]
    w = _rand(rng, 24, 7)
    _check(lambda a, w: a.transpose(1, 2) @ w, np.swapaxes(a, 1, 2) @ w, a, w)
    # [K, batch*M] storage seen as [batch, M, K]: rows stride 1, batch stride M
    t = _rand(rng, 24, 6 * 10)
    _check(lambda t, w: t.t().reshape(6, 10, 24) @ w,
           t.T.reshape(6, 10, 24) @ w, t, w)


def test_output_through_transposed_view():
    # the product is stored through a permuted view: C rows do not run on
    rng = np.random.default_rng(7)
    a = _rand(rng, 6, 16, 12)
    w = _rand(rng, 12, 9)
    _check(lambda a, w: (a @ w).transpose(0, 1).contiguous(),
           np.swapaxes(a @ w, 0, 1), a, w)
    r = _rand(rng, 16, 6, 9)
    _check(lambda a, w, r: (a @ w) + r.transpose(0, 1),
           a @ w + np.swapaxes(r, 0, 1), a, w, r)


def test_weight_per_batch_not_folded():
    rng = np.random.default_rng(8)
    a = _rand(rng, 4, 30, 12)
    w = _rand(rng, 4, 12, 9)
    _check(lambda a, w: a @ w, a @ w, a, w)
    # B broadcast over one batch dim only
    a2 = _rand(rng, 3, 4, 30, 12)
    _check(lambda a, w: a @ w, a2 @ w, a2, w)


def test_linear_backward_matches_numpy():
    rng = np.random.default_rng(9)
    B, S, K, N = 4, 32, 24, 40
    x = _rand(rng, B, S, K)
    w = _rand(rng, N, K)
    g = _rand(rng, B, S, N)
    xt = st.tensor(x, requires_grad=True)
    wt = st.tensor(w, requires_grad=True)
    gt = st.tensor(g)

    def step(x, w, g):
        y = x @ w.t()
        (y * g).sum().backward()

    cf = st.compile(step, backend="llvm")
    for _ in range(2):
        xt.grad = None
        wt.grad = None
        cf(xt, wt, gt)
    np.testing.assert_allclose(xt.grad.numpy(), g @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wt.grad.numpy(), np.einsum("bsn,bsk->nk", g, x),
                               rtol=1e-4, atol=1e-3)
