"""symtrace.compile, symtrace.explain, symtrace.reset: the Python face of the
bytecode frontend (DESIGN.md "Frontend"). A compiled function runs with the
PEP 523 frame hook active on its thread: each Python frame it calls is
translated into a StatementIR graph guarded on its inputs, and later calls
whose guards pass run the compiled graph from C. What cannot be captured
runs as plain Python (a graph break), never as an error unless
fullgraph=True or SYMTRACE_STRICT=1.

    model = symtrace.compile(model)            # a Module: OptimizedModule
    @symtrace.compile(backend="interp")
    def f(x, y): return (x @ y).relu()
    print(symtrace.explain(f, x, y))
"""
import os
import sysconfig
import warnings

from . import _C
from ._tensor import device as _device
from .nn.modules.module import Module

__all__ = ["compile", "explain", "reset", "OptimizedModule", "ExplainOutput"]

_BACKENDS = ("llvm", "nvrtc", "interp", "eager", "cudaemu")
# torch.compile's backend names, as symtrace's (None: the default)
_TORCH_BACKENDS = {"inductor": None, "cudagraphs": None, "aot_eager": "eager",
                   "aot_eager_decomp_partition": "eager"}
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _install():
    pkg = os.path.dirname(os.path.abspath(__file__))
    rules = []
    for root in {pkg, os.path.realpath(pkg)}:
        rules += [(root + os.sep, True),
                  (os.path.join(root, "nn") + os.sep, False),   # layers may be compiled
                  (os.path.join(root, "nn", "modules", "module.py"), True)]
    rules.append(("<frozen ", True))            # frozen standard modules (os, posixpath, ...)
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib"):
        p = paths.get(key)
        if p:
            for q in {os.path.abspath(p), os.path.realpath(p)}:
                rules.append((q + os.sep, True))
    _C._fe_set_skip_rules(rules)
    _C._fe_set_classes(Module, _device)
    from ._symint import LazyFloat, LazyInt, SymInt
    _C._fe_set_symint(SymInt, LazyInt, LazyFloat)


_install()
from . import compiler  # noqa: E402,F401  (st.compiler: disable, is_compiling)
_warned_unsupported = False


def _default_backend():
    from . import cuda
    if cuda.is_available():
        return "nvrtc"
    return "llvm" if _C._fe_backend_available("llvm") else "interp"


def _resolve_backend(backend):
    if backend is None:
        return _default_backend()
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise ValueError(f"symtrace.compile: unknown backend {backend!r} "
                         f"(choices: {', '.join(_BACKENDS)})")
    if backend == "nvrtc" and not _C._fe_backend_available(backend):
        from . import cuda
        if cuda.is_available():
            _C._nvrtc_register()   # raises NVRTC's own error when it cannot load
    if backend == "cudaemu" and not _C._fe_backend_available(backend):
        _C._cudaemu_register()   # raises naming the C++ compiler it could not run
    if not _C._fe_backend_available(backend):
        raise ValueError(f"symtrace.compile: backend {backend!r} is not in this build "
                         f"(choices: {', '.join(b for b in _BACKENDS if _C._fe_backend_available(b))})")
    return backend


def _eager(fn):
    import functools

    @functools.wraps(fn)
    def run(*args, **kwargs):
        return fn(*args, **kwargs)
    return run


def _compile_callable(fn, backend, fullgraph, dynamic):
    global _warned_unsupported
    if not _C._fe_supported():
        if not _warned_unsupported:
            _warned_unsupported = True
            warnings.warn("symtrace.compile: this Python version has no frame hook support "
                          "(CPython 3.11 and 3.12 only); functions run eagerly", RuntimeWarning,
                          stacklevel=3)
        return _eager(fn)
    # dynamic None: automatic dynamic shapes (static first; a frame translated
    # again because only tensor sizes changed gets symbolic sizes)
    return _C._fe_compiled(fn, backend, bool(fullgraph), bool(dynamic), dynamic is None)


class OptimizedModule(Module):
    """A Module run under symtrace.compile. It shares the original module's
    attributes (the same __dict__: parameters, buffers, submodules, training
    flag), so parameters(), state_dict(), train()/eval() and attribute
    changes are the original's; `_orig_mod` is the original."""
    __slots__ = ("_orig_mod", "_st_call", "_st_opts")

    def __init__(self, mod, backend, fullgraph=False, dynamic=None):
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "__dict__", mod.__dict__)
        object.__setattr__(self, "_st_opts", (backend, fullgraph, dynamic))
        object.__setattr__(self, "_st_call", _compile_callable(mod.__call__, backend, fullgraph, dynamic))

    def __deepcopy__(self, memo):
        import copy
        return OptimizedModule(copy.deepcopy(self._orig_mod, memo), *self._st_opts)

    def __call__(self, *args, **kwargs):
        return self._st_call(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._orig_mod.forward(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return Module.__getattr__(self, name)
        except AttributeError:
            return getattr(self._orig_mod, name)

    def __dir__(self):
        return sorted(set(Module.__dir__(self)) | set(dir(self._orig_mod)))

    def __repr__(self):
        inner = repr(self._orig_mod).replace("\n", "\n  ")
        return f"OptimizedModule(\n  (_orig_mod): {inner}\n)"

    def __reduce__(self):
        """Pickles as the module and the compile options, as torch's OptimizedModule:
        the compiled code is not pickled; the copy compiles again on its first call."""
        return (OptimizedModule, (self._orig_mod,) + tuple(self._st_opts))


def compile(model=None, *, backend=None, fullgraph=False, dynamic=None, mode=None, options=None,
            name=None, disable=False, recompile_limit=None, isolate_recompiles=False,
            shapes_spec=None):
    """compile(model, backend=None, fullgraph=False, dynamic=None, mode=None, options=None,
    disable=False)

    Returns model compiled: a function becomes a callable that captures the
    frames it runs into graphs; a Module becomes an OptimizedModule. Used as
    a decorator with or without arguments. backend: "llvm", "nvrtc",
    "interp" or "eager" (default: "nvrtc" with a GPU, else "llvm", else
    "interp"); "cudaemu" runs the nvrtc backend's CUDA C on the CPU (a
    testing backend: slow; needs a C++ compiler). fullgraph=True raises on a graph break. dynamic=True (or
    SYMTRACE_DYNAMIC=1 when dynamic is None): the sizes of tensor arguments
    are symbols, one graph serves every batch size and sequence length
    (guards keep ranks, dtypes, devices and the size relations the code
    relied on); frames it cannot express run with static shapes.
    dynamic=None (the default; SYMTRACE_DYNAMIC unset): automatic, as torch's:
    static shapes first; a frame translated again because only tensor sizes
    changed is translated with dynamic shapes. dynamic=False (or
    SYMTRACE_DYNAMIC=0): always static shapes. torch's own backend names run
    symtrace's: "inductor" and "cudagraphs" the default, "aot_eager" "eager";
    options (torch's inductor options) are taken and not used; disable=True
    returns model itself, as torch's (name, recompile_limit, isolate_recompiles and
    shapes_spec are taken for torch's signature and not used)."""
    if disable:
        return model if model is not None else (lambda m: m)
    if options is not None:
        if mode is not None:
            raise RuntimeError("Either mode or options can be specified, but both can't be "
                               "specified at the same time.")
        if not isinstance(options, dict):
            raise TypeError(f"symtrace.compile: options must be a dict, got "
                            f"{type(options).__name__}")
    backend = _TORCH_BACKENDS.get(backend, backend) if isinstance(backend, str) else backend
    if mode not in _MODES:
        raise ValueError(f"symtrace.compile: unknown mode {mode!r} "
                         f"(choices: {', '.join(str(m) for m in _MODES)})")
    be = _resolve_backend(backend)
    if dynamic is None:
        env = os.environ.get("SYMTRACE_DYNAMIC", "")
        if env != "":
            dynamic = env != "0"
    dyn = None if dynamic is None else bool(dynamic)

    def wrap(m):
        if isinstance(m, OptimizedModule):
            m = m._orig_mod
        elif isinstance(m, _C.CompiledFunction):
            m = m.__wrapped__
        if isinstance(m, Module):
            return OptimizedModule(m, be, fullgraph, dyn)
        if not callable(m):
            raise TypeError(f"symtrace.compile expects a function or a Module, got {type(m).__name__}")
        return _compile_callable(m, be, fullgraph, dyn)

    if model is None:
        return wrap
    return wrap(model)


def reset():
    """Drops every compiled entry and every 'run as plain Python' mark."""
    _C._fe_reset()


class BreakReason:
    """Why a frame was not captured (or captured only in part), and where."""
    __slots__ = ("reason", "filename", "lineno", "code")

    def __init__(self, reason, filename, lineno, code=None):
        self.reason, self.filename, self.lineno, self.code = reason, filename, lineno, code

    def __repr__(self):
        return f"BreakReason(reason={self.reason!r}, filename={self.filename!r}, lineno={self.lineno})"


class ExplainOutput:
    """What symtrace.explain found: graphs, breaks, ops and guards (TorchDynamo's
    ExplainOutput)."""

    def __init__(self, records, out):
        graphs = [r for r in records if r["kind"] == "graph"]
        breaks = [r for r in records if r["kind"] == "break"]
        self.graphs = [r["graph"] for r in graphs]
        self.graph_count = len(graphs)
        self.graph_break_count = len(breaks)
        self.break_reasons = [BreakReason(r["reason"], r["filename"], r["lineno"], r["code"])
                              for r in breaks]
        self.ops_per_graph = [r["nops"] for r in graphs]
        self.op_count = sum(self.ops_per_graph)
        self.guards = [g for r in records if r["kind"] in ("graph", "entry")
                       for g in (r["guards"] or [])]
        self.out = out
        self.records = records

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}",
                 "Break Reasons:"]
        for i, b in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {i}:", f"    Reason: {b.reason}",
                      f"    User Stack: {b.filename}:{b.lineno} in {b.code}"]
        lines.append("Ops per Graph:")
        for i, (n, g) in enumerate(zip(self.ops_per_graph, self.graphs), 1):
            lines.append(f"  Ops {i}: {n}")
            if g:
                lines += ["    " + s for s in str(g).splitlines()]
        lines.append("Out Guards:")
        for i, g in enumerate(self.guards, 1):
            lines.append(f"  Guard {i}: {g}")
        return "\n".join(lines) + "\n"

    __repr__ = __str__


def explain(fn, *args, **kwargs):
    """explain(fn, *args, **kwargs) -> ExplainOutput: resets the caches, runs fn
    compiled on the arguments and reports the graphs, graph breaks (with
    reasons and locations), ops per graph and guards."""
    if isinstance(fn, OptimizedModule):
        fn = fn._orig_mod
    elif isinstance(fn, _C.CompiledFunction):
        fn = fn.__wrapped__

    reset()
    compiled = compile(fn)
    _C._fe_explain_begin()
    try:
        out = compiled(*args, **kwargs)
    finally:
        records = _C._fe_explain_end()
    return ExplainOutput(records, out)


# ---------------- warnings.warn inside a compiled frame ----------------
# The translator records the call and makes it after the graph
# (frontend/tr_effects.c): _warn_plan at translation, _replay_warn on each call.

def _warn_action(text, category, module, lineno):
    """The action warnings' filters give this warning (warnings.warn_explicit's match)."""
    for action, msg, cat, mod, ln in warnings.filters:
        if ((msg is None or msg.match(text)) and issubclass(category, cat)
                and (mod is None or mod.match(module)) and (ln == 0 or lineno == ln)):
            return action
    return warnings.defaultaction


def _warn_plan(text, category, module, lineno):
    """None when a filter turns the warning into an error (it must raise where
    it is: the graph breaks there); else the entry's guard, true while none does."""
    if _warn_action(text, category, module, lineno) == "error":
        return None

    def warn_not_error(_fn):
        return _warn_action(text, category, module, lineno) != "error"
    return warn_not_error


def _replay_warn(message, category, filename, lineno, module):
    """warnings.warn's effect at the user's line: warn_explicit with the
    module's __warningregistry__ (made if missing, as warn does)."""
    import sys
    g = getattr(sys.modules.get(module), "__dict__", None)
    registry = None
    if g is not None:
        registry = g.get("__warningregistry__")
        if registry is None:
            registry = g["__warningregistry__"] = {}
    warnings.warn_explicit(message, category, filename, lineno, module, registry)
