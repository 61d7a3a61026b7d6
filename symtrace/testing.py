"""symtrace.testing, as torch.testing: assert_close (torch's comparison of possibly nested
sequences and mappings of tensors, numbers, bools and None, with torch's default tolerances
per dtype and its error messages), make_tensor (random tensors of a dtype in [low, high),
optionally noncontiguous or without zeros) and the deprecated assert_allclose. Written in
Python over symtrace tensors; the values are read on the host (this is test code, not
traced)."""
import collections.abc
import contextlib
import functools
import math
import warnings

import numpy as np

from . import _C
from ._dtype import bfloat16, bool_, float16, float32, float64, int32, int64

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

# {dtype: (rtol, atol)}, as torch's _DTYPE_PRECISIONS; other dtypes compare exactly
_DTYPE_PRECISIONS = {float16: (0.001, 1e-5), bfloat16: (0.016, 1e-5), float32: (1.3e-6, 1e-5),
                     float64: (1e-7, 1e-7)}


class _ErrorMeta(Exception):
    """A failure found while comparing: the exception type, its message and the item id."""

    def __init__(self, type, msg, *, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {''.join(str([i]) for i in self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """A pair type cannot take these inputs: the next one is tried."""


def _default_tolerances(*dtypes, dtype_precisions=None):
    table = dtype_precisions or _DTYPE_PRECISIONS
    rtols, atols = zip(*[table.get(dt, (0.0, 0.0)) for dt in dtypes])
    return max(rtols), max(atols)


def _get_tolerances(*dtypes, rtol, atol, id=()):
    if (rtol is None) ^ (atol is None):
        raise _ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                     f"but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _mismatch_msg(*, default_identifier, identifier=None, extra=None, abs_diff, abs_diff_idx=None,
                  atol, rel_diff, rel_diff_idx=None, rtol):
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        msg = (f"{kind.title()} difference: {diff}" if idx is None
               else f"Greatest {kind} difference: {diff} at index {idx}")
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    if identifier is None:
        identifier = default_identifier
    elif callable(identifier):
        identifier = identifier(default_identifier)
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_diff_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_diff_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, *, rtol, atol, identifier=None):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(default_identifier="Scalars", identifier=identifier,
                         extra=f"Expected {expected} but got {actual}.", abs_diff=abs_diff,
                         atol=atol, rel_diff=rel_diff, rtol=rtol)


def _tensor_mismatch_msg(actual, expected, matches, *, rtol, atol, identifier=None):
    """torch's message: the mismatch count, then the greatest absolute and relative differences
    among the mismatches (computed in the compared dtype; integers in int64) and where."""
    from . import _ops
    shape = tuple(matches.shape)

    def unravel(flat):
        out = []
        for size in shape[::-1]:
            flat, mod = divmod(flat, size)
            out.append(mod)
        return tuple(out[::-1])

    n = matches.numel()
    m = np.asarray(matches.reshape(-1).numpy(), dtype=bool)
    total = n - int(m.sum())
    extra = f"Mismatched elements: {total} / {n} ({total / n:.1%})"
    a, e = actual.reshape(-1), expected.reshape(-1)
    if not actual.dtype.is_floating_point:
        a, e = a.to(int64), e.to(int64)
    abs_diff = _ops.abs(_ops.sub(a, e))
    rel_diff = _ops.div(abs_diff, _ops.abs(e))

    def greatest(t):
        vals = t.tolist()
        host = np.asarray(t.to(float64).numpy() if t.dtype.is_floating_point else vals,
                          dtype=np.float64)
        host = np.where(m, 0.0, host)
        i = int(np.argmax(host))          # the first NaN, else the first largest, as torch.max
        v = vals[i] if not m[i] else type(vals[i])(0)
        return v, unravel(i)

    ad, ai = greatest(abs_diff)
    rd, ri = greatest(rel_diff)
    return _mismatch_msg(default_identifier="Tensor-likes", identifier=identifier, extra=extra,
                         abs_diff=ad, abs_diff_idx=ai, atol=atol, rel_diff=rd, rel_diff_idx=ri,
                         rtol=rtol)


# ---- pairs: each takes its kind of inputs (or raises _Unsupported) and compares them ----
class _Pair:
    def __init__(self, actual, expected, *, id=(), **unknown):
        self.actual, self.expected, self.id = actual, expected, id

    def _fail(self, type, msg):
        raise _ErrorMeta(type, msg, id=self.id)


class _NonePair(_Pair):
    def __init__(self, actual, expected, **options):
        if not (actual is None or expected is None):
            raise _Unsupported
        super().__init__(actual, expected, **options)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            self._fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class _BooleanPair(_Pair):
    def __init__(self, actual, expected, *, id, **options):
        if not all(isinstance(v, (bool, np.bool_)) for v in (actual, expected)):
            raise _Unsupported
        actual, expected = (v if isinstance(v, bool) else v.item() for v in (actual, expected))
        super().__init__(actual, expected, id=id, **options)

    def compare(self):
        if self.actual is not self.expected:
            self._fail(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


class _NumberPair(_Pair):
    _TYPE_TO_DTYPE = {int: int64, float: float64}

    def __init__(self, actual, expected, *, id=(), rtol=None, atol=None, equal_nan=False,
                 check_dtype=False, **options):
        if not all(isinstance(v, (int, float, complex, np.number)) and not isinstance(v, bool)
                   for v in (actual, expected)):
            raise _Unsupported
        actual, expected = (v.item() if isinstance(v, np.number) else v for v in (actual, expected))
        super().__init__(actual, expected, id=id, **options)
        dts = [self._TYPE_TO_DTYPE.get(type(v), float64) for v in (actual, expected)]
        self.rtol, self.atol = _get_tolerances(*dts, rtol=rtol, atol=atol, id=id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        if self.check_dtype and type(self.actual) is not type(self.expected):
            self._fail(AssertionError, f"The (d)types do not match: {type(self.actual)} != "
                                       f"{type(self.expected)}.")
        if self.actual == self.expected:
            return
        if self.equal_nan and _isnan(self.actual) and _isnan(self.expected):
            return
        abs_diff = abs(self.actual - self.expected)
        if _isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(self.expected):
            return
        self._fail(AssertionError, _scalar_mismatch_msg(self.actual, self.expected,
                                                        rtol=self.rtol, atol=self.atol))


def _isnan(v):
    return v != v


def _isfinite(v):
    return not (_isnan(v) or v in (math.inf, -math.inf))


class _TensorLikePair(_Pair):
    def __init__(self, actual, expected, *, id=(), allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, **options):
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not allow_subclasses and type(actual) is not type(expected)):
            raise _Unsupported
        actual, expected = self._to_tensor(actual), self._to_tensor(expected)
        super().__init__(actual, expected, id=id, **options)
        self.rtol, self.atol = _get_tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol,
                                               id=self.id)
        self.equal_nan, self.check_device, self.check_dtype = equal_nan, check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    @staticmethod
    def _to_tensor(v):
        if isinstance(v, _C.TensorBase):
            return v
        try:
            from . import as_tensor
            return as_tensor(v)
        except Exception:
            raise _Unsupported from None

    def compare(self):
        a, e = self.actual, self.expected

        def mismatch(name, av, ev):
            self._fail(AssertionError,
                       f"The values for attribute '{name}' do not match: {av} != {ev}.")

        if a.shape != e.shape:
            mismatch("shape", a.shape, e.shape)
        if self.check_stride and a.stride() != e.stride():     # all symtrace tensors are strided
            mismatch("stride()", a.stride(), e.stride())
        if self.check_device and str(a.device) != str(e.device):
            mismatch("device", a.device, e.device)
        if self.check_dtype and a.dtype != e.dtype:
            mismatch("dtype", a.dtype, e.dtype)
        a, e = a.detach(), e.detach()
        if str(a.device) != str(e.device):
            a, e = a.cpu(), e.cpu()
        if a.dtype != e.dtype:
            from ._ops import promote_types
            dt = promote_types(a.dtype, e.dtype)
            a, e = a.to(dt), e.to(dt)
        self._compare_values(a, e)

    def _compare_values(self, a, e):
        from ._ops import isclose
        matches = isclose(a, e, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan)
        if bool(matches.all().item()):
            return
        if a.dim() == 0:
            msg = _scalar_mismatch_msg(a.item(), e.item(), rtol=self.rtol, atol=self.atol)
        else:
            msg = _tensor_mismatch_msg(a, e, matches, rtol=self.rtol, atol=self.atol)
        self._fail(AssertionError, msg)


_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _originate_pairs(actual, expected, *, id=(), **options):
    """The pairs to compare, recursing through sequences (not strings) and mappings."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and not isinstance(actual, str) and \
            isinstance(expected, seq) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _ErrorMeta(AssertionError, f"The length of the sequences mismatch: {len(actual)} "
                                             f"!= {len(expected)}", id=id)
        pairs = []
        for i in range(len(actual)):
            pairs.extend(_originate_pairs(actual[i], expected[i], id=(*id, i), **options))
        return pairs
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        ak, ek = set(actual.keys()), set(expected.keys())
        if ak != ek:
            raise _ErrorMeta(AssertionError,
                             f"The keys of the mappings do not match:\n"
                             f"Missing keys in the actual mapping: {sorted(ek - ak)}\n"
                             f"Additional keys in the actual mapping: {sorted(ak - ek)}", id=id)
        keys = ak
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        pairs = []
        for k in keys:
            pairs.extend(_originate_pairs(actual[k], expected[k], id=(*id, k), **options))
        return pairs
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except _Unsupported:
            continue
    raise _ErrorMeta(TypeError, f"No comparison pair was able to handle inputs of type "
                                f"{_type_name(actual)} and {_type_name(expected)}.", id=id)


def _type_name(v):
    """repr(type(v)), the tensor class under its public name (as torch prints torch.Tensor)."""
    from ._tensor import Tensor
    return "<class 'symtrace.Tensor'>" if type(v) is Tensor else str(type(v))


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False,
                 msg=None):
    """assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
    equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
    check_stride=False, msg=None): asserts that actual and expected are close, as
    torch.testing.assert_close: tensors (|actual - expected| <= atol + rtol * |expected|
    elementwise, same shape, and device/dtype/stride as checked; default tolerances by
    dtype: float16 1e-3/1e-5, bfloat16 1.6e-2/1e-5, float32 1.3e-6/1e-5, float64 1e-7/1e-7,
    others exact), Python numbers, bools and None, recursing through sequences and mappings.
    Raises AssertionError with torch's message (msg replaces it, or maps it when callable)."""
    __tracebackhide__ = True
    try:
        pairs = _originate_pairs(actual, expected, allow_subclasses=allow_subclasses, rtol=rtol,
                                 atol=atol, equal_nan=equal_nan, check_device=check_device,
                                 check_dtype=check_dtype, check_layout=check_layout,
                                 check_stride=check_stride)
    except _ErrorMeta as meta:
        raise meta.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _ErrorMeta as meta:
            raise meta.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=''): the
    deprecated form of assert_close (a FutureWarning, as torch's): non-tensors are converted
    (expected to actual's dtype), dtypes are not checked, NaNs are equal, and the default
    tolerances are float16 1e-3/1e-3, float32 1e-4/1e-5, float64 1e-5/1e-8."""
    warnings.warn("`symtrace.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `symtrace.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    from . import tensor
    if not isinstance(actual, _C.TensorBase):
        actual = tensor(actual)
    if not isinstance(expected, _C.TensorBase):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype, dtype_precisions={
            float16: (1e-3, 1e-3), float32: (1e-4, 1e-5), float64: (1e-5, 1e-8)})
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


# ---- make_tensor ----
_INTEGRAL = (_C.uint8, _C.int8, _C.int16, int32, int64)
_FLOATING = (float16, bfloat16, float32, float64)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
    noncontiguous=False, exclude_zero=False, memory_format=None) -> Tensor: values drawn
    uniformly from [low, high) (defaults: bool [0, 2), integers [-9, 10), floats [-9, 9);
    bounds clamped to the dtype's range, integers' ceiled), as torch.testing.make_tensor.
    noncontiguous: a view of every other element of a twice as long last dim (when the tensor
    has more than one element); exclude_zero: zeros become 1 (bool, integers) or the dtype's
    smallest normal value."""
    from . import _ops

    def modify_low_high(low, high, *, lowest_inclusive, highest_exclusive, default_low,
                        default_high):
        low = default_low if low is None else low
        high = default_high if high is None else high
        if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
        elif low == high and dtype in _FLOATING:
            warnings.warn("Passing `low==high` to `symtrace.testing.make_tensor` for floating or "
                          "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                          "`symtrace.full(...)` instead.", FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest_inclusive or low >= highest_exclusive:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                             f"but {dtype} only supports [{lowest_inclusive}, {highest_exclusive})")
        low = min(max(low, lowest_inclusive), highest_exclusive)
        high = min(max(high, lowest_inclusive), highest_exclusive)
        if dtype is bool_ or dtype in _INTEGRAL:
            return math.ceil(low), math.ceil(high)
        return low, high

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and (dtype is bool_ or dtype in _INTEGRAL):
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, "
                         f"but got dtype={dtype}")
    noncontiguous = noncontiguous and functools.reduce(lambda x, y: x * y, shape, 1) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is bool_:
        low, high = modify_low_high(low, high, lowest_inclusive=0, highest_exclusive=2,
                                    default_low=0, default_high=2)
        result = _ops.randint(low, high, shape, dtype=int64, device=device).to(bool_)
    elif dtype in _INTEGRAL:
        info = _ops.iinfo(dtype)
        low, high = modify_low_high(low, high, lowest_inclusive=info.min,
                                    highest_exclusive=info.max + (1 if dtype is not int64 else 0),
                                    default_low=-9, default_high=10)
        result = _ops.randint(low, high, shape, dtype=dtype, device=device)
    elif dtype in _FLOATING:
        fmax = _ops.finfo(dtype).max
        low, high = modify_low_high(low, high, lowest_inclusive=-fmax, highest_exclusive=fmax,
                                    default_low=-9, default_high=9)
        result = _uniform(shape, low, high, dtype, device, _ops)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "symtrace.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if (dtype is bool_ or dtype in _INTEGRAL) else _ops.finfo(dtype).tiny
    if dtype in _FLOATING:
        result.requires_grad_(requires_grad)
    return result


def _uniform(shape, low, high, dtype, device, _ops):
    """Uniform values in [low, high) of dtype: drawn in float64 (halved when high - low would
    overflow, as torch's), rounded to dtype, a value rounded up to high moved just below it."""
    u = _ops.rand(shape, dtype=float64, device=device)
    if high - low >= _ops.finfo(float64).max:
        r = _ops.mul(_ops.add(_ops.mul(u, high / 2 - low / 2), low / 2), 2.0)
    else:
        r = _ops.add(_ops.mul(u, high - low), low)
    r = r.to(dtype)
    if low < high:
        top = _ops.full((), high, dtype=dtype, device=device)
        below = _ops.nextafter(top, _ops.full((), -math.inf, dtype=dtype, device=device))
        r = _ops.where(_ops.ge(r, top), below, r)
    return r

