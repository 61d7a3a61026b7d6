"""symtrace.nn.utils.fusion: folding an eval-mode BatchNorm into the
convolution or linear layer before it (fuse_conv_bn_eval,
fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights), as
torch.nn.utils.fusion."""
import copy

from ... import _ops
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of conv (eval mode) whose weight and bias also apply bn (eval
    mode): conv then bn in one layer; transpose for a ConvTranspose."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_conv = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(fused weight, fused bias), two Parameters: conv_w * gamma / sqrt(var + eps)
    per output channel and (conv_b - mean) * gamma / sqrt(var + eps) + beta."""
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_b.dtype if conv_b is not None else conv_weight_dtype
    if conv_b is None:
        conv_b = _ops.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = _ops.ones_like(bn_rm)
    if bn_b is None:
        bn_b = _ops.zeros_like(bn_rm)
    bn_var_rsqrt = _ops.rsqrt(bn_rv + bn_eps)
    if transpose:
        shape = [1, -1] + [1] * (len(conv_w.shape) - 2)
    else:
        shape = [-1, 1] + [1] * (len(conv_w.shape) - 2)
    fused_conv_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(dtype=conv_weight_dtype)
    fused_conv_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(dtype=conv_bias_dtype)
    return (Parameter(fused_conv_w, conv_w.requires_grad), Parameter(fused_conv_b, conv_b.requires_grad))


def fuse_linear_bn_eval(linear, bn):
    """A copy of linear (eval mode) whose weight and bias also apply bn (eval
    mode, num_features equal to out_features or 1)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_linear = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1, "
                             f"got linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(fused weight, fused bias), two Parameters: linear_w * gamma / sqrt(var + eps)
    per row and (linear_b - mean) * gamma / sqrt(var + eps) + beta."""
    linear_weight_dtype = linear_w.dtype
    linear_bias_dtype = linear_b.dtype if linear_b is not None else linear_weight_dtype
    if linear_b is None:
        linear_b = _ops.zeros_like(bn_rm)
    bn_scale = bn_w * _ops.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=linear_weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=linear_bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
