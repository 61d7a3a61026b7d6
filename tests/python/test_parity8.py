# torch parity, eighth batch: float16/bfloat16 baddbmm and addmv add the input
# to the float32 product and round once (eager and compiled); the strides of
# results with size-1 dims (elementwise ops, clone, *_like(preserve_format))
# as torch's TensorIterator orders them (eager and compiled).
import numpy as np
import pytest

import symtrace as st
from symtrace import _C


def _backend():
    return "llvm" if _C._fe_backend_available("llvm") else "interp"


def npf(t):
    return np.array(t.float().numpy())


# ---------------- half baddbmm / addmv: one rounding ----------------
def test_bf16_baddbmm_addmv_round_once_expected():
    bf = st.bfloat16
    b = st.tensor([1.0078125], dtype=bf)
    m1 = st.tensor([[[1.0, 1.0]]], dtype=bf)
    m2 = st.tensor([[[1.0], [1.0078125]]], dtype=bf)
    # 1.0078125 + 2.0078125 = 3.015625 exactly (a bfloat16); the product
    # rounded first (2.0) gives 3.0
    assert st.baddbmm(b, m1, m2).float().tolist() == [[[3.015625]]]
    assert st.addmv(b, m1[0], m2[0, :, 0]).float().tolist() == [3.015625]
    assert b.addmv(m1[0], m2[0, :, 0]).float().tolist() == [3.015625]
    assert b.expand(1, 1, 1).baddbmm(m1, m2).float().tolist() == [[[3.015625]]]


HALF_CASES = [   # (batch, n, k, m, input shape, beta, alpha)
    (1, 1, 2, 1, (1,), 1, 1),
    (2, 3, 4, 5, (3, 5), 1, 1),
    (3, 4, 7, 2, (3, 4, 2), 1, 1),
    (2, 5, 3, 4, (1, 4), 0.5, 2),
    (1, 3, 6, 3, (3, 3), 0, 1),
    (4, 2, 5, 3, (4, 2, 3), 2, 0.25),
]


def _half_data(dtype_np_seed, shapes):
    rng = np.random.default_rng(dtype_np_seed)
    # values with few mantissa bits: products and their sums are exact in
    # float32, so any summation order gives torch's float32 accumulator
    return [np.round(rng.standard_normal(s) * 64) / 64 for s in shapes]


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", HALF_CASES)
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_half_baddbmm_addmv_bit_equal_to_torch(dt, case, compiled):
    torch = pytest.importorskip("torch")
    if compiled and not _C._fe_supported():
        pytest.skip("no frame hook on this Python")
    B, n, k, m, ish, beta, alpha = case
    x, b1, b2, v, xi = _half_data(B * 100 + k, [ish, (B, n, k), (B, k, m), (k,), (n,)])
    T = lambda a: torch.tensor(a, dtype=getattr(torch, dt))  # noqa: E731
    S = lambda a: st.tensor(a.astype(np.float32)).to(getattr(st, dt))  # noqa: E731

    def f(inp, a1, a2, vin, vec):
        return (st.baddbmm(inp, a1, a2, beta=beta, alpha=alpha),
                st.addmv(vin, a1[0], vec, beta=beta, alpha=alpha))
    fn = st.compile(f, backend=_backend()) if compiled else f
    rb, rv = fn(S(x), S(b1), S(b2), S(xi), S(v))
    tb = torch.baddbmm(T(x), T(b1), T(b2), beta=beta, alpha=alpha)
    tv = torch.addmv(T(xi), T(b1)[0], T(v), beta=beta, alpha=alpha)
    assert rb.dtype == getattr(st, dt) and rv.dtype == getattr(st, dt)
    np.testing.assert_array_equal(npf(rb), tb.float().numpy())
    np.testing.assert_array_equal(npf(rv), tv.float().numpy())


def test_half_baddbmm_gradients_close_to_float32():
    a = st.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4))
    b = st.tensor(np.linspace(1, -1, 40, dtype=np.float32).reshape(2, 4, 5))
    x = st.tensor(np.ones((3, 5), np.float32))
    grads = []
    for dt in (st.float32, st.bfloat16):
        ins = [t.to(dt).detach().requires_grad_(True) for t in (x, a, b)]
        st.baddbmm(*ins, beta=0.5).sum().backward()
        assert all(t.grad.dtype == dt for t in ins)
        grads.append([npf(t.grad) for t in ins])
    for g32, g16 in zip(*grads):
        np.testing.assert_allclose(g16, g32, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("n,k", [(8, 8), (32, 64), (64, 128), (1, 300)])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.3, 1.7), (0, 0.7)])
def test_half_addmv_random_bit_equal_to_torch(dt, n, k, beta, alpha):
    # torch's half gemv rounds beta, alpha and input * beta to the dtype
    # first (bfloat16 beyond 4096 matrix elements: oneDNN, in float32)
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n * k)
    x, M, v = (torch.tensor(rng.standard_normal(s).astype(np.float32)).to(getattr(torch, dt))
               for s in [(n,), (n, k), (k,)])
    S = lambda t: st.tensor(t.float().numpy()).to(getattr(st, dt))  # noqa: E731
    r = st.addmv(S(x), S(M), S(v), beta=beta, alpha=alpha)
    t = torch.addmv(x, M, v, beta=beta, alpha=alpha)
    np.testing.assert_array_equal(npf(r), t.float().numpy())


# ---------------- size-1 dims' strides ----------------
def test_size1_strides_expected_without_torch():
    x = st.zeros(2, 1, 4).transpose(0, 1)          # (1, 2, 4), strides (4, 4, 1)
    assert x.stride() == (4, 4, 1)
    for r in (x * 2, x.clone(), st.zeros_like(x), st.empty_like(x), x.int() + 1, x.int(),
              x + st.ones(4)):
        assert r.stride() == (4, 4, 1)
    # one shape, all contiguous: TensorIterator's fast path, row-major
    assert x.sin().stride() == (8, 4, 1) and (x * x).stride() == (8, 4, 1)


_OPS8 = {
    "mul2": lambda L, x: x * 2, "add_self": lambda L, x: x + x, "sin": lambda L, x: x.sin(),
    "clone": lambda L, x: x.clone(), "int": lambda L, x: x.int(), "int_add": lambda L, x: x.int() + 1,
    "neg_int": lambda L, x: -(x.int()), "zeros_like": lambda L, x: L.zeros_like(x),
    "empty_like": lambda L, x: L.empty_like(x), "bcast": lambda L, x: x + L.ones(x.shape[-1]),
    "double": lambda L, x: x.double(), "where": lambda L, x: L.where(x > 0, x, 0.0),
}


def _cases8(n, seed):
    """(shape, permutation, dim expanded to 3, dim narrowed to 1) with size-1 dims; the
    narrowed dim's stride is kept only where it is a product of the sizes inside it
    (a copy of any other stride of a size-1 dim: see the report)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        nd = int(rng.integers(2, 5))
        shape = tuple(int(rng.choice([1, 1, 2, 3])) for _ in range(nd))
        perm = tuple(int(i) for i in rng.permutation(nd))
        ed = int(rng.integers(0, nd)) if rng.random() < 0.3 else None
        out.append((shape, perm, ed))
    return out


def _make8(L, shape, perm, ed):
    x = L.arange(int(np.prod(shape)), dtype=L.float32).reshape(shape).permute(perm)
    if ed is not None and x.shape[ed] == 1:
        sh = list(x.shape)
        sh[ed] = 3
        x = x.expand(sh)
    return x


@pytest.mark.parametrize("name", sorted(_OPS8))
def test_size1_strides_sweep_match_torch(name):
    torch = pytest.importorskip("torch")
    f = _OPS8[name]
    for shape, perm, ed in _cases8(150, 3):
        xt, xs = _make8(torch, shape, perm, ed), _make8(st, shape, perm, ed)
        assert xs.stride() == xt.stride()
        assert f(st, xs).stride() == f(torch, xt).stride(), (name, shape, perm, ed, xt.stride())


@pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")
@pytest.mark.parametrize("name", ["mul2", "clone", "int_add", "bcast", "sin", "zeros_like"])
def test_size1_strides_compiled_as_eager(name):
    f = _OPS8[name]
    cf = st.compile(lambda x: f(st, x), backend=_backend())
    for shape, perm, ed in _cases8(12, 5) + [((2, 1, 4), (1, 0, 2), None)]:
        x = _make8(st, shape, perm, ed)
        r, e = cf(x), f(st, x)
        assert r.stride() == e.stride(), (name, shape, perm, ed, x.stride())
        if name not in ("zeros_like",):
            np.testing.assert_array_equal(r.numpy(), e.numpy())
