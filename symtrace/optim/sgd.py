"""SGD with momentum, dampening, Nesterov and weight decay (torch.optim.SGD)."""
from ..nn.parameter import _no_grad
from .optimizer import Optimizer, _check_tensor_lr

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
                lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
                nesterov = group["nesterov"]
                for p, grad, _ in self._grads(group):
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
        return loss
