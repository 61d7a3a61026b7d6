"""Optimizer hooks, as torch.optim's: the global step pre/post hooks
(register_optimizer_step_pre_hook / _post_hook, for every optimizer), the
per-optimizer hook tables (step, state_dict and load_state_dict, pre and post)
and the wrapper an optimizer class's step() runs under once an instance of it
exists (torch's Optimizer._patch_step_function)."""
import functools
from collections import OrderedDict
from itertools import chain

from ..utils.hooks import RemovableHandle

__all__ = ["register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_global_pre_hooks = OrderedDict()
_global_post_hooks = OrderedDict()


def _add(table, hook, prepend=False):
    handle = RemovableHandle(table)
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook):
    """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), run before
    every optimizer's step(). Returns a handle whose remove() unregisters it."""
    return _add(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """hook(optimizer, args, kwargs) -> None, run after every optimizer's step()."""
    return _add(_global_post_hooks, hook)


def table(opt, name):
    """The optimizer's hook table `name` (created on first use, so that optimizers
    unpickled or built without Optimizer.__init__ have one too)."""
    t = opt.__dict__.get(name)
    if t is None:
        t = opt.__dict__[name] = OrderedDict()
    return t


def hooked_step(func):
    """step wrapped to run the global and the optimizer's step hooks around it."""
    @functools.wraps(func)
    def step(*args, **kwargs):
        self = args[0]      # the hooks' args hold self, as torch's
        pre = self.__dict__.get("_optimizer_step_pre_hooks")
        if _global_pre_hooks or pre:
            for hook in chain(_global_pre_hooks.values(), (pre or {}).values()):
                result = hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
        out = func(*args, **kwargs)
        post = self.__dict__.get("_optimizer_step_post_hooks")
        if _global_post_hooks or post:
            for hook in chain((post or {}).values(), _global_post_hooks.values()):
                hook(self, args, kwargs)
        return out
    step.hooked = True
    return step


def patch_step(cls):
    """Wraps cls.step (the one its instances call) once, as torch does on the
    first construction of each optimizer class."""
    if not getattr(cls.step, "hooked", False):
        cls.step = hooked_step(cls.step)
