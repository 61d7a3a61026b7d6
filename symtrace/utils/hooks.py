"""symtrace.utils.hooks: RemovableHandle, the handle every register_*_hook
returns (module hooks and tensor gradient hooks), as torch.utils.hooks."""
import weakref

__all__ = ["RemovableHandle"]


def _ref(d):
    """A weak reference to a hook table (an OrderedDict, as torch's), or a
    strong one to a plain dict, which takes no weak references."""
    try:
        return weakref.ref(d)
    except TypeError:
        return lambda: d


class RemovableHandle:
    """remove() takes the hook out of hooks_dict (also on leaving a with
    block). extra_dict: further dicts keyed by the same id (torch's
    with_kwargs / always_call tables). on_remove: a callable run after each
    remove(), for bookkeeping of the hooks' owner (a Module refreshes its
    fast path); it should hold its owner weakly."""
    _next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None, on_remove=None):
        self.hooks_dict_ref = _ref(hooks_dict)
        if extra_dict is None:
            extra_dict = ()
        elif isinstance(extra_dict, dict):
            extra_dict = (extra_dict,)
        self.extra_dict_ref = tuple(_ref(d) for d in extra_dict)
        self.on_remove = on_remove
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None:
                d.pop(self.id, None)
        if self.on_remove is not None:
            self.on_remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
