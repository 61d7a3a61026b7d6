"""embedding_bag (torch.nn.functional.embedding_bag): sums, means or maxima of bags of
embedding rows, with torch's signature, checks and messages.

Composed of symtrace's differentiable ops, so the gradients of weight and of
per_sample_weights come from theirs, and nothing branches on tensor values (a compiled
graph captures it whole; the checks of index and offset values read them eagerly and are
skipped while a graph is being traced, indices then clamped into range):
- a 2-D input [B, L] is B bags of L indices: the rows [B, L, D] reduced over L;
- a 1-D input with offsets: each position's bag id is a running count of the offsets at or
  before it (a scatter_add of ones at the offsets, then cumsum), so empty bags (repeated
  offsets) need no special case; sum and mean are one index_add of the rows into the bags;
  max is a log-depth segmented scan of (value, position) pairs within the bags (the first
  maximum wins, as torch's), then the rows gathered at the winners, so the gradient goes
  to one row per bag and feature, as torch's max_indices.
padding_idx entries are left out of every bag (and of mean's count); an empty bag gives
zeros."""
import warnings as _warnings

from .. import _C, _ops
from ..autograd import no_grad as _no_grad
from .._ops import _check_tensor, _tname
from .functional import _embedding_renorm_

_MODES = {"sum": 0, "mean": 1, "max": 2}


def _type_error(t, arg, expected):
    return RuntimeError(f"Expected tensor for argument #1 '{arg}' to have one of the following scalar types: "
                        f"{expected}; but got {_tname(t.dtype)}Tensor instead (while checking arguments for "
                        "embedding_bag)")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """embedding_bag(input, weight [N, D], offsets=None, max_norm=None, norm_type=2,
    scale_grad_by_freq=False, mode='mean', sparse=False, per_sample_weights=None,
    include_last_offset=False, padding_idx=None) -> [B, D]: for each bag of indices, the sum,
    mean or max of its rows of weight. input is [B, L] (B bags of L) or 1-D with offsets, the
    start of each bag (include_last_offset: offsets has B + 1 entries, the last one the end of
    the last bag). per_sample_weights (input's shape) scales each row, mode='sum' only.
    sparse=True is not supported (no sparse gradients)."""
    _check_tensor(input, "embedding_bag")
    _check_tensor(weight, "embedding_bag", "weight")
    if weight.dtype is _ops.int64 and input.dtype.is_floating_point:
        _warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                       "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                       stacklevel=2)
        weight, input = input, weight
    psw = per_sample_weights
    if psw is not None:
        _check_tensor(psw, "embedding_bag", "per_sample_weights")
        if tuple(input.shape) != tuple(psw.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(psw.shape)}) is not None, then it must "
                             f"have the same shape as the input ({tuple(input.shape)})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        if input.shape[1] == 0:   # torch's bag starts: arange(0, numel, 0)
            raise RuntimeError("step must be nonzero")
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        _check_tensor(offsets, "embedding_bag", "offsets")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    if sparse:
        raise NotImplementedError("embedding_bag(sparse=True): symtrace has no sparse gradients (the gradient would "
                                  "be dense); use sparse=False")
    if psw is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    # ATen's checks
    ints = (_ops.int64, _C.int32)
    if input.dtype not in ints:
        raise _type_error(input, "indices", "Long, Int")
    if offsets is not None and offsets.dtype not in ints:
        raise _type_error(offsets, "offsets", "Long, Int")
    if not weight.dtype.is_floating_point:
        raise _type_error(weight, "weight", "Half, BFloat16, Float, Double")
    if psw is not None and psw.dtype is not weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
                           f"#1 'per_sample_weights'; but type {_tname(weight.dtype)}Tensor does not equal "
                           f"{_tname(psw.dtype)}Tensor (while checking arguments for embedding_bag)")
    n_rows = weight.shape[0]
    if padding_idx is not None:
        if not -n_rows <= padding_idx < n_rows:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n_rows} through "
                               f"{n_rows - 1}, but got {padding_idx}")
        if padding_idx < 0:
            padding_idx += n_rows
    if include_last_offset and offsets.numel() < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    n = input.numel()
    if not _C._trace_active():
        if offsets is not None and offsets.numel():
            first, last = offsets[0].item(), offsets[-1].item()
            if first != 0:
                raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                                   f"from position 0. However, got {first}")
            if last > n:
                raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                                   f"{last}")
            # decreasing offsets would give negative bag sizes: torch's sum / mean raise
            # (its max takes them), symtrace's bag ids would silently regroup the indices
            if mode != "max" and offsets.numel() > 1 and (offsets[1:] < offsets[:-1]).any().item():
                raise RuntimeError(f"embedding_bag: offsets must be non-decreasing, but got "
                                   f"{offsets.tolist()}")
        if n:
            lo, hi = input.amin().item(), input.amax().item()
            if lo < 0 or hi >= n_rows:
                raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be "
                                   f"{lo if lo < 0 else hi}")
    if max_norm is not None:
        _embedding_renorm_(weight, input.to(_ops.int64), max_norm, norm_type)
    idx = input.reshape(-1).to(_ops.int64).clamp(0, max(n_rows - 1, 0))
    rows = weight.index_select(0, idx)                                                   # [n, D]
    if scale_grad_by_freq and rows.requires_grad:
        rows = _scaled_by_freq(rows, idx, n_rows)
    keep = None if padding_idx is None else idx != padding_idx
    if input.dim() == 2:
        return _bags_2d(rows, keep, psw, mode, input.shape[0], input.shape[1])
    return _bags_1d(rows, keep, psw, mode, offsets.to(_ops.int64), include_last_offset)


def _scaled_by_freq(rows, idx, n_rows):
    """rows whose gradient is divided by how often idx reads each row (the values unchanged)."""
    with _no_grad():
        counts = _ops.zeros((n_rows,), dtype=rows.dtype, device=rows.device).index_add(
            0, idx, _ops.ones((idx.numel(),), dtype=rows.dtype, device=rows.device))
        inv = (1.0 / counts.index_select(0, idx)).unsqueeze(1)
    d = rows.detach()
    return _ops.where(_ops.isfinite(d), d + (rows - d) * inv, rows)


def _bags_2d(rows, keep, psw, mode, B, L):
    """B bags of L rows each."""
    D = rows.shape[1]
    r = rows.reshape(B, L, D)
    k = None if keep is None else keep.reshape(B, L, 1)
    if mode == "max":
        if k is not None:
            r = r.masked_fill(k.logical_not(), float("-inf"))
        val = r.max(1)[0]
        if k is None:
            return val
        return _ops.where(k.any(1), val, 0.0)
    if psw is not None:
        r = r * psw.reshape(B, L, 1)
    if k is not None:
        r = _ops.where(k, r, 0.0)
    s = r.sum(1)
    if mode == "sum":
        return s
    if k is None:
        return s / L if L else s
    return s / k.sum(1).clamp(min=1).to(rows.dtype)


def _bags_1d(rows, keep, psw, mode, offsets, include_last_offset):
    """Bags of a 1-D input given by offsets (see the file's note)."""
    n, D = rows.shape[0], rows.shape[1]
    dev, dt = rows.device, rows.dtype
    O = offsets.numel()
    B = O - 1 if include_last_offset else O
    # bag id of each position: the offsets at or before it, minus one; positions in no bag
    # (before offsets[0], or past the last offset with include_last_offset) go to slot B
    starts = offsets.clamp(0, n)
    marks = _ops.zeros((n + 1,), dtype=_ops.int64, device=dev).scatter_add(
        0, starts, _ops.ones((O,), dtype=_ops.int64, device=dev))
    bag = marks.cumsum(0)[:n] - 1
    inbag = _ops.logical_and(bag >= 0, bag < B)
    bag = _ops.where(inbag, bag, B)
    valid = inbag if keep is None else _ops.logical_and(inbag, keep)
    cnt = _ops.zeros((B + 1,), dtype=dt, device=dev).index_add(0, bag, valid.to(dt))[:B]
    if mode == "max":
        return _segment_max(rows, bag, valid, cnt, B)
    contrib = rows if psw is None else rows * psw.reshape(n, 1)
    contrib = _ops.where(valid.unsqueeze(1), contrib, 0.0)
    s = _ops.zeros((B + 1, D), dtype=dt, device=dev).index_add(0, bag, contrib)[:B]
    if mode == "sum":
        return s
    return s / cnt.clamp(min=1).unsqueeze(1)


def _segment_max(rows, bag, valid, cnt, B):
    """The max of each bag's valid rows per feature ([B, D], 0 for a bag with none): the
    position of each bag's first maximum from a segmented scan, then rows gathered there."""
    n, D = rows.shape[0], rows.shape[1]
    dev = rows.device
    if n == 0:   # zeros, still a function of weight (as torch's)
        return rows.sum(0, keepdim=True).expand(B, D) * 0
    k_idx = _ops.arange(n, device=dev)
    with _no_grad():
        v = rows.detach().masked_fill(valid.logical_not().unsqueeze(1), float("-inf"))
        pos = k_idx.unsqueeze(1).expand(n, D)
        k = 1
        while k < n:   # v[i], pos[i]: the max of bag(i)'s positions in (i - 2k, i] and where it is
            src = (k_idx - k).clamp(min=0)
            vb, pb = v.index_select(0, src), pos.index_select(0, src)
            same = _ops.logical_and(bag.index_select(0, src) == bag, k_idx >= k).unsqueeze(1)
            take = _ops.logical_and(same, vb >= v)     # the earlier position wins a tie
            v, pos = _ops.where(take, vb, v), _ops.where(take, pb, pos)
            k *= 2
        # each bag's last position: the positions in bags 0..b, minus one
        sizes = _ops.zeros((B + 1,), dtype=_ops.int64, device=dev).index_add(
            0, bag, _ops.ones((n,), dtype=_ops.int64, device=dev))
        last = (sizes.cumsum(0)[:B] - 1).clamp(min=0)
        at = pos.index_select(0, last)                                                     # [B, D]
    val = _ops.gather(rows, 0, at)
    return _ops.where((cnt > 0).unsqueeze(1), val, 0.0)
