"""symtrace.distributions.NegativeBinomial: the number of successes before total_count
failures in Bernoulli trials, as torch's; draws are Poisson draws of Gamma rates (the
existing samplers)."""
from .._C import Size
from .._dtype import float64
from .._ops import exp, lgamma, sigmoid
from ..autograd import no_grad
from ..nn.functional import logsigmoid
from . import constraints
from ._samplers import poisson
from .distribution import Distribution
from ._probs_logits import ProbsLogits
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(ProbsLogits, Distribution):
    """NegativeBinomial(total_count, probs=None, logits=None, validate_args=None): successes
    before total_count failures, each trial a success with probability probs (or
    sigmoid(logits))."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        (self.total_count,) = self._set_probs_or_logits(probs, logits, total_count)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.total_count * exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=Size()):
        """sample(sample_shape=Size()) -> Poisson draws of Gamma(total_count, exp(-logits))
        rates."""
        with no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return poisson(rate.to(float64)).to(rate.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * logsigmoid(-self.logits)
                                 + value * logsigmoid(self.logits))
        log_normalization = (-lgamma(self.total_count + value) + lgamma(1.0 + value)
                             + lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
