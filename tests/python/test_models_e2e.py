# End-to-end user programs against PyTorch ("never break their program"): small
# but complete training and inference programs (ResNet-style CNN, U-Net, LSTM/GRU
# language model, GPT-2 mini with a KV-cache generation loop, VAE, GAN, ViT, and
# a mixed program with gradient accumulation, eval inside the step and a
# checkpoint round trip), each written once against a library argument `L`
# (torch or symtrace) exactly as a user writes it. Each runs from torch's initial
# weights on the same batches with torch (the reference), with symtrace eagerly
# and with symtrace.compile (the step or the model); the per-step losses,
# outputs, parameters and gradients must agree, and the compiled runs must hold
# in a sane number of graphs. Also the API pieces these programs needed
# (interpolate's bicubic and trilinear modes, optim.swa_utils, memory formats,
# torch.cuda.amp's names, SyncBatchNorm) and that a step's cat, a checkpoint's
# save/load and load_state_dict free their tensors without the garbage collector.
import warnings

import numpy as np
import pytest

import symtrace as st

RTOL = 1e-4


def same(name, got, want, rtol=RTOL, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                               rtol=rtol, atol=atol, err_msg=name)


def as_np(x):
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def twins(torch, build):
    """(torch model, build) -> a factory of (torch copy, symtrace copy) with torch's
    initial weights."""
    torch.manual_seed(0)
    ref = build(torch)
    state = {k: v.detach().clone() for k, v in ref.state_dict().items()}

    def make():
        tm = build(torch)
        tm.load_state_dict(state)
        sm = build(st)
        sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in state.items()})
        return tm, sm
    return make


def eager(fn):
    return fn


def check_params(tm, sm, rtol=1e-3, atol=1e-5, grads=True, skip=()):
    sp = dict(sm.named_parameters())
    assert list(sp) == [n for n, _ in tm.named_parameters()]
    for n, p in tm.named_parameters():
        if n in skip:
            continue
        same(n, as_np(sp[n]), as_np(p), rtol, atol)
        if grads:
            assert (p.grad is None) == (sp[n].grad is None), n
            if p.grad is not None:
                same(n + ".grad", as_np(sp[n].grad), as_np(p.grad), rtol, atol)
    sb = dict(sm.named_buffers())
    for n, b in tm.named_buffers():
        same(n, as_np(sb[n]), as_np(b), rtol, atol)


WRAPS = {"eager": eager, "compiled": st.compile}
MODES = pytest.mark.parametrize("mode", ["eager", "compiled"])


# ====================================================================== interpolate: bicubic, trilinear, 5-d
INTERP = [((2, 3, 5, 7), "bicubic", dict(scale_factor=1.5)),
          ((2, 3, 5, 7), "bicubic", dict(size=(9, 4))),
          ((2, 3, 5, 7), "bicubic", dict(size=(9, 13), align_corners=True)),
          ((1, 2, 4, 4), "bicubic", dict(scale_factor=0.5)),
          ((1, 2, 1, 3), "bicubic", dict(size=(3, 1))),
          ((2, 2, 3, 4, 5), "trilinear", dict(scale_factor=2)),
          ((2, 2, 3, 4, 5), "trilinear", dict(size=(5, 3, 7), align_corners=True)),
          ((2, 2, 3, 4, 5), "nearest", dict(scale_factor=(2, 1.5, 0.7))),
          ((2, 2, 3, 4, 5), "nearest-exact", dict(size=(4, 4, 4))),
          ((2, 2, 3, 4, 5), "area", dict(size=(2, 3, 4)))]


@pytest.mark.parametrize("case", INTERP, ids=[f"{c[1]}-{len(c[0])}d-{i}" for i, c in enumerate(INTERP)])
def test_interpolate_more_modes_as_torch(torch, case):
    shape, mode, kw = case
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tx = torch.tensor(a, requires_grad=True)
    sx = st.tensor(a, requires_grad=True)
    want = torch.nn.functional.interpolate(tx, mode=mode, **kw)
    got = st.nn.functional.interpolate(sx, mode=mode, **kw)
    g = np.random.default_rng(1).standard_normal(tuple(want.shape)).astype(np.float32)
    want.backward(torch.tensor(g))
    got.backward(st.tensor(g))
    same("out", as_np(got), as_np(want), 1e-5)
    same("grad", as_np(sx.grad), as_np(tx.grad), 1e-5)
    compiled = st.compile(lambda x: st.nn.functional.interpolate(x, mode=mode, **kw))(st.tensor(a))
    same("compiled", as_np(compiled), as_np(want), 1e-5)


def test_interpolate_mode_errors_as_torch(torch):
    def outcome(L, shape, mode, **kw):
        try:
            L.nn.functional.interpolate(L.ones(*shape), scale_factor=2, mode=mode, **kw)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return "ok"
    for shape, mode in [((1, 1, 4, 4), "lanczos"), ((1, 1, 4), "bicubic"), ((1, 1, 4, 4, 4), "bicubic"),
                        ((1, 1, 4, 4), "trilinear"), ((1, 1, 4, 4, 4), "bilinear"),
                        ((1, 1, 2, 2, 2, 2), "nearest"), ((1, 1, 0, 2, 2), "trilinear")]:
        assert outcome(st, shape, mode) == outcome(torch, shape, mode), (shape, mode)


# ====================================================================== SWA and EMA weights (optim.swa_utils)
def small_bn_net(L):
    nn = L.nn
    return nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def swa_program(L, model, wrap, strategy):
    su = L.optim.swa_utils
    rng = np.random.default_rng(7)
    data = [(L.tensor(rng.standard_normal((6, 5)).astype(np.float32)),
             L.tensor(rng.standard_normal((6, 2)).astype(np.float32))) for _ in range(7)]
    swa = su.AveragedModel(model)
    ema = su.AveragedModel(model, multi_avg_fn=su.get_ema_multi_avg_fn(0.8), use_buffers=True)
    ema1 = su.AveragedModel(model, avg_fn=su.get_ema_avg_fn(0.7))
    opt = L.optim.SGD([{"params": model[0].parameters()}, {"params": model[3].parameters(), "lr": 0.02}],
                      lr=0.05, momentum=0.9)
    sched = su.SWALR(opt, swa_lr=[0.01, 0.005], anneal_epochs=3, anneal_strategy=strategy)

    def step(x, y):
        loss = L.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f, obs = wrap(step), []
    for i, (x, y) in enumerate(data):
        obs.append(f(x, y).item())
        ema.update_parameters(model)
        ema1.update_parameters(model)
        if i >= 2:
            swa.update_parameters(model)
            sched.step()
        obs += [g["lr"] for g in opt.param_groups]
    sd = sched.state_dict()
    sched2 = su.SWALR(opt, swa_lr=0.5)
    sched2.load_state_dict(sd)
    sched2.step()
    obs += sched2.get_last_lr() + [int(swa.n_averaged), int(ema.n_averaged)]
    su.update_bn([(x, y) for x, y in data[:3]], swa)
    with L.no_grad():
        swa.eval()
        ema.eval()
        obs += [as_np(swa(data[0][0])), as_np(ema(data[0][0])), as_np(ema1(data[0][0]))]
    obs += [as_np(b) for b in swa.module[1].buffers()] + [as_np(b) for b in ema.module[1].buffers()]
    return obs


@MODES
@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swa_and_ema_weights_as_torch(torch, mode, strategy):
    tm, sm = twins(torch, small_bn_net)()
    want = swa_program(torch, tm, eager, strategy)
    got = swa_program(st, sm, WRAPS[mode], strategy)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        same(f"obs[{i}]", g, w)
    check_params(tm, sm)


def test_swa_utils_errors_as_torch(torch):
    for L in (torch, st):
        su = L.optim.swa_utils
        opt = L.optim.SGD(L.nn.Linear(2, 2).parameters(), lr=0.1)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
            su.SWALR(opt, 0.1, anneal_strategy="exp")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
            su.SWALR(opt, 0.1, anneal_epochs=-1)
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a value in \[0,1\]"):
            su.get_ema_multi_avg_fn(1.5)
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
            su.AveragedModel(L.nn.Linear(2, 2), avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())


# ====================================================================== the programs
_WANT = {}


def run_twins(torch, build, program, mode, key, **kw):
    """program(L, model, wrap, **kw) with torch (once per key) and with symtrace
    (eager or compiled) from the same weights: (torch model, symtrace model,
    torch observations, symtrace observations)."""
    tm, sm = twins(torch, build)()
    if key not in _WANT:
        _WANT[key] = (program(torch, tm, eager, **kw), tm)
    want, tm = _WANT[key]
    st.reset()
    got = program(st, sm, WRAPS[mode], **kw)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        same(f"{key} obs[{i}]", as_np(g), as_np(w))
    return tm, sm


def batches(seed, n, make):
    rng = np.random.default_rng(seed)
    return [make(rng) for _ in range(n)]


# ---------------------------------------------------------------------- ResNet-style CNN
def build_resnet(L):
    nn, F = L.nn, L.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.shortcut(x)
            return F.relu(out)

    class ResNet(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                      nn.ReLU(inplace=True))
            self.layer1 = BasicBlock(8, 8, 1)
            self.layer2 = BasicBlock(8, 16, 2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(16, num_classes)

        def forward(self, x):
            x = self.layer2(self.layer1(self.stem(x)))
            x = L.flatten(self.avgpool(x), 1)
            return self.fc(x)
    return ResNet()


def resnet_program(L, model, wrap):
    data = batches(0, 5, lambda r: (r.standard_normal((4, 3, 10, 10)).astype(np.float32), r.integers(0, 10, 4)))
    opt = L.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    sched = L.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    criterion = L.nn.CrossEntropyLoss()

    def train_step(x, y):
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step, obs = wrap(train_step), []
    for epoch in range(2):
        model.train()
        for x, y in data[:3] if epoch == 0 else data[3:]:
            obs.append(step(L.tensor(x), L.tensor(y)).item())
        sched.step()
        obs.append(opt.param_groups[0]["lr"])
        model.eval()
        with L.no_grad():
            logits = wrap(model)(L.tensor(data[0][0]))
        obs += [logits, (logits.argmax(1) == L.tensor(data[0][1])).float().mean().item()]
    return obs


@MODES
def test_resnet_trains_then_evaluates_like_torch(torch, mode):
    tm, sm = run_twins(torch, build_resnet, resnet_program, mode, "resnet")
    check_params(tm, sm)


def test_resnet_graphs():
    st.manual_seed(0)
    m = build_resnet(st)
    x = st.randn(2, 3, 10, 10)
    for train in (True, False):
        m.train(train)
        rep = st.explain(m, x)
        assert (rep.graph_count, rep.graph_break_count) == (1, 0), str(rep)
    opt = st.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = st.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    m.train()
    rep = st.explain(step, x, st.tensor([1, 2]))
    # the forward is one graph; zero_grad, backward and step break the frame, as TorchDynamo's
    assert rep.graph_break_count <= 3, str(rep)
    assert max(rep.ops_per_graph) > 100, str(rep)


# ---------------------------------------------------------------------- U-Net
def build_unet(L):
    nn, F = L.nn, L.nn.functional

    def conv_block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.SiLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1, self.enc2, self.mid = conv_block(3, 8), conv_block(8, 16), conv_block(16, 16)
            self.pool = nn.MaxPool2d(2)
            self.up = nn.ConvTranspose2d(16, 16, 2, stride=2)
            self.dec2, self.dec1 = conv_block(32, 8), conv_block(16, 8)
            self.head = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            s1 = self.enc1(x)
            s2 = self.enc2(self.pool(s1))
            m = self.mid(self.pool(s2))
            u = self.dec2(L.cat([self.up(m), s2], dim=1))
            u = F.interpolate(u, scale_factor=2, mode="bilinear", align_corners=False)
            skip = F.interpolate(s1, size=tuple(s1.shape[-2:]), mode="nearest")
            u = self.dec1(L.cat([u, skip], dim=1))
            low = F.avg_pool2d(u, 2)
            u = u + F.interpolate(low, scale_factor=2.0, mode="bilinear", align_corners=True)
            u = u + 0.1 * F.interpolate(low, size=tuple(u.shape[-2:]), mode="bicubic", align_corners=False)
            return self.head(u)
    return UNet()


def unet_program(L, model, wrap):
    data = batches(1, 4, lambda r: (r.standard_normal((2, 3, 12, 12)).astype(np.float32),
                                    r.integers(0, 2, (2, 12, 12))))
    opt = L.optim.Adam(model.parameters(), lr=1e-2)

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = L.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = wrap(train_step)
    obs = [step(L.tensor(x), L.tensor(y)).item() for x, y in data]
    model.eval()
    with L.no_grad():
        obs.append(wrap(model)(L.tensor(data[0][0])))
    return obs


@MODES
def test_unet_trains_like_torch(torch, mode):
    tm, sm = run_twins(torch, build_unet, unet_program, mode, "unet")
    check_params(tm, sm)


def test_unet_forward_is_one_graph():
    st.manual_seed(0)
    rep = st.explain(build_unet(st), st.randn(1, 3, 12, 12))
    assert (rep.graph_count, rep.graph_break_count) == (1, 0), str(rep)


# ---------------------------------------------------------------------- LSTM / GRU language model
VOCAB = 20


def build_rnn_lm(kind):
    def build(L):
        nn = L.nn
        rnn_utils = L.nn.utils.rnn

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(VOCAB, 8, padding_idx=0)
                bidir = kind == "gru"
                self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(8, 12, num_layers=2, batch_first=True,
                                                                  bidirectional=bidir)
                self.head = nn.Linear(24 if bidir else 12, VOCAB)

            def forward(self, x, lengths):
                packed = rnn_utils.pack_padded_sequence(self.emb(x), lengths, batch_first=True,
                                                        enforce_sorted=False)
                out, _ = self.rnn(packed)
                out, _ = rnn_utils.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
                return self.head(out)
        return LM()
    return build


def rnn_lm_program(L, model, wrap):
    def make(r):
        lengths = np.array([6, 3, 5, 4])
        x, y = r.integers(1, VOCAB, (4, 6)), r.integers(1, VOCAB, (4, 6))
        for i, n in enumerate(lengths):
            x[i, n:] = 0
            y[i, n:] = 0
        return x, y, lengths
    data = batches(2, 4, make)
    opt = L.optim.Adam(model.parameters(), lr=1e-2)
    criterion = L.nn.CrossEntropyLoss(ignore_index=0)

    def train_step(x, y, lengths):
        opt.zero_grad()
        logits = model(x, lengths)
        loss = criterion(logits.reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        norm = L.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        opt.step()
        return loss, norm

    step, obs = wrap(train_step), []
    for x, y, n in data:
        loss, norm = step(L.tensor(x), L.tensor(y), L.tensor(n))
        obs += [loss.item(), norm.item()]
    return obs


@MODES
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_rnn_language_model_with_packed_sequences_like_torch(torch, mode, kind):
    tm, sm = run_twins(torch, build_rnn_lm(kind), rnn_lm_program, mode, "rnn-" + kind)
    check_params(tm, sm)


def test_rnn_padded_forward_is_one_graph():
    """Without packing the time loop unrolls into one graph (packing reads the
    lengths on the host, which breaks the graph, as TorchDynamo's)."""
    st.manual_seed(0)
    m = st.nn.LSTM(4, 6, num_layers=2, batch_first=True)
    rep = st.explain(m, st.randn(3, 5, 4))
    assert (rep.graph_count, rep.graph_break_count) == (1, 0), str(rep)


# ---------------------------------------------------------------------- GPT-2 mini + KV-cache generation
GV, GT, GC, GH, GL = 40, 16, 32, 4, 2


def build_gpt(L, causal="is_causal"):
    nn, F = L.nn, L.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(GC, 3 * GC)
            self.proj = nn.Linear(GC, GC)

        def forward(self, x, past=None):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(GC, dim=-1)
            q, k, v = (t.view(B, T, GH, C // GH).transpose(1, 2) for t in (q, k, v))
            if past is not None:
                k = L.cat([past[0], k], dim=2)
                v = L.cat([past[1], v], dim=2)
                y = F.scaled_dot_product_attention(q, k, v)
            elif causal == "is_causal":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                mask = L.ones(T, T, dtype=L.bool, device=x.device).tril()
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.proj(y), (k, v)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(GC), Attention(), nn.LayerNorm(GC)
            self.mlp = nn.Sequential(nn.Linear(GC, 4 * GC), nn.GELU(approximate="tanh"), nn.Linear(4 * GC, GC),
                                     nn.Dropout(0.0))

        def forward(self, x, past=None):
            a, kv = self.attn(self.ln_1(x), past)
            x = x + a
            return x + self.mlp(self.ln_2(x)), kv

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(GV, GC), nn.Embedding(GT, GC)
            self.h = nn.ModuleList([Block() for _ in range(GL)])
            self.ln_f = nn.LayerNorm(GC)
            self.lm_head = nn.Linear(GC, GV, bias=False)
            self.wte.weight = self.lm_head.weight          # weight tying
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

        def forward(self, idx, targets=None, past=None):
            B, T = idx.shape
            start = 0 if past is None else past[0][0].shape[2]
            pos = L.arange(start, start + T, dtype=L.long, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            presents = []
            for i, block in enumerate(self.h):
                x, kv = block(x, None if past is None else past[i])
                presents.append(kv)
            logits = self.lm_head(self.ln_f(x))
            if targets is None:
                return logits, presents
            return F.cross_entropy(logits.view(-1, GV), targets.view(-1), ignore_index=-1)
    return GPT()


def gpt_program(L, model, wrap, causal):
    data = batches(3, 5, lambda r: (r.integers(0, GV, (3, 10)), r.integers(0, GV, (3, 10))))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = L.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=3e-3, betas=(0.9, 0.95))

    def train_step(x, y):
        loss = model(x, y)
        loss.backward()
        L.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    step = wrap(train_step)
    obs = [step(L.tensor(x), L.tensor(y)).item() for x, y in data]

    def decode_step(tok, past):
        logits, past = model(tok, past=past)
        return logits[:, -1, :].argmax(dim=-1, keepdim=True), past

    decode = wrap(decode_step)
    model.eval()
    with L.no_grad():
        idx = L.tensor(data[0][0][:, :4])
        logits, past = model(idx)
        tok = logits[:, -1].argmax(-1, keepdim=True)
        out = [idx, tok]
        for _ in range(6):
            tok, past = decode(tok, past)
            out.append(tok)
        obs.append(L.cat(out, dim=1))
        obs.append(past[-1][1])              # the values (the keys carry the key-bias noise below)
        # without a cache: the prompt grows by one token per step
        seq = idx
        for _ in range(3):
            seq = L.cat([seq, wrap(lambda s: model(s)[0][:, -1].argmax(-1, keepdim=True))(seq)], dim=1)
        obs.append(seq)
    return obs


@MODES
@pytest.mark.parametrize("causal", ["is_causal", "attn_mask"])
def test_gpt_trains_and_generates_with_kv_cache_like_torch(torch, mode, causal):
    tm, sm = run_twins(torch, lambda L: build_gpt(L, causal), gpt_program, mode, "gpt-" + causal, causal=causal)
    # the key third of qkv.bias has a gradient of exactly zero in exact arithmetic
    # (a per-row constant under softmax): both sides see rounding noise there
    keys = [f"h.{i}.attn.qkv.bias" for i in range(GL)]
    check_params(tm, sm, skip=keys)
    sp = dict(sm.named_parameters())
    for n, p in tm.named_parameters():
        if n in keys:
            same(n, as_np(sp[n])[2 * GC:], as_np(p)[2 * GC:], 1e-3)
            same(n, as_np(sp[n])[:GC], as_np(p)[:GC], 1e-3)
    assert sm.wte.weight is sm.lm_head.weight


def test_gpt_forward_and_decode_step_are_one_graph():
    st.manual_seed(0)
    m = build_gpt(st)
    idx = st.randint(0, GV, (2, 6))
    rep = st.explain(m, idx, idx)
    assert (rep.graph_count, rep.graph_break_count) == (1, 0), str(rep)
    m.eval()
    with st.no_grad():
        _, past = m(idx)
        rep = st.explain(lambda t, p: m(t, past=p), idx[:, :1], past)
    assert (rep.graph_count, rep.graph_break_count) == (1, 0), str(rep)


# ---------------------------------------------------------------------- VAE and GAN
VD, VZ = 12, 3


def build_vae(L):
    nn = L.nn

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(VD, 16), nn.LeakyReLU(0.2))
            self.fc_mu, self.fc_logvar = nn.Linear(16, VZ), nn.Linear(16, VZ)
            self.dec = nn.Sequential(nn.Linear(VZ, 16), nn.ReLU(), nn.Linear(16, VD), nn.Sigmoid())

        def reparameterize(self, mu, logvar, eps=None):
            std = L.exp(0.5 * logvar)
            if eps is None:
                eps = L.randn_like(std)
            return mu + eps * std

        def forward(self, x, eps=None):
            h = self.enc(x)
            mu, logvar = self.fc_mu(h), self.fc_logvar(h)
            return self.dec(self.reparameterize(mu, logvar, eps)), mu, logvar
    return VAE()


def vae_program(L, model, wrap):
    data = batches(4, 5, lambda r: (r.random((8, VD)).astype(np.float32),
                                    r.standard_normal((8, VZ)).astype(np.float32)))
    opt = L.optim.Adam(model.parameters(), lr=1e-2)

    def train_step(x, eps):
        recon, mu, logvar = model(x, eps)
        bce = L.nn.functional.binary_cross_entropy(recon, x, reduction="sum")
        kld = -0.5 * L.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (bce + kld) / x.shape[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, kld

    step, obs = wrap(train_step), []
    for x, eps in data:
        loss, kld = step(L.tensor(x), L.tensor(eps))
        obs += [loss.item(), kld.item()]
    return obs


@MODES
def test_vae_trains_like_torch(torch, mode):
    tm, sm = run_twins(torch, build_vae, vae_program, mode, "vae")
    check_params(tm, sm)


def test_vae_sampling_is_seeded_and_the_same_compiled():
    """randn_like inside the step: the same seed gives the same losses, eager or compiled."""
    def losses(wrap):
        st.manual_seed(0)
        m = build_vae(st)
        opt = st.optim.SGD(m.parameters(), lr=0.1)

        def train_step(x):
            recon, mu, logvar = m(x)
            loss = st.nn.functional.mse_loss(recon, x) - 0.01 * logvar.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        st.manual_seed(123)
        step = wrap(train_step)
        x = st.rand(6, VD)
        return [step(x).item() for _ in range(4)]
    first = losses(eager)
    assert len(set(first)) == 4                       # fresh noise each step
    assert losses(eager) == first
    st.reset()
    np.testing.assert_allclose(losses(st.compile), first, rtol=1e-6)


def build_gan(L):
    nn = L.nn
    G = nn.Sequential(nn.Linear(VZ, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, VD), nn.Tanh())
    D = nn.Sequential(nn.Linear(VD, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    return nn.ModuleDict({"G": G, "D": D})


def gan_program(L, model, wrap):
    data = batches(5, 5, lambda r: (r.random((8, VD)).astype(np.float32) * 2 - 1,
                                    r.standard_normal((8, VZ)).astype(np.float32)))
    G, D = model["G"], model["D"]
    opt_g = L.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = L.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    criterion = L.nn.BCEWithLogitsLoss()

    def train_step(real, z):
        fake = G(z)
        ones, zeros = L.ones(real.shape[0], 1), L.zeros(real.shape[0], 1)
        opt_d.zero_grad(set_to_none=True)
        d_loss = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad(set_to_none=True)
        g_loss = criterion(D(fake), ones)
        g_loss.backward()
        opt_g.step()
        return d_loss, g_loss

    step, obs = wrap(train_step), []
    for real, z in data:
        d_loss, g_loss = step(L.tensor(real), L.tensor(z))
        obs += [d_loss.item(), g_loss.item()]
    G.eval()
    with L.no_grad():
        obs.append(G(L.tensor(data[0][1])))
    return obs


@MODES
def test_gan_two_optimizers_like_torch(torch, mode):
    tm, sm = run_twins(torch, build_gan, gan_program, mode, "gan")
    check_params(tm, sm)
    assert sm["D"][0].weight.grad is not None and sm["G"][0].weight.grad is not None


# ---------------------------------------------------------------------- ViT
VP, VC, VN = 4, 16, 5


def build_vit(L, norm_first):
    nn, F = L.nn, L.nn.functional

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Linear(3 * VP * VP, VC)
            self.cls_token = nn.Parameter(L.zeros(1, 1, VC))
            self.pos_embed = nn.Parameter(L.randn(1, 1 + (12 // VP) ** 2, VC) * 0.02)
            layer = nn.TransformerEncoderLayer(VC, 4, dim_feedforward=32, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=norm_first)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(VC)
            self.head = nn.Linear(VC, VN)

        def forward(self, img):
            B, C, H, W = img.shape
            p = F.unfold(img, kernel_size=VP, stride=VP).transpose(1, 2)      # [B, L, C*P*P]
            q = (img.reshape(B, C, H // VP, VP, W // VP, VP).permute(0, 2, 4, 1, 3, 5)
                 .reshape(B, -1, C * VP * VP))                                 # the same patches
            x = self.patch(p) + 0.5 * self.patch(q)
            x = L.cat([self.cls_token.expand(B, -1, -1), x], dim=1) + self.pos_embed
            x = self.encoder(x)
            return self.head(self.norm(x[:, 0]))
    return ViT()


def vit_program(L, model, wrap):
    data = batches(6, 4, lambda r: (r.standard_normal((3, 3, 12, 12)).astype(np.float32), r.integers(0, VN, 3)))
    opt = L.optim.AdamW(model.parameters(), lr=1e-3)

    def train_step(x, y):
        opt.zero_grad()
        loss = L.nn.functional.cross_entropy(model(x), y, label_smoothing=0.1)
        loss.backward()
        opt.step()
        return loss

    step = wrap(train_step)
    obs = [step(L.tensor(x), L.tensor(y)).item() for x, y in data]
    model.eval()
    with L.no_grad():
        obs.append(wrap(model)(L.tensor(data[0][0])))
    return obs


@MODES
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_vit_trains_like_torch(torch, mode, norm_first):
    tm, sm = run_twins(torch, lambda L: build_vit(L, norm_first), vit_program, mode, f"vit-{norm_first}")
    keys = [f"encoder.layers.{i}.self_attn.in_proj_bias" for i in range(2)]
    check_params(tm, sm, skip=keys)      # the key third: rounding noise, as GPT's qkv.bias


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_vit_forward_is_one_graph(norm_first):
    st.manual_seed(0)
    m = build_vit(st, norm_first)
    for train in (True, False):
        m.train(train)
        rep = st.explain(m, st.randn(2, 3, 12, 12))
        assert (rep.graph_count, rep.graph_break_count) == (1, 0), str(rep)


# ---------------------------------------------------------------------- mixed: accumulation, eval inside, checkpoint
def build_mlp_bn(L):
    nn = L.nn
    return nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, 3))


def mixed_program(L, model, wrap):
    import io
    data = batches(7, 6, lambda r: (r.standard_normal((8, 6)).astype(np.float32), r.integers(0, 3, 8)))
    vx, vy = (L.tensor(a) for a in batches(8, 1, lambda r: (r.standard_normal((5, 6)).astype(np.float32),
                                                            r.integers(0, 3, 5)))[0])
    F = L.nn.functional

    def make_opt(m):
        opt = L.optim.Adam(m.parameters(), lr=1e-2, weight_decay=1e-3, amsgrad=True)
        return opt, L.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)
    opt, sched = make_opt(model)
    state = {"model": model, "opt": opt}

    def train_step(x, y):
        m, opt = state["model"], state["opt"]
        m.train()
        opt.zero_grad()
        total = 0.0
        for xb, yb in zip(x.chunk(2), y.chunk(2)):      # gradient accumulation
            loss = F.cross_entropy(m(xb), yb) / 2
            loss.backward()
            total = total + loss.detach()
        opt.step()
        m.eval()
        with L.no_grad():                                # evaluation inside the step
            val = F.cross_entropy(m(vx), vy)
        m.train()
        return total, val

    step, obs = wrap(train_step), []
    for i, (x, y) in enumerate(data):
        if i == 3:                                       # checkpoint round trip, then resume
            buf = io.BytesIO()
            L.save({"model": state["model"].state_dict(), "opt": state["opt"].state_dict(),
                    "sched": sched.state_dict(), "step": i}, buf)
            buf.seek(0)
            ckpt = L.load(buf)
            resumed = build_mlp_bn(L)
            resumed.load_state_dict(ckpt["model"])
            opt, sched = make_opt(resumed)
            opt.load_state_dict(ckpt["opt"])
            sched.load_state_dict(ckpt["sched"])
            state.update(model=resumed, opt=opt)
            obs.append(ckpt["step"])
        total, val = step(L.tensor(x), L.tensor(y))
        sched.step()
        obs += [total.item(), val.item(), opt.param_groups[0]["lr"]]
    state["final"] = state["model"]
    obs += [as_np(v) for v in state["opt"].state_dict()["state"][0].values()]
    obs.append(state["model"])
    return obs


@MODES
def test_mixed_accumulation_eval_and_checkpoint_resume_like_torch(torch, mode):
    tm, sm = twins(torch, build_mlp_bn)()
    want = mixed_program(torch, tm, eager)
    st.reset()
    got = mixed_program(st, sm, WRAPS[mode])
    tm, sm = want.pop(), got.pop()
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        same(f"obs[{i}]", as_np(g), as_np(w))
    check_params(tm, sm)


# ====================================================================== memory formats (channels_last)
def test_memory_format_objects_and_tensor_layouts_as_torch(torch):
    a = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    for L in (torch, st):
        x = L.tensor(a)
        y = x.to(memory_format=L.channels_last)
        assert y.stride() == (60, 1, 15, 3)
        assert y.is_contiguous(memory_format=L.channels_last) and not y.is_contiguous()
        assert y.contiguous().stride() == (60, 20, 5, 1)
        assert y.contiguous(memory_format=L.channels_last) is y
        assert x.contiguous(memory_format=L.contiguous_format) is x
        assert not x.is_contiguous(memory_format=L.channels_last)
        z = L.tensor(np.zeros((2, 3, 2, 2, 2), np.float32)).contiguous(memory_format=L.channels_last_3d)
        assert z.stride() == (24, 1, 12, 6, 3)
        np.testing.assert_array_equal(as_np(y), a)
        assert isinstance(L.channels_last, L.memory_format)
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            L.ones(2, 3, 4).contiguous(memory_format=L.channels_last)
        with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
            L.ones(2, 3, 4).to(memory_format=L.channels_last_3d)
        with pytest.raises(TypeError, match="argument 'memory_format' must be"):
            L.ones(2, 3, 4, 5).contiguous(memory_format=3)
    assert repr(st.channels_last) == "symtrace.channels_last"


@MODES
def test_channels_last_cnn_trains_like_torch(torch, mode):
    """torchvision's reference recipe with --channels-last: the model and every batch
    converted with memory_format=channels_last."""
    def program(L, model, wrap):
        model = model.to(memory_format=L.channels_last)
        opt = L.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        data = batches(9, 3, lambda r: (r.standard_normal((4, 3, 10, 10)).astype(np.float32), r.integers(0, 10, 4)))

        def train_step(x, y):
            x = x.contiguous(memory_format=L.channels_last)
            loss = L.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        step = wrap(train_step)
        return [step(L.tensor(x).to(memory_format=L.channels_last), L.tensor(y)).item() for x, y in data]
    tm, sm = run_twins(torch, build_resnet, program, mode, "resnet-channels-last")
    check_params(tm, sm)


# ================================================ older scripts' spellings: torch.cuda.amp, SyncBatchNorm
def test_cuda_amp_deprecated_names_work_as_torch_without_a_gpu():
    from symtrace.cuda.amp import GradScaler, autocast       # an import path, as torch.cuda.amp
    with pytest.warns(FutureWarning, match="deprecated"):
        with autocast(enabled=True):
            y = st.ones(2, 2) @ st.ones(2, 2)
    assert y.dtype == st.float32                               # a CUDA autocast leaves cpu ops alone
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = GradScaler(init_scale=1024.0)
    assert any(w.category is FutureWarning and "deprecated" in str(w.message) for w in caught)
    assert isinstance(scaler, st.amp.GradScaler)
    if not st.cuda.is_available():
        # as torch's: a CUDA scaler on a machine without CUDA warns and turns itself off
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
            scaler = st.amp.GradScaler("cuda")
        assert not scaler.is_enabled()
        m = st.nn.Linear(3, 1)
        opt = st.optim.SGD(m.parameters(), lr=0.1)
        loss = m(st.ones(2, 3)).sum()
        assert scaler.scale(loss) is loss
        loss.backward()
        scaler.step(opt)
        scaler.update()
        assert scaler.get_scale() == 1.0


def test_cuda_amp_as_torch(torch):
    for L in (torch, st):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sc = L.cuda.amp.GradScaler()
            assert sc.is_enabled() == L.cuda.is_available()
            assert isinstance(sc, L.amp.GradScaler)
            assert isinstance(L.cuda.amp.autocast(), L.amp.autocast)


def test_sync_batchnorm_converts_and_trains_like_torch(torch):
    """A DDP recipe's convert_sync_batchnorm on one process: BatchNorm, sharing the
    converted layers' parameters and statistics."""
    def program(L, model, wrap):
        model = L.nn.SyncBatchNorm.convert_sync_batchnorm(model)
        assert type(model.layer1.bn1) is L.nn.SyncBatchNorm
        assert type(model.stem[1]) is L.nn.SyncBatchNorm
        opt = L.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        data = batches(10, 3, lambda r: (r.standard_normal((4, 3, 8, 8)).astype(np.float32), r.integers(0, 10, 4)))
        obs = []
        for x, y in data:
            loss = L.nn.functional.cross_entropy(model(L.tensor(x)), L.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            obs.append(loss.item())
        model.eval()
        with L.no_grad():
            obs.append(wrap(model)(L.tensor(data[0][0])))
        return obs
    tm, sm = run_twins(torch, build_resnet, program, "compiled", "resnet-syncbn")
    check_params(tm, sm)
    assert repr(sm.layer1.bn1) == repr(tm.layer1.bn1)
    for L in (torch, st):
        bn = L.nn.BatchNorm1d(3)
        sbn = L.nn.SyncBatchNorm.convert_sync_batchnorm(bn)
        assert sbn.weight is bn.weight and sbn.running_mean is bn.running_mean
        with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
            sbn(L.ones(3))
        with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be non-zero"):
            L.nn.SyncBatchNorm(3)(L.ones(2, 0, 2))
        nobias = L.nn.SyncBatchNorm(3, bias=False)
        assert nobias.bias is None and [n for n, _ in nobias.named_parameters()] == ["weight"]


# ==================================================== cat, save/load and load_state_dict free without the gc
def test_cat_with_grad_leaves_no_garbage_cycle():
    """An unrolled RNN or a U-Net cats under autograd at every step: the inputs must be
    freed as soon as the graph is, not at the next garbage collection (a class made
    per cat call held them in a reference cycle; the leak test of test_resume saw it)."""
    import gc
    gc.collect()
    gc.disable()
    try:
        base = st.memory.memory_allocated()
        a = st.randn(64, 32, requires_grad=True)
        b = st.randn(16, 32, requires_grad=True)
        y = st.cat([a, b * 2], 0)
        (y * st.arange(80.0)[:, None]).sum().backward()
        np.testing.assert_array_equal(as_np(b.grad), 2 * np.arange(64.0, 80.0)[:, None].repeat(32, 1))
        np.testing.assert_array_equal(as_np(a.grad), np.arange(64.0)[:, None].repeat(32, 1))
        y = st.cat([a, b], 0)
        del a, b, y
        assert st.memory.memory_allocated() == base
    finally:
        gc.enable()


def test_checkpoint_round_trip_leaves_no_garbage_cycle():
    """save, load and load_state_dict (a checkpoint every few steps) must free what they
    touched by reference counting: per-call pickler classes and load_state_dict's
    recursive closure were reference cycles holding the saved and loaded tensors."""
    import gc
    import io

    def make():
        return st.nn.Sequential(st.nn.Linear(6, 16), st.nn.BatchNorm1d(16),
                                st.nn.Sequential(st.nn.ReLU(), st.nn.Linear(16, 2)))
    src = make()
    gc.collect()
    gc.disable()
    try:
        base = st.memory.memory_allocated()
        for weights_only in (True, False):
            buf = io.BytesIO()
            st.save({"model": src.state_dict(), "step": 3}, buf)
            buf.seek(0)
            ckpt = st.load(buf, weights_only=weights_only)
            dst = make()
            dst.load_state_dict(ckpt["model"])
            np.testing.assert_array_equal(as_np(dst[2][1].bias), as_np(src[2][1].bias))
            del ckpt, dst, buf
            assert st.memory.memory_allocated() == base
    finally:
        gc.enable()
