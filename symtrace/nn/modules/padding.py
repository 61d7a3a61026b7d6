"""Padding layers (torch.nn): ConstantPad1d/2d/3d, ZeroPad1d/2d/3d, ReflectionPad1d/2d/3d,
ReplicationPad1d/2d/3d, CircularPad1d/2d/3d over F.pad. padding is an int (every side) or
a sequence (left, right[, top, bottom[, front, back]]) kept as a tuple, as torch's
_pair/_quadruple/_ntuple(6); F.pad checks its length and the input's dims (the circular
layers first check theirs, as torch's)."""
from .. import functional as F
from .module import Module


def _ntuple(padding, n):
    """torch's _ntuple(n): a sequence as a tuple (its length unchecked), else padding n times."""
    return tuple(padding) if isinstance(padding, (list, tuple)) else (padding,) * n


class _CircularPadNd(Module):
    def _check_input_dim(self, input):
        raise NotImplementedError

    def forward(self, input):
        self._check_input_dim(input)
        return F.pad(input, self.padding, "circular")

    def extra_repr(self):
        return f"{self.padding}"


def _check_dims(input, lo):
    if input.dim() != lo and input.dim() != lo + 1:
        raise ValueError(f"expected {lo}D or {lo + 1}D input (got {input.dim()}D input)")


class CircularPad1d(_CircularPadNd):
    """Pads the last dim of [N, C, L] (or [C, L]) with the input's other end (wrap around)."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2)

    def _check_input_dim(self, input):
        _check_dims(input, 2)


class CircularPad2d(_CircularPadNd):
    """Pads the last 2 dims of [N, C, H, W] (or [C, H, W]) circularly."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 4)

    def _check_input_dim(self, input):
        _check_dims(input, 3)


class CircularPad3d(_CircularPadNd):
    """Pads the last 3 dims of [N, C, D, H, W] (or [C, D, H, W]) circularly."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 6)

    def _check_input_dim(self, input):
        _check_dims(input, 4)


class _ConstantPadNd(Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with value."""

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _ntuple(padding, 2)


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with value."""

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _ntuple(padding, 4)


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with value."""

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _ntuple(padding, 6)


class _ReflectionPadNd(Module):
    def forward(self, input):
        return F.pad(input, self.padding, "reflect")

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ReflectionPadNd):
    """Pads the last dim of [N, C, L] (or [C, L]) with its reflection (edge not repeated)."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2)


class ReflectionPad2d(_ReflectionPadNd):
    """Pads the last 2 dims of [N, C, H, W] (or [C, H, W]) with their reflection."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 4)


class ReflectionPad3d(_ReflectionPadNd):
    """Pads the last 3 dims of [N, C, D, H, W] (or [C, D, H, W]) with their reflection."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 6)


class _ReplicationPadNd(Module):
    def forward(self, input):
        return F.pad(input, self.padding, "replicate")

    def extra_repr(self):
        return f"{self.padding}"


class ReplicationPad1d(_ReplicationPadNd):
    """Pads the last dim of [N, C, L] (or [C, L]) by repeating its edge values."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2)


class ReplicationPad2d(_ReplicationPadNd):
    """Pads the last 2 dims of [N, C, H, W] (or [C, H, W]) by repeating their edges."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 4)


class ReplicationPad3d(_ReplicationPadNd):
    """Pads the last 3 dims of [N, C, D, H, W] (or [C, D, H, W]) by repeating their edges."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 6)


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"
