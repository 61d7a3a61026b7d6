"""batch_norm and instance_norm (torch.nn.functional's), with torch's signatures, checks
and messages, written over symtrace's differentiable ops (mean, multiply, rsqrt): the
gradients of input, weight and bias come from theirs, and symtrace.compile traces them.

Training statistics are the mean and the biased variance over (N, *spatial) per channel
(instance_norm: over *spatial per sample and channel). The running statistics are updated
in place under no_grad, as torch's: running = (1 - momentum) * running + momentum * stat,
the variance unbiased (n / (n - 1)). momentum may be a tensor (BatchNorm's cumulative
average, 1 / num_batches_tracked, so that no tensor value is read on the host).

batch_norm is dyn_inline (symtrace/_symint.py): under symtrace.compile(dynamic=True) its
shape math stays symbolic, and the unbiasing factor is a tensor computed from an expanded
view of the reduced sizes, not a Python float of one call's sizes."""
from .. import _ops
from ..autograd import no_grad as _no_grad
from .._ops import _check_tensor
from .._symint import dyn_inline
from ..compiler import is_compiling as _is_compiling


@dyn_inline
def _verify_batch_size(size):
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {tuple(size)}")


def _verify_spatial_size(size):
    size_prods = 1
    for i in range(2, len(size)):
        size_prods *= size[i]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {tuple(size)}")


@dyn_inline
def _check_features(name, t, c, times=1):
    if t is not None and t.numel() * times != c:
        raise RuntimeError(f"{name} should contain {c} elements not {t.numel() * times}")


def _update_running(running, stat, momentum):
    """running <- (1 - momentum) * running + momentum * stat, in place, without autograd."""
    with _no_grad():
        stat = stat.detach()
        if stat.dtype != running.dtype:
            stat = stat.to(running.dtype)
        running.copy_(running * (1 - momentum) + stat * momentum)


@dyn_inline
def _normalize(input, running_mean, running_var, weight, bias, training, momentum, eps, dims):
    """The shared body: (input - mean) / sqrt(var + eps) * weight + bias with the
    statistics over dims (training) or the running ones; the running statistics updated
    in training."""
    nd = input.dim()
    c = input.shape[1]
    cshape = (1, c) + (1,) * (nd - 2)
    if training:
        mean = input.mean(dims, keepdim=True)
        d = input - mean
        var = (d * d).mean(dims, keepdim=True)
        y = d * _ops.rsqrt(var + eps)
        if running_mean is not None:
            n = 1
            for i in dims:
                n *= input.shape[i]
            _update_running(running_mean, mean.reshape(c) if 0 in dims else mean.reshape(-1, c).mean(0), momentum)
            if not _is_compiling():
                unbiased = var * (n / (n - 1)) if n > 1 else var
            elif n > 1:
                # traced (inlined under dynamic shapes): n as a tensor, the sum of a
                # view of a one expanded to the reduced sizes, so that the graph
                # holds at every size
                cnt = _ops.ones((), dtype=var.dtype).expand([input.shape[i] for i in dims]).sum()
                unbiased = var * (cnt / (cnt - 1))
            else:
                unbiased = var
            _update_running(running_var, unbiased.reshape(c) if 0 in dims else unbiased.reshape(-1, c).mean(0),
                            momentum)
    else:
        rm, rv = running_mean, running_var
        if rm.dtype != input.dtype:
            rm, rv = rm.to(input.dtype), rv.to(input.dtype)
        y = (input - rm.reshape(cshape)) * _ops.rsqrt(rv.reshape(cshape) + eps)
    if weight is not None:
        y = y * weight.reshape(cshape)
    if bias is not None:
        y = y + bias.reshape(cshape)
    return y


@dyn_inline
def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    """batch_norm without the Python-level checks (momentum may be a tensor)."""
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(input.dim(), 1)}, "
                         f"{max(input.dim(), 1) - 1}], but got 1)")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None:
            _check_features(name, t, c)
        elif not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    _check_features("weight", weight, c)
    _check_features("bias", bias, c)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"batch_norm\" not implemented for '{_ops._tname(input.dtype)}'")
    dims = (0,) + tuple(range(2, input.dim()))
    return _normalize(input, running_mean, running_var, weight, bias, training, momentum, eps, dims)


@dyn_inline
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """batch_norm(input [N, C, *], running_mean, running_var, weight=None, bias=None,
    training=False, momentum=0.1, eps=1e-5): per channel, normalizes with the batch's
    statistics (training; the running ones, when given, are updated in place) or with the
    running statistics (eval)."""
    _check_tensor(input, "batch_norm")
    if training:
        _verify_batch_size(tuple(input.shape))
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if momentum is None:
        raise TypeError("batch_norm(): argument 'momentum' (position 7) must be float, not NoneType")
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """instance_norm(input [N, C, *], running_mean=None, running_var=None, weight=None, bias=None,
    use_input_stats=True, momentum=0.1, eps=1e-5): per sample and channel, normalizes over the
    spatial dims (use_input_stats; the running statistics, when given, are updated with the
    batch mean of the instances' ones) or with the running statistics."""
    _check_tensor(input, "instance_norm")
    if use_input_stats:
        _verify_spatial_size(tuple(input.shape))
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(input.dim(), 1)}, "
                         f"{max(input.dim(), 1) - 1}], but got 1)")
    n, c = input.shape[0], input.shape[1]
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        _check_features(name, t, n * c, n)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"batch_norm\" not implemented for '{_ops._tname(input.dtype)}'")
    dims = tuple(range(2, input.dim()))
    return _normalize(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps, dims)


def _torch_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
    cudnn_enabled) (cudnn_enabled is ignored)."""
    _check_tensor(input, "batch_norm")
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _torch_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                         cudnn_enabled):
    """torch.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
    eps, cudnn_enabled) (cudnn_enabled is ignored)."""
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


_torch_batch_norm.__name__ = _torch_batch_norm.__qualname__ = "batch_norm"
_torch_instance_norm.__name__ = _torch_instance_norm.__qualname__ = "instance_norm"
