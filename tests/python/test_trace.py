# Trace capture (runtime/trace.c through _C._trace_begin/_trace_end) and
# AOTAutograd-style backward graphs (_C._backward_graph): a small MLP and a
# TransformerEncoderLayer written with symtrace.nn are traced while running
# eagerly; the printed StatementIR must name their ops, re-running the
# traced graph gives the eager loss, and the backward graph (fed the values
# the forward-with-saves graph keeps) gives the eager tape's gradients.
# Also: in-place ops become SSA values, PyLayer and aliased in-place writes
# fail the trace with a reason, bad arguments raise, nothing crashes.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C
import symtrace.nn as nn
import symtrace.nn.functional as F


def trace(fn, *args, candidates=()):
    _C._trace_begin()
    try:
        out = fn(*args)
    except BaseException:
        _C._trace_abort()
        raise
    outs = out if isinstance(out, (tuple, list)) else (out,)
    graph, inputs = _C._trace_end(tuple(outs), tuple(candidates) + tuple(args))
    return out, graph, inputs


def np_of(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def backward_via_graph(graph, inputs, params):
    """Gradients of output 0 w.r.t. params (tensors among inputs) through the
    backward graph: run the forward-with-saves graph, feed saved + ones."""
    ids = [v for v, _ in _C._graph_inputs(graph)]
    pos = {id(t): k for k, t in enumerate(inputs)}
    wrt = [ids[pos[id(p)]] for p in params]
    bwd, saved_ids, fwd_saving = _C._backward_graph(graph, wrt)
    nout = len(_C._graph_outputs(graph))
    fouts = _C._run_graph(fwd_saving, inputs)
    assert len(fouts) == nout + len(saved_ids)
    seed = st.ones_like(fouts[0].detach())
    grads = _C._run_graph(bwd, tuple(fouts[nout:]) + (seed,))
    return bwd, saved_ids, grads


def check_against_tape(loss, graph, inputs, params, rtol=1e-4, atol=1e-5):
    for p in params:
        p.grad = None
    loss.backward()
    bwd, saved, grads = backward_via_graph(graph, inputs, params)
    assert len(grads) == len(params)
    for p, g in zip(params, grads):
        assert tuple(g.shape) == tuple(p.shape)
        assert g.dtype == p.dtype
        np.testing.assert_allclose(np_of(g), np_of(p.grad), rtol=rtol, atol=atol)
    return bwd, saved


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x, y):
        h = F.relu(self.fc1(x))
        return F.cross_entropy(self.fc2(h), y)


def test_trace_mlp_matches_eager_and_tape():
    st.manual_seed(0)
    model = MLP()
    x = st.randn(5, 6)
    y = st.tensor([0, 3, 1, 2, 3])
    loss, graph, inputs = trace(model, x, y, candidates=list(model.parameters()))
    text = _C._graph_print(graph)
    assert "StatementIR" in text
    for op in ("linear", "relu", "cross_entropy"):
        assert op in text, text
    params = list(model.parameters())
    # every parameter is a param_N input, found as itself
    kinds = dict(zip((id(t) for t in inputs), (p for _, p in _C._graph_inputs(graph))))
    for p in params:
        assert kinds[id(p)] is True
    assert kinds[id(x)] is False
    (again,) = _C._run_graph(graph, inputs)
    np.testing.assert_allclose(np_of(again), np_of(loss), rtol=1e-6)
    bwd, saved = check_against_tape(loss, graph, inputs, params)
    assert "StatementIR" in _C._graph_print(bwd)


def test_trace_transformer_encoder_layer():
    st.manual_seed(1)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                       dropout=0.0, batch_first=True)
    head = nn.Linear(16, 3)
    x = st.randn(2, 5, 16)
    y = st.tensor([0, 2, 1, 1, 0, 2, 2, 1, 0, 0])

    def fwd(x, y):
        h = layer(x)
        logits = head(h).reshape(10, 3)
        return F.cross_entropy(logits, y)

    params = list(layer.parameters()) + list(head.parameters())
    loss, graph, inputs = trace(fwd, x, y, candidates=params)
    text = _C._graph_print(graph)
    for op in ("layer_norm", "softmax", "matmul", "reshape", "permute", "cross_entropy"):
        assert op in text, op
    (again,) = _C._run_graph(graph, inputs)
    np.testing.assert_allclose(np_of(again), np_of(loss), rtol=1e-5, atol=1e-6)
    used = [p for p in params if any(p is t for t in inputs)]
    assert len(used) == len(params)
    check_against_tape(loss, graph, inputs, used, rtol=1e-3, atol=1e-5)


def test_backward_graph_float64_views_and_scalars():
    a = st.randn(3, 4, dtype=st.float64, requires_grad=True)
    b = st.randn(4, dtype=st.float64, requires_grad=True)

    def f(a, b):
        t = (a * 2.0 + b).transpose(0, 1)          # scalar const, broadcast, view
        u = t[1:3].unsqueeze(0).squeeze(0)          # slice, unsqueeze, squeeze
        return (u.exp() * a.sum()).mean() + (a * a).sum()   # a used several times

    loss, graph, inputs = trace(f, a, b)
    check_against_tape(loss, graph, inputs, [a, b], rtol=1e-9, atol=1e-12)


def test_inplace_is_ssa():
    w = st.randn(3, dtype=st.float64, requires_grad=True)

    def f(w):
        h = w * 3.0
        h.add_(1.0)       # in-place: a new value from here on
        h.mul_(w)
        return h.sum()

    loss, graph, inputs = trace(f, w)
    text = _C._graph_print(graph)
    assert text.count("mul(") >= 2 and "add(" in text
    (again,) = _C._run_graph(graph, inputs)
    np.testing.assert_allclose(np_of(again), np_of(loss))
    check_against_tape(loss, graph, inputs, [w], rtol=1e-9, atol=1e-12)


def test_saved_values_are_minimal():
    x = st.randn(3, 4, dtype=st.float64)
    b = st.randn(4, dtype=st.float64, requires_grad=True)
    loss, graph, inputs = trace(lambda x, b: (x + b - b).mean(), x, b)
    _, saved, _ = backward_via_graph(graph, inputs, [b])
    assert saved == ()


def test_non_differentiable_and_unused():
    w = st.randn(4, dtype=st.float64, requires_grad=True)
    u = st.randn(4, dtype=st.float64, requires_grad=True)
    loss, graph, inputs = trace(lambda w: (w * (w > 0).double()).sum(), w)
    check_against_tape(loss, graph, inputs, [w], rtol=1e-9, atol=1e-12)
    ids = [v for v, _ in _C._graph_inputs(graph)]
    bwd, saved, fs = _C._backward_graph(graph, ids)
    assert len(_C._graph_outputs(bwd)) == len(ids)
    del u


def test_pylayer_is_captured_as_a_region():
    class Double(st.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = st.randn(3, requires_grad=True)
    _C._trace_begin()
    y = Double.apply(x).sum()
    # a custom-gradient region now (tests/python/test_pylayer_compiled.py)
    graph, inputs = _C._trace_end((y,))
    assert not _C._trace_active()
    y.backward()   # eager still works
    np.testing.assert_allclose(np_of(x.grad), np.full(3, 2.0))


def test_inplace_into_view_is_written_through():
    # the base's new value is stated with where/scatter_add (runtime/trace.c)
    x = st.randn(4, 4)
    _C._trace_begin()
    h = x * 1.0
    v = h[1:3]
    v.add_(1.0)
    graph, inputs = _C._trace_end((h,), (x,))
    (got,) = _C._run_graph(graph, inputs)
    np.testing.assert_allclose(np_of(got), np_of(h), rtol=1e-6)
    # an alias made by a traced detach() is written through (no gradient
    # crosses it)
    a = st.randn(4)
    a0 = np_of(a).copy()
    _C._trace_begin()
    b = a.detach()
    c = a * 1.0
    b.add_(1.0)
    c = c + a
    graph, inputs = _C._trace_end((c,))
    a.copy_(st.tensor(a0))
    (got,) = _C._run_graph(graph, inputs)
    np.testing.assert_allclose(np_of(got), 2 * a0 + 1, rtol=1e-6)
    # an alias the trace did not make still fails
    a = st.randn(4)
    b = a.detach()
    _C._trace_begin()
    c = a * 1.0
    b.add_(1.0)
    c = c + a
    with pytest.raises(RuntimeError, match="in-place"):
        _C._trace_end((c,))


def test_bad_arguments():
    with pytest.raises(RuntimeError):
        _C._trace_end((st.ones(1),))           # no trace
    _C._trace_begin()
    with pytest.raises(RuntimeError):
        _C._trace_begin()                      # nested
    with pytest.raises(TypeError):
        _C._trace_end((1, 2))
    assert not _C._trace_active()
    with pytest.raises(TypeError):
        _C._graph_print(object())
    with pytest.raises(TypeError):
        _C._run_graph(None, ())
    _, graph, inputs = trace(lambda a: (a * a).sum(), st.randn(3))
    with pytest.raises(ValueError):
        _C._run_graph(graph, ())
    with pytest.raises(ValueError):
        _C._run_graph(graph, (st.randn(3, dtype=st.float64),))
    with pytest.raises(ValueError):
        _C._run_graph(graph, inputs, backend="nope")
    with pytest.raises((IndexError, ValueError)):
        _C._backward_graph(graph, (12345,))
    with pytest.raises(TypeError):
        _C._backward_graph(graph, ("a",))
    _C._trace_begin()
    _C._trace_abort()
    assert not _C._trace_active()


def test_backward_inside_trace_is_not_traced():
    w = st.randn(3, requires_grad=True)
    _C._trace_begin()
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    graph, inputs = _C._trace_end((loss,), (w,))
    text = _C._graph_print(graph)
    assert text.count("mul(") == 1
    np.testing.assert_allclose(np_of(w.grad), 2 * np_of(w), rtol=1e-6)


def test_no_grad_on_a_param_is_a_stop_gradient():
    # traced as a stop-gradient region (its gradients: tests/python/test_cfn.py)
    w = st.randn(3, requires_grad=True)
    _C._trace_begin()
    with st.no_grad():
        c = w * 2.0
    loss = (w * c).sum()
    graph, inputs = _C._trace_end((loss,))
    assert "mul" in _C._graph_print(graph)
    # without grad-requiring operands no_grad is harmless
    x = st.randn(3)
    _C._trace_begin()
    with st.no_grad():
        y = (x * 2.0).sum()
    graph, inputs = _C._trace_end((y,), (x,))
    assert inputs[0] is x
