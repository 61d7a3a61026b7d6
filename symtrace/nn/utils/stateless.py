"""symtrace.nn.utils.stateless: calling a module with other tensors in place of its
parameters and buffers (functional_call), as torch.nn.utils.stateless; also the
implementation behind symtrace.func.functional_call.

The given tensors are swapped into the modules' _parameters / _buffers tables
(or set as plain attributes) for the call and the originals put back after it,
even when the call raises. Tied tensors (one tensor under several names) are
replaced together when tie_weights=True."""
import contextlib
import warnings

from ... import _C
from ..modules.module import Module, _bump_epoch

__all__ = ["functional_call"]

_MISSING = object()


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _swap_tensor(module, name, tensor):
    """Puts tensor (or removes the entry, for _MISSING) under name in module;
    returns what was there (_MISSING if nothing)."""
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if tensor is not _MISSING and not _is_tensor(tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    _bump_epoch()  # compiled graphs that read module attributes see the change
    if name in module._parameters:
        orig = module._parameters[name]
        if tensor is not _MISSING:
            module._parameters[name] = tensor
        else:
            del module._parameters[name]
    elif name in module._buffers:
        orig = module._buffers[name]
        if tensor is not _MISSING:
            module._buffers[name] = tensor
        else:
            del module._buffers[name]
    else:
        orig = getattr(module, name) if hasattr(module, name) else _MISSING
        if orig is not _MISSING and not _is_tensor(orig) and orig is not None:
            raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
        if tensor is not _MISSING:
            setattr(module, name, tensor)
        elif hasattr(module, name):
            delattr(module, name)
    return orig


def _get_submodule(module, name, memo):
    if not name:
        return module
    if name in memo:
        return memo[name]
    prefix, dot, attr = name.rpartition(".")
    parent = _get_submodule(module, prefix, memo) if dot else module
    try:
        sub = getattr(parent, attr)
    except AttributeError as ex:
        raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from ex
    if not isinstance(sub, Module):
        raise TypeError(f"submodule `{name}`: {sub} is not an instance of torch.nn.Module")
    memo[name] = sub
    return sub


def _swap_tensors_dict(module, named_tensors):
    """Swaps every name -> tensor in; returns the originals (undone on an error)."""
    memo = {}
    orig = {}
    try:
        for name, tensor in named_tensors.items():
            prefix, _, attr = name.rpartition(".")
            orig[name] = _swap_tensor(_get_submodule(module, prefix, memo), attr, tensor)
    except Exception:
        for name, t in orig.items():
            prefix, _, attr = name.rpartition(".")
            _swap_tensor(_get_submodule(module, prefix, memo), attr, t)
        raise
    return orig


def _untie_named_tensors_map(module, parameters_and_buffers):
    """parameters_and_buffers with a value given for one of several tied names
    repeated under all of them; ValueError for different values of tied names."""
    all_named = {}
    all_named.update(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    by_tensor = {}
    for name, tensor in all_named.items():
        by_tensor.setdefault(id(tensor), set()).add(name)
    tied = {}
    for names in by_tensor.values():
        if len(names) > 1:
            for n in names:
                tied[n] = names
    given = set(parameters_and_buffers.keys())
    given_tied = {n for n in given if n in tied}
    for g in given_tied:
        names = tied[g]
        if (len(names.intersection(given_tied)) > 1
                and len({id(parameters_and_buffers[n]) for n in names if n in parameters_and_buffers}) != 1):
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for g in given_tied:
        for n in tied[g]:
            untied[n] = parameters_and_buffers[g]
    return untied


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    """Context in which module holds parameters_and_buffers in place of its own."""
    if tie_weights:
        untied = _untie_named_tensors_map(module, parameters_and_buffers)
    else:
        untied = parameters_and_buffers
    if strict:
        keys = set(untied)
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - keys), sorted(keys - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    orig = {}
    try:
        orig = _swap_tensors_dict(module, untied)
        yield
    finally:
        # what the call left in the module (a buffer it reassigned) goes back to the dict
        new = _swap_tensors_dict(module, orig)
        parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True,
                     strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
    tie_weights=True, strict=False) -> module(*args, **kwargs) run with the given
    tensors in place of the named parameters and buffers (deprecated: use
    symtrace.func.functional_call)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. "
                  "Please use `torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                            strict=strict)
