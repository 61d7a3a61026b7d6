# Ordinary model code under symtrace.compile (frontend/tr_exec.c, tr_calls.c,
# tr_except.c, tr_objects.c, entry.c, resume.c, translator.c): match
# statements on shapes, enum Flag operators, `in` on a ModuleDict (Python
# dunders inlined), functools.partial, contextlib.nullcontext, a namedtuple's
# _replace; and caught exceptions: ==/in on them, StopIteration and OSError
# returned or stored, their traceback, yield inside a generator's handler,
# and the traceback of an exception leaving a resumed frame. Each function
# is compared with itself run eagerly over 3+ compiled calls; _C._fe_stats()
# gives the graph and break counts. Also runs under Python 3.12.
import collections
import contextlib
import dataclasses
import enum
import functools
import io
import logging
import traceback

import numpy as np
import pytest

import symtrace as st
from symtrace import _C
from compile_check_helpers import X, _np, check, same  # noqa: F401

pytestmark = pytest.mark.skipif(not hasattr(st, "compile"), reason="symtrace.compile is not built")


# ---------------- match statements ----------------
def f_match_shape(x):
    match x.shape:
        case (n, m):
            return x.sum(1) * n + m
        case (n,):
            return x * n
    return x


def f_match_kind(x, spec):
    match spec:
        case (a, b):
            return x * a + b
        case [a]:
            return x * a
        case {"scale": s}:
            return x * s
        case _:
            return x


def test_match_sequence():
    check(f_match_shape, [(X(3, 4),)] * 3 + [(X(5),)] * 2, graphs=2)
    x = X(3)
    # the subject's type is guarded: a tuple, then a list, then an int
    # (7 falls through: no op, no graph)
    check(f_match_kind, [(x, (2, 1))] * 3 + [(x, [3])] * 2 + [(x, 7)], graphs=2)


@dataclasses.dataclass
class Point:
    x: float
    y: float


def f_match_class(t, p):
    match p:
        case Point(a, y=b):
            return t * a + b
        case int(n) | float(n):
            return t * n
        case {"scale": s, "shift": d}:
            return t * s + d
        case {"scale": s}:
            return t * s
        case str():
            return t - 1
    return t


def test_match_class_and_mapping():
    t = X(3)
    calls = ([(t, Point(2.0, 1.0))] * 3 + [(t, 3)] * 2 + [(t, 1.5)] + [(t, {"scale": 2.0})] * 2 +
             [(t, {"scale": 2.0, "shift": 1.0})] + [(t, "s")] + [(t, None)])
    # one graph per subject type and per dict key set (None: no op)
    check(f_match_class, calls, graphs=6)
    # the attribute values are read through the subject's source: guarded
    st.reset()
    cf = st.compile(f_match_class)
    for v in [2.0, 2.0, 5.0, -1.0]:
        same(cf(t, Point(v, 0.5)), f_match_class(t, Point(v, 0.5)))
    assert _C._fe_stats()["breaks"] == 0


# ---------------- enum members and Flag operators ----------------
class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2


class Opt(enum.Flag):
    A = enum.auto()
    B = enum.auto()
    C = enum.auto()


def f_enum(x, mode, flags):
    if mode is Mode.TRAIN:
        x = x * 2
    if Opt.A in flags:
        x = x + 1
    if flags & Opt.B:
        x = x - 5
    both = flags | Opt.C
    return x, mode.name, mode.value, both, bool(flags & Opt.C), Mode(2)


def test_enum_flags():
    x = X(3)
    check(f_enum, [(x, Mode.TRAIN, Opt.A | Opt.B)] * 3 + [(x, Mode.EVAL, Opt.B)] * 2, graphs=2)


class Vec:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return Vec(self.v + other.v)

    def __bool__(self):
        return self.v != 0


def f_user_ops(x, n):
    a = Vec(n) + Vec(2)
    if a:
        return x * a.v
    return x


def test_user_operator_dunders():
    x = X(3)
    check(f_user_ops, [(x, 1)] * 3 + [(x, -2)] * 2, graphs=1)


# ---------------- ModuleDict / Sequential / namedtuple ----------------
class Heads(st.nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = st.nn.ModuleDict({"cls": st.nn.Linear(3, 2), "reg": st.nn.Linear(3, 1)})

    def forward(self, x, which="cls"):
        out = {name: h(x) for name, h in self.heads.items()}
        out["sel"] = self.heads[which](x)
        if "reg" in self.heads and "box" not in self.heads:
            out["n"] = len(self.heads)
        return out


def test_moduledict_in():
    st.manual_seed(0)
    m = Heads()
    check(m, [(X(2, 3),)] * 3)


Out = collections.namedtuple("Out", ["logits", "aux"])


def f_namedtuple_replace(x):
    o = Out(x * 2, x.sum())
    o2 = o._replace(aux=o.aux + 1)
    return o2, Out._make([x, x + 1]), o2.logits.shape


def test_namedtuple_replace():
    check(f_namedtuple_replace, [(X(3),)] * 3)


# ---------------- functools.partial and contextlib.nullcontext ----------------
def _act(x, slope, bias=0.0):
    return st.nn.functional.leaky_relu(x, slope) + bias


LEAKY = functools.partial(_act, slope=0.2)
SHIFTED = functools.partial(_act, bias=1.0)


def f_partial(x):
    made = functools.partial(st.add, x)
    return LEAKY(x) + made(1), SHIFTED(x, 0.5), SHIFTED(x, slope=0.1, bias=2.0)


def test_functools_partial():
    check(f_partial, [(X(3),), (X(3, seed=1),), (X(3, seed=2),)])


def f_nullcontext(x, use_grad):
    ctx = contextlib.nullcontext() if use_grad else st.no_grad()
    with ctx:
        y = x * 2
    with contextlib.nullcontext(x) as z:
        y = y + z
    return y, y.requires_grad


def f_nullcontext_exc(x):
    try:
        with contextlib.nullcontext():
            raise KeyError("inside")
    except KeyError as e:
        return x + 1, e.args


def test_nullcontext():
    x = X(3).requires_grad_()
    check(f_nullcontext, [(x, True)] * 3 + [(x, False)] * 2, graphs=2)
    check(f_nullcontext_exc, [(X(3),)] * 3)


# ---------------- logging calls whose level is off ----------------
LOG = logging.getLogger("symtrace.test_fe10")


def f_log(x):
    LOG.debug("input shape %s", tuple(x.shape))
    LOG.info("info")
    return x + 1


def test_logging_level_off_and_on():
    buf = io.StringIO()
    h = logging.StreamHandler(buf)
    LOG.addHandler(h)
    LOG.propagate = False
    try:
        LOG.setLevel(logging.WARNING)
        LOG._cache.clear()          # a first call that fills logging's level cache
        # the level cache is filled under logging's lock: no break for it
        check(f_log, [(X(3),)] * 3)
        cf = st.compile(f_log)
        for level in ["DEBUG", "WARNING", "INFO", "WARNING"]:
            LOG.setLevel(level)     # clears the cache: the guards see the change
            for _ in range(2):
                same(cf(X(3)), f_log(X(3)))
            got = buf.getvalue().splitlines()
            buf.seek(0)
            buf.truncate()
            half = len(got) // 2    # compiled then eager, the same lines
            assert got[:half] == got[half:]
            assert len(got) == {"DEBUG": 8, "INFO": 4, "WARNING": 0}[level]
    finally:
        LOG.removeHandler(h)


# ---------------- the rest of the ordinary-code list: already whole graphs ----------------
@dataclasses.dataclass
class Cfg:
    scale: float = 2.0
    act: str = "relu"


def f_misc(x, cfg, *args, **kwargs):
    assert x.shape[0] == 3, f"expected 3 rows, got {x.shape[0]}"
    y = x * cfg.scale
    if cfg.act == "relu":
        y = y.relu()
    msg = f"shape {tuple(y.shape)}"
    outs = {k: y * v for k, v in {"a": 1.0, "b": 2.0}.items()}
    if isinstance(args, (list, tuple)) and args:
        y = y + args[0]
    return y + kwargs.get("eps", 0.0), msg, outs, type(cfg).__name__


def test_ordinary_code_whole_graph():
    x = X(3, 2)
    check(f_misc, [(x, Cfg(), 1.0)] * 3)


# ---------------- caught exceptions: ==, !=, in ----------------
def f_exc_eq(x):
    errs = []
    try:
        raise KeyError("k")
    except KeyError as e:
        errs.append(e)
        other = KeyError("k")
        return x + 1, e == e, e != e, e == other, e in errs, other in errs, e == 1, e in [1, "a"]


def test_caught_exception_compare():
    check(f_exc_eq, [(X(3),)] * 3)


# ---------------- StopIteration / OSError returned or stored ----------------
def f_stop(x):
    try:
        raise StopIteration(3)
    except StopIteration as e:
        return x + 1, e, e.value


def f_os(x, name):
    try:
        raise OSError(2, "No such file", name)
    except OSError as e:
        return x + e.errno, e, e.strerror, e.filename


def f_os_two(x):
    try:
        raise PermissionError(13, "denied", "/a", None, "/b")
    except OSError as e:
        return x * 2, e


ERRS = []


def f_store_os(x):
    try:
        raise FileNotFoundError(2, "gone")
    except OSError as e:
        ERRS.append(e)
    return x - 1


def test_stopiteration_oserror_returned():
    check(f_stop, [(X(3),)] * 3)
    check(f_os, [(X(3), "a.txt")] * 3)
    check(f_os_two, [(X(3),)] * 3)
    cf = st.compile(f_os)
    e = cf(X(3), "b.txt")[1]
    assert type(e) is FileNotFoundError and str(e) == "[Errno 2] No such file: 'b.txt'"
    assert cf(X(3), "b.txt")[1] is not e


def test_oserror_stored():
    ERRS.clear()
    st.reset()
    cf = st.compile(f_store_os)
    got = [cf(X(3)) for _ in range(3)]
    compiled = list(ERRS)
    ERRS.clear()
    ref = [f_store_os(X(3)) for _ in range(3)]
    same(got, ref)
    same(compiled, ERRS)
    assert len(set(map(id, compiled))) == 3
    assert _C._fe_stats()["breaks"] == 0


# ---------------- the traceback of a caught exception ----------------
def _raise_deep(n):
    if n > 0:
        raise KeyError("deep")
    return n


def f_tb_nested(x):
    try:
        y = x + 1
        _raise_deep(1)
    except KeyError as e:
        return y, e


def f_tb_local(x):
    try:
        raise ValueError("v")
    except ValueError as e:
        return x * 2, e


def _tb(e):
    return [(f.name, f.lineno, f.line) for f in traceback.extract_tb(e.__traceback__)]


@pytest.mark.parametrize("fn", [f_tb_nested, f_tb_local])
def test_returned_exception_traceback(fn):
    check(fn, [(X(3),)] * 3)
    cf = st.compile(fn)
    seen = []
    for _ in range(3):
        e, r = cf(X(3))[1], fn(X(3))[1]
        assert e.__traceback__ is not None and _tb(e) == _tb(r)
        assert e.__traceback__.tb_frame.f_code is r.__traceback__.tb_frame.f_code
        seen.append(e.__traceback__)
    assert len(set(map(id, seen))) == 3          # a new traceback on every call


# ---------------- yield inside a generator's except handler ----------------
def _gen(x):
    for i in range(3):
        try:
            if i == 1:
                raise KeyError(i)
            yield x + i
        except KeyError as e:
            yield x * 10 + e.args[0]


def f_gen_handler(x):
    return list(_gen(x))


def _gen_ctx(x):
    try:
        raise KeyError("g")
    except KeyError:
        yield x + 1
        yield x + 2
    try:
        raise ValueError("after")
    except ValueError as e2:
        yield e2.__context__


def f_gen_ctx(x):
    out = []
    try:
        raise IndexError("consumer")
    except IndexError:
        for v in _gen_ctx(x):
            out.append(v)
            try:
                raise TypeError("inner")
            except TypeError as t:
                out.append(t.__context__)    # the consumer's, not the generator's
    return out


def test_yield_in_generator_handler():
    check(f_gen_handler, [(X(3),)] * 3)
    check(f_gen_ctx, [(X(3),)] * 3)


# ---------------- an exception leaving a frame resumed after a break ----------------
SINK = io.StringIO()


def f_raise_after_break(x, n):
    y = x + 1
    print("step", file=SINK)      # a break: the rest runs in a resume function
    z = y * 2
    if n > 0:
        raise ValueError(n)
    return z


def test_traceback_after_break_is_eager():
    st.reset()
    cf = st.compile(f_raise_after_break)
    ref = None
    try:
        f_raise_after_break(X(3), 1)
    except ValueError as e:
        ref = [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)][1:]
    for _ in range(3):
        with pytest.raises(ValueError) as got:
            cf(X(3), 1)
        assert [(f.name, f.lineno) for f in traceback.extract_tb(got.value.__traceback__)][1:] == ref
    same(cf(X(3), 0), f_raise_after_break(X(3), 0))
    assert _C._fe_stats()["breaks"] >= 1


# ---------------- against torch ----------------
def _torch_fn(lib):
    def f(x, flags):
        match x.shape:
            case (n, m):
                y = x.sum(1) * n
            case _:
                y = x
        if Opt.A in flags:
            y = y + 1
        return functools.partial(lib.mul, y)(2)
    return f


def test_matches_torch():
    torch = pytest.importorskip("torch")
    x = X(3, 4)
    got = st.compile(_torch_fn(st))(x, Opt.A | Opt.C)
    ref = _torch_fn(torch)(torch.tensor(x.numpy()), Opt.A | Opt.C)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5)
