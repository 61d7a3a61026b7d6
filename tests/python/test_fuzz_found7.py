# tests/python/test_fuzz_found7.py - regressions of fuzzer findings in compiled code:
# object identity of made-in-frame objects stored into outside lists (fuzz_guards)
# and aliasing of detached views across graph breaks (fuzz_views). Each runs eager
# and compiled, the compiled function called several times (the translation's own
# call, then the cached entry), with expected values or against torch.

import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("holder", ["module", "global"])
def test_dict_stored_in_outside_list_and_returned_is_one_object(mode, holder):
    # d_ holds the outside list (a shadow while translating) and is appended to it:
    # the translation's own call replayed the list's contents and the result with two
    # copies of d_, so out[1][1] was not m.f4[1] (fuzz_guards seed 820000)
    m = st.nn.Module()
    glob = {"f4": []}

    def lst():
        return m.f4 if holder == "module" else glob["f4"]

    def f(x):
        py = []
        l_ = [len(lst())]
        lst().append(l_)
        py.append(l_)
        d_ = {"in": lst()}
        lst().append(d_)
        py.append(d_)
        return x + 1, tuple(py)

    g = maybe_compiled(f, mode)
    for k in range(3):
        m.f4 = []
        glob["f4"] = []
        out = g(st.zeros(2))
        L = lst()
        assert out[0].tolist() == [1.0, 1.0]
        assert len(L) == 2 and L[0] == [0], k
        assert out[1][0] is L[0], k
        assert out[1][1] is L[1], k
        assert out[1][1]["in"] is L, k


class _Box:
    pass


@pytest.mark.parametrize("mode", MODES)
def test_user_object_holding_a_mutated_outside_list(mode):
    # a fresh user object whose attribute is an outside list the frame mutates, and
    # a dict stored into that list and returned: on the translation's call o.l was
    # the shadow (a copy), and g[1] a copy of the returned dict
    g_list = []

    def f(x):
        g_list.append(1)
        o = _Box()
        o.l = g_list
        d = {"n": 1}
        g_list.append(d)
        return x * 2, o, d

    g = maybe_compiled(f, mode)
    for k in range(3):
        g_list.clear()
        y, o, d = g(st.ones(2))
        assert y.tolist() == [2.0, 2.0]
        assert o.l is g_list, k
        assert g_list == [1, {"n": 1}] and g_list[1] is d, k


def _detached_alias_fill(lib):
    def f(x):
        v = x.permute(2, 0, 1).detach()
        v.add_(x.sum())
        v.diagonal(0, 0, 1).fill_(-2)   # breaks the graph: v is live at the break
        return x

    return f


@pytest.mark.parametrize("mode", MODES)
def test_detached_alias_with_history_live_at_break_keeps_aliasing(mode):
    # v, a detached alias of x given a history of its own by add_, was returned by the
    # graph before the break in its own buffer: from the second call the fill after
    # the break no longer reached x (fuzz_views seed 802081)
    expect = [[[-2.0, 0.0], [-2.0, 0.0]], [[0.0, -2.0], [0.0, -2.0]]]
    g = maybe_compiled(_detached_alias_fill(st), mode, fullgraph=False)
    for k in range(3):
        x = g(st.zeros(2, 2, 2, requires_grad=True).clone())
        assert x.tolist() == expect, k


def test_detached_alias_with_history_live_at_break_vs_torch():
    torch = pytest.importorskip("torch")
    tx = _detached_alias_fill(torch)(torch.zeros(2, 2, 2, requires_grad=True).clone())
    g = st.compile(_detached_alias_fill(st))
    for k in range(3):
        x = g(st.zeros(2, 2, 2, requires_grad=True).clone())
        assert x.tolist() == tx.tolist(), k


@pytest.mark.parametrize("mode", MODES)
def test_detached_alias_with_history_returned(mode):
    # returned from one graph: the run computes v (its gradient is add_'s) and returns
    # it in x's storage, so later writes into v show in x and back
    def f(x):
        v = x.t().detach()
        v.add_(x.sum())
        return v, x

    g = maybe_compiled(f, mode)
    for k in range(3):
        b = st.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v, x = g(b.clone())
        assert x.tolist() == [[11.0, 12.0], [13.0, 14.0]], k
        assert v.requires_grad, k
        v[0, 1] = -1.0
        assert x[1, 0].item() == -1.0, k
        x[0, 0] = 5.0
        assert v[0, 0].item() == 5.0, k
        v.sum().backward()
        # v[0, 1] = -1 overwrote one element: 3 of the 4 carry x.sum()'s gradient (torch: 3)
        assert b.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]], k


@pytest.mark.parametrize("mode", MODES)
def test_data_write_into_split_output_live_at_break(mode):
    # v4, a split output, is an input of the graph after the break and is written only
    # through v4.data: the cached entry wrote it back with a recorded in-place copy,
    # which a split output refuses ("Output 2 of Split is a view and is being modified
    # inplace"); eager records nothing (fuzz_views seed 803034)
    def f(x0):
        v4 = x0.split(1, 0)[-1]
        x0.diagonal(0, 1, 0)      # breaks the graph (strides that do not merge)
        v6 = v4.data
        v6.index_put_((st.tensor([0]),), v6[0].clone() * 2, accumulate=False)
        return (x0,)

    base = [[float(7 * r + c) for c in range(7)] for r in range(3)]
    g = maybe_compiled(f, mode, fullgraph=False)
    g(st.tensor(base)[..., 1::2])     # an entry without grad first, as the fuzzer did
    for k in range(3):
        b = st.tensor(base, requires_grad=True)
        (out,) = g(b.clone()[..., 1::2])
        # row 2 doubled through .data; the gradient is as if unwritten (torch: the same)
        assert out.tolist() == [[1.0, 3.0, 5.0], [8.0, 10.0, 12.0], [30.0, 34.0, 38.0]], k
        (out * st.tensor([[1.0, 2.0, 3.0]] * 3)).sum().backward()
        assert b.grad.tolist() == [[0.0, 1.0, 0.0, 2.0, 0.0, 3.0, 0.0]] * 3, k


def _minimum_detached_write(lib):
    def f(x0):
        v3 = x0[-2::3, :3]
        v7 = lib.minimum(v3 * 1, v3.detach())
        v8 = v7.detach()
        v8[:, lib.tensor([2, 1])] = -1
        v11 = v7.as_strided((1, 1), (3, 2))   # breaks the graph: v7, v8 live
        v12 = v11.data
        v12.add_(v11.sum() * 0.5)
        return v8, v7

    return f


@pytest.mark.parametrize("mode", MODES)
def test_computed_value_and_its_detached_alias_live_at_break(mode):
    # v8 = v7.detach() written in place: v7 takes v8's data and keeps its history; the
    # graph before the break returned v7 (then with grad) in its own buffer, so the
    # .data write after the break into v7 did not show in v8 (fuzz_views seed 803201)
    base = [[float(5 * r + c) / 4 for c in range(5)] for r in range(5)]
    g = maybe_compiled(_minimum_detached_write(st), mode, fullgraph=False)
    g(st.tensor(base))            # an entry without grad first, as the fuzzer did
    for k in range(3):
        b = st.tensor(base, requires_grad=True)
        v8, v7 = g(b.clone())
        assert v8.tolist() == [[5.625, -1.0, -1.0]], k
        assert v7.tolist() == [[5.625, -1.0, -1.0]] and v7.requires_grad, k
        (v7 * st.tensor([[1.0, 2.0, 3.0]])).sum().backward()
        # minimum(v3, v3.detach()) sends half of v7's gradient to v3 (ties split)
        assert b.grad.tolist()[3] == [0.5, 1.0, 1.5, 0.0, 0.0], k


def test_computed_value_and_its_detached_alias_vs_torch():
    torch = pytest.importorskip("torch")
    base = [[float(5 * r + c) / 4 for c in range(5)] for r in range(5)]
    tb = torch.tensor(base, dtype=torch.float64, requires_grad=True)
    t8, t7 = _minimum_detached_write(torch)(tb.clone())
    (t7 * torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)).sum().backward()
    g = st.compile(_minimum_detached_write(st))
    for k in range(3):
        b = st.tensor(base, dtype=st.float64, requires_grad=True)
        v8, v7 = g(b.clone())
        assert v8.tolist() == t8.tolist() and v7.tolist() == t7.tolist(), k
        (v7 * st.tensor([[1.0, 2.0, 3.0]], dtype=st.float64)).sum().backward()
        assert b.grad.tolist() == tb.grad.tolist(), k


def _write_through_split_of_computed(lib):
    def f(x1):
        v2 = x1.squeeze(0)
        v3 = v2.as_strided((2,), (1,))   # breaks the graph
        v5 = lib.add(v3.view(2), 2.0)
        v6 = v5.unsqueeze(1)
        v7 = v6.split(2, 1)[0]
        v7.index_put_((lib.tensor([1, 1, 0, 1]),), lib.tensor(0.25), accumulate=True)
        v2 += -2                          # breaks again: v6 and v7 live
        v6.index_put_((lib.tensor([1]),), lib.tensor(0.5), accumulate=True)
        return (v7,)

    return f


@pytest.mark.parametrize("mode", MODES)
def test_views_of_a_computed_value_written_through_stay_views_across_break(mode):
    # v6 and v7 (views of v5, computed) written through v7: their new values were
    # scatters, returned in two buffers by the graph before the break, so the write
    # into v6 after it did not show in v7 on cached calls (fuzz_views seed 803125)
    g = maybe_compiled(_write_through_split_of_computed(st), mode, fullgraph=False)
    for k in range(3):
        (v7,) = g(st.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
        # v5 = [3, 4]; v7[1] += 3 * 0.25, v7[0] += 0.25; then v6[1] += 0.5
        assert v7.tolist() == [[3.25], [5.25]], k


def test_views_of_a_computed_value_written_through_vs_torch():
    torch = pytest.importorskip("torch")
    (t7,) = _write_through_split_of_computed(torch)(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    g = st.compile(_write_through_split_of_computed(st))
    for k in range(3):
        (v7,) = g(st.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
        assert v7.tolist() == t7.tolist(), k


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("brk", [False, True])
def test_list_made_in_frame_holding_the_mutated_outside_list(mode, brk):
    # py holds the outside list itself (a shadow while translating, read back through
    # d_['in']): the translation's call returned the shadow in py, or a copy of d_,
    # instead of m.f4 (fuzz_guards seed 820000, with and without a break before the
    # return)
    m = st.nn.Module()
    m.f4 = []

    def f(x):
        py = []
        l_ = [len(m.f4)]
        m.f4.append(l_)
        py.append(l_)
        d_ = {"in": m.f4}
        m.f4.append(d_)
        py.append(d_)
        py.append(d_["in"])
        if brk:
            print("", end="")   # a graph break: py and d_ live
        return x + 1, py, tuple(py)

    g = maybe_compiled(f, mode, fullgraph=not brk)
    for k in range(3):
        m.f4 = []
        y, py, tp = g(st.zeros(2))
        assert y.tolist() == [1.0, 1.0]
        assert len(m.f4) == 2 and m.f4[0] == [0], k
        assert py[2] is m.f4 and tp[2] is m.f4, k
        assert py[1] is m.f4[1] and tp[1] is m.f4[1] and py[1]["in"] is m.f4, k
        assert py[0] is m.f4[0] and tp[0] is m.f4[0], k
