"""symtrace.distributions.Gamma: the Gamma distribution with shape (concentration) and
rate, as torch's; draws by Marsaglia-Tsang with implicit reparameterization gradients
(see _samplers.py), cdf by the regularized incomplete gamma function."""
from numbers import Number

from .. import as_tensor
from .._C import Size
from .._dtype import float64
from .._ops import broadcast_tensors, digamma, exp, finfo, lgamma, log, result_type, xlogy
from . import constraints
from ..special import gammainc
from ._samplers import gamma_log_rsample
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


def _clamp_tiny(value):
    """value with its values clamped to the dtype's smallest normal number, the gradient
    unchanged (torch clamps the draw in place, outside autograd)."""
    return value + (value.clamp(min=finfo(value.dtype).tiny) - value).detach()


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate, validate_args=None): density
    rate^a x^(a-1) e^(-rate x) / Gamma(a) on x >= 0, a = concentration. rsample draws by
    Marsaglia and Tsang's rejection method from the global generator (composed of symtrace
    ops; the rejection loop reads values, so it runs eagerly) and is differentiable in
    concentration (implicit reparameterization) and rate."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        logx = gamma_log_rsample(self.concentration.expand(shape))
        value = exp(logx).to(self.concentration.dtype) / self.rate.expand(shape)
        return _clamp_tiny(value)

    def log_prob(self, value):
        value = as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - log(self.rate) + lgamma(self.concentration)
                + (1.0 - self.concentration) * digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return lgamma(x + 1) + (x + 1) * log(-y.reciprocal())

    def cdf(self, value):
        """cdf(value) -> P(concentration, rate * value), the regularized lower incomplete
        gamma function (symtrace.special.gammainc, in float64; differentiable in value, not
        in concentration, as torch's)."""
        if self._validate_args:
            self._validate_sample(value)
        x = self.rate * value
        dt = result_type(self.concentration, x)
        a, x = broadcast_tensors(self.concentration, x)
        return gammainc(a.to(float64), x.to(float64)).to(dt)
