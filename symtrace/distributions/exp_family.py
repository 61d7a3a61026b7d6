"""symtrace.distributions.ExponentialFamily: the base of exponential-family distributions,
whose default entropy (and the KL between two members of one family, in kl.py) come from
the log normalizer through autograd (Bregman divergences), as torch's."""
from .. import autograd
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """ExponentialFamily: p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)); subclasses give
    _natural_params, _log_normalizer and _mean_carrier_measure."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """entropy() -> Tensor: from the log normalizer's gradient (Bregman divergence)."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
