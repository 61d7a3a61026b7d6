"""symtrace.special, as torch.special: every function of torch.special, by torch's names and
signatures. They are written over symtrace's tensor ops (symtrace/_ops/special_*.py,
aliases.py, float_math.py), so they run eagerly, under autograd (with torch's gradients, or
none where torch has none) and inside symtrace.compile graphs. This file only binds the
names (and out=)."""
from . import _ops
from ._ops.special_core import _out

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]


# ---- the elementary ones symtrace already has, with out= ----
def expit(input, *, out=None):
    """expit(input, *, out=None) -> Tensor: the logistic sigmoid 1 / (1 + exp(-input))."""
    _ops._check_tensor(input, "special_expit")
    x = input if input.dtype.is_floating_point else input.to(_ops.float32)
    return _out(_ops.sigmoid(x), out, "special_expit")


def erf(input, *, out=None):
    """erf(input, *, out=None) -> Tensor: the error function."""
    _ops._check_tensor(input, "special_erf")
    x = input if input.dtype.is_floating_point else input.to(_ops.float32)
    return _out(_ops.erf(x), out, "special_erf")


def erfinv(input, *, out=None):
    """erfinv(input, *, out=None) -> Tensor: the inverse error function."""
    return _out(_ops.erfinv(input), out, "special_erfinv")


def exp2(input, *, out=None):
    """exp2(input, *, out=None) -> Tensor: 2 ** input."""
    return _out(_ops.exp2(input), out, "special_exp2")


def expm1(input, *, out=None):
    """expm1(input, *, out=None) -> Tensor: exp(input) - 1, accurate for small input."""
    return _out(_ops.expm1(input), out, "special_expm1")


def log1p(input, *, out=None):
    """log1p(input, *, out=None) -> Tensor: log(1 + input), accurate for small input."""
    return _out(_ops.log1p(input), out, "special_log1p")


def logit(input, eps=None, *, out=None):
    """logit(input, eps=None, *, out=None) -> Tensor: log(p / (1 - p)), p clamped to
    [eps, 1 - eps] when eps is given."""
    return _out(_ops.logit(input, eps), out, "special_logit")


def sinc(input, *, out=None):
    """sinc(input, *, out=None) -> Tensor: the normalized sinc sin(pi x) / (pi x), 1 at 0."""
    return _out(_ops.sinc(input), out, "special_sinc")


def xlogy(input, other, *, out=None):
    """xlogy(input, other, *, out=None) -> Tensor: input * log(other), 0 where input is 0."""
    return _out(_ops.xlogy(input, other), out, "special_xlogy")


def gammaln(input, *, out=None):
    """gammaln(input, *, out=None) -> Tensor: log |gamma(input)| (torch.lgamma)."""
    return _out(_ops.lgamma(input), out, "special_gammaln")


def digamma(input, *, out=None):
    """digamma(input, *, out=None) -> Tensor: the logarithmic derivative of gamma."""
    return _out(_ops.digamma(input), out, "special_digamma")


psi = digamma


def round(input, *, decimals=0, out=None):
    """round(input, *, decimals=0, out=None) -> Tensor: torch.round."""
    return _ops.round(input, decimals=decimals, out=out)


def softmax(input, dim, *, dtype=None):
    """softmax(input, dim, *, dtype=None) -> Tensor: exp(input) normalized along dim (input
    cast to dtype first)."""
    return _ops.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """log_softmax(input, dim, *, dtype=None) -> Tensor: log(softmax(input, dim))."""
    return _ops.log_softmax(input, dim, dtype)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """logsumexp(input, dim, keepdim=False, *, out=None) -> Tensor: log(sum(exp(input), dim)),
    computed stably."""
    return _out(_ops.logsumexp(input, dim, keepdim), out, "special_logsumexp")


# ---- special functions (symtrace/_ops/special_*.py) ----
erfc = _ops.erfc
erfcx = _ops._erfcx
ndtr = _ops._ndtr
ndtri = _ops._ndtri
log_ndtr = _ops._log_ndtr
entr = _ops._entr
xlog1py = _ops._xlog1py
i0 = _ops.i0
i0e = _ops._i0e
i1 = _ops._i1
i1e = _ops._i1e
zeta = _ops._zeta
polygamma = _ops.polygamma
bessel_j0 = _ops._bessel_j0
bessel_j1 = _ops._bessel_j1
bessel_y0 = _ops._bessel_y0
bessel_y1 = _ops._bessel_y1
modified_bessel_i0 = _ops._modified_bessel_i0
modified_bessel_i1 = _ops._modified_bessel_i1
modified_bessel_k0 = _ops._modified_bessel_k0
modified_bessel_k1 = _ops._modified_bessel_k1
scaled_modified_bessel_k0 = _ops._scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _ops._scaled_modified_bessel_k1
spherical_bessel_j0 = _ops._spherical_bessel_j0
airy_ai = _ops._airy_ai
chebyshev_polynomial_t = _ops._chebyshev_polynomial_t
chebyshev_polynomial_u = _ops._chebyshev_polynomial_u
chebyshev_polynomial_v = _ops._chebyshev_polynomial_v
chebyshev_polynomial_w = _ops._chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = _ops._shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _ops._shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _ops._shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _ops._shifted_chebyshev_polynomial_w
hermite_polynomial_h = _ops._hermite_polynomial_h
hermite_polynomial_he = _ops._hermite_polynomial_he
laguerre_polynomial_l = _ops._laguerre_polynomial_l
legendre_polynomial_p = _ops._legendre_polynomial_p


def multigammaln(input, p, *, out=None):
    """multigammaln(input, p, *, out=None) -> Tensor: the multivariate log-gamma function of
    dimension p (torch.mvlgamma)."""
    return _ops.mvlgamma(input, p, out=out)


def gammainc(input, other, *, out=None):
    """gammainc(input, other, *, out=None) -> Tensor: the regularized lower incomplete gamma
    function (torch.igamma)."""
    return _ops._igamma("special_gammainc", input, other, out, False)


def gammaincc(input, other, *, out=None):
    """gammaincc(input, other, *, out=None) -> Tensor: the regularized upper incomplete gamma
    function (torch.igammac)."""
    return _ops._igamma("special_gammaincc", input, other, out, True)


for _name in __all__:       # the public names, as torch's functions have
    _f = globals()[_name]
    if _f.__name__.startswith("_") and _f.__module__.startswith("symtrace._ops"):
        _f.__name__ = _f.__qualname__ = _name
del _name, _f
