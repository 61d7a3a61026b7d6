# Tensor gradient hooks (Tensor.register_hook, register_post_accumulate_grad_hook)
# and retain_grad / retains_grad, against PyTorch: each scenario is written
# once with the library as an argument and run on both; also under
# symtrace.compile (register_hook is a graph break, hooks on parameters
# fire through a compiled graph's backward) and the release of hook objects.
import gc
import weakref

import numpy as np
import pytest

import symtrace as st

torch = pytest.importorskip("torch")

LIBS = [pytest.param(st, id="symtrace"), pytest.param(torch, id="torch")]


def _np(t):
    return None if t is None else t.detach().numpy().copy()


def _leaf(lib, vals):
    return lib.tensor(vals, requires_grad=True)


def _both(fn):
    """fn(lib) -> list of arrays / values; the two libraries must agree."""
    a, b = fn(st), fn(torch)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
        else:
            assert x == y
    return a


def test_leaf_hook_sees_the_summed_gradient_once():
    def run(lib):
        x = _leaf(lib, [1.0, 2.0, 3.0])
        seen = []
        x.register_hook(lambda g: seen.append(_np(g)))
        ((x * 2).sum() + (x * x).sum()).backward()
        return [len(seen), seen[0], _np(x.grad)]
    n, g, grad = _both(run)
    assert n == 1
    np.testing.assert_allclose(g, [4.0, 6.0, 8.0])
    np.testing.assert_allclose(grad, g)


def test_hooks_replace_gradients_in_order():
    def run(lib):
        x = _leaf(lib, [1.0, -2.0])
        y = x * 3
        y.register_hook(lambda g: g * 5)
        y.register_hook(lambda g: g + 1)
        h = x.register_hook(lambda g: g * 10)
        (y * y).sum().backward(retain_graph=True)
        first = _np(x.grad)
        h.remove()
        x.grad = None
        (y * y).sum().backward()
        return [first, _np(x.grad)]
    first, second = _both(run)
    # dy = 2y -> *5 -> +1 -> *3 (dy/dx) -> *10
    np.testing.assert_allclose(first, (2 * np.array([3.0, -6.0]) * 5 + 1) * 3 * 10)
    np.testing.assert_allclose(second, first / 10)


def test_retain_grad_backward_grad_and_accumulation():
    def run(lib):
        x = _leaf(lib, [0.5, -1.5, 2.0])
        y = x * 2
        assert not y.retains_grad
        y.retain_grad()
        y.retain_grad()                     # twice: still one retain
        assert y.retains_grad and not x.retains_grad
        x.retain_grad()                     # a no-op on a leaf
        assert not x.retains_grad
        z = (y * y).sum()
        (g,) = lib.autograd.grad(z, x, retain_graph=True)
        after_grad = _np(y.grad)
        z.backward(retain_graph=True)
        once = _np(y.grad)
        z.backward()
        return [_np(g), after_grad, once, _np(y.grad), _np(x.grad)]
    g, after_grad, once, twice, xg = _both(run)
    np.testing.assert_allclose(after_grad, 2 * np.array([1.0, -3.0, 4.0]))
    np.testing.assert_allclose(twice, 3 * after_grad)


def test_retain_runs_after_every_hook_and_follows_inplace():
    def run(lib):
        x = _leaf(lib, [1.0, 2.0])
        y = x * 2
        y.register_hook(lambda g: g * 5)
        y.retain_grad()
        y.register_hook(lambda g: g * 7)
        y.sum().backward()
        hooked = _np(y.grad)
        x2 = _leaf(lib, [1.0, 2.0])
        w = x2 * 2
        w.retain_grad()
        seen = []
        w.register_hook(lambda g: seen.append(("old", _np(g))))
        w.mul_(3)
        w.register_hook(lambda g: seen.append(("new", _np(g))))
        w.sum().backward()
        return [hooked, _np(w.grad), _np(x2.grad), [s[0] for s in seen] == ["new", "old"],
                seen[0][1], seen[1][1]]
    out = _both(run)
    np.testing.assert_allclose(out[0], [35.0, 35.0])
    np.testing.assert_allclose(out[1], [1.0, 1.0])      # w.r.t. the value after mul_
    np.testing.assert_allclose(out[5], [3.0, 3.0])      # the old hook: the old value


def test_hook_on_root_and_on_a_leaf_root():
    def run(lib):
        x = lib.tensor(2.0, requires_grad=True)
        x.register_hook(lambda g: g * 3)
        x.backward()
        y = _leaf(lib, [1.0, 1.0])
        s = (y * 4).sum()
        s.register_hook(lambda g: g * 0.5)
        s.backward()
        return [_np(x.grad), _np(y.grad)]
    a, b = _both(run)
    np.testing.assert_allclose(a, 3.0)
    np.testing.assert_allclose(b, [2.0, 2.0])


def test_grad_runs_hooks_only_on_asked_inputs():
    def run(lib):
        x, w = _leaf(lib, [1.0, 2.0]), _leaf(lib, [3.0, 4.0])
        calls = []
        x.register_hook(lambda g: calls.append("x") or g * 10)
        w.register_hook(lambda g: calls.append("w"))
        (gx,) = lib.autograd.grad((x * w).sum(), x)
        return [_np(gx), calls, w.grad is None]
    gx, calls, _ = _both(run)
    np.testing.assert_allclose(gx, [30.0, 40.0])
    assert calls == ["x"]


def test_post_accumulate_grad_hook():
    def run(lib):
        p = _leaf(lib, [1.0, 2.0])
        seen = []
        p.register_post_accumulate_grad_hook(lambda t: seen.append(_np(t.grad)))
        (p * 3).sum().backward()
        (p * p).sum().backward()
        lib.autograd.grad((p * 5).sum(), p)          # no accumulation: no call
        return [len(seen), seen[0], seen[1]]
    n, a, b = _both(run)
    assert n == 2
    np.testing.assert_allclose(b, a + [2.0, 4.0])


def test_post_accumulate_hook_optimizer_in_backward():
    """The PyTorch recipe: each parameter steps as soon as its gradient is in."""
    for lib in (st, torch):
        lib.manual_seed(0)
    w0 = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    x0 = np.random.RandomState(1).randn(5, 4).astype(np.float32)

    def run(lib):
        w = lib.tensor(w0, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)

        def step(p):
            opt.step()
            opt.zero_grad()
        w.register_post_accumulate_grad_hook(step)
        for _ in range(3):
            (lib.tensor(x0) @ w.T).tanh().sum().backward()
        return [_np(w), w.grad is None]
    _both(run)


def test_errors_match_torch():
    for lib in (st, torch):
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            lib.ones(2).register_hook(lambda g: g)
        with pytest.raises(RuntimeError, match="requires_grad=False"):
            lib.ones(2).retain_grad()
        x = _leaf(lib, [1.0, 2.0])
        with pytest.raises(RuntimeError, match="non-leaf"):
            (x * 2).register_post_accumulate_grad_hook(lambda t: None)
        y = x * 2
        y.register_hook(lambda g: lib.zeros(3))
        with pytest.raises(RuntimeError, match="changed the size"):
            y.sum().backward()
        y = x * 2
        y.register_hook(lambda g: g.double())
        with pytest.raises(RuntimeError, match="changed the type"):
            y.sum().backward()

    def boom(g):
        raise ValueError("boom from a hook")
    x = _leaf(st, [1.0])
    y = x * 2
    y.register_hook(boom)
    with pytest.raises(ValueError, match="boom from a hook"):
        y.sum().backward()
    # the engine is clean after the error: the next backward works
    (x * 3).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0])
    with pytest.raises(TypeError, match="callable"):
        x.register_hook(3)
    z = x * 2
    z.register_hook(lambda g: "nope")
    with pytest.raises(TypeError, match="str"):
        z.sum().backward()


def test_handle_context_manager_and_hook_removed_mid_backward():
    x = _leaf(st, [1.0, 2.0])
    with x.register_hook(lambda g: g * 2):
        (x * 1).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])
    x.grad = None
    (x * 1).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [1.0, 1.0])
    handles = []

    def once(g):
        handles[0].remove()
        return g * 4
    handles.append(x.register_hook(once))
    x.register_hook(lambda g: g + 1)
    x.grad = None
    (x * 1).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [5.0, 5.0])
    x.grad = None
    (x * 1).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])


def test_hook_objects_are_released_with_their_tensors():
    class Hook:
        def __call__(self, g):
            return g
    base = st._C._autograd_stats()["nodes_alive"]
    x = _leaf(st, [1.0, 2.0])
    hx, hy = Hook(), Hook()
    rx, ry = weakref.ref(hx), weakref.ref(hy)
    x.register_hook(hx)
    y = x * 2
    y.register_hook(hy)
    y.retain_grad()
    y.sum().backward()
    del hx, hy, y
    gc.collect()
    assert ry() is None and rx() is not None           # y's node went, x lives
    del x
    gc.collect()
    assert rx() is None
    assert st._C._autograd_stats()["nodes_alive"] == base


def test_inplace_on_a_saved_nonleaf_releases_its_nodes():
    base = st._C._autograd_stats()["nodes_alive"]
    for _ in range(3):
        x = _leaf(st, [1.0, 2.0])
        y = x * 2
        y.mul_(y.detach() + 1)      # mul saves its operand: the in-place copy path
        y.sum().backward()
        np.testing.assert_allclose(_np(x.grad), [6.0, 10.0])
    del x, y
    gc.collect()
    assert st._C._autograd_stats()["nodes_alive"] == base


def _mlp(lib, seed=0):
    rs = np.random.RandomState(seed)
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rs.randn(*p.shape).astype(np.float32)))
    return m


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_parameter_hooks_through_a_model(compiled):
    x0 = np.random.RandomState(3).randn(6, 4).astype(np.float32)

    def run(lib):
        m = _mlp(lib)
        f = st.compile(m) if (compiled and lib is st) else m
        seen = []
        m[0].weight.register_hook(lambda g: g.clamp(-0.1, 0.1))
        m[2].bias.register_post_accumulate_grad_hook(lambda p: seen.append(_np(p.grad)))
        for _ in range(2):
            f(lib.tensor(x0)).pow(2).sum().backward()
        return [_np(p.grad) for p in m.parameters()] + [len(seen)]
    out = _both(run)
    assert np.abs(out[0]).max() <= 0.2 + 1e-6 and out[-1] == 2


def test_register_hook_inside_a_compiled_function():
    def fn(lib, x):
        y = x.tanh() * 2
        y.register_hook(lambda g: g * 3)
        return (y * y).sum()
    x0 = np.linspace(-1, 1, 5).astype(np.float32)
    tx = torch.tensor(x0, requires_grad=True)
    fn(torch, tx).backward()
    c = st.compile(lambda x: fn(st, x))
    for _ in range(2):
        sx = st.tensor(x0, requires_grad=True)
        c(sx).backward()
        np.testing.assert_allclose(_np(sx.grad), _np(tx.grad), rtol=1e-5)
    explained = st._compile.explain(lambda x: fn(st, x), st.tensor(x0, requires_grad=True))
    assert any("register_hook" in r.reason for r in explained.break_reasons)


def test_retain_grad_on_a_compiled_graph_output():
    m = _mlp(st)
    c = st.compile(m)
    x = st.randn(3, 4)
    out = c(x)
    out.retain_grad()
    out.sum().backward()
    np.testing.assert_allclose(_np(out.grad), np.ones((3, 2)))


def test_backward_inputs_accumulates_only_there():
    def run(lib):
        x, w = _leaf(lib, [1.0, 2.0]), _leaf(lib, [3.0, 4.0])
        h = x * w
        loss = (h * h).sum()
        loss.backward(inputs=[w], retain_graph=True)
        first = _np(w.grad)
        loss.backward(inputs=(w, h))          # a non-leaf input gets .grad too
        return [x.grad is None, first, _np(w.grad), _np(h.grad)]
    out = _both(run)
    assert out[0] is True
    np.testing.assert_allclose(out[2], 2 * out[1])
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (_leaf(st, [1.0]) * 2).sum().backward(inputs=[])


def test_grad_runs_only_the_nodes_leading_to_its_inputs():
    def run(lib):
        x, w = _leaf(lib, [1.0, 2.0]), _leaf(lib, [3.0, 4.0])
        seen = []
        a = x * 2
        b = w.exp()
        b.register_hook(lambda g: seen.append("b"))   # on a branch grad() does not need
        a.register_hook(lambda g: seen.append("a"))
        loss = (a * b).sum()
        (gx,) = lib.autograd.grad(loss, x)
        return [_np(gx), seen]
    gx, seen = _both(run)
    assert seen == ["a"]
    np.testing.assert_allclose(gx, 2 * np.exp([3.0, 4.0]), rtol=1e-6)


def test_grad_of_a_nonleaf_input_through_a_skipped_node():
    def run(lib):
        x = _leaf(lib, [1.0, 2.0])
        h = x.tanh()
        h.register_hook(lambda g: g * 2)
        loss = (h * h).sum()
        (gh,) = lib.autograd.grad(loss, h)
        return [_np(gh), x.grad is None]
    gh, _ = _both(run)
    np.testing.assert_allclose(gh, 4 * np.tanh([1.0, 2.0]), rtol=1e-6)


@pytest.mark.parametrize("how", ["register_hook", "internal", "post_accumulate"])
def test_hook_registered_in_a_compiled_function_fires_on_every_call(how):
    """Registering a gradient hook inside a compiled function is a graph break
    however it is spelled (Tensor.register_hook, the post-accumulate hook, or
    symtrace.autograd.hooks directly, as library code may): a reused graph
    must not drop it."""
    from symtrace.autograd import hooks as _hooks
    calls = []

    def f(x):
        y = x * 2
        if how == "register_hook":
            y.register_hook(lambda g: calls.append(1))
        elif how == "internal":
            _hooks.register_hook(y, lambda g: calls.append(1))
        else:
            x.register_post_accumulate_grad_hook(lambda p: calls.append(1))
        return y.sum()

    cf = st.compile(f, backend="interp")
    for _ in range(3):
        x = st.randn(3, requires_grad=True)
        cf(x).backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]
    assert calls == [1, 1, 1]
