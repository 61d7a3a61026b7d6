"""symtrace.distributions.utils: the helpers torch.distributions.utils has
(broadcast_all, probs/logits conversions, clamp_probs, lazy_property) and the private
ones the distributions share (_standard_normal, _sum_rightmost, _is_all_true)."""
from functools import update_wrapper
from numbers import Number

from .. import _C
from .._ops import (arange, broadcast_tensors, finfo, full, get_default_dtype, log, log1p, randn,
                    sigmoid, zeros)
from ..autograd import enable_grad

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def _is_tensor(v):
    return isinstance(v, _C.TensorBase)


def broadcast_all(*values):
    """broadcast_all(*values) -> tuple of Tensors: numbers become tensors of the first
    tensor's dtype and device (of the default dtype when all are numbers), then all are
    broadcast together."""
    if not all(_is_tensor(v) or isinstance(v, Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(_is_tensor(v) for v in values):
        opts = dict(dtype=get_default_dtype())
        for v in values:
            if _is_tensor(v):
                opts = dict(dtype=v.dtype, device=v.device)
                break
        # full() rather than tensor(): a constant of the graph under symtrace.compile
        values = [v if _is_tensor(v) else full((), v, **opts) for v in values]
    return tuple(broadcast_tensors(*values))


def _standard_normal(shape, dtype, device):
    """_standard_normal(shape, dtype, device) -> Tensor of N(0, 1) draws (global generator)."""
    return randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """_sum_rightmost(value, dim) -> value with its dim rightmost dims summed out."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def _is_all_true(valid):
    """True when every element of the bool tensor valid is True. A read of the values: in
    eager mode only; while symtrace.compile traces, checks pass (the graph has no host
    sync), so validation of arguments and samples is an eager feature."""
    if not _is_tensor(valid):
        return bool(valid)
    if _C._trace_active():
        return True
    return bool(valid.all().item())


def logits_to_probs(logits, is_binary=False):
    """logits_to_probs(logits, is_binary=False) -> Tensor: sigmoid (binary) or softmax over
    the last dim."""
    if is_binary:
        return sigmoid(logits)
    return logits.softmax(-1)


def clamp_probs(probs):
    """clamp_probs(probs) -> probs clamped to [eps, 1 - eps] of its dtype."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """probs_to_logits(probs, is_binary=False) -> Tensor: log-odds (binary) or log-probabilities."""
    ps = clamp_probs(probs)
    if is_binary:
        return log(ps) - log1p(-ps)
    return log(ps)


class lazy_property:
    """A non-data descriptor computing the wrapped method once (under enable_grad), then
    stored as an instance attribute, as torch's."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """A lazy_property seen on the class: a property too (documentation tools)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _tril_mask(n, diag, device):
    a = arange(n, device=device)
    return a < a.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """tril_matrix_to_vec(mat, diag=0) -> Tensor: the lower-triangular entries of mat in row
    order."""
    n = mat.shape[-1]
    if not _C._trace_active() and (diag < -n or diag >= n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """vec_to_tril_matrix(vec, diag=0) -> Tensor: the D x D lower-triangular matrices whose
    entries in row order are vec's last dim."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mask = _tril_mask(n, diag, vec.device)
    flat = mask.reshape(-1)
    idx = flat.nonzero().reshape(-1)
    out = zeros(tuple(vec.shape[:-1]) + (n * n,), dtype=vec.dtype, device=vec.device)
    out = out.index_add(-1, idx, vec)
    return out.reshape(tuple(vec.shape[:-1]) + (n, n))

