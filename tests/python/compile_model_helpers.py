# tests/python/compile_model_helpers.py - what the compiled-model tests share
# (test_compile_hf_style.py, test_compile_gpt2_style.py, test_compile_modern_models.py):
# a clean frontend per test and the frontend's counts (their own training loops stay in
# each file: a shared helper calling the model would be one more frame in the break
# counts they bound); the dynamic-shape runs of test_compile_gpt2_style.py and
# test_dynamic_gen.py; and the HF-style BERT checkpointing run that
# test_compile_checkpoint.py and test_checkpoint_rng.py compare.
import numpy as np
import pytest

import symtrace as st


@pytest.fixture(autouse=True)
def fresh_frontend():
    """Autouse in the modules that import it."""
    st.reset()
    yield
    st.reset()


def fe_counts():
    """(graphs, breaks, fallbacks) so far."""
    s = st._C._fe_stats()
    return s["graphs"], s["breaks"], s["fallbacks"]


def dynamic_runs(f, inputs, **kw):
    """f compiled with dynamic=True on each input tuple, then eager: (graphs, got, want)."""
    st.reset()
    c = st.compile(f, dynamic=True, **kw)
    got = [c(*a) for a in inputs]
    want = [f(*a) for a in inputs]
    return fe_counts()[0], got, want


def assert_same_results(got, want):
    """Each pair of tensors: the same shape and values (rtol 1e-5, atol 1e-6)."""
    for a, b in zip(got, want):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(np.asarray(a.tolist()), np.asarray(b.tolist()),
                                   rtol=1e-5, atol=1e-6)


def hf_bert_checkpoint_steps(ck, comp, steps=2, p=0.1):
    """A small HF-style BERT (tests/python/hf_bert_model.py: 4 layers, hidden 64, dropout
    p) trained `steps` SGD steps on one fixed batch, with gradient checkpointing (ck) and
    the step compiled (comp): (losses, the last step's peak of requested bytes above the
    start (the cache's rounding depends on what ran before; requests do not),
    the frontend's stats). Seeds are fixed, so two runs draw the same dropout masks."""
    import hf_bert_model as H
    rng = np.random.default_rng(0)
    b, s, V = 8, 64, 100
    ids = rng.integers(1, V, (b, s))
    mask = np.ones((b, s), np.int64)
    mask[0, s - 4:] = 0
    tt = np.zeros((b, s), np.int64)
    tt[:, s // 2:] = 1
    labels = np.full((b, s), -100)
    labels[:, 3] = rng.integers(1, V, b)
    nsl = rng.integers(0, 2, b)
    st.reset()
    st.manual_seed(0)
    model = H.build(st, H.Config(hidden_size=64, intermediate_size=256, num_hidden_layers=4,
                                 hidden_dropout_prob=p, attention_probs_dropout_prob=p))
    if ck:
        model.gradient_checkpointing_enable()
    opt = st.optim.SGD(model.parameters(), lr=0.1)

    def step(*a):
        loss = model(a[0], attention_mask=a[1], token_type_ids=a[2], labels=a[3],
                     next_sentence_label=a[4]).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    f = st.compile(step) if comp else step
    st.manual_seed(1)
    losses, peak = [], 0
    for _ in range(steps):
        args = [st.tensor(a) for a in (ids, mask, tt, labels, nsl)]
        base = st.memory.stats()["requested_bytes"]
        st.memory.reset_peak_stats()
        losses.append(float(f(*args)))
        peak = st.memory.max_memory_requested() - base
    s = st._C._fe_stats()
    return losses, peak, {k: s[k] for k in ("graphs", "breaks", "fallbacks")}
