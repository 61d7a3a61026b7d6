"""symtrace.nn.init: in-place parameter initializers, as torch.nn.init. Every
one runs under no_grad and writes into the tensor with copy_/fill_, drawing
from symtrace's generator (seed it with symtrace.manual_seed). orthogonal_
(its QR), sparse_ (its per-column permutations), eye_ and dirac_ build their
values on the host with numpy (init is not compiled) and copy them in.
Each random initializer takes generator= (a symtrace.Generator): the draws
then come from it, the global generator untouched."""
import math
import warnings

import numpy as np

from .. import _generator, _ops
from .parameter import _no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch.nn.init.calculate_gain)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _host(array):
    """A symtrace tensor of a numpy array's values (symtrace.tensor, looked up
    at call time: the package has finished importing by then)."""
    from .. import tensor
    return tensor(np.ascontiguousarray(array))


def _write(tensor, value):
    with _no_grad():
        tensor.copy_(value)
    return tensor


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills tensor with U(a, b)."""
    if generator is not None:
        return _generator.run(generator, uniform_, tensor, a, b)
    u = _ops.rand(tensor.shape, dtype=tensor.dtype)
    return _write(tensor, u * (b - a) + a)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills tensor with N(mean, std^2)."""
    if generator is not None:
        return _generator.run(generator, normal_, tensor, mean, std)
    n = _ops.randn(tensor.shape, dtype=tensor.dtype)
    return _write(tensor, n * std + mean)


def _as_dtype(value, dtype):
    """value rounded to dtype (a Python number)."""
    return _ops.full((), value, dtype=dtype).item()


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills tensor with N(mean, std^2) truncated to [a, b], as torch: when
    the interval holds more than 0.3 of the mass, by redrawing the normal
    values outside [a, b] (the bounds rounded to the tensor's dtype);
    otherwise by rejection from uniform proposals on [a, b] (accepted with
    probability pdf(x) / pdf(mode))."""
    if generator is not None:
        return _generator.run(generator, trunc_normal_, tensor, mean, std, a, b)
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    shape, dt = tuple(tensor.shape), tensor.dtype
    if tensor.numel() == 0:
        return tensor
    with _no_grad():
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if p > 0.3:
            lo, hi = _as_dtype(a, dt), _as_dtype(b, dt)
            x = _ops.randn(shape, dtype=dt) * std + mean
            while True:
                bad = (x < lo).logical_or(x > hi)
                if not bool(bad.any().item()):
                    break
                x = _ops.where(bad, _ops.randn(shape, dtype=dt) * std + mean, x)
        else:
            mode = max(a, min(mean, b))
            log_peak = -0.5 * ((mode - mean) / std) ** 2

            def propose():
                c = _ops.rand(shape, dtype=dt) * (b - a) + a
                log_pdf = ((c - mean) / std) ** 2 * -0.5 - log_peak
                return c, _ops.rand(shape, dtype=dt).log() > log_pdf     # rejected

            x, pending = propose()
            while bool(pending.any().item()):
                c, rejected = propose()
                x = _ops.where(pending, c, x)
                pending = pending.logical_and(rejected)
        return _write(tensor, x)


def constant_(tensor, val):
    with _no_grad():
        tensor.fill_(val)
    return tensor


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    """Fills a 2-D tensor with the identity (ones on the main diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, _host(np.eye(*tuple(tensor.shape), dtype=np.float64)))


def dirac_(tensor, groups=1):
    """Fills a 3-, 4- or 5-D (convolution weight) tensor with the Dirac delta:
    each of the min(out / groups, in) first channels of every group passes
    its input channel through at the kernel's centre."""
    dimensions = tensor.dim()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    v = np.zeros(sizes, dtype=np.float64)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min_dim):
            v[(g * out_chans_per_grp + d, d) + centre] = 1
    return _write(tensor, _host(v))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    if generator is not None:
        return _generator.run(generator, xavier_uniform_, tensor, gain)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0, generator=None):
    if generator is not None:
        return _generator.run(generator, xavier_normal_, tensor, gain)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if generator is not None:
        return _generator.run(generator, kaiming_uniform_, tensor, a, mode, nonlinearity)
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def _default_layer_init_(weight, bias):
    """The reset_parameters of torch's Linear and Conv layers: weight
    kaiming_uniform_(a=sqrt(5)), bias uniform within +-1/sqrt(fan_in)."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if generator is not None:
        return _generator.run(generator, kaiming_normal_, tensor, a, mode, nonlinearity)
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std)


def _orthogonal(flattened, gain=1.0):
    """torch's orthogonal_ on a (rows, cols) matrix of normal draws (numpy):
    the Q of its QR (of its transpose when rows < cols) with the signs of R's
    diagonal, times gain."""
    rows, cols = flattened.shape
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return q * gain


def orthogonal_(tensor, gain=1, generator=None):
    """Fills tensor (2-D or more, viewed as rows = size(0) by the rest) with a
    (semi-)orthogonal matrix: the QR of a normal draw, as torch (the QR on the
    host in float64)."""
    if generator is not None:
        return _generator.run(generator, orthogonal_, tensor, gain)
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    draw_dt = _ops.float64 if tensor.dtype == _ops.float64 else _ops.float32
    flat = np.asarray(_ops.randn((rows, cols), dtype=draw_dt).numpy(), dtype=np.float64)
    q = _host(_orthogonal(flat))
    with _no_grad():
        tensor.copy_(q.reshape(tuple(tensor.shape)))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fills a 2-D tensor with N(0, std^2) and zeroes ceil(sparsity * rows)
    random entries of every column (a random permutation per column, from
    symtrace's generator)."""
    if generator is not None:
        return _generator.run(generator, sparse_, tensor, sparsity, std)
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    num_zeros = math.ceil(sparsity * rows)
    n = _ops.randn((rows, cols), dtype=tensor.dtype) * std
    if rows and cols and num_zeros > 0:
        perms = np.argsort(np.asarray(_ops.rand((cols, rows), dtype=_ops.float32).numpy()), axis=1,
                           kind="stable")
        mask = np.zeros((rows, cols), dtype=bool)
        mask[perms[:, :num_zeros].T, np.arange(cols)[None, :]] = True
        n = _ops.where(_host(mask), _ops.zeros((), dtype=tensor.dtype), n)
    return _write(tensor, n)


def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"{old_name}(...): deprecated, use {new_name}."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
