"""ASGD (torch.optim.ASGD, the single-tensor update without capturable)."""

from .. import _ops
from ..nn.parameter import _no_grad
from .._ops._core import f32 as _f32
from .optimizer import Optimizer, _is_tensor

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """torch.optim.ASGD: g (+ wd * p); p *= 1 - lambd * eta; p -= eta * g;
    ax += mu * (p - ax) (ax = p while mu is 1); then eta = lr / (1 + lambd
    lr t)^alpha and mu = 1 / max(1, t - t0), both rounded to float32 as
    torch's 0-d state tensors. state: step, eta, mu (0-d float32), ax.
    eta and mu are read on the host from the values this optimizer wrote
    (.item() only for a loaded or outside-written state), so a step traces
    into one graph under symtrace.compile. foreach is accepted and changes
    nothing; capturable=True raises torch's error on a cpu parameter and
    otherwise keeps this arithmetic (torch's capturable form differs only in
    rounding); differentiable is accepted, the step is not recorded."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if _is_tensor(lr) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    def _new_state(self, p, state, group):
        lr = group["lr"]
        lr = lr.item() if _is_tensor(lr) else lr
        state["step"] = _ops.zeros((), dtype=_ops.float32)
        state["eta"] = _ops.zeros((), dtype=_ops.float32)
        self._scalar_set("_eta_mirror", p, state["eta"], _f32(lr))
        state["mu"] = _ops.zeros((), dtype=_ops.float32)
        self._scalar_set("_mu_mirror", p, state["mu"], 1.0)
        state["ax"] = _ops.zeros_like(p)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
                lr = lr.item() if _is_tensor(lr) else lr
                for p, grad, state in self._grads(group, self._new_state):
                    self._check_capturable(group, p, "params, mus, etas, and state_steps")
                    step = self._next_step(p, state["step"])
                    eta_t, mu_t, ax = state["eta"], state["mu"], state["ax"]
                    eta = self._scalar_get("_eta_mirror", p, eta_t)
                    mu = self._scalar_get("_mu_mirror", p, mu_t)
                    p.mul_(1 - lambd * eta)                     # decay term
                    p.add_(grad, alpha=-eta)
                    if mu != 1:
                        ax.add_(p.sub(ax).mul_(mu))
                    else:
                        ax.copy_(p)
                    self._scalar_set("_eta_mirror", p, eta_t, _f32(lr / ((1 + lambd * lr * step) ** alpha)))
                    self._scalar_set("_mu_mirror", p, mu_t, _f32(1 / max(1, step - t0)))
        return loss
