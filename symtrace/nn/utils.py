"""symtrace.nn.utils: clip_grad_norm_ (torch.nn.utils.clip_grad_norm_)."""
from .. import _C, _ops
from .parameter import _no_grad

__all__ = ["clip_grad_norm_"]


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


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients of parameters in place so that their joint norm is at
    most max_norm; returns the total norm before clipping (a 0-d tensor)."""
    if isinstance(parameters, _C.TensorBase):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if len(grads) == 0:
        return _ops.full((), 0.0)
    with _no_grad():
        norms = [_vector_norm(g, norm_type) for g in grads]
        total_norm = _vector_norm(_ops.stack(norms), norm_type)
        if error_if_nonfinite:
            v = total_norm.item()
            if v != v or v in (float("inf"), float("-inf")):
                raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                                   "non-finite, so it cannot be clipped. To disable this error and scale the "
                                   "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
        clip_coef = max_norm / (total_norm + 1e-6)
        clip_coef_clamped = clip_coef.clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.dtype))
    return total_norm
