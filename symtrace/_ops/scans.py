"""Running ops along a dim: cumsum, cumprod and logcumsumexp (log-depth scans, _scan), and
diff."""
import builtins

from .._dtype import bool_, float32, float64, int64
from ._core import _check_grad_dtype, _check_int, _check_tensor, _tname, _wrap
from .elementwise import add, clamp, ge, mul, ne, sub, to_dtype, where
from .creation import arange
from .float_math import _back, _logaddexp, _opmath
from .indexing import index_select
from .shape import cat


# ---------------- scans ----------------
def cumsum(input, dim, *, dtype=None):
    """cumsum(input, dim, *, dtype=None): running sums along dim, as torch.cumsum; integer
    and bool inputs give int64 (exact, with int64 wraparound), or dtype when given. A log-depth scan of additions
    (_scan), in float32 for float16/bfloat16: an inf or NaN reaches only the sums at and
    after it, in the gradient too (a product with a triangular matrix of ones, as this was
    computed before, spread them to every position as 0 * inf). Float sums may differ from a
    left-to-right sum in the last bits."""
    _check_tensor(input, "cumsum")
    _check_grad_dtype(input, dtype)
    if dtype is not None:
        input = to_dtype(input, dtype)
    nd = input.dim()
    d = _wrap(dim, builtins.max(nd, 1), "cumsum")
    dt = input.dtype
    out_dt = dt if dt.is_floating_point or dtype is not None else int64
    work = dt if dt in (float32, float64) else (float32 if dt.is_floating_point else int64)
    if nd == 0:
        return to_dtype(input, out_dt) if out_dt is not dt else input.clone()
    x = to_dtype(input, work)
    r = _scan(x, d, add)
    r = r.clone() if r is input else r
    return to_dtype(r, out_dt).contiguous()   # row-major, as torch's scans


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
    (integers and bools give int64, exact with int64 wraparound, or dtype when given). A log-depth scan of
    multiplications, so zeros are fine, also for the gradient; float16/bfloat16 multiply in
    float32 and round once (torch's CPU scans accumulate in float32 for them); float results
    may differ from a left-to-right product in the last bits."""
    _check_tensor(input, "cumprod")
    _check_grad_dtype(input, dtype)
    if dtype is not None:
        input = to_dtype(input, dtype)
    d = _wrap(dim, builtins.max(input.dim(), 1), "cumprod")
    x = to_dtype(input, input.dtype if input.dtype.is_floating_point else int64)
    if x.dim() == 0:
        r = x
    else:
        w, dt = _opmath(x) if x.dtype.is_floating_point else (x, x.dtype)
        r = _back(_scan(w, d, mul), dt)
    if dtype is not None:            # an integer dtype= is kept (int64 wraps as it does)
        r = to_dtype(r, dtype)
    return r.clone() if r is input else r.contiguous()   # row-major, as torch's scans


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
    return r.clone() if r is input else _back(r, dt).contiguous()   # row-major, as torch's


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
