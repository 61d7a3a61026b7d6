"""RMSprop (torch.optim.RMSprop, the single-tensor update)."""
from .. import _ops
from ..nn.parameter import _no_grad
from .optimizer import Optimizer, _lerp_, _check_tensor_lr

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """torch.optim.RMSprop: g (+ wd * p); v = alpha v + (1 - alpha) g^2;
    centered: m = lerp(m, g, 1 - alpha), avg = sqrt(v - m^2), else sqrt(v);
    avg += eps; with momentum b = momentum * b + g / avg, p -= lr * b, else
    p -= lr * g / avg. state: step (0-d float32), square_avg, momentum_buffer
    (momentum > 0), grad_avg (centered)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = (("momentum", 0), ("centered", False), ("foreach", None),
                       ("maximize", False), ("differentiable", False), ("capturable", False))

    @staticmethod
    def _new_state(p, state, group):
        state["step"] = _ops.zeros((), dtype=_ops.float32)
        state["square_avg"] = _ops.zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = _ops.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = _ops.zeros_like(p)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
                momentum, centered = group["momentum"], group["centered"]
                for p, grad, state in self._grads(group, self._new_state):
                    state["step"].add_(1)
                    square_avg = state["square_avg"]
                    # square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                    square_avg.mul_(alpha).add_(grad.mul(1 - alpha).mul_(grad))
                    if centered:
                        grad_avg = _lerp_(state["grad_avg"], grad, 1 - alpha)
                        # square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                        avg = square_avg.add(grad_avg.neg().mul_(grad_avg)).sqrt()
                    else:
                        avg = square_avg.sqrt()
                    avg = avg.add_(eps)
                    if momentum > 0:
                        buf = state["momentum_buffer"]
                        buf.mul_(momentum).add_(grad.div(avg))          # .addcdiv_(grad, avg)
                        p.add_(buf, alpha=-lr)
                    else:
                        p.add_(grad.mul(-lr).div_(avg))                 # addcdiv_(grad, avg, value=-lr)
        return loss
