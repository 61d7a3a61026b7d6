# Shared helpers for the symtrace Python test suite: dtype tables, random input
# factories (contiguous and non-contiguous), and comparison of a symtrace tensor
# with a float64 numpy reference or with a torch tensor (torch is the reference
# and peer; tests that need it ask for the `torch` fixture, which skips without it).
import math
import os
import sys
from collections import namedtuple

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import symtrace as st  # noqa: E402

try:  # torch is optional: a venv without it runs the numpy-only tests
    import torch as _torch
except ImportError:  # pragma: no cover
    _torch = None

ALL_DTYPES = ["float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64",
              "bool"]
FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]
INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]
LAYOUTS = ["contig", "transposed", "strided", "expanded"]
ERRORS = (ValueError, TypeError, IndexError, RuntimeError, NotImplementedError, OverflowError)

# relative tolerance per dtype (also used as the default absolute tolerance floor)
RTOL = {"float64": 1e-10, "float32": 1e-5, "float16": 1e-2, "bfloat16": 2e-2}
ATOL = {"float64": 1e-10, "float32": 1e-5, "float16": 1e-2, "bfloat16": 2e-2}

NP_DTYPE = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
            "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
            "int32": np.int32, "int64": np.int64, "bool": np.bool_}


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def sd(name):
    """symtrace dtype object for a dtype name."""
    return getattr(st, name)


def td(name):
    return getattr(_torch, name)


def dtype_name(dt):
    """Name of a symtrace or torch dtype ('float32', ...)."""
    if _torch is not None and isinstance(dt, _torch.dtype):
        return str(dt).split(".")[-1]
    for n in ALL_DTYPES:
        if getattr(st, n, None) is not None and dt == getattr(st, n):
            return n
    raise AssertionError("unknown dtype %r" % (dt,))


def is_float(name):
    return name in FLOAT_DTYPES


def promote(a, b):
    """torch's result dtype for two tensors of the same 'dimension class'."""
    order = ALL_DTYPES
    if a == b:
        return a
    cat = lambda n: 2 if is_float(n) else (1 if n in INT_DTYPES else 0)
    if cat(a) != cat(b):
        return a if cat(a) > cat(b) else b
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    if {a, b} == {"uint8", "int8"}:
        return "int16"
    size = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "uint8": 1, "int8": 1,
            "int16": 2, "int32": 4, "int64": 8}
    return a if size[a] >= size[b] else b


def promote_scalar(t, s):
    """torch's result dtype of (tensor dtype t) op (python scalar s)."""
    if isinstance(s, bool):
        return t
    if isinstance(s, int):
        return "int64" if t == "bool" else t
    if isinstance(s, float):
        return t if is_float(t) else "float32"
    raise TypeError(s)


def round_bf16(a):
    """Round float values to the nearest bfloat16 (ties to even), as float32."""
    a = np.array(a, dtype=np.float32, order="C")
    b = a.view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return (b & 0xFFFFFFFF).astype(np.uint32).view(np.float32).reshape(a.shape)


def exact_in(a, name):
    """Values of `a` made exactly representable in dtype `name` (float64 array)."""
    a = np.asarray(a, dtype=np.float64)
    if name == "bfloat16":
        return round_bf16(a).astype(np.float64)
    if name in ("float16", "float32"):
        return a.astype(NP_DTYPE[name]).astype(np.float64)
    return a


def rng_for(*key):
    """A numpy Generator seeded deterministically from the key."""
    h = 0
    for k in key:
        for ch in repr(k):
            h = (h * 131 + ord(ch)) % (2 ** 32)
    return np.random.default_rng(h)


def random_array(shape, name, rng, low=-2.0, high=2.0):
    """Random values (float64 / int64 / bool numpy) exactly representable in `name`."""
    shape = tuple(shape)
    if name == "bool":
        return rng.random(shape) < 0.5
    if name in INT_DTYPES:
        lo = max(int(math.floor(low)), 0) if name == "uint8" else int(math.floor(low))
        return rng.integers(lo, max(int(math.floor(high)), lo) + 1, size=shape).astype(np.int64)
    return exact_in(rng.uniform(low, high, size=shape), name)


def st_from_np(a, name):
    """A contiguous symtrace tensor of dtype `name` holding a's values."""
    a = np.asarray(a)
    if name == "bfloat16":
        return st.tensor(np.array(a, dtype=np.float32, order="C"), dtype=st.bfloat16)
    return st.tensor(np.array(a, dtype=NP_DTYPE[name], order="C"))


def th_from_np(a, name):
    if _torch is None:
        return None
    a = np.asarray(a)
    if name == "bfloat16":
        return _torch.from_numpy(np.array(a, dtype=np.float32, order="C")).to(_torch.bfloat16)
    return _torch.from_numpy(np.array(a, dtype=NP_DTYPE[name], order="C").copy())


Trio = namedtuple("Trio", "st np th dtype")


def _layout_base(shape, layout):
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        return shape[::-1]
    if layout == "strided" and len(shape) >= 1:
        return shape[:-1] + (2 * shape[-1] + 1,)
    if layout == "expanded" and len(shape) >= 1:
        return (1,) + shape[1:]
    return shape


def _apply_layout(t, shape, layout, numpy=False):
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        perm = tuple(range(len(shape)))[::-1]
        return t.transpose(perm) if numpy else t.permute(*perm)
    if layout == "strided" and len(shape) >= 1:
        return t[..., 1::2]
    if layout == "expanded" and len(shape) >= 1:
        if numpy:
            return np.broadcast_to(t, shape)
        return t.expand(*shape)
    return t


def make(shape, dtype="float32", layout="contig", rng=None, low=-2.0, high=2.0, values=None):
    """Random input as a Trio: the symtrace tensor (a view when layout is not
    'contig'), the same values as numpy (float64 for floats, int64 for ints, bool),
    and a torch tensor with the same layout (None without torch)."""
    shape = tuple(shape)
    if rng is None:
        rng = rng_for(shape, dtype, layout, low, high)
    base_shape = _layout_base(shape, layout)
    if values is not None:
        base = np.asarray(values)
        assert layout == "contig"
        base = exact_in(base, dtype) if is_float(dtype) else base
    else:
        base = random_array(base_shape, dtype, rng, low, high)
    s = _apply_layout(st_from_np(base, dtype), shape, layout)
    n = np.array(_apply_layout(base, shape, layout, numpy=True))
    th = th_from_np(base, dtype)
    if th is not None:
        th = _apply_layout(th, shape, layout)
    assert tuple(s.shape) == shape, (tuple(s.shape), shape, layout)
    return Trio(s, n, th, dtype)


def to_numpy(t):
    """Values of a symtrace tensor as numpy (float64 for bfloat16)."""
    assert isinstance(t, st.Tensor), type(t)
    name = dtype_name(t.dtype)
    if name == "bfloat16":
        return np.asarray(t.float().numpy(), dtype=np.float64)
    return np.array(t.numpy())


def th_to_numpy(t):
    t = t.detach()
    if t.is_floating_point():
        return t.to(_torch.float64).numpy()
    return t.numpy()


def tol_for(name, rtol=None, atol=None):
    r = RTOL.get(name, 0.0) if rtol is None else rtol
    a = ATOL.get(name, 0.0) if atol is None else atol
    return r, a


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, msg=""):
    """Compare symtrace tensor `actual` with `expected`: a torch tensor (its shape,
    dtype and values) or a numpy array / number (shape, values; dtype=name checks
    the dtype). Tolerance follows actual's dtype unless rtol/atol are given."""
    assert isinstance(actual, st.Tensor), "expected a symtrace.Tensor, got %r %s" % (type(actual), msg)
    a_name = dtype_name(actual.dtype)
    if _torch is not None and isinstance(expected, _torch.Tensor):
        e_name = dtype_name(expected.dtype)
        exp = th_to_numpy(expected)
    else:
        exp = np.asarray(expected)
        e_name = dtype
        if e_name in INT_DTYPES and exp.dtype.kind in "iuf":
            # integer results wrap as C casts do (uint8: 1 - 3 == 254): numpy refs in int64
            exp = exp.astype(np.int64).astype(NP_DTYPE[e_name])
    assert tuple(actual.shape) == tuple(exp.shape), \
        "shape %s != expected %s %s" % (tuple(actual.shape), tuple(exp.shape), msg)
    if e_name is not None:
        assert a_name == e_name, "dtype %s != expected %s %s" % (a_name, e_name, msg)
    got = to_numpy(actual)
    assert got.shape == exp.shape
    if is_float(a_name):
        r, a = tol_for(a_name, rtol, atol)
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64),
                                   rtol=r, atol=a, equal_nan=True, err_msg=msg)
    else:
        np.testing.assert_array_equal(got, exp, err_msg=msg)


def check_torch(st_fn, th_fn, *trios, rtol=None, atol=None, msg=""):
    """Run th_fn on the torch side of the trios and st_fn on the symtrace side;
    if torch raises, symtrace must raise one of the documented exception types;
    otherwise compare results (tensors, or tuples/lists of tensors)."""
    pytest.importorskip("torch")
    try:
        exp = th_fn(*[t.th if isinstance(t, Trio) else t for t in trios])
    except Exception as e:  # torch rejects: so must we
        with pytest.raises(ERRORS):
            st_fn(*[t.st if isinstance(t, Trio) else t for t in trios])
        return type(e)
    got = st_fn(*[t.st if isinstance(t, Trio) else t for t in trios])
    compare_tree(got, exp, rtol=rtol, atol=atol, msg=msg)
    return None


def compare_tree(got, exp, rtol=None, atol=None, msg=""):
    if isinstance(exp, (tuple, list)):
        assert len(got) == len(exp), (len(got), len(exp), msg)
        for g, e in zip(got, exp):
            compare_tree(g, e, rtol=rtol, atol=atol, msg=msg)
    else:
        assert_close(got, exp, rtol=rtol, atol=atol, msg=msg)


def names_shape(msg, shape):
    """True if the error message names `shape` in a usual spelling."""
    dims = [str(d) for d in shape]
    forms = ["[" + ", ".join(dims) + "]", "(" + ", ".join(dims) + ")",
             "[" + ",".join(dims) + "]", "(" + ",".join(dims) + ")",
             "x".join(dims), " x ".join(dims)]
    if len(shape) == 1:
        forms += ["(" + dims[0] + ",)"]
    return any(f in msg for f in forms)
