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
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
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
         allow_unused=False, is_grads_batched=False):
    """Gradients of outputs with respect to inputs, as a tuple; .grad is untouched.

    create_graph=True: the gradients have a history (see backward)."""
    if retain_graph is None:
        retain_graph = create_graph
    outputs = _seq(outputs)
    inputs = _seq(inputs)
    grads = _seq(grad_outputs) or (None,) * len(outputs)
    return _C._grad(outputs, grads, inputs, bool(retain_graph), bool(allow_unused),
                    bool(create_graph))


def variable(*args, **kwargs):
    """Deprecated in torch: always raises, naming symtrace.tensor as the replacement."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


try:
    from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: F401
except ImportError:  # pragma: no cover - written alongside
    pass
from . import functional  # noqa: F401,E402
