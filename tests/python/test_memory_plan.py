# The memory estimate of a training step of the 2-layer encoder: its
# forward graph (traced) and its backward graph (AOT, from the VJP rules)
# run with their memory plans; the plan's per-kernel estimate against the
# caching allocator's measured bytes, printed side by side as in seeds/004.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C
import symtrace.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(64, 3)

    def forward(self, ids, labels):
        h = self.enc(self.emb(ids))
        return nn.functional.cross_entropy(self.head(h.mean(1)), labels)


def run_with_trace(graph, inputs):
    cg = graph.compile()
    est = st.memory.estimate(cg, *inputs, measured=True)
    outs, _ = cg.run(*inputs, trace=True)
    return est, outs


def test_training_step_estimate_within_2_percent():
    st.manual_seed(0)
    model = Encoder()
    ids = st.randint(0, 50, (8, 16))
    labels = st.randint(0, 3, (8,))
    params = [p for _, p in model.named_parameters()]

    fwd, inputs = st.memory.trace_graph(lambda i, l: model(i, l), ids, labels, candidates=params)
    ids_v = [v for v in fwd.inputs]
    pos = {id(t): k for k, t in enumerate(inputs)}
    wrt = [ids_v[pos[id(p)]] for p in params if id(p) in pos]
    assert len(wrt) == len(params)

    bwd_cap, saved_ids, fwd_saving_cap = _C._backward_graph(fwd.capsule, wrt)
    fwd_saving, bwd = _C.Graph(fwd_saving_cap), _C.Graph(bwd_cap)

    est_f, fouts = run_with_trace(fwd_saving, inputs)
    loss = fouts[0]
    seed = st.ones_like(loss)
    est_b, grads = run_with_trace(bwd, tuple(fouts[len(fwd.outputs):]) + (seed,))

    print()
    print("forward graph:", est_f, sep="\n")
    print("backward graph:", est_b, sep="\n")
    for est in (est_f, est_b):
        pe, pm = est.peak_estimated, est.peak_measured
        assert pm > 0 and abs(pm - pe) <= 0.02 * pe, (pe, pm)

    # and the graphs compute the step: the eager tape's loss and gradients
    eager_loss = model(ids, labels)
    eager_loss.backward()
    np.testing.assert_allclose(loss.item(), eager_loss.item(), rtol=1e-5)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-3, atol=1e-5)
