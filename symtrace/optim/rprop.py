"""Rprop (torch.optim.Rprop, the single-tensor update). The sign tests are
torch's capturable form (where), which gives the same values as its
masked-assignment form and stays one traced graph under symtrace.compile."""
from .. import _ops
from ..nn.parameter import _no_grad
from .optimizer import Optimizer, _is_tensor

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """torch.optim.Rprop: s = sign(g * prev); step_size *= etaplus where s > 0,
    etaminus where s < 0, then clamped to step_sizes; g = 0 where s < 0;
    p -= sign(g) * step_size; prev = g. state: step (0-d float32), prev,
    step_size (filled with lr). foreach is accepted and changes nothing (one
    update path); capturable=True raises torch's error on a cpu parameter
    and otherwise changes nothing; differentiable is accepted, the step is
    not recorded by autograd."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        if _is_tensor(lr) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @staticmethod
    def _new_state(p, state, group):
        lr = group["lr"]
        state["step"] = _ops.zeros((), dtype=_ops.float32)
        state["prev"] = _ops.zeros_like(p)
        state["step_size"] = _ops.full_like(p.grad, lr.item() if _is_tensor(lr) else lr)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                etaminus, etaplus = group["etas"]
                step_size_min, step_size_max = group["step_sizes"]
                for p, grad, state in self._grads(group, self._new_state, l2=False):
                    self._check_capturable(group, p)
                    state["step"].add_(1)
                    prev, step_size = state["prev"], state["step_size"]
                    sign = grad.mul(prev).sign()
                    sign = _ops.where(sign.gt(0), etaplus, sign)
                    sign = _ops.where(sign.lt(0), etaminus, sign)
                    sign = _ops.where(sign.eq(0), 1, sign)
                    step_size.mul_(sign).clamp_(step_size_min, step_size_max)
                    grad = _ops.where(sign.eq(etaminus), 0, grad)
                    p.sub_(grad.sign().mul_(step_size))       # addcmul_(grad.sign(), step_size, value=-1)
                    prev.copy_(grad)
        return loss
