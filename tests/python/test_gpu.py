"""symtrace on a CUDA GPU: eager ops, autograd, compiled graphs (nvrtc), the
optimizer and the BERT step, each checked against the same computation on
the CPU. Skipped where no GPU is present (CI has none); run on a lent GPU
machine (README: tests on a GPU)."""
import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F

pytestmark = pytest.mark.skipif(not st.cuda.is_available(), reason="no CUDA GPU")
CPU_BACKEND = "llvm" if st._C._fe_backend_available("llvm") else "interp"


def cpu(x):
    return x.detach().cpu().numpy()


def close(a, b, rtol=1e-5, atol=1e-6):
    a = cpu(a) if hasattr(a, "cpu") else np.asarray(a)
    b = cpu(b) if hasattr(b, "cpu") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---------------- devices and copies ----------------

def test_factories_on_cuda():
    for t in (st.zeros(3, 4, device="cuda"), st.ones(5, device="cuda:0"),
              st.full((2, 2), 7.0, device=st.device("cuda")), st.arange(10, device="cuda"),
              st.rand(8, device="cuda"), st.randn(8, device="cuda"), st.empty(3, device="cuda"),
              st.randint(0, 5, (6,), device="cuda")):
        assert t.is_cuda and t.device == "cuda:0"
    assert st.zeros(3, 4, device="cuda").cpu().tolist() == [[0.0] * 4] * 3
    assert st.arange(10, device="cuda").tolist() == list(range(10))
    assert st.full((2, 2), 7.0, device="cuda").sum().item() == 28.0
    r = st.rand(10000, device="cuda").cpu().numpy()
    assert 0.0 <= r.min() and r.max() < 1.0 and abs(r.mean() - 0.5) < 0.02


def test_to_and_back_exact():
    a = rnd(17, 33)
    x = st.tensor(a)
    g = x.to("cuda")
    assert g.is_cuda and not x.is_cuda
    np.testing.assert_array_equal(g.cpu().numpy(), a)
    with pytest.raises(TypeError, match="cpu"):            # as PyTorch: no implicit copy
        g.numpy()
    # a non-contiguous source
    np.testing.assert_array_equal(x.t().cuda().cpu().numpy(), a.T)
    np.testing.assert_array_equal(x[::2, 1::3].cuda().cpu().numpy(), a[::2, 1::3])
    assert st.tensor([1.0, 2.0], device="cuda").is_cuda
    assert g.to("cuda") is g
    assert "tensor(" in repr(g)
    assert g[3, 4].item() == pytest.approx(float(a[3, 4]))


def test_like_keeps_device():
    g = st.randn(4, 5, device="cuda")
    for t in (st.zeros_like(g), st.ones_like(g), st.empty_like(g), st.full_like(g, 2.0),
              st.rand_like(g), st.randn_like(g)):
        assert t.is_cuda and tuple(t.shape) == (4, 5)


def test_mixed_devices_raise():
    g = st.ones(3, device="cuda")
    c = st.ones(3)
    with pytest.raises(RuntimeError, match="same device"):
        g + c
    with pytest.raises(RuntimeError, match="same device"):
        st.matmul(st.ones(3, 3), st.ones(3, 3, device="cuda"))
    # a 0-d CPU tensor joins a GPU op, as in PyTorch
    r = g * st.tensor(2.5)
    assert r.is_cuda and r.cpu().tolist() == [2.5, 2.5, 2.5]


def test_index_error_surfaces():
    w = st.randn(10, 4, device="cuda")
    idx = st.tensor([1, 2, 12], device="cuda")
    with pytest.raises((IndexError, RuntimeError), match="out of bounds"):
        F.embedding(idx, w).cpu()
    # the device stays usable afterwards
    assert F.embedding(st.tensor([1, 2], device="cuda"), w).cpu().shape == (2, 4)


# ---------------- eager ops against the CPU ----------------

EW = [
    ("add", lambda x, y: x + y), ("mul", lambda x, y: x * y), ("div", lambda x, y: x / (y.abs() + 1)),
    ("sub_bcast", lambda x, y: x - y[:1]), ("exp", lambda x, y: st.exp(x)),
    ("tanh", lambda x, y: st.tanh(x)), ("gelu", lambda x, y: F.gelu(x)),
    ("relu", lambda x, y: F.relu(x)), ("where", lambda x, y: st.where(x > y, x, y)),
    ("pow", lambda x, y: x ** 2), ("sqrt", lambda x, y: st.sqrt(x.abs())),
    ("erf", lambda x, y: st.erf(x)), ("sigmoid", lambda x, y: st.sigmoid(x)),
    ("cast", lambda x, y: (x * 10).to(st.int64).to(st.float32)),
]


@pytest.mark.parametrize("name,fn", EW, ids=[n for n, _ in EW])
def test_elementwise(name, fn):
    a, b = rnd(64, 129, seed=1), rnd(64, 129, seed=2)
    want = fn(st.tensor(a), st.tensor(b))
    got = fn(st.tensor(a).cuda(), st.tensor(b).cuda())
    assert got.is_cuda
    close(got, want, rtol=2e-6, atol=1e-6)


RED = [
    ("sum", lambda x: x.sum()), ("sum1", lambda x: x.sum(1)), ("sum0", lambda x: x.sum(0)),
    ("mean", lambda x: x.mean(-1)), ("amax", lambda x: x.amax(1)),
    ("softmax", lambda x: F.softmax(x, -1)), ("log_softmax", lambda x: F.log_softmax(x, -1)),
    ("layer_norm", lambda x: F.layer_norm(x, (x.shape[-1],))),
    ("var", lambda x: ((x - x.mean(1, keepdim=True)) ** 2).mean(1)), ("argmax", lambda x: x.argmax(1).to(st.float32)),
]


@pytest.mark.parametrize("name,fn", RED, ids=[n for n, _ in RED])
@pytest.mark.parametrize("cols", [7, 256, 3000, 40000])
def test_reductions(name, fn, cols):
    a = rnd(33, cols, seed=cols)
    close(fn(st.tensor(a).cuda()), fn(st.tensor(a)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [((5, 7), (7, 3)), ((64, 128), (128, 96)), ((130, 70), (70, 260)),
                                   ((4, 33, 65), (4, 65, 17)), ((3, 2, 16, 64), (3, 2, 64, 16))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul(shape, dtype):
    a, b = rnd(*shape[0], seed=3, dtype=dtype), rnd(*shape[1], seed=4, dtype=dtype)
    want = a @ b
    got = st.matmul(st.tensor(a).cuda(), st.tensor(b).cuda())
    close(got, want, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4 if dtype == np.float32 else 1e-10)


def test_matmul_layouts():
    a, b = rnd(48, 80, seed=5), rnd(96, 80, seed=6)
    A, B = st.tensor(a).cuda(), st.tensor(b).cuda()
    close(st.matmul(A, B.t()), a @ b.T, rtol=1e-4, atol=1e-4)
    close(st.matmul(B.t().t(), A.t()), b @ a.T, rtol=1e-4, atol=1e-4)
    close(st.matmul(A.t().contiguous().t(), B.t()), a @ b.T, rtol=1e-4, atol=1e-4)
    # broadcast batch: one B for every batch
    x = rnd(6, 20, 80, seed=7)
    close(st.matmul(st.tensor(x).cuda(), B.t()), x @ b.T, rtol=1e-4, atol=1e-4)
    # linear with bias (an epilogue)
    bias = rnd(96, seed=8)
    close(F.linear(A, B, st.tensor(bias).cuda()), a @ b.T + bias, rtol=1e-4, atol=1e-4)
    close(F.gelu(F.linear(A, B, st.tensor(bias).cuda())),
          F.gelu(F.linear(st.tensor(a), st.tensor(b), st.tensor(bias))), rtol=1e-4, atol=1e-4)


def test_indexing_ops():
    w = rnd(50, 16, seed=9)
    idx = np.array([[1, 4, 4, 49], [0, 2, 3, 1]])
    W, I = st.tensor(w).cuda(), st.tensor(idx).cuda()
    close(F.embedding(I, W), w[idx])
    close(W.index_select(0, I.reshape(-1)), w[idx.reshape(-1)])
    close(W[I[0]], w[idx[0]])
    close(W[2:10:3, 1:], w[2:10:3, 1:])


# ---------------- autograd ----------------

def _mlp_grads(device):
    st.manual_seed(0)
    lin1, lin2 = nn.Linear(32, 64), nn.Linear(64, 10)
    m = nn.Sequential(lin1, nn.GELU(), nn.LayerNorm(64), lin2)
    m.to(device)
    x = st.tensor(rnd(16, 32, seed=10)).to(device)
    y = st.tensor(np.arange(16) % 10).to(device)
    loss = F.cross_entropy(m(x), y)
    loss.backward()
    return loss, [p.grad for p in m.parameters()], m


def test_backward_matches_cpu():
    lc, gc, _ = _mlp_grads("cpu")
    lg, gg, m = _mlp_grads("cuda")
    assert all(p.is_cuda and p.grad.is_cuda for p in m.parameters())
    close(lg, lc, rtol=1e-5)
    for a, b in zip(gg, gc):
        close(a, b, rtol=1e-4, atol=1e-6)


def test_to_device_is_differentiable():
    x = st.tensor(rnd(4, 5, seed=11), requires_grad=True)
    y = (x.cuda() * 3).sum()
    y.backward()
    assert not x.grad.is_cuda
    close(x.grad, np.full((4, 5), 3.0, np.float32))


def test_dropout_mask_reused_in_backward():
    x = st.ones(1000, 100, device="cuda", requires_grad=True)
    y = F.dropout(x, 0.3, training=True)
    kept = cpu(y) != 0
    assert 0.65 < kept.mean() < 0.75
    y.sum().backward()
    np.testing.assert_array_equal(cpu(x.grad) != 0, kept)


def test_compiled_dropout_saves_bool_mask_on_gpu(capfd, monkeypatch):
    """The bool keep mask (runtime/trace.c emit_dropout) through nvrtc: the
    fused kernel writes where(keep, x * s, 0) and keep (a bool output); the
    compiled backward reads keep; gradients equal eager's from one seed."""
    monkeypatch.setenv("SYMTRACE_SAVED_LOG", "1")
    xn, wn, gn = rnd(16, 8, seed=1), rnd(8, 32, seed=2), rnd(16, 32, seed=3)

    def f(x, w, g):
        return (F.dropout(x @ w, 0.5) * g).sum()

    cf = st.compile(f, backend="nvrtc")
    x = st.tensor(xn).cuda().requires_grad_(True)
    w = st.tensor(wn).cuda().requires_grad_(True)
    g = st.tensor(gn).cuda()
    capfd.readouterr()
    st.manual_seed(11)
    cf(x, w, g).backward()
    err = capfd.readouterr().err
    masks = [ln for ln in err.splitlines() if "[16, 32]" in ln and " = " in ln and "input()" not in ln]
    assert len(masks) == 1 and " bool " in masks[0] and "= ge(" in masks[0], err[-2000:]
    xe = st.tensor(xn).cuda().requires_grad_(True)
    we = st.tensor(wn).cuda().requires_grad_(True)
    st.manual_seed(11)
    ye = F.dropout(xe @ we, 0.5)
    (ye * g).sum().backward()
    keep = cpu(ye) != 0
    assert 0.35 < keep.mean() < 0.65
    dz = gn * keep / 0.5
    close(x.grad, dz @ wn.T, rtol=1e-4, atol=1e-4)
    close(w.grad, xn.T @ dz, rtol=1e-4, atol=1e-4)
    close(x.grad, xe.grad, rtol=1e-5, atol=1e-5)


def test_compiled_backward_frees_saved_and_first_call_on_gpu():
    """On the GPU allocator: a compiled backward without retain_graph frees
    each saved activation after its last reader (runtime/cfn.c donate), and
    a first (traced) call does not hold every intermediate (the trace's
    sweep)."""
    n, layers = 512, 6
    unit = n * n * 4

    def chain(x, ws):
        h = x
        for w in ws:
            h = (h @ w).tanh()
        return h.sum()

    def steps(x):
        for _ in range(40):
            x = x * 1.0001 + 0.5
        return x.sum()

    x = st.tensor(rnd(n, n)).cuda()
    ws = [(st.tensor(rnd(n, n, seed=k)) / 23.0).cuda().requires_grad_(True) for k in range(layers)]
    cf = st.compile(chain, backend="nvrtc")
    cf(x, ws).backward()
    peaks = []
    for retain in (True, False):
        for w in ws:
            w.grad = None
        y = cf(x, ws)
        st.memory.reset_peak_stats("cuda")
        base = st.memory.memory_allocated("cuda")
        y.backward(retain_graph=retain)
        peaks.append(st.memory.max_memory_allocated("cuda") - base)
    assert peaks[0] - peaks[1] >= (layers - 3) * unit, [p / unit for p in peaks]
    xs = st.tensor(rnd(256 * 1024)).cuda()
    cs = st.compile(steps, backend="nvrtc")
    st.memory.reset_peak_stats("cuda")
    base = st.memory.memory_allocated("cuda")
    y = cs(xs)
    assert st.memory.max_memory_allocated("cuda") - base < 8 * 256 * 1024 * 4
    close(cs(xs), y, rtol=1e-5, atol=1e-3)


# ---------------- compiled graphs ----------------

def test_compiled_matches_eager_and_uses_nvrtc():
    def f(x, w, b):
        return F.softmax(F.gelu(F.linear(x, w, b)) * 0.5, -1).sum(0)

    xs = [st.tensor(rnd(8, 32, seed=s)).cuda() for s in range(3)]
    w, b = st.tensor(rnd(24, 32, seed=20)).cuda(), st.tensor(rnd(24, seed=21)).cuda()
    cf = st.compile(f, backend="nvrtc")
    for x in xs:
        close(cf(x, w, b), f(x, w, b), rtol=1e-5, atol=1e-6)
    r = cf(xs[0], w, b)
    assert r.is_cuda
    # CPU inputs under a GPU compile run on the CPU backend, with the same results
    xc, wc, bc = xs[0].cpu(), w.cpu(), b.cpu()
    close(cf(xc, wc, bc), f(xc, wc, bc), rtol=1e-5, atol=1e-6)
    close(cf(xc, wc, bc), cf(xc, wc, bc))
    assert not cf(xc, wc, bc).is_cuda


def test_compiled_training_step_matches_cpu():
    def run(device):
        st.manual_seed(1)
        m = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 4)).to(device)
        opt = st.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.01)

        def step(x, y):
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        cs = st.compile(step, backend="nvrtc" if device == "cuda" else CPU_BACKEND)
        losses = []
        y = st.tensor(np.arange(16) % 4).to(device)
        for i in range(8):   # two batches in turn: the loss on each must fall
            x = st.tensor(rnd(16, 32, seed=100 + i % 2)).to(device)
            losses.append(float(cs(x, y)))
        return losses, [cpu(p) for p in m.parameters()]

    lc, pc = run("cpu")
    lg, pg = run("cuda")
    np.testing.assert_allclose(lg, lc, rtol=1e-5)
    for a, b in zip(pg, pc):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert lg[-2] < lg[0] and lg[-1] < lg[1]


def test_memory_stats_on_cuda():
    st.cuda.synchronize()
    before = st.memory.memory_allocated("cuda")
    x = st.empty(1 << 20, device="cuda")
    assert st.memory.memory_allocated("cuda") >= before + 4 * (1 << 20)
    del x
    assert st.memory.max_memory_allocated("cuda") >= before + 4 * (1 << 20)


# ---------------- the BERT step ----------------

def test_bert_tiny_compiled_cuda_matches_cpu():
    from bench.bert_pretrain.model import build_model, no_decay
    from bench.bert_pretrain import data as D

    recs = D.synthetic_records(16, 32, 1000, seed=0)
    batches = list(D.batches(recs, 4, 4))

    def run(device, backend):
        model = build_model("tiny", dropout=0.0, seed=0, vocab_size=1000).to(device)
        params = list(model.named_parameters())
        opt = st.optim.AdamW([{"params": [p for n, p in params if not no_decay(n)], "weight_decay": 0.01},
                              {"params": [p for n, p in params if no_decay(n)], "weight_decay": 0.0}],
                             lr=1e-3, eps=1e-6)

        def step(*ins):
            loss = model(*ins)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        cs = st.compile(step, backend=backend)
        return [float(cs(*[t.to(device) for t in D.to_symtrace(b)])) for _, _, b in batches]

    lc = run("cpu", CPU_BACKEND)
    lg = run("cuda", "nvrtc")
    np.testing.assert_allclose(lg, lc, rtol=1e-4)


# ---------------- column reductions (NAME_col, SYMTRACE_CUDA_COLREDUCE) ----------------
# Reductions over a dim that is strided in memory while the kept dim is
# contiguous (bias and LayerNorm weight gradients) may run the column
# variant of the REDUCE kernel, NAME_col, unless SYMTRACE_CUDA_COLREDUCE=0
# (read at every launch). Each test runs with it off and on; with
# SYMTRACE_CUDA_COLREDUCE_LOG=1 every NAME_col launch writes a line on
# stderr, so the "1" runs also check that the column path was taken.

COL_LOG = "symtrace colreduce:"


@pytest.fixture(params=["0", "1"], ids=["colreduce_off", "colreduce_on"])
def colreduce(request, monkeypatch):
    monkeypatch.setenv("SYMTRACE_CUDA_COLREDUCE", request.param)
    monkeypatch.setenv("SYMTRACE_CUDA_COLREDUCE_LOG", "1")
    return request.param == "1"


def _col_ran(capfd, on, expect=True):
    err = capfd.readouterr().err
    assert (COL_LOG in err) == (on and expect), err[-2000:]
    return err


def _sum64(a, dims):
    return a.astype(np.float64).sum(dims)


@pytest.mark.parametrize("shape,dims,col", [((4096, 3072), (0,), True), ((33, 7), (0,), True),
                                            ((1, 5), (0,), False), ((5000, 1), (0,), False),
                                            ((8, 128, 768), (0, 1), True),
                                            ((16, 300, 64), (1,), True), ((4, 2048, 40), (1,), True),
                                            # several row dims: runs along the innermost row dim
                                            # (shorter than, longer than, not a multiple of the
                                            # row groups) cut by the block slices anywhere
                                            ((5, 33, 40), (0, 1), True), ((7, 3, 96), (0, 1), True),
                                            ((3, 4, 50, 64), (0, 1, 2), True),
                                            ((64, 257, 32), (0, 1), True)],
                         ids=["4096x3072", "33x7", "1x5", "5000x1", "8x128x768", "16x300x64_dim1",
                              "4x2048x40_dim1", "5x33x40", "7x3x96", "3x4x50x64", "64x257x32"])
def test_colreduce_sums(colreduce, capfd, shape, dims, col):
    a = rnd(*shape, seed=40 + len(shape))
    x = st.tensor(a).cuda()
    capfd.readouterr()
    got = x.sum(dims if len(dims) > 1 else dims[0])
    close(got, _sum64(a, dims), rtol=1e-5, atol=1e-5)
    # [1, 5] and [5000, 1]: too few kept points (or a size-1 reduction
    # that may not be a REDUCE kernel at all): the log is not required
    err = capfd.readouterr().err
    if col:
        assert (COL_LOG in err) == colreduce, err[-2000:]
    elif not colreduce:
        assert COL_LOG not in err
    # deterministic: the same bits again (the sliced rows add in a fixed order)
    again = x.sum(dims if len(dims) > 1 else dims[0])
    np.testing.assert_array_equal(cpu(again), cpu(got))
    # a transposed (non-contiguous) input: the kept dim strided
    t = st.tensor(np.ascontiguousarray(a.reshape(shape[0], -1).T)).cuda().t()
    close(t.sum(0), _sum64(a.reshape(shape[0], -1), (0,)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [300, 2048])   # 2048: the rows sliced over 8 blocks
def test_colreduce_mean_amax_int(colreduce, capfd, rows):
    a = rnd(rows, 200, seed=44)
    x = st.tensor(a).cuda()
    capfd.readouterr()
    close(x.mean(0), a.astype(np.float64).mean(0), rtol=1e-5, atol=1e-6)
    close(x.amax(0), a.max(0), rtol=0, atol=0)
    close(x.amin(0), a.min(0), rtol=0, atol=0)
    _col_ran(capfd, colreduce)
    i = (a * 100).astype(np.int64)
    got = st.tensor(i).cuda().sum(0)
    np.testing.assert_array_equal(cpu(got), i.sum(0))
    # again: the sliced launches left their counters zeroed
    np.testing.assert_array_equal(cpu(st.tensor(i).cuda().sum(0)), i.sum(0))
    close(x.sum(0), _sum64(a, (0,)), rtol=1e-5, atol=1e-5)
    # float64 input, a second launch over several tiles of kept points
    d = rnd(70, 1000, seed=45, dtype=np.float64)
    close(st.tensor(d).cuda().sum(0), d.sum(0), rtol=1e-12, atol=1e-12)


def test_colreduce_linear_and_layer_norm_grads(colreduce, capfd):
    B, S, H, O = 4, 64, 256, 512
    x_np = rnd(B, S, H, seed=46)
    g_np = rnd(B, S, O, seed=47)
    w_np = rnd(O, H, seed=48) * 0.05
    b_np = rnd(O, seed=49)
    lw_np, lb_np = 1.0 + 0.1 * rnd(O, seed=50), 0.1 * rnd(O, seed=51)

    def run(device):
        x = st.tensor(x_np).to(device)
        g = st.tensor(g_np).to(device)
        w = st.tensor(w_np).to(device).requires_grad_(True)
        b = st.tensor(b_np).to(device).requires_grad_(True)
        lw = st.tensor(lw_np).to(device).requires_grad_(True)
        lb = st.tensor(lb_np).to(device).requires_grad_(True)
        h = F.linear(x, w, b)
        y = F.layer_norm(h, (O,), lw, lb, 1e-5)
        (y * g).sum().backward()
        return cpu(h), b.grad, lw.grad, lb.grad

    hc, bc, lwc, lbc = run("cpu")
    capfd.readouterr()
    hg, bg, lwg, lbg = run("cuda")
    _col_ran(capfd, colreduce)
    # the LayerNorm bias gradient is the sum of g over the tokens, exactly
    close(lbg, _sum64(g_np, (0, 1)), rtol=1e-5, atol=1e-5)
    # its weight gradient: the sum of g * xhat, xhat from the GPU's own h
    h64 = hg.astype(np.float64)
    mu = h64.mean(-1, keepdims=True)
    xhat = (h64 - mu) / np.sqrt(((h64 - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    close(lwg, (g_np * xhat).sum((0, 1)), rtol=1e-5, atol=1e-4)
    for a, c in ((bg, bc), (lwg, lwc), (lbg, lbc)):
        close(a, c, rtol=1e-4, atol=1e-4)


def test_colreduce_gelu_backward_bias_grad(colreduce, capfd):
    # integer-valued x and W/8: the matmul is exact on both devices, so the
    # bias gradient differs only by the GELU backward's rounding
    rng = np.random.default_rng(52)
    x_np = rng.integers(-2, 3, (6, 40, 64)).astype(np.float32)
    w_np = (rng.integers(-2, 3, (96, 64)) / 8).astype(np.float32)
    b_np = (rng.integers(-4, 5, 96) / 4).astype(np.float32)
    g_np = rnd(6, 40, 96, seed=53)

    def run(device):
        b = st.tensor(b_np).to(device).requires_grad_(True)
        h = F.linear(st.tensor(x_np).to(device), st.tensor(w_np).to(device), b)
        (F.gelu(h) * st.tensor(g_np).to(device)).sum().backward()
        return b.grad

    want = run("cpu")
    capfd.readouterr()
    got = run("cuda")
    _col_ran(capfd, colreduce)
    close(got, want, rtol=1e-5, atol=1e-5)


def test_colreduce_compiled_gelu_backward_prologue(colreduce, capfd, monkeypatch):
    # the GELU backward's gradient stored per point and summed over the
    # tokens in one kernel (a per-point store inside the column pass)
    def f(x, dy):
        cdf = 0.5 * (1.0 + st.erf(x * 0.7071067811865476))
        pdf = st.exp(-0.5 * x * x) * 0.3989422804014327
        dx = dy * (cdf + x * pdf)
        return dx, dx.sum(0)

    x_np, dy_np = rnd(2048, 768, seed=54), rnd(2048, 768, seed=55)
    cg = st.compile(f, backend="nvrtc")
    cc = st.compile(f, backend=CPU_BACKEND)
    dxc, sc = cc(st.tensor(x_np), st.tensor(dy_np))
    capfd.readouterr()
    dxg, sg = cg(st.tensor(x_np).cuda(), st.tensor(dy_np).cuda())
    assert dxg.is_cuda and sg.is_cuda
    _col_ran(capfd, colreduce)
    close(dxg, dxc, rtol=1e-5, atol=1e-6)
    # the column sum of the very values the kernel stored
    close(sg, _sum64(cpu(dxg), (0,)), rtol=1e-5, atol=1e-5)
    close(sg, sc, rtol=1e-5, atol=1e-4)
    # again with the switch flipped (read at launch, not at compile time)
    capfd.readouterr()
    monkeypatch.setenv("SYMTRACE_CUDA_COLREDUCE", "0" if colreduce else "1")
    dx2, s2 = cg(st.tensor(x_np).cuda(), st.tensor(dy_np).cuda())
    _col_ran(capfd, not colreduce)
    close(dx2, dxg, rtol=1e-6, atol=1e-7)
    close(s2, sg, rtol=1e-6, atol=1e-5)


# ---------------- autocast on CUDA (runtime/autocast.c) ----------------
def test_autocast_cuda_policy_and_values():
    """CUDA's lists: products in bfloat16 (cuBLAS with bfloat16 operands),
    layer_norm, softmax and sum of 16-bit tensors in float32; CPU tensors
    are left to the CPU's state. Values as the CPU computes them from the
    same bfloat16 operands."""
    a, b = st.tensor(rnd(64, 96, seed=1)), st.tensor(rnd(96, 80, seed=2))
    ga, gb = a.cuda(), b.cuda()
    with st.autocast("cuda", dtype=st.bfloat16):
        p = ga @ gb
        assert p.dtype is st.bfloat16 and p.is_cuda
        assert (a @ b).dtype is st.float32                 # CPU tensors: CPU autocast is off
        ln = F.layer_norm(p, (80,))
        sm = p.softmax(-1)
        s = p.sum()
        assert ln.dtype is st.float32 and sm.dtype is st.float32 and s.dtype is st.float32
    ref = (a.to(st.bfloat16).float() @ b.to(st.bfloat16).float())
    close(p.float(), ref, rtol=1e-2, atol=1e-2)
    close(sm, F.softmax(p.float().cpu(), -1), rtol=1e-5, atol=1e-6)


def test_autocast_cuda_compiled_step_matches_eager():
    w1 = st.tensor(rnd(64, 32, seed=3) * 0.2).cuda().requires_grad_(True)
    w2 = st.tensor(rnd(10, 64, seed=4) * 0.2).cuda().requires_grad_(True)
    t = st.tensor(np.arange(16) % 10).cuda()

    def step(x):
        with st.autocast("cuda", dtype=st.bfloat16):
            h = F.gelu(F.linear(x, w1))
            loss = F.cross_entropy(F.linear(h, w2), t)
        loss.backward()
        return loss

    cf = st.compile(step, backend="nvrtc")
    for s in range(3):
        x = st.tensor(rnd(16, 32, seed=10 + s)).cuda()
        w1.grad = w2.grad = None
        le = step(x)
        ge = (cpu(w1.grad), cpu(w2.grad))
        w1.grad = w2.grad = None
        lc = cf(x)
        assert lc.dtype is st.float32 and w1.grad.dtype is st.float32
        close(lc, le, rtol=1e-4, atol=1e-5)
        close(w1.grad, ge[0], rtol=2e-2, atol=2e-3)
        close(w2.grad, ge[1], rtol=2e-2, atol=2e-3)


def test_inplace_through_views_on_cuda():
    """CopySlices (runtime/viewhist.c) on the GPU: positions and masks go to the device,
    the backward zeroes the view's region there; diagonal and as_strided are views."""
    x0, w0 = rnd(4, 5), rnd(5, seed=1)

    def run(dev):
        x = st.tensor(x0, device=dev).requires_grad_()
        w = st.tensor(w0, device=dev).requires_grad_()
        y = x * 2
        z = y[0]
        y[:, 1].mul_(3)
        y[2].mul_(w)
        y.t()[3].add_(1)
        y.diagonal().add_(w[:4])
        d = y.t().detach()          # a non-contiguous base of its own (the general path)
        d[1].mul_(w[:4])
        loss = (y * y).sum() + (z * z).sum() + y.as_strided((2,), (6,), 1).sum() + (d * d).sum()
        loss.backward()
        return loss, x.grad, w.grad, y

    a, b = run("cpu"), run("cuda")
    for u, v in zip(a, b):
        close(v, u, rtol=1e-5, atol=1e-5)


def test_eleventh_session_paths_on_cuda():
    """What the eleventh GPU-less session added, on the GPU against the CPU: writes by
    index under autograd in place (a scatter through a flat view), a traced diagonal write
    and mask fill (nvrtc), and conv / conv_transpose / max pooling through window views."""
    x0, w0, k0 = rnd(6, 7), rnd(6, seed=1), rnd(4, 3, 3, 3, seed=2)
    im0 = rnd(2, 3, 9, 8, seed=3)

    def f(x, w):
        y = x * 2
        y.diagonal().add_(w)
        y[y > 1] = 0.5
        return (y * y).sum()

    def run(dev, compiled):
        x = st.tensor(x0, device=dev).requires_grad_()
        w = st.tensor(w0, device=dev).requires_grad_()
        y = x * 1
        y[st.tensor([0, 3, 5], device=dev), st.tensor([1, 1, 6], device=dev)] = w[:3]
        y.index_add_(1, st.tensor([2, 0], device=dev), w.reshape(6, 1).expand(6, 2))
        g = st.compile(f, backend="nvrtc" if dev == "cuda" else "llvm") if compiled else f
        loss = g(y, w)
        k = st.tensor(k0, device=dev).requires_grad_()
        im = st.tensor(im0, device=dev).requires_grad_()
        c = F.conv2d(im, k, stride=2, padding=1)
        t = F.conv_transpose2d(c, k, stride=2, padding=1, output_padding=1)
        loss = loss + (c * c).sum() + (t * t).sum() + F.max_pool2d(im, 3, 2, 1).sum()
        loss.backward()
        return loss, x.grad, w.grad, k.grad, im.grad

    for compiled in (False, True):
        a, b = run("cpu", compiled), run("cuda", compiled)
        for u, v in zip(a, b):
            close(v, u, rtol=1e-4, atol=1e-4)
