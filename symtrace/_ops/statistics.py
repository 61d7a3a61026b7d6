"""Counting and covariance, with torch's semantics and errors: bincount, histc, histogram and
histogramdd (bins found as torch's kernel finds them: linear interpolation of the position,
corrected against the bin edges for histogram; a count of the edges below for explicit
edges; then one scatter_add), cov and corrcoef (differentiable compositions of sums and a
matrix product). Value reads: bincount's length, the data range of histc/histogram when
none is given, and the argument checks torch makes on values (eager only; skipped while
symtrace.compile traces, where torch's warnings and value errors are not raised). The
histograms carry no gradient (torch's are not differentiable)."""
import builtins
import collections
import math
import warnings

from .. import _C
from .._dtype import bool_, float32, float64, int64
from ._core import _check_int, _check_tensor, _is_tensor, _no_grad, _tname
from .elementwise import (add, clamp, div, ge, le, logical_and, lt, mul, sqrt, sub, to_dtype, where)
from .creation import _scalar0, full, linspace, ones, zeros
from .reductions import amax, amin, sum
from .linalg import diagonal, matmul
from .indexing import gather, scatter_add
from .extras import _LOWER

_histogram_t = collections.namedtuple("histogram", ["hist", "bin_edges"])
_histogramdd_t = collections.namedtuple("histogramdd", ["hist", "bin_edges"])


def _g(v):
    """A double as C++'s ostream prints it (torch's messages)."""
    return "%g" % v


# ---------------- bincount ----------------
def bincount(input, weights=None, minlength=0):
    """bincount(input, weights=None, minlength=0): the count (or the sum of weights) of each
    value 0..max(input) of a 1-D non-negative integer tensor, at least minlength long; int64
    counts, weights' dtype for float32/float64 weights, else float64. The length is read from
    the values (a graph break under symtrace.compile); no gradient (torch has none). As
    torch.bincount."""
    _check_tensor(input, "bincount")
    _check_int(minlength, "bincount", "minlength", 3)
    if input.dtype.is_floating_point or input.dtype is bool_:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_tname(input.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    dev = input.device
    if input.dim() == 1 and input.numel() == 0:
        return zeros(minlength, dtype=int64, device=dev)
    if input.dim() != 1 or amin(input).item() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    n = builtins.max(amax(input).item() + 1, minlength)
    idx = to_dtype(input, int64)
    with _no_grad():
        if weights is None:
            return scatter_add(zeros(n, dtype=int64, device=dev), 0, idx,
                               ones(idx.shape[0], dtype=int64, device=dev))
        _check_tensor(weights, "bincount", "weights")
        if weights.dim() != 1 or weights.numel() != input.numel():
            raise RuntimeError("weights should be 1-d and have the same length as input")
        dt = weights.dtype if weights.dtype in (float32, float64) else float64
        return scatter_add(zeros(n, dtype=dt, device=dev), 0, idx, to_dtype(weights, dt))


# ---------------- histograms ----------------
def _linear_bins(x, edges, nb, local_search):
    """Bin positions (int64) of the in-range values x: torch's linear interpolation
    (x - lo) * nb / (hi - lo), truncated, in x's dtype; with local_search, moved to the bin
    whose edges hold x (torch.histogram's edges come from linspace and may disagree by one)."""
    lo, hi = edges.select(0, 0), edges.select(0, nb)
    pos = to_dtype(div(mul(sub(x, lo), nb), sub(hi, lo)), int64)
    if not local_search:
        return pos
    pmin = clamp(sub(pos, 1), min=0)
    count = None
    for j in range(3):                 # upper_bound over edges[pmin : min(pos + 2, nb + 1)]
        k = add(pmin, j)
        valid = lt(k, clamp(add(pos, 2), max=nb + 1))
        e = gather(edges, 0, clamp(k, max=nb).reshape(-1)).reshape(tuple(k.shape))
        hit = to_dtype(logical_and(valid, le(e, x)), int64)
        count = hit if count is None else add(count, hit)
    return sub(add(pmin, count), 1)


def _searched_bins(x, edges):
    """Bin positions of x among sorted edges: the number of edges <= x, minus one (torch's
    upper_bound; one comparison per value and edge)."""
    return sub(sum(to_dtype(le(edges, x.unsqueeze(-1)), int64), -1), 1)


def _histdd(points, edges_list, weight, density, linear, local_search):
    """The histogram of points (M, D) over the bins of edges_list (D 1-D tensors of points'
    dtype), weighted, as torch's histogramdd kernel: a point outside a dim's outer edges (or
    NaN) is skipped, a value on the last edge goes to the last bin."""
    m, nd = points.shape
    sizes = tuple(e.shape[0] - 1 for e in edges_list)
    dt, dev = points.dtype, points.device
    keep = None
    flat = None
    for k, edges in enumerate(edges_list):
        nb = sizes[k]
        x = points.select(1, k)
        lo, hi = edges.select(0, 0), edges.select(0, nb)
        inside = logical_and(ge(x, lo), le(x, hi))
        xs = where(inside, x, lo)
        pos = _linear_bins(xs, edges, nb, local_search) if linear else _searched_bins(xs, edges)
        pos = clamp(pos, 0, nb - 1)     # the last edge belongs to the last bin
        keep = inside if keep is None else logical_and(keep, inside)
        stride = 1
        for s in sizes[k + 1:]:
            stride *= s
        term = mul(pos, stride) if stride != 1 else pos
        flat = term if flat is None else add(flat, term)
    w = ones(m, dtype=dt, device=dev) if weight is None else weight
    w = where(keep, w, _scalar0(w, 0))
    total = 1
    for s in sizes:
        total *= s
    hist = scatter_add(zeros(total, dtype=dt, device=dev), 0, flat, w).reshape(sizes)
    if density:
        hist = div(hist, sum(hist))
        for k, edges in enumerate(edges_list):
            shape = [1] * nd
            shape[k] = sizes[k]
            widths = sub(edges._slice(0, 1, sizes[k] + 1, 1), edges._slice(0, 0, sizes[k], 1))
            hist = div(hist, widths.reshape(tuple(shape)))
    return hist


def _float_input(input, what, halves=True):
    if not input.dtype.is_floating_point or (not halves and input.dtype not in (float32, float64)):
        raise NotImplementedError(f"\"{what}\" not implemented for '{_tname(input.dtype)}'")


def histc(input, bins=100, min=0, max=0):
    """histc(input, bins=100, min=0, max=0): the counts of input's values in `bins` equal bins
    over [min, max] (the data's range when min == max, widened by 1 each side when that is
    empty), values outside skipped; in input's dtype; as torch.histc."""
    _check_tensor(input, "histc")
    _check_int(bins, "histc", "bins", 2)
    _float_input(input, "histogram_cpu")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel() > 0:
        lo, hi = amin(input).item(), amax(input).item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_g(lo)}, {_g(hi)}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    with _no_grad():
        x = input.detach()
        edges = linspace(lo, hi, bins + 1, dtype=x.dtype, device=x.device)
        return _histdd(x.reshape(-1, 1), [edges], None, False, True, False).reshape(bins)


def _outer_edges(points, rng, fn):
    """(leftmost, rightmost) per dim, as torch's select_outer_bin_edges: range, else the data's
    extremes (0 and 1 for no data), an empty range widened by 0.5 each side."""
    nd = points.shape[1]
    if rng is not None:
        rng = [float(v) for v in rng]
        if len(rng) != 2 * nd:
            raise RuntimeError(f"torch.histogramdd: for a {nd}-dimensional histogram range should "
                               f"have {2 * nd} elements, but got {len(rng)}")
        los, his = rng[0::2], rng[1::2]
    elif points.numel() > 0:
        los, his = amin(points, 0).tolist(), amax(points, 0).tolist()
    else:
        los, his = [0.0] * nd, [1.0] * nd
    for k in range(nd):
        lo, hi = los[k], his[k]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {k}'s range [{_g(lo)}, {_g(hi)}] is "
                               f"not finite")
        if not lo <= hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_g(lo)} "
                               f"max {_g(hi)} for dimension {k}")
        if lo == hi:
            los[k], his[k] = lo - 0.5, hi + 0.5
    return los, his


def _check_weight(points, weight, lead):
    _check_tensor(weight, "histogramdd", "weight")
    if weight.dtype is not points.dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and "
                           f"weight tensor should have the same dtype, but got input("
                           f"{_LOWER[str(points.dtype)]}), and weight({_LOWER[str(weight.dtype)]})")
    ws = tuple(weight.shape) or (1,)
    if ws != tuple(lead):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same "
                           f"shape as the input tensor excluding its innermost dimension, but got input "
                           f"with shape {list(lead) + [points.shape[-1]]} and weight with shape "
                           f"{list(weight.shape)}")


def _histogramdd(input, bins, rng, weight, density, lead, counts_first):
    """The shared body of histogram and histogramdd: input (M, D). counts_first: the bin
    counts are checked before the range (torch.histogram's order)."""
    nd = input.shape[1]
    if weight is not None:
        _check_weight(input, weight, lead)
        weight = weight.detach().reshape(-1)
    if _is_tensor(bins) or (isinstance(bins, (list, tuple)) and bins and _is_tensor(bins[0])):
        seqs = [bins] if _is_tensor(bins) else list(bins)
        if len(seqs) != nd:
            raise RuntimeError(f"torch.histogramdd: expected {nd} sequences of bin edges for a {nd}-"
                               f"dimensional histogram but got {len(seqs)}")
        for k, e in enumerate(seqs):
            _check_tensor(e, "histogramdd", "bins")
            if e.dtype is not input.dtype:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the "
                                   f"same dtype, but got input with dtype {_LOWER[str(input.dtype)]} "
                                   f"and bins for dimension {k} with dtype {_LOWER[str(e.dtype)]}")
            if e.dim() != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got "
                                   f"{e.dim()} dimensions in the bins tensor for dimension {k}")
            if e.numel() == 0:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 element, "
                                   f"but got 0 elements in the bins tensor for dimension {k}")
            if e.numel() == 1:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got 0 for dimension {k}")
        edges = [e.detach() for e in seqs]
        hist = _histdd(input, edges, weight, density, False, False)
        return hist, [e.clone() for e in edges]
    counts = [bins] * nd if isinstance(bins, int) and not isinstance(bins, bool) else list(bins)
    for c in counts:
        _check_int(c, "histogramdd", "bins", 2)

    def check_counts():
        for k, c in enumerate(counts):
            if c <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {c} for dimension {k}")
    if counts_first:
        check_counts()
    los, his = _outer_edges(input, rng, "histogramdd")
    if len(counts) != nd:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension "
                           "of the input.")
    check_counts()
    edges = [linspace(los[k], his[k], counts[k] + 1, dtype=input.dtype, device=input.device)
             for k in range(nd)]
    return _histdd(input, edges, weight, density, True, True), edges


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """histogram(input, bins, *, range=None, weight=None, density=False) -> (hist, bin_edges):
    the histogram of input's values (flattened) in `bins` equal bins over range (the data's
    range, or [0, 1] for no data), or over the given edges (a 1-D tensor); weighted; density
    divides by the total and the bin widths; float inputs only, hist in input's dtype; as
    torch.histogram (float32 and float64 only, as torch on the CPU)."""
    _check_tensor(input, "histogram")
    _float_input(input, "histogramdd", False)
    x = input.detach().reshape(-1, 1)
    lead = (x.shape[0],)
    if weight is not None:
        _check_tensor(weight, "histogram", "weight")
        weight = weight.reshape(-1)
    with _no_grad():
        hist, edges = _histogramdd(x, bins, range, weight, density, lead, True)
    return _histogram_t(hist, edges[0])


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """histogramdd(input, bins, *, range=None, weight=None, density=False) -> (hist,
    bin_edges): the D-dimensional histogram of the points input (..., D): bins an int, D ints
    or D 1-D tensors of edges; range 2 * D numbers; weight of input's shape without its last
    dim; as torch.histogramdd."""
    _check_tensor(input, "histogramdd")
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    _float_input(input, "histogramdd", False)
    lead = tuple(input.shape[:-1])
    x = input.detach().reshape(-1, input.shape[-1])
    with _no_grad():
        hist, edges = _histogramdd(x, bins, range, weight, density, lead, False)
    return _histogramdd_t(hist, tuple(edges))


# ---------------- cov, corrcoef ----------------
def _check_weights(w, name, kind_ok, kind, n):
    _check_tensor(w, "cov", name)
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} "
                           f"with {w.dim()} dimensions")
    if not kind_ok(w.dtype):
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{_tname(w.dtype)} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations "
                           f"in the input but got {w.numel()} != {n}")
    if n and not _C._trace_active() and amin(w).item() < 0:
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """cov(input, *, correction=1, fweights=None, aweights=None): the covariance matrix of the
    variables (rows) of input (a 1-D input is one variable), observations weighted by integer
    frequencies and float weights, normalised by sum(w) - correction (with aweights: numpy's
    formula); squeezed; differentiable; as torch.cov (degrees of freedom <= 0 warn and give
    inf/nan)."""
    _check_tensor(input, "cov")
    _check_int(correction, "cov", "correction", 2)
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input "
                           f"with {input.dim()} dimensions")
    if input.dtype is bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights(fweights, "fweights", lambda d: not d.is_floating_point and d is not bool_,
                       "integral", n)
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", lambda d: d.is_floating_point, "floating point", n)
        w = aweights if w is None else mul(w, aweights)
    eager = not _C._trace_active()
    if w is None:
        w_sum = full((), n, dtype=int64, device=x.device)
        avg = div(sum(x, 1), w_sum)
        nf = full((), n - correction, dtype=int64, device=x.device)
    else:
        w_sum = sum(w)
        if eager and w_sum.item() == 0:
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = div(sum(mul(x, w), 1), w_sum)
        if correction == 0:
            nf = w_sum
        elif aweights is None:
            nf = sub(w_sum, correction)
        elif fweights is None and n == 1 and correction == 1:
            nf = full((), 0, dtype=int64, device=x.device)
        else:
            nf = sub(w_sum, div(mul(sum(mul(w, aweights)), correction), w_sum))
    if eager and nf.item() <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than "
                      "the number of observations.", UserWarning, stacklevel=2)
    nf = where(le(nf, 0), _scalar0(nf, 0), nf)
    if n == 1 and (fweights is None) != (aweights is None):
        xm = zeros(tuple(x.shape), dtype=x.dtype if x.dtype.is_floating_point else float32,
                   device=x.device)    # torch zeroes its input here; symtrace leaves it alone
        if x.requires_grad:
            xm = add(mul(x, 0), xm)
    else:
        xm = sub(x, avg.unsqueeze(1))
    c = matmul(xm, (mul(xm, w) if w is not None else xm).transpose(0, 1))
    return div(c, nf).squeeze()


def corrcoef(input):
    """corrcoef(input): Pearson's correlation coefficients of the variables (rows) of input:
    cov(input) divided by the products of the standard deviations, clipped to [-1, 1]; a
    single variable gives c / c; as torch.corrcoef."""
    _check_tensor(input, "corrcoef")
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return div(c, c)
    std = sqrt(diagonal(c))
    c = div(c, std.reshape(-1, 1))
    c = div(c, std.reshape(1, -1))
    return clamp(c, -1, 1)
