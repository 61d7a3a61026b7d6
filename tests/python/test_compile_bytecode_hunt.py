# Bytecode translator hunt (Python 3.11 and 3.12): programs that once gave a
# compiled result different from plain Python, raised, crashed or leaked.
# Each test runs the same function eagerly and under symtrace.compile and
# compares. Covers what test_compile_adversarial_py.py, test_compile_breaks.py,
# test_compile_iterators.py, test_resume.py and test_compile_guard_gaps.py do
# not: defaults of inlined functions changed in place between calls, lists
# and dicts changed while a loop iterates them, generators abandoned while
# suspended inside try/finally or a with block, sys._getframe reaching the
# compiled frame (and logging, which must keep its partial graph).
# No torch needed (the eager run is the reference); runs under .venv312 too.
import inspect
import logging
import sys

import numpy as np
import pytest

import symtrace as st
from symtrace import _C

pytestmark = pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")


@pytest.fixture(autouse=True)
def _fresh():
    st.reset()
    yield
    st.reset()


def T(*vals):
    return st.tensor(np.array(vals, dtype=np.float32))


def same(a, b):
    """same(a, b): a compiled result equals the eager one (tensors by value)."""
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, st.Tensor):
        assert isinstance(b, st.Tensor) and tuple(a.shape) == tuple(b.shape), (a, b)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    else:
        assert type(a) is type(b) and a == b, (a, b)


# ------------------------------------------------ defaults changed in place
def _kw_scaled(x, *, k=2.0):
    return x * k


def _listed(x, extra=[1.0]):        # noqa: B006 - the mutable default is the point
    return x * sum(extra)


def test_inlined_defaults_changed_in_place_are_guarded():
    """An inlined function's defaults were bound as constants and only the
    identity of __defaults__/__kwdefaults__ was guarded: a kw-only default
    set in place (fn.__kwdefaults__['k'] = 7) or a list default appended to
    kept the first call's values."""
    def f(x):
        return _kw_scaled(x), _listed(x)
    c = st.compile(f, backend="interp")
    x = T(1.0, 2.0)
    try:
        same(c(x), f(x))
        _kw_scaled.__kwdefaults__["k"] = 7.0
        same(c(x), f(x))
        _listed.__defaults__[0].append(5.0)
        same(c(x), f(x))
        same(c(x)[0], x * 7.0)
        same(c(x)[1], x * 6.0)
    finally:
        _kw_scaled.__kwdefaults__["k"] = 2.0
        _listed.__defaults__[0][:] = [1.0]


# ------------------------------------------------ containers changed while iterated
def _entry(fn):
    return next((v for k, v in _C._fe_stats()["codes"].items()
                 if k.startswith(fn.__qualname__ + " (")), None)


def _grow_while_iterating(x, lst):
    for v in lst:                      # Python reads the list live: appended items come too
        if len(lst) < 5:
            lst.append(v * 2)
    return lst


def _dict_grows_while_iterating(x):
    d = {"a": x, "b": x + 1}
    try:
        for k in d:
            d[k + "x"] = x
    except RuntimeError as e:          # dictionary changed size during iteration
        return str(e), len(d)
    return "no error", len(d)


def _zip_while_removing(x, lst):
    for a, b in zip(lst, lst[1:]):
        if len(lst) > 2:
            lst.remove(b)
    return lst


def _next_after_pop(x, lst):
    it = iter(lst)
    a = next(it)
    lst.pop()
    return a, list(it)


@pytest.mark.parametrize("fn, args", [
    (_grow_while_iterating, lambda: (T(1.0), [T(1.0), T(2.0)])),
    (_grow_while_iterating, lambda: (T(1.0), [T(3.0)])),
    (_dict_grows_while_iterating, lambda: (T(2.0),)),
    (_zip_while_removing, lambda: (T(1.0), [1, 2, 3, 4])),
    (_next_after_pop, lambda: (T(1.0), [T(1.0), T(2.0), T(3.0)])),
], ids=["list-grows", "list-grows-from-one", "dict-grows", "zip-remove", "next-after-pop"])
def test_container_changed_while_iterated(fn, args):
    """Iterators over lists and dicts were unrolled from a snapshot: a list
    appended to inside `for v in lst` stopped at the old length, a dict
    growing inside its loop raised no RuntimeError (the compiled function
    returned None). Now a change to the container while its iterator is in
    use breaks the graph and Python runs it."""
    c = st.compile(fn, backend="interp")
    for _ in range(2):
        same(c(*args()), fn(*args()))


def test_items_rewritten_in_their_own_loop_stay_captured():
    """What Python allows (rewriting the current item, a dict's values)
    does not break."""
    def f(x, lst):
        for i, v in enumerate(lst):
            lst[i] = v * 2
        d = {"a": x, "b": x + 1}
        for k, v in d.items():
            d[k] = v * 3
        return lst, d["a"] + d["b"]
    c = st.compile(f, backend="interp")
    for k in range(3):
        same(c(T(1.0), [T(k), T(2.0)]), f(T(1.0), [T(k), T(2.0)]))
    e = _entry(f)
    assert e is not None and not e["plain"] and e["entries"] == 1, e
    assert _C._fe_stats()["breaks"] == 0


# ------------------------------------------------ generators closed unfinished
def _gen_with_cleanup(x, log):
    try:
        yield x
        yield x * 2
    finally:
        log.append("closed")


def _first_by_break(x, log):
    for v in _gen_with_cleanup(x, log):
        r = v + 1
        break
    return r, list(log)


def _first_by_next_kept_in_a_local(x, log):
    it = _gen_with_cleanup(x, log)     # closed when the frame returns
    return next(it) * 5


def _first_in_an_inlined_call(x, log):
    def take(y):
        return next(iter(_gen_with_cleanup(y, log)))
    y = take(x) + 1
    return y, list(log)


def _wrapped_yield_from(x, log):
    try:
        yield from _gen_with_cleanup(x, log)
    finally:
        log.append("outer closed")


def _first_through_yield_from(x, log):
    g = _wrapped_yield_from(x, log)
    a = next(g)
    del g
    return a, list(log)


def _grad_mode_gen(x):
    with st.no_grad():
        yield x * 2


def _first_under_the_generators_no_grad(x, log):
    for v in _grad_mode_gen(x):
        log.append(st.is_grad_enabled())
        return v
    return x


@pytest.mark.parametrize("fn", [_first_by_break, _first_by_next_kept_in_a_local,
                                _first_in_an_inlined_call, _first_through_yield_from,
                                _first_under_the_generators_no_grad])
def test_generator_left_suspended_in_a_try_runs_its_cleanup(fn):
    """A generator abandoned while suspended inside try/finally or a with
    block is closed by Python (its finally / __exit__ runs); the translator
    dropped its frame silently, so `log` missed "closed". Now that breaks
    the graph and Python runs the frame."""
    c = st.compile(fn, backend="interp")
    for k in range(2):
        want_log, got_log = [], []
        want = fn(T(1.0 + k), want_log)
        got = c(T(1.0 + k), got_log)
        same(got, want)
        assert got_log == want_log and want_log, (got_log, want_log)


def test_generator_with_cleanup_consumed_to_the_end_stays_captured():
    def f(x):
        log = []
        s = sum(_gen_with_cleanup(x, log))
        return s, list(_wrapped_yield_from(x, log)), len(log)
    c = st.compile(f, backend="interp")
    for k in range(3):
        same(c(T(float(k))), f(T(float(k))))
    e = _entry(f)
    assert e is not None and not e["plain"] and e["entries"] == 1, e
    assert _C._fe_stats()["breaks"] == 0


# ------------------------------------------------ frame introspection
def _callers_locals():
    return sorted(sys._getframe(1).f_locals)


def _reads_its_callers_locals(x):
    secret = x * 2
    names = _callers_locals()
    return secret, names


def _reads_its_own_line(x):
    fr = inspect.currentframe()
    y = x * 2
    return y, fr.f_code.co_name, fr.f_lineno - _reads_its_own_line.__code__.co_firstlineno


@pytest.mark.parametrize("fn", [_reads_its_callers_locals, _reads_its_own_line])
def test_frame_read_through_getframe_is_the_real_frame(fn):
    """sys._getframe() reaching the compiled frame itself got the partial
    graph's break function instead: its f_locals were ___arg0.., its
    f_lineno stayed at the call. Such a frame now runs as plain Python."""
    c = st.compile(fn, backend="interp")
    for k in range(2):
        same(c(T(1.0 + k)), fn(T(1.0 + k)))


def test_logging_inside_keeps_its_partial_graph():
    """logging's findCaller calls sys._getframe deeper down: the record
    still names the user's function and line, and the frame keeps its
    partial graph (no plain fallback)."""
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append((record.funcName, record.lineno, record.getMessage()))

    log = logging.getLogger("symtrace.test_bytecode_hunt")
    log.setLevel(logging.INFO)
    log.propagate = False
    h = Keep()
    log.addHandler(h)
    try:
        log.info("warm")            # fills the logger's level cache

        def f(x):
            y = x * 2
            log.info("shape %s", tuple(y.shape))
            return y + 1
        c = st.compile(f, backend="interp")
        records.clear()
        same(c(T(1.0, 2.0)), f(T(1.0, 2.0)))
        assert records[0] == records[1] and records[0][0] == "f", records
        e = _entry(f)
        assert e is not None and not e["plain"], e
    finally:
        log.removeHandler(h)
