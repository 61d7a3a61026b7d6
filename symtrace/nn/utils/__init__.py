"""symtrace.nn.utils, as torch.nn.utils: gradient clipping (clip_grad),
parameters_to_vector / vector_to_parameters (convert_parameters), the
hook-based weight_norm / spectral_norm and their removal, BatchNorm folding
(fusion), skip_init (init), the memory-format helpers (memory_format), and
the submodules parametrize, parametrizations, stateless (functional_call),
prune (pruning by masks) and rnn (packed and padded sequences)."""
from . import parametrizations, parametrize, prune, rnn, stateless  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,  # noqa: F401
                        clip_grads_with_norm_, get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401
from .init import skip_init  # noqa: F401
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grads_with_norm_", "clip_grad_value_",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "get_total_norm",
           "parameters_to_vector", "parametrizations", "parametrize", "remove_spectral_norm",
           "remove_weight_norm", "rnn", "skip_init", "spectral_norm", "stateless", "vector_to_parameters",
           "weight_norm"]
