"""Running ops along a dim: cumsum (products with triangular matrices of ones, in blocks), cumprod
and logcumsumexp (log-depth scans, _scan), and diff."""
import builtins

from .._dtype import bool_, float32, float64, int64
from ._core import _check_int, _check_tensor, _tname, _wrap
from .elementwise import clamp, ge, le, mul, ne, sub, to_dtype, where
from .creation import arange, zeros
from .float_math import _back, _logaddexp, _opmath
from .indexing import index_select
from .shape import cat
from .linalg import matmul


# ---------------- scans ----------------
_CUMSUM_BLOCK = 128


def _tri(n, dt, device):
    idx = arange(n, device=device)
    return to_dtype(le(idx.unsqueeze(1), idx), dt)        # tri[i, j] = i <= j


def _cumsum_last(x):
    """Running sums along the last dim. Up to _CUMSUM_BLOCK elements: one product with a
    triangular matrix of ones. Longer: blocks of _CUMSUM_BLOCK summed that way, plus the
    running sums of the block totals (recursively) before each block: O(n * block) work
    and memory instead of O(n^2), every step a differentiable op."""
    n = x.shape[-1]
    b = _CUMSUM_BLOCK
    if n <= b:
        return matmul(x, _tri(n, x.dtype, x.device))
    nb = -(-n // b)
    lead = tuple(x.shape[:-1])
    if nb * b != n:
        x = cat([x, zeros(lead + (nb * b - n,), dtype=x.dtype, device=x.device)], -1)
    within = matmul(x.reshape(lead + (nb, b)), _tri(b, x.dtype, x.device))
    totals = within.select(-1, b - 1)
    before = sub(_cumsum_last(totals), totals)            # the sums of the earlier blocks
    out = (within + before.unsqueeze(-1)).reshape(lead + (nb * b,))
    return out if nb * b == n else out.narrow(-1, 0, n)


def cumsum(input, dim, *, dtype=None):
    """cumsum(input, dim, *, dtype=None): running sums along dim, as torch.cumsum; integer
    and bool inputs give int64. Computed with products with triangular matrices of ones, in
    blocks (_cumsum_last: O(n * 128) work): in the input's dtype for float32/float64,
    float32 for float16/bfloat16, float64 for integers and bools (exact while the sums stay
    below 2**53 in magnitude)."""
    _check_tensor(input, "cumsum")
    if dtype is not None:
        input = to_dtype(input, dtype)
    nd = input.dim()
    d = _wrap(dim, builtins.max(nd, 1), "cumsum")
    dt = input.dtype
    out_dt = dt if dt.is_floating_point else int64
    work = dt if dt in (float32, float64) else (float32 if dt.is_floating_point else float64)
    if nd == 0:
        return to_dtype(input, out_dt) if out_dt is not dt else input.clone()
    x = to_dtype(input, work)
    n = x.shape[d]
    if d == nd - 1:
        return to_dtype(_cumsum_last(x), out_dt)
    if n <= _CUMSUM_BLOCK:
        # tri^T @ x along dim d: the result has x's (contiguous) layout, as torch's
        lead, rest = tuple(x.shape[:d]), tuple(x.shape[d + 1:])
        m = 1
        for r in rest:
            m *= r
        t = _tri(n, x.dtype, x.device).transpose(0, 1)
        out = matmul(t, x.reshape(lead + (n, m))).reshape(tuple(x.shape))
        return to_dtype(out, out_dt)
    return to_dtype(_cumsum_last(x.transpose(d, -1)).transpose(d, -1).contiguous(), out_dt)


def _scan(x, d, combine):
    """Inclusive scan of x along dim d: out[i] = x[0] (+) x[1] (+) ... (+) x[i], for an
    associative combine, as ceil(log2 n) Hillis-Steele steps (each one index_select of the
    values k places back and one combine): O(n log n) work, no value reads, differentiable."""
    n = x.shape[d]
    idx = arange(n, device=x.device)
    shape = [1] * x.dim()
    shape[d] = n
    k = 1
    while k < n:
        back = index_select(x, d, clamp(sub(idx, k), min=0))
        x = where(ge(idx, k).reshape(tuple(shape)), combine(x, back), x)
        k *= 2
    return x


def cumprod(input, dim, *, dtype=None):
    """cumprod(input, dim, *, dtype=None): running products along dim, as torch.cumprod
    (integers and bools give int64, exact with int64 wraparound). A log-depth scan of
    multiplications, so zeros are fine, also for the gradient; float results may differ
    from a left-to-right product in the last bits."""
    _check_tensor(input, "cumprod")
    if dtype is not None:
        input = to_dtype(input, dtype)
    d = _wrap(dim, builtins.max(input.dim(), 1), "cumprod")
    x = to_dtype(input, input.dtype if input.dtype.is_floating_point else int64)
    if x.dim() == 0:
        return x.clone() if x is input else x
    r = _scan(x, d, mul)
    return r.clone() if r is input else r


def logcumsumexp(input, dim):
    """logcumsumexp(input, dim): log(cumsum(exp(input), dim)) computed stably, as a
    log-depth scan of logaddexp (no overflow or underflow from a common shift); floating
    dtypes; as torch.logcumsumexp."""
    _check_tensor(input, "logcumsumexp")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp\" not implemented for '{_tname(input.dtype)}'")
    d = _wrap(dim, builtins.max(input.dim(), 1), "logcumsumexp")
    x, dt = _opmath(input)
    if x.dim() == 0:
        return input.clone()
    r = _scan(x, d, _logaddexp)
    return r.clone() if r is input else _back(r, dt)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """diff(input, n=1, dim=-1, prepend=None, append=None): the n-th forward difference
    along dim (after joining prepend and append there); bools use xor; as torch.diff."""
    _check_tensor(input, "diff")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    _check_int(n, "diff", "n", 2)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap(dim, input.dim(), "diff")
    if n == 0:                       # torch ignores prepend and append then
        return input.clone()
    parts = []
    for name, t in (("prepend", prepend), (None, input), ("append", append)):
        if t is None:
            continue
        if name is not None:
            _check_tensor(t, "diff", name)
            if t.dim() != input.dim():
                raise RuntimeError(f"diff expects prepend or append to be the same dimension as "
                                   f"input")
        parts.append(t)
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x._slice(d, 1, m, 1), x._slice(d, 0, builtins.max(m - 1, 0), 1)
        x = ne(hi, lo) if x.dtype is bool_ else sub(hi, lo)
    return x.clone() if x is input else x
