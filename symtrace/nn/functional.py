"""symtrace.nn.functional: PyTorch's functional layer ops, with torch's signatures
(names, order, defaults, keyword-only markers; tests/python/test_functional_signatures.py
holds them to it). `inplace=True` writes the result into the input's storage and
returns the input object itself, as torch does (see _write)."""
import math as _math
import warnings as _warnings

from .. import _C, _ops
from ..autograd import no_grad as _no_grad
from .._symint import dyn_inline as _dyn_inline
from .._ops import (KEEPDIM, HAS_WEIGHT, HAS_BIAS, TANH, _attrs,  # noqa: F401
                    _check_tensor, sigmoid, tanh)

_softmax = _ops.softmax
_log_softmax = _ops.log_softmax


# ---------------- in place ----------------
def _check_inplace(input):
    """torch's refusal of an in-place write into a leaf that requires grad (checked
    before any work, with torch's message; views and the rest are the write's own
    checks, in runtime/eager.c)."""
    if input.requires_grad and input.is_leaf and _C._is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _write(input, fn, name, *args, reads_input=True):
    """input = fn(input, *args) in place; returns input itself (torch's inplace=True).
    The write is Tensor.copy_, so the version counter is bumped and autograd's checks
    apply: a tensor saved for backward and overwritten raises at backward time.
    reads_input: fn's backward keeps input's values (x * sigmoid(x) saves x); under
    autograd fn then reads a copy of input, as torch's in-place forms save the
    original. Where the backward only keeps masks or fn's own results (where, exp),
    no copy is made."""
    _check_inplace(input)
    if reads_input:
        return input._via(fn, name, *args)
    return input._assign(fn(input, *args), name)


def relu(input, inplace=False):
    """relu(input, inplace=False) = max(input, 0)."""
    _check_tensor(input, "relu")
    if inplace:
        _check_inplace(input)
        return input.relu_()
    return _ops.relu(input)


def relu_(input):
    """relu_(input): relu in place, returns input."""
    return relu(input, inplace=True)


def _get_softmax_dim(name, ndim, stacklevel):
    _warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                   "Change the call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(input, dim=None, dtype=None) along dim; dim None is torch's deprecated
    implicit choice (0 for 0-, 1- and 3-d inputs, else 1) with its warning. dtype:
    input is cast to it first."""
    _check_tensor(input, "softmax")
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log_softmax(input, dim=None, dtype=None), as softmax."""
    _check_tensor(input, "log_softmax")
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _log_softmax(input, dim, dtype=dtype)


def gelu(input, *, approximate="none"):
    """gelu(input, *, approximate='none'|'tanh')."""
    _check_tensor(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got '{approximate}'")
    if approximate == "none" and input.requires_grad and input.dtype in (_C.float32, _C.float64):
        # erf(x / sqrt(2)) + 1, given to the op: the forward stores it (in a
        # compiled graph, from the epilogue that computes it anyway) and the
        # gradient reads it back instead of evaluating erf again (no
        # gradient flows into it: the op's rule is the whole derivative)
        with _no_grad():
            e1 = _ops.erf(input * 0.7071067811865476) + 1.0
        return _C.op(_C.OP_GELU, (input, e1), _attrs())
    return _C.op(_C.OP_GELU, (input,), _attrs(flags=TANH if approximate == "tanh" else 0))


@_dyn_inline
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5). Inlined under
    dynamic=True: its check of input's last dims against normalized_shape becomes a guard."""
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
    """linear(input, weight, bias=None) = input @ weight.T + bias. A 1-D weight (in,)
    gives input @ weight (the last dim contracted away), as torch's."""
    if isinstance(weight, _C.TensorBase) and weight.dim() == 1 and isinstance(input, _C.TensorBase):
        out = input.matmul(weight)
        return out if bias is None else out + bias
    if (isinstance(weight, _C.TensorBase) and isinstance(input, _C.TensorBase) and weight.dim() == 2
            and (weight.numel() == 0 or input.numel() == 0)):
        # zero-width layers (AdaptiveLogSoftmaxWithLoss' small tails): OP_LINEAR's
        # backward reshapes to [-1, 0], which has no answer for 0 elements
        out = input.matmul(weight.t())
        return out if bias is None else out + bias
    ins = (input, weight) if bias is None else (input, weight, bias)
    return _C.op(_C.OP_LINEAR, ins, _attrs(flags=HAS_BIAS if bias is not None else 0))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
    scale_grad_by_freq=False, sparse=False): rows of weight. padding_idx (negative
    counts from the end) gets no gradient; max_norm renormalizes, in place and without
    gradient, the rows input reads whose norm_type-norm exceeds it (torch's
    embedding_renorm_); scale_grad_by_freq divides each row's gradient by how often
    input reads it. sparse=True (a sparse gradient) is not supported."""
    _check_tensor(weight, "embedding", "weight")
    _check_tensor(input, "embedding", "indices")
    n = weight.shape[0] if weight.dim() else 0
    if padding_idx is not None:
        if isinstance(padding_idx, bool) or not isinstance(padding_idx, int):
            raise TypeError(f"embedding(): argument 'padding_idx' must be int, not {type(padding_idx).__name__}")
        # torch asserts (AssertionError); symtrace raises no AssertionError on user input
        if (padding_idx > 0 and padding_idx >= n) or padding_idx < -n:
            raise ValueError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            padding_idx = n + padding_idx
    if sparse:
        raise NotImplementedError("embedding(sparse=True): symtrace has no sparse gradients (the gradient "
                                  "would be dense); use sparse=False")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    pi = -1 if padding_idx is None else padding_idx
    r = _C.op(_C.OP_EMBEDDING, (weight, input), _attrs(ints=(pi,)))
    if scale_grad_by_freq and r.requires_grad:
        with _no_grad():
            flat = input.reshape(-1)
            counts = _ops.zeros((n,), dtype=weight.dtype, device=weight.device).scatter_add(
                0, flat, _ops.ones(tuple(flat.shape), dtype=weight.dtype, device=weight.device))
            inv = (1.0 / counts.index_select(0, flat)).reshape(tuple(input.shape) + (1,))
        # d + (r - d) * inv: r's values (r - d is 0) with r's gradient times inv; a
        # traced graph keeps it (a hook would not be replayed by a compiled graph);
        # inf/nan rows (where r - d is nan) keep r and its unscaled gradient
        d = r.detach()
        r = _ops.where(_ops.isfinite(d), d + (r - d) * inv, r)
    return r


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """torch.embedding_renorm_: each row of weight that input reads, with a
    norm_type-norm above max_norm, is scaled by max_norm / (norm + 1e-7), in place
    and without gradient."""
    with _no_grad():
        flat = input.reshape(-1)
        rows = weight.index_select(0, flat)
        norms = _norm(rows, norm_type, 1, keepdim=True)
        scale = _ops.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, flat, (rows * scale).to(weight.dtype))   # repeated rows write one value


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """dropout(input, p=0.5, training=True, inplace=False): zeroes each element with
    probability p and scales the rest by 1/(1-p); input itself when not training or
    p == 0, input * 0 when p == 1 (as torch)."""
    _check_p(p)
    _check_tensor(input, "dropout")
    if not training or p == 0.0:
        return input
    if p == 1.0:  # x * 0, as torch: NaN and inf give NaN, negatives -0.0
        return input.mul_(0) if inplace else input * 0
    if inplace:   # the backward keeps only the mask
        return _write(input, lambda x: _C.op(_C.OP_DROPOUT, (x,), _attrs(floats=(float(p),))), "dropout_",
                      reads_input=False)
    return _C.op(_C.OP_DROPOUT, (input,), _attrs(floats=(float(p),)))


_ALPHA_DROPOUT = 1.7580993408473766   # -SELU's negative saturation (scale * alpha)


def _dropout_impl(input, p, training, inplace, feature, alpha, name, unbatched=False):
    """torch's _dropout_impl for the feature (whole channels: noise [N, C, 1, ...]) and
    alpha forms: x * noise, plus b for alpha; input itself when p == 0, not training
    or empty. unbatched: input has no batch dim (its channels are dim 0)."""
    _check_p(p)
    _check_tensor(input, name)
    if p == 0.0 or not training or input.numel() == 0:
        return input
    if p == 1.0:
        def f(x):
            return x * 0
    else:
        if not input.dtype.is_floating_point:
            raise NotImplementedError(f"\"{name}\" not implemented for '{_tname(input.dtype)}'")
        shape = tuple(input.shape)
        if feature:
            bshape = (1,) + shape if unbatched else shape
            if len(bshape) < 2:
                raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
            shape = bshape[:2] + (1,) * (len(bshape) - 2)
            if unbatched:
                shape = shape[1:]
        dt = input.dtype
        with _no_grad():
            u = _ops.rand(shape, dtype=_ops.float64 if dt is _ops.float64 else _ops.float32, device=input.device)
            keep = _ops.lt(u, 1.0 - p).to(dt)
            if alpha:
                a = 1.0 / _math.sqrt((_ALPHA_DROPOUT * _ALPHA_DROPOUT * p + 1) * (1 - p))
                b = (keep - 1.0) * (_ALPHA_DROPOUT * a) + _ALPHA_DROPOUT * a * p
                noise = keep * a
            else:
                noise, b = keep / (1.0 - p), None

        def f(x):
            r = x * noise
            return r if b is None else r + b
    if inplace:   # x * noise (+ b): the backward keeps only the noise
        return _write(input, f, name + "_", reads_input=False)
    return f(input)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout(input, p=0.5, training=False, inplace=False): dropout for SELU
    networks: dropped elements become SELU's negative saturation, then an affine map
    keeps the mean and variance (torch's formula)."""
    return _dropout_impl(input, p, training, inplace, False, True, "alpha_dropout")


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """feature_alpha_dropout(input [N, C, *], p=0.5, training=False, inplace=False):
    alpha_dropout of whole channels."""
    return _dropout_impl(input, p, training, inplace, True, True, "feature_alpha_dropout")


def dropout1d(input, p=0.5, training=True, inplace=False):
    """dropout1d(input [N, C, L] or [C, L], p=0.5, training=True, inplace=False):
    zeroes whole channels with probability p, scales the rest by 1/(1-p)."""
    _check_p(p)
    _check_tensor(input, "dropout1d")
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that dropout1d "
                           "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _dropout_impl(input, p, training, inplace, True, False, "dropout1d", unbatched=nd == 2)


def _warn_channel_dims(k, nd):
    """torch's warning for a dropout{k}d input of another rank than k+1 or k+2."""
    _warnings.warn(f"dropout{k}d: Received a {nd}-D input to dropout{k}d, which is deprecated and will result "
                   f"in an error in a future release. To retain the behavior and silence this warning, please "
                   f"use dropout instead. Note that dropout{k}d exists to provide channel-wise dropout on inputs "
                   f"with {k} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                   f"{k + 1}D or {k + 2}D inputs).", stacklevel=3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """dropout2d(input [N, C, H, W], p=0.5, training=True, inplace=False): channel
    dropout; a 3-d input is taken as [N, C, L] with torch's warning."""
    _check_p(p)
    _check_tensor(input, "dropout2d")
    nd = input.dim()
    if nd not in (3, 4):
        _warn_channel_dims(2, nd)
    if nd == 3:
        _warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                       "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
                       "dim. This behavior will change in a future release to interpret the input as one without "
                       "a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                       "behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, True, False, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """dropout3d(input [N, C, D, H, W] or [C, D, H, W], p=0.5, training=True,
    inplace=False): channel dropout."""
    _check_p(p)
    _check_tensor(input, "dropout3d")
    nd = input.dim()
    if nd not in (4, 5):
        _warn_channel_dims(3, nd)
    return _dropout_impl(input, p, training, inplace, True, False, "dropout3d", unbatched=nd != 5)


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """cross_entropy(input [N, C] / [C] / [N, C, d...] of logits, target, weight=None,
    ignore_index=-100, reduction='mean', label_smoothing=0.0), as torch: target holds
    class indices ([N] / [] / [N, d...]) or, shaped as input, class probabilities;
    weight rescales each class; label_smoothing mixes the target with the uniform
    distribution over the C classes."""
    _check_tensor(input, "cross_entropy")
    _check_tensor(target, "cross_entropy", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    if tuple(input.shape) == tuple(target.shape) and input.dim() > 0:
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing)
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        return _cross_entropy_smoothed(input, target, weight, ignore_index, reduction, label_smoothing)
    if weight is not None:
        cd = 0 if input.dim() == 1 else 1
        return nll_loss(_log_softmax(input, cd), target, weight, None, ignore_index, None, reduction)
    squeeze = input.dim() == 1
    spatial = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.dim() > 2 else None
    if squeeze:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    if input.dim() > 2:  # [N, C, d...] -> [N*d..., C]
        c = input.shape[1]
        input = input.permute(0, *range(2, input.dim()), 1).reshape(-1, c)
        target = target.reshape(-1)
    ops = (input, target)
    if input.dtype in (_C.float32, _C.float64) and input.shape[1] > 0:
        # the rows' log-sum-exp, given to the op: its gradient is then one
        # exp per point, fused into the gradient's kernel, instead of a
        # softmax recomputed over every row (no gradient flows into lse: the
        # op's rule is the whole derivative)
        with _no_grad():
            lse = input.logsumexp(1, keepdim=True)
        ops = (input, target, lse)
    r = _C.op(_C.OP_CROSS_ENTROPY, ops, _attrs(ints=(ignore_index, _REDUCTIONS[reduction])))
    if squeeze and reduction == "none":
        r = r.squeeze(0)
    if spatial is not None and reduction == "none":
        r = r.reshape(spatial)
    return r


def _class_weight(weight, input, cd, c):
    """weight [C] checked and shaped to broadcast along input's class dim cd."""
    _check_tensor(weight, "cross_entropy", "weight")
    if weight.dim() != 1 or weight.shape[0] != c:
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {c} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    return weight.reshape((c,) + (1,) * (input.dim() - cd - 1))


def _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing):
    """torch's cross_entropy_loss_prob_target: -sum_c w_c t_c log_softmax(x)_c, the
    mean over the points (not the weights)."""
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_tname(target.dtype)}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    cd = 0 if input.dim() == 1 else 1
    c = input.shape[cd]
    lp = _log_softmax(input, cd)
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        target = target * (1 - label_smoothing) + label_smoothing / c
    r = lp * target
    if weight is not None:
        r = r * _class_weight(weight, input, cd, c)
    if reduction == "none":
        return -r.sum(cd)
    if reduction == "sum":
        return -r.sum()
    n = input.numel() // c if c else 0
    return -r.sum() / n if n else -r.sum() * float("nan")


def _cross_entropy_smoothed(input, target, weight, ignore_index, reduction, label_smoothing):
    """torch's cross_entropy_loss_label_smoothing: (1 - s) * nll_loss + s / C *
    the smoothing term -sum_c w_c log_softmax(x)_c (0 at ignored targets; 'mean'
    divides by the weights of the targets, as nll_loss)."""
    cd = 0 if input.dim() == 1 else 1
    c = input.shape[cd]
    lp = _log_softmax(input, cd)
    nll = nll_loss(lp, target, weight, None, ignore_index, None, reduction)
    ignored = target == ignore_index
    if weight is not None:
        smooth = -(lp * _class_weight(weight, input, cd, c)).sum(cd)
    else:
        smooth = -lp.sum(cd)
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    elif weight is not None:
        safe = _ops.where(ignored, 0, target)
        w = weight.index_select(0, safe.reshape(-1)).reshape(safe.shape)
        ret = smooth.sum() / _ops.where(ignored, 0.0, w).sum()
    else:
        ret = smooth.sum() / ignored.logical_not().sum()
    return nll * (1 - label_smoothing) + ret * (label_smoothing / c)


# ---------------- losses, attention (composed of the ops above) ----------------
def _weighted_reduce(r, weight, input, reduction):
    """The pointwise loss r reduced, weighted elementwise when weight is given (a
    weighted mean divides by the weights' sum), as torch's mse_loss / l1_loss."""
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        r = r * weight
        if reduction == "mean":
            return r.sum() / weight.sum()
    return _reduce(r, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """mse_loss(input, target, reduction='mean'|'sum'|'none', weight=None) = (input - target)^2,
    input and target broadcast (with torch's warning when their sizes differ); with weight
    (input's size) each squared error is scaled and 'mean' divides by the weights' sum."""
    _check_tensor(input, "mse_loss")
    _check_tensor(target, "mse_loss", "target")
    _warn_size(input, target)
    reduction = _get_reduction(size_average, reduce, reduction)
    d = input - target
    r = d * d
    return _weighted_reduce(r, weight, input, reduction)


@_dyn_inline
def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = not allowed) becomes an additive float mask (-inf / 0);
    a float mask is returned as is (torch.nn.functional._canonical_mask)."""
    if mask is None:
        return None
    _check_tensor(mask, mask_name, mask_name)
    if mask.dtype is not _ops.bool_ and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        _warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for "
                       "both instead.", stacklevel=2)
    if mask.dtype is _ops.bool_:
        return _ops.zeros(mask.shape, dtype=target_type, device=mask.device).masked_fill(mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    """input.dtype, or None for None (torch.nn.functional._none_or_dtype)."""
    if input is None:
        return None
    if isinstance(input, _C.TensorBase):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


@_dyn_inline
def _causal_mask(L, S, dtype, device=None):
    """[L, S] additive mask: -inf above the diagonal."""
    i = _ops.arange(L, device=device).reshape(L, 1)
    j = _ops.arange(S, device=device).reshape(1, S)
    return _ops.zeros((L, S), dtype=dtype, device=device).masked_fill(j > i, float("-inf"))


@_dyn_inline
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, *, scale=None, enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v over the last two dims (torch's SDPA):
    a bool attn_mask marks with True the positions that TAKE PART in attention;
    a float one is added to the scores."""
    import math
    L, S = query.shape[-2], key.shape[-2]
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hk != hv or hk == 0 or hq % hk:
            raise RuntimeError(f"scaled_dot_product_attention: enable_gqa needs the query's heads "
                               f"({hq}) to be a multiple of the key's ({hk}) and value's ({hv})")
        # each key/value head serves hq // hk consecutive query heads (repeat_interleave)
        key = _ops.repeat_interleave(key, hq // hk, -3)
        value = _ops.repeat_interleave(value, hq // hk, -3)
    # no features (E = 0): q @ k^T is all zeros, and so are torch's scores (its 1 / sqrt(0)
    # scales the empty q and k), not a ZeroDivisionError
    E = query.shape[-1]
    scale_factor = (1.0 / math.sqrt(E) if E else 1.0) if scale is None else scale
    qdt = query.dtype
    low = qdt in (_C.float16, _C.bfloat16)
    if low:
        # torch computes half / bfloat16 attention in float32 and rounds only the result
        # (its math path upcasts query, key and value; its CPU flash kernel accumulates
        # in float): scores of a few hundred rounded to bfloat16 are off by whole units
        query, key, value = query.to(_C.float32), key.to(_C.float32), value.to(_C.float32)
    if query.dim() == 4 and dropout_p == 0.0:
        # torch's CPU flash kernel (4-D, no dropout): its backward saves query and key
        scores = _ops.matmul(query, key.transpose(-2, -1)) * scale_factor
    else:
        # torch's math path: query and key each scaled by sqrt(|scale|) before the
        # product, so its backward saves those products, not query and key (an
        # in-place write into them afterwards leaves the gradient computable)
        r = math.sqrt(abs(scale_factor))
        scores = _ops.matmul(query * (-r if scale_factor < 0 else r), key.transpose(-2, -1) * r)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                               "when is_causal=True")
        scores = scores + _causal_mask(L, S, scores.dtype, scores.device)
    dead = None
    if attn_mask is not None and attn_mask.dtype is not _ops.bool_ \
            and attn_mask.dtype != qdt:
        # torch takes a float32 mask for any query dtype (a bf16 / f16 / f64 model
        # with nn.Transformer's float32 masks) in the query's dtype; other mixes raise
        if attn_mask.dtype != _ops.float32:
            raise RuntimeError(
                f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {qdt} instead.")
        attn_mask = attn_mask.to(qdt)
    if attn_mask is not None:
        # a query whose keys are all masked out gets zeros (and zero gradients), not
        # nan, as torch's SDPA (its _safe_softmax): its row is unmasked, then zeroed
        if attn_mask.dtype is _ops.bool_:
            dead = attn_mask.logical_not().all(-1, keepdim=True)
            scores = scores.masked_fill((attn_mask | dead).logical_not(), float("-inf"))
        else:
            dead = (attn_mask == float("-inf")).all(-1, keepdim=True)
            scores = scores + attn_mask.masked_fill(dead, 0.0)
    attn = softmax(scores, -1)
    if dead is not None:
        attn = attn.masked_fill(dead, 0.0)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    out = _ops.matmul(attn, value)
    return out.to(qdt) if low else out


@_dyn_inline
def _in_projection_packed(q, k, v, w, b=None):
    # dyn_inline: its chunk/split are followed too (run for real, their subscripts'
    # full-range slices would be constants of a dynamic-shape graph)
    E = q.shape[-1]
    if k is v and q is k:  # self-attention: one matmul for q, k and v
        proj = linear(q, w, b)
        return proj.chunk(3, -1)
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    if k is v:
        w_kv = w.split([E, 2 * E])[1]
        b_kv = None if b is None else b.split([E, 2 * E])[1]
        kv = linear(k, w_kv, b_kv).chunk(2, -1)
        return (linear(q, w_q, b_q),) + tuple(kv)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """True for a batched (3-D) query, False for an unbatched (2-D) one; torch's
    AssertionError when key, value or a mask has the wrong number of dims."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                                 f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or "
                                     f"3-D but found {attn_mask.dim()}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                         "query tensor")


@_dyn_inline
def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True, key_padding_mask=None,
                                 need_weights=True, attn_mask=None, use_separate_proj_weight=False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None,
                                 static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch.nn.functional.multi_head_attention_forward for inputs [L, N, E] (or
    unbatched [L, E]); bool masks: True = not allowed, float masks are added.
    use_separate_proj_weight: q/k/v_proj_weight (key and value may have their own
    widths) instead of the packed in_proj_weight; bias_k/bias_v [1, 1, E]: one more
    key/value position; add_zero_attn: one more all-zero key/value position;
    static_k/static_v [N*H, S, E/H]: the keys/values, as given. is_causal with
    need_weights=False and no key_padding_mask: the causal mask replaces attn_mask
    (torch's hint semantics); a query with every key masked out gets zeros there."""
    import math
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask),
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                           "module method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None      # as torch: the hint wins, SDPA applies its own causal mask
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # the merged mask is not causal
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for n_, w_ in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w_ is None:
                raise AssertionError(f"use_separate_proj_weight is True but {n_}_proj_weight is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = (linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k),
                   linear(value, v_proj_weight, b_v))

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should "
                                   f"be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should "
                                   f"be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _ops.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _ops.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # [L, N, E] -> [N*H, L, hd]
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    for name_, st_ in (("k", static_k), ("v", static_v)):
        if st_ is not None:
            if st_.shape[0] != bsz * num_heads:
                raise AssertionError(f"expecting static_{name_}.size(0) of {bsz * num_heads}, but got "
                                     f"{st_.shape[0]}")
            if st_.shape[2] != head_dim:
                raise AssertionError(f"expecting static_{name_}.size(2) of {head_dim}, but got {st_.shape[2]}")
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v

    if add_zero_attn:
        k = _ops.cat([k, _ops.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)], 1)
        v = _ops.cat([v, _ops.zeros((bsz * num_heads, 1, head_dim), dtype=v.dtype, device=v.device)], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        w = _ops.matmul(q_scaled, k.transpose(-2, -1))
        if attn_mask is not None:
            w = w + attn_mask
        w = softmax(w, -1)
        if dropout_p > 0.0:
            w = dropout(w, dropout_p)
        out = _ops.matmul(w, v)                                   # [N*H, L, hd]
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.reshape(tgt_len, bsz, out.shape[-1])      # no -1: bsz or tgt_len may be 0
        w = w.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(1)
        if not is_batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w

    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, attn_mask.shape[-2], src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.reshape(tgt_len, bsz, out.shape[-1])
    if not is_batched:
        out = out.squeeze(1)
    return out, None


# ---------------- helpers for the functions below ----------------
# (each one composes existing ops, so autograd and symtrace.compile see
# ordinary graphs; nothing here branches on tensor values)
_tname = _ops._tname          # torch's scalar type name of a dtype ('Float', 'Long', ...)
_log1p = _ops.log1p


def _finfo_eps(dtype):
    return _ops.finfo(dtype).eps


def _check_float(input, fname):
    """torch's activations refuse integer inputs with this NotImplementedError."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{fname}_cpu" not implemented for \'{_tname(input.dtype)}\'')


def _get_reduction(size_average, reduce, reduction):
    """The reduction string, from the deprecated size_average/reduce if given."""
    if size_average is not None or reduce is not None:   # torch's _Reduction.legacy_get_string
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
        _warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                       "instead.", stacklevel=3)
    if reduction == "elementwise_mean":
        _warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                       stacklevel=3)
        reduction = "mean"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(r, reduction):
    if reduction == "mean":
        return r.mean()
    if reduction == "sum":
        return r.sum()
    return r


def _warn_size(input, target, stacklevel=3):
    if tuple(target.shape) != tuple(input.shape):
        import warnings
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                      f"({tuple(input.shape)}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=stacklevel)


def _broadcast_shape(a, b):
    """The broadcast of shapes a and b, with torch's error."""
    a, b = tuple(a), tuple(b)
    n = len(a) if len(a) > len(b) else len(b)
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                               f"non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _norm(x, p, dim, keepdim=False):
    """The p-norm over dim (torch.norm), a zero gradient (not nan) where it is 0."""
    return _ops.norm(x, p, dim, keepdim)


# ---------------- activations ----------------
def silu(input, inplace=False):
    """silu(input, inplace=False) = input * sigmoid(input)."""
    _check_tensor(input, "silu")
    _check_float(input, "silu")
    if inplace:
        return _write(input, _silu, "silu_")
    return _silu(input)


def _silu(x):
    return x * sigmoid(x)


def mish(input, inplace=False):
    """mish(input, inplace=False) = input * tanh(softplus(input))."""
    _check_tensor(input, "mish")
    _check_float(input, "mish")
    if inplace:
        return _write(input, _mish, "mish_")
    return _mish(input)


def _mish(x):
    return x * tanh(_softplus(x))


def _softplus(z):
    """log(1 + exp(z)) without overflow: max(z, 0) + log1p(exp(-|z|))."""
    return _ops.maximum(z, 0.0) + _log1p(_ops.exp(-z.abs()))


def softplus(input, beta=1, threshold=20):
    """softplus(input, beta=1, threshold=20) = log(1 + exp(beta * x)) / beta; x where beta * x > threshold."""
    _check_tensor(input, "softplus")
    _check_float(input, "softplus")
    z = input * beta if beta != 1 else input
    r = _softplus(z)
    if beta != 1:
        r = r / beta
    return _ops.where(z > threshold, input, r)


def logsigmoid(input):
    """logsigmoid(input) = log(sigmoid(input)) = min(x, 0) - log1p(exp(-|x|))."""
    _check_tensor(input, "logsigmoid")
    _check_float(input, "log_sigmoid")
    # row-major, as torch's log_sigmoid_forward
    return (_ops.minimum(input, 0.0) - _log1p(_ops.exp(-input.abs()))).contiguous()


def _leaky_relu(x, negative_slope):
    return _ops.where(x > 0, x, x * negative_slope)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """leaky_relu(input, negative_slope=0.01, inplace=False) = x if x > 0 else negative_slope * x."""
    _check_tensor(input, "leaky_relu")
    _check_float(input, "leaky_relu")
    if inplace:
        return _write(input, _leaky_relu, "leaky_relu_", negative_slope, reads_input=False)
    return _leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    """leaky_relu_(input, negative_slope=0.01): leaky_relu in place, returns input."""
    return leaky_relu(input, negative_slope, True)


def _elu(input, alpha, scale=1.0, input_scale=1.0):
    neg = input.masked_fill(input > 0, 0.0)   # exp only sees x <= 0 (no inf * 0 in the gradient)
    if input_scale != 1.0:
        neg = neg * input_scale
    r = _ops.where(input > 0, input, (_ops.exp(neg) - 1.0) * alpha)
    return r * scale if scale != 1.0 else r


def _elu_checked(input, alpha, scale, input_scale, inplace, name):
    _check_tensor(input, name)
    _check_float(input, "elu")
    if inplace:   # the backward keeps exp's result and masks, not input
        return _write(input, _elu, name + "_", alpha, scale, input_scale, reads_input=False)
    return _elu(input, alpha, scale, input_scale)


def elu(input, alpha=1.0, inplace=False):
    """elu(input, alpha=1, inplace=False) = x if x > 0 else alpha * (exp(x) - 1)."""
    return _elu_checked(input, alpha, 1.0, 1.0, inplace, "elu")


def elu_(input, alpha=1, scale=1, input_scale=1):
    """elu_(input, alpha=1, scale=1, input_scale=1): in place, returns input (torch's
    aten elu_: scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1)))."""
    return _elu_checked(input, alpha, scale, input_scale, True, "elu")


def selu(input, inplace=False):
    """selu(input, inplace=False) = scale * elu(input, alpha) with torch's alpha and scale."""
    return _elu_checked(input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace, "selu")


def selu_(input):
    """selu_(input): selu in place, returns input."""
    return selu(input, True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def celu(input, alpha=1.0, inplace=False):
    """celu(input, alpha=1, inplace=False) = x if x > 0 else alpha * (exp(x / alpha) - 1)."""
    _check_tensor(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu_checked(input, alpha, 1.0, 1.0 / alpha, inplace, "celu")


def celu_(input, alpha=1.0):
    """celu_(input, alpha=1.0): celu in place, returns input."""
    return celu(input, alpha, True)


def _threshold(x, threshold, value):
    r = _ops.where(x > threshold, x, value)
    return r if r.dtype is x.dtype else r.to(x.dtype)


def threshold(input, threshold, value, inplace=False):
    """threshold(input, threshold, value, inplace=False) = x if x > threshold else value."""
    _check_tensor(input, "threshold")
    if inplace:
        return _write(input, _threshold, "threshold_", threshold, value, reads_input=False)
    return _threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """threshold_(input, threshold, value): threshold in place, returns input."""
    _check_tensor(input, "threshold_")
    return _write(input, _threshold, "threshold_", threshold, value, reads_input=False)


def _hardtanh(x, min_val, max_val):
    if not x.dtype.is_floating_point:
        r = _ops.clamp(x, min_val, max_val)
        return r if r.dtype is x.dtype else r.to(x.dtype)
    return _ops.where(x <= min_val, min_val, _ops.where(x >= max_val, max_val, x))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """hardtanh(input, min_val=-1, max_val=1, inplace=False): clamp, with a zero gradient
    outside (min_val, max_val)."""
    _check_tensor(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype is _C.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if input.dtype is _C.uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    if inplace:
        return _write(input, _hardtanh, "hardtanh_", min_val, max_val, reads_input=False)
    return _hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1, max_val=1):
    """hardtanh_(input, min_val=-1, max_val=1): hardtanh in place, returns input."""
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    """relu6(input, inplace=False) = hardtanh(input, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _rrelu_check(lower, upper):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")


def _rrelu_train(x, lower, upper):
    """x where x >= 0, else x * a, a ~ U(lower, upper) per element (torch's rrelu_with_noise)."""
    with _no_grad():
        u = _ops.rand(tuple(x.shape), dtype=_ops.float64 if x.dtype is _ops.float64 else _ops.float32,
                      device=x.device)
        a = (u * (upper - lower) + lower).to(x.dtype)
        noise = _ops.where(x > 0, 1.0, a).to(x.dtype)
    return x * noise


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """rrelu(input, lower=1/8, upper=1/3, training=False, inplace=False): randomized leaky
    relu: training, each negative x is scaled by a ~ U(lower, upper); otherwise
    leaky_relu with slope (lower + upper) / 2."""
    _check_tensor(input, "rrelu")
    _check_float(input, "rrelu_with_noise")
    _rrelu_check(lower, upper)
    if training:
        if inplace:   # x * noise: the backward keeps only the noise
            return _write(input, _rrelu_train, "rrelu_", lower, upper, reads_input=False)
        r = _rrelu_train(input, lower, upper)
    else:
        r = leaky_relu(input, (lower + upper) / 2, inplace)
    return r if inplace else r.contiguous()     # row-major, as torch's rrelu_with_noise


def rrelu_(input, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """rrelu_(input, lower=1/8, upper=1/3, training=False): rrelu in place, returns input.
    A generator is not supported (symtrace has one global generator)."""
    if generator is not None:
        raise NotImplementedError("rrelu_(generator=...): symtrace has no Generator objects; seed with "
                                  "symtrace.manual_seed")
    return rrelu(input, lower, upper, training, True)


def _hardsigmoid(x):
    return _ops.where(x <= -3.0, 0.0, _ops.where(x >= 3.0, 1.0, x / 6.0 + 0.5))


def hardsigmoid(input, inplace=False):
    """hardsigmoid(input, inplace=False) = relu6(x + 3) / 6 (zero gradient outside (-3, 3))."""
    _check_tensor(input, "hardsigmoid")
    _check_float(input, "hardsigmoid")
    if inplace:
        return _write(input, _hardsigmoid, "hardsigmoid_", reads_input=False)
    return _hardsigmoid(input)


def _hardswish(x):
    return _ops.where(x <= -3.0, 0.0, _ops.where(x < 3.0, x * (x + 3.0) / 6.0, x))


def hardswish(input, inplace=False):
    """hardswish(input, inplace=False) = x * relu6(x + 3) / 6."""
    _check_tensor(input, "hardswish")
    _check_float(input, "hardswish")
    if inplace:
        return _write(input, _hardswish, "hardswish_")
    return _hardswish(input)


def glu(input, dim=-1):
    """glu(input, dim=-1) = a * sigmoid(b), a and b the halves of input along dim."""
    _check_tensor(input, "glu")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _ops._wrap(dim, input.dim(), "glu")
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    _check_float(input, "glu")
    a, b = input.narrow(d, 0, n // 2), input.narrow(d, n // 2, n // 2)     # (split(0) gives one piece)
    return a * sigmoid(b)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmin(input, dim=None, dtype=None) = softmax(-input, dim)."""
    _check_tensor(input, "softmin")
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return softmax(-input, dim, dtype=dtype)


def softsign(input):
    """softsign(input) = x / (1 + |x|)."""
    _check_tensor(input, "softsign")
    return input / (input.abs() + 1)


def tanhshrink(input):
    """tanhshrink(input) = x - tanh(x)."""
    _check_tensor(input, "tanhshrink")
    return input - tanh(input)


def hardshrink(input, lambd=0.5):
    """hardshrink(input, lambd=0.5) = 0 where -lambd <= x <= lambd, else x (NaN stays NaN;
    a zero gradient on the closed band, as torch's)."""
    _check_tensor(input, "hardshrink")
    _check_float(input, "hardshrink")
    band = _ops.logical_and(input >= -lambd, input <= lambd)
    return _ops.where(band, 0.0, input)     # in input's memory order, as torch's


def softshrink(input, lambd=0.5):
    """softshrink(input, lambd=0.5) = x - lambd where x > lambd, x + lambd where x < -lambd,
    else 0; lambd must lie in [0, the dtype's max]."""
    _check_tensor(input, "softshrink")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"softshrink_check\" not implemented for '{_tname(input.dtype)}'")
    top = _ops.finfo(input.dtype).max
    if not 0 <= lambd <= top:
        raise RuntimeError(f"lambda must be in range [0, {top:.6g}] for input dtype {_tname(input.dtype)}, "
                           f"but found {lambd:.6g}")
    return _ops.where(input > lambd, input - lambd, _ops.where(input < -lambd, input + lambd, input * 0))


def prelu(input, weight):
    """prelu(input, weight) = x where x > 0, else weight * x; weight is a scalar or 1-D with one
    slope per channel (dim 1 of a >= 2-d input; a 1-d input has one channel), as torch."""
    _check_tensor(input, "prelu")
    _check_tensor(weight, "prelu", "weight")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_tname(input.dtype)} and "
                           f"{_tname(weight.dtype)}")
    nd = input.dim()
    if weight.numel() != 1:
        if nd == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        c = input.shape[1] if nd > 1 else 1
        if c != weight.numel():
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {c}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    _check_float(input, "prelu")
    w = weight
    if nd != weight.dim():
        shape = [1] * nd
        if nd > 1:
            shape[1] = weight.numel()
        w = weight.reshape(tuple(shape))
    return _ops.where(input > 0, input, w * input)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1): softmax((logits + g) / tau,
    dim), g ~ Gumbel(0, 1) drawn from symtrace's generator; hard=True returns the one-hot of
    its argmax along dim with the soft sample's gradient (straight through: y_hard -
    y_soft.detach() + y_soft). eps is deprecated and unused, with torch's warning."""
    _check_tensor(logits, "gumbel_softmax", "logits")
    if eps != 1e-10:
        _warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    if not logits.dtype.is_floating_point:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. dtype must be "
                           f"a floating point but you specified {_tname(logits.dtype)}")
    with _no_grad():
        # E ~ Exp(1) = -log(1 - U), U ~ U[0, 1); g = -log(E), E kept above 0
        work = _ops.float64 if logits.dtype is _ops.float64 else _ops.float32
        u = _ops.rand(tuple(logits.shape), dtype=work, device=logits.device)
        e = (-_log1p(-u)).clamp(min=_ops.finfo(work).tiny)
        gumbels = (-_ops.log(e)).to(logits.dtype)
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    if y_soft.dim() == 0:   # one element: its own argmax
        y_hard = _ops.ones_like(y_soft)
    else:
        y_hard = _ops.zeros_like(y_soft).scatter(dim, y_soft.argmax(dim, keepdim=True), 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---------------- losses ----------------
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """nll_loss(input [N, C] / [C] / [N, C, d...] of log-probabilities, target [N] / [] / [N, d...],
    weight=None, ignore_index=-100, reduction='mean'): -weight[t] * input[t]; 'mean'
    divides by the sum of the weights of the non-ignored targets."""
    _check_tensor(input, "nll_loss")
    _check_tensor(target, "nll_loss", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    nd = input.dim()
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if target.dtype is not _ops.int64:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_tname(target.dtype)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"nll_loss_out_frame\" not implemented for '{_tname(input.dtype)}'")
    if nd == 1:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.dim() == 1 and target.shape[0] != 1:
            raise ValueError(f"Expected input batch_size (1) to match target batch_size ({target.shape[0]}).")
        x, t = input.unsqueeze(0), target.reshape(1)
    else:
        if target.dim() == 0 or target.shape[0] != input.shape[0]:
            tb = target.shape[0] if target.dim() else 0
            raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({tb}).")
        if nd == 2 and target.dim() != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        want = (input.shape[0],) + tuple(input.shape[2:])
        if tuple(target.shape) != want:
            raise RuntimeError(f"Expected target size {list(want)}, got {list(target.shape)}")
        x, t = input, target
    c = x.shape[1]
    if weight is not None:
        _check_tensor(weight, "nll_loss", "weight")
        if weight.dim() != 1 or weight.shape[0] != c:
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes "
                               f"but got weight tensor of shape: {list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"expected scalar type {_tname(input.dtype)} but found {_tname(weight.dtype)}")
    valid = t != ignore_index
    safe = _ops.where(valid, t, 0)
    if c:
        picked = _ops.gather(x, 1, safe.unsqueeze(1)).squeeze(1)
    else:  # no classes: every target must be ignored
        picked = _ops.zeros(tuple(safe.shape), dtype=x.dtype, device=x.device)
    if weight is None:
        loss = _ops.where(valid, -picked, 0.0)
        total = valid.to(input.dtype).sum() if reduction == "mean" else None
    else:
        w = weight.index_select(0, safe.reshape(-1)).reshape(safe.shape) if c else picked
        loss = _ops.where(valid, -(picked * w), 0.0)
        total = _ops.where(valid, w, 0.0).sum() if reduction == "mean" else None
    if reduction == "none":
        return loss.reshape(()) if nd == 1 else loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / total


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """l1_loss(input, target, reduction='mean', weight=None) = |input - target|
    ('mean' with weight: sum(weight * loss) / sum(weight))."""
    _check_tensor(input, "l1_loss")
    _check_tensor(target, "l1_loss", "target")
    _warn_size(input, target)
    reduction = _get_reduction(size_average, reduce, reduction)
    r = (input - target).abs()
    return _weighted_reduce(r, weight, input, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """smooth_l1_loss(input, target, reduction='mean', beta=1): 0.5 d^2 / beta where
    |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    _check_tensor(input, "smooth_l1_loss")
    _check_tensor(target, "smooth_l1_loss", "target")
    _warn_size(input, target)
    reduction = _get_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = input - target
    a = d.abs()
    if beta == 0:
        return _reduce(a, reduction)
    return _reduce(_ops.where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """huber_loss(input, target, reduction='mean', delta=1, weight=None): 0.5 d^2
    where |d| < delta, else delta * (|d| - 0.5 delta)."""
    _check_tensor(input, "huber_loss")
    _check_tensor(target, "huber_loss", "target")
    _warn_size(input, target)
    reduction = _get_reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = input - target
    a = d.abs()
    r = _ops.where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        r = r * weight
    return _reduce(r, reduction)


def _clamped_log(x):
    """log(x) clamped at -100 (torch's binary_cross_entropy), with a finite
    gradient where x == 0."""
    z = x <= 0
    return _ops.log(x.masked_fill(z, 1.0)).masked_fill(z, -100.0).clamp(min=-100.0)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """binary_cross_entropy(input (probabilities), target, weight=None, reduction='mean')
    = -weight * (t log(x) + (1 - t) log(1 - x)), the logs clamped at -100."""
    _check_tensor(input, "binary_cross_entropy")
    _check_tensor(target, "binary_cross_entropy", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                         f"({tuple(input.shape)}) is deprecated. Please ensure they have the same size.")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {_tname(target.dtype)} but expected {_tname(input.dtype)}")
    r = -(target * _clamped_log(input) + (1.0 - target) * _clamped_log(1.0 - input))
    if weight is not None:
        _check_tensor(weight, "binary_cross_entropy", "weight")
        if _broadcast_shape(target.shape, weight.shape) != tuple(target.shape):
            raise RuntimeError(f"The size of tensor a ({list(weight.shape)}) must match the size of tensor b "
                               f"({list(target.shape)})")
        r = r * weight
    return _reduce(r, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """binary_cross_entropy_with_logits(input (logits), target, weight=None, reduction='mean',
    pos_weight=None) = -weight * (pos_weight * t * logsigmoid(x) + (1 - t) * logsigmoid(-x)),
    computed stably."""
    _check_tensor(input, "binary_cross_entropy_with_logits")
    _check_tensor(target, "binary_cross_entropy_with_logits", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({tuple(target.shape)}) must be the same as input size "
                         f"({tuple(input.shape)})")
    ls = logsigmoid(input)
    if pos_weight is not None:
        _broadcast_shape(target.shape, pos_weight.shape)
        r = (1.0 - target) * input - ((pos_weight - 1.0) * target + 1.0) * ls
    else:
        r = (1.0 - target) * input - ls
    if weight is not None:
        _broadcast_shape(r.shape, weight.shape)
        r = r * weight
    return _reduce(r, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """kl_div(input (log-probabilities), target, reduction='mean', log_target=False)
    = target * (log(target) - input) pointwise; 'batchmean' divides the sum by input.size(0)."""
    _check_tensor(input, "kl_div")
    _check_tensor(target, "kl_div", "target")
    if size_average is not None or reduce is not None or reduction != "batchmean":
        reduction = _get_reduction(size_average, reduce, reduction)
    if not input.dtype.is_floating_point or not target.dtype.is_floating_point:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        r = _ops.exp(target) * (target - input)
    else:  # xlogy(t, t) - t * x: 0 where t == 0
        r = target * (_ops.log(target.masked_fill(target == 0, 1.0)) - input)
    if reduction == "batchmean":
        # the sum over all but the batch dim, averaged over it: sum / size(0) without
        # a constant made of the batch size (one graph for every batch size when compiled)
        if input.dim() == 0:
            return r.sum()
        if r.dim() != input.dim() or r.shape[0] != input.shape[0]:   # a broadcast target
            return r.sum() / input.shape[0]
        return (r.sum(tuple(range(1, r.dim()))) if r.dim() > 1 else r).mean()
    return _reduce(r, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """cosine_embedding_loss(x1, x2, y, margin=0): 1 - cos(x1, x2) where y == 1,
    max(0, cos(x1, x2) - margin) where y == -1."""
    _check_tensor(input1, "cosine_embedding_loss", "input1")
    _check_tensor(input2, "cosine_embedding_loss", "input2")
    _check_tensor(target, "cosine_embedding_loss", "target")
    reduction = _get_reduction(size_average, reduce, reduction)
    nd = input1.dim()
    if nd not in (1, 2) or input2.dim() != nd:
        raise RuntimeError(f"cosine_embedding_loss: Expected 1D or 2D tensors for input1 and input2, but got "
                           f"input1 with {input1.dim()} dimensions and input2 with {input2.dim()} dimensions")
    if target.dim() != nd - 1:
        raise RuntimeError(f"{nd}D target tensor expects {nd}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    m1 = (input1 * input1).sum(-1) + eps
    m2 = (input2 * input2).sum(-1) + eps
    cos = prod / _ops.sqrt(m1 * m2)
    zeros = _ops.zeros_like(cos)
    pos = 1.0 - cos
    neg = _ops.maximum(zeros, cos - margin)
    r = _ops.where(target == 1, pos, zeros) + _ops.where(target == -1, neg, zeros)
    return _reduce(r, reduction)


# ---------------- normalization, distances ----------------
@_dyn_inline
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """rms_norm(input, normalized_shape, weight=None, eps=None) = x / sqrt(mean(x^2) + eps) * weight
    over the trailing normalized_shape dims; eps None is the dtype's machine epsilon
    (float16/bfloat16 compute in float32, as torch). Inlined under dynamic=True: its check
    of input's last dims against normalized_shape becomes a guard."""
    _check_tensor(input, "rms_norm")
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
                           "one element, but got normalized_shape = []")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(normalized_shape)}")
    nd = input.dim()
    if k > nd or tuple(input.shape[nd - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size "
                           f"{list(input.shape)}")
    dt = input.dtype
    if not dt.is_floating_point and not dt.is_complex:
        raise NotImplementedError(f"\"rms_norm\" not implemented for '{_tname(dt)}'")
    x = input.to(_C.float32) if dt in (_C.float16, _C.bfloat16) else input
    if eps is None:
        eps = _finfo_eps(x.dtype)
    dims = tuple(range(nd - k, nd))
    r = x * _ops.rsqrt((x * x).mean(dims, keepdim=True) + eps)
    if weight is not None:
        r = r * weight
    return r if r.dtype is dt else r.to(dt)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """group_norm(input [N, C, *], num_groups, weight=None, bias=None, eps=1e-5):
    normalizes each group of C / num_groups channels, then weight * y + bias per channel."""
    _check_tensor(input, "group_norm")
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.shape[0] != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in "
                               f"input, but got {name} of shape {list(t.shape)} and input of shape "
                               f"{list(input.shape)}")
    if input.numel():
        x = input.reshape(n, num_groups, -1)
    else:  # -1 is ambiguous with no element: the group size spelled out
        inner = c // num_groups
        for s in input.shape[2:]:
            inner *= s
        x = input.reshape(n, num_groups, inner)
    mu = x.mean(-1, keepdim=True)
    d = x - mu
    var = (d * d).mean(-1, keepdim=True)
    y = (d * _ops.rsqrt(var + eps)).reshape(input.shape)
    cshape = (1, c) + (1,) * (input.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(cshape)
    if bias is not None:
        y = y + bias.reshape(cshape)
    return y


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """normalize(input, p=2, dim=1, eps=1e-12) = input / max(||input||_p over dim, eps)."""
    _check_tensor(input, "normalize")
    _ops._wrap(dim, input.dim(), "normalize")
    r = input / _norm(input, p, dim, keepdim=True).clamp(min=eps)
    if out is None:
        return r
    _check_tensor(out, "normalize", "out")
    if tuple(out.shape) != tuple(r.shape):
        raise NotImplementedError(f"normalize(out=...): out has shape {list(out.shape)}, the result "
                                  f"{list(r.shape)} (symtrace does not resize out)")
    if (r.requires_grad or out.requires_grad) and _C._is_grad_enabled():
        raise RuntimeError("div(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    return out.copy_(r)


def _common_float(x1, x2, fname):
    dt = _ops.result_type(x1, x2)
    if not dt.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {_tname(dt)}")
    return (x1 if x1.dtype is dt else x1.to(dt)), (x2 if x2.dtype is dt else x2.to(dt))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """cosine_similarity(x1, x2, dim=1, eps=1e-8) = sum(x1 / ||x1|| * x2 / ||x2||, dim), the norms
    clamped at eps (as torch, the clamp is invisible to autograd), x1 and x2 broadcast."""
    _check_tensor(x1, "cosine_similarity", "x1")
    _check_tensor(x2, "cosine_similarity", "x2")
    x1, x2 = _common_float(x1, x2, "cosine_similarity")
    shape = _broadcast_shape(x1.shape, x2.shape)
    if tuple(x1.shape) != shape:
        x1 = x1.expand(shape)
    if tuple(x2.shape) != shape:
        x2 = x2.expand(shape)
    d = _ops._wrap(dim, len(shape), "cosine_similarity")
    n1 = _norm(x1, 2, d, keepdim=True)
    n2 = _norm(x2, 2, d, keepdim=True)
    with _no_grad():
        c1 = n1.clamp(min=eps) - n1
        c2 = n2.clamp(min=eps) - n2
    return ((x1 / (n1 + c1)) * (x2 / (n2 + c2))).sum(d)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """pairwise_distance(x1, x2, p=2, eps=1e-6, keepdim=False) = ||x1 - x2 + eps||_p over the last dim."""
    _check_tensor(x1, "pairwise_distance", "x1")
    _check_tensor(x2, "pairwise_distance", "x2")
    d = x1 - x2 + eps
    if d.dim() == 0:
        return _norm(d.reshape(1), p, 0, keepdim=False).reshape(())
    return _norm(d, p, d.dim() - 1, keepdim)


_CPP_TYPE = {"Float": "float", "Double": "double", "Half": "c10::Half", "BFloat16": "c10::BFloat16",
             "Long": "long int", "Int": "int", "Bool": "bool"}


def _cpp_type(dt):
    """The C++ type name torch's messages give a dtype ('float', 'long int', ...)."""
    n = _tname(dt)
    return _CPP_TYPE.get(n, n)


def bilinear(input1, input2, weight, bias=None):
    """bilinear(input1 [*, in1], input2 [*, in2], weight [out, in1, in2], bias=None [out])
    -> [*, out]: y_o = sum_ij x1_i weight_oij x2_j + bias_o, one matmul with weight and a
    batched one with input2."""
    _check_tensor(input1, "bilinear", "input1")
    _check_tensor(input2, "bilinear", "input2")
    _check_tensor(weight, "bilinear", "weight")
    ts = [("input1", input1), ("input2", input2), ("weight", weight)]
    if bias is not None:
        _check_tensor(bias, "bilinear", "bias")
        ts.append(("bias", bias))
    if any(t.dtype is not input1.dtype for _, t in ts):
        raise RuntimeError("All tensors must have the same dtype, got " +
                           ", ".join(f"{n}: {_cpp_type(t.dtype)}" for n, t in ts))
    nd = input1.dim()
    if nd != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {nd} and {input2.dim()}")
    for i in range(nd - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    if nd == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")

    def wsize(d):   # weight.size(d), with torch's error past weight's dims
        if d >= weight.dim():
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(weight.dim(), 1)}, "
                             f"{max(weight.dim(), 1) - 1}], but got {d})")
        return weight.shape[d]
    if input1.shape[-1] != wsize(1):
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {wsize(1)}")
    if input2.shape[-1] != wsize(2):
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {wsize(2)}")
    o, n1, n2 = weight.shape[0], weight.shape[1], weight.shape[2]
    if bias is not None:
        if bias.dim() == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if bias.shape[0] != o:
            raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but "
                               f"expected {o}")
    if weight.dim() != 3:
        raise RuntimeError("number of dimensions must match")
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, n1)
    x2 = input2.reshape(-1, n2)
    # [B, in1] @ [in1, out * in2] -> [B, out, in2], then each row's [out, in2] @ x2 [in2]
    t = _ops.matmul(x1, weight.permute(1, 0, 2).reshape(n1, o * n2)).reshape(-1, o, n2)
    y = _ops.matmul(t, x2.unsqueeze(-1)).squeeze(-1).reshape(lead + (o,))
    return y if bias is None else y + bias


def pdist(input, p=2):
    """pdist(input [N, M], p=2) -> [N * (N - 1) / 2]: the p-norm distances ||x_i - x_j||_p of the
    rows, i < j in row-major order. Gradients as torch's: zero where a distance is 0 (and, for
    p < 1, at a zero difference); p = inf sends the whole gradient to every tying component."""
    _check_tensor(input, "pdist")
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if input.dtype in (_C.float16, _C.bfloat16):
        raise NotImplementedError(f"\"pdist\" not implemented for '{_tname(input.dtype)}'")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if not p >= 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = _pair_indices(input.shape[0], input.device)
    d = input.index_select(0, i) - input.index_select(0, j)
    return _pnorm_rows(d, float(p))


def _pair_indices(n, device):
    """(i, j) of the pairs i < j of n rows in row-major order, from arange (traced as ops, not
    a host constant): pair k is in row i = floor((m - sqrt(m^2 - 8k)) / 2), m = 2n - 1, the
    float estimate corrected by one step either way, and j = k - start(i) + i + 1 with
    start(i) = i (2n - i - 1) / 2 the pairs before row i."""
    k = _ops.arange(n * (n - 1) // 2, device=device)
    m = 2 * n - 1

    def start(r):
        return (r * (m - r)) // 2
    est = _ops.floor((m - _ops.sqrt((m * m - 8 * k).to(_ops.float64))) / 2).to(_ops.int64)
    i = est.clamp(0, max(n - 2, 0))
    i = _ops.where(start(i + 1) <= k, i + 1, i)
    i = _ops.where(start(i) > k, i - 1, i)
    return i, k - start(i) + i + 1


def _pnorm_rows(d, p):
    """||d||_p over the last dim of d with pdist's gradient conventions (see pdist): norm's,
    except p = inf, whose gradient goes whole to every tying component (torch's pdist)."""
    if _math.isinf(p):
        a = d.abs()
        with _no_grad():
            top = a.amax(-1, keepdim=True) if d.shape[-1] else _ops.zeros_like(a.sum(-1, keepdim=True))
            tie = (a == top).to(d.dtype)
        return top.squeeze(-1) + ((a - a.detach()) * tie).sum(-1)
    return _ops.norm(d, p, -1)


# ---------------- pad, local_response_norm, one_hot ----------------
def _pad_index(n, left, right, mode, dev):
    """The source index along a dim of size n for each output position."""
    if mode == "circular":
        a = -left if left < 0 else 0
        nc = n - a - (-right if right < 0 else 0)
        pl, pr = (left if left > 0 else 0), (right if right > 0 else 0)
        return _ops.remainder(_ops.arange(-pl, nc + pr, device=dev), nc) + a
    q = _ops.arange(-left, n + right, device=dev)
    if mode == "replicate":
        return q.clamp(0, n - 1)
    return (n - 1) - ((n - 1) - q.abs()).abs()   # reflect


@_dyn_inline
def pad(input, pad, mode="constant", value=None):
    """pad(input, pad, mode='constant', value=None): pad = (left, right) pairs from the last dim
    backwards; negative entries crop. Modes: 'constant' (any dims), 'reflect', 'replicate',
    'circular' (the last 1, 2 or 3 dims of a batched or unbatched input, as torch)."""
    _check_tensor(input, "pad")
    pad = [int(p) for p in pad]
    nd = input.dim()
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > nd:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(pad)} and input of dimension {nd}")
    if mode == "constant":
        return _pad_constant(input, pad, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {nd}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D "
            "input: padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads "
            "last 3 dimensions)")
    shape = tuple(input.shape)
    if any(s == 0 for s in shape[nd - k - 1:]):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {list(shape)}")
    x = input
    for i in range(k):
        d = nd - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        if left == 0 and right == 0:
            continue
        n = shape[d]
        out_n = n + left + right
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({left}, {right}) at dimension {d} of input "
                               f"{list(shape)}")
        if mode == "circular":
            if left > n or right > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if out_n <= 0 or n - max(-left, 0) - max(-right, 0) <= 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        elif out_n < 1:
            raise RuntimeError(f"input (W: {n}) is too small. Calculated output W: {out_n}")
        x = x.index_select(d, _pad_index(n, left, right, mode, input.device))
    return input.clone() if x is input else x


@_dyn_inline
def _pad_fill(x, d, n, value):
    """A block of value shaped as x but n long along dim d."""
    shape = list(x.shape)
    shape[d] = n
    return _ops.full(tuple(shape), value, dtype=x.dtype, device=x.device)


@_dyn_inline
def _pad_constant(input, pad, value):
    x = input
    nd = input.dim()
    for i in range(len(pad) // 2):
        d = nd - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = x.shape[d]
        if left < 0 or right < 0:  # crop first
            a, b = max(-left, 0), n - max(-right, 0)
            if b < a:
                raise RuntimeError("narrow(): length must be non-negative.")
            x = x._slice(d, a, b, 1)
        if left > 0 or right > 0:
            pieces = [x]
            if left > 0:
                pieces.insert(0, _pad_fill(x, d, left, value))
            if right > 0:
                pieces.append(_pad_fill(x, d, right, value))
            x = _ops.cat(pieces, d)
    return input.clone() if x is input else x


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """local_response_norm(input [N, C, *] (3-d or more), size, alpha=1e-4, beta=0.75, k=1.0):
    input / (k + alpha * mean of input^2 over size neighbouring channels)^beta (torch's
    formula: a zero-padded avg_pool over the channel dim)."""
    _check_tensor(input, "local_response_norm")
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def one_hot(input, num_classes=-1):
    """one_hot(input (int64), num_classes=-1) -> int64 [..., num_classes]: 1 at each value's
    index; num_classes=-1 infers max + 1 (reads the tensor's values)."""
    if num_classes < -1:
        raise RuntimeError("num_classes should be positive")
    return _ops._one_hot(input, num_classes)


# ---------------- convolution, pooling, normalization layers (symtrace/nn/_conv.py, _adaptive_pool.py, _batch_norm.py) ----------------
from ._conv import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,  # noqa: E402,F401
                    conv_transpose3d, unfold, fold, max_pool1d, max_pool2d, max_pool3d, max_pool1d_with_indices,
                    max_pool2d_with_indices, max_pool3d_with_indices, avg_pool1d, avg_pool2d, avg_pool3d,
                    adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d, adaptive_max_pool1d_with_indices,
                    adaptive_max_pool2d_with_indices, adaptive_max_pool3d_with_indices, max_unpool1d,
                    max_unpool2d, max_unpool3d, lp_pool1d, lp_pool2d, lp_pool3d, pixel_shuffle, pixel_unshuffle,
                    channel_shuffle, native_channel_shuffle, interpolate, upsample, upsample_nearest,
                    upsample_bilinear)
from ._adaptive_pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d  # noqa: E402,F401
from ._batch_norm import batch_norm, instance_norm  # noqa: E402,F401
from ._loss import (margin_ranking_loss, hinge_embedding_loss, soft_margin_loss,  # noqa: E402,F401
                    multilabel_soft_margin_loss, multilabel_margin_loss, multi_margin_loss, gaussian_nll_loss,
                    poisson_nll_loss, triplet_margin_loss, triplet_margin_with_distance_loss)
from ._embedding_bag import embedding_bag  # noqa: E402,F401
from ._vision import (affine_grid, grid_sample, fractional_max_pool2d, fractional_max_pool3d,  # noqa: E402,F401
                      fractional_max_pool2d_with_indices, fractional_max_pool3d_with_indices)
from ._ctc import ctc_loss  # noqa: E402,F401
from ._linear_ce import linear_cross_entropy  # noqa: E402,F401


# ---------------- autocast's policy for the ops above that are Python composites (symtrace/amp/_policy.py) ----
# torch's lists: products in the autocast dtype, the losses in float32 (binary_cross_entropy only on
# the CPU: torch refuses it under CUDA autocast), and the CPU's float32 reflect/replicate pads.
from ..amp._policy import autocast_op as _autocast_op  # noqa: E402

for _n in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu"):
    globals()[_n] = _autocast_op("lower")(globals()[_n])
for _n in ("nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits",
           "kl_div", "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_margin_loss", "multi_margin_loss", "poisson_nll_loss", "triplet_margin_loss", "ctc_loss"):
    globals()[_n] = _autocast_op("fp32")(globals()[_n])
binary_cross_entropy = _autocast_op("fp32", devices=("cpu",))(binary_cross_entropy)
del _n

_pad_fp32 = _autocast_op("fp32", devices=("cpu",))(pad)
_pad_any = pad


@_dyn_inline
def pad(input, pad, mode="constant", value=None):  # noqa: F811
    """pad(input, pad, mode='constant', value=None): see _pad_any; under CPU autocast the
    reflect and replicate modes run in float32, as torch's."""
    return (_pad_fp32 if mode in ("reflect", "replicate") else _pad_any)(input, pad, mode, value)


pad.__doc__ = _pad_any.__doc__
