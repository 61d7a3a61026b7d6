"""symtrace.amp: automatic mixed precision, as torch.amp.

    with symtrace.autocast("cuda", dtype=symtrace.bfloat16):
        loss = model(x)          # products in bfloat16, the rest by its policy
    loss.backward()              # backward outside the region, as PyTorch advises

float16 training also wants GradScaler (grad_scaler.py): bfloat16 does not.

See autocast_mode.py for the op lists."""
from .autocast_mode import (autocast, is_autocast_enabled, get_autocast_dtype,  # noqa: F401
                            custom_fwd, custom_bwd)
from .grad_scaler import GradScaler  # noqa: F401
