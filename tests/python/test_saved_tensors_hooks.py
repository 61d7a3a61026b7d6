# symtrace.autograd.graph: saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks
# (runtime/autograd.c's saved-tensor hook stack, frontend/autograd_bind.c's owner,
# autograd/function.py for custom Functions). Checked against torch where torch is
# installed: what gets packed (count and shapes), gradients with hooks equal to the
# plain ones, nesting, disabling, errors (never a crash), retain_graph, and that the
# packed objects go with the graph. Compiled calls run eagerly while hooks are active.
import gc
import weakref

import numpy as np
import pytest

import symtrace as st
from symtrace.autograd.graph import (saved_tensors_hooks, save_on_cpu,
                                     disable_saved_tensors_hooks)


def np_of(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def recorder():
    """(hooks, seen): identity hooks that record the packed shapes and unpack count."""
    seen = {"pack": [], "unpack": 0}

    def pack(t):
        seen["pack"].append(tuple(t.shape))
        return t

    def unpack(t):
        seen["unpack"] += 1
        return t
    return saved_tensors_hooks(pack, unpack), seen


# ---- small graphs: what is packed, against torch ----

def _graphs(lib):
    """name -> (input shapes, fn(lib, *inputs) -> loss)."""
    def mul(L, a, b):
        return (a * b).sum()

    def matmul(L, a, b):
        return (a @ b).sum()

    def exp(L, a):
        return a.exp().sum()

    return {"mul": ([(3, 4), (3, 4)], mul), "matmul": ([(2, 3), (3, 4)], matmul),
            "exp": ([(5,)], exp)}


def _run(lib, fn, arrays, hooks=None):
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    if hooks is None:
        loss = fn(lib, *xs)
    else:
        with hooks:
            loss = fn(lib, *xs)
    loss.backward()
    return [np.asarray(x.grad.detach().numpy(), dtype=np.float64) for x in xs]


@pytest.mark.parametrize("name", ["mul", "matmul", "exp"])
def test_packed_like_torch(torch, name):
    shapes, fn = _graphs(st)[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    plain = _run(st, fn, arrays)
    h, seen = recorder()
    got = _run(st, fn, arrays, h)
    th, tseen = recorder()
    want = _run(torch, fn, arrays, torch.autograd.graph.saved_tensors_hooks(
        th.pack_hook, th.unpack_hook))
    assert sorted(seen["pack"]) == sorted(tseen["pack"])
    assert seen["unpack"] == len(seen["pack"])
    for g, p, w in zip(got, plain, want):
        np.testing.assert_array_equal(g, p)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_mlp_against_torch(torch):
    """Linear + ReLU: torch packs x, weight.t() and relu's result ((2,4),(4,5),(2,5));
    symtrace's linear saves x and weight ((2,4),(5,4)) and relu its output (2,5) (the
    weight as it is, not transposed): shapes differ, gradients agree."""
    rng = np.random.default_rng(1)
    xa = rng.standard_normal((2, 4)).astype(np.float32)
    wa = rng.standard_normal((5, 4)).astype(np.float32)
    ba = rng.standard_normal((5,)).astype(np.float32)

    def run(lib, hooks):
        x = lib.tensor(xa, requires_grad=True)
        w = lib.tensor(wa, requires_grad=True)
        b = lib.tensor(ba, requires_grad=True)
        F = lib.nn.functional
        if hooks is None:
            loss = F.relu(F.linear(x, w, b)).sum()
        else:
            with hooks:
                loss = F.relu(F.linear(x, w, b)).sum()
        loss.backward()
        return [np.asarray(t.grad.detach().numpy(), dtype=np.float64) for t in (x, w, b)]

    plain = run(st, None)
    h, seen = recorder()
    got = run(st, h)
    th, tseen = recorder()
    want = run(torch, torch.autograd.graph.saved_tensors_hooks(th.pack_hook, th.unpack_hook))
    assert sorted(tseen["pack"]) == [(2, 4), (2, 5), (4, 5)]
    assert len(seen["pack"]) >= 2 and (2, 5) in seen["pack"] and (2, 4) in seen["pack"]
    assert seen["unpack"] == len(seen["pack"])
    for g, p, w in zip(got, plain, want):
        np.testing.assert_array_equal(g, p)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_pack_sees_inputs_and_output_alias():
    x = st.randn(3, requires_grad=True)
    got = []
    with saved_tensors_hooks(lambda t: (got.append(t), t)[1], lambda t: t):
        y = x.exp()       # saves its output
        z = x * x         # saves x twice
    assert len(got) == 3
    assert not got[0].requires_grad and got[0].grad_fn is None   # the output's alias
    assert got[1] is x and got[2] is x                            # inputs as themselves
    (y.sum() + z.sum()).backward()
    np.testing.assert_allclose(np_of(x.grad), np_of(x.exp() + 2 * x), rtol=1e-6)


def test_pack_runs_without_grad():
    modes = []
    x = st.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: (modes.append(st.is_grad_enabled()), t * 1)[1],
                             lambda t: t):
        y = (x * x).sum()
    assert modes == [False, False]
    y.backward()
    np.testing.assert_allclose(np_of(x.grad), np_of(2 * x), rtol=1e-6)


# ---- gradients with identity hooks, other objects, save_on_cpu ----

def _mlp_grads(hooks=None, seed=0):
    st.manual_seed(seed)
    net = st.nn.Sequential(st.nn.Linear(6, 8), st.nn.ReLU(), st.nn.Linear(8, 3), st.nn.Tanh())
    x = st.randn(4, 6, requires_grad=True)
    if hooks is None:
        loss = (net(x) ** 2).mean()
    else:
        with hooks:
            loss = (net(x) ** 2).mean()
    loss.backward()
    return [np_of(x.grad)] + [np_of(p.grad) for p in net.parameters()]


def test_identity_hooks_same_gradients():
    plain = _mlp_grads()
    h, seen = recorder()
    got = _mlp_grads(h)
    assert seen["pack"] and seen["unpack"] == len(seen["pack"])
    for a, b in zip(plain, got):
        np.testing.assert_array_equal(a, b)


def test_save_on_cpu_same_gradients():
    plain = _mlp_grads()
    for pin in (False, True):
        got = _mlp_grads(save_on_cpu(pin_memory=pin))
        for a, b in zip(plain, got):
            np.testing.assert_array_equal(a, b)


def test_pack_to_numpy():
    """pack returns a numpy array (not a tensor), unpack rebuilds the tensor."""
    kinds = []

    def pack(t):
        a = t.detach().numpy().copy()
        kinds.append(type(a))
        return a

    plain = _mlp_grads()
    got = _mlp_grads(saved_tensors_hooks(pack, lambda a: st.tensor(a)))
    assert kinds and all(k is np.ndarray for k in kinds)
    for a, b in zip(plain, got):
        np.testing.assert_array_equal(a, b)


def test_nesting_inner_wins():
    x = st.randn(3, requires_grad=True)
    log = []

    def pair(tag):
        return saved_tensors_hooks(lambda t: (tag, t), lambda p: (log.append(p[0]), p[1])[1])
    with pair("A"):
        with pair("B"):
            y = x.exp()
        assert st._C._saved_tensors_hooks_top() is not None
        z = (y * x).sum()
    assert st._C._saved_tensors_hooks_top() is None
    z.backward()
    assert sorted(log) == ["A", "A", "B"]     # as torch: each unpacked by its own pair
    np.testing.assert_allclose(np_of(x.grad), np_of(x.exp() * x + x.exp()), rtol=1e-6)


def test_nesting_against_torch(torch):
    def run(lib, sth):
        x = lib.tensor(np.arange(3, dtype=np.float32) / 3, requires_grad=True)
        log = []

        def pair(tag):
            return sth(lambda t: (tag, t), lambda p: (log.append(p[0]), p[1])[1])
        with pair("A"):
            with pair("B"):
                y = x.exp()
            z = (y * x).sum()
        z.backward()
        return sorted(log)
    assert run(st, saved_tensors_hooks) == run(torch, torch.autograd.graph.saved_tensors_hooks)


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        with pytest.raises(RuntimeError, match="no hooks here"):
            with save_on_cpu():
                pass
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                with save_on_cpu():
                    pass
        with pytest.raises(RuntimeError, match="no hooks here"):   # restored
            with save_on_cpu():
                pass
    with save_on_cpu():     # enabled again
        pass
    # entering it while hooks are active raises too (as torch 2.13)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="busy"):
            with disable_saved_tensors_hooks("busy"):
                pass
    assert st._C._saved_tensors_hooks_top() is None


def test_disable_against_torch(torch):
    for lib in (st, torch):
        G = lib.autograd.graph
        with G.saved_tensors_hooks(lambda t: t, lambda t: t):
            with pytest.raises(RuntimeError, match="msg"):
                with G.disable_saved_tensors_hooks("msg"):
                    pass
        with G.disable_saved_tensors_hooks("msg2"):
            with pytest.raises(RuntimeError, match="msg2"):
                with G.save_on_cpu():
                    pass


# ---- errors: Python exceptions, never a crash ----

def test_unpack_returns_non_tensor():
    x = st.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: "not a tensor"):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor.*str"):
        y.backward()


def test_unpack_wrong_shape_and_dtype():
    x = st.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: st.zeros(4)):
        y = (x * x).sum()
    with pytest.raises(RuntimeError, match=r"shape \[4\].*MulBackward0.*\[3\]"):
        y.backward()
    with saved_tensors_hooks(lambda t: t, lambda t: t.double()):
        y = x.exp().sum()
    with pytest.raises(RuntimeError, match="dtype float64.*ExpBackward0.*float32"):
        y.backward()


def test_hooks_that_raise():
    x = st.randn(3, requires_grad=True)

    def bad_pack(t):
        raise ValueError("pack failed")
    with saved_tensors_hooks(bad_pack, lambda t: t):
        with pytest.raises(ValueError, match="pack failed"):
            x * x
    assert st._C._saved_tensors_hooks_top() is None

    def bad_unpack(t):
        raise KeyError("unpack failed")
    with saved_tensors_hooks(lambda t: t, bad_unpack):
        y = (x * x).sum()
    with pytest.raises(KeyError, match="unpack failed"):
        y.backward()


def test_pack_modifying_input_in_place():
    x = st.randn(3, requires_grad=True)
    a = x * 1
    with saved_tensors_hooks(lambda t: t.mul_(2), lambda t: t):
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            a.exp()


def test_no_version_check_with_hooks(torch):
    """With hooks, an in-place change of a saved tensor is not detected (torch: the hooks
    own the value); without hooks it is."""
    for lib in (st, torch):
        x = lib.ones(3, requires_grad=True)
        a = x * 1
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = a.exp()
        with lib.no_grad():
            y.mul_(2)
        y.sum().backward()                            # no error
        x2 = lib.ones(3, requires_grad=True)
        y2 = (x2 * 1).exp()
        with lib.no_grad():
            y2.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y2.sum().backward()


# ---- retain_graph, freeing, leaks ----

def test_retain_graph_twice():
    x = st.randn(3, requires_grad=True)
    h, seen = recorder()
    with h:
        y = (x * x.exp()).sum()
    npack = len(seen["pack"])
    y.backward(retain_graph=True)
    g1 = np_of(x.grad)
    y.backward()
    assert seen["unpack"] == 2 * npack          # unpacked on every backward, as torch
    np.testing.assert_allclose(np_of(x.grad), 2 * g1, rtol=1e-6)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_retain_graph_counts_like_torch(torch):
    def run(lib):
        x = lib.tensor(np.ones(3, np.float32), requires_grad=True)
        cnt = [0, 0]

        def p(t):
            cnt[0] += 1
            return t

        def u(t):
            cnt[1] += 1
            return t
        with lib.autograd.graph.saved_tensors_hooks(p, u):
            y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return cnt
    assert run(st) == run(torch) == [2, 4]


class Box:
    def __init__(self, t):
        self.t = t.detach().clone()


def _boxed():
    refs = []

    def pack(t):
        b = Box(t)
        refs.append(weakref.ref(b))
        return b
    return saved_tensors_hooks(pack, lambda b: b.t), refs


def test_packed_freed_after_backward():
    x = st.randn(3, requires_grad=True)
    h, refs = _boxed()
    with h:
        y = (x.exp() * x).sum()
    assert len(refs) == 3 and all(r() is not None for r in refs)
    y.backward()
    assert all(r() is None for r in refs)       # without retain_graph: freed after use
    h, refs = _boxed()
    with h:
        y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    assert all(r() is not None for r in refs)
    del y
    assert all(r() is None for r in refs)       # with the graph


def test_packed_freed_with_graph_without_backward():
    x = st.randn(4, requires_grad=True)
    h, refs = _boxed()
    gc.collect()   # earlier tests' garbage would go below
    nodes = st._C._autograd_stats()["nodes_alive"]
    with h:
        y = x.exp().tanh().sigmoid()
    assert len(refs) == 3
    del y
    assert all(r() is None for r in refs)
    assert st._C._autograd_stats()["nodes_alive"] == nodes


def test_identity_on_output_no_cycle():
    """torch's identity hook on a saved output keeps the graph alive even after gc;
    symtrace hands pack an alias of the output, so the graph goes with the output."""
    x = st.randn(3, requires_grad=True)
    gc.collect()   # earlier tests' garbage would go below
    nodes = st._C._autograd_stats()["nodes_alive"]
    gc.disable()
    try:
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            y = x.exp()
        r = weakref.ref(y)
        del y
        assert r() is None
        assert st._C._autograd_stats()["nodes_alive"] == nodes
    finally:
        gc.enable()


def test_cycle_through_pack_collected():
    """A packed object that refers back to the output (through a closure) is a cycle
    the garbage collector frees (tensors traverse their graph's packed objects)."""
    x = st.randn(3, requires_grad=True)
    gc.collect()   # earlier tests' garbage would go below
    nodes = st._C._autograd_stats()["nodes_alive"]
    holder = {}

    class Cyc:
        pass
    with saved_tensors_hooks(lambda t: (lambda c: (setattr(c, "h", holder), c)[1])(Cyc()),
                             lambda c: c.h["y"].detach()):
        y = x.exp()
    holder["y"] = y
    r = weakref.ref(y)
    del y, holder
    gc.collect()
    assert r() is None
    assert st._C._autograd_stats()["nodes_alive"] == nodes


# ---- custom autograd.Function ----

class MulTwice(st.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        y = x * w
        ctx.save_for_backward(x, w, y)
        return y * 2

    @staticmethod
    def backward(ctx, g):
        x, w, y = ctx.saved_tensors
        return g * 2 * w, g * 2 * x


def test_custom_function_packs():
    x = st.randn(3, requires_grad=True)
    w = st.randn(3, requires_grad=True)
    got = []
    unpacked = [0]

    def pack(t):
        got.append(t)
        return ("boxed", t)

    def unpack(p):
        unpacked[0] += 1
        return p[1]
    with saved_tensors_hooks(pack, unpack):
        out = MulTwice.apply(x, w)
    assert len(got) == 3 and got[0] is x and got[1] is w and not got[2].requires_grad
    out.sum().backward()
    assert unpacked[0] == 3
    np.testing.assert_allclose(np_of(x.grad), 2 * np_of(w), rtol=1e-6)
    np.testing.assert_allclose(np_of(w.grad), 2 * np_of(x), rtol=1e-6)


def test_custom_function_against_torch(torch):
    def run(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x
        seen, un = [], [0]
        with lib.autograd.graph.saved_tensors_hooks(lambda t: (seen.append(tuple(t.shape)), t)[1],
                                                    lambda t: (un.__setitem__(0, un[0] + 1), t)[1]):
            y = F.apply(lib.tensor(np.ones(3, np.float32), requires_grad=True))
            F.apply(lib.tensor(np.ones(2, np.float32)))   # no grad needed: nothing packed
        y.sum().backward()
        return seen, un[0]
    assert run(st) == run(torch) == ([(3,)], 1)


def test_custom_function_unpack_errors():
    x = st.randn(3, requires_grad=True)
    w = st.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: 3):
        out = MulTwice.apply(x, w)
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor.*int"):
        out.sum().backward()
    with saved_tensors_hooks(lambda t: t, lambda t: st.zeros(5)):
        out = MulTwice.apply(x, w)
    with pytest.raises(RuntimeError, match=r"shape \[5\]"):
        out.sum().backward()


def test_custom_function_packed_freed():
    x = st.randn(3, requires_grad=True)
    w = st.randn(3, requires_grad=True)
    h, refs = _boxed()
    with h:
        out = MulTwice.apply(x, w)
    assert len(refs) == 3 and all(r() is not None for r in refs)
    del out
    gc.collect()
    assert all(r() is None for r in refs)


# ---- compiled calls ----

@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_compiled_call_packs(backend):
    def f(x, w):
        return (x @ w).tanh().exp().sum()

    cf = st.compile(f, backend=backend)
    st.manual_seed(0)
    xa, wa = st.randn(3, 4), st.randn(4, 5)

    def run(fn, hooks=None):
        x = xa.clone().requires_grad_(True)
        w = wa.clone().requires_grad_(True)
        if hooks is None:
            y = fn(x, w)
        else:
            with hooks:
                y = fn(x, w)
        name = y.grad_fn.name()
        y.backward()
        return name, np_of(x.grad), np_of(w.grad)

    run(cf)     # the first call translates (and runs on the trace)
    name_c, gx_c, gw_c = run(cf)
    assert name_c == "CompiledFunctionBackward"
    _, gx, gw = run(f)
    h, seen = recorder()
    name_h, gx_h, gw_h = run(cf, h)
    # the call ran eagerly: each op's saved tensors went through pack
    assert name_h != "CompiledFunctionBackward"
    assert (3, 4) in seen["pack"] and (4, 5) in seen["pack"] and (3, 5) in seen["pack"]
    assert seen["unpack"] == len(seen["pack"])
    np.testing.assert_array_equal(gx_h, gx)
    np.testing.assert_array_equal(gw_h, gw)
    np.testing.assert_allclose(gx_c, gx, rtol=1e-5, atol=1e-6)
    # and compiled again once the hooks are gone
    assert run(cf)[0] == "CompiledFunctionBackward"
