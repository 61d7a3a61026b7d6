"""symtrace.config: run-time mirror of the SYMTRACE_* fusion knobs
(DESIGN.md "Knobs"). Reading gives the current value (the environment's at
start-up); assigning changes it for graphs lowered from then on:

    symtrace.config.fusion = 0          # SYMTRACE_FUSION=0: one kernel per primitive
    symtrace.config.fuse_reductions = 0
    symtrace.config.fuse_matmul_epilogue = 0
    symtrace.config.max_fused_ops = 4   # 0: no limit

and of the frontend's knobs (symtrace.compile):

    symtrace.config.log = 1             # SYMTRACE_LOG: 1 breaks, 2 + graphs and guards
    symtrace.config.strict = 1          # SYMTRACE_STRICT: a graph break raises
    symtrace.config.cache_limit = 8     # SYMTRACE_CACHE_LIMIT: entries per code object
    symtrace.config.partial = 0         # SYMTRACE_PARTIAL=0: a graph break makes the whole
                                        # frame plain Python (no partial graph, no resume)
"""
import sys
import types

from . import _C

_KNOBS = ("fusion", "fuse_reductions", "fuse_matmul_epilogue", "max_fused_ops")
# frontend knobs: SYMTRACE_LOG (0..3), SYMTRACE_STRICT (0/1), SYMTRACE_CACHE_LIMIT,
# SYMTRACE_PARTIAL (0/1)
_FE_KNOBS = ("log", "strict", "cache_limit", "partial")


class _Config(types.ModuleType):
    def __getattr__(self, name):
        if name in _KNOBS:
            return _C._fuse_config(name)
        if name in _FE_KNOBS:
            return _C._fe_config(name)
        raise AttributeError(f"symtrace.config has no option '{name}' "
                             f"(options: {', '.join(_KNOBS + _FE_KNOBS)})")

    def __setattr__(self, name, value):
        if name in _KNOBS:
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, int):
                raise TypeError(f"symtrace.config.{name} takes an int, got {type(value).__name__}")
            _C._fuse_config(name, value)
        elif name in _FE_KNOBS:
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, int):
                raise TypeError(f"symtrace.config.{name} takes an int, got {type(value).__name__}")
            _C._fe_config(name, value)
        else:
            super().__setattr__(name, value)

    def as_dict(self):
        return _C._fuse_config()

    def __dir__(self):
        return list(_KNOBS) + list(_FE_KNOBS) + ["as_dict", "options"]

    class options:
        """with symtrace.config.options(fusion=0): ... restores the previous values."""

        def __init__(self, **kw):
            self.kw = kw

        def __enter__(self):
            cfg = sys.modules[__name__]
            self.prev = {k: getattr(cfg, k) for k in self.kw}
            for k, v in self.kw.items():
                setattr(cfg, k, v)
            return cfg

        def __exit__(self, *exc):
            cfg = sys.modules[__name__]
            for k, v in self.prev.items():
                setattr(cfg, k, v)
            return False


sys.modules[__name__].__class__ = _Config
