# Translator gaps that broke graphs in ordinary code (frontend/tr_classify.c,
# guards.c, tr_except.c, entry.c): comparisons of layout and memory-format
# objects (constants guarded like dtypes), caught exceptions returned or
# stored (rebuilt for the caller with their type, args and attributes), user
# exception classes taking a tensor positional argument, and isinstance /
# __class__ on a caught exception. Each function is compared with itself run
# eagerly over 3+ compiled calls; _C._fe_stats() gives the graph and break
# counts. Also runs under Python 3.12.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C
from compile_check_helpers import X, _np, check, same  # noqa: F401

pytestmark = pytest.mark.skipif(not hasattr(st, "compile"), reason="symtrace.compile is not built")


# ---------------- 1. layout and memory-format objects ----------------
def f_layout(x):
    if x.layout == st.strided:
        return x + 1, x.layout
    return x - 1, x.layout


def f_layout_ne(x):
    if x.layout != st.sparse_coo:
        return x * 2
    return x


def f_fmt(x, fmt):
    if fmt == st.channels_last:
        return x + 1, fmt
    return x - 1, fmt


def f_fmt_contig(x):
    if x.is_contiguous(memory_format=st.channels_last):
        return x + 1
    return x - 1


def test_layout_compare():
    check(f_layout, [(X(2, 3),)] * 3)
    check(f_layout_ne, [(X(2, 3),)] * 3)


def test_memory_format_compare_guarded():
    x = X(2, 3, 4, 5)
    # the format is guarded as a constant: another one traces anew
    check(f_fmt, [(x, st.channels_last)] * 3 + [(x, st.contiguous_format)] * 2 +
          [(x, st.channels_last)], graphs=2)


def test_is_contiguous_memory_format_branch():
    x = X(2, 3, 4, 5)
    xc = x.contiguous(memory_format=st.channels_last)
    check(f_fmt_contig, [(x,), (x,), (xc,), (xc,), (x,)], graphs=2)


def _fmt_fn(lib):
    def f(x, fmt):
        if x.layout == lib.strided and fmt == lib.channels_last:
            return x.contiguous(memory_format=fmt) + 1, fmt
        return x - 1, fmt
    return f


def test_layout_matches_torch():
    torch = pytest.importorskip("torch")
    x = X(2, 3, 4, 5)
    cf = st.compile(_fmt_fn(st))
    for name in ["channels_last", "contiguous_format", "channels_last"]:
        got = cf(x, getattr(st, name))
        ref = _fmt_fn(torch)(torch.tensor(x.numpy()), getattr(torch, name))
        np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), rtol=1e-6)
        assert got[1] is getattr(st, name) and ref[1] is getattr(torch, name)


# ---------------- 2. caught exceptions returned or stored ----------------
class CodeError(ValueError):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


def f_ret_keyerror(x):
    try:
        raise KeyError("k")
    except KeyError as e:
        return x + 1, e


def f_ret_code(x, n):
    try:
        if n > 1:
            raise CodeError("bad", n)
    except CodeError as e:
        return x * 2, e
    return x, None


def test_return_caught_exception():
    check(f_ret_keyerror, [(X(3),)] * 3)
    x = X(3)
    check(f_ret_code, [(x, 2), (x, 2), (x, 3), (x, 0), (x, 2)], graphs=2)   # n=0: no op


def test_returned_exception_is_new_each_call():
    cf = st.compile(f_ret_keyerror)
    st.reset()
    a, b = cf(X(3))[1], cf(X(3))[1]
    assert a is not b and type(a) is KeyError and a.args == ("k",)


def f_ret_shared(x):
    try:
        raise CodeError("s", 1)
    except CodeError as e:
        return x + 1, e, [e], {"e": e}


def test_returned_exception_identity():
    st.reset()
    cf = st.compile(f_ret_shared)
    for _ in range(3):
        r = cf(X(3))
        assert r[1] is r[2][0] is r[3]["e"]
        same(r[:2], f_ret_shared(X(3))[:2])
    s = _C._fe_stats()
    assert (s["graphs"], s["breaks"]) == (1, 0), s


ERRS = []


def f_store(x):
    try:
        raise CodeError("st", 7)
    except CodeError as e:
        ERRS.append(e)
        return x + e.code


def test_store_caught_exception():
    # the list's length is guarded: one graph per length, as for any append
    ERRS.clear()
    st.reset()
    cf = st.compile(f_store)
    got = [cf(X(3)) for _ in range(3)]
    compiled = list(ERRS)
    ERRS.clear()
    ref = [f_store(X(3)) for _ in range(3)]
    same(got, ref)
    assert len(compiled) == 3 and len(set(map(id, compiled))) == 3
    for a, b in zip(compiled, ERRS):
        same(a, b)
    assert _C._fe_stats()["breaks"] == 0


class Store:
    def __init__(self):
        self.errs = {}


def f_store_attr(x, box):
    try:
        raise CodeError("attr", 2)
    except CodeError as e:
        box.errs["last"] = e
        box.err = e
    return x * 3


def test_store_exception_in_object():
    st.reset()
    cf = st.compile(f_store_attr)
    for _ in range(3):
        b1, b2 = Store(), Store()
        same(cf(X(3), b1), f_store_attr(X(3), b2))
        same(b1.err, b2.err)
        assert b1.errs["last"] is b1.err
    s = _C._fe_stats()
    assert (s["graphs"], s["breaks"]) == (1, 0), s


def f_chain(x):
    try:
        try:
            raise KeyError("inner")
        except KeyError as e:
            raise CodeError("outer", 5) from e
    except CodeError as e2:
        return x - 1, e2


def f_context(x):
    try:
        try:
            raise KeyError("inner")
        except KeyError:
            raise IndexError("outer")
    except IndexError as e2:
        return x - 1, e2


@pytest.mark.parametrize("fn", [f_chain, f_context])
def test_returned_exception_cause_context(fn):
    check(fn, [(X(3),)] * 3)
    st.reset()
    cf = st.compile(fn)
    for _ in range(3):
        e, r = cf(X(3))[1], fn(X(3))[1]
        for attr in ("__cause__", "__context__"):
            a, b = getattr(e, attr), getattr(r, attr)
            assert type(a) is type(b) and (a is None or a.args == b.args)
        assert e.__suppress_context__ == r.__suppress_context__
        if r.__cause__ is not None:
            assert e.__cause__ is e.__context__


def test_returned_exception_matches_torch():
    torch = pytest.importorskip("torch")
    x = X(3)
    got = st.compile(f_ret_code)(x, 4)
    ref = f_ret_code(torch.tensor(x.numpy()), 4)
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), rtol=1e-6)
    same(got[1], ref[1])


# ---------------- 3. exceptions taking a tensor positional argument ----------------
class TErr(ValueError):
    def __init__(self, m, t):
        super().__init__(m)
        self.t = t


class TArgsErr(ValueError):
    def __init__(self, m, t):
        super().__init__(m, t)               # the tensor in .args


class TNoSuper(KeyError):
    def __init__(self, a, t):                # args = (a, t) from BaseException's new
        self.t = t


def f_terr(x):
    try:
        raise TErr("t", x * 2)
    except TErr as e:
        return e.t + 1


def f_terr_ret(x):
    try:
        raise TErr("t", x * 2)
    except TErr as e:
        return e.t + 1, e, e.args


def f_targs(x):
    try:
        raise TArgsErr("a", x - 1)
    except ValueError as e:
        return e.args[1] * 3, e.args[0], e


def f_tnosuper(x):
    try:
        raise TNoSuper("k", x * 2)
    except KeyError as e:
        return e.t + 1, e, e.args[1] is e.t


def f_builtin_targ(x):
    try:
        raise ValueError("m", x * 2)
    except ValueError as e:
        return e.args[1] + 1, e.args[0]


@pytest.mark.parametrize("fn", [f_terr, f_terr_ret, f_targs, f_tnosuper, f_builtin_targ])
def test_exception_tensor_positional(fn):
    check(fn, [(X(3),), (X(3, seed=1),), (X(3, seed=2),)])


def test_returned_exception_tensor_args_identity():
    st.reset()
    cf = st.compile(f_tnosuper)
    for seed in range(3):
        _, e, _ = cf(X(3, seed=seed))
        assert e.args[1] is e.t and e.args[0] == "k"
        np.testing.assert_allclose(e.t.numpy(), X(3, seed=seed).numpy() * 2, rtol=1e-6)


def test_exception_tensor_positional_matches_torch():
    torch = pytest.importorskip("torch")
    x = X(3)
    got = st.compile(f_targs)(x)
    ref = f_targs(torch.tensor(x.numpy()))
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(got[2].args[1].numpy(), ref[2].args[1].numpy(), rtol=1e-6)
    assert got[1] == ref[1] and type(got[2]) is type(ref[2])


def f_uncaught_targ(x):
    y = x * 3
    try:
        raise ValueError("m", y)
    except KeyError:
        return x


def test_uncaught_tensor_arg_raises_as_eager():
    st.reset()
    cf = st.compile(f_uncaught_targ)
    for _ in range(3):
        with pytest.raises(ValueError) as got:
            cf(X(3))
        assert got.value.args[0] == "m"
        np.testing.assert_allclose(got.value.args[1].numpy(), X(3).numpy() * 3, rtol=1e-6)


# ---------------- 4. the class of a caught exception ----------------
def f_class(x):
    try:
        raise TErr("t", x)
    except Exception as e:
        return (x + 1, isinstance(e, TErr), isinstance(e, (KeyError, ValueError)),
                e.__class__.__name__, type(e).__qualname__, e.__class__ is TErr,
                issubclass(type(e), ValueError))


def test_caught_exception_class():
    check(f_class, [(X(3),)] * 3)


# ---------------- 4b. exceptions made outside a handler ----------------
def f_made(x, n):
    e = CodeError("made, not raised", n)
    w = ValueError("w", 3)
    return x + 1, e, w


def f_raise_local(x):
    e = KeyError("k")
    try:
        raise e
    except KeyError as e2:
        return x + 1, e2 is e, e


def test_exception_made_outside_handler():
    x = X(3)
    check(f_made, [(x, 1), (x, 1), (x, 1)])
    check(f_raise_local, [(x,)] * 3)


def f_raise_stored(x, n):
    y = x * 2
    e = CodeError("bad", n)
    y = y + 1
    if n > 1:
        raise e
    return y


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:          # noqa: BLE001 - the exception is the result
        return type(e), e


def test_uncaught_exception_made_earlier():
    st.reset()
    cf = st.compile(f_raise_stored)
    for n in [2, 2, 0, 3, 0]:
        got, ref = _outcome(cf, X(3), n), _outcome(f_raise_stored, X(3), n)
        assert got[0] == ref[0]
        same(got[1], ref[1])
        if got[0] != "ok":
            assert got[1].__traceback__ is not None and got[1].__context__ is None


# ---------------- 4c. add_note / with_traceback(None) on a caught exception ----------------
def f_note(x):
    try:
        raise CodeError("c", 4)
    except CodeError as e:
        e.add_note("while adding")
        note = e.add_note
        note("again")
        return x + e.code, e, e.__notes__


def f_with_tb(x):
    try:
        raise KeyError("k")
    except KeyError as e:
        return x + 1, e.with_traceback(None)


def test_exception_add_note_with_traceback():
    check(f_note, [(X(3),)] * 3)
    st.reset()
    cf = st.compile(f_note)
    for _ in range(3):
        e = cf(X(3))[1]
        assert e.__notes__ == ["while adding", "again"]
    check(f_with_tb, [(X(3),)] * 3)
    assert st.compile(f_with_tb)(X(3))[1].__traceback__ is None
