"""symtrace.distributions: torch.distributions' API composed of symtrace ops, so that
log_prob, entropy, rsample and kl_divergence work eagerly, with autograd and inside
symtrace.compile graphs (sampling by rejection, argument validation and the Cholesky
check read values: those run eagerly). One file a distribution, as torch's:

    Distribution, ExponentialFamily, constraints, transforms, kl_divergence/register_kl,
    Normal, Uniform, Bernoulli, Categorical, OneHotCategorical(StraightThrough), Beta,
    Gamma, Exponential, Laplace, Poisson, Binomial, Dirichlet, MultivariateNormal,
    Independent, TransformedDistribution and LogNormal.

Gamma, Beta and Dirichlet draw by Marsaglia-Tsang rejection, Poisson and Binomial by
inversion or Hormann's transformed rejection (symtrace has no sampler kernels for them):
see _samplers.py."""
from . import constraints, transforms  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import _add_kl_info, kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .uniform import Uniform

_add_kl_info()
del _add_kl_info

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Dirichlet", "Distribution", "Exponential",
           "ExponentialFamily", "Gamma", "Independent", "Laplace", "LogNormal", "MultivariateNormal",
           "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson", "Uniform",
           "TransformedDistribution", "kl_divergence", "register_kl"]
__all__.extend(transforms.__all__)
