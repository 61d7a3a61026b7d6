"""Adam and AdamW (torch.optim.Adam / AdamW, the single-tensor update).
A parameter whose tensors allow it (symtrace/optim/_fused.py: dense,
contiguous, one float dtype and device) is updated by one fused kernel,
unless fused=False; else op by op."""
from .. import _ops
from ..nn.parameter import _no_grad
from . import _fused
from .optimizer import Optimizer, _enable_grad, _is_tensor, _check_tensor_lr

__all__ = ["Adam", "AdamW"]


def _check_args(lr, betas, eps, weight_decay):
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


class Adam(Optimizer):
    """torch.optim.Adam. With decoupled weight decay (AdamW) p *= 1 - lr * wd first;
    otherwise g += wd * p. Then m = lerp(m, g, 1 - b1), v = b2 v + (1 - b2) g^2,
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps) (amsgrad: the
    running max of v)."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=None):
        _check_args(lr, betas, eps, weight_decay)
        if _is_tensor(betas[0]) and _is_tensor(betas[1]):
            for i, b in enumerate(betas):
                if b.numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
            betas = (betas[0].item(), betas[1].item())
        elif not (isinstance(betas[0], float) and isinstance(betas[1], float)):
            raise ValueError("betas must be either both floats or both Tensors")
        if decoupled_weight_decay is not None:
            self._decoupled = bool(decoupled_weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=self._decoupled)
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def _init_state(self, p, amsgrad):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _ops.zeros((), dtype=_ops.float32)
            state["exp_avg"] = _ops.zeros(p.shape, dtype=p.dtype, device=p.device)
            state["exp_avg_sq"] = _ops.zeros(p.shape, dtype=p.dtype, device=p.device)
            if amsgrad:
                state["max_exp_avg_sq"] = _ops.zeros(p.shape, dtype=p.dtype, device=p.device)
        return state

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with _enable_grad():
                loss = closure()
        with _no_grad():
            for group in self.param_groups:
                lr = group["lr"]
                beta1, beta2 = group["betas"]
                eps, weight_decay = group["eps"], group["weight_decay"]
                amsgrad, maximize = group["amsgrad"], group["maximize"]
                decoupled = group.get("decoupled_weight_decay", self._decoupled)
                fused = group.get("fused")
                if group.get("differentiable"):
                    fused = False
                scalars = {}   # step value -> the fused update's constants
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self._init_state(p, amsgrad)
                    step = self._next_step(p, state["step"])
                    if fused is not False:
                        ts = (p, p.grad, state["exp_avg"], state["exp_avg_sq"])
                        if amsgrad:
                            ts += (state["max_exp_avg_sq"],)
                        if _fused.supported(ts):
                            sc = scalars.get(step)
                            if sc is None:
                                # a Tensor lr (torch allows one) enters the fused update as its value
                                lr_f = lr.item() if _is_tensor(lr) else lr
                                sc = scalars[step] = _fused.Scalars(lr_f, beta1, beta2, eps, weight_decay,
                                                                    decoupled, step)
                            _fused.adam_update(ts, sc, amsgrad, maximize)
                            continue
                        if fused:
                            raise RuntimeError("Adam(fused=True): the parameter, its gradient and state "
                                               "must be dense, contiguous, of one floating dtype "
                                               "(float32, float64, float16, bfloat16) on one device")
                    self._update_op_by_op(p, state, step, lr, beta1, beta2, eps, weight_decay,
                                          amsgrad, maximize, decoupled)
        return loss

    @staticmethod
    def _update_op_by_op(p, state, step, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize,
                         decoupled):
        grad = p.grad if not maximize else -p.grad
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        if weight_decay != 0:
            if decoupled:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(p, alpha=weight_decay)
        # exp_avg.lerp_(grad, 1 - beta1); exp_avg_sq.mul_(b2).addcmul_(g, g, value=1 - b2)
        exp_avg.add_((grad - exp_avg).mul_(1 - beta1))
        exp_avg_sq.mul_(beta2).add_(grad.mul(1 - beta2).mul_(grad))
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if amsgrad:
            mx = state["max_exp_avg_sq"]
            mx.copy_(_ops.maximum(mx, exp_avg_sq))
            denom = mx.sqrt().div_(bias_correction2_sqrt).add_(eps)
        else:
            denom = exp_avg_sq.sqrt().div_(bias_correction2_sqrt).add_(eps)
        # p.addcdiv_(exp_avg, denom, value=-step_size)
        p.add_(exp_avg.mul(-step_size).div_(denom))


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (default 1e-2)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused, decoupled_weight_decay=True)
