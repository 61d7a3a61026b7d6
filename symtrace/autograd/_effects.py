"""symtrace.autograd._effects: does a custom Function's Python code have side effects?

Inside symtrace.compile, an autograd.Function met in a frame is captured by running its
forward and backward once, for real, while the trace records their tensor ops
(frontend/pylayer_trace.c). Tensor ops become the graph; plain Python does not: a forward
that appends to a list from outside, stores a global, sets an attribute of an object from
outside, or prints, would do so at the capture only, and never again on a cached call.
TorchDynamo graph-breaks on such a Function; so does symtrace: side_effect(cls) names the
first such statement found, and the translator then runs that Function eagerly (a graph
break), every call.

The check reads bytecode (forward, setup_context, backward/vjp, and the functions and
comprehensions defined inside them), without running it:
  - STORE_GLOBAL / DELETE_GLOBAL, and STORE_DEREF / DELETE_DEREF of an enclosing
    function's variable;
  - attribute stores and deletions on objects that are not the function's own locals
    (ctx and objects made inside are fine; a global, a closure variable, an argument);
  - item stores and deletions on globals and closure variables (writes into tensors are
    traced: arguments and locals are fine);
  - calls of mutating methods (append, update, ...) on globals and closure variables
    that hold plain Python objects (not modules, classes or functions), and print().
Functions the Function calls are not read (a helper that mutates a global is not seen).

globals_read(cls) lists the module globals holding plain constants (numbers, strings,
None, tuples of them) or tensors that forward/setup_context/backward read: the capture
bakes the constants' values and the tensors' identities into the graph, so the translator
guards them (a later call after ALPHA changed, or after a global mask was rebound,
translates again).
"""
import builtins
import dis
import types

from .. import _C

__all__ = ["side_effect", "globals_read"]

_MUTATORS = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update",
    "setdefault", "add", "discard", "appendleft", "extendleft", "popleft", "put",
    "put_nowait", "write", "writelines", "__setitem__", "__delitem__", "__setattr__",
})
_OUTSIDE = frozenset({"LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_NAME"})
_LIBRARIES = ("symtrace", "torch", "numpy")
_MAX_DEPTH = 3
_cache = {}


def _code_of(fn):
    fn = getattr(fn, "__func__", fn)
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return getattr(fn, "__code__", None), fn


def _outside_value(ins, fn, code):
    """(True, value) for a load of a global / closure variable (value: its current
    object, or a sentinel when it cannot be read); (False, None) otherwise."""
    if ins.opname not in _OUTSIDE:
        return False, None
    if ins.opname in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
        if ins.argval not in code.co_freevars:
            return False, None        # a cell of this function: its own local
        cells = getattr(fn, "__closure__", None) or ()
        i = code.co_freevars.index(ins.argval)
        try:
            return True, cells[i].cell_contents if i < len(cells) else _UNKNOWN
        except ValueError:
            return True, _UNKNOWN
    g = getattr(fn, "__globals__", {})
    if ins.argval in g:
        return True, g[ins.argval]
    return True, getattr(builtins, ins.argval, _UNKNOWN)


class _Unknown:
    pass


_UNKNOWN = _Unknown()


def _plain_object(v):
    """a value whose mutation is a side effect worth a break (not a module, class,
    function or the like, whose attributes a call would not change)"""
    return not isinstance(v, (types.ModuleType, type, types.FunctionType,
                              types.BuiltinFunctionType, types.MethodType))


def _pusher(instrs, i, depth):
    """the instruction that pushed the value `depth` slots below the top of the stack
    just before instrs[i] runs (None when the walk back crosses a branch)"""
    need = depth + 1
    for j in range(i - 1, -1, -1):
        ins = instrs[j]
        if "JUMP" in ins.opname or ins.opname in ("FOR_ITER", "SEND", "RETURN_VALUE"):
            return None
        try:
            eff = dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None,
                                   jump=False)
        except ValueError:
            return None
        need -= eff
        if need <= 0:
            return ins
        if ins.is_jump_target:
            return None
    return None


def _base_of(instrs, j):
    """follows a chain of attribute loads back to the load of its base object:
    (base instruction, [attribute names]) or (None, None)"""
    names = []
    while j is not None and j >= 0 and instrs[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
        names.append(instrs[j].argval)
        j -= 1
    if j is None or j < 0:
        return None, None
    return instrs[j], names[::-1]


def _resolve(v, names):
    for n in names:
        try:
            v = getattr(v, n)
        except Exception:  # noqa: BLE001 - an attribute the scan cannot read
            return _UNKNOWN
    return v


def _local(ins):
    return ins.opname.startswith("LOAD_FAST")


def _scan(fn, code, params, first):
    instrs = list(dis.get_instructions(code))
    index = {id(ins): k for k, ins in enumerate(instrs)}
    for k, ins in enumerate(instrs):
        op = ins.opname
        line = ins.positions.lineno if ins.positions and ins.positions.lineno else code.co_firstlineno
        where = f"{code.co_name} ({code.co_filename}:{line})"
        if op in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            return f"{where} stores the global {ins.argval!r}"
        if op in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_freevars:
            return f"{where} stores the enclosing function's variable {ins.argval!r}"
        if op in ("STORE_ATTR", "DELETE_ATTR"):
            tgt = _pusher(instrs, k, 0)
            if tgt is None:
                return f"{where} sets the attribute {ins.argval!r} of an object it did not make"
            base, _ = _base_of(instrs, index[id(tgt)])
            if base is None:
                return f"{where} sets the attribute {ins.argval!r} of an object it did not make"
            if _local(base) and (base.argval == first or base.argval not in params):
                continue      # ctx, or an object made inside
            return f"{where} sets the attribute {ins.argval!r} of {base.argval!r}"
        if op in ("STORE_SUBSCR", "DELETE_SUBSCR"):
            tgt = _pusher(instrs, k, 1)
            if tgt is None:
                continue      # a write whose target is an expression: a tensor's, traced
            base, names = _base_of(instrs, index[id(tgt)])
            if base is None:
                continue
            out, v = _outside_value(base, fn, code)
            if out and _plain_object(_resolve(v, names)):
                return f"{where} writes an item of {base.argval!r}"
            continue
        if op in ("LOAD_METHOD", "LOAD_ATTR") and ins.argval in _MUTATORS:
            base, names = _base_of(instrs, k - 1)
            if base is None:
                continue
            out, v = _outside_value(base, fn, code)
            if out and _plain_object(_resolve(v, names)):
                return f"{where} calls {'.'.join([base.argval] + names + [ins.argval])}()"
            continue
        if op == "LOAD_GLOBAL" and ins.argval == "print":
            out, v = _outside_value(ins, fn, code)
            if v is builtins.print:
                return f"{where} calls print()"
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            # a function or comprehension defined inside: its own locals
            r = _scan(fn, c, set(c.co_varnames[:c.co_argcount + c.co_kwonlyargcount]), None)
            if r:
                return r
    return None


def _own(code, raw, has_ctx):
    """the side effect in the function's own code (and the code defined inside it)"""
    key = (code, id(getattr(raw, "__globals__", None)), has_ctx)
    if key not in _cache:
        nparams = code.co_argcount + code.co_kwonlyargcount + \
            bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        params = set(code.co_varnames[:nparams])
        first = code.co_varnames[0] if code.co_argcount and has_ctx else None
        try:
            _cache[key] = _scan(raw, code, params, first)
        except Exception:  # noqa: BLE001 - bytecode the scan does not know: assume clean
            _cache[key] = None
    return _cache[key]


def _reference_sites(code):
    """[(load instruction, [attribute names])]: each load of a global or closure variable
    with the attribute chain read from it (`helper`, `utils.helper`), in code and the
    code defined inside it (those: globals only, their closure cells are not code's)"""
    key = ("sites", code)
    if key not in _cache:
        sites = []

        def walk(c, top):
            instrs = list(dis.get_instructions(c))
            for k, ins in enumerate(instrs):
                if ins.opname not in _OUTSIDE or (not top and ins.opname != "LOAD_GLOBAL"):
                    continue
                names = []
                j = k + 1
                while j < len(instrs) and instrs[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                    names.append(instrs[j].argval)
                    j += 1
                sites.append((ins, names))
            for sub in c.co_consts:
                if isinstance(sub, types.CodeType):
                    walk(sub, False)
        walk(code, True)
        _cache[key] = sites
    return _cache[key]


def _user_function(v):
    """v is a plain Python function outside the libraries (one the scans follow)"""
    if not isinstance(v, types.FunctionType):
        return False
    mod = getattr(v, "__module__", "") or ""
    return not mod.split(".")[0] in _LIBRARIES


def _callees(fn, code):
    """[(path, function)]: the user functions code reaches through a global or closure
    variable and attributes of it; path is the chain to it from fn's globals,
    (("g", name), ("a", attr), ...), or None when it starts at a closure cell"""
    out = []
    for ins, names in _reference_sites(code):
        out_, v = _outside_value(ins, fn, code)
        if not out_ or v is _UNKNOWN:
            continue
        path = (("g", ins.argval),) if ins.opname == "LOAD_GLOBAL" else None
        for step in [None] + names:
            if step is not None:
                v = _resolve(v, [step])
                if v is _UNKNOWN:
                    break
                path = path + (("a", step),) if path is not None else None
            if _user_function(v):
                out.append((path, v))
    return out


def _check(fn, has_ctx, depth=0, seen=None):
    code, raw = _code_of(fn)
    if code is None:
        return None
    r = _own(code, raw, has_ctx)
    if r or depth >= _MAX_DEPTH:
        return r
    seen = set() if seen is None else seen
    seen.add(code)
    for _, g in _callees(raw, code):
        gcode, _ = _code_of(g)
        if gcode is None or gcode in seen:
            continue
        r = _check(g, False, depth + 1, seen)
        if r:
            return f"{r}, reached from {code.co_name} ({code.co_filename}:{code.co_firstlineno})"
    return None


def _methods(cls):
    """{name: function} of cls's forward, setup_context, backward and vjp that are not the
    base class's defaults"""
    fns = {}
    for name in ("forward", "setup_context", "backward", "vjp"):
        fn = None
        for base in cls.__mro__:
            if name in base.__dict__:
                fn = base.__dict__[name]
                break
        mod = getattr(getattr(fn, "__func__", fn), "__module__", "") or ""
        if fn is not None and not mod.startswith("symtrace.autograd"):
            fns[name] = fn
    return fns


def _constant(v, depth=0):
    if isinstance(v, (bool, int, float, complex, str, bytes, type(None))):
        return True
    return isinstance(v, tuple) and depth < 3 and all(_constant(x, depth + 1) for x in v)


def _global_names(code, acc):
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            acc.add(ins.argval)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _global_names(c, acc)
    return acc


def _globals_of(fn, path, out, depth, seen):
    """appends (path + (("g", name),), value) for the constants and tensors fn reads from
    its globals, then follows the helpers it reaches from its globals (the helper
    itself: its path, by identity)"""
    code, raw = _code_of(fn)
    g = getattr(raw, "__globals__", None)
    if code is None or g is None or code in seen:
        return
    seen.add(code)
    key = ("names", code)
    if key not in _cache:
        _cache[key] = sorted(_global_names(code, set()))
    for gname in _cache[key]:
        if gname in g and (_constant(g[gname]) or isinstance(g[gname], _C.TensorBase)):
            out.append((path + (("g", gname),), g[gname]))
    if depth >= _MAX_DEPTH:
        return
    for cpath, h in _callees(raw, code):
        # a helper reached through a closure cell has no path from the globals; one
        # reached through a wrapper (functools.wraps) is read, but its own globals
        # are not reached by the path
        if cpath is None or getattr(h, "__wrapped__", None) is not None:
            continue
        out.append((path + cpath, h))
        _globals_of(h, path + cpath, out, depth + 1, seen)


def globals_read(cls):
    """[(method name, path, value)] for the module globals holding plain constants or
    tensors that cls's forward/setup_context/backward and the helpers they call read, and
    for those helpers. path leads from cls.<method>: ("g", name) is .__globals__[name],
    ("a", name) the attribute name."""
    out = []
    for name, fn in _methods(cls).items():
        raw = _code_of(fn)[1]
        if getattr(cls, name, None) is not raw:
            continue     # (a wrapped method: cls.name.__globals__ is not raw's)
        found = []
        _globals_of(raw, (), found, 0, set())
        out.extend((name, path, v) for path, v in found)
    return out


def side_effect(cls):
    """The first Python side effect found in cls's forward, setup_context or backward
    (a sentence naming it), or None."""
    fns = _methods(cls)
    for name, fn in fns.items():
        # a forward without ctx (setup_context style) has no ctx to write into
        r = _check(fn, has_ctx=not (name == "forward" and "setup_context" in fns))
        if r:
            return r
    return None
