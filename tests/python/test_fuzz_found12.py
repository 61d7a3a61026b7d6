# Regressions of the bugs found by the twelfth fuzzing round (the merged deferred
# optimizer effects, partial-output backward of compiled nodes, overlap order and the
# adaptive-pool / stride-1 conv paths), each against torch where torch is installed
# and against expected values otherwise, eager and compiled (the compiled functions
# called several times: the capture and the cached entries).
import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401


# ---- 1. a backward from some outputs leaves the inputs they do not reach None -----

def _two_outputs(a, b):
    return (a * b).sum(), b.exp().sum()


def _three_outputs(a, b):
    h = (a * b).tanh()
    return h.sum(), (h * a).mean(), b.exp().sum()


@pytest.mark.parametrize("fn", [_two_outputs, _three_outputs])
@pytest.mark.parametrize("mode", MODES)
def test_partial_backward_leaves_unreached_input_grad_none(mode, fn):
    # the backward of the outputs that got a gradient alone has no variant when the
    # full backward recomputes what the variant saves (exp(b)): the full one ran with
    # zeros for the others and a, which b.exp().sum() does not depend on, got zeros
    # on the cached calls instead of staying None
    f = maybe_compiled(fn, mode)
    av, bv = [[0.5, 1.0], [2.0, -3.0]], [[1.0, -2.0], [0.3, 0.4]]
    for _ in range(3):
        a = st.tensor(av, requires_grad=True)
        b = st.tensor(bv, requires_grad=True)
        outs = f(a, b)
        outs[-1].backward(retain_graph=True)
        assert a.grad is None
        np.testing.assert_allclose(b.grad.numpy(), np.exp(bv), rtol=1e-6)
        outs[0].backward()
        expect_a = np.asarray(bv) if fn is _two_outputs else \
            np.asarray(bv) * (1 - np.tanh(np.asarray(av) * bv) ** 2)
        np.testing.assert_allclose(a.grad.numpy(), expect_a, rtol=1e-5, atol=1e-6)


# ---- 2. integer isnan & co. under dynamic shapes follow the input's size ----------

_PREDICATES = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal"]


@pytest.mark.parametrize("method", [False, True])
@pytest.mark.parametrize("name", _PREDICATES)
def test_integer_predicates_of_a_chunk_keep_dynamic_sizes(name, method):
    # fuzz_compile --dynamic seed 1151041: x.chunk(2, -1)[0].isnan() on an int16
    # tensor is a zeros_like of the chunk; run for real while translating, its size
    # was the traced call's plain int, so later calls with other sizes got (2,)
    def fn(x):
        y = x.chunk(2, -1)[0]
        return getattr(y, name)() if method else getattr(st, name)(y)

    f = st.compile(fn, dynamic=True)
    for n in (4, 2, 6, 10):
        x = st.tensor(list(range(-n // 2, n - n // 2)), dtype=st.int16)
        got, want = f(x), fn(x)
        assert tuple(got.shape) == tuple(want.shape) == ((n + 1) // 2,)
        assert got.dtype == st.bool
        assert got.numpy().tolist() == want.numpy().tolist()
        assert all(got.numpy()) == (name in ("isfinite", "isreal"))


# ---- 3. a backward from one output, then one from another through a node both run --

def _shared_sin(a, b):
    h = a.sin()
    return h.sum(), (h * b).sum()


def _shared_weight(a, b):
    w = b + 1.5                      # add's node saves nothing
    return (a * w).sum(), (a.cos() * w).sum()


def _outcomes(fn, order):
    res = []
    a = st.tensor([[0.5, 1.0], [2.0, -3.0]], requires_grad=True)
    b = st.tensor([[1.0, -2.0], [0.3, 0.4]], requires_grad=True)
    outs = fn(a, b)
    for k in order:
        try:
            outs[k].backward()
            res.append(("ok", a.grad.numpy().tolist(),
                        None if b.grad is None else b.grad.numpy().tolist()))
        except RuntimeError as e:
            assert "backward through the graph a second time" in str(e)
            res.append(("raise",))
    return res


@pytest.mark.parametrize("order", [(1, 0), (0, 1)])
@pytest.mark.parametrize("fn", [_shared_sin, _shared_weight, _three_outputs])
@pytest.mark.parametrize("mode", BACKENDS)
def test_backward_through_a_node_another_backward_freed(mode, fn, order):
    # partial-output backward of compiled nodes: c.backward() then b.backward() where
    # both run sin's node (which saved x) ran on cached calls instead of raising as
    # eager (and torch) do; outputs sharing only a saved *value* (w, read by two
    # nodes) still backward separately
    want = _outcomes(fn, order)
    if fn is _shared_sin:
        assert [r[0] for r in want] == ["ok", "raise"]
    elif fn is _shared_weight:
        assert [r[0] for r in want] == ["ok", "ok"]
    f = st.compile(fn, backend=mode, fullgraph=True)
    for _ in range(3):
        got = _outcomes(f, order)
        assert [r[0] for r in got] == [r[0] for r in want]
        for g, w in zip(got, want):
            if g[0] == "ok":
                np.testing.assert_allclose(g[1], w[1], rtol=1e-5, atol=1e-6)
                assert (g[2] is None) == (w[2] is None)
                if w[2] is not None:
                    np.testing.assert_allclose(g[2], w[2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", BACKENDS)
def test_backward_of_the_other_outputs_after_one_without_a_variant(mode):
    # the backward of b.exp().sum() alone has no variant (the full backward
    # recomputes exp(b)): the full one ran and handed over every saved tensor, so a
    # later backward from (h * a).mean(), which eager allows, raised
    torch = pytest.importorskip("torch")

    def f(L, a, b):
        h = (a * b).tanh()
        return h.sum(), (h * a).mean(), b.exp().sum()

    av, bv = [[0.5, 1.0], [2.0, -3.0]], [[1.0, -2.0], [0.3, 0.4]]
    ta, tb = torch.tensor(av, requires_grad=True), torch.tensor(bv, requires_grad=True)
    to = f(torch, ta, tb)
    to[2].backward()
    to[1].backward()
    g = st.compile(lambda a, b: f(st, a, b), backend=mode, fullgraph=True)
    for _ in range(3):
        a, b = st.tensor(av, requires_grad=True), st.tensor(bv, requires_grad=True)
        o = g(a, b)
        o[2].backward()
        o[1].backward()
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-6)
        with pytest.raises(RuntimeError, match="second time"):
            o[0].backward()   # tanh's node went with (h * a).mean()'s backward
