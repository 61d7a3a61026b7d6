"""dynamic=True gives one graph for common modules over changing sizes: library
code whose shape math the translator follows (symtrace/_symint.py dyn_inline)
instead of running it on plain ints, and the guards TorchDynamo's shape checks
would add (flatten then linear pins C*H*W). Graph counts, and values and grads
against eager (and torch where it is installed)."""
import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("SYMTRACE_DYNAMIC", raising=False)
    st.reset()
    yield
    st.reset()


def _graphs():
    return st._C._fe_stats()["graphs"]


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _run_module(make, shape_of, sizes=(4, 3, 5), backward=False):
    """The compiled module against eager on the same parameters, per size:
    outputs, and with backward the input's and the parameters' grads."""
    st.manual_seed(0)
    net = make()
    c = st.compile(net, dynamic=True, backend="interp")
    rng = np.random.default_rng(1)
    for n in sizes:
        xv = rng.standard_normal(shape_of(n)).astype(np.float32)
        outs = []
        for fn in (c, net):
            x = st.tensor(xv, requires_grad=backward)
            for p in net.parameters():
                p.grad = None
            y = fn(x)
            if backward:
                (y * y).sum().backward()
                outs.append((y.detach().numpy(), x.grad.numpy(),
                             [p.grad.numpy().copy() for p in net.parameters()]))
            else:
                outs.append((y.detach().numpy(),))
        (got, want) = outs
        _close(got[0], want[0])
        if backward:
            _close(got[1], want[1])
            for a, b in zip(got[2], want[2]):
                _close(a, b, 1e-4)
    return net


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
