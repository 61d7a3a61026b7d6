"""symtrace.backends.openmp: symtrace's CPU kernels run on its own thread pool
(llvm_backend/pool.c), not OpenMP."""

__all__ = ["is_available"]


def is_available():
    """is_available() -> bool: False (symtrace is not built with OpenMP)."""
    return False
