# A GPT-2 in HuggingFace's idioms (hf_gpt2_model.py) under symtrace.compile: 3 AdamW
# steps in eager, st.compile(step) and st.compile(model), losses and gradients against
# torch (when installed) and against symtrace's eager run, with bounds on graphs and
# breaks; greedy generation with use_cache=True (past_key_values growing) compiled,
# tokens against torch's. Also the dynamic-shape fixes this model needed: split/chunk
# and addmm/baddbmm kept their sizes symbolic (they specialized every size: one graph
# per sequence length under dynamic=True).
import numpy as np
import pytest

import hf_gpt2_model as g
import symtrace as st
from compile_model_helpers import fresh_frontend, fe_counts  # noqa: F401
from compile_model_helpers import dynamic_runs as _dyn_graphs, assert_same_results as _same


def _data(seed):
    r = np.random.default_rng(seed)
    ids = r.integers(0, 64, (2, 8))
    mask = np.ones((2, 8), np.int64)
    mask[1, 6:] = 0
    labels = ids.copy()
    labels[1, 6:] = -100                   # ignore_index
    return ids, mask, labels


def _train(L, model, mode=None, steps=3):
    """[(loss, [grad of each parameter])] over `steps` AdamW steps (the model called in
    the step itself, as test_compile_modern_models._train does: a helper function
    around the loss would be one more frame for the break counts)."""
    opt = L.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    fwd = [model]

    def step(ids, mask, labels):
        loss = fwd[0](ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        grads = [p.grad.clone() for p in model.parameters()]
        opt.step()
        opt.zero_grad()
        return loss, grads

    if mode == "step":
        step = st.compile(step)
    elif mode == "model":
        fwd[0] = st.compile(model)
    out = []
    for i in range(steps):
        loss, grads = step(*[L.tensor(a) for a in _data(i)])
        out.append((loss.item(), [np.asarray(x.tolist()) for x in grads]))
    return out


def _st_model(sd):
    m = g.build(st)
    m.load_state_dict({k: st.tensor(np.asarray(v)) for k, v in sd.items()}, strict=False)
    return m


def _close(got, want):
    assert len(got) == len(want)
    for (lg, gg), (lw, gw) in zip(got, want):
        np.testing.assert_allclose(lg, lw, rtol=1e-4)
        assert len(gg) == len(gw)
        for a, b in zip(gg, gw):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * (np.abs(b).max() + 1e-6))


def _st_sd():
    st.manual_seed(0)
    ref = g.build(st)
    return {k: np.asarray(v.tolist(), dtype=np.float32) for k, v in ref.state_dict().items()}


def _torch_sd(torch):
    torch.manual_seed(0)
    tm = g.build(torch)
    return tm, {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}


# step: backward, optimizer.step and zero_grad break (3), as in the other model tests
BOUNDS = {"model": (1, 0), "step": (2, 3)}


@pytest.mark.parametrize("mode", ["step", "model"])
def test_gpt2_compiled_trains_as_eager(mode):
    sd = _st_sd()
    want = _train(st, _st_model(sd))
    st.reset()
    got = _train(st, _st_model(sd), mode)
    _close(got, want)
    graphs, breaks, fallbacks = fe_counts()
    gb, bb = BOUNDS[mode]
    assert graphs <= gb and breaks <= bb and fallbacks == 0, (graphs, breaks, fallbacks)


@pytest.mark.parametrize("mode", [None, "step", "model"])
def test_gpt2_matches_torch(mode):
    torch = pytest.importorskip("torch")
    tm, sd = _torch_sd(torch)
    want = _train(torch, tm)
    got = _train(st, _st_model(sd), mode)
    _close(got, want)


def test_gpt2_lm_head_is_tied():
    m = g.build(st)
    assert m.lm_head.weight is m.transformer.wte.weight
    assert len(list(m.parameters())) == len({id(p) for p in m.parameters()})


# ---- greedy generation with past_key_values
PROMPT = np.random.default_rng(0).integers(0, 64, (2, 5))
PMASK = np.array([[1, 1, 1, 1, 1], [0, 1, 1, 1, 1]])      # left padding


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("kw", [{}, {"dynamic": True}])
def test_gpt2_generate_compiled_as_eager(kw, masked):
    m = _st_model(_st_sd()).eval()
    am = st.tensor(PMASK) if masked else None
    want = g.greedy_generate(st, m, st.tensor(PROMPT), 8, attention_mask=am).tolist()
    assert len(want[0]) == 13
    st.reset()
    c = st.compile(m, **kw)
    got = g.greedy_generate(st, m, st.tensor(PROMPT), 8, attention_mask=am, forward=c).tolist()
    assert got == want
    graphs, breaks, fallbacks = fe_counts()
    # static: the prompt, then a graph per past length (8 calls, 8 graphs); dynamic: the
    # prompt, the first step (its past is a view into the fused qkv, not dense: static)
    # and one graph for every later past length (test_dynamic_gen.py)
    bound = 3 if kw.get("dynamic") else 8
    assert breaks == 0 and fallbacks == 0 and graphs <= bound, (graphs, breaks, fallbacks)
    # a second generation runs the same graphs
    assert g.greedy_generate(st, m, st.tensor(PROMPT), 8, attention_mask=am, forward=c).tolist() == want
    assert fe_counts()[0] == graphs


@pytest.mark.parametrize("masked", [False, True])
def test_gpt2_generate_matches_torch(masked):
    torch = pytest.importorskip("torch")
    tm, sd = _torch_sd(torch)
    tm.eval()
    m = _st_model(sd).eval()
    want = g.greedy_generate(torch, tm, torch.tensor(PROMPT), 8,
                             attention_mask=torch.tensor(PMASK) if masked else None).tolist()
    am = st.tensor(PMASK) if masked else None
    assert g.greedy_generate(st, m, st.tensor(PROMPT), 8, attention_mask=am).tolist() == want
    c = st.compile(m)
    assert g.greedy_generate(st, m, st.tensor(PROMPT), 8, attention_mask=am, forward=c).tolist() == want
    # the prefill's logits and presents, compiled, against torch's
    with torch.no_grad():
        ot = tm(torch.tensor(PROMPT), use_cache=True)
    os_ = c(st.tensor(PROMPT), use_cache=True)
    np.testing.assert_allclose(np.asarray(os_.logits.tolist()), ot.logits.numpy(), rtol=1e-4, atol=1e-5)
    assert len(os_.past_key_values) == 2 and len(os_.past_key_values[1]) == 2
    np.testing.assert_allclose(np.asarray(os_.past_key_values[1][0].tolist()),
                               ot.past_key_values[1][0].numpy(), rtol=1e-4, atol=1e-5)
    assert list(os_.keys()) == ["logits", "past_key_values"]


# ---- dynamic shapes: split / chunk / addmm keep their sizes symbolic


def _rand(*shape, seed=0):
    return st.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("how", ["method", "function", "sections", "chunk"])
def test_split_on_a_static_dim_keeps_other_sizes_dynamic(how):
    def f(x):
        if how == "method":
            q, k, v = x.split(4, dim=2)
        elif how == "function":
            q, k, v = st.split(x, 4, dim=-1)
        elif how == "sections":
            q, k, v = x.split([4, 4, 4], dim=2)
        else:
            q, k, v = x.chunk(3, dim=2)
        return q * 2 + k - v
    inputs = [(_rand(2, n, 12, seed=n),) for n in (5, 6, 7)]
    graphs, got, want = _dyn_graphs(f, inputs)
    _same(got, want)
    assert graphs == 1, graphs          # a graph per sequence length before


def test_split_along_a_dynamic_dim_guards_its_piece_count():
    # splitting the symbolic dim itself: a graph per number of pieces (5 and 6 rows make
    # three pieces of 2, the last one of n - 4 rows; 7 makes four)
    inputs = [(_rand(n, 3, seed=n),) for n in (5, 6, 7, 5)]
    graphs, got, want = _dyn_graphs(lambda x: x.split(2)[-1] * 1, inputs)
    _same(got, want)
    assert [tuple(t.shape) for t in got] == [(1, 3), (2, 3), (1, 3), (1, 3)]
    assert graphs == 2, graphs
    graphs, got, want = _dyn_graphs(lambda x: len(x.chunk(3)) + x.chunk(3)[0] * 1, inputs)
    _same(got, want)


def test_split_matches_torch_views():
    torch = pytest.importorskip("torch")
    a = np.arange(2 * 3 * 10, dtype=np.float32).reshape(2, 3, 10)
    for arg, dim in ((3, 2), ([2, 3, 5], -1), (4, 2), (1, 1), (5, 0), ([0, 10], 2)):
        ts = torch.tensor(a).split(arg, dim=dim)
        ss = st.tensor(a).split(arg, dim=dim)
        assert len(ss) == len(ts)
        for s, t in zip(ss, ts):
            assert tuple(s.shape) == tuple(t.shape) and s.stride() == t.stride()
            np.testing.assert_array_equal(np.asarray(s.tolist()).reshape(tuple(t.shape)), t.numpy())
    # still views: a write through a piece lands in the base
    x = st.tensor(a)
    x.split(5, dim=2)[1].fill_(-1)
    assert np.asarray(x.tolist())[:, :, 5:].max() == -1 and np.asarray(x.tolist())[:, :, :5].min() >= 0


def test_mha_packed_projection_still_one_graph():
    # _in_projection_packed's chunk, run for real, specialized every size once split was
    # followed under dynamic shapes; it is followed too now
    st.manual_seed(0)
    mha = st.nn.MultiheadAttention(16, 4, batch_first=True)
    inputs = [(_rand(b, n, 16, seed=n),) for b, n in ((3, 7), (2, 9), (4, 5))]
    with st.no_grad():
        graphs, got, want = _dyn_graphs(lambda x: mha(x, x, x, need_weights=False)[0], inputs)
    _same(got, want)
    assert graphs == 1, graphs


def test_addmm_keeps_rows_dynamic():
    w, b = _rand(8, 12, seed=1), _rand(12, seed=2)
    bb = _rand(1, 1, 12, seed=3)
    inputs = [(_rand(2, n, 8, seed=n),) for n in (5, 6, 7)]

    def conv1d(x):          # HF's Conv1D: addmm over batch * seq rows
        size_out = x.size()[:-1] + (12,)
        return st.addmm(b, x.view(-1, x.size(-1)), w, beta=0.5, alpha=2.0).view(size_out)

    graphs, got, want = _dyn_graphs(conv1d, inputs)
    _same(got, want)
    assert graphs == 1, graphs
    graphs, got, want = _dyn_graphs(lambda x: st.baddbmm(bb, x, w.expand(2, 8, 12)), inputs)
    _same(got, want)
    assert graphs == 1, graphs


def test_addmm_matches_torch():
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(4)
    x, w, b = (r.standard_normal(s).astype(np.float32) for s in ((6, 8), (8, 12), (12,)))
    want = torch.addmm(torch.tensor(b), torch.tensor(x), torch.tensor(w), beta=0.5, alpha=2.0)
    c = st.compile(lambda x: st.addmm(st.tensor(b), x, st.tensor(w), beta=0.5, alpha=2.0), dynamic=True)
    np.testing.assert_allclose(np.asarray(c(st.tensor(x)).tolist()), want.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        st.addmm(st.tensor(b), st.tensor(x), st.tensor(x))


def test_gpt2_mlp_and_c_attn_one_graph_for_every_length():
    m = _st_model(_st_sd()).eval()
    blk = m.transformer.h[0]

    def f(x):
        q, k, v = blk.attn.c_attn(x).split(32, dim=2)
        return blk.mlp(q + k + v)

    with st.no_grad():
        graphs, got, want = _dyn_graphs(f, [(_rand(2, n, 32, seed=n),) for n in (5, 6, 7, 9)])
    _same(got, want)
    assert graphs == 1, graphs
