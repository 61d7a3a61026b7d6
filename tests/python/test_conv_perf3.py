# Elementwise launches with merged dims (llvm_backend/jit.c merge_dims: adjacent
# iteration dims that every buffer walks as one become one longer row, dims of
# size 1 are dropped) and the convolution paths that run on them.
# - rows stepped as an odometer (llvm_backend/codegen_kernels.c emit_pointwise:
#   coordinates divided out of a chunk's first point only), across the thread
#   pool's chunks and the splat path's row caps;
# - elementwise kernels over contiguous, broadcast, permuted, windowed and
#   expanded operands, in-place adds into windows (col2im's), cat's slab stores,
#   where with a broadcast mask, int and bfloat16 dtypes, size-0/size-1 dims,
#   and an arange (coordinates: never merged) against numpy, eager and compiled
#   (3 calls);
# - convolutions (3x3/1x1, stride 2, dilation, padding, groups, conv1d/3d,
#   conv_transpose) against torch: output and gradients of input, weight and
#   bias, eager and compiled (3 calls), float32 and bfloat16;
# - the ResNet step benchmark's losses against torch on a small model.
# The C test test_llvm.c:test_merged_dims checks that the merge happens.
import numpy as np
import pytest

import symtrace as st

F = st.nn.functional


def _rng(seed=0):
    return np.random.default_rng(seed)


def _f32(*shape, seed=0):
    return _rng(seed).standard_normal(shape).astype(np.float32)


def _eager_and_compiled(fn, args, want, tol=0.0):
    """fn(*args) eagerly and compiled (3 calls) equal want (numpy) within tol."""
    cf = st.compile(fn)
    for call, f in enumerate((fn, cf, cf, cf)):
        got = f(*[st.tensor(a) for a in args])
        got = got if isinstance(got, tuple) else (got,)
        ws = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, ws):
            g = g.float().numpy() if g.dtype == st.bfloat16 else g.numpy()
            assert g.shape == w.shape, (call, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"call {call}")


def test_contiguous_and_broadcast_adds():
    a, b, c = _f32(3, 5, 6, 7), _f32(3, 5, 6, 7, seed=1), _f32(6, 7, seed=2)
    _eager_and_compiled(lambda x, y, z: (x + y, x * z, z - x), (a, b, c), (a + b, a * c, c - a))


def test_channel_affine_and_expand():
    x, s, t = _f32(4, 8, 5, 5), _f32(1, 8, 1, 1, seed=1), _f32(8, 1, 1, seed=2)
    _eager_and_compiled(lambda x, s, t: x * s + t, (x, s, t), x * s + t, 1e-6)
    v = _f32(4, 1, 5, seed=3)

    def f(v):
        return v.expand(4, 6, 5) * 2.0
    _eager_and_compiled(f, (v,), np.broadcast_to(v, (4, 6, 5)) * 2.0)


def test_permuted_and_windowed_operands():
    x, y = _f32(4, 6, 9, 10), _f32(4, 9, 10, 6, seed=1)

    def f(x, y):
        return x.permute(0, 2, 3, 1) + y, x[:, :, 1:8, 2:9] * 3.0, x[:, ::2, :, ::3] - 1.0
    want = (x.transpose(0, 2, 3, 1) + y, x[:, :, 1:8, 2:9] * 3.0, x[:, ::2, :, ::3] - 1.0)
    _eager_and_compiled(f, (x, y), want)


def test_inplace_add_into_windows_and_cat():
    cols = _f32(2, 3, 9, 4, 5)

    def col2im(cols):
        buf = st.zeros(2, 3, 6, 7)
        for j in range(9):
            i, k = divmod(j, 3)
            buf[:, :, i:i + 4, k:k + 5].add_(cols[:, :, j])
        return buf
    want = np.zeros((2, 3, 6, 7), np.float32)
    for j in range(9):
        i, k = divmod(j, 3)
        want[:, :, i:i + 4, k:k + 5] += cols[:, :, j]
    _eager_and_compiled(col2im, (cols,), want, 1e-6)
    a, b = _f32(2, 3, 4, 5), _f32(2, 2, 4, 5, seed=1)
    _eager_and_compiled(lambda a, b: st.cat([a * 2, b + 1], 1), (a, b),
                        np.concatenate([a * 2, b + 1], 1))


def test_where_ints_bfloat16_and_edge_sizes():
    x, m = _f32(3, 4, 5, 6), _f32(4, 1, 6, seed=1) > 0
    _eager_and_compiled(lambda x, m: st.where(m, x, -x), (x, m), np.where(m, x, -x))
    i = _rng(2).integers(-50, 50, (3, 4, 5, 6)).astype(np.int64)
    _eager_and_compiled(lambda i: i * 3 + 1, (i,), i * 3 + 1)
    pytest.importorskip("torch")
    import torch
    xb = torch.tensor(x).bfloat16().float().numpy()

    def fb(x):
        return (x.to(st.bfloat16) * 2 + 1).float()
    want = ((torch.tensor(xb).bfloat16() * 2 + 1).float()).numpy()
    _eager_and_compiled(fb, (xb,), want)
    for shape in ((3, 1, 1, 6), (1, 1, 1, 1), (3, 0, 5, 6), (1, 4, 1, 6)):
        z = _f32(*shape, seed=4)
        _eager_and_compiled(lambda z: z * 2.0 - 1.0, (z,), z * 2.0 - 1.0)


def test_coordinates_stay_per_dim():
    """An arange broadcast against a 4-d tensor: its kernel reads coordinates."""
    x = _f32(2, 3, 4, 5)

    def f(x):
        return x + st.arange(5, dtype=st.float32) + st.arange(4, dtype=st.float32).reshape(4, 1)
    _eager_and_compiled(f, (x,), x + np.arange(5, dtype=np.float32) + np.arange(4, dtype=np.float32)[:, None])


def test_rows_stepped_across_chunks_and_splat_caps():
    """Rows stepped as an odometer (codegen_kernels.c emit_pointwise): a windowed
    view whose rows (45 points) straddle the thread pool's 32768-point chunks, and
    rows of 1500 points cut at the splat path's 1024 (a per-row constant broadcast
    along the innermost dim at run time)."""
    big = _f32(3, 9, 72, 50)
    _eager_and_compiled(lambda x: x[:, 1:8, 1:71, 2:47] * 2.0 + 1.0, (big,), big[:, 1:8, 1:71, 2:47] * 2.0 + 1.0)
    x, s = _f32(2, 3, 1500, seed=1), _f32(2, 3, 1, seed=2)
    _eager_and_compiled(lambda x, s: x * s - s, (x, s), x * s - s)
    w = _f32(5, 7, 33, 35, seed=3)

    def f(w):
        return w.permute(1, 0, 3, 2)[:, :, 1:, ::2] + 0.5
    _eager_and_compiled(f, (w,), w.transpose(1, 0, 3, 2)[:, :, 1:, ::2] + 0.5)


# ---- convolutions against torch ----
CONV = [
    ("3x3_s1_p1", lambda f, x, w, b: f.conv2d(x, w, b, 1, 1), (3, 8, 10, 10), (8, 8, 3, 3)),
    ("3x3_s2_p1", lambda f, x, w, b: f.conv2d(x, w, b, 2, 1), (3, 8, 11, 10), (12, 8, 3, 3)),
    ("1x1_s1", lambda f, x, w, b: f.conv2d(x, w, b), (3, 8, 7, 7), (16, 8, 1, 1)),
    ("1x1_s2", lambda f, x, w, b: f.conv2d(x, w, b, 2), (3, 8, 9, 8), (16, 8, 1, 1)),
    ("groups", lambda f, x, w, b: f.conv2d(x, w, b, 1, 1, 1, 2), (2, 8, 8, 8), (6, 4, 3, 3)),
    ("dilation", lambda f, x, w, b: f.conv2d(x, w, b, 1, 2, 2), (2, 4, 9, 9), (6, 4, 3, 3)),
    ("padding_same", lambda f, x, w, b: f.conv2d(x, w, b, 1, "same"), (2, 4, 8, 7), (6, 4, 3, 3)),
    ("conv1d_s2", lambda f, x, w, b: f.conv1d(x, w, b, 2, 1), (3, 4, 21), (8, 4, 3)),
    ("conv3d", lambda f, x, w, b: f.conv3d(x, w, b, 1, 1), (2, 3, 4, 5, 5), (4, 3, 3, 3, 3)),
    ("transpose_s2", lambda f, x, w, b: f.conv_transpose2d(x, w, b, 2, 1, 1), (2, 6, 5, 5), (6, 4, 3, 3)),
]


def _conv_run(lib, fn, x, w, b, g, dtype):
    dt = getattr(lib, dtype)
    ts = [lib.tensor(a).to(dt).requires_grad_() for a in (x, w, b)]
    y = fn(*ts)
    (y * lib.tensor(g).to(dt)).sum().backward()
    return [t.detach().float().numpy() for t in (y, ts[0].grad, ts[1].grad, ts[2].grad)]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name,build,xs,ws", CONV, ids=[c[0] for c in CONV])
def test_conv_paths_match_torch(name, build, xs, ws, dtype):
    torch = pytest.importorskip("torch")
    rng = _rng(5)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    nb = ws[1] if name.startswith("transpose") else ws[0]
    b = np.linspace(-1, 1, nb).astype(np.float32)
    if dtype == "bfloat16":
        x, w, b = (torch.tensor(a).bfloat16().float().numpy() for a in (x, w, b))
    shape = tuple(build(torch.nn.functional, *(torch.tensor(a) for a in (x, w, b))).shape)
    g = rng.standard_normal(shape).astype(np.float32)
    if dtype == "bfloat16":
        g = torch.tensor(g).bfloat16().float().numpy()
    want = _conv_run(torch, lambda *t: build(torch.nn.functional, *t), x, w, b, g, dtype)
    tol = 3e-2 if dtype == "bfloat16" else 1e-4

    def step(tx, tw, tb):
        return build(F, tx, tw, tb)
    cstep = st.compile(step)
    for call, fn in enumerate((step, cstep, cstep, cstep)):
        got = _conv_run(st, fn, x, w, b, g, dtype)
        for what, gv, wv in zip(("y", "dx", "dw", "db"), got, want):
            scale = max(1.0, float(np.abs(wv).max()))
            np.testing.assert_allclose(gv, wv, rtol=tol, atol=tol * scale, err_msg=f"call {call} {what}")


def test_resnet_step_losses_match_torch():
    pytest.importorskip("torch")
    from bench.micro import resnet_step
    import io
    res = resnet_step.run(widths=(4, 8, 8), batch=2, size=8, warmup=1, rounds=1, steps=3, out=io.StringIO(),
                          check=4)
    losses = [v[1] for v in res.values()]
    assert len(losses) == 3 and all(len(x) == 4 for x in losses)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(losses[2], losses[0], rtol=1e-3, atol=1e-4)
