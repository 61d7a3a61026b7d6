"""symtrace._dynamo: the names training scripts use from torch._dynamo, over symtrace's
frontend: config (an attribute bag with torch's common settings; cache_size_limit and
recompile_limit are read by nothing, SYMTRACE_CACHE_LIMIT sets symtrace's), reset, disable,
graph_break (a call the translator breaks the graph at), explain, is_compiling,
allow_in_graph, assume_constant_result, list_backends and the shape marks mark_dynamic,
maybe_mark_dynamic, mark_static, mark_static_address (accepted and not needed: a frame
translated again because only sizes changed gets dynamic sizes by itself)."""
from .. import compiler as _compiler
from .._compile import explain as _explain, reset  # noqa: F401

__all__ = ["config", "reset", "disable", "graph_break", "explain", "is_compiling",
           "allow_in_graph", "assume_constant_result", "list_backends", "mark_dynamic",
           "maybe_mark_dynamic", "mark_static", "mark_static_address"]


class _Config:
    """torch._dynamo.config's commonly set names, with torch's defaults; any other name can
    be set and read back (scripts set flags symtrace has no use for)."""

    def __init__(self):
        self.__dict__.update(cache_size_limit=8, recompile_limit=8, accumulated_cache_size_limit=256,
                             suppress_errors=False, verbose=False, capture_scalar_outputs=False,
                             capture_dynamic_output_shape_ops=False, automatic_dynamic_shapes=True,
                             assume_static_by_default=True, optimize_ddp=True,
                             inline_inbuilt_nn_modules=True)

    def __repr__(self):
        return f"symtrace._dynamo.config({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


config = _Config()
disable = _compiler.disable
is_compiling = _compiler.is_compiling
allow_in_graph = _compiler.allow_in_graph
assume_constant_result = _compiler.assume_constant_result
list_backends = _compiler.list_backends


def explain(f, *extra_args, **extra_kwargs):
    """explain(f)(*args) (torch's form; explain(f, *args) also): symtrace.explain's
    ExplainOutput for f run on args."""
    if extra_args or extra_kwargs:
        return _explain(f, *extra_args, **extra_kwargs)

    def run(*args, **kwargs):
        return _explain(f, *args, **kwargs)
    return run


@_compiler.disable
def graph_break():
    """Ends the graph being captured here (a call the translator does not capture)."""


def _check_dims(name, t, index):
    from .._tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(t).__name__}")
    for i in ([index] if isinstance(index, int) else list(index or ())):
        if not isinstance(i, int) or not -t.dim() <= i < max(t.dim(), 1):
            raise IndexError(f"{name}: dimension {i!r} is out of range for a tensor of "
                             f"{t.dim()} dimensions")


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None):
    """Accepted: symtrace makes sizes dynamic when a frame is translated again for them."""
    _check_dims("mark_dynamic", t, index)


def maybe_mark_dynamic(t, index):
    _check_dims("maybe_mark_dynamic", t, index)


def mark_static(t, index=None):
    if index is not None:
        _check_dims("mark_static", t, index)


def mark_static_address(t, guard=True):
    _check_dims("mark_static_address", t, None)
