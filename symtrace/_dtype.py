"""dtypes: the _C.dtype objects under their PyTorch names and aliases."""
import builtins

from . import _C

float32 = _C.float32
float64 = _C.float64
float16 = _C.float16
bfloat16 = _C.bfloat16
uint8 = _C.uint8
int8 = _C.int8
int16 = _C.int16
int32 = _C.int32
int64 = _C.int64
bool_ = _C.bool
dtype = type(float32)

float = float32
double = float64
half = float16
short = int16
int = int32
long = int64


def _scalar_dtype(v):
    """dtype torch.full infers from a Python fill value."""
    if isinstance(v, bool):
        return bool_
    if isinstance(v, builtins.int):
        return int64
    return float32
