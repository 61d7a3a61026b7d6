#!/usr/bin/env python
"""scripts/hunt_nn.py: torch.nn / torch.optim / lr_scheduler against symtrace, class
by class. Each nn case builds the module with the same arguments in torch and in
symtrace, checks that the state_dict keys are torch's, loads torch's weights into
symtrace (via numpy), and compares the forward outputs, the buffers after the
forward, the input and the parameter gradients, eagerly and under st.compile.
Each optimizer / scheduler case runs 5 steps from the same parameters and
gradients and compares the parameters, the learning rates and the state_dict.

    .venv/bin/python scripts/hunt_nn.py [-k SUBSTRING] [--no-compile] [-v]

Prints a table: case -> ok / mismatch / missing / crash (a Python exception in
symtrace where torch runs) / signal (the process died: each case batch runs in
a child process so that a C crash is reported and the hunt goes on).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RTOL, ATOL = 2e-4, 2e-5
DOUBLE = os.environ.get("HUNT_DOUBLE") == "1"    # --double: modules and float inputs in float64


# ---------------------------------------------------------------- inputs
def F(*shape, lo=-1.0, hi=1.0):
    """a float input that requires grad"""
    return ("f", shape, lo, hi)


def C(*shape, lo=-1.0, hi=1.0):
    """a float input without grad (a target)"""
    return ("c", shape, lo, hi)


def I(high, *shape, lo=0):
    """an int64 input in [lo, high)"""
    return ("i", shape, lo, high)


def S(*shape):
    """a +-1 float target"""
    return ("s", shape, 0, 0)


def B(*shape, p=0.3, keep_first=True):
    """a bool mask (True = masked); keep_first leaves index 0 of the last dim unmasked"""
    return ("b", shape, p, keep_first)


def Causal(n, boolean=False):
    """an [n, n] causal attention mask: float -inf (or True) above the diagonal"""
    return ("m", (n, n), boolean, 0)


def K(name, value):
    """a keyword argument of the forward call: an input spec, or a constant"""
    return ("kw", name, value, 0)


def resized(spec):
    """spec with the first dim of every tensor input one larger, or None when the
    tensor inputs do not share a first dim (or hold a square mask)"""
    firsts = []

    def walk(e):
        kind, shape, lo, hi = e
        if kind == "kw":
            return walk(lo) if isinstance(lo, tuple) and lo and isinstance(lo[0], str) and len(lo) == 4 else True
        if kind == "m" or not shape:
            return False
        firsts.append(shape[0])
        return True
    if not all(walk(e) for e in spec) or not firsts or len(set(firsts)) != 1:
        return None

    def grow(e):
        kind, shape, lo, hi = e
        if kind == "kw":
            return (kind, shape, grow(lo), hi) if isinstance(lo, tuple) and len(lo) == 4 else e
        return (kind, (shape[0] + 1,) + tuple(shape[1:]), lo, hi)
    return [grow(e) for e in spec]


def make_inputs(spec, seed):
    rng = np.random.default_rng(seed)
    out = []
    for kind, shape, lo, hi in spec:
        if kind == "kw":
            if isinstance(lo, tuple) and lo and lo[0] in ("f", "c", "i", "s", "b", "m"):
                out.append(("kw", (shape, make_inputs([lo], seed + 1)[0])))
            else:
                out.append(("kw", (shape, ("const", lo))))
        elif kind == "b":
            m = rng.random(shape) < lo
            if hi:
                m[..., 0] = False
            out.append(("c", m))
        elif kind == "m":
            tri = np.triu(np.ones(shape, bool), 1)
            out.append(("c", tri if lo else np.where(tri, -np.inf, 0.0).astype(np.float64 if DOUBLE else np.float32)))
        elif kind == "d":
            out.append(("f", rng.uniform(lo, hi, shape).astype(np.float64)))
        elif kind in "fc":
            out.append((kind, rng.uniform(lo, hi, shape).astype(np.float64 if DOUBLE else np.float32)))
        elif kind == "i":
            out.append((kind, rng.integers(lo, hi, shape).astype(np.int64)))
        elif kind == "s":
            out.append(("c", np.where(rng.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)))
    return out


# ---------------------------------------------------------------- nn cases
def nn_cases():
    P = lambda *s: F(*s, lo=0.05, hi=0.95)       # noqa: E731  probabilities
    Pc = lambda *s: C(*s, lo=0.05, hi=0.95)      # noqa: E731
    Pos = lambda *s: F(*s, lo=0.1, hi=2.0)       # noqa: E731
    cs = []

    def add(name, args=(), kw=None, ins=(), train=True, label=None, grad=True):
        cs.append(dict(cls=name, args=list(args), kw=kw or {}, ins=list(ins), train=train,
                       label=label or name, grad=grad))
    # linear / bilinear / identity / flatten
    add("Identity", ins=[F(2, 3)])
    add("Linear", (4, 3), ins=[F(2, 4)])
    add("Linear", (4, 3), dict(bias=False), ins=[F(2, 5, 4)], label="Linear[nobias,3d]")
    add("Bilinear", (3, 4, 2), ins=[F(5, 3), F(5, 4)])
    add("Bilinear", (3, 4, 2), dict(bias=False), ins=[F(5, 3), F(5, 4)], label="Bilinear[nobias]")
    add("Flatten", ins=[F(2, 3, 4)])
    add("Flatten", (0, -1), ins=[F(2, 3, 4)], label="Flatten[0,-1]")
    add("Unflatten", (1, (2, 3)), ins=[F(4, 6)])
    # activations
    for a, kw in [("ReLU", {}), ("ReLU6", {}), ("ELU", dict(alpha=0.7)), ("SELU", {}), ("CELU", dict(alpha=0.5)),
                  ("GELU", {}), ("GELU", dict(approximate="tanh")), ("SiLU", {}), ("Mish", {}),
                  ("Sigmoid", {}), ("Tanh", {}), ("Hardtanh", dict(min_val=-0.5, max_val=0.7)),
                  ("Hardsigmoid", {}), ("Hardswish", {}), ("LeakyReLU", dict(negative_slope=0.2)),
                  ("LogSigmoid", {}), ("Softplus", dict(beta=2.0, threshold=1.0)), ("Softsign", {}),
                  ("Tanhshrink", {}), ("Hardshrink", dict(lambd=0.3)), ("Softshrink", dict(lambd=0.3)),
                  ("Threshold", (0.1, 20.0)), ("GLU", {}), ("GLU", dict(dim=0)),
                  ("Softmax", dict(dim=1)), ("Softmax", dict(dim=0)), ("LogSoftmax", dict(dim=1)),
                  ("Softmin", dict(dim=1)), ("Softmax2d", {}), ("PReLU", {}), ("PReLU", dict(num_parameters=4)),
                  ("RReLU", {})]:
        args = kw if isinstance(kw, tuple) else ()
        kw = kw if isinstance(kw, dict) else {}
        shape = (3, 4, 2, 2) if a in ("Softmax2d", "PReLU") else (4, 6)
        add(a, args, kw, ins=[F(*shape, lo=-3, hi=3)], train=(a != "RReLU"),
            label=a + ("[%s]" % ",".join("%s=%s" % i for i in kw.items()) if kw else ""))
    for a, args in [("ReLU", ()), ("ReLU6", ()), ("ELU", (0.5,)), ("SELU", ()), ("CELU", (0.7,)), ("SiLU", ()),
                    ("Mish", ()), ("Hardswish", ()), ("Hardsigmoid", ()), ("Hardtanh", (-0.3, 0.4)),
                    ("LeakyReLU", (0.1,)), ("Threshold", (0.2, -1.0)), ("RReLU", (0.1, 0.3)), ("Dropout", (0.5,)),
                    ("AlphaDropout", (0.5,)), ("Dropout1d", (0.5,))]:
        add(a, args, dict(inplace=True, _pre_linear=6), ins=[F(4, 6, lo=-3, hi=3)],
            train=a not in ("RReLU", "Dropout", "AlphaDropout", "Dropout1d"), label=a + "[inplace]")
    add("MultiheadAttention", (8, 2), ins=[F(3, 2, 8), F(4, 2, 8), F(4, 2, 8)])
    add("MultiheadAttention", (8, 2), dict(batch_first=True, bias=False), ins=[F(2, 3, 8), F(2, 4, 8), F(2, 4, 8)],
        label="MultiheadAttention[bf,nobias]")
    add("MultiheadAttention", (8, 2), dict(kdim=5, vdim=6, add_bias_kv=True), ins=[F(3, 2, 8), F(4, 2, 5), F(4, 2, 6)],
        label="MultiheadAttention[kdim,vdim,bias_kv]")
    add("MultiheadAttention", (8, 2), dict(batch_first=True),
        ins=[F(2, 3, 8), F(2, 4, 8), F(2, 4, 8), K("key_padding_mask", B(2, 4)), K("attn_mask", B(3, 4)),
             K("average_attn_weights", False)], label="MultiheadAttention[bool masks,per-head]")
    add("MultiheadAttention", (8, 2), {},
        ins=[F(4, 2, 8), F(4, 2, 8), F(4, 2, 8), K("attn_mask", Causal(4)), K("need_weights", False)],
        label="MultiheadAttention[causal float,no weights]")
    add("MultiheadAttention", (8, 2), dict(dropout=0.3),
        ins=[F(4, 8), F(4, 8), F(4, 8), K("attn_mask", Causal(4, True)), K("is_causal", True)], train=False,
        label="MultiheadAttention[unbatched,is_causal,eval]")
    add("MultiheadAttention", (8, 2), dict(add_zero_attn=True, bias=True, add_bias_kv=True),
        ins=[F(3, 2, 8), F(4, 2, 8), F(4, 2, 8), K("key_padding_mask", B(2, 4))],
        label="MultiheadAttention[zero_attn,bias_kv,kpm]")
    add("MultiheadAttention", (8, 2), dict(batch_first=True), train=False,
        ins=[F(2, 3, 8), F(2, 3, 8), F(2, 3, 8), K("key_padding_mask", B(2, 3))],
        label="MultiheadAttention[eval,kpm]")
    # conv
    add("Conv1d", (2, 3, 3), ins=[F(2, 2, 7)])
    add("Conv1d", (4, 4, 3), dict(stride=2, padding=1, dilation=2, groups=2, padding_mode="reflect"),
        ins=[F(2, 4, 9)], label="Conv1d[s2,p1,d2,g2,reflect]")
    add("Conv1d", (2, 3, 3), dict(padding="same", padding_mode="circular"), ins=[F(2, 2, 7)],
        label="Conv1d[same,circular]")
    add("Conv2d", (2, 3, 3), ins=[F(2, 2, 6, 5)])
    add("Conv2d", (4, 6, (3, 2)), dict(stride=(2, 1), padding=(1, 0), groups=2, bias=False, padding_mode="replicate"),
        ins=[F(2, 4, 7, 6)], label="Conv2d[s,p,g2,nobias,replicate]")
    add("Conv3d", (2, 2, 2), dict(padding=1), ins=[F(1, 2, 4, 3, 3)])
    add("ConvTranspose1d", (2, 3, 3), dict(stride=2, output_padding=1), ins=[F(2, 2, 5)])
    add("ConvTranspose2d", (4, 2, 3), dict(stride=2, padding=1, groups=2, dilation=1), ins=[F(1, 4, 4, 3)])
    add("ConvTranspose2d", (2, 3, (2, 3)), dict(bias=False), ins=[F(2, 2, 3, 3)], label="ConvTranspose2d[nobias]")
    add("ConvTranspose3d", (2, 2, 2), dict(stride=2), ins=[F(1, 2, 2, 3, 2)])
    add("Fold", (), dict(output_size=(4, 5), kernel_size=(2, 2)), ins=[F(2, 12, 12)])
    add("Fold", (), dict(output_size=(5, 5), kernel_size=2, stride=2, padding=1, dilation=1), ins=[F(1, 8, 9)],
        label="Fold[s2,p1]")
    add("Unfold", (), dict(kernel_size=(2, 3)), ins=[F(2, 3, 4, 5)])
    add("Unfold", (), dict(kernel_size=2, stride=2, padding=1, dilation=2), ins=[F(1, 2, 5, 5)],
        label="Unfold[s2,p1,d2]")
    # pooling
    add("MaxPool1d", (3,), dict(stride=2, padding=1), ins=[F(2, 3, 8)])
    add("MaxPool1d", (2,), dict(ceil_mode=True, dilation=2), ins=[F(2, 3, 8)], label="MaxPool1d[ceil,dil]")
    add("MaxPool2d", (2,), ins=[F(2, 3, 6, 5)])
    add("MaxPool2d", (3,), dict(stride=2, padding=1, return_indices=True), ins=[F(2, 3, 6, 5)],
        label="MaxPool2d[indices]")
    add("MaxPool2d", (2,), dict(ceil_mode=True), ins=[F(1, 2, 5, 5)], label="MaxPool2d[ceil]")
    add("MaxPool3d", (2,), ins=[F(1, 2, 4, 4, 4)])
    add("AvgPool1d", (3,), dict(stride=2, padding=1, count_include_pad=False), ins=[F(2, 3, 8)])
    add("AvgPool2d", (3,), dict(stride=2, padding=1), ins=[F(2, 3, 6, 5)])
    add("AvgPool2d", (2,), dict(ceil_mode=True, divisor_override=3), ins=[F(1, 2, 5, 5)],
        label="AvgPool2d[ceil,divisor]")
    add("AvgPool3d", (2,), ins=[F(1, 2, 4, 4, 4)])
    add("LPPool1d", (2, 3), dict(stride=2), ins=[Pos(2, 3, 8)])
    add("LPPool2d", (1.5, 2), ins=[Pos(2, 3, 6, 4)])
    add("LPPool3d", (2, 2), ins=[Pos(1, 2, 4, 4, 4)])
    add("AdaptiveAvgPool1d", (3,), ins=[F(2, 3, 7)])
    add("AdaptiveAvgPool2d", ((3, 2),), ins=[F(2, 3, 7, 5)])
    add("AdaptiveAvgPool2d", ((None, 2),), ins=[F(2, 3, 7, 5)], label="AdaptiveAvgPool2d[None]")
    add("AdaptiveAvgPool3d", (2,), ins=[F(1, 2, 5, 4, 3)])
    add("AdaptiveMaxPool1d", (3,), ins=[F(2, 3, 7)])
    add("AdaptiveMaxPool2d", ((3, 2),), dict(return_indices=True), ins=[F(2, 3, 7, 5)])
    add("AdaptiveMaxPool3d", (2,), ins=[F(1, 2, 5, 4, 3)])
    add("FractionalMaxPool2d", (2,), dict(output_size=(3, 3), _random_samples="U:1,2,2"), ins=[F(1, 2, 7, 7)])
    add("FractionalMaxPool2d", ((2, 3),), dict(output_ratio=0.5, return_indices=True, _random_samples="U:2,2,2"),
        ins=[F(2, 2, 8, 9)], label="FractionalMaxPool2d[ratio,indices]")
    add("FractionalMaxPool3d", (2,), dict(output_ratio=0.5, _random_samples="U:1,2,3"), ins=[F(1, 2, 6, 6, 6)])
    # padding
    for n, d in [("ConstantPad", 1), ("ConstantPad", 2), ("ConstantPad", 3), ("ZeroPad", 1), ("ZeroPad", 2),
                 ("ZeroPad", 3), ("ReflectionPad", 1), ("ReflectionPad", 2), ("ReflectionPad", 3),
                 ("ReplicationPad", 1), ("ReplicationPad", 2), ("ReplicationPad", 3), ("CircularPad", 1),
                 ("CircularPad", 2), ("CircularPad", 3)]:
        pad = tuple([1, 2, 2, 0, 1, 1][:2 * d])
        args = (pad, 0.5) if n == "ConstantPad" else (pad,)
        add("%s%dd" % (n, d), args, ins=[F(*((2, 3) + (4,) * d))])
        add("%s%dd" % (n, d), (2, 0.5) if n == "ConstantPad" else (2,), ins=[F(*((2, 3) + (4,) * d))],
            label="%s%dd[int]" % (n, d))
    # normalization
    add("BatchNorm1d", (3,), ins=[F(4, 3)])
    add("BatchNorm1d", (3,), dict(affine=False, momentum=None), ins=[F(4, 3, 5)], label="BatchNorm1d[noaffine,cma]")
    add("BatchNorm2d", (3,), ins=[F(2, 3, 4, 4)])
    add("BatchNorm2d", (3,), ins=[F(2, 3, 4, 4)], train=False, label="BatchNorm2d[eval]")
    add("BatchNorm2d", (3,), dict(track_running_stats=False), ins=[F(2, 3, 4, 4)], label="BatchNorm2d[notrack]")
    add("BatchNorm3d", (2,), ins=[F(2, 2, 3, 3, 3)])
    add("InstanceNorm1d", (3,), ins=[F(2, 3, 6)])
    add("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), ins=[F(2, 3, 4, 4)],
        label="InstanceNorm2d[affine,track]")
    add("InstanceNorm3d", (2,), ins=[F(2, 2, 3, 3, 3)])
    add("LayerNorm", (4,), ins=[F(2, 3, 4)])
    add("LayerNorm", ((3, 4),), dict(elementwise_affine=True, bias=False), ins=[F(2, 3, 4)], label="LayerNorm[2d,nobias]")
    add("GroupNorm", (2, 4), ins=[F(2, 4, 3, 3)])
    add("GroupNorm", (2, 4), dict(affine=False), ins=[F(2, 4, 5)], label="GroupNorm[noaffine]")
    add("RMSNorm", (4,), ins=[F(2, 3, 4)])
    add("RMSNorm", ((3, 4),), dict(eps=1e-3), ins=[F(2, 3, 4)], label="RMSNorm[2d,eps]")
    add("LocalResponseNorm", (3,), ins=[F(2, 5, 3, 3)])
    add("CrossMapLRN2d", (3,), ins=[F(2, 5, 3, 3)])
    # dropout in eval (identity) and p=0 in train
    for d in ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]:
        shp = {"Dropout1d": (2, 3, 4), "Dropout2d": (2, 3, 4, 4), "Dropout3d": (2, 3, 2, 2, 2)}.get(d, (2, 3, 4, 4))
        add(d, (0.5,), ins=[F(*shp)], train=False, label=d + "[eval]")
        add(d, (0.0,), ins=[F(*shp)], label=d + "[p=0]")
    # embedding
    add("Embedding", (10, 3), ins=[I(10, 2, 4)])
    add("Embedding", (10, 3), dict(padding_idx=1, max_norm=1.0), ins=[I(10, 2, 4)], label="Embedding[pad,maxnorm]")
    add("Embedding", (10, 3), dict(scale_grad_by_freq=True, max_norm=0.5, norm_type=1.0), ins=[I(4, 3, 4)],
        label="Embedding[freq,maxnorm,l1]")
    add("EmbeddingBag", (10, 3), dict(mode="mean"), ins=[I(10, 2, 4)])
    # (no scale_grad_by_freq: torch 2.13's CPU embedding_bag counts are off, e.g. indices
    # [[1,2,3,3],[0,0,3,3]] mode="sum" give row 1 a gradient x0.5 and row 3 x4, not x1 and x1)
    add("EmbeddingBag", (10, 3), dict(mode="sum", max_norm=1.0), ins=[I(4, 2, 4)], label="EmbeddingBag[maxnorm]")
    add("EmbeddingBag", (10, 3), dict(mode="mean", max_norm=1.0, padding_idx=2),
        ins=[I(4, 2, 4)], label="EmbeddingBag[maxnorm,pad]")
    add("EmbeddingBag", (10, 3), dict(mode="sum"), ins=[I(10, 7), I(1, 3)], label="EmbeddingBag[sum,offsets]")
    add("EmbeddingBag", (10, 3), dict(mode="max"), ins=[I(10, 2, 4)], label="EmbeddingBag[max]")
    # vision
    add("PixelShuffle", (2,), ins=[F(1, 8, 2, 3)])
    add("PixelUnshuffle", (2,), ins=[F(1, 2, 4, 6)])
    add("ChannelShuffle", (2,), ins=[F(1, 4, 2, 2)])
    add("Upsample", (), dict(scale_factor=2, mode="nearest"), ins=[F(1, 2, 3, 3)])
    add("Upsample", (), dict(size=(5, 4), mode="bilinear", align_corners=True), ins=[F(1, 2, 3, 3)],
        label="Upsample[bilinear,ac]")
    add("Upsample", (), dict(scale_factor=1.5, mode="bilinear"), ins=[F(1, 2, 4, 4)], label="Upsample[bilinear,1.5]")
    add("Upsample", (), dict(scale_factor=2, mode="linear"), ins=[F(1, 2, 4)], label="Upsample[linear]")
    add("Upsample", (), dict(scale_factor=2, mode="bicubic"), ins=[F(1, 2, 3, 3)], label="Upsample[bicubic]")
    add("Upsample", (), dict(scale_factor=2, mode="trilinear"), ins=[F(1, 1, 2, 3, 2)], label="Upsample[trilinear]")
    add("Upsample", (), dict(scale_factor=2, mode="nearest-exact"), ins=[F(1, 2, 3, 3)], label="Upsample[nearest-exact]")
    add("UpsamplingNearest2d", (), dict(scale_factor=2), ins=[F(1, 2, 3, 3)])
    add("UpsamplingBilinear2d", (), dict(size=(4, 5)), ins=[F(1, 2, 3, 3)])
    # distances
    add("CosineSimilarity", (), dict(dim=1), ins=[F(3, 5), F(3, 5)])
    add("PairwiseDistance", (), dict(p=3.0, keepdim=True), ins=[F(3, 5), F(3, 5)])
    add("PairwiseDistance", (), {}, ins=[F(3, 5), F(3, 5)], label="PairwiseDistance[p2]")
    # recurrent
    for r in ["RNN", "LSTM", "GRU"]:
        add(r, (3, 4), ins=[F(5, 2, 3)])
        add(r, (3, 4), dict(num_layers=2, bidirectional=True, batch_first=True), ins=[F(2, 5, 3), F(4, 2, 4)]
            if r != "LSTM" else [F(2, 5, 3)], label=r + "[2l,bi,bf]")
        add(r, (3, 4), dict(bias=False), ins=[F(5, 3)], label=r + "[nobias,unbatched]")
    add("RNN", (3, 4), dict(nonlinearity="relu"), ins=[F(5, 2, 3)], label="RNN[relu]")
    add("LSTM", (3, 4), dict(proj_size=2), ins=[F(5, 2, 3)], label="LSTM[proj]")
    add("RNNCell", (3, 4), ins=[F(2, 3), F(2, 4)])
    add("RNNCell", (3, 4), dict(nonlinearity="relu", bias=False), ins=[F(3)], label="RNNCell[relu,unbatched]")
    add("LSTMCell", (3, 4), ins=[F(2, 3)])
    add("GRUCell", (3, 4), ins=[F(2, 3), F(2, 4)])
    # transformer (dropout=0 so train mode is deterministic)
    add("TransformerEncoderLayer", (8, 2), dict(dim_feedforward=16, dropout=0.0), ins=[F(3, 2, 8)])
    add("TransformerEncoderLayer", (8, 2), dict(dim_feedforward=16, dropout=0.0, norm_first=True, batch_first=True,
                                                activation="gelu"), ins=[F(2, 3, 8)],
        label="TransformerEncoderLayer[nf,bf,gelu]")
    add("TransformerDecoderLayer", (8, 2), dict(dim_feedforward=16, dropout=0.0), ins=[F(3, 2, 8), F(4, 2, 8)])
    add("TransformerDecoderLayer", (8, 2), dict(dim_feedforward=16, dropout=0.0, norm_first=True, bias=False),
        ins=[F(3, 2, 8), F(4, 2, 8)], label="TransformerDecoderLayer[nf,nobias]")
    add("Transformer", (), dict(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16,
                                dropout=0.0), ins=[F(4, 2, 8), F(3, 2, 8)])
    add("TransformerEncoderLayer", (8, 2), dict(dim_feedforward=16, dropout=0.5), ins=[F(3, 2, 8)], train=False,
        label="TransformerEncoderLayer[eval]")
    add("TransformerEncoderLayer", (8, 2), dict(dim_feedforward=16, dropout=0.0, batch_first=True),
        ins=[F(2, 4, 8), K("src_mask", Causal(4)), K("src_key_padding_mask", B(2, 4))],
        label="TransformerEncoderLayer[masks]")
    add("TransformerEncoderLayer", (8, 2), dict(dim_feedforward=16, dropout=0.5, batch_first=True), train=False,
        ins=[F(2, 4, 8), K("src_key_padding_mask", B(2, 4))], label="TransformerEncoderLayer[eval,kpm]")
    add("TransformerDecoderLayer", (8, 2), dict(dim_feedforward=16, dropout=0.0),
        ins=[F(3, 2, 8), F(4, 2, 8), K("tgt_mask", Causal(3)), K("memory_key_padding_mask", B(2, 4)),
             K("tgt_is_causal", True)], label="TransformerDecoderLayer[masks]")
    add("Transformer", (), dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16,
                                dropout=0.0, batch_first=True, norm_first=True),
        ins=[F(2, 4, 8), F(2, 3, 8), K("tgt_mask", Causal(3)), K("src_key_padding_mask", B(2, 4)),
             K("memory_key_padding_mask", B(2, 4))], label="Transformer[masks,nf,bf]")
    add("LSTM", (3, 4), dict(num_layers=2, dropout=0.0), ins=[F(5, 2, 3), K("hx", None)], label="LSTM[hx=None]")
    add("GRU", (3, 4), dict(batch_first=True), ins=[F(2, 5, 3), F(1, 2, 4)], label="GRU[h0,bf]")
    add("Conv2d", (3, 2, 3), dict(padding=1), ins=[F(3, 5, 5)], label="Conv2d[unbatched]")
    add("MaxPool1d", (2,), ins=[F(3, 6)], label="MaxPool1d[unbatched]")
    add("AdaptiveAvgPool2d", (1,), ins=[F(3, 5, 5)], label="AdaptiveAvgPool2d[unbatched]")
    add("BatchNorm1d", (3,), dict(momentum=0.5, eps=1e-3), ins=[F(6, 3)], label="BatchNorm1d[mom,eps]")
    add("LayerNorm", (4,), dict(elementwise_affine=False), ins=[F(2, 4)], label="LayerNorm[noaffine]")
    # losses
    R = ("mean", "sum", "none")
    for red in R:
        add("L1Loss", (), dict(reduction=red), ins=[F(3, 4), C(3, 4)])
        add("MSELoss", (), dict(reduction=red), ins=[F(3, 4), C(3, 4)])
        add("SmoothL1Loss", (), dict(reduction=red, beta=0.5), ins=[F(3, 4), C(3, 4)])
        add("HuberLoss", (), dict(reduction=red, delta=0.5), ins=[F(3, 4), C(3, 4)])
        add("BCELoss", (), dict(reduction=red), ins=[P(3, 4), Pc(3, 4)])
        add("BCEWithLogitsLoss", (), dict(reduction=red), ins=[F(3, 4), Pc(3, 4)])
        add("KLDivLoss", (), dict(reduction=red if red != "mean" else "batchmean"), ins=[F(3, 4), Pc(3, 4)])
        add("NLLLoss", (), dict(reduction=red), ins=[F(3, 5), I(5, 3)])
        add("CrossEntropyLoss", (), dict(reduction=red), ins=[F(3, 5), I(5, 3)])
        add("CrossEntropyLoss", (), dict(reduction=red, label_smoothing=0.1), ins=[F(3, 5, 2), I(5, 3, 2)],
            label="CrossEntropyLoss[ls,2d]")
        add("MarginRankingLoss", (), dict(reduction=red, margin=0.2), ins=[F(5), F(5), S(5)])
        add("HingeEmbeddingLoss", (), dict(reduction=red, margin=0.5), ins=[F(3, 4), S(3, 4)])
        add("SoftMarginLoss", (), dict(reduction=red), ins=[F(3, 4), S(3, 4)])
        add("MultiLabelSoftMarginLoss", (), dict(reduction=red), ins=[F(3, 4), I(2, 3, 4)])
        add("MultiLabelMarginLoss", (), dict(reduction=red), ins=[F(3, 4), I(4, 3, 4, lo=-1)])
        add("MultiMarginLoss", (), dict(reduction=red), ins=[F(3, 4), I(4, 3)])
        add("CosineEmbeddingLoss", (), dict(reduction=red, margin=0.1), ins=[F(3, 4), F(3, 4), S(3)])
        add("GaussianNLLLoss", (), dict(reduction=red), ins=[F(3, 4), C(3, 4), Pos(3, 4)])
        add("PoissonNLLLoss", (), dict(reduction=red), ins=[F(3, 4), Pos(3, 4)])
        add("TripletMarginLoss", (), dict(reduction=red, margin=0.5, p=1.0, swap=True), ins=[F(3, 4), F(3, 4), F(3, 4)])
        add("TripletMarginWithDistanceLoss", (), dict(reduction=red, margin=0.5), ins=[F(3, 4), F(3, 4), F(3, 4)])
    add("NLLLoss", (), dict(ignore_index=2), ins=[F(6, 5), I(5, 6)], label="NLLLoss[ignore]")
    add("NLLLoss", (), dict(weight="W5"), ins=[F(6, 5, 2), I(5, 6, 2)], label="NLLLoss[weight,2d]")
    add("CrossEntropyLoss", (), dict(weight="W5", ignore_index=1, reduction="mean"), ins=[F(6, 5), I(5, 6)],
        label="CrossEntropyLoss[weight,ignore]")
    add("CrossEntropyLoss", (), dict(weight="W5", label_smoothing=0.2), ins=[F(6, 5), I(5, 6)],
        label="CrossEntropyLoss[weight,ls]")
    add("CrossEntropyLoss", (), {}, ins=[F(4, 5), P(4, 5)], label="CrossEntropyLoss[probs]")
    add("BCELoss", (), dict(weight="W4"), ins=[P(3, 4), Pc(3, 4)], label="BCELoss[weight]")
    add("BCEWithLogitsLoss", (), dict(weight="W4", pos_weight="W4"), ins=[F(3, 4), Pc(3, 4)],
        label="BCEWithLogitsLoss[weight,pos_weight]")
    add("KLDivLoss", (), dict(log_target=True, reduction="sum"), ins=[F(3, 4), C(3, 4)], label="KLDivLoss[log_target]")
    add("KLDivLoss", (), dict(reduction="mean"), ins=[F(3, 4), Pc(3, 4)], label="KLDivLoss[mean]")
    add("MultiMarginLoss", (), dict(p=2, margin=0.7, weight="W4"), ins=[F(3, 4), I(4, 3)], label="MultiMarginLoss[p2,w]")
    add("GaussianNLLLoss", (), dict(full=True, eps=1e-3), ins=[F(3, 4), C(3, 4), Pos(3, 1)], label="GaussianNLLLoss[full]")
    add("PoissonNLLLoss", (), dict(log_input=False, full=True), ins=[Pos(3, 4), Pos(3, 4)], label="PoissonNLLLoss[full]")
    add("CTCLoss", (), dict(reduction="mean"), ins=[F(6, 2, 4), I(4, 2, 3, lo=1), I(7, 2, lo=6), I(4, 2, lo=1)])
    add("CTCLoss", (), dict(reduction="sum", zero_infinity=True), ins=[F(6, 2, 4), I(4, 2, 3, lo=1), I(7, 2, lo=6),
                                                                      I(4, 2, lo=1)], label="CTCLoss[sum]")
    add("AdaptiveLogSoftmaxWithLoss", (6, 10, [4, 8]), ins=[F(5, 6), I(10, 5)])
    add("AdaptiveLogSoftmaxWithLoss", (8, 12, [3, 7]), dict(div_value=2.0, head_bias=True), ins=[F(6, 8), I(12, 6)],
        label="AdaptiveLogSoftmaxWithLoss[div2,head_bias]")
    add("LinearCrossEntropyLoss", (4, 5), ins=[F(3, 4), I(5, 3)])
    # containers
    add("Sequential", (), {}, ins=[F(2, 4)], label="Sequential[Linear,ReLU,Linear]")
    return cs


def build(L, case):
    nn = L.nn
    if case["label"].startswith("Sequential"):
        m = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
        return m.double() if DOUBLE else m
    cls = getattr(nn, case["cls"])
    kw = {}
    pre = case["kw"].get("_pre_linear")
    for k, v in case["kw"].items():
        if k == "_pre_linear":
            continue
        if isinstance(v, str) and v[:1] == "W" and v[1:].isdigit():
            n = int(v[1:])
            v = L.tensor(np.linspace(0.5, 1.5, n).astype(np.float64 if DOUBLE else np.float32))
        elif isinstance(v, str) and v[:2] == "U:":       # fixed uniform samples (fractional pooling)
            shape = tuple(int(d) for d in v[2:].split(","))
            v = L.tensor(np.random.default_rng(5).uniform(0, 1, shape).astype(np.float32))
        kw[k] = v
    m = cls(*case["args"], **kw)
    if pre:         # in-place layers: after a Linear, so that they write into a non-leaf
        m = nn.Sequential(nn.Linear(pre, pre), m)
    return m.double() if DOUBLE else m


def to_np(x):
    return np.array(x.detach().cpu().numpy()) if x is not None else None


def flat(o):
    if isinstance(o, (tuple, list)):
        r = []
        for e in o:
            r += flat(e)
        return r
    if hasattr(o, "output") and hasattr(o, "loss"):       # AdaptiveLogSoftmaxWithLoss' named tuple
        return flat(tuple(o))
    return [o]


def run_lib(L, mod, ins, grad, cls):
    xs, kws = [], {}
    for kind, a in ins:
        if kind == "kw":
            name, (k2, v) = a
            kws[name] = v if k2 == "const" else L.tensor(v.copy(), requires_grad=(k2 == "f" and grad))
        elif kind == "f":
            xs.append(L.tensor(a.copy(), requires_grad=grad))
        else:
            xs.append(L.tensor(a.copy()))
    if cls == "CTCLoss":                                    # log_probs
        xs[0] = xs[0].log_softmax(2)
    if cls in ("NLLLoss", "KLDivLoss"):                     # log-probabilities
        xs[0] = xs[0].log_softmax(1)
    out = mod(*xs, **kws)
    outs = flat(out)
    rng = np.random.default_rng(7)
    total = None
    vals = []
    for o in outs:
        if o is None:
            vals.append(None)
            continue
        vals.append(to_np(o))
        if grad and o.dtype in (L.float32, L.float64) and o.requires_grad:
            w = L.tensor(rng.uniform(0.5, 1.5, tuple(o.shape)).astype(np.float64 if DOUBLE else np.float32))
            t = (o * w).sum()
            total = t if total is None else total + t
    gx, gp = [], {}
    if total is not None:
        total.backward()
        gx = [to_np(x.grad) for x in xs if getattr(x, "requires_grad", False) and x.is_leaf]
        gp = {k: to_np(p.grad) for k, p in mod.named_parameters()}
    bufs = {k: to_np(b) for k, b in mod.named_buffers()}
    bufs.update({"param:" + k: to_np(p) for k, p in mod.named_parameters()})     # max_norm renorms in place
    return vals, gx, gp, bufs


def compare(what, a, b, tag):
    if len(a) != len(b):
        return "%s: %s count %d vs torch %d" % (tag, what, len(b), len(a))
    for i, (x, y) in enumerate(zip(a, b)):
        if x is None or y is None:
            if (x is None) != (y is None):
                return "%s: %s[%d] None mismatch (torch %s, st %s)" % (tag, what, i, x is None, y is None)
            continue
        x = np.asarray(x)
        y = np.asarray(y)
        if x.shape != y.shape:
            return "%s: %s[%d] shape %s vs torch %s" % (tag, what, i, y.shape, x.shape)
        if x.dtype != y.dtype:
            return "%s: %s[%d] dtype %s vs torch %s" % (tag, what, i, y.dtype, x.dtype)
        if not np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=RTOL, atol=ATOL, equal_nan=True):
            d = np.nanmax(np.abs(x.astype(np.float64) - y.astype(np.float64))) if x.size else 0
            return "%s: %s[%d] values differ (max abs %.3g)" % (tag, what, i, d)
    return None


def run_nn_case(case, do_compile):
    import torch
    import symtrace as st
    if not hasattr(torch.nn, case["cls"]) and not case["label"].startswith("Sequential"):
        return "skip", "not in torch"
    if not hasattr(st.nn, case["cls"]) and not case["label"].startswith("Sequential"):
        return "missing", "st.nn.%s" % case["cls"]
    torch.manual_seed(0)
    tm = build(torch, case)
    try:
        sm = build(st, case)
    except Exception as e:
        return "crash", "ctor: %s: %s" % (type(e).__name__, str(e)[:150])
    tk, sk = list(tm.state_dict().keys()), list(sm.state_dict().keys())
    if tk != sk:
        return "keys", "state_dict keys %s vs torch %s" % (sk, tk)
    state = {k: v.detach().clone() for k, v in tm.state_dict().items()}
    try:
        sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in state.items()})
    except Exception as e:
        return "crash", "load_state_dict: %s: %s" % (type(e).__name__, str(e)[:150])
    if not case["train"]:
        tm.eval()
        sm.eval()
    if str(tm) != str(sm):
        return "repr", "repr %r vs torch %r" % (str(sm)[:120], str(tm)[:120])
    ins = make_inputs(case["ins"], 1)
    grad = case["grad"]
    want = run_lib(torch, tm, ins, grad, case["cls"])
    modes = [("eager", lambda m: m, 1)]
    if do_compile:
        modes.append(("compiled", st.compile, 1))
        modes.append(("compiled-2nd-call", st.compile, 2))
        spec2 = resized(case["ins"]) if case["cls"] not in ("CTCLoss", "EmbeddingBag") else None
        if spec2 is not None:
            ins2 = make_inputs(spec2, 2)
            tm.load_state_dict(state)
            tm.zero_grad(set_to_none=True)
            try:
                want2 = run_lib(torch, tm, ins2, grad, case["cls"])
                modes.append(("compiled-resized", st.compile, 3))
            except Exception:
                pass            # the first dim is not a batch dim for this module (torch refuses)
    for mode, wrap, calls in modes:
        sm2 = build(st, case)
        sm2.load_state_dict({k: st.tensor(v.numpy()) for k, v in state.items()})
        if not case["train"]:
            sm2.eval()
        try:
            wrapped = wrap(sm2)
            for c in range(calls):
                # the 2nd call runs the cached graph: from the same weights and buffers again;
                # "resized": calls 2 and 3 have a first dim one larger (a new or a dynamic graph)
                sm2.load_state_dict({k: st.tensor(v.numpy()) for k, v in state.items()})
                sm2.zero_grad(set_to_none=True)
                got = run_lib(st, wrapped, ins2 if mode == "compiled-resized" and c else ins, grad, case["cls"])
            if mode == "compiled-resized":
                want = want2
        except Exception as e:
            tb = traceback.extract_tb(e.__traceback__)[-1]
            return "crash", "%s: %s: %s (%s:%d)" % (mode, type(e).__name__, str(e)[:160].replace("\n", " "),
                                                    os.path.basename(tb.filename), tb.lineno)
        for what, a, b in (("out", want[0], got[0]), ("grad_in", want[1], got[1])):
            m = compare(what, a, b, mode)
            if m:
                return "mismatch", m
        for what, a, b in (("grad_param", want[2], got[2]), ("buffer", want[3], got[3])):
            if sorted(a) != sorted(b):
                return "keys", "%s: %s names %s vs torch %s" % (mode, what, sorted(b), sorted(a))
            m = compare(what, [a[k] for k in sorted(a)], [b[k] for k in sorted(a)], mode)
            if m:
                return "mismatch", m + " " + str(sorted(a))
    return "ok", ""


# ---------------------------------------------------------------- optimizers
def optim_cases():
    cs = []

    def add(name, kw, label=None):
        cs.append(dict(kind="optim", cls=name, kw=kw, label=label or "%s%s" % (name, kw)))
    add("SGD", dict(lr=0.1))
    add("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01))
    add("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True))
    add("Adam", dict(lr=0.01))
    add("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True))
    add("Adam", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6))
    add("AdamW", dict(lr=0.01))
    add("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True))
    add("Adamax", dict(lr=0.01, weight_decay=0.1))
    add("Adamax", dict(lr=0.01, maximize=True))
    add("NAdam", dict(lr=0.01))
    add("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.005))
    add("RAdam", dict(lr=0.01))
    add("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True))
    add("Adagrad", dict(lr=0.1))
    add("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1, maximize=True))
    add("Adadelta", dict(lr=1.0))
    add("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True))
    add("RMSprop", dict(lr=0.01))
    add("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1))
    add("RMSprop", dict(lr=0.01, maximize=True, alpha=0.9))
    add("Rprop", dict(lr=0.01))
    add("Rprop", dict(lr=0.01, etas=(0.4, 1.1), step_sizes=(1e-4, 1.0), maximize=True))
    add("ASGD", dict(lr=0.01))
    add("ASGD", dict(lr=0.01, lambd=1e-3, alpha=0.5, t0=2, weight_decay=0.1, maximize=True))
    add("Adafactor", dict(lr=0.01))
    add("Adafactor", dict(lr=0.01, weight_decay=0.1, maximize=True, beta2_decay=-0.5))
    add("LBFGS", dict(lr=0.5))
    add("LBFGS", dict(lr=1.0, line_search_fn="strong_wolfe", history_size=3))
    add("SparseAdam", dict(lr=0.01))
    add("Muon", dict(lr=0.01))
    for s, kw in [("StepLR", dict(step_size=2, gamma=0.5)), ("MultiStepLR", dict(milestones=[1, 3], gamma=0.3)),
                  ("ConstantLR", dict(factor=0.5, total_iters=3)), ("LinearLR", dict(start_factor=0.2, total_iters=4)),
                  ("ExponentialLR", dict(gamma=0.9)), ("PolynomialLR", dict(total_iters=4, power=2.0)),
                  ("CosineAnnealingLR", dict(T_max=3, eta_min=0.01)),
                  ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=2, eta_min=0.001)),
                  ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, mode="triangular2")),
                  ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, mode="exp_range", gamma=0.9)),
                  ("OneCycleLR", dict(max_lr=0.1, total_steps=6)),
                  ("OneCycleLR", dict(max_lr=0.1, total_steps=6, anneal_strategy="linear", three_phase=True)),
                  ("LambdaLR", dict(lr_lambda="lam")), ("MultiplicativeLR", dict(lr_lambda="lam")),
                  ("ReduceLROnPlateau", dict(patience=0, factor=0.5)),
                  ("ReduceLROnPlateau", dict(mode="max", patience=1, cooldown=1, threshold=0.05,
                                             threshold_mode="abs", min_lr=0.03, factor=0.3)),
                  ("OneCycleLR", dict(max_lr=[0.1, 0.2], total_steps=6, base_momentum=0.8, max_momentum=0.95,
                                      div_factor=10.0, final_div_factor=100.0, pct_start=0.4, opt="adam2")),
                  ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=1,
                                    base_momentum=0.7, max_momentum=0.9)),
                  ("LinearLR", dict(start_factor=1.0, end_factor=0.1, total_iters=3, opt="adam2")),
                  ("CosineAnnealingWarmRestarts", dict(T_0=3, eta_min=0.0, opt="adam2")),
                  ("PolynomialLR", dict(total_iters=2, power=0.5, opt="adam2")),
                  ("MultiStepLR", dict(milestones=[2, 2, 4], gamma=0.5)),
                  ("SequentialLR", dict(milestones=[2])), ("ChainedScheduler", {})]:
        cs.append(dict(kind="sched", cls=s, kw=kw, label="%s%s" % (s, {k: v for k, v in kw.items()
                                                                        if k != "lr_lambda"})[:60]))
    return cs


def _norm_state(sd):
    """a state_dict of nested dicts/lists/tensors -> numpy / python values"""
    if isinstance(sd, dict):
        return {k: _norm_state(v) for k, v in sd.items()}
    if isinstance(sd, (list, tuple)):
        return [_norm_state(v) for v in sd]
    if hasattr(sd, "detach"):
        return np.array(sd.detach().cpu().numpy(), dtype=np.float64)
    return sd


def _cmp_state(a, b, path="state"):
    if isinstance(a, dict):
        if not isinstance(b, dict):
            return "%s: dict vs %s" % (path, type(b).__name__)
        ka, kb = sorted(map(str, a)), sorted(map(str, b))
        if ka != kb:
            return "%s keys %s vs torch %s" % (path, kb, ka)
        for k in a:
            kk = k if k in b else [x for x in b if str(x) == str(k)][0]
            m = _cmp_state(a[k], b[kk], "%s.%s" % (path, k))
            if m:
                return m
        return None
    if isinstance(a, list):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return "%s: list %r vs torch %r" % (path, b, a)
        for i, (x, y) in enumerate(zip(a, b)):
            m = _cmp_state(x, y, "%s[%d]" % (path, i))
            if m:
                return m
        return None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if x.shape != y.shape:
            return "%s: shape %s vs torch %s" % (path, y.shape, x.shape)
        if not np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True):
            return "%s: values %s vs torch %s" % (path, np.ravel(y)[:3], np.ravel(x)[:3])
        return None
    if isinstance(a, float) or isinstance(b, float):
        try:
            if not math.isclose(float(a), float(b), rel_tol=1e-5, abs_tol=1e-8):
                return "%s: %r vs torch %r" % (path, b, a)
        except (TypeError, ValueError):
            return "%s: %r vs torch %r" % (path, b, a)
        return None
    if callable(a) and callable(b):
        return None
    if a != b:
        return "%s: %r vs torch %r" % (path, b, a)
    return None


def run_optim_case(case, do_compile):
    import torch
    import symtrace as st
    name = case["cls"]
    if case["kind"] == "optim":
        if not hasattr(torch.optim, name):
            return "skip", "not in torch"
        if not hasattr(st.optim, name):
            return "missing", "st.optim.%s" % name
    else:
        if not hasattr(st.optim.lr_scheduler, name):
            return "missing", "st.optim.lr_scheduler.%s" % name
    if name == "SparseAdam" and not hasattr(st.Tensor, "to_sparse"):
        return "n/a", "symtrace has no sparse tensors (SparseAdam raises torch's dense-gradient error)"
    rng = np.random.default_rng(3)
    shapes = [(3, 4), (4,)] if name != "Muon" else [(3, 4)]
    p0 = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
    grads = [[rng.uniform(-1, 1, s).astype(np.float32) for s in shapes] for _ in range(8)]
    target = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]

    def make_opt(L, ps, grouped):
        kw = dict(case["kw"])
        if case["kind"] == "optim":
            extra = {} if name in ("LBFGS", "SparseAdam", "Muon", "Adafactor") else dict(foreach=False)
            if grouped and name != "LBFGS":
                lr = kw.pop("lr")
                groups = [{"params": ps[:1]}, {"params": ps[1:], "lr": lr * 0.5}]
                return getattr(L.optim, name)(groups, lr=lr, **kw, **extra), None
            return getattr(L.optim, name)(ps, **kw, **extra), None
        if kw.pop("opt", None) == "adam2":          # two groups, betas (OneCycleLR cycles beta1)
            opt = L.optim.Adam([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.05}], lr=0.1, foreach=False)
        else:
            opt = L.optim.SGD(ps, lr=0.1, momentum=0.9)
        S = L.optim.lr_scheduler
        if kw.get("lr_lambda") == "lam":
            kw["lr_lambda"] = (lambda e: 0.9 ** e) if name == "MultiplicativeLR" else (lambda e: 1.0 / (e + 1))
        if name == "SequentialLR":
            sched = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=2),
                                         S.ExponentialLR(opt, gamma=0.8)], milestones=[2])
        elif name == "ChainedScheduler":
            sched = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2),
                                        S.ExponentialLR(opt, gamma=0.8)])
        else:
            sched = getattr(S, name)(opt, **kw)
        return opt, sched

    def go(L, mode):
        ps = [L.nn.Parameter(L.tensor(a.copy())) for a in p0]
        # a parameter that never gets a gradient: every optimizer must leave it (and its state) alone
        ps.append(L.nn.Parameter(L.tensor(np.ones((2, 2), np.float32))))
        opt, sched = make_opt(L, ps, mode == "groups")
        step = opt.step
        if mode == "compiled" and L is not torch and name != "LBFGS":
            step = st.compile(opt.step)
        hist = []
        for i in range(5 if name != "ReduceLROnPlateau" else 8):
            if mode == "resume" and i == 3 and L is not torch:
                # a checkpoint round trip: fresh optimizer (and scheduler) loading the state dicts
                osd = opt.state_dict()
                ssd = sched.state_dict() if sched is not None else None
                opt, sched = make_opt(L, ps, False)
                opt.load_state_dict(osd)
                if sched is not None:
                    sched.load_state_dict(ssd)
                step = opt.step
            if mode == "from-torch" and i == 3:
                # a torch checkpoint (tensors via numpy) loaded into this optimizer
                if L is torch:
                    # converted now: torch's state_dict refers to the tensors later steps update
                    torch_ckpt["opt"] = _to_st(opt.state_dict())
                    torch_ckpt["sched"] = _to_st(sched.state_dict()) if sched is not None else None
                else:
                    opt, sched = make_opt(L, ps, False)
                    opt.load_state_dict(torch_ckpt["opt"])
                    if sched is not None:
                        sched.load_state_dict(torch_ckpt["sched"])
                    step = opt.step
            if name == "LBFGS":
                tg = [L.tensor(t) for t in target]

                def closure():
                    opt.zero_grad()
                    loss = sum(((p - t) ** 2 * (1.0 + j)).sum() for j, (p, t) in enumerate(zip(ps, tg)))
                    loss.backward()
                    return loss
                opt.step(closure)
            else:
                for p, g in zip(ps, grads[i]):
                    p.grad = L.tensor(g.copy())
                    if name == "SparseAdam":
                        p.grad = p.grad.to_sparse()
                step()
            if sched is not None:
                if name == "ReduceLROnPlateau":
                    sched.step([1.0, 0.9, 0.95, 0.97, 0.99, 0.9, 1.2, 1.2][i])
                else:
                    sched.step()
            sd = opt.state_dict()
            rec = dict(params=[to_np(p) for p in ps], lrs=[g["lr"] for g in opt.param_groups],
                       state=_norm_state(sd["state"]),
                       groups=[{k: _norm_state(v) for k, v in g.items()} for g in sd["param_groups"]])
            if sched is not None:
                ssd = sched.state_dict()
                rec["sched"] = {k: _norm_state(v) for k, v in ssd.items()
                                if k not in ("_schedulers", "lr_lambdas", "_scale_fn_ref", "_scale_fn_custom",
                                             "scale_fn", "optimizer")}
                rec["last_lr"] = list(sched.get_last_lr()) if hasattr(sched, "get_last_lr") else None
            hist.append(rec)
        return hist
    torch_ckpt = {}

    def _to_st(v):
        if isinstance(v, dict):
            return {k: _to_st(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(_to_st(x) for x in v)
        if isinstance(v, torch.Tensor):
            return st.tensor(v.detach().numpy().copy())
        return v
    modes = ["eager", "groups", "resume", "from-torch"] + (["compiled"] if do_compile else [])
    for mode in modes:
        if mode == "groups" and case["kind"] != "optim":
            continue
        want = go(torch, "eager" if mode in ("resume", "compiled") else mode)
        try:
            got = go(st, mode)
        except Exception as e:
            tb = traceback.extract_tb(e.__traceback__)[-1]
            return "crash", "%s: %s: %s (%s:%d)" % (mode, type(e).__name__, str(e)[:160],
                                                    os.path.basename(tb.filename), tb.lineno)
        for i, (a, b) in enumerate(zip(want, got)):
            m = _cmp_state(a, b, "%s step%d" % (mode, i + 1))
            if m:
                kind = "keys" if " keys " in m else "mismatch"
                return kind, m
    return "ok", ""
# ---------------------------------------------------------------- bad inputs
BAD_VARIANTS = ("rank-", "rank+", "last+1", "int", "f64", "empty")


def bad_spec(spec, variant):
    """spec with its first tensor input broken as variant says, or None"""
    spec = list(spec)
    for j, (kind, shape, lo, hi) in enumerate(spec):
        if kind in ("f", "c"):
            break
    else:
        return None
    if variant == "rank-":
        if len(shape) < 2:
            return None
        spec[j] = (kind, shape[1:], lo, hi)
    elif variant == "rank+":
        spec[j] = (kind, (2,) + tuple(shape), lo, hi)
    elif variant == "last+1":
        spec[j] = (kind, tuple(shape[:-1]) + (shape[-1] + 1,), lo, hi)
    elif variant == "int":
        spec[j] = ("i", shape, 0, 3)
    elif variant == "f64":
        spec[j] = ("d", shape, lo, hi)
    elif variant == "empty":
        r = resized(spec)
        if r is None:
            return None
        spec = [(k, (0,) + tuple(sh[1:]), a, b) if k != "kw" else (k, sh, a, b) for k, sh, a, b in spec]
    return spec


def run_bad_case(case, do_compile):
    """torch and symtrace on a broken input: both raise, or both run and agree."""
    import torch
    import symtrace as st
    spec = bad_spec(case["ins"], case["variant"])
    if spec is None or not hasattr(st.nn, case["cls"]) and not case["label"].startswith("Sequential"):
        return "skip", ""
    torch.manual_seed(0)
    tm = build(torch, case)
    state = {k: v.detach().clone() for k, v in tm.state_dict().items()}
    ins = make_inputs(spec, 1)
    if not case["train"]:
        tm.eval()
    try:
        want = run_lib(torch, tm, ins, case["grad"], case["cls"])
        terr = ttype = None
    except Exception as e:
        ttype = type(e).__name__
        terr = "%s: %s" % (ttype, str(e)[:100].replace("\n", " "))
    modes = [("eager", lambda m: m)] + ([("compiled", st.compile)] if do_compile else [])
    for mode, wrap in modes:
        sm = build(st, case)
        sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in state.items()})
        if not case["train"]:
            sm.eval()
        try:
            got = run_lib(st, wrap(sm), ins, case["grad"], case["cls"])
        except Exception as e:
            if terr is None:
                return "st-raises", "%s: %s: %s" % (mode, type(e).__name__, str(e)[:140].replace("\n", " "))
            if type(e).__name__ != ttype and type(e).__name__ in (
                    "AssertionError", "SystemError", "IndexError", "KeyError", "AttributeError",
                    "UnboundLocalError", "ZeroDivisionError", "TypeError", "ValueError"):
                return "bad-error", "%s: %s: %s (torch: %s)" % (mode, type(e).__name__, str(e)[:100], terr)
            continue
        if terr is not None:
            return "st-accepts", "%s: torch raises %s" % (mode, terr)
        for what, a, b in (("out", want[0], got[0]), ("grad_in", want[1], got[1])):
            m = compare(what, a, b, mode)
            if m:
                return "mismatch", m
    return "ok", ""


# ---------------------------------------------------------------- driver
def all_cases():
    if os.environ.get("HUNT_BAD") == "1":
        return [dict(c, kind="bad", variant=v, label="%s<%s>" % (c["label"], v))
                for c in nn_cases() for v in BAD_VARIANTS]
    return [dict(c, kind="nn") for c in nn_cases()] + optim_cases()


def child(start, k, do_compile):
    import warnings
    warnings.simplefilter("ignore")
    cases = all_cases()
    for i in range(start, len(cases)):
        c = cases[i]
        if k and k not in c["label"]:
            continue
        print(json.dumps(dict(i=i, begin=c["label"])), flush=True)
        try:
            if c["kind"] == "nn":
                res, msg = run_nn_case(c, do_compile)
            elif c["kind"] == "bad":
                res, msg = run_bad_case(c, do_compile)
            else:
                res, msg = run_optim_case(c, do_compile)
        except Exception as e:
            res, msg = "hunt-error", "%s: %s" % (type(e).__name__, str(e)[:200])
        print(json.dumps(dict(i=i, label=c["label"], res=res, msg=msg)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("-v", action="store_true", help="print the ok cases too")
    ap.add_argument("--double", action="store_true", help="nn cases in float64")
    ap.add_argument("--bad", action="store_true", help="nn cases on broken inputs (%s): both raise, or both "
                    "run and agree" % ", ".join(BAD_VARIANTS))
    ap.add_argument("--child", type=int, default=None)
    a = ap.parse_args()
    if a.double:
        os.environ["HUNT_DOUBLE"] = "1"
    if a.bad:
        os.environ["HUNT_BAD"] = "1"
    if a.child is not None:
        return child(a.child, a.k, not a.no_compile)
    n = len(all_cases())
    start, results = 0, []
    while start < n:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", str(start), "-k", a.k]
        if a.no_compile:
            cmd.append("--no-compile")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
        cur = None
        for line in p.stdout:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "begin" in r:
                cur = r
            else:
                cur = None
                results.append(r)
                if a.v or r["res"] not in ("ok", "skip"):
                    print("%-48s %-9s %s" % (r["label"][:48], r["res"], r["msg"]), flush=True)
        rc = p.wait()
        if cur is None:
            break
        r = dict(i=cur["i"], label=cur["begin"], res="signal", msg="child exited with %d" % rc)
        results.append(r)
        print("%-48s %-9s %s" % (r["label"][:48], r["res"], r["msg"]), flush=True)
        start = cur["i"] + 1
    counts = {}
    for r in results:
        counts[r["res"]] = counts.get(r["res"], 0) + 1
    classes = {}
    for r in results:
        cls = r["label"].split("[")[0].split("{")[0]
        prev = classes.get(cls, "ok")
        classes[cls] = prev if prev != "ok" else r["res"]
    ccount = {}
    for v in classes.values():
        ccount[v] = ccount.get(v, 0) + 1
    print("\ncases: %d  %s" % (len(results), "  ".join("%s=%d" % kv for kv in sorted(counts.items()))))
    print("classes: %d  %s" % (len(classes), "  ".join("%s=%d" % kv for kv in sorted(ccount.items()))))


if __name__ == "__main__":
    main()
