# tests/python/compile_check_helpers.py - what the translator tests that compare a
# compiled function with itself run eagerly share (test_compile_exceptions.py,
# test_compile_exceptions2.py, test_compile_fe9.py, test_compile_fe10.py): inputs,
# a comparison of results (tensors as arrays; exceptions by type, args, attributes,
# C fields and message; dicts by items) and the graph / break counts.
import numpy as np

import symtrace as st
from symtrace import _C


def X(*shape, seed=0):
    return st.tensor(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def _np(v):
    if isinstance(v, BaseException):       # type, args, attributes and C fields
        extra = [getattr(v, k, None) for k in ("value", "errno", "strerror", "filename",
                                                "filename2")]
        return [type(v).__name__, _np(v.args), _np(sorted(vars(v).items())), _np(extra), str(v)]
    if isinstance(v, dict):
        return [[k, _np(u)] for k, u in sorted(v.items())]
    if isinstance(v, (tuple, list)):
        return [_np(u) for u in v]
    return v.detach().numpy() if hasattr(v, "numpy") else v


def same(a, b):
    a, b = _np(a), _np(b)
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (a, b)
        for u, v in zip(a, b):
            same(u, v)
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    else:
        assert a == b, (a, b)


def check(fn, calls, graphs=1, breaks=0):
    """fn compiled, called with each argument tuple of calls, equals eager;
    then the stats: graphs (>= 1 op), breaks."""
    st.reset()
    cf = st.compile(fn)
    for args in calls:
        same(cf(*args), fn(*args))
    s = _C._fe_stats()
    assert (s["graphs"], s["breaks"]) == (graphs, breaks), s
    return s
