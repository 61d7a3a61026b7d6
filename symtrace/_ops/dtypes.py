"""dtype queries: finfo and iinfo, is_floating_point, is_nonzero, can_cast (and the
_can_cast rule behind it), promote_types, and get/set_default_dtype (float32, fixed)."""
import builtins

from .. import _C
from .._dtype import bool_, float32
from ._core import _check_tensor


# ---- PyTorch's casting rule ----
def _can_cast(src, dst):
    """PyTorch's canCast: no float -> integral, no non-bool -> bool."""
    if src.is_floating_point and not dst.is_floating_point:
        return False
    return not (dst is bool_ and src is not bool_)


# ---- dtype queries ----
class finfo:
    """finfo(type=float32): the numerical properties of a floating dtype (bits, eps, max,
    min, tiny = smallest_normal, resolution, dtype), as torch.finfo."""
    _TABLE = {
        "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
        "bfloat16": (16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01),
        "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e+38, 1.1754943508222875e-38, 1e-06),
        "float64": (64, 2.220446049250313e-16, 1.7976931348623157e+308, 2.2250738585072014e-308, 1e-15),
    }

    def __init__(self, type=None):
        if type is None:
            type = float32
        name = str(type)[9:] if isinstance(type, _C.dtype) else None
        if name not in self._TABLE:
            raise TypeError("symtrace.finfo() requires a floating point input type. Use "
                            "symtrace.iinfo to handle 'symtrace.finfo'")
        self.bits, self.eps, self.max, self.tiny, self.resolution = self._TABLE[name]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """iinfo(type): the range of an integer dtype (bits, min, max, dtype), as torch.iinfo."""
    _TABLE = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}

    def __init__(self, type):
        if type is bool_:
            raise TypeError("symtrace.bool is not supported by symtrace.iinfo")
        name = str(type)[9:] if isinstance(type, _C.dtype) else None
        if name not in self._TABLE:
            raise TypeError("symtrace.iinfo() requires an integer input type. Use symtrace.finfo "
                            "to handle 'symtrace.iinfo'")
        self.bits = self._TABLE[name]
        if name == "uint8":
            self.min, self.max = 0, 255
        else:
            self.min, self.max = -2 ** (self.bits - 1), 2 ** (self.bits - 1) - 1
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"


def is_floating_point(input):
    """is_floating_point(input) -> bool: input's dtype is a floating one; as torch."""
    _check_tensor(input, "is_floating_point")
    return input.dtype.is_floating_point


def is_nonzero(input):
    """is_nonzero(input) -> bool: the single element of input is nonzero (a value read);
    as torch.is_nonzero."""
    _check_tensor(input, "is_nonzero")
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item() != 0)


def _check_dtype(v, fn, name, pos):
    if not isinstance(v, _C.dtype):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be torch.dtype, not "
                        f"{type(v).__name__}")


def can_cast(from_, to):
    """can_cast(from_, to) -> bool: PyTorch's casting rule (no float to integer, nothing but
    bool to bool); as torch.can_cast."""
    _check_dtype(from_, "can_cast", "from_", 1)
    _check_dtype(to, "can_cast", "to", 2)
    return _can_cast(from_, to)


def promote_types(type1, type2):
    """promote_types(type1, type2) -> dtype: the smallest dtype both promote to; as
    torch.promote_types."""
    _check_dtype(type1, "promote_types", "type1", 1)
    _check_dtype(type2, "promote_types", "type2", 2)
    return _C.result_type(_C.empty((0,), type1), _C.empty((0,), type2))


def get_default_dtype():
    """get_default_dtype() -> symtrace.float32 (the dtype of float factories and of float
    results from integer inputs)."""
    return float32


def set_default_dtype(d):
    """set_default_dtype(d): only float32, the default already, is accepted: symtrace's C
    factories and type promotion fix float32 as the default float dtype."""
    _check_dtype(d, "set_default_dtype", "d", 1)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if d is not float32:
        raise NotImplementedError(f"set_default_dtype({d}): symtrace's default float dtype is fixed "
                                  "at float32")
