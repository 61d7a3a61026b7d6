"""Muon (torch.optim.Muon): momentum, then the Newton-Schulz
orthogonalization of the update in bfloat16, for 2-d parameters only."""
import math

from .. import _ops
from ..nn.parameter import _no_grad
from .optimizer import Optimizer, _is_tensor, _lerp_

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """_zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps) -> bfloat16
    tensor: ns_steps quintic Newton-Schulz iterations X = a X + (b A + c A^2) X,
    A = X X^T, from X = grad / max(||grad||, eps) (transposed when tall)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    ortho_grad = grad.bfloat16()
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    # torch's bfloat16 norm sums the squares in float32 and rounds once; symtrace's rounds the
    # sum to bfloat16 first, so the norm is taken in float32
    ortho_grad = ortho_grad.div(ortho_grad.float().norm().bfloat16().clamp(min=eps))
    for _ in range(ns_steps):
        gram_matrix = ortho_grad @ ortho_grad.T
        # torch's bfloat16 addmm accumulates and adds beta * input in float32 and rounds once;
        # symtrace's rounds the product first, so these two run in float32
        g32 = gram_matrix.float()
        gram_update = _ops.addmm(g32, g32, g32, beta=b, alpha=c).bfloat16()
        o32 = ortho_grad.float()
        ortho_grad = _ops.addmm(o32, gram_update.float(), o32, beta=a).bfloat16()
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    return ortho_grad


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """_adjust_lr(lr, adjust_lr_fn, param_shape) -> float: lr sqrt(max(1, A/B))
    ("original", None) or 0.2 lr sqrt(max(A, B)) ("match_rms_adamw")."""
    A, B = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        adjusted_ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        adjusted_ratio = 0.2 * math.sqrt(max(A, B))
    else:
        adjusted_ratio = 1.0
    return lr * adjusted_ratio


class Muon(Optimizer):
    """torch.optim.Muon: B = lerp(B, g, 1 - momentum); u = lerp(g, B, momentum)
    (nesterov) or B; u = NS(u) in bfloat16; p *= 1 - lr wd;
    p -= adjusted_lr u. state: momentum_buffer. Only 2-d parameters."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        if _is_tensor(lr) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with "
                                     f"size: {p.size()}")

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _no_grad():
            for group in self.param_groups:
                lr, weight_decay, momentum = group["lr"], group["weight_decay"], group["momentum"]
                lr = lr.item() if _is_tensor(lr) else lr
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = _ops.zeros_like(grad)
                    if grad.ndim != 2:
                        raise ValueError("Param gradient must be a 2D matrix")
                    buf = _lerp_(state["momentum_buffer"], grad, 1 - momentum)
                    update = _lerp_(grad.clone(), buf, momentum) if group["nesterov"] else buf
                    update = _zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"],
                                                         group["eps"])
                    adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
                    p.mul_(1 - lr * weight_decay)
                    p.add_(update.to(p.dtype), alpha=-adjusted_lr)
        return loss
