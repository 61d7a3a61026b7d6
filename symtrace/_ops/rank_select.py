"""topk without reading values, for symtrace.compile: each element's rank in its row is
counted with broadcast comparisons (how many elements come before it in topk's order),
and the indices of ranks 0..k-1 are picked out with eq/sum. Every op is a graph op, so a
router's topk (a mixture of experts) stays in the graph instead of breaking it as the
host sort of sorting.py does. The order is sorting.py's exactly: NaN the largest, among
equal values the lower index first. It costs rows * n * n comparisons, so it is taken
only for short rows (_RANK_MAX_N) and a bounded total (_RANK_MAX_ELEMS). It and topk are
dyn_inline: under dynamic shapes the translator follows the row length into arange."""
from .. import _C
from .._dtype import bool_, int64
from .._symint import dyn_inline
from ._core import _no_grad
from .creation import arange
from .elementwise import eq, gt, logical_and, logical_not, logical_or, lt, mul
from .float_math import isnan
from .reductions import sum
from .shape import movedim

_RANK_MAX_N = 256
_RANK_MAX_ELEMS = 1 << 22


def _rank_fits(x, d):
    """Whether topk of x (at least 1-D) along dim d takes _rank_topk_indices: while a graph
    is traced (here, not in topk: under dynamic shapes topk's own code is translated, and
    this runs for real), with rows short enough."""
    n = x.shape[d]
    return (_C._trace_active() and 0 < n <= _RANK_MAX_N and x.numel() * n <= _RANK_MAX_ELEMS
            and x.dtype is not bool_)


@dyn_inline
def _rank_topk_indices(x, d, k, largest):
    """The int64 indices (x's shape with dim d of size k) of topk(x, k, d, largest)."""
    with _no_grad():
        a = movedim(x.detach(), d, -1)
        n = a.shape[-1]
        ai, aj = a.unsqueeze(-1), a.unsqueeze(-2)        # element i (rows), element j (columns)
        beats = gt(aj, ai) if largest else lt(aj, ai)    # j comes before i by value
        ties = eq(aj, ai)
        if a.dtype.is_floating_point:
            ni, nj = isnan(ai), isnan(aj)
            # NaN is the largest: first for largest=True, last for largest=False
            nan_first = logical_and(nj, logical_not(ni)) if largest else logical_and(ni, logical_not(nj))
            beats = logical_or(beats, nan_first)
            ties = logical_or(ties, logical_and(ni, nj))
        pos = arange(n, device=a.device)
        earlier = lt(pos.unsqueeze(0), pos.unsqueeze(-1))    # [i, j]: j < i
        before = logical_or(beats, logical_and(ties, earlier))
        rank = sum(before, -1)                                   # (..., n) int64
        pick = eq(rank.unsqueeze(-1), arange(k, device=a.device))  # (..., n, k)
        idx = sum(mul(pick.to(int64), pos.unsqueeze(-1)), -2)     # (..., k)
        return movedim(idx, -1, d)

