# Regressions of the findings of the tenth fuzzing round (scripts/fuzz_dynints.py,
# fuzz_compile.py, fuzz_views.py, fuzz_guards.py and fuzz_memplan.py on fresh seeds),
# each against torch where torch is installed and against expected values otherwise,
# eager and compiled (the compiled functions called several times: the capture and the
# cached entries), with the graph counts where a finding was a recompile per value.
import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401

X45 = np.arange(20, dtype=np.float32).reshape(4, 5) / 7 - 0.6
X14 = np.arange(70, dtype=np.float32).reshape(14, 5) / 31 - 0.9


def _torch():
    return pytest.importorskip("torch")


def _graphs():
    return st._C._fe_stats()["graphs"]


def _dyn(fn, mode):
    return fn if mode == "eager" else st.compile(fn, backend=mode, dynamic=True)


def _check(out, ref, msg):
    assert len(out) == len(ref), msg
    for o, r in zip(out, ref):
        if isinstance(r, int):
            assert type(o) is int and o == r, msg
        else:
            assert tuple(o.shape) == tuple(r.shape), msg
            np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-5, atol=1e-5, err_msg=msg)


# ---- 1. max(n, 0) / min(n, k) of an int argument under dynamic=True ----------------

def _minmax(L, x, n0, n1):
    # fuzz_dynints seed 950033 (minimized): the builtin max made n0 a guarded
    # constant (a graph per value of n0) instead of a comparison guard
    t0 = x[:max(n0, 0)]
    t1 = L.ones(min(n1, 6)) * t0.sum()
    return t0 * n0, t1, max(n0, n1) - min(n0, 3)


MINMAX_CALLS = [(9, 2), (4, 5), (7, 3), (3, 9), (5, 4), (9, 2)]


@pytest.mark.parametrize("mode", MODES)
def test_builtin_max_min_of_int_args_stay_symbolic(mode):
    g = _dyn(_minmax, mode)
    g0 = _graphs()
    for k, (a, b) in enumerate(MINMAX_CALLS):
        t0, t1, n = g(st, st.tensor(X45), a, b)
        x = X45[:max(a, 0)]
        np.testing.assert_allclose(t0.numpy(), x * a, rtol=1e-6, err_msg=str(k))
        np.testing.assert_allclose(t1.numpy(), np.full(min(b, 6), x.sum(), np.float32),
                                   rtol=1e-5, err_msg=str(k))
        assert type(n) is int and n == max(a, b) - min(a, 3), k
    if mode != "eager":
        # the comparisons inside max / min are guards on relations, never on
        # values: a graph per winner pattern of max(n0, n1) / min(n0, 3) / min(n1, 6)
        # (3), not one per distinct call (5)
        assert _graphs() - g0 <= 3, _graphs() - g0


def test_builtin_max_min_of_int_args_matches_torch():
    torch = _torch()
    for mode in BACKENDS:
        st.reset()
        g = st.compile(_minmax, backend=mode, dynamic=True)
        for k, (a, b) in enumerate(MINMAX_CALLS):
            ref = _minmax(torch, torch.tensor(X45), a, b)
            _check(g(st, st.tensor(X45), a, b), ref, "%s %d" % (mode, k))


def _max_slice(L, x, n0):
    return x[:max(n0, 0)] * 2


@pytest.mark.parametrize("mode", BACKENDS)
def test_builtin_max_one_graph_for_positive_values(mode):
    g = st.compile(_max_slice, backend=mode, dynamic=True)
    g0 = _graphs()
    for k, n in enumerate([9, 4, 7, 3, 12, 4]):
        np.testing.assert_allclose(g(st, st.tensor(X14), n).numpy(), X14[:n] * 2, err_msg=str(k))
    assert _graphs() - g0 == 1


# ---- 2. the shape of a tensor subscripted with an expression's bounds -----------------

def _mod_slice(L, x, n0):
    # fuzz_dynints seeds 950033 / 1070049: x[:n0 % 5].shape was probed, n0 % 5 is no
    # form the probe recovers, so n0 was pinned (a graph per value)
    t = x[:n0 % 5]
    u = x[None, 1:n0 % 4 + 2, ..., :3]
    return t, t.shape[0] - n0, u, u.shape[1] * u.shape[2] + n0


MOD_CALLS = [9, 4, 7, 8, 12, 6, 9]


@pytest.mark.parametrize("mode", MODES)
def test_subscript_result_shape_is_an_expression(mode):
    g = _dyn(_mod_slice, mode)
    g0 = _graphs()
    for k, n in enumerate(MOD_CALLS):
        t, a, u, b = g(st, st.tensor(X14), n)
        np.testing.assert_array_equal(t.numpy(), X14[:n % 5], err_msg=str(k))
        np.testing.assert_array_equal(u.numpy(), X14[None, 1:n % 4 + 2, ..., :3], err_msg=str(k))
        assert type(a) is int and a == n % 5 - n, k
        assert type(b) is int and b == (n % 4 + 1) * 3 + n, k
    if mode != "eager":
        # one graph: the bounds stay within the dims for every n here
        assert _graphs() - g0 == 1, _graphs() - g0


def test_subscript_result_shape_matches_torch():
    torch = _torch()
    for mode in BACKENDS:
        st.reset()
        g = st.compile(_mod_slice, backend=mode, dynamic=True)
        for k, n in enumerate(MOD_CALLS):
            _check(g(st, st.tensor(X14), n), _mod_slice(torch, torch.tensor(X14), n),
                   "%s %d" % (mode, k))


# ---- 3. x.add_(n) / x.mul(n) / x.sub_(n) with an int argument under dynamic=True --------

def _scalar_methods(L, x, i, n0):
    # fuzz_dynints seed 1070027 (minimized): the methods' number argument was made a
    # guarded constant (a graph per value of n0), where x + n0 stays symbolic
    t = x.clone()
    t.add_(n0)
    t = t.mul(n0) - L.sub(t, n0)
    j = i.clone()
    j.mul_(n0)
    j.sub_(n0)
    return t.subtract(n0).multiply(n0), j.add(n0), x.add(x, alpha=n0)


SCALAR_CALLS = [2, 3, 5, 4, 7, 3]
I45 = np.arange(20, dtype=np.int32).reshape(4, 5) - 7


@pytest.mark.parametrize("mode", MODES)
def test_scalar_methods_of_int_args_stay_symbolic(mode):
    g = _dyn(_scalar_methods, mode)
    g0 = _graphs()
    for k, n in enumerate(SCALAR_CALLS):
        x = st.tensor(X45, requires_grad=True)
        a, b, c = g(st, x, st.tensor(I45), n)
        t = (X45 + n) * n - X45
        np.testing.assert_allclose(a.detach().numpy(), (t - n) * n, rtol=1e-5, err_msg=str(k))
        assert b.dtype == st.int32, k
        np.testing.assert_array_equal(b.numpy(), I45 * n - n + n, err_msg=str(k))
        np.testing.assert_allclose(c.detach().numpy(), X45 + n * X45, rtol=1e-5, err_msg=str(k))
        (a.sum() + c.sum()).backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full_like(X45, (n - 1) * n + 1 + n),
                                   rtol=1e-5, err_msg=str(k))
    if mode != "eager":
        # alpha= stays a number (a guarded constant): a graph per value there only
        assert _graphs() - g0 == len(set(SCALAR_CALLS)), _graphs() - g0


def _scalar_methods2(L, x, i, n0):
    t = x.clone()
    t.add_(n0)
    t = t.mul(n0) - L.sub(t, n0)
    j = i.clone()
    j.mul_(n0)
    j.sub_(n0)
    return t.subtract(n0).multiply(n0), j.add(n0)


@pytest.mark.parametrize("mode", BACKENDS)
def test_scalar_methods_one_graph(mode):
    g = st.compile(_scalar_methods2, backend=mode, dynamic=True)
    g0 = _graphs()
    for n in SCALAR_CALLS:
        g(st, st.tensor(X45), st.tensor(I45), n)
    assert _graphs() - g0 == 1, _graphs() - g0


def test_scalar_methods_match_torch():
    torch = _torch()
    for mode in BACKENDS:
        st.reset()
        g = st.compile(_scalar_methods, backend=mode, dynamic=True)
        for k, n in enumerate(SCALAR_CALLS):
            xt = torch.tensor(X45, requires_grad=True)
            ref = _scalar_methods(torch, xt, torch.tensor(I45), n)
            sum(r.sum() for r in (ref[0], ref[2])).backward()
            x = st.tensor(X45, requires_grad=True)
            out = g(st, x, st.tensor(I45), n)
            _check([o.detach() for o in out], [r.detach() for r in ref], "%s %d" % (mode, k))
            assert out[1].dtype == st.int32
            (out[0].sum() + out[2].sum()).backward()
            np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5)


# ---- 4. a dim the probes cannot explain alone, but the translation already knows ----

def _cat_then_op(L, x, n0):
    # fuzz_dynints seed 1070058 (minimized): the cat's dim s0 + n0, carried through
    # an add, is no form the probe recovers (c * s_i * ..., s_i + c): n0 and x's size
    # were pinned (a graph per value) when the subscript read that dim
    t0 = L.cat([x, x[:n0]], 0)
    t1 = L.ones(n0).sum() * 0 + t0
    t2 = t1[:n0, n0 // 2:]
    return t2, t1.shape[0] * 2


@pytest.mark.parametrize("mode", MODES)
def test_known_expression_explains_a_probed_dim(mode):
    g = _dyn(_cat_then_op, mode)
    g0 = _graphs()
    for k, n in enumerate([3, 4, 5, 3, 6]):
        x = np.arange(24, dtype=np.float32).reshape(8, 3) / 5
        t2, m = g(st, st.tensor(x), n)
        np.testing.assert_array_equal(t2.numpy(), np.concatenate([x, x[:n]])[:n, n // 2:],
                                      err_msg=str(k))
        assert type(m) is int and m == (8 + n) * 2, k
    if mode != "eager":
        assert _graphs() - g0 == 1, _graphs() - g0


def test_known_expression_matches_torch():
    torch = _torch()
    x = np.arange(24, dtype=np.float32).reshape(8, 3) / 5
    for mode in BACKENDS:
        st.reset()
        g = st.compile(_cat_then_op, backend=mode, dynamic=True)
        for k, n in enumerate([3, 4, 5, 3, 6]):
            _check(g(st, st.tensor(x), n), _cat_then_op(torch, torch.tensor(x), n),
                   "%s %d" % (mode, k))


# ---- 5. abs(n) of an int argument under dynamic=True ---------------------------------

def _abs(L, x, n0):
    # fuzz_dynints seeds 950086 / 950164: abs(n0) made n0 a guarded constant
    return x[:abs(n0)] * abs(n0), abs(n0) + abs(-n0)


@pytest.mark.parametrize("mode", MODES)
def test_abs_of_int_arg_stays_symbolic(mode):
    g = _dyn(_abs, mode)
    g0 = _graphs()
    for k, n in enumerate([3, 5, 7, 2, 9, 3]):
        t, m = g(st, st.tensor(X14), n)
        np.testing.assert_allclose(t.numpy(), X14[:n] * n, rtol=1e-6, err_msg=str(k))
        assert type(m) is int and m == 2 * n, k
    if mode != "eager":
        assert _graphs() - g0 == 1, _graphs() - g0


def test_abs_of_int_arg_matches_torch():
    torch = _torch()
    for mode in BACKENDS:
        st.reset()
        g = st.compile(_abs, backend=mode, dynamic=True)
        for k, n in enumerate([3, 5, -4, 7, -6, 2]):
            _check(g(st, st.tensor(X14), n), _abs(torch, torch.tensor(X14), n), "%s %d" % (mode, k))
