"""Adagrad (torch.optim.Adagrad, the single-tensor update on dense gradients)."""
from .. import _ops
from ..nn.parameter import _no_grad
from .optimizer import Optimizer, _check_tensor_lr

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """torch.optim.Adagrad: g (+ wd * p); clr = lr / (1 + (step - 1) * lr_decay);
    sum += g^2; p -= clr * g / (sqrt(sum) + eps). As torch, the state (step, a
    0-d float32 tensor, and sum = initial_accumulator_value) is created at
    construction."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        for group in self.param_groups:
            for p in group["params"]:
                self._new_state(p, self.state[p], group)

    @staticmethod
    def _new_state(p, state, group):
        state["step"] = _ops.zeros((), dtype=_ops.float32)
        state["sum"] = _ops.full(tuple(p.shape), group["initial_accumulator_value"], dtype=p.dtype,
                                 device=p.device)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("fused", None))

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
                # (state is made at construction; here for a group added after it)
                for p, grad, state in self._grads(group, self._new_state):
                    step = self._next_step(p, state["step"])
                    clr = lr / (1 + (step - 1) * lr_decay)
                    state_sum = state["sum"]
                    state_sum.add_(grad.mul(grad))                      # addcmul_(grad, grad, value=1)
                    std = state_sum.sqrt().add_(eps)
                    p.add_(grad.mul(-clr).div_(std))                   # addcdiv_(grad, std, value=-clr)
        return loss
