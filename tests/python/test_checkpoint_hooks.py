# Non-reentrant activation checkpointing on saved-tensor hooks
# (symtrace/utils/checkpoint.py, use_reentrant=False): the forward keeps handles only,
# the first unpack in a backward re-runs the function once (same RNG state), and the
# gradients are bit-identical to no checkpoint, with dropout too; inputs that do not
# require grad, autograd.grad (parameters' .grad untouched, as torch), retain_graph
# (recomputed per backward), tensors inside containers, early_stop, the frames freed
# with the graph. Against torch where torch is installed.
import gc
import weakref

import numpy as np
import pytest

import symtrace as st
from symtrace.autograd.graph import saved_tensors_hooks
from symtrace.utils.checkpoint import checkpoint


def np_of(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def mlp(p=0.3, seed=0):
    st.manual_seed(seed)
    nn = st.nn
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(p), nn.Linear(16, 16),
                         nn.Tanh(), nn.Dropout(p), nn.Linear(16, 3))


class Counted:
    def __init__(self, m):
        self.m, self.calls = m, 0

    def __call__(self, x):
        self.calls += 1
        return self.m(x)


def test_recomputes_once_per_backward_bit_identical():
    m = mlp()
    xn = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)

    def grads(ck):
        for p in m.parameters():
            p.grad = None
        x = st.tensor(xn, requires_grad=True)
        st.manual_seed(11)
        f = Counted(m)
        y = checkpoint(f, x, use_reentrant=False) if ck else f(x)
        assert f.calls == 1
        (y * y).sum().backward()
        return f.calls, [np_of(x.grad)] + [np_of(p.grad) for p in m.parameters()]

    c0, g0 = grads(False)
    c1, g1 = grads(True)
    assert (c0, c1) == (1, 2)            # one recomputation, not one per saved tensor
    for a, b in zip(g0, g1):
        np.testing.assert_array_equal(a, b)


def test_forward_keeps_handles_only():
    """Inside the checkpoint the pack hook is checkpoint's (the innermost pair)."""
    seen = []
    lin = st.nn.Linear(4, 4)
    x = st.randn(3, 4, requires_grad=True)
    with saved_tensors_hooks(lambda t: (seen.append(tuple(t.shape)), t)[1], lambda t: t):
        y = checkpoint(lambda a: lin(a).tanh(), x, use_reentrant=False)
        z = (y * y).sum()              # outside the checkpoint: the user's hooks again
    assert seen == [(3, 4), (3, 4)]    # y twice (mul), nothing from inside
    z.backward()
    assert x.grad is not None and lin.weight.grad is not None


def test_inputs_without_grad():
    lin = st.nn.Linear(4, 4)
    x = st.randn(3, 4)
    y = checkpoint(lin, x, use_reentrant=False)
    assert y.requires_grad
    y.sum().backward()
    assert lin.weight.grad is not None and x.grad is None
    # nothing inside requires grad: neither does the output (as torch)
    z = checkpoint(lambda a: a * 2, x, use_reentrant=False)
    assert not z.requires_grad and z.grad_fn is None


def test_autograd_grad_leaves_parameters_alone():
    m = mlp(p=0.25)
    xn = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    st.manual_seed(3)
    x = st.tensor(xn, requires_grad=True)
    g0 = st.autograd.grad((m(x) ** 2).sum(), x)[0]
    st.manual_seed(3)
    x = st.tensor(xn, requires_grad=True)
    y = checkpoint(m, x, use_reentrant=False)
    g1 = st.autograd.grad((y ** 2).sum(), x)[0]
    np.testing.assert_array_equal(np_of(g0), np_of(g1))
    assert all(p.grad is None for p in m.parameters())


def test_autograd_grad_like_torch(torch):
    res = {}
    for L in (st, torch):
        lin = L.nn.Linear(4, 4)
        x = L.ones(2, 4, requires_grad=True)
        y = L.utils.checkpoint.checkpoint(lambda a: lin(a).exp(), x, use_reentrant=False)
        (g,) = L.autograd.grad(y.sum(), x)
        res[L.__name__] = (tuple(g.shape), lin.weight.grad is None)
    assert res["symtrace"] == res["torch"] == ((2, 4), True)


def test_retain_graph_recomputes_each_backward():
    lin = st.nn.Linear(4, 4)
    f = Counted(lambda a: lin(a).tanh())
    x = st.randn(3, 4, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    loss = (y * y).sum()
    loss.backward(retain_graph=True)
    g1 = np_of(x.grad)
    loss.backward()
    assert f.calls == 3
    np.testing.assert_allclose(np_of(x.grad), 2 * g1, rtol=1e-6)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_tensors_in_containers_get_gradients():
    a = st.randn(3, requires_grad=True)
    b = st.randn(3, requires_grad=True)
    y = checkpoint(lambda pair: (pair[0] * pair[1]).exp(), [a, b], use_reentrant=False)
    y.sum().backward()
    e = np_of((a * b).exp())
    np.testing.assert_allclose(np_of(a.grad), e * np_of(b), rtol=1e-6)
    np.testing.assert_allclose(np_of(b.grad), e * np_of(a), rtol=1e-6)


@pytest.mark.parametrize("early_stop", [True, False])
def test_early_stop(early_stop):
    log = []

    def f(a):
        h = a.exp()              # the last save
        log.append("after")
        return h * 2

    x = st.randn(3, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False, early_stop=early_stop)
    y.sum().backward()
    assert log == (["after"] if early_stop else ["after", "after"])
    np.testing.assert_allclose(np_of(x.grad), 2 * np_of(x.exp()), rtol=1e-6)


def test_frames_freed_with_graph():
    class Probe:
        def __call__(self, a):
            return a.exp().tanh()
    gc.collect()   # earlier tests' garbage would go below
    nodes = st._C._autograd_stats()["nodes_alive"]
    x = st.randn(3, requires_grad=True)
    p = Probe()
    r = weakref.ref(p)
    y = checkpoint(p, x, use_reentrant=False)
    del p
    assert r() is not None            # the frame (held by the handles) keeps it
    del y
    gc.collect()
    assert r() is None
    assert st._C._autograd_stats()["nodes_alive"] == nodes
    p = Probe()
    r = weakref.ref(p)
    y = checkpoint(p, x, use_reentrant=False)
    del p
    y.sum().backward()                 # without retain_graph: handles released after use
    assert r() is None


def test_under_user_hooks_and_save_on_cpu():
    m = mlp(p=0.0)
    x = st.randn(4, 6, requires_grad=True)
    (m(x) ** 2).sum().backward()
    g0 = [np_of(x.grad)] + [np_of(p.grad) for p in m.parameters()]
    for p in m.parameters():
        p.grad = None
    x.grad = None
    with st.autograd.graph.save_on_cpu():
        y = checkpoint(m, x, use_reentrant=False)
    (y ** 2).sum().backward()
    g1 = [np_of(x.grad)] + [np_of(p.grad) for p in m.parameters()]
    for a, b in zip(g0, g1):
        np.testing.assert_array_equal(a, b)
