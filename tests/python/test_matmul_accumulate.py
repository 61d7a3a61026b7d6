"""LLVM matmul whose epilogue only adds a tensor (a bias, an accumulated
gradient): computed as C = X, then a gemm with beta 1 (llvm_backend/matmul.c).
Checked against numpy for every layout of X and of the operands, batched and
not, and the kernel must still be one matmul kernel."""
import numpy as np
import pytest

import symtrace as st

pytestmark = pytest.mark.skipif(not st._C._fe_backend_available("llvm"), reason="no llvm backend")


def _run(fn, *xs):
    cf = st.compile(fn, backend="llvm")
    ts = [st.tensor(x) for x in xs]
    first = cf(*ts).numpy()          # the first call traces (runs eagerly)
    with st.profiler.profile() as prof:
        out = cf(*ts).numpy()        # the compiled graph
    kinds = [r.kind for r in prof.rows]
    assert kinds.count("matmul") == 1, prof.table()
    _run.fused += any(r.name.endswith("matmul_add") for r in prof.rows)
    np.testing.assert_allclose(out, first, rtol=1e-5, atol=1e-5)
    return out


_run.fused = 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xkind", ["full", "bias", "col", "transposed", "scalar_row"])
@pytest.mark.parametrize("shape", [(33, 17, 29), (160, 256, 700), (1, 5, 3), (64, 1, 64)])
def test_add_epilogue(dtype, xkind, shape):
    M, K, N = shape
    rng = np.random.default_rng(M * 1000 + N + K)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    if xkind == "full":
        x = rng.standard_normal((M, N)).astype(dtype)
        fn = lambda a, b, x: a @ b + x  # noqa: E731
        ref = a @ b + x
    elif xkind == "bias":
        x = rng.standard_normal((N,)).astype(dtype)
        fn = lambda a, b, x: x + a @ b  # noqa: E731
        ref = a @ b + x
    elif xkind == "col":
        x = rng.standard_normal((M, 1)).astype(dtype)
        fn = lambda a, b, x: a @ b + x  # noqa: E731
        ref = a @ b + x
    elif xkind == "transposed":
        x = rng.standard_normal((N, M)).astype(dtype)
        fn = lambda a, b, x: a @ b + x.t()  # noqa: E731
        ref = a @ b + x.T
    else:
        x = rng.standard_normal((1, N)).astype(dtype)
        fn = lambda a, b, x: a @ b + x  # noqa: E731
        ref = a @ b + x
    got = _run(fn, a, b, x)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.sqrt(K))


@pytest.mark.parametrize("trans", [False, True])
def test_add_epilogue_batched_and_transposed_operands(trans):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((6, 40, 24)).astype(np.float32)
    b = rng.standard_normal((6, 24, 50)).astype(np.float32)
    x = rng.standard_normal((6, 40, 50)).astype(np.float32)
    if trans:
        bt = np.ascontiguousarray(b.transpose(0, 2, 1))
        got = _run(lambda a, bt, x: a @ bt.transpose(1, 2) + x, a, bt, x)
    else:
        got = _run(lambda a, b, x: a @ b + x, a, b, x)
    np.testing.assert_allclose(got, a @ b + x, rtol=1e-4, atol=1e-4)


def test_add_epilogue_gradients_match_numpy():
    # y = x @ w + b; the backward's dW/dX matmuls accumulate into existing grads
    rng = np.random.default_rng(3)
    xn = rng.standard_normal((64, 32)).astype(np.float32)
    wn = rng.standard_normal((32, 48)).astype(np.float32)
    bn = rng.standard_normal((48,)).astype(np.float32)
    x, w, b = (st.tensor(v, requires_grad=True) for v in (xn, wn, bn))

    def f(x, w, b):
        h = x @ w + b
        r = h @ w.t() + x
        return (r * r).sum()

    cf = st.compile(f, backend="llvm")
    cf(x, w, b).backward()
    for p in (x, w, b):
        p.grad = None
    loss = cf(x, w, b)               # compiled forward and backward graphs
    loss.backward()
    torch = pytest.importorskip("torch")
    xt, wt, bt = (torch.tensor(v, requires_grad=True) for v in (xn, wn, bn))
    rt = (xt @ wt + bt) @ wt.t() + xt
    lt = (rt * rt).sum()
    lt.backward()
    np.testing.assert_allclose(loss.item(), lt.item(), rtol=1e-5)
    for a, t in ((x, xt), (w, wt), (b, bt)):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_the_add_epilogue_cases_were_fused():
    # the full-X, bias and row cases above make matmul_add kernels (the path
    # under test); runs after them in file order
    assert _run.fused >= 20


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["plain", "a_t", "b_t", "strided_a", "epilogue"])
def test_long_k_split(dtype, layout):
    # K >> M, N: the K range is split across threads, partial products summed
    M, K, N = 24, 9000, 40
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    if layout == "plain":
        got = _run(lambda a, b: a @ b, a, b)
        ref = a @ b
    elif layout == "a_t":
        at = np.ascontiguousarray(a.T)
        got = _run(lambda at, b: at.t() @ b, at, b)
        ref = a @ b
    elif layout == "b_t":
        bt = np.ascontiguousarray(b.T)
        got = _run(lambda a, bt: a @ bt.t(), a, bt)
        ref = a @ b
    elif layout == "strided_a":
        a2 = rng.standard_normal((M, 2 * K)).astype(dtype)
        got = _run(lambda a2, b: a2[:, ::2] @ b, a2, b)
        ref = a2[:, ::2] @ b
    else:
        got = _run(lambda a, b: (a @ b).relu() * 2.0, a, b)
        ref = np.maximum(a @ b, 0) * 2.0
    tol = 2e-3 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.sqrt(K))
