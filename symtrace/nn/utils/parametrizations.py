"""symtrace.nn.utils.parametrizations: weight_norm, spectral_norm and
orthogonal as parametrizations (register_parametrization), as
torch.nn.utils.parametrizations.

orthogonal's maps: 'householder' is composed of symtrace ops here (the
product of Householder reflections, and a Householder QR for right_inverse);
'matrix_exp' and 'cayley' need symtrace.linalg.matrix_exp and
symtrace.linalg.solve and raise NotImplementedError at registration where
this build of symtrace lacks them. The default map of a square matrix is
'matrix_exp', as torch's."""
from enum import Enum, auto

from ... import _C, _ops
from .. import functional as F
from ..modules.module import Module
from ..parameter import _no_grad
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _linalg_fn(name):
    """symtrace.linalg.<name> (or symtrace.<name>), None where absent."""
    import symtrace
    fn = getattr(getattr(symtrace, "linalg", None), name, None)
    return fn if fn is not None else getattr(symtrace, name, None)


def _eye_like(A, n, k=None):
    return _ops.eye(n, n if k is None else k, dtype=A.dtype, device=A.device)


def _householder_product(A, tau):
    """The first A.size(-1) columns of H_1 ... H_t, H_i = I - tau_i v_i v_i^T,
    v_i = e_i + A[i+1:, i] (torch.linalg.householder_product, real inputs);
    composed of differentiable ops."""
    n, k = A.size(-2), A.size(-1)
    rows = _ops.arange(n, device=A.device)
    Q = _eye_like(A, n, k).expand(*A.shape[:-2], n, k)
    for i in reversed(range(tau.size(-1))):
        below = (rows > i).to(A.dtype)
        e_i = (rows == i).to(A.dtype)
        v = A[..., :, i] * below + e_i                       # (*, n)
        w = (v.unsqueeze(-2) @ Q)                             # (*, 1, k)
        Q = Q - tau[..., i].unsqueeze(-1).unsqueeze(-1) * (v.unsqueeze(-1) * w)
    return Q


def _geqrf(A):
    """Householder QR in LAPACK's packed form (torch.geqrf, real inputs, no
    gradient): R on and above the diagonal, the reflectors' tails below it,
    and their scales tau."""
    with _no_grad():
        R = A.clone()
        m, n = A.size(-2), A.size(-1)
        rows = _ops.arange(m, device=A.device)
        cols = _ops.arange(n, device=A.device)
        taus = []
        for j in range(min(m, n)):
            x = R[..., :, j] * (rows >= j).to(A.dtype)             # the column from row j down
            alpha = R[..., j, j]
            tail = x * (rows > j).to(A.dtype)
            xnorm = (tail * tail).sum(-1).sqrt()
            norm = (alpha * alpha + xnorm * xnorm).sqrt()
            beta = _ops.where(alpha >= 0, -norm, norm)
            trivial = xnorm == 0
            safe_beta = _ops.where(trivial, _ops.ones_like(beta), beta)
            tau = _ops.where(trivial, _ops.zeros_like(beta), (beta - alpha) / safe_beta)
            scale = _ops.where(trivial, _ops.zeros_like(beta), 1.0 / (alpha - safe_beta))
            vtail = tail * scale.unsqueeze(-1)
            v = vtail + (rows == j).to(A.dtype)                   # (*, m), v[j] = 1
            # H = I - tau v v^T on columns j+1.. of R
            right = (cols > j).to(A.dtype)
            w = (v.unsqueeze(-2) @ R).squeeze(-2) * right          # (*, n)
            R = R - tau.unsqueeze(-1).unsqueeze(-1) * (v.unsqueeze(-1) * w.unsqueeze(-2))
            # column j: beta on the diagonal, the tail below, rows above kept
            newcol = _ops.where(trivial, alpha, beta).unsqueeze(-1) * (rows == j).to(A.dtype) + vtail
            keep = (rows < j).to(A.dtype)
            colmask = (cols == j).to(A.dtype)
            col = R[..., :, j] * keep + newcol
            R = R * (1 - colmask) + col.unsqueeze(-1) * colmask
            taus.append(tau)
        tau = _ops.stack(taus, -1) if taus else R.new_zeros(*A.shape[:-2], 0)
    return R, tau


def _is_orthogonal(Q, eps=None):
    n, k = Q.size(-2), Q.size(-1)
    Id = _eye_like(Q, k)
    eps = 10.0 * n * _ops.finfo(Q.dtype).eps
    return _ops.allclose(Q.mH @ Q, Id, atol=eps)


def _make_orthogonal(A):
    """The Q of A's QR decomposition with R's diagonal made non-negative."""
    X, tau = _geqrf(A)
    Q = _householder_product(X, tau)
    Q = Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)
    return Q


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == _OrthMaps.matrix_exp or self.orthogonal_map == _OrthMaps.cayley:
            X = X.tril()
            if n != k:
                X = _ops.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _linalg_fn("matrix_exp")(A)
            else:
                Id = _eye_like(A, n)
                Q = _linalg_fn("solve")(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with _no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map == _OrthMaps.cayley or self.orthogonal_map == _OrthMaps.matrix_exp:
                    raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                              "or the Cayley parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                d = A.diagonal(dim1=-2, dim2=-1).sign()
                d = _ops.where(tau == 0.0, -d, d)
                Id = _eye_like(A, n, k)
                A = A * (1 - Id) + Id * d.unsqueeze(-2)
                return A.mT if transpose else A
            if n == k:
                if not _is_orthogonal(Q):
                    Q = _make_orthogonal(Q)
                else:
                    Q = Q.clone()
            else:
                N = _ops.randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _ops.cat([Q, N], dim=-1)
                Q = _make_orthogonal(Q)
            self.base = Q
            neg_Id = _ops.zeros_like(Q_init) - _eye_like(Q_init, Q_init.size(-2), Q_init.size(-1))
            return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """orthogonal(module, name='weight', orthogonal_map=None, *,
    use_trivialization=True) -> module: module.<name> parametrized as an
    orthogonal (or semi-orthogonal) matrix, or batch of them."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.TensorBase):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex()
                          else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    needs = {_OrthMaps.matrix_exp: "matrix_exp", _OrthMaps.cayley: "solve"}.get(orth_enum)
    if needs is not None and _linalg_fn(needs) is None:
        raise NotImplementedError(f"orthogonal_map='{orthogonal_map}' needs symtrace.linalg.{needs}, which this "
                                  "build of symtrace does not have; orthogonal_map='householder' is supported")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        weight_g = norm_except_dim(weight, 2, self.dim)
        weight_v = weight
        return weight_g, weight_v


def weight_norm(module, name="weight", dim=0):
    """weight_norm(module, name='weight', dim=0) -> module: module.<name>
    parametrized as g * v / ||v|| (originals original0 = g, original1 = v);
    state_dicts of the hook-based weight_norm (name_g, name_v) load into it."""
    _weight_norm_p = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, _weight_norm_p, unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs):
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if weight.ndim <= 1:
            raise AssertionError(f"Expected weight to have more than 1 dimension, got {weight.ndim}")
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        # u and v are updated in place (the buffers keep their identity)
        with _no_grad():
            for _ in range(n_power_iterations):
                self._u = F.normalize(_ops.mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)
                self._v = F.normalize(_ops.mv(weight_mat.mH, self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = _ops.vdot(u, _ops.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """spectral_norm(module, name='weight', n_power_iterations=1, eps=1e-12,
    dim=None) -> module: module.<name> parametrized as W / sigma(W), sigma
    estimated by power iteration (buffers _u, _v of the parametrization,
    updated in training mode only); dim defaults to 1 for ConvTranspose."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.TensorBase):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
