# A call into symtrace that the translator runs for real (its ops traced into
# the graph) may read tensors it was not passed: clip_grad_norm_ reads each
# parameter's .grad. Such a tensor has no source to guard and read again on
# the next call, so the graph would keep the first call's tensor as a
# constant: stale norms, and in-place writes that miss the new gradients.
# The translator breaks the graph at such a call instead (it then runs as
# Python). An iterator argument is a break before the call, since a call
# that consumed it could not run again. nn.utils (clip_grad_norm_) is not
# such a call any more: the translator inlines it, so the .grad reads have
# sources (tests/python/test_compile_iterators.py).
import os

import numpy as np
import pytest

import symtrace as st


def _norm(ts):
    return float(np.sqrt(sum((t.numpy().astype(np.float64) ** 2).sum() for t in ts)))


def _model():
    st.manual_seed(0)
    return st.nn.Sequential(st.nn.Linear(4, 5), st.nn.Tanh(), st.nn.Linear(5, 2))


@pytest.mark.parametrize("params", ["list", "generator"])
def test_clip_grad_norm_reads_this_calls_gradients(params):
    m = _model()

    def clip():
        ps = list(m.parameters()) if params == "list" else m.parameters()
        return st.nn.utils.clip_grad_norm_(ps, 0.5)

    st.reset()
    c = st.compile(clip)
    for i in range(4):
        m.zero_grad(set_to_none=True)
        st.manual_seed(10 + i)
        (m(st.randn(3, 4)) ** 2).sum().backward()
        before = _norm(p.grad for p in m.parameters())
        total = c().item()
        assert total == pytest.approx(before, rel=1e-5), i
        assert _norm(p.grad for p in m.parameters()) == pytest.approx(0.5, rel=1e-4), i


def test_training_step_with_clipping_matches_eager():
    data = [(st.randn(6, 4), st.randn(6, 2)) for _ in range(3)]

    def run(compiled):
        m = _model()
        opt = st.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            loss = ((m(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            st.nn.utils.clip_grad_norm_(m.parameters(), 0.05)
            opt.step()
            return loss

        f = st.compile(step) if compiled else step
        st.reset()
        return [f(*data[i % 3]).item() for i in range(6)]

    np.testing.assert_allclose(run(True), run(False), rtol=1e-6)


def _grad_norm(ps):
    return (st.stack([(p.grad * p.grad).sum() for p in ps])).sum().sqrt()


def test_the_break_names_the_call():
    # a function of symtrace's (by its file) that the translator calls for
    # real, reading the .grad of the parameters it is given
    code = _grad_norm.__code__.replace(
        co_filename=os.path.join(os.path.dirname(st.__file__), "_probe_grad_norm.py"))
    grad_norm = type(_grad_norm)(code, _grad_norm.__globals__, "grad_norm")
    m = _model()
    for p in m.parameters():
        p.grad = st.ones_like(p)
    ps = list(m.parameters())

    def norm(ps):
        return grad_norm(ps)

    st.reset()
    rep = st.explain(norm, ps)
    assert any("grad_norm reads a tensor it was not passed" in b.reason
               for b in rep.break_reasons), str(rep)
    c = st.compile(norm)
    for i in range(3):
        for p in m.parameters():
            p.grad = st.ones_like(p) * (i + 1)
        assert c(ps).item() == pytest.approx(_norm(p.grad for p in ps), rel=1e-5)


def test_clip_grad_norm_is_inlined_with_sourced_gradients():
    m = _model()
    for p in m.parameters():
        p.grad = st.ones_like(p)
    ps = list(m.parameters())

    def clip(ps):
        return st.nn.utils.clip_grad_norm_(ps, 0.5)

    st.reset()
    rep = st.explain(clip, ps)
    assert rep.graph_break_count == 0, str(rep)
    assert any("L['ps'][0].grad" in g for g in rep.guards), str(rep)


def test_a_tensor_the_frame_makes_stays_a_constant_of_the_graph():
    # st.tensor(data) is made outside the trace: no source, but made by the
    # frame itself, so a call reading it does not break the graph
    def f(x):
        idx = st.tensor([2, 0])
        return st.index_select(x, 0, idx) * 2

    st.reset()
    rep = st.explain(f, st.randn(3, 2))
    assert rep.graph_break_count == 0, str(rep)
    cf = st.compile(f)
    for _ in range(3):
        x = st.randn(3, 2)
        np.testing.assert_allclose(cf(x).numpy(), f(x).numpy())


def test_as_strided_is_not_baked_into_a_graph_and_is_differentiable():
    def f(t):
        return t.as_strided((3,), (5,), 0) * 2

    st.reset()
    cf = st.compile(f)
    for _ in range(3):
        x = st.randn(4, 5)
        np.testing.assert_allclose(cf(x).numpy(), x.numpy()[:3, 0] * 2)
    assert any("as_strided" in b.reason for b in st.explain(f, x).break_reasons)
    w = st.randn(4, 5, requires_grad=True)
    v = w.as_strided((2, 2), (1, 5), 1)          # elements (0,1) (1,1) (0,2) (1,2), transposed
    assert v._base is w and v.requires_grad
    (v * st.tensor([[1., 2.], [3., 4.]])).sum().backward()
    want = np.zeros((4, 5), np.float32)
    want[0, 1], want[1, 1], want[0, 2], want[1, 2] = 1, 2, 3, 4
    np.testing.assert_allclose(w.grad.numpy(), want)
    np.testing.assert_allclose(w.detach().as_strided((2,), (1,)).numpy(), w.detach().numpy()[0, :2])


def test_tril_indices_is_a_graph_constant():
    """tril_indices / triu_indices build their coordinates on the host: the tensor is
    marked a constant of the trace (symtrace._C._trace_constant), so a compiled function
    using them is one graph with no break, retranslated (guarded) per size."""
    st.reset()

    def f(x, n):
        return x[st.tril_indices(n, n)[1]] * 2.0 + st.triu_indices(n, n, 1).sum()

    assert st.explain(f, st.arange(4.0), 4).graph_break_count == 0
    st.reset()
    c = st.compile(f)
    for n in (3, 4, 3):
        x = st.arange(float(n))
        assert c(x, n).tolist() == f(x, n).tolist()
    stats = st._C._fe_stats()
    assert stats["breaks"] == 0 and stats["translations"] == 2 and stats["hits"] == 1, stats
    st.reset()
