"""symtrace.autocast (runtime/autocast.c): the state and its errors, the op
policy against PyTorch's lists, dtypes and values against torch.autocast on
the CPU, backward, and compiled graphs (casts recorded, guarded)."""
import numpy as np
import pytest

import symtrace as st
from symtrace import _C

F = st.nn.functional
try:
    import torch
    TF = torch.nn.functional
except ImportError:     # py3.12 here has no torch: the comparisons with it skip
    torch = TF = None
NEEDS_TORCH = pytest.mark.skipif(torch is None, reason="no PyTorch")

ON_HOOK = pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")
CPU_BACKENDS = [b for b in ("interp", "llvm", "eager") if b == "eager" or _C._fe_backend_available(b)]


def _t(x):
    return torch.tensor(np.asarray(x.float().numpy() if x.dtype in (st.bfloat16, st.float16) else x.numpy()))


def _dt(d):
    return {torch.bfloat16: st.bfloat16, torch.float16: st.float16, torch.float32: st.float32,
            torch.float64: st.float64, torch.int64: st.int64}[d]


# ---------------- state and errors ----------------
def test_state_defaults_nesting_and_restore():
    assert not st.is_autocast_enabled("cpu") and not st.is_autocast_enabled("cuda")
    assert not st.is_autocast_enabled()
    assert st.get_autocast_dtype("cpu") is st.bfloat16
    assert st.get_autocast_dtype("cuda") is st.float16     # PyTorch's defaults
    with st.autocast("cpu"):
        assert st.is_autocast_enabled("cpu") and not st.is_autocast_enabled("cuda")
        with st.autocast("cpu", dtype=st.float16):
            assert st.get_autocast_dtype("cpu") is st.float16
            with st.autocast("cpu", enabled=False):
                assert not st.is_autocast_enabled("cpu")
            assert st.is_autocast_enabled("cpu")
        assert st.get_autocast_dtype("cpu") is st.bfloat16
    assert not st.is_autocast_enabled("cpu")
    with pytest.raises(KeyError):
        with st.autocast("cpu"):
            raise KeyError("x")
    assert not st.is_autocast_enabled("cpu")              # restored on the way out
    assert st.amp.autocast is st.autocast


def test_decorator():
    @st.autocast("cpu")
    def f(a, b):
        return a @ b, st.is_autocast_enabled("cpu")

    y, on = f(st.randn(2, 3), st.randn(3, 2))
    assert on and y.dtype is st.bfloat16
    assert not st.is_autocast_enabled("cpu")
    assert f.__name__ == "f"


@pytest.mark.parametrize("args, kwargs, exc, words", [
    (("tpu",), {}, ValueError, "'tpu'"),
    ((0,), {}, ValueError, "int"),
    (("cpu",), {"dtype": st.float32}, ValueError, "float32"),
    (("cpu",), {"dtype": "bfloat16"}, TypeError, "str"),
    (("cpu",), {"enabled": 1}, TypeError, "enabled"),
])
def test_bad_arguments(args, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        st.autocast(*args, **kwargs)
    with pytest.raises(ValueError, match="'xla'"):
        st.is_autocast_enabled("xla")
    assert not st.is_autocast_enabled("cpu")


def test_one_object_entered_again_inside_itself():
    ac = st.autocast("cpu")
    with ac:
        with st.autocast("cpu", enabled=False):
            with ac:
                assert st.is_autocast_enabled("cpu")
            assert not st.is_autocast_enabled("cpu")
        assert st.is_autocast_enabled("cpu")
    assert not st.is_autocast_enabled("cpu")


# ---------------- the policy, against PyTorch's lists ----------------
LOWER = {"MATMUL", "LINEAR"}
FP32_CPU = {"PROD", "CROSS_ENTROPY"}
FP32_CUDA = {"EXP", "LOG", "POW", "RECIPROCAL", "RSQRT", "LAYER_NORM", "LOGSUMEXP", "CROSS_ENTROPY",
             "SOFTMAX", "LOG_SOFTMAX", "SUM", "PROD"}


def test_policy_tables():
    ops = {n[3:]: getattr(_C, n) for n in dir(_C) if n.startswith("OP_") and isinstance(getattr(_C, n), int)}
    assert "MATMUL" in ops and "SCATTER_ADD" in ops
    for name, op in ops.items():
        want_cpu = "lower" if name in LOWER else "fp32" if name in FP32_CPU else "none"
        want_cuda = ("lower" if name in LOWER else "fp32" if name in FP32_CUDA else
                     "promote" if name == "SCATTER_ADD" else "none")
        assert _C._autocast_policy("cpu", op) == want_cpu, name
        assert _C._autocast_policy("cuda", op) == want_cuda, name


# ---------------- dtypes and values against torch.autocast (CPU) ----------------
CASES = [
    ("matmul", lambda m, a, b, w, x16: m.matmul(a, b)),
    ("@ batched", lambda m, a, b, w, x16: a.reshape(2, 3, 4) @ b.reshape(2, 4, 3)),
    ("linear", lambda m, a, b, w, x16: (F if m is st else TF).linear(a, w, w[:, 0])),
    ("linear 3-d", lambda m, a, b, w, x16: (F if m is st else TF).linear(a.reshape(2, 3, 4), w)),
    ("product + float32", lambda m, a, b, w, x16: m.matmul(a, b)[:, :4] + a),
    ("bf16 * 2", lambda m, a, b, w, x16: x16 * 2),
    ("softmax of bf16", lambda m, a, b, w, x16: x16.softmax(-1)),
    ("sum of bf16", lambda m, a, b, w, x16: x16.sum()),
    ("prod of bf16", lambda m, a, b, w, x16: (x16 / 4 + 1).prod(-1)),
    ("exp of bf16", lambda m, a, b, w, x16: x16.exp()),
    ("layer_norm of bf16", lambda m, a, b, w, x16: (F if m is st else TF).layer_norm(x16, (4,), w[0], w[1])),
    ("cross_entropy of bf16", lambda m, a, b, w, x16: (F if m is st else TF).cross_entropy(
        x16, (st if m is st else torch).tensor([0, 1, 2, 3, 0, 1]))),
    ("float64 product", lambda m, a, b, w, x16: m.matmul(a.double(), b.double())),
]


@NEEDS_TORCH
@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_cpu_dtypes_and_values_match_torch(name, fn):
    st.manual_seed(3)
    a, b, w = st.randn(6, 4), st.randn(4, 6), st.randn(4, 4)
    x16 = st.randn(6, 4).to(st.bfloat16)
    ta, tb, tw = _t(a), _t(b), _t(w)
    tx16 = _t(x16).bfloat16()
    with st.autocast("cpu"):
        y = fn(st, a, b, w, x16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = fn(torch, ta, tb, tw, tx16)
    assert y.dtype is _dt(ty.dtype), (name, y.dtype, ty.dtype)
    tol = 2e-2 if y.dtype in (st.bfloat16, st.float16) else 1e-5
    np.testing.assert_allclose(y.float().numpy(), ty.float().numpy(), rtol=tol, atol=tol)


def test_float16_and_outside_device_type():
    a, b = st.randn(3, 5), st.randn(5, 2)
    with st.autocast("cpu", dtype=st.float16):
        assert (a @ b).dtype is st.float16
    with st.autocast("cuda", dtype=st.bfloat16):            # CPU tensors: the CPU's state rules
        assert (a @ b).dtype is st.float32


# ---------------- backward ----------------
def _mlp(m, x, w1, b1, w2, g, beta, t):
    f = F if m is st else TF
    h = f.gelu(f.linear(x, w1, b1))
    h = f.layer_norm(f.linear(h, w2) + x, (8,), g, beta)
    return f.cross_entropy(h, t)


@NEEDS_TORCH
def test_backward_grads_float32_and_match_torch():
    st.manual_seed(7)
    ps = [st.randn(4, 8), st.randn(16, 8) * 0.3, st.randn(16) * 0.1, st.randn(8, 16) * 0.3,
          st.randn(8) + 1, st.randn(8) * 0.1]
    t = st.tensor([0, 3, 5, 7])
    sp = [p.detach().requires_grad_(True) for p in ps]
    tp = [_t(p).requires_grad_(True) for p in ps]
    with st.autocast("cpu"):
        loss = _mlp(st, *sp, t)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tloss = _mlp(torch, *tp, torch.tensor([0, 3, 5, 7]))
    assert loss.dtype is st.float32 and tloss.dtype is torch.float32
    loss.backward()
    tloss.backward()
    assert abs(loss.item() - tloss.item()) <= 2e-2 * abs(tloss.item())
    for k, (p, q) in enumerate(zip(sp, tp)):
        assert p.grad.dtype is st.float32, k
        gmax = float(q.grad.abs().max())
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=5e-2, atol=3e-2 * gmax, err_msg=str(k))


def test_backward_runs_without_autocast():
    """A backward started inside the region runs in the forward's dtypes:
    the same gradients as one started outside."""
    st.manual_seed(8)
    x, w = st.randn(5, 6, requires_grad=True), st.randn(3, 6, requires_grad=True)
    with st.autocast("cpu"):
        y = (F.linear(x, w).float().exp()).sum()
        y.backward()
    g_in = x.grad.numpy().copy(), w.grad.numpy().copy()
    x.grad = w.grad = None
    with st.autocast("cpu"):
        y = (F.linear(x, w).float().exp()).sum()
    y.backward()
    np.testing.assert_array_equal(g_in[0], x.grad.numpy())
    np.testing.assert_array_equal(g_in[1], w.grad.numpy())


# ---------------- compiled graphs ----------------
def _step(x, w1, b1, w2, g, beta, t):
    with st.autocast("cpu"):
        h = F.gelu(F.linear(x, w1, b1))
        inner = F.linear(h, w2)
        with st.autocast("cpu", enabled=False):
            exact = x.double().sum().float()                # float32 region inside
            p32 = x @ x.T
        loss = F.cross_entropy(F.layer_norm(inner + x, (8,), g, beta), t)
    return loss + 0 * exact, inner.dtype, p32.dtype


@ON_HOOK
@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_compiled_autocast_inside_matches_eager(backend):
    st.reset()
    st.manual_seed(9)
    ps = [st.randn(4, 8), st.randn(16, 8) * 0.3, st.randn(16) * 0.1, st.randn(8, 16) * 0.3,
          st.randn(8) + 1, st.randn(8) * 0.1]
    t = st.tensor([0, 3, 5, 7])
    e = [p.detach().requires_grad_(True) for p in ps]
    c = [p.detach().requires_grad_(True) for p in ps]
    le, d1, d2 = _step(*e, t)
    le.backward()
    fn = st.compile(_step, backend=backend, fullgraph=True)
    for _ in range(2):                                      # traced, then the compiled graph
        for p in c:
            p.grad = None
        lc, c1, c2 = fn(*c, t)
        lc.backward()
        assert (c1, c2) == (st.bfloat16, st.float32) == (d1, d2)
        np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5)
        for p, q in zip(c, e):
            assert p.grad.dtype is st.float32
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-4)
    assert not st.is_autocast_enabled("cpu")


@ON_HOOK
def test_compiled_graph_guards_the_autocast_state():
    st.reset()

    def f(a, b):
        return (a @ b) * 2

    fn = st.compile(f)
    a, b = st.randn(3, 4), st.randn(4, 5)
    t0 = _C._fe_stats()["translations"]
    assert fn(a, b).dtype is st.float32
    with st.autocast("cpu"):
        y = fn(a, b)
        assert y.dtype is st.bfloat16
        assert fn(a, b).dtype is st.bfloat16                # reused
        with st.autocast("cpu", dtype=st.float16):
            assert fn(a, b).dtype is st.float16
    assert fn(a, b).dtype is st.float32                     # the first graph again
    assert _C._fe_stats()["translations"] - t0 == 3
    np.testing.assert_allclose(y.float().numpy(), ((a @ b) * 2).numpy(), rtol=2e-2, atol=2e-2)
    with st.autocast("cpu"):
        ex = st.explain(f, a, b)
    assert "AUTOCAST: cpu bfloat16, cuda off" in str(ex)
    assert "AUTOCAST" not in str(st.explain(f, a, b))


@ON_HOOK
def test_compiled_frame_that_changes_autocast_falls_back():
    st.reset()
    ac = st.autocast("cpu")

    def f(a):
        ac.__enter__()                                      # left on when the frame returns
        return a @ a.T

    fn = st.compile(f)
    try:
        y = fn(st.randn(3, 4))
        assert y.dtype is st.bfloat16 and st.is_autocast_enabled("cpu")
    finally:
        ac.__exit__(None, None, None)
    assert not st.is_autocast_enabled("cpu")


@pytest.mark.skipif(not _C._fe_supported() or not _C._fe_backend_available("cudaemu"),
                    reason="no frame hook, or no C++ compiler for cudaemu")
def test_compiled_autocast_on_emulated_cuda_kernels():
    """The nvrtc backend's kernels (bfloat16 products through the cuBLAS
    plans' host reference, then the epilogues) agree with eager."""
    st.reset()
    st.manual_seed(10)
    ps = [st.randn(4, 8), st.randn(16, 8) * 0.3, st.randn(16) * 0.1, st.randn(8, 16) * 0.3,
          st.randn(8) + 1, st.randn(8) * 0.1]
    t = st.tensor([0, 3, 5, 7])
    le = _step(*ps, t)[0]
    fn = st.compile(_step, backend="cudaemu")
    for _ in range(2):
        lc = fn(*ps, t)[0]
        np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-4)


# ---------------- 16-bit composites round once (PyTorch's opmath) ----------------
def _ulp_bf16(v):
    return np.exp2(np.floor(np.log2(np.maximum(np.abs(v), 1e-30))) - 7)


@NEEDS_TORCH
@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("backend", ["eager"] + [b for b in ("llvm", "interp") if _C._fe_backend_available(b)])
def test_bfloat16_composites_round_once(name, backend):
    """Each result within one bfloat16 step of the exact value, and most of
    them the exact value rounded: computed in float32, rounded at the end."""
    st.manual_seed(11)
    x = (st.randn(32, 128) * 3).to(st.bfloat16)
    fns = {"gelu": lambda v: F.gelu(v), "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
           "softmax": lambda v: v.softmax(-1), "log_softmax": lambda v: v.log_softmax(-1),
           "logsumexp": lambda v: st.logsumexp(v, -1)}
    tfs = {"gelu": lambda v: TF.gelu(v), "gelu_tanh": lambda v: TF.gelu(v, approximate="tanh"),
           "softmax": lambda v: v.softmax(-1), "log_softmax": lambda v: v.log_softmax(-1),
           "logsumexp": lambda v: torch.logsumexp(v, -1)}
    fn = fns[name] if backend == "eager" or not _C._fe_supported() else st.compile(fns[name], backend=backend)
    y = fn(x)
    assert y.dtype is st.bfloat16
    exact = tfs[name](torch.tensor(x.float().numpy()).double())
    want = exact.to(torch.bfloat16).float().numpy()
    got = y.float().numpy()
    # (+1e-6: gelu's far tail, 1 + erf(x) cancels in float32 as in PyTorch's kernel)
    assert np.all(np.abs(got - exact.numpy()) <= _ulp_bf16(exact.numpy()) + 1e-6), name
    assert (got == want).mean() >= 0.9, (name, (got == want).mean())


class _MM(st.autograd.Function):
    """A product with its own backward, in float32 (autocast is off there)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        g = g.float()
        return g @ b.T, a.T @ g


@ON_HOOK
@pytest.mark.parametrize("backend", [b for b in CPU_BACKENDS if b != "eager"])
def test_custom_function_backward_runs_without_autocast_compiled_too(backend):
    """An autograd.Function's backward runs with autocast off, eagerly (the
    engine) and in a compiled graph (its traced region) alike."""
    st.reset()
    st.manual_seed(12)
    a0, b0 = st.randn(6, 5), st.randn(5, 4)

    def f(a, b):
        with st.autocast("cpu"):
            y = _MM.apply(a, b)
        return (y.float() ** 2).sum()

    grads = []
    for fn in (f, st.compile(f, backend=backend, fullgraph=True)):
        for _ in range(2):
            a, b = a0.detach().requires_grad_(True), b0.detach().requires_grad_(True)
            fn(a, b).backward()
            assert a.grad.dtype is st.float32
            grads.append((a.grad.numpy(), b.grad.numpy()))
    for ga, gb in grads[1:]:
        np.testing.assert_allclose(ga, grads[0][0], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(gb, grads[0][1], rtol=1e-6, atol=1e-6)


# ---------------- custom_fwd / custom_bwd ----------------
def _amp_fn(m, cast=True, record=True):
    amp = st.amp if m is st else torch.amp
    base = st.autograd.Function if m is st else torch.autograd.Function
    # record=False: nothing noted (appending to `seen` is a Python side effect,
    # which makes the Function a graph break under symtrace.compile)
    seen = []
    note = seen.append if record else (lambda item: None)

    class MM(base):
        @staticmethod
        @amp.custom_fwd(device_type="cpu", cast_inputs=m.float32 if cast else None)
        def forward(ctx, a, b):
            note(("fwd", m.is_autocast_enabled("cpu"), str(a.dtype).split(".")[-1]))
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            note(("bwd", m.is_autocast_enabled("cpu"), str((g @ b.T).dtype).split(".")[-1]))
            return g @ b.T, a.T @ g
    return MM, seen


@NEEDS_TORCH
@pytest.mark.parametrize("cast", [True, False], ids=["cast_inputs", "no_cast"])
def test_custom_fwd_bwd_as_torch(cast):
    a0 = np.random.default_rng(5).standard_normal((6, 5)).astype(np.float32)
    b0 = np.random.default_rng(6).standard_normal((5, 4)).astype(np.float32)
    res = {}
    for m in (st, torch):
        MM, seen = _amp_fn(m, cast)
        a, b = m.tensor(a0).requires_grad_(True), m.tensor(b0).requires_grad_(True)
        ac = st.autocast("cpu") if m is st else torch.autocast("cpu", dtype=torch.bfloat16)
        with ac:
            y = MM.apply(a, b)
            z = (y.float() * 2).sum()
        z.backward()
        res[m.__name__] = (seen, str(y.dtype).split(".")[-1], str(a.grad.dtype).split(".")[-1],
                           a.grad.detach().float().numpy(), b.grad.detach().float().numpy())
    s, t = res["symtrace"], res["torch"]
    want = ([("fwd", False, "float32"), ("bwd", False, "float32")] if cast else
            [("fwd", True, "float32"), ("bwd", True, "bfloat16")])
    assert s[0] == t[0] == want
    assert s[1:3] == t[1:3] == ("float32" if cast else "bfloat16", "float32")
    np.testing.assert_allclose(s[3], t[3], rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(s[4], t[4], rtol=2e-2, atol=2e-2)


@ON_HOOK
@pytest.mark.parametrize("backend", [b for b in CPU_BACKENDS if b != "eager"])
def test_custom_fwd_bwd_compiled_as_eager(backend):
    """No cast_inputs: the backward runs under the forward's autocast, in a
    compiled graph's traced region as eagerly (its bfloat16 products give the
    eager gradients; the compiled Function records nothing, as a recording one
    is a graph break)."""
    st.reset()
    a0, b0 = st.randn(6, 5), st.randn(5, 4)
    out = []
    for compiled in (False, True):
        MM, seen = _amp_fn(st, cast=False, record=not compiled)

        def f(a, b):
            with st.autocast("cpu"):
                y = MM.apply(a, b)
            return (y.float() * 2).sum(), y.dtype

        fn = st.compile(f, backend=backend, fullgraph=True) if compiled else f
        for _ in range(2):
            a, b = a0.detach().requires_grad_(True), b0.detach().requires_grad_(True)
            z, ydt = fn(a, b)
            z.backward()
            assert ydt is st.bfloat16 and a.grad.dtype is st.float32
            out.append((a.grad.numpy(), b.grad.numpy()))
        assert compiled or ("bwd", True, "bfloat16") in seen
    for ga, gb in out[1:]:
        np.testing.assert_allclose(ga, out[0][0], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(gb, out[0][1], rtol=1e-6, atol=1e-6)
