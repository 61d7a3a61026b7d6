"""Tensor identity and garbage collection through the C autograd graph.

One Python object per st_tensor while it lives (as PyTorch keeps one per
TensorImpl), and tp_traverse on tensors: a gradient hook or a custom
Function's context that refers back to its tensor makes a cycle through C
references, which Python's collector must see and free; what is still
reachable must survive a collection and keep working."""
import gc
import weakref

import pytest

import symtrace as st
from symtrace import nn
from symtrace.autograd import Function


class Marker:
    pass


def collected(make):
    """make() builds a cycle and returns a weak reference into it; True when
    a collection frees it (and not before: the cycle is real)."""
    gc.collect()
    r = make()
    alive_before = r() is not None
    gc.collect()
    return alive_before and r() is None


# ---------------- identity ----------------

def test_grad_is_the_same_object_each_time():
    x = st.randn(3, requires_grad=True)
    (x * 2).sum().backward()
    g = x.grad
    assert x.grad is g
    assert x.grad is x.grad


def test_post_accumulate_hook_gets_the_parameter_itself():
    p = nn.Parameter(st.randn(3))
    seen = []
    p.register_post_accumulate_grad_hook(lambda t: seen.append(t))
    (p * 3).sum().backward()
    assert len(seen) == 1 and seen[0] is p and type(seen[0]) is nn.Parameter


def test_identity_ends_with_the_wrapper():
    """A wrapper that died leaves no stale back pointer: the next access
    makes a fresh, working object."""
    x = st.randn(3, requires_grad=True)
    (x * 2).sum().backward()
    r = weakref.ref(x.grad)
    gc.collect()
    assert r() is None
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_grad_fn_is_the_same_object_each_time():
    x = st.randn(3, requires_grad=True)
    y = x * 2
    z = y.exp()
    assert y.grad_fn is y.grad_fn
    assert z.grad_fn.next_functions[0][0] is y.grad_fn
    g = y.grad_fn
    del g
    gc.collect()
    assert y.grad_fn.name() == "MulBackward0"


def test_detach_and_views_are_new_objects():
    x = st.randn(4)
    assert x.detach() is not x
    assert x.view(2, 2) is not x
    assert x[1:] is not x[1:]


# ---------------- cycles the collector frees ----------------

def test_leaf_hook_referring_to_its_tensor_is_collected():
    def make():
        t = st.randn(3, requires_grad=True)
        m = Marker()
        t.register_hook(lambda g: (m, t) and g)
        return weakref.ref(m)
    assert collected(make)


def test_post_accumulate_hook_cycle_is_collected():
    def make():
        p = nn.Parameter(st.randn(3))
        m = Marker()
        p.register_post_accumulate_grad_hook(lambda t: (m, p) and None)
        return weakref.ref(m)
    assert collected(make)


def test_non_leaf_hook_referring_to_its_tensor_is_collected():
    def make():
        x = st.randn(3, requires_grad=True)
        y = x * 2
        m = Marker()
        y.register_hook(lambda g: (m, y) and g)
        return weakref.ref(m)
    assert collected(make)


def test_retain_grad_tensor_with_hook_cycle_is_collected():
    def make():
        x = st.randn(3, requires_grad=True)
        y = x.exp()
        y.retain_grad()
        m = Marker()
        y.register_hook(lambda g: (m, y) and g)
        (y * 2).sum().backward()
        return weakref.ref(m)
    assert collected(make)


class Keep(Function):
    @staticmethod
    def forward(ctx, x, box):
        ctx.box = box
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2, None


def test_custom_function_ctx_referring_to_its_output_is_collected():
    def make():
        x = st.randn(3, requires_grad=True)
        m = Marker()
        out = Keep.apply(x, m)
        m.out = out          # out -> node -> ctx -> m -> out
        return weakref.ref(m)
    assert collected(make)


def test_module_keeping_its_output_with_backward_hooks_is_collected():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            out = self.lin(x)
            self.last = out
            return out

    def make():
        net = Net()
        net.register_full_backward_hook(lambda mod, gi, go: None)
        net(st.randn(2, 3, requires_grad=True))
        return weakref.ref(net)
    assert collected(make)


# ---------------- what is reachable survives ----------------

def test_hook_survives_collection_while_its_tensor_is_reachable():
    calls = []
    x = st.randn(3, requires_grad=True)
    x.register_hook(lambda g: calls.append(1) or g * 10)
    holder = [x]
    del x
    gc.collect()
    (holder[0] * 1).sum().backward()
    assert calls == [1]
    assert holder[0].grad.tolist() == [10.0, 10.0, 10.0]


def test_hook_survives_when_only_the_graph_holds_the_leaf():
    """The leaf's wrapper is gone; the graph (mul saves its inputs) still
    holds the leaf, so its hooks must stay and fire."""
    calls = []
    x = st.randn(3, requires_grad=True)
    x.register_hook(lambda g: calls.append(g.tolist()) or g)
    y = x * x
    del x
    gc.collect()
    y.sum().backward()
    assert len(calls) == 1


def test_non_leaf_hook_survives_collection_before_backward():
    calls = []
    x = st.randn(3, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: calls.append(1) or g * 2)
    z = y.sum()
    del y
    gc.collect()
    z.backward()
    assert calls == [1]
    assert x.grad.tolist() == [6.0, 6.0, 6.0]


def test_custom_function_survives_collection_before_backward():
    x = st.randn(3, requires_grad=True)
    out = Keep.apply(x, Marker())
    gc.collect()
    out.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_collection_inside_a_hook_during_backward():
    """A collection that runs while the engine is inside a hook must not
    free what the running backward still uses."""
    def hook(g):
        gc.collect()
        return g
    x = st.randn(8, requires_grad=True)
    h = x * 2
    h.register_hook(hook)
    out = Keep.apply(h.exp(), Marker())
    loss = out.sum()
    del h, out
    loss.backward()
    assert x.grad is not None and len(x.grad.tolist()) == 8


def test_many_tensors_with_hooks_do_not_leak():
    """1000 self-referring hooked tensors: a collection frees them all."""
    gc.collect()
    refs = []
    for _ in range(1000):
        t = st.randn(4, requires_grad=True)
        m = Marker()
        t.register_hook(lambda g, t=t, m=m: g)
        refs.append(weakref.ref(m))
        del t, m
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


@pytest.mark.parametrize("gen", [0, 1, 2])
def test_collection_of_each_generation_during_training(gen):
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = st.optim.SGD(net.parameters(), lr=0.1)
    x, y = st.randn(16, 4), st.randn(16, 1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        gc.collect(gen)
        loss.backward()
        gc.collect(gen)
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
