# Column reductions on the llvm backend (llvm_backend/codegen_colreduce.c):
# sums and means over the outer, large-stride dims of a tensor (bias and
# LayerNorm gradients: a sum over the token dims of [B, S, H]) take the
# column path, where the kept unit-stride dim is walked in blocks. Checked
# against numpy (float64) and the interp backend: plain sums and means over
# dim 0 and over (0, 1), views (transposed, strided, permuted so the row
# path is the contiguous one), float16/bfloat16/float64, empty and
# length-1 rows, outer sizes off the block size, broadcast inputs (stride
# 0 along the kept dim), fused per-point epilogues (GELU backward, the
# LayerNorm gradient kernel), coordinates (arange) inside the kernel, and
# gradients of compiled Linear+GELU and LayerNorm against interp.
import glob
import math

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F
from conftest import make, to_numpy


def run(fn, *inputs, backend):
    g, ins = st.memory.trace_graph(fn, *inputs)
    cg = g.compile(backend=backend)
    outs = cg.run(*ins)
    return [to_numpy(o) for o in outs], cg


def check(fn, ref, *trios, rtol=1e-5, atol=1e-5):
    """fn on the llvm and interp backends equals ref(*numpy inputs)."""
    ins = [t.st for t in trios]
    want = ref(*[t.np for t in trios])
    want = want if isinstance(want, tuple) else (want,)
    for backend in ("llvm", "interp"):
        outs, cg = run(fn, *ins, backend=backend)
        assert len(outs) == len(want)
        for o, w in zip(outs, want):
            np.testing.assert_allclose(o, w, rtol=rtol, atol=atol,
                                       err_msg=f"{backend}\n{cg.kernel_ir()}")
    return cg


@pytest.mark.parametrize("shape", [(1024, 1024), (1000, 5), (33, 4), (7, 130), (5, 9000),
                                   (1, 300), (4097, 2), (64, 4096), (3, 4097)])
def test_sum_dim0(shape):
    check(lambda x: x.sum(0), lambda x: x.sum(0), make(shape), atol=1e-4)


@pytest.mark.parametrize("shape", [(1000, 70), (3, 4100)])
def test_mean_dim0(shape):
    check(lambda x: x.mean(0), lambda x: x.mean(0), make(shape))


@pytest.mark.parametrize("layout", ["contig", "transposed", "strided"])
def test_sum_token_dims(layout):
    shape = (8, 128, 1024) if layout == "contig" else (6, 40, 96)
    t = make(shape, layout=layout)
    check(lambda x: x.sum((0, 1)), lambda x: x.sum((0, 1)), t, rtol=2e-5, atol=2e-4)
    check(lambda x: x.mean((0, 1)), lambda x: x.mean((0, 1)), t)


def test_sum_token_dims_row_contiguous():
    # the kept dim is the large-stride one: the row path's layout
    base = make((96, 6, 40))
    x = base.st.permute(1, 2, 0)
    n = base.np.transpose(1, 2, 0)
    for backend in ("llvm", "interp"):
        (o,), _ = run(lambda x: x.sum((0, 1)), x, backend=backend)
        np.testing.assert_allclose(o, n.sum((0, 1)), rtol=1e-5, atol=1e-5)


def test_sum_inner_outer_runs():
    # [8, 16, 6].sum(0): outer dims (16, 6), blocks stop at every run of 6
    check(lambda x: x.sum(0), lambda x: x.sum(0), make((8, 16, 6)))
    check(lambda x: x.sum((0, 2)), lambda x: x.sum((0, 2)), make((9, 5, 7, 6)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_sum_dim0_dtypes(dtype):
    t = make((300, 70), dtype=dtype)
    tol = {"float16": 1e-2, "bfloat16": 2e-2, "float64": 1e-10}[dtype]
    # the result is rounded to the input dtype: compare in it
    check(lambda x: x.sum(0), lambda x: x.sum(0), t, rtol=tol, atol=tol * 8)
    check(lambda x: x.mean((0,)), lambda x: x.mean(0), t, rtol=tol, atol=tol)


def test_empty_rows_and_outer():
    z = make((0, 300))
    for backend in ("llvm", "interp"):
        (s,), _ = run(lambda x: x.sum(0), z.st, backend=backend)
        assert s.shape == (300,) and not s.any()
        (e,), _ = run(lambda x: x.sum(0), make((300, 0)).st, backend=backend)
        assert e.shape == (0,)
    (m,), _ = run(lambda x: x.mean(0), z.st, backend="llvm")
    assert m.shape == (300,) and np.isnan(m).all()


@pytest.mark.parametrize("bshape", [(160, 1), (1, 1), (1, 300)])
def test_broadcast_input(bshape):
    # the cross-entropy gradient times a per-row scale ([160, 1]): stride 0
    # along the kept dim for one input
    def fn(a, b):
        y = a * b
        return y, y.sum(0)
    check(fn, lambda a, b: (a * b, (a * b).sum(0)), make((160, 300)), make(bshape))
    check(fn, lambda a, b: (a * b, (a * b).sum(0)), make((7, 5000)), make((7, 1)))


def test_broadcast_many_inputs():
    # several broadcast inputs of 8 bytes: a smaller scratch block
    def fn(a, b, c, d):
        y = a * b + c * d
        return y, y.sum(0)
    ts = [make((50, 3000), "float64"), make((50, 1), "float64"), make((50, 3000), "float64"),
          make((1, 1), "float64")]
    check(fn, lambda a, b, c, d: (a * b + c * d, (a * b + c * d).sum(0)), *ts,
          rtol=1e-10, atol=1e-9)


def gelu_grad_np(x):
    erf = np.vectorize(math.erf)
    return 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("layout", ["contig", "strided"])
def test_gelu_backward_epilogue(layout):
    # y = g * gelu'(x) stored at every point and its sum over the token dims:
    # one reduce kernel with a per-point epilogue (strided inputs: the
    # column path's strided loop)
    def fn(g, x):
        d = (st.erf(x * 0.7071067811865476) + 1.0) * 0.5 + \
            x * (st.exp(x * x * -0.5) * 0.3989422804014327)
        y = g * d
        return y, y.sum((0, 1))

    def ref(g, x):
        y = g * gelu_grad_np(x)
        return y, y.sum((0, 1))
    cg = check(fn, ref, make((4, 96, 200), layout=layout), make((4, 96, 200), layout=layout),
               rtol=1e-5, atol=1e-4)
    kinds = cg.kernel_kinds
    assert kinds.count("reduce") == 1 and "per-point epilogue" in cg.kernel_ir(), cg.kernel_ir()


def test_layer_norm_grad_kernel():
    # LayerNorm's weight/bias gradient kernel: t = a + b, t.sum((0, 1)),
    # t * w with w a vector along the kept dim
    def fn(a, b, w):
        t = a + b
        return t, t.sum((0, 1)), t * w
    check(fn, lambda a, b, w: (a + b, (a + b).sum((0, 1)), (a + b) * w),
          make((8, 128, 256)), make((8, 128, 256)), make((256,)), rtol=1e-5, atol=1e-4)


def test_index_nodes():
    # coordinates along the kept dim and along the reduced dim
    def fn(x):
        return ((x * st.arange(300).float()).sum(0),
                (x * st.arange(50).float().reshape(50, 1)).sum(0))
    check(fn, lambda x: ((x * np.arange(300)).sum(0), (x * np.arange(50)[:, None]).sum(0)),
          make((50, 300)), rtol=1e-5, atol=1e-3)


def test_rand_inside():
    # random numbers in the kernel: the same stream on llvm and interp
    x = make((300, 70))

    def fn(x):
        y = x * st.rand(300, 70)
        return y, y.sum(0)
    res = {}
    for backend in ("llvm", "interp"):
        st.manual_seed(3)
        res[backend], _ = run(fn, x.st, backend=backend)
        y, s = res[backend]
        np.testing.assert_allclose(s, y.sum(0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(res["llvm"][0], res["interp"][0], rtol=1e-6)


def dumped_ll(monkeypatch, path, fn, *inputs):
    path.mkdir()
    monkeypatch.setenv("SYMTRACE_DUMP_DIR", str(path))
    run(fn, *inputs, backend="llvm")
    lls = [open(p).read() for p in glob.glob(str(path / "*.ll"))]
    assert lls
    return lls


def test_column_path_generated(monkeypatch, tmp_path):
    # a sum over the leading dim carries the column loops; a sum over the
    # trailing dim (the buffers' own order) and a softmax do not
    lls = dumped_ll(monkeypatch, tmp_path / "sum0", lambda x: x.sum(0) * 3.0, make((40, 30)).st)
    assert any("colblock" in t for t in lls)
    lls = dumped_ll(monkeypatch, tmp_path / "sum1", lambda x: x.sum(1) * 3.0, make((40, 30)).st)
    assert not any("colblock" in t for t in lls)
    lls = dumped_ll(monkeypatch, tmp_path / "softmax", lambda x: F.softmax(x, dim=0),
                    make((40, 31)).st)
    assert not any("colblock" in t for t in lls)


def _grads(backend, fn, inputs):
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    cf = st.compile(fn, backend=backend)
    for _ in range(2):
        for t in leaves:
            t.grad = None
        loss = cf(*leaves)
        loss.backward()
    return [np.array(t.grad.numpy(), dtype=np.float64) for t in leaves]


def test_linear_gelu_backward():
    rng = np.random.default_rng(5)
    x = st.tensor(rng.standard_normal((4, 64, 96)).astype(np.float32))
    w = st.tensor((rng.standard_normal((96, 160)) * 0.1).astype(np.float32))
    b = st.tensor((rng.standard_normal(160) * 0.1).astype(np.float32))
    g = st.tensor(rng.standard_normal((4, 64, 160)).astype(np.float32))

    def fn(x, w, b, g):
        return (F.gelu(x @ w + b) * g).sum()
    gl = _grads("llvm", fn, [x, w, b, g])
    gi = _grads("interp", fn, [x, w, b, g])
    for a, e, what in zip(gl, gi, "xwbg"):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4, err_msg=what)
    h = x.numpy().astype(np.float64) @ w.numpy() + b.numpy()
    bgrad = (g.numpy() * gelu_grad_np(h)).sum((0, 1))
    np.testing.assert_allclose(gl[2], bgrad, rtol=1e-4, atol=1e-4)


def test_layer_norm_backward():
    rng = np.random.default_rng(6)
    H = 96
    x = st.tensor(rng.standard_normal((4, 64, H)).astype(np.float32))
    w = st.tensor((1 + 0.1 * rng.standard_normal(H)).astype(np.float32))
    b = st.tensor((0.1 * rng.standard_normal(H)).astype(np.float32))
    g = st.tensor(rng.standard_normal((4, 64, H)).astype(np.float32))

    def fn(x, w, b, g):
        return (F.layer_norm(x, (H,), w, b) * g).sum()
    gl = _grads("llvm", fn, [x, w, b, g])
    gi = _grads("interp", fn, [x, w, b, g])
    for a, e, what in zip(gl, gi, "xwbg"):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4, err_msg=what)
    xn = x.numpy().astype(np.float64)
    xhat = (xn - xn.mean(-1, keepdims=True)) / np.sqrt(xn.var(-1, keepdims=True) + 1e-5)
    gn = g.numpy().astype(np.float64)
    np.testing.assert_allclose(gl[1], (gn * xhat).sum((0, 1)), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(gl[2], gn.sum((0, 1)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dh", [64, 5])
def test_unravel_input(dh):
    # attention's output: [B, nh, S, dh] permuted and reshaped to [B, S, H]
    # without a copy (an unravel load), summed over the token dims; with a
    # per-point output too
    base = make((3, 4, 40, dh))

    def fn(x):
        r = x.permute(0, 2, 1, 3).reshape(3, 40, 4 * dh)
        return r.sum((0, 1)), (r * 2.0).sum((0, 1)) + 1.0

    def ref(x):
        r = x.transpose(0, 2, 1, 3).reshape(3, 40, 4 * dh)
        return r.sum((0, 1)), (r * 2.0).sum((0, 1)) + 1.0
    cg = check(fn, ref, base, rtol=1e-5, atol=1e-4)
    assert "unravel" in cg.kernel_ir(), cg.kernel_ir()

    def fn2(x):
        r = x.permute(0, 2, 1, 3).reshape(3, 40, 4 * dh) * 3.0
        return r, r.sum((0, 1))

    def ref2(x):
        r = x.transpose(0, 2, 1, 3).reshape(3, 40, 4 * dh) * 3.0
        return r, r.sum((0, 1))
    check(fn2, ref2, base, rtol=1e-5, atol=1e-4)
