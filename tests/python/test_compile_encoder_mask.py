# A BERT-style encoder whose forward converts its attention mask the way
# PaddleNLP's _convert_attention_mask does (seed 000: the COMPARE_OP on
# `attn_mask.dtype != dtype` that broke paddle-symbolic-trace). The dtype
# tests and the None test are on guarded Python values, not tensor data, so
# symtrace.compile captures the whole forward: one graph, no break, for a
# float mask, a bool mask, an int mask and no mask; results equal eager.
# No torch here: this file also runs under Python 3.12 (.venv312).
import math

import numpy as np
import pytest

import symtrace
import symtrace.nn as nn
import symtrace.nn.functional as F
from compile_corpus import assert_same

pytestmark = pytest.mark.skipif(not hasattr(symtrace, "compile"), reason="symtrace.compile is not built")

VOCAB, MAXLEN, D, HEADS, FFN, LAYERS = 32, 16, 16, 2, 32, 2
B, S = 2, 6


def _convert_attention_mask(attention_mask, dtype):
    if attention_mask is not None and attention_mask.dtype != dtype:
        if attention_mask.dtype == symtrace.bool:
            attention_mask = (1.0 - attention_mask.float()) * -1e4
        else:
            attention_mask = attention_mask.to(dtype)
    return attention_mask


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.drop = nn.Dropout(0.0)

    def _split(self, t):
        b, s, _ = t.shape
        return t.reshape(b, s, self.heads, self.dh).transpose(1, 2)

    def forward(self, x, mask=None):
        q, k, v = self._split(self.q(x)), self._split(self.k(x)), self._split(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
        if mask is not None:
            scores = scores + mask
        p = self.drop(F.softmax(scores, dim=-1))
        ctx = (p @ v).transpose(1, 2)
        b, s = ctx.shape[0], ctx.shape[1]
        return self.o(ctx.reshape(b, s, self.heads * self.dh))


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.attn = SelfAttention(d, heads)
        self.ln1 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.ln2 = nn.LayerNorm(d)
        self.drop = nn.Dropout(0.0)

    def forward(self, x, mask=None):
        x = self.ln1(x + self.drop(self.attn(x, mask)))
        h = self.fc2(F.gelu(self.fc1(x)))
        return self.ln2(x + self.drop(h))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(MAXLEN, D)
        self.ln = nn.LayerNorm(D)
        self.drop = nn.Dropout(0.0)
        self.layers = nn.ModuleList([EncoderLayer(D, HEADS, FFN) for _ in range(LAYERS)])
        self.pool = nn.Linear(D, D)

    def forward(self, input_ids, position_ids, attention_mask=None):
        dtype = self.pool.weight.dtype
        attention_mask = _convert_attention_mask(attention_mask, dtype)
        if attention_mask is not None:
            attention_mask = attention_mask.unsqueeze(1).unsqueeze(2)   # [B, 1, 1, S]
        x = self.drop(self.ln(self.tok(input_ids) + self.pos(position_ids)))
        for layer in self.layers:
            x = layer(x, attention_mask)
        pooled = self.pool(x[:, 0]).tanh()
        return x, pooled


def _model():
    symtrace.manual_seed(7)
    return Encoder().eval()


def _inputs(rng, kind):
    ids = symtrace.tensor(rng.integers(0, VOCAB, size=(B, S)).astype(np.int64))
    pos = symtrace.tensor(np.tile(np.arange(S, dtype=np.int64), (B, 1)))
    keep = np.ones((B, S), dtype=bool)
    keep[0, S - 2:] = False                   # padding at the end of the first row
    keep[1, S - 1:] = False
    if kind == "float":
        mask = symtrace.tensor(np.where(keep, 0.0, -1e4).astype(np.float32))
    elif kind == "bool":
        mask = symtrace.tensor(keep)
    elif kind == "int":
        mask = symtrace.tensor(np.where(keep, 0, -10000).astype(np.int64))
    else:
        mask = None
    return ids, pos, mask


KINDS = ("float", "bool", "int", None)


@pytest.fixture(autouse=True)
def _fresh():
    symtrace.reset()
    yield
    symtrace.reset()


def test_bool_and_float_masks_agree_eagerly():
    m = _model()
    ids, pos, fmask = _inputs(np.random.default_rng(0), "float")
    _, _, bmask = _inputs(np.random.default_rng(0), "bool")
    assert bmask.dtype == symtrace.bool and fmask.dtype == symtrace.float32
    assert_same(m(ids, pos, bmask), m(ids, pos, fmask))
    # the mask matters: without it the padded positions are attended to
    x_none, _ = m(ids, pos, None)
    x_mask, _ = m(ids, pos, fmask)
    assert not np.allclose(x_none.detach().numpy(), x_mask.detach().numpy(), atol=1e-4)


@pytest.mark.parametrize("kind", KINDS, ids=[str(k) for k in KINDS])
def test_encoder_captured_in_full(kind):
    m = _model()
    ids, pos, mask = _inputs(np.random.default_rng(1), kind)
    e = symtrace.explain(m, ids, pos, mask)
    reasons = [f"{b.reason} @ {b.filename}:{b.lineno}" for b in e.break_reasons]
    assert e.graph_break_count == 0, reasons
    assert e.graph_count == 1, (e.graph_count, e.ops_per_graph)
    assert e.ops_per_graph[0] >= 20, e.ops_per_graph
    assert_same(e.out, m(ids, pos, mask))
    # the mask's dtype (or its absence) is guarded
    guards = "\n".join(str(g) for g in e.guards)
    if kind is None:
        assert "None" in guards, guards
    else:
        assert "TENSOR_MATCH" in guards and "attention_mask" in guards, guards


@pytest.mark.parametrize("backend", ("interp", "llvm"))
@pytest.mark.parametrize("kind", KINDS, ids=[str(k) for k in KINDS])
def test_encoder_compiled_equals_eager(kind, backend):
    m = _model()
    cm = symtrace.compile(m, backend=backend)
    a0 = _inputs(np.random.default_rng(2), kind)
    assert_same(cm(*a0), m(*a0))
    t0 = symtrace._C._fe_stats()["translations"]
    assert_same(cm(*a0), m(*a0))
    a1 = _inputs(np.random.default_rng(3), kind)     # new ids, same shapes and dtypes
    assert_same(cm(*a1), m(*a1))
    assert symtrace._C._fe_stats()["translations"] == t0


def test_encoder_switching_mask_kinds():
    """One compiled model called with each kind in turn: one entry per kind
    (dtype / None guards), each reused, results equal eager."""
    m = _model()
    cm = symtrace.compile(m, backend="interp")
    rng = np.random.default_rng(4)
    args = {k: _inputs(rng, k) for k in KINDS}
    for k in KINDS:
        assert_same(cm(*args[k]), m(*args[k]))
    t0 = symtrace._C._fe_stats()["translations"]
    for k in reversed(KINDS):
        assert_same(cm(*args[k]), m(*args[k]))
    assert symtrace._C._fe_stats()["translations"] == t0
    assert symtrace._C._fe_stats()["breaks"] == 0
