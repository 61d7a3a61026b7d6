"""SGD with momentum, dampening, Nesterov and weight decay (torch.optim.SGD).
A parameter whose tensors allow it (symtrace/optim/_fused.py's supported():
dense, contiguous, one float dtype and device) is updated by one fused
kernel (symtrace/optim/_fused_sgd.py), unless fused=False; else op by op."""
from ..nn.parameter import _no_grad
from . import _fused_sgd
from .optimizer import Optimizer, _check_tensor_lr, _is_tensor

__all__ = ["SGD"]


class SGD(Optimizer):
    """torch.optim.SGD: p -= lr * d where d = g (+ wd * p), through the momentum
    buffer b = momentum * b + (1 - dampening) * d (b = d at the first step), and
    d = d + momentum * b under Nesterov."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_tensor_lr(lr)
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    _group_defaults = (("nesterov", False), ("maximize", False), ("foreach", None),
                       ("differentiable", False), ("fused", False))

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                fused = group.get("fused")
                if group.get("differentiable"):
                    fused = False
                if fused is not False:
                    self._step_fused(group, fused)
                else:
                    self._step_op_by_op(group, group["params"])
        return loss

    def _step_fused(self, group, fused):
        """The fused update of every parameter whose tensors allow it; the
        others op by op (fused=True: an error)."""
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        # a Tensor lr (torch allows one) enters the fused update as its value
        lr_f = lr.item() if _is_tensor(lr) else lr
        rest = []
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            buf = self.state[p].get("momentum_buffer") if momentum != 0 else None
            ts = (p, grad) if buf is None else (p, grad, buf)
            if not _fused_sgd.supported(ts):
                if fused:
                    raise RuntimeError("SGD(fused=True): the parameter, its gradient and momentum "
                                       "buffer must be dense, contiguous, of one floating dtype "
                                       "(float32, float64, float16, bfloat16) on one device")
                rest.append(p)
                continue
            buf = _fused_sgd.sgd_update(p, grad, buf, lr_f, momentum, dampening,
                                        group["weight_decay"], group["nesterov"],
                                        group["maximize"])
            if buf is not None:
                self.state[p]["momentum_buffer"] = buf
        if rest:
            self._step_op_by_op(group, rest)

    def _step_op_by_op(self, group, params):
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        nesterov = group["nesterov"]
        for p, grad, _ in self._grads(dict(group, params=params)):
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = grad.detach().clone()
                    state["momentum_buffer"] = buf
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad.add(buf, alpha=momentum) if nesterov else buf
            p.add_(grad, alpha=-lr)
