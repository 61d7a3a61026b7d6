# User training programs written once against a module L (symtrace or torch) and run side by
# side: a DDPM denoiser step (sinusoidal timestep embedding, GroupNorm + SiLU residual blocks
# with the time embedding added per channel, self-attention over the feature map, a noise
# schedule buffer indexed by integer t, MSE on the predicted noise, an EMA of the weights), a
# ConvNeXt stack (depthwise 7x7 conv, channels-last LayerNorm via permute, 4x GELU MLP, layer
# scale, drop_path with the bernoulli mask fed in, label smoothing, clip_grad_norm_, AdamW
# param groups), Swin-style shifted-window attention (window partition/reverse, torch.roll,
# relative position bias table, shifted-window mask) followed by a Mamba-style selective scan
# (a Python loop over time) and a cumsum/exp decayed linear attention, and a metric-learning /
# distillation model (triplet margin loss, cdist hard mining, KLDiv with temperature, a hand
# written focal loss, CTC); then a DiT (adaLN-Zero, patchify by conv, unpatchify by einsum,
# numpy 2-D sincos position table, label dropout for classifier-free guidance), a Mamba LM
# (causal depthwise conv1d, selective scan, RMSNorm, tied head), an RWKV block (ZeroPad2d token
# shift, the WKV recurrence with its max trick) and a distillation program (a frozen BatchNorm
# teacher kept in eval, attention transfer, hint MSE, focal loss, ArcFace margin head,
# prototypical loss over cdist). Each trains 5 steps eagerly and with st.compile(step): losses and
# gradients against symtrace's eager run always and against torch's when torch is installed.
# Also the focused checks of what these programs found.
import copy
import math

import numpy as np
import pytest

import symtrace as st
from compile_model_helpers import fresh_frontend, fe_counts  # noqa: F401

STEPS = 5


# ---------------- 1. DDPM ----------------
DC, DT, DHW, TSTEPS = 8, 16, 8, 50


def timestep_embedding(L, t, dim):
    half = dim // 2
    freqs = L.exp(-math.log(10000.0) * L.arange(half, dtype=L.float32) / half)
    args = t[:, None].float() * freqs[None]
    return L.cat([L.cos(args), L.sin(args)], dim=-1)


def build_ddpm(L):
    nn, F = L.nn, L.nn.functional

    class ResBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)
            self.t = nn.Linear(DT, c)
            self.n2, self.c2 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)

        def forward(self, x, temb):
            h = self.c1(F.silu(self.n1(x)))
            h = h + self.t(F.silu(temb))[:, :, None, None]
            h = self.c2(F.silu(self.n2(h)))
            return x + h

    class Attn(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.norm = nn.GroupNorm(4, c)
            self.qkv = nn.Conv2d(c, 3 * c, 1)
            self.proj = nn.Conv2d(c, c, 1)

        def forward(self, x):
            b, c, h, w = x.shape
            q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
            a = L.softmax(L.einsum("bci,bcj->bij", q, k) * c ** -0.5, dim=-1)
            o = L.bmm(v, a.transpose(1, 2)).view(b, c, h, w)
            return x + self.proj(o)

    class UNetish(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Conv2d(2, DC, 3, padding=1)
            self.temb = nn.Sequential(nn.Linear(DT, DT), nn.SiLU(), nn.Linear(DT, DT))
            self.r1, self.attn, self.r2 = ResBlock(DC), Attn(DC), ResBlock(DC)
            self.out = nn.Sequential(nn.GroupNorm(4, DC), nn.SiLU(), nn.Conv2d(DC, 2, 3, padding=1))
            betas = L.linspace(1e-4, 0.02, TSTEPS)
            self.register_buffer("alphas_cumprod", L.cumprod(1.0 - betas, dim=0))

        def forward(self, x0, t, noise):
            a = self.alphas_cumprod.gather(0, t).view(-1, 1, 1, 1)
            xt = a.sqrt() * x0 + (1 - self.alphas_cumprod[t]).sqrt()[:, None, None, None] * noise
            temb = self.temb(timestep_embedding(L, t, DT))
            h = self.r2(self.attn(self.r1(self.inp(xt), temb)), temb)
            return self.out(h)
    return UNetish()


def loss_ddpm(L, m, x0, t, noise):
    return L.nn.functional.mse_loss(m(x0, t, noise), noise)


def _ddpm_data(i):
    r = np.random.default_rng(10 + i)
    return (r.standard_normal((2, 2, DHW, DHW)).astype(np.float32), r.integers(0, TSTEPS, 2),
            r.standard_normal((2, 2, DHW, DHW)).astype(np.float32))


# ---------------- 2. ConvNeXt ----------------
CD, CNC = 8, 5


def build_convnext(L):
    nn, F = L.nn, L.nn.functional

    class LayerNorm2d(nn.Module):          # ConvNeXt's channels_first LayerNorm
        def __init__(self, c, eps=1e-6):
            super().__init__()
            self.weight, self.bias = nn.Parameter(L.ones(c)), nn.Parameter(L.zeros(c))
            self.eps = eps

        def forward(self, x):
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / L.sqrt(s + self.eps)
            return self.weight[:, None, None] * x + self.bias[:, None, None]

    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.pwconv1 = nn.Linear(dim, 4 * dim)
            self.act = nn.GELU()
            self.pwconv2 = nn.Linear(4 * dim, dim)
            self.gamma = nn.Parameter(1e-1 * L.ones(dim))

        def forward(self, x, keep):
            inp = x
            x = self.dwconv(x).permute(0, 2, 3, 1)
            x = self.pwconv2(self.act(self.pwconv1(self.norm(x))))
            x = (self.gamma * x).permute(0, 3, 1, 2)
            return inp + drop_path(x, keep, 0.8)

    def drop_path(x, mask, keep_prob):
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        return x.div(keep_prob) * mask.view(shape)

    class ConvNeXt(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, CD, 2, stride=2), LayerNorm2d(CD))
            self.blocks = nn.ModuleList([Block(CD), Block(CD)])
            self.down = nn.Sequential(LayerNorm2d(CD), nn.Conv2d(CD, 2 * CD, 2, stride=2))
            self.block3 = Block(2 * CD)
            self.norm = nn.LayerNorm(2 * CD)
            self.head = nn.Linear(2 * CD, CNC)

        def forward(self, x, keep):
            x = self.stem(x)
            for i, b in enumerate(self.blocks):
                x = b(x, keep[i])
            x = self.block3(self.down(x), keep[2])
            return self.head(self.norm(x.mean([-2, -1])))
    return ConvNeXt()


def loss_convnext(L, m, x, keep, y):
    return L.nn.functional.cross_entropy(m(x, keep), y, label_smoothing=0.1)


def _convnext_data(i):
    r = np.random.default_rng(20 + i)
    keep = (r.random((3, 4)) < 0.8).astype(np.float32)
    return r.standard_normal((4, 3, 8, 8)).astype(np.float32), keep, r.integers(0, CNC, 4)


def _convnext_opt(L, m):
    decay = [p for n, p in m.named_parameters() if p.ndim >= 2]
    rest = [p for n, p in m.named_parameters() if p.ndim < 2]
    return L.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                          {"params": rest, "weight_decay": 0.0}], lr=4e-3)


# ---------------- 3. Swin + Mamba-style scan ----------------
SWD, SWH, WS, NH, SEQ = 8, 4, 2, 2, 16


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, c)


def window_reverse(win, ws, h, w):
    b = int(win.shape[0] / (h * w / ws / ws))
    x = win.view(b, h // ws, w // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(b, h, w, -1)


def build_swin(L):
    nn, F = L.nn, L.nn.functional

    class WindowAttention(nn.Module):
        def __init__(self, dim, shift):
            super().__init__()
            self.shift = shift
            self.table = nn.Parameter(L.randn((2 * WS - 1) ** 2, NH) * 0.02)
            coords = L.stack(L.meshgrid([L.arange(WS), L.arange(WS)], indexing="ij"))
            flat = L.flatten(coords, 1)
            rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
            rel[:, :, 0] += WS - 1
            rel[:, :, 1] += WS - 1
            rel[:, :, 0] *= 2 * WS - 1
            self.register_buffer("rel_index", rel.sum(-1))
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.norm = nn.LayerNorm(dim)
            if shift:
                img = L.zeros((1, SWH, SWH, 1))
                cnt = 0
                sl = (slice(0, -WS), slice(-WS, -shift), slice(-shift, None))
                for hs in sl:
                    for wsl in sl:
                        img[:, hs, wsl, :] = cnt
                        cnt += 1
                mw = window_partition(img, WS).view(-1, WS * WS)
                am = mw.unsqueeze(1) - mw.unsqueeze(2)
                am = am.masked_fill(am != 0, float("-inf")).masked_fill(am == 0, 0.0)
                self.register_buffer("attn_mask", am)
            else:
                self.attn_mask = None

        def forward(self, x):
            b, h, w, c = x.shape
            sc = x
            x = self.norm(x)
            if self.shift:
                x = L.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
            win = window_partition(x, WS).view(-1, WS * WS, c)
            b_, n, _ = win.shape
            qkv = self.qkv(win).reshape(b_, n, 3, NH, c // NH).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = (q * (c // NH) ** -0.5) @ k.transpose(-2, -1)
            bias = self.table[self.rel_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
            attn = attn + bias.contiguous().unsqueeze(0)
            if self.attn_mask is not None:
                nw = self.attn_mask.shape[0]
                attn = attn.view(b_ // nw, nw, NH, n, n) + self.attn_mask.unsqueeze(1).unsqueeze(0)
                attn = attn.view(-1, NH, n, n)
            attn = attn.softmax(dim=-1)
            o = (attn @ v).transpose(1, 2).reshape(b_, n, c)
            o = window_reverse(self.proj(o).view(-1, WS, WS, c), WS, h, w)
            if self.shift:
                o = L.roll(o, shifts=(self.shift, self.shift), dims=(1, 2))
            return sc + o

    class Scan(nn.Module):                 # Mamba-style selective scan, a loop over time
        def __init__(self, d, ns=4):
            super().__init__()
            self.A_log = nn.Parameter(L.log(L.arange(1, ns + 1, dtype=L.float32)).repeat(d, 1))
            self.dt = nn.Linear(d, d)
            self.B, self.C = nn.Linear(d, ns, bias=False), nn.Linear(d, ns, bias=False)
            self.D = nn.Parameter(L.ones(d))

        def forward(self, x):                              # (b, t, d)
            A = -L.exp(self.A_log.float())
            dt = F.softplus(self.dt(x))
            dA = L.exp(L.einsum("btd,dn->btdn", dt, A))
            dBx = L.einsum("btd,btn,btd->btdn", dt, self.B(x), x)
            Cm = self.C(x)
            h = x.new_zeros(x.shape[0], x.shape[2], A.shape[1])
            ys = []
            for i in range(x.shape[1]):
                h = dA[:, i] * h + dBx[:, i]
                ys.append(L.einsum("bdn,bn->bd", h, Cm[:, i]))
            return L.stack(ys, dim=1) + x * self.D

    class Decay(nn.Module):                # RWKV-ish decayed linear attention by cumsum/exp
        def __init__(self, d):
            super().__init__()
            self.k, self.v, self.r = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.w = nn.Parameter(L.zeros(d) - 0.5)

        def forward(self, x):
            t = x.shape[1]
            logw = -F.softplus(self.w)                     # per-channel log decay
            pos = L.arange(t, dtype=x.dtype)
            diff = (pos[:, None] - pos[None, :]).clamp(min=0)
            causal = L.tril(L.ones(t, t, dtype=L.bool))
            dec = L.exp(diff[:, :, None] * logw).masked_fill(~causal[:, :, None], 0.0)
            k = L.exp(self.k(x).clamp(max=5.0))
            num = L.einsum("tsd,bsd->btd", dec, k * self.v(x))
            den = L.cumsum(k, dim=1)                       # undecayed normaliser
            return x + L.sigmoid(self.r(x)) * num / den

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1, self.w2 = WindowAttention(SWD, 0), WindowAttention(SWD, 1)
            self.scan, self.decay = Scan(SWD), Decay(SWD)
            self.head = nn.Linear(SWD, 3)

        def forward(self, x):
            x = self.w2(self.w1(x))
            s = x.flatten(1, 2)
            s = self.decay(self.scan(s))
            return self.head(s.mean(1))
    return Net()


def loss_swin(L, m, x, y):
    return L.nn.functional.cross_entropy(m(x), y)


def _swin_data(i):
    r = np.random.default_rng(30 + i)
    return r.standard_normal((2, SWH, SWH, SWD)).astype(np.float32), r.integers(0, 3, 2)


# ---------------- 4. metric learning / distillation ----------------
MD, ME, MNC, CT, CV = 10, 8, 4, 6, 5


def build_metric(L):
    nn, F = L.nn, L.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Sequential(nn.Linear(MD, 16), nn.ReLU(), nn.Linear(16, ME))
            self.cls = nn.Linear(ME, MNC)
            self.teacher = nn.Linear(MD, MNC)
            self.ctc = nn.Linear(ME, CV)
            for p in self.teacher.parameters():
                p.requires_grad_(False)
    return Net()


def loss_metric(L, m, a, p, n, y, seq, tgt):
    F = L.nn.functional
    ea, ep, en = (F.normalize(m.emb(v), dim=-1) for v in (a, p, n))
    trip = F.triplet_margin_loss(ea, ep, en, margin=0.5) + \
        L.nn.TripletMarginLoss(margin=0.3, p=1.0, swap=True)(ea, ep, en)
    d = L.cdist(ea, en)                                   # hardest negative per anchor
    hard = F.relu((ea - ep).norm(dim=-1) - d.min(dim=1).values + 0.2).mean()
    T = 2.0
    s_logits = m.cls(m.emb(a))
    with L.no_grad():
        t_logits = m.teacher(a)
    kd = F.kl_div(F.log_softmax(s_logits / T, dim=-1), F.softmax(t_logits / T, dim=-1),
                  reduction="batchmean") * T * T
    kd2 = L.nn.KLDivLoss(reduction="batchmean", log_target=True)(
        F.log_softmax(s_logits, -1), F.log_softmax(t_logits, -1))
    ce = F.cross_entropy(s_logits, y, reduction="none")
    pt = L.exp(-ce)
    focal = ((1 - pt) ** 2 * ce).mean()
    lp = F.log_softmax(m.ctc(m.emb(seq)), dim=-1).transpose(0, 1)   # (T, N, C)
    ctc = F.ctc_loss(lp, tgt, L.full((seq.shape[0],), CT, dtype=L.long),
                     L.tensor([3, 2]), blank=0, reduction="mean", zero_infinity=True)
    return trip + hard + kd + kd2 + focal + 0.5 * ctc


def _metric_data(i):
    r = np.random.default_rng(40 + i)
    f = lambda *s: r.standard_normal(s).astype(np.float32)  # noqa: E731
    return (f(6, MD), f(6, MD), f(6, MD), r.integers(0, MNC, 6), f(2, CT, MD),
            np.array([[1, 2, 2], [3, 4, 0]]))



# ---------------- 5. DiT-style (adaLN-Zero, patchify, classifier-free guidance labels) ----------
PD, PP, PC, PNC = 8, 2, 3, 4


def build_dit(L):
    nn, F = L.nn, L.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1 = nn.LayerNorm(PD, elementwise_affine=False, eps=1e-6)
            self.attn = nn.MultiheadAttention(PD, 2, batch_first=True)
            self.n2 = nn.LayerNorm(PD, elementwise_affine=False, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(PD, 4 * PD), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * PD, PD))
            self.ada = nn.Sequential(nn.SiLU(), nn.Linear(PD, 6 * PD))

        def forward(self, x, c):
            sh, sc, g, sh2, sc2, g2 = self.ada(c).chunk(6, dim=1)
            h = self.n1(x) * (1 + sc.unsqueeze(1)) + sh.unsqueeze(1)
            x = x + g.unsqueeze(1) * self.attn(h, h, h, need_weights=False)[0]
            h = self.n2(x) * (1 + sc2.unsqueeze(1)) + sh2.unsqueeze(1)
            return x + g2.unsqueeze(1) * self.mlp(h)

    class DiT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(PC, PD, PP, stride=PP)
            self.pos = nn.Parameter(L.zeros(1, 16, PD), requires_grad=False)
            self.temb = nn.Sequential(nn.Linear(DT, PD), nn.SiLU(), nn.Linear(PD, PD))
            self.yemb = nn.Embedding(PNC + 1, PD)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.fn = nn.LayerNorm(PD, elementwise_affine=False, eps=1e-6)
            self.fada = nn.Sequential(nn.SiLU(), nn.Linear(PD, 2 * PD))
            self.out = nn.Linear(PD, PP * PP * PC)
            g = np.arange(4, dtype=np.float32)
            gh, gw = np.meshgrid(g, g, indexing="ij")
            om = 1.0 / 10000 ** (np.arange(PD // 4, dtype=np.float64) / (PD / 4.0))
            emb = [f(np.einsum("m,d->md", a.reshape(-1), om)) for a in (gh, gw)
                   for f in (np.sin, np.cos)]
            self.pos.data.copy_(L.from_numpy(np.concatenate(emb, 1)).float().unsqueeze(0))
            w = self.patch.weight.data
            nn.init.xavier_uniform_(w.view([w.shape[0], -1]))
            for b in self.blocks:
                nn.init.constant_(b.ada[-1].weight, 0.01)

        def forward(self, x, t, y, drop):
            n = x.shape[0]
            h = self.patch(x).flatten(2).transpose(1, 2) + self.pos
            y = L.where(drop, L.full_like(y, PNC), y)
            c = self.temb(timestep_embedding(L, t, DT)) + self.yemb(y)
            for b in self.blocks:
                h = b(h, c)
            sh, sc = self.fada(c).chunk(2, dim=1)
            h = self.out(self.fn(h) * (1 + sc.unsqueeze(1)) + sh.unsqueeze(1))
            h = h.reshape(n, 4, 4, PP, PP, PC)
            return L.einsum("nhwpqc->nchpwq", h).reshape(n, PC, 8, 8)
    return DiT()


def loss_dit(L, m, x0, t, noise, y, drop):
    ac = L.cumprod(1 - L.linspace(1e-4, 0.02, TSTEPS), 0)[t].view(-1, 1, 1, 1)
    xt = ac.sqrt() * x0 + (1 - ac).sqrt() * noise
    return L.nn.functional.mse_loss(m(xt, t, y, drop), noise)


def _dit_data(i):
    r = np.random.default_rng(50 + i)
    return (r.standard_normal((2, PC, 8, 8)).astype(np.float32), r.integers(0, TSTEPS, 2),
            r.standard_normal((2, PC, 8, 8)).astype(np.float32), r.integers(0, PNC, 2),
            np.array([i % 2 == 0, False]))


# ---------------- 6. Mamba block (causal depthwise conv1d, selective scan, RMSNorm) ------------
MBD, MBE, MBN, MBV = 8, 16, 4, 11


def build_mamba(L):
    nn, F = L.nn, L.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-5):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(L.ones(d))

        def forward(self, x):
            return x * L.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    class MambaBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.in_proj = nn.Linear(MBD, 2 * MBE, bias=False)
            self.conv1d = nn.Conv1d(MBE, MBE, 4, groups=MBE, padding=3)
            self.x_proj = nn.Linear(MBE, 2 + 2 * MBN, bias=False)
            self.dt_proj = nn.Linear(2, MBE)
            dt = L.exp(L.linspace(0, 1, MBE) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
            with L.no_grad():
                self.dt_proj.bias.copy_(dt + L.log(-L.expm1(-dt)))
            a = L.arange(1, MBN + 1, dtype=L.float32).repeat(MBE, 1)
            self.A_log = nn.Parameter(L.log(a))
            self.D = nn.Parameter(L.ones(MBE))
            self.out_proj = nn.Linear(MBE, MBD, bias=False)
            self.norm = RMSNorm(MBD)

        def forward(self, x):
            b, t, _ = x.shape
            xz = self.in_proj(self.norm(x))
            u, z = xz.split([MBE, MBE], dim=-1)
            u = F.silu(self.conv1d(u.transpose(1, 2))[..., :t].transpose(1, 2))
            dbc = self.x_proj(u)
            dt, B, C = L.split(dbc, [2, MBN, MBN], dim=-1)
            dt = F.softplus(self.dt_proj(dt))
            A = -L.exp(self.A_log.float())
            dA = L.exp(L.einsum("b l d, d n -> b l d n", dt, A))
            dBu = L.einsum("b l d, b l n, b l d -> b l d n", dt, B, u)
            h = L.zeros(b, MBE, MBN)
            ys = []
            for i in range(t):
                h = dA[:, i] * h + dBu[:, i]
                ys.append((h @ C[:, i].unsqueeze(-1)).squeeze(-1))
            y = L.stack(ys, dim=1) + u * self.D
            return x + self.out_proj(y * F.silu(z))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(MBV, MBD)
            self.layers = nn.ModuleList([MambaBlock(), MambaBlock()])
            self.norm_f = RMSNorm(MBD)
            self.head = nn.Linear(MBD, MBV, bias=False)
            self.head.weight = self.emb.weight                      # tied

        def forward(self, ids):
            h = self.emb(ids)
            for layer in self.layers:
                h = layer(h)
            return self.head(self.norm_f(h))
    return LM()


def loss_lm(L, m, ids):
    logits = m(ids[:, :-1])
    return L.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                         ids[:, 1:].reshape(-1))


def _mamba_data(i):
    return (np.random.default_rng(60 + i).integers(0, MBV, (2, 7)),)


# ---------------- 7. RWKV block (token shift by ZeroPad2d, WKV recurrence with the max trick) ---
def build_rwkv(L):
    nn, F = L.nn, L.nn.functional
    d = MBD

    class TimeMix(nn.Module):
        def __init__(self):
            super().__init__()
            self.time_decay = nn.Parameter(L.linspace(-1, 1, d))
            self.time_first = nn.Parameter(L.full((d,), 0.3))
            self.shift = nn.ZeroPad2d((0, 0, 1, -1))
            self.mix_k = nn.Parameter(L.full((1, 1, d), 0.6))
            self.mix_v = nn.Parameter(L.full((1, 1, d), 0.4))
            self.mix_r = nn.Parameter(L.full((1, 1, d), 0.5))
            self.key, self.value = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.receptance, self.output = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)

        def forward(self, x):
            xx = self.shift(x)
            k = self.key(x * self.mix_k + xx * (1 - self.mix_k))
            v = self.value(x * self.mix_v + xx * (1 - self.mix_v))
            r = L.sigmoid(self.receptance(x * self.mix_r + xx * (1 - self.mix_r)))
            w = -L.exp(self.time_decay)
            u = self.time_first
            aa = L.zeros(x.shape[0], d)
            bb = L.zeros_like(aa)
            pp = L.full_like(aa, -1e38)
            outs = []
            for t in range(x.shape[1]):
                kk, vv = k[:, t], v[:, t]
                ww = u + kk
                p = L.maximum(pp, ww)
                e1, e2 = L.exp(pp - p), L.exp(ww - p)
                outs.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
                ww = w + pp
                p = L.maximum(ww, kk)
                e1, e2 = L.exp(ww - p), L.exp(kk - p)
                aa, bb, pp = e1 * aa + e2 * vv, e1 * bb + e2, p
            return self.output(r * L.stack(outs, 1))

    class ChannelMix(nn.Module):
        def __init__(self):
            super().__init__()
            self.shift = nn.ZeroPad2d((0, 0, 1, -1))
            self.mix_k = nn.Parameter(L.full((1, 1, d), 0.7))
            self.key, self.value = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)

        def forward(self, x):
            xx = self.shift(x)
            return self.value(L.square(L.relu(self.key(x * self.mix_k + xx * (1 - self.mix_k)))))

    class RWKV(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(MBV, d)
            self.ln0, self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
            self.att, self.ffn = TimeMix(), ChannelMix()
            self.head = nn.Linear(d, MBV, bias=False)

        def forward(self, ids):
            x = self.ln0(self.emb(ids))
            x = x + self.att(self.ln1(x))
            x = x + self.ffn(self.ln2(x))
            return self.head(x)
    return RWKV()


# ---------------- 8. distillation with a BatchNorm teacher in eval, prototypes, ArcFace ---------
def build_kd(L):
    nn, F = L.nn, L.nn.functional

    def convnet(c):
        return nn.Sequential(nn.Conv2d(1, c, 3, padding=1, bias=False), nn.BatchNorm2d(c),
                             nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(c, c, 3, padding=1, bias=False),
                             nn.BatchNorm2d(c), nn.ReLU())

    class ArcFace(nn.Module):
        def __init__(self, d, n, s=8.0, m=0.3):
            super().__init__()
            self.weight = nn.Parameter(L.randn(n, d) * 0.1)
            self.s, self.m = s, m

        def forward(self, x, label):
            cos = F.linear(F.normalize(x), F.normalize(self.weight))
            sin = L.sqrt((1.0 - L.pow(cos, 2)).clamp(0, 1))
            phi = cos * math.cos(self.m) - sin * math.sin(self.m)
            phi = L.where(cos > math.cos(math.pi - self.m), phi,
                          cos - math.sin(math.pi - self.m) * self.m)
            oh = L.zeros(cos.size()).scatter_(1, label.view(-1, 1).long(), 1)
            return (oh * phi + (1.0 - oh) * cos) * self.s

    class KD(nn.Module):
        def __init__(self):
            super().__init__()
            self.teacher, self.student = convnet(6), convnet(4)
            self.t_head, self.s_head = nn.Linear(6, 3), nn.Linear(4, 3)
            self.adapt = nn.Conv2d(4, 6, 1)
            self.arc = ArcFace(4, 3)
            self.teacher.requires_grad_(False)
            self.t_head.requires_grad_(False)

        def train(self, mode=True):
            super().train(mode)
            self.teacher.eval()                      # the frozen teacher's BN keeps its stats
            return self
    return KD()


def loss_kd(L, m, x, y, sup, q, qy):
    F = L.nn.functional
    with L.no_grad():
        tf = m.teacher(x)
        tl = m.t_head(tf.mean((2, 3)))
    sf = m.student(x)
    emb = sf.mean((2, 3))
    sl = m.s_head(emb)
    T = 3.0
    kd = F.kl_div(F.log_softmax(sl / T, 1), F.softmax(tl / T, 1), reduction="batchmean") * T * T
    at = (F.normalize(sf.pow(2).mean(1).flatten(1)) - F.normalize(tf.pow(2).mean(1).flatten(1)))
    hint = F.mse_loss(m.adapt(sf), tf.detach())
    ce = F.cross_entropy(sl, y, reduction="none")
    focal = ((1 - L.exp(-ce)) ** 2 * ce).mean()
    arc = F.cross_entropy(m.arc(emb, y), y)
    protos = m.student(sup).mean((2, 3)).view(3, 2, -1).mean(1)
    qe = m.student(q).mean((2, 3))
    proto = F.cross_entropy(-L.cdist(qe, protos).pow(2), qy)
    return kd + at.pow(2).mean() + hint + focal + arc + proto


def _kd_data(i):
    r = np.random.default_rng(70 + i)
    f = lambda *s: r.standard_normal(s).astype(np.float32)  # noqa: E731
    return f(4, 1, 6, 6), r.integers(0, 3, 4), f(6, 1, 6, 6), f(3, 1, 6, 6), np.array([0, 2, 1])

PROGRAMS = {
    "ddpm": (build_ddpm, lambda L, m: L.optim.Adam(m.parameters(), lr=2e-3), loss_ddpm,
             _ddpm_data),
    "convnext": (build_convnext, _convnext_opt, loss_convnext, _convnext_data),
    "swin": (build_swin, lambda L, m: L.optim.AdamW(m.parameters(), lr=5e-3), loss_swin,
             _swin_data),
    "metric": (build_metric,
               lambda L, m: L.optim.SGD([p for p in m.parameters() if p.requires_grad],
                                        lr=0.05, momentum=0.9),
               loss_metric, _metric_data),
    "dit": (build_dit, lambda L, m: L.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.0),
            loss_dit, _dit_data),
    "mamba": (build_mamba, lambda L, m: L.optim.AdamW(m.parameters(), lr=3e-3), loss_lm,
              _mamba_data),
    "rwkv": (build_rwkv, lambda L, m: L.optim.Adam(m.parameters(), lr=3e-3, betas=(0.9, 0.99)),
             loss_lm, _mamba_data),
    "kd": (build_kd, lambda L, m: L.optim.SGD([p for p in m.parameters() if p.requires_grad],
                                              lr=0.05, momentum=0.9, weight_decay=1e-4),
           loss_kd, _kd_data),
}
CLIP = {"convnext": 1.0}
EMA = {"ddpm": 0.9, "dit": 0.99}


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def _train(L, name, model, compiled=False):
    """[(loss, [grad of each parameter], [ema params])] over STEPS optimizer steps."""
    _, make_opt, loss_fn, data = PROGRAMS[name]
    opt = make_opt(L, model)
    ema = copy.deepcopy(model) if name in EMA else None
    params = [p for p in model.parameters() if p.requires_grad]

    def step(*args):
        opt.zero_grad()
        loss = loss_fn(L, model, *args)
        loss.backward()
        if name in CLIP:
            L.nn.utils.clip_grad_norm_(model.parameters(), CLIP[name])
        grads = [p.grad.clone() for p in params]
        opt.step()
        if ema is not None:
            with L.no_grad():
                for pe, p in zip(ema.parameters(), model.parameters()):
                    pe.mul_(EMA[name]).add_(p, alpha=1 - EMA[name])
        return loss, grads

    f = st.compile(step) if compiled else step
    out = []
    for i in range(STEPS):
        loss, grads = f(*[L.tensor(a) for a in data(i)])
        out.append((float(loss.detach()), [_np(g) for g in grads]))
    emas = [_np(p) for p in ema.parameters()] if ema is not None else []
    return out, emas


def _st_model(name, sd):
    m = PROGRAMS[name][0](st)
    m.load_state_dict({k: st.tensor(np.asarray(v)) for k, v in sd.items()})
    return m


def _close(got, want):
    (go, ge), (wo, we) = got, want
    for (lg, gg), (lw, gw) in zip(go, wo):
        np.testing.assert_allclose(lg, lw, rtol=1e-4)
        for a, b in zip(gg, gw):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * (np.abs(b).max() + 1e-3))
    # the EMA's atol allows for attention's key bias: its gradient is zero in exact
    # arithmetic, rounding noise that Adam scales to lr
    for a, b in zip(ge, we):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)


def _sd(m):
    return {k: _np(v).astype(np.float32) if v.dtype.is_floating_point else np.asarray(v.tolist())
            for k, v in m.state_dict().items()}


# ---------------- end to end ----------------
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_compiled_trains_as_eager(name):
    st.manual_seed(0)
    sd = _sd(PROGRAMS[name][0](st))
    want = _train(st, name, _st_model(name, sd))
    st.reset()
    got = _train(st, name, _st_model(name, sd), compiled=True)
    _close(got, want)
    graphs, breaks, fallbacks = fe_counts()
    assert graphs >= 1, (graphs, breaks, fallbacks)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_torch(name, compiled, torch):
    torch.manual_seed(0)
    tm = PROGRAMS[name][0](torch)
    sd = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)          # these sizes: torch's thread pool only adds contention
    try:
        want = _train(torch, name, tm)
    finally:
        torch.set_num_threads(threads)
    got = _train(st, name, _st_model(name, sd), compiled)
    _close(got, want)


# ---------------- what the programs found ----------------
def _segsum(L, x):
    """Mamba-2's segment sum: exp of it is the decay between positions (0 above the diagonal)."""
    t = x.size(-1)
    x = x[..., None].expand(*x.shape, t)
    x = x.masked_fill(~L.tril(L.ones(t, t, dtype=L.bool), diagonal=-1), 0)
    xs = L.cumsum(x, dim=-2)
    return xs.masked_fill(~L.tril(L.ones(t, t, dtype=L.bool), diagonal=0), -L.inf)


def test_math_constants():
    assert st.inf == math.inf and st.pi == math.pi and st.e == math.e
    assert math.isnan(st.nan) and st.newaxis is None
    x = st.tensor([[1.0, 2.0]])
    assert tuple(x[st.newaxis].shape) == (1, 1, 2)


@pytest.mark.parametrize("compiled", [False, True])
def test_segsum_with_inf_constant(compiled):
    a = st.tensor([[-0.5, -1.0, -0.25]], requires_grad=True)
    f = st.compile(lambda v: _segsum(st, v).exp()) if compiled else (lambda v: _segsum(st, v).exp())
    out = f(a)
    want = np.exp(np.array([[0, -np.inf, -np.inf], [-1.0, 0, -np.inf], [-1.25, -0.25, 0]]))
    np.testing.assert_allclose(np.asarray(out.tolist())[0], want, rtol=1e-6)
    (out * st.arange(9.0).view(3, 3)).sum().backward()
    g = np.asarray(a.grad.tolist())
    assert np.isfinite(g).all()
    # d/da1 = 3 e^-1 + 6 e^-1.25; d/da2 = 6 e^-1.25 + 7 e^-0.25; a0 never enters
    np.testing.assert_allclose(g[0], [0.0, 3 * np.exp(-1) + 6 * np.exp(-1.25),
                                      6 * np.exp(-1.25) + 7 * np.exp(-0.25)], rtol=1e-5)


_FE_A = [[1.0, -2.0, 3.0], [[0.5, 4.0], [-1.0, 2.0]], 2.0]
_FE_B = [[0.5, 0.5, -1.0], [[2.0, 1.0], [1.0, 0.25]], -3.0]
FOREACH = {
    "mul_scalar": lambda L, a, b: L._foreach_mul(a, 2.5),
    "mul_list": lambda L, a, b: L._foreach_mul(a, b),
    "mul_scalar_list": lambda L, a, b: L._foreach_mul(a, [1.0, 2.0, 3.0]),
    "mul_0d_tensor": lambda L, a, b: L._foreach_mul(a, L.tensor(3.0)),
    "add_alpha": lambda L, a, b: L._foreach_add(a, b, alpha=-0.5),
    "sub_": lambda L, a, b: L._foreach_sub_(a, b, alpha=2),
    "div_": lambda L, a, b: L._foreach_div_(a, b),
    "mul_": lambda L, a, b: L._foreach_mul_(a, 0.9),
    "lerp_": lambda L, a, b: L._foreach_lerp_(a, b, 0.1),
    "lerp_tensors": lambda L, a, b: L._foreach_lerp(a, b, L._foreach_abs(b)),
    "addcmul_": lambda L, a, b: L._foreach_addcmul_(a, b, b, value=-0.3),
    "addcdiv": lambda L, a, b: L._foreach_addcdiv(a, b, b, [1.0, 2.0, 3.0]),
    "sqrt": lambda L, a, b: L._foreach_sqrt(L._foreach_abs(a)),
    "exp_": lambda L, a, b: L._foreach_exp_(a),
    "norm": lambda L, a, b: L._foreach_norm(a),
    "norm_inf": lambda L, a, b: L._foreach_norm(a, math.inf),
    "maximum_scalar": lambda L, a, b: L._foreach_maximum(a, 0.0),
    "clamp_max_list": lambda L, a, b: L._foreach_clamp_max(a, [0.0, 1.0, 2.0]),
    "pow_scalar_base": lambda L, a, b: L._foreach_pow(2.0, a),
    "zero_": lambda L, a, b: L._foreach_zero_(a),
    "copy_": lambda L, a, b: L._foreach_copy_(a, b),
}
FOREACH_WANT = {      # the first tensor of the result, by hand
    "mul_scalar": [2.5, -5.0, 7.5], "mul_list": [0.5, -1.0, -3.0],
    "mul_scalar_list": [1.0, -2.0, 3.0], "mul_0d_tensor": [3.0, -6.0, 9.0],
    "add_alpha": [0.75, -2.25, 3.5], "sub_": [0.0, -3.0, 5.0], "div_": [2.0, -4.0, -3.0],
    "mul_": [0.9, -1.8, 2.7], "lerp_": [0.95, -1.75, 2.6], "lerp_tensors": [0.75, -0.75, -1.0],
    "addcmul_": [0.925, -2.075, 2.7], "addcdiv": [2.0, -1.0, 4.0],
    "sqrt": [1.0, math.sqrt(2), math.sqrt(3)], "exp_": list(np.exp([1.0, -2.0, 3.0])),
    "norm": math.sqrt(14), "norm_inf": 3.0, "maximum_scalar": [1.0, 0.0, 3.0],
    "clamp_max_list": [0.0, -2.0, 0.0], "pow_scalar_base": [2.0, 0.25, 8.0],
    "zero_": [0.0, 0.0, 0.0], "copy_": [0.5, 0.5, -1.0],
}


def _foreach_run(L, name):
    a = [L.tensor(v) for v in _FE_A]
    b = [L.tensor(v) for v in _FE_B]
    out = FOREACH[name](L, a, b)
    if name.endswith("_"):
        assert out is a                       # in place: the list given, updated
    return [np.asarray(t.tolist()) for t in out]


@pytest.mark.parametrize("name", list(FOREACH))
def test_foreach_ops(name):
    got = _foreach_run(st, name)
    np.testing.assert_allclose(got[0], FOREACH_WANT[name], rtol=1e-6)


@pytest.mark.parametrize("name", list(FOREACH))
def test_foreach_ops_match_torch(name, torch):
    for g, w in zip(_foreach_run(st, name), _foreach_run(torch, name)):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_foreach_bad_operands_name_them():
    a = [st.ones(2), st.ones(3)]
    with pytest.raises(RuntimeError, match="same number of tensors, got 2 and 1"):
        st._foreach_mul_(a, [st.ones(2)])
    with pytest.raises(RuntimeError, match="at least one tensor"):
        st._foreach_mul_([], 2.0)
    with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
        st._foreach_add(a, [1.0])
    with pytest.raises(TypeError, match="'self' must be a list or tuple of Tensors"):
        st._foreach_mul_(st.ones(2), 2.0)
    with pytest.raises(TypeError, match="alpha"):
        st._foreach_add_(a, 2.0, alpha=2)


def _foreach_ema(L, compiled=False):
    """timm-style EMA through _foreach_mul_/_foreach_add_ after an SGD step."""
    L.manual_seed(0)
    m = L.nn.Linear(3, 2)
    with L.no_grad():
        m.weight.copy_(L.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
        m.bias.copy_(L.tensor([0.05, -0.05]))
    ema = copy.deepcopy(m)
    opt = L.optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = m(x).pow(2).sum()
        loss.backward()
        opt.step()
        with L.no_grad():
            ep = list(ema.parameters())
            L._foreach_mul_(ep, 0.9)
            L._foreach_add_(ep, list(m.parameters()), alpha=0.1)
        return loss
    f = st.compile(step) if compiled else step
    x = L.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
    losses = [float(f(x * (1 + i)).detach()) for i in range(5)]
    return losses, [np.asarray(p.tolist()) for p in ema.parameters()]


def test_foreach_ema_compiled_as_eager():
    want = _foreach_ema(st)
    got = _foreach_ema(st, compiled=True)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
    assert fe_counts()[0] >= 1


def test_foreach_ema_matches_torch(torch):
    got, want = _foreach_ema(st), _foreach_ema(torch)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


def _np_schedule(L, x0, noise, t):
    """DDPM's q_sample over a numpy schedule (as the original code keeps it): numpy scalars
    on the left of tensors."""
    ac = np.cumprod(1 - np.linspace(1e-4, 0.02, 50))
    return (np.sqrt(ac)[t] * x0 + np.sqrt(1 - ac)[t] * noise - np.float32(0.5) * x0
            + np.int64(2) - x0 / np.float64(4.0))


@pytest.mark.parametrize("compiled", [False, True])
def test_numpy_scalar_left_of_tensor_gives_a_tensor(compiled):
    x0 = st.tensor([[1.0, -2.0]], requires_grad=True)
    noise = st.tensor([[0.5, 0.25]])
    f = st.compile(_np_schedule) if compiled else _np_schedule
    for t in (3, 10, 3):
        out = f(st, x0, noise, t)
        assert isinstance(out, st.Tensor) and out.dtype == st.float32
        ac = np.cumprod(1 - np.linspace(1e-4, 0.02, 50))[t]
        want = np.sqrt(ac) * np.array([1.0, -2.0]) + np.sqrt(1 - ac) * np.array([0.5, 0.25]) \
            - 0.5 * np.array([1.0, -2.0]) + 2 - np.array([1.0, -2.0]) / 4
        np.testing.assert_allclose(np.asarray(out.tolist())[0], want, rtol=1e-6)
    x0.grad = None
    f(st, x0, noise, 10).sum().backward()
    ac = np.cumprod(1 - np.linspace(1e-4, 0.02, 50))[10]
    np.testing.assert_allclose(x0.grad.tolist()[0], [np.sqrt(ac) - 0.75] * 2, rtol=1e-6)
    assert (np.float32(1.5) < x0).tolist() == [[False, False]]
    assert (np.float64(2.0) ** x0).tolist()[0] == pytest.approx([2.0, 0.25])


def test_numpy_scalar_left_of_tensor_matches_torch(torch):
    got = _np_schedule(st, st.tensor([[1.0, -2.0]]), st.tensor([[0.5, 0.25]]), 7)
    want = _np_schedule(torch, torch.tensor([[1.0, -2.0]]), torch.tensor([[0.5, 0.25]]), 7)
    assert isinstance(want, torch.Tensor) and str(want.dtype) == "torch.float32"
    np.testing.assert_allclose(got.tolist(), want.tolist(), rtol=1e-6)


EINSUM_MIXED = [            # (equation, shapes, dtypes): torch promotes where nothing is contracted
    ("btd,dn->btdn", [(2, 3, 4), (4, 5)], ("float64", "float32")),
    ("b l d, b l n, b l d -> b l d n", [(2, 3, 4), (2, 3, 5), (2, 3, 4)],
     ("float64", "float32", "float64")),
    ("ij,k->", [(2, 3), (4,)], ("float32", "float64")),
    ("bi,bj->bij", [(2, 3), (2, 4)], ("float32", "int64")),
]
EINSUM_MIXED_REFUSED = [    # a contraction is torch's bmm, which refuses mixed dtypes
    ("ij,jk->ik", [(2, 3), (3, 2)], ("float64", "float32"), "Double but found Float"),
    ("ij,j->i", [(2, 3), (3,)], ("float32", "float64"), "Float but found Double"),
]


def _einsum_mixed(L, eq, shapes, dtypes):
    """(result, gradients of the float operands, the operands' values)."""
    ops = [L.tensor(np.arange(1, np.prod(s) + 1).reshape(s) / 7.0).to(getattr(L, d))
           for s, d in zip(shapes, dtypes)]
    for o in ops:
        if o.dtype.is_floating_point:
            o.requires_grad_(True)
    out = L.einsum(eq, *ops)
    (out * out).sum().backward()
    return (out, [np.asarray(o.grad.tolist()) for o in ops if o.dtype.is_floating_point],
            [np.asarray(o.tolist()) for o in ops])


@pytest.mark.parametrize("eq,shapes,dtypes", EINSUM_MIXED)
def test_einsum_mixed_dtypes_without_contraction_promote(eq, shapes, dtypes):
    out, grads, vals = _einsum_mixed(st, eq, shapes, dtypes)
    assert out.dtype == (st.float64 if "float64" in dtypes else st.float32)
    ref = np.einsum(eq.replace(" ", ""), *vals)
    np.testing.assert_allclose(np.asarray(out.tolist()), ref, rtol=1e-5)
    assert grads and all(np.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("eq,shapes,dtypes", EINSUM_MIXED)
def test_einsum_mixed_dtypes_match_torch(eq, shapes, dtypes, torch):
    got, gg, _ = _einsum_mixed(st, eq, shapes, dtypes)
    want, gw, _ = _einsum_mixed(torch, eq, shapes, dtypes)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()), rtol=1e-6)
    for a, b in zip(gg, gw):
        np.testing.assert_allclose(a, b, rtol=1e-5)


@pytest.mark.parametrize("eq,shapes,dtypes,msg", EINSUM_MIXED_REFUSED)
def test_einsum_mixed_dtypes_contracted_refused(eq, shapes, dtypes, msg):
    ops = [st.ones(*s, dtype=getattr(st, d)) for s, d in zip(shapes, dtypes)]
    with pytest.raises(RuntimeError, match=msg):
        st.einsum(eq, *ops)


@pytest.mark.parametrize("compiled", [False, True])
def test_mamba_scan_in_float64_with_float32_decay(compiled):
    """mamba's reference scan in a model.double(): A = -exp(A_log.float()) stays float32."""
    def f(dt, a_log):
        return st.exp(st.einsum("bld,dn->bldn", dt, -st.exp(a_log.float()))).sum()
    dt = st.tensor([[[0.1, 0.2], [0.3, 0.4]]], dtype=st.float64, requires_grad=True)
    a_log = st.tensor([[0.0, 0.5], [1.0, 0.25]], dtype=st.float64)
    out = (st.compile(f) if compiled else f)(dt, a_log)
    assert out.dtype == st.float64
    A = -np.exp(np.array([[0.0, 0.5], [1.0, 0.25]]))
    d = np.array([[0.1, 0.2], [0.3, 0.4]])
    np.testing.assert_allclose(float(out), np.exp(d[:, :, None] * A[None]).sum(), rtol=1e-6)


def _scan_readout(L, h, c):
    """The scan's readout under CPU autocast: the state stays float32, C comes from a bf16
    Linear; torch's einsum contracts through bmm, which autocast casts to bfloat16 first."""
    with L.autocast("cpu", dtype=L.bfloat16):
        return L.einsum("bdn,bn->bd", h, c)


@pytest.mark.parametrize("compiled", [False, True])
def test_einsum_contraction_under_autocast_casts_first(compiled):
    h = st.tensor(np.arange(8, dtype=np.float32).reshape(1, 2, 4) / 4, requires_grad=True)
    c = st.tensor([[1.0, 0.5, -1.0, 2.0]]).to(st.bfloat16)
    out = (st.compile(_scan_readout) if compiled else _scan_readout)(st, h, c)
    assert out.dtype == st.bfloat16
    np.testing.assert_allclose(out.float().tolist(), [[1.125, 3.625]], rtol=1e-2)
    out.float().sum().backward()
    assert h.grad.dtype == st.float32
    np.testing.assert_allclose(h.grad.tolist(), [[[1.0, 0.5, -1.0, 2.0]] * 2], rtol=1e-2)
    with st.autocast("cpu", dtype=st.bfloat16):          # float64 is never cast: refused
        with pytest.raises(RuntimeError, match="BFloat16 but found Double"):
            st.einsum("ij,jk->ik", st.ones(2, 3), st.ones(3, 2, dtype=st.float64))


def test_einsum_contraction_under_autocast_matches_torch(torch):
    hv = np.arange(8, dtype=np.float32).reshape(1, 2, 4) / 4
    got = _scan_readout(st, st.tensor(hv), st.tensor([[1.0, 0.5, -1.0, 2.0]]).to(st.bfloat16))
    want = _scan_readout(torch, torch.tensor(hv, dtype=torch.float32),
                         torch.tensor([[1.0, 0.5, -1.0, 2.0]]).to(torch.bfloat16))
    assert str(want.dtype) == "torch.bfloat16" and got.dtype == st.bfloat16
    np.testing.assert_allclose(got.float().tolist(), want.float().tolist(), rtol=1e-6)


def _batch_hard(L, e, labels, mode="use_mm_for_euclid_dist_if_necessary"):
    """Batch-hard triplet mining over cdist(e, e): more than 25 rows take the matmul form,
    whose diagonal is 0 (or clamped to 0)."""
    d = L.cdist(e, e, compute_mode=mode)
    same = labels[:, None] == labels[None]
    hardest_pos = (d * same.float()).max(1).values
    hardest_neg = (d + 1e4 * same.float()).min(1).values
    return L.nn.functional.relu(hardest_pos - hardest_neg + 1.0).mean() + 1e-3 * d.sum()


_BH_E = np.random.default_rng(3).standard_normal((32, 6)).astype(np.float32)
_BH_Y = np.arange(32) % 4


@pytest.mark.parametrize("compiled", [False, True])
def test_cdist_matmul_form_gradient_at_zero_distance(compiled):
    f = st.compile(_batch_hard) if compiled else _batch_hard
    e = st.tensor(_BH_E, requires_grad=True)
    f(st, e, st.tensor(_BH_Y)).backward()
    g = np.asarray(e.grad.tolist())
    assert np.isfinite(g).all()
    e2 = st.tensor(_BH_E, requires_grad=True)          # the difference form, exact at 0
    _batch_hard(st, e2, st.tensor(_BH_Y), "donot_use_mm_for_euclid_dist").backward()
    np.testing.assert_allclose(g, np.asarray(e2.grad.tolist()), rtol=1e-3, atol=1e-4)
    z = st.zeros(30, 2, requires_grad=True)
    d = st.cdist(z, z)
    d.sum().backward()
    assert d.abs().max().item() == 0.0 and z.grad.abs().max().item() == 0.0


def test_cdist_matmul_form_gradient_matches_torch(torch):
    grads = []
    for L in (st, torch):
        e = L.tensor(_BH_E, requires_grad=True)
        _batch_hard(L, e, L.tensor(_BH_Y)).backward()
        grads.append(np.asarray(e.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-3, atol=1e-4)


def test_compile_takes_torch_signature():
    m = st.nn.Linear(2, 1)
    x = st.tensor([[1.0, -2.0]])
    want = m(x).tolist()
    assert st.compile(m, disable=True) is m
    assert st.compile(disable=True)(m) is m
    for kw in ({"backend": "inductor"}, {"backend": "aot_eager"}, {"backend": "cudagraphs"},
               {"options": {"triton.cudagraphs": False}}, {"mode": "max-autotune"},
               {"name": "step", "recompile_limit": 8}):
        st.reset()
        assert st.compile(m, **kw)(x).tolist() == want, kw
    with pytest.raises(RuntimeError, match="Either mode or options"):
        st.compile(m, mode="default", options={})
    with pytest.raises(ValueError, match="unknown backend 'nosuch'"):
        st.compile(m, backend="nosuch")


def test_module_compile_in_place():
    st.manual_seed(0)
    m = st.nn.Sequential(st.nn.Linear(2, 3), st.nn.ReLU(), st.nn.Linear(3, 1))
    x = st.tensor([[1.0, -2.0], [0.5, 0.25]])
    want = np.asarray(m(x).tolist())
    keys = list(m.state_dict())
    assert m.compile() is None
    assert type(m) is st.nn.Sequential and list(m.state_dict()) == keys
    np.testing.assert_allclose(m(x).tolist(), want, rtol=1e-6)
    np.testing.assert_allclose(m(x).tolist(), want, rtol=1e-6)
    assert fe_counts()[0] >= 1                               # it ran as a graph
    h = m.register_forward_hook(lambda mod, i, o: o * 2)
    np.testing.assert_allclose(m(x).tolist(), want * 2, rtol=1e-6)
    h.remove()
    np.testing.assert_allclose(m(x).tolist(), want, rtol=1e-6)
    ema = copy.deepcopy(m)                                   # a copy runs its own weights
    assert "_compiled_call_impl" not in ema.__dict__
    with st.no_grad():
        ema[0].weight.mul_(0.0)
    assert not np.allclose(ema(x).tolist(), want)
    np.testing.assert_allclose(m(x).tolist(), want, rtol=1e-6)
    m2 = st.nn.Linear(2, 2)
    m2.compile(disable=True)
    assert "_compiled_call_impl" not in m2.__dict__ and not m2._has_hooks


@pytest.mark.parametrize("name", ["convnext", "swin"])
def test_program_with_module_compile_matches_torch(name, torch):
    torch.manual_seed(0)
    tm = PROGRAMS[name][0](torch)
    sd = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        want = _train(torch, name, tm)
    finally:
        torch.set_num_threads(threads)
    sm = _st_model(name, sd)
    sm.compile()
    got = _train(st, name, sm)
    _close(got, want)
    assert fe_counts()[0] >= 1


def _with_break(x):
    y = x * 2
    st._dynamo.graph_break()
    return y + 1


def test_dynamo_names_scripts_use():
    cfg = st._dynamo.config
    assert cfg.cache_size_limit == 8 and cfg.suppress_errors is False
    cfg.suppress_errors = True
    cfg.some_flag_symtrace_ignores = 1
    assert cfg.suppress_errors and cfg.some_flag_symtrace_ignores == 1
    st.reset()
    c = st.compile(_with_break)
    assert c(st.ones(2)).tolist() == [3.0, 3.0]
    graphs, breaks, _ = fe_counts()
    assert breaks == 1 and graphs == 2                     # graph_break() split the frame
    out = st._dynamo.explain(_with_break)(st.ones(2))
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    x = st.ones(3, 4)
    st._dynamo.mark_dynamic(x, 0)
    st._dynamo.maybe_mark_dynamic(x, [0, 1])
    st._dynamo.mark_static(x)
    with pytest.raises(IndexError, match="mark_dynamic: dimension 5 is out of range"):
        st._dynamo.mark_dynamic(x, 5)
    st._dynamo.reset()
    assert st._C._fe_stats()["translations"] == 0       # reset drops what was compiled
    assert st.compiler.allow_in_graph(len) is len
    assert st.compiler.assume_constant_result(len) is len
    assert st.compiler.cudagraph_mark_step_begin() is None and not st.compiler.is_exporting()
    assert "eager" in st.compiler.list_backends() and st._dynamo.list_backends() == \
        st.compiler.list_backends()
    cfg.suppress_errors = False
    del cfg.some_flag_symtrace_ignores
