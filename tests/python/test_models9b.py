# End-to-end user programs, ninth set (b), side by side with PyTorch: a seq2seq
# nn.Transformer with padding masks, label-smoothed cross entropy and a greedy decode;
# a wav2vec-like conv1d audio classifier with GroupNorm and weight norm; a tabular /
# recsys model (Embedding padding_idx, EmbeddingBag, feature crosses, BCEWithLogits
# pos_weight, clip_grad_norm_, LR schedulers, a checkpoint resumed mid-training); and
# the training-loop utilities users rely on (train/eval switching, no_grad accuracy,
# gradient accumulation, zero_grad(set_to_none=True), freezing mid-training).
# Each program is written once against a library argument `L` (torch or symtrace);
# symtrace runs it eagerly and under symtrace.compile from torch's initial weights on
# the same batches; losses and parameters must agree with torch's, and the compiled
# run must agree with the eager one (the part that runs without torch).
import io

import numpy as np
import pytest

import symtrace as st
from compile_model_helpers import fresh_frontend, fe_counts  # noqa: F401


def as_np(x):
    return np.asarray(x.detach().tolist() if hasattr(x, "detach") else x, dtype=np.float64)


def twins(torch, build):
    """(torch model, symtrace model) with torch's initial weights; without torch, a
    symtrace model and a second one with the same weights."""
    if torch is None:
        st.manual_seed(0)
        a, b = build(st), build(st)
        b.load_state_dict({k: v.detach().clone() for k, v in a.state_dict().items()})
        return a, b
    torch.manual_seed(0)
    tm = build(torch)
    sm = build(st)
    sm.load_state_dict({k: st.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return tm, sm


def same_params(a, b, rtol=1e-4, atol=1e-5):
    pb = dict(b.named_parameters())
    names = [n for n, _ in a.named_parameters()]
    assert names == list(pb)
    for n, p in a.named_parameters():
        np.testing.assert_allclose(as_np(p), as_np(pb[n]), rtol=rtol, atol=atol, err_msg=n)


def maybe_torch():
    try:
        import torch
        return torch
    except ImportError:  # pragma: no cover
        return None


# ---------------------------------------------------------------- 1. seq2seq

V, PAD, BOS, D = 20, 0, 1, 32


def build_s2s(L):
    nn = L.nn

    class S2S(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_emb = nn.Embedding(V, D, padding_idx=PAD)
            self.tgt_emb = nn.Embedding(V, D, padding_idx=PAD)
            self.pos = nn.Parameter(L.randn(16, D) * 0.02)
            self.tf = nn.Transformer(d_model=D, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                     dim_feedforward=64, dropout=0.0, batch_first=True)
            self.out = nn.Linear(D, V)

        def forward(self, src, tgt):
            T = tgt.shape[1]
            causal = nn.Transformer.generate_square_subsequent_mask(T)
            src_pad, tgt_pad = src == PAD, tgt == PAD
            x = self.src_emb(src) + self.pos[:src.shape[1]]
            y = self.tgt_emb(tgt) + self.pos[:T]
            h = self.tf(x, y, tgt_mask=causal, src_key_padding_mask=src_pad,
                        tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
            return self.out(h)
    return S2S()


def s2s_data():
    rng = np.random.default_rng(0)
    src = rng.integers(2, V, (4, 7))
    src[0, 5:] = PAD
    src[2, 6:] = PAD
    tgt = rng.integers(2, V, (4, 6))
    tgt[1, 4:] = PAD
    tgt[:, 0] = BOS
    return src, tgt


def s2s_train(L, m, compiled, steps=5):
    opt = L.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    F = L.nn.functional

    def step(src, tgt):
        logits = m(src, tgt[:, :-1])                  # teacher forcing
        loss = F.cross_entropy(logits.reshape(-1, V), tgt[:, 1:].reshape(-1),
                               ignore_index=PAD, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()
    f = L.compile(step) if compiled else step
    src, tgt = s2s_data()
    return [float(f(L.tensor(src), L.tensor(tgt))) for _ in range(steps)]


def greedy(L, m, src, steps=5):
    ys = L.full((src.shape[0], 1), BOS, dtype=L.long)
    for _ in range(steps):
        nxt = m(src, ys)[:, -1].argmax(-1, keepdim=True)
        ys = L.cat([ys, nxt], dim=1)
    return ys


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_seq2seq_transformer_train_and_greedy_decode():
    torch = maybe_torch()
    ref, sm = twins(torch, build_s2s)
    _, smc = twins(torch, build_s2s)
    want = s2s_train(torch or st, ref, False)
    got = s2s_train(st, sm, False)
    gotc = s2s_train(st, smc, True)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(gotc, want, rtol=1e-5)
    same_params(sm, ref)
    same_params(smc, ref)
    assert fe_counts()[2] == 0
    src = s2s_data()[0]
    for m in (ref, sm):
        m.eval()
    with (torch or st).no_grad():
        want = greedy(torch or st, ref, (torch or st).tensor(src)).tolist()
    with st.no_grad():
        assert greedy(st, sm, st.tensor(src)).tolist() == want
        assert st.compile(greedy)(st, sm, st.tensor(src)).tolist() == want


# ---------------------------------------------------------------- 2. audio

CONVS = [(16, 10, 5), (16, 3, 2), (16, 3, 2)]     # (channels, kernel, stride)


def build_audio(L, old_weight_norm=False):
    nn = L.nn
    F = nn.functional

    class Wav(nn.Module):
        def __init__(self):
            super().__init__()
            layers, cin = [], 1
            for c, k, s in CONVS:
                layers += [nn.Conv1d(cin, c, k, stride=s, bias=False), nn.GroupNorm(4, c),
                           nn.GELU(), nn.Dropout(0.0)]
                cin = c
            self.feat = nn.Sequential(*layers)
            pc = nn.Conv1d(16, 16, 5, padding=2, groups=4)
            wn = nn.utils.weight_norm if old_weight_norm else nn.utils.parametrizations.weight_norm
            self.pos_conv = wn(pc, name="weight", dim=2)
            self.ln = nn.LayerNorm(16)
            self.head = nn.Linear(16, 5)

        def forward(self, wav, lengths):
            h = self.feat(wav.unsqueeze(1))               # B, C, T'
            h = h + F.gelu(self.pos_conv(h))
            h = self.ln(h.transpose(1, 2))                # B, T', C
            for _, k, s in CONVS:                         # frames per input length
                lengths = L.div(lengths - k, s, rounding_mode="floor") + 1
            mask = (L.arange(h.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)).to(h.dtype)
            pooled = (h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
            return self.head(pooled)
    return Wav()


def audio_train(L, m, compiled, steps=5):
    rng = np.random.default_rng(0)
    lengths = np.array([400, 350, 300, 200])
    wav = rng.standard_normal((4, 400)).astype(np.float32)
    for i, n in enumerate(lengths):
        wav[i, n:] = 0
    y = rng.integers(0, 5, 4)
    opt = L.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)

    def step(w, n, y):
        loss = L.nn.functional.cross_entropy(m(w, n), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()
    f = L.compile(step) if compiled else step
    return [float(f(L.tensor(wav), L.tensor(lengths), L.tensor(y))) for _ in range(steps)]


@pytest.mark.parametrize("old_wn", [False, True], ids=["parametrizations", "hook"])
def test_audio_conv1d_weight_norm(old_wn):
    torch = maybe_torch()
    build = lambda L: build_audio(L, old_wn)  # noqa: E731
    ref, sm = twins(torch, build)
    _, smc = twins(torch, build)
    want = audio_train(torch or st, ref, False)
    np.testing.assert_allclose(audio_train(st, sm, False), want, rtol=1e-5)
    np.testing.assert_allclose(audio_train(st, smc, True), want, rtol=1e-5)
    same_params(sm, ref, rtol=1e-3)
    same_params(smc, ref, rtol=1e-3)
    assert fe_counts()[2] == 0


# ---------------------------------------------------------------- 3. tabular / recsys

NU, NI, NT, DE, B = 30, 40, 25, 8, 16


def build_rec(L):
    nn = L.nn

    class Rec(nn.Module):
        def __init__(self):
            super().__init__()
            self.user = nn.Embedding(NU, DE, padding_idx=0)
            self.item = nn.Embedding(NI, DE, padding_idx=0)
            self.tags_sum = nn.EmbeddingBag(NT, DE, mode="sum")
            self.tags_mean = nn.EmbeddingBag(NT, DE, mode="mean", padding_idx=0)
            self.dense = nn.Sequential(nn.Linear(3, DE), nn.ReLU())
            self.top = nn.Sequential(nn.Linear(5 * DE + 10, 32), nn.ReLU(), nn.Linear(32, 1))

        def forward(self, u, i, tags, offs, tags2d, dense):
            z = L.stack([self.user(u), self.item(i), self.tags_sum(tags, offs),
                         self.tags_mean(tags2d), self.dense(dense)], 1)     # B, 5, D
            inter = L.bmm(z, z.transpose(1, 2))
            iu = L.triu_indices(5, 5, offset=1)
            x = L.cat([z.flatten(1), inter[:, iu[0], iu[1]]], 1)          # feature crosses
            return self.top(x).squeeze(-1)
    return Rec()


def rec_batch(k):
    r = np.random.default_rng(k)
    u = r.integers(0, NU, B)
    u[:3] = 0
    lens = r.integers(0, 4, B)
    return (u, r.integers(1, NI, B), r.integers(0, NT, int(lens.sum())),
            np.concatenate([[0], np.cumsum(lens)[:-1]]), r.integers(0, NT, (B, 3)),
            r.standard_normal((B, 3)).astype(np.float32), (r.random(B) < 0.25).astype(np.float32))


def rec_setup(L, m, sched):
    opt = L.optim.Adam(m.parameters(), lr=1e-2)
    S = L.optim.lr_scheduler
    sch = {"onecycle": lambda: S.OneCycleLR(opt, max_lr=0.05, total_steps=20),
           "warm_restarts": lambda: S.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=1e-4),
           "plateau": lambda: S.ReduceLROnPlateau(opt, factor=0.5, patience=0)}[sched]()
    crit = L.nn.BCEWithLogitsLoss(pos_weight=L.tensor([3.0]))

    def step(*a):
        loss = crit(m(*a[:-1]), a[-1])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = L.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        opt.step()
        return loss.detach(), norm
    return opt, sch, step


def rec_run(L, opt, sch, step, batches, compiled):
    f = L.compile(step) if compiled else step
    out = []
    for b in batches:
        loss, norm = f(*[L.tensor(v) for v in b])
        sch.step(float(loss)) if isinstance(sch, L.optim.lr_scheduler.ReduceLROnPlateau) else sch.step()
        out.append((float(loss), float(norm), opt.param_groups[0]["lr"]))
    return out


@pytest.mark.parametrize("sched", ["onecycle", "warm_restarts", "plateau"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_recsys_schedulers_checkpoint_resume(sched, compiled):
    torch = maybe_torch()
    ref, sm = twins(torch, build_rec)
    batches = [rec_batch(k) for k in range(8)]
    tl = rec_setup(torch or st, ref, sched)
    sl = rec_setup(st, sm, sched)
    want = rec_run(torch or st, *tl, batches[:4], False)
    np.testing.assert_allclose(rec_run(st, *sl, batches[:4], compiled), want, rtol=1e-4, atol=1e-6)
    buf = io.BytesIO()
    st.save({"model": sm.state_dict(), "opt": sl[0].state_dict(), "sched": sl[1].state_dict()}, buf)
    cont = rec_run(st, *sl, batches[4:], compiled)
    np.testing.assert_allclose(cont, rec_run(torch or st, *tl, batches[4:], False),
                               rtol=1e-4, atol=1e-6)
    buf.seek(0)
    ck = st.load(buf)
    m2 = build_rec(st)
    opt2, sch2, step2 = rec_setup(st, m2, sched)
    m2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["opt"])
    sch2.load_state_dict(ck["sched"])
    resumed = rec_run(st, opt2, sch2, step2, batches[4:], compiled)
    if compiled:    # a fresh closure: new graphs (dynamic from the start), summing in another order
        np.testing.assert_allclose(resumed, cont, rtol=1e-6)
    else:
        assert resumed == cont
    assert fe_counts()[2] == 0


# ---------------------------------------------------------------- 4. training-loop utilities

def build_mlp(L):
    nn = L.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(),
                                      nn.Dropout(0.0), nn.Linear(32, 16), nn.ReLU())
            self.head = nn.Linear(16, 4)

        def forward(self, x):
            return self.head(self.body(x))
    return Net()


def loop_train(L, m, compiled, accum=2):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 8, 10)).astype(np.float32)
    Y = rng.integers(0, 4, (6, 8))
    opt = L.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    F = L.nn.functional

    def micro(x, y):
        m.train()
        loss = F.cross_entropy(m(x), y) / accum
        loss.backward()
        return loss.detach()

    def evaluate(x, y):
        m.eval()
        with L.no_grad():
            acc = (m(x).argmax(-1) == y).float().mean()
        m.train()
        return acc
    f = L.compile(micro) if compiled else micro
    ev = L.compile(evaluate) if compiled else evaluate
    out = []
    for i in range(6):
        if i == 3:
            m.body.requires_grad_(False)          # freeze the body mid-training
        opt.zero_grad(set_to_none=True)
        tot = sum(float(f(L.tensor(X[(i + k) % 6]), L.tensor(Y[(i + k) % 6]))) for k in range(accum))
        opt.step()
        acc = ev(L.tensor(X[5]), L.tensor(Y[5])).item()
        g = m.body[0].weight.grad
        out.append((tot, acc, -1.0 if g is None else float(g.abs().sum()), m.training))
    return out


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_training_loop_utilities(compiled):
    torch = maybe_torch()
    ref, sm = twins(torch, build_mlp)
    want = loop_train(torch or st, ref, False)
    got = loop_train(st, sm, compiled)
    assert [r[1:2] + r[3:] for r in got] == [r[1:2] + r[3:] for r in want]
    np.testing.assert_allclose([(r[0], r[2]) for r in got], [(r[0], r[2]) for r in want], rtol=1e-5)
    assert got[3][2] == -1.0                      # frozen: grad stays None
    same_params(sm, ref)
    bufs = dict(ref.named_buffers())
    for n, b in sm.named_buffers():
        np.testing.assert_allclose(as_np(b), as_np(bufs[n]), rtol=1e-5, atol=1e-6, err_msg=n)
    assert fe_counts()[2] == 0


# ---------------------------------------------------------------- focused fixes

@pytest.mark.parametrize("qdt", ["bfloat16", "float16", "float64"])
def test_sdpa_float32_mask_with_other_query_dtype(qdt):
    """A bf16 / f16 / f64 model given nn.Transformer's float32 masks: torch's SDPA takes a
    float32 mask for any query dtype (the output keeps the query's dtype); symtrace
    promoted the scores to float32 and its matmul with the values then raised."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 2, 5, 8)).astype(np.float32)
    mask = rng.standard_normal((5, 5)).astype(np.float32)
    mask[np.triu_indices(5, 1)] = -np.inf
    Q = st.tensor(q).to(getattr(st, qdt))
    out = st.nn.functional.scaled_dot_product_attention(Q, Q, Q, attn_mask=st.tensor(mask))
    assert out.dtype == getattr(st, qdt)
    want = st.nn.functional.scaled_dot_product_attention(
        Q, Q, Q, attn_mask=st.tensor(mask).to(getattr(st, qdt)))
    np.testing.assert_array_equal(as_np(out.float()), as_np(want.float()))
    torch = maybe_torch()
    if torch is not None:
        T = torch.tensor(q).to(getattr(torch, qdt))
        ref = torch.nn.functional.scaled_dot_product_attention(T, T, T, attn_mask=torch.tensor(mask))
        tol = 1e-6 if qdt == "float64" else 2e-2
        np.testing.assert_allclose(as_np(out.float()), ref.float().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("qdt,mdt", [("float32", "bfloat16"), ("float32", "float64")])
def test_sdpa_other_mask_dtypes_raise_as_torch(qdt, mdt):
    Q = st.ones(1, 2, 3).to(getattr(st, qdt))
    with pytest.raises(RuntimeError, match="attn_mask dtype to be bool or float"):
        st.nn.functional.scaled_dot_product_attention(Q, Q, Q, attn_mask=st.zeros(2, 2).to(getattr(st, mdt)))


def test_seq2seq_bf16_model_trains():
    """The seq2seq model cast to bfloat16 (its float32 causal mask reaching SDPA) trains,
    eager and compiled, close to torch's bf16 losses."""
    torch = maybe_torch()
    ref, sm = twins(torch, build_s2s)
    _, smc = twins(torch, build_s2s)
    L = torch or st
    ref.to(L.bfloat16)
    sm.to(st.bfloat16)
    smc.to(st.bfloat16)
    want = s2s_train(L, ref, False, steps=3)
    got = s2s_train(st, sm, False, steps=3)
    np.testing.assert_allclose(got, want, rtol=2e-2)
    np.testing.assert_allclose(s2s_train(st, smc, True, steps=3), got, rtol=1e-2)


@pytest.mark.parametrize("offsets", [[0, 2, 1], [0, 1, 1, 0]])
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_decreasing_offsets_raise(offsets, mode):
    """torch's sum / mean embedding_bag raise on decreasing offsets; symtrace regrouped the
    indices into other bags and returned numbers."""
    w = st.randn(5, 2)
    with pytest.raises(RuntimeError, match="offsets must be non-decreasing"):
        st.nn.functional.embedding_bag(st.tensor([1, 2, 3]), w, st.tensor(offsets), mode=mode)
    with pytest.raises(RuntimeError, match="offsets must be non-decreasing"):
        st.nn.EmbeddingBag(5, 2, mode=mode)(st.tensor([1, 2, 3]), st.tensor(offsets))
    torch = maybe_torch()
    if torch is not None:
        with pytest.raises(RuntimeError):
            torch.nn.functional.embedding_bag(torch.tensor([1, 2, 3]), torch.randn(5, 2),
                                              torch.tensor(offsets), mode=mode)
    # equal offsets (empty bags) stay valid
    out = st.nn.functional.embedding_bag(st.tensor([1, 2, 3]), w, st.tensor([0, 2, 2]), mode=mode)
    assert tuple(out.shape) == (3, 2) and as_np(out[1]).tolist() == [0.0, 0.0]


def test_deepcopy_goes_through_a_modules_own_setstate():
    """copy.deepcopy of a module whose class defines __getstate__ / __setstate__ runs them,
    as Python's protocol (and torch) does; symtrace's Module.__deepcopy__ skipped them."""
    import copy

    class Cached(st.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = st.nn.Linear(2, 2)
            self.cache = {"big": 1}

        def __getstate__(self):
            state = super().__getstate__()
            state.pop("cache")                   # not worth copying
            return state

        def __setstate__(self, state):
            super().__setstate__(state)
            self.cache = {}

    m = Cached()
    c = copy.deepcopy(m)
    assert c.cache == {} and m.cache == {"big": 1}
    assert c.lin is not m.lin and c.lin.weight is not m.lin.weight
    np.testing.assert_array_equal(as_np(c.lin.weight), as_np(m.lin.weight))
    x = st.randn(3, 2)
    np.testing.assert_array_equal(as_np(c.lin(x)), as_np(m.lin(x)))


def test_transformer_activation_module_as_torch():
    """nn.Transformer(activation=<a module>): torch's layer clones are deepcopies, and its
    TransformerDecoderLayer.__setstate__ (which symtrace's copies) then sets the decoder's
    activation to relu (the submodule is not in the instance dict); symtrace's deepcopy
    skipped __setstate__ and kept the module, so its decoder output differed from torch's
    and changed after an st.save / st.load of the model. Both now follow torch."""
    import copy
    for L in filter(None, (st, maybe_torch())):
        dec = L.nn.TransformerDecoderLayer(8, 2, 16, activation=L.nn.GELU())
        assert isinstance(dec.activation, L.nn.GELU)
        assert copy.deepcopy(dec).activation is L.nn.functional.relu
        enc = L.nn.TransformerEncoderLayer(8, 2, 16, activation=L.nn.GELU())
        assert isinstance(copy.deepcopy(enc).activation, L.nn.GELU)
    torch = maybe_torch()
    base = dict(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=24,
                dropout=0.0, batch_first=True)
    build = lambda L: L.nn.Transformer(**base, activation=L.nn.GELU(approximate="tanh"))  # noqa: E731
    ref, sm = twins(torch, build)
    rng = np.random.default_rng(0)
    src = rng.standard_normal((2, 5, 16)).astype(np.float32)
    tgt = rng.standard_normal((2, 4, 16)).astype(np.float32)
    L = torch or st
    want = as_np(ref(L.tensor(src), L.tensor(tgt)))
    got = sm(st.tensor(src), st.tensor(tgt))
    np.testing.assert_allclose(as_np(got), want, rtol=1e-5, atol=1e-5)
    buf = io.BytesIO()
    st.save(sm, buf)
    buf.seek(0)
    again = st.load(buf, weights_only=False)(st.tensor(src), st.tensor(tgt))
    np.testing.assert_array_equal(as_np(again), as_np(got))
