"""The connectionist temporal classification loss: torch.nn.functional.ctc_loss, with torch's
signature, argument forms (padded [N, S] or concatenated 1-d targets, batched [T, N, C] or
unbatched [T, C] log_probs, lengths as integer tensors or tuples of ints), checks, messages,
reductions and gradients.

The forward is ATen's alpha recursion in log space, written over symtrace's differentiable ops
and vectorized over the batch and the extended-target positions (blank, l1, blank, l2, ...,
blank): one step per time step t (a Python loop over T),

    alpha_t(s) = lse(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) [when allowed]) + lp_t(l'_s)

where lse takes its max as 0 when every term is -inf (ATen's), so unreachable states stay -inf
and carry a zero gradient instead of NaN. A sequence stops updating after its input length.
The loss is -lse(alpha_{T_n-1}(2 L_n), alpha_{T_n-1}(2 L_n - 1)).

The gradient is autograd's through the recursion, plus the term torch's backward has and the
true derivative has not: ATen's CTC gradient with respect to log_probs is
exp(lp) - exp(log(alpha beta) + nll - lp), the gradient for logits fed through log_softmax
(where the two agree); the exp(lp) part (for t < T_n) is added with a term of value 0. For an
impossible alignment (loss inf) torch's gradient is NaN at t < T_n (its formula meets
-inf + inf); so is ours; zero_infinity zeroes the loss and the gradient of those sequences.

The length checks read the lengths on the host and run eagerly only (a value read would break a
traced graph); the recursion itself needs no value: the padded extended targets are as long as
the padded targets (or, for concatenated targets under a trace, the whole target tensor).
"""
from .. import _C, _ops
from .._ops import _check_tensor, _tname
from .._ops._core import _is_tensor


def _eager():
    return not _C._trace_active()


def _is_int_seq(v):
    return isinstance(v, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def _lengths(v, name, device):
    """(a 1-d int64 tensor, the values as a list of ints or None under a trace) of a lengths
    argument: an integer tensor (0-d or 1-d) or a tuple of ints."""
    if _is_tensor(v):
        if v.dtype.is_floating_point or v.dtype is _C.bool or v.dtype.is_complex:
            raise RuntimeError(f"{name} must be integral")
        t = v.reshape(-1).to(_C.int64)
        return t, (t.tolist() if _eager() else None)
    if _is_int_seq(v):
        t = _C._trace_constant(_C.tensor(list(v), _C.int64)).reshape(len(v))
        return (t if t.device == device else t.to(device)), list(v)
    raise TypeError(f"ctc_loss(): argument '{name}' must be a Tensor or a tuple of ints, not {type(v).__name__}")


def _lse(terms):
    """log(sum(exp(terms))) elementwise as ATen's CTC loops: the max is taken as 0 when every
    term is -inf; an all -inf result is -inf with a zero (not NaN) gradient."""
    m = terms[0].detach()
    for t in terms[1:]:
        m = _ops.maximum(m, t.detach())
    ninf = m == -float("inf")
    m = _ops.where(ninf, _ops.zeros_like(m), m)
    s = None
    for t in terms:
        e = (t - m).exp()
        s = e if s is None else s + e
    zero = s == 0
    r = _ops.where(zero, _ops.ones_like(s), s).log() + m
    return _ops.where(zero, _ops.full_like(r, -float("inf")), r)


def _shift(a, k):
    """a [N, S'] shifted right by k positions along dim 1, -inf coming in."""
    n = a.shape[0]
    pad = _ops.full((n, k), -float("inf"), dtype=a.dtype, device=a.device)
    return _ops.cat([pad, a[:, :a.shape[1] - k]], 1)


def _padded_targets(targets, tl, tl_vals, n, blank):
    """[N, Lmax] int64 targets (blank past each length) from padded or concatenated targets."""
    dev = targets.device
    tg = targets.to(_C.int64)
    if targets.dim() == 2:
        lmax = targets.shape[1]
        if tl_vals is not None and n:
            lmax = min(lmax, max(tl_vals))
        tg = tg[:, :lmax]
    else:
        lmax = max(tl_vals) if (tl_vals is not None and n) else targets.shape[0]
        offs = _ops.cumsum(tl, 0) - tl                                        # [N]
        idx = offs.reshape(n, 1) + _ops.arange(lmax, device=dev).reshape(1, lmax)
        ok = _ops.arange(lmax, device=dev).reshape(1, lmax) < tl.reshape(n, 1)
        idx = _ops.where(ok, idx, _ops.zeros_like(idx)).clamp(max=max(targets.shape[0] - 1, 0))
        tg = tg.index_select(0, idx.reshape(-1)).reshape(n, lmax) if targets.shape[0] else \
            _ops.zeros((n, lmax), dtype=_C.int64, device=dev)
    ok = _ops.arange(lmax, device=dev).reshape(1, lmax) < tl.reshape(n, 1)
    return _ops.where(ok, tg, _ops.full_like(tg, blank)), lmax


def _ctc_nll(lp, tg, lmax, il, tl, blank, zero_infinity):
    """lp [T, N, C]; tg [N, Lmax]; il, tl [N] int64: the negative log likelihood [N]."""
    T, n, C = lp.shape
    dev = lp.device
    S = 2 * lmax + 1
    blanks = _ops.full((n, lmax), blank, dtype=_C.int64, device=dev)
    ext = _ops.cat([_ops.stack([blanks, tg], 2).reshape(n, 2 * lmax),
                    _ops.full((n, 1), blank, dtype=_C.int64, device=dev)], 1)        # [N, S]
    # the s-2 transition: into a label (odd s >= 3) that differs from the label before it
    if lmax > 1:
        diff = tg[:, 1:] != tg[:, :-1]
        odd = _ops.cat([_ops.zeros((n, 1), dtype=_C.bool, device=dev), diff], 1)
    else:
        odd = _ops.zeros((n, lmax), dtype=_C.bool, device=dev)
    skip = _ops.cat([_ops.stack([_ops.zeros((n, lmax), dtype=_C.bool, device=dev), odd], 2).reshape(n, 2 * lmax),
                     _ops.zeros((n, 1), dtype=_C.bool, device=dev)], 1)             # [N, S]
    lpe = lp.gather(2, ext.unsqueeze(0).expand((T, n, S)))                            # [T, N, S]
    ninf = _ops.full((n, S), -float("inf"), dtype=lp.dtype, device=dev)
    pos = _ops.arange(S, device=dev).reshape(1, S)
    first = (pos == 0) | ((pos == 1) & (tl.reshape(n, 1) > 0))
    alpha = _ops.where(first, lpe[0], ninf)
    live = il.reshape(n, 1)
    for t in range(1, T):
        a3 = _ops.where(skip, _shift(alpha, 2), ninf) if S > 2 else ninf
        new = _lse([alpha, _shift(alpha, 1), a3]) + lpe[t]
        alpha = _ops.where(live > t, new, alpha)
    end = (2 * tl).reshape(n, 1)
    l1 = alpha.gather(1, end)
    l2 = alpha.gather(1, (end - 1).clamp(min=0))
    l2 = _ops.where(end > 0, l2, _ops.full_like(l2, -float("inf")))
    nll = -_lse([l1, l2]).reshape(n)
    # torch's gradient (see the module): + exp(lp) at t < T_n; NaN at t < T_n for an
    # impossible alignment
    tpos = _ops.arange(T, device=dev).reshape(T, 1, 1)
    seen = tpos < il.reshape(1, n, 1)                                                 # [T, N, 1]
    e = lp.exp()
    extra = _ops.where(seen, e - e.detach(), _ops.zeros_like(e)).sum((0, 2))
    imp = (nll.detach() == float("inf")).reshape(1, n, 1) & seen
    d = lp - lp.detach()
    nll = nll + extra
    if not zero_infinity:
        nll = nll + (_ops.where(imp, d, _ops.ones_like(d)).sqrt() * 0).sum((0, 2))
    # an empty input: likelihood 1 for an empty target (loss -0.0), else 0 (ATen's)
    empty = _ops.where(tl == 0, _ops.full_like(nll, -0.0), _ops.full_like(nll, float("inf")))
    nll = _ops.where(il == 0, empty, nll)
    if zero_infinity:
        nll = _ops.where(nll == float("inf"), _ops.zeros_like(nll), nll)
    return nll


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """ctc_loss(log_probs [T, N, C] or [T, C], targets [N, S] or [sum(target_lengths)] (or [S] unbatched),
    input_lengths, target_lengths, blank=0, reduction='mean', zero_infinity=False): the CTC loss;
    'mean' divides each sequence's loss by its target length (at least 1), then averages."""
    _check_tensor(log_probs, "ctc_loss", "log_probs")
    _check_tensor(targets, "ctc_loss", "targets")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    dev = log_probs.device
    il, il_vals = _lengths(input_lengths, "input_lengths", dev)
    tl, tl_vals = _lengths(target_lengths, "target_lengths", dev)
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    tg = targets          # ATen's: an unbatched call's 1-d targets read as concatenated ones
    where = " (while checking arguments for ctc_loss_allocate_outputs)"
    if lp.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{_tname(lp.dtype)}'")
    if lp.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.dim()}-dimensional tensor for argument #1 "
                           f"'log_probs'{where}")
    if tg.dim() not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {tg.dim()}-dimensional tensor for argument #2 "
                           f"'targets'{where}")
    T, n, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if il.shape[0] != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.shape[0] != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    if tl_vals is not None:
        for v in tl_vals:
            if v < 0:
                raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {v}{where}")
        if tg.dim() == 1:
            if tg.shape[0] != sum(tl_vals):
                raise RuntimeError(f"Expected tensor to have size {sum(tl_vals)} at dimension 0, but got size "
                                   f"{tg.shape[0]} for argument #2 'targets'{where}")
        else:
            if tg.shape[0] != n:
                raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size {tg.shape[0]} "
                                   f"for argument #2 'targets'{where}")
            if n and tg.shape[1] < max(tl_vals):
                raise RuntimeError(f"Expected tensor to have size at least {max(tl_vals)} at dimension 1, but got "
                                   f"size {tg.shape[1]} for argument #2 'targets'{where}")
    if il_vals is not None:
        for v in il_vals:
            if v < 0:
                raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {v}{where}")
            if v > T:
                raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {v}{where}")
    ptg, lmax = _padded_targets(tg, tl, tl_vals, n, blank)
    if _eager() and ptg.numel() and (ptg.amin().item() < 0 or ptg.amax().item() >= C):
        # ATen reads out of bounds here; symtrace refuses
        raise IndexError(f"ctc_loss(): target index out of range [0, {C}) for log_probs with {C} classes")
    ptg = ptg.clamp(0, C - 1)
    if n == 0 or T == 0:
        # no sequence, or every input empty: the loss is 0 (empty target) or inf
        nll = _ops.where(tl == 0, _ops.full((n,), -0.0, dtype=lp.dtype, device=dev),
                         _ops.full((n,), float("inf"), dtype=lp.dtype, device=dev)) + lp.sum() * 0
    else:
        nll = _ctc_nll(lp, ptg, lmax, il, tl, blank, zero_infinity)
    if reduction == "mean":
        return (nll / tl.clamp(min=1).to(nll.dtype)).mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.squeeze(0)
