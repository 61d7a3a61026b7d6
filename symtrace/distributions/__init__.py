"""symtrace.distributions: torch.distributions' API composed of symtrace ops, so that
log_prob, entropy, rsample and kl_divergence work eagerly, with autograd and inside
symtrace.compile graphs (sampling by rejection, argument validation and the Cholesky
check read values: those run eagerly). One file a distribution, as torch's:

    Distribution, ExponentialFamily, constraints, transforms, biject_to/transform_to,
    kl_divergence/register_kl, Normal, Uniform, Bernoulli, Categorical,
    OneHotCategorical(StraightThrough), Beta, Gamma, Exponential, Laplace, Poisson,
    Binomial, Dirichlet, MultivariateNormal, LowRankMultivariateNormal, Independent,
    TransformedDistribution, LogNormal, Cauchy, HalfCauchy, HalfNormal, Chi2, StudentT,
    FisherSnedecor, InverseGamma, Gumbel, Pareto, GeneralizedPareto, Weibull,
    Kumaraswamy, ContinuousBernoulli, Geometric, NegativeBinomial, Multinomial,
    RelaxedBernoulli, RelaxedOneHotCategorical, LogisticNormal, MixtureSameFamily,
    VonMises, LKJCholesky and Wishart.

Gamma, Beta and Dirichlet draw by Marsaglia-Tsang rejection, Poisson and Binomial by
inversion or Hormann's transformed rejection (symtrace has no sampler kernels for them):
see _samplers.py; the families built on them (Chi2, StudentT, FisherSnedecor,
InverseGamma, NegativeBinomial, LKJCholesky, Wishart) reuse those samplers."""
from . import constraints, transforms  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import _add_kl_info, kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

_add_kl_info()
del _add_kl_info

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli",
           "Dirichlet", "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma",
           "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
           "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
           "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
           "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Pareto", "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
           "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
           "kl_divergence", "register_kl", "transform_to"]
__all__.extend(transforms.__all__)
