"""Automatic dynamic shapes (symtrace.compile(dynamic=None), torch's default):
static shapes first; a frame translated again because only tensor sizes
changed is translated with dynamic shapes, so one more graph serves every
later size. dynamic=False stays static; a frame that dynamic shapes cannot
express keeps static entries (and is not tried dynamic again)."""
import numpy as np
import pytest

import symtrace as st


def _stats():
    return st._C._fe_stats()


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("SYMTRACE_DYNAMIC", raising=False)
    st.reset()
    yield
    st.reset()


def _body(x, w):
    return ((x * 2 + 1) @ w).relu().sum(0)


def _ref(x, w):
    return np.maximum((x * 2 + 1) @ w, 0).sum(0)


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed + n)
    return rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal((3, 11)).astype(np.float32)


def test_auto_dynamic_two_graphs_over_sizes():
    f = st.compile(_body, backend="interp")
    # (sizes never equal to 11: duck sizing would tie them to w.shape[1])
    for n in (3, 4, 5, 6, 7, 9):
        x, w = _inputs(n)
        r = f(st.tensor(x), st.tensor(w))
        np.testing.assert_allclose(r.numpy(), _ref(x, w), rtol=1e-5, atol=1e-5)
    # a static graph for size 3, then one dynamic graph for every later size
    assert _stats()["graphs"] == 2
    assert _stats()["translations"] == 2


def test_auto_dynamic_matches_torch():
    torch = pytest.importorskip("torch")
    f = st.compile(_body, backend="interp")
    for n in (2, 5, 8):
        x, w = _inputs(n, seed=1)
        r = f(st.tensor(x), st.tensor(w))
        want = _body(torch.tensor(x), torch.tensor(w))
        np.testing.assert_allclose(r.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    assert _stats()["graphs"] == 2


def test_auto_dynamic_module_batch_sizes():
    net = st.nn.Sequential(st.nn.Linear(6, 5), st.nn.ReLU(), st.nn.Linear(5, 2))
    c = st.compile(net, backend="interp")
    for b in (4, 3, 5, 7):
        x = st.randn(b, 6)
        np.testing.assert_allclose(c(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert _stats()["graphs"] == 2


def test_dynamic_false_stays_static():
    f = st.compile(_body, backend="interp", dynamic=False)
    for n in (3, 4, 5, 6):
        x, w = _inputs(n)
        np.testing.assert_allclose(f(st.tensor(x), st.tensor(w)).numpy(), _ref(x, w),
                                   rtol=1e-5, atol=1e-5)
    assert _stats()["graphs"] == 4


def test_symtrace_dynamic_env_zero_stays_static(monkeypatch):
    monkeypatch.setenv("SYMTRACE_DYNAMIC", "0")
    f = st.compile(_body, backend="interp")
    for n in (3, 4, 5):
        x, w = _inputs(n)
        f(st.tensor(x), st.tensor(w))
    assert _stats()["graphs"] == 3


def test_auto_dynamic_same_sizes_one_graph():
    f = st.compile(_body, backend="interp")
    x, w = _inputs(4)
    for _ in range(3):
        f(st.tensor(x), st.tensor(w))
    assert _stats()["graphs"] == 1


def test_auto_dynamic_dtype_change_stays_static():
    # a dtype change is not a size change: a static translation
    f = st.compile(lambda x: (x + 1).sum(), backend="interp")
    f(st.ones(3, dtype=st.float32))
    f(st.ones(3, dtype=st.float64))
    f(st.ones(5, dtype=st.float64))      # a size change: dynamic
    f(st.ones(6, dtype=st.float64))
    f(st.ones(7, dtype=st.float32))      # float32 at a new size: dynamic for float32
    assert f(st.ones(8, dtype=st.float32)).item() == 16.0
    assert _stats()["graphs"] == 4


def test_auto_dynamic_fallback_static_not_retried():
    # when the dynamic translation cannot hold at other sizes, the frame keeps
    # static entries as before and is not translated dynamic again
    def g(x):
        return x.sum() + x.shape[0] ** 2     # ** specializes the size
    f = st.compile(g, backend="interp")
    for n in (3, 4, 5, 6):
        assert f(st.ones(n)).item() == n + n * n
    s = _stats()
    assert s["graphs"] == 4
    assert s["translations"] == 4
