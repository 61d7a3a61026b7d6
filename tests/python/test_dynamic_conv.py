"""dynamic=True gives one graph over batch sizes for convolution, pooling, padding and
causal attention: their library code is dyn_inline (symtrace/_symint.py), the channel and
spatial sizes of conv/pool inputs stay symbolic (test_dynamic_round5.py), im2col's windows are plain
ops when traced (no autograd.Function, whose traced backward keeps the traced sizes), and
the causal mask is built from symbolic sizes. Graph counts, and values and grads against
eager (and torch where it is installed)."""
import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F
from dynamic_helpers import close as _close, fresh_dynamic, graphs as _graphs, run_module as _run_module  # noqa: F401


POOLS = {
    "max": lambda: nn.MaxPool2d(2),
    "max_s1_pad": lambda: nn.MaxPool2d(3, stride=1, padding=1),
    "max_ceil": lambda: nn.MaxPool2d(3, stride=2, ceil_mode=True),
    "avg": lambda: nn.AvgPool2d(2),
    "avg_pad": lambda: nn.AvgPool2d(3, stride=2, padding=1),
    "adaptive_avg": lambda: nn.AdaptiveAvgPool2d((2, 2)),
    "adaptive_avg_uneven": lambda: nn.AdaptiveAvgPool2d(3),
}


@pytest.mark.parametrize("backward", [False, True], ids=["fwd", "fwd_bwd"])
@pytest.mark.parametrize("kind", sorted(POOLS))
def test_pooling_one_graph(kind, backward):
    # the pooling front ends ran for real on plain ints: a reshape of the traced batch
    # size in every graph (a static graph per size); adaptive_avg_uneven: a square
    # input's two spatial dims share one size symbol, both guarded by int() of one
    _run_module(POOLS[kind], lambda n: (n, 3, 8, 8), backward=backward)
    assert _graphs() == 1


def test_pooling_matches_torch():
    torch = pytest.importorskip("torch")
    f = st.compile(lambda x: F.max_pool2d(x, 2) + F.avg_pool2d(x, 2) + F.adaptive_avg_pool2d(x, 4),
                   dynamic=True, backend="interp")
    for n in (4, 3, 5):
        xv = np.random.default_rng(n).standard_normal((n, 2, 8, 8)).astype(np.float32)
        x, tx = st.tensor(xv), torch.tensor(xv)
        want = (torch.nn.functional.max_pool2d(tx, 2) + torch.nn.functional.avg_pool2d(tx, 2)
                + torch.nn.functional.adaptive_avg_pool2d(tx, 4))
        _close(f(x).numpy(), want.numpy())
    assert _graphs() == 1


CONVS = {
    "pad1": lambda: nn.Conv2d(3, 4, 3, padding=1),
    "stride2": lambda: nn.Conv2d(3, 4, 3, stride=2),
    "k1": lambda: nn.Conv2d(3, 4, 1),
    "groups": lambda: nn.Conv2d(4, 6, 3, padding=1, groups=2),
    "conv1d": lambda: nn.Conv1d(3, 4, 3, padding=1),
}


@pytest.mark.parametrize("backward", [False, True], ids=["fwd", "fwd_bwd"])
@pytest.mark.parametrize("kind", sorted(CONVS))
def test_conv_one_graph(kind, backward):
    # im2col's window stack was an autograd.Function ("a PyLayer's traced backward is
    # not symbolic") and padding a cat of blocks of the traced sizes: a graph per size
    chans = 4 if kind == "groups" else 3
    shape = (lambda n: (n, chans, 9)) if kind == "conv1d" else (lambda n: (n, chans, 7, 9))
    # (a first batch size equal to the channels' would share their symbol, which the
    # guard on the channels pins: a second graph, as a known limitation)
    _run_module(CONVS[kind], shape, sizes=(5, 3, 6) if kind == "groups" else (4, 3, 5), backward=backward)
    assert _graphs() == 1


def test_conv_grads_match_torch():
    torch = pytest.importorskip("torch")
    st.manual_seed(0)
    net = nn.Conv2d(3, 4, 3, padding=1)
    ref = torch.nn.Conv2d(3, 4, 3, padding=1)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(net.weight.detach().numpy()))
        ref.bias.copy_(torch.tensor(net.bias.detach().numpy()))
    c = st.compile(net, dynamic=True, backend="interp")
    for n in (4, 3, 5):
        xv = np.random.default_rng(n).standard_normal((n, 3, 6, 6)).astype(np.float32)
        x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
        net.weight.grad = None
        ref.weight.grad = None
        (c(x) ** 2).sum().backward()
        (ref(tx) ** 2).sum().backward()
        _close(x.grad.numpy(), tx.grad.numpy(), 1e-4)
        _close(net.weight.grad.numpy(), ref.weight.grad.numpy(), 1e-3)
    assert _graphs() == 1


def test_conv_other_channels_raise_as_eager():
    # the channel size is guarded: another one misses the graph and raises as eager
    net = nn.Conv2d(3, 4, 3)
    c = st.compile(net, dynamic=True, backend="interp")
    c(st.randn(4, 3, 6, 6))
    c(st.randn(5, 3, 6, 6))
    with pytest.raises(RuntimeError, match="expected input"):
        c(st.randn(4, 2, 6, 6))


def test_pad_one_graph():
    # F.pad's constant mode ran for real: its fill blocks had the traced batch size
    f = st.compile(lambda x: F.pad(x, (1, 2, 0, 1), value=0.5) * 2, dynamic=True, backend="interp")
    for n in (4, 3, 6):
        xv = np.random.default_rng(n).standard_normal((n, 5, 7)).astype(np.float32)
        _close(f(st.tensor(xv)).numpy(), np.pad(xv, ((0, 0), (0, 1), (1, 2)), constant_values=0.5) * 2)
    assert _graphs() == 1


# ---------------- causal attention over sequence lengths ----------------
def test_causal_sdpa_one_graph():
    # the causal mask's arange ran inside a real call ("a call made an index from a size
    # inside"): a graph per sequence length
    torch = pytest.importorskip("torch")

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    c = st.compile(f, dynamic=True, backend="interp")
    for L in (5, 7, 9):
        xs = [np.random.default_rng(L + i).standard_normal((2, 3, L, 8)).astype(np.float32) for i in range(3)]
        ts = [st.tensor(x, requires_grad=True) for x in xs]
        rs = [torch.tensor(x, requires_grad=True) for x in xs]
        y = c(*ts)
        ry = torch.nn.functional.scaled_dot_product_attention(*rs, is_causal=True)
        _close(y.detach().numpy(), ry.detach().numpy())
        (y * y).sum().backward()
        (ry * ry).sum().backward()
        for t, r in zip(ts, rs):
            _close(t.grad.numpy(), r.grad.numpy(), 1e-4)
    assert _graphs() == 1


def test_causal_sdpa_eager_values_unchanged():
    # the same function eagerly (no torch needed): rows only see keys up to themselves
    q = st.randn(1, 4, 3)
    k = st.randn(1, 4, 3)
    v = st.randn(1, 4, 3)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    _close(y[0, 0], v.numpy()[0, 0])
    c = st.compile(lambda a, b, d: F.scaled_dot_product_attention(a, b, d, is_causal=True),
                   dynamic=True, backend="interp")
    _close(c(q, k, v).numpy(), y)


# ---------------- a small CNN trained over batch sizes ----------------
def _cnn():
    st.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 6 * 6, 5))


def _train(compiled):
    net = _cnn()
    opt = st.optim.SGD(net.parameters(), lr=0.1)
    fwd = st.compile(net, dynamic=True, backend="interp") if compiled else net
    losses = []
    for n in (8, 6, 7):
        rng = np.random.default_rng(n)
        x = st.tensor(rng.standard_normal((n, 3, 12, 12)).astype(np.float32))
        t = st.tensor(rng.integers(0, 5, n))
        loss = F.cross_entropy(fwd(x), t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, net


def test_cnn_training_one_graph():
    got, cnet = _train(True)
    stats = st._C._fe_stats()
    st.reset()
    want, enet = _train(False)
    _close(got, want, 1e-5)
    for a, b in zip(cnet.parameters(), enet.parameters()):
        _close(a.detach().numpy(), b.detach().numpy(), 1e-5)
    # one translation; the later sizes are instances of its template
    assert stats["graphs"] == 1 and stats["translations"] == 1
    assert stats["instances"] == 2


# ---------------- autograd.Function traced in a dynamic frame ----------------
def _functions():
    from symtrace.autograd import Function

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    class Flat(Function):
        # shape math on plain ints in both directions: the traced sizes
        @staticmethod
        def forward(ctx, x):
            ctx.shape = tuple(x.shape)
            return x.reshape(x.shape[0], -1) * 2.5

        @staticmethod
        def backward(ctx, g):
            return g.reshape(ctx.shape) * 2.5

    class Mean0(Function):
        # a number made of the batch size (1 / n) in the backward
        @staticmethod
        def forward(ctx, x):
            ctx.n = x.shape[0]
            return x.sum(0)

        @staticmethod
        def backward(ctx, g):
            return (g / ctx.n).expand(ctx.n, *g.shape)
    return Sq, Flat, Mean0


def _grads_over_sizes(f, shape_of, sizes):
    c = st.compile(f, dynamic=True, backend="interp")
    for n in sizes:
        xv = np.random.default_rng(n).standard_normal(shape_of(n)).astype(np.float32)
        a, b = st.tensor(xv, requires_grad=True), st.tensor(xv, requires_grad=True)
        ya, yb = c(a), f(b)
        _close(ya.detach().numpy(), yb.detach().numpy())
        (ya ** 2).sum().backward()
        (yb ** 2).sum().backward()
        _close(a.grad.numpy(), b.grad.numpy(), 1e-4)


def test_function_backward_one_graph():
    # the Function's traced backward kept the traced sizes ("a PyLayer's traced
    # backward is not symbolic"): a static graph per batch size
    Sq, Flat, _ = _functions()
    _grads_over_sizes(lambda x: Flat.apply(Sq.apply(x)).sum(1), lambda n: (n, 2, 5), (4, 3, 5, 6))
    assert _graphs() == 1


def test_function_backward_matches_torch():
    torch = pytest.importorskip("torch")
    Sq, Flat, _ = _functions()

    class TSq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g
    c = st.compile(lambda x: Flat.apply(Sq.apply(x)).sum(1), dynamic=True, backend="interp")
    for n in (4, 3, 5):
        xv = np.random.default_rng(n).standard_normal((n, 2, 5)).astype(np.float32)
        a, t = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
        (c(a) ** 2).sum().backward()
        ((TSq.apply(t).reshape(n, -1) * 2.5).sum(1) ** 2).sum().backward()
        _close(a.grad.numpy(), t.grad.numpy(), 1e-4)
    assert _graphs() == 1


def test_function_folding_a_size_stays_static():
    # 1 / n in the backward is a constant of its graph: no instance may reuse it
    _, _, Mean0 = _functions()
    _grads_over_sizes(lambda x: Mean0.apply(x) * 1.0, lambda n: (n, 7), (4, 3, 5))
    assert _graphs() == 3
