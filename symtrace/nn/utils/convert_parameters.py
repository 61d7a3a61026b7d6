"""symtrace.nn.utils.convert_parameters: parameters_to_vector and
vector_to_parameters, as torch.nn.utils.convert_parameters."""
from ... import _C, _ops
from ..parameter import _no_grad

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param, old_param_device):
    dev = param._device_str
    if old_param_device is None:
        return dev
    if dev != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one vector."""
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.view(-1))
    return _ops.cat(vec)


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of vec into the parameters (under no_grad).
    torch rebinds param.data to views of vec (the parameters then share its
    storage); here the values are copied: the parameters keep their own
    storage and do not alias vec."""
    if not isinstance(vec, _C.TensorBase):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    param_device = None
    pointer = 0
    with _no_grad():
        for param in parameters:
            param_device = _check_param_device(param, param_device)
            num_param = param.numel()
            param.copy_(vec[pointer:pointer + num_param].view_as(param))
            pointer += num_param
