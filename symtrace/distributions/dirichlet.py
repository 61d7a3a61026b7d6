"""symtrace.distributions.Dirichlet: the Dirichlet distribution on the simplex, as
torch's; draws are normalized Gamma draws (see _samplers.py)."""
from .._C import Size
from .._ops import arange, digamma, finfo, lgamma, where, xlogy
from . import constraints
from ._samplers import gamma_log_rsample
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration, validate_args=None): distributions over the simplex of
    concentration's last dim. rsample normalizes Marsaglia-Tsang Gamma draws (a softmax of
    their logarithms, so tiny concentrations do not give 0/0); it is differentiable in
    concentration through the Gamma draws' implicit reparameterization gradients, an
    unbiased reparameterization that is not torch's (which differentiates the marginal
    Beta cdfs), so single-draw gradients differ from torch's while their expectation
    agrees."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(Size(tuple(batch_shape) + tuple(self.event_shape)))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        logg = gamma_log_rsample(self.concentration.expand(shape))
        x = logg.softmax(-1).to(self.concentration.dtype)
        return x + (x.clamp(min=finfo(x.dtype).tiny) - x).detach()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration - 1.0, value).sum(-1) + lgamma(self.concentration.sum(-1))
                - lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # all concentrations below 1: torch's argmax of the all-nan row, the first corner
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        k = concentrationm1.shape[-1]
        first = (arange(k, device=mode.device) == 0).to(mode.dtype)
        return where(mask, first, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (lgamma(self.concentration).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0)
                - ((self.concentration - 1.0) * digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - lgamma(x.sum(-1))
