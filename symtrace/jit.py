"""symtrace.jit: torch.jit's names, for code ported from PyTorch. symtrace has no TorchScript:
script() and trace() return the module or function they are given, unchanged, and it runs as
Python; symtrace.compile(model_or_fn) is the way to compile (it captures graphs from the Python
code and keeps parameters, state_dict keys and training mode as they are, which a wrapper would
hide). trace() does run the function once on the example inputs and checks the inputs and outputs
are tensors or (nested) lists, tuples and dicts of them, as torch's tracer does; is_scripting() and
is_tracing() are always False (the code never runs under a TorchScript compiler or tracer).

save() / load() use symtrace.save / symtrace.load on the whole module (a pickle: its class must be
importable where it is loaded); a TorchScript archive written by torch.jit.save holds TorchScript
code, which symtrace cannot run: load() says so. fork() runs the function at once and returns a
finished Future; wait() returns its value. ScriptModule and ScriptFunction exist for isinstance
checks and subclassing: nothing script() or trace() returns is one of them."""
import contextlib
import os
import typing
import zipfile

from . import _C
from .nn.modules.module import Module as _Module

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "annotate", "Final", "fork", "wait", "Future", "save", "load", "ScriptModule", "ScriptFunction",
           "script_method", "interface", "freeze", "optimize_for_inference", "Attribute"]

Final = typing.Final


class ScriptModule(_Module):
    """torch.jit.ScriptModule's name: an nn.Module (subclass it as in torch; its methods run as Python)."""


class ScriptFunction:
    """torch.jit.ScriptFunction's name, for isinstance checks (script() returns functions unchanged)."""


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """script(obj) -> obj: the module, function or class itself (no TorchScript; see the module's notes)."""
    return obj


def script_method(fn):
    """script_method(fn) -> fn: the method itself."""
    return fn


def interface(obj):
    """interface(obj) -> obj: the class itself."""
    return obj


def _type_str(x):
    if isinstance(x, _C.TensorBase):
        return "Tensor"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    if isinstance(x, float):
        return "float"
    if isinstance(x, str):
        return "str"
    if isinstance(x, tuple):
        return "Tuple[" + ", ".join(_type_str(v) for v in x) + "]"
    if isinstance(x, list):
        return "List[" + (_type_str(x[0]) if x else "Tensor") + "]"
    if isinstance(x, dict):
        if not x:
            return "Dict[str, Tensor]"
        k, v = next(iter(x.items()))
        return f"Dict[{_type_str(k)}, {_type_str(v)}]"
    if x is None:
        return "NoneType"
    return type(x).__name__


def _traceable(x):
    if isinstance(x, _C.TensorBase):
        return True
    if isinstance(x, (list, tuple)):
        return all(_traceable(v) for v in x)
    if isinstance(x, dict):
        return all(_traceable(v) for v in x.values())
    return False


def _run_example(func, example_inputs, example_kwarg_inputs):
    if example_kwarg_inputs is not None:
        if not isinstance(example_kwarg_inputs, dict):
            raise RuntimeError("example_kwarg_inputs should be a dict")
        if not _traceable(example_kwarg_inputs):
            raise RuntimeError(f"Type '{_type_str(example_kwarg_inputs)}' cannot be traced. Only Tensors and "
                               f"(possibly nested) Lists, Dicts, and Tuples of Tensors can be traced")
        out = func(**example_kwarg_inputs)
    else:
        if example_inputs is None:
            raise TypeError("trace() needs example_inputs (a tensor or a tuple of them) or example_kwarg_inputs")
        if isinstance(example_inputs, (_C.TensorBase, dict)):
            example_inputs = (example_inputs,)
        elif not isinstance(example_inputs, tuple):
            example_inputs = tuple(example_inputs)
        if not _traceable(example_inputs):
            raise RuntimeError(f"Type '{_type_str(example_inputs)}' cannot be traced. Only Tensors and "
                               f"(possibly nested) Lists, Dicts, and Tuples of Tensors can be traced")
        out = func(*example_inputs)
    if not _traceable(out):
        raise RuntimeError("Only tensors, lists, tuples of tensors, or dictionary of tensors can be output "
                           "from traced functions")
    return out


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-05,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """trace(func, example_inputs) -> func: runs func (a function or module) once on example_inputs
    (a tensor, or a tuple of positional inputs; or example_kwarg_inputs, a dict), checks inputs and
    outputs are tensors or nested lists / tuples / dicts of tensors (torch's errors), and returns func
    unchanged."""
    if not callable(func):
        raise TypeError(f"trace() expects a function or an nn.Module, got {type(func).__name__}")
    _run_example(func, example_inputs, example_kwarg_inputs)
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-05,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    """trace_module(mod, inputs) -> mod: runs each method named in inputs ({name: example inputs})
    once, as trace() runs func, and returns mod unchanged."""
    if not isinstance(mod, _Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    for name, args in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg:
            _run_example(method, None, args)
        else:
            _run_example(method, args, None)
    return mod


def ignore(drop=False, **kwargs):
    """ignore(fn) / ignore(drop=False): fn itself (a decorator with or without arguments)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """unused(fn) -> fn."""
    return fn


def export(fn):
    """export(fn) -> fn."""
    return fn


def is_scripting():
    """is_scripting() -> bool: False (code never runs under TorchScript)."""
    return False


def is_tracing():
    """is_tracing() -> bool: False (trace() runs the code as Python, without a tracer)."""
    return False


def annotate(the_type, the_value):
    """annotate(the_type, the_value) -> the_value."""
    return the_value


def Attribute(value, type=None):   # noqa: N802  (torch's name)
    """Attribute(value, type) -> value."""
    return value


class Future:
    """A finished result of fork(): wait() / value() return it, done() is True, then(cb) calls cb(self)."""

    def __init__(self, value=None):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True

    def then(self, callback):
        return Future(callback(self))

    def add_done_callback(self, callback):
        callback(self)


def fork(func, *args, **kwargs):
    """fork(func, *args, **kwargs) -> Future: runs func(*args, **kwargs) now and returns its result as
    a finished Future (no parallel execution)."""
    return Future(func(*args, **kwargs))


def wait(future):
    """wait(future) -> the future's value."""
    return future.wait()


_JIT_KEY = "__symtrace_jit_module__"


def save(m, f, _extra_files=None):
    """save(m, f, _extra_files=None): saves module m (its class pickled by name, its tensors as
    symtrace.save stores them) and the extra files ({name: str or bytes}) to f, for jit.load."""
    if not isinstance(m, _Module):
        raise RuntimeError(f"symtrace.jit.save expects an nn.Module, got {type(m).__name__}: symtrace has no "
                           f"TorchScript functions to save")
    from .serialization import save as _save
    extra = {k: (v.encode() if isinstance(v, str) else bytes(v)) for k, v in (_extra_files or {}).items()}
    _save({_JIT_KEY: m, "extra_files": extra}, f)


def _is_torchscript_archive(f):
    try:
        if isinstance(f, (str, os.PathLike)):
            zf = zipfile.ZipFile(f)
        else:
            f.seek(0)
            zf = zipfile.ZipFile(f)
        with zf:
            return any(n.split("/", 1)[-1] in ("constants.pkl",) or "/code/" in n for n in zf.namelist())
    except Exception:
        return False


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """load(f, map_location=None, _extra_files=None) -> Module: a module saved by jit.save (or by
    symtrace.save); _extra_files' values are filled in place. A TorchScript archive from torch.jit.save
    raises RuntimeError (symtrace cannot run TorchScript code)."""
    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {f} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {f} is a directory")
    from .serialization import load as _load
    if _is_torchscript_archive(f):
        raise RuntimeError(f"{f} is a TorchScript archive (written by torch.jit.save): symtrace has no "
                           f"TorchScript and cannot run its code. Save the model's state_dict with torch.save "
                           f"and load it with symtrace.load into the same model defined in Python.")
    if not isinstance(f, (str, os.PathLike)) and hasattr(f, "seek"):
        f.seek(0)
    obj = _load(f, map_location=map_location, weights_only=False)
    if isinstance(obj, dict) and _JIT_KEY in obj:
        if _extra_files is not None:
            for k in list(_extra_files):
                if k in obj["extra_files"]:
                    _extra_files[k] = obj["extra_files"][k]
        obj = obj[_JIT_KEY]
    if not isinstance(obj, _Module):
        raise RuntimeError(f"symtrace.jit.load: the file holds a {type(obj).__name__}, not a module saved by "
                           f"symtrace.jit.save; load it with symtrace.load")
    return obj


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """freeze(mod) -> mod: the module itself, which must be in eval mode (torch's rule)."""
    if not isinstance(mod, _Module):
        raise RuntimeError("Freezing expects an nn.Module as input (symtrace.jit.script / trace return the "
                           "module unchanged).")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() "
                           "on your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    """optimize_for_inference(mod) -> mod: the module itself, put in eval mode."""
    if not isinstance(mod, _Module):
        raise RuntimeError("optimize_for_inference expects an nn.Module as input.")
    return freeze(mod.eval(), preserved_attrs=other_methods)


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """optimized_execution(flag): a context manager that changes nothing (no TorchScript executor)."""
    yield
