# tests/python/test_dynamic_gen.py - dynamic shapes for generation with a KV cache: a
# slice of a fixed buffer by a symbolic bound (the causal mask's bias[:, :, k-q:k, :k])
# keeps its symbol (probe values within the bound's guard), sizes a constant apart (the
# attention mask of past length + 1) share one symbol at an offset, so GPT-2 greedy
# generation with past_key_values under dynamic=True runs in a prefill and two decode
# graphs; and the fuzz_dynints leftovers (what a compiled call did differently from
# eager). Each compiled function is called 3+ times, against eager and torch.
import sys

import numpy as np
import pytest

import symtrace as st
from compile_model_helpers import fresh_frontend, fe_counts  # noqa: F401
from compile_model_helpers import dynamic_runs as _runs, assert_same_results as _same


def _np(t):
    return np.asarray(t.tolist())


# ---- 1. a slice of a fixed buffer bounded by a symbolic size
BUF = np.tril(np.ones((32, 32), np.float32))


def _buffer_slice(L, buf, x):
    n = x.size(0)
    return x * buf[n - 1:n, :n]          # [1, n] rows of a [32, 32] buffer


def test_slice_of_a_fixed_buffer_keeps_the_symbol():
    buf = st.tensor(BUF)
    inputs = [(st.tensor(np.arange(n, dtype=np.float32) + 1),) for n in (5, 6, 7, 9)]
    graphs, got, want = _runs(lambda x: _buffer_slice(st, buf, x), inputs)
    _same(got, want)
    assert graphs == 1, graphs           # a graph per size before (the probes passed 32)
    torch = pytest.importorskip("torch")
    tb = torch.tensor(BUF)
    for (x,), g in zip(inputs, got):
        np.testing.assert_allclose(_np(g), _buffer_slice(torch, tb, torch.tensor(_np(x))).numpy())


def test_slice_of_a_fixed_buffer_past_its_size_guards():
    # n > 32: the slice clamps; the graph made for n <= 32 must not be reused
    buf = st.tensor(BUF)
    f = lambda x: x[:32] + buf[0, : x.size(0)].sum()  # noqa: E731
    inputs = [(st.ones(n),) for n in (5, 6, 40, 7)]
    graphs, got, want = _runs(f, inputs)
    _same(got, want)
    assert [tuple(g.shape) for g in got] == [(5,), (6,), (32,), (7,)]
    assert graphs == 2, graphs


def _two_bounds(L, buf, x, y):
    a, b = x.size(0), y.size(0)
    return buf[a - 1:a, :b] * y + x[:1].sum()


def test_two_symbols_bounded_by_a_small_buffer():
    # both sizes <= 8: each probed at its own primes below the bound
    bv = np.arange(64, dtype=np.float32).reshape(8, 8)
    buf = st.tensor(bv)
    rng = np.random.default_rng(3)
    sizes = [(3, 4), (5, 6), (6, 3), (2, 8), (7, 7)]
    inputs = [(st.tensor(rng.standard_normal(a).astype(np.float32)),
               st.tensor(rng.standard_normal(b).astype(np.float32))) for a, b in sizes]
    graphs, got, want = _runs(lambda x, y: _two_bounds(st, buf, x, y), inputs)
    _same(got, want)
    assert graphs == 1, graphs           # a graph per size pair before
    torch = pytest.importorskip("torch")
    for (x, y), g_ in zip(inputs, got):
        t = _two_bounds(torch, torch.tensor(bv), torch.tensor(_np(x)), torch.tensor(_np(y)))
        np.testing.assert_allclose(_np(g_), t.numpy(), rtol=1e-5, atol=1e-5)


def _masked_scores(L, past, k, mask):
    keys = L.cat([past, k], dim=1)                   # [b, past + 1]
    return keys * (1.0 - mask.to(keys.dtype))        # mask: [b, past + 1]


def test_sizes_one_apart_share_a_symbol():
    # the attention mask has past + 1 columns: guarded s_mask == s_past + 1, one graph
    rng = np.random.default_rng(0)
    inputs = []
    for n in (5, 6, 7, 8):
        inputs.append((st.tensor(rng.standard_normal((2, n)).astype(np.float32)),
                       st.tensor(rng.standard_normal((2, 1)).astype(np.float32)),
                       st.tensor(rng.integers(0, 2, (2, n + 1)))))
    graphs, got, want = _runs(lambda p, k, m: _masked_scores(st, p, k, m), inputs)
    _same(got, want)
    assert graphs == 1, graphs
    torch = pytest.importorskip("torch")
    for a, g in zip(inputs, got):
        t = _masked_scores(torch, *[torch.tensor(_np(v)) for v in a])
        np.testing.assert_allclose(_np(g), t.numpy(), rtol=1e-6)


def test_sizes_one_apart_guard_the_offset():
    # the same code with a mask of other sizes broadcasts differently: no reuse
    f = lambda p, m: st.cat([p, st.zeros(1)]) + m  # noqa: E731
    inputs = [(st.ones(5), st.ones(6)), (st.ones(6), st.ones(7)), (st.ones(6), st.ones(1)),
              (st.ones(8), st.ones(9))]
    graphs, got, want = _runs(f, inputs)
    _same(got, want)
    assert graphs <= 2, graphs
    with pytest.raises(Exception):
        st.compile(f, dynamic=True)(st.ones(6), st.ones(3))


@pytest.mark.parametrize("masked", [False, True])
def test_gpt2_generation_prefill_and_two_decode_graphs(masked):
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    import hf_gpt2_model as g
    import test_compile_gpt2_style as T
    m = T._st_model(T._st_sd()).eval()
    am = st.tensor(T.PMASK) if masked else None
    want = g.greedy_generate(st, m, st.tensor(T.PROMPT), 12, attention_mask=am).tolist()
    st.reset()
    c = st.compile(m, dynamic=True)
    for _ in range(3):
        got = g.greedy_generate(st, m, st.tensor(T.PROMPT), 12, attention_mask=am, forward=c)
        assert got.tolist() == want
    graphs, breaks, fallbacks = fe_counts()
    # the prompt, the first step (its past is a view into the fused qkv: not dense, its
    # sizes static), then one graph for every past length
    assert (graphs, breaks, fallbacks) == (3, 0, 0)


# ---- 2. cat / pad of an empty slice keep requires_grad (and the gradient) when cached
def _empty_cat(L, x, n):
    return L.cat([x[n:], L.zeros(2)])


def _empty_pad(L, x, n):
    return L.nn.functional.pad(x[n:], (1, 2))


def _empty_cat_2d(L, x, n):
    return L.cat([x[:, n:], L.ones(3, 2)], 1) * 2


@pytest.mark.parametrize("fn, shape", [(_empty_cat, (5,)), (_empty_pad, (5,)),
                                       (_empty_cat_2d, (3, 5))])
@pytest.mark.parametrize("dynamic", [True, None])
def test_cat_of_an_empty_slice_requires_grad_every_call(fn, shape, dynamic):
    xv = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    st.reset()
    c = st.compile(lambda x, n: fn(st, x, n), dynamic=dynamic)
    want_x = st.tensor(xv, requires_grad=True)
    want = fn(st, want_x, 5)
    want.sum().backward()
    assert want.requires_grad
    for _ in range(4):
        x = st.tensor(xv, requires_grad=True)
        y = c(x, 5)
        assert y.requires_grad, "a cached call lost requires_grad"
        assert tuple(y.shape) == tuple(want.shape)
        np.testing.assert_array_equal(_np(y), _np(want))
        y.sum().backward()
        np.testing.assert_array_equal(_np(x.grad), _np(want_x.grad))
    for n in (2, 3):       # non-empty slices still differentiate
        x = st.tensor(xv, requires_grad=True)
        c(x, n).sum().backward()
        x2 = st.tensor(xv, requires_grad=True)
        fn(st, x2, n).sum().backward()
        np.testing.assert_allclose(_np(x.grad), _np(x2.grad))
    torch = pytest.importorskip("torch")
    tx = torch.tensor(xv, requires_grad=True)
    ty = fn(torch, tx, 5)
    assert ty.requires_grad
    ty.sum().backward()
    np.testing.assert_array_equal(_np(want_x.grad), tx.grad.numpy())
    np.testing.assert_array_equal(_np(want), ty.detach().numpy())


def test_cat_of_an_empty_part_keeps_special_values():
    # the empty part's dependence must not change -0.0, inf or nan
    v = st.tensor(np.array([-0.0, np.inf, -np.inf, np.nan], np.float32))
    f = lambda x, v, n: st.cat([v, x[n:]])  # noqa: E731
    c = st.compile(f, dynamic=True)
    for _ in range(3):
        x = st.ones(3, requires_grad=True)
        y = c(x, v, 3)
        assert y.requires_grad
        got = _np(y)
        assert np.signbit(got[0]) and got[0] == 0
        assert got[1] == np.inf and got[2] == -np.inf and np.isnan(got[3])


# ---- 3. fuzz_dynints leftovers: writes through a slice view with a symbolic bound
def _aug_slice(L, x, n):
    t = L.ones(n, 1) * x.sum()
    t[:n] *= 2                       # slice, mul_, then the slice assigned back
    u = t.clone()
    u[: n - 1] += t[1:]              # a value of the slice's shape: no expand
    return t, u


def _view_write(L, x, n):
    t = L.ones(2, n) * x.mean()
    t[:, 1:n].mul_(2.5)              # a write through a view of a symbolic slice
    return t * 1


@pytest.mark.parametrize("fn", [_aug_slice, _view_write])
def test_writes_through_a_symbolic_slice_stay_dynamic(fn):
    xv = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    inputs = [(st.tensor(xv), n) for n in (5, 9, 4, 7)]
    graphs, got, want = _runs(lambda x, n: fn(st, x, n), inputs)
    for g_, w in zip(got, want):
        _same(g_ if isinstance(g_, tuple) else (g_,), w if isinstance(w, tuple) else (w,))
    assert graphs == 1, graphs       # a graph per n before (translated static)
    torch = pytest.importorskip("torch")
    for (x, n), g_ in zip(inputs, got):
        t = fn(torch, torch.tensor(xv), n)
        for a, b in zip(g_ if isinstance(g_, tuple) else (g_,), t if isinstance(t, tuple) else (t,)):
            np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-5, atol=1e-6)


def test_stride_read_in_python_is_not_baked():
    # x.stride(0) of a [4, n] tensor is n: the traced value was kept for every n
    def f(x):
        return x * x.stride(0) + x.stride()[1]
    inputs = [(st.ones(4, n),) for n in (3, 5, 6, 3)]
    graphs, got, want = _runs(f, inputs)
    _same(got, want)
    assert [float(g[0, 0]) for g in got] == [4.0, 6.0, 7.0, 4.0]
    torch = pytest.importorskip("torch")
    for (x,), g_ in zip(inputs, got):
        np.testing.assert_array_equal(_np(g_), f(torch.ones(*x.shape)).numpy())
