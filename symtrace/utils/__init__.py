"""symtrace.utils: utilities in torch.utils' layout (symtrace.utils.data: datasets,
samplers and the DataLoader)."""
from . import data  # noqa: F401

__all__ = ["data"]
