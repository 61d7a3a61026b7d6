"""Batch norm's speed work (llvm_backend/codegen_kernels.c): independent reductions of a row
kernel share one walk of the row, and the splat paths (an input broadcast along the innermost
dim at run time, as a per-channel [1, C, 1, 1] operand, read from a scratch row at unit
stride instead of by the strided path). Checked here: batch norm against torch (values,
gradients, running statistics; eager and compiled, several calls), the kernels those paths
serve against numpy (broadcast operands of several dtypes, rows longer than the scratch, in
place, independent and dependent reductions), and the structure of the compiled batch norm
backward (its reduction kernel walks each row twice: both sums in one pass, then the
per-point epilogue)."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as snn

R = np.random.RandomState(7)


def rnd(*shape, dtype=np.float32):
    return R.standard_normal(shape).astype(dtype)


def _close(got, want, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                               rtol=rtol, atol=atol)


# ---------------- batch norm against torch ----------------
_SHAPES = [(6, 3), (5, 4, 7), (4, 5, 6, 7), (3, 1, 5, 9), (2, 3, 3, 4, 5), (7, 1), (3, 5, 1, 1)]
_CLS = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d", 5: "BatchNorm3d"}


def _pair(torch, shape, affine, momentum, track=True):
    c = shape[1]
    tm = getattr(torch.nn, _CLS[len(shape)])(c, affine=affine, momentum=momentum, track_running_stats=track)
    sm = getattr(snn, _CLS[len(shape)])(c, affine=affine, momentum=momentum, track_running_stats=track)
    if affine:
        w, b = rnd(c) + 1.5, rnd(c)
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(w))
            tm.bias.copy_(torch.tensor(b))
        sm.weight.data = st.tensor(w)
        sm.bias.data = st.tensor(b)
    return tm, sm


def _step(L, m, x, g):
    y = m(x)
    (y.relu() * g).sum().backward()
    return y


@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("compiled", [False, True])
def test_batch_norm_train_then_eval_matches_torch(shape, affine, momentum, compiled):
    torch = pytest.importorskip("torch")
    tm, sm = _pair(torch, shape, affine, momentum)
    step = st.compile(_step) if compiled else _step
    for i in range(3):   # three calls: the compiled one runs its cached graph twice
        xn, gn = rnd(*shape) * 2 + i, rnd(*shape)
        tx = torch.tensor(xn, requires_grad=True)
        sx = st.tensor(xn, requires_grad=True)
        ty = _step(torch, tm, tx, torch.tensor(gn))
        sy = step(st, sm, sx, st.tensor(gn))
        _close(sy.detach().numpy(), ty.detach().numpy())
        _close(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)
        if affine:
            _close(sm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-3, atol=1e-4)
            _close(sm.bias.grad.numpy(), tm.bias.grad.numpy(), rtol=1e-3, atol=1e-4)
            sm.weight.grad = sm.bias.grad = None
            tm.weight.grad = tm.bias.grad = None
        _close(sm.running_mean.numpy(), tm.running_mean.numpy())
        _close(sm.running_var.numpy(), tm.running_var.numpy())
    assert int(sm.num_batches_tracked.item()) == int(tm.num_batches_tracked.item()) == 3
    tm.eval()
    sm.eval()
    xn = rnd(*shape)
    fwd = st.compile(lambda m, x: m(x)) if compiled else (lambda m, x: m(x))
    for _ in range(3):
        _close(fwd(sm, st.tensor(xn)).detach().numpy(), tm(torch.tensor(xn)).detach().numpy())


@pytest.mark.parametrize("compiled", [False, True])
def test_batch_norm_no_running_stats_matches_torch(compiled):
    torch = pytest.importorskip("torch")
    shape = (4, 3, 5, 6)
    tm, sm = _pair(torch, shape, True, 0.1, track=False)
    step = st.compile(_step) if compiled else _step
    for _ in range(3):
        xn, gn = rnd(*shape), rnd(*shape)
        tx, sx = torch.tensor(xn, requires_grad=True), st.tensor(xn, requires_grad=True)
        _close(step(st, sm, sx, st.tensor(gn)).detach().numpy(),
               _step(torch, tm, tx, torch.tensor(gn)).detach().numpy())
        _close(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_batch_norm_bfloat16_matches_torch():
    torch = pytest.importorskip("torch")
    xn = rnd(4, 3, 5, 6)
    tx = torch.tensor(xn).to(torch.bfloat16).requires_grad_()
    sx = st.tensor(xn).to(st.bfloat16).requires_grad_()
    w, b = rnd(3) + 1.5, rnd(3)
    ty = torch.nn.functional.batch_norm(tx, None, None, torch.tensor(w).bfloat16(), torch.tensor(b).bfloat16(),
                                        training=True)
    sy = st.nn.functional.batch_norm(sx, None, None, st.tensor(w).to(st.bfloat16), st.tensor(b).to(st.bfloat16),
                                     training=True)
    assert sy.dtype == st.bfloat16
    _close(sy.float().detach().numpy(), ty.float().detach().numpy(), rtol=3e-2, atol=3e-2)
    gn = rnd(4, 3, 5, 6)
    (ty.float() * torch.tensor(gn)).sum().backward()
    (sy.float() * st.tensor(gn)).sum().backward()
    _close(sx.grad.float().numpy(), tx.grad.float().numpy(), rtol=5e-2, atol=5e-2)


def test_compiled_resnet_like_block_matches_torch():
    """conv + BN + ReLU + residual, a training step compiled and run 3 times, as torch."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tnet = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
                               torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding=1, bias=False),
                               torch.nn.BatchNorm2d(8))
    snet = st.nn.Sequential(st.nn.Conv2d(3, 8, 3, padding=1, bias=False), st.nn.BatchNorm2d(8),
                            st.nn.ReLU(), st.nn.Conv2d(8, 8, 3, padding=1, bias=False), st.nn.BatchNorm2d(8))
    snet.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tnet.state_dict().items()})

    def sstep(x):
        y = snet(x)
        (y.relu() ** 2).mean().backward()
        return y

    f = st.compile(sstep)
    for _ in range(3):
        xn = rnd(4, 3, 9, 11)
        ty = tnet(torch.tensor(xn))
        (ty.relu() ** 2).mean().backward()
        sy = f(st.tensor(xn))
        _close(sy.detach().numpy(), ty.detach().numpy(), rtol=1e-3, atol=1e-4)
        for (n, tp), sp in zip(tnet.named_parameters(), snet.parameters()):
            _close(sp.grad.numpy(), tp.grad.numpy(), rtol=2e-3, atol=2e-4)
            sp.grad = None
            tp.grad = None
    for (n, tb), sb in zip(tnet.named_buffers(), snet.buffers()):
        _close(sb.numpy(), tb.numpy())


# ---------------- the kernels those paths serve, against numpy ----------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("shape", [(3, 4, 5, 6), (2, 3, 1, 1500), (2, 5, 3, 1)])
@pytest.mark.parametrize("compiled", [False, True])
def test_elementwise_with_per_channel_operands(dtype, shape, compiled):
    c = shape[1]
    a = (rnd(*shape) * 4).astype(dtype)
    b = (rnd(*shape) * 4).astype(dtype)
    w = (rnd(1, c, 1, 1) * 4).astype(dtype)
    s0 = (rnd(1, 1, 1, 1) * 4).astype(dtype)
    m = rnd(1, c, 1, 1) > 0

    def fn(a, b, w, s0, m):
        return st.where(m, a * w + b, b - s0 * w), (a - w) * (b + w) - s0

    f = st.compile(fn) if compiled else fn
    for _ in range(3):
        y1, y2 = f(st.tensor(a), st.tensor(b), st.tensor(w), st.tensor(s0), st.tensor(m))
        np.testing.assert_allclose(y1.numpy(), np.where(m, a * w + b, b - s0 * w), rtol=1e-6)
        np.testing.assert_allclose(y2.numpy(), (a - w) * (b + w) - s0, rtol=1e-6)


@pytest.mark.parametrize("compiled", [False, True])
def test_in_place_add_of_per_channel_operand(compiled):
    xn, wn = rnd(3, 4, 5, 6), rnd(1, 4, 1, 1)

    def fn(x, w):
        x.add_(w)
        x.mul_(w)
        return x

    f = st.compile(fn) if compiled else fn
    x = st.tensor(xn)
    f(x, st.tensor(wn))
    np.testing.assert_allclose(x.numpy(), (xn + wn) * wn, rtol=1e-6)


@pytest.mark.parametrize("shape", [(4, 3, 8, 8), (2, 5, 3, 700), (3, 2, 1, 1), (2, 3, 33, 40)])
def test_independent_reductions_over_channels(shape):
    xn, gn = rnd(*shape), rnd(*shape)
    wn = rnd(1, shape[1], 1, 1)
    dims = (0, 2, 3)

    def fn(x, g, w):
        return ((g * w).sum(dims), (g * x).sum(dims), (x * w).amax(dims), x.amin(dims), (g - x).mean(dims),
                g * w - x)

    f = st.compile(fn)
    for _ in range(3):
        got = f(st.tensor(xn), st.tensor(gn), st.tensor(wn))
        want = ((gn * wn).sum(dims), (gn * xn).sum(dims), (xn * wn).max(dims), xn.min(dims),
                (gn - xn).mean(dims), gn * wn - xn)
        for a, b in zip(got, want):
            _close(a.numpy(), b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 3, 8, 8), (2, 5, 3, 1100)])
def test_dependent_reductions_keep_their_order(shape):
    """A reduction that reads another (the variance after the mean, a softmax's sum after its
    max) still runs after it."""
    xn = rnd(*shape) * 3 + 2
    wn = rnd(1, shape[1], 1, 1)

    def fn(x, w):
        m = x.mean((0, 2, 3), keepdim=True)
        v = ((x - m) ** 2).mean((0, 2, 3), keepdim=True)
        e = (x * w - (x * w).amax(-1, keepdim=True)).exp()
        return (x - m) / (v + 1e-5).sqrt() * w, e / e.sum(-1, keepdim=True)

    f = st.compile(fn)
    y, sm = f(st.tensor(xn), st.tensor(wn))
    m = xn.mean((0, 2, 3), keepdims=True)
    v = ((xn - m) ** 2).mean((0, 2, 3), keepdims=True)
    _close(y.numpy(), (xn - m) / np.sqrt(v + 1e-5) * wn, rtol=1e-4, atol=1e-4)
    z = xn * wn
    e = np.exp(z - z.max(-1, keepdims=True))
    _close(sm.numpy(), e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)


# ---------------- structure of the compiled batch norm step ----------------
_STRUCT = textwrap.dedent("""
    import numpy as np, symtrace as st
    bn = st.nn.BatchNorm2d(16)
    x = st.tensor(np.random.RandomState(0).randn(8, 16, 16, 16).astype('f4'), requires_grad=True)
    def step(x):
        y = st.nn.functional.relu(bn(x))
        (y * y).sum().backward()
    f = st.compile(step)
    for _ in range(3):
        f(x)
""")


def test_batch_norm_backward_reduction_walks_rows_twice(tmp_path):
    """The backward's reduction kernel (the sums for the input's and the weight's gradients
    and the per-point epilogue) walks each channel's rows twice, both sums in one pass (it was
    three walks, one per sum); its rows take the splat path (the per-channel statistics are
    read from a scratch row, not by the strided path). Read from the kernels' LLVM modules
    (SYMTRACE_DUMP_DIR, a fresh kernel cache so that each is built): each walk of a row
    holds one `rjoin` block, the splat path `rsplat` blocks."""
    dump, cache = tmp_path / "dump", tmp_path / "cache"
    dump.mkdir()
    env = dict(os.environ, SYMTRACE_DUMP_DIR=str(dump), SYMTRACE_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(st.__file__))] + sys.path))
    subprocess.run([sys.executable, "-c", _STRUCT], check=True, env=env, timeout=300)
    walks = {}
    for p in dump.glob("llvm_*.ll"):
        text = p.read_text()
        names = re.findall(r"^; kernel \d+: (\S+)", text, re.M)
        for n in names:
            walks[n] = (len(re.findall(r"^rjoin\d*:", text, re.M)),
                        len(re.findall(r"^rsplat\d*:", text, re.M)))
    bwd = [n for n in walks if re.search(r"_where_sum_.*_sum", n)]
    assert bwd, sorted(walks.items())
    for n in bwd:
        assert walks[n][0] == 2, (n, walks[n])
        assert walks[n][1] >= 1, (n, walks[n])
