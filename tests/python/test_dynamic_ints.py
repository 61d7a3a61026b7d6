"""Int frame arguments as symbols (frontend/tr_dynamic.c int_arg_symbol): under
dynamic=True an int argument (not 0 or 1, not a bool) is symbolic from the first call;
without it (automatic dynamic) a changed int alone translates the frame again with it
symbolic. Uses the translator follows (arithmetic with tensors, slice bounds, view and
creation sizes, comparisons) keep one graph; every other use (a range() length, a list
index, a dict key, a dim argument, a dtype picked by it) specializes it. Graph counts,
and values and grads against eager (and torch where it is installed)."""
import numpy as np
import pytest

import symtrace as st
from dynamic_helpers import close, fresh_dynamic, graphs  # noqa: F401

X = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
VALS = (2, 4, 3, 2, 5, 4)            # returns to earlier values


def _outs(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def _check(fn, vals=VALS, dynamic=True, grad=False, extra=()):
    """fn(x, n, *extra) compiled against eager for each n: values (and x's grad). The
    number of graphs made."""
    c = st.compile(fn, dynamic=dynamic)
    g0 = graphs()
    for n in vals:
        res = []
        for f in (c, fn):
            x = st.tensor(X, requires_grad=grad)
            ys = _outs(f(x, n, *extra))
            gx = None
            if grad:
                sum(((y * y).sum() for y in ys if isinstance(y, st.Tensor)), st.zeros(())).backward()
                gx = x.grad.tolist()
            res.append((ys, gx))
        (got, ggot), (want, gwant) = res
        assert len(got) == len(want)
        for a, b in zip(got, want):
            if isinstance(b, st.Tensor):
                assert a.shape == b.shape and a.dtype == b.dtype, (n, a.shape, b.shape)
                close(a.tolist(), b.tolist())
            else:
                assert type(a) is type(b) and a == b, (n, a, b)
        if grad:
            close(ggot, gwant)
    return graphs() - g0


# ---- uses that stay symbolic: one graph under dynamic=True, two when automatic
@pytest.mark.parametrize("dynamic,want", [(True, 1), (None, 2)])
def test_int_times_tensor_one_graph(dynamic, want):
    assert _check(lambda x, n: x * n + n, dynamic=dynamic, grad=True) == want


def test_int_times_tensor_matches_torch():
    torch = pytest.importorskip("torch")
    c = st.compile(lambda x, n: (x * n + n).sum(1), dynamic=True)
    for n in VALS:
        got = c(st.tensor(X), n).tolist()
        close(got, (torch.tensor(X) * n + n).sum(1).tolist())
    assert graphs() == 1


@pytest.mark.parametrize("dynamic,want", [(True, 1), (None, 2)])
def test_int_slice_bounds(dynamic, want):
    assert _check(lambda x, i: x[:, :i].sum(1), dynamic=dynamic, grad=True) == want
    assert _check(lambda x, i: x[i:] * 2, dynamic=dynamic, grad=True) == want
    assert _check(lambda x, i: x.flatten()[i * 2: i * 3], dynamic=dynamic) == want


def test_int_slice_matches_torch():
    torch = pytest.importorskip("torch")
    c = st.compile(lambda x, i: x[:, :i].sum(1) + x[i:].sum(), dynamic=True)
    for i in VALS:
        want = torch.tensor(X)[:, :i].sum(1) + torch.tensor(X)[i:].sum()
        close(c(st.tensor(X), i).tolist(), want.tolist())
    assert graphs() == 1


@pytest.mark.parametrize("dynamic,want", [(True, 1), (None, 2)])
def test_int_view_and_creation_sizes(dynamic, want):
    assert _check(lambda x, n: st.ones(n * 4).view(n, 4) * x[0, 0], dynamic=dynamic) == want
    assert _check(lambda x, n: st.zeros(n, 4) + x[0, :4], dynamic=dynamic) == want
    assert _check(lambda x, n: x.unsqueeze(0).expand(n, -1, -1).sum(0), dynamic=dynamic) == want


def test_int_returned_as_expression():
    # n * 2 + 1 returned: a plain int of the call's value, from one graph
    assert _check(lambda x, n: (x + 1, n * 2 + 1)) == 1


def test_zero_and_one_stay_constants():
    # 0 and 1 are not symbols (as sizes): each its own graph, then one for the rest
    assert _check(lambda x, i: x[:, :i] + 1, vals=(0, 1, 2, 3, 0, 1, 4)) == 3


def test_negative_after_symbolic_translates_again():
    # the symbol is guarded >= 2: x[-2:] is not x[2:]
    assert _check(lambda x, i: x[i:] * 1, vals=(2, 3, -2, 4, -3, 2)) == 3


def test_bool_argument_stays_static():
    assert _check(lambda x, b: x + 1 if b else x - 1, vals=(True, False, True)) == 2
    _m_symbolic("lambda x, b, m: x[:m] + 1 if b else x[:m] - 1", True)


def _m_symbolic(src, n):
    """A fresh f(x, n, m) from src with n fixed and m (a slice bound) varying: one graph."""
    f = eval(src)
    c = st.compile(f, dynamic=True)
    g0 = graphs()
    for m in (2, 4, 3, 5, 2):
        close(c(st.tensor(X), n, m).tolist(), f(st.tensor(X), n, m).tolist())
    assert graphs() - g0 == 1


# ---- uses that must specialize (each next to a symbolic m: one graph per n only)
def test_range_length_specializes():
    f = lambda x, n, m: sum(x[j, :m] for j in range(n))
    for n in (2, 3):
        assert _check(lambda x, m: f(x, n, m), vals=(2, 4, 3, 2)) == 1
    # n itself as the argument: the loop unrolls, one graph per n
    assert _check(lambda x, n: sum(x[j] for j in range(n)), vals=(2, 3, 4, 2, 3)) == 3


def test_relation_guard_both_sides():
    f = lambda x, n: x[:, :n] + 1 if n > 3 else x[:, :n] - 1
    assert _check(f, vals=(2, 4, 5, 3, 2, 4, 6)) == 2


def test_list_index_specializes():
    table = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    f = lambda x, n, m: x[:, :m] * table[n]
    assert _check(f, vals=(2, 4, 2, 4, 3), extra=(3,)) == 3
    f2 = lambda x, n, m: x[:, :m] * table[n]
    c = st.compile(f2, dynamic=True)
    g0 = graphs()
    for m in (2, 4, 3, 5, 2):   # n fixed: m symbolic
        close(c(st.tensor(X), 2, m).tolist(), f2(st.tensor(X), 2, m).tolist())
    assert graphs() - g0 == 1


def test_dict_key_specializes():
    d = {2: 1.0, 3: 2.0, 4: 3.0, 5: 4.0}
    assert _check(lambda x, n: x * d[n], vals=(2, 4, 3, 2, 4)) == 3
    _m_symbolic("lambda x, n, m: x[:m] * {2: 1.0, 3: 2.0, 4: 3.0}[n]", 3)


def test_dim_argument_specializes():
    f = lambda x, n, m: x[:m].unsqueeze(0).unsqueeze(0).sum(n)
    assert _check(f, vals=(2, 3, 2, 3), extra=(4,)) == 2
    assert _check(lambda x, n: x.unsqueeze(0).unsqueeze(0).sum(n), vals=(2, 3, 2)) == 2
    _m_symbolic("lambda x, n, m: x[:m].unsqueeze(0).unsqueeze(0).sum(n)", 2)


def test_dtype_picked_by_int_specializes():
    dts = {2: st.float32, 3: st.float64, 4: st.int64}
    assert _check(lambda x, n: (x * 3).to(dts[n]), vals=(2, 3, 4, 2, 3)) == 3
    _m_symbolic("lambda x, n, m: (x[:, :m] * 3).to({2: st.float32, 3: st.float64}[n])", 3)


def test_int_as_fill_value_and_power_specialize():
    assert _check(lambda x, n: st.full((2, 3), n) + x[0, 0], vals=(2, 3, 2)) == 2
    assert _check(lambda x, n: x ** n, vals=(2, 3, 2)) == 2
    _m_symbolic("lambda x, n, m: x[:m] ** n + st.full((2, 1), n)[0, 0]", 3)


# ---- arange with a symbolic start: the start is the statement's float attribute
@pytest.mark.parametrize("dynamic,want", [(True, 1), (None, 2)])
def test_arange_symbolic_start(dynamic, want):
    assert _check(lambda x, n: st.arange(n, n + 4) * x[0, :4], dynamic=dynamic) == want
    assert _check(lambda x, n: x[:, :4] + st.arange(n - 1, n + 3).float(), dynamic=dynamic) == want


def test_arange_start_from_a_size():
    # GPT-2's positions: arange(past, past + q) with past a cache's length
    f = lambda x, past: x + st.arange(past.shape[1], past.shape[1] + x.shape[1]).float()
    c = st.compile(f, dynamic=True)
    for p, q in ((5, 2), (6, 2), (9, 2), (5, 2), (7, 3)):
        x, pk = st.tensor(X[:2, :q]), st.zeros(2, p)
        close(c(x, pk).tolist(), f(x, pk).tolist())
    assert graphs() == 1


def test_arange_matches_torch():
    torch = pytest.importorskip("torch")
    c = st.compile(lambda n: st.arange(n, 2 * n + 3), dynamic=True)
    for n in VALS:
        assert c(n).tolist() == torch.arange(n, 2 * n + 3).tolist()
    assert graphs() == 1


# ---- a tensor compared with an int or a size: the int a 0-d tensor of the graph
@pytest.mark.parametrize("dynamic,want", [(True, 1), (None, 2)])
def test_tensor_compared_with_int_one_graph(dynamic, want):
    # each value made a graph: a comparison specialized the int (an operator did not)
    assert _check(lambda x, n: (x.masked_fill(st.arange(6).view(6, 1) < n, 0.0),
                                (x * 3 > n).sum(), (n <= x * 3).float().mean()),
                  dynamic=dynamic, grad=True) == want


def test_tensor_compared_with_a_size_one_graph():
    c = st.compile(lambda x: (st.arange(8) < x.shape[0]).sum() + x.sum(), dynamic=True)
    for n in (3, 5, 4, 3):
        x = st.ones(n, 2)
        assert c(x).item() == min(n, 8) + 2 * n
    assert graphs() == 1


# ---- an int argument stored into a tensor: read by C as its number, so guarded by value
@pytest.mark.parametrize("dynamic", [None, False, True])
def test_int_argument_stored_into_a_tensor_is_guarded(dynamic):
    # t[:3] = m baked the first call's m in with no guard: a later m wrote the first
    # (found by scripts/fuzz_dynints.py)
    def g(x, m):
        t = x.clone()
        t[:3] = m
        return t
    c = st.compile(g, dynamic=dynamic)
    for m in (2, 5, 2, 7.5, 3):
        assert c(st.zeros(8), m).tolist() == g(st.zeros(8), m).tolist(), m


@pytest.mark.parametrize("dynamic", [None, False, True])
def test_slice_of_an_int_argument_live_at_a_break_is_guarded(dynamic):
    # x[::n] with n = -1 raises (a break with slice(None, None, n) on the stack): the
    # slice was a template constant with no guard, so later calls kept raising
    # (found by scripts/fuzz_dynints.py)
    f = lambda x, n: (x[::n].sum(), n)  # noqa: E731
    c = st.compile(f, dynamic=dynamic)

    def run(fn, n):
        try:
            r = fn(st.arange(8.0), n)
            return r[0].item(), r[1]
        except ValueError as e:
            return type(e).__name__
    for n in (2, -1, 3, 2, 3):
        assert run(c, n) == run(f, n), n
