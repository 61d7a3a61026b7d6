# Checkpointed regions draw their random numbers again instead of saving them
# (ir/backward.c draw_offsets, ST_ATTR_RNG_REPLAY; runtime/exec.c launches the
# replayed draw at the generator state its forward run started from, which
# runtime/cfn.c keeps per tape node): the gradients of a checkpointed dropout block
# equal those of the same block without checkpoint bit for bit (compiled, several
# calls, each with new numbers, on llvm and interp; and eager), the backward graph
# saves no dropout mask and the peak memory drops to that of the block without
# dropout, draws that are not checkpointed are still saved, and an HF-style BERT
# with gradient checkpointing and dropout trains with the losses of the same loop
# without checkpointing.
import os
import sys

import numpy as np
import pytest

import symtrace as st
from symtrace.utils.checkpoint import checkpoint

from compile_model_helpers import hf_bert_checkpoint_steps

D = 16
BACKENDS = [b for b in ("llvm", "interp") if st._C._fe_backend_available(b)]


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class Block(st.nn.Module):
    """Linear, dropout, GELU, an attention-like softmax with dropout, linear."""

    def __init__(self, p=0.25):
        super().__init__()
        nn = st.nn
        self.a, self.b = nn.Linear(D, 2 * D), nn.Linear(2 * D, D)
        self.d1, self.d2, self.act = nn.Dropout(p), nn.Dropout(p), nn.GELU()

    def forward(self, x):
        h = self.act(self.d1(self.a(x)))
        att = self.d2((h @ h.transpose(-1, -2)).softmax(-1))
        return self.b(att @ h)


class Net(st.nn.Module):
    def __init__(self, ck, p=0.25):
        super().__init__()
        st.manual_seed(0)
        self.b1, self.mid, self.b2 = Block(p), st.nn.Linear(D, D), Block(p)
        self.ck = ck

    def forward(self, x):
        run = (lambda m, v: checkpoint(m, v, use_reentrant=False)) if self.ck else \
            (lambda m, v: m(v))
        h = run(self.b1, x)
        h = self.mid(h).tanh() + h
        return run(self.b2, h)


def loss_of(net):
    def f(x):
        y = net(x)
        return (y * y).sum()
    return f


def grads(net, f, xn):
    for p in net.parameters():
        p.grad = None
    x = st.tensor(xn).requires_grad_(True)
    loss = f(x)
    loss.backward()
    return [loss.detach().numpy().copy(), x.grad.numpy().copy()] + [
        p.grad.numpy().copy() for p in net.parameters()]


def run_calls(ck, backend, ncalls=3):
    net = Net(ck)
    f = loss_of(net) if backend is None else st.compile(loss_of(net), backend=backend)
    st.manual_seed(5)
    xn = _x((3, 6, D), 1)
    out = [grads(net, f, xn) for _ in range(ncalls)]
    return out, st.get_rng_state().tolist()


def assert_same(a, b):
    assert len(a) == len(b)
    for i, (p, q) in enumerate(zip(a, b)):
        np.testing.assert_array_equal(p, q, err_msg=str(i))


# cudaemu: the nvrtc renderer's CUDA C run on the CPU (when a C++ compiler is there)
EMU = ["cudaemu"] if st._C._fe_backend_available("cudaemu") else []


@pytest.mark.parametrize("backend", BACKENDS + EMU + [None])
def test_checkpointed_dropout_gradients_are_bit_identical(backend):
    st.reset()
    plain, rs_plain = run_calls(False, backend)
    st.reset()
    ck, rs_ck = run_calls(True, backend)
    for a, b in zip(plain, ck):
        assert_same(a, b)
    # each call drew new numbers, and the generator went on as without checkpoint
    assert not np.array_equal(plain[1][0], plain[2][0])
    assert rs_ck == rs_plain


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_checkpoint_equals_eager_checkpoint(backend):
    st.reset()
    eager, rs_e = run_calls(True, None)
    st.reset()
    comp, rs_c = run_calls(True, backend)
    assert rs_c == rs_e
    for a, b in zip(eager, comp):
        for i, (p, q) in enumerate(zip(a, b)):
            np.testing.assert_allclose(p, q, rtol=1e-4, atol=1e-5, err_msg=str(i))


def _peak(ck, p, backend):
    """Peak bytes of a compiled forward + backward of a deep stack of attention-like
    blocks whose softmax probabilities go through dropout (the mask, batch*seq*seq
    bools a block, is what checkpointing used to keep)."""
    nn = st.nn
    B, S, W, depth = 4, 128, 32, 4
    st.manual_seed(0)
    lins = nn.ModuleList([nn.Linear(W, W) for _ in range(depth)])
    drops = [nn.Dropout(p) for _ in range(depth)]

    def block(i, x):
        a = (x @ x.transpose(-1, -2) * 0.1).softmax(-1)
        if p:
            a = drops[i](a)
        return lins[i](a @ x).tanh() + x

    def f(x):
        for i in range(depth):
            x = checkpoint(lambda v, i=i: block(i, v), x, use_reentrant=False) if ck \
                else block(i, x)
        return x.sum()
    g = st.compile(f, backend=backend)
    x = st.tensor(_x((B, S, W), 3)).requires_grad_(True)
    g(x).backward()
    g(x).backward()                     # the second call runs the compiled pair
    x.grad = None
    for q in lins.parameters():
        q.grad = None
    # requested bytes: the allocated figure adds the cache's rounding of large
    # blocks, which depends on the tests that ran before in the process
    base = st.memory.stats()["requested_bytes"]
    st.memory.reset_peak_stats()
    loss = g(x)
    loss.backward()
    del loss
    return st.memory.max_memory_requested() - base


@pytest.mark.parametrize("backend", BACKENDS[:1])
def test_no_mask_is_saved_and_peak_memory_drops(backend):
    B, S, depth = 4, 128, 4
    mask = B * S * S                    # one bool mask a block
    st.reset()
    plain = _peak(False, 0.1, backend)
    ck = _peak(True, 0.1, backend)
    ck_nodrop = _peak(True, 0.0, backend)
    # the masks are no longer kept (they were: depth masks on top of ck_nodrop)
    assert ck < ck_nodrop + depth * mask, (ck, ck_nodrop)
    if st.config.fusion:
        # fused, the recomputed draw is stored once as bools: one block's mask at a
        # time, alive while that block's backward runs (its two readers, the
        # recomputed softmax row kernel and the gradient matmul's epilogue, are
        # separate kernels); unfused, one block's float draw is written out instead
        assert ck <= ck_nodrop + mask, (ck, ck_nodrop)
    assert ck + depth * mask < plain, (ck, plain)


def test_saved_log_names_no_bool_mask(tmp_path):
    """SYMTRACE_SAVED_LOG: the compiled checkpointed block saves no bool value."""
    import subprocess
    code = (
        "import numpy as np, symtrace as st\n"
        "from symtrace.utils.checkpoint import checkpoint\n"
        "lin = st.nn.Linear(16, 16); drop = st.nn.Dropout(0.3)\n"
        "ck = %r\n"
        "def f(x):\n"
        "    blk = lambda v: lin(drop(v.softmax(-1)))\n"
        "    y = checkpoint(blk, x, use_reentrant=False) if ck else blk(x)\n"
        "    return (y * y).sum()\n"
        "g = st.compile(f, backend='%s')\n"
        "x = st.tensor(np.ones((8, 16), np.float32)).requires_grad_(True)\n"
        "for _ in range(2): g(x).backward()\n")
    env = dict(os.environ, SYMTRACE_SAVED_LOG="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(st.__file__))] +
                                          [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    logs = {}
    for ck in (False, True):
        r = subprocess.run([sys.executable, "-c", code % (ck, BACKENDS[0])], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        logs[ck] = [ln for ln in r.stderr.splitlines() if ln.startswith("  ")]
    assert any(" bool " in ln for ln in logs[False]), logs[False]   # the mask, unchecked
    assert not any(" bool " in ln for ln in logs[True]), logs[True]


def test_draw_outside_a_checkpoint_is_still_saved():
    """A dropout outside the checkpointed function keeps its mask; the gradients
    still equal eager's and the uncheckpointed run's."""
    st.reset()
    st.manual_seed(0)
    lin, drop = st.nn.Linear(D, D), st.nn.Dropout(0.5)

    def f(ck):
        def g(x):
            h = drop(x)
            y = checkpoint(lambda v: drop(lin(v)).tanh(), h, use_reentrant=False) if ck \
                else drop(lin(h)).tanh()
            return (y * y).sum()
        return g
    xn = _x((5, D), 4)
    res = {}
    for name, fn in (("plain", st.compile(f(False))), ("ck", st.compile(f(True))),
                     ("eager", f(True))):
        st.manual_seed(9)
        res[name] = [grads(lin, fn, xn) for _ in range(3)]
    for a, b in zip(res["plain"], res["ck"]):
        assert_same(a, b)
    for a, b in zip(res["eager"], res["ck"]):
        for p, q in zip(a, b):
            np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)


def test_replayed_draws_with_create_graph():
    """A backward with create_graph re-runs the forward eagerly: the replayed draws
    still take the forward's numbers."""
    st.reset()
    st.manual_seed(0)
    lin, drop = st.nn.Linear(D, D), st.nn.Dropout(0.4)

    def f(ck):
        def g(x):
            y = checkpoint(lambda v: drop(lin(v)), x, use_reentrant=False) if ck \
                else drop(lin(x))
            return (y * y * y).sum()
        return g
    xn = _x((4, D), 5)
    res = {}
    for name, fn in (("plain", st.compile(f(False))), ("ck", st.compile(f(True)))):
        st.manual_seed(2)
        out = []
        for _ in range(2):
            x = st.tensor(xn).requires_grad_(True)
            (gx,) = st.autograd.grad(fn(x), [x], create_graph=True)
            (gg,) = st.autograd.grad(gx.sum(), [x])
            out.append([gx.detach().numpy().copy(), gg.numpy().copy()])
        res[name] = out
    for a, b in zip(res["plain"], res["ck"]):
        for p, q in zip(a, b):
            np.testing.assert_allclose(p, q, rtol=1e-6, atol=1e-6)


def _bert_losses(ck, comp, steps=3, p=0.1):
    losses, peak, _ = hf_bert_checkpoint_steps(ck, comp, steps, p)
    return losses, peak


def test_hf_bert_checkpointed_training_matches_plain_losses():
    plain, peak_plain = _bert_losses(False, True)
    ck, peak_ck = _bert_losses(True, True)
    eager_ck, _ = _bert_losses(True, False)
    _, peak_nodrop = _bert_losses(True, True, p=0.0)
    np.testing.assert_allclose(ck, plain, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ck, eager_ck, rtol=1e-5)
    assert len(set(ck)) == len(ck)            # every step drew new masks
    assert peak_ck < 0.5 * peak_plain, (peak_ck, peak_plain)
    # no dropout masks are kept across layers: the checkpointed model with dropout
    # peaks above the one without by at most one layer's dropout working set while
    # that layer's backward runs (the attention probabilities after dropout, float,
    # beside the softmax's; their bool mask; the two hidden-size dropouts' outputs
    # and masks). Keeping the four layers' masks would add 3 * 196608 bytes more.
    att, hid = 8 * 4 * 64 * 64, 8 * 64 * 64
    layer = att * 4 + att + 2 * (hid * 4 + hid)
    assert peak_ck <= peak_nodrop + layer, (peak_ck, peak_nodrop, layer)
