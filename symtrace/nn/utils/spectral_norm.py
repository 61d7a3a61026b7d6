"""symtrace.nn.utils.spectral_norm: the hook-based spectral normalization
(spectral_norm / remove_spectral_norm, SpectralNorm and its state_dict
hooks), as torch.nn.utils.spectral_norm: parameter weight_orig, buffers
weight_u / weight_v, weight = weight_orig / sigma recomputed by a forward
pre-hook, with one power iteration per call in training mode.

remove_spectral_norm also takes the load_state_dict pre-hook off the module
(torch 2.13 leaves it there, so that a state_dict of the module after the
removal no longer loads: 'Missing key(s) weight_orig, weight_u')."""
from ... import _ops
from .. import functional as F
from ..parameter import Parameter, _no_grad
from .weight_norm import _del_pre_hook, _pre_hooks, _set_attr

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook", "spectral_norm",
           "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of spectral_norm."""
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(self.dim, *[d for d in range(weight_mat.dim()) if d != self.dim])
        height = weight_mat.size(0)
        return weight_mat.reshape(height, -1)

    def compute_weight(self, module, do_power_iteration):
        """weight_orig / sigma, sigma = u . (W v); with do_power_iteration,
        u and v (the buffers, in place) take n_power_iterations steps first."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with _no_grad():
                for _ in range(self.n_power_iterations):
                    v = F.normalize(_ops.mv(weight_mat.t(), u), dim=0, eps=self.eps, out=v)
                    u = F.normalize(_ops.mv(weight_mat, v), dim=0, eps=self.eps, out=u)
                if self.n_power_iterations > 0:
                    u = u.clone()
                    v = v.clone()
        sigma = _ops.dot(u, _ops.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with _no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        _set_attr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        # v such that u = normalize(W v), rescaled so that u . (W v) = target_sigma
        pinv = _pinverse(weight_mat.t().mm(weight_mat))
        v = pinv.mm(weight_mat.t()).mm(u.unsqueeze(1)).squeeze(1)
        return v.mul_(target_sigma / _ops.dot(u, _ops.mv(weight_mat, v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for _, hook in _pre_hooks(module):
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with _no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # weight stays readable (as a plain attribute) until the first forward
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


def _pinverse(a):
    """The pseudo-inverse of a symmetric positive semi-definite matrix, for
    the conversion of state_dicts older than version 1 (needs symtrace.pinverse
    or symtrace.linalg.pinv)."""
    import symtrace
    fn = getattr(symtrace, "pinverse", None)
    if fn is None:
        fn = getattr(getattr(symtrace, "linalg", None), "pinv", None)
    if fn is None:
        raise NotImplementedError("loading a spectral_norm state_dict from before version 1 (with "
                                  "'weight' and without 'weight_v') needs a pseudo-inverse, which "
                                  "symtrace does not have")
    return fn(a)


class SpectralNormLoadStateDictPreHook:
    """Converts state_dicts written before spectral_norm's version 1 (weight
    saved, weight_v not) when they are loaded."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is None or version < 1:
            weight_key = prefix + fn.name
            if (version is None and all(weight_key + s in state_dict for s in ("_orig", "_u", "_v"))
                    and weight_key not in state_dict):
                # a current state_dict without metadata (e.g. built by hand)
                return
            has_missing_keys = False
            for suffix in ("_orig", "", "_u"):
                key = weight_key + suffix
                if key not in state_dict:
                    has_missing_keys = True
                    if strict:
                        missing_keys.append(key)
            if has_missing_keys:
                return
            with _no_grad():
                weight_orig = state_dict[weight_key + "_orig"]
                weight = state_dict.pop(weight_key)
                sigma = (weight_orig / weight).mean()
                weight_mat = fn.reshape_weight_to_matrix(weight_orig)
                u = state_dict[weight_key + "_u"]
                v = fn._solve_v_and_rescale(weight_mat, u, sigma)
                state_dict[weight_key + "_v"] = v


class SpectralNormStateDictHook:
    """Records spectral_norm's version in the state_dict's metadata."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        if "spectral_norm" not in local_metadata:
            local_metadata["spectral_norm"] = {}
        key = self.fn.name + ".version"
        if key in local_metadata["spectral_norm"]:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        local_metadata["spectral_norm"][key] = self.fn._version


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """spectral_norm(module, name='weight', n_power_iterations=1, eps=1e-12,
    dim=None) -> module: name becomes name_orig / sigma, sigma estimated by
    power iteration (buffers name_u, name_v) before each forward in
    training mode; dim defaults to 1 for ConvTranspose, else 0."""
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undoes spectral_norm: name is a plain Parameter again, holding
    weight_orig / sigma (with the current u, v)."""
    for k, hook in _pre_hooks(module):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            _del_pre_hook(module, k)
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for k, hook in list(module._state_dict_hooks.items()):
        if isinstance(hook, SpectralNormStateDictHook) and hook.fn.name == name:
            del module._state_dict_hooks[k]
            break
    for k, hook in list(module._load_state_dict_pre_hooks.items()):
        hook = getattr(hook, "hook", hook)   # the _WrappedHook around it
        if isinstance(hook, SpectralNormLoadStateDictPreHook) and hook.fn.name == name:
            del module._load_state_dict_pre_hooks[k]
            break
    return module
