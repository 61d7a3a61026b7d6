"""NAdam (torch.optim.NAdam, the single-tensor update)."""
from .. import _ops
from ..nn.parameter import _no_grad
from .optimizer import Optimizer, _lerp_, _check_tensor_lr

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """torch.optim.NAdam: weight decay (decoupled: p *= 1 - lr * wd, else
    g += wd * p); mu_t = b1 (1 - 0.96^(t psi) / 2) (psi = momentum_decay),
    mu_product *= mu_t; m = lerp(m, g, 1 - b1); v = b2 v + (1 - b2) g^2;
    denom = sqrt(v / (1 - b2^t)) + eps;
    p -= lr (1 - mu_t) / (1 - mu_product) g / denom
       + lr mu_{t+1} / (1 - mu_product mu_{t+1}) m / denom.
    state: step, mu_product (0-d float32 tensors), exp_avg, exp_avg_sq."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = (("maximize", False), ("foreach", None), ("capturable", False),
                       ("differentiable", False), ("decoupled_weight_decay", False))

    @staticmethod
    def _new_state(p, state, group):
        state["step"] = _ops.zeros((), dtype=_ops.float32)
        state["mu_product"] = _ops.ones((), dtype=_ops.float32)
        state["exp_avg"] = _ops.zeros_like(p)
        state["exp_avg_sq"] = _ops.zeros_like(p)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                lr, (beta1, beta2) = group["lr"], group["betas"]
                eps, weight_decay = group["eps"], group["weight_decay"]
                momentum_decay, decoupled = group["momentum_decay"], group["decoupled_weight_decay"]
                for p, grad, state in self._grads(group, self._new_state, l2=not decoupled):
                    step = self._next_step(p, state["step"])
                    bias_correction2 = 1 - beta2 ** step
                    if weight_decay != 0 and decoupled:
                        p.mul_(1 - lr * weight_decay)
                    mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                    mu_product = self._scalar_update("_mu_product_mirror", p, state["mu_product"], "mul", mu)
                    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                    _lerp_(exp_avg, grad, 1 - beta1)
                    exp_avg_sq.mul_(beta2).add_(grad.mul(1 - beta2).mul_(grad))
                    denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                    mu_product_next = mu_product * mu_next
                    p.add_(grad.mul(-lr * (1.0 - mu) / (1.0 - mu_product)).div_(denom))
                    p.add_(exp_avg.mul((-lr * mu_next) / (1.0 - mu_product_next)).div_(denom))
        return loss
