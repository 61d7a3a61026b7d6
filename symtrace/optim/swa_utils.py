"""symtrace.optim.swa_utils: stochastic weight averaging and EMA weights
(torch.optim.swa_utils): AveragedModel, update_bn, SWALR and the averaging
functions get_ema_multi_avg_fn, get_swa_multi_avg_fn, get_ema_avg_fn and
get_swa_avg_fn.

AveragedModel keeps a deep copy of a model and folds the model's current
weights into it on update_parameters(): the first call copies them, later
calls average (SWA: the running mean, as torch's CPU path p + (q - p) / (n + 1);
or the avg_fn / multi_avg_fn given). The buffers follow the model unless
use_buffers=True averages them too. SWALR anneals each group's lr towards
its swa_lr (cosine or linear) over anneal_epochs steps, with torch's formula,
so the learning rates agree with torch's."""
import itertools
import math
from copy import deepcopy

from .. import _C
from ..autograd.grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _format_param, _warn_get_lr_called_within_step

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """fn(ema_params, current_params, num_averaged): ema <- lerp(ema, current, 1 - decay)
    in place, for lists of tensors."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
            if p_ema.dtype.is_floating_point:
                p_ema.lerp_(p_model, 1 - decay)
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """fn(averaged_params, current_params, num_averaged): the running mean, in place,
    for lists of tensors."""
    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
            p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """fn(ema_param, current_param, num_averaged) -> decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """fn(averaged_param, current_param, num_averaged) -> the running mean."""
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """AveragedModel(model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
    a deep copy of model (self.module; forward calls it) whose weights are the average
    of the model's weights at each update_parameters(model) call; n_averaged (an int64
    buffer) counts the calls. avg_fn(avg, current, n) returns one averaged tensor,
    multi_avg_fn(avgs, currents, n) updates lists in place; neither: the equal-weight
    mean (SWA)."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        n = _C.tensor(0, _C.int64)
        self.register_buffer("n_averaged", n if device is None else n.to(device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model):
        if self.use_buffers:
            return itertools.chain(model.parameters(), model.buffers())
        return model.parameters()

    @no_grad()
    def update_parameters(self, model):
        """Folds model's current parameters (and buffers with use_buffers) into the average."""
        mine = list(self._tensors(self.module))
        theirs = [p.detach().to(a.device) for a, p in zip(mine, self._tensors(model))]
        mine = [a.detach() for a in mine[:len(theirs)]]
        n = int(self.n_averaged.item())
        if n == 0:
            for a, p in zip(mine, theirs):
                a.copy_(p)
        elif self.avg_fn is not None:
            for a, p in zip(mine, theirs):
                a.copy_(self.avg_fn(a, p, self.n_averaged.to(a.device)))
        else:
            fn = self.multi_avg_fn or get_swa_multi_avg_fn()
            groups = {}
            for a, p in zip(mine, theirs):         # one call per (device, dtype), as torch's
                key = (str(a.device), str(a.dtype))
                groups.setdefault(key, ([], []))
                groups[key][0].append(a)
                groups[key][1].append(p)
            for (dev, _), (avgs, currents) in groups.items():
                fn(avgs, currents, self.n_averaged.to(avgs[0].device))
        if not self.use_buffers:
            for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_avg.detach().copy_(b_model.detach().to(b_avg.device))
        self.n_averaged.add_(1)


@no_grad()
def update_bn(loader, model, device=None):
    """update_bn(loader, model, device=None): recomputes the running statistics of
    model's batch-norm layers with one pass over loader (each batch a tensor, or a
    list/tuple whose first item is the input), as cumulative averages."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """SWALR(optimizer, swa_lr, anneal_epochs=10, anneal_strategy='cos', last_epoch=-1):
    anneals each group's lr to its swa_lr (one value, or one per group) over
    anneal_epochs steps ('cos' or 'linear'), then holds it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # the lr before annealing, recovered from the current one at the previous alpha
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """Every attribute but the optimizer and anneal_func."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
