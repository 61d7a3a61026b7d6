"""symtrace.nn.Module: the base class of layers, as torch.nn.Module: attribute
registration of parameters, buffers and submodules, traversal, state_dict
save/load (with state_dict and load_state_dict hooks and the per-module
version metadata), train/eval, dtype conversion, zero_grad, repr and deep
copy, forward hooks and full backward hooks."""
import copy
import functools
import itertools
import types
import warnings
import weakref
from collections import OrderedDict, namedtuple

from ... import _C
from ..._dtype import float32, float64, float16, bfloat16, dtype as _dtype_type
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...compiler import disable as _compiler_disable
from ...utils.hooks import RemovableHandle
from ..parameter import Parameter, Buffer, UninitializedTensorMixin, is_lazy, _no_grad

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook"]

# Global forward hooks (torch.nn.modules.module's): every Module's call runs them, before its
# own hooks. Entries as a Module's tables: (hook, with_kwargs, always_call). Compiled graphs
# read these tables as constants (symtrace's own module code is not guarded), so adding or
# removing one drops every compiled entry (a debugging aid: rare, and then recompiled).
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()


def _global_hooks_changed():
    _bump_epoch()
    _C._fe_reset()


def _add_global_hook(table, hook, with_kwargs, always_call):
    """hook put in one of the global tables; compiled frames see the change."""
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    _global_hooks_changed()
    handle = RemovableHandle(table, on_remove=_global_hooks_changed)
    table[handle.id] = (hook, with_kwargs, always_call)
    return handle


def register_module_forward_pre_hook(hook):
    """register_module_forward_pre_hook(hook) -> handle: hook(module, args) runs before every
    Module's forward (before its own pre-hooks), as torch's (a global debugging hook)."""
    return _add_global_hook(_global_forward_pre_hooks, hook, False, False)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """register_module_forward_hook(hook, *, with_kwargs=False, always_call=False) -> handle:
    hook(module, args, output) runs after every Module's forward (before its own hooks), as
    torch's."""
    return _add_global_hook(_global_forward_hooks, hook, with_kwargs, always_call)

# Compiled frames skip their guards on a Module's registered children until
# a Module changes: every attribute set/delete and registration bumps this.
_bump_epoch = _C._fe_bump_module_epoch


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, num_spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join((num_spaces * " ") + line for line in lines)


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _shape_str(t):
    return "[" + ", ".join(str(d) for d in t.shape) + "]"


def _deepcopy_value(v, memo):
    """copy.deepcopy that also copies plain Tensors (detached clones, shared
    through memo) and dicts/lists holding them."""
    if id(v) in memo:
        return memo[id(v)]
    if _is_tensor(v) and not hasattr(type(v), "__deepcopy__"):
        r = v.detach().clone()
        memo[id(v)] = r
        return r
    if type(v) in (dict, OrderedDict):
        r = type(v)()
        memo[id(v)] = r
        for k, x in v.items():
            r[k] = _deepcopy_value(x, memo)
        return r
    if type(v) is list:
        r = []
        memo[id(v)] = r
        r.extend(_deepcopy_value(x, memo) for x in v)
        return r
    return copy.deepcopy(v, memo)


def _on_hook_removed(module):
    """The on_remove of a module hook's handle: removing a hook changes what
    compiled frames may assume, and removing a module's last hook puts its
    __call__ back on the path without hooks. Holds the module weakly."""
    ref = weakref.ref(module)

    def on_remove():
        _bump_epoch()
        m = ref()
        if m is not None:
            m._refresh_has_hooks()
    return on_remove


# ---------------- full backward hooks ----------------
# A call of a module with full backward hooks (or backward pre-hooks) passes
# its positional tensor arguments through one BackwardHookFunction before
# forward and its tensor outputs through another after it (torch's scheme).
# In backward the output node receives the gradients of all outputs at once:
# it runs the pre-hooks (which may replace them) and keeps them; the input
# node, reached after the module's own backward, runs the full hooks with
# (grad_input, grad_output) and hands on what they return. The wrapping runs
# as plain Python (compiler.disable): a graph break under symtrace.compile,
# so the hooks run on every backward with the real gradients.

_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")
# Module._has_hooks of a module compile() compiled (truthy: __call__ takes _call_with_hooks)
_COMPILED = "compiled"

_VIEW_INPLACE_MSG = (
    "Output {} of BackwardHookFunction is a view and is being modified inplace. This view was "
    "created inside a custom Function (or because an input was returned as-is) and the autograd "
    "logic to handle view+inplace would override the custom backward associated with the custom "
    "Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by "
    "cloning the output of the custom Function.")


def _hook_name(hook):
    return getattr(hook, "__name__", None) or type(hook).__name__


# state_dict / load_state_dict hook tables: made per instance on the first
# registration; until then the class's empty read-only table stands in
_STATE_DICT_TABLES = ("_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                      "_load_state_dict_post_hooks")
_NO_HOOKS = types.MappingProxyType({})


class _WrappedHook:
    """A load_state_dict pre-hook, called with the module (held weakly) first
    when registered with with_module=True, as torch's."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = False
        if module is not None:
            self.module = weakref.ref(module)
            self.with_module = True

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        result = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            result["module"] = self.module()
        return result

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


class BackwardHookFunction(Function):
    """The identity on some tensors (as detached aliases, so the module's graph
    hangs below this node); backward gives all their gradients at once to
    ctx.on_backward, a _BackwardHook's method, and returns what it returns."""

    @staticmethod
    def forward(ctx, on_backward, *tensors):
        ctx.set_materialize_grads(False)
        ctx.on_backward = on_backward
        outs = tuple(t.detach() for t in tensors)
        ctx.mark_non_differentiable(*[o for o, t in zip(outs, tensors) if not t.requires_grad])
        return outs

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.on_backward(grads))


class _BackwardHook:
    """One call of a module: links the gradients of its outputs to those of its
    inputs and calls the hooks listed when forward ran (torch.utils.hooks.BackwardHook)."""
    __slots__ = ("module", "hooks", "pre_hooks", "grad_outputs", "n_inputs", "in_idx", "in_meta",
                 "in_alias", "n_outputs", "out_idx", "out_meta", "out_alias")

    def __init__(self, module, hooks, pre_hooks):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.in_idx = self.out_idx = None
        self.in_alias = self.out_alias = ()

    @staticmethod
    def _wrap(on_backward, values):
        """values with its tensors passed through a BackwardHookFunction, the
        indices of those tensors and their aliases; (values, None, ()) when
        none requires grad or grad mode is off."""
        idx = [i for i, v in enumerate(values) if _is_tensor(v)]
        if not (idx and is_grad_enabled() and any(values[i].requires_grad for i in idx)):
            return values, None, ()
        new = BackwardHookFunction.apply(on_backward, *[values[i] for i in idx])
        out = list(values)
        for i, v in zip(idx, new):
            out[i] = v
        out = tuple(out) if type(values) is tuple else type(values)(*out)
        return out, idx, new

    def setup_input(self, args):
        new_args, self.in_idx, new = self._wrap(self._input_grads, args)
        self.n_inputs = len(args)
        if self.in_idx is not None:
            self.in_meta = [(tuple(args[i].shape), args[i].dtype, args[i].device) for i in self.in_idx]
            # checked once forward returns (torch raises at the in-place op itself);
            # second aliases (no grad_fn: no reference cycle through the node)
            # share the version counter
            self.in_alias = [(k, t.detach(), t._version) for k, t in enumerate(new) if t.requires_grad]
        return new_args

    def setup_output(self, result):
        for k, t, ver in self.in_alias:
            if t._version != ver:
                raise RuntimeError(_VIEW_INPLACE_MSG.format(k))
        self.in_alias = ()
        if not isinstance(result, (_C.TensorBase, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a "
                          f"tuple of Tensors but received {type(result)}", stacklevel=6)
        is_tuple = isinstance(result, tuple)
        outs = result if is_tuple else (result,)
        new_outs, self.out_idx, new = self._wrap(self._output_grads, outs)
        self.n_outputs = len(outs)
        if self.out_idx is not None:
            self.out_meta = [(tuple(outs[i].shape), outs[i].dtype, outs[i].device) for i in self.out_idx]
            # an in-place change after forward is seen when backward gets here
            self.out_alias = [(k, t.detach(), t._version) for k, t in enumerate(new) if t.requires_grad]
        return new_outs if is_tuple else new_outs[0]

    @staticmethod
    def _check(hook, values, metas):
        """torch's checks of gradients a hook put in place of others."""
        for v, (shape, dtype, device) in zip(values, metas):
            if v is None:
                continue
            if not _is_tensor(v):
                raise TypeError(f"expected Tensor, but hook returned '{type(v).__name__}'")
            if tuple(v.shape) != shape:
                raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value "
                                   f"(was {list(shape)} got {list(v.shape)})")
            if v.dtype != dtype or v.device != device:
                raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the type of value (was "
                                   f"{device.type}.{dtype} got {v.device.type}.{v.dtype})")

    def _output_grads(self, grads):
        """Backward of the outputs' node: the pre-hooks; the full hooks too when
        no input required grad (grad_input all None)."""
        for k, t, ver in self.out_alias:
            if t._version != ver:
                raise RuntimeError(_VIEW_INPLACE_MSG.format(k))
        go = [None] * self.n_outputs
        for i, g in zip(self.out_idx, grads):
            go[i] = g
        self.grad_outputs = go = tuple(go)
        for hook in self.pre_hooks:
            r = hook(self.module, go)
            if r is None:
                continue
            if len(r) != len(go):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(r)}, but expected {len(go)}")
            self._check(hook, [r[i] for i in self.out_idx], self.out_meta)
            self.grad_outputs = go = r
        if self.in_idx is None:
            warnings.warn("Full backward hook is firing when gradients are computed with respect to "
                          "module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.",
                          stacklevel=2)
            grad_input = (None,) * self.n_inputs
            for hook in self.hooks:
                r = hook(self.module, grad_input, go)
                if r is not None and not (isinstance(r, tuple) and all(x is None for x in r)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                       "should always return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(go[i] for i in self.out_idx)

    def _input_grads(self, grads):
        """Backward of the inputs' node: the full hooks, with the gradients of
        the tensor inputs (zeros where none flowed, as torch's node makes them)."""
        from ... import zeros
        grads = tuple(zeros(m[0], dtype=m[1], device=m[2]) if g is None else g
                      for g, m in zip(grads, self.in_meta))
        go = self.grad_outputs
        if go is None:   # the gradient reached the inputs without passing the outputs
            return grads
        gi = [None] * self.n_inputs
        for i, g in zip(self.in_idx, grads):
            gi[i] = g
        gi = tuple(gi)
        for hook in self.hooks:
            r = hook(self.module, gi, go)
            if r is None:
                continue
            if len(r) != len(gi):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(r)}, but expected {len(gi)}")
            self._check(hook, [r[i] for i in self.in_idx], self.in_meta)
            gi = r
        self.grad_outputs = None
        return tuple(gi[i] for i in self.in_idx)


# plain Python under symtrace.compile: the call is a graph break
@_compiler_disable(reason="module backward hooks")
def _bw_setup_input(bw, args):
    return bw.setup_input(args)


@_compiler_disable(reason="module backward hooks")
def _bw_setup_output(bw, result):
    return bw.setup_output(result)


class Module:
    """Base class for all neural network modules (torch.nn.Module)."""

    training: bool
    _version = 1
    # Hook tables: instance OrderedDicts made in __init__ (compiled frames watch
    # them like the part dicts: their emptiness costs no guard per call): the
    # forward ones id -> (hook, with_kwargs, always_call), the backward ones
    # id -> hook. The class-level empty tuples stand in for modules made
    # without __init__ (cls.__new__, old pickles). _has_hooks: whether any table
    # may hold a hook (set on registration, recomputed on removal), the one
    # test __call__ makes on its path without hooks.
    _forward_pre_hooks = ()
    _forward_hooks = ()
    _backward_pre_hooks = ()
    _backward_hooks = ()
    _has_hooks = False
    # state_dict hooks: id -> hook, tables made on the first registration
    _state_dict_hooks = _NO_HOOKS
    _state_dict_pre_hooks = _NO_HOOKS
    _load_state_dict_pre_hooks = _NO_HOOKS
    _load_state_dict_post_hooks = _NO_HOOKS

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_has_hooks", False)

    def forward(self, *input):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if self._has_hooks or _global_forward_pre_hooks or _global_forward_hooks:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    def compile(self, *args, **kwargs):
        """compile(*args, **kwargs): this module's calls run under symtrace.compile(*args,
        **kwargs) from now on, the module staying itself (its class, attributes and
        state_dict keys), as torch's Module.compile. Copies and pickles of it are not
        compiled."""
        from ..._compile import compile as _compile
        impl = self._call_impl
        c = _compile(impl, *args, **kwargs)
        if c is not impl:                              # disable=True leaves it as it is
            object.__setattr__(self, "_compiled_call_impl", c)
            object.__setattr__(self, "_has_hooks", _COMPILED)   # __call__ takes _call_with_hooks

    def _call_impl(self, *args, **kwargs):
        """The call as without compile(): the hooks (when there are) and forward."""
        d = self.__dict__
        if any(d.get(n) for n in _HOOK_TABLES) or _global_forward_pre_hooks or \
                _global_forward_hooks:
            return self._call_hooks_impl(args, kwargs)
        return self.forward(*args, **kwargs)

    def _call_with_hooks(self, args, kwargs):
        # _has_hooks, already read by __call__, tells a compiled module (compile()) apart:
        # no other read on the path of modules with hooks (a read of __dict__ would guard
        # on it, and weight_norm's pre-hook sets an attribute on every call)
        if self._has_hooks is _COMPILED:
            return self._compiled_call_impl(*args, **kwargs)
        return self._call_hooks_impl(args, kwargs)

    def _call_hooks_impl(self, args, kwargs):
        """forward with the pre-hooks before it and the forward hooks after it,
        in registration order (prepend=True puts one first), as torch's; with
        backward hooks, the tensor arguments (after the pre-hooks) and the
        outputs (after the forward hooks) are wrapped for them."""
        pre, post = self._forward_pre_hooks, self._forward_hooks
        if _global_forward_pre_hooks:     # the global hooks first, as torch's
            pre = OrderedDict(list(_global_forward_pre_hooks.items()) + list(pre.items() if pre else ()))
        if _global_forward_hooks:
            post = OrderedDict(list(_global_forward_hooks.items()) + list(post.items() if post else ()))
        bw = None
        if self._backward_hooks or self._backward_pre_hooks:
            # the hooks registered now are the ones this call's backward runs
            bw = _BackwardHook(self, list(self._backward_hooks.values()) if self._backward_hooks else [],
                               list(self._backward_pre_hooks.values()) if self._backward_pre_hooks else [])
        for hook, with_kwargs, _ in (list(pre.values()) if pre else ()):
            if with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        if bw is not None:
            args = _bw_setup_input(bw, args)
        called = []
        try:
            out = self.forward(*args, **kwargs)
            for key, (hook, with_kwargs, _) in (list(post.items()) if post else ()):
                called.append(key)
                r = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
                if r is not None:
                    out = r
        except BaseException:
            # always_call hooks run even when forward (or an earlier hook) raised
            for key, (hook, with_kwargs, always) in (list(post.items()) if post else ()):
                if always and key not in called:
                    try:
                        hook(self, args, kwargs, None) if with_kwargs else hook(self, args, None)
                    except Exception:
                        pass
            raise
        if bw is not None:
            out = _bw_setup_output(bw, out)
        return out

    def _refresh_has_hooks(self):
        d = self.__dict__
        object.__setattr__(self, "_has_hooks", _COMPILED if d.get("_compiled_call_impl") is not None
                           else any(d.get(n) for n in _HOOK_TABLES))

    def _hook_table(self, name, hook, prepend, entry):
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        _bump_epoch()
        table = self.__dict__.get(name)
        if table is None:
            table = OrderedDict()
            object.__setattr__(self, name, table)
        handle = RemovableHandle(table, on_remove=_on_hook_removed(self))
        table[handle.id] = entry
        if prepend:
            table.move_to_end(handle.id, last=False)
        if not self.__dict__.get("_has_hooks"):
            object.__setattr__(self, "_has_hooks", True)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (hook(module, args, kwargs) -> None or
        (args, kwargs) with with_kwargs=True), called before forward."""
        return self._hook_table("_forward_pre_hooks", hook, prepend, (hook, with_kwargs, False))

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or a new output (hook(module, args, kwargs,
        output) with with_kwargs=True), called after forward."""
        return self._hook_table("_forward_hooks", hook, prepend, (hook, with_kwargs, always_call))

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or a new grad_input, called
        when the gradients with respect to the module's inputs are computed.
        grad_input has one entry per positional argument of forward (None for
        a non-tensor), grad_output one per output (None for a non-tensor or
        an output no gradient reached). When no input requires grad the hook
        fires with the output gradients (grad_input all None); when no output
        requires grad it does not fire. As torch.nn.Module's."""
        return self._hook_table("_backward_hooks", hook, prepend, hook)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or a new grad_output, called when the
        gradients with respect to the module's outputs are computed, before the
        module's own backward. As torch.nn.Module's."""
        return self._hook_table("_backward_pre_hooks", hook, prepend, hook)

    def register_backward_hook(self, hook):
        """Deprecated in torch: taken as register_full_backward_hook (with a
        FutureWarning). torch's non-full hooks see the gradients of the last
        op of forward instead, which may differ for modules of several ops."""
        warnings.warn("register_backward_hook is deprecated: symtrace registers it as "
                      "register_full_backward_hook (grad_input: the gradients with respect to "
                      "the module's positional inputs), which is what torch recommends using.",
                      FutureWarning, stacklevel=2)
        return self.register_full_backward_hook(hook)

    # ---------------- registration ----------------
    def _check_name(self, name, kind):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a buffer (state that is not a parameter); persistent=False keeps
        it out of state_dict."""
        _bump_epoch()
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not _is_tensor(tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(symtrace Tensor or None required)")
        self._buffers[name] = tensor
        if isinstance(tensor, UninitializedTensorMixin):
            tensor._add_owner(self, "_buffers", name)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        _bump_epoch()
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(symtrace.nn.Parameter or None required)")
        if getattr(param, "grad_fn", None) is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                             "must be created explicitly.")
        self._parameters[name] = param
        if isinstance(param, UninitializedTensorMixin):
            param._add_owner(self, "_parameters", name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _bump_epoch()
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(mod._get_name() + " has no parameter `" + name + "`")
        return mod._parameters[name]

    def __getattr__(self, name):
        d = self.__dict__
        for kind in ("_parameters", "_buffers", "_modules"):
            table = d.get(kind)
            if table is not None and name in table:
                return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        _bump_epoch()

        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(symtrace.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                    "(symtrace.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or buffers is not None and name in buffers:
                    if value is not None and not _is_tensor(value):
                        raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                        "(symtrace.nn.Buffer, symtrace.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = getattr(value, "persistent", True)
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)
                    if name in _HOOK_TABLES:
                        self._refresh_has_hooks()

    def __delattr__(self, name):
        _bump_epoch()
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)
            if name in _HOOK_TABLES:
                self._refresh_has_hooks()

    def __dir__(self):
        attrs = dir(self.__class__) + list(self.__dict__.keys())
        keys = attrs + list(self._parameters) + list(self._modules) + list(self._buffers)
        keys = [k for k in keys if not k[0].isdigit()]
        return sorted(set(keys))

    def __getstate__(self):
        """pickle / copy.copy: the attributes, less what __setstate__ recomputes
        (_has_hooks). The rest of a module's state is plain data (tensors pickle
        with Tensor.__reduce_ex__, hooks by reference); compiled code, guards
        and epochs live in C, keyed by code objects and epochs, never here."""
        state = self.__dict__.copy()
        state.pop("_has_hooks", None)
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state):
        _bump_epoch()
        self.__dict__.update(state)
        if "_parameters" in state:   # pickles older than a table get an empty one
            for name in _HOOK_TABLES:
                if name not in state:
                    object.__setattr__(self, name, OrderedDict())
        # hook tables are keyed by RemovableHandle ids: ids from the pickling
        # process must not be handed out again here (a new hook would replace one)
        ids = [k for name in _HOOK_TABLES for k in (self.__dict__.get(name) or ())
               if isinstance(k, int)]
        if ids and RemovableHandle._next_id <= max(ids):
            RemovableHandle._next_id = max(ids) + 1
        self._refresh_has_hooks()

    def __deepcopy__(self, memo):
        cls = type(self)
        new = cls.__new__(cls)
        memo[id(self)] = new
        if cls.__getstate__ is not Module.__getstate__ or cls.__setstate__ is not Module.__setstate__:
            # a class with its own pickling hooks is copied through them, as Python's
            # deepcopy protocol (and so torch) does: TransformerDecoderLayer's __setstate__
            # (torch's, setting activation to relu when it is a submodule), lazy modules'
            # hook handles, users' backward-compatibility fixes
            new.__setstate__(_deepcopy_value(self.__getstate__(), memo))
            return new
        return self._deepcopy_dict(new, memo)

    def _deepcopy_dict(self, new, memo):
        """new (an empty instance of self's class, in memo) given deep copies of self's
        attributes, no pickling hooks involved."""
        for k, v in self.__dict__.items():
            if k != "_compiled_call_impl":             # the copy runs uncompiled
                object.__setattr__(new, k, _deepcopy_value(v, memo))
        if "_compiled_call_impl" in self.__dict__:
            new._refresh_has_hooks()
        return new

    # ---------------- traversal ----------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    # ---------------- modes ----------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Resets every parameter's .grad: to None (default) or to zeros in place."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    with _no_grad():
                        p.grad.zero_()

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---------------- conversion ----------------
    def _apply(self, fn, _memo=None):
        """Replaces every parameter by Parameter(fn(p)) and every buffer by fn(b)
        (grads converted too), recursively; a parameter or buffer shared by
        several modules stays shared."""
        _bump_epoch()
        memo = {} if _memo is None else _memo
        for m in self.children():
            m._apply(fn, memo)
        for key, p in self._parameters.items():
            if p is None:
                continue
            if id(p) in memo:
                self._parameters[key] = memo[id(p)][1]
                continue
            with _no_grad():
                new = fn(p)
            if is_lazy(p):   # still uninitialized, of the new dtype / device
                memo[id(p)] = (p, p._converted(new) if new is not p else p)
                self._parameters[key] = memo[id(p)][1]
                continue
            if new is p:
                memo[id(p)] = (p, p)
                continue
            new_p = Parameter(new, p.requires_grad)
            if p.grad is not None:
                with _no_grad():
                    new_p.grad = fn(p.grad)
            memo[id(p)] = (p, new_p)  # keeps p alive so its id is not reused
            self._parameters[key] = new_p
        for key, b in self._buffers.items():
            if b is None:
                continue
            if id(b) not in memo:
                with _no_grad():
                    new = fn(b)
                memo[id(b)] = (b, b._converted(new) if is_lazy(b) and new is not b else new)
            self._buffers[key] = memo[id(b)][1]
        return self

    def to(self, *args, **kwargs):
        """to(dtype) / to(device) / to(tensor): parameters and buffers are moved to
        device; floating ones are cast to dtype (integer ones keep theirs)."""
        dt = kwargs.get("dtype")
        dev = kwargs.get("device")
        for a in args:
            if isinstance(a, _dtype_type):
                dt = a
            elif _is_tensor(a):
                dt, dev = a.dtype, a.device
            elif a is not None:
                dev = a
        if dt is not None and not dt.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dt}")
        if dt is None and dev is None:
            return self

        def conv(t):
            if dt is not None and t.dtype.is_floating_point:
                t = t.to(dt)
            return t if dev is None else t.to(dev)
        return self._apply(conv)

    def float(self):
        return self._apply(lambda t: t.to(float32) if t.dtype.is_floating_point else t)

    def double(self):
        return self._apply(lambda t: t.to(float64) if t.dtype.is_floating_point else t)

    def half(self):
        return self._apply(lambda t: t.to(float16) if t.dtype.is_floating_point else t)

    def bfloat16(self):
        return self._apply(lambda t: t.to(bfloat16) if t.dtype.is_floating_point else t)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type))

    # ---------------- state dict ----------------
    def _state_dict_table(self, name):
        table = self.__dict__.get(name)
        if table is None:
            table = OrderedDict()
            object.__setattr__(self, name, table)
        return table

    def _register_state_dict_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None or a new
        state_dict (respected at the root module), run after state_dict()."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        table = self._state_dict_table("_state_dict_hooks")
        handle = RemovableHandle(table)
        table[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None, run after
        state_dict(); it may change state_dict in place."""
        hook._from_public_api = True
        table = self._state_dict_table("_state_dict_hooks")
        handle = RemovableHandle(table)
        table[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) -> None, run before state_dict()."""
        table = self._state_dict_table("_state_dict_pre_hooks")
        handle = RemovableHandle(table)
        table[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) (the module first with with_module=True),
        run when this module's part of a state_dict is loaded."""
        table = self._state_dict_table("_load_state_dict_pre_hooks")
        handle = RemovableHandle(table)
        table[handle.id] = _WrappedHook(hook, self if with_module else None)
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) -> None, run before the module is loaded."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None, run after load_state_dict()
        loaded the module; it may change incompatible_keys in place."""
        table = self._state_dict_table("_load_state_dict_post_hooks")
        handle = RemovableHandle(table)
        table[handle.id] = hook
        return handle

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict name -> tensor (detached) of parameters and persistent buffers."""
        if args:  # the positional form (destination, prefix, keep_vars) is deprecated in torch
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if hook_result is not None:
                    destination = hook_result
            elif hook_result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent_buffers.items()) if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not _is_tensor(input_param):
                error_msgs.append(f'While copying the parameter named "{key}", expected Tensor-like '
                                  f"object from checkpoint but received {type(input_param)}")
                continue
            if is_lazy(param):
                # lazy into lazy: nothing to copy (a lazy module's load hook materialized the others)
                if not is_lazy(input_param):
                    error_msgs.append(f'While copying the parameter named "{key}", the parameter in the '
                                      "current model is uninitialized (run a forward first), the one in the "
                                      f"checkpoint has shape {_shape_str(input_param)}.")
                continue
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{_shape_str(input_param)} from checkpoint, the shape in current "
                                  f"model is {_shape_str(param)}.")
                continue
            if local_metadata.get("assign_to_params_buffers", False):
                # assign=True: the checkpoint's tensor itself (its dtype and device) takes the
                # place; a parameter keeps the module's requires_grad
                if name in self._parameters:
                    if not isinstance(input_param, Parameter):
                        input_param = Parameter(input_param, requires_grad=param.requires_grad)
                    else:
                        input_param.requires_grad_(param.requires_grad)
                setattr(self, name, input_param)
                continue
            try:
                with _no_grad():
                    param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in '
                                  f"the model are {_shape_str(param)} and whose dimensions in the "
                                  f"checkpoint are {_shape_str(input_param)}, an exception occurred : "
                                  f"{ex.args}.")
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies state_dict's tensors into the parameters and buffers in place
        (under no_grad); assign=True puts the state_dict's tensors themselves in their
        place (parameters wrapped as Parameter, keeping the module's requires_grad).
        strict: keys must match exactly. Returns
        (missing_keys, unexpected_keys); raises RuntimeError listing every problem."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, prefix=""):
            local_metadata = dict({} if metadata is None else metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            module._load_from_state_dict(state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                out = hook(module, incompatible_keys)
                if out is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                       "expected to return new values, if incompatible_keys need to be "
                                       "modified, it should be done inplace.")

        try:
            load(self)
        finally:
            load = None     # the recursive closure refers to itself: a cycle holding state_dict
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ---------------- repr ----------------
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
