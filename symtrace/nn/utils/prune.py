"""symtrace.nn.utils.prune, as torch.nn.utils.prune: pruning a module's tensor by a mask.
Pruning module.<name> moves the parameter to <name>_orig, keeps the mask in the buffer
<name>_mask and makes <name> the plain attribute <name>_orig * <name>_mask, recomputed by a
forward pre-hook (the pruning method itself). Pruning the same tensor again combines the
masks in a PruningContainer: the new method only sees what is still unpruned (the unpruned
entries, or for structured methods the channels along its dim that still hold one).
remove() makes the pruned tensor a plain parameter again. Methods: Identity,
RandomUnstructured, L1Unstructured, RandomStructured, LnStructured, CustomFromMask; and the
functions of the same names, global_unstructured, remove and is_pruned."""
import numbers

from ... import _ops
from ..modules.module import _bump_epoch
from .weight_norm import _del_pre_hook, _pre_hooks, _set_attr

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured",
           "custom_from_mask", "remove", "is_pruned"]


# ---------------- amounts ----------------
def _check_amount(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or \
            (not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _how_many(amount, size):
    """The number of entries (or channels) to prune out of size."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                             f"prune={size}")
        return amount
    return round(amount * size)


def _check_structured(t):
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found "
                         f"tensor of shape {t.shape} with {t.dim()} dims")


def _channels(t, dim, chosen, fill):
    """A mask shaped as t: `fill` on the channels `chosen` (indices along dim), 1 - fill elsewhere."""
    base = _ops.full(tuple(t.shape), 1.0 - fill, dtype=t.dtype, device=t.device)
    return base.index_fill(dim, chosen, fill)


# ---------------- methods ----------------
class BasePruningMethod:
    """A pruning method: compute_mask(t, default_mask) gives the new mask; as the module's
    forward pre-hook it sets module.<name> = <name>_orig * <name>_mask."""
    PRUNING_TYPE = None
    _tensor_name = None

    def __call__(self, module, inputs):
        _set_attr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t, default_mask):
        raise NotImplementedError(f"{type(self).__name__}.compute_mask is not implemented")

    def apply_mask(self, module):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prunes module.<name> with cls(*args, **kwargs), combined with an earlier pruning of
        the same tensor; returns the method (a PruningContainer when combined)."""
        old = [(k, h) for k, h in _pre_hooks(module)
               if isinstance(h, BasePruningMethod) and h._tensor_name == name]
        if len(old) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                 f"{module}. Use a PruningContainer.")
        orig = getattr(module, name)
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(orig.shape):
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                 f"{module}")
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old:
            key, prev = old[0]
            container = prev if isinstance(prev, PruningContainer) else PruningContainer(prev)
            container.add_pruning_method(method)
            method = container
            _del_pre_hook(module, key)
            default_mask = getattr(module, name + "_mask").detach().clone()
        else:
            default_mask = _ops.ones_like(orig)
        # the scores of a tensor pruned before are its pruned values (module.<name>), as torch's
        scores = importance_scores if importance_scores is not None else orig
        from ...autograd import no_grad
        with no_grad():
            mask = method.compute_mask(scores, default_mask=default_mask)
        if not old:
            _bump_epoch()
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t times the mask this method computes for it (from importance_scores when given)."""
        scores = t if importance_scores is None else importance_scores
        mask = self.compute_mask(scores, default_mask=_ops.ones_like(t) if default_mask is None else default_mask)
        return t * mask

    def remove(self, module):
        """Makes module.<name> a plain parameter again, holding the pruned values."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        name = self._tensor_name
        weight = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        orig.data = weight.data
        _bump_epoch()
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied in turn to one tensor; its mask is the last method's,
    computed on what the earlier ones left."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and not isinstance(args[0], (list, tuple)):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        elif len(args) == 1:
            for m in args[0]:
                self.add_pruning_method(m)
        else:
            for m in args:
                self.add_pruning_method(m)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        kind = method.PRUNING_TYPE
        new_mask = default_mask.clone()
        if kind == "unstructured":
            keep = default_mask == 1
            part = method.compute_mask(t[keep], default_mask=default_mask[keep])
            new_mask[keep] = part.to(dtype=new_mask.dtype)
            return new_mask
        if kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the "
                                     "attribute `dim` defined.")
            dim = method.dim + t.dim() if method.dim < 0 else method.dim
            others = [d for d in range(t.dim()) if d != dim]
            alive = _ops.nonzero(default_mask.sum(others) != 0 if others else default_mask != 0).reshape(-1)
            part = method.compute_mask(t.index_select(dim, alive),
                                       default_mask=default_mask.index_select(dim, alive))
            return new_mask.index_copy(dim, alive, part.to(dtype=new_mask.dtype))
        if kind == "global":
            return method.compute_mask(t, default_mask=default_mask)
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes `amount` (a fraction, or a count) of the entries: the k of largest
    _score (_LARGEST) or of smallest."""
    PRUNING_TYPE = "unstructured"
    _LARGEST = True

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _how_many(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            idx = _ops.topk(self._score(t, default_mask).reshape(-1), k, largest=self._LARGEST).indices
            mask = mask.reshape(-1).index_fill(0, idx, 0).reshape(tuple(t.shape))
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes `amount` (a fraction, or a count) of the entries, drawn at random."""

    @staticmethod
    def _score(t, default_mask):
        return _ops.rand_like(t, dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes `amount` (a fraction, or a count) of the entries of smallest absolute value."""
    _LARGEST = False

    @staticmethod
    def _score(t, default_mask):
        return t.abs()

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` of the channels along dim, drawn at random."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _check_structured(t)
        dim = self.dim + t.dim() if self.dim < 0 else self.dim
        k = _how_many(self.amount, t.shape[dim])
        if not k:
            return default_mask
        drop = _ops.topk(_ops.rand(t.shape[dim], device=t.device), k).indices
        return _channels(t, dim, drop, 0.0).to(dtype=default_mask.dtype) * default_mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes `amount` of the channels along dim with the smallest n-norm (torch.norm's p:
    a number, inf, -inf, 'fro' or 'nuc') over the other dims."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _check_structured(t)
        dim = self.dim + t.dim() if self.dim < 0 else self.dim
        size = t.shape[dim]
        k = _how_many(self.amount, size)
        if not k:
            return default_mask
        others = [d for d in range(t.dim()) if d != dim]
        norm = _ops.norm(t, p=self.n, dim=others)
        keep = _ops.topk(norm, size - k, largest=True).indices
        return _channels(t, dim, keep, 1.0).to(dtype=default_mask.dtype) * default_mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given mask is 0."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(f"mask of shape {tuple(self.mask.shape)} for a tensor of shape "
                                 f"{tuple(default_mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype, device=default_mask.device)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# ---------------- functions ----------------
def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prunes the (module, name) pairs in parameters together: pruning_method (an unstructured
    method class, built from kwargs) picks among all their entries at once (their importance
    scores, by default the tensors as pruned so far); each gets its share as a custom mask."""
    import collections.abc
    if not isinstance(parameters, collections.abc.Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    scores = importance_scores if importance_scores is not None else {}
    if not isinstance(scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    flat = _ops.cat([scores.get((m, n), getattr(m, n)).reshape(-1) for m, n in parameters])
    default = _ops.cat([getattr(m, n + "_mask", _ops.ones_like(getattr(m, n))).reshape(-1)
                        for m, n in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found '
                        f"method {pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer(method)
    from ...autograd import no_grad
    with no_grad():
        final = container.compute_mask(flat.detach(), default_mask=default)
    start = 0
    for m, n in parameters:
        p = getattr(m, n)
        count = p.numel()
        custom_from_mask(m, n, final[start:start + count].reshape(tuple(p.shape)))
        start += count


def remove(module, name):
    """Makes the pruned module.<name> a plain parameter again (the pruned values), dropping
    <name>_orig, <name>_mask and the hook."""
    for key, hook in _pre_hooks(module):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            _del_pre_hook(module, key)
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether module or any submodule carries a pruning hook."""
    return any(isinstance(h, BasePruningMethod) for m in module.modules() for _, h in _pre_hooks(m))
