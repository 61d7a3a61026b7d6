# symtrace.compile(fn, backend="cudaemu"): the nvrtc backend's CUDA C run
# on the CPU (nvrtc_backend/emu/, a testing backend) on CPU tensors against
# eager: a small transformer block (layer norm, attention with softmax, a
# GELU MLP) forward and backward, one training step of a tiny model
# (embedding, the block, cross-entropy, AdamW), an index out of bounds
# raising IndexError as on the GPU, and a clear error when no C++ compiler
# runs (a fresh process with CXX naming none). Skipped where the backend is
# unavailable. Compiled objects are cached on disk ($SYMTRACE_CACHE_DIR/
# cudaemu, else /tmp/symtrace-cudaemu-<uid>), so a second run compiles nothing.
import copy
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import symtrace
import symtrace.nn as nn
import symtrace.nn.functional as F

pytestmark = pytest.mark.skipif(
    not hasattr(symtrace, "compile") or not symtrace._C._fe_backend_available("cudaemu"),
    reason="the cudaemu backend needs a C++ compiler")


@pytest.fixture(autouse=True)
def _fresh():
    symtrace.reset()
    yield
    symtrace.reset()


def T(rng, *shape, grad=False):
    t = symtrace.tensor(rng.standard_normal(shape).astype(np.float32))
    return t.requires_grad_() if grad else t


def N(t):
    return np.array(t.detach().numpy(), dtype=np.float64)


def close(a, b, what, rtol=1e-4, atol=1e-5):
    assert a is not None and b is not None, f"{what}: missing ({a is None}, {b is None})"
    np.testing.assert_allclose(N(a), N(b), rtol=rtol, atol=atol, err_msg=what)


class Block(nn.Module):
    """A pre-norm transformer block: multi-head self-attention (softmax over
    scaled scores) and a GELU MLP, each with a residual."""

    def __init__(self, d=32, heads=4, ff=64):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q = q.reshape(b, s, h, d // h).transpose(1, 2)
        k = k.reshape(b, s, h, d // h).transpose(1, 2)
        v = v.reshape(b, s, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // h) ** 0.5)
        y = att.softmax(dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def test_transformer_block_forward_backward(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMTRACE_DUMP_DIR", str(tmp_path))
    symtrace.manual_seed(0)
    me = Block()
    mc = copy.deepcopy(me)
    cm = symtrace.compile(mc, backend="cudaemu", fullgraph=True)
    rng = np.random.default_rng(1)
    for call in range(2):
        x = T(rng, 2, 7, 32)
        xe, xc = x.detach().clone().requires_grad_(), x.detach().clone().requires_grad_()
        ye, yc = me(xe), cm(xc)
        close(yc, ye, f"call {call}: output")
        g = T(rng, 2, 7, 32)
        (ye * g).sum().backward()
        (yc * g).sum().backward()
        close(xc.grad, xe.grad, f"call {call}: input grad")
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        close(pc.grad, pe.grad, f"grad of {n}")
    # the graphs ran on cudaemu: it wrote their C++ sources into the dump dir
    assert glob.glob(os.path.join(str(tmp_path), "cudaemu-*.cpp")), os.listdir(tmp_path)


class TinyLM(nn.Module):
    def __init__(self, vocab=50, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.block = Block(d)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids, labels):
        logits = self.head(self.ln(self.block(self.emb(ids))))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def test_training_step():
    symtrace.manual_seed(2)
    me = TinyLM()
    mc = copy.deepcopy(me)
    cm = symtrace.compile(mc, backend="cudaemu", fullgraph=True)
    oe = symtrace.optim.AdamW(me.parameters(), lr=1e-2)
    oc = symtrace.optim.AdamW(mc.parameters(), lr=1e-2)
    rng = np.random.default_rng(3)
    ids = symtrace.tensor(rng.integers(0, 50, size=(3, 9)).astype(np.int64))
    labels = symtrace.tensor(rng.integers(0, 50, size=(3, 9)).astype(np.int64))
    for o in (oe, oc):
        o.zero_grad()
    le, lc = me(ids, labels), cm(ids, labels)
    close(lc, le, "loss")
    le.backward()
    lc.backward()
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        close(pc.grad, pe.grad, f"grad of {n}")
    oe.step()
    oc.step()
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        close(pc, pe, f"{n} after the step")
    close(cm(ids, labels), me(ids, labels), "loss after the step")


def test_index_out_of_bounds_raises():
    def f(w, idx):
        return (F.embedding(idx, w) * 2.0).sum(-1)

    rng = np.random.default_rng(4)
    w = T(rng, 5, 3)
    cf = symtrace.compile(f, backend="cudaemu", fullgraph=True)
    ok = symtrace.tensor(np.array([[0, 4], [2, 1]], np.int64))
    close(cf(w, ok), f(w, ok), "embedding")
    bad = symtrace.tensor(np.array([[0, 7], [2, 1]], np.int64))
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        cf(w, bad)


def test_no_compiler_is_a_clear_error():
    code = ("import symtrace\n"
            "try:\n"
            "    symtrace.compile(lambda x: x + 1, backend='cudaemu')\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n")
    env = dict(os.environ, CXX="/nonexistent/c++")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert "cudaemu needs a C++ compiler" in r.stdout and "/nonexistent/c++" in r.stdout, (
        r.stdout, r.stderr)
