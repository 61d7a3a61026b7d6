"""symtrace.distributions._probs_logits: the probs-or-logits parameter that Bernoulli,
Binomial, NegativeBinomial, Geometric, ContinuousBernoulli, LogitRelaxedBernoulli
(binary events) and Categorical (K events) share: exactly one is given, the other is
derived lazily, expand() expands whichever is set, and _new() makes tensors like it."""
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ProbsLogits"]


class ProbsLogits:
    """A mixin before Distribution in the bases. _binary: the event is 0/1 (logits are
    log-odds) rather than one of K (logits are normalized log-probabilities)."""
    _binary = True

    def _set_probs_or_logits(self, probs, logits, *others):
        """Sets self.probs or self.logits (broadcast with others) and self._param;
        returns the others, broadcast and of the parameter's dtype."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        *rest, param = broadcast_all(*others, value)
        setattr(self, name, param)
        self._param = param
        return [r.type_as(param) for r in rest]

    def _expand_probs_or_logits(self, new, shape):
        """new's probs and/or logits: self's (whichever are computed) expanded to shape"""
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(shape))
                new._param = getattr(new, name)

    def _new(self, *args, **kwargs):
        return self._param.new_tensor(*args, **kwargs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def param_shape(self):
        return self._param.size()
