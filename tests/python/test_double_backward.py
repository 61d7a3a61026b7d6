"""Higher-order gradients: autograd.grad / backward with create_graph=True.

The backward's own ops are recorded, so a gradient has a history and can be
differentiated again (gradient penalties, Hessian-vector products, third
derivatives). Each case computes the first-order gradients with
create_graph=True, then the gradient of the sum of their squares, and
compares both against closed forms (numpy) or, where torch is installed,
against torch's double backward on the same values in float64."""
import numpy as np
import pytest

import symtrace as st


def _np(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def _grads(lib, fn, arrs, gsq=True):
    """First-order gradients (create_graph) and the gradient of the sum of
    their squares, for inputs built from arrs in float64."""
    xs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrs]
    y = fn(lib, *xs)
    g = lib.autograd.grad(y, xs, create_graph=True)
    assert all(gi.requires_grad for gi in g)
    s = sum((gi * gi).sum() for gi in g) if gsq else sum(gi.sum() for gi in g)
    g2 = lib.autograd.grad(s, xs, allow_unused=True)
    return [_np(t) for t in g], [None if t is None else _np(t) for t in g2]


rng = np.random.default_rng(7)
A = rng.standard_normal((3, 4))
B = rng.standard_normal((4, 5))
P = np.abs(rng.standard_normal((3, 4))) + 0.5
W = rng.standard_normal(4)
IDX = np.array([2, 0, 1, 2])

CASES = {
    "cube": (lambda L, x: (x ** 3).sum(), [A]),
    "exp": (lambda L, x: x.exp().sum(), [A]),
    "log": (lambda L, x: x.log().sum(), [P]),
    "sqrt": (lambda L, x: x.sqrt().sum(), [P]),
    "rsqrt": (lambda L, x: x.rsqrt().sum(), [P]),
    "tanh": (lambda L, x: x.tanh().sum(), [A]),
    "sigmoid": (lambda L, x: x.sigmoid().sum(), [A]),
    "relu_times_x": (lambda L, x: (x.relu() * x).sum(), [A]),
    "erf": (lambda L, x: L.erf(x).sum(), [A]),
    "abs_times_x": (lambda L, x: (x.abs() * x).sum(), [A]),
    "sin_cos": (lambda L, x: (x.sin() * x.cos()).sum(), [A]),
    "reciprocal": (lambda L, x: x.reciprocal().sum(), [P]),
    "pow_tensor": (lambda L, x, y: (x ** y).sum(), [P, A]),
    "pow_half": (lambda L, x: (x ** 0.5).sum(), [P]),
    "div": (lambda L, x, y: (x / y).sum(), [A, P]),
    "maximum": (lambda L, x, y: (L.maximum(x, y) * x).sum(), [A, A[::-1].copy()]),
    "where": (lambda L, x: L.where(x > 0, x * x, x.sin()).sum(), [A]),
    "clamp": (lambda L, x: (x.clamp(-0.5, 0.5) * x).sum(), [A]),
    "mean_sq": (lambda L, x: (x.mean(1) ** 2).sum(), [A]),
    "amax": (lambda L, x: (x.amax(1) ** 2).sum(), [A]),
    "prod": (lambda L, x: x.prod(1).sum(), [P]),
    "logsumexp": (lambda L, x: x.logsumexp(1).sum(), [A]),
    "softmax": (lambda L, x: (x.softmax(-1) ** 2).sum(), [A]),
    "log_softmax": (lambda L, x: L.nn.functional.log_softmax(x, -1)[:, 1].sum(), [A]),
    "layer_norm": (lambda L, x, w, b: (L.nn.functional.layer_norm(x, (4,), w, b) ** 3).sum(),
                   [A, W, W[::-1].copy()]),
    "gelu": (lambda L, x: L.nn.functional.gelu(x).sum(), [A]),
    "gelu_tanh": (lambda L, x: L.nn.functional.gelu(x, approximate="tanh").sum(), [A]),
    "matmul_tanh": (lambda L, x, w: (x @ w).tanh().sum(), [A, B]),
    "linear": (lambda L, x, w, b: L.nn.functional.linear(x, w, b).sin().sum(),
               [A, B.T.copy(), B[0].copy()]),
    "bmm": (lambda L, x: (x @ x.transpose(1, 2)).pow(2).sum(), [rng.standard_normal((2, 3, 4))]),
    "cross_entropy": (lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([1, 0, 3])), [A]),
    "views": (lambda L, x: (x.reshape(4, 3).permute(1, 0)[1:].unsqueeze(0).expand(2, 2, 4)
                            .squeeze(1) ** 3).sum(), [A]),
    "gather": (lambda L, x: (x.gather(1, L.tensor([[0], [3], [1]])) ** 3).sum(), [A]),
    "index_select": (lambda L, x: (x.index_select(1, L.tensor([3, 1, 1])) ** 3).sum(), [A]),
    "embedding": (lambda L, w: (L.nn.functional.embedding(L.tensor(IDX), w) ** 3).sum(), [A]),
    "broadcast_mul": (lambda L, x, w: (x * w).sin().sum(), [A, W]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_double_backward_against_torch(name, torch):
    fn, arrs = CASES[name]
    g1, g2 = _grads(st, fn, arrs)
    t1, t2 = _grads(torch, fn, arrs)
    for a, b in zip(g1, t1):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    for a, b in zip(g2, t2):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-9)


def test_second_and_third_derivatives_closed_form():
    x = st.tensor(A, dtype=st.float64, requires_grad=True)
    (g,) = st.autograd.grad((x ** 4).sum(), x, create_graph=True)
    (h,) = st.autograd.grad(g.sum(), x, create_graph=True)
    (t,) = st.autograd.grad(h.sum(), x)
    np.testing.assert_allclose(_np(g), 4 * A ** 3, rtol=1e-12)
    np.testing.assert_allclose(_np(h), 12 * A ** 2, rtol=1e-12)
    np.testing.assert_allclose(_np(t), 24 * A, rtol=1e-12)
    x = st.tensor(A, dtype=st.float64, requires_grad=True)
    (g,) = st.autograd.grad(x.sin().sum(), x, create_graph=True)
    (h,) = st.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(_np(g), np.cos(A), rtol=1e-12)
    np.testing.assert_allclose(_np(h), -np.sin(A), rtol=1e-12)


def test_hessian_vector_product():
    # f(x) = sum (M x)^3 / 3: H = M^T diag(2 M x) M, so H v in closed form
    m = rng.standard_normal((5, 4))
    v = rng.standard_normal(4)
    x0 = rng.standard_normal(4)
    x = st.tensor(x0, dtype=st.float64, requires_grad=True)
    mt = st.tensor(m, dtype=st.float64)
    (g,) = st.autograd.grad(((mt @ x) ** 3).sum() / 3, x, create_graph=True)
    (hv,) = st.autograd.grad((g * st.tensor(v, dtype=st.float64)).sum(), x)
    want = m.T @ (2 * (m @ x0) * (m @ v))
    np.testing.assert_allclose(_np(hv), want, rtol=1e-10)


def _mlp_penalty(L, xs, w1, b1, w2):
    h = L.tanh(xs @ w1 + b1)
    out = (h @ w2).sum()
    (gx,) = L.autograd.grad(out, xs, create_graph=True)
    return ((gx.pow(2).sum(1).sqrt() - 1) ** 2).mean() + out * 0.01


def test_gradient_penalty_trains_parameters(torch):
    """WGAN-GP style: the penalty on the input gradient's norm is
    differentiated into the weights (second order through tanh and matmul)."""
    data = [rng.standard_normal((6, 3)), rng.standard_normal((3, 8)) * 0.5,
            rng.standard_normal(8) * 0.1, rng.standard_normal((8, 1))]
    got = {}
    for L in (st, torch):
        xs = L.tensor(data[0], dtype=L.float64, requires_grad=True)
        ps = [L.tensor(d, dtype=L.float64, requires_grad=True) for d in data[1:]]
        loss = _mlp_penalty(L, xs, *ps)
        loss.backward()
        got[L.__name__] = [float(loss.detach())] + [_np(p.grad) for p in ps]
    a, b = got["symtrace"], got["torch"]
    assert abs(a[0] - b[0]) < 1e-10
    for x, y in zip(a[1:], b[1:]):
        np.testing.assert_allclose(x, y, rtol=1e-8, atol=1e-12)


def test_backward_create_graph_gives_grad_a_history():
    """x.grad then holds a history that holds x: the reference cycle torch
    warns about (reset .grad to None to break it)."""
    x = st.tensor(A, dtype=st.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="reference cycle"):
        (x ** 3).sum().backward(create_graph=True)
    gx = x.grad
    assert gx.requires_grad and gx.grad_fn is not None
    np.testing.assert_allclose(_np(gx), 3 * A ** 2, rtol=1e-12)
    x.grad = None
    gx.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 6 * A, rtol=1e-12)
    # a second backward(create_graph=True) accumulates out of place, keeping both histories
    x = st.tensor(A, dtype=st.float64, requires_grad=True)
    with pytest.warns(UserWarning):
        (x ** 3).sum().backward(create_graph=True)
        (x ** 2).sum().backward(create_graph=True)
    (h,) = st.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(_np(h), 6 * A + 2, rtol=1e-12)
    x.grad = None


def test_create_graph_leaves_no_nodes_behind():
    """grad(create_graph=True) and its second backward, eager and compiled,
    free every tape node they made once their results go."""
    import gc
    f = st.compile(lambda x, w: ((x @ w).tanh() @ x).sum(), backend="llvm")

    def once():
        x = st.tensor(A, requires_grad=True)
        w = st.tensor(A.T.copy(), requires_grad=True)
        gx, gw = st.autograd.grad(f(x, w), (x, w), create_graph=True)
        (gx.pow(2).sum() + gw.sum()).backward()
        (g,) = st.autograd.grad(st.nn.functional.gelu(x).sum(), x, create_graph=True)
        g.sum().backward()
        y = x * 2
        y[0] = w[:, 0] ** 2
        gx, gw = st.autograd.grad((y ** 3).sum(), (x, w), create_graph=True)
        st.autograd.grad((gx * gw.sum()).sum(), (x, w))
        with pytest.warns(UserWarning):
            (x ** 3).sum().backward(create_graph=True)
        gxx = x.grad
        x.grad = None
        gxx.sum().backward()
        x.grad = None
    for _ in range(3):
        once()
    gc.collect()
    base = st._C._autograd_stats()["nodes_alive"]
    for _ in range(10):
        once()
    gc.collect()
    # not more than before (in a full run, nodes of earlier tests' leftovers may
    # go meanwhile: fewer is no leak)
    assert st._C._autograd_stats()["nodes_alive"] <= base


def test_grad_outputs_with_history_forward_mode_trick():
    """The double-vjp trick: with u requiring grad, d/du <J^T u, v> = J v."""
    m = rng.standard_normal((3, 4))
    v = rng.standard_normal(4)
    x = st.tensor(rng.standard_normal(4), dtype=st.float64, requires_grad=True)
    y = st.tensor(m, dtype=st.float64) @ x
    u = st.zeros(3, dtype=st.float64, requires_grad=True)
    (jtu,) = st.autograd.grad(y, x, u, create_graph=True)
    (jv,) = st.autograd.grad(jtu, u, st.tensor(v, dtype=st.float64))
    np.testing.assert_allclose(_np(jv), m @ v, rtol=1e-12)


def test_create_graph_retains_and_plain_grad_has_no_history():
    x = st.tensor(A, dtype=st.float64, requires_grad=True)
    y = (x ** 3).sum()
    (g,) = st.autograd.grad(y, x, create_graph=True)
    (g_again,) = st.autograd.grad(y, x)        # the graph was retained
    assert not g_again.requires_grad and g_again.grad_fn is None
    np.testing.assert_allclose(_np(g_again), _np(g), rtol=1e-12)
    with pytest.raises(RuntimeError, match="second time"):
        st.autograd.grad(y, x)


def test_pylayer_double_backward(torch):
    def cube(L):
        class Cube(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3 * x * x
        return Cube

    out = []
    for L in (st, torch):
        x = L.tensor(A, dtype=L.float64, requires_grad=True)
        (g,) = L.autograd.grad(cube(L).apply(x).sum(), x, create_graph=True)
        (h,) = L.autograd.grad((g * g).sum(), x)
        out.append((_np(g), _np(h)))
    np.testing.assert_allclose(out[0][0], 3 * A ** 2, rtol=1e-12)
    np.testing.assert_allclose(out[0][1], 36 * A ** 3, rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)


def test_compiled_graph_double_backward():
    """A compiled graph's backward runs compiled kernels; with create_graph
    its forward runs again eagerly from the inputs it was given and its
    backward graph as taped ops, so the gradients have histories."""
    f = st.compile(lambda x, w: ((x @ w).tanh() * x.sum(1, keepdim=True)).sum(), backend="llvm")
    for call in range(3):
        x = st.tensor(A, dtype=st.float64, requires_grad=True)
        w = st.tensor(B, dtype=st.float64, requires_grad=True)
        gx, gw = st.autograd.grad(f(x, w), (x, w), create_graph=True)
        assert gx.requires_grad and gw.requires_grad
        hx, hw = st.autograd.grad((gx * gx).sum() + gw.sum(), (x, w))
        x2 = st.tensor(A, dtype=st.float64, requires_grad=True)
        w2 = st.tensor(B, dtype=st.float64, requires_grad=True)
        ex, ew = st.autograd.grad(((x2 @ w2).tanh() * x2.sum(1, keepdim=True)).sum(), (x2, w2),
                                  create_graph=True)
        rx, rw = st.autograd.grad((ex * ex).sum() + ew.sum(), (x2, w2))
        for a, b in ((gx, ex), (gw, ew), (hx, rx), (hw, rw)):
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-14)


def _gp_step(w, x):
    x = x.detach().requires_grad_()
    out = (x @ w).tanh().sum()
    (gx,) = st.autograd.grad(out, x, create_graph=True)
    loss = ((gx.pow(2).sum(1) - 1) ** 2).mean()
    loss.backward()
    return loss


def test_compiled_gradient_penalty_step_matches_eager():
    """A training step with a gradient penalty under symtrace.compile: the
    graph before autograd.grad is compiled, its gradient is differentiated
    again by loss.backward() (every call, not only the traced first)."""
    f = st.compile(_gp_step, backend="llvm")
    w0 = rng.standard_normal((3, 1))
    for call in range(3):
        xs = rng.standard_normal((4, 3))
        got = []
        for fn in (f, _gp_step):
            w = st.tensor(w0, dtype=st.float64, requires_grad=True)
            loss = fn(w, st.tensor(xs, dtype=st.float64))
            got.append((float(loss), _np(w.grad)))
        assert got[0][0] == pytest.approx(got[1][0], rel=1e-12)
        np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-10)
        assert np.abs(got[0][1]).sum() > 0


def test_compiled_graph_with_dropout_double_backward():
    """Dropout inside a compiled graph: under create_graph the forward runs
    again from the generator state its run started from, so it draws the
    same mask; first and second order equal eager's with the same seed, and
    the generator ends where the compiled run left it."""
    def g(x):
        return (st.nn.functional.dropout(x, 0.5, training=True) * x.sin()).sum()
    f = st.compile(g, backend="llvm")
    for call in range(3):
        got = []
        for fn in (f, g):
            st.manual_seed(3 + call)
            x = st.tensor(A, dtype=st.float64, requires_grad=True)
            y = fn(x)
            after = st.rand(2).tolist()
            st.manual_seed(3 + call)
            st.rand(1)
            (gx,) = st.autograd.grad(y, x, create_graph=True)
            (hx,) = st.autograd.grad((gx * gx).sum(), x)
            got.append((_np(gx), _np(hx), after, st.rand(2).tolist()))
        np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-12)
        np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-12)
        assert got[0][2] == got[1][2]     # the compiled run draws as eager
        assert got[0][3] == got[1][3]     # the recompute puts the generator back
        assert (got[0][0] == 0).sum() > 0     # some elements were dropped


@pytest.mark.parametrize("write", ["row", "column", "strided", "scalar_fill"])
def test_inplace_on_a_view_double_backward(write, torch):
    """CopySlices (an in-place write through a view): its gradients are a
    masked gradient and a region read, recorded as nodes whose backwards
    are each other, so they differentiate again (third order too)."""
    def fn(L, x, s):
        y = x * 2
        if write == "row":
            y[0] = s[0] * s[0]
        elif write == "column":
            y[:, 1].mul_(s[0, :3].sin())
        elif write == "strided":
            y[::2, 1::2] = s[::2, 1::2] ** 3
        else:
            y[1:, :2] = 0.5
        return (y ** 3).sum() + (y * s).sum()

    got = []
    for L in (st, torch):
        x = L.tensor(A, dtype=L.float64, requires_grad=True)
        s = L.tensor(A[::-1].copy(), dtype=L.float64, requires_grad=True)
        gx, gs = L.autograd.grad(fn(L, x, s), (x, s), create_graph=True)
        hx, hs = L.autograd.grad((gx * gx).sum() + (gs * gs * gs).sum(), (x, s),
                                 create_graph=True)
        tx, ts = L.autograd.grad((hx * hs).sum(), (x, s), allow_unused=True)
        got.append([_np(t) if t is not None else None for t in (gx, gs, hx, hs, tx, ts)])
    for a, b in zip(*got):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_compiled_graph_that_writes_its_inputs_refuses_second_order():
    """A graph that writes into an input cannot run its forward again (the
    input holds the new value by then): the first-order gradient is right,
    a second order raises instead of using the written value."""
    def g(x, buf):
        buf.add_(1.0)
        return (x * buf).sin().sum()
    f = st.compile(g, backend="llvm")
    for call in range(3):
        x = st.tensor(A, dtype=st.float64, requires_grad=True)
        buf = st.tensor(P, dtype=st.float64)
        (gx,) = st.autograd.grad(f(x, buf), x, create_graph=True)
        b = P + 1.0
        np.testing.assert_allclose(_np(gx), np.cos(A * b) * b, rtol=1e-12)
        np.testing.assert_allclose(_np(buf), b, rtol=1e-12)
        if call == 0:
            continue    # the first call runs eagerly while it is traced
        with pytest.raises(RuntimeError, match="differentiate twice through CompiledFunctionBackward"):
            st.autograd.grad(gx.sum(), x)


def test_compiled_batchnorm_train_gradient_penalty_matches_eager():
    """BatchNorm in training mode writes its running statistics back into its
    buffers, which the saved values do not read: the forward can still run again
    from the inputs, so a gradient penalty through a compiled model with
    BatchNorm works (WGAN-GP critics) and matches eager, statistics included."""
    import symtrace.nn as nn

    def make():
        st.manual_seed(0)
        return nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 1)).double()

    def step(m, x):
        x = x.detach().requires_grad_()
        (gx,) = st.autograd.grad(m(x).sum(), x, create_graph=True)
        loss = ((gx.pow(2).sum(1) - 1) ** 2).mean()
        loss.backward()
        return loss

    eager, comp = make(), make()
    f = st.compile(comp, backend="llvm")
    for call in range(3):
        xs = st.tensor(rng.standard_normal((6, 3)), dtype=st.float64)
        le = step(eager, xs)
        lc = step(f, xs)
        assert float(lc) == pytest.approx(float(le), rel=1e-10)
        assert sum(p.grad is None for p in eager.parameters()) == 1   # the last bias: not in the penalty
        for pe, pc in zip(eager.parameters(), comp.parameters()):
            assert (pe.grad is None) == (pc.grad is None)
            if pe.grad is not None:
                np.testing.assert_allclose(_np(pc.grad), _np(pe.grad), rtol=1e-9, atol=1e-12)
            pe.grad = pc.grad = None
        for be, bc in zip(eager.buffers(), comp.buffers()):
            np.testing.assert_allclose(_np(bc), _np(be), rtol=1e-12)
    # the recompute under create_graph does not write the statistics a second time
    assert int(comp[1].num_batches_tracked) == int(eager[1].num_batches_tracked) == 3
