"""Function.apply's arguments: keyword arguments bound to forward's positional
parameters, as torch's apply does (forward then gets them all by position, so
needs_input_grad and backward's gradients count them), and setup_context
style's defaults filled in."""
import inspect


def bind_apply_args(forward, args, kwargs, setup_context):
    """The positional arguments forward gets for apply(*args, **kwargs).
    setup_context style (forward without ctx): bound with defaults applied; ctx
    style: each keyword goes to the position of the parameter of its name (after
    ctx), with no defaults filled in, and a gap is an error (torch's texts)."""
    sig = inspect.signature(forward)
    if setup_context:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.kwargs:
            name = next(iter(bound.kwargs))
            raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
        return bound.args
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]
    pos = {p.name: i for i, p in enumerate(params) if p.kind is p.POSITIONAL_OR_KEYWORD}
    slots = list(args)
    given = [True] * len(args)
    for name, value in kwargs.items():
        if name not in pos:
            raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
        i = pos[name]
        if i < len(args):
            raise TypeError(f"forward() got multiple values for argument '{name}'")
        while len(slots) <= i:
            slots.append(None)
            given.append(False)
        slots[i] = value
        given[i] = True
    for i, ok in enumerate(given):
        if not ok:
            raise TypeError(f"forward() missing required argument: '{params[i].name}' "
                            f"(position {i})")
    return tuple(slots)
