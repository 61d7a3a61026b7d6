"""break_corpus.py: functions with graph breaks, for symtrace.compile's
partial graphs (issue 7). Not a test file itself: test_compile_breaks.py
runs every entry compiled and eagerly and checks the counts.

Each entry is a Brk: name, fn (a plain function or a symtrace Module),
make_args(seed) -> compile_corpus.Args (fresh, deterministic per seed),
graphs (the expected explain(...).graph_count for one call with seed 0's
arguments, or None when not determined), breaks (the expected
graph_break_count, or None), kind (the feature it covers) and lines (the
lines of this file a break must be reported at: every line marked
`# BRK` inside fn's source and inside the sources of the functions named
in also=).

The expectations follow the semantics of partial graphs (TorchDynamo's
resume functions):
- a break at a top-level point of a frame (not inside a for/while body,
  not inside try/with) splits the frame: the ops before it are one graph,
  the breaking instruction runs in Python, the rest is a resume function
  translated when it first runs (its ops another graph); breaks chain;
- a jump on a tensor: one resume function per branch target, only the
  branch taken is translated;
- graph_count counts graphs with at least one op: a segment with no
  tensor op (a break at the very start, a resume that only returns) is no
  graph;
- a break inside a loop body makes the frame plain Python (0 graphs of its
  own); the user functions it calls are captured as their own frames;
- a break inside an inlined call of g makes the caller break at the call:
  caller prefix, g as its own (partial) frame, caller resume; each frame
  reports its own break.
Arguments whose values pick a branch are built so that seed 0 takes the
branch the counts assume (positive tensors where a sum must be > 0).

No torch here: the corpus runs under Python 3.12 too.
"""
import collections.abc
import functools
import inspect
import math
import operator
import os
import sys
import time
import zlib

import numpy as np

import symtrace
import symtrace.nn as nn
from compile_corpus import Args, I, P, R

BREAKS = []
MARK = "# BRK"
KINDS = ("jump", "data", "print", "cfunc", "instr", "loop", "inline", "multi", "live", "stack",
         "edge", "module")


class Brk:
    __slots__ = ("name", "fn", "_mk", "graphs", "breaks", "kind", "lines", "seed_base")

    def __init__(self, name, fn, mk, graphs, breaks, kind, also, seed_base):
        self.name, self.fn, self._mk = name, fn, mk
        self.graphs, self.breaks, self.kind = graphs, breaks, kind
        self.seed_base = zlib.crc32(name.encode())   # stable when entries are added
        self.lines = sorted(set(_marked_lines(_code_fn(fn))).union(
            *[_marked_lines(_code_fn(g)) for g in also]))

    def make_args(self, seed=0):
        rng = np.random.default_rng(100 * self.seed_base + seed)
        a = self._mk(rng)
        if isinstance(a, Args):
            return a
        return Args(*a) if isinstance(a, tuple) else Args(a)

    def __repr__(self):
        return f"Brk({self.name})"


def _code_fn(f):
    if isinstance(f, nn.Module):
        return type(f).forward
    return f


def _marked_lines(f):
    lines, first = inspect.getsourcelines(f)
    return [first + i for i, s in enumerate(lines) if s.rstrip().endswith(MARK)]


def brk(kind, mk, graphs=None, breaks=None, also=(), name=None):
    """Registers fn; graphs/breaks: the expected explain counts (None: not checked)."""
    assert kind in KINDS, kind

    def deco(fn):
        n = name or fn.__name__
        assert all(b.name != n for b in BREAKS), n
        BREAKS.append(Brk(n, fn, mk, graphs, breaks, kind, also, len(BREAKS) + 1))
        return fn
    return deco


def add_module(kind, name, mod, mk, graphs=None, breaks=None, also=()):
    assert all(b.name != name for b in BREAKS), name
    BREAKS.append(Brk(name, mod, mk, graphs, breaks, kind, also, len(BREAKS) + 1))


def call(b, a):
    """Runs entry b eagerly on Args a."""
    return b.fn(*a.args, **a.kwargs)


def kinds():
    out = {}
    for b in BREAKS:
        out.setdefault(b.kind, []).append(b.name)
    return out


# ---- argument makers (tiny tensors) ----
def X(rng):
    return (R(rng, 2, 3),)


def XP(rng):
    """A positive (2, 3) tensor: sums, means, mins are > 0."""
    return (P(rng, 2, 3),)


def XY(rng):
    return (R(rng, 2, 3), R(rng, 2, 3))


def XYP(rng):
    return (P(rng, 2, 3), P(rng, 2, 3))


def N(rng):
    """A small int64 tensor."""
    return (I(rng, 0, 5, 2, 3),)


# ---- helpers called by entries (captured as frames or inlined) ----
def _h(x):
    return x * 2 + 1


def _gp(x):
    y = x * 2
    print("_gp")  # BRK
    return y + 1


def _gi(x):
    s = x.sum().item()  # BRK
    return x * s


def _mid(x):
    u = x - 1
    v = _gp(u)  # BRK
    return v * 2


def _gk(x, *, scale=1.0, shift=0.0):
    y = x * scale
    print("_gk")  # BRK
    return y + shift


def _gj(x):
    if x.mean() > 0:  # BRK
        return x * 2
    return x * -2


def _gstart(x):
    print("_gstart")  # BRK
    return x * 2


def _gloop(x):
    for i in range(2):
        x = x + i
        print("_gloop", i)  # BRK
    return x


def _py_scale(v):
    return v * 2.0 + 1.0


def _pair(u, v):
    return u * v


def _sq(t):
    return t * t


def _kwf(t, *, scale, shift):
    return t * scale + shift


class _Helper:
    def __init__(self, k):
        self.k = k

    def scale(self, x):
        y = x * self.k
        s = y.sum().item()  # BRK
        return y - s

    @staticmethod
    def shifted(x):
        y = x + 2
        print("_Helper.shifted")  # BRK
        return y * y


_HELPER = _Helper(3.0)


class _Logger:
    """A user 'logger' whose info() prints (inlined, then breaks)."""
    def __init__(self, prefix):
        self.prefix = prefix

    def info(self, msg, *args):
        print(self.prefix, msg % args)  # BRK


_LOGGER = _Logger("[break_corpus]")


class _Box:
    def __init__(self, v):
        self.v = v


class _Obj:
    pass


symtrace.manual_seed(1234)
_LIN = nn.Linear(3, 3)
_GW = symtrace.tensor(np.array([0.5, -1.0, 2.0], dtype=np.float32))
_K = 4


# =====================================================================
# jumps on tensor truth
# =====================================================================
@brk("jump", XP, graphs=2, breaks=1)
def j_if_sum(x):
    y = x * 2
    if y.sum() > 0:  # BRK
        return y + 1
    return y - 1


@brk("jump", XP, graphs=2, breaks=1)
def j_if_else_assign(x):
    y = x + 1
    if y.mean() < 0:  # BRK
        z = y * 3
    else:
        z = y * 4
    return z.relu()


@brk("jump", XP, graphs=3, breaks=2)
def j_elif(x):
    y = x * 2
    if y.sum() < 0:  # BRK
        r = y - 1
    elif y.max() > 0:  # BRK
        r = y + 1
    else:
        r = y
    return r * 3


@brk("jump", XP, graphs=2, breaks=1)
def j_ternary(x):
    y = x * 2
    r = y + 1 if y.sum() > 0 else y - 1  # BRK
    return r * r


@brk("jump", XYP, graphs=3, breaks=2)
def j_and(x, z):
    y = x * 2
    if (y.sum() > 0) and (z.sum() > 0):  # BRK
        return y + z
    return y - z


@brk("jump", XP, graphs=3, breaks=2)
def j_or(x):
    y = x + 1
    if (y.sum() < 0) or (y.min() > 0):  # BRK
        return y * 2
    return y * 3


@brk("jump", XP, graphs=2, breaks=1)
def j_not(x):
    y = x * 3
    if not (y.sum() > 0):  # BRK
        return y - 1
    return y + 1


@brk("jump", XP, graphs=2, breaks=1)
def j_any(x):
    y = x * 2
    if (y > 1).any():  # BRK
        y = y - 1
    return y * y


@brk("jump", XYP, graphs=3, breaks=2)
def j_nested_if(x, z):
    y = x + z
    if y.sum() > 0:  # BRK
        w = y * 2
        if w.min() > 0:  # BRK
            w = w + 1
        return w
    return y


@brk("jump", XP, graphs=2, breaks=1)
def j_assert(x):
    y = x * 2
    assert y.sum() > 0, "negative sum"  # BRK
    return y + 1


@brk("jump", lambda rng: Args(P(rng, 2, 3), mask=P(rng, 2, 3)), graphs=2, breaks=1)
def j_none_and(x, mask=None):
    y = x * 2
    if mask is not None and mask.sum() > 0:  # BRK
        y = y * mask
    return y + 1


@brk("jump", N, graphs=2, breaks=1)
def j_int_tensor(n):
    m = n * 3
    if m.sum() > 20:  # BRK
        return m - 1
    return m + 1


@brk("jump", XP, graphs=2, breaks=1)
def j_truth(x):
    s = (x * x).sum()
    if s:  # BRK
        return x / s
    return x


@brk("jump", XP, graphs=3, breaks=2)
def j_chained_compare(x):
    s = (x * 2).sum()
    if 0 < s < 1000:  # BRK
        return x * s
    return x


@brk("jump", X, graphs=2, breaks=1)
def j_return_ternary(x):
    y = x.tanh()
    return y * 2 if y.sum() > 0 else y * -2  # BRK


# =====================================================================
# data reads: item, tolist, numpy, float(), int(), bool()
# =====================================================================
@brk("data", X, graphs=2, breaks=1)
def d_item(x):
    y = x * 2
    s = y.sum().item()  # BRK
    return y * s


@brk("data", X, graphs=2, breaks=1)
def d_tolist(x):
    y = x + 1
    vals = y.tolist()  # BRK
    return y * len(vals)


@brk("data", X, graphs=2, breaks=1)
def d_numpy(x):
    y = x * 2
    a = y.numpy()  # BRK
    return y + a.shape[0]


@brk("data", X, graphs=2, breaks=1)
def d_float(x):
    y = x.exp()
    f = float(y.sum())  # BRK
    return y / f


@brk("data", N, graphs=2, breaks=1)
def d_int(n):
    m = n + 2
    k = int(m.sum())  # BRK
    return m * k


@brk("data", X, graphs=2, breaks=1)
def d_bool(x):
    y = x - 0.5
    flag = bool(y.abs().sum() > 0)  # BRK
    return y * 2 if flag else y * 3


@brk("data", X, graphs=2, breaks=None)
def d_math_floor(x):
    y = x * 3
    k = math.floor(y.sum().item())  # BRK
    return y - k


@brk("data", X, graphs=2, breaks=1)
def d_tolist_sum(x):
    y = x * 2
    total = sum(y.sum(1).tolist())  # BRK
    return y + total


@brk("data", lambda rng: (R(rng, 2, 3), I(rng, 1, 3, 2)), graphs=2, breaks=1)
def d_item_slice(x, n):
    k = n.max().item()  # BRK
    return x[:, :k] * 2


@brk("data", X, graphs=2, breaks=1)
def d_item_compare(x):
    y = x - 0.5
    if y.sum().item() > 0:  # BRK
        return y * 2
    return y * -2


@brk("data", X, graphs=2, breaks=1)
def d_argmax_item(x):
    y = x * 2
    i = int(y.sum(0).argmax().item())  # BRK
    return y[:, i] + 1


@brk("data", X, graphs=2, breaks=None)
def d_numpy_reduce(x):
    y = x * 2
    s = float(y.numpy().sum())  # BRK
    return y + s


# =====================================================================
# print, f-strings, formatting, logging-like calls
# =====================================================================
@brk("print", X, graphs=2, breaks=1)
def p_print_const(x):
    y = x * 2
    print("p_print_const")  # BRK
    return y + 1


@brk("print", X, graphs=2, breaks=1)
def p_print_tensor(x):
    y = x * 2
    print(y)  # BRK
    return y.relu()


@brk("print", X, graphs=2, breaks=1)
def p_print_kwargs(x):
    y = x.sigmoid()
    print("shape", y.shape, sep=":", end="\n")  # BRK
    return y * 4


@brk("print", X, graphs=2, breaks=1)
def p_fstring_tensor(x):
    y = x * 2
    msg = f"{y}"  # BRK
    return y * len(msg)


@brk("print", X, graphs=2, breaks=1)
def p_fstring_item(x):
    y = x + 3
    msg = f"loss={y.sum().item():.3f}"  # BRK
    return y * 2, msg


@brk("print", X, graphs=2, breaks=1)
def p_str_format(x):
    y = x * 2
    s = "{}|{}".format(y.shape, y)  # BRK
    return y - len(s)


@brk("print", X, graphs=2, breaks=1)
def p_percent_format(x):
    y = x * 2
    s = "%s" % (y,)  # BRK
    return y + len(s)


@brk("print", X, graphs=2, breaks=1)
def p_print_stderr(x):
    y = x * 2
    print("p_print_stderr", file=sys.stderr)  # BRK
    return y + 1


@brk("print", X, graphs=2, breaks=2, also=(_Logger.info,))
def p_user_logger(x):
    y = x * 2
    _LOGGER.info("value=%s", 3)  # BRK
    return y + 1


@brk("print", X, graphs=2, breaks=1)
def p_print_star(x):
    y = x * 2
    parts = ("p_print_star", y.shape)
    opts = {"sep": "|"}
    print(*parts, **opts)  # BRK
    return y + 1


@brk("print", X, graphs=2, breaks=1)
def p_stdout_write(x):
    y = x * 2
    sys.stdout.write("p_stdout_write\n")  # BRK
    return y + 1


@brk("print", X, graphs=2, breaks=1)
def p_repr(x):
    y = x - 1
    r = repr(y)  # BRK
    return y * 2, len(r) > 0


@brk("print", X, graphs=2, breaks=1)
def p_len_str(x):
    y = x * 2
    n = len(str(y))  # BRK
    return y + (n > 0)


# =====================================================================
# calls of unknown C functions
# =====================================================================
@brk("cfunc", X, graphs=2, breaks=1)
def c_asarray(x):
    y = x * 2
    np.asarray(y)  # BRK
    return y + 1


@brk("cfunc", X, graphs=2, breaks=1)
def c_perf_counter(x):
    y = x * 2
    time.perf_counter()  # BRK
    return y + 1


@brk("cfunc", X, graphs=2, breaks=1)
def c_getrefcount(x):
    y = x * 2
    sys.getrefcount(y)  # BRK
    return y - 1


@brk("cfunc", X, graphs=2, breaks=None)
def c_np_float32(x):
    y = x * 2
    k = float(np.float32(1.5))  # BRK
    return y * k


@brk("cfunc", X, graphs=2, breaks=1)
def c_crc32(x):
    y = x * 2
    k = zlib.crc32(b"abc") % 7  # BRK
    return y + k


@brk("cfunc", X, graphs=2, breaks=1)
def c_getpid(x):
    y = x.exp()
    os.getpid()  # BRK
    return y * 3


@brk("cfunc", X, graphs=2, breaks=None)
def c_np_sum(x):
    y = x * 2
    k = int(np.sum([1, 2, 3]))  # BRK
    return y + k


@brk("cfunc", X, graphs=2, breaks=1)
def c_reduce(x):
    y = x * 2
    z = functools.reduce(operator.add, [y, y, y])  # BRK
    return z * 2


@brk("cfunc", X, graphs=2, breaks=1)
def c_dir(x):
    y = x + 1
    n = len(dir(y))  # BRK
    return y * (n > 0)


@brk("cfunc", X, graphs=2, breaks=1)
def c_math_isnan(x):
    y = x * 2
    bad = math.isnan(y.sum())  # BRK
    return (y + 1) if not bad else y


@brk("cfunc", XY, graphs=2, breaks=1)
def c_builtin_max(x, z):
    y = x * 2
    m = max(y.sum(), z.sum())  # BRK
    return y * m


@brk("cfunc", XY, graphs=2, breaks=1)
def c_sorted(x, z):
    y = x * 2
    vals = sorted([y.sum(), z.sum()])  # BRK
    return vals[0] + vals[1]


@brk("cfunc", X, graphs=2, breaks=1)
def c_time(x):
    y = x * 2
    time.time()  # BRK
    return y / 2


# =====================================================================
# unsupported instructions (each one runs)
# =====================================================================
@brk("instr", X, graphs=2, breaks=None)
def i_class_def(x):
    y = x * 2
    class _Local:  # BRK
        k = 3
    return y + 1


@brk("instr", X, graphs=2, breaks=None)
def i_match_abc(x):
    y = x * 2
    match [1, 2]:
        case collections.abc.Sequence():  # BRK
            y = y + 1
    return y * 2


@brk("instr", X, graphs=2, breaks=1)
def i_del_global(x):
    global _I_DEL_G
    _I_DEL_G = 1
    y = x * 2
    del _I_DEL_G  # BRK
    return y + 1


@brk("instr", X, graphs=2, breaks=1)
def i_del_deref(x):
    k = 2
    def g():
        return k
    y = x * g()
    del k  # BRK
    return y + 1


@brk("instr", X, graphs=2, breaks=1)
def i_del_attr(x):
    o = _Obj()
    o.a = 1
    y = x * 2
    del o.a  # BRK
    return y + 1, hasattr(o, "a")


# the breaking call reads the frame itself: by design no partial graph (a
# break function's frame would answer for it), the frame runs plain
@brk("instr", X, graphs=0, breaks=1)
def i_locals(x):
    y = x * 2
    d = locals()  # BRK
    return y * len(d), sorted(d)


# the breaking call reads the frame itself: by design no partial graph (a
# break function's frame would answer for it), the frame runs plain
@brk("instr", X, graphs=0, breaks=1)
def i_exec(x):
    y = x * 2
    exec("pass")  # BRK
    return y + 1


@brk("instr", X, graphs=2, breaks=None)
def i_coroutine(x):
    async def co():
        return 1
    y = x * 2
    c = co()  # BRK
    c.close()
    return y + 1


@brk("instr", X, graphs=2, breaks=1)
def i_globals(x):
    y = x * 2
    g = globals()  # BRK
    return y + g["_K"]


# the breaking call reads the frame itself: by design no partial graph (a
# break function's frame would answer for it), the frame runs plain
@brk("instr", X, graphs=0, breaks=1)
def i_vars(x):
    y = x + 1
    v = vars()  # BRK
    return y * len(v), sorted(v)


# =====================================================================
# breaks inside loop bodies: the frame runs as plain Python, its
# callees are captured as their own frames
# =====================================================================
@brk("loop", X, graphs=1, breaks=1)
def l_for_print(x):
    for i in range(3):
        x = _h(x)
        print("l_for_print", i)  # BRK
    return x


@brk("loop", X, graphs=0, breaks=1)
def l_for_item(x):
    total = 0.0
    for i in range(2):
        total += (x * i).sum().item()  # BRK
    return x * total


@brk("loop", XP, graphs=1, breaks=1)
def l_for_jump(x):
    for _ in range(3):
        x = _h(x)
        if x.sum() > 100:  # BRK
            x = x / 10
    return x


# The first test of a while condition sits before the loop in the bytecode
# (a top-level break, as in TorchDynamo): prefix graph (sum, lt), then the
# resume function holds the loop and breaks inside it (plain), _h captured.
@brk("loop", XP, graphs=2, breaks=2)
def l_while_tensor(x):
    n = 0
    while x.sum() < 50:  # BRK
        x = _h(x)
        n += 1
    return x, n


@brk("loop", XP, graphs=1, breaks=1)
def l_while_body(x):
    n = 0
    while n < 3:
        x = _h(x)
        if x.sum() > 1e6:  # BRK
            x = x / 10
        n += 1
    return x, n


@brk("loop", lambda rng: ([R(rng, 2, 3), R(rng, 2, 3)],), graphs=1, breaks=1)
def l_for_list(xs):
    out = []
    for t in xs:
        print("l_for_list", t.shape)  # BRK
        out.append(_h(t))
    return out


@brk("loop", X, graphs=1, breaks=1)
def l_nested_loops(x):
    for i in range(2):
        for j in range(2):
            x = _h(x)
            if i == j:
                print("l_nested_loops", i, j)  # BRK
    return x


@brk("loop", X, graphs=2, breaks=2, also=(_gp,))
def l_loop_calls_breaker(x):
    for _ in range(2):
        x = _gp(x)  # BRK
    return x


@brk("loop", X, graphs=0, breaks=1)
def l_for_fstring(x):
    s = ""
    for i in range(2):
        s += f"{x[i]}"  # BRK
    return x * 2, len(s) > 0


@brk("loop", X, graphs=2, breaks=1)
def l_loop_then_break(x):
    for i in range(3):
        x = x * 2
    print("l_loop_then_break")  # BRK
    return x + 1


@brk("loop", X, graphs=2, breaks=1)
def l_break_then_loop(x):
    y = x * 2
    print("l_break_then_loop")  # BRK
    for i in range(3):
        y = y + i
    return y


# plain (a break inside a with block): _h translated under grad and under no_grad
@brk("loop", X, graphs=2, breaks=1)
def l_with_no_grad(x):
    y = _h(x)
    with symtrace.no_grad():
        print("l_with_no_grad")  # BRK
        z = _h(y)
    return z


@brk("loop", X, graphs=1, breaks=1)
def l_try_block(x):
    y = _h(x)
    try:
        print("l_try_block")  # BRK
    except ValueError:
        y = y * 0
    return _h(y)


@brk("loop", X, graphs=None, breaks=None)
def l_listcomp_print(x):
    y = x * 2
    flags = [print("l_listcomp_print", i) for i in range(2)]  # BRK
    return y + len(flags)


# =====================================================================
# breaks inside inlined calls: the caller breaks at the call
# =====================================================================
@brk("inline", X, graphs=4, breaks=2, also=(_gp,))
def n_one_level(x):
    y = x + 1
    z = _gp(y)  # BRK
    return z * 3


@brk("inline", X, graphs=6, breaks=3, also=(_mid, _gp))
def n_two_levels(x):
    y = x * 3
    return _mid(y) + 1  # BRK


def baz(x):
    return -x if x > 0 else x - 1  # BRK


def bar(x):
    return x * baz(x - 1)  # BRK


@brk("inline", lambda rng: (symtrace.tensor([int(rng.integers(1, 9))]),), graphs=6, breaks=3,
     also=(bar, baz))
def foo(x):
    return x * bar(2 * x)  # BRK


@brk("inline", X, graphs=4, breaks=2, also=(_Helper.scale,))
def n_user_method(x):
    return _HELPER.scale(x + 1) * 2  # BRK


@brk("inline", X, graphs=4, breaks=2, also=(_Helper.shifted,))
def n_staticmethod(x):
    y = x * 3
    return _Helper.shifted(y) - 1  # BRK


@brk("inline", X, graphs=4, breaks=2, also=(_gk,))
def n_kwargs_call(x):
    return _gk(x - 1, scale=2.0, shift=3.0) * 2  # BRK


@brk("inline", X, graphs=4, breaks=3, also=(_gp,))
def n_called_twice(x):
    a = _gp(x)  # BRK
    b = _gp(x * 2)  # BRK
    return a + b


@brk("inline", X, graphs=4, breaks=2)
def n_closure(x):
    k = 2.0
    def inner(t):
        u = t * k
        print("n_closure.inner")  # BRK
        return u + k
    return inner(x + 1) - 1  # BRK


@brk("inline", X, graphs=4, breaks=2)
def n_lambda(x):
    f = lambda t: t * t.sum().item()  # noqa: E731  # BRK
    return f(x + 1) + 1  # BRK


@brk("inline", X, graphs=4, breaks=2, also=(_gj,))
def n_jump_in_callee(x):
    y = x + 1
    return _gj(y) * 3  # BRK


@brk("inline", X, graphs=3, breaks=2, also=(_gstart,))
def n_callee_breaks_at_start(x):
    y = x + 1
    return _gstart(y) + 1  # BRK


@brk("inline", X, graphs=2, breaks=2, also=(_gloop,))
def n_callee_loop(x):
    y = x * 2
    z = _gloop(y)  # BRK
    return z * 3


def _rec(x, n):
    if n == 0:
        print("_rec bottom")  # BRK
        return x
    return _rec(x * 2, n - 1) + 1  # BRK


# each level breaks at its call: levels 2 and 1 have a prefix (x * 2, two
# entries: n is guarded) and a resume (+ 1) that does not read n, so level
# 2's resume reuses level 1's entry: 3 graphs; level 0 and n_recursive_break
# itself have no op; 4 frames, 4 breaks
@brk("inline", X, graphs=3, breaks=4, also=(_rec,))
def n_recursive_break(x):
    return _rec(x, 2)  # BRK


# =====================================================================
# several breaks in one function
# =====================================================================
@brk("multi", X, graphs=3, breaks=2)
def m_two_prints(x):
    y = x * 2
    print("m_two_prints 1")  # BRK
    z = y + 1
    print("m_two_prints 2")  # BRK
    return z * z


@brk("multi", X, graphs=3, breaks=2)
def m_item_then_print(x):
    y = x + 1
    s = y.sum().item()  # BRK
    z = y * s
    print("m_item_then_print", s > 0)  # BRK
    return z - 1


@brk("multi", XP, graphs=3, breaks=2)
def m_jump_then_item(x):
    y = x * 2
    if y.sum() > 0:  # BRK
        y = y + 1
    s = y.mean().item()  # BRK
    return y / s


@brk("multi", X, graphs=5, breaks=4)
def m_four(x):
    a = x + 1
    print("m_four a")  # BRK
    b = a * 2
    n = b.sum().item()  # BRK
    c = b - n
    np.asarray(c)  # BRK
    d = c.relu()
    time.perf_counter()  # BRK
    return d * 3


@brk("multi", XP, graphs=3, breaks=2)
def m_break_in_branch(x):
    y = x * 2
    if y.sum() > 0:  # BRK
        y = y + 1
        print("m_break_in_branch pos")  # BRK
        y = y * 3
    else:
        y = y - 1
        print("m_break_in_branch neg")
        y = y * 4
    return y


@brk("multi", X, graphs=2, breaks=2)
def m_adjacent(x):
    y = x * 2
    print("m_adjacent 1")  # BRK
    print("m_adjacent 2")  # BRK
    return y + 1


@brk("multi", X, graphs=7, breaks=4, also=(_gp, _gi))
def m_two_callees(x):
    a = _gp(x + 1)  # BRK
    b = _gi(a * 2)  # BRK
    return a + b


@brk("multi", X, graphs=4, breaks=3)
def m_items(x):
    a = x.sum().item()  # BRK
    b = (x * 2).mean().item()  # BRK
    c = (x * 3).max().item()  # BRK
    return x * (a + b + c)


@brk("multi", XP, graphs=4, breaks=3)
def m_three_ifs(x):
    y = x * 1.5
    if y.sum() > 0:  # BRK
        y = y + 1
    if y.min() > 0:  # BRK
        y = y * 2
    if y.max() > 1000:  # BRK
        y = y * 0
    return y - 1


@brk("multi", X, graphs=4, breaks=3, also=(_gp,))
def m_self_then_callee(x):
    y = x * 2
    print("m_self_then_callee")  # BRK
    return _gp(y) + 1  # BRK


# =====================================================================
# live locals of many kinds across the break
# =====================================================================
@brk("live", X, graphs=2, breaks=1)
def v_many_kinds(x):
    n = 3
    s = "abc"
    f = 0.5
    flag = True
    tup = (x * 2, x + 1)
    lst = [x - 1, x * 3]
    d = {"a": x * 4, "b": 2}
    m = _LIN
    nothing = None
    print("v_many_kinds")  # BRK
    r = tup[0] * n + tup[1] * len(s) + lst[0] * f + lst[1] + d["a"] * d["b"] + m(x)
    return r if (nothing is None and flag) else -r


@brk("live", lambda rng: (R(rng, 2, 3), False), graphs=1, breaks=1)
def v_unbound_branch(x, flag):
    y = x * 2
    if flag:
        w = y + 1
    print("v_unbound_branch")  # BRK
    if flag:
        return w * 2
    return y


@brk("live", lambda rng: (R(rng, 2, 3), True), graphs=2, breaks=1)
def v_bound_branch(x, flag):
    y = x * 2
    if flag:
        w = y + 1
    print("v_bound_branch")  # BRK
    if flag:
        return w * 2
    return y


@brk("live", X, graphs=2, breaks=1)
def v_bound_after(x):
    y = x * 2
    print("v_bound_after")  # BRK
    z = y + 1
    return z


@brk("live", X, graphs=2, breaks=1)
def v_aliased_locals(x):
    y = x * 2
    z = y
    print("v_aliased_locals")  # BRK
    return z + y


@brk("live", X, graphs=2, breaks=1)
def v_deleted(x):
    y = x * 2
    tmp = y + 1
    del tmp
    print("v_deleted")  # BRK
    return y * 3


@brk("live", X, graphs=2, breaks=1)
def v_nested_containers(x):
    state = {"h": [x * 2, (x + 1, x - 1)], "meta": ("tag", 3)}
    print("v_nested_containers")  # BRK
    a, (b, c) = state["h"]
    return a * b - c * state["meta"][1]


@brk("live", lambda rng: Args(R(rng, 2, 3), 2, "ab", [R(rng, 2, 3), R(rng, 2, 3)],
                              {"k": R(rng, 2, 3)}), graphs=2, breaks=1)
def v_argument_kinds(x, n, s, xs, d, opt=None):
    y = x * n
    print(s)  # BRK
    return y + xs[0] * xs[1] - d["k"] * len(s) + (0 if opt is None else opt)


@brk("live", X, graphs=2, breaks=1)
def v_module_local(x):
    m = _LIN
    h = m(x)
    print("v_module_local")  # BRK
    return m(h).relu()


@brk("live", X, graphs=2, breaks=1)
def v_shape_ints(x):
    b, n = x.shape
    y = x.reshape(n, b)
    print("v_shape_ints", b, n)  # BRK
    return y * b + n


@brk("live", X, graphs=2, breaks=1)
def v_list_grown(x):
    outs = []
    outs.append(x * 2)
    outs.append(x + 1)
    print("v_list_grown")  # BRK
    outs.append(outs[0] * outs[1])
    return outs


@brk("live", lambda rng: (R(rng, 2, 3, grad=True), R(rng, 2, 3)), graphs=2, breaks=1)
def v_requires_grad(w, x):
    y = (w * x).tanh()
    print("v_requires_grad")  # BRK
    return (y * 2).sum()


@brk("live", N, graphs=2, breaks=1)
def v_dtype_local(n):
    dt = symtrace.float32
    m = n * 2
    print("v_dtype_local", dt)  # BRK
    return m.to(dt) / 3


@brk("live", X, graphs=2, breaks=1)
def v_user_object(x):
    b = _Box(x * 2)
    print("v_user_object")  # BRK
    return b.v + 1


@brk("live", X, graphs=2, breaks=1)
def v_global_tensor(x):
    y = x * 2
    print("v_global_tensor")  # BRK
    return y + _GW + _K


# views of an argument live across the break (whether a view is an op of
# the prefix graph is not determined)
@brk("live", X, graphs=None, breaks=1)
def v_views_live(x):
    v = x.t()
    w = x[:, 1:]
    print("v_views_live")  # BRK
    return v @ w


@brk("live", X, graphs=2, breaks=1)
def v_inplace_after_break(x):
    y = x * 2
    print("v_inplace_after_break")  # BRK
    y.add_(1)
    return y


@brk("live", XY, graphs=2, breaks=1)
def v_iterator_live(x, z):
    it = iter([x * 2, z * 3])
    a = next(it)
    print("v_iterator_live")  # BRK
    b = next(it)
    return a + b


@brk("live", X, graphs=2, breaks=1)
def v_range_slice_live(x):
    r = range(1, 3)
    sl = slice(0, 2)
    y = x * 2
    print("v_range_slice_live")  # BRK
    return y[:, sl] * len(r)


class _State:
    n = 0


_STATE = _State()
_GK = 0


# A store into an outside object before the break must have happened when
# the code after the break reads it back (the last store resets it).
@brk("live", lambda rng: (R(rng, 2, 3), int(rng.integers(2, 9))), graphs=2, breaks=1)
def v_attr_effect_then_break(x, k):
    _STATE.n = k
    y = x * 2
    print("v_attr_effect_then_break")  # BRK
    r = y * _STATE.n
    _STATE.n = 0
    return r


@brk("live", lambda rng: (R(rng, 2, 3), int(rng.integers(2, 9))), graphs=2, breaks=1)
def v_global_effect_then_break(x, k):
    global _GK
    _GK = k
    y = x + 1
    print("v_global_effect_then_break")  # BRK
    r = y * _GK
    _GK = 0
    return r


# =====================================================================
# values on the stack at the break
# =====================================================================
@brk("stack", X, graphs=2, breaks=1)
def s_mul_call_item(x):
    y = x * _py_scale(x.sum().item())  # BRK
    return y + 1


@brk("stack", X, graphs=2, breaks=2)
def s_print_item(x):
    y = x + 1
    print(y.sum().item() > 0)  # BRK
    return y * 2


@brk("stack", lambda rng: (R(rng, 2, 3), I(rng, 0, 9, 4), R(rng, 2, 3)), graphs=2, breaks=1)
def s_list_literal(a, b, c):
    return [a * 2, b.sum().item(), c + 1]  # BRK


@brk("stack", lambda rng: (R(rng, 2, 3), I(rng, 0, 5, 3)), graphs=2, breaks=1)
def s_nested_call(a, b):
    return _pair(a + 1, _sq(b).sum().item())  # BRK


@brk("stack", lambda rng: (R(rng, 2, 3), I(rng, 0, 5, 2, 3)), graphs=2, breaks=1)
def s_dict_literal(a, b):
    return {"x": a * 2, "n": b.sum().item(), "y": a + b.float()}  # BRK


@brk("stack", XY, graphs=2, breaks=1)
def s_binop_float(x, y):
    return x * 2 + float(y.sum())  # BRK


@brk("stack", X, graphs=2, breaks=1)
def s_keyword_names(x):
    return _kwf(x + 1, scale=x.mean().item(), shift=2.0)  # BRK


@brk("stack", XY, graphs=2, breaks=1)
def s_bound_method(x, y):
    return (x * 2).add(y.sum().item())  # BRK


@brk("stack", XY, graphs=2, breaks=1)
def s_tuple_mixed(x, y):
    return x + 1, y.tolist(), x * 2  # BRK


@brk("stack", lambda rng: ([R(rng, 2, 3), R(rng, 2, 3)], I(rng, 0, 2, 1)), graphs=2, breaks=1)
def s_subscript(xs, n):
    return xs[int(n.sum())] * 2  # BRK


@brk("stack", lambda rng: (R(rng, 2, 3), I(rng, 1, 3, 1)), graphs=2, breaks=1)
def s_slice_stack(x, n):
    return (x * 2)[:, :int(n.sum())] + 1  # BRK


@brk("stack", XY, graphs=2, breaks=1)
def s_print_tensors(x, y):
    print("s_print_tensors", x.sum(), y.max())  # BRK
    return x - y


# =====================================================================
# breaks at the start, before the return, at the return; keyword
# arguments at the breaking call or at the entry
# =====================================================================
@brk("edge", X, graphs=1, breaks=1)
def e_start_print(x):
    print("e_start_print")  # BRK
    return x * 2 + 1


@brk("edge", lambda rng: (R(rng, 1), R(rng, 2, 3)), graphs=1, breaks=1)
def e_start_item(x, y):
    k = x.item()  # BRK
    return y * k


@brk("edge", X, graphs=1, breaks=1)
def e_before_return(x):
    y = (x * 2).relu()
    print("e_before_return")  # BRK
    return y


@brk("edge", N, graphs=1, breaks=1)
def e_return_item(n):
    return (n * 3).sum().item()  # BRK


@brk("edge", N, graphs=1, breaks=1)
def e_return_tolist(n):
    return (n + 1).tolist()  # BRK


@brk("edge", X, graphs=0, breaks=1)
def e_no_ops(x):
    print("e_no_ops")  # BRK
    return x


@brk("edge", X, graphs=2, breaks=1)
def e_kwargs_at_call(x):
    y = x * 2
    np.asarray(y, dtype=np.float32)  # BRK
    return y + 1


@brk("edge", lambda rng: Args(R(rng, 2, 3), scale=2.0, verbose=True), graphs=2, breaks=1)
def e_entry_kwargs(x, *, scale=1.0, verbose=False):
    y = x * scale
    if verbose:
        print("e_entry_kwargs")  # BRK
    return y + 1


@brk("edge", lambda rng: (R(rng, 2, 3), R(rng, 2, 3), R(rng, 2, 3)), graphs=2, breaks=1)
def e_varargs(*xs):
    s = xs[0] + xs[1]
    print("e_varargs", len(xs))  # BRK
    return s * xs[2]


@brk("edge", lambda rng: Args(R(rng, 2, 3), a=2.0, b=R(rng, 2, 3)), graphs=2, breaks=1)
def e_var_kwargs(x, **kw):
    y = x * kw["a"]
    print("e_var_kwargs", sorted(kw))  # BRK
    return y + kw["b"]


@brk("edge", X, graphs=1, breaks=1)
def e_return_none(x):
    y = x * 2
    print("e_return_none", y)  # BRK


# y's op feeds nothing but a shape: a dead prefix (dropped, as TorchDynamo
# drops dead code) or one graph; not determined.
@brk("edge", X, graphs=None, breaks=1)
def e_dead_prefix(x):
    y = x * 2
    print("e_dead_prefix", y.shape)  # BRK


@brk("edge", X, graphs=1, breaks=1)
def e_break_in_return_expr(x):
    return print("e_break_in_return_expr") or x * 2  # BRK


# =====================================================================
# breaks in nn.Module.forward (the Module compiled)
# =====================================================================
class _MPrint(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 4)

    def forward(self, x):
        h = self.lin(x)
        print("_MPrint.forward")  # BRK
        return h.relu()


class _MJump(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        h = self.lin(x)
        if h.sum() > -1e6:  # BRK
            return h * 2
        return h * -1


class _MItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.scale = 2.0

    def forward(self, x):
        h = self.lin(x)
        s = h.abs().mean().item()  # BRK
        return h / (s + self.scale)


class _MParent(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Linear(3, 3)
        self.child = _MPrint()

    def forward(self, x):
        h = self.pre(x)
        h = self.child(h)  # BRK
        return h * 2


class _MList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            print("_MList layer", i)  # BRK
        return x


class _MKw(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, mask=None, verbose=False):
        h = self.lin(x)
        if mask is not None:
            h = h * mask
        if verbose:
            print("_MKw", h.shape)  # BRK
        return h.tanh()


class _MBuf(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", symtrace.tensor(np.array([1.0, 2.0, 3.0], dtype=np.float32)))

    def forward(self, x):
        y = x * 2
        np.asarray(y)  # BRK
        return y + self.offset


class _MTwo(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 3)
        self.l2 = nn.Linear(3, 2)

    def forward(self, x):
        h = self.l1(x)
        print("_MTwo after l1")  # BRK
        h = self.l2(h.relu())
        n = h.sum().item()  # BRK
        return h - n


class _MMethod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def _norm(self, h):
        s = h.abs().max().item()  # BRK
        return h / s

    def forward(self, x):
        h = self.lin(x)
        return self._norm(h) + 1  # BRK


class _MSeqInner(nn.Module):
    def forward(self, x):
        y = x * 2
        print("_MSeqInner")  # BRK
        return y + 1


symtrace.manual_seed(4321)
add_module("module", "o_forward_print", _MPrint(), X, graphs=2, breaks=1)
add_module("module", "o_forward_jump", _MJump(), X, graphs=2, breaks=1)
add_module("module", "o_forward_item_attr", _MItem(), X, graphs=2, breaks=1)
add_module("module", "o_child_breaks", _MParent(), X, graphs=4, breaks=2, also=(_MPrint.forward,))
# breaks=2: _MList.forward's own (plain, in the loop) and ModuleList.__iter__'s
# (a frame that returns an iterator)
add_module("module", "o_module_list_loop", _MList(), X, graphs=2, breaks=2)
add_module("module", "o_forward_kwargs", _MKw(),
           lambda rng: Args(R(rng, 2, 3), mask=P(rng, 2, 3), verbose=True), graphs=2, breaks=1)
add_module("module", "o_buffer_after_break", _MBuf(), X, graphs=2, breaks=1)
add_module("module", "o_two_breaks", _MTwo(), X, graphs=3, breaks=2)
add_module("module", "o_breaking_method", _MMethod(), X, graphs=4, breaks=2, also=(_MMethod._norm,))
# Sequential.forward loops over its children (plain); Sequential.__iter__
# returns an iterator (a break of its own); Linear, _MSeqInner (prefix and
# resume) and ReLU are captured as their own frames
add_module("module", "o_sequential_breaky", nn.Sequential(nn.Linear(3, 3), _MSeqInner(), nn.ReLU()), X,
           graphs=4, breaks=3, also=(_MSeqInner.forward,))
