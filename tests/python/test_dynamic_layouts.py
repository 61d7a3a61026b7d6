# Dynamic shapes for frame arguments that are not contiguous: a transposed
# tensor, a slice of a fixed buffer (buf[:, :n], a padded batch cut to its
# length), an expanded one. Their guard checks the kind of the layout
# (frontend/guards.c dyn_layout_match), so one graph serves every size of the
# same kind; before, each new size compiled a graph of its own. Results,
# gradients and in-place writes are checked against torch, and a layout of
# another kind (contiguous, a buffer cut to its full length) gets its own graph.
import numpy as np
import pytest

import symtrace as st

torch = pytest.importorskip("torch")


def graphs():
    return st._C._fe_stats()["graphs"]


@pytest.fixture(autouse=True)
def _fresh():
    st.reset()
    yield
    st.reset()


def both(a):
    return st.tensor(a), torch.tensor(a)


def test_transposed_argument_one_graph_for_all_sizes():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 4)).astype(np.float32)

    def f(L, x, w):
        return (x @ w).relu().sum(-1) * 2

    g = st.compile(lambda x, w: f(st, x, w), dynamic=True)
    for n in (3, 5, 7, 9, 12):
        a = rng.standard_normal((8, n)).astype(np.float32)
        (xs, xt), (ws, wt) = both(a), both(w)
        xs, xt = xs.t(), xt.t()                 # [n, 8], strides (1, n)
        assert xs.stride() == xt.stride()
        np.testing.assert_allclose(g(xs, ws).numpy(), f(torch, xt, wt).numpy(), rtol=1e-5, atol=1e-6)
    assert graphs() == 1


def test_slice_of_a_padded_buffer_goes_dynamic_by_default():
    """The automatic dynamic of a plain st.compile: the second size makes the graph
    dynamic, and later lengths cut from the same buffer reuse it."""
    rng = np.random.default_rng(1)
    buf_np = rng.standard_normal((4, 64, 8)).astype(np.float32)
    w_np = rng.standard_normal((8, 8)).astype(np.float32)
    bs, bt = both(buf_np)
    ws, wt = both(w_np)

    def f(x, w):
        h = (x @ w).tanh()
        return h.mean(1), h.amax(1)

    g = st.compile(f)
    for n in (3, 5, 7, 9, 11, 20, 33):
        got = g(bs[:, :n], ws)
        want = f(bt[:, :n], wt)
        for p, q in zip(got, want):
            np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
    assert graphs() == 2


def test_views_and_reshapes_of_a_sliced_argument():
    """x = buf[:, :n]: its last two dims merge (view works), its first two do not
    (reshape copies)."""
    rng = np.random.default_rng(2)
    buf_np = rng.standard_normal((3, 40, 4)).astype(np.float32)
    bs, bt = both(buf_np)

    def f(x):
        flat = x.view(x.shape[0], -1)           # dims 1, 2 merge
        r = x.reshape(-1, x.shape[2])           # dims 0, 1 do not: a copy
        return r.sum(0), flat.sum(1), x.is_contiguous()

    g = st.compile(f, dynamic=True)
    for n in (5, 6, 9, 13):
        got = g(bs[:, :n])
        want = f(bt[:, :n])
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), rtol=1e-5, atol=1e-5)
        assert got[2] is False and want[2] is False
    assert graphs() == 1


def test_write_into_a_sliced_argument_lands_in_the_buffer():
    """(A view of an argument alive across a write into it still makes a graph per
    size, contiguous or not: not covered here.)"""
    rng = np.random.default_rng(6)
    buf_np = rng.standard_normal((3, 40, 4)).astype(np.float32)
    bs, bt = both(buf_np)

    def f(x):
        x.mul_(2)
        return x.sum(1)

    g = st.compile(f, dynamic=True)
    for n in (5, 6, 9, 13):
        np.testing.assert_allclose(g(bs[:, :n]).numpy(), f(bt[:, :n]).numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(bs.numpy(), bt.numpy(), rtol=1e-6)
    assert graphs() == 1


def test_a_layout_of_another_kind_gets_its_own_graph():
    rng = np.random.default_rng(3)
    buf_np = rng.standard_normal((2, 16, 3)).astype(np.float32)
    bs, bt = both(buf_np)

    def f(x):
        return (x * 3).softmax(1), x.is_contiguous()

    g = st.compile(f, dynamic=True)
    calls = [bs[:, :5], bs[:, :7], bs[:, :16], st.tensor(buf_np[:, :9].copy()), bs[:, :11],
             bs[:, :8].transpose(0, 1), bs[:, :10].transpose(0, 1)]
    wants = [bt[:, :5], bt[:, :7], bt[:, :16], torch.tensor(buf_np[:, :9].copy()), bt[:, :11],
             bt[:, :8].transpose(0, 1), bt[:, :10].transpose(0, 1)]
    for xs, xt in zip(calls, wants):
        (a, ca), (b, cb) = g(xs), f(xt)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
        assert ca == cb
    # a slice, a contiguous tensor (bs[:, :16] is one, as the copy), a transposed slice
    assert graphs() == 3


def test_expanded_argument():
    rng = np.random.default_rng(4)
    v_np = rng.standard_normal(6).astype(np.float32)
    vs, vt = both(v_np)

    def f(x):
        return x.softmax(-1).sum(0)

    g = st.compile(f, dynamic=True)
    for n in (2, 3, 8, 17):
        xs, xt = vs.expand(n, 6), vt.expand(n, 6)
        assert xs.stride() == (0, 1)
        np.testing.assert_allclose(g(xs).numpy(), f(xt).numpy(), rtol=1e-5, atol=1e-6)
    assert graphs() == 1


def test_gradient_of_a_transposed_leaf():
    rng = np.random.default_rng(5)
    w_np = rng.standard_normal((6, 5)).astype(np.float32)

    def f(x, w):
        return ((x @ w).sigmoid() * x.sum(1, keepdim=True)).sum()

    g = st.compile(f, dynamic=True)
    ws, wt = both(w_np)
    for n in (3, 4, 7, 10):
        a = rng.standard_normal((6, n)).astype(np.float32)
        xs = st.tensor(a).t().detach().requires_grad_(True)
        xt = torch.tensor(a).t().detach().requires_grad_(True)
        g(xs, ws).backward()
        f(xt, wt).backward()
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
        assert xs.grad.shape == (n, 6)
    assert graphs() == 1


def test_stride_read_in_the_frame_stays_correct():
    """x.stride() of a transposed argument depends on its size: it pins the sizes
    (a graph per size, as for contiguous arguments), never a stale value."""
    def f(x):
        return x * x.stride(1)

    g = st.compile(f, dynamic=True)
    for n in (3, 4, 6):
        a = np.arange(2.0 * n, dtype=np.float32).reshape(2, n)
        xs, xt = st.tensor(a).t(), torch.tensor(a).t()
        np.testing.assert_allclose(g(xs).numpy(), f(xt).numpy())


def test_guard_text_names_the_layout(monkeypatch):
    monkeypatch.setenv("SYMTRACE_DYNAMIC", "1")

    def f(x):
        return x + 1

    out = st.explain(f, st.randn(4, 6).t())
    text = "\n".join(str(x) for x in out.guards)
    assert "(* any size >= 2) layout as stride=[1, 6]" in text, text
