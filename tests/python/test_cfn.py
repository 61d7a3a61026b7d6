# Compiled functions (runtime/cfn.c) through the debug binding
# _C._cfn_from_trace (frontend/cfn_bind.c): a function is traced on real
# arguments (runtime/trace.c), the graph compiled by a backend, and the
# compiled function called again on fresh values. Its outputs must equal
# eager's, and gradients (x.grad after .backward(), through the one
# "CompiledFunctionBackward" tape node per run, AOTAutograd-style) must equal
# eager autograd's, under interp and llvm (and the "eager" debug backend).
# Also: in-place writes into inputs are written back (trace_end2), aborted
# traces restore inputs, data reads fail the trace with a reason, no_grad
# blocks and detach() are stop-gradients, bad inputs name themselves.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C
import symtrace.nn.functional as F

BACKENDS = ["interp", "llvm"]


def np_of(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def leaves(*shapes, grad=(), dtype=st.float32, seed=0):
    st.manual_seed(seed)
    out = []
    for k, s in enumerate(shapes):
        t = st.randn(*s, dtype=dtype)
        if k in grad:
            t.requires_grad_(True)
        out.append(t)
    return out


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def check(fn, shapes, grad, backend, dtype=st.float32, rtol=1e-4, atol=1e-5,
          weights=None):
    """Traces fn, then runs the compiled function and eager on fresh
    values; compares outputs and the gradients of sum(out_k * w_k) over the
    float outputs."""
    args = leaves(*shapes, grad=grad, dtype=dtype, seed=1)
    cf = _C._cfn_from_trace(fn, tuple(args), backend=backend)
    new = leaves(*shapes, grad=grad, dtype=dtype, seed=2)
    ref = [a.detach().clone() for a in new]
    for k in grad:
        ref[k].requires_grad_(True)
    got = as_tuple(cf(*new))
    exp = as_tuple(fn(*ref))
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(np_of(g), np_of(e), rtol=rtol, atol=atol)
    if not grad:
        return cf, got
    def loss(outs):
        total = None
        for k, o in enumerate(outs):
            if not o.dtype.is_floating_point or not o.requires_grad:
                continue
            w = (weights[k] if weights else 1.0 + 0.5 * k)
            term = (o * w).sum()
            total = term if total is None else total + term
        return total
    lg, le = loss(got), loss(exp)
    assert (lg is None) == (le is None)
    if lg is None:
        return cf, got
    lg.backward()
    le.backward()
    for k in grad:
        if ref[k].grad is None:
            assert new[k].grad is None or np.allclose(np_of(new[k].grad), 0)
            continue
        np.testing.assert_allclose(np_of(new[k].grad), np_of(ref[k].grad),
                                   rtol=rtol, atol=atol)
    return cf, got


def mlp(x, w1, b1, w2, b2):
    h = F.gelu(x @ w1 + b1)
    return (h @ w2 + b2).tanh()


def ln_attn(x, g, b, wq, wk):
    h = F.layer_norm(x, (x.shape[-1],), g, b)
    q, k = h @ wq, h @ wk
    a = (q @ k.transpose(0, 1) / 4.0).softmax(dim=-1)
    return a @ h


def bcast(x, r, c):
    return (x * r + c).exp() / (1 + c * c)


def two_outs(x, w):
    y = x @ w
    return y.sum(), (y * y).mean(dim=0)


def out_not_dep(x, w, z):
    return (x @ w).relu(), z * 3.0


def non_float(x, w):
    y = x @ w
    return y.argmax(dim=1), y.sigmoid()


def reductions(x, w):
    y = x * w
    return y.amax(dim=1) + y.mean(dim=1) - y.sum(dim=0).sqrt().mean()


def views(x, w):
    y = (x.reshape(2, 6) @ w).permute(1, 0)
    return y[1:, :].unsqueeze(0).squeeze(0) * 2


def many(a, b, c, d, e, f, g, h):
    # more grad inputs than an op has operands (ST_MAX_IN)
    return a * b + c * d - e * f + (g * h).sin()


_TARGET = st.tensor([1, 0, 3, 2, 1])
_IDX = st.tensor([[0, 2, 1], [3, 3, 0]])


def ce_embed(x, w, emb):
    h = F.embedding(_IDX, emb).sum(dim=1)      # gather + its scatter-add VJP
    logits = x @ w + h.mean(dim=0)
    return F.cross_entropy(logits, _TARGET), logits.log_softmax(dim=1)


CASES = [
    ("ce_embed", ce_embed, [(5, 6), (6, 4), (4, 4)], (0, 1, 2)),
    ("many_inputs", many, [(3,), (2, 3), (1, 3), (2, 1), (3,), (2, 3), (1,), (2, 3)],
     tuple(range(8))),
    ("mlp", mlp, [(4, 6), (6, 8), (8,), (8, 3), (3,)], (1, 2, 3, 4)),
    ("mlp_x_grad", mlp, [(4, 6), (6, 8), (8,), (8, 3), (3,)], (0, 1, 2, 3, 4)),
    ("ln_attn", ln_attn, [(5, 8), (8,), (8,), (8, 8), (8, 8)], (0, 1, 2, 3, 4)),
    ("bcast", bcast, [(3, 4), (4,), (3, 1)], (0, 1, 2)),
    ("two_outs", two_outs, [(3, 4), (4, 5)], (0, 1)),
    ("out_not_dep", out_not_dep, [(3, 4), (4, 5), (2,)], (1,)),
    ("non_float", non_float, [(3, 4), (4, 5)], (1,)),
    ("reductions", reductions, [(3, 4), (4,)], (0, 1)),
    ("views", views, [(3, 4), (6, 5)], (0, 1)),
    ("no_grad_inputs", mlp, [(4, 6), (6, 8), (8,), (8, 3), (3,)], ()),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,fn,shapes,grad", CASES, ids=[c[0] for c in CASES])
def test_values_and_grads(backend, name, fn, shapes, grad):
    cf, outs = check(fn, shapes, grad, backend)
    assert cf.has_backward == bool(grad)
    if grad:
        assert cf.num_backward_kernels > 0
        assert any(o.grad_fn is not None and
                   type(o.grad_fn).__name__ != "" for o in outs if o.requires_grad)


@pytest.mark.parametrize("name,fn,shapes,grad", CASES[:5], ids=[c[0] for c in CASES[:5]])
def test_eager_backend(name, fn, shapes, grad):
    cf, _ = check(fn, shapes, grad, "eager")
    assert not cf.has_backward


def test_float64_tight():
    check(mlp, [(4, 6), (6, 8), (8,), (8, 3), (3,)], (0, 1, 2, 3, 4), "interp",
          dtype=st.float64, rtol=1e-10, atol=1e-12)


def test_node_name_and_saved_freed():
    x, w = leaves((3, 4), (4, 5), grad=(1,))
    cf = _C._cfn_from_trace(lambda x, w: (x @ w).tanh(), (x, w))
    y = cf(x, w)
    assert y.grad_fn.name() == "CompiledFunctionBackward"
    y.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_retain_graph_and_accumulate():
    x, w = leaves((3, 4), (4, 5), grad=(1,))
    cf = _C._cfn_from_trace(lambda x, w: (x @ w).tanh(), (x, w))
    y = cf(x, w)
    y.sum().backward(retain_graph=True)
    g1 = np_of(w.grad).copy()
    y.sum().backward()
    np.testing.assert_allclose(np_of(w.grad), 2 * g1, rtol=1e-6)


def test_grad_mode_off_plain_forward():
    x, w = leaves((3, 4), (4, 5), grad=(1,))
    cf = _C._cfn_from_trace(lambda x, w: (x @ w).tanh(), (x, w))
    with st.no_grad():
        y = cf(x, w)
    assert y.grad_fn is None and not y.requires_grad
    # and an input not requiring grad at run time: no node either
    w2 = w.detach().clone()
    y = cf(x, w2)
    assert y.grad_fn is None


def test_compiled_then_eager_chain():
    # gradients flow from eager ops after the compiled function into it, and
    # from it back into eager ops before it
    x, w = leaves((3, 4), (4, 5), grad=(0, 1))
    cf = _C._cfn_from_trace(lambda a, w: (a @ w).sigmoid(), ((x * 2), w))
    a = x * 2
    y = cf(a, w)
    (y * y).sum().backward()
    xr, wr = x.detach().clone().requires_grad_(True), w.detach().clone().requires_grad_(True)
    yr = ((xr * 2) @ wr).sigmoid()
    (yr * yr).sum().backward()
    np.testing.assert_allclose(np_of(x.grad), np_of(xr.grad), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_of(w.grad), np_of(wr.grad), rtol=1e-5, atol=1e-6)


def test_bad_input_names_it():
    x, w = leaves((3, 4), (4, 5))
    cf = _C._cfn_from_trace(lambda x, w: x @ w, (x, w))
    with pytest.raises(ValueError, match=r"input 1 .*\[4, 5\].*\[4, 6\]"):
        cf(x, st.randn(4, 6))
    with pytest.raises(ValueError, match="input 0"):
        cf(x.to(st.float64), w)


def test_captured_tensor():
    # a tensor the function reads that is not an argument is captured
    g = st.randn(5)
    x, w = leaves((3, 4), (4, 5), grad=(1,))
    cf = _C._cfn_from_trace(lambda x, w: x @ w + g, (x, w))
    x2 = st.randn(3, 4)
    np.testing.assert_allclose(np_of(cf(x2, w)), np_of(x2 @ w + g), rtol=1e-5)


# ---------------- writeback of inputs mutated in place ----------------
@pytest.mark.parametrize("backend", BACKENDS + ["eager"])
def test_writeback(backend):
    def f(x, buf):
        buf.add_(x)
        buf.mul_(2.0)
        return (buf + 1).sum()
    x, buf = st.randn(3), st.zeros(3)
    cf = _C._cfn_from_trace(f, (x, buf), backend=backend)
    np.testing.assert_allclose(np_of(buf), 2 * np_of(x), rtol=1e-6)
    # graph input indices: buf was written before x was read
    assert cf.writebacks == (0,) and cf.num_inputs == 2
    x2, b2 = st.randn(3), st.ones(3)
    r = cf(x2, b2)
    np.testing.assert_allclose(np_of(b2), 2 * (1 + np_of(x2)), rtol=1e-6)
    np.testing.assert_allclose(float(r), float((2 * (1 + np_of(x2)) + 1).sum()), rtol=1e-5)


def test_writeback_out_into_unread_tensor():
    # an external tensor written before it was read becomes an input
    out = st.zeros(3)
    def f(x):
        out.copy_(x * 3)
        return x + 1
    x = st.randn(3)
    cf = _C._cfn_from_trace(f, (x,))
    assert cf.writebacks == (1,)
    x2 = st.randn(3)
    cf(x2)
    np.testing.assert_allclose(np_of(out), 3 * np_of(x2), rtol=1e-6)


def test_abort_restores_inputs():
    x = st.randn(4)
    v = st.randn(2, 2)
    before, vb = np_of(x).copy(), np_of(v).copy()
    _C._trace_begin()
    x.add_(1.0)
    x.mul_(3.0)
    v[0].fill_(7.0) if hasattr(v[0], "fill_") else v[0].mul_(0.0)
    y = x * 2  # a tensor the trace made, written in place: nothing to restore
    y.add_(1.0)
    _C._trace_abort()
    np.testing.assert_array_equal(np_of(x), before)
    np.testing.assert_array_equal(np_of(v), vb)


def test_failed_end_restores_inputs():
    x = st.randn(4)
    before = np_of(x).copy()
    _C._trace_begin()
    x.add_(1.0)
    x.sum().item()
    with pytest.raises(RuntimeError, match="item"):
        _C._trace_end((x,))
    np.testing.assert_array_equal(np_of(x), before)


def test_end_keeps_writes():
    x = st.randn(4)
    before = np_of(x).copy()
    _C._trace_begin()
    x.add_(1.0)
    _C._trace_end((x * 1,))
    np.testing.assert_allclose(np_of(x), before + 1, rtol=1e-6)


# ---------------- data reads fail the trace ----------------
READS = [
    ("Tensor.item()", lambda t: t.sum().item()),
    ("Tensor.tolist()", lambda t: t.tolist()),
    ("Tensor.numpy()", lambda t: t.numpy()),
    ("bool(tensor)", lambda t: bool(t.sum() > 0)),
    ("float(tensor)", lambda t: float(t.sum())),
    ("int(tensor)", lambda t: int(t.sum())),
    ("__index__", lambda t: [1, 2, 3][t.to(st.int64)[0].abs() % 3]),
    ("__array__", lambda t: np.asarray(t)),
    ("__dlpack__", lambda t: t.__dlpack__()),
]


@pytest.mark.parametrize("what,read", READS, ids=[r[0] for r in READS])
def test_data_reads_fail_the_trace(what, read):
    x = st.randn(3)
    _C._trace_begin()
    y = x * 2
    read(y)
    with pytest.raises(RuntimeError, match="data-dependent: .*" + what.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        _C._trace_end((y,))
    # outside a trace the reads work
    read(x)


# ---------------- stop-gradients: no_grad blocks and detach ----------------
@pytest.mark.parametrize("backend", BACKENDS + ["eager"])
def test_no_grad_block_is_a_stop_gradient(backend):
    def f(x, w):
        with st.no_grad():
            c = (w * 2.0).exp()
        return (w * c + x).sum()
    check(f, [(3,), (3,)], (0, 1), backend)


@pytest.mark.parametrize("backend", BACKENDS + ["eager"])
def test_detach_is_a_stop_gradient(backend):
    def f(x, w):
        d = (w * w).detach()
        return (w * d + x * d.sigmoid()).sum()
    check(f, [(3,), (3,)], (0, 1), backend)


def test_no_grad_whole_output():
    def f(x, w):
        with st.no_grad():
            y = x @ w
        return y, (x @ w).sum()
    x, w = leaves((3, 4), (4, 5), grad=(1,))
    cf = _C._cfn_from_trace(f, (x, w))
    assert "stop_gradient: statements 0..0" in cf.graph
    y, s = cf(x, w)
    assert not y.requires_grad and s.requires_grad
    s.backward()
    np.testing.assert_allclose(np_of(w.grad), np.tile(np_of(x).sum(0)[:, None], (1, 5)),
                               rtol=1e-5)


# ---------------- layouts and aliasing outputs ----------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_non_contiguous_input(backend):
    x, w = leaves((4, 4), (4, 3), grad=(0, 1))
    cf = _C._cfn_from_trace(lambda x, w: (x @ w).relu() + x.sum(), (x, w), backend=backend)
    base = st.randn(4, 4)
    xt = base.t().detach().requires_grad_(True)  # same shape, transposed strides
    w2 = w.detach().clone().requires_grad_(True)
    y = cf(xt, w2)
    xr, wr = xt.detach().clone().requires_grad_(True), w.detach().clone().requires_grad_(True)
    yr = (xr @ wr).relu() + xr.sum()
    np.testing.assert_allclose(np_of(y), np_of(yr), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    yr.sum().backward()
    np.testing.assert_allclose(np_of(xt.grad), np_of(xr.grad), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_of(w2.grad), np_of(wr.grad), rtol=1e-5, atol=1e-6)


def test_input_returned_and_view_of_input():
    def f(x, w):
        return x, x.t(), (x @ w).sum()
    x, w = leaves((3, 3), (3, 2), grad=(0, 1))
    cf = _C._cfn_from_trace(f, (x, w))
    x2 = st.randn(3, 3).requires_grad_(True)
    a, b, c = cf(x2, w)
    assert a.grad_fn is None and a.requires_grad  # the input itself, its own history
    np.testing.assert_array_equal(np_of(b), np_of(x2).T)
    (a * 2).sum().backward(retain_graph=True)
    np.testing.assert_allclose(np_of(x2.grad), 2 * np.ones((3, 3)))
    x2.grad = None
    ((b * b).sum() + c).backward()
    exp = 2 * np_of(x2) + np.tile(np_of(w).sum(1)[None, :], (3, 1))
    np.testing.assert_allclose(np_of(x2.grad), exp, rtol=1e-5, atol=1e-6)


def test_saved_tensor_modified_in_place_raises():
    # as eager autograd: a value backward needs was changed after the run
    x, w = leaves((3, 4), (4, 5), grad=(1,))
    cf = _C._cfn_from_trace(lambda x, w: (x @ w).sum(), (x, w))
    x2 = st.randn(3, 4)
    y = cf(x2, w)
    x2.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


# ---------------- writes through views (cat, stack, setitem) ----------------
def cat_stack(a, b, w):
    h = st.cat([a @ w, b @ w], 0).tanh()
    return st.stack([h, h * 2], 1).sum(dim=2), h


def setitem(x, w):
    m = st.ones(3, 5)
    m[0] = 5.0              # select + copy into the view
    m[1:, ::2] *= 3.0       # a strided slice written in place
    z = m.t()
    z[1].add_(x[0, 0].detach())  # through a permute of the base, a traced value
    return (x @ w * m).sigmoid(), m


@pytest.mark.parametrize("backend", BACKENDS)
def test_cat_stack_grads(backend):
    cf, _ = check(cat_stack, [(2, 3), (4, 3), (3, 5)], (0, 1, 2), backend)
    # cat's output buffer (_C.empty) is made by the graph: no extra input
    assert cf.num_inputs == 3 and cf.writebacks == ()
    assert "custom_vjp" in cf.graph  # cat's own PyLayer, captured


@pytest.mark.parametrize("backend", BACKENDS)
def test_setitem_grads(backend):
    check(setitem, [(3, 4), (4, 5)], (0, 1), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_leaf_updated_under_no_grad_keeps_its_gradient(backend):
    # an optimizer-like update of a parameter, then a use: as eager, the
    # parameter stays a leaf and gets the gradient of the later use
    def f(x, w):
        with st.no_grad():
            w.mul_(0.5)
            w.add_(x)
        return (w * x).sum()
    x, w = leaves((3,), (3,), grad=(1,))
    cf = _C._cfn_from_trace(f, (x, w), backend=backend)
    x2 = st.randn(3)
    w2 = st.randn(3).requires_grad_(True)
    wr = w2.detach().clone().requires_grad_(True)
    y = cf(x2, w2)
    yr = f(x2, wr)
    np.testing.assert_allclose(np_of(w2), np_of(wr), rtol=1e-6)  # written back
    np.testing.assert_allclose(float(y), float(yr), rtol=1e-6)
    y.backward()
    yr.backward()
    np.testing.assert_allclose(np_of(w2.grad), np_of(wr.grad), rtol=1e-6)
    np.testing.assert_allclose(np_of(w2.grad), np_of(x2), rtol=1e-6)


def test_saved_input_written_back_raises_like_eager():
    def f(x, buf):
        y = (x * buf).sum()
        buf.add_(1.0)
        return y
    x = st.randn(3, requires_grad=True)
    cf = _C._cfn_from_trace(f, (x, st.randn(3)))
    y = cf(st.randn(3, requires_grad=True), st.randn(3))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    ye = f(st.randn(3, requires_grad=True), st.randn(3))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ye.backward()
