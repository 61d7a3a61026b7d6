# symtrace.Size (frontend/size_type.c): Tensor.shape and Tensor.size() are a
# tuple subclass, as torch.Size: equal to and hashing as the tuple, numel(),
# slices, + and * that stay Sizes from either side, the constructor's checks,
# pickling; accepted wherever a shape is. Under symtrace.compile a Size stays
# a Size (returned, sliced, passed as an argument and guarded by value), with
# static and dynamic shapes, and costs no graph break. Python 3.11 and 3.12;
# the reprs are checked against torch's where torch is installed.
import copy
import pickle

import numpy as np
import pytest

import symtrace as st
from symtrace import _C

try:
    import torch
except ImportError:  # Python 3.12 has no torch here
    torch = None

BACKEND = "llvm" if _C._fe_backend_available("llvm") else "interp"
compiled_only = pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")


@pytest.fixture(autouse=True)
def _fresh():
    st.reset()
    yield
    st.reset()


def test_shape_and_size_are_sizes():
    x = st.zeros(2, 3, 4)
    for s in (x.shape, x.size()):
        assert type(s) is st.Size and isinstance(s, tuple)
        assert s == (2, 3, 4) and hash(s) == hash((2, 3, 4)) and len(s) == 3
        assert list(s) == [2, 3, 4] and s[-1] == 4 and type(s[0]) is int
    assert type(x.size(1)) is int and x.size(1) == 3
    assert type(x.stride()) is tuple          # torch's stride() is a plain tuple too
    assert type(st.tensor(1.0).shape) is st.Size and st.tensor(1.0).shape == ()


def test_numel_repr_slicing_arithmetic():
    s = st.Size([2, 3, 4])
    assert s.numel() == 24 and st.Size().numel() == 1 and st.Size([0, 5]).numel() == 0
    assert repr(s) == "symtrace.Size([2, 3, 4])" and str(s) == repr(s) and f"{s}" == repr(s)
    assert repr(st.Size()) == "symtrace.Size([])"
    for r, want in ((s[1:], (3, 4)), (s[::-1], (4, 3, 2)), (s + (5,), (2, 3, 4, 5)),
                    ((1,) + s, (1, 2, 3, 4)), (s + st.Size([7]), (2, 3, 4, 7)),
                    (s * 2, (2, 3, 4) * 2), (2 * s, (2, 3, 4) * 2)):
        assert type(r) is st.Size and r == want
    assert s.count(3) == 1 and s.index(4) == 2
    with pytest.raises(TypeError, match="concatenate"):
        s + [1]


def test_constructor_checks():
    assert st.Size([True, np.int64(3), st.tensor(5)]) == (1, 3, 5)
    assert all(type(v) is int for v in st.Size([True, np.int64(3), st.tensor(5)]))
    assert st.Size((i for i in range(3))) == (0, 1, 2) and st.Size([-1]) == (-1,)
    with pytest.raises(TypeError, match=r"takes an iterable of 'int' \(item 1 is 'float'\)"):
        st.Size([1, 1.5])
    with pytest.raises(TypeError, match=r"item 0 is 'str'"):
        st.Size(["a"])
    with pytest.raises(TypeError, match=r"item 0 is 'Tensor'"):
        st.Size([st.tensor([1, 2])])
    with pytest.raises(TypeError, match="not iterable"):
        st.Size(3)


def test_pickle_copy_and_use_as_a_shape():
    s = st.zeros(2, 5).shape
    for c in (pickle.loads(pickle.dumps(s)), copy.copy(s), copy.deepcopy(s)):
        assert type(c) is st.Size and c == s
    x = st.arange(10.0)
    assert st.zeros(s).shape == s and x.view(s).shape == s and x.reshape(s[::-1]).shape == (5, 2)
    assert st.ones(2, 1).expand(s).shape == s and x.new_zeros(s).shape == s
    assert np.zeros(s).shape == (2, 5)


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_repr_as_torch():
    for shape in ([], [3], [2, 3, 4], [0, 1]):
        t, s = torch.Size(shape), st.Size(shape)
        assert repr(s) == repr(t).replace("torch.", "symtrace.")
        assert s.numel() == t.numel() and s == t
        assert repr(s[1:]) == repr(t[1:]).replace("torch.", "symtrace.")
        assert repr((9,) + s) == repr((9,) + t).replace("torch.", "symtrace.")
    assert repr(st.zeros(2, 3).shape) == repr(torch.zeros(2, 3).shape).replace("torch.", "symtrace.")


def _f(x):
    s = x.shape
    n = s.numel()
    y = x.reshape(*s[:-1], 1, s[-1]) * 2.0 + x.reshape(n).sum()
    return y, s, s[1:], n, isinstance(s, st.Size)


@compiled_only
@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_sizes_stay_sizes(dynamic):
    c = st.compile(_f, backend=BACKEND, dynamic=dynamic)
    for shape in ((2, 4), (3, 6), (5, 8)):
        x = st.randn(*shape)
        y, s, tail, n, is_size = c(x)
        ye, se, taile, ne, _ = _f(x)
        np.testing.assert_allclose(y.numpy(), ye.numpy())
        assert type(s) is st.Size and s == se and type(tail) is st.Size and tail == taile
        assert n == ne and is_size is True
    stats = _C._fe_stats()
    assert stats["breaks"] == 0 and stats["fallbacks"] == 0, stats
    if dynamic:
        assert stats["translations"] == 1, stats


@compiled_only
def test_size_argument_guarded_by_value():
    def g(x, shape):
        return x.reshape(shape) + 1.0

    c = st.compile(g, backend=BACKEND)
    x = st.arange(12.0)
    for shape in (st.Size([3, 4]), st.Size([3, 4]), st.Size([4, 3]), (4, 3)):
        r = c(x, shape)
        assert r.shape == tuple(shape)
        np.testing.assert_allclose(r.numpy(), (np.arange(12.0) + 1).reshape(tuple(shape)))
    stats = _C._fe_stats()
    # Size([3, 4]) twice: one translation; Size([4, 3]) another; a plain tuple (4, 3) is
    # another type, guarded apart
    assert stats["translations"] == 3 and stats["hits"] == 1, stats
