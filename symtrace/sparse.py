"""symtrace.sparse: sparse COO tensors as torch.sparse_coo_tensor makes them, for the code
that GNNs are written in (a normalised adjacency times node features: torch.sparse.mm,
torch.spmm, adj @ x). A SparseCOOTensor holds an int64 indices tensor (sparse_dim x nnz) and
a values tensor (nnz, *dense dims), both ordinary tensors: every op here is made of dense
symtrace ops (index_select, index_add, unique), so gradients reach values and the dense
operand through the usual autograd (sparse.softmax too, for sparse attention), and a compiled function traces through them (coalesce's
unique is data-dependent: a graph break, as torch.compile's). Not a Tensor subclass: only the
operations below exist (to_dense() gives a dense tensor for anything else)."""
import builtins
import math

from . import _C, _layout
from ._dtype import bool_, int64
from ._ops import _core

__all__ = ["SparseCOOTensor", "sparse_coo_tensor", "mm", "spmm", "addmm", "sum", "softmax", "log_softmax"]


def _check_dense(x, fn, name):
    if not _core._is_tensor(x):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


class SparseCOOTensor:
    """A sparse COO tensor (layout symtrace.sparse_coo): indices (sparse_dim, nnz), values
    (nnz, *dense_dims), size. Duplicate indices are summed (coalesce(), to_dense())."""
    _st_sparse = True      # what st.mm / st.matmul look for
    is_sparse = True
    layout = _layout.sparse_coo
    is_meta = False

    def __init__(self, indices, values, size, coalesced=False):
        self._idx, self._vals = indices, values
        self._size = _C.Size(size)
        self._coalesced = coalesced

    # ---- structure
    @property
    def shape(self):
        return self._size

    def size(self, dim=None):
        return self._size if dim is None else self._size[_core._wrap(dim, len(self._size), "size")]

    def dim(self):
        return len(self._size)

    ndim = property(dim)

    def sparse_dim(self):
        return self._idx.shape[0]

    def dense_dim(self):
        return self._vals.dim() - 1

    def _nnz(self):
        return self._idx.shape[1]

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def device(self):
        return self._vals.device

    @property
    def requires_grad(self):
        return self._vals.requires_grad

    def requires_grad_(self, requires_grad=True):
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient of a sparse tensor made with requires_grad=True: sparse, coalesced, the
        gradient at each stored position (duplicates share it, as torch's)."""
        g = self._vals.grad
        if g is None:
            return None
        from ._ops import ones_like
        total = SparseCOOTensor(self._idx, g, self._size).coalesce()
        count = SparseCOOTensor(self._idx, ones_like(g), self._size).coalesce()
        return total._with_values(total._vals / count._vals)

    def is_coalesced(self):
        return self._coalesced

    def _indices(self):
        return self._idx

    def _values(self):
        return self._vals

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def _linear(self):
        """Each entry's row-major position over the sparse dims."""
        lin, n = None, self.sparse_dim()
        for d in range(n):
            stride = math.prod(self._size[d + 1:n])
            term = self._idx[d] * stride if stride != 1 else self._idx[d]
            lin = term if lin is None else lin + term
        return lin

    def coalesce(self):
        """Indices sorted and unique, the values of duplicates summed (as torch's)."""
        if self._coalesced:
            return self
        from ._ops import unique, zeros
        n = self.sparse_dim()
        if self._nnz() == 0:
            return SparseCOOTensor(self._idx, self._vals, self._size, True)
        uniq, inv = unique(self._linear(), sorted=True, return_inverse=True)
        vals = zeros((uniq.shape[0],) + tuple(self._vals.shape[1:]), dtype=self._vals.dtype,
                     device=self._vals.device).index_add(0, inv, self._vals)
        rows, rest = [], uniq
        for d in range(n - 1, -1, -1):
            rows.append(rest % self._size[d])
            rest = rest // self._size[d]
        from ._ops import stack
        return SparseCOOTensor(stack(rows[::-1]), vals, self._size, True)

    def to_dense(self):
        from ._ops import zeros
        n = self.sparse_dim()
        flat = zeros((math.prod(self._size[:n]),) + tuple(self._size[n:]), dtype=self._vals.dtype,
                     device=self._vals.device)
        if self._nnz():
            flat = flat.index_add(0, self._linear(), self._vals)
        return flat.reshape(tuple(self._size))

    # ---- conversions
    def _with_values(self, values, coalesced=None):
        return SparseCOOTensor(self._idx, values, self._size,
                               self._coalesced if coalesced is None else coalesced)

    def to(self, *args, **kwargs):
        vals = self._vals.to(*args, **kwargs)
        return SparseCOOTensor(self._idx.to(vals.device), vals, self._size, self._coalesced)

    def float(self):
        return self._with_values(self._vals.float())

    def double(self):
        return self._with_values(self._vals.double())

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def detach(self):
        return self._with_values(self._vals.detach())

    def clone(self):
        return SparseCOOTensor(self._idx.clone(), self._vals.clone(), self._size, self._coalesced)

    def to_sparse(self):
        return self

    def t(self):
        if self.sparse_dim() != 2 or self.dense_dim():
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                               f"{self.sparse_dim()} sparse and {self.dense_dim()} dense dimensions")
        return SparseCOOTensor(self._idx.flip(0), self._vals, (self._size[1], self._size[0]))

    def transpose(self, dim0, dim1):
        n = self.sparse_dim()
        d0, d1 = _core._wrap(dim0, self.dim(), "transpose"), _core._wrap(dim1, self.dim(), "transpose")
        if d0 >= n or d1 >= n:
            raise RuntimeError("transpose: only the sparse dimensions of a sparse tensor can be transposed")
        order = list(range(n))
        order[d0], order[d1] = d1, d0
        size = list(self._size)
        size[d0], size[d1] = size[d1], size[d0]
        from ._ops import stack
        idx = stack([self._idx[k] for k in order]) if d0 != d1 else self._idx
        return SparseCOOTensor(idx, self._vals, size, self._coalesced and d0 == d1)

    # ---- arithmetic
    def matmul(self, other):
        return mm(self, other) if _core._is_tensor(other) and other.dim() == 2 else _mv(self, other)

    __matmul__ = matmul

    def __rmatmul__(self, other):
        return mm(other, self)

    def mm(self, mat2):
        return mm(self, mat2)

    def __mul__(self, other):
        if isinstance(other, SparseCOOTensor):
            return (self.to_dense() * other.to_dense()).to_sparse()
        if _core._is_tensor(other) and other.dim():
            if tuple(other.shape) != tuple(self._size):
                raise RuntimeError(f"mul: a sparse tensor of size {tuple(self._size)} times a dense "
                                   f"tensor of size {tuple(other.shape)}: only equal sizes are supported")
            return self._with_values(self._vals * other[tuple(self._idx)])
        return self._with_values(self._vals * other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, SparseCOOTensor) or (_core._is_tensor(other) and other.dim()):
            raise RuntimeError("div: a sparse tensor can only be divided by a scalar")
        return self._with_values(self._vals / other)

    def __neg__(self):
        return self._with_values(-self._vals)

    def __add__(self, other):
        if isinstance(other, SparseCOOTensor):
            if tuple(other.shape) != tuple(self._size):
                raise RuntimeError(f"add: expected sizes to match, but got {tuple(self._size)} and "
                                   f"{tuple(other.shape)}")
            from ._ops import cat
            return SparseCOOTensor(cat([self._idx, other._idx], 1), cat([self._vals, other._vals], 0),
                                   self._size)
        return self.to_dense() + other

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-other)

    def sum(self, dim=None, dtype=None):
        return sum(self, dim, dtype)

    def __len__(self):
        return self._size[0]

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        ind = "\n".join(("" if i == 0 else " " * 15) + line
                        for i, line in enumerate(repr(self._idx).splitlines()))
        val = "\n".join(("" if i == 0 else " " * 14) + line
                        for i, line in enumerate(repr(self._vals).splitlines()))
        return (f"tensor(indices={ind},\n       values={val},\n       size={tuple(self._size)}, "
                f"nnz={self._nnz()}, layout=symtrace.sparse_coo{grad})")


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
    requires_grad=False): a sparse COO tensor; indices (sparse_dim, nnz) integers, values
    (nnz, *dense_dims); size inferred as each sparse dim's largest index + 1 when left out.
    An index outside size raises (torch checks only with check_invariants). As
    torch.sparse_coo_tensor."""
    import symtrace
    idx = indices if _core._is_tensor(indices) else symtrace.tensor(indices)
    vals = values if _core._is_tensor(values) else symtrace.tensor(values, dtype=dtype)
    if dtype is not None and vals.dtype is not dtype:
        vals = vals.to(dtype)
    if device is not None:
        vals = vals.to(device)
    if idx.dtype.is_floating_point or idx.dtype is bool_:
        raise RuntimeError(f"indices must be an int64 tensor, not {idx.dtype}")
    idx = idx.to(device=vals.device, dtype=int64)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.dim() < 1:
        raise RuntimeError(f"values must be at least 1-dimensional (nnz, ...), but got {list(vals.shape)}")
    nnz, n = idx.shape[1], idx.shape[0]
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, "
                           f"nnz from values: {vals.shape[0]}")
    mx = idx.amax(1).tolist() if nnz else [-1] * n
    if nnz and builtins.min(idx.amin(1).tolist()) < 0:
        raise RuntimeError("found negative index in the indices of a sparse tensor")
    if size is None:
        size = tuple(m + 1 for m in mx) + tuple(vals.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != n + vals.dim() - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({n}) + dense_dim "
                           f"({vals.dim() - 1}), but got {len(size)}")
    for d in range(n):
        if mx[d] >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but "
                               f"found index {mx[d]}")
    if tuple(vals.shape[1:]) != size[n:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz] + list(size[n:])}, got "
                           f"{list(vals.shape)}")
    if requires_grad:
        vals = vals.detach().requires_grad_(True)
    return SparseCOOTensor(idx, vals, size, bool(is_coalesced) or nnz <= 1)


def _check_sparse(x, fn, name):
    if not isinstance(x, SparseCOOTensor):
        raise TypeError(f"{fn}(): argument '{name}' must be a sparse COO tensor, not {type(x).__name__}")


def mm(mat1, mat2):
    """mm(sparse, dense) -> dense: a sparse (n, m) matrix times a dense (m, k) one; the
    gradient reaches both the dense operand and the sparse one's values (as torch.sparse.mm)."""
    if not isinstance(mat1, SparseCOOTensor):
        if isinstance(mat2, SparseCOOTensor):   # dense @ sparse = (sparse.T @ dense.T).T
            _check_dense(mat1, "mm", "mat1")
            return mm(mat2.t(), mat1.t()).t()
        from ._ops import mm as dense_mm
        return dense_mm(mat1, mat2)
    if isinstance(mat2, SparseCOOTensor):
        return mm(mat1, mat2.to_dense()).to_sparse()
    _check_dense(mat2, "mm", "mat2")
    if mat1.sparse_dim() != 2 or mat1.dense_dim():
        raise RuntimeError(f"mm: expected a 2-D sparse matrix with no dense dims, but got "
                           f"{mat1.sparse_dim()} sparse and {mat1.dense_dim()} dense dims")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if mat2.shape[0] != mat1.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1.shape[1]}, got "
                           f"{mat2.shape[0]}")
    if mat2.dtype is not mat1.dtype:
        raise RuntimeError(f"mm: expected the sparse and dense operands to have the same dtype, but "
                           f"got {mat1.dtype} and {mat2.dtype}")
    from ._ops import zeros
    out = zeros((mat1.shape[0], mat2.shape[1]), dtype=mat2.dtype, device=mat2.device)
    if mat1._nnz() == 0:
        return out + 0 * mat2.sum() if mat2.requires_grad else out
    rows, cols = mat1._idx[0], mat1._idx[1]
    return out.index_add(0, rows, mat1._vals.unsqueeze(-1) * mat2.index_select(0, cols))


def _mv(sp, vec):
    _check_dense(vec, "matmul", "other")
    if vec.dim() != 1:
        raise RuntimeError(f"matmul: a sparse matrix times a {vec.dim()}-D dense tensor is not "
                           "supported (1-D or 2-D only)")
    return mm(sp, vec.unsqueeze(-1)).squeeze(-1)


def spmm(input, mat2):
    """spmm(sparse, dense): torch.spmm, the same as mm."""
    return mm(input, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """addmm(mat, sparse, dense, *, beta=1, alpha=1) = beta * mat + alpha * (sparse @ dense)."""
    _check_sparse(mat1, "addmm", "mat1")
    prod = mm(mat1, mat2)
    return (mat if beta == 1 else mat * beta) + (prod if alpha == 1 else prod * alpha)


def sum(input, dim=None, dtype=None):
    """sum(sparse, dim=None, dtype=None): every value summed (a dense 0-d tensor), or over the
    dims in dim: a sparse tensor of the rest, dense when no sparse dim is left (as
    torch.sparse.sum)."""
    _check_sparse(input, "sum", "input")
    vals = input._vals if dtype is None else input._vals.to(dtype)
    if dim is None:
        return vals.sum()
    dims = sorted({_core._wrap(d, input.dim(), "sum") for d in ((dim,) if isinstance(dim, int) else dim)})
    n = input.sparse_dim()
    dense_dims = [d - n + 1 for d in dims if d >= n]
    if dense_dims:
        vals = vals.sum(tuple(dense_dims))
    keep = [d for d in range(n) if d not in dims]
    size = [input._size[d] for d in range(input.dim()) if d not in dims]
    if not keep:
        return vals.sum(0)
    from ._ops import stack
    return SparseCOOTensor(stack([input._idx[d] for d in keep]), vals, size).coalesce()


def _segments(input, dim):
    """(coalesced input, each entry's group: the entries that share every sparse index but dim's)."""
    c = input.coalesce()
    n = c.sparse_dim()
    keep = [d for d in range(n) if d != dim]
    gid = None
    for d in keep:
        stride = math.prod(c._size[e] for e in keep if e > d)
        term = c._idx[d] * stride if stride != 1 else c._idx[d]
        gid = term if gid is None else gid + term
    if gid is None:
        from ._ops import zeros_like
        gid = zeros_like(c._idx[0])
    return c, gid


def _log_softmax_values(input, dim, dtype):
    if not isinstance(input, SparseCOOTensor):
        raise TypeError(f"softmax(): argument 'input' must be a sparse COO tensor, not {type(input).__name__}")
    d = _core._wrap(dim, input.dim(), "softmax")
    if d >= input.sparse_dim():
        raise RuntimeError("softmax: only a sparse dim of a sparse tensor is supported, got the dense "
                           f"dim {dim}")
    c, gid = _segments(input, d)
    vals = c._vals if dtype is None else c._vals.to(dtype)
    if not c._nnz():
        return c, vals
    from ._ops import full, zeros
    groups = math.prod(c._size[e] for e in range(c.sparse_dim()) if e != d)
    rest = tuple(vals.shape[1:])
    idx = gid.reshape((-1,) + (1,) * len(rest)).expand(tuple(vals.shape))
    mx = full((groups,) + rest, float("-inf"), dtype=vals.dtype, device=vals.device).scatter_reduce(
        0, idx, vals.detach(), "amax")
    shifted = vals - mx[gid]
    tot = zeros((groups,) + rest, dtype=vals.dtype, device=vals.device).index_add(0, gid, shifted.exp())
    return c, shifted - tot.log()[gid]


def softmax(input, dim, *, dtype=None):
    """softmax(sparse, dim, *, dtype=None): softmax over the stored entries along the sparse
    dim (the entries not stored count as -inf: they stay unstored); as torch.sparse.softmax."""
    c, lv = _log_softmax_values(input, dim, dtype)
    return c._with_values(lv.exp(), True)


def log_softmax(input, dim, *, dtype=None):
    """log_softmax(sparse, dim, *, dtype=None): as softmax, the logarithm (torch.sparse.log_softmax)."""
    c, lv = _log_softmax_values(input, dim, dtype)
    return c._with_values(lv, True)


def FloatTensor(indices, values, size):
    """The legacy constructor torch.sparse.FloatTensor(indices, values, size) (pygcn's)."""
    from ._dtype import float32
    return sparse_coo_tensor(indices, values, size, dtype=float32)


def DoubleTensor(indices, values, size):
    from ._dtype import float64
    return sparse_coo_tensor(indices, values, size, dtype=float64)


def _to_sparse(self, sparse_dim=None):
    """Tensor.to_sparse(sparse_dim=None): the nonzero entries of a dense tensor as a coalesced
    sparse COO tensor (all dims sparse, or the first sparse_dim)."""
    n = self.dim() if sparse_dim is None else sparse_dim
    if not 0 < n <= self.dim():
        raise RuntimeError(f"sparse_dim must be in [1, {self.dim()}], but got {sparse_dim}")
    from ._ops import nonzero
    flag = self != 0
    if n < self.dim():
        flag = flag.flatten(n).any(-1)
    idx = nonzero(flag).t()
    vals = self[tuple(idx)]
    return SparseCOOTensor(idx, vals, tuple(self.shape), True)

