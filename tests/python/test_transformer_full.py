# The transformer family against torch.nn (float64, torch's weights loaded from its
# state_dict through numpy, dropout 0): TransformerEncoderLayer, TransformerEncoder,
# TransformerDecoderLayer, TransformerDecoder and Transformer, post-/pre-norm,
# batch_first both ways, relu / gelu / callable activations, causal masks (from
# generate_square_subsequent_mask, detected or hinted with is_causal), bool and float
# attention and key-padding masks, unbatched inputs, final norms, custom
# encoder/decoder; outputs and the gradients of the inputs and of every parameter.
# Also: torch's API (constructor and forward signatures, state_dict keys and shapes,
# xavier_uniform_ initialisation), the errors torch raises for mismatched masks and
# inputs, queries whose keys are all masked out, torch's nested-tensor inference
# path (zeros at padded positions), and a seq2seq training step under
# symtrace.compile against eager (this last part needs no torch).
import inspect
import re
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F

try:
    import torch
except ImportError:  # the 3.12 venv: the torch comparisons skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
# torch's warnings (symtrace's alike): enable_nested_tensor=True with batch_first=False; a
# bool padding mask with a float attention mask; torch's note on its nested tensors
pytestmark = [pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning"),
              pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning"),
              pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")]

D, H, FF, N, S, T = 8, 2, 16, 2, 5, 4


def lib_nn(lib):
    return torch.nn if lib is torch else nn


def activation(lib, spec):
    """The activation named by spec in lib: a string, lib's F.silu, or lib's GELU('tanh')."""
    if spec == "silu":
        return lib_nn(lib).functional.silu
    if spec == "gelu_tanh":
        return lib_nn(lib).GELU(approximate="tanh")
    return spec


def build(lib, kind, nl=1, norm=False, act="relu", **kw):
    """One module of the family in lib (torch or symtrace), float64, dropout 0."""
    L = lib_nn(lib)
    kw = dict(dim_feedforward=FF, dropout=0.0, activation=activation(lib, act), dtype=lib.float64, **kw)
    fnorm = L.LayerNorm(D, eps=1e-4, dtype=lib.float64) if norm else None
    if kind == "enc_layer":
        return L.TransformerEncoderLayer(D, H, **kw)
    if kind == "dec_layer":
        return L.TransformerDecoderLayer(D, H, **kw)
    if kind == "encoder":
        extra = {"enable_nested_tensor": False} if lib is torch else {}
        return L.TransformerEncoder(L.TransformerEncoderLayer(D, H, **kw), nl, norm=fnorm, **extra)
    if kind == "decoder":
        return L.TransformerDecoder(L.TransformerDecoderLayer(D, H, **kw), nl, norm=fnorm)
    if kind == "transformer":
        return L.Transformer(D, H, num_encoder_layers=nl, num_decoder_layers=nl + 1, **kw)
    if kind == "custom":   # custom_encoder / custom_decoder: no final norms, 2 encoder layers
        enc = L.TransformerEncoder(L.TransformerEncoderLayer(D, H, **kw), 2, **(
            {"enable_nested_tensor": False} if lib is torch else {}))
        dec = L.TransformerDecoder(L.TransformerDecoderLayer(D, H, **kw), 1, norm=fnorm)
        return L.Transformer(D, H, custom_encoder=enc, custom_decoder=dec, dtype=lib.float64,
                             batch_first=kw.get("batch_first", False))
    raise AssertionError(kind)


def pair(kind, seed=0, **kw):
    """(symtrace module, torch module) with torch's weights, perturbed so that no
    norm weight is 1 and no bias 0, loaded into symtrace through numpy."""
    torch.manual_seed(seed)
    tm, sm = build(torch, kind, **kw), build(st, kind, **kw)
    with torch.no_grad():
        for p in tm.parameters():
            p.add_(torch.randn(p.shape, dtype=p.dtype) * 0.2)
    assert [(k, tuple(v.shape)) for k, v in sm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    sm.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return sm, tm


def seq(L, batch_first=False, unbatched=False):
    return (L, D) if unbatched else ((N, L, D) if batch_first else (L, N, D))


def compare(kind, inputs, masks, kw, rtol=1e-9, atol=1e-9, seed=0, dtype="float64"):
    """Run the pair on the inputs (numpy arrays: differentiated) and masks (numpy
    arrays or other arguments, passed as given); compare the outputs and the
    gradients of sum(out * w) for the inputs and every parameter."""
    sm, tm = pair(kind, seed=seed, **kw)
    if dtype != "float64":
        sm, tm = sm.to(getattr(st, dtype)), tm.to(getattr(torch, dtype))
    res = []
    for lib, m in ((st, sm), (torch, tm)):
        xs = [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in inputs]
        mk = {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in masks.items()}
        out = m(*xs, **mk)
        w = np.random.default_rng(seed + 200).standard_normal(tuple(out.shape))
        (out * lib.tensor(w, dtype=getattr(lib, dtype))).sum().backward()
        grads = [(f"input{i}", x.grad) for i, x in enumerate(xs)] + \
            [(n, p.grad) for n, p in m.named_parameters()]
        res.append((out.detach().numpy(), [(n, g.numpy()) for n, g in grads]))
    (so, sg), (to, tg) = res
    assert so.shape == to.shape
    np.testing.assert_allclose(so, to, rtol=rtol, atol=atol, err_msg="output")
    assert [n for n, _ in sg] == [n for n, _ in tg]
    for (n, a), (_, b) in zip(sg, tg):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=n)
    return so


def causal(L, lib_name="float64"):
    if lib_name == "bool":
        return np.triu(np.ones((L, L), bool), 1)
    return np.triu(np.full((L, L), -np.inf), 1)


def kpm(rows, L, pad):
    m = np.zeros((rows, L), bool)
    for r, cols in pad.items():
        m[r, cols] = True
    return m


def rnd(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


# ---------------- encoder layer and encoder ----------------
ENC_CASES = {
    "layer_post_seqfirst_relu": ("enc_layer", dict(), {}, False, False),
    "layer_pre_batchfirst_gelu_causal_hint": (
        "enc_layer", dict(norm_first=True, act="gelu", batch_first=True),
        {"src_mask": causal(S), "is_causal": True}, True, False),
    "layer_nobias_eps_gelu_tanh_module_kpm": (
        "enc_layer", dict(bias=False, layer_norm_eps=1e-3, act="gelu_tanh"),
        {"src_key_padding_mask": kpm(N, S, {1: slice(3, None)})}, False, False),
    "encoder2_batchfirst_silu_bool_masks_norm": (
        "encoder", dict(nl=2, norm=True, act="silu", batch_first=True),
        {"mask": np.eye(S, k=2, dtype=bool), "src_key_padding_mask": kpm(N, S, {0: [4], 1: [1, 3]})},
        True, False),
    "encoder1_float_masks_3d": (
        "encoder", dict(nl=1),
        {"mask": rnd((N * H, S, S), 1), "src_key_padding_mask": np.where(kpm(N, S, {0: [0]}), -np.inf, 0.0)
         + np.where(kpm(N, S, {1: [2]}), -1.5, 0.0)}, False, False),
    "encoder2_prenorm_causal_detected": (
        "encoder", dict(nl=2, norm=True, norm_first=True), {"mask": causal(S)}, False, False),
    "layer_wrong_hint_is_causal_wins": (   # torch: the hint replaces a mask it takes as causal
        "enc_layer", dict(), {"src_mask": rnd((S, S), 2), "is_causal": True}, False, False),
    "encoder_unbatched_causal_bool_kpm": (
        "encoder", dict(nl=2), {"mask": causal(S, "bool"), "src_key_padding_mask": np.array([0, 0, 0, 1, 1], bool)},
        False, True),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(ENC_CASES))
def test_encoder_family_matches_torch(case):
    kind, kw, masks, bf, unb = ENC_CASES[case]
    compare(kind, [rnd(seq(S, bf, unb), 3)], masks, kw)


# ---------------- decoder layer and decoder ----------------
DEC_CASES = {
    "layer_post_seqfirst_relu": ("dec_layer", dict(), {}, False, False),
    "layer_pre_batchfirst_gelu_causal_hint_memory_mask": (
        "dec_layer", dict(norm_first=True, act="gelu", batch_first=True),
        {"tgt_mask": causal(T), "tgt_is_causal": True, "memory_mask": rnd((T, S), 4)}, True, False),
    "decoder2_prenorm_batchfirst_gelu_causal_detected_norm": (
        "decoder", dict(nl=2, norm=True, norm_first=True, act="gelu", batch_first=True),
        {"tgt_mask": causal(T)}, True, False),
    "decoder2_batchfirst_silu_bool_masks": (
        "decoder", dict(nl=2, act="silu", batch_first=True),
        {"tgt_mask": causal(T, "bool"), "memory_mask": np.eye(T, S, k=1, dtype=bool),
         "tgt_key_padding_mask": kpm(N, T, {0: [3]}), "memory_key_padding_mask": kpm(N, S, {1: [0, 4]})},
        True, False),
    "layer_memory_is_causal_hint_wins": (
        "dec_layer", dict(), {"memory_mask": rnd((T, S), 3), "memory_is_causal": True}, False, False),
    "decoder1_float_masks_3d": (
        "decoder", dict(nl=1),
        {"tgt_mask": rnd((N * H, T, T), 5), "memory_mask": rnd((N * H, T, S), 6),
         "tgt_key_padding_mask": np.where(kpm(N, T, {1: [1]}), -np.inf, 0.0),
         "memory_key_padding_mask": np.where(kpm(N, S, {0: [2, 3]}), -2.0, 0.0), "tgt_is_causal": False},
        False, False),
    "decoder2_unbatched_causal_hint_memory_kpm": (
        "decoder", dict(nl=2, norm=True),
        {"tgt_mask": causal(T), "tgt_is_causal": True, "memory_key_padding_mask": np.array([0, 1, 0, 0, 1], bool)},
        False, True),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(DEC_CASES))
def test_decoder_family_matches_torch(case):
    kind, kw, masks, bf, unb = DEC_CASES[case]
    compare(kind, [rnd(seq(T, bf, unb), 7), rnd(seq(S, bf, unb), 8)], masks, kw)


# ---------------- Transformer ----------------
TR_CASES = {
    "batchfirst_all_masks": (
        "transformer", dict(nl=1, batch_first=True),
        {"src_mask": rnd((S, S), 9), "tgt_mask": causal(T), "memory_mask": np.eye(T, S, k=2, dtype=bool),
         "src_key_padding_mask": kpm(N, S, {1: [4]}), "tgt_key_padding_mask": kpm(N, T, {0: [3]}),
         "memory_key_padding_mask": kpm(N, S, {1: [4]})}, True, False),
    "prenorm_gelu_unbatched_causal": (
        "transformer", dict(nl=1, norm_first=True, act="gelu"),
        {"tgt_mask": causal(T, "bool"), "src_is_causal": False}, False, True),
    "custom_encoder_decoder_silu": (
        "custom", dict(norm=True, act="silu"), {"tgt_mask": causal(T)}, False, False),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(TR_CASES))
def test_transformer_matches_torch(case):
    kind, kw, masks, bf, unb = TR_CASES[case]
    compare(kind, [rnd(seq(S, bf, unb), 10), rnd(seq(T, bf, unb), 11)], masks, kw)


@needs_torch
def test_transformer_float32():
    """float32 weights and inputs: torch's values within float32 rounding."""
    compare("transformer", [rnd(seq(S, True), 12), rnd(seq(T, True), 13)],
            {"tgt_mask": causal(T), "src_key_padding_mask": kpm(N, S, {0: [3, 4]})},
            dict(nl=1, batch_first=True), rtol=2e-4, atol=2e-5, dtype="float32")


@needs_torch
def test_queries_with_every_key_masked():
    """A sequence that is all padding and a left-padded target under a causal mask:
    a query with no key to attend gets zeros from attention (torch's SDPA), not nan."""
    out = compare("encoder", [rnd(seq(S, True), 14)], {"src_key_padding_mask": kpm(N, S, {0: slice(None)})},
                  dict(nl=2, norm=True, batch_first=True))
    assert np.isfinite(out).all()
    out = compare("decoder", [rnd(seq(T), 15), rnd(seq(S), 16)],
                  {"tgt_mask": causal(T), "tgt_key_padding_mask": kpm(N, T, {1: [0, 1]})}, dict(nl=1))
    assert np.isfinite(out).all()


# ---------------- torch's inference path (nested tensors) ----------------
@needs_torch
@pytest.mark.parametrize("mask_check", [True, False])
def test_encoder_inference_padding_as_torch(mask_check):
    """eval, no gradient needed, batch_first, a padding mask and no mask: torch runs
    nested tensors and returns zeros at padded positions before the final norm (with
    mask_check=False and non-left-aligned padding, on each row's first `length`
    positions); with gradients needed it computes every position. symtrace matches both."""
    torch.manual_seed(1)
    tm = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D, H, FF, batch_first=True,
                                                                      dtype=torch.float64),
                                     2, norm=torch.nn.LayerNorm(D, dtype=torch.float64), mask_check=mask_check)
    with torch.no_grad():
        for p in tm.parameters():
            p.add_(torch.randn(p.shape, dtype=p.dtype) * 0.2)
    sm = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, batch_first=True, dtype=st.float64), 2,
                               norm=nn.LayerNorm(D, dtype=st.float64), mask_check=mask_check)
    sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    assert sm.use_nested_tensor and sm.enable_nested_tensor
    tm.eval()
    sm.eval()
    x = rnd((N, S, D), 17)
    left = kpm(N, S, {0: [3, 4]})
    holes = kpm(N, S, {0: [1], 1: [0, 3]})
    bias = tm.norm.bias.detach().numpy()
    for pad in (left, holes, np.where(left, -np.inf, 0.0)):
        for grad in (False, True):
            with torch.set_grad_enabled(grad), st.set_grad_enabled(grad):
                to = tm(torch.tensor(x), src_key_padding_mask=torch.tensor(pad)).detach().numpy()
                so = sm(st.tensor(x), src_key_padding_mask=st.tensor(pad)).detach().numpy()
            np.testing.assert_allclose(so, to, rtol=1e-9, atol=1e-9)
            zeroed = np.allclose(to[0, 3], bias) if pad is not holes else np.allclose(to[1, 3], bias)
            assert zeroed == (not grad and (pad is not holes or not mask_check))


# ---------------- API ----------------
@needs_torch
@pytest.mark.parametrize("name", ["Transformer", "TransformerEncoder", "TransformerDecoder",
                                  "TransformerEncoderLayer", "TransformerDecoderLayer"])
def test_signatures_as_torch(name):
    sc, tc = getattr(nn, name), getattr(torch.nn, name)
    for meth in ("__init__", "forward"):
        sp = [(p.name, p.kind) for p in inspect.signature(getattr(sc, meth)).parameters.values()]
        tp = [(p.name, p.kind) for p in inspect.signature(getattr(tc, meth)).parameters.values()]
        assert sp == tp, (name, meth)
        sd = [p.default for p in inspect.signature(getattr(sc, meth)).parameters.values()]
        td = [p.default for p in inspect.signature(getattr(tc, meth)).parameters.values()]
        for a, b in zip(sd, td):
            assert (a.__name__ == b.__name__) if callable(a) else (a == b or a is b), (name, meth, a, b)
    assert isinstance(inspect.getattr_static(nn.Transformer, "generate_square_subsequent_mask"), staticmethod)


def test_generate_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype == st.float32 and tuple(m.shape) == (4, 4)
    np.testing.assert_array_equal(m.numpy(), np.triu(np.full((4, 4), -np.inf, np.float32), 1))
    b = nn.Transformer.generate_square_subsequent_mask(3, dtype=st.bool)
    np.testing.assert_array_equal(b.numpy(), np.triu(np.ones((3, 3), bool), 1))
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=st.float64).dtype == st.float64
    with pytest.raises(RuntimeError, match="int64_t without overflow"):
        nn.Transformer.generate_square_subsequent_mask(2, dtype=st.int64)


def test_transformer_init_and_state_dict():
    """Transformer: every >1-d parameter ~ xavier_uniform_ (bounded by sqrt(6 / (fan_in +
    fan_out)), its spread), in_proj biases zero, LayerNorms ones/zeros, encoder/decoder
    final norms; the deep-copied layers distinct."""
    st.manual_seed(0)
    m = nn.Transformer(32, 4, 2, 1, 64)
    sd = m.state_dict()
    assert "encoder.norm.weight" in sd and "decoder.norm.bias" in sd
    assert "decoder.layers.0.multihead_attn.in_proj_weight" in sd and "decoder.layers.0.norm3.weight" in sd
    assert len([k for k in sd if k.startswith("encoder.layers.")]) == 2 * 12
    assert tuple(sd["decoder.layers.0.linear1.weight"].shape) == (64, 32)
    for k, v in sd.items():
        a = v.numpy()
        if a.ndim > 1:
            bound = np.sqrt(6.0 / (a.shape[0] + a.shape[1]))
            assert np.abs(a).max() <= bound + 1e-7, k
            assert abs(a.std() - bound / np.sqrt(3)) < 0.12 * bound / np.sqrt(3), k
        elif k.endswith("in_proj_bias") or k.endswith("out_proj.bias") or ".norm" in k and k.endswith("bias"):
            assert (a == 0).all(), k
        elif ".norm" in k and k.endswith("weight"):
            assert (a == 1).all(), k
    a0 = sd["encoder.layers.0.linear1.weight"].numpy()
    a1 = sd["encoder.layers.1.linear1.weight"].numpy()
    assert not np.array_equal(a0, a1)      # reset after the copies: each drawn on its own
    assert m.d_model == 32 and m.nhead == 4 and m.batch_first is False


def test_layer_attributes():
    layer = nn.TransformerEncoderLayer(8, 2, activation="gelu")
    assert layer.activation is F.gelu and layer.activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(8, 2).activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(8, 2, activation=nn.ReLU()).activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(8, 2, activation=F.silu).activation_relu_or_gelu == 0
    assert nn.TransformerDecoderLayer(8, 2, activation="relu").activation is F.relu
    with pytest.warns(UserWarning, match="batch_first was not True"):
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 2)
    assert enc.enable_nested_tensor and not enc.use_nested_tensor and enc.mask_check
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, batch_first=True), 1, mask_check=False)
    assert enc.use_nested_tensor and not enc.mask_check
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")


# ---------------- errors ----------------
def _msg(e):
    """torch.Size([3, 4]) printed as (3, 4), as symtrace prints sizes."""
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)",
                  lambda m: repr(tuple(int(v) for v in m.group(1).split(",") if v.strip())), str(e))


def _zeros(lib, shape, dtype="float64"):
    return lib.zeros(shape, dtype=getattr(lib, dtype))


ERROR_CASES = {
    # (module kind, kw, inputs(lib) -> (args, kwargs))
    "tgt_mask_2d_shape": ("decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, N, D))),
                                                      {"tgt_mask": _zeros(lib, (3, T))})),
    "tgt_mask_3d_shape": ("decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, N, D))),
                                                      {"tgt_mask": _zeros(lib, (N, T, T))})),
    "tgt_mask_4d": ("decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, N, D))),
                                                {"tgt_mask": _zeros(lib, (N, H, T, T))})),
    "tgt_mask_int": ("decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, N, D))),
                                                 {"tgt_mask": _zeros(lib, (T, T), "int64")})),
    "memory_mask_shape": ("decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, N, D))),
                                                      {"memory_mask": _zeros(lib, (T, T))})),
    "tgt_kpm_length": ("decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, N, D))),
                                                   {"tgt_key_padding_mask": _zeros(lib, (N, S), "bool")})),
    "memory_kpm_batch": ("decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, N, D))),
                                                     {"memory_key_padding_mask": _zeros(lib, (3, S), "bool")})),
    "kpm_3d": ("encoder", {}, lambda lib: ((_zeros(lib, (S, N, D)),),
                                           {"src_key_padding_mask": _zeros(lib, (N, S, 1), "bool")})),
    "kpm_int": ("encoder", {}, lambda lib: ((_zeros(lib, (S, N, D)),),
                                            {"src_key_padding_mask": _zeros(lib, (N, S), "int64")})),
    "src_mask_shape": ("encoder", {}, lambda lib: ((_zeros(lib, (S, N, D)),), {"mask": _zeros(lib, (S, S + 1))})),
    "unbatched_kpm_2d": ("encoder", {}, lambda lib: ((_zeros(lib, (S, D)),),
                                                     {"src_key_padding_mask": _zeros(lib, (1, S), "bool")})),
    "unbatched_mask_3d": ("encoder", {}, lambda lib: ((_zeros(lib, (S, D)),), {"mask": _zeros(lib, (1, S, S))})),
    "is_causal_without_mask": ("encoder", {}, lambda lib: ((_zeros(lib, (S, N, D)),), {"is_causal": True})),
    "tgt_is_causal_without_mask": ("decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, N, D))),
                                                               {"tgt_is_causal": True})),
    "memory_is_causal_without_mask": (
        "decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, N, D))), {"memory_is_causal": True})),
    "unbatched_tgt_batched_memory": ("decoder", {}, lambda lib: ((_zeros(lib, (T, D)), _zeros(lib, (S, N, D))), {})),
    "batched_tgt_unbatched_memory": ("decoder", {}, lambda lib: ((_zeros(lib, (T, N, D)), _zeros(lib, (S, D))), {})),
    "input_4d": ("enc_layer", {}, lambda lib: ((_zeros(lib, (S, N, 1, D)),), {})),
    "wrong_width": ("encoder", {}, lambda lib: ((_zeros(lib, (S, N, D + 1)),), {})),
    "transformer_batch": ("transformer", {}, lambda lib: ((_zeros(lib, (S, N, D)), _zeros(lib, (T, 3, D))), {})),
    "transformer_batch_first_batch": (
        "transformer", {"batch_first": True}, lambda lib: ((_zeros(lib, (N, S, D)), _zeros(lib, (3, T, D))), {})),
    "transformer_width": ("transformer", {}, lambda lib: ((_zeros(lib, (S, N, D)), _zeros(lib, (T, N, 6))), {})),
    "transformer_unbatched_src": ("transformer", {}, lambda lib: ((_zeros(lib, (S, D)), _zeros(lib, (T, N, D))), {})),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_errors_as_torch(case):
    kind, kw, make_args = ERROR_CASES[case]
    caught = []
    for lib in (torch, st):
        m = build(lib, kind, **kw)
        args, kwargs = make_args(lib)
        with pytest.raises(Exception) as ei, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(*args, **kwargs)
        caught.append((type(ei.value), _msg(ei.value)))
    (tt, tmsg), (stt, smsg) = caught
    assert stt is tt, (case, caught)
    assert smsg == tmsg, (case, caught)


def test_constructor_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerDecoderLayer(10, 3)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu"):
        nn.Transformer(8, 2, 1, 1, 16, activation="swish")


# ---------------- a seq2seq training step, compiled ----------------
VOCAB = 11


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, 16)
        self.tgt_emb = nn.Embedding(VOCAB, 16)
        self.core = nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, src, tgt_in, tgt_out, tgt_mask, src_pad, tgt_pad):
        h = self.core(self.src_emb(src), self.tgt_emb(tgt_in), tgt_mask=tgt_mask, src_key_padding_mask=src_pad,
                      tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return F.cross_entropy(self.head(h).reshape(-1, VOCAB), tgt_out.reshape(-1), ignore_index=0)


def _batch(rng):
    src = rng.integers(1, VOCAB, size=(2, 6))
    src[1, 4:] = 0
    tgt = rng.integers(1, VOCAB, size=(2, 6))
    tgt[0, 5:] = 0
    return (st.tensor(src), st.tensor(tgt[:, :-1]), st.tensor(tgt[:, 1:]),
            nn.Transformer.generate_square_subsequent_mask(5), st.tensor(src == 0), st.tensor(tgt[:, :-1] == 0))


def test_seq2seq_training_step_compiled_equals_eager():
    import copy
    st.reset()
    st.manual_seed(3)
    eager = Seq2Seq()
    model = copy.deepcopy(eager)
    compiled = st.compile(model)
    opts = [st.optim.SGD(m.parameters(), lr=0.1) for m in (eager, model)]
    rng = np.random.default_rng(5)
    for step in range(2):
        batch = _batch(rng)
        losses = []
        for fn, opt in ((eager, opts[0]), (compiled, opts[1])):
            opt.zero_grad()
            loss = fn(*batch)
            loss.backward()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5, atol=1e-6)
        for (n, pe), (_, pc) in zip(eager.named_parameters(), model.named_parameters()):
            np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)
        assert any(np.abs(p.grad.numpy()).max() > 0 for p in eager.core.decoder.parameters())
        for opt in opts:
            opt.step()
    stats = st._C._fe_stats()
    assert stats["graphs"] >= 1 and stats["breaks"] == 0, stats
    st.reset()


def test_encoder_inference_compiled_equals_eager():
    """The inference path (eval, no_grad, padding): one graph, no break (no data is
    read to choose it), the padded positions zeros, as eager."""
    st.reset()
    st.manual_seed(4)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2).eval()
    x = st.tensor(np.random.default_rng(6).standard_normal((2, 5, 8)).astype(np.float32))
    for pad, zeroed in ((kpm(2, 5, {0: [3, 4]}), True), (kpm(2, 5, {0: [1, 3]}), False)):
        with st.no_grad():
            e = enc(x, src_key_padding_mask=st.tensor(pad)).numpy()
            ex = st.explain(enc, x, src_key_padding_mask=st.tensor(pad))
        assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
        np.testing.assert_allclose(ex.out.numpy(), e, rtol=1e-5, atol=1e-6)
        assert (e[0, 3] == 0).all() == zeroed and not (e[1] == 0).all()
    st.reset()
