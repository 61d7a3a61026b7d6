"""How a written-to tensor and an operand share memory, in torch's terms
(at::get_overlap_status), for the in-place ops written in Python (Tensor._via's
out-of-place op and copy, setitem with index tensors): the C eager runtime checks
the ops it runs itself (runtime/eager.c). As torch's:

- FULL: the same tensor, or the same bytes with the same strides;
- PARTIAL: both dense (non-overlapping and dense) and their byte ranges meet;
- TOO_HARD: one is not dense (a strided slice, an expansion): torch lets it run;
- NO: no element shared.

check_partial (TensorIterator's assert_no_partial_overlap) and check_none
(index_put_'s assert_no_overlap) raise torch's RuntimeError."""
import math

from . import _C
from ._dtype import bool_, int64

NO, FULL, PARTIAL, TOO_HARD = range(4)

_MESSAGE = ("unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location. Please clone() the tensor before performing the "
            "operation.")


def _dense(t):
    """t's elements fill a block of memory once each (torch's is_non_overlapping_and_dense)."""
    dims = sorted((s, n) for s, n in zip(t.stride(), t.shape) if n != 1)
    expected = 1
    for s, n in dims:
        if s != expected:
            return False
        expected *= n
    return True


def status(a, b):
    """a's overlap with b: NO, FULL, PARTIAL or TOO_HARD."""
    if a is b:
        return FULL
    if not isinstance(b, _C.TensorBase) or a.numel() == 0 or b.numel() == 0:
        return NO
    if not _dense(a) or not _dense(b):
        return TOO_HARD
    if a._device_str != b._device_str or a._storage_id() != b._storage_id():
        return NO
    a0, b0 = a.storage_offset() * a.element_size(), b.storage_offset() * b.element_size()
    a1, b1 = a0 + a.numel() * a.element_size(), b0 + b.numel() * b.element_size()
    if a0 == b0 and a1 == b1:
        return FULL if tuple(a.stride()) == tuple(b.stride()) else PARTIAL
    return PARTIAL if a0 < b1 and b0 < a1 else NO


def check_partial(name, out, operands):
    """torch's error when an operand shares some, not all, of out's elements."""
    for x in operands:
        if isinstance(x, _C.TensorBase) and status(out, x) == PARTIAL:
            raise RuntimeError(f"{name}: {_MESSAGE}")


def check_none(name, out, operands):
    """torch's error when an operand shares any of out's elements (index_put_'s value)."""
    for x in operands:
        if isinstance(x, _C.TensorBase) and status(out, x) in (PARTIAL, FULL):
            raise RuntimeError(f"{name}: {_MESSAGE}")


# ---- torch's write order for the in-place ops computed in Python (Tensor._via)

def _bstride(t, nd, shape, d):
    k = d - (nd - t.dim())
    if k < 0 or (t.shape[k] == 1 and shape[d] != 1):
        return 0
    return t.stride()[k]


def _torch_order(ops, shape):
    """TensorIterator's reorder_dimensions over out then the operands: the dims,
    innermost first."""
    nd = len(shape)
    order = list(range(nd - 1, -1, -1))
    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            a, b, c = order[d0], order[d1], 0
            for t in ops:
                sa, sb = _bstride(t, nd, shape, a), _bstride(t, nd, shape, b)
                if sa == 0 or sb == 0:
                    continue
                if sa != sb:
                    c = -1 if sa < sb else 1
                elif shape[a] > shape[b]:
                    c = 1
                if c:
                    break
            if c > 0:
                order[d0], order[d1] = b, a
                d1 = d0
            elif c < 0:
                break
    return order


def _broadcasts_into(t, shape):
    if t.dim() > len(shape):
        return False
    return all(n == m or n == 1 for n, m in zip(reversed(tuple(t.shape)), reversed(shape)))


# torch's at::internal::GRAIN_SIZE: a larger op is split between threads, which write in
# no one order; element by element from Python is slow, so larger ones run as usual
_GRAIN = 32768


def _disjoint(out, shares):
    """No operand in shares can reach an element of out: their offsets differ by no
    multiple of the gcd of all their strides (x[:, ::2] and x[:, 1::2])."""
    for x in shares:
        g = 0
        for t in (out, x):
            for n, s in zip(t.shape, t.stride()):
                if n > 1:
                    g = math.gcd(g, s)
        if g == 0 or (out.storage_offset() - x.storage_offset()) % g == 0:
            return False
    return True


def sequential_recorded(out, compute, operands, run):
    """sequential with a gradient involved: torch's kernel writes the values it writes
    without one, its autograd records the op as of the operands' old values. Those values
    are computed first on views of a copy of the storage (no grad), then run() does the op
    as usual (recorded), and they are written over its result through .data (no version
    moved, nothing recorded). False (nothing done) where sequential does nothing."""
    if out.dim() == 0 or not 2 <= out.numel() <= _GRAIN or out._device_str != "cpu" or \
            not _C._is_grad_enabled():
        return False
    sid = out._storage_id()
    shared = [x for x in operands if isinstance(x, _C.TensorBase) and x._storage_id() == sid
              and x._device_str == out._device_str and x.dim() > 0]
    if not shared:
        return False
    from . import _ops

    def span(t):
        lo = hi = t.storage_offset()
        for n, st_ in zip(t.shape, t.stride()):
            if n == 0:
                return None
            lo, hi = (lo + st_ * (n - 1), hi) if st_ < 0 else (lo, hi + st_ * (n - 1))
        return lo, hi
    spans = [span(t) for t in [out] + shared]
    if any(sp is None for sp in spans):
        return False
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    with _ops._no_grad():
        copy = out.detach().as_strided((hi - lo + 1,), (1,), lo).clone()
        alias = {id(x): copy.as_strided(tuple(x.shape), tuple(x.stride()), x.storage_offset() - lo)
                 for x in shared}
        shadow = copy.as_strided(tuple(out.shape), tuple(out.stride()), out.storage_offset() - lo)
        if not sequential(shadow, compute, tuple(alias.get(id(x), x) if isinstance(x, _C.TensorBase)
                                                 else x for x in operands)):
            return False
    run()
    with _ops._no_grad():
        out.data.copy_(shadow)
    return True


def sequential(out, compute, operands):
    """out = compute(out, *operands) as torch writes it when an operand shares out's
    elements as torch cannot tell (TOO_HARD) and an element reads what another one
    writes: in torch's order, row by row (the innermost dim after torch's coalescing),
    element by element in a row where one element reads what another writes, but a
    vector at a time first where torch's vectorized loop runs; compute runs on views of one row
    (operands broadcast into out's shape; 0-d tensors and numbers as they are) and its
    result is copied in. Returns False (nothing done) when no element depends on the
    order, an operand does not broadcast into out, a gradient is involved, or out has
    more than _GRAIN elements: the caller computes as usual. As runtime/overlap_seq.c
    does for the ops run in C."""
    shape = tuple(out.shape)
    if out.dim() == 0 or not 2 <= out.numel() <= _GRAIN or out._device_str != "cpu":
        return False
    ts = [x for x in operands if isinstance(x, _C.TensorBase)]
    if _C._is_grad_enabled() and (out.requires_grad or any(x.requires_grad for x in ts)):
        return False
    shares = [x for x in ts if x._device_str == out._device_str and x._storage_id() == out._storage_id()
              and x.element_size() == out.element_size()]
    if not any(status(out, x) == TOO_HARD for x in shares) or \
            not all(_broadcasts_into(x, shape) for x in ts):
        return False
    nd = len(shape)
    order = _torch_order([out] + ts, shape)
    dims = [shape[d] for d in order]                   # innermost first
    if _disjoint(out, shares):
        return False
    # every element's address, in torch's order (flat, outermost dim first), as tensors
    from . import _ops
    total, n = out.numel(), dims[0]

    def addresses(t):
        a = _ops.full((), t.storage_offset(), dtype=int64)
        for k, d in enumerate(order):
            view = [1] * nd
            view[nd - 1 - k] = dims[k]
            a = a + _ops.arange(dims[k], dtype=int64).reshape(view) * _bstride(t, nd, shape, d)
        return a.reshape(-1)
    w = addresses(out)
    lo, hi = int(w.min()), int(w.max())
    pos = _ops.full((hi - lo + 1,), -1, dtype=int64)    # an out address's flat index
    pos[w - lo] = _ops.arange(total, dtype=int64)
    own = _ops.arange(total, dtype=int64)
    bad = _ops.zeros((total,), dtype=bool_)
    for x in shares:
        r = addresses(x)
        inside = (r >= lo) & (r <= hi)
        j = _ops.where(inside, pos[(r - lo).clamp(0, hi - lo)], -1)
        bad = bad | ((j >= 0) & (j != own))
    if not bool(bad.any()):
        return False
    # TensorIterator's coalesce_dimensions: rows as torch's kernel loop gets them
    tens = [out] + [x for x in operands if isinstance(x, _C.TensorBase)]
    sizes = list(dims)
    strides = [[_bstride(t, nd, shape, d) for d in order] for t in tens]
    prev = 0
    for d in range(1, nd):
        if sizes[prev] == 1 or sizes[d] == 1 or \
                all(sizes[prev] * st_[prev] == st_[d] for st_ in strides):
            if sizes[prev] == 1:
                for st_ in strides:
                    st_[prev] = st_[d]
            sizes[prev] *= sizes[d]
        else:
            prev += 1
            if prev != d:
                for st_ in strides:
                    st_[prev] = st_[d]
                sizes[prev] = sizes[d]
    del sizes[prev + 1:]
    strides = [st_[:prev + 1] for st_ in strides]
    n = sizes[0]
    row_bad = bad.reshape(total // n, n).any(1).tolist()
    # torch's vectorized loop (one dtype, contiguous rows, at most one operand broadcast
    # along them): a vector at a time, the broadcast operand read at the row's start
    vec, vs = 0, None
    if strides[0][0] == 1:
        ok = True
        for k, t in enumerate(tens[1:], 1):
            if t.dim() > 0 and t.dtype != out.dtype:
                ok = False
            elif strides[k][0] == 0:
                ok, vs = vs is None and ok, k
            elif strides[k][0] != 1:
                ok = False
        if ok:
            vec = _C._overlap_vec_bytes() // out.element_size()
    pos_of = {id(t): k for k, t in enumerate(tens)}

    def view(k, start, count):
        off = tens[k].storage_offset() + sum(i * st_ for i, st_ in zip(start, strides[k]))
        return tens[k].as_strided((count,), (strides[k][0] if count > 1 else 1,), off)

    import itertools
    outers = itertools.product(*[range(m) for m in reversed(sizes[1:])])   # outermost first
    for r, outer in enumerate(outers):
        outer = list(reversed(outer))                  # innermost first
        if not row_bad[r]:
            spans = [(0, n)]
        elif vec > 1 and n >= vec:
            spans = [(i, vec) for i in range(0, n - n % vec, vec)] + \
                [(i, 1) for i in range(n - n % vec, n)]
        else:
            spans = [(i, 1) for i in range(n)]
        held = None
        if vs is not None and row_bad[r] and vec > 1 and n >= vec:
            held = view(vs, [0] + outer, 1).clone()    # the broadcast operand, now
        for i0, count in spans:
            start = [i0] + outer
            o = view(0, start, count)
            args = []
            for x in operands:
                k = pos_of.get(id(x)) if isinstance(x, _C.TensorBase) and x.dim() > 0 else None
                if k is None:
                    args.append(x)
                elif k == vs and held is not None and count > 1:
                    args.append(held.expand(count))
                else:
                    args.append(view(k, start, count))
            o.copy_(compute(o, *args))
    return True
