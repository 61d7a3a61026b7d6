# Exceptions raised and caught inside a compiled frame (frontend/tr_except.c):
# raise / re-raise / raise ... from, except with classes and tuples, nested
# try, try/finally, a raise in an inlined helper caught by its caller, user
# exception classes, assert on Python values, an out-of-bounds index with
# static sizes, int() of a bad string. Each pattern is compiled, called 3+
# times (also with inputs that take the other branch) and compared with
# eager; _C._fe_stats() says how many graphs and breaks it took. Exceptions
# that leave the frame are raised by Python with eager's type and message.
# Torch (when installed) is the reference for the tensor results and the
# IndexError text. Also runs under Python 3.12 (.venv312, no torch).
import numpy as np
import pytest

import symtrace as st
from symtrace import _C
from compile_check_helpers import X, _np, check, same  # noqa: F401

pytestmark = pytest.mark.skipif(not hasattr(st, "compile"), reason="symtrace.compile is not built")


class MyError(Exception):
    pass


class MyKeyError(KeyError):
    pass


def raises_same(fn, args, calls=3):
    """fn raises from compiled code what it raises eagerly (type, message)."""
    st.reset()
    with pytest.raises(Exception) as eager:
        fn(*args)
    cf = st.compile(fn)
    for _ in range(calls):
        with pytest.raises(type(eager.value)) as got:
            cf(*args)
        assert type(got.value) is type(eager.value)
        assert str(got.value) == str(eager.value)
    return got.value


# ---------------- raise and catch in the frame ----------------
def f_keyerror(x):
    try:
        y = x + 1
        raise KeyError("k")
    except KeyError as e:
        y = y * 2
    return y


def test_raise_caught_one_graph():
    x = X(3, 2)
    check(f_keyerror, [(x,), (x,), (X(3, 2, seed=1),)])


def test_raise_caught_matches_torch():
    torch = pytest.importorskip("torch")
    x = X(3, 2)
    ref = f_keyerror(torch.tensor(x.numpy()))
    np.testing.assert_allclose(st.compile(f_keyerror)(x).numpy(), ref.numpy(), rtol=1e-6)


def f_branch(x, n):
    try:
        y = x + n
        if n > 1:
            raise ValueError("big")
        y = y - 1
    except ValueError:
        y = y * 3
    return y


def test_raise_on_one_branch_guards():
    x = X(4)
    # n decides whether it raises: each value has its own entry
    check(f_branch, [(x, 2), (x, 2), (x, 0), (x, 0), (x, 5)], graphs=3)


def f_class_raise(x):
    try:
        raise ValueError          # a class: instantiated
    except (KeyError, ValueError):
        return x - 1


def test_raise_class_and_tuple_of_classes():
    check(f_class_raise, [(X(2, 2),)] * 3)


def f_nested(x):
    try:
        try:
            y = x * 2
            raise IndexError("inner")
        except KeyError:
            y = y + 100          # not taken
        y = y + 1000             # not reached
    except IndexError as e:
        y = y + 1
    return y


def test_nested_try_inner_does_not_match():
    check(f_nested, [(X(3),)] * 3)


def f_reraise(x):
    try:
        try:
            raise ValueError("v")
        except ValueError:
            x = x + 1
            raise
    except ValueError:
        x = x * 2
    return x


def test_bare_reraise_caught_by_outer_try():
    check(f_reraise, [(X(3),)] * 3)


def f_finally(x):
    try:
        try:
            y = x + 1
            raise MyError("m")
        finally:
            y = y * 10           # runs on the exceptional path (then RERAISE)
    except MyError:
        y = y - 1
    return y


def test_try_finally_on_exceptional_path():
    check(f_finally, [(X(3),)] * 3)


def f_finally_normal(x):
    try:
        y = x + 1
    finally:
        y = y * 10
    return y


def test_try_finally_normal_path():
    check(f_finally_normal, [(X(3),)] * 3)


def f_user_class(x):
    try:
        raise MyKeyError("user", 3)
    except KeyError as e:
        if e.args[1] == 3:
            return x + 3
        return x


def test_user_exception_class():
    check(f_user_class, [(X(2),)] * 3)


def f_from(x):
    try:
        try:
            raise KeyError("a")
        except KeyError as e:
            raise ValueError("b") from e
    except ValueError as e2:
        ok = isinstance(e2.__cause__, KeyError) and e2.__suppress_context__
        return x + (1 if ok else 0)


def f_from_none(x):
    try:
        raise ValueError("b") from None
    except ValueError as e2:
        return x + (1 if e2.__cause__ is None and e2.__suppress_context__ else 0)


def f_context(x):
    try:
        try:
            raise KeyError("a")
        except KeyError:
            raise ValueError("b")
    except ValueError as e2:
        return x + (1 if isinstance(e2.__context__, KeyError) else 0)


@pytest.mark.parametrize("fn", [f_from, f_from_none, f_context])
def test_raise_from_and_context(fn):
    check(fn, [(X(2),)] * 3)


def helper_raises(x, n):
    if n > 2:
        raise MyError("too big")
    return x + n


def f_inlined(x, n):
    try:
        y = helper_raises(x, n)
    except MyError:
        y = x * 0
    return y


def test_raise_in_inlined_helper_caught_by_caller():
    x = X(3)
    check(f_inlined, [(x, 5), (x, 5), (x, 1), (x, 1)], graphs=2)


def helper_catches(x):
    try:
        raise KeyError("h")
    except KeyError:
        return x * 2


def f_inlined_own(x):
    return helper_catches(x) + 1


def test_raise_caught_inside_inlined_helper():
    check(f_inlined_own, [(X(3),)] * 3)


def f_return_in_handler(x):
    try:
        raise ValueError
    except ValueError:
        return x * 4
    finally:
        x = x + 1


def test_return_inside_handler_with_finally():
    check(f_return_in_handler, [(X(3),)] * 3)


def f_with_nograd(x):
    try:
        with st.no_grad():
            y = x * 2
            raise KeyError("in with")
    except KeyError:
        y = y + 1
    return y, st.is_grad_enabled()


def test_exception_leaving_a_grad_mode_block():
    check(f_with_nograd, [(X(3),)] * 3)
    assert st.is_grad_enabled()


# ---------------- assert ----------------
# compiled apart: pytest rewrites the asserts of this file
_NS = {"st": st}
exec(compile("""
def f_assert(x, n):
    try:
        assert n < 3, "n too big"
        y = x + n
    except AssertionError as e:
        y = x * 0 if str(e) == "n too big" else x
    return y

def f_assert_tensor(x):
    try:
        assert (x > 100).all(), "t"
    except AssertionError:
        return x - 1
    return x

def f_assert_escapes(x, n):
    try:
        assert n < 0, "bad n"
    except KeyError:
        pass
    return x
""", "<asserts>", "exec"), _NS)
f_assert, f_assert_tensor, f_assert_escapes = (_NS["f_assert"], _NS["f_assert_tensor"],
                                               _NS["f_assert_escapes"])


def test_assert_on_python_value_caught():
    x = X(3)
    check(f_assert, [(x, 5), (x, 5), (x, 1), (x, 1)], graphs=2)


def f_assert_tensor(x):
    try:
        assert (x > 100).all(), "t"
    except AssertionError:
        return x - 1
    return x


def test_tensor_assert_keeps_break():
    st.reset()
    cf = st.compile(f_assert_tensor)
    x = X(3)
    for _ in range(3):
        same(cf(x), f_assert_tensor(x))
    assert _C._fe_stats()["breaks"] >= 1


# ---------------- exceptions of traced operations ----------------
def f_index(x):
    try:
        return x[10]                  # 3 rows: IndexError
    except IndexError:
        return x * 0


def f_index_msg(x):
    try:
        return x[1, 7]
    except IndexError as e:
        return x + len(str(e))


def test_out_of_bounds_index_static_sizes():
    check(f_index, [(X(3, 2),), (X(3, 2, seed=1),), (X(3, 2),)])
    # more rows: in bounds now, a new entry (the size is guarded)
    st.reset()
    cf = st.compile(f_index)
    for x in (X(3, 2), X(3, 2), X(12, 2), X(12, 2), X(3, 2)):
        same(cf(x), f_index(x))
    check(f_index_msg, [(X(3, 2),)] * 3)


def test_out_of_bounds_message_matches_torch():
    torch = pytest.importorskip("torch")
    x = X(3, 2)
    ref = f_index_msg(torch.tensor(x.numpy()))
    np.testing.assert_allclose(st.compile(f_index_msg)(x).numpy(), ref.numpy(), rtol=1e-6)
    np.testing.assert_allclose(st.compile(f_index)(x).numpy(),
                               f_index(torch.tensor(x.numpy())).numpy())


def test_out_of_bounds_dynamic_shapes_keeps_break():
    st.reset()
    cf = st.compile(f_index, dynamic=True)
    for x in (X(3, 2), X(4, 2), X(12, 2)):
        same(cf(x), f_index(x))
    assert _C._fe_stats()["breaks"] >= 1


def f_int(x, s):
    try:
        n = int(s + "0")
    except ValueError:
        n = -1
    return x + n


def test_int_of_bad_string():
    x = X(3)
    check(f_int, [(x, "1"), (x, "1"), (x, "z"), (x, "z")], graphs=2)


def f_dict(x, d):
    try:
        w = d["w"]
    except KeyError as e:
        w = 0.5 if e.args[0] == "w" else 0.0
    return x * w


def f_dict_local(x, n):
    d = {"a": 1}
    if n > 0:
        d["w"] = 3
    try:
        return x * d["w"]
    except KeyError:
        return x - 1


def test_dict_key_error():
    x = X(3)
    # the key's absence is guarded: adding it later takes a new entry
    check(f_dict, [(x, {"v": 2.0}), (x, {"v": 2.0}), (x, {"w": 2.0}), (x, {"w": 2.0}),
                   (x, {"v": 2.0})], graphs=2)
    check(f_dict_local, [(x, 0), (x, 0), (x, 1), (x, 1)], graphs=2)


# ---------------- exceptions leaving the frame ----------------
def f_escape(x):
    y = x + 1
    raise MyError("escapes %d" % 3)


def f_escape_unmatched(x):
    try:
        y = x + 1
        raise KeyError("nope")
    except ValueError:
        return x
    return y


def helper_unmatched(x):
    try:
        raise MyError("deep")
    except KeyError:
        return x


def f_escape_from_helper(x):
    y = x * 2
    return helper_unmatched(y)


def f_escape_handler(x):
    try:
        raise KeyError("a")
    except KeyError:
        raise ValueError("from handler")


@pytest.mark.parametrize("fn", [f_escape, f_escape_unmatched, f_escape_from_helper,
                                f_escape_handler])
def test_exception_escaping_the_frame(fn):
    e = raises_same(fn, (X(3),))
    if fn is f_escape_handler:
        assert isinstance(e.__context__, KeyError)


def test_assert_escaping_the_frame():
    raises_same(f_assert_escapes, (X(3), 2))


def f_exc_info(x):
    import sys
    try:
        raise KeyError("a")
    except KeyError:
        t = sys.exc_info()[0]     # the translation keeps no real exc_info: a break
        return x + (1 if t is KeyError else 0)


def test_sys_exc_info_in_handler_breaks():
    st.reset()
    cf = st.compile(f_exc_info)
    x = X(3)
    for _ in range(3):
        same(cf(x), f_exc_info(x))
    assert _C._fe_stats()["breaks"] >= 1
