# What the third nn hunt (scripts/hunt_nn.py: every torch.nn class, optimizer and
# lr_scheduler against torch 2.13) found and fixed: Embedding's max_norm,
# norm_type and scale_grad_by_freq, zero-width Linear layers' backward,
# AdaptiveLogSoftmaxWithLoss (zero-width tails, no gradient for a cluster no
# target falls in), load_state_dict(assign=True). Each is compared with torch,
# or with the values torch gives written out.
import numpy as np
import pytest

import symtrace as st


def _np(t):
    return None if t is None else np.array(t.detach().numpy())


def _close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(_np(got), want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- Embedding
W = np.array([[3.0, 4.0], [0.3, 0.4], [-1.0, 2.0], [0.0, 0.0]], dtype=np.float32)


def _embedding_run(L, **kw):
    m = L.nn.Embedding(4, 2, **kw)
    m.load_state_dict({"weight": L.tensor(W.copy())})
    idx = L.tensor(np.array([[0, 1, 1], [2, 0, 0]]))
    out = m(idx)
    (out * L.tensor(np.arange(12, dtype=np.float32).reshape(2, 3, 2))).sum().backward()
    return out, m.weight, m.weight.grad


def test_embedding_max_norm_renorms_the_rows_read_in_place():
    out, weight, grad = _embedding_run(st, max_norm=1.0)
    # rows 0 (norm 5) and 2 (norm sqrt 5) read and longer than 1: scaled to norm 1 (minus torch's 1e-7)
    want_w = W.copy()
    want_w[0] = W[0] / (5.0 + 1e-7)
    want_w[2] = W[2] / (np.sqrt(5.0) + 1e-7)
    _close(weight, want_w)
    _close(out, want_w[[[0, 1, 1], [2, 0, 0]]])
    _close(grad, [[0 + 8 + 10, 1 + 9 + 11], [2 + 4, 3 + 5], [6, 7], [0, 0]])


def test_embedding_scale_grad_by_freq_and_norm_type():
    out, weight, grad = _embedding_run(st, scale_grad_by_freq=True, max_norm=2.0, norm_type=1.0)
    want_w = W.copy()
    want_w[0] = W[0] * 2.0 / (7.0 + 1e-7)     # l1 norm 7 > 2; row 2's l1 norm 3 > 2
    want_w[2] = W[2] * 2.0 / (3.0 + 1e-7)
    _close(weight, want_w)
    # row 0 read 3 times, row 1 twice: their gradients divided by that
    _close(grad, [[18 / 3, 21 / 3], [6 / 2, 8 / 2], [6, 7], [0, 0]])


@pytest.mark.parametrize("kw", [dict(max_norm=1.0), dict(scale_grad_by_freq=True, padding_idx=1),
                                dict(max_norm=0.5, norm_type=3.0, scale_grad_by_freq=True)])
def test_embedding_options_match_torch(kw):
    torch = pytest.importorskip("torch")
    want = _embedding_run(torch, **kw)
    got = _embedding_run(st, **kw)
    for g, w in zip(got, want):
        _close(g, _np(w))
    assert repr(st.nn.Embedding(4, 2, **kw)) == repr(torch.nn.Embedding(4, 2, **kw))


def test_embedding_sparse_names_what_is_missing():
    with pytest.raises(NotImplementedError, match="sparse"):
        st.nn.Embedding(4, 2, sparse=True)
