"""symtrace.nn.functional: PyTorch's functional layer ops."""
from .. import _C, _ops
from .._ops import (relu, softmax, log_softmax, KEEPDIM, HAS_WEIGHT, HAS_BIAS, TANH, _attrs,  # noqa: F401
                    _check_tensor, sigmoid, tanh)


def gelu(input, approximate="none"):
    """gelu(input, approximate='none'|'tanh')."""
    _check_tensor(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got '{approximate}'")
    return _C.op(_C.OP_GELU, (input,), _attrs(flags=TANH if approximate == "tanh" else 0))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)."""
    _check_tensor(input, "layer_norm")
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or k > input.dim() or tuple(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size "
                           f"{list(input.shape)}")
    ins = [input]
    flags = 0
    if weight is not None:
        ins.append(weight)
        flags |= HAS_WEIGHT
    if bias is not None:
        ins.append(bias)
        flags |= HAS_BIAS
    # attrs.ndims carries the normalized dim count (dims are those dims)
    a = (None, (float(eps),), tuple(range(input.dim() - k, input.dim())), flags, None)
    return _C.op(_C.OP_LAYER_NORM, tuple(ins), a)


def linear(input, weight, bias=None):
    """linear(input, weight, bias=None) = input @ weight.T + bias."""
    ins = (input, weight) if bias is None else (input, weight, bias)
    return _C.op(_C.OP_LINEAR, ins, _attrs(flags=HAS_BIAS if bias is not None else 0))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """embedding(input, weight, padding_idx=None): rows of weight."""
    if max_norm is not None:
        raise NotImplementedError("embedding(max_norm=...) is not supported")
    pi = -1 if padding_idx is None else padding_idx
    return _C.op(_C.OP_EMBEDDING, (weight, input), _attrs(ints=(pi,)))


def dropout(input, p=0.5, training=True, inplace=False):
    """dropout(input, p=0.5, training=True): zeroes with probability p, scales by 1/(1-p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    _check_tensor(input, "dropout")
    if not training or p == 0.0:
        return input
    return _C.op(_C.OP_DROPOUT, (input,), _attrs(floats=(float(p),)))


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """cross_entropy(input [N, C] or [C], target [N] or [], ignore_index=-100, reduction='mean')."""
    if weight is not None or label_smoothing:
        raise NotImplementedError("cross_entropy: weight and label_smoothing are not supported yet")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _check_tensor(input, "cross_entropy")
    _check_tensor(target, "cross_entropy", "target")
    squeeze = input.dim() == 1
    spatial = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.dim() > 2 else None
    if squeeze:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    if input.dim() > 2:  # [N, C, d...] -> [N*d..., C]
        c = input.shape[1]
        input = input.permute(0, *range(2, input.dim()), 1).reshape(-1, c)
        target = target.reshape(-1)
    r = _C.op(_C.OP_CROSS_ENTROPY, (input, target), _attrs(ints=(ignore_index, _REDUCTIONS[reduction])))
    if squeeze and reduction == "none":
        r = r.squeeze(0)
    if spatial is not None and reduction == "none":
        r = r.reshape(spatial)
    return r
