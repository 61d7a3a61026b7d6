"""symtrace.nn.functional: PyTorch's functional layer ops."""
from .. import _C, _ops
from ..autograd import no_grad as _no_grad
from .._ops import (relu, softmax, log_softmax, KEEPDIM, HAS_WEIGHT, HAS_BIAS, TANH, _attrs,  # noqa: F401
                    _check_tensor, sigmoid, tanh)


def gelu(input, approximate="none"):
    """gelu(input, approximate='none'|'tanh')."""
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


# ---------------- losses, attention (composed of the ops above) ----------------
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """mse_loss(input, target, reduction='mean'|'sum'|'none') = (input - target)^2."""
    _check_tensor(input, "mse_loss")
    _check_tensor(target, "mse_loss", "target")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    d = input - target
    r = d * d
    if reduction == "mean":
        return r.mean()
    if reduction == "sum":
        return r.sum()
    return r


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = not allowed) becomes an additive float mask (-inf / 0);
    a float mask is returned as is (torch.nn.functional._canonical_mask)."""
    if mask is None:
        return None
    _check_tensor(mask, mask_name, mask_name)
    if mask.dtype is _ops.bool_:
        return _ops.zeros(mask.shape, dtype=target_type, device=mask.device).masked_fill(mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    return mask


def _causal_mask(L, S, dtype, device=None):
    """[L, S] additive mask: -inf above the diagonal."""
    i = _ops.arange(L, device=device).reshape(L, 1)
    j = _ops.arange(S, device=device).reshape(1, S)
    return _ops.zeros((L, S), dtype=dtype, device=device).masked_fill(j > i, float("-inf"))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v over the last two dims (torch's SDPA):
    a bool attn_mask marks with True the positions that TAKE PART in attention;
    a float one is added to the scores."""
    import math
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = _ops.matmul(query, key.transpose(-2, -1)) * scale_factor
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                               "when is_causal=True")
        scores = scores + _causal_mask(L, S, scores.dtype, scores.device)
    if attn_mask is not None:
        if attn_mask.dtype is _ops.bool_:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    attn = softmax(scores, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return _ops.matmul(attn, value)


def _in_projection_packed(q, k, v, w, b=None):
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


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True, key_padding_mask=None,
                                 need_weights=True, attn_mask=None, use_separate_proj_weight=False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None,
                                 static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch.nn.functional.multi_head_attention_forward for inputs [L, N, E] (or
    unbatched [L, E]); bool masks: True = not allowed, float masks are added."""
    import math
    if bias_k is not None or bias_v is not None or add_zero_attn or use_separate_proj_weight \
            or static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: bias_k/bias_v, add_zero_attn, "
                                  "separate projection weights and static_k/v are not supported")
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", None, "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                           "module method `generate_square_subsequent_mask` to create this mask.")
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype)
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")

    q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)

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

    # [L, N, E] -> [N*H, L, hd]
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(src_len, bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(src_len, bsz * num_heads, head_dim).transpose(0, 1)

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
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
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
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
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, False)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None
