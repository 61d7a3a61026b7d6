#!/usr/bin/env python
"""scripts/fuzz_guards.py - a differential fuzzer for the frontend's guards: Python state
that changes between compiled calls.

A seed draws a small program: 1-4 *fragments*, each a piece of Python state (a number,
-0.0/nan, a string, None, an enum member, a dtype, a list/tuple/dict/OrderedDict/
defaultdict/set/frozenset/dict view/range/nested container, a plain object, a __slots__
object, a property, a class attribute, a dataclass, a namedtuple, an nn.Module with
attributes/buffers/submodules, an nn.ModuleList/ModuleDict) reached by the function as a
global, an argument, a closure cell, an attribute of a plain object or of an nn.Module, or
an item of a dict, and 1-3 *uses*
of it (attribute/item reads, .get/getattr/hasattr with defaults, len, `in`, iteration,
isinstance/type checks, branches, ints feeding shapes, scalars feeding tensor ops, Python
values returned, some writes back into the state). Between calls the driver applies
random *mutations* (change a value, add/remove a key, reorder, replace the object,
mutate in place, swap the type, delete an attribute, rebind a global, put another
fragment kind's value in place, delete the reference the function reads). The tensor
argument's size varies between calls.

The same program runs eagerly and under symtrace.compile(fn, backend=B, dynamic=D) for
B in interp, llvm and D in None, True, each in a fresh namespace built from the same
source. Compared after every call: the exception type (eager raises: compiled must
raise the same type), the returned tensor's dtype, shape and values, the returned
Python values, and the state afterwards (a canonical dump of every fragment). Kinds of
finding: raise (the compiled call raised where eager did not, or did not where eager
did), meta, value, py, state.

  scripts/fuzz_guards.py --seeds 500 [--start 0] [--minimize] [--show]
  scripts/fuzz_guards.py --seed 17 --minimize --show
  scripts/fuzz_guards.py --supervise --seeds 5000     # child processes; survives crashes

The library part (generate, run_program, check) is what tests/python/
test_guard_fuzz_found.py's smoke run imports."""
import argparse
import collections
import enum
import math
import os
import random
import re
import subprocess
import sys
import time
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import symtrace as st  # noqa: E402

CONFIGS = (("interp", None), ("interp", True), ("llvm", None), ("llvm", True))
NCALLS = 5

# Classes, enums and helpers every program's namespace starts with.
PRELUDE = '''
import collections, dataclasses, enum, math
import symtrace as st

class Mode(enum.Enum):
    A = 1
    B = 2
    C = 3

class P:
    kls = 1.5
    def __init__(self, **kw):
        self.__dict__.update(kw)

class P2:
    kls = -2.0
    def __init__(self, **kw):
        self.__dict__.update(kw)

class Sl:
    __slots__ = ("a", "b")
    def __init__(self, a):
        self.a = a

class Pr:
    def __init__(self, v):
        self._v = v
    @property
    def v(self):
        return self._v * 2

@dataclasses.dataclass
class DC:
    a: float = 1.0
    n: int = 2
    tag: str = "x"

NT = collections.namedtuple("NT", "a n")

class Scale(st.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.w = st.nn.Parameter(st.full((1,), float(c)))
    def forward(self, x):
        return x * self.w + self.c

class Net(st.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.scale = c
        self.act = "relu"
        self.register_buffer("buf", st.full((3,), float(c)))
        self.sub = Scale(c)
    def forward(self, x):
        return self.sub(x) + self.buf

holder = P()
mholder = st.nn.Module()
dholder = {}
'''

# ---------------------------------------------------------------- fragments
# A fragment kind: (name, init expressions, uses, mutations). `V` in a use is how the
# function reaches the state; `S` in a mutation is the global that holds it (the sync
# step then copies a rebound S into the cell / holder attribute). A use appends to `py`
# (returned Python values) or updates `acc` (the returned tensor, shape (3,)).
K = {}


def kind(name, inits, uses, muts):
    K[name] = (inits, uses, muts)


NUMS = ["0", "1", "2", "3", "-1", "2.5", "-0.0", "0.0", "float('nan')", "float('inf')",
        "True", "False", "7"]
kind("num", NUMS,
     ["acc = acc + V", "acc = acc * V", "py.append(V)",
      "if V > 1:\n    acc = acc + 1\nelse:\n    acc = acc - 1",
      "py.append(math.copysign(1.0, V))", "acc = acc + math.copysign(1.0, V)",
      "if V == V:\n    py.append('eq')", "py.append(type(V).__name__)",
      "acc = acc + st.ones(int(abs(V)) % 5 + 1 if V == V and abs(V) < 1e9 else 1).sum()",
      "py.append(isinstance(V, bool))", "py.append(V is True)",
      "acc = acc + st.full((2,), V).sum()", "py.append(str(V))",
      "acc = st.where(acc > V, acc, acc * 2)"],
     ["S = " + n for n in NUMS])
STRS = ["'relu'", "'gelu'", "''", "'ab'"]
kind("str", STRS,
     ["acc = st.relu(acc - 2) if V == 'relu' else acc * 3", "py.append(V + '!')",
      "acc = acc + len(V)", "py.append('a' in V)", "py.append(V.upper())",
      "acc = acc + {'relu': 1, 'gelu': 2}.get(V, 5)"],
     ["S = " + s for s in STRS] + ["S = None", "S = 3"])
kind("opt", ["None", "1.5", "0", "st.ones(3)"],
     ["if V is None:\n    acc = acc + 100\nelse:\n    acc = acc + V",
      "py.append(V is None)", "acc = acc * (2 if V else 3)",
      "if V is not None and not isinstance(V, st.Tensor):\n    py.append(V)"],
     ["S = None", "S = 2.0", "S = 0", "S = st.full((3,), 4.0)", "S = st.ones(1)"])
ENUMS = ["Mode.A", "Mode.B", "Mode.C"]
kind("enum", ENUMS,
     ["if V is Mode.A:\n    acc = acc + 1\nelif V == Mode.B:\n    acc = acc * 2",
      "acc = acc + V.value", "py.append(V.name)", "py.append(V in (Mode.A, Mode.C))",
      "acc = acc + {Mode.A: 1.0, Mode.B: 2.0, Mode.C: 3.0}[V]",
      "py.append(isinstance(V, Mode))"],
     ["S = " + e for e in ENUMS] + ["S = 1"])
DTYPES = ["st.float32", "st.float64", "st.int64", "st.int32", "st.bool"]
kind("dtype", DTYPES,
     ["acc = acc.to(V).float()", "py.append(str(V))",
      "acc = acc + st.ones(3, dtype=V).float()", "py.append(V == st.float64)",
      "py.append(V.is_floating_point)",
      "if V in (st.float32, st.float64):\n    acc = acc * 2"],
     ["S = " + d for d in DTYPES])
kind("device", ["st.device('cpu')", "'cpu'"],
     ["acc = acc.to(V)", "py.append(str(V))", "acc = st.ones(3, device=V) + acc"],
     ["S = st.device('cpu')", "S = 'cpu'"])
SEQ_USES = ["py.append(len(V))", "for e in V:\n    acc = acc + e", "py.append(3 in V)",
            "acc = acc + V[0]", "acc = acc * V[-1]", "py.append(sum(V))",
            "acc = acc + st.ones(len(V)).sum()", "py.append(list(V[1:]))",
            "if isinstance(V, list):\n    acc = acc + 1\nelif isinstance(V, tuple):\n    acc = acc + 2",
            "py.append(type(V) is list)", "acc = acc + st.tensor(list(V)).sum()",
            "if len(V) > 2:\n    acc = acc * V[2]",
            "py.append(V.index(V[0]))", "py.append(V.count(2))"]
kind("list", ["[1, 2, 3]", "[2.5]", "[1, 2, 3, 4]", "[0.5, -0.0]"],
     SEQ_USES + ["V.append(len(V))", "if len(V) > 3:\n    V.pop()", "V[0] = V[0] + 1"],
     ["S.append(3)", "S.pop()", "S[0] = 7", "S.reverse()", "S.sort()", "S.clear()",
      "S.insert(0, 2)", "S = tuple(S)", "S = [1, 2, 3]", "S[:] = [4, 5]",
      "S.extend([2, 2])", "S = list(S)"])
kind("tuple", ["(1, 2, 3)", "(2.5,)", "(1, 2.0, True)", "(4, 5)"],
     SEQ_USES + ["a_, *b_ = V\npy.append(a_)"],
     ["S = (1, 2)", "S = (3, 2, 1)", "S = S + (2,)", "S = S[1:] or (1,)", "S = list(S)",
      "S = (0.5, float('nan'))", "S = NT(1, 2)"])
DICT_USES = ["acc = acc + V['a']", "acc = acc + V.get('c', 0.5)", "py.append('c' in V)",
             "for k in V:\n    py.append(k)", "for k, v in V.items():\n    acc = acc + v",
             "py.append(len(V))", "py.append(list(V.values()))", "py.append(list(V.keys()))",
             "acc = acc + sum(V.values())", "py.append(V.get('b'))",
             "if 'b' in V:\n    acc = acc * V['b']", "py.append(type(V).__name__)",
             "py.append(isinstance(V, collections.OrderedDict))",
             "acc = acc + st.ones(len(V)).sum()", "py.append(next(iter(V)))",
             "py.append(dict(V))", "py.append(sorted(V.items()))"]
DICT_MUTS = ["S['a'] = 5.0", "S['c'] = 2.0", "S.pop('b', None)", "S.pop('c', None)",
             "S['b'] = S.pop('a', 1.0)", "S.update(a=1.0)", "S.clear(); S['a'] = 3.0",
             "v_ = S.pop('a', 1.0); S['a'] = v_", "S = dict(S)", "S = collections.OrderedDict(S)",
             "S = {'a': 1.0, 'b': 2.0}", "S = collections.defaultdict(float, S)",
             "S['a'] = -0.0", "S['b'] = float('nan')", "S['a'] = 1"]
DICT_INITS = ["{'a': 1.0, 'b': 2.0}", "{'a': 3.0}", "{'b': 2.0, 'a': 1.0, 'd': 4.0}"]
kind("dict", DICT_INITS, DICT_USES + ["V['n'] = V.get('n', 0) + 1", "V.pop('d', None)"],
     DICT_MUTS)
kind("odict", ["collections.OrderedDict(" + d + ")" for d in DICT_INITS], DICT_USES,
     DICT_MUTS + ["S.move_to_end('a')", "S.move_to_end('a', last=False)",
                  "S.popitem(last=False) if len(S) > 1 else None"])
kind("ddict", ["collections.defaultdict(float, " + d + ")" for d in DICT_INITS],
     DICT_USES + ["acc = acc + V['zz']", "V['m'] += 1"],
     DICT_MUTS + ["S.default_factory = int", "S.default_factory = None",
                  "S.default_factory = lambda: 2.0"])
SET_USES = ["py.append(2 in V)", "py.append(len(V))", "py.append(sorted(V))",
            "for e in sorted(V):\n    acc = acc + e", "acc = acc + sum(V)",
            "py.append(type(V).__name__)", "if 3 in V:\n    acc = acc * 2",
            "py.append(V == {1, 2})", "py.append(V <= {1, 2, 3})"]
kind("set", ["{1, 2}", "{3}", "set()", "{1, 2, 3}"], SET_USES + ["V.add(9)"],
     ["S.add(3)", "S.discard(3)", "S.add(2)", "S.discard(1)", "S = frozenset(S)", "S = {5}",
      "S.clear()", "S = set(S)"])
kind("fset", ["frozenset({1, 2})", "frozenset()", "frozenset({3, 4})"], SET_USES,
     ["S = frozenset({1, 2})", "S = S | {3}", "S = S - {1}", "S = set(S)", "S = frozenset()"])
kind("view", ["{'a': 1.0, 'b': 2.0}.keys()", "{'a': 1.0, 'b': 2.0}.values()",
              "{'a': 1.0, 'b': 2.0}.items()"],
     ["py.append(len(V))", "py.append(list(V))", "py.append('a' in V)",
      "for e in V:\n    acc = acc + (e[1] if isinstance(e, tuple) else (e if isinstance(e, float) else 1))",
      "py.append(type(V).__name__)"],
     ["S.mapping.__class__  # read", "S = {'a': 5.0}.keys()", "S = {'c': 2.0, 'a': 1.0}.items()",
      "S = {'z': 7.0}.values()"])
kind("range", ["range(3)", "range(1, 4)", "range(0, 6, 2)", "range(0)"],
     ["for i in V:\n    acc = acc + i", "py.append(len(V))", "py.append(2 in V)",
      "acc = acc + st.arange(len(V) + 1).sum()", "py.append(list(V))",
      "if len(V):\n    acc = acc + V[-1]"],
     ["S = range(3)", "S = range(2, 5)", "S = range(5, 0, -1)", "S = range(1)",
      "S = [0, 1, 2]"])
kind("nested", ["{'a': [1, 2], 'b': {'c': 3.0}}", "{'a': (1,), 'b': {'c': 1.0, 'd': 2.0}}"],
     ["acc = acc + V['a'][0]", "py.append(len(V['b']))", "acc = acc + V['b']['c']",
      "py.append(V['b'].get('d', -1.0))", "for e in V['a']:\n    acc = acc + e",
      "V['a'] = list(V['a']) + [0]"],
     ["S['a'].append(4) if isinstance(S['a'], list) else None", "S['b']['c'] = 5.0",
      "S['b']['d'] = 6.0", "S['b'].pop('c', None)", "S['a'] = (9,)", "S['b'] = {'c': -0.0}",
      "S = {'a': [2], 'b': {'c': 2.0}}"])
OBJ_USES = ["acc = acc + V.k", "acc = acc + getattr(V, 'z', 0.5)", "py.append(hasattr(V, 'z'))",
            "if V.flag:\n    acc = acc * 2", "acc = acc + V.kls", "py.append(type(V).__name__)",
            "py.append(isinstance(V, P))", "py.append(getattr(V, 'name', 'none'))",
            "acc = acc + st.ones(V.n).sum()", "V.count = getattr(V, 'count', 0) + 1"]
kind("obj", ["P(k=1.0, flag=True, n=2)", "P(k=2.0, flag=False, n=1, z=3.0)"], OBJ_USES,
     ["S.k = 4.0", "S.z = 1.0", "del S.z" , "S.flag = not S.flag", "S.n = 3",
      "S.kls = 9.0", "del S.kls", "P.kls = 4.5", "S = P2(**vars(S))", "S.__class__ = P2",
      "S = P(k=1.0, flag=True, n=2)", "S.name = 'nm'", "del S.k",
      "S.__dict__['k'] = 8.0", "S.__dict__.pop('z', None)", "S.k = 2"])
kind("slots", ["Sl(1.0)", "Sl(2.5)"],
     ["acc = acc + V.a", "acc = acc + getattr(V, 'b', 0.25)", "py.append(hasattr(V, 'b'))",
      "py.append(V.a)", "V.b = 1.0"],
     ["S.a = 3.0", "S.b = 1.0", "del S.b", "S = Sl(5.0)", "del S.a", "S.a = 2"])
kind("prop", ["Pr(1.0)", "Pr(2)"],
     ["acc = acc + V.v", "py.append(V.v)", "py.append(V._v)"],
     ["S._v = 3.0", "S = Pr(0.5)", "S._v = -0.0", "Pr.v = property(lambda self: 11.0)",
      "S.__dict__['_v'] = 7"])
kind("dc", ["DC()", "DC(a=2.0, n=3, tag='y')"],
     ["acc = acc + V.a", "acc = acc + st.ones(V.n).sum()", "py.append(V.tag)",
      "py.append(dataclasses.astuple(V))", "if V.tag == 'x':\n    acc = acc * 2",
      "py.append(V == DC())"],
     ["S.a = 5.0", "S.n = 1", "S.tag = 'y'", "S = DC(a=-1.0)", "S = dataclasses.replace(S, n=4)"])
kind("nt", ["NT(1.0, 2)", "NT(2.0, 1)"],
     ["acc = acc + V.a", "acc = acc + V[0] * V.n", "py.append(len(V))",
      "a_, n_ = V\nacc = acc + st.ones(n_).sum()", "py.append(V._asdict())",
      "py.append(isinstance(V, tuple))"],
     ["S = S._replace(a=3.0)", "S = NT(1.0, 3)", "S = (1.0, 2)", "S = NT(-0.0, 1)"])
kind("module", ["Net(2.0)", "Net(1.0)"],
     ["acc = V(acc)", "acc = acc * V.scale", "acc = acc + V.buf",
      "if V.act == 'relu':\n    acc = st.relu(acc - 3)", "py.append(V.training)",
      "if V.training:\n    acc = acc + 1", "acc = V.sub(acc)", "py.append(hasattr(V, 'extra'))",
      "acc = acc + getattr(V, 'extra', 0.5)", "py.append(len(list(V.parameters())))",
      "acc = acc + V.sub.c", "py.append(V.scale)"],
     ["S.scale = 3.0", "S.act = 'gelu'", "S.buf = st.full((3,), 5.0)", "S.buf.add_(1)",
      "S.eval()", "S.train()", "S.sub = Scale(4.0)", "S.sub.c = -1.0", "S.extra = 1.0",
      "del S.extra", "S.register_buffer('buf', st.zeros(3))", "S = Net(3.0)",
      "S.sub.w.data.fill_(2.0)", "S.scale = 2", "S.sub = st.nn.Identity()",
      "S.sub.register_forward_hook(lambda m, i, o: o * 10)",
      "with st.no_grad():\n    S.sub.w.mul_(3)"])
kind("mlist", ["st.nn.ModuleList([Scale(1.0), Scale(2.0)])", "st.nn.ModuleList([Scale(3.0)])"],
     ["for m_ in V:\n    acc = m_(acc)", "py.append(len(V))", "acc = V[0](acc)",
      "acc = V[-1](acc)", "acc = acc + st.ones(len(V)).sum()"],
     ["S.append(Scale(0.5))", "S[0] = Scale(5.0)", "del S[0]", "S.insert(0, Scale(-1.0))",
      "S = st.nn.ModuleList([Scale(2.0)])", "S[0].c = 9.0", "S.extend([Scale(1.5)])"])
kind("mdict", ["st.nn.ModuleDict({'a': Scale(1.0), 'b': Scale(2.0)})"],
     ["for k in V:\n    acc = V[k](acc)", "py.append(list(V.keys()))", "py.append('c' in V)",
      "acc = V['a'](acc)", "for k, m_ in V.items():\n    acc = m_(acc)", "py.append(len(V))"],
     ["S['c'] = Scale(3.0)", "del S['b']", "S['a'] = Scale(7.0)", "S.pop('b', None)",
      "S = st.nn.ModuleDict({'b': Scale(1.0)})", "S.update({'d': Scale(0.5)})"])
kind("tensor", ["st.ones(3)", "st.arange(3.0)", "st.full((1,), 2.0)"],
     ["acc = acc + V", "py.append(V.shape[0])", "acc = acc * V.sum()", "V.add_(1)",
      "py.append(V.dtype)", "acc = acc + st.ones(V.shape[0]).sum()",
      "if V.sum() > 3:\n    acc = acc + 1"],
     ["S = st.zeros(3)", "S = st.ones(2)", "S.mul_(2)", "S = S.double()", "S = st.ones(3, 1)",
      "S = S.t() if S.dim() == 2 else S", "S = st.arange(4.0)[::2]", "S.requires_grad_(False)"])
# identity: a list made in the function, appended to an outside list and returned; an
# object stored as an attribute and returned; the same dict returned twice; returned
# values read back out of the state on later calls (ident_sig compares which state path
# each returned mutable value is). Drawn by generate() from a stream of their own.
IDENT_KINDS = ("ilist", "iobj")
kind("ilist", ["[]", "[[0]]", "[{'k': 1}]"],
     ["l_ = [len(V)]\nV.append(l_)\npy.append(l_)", "py.append(V)",
      "py.append(V[-1] if V else None)", "d_ = {'n': len(V)}\npy.append(d_)\npy.append(d_)",
      "if V:\n    py.append(V[0])", "py.append(len(V))",
      "d_ = {'in': V}\nV.append(d_)\npy.append(d_)\npy.append(d_['in'])"],
     ["S.append([7])", "S.clear()", "S = []", "S.pop() if S else None",
      "S.insert(0, {'k': 1})", "S.reverse()", "S[:] = S[-1:]"])
kind("iobj", ["P(k=1.0)", "P(k=2.0, child=P(k=0.5))"],
     ["o_ = P(k=float(len(py)))\nV.child = o_\npy.append(o_)",
      "py.append(getattr(V, 'child', None))", "py.append(V)",
      "V.last = py[-1] if py else None\npy.append(V.last)",
      "acc = acc + getattr(getattr(V, 'child', None), 'k', 0.0)",
      "l_ = [V]\nV.seen = l_\npy.append(l_)\npy.append(V.seen)"],
     ["S.child = P(k=3.0)", "S.__dict__.pop('child', None)", "S = P(k=2.0)",
      "S.child = S", "S.last = None", "S.seen = []"])
# tensor-dependent branches: graph breaks, so the state reaches resume functions too
BREAKS = ["if acc.sum() > 5:\n    acc = acc + 1\nelse:\n    acc = acc - 1", "py.append(float(acc.sum()))"]
ACCESS = ("global", "arg", "closure", "holder", "module", "item")


class Frag:
    def __init__(self, i, kname, init, access, uses):
        self.i, self.kname, self.init, self.access, self.uses = i, kname, init, access, uses

    @property
    def g(self):
        return f"g{self.i}"

    def ref(self):
        return {"global": self.g, "arg": f"a{self.i}", "closure": f"c{self.i}",
                "holder": f"holder.f{self.i}", "module": f"mholder.f{self.i}",
                "item": f"dholder['f{self.i}']"}[self.access]

    def unref(self):
        """deletes what the function reads (the next mutation puts it back)"""
        return {"global": f"del {self.g}", "arg": f"{self.g} = None", "closure": f"_set{self.i}(None)",
                "holder": f"del holder.f{self.i}", "module": f"delattr(mholder, 'f{self.i}')",
                "item": f"del dholder['f{self.i}']"}[self.access]

    def sync(self):
        if self.access == "closure":
            return f"_set{self.i}({self.g})" if True else ""
        if self.access == "holder":
            return f"if getattr(holder, 'f{self.i}', None) is not {self.g}: holder.f{self.i} = {self.g}"
        if self.access == "module":
            return f"if getattr(mholder, 'f{self.i}', None) is not {self.g}: setattr(mholder, 'f{self.i}', {self.g})"
        if self.access == "item":
            return f"if dholder.get('f{self.i}') is not {self.g}: dholder['f{self.i}'] = {self.g}"
        return ""


class Program:
    """frags, the function's body lines (by fragment: (frag index or -1, use text)), the
    mutation schedule (per step: a list of (frag index, mutation text)), the input sizes
    per call and the configurations to compare."""

    def __init__(self, frags, body, steps, sizes, configs):
        self.frags, self.body, self.steps, self.sizes, self.configs = frags, body, steps, sizes, configs

    def copy(self):
        return Program(list(self.frags), list(self.body), [list(s) for s in self.steps],
                       list(self.sizes), list(self.configs))

    def source(self):
        """(setup source, the source that defines fn, the call expression, the sync code)"""
        fr = [f for f in self.frags if f is not None]
        setup = PRELUDE + "".join(f"{f.g} = {f.init}\n" for f in fr)
        args = ["x"] + [f"a{f.i}" for f in fr if f.access == "arg"]
        lines = ["acc = st.zeros(3) + x.sum() / x.shape[0]", "py = []"]
        for fi, u in self.body:
            if fi >= 0 and self.frags[fi] is None:
                continue
            lines += (re.sub(r"\bV\b", self.frags[fi].ref(), u) if fi >= 0 else u).split("\n")
        lines.append("return acc, tuple(py)")
        body = "".join("        " + ln + "\n" for ln in lines)
        cells = [f for f in fr if f.access == "closure"]
        src = "def _mk():\n"
        for f in cells:
            src += f"    c{f.i} = {f.g}\n"
            src += f"    def _set{f.i}(v):\n        nonlocal c{f.i}\n        c{f.i} = v\n"
        src += f"    def fn({', '.join(args)}):\n" + body
        src += "    return fn, {" + ", ".join(f"'_set{f.i}': _set{f.i}" for f in cells) + "}\n"
        src += "fn, _setters = _mk()\nglobals().update(_setters)\n"
        for f in fr:
            if f.access in ("holder", "module", "item"):
                src += f.sync() + "\n"
        call = "fn(st.arange(float(n_)) + 1, " + \
            "".join(f"{f.g}, " for f in fr if f.access == "arg") + ")"
        return setup, src, call

    def text(self):
        setup, src, call = self.source()
        out = ["# ---- setup (PRELUDE omitted)"]
        out += [ln for ln in setup[len(PRELUDE):].splitlines()]
        out += ["# ---- function", src.rstrip()]
        for k, step in enumerate(self.steps):
            out.append(f"# call {k}: n_ = {self.sizes[k]}; {call}")
            for fi, m in step:
                if self.frags[fi] is not None:
                    mut = self.frags[fi].unref() if m == "__del__" else re.sub(r"\bS\b", self.frags[fi].g, m)
                    out.append(f"#   then: {mut}; {self.frags[fi].sync()}")
        out.append(f"# configs: {self.configs}")
        return "\n".join(out)


def generate(seed, ncalls=NCALLS):
    rng = random.Random(seed)
    names = sorted(k for k in K if k not in IDENT_KINDS)
    nf = rng.randint(1, 4)
    frags, body = [], []
    for i in range(nf):
        kn = rng.choice(names)
        inits, uses, _ = K[kn]
        access = rng.choice(ACCESS)
        frags.append(Frag(i, kn, rng.choice(inits), access, None))
        for _ in range(rng.randint(1, 3)):
            body.append((i, rng.choice(uses)))
    if rng.random() < 0.25:
        body.insert(rng.randint(0, len(body)), (-1, rng.choice(BREAKS)))
    rng.shuffle(body)
    steps = []
    for _ in range(ncalls):
        step = []
        for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
            fi = rng.randrange(nf)
            r = rng.random()
            if r < 0.08:       # the way the function reaches it goes away
                step.append((fi, "__del__"))
            elif r < 0.2:      # another kind's value in its place
                step.append((fi, "S = " + rng.choice(K[rng.choice(names)][0])))
            else:
                step.append((fi, rng.choice(K[frags[fi].kname][2])))
        steps.append(step)
    sizes = [rng.choice((3, 3, 3, 4, 5, 1, 2)) for _ in range(ncalls)]
    _add_ident(random.Random("ident %d" % seed), frags, body, steps)
    return Program(frags, body, steps, sizes, list(CONFIGS))


def _add_ident(r, frags, body, steps):
    """For 40% of the seeds, one identity fragment (IDENT_KINDS) with its uses put among
    the body's and its mutations among the steps' (the rest of the program stays)."""
    if r.random() >= 0.4:
        return
    i = len(frags)
    kn = r.choice(IDENT_KINDS)
    inits, uses, muts = K[kn]
    frags.append(Frag(i, kn, r.choice(inits), r.choice(ACCESS), None))
    for _ in range(r.randint(1, 3)):
        body.insert(r.randint(0, len(body)), (i, r.choice(uses)))
    for step in steps:
        if r.random() < 0.4:
            step.append((i, r.choice(muts)))


# ---------------------------------------------------------------- running
def canon(x, depth=0, seen=None):
    """A comparable dump of a value: tensors by dtype/shape/values, objects by type and
    attributes, floats by bits (so -0.0 and nan compare as eager has them)."""
    if depth > 6:
        return "..."
    seen = seen if seen is not None else set()
    if isinstance(x, st.Tensor):
        return ("T", str(x.dtype), tuple(x.shape), [canon(v) for v in x.detach().flatten().tolist()])
    if isinstance(x, float):
        return ("f", "nan" if x != x else repr(x))
    if isinstance(x, str):       # the reprs of objects name their addresses
        return ("str", re.sub(r" at 0x[0-9a-f]+", " at 0x?", x))
    if isinstance(x, (bool, int, type(None), bytes)):
        return (type(x).__name__, x)
    if id(x) in seen:
        return ("cycle",)
    if isinstance(x, enum.Enum):
        return ("E", repr(x))
    seen = seen | {id(x)}
    tn = type(x).__name__
    if isinstance(x, st.nn.Module):
        d = {k: canon(v, depth + 1, seen) for k, v in sorted(vars(x).items())
             if not k.startswith("_") or k in ("_parameters", "_buffers", "_modules")}
        d["hooks"] = len(getattr(x, "_forward_hooks", {}))
        return ("M", tn, d)
    if isinstance(x, (dict, collections.OrderedDict)):
        extra = getattr(x, "default_factory", "-")
        extra = extra if extra in ("-", None) else getattr(extra, "__name__", "f")
        return ("D", tn, extra, [(canon(k, depth + 1, seen), canon(v, depth + 1, seen)) for k, v in x.items()])
    if isinstance(x, (set, frozenset)):
        return ("S", tn, sorted(repr(canon(v, depth + 1, seen)) for v in x))
    if isinstance(x, (list, tuple, range)) or type(x).__name__.startswith("dict_"):
        return ("L", tn, [canon(v, depth + 1, seen) for v in x])
    if isinstance(x, (st.dtype,)) or tn == "device":
        return ("dt", str(x))
    if hasattr(x, "__dict__") or hasattr(type(x), "__slots__"):
        attrs = dict(vars(x)) if hasattr(x, "__dict__") else {}
        for s in getattr(type(x), "__slots__", ()):
            if hasattr(x, s):
                attrs[s] = getattr(x, s)
        return ("O", tn, {k: canon(v, depth + 1, seen) for k, v in sorted(attrs.items())})
    return ("r", tn, repr(x))


def close(a, b):
    """canon dumps equal, floats to 1e-5 relative (fused kernels may round differently)"""
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == 2 and a[0] == "f" == b[0]:
        if a == b:
            return True
        try:
            x, y = float(a[1]), float(b[1])
        except ValueError:
            return False
        if math.isinf(x) or math.isinf(y):
            return x == y
        return abs(x - y) <= 1e-5 * max(1.0, abs(x), abs(y)) and math.copysign(1, x) == math.copysign(1, y)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(close(p, q) for p, q in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    return a == b


def _state(prog, ns):
    return [canon(ns.get(f.g, "<deleted>")) for f in prog.frags if f is not None] + \
        [canon(P_kls(ns))]


def P_kls(ns):
    return [ns["P"].kls, ns["P2"].kls, ns["Pr"].__dict__["v"].fget.__name__]


_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, range,
              enum.Enum, st.Tensor, st.dtype)


def _reach(objs, depth=2):
    """(path, object) of the state objects and of what they hold, `depth` levels down:
    list / tuple items, dict values, attributes of plain objects."""
    out, todo, seen = [], list(objs), set()
    while todo:
        path, o = todo.pop(0)
        out.append((path, o))
        if id(o) in seen or path.count("/") >= depth or \
                isinstance(o, (int, float, str, bytes, type(None), range, frozenset, st.Tensor)):
            continue
        seen.add(id(o))
        if isinstance(o, (list, tuple)):
            todo += [("%s/%d" % (path, k), v) for k, v in enumerate(o)]
        elif isinstance(o, dict):
            todo += [("%s/%r" % (path, k), v) for k, v in list(o.items())]
        elif type(o).__name__ in ("P", "P2"):
            todo += [("%s/.%s" % (path, k), v) for k, v in sorted(vars(o).items())]
    return out


def ident_sig(py, ns, prog):
    """Which mutable values returned are (by identity) the program's state objects, or
    held by them (list items, dict values, attributes: _reach), or earlier returned
    values: eager returns the object itself, never a copy."""
    objs = _reach([(f.g, ns.get(f.g)) for f in prog.frags if f is not None])
    sig = []
    for i, v in enumerate(py):
        if isinstance(v, _IMMUTABLE) or isinstance(v, (type, types.FunctionType, types.MethodType,
                                                       types.BuiltinFunctionType)):
            continue
        sig.append((i, [g for g, o in objs if o is v], [j for j in range(i) if py[j] is v]))
    return sig


def run_program(prog, config):
    """Runs prog's calls in a fresh namespace; config None: eagerly. A list of per-call
    records (exception type or (tensor dump, py dump), state dump)."""
    setup, src, call = prog.source()
    ns = {"__name__": "fuzz_guards_prog"}
    exec(compile(setup, "<setup>", "exec"), ns)
    exec(compile(src, "<fn>", "exec"), ns)
    if config is not None:
        be, dyn = config
        ns["fn"] = st.compile(ns["fn"], backend=be, dynamic=dyn)
    recs = []
    for k, step in enumerate(prog.steps):
        ns["n_"] = prog.sizes[k]
        try:
            acc, py = eval(call, ns)
            res = (canon(acc), canon(py), ident_sig(py, ns, prog))
        except Exception as e:  # noqa: BLE001 - eager's exceptions are part of the result
            res = ("raise", type(e).__name__, str(e)[:200])
        recs.append((res, _state(prog, ns)))
        for fi, m in step:
            f = prog.frags[fi]
            if f is None:
                continue
            code = f.unref() if m == "__del__" else re.sub(r"\bS\b", f.g, m)
            try:
                exec(compile(code, "<mut>", "exec"), ns)
            except Exception:  # noqa: BLE001 - a mutation that does not apply is skipped
                pass
            sy = f.sync()
            if sy and m != "__del__" and f.g in ns:
                try:
                    exec(sy, ns)
                except Exception:  # noqa: BLE001 - Module.__setattr__ refuses some
                    pass
    return recs


def classify(want, got):
    """the kind of the first difference between two records, or None"""
    (wr, ws), (gr, gs) = want, got
    if (wr[0] == "raise") != (gr[0] == "raise"):
        return "raise"
    if wr[0] == "raise":
        if wr[1] != gr[1]:
            return "raise"
    else:
        (wt, wp, wi), (gt, gp, gi) = wr, gr
        if wt[:3] != gt[:3]:
            return "meta"
        if not close(wt, gt):
            return "value"
        if not close(wp, gp):
            return "py"
        if wi != gi:
            return "identity"
    if not close(ws, gs):
        return "state"
    return None


def check(prog, configs=None):
    """[(config, call index, kind, want, got)] for every configuration that differs from
    eager (its first differing call)."""
    st.reset()
    st.manual_seed(0)
    want = run_program(prog, None)
    out = []
    for cfg in configs or prog.configs:
        st.reset()
        st.manual_seed(0)
        try:
            got = run_program(prog, cfg)
        except Exception:  # noqa: BLE001 - a failure outside fn (setup) is a finding too
            out.append((cfg, -1, "raise", None, traceback.format_exc(limit=3)))
            continue
        for k, (w, g) in enumerate(zip(want, got)):
            kd = classify(w, g)
            if kd:
                out.append((cfg, k, kd, w, g))
                break
    st.reset()
    return out


# ---------------------------------------------------------------- minimizing
def minimize(prog, kind_, cfg):
    """drops fragments, uses, mutations and calls while a finding of the same kind stays"""
    def bad(p):
        try:
            return any(f[2] == kind_ for f in check(p, [cfg]))
        except Exception:  # noqa: BLE001
            return False

    cur = prog.copy()
    cur.configs = [cfg]
    changed = True
    while changed:
        changed = False
        for i in range(len(cur.frags)):
            if cur.frags[i] is None:
                continue
            p = cur.copy()
            p.frags[i] = None
            p.body = [b for b in p.body if b[0] != i]
            p.steps = [[m for m in s if m[0] != i] for s in p.steps]
            if bad(p):
                cur, changed = p, True
        for j in range(len(cur.body) - 1, -1, -1):
            p = cur.copy()
            del p.body[j]
            if bad(p):
                cur, changed = p, True
        while len(cur.steps) > 1:
            p = cur.copy()
            p.steps.pop()
            p.sizes.pop()
            if not bad(p):
                break
            cur, changed = p, True
        for k in range(len(cur.steps)):
            for j in range(len(cur.steps[k]) - 1, -1, -1):
                p = cur.copy()
                del p.steps[k][j]
                if bad(p):
                    cur, changed = p, True
        for k in range(len(cur.sizes)):
            if cur.sizes[k] != 3:
                p = cur.copy()
                p.sizes[k] = 3
                if bad(p):
                    cur, changed = p, True
        for f in cur.frags:
            if f is not None and f.access != "global":
                p = cur.copy()
                p.frags[f.i] = Frag(f.i, f.kname, f.init, "global", None)
                if bad(p):
                    cur, changed = p, True
    return cur


# ---------------------------------------------------------------- driver
def _run(args):
    stats = collections.Counter()
    t0 = time.time()
    seeds = [args.seed] if args.seed is not None else range(args.start, args.start + args.seeds)
    for s in seeds:
        if args.progress:
            print(f"SEED {s}", flush=True)
        prog = generate(s)
        stats["programs"] += 1
        stats["calls"] += NCALLS * (1 + len(prog.configs))
        found = check(prog)
        for cfg, k, kd, w, g in found:
            stats["find_" + kd] += 1
            print(f"FINDING seed={s} kind={kd} config={cfg} call={k}", flush=True)
            if args.show:
                print(f"   eager:    {w}\n   compiled: {g}")
        if found and (args.show or args.minimize):
            cfg, _, kd = found[0][:3]
            p = minimize(prog, kd, cfg) if args.minimize else prog
            print(p.text())
            if args.minimize:
                for c2, k, kd2, w, g in check(p, [cfg]):
                    print(f"   minimized: kind={kd2} call={k}\n   eager:    {w}\n   compiled: {g}")
            print(flush=True)
        if args.time and time.time() - t0 > args.time:
            break
    print("STATS " + " ".join(f"{k}={v}" for k, v in sorted(stats.items())), flush=True)
    return 1 if any(k.startswith("find_") for k in stats) else 0


def _supervise(args):
    """runs the seeds in child processes, one after the crash of another; --time bounds
    the whole run"""
    s, end = args.start, args.start + args.seeds
    t0 = time.time()
    total = collections.Counter()
    while s < end:
        left = args.time - (time.time() - t0) if args.time else 0
        if args.time and left <= 0:
            break
        cmd = [sys.executable, os.path.abspath(__file__), "--start", str(s), "--seeds", str(end - s),
               "--progress"] + (["--show"] if args.show else []) + (["--time", str(left)] if left else [])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        last = s - 1
        for ln in p.stdout:
            ln = ln.rstrip("\n")
            if ln.startswith("SEED "):
                last = int(ln.split()[1])
            elif ln.startswith("STATS "):
                for kv in ln.split()[1:]:
                    k, v = kv.split("=")
                    total[k] += int(v)
            else:
                print(ln, flush=True)
        err = p.stderr.read()
        rc = p.wait()
        if rc not in (0, 1):
            print(f"FINDING seed={last} kind=crash rc={rc} {err[-300:]!r}", flush=True)
            total["find_crash"] += 1
            total["programs"] += last - s + 1
            s = last + 1
        else:
            s = end
    print("TOTAL " + " ".join(f"{k}={v}" for k, v in sorted(total.items())), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--minimize", action="store_true")
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--time", type=float, default=0, help="stop after this many seconds")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--supervise", action="store_true")
    args = ap.parse_args()
    if args.supervise:
        _supervise(args)
        return 0
    return _run(args)


if __name__ == "__main__":
    sys.exit(main())
