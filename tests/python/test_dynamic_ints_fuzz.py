"""Int frame arguments under dynamic shapes: what scripts/fuzz_dynints.py found. Each
program runs compiled (dynamic=True and automatic) and eagerly over a sequence of int
values; every call must give eager's values and grads, or raise eager's exception type.
Graph counts too. (tests/python/test_dynamic_ints.py has the designed behaviour.)"""
import numpy as np
import pytest

import symtrace as st
from dynamic_helpers import close, fresh_dynamic, graphs  # noqa: F401

X = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)


def _run(f, x, args, grad):
    xt = st.tensor(x, requires_grad=grad)
    try:
        ys = f(xt, *args)
    except Exception as e:  # noqa: BLE001
        return type(e)
    ys = list(ys) if isinstance(ys, (tuple, list)) else [ys]
    if grad:
        sum(((y * y).sum() for y in ys if isinstance(y, st.Tensor) and y.requires_grad),
            st.zeros(())).backward()
    return [(tuple(y.shape), y.tolist()) if isinstance(y, st.Tensor) else y for y in ys], \
        None if not grad or xt.grad is None else xt.grad.tolist()


def _check(f, calls, dynamic=True, grad=False, x=X):
    """f compiled against eager for each argument tuple of calls: the graphs made."""
    c = st.compile(f, dynamic=dynamic)
    g0 = graphs()
    for args in calls:
        got, want = _run(c, x, args, grad), _run(f, x, args, grad)
        if isinstance(want, type):
            assert got is want, (args, got, want)
            continue
        assert not isinstance(got, type), (args, got, want)
        assert len(got[0]) == len(want[0]), args
        for a, b in zip(got[0], want[0]):
            if isinstance(b, tuple):
                assert a[0] == b[0], (args, a[0], b[0])
                close(a[1], b[1])
            else:
                assert type(a) is type(b) and a == b, (args, a, b)
        if want[1] is not None:
            close(got[1], want[1])
    return graphs() - g0


# ---- a dim that is n % k looked constant: n % 5 is 2 at n = 12 and at the probe
# points 107 and 227 (tr_dynprobe.c recover: confirmed at one more point)
def _mod_view(x, n):
    t = st.ones(n, 2)[:n % 5] * x[0, 0]
    return t.reshape(-1)[: n * 2].view(n, 2), t


@pytest.mark.parametrize("dynamic", [True, None])
def test_mod_dim_not_a_constant(dynamic):
    # 12: view raises (4 elements); 4: 8 elements, the view holds
    assert _check(_mod_view, [(12,), (4,), (7,), (12,), (4,)], dynamic=dynamic) == 3


def test_mod_dim_not_a_multiple_of_a_size():
    # after a break, the tensor on the stack has symbolic dims: (n % 5) * s looked
    # like 2 * s
    def f(x, n):
        t0 = x.new_zeros(n, 2) + x.sum()
        t1 = t0[:n % 5]
        t2 = t1.reshape(-1)[: n * 2].view(n, 2)
        return t2, t1
    assert _check(f, [(-2,), (12,), (4,), (12,), (4,)]) <= 5


def test_mod_dim_matches_torch():
    torch = pytest.importorskip("torch")
    f = lambda x, n: x[: n % 5].reshape(-1)[: n * 3]   # noqa: E731
    c = st.compile(f, dynamic=True)
    for n in (12, 4, 7, 13, 12):
        want = f(torch.tensor(X), n)
        got = c(st.tensor(X), n)
        assert tuple(got.shape) == tuple(want.shape), n
        close(got.tolist(), want.tolist())


# ---- an int expression as a tensor operand is n ones summed: it must be >= 0
# (n0 + n1 at n0 = -3 is -1 at n1 = 2; tr_dynamic.c size_operand guards it)
@pytest.mark.parametrize("dynamic", [True, None])
def test_negative_int_expression_operand(dynamic):
    def f(x, n0, n1):
        n0 += n1
        return x * n0 + n0
    calls = [(-3, 4), (-3, 2), (-3, 5), (-3, 9), (-3, 2), (-3, 4)]
    assert _check(f, calls, dynamic=dynamic, grad=True) == (2 if dynamic else 3)


def test_negative_int_expression_matches_torch():
    torch = pytest.importorskip("torch")
    c = st.compile(lambda x, n, m: x * (n - m), dynamic=True)
    for n, m in ((5, 2), (2, 5), (7, 3), (3, 7), (5, 2)):
        close(c(st.tensor(X), n, m).tolist(), (torch.tensor(X) * (n - m)).tolist())


# ---- n // 2 with odd probes and an odd n: 2 * (n + 1 - n // 2) looked like n + 3
# (recover confirmed at one more point when a // is around)
@pytest.mark.parametrize("dynamic", [True, None])
def test_floordiv_dim_parity(dynamic):
    def f(x, n):
        t = x.flatten()[n // 2:n + 1]
        t = st.cat([t, t], 0)
        return t.unsqueeze(0).expand(n, *t.shape) * 1
    assert _check(f, [(7,), (4,), (5,), (6,), (7,), (4,)], dynamic=dynamic, grad=True) <= 4


def test_floordiv_dim_parity_matches_torch():
    torch = pytest.importorskip("torch")
    f = lambda x, n: x.flatten()[n // 2:n + 1].repeat(2)[: n + 2]   # noqa: E731
    c = st.compile(f, dynamic=True)
    for n in (7, 4, 9, 6, 7):
        want = f(torch.tensor(X), n)
        got = c(st.tensor(X), n)
        assert tuple(got.shape) == tuple(want.shape), n
        close(got.tolist(), want.tolist())
