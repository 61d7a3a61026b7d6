"""The margin, multi-label, likelihood and triplet losses of torch.nn.functional:
margin_ranking_loss, hinge_embedding_loss, soft_margin_loss, multilabel_soft_margin_loss,
multilabel_margin_loss, multi_margin_loss, gaussian_nll_loss, poisson_nll_loss,
triplet_margin_loss and triplet_margin_with_distance_loss, with torch's signatures (the
deprecated size_average/reduce included), reductions, broadcasting, checks and messages.

Each is composed of symtrace's differentiable ops, so autograd comes from theirs and
symtrace.compile traces them into its graph; the formulas are torch's (ATen's), so the
gradients follow torch's conventions at the kinks (a hinge max(0, z) passes the gradient
at z == 0 as clamp_min does; the multi-class margins count only z > 0, as ATen's loops).
Nothing branches on tensor values, except the checks of target values (a class out of
range, a negative variance), which read them eagerly and are skipped while a graph is
being traced (as one_hot's): indices are clamped into range there, so a bad target gives
a wrong loss in a compiled graph, never a bad memory access."""
import math as _math

from .. import _C, _ops
from ..autograd import no_grad as _no_grad
from .._ops import _check_tensor, _tname
from .functional import (_broadcast_shape, _cpp_type, _get_reduction, _reduce, logsigmoid,
                         pairwise_distance)

_VALID = ("none", "mean", "sum")


def _check_reduction(reduction, message="is not valid"):
    if reduction not in _VALID:
        raise ValueError(f"{reduction} {message}")


def _not_differentiable(t, fname, name):
    """torch refuses a gradient for some loss arguments (a target, a class weight)."""
    if t is not None and t.requires_grad and _C._is_grad_enabled():
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to argument '{name}'. "
                           "This input cannot have requires_grad True.")


def _eager():
    """Value checks run eagerly only (a value read would break a traced graph)."""
    return not _C._trace_active()


def _sizes(t):
    return list(t.shape)


# ---------------- pairwise margins ----------------
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """margin_ranking_loss(input1, input2, target, margin=0, reduction='mean')
    = max(0, -target * (input1 - input2) + margin), the three broadcast (each of the same rank)."""
    _check_tensor(input1, "margin_ranking_loss", "input1")
    _check_tensor(input2, "margin_ranking_loss", "input2")
    _check_tensor(target, "margin_ranking_loss", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, target: "
                           f"{tuple(target.shape)} ")
    # margin is a double in ATen: integer inputs give a float loss
    return _reduce(_ops.clamp_min(-target * (input1 - input2) + float(margin), 0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """hinge_embedding_loss(input, target, margin=1.0, reduction='mean'): max(0, margin - x)
    where target != 1 plus x where target != -1 (so x where y == 1, max(0, margin - x)
    where y == -1), input and target broadcast."""
    _check_tensor(input, "hinge_embedding_loss")
    _check_tensor(target, "hinge_embedding_loss", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    zeros = _ops.zeros_like(input)
    # ATen's margin - input: margin filled into an input-typed tensor (integers keep their dtype)
    margin_clamp = _ops.clamp_min(_ops.full_like(input, margin) - input, 0)
    r = _ops.where(target != 1, margin_clamp, zeros) + _ops.where(target != -1, input, zeros)
    return _reduce(r, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """soft_margin_loss(input, target, reduction='mean') = log(1 + exp(-target * input)) (as
    torch's, log1p(exp(.)): inf where the exponent overflows); target broadcasts to input's
    shape, the loss has input's dtype. No gradient for target (torch refuses one)."""
    _check_tensor(input, "soft_margin_loss")
    _check_tensor(target, "soft_margin_loss", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    shape = _broadcast_shape(input.shape, target.shape)
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {_sizes(input)} doesn't match the broadcast shape {list(shape)}")
    if not input.dtype.is_floating_point:   # torch's loss is written into an input-typed output
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_tname(input.dtype)}")
    z = -input * target
    if z.dtype is not input.dtype:
        z = z.to(input.dtype)
    _not_differentiable(target, "soft_margin_loss", "target")
    return _reduce(_ops.log1p(_ops.exp(z)), reduction)


# ---------------- multi-label and multi-class ----------------
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """multilabel_soft_margin_loss(input [*, C], target [*, C], weight=None, reduction='mean'):
    the mean over the last (class) dim of -weight * (t * logsigmoid(x) + (1 - t) * logsigmoid(-x)),
    then reduced over the rest (as torch: 'none' gives input's shape without its last dim)."""
    _check_tensor(input, "multilabel_soft_margin_loss")
    _check_tensor(target, "multilabel_soft_margin_loss", "target")
    if size_average is not None or reduce is not None:
        reduction = _get_reduction(size_average, reduce, "mean")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        _check_tensor(weight, "multilabel_soft_margin_loss", "weight")
        loss = loss * weight
    if input.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    _check_reduction(reduction)
    return _reduce(loss, reduction)


def _frames(input):
    """(nframe, dim) of a multi-margin input: [N, C], [C] or a 0-d input (one class), with
    torch's check that it is not empty."""
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{_sizes(input)}")
    if nd <= 1:
        return 1, (1 if nd == 0 else input.shape[0])
    return input.shape[0], input.shape[1]


def _check_float_kernel(input, kernel):
    if input.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_tname(input.dtype)}'")


def _check_long(t):
    if t.dtype is not _ops.int64:
        raise RuntimeError(f"expected scalar type Long but found {_tname(t.dtype)}")


def _mean_frames(loss, n, reduction):
    """The per-frame losses [n] reduced ('mean' of no frames is NaN)."""
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / n if n else loss.sum() * float("nan")


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """multilabel_margin_loss(input [N, C] / [C] / [], target (int64, input's shape),
    reduction='mean'): target lists each sample's classes, up to the first negative entry;
    the loss is sum over listed j and unlisted i of max(0, 1 - (x[j] - x[i])) / C ('none':
    [N] for a 2-d target, else 0-d). Every target entry must lie in [-1, C)."""
    _check_tensor(input, "multilabel_margin_loss")
    _check_tensor(target, "multilabel_margin_loss", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    n, c = _frames(input)
    if input.dim() <= 1:
        ok = target.dim() <= 1 and target.numel() == c
    else:
        ok = target.dim() == 2 and target.shape[0] == n and target.shape[1] == c
    if not ok:
        raise RuntimeError(f"inconsistent target size: {_sizes(target)} for input of size: {_sizes(input)}")
    if _eager() and target.numel() and (target.amin().item() < -1 or target.amax().item() >= c):
        raise RuntimeError("argument #2 'target' is out of range")
    _check_float_kernel(input, "multilabel_margin_loss_forward_out_frame")
    _check_long(target)
    x = input.reshape(n, c)
    t = target.reshape(n, c)
    # the listed classes: entries before the first negative one
    listed = (t < 0).to(_ops.int64).cumsum(1) == 0
    ts = _ops.where(listed, t, 0).clamp(0, c - 1)
    cls = _ops.arange(c, device=input.device)
    is_target = _ops.logical_and(ts.unsqueeze(2) == cls, listed.unsqueeze(2)).any(1)      # [N, C]
    xt = _ops.gather(x, 1, ts)                                                              # x[t_j]
    z = 1.0 - xt.unsqueeze(2) + x.unsqueeze(1)                                              # [N, j, i]
    keep = _ops.logical_and(_ops.logical_and(listed.unsqueeze(2), is_target.logical_not().unsqueeze(1)), z > 0)
    loss = _ops.where(keep, z, 0.0).sum((1, 2)) / c
    if reduction == "none":
        return loss if target.dim() == 2 else loss.reshape(())
    return _mean_frames(loss, n, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """multi_margin_loss(input [N, C] / [C] / [], target (int64 [N] / []), p=1, margin=1.0,
    weight=None, reduction='mean'): sum over i != y of weight[y] * max(0, margin - x[y] + x[i])^p
    / C ('none': [N], or 0-d for a 0-d target). p is 1 or 2; weight [C] takes no gradient (as
    torch)."""
    _check_tensor(input, "multi_margin_loss")
    _check_tensor(target, "multi_margin_loss", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None:
        _check_tensor(weight, "multi_margin_loss", "weight")
        if weight.dim() != 1:
            raise ValueError("weight must be one-dimensional")
    n, c = _frames(input)
    if not (target.dim() <= 1 and target.numel() == n):
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {_sizes(target)}. Input has "
                           f"shape {_sizes(input)}.")
    if weight is not None and not (weight.dim() <= 1 and weight.numel() == c):
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {_sizes(weight)}")
    _check_float_kernel(input, "multi_margin_loss_cpu_kernel")
    _check_long(target)
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_tname(input.dtype)} but found {_tname(weight.dtype)}")
    if _eager() and target.numel() and (target.amin().item() < 0 or target.amax().item() >= c):
        raise RuntimeError("target out of range")
    _not_differentiable(weight, "multi_margin_loss", "weight")
    x = input.reshape(n, c)
    t = target.reshape(n, 1).clamp(0, c - 1)
    z = margin - _ops.gather(x, 1, t) + x                                                   # [N, C]
    h = z if p == 1 else z * z
    if weight is not None:
        h = h * weight.index_select(0, t.reshape(-1)).reshape(n, 1)
    keep = _ops.logical_and(_ops.arange(c, device=input.device) != t, z > 0)
    loss = _ops.where(keep, h, 0.0).sum(1) / c
    if reduction == "none":
        return loss if target.dim() > 0 else loss.reshape(())
    return _mean_frames(loss, n, reduction)


# ---------------- likelihoods ----------------
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction='mean')
    = 0.5 * (log(v) + (input - target)^2 / v) (+ 0.5 log(2 pi) when full), v = var clamped at eps
    (the clamp invisible to autograd, as torch's). var: input's shape, input's shape without its
    last dim (one variance per row), a shape broadcastable to input's that differs in one dim
    of size 1, or a float. Negative variances raise (checked eagerly)."""
    _check_tensor(input, "gaussian_nll_loss")
    _check_tensor(target, "gaussian_nll_loss", "target")
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _ops.ones_like(input) * var
    else:
        if not isinstance(var, _C.TensorBase):
            raise TypeError(f"gaussian_nll_loss(): argument 'var' must be Tensor or float, not {type(var).__name__}")
        if _eager() and var.numel() and bool((var < 0).any().item()):
            raise ValueError("var has negative entry/entries")
    ishape, vshape = tuple(input.shape), tuple(var.shape)
    if vshape != ishape:
        if ishape[:-1] == vshape:
            var = var.unsqueeze(-1)
        elif not (len(ishape) == len(vshape) and sum(y for x, y in zip(ishape, vshape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    _check_reduction(reduction)
    if not var.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_cpp_type(var.dtype)}")
    with _no_grad():
        lift = var.clamp(min=eps) - var
    v = var + lift
    d = input - target
    loss = 0.5 * (_ops.log(v) + d * d / v)
    if full:
        loss = loss + 0.5 * _math.log(2 * _math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """poisson_nll_loss(input, target, log_input=True, full=False, eps=1e-8, reduction='mean'):
    exp(input) - target * input (log_input), else input - target * log(input + eps); full adds
    Stirling's term target * log(target) - target + 0.5 * log(2 pi target) where target > 1."""
    _check_tensor(input, "poisson_nll_loss")
    _check_tensor(target, "poisson_nll_loss", "target")
    if size_average is not None or reduce is not None:
        reduction = _get_reduction(size_average, reduce, "mean")
    _check_reduction(reduction, "is not a valid value for reduction")
    if log_input:
        loss = _ops.exp(input) - target * input
    else:
        loss = input - target * _ops.log(input + eps)
    if full:
        stirling = target * _ops.log(target) - target + 0.5 * _ops.log(2 * _math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


# ---------------- triplets ----------------
def _check_triplet_dims(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == p and p == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
    reduction='mean') = max(0, margin + d(a, p) - d(a, n)), d = pairwise_distance(., ., p, eps)
    over the last dim; swap uses min(d(a, n), d(p, n))."""
    _check_tensor(anchor, "triplet_margin_loss", "anchor")
    _check_tensor(positive, "triplet_margin_loss", "positive")
    _check_tensor(negative, "triplet_margin_loss", "negative")
    reduction = _get_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = _ops.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_ops.clamp_min(margin + dist_pos - dist_neg, 0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
    margin=1.0, swap=False, reduction='mean') = max(0, margin + d(a, p) - d(a, n)) for any
    distance function d (default pairwise_distance); swap uses min(d(a, n), d(p, n))."""
    _check_tensor(anchor, "triplet_margin_with_distance_loss", "anchor")
    _check_tensor(positive, "triplet_margin_with_distance_loss", "positive")
    _check_tensor(negative, "triplet_margin_with_distance_loss", "negative")
    _check_reduction(reduction, "is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = _ops.minimum(dist_neg, distance_function(positive, negative))
    return _reduce(_ops.clamp_min(margin + dist_pos - dist_neg, 0), reduction)
