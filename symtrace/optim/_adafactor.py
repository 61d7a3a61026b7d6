"""Adafactor (torch.optim.Adafactor, the single-tensor update): factored
row / column second moments for parameters of 2 or more dimensions."""
from .. import _ops
from ..nn.parameter import _no_grad
from .optimizer import Optimizer, _is_tensor, _lerp_

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """torch.optim.Adafactor: b = t^beta2_decay; rho = min(lr, t^-1/2);
    alpha = max(eps2, rms(p)) rho; p *= 1 - lr wd; for >= 2-d p the row and
    column means of g^2 (r, c) are averaged, r = lerp(r, mean_row, b),
    c = lerp(c, mean_col, b), v = r c / max(mean(r), eps1); else
    v = lerp(v, g^2, b); u = g / sqrt(max(v, eps1^2));
    p -= alpha / max(1, rms(u) / d) u. eps1 None is the machine epsilon of
    the first parameter's dtype (as torch, for the whole group). state:
    step (0-d float32), row_var and col_var (>= 2-d) or variance. rms(p) and
    rms(u) are read with .item() as torch does (a graph break under
    symtrace.compile). foreach is accepted and changes nothing."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if _is_tensor(lr) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None),)

    @staticmethod
    def _new_state(p, state, group):
        grad = p.grad
        state["step"] = _ops.zeros((), dtype=_ops.float32)
        if grad.dim() > 1:
            row_shape = list(grad.shape)
            row_shape[-1] = 1
            state["row_var"] = _ops.zeros(tuple(row_shape), dtype=grad.dtype, device=grad.device)
            col_shape = list(grad.shape)
            col_shape[-2] = 1
            state["col_var"] = _ops.zeros(tuple(col_shape), dtype=grad.dtype, device=grad.device)
        else:
            state["variance"] = _ops.zeros_like(grad)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                lr, beta2_decay, d = group["lr"], group["beta2_decay"], group["d"]
                lr = lr.item() if _is_tensor(lr) else lr
                weight_decay = group["weight_decay"]
                eps1, eps2 = group["eps"]
                for p, grad, state in self._grads(group, self._new_state, l2=False):
                    if eps1 is None:
                        eps1 = _ops.finfo(p.dtype).eps
                    step = self._next_step(p, state["step"])
                    one_minus_beta2_t = step ** beta2_decay
                    rho_t = min(lr, 1 / (step ** 0.5))
                    alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
                    if weight_decay != 0:
                        p.mul_(1 - lr * weight_decay)
                    if grad.dim() > 1:
                        row_var, col_var = state["row_var"], state["col_var"]
                        row_mean = _ops.norm(grad, dim=-1, keepdim=True).square().div_(grad.size(-1))
                        _lerp_(row_var, row_mean, one_minus_beta2_t)
                        col_mean = _ops.norm(grad, dim=-2, keepdim=True).square().div_(grad.size(-2))
                        _lerp_(col_var, col_mean, one_minus_beta2_t)
                        var_estimate = row_var @ col_var
                        var_estimate = var_estimate.div(row_var.mean(dim=-2, keepdim=True).clamp(min=eps1))
                    else:
                        variance = state["variance"]
                        _lerp_(variance, grad * grad, one_minus_beta2_t)
                        var_estimate = variance.clone()
                    update = var_estimate.clamp(min=eps1 * eps1).rsqrt().mul_(grad)
                    denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                    p.add_(update, alpha=-alpha / denom)
        return loss
