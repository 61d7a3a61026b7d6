"""symtrace.autograd: the tape's Python face (backward, grad, grad mode,
custom Functions / PyLayer, gradcheck / gradgradcheck, graph: saved-tensor hooks,
functional: vjp / jvp / jacobian / hessian / vhp / hvp, anomaly mode, the legacy
Variable)."""
import warnings

from .. import _C
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled,  # noqa: F401
                        inference_mode, is_inference_mode_enabled)
from .function import Function, PyLayer, FunctionCtx, PyLayerContext  # noqa: F401
from . import graph  # noqa: F401
from .anomaly_mode import (detect_anomaly, set_detect_anomaly, is_anomaly_enabled,  # noqa: F401
                           is_anomaly_check_nan_enabled, set_anomaly_enabled)
from .variable import Variable  # noqa: F401


def _seq(x):
    if x is None:
        return None
    if isinstance(x, _C.TensorBase):
        return (x,)
    return tuple(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates gradients of tensors (weighted by grad_tensors) into leaves' .grad.

    create_graph=True records the backward's own ops, so the gradients have a
    history and can be differentiated again (higher-order gradients); it
    implies retain_graph unless retain_graph=False is given."""
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.", UserWarning, stacklevel=2)
    tensors = _seq(tensors)
    grads = _seq(grad_tensors) or (None,) * len(tensors)
    if inputs is None:
        _C._backward(tensors, grads, bool(retain_graph), bool(create_graph))
        return
    inputs = _seq(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    # only these accumulate (leaves or not): grad() over them, added to .grad
    got = _C._grad(tensors, grads, inputs, bool(retain_graph), True, bool(create_graph))
    if create_graph:    # .grad keeps the gradient's history
        for t, g in zip(inputs, got):
            if g is not None:
                t.grad = g if t.grad is None else t.grad + g
        return
    with no_grad():
        for t, g in zip(inputs, got):
            if g is None:
                continue
            if t.grad is None:
                t.grad = g.detach().clone()
            else:
                t.grad.add_(g)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of outputs with respect to inputs, as a tuple; .grad is untouched.

    create_graph=True: the gradients have a history (see backward).
    materialize_grads=True: zeros instead of None for unused inputs.
    is_grads_batched=True: the first dimension of each grad_outputs entry is a
    batch; each row is differentiated (the graph retained between them) and the
    results stacked."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    outputs = _seq(outputs)
    inputs = _seq(inputs)
    grads = _seq(grad_outputs) or (None,) * len(outputs)
    if is_grads_batched:
        got = _batched_grad(outputs, grads, inputs, bool(retain_graph), bool(allow_unused),
                            bool(create_graph))
    else:
        got = _C._grad(outputs, grads, inputs, bool(retain_graph), bool(allow_unused),
                       bool(create_graph))
    if materialize_grads:
        from .._ops import zeros_like
        got = tuple(zeros_like(i) if g is None else g for g, i in zip(got, inputs))
    return got


def _batched_grad(outputs, grads, inputs, retain, allow_unused, create):
    """grad() once per row of the batched grad_outputs, stacked (torch vmaps it)."""
    sizes = {g.shape[0] for g in grads if g is not None and g.dim() > 0}
    if any(g is None or g.dim() == 0 for g in grads) or len(sizes) != 1:
        raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each "
                           "grad_output as the batch dimension: every grad_output must be a "
                           "tensor with the same (non-empty) first dimension")
    (n,) = sizes
    rows = []
    for b in range(n):
        rows.append(_C._grad(outputs, tuple(g[b] for g in grads), inputs,
                             retain or b < n - 1, allow_unused, create))
    from .._ops import stack
    return tuple(None if rows[0][k] is None else stack([r[k] for r in rows])
                 for k in range(len(inputs)))


def variable(*args, **kwargs):
    """Deprecated in torch: always raises, naming symtrace.tensor as the replacement."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


try:
    from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: F401
except ImportError:  # pragma: no cover - written alongside
    pass
from . import functional  # noqa: F401,E402
