# Training parity with PyTorch: a token classifier (Embedding -> 2-layer
# TransformerEncoder, d_model 32, nhead 4, ff 64, dropout 0, batch_first ->
# mean-pool -> Linear to 3 classes -> CrossEntropyLoss) starts from the same
# weights as the torch model and takes 50 AdamW steps (lr 1e-3) cycling over
# the same two seeded synthetic batches (batch 8, seq 10, some padded
# positions masked out of attention); the losses must equal PyTorch's step by step within 1e-4
# relative, and the final parameters must still agree.
import time

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.optim as optim

torch = pytest.importorskip("torch")

D, H, FF, LAYERS, CLASSES, VOCAB = 32, 4, 64, 2, 3, 20
BATCH, SEQ, STEPS, NBATCHES = 8, 10, 50, 2


def build(lib):
    """The same architecture from symtrace.nn or torch.nn (same names and order)."""
    class Classifier(lib.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.Embedding(VOCAB, D)
            layer = lib.TransformerEncoderLayer(D, H, dim_feedforward=FF, dropout=0.0, batch_first=True)
            kw = {"enable_nested_tensor": False} if lib is torch.nn else {}
            self.encoder = lib.TransformerEncoder(layer, LAYERS, **kw)
            self.head = lib.Linear(D, CLASSES)

        def forward(self, ids, pad_mask):
            h = self.encoder(self.embed(ids), src_key_padding_mask=pad_mask)
            return self.head(h.mean(1))
    return Classifier()


def batches(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(NBATCHES):
        ids = rng.integers(0, VOCAB, size=(BATCH, SEQ))
        lengths = rng.integers(SEQ // 2, SEQ + 1, size=BATCH)
        pad = np.arange(SEQ)[None, :] >= lengths[:, None]
        # a learnable rule: the label is the (first token + last real token) mod 3
        labels = (ids[:, 0] + ids[np.arange(BATCH), lengths - 1]) % CLASSES
        out.append((ids, pad, labels))
    return out


def test_transformer_training_matches_torch():
    torch.manual_seed(0)
    tmodel = build(torch.nn)
    smodel = build(nn)
    assert [n for n, _ in smodel.named_parameters()] == [n for n, _ in tmodel.named_parameters()]
    smodel.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tmodel.state_dict().items()})
    topt = torch.optim.AdamW(tmodel.parameters(), lr=1e-3)
    sopt = optim.AdamW(smodel.parameters(), lr=1e-3)
    tloss_fn, sloss_fn = torch.nn.CrossEntropyLoss(), nn.CrossEntropyLoss()

    t0 = time.perf_counter()
    s_losses, t_losses = [], []
    data = batches()
    for step in range(STEPS):
        ids, pad, labels = data[step % NBATCHES]
        tl = tloss_fn(tmodel(torch.from_numpy(ids), torch.from_numpy(pad)), torch.from_numpy(labels))
        topt.zero_grad()
        tl.backward()
        topt.step()
        t_losses.append(tl.item())

        sl = sloss_fn(smodel(st.tensor(ids), st.tensor(pad)), st.tensor(labels))
        sopt.zero_grad()
        sl.backward()
        sopt.step()
        s_losses.append(sl.item())
    elapsed = time.perf_counter() - t0

    s_losses, t_losses = np.array(s_losses), np.array(t_losses)
    rel = np.abs(s_losses - t_losses) / np.abs(t_losses)
    assert rel.max() < 1e-4, (f"worst step {rel.argmax()}: symtrace {s_losses[rel.argmax()]} vs torch "
                              f"{t_losses[rel.argmax()]} (rel {rel.max():.2e})")
    assert s_losses[-4:].mean() < 0.5 * s_losses[:4].mean()  # it trains (memorizes the two batches)
    tparams = dict(tmodel.named_parameters())
    for name, p in smodel.named_parameters():
        a, b = p.detach().numpy(), tparams[name].detach().numpy()
        if name.endswith("in_proj_bias"):
            # the key bias adds the same q.b_k to every score of a row, which softmax
            # ignores: its true gradient is 0, both sides see rounding noise, and
            # Adam turns noise into full-size steps. Compare the q and v parts only.
            a, b = np.delete(a, np.s_[D:2 * D]), np.delete(b, np.s_[D:2 * D])
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4, err_msg=name)
    assert elapsed < 60, f"50 steps took {elapsed:.1f}s"
