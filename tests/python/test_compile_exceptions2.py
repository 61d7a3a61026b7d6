# Exceptions in compiled frames, the cases test_compile_exceptions.py left to
# plain Python (frontend/tr_except.c): user exception classes with their own
# __init__ (super().__init__ and attributes), keyword arguments to exception
# constructors, raising an exception instance made outside the frame,
# messages built from tensor sizes and dtypes, KeyError/IndexError of guarded
# containers, and exceptions that leave the compiled function (type, args,
# __cause__/__context__, traceback, mutations made before the raise, again on
# cache hits). Each function is compared with itself run eagerly over 3+
# compiled calls; _C._fe_stats() gives the graph and break counts. Torch (when
# installed) is the reference for tensor results. Also runs under Python 3.12.
import dataclasses
import traceback

import numpy as np
import pytest

import symtrace as st
from symtrace import _C
from compile_check_helpers import X, _np, check, same  # noqa: F401

pytestmark = pytest.mark.skipif(not hasattr(st, "compile"), reason="symtrace.compile is not built")


class CodeError(ValueError):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


class KwError(Exception):
    def __init__(self, msg, *, code=0, where="here"):
        super().__init__(msg)
        self.code = code
        self.where = where


class NoSuperError(KeyError):
    def __init__(self, a, b):          # the base's __init__ is not called: args = (a, b)
        self.total = a + b


class SubCodeError(CodeError):
    def __init__(self, code):
        super().__init__("sub %d" % code, code)
        self.sub = True


# ---------------- 1. user exception classes with their own __init__ ----------------
def f_code(x, n):
    try:
        y = x + 1
        if n > 1:
            raise CodeError("bad n", n)
        y = y - 1
    except CodeError as e:
        return y * e.code, str(e), e.args, repr(e)
    return y, "", (), ""


def test_user_init_raised_and_caught():
    x = X(3, 2)
    check(f_code, [(x, 2), (x, 2), (x, 3), (x, 0), (x, 0), (x, 2)], graphs=3)


def test_user_init_matches_torch():
    torch = pytest.importorskip("torch")
    x = X(3, 2)
    got = st.compile(f_code)(x, 3)
    ref = f_code(torch.tensor(x.numpy()), 3)
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), rtol=1e-6)
    assert got[1:] == ref[1:]


def f_no_super(x):
    try:
        raise NoSuperError(2, 5)
    except KeyError as e:
        return x * e.total, e.args, str(e)


def f_sub(x):
    try:
        raise SubCodeError(4)
    except ValueError as e:
        return x + e.code, e.sub, e.args, str(e), isinstance(e, CodeError)


@pytest.mark.parametrize("fn", [f_no_super, f_sub])
def test_user_init_variants(fn):
    check(fn, [(X(3),)] * 3)


def helper_raises_code(x, n):
    if n > 0:
        raise CodeError("helper", n * 10)
    return x


def f_code_from_helper(x, n):
    try:
        return helper_raises_code(x, n) + 1
    except CodeError as e:
        return x - e.code


def test_user_init_raised_in_inlined_helper():
    x = X(4)
    check(f_code_from_helper, [(x, 1), (x, 1), (x, 2), (x, 0), (x, 0)], graphs=3)


class ExplicitBaseError(ValueError):
    def __init__(self, m):
        ValueError.__init__(self, m)          # the base's __init__ named, not super()
        self.m = m


class StarArgsError(Exception):
    def __init__(self, *args, extra=1):
        super().__init__(*args)
        self.extra = extra


class TwoArgSuperError(Exception):
    def __init__(self, m):
        super(TwoArgSuperError, self).__init__(m, "two")


@dataclasses.dataclass
class DataError(Exception):                   # a dataclass: its own __init__ and __repr__
    code: int
    msg: str = "d"


def _raiser(cls, *a, **k):
    def f(x):
        try:
            raise cls(*a, **k)
        except Exception as e:
            return (x + 1, e.args, str(e), getattr(e, "m", 0), getattr(e, "extra", 0),
                    getattr(e, "code", 0))
    return f


@pytest.mark.parametrize("cls,a,k", [(ExplicitBaseError, ("m",), {}),
                                     (StarArgsError, (1, 2), {"extra": 5}),
                                     (TwoArgSuperError, ("m",), {}),
                                     (DataError, (3,), {})])
def test_user_init_spellings(cls, a, k):
    check(_raiser(cls, *a, **k), [(X(3),)] * 3)


# ---------------- 2. keyword arguments; instances made outside the frame ----------------
def f_kw(x):
    try:
        raise KwError("m", code=4, where="kw")
    except KwError as e:
        return x * e.code, e.where, e.args


def f_kw_default(x):
    try:
        raise KwError("m")
    except KwError as e:
        return x * (e.code + 1), e.where


def f_import_error(x):
    try:
        raise ImportError("no module", name="mod_x", path="/p")
    except ImportError as e:
        return x + len(e.name), e.path, e.args


@pytest.mark.parametrize("fn", [f_kw, f_kw_default, f_import_error])
def test_exception_keyword_arguments(fn):
    check(fn, [(X(3),)] * 3)


def f_kw_bad(x):
    try:
        raise ValueError("v", code=1)      # TypeError: ValueError takes no keywords
    except ValueError:
        return x


def test_exception_bad_keyword_raises_typeerror():
    st.reset()
    with pytest.raises(TypeError) as eager:
        f_kw_bad(X(3))
    cf = st.compile(f_kw_bad)
    for _ in range(3):
        with pytest.raises(TypeError) as got:
            cf(X(3))
        assert str(got.value) == str(eager.value)


GLOBAL_ERR = ValueError("global one", 7)


def f_global_instance(x):
    try:
        y = x * 2
        raise GLOBAL_ERR
    except ValueError as e:
        return y + e.args[1], str(e)


class Holder:
    pass


holder = Holder()
holder.err = KeyError("held")


def f_attr_instance(x, h):
    try:
        raise h.err
    except KeyError as e:
        return x - 1, e.args


def test_raise_instance_from_outside_the_frame():
    global GLOBAL_ERR
    x = X(3)
    check(f_global_instance, [(x,)] * 3)
    check(f_attr_instance, [(x, holder)] * 3)
    # another instance: guarded, not the old result
    st.reset()
    cf = st.compile(f_global_instance)
    old = GLOBAL_ERR
    try:
        same(cf(x), f_global_instance(x))
        GLOBAL_ERR = ValueError("another", 11)
        same(cf(x), f_global_instance(x))
        same(cf(x), f_global_instance(x))
    finally:
        GLOBAL_ERR = old
    # the same instance with other args: str(e) reads them (guarded)
    st.reset()
    cf = st.compile(f_global_instance)
    try:
        same(cf(x), f_global_instance(x))
        GLOBAL_ERR.args = ("changed", 3)
        same(cf(x), f_global_instance(x))
        same(cf(x), f_global_instance(x))
    finally:
        GLOBAL_ERR.args = ("global one", 7)
    h2 = Holder()
    h2.err = KeyError("other")
    st.reset()
    cf = st.compile(f_attr_instance)
    for h in (holder, h2, h2, holder):
        same(cf(x, h), f_attr_instance(x, h))


# ---------------- 4. messages from sizes and dtypes; lookups of guarded containers ----------------
def f_shape_msg(x):
    try:
        if x.shape[0] != 4:
            raise ValueError(f"bad shape {tuple(x.shape)} {x.dtype} {x.dim()}")
        return x + 1, ""
    except ValueError as e:
        return x * 0, str(e)


def test_message_from_sizes_and_dtype_caught():
    st.reset()
    cf = st.compile(f_shape_msg)
    for x in (X(3, 2), X(3, 2), X(4, 2), X(4, 2), X(3, 2)):
        same(cf(x), f_shape_msg(x))
    s = _C._fe_stats()
    assert s["breaks"] == 0 and s["graphs"] == 2, s


def f_lookup(x, d, lst, k, i):
    try:
        return x * d[k] + lst[i]
    except (KeyError, IndexError) as e:
        return x - 1, type(e).__name__, e.args


def test_key_and_index_errors_of_guarded_containers():
    x = X(3)
    d, lst = {"a": 2.0}, [1.0, 2.0]
    check(f_lookup, [(x, d, lst, "a", 1), (x, d, lst, "a", 1), (x, d, lst, "b", 1),
                     (x, d, lst, "b", 1), (x, d, lst, "a", 5), (x, d, lst, "a", 5)], graphs=3)


def f_outside_in_handler(x):
    try:
        try:
            raise KeyError("first")
        except KeyError:
            raise GLOBAL_ERR             # would set GLOBAL_ERR.__context__: Python does it
    except ValueError as e:
        return x + 1, type(e.__context__).__name__


def test_outside_instance_raised_in_handler_is_eager():
    x = X(3)
    old_ctx = GLOBAL_ERR.__context__
    try:
        st.reset()
        cf = st.compile(f_outside_in_handler)
        for _ in range(3):
            same(cf(x), f_outside_in_handler(x))
        assert _C._fe_stats()["breaks"] >= 1
        assert isinstance(GLOBAL_ERR.__context__, KeyError)
    finally:
        GLOBAL_ERR.__context__ = old_ctx


# ---------------- 3. exceptions that leave the compiled function ----------------
def f_escape_after_mutation(x):
    y = x * 2
    x.add_(1)                         # kept: the caller sees it
    raise CodeError("escapes", 5)


def helper_escape(x):
    x.mul_(3)
    raise KwError("from helper", code=9)


def f_escape_helper(x):
    y = x + 1
    return helper_escape(y) + x


def f_escape_context(x):
    x.sub_(1)
    try:
        raise KeyError("first")
    except KeyError as e:
        raise ValueError("second") from e


def f_escape_unmatched(x):
    x.add_(2)
    try:
        raise CodeError("unmatched", 1)
    except KeyError:
        return x


def _raise_line(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    for i, l in enumerate(lines):
        if text in l:
            return start + i
    raise AssertionError(text)


ESCAPES = [(f_escape_after_mutation, "raise CodeError"),
           (f_escape_helper, "raise KwError"),
           (f_escape_context, 'raise ValueError("second")'),
           (f_escape_unmatched, "raise CodeError")]


def _exc_fields(e):
    return (type(e), e.args, getattr(e, "code", None), type(e.__cause__), e.__cause__ and e.__cause__.args,
            type(e.__context__), e.__suppress_context__)


@pytest.mark.parametrize("fn,raise_text", ESCAPES)
def test_exception_leaving_the_frame_is_eager(fn, raise_text):
    base = X(4)
    xe = base.clone()
    with pytest.raises(Exception) as eager:
        fn(xe)
    st.reset()
    cf = st.compile(fn)
    line = _raise_line(fn if fn is not f_escape_helper else helper_escape, raise_text)
    for i in range(4):                                   # first call, then cache hits
        xc = base.clone()
        with pytest.raises(type(eager.value)) as got:
            cf(xc)
        assert _exc_fields(got.value) == _exc_fields(eager.value)
        np.testing.assert_allclose(xc.numpy(), xe.numpy())   # the mutation before the raise
        tb = traceback.extract_tb(got.value.__traceback__)
        assert tb[-1].filename == __file__ and tb[-1].lineno == line, tb
        assert all(fr.filename == __file__ for fr in tb), tb
    s = _C._fe_stats()
    assert s["hits"] >= 2 or s["fallbacks"] >= 2, s


@pytest.mark.parametrize("fn", [f_escape_after_mutation, f_escape_context, f_escape_unmatched])
def test_prefix_before_an_uncaught_raise_is_compiled(fn):
    # the statements before the raise run as a graph on every call: a
    # partial graph at the exception's construction, or, when the raise is
    # inside a try block whose handlers do not catch it, before the try
    st.reset()
    cf = st.compile(fn)
    for _ in range(3):
        with pytest.raises(Exception):
            cf(X(4))
    s = _C._fe_stats()
    assert s["graphs"] == 1 and s["resumes"] >= 1, s
    assert s["hits"] >= 2, s


def f_int_key(x, d, k):
    try:
        return x * d[k]
    except KeyError as e:
        return x - e.args[0]


def test_key_error_of_an_int_argument_key():
    x = X(3)
    d = {0: 2.0, 1: 3.0}
    check(f_int_key, [(x, d, 5), (x, d, 5), (x, d, 1), (x, d, 1), (x, d, 7)], graphs=3)


# ---------------- 5. handlers in generators and comprehensions ----------------
def safe_get(d, k):
    try:
        return d[k]
    except KeyError:
        return 0.5


def f_comp(x, d):
    ws = [safe_get(d, k) for k in ("a", "b", "c")]
    return x * sum(ws)


def gen_values(d, keys):
    for k in keys:
        try:
            v = d[k]
        except KeyError:
            v = -1.0
        yield v


def f_gen_list(x, d):
    return [x * w for w in gen_values(d, ("a", "b"))]


def f_gen_sum(x, d):
    return x * sum(w for w in gen_values(d, ("b", "a", "c")))


def gen_raise_own(n):
    for i in range(n):
        try:
            if i % 2:
                raise CodeError("odd", i)
            v = i
        except CodeError as e:
            v = -e.code
        yield v


def f_gen_user_exc(x):
    return x + sum(gen_raise_own(4))


@pytest.mark.parametrize("fn,args", [(f_comp, ({"a": 2.0},)), (f_gen_list, ({"a": 2.0},)),
                                     (f_gen_sum, ({"a": 2.0},)), (f_gen_user_exc, ())])
def test_handlers_in_generators_and_comprehensions(fn, args):
    x = X(3)
    check(fn, [(x,) + args] * 3)


def gen_yield_in_handler(d):
    for k in ("a", "b"):
        try:
            yield d[k]
        except KeyError:
            yield -1.0       # suspended inside a handler: the consumer's exc_info back meanwhile


def f_gen_yield_in_handler(x, d):
    return [x * w for w in gen_yield_in_handler(d)]


def test_yield_inside_a_generator_handler():
    # (a break until test_compile_fe10.py's generator exception state)
    st.reset()
    cf = st.compile(f_gen_yield_in_handler)
    x = X(3)
    for _ in range(3):
        same(cf(x, {"a": 2.0}), f_gen_yield_in_handler(x, {"a": 2.0}))
    assert _C._fe_stats()["breaks"] == 0


class DefaultError(RuntimeError):
    def __init__(self, msg="default message", level=2):
        super().__init__(msg)
        self.level = level


def f_raise_class_with_init(x):
    try:
        raise DefaultError               # a class: called with no arguments, __init__ inlined
    except RuntimeError as e:
        return x * e.level, str(e), e.args


def test_raise_of_a_class_with_python_init():
    check(f_raise_class_with_init, [(X(3),)] * 3)
