"""Test data and helpers shared by tests: tensors of every dtype with special
values and their raw bytes for bit-exact comparison (serialization, pickling);
results as numpy arrays and fixed gradient weights (sorting, torch aliases)."""
import ctypes

import numpy as np

import symtrace as st


def raw(t):
    """The bytes of t's elements in row-major order (bit-exact comparison, NaN included)."""
    c = t.detach().contiguous()
    n = c.numel() * c.element_size()
    return ctypes.string_at(c.data_ptr(), n) if n else b""


def make(dtype, shape, seed=0, int_high=2 ** 30):
    """A tensor of dtype (a name) and shape: random values, integers in
    [-int_high, int_high), floats with inf, -inf and nan among the first
    elements when there are at least 4."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        a = rng.random(n) > 0.5
    elif dtype.startswith("int"):
        a = rng.integers(-int_high, int_high, n)
    else:
        a = rng.standard_normal(n) * 100
        if n >= 4:
            a[:3] = [np.inf, -np.inf, np.nan]
    return st.tensor(a.reshape(shape).astype(np.float64 if dtype in ("float16", "bfloat16") else a.dtype),
                     dtype=getattr(st, dtype))


def as_list(out):
    """A result (a tensor or a tuple/list of them) as a list."""
    return list(out) if isinstance(out, (tuple, list)) else [out]


def to_numpy(t):
    """A detached tensor of symtrace or torch as a numpy array (16-bit floats as float32)."""
    t = t.detach()
    if str(t.dtype).split(".")[-1] in ("float16", "bfloat16"):
        t = t.float()
    return np.array(t.numpy())


def cycle_weights(shape):
    """Weights 1..5 repeating, of shape: a weighted sum's gradient tells positions apart."""
    n = int(np.prod(shape)) if len(shape) else 1
    return (np.arange(n) % 5 + 1.0).reshape(shape)


def run_code(lib, code):
    """Runs code (a string) with t = lib (symtrace or torch); its variable out, or
    ("error", exception type name) when it raises: one case of a table run on both."""
    ns = {"t": lib}
    try:
        exec(code, ns)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return ("error", type(e).__name__)
    return ns.get("out")


def raises_as_torch(case, torch, loose=False):
    """case(lib) raises with symtrace as with torch: the same exception type and first
    line of the message (loose: any non-empty message, where symtrace's names the
    argument and torch's lists its overloads)."""
    import pytest
    with pytest.raises(Exception) as te:
        case(torch)
    with pytest.raises(Exception) as se:
        case(st)
    assert type(se.value) is type(te.value), f"{type(se.value).__name__}: {se.value}"
    smsg, tmsg = str(se.value).split("\n")[0], str(te.value).split("\n")[0]
    assert smsg == tmsg or (loose and smsg), (smsg, tmsg)
