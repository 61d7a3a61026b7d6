"""SparseAdam (torch.optim.SparseAdam): its constructor and checks. symtrace
has no sparse tensors, so every gradient is dense, and a step with one
raises torch's error for a dense gradient; the masked update itself is
never reached."""
from .optimizer import Optimizer, _is_tensor

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """torch.optim.SparseAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
    maximize=False): Adam on sparse gradients. step() raises RuntimeError
    for any parameter with a (dense) gradient, as torch does; parameters
    without a gradient are skipped, so a step with none is a no-op."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if _is_tensor(lr) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        # (torch also rejects sparse and complex parameters here: symtrace has neither)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None and not getattr(p.grad, "is_sparse", False):
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss
