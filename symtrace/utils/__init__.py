"""symtrace.utils: utilities in torch.utils' layout (symtrace.utils.data: datasets,
samplers and the DataLoader; symtrace.utils.checkpoint: activation checkpointing;
symtrace.utils.hooks: RemovableHandle; symtrace.utils.safetensors: the safetensors file
format, with the safetensors package's API)."""
from . import data  # noqa: F401
from . import checkpoint  # noqa: F401
from . import hooks  # noqa: F401
from . import safetensors  # noqa: F401

__all__ = ["data", "checkpoint", "hooks", "safetensors"]
