"""_policy.py - autocast's op policy for ops written in Python (composites
over the runtime's ops, which runtime/autocast.c cannot see as one op):
a decorator that casts an op's floating arguments as torch's autocast
lists say, before the op's own checks run:
    lower    float32 / 16-bit operands to the autocast dtype (addmm, conv, prelu)
    fp32     16-bit operands to float32 (the losses, trace, reflect/replicate pad)
    promote  floating operands to the widest of them (index_copy)
    off      the op runs with autocast off on its device (dot, mv on the CPU: torch
             keeps them in their operands' dtypes)
float64 operands and tensors on another device type are never cast. The
casts are ordinary ops: taped for backward and recorded by st.compile."""
import functools

from .. import _C
from .._dtype import float32, float64, float16, bfloat16


def _is_tensor(v):
    return hasattr(v, "dtype") and hasattr(v, "device") and hasattr(v, "to")


def _tensors(args):
    for v in args:
        if _is_tensor(v):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


def _device_type(args):
    """'cuda' when a tensor argument is on CUDA, else 'cpu' (None without tensors)."""
    d = None
    for t in _tensors(args):
        d = str(t.device).split(":")[0]
        if d != "cpu":
            return d
    return d


def _eligible(v, dev):
    return (_is_tensor(v) and v.dtype.is_floating_point and v.dtype is not float64 and
            str(v.device).split(":")[0] == dev)


def _cast_all(v, dev, to):
    if _eligible(v, dev):
        return v if v.dtype is to else v.to(to)
    if isinstance(v, (list, tuple)) and any(_eligible(x, dev) for x in v):
        return type(v)(_cast_all(x, dev, to) for x in v)
    return v


def _widest(args, dev):
    """The widest dtype of the eligible tensors: float32 over 16-bit, and bfloat16 with float16
    gives float32 (as type promotion); None without any."""
    seen = {t.dtype for t in _tensors(args) if _eligible(t, dev)}
    if not seen:
        return None
    return seen.pop() if len(seen) == 1 else float32


def autocast_op(kind, devices=("cpu", "cuda")):
    """Decorator: fn runs under autocast's kind ('lower', 'fp32', 'promote', 'off') policy when
    autocast is on for its operands' device type (one of devices)."""
    def wrap(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not _C._get_autocast("cpu")[0] and not _C._get_autocast("cuda")[0]:
                return fn(*args, **kwargs)
            allargs = list(args) + list(kwargs.values())
            dev = _device_type(allargs)
            if dev not in devices:
                return fn(*args, **kwargs)
            on, low = _C._get_autocast(dev)
            if not on:
                return fn(*args, **kwargs)
            if kind == "off":
                prev = _C._set_autocast(dev, False, low)
                try:
                    return fn(*args, **kwargs)
                finally:
                    _C._set_autocast(dev, *prev)
            to = low if kind == "lower" else float32 if kind == "fp32" else _widest(allargs, dev)
            if to is None:
                return fn(*args, **kwargs)
            return fn(*[_cast_all(a, dev, to) for a in args],
                      **{k: _cast_all(v, dev, to) for k, v in kwargs.items()})
        return op
    return wrap
