"""Reads by index: the index_select, gather and scatter_add kernels, and take,
take_along_dim and masked_select written over them. The writes by index (scatter,
index_add, ...) and nonzero are in scatter_ops.py. _bad_index gives an index kernel's
out-of-range error torch's exception type and text for the op that ran it."""
import contextlib

from .. import _C
from .._dtype import bool_, int64
from ._core import _attrs, _bshape, _check_tensor, _op, _tname, _wrap
from .elementwise import add, lt, remainder, where
from .creation import to_device


# ---------------- indexing ----------------
@contextlib.contextmanager
def _bad_index(kind, fmt="{}"):
    """Re-raises the index kernels' IndexError "index i is out of bounds for dimension d
    with size n" as torch's exception for the op: kind(fmt with the message); torch raises
    RuntimeError for gather and the scatters, IndexError for the index_* ops. Eager only: a
    compiled graph's kernel raises the IndexError itself, so under a trace (the first call of
    a compiled function runs its ops) the error stays that IndexError, as on later calls."""
    try:
        yield
    except IndexError as e:
        if "out of bounds for dimension" not in str(e) or _C._trace_active():
            raise
        raise kind(fmt.format(e)) from None


def index_select(input, dim, index):
    _check_tensor(input, "index_select")
    _check_tensor(index, "index_select", "index")
    with _bad_index(IndexError, "index out of range in self: {}"):    # torch's text, then ours
        return _op(_C.OP_INDEX_SELECT, (input, index), _attrs(ints=(dim,)))


def _index_rows(input, index):
    """input[index] for one int index tensor (at least 1-D) and input at least 1-D: the rows
    of input at index (negative ones from the end), of shape index.shape + input.shape[1:].
    The translator takes this path for such a subscript under dynamic shapes
    (frontend/tr_iter.c): translated, not run, its reshape target stays an expression of the
    index's symbolic sizes (Tensor.__getitem__ computes it where the translator cannot see)."""
    n = input.shape[0]
    flat = index.reshape(-1)
    flat = where(lt(flat, 0), add(flat, n), flat)
    return index_select(input, 0, flat).reshape(tuple(index.shape) + tuple(input.shape[1:]))


def gather(input, dim, index):
    _check_tensor(input, "gather")
    _check_tensor(index, "gather", "index")
    with _bad_index(RuntimeError):
        return _op(_C.OP_GATHER, (input, index), _attrs(ints=(dim,)))


def _scatter_add(input, dim, index, src):
    """The scatter_add primitive, its out-of-range IndexError unchanged (for the index_*
    ops, which torch reports as IndexError)."""
    return _op(_C.OP_SCATTER_ADD, (input, index, src), _attrs(ints=(dim,)))


def scatter_add(input, dim, index, src):
    """scatter_add(input, dim, index, src): a copy of input with
    out[..., index[p], ...] += src[p] along dim, for every point p of index
    (repeated indices accumulate)."""
    _check_tensor(input, "scatter_add")
    _check_tensor(index, "scatter_add", "index")
    _check_tensor(src, "scatter_add", "src")
    with _bad_index(RuntimeError):
        return _scatter_add(input, dim, index, src)


def _scatter(input, dim, index, src):
    """The scatter primitive: a copy of input with out[..., index[p], ...] = src[p]
    along dim, for every point p of index (a repeated position gets one of its values);
    torch.scatter's operand rules (index int64 of input's rank, no larger than src).
    Differentiable in input (the written positions get no gradient) and src."""
    return _op(_C.OP_SCATTER, (input, index, src), _attrs(ints=(dim,)))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """slice_scatter(input, src, dim=0, start=None, end=None, step=1): a copy of input
    with its slice start:end:step along dim replaced by src (of the slice's shape; cast
    to input's dtype); as torch.slice_scatter. What an in-place write into a slice of a
    tensor traces to under symtrace.compile."""
    _check_tensor(input, "slice_scatter")
    _check_tensor(src, "slice_scatter", "src")
    if src.dtype != input.dtype:
        src = _op(_C.OP_CAST, (src,), _attrs(dtype=input.dtype))
    ints = (dim, 0 if start is None else start, (1 << 63) - 1 if end is None else end, step)
    return _op(_C.OP_SLICE_SCATTER, (input, src), _attrs(ints=ints))


# ---- reads by index, decomposed ----
def take_along_dim(input, indices, dim=None):
    """take_along_dim(input, indices, dim=None): gather along dim with input and indices
    broadcast in the other dims (both flattened when dim is None); as torch.take_along_dim."""
    _check_tensor(input, "take_along_dim")
    _check_tensor(indices, "take_along_dim", "indices")
    if indices.dtype is not int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_tname(indices.dtype)}")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    nd = input.dim()
    d = _wrap(dim, nd, "take_along_dim")
    if indices.dim() != nd:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number "
                           f"of dimensions, but got {nd} dimensions for input, and {indices.dim()} "
                           f"dimensions for indices")
    s_in, s_ix = list(input.shape), list(indices.shape)
    s_in[d] = s_ix[d]
    shape = list(_bshape(tuple(s_in), tuple(s_ix)))
    n = input.shape[d]
    # torch (2.7+) takes the indices along dim modulo its size: negative ones count
    # from the end, and so does any other out-of-range one (5 of 3 reads 2); a
    # size-0 dim with indices to read is its integer modulo by zero
    if n == 0 and indices.numel():
        raise RuntimeError("ZeroDivisionError")
    idx = remainder(indices, n) if n else indices
    idx = idx.expand(tuple(shape))
    shape[d] = n
    return gather(input.expand(tuple(shape)), d, idx)


def take(input, index):
    """take(input, index): input flattened, read at index (negative indices count from the
    end); the result has index's shape; as torch.take."""
    _check_tensor(input, "take")
    _check_tensor(index, "take", "index")
    if index.dtype is not int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_tname(index.dtype)}")
    n = input.numel()
    flat = input.reshape(-1)
    idx = index.reshape(-1)
    idx = where(lt(idx, 0), add(idx, n), idx)
    try:
        return index_select(flat, 0, idx).reshape(tuple(index.shape))
    except IndexError as e:
        _raise_flat_range(e, index, n)


def _raise_flat_range(e, index, n):
    """torch's IndexError for take and put: the first index outside [-n, n) (read from
    index: on this error path only), else e."""
    bad = next((i for i in index.reshape(-1).tolist() if not -n <= i < n), None)
    if bad is None:
        raise e
    raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.") from None


def masked_select(input, mask):
    """masked_select(input, mask) -> 1-D Tensor: the elements of input (broadcast with mask)
    where mask is True. Its length depends on mask's values, which are read (.tolist(): a
    graph break under symtrace.compile, as in torch); differentiable in input. As
    torch.masked_select."""
    _check_tensor(input, "masked_select")
    _check_tensor(mask, "masked_select", "mask")
    if mask.dtype is not bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask")
    shape = _bshape(tuple(input.shape), tuple(mask.shape))
    keep = [i for i, v in enumerate(mask.expand(shape).reshape(-1).tolist()) if v]
    idx = _C.tensor(keep, int64)
    if input.device.type != "cpu":
        idx = to_device(idx, input.device)
    return index_select(input.expand(shape).reshape(-1), 0, idx)
