# Autograd semantics (PyTorch's): requires_grad propagation, grad_fn / is_leaf,
# backward (scalar, with a gradient, errors), accumulation, broadcasting,
# retain_graph and freed graphs, grad mode (no_grad / enable_grad /
# set_grad_enabled as context managers, decorators and calls), detach,
# autograd.grad and autograd.backward, in-place rules (leaves, saved tensors,
# version counters), memory (the tape frees what it saved), long chains,
# and composite models against torch.
#
# Most tests take the `L` fixture and run twice: once with symtrace and once
# with torch (the [torch] ids), so every expectation written here is checked
# to be torch's behaviour.
import gc
import math

import numpy as np
import pytest

import symtrace as st


@pytest.fixture(params=["symtrace", "torch"])
def L(request):
    if request.param == "torch":
        return pytest.importorskip("torch")
    return st


def T(L, a, grad=False, dtype="float64"):
    """A leaf tensor of library L holding a's values."""
    t = L.tensor(np.array(a, dtype=np.float64, order="C"), dtype=getattr(L, dtype))
    return t.requires_grad_() if grad else t


def N(t):
    """numpy float64 values of a tensor (detached)."""
    t = t.detach()
    if t.dtype.is_floating_point:
        t = t.double()
    return np.array(t.numpy())


def F_(L):
    return L.nn.functional


RNG = np.random.default_rng(0)
A34 = RNG.standard_normal((3, 4))
B34 = RNG.standard_normal((3, 4))


# ---------------------------------------------------------------- flags
def test_requires_grad_propagation(L):
    x = T(L, A34, grad=True)
    y = T(L, B34)
    assert x.requires_grad and not y.requires_grad
    assert (x * y).requires_grad
    assert (y * 2 + x).requires_grad
    assert not (y * y).requires_grad
    assert (x.sum()).requires_grad
    assert x[0].requires_grad and x.T.requires_grad and x.reshape(-1).requires_grad
    assert not x.detach().requires_grad
    assert not (x > 0).requires_grad          # comparisons are not differentiable
    assert not x.argmax().requires_grad       # nor are indices


def test_requires_grad_factory_kwarg(L):
    x = L.ones(2, 3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    z = L.zeros(3, dtype=L.float64, requires_grad=True)
    assert z.requires_grad
    t = L.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad_fn is None
    assert not L.ones(2).requires_grad


def test_grad_fn_and_is_leaf(L):
    x = T(L, A34, grad=True)
    c = T(L, B34)
    assert x.grad_fn is None and x.is_leaf
    assert c.grad_fn is None and c.is_leaf
    y = x * c
    assert y.grad_fn is not None and not y.is_leaf
    assert y.grad_fn.name() == "MulBackward0"
    z = y.exp()
    assert "Backward" in z.grad_fn.name()
    nf = z.grad_fn.next_functions
    assert isinstance(nf, tuple) and len(nf) == 1
    assert nf[0][0].name() == "MulBackward0"
    assert len(y.grad_fn.next_functions) == 2
    # a result computed only from tensors that don't require grad is a leaf
    w = c * 2
    assert w.is_leaf and w.grad_fn is None
    d = x.detach()
    assert d.is_leaf and d.grad_fn is None


def test_requires_grad_setter_and_method(L):
    x = T(L, A34)
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    y.requires_grad_()  # requires_grad_(True) on a non-leaf that requires grad: allowed (no-op)
    assert y.requires_grad


def test_requires_grad_on_integer_tensor_is_refused(L):
    i = L.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="floating point"):
        i.requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        i.requires_grad = True
    assert not i.requires_grad


# ---------------------------------------------------------------- backward
def test_backward_scalar(L):
    x = T(L, A34, grad=True)
    y = (x * x).sum()
    assert x.grad is None
    assert y.backward() is None
    np.testing.assert_allclose(N(x.grad), 2 * A34, rtol=1e-12)
    assert x.grad.shape == x.shape and x.grad.dtype == x.dtype
    assert not x.grad.requires_grad and x.grad.grad_fn is None


def test_backward_with_gradient_argument(L):
    x = T(L, A34, grad=True)
    y = x.exp()
    g = RNG.standard_normal((3, 4))
    y.backward(T(L, g))
    np.testing.assert_allclose(N(x.grad), g * np.exp(A34), rtol=1e-12)
    x2 = T(L, A34, grad=True)
    x2.sin().backward(gradient=T(L, g))
    np.testing.assert_allclose(N(x2.grad), g * np.cos(A34), rtol=1e-12)


def test_backward_non_scalar_without_gradient(L):
    x = T(L, A34, grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    assert x.grad is None


def test_backward_gradient_shape_mismatch(L):
    x = T(L, A34, grad=True)
    with pytest.raises(RuntimeError):
        (x * 2).backward(T(L, np.ones((4, 3))))


def test_backward_on_tensor_without_grad(L):
    x = T(L, A34)
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * 2).sum().backward()


def test_backward_zero_dim_leaf(L):
    x = T(L, 3.0, grad=True)
    (x * x * x).backward()
    assert x.grad.shape == ()
    assert x.grad.item() == pytest.approx(27.0)


def test_grad_accumulates_over_backward_calls(L):
    x = T(L, A34, grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(N(x.grad), 3 + 2 * A34, rtol=1e-12)


def test_grad_accumulates_within_one_graph(L):
    x = T(L, A34, grad=True)
    y = x * 2
    (y * y + y.exp() + x).sum().backward()
    np.testing.assert_allclose(N(x.grad), 8 * A34 + 2 * np.exp(2 * A34) + 1, rtol=1e-12)


def test_grad_setter(L):
    x = T(L, A34, grad=True)
    x.grad = T(L, np.full((3, 4), 10.0))
    (x * 2).sum().backward()
    np.testing.assert_allclose(N(x.grad), np.full((3, 4), 12.0))
    x.grad = None
    assert x.grad is None
    (x * 2).sum().backward()
    np.testing.assert_allclose(N(x.grad), np.full((3, 4), 2.0))
    with pytest.raises(RuntimeError):
        x.grad = T(L, np.ones((4, 3)))


def test_non_leaf_grad_is_none(L):
    import warnings
    x = T(L, A34, grad=True)
    y = x * 2
    y.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert y.grad is None


@pytest.mark.parametrize("sa,sb", [((3, 1), (4,)), ((2, 3, 4), (3, 1)), ((1, 4), (3, 4)), ((), (3, 4))])
def test_broadcast_gradients_reduce_to_input_shape(L, sa, sb):
    ra = np.random.default_rng(1).standard_normal(sa)
    rb = np.random.default_rng(2).standard_normal(sb)
    a, b = T(L, ra, grad=True), T(L, rb, grad=True)
    (a * b + a).sum().backward()
    assert tuple(a.grad.shape) == sa and tuple(b.grad.shape) == sb
    full = np.broadcast_shapes(sa, sb)
    ga = np.broadcast_to(rb, full) + 1
    gb = np.broadcast_to(ra, full)

    def reduce_to(g, shape):
        while g.ndim > len(shape):
            g = g.sum(0)
        for i, s in enumerate(shape):
            if s == 1 and g.shape[i] != 1:
                g = g.sum(i, keepdims=True)
        return g

    np.testing.assert_allclose(N(a.grad), reduce_to(ga, sa), rtol=1e-12)
    np.testing.assert_allclose(N(b.grad), reduce_to(gb, sb), rtol=1e-12)


def test_retain_graph_allows_second_backward(L):
    x = T(L, A34, grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    np.testing.assert_allclose(N(x.grad), 2 * A34)
    y.backward()
    np.testing.assert_allclose(N(x.grad), 4 * A34)


def test_second_backward_without_retain_graph(L):
    x = T(L, A34, grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    # the first gradient is intact
    np.testing.assert_allclose(N(x.grad), 2 * A34)


def test_second_backward_through_shared_subgraph(L):
    x = T(L, A34, grad=True)
    h = x.exp()
    (h * h).sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        (h * 3).sum().backward()


def test_autograd_backward_function(L):
    x = T(L, A34, grad=True)
    y1 = (x * x).sum()
    y2 = x * 3
    g2 = RNG.standard_normal((3, 4))
    L.autograd.backward([y1, y2], [None, T(L, g2)])
    np.testing.assert_allclose(N(x.grad), 2 * A34 + 3 * g2, rtol=1e-12)
    x.grad = None
    L.autograd.backward((x.exp()).sum())
    np.testing.assert_allclose(N(x.grad), np.exp(A34), rtol=1e-12)
    x.grad = None
    L.autograd.backward([x.sin()], grad_tensors=[T(L, g2)])
    np.testing.assert_allclose(N(x.grad), g2 * np.cos(A34), rtol=1e-12)


# ---------------------------------------------------------------- grad mode
def test_no_grad_context(L):
    x = T(L, A34, grad=True)
    assert L.is_grad_enabled()
    with L.no_grad():
        assert not L.is_grad_enabled()
        y = x * 2
        z = x.exp().sum()
    assert L.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert not z.requires_grad and z.grad_fn is None
    assert (x * 2).requires_grad


def test_no_grad_decorator(L):
    x = T(L, A34, grad=True)

    @L.no_grad()
    def f(a):
        """doc"""
        assert not L.is_grad_enabled()
        return a * 2

    y = f(x)
    assert not y.requires_grad and y.grad_fn is None
    assert L.is_grad_enabled()
    assert f.__name__ == "f" and f.__doc__ == "doc"


def test_enable_grad_inside_no_grad(L):
    x = T(L, A34, grad=True)
    with L.no_grad():
        with L.enable_grad():
            assert L.is_grad_enabled()
            y = x * 2
        z = x * 2
        assert not L.is_grad_enabled()
    assert y.requires_grad and y.grad_fn is not None
    assert not z.requires_grad

    @L.enable_grad()
    def f(a):
        return a * 3

    with L.no_grad():
        w = f(x)
    assert w.requires_grad


def test_set_grad_enabled(L):
    x = T(L, A34, grad=True)
    with L.set_grad_enabled(False):
        assert not L.is_grad_enabled()
        y = x * 2
    assert L.is_grad_enabled()
    assert not y.requires_grad
    with L.set_grad_enabled(True):
        assert (x * 2).requires_grad
    with L.no_grad():
        with L.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not L.is_grad_enabled()

    @L.set_grad_enabled(False)
    def f(a):
        return a * 2

    assert L.is_grad_enabled()  # decorating does not change the mode
    assert not f(x).requires_grad
    assert L.is_grad_enabled()


def test_set_grad_enabled_as_a_call(L):
    x = T(L, A34, grad=True)
    try:
        L.set_grad_enabled(False)
        assert not L.is_grad_enabled()
        assert not (x * 2).requires_grad
        L.set_grad_enabled(True)
        assert L.is_grad_enabled()
        assert (x * 2).requires_grad
    finally:
        L.set_grad_enabled(True)


def test_grad_mode_restored_after_exception(L):
    with pytest.raises(ValueError):
        with L.no_grad():
            raise ValueError("boom")
    assert L.is_grad_enabled()

    @L.no_grad()
    def f():
        raise KeyError("k")

    with pytest.raises(KeyError):
        f()
    assert L.is_grad_enabled()


def test_grad_mode_names_in_autograd(L):
    assert L.autograd.no_grad is L.no_grad
    assert L.autograd.enable_grad is L.enable_grad
    assert L.autograd.set_grad_enabled is L.set_grad_enabled


# ---------------------------------------------------------------- detach
def test_detach_shares_storage(L):
    x = T(L, A34, grad=True)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert d.data_ptr() == x.data_ptr()
    d.mul_(2)  # writes through to x
    np.testing.assert_allclose(N(x), 2 * A34)
    y = (x * 3).detach()
    assert not y.requires_grad
    z = x.detach() * x
    z.sum().backward()
    np.testing.assert_allclose(N(x.grad), 2 * A34)  # the detached factor is a constant


def test_data_is_detached(L):
    x = T(L, A34, grad=True)
    assert not x.data.requires_grad
    assert x.data.data_ptr() == x.data_ptr()


# ---------------------------------------------------------------- autograd.grad
def test_autograd_grad(L):
    x = T(L, A34, grad=True)
    w = T(L, B34, grad=True)
    y = (x * w).sum()
    gs = L.autograd.grad(y, [x, w])
    assert isinstance(gs, tuple) and len(gs) == 2
    np.testing.assert_allclose(N(gs[0]), B34)
    np.testing.assert_allclose(N(gs[1]), A34)
    assert x.grad is None and w.grad is None  # .grad untouched
    assert not gs[0].requires_grad
    (gx,) = L.autograd.grad((x * x).sum(), x)
    np.testing.assert_allclose(N(gx), 2 * A34)


def test_autograd_grad_outputs(L):
    x = T(L, A34, grad=True)
    y = x.exp()
    g = RNG.standard_normal((3, 4))
    (gx,) = L.autograd.grad([y], [x], grad_outputs=[T(L, g)])
    np.testing.assert_allclose(N(gx), g * np.exp(A34), rtol=1e-12)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        L.autograd.grad(x.exp(), x)


def test_autograd_grad_allow_unused(L):
    x = T(L, A34, grad=True)
    u = T(L, B34, grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        L.autograd.grad((x * 2).sum(), [x, u])
    gx, gu = L.autograd.grad((x * 2).sum(), [x, u], allow_unused=True)
    np.testing.assert_allclose(N(gx), np.full((3, 4), 2.0))
    assert gu is None


def test_autograd_grad_retain_graph(L):
    x = T(L, A34, grad=True)
    y = (x * x).sum()
    (g1,) = L.autograd.grad(y, x, retain_graph=True)
    (g2,) = L.autograd.grad(y, x)
    np.testing.assert_allclose(N(g1), N(g2))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        L.autograd.grad(y, x)


def test_autograd_grad_wrt_intermediate(L):
    x = T(L, A34, grad=True)
    h = x * 2
    y = (h.exp()).sum()
    (gh,) = L.autograd.grad(y, h)
    np.testing.assert_allclose(N(gh), np.exp(2 * A34), rtol=1e-12)
    assert x.grad is None


# ---------------------------------------------------------------- in-place rules
def test_inplace_under_no_grad_on_leaves(L):
    """The optimizer pattern: update parameters in place under no_grad."""
    w = T(L, A34, grad=True)
    for step in range(3):
        loss = (w * w).sum()
        loss.backward()
        with L.no_grad():
            w.sub_(w.grad * 0.1)
            w.add_(0.0)
            w.mul_(1.0)
        w.grad = None
        assert w.is_leaf and w.requires_grad and w.grad_fn is None
    np.testing.assert_allclose(N(w), A34 * 0.8 ** 3, rtol=1e-12)
    with L.no_grad():
        w.zero_()
        w.copy_(T(L, B34))
        w.fill_(1.5)
    assert w.is_leaf and w.requires_grad


def test_inplace_on_leaf_requiring_grad_is_refused(L):
    w = T(L, A34, grad=True)
    msg = "a leaf Variable that requires grad is being used in an in-place operation."
    for op in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.sub_(w), lambda: w.zero_(),
               lambda: w.copy_(T(L, B34)), lambda: w.fill_(1.0), lambda: w.clamp_(0, 1)):
        with pytest.raises(RuntimeError, match=msg.replace(".", r"\.")):
            op()
    np.testing.assert_allclose(N(w), A34)  # unchanged
    # a view of such a leaf is refused too
    with pytest.raises(RuntimeError):
        w[0].add_(1)


def test_modified_saved_tensor(L):
    x = T(L, A34, grad=True)
    c = T(L, B34)
    y = x * c          # mul saves c
    c.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_modified_saved_intermediate(L):
    x = T(L, A34, grad=True)
    h = x * 2
    y = (h * h).sum()  # saves h
    with L.no_grad():
        h.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_modified_saved_output(L):
    x = T(L, A34, grad=True)
    y = x.exp()        # exp saves its output
    with L.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_on_unsaved_tensor_is_fine(L):
    x = T(L, A34, grad=True)
    c = T(L, B34)
    y = x + c          # add saves nothing
    c.add_(1)
    y.sum().backward()
    np.testing.assert_allclose(N(x.grad), np.ones((3, 4)))


def test_inplace_on_non_leaf_is_recorded(L):
    x = T(L, A34, grad=True)
    y = x * 2
    y.mul_(3)
    y.add_(1)
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(N(x.grad), np.full((3, 4), 6.0))


# ---------------------------------------------------------------- dtypes
def test_int_tensors_get_no_grad(L):
    x = T(L, A34, grad=True)
    i = L.tensor(np.arange(12).reshape(3, 4))
    y = x * i
    assert not i.requires_grad
    y.sum().backward()
    assert i.grad is None
    np.testing.assert_allclose(N(x.grad), np.arange(12).reshape(3, 4))
    idx = L.tensor([2, 0])
    z = x.index_select(0, idx)
    z.sum().backward()
    assert idx.grad is None
    mask = x > 0
    assert not mask.requires_grad and mask.grad_fn is None


def test_grad_dtype_follows_input(L):
    x = T(L, A34, grad=True, dtype="float32")
    (x.double() * 2).sum().backward()
    assert x.grad.dtype == L.float32
    np.testing.assert_allclose(N(x.grad), np.full((3, 4), 2.0))
    y = T(L, A34, grad=True)
    (y.float() * 2).sum().backward()
    assert y.grad.dtype == L.float64


# ---------------------------------------------------------------- long chains
def test_chain_of_1000_ops(L):
    x = T(L, [0.5, -0.25], grad=True)
    y = x
    for _ in range(1000):
        y = y * 1.001
    y.sum().backward()
    np.testing.assert_allclose(N(x.grad), np.full(2, 1.001 ** 1000), rtol=1e-10)
    del y
    z = x
    for k in range(1000):  # a long graph that is dropped without backward
        z = z + 0.001 if k % 2 else z.exp() * 0.5
    del z
    gc.collect()


# ---------------------------------------------------------------- memory (symtrace only)
def _mlp_params(seed=0):
    r = np.random.default_rng(seed)
    shapes = [(64, 128), (128,), (128, 10), (10,)]
    return [st.tensor(r.standard_normal(s) * 0.1, dtype=st.float32).requires_grad_() for s in shapes]


def _train_step(params, x, t):
    F = st.nn.functional
    w1, b1, w2, b2 = params
    h = F.relu(x @ w1 + b1)
    loss = F.cross_entropy(h @ w2 + b2, t)
    loss.backward()
    with st.no_grad():
        for p in params:
            p.sub_(p.grad * 0.1)
    for p in params:
        p.grad = None
    return loss.item()


def test_training_memory_returns_to_baseline():
    params = _mlp_params()
    r = np.random.default_rng(1)
    x = st.tensor(r.standard_normal((32, 64)), dtype=st.float32)
    t = st.tensor(r.integers(0, 10, 32))
    _train_step(params, x, t)  # warm-up (kernel caches, lazily made state)
    gc.collect()
    base = st.memory.memory_allocated()
    peaks, losses = [], []
    for _ in range(5):
        st.memory.reset_peak_stats()
        losses.append(_train_step(params, x, t))
        gc.collect()
        assert st.memory.memory_allocated() == base, "tape kept tensors alive after a step"
        peaks.append(st.memory.max_memory_allocated())
    assert all(p <= peaks[0] for p in peaks), peaks
    assert losses[-1] < losses[0], losses  # and it trains


def test_backward_frees_saved_tensors():
    """Saved intermediates are released by backward, while the output is still alive."""
    MB = 1 << 20
    x = st.tensor(np.full(MB // 4, 0.5), dtype=st.float32).requires_grad_()  # 1 MiB
    gc.collect()
    h = x.exp()
    y = (h * h).sum()  # h is saved (by exp's output and by mul)
    del h
    gc.collect()
    before = st.memory.memory_allocated()
    y.backward()
    gc.collect()
    after = st.memory.memory_allocated()
    # + x.grad (1 MiB), - the saved h (1 MiB)
    assert after - before < MB // 2, (before, after)
    assert x.grad is not None
    del y
    gc.collect()
    assert st.memory.memory_allocated() - after < MB // 2


def test_dropped_graph_frees_memory():
    MB = 1 << 20
    x = st.tensor(np.full(MB // 4, 0.5), dtype=st.float32).requires_grad_()
    gc.collect()
    base = st.memory.memory_allocated()
    y = (x.exp() * x.sin()).tanh().sum()
    del y
    gc.collect()
    assert st.memory.memory_allocated() == base


def test_autograd_grad_frees_saved_tensors():
    MB = 1 << 20
    x = st.tensor(np.full(MB // 4, 0.5), dtype=st.float32).requires_grad_()
    gc.collect()
    base = st.memory.memory_allocated()
    y = (x.exp() * x.exp()).sum()
    g, = st.autograd.grad(y, x)
    del g
    gc.collect()
    assert st.memory.memory_allocated() - base < 4096  # only y's scalar and its freed graph


# ---------------------------------------------------------------- against torch
def _run_both(torch, fn, arrays, grad_mask):
    out = {}
    for L in (st, torch):
        ts = [T(L, a, grad=g) if not isinstance(a, tuple) else L.tensor(a[1]) for a, g in zip(arrays, grad_mask)]
        loss = fn(L, *ts)
        loss.backward()
        out[L.__name__] = (N(loss), [None if t.grad is None else N(t.grad) for t in ts])
    return out["symtrace"], out["torch"]


def _compare(got, exp, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(got[0], exp[0], rtol=rtol, atol=atol)
    for g, e in zip(got[1], exp[1]):
        if e is None:
            assert g is None
        else:
            assert g is not None
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def test_mlp_softmax_cross_entropy_vs_torch(torch):
    r = np.random.default_rng(3)
    arrays = [r.standard_normal((8, 16)), r.standard_normal((32, 16)) * 0.3, r.standard_normal(32) * 0.1,
              r.standard_normal((5, 32)) * 0.3, r.standard_normal(5) * 0.1, ("idx", r.integers(0, 5, 8))]

    def fn(L, x, w1, b1, w2, b2, t):
        F = L.nn.functional
        h = F.gelu(F.linear(x, w1, b1))
        logits = F.linear(h, w2, b2)
        p = F.softmax(logits, -1)
        return F.cross_entropy(logits, t) + (p * p).sum() * 0.1

    got, exp = _run_both(torch, fn, arrays, [False, True, True, True, True, False])
    _compare(got, exp, rtol=1e-9, atol=1e-9)


def test_mlp_float32_vs_torch(torch):
    r = np.random.default_rng(4)
    xs = r.standard_normal((8, 16))
    ws = [r.standard_normal((16, 32)) * 0.3, r.standard_normal(32) * 0.1, r.standard_normal((32, 5)) * 0.3]
    t = r.integers(0, 5, 8)
    res = []
    for L in (st, torch):
        F = L.nn.functional
        x = T(L, xs, dtype="float32")
        w1, b1, w2 = (T(L, w, grad=True, dtype="float32") for w in ws)
        loss = F.cross_entropy(F.relu(x @ w1 + b1) @ w2, L.tensor(t))
        loss.backward()
        res.append([N(loss)] + [N(w.grad) for w in (w1, b1, w2)])
    for g, e in zip(*res):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_layernorm_attention_block_vs_torch(torch):
    r = np.random.default_rng(5)
    arrays = [r.standard_normal((2, 4, 8)), r.standard_normal((8, 8)) * 0.3, r.standard_normal((8, 8)) * 0.3,
              r.standard_normal((8, 8)) * 0.3, 1 + 0.1 * r.standard_normal(8), 0.1 * r.standard_normal(8)]

    def fn(L, x, wq, wk, wv, g, b):
        F = L.nn.functional
        q, k, v = x @ wq, x @ wk, x @ wv
        mask = L.tensor(np.triu(np.ones((4, 4), dtype=bool), 1))
        s = (q @ k.transpose(-1, -2) / math.sqrt(8)).masked_fill(mask, float("-inf"))
        a = F.softmax(s, -1) @ v
        y = F.layer_norm(x + a, (8,), g, b)
        return (y.tanh() * y).mean() + y.amax(-1).sum()

    got, exp = _run_both(torch, fn, arrays, [True] * 6)
    _compare(got, exp, rtol=1e-10, atol=1e-10)


def test_views_and_indexing_vs_torch(torch):
    r = np.random.default_rng(6)
    arrays = [r.standard_normal((4, 6)), r.standard_normal((6, 2)), ("idx", np.array([3, 0, 3]))]

    def fn(L, x, w, idx):
        a = x[1:, ::2].T.reshape(-1)
        b = L.cat([x[:, :2], w.T.expand(2, 6).reshape(4, 3)], 1)
        c = L.stack(x.chunk(2, 1), 0).sum(0)
        d = x.index_select(0, idx).unsqueeze(0).squeeze(0)
        e = L.gather(x, 1, L.tensor([[0, 1], [2, 2], [5, 0], [1, 1]]))
        return a.sum() + (b * b).sum() + c.exp().mean() + d.prod() + (e * L.where(e > 0, e, -e)).sum()

    got, exp = _run_both(torch, fn, arrays, [True, True, False])
    _compare(got, exp, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- constants in backward
# Backward graphs/kernels may be cached; each op below is differentiated twice in
# one process with different constants (exponents, scales, bounds, dims, eps,
# ignore_index), and every gradient must match torch's.
_CONST_OPS = {
    "pow_scalar_exponent": (lambda L, F, x, c: x.abs() ** c, [2.5, -1.5, 0.5, 3]),
    "pow_scalar_base": (lambda L, F, x, c: L.pow(c, x), [2.0, 0.5, 3.0]),
    "mul_scalar": (lambda L, F, x, c: x * c, [3.0, -0.5]),
    "div_scalar": (lambda L, F, x, c: x / c, [3.0, -0.5]),
    "rdiv_scalar": (lambda L, F, x, c: c / x, [3.0, -0.5]),
    "rsub_scalar": (lambda L, F, x, c: (c - x) * x, [3.0, -0.5]),
    "add_alpha": (lambda L, F, x, c: L.add(x * x, x, alpha=c), [3.0, -0.5]),
    "clamp": (lambda L, F, x, c: x.clamp(-c, c), [0.35, 0.9]),
    "clamp_min": (lambda L, F, x, c: x.clamp(min=c), [0.05, -0.45]),
    "masked_fill": (lambda L, F, x, c: (x * x).masked_fill(x > c, c), [0.1, -0.3]),
    "softmax_dim": (lambda L, F, x, c: F.softmax(x, c) * x, [0, 1, -1]),
    "log_softmax_dim": (lambda L, F, x, c: F.log_softmax(x, c) * x, [0, 1]),
    "sum_dim": (lambda L, F, x, c: x.sum(c, keepdim=True) * x, [0, 1, (0, 1)]),
    "mean_dim": (lambda L, F, x, c: x.mean(c) .exp(), [0, 1]),
    "amax_dim": (lambda L, F, x, c: x.amax(c), [0, 1]),
    "prod_dim": (lambda L, F, x, c: x.prod(c), [0, 1]),
    "layer_norm_eps": (lambda L, F, x, c: F.layer_norm(x, (5,), eps=c), [1e-5, 0.5]),
    "cross_entropy_ignore": (lambda L, F, x, c: F.cross_entropy(x, L.tensor([0, 2, 4, 1]), ignore_index=c),
                             [2, 4, -100]),
    "gelu_form": (lambda L, F, x, c: F.gelu(x, approximate=c), ["none", "tanh"]),
    "transpose_dims": (lambda L, F, x, c: x.transpose(*c).exp(), [(0, 1), (1, 0)]),
    "index_select": (lambda L, F, x, c: x.index_select(c, L.tensor([1, 0, 1])), [0, 1]),
    "gather_dim": (lambda L, F, x, c: x.gather(c, L.tensor([[1, 0, 2], [3, 3, 0]])), [0, 1]),
    "slice_step": (lambda L, F, x, c: x[:, ::c].exp(), [1, 2, 3]),
    "chunk": (lambda L, F, x, c: x.chunk(c, 1)[-1].exp(), [2, 3]),
    "expand": (lambda L, F, x, c: x[:1].expand(c, 5).exp(), [2, 4]),
}


@pytest.mark.parametrize("name", sorted(_CONST_OPS))
def test_backward_constants_not_cached(torch, name):
    fn, consts = _CONST_OPS[name]
    r = np.random.default_rng(11)
    xs = r.uniform(-1, 1, (4, 5))
    xs = np.where(np.abs(xs) < 0.1, 0.5, xs)
    gs = r.standard_normal(64)
    for c in consts * 2:  # each constant twice, interleaved with the others
        res = []
        for L in (st, torch):
            x = T(L, xs, grad=True)
            y = fn(L, L.nn.functional, x, c)
            g = T(L, gs[:y.numel()].reshape(tuple(y.shape)))
            y.backward(g)
            res.append((N(y), N(x.grad)))
        np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-10, atol=1e-12, err_msg=f"{name} forward c={c}")
        np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-10, atol=1e-12, err_msg=f"{name} grad c={c}")


def test_dropout_backward_p_not_cached():
    F = st.nn.functional
    for p in (0.2, 0.7, 0.2, 0.5):
        x = T(st, np.full((8, 8), 1.0), grad=True)
        y = F.dropout(x, p)
        y.sum().backward()
        mask = N(y) != 0
        np.testing.assert_allclose(N(x.grad), mask / (1 - p), rtol=1e-12, err_msg=f"p={p}")


# ---------------------------------------------------------------- writes of tracked values
_WRITES = {
    "copy_": lambda y, x: y.copy_(x),
    "add_": lambda y, x: y.add_(x),
    "mul_": lambda y, x: y.add_(1).mul_(x),
    "setitem_row": lambda y, x: y.__setitem__(1, x[0]),
    "setitem_slice": lambda y, x: y.__setitem__((slice(0, 2), slice(None, None, 2)), x[1:, 1::2]),
    "view_copy_": lambda y, x: y[1:2].copy_(x[0:1]),
    "select_copy_": lambda y, x: y[1].copy_(x[0]),
    "view_add_": lambda y, x: y[1].add_(x[0]),
    "view_mul_": lambda y, x: y[1].add_(2).mul_(x[0]),
}


@pytest.mark.parametrize("name", sorted(_WRITES))
def test_inplace_write_of_tracked_value_into_untracked_tensor(L, name):
    """Writing a value that requires grad into a tensor that doesn't (or into a view
    of it) puts that tensor in the graph, as in torch. Refusing the write with a
    RuntimeError is acceptable for symtrace (it refuses in-place ops on views of
    tensors that require grad); silently dropping the history is not."""
    x = T(L, A34, grad=True)
    y = L.zeros(3, 4, dtype=L.float64)
    try:
        _WRITES[name](y, x)
    except RuntimeError:
        if L is st:
            return
        raise
    assert y.requires_grad, "the write dropped x's history"
    ((y * y).sum() + x.sum()).backward()
    assert x.grad is not None
    if L is st:  # the same write in torch gives the reference gradient
        torch = pytest.importorskip("torch")
        xt = torch.tensor(A34, requires_grad=True)
        yt = torch.zeros(3, 4, dtype=torch.float64)
        _WRITES[name](yt, xt)
        ((yt * yt).sum() + xt.sum()).backward()
        np.testing.assert_allclose(N(x.grad), xt.grad.numpy(), rtol=1e-12)


def test_graph_freed_by_refcount_alone():
    """Dropping an output frees its graph without the cycle collector."""
    MB = 1 << 20
    x = st.tensor(np.full(MB // 4, 0.5), dtype=st.float32).requires_grad_()
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        base = st.memory.memory_allocated()
        y = (x.exp() * x.sin()).tanh().sum()
        del y
        assert st.memory.memory_allocated() == base
        y = (x.exp() * x.exp()).sum()
        y.backward(retain_graph=True)
        x.grad = None
        assert st.memory.memory_allocated() - base >= 2 * MB  # retained: the saved exps
        y.backward()
        x.grad = None
        assert st.memory.memory_allocated() - base < 4096
        del y
        assert st.memory.memory_allocated() == base
    finally:
        if was_enabled:
            gc.enable()


# ---------------------------------------------------------------- what the tape keeps
@pytest.mark.parametrize("op", ["mul", "matmul", "div"])
def test_product_keeps_only_what_the_wanted_gradient_reads(L, op):
    """h * m (h @ m, h / m) with m taking no gradient: the tape keeps m, not h,
    so h may be written in place afterwards (torch saves `self` only when
    `other` requires grad), while writing m is caught; the gradient is right."""
    f = {"mul": lambda h, m: h * m, "matmul": lambda h, m: h @ m,
         "div": lambda h, m: h / m}[op]
    x = T(L, np.full((4, 4), 2.0), grad=True)
    m = T(L, np.arange(16.0).reshape(4, 4) + 1)
    h = x + 1
    y = f(h, m)
    h.add_(100.0)            # not saved: allowed
    y.sum().backward()
    mn = np.arange(16.0).reshape(4, 4) + 1
    want = {"mul": mn, "matmul": np.ones((4, 4)) @ mn.T, "div": 1 / mn}[op]
    np.testing.assert_allclose(N(x.grad), want, rtol=1e-12)
    h2 = x + 1
    y2 = f(h2, m)
    m.mul_(2.0)              # saved: the backward must refuse
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2.sum().backward()


def test_tape_releases_operands_no_gradient_reads():
    """The memory side of the rule above: an intermediate multiplied by a
    tensor that takes no gradient (dropout's mask, a frozen weight) is freed
    as soon as the program drops it."""
    mem = st.memory.memory_allocated
    x = st.ones(256, 1024, requires_grad=True)
    m = st.ones(256, 1024)
    w = st.ones(1024, 64)
    gc.collect()
    base = mem()
    h = x + 1                # 1 MiB, its node keeps nothing
    y = h * m
    z = h @ w
    del h
    gc.collect()
    # y and z stay; h is gone (kept, it would add another MiB)
    assert mem() - base == y.numel() * 4 + z.numel() * 4, (mem() - base)
    (y.sum() + z.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.0 + 64.0)
