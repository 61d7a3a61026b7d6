"""symtrace.nn.utils.clip_grad: gradient clipping (clip_grad_norm_,
clip_grad_norm, clip_grad_value_, and get_total_norm / clip_grads_with_norm_,
torch's _get_total_norm / _clip_grads_with_norm_), as torch.nn.utils.clip_grad.

There are no foreach kernels: every `foreach` value takes the per-tensor
path (torch accepts foreach=True on CPU and CUDA tensors, the devices
symtrace has, so nothing is refused). No value is read back to the host (no
.item()) unless error_if_nonfinite asks for the check."""
import types
import warnings

from ... import _C, _ops
from ..parameter import _no_grad

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]


def _vector_norm(t, norm_type):
    if norm_type == float("inf"):
        return t.abs().amax()
    if norm_type == float("-inf"):
        return t.abs().amin()
    if norm_type == 2.0:
        return (t * t).sum().sqrt()
    if norm_type == 1.0:
        return t.abs().sum()
    if norm_type == 0:
        return (t != 0).sum().to(t.dtype if t.dtype.is_floating_point else _ops.float32)
    return t.abs().pow(norm_type).sum().pow(1.0 / norm_type)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of the tensors (as if concatenated into one
    vector), a 0-d tensor; 0.0 for no tensors (torch.nn.utils.get_total_norm)."""
    if isinstance(tensors, _C.TensorBase):
        tensors = [tensors]
    else:
        tensors = list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _ops.full((), 0.0)
    with _no_grad():
        first_device = tensors[0]._device_str
        norms = [_vector_norm(t, norm_type) for t in tensors]
        norms = [n if n._device_str == first_device else _ops.to_device(n, first_device) for n in norms]
        total_norm = _vector_norm(_ops.stack(norms), norm_type)
        if error_if_nonfinite:
            v = total_norm.item()
            if v != v or v in (float("inf"), float("-inf")):
                raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                                   "non-finite, so it cannot be clipped. To disable this error and scale the "
                                   "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales the gradients in place by min(1, max_norm / (total_norm + 1e-6))
    (torch.nn.utils.clip_grads_with_norm_); total_norm as get_total_norm's."""
    if isinstance(parameters, _C.TensorBase):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    with _no_grad():
        clip_coef = max_norm / (total_norm + 1e-6)
        clip_coef_clamped = clip_coef.clamp(max=1.0)
        for g in grads:
            c = clip_coef_clamped
            if c._device_str != g._device_str:
                c = _ops.to_device(c, g._device_str)
            g.mul_(c.to(g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients of parameters in place so that their joint norm is at
    most max_norm; returns the total norm before clipping (a 0-d tensor)."""
    if isinstance(parameters, _C.TensorBase):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated: clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps the gradients in place to [-clip_value, clip_value]."""
    if isinstance(parameters, _C.TensorBase):
        parameters = [parameters]
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    with _no_grad():
        for g in grads:
            g.clamp_(min=-clip_value, max=clip_value)


# torch's names in this module
_get_total_norm = get_total_norm
_clip_grads_with_norm_ = clip_grads_with_norm_
