"""torch's top-level aliases of functional ops (torch.dropout, torch.celu, torch.embedding,
torch.kl_div, ...), with torch's positional signatures where they differ from
symtrace.nn.functional's: dropout(input, p, train), losses with an int reduction (0 none,
1 mean, 2 sum), embedding(weight, indices, ...), embedding_bag's four outputs,
convolution(...), the deprecated norms (norm_except_dim, frobenius_norm, nuclear_norm) and
the removed matrix_rank. Each is a composite over symtrace.nn.functional; symtrace/__init__.py
exports them."""
import builtins
import warnings

from . import _C
from . import _ops as _o
from . import linalg as _la
from .nn import functional as F
from .nn import _conv
from ._ops._core import _check_tensor

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _red(fname, reduction, pos):
    """torch's int reduction as F's name (any other int: no reduction, as ATen's). The
    losses' reduction defaults to 0: torch's schemas say Mean, but its Python binding reads
    that default as 0, so torch.kl_div(x, t) is unreduced; symtrace gives what torch gives."""
    if isinstance(reduction, builtins.bool) or not isinstance(reduction, builtins.int):
        raise TypeError(f"{fname}(): argument 'reduction' (position {pos}) must be int, not "
                        f"{type(reduction).__name__}")
    return _REDUCTIONS.get(reduction, "none")


# ---------------- dropout ----------------
def _p(p):
    """torch's top-level dropouts raise RuntimeError for a bad p (F's raise ValueError)."""
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def dropout(input, p, train):
    """dropout(input, p, train) -> Tensor: F.dropout(input, p, train) (torch.dropout)."""
    return F.dropout(input, _p(p), train)


def dropout_(input, p, train):
    """dropout_(input, p, train) -> Tensor: F.dropout(..., inplace=True) (torch.dropout_)."""
    return F.dropout(input, _p(p), train, inplace=True)


def feature_dropout(input, p, train):
    """feature_dropout(input [N, C, *], p, train) -> Tensor: whole channels zeroed with
    probability p, the rest scaled by 1/(1-p) (torch.feature_dropout)."""
    return F._dropout_impl(input, _p(p), train, False, True, False, "feature_dropout")


def feature_dropout_(input, p, train):
    """feature_dropout_(input, p, train) -> Tensor: feature_dropout in place."""
    return F._dropout_impl(input, _p(p), train, True, True, False, "feature_dropout")


def alpha_dropout(input, p, train):
    """alpha_dropout(input, p, train) -> Tensor: F.alpha_dropout (torch.alpha_dropout)."""
    return F.alpha_dropout(input, _p(p), train)


def alpha_dropout_(input, p, train):
    """alpha_dropout_(input, p, train) -> Tensor: F.alpha_dropout in place."""
    return F.alpha_dropout(input, _p(p), train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """feature_alpha_dropout(input, p, train) -> Tensor: F.feature_alpha_dropout."""
    return F.feature_alpha_dropout(input, _p(p), train)


def feature_alpha_dropout_(input, p, train):
    """feature_alpha_dropout_(input, p, train) -> Tensor: F.feature_alpha_dropout in place."""
    return F.feature_alpha_dropout(input, _p(p), train, inplace=True)


# ---------------- activations ----------------
def celu(input, alpha=1.0):
    """celu(input, alpha=1.0) -> Tensor: F.celu (torch.celu)."""
    return F.celu(input, alpha)


def celu_(input, alpha=1.0):
    """celu_(input, alpha=1.0) -> Tensor: F.celu_ (torch.celu_)."""
    return F.celu_(input, alpha)


def selu(input):
    """selu(input) -> Tensor: F.selu (torch.selu)."""
    return F.selu(input)


def selu_(input):
    """selu_(input) -> Tensor: F.selu_ (torch.selu_)."""
    return F.selu_(input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """rrelu(input, lower=1/8, upper=1/3, training=False, generator=None) -> Tensor: F.rrelu
    (torch.rrelu); generator draws the slopes when training."""
    if generator is not None:
        return F.rrelu_(input.clone(), lower, upper, training, generator)
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """rrelu_(input, lower=1/8, upper=1/3, training=False, generator=None) -> Tensor: F.rrelu_."""
    return F.rrelu_(input, lower, upper, training, generator)


def threshold(input, threshold, value):
    """threshold(input, threshold, value) -> Tensor: F.threshold (torch.threshold)."""
    return F.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """threshold_(input, threshold, value) -> Tensor: F.threshold_ (torch.threshold_)."""
    return F.threshold_(input, threshold, value)


def prelu(input, weight):
    """prelu(input, weight) -> Tensor: F.prelu (torch.prelu)."""
    return F.prelu(input, weight)


def hardshrink(input, lambd=0.5):
    """hardshrink(input, lambd=0.5) -> Tensor: F.hardshrink (torch.hardshrink)."""
    return F.hardshrink(input, lambd)


# ---------------- padding, convolution ----------------
def constant_pad_nd(input, pad, value=0):
    """constant_pad_nd(input, pad, value=0) -> Tensor: F.pad(input, pad, 'constant', value);
    negative pads crop (torch.constant_pad_nd)."""
    _check_tensor(input, "constant_pad_nd")
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    return F.pad(input, list(pad), "constant", value)


conv3d = _conv.conv3d
conv_transpose3d = _conv.conv_transpose3d


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
    groups) -> Tensor: the 1-, 2- or 3-d (transposed) convolution that weight's rank names
    (torch.convolution)."""
    _check_tensor(input, "convolution")
    _check_tensor(weight, "convolution", "weight")
    k = weight.dim() - 2
    if k not in (1, 2, 3):
        raise RuntimeError(f"Expected {weight.dim() - 1}D (unbatched) or {weight.dim()}D (batched) input to "
                           f"conv{builtins.max(k, 0)}d, but got input of size: {list(input.shape)}"
                           if k > 3 else "weight should have at least three dimensions")
    if transposed:
        fn = (_conv.conv_transpose1d, _conv.conv_transpose2d, _conv.conv_transpose3d)[k - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (_conv.conv1d, _conv.conv2d, _conv.conv3d)[k - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


# ---------------- distances ----------------
cosine_similarity = F.cosine_similarity
pairwise_distance = F.pairwise_distance


def pdist(input, p=2.0):
    """pdist(input [N, M], p=2.0) -> Tensor: F.pdist (torch.pdist)."""
    return F.pdist(input, p)


def bilinear(input1, input2, weight, bias=None):
    """bilinear(input1, input2, weight, bias=None) -> Tensor: F.bilinear (torch.bilinear)."""
    return F.bilinear(input1, input2, weight, bias)


# ---------------- embeddings ----------------
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False) ->
    Tensor: the rows of weight; the row padding_idx gets no gradient (a negative one: none,
    as ATen's); note the order: weight first (torch.embedding)."""
    _check_tensor(weight, "embedding", "weight")
    _check_tensor(indices, "embedding", "indices")
    pad = padding_idx if padding_idx >= 0 else None
    return F.embedding(indices, weight, pad, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
    per_sample_weights=None, include_last_offset=False, padding_idx=None) -> (output,
    offset2bag, bag_size, max_indices): F.embedding_bag with mode 0 sum, 1 mean, 2 max, and
    the CPU kernel's auxiliary outputs (offset2bag: the bag of each index, empty for float32
    sums without padding_idx; bag_size: the indices each bag counts, zeros for sums;
    max_indices: each max's row for mode 2, else bag_size) (torch.embedding_bag)."""
    _check_tensor(weight, "embedding_bag", "weight")
    _check_tensor(indices, "embedding_bag", "indices")
    _check_tensor(offsets, "embedding_bag", "offsets")
    if isinstance(mode, builtins.bool) or mode not in (0, 1, 2):
        raise RuntimeError(f"Unknown mode for embedding_bag_backward with mode {mode}")
    if indices.dim() != 1:
        raise ValueError(f"input has to be 1D Tensor, but got Tensor of dimension {indices.dim()}")
    pad = padding_idx
    if pad is not None and pad < 0:
        pad = pad + weight.shape[0]
    out = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                          mode=_BAG_MODES[mode], sparse=sparse, per_sample_weights=per_sample_weights,
                          include_last_offset=include_last_offset, padding_idx=pad)
    n, nb = indices.shape[0], offsets.shape[0]
    idt = indices.dtype
    offs = [builtins.int(v) for v in offsets.tolist()]
    bags = nb - 1 if include_last_offset else nb
    # ATen's offset2bag: the count of bag starts (offsets[1:bags]) at or before each index
    bag_of = [builtins.sum(1 for o in offs[1:bags] if o <= i) for i in builtins.range(n)]
    fast_sum = mode == 0 and pad is None and weight.dtype in (_o.float32, _o.float16, _o.bfloat16)
    offset2bag = _C.tensor([], idt) if fast_sum else _C.tensor(bag_of, idt)
    if mode == 0:   # zeros: one a bag under autograd, one an offset in the forward-only kernel
        grad = _C._is_grad_enabled() and (weight.requires_grad or (per_sample_weights is not None
                                                                  and per_sample_weights.requires_grad))
        k = bags if grad else nb
        return out, offset2bag, _o.zeros(k, dtype=idt), _o.zeros(k, dtype=idt)
    idx = indices.tolist()
    sizes = [0] * bags
    for i in builtins.range(n):
        if idx[i] != pad:
            sizes[bag_of[i]] += 1
    bag_size = _C.tensor(sizes, idt)
    if mode == 1:
        return out, offset2bag, bag_size, bag_size
    with _o._no_grad():
        rows = weight.detach()
        cols = weight.shape[1]
        maxi = []
        for b in builtins.range(bags):
            members = [idx[i] for i in builtins.range(n) if bag_of[i] == b and idx[i] != pad]
            if not members:
                maxi.append([0] * cols)
                continue
            vals = rows[_C.tensor(members, _o.int64)]
            arg = _o.argmax(vals, 0).tolist()
            maxi.append([members[a] for a in arg])
    return out, offset2bag, bag_size, _C.tensor(maxi, idt).reshape(bags, cols)


# ---------------- normalization ----------------
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True)
    -> Tensor: F.group_norm (torch.group_norm)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True)
    -> Tensor: F.layer_norm (torch.layer_norm)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """rms_norm(input, normalized_shape, weight=None, eps=None) -> Tensor: F.rms_norm."""
    return F.rms_norm(input, normalized_shape, weight, eps)


# ---------------- losses (int reduction) ----------------
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
    reduction=0) -> Tensor: F.binary_cross_entropy_with_logits (torch's top-level order)."""
    r = _red("binary_cross_entropy_with_logits", reduction, 5)
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=r, pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0) -> Tensor."""
    r = _red("cosine_embedding_loss", reduction, 5)
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=r)


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """hinge_embedding_loss(input, target, margin=1.0, reduction=0) -> Tensor."""
    r = _red("hinge_embedding_loss", reduction, 4)
    return F.hinge_embedding_loss(input, target, margin, reduction=r)


def kl_div(input, target, reduction=0, *, log_target=False):
    """kl_div(input, target, reduction=0, *, log_target=False) -> Tensor: F.kl_div with an int
    reduction (1: the mean over all elements, not 'batchmean'; 0 by default, see _red)."""
    r = _red("kl_div", reduction, 3)
    return F.kl_div(input, target, reduction=r, log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0) -> Tensor."""
    r = _red("margin_ranking_loss", reduction, 5)
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=r)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """poisson_nll_loss(input, target, log_input, full, eps, reduction) -> Tensor: every
    argument required, as torch.poisson_nll_loss."""
    r = _red("poisson_nll_loss", reduction, 6)
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=r)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=0):
    """triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
    reduction=0) -> Tensor."""
    r = _red("triplet_margin_loss", reduction, 8)
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=r)


# ---------------- deprecated norms ----------------
def norm_except_dim(v, pow=2, dim=0):
    """norm_except_dim(v, pow=2, dim=0) -> Tensor: the pow-norm over every dim but dim, kept
    as size-1 dims (dim=-1: the norm of everything, 0-d), as torch.norm_except_dim."""
    _check_tensor(v, "norm_except_dim", "v")
    if dim == -1:
        return _la.vector_norm(v, pow)
    if dim == 0:
        shape = (v.shape[0],) + (1,) * (v.dim() - 1)
        return _la.vector_norm(v.reshape(v.shape[0], -1), pow, 1).reshape(shape)
    if dim == v.dim() - 1:
        shape = (1,) * (v.dim() - 1) + (v.shape[-1],)
        return _la.vector_norm(v.reshape(-1, v.shape[-1]), pow, 0).reshape(shape)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def frobenius_norm(input, dim, keepdim=False):
    """frobenius_norm(input, dim, keepdim=False) -> Tensor: linalg.vector_norm(input, 2, dim,
    keepdim); deprecated (warns), as torch.frobenius_norm."""
    _check_tensor(input, "frobenius_norm")
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be "
                  "removed in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` "
                  "instead", UserWarning, stacklevel=2)
    dims = (dim,) if isinstance(dim, builtins.int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    return _la.vector_norm(input, 2, dims, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """nuclear_norm(input, keepdim=False) or nuclear_norm(input, dim, keepdim=False) -> Tensor:
    linalg.matrix_norm(input, 'nuc', dim, keepdim) (dim: the last two by default);
    deprecated (warns), as torch.nuclear_norm."""
    _check_tensor(input, "nuclear_norm")
    if isinstance(dim, builtins.bool):   # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be "
                  "removed in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, "
                  "keepdim)` instead", UserWarning, stacklevel=2)
    if dim is None:
        if input.dim() != 2:
            raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        dim = (0, 1)
    dims = (dim, dim) if isinstance(dim, builtins.int) else tuple(dim)
    return _la.matrix_norm(input, "nuc", dims, keepdim)


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    """matrix_rank(...): removed from torch (since 1.9): raises torch's RuntimeError."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed.\n"
        "Please use the `torch.linalg.matrix_rank` function instead. "
        "The parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.")
