# tests/python/test_compile_partial_backward.py - a compiled graph with several
# differentiable outputs is one tape node (CompiledFunctionBackward). A backward
# from one output without retain_graph frees only what that output's gradient
# read; a later backward from another output runs, as it does eagerly (where the
# outputs' paths are separate nodes). A second backward through the same output
# is refused as eager refuses it, unless its path saved nothing.
import numpy as np
import pytest

import symtrace as st


def leaf(seed=0, n=6):
    v = np.random.RandomState(seed).randn(n).astype(np.float32)
    return st.tensor(v, requires_grad=True)


def two_heads(x):
    a = x + 1
    return a.sin(), a.cos()


def run_both(fn, x):
    b, c = fn(x)
    b.sum().backward()
    gb = x.grad.numpy().copy()
    c.sum().backward()
    g = x.grad.numpy().copy()
    x.grad = None
    return gb, g


def test_second_output_backward_after_first_like_eager():
    x = leaf()
    want = run_both(two_heads, x)
    f = st.compile(two_heads)
    for _ in range(4):       # the first call is traced eagerly, the others run the graph
        got = run_both(f, x)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


@pytest.mark.parametrize("compiled", [False, True])
def test_same_output_twice_is_refused(compiled):
    x = leaf()
    f = st.compile(two_heads) if compiled else two_heads
    for _ in range(3):
        b, c = f(x)
        b.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            b.sum().backward()
        c.sum().backward()       # the other output's share is still there
        x.grad = None


def test_retain_graph_allows_the_same_output_again():
    x = leaf()
    f = st.compile(two_heads)
    for _ in range(3):
        b, c = f(x)
        b.sum().backward(retain_graph=True)
        b.sum().backward()
        c.sum().backward()
        want = 2 * np.cos(x.detach().numpy() + 1) - np.sin(x.detach().numpy() + 1)
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5)
        x.grad = None


def plain_and_saved(x):
    a = x + 1                # its gradient reads nothing saved
    return a, a.exp()


@pytest.mark.parametrize("compiled", [False, True])
def test_output_whose_path_saved_nothing_backwards_twice(compiled):
    x = leaf(1)
    f = st.compile(plain_and_saved) if compiled else plain_and_saved
    for _ in range(3):
        a, e = f(x)
        a.sum().backward()
        a.sum().backward()   # eager: no node on a's path saved anything
        e.sum().backward()
        want = 2 + np.exp(x.detach().numpy() + 1)
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5)
        x.grad = None


def test_both_outputs_then_either_again_is_refused():
    x = leaf()
    f = st.compile(two_heads)
    for _ in range(3):
        b, c = f(x)
        (b.sum() + c.sum()).backward()
        with pytest.raises(RuntimeError, match="second time"):
            c.sum().backward()
        x.grad = None


def test_saved_share_freed_after_each_output():
    """After both backwards nothing of the graph's saved set stays alive."""
    x = st.tensor(np.random.RandomState(2).randn(256, 256).astype(np.float32),
                  requires_grad=True)
    f = st.compile(two_heads)
    for _ in range(3):
        base = st.memory.memory_allocated("cpu")
        b, c = f(x)
        lb, lc = b.sum(), c.sum()
        del b, c
        lb.backward()
        mid = st.memory.memory_allocated("cpu")
        lc.backward()
        end = st.memory.memory_allocated("cpu")
        x.grad = None
        del lb, lc
        assert end <= mid
        assert st.memory.memory_allocated("cpu") <= base


class Lin(st.nn.Module):
    def __init__(self, i, o, seed):
        super().__init__()
        st.manual_seed(seed)
        self.l = st.nn.Linear(i, o)

    def forward(self, x):
        return self.l(x).tanh()


def gan_step(G, D, z):
    fake = G(z)
    ld = D(fake.detach()).sum()
    return fake, ld


def test_gan_pattern_fake_and_detached_critic_in_one_graph():
    """fake = G(z); ld = D(fake.detach()) in one graph: ld.backward() must leave
    what D(fake).backward() through G needs."""
    z = st.tensor(np.random.RandomState(3).randn(5, 4).astype(np.float32))
    grads = []
    for compiled in (False, True):
        G, D = Lin(4, 3, 0), Lin(3, 1, 1)
        step = st.compile(gan_step) if compiled else gan_step
        got = []
        for _ in range(3):
            fake, ld = step(G, D, z)
            ld.backward()
            D(fake).sum().backward()
            got.append([p.grad.numpy().copy() for p in (*G.parameters(), *D.parameters())])
            for p in (*G.parameters(), *D.parameters()):
                p.grad = None
        grads.append(got)
    for e, c in zip(*grads):
        for a, b in zip(e, c):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def gan_step_zero_grad(G, D, od, z):
    fake = G(z)
    od.zero_grad()           # made after the graph: the critic stays in the same graph
    ld = D(fake.detach()).sum()
    return fake, ld


def test_zero_grad_between_generator_and_critic_keeps_one_graph():
    z = st.tensor(np.random.RandomState(4).randn(5, 4).astype(np.float32))
    runs = []
    for compiled in (False, True):
        G, D = Lin(4, 3, 0), Lin(3, 1, 1)
        od = st.optim.SGD(D.parameters(), lr=0.1)
        og = st.optim.SGD(G.parameters(), lr=0.1)
        st.reset()
        step = st.compile(gan_step_zero_grad) if compiled else gan_step_zero_grad
        got = []
        for _ in range(3):
            fake, ld = step(G, D, od, z)
            ld.backward()
            od.step()
            og.zero_grad()
            D(fake).sum().backward()
            og.step()
            got.append([p.detach().numpy().copy() for p in (*G.parameters(), *D.parameters())])
        if compiled:
            s = st._C._fe_stats()
            assert (s["graphs"], s["breaks"]) == (1, 0), s
        runs.append(got)
    for e, c in zip(*runs):
        for a, b in zip(e, c):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
