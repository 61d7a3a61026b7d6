"""RAdam (torch.optim.RAdam, the single-tensor update)."""
from .. import _ops
from ..nn.parameter import _no_grad
from .adam import _check_args
from .optimizer import Optimizer, _lerp_

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """torch.optim.RAdam: weight decay (decoupled: p *= 1 - lr * wd, else
    g += wd * p); m = lerp(m, g, 1 - b1); v = b2 v + (1 - b2) g^2;
    rho_inf = 2 / (1 - b2) - 1, rho_t = rho_inf - 2 t b2^t / (1 - b2^t);
    rho_t > 5: p -= lr m / (1 - b1^t) * sqrt(1 - b2^t) / (sqrt(v) + eps) * r_t
    (r_t the variance rectification), else p -= lr m / (1 - b1^t).
    state: step (0-d float32), exp_avg, exp_avg_sq."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("decoupled_weight_decay", False), ("capturable", False))

    @staticmethod
    def _new_state(p, state, group):
        state["step"] = _ops.zeros((), dtype=_ops.float32)
        state["exp_avg"] = _ops.zeros_like(p)
        state["exp_avg_sq"] = _ops.zeros_like(p)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                lr, (beta1, beta2) = group["lr"], group["betas"]
                eps, weight_decay = group["eps"], group["weight_decay"]
                decoupled = group["decoupled_weight_decay"]
                for p, grad, state in self._grads(group, self._new_state, l2=not decoupled):
                    step = self._next_step(p, state["step"])
                    if weight_decay != 0 and decoupled:
                        p.mul_(1 - lr * weight_decay)
                    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                    _lerp_(exp_avg, grad, 1 - beta1)
                    exp_avg_sq.mul_(beta2).add_(grad.mul(1 - beta2).mul_(grad))
                    bias_correction1 = 1 - beta1 ** step
                    bias_correction2 = 1 - beta2 ** step
                    bias_corrected_exp_avg = exp_avg / bias_correction1
                    rho_inf = 2 / (1 - beta2) - 1
                    rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                    if rho_t > 5.0:
                        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                                / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                        adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
                        p.sub_(bias_corrected_exp_avg.mul_(lr).mul_(adaptive_lr).mul_(rect))
                    else:
                        p.sub_(bias_corrected_exp_avg.mul_(lr))
        return loss
