"""AdaptiveLogSoftmaxWithLoss (torch.nn.AdaptiveLogSoftmaxWithLoss): the adaptive softmax of
Grave et al., with torch's parameters (head: Linear(in_features, shortlist + n_clusters);
tail: a ModuleList of Sequential(Linear(in, in // div_value ** (i + 1)), Linear(that, cluster
size)), none with a bias but the head's with head_bias), forward -> (output, loss), log_prob and
predict.

torch's forward picks the rows of each cluster with nonzero (a data-dependent shape); here every
cluster's log-probabilities are computed for every row and each row takes its own cluster's with
where, so the values and gradients are torch's and nothing reads a tensor value on the host
(symtrace.compile traces it whole); only the check of the target values reads them, eagerly."""
from collections import namedtuple

from ... import _ops, compiler
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """The adaptive softmax over n_classes split at cutoffs: forward(input [N, in] or [in],
    target [N] or []) -> _ASMoutput(output = the target's log-probability, loss = -mean)."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if ((cutoffs != sorted(cutoffs)) or (min(cutoffs) <= 0) or (max(cutoffs) > (n_classes - 1))
                or (len(set(cutoffs)) != len(cutoffs)) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(self.in_features, hsz, bias=False, device=device, dtype=dtype),
                                        Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self):
        """Re-draws every parameter as __init__ does."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{tuple(input_.shape)}")
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{tuple(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        is_batched = targ_dim > 0
        input = input_ if is_batched else input_.unsqueeze(0)
        target = target_ if is_batched else target_.unsqueeze(0)
        if (not compiler.is_compiling() and target.numel()
                and (target.amin().item() < 0 or target.amax().item() >= self.n_classes)):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        output = _ops.zeros(target.shape[0], dtype=input.dtype, device=input.device)
        gather_inds = target
        for i in range(1, len(self.cutoffs)):
            low, high = self.cutoffs[i - 1], self.cutoffs[i]
            mask = (target >= low) & (target < high)
            if not compiler.is_compiling() and not mask.any().item():
                continue        # as torch: a cluster no target falls in is not run (its weights get no grad)
            rel = (target - low).clamp(0, high - low - 1)
            cluster_logprob = F.log_softmax(self.tail[i - 1](input), dim=1)
            local = cluster_logprob.gather(1, rel.unsqueeze(1)).squeeze(1)
            output = _ops.where(mask, local, output)
            gather_inds = _ops.where(mask, _ops.full_like(target, self.shortlist_size + i - 1), gather_inds)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        gather_inds = gather_inds.clamp(0, self.head_size - 1)
        output = output + head_logprob.gather(1, gather_inds.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if not is_batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        """The log-probabilities of all n_classes, from input and the head's output."""
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _ops.cat(parts, 1)

    def log_prob(self, input):
        """log_prob(input [N, in_features]) -> [N, n_classes]: the log-probability of every class."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """predict(input [N, in_features]) -> [N] int64: the most likely class of each row (the head's
        argmax where it is a shortlist class, else the argmax of the full distribution)."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        full = self._get_full_log_prob(input, head_output).argmax(1)
        return _ops.where(output < self.shortlist_size, output, full)
