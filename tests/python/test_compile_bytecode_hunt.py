# Bytecode translator hunt (Python 3.11 and 3.12): programs that once gave a
# compiled result different from plain Python, raised, crashed or leaked.
# Each test runs the same function eagerly and under symtrace.compile and
# compares. Covers what test_compile_adversarial_py.py, test_compile_breaks.py,
# test_compile_iterators.py, test_resume.py and test_compile_guard_gaps.py do
# not: defaults of inlined functions changed in place between calls, ...
# No torch needed (the eager run is the reference); runs under .venv312 too.
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
