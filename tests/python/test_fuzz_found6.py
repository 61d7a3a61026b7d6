# Regressions of the bugs the fuzzers (scripts/fuzz_compile.py with and without --dynamic,
# fuzz_views.py, fuzz_guards.py, fuzz_memplan.py) found after the detached-writes /
# object-identity / autograd.Function side-effects merge, each with expected values,
# eager and compiled (the compiled functions called several times: the capture and the
# cached entries).

import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401

W = [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("base_write", [False, True])
def test_view_of_a_detached_alias_written_with_grad(mode, base_write):
    # v = x.detach() is an autograd root of its own: v.sub_(x * 2) gives it a history
    # (SubBackward), and w, a view of v, takes that history (torch: requires_grad True,
    # gradient -2 per element into x). The cached compiled entry returned w remade as a
    # view of x through the detach (no gradient); with a later write into x it was
    # re-derived through the detach too (fuzz_views seed 800186)
    def f(x):
        v = x.detach()
        w = v.reshape(1, -1)
        v.sub_(x * 2)
        if base_write:
            x.add_(1)
        return w, x

    g = maybe_compiled(f, mode)
    for k in range(3):
        b = st.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        w, x = g(b.clone())
        first = 0.0 if base_write else -1.0
        assert w.tolist() == [[first, first - 1, first - 2, first - 3, first - 4, first - 5]]
        assert w.requires_grad and x.requires_grad, k
        (w * st.tensor(W)).sum().backward()
        assert b.grad.tolist() == [[-2.0, -4.0, -6.0], [-8.0, -10.0, -12.0]], k
        b.grad = None
        (x * st.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
        assert b.grad.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], k


BREAK_SRC = '''
def prog(x):
    y = x * 2
    s = float(y.sum())   # a graph break: what follows runs in a resume function
    LOG_.append(s)
    return y + K
'''


@pytest.mark.parametrize("mode", BACKENDS)
def test_resume_function_of_equal_code_with_other_globals(mode):
    # the same source exec'd into two namespaces (importlib.reload, a fuzzer's fresh
    # namespace per run) gives equal code objects: the break / resume functions were
    # cached by code equality, so the second function resumed with the first one's
    # globals (its LOG_ and K; fuzz_compile seed 38 with an autograd.Function side effect)
    for k in range(3):
        ns = {"LOG_": [], "K": 10.0 * k}
        exec(compile(BREAK_SRC, "<same source>", "exec"), ns)
        g = st.compile(ns["prog"], backend=mode)
        for _ in range(2):
            assert g(st.ones(2)).tolist() == [2.0 + 10 * k] * 2
        assert ns["LOG_"] == [4.0, 4.0], k


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reader", ["index", "mul_scalar", "masked"])
def test_input_read_by_an_op_that_saves_nothing_of_it_then_written(mode, reader):
    # x[idx] saves only the indices and x * 2 only the 2, so x.mul_(x.clone()) afterwards
    # leaves eager's backward working (x.mul_ saves its own copy of the old x; not
    # x.mul_(x), whose saved operand x the write changes: torch's backward refuses it). The cached
    # compiled entry took any differentiable reader of the old x for one that saved it
    # and refused the backward with a version error (fuzz_views seed 801253)
    def f(x):
        if reader == "index":
            v = x[st.tensor([1, 1])]
        elif reader == "mul_scalar":
            v = x * 2
        else:
            v = x * 1
        x.mul_(x.clone())
        if reader == "masked":
            v[st.tensor([True, False])] += 2.5
        return x, v

    g = maybe_compiled(f, mode, fullgraph=False)  # (the bool mask breaks the graph)
    for k in range(3):
        b = st.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        x, v = g(b.clone())
        assert x.tolist() == [[1.0, 4.0, 9.0], [16.0, 25.0, 36.0]]
        x.sum().backward()
        assert b.grad.tolist() == [[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]], k


@pytest.mark.parametrize("mode", MODES)
def test_input_saved_by_another_op_then_written_still_refuses(mode):
    # y = x * w saves x for w's gradient: x.mul_(2) afterwards makes backward fail, as
    # torch's
    def f(x, w):
        y = x * w
        x.mul_(2)
        return y

    g = maybe_compiled(f, mode, fullgraph=False)  # (symtrace breaks the graph there)
    for _ in range(2):
        w = st.full((3,), 2.0, requires_grad=True)
        y = g(st.ones(3, requires_grad=True).clone(), w)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("mode", MODES)
def test_flatten_of_one_dim_is_the_tensor_itself(mode):
    # torch's flatten(start_dim == end_dim) returns self, not a view: detach_() of it is
    # allowed (symtrace made a view and refused: "Can't detach views in-place"; fuzz_views
    # seed 802108), and a write into it is a write into x
    def f(x):
        y = x * 1
        z = y.flatten(-1)
        z.detach_()
        w = y.flatten(0, 0)
        w.add_(1)
        return y, z is y, w is y, x.flatten(1, 1) is x

    g = maybe_compiled(f, mode, fullgraph=False)  # (detach_() breaks the graph)
    for k in range(2):
        y, a, b, c = g(st.tensor([[1.0, 2.0], [3.0, 4.0]]) * (k + 1))
        assert y.tolist() == [[1.0 + 1 + k * 1, 2.0 * (k + 1) + 1], [3.0 * (k + 1) + 1, 4.0 * (k + 1) + 1]]
        assert (a, b, c) == (True, True, True)
        assert not y.requires_grad
    assert st.ones(3).flatten().tolist() == [1.0] * 3
    assert st.ones(()).flatten().shape == (1,)
