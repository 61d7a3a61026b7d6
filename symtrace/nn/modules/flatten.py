"""Flatten and Unflatten (torch.nn)."""
import math

from .module import Module


class Flatten(Module):
    """Flattens dims start_dim..end_dim into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim into unflattened_size (one entry may be -1)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(unflattened_size, (tuple, list)):
            for idx, elem in enumerate(unflattened_size):
                if not isinstance(elem, int):
                    raise TypeError("unflattened_size must be tuple of ints, but found element of type "
                                    f"{type(elem).__name__} at pos {idx}")
        else:
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        shape = tuple(input.shape)
        nd = len(shape)
        if not -nd <= self.dim < max(nd, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got "
                             f"{self.dim})")
        d = self.dim + nd if self.dim < 0 else self.dim
        sizes = tuple(self.unflattened_size)
        if not sizes:
            raise RuntimeError("unflatten: sizes must be non-empty")
        known = math.prod(s for s in sizes if s != -1)
        n = shape[d]
        if sizes.count(-1) > 1 or (-1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                               f"{self.dim} ({n}) in the input tensor")
        return input.reshape(shape[:d] + sizes + shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
