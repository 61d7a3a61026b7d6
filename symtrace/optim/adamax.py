"""Adamax (torch.optim.Adamax, the single-tensor update)."""
from .. import _ops
from ..nn.parameter import _no_grad
from .adam import _check_args
from .optimizer import Optimizer, _lerp_

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """torch.optim.Adamax: g (+ wd * p); m = lerp(m, g, 1 - b1);
    u = max(b2 * u, |g| + eps); p -= lr / (1 - b1^t) * m / u. state: step
    (0-d float32), exp_avg, exp_inf."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @staticmethod
    def _new_state(p, state, group):
        state["step"] = _ops.zeros((), dtype=_ops.float32)
        state["exp_avg"] = _ops.zeros_like(p)
        state["exp_inf"] = _ops.zeros_like(p)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                lr, (beta1, beta2) = group["lr"], group["betas"]
                eps = group["eps"]
                for p, grad, state in self._grads(group, self._new_state):
                    step = self._next_step(p, state["step"])
                    exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                    _lerp_(exp_avg, grad, 1 - beta1)
                    # torch.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
                    exp_inf.copy_(_ops.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                    clr = lr / (1 - beta1 ** step)
                    p.add_(exp_avg.mul(-clr).div_(exp_inf))            # addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
