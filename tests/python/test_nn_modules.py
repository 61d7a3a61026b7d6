# symtrace.nn modules against torch.nn: each layer's forward with the same
# weights (torch's state_dict copied in through load_state_dict), then every
# parameter's gradient (and the inputs') after backward of a random-weighted
# sum of the outputs; MultiheadAttention with bool/float masks and both
# layouts; TransformerEncoderLayer post-/pre-norm with relu/gelu; the Module
# machinery (registration, traversal order, state_dict round trip and strict
# errors, train/eval, zero_grad, apply, to(float64), deepcopy, repr).
import copy
import math
from collections import OrderedDict

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F

torch = pytest.importorskip("torch")
tnn = torch.nn

RTOL, ATOL = 2e-5, 2e-5   # float32 forward
GRTOL, GATOL = 1e-4, 1e-5  # float32 gradients (longer chains)


# ---------------- helpers ----------------
def np_of(t):
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t.detach().numpy())


def st_of(a):
    return st.tensor(np.ascontiguousarray(a))


def copy_weights(sm, tm):
    """torch module's state (as numpy) -> symtrace module via load_state_dict."""
    sd = OrderedDict((k, st_of(np_of(v))) for k, v in tm.state_dict().items())
    res = sm.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []


def close(a, b, rtol=RTOL, atol=ATOL, msg=""):
    np.testing.assert_allclose(np_of(a).astype(np.float64), np_of(b).astype(np.float64),
                               rtol=rtol, atol=atol, err_msg=msg)


def inputs(rng, *shapes, grad=True):
    """Float32 inputs as (symtrace, torch) pairs; both require grad when grad."""
    out = []
    for s in shapes:
        a = rng.standard_normal(s).astype(np.float32)
        x = st_of(a)
        t = torch.from_numpy(a.copy())
        if grad:
            x.requires_grad_(True)
            t.requires_grad_(True)
        out.append((x, t))
    return out


def check_grads(sm, tm, s_out, t_out, rng, s_inputs=(), t_inputs=(), rtol=GRTOL, atol=GATOL):
    """backward of sum(out * R) for a fixed random R on both sides; compares every
    parameter's .grad (by name) and the inputs' grads."""
    if not isinstance(s_out, (tuple, list)):
        s_out, t_out = (s_out,), (t_out,)
    s_loss, t_loss = None, None
    for so, to in zip(s_out, t_out):
        if so is None:
            continue
        r = rng.standard_normal(tuple(to.shape)).astype(np.float32)
        sl = (so * st_of(r)).sum()
        tl = (to * torch.from_numpy(r)).sum()
        s_loss = sl if s_loss is None else s_loss + sl
        t_loss = tl if t_loss is None else t_loss + tl
    s_loss.backward()
    t_loss.backward()
    tp = dict(tm.named_parameters())
    n = 0
    for name, p in sm.named_parameters():
        tg = tp[name].grad
        if tg is None:
            assert p.grad is None or np.all(np_of(p.grad) == 0), name
            continue
        assert p.grad is not None, f"no gradient for {name}"
        assert tuple(p.grad.shape) == tuple(tg.shape), name
        close(p.grad, tg, rtol, atol, msg=f"grad of {name}")
        n += 1
    for i, (x, t) in enumerate(zip(s_inputs, t_inputs)):
        if t.grad is not None:
            close(x.grad, t.grad, rtol, atol, msg=f"grad of input {i}")
    return n


# ---------------- simple layers ----------------
@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    rng = np.random.default_rng(0)
    tm = tnn.Linear(7, 5, bias=bias)
    sm = nn.Linear(7, 5, bias=bias)
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    copy_weights(sm, tm)
    (x, tx), = inputs(rng, (3, 4, 7))
    so, to = sm(x), tm(tx)
    close(so, to)
    assert check_grads(sm, tm, so, to, rng, [x], [tx]) == (2 if bias else 1)
    assert repr(sm) == repr(tm)


def test_linear_init_statistics():
    st.manual_seed(0)
    m = nn.Linear(256, 128)
    w, b = np_of(m.weight), np_of(m.bias)
    bound = 1 / math.sqrt(256)  # kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert np.abs(b).max() <= bound and abs(w.mean()) < 0.02 * bound
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding(padding_idx):
    rng = np.random.default_rng(1)
    tm = tnn.Embedding(10, 6, padding_idx=padding_idx)
    st.manual_seed(1)
    sm = nn.Embedding(10, 6, padding_idx=padding_idx)
    assert sm.padding_idx == tm.padding_idx
    w0 = np_of(sm.weight)
    if padding_idx is not None:
        assert np.all(w0[tm.padding_idx] == 0)
        assert np.abs(np.delete(w0, tm.padding_idx, 0)).sum() > 0
    copy_weights(sm, tm)
    ids = rng.integers(0, 10, size=(4, 5))
    ids[0, :3] = tm.padding_idx if padding_idx is not None else 0
    so, to = sm(st_of(ids)), tm(torch.from_numpy(ids))
    close(so, to)
    check_grads(sm, tm, so, to, rng)
    if padding_idx is not None:
        assert np.all(np_of(sm.weight.grad)[tm.padding_idx] == 0)
    assert repr(sm) == repr(tm)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(affine):
    rng = np.random.default_rng(2)
    tm = tnn.LayerNorm(8, eps=1e-5, elementwise_affine=affine)
    sm = nn.LayerNorm(8, elementwise_affine=affine)
    if affine:  # non-trivial affine parameters
        with torch.no_grad():
            tm.weight.copy_(torch.randn(8))
            tm.bias.copy_(torch.randn(8))
    copy_weights(sm, tm)
    (x, tx), = inputs(rng, (2, 3, 8))
    so, to = sm(x), tm(tx)
    close(so, to, 1e-4, 1e-5)
    assert check_grads(sm, tm, so, to, rng, [x], [tx]) == (2 if affine else 0)
    assert repr(sm) == repr(tm)


@pytest.mark.parametrize("name,args", [("ReLU", ()), ("Tanh", ()), ("GELU", ()), ("GELU", ("tanh",)),
                                       ("Softmax", (-1,)), ("Softmax", (1,)), ("Identity", ())])
def test_activations(name, args):
    rng = np.random.default_rng(3)
    sm, tm = getattr(nn, name)(*args), getattr(tnn, name)(*args)
    (x, tx), = inputs(rng, (3, 4, 5))
    so, to = sm(x), tm(tx)
    close(so, to)
    check_grads(sm, tm, so, to, rng, [x], [tx])
    assert repr(sm) == repr(tm)


def test_dropout_train_eval():
    st.manual_seed(4)
    d = nn.Dropout(0.3)
    x = st.ones(200, 100)
    y = np_of(d(x))
    kept = y != 0
    assert 0.66 < kept.mean() < 0.74
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    d.eval()
    assert not d.training
    np.testing.assert_array_equal(np_of(d(x)), np_of(x))
    assert repr(d) == repr(tnn.Dropout(0.3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_loss(reduction):
    rng = np.random.default_rng(5)
    sm = nn.CrossEntropyLoss(ignore_index=1, reduction=reduction)
    tm = tnn.CrossEntropyLoss(ignore_index=1, reduction=reduction)
    (x, tx), = inputs(rng, (6, 4))
    y = np.array([0, 1, 3, 2, 1, 3])
    so, to = sm(x, st_of(y)), tm(tx, torch.from_numpy(y))
    close(so, to)
    check_grads(sm, tm, so, to, rng, [x], [tx])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    rng = np.random.default_rng(6)
    sm, tm = nn.MSELoss(reduction=reduction), tnn.MSELoss(reduction=reduction)
    (x, tx), (y, ty) = inputs(rng, (4, 5), (4, 5))
    so, to = sm(x, y), tm(tx, ty)
    close(so, to)
    check_grads(sm, tm, so, to, rng, [x, y], [tx, ty])
    close(F.mse_loss(x, y, reduction=reduction), torch.nn.functional.mse_loss(tx, ty, reduction=reduction))


# ---------------- containers ----------------
def _mlp(lib):
    return lib.Sequential(lib.Linear(6, 8), lib.GELU(), lib.Linear(8, 8), lib.Tanh(), lib.Linear(8, 3))


def test_sequential():
    rng = np.random.default_rng(7)
    sm, tm = _mlp(nn), _mlp(tnn)
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    copy_weights(sm, tm)
    (x, tx), = inputs(rng, (5, 6))
    so, to = sm(x), tm(tx)
    close(so, to)
    assert check_grads(sm, tm, so, to, rng, [x], [tx]) == 6
    assert len(sm) == 5 and isinstance(sm[1], nn.GELU) and sm[-1] is sm[4]
    sub = sm[:2]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2 and sub[0] is sm[0]
    sm.append(nn.ReLU())
    assert len(sm) == 6 and isinstance(sm[5], nn.ReLU)
    assert repr(sm) == repr(tm.append(tnn.ReLU()))
    od = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert [n for n, _ in od.named_parameters()] == ["fc.weight", "fc.bias"]
    with pytest.raises(IndexError):
        sm[6]


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
    ml.append(nn.Linear(2, 3))
    ml.extend([nn.Tanh(), nn.Linear(3, 1)])
    ml.insert(1, nn.Identity())
    kinds = [type(m).__name__ for m in ml]
    assert kinds == ["Linear", "Identity", "ReLU", "Linear", "Tanh", "Linear"]
    assert len(ml) == 6 and ml[-1] is ml[5] and isinstance(ml[1:3], nn.ModuleList)
    assert [n for n, _ in ml.named_parameters()] == ["0.weight", "0.bias", "3.weight", "3.bias",
                                                     "5.weight", "5.bias"]
    md = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    md["c"] = nn.Linear(2, 1)
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    assert isinstance(md.pop("b"), nn.ReLU) and list(md) == ["a", "c"]


# ---------------- MultiheadAttention ----------------
def _mha_masks(kind, L, S, N, H, rng):
    """(st attn_mask, torch attn_mask, st kpm, torch kpm); no row is fully masked."""
    am = tam = kpm = tkpm = None
    if kind in ("bool", "both_bool"):
        m = np.triu(np.ones((L, S), dtype=bool), 1)
        am, tam = st_of(m), torch.from_numpy(m)
    if kind == "float":
        m = rng.standard_normal((L, S)).astype(np.float32)
        m[0, -1] = -np.inf
        am, tam = st_of(m), torch.from_numpy(m)
    if kind == "float3d":
        m = rng.standard_normal((N * H, L, S)).astype(np.float32)
        am, tam = st_of(m), torch.from_numpy(m)
    if kind == "bool3d":
        m = rng.random((N * H, L, S)) < 0.3
        m[..., 0] = False
        am, tam = st_of(m), torch.from_numpy(m)
    if kind in ("kpm", "both_bool"):
        k = np.zeros((N, S), dtype=bool)
        k[0, -2:] = True
        k[-1, 1] = True
        kpm, tkpm = st_of(k), torch.from_numpy(k)
    if kind == "kpm_float":
        k = np.zeros((N, S), dtype=np.float32)
        k[0, -2:] = -np.inf
        k[-1, 1] = -1.5
        kpm, tkpm = st_of(k), torch.from_numpy(k)
    return am, tam, kpm, tkpm


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask", ["none", "bool", "float", "float3d", "bool3d", "kpm", "kpm_float",
                                  "both_bool"])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_multihead_attention_self(batch_first, mask, need_weights, average):
    rng = np.random.default_rng(8)
    E, H, L, N = 16, 4, 5, 3
    torch.manual_seed(0)
    tm = tnn.MultiheadAttention(E, H, batch_first=batch_first)
    with torch.no_grad():
        tm.in_proj_bias.copy_(torch.randn(3 * E) * 0.1)
        tm.out_proj.bias.copy_(torch.randn(E) * 0.1)
    sm = nn.MultiheadAttention(E, H, batch_first=batch_first)
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    copy_weights(sm, tm)
    shape = (N, L, E) if batch_first else (L, N, E)
    (x, tx), = inputs(rng, shape)
    am, tam, kpm, tkpm = _mha_masks(mask, L, L, N, H, rng)
    so, sw = sm(x, x, x, key_padding_mask=kpm, need_weights=need_weights, attn_mask=am,
                average_attn_weights=average)
    to, tw = tm(tx, tx, tx, key_padding_mask=tkpm, need_weights=need_weights, attn_mask=tam,
                average_attn_weights=average)
    close(so, to, 1e-4, 1e-5)
    if need_weights:
        close(sw, tw, 1e-4, 1e-6)
    else:
        assert sw is None and tw is None
    assert check_grads(sm, tm, (so, sw), (to, tw), rng, [x], [tx]) == 4


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_cross(batch_first):
    """query != key != value (separate projections), S != L, and key is value."""
    rng = np.random.default_rng(9)
    E, H, L, S, N = 12, 3, 4, 6, 2
    tm = tnn.MultiheadAttention(E, H, batch_first=batch_first)
    sm = nn.MultiheadAttention(E, H, batch_first=batch_first)
    copy_weights(sm, tm)
    mk = (lambda n: (N, n, E)) if batch_first else (lambda n: (n, N, E))
    (q, tq), (k, tk), (v, tv) = inputs(rng, mk(L), mk(S), mk(S))
    am, tam, kpm, tkpm = _mha_masks("both_bool", L, S, N, H, rng)
    so, sw = sm(q, k, v, key_padding_mask=kpm, attn_mask=am)
    to, tw = tm(tq, tk, tv, key_padding_mask=tkpm, attn_mask=tam)
    close(so, to, 1e-4, 1e-5)
    close(sw, tw, 1e-4, 1e-6)
    check_grads(sm, tm, (so, sw), (to, tw), rng, [q, k, v], [tq, tk, tv])
    so2, _ = sm(q, k, k, need_weights=False)  # kv-packed projection
    to2, _ = tm(tq, tk, tk, need_weights=False)
    close(so2, to2, 1e-4, 1e-5)


def test_multihead_attention_unbatched_and_eval_dropout():
    rng = np.random.default_rng(10)
    tm = tnn.MultiheadAttention(8, 2, dropout=0.5)
    sm = nn.MultiheadAttention(8, 2, dropout=0.5)
    copy_weights(sm, tm)
    tm.eval()
    sm.eval()
    (x, tx), = inputs(rng, (5, 8))
    so, sw = sm(x, x, x)
    to, tw = tm(tx, tx, tx)
    close(so, to, 1e-4, 1e-5)
    close(sw, tw, 1e-4, 1e-6)


def test_scaled_dot_product_attention():
    rng = np.random.default_rng(11)
    (q, tq), (k, tk), (v, tv) = inputs(rng, (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 8), grad=False)
    tF = torch.nn.functional
    close(F.scaled_dot_product_attention(q, k, v), tF.scaled_dot_product_attention(tq, tk, tv), 1e-4, 1e-6)
    bm = rng.random((4, 6)) < 0.7
    bm[:, 0] = True
    close(F.scaled_dot_product_attention(q, k, v, attn_mask=st_of(bm)),
          tF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.from_numpy(bm)), 1e-4, 1e-6)
    q2, k2, v2 = (t[:, :, :4] for t in (q, k, v))
    tq2, tk2, tv2 = (t[:, :, :4] for t in (tq, tk, tv))
    close(F.scaled_dot_product_attention(q2, k2, v2, is_causal=True, scale=0.3),
          tF.scaled_dot_product_attention(tq2, tk2, tv2, is_causal=True, scale=0.3), 1e-4, 1e-6)


# ---------------- Transformer ----------------
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_encoder_layer(norm_first, activation, batch_first):
    rng = np.random.default_rng(12)
    d, h, ff, L, N = 16, 4, 32, 6, 3
    kw = dict(dim_feedforward=ff, dropout=0.0, activation=activation, batch_first=batch_first,
              norm_first=norm_first)
    tm = tnn.TransformerEncoderLayer(d, h, **kw)
    sm = nn.TransformerEncoderLayer(d, h, **kw)
    with torch.no_grad():
        for n, p in tm.named_parameters():
            if n.startswith("norm") or n.endswith("bias"):
                p.copy_(torch.randn(p.shape) * 0.2 + (1.0 if n.endswith("weight") else 0.0))
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    copy_weights(sm, tm)
    (x, tx), = inputs(rng, (N, L, d) if batch_first else (L, N, d))
    kpm = np.zeros((N, L), dtype=bool)
    kpm[1, -2:] = True
    causal = np.triu(np.ones((L, L), dtype=bool), 1)
    for sargs, targs in [({}, {}),
                         ({"src_key_padding_mask": st_of(kpm)}, {"src_key_padding_mask": torch.from_numpy(kpm)}),
                         ({"src_mask": st_of(causal)}, {"src_mask": torch.from_numpy(causal)})]:
        so, to = sm(x, **sargs), tm(tx, **targs)
        close(so, to, 1e-4, 2e-5)
    x.grad = None
    tx.grad = None
    so = sm(x, src_key_padding_mask=st_of(kpm))
    to = tm(tx, src_key_padding_mask=torch.from_numpy(kpm))
    assert check_grads(sm, tm, so, to, rng, [x], [tx]) == 12


def test_transformer_encoder_layer_callable_activation_and_eval():
    rng = np.random.default_rng(13)
    tm = tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.3, activation=torch.nn.functional.gelu)
    sm = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3, activation=F.gelu)
    copy_weights(sm, tm)
    sm.eval()
    tm.eval()
    (x, tx), = inputs(rng, (4, 2, 8))
    close(sm(x), tm(tx), 1e-4, 2e-5)
    assert all(not m.training for m in sm.modules())


@pytest.mark.parametrize("with_norm", [False, True])
def test_transformer_encoder(with_norm):
    rng = np.random.default_rng(14)
    d, h = 16, 2
    tl = tnn.TransformerEncoderLayer(d, h, 24, dropout=0.0, batch_first=True)
    sl = nn.TransformerEncoderLayer(d, h, 24, dropout=0.0, batch_first=True)
    tm = tnn.TransformerEncoder(tl, 3, norm=tnn.LayerNorm(d) if with_norm else None,
                                enable_nested_tensor=False)
    sm = nn.TransformerEncoder(sl, 3, norm=nn.LayerNorm(d) if with_norm else None)
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(sm.state_dict().keys()) == list(tm.state_dict().keys())
    # deep copies: distinct parameters per layer, equal initial values
    p0, p1 = sm.layers[0].linear1.weight, sm.layers[1].linear1.weight
    assert p0 is not p1 and isinstance(p1, nn.Parameter) and p1.requires_grad
    np.testing.assert_array_equal(np_of(p0), np_of(p1))
    with torch.no_grad():  # make the layers differ
        for p in tm.parameters():
            p.add_(torch.randn(p.shape) * 0.05)
    copy_weights(sm, tm)
    (x, tx), = inputs(rng, (2, 7, d))
    kpm = np.zeros((2, 7), dtype=bool)
    kpm[0, 5:] = True
    so = sm(x, src_key_padding_mask=st_of(kpm))
    to = tm(tx, src_key_padding_mask=torch.from_numpy(kpm))
    close(so, to, 1e-4, 3e-5)
    n = check_grads(sm, tm, so, to, rng, [x], [tx])
    assert n == 36 + (2 if with_norm else 0)
    causal = np.triu(np.full((7, 7), -np.inf, dtype=np.float32), 1)
    close(sm(x, mask=st_of(causal)), tm(tx, mask=torch.from_numpy(causal)), 1e-4, 3e-5)


# ---------------- Module machinery ----------------
class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.LayerNorm(3)])
        self.scale = nn.Parameter(st.ones(3))
        self.register_buffer("running", st.zeros(3))
        self.register_buffer("tmp", st.ones(2), persistent=False)
        self.shared = self.fc1  # the same module twice: parameters are deduplicated

    def forward(self, x):
        x = self.act(self.fc1(x))
        for b in self.blocks:
            x = b(x)
        return x * self.scale + self.running


class _TNet(tnn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = tnn.Linear(4, 3)
        self.act = tnn.ReLU()
        self.blocks = tnn.ModuleList([tnn.Linear(3, 3), tnn.LayerNorm(3)])
        self.scale = tnn.Parameter(torch.ones(3))
        self.register_buffer("running", torch.zeros(3))
        self.register_buffer("tmp", torch.ones(2), persistent=False)
        self.shared = self.fc1

    def forward(self, x):
        x = self.act(self.fc1(x))
        for b in self.blocks:
            x = b(x)
        return x * self.scale + self.running


def test_registration_and_traversal_match_torch():
    sm, tm = _Net(), _TNet()
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in sm.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in tm.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in sm.named_buffers()] == [n for n, _ in tm.named_buffers()] == ["running", "tmp"]
    assert [n for n, _ in sm.named_modules()] == [n for n, _ in tm.named_modules()]
    assert [n for n, _ in sm.named_children()] == [n for n, _ in tm.named_children()]
    assert [n for n, _ in sm.named_parameters(recurse=False)] == ["scale"]
    assert list(sm.state_dict().keys()) == list(tm.state_dict().keys())
    assert "tmp" not in sm.state_dict()
    assert len(list(sm.parameters())) == 7 and len(list(sm.modules())) == 6
    assert sm.fc1 is sm.shared and sm.running is sm._buffers["running"]
    assert "fc1" in dir(sm) and "scale" in dir(sm) and "running" in dir(sm)
    with pytest.raises(AttributeError):
        sm.nope
    with pytest.raises(TypeError):
        sm.scale = st.ones(3)  # a plain tensor can't replace a parameter
    sm.scale = None
    assert [n for n, _ in sm.named_parameters(recurse=False)] == []
    del sm.act
    assert "act" not in dict(sm.named_children())
    sm.extra = nn.Linear(1, 1)
    assert "extra.weight" in dict(sm.named_parameters())
    sm.extra = None
    assert "extra.weight" not in dict(sm.named_parameters())
    sm.register_parameter("p", nn.Parameter(st.zeros(1)))
    sm.add_module("m", nn.Tanh())
    assert sm.get_parameter("p") is sm.p and sm.get_submodule("blocks.1") is sm.blocks[1]
    with pytest.raises(KeyError):
        sm.register_buffer("a.b", st.zeros(1))


def test_forward_and_grads_with_buffers():
    rng = np.random.default_rng(15)
    sm, tm = _Net(), _TNet()
    with torch.no_grad():
        tm.running.copy_(torch.randn(3))
        tm.scale.copy_(torch.randn(3))
    copy_weights(sm, tm)
    np.testing.assert_array_equal(np_of(sm.running), np_of(tm.running))
    (x, tx), = inputs(rng, (5, 4))
    so, to = sm(x), tm(tx)
    close(so, to)
    assert check_grads(sm, tm, so, to, rng, [x], [tx]) == 7
    assert sm.running.grad is None


def test_state_dict_round_trip():
    a, b = _Net(), _Net()
    sd = a.state_dict()
    assert isinstance(sd, OrderedDict)
    for k, v in sd.items():
        assert v.grad_fn is None and not v.requires_grad, k
    before = {k: np_of(v).copy() for k, v in b.state_dict().items()}
    res = b.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == [] and repr(res) == "<All keys matched successfully>"
    for k, v in b.state_dict().items():
        np.testing.assert_array_equal(np_of(v), np_of(sd[k]))
    assert any(not np.array_equal(before[k], np_of(sd[k])) for k in before)
    # in place: the same Parameter objects, still leaves requiring grad
    w = b.fc1.weight
    b.load_state_dict(a.state_dict())
    assert b.fc1.weight is w and w.requires_grad and w.is_leaf and w.grad_fn is None
    # state_dict tensors share storage with the parameters (detached views), as torch
    assert sd["fc1.weight"].data_ptr() == a.fc1.weight.data_ptr()
    # keep_vars returns the parameters themselves
    assert a.state_dict(keep_vars=True)["fc1.weight"] is a.fc1.weight


def test_load_state_dict_strict_errors():
    m = nn.Linear(3, 2)
    sd = m.state_dict()
    bad = OrderedDict(sd)
    del bad["bias"]
    bad["extra"] = st.zeros(1)
    with pytest.raises(RuntimeError) as ei:
        m.load_state_dict(bad)
    msg = str(ei.value)
    assert msg.startswith("Error(s) in loading state_dict for Linear:")
    assert 'Missing key(s) in state_dict: "bias".' in msg
    assert 'Unexpected key(s) in state_dict: "extra".' in msg
    res = m.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["extra"]
    wrong = OrderedDict(sd)
    wrong["weight"] = st.zeros(3, 3)
    with pytest.raises(RuntimeError) as ei:
        m.load_state_dict(wrong)
    assert ("size mismatch for weight: copying a param with shape [3, 3] from checkpoint, the shape in "
            "current model is [2, 3].") in str(ei.value)
    with pytest.raises(RuntimeError):
        m.load_state_dict(wrong, strict=False)  # size mismatches are errors even when not strict
    # the same message shape as torch
    tm = tnn.Linear(3, 2)
    tbad = OrderedDict((k, torch.zeros(1)) if k == "extra" else (k, torch.from_numpy(np_of(v)))
                       for k, v in bad.items())
    with pytest.raises(RuntimeError) as te:
        tm.load_state_dict(tbad)
    assert str(te.value) == msg
    nested = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    sd2 = nested.state_dict()
    del sd2["1.weight"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "1.weight"'):
        nested.load_state_dict(sd2)


def test_train_eval_flags():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.Sequential(nn.Dropout(0.2)))
    assert all(x.training for x in m.modules())
    assert m.eval() is m
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    m.train(False)
    x = st.randn(4, 2)
    np.testing.assert_array_equal(np_of(m(x)), np_of(m[0](x)))


def test_zero_grad_and_requires_grad():
    rng = np.random.default_rng(16)
    m = _mlp(nn)
    (x, _), = inputs(rng, (3, 6), grad=False)
    m(x).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    for p in m.parameters():
        assert p.grad is not None and np.all(np_of(p.grad) == 0)
    m(x).sum().backward()
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    assert m(x).grad_fn is None
    m.requires_grad_()
    assert all(p.requires_grad for p in m.parameters())


def test_apply_and_init():
    m = _mlp(nn)
    seen = []

    def fn(mod):
        seen.append(type(mod).__name__)
        if isinstance(mod, nn.Linear):
            nn.init.constant_(mod.weight, 0.5)
            nn.init.zeros_(mod.bias)

    assert m.apply(fn) is m
    assert seen == ["Linear", "GELU", "Linear", "Tanh", "Linear", "Sequential"]
    for mod in m:
        if isinstance(mod, nn.Linear):
            assert np.all(np_of(mod.weight) == 0.5) and np.all(np_of(mod.bias) == 0)
            assert mod.weight.requires_grad and mod.weight.grad_fn is None


def test_to_float64_and_back():
    rng = np.random.default_rng(17)
    sm, tm = _Net(), _TNet()
    copy_weights(sm, tm)
    w_before = sm.fc1.weight
    assert sm.to(st.float64) is sm
    tm.to(torch.float64)
    assert sm.fc1.weight.dtype == st.float64 and sm.running.dtype == st.float64
    assert isinstance(sm.fc1.weight, nn.Parameter) and sm.fc1.weight.requires_grad
    assert sm.fc1.weight is not w_before and w_before.dtype == st.float32
    assert sm.shared.weight is sm.fc1.weight
    x = rng.standard_normal((3, 4))
    close(sm(st_of(x)), tm(torch.from_numpy(x)), 1e-12, 1e-12)
    assert sm(st_of(x)).dtype == st.float64
    sm.float()
    assert all(p.dtype == st.float32 for p in sm.parameters())
    sm.double()
    assert all(p.dtype == st.float64 for p in sm.parameters())
    sm.half()
    assert all(p.dtype == st.float16 for p in sm.parameters())
    with pytest.raises(TypeError):
        sm.to(st.int64)


def test_deepcopy_and_repr():
    m = _Net()
    c = copy.deepcopy(m)
    assert c.fc1 is not m.fc1 and c.shared is c.fc1 and c.fc1.weight is not m.fc1.weight
    assert isinstance(c.fc1.weight, nn.Parameter) and c.running is not m.running
    np.testing.assert_array_equal(np_of(c.fc1.weight), np_of(m.fc1.weight))
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in m.named_parameters()]
    with st.no_grad():
        c.fc1.weight.add_(1.0)
    assert not np.array_equal(np_of(c.fc1.weight), np_of(m.fc1.weight))
    assert repr(m) == repr(_TNet()).replace("_TNet(", "_Net(")
    tl = tnn.TransformerEncoderLayer(8, 2, 16)
    sl = nn.TransformerEncoderLayer(8, 2, 16)
    assert repr(sl) == repr(tl)
    p = nn.Parameter(st.ones(2))
    assert repr(p).startswith("Parameter containing:\ntensor([1., 1.]")


def test_parameter_basics():
    t = st.randn(3)
    p = nn.Parameter(t)
    assert isinstance(p, nn.Parameter) and isinstance(p, st.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.data_ptr() == t.data_ptr()  # aliases the tensor's storage
    q = nn.Parameter(t, requires_grad=False)
    assert not q.requires_grad
    y = p * 2
    assert type(y) is st.Tensor and y.requires_grad
    c = copy.deepcopy(p)
    assert isinstance(c, nn.Parameter) and c.data_ptr() != p.data_ptr() and c.requires_grad


def test_init_functions():
    st.manual_seed(18)
    w = st.empty(200, 300)
    assert nn.init.calculate_gain("relu") == math.sqrt(2.0)
    assert nn.init.calculate_gain("tanh") == 5.0 / 3
    assert nn.init.calculate_gain("leaky_relu", 0.2) == torch.nn.init.calculate_gain("leaky_relu", 0.2)
    assert nn.init._calculate_fan_in_and_fan_out(st.empty(4, 5, 3)) == (15, 12)
    with pytest.raises(ValueError):
        nn.init._calculate_fan_in_and_fan_out(st.empty(4))
    a = np_of(nn.init.uniform_(w, -2.0, 3.0))
    assert a.min() >= -2 and a.max() <= 3 and abs(a.mean() - 0.5) < 0.05
    a = np_of(nn.init.normal_(w, 1.0, 2.0))
    assert abs(a.mean() - 1.0) < 0.05 and abs(a.std() - 2.0) < 0.05
    a = np_of(nn.init.xavier_uniform_(w))
    bound = math.sqrt(6 / 500)
    assert np.abs(a).max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.02 * bound
    a = np_of(nn.init.xavier_normal_(w, gain=2.0))
    assert abs(a.std() - 2 * math.sqrt(2 / 500)) < 0.02 * 2 * math.sqrt(2 / 500)
    a = np_of(nn.init.kaiming_uniform_(w, nonlinearity="relu"))
    bound = math.sqrt(2.0) * math.sqrt(3 / 300)
    assert np.abs(a).max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.02 * bound
    a = np_of(nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu"))
    assert abs(a.std() - math.sqrt(2 / 200)) < 0.02 * math.sqrt(2 / 200)
    a = np_of(nn.init.trunc_normal_(w, mean=0.5, std=1.0, a=-1.0, b=1.5))
    assert a.min() >= -1.0 and a.max() <= 1.5
    # truncated N(0.5, 1) on [-1, 1.5]: mean 0.5 + (phi(-1.5) - phi(1)) / (Phi(1) - Phi(-1.5))
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    Phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    assert abs(a.mean() - (0.5 + (phi(-1.5) - phi(1.0)) / (Phi(1.0) - Phi(-1.5)))) < 0.01
    nn.init.ones_(w)
    assert np.all(np_of(w) == 1)
    st.manual_seed(5)
    a1 = np_of(nn.init.normal_(st.empty(10)))
    st.manual_seed(5)
    a2 = np_of(nn.init.normal_(st.empty(10)))
    np.testing.assert_array_equal(a1, a2)
    p = nn.Parameter(st.zeros(4, 4))
    nn.init.kaiming_uniform_(p)
    assert p.is_leaf and p.requires_grad and p.grad_fn is None and np.abs(np_of(p)).sum() > 0
