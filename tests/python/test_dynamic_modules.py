"""dynamic=True gives one graph for common modules over changing sizes: library
code whose shape math the translator follows (symtrace/_symint.py dyn_inline)
instead of running it on plain ints, and the guards TorchDynamo's shape checks
would add (flatten then linear pins C*H*W). Graph counts, and values and grads
against eager (and torch where it is installed)."""
import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F
from dynamic_helpers import close as _close, fresh_dynamic, graphs as _graphs, run_module as _run_module  # noqa: F401


@pytest.mark.parametrize("backward", [False, True], ids=["fwd", "fwd_bwd"])
def test_flatten_linear_one_graph(backward):
    # flatten's size product was math.prod over plain ints inside the library: a
    # graph per batch size (torch: one, with s1*s2*s3 == 192 guarded)
    make = lambda: st.nn.Sequential(st.nn.Flatten(), st.nn.Linear(72, 5))   # noqa: E731
    _run_module(make, lambda n: (n, 2, 6, 6), backward=backward)
    assert _graphs() == 1


def test_flatten_linear_matches_torch():
    torch = pytest.importorskip("torch")
    st.manual_seed(0)
    net = st.nn.Sequential(st.nn.Flatten(), st.nn.Linear(72, 5))
    ref = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(72, 5))
    with torch.no_grad():
        ref[1].weight.copy_(torch.tensor(net[1].weight.detach().numpy()))
        ref[1].bias.copy_(torch.tensor(net[1].bias.detach().numpy()))
    c = st.compile(net, dynamic=True, backend="interp")
    for n in (4, 3, 5):
        x = np.random.default_rng(n).standard_normal((n, 2, 6, 6)).astype(np.float32)
        _close(c(st.tensor(x)).detach().numpy(), ref(torch.tensor(x)).detach().numpy())
    assert _graphs() == 1


def test_flatten_of_other_inner_sizes_recompiles_and_raises_as_eager():
    # the pinned C*H*W: another inner size misses the guard; linear then raises as eager
    net = st.nn.Sequential(st.nn.Flatten(), st.nn.Linear(72, 5))
    c = st.compile(net, dynamic=True, backend="interp")
    c(st.randn(4, 2, 6, 6))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        net(st.randn(4, 2, 7, 6))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        c(st.randn(4, 2, 7, 6))


def test_flatten_dynamic_values():
    f = st.compile(lambda x: F.softmax(st.flatten(x, 1), dim=-1), dynamic=True, backend="interp")
    for shape in [(3, 4, 5), (4, 4, 5), (2, 6, 7), (3, 4, 5)]:
        x = st.randn(*shape)
        _close(f(x).numpy(), F.softmax(st.flatten(x, 1), dim=-1).numpy())
    assert _graphs() == 1


# ---------------- stack (through cat, whose sizes the translator knows) ----------------
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_stack_one_graph(dim):
    # stack ran _cat_checked for real: its buffer had the traced sizes (a graph per size)
    f = st.compile(lambda a, b, c: st.stack([a, b, c], dim).softmax(-1), dynamic=True,
                   backend="interp")
    rng = np.random.default_rng(5)
    for n in (3, 4, 6, 9):
        xs = [rng.standard_normal((2, n)).astype(np.float32) for _ in range(3)]
        want = np.stack(xs, dim)
        want = np.exp(want - want.max(-1, keepdims=True))
        want /= want.sum(-1, keepdims=True)
        _close(f(*[st.tensor(x) for x in xs]).numpy(), want)
    assert _graphs() == 1


def test_stack_grads_match_torch():
    torch = pytest.importorskip("torch")
    f = st.compile(lambda a, b: (st.stack([a, b * 2], 1) ** 2).sum(), dynamic=True,
                   backend="interp")
    for n in (3, 5, 7):
        av, bv = (np.random.default_rng(n + k).standard_normal((4, n)).astype(np.float32)
                  for k in (0, 1))
        a, b = st.tensor(av, requires_grad=True), st.tensor(bv, requires_grad=True)
        ta, tb = torch.tensor(av, requires_grad=True), torch.tensor(bv, requires_grad=True)
        f(a, b).backward()
        (torch.stack([ta, tb * 2], 1) ** 2).sum().backward()
        _close(a.grad.numpy(), ta.grad.numpy())
        _close(b.grad.numpy(), tb.grad.numpy())
    # cat under autograd traced with dynamic shapes writes into its buffer (not its
    # autograd.Function, whose traced backward kept the traced sizes): one graph
    assert _graphs() == 1


def test_stack_unequal_sizes_raise_as_eager():
    f = st.compile(lambda a, b: st.stack([a, b]), dynamic=True, backend="interp")
    f(st.ones(2, 3), st.ones(2, 3))
    f(st.ones(2, 4), st.ones(2, 4))
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        f(st.ones(2, 5), st.ones(2, 6))


def test_len_of_a_shape_keeps_sizes_symbolic():
    # len(x.shape) specialized every size of the tuple (a guard on each value)
    def g(x):
        return x.reshape(x.shape[0], -1) * len(x.shape)
    f = st.compile(g, dynamic=True, backend="interp")
    for n in (3, 4, 7):
        x = st.randn(n, 2, 5)
        _close(f(x).numpy(), g(x).numpy())
    assert _graphs() == 1


# ---------------- a size folded into a constant by a real call ----------------
@pytest.mark.parametrize("case", ["var_dims", "var_correction0", "var_mean"])
def test_var_divisor_follows_the_size(case):
    # var recorded sum / (n - 1) with n of the first call as a constant: the dynamic
    # graph divided by 19 at every later size (wrong values, no error); now a call that
    # makes a graph constant from a size is translated with static shapes
    fn, ref = {
        "var_dims": (lambda x: x.var((0, 2), keepdim=True),
                     lambda a: a.var((0, 2), keepdims=True, ddof=1)),
        "var_correction0": (lambda x: x.var(0, correction=0) * 3, lambda a: a.var(0) * 3),
        "var_mean": (lambda x: st.var_mean(x, (0, 1))[0], lambda a: a.var((0, 1), ddof=1)),
    }[case]
    f = st.compile(fn, dynamic=True, backend="interp")
    for n in (4, 6, 9):
        xv = np.random.default_rng(n).standard_normal((n, 3, 5)).astype(np.float32)
        _close(f(st.tensor(xv)).numpy(), ref(xv.astype(np.float64)))


def test_constants_that_do_not_depend_on_sizes_stay_dynamic():
    # gelu's 0.5 and a scale of 3 are not sizes: one graph
    f = st.compile(lambda x: F.gelu(x) * 3 + x.mean(0), dynamic=True, backend="interp")
    for n in (4, 6, 9):
        x = st.randn(n, 5)
        _close(f(x).numpy(), (F.gelu(x) * 3 + x.mean(0)).numpy())
    assert _graphs() == 1


# ---------------- batch norm ----------------
def _bn_pair(cls, c):
    a, b = cls(c), cls(c)
    with st.no_grad():
        for p, q in zip(a.parameters(), b.parameters()):
            v = st.randn(*p.shape)
            p.copy_(v)
            q.copy_(v)
    return a, b


@pytest.mark.parametrize("backward", [False, True], ids=["fwd", "fwd_bwd"])
@pytest.mark.parametrize("cls,shape_of", [
    (st.nn.BatchNorm2d, lambda n: (n, 3, 6, 5)),
    (st.nn.BatchNorm1d, lambda n: (n, 3)),
    (st.nn.BatchNorm1d, lambda n: (n, 3, 7)),
], ids=["2d", "1d", "1d_seq"])
def test_batch_norm_training_one_graph(cls, shape_of, backward):
    # batch_norm ran for real: mean.reshape(C) and the unbiasing n / (n - 1) were
    # constants of one call's sizes (a graph per batch size)
    net, ref = _bn_pair(cls, 3)
    c = st.compile(net, dynamic=True, backend="interp")
    rng = np.random.default_rng(2)
    for n in (4, 5, 8, 6):
        xv = rng.standard_normal(shape_of(n)).astype(np.float32)
        x, xr = st.tensor(xv, requires_grad=backward), st.tensor(xv, requires_grad=backward)
        y, yr = c(x), ref(xr)
        _close(y.detach().numpy(), yr.detach().numpy(), 1e-4)
        if backward:
            (y * y).sum().backward()
            (yr * yr).sum().backward()
            _close(x.grad.numpy(), xr.grad.numpy(), 1e-4)
            for p, q in zip(net.parameters(), ref.parameters()):
                _close(p.grad.numpy(), q.grad.numpy(), 1e-3)
                p.grad = q.grad = None
        _close(net.running_mean.numpy(), ref.running_mean.numpy())
        _close(net.running_var.numpy(), ref.running_var.numpy())
    assert net.num_batches_tracked.item() == 4
    assert _graphs() == 1


def test_batch_norm_eval_one_graph():
    net, ref = _bn_pair(st.nn.BatchNorm2d, 3)
    for m in (net, ref):
        m.running_mean.copy_(st.tensor([0.5, -1.0, 2.0]))
        m.running_var.copy_(st.tensor([2.0, 0.5, 1.5]))
        m.eval()
    c = st.compile(net, dynamic=True, backend="interp")
    for n in (4, 3, 5):
        x = st.randn(n, 3, 6, 5)
        _close(c(x).detach().numpy(), ref(x).detach().numpy())
    assert _graphs() == 1


def test_batch_norm_matches_torch():
    torch = pytest.importorskip("torch")
    net = st.nn.BatchNorm2d(3)
    tn = torch.nn.BatchNorm2d(3)
    c = st.compile(net, dynamic=True, backend="interp")
    for n in (4, 3, 5):
        xv = np.random.default_rng(n).standard_normal((n, 3, 6, 5)).astype(np.float32)
        _close(c(st.tensor(xv)).detach().numpy(), tn(torch.tensor(xv)).detach().numpy(), 1e-4)
    _close(net.running_var.numpy(), tn.running_var.numpy())
    _close(net.running_mean.numpy(), tn.running_mean.numpy())
    assert _graphs() == 1


def test_batch_norm_wrong_channels_raise_as_eager():
    net = st.nn.BatchNorm2d(3)
    c = st.compile(net, dynamic=True, backend="interp")
    c(st.randn(4, 3, 5, 5))
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        net(st.randn(4, 4, 5, 5))
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        c(st.randn(4, 4, 5, 5))


# ---------------- writes through slices ----------------
@pytest.mark.parametrize("dynamic", [False, None, True])
def test_write_through_an_int_argument_slice_is_guarded(dynamic):
    # x[:, n:] = 0 with n a number argument: the store never guarded n, so a second
    # call with another n reused the first graph (an empty slice: the write lost)
    def g(x, n):
        y = x.clone()
        y[:, n:] = 0
        return y
    c = st.compile(g, dynamic=dynamic, backend="interp")
    for m, n in ((5, 5), (5, 3), (5, 2), (6, 6), (6, 1)):
        x = st.ones(3, m)
        assert c(x, n).sum().item() == g(x, n).sum().item() == 3 * min(n, m)


@pytest.mark.parametrize("case", ["tail", "empty_at_size", "both_ends"])
def test_write_through_a_size_slice_one_graph(case):
    # the bounds of a write are expressions of the sizes (before: no expression for
    # the slice_scatter, a static graph per size)
    def g(x):
        y = x.clone()
        n = y.shape[1]
        if case == "tail":
            y[:, n - 2:] = 0
        elif case == "empty_at_size":
            y[:, n:] = 0          # empty at every size: y unchanged
        else:
            y[1:-1, 1:n - 1] = 7
        return y * 2
    c = st.compile(g, dynamic=True, backend="interp")
    rng = np.random.default_rng(0)
    for m in (5, 6, 9):
        x = st.tensor(rng.standard_normal((4, m)).astype(np.float32))
        _close(c(x).numpy(), g(x).numpy())
    assert _graphs() == 1


def test_attention_scale_follows_the_head_size():
    # sdpa's 1 / sqrt(E) was a constant of the first call: the one dynamic graph scaled
    # every later head size by it (wrong values, no error)
    fn = lambda q: F.scaled_dot_product_attention(q, q, q * 2)   # noqa: E731
    f = st.compile(fn, dynamic=True, backend="interp")
    for L, E in ((4, 8), (4, 16), (6, 32)):
        q = st.randn(2, L, E)
        _close(f(q).numpy(), fn(q).numpy())


def test_attention_scale_matches_torch():
    torch = pytest.importorskip("torch")
    f = st.compile(lambda q, k: F.scaled_dot_product_attention(q, k, k), dynamic=True,
                   backend="interp")
    for L, E in ((3, 8), (5, 16)):
        qv, kv = (np.random.default_rng(E + j).standard_normal((2, L, E)).astype(np.float32)
                  for j in (0, 1))
        want = torch.nn.functional.scaled_dot_product_attention(torch.tensor(qv), torch.tensor(kv),
                                                                torch.tensor(kv))
        _close(f(st.tensor(qv), st.tensor(kv)).numpy(), want.numpy())
