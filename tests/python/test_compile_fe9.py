# Translator gaps that broke graphs in ordinary code (frontend/tr_classify.c,
# guards.c, tr_except.c, entry.c): comparisons of layout and memory-format
# objects (constants guarded like dtypes), caught exceptions returned or
# stored (rebuilt for the caller with their type, args and attributes), user
# exception classes taking a tensor positional argument, and isinstance /
# __class__ on a caught exception. Each function is compared with itself run
# eagerly over 3+ compiled calls; _C._fe_stats() gives the graph and break
# counts. Also runs under Python 3.12.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C

pytestmark = pytest.mark.skipif(not hasattr(st, "compile"), reason="symtrace.compile is not built")


def X(*shape, seed=0):
    return st.tensor(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def _np(v):
    if isinstance(v, (tuple, list)):
        return [_np(u) for u in v]
    return v.numpy() if hasattr(v, "numpy") else v


def same(a, b):
    a, b = _np(a), _np(b)
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for u, v in zip(a, b):
            same(u, v)
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    elif isinstance(a, BaseException):
        assert type(a) is type(b) and a.args == b.args and vars(a) == vars(b)
    else:
        assert a == b


def check(fn, calls, graphs=1, breaks=0):
    """fn compiled, called with each argument tuple of calls, equals eager;
    then the stats: graphs (>= 1 op), breaks."""
    st.reset()
    cf = st.compile(fn)
    for args in calls:
        same(cf(*args), fn(*args))
    s = _C._fe_stats()
    assert s["breaks"] == breaks, s
    assert s["graphs"] == graphs, s
    return s


# ---------------- 1. layout and memory-format objects ----------------
def f_layout(x):
    if x.layout == st.strided:
        return x + 1, x.layout
    return x - 1, x.layout


def f_layout_ne(x):
    if x.layout != st.sparse_coo:
        return x * 2
    return x


def f_fmt(x, fmt):
    if fmt == st.channels_last:
        return x + 1, fmt
    return x - 1, fmt


def f_fmt_contig(x):
    if x.is_contiguous(memory_format=st.channels_last):
        return x + 1
    return x - 1


def test_layout_compare():
    check(f_layout, [(X(2, 3),)] * 3)
    check(f_layout_ne, [(X(2, 3),)] * 3)


def test_memory_format_compare_guarded():
    x = X(2, 3, 4, 5)
    # the format is guarded as a constant: another one traces anew
    check(f_fmt, [(x, st.channels_last)] * 3 + [(x, st.contiguous_format)] * 2 +
          [(x, st.channels_last)], graphs=2)


def test_is_contiguous_memory_format_branch():
    x = X(2, 3, 4, 5)
    xc = x.contiguous(memory_format=st.channels_last)
    check(f_fmt_contig, [(x,), (x,), (xc,), (xc,), (x,)], graphs=2)


def _fmt_fn(lib):
    def f(x, fmt):
        if x.layout == lib.strided and fmt == lib.channels_last:
            return x.contiguous(memory_format=fmt) + 1, fmt
        return x - 1, fmt
    return f


def test_layout_matches_torch():
    torch = pytest.importorskip("torch")
    x = X(2, 3, 4, 5)
    cf = st.compile(_fmt_fn(st))
    for name in ["channels_last", "contiguous_format", "channels_last"]:
        got = cf(x, getattr(st, name))
        ref = _fmt_fn(torch)(torch.tensor(x.numpy()), getattr(torch, name))
        np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), rtol=1e-6)
        assert got[1] is getattr(st, name) and ref[1] is getattr(torch, name)
