"""symtrace.distributions.ContinuousBernoulli: the continuous Bernoulli distribution on
[0, 1] (Loaiza-Ganem and Cunningham, 2019), as torch's: closed forms away from
probs = 1/2 and Taylor expansions inside lims."""
import math

from .._C import Size
from .._ops import abs, expm1, log, log1p, ones_like, pow, rand, sqrt, where, zeros_like
from ..autograd import no_grad
from ..nn.functional import binary_cross_entropy_with_logits
from . import constraints
from ._probs_logits import ProbsLogits
from .exp_family import ExponentialFamily
from .utils import _is_all_true, broadcast_all, clamp_probs, lazy_property, logits_to_probs

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ProbsLogits, ExponentialFamily):
    """ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
    density C(p) p^x (1 - p)^(1 - x) on [0, 1]; probs in lims use Taylor expansions of the
    normalizer, mean and variance. rsample is the inverse cdf of uniform draws."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._set_probs_or_logits(probs, logits)
        if probs is not None:
            # validate 'probs' here if necessary as it is later clamped for numerical stability
            if validate_args is not None:
                if not _is_all_true(self.arg_constraints["probs"].check(self.probs)):
                    raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = Size(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return self.probs.le(self._lims[0]) | self.probs.gt(self._lims[1])

    def _cut_probs(self):
        return where(self._outside_unstable_region(), self.probs, self._lims[0] * ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log C(p), the log normalizing constant."""
        cut_probs = self._cut_probs()
        below = cut_probs.le(0.5)
        cut_probs_below_half = where(below, cut_probs, zeros_like(cut_probs))
        cut_probs_above_half = where(cut_probs.ge(0.5), cut_probs, ones_like(cut_probs))
        log_norm = (log(abs(log1p(-cut_probs) - log(cut_probs)))
                    - where(below, log1p(-2.0 * cut_probs_below_half), log(2.0 * cut_probs_above_half - 1.0)))
        x = pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (log1p(-cut_probs) - log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * pow(x, 2)) * x
        return where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return sqrt(self.variance)

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        vars = (cut_probs * (cut_probs - 1.0) / pow(1.0 - 2.0 * cut_probs, 2)
                + 1.0 / pow(log1p(-cut_probs) - log(cut_probs), 2))
        x = pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._outside_unstable_region(), vars, taylor)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = rand(tuple(shape), dtype=self.probs.dtype, device=self.probs.device)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = rand(tuple(shape), dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = ((pow(cut_probs, value) * pow(1.0 - cut_probs, 1.0 - value) + cut_probs - 1.0)
                / (2.0 * cut_probs - 1.0))
        unbounded_cdfs = where(self._outside_unstable_region(), cdfs, value)
        return where(value.le(0.0), zeros_like(value), where(value.ge(1.0), ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        return where(self._outside_unstable_region(),
                     (log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - log1p(-cut_probs))
                     / (log(cut_probs) - log1p(-cut_probs)),
                     value)

    def entropy(self):
        log_probs0 = log1p(-self.probs)
        log_probs1 = log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        out_unst_reg = x.le(self._lims[0] - 0.5) | x.gt(self._lims[1] - 0.5)
        cut_nat_params = where(out_unst_reg, x, (self._lims[0] - 0.5) * ones_like(x))
        log_norm = log(abs(expm1(cut_nat_params))) - log(abs(cut_nat_params))
        taylor = 0.5 * x + pow(x, 2) / 24.0 - pow(x, 4) / 2880.0
        return where(out_unst_reg, log_norm, taylor)
