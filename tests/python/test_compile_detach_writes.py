# Writes through a detached alias (x.detach().add_(1), p.data.add_(g)) inside
# symtrace.compile: the write reaches the tensor it was detached from (and
# every view of its storage), while autograd keeps that tensor's history and
# sends nothing into what was written (runtime/trace.c, detached_write).
# Before, such a write failed the trace (a graph break), and a detached alias
# handed across the break was a copy, so cached calls lost the write.
# Compared with eager symtrace and with torch (skipped without torch);
# compiled functions are called three times with fresh data.
import numpy as np
import pytest

import symtrace as st


def run(L, f, a, b):
    x = L.tensor(a.copy(), requires_grad=True)
    w = L.tensor(b.copy(), requires_grad=True)
    out = f(L, x, w)
    out.backward()
    return [t.detach().numpy().copy() for t in (out, x.grad, w.grad, x)]


def f_plain(L, x, w):
    y = x * w
    y.detach().add_(1)
    return (y * x).sum()


def f_view(L, x, w):
    y = x * 2
    v = y.t()
    v.detach().mul_(3)
    return (v * w.t()).sum() + y.sum()


def f_base_written(L, x, w):
    y = x + 0
    d = y.detach()
    y.mul_(w)
    return (d * x).sum() + y.sum()


def f_data(L, x, w):
    y = (x * w).sum(0)
    y.data.add_(5)
    return (y * y).sum()


def f_no_grad(L, x, w):
    y = x * 1
    with L.no_grad():
        y.detach()[0].add_(w[0])
    return (y * w).sum()


def f_grad_operand(L, x, w):
    # the written alias comes to require grad; the base does not get w's
    y = x * 1
    d = y.detach()
    d.add_(w)
    return (y * y).sum() + (d * 2).sum()


CASES = [f_plain, f_view, f_base_written, f_data, f_no_grad, f_grad_operand]


def expected(f, a, b):
    torch = pytest.importorskip("torch")
    return run(torch, f, a, b)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_compiled_matches_eager_and_torch(f):
    cf = st.compile(lambda x, w: f(st, x, w))
    before = st._C._fe_stats()["breaks"]
    rng = np.random.default_rng(3)
    for _ in range(3):
        a = rng.random((3, 3), dtype=np.float32)
        b = rng.random((3, 3), dtype=np.float32)
        want = run(st, f, a, b)
        got = run(st, lambda L, x, w: cf(x, w), a, b)
        for p, q in zip(want, got):
            np.testing.assert_allclose(q, p, rtol=1e-5, atol=1e-6)
    assert st._C._fe_stats()["breaks"] == before


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_eager_matches_torch(f):
    rng = np.random.default_rng(4)
    a = rng.random((3, 3), dtype=np.float32)
    b = rng.random((3, 3), dtype=np.float32)
    want = expected(f, a, b)
    for p, q in zip(want, run(st, f, a, b)):
        np.testing.assert_allclose(q, p, rtol=1e-5, atol=1e-6)


def test_written_gradients_by_hand():
    # y = x*w; y.detach().add_(1); loss = sum(y*x): d/dx = (y_new + w*x), d/dw = x*x
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    cf = st.compile(lambda x, w: f_plain(st, x, w))
    for k in range(3):
        out, gx, gw, _ = run(st, lambda L, x, w: cf(x, w), a + k, b)
        x = a + k
        y = x * b + 1
        np.testing.assert_allclose(out, (y * x).sum(), rtol=1e-6)
        np.testing.assert_allclose(gx, y + b * x, rtol=1e-6)
        np.testing.assert_allclose(gw, x * x, rtol=1e-6)


def test_input_view_written_through_detach():
    # v = x.t(); v.mul_(2); v.detach().add_(1): x ends as 2x + 1 in every call
    def f(x):
        v = x.t()
        v.mul_(2)
        v.detach().add_(1)
        return x * 1

    cf = st.compile(f)
    for k in range(3):
        a = np.arange(6, dtype=np.float32).reshape(2, 3) + k
        x = st.tensor(a.copy())
        r = cf(x)
        np.testing.assert_array_equal(x.numpy(), 2 * a + 1)
        np.testing.assert_array_equal(r.numpy(), 2 * a + 1)


def test_parameter_update_through_data_is_one_graph():
    # the hand-written SGD idiom: p.data.add_(p.grad, alpha=-lr)
    def upd(m):
        for p in m.parameters():
            p.data.add_(p.grad, alpha=-0.1)

    st.manual_seed(0)
    ref = st.nn.Linear(4, 2)
    m = st.nn.Linear(4, 2)
    with st.no_grad():
        for p, q in zip(ref.parameters(), m.parameters()):
            q.copy_(p)
    cu = st.compile(upd)
    g0 = st._C._fe_stats()
    rng = np.random.default_rng(5)
    for _ in range(4):
        x = rng.random((3, 4), dtype=np.float32)
        for mod, u in ((ref, upd), (m, cu)):
            for p in mod.parameters():
                p.grad = None
            mod(st.tensor(x)).pow(2).sum().backward()
            u(mod)
        for p, q in zip(ref.parameters(), m.parameters()):
            np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-7)
            assert q.requires_grad and q.is_leaf
    g1 = st._C._fe_stats()
    assert g1["breaks"] == g0["breaks"]
    assert g1["graphs"] - g0["graphs"] == 1


# ---- writes through .data move no version (torch's .data has a counter of its own):
# a tensor saved for backward, written through .data, is read by the backward as
# written; through .detach() (which shares the version) the backward refuses
def _write_saved_out(z):
    z.data.mul_(2)                      # a break: z was saved by the graph before
    return z


def _write_input(z):
    z.data[1:].add_(1)                  # written back to the input, quietly
    return z.data.sum()


def _once(L, fn, g):
    """w.grad and the version change of z after g (fn or its compiled form) wrote
    z = exp(w * x) through .data and z.sum() backpropagated"""
    w = L.ones(3, requires_grad=True)
    x = L.arange(3.0) + 1
    z = (w * x).exp()
    v0 = z._version
    r = g(z)
    z = r if fn is _write_saved_out else z
    z.sum().backward()
    return [round(v, 3) for v in w.grad.tolist()], z._version - v0


@pytest.mark.parametrize("fn", [_write_saved_out, _write_input])
def test_writes_through_data_leave_versions_as_eager(fn):
    st.reset()
    cf = st.compile(fn)
    want = _once(st, fn, fn)
    assert want[1] == 0
    for _ in range(3):
        assert _once(st, fn, cf) == want
    torch = pytest.importorskip("torch")
    assert _once(torch, fn, fn) == want
