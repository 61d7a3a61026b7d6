# tests/python/test_compile_closures.py - partial graphs in frames with
# closures: a graph break in a function that has cell variables (a local
# captured by an inner function or lambda), or with a function made in the
# frame live at the break, keeps the graph before the break and resumes
# after it (resume.c: the frame's cells become free variables of the
# resume code; the entry makes new cells and new function objects on
# every call, entry.c's ST_T_CELL / ST_T_FUNCTION). Each program runs
# eagerly on torch and compiled on symtrace 3+ times with new values:
# values and gradients agree, the graph and break counts are the expected
# ones, a later call never sees an earlier call's cells, and calls after
# the first translate nothing new.
import numpy as np
import pytest

import symtrace as st
import symtrace._C as _C


def _data(seed):
    return np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)


def _translations():
    return _C._fe_stats()["translations"]


def _np(v):
    return v.detach().numpy() if hasattr(v, "detach") else np.asarray(v)


def _close(a, b):
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-5)


def _counts(fn, *args):
    st.reset()
    e = st.explain(fn, *args)
    return e.graph_count, e.graph_break_count


def _eager(fn, d, grad, lib):
    x = lib.tensor(d, requires_grad=grad)
    out = fn(x)
    if grad:
        out.sum().backward()
    return out, x.grad


def _check(fn, graphs, breaks, calls=4, grad=True):
    """fn(x) compiled on symtrace against fn run eagerly on symtrace and,
    where it is installed, on torch, for several inputs: values, x's
    gradient, counts, no translation after the first call."""
    try:
        import torch
    except ImportError:
        torch = None
    g, b = _counts(fn, st.tensor(_data(0)))
    assert (g, b) == (graphs, breaks), f"(graphs, breaks) = {(g, b)}, want {(graphs, breaks)}"
    st.reset()
    cf = st.compile(fn)
    n1 = None
    for i in range(calls):
        d = _data(i)
        xs = st.tensor(d, requires_grad=grad)
        got = cf(xs)
        if grad:
            got.sum().backward()
        if i == 0:
            n1 = _translations()
        for lib in (st, torch):
            if lib is None:
                continue
            want, want_grad = _eager(fn, d, grad, lib)
            _close(got, want)
            if grad:
                _close(xs.grad, want_grad)
    assert _translations() == n1, "a call after the first translated again"


# ---- a closure made in the frame, called before and after the break
def prog_closure(x):
    k = 2.0

    def inner(t):
        return t * k + 1

    y = inner(x.sin())
    print(end="")  # graph break: print is not traced
    return inner(y) - 1


def test_closure_partial_graphs():
    _check(prog_closure, graphs=2, breaks=1)


# ---- n_closure: the break inside the closure itself
def prog_closure_breaks_inside(x):
    k = 2.0

    def inner(t):
        u = t * k
        print(end="")  # graph break: print is not traced
        return u + k

    return inner(x + 1) - 1


def test_closure_breaking_inside():
    _check(prog_closure_breaks_inside, graphs=4, breaks=2)


# ---- a lambda made in the frame, called by the breaking call
def prog_lambda(x):
    f = lambda t: (t.sin(), print(end=""))[0] * 3  # noqa: E731  (breaks inside)
    return f(x + 1) + 1


def test_lambda_live_at_break():
    _check(prog_lambda, graphs=4, breaks=2)


# ---- a lambda capturing a tensor computed by the prefix graph
def prog_lambda_tensor(x):
    w = x.cos() * 3
    f = lambda t: t * w  # noqa: E731
    print(end="")  # graph break: print is not traced
    return f(x) + w


def test_lambda_captures_graph_output():
    _check(prog_lambda_tensor, graphs=2, breaks=1)


# ---- a closure reading a local assigned after the break
def prog_store_after(x):
    k = x * 2
    g = lambda t: t + k  # noqa: E731
    y = g(x)
    print(end="")  # graph break: print is not traced
    k = x * 3
    return g(y)


def test_closure_sees_value_assigned_after_break():
    # the store into the cell (STORE_DEREF) in the resume function is a
    # side effect on a cell handed to it: it breaks there, the break
    # function stores into the cell, and a second resume function runs g(y)
    _check(prog_store_after, graphs=3, breaks=2)


# ---- nested closures: an inner function made by a function made in the frame
def prog_nested(x):
    a = x * 2

    def outer(t):
        b = t + 1

        def inner(u):
            return u * a + b

        return inner(t) * 2

    y = outer(x)
    print(end="")  # graph break: print is not traced
    return outer(y) + a


def test_nested_closures():
    _check(prog_nested, graphs=2, breaks=1)


# ---- a cell that is also an argument
def prog_arg_cell(x):
    def g():
        return x * 2

    y = g() + 1
    print(end="")  # graph break: print is not traced
    return g() * y


def test_argument_cell():
    _check(prog_arg_cell, graphs=2, breaks=1)


# ---- a recursive inner function (its closure holds a cell holding itself)
def prog_recursive(x):
    def rec(t, n):
        return t if n == 0 else rec(t * 2, n - 1)

    y = rec(x, 2)
    print(end="")  # graph break: print is not traced
    return rec(y, 1) + 1


def test_recursive_inner_function():
    _check(prog_recursive, graphs=2, breaks=1, calls=3)


# ---- a closure returned from the frame: each call's own cells
def make_reader(x):
    k = x * 2
    get = lambda: k  # noqa: E731
    print(end="")  # graph break: print is not traced
    return get, k + 1


def test_returned_closure_keeps_its_own_cells():
    st.reset()
    cf = st.compile(make_reader)
    readers = []
    for i in range(3):
        d = _data(i)
        get, k1 = cf(st.tensor(d))
        _close(k1, d * 2 + 1)
        readers.append((get, d))
    n1 = _translations()
    for get, d in readers:        # called after later calls: still its own cell
        _close(get(), d * 2)
    assert len({id(g) for g, _ in readers}) == 3
    assert len({id(g.__closure__[0]) for g, _ in readers}) == 3
    assert _translations() == n1
    g, b = _counts(make_reader, st.tensor(_data(0)))
    assert (g, b) == (2, 1)   # k = x * 2 before the break, k + 1 after it


def test_closure_cells_are_shared_with_the_resume():
    # the closure returned after the break and the cell the resume function
    # reads are one cell: a store by the closure is seen by the frame
    def f(x):
        k = x + 1

        def setk(v):
            nonlocal k
            k = v

        print(end="")  # graph break: print is not traced
        setk(x * 5)
        return k

    st.reset()
    cf = st.compile(f)
    for i in range(3):
        d = _data(i)
        _close(cf(st.tensor(d)), d * 5)
    # k = x + 1 and x * 5 are graphs; setk's store (a cell of the frame
    # that called it) breaks in setk's own frame, which runs plain
    assert _counts(f, st.tensor(_data(0))) == (2, 3)


# ---- without a break: a closure returned from a whole-graph frame
def make_scaler(x, s):
    w = x * s
    return lambda t, b=1.0: t * w + b


def test_closure_returned_from_a_whole_graph():
    # the function and its cell are made anew on every call (ST_T_FUNCTION):
    # one graph, no break, and each closure reads its own call's w
    st.reset()
    cf = st.compile(make_scaler)
    fs = []
    for i in range(3):
        d = _data(i)
        fs.append((cf(st.tensor(d), 2.0), d))
    n1 = _translations()
    for f, d in fs:
        _close(f(st.tensor(np.ones_like(d))), d * 2.0 + 1.0)
    assert f.__defaults__ == (1.0,) and f.__name__ == "<lambda>"
    assert len({id(f.__closure__[0]) for f, _ in fs}) == 3
    assert _translations() == n1
    assert _counts(make_scaler, st.tensor(_data(0)), 2.0) == (1, 0)


# ---- del of a cell variable (DELETE_DEREF) after a graph
def prog_del_cell(x):
    k = 2.0

    def g():
        return k

    y = x * g()
    del k
    return y + 1


def test_del_cell_variable_resumes():
    _check(prog_del_cell, graphs=2, breaks=1)


# ---- a closure's own frame storing into the cell it closes over
def _counter_step(x):
    total = x * 0

    def add(t):
        nonlocal total
        total = total + t.sin()
        print(end="")  # graph break: print is not traced
        total = total * 2
        return t

    add(x)
    add(x + 1)
    return total


def test_nonlocal_store_after_break():
    # add's frame breaks at print; its resume function stores into the
    # cell handed to it (STORE_DEREF: a break whose break function does it)
    _check(_counter_step, graphs=4, breaks=5, calls=3)


# ---- a hook handle removed inside the compiled frame (after the break)
_SEEN = []


def _double_hook(g):
    _SEEN.append(1)
    return g * 2


def test_hook_handle_remove_is_not_run_once_at_translation():
    # RemovableHandle.remove() was run for real while translating (library
    # code), so later calls of the entry never removed their hook
    w = st.tensor(np.ones((2, 2), dtype=np.float32), requires_grad=True)

    def step(x):
        h = w.register_hook(_double_hook)
        (x @ w).sum().backward()
        h.remove()
        return w.grad

    st.reset()
    _SEEN.clear()
    cf = st.compile(step)
    for i in range(4):
        w.grad = None
        g = cf(st.tensor(np.ones((2, 2), dtype=np.float32)))
        _close(g, np.full((2, 2), 4.0, dtype=np.float32))
        assert len(_SEEN) == i + 1, "a removed hook ran again"


# ---- a function from outside the frame keeps its identity guard
def _make_twice():
    return lambda t: t * 2


_F1, _F2 = _make_twice(), _make_twice()


def pick(x, fn):
    y = fn(x + 1)
    print(end="")  # graph break: print is not traced
    return y * 2 if fn is _F1 else y * 3


def test_outside_function_keeps_identity_guard():
    # only functions whose code the frame defines are guarded by their
    # parts after a break: _F1 and _F2 share code, not identity
    st.reset()
    cf = st.compile(pick)
    d = _data(0)
    for fn, k in ((_F1, 2), (_F2, 3), (_F1, 2), (_F2, 3)):
        _close(cf(st.tensor(d), fn), (d + 1) * 2 * k)
