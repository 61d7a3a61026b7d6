"""symtrace.nn.utils.stateless: functional_call, as
torch.nn.utils.stateless (deprecated there in favour of torch.func's):
the module called with other tensors in place of (some of) its parameters
and buffers, put back after the call, even when it raises. The swap works
on names as torch's NamedMemberAccessor does: a parameter or buffer entry is
replaced in its table, anything else (a plain attribute, a parametrized
tensor's property) is set with setattr."""
import contextlib
import warnings

from ... import _C
from ..modules.module import Module, _bump_epoch

__all__ = ["functional_call"]

_MISSING = object()


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _swap_tensor(module, name, tensor, allow_missing=False):
    """Puts tensor under name in module (removes it for _MISSING); returns
    what was there (_MISSING if nothing)."""
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if tensor is not _MISSING and not _is_tensor(tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    _bump_epoch()   # compiled code that read the module's tables sees the change
    if name in module._parameters:
        orig_tensor = module._parameters[name]
        if tensor is not _MISSING:
            module._parameters[name] = tensor
        else:
            del module._parameters[name]
    elif name in module._buffers:
        orig_tensor = module._buffers[name]
        if tensor is not _MISSING:
            module._buffers[name] = tensor
        else:
            del module._buffers[name]
    else:
        if hasattr(module, name):
            orig_tensor = getattr(module, name)
        else:
            if not allow_missing:
                raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
            orig_tensor = _MISSING
        if orig_tensor is not _MISSING and not _is_tensor(orig_tensor) and orig_tensor is not None:
            raise TypeError(f"attribute `{name}`: {orig_tensor} is not an instance of torch.Tensor")
        if tensor is not _MISSING:
            setattr(module, name, tensor)
        elif hasattr(module, name):
            delattr(module, name)
    return orig_tensor


class _Accessor:
    """Submodules and tensors of a module by dotted name (torch's
    NamedMemberAccessor, the parts functional_call uses)."""

    def __init__(self, module):
        self.module = module
        self.memo = {}

    def get_submodule(self, name):
        if not name:
            return self.module
        if name in self.memo:
            return self.memo[name]
        prefix, dot, attr = name.rpartition(".")
        module = self.get_submodule(prefix) if dot else self.module
        try:
            submodule = getattr(module, attr)
        except AttributeError as ex:
            raise AttributeError(f"{module._get_name()} has no attribute `{attr}`") from ex
        if not isinstance(submodule, Module):
            raise TypeError(f"submodule `{name}`: {submodule} is not an instance of torch.nn.Module")
        self.memo[name] = submodule
        return submodule

    def swap_tensor(self, name, value, allow_missing=False):
        prefix, _, attr = name.rpartition(".")
        return _swap_tensor(self.get_submodule(prefix), attr, value, allow_missing=allow_missing)

    def swap_tensors_dict(self, named_tensors, allow_missing=False):
        orig_named_tensors = {}
        missing_keys = []
        try:
            for name, tensor in named_tensors.items():
                orig_tensor = self.swap_tensor(name, tensor, allow_missing=True)
                if orig_tensor is _MISSING:
                    missing_keys.append(name)
                orig_named_tensors[name] = orig_tensor
        except Exception:
            for name, orig_tensor in orig_named_tensors.items():
                self.swap_tensor(name, orig_tensor, allow_missing=True)
            raise
        if missing_keys and not allow_missing:
            for name, orig_tensor in orig_named_tensors.items():
                self.swap_tensor(name, orig_tensor, allow_missing=True)
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, missing_keys))}.")
        return orig_named_tensors, missing_keys

    def check_keys(self, keys):
        keys = set(keys)
        valid_keys = {name for name, _ in self.module.named_parameters(remove_duplicate=False)}
        valid_keys |= {name for name, _ in self.module.named_buffers(remove_duplicate=False)}
        return sorted(valid_keys - keys), sorted(keys - valid_keys)


def _untie_named_tensors_map(module, parameters_and_buffers):
    """parameters_and_buffers with each given tensor also under the other names
    of the module tensor it replaces (weights tied in the module stay tied);
    ValueError when tied names are given different tensors."""
    all_named_tensors = {}
    all_named_tensors.update(module.named_parameters(remove_duplicate=False))
    all_named_tensors.update(module.named_buffers(remove_duplicate=False))
    tensor_to_tied_names_map = {}
    for name, tensor in all_named_tensors.items():
        tensor_to_tied_names_map.setdefault(id(tensor), set()).add(name)
    tied_names_map = {}
    for tied_names in tensor_to_tied_names_map.values():
        if len(tied_names) > 1:
            for tied_name in tied_names:
                tied_names_map[tied_name] = tied_names
    given_names = set(parameters_and_buffers.keys())
    given_names_for_tied_tensors = {name for name in given_names if name in tied_names_map}
    for given_name in given_names_for_tied_tensors:
        tied_names = tied_names_map[given_name]
        if (len(tied_names.intersection(given_names_for_tied_tensors)) > 1
                and len({id(parameters_and_buffers[n]) for n in tied_names if n in parameters_and_buffers}) != 1):
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied_names)}, "
                             "which are tied. Consider using tie_weights=False")
    untied_parameters_and_buffers = parameters_and_buffers.copy()
    for given_name in given_names_for_tied_tensors:
        for tied_name in tied_names_map[given_name]:
            untied_parameters_and_buffers[tied_name] = parameters_and_buffers[given_name]
    return untied_parameters_and_buffers


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False, stack_weights=False):
    if tie_weights:
        untied_parameters_and_buffers = _untie_named_tensors_map(module, parameters_and_buffers)
    else:
        untied_parameters_and_buffers = parameters_and_buffers
    accessor = _Accessor(module)
    if strict:
        missing_keys, unexpected_keys = accessor.check_keys(untied_parameters_and_buffers)
        error_msgs = []
        if len(unexpected_keys) > 0:
            error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected_keys))}.")
        if len(missing_keys) > 0:
            error_msgs.append(f"Missing key(s): {', '.join(map(repr, missing_keys))}.")
        if len(error_msgs) > 0:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(error_msgs)))
    orig_parameters_and_buffers = {}
    try:
        orig_parameters_and_buffers, _ = accessor.swap_tensors_dict(untied_parameters_and_buffers,
                                                                    allow_missing=True)
        yield
    finally:
        if stack_weights:
            orig_parameters_and_buffers = dict(reversed(orig_parameters_and_buffers.items()))
        new_parameters_and_buffers, _ = accessor.swap_tensors_dict(orig_parameters_and_buffers,
                                                                   allow_missing=True)
        # tensors the call replaced in the module (e.g. buffers set anew) go back into the dict
        parameters_and_buffers.update({k: new_parameters_and_buffers[k] for k in parameters_and_buffers
                                       if k in new_parameters_and_buffers})


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
    tie_weights=True, strict=False) -> module(*args, **kwargs) computed with
    the tensors of parameters_and_buffers (names as in named_parameters /
    named_buffers) in place of the module's own; the module is left as it
    was. tie_weights: a tensor given for one of several tied names replaces
    all of them. strict: every parameter and buffer must be given, and
    nothing else (deprecated in torch in favour of torch.func.functional_call)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
