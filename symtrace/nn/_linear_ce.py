"""linear_cross_entropy (torch.nn.functional's, torch 2.13): cross_entropy of a linear map of
the input; with it the module LinearCrossEntropyLoss and LinearCrossEntropyOptions. torch's
options choose a chunked kernel that saves memory; the result is the reference one
(linear then cross_entropy), which is what symtrace computes for any options."""
import dataclasses
import math

from .modules.linear import Linear
from .modules.loss import _WeightedLoss


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """How torch's chunked linear_cross_entropy splits its work; accepted and kept, the result
    does not depend on it."""
    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
    reduction='mean', ignore_index=None, label_smoothing=0.0, options=None) =
    cross_entropy(linear(input, linear_weight, linear_bias), target, ...): linear_weight is
    (C, in_features) or (C, d_1, ..., d_K, in_features) for a K-dimensional loss; ignore_index
    None is -100 (not allowed with class probabilities). As torch's."""
    from . import functional as F
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{in_features} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes,) + out_features:
        raise RuntimeError(f"expected linear_bias shape {(num_classes,) + out_features}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
                           f"requires batched input, (N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = batches + (num_classes,) + out_features
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if out_features:
        rows = math.prod(out_features) * num_classes
        linear_weight = linear_weight.reshape(rows, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(rows)
    logits = F.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction,
                           ignore_index=-100 if ignore_index is None else ignore_index,
                           label_smoothing=label_smoothing)


class LinearCrossEntropyLoss(_WeightedLoss):
    """cross_entropy of self.linear(input): a Linear(in_features, num_classes *
    prod(out_features), bias) whose weight is read as (num_classes, *out_features,
    in_features); as torch.nn.LinearCrossEntropyLoss."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if not 0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features) * num_classes, bias=bias,
                             device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        shape = (self.num_classes,) + self.out_features
        w = self.linear.weight.reshape(shape + (self.linear.in_features,))
        b = self.linear.bias.reshape(shape) if self.linear.bias is not None else None
        return linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                    reduction=self.reduction, ignore_index=self.ignore_index,
                                    label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
