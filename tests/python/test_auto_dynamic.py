"""Automatic dynamic shapes (symtrace.compile(dynamic=None), torch's default):
static shapes first; a frame translated again because only tensor sizes
changed is translated with dynamic shapes, so one more graph serves every
later size. dynamic=False stays static; a frame that dynamic shapes cannot
express keeps static entries (and is not tried dynamic again)."""
import numpy as np
import pytest

import symtrace as st
from dynamic_helpers import fresh_dynamic  # noqa: F401  (autouse: a clean frontend per test)


def _stats():
    return st._C._fe_stats()


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


# ---------------- cat under dynamic shapes (frontend/tr_dynamic.c cat_after) ----------------
def _np_cat(xs, d):
    return np.concatenate(xs, axis=d)


def test_cat_dynamic_true_one_graph():
    f = st.compile(lambda a, x: st.cat([a, x], 1).sum(), dynamic=True, backend="interp")
    for n in range(3, 8):
        assert f(st.ones(2, n), st.ones(2, 1)).item() == 2 * (n + 1)
    assert _stats()["graphs"] == 1      # torch: 1


@pytest.mark.parametrize("case", ["neg_dim_three_parts", "kw_tensors", "dim0"])
def test_cat_dynamic_values(case):
    rng = np.random.default_rng(3)
    if case == "neg_dim_three_parts":
        fn = lambda a, b: st.cat((a, b, a), dim=-1).sum(0)           # noqa: E731
        ref = lambda a, b: _np_cat([a, b, a], -1).sum(0)               # noqa: E731
        shapes = [((4, n), (4, m)) for n, m in ((2, 3), (3, 5), (5, 2), (6, 9))]
    elif case == "kw_tensors":
        fn = lambda a, b: st.concat(tensors=[a, b], dim=1) * 2        # noqa: E731
        ref = lambda a, b: _np_cat([a, b], 1) * 2                     # noqa: E731
        shapes = [((7, n), (7, 2)) for n in (3, 4, 5)]
    else:
        fn = lambda a, b: st.cat([a, b]) + 1                          # noqa: E731
        ref = lambda a, b: _np_cat([a, b], 0) + 1                     # noqa: E731
        shapes = [((n, 6), (11, 6)) for n in (2, 3, 5, 7)]
    f = st.compile(fn, dynamic=True, backend="interp")
    for sh in shapes:
        xs = [rng.standard_normal(s).astype(np.float32) for s in sh]
        np.testing.assert_allclose(f(*[st.tensor(x) for x in xs]).numpy(), ref(*xs),
                                   rtol=1e-5, atol=1e-6)
    assert _stats()["graphs"] == 1


def test_cat_dynamic_matches_torch():
    torch = pytest.importorskip("torch")
    f = st.compile(lambda a, b: st.cat([a, b.relu()], 1).softmax(-1), dynamic=True,
                   backend="interp")
    rng = np.random.default_rng(4)
    for n in (2, 5, 9):
        a = rng.standard_normal((3, n)).astype(np.float32)
        b = rng.standard_normal((3, 4)).astype(np.float32)
        want = torch.cat([torch.tensor(a), torch.tensor(b).relu()], 1).softmax(-1)
        np.testing.assert_allclose(f(st.tensor(a), st.tensor(b)).numpy(), want.numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert _stats()["graphs"] == 1


def test_kv_cache_loop_auto_dynamic():
    # a growing cache concatenated per step: static once, then one dynamic graph
    # (before: a graph per step, then "cache limit reached")
    c = st.compile(lambda x, p: st.cat([p, x], 1).sum(1), backend="interp")
    p = st.zeros(2, 1)
    for i in range(80):
        p = st.cat([p, st.ones(2, 1)], 1)
        assert c(st.ones(2, 1), p).tolist() == [float(i + 2)] * 2
    s = _stats()
    assert s["graphs"] == 2
    assert s["fallbacks"] == 0


@pytest.mark.parametrize("dynamic", [None, True])
def test_input_filled_in_place_at_other_sizes(dynamic):
    # zero_() records a full of the traced sizes: the dynamic graph would write a
    # [4, 3] value back into a [6, 5] input ("output with shape [6, 5] doesn't match
    # the broadcast shape [4, 3]"); the frame is translated static instead
    def f(x):
        x.zero_()
        return x.mean(0) + 1

    cf = st.compile(f, dynamic=dynamic)
    for shape in ((4, 3), (4, 3), (6, 5), (2, 7)):
        x = st.ones(*shape)
        y = cf(x)
        assert tuple(y.shape) == (shape[1],) and y.tolist() == [1.0] * shape[1]
        assert x.sum().item() == 0.0


def test_input_added_in_place_stays_one_dynamic_graph():
    def f(x):
        x.add_(1)
        return x.sum(0)

    cf = st.compile(f, dynamic=True)
    for n in (3, 5, 7):
        x = st.ones(n, 4)
        assert cf(x).tolist() == [2.0 * n] * 4 and x.sum().item() == 8.0 * n
    assert _stats()["graphs"] == 1


@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("fn", [
    lambda x: st.zeros_like(x),
    lambda x: st.ones(1, 4).expand_as(x),
    lambda x: x.clone().fill_(1),
    lambda x: st.rand_like(x) * 0,
], ids=["zeros_like", "expand_as", "clone_fill", "rand_like"])
def test_sizes_read_inside_library_code_never_stay_traced(fn, dynamic):
    # library code builds these shapes from plain ints: a dynamic graph kept the first
    # call's sizes and returned them silently at every other size; now the frame runs
    # with static entries
    cf = st.compile(fn, dynamic=dynamic)
    for n in (2, 3, 5, 3):
        assert tuple(cf(st.ones(n, 4)).shape) == (n, 4)
