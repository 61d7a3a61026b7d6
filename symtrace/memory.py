"""Caching allocator statistics (as torch.cuda.memory_* for each device)."""
from . import _C


def stats(device="cpu"):
    """Allocator statistics: allocated/reserved/peak bytes, allocation counts, cache hits."""
    return _C.memory_stats(str(device))


def memory_allocated(device="cpu"):
    return stats(device)["allocated_bytes"]


def max_memory_allocated(device="cpu"):
    return stats(device)["peak_allocated_bytes"]


def memory_reserved(device="cpu"):
    return stats(device)["reserved_bytes"]


def max_memory_reserved(device="cpu"):
    return stats(device)["peak_reserved_bytes"]


def empty_cache(device="cpu"):
    """Returns every fully free cached segment to the system."""
    _C.empty_cache(str(device))


def reset_peak_stats(device="cpu"):
    _C.reset_peak_stats(str(device))


def _check(device="cpu"):
    """Raises if the allocator's invariants are broken (for tests)."""
    _C._alloc_check(str(device))
