"""symtrace.nn.utils.memory_format: convert_conv2d_weight_memory_format and
convert_conv3d_weight_memory_format, as torch.nn.utils.memory_format.
symtrace has no channels_last layout: both return the module unchanged."""

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def convert_conv2d_weight_memory_format(module, memory_format):
    """module, unchanged: torch stores the weights of the Conv2d /
    ConvTranspose2d layers in memory_format; symtrace has one (contiguous)
    layout, which every memory format computes the same values with."""
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """module, unchanged: torch stores the weights of the Conv3d /
    ConvTranspose3d layers in memory_format; symtrace has one (contiguous)
    layout, which every memory format computes the same values with."""
    return module
