"""symtrace.backends.mps: Apple's Metal backend, which symtrace does not have."""

__all__ = ["is_available", "is_built"]


def is_built():
    """is_built() -> bool: False (symtrace has no MPS backend)."""
    return False


def is_available():
    """is_available() -> bool: False."""
    return False
