"""symtrace.nn.utils.weight_norm: the hook-based weight normalization
(weight_norm / remove_weight_norm, WeightNorm: parameters weight_g and
weight_v, the weight recomputed by a forward pre-hook), as
torch.nn.utils.weight_norm; and the two ops it is made of, torch's
norm_except_dim and _weight_norm, composed of symtrace ops (also used by
parametrizations.weight_norm)."""
import warnings

from ..modules.module import _bump_epoch
from ..parameter import Parameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm of v over every dimension but dim, shaped as v with size
    1 elsewhere; dim=-1 is the norm of the whole tensor, a 0-d tensor
    (torch.norm_except_dim)."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        output_size = [1] * v.dim()
        output_size[0] = v.size(0)
        return v.contiguous().view(v.size(0), -1).norm(pow, 1).view(output_size)
    if dim == v.dim() - 1:
        output_size = [1] * v.dim()
        output_size[-1] = v.size(-1)
        return v.contiguous().view(-1, v.size(-1)).norm(pow, 0).view(output_size)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v, g, dim=0):
    """v * (g / norm_except_dim(v, 2, dim)) (torch._weight_norm)."""
    if v.device != g.device:
        raise RuntimeError("weight_norm: expected v_in and g_in to be on the same device, but v_in is on "
                           f"{v.device} and g_in is on {g.device}")
    return v * (g / norm_except_dim(v, 2, dim))


def _pre_hooks(module):
    """(id, hook) of module's forward pre-hooks (symtrace keeps each as
    (hook, with_kwargs, always_call))."""
    return [(k, e[0] if isinstance(e, tuple) else e) for k, e in module._forward_pre_hooks.items()]


def _del_pre_hook(module, key):
    del module._forward_pre_hooks[key]
    _bump_epoch()
    module._refresh_has_hooks()


def _set_attr(module, name, value):
    """setattr(module, name, value); the usual name as a plain attribute store,
    which symtrace.compile captures (the builtin setattr breaks the graph)."""
    if name == "weight":
        module.weight = value
    else:
        setattr(module, name, value)


class WeightNorm:
    """The forward pre-hook of weight_norm: sets module.<name> to
    _weight_norm(<name>_v, <name>_g, dim) before each forward."""

    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for _, hook in _pre_hooks(module):
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        _bump_epoch()
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        _bump_epoch()
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        _set_attr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """weight_norm(module, name='weight', dim=0) -> module: name becomes
    name_g * name_v / ||name_v|| (norm over every dim but dim; dim=None: the
    whole tensor), recomputed before each forward (deprecated in torch in
    favour of parametrizations.weight_norm)."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undoes weight_norm: name is a plain Parameter again, holding the
    normalized weight."""
    for k, hook in _pre_hooks(module):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            _del_pre_hook(module, k)
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
