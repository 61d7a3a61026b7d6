# The float32 gemm under the convolutions (llvm_backend/sgemm.c, dispatched by
# llvm_backend/matmul.c): where the CPU has AVX-512F an 8 x 32 kernel serves every
# float32 product (OpenBLAS's AVX2 kernels served those above 4M multiply-adds).
# - convolutions (1-d/2-d/3-d, groups, stride, dilation, padding and padding modes,
#   1x1, conv_transpose, fold/unfold) against torch: outputs and gradients with
#   respect to input, weight and bias, eagerly and compiled (3 calls), float32 and
#   bfloat16;
# - products past the old 4M threshold in every operand layout (row-major,
#   transposed, strided, batched with a shared operand, with an add epilogue)
#   against a float64 reference;
# - the AVX-512 and the AVX2 kernel give the same bits (every output element is the
#   same fused multiply-add chain): a child process with SYMTRACE_SGEMM=avx2.
import os
import subprocess
import sys

import numpy as np
import pytest

import symtrace as st

F = st.nn.functional


def _tol(dtype):
    return (2e-2, 2e-2) if dtype == "bfloat16" else (1e-4, 1e-4)


def _close(got, want, dtype, what):
    rtol, atol = _tol(dtype)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


# (name, symtrace builder, torch builder, x shape, w shape, bias?)
# each builder: (F module, x, w, b) -> y
CASES = [
    ("conv2d_3x3_s1_p1", lambda f, x, w, b: f.conv2d(x, w, b, 1, 1), (4, 8, 12, 12), (16, 8, 3, 3)),
    ("conv2d_3x3_s2_p1", lambda f, x, w, b: f.conv2d(x, w, b, 2, 1), (4, 8, 13, 12), (16, 8, 3, 3)),
    ("conv2d_1x1_s1", lambda f, x, w, b: f.conv2d(x, w, b), (4, 8, 10, 10), (16, 8, 1, 1)),
    ("conv2d_1x1_s2", lambda f, x, w, b: f.conv2d(x, w, b, 2), (4, 8, 10, 11), (16, 8, 1, 1)),
    ("conv2d_groups", lambda f, x, w, b: f.conv2d(x, w, b, 1, 1, 1, 4), (3, 8, 9, 9), (12, 2, 3, 3)),
    ("conv2d_dilation", lambda f, x, w, b: f.conv2d(x, w, b, 1, 2, 2), (3, 6, 11, 10), (8, 6, 3, 3)),
    ("conv2d_same", lambda f, x, w, b: f.conv2d(x, w, b, 1, "same"), (3, 6, 9, 10), (8, 6, 3, 3)),
    ("conv1d_s2", lambda f, x, w, b: f.conv1d(x, w, b, 2, 1), (4, 8, 33), (16, 8, 5)),
    ("conv3d", lambda f, x, w, b: f.conv3d(x, w, b, 1, 1), (2, 4, 5, 6, 6), (8, 4, 3, 3, 3)),
    ("conv_transpose2d_s2", lambda f, x, w, b: f.conv_transpose2d(x, w, b, 2, 1, 1), (3, 8, 7, 7), (8, 6, 3, 3)),
    ("conv_transpose2d_groups", lambda f, x, w, b: f.conv_transpose2d(x, w, b, 1, 1, 0, 2), (3, 8, 7, 6),
     (8, 3, 3, 3)),
]


def _inputs(xs, ws, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    return x, w


def _bias_len(name, ws):
    if name.startswith("conv_transpose"):
        groups = 2 if "groups" in name else 1
        return ws[1] * groups
    return ws[0]


def _st_run(fn, x, w, b, g, dtype):
    dt = getattr(st, dtype)
    tx = st.tensor(x).to(dt).requires_grad_()
    tw = st.tensor(w).to(dt).requires_grad_()
    tb = st.tensor(b).to(dt).requires_grad_()
    y = fn(tx, tw, tb)
    (y * st.tensor(g).to(dt)).sum().backward()
    return [t.detach().float().numpy() for t in (y, tx.grad, tw.grad, tb.grad)]


def _torch_run(torch, build, x, w, b, g, dtype):
    dt = getattr(torch, dtype)
    tx = torch.tensor(x).to(dt).requires_grad_()
    tw = torch.tensor(w).to(dt).requires_grad_()
    tb = torch.tensor(b).to(dt).requires_grad_()
    y = build(torch.nn.functional, tx, tw, tb)
    (y * torch.tensor(g).to(dt)).sum().backward()
    return [t.detach().float().numpy() for t in (y, tx.grad, tw.grad, tb.grad)]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name,build,xs,ws", CASES, ids=[c[0] for c in CASES])
def test_conv_eager_and_compiled_match_torch(name, build, xs, ws, dtype):
    torch = pytest.importorskip("torch")
    x, w = _inputs(xs, ws, 0)
    b = np.linspace(-1, 1, _bias_len(name, ws)).astype(np.float32)
    if dtype == "bfloat16":   # inputs exact in bfloat16, so both sides start alike
        x, w, b = (torch.tensor(a).bfloat16().float().numpy() for a in (x, w, b))
    y_shape = build(torch.nn.functional, *(torch.tensor(a) for a in (x, w, b))).shape
    g = np.random.default_rng(1).standard_normal(tuple(y_shape)).astype(np.float32)
    if dtype == "bfloat16":
        g = torch.tensor(g).bfloat16().float().numpy()
    want = _torch_run(torch, build, x, w, b, g, dtype)

    def step(tx, tw, tb):
        return build(F, tx, tw, tb)
    got = _st_run(step, x, w, b, g, dtype)
    for what, gv, wv in zip(("y", "dx", "dw", "db"), got, want):
        _close(gv, wv, dtype, f"eager {what}")
    cstep = st.compile(step)
    for call in range(3):
        got = _st_run(cstep, x, w, b, g, dtype)
        for what, gv, wv in zip(("y", "dx", "dw", "db"), got, want):
            _close(gv, wv, dtype, f"compiled call {call} {what}")


def test_conv_module_padding_modes_match_torch():
    torch = pytest.importorskip("torch")
    x, _ = _inputs((3, 6, 11, 9), (1,), 2)
    for mode in ("zeros", "reflect", "replicate", "circular"):
        tm = torch.nn.Conv2d(6, 10, 3, stride=2, padding=1, padding_mode=mode)
        sm = st.nn.Conv2d(6, 10, 3, stride=2, padding=1, padding_mode=mode)
        sm.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
        tx = torch.tensor(x, requires_grad=True)
        ty = tm(tx)
        ty.square().sum().backward()
        for fn in (sm, st.compile(sm)):
            for _ in range(3 if fn is not sm else 1):
                sx = st.tensor(x, requires_grad=True)
                sm.zero_grad()
                sy = fn(sx)
                sy.square().sum().backward()
                _close(sy.detach().numpy(), ty.detach().numpy(), "float32", f"{mode} y")
                _close(sx.grad.numpy(), tx.grad.numpy(), "float32", f"{mode} dx")
                _close(sm.weight.grad.numpy(), tm.weight.grad.numpy(), "float32", f"{mode} dw")
                _close(sm.bias.grad.numpy(), tm.bias.grad.numpy(), "float32", f"{mode} db")


def test_fold_unfold_match_torch():
    torch = pytest.importorskip("torch")
    x, _ = _inputs((2, 5, 12, 11), (1,), 3)
    tx = torch.tensor(x, requires_grad=True)
    tu = torch.nn.functional.unfold(tx, 3, 2, 1, 2)
    tf = torch.nn.functional.fold(tu * 1.5, (12, 11), 3, 2, 1, 2)
    tf.square().sum().backward()
    sx = st.tensor(x, requires_grad=True)
    su = F.unfold(sx, 3, 2, 1, 2)
    sf = F.fold(su * 1.5, (12, 11), 3, 2, 1, 2)
    sf.square().sum().backward()
    _close(su.detach().numpy(), tu.detach().numpy(), "float32", "unfold")
    _close(sf.detach().numpy(), tf.detach().numpy(), "float32", "fold")
    _close(sx.grad.numpy(), tx.grad.numpy(), "float32", "dx")


# ---- products past the old 4M multiply-add threshold (OpenBLAS's before) ----
def _operand(rng, rows, cols, layout):
    """[rows, cols] float32 as a symtrace tensor in layout: row-major, transposed
    (column-major) or strided (every other element of a wider array)."""
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    if layout == "t":
        return a, st.tensor(np.ascontiguousarray(a.T)).t()
    if layout == "s":
        wide = np.zeros((rows, 2 * cols), np.float32)
        wide[:, ::2] = a
        return a, st.tensor(wide)[:, ::2]
    return a, st.tensor(a)


@pytest.mark.parametrize("la", ["r", "t", "s"])
@pytest.mark.parametrize("lb", ["r", "t", "s"])
def test_large_float32_matmul_layouts(la, lb):
    rng = np.random.default_rng(7)
    M, K, N = 70, 300, 217           # 4.56M multiply-adds, N not a multiple of 32
    a, A = _operand(rng, M, K, la)
    b, B = _operand(rng, K, N, lb)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    got = st.matmul(A, B).numpy()
    assert np.all(np.abs(got - ref) <= 1e-5 * mag + 1e-6)


def test_large_float32_conv_shaped_products_compiled():
    """The ResNet step's shapes: a shared weight times a batch of columns, its
    weight gradient (columns transposed) and input gradient, with an add epilogue,
    in a compiled graph (3 calls) against float64."""
    rng = np.random.default_rng(8)
    w = (rng.standard_normal((16, 144)) / 12).astype(np.float32)
    cols = rng.standard_normal((4, 144, 1024)).astype(np.float32)
    dy = rng.standard_normal((4, 16, 1024)).astype(np.float32)
    bias = rng.standard_normal((1, 16, 1)).astype(np.float32)

    def f(w, cols, dy, bias):
        y = w.matmul(cols) + bias                                   # [4, 16, 1024]
        dw = dy.reshape(4, 16, 1024).matmul(cols.transpose(1, 2))   # [4, 16, 144]
        dx = w.t().matmul(dy)                                       # [4, 144, 1024]
        return y, dw, dx
    w64, c64, d64 = (v.astype(np.float64) for v in (w, cols, dy))
    want = (w64 @ c64 + bias, d64 @ c64.transpose(0, 2, 1), w64.T @ d64)
    mags = (np.abs(w64) @ np.abs(c64) + np.abs(bias), np.abs(d64) @ np.abs(c64).transpose(0, 2, 1),
            np.abs(w64).T @ np.abs(d64))
    cf = st.compile(f)
    args = [st.tensor(v) for v in (w, cols, dy, bias)]
    for fn in (f, cf, cf, cf):
        for got, ref, mag in zip(fn(*args), want, mags):
            assert np.all(np.abs(got.numpy() - ref) <= 1e-5 * mag + 1e-6)


_BITS_CHILD = r"""
import sys, numpy as np, symtrace as st
rng = np.random.default_rng(3)
out = []
for m, k, n, ta, tb in [(16, 144, 1024, 0, 0), (37, 45, 257, 1, 0), (100, 300, 33, 0, 1), (7, 600, 70, 1, 1),
                         (16, 1500, 144, 0, 1)]:
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    A = st.tensor(a).t() if ta else st.tensor(a)
    B = st.tensor(b).t() if tb else st.tensor(b)
    out.append(st.matmul(A, B).numpy())
np.savez(sys.argv[1], *out)
"""


def _has_avx512f():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def test_avx512_and_avx2_kernels_give_the_same_bits(tmp_path):
    if not _has_avx512f():
        pytest.skip("no AVX-512F here: only the AVX2 kernel runs")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outs = {}
    for tag, sgemm in (("wide", ""), ("avx2", "avx2")):
        env = dict(os.environ, SYMTRACE_SGEMM=sgemm, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        path = tmp_path / f"{tag}.npz"
        subprocess.run([sys.executable, "-c", _BITS_CHILD, str(path)], env=env, check=True, timeout=120)
        outs[tag] = np.load(path)
    for k in outs["wide"].files:
        a, b = outs["wide"][k], outs["avx2"][k]
        assert a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32)), k
