"""dynamic=True, the remaining gaps: one graph where the shape math allows it, never a
wrong result. A transformer over sequence lengths with a key padding mask (the mask's
conversion and multi-head attention's reshapes follow symbolic sizes), ... Graph counts,
and values and grads against eager (and torch where it is installed)."""
import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
from dynamic_helpers import close as _close, fresh_dynamic, graphs as _graphs  # noqa: F401


def _padding_mask(b, n):
    m = np.zeros((b, n), dtype=bool)
    m[0, n - 3:] = True
    return m


# ---------------- sequence length in attention ----------------
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_key_padding_mask_one_graph(need_weights):
    # _canonical_mask's zeros(mask.shape) and multi_head_attention_forward's reshapes
    # ran for real on plain ints: a graph per sequence length (and batch size)
    st.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, batch_first=True)

    def f(x, m):
        return mha(x, x, x, key_padding_mask=m, need_weights=need_weights)[0]
    c = st.compile(f, dynamic=True, backend="interp")
    rng = np.random.default_rng(0)
    for b, n in ((3, 7), (2, 9), (4, 12)):
        xv = rng.standard_normal((b, n, 16)).astype(np.float32)
        m = st.tensor(_padding_mask(b, n))
        outs = []
        for fn in (c, f):
            x = st.tensor(xv, requires_grad=True)
            for p in mha.parameters():
                p.grad = None
            y = fn(x, m)
            (y * y).sum().backward()
            outs.append((y.detach().numpy(), x.grad.numpy(), mha.in_proj_weight.grad.numpy().copy()))
        for a, w in zip(*outs):
            _close(a, w, 1e-4)
    assert _graphs() == 1


def test_transformer_encoder_layer_seq_lengths_one_graph():
    st.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    c = st.compile(layer, dynamic=True, backend="interp")
    rng = np.random.default_rng(1)
    for n in (7, 9, 12):
        xv = rng.standard_normal((3, n, 16)).astype(np.float32)
        m = st.tensor(_padding_mask(3, n))
        _close(c(st.tensor(xv), src_key_padding_mask=m).detach().numpy(),
               layer(st.tensor(xv), src_key_padding_mask=m).detach().numpy(), 1e-4)
    assert _graphs() == 1


def test_transformer_encoder_layer_matches_torch():
    torch = pytest.importorskip("torch")
    st.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    ref = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    sd = {k: torch.tensor(v.detach().numpy()) for k, v in layer.state_dict().items()}
    ref.load_state_dict(sd)
    ref.eval()
    layer.eval()
    c = st.compile(layer, dynamic=True, backend="interp")
    rng = np.random.default_rng(2)
    for n in (7, 9, 12):
        xv = rng.standard_normal((3, n, 16)).astype(np.float32)
        m = _padding_mask(3, n)
        got = c(st.tensor(xv), src_key_padding_mask=st.tensor(m)).detach().numpy()
        with torch.no_grad():
            want = ref(torch.tensor(xv), src_key_padding_mask=torch.tensor(m)).numpy()
        _close(got, want, 1e-4)
    assert _graphs() == 1
