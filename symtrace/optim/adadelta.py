"""Adadelta (torch.optim.Adadelta, the single-tensor update)."""
from .. import _ops
from ..nn.parameter import _no_grad
from .optimizer import Optimizer, _check_tensor_lr

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """torch.optim.Adadelta: g (+ wd * p); v = rho v + (1 - rho) g^2;
    d = sqrt(u + eps) / sqrt(v + eps) * g; u = rho u + (1 - rho) d^2;
    p -= lr * d. state: step (0-d float32), square_avg, acc_delta."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @staticmethod
    def _new_state(p, state, group):
        state["step"] = _ops.zeros((), dtype=_ops.float32)
        state["square_avg"] = _ops.zeros_like(p)
        state["acc_delta"] = _ops.zeros_like(p)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                lr, rho, eps = group["lr"], group["rho"], group["eps"]
                for p, grad, state in self._grads(group, self._new_state):
                    state["step"].add_(1)
                    square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                    square_avg.mul_(rho).add_(grad.mul(1 - rho).mul_(grad))
                    std = square_avg.add(eps).sqrt()
                    delta = acc_delta.add(eps).sqrt().div_(std).mul_(grad)
                    acc_delta.mul_(rho).add_(delta.mul(1 - rho).mul_(delta))
                    p.add_(delta, alpha=-lr)
        return loss
