# cat and stack under symtrace.compile: an in-place write into a slice
# traces to slice_scatter (ir/ops.c), and a traced cat, the chain
# full -> slice_scatter -> ... -> slice_scatter whose slices tile the
# result, lowers to one store per part, written by the kernel that
# computes the part (fusion/fuse.c "slab chains"; the kernel's output
# buffer bound to the slice at launch, st_kbuf.slab): a stack of n norms
# is n reduction kernels, the norm of that stack one more. Values against
# numpy under every fusion setting, on llvm, interp and cudaemu (the nvrtc
# backend's CUDA C run on the CPU, where a C++ compiler is there). Also:
# symtrace.slice_scatter against torch (values and gradients), partial
# slice writes (no chain) still right, a trace of many slice writes linear
# in their count, and the llvm backend compiling each distinct kernel once
# (its cache is per kernel: a graph of 30 norms of different sizes is one
# compiled reduction).
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import symtrace as st
from symtrace import _C

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SETTINGS = [dict(fusion=1), dict(fusion=0), dict(fusion=1, fuse_reductions=0),
            dict(fusion=1, max_fused_ops=2)]
BACKENDS = ["llvm", "interp", "cudaemu"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    if not _C._fe_backend_available(request.param):
        pytest.skip(f"{request.param} backend not available")
    return request.param


def run(g, ins, backend, opts):
    with st.config.options(**opts):
        cg = g.compile(backend=backend)
        outs = cg.run(*ins)
    return [o.numpy() for o in outs], cg


def kernel_names(cg):
    return [k.split(":")[0] for k in cg.kernel_ir().split("kernel ")[1:]]


SHAPES = [(7, 5), (5,), (1,), (3, 4, 2), (16,), (2, 3)]


def grads(n, seed=0):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(SHAPES[i % len(SHAPES)]).astype(np.float32) for i in range(n)]
    return arrs, [st.tensor(a) for a in arrs]


def norm(x):
    return (x * x).sum().sqrt()


def test_stack_of_reductions_is_one_kernel_each(backend):
    n = 24
    arrs, xs = grads(n)
    g, ins = st.memory.trace_graph(lambda xs: st.stack([norm(x) for x in xs]), xs)
    want = np.array([np.sqrt((a.astype(np.float64) ** 2).sum()) for a in arrs])
    for opts in SETTINGS:
        got, cg = run(g, ins, backend, opts)
        np.testing.assert_allclose(got[0], want, rtol=1e-5, err_msg=str(opts))
        if opts == dict(fusion=1):
            # each reduction stores its norm into its element: no kernel
            # fills the result, copies a part or scatters a slice
            assert cg.num_kernels == n, cg.kernel_ir()
            assert all("slice_scatter" not in k and "full" not in k and "copy" not in k
                       for k in kernel_names(cg)), kernel_names(cg)


def test_norm_of_stacked_norms(backend):
    # get_total_norm's form (torch's): the norm of the stack of the norms
    n = 30
    arrs, xs = grads(n, seed=1)

    def total(xs):
        t = st.stack([norm(x) for x in xs])
        return (t * t).sum().sqrt()

    g, ins = st.memory.trace_graph(total, xs)
    want = np.sqrt(sum((a.astype(np.float64) ** 2).sum() for a in arrs))
    for opts in SETTINGS:
        got, cg = run(g, ins, backend, opts)
        np.testing.assert_allclose(got[0], want, rtol=1e-5, err_msg=str(opts))
        if opts == dict(fusion=1):
            assert cg.num_kernels == n + 1, cg.kernel_ir()


def test_tensor_norm_is_one_kernel():
    # Tensor.norm's where()s read 0-d full()s (its 0 and 1): they join the
    # reduction's kernel instead of splitting its epilogue into three
    x = st.randn(6, 7)
    g, ins = st.memory.trace_graph(lambda x: x.norm(), x)
    got, cg = run(g, ins, "llvm" if _C._fe_backend_available("llvm") else "interp", dict(fusion=1))
    np.testing.assert_allclose(got[0], np.linalg.norm(x.numpy().astype(np.float64)), rtol=1e-5)
    assert cg.num_kernels == 1, cg.kernel_ir()


@pytest.mark.parametrize("dim", [0, 1])
def test_cat_of_mixed_parts(backend, dim):
    rng = np.random.default_rng(2)
    xa = rng.standard_normal((4, 6)).astype(np.float32)
    ya = rng.standard_normal((4, 6)).astype(np.float32)
    wa = rng.standard_normal((6, 4)).astype(np.float32)

    def f(x, y, w):
        parts = [x, y * 2.0 + 1.0, w.t().contiguous() if dim else w.t(), (y @ w) @ w.t(),
                 y.sum(1, keepdim=True).expand(4, 6) * 1.0]
        return st.cat(parts, dim) * 3.0

    def ref(x, y, w):
        parts = [x, y * 2.0 + 1.0, w.T, (y @ w) @ w.T, np.broadcast_to(y.sum(1, keepdims=True), (4, 6))]
        return np.concatenate(parts, dim) * 3.0

    g, ins = st.memory.trace_graph(f, st.tensor(xa), st.tensor(ya), st.tensor(wa))
    want = ref(xa.astype(np.float64), ya.astype(np.float64), wa.astype(np.float64))
    for opts in SETTINGS:
        got, cg = run(g, ins, backend, opts)
        np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-5, err_msg=str(opts))
        if opts == dict(fusion=1):
            assert not any("slice_scatter" in k for k in kernel_names(cg)), kernel_names(cg)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack_along_any_dim(backend, dim):
    rng = np.random.default_rng(3)
    arrs = [rng.standard_normal((3, 5)).astype(np.float32) for _ in range(4)]

    def f(*xs):
        return st.stack([x.exp() for x in xs] + [xs[0]], dim)

    g, ins = st.memory.trace_graph(f, *[st.tensor(a) for a in arrs])
    want = np.stack([np.exp(a.astype(np.float64)) for a in arrs] + [arrs[0]], dim)
    for opts in SETTINGS:
        got, _ = run(g, ins, backend, opts)
        np.testing.assert_allclose(got[0], want, rtol=1e-5, err_msg=str(opts))


def test_partial_slice_writes_stay_right(backend):
    # no chain: the base is an input's copy, a slice is written twice, the
    # partial result is read between two writes, a strided slice
    rng = np.random.default_rng(4)
    xa = rng.standard_normal((6, 8)).astype(np.float32)

    def f(x):
        out = st.zeros(6, 8)
        out[0:2] = x[0:2] * 2.0
        s = out.sum()
        out[2:6] = x[2:6] + s
        out[1:3] = -x[1:3]
        y = x.clone()
        y[:, 1:7:3] = x[:, 0:2] * 10.0
        return out, y

    ref = np.zeros((6, 8))
    x64 = xa.astype(np.float64)
    ref[0:2] = x64[0:2] * 2.0
    s = ref.sum()
    ref[2:6] = x64[2:6] + s
    ref[1:3] = -x64[1:3]
    y = x64.copy()
    y[:, 1:7:3] = x64[:, 0:2] * 10.0
    g, ins = st.memory.trace_graph(f, st.tensor(xa))
    for opts in SETTINGS:
        got, _ = run(g, ins, backend, opts)
        np.testing.assert_allclose(got[0], ref, rtol=1e-5, atol=1e-5, err_msg=str(opts))
        np.testing.assert_allclose(got[1], y, rtol=1e-6, err_msg=str(opts))


def test_compiled_stack_and_clip_match_eager():
    # symtrace.compile end to end: clip_grad_norm_'s total norm (a stack of
    # the per-gradient norms) as eager, and one launch per norm plus one
    st.manual_seed(0)
    ps = [st.randn(*SHAPES[i % len(SHAPES)]) for i in range(40)]
    for p in ps:
        p.grad = st.randn(*p.shape) * 3.0

    def total():
        return st.nn.utils.get_total_norm([p.grad for p in ps])

    eager = total().item()
    c = st.compile(total)
    c()
    with st.profiler.profile() as prof:
        got = c().item()
    assert got == pytest.approx(eager, rel=1e-6)
    assert sum(r.calls for r in prof.rows) == len(ps) + 1, prof.table()

    gs = [p.grad.numpy().copy() for p in ps]
    want = np.sqrt(sum((a.astype(np.float64) ** 2).sum() for a in gs))
    st.reset()
    clip = st.compile(lambda: st.nn.utils.clip_grad_norm_(ps, 1.0))
    n = clip().item()
    assert n == pytest.approx(want, rel=1e-5)
    for p, a in zip(ps, gs):
        np.testing.assert_allclose(p.grad.numpy(), a / (want + 1e-6), rtol=1e-5)


def test_slice_scatter_like_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for shape, src_shape, dim, start, end, step in [((4, 6), (4, 2), 1, 1, 5, 2), ((5, 3), (2, 3), 0, -3, -1, 1),
                                                    ((3, 4, 2), (3, 4, 2), 2, None, None, 1),
                                                    ((6,), (0,), 0, 4, 2, 1)]:
        xa = rng.standard_normal(shape).astype(np.float32)
        sa = rng.standard_normal(src_shape).astype(np.float32)
        x = st.tensor(xa, requires_grad=True)
        s = st.tensor(sa, requires_grad=True)
        tx = torch.tensor(xa, requires_grad=True)
        ts = torch.tensor(sa, requires_grad=True)
        r = st.slice_scatter(x, s, dim, start, end, step)
        tr = torch.slice_scatter(tx, ts, dim, start, end, step)
        np.testing.assert_array_equal(r.detach().numpy(), tr.detach().numpy())
        wa = rng.standard_normal(shape).astype(np.float32)
        (r * st.tensor(wa)).sum().backward()
        (tr * torch.tensor(wa)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="size equal to the slice of self"):
        st.slice_scatter(st.zeros(4), st.ones(3), start=0, end=2)
    # src is cast to input's dtype, as torch
    r = st.slice_scatter(st.zeros(4), st.ones(2, dtype=st.float64), start=1, end=3)
    assert r.dtype == st.float32 and r.tolist() == [0.0, 1.0, 1.0, 0.0]


def test_compiled_slice_scatter_gradients_match_eager():
    # slice_scatter's VJP (ir/autodiff.c) in a compiled graph: the base gets
    # the gradient with the slice zeroed, src the slice of it
    rng = np.random.default_rng(6)
    ba = rng.standard_normal((6, 4)).astype(np.float32)
    ya = rng.standard_normal((2, 4)).astype(np.float32)

    def f(b, y):
        out = st.slice_scatter(b * 1.5, y * 2.0, 0, 0, 2)
        out = st.slice_scatter(out, y.exp(), 0, 3, 5)
        return (out * out).sum()

    res = []
    for fn in (f, st.compile(f)):
        for _ in range(2):
            b = st.tensor(ba, requires_grad=True)
            y = st.tensor(ya, requires_grad=True)
            loss = fn(b, y)
            loss.backward()
        res.append((loss.item(), b.grad.numpy(), y.grad.numpy()))
    assert res[1][0] == pytest.approx(res[0][0], rel=1e-6)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6)
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-6)


def test_trace_of_many_slice_writes_is_linear():
    # each write into a slice of a tensor re-derives the other traced views
    # of it that can still be named: a cat's dropped slice views are not
    # (n writes once emitted O(n^2) statements, O(n^3) work)
    xs = [st.randn(()) for _ in range(1500)]
    t0 = time.perf_counter()
    g, _ = st.memory.trace_graph(lambda xs: st.stack(xs), xs)
    assert time.perf_counter() - t0 < 10.0
    assert g.num_statements <= 3 * len(xs) + 2


@pytest.mark.skipif(not _C._fe_backend_available("llvm"), reason="llvm backend not built")
def test_llvm_compiles_each_distinct_kernel_once(tmp_path):
    # 30 norms of tensors of different sizes are 30 kernels of one
    # structure: the cache (per kernel, sizes not in the key) compiles one,
    # and the on-disk cache holds one object for it
    code = (
        "import os, symtrace as st\n"
        "xs = [st.randn(k + 2, 3) for k in range(30)]\n"
        "g, ins = st.memory.trace_graph(lambda xs: [(x * x).sum().sqrt() for x in xs], xs)\n"
        "d = os.path.join(os.environ['SYMTRACE_CACHE_DIR'], 'kernels')\n"
        "before = set(os.listdir(d)) if os.path.isdir(d) else set()\n"
        "cg = g.compile(backend='llvm')\n"
        "outs = cg.run(*ins)\n"
        "print('KERNELS', cg.num_kernels, 'NEW', len(set(os.listdir(d)) - before))\n")
    env = dict(os.environ, SYMTRACE_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("KERNELS")][0].split()
    assert int(line[1]) == 30
    assert int(line[3]) == 1, r.stdout
