"""symtrace.utils: utilities in torch.utils' layout (symtrace.utils.data: datasets,
samplers and the DataLoader; symtrace.utils.checkpoint: activation checkpointing)."""
from . import data  # noqa: F401
from . import checkpoint  # noqa: F401

__all__ = ["data", "checkpoint"]
