# tests/python/test_compile_components.py - a compiled graph whose
# differentiable outputs and inputs split into independent parts records one
# tape node per part (runtime/cfn.c, find_parts), as eager records separate
# nodes: a backward from one part never runs the other's backward (nor sends
# zeros into its inputs' histories), each part's outputs name their own
# grad_fn, and each part frees only its own saved tensors.
import numpy as np
import pytest

import symtrace as st


def arr(seed, n=5):
    return np.random.RandomState(seed).randn(n).astype(np.float32)


# ---- the FX reproducer: an autograd.Function with a side effect breaks the
# graph; the resume graph writes into both its result and x2

LOG = []


class FX(st.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        LOG.append("fwd")
        return a * 2

    @staticmethod
    def backward(ctx, g):
        LOG.append("bwd")
        return g * 2


def fx_fn(x0, x2):
    v1 = x0 * 1.5
    v1 = FX.apply(v1)
    v1.zero_()
    x2.zero_()
    return (x2,)


def fx_run(fn, k):
    del LOG[:]
    a = st.tensor(2.0 + k).requires_grad_()
    b = st.tensor(1.0).requires_grad_()
    out = fn(a.clone(), b.clone())
    out[0].sum().backward()
    return list(LOG), a.grad, b.grad


def test_fx_backward_from_x2_alone_never_runs_fx_backward():
    want = fx_run(fx_fn, 0)
    assert want[0] == ["fwd"] and want[1] is None
    g = st.compile(fx_fn)
    for k in range(4):   # the first call traces, the others run the graphs
        log, ga, gb = fx_run(g, k)
        assert log == ["fwd"], (k, log)
        assert ga is None, (k, ga)
        assert gb is not None and float(gb) == 0.0


def test_fx_matches_torch():
    torch = pytest.importorskip("torch")
    tlog = []

    class TFX(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            tlog.append("fwd")
            return a * 2

        @staticmethod
        def backward(ctx, g):
            tlog.append("bwd")
            return g * 2

    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)
    x0, x2 = a.clone(), b.clone()
    v1 = TFX.apply(x0 * 1.5)
    v1.zero_()
    x2.zero_()
    x2.sum().backward()
    g = st.compile(fx_fn)
    for k in range(3):
        log, ga, gb = fx_run(g, k)
        assert log == tlog
        assert (ga is None) == (a.grad is None)
        assert float(gb) == float(b.grad)


# ---- two independent heads

def heads(x, y):
    return (x * 2).sin(), y.exp() * y


def t_heads(torch, x, y):
    return (x * 2).sin(), y.exp() * y


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_two_heads_either_order_without_retain(order):
    torch = pytest.importorskip("torch")
    xs, ys = arr(0), arr(1)
    tx = torch.tensor(xs, requires_grad=True)
    ty = torch.tensor(ys, requires_grad=True)
    to = t_heads(torch, tx, ty)
    want = []
    for i in order:
        to[i].sum().backward()
        want.append((None if tx.grad is None else tx.grad.numpy().copy(),
                     None if ty.grad is None else ty.grad.numpy().copy()))
    f = st.compile(heads)
    for _ in range(4):
        x = st.tensor(xs, requires_grad=True)
        y = st.tensor(ys, requires_grad=True)
        o = f(x, y)
        for i, (wx, wy) in zip(order, want):
            o[i].sum().backward()
            for got, w in ((x.grad, wx), (y.grad, wy)):
                if w is None:
                    assert got is None
                else:
                    np.testing.assert_allclose(got.numpy(), w, rtol=1e-5, atol=1e-6)


def test_two_heads_second_backward_through_same_head_refused():
    f = st.compile(heads)
    for _ in range(3):
        x = st.tensor(arr(0), requires_grad=True)
        y = st.tensor(arr(1), requires_grad=True)
        a, b = f(x, y)
        a.sum().backward()
        with pytest.raises(RuntimeError, match="second time"):
            a.sum().backward()
        b.sum().backward()   # the other head's saved tensors are still there
        np.testing.assert_allclose(y.grad.numpy(), np.exp(arr(1)) * (1 + arr(1)), rtol=1e-5)


def test_grad_fn_of_each_head_is_its_own_node():
    f = st.compile(heads)
    for k in range(3):
        x = st.tensor(arr(0), requires_grad=True)
        y = st.tensor(arr(1), requires_grad=True)
        a, b = f(x, y)
        assert a.grad_fn is not None and b.grad_fn is not None
        if k:   # a graph's run (the first call ran eagerly)
            assert a.grad_fn.name() == b.grad_fn.name() == "CompiledFunctionBackward"
            assert a.grad_fn is not b.grad_fn
            na = [n for n, _ in a.grad_fn.next_functions]
            nb = [n for n, _ in b.grad_fn.next_functions]
            assert len(na) == 1 and len(nb) == 1   # x's edge alone, y's alone


def test_one_part_with_two_outputs_and_another_part():
    # part 1: (x.sin(), x.cos() * x); part 2: y * y. A backward from x.sin()
    # alone, then y's, then x.cos()'s: each as eager.
    def fn(x, y):
        return x.sin(), x.cos() * x, y * y

    xs, ys = arr(2), arr(3)
    f = st.compile(fn)
    for _ in range(3):
        x = st.tensor(xs, requires_grad=True)
        y = st.tensor(ys, requires_grad=True)
        a, b, c = f(x, y)
        a.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.cos(xs), rtol=1e-5, atol=1e-6)
        assert y.grad is None
        c.sum().backward()
        np.testing.assert_allclose(y.grad.numpy(), 2 * ys, rtol=1e-5)
        b.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) + np.cos(xs) - xs * np.sin(xs),
                                   rtol=1e-5, atol=1e-5)


def test_saved_tensor_read_by_two_parts():
    # w (no grad) is saved by both parts' backwards: the first part's
    # backward must not free it under the second
    def fn(x, y, w):
        return (x * w).sum(), (y * w).sum()

    xs, ys, ws = arr(4), arr(5), arr(6)
    f = st.compile(fn)
    for _ in range(3):
        x = st.tensor(xs, requires_grad=True)
        y = st.tensor(ys, requires_grad=True)
        w = st.tensor(ws)
        a, b = f(x, y, w)
        b.backward()
        assert x.grad is None
        a.backward()
        np.testing.assert_allclose(x.grad.numpy(), ws, rtol=1e-6)
        np.testing.assert_allclose(y.grad.numpy(), ws, rtol=1e-6)


def test_double_backward_on_two_part_graph():
    torch = pytest.importorskip("torch")

    def fn(x, y):
        return x ** 3, (y * y).sin()

    xs, ys = arr(7), arr(8)
    tx = torch.tensor(xs, requires_grad=True)
    ty = torch.tensor(ys, requires_grad=True)
    ta, tb = fn(tx, ty)
    (tg,) = torch.autograd.grad(tb.sum(), ty, create_graph=True)
    tg.sum().backward()
    f = st.compile(fn)
    for _ in range(3):
        x = st.tensor(xs, requires_grad=True)
        y = st.tensor(ys, requires_grad=True)
        a, b = f(x, y)
        (g,) = st.autograd.grad(b.sum(), y, create_graph=True)
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-5, atol=1e-6)
        g.sum().backward()
        np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-4, atol=1e-5)
        assert x.grad is None
        (gx,) = st.autograd.grad(a.sum(), x, create_graph=True)
        np.testing.assert_allclose(gx.detach().numpy(), 3 * xs ** 2, rtol=1e-5)
        gx.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 6 * xs, rtol=1e-5, atol=1e-5)


def fx4_fn(x0, x2, x3, x4):
    v1 = FX.apply(x0 * 1.5)
    v1.zero_()
    x2.zero_()
    x3.mul_(2)
    x4.mul_(3)
    return (x2,)


def test_fx_with_four_parts():
    g = st.compile(fx4_fn)
    for k in range(4):
        del LOG[:]
        a = st.tensor(2.0 + k).requires_grad_()
        ts = [st.tensor(1.0).requires_grad_() for _ in range(3)]
        out = g(a.clone(), *[t.clone() for t in ts])
        out[0].sum().backward()
        assert LOG == ["fwd"], (k, LOG)
        assert a.grad is None and ts[1].grad is None and ts[2].grad is None
        assert float(ts[0].grad) == 0.0


def test_many_parts_share_the_variant_slots():
    # six independent heads (one node each), then backwards from each
    def fn(*xs):
        return tuple((x * (i + 1)).sin() for i, x in enumerate(xs))

    vals = [arr(10 + i) for i in range(6)]
    f = st.compile(fn)
    for _ in range(3):
        xs = [st.tensor(v, requires_grad=True) for v in vals]
        outs = f(*xs)
        fns = [o.grad_fn for o in outs]   # kept alive: ids stay distinct
        assert len({id(n) for n in fns}) == 6
        done = set()
        for i in (3, 0, 5, 1, 4, 2):
            outs[i].sum().backward()
            done.add(i)
            assert [x.grad is not None for x in xs] == [j in done for j in range(6)]
            np.testing.assert_allclose(xs[i].grad.numpy(),
                                       (i + 1) * np.cos((i + 1) * vals[i]), rtol=1e-5, atol=1e-6)
