"""hunt_autocast.py - runs ~100 ops and nn functions under autocast in torch
(CPU) and symtrace (eager and st.compile) and prints every mismatch in
output dtype, value (16-bit tolerance) and the dtype of the float32 leaf's
gradient. Needs torch. Usage:
    PYTHONPATH=. python scripts/hunt_autocast.py [--fp16] [--only NAME,...]"""
import sys

import numpy as np
import torch

import symtrace as st

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((6, 8)).astype(np.float32)
Z48 = np.zeros((4, 8), np.float32)
R48 = RNG.standard_normal((4, 8)).astype(np.float32)
P48 = RNG.random((4, 8)).astype(np.float32)
K2 = RNG.standard_normal((3, 2, 2, 2)).astype(np.float32)
K1 = RNG.standard_normal((3, 4, 2)).astype(np.float32)
KT = RNG.standard_normal((2, 3, 2, 2)).astype(np.float32)
TGT = np.array([1, 0, 7, 3], np.int64)


def ops(M):
    """name -> fn(M, a) for the library M (torch or symtrace)."""
    F = M.nn.functional
    t = M.tensor
    return {
        'mm': lambda a: M.mm(a, a.t()), 'matmul': lambda a: a @ a.t(), 'linear': lambda a: F.linear(a, t(W)),
        'linear_b': lambda a: F.linear(a, t(W), t(W[:, 0])),
        'bmm': lambda a: M.bmm(a[None], a.t()[None]), 'addmm': lambda a: M.addmm(t(Z48[:, :4] + 1), a, a.t()),
        'baddbmm': lambda a: M.baddbmm(t(Z48[None, :, :4]), a[None], a.t()[None]),
        'addbmm': lambda a: M.addbmm(t(Z48[:, :4]), a[None], a.t()[None]),
        'conv2d': lambda a: F.conv2d(a.reshape(1, 2, 4, 4), t(K2)),
        'conv1d': lambda a: F.conv1d(a[None], t(K1)),
        'conv_transpose2d': lambda a: F.conv_transpose2d(a.reshape(1, 2, 4, 4), t(KT)),
        'prelu': lambda a: F.prelu(a, t(np.ones(1, np.float32) * 0.25)),
        'sdpa': lambda a: F.scaled_dot_product_attention(a[None], a[None], a[None]),
        'einsum': lambda a: M.einsum('ij,kj->ik', a, a),
        'tensordot': lambda a: M.tensordot(a, a, dims=([1], [1])),
        'dot': lambda a: M.dot(a[0], a[1]), 'mv': lambda a: M.mv(a, a[0]), 'outer': lambda a: M.outer(a[0], a[1]),
        'softmax': lambda a: F.softmax(a, -1), 'log_softmax': lambda a: F.log_softmax(a, -1),
        'softmax_dt': lambda a: F.softmax(a, -1, dtype=M.float32),
        'layer_norm': lambda a: F.layer_norm(a, (8,)), 'layer_norm_w': lambda a: F.layer_norm(a, (8,), t(W[0]), t(W[1])),
        'group_norm': lambda a: F.group_norm(a[None], 2),
        'batch_norm': lambda a: F.batch_norm(a, None, None, training=True),
        'exp': M.exp, 'log': lambda a: M.log(a.abs()), 'pow': lambda a: M.pow(a, 2), 'sum': M.sum, 'mean': M.mean,
        'prod': M.prod, 'cumsum': lambda a: M.cumsum(a, 0), 'logsumexp': lambda a: M.logsumexp(a, -1),
        'rsqrt': lambda a: M.rsqrt(a.abs()), 'reciprocal': M.reciprocal, 'norm': lambda a: M.norm(a),
        'cross_entropy': lambda a: F.cross_entropy(a, t(TGT)), 'nll_loss': lambda a: F.nll_loss(a, t(TGT)),
        'mse_loss': lambda a: F.mse_loss(a, t(Z48)), 'l1_loss': lambda a: F.l1_loss(a, t(Z48)),
        'smooth_l1': lambda a: F.smooth_l1_loss(a, t(Z48)), 'huber': lambda a: F.huber_loss(a, t(Z48)),
        'bce': lambda a: F.binary_cross_entropy(a.sigmoid(), t(P48)),
        'bce_logits': lambda a: F.binary_cross_entropy_with_logits(a, t(P48)),
        'kl_div': lambda a: F.kl_div(a, t(P48), reduction='batchmean'),
        'cosine_sim': lambda a: F.cosine_similarity(a, a + 1),
        'cdist': lambda a: M.cdist(a, a + 1), 'trace': lambda a: M.trace(a), 'avg_pool2d': lambda a: F.avg_pool2d(a[None], 2),
        'max_pool2d': lambda a: F.max_pool2d(a[None], 2),
        'reflection_pad': lambda a: F.pad(a[None], (1, 1), mode='reflect'),
        'replicate_pad': lambda a: F.pad(a[None], (1, 1), mode='replicate'),
        'cat': lambda a: M.cat([a, t(R48)]), 'stack': lambda a: M.stack([a, t(R48)]),
        'cat_mm': lambda a: M.cat([a @ a.t(), t(R48[:, :4])]), 'stack_mm': lambda a: M.stack([a @ a.t(), t(R48[:, :4])]),
        'add_mixed': lambda a: (a @ a.t()) + t(R48[:, :4]),
        'where': lambda a: M.where(a > 0, a @ t(R48).t(), t(R48[:, :4])),
        'index_copy': lambda a: M.zeros(4, 4).index_copy(0, M.arange(4), a @ a.t()),
        'gelu': F.gelu, 'relu': F.relu, 'tanh': M.tanh, 'sigmoid': M.sigmoid, 'silu': F.silu,
        'dropout0': lambda a: F.dropout(a, 0.0), 'embedding': lambda a: F.embedding(t(np.array([0, 1])), a),
        'normalize': lambda a: F.normalize(a), 'var': M.var, 'std': M.std, 'sqrt': lambda a: M.sqrt(a.abs()),
        'topk': lambda a: M.topk(a, 2)[0], 'sort': lambda a: M.sort(a)[0], 'max': lambda a: a.max(),
        'vector_norm': lambda a: M.linalg.vector_norm(a),
        'addcmul': lambda a: M.addcmul(a, a, a), 'erf': M.erf, 'sin': M.sin, 'log1p': lambda a: M.log1p(a.abs()),
        'expm1': M.expm1, 'log2': lambda a: M.log2(a.abs()), 'softplus': F.softplus, 'logsigmoid': F.logsigmoid,
        'softmin': lambda a: F.softmin(a, -1), 'instance_norm': lambda a: F.instance_norm(a[None]),
        'rms_norm': lambda a: F.rms_norm(a, (8,)),
        'interpolate': lambda a: F.interpolate(a[None], scale_factor=2),
        'adaptive_avg_pool1d': lambda a: F.adaptive_avg_pool1d(a, 2),
        'triplet': lambda a: F.triplet_margin_loss(a, a + 1, a - 1),
        'soft_margin': lambda a: F.soft_margin_loss(a, t(np.ones((4, 8), np.float32))),
        'margin_ranking': lambda a: F.margin_ranking_loss(a, a + 1, t(np.ones((4, 8), np.float32))),
        'poisson_nll': lambda a: F.poisson_nll_loss(a, a.abs()),
        'hinge_emb': lambda a: F.hinge_embedding_loss(a, t(np.ones((4, 8), np.float32))),
        'cosine_emb': lambda a: F.cosine_embedding_loss(a, a + 1, t(np.ones(4, np.float32))),
        'multi_margin': lambda a: F.multi_margin_loss(a, t(TGT)),
        'inverse': lambda a: M.inverse(a[:, :4] + 4 * M.eye(4)),
        'polar': lambda a: M.polar(a.abs(), a).real, 'quantile': lambda a: M.quantile(a, 0.5),
        'masked_fill': lambda a: a.masked_fill(a > 0, 1.0), 'clamp': lambda a: a.clamp(-1, 1),
        'addcdiv': lambda a: M.addcdiv(a, a, a.abs() + 1),
        'dist': lambda a: M.dist(a, a * 2), 'pdist': lambda a: F.pdist(a),
        'glu': lambda a: F.glu(a), 'hardswish': F.hardswish, 'elu': F.elu, 'leaky_relu': F.leaky_relu,
        'cumprod': lambda a: M.cumprod(a, 0), 'logcumsumexp': lambda a: M.logcumsumexp(a, 0),
        'scatter_add': lambda a: M.zeros(4, 8).scatter_add(0, M.zeros(4, 8, dtype=M.long), a),
        'mm_then_sum': lambda a: (a @ a.t()).sum(), 'mm_then_softmax': lambda a: F.softmax(a @ a.t(), -1),
        'mm_then_ln': lambda a: F.layer_norm(a @ a.t(), (4,)),
        'mm_then_ce': lambda a: F.cross_entropy(a @ t(W).t(), t(TGT[:] % 6)),
        'mm_then_exp': lambda a: M.exp(a @ a.t()), 'mm_then_mse': lambda a: F.mse_loss(a @ a.t(), t(Z48[:, :4])),
        'nn_linear': lambda a: _module(M, 'Linear', 8, 3)(a),
        'nn_conv2d': lambda a: _module(M, 'Conv2d', 2, 3, 2)(a.reshape(1, 2, 4, 4)),
        'nn_layernorm': lambda a: _module(M, 'LayerNorm', 8)(a),
        'nn_embedding_bag': lambda a: F.embedding_bag(t(np.array([0, 1, 2])), a, t(np.array([0]))),
        'nn_mha': lambda a: _module(M, 'MultiheadAttention', 8, 2, batch_first=True)(a[None], a[None], a[None])[0],
        'nn_lstm': lambda a: _module(M, 'LSTM', 8, 4, batch_first=True)(a[None])[0],
        'nn_gru': lambda a: _module(M, 'GRU', 8, 4, batch_first=True)(a[None])[0],
        'nn_transformer_layer': lambda a: _module(M, 'TransformerEncoderLayer', 8, 2, 16, dropout=0.0,
                                                  batch_first=True)(a[None]),
    }


_MODS, _SMODS = {}, {}


def _module(M, name, *args, **kw):
    """The same module (same seed-initialised parameters) in both libraries."""
    key = (name, args, tuple(sorted(kw.items())))
    if key not in _MODS:
        torch.manual_seed(0)
        _MODS[key] = getattr(torch.nn, name)(*args, **kw).eval()
    tm = _MODS[key]
    if M is torch:
        return tm
    if key not in _SMODS:     # built once: a module built inside a compiled body is another matter
        sm = getattr(st.nn, name)(*args, **kw).eval()
        sm.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
        _SMODS[key] = sm
    return _SMODS[key]


def _np(y):
    return y.detach().float().numpy() if isinstance(y, torch.Tensor) else np.asarray(y.detach().float().numpy())


def run_one(M, fn, low, inp_low, compiled):
    a = M.tensor(X, requires_grad=True)
    leaf = a
    if inp_low:
        a = a.to(low)

    def body(a):
        return fn(a)
    f = st.compile(body, dynamic=False) if compiled else body
    with (torch.autocast('cpu', dtype=low) if M is torch else st.autocast('cpu', dtype=low)):
        y = f(a)
    g = None
    if y.dtype.is_floating_point and y.requires_grad:
        y.float().sum().backward()
        g = leaf.grad
    return y, (None if g is None else g.dtype)


def _name(dt):
    return str(dt).split('.')[-1]


def main(argv):
    low_t, low_s = (torch.float16, st.float16) if '--fp16' in argv else (torch.bfloat16, st.bfloat16)
    only = None
    if '--only' in argv:
        only = set(argv[argv.index('--only') + 1].split(','))
    tops, sops = ops(torch), ops(st)
    bad = 0
    for name in tops:
        if only and name not in only:
            continue
        for inp_low in (False, True):
            try:
                ty, tg = run_one(torch, tops[name], low_t, inp_low, False)
            except Exception as e:      # torch refuses: nothing to compare
                continue
            for compiled in (False, True):
                tag = f"{name}{'[low in]' if inp_low else ''}{' compiled' if compiled else ''}"
                try:
                    sy, sg = run_one(st, sops[name], low_s, inp_low, compiled)
                except Exception as e:
                    print(f"ERR   {tag}: {type(e).__name__}: {str(e)[:150]}")
                    bad += 1
                    continue
                msgs = []
                if _name(ty.dtype) != _name(sy.dtype):
                    msgs.append(f"dtype torch {_name(ty.dtype)} symtrace {_name(sy.dtype)}")
                if _name(tg) != _name(sg):
                    msgs.append(f"grad dtype torch {_name(tg)} symtrace {_name(sg)}")
                if tuple(ty.shape) != tuple(sy.shape):
                    msgs.append(f"shape torch {tuple(ty.shape)} symtrace {tuple(sy.shape)}")
                elif ty.dtype.is_floating_point:
                    tv, sv = _np(ty), _np(sy)
                    tol = 2e-2 if low_t == torch.bfloat16 else 4e-3
                    if not np.allclose(tv, sv, rtol=4 * tol, atol=4 * tol * (1 + np.abs(tv).max()), equal_nan=True):
                        msgs.append(f"values differ (max abs {np.nanmax(np.abs(tv - sv)):.3g})")
                if msgs:
                    bad += 1
                    print(f"DIFF  {tag}: " + "; ".join(msgs))
    print(f"{bad} mismatches")
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
