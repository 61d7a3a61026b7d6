"""symtrace.compiler: what torch.compiler offers around symtrace.compile.

    @symtrace.compiler.disable
    def log_stats(x): ...          # never captured: a graph break, run as Python
    if symtrace.compiler.is_compiling(): ...   # True inside a compiled graph

disable(fn) marks fn so that the bytecode translator breaks the graph at a
call to it (the call runs as plain Python), and while it runs no frame it
calls is compiled either (torch's recursive=True). recursive=False is taken
as True: fn's callees run as plain Python too (less is compiled, nothing
runs differently). is_compiling() is False when run as Python and True in
the graph the translator builds (it is folded to a constant there).
allow_in_graph and assume_constant_result return fn as it is,
cudagraph_mark_step_begin does nothing (no CUDA graphs to mark), list_backends
names symtrace.compile's backends in this build.
"""
import functools

from . import _C

__all__ = ["disable", "is_compiling", "is_dynamo_compiling", "reset", "allow_in_graph",
           "assume_constant_result", "cudagraph_mark_step_begin", "is_exporting", "list_backends"]


def disable(fn=None, recursive=True, *, reason=None):
    """disable(fn) / @disable / @disable(reason=...): fn is never compiled (see the module)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if not callable(fn):
        raise TypeError(f"symtrace.compiler.disable: {fn!r} is not callable")
    if getattr(fn, "_symtrace_disabled", False):
        return fn

    @functools.wraps(fn)
    def _disabled(*args, **kwargs):
        _C._fe_suspend(1)
        try:
            return fn(*args, **kwargs)
        finally:
            _C._fe_suspend(-1)

    _disabled._symtrace_disabled = reason or True
    return _disabled


def _undisabled(fn, *args, **kwargs):
    """fn(*args, **kwargs) with the compiler as it was outside the innermost disable(): for a
    disabled function that calls back into user code (LBFGS.step calling its closure)."""
    _C._fe_suspend(-1)
    try:
        return fn(*args, **kwargs)
    finally:
        _C._fe_suspend(1)


def is_compiling():
    """True while the code runs as (part of) a compiled graph, False as Python."""
    return False


is_dynamo_compiling = is_compiling


def reset():
    """Drops every compiled graph (symtrace.reset)."""
    from ._compile import reset as _reset
    _reset()


def allow_in_graph(fn):
    """fn, as it is: the translator already captures the Python functions it can."""
    if not callable(fn):
        raise TypeError(f"symtrace.compiler.allow_in_graph: {fn!r} is not callable")
    return fn


def assume_constant_result(fn):
    """fn, as it is (torch folds its result into the graph; symtrace runs it)."""
    if not callable(fn):
        raise TypeError(f"symtrace.compiler.assume_constant_result: {fn!r} is not callable")
    return fn


def cudagraph_mark_step_begin():
    """A new iteration begins (torch's mode="reduce-overhead" CUDA graphs): nothing to do."""


def is_exporting():
    return False


def list_backends(exclude_tags=("debug", "experimental")):
    """The backends symtrace.compile takes in this build."""
    from ._compile import _BACKENDS
    return sorted(b for b in _BACKENDS if _C._fe_backend_available(b))
