"""Memory formats (torch.memory_format): symtrace.contiguous_format,
channels_last, channels_last_3d and preserve_format, and the tensor side of
them: Tensor.contiguous(memory_format=...), Tensor.is_contiguous(memory_format=...)
and the memory_format argument of Tensor.to.

A channels-last tensor is an ordinary strided tensor whose channel dim is the
innermost (NHWC / NDHWC strides over an NCHW / NCDHW shape), made as torch
makes it: permute to channels-last order, make contiguous, permute back. Ops
compute the same values on it as on a contiguous one. Modules keep their
weights contiguous (Module.to(memory_format=...) accepts the argument and
leaves the layout, as nn.utils.convert_conv2d_weight_memory_format does)."""
from . import _C
from ._layout import _Named

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]


class memory_format(_Named):
    """A memory format (torch.memory_format); compared by identity."""
    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

_RANK = {"channels_last": 4, "channels_last_3d": 5}


def _check(fmt, fn):
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be symtrace.memory_format, "
                        f"not {type(fmt).__name__}")


def _channels_last_order(nd):
    """The dims of an [N, C, *S] tensor from the innermost out, channels-last."""
    return (1, *range(nd - 1, 1, -1), 0)


def is_contiguous(t, fmt):
    """Whether t is dense in fmt's dim order (size-1 dims ignored), as torch's."""
    _check(fmt, "is_contiguous")
    if fmt is contiguous_format or fmt is preserve_format:
        return _C.TensorBase.is_contiguous(t)
    if t.dim() != _RANK[fmt._name]:
        return False
    from ._tensor import _contiguous_in
    return _contiguous_in(tuple(t.shape), tuple(t.stride()), _channels_last_order(t.dim()))


def contiguous(t, fmt):
    """t in fmt: itself when it already is, else a copy with fmt's strides."""
    _check(fmt, "contiguous")
    if fmt is preserve_format:
        return t
    if fmt is contiguous_format:
        return _C.TensorBase.contiguous(t)
    rank = _RANK[fmt._name]
    if t.dim() != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    if is_contiguous(t, fmt):
        return t
    to_last = (0, *range(2, rank), 1)
    back = (0, rank - 1, *range(1, rank - 1))
    return t.permute(to_last).contiguous().permute(back)
