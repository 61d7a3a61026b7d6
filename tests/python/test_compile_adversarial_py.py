# Adversarial Python-heavy programs for symtrace.compile, second hunt: nested
# containers of tensors in and out (pytrees, namedtuples, dataclasses), inputs
# mutated in place, containers whose length/keys/order change, *args/**kwargs
# forwarding through inlined layers, user classes with dunder methods, user
# context managers and decorators, generators resumed across graph breaks,
# itertools/functools, sorting by .item(), string formatting, match-case,
# exceptions from tensor ops caught inside, global registries, changing and
# dynamic shapes, 0-d/empty tensors, tensors as dict keys, Python scalars
# mixed with tensors, argument types changing, NaN/inf/-0.0 arguments. Each
# scenario is run eagerly and compiled, calling the function at least five
# times with changing inputs; every observation must be equal. No torch
# (runs under Python 3.12 too).
import bisect
import collections
import contextlib
import dataclasses
import functools
import io
import itertools
import math
import operator

import numpy as np
import pytest

import symtrace

pytestmark = pytest.mark.skipif(not hasattr(symtrace, "compile"), reason="symtrace.compile is not built")

SCENARIOS = []


def scenario(fn=None, *, backend="interp", dynamic=None):
    """scenario(fn) -> fn: registers fn(wrap) -> list of observations; wrap(f)
    returns f itself (eager run) or symtrace.compile(f) (compiled run)."""
    def deco(f):
        f.backend, f.dynamic = backend, dynamic
        SCENARIOS.append(f)
        return f
    return deco(fn) if fn is not None else deco


def T(*vals, dtype=np.float32):
    return symtrace.tensor(np.array(vals, dtype=dtype))


def R(*shape, seed=0):
    return symtrace.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def norm(v):
    """norm(v) -> a comparable, plain-Python form of an observation."""
    if isinstance(v, symtrace.Tensor):
        return ("T", str(v.dtype), tuple(v.shape), v.requires_grad, v.detach().numpy().copy())
    if isinstance(v, BaseException):
        return ("EXC", type(v).__name__, str(v))
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return (type(v).__name__, [norm(x) for x in v])
    if isinstance(v, (list, tuple, collections.deque)):
        return (type(v).__name__, [norm(x) for x in v])
    if isinstance(v, dict):
        return (type(v).__name__, [(norm(k), norm(x)) for k, x in v.items()])
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, norm(dataclasses.asdict(v)))
    if isinstance(v, (set, frozenset)):
        return (type(v).__name__, sorted(v))
    return v


def same(a, b, path="obs"):
    """same(a, b): asserts two normalised observations are equal."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype, path
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=path)
        assert np.array_equal(np.signbit(a), np.signbit(b)) or a.dtype.kind != "f", f"{path}: sign of zero"
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, type(a)) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and a != a:
        assert isinstance(b, float) and b != b, path
    elif isinstance(a, float):
        assert type(b) is float and math.isclose(a, b, rel_tol=1e-6) and math.copysign(1, a) == math.copysign(1, b), f"{path}: {a!r} != {b!r}"
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


def attempt(f, *args, **kwargs):
    """attempt(f, *args, **kwargs) -> f's result, or the exception it raised."""
    try:
        return f(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        return e


@contextlib.contextmanager
def captured(out):
    """captured(out): collects what is printed inside the block into list out."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        yield
    out.append(buf.getvalue())


# ============================================================ nested containers
@scenario
def dict_of_lists_of_tuples_in_and_out(wrap):
    def f(d):
        return {k: [(a * 2, b + 1) for a, b in v] for k, v in d.items()}
    f, out = wrap(f), []
    for i in range(5):
        d = {"a": [(R(2, seed=i), R(2, seed=i + 1))] * (1 + i % 2)}
        if i % 3 == 1:
            d["b"] = [(T(i), T(-i))]
        out.append(f(d))
    return out


Pair = collections.namedtuple("Pair", "lo hi")


@scenario
def namedtuple_output_field_types_change(wrap):
    def f(x, k):
        return Pair(x.min() * k, x.max() + k)
    f, out = wrap(f), []
    for i, k in enumerate((1, 2.5, True, 3, -1.0)):
        r = f(R(3, seed=i), k)
        out += [r, type(r).__name__, r._fields]
    return out


@dataclasses.dataclass(frozen=True)
class Stats:
    mean: object
    n: int
    tag: str = "s"


@scenario
def frozen_dataclass_built_inside(wrap):
    def f(x, tag):
        return Stats(x.mean(), x.numel(), tag=tag * 2)
    f, out = wrap(f), []
    for i in range(5):
        s = f(R(i + 1, seed=i), "ab"[i % 2])
        out += [s, isinstance(s, Stats), hash(s.tag)]
    return out


# ============================================================ inputs mutated in place
@scenario
def list_append_pop_insert_on_input(wrap):
    def f(lst, x):
        lst.append(x * 2)
        first = lst.pop(0)
        lst.insert(1, first + x)
        return len(lst), first
    f, out = wrap(f), []
    lst = [T(1), T(2)]
    for i in range(5):
        out.append(f(lst, T(i)))
        out.append(list(lst))
    return out


@scenario
def list_sort_in_place_keyed_by_item(wrap):
    def f(lst):
        lst.sort(key=lambda t: t.item())
        return lst[0] + lst[-1]
    f, out = wrap(f), []
    for i in range(5):
        rng = np.random.default_rng(i)
        lst = [T(float(v)) for v in rng.permutation(3 + i % 2)]
        out += [f(lst), lst]
    return out


@scenario
def sorted_by_item_returns_new_list(wrap):
    def f(ts):
        s = sorted(ts, key=lambda t: -t.item())
        return s, s[0] * 10
    f, out = wrap(f), []
    for i in range(5):
        ts = [T(float((j * 7 + i) % 5)) for j in range(4)]
        s, top = f(ts)
        out += [s, top, [any(a is b for b in ts) for a in s]]
    return out


@scenario
def slice_assignment_and_del_on_input(wrap):
    def f(lst, x):
        lst[1:3] = [x, x * 2, x * 3]
        del lst[0]
        del lst[-1:]
        return sum(t.sum() for t in lst)
    f, out = wrap(f), []
    for i in range(5):
        lst = [T(j) for j in range(i + 3)]
        out += [f(lst, T(i)), lst]
    return out


@scenario
def del_dict_key_and_reinsert_order(wrap):
    def f(d):
        v = d["a"]
        del d["a"]
        d["a"] = v * 2
        return list(d.keys()), d["a"]
    f, out = wrap(f), []
    for i in range(5):
        d = {"a": T(i), "b": T(1)} if i % 2 else {"b": T(1), "a": T(i), "c": T(2)}
        out += [f(d), d]
    return out


@scenario
def list_extend_with_itself_and_reverse(wrap):
    def f(lst):
        lst.extend(lst)
        lst.reverse()
        return lst[0] - lst[-1]
    f, out = wrap(f), []
    for i in range(5):
        lst = [T(j + i) for j in range(1 + i % 3)]
        out += [f(lst), lst]
    return out


# ============================================================ changing containers
@scenario
def list_length_changes_every_call(wrap):
    def f(ts):
        acc = ts[0]
        for t in ts[1:]:
            acc = acc * t
        return acc, len(ts)
    f, out = wrap(f), []
    for n in (1, 3, 2, 5, 1):
        out.append(f([T(j + 1.5) for j in range(n)]))
    return out


@scenario
def dict_keys_change_every_call(wrap):
    def f(d):
        return {k.upper(): v + len(k) for k, v in d.items() if not k.startswith("_")}
    f, out = wrap(f), []
    for keys in ("ab", "ba", "a_", "abc", "c"):
        d = {("_" if c == "_" else c * 2): T(i) for i, c in enumerate(keys)}
        out.append(f(d))
    return out


@scenario
def tuple_arity_changes(wrap):
    def f(t):
        a, *rest = t
        return a + sum(rest, T(0.0)), len(rest)
    f, out = wrap(f), []
    for n in (1, 2, 4, 2, 3):
        out.append(f(tuple(T(j) for j in range(n))))
    return out


# ============================================================ argument forwarding
def _l3(x, *args, scale=1.0, **kw):
    return x * scale + sum(args, T(0.0)) + sum(kw.values(), T(0.0))


def _l2(*args, **kwargs):
    return _l3(*args, **kwargs)


def _l1(x, *rest, bias=0, **kwargs):
    return _l2(x, *rest, **kwargs) + bias


@scenario
def args_kwargs_forwarded_through_three_layers(wrap):
    def f(x, *a, **k):
        return _l1(x, *a, **k)
    f, out = wrap(f), []
    calls = [((T(1),), {}), ((T(1), T(2)), {"scale": 2.0}), ((T(1),), {"bias": 3, "extra": T(4)}),
             ((T(1), T(2), T(3)), {"scale": -1.0, "z": T(1)}), ((T(1),), {"scale": 2.0})]
    for a, k in calls:
        out.append(f(*a, **k))
    return out


@scenario
def kwargs_dict_mutated_inside_is_a_copy(wrap):
    def f(x, **kw):
        kw["seen"] = True
        n = len(kw)
        kw.pop("a", None)
        return x + n, sorted(kw)
    f, out = wrap(f), []
    src = {"a": 1}
    for i in range(5):
        src["b%d" % i] = i
        out += [f(T(i), **src), dict(src)]
    return out


@scenario
def default_mutable_dict_memo(wrap):
    def f(x, key, memo={}):  # noqa: B006 - the shared default is the point
        if key not in memo:
            memo[key] = x * 2
        return memo[key] + x, len(memo)
    f, out = wrap(f), []
    for k in ("a", "b", "a", "c", "b"):
        out.append(f(T(len(k) + ord(k)), k))
    return out


@scenario
def functools_partial_with_kwargs_changing(wrap):
    def g(x, a, *, b=1):
        return x * a + b
    def f(p, x):
        return p(x)
    f, out = wrap(f), []
    for i in range(5):
        p = functools.partial(g, a=i) if i % 2 else functools.partial(g, a=2, b=i)
        out.append(f(p, T(1, 2)))
    return out


# ============================================================ user classes
class Slotted:
    __slots__ = ("w", "_b")

    def __init__(self, w, b):
        self.w, self._b = w, b

    @property
    def b(self):
        return self._b * 2

    @b.setter
    def b(self, v):
        self._b = v / 2


@scenario
def slots_with_property_getter_setter(wrap):
    def f(o, x):
        y = x * o.w + o.b
        o.b = y.sum()
        return y
    f, out = wrap(f), []
    o = Slotted(T(2), T(1))
    for i in range(5):
        out += [f(o, T(i)), o.b, o._b]
        if i == 2:
            o.w = 3.0
    return out


class Bag:
    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, i):
        return self.items[i]


@scenario
def container_protocol_object_as_input(wrap):
    def f(b):
        s = b[0] * len(b)
        for t in b:
            s = s + t
        return s, b[-1], b[1:] if len(b) > 1 else None
    f, out = wrap(f), []
    for n in (1, 2, 3, 2, 4):
        out.append(f(Bag(T(j) for j in range(n))))
    return out


class Key:
    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return isinstance(other, Key) and self.n % 3 == other.n % 3

    def __hash__(self):
        return self.n % 3


@scenario
def custom_eq_hash_objects_as_dict_keys(wrap):
    def f(table, k, x):
        if k in table:
            return table[k] + x
        table[k] = x
        return x * 0
    f, out = wrap(f), []
    table = {}
    for n in (1, 2, 4, 5, 7):
        out.append(f(table, Key(n), T(n)))
        out.append(sorted(k.n for k in table))
    return out


class Affine:
    def __init__(self, a, b):
        self.a, self.b = a, b
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return x * self.a + self.b


@scenario
def callable_object_state_changes(wrap):
    def f(fn, x):
        return fn(fn(x))
    f, out = wrap(f), []
    fn = Affine(2.0, T(1))
    for i in range(5):
        out += [f(fn, T(i)), fn.calls]
        fn.a = fn.a + 0.5 if i % 2 else fn.a
    return out


class Vec:
    def __init__(self, t):
        self.t = t

    def __add__(self, o):
        return Vec(self.t + (o.t if isinstance(o, Vec) else o))

    __radd__ = __add__

    def __mul__(self, k):
        return Vec(self.t * k)

    def __neg__(self):
        return Vec(-self.t)


@scenario
def operator_overloading_user_class(wrap):
    def f(a, b, k):
        return (-(a + b) * k + 1).t, (2 + a).t
    f, out = wrap(f), []
    for i in range(5):
        out.append(f(Vec(T(i)), Vec(R(1, seed=i)), (i, 0.5, True, -2, 1.5)[i]))
    return out


# ============================================================ context managers and decorators
class Recorder:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, et, ev, tb):
        self.log.append(("exit", et.__name__ if et else None))
        return et is KeyError


@scenario
def user_context_manager_swallows_keyerror(wrap):
    def f(x, d, log):
        y = x + 1
        with Recorder(log) as r:
            y = y * d["k"]
            r.log.append("body")
        return y
    f, out = wrap(f), []
    log = []
    for i in range(5):
        d = {"k": i} if i % 2 else {}
        out.append(attempt(f, T(i), d, log))
    out.append(log)
    return out


@contextlib.contextmanager
def _scaled(log, k):
    log.append(("in", k))
    try:
        yield k * 2
    finally:
        log.append(("out", k))


@scenario
def generator_context_manager_with_exception(wrap):
    def f(x, k, log):
        with _scaled(log, k) as s:
            if k == 2:
                return x.sum()
            y = x * s
            if k == 3:
                y = y + T(1, 2, 3)  # shape mismatch
        return y
    f, out = wrap(f), []
    log = []
    for k in (1, 2, 3, 4, 2):
        out.append(attempt(f, T(1, 2), k, log))
    out.append(log)
    return out


_CALLS = collections.Counter()


def counted(fn):
    @functools.wraps(fn)
    def inner(*a, **k):
        _CALLS[fn.__name__] += 1
        return fn(*a, **k)
    return inner


@counted
def _sq(x):
    return x * x


@counted
def _cube(x):
    return x * x * x


@scenario
def wraps_decorator_counting_calls(wrap):
    _CALLS.clear()
    def f(x, which):
        g = _sq if which else _cube
        return g(x) + _sq(x), g.__name__
    f, out = wrap(f), []
    for i in range(5):
        out.append(f(T(i), i % 2))
        out.append(dict(_CALLS))
    return out


# ============================================================ generators
@scenario
def generator_partly_consumed_then_resumed_after_break(wrap):
    def gen(x, n):
        for i in range(n):
            yield x * i
    def f(x, n):
        g = gen(x, n)
        a = next(g)
        k = int(a.sum().item()) + 1  # graph break
        rest = [t + k for t in g]
        return a, rest
    f, out = wrap(f), []
    for i in range(5):
        out.append(f(T(i, 1), 2 + i % 3))
    return out


@scenario
def genexpr_partly_consumed_by_next_then_sum(wrap):
    def f(ts):
        g = (t * 2 for t in ts if t.sum().item() > 0)
        first = next(g, None)
        return first, sum(g, T(0.0))
    f, out = wrap(f), []
    for i in range(5):
        out.append(f([T(float(j - i)) for j in range(4)]))
    return out


@scenario
def generator_send_protocol(wrap):
    def acc():
        total = None
        while True:
            v = yield total
            total = v if total is None else total + v
    def f(xs):
        g = acc()
        next(g)
        r = None
        for x in xs:
            r = g.send(x)
        g.close()
        return r
    f, out = wrap(f), []
    for n in (1, 3, 2, 4, 1):
        out.append(f([T(j, 1) for j in range(n)]))
    return out


@scenario
def generator_returning_value_through_yield_from(wrap):
    def inner(x, n):
        for i in range(n):
            yield x + i
        return n * 10
    def outer(x, n, log):
        r = yield from inner(x, n)
        log.append(r)
    def f(x, n, log):
        return list(outer(x, n, log))
    f, out = wrap(f), []
    log = []
    for n in (1, 2, 0, 3, 2):
        out.append(f(T(1), n, log))
    out.append(log)
    return out


# ============================================================ itertools / functools
@scenario
def itertools_chain_and_zip_longest(wrap):
    def f(a, b):
        z = [x + (y if y is not None else 100) for x, y in itertools.zip_longest(a, b)]
        return list(itertools.chain(z, b)), len(z)
    f, out = wrap(f), []
    for i in range(5):
        out.append(f([T(j) for j in range(i % 3 + 1)], [T(-j) for j in range((i + 1) % 3)]))
    return out


@scenario
def itertools_accumulate_product_groupby(wrap):
    def f(ts, ks):
        acc = list(itertools.accumulate(ts, operator.mul))
        pr = [a * b for a, b in itertools.product(ts[:2], ks)]
        groups = [(k, len(list(g))) for k, g in itertools.groupby(ks)]
        return acc, pr, groups
    f, out = wrap(f), []
    for i in range(5):
        ts = [T(j + 1.0 + i) for j in range(2 + i % 2)]
        ks = [1, 1, 2, 2, 2, 1][: 3 + i % 4]
        out.append(f(ts, ks))
    return out


@scenario
def functools_reduce_with_initial_and_lambda(wrap):
    def f(ts, init):
        return functools.reduce(lambda a, b: a * 0.5 + b, ts, init)
    f, out = wrap(f), []
    for i in range(5):
        init = T(1) if i % 2 else float(i)
        out.append(f([T(j) for j in range(i + 1)], init))
    return out


@scenario
def itertools_islice_and_pairwise_like(wrap):
    def f(ts, k):
        firsts = list(itertools.islice(ts, k))
        diffs = [b - a for a, b in zip(ts, ts[1:])]
        return firsts, diffs, list(itertools.starmap(operator.add, zip(ts, ts)))
    f, out = wrap(f), []
    for i in range(5):
        out.append(f([T(j * j) for j in range(2 + i)], i % 3))
    return out


# ============================================================ strings
@scenario
def fstrings_of_shapes_dtypes_and_values(wrap):
    def f(x, name):
        msg = f"{name}:{tuple(x.shape)}:{x.dtype}:{x.sum().item():.3f}:{x.dim()}"
        return msg, "x".join(str(s) for s in x.shape), "%s/%d" % (name, x.numel())
    f, out = wrap(f), []
    for i in range(5):
        out.append(f(R(*([2] * (i % 3 + 1)), seed=i), "n%d" % i))
    return out


@scenario
def print_tensors_and_shapes_inside(wrap):
    def f(x):
        print("shape", x.shape, "numel", x.numel())
        y = x * 2
        print(f"sum={y.sum().item():.2f}", end="|")
        print(y.shape[0], sep="-")
        return y
    f, out = wrap(f), []
    for i in range(5):
        with captured(out):
            out.append(f(R(i + 1, seed=i)))
    return out


@scenario
def string_argument_selects_op(wrap):
    def f(x, mode):
        if mode == "relu":
            return x.relu()
        elif mode.startswith("sig"):
            return x.sigmoid()
        return x * len(mode)
    f, out = wrap(f), []
    for m in ("relu", "sigmoid", "abc", "sig", "relu"):
        out.append(f(R(3, seed=len(m)), m))
    return out


# ============================================================ walrus, match
@scenario
def walrus_in_comprehension_and_condition(wrap):
    def f(ts):
        kept = [y for t in ts if (y := t * 2).sum().item() > 1]
        return kept, (n := len(kept)), n * 2
    f, out = wrap(f), []
    for i in range(5):
        out.append(f([T(j - i + 1.0) for j in range(4)]))
    return out


@scenario
def match_case_on_shape(wrap):
    def f(x):
        match tuple(x.shape):
            case (n,):
                return x * n
            case (1, m):
                return x.sum() + m
            case (n, m) if n == m:
                return x.t()
            case (n, *rest):
                return x.reshape(n, -1).sum(1), len(rest)
    f, out = wrap(f), []
    for shape in ((3,), (1, 4), (2, 2), (2, 3, 1), (5,)):
        out.append(f(R(*shape)))
    return out


@scenario
def match_case_on_types_and_dicts(wrap):
    def f(v):
        match v:
            case {"x": x, "k": int(k)}:
                return x * k
            case {"x": x}:
                return x + 1
            case [a, b]:
                return a - b
            case symtrace.Tensor():
                return v * 10
            case float() | int():
                return v * 2
    f, out = wrap(f), []
    for v in ({"x": T(1), "k": 3}, {"x": T(2), "k": 1.5}, [T(1), T(3)], T(4), 2.5, {"x": T(1), "k": 2}):
        out.append(f(v))
    return out


# ============================================================ exceptions
@scenario
def try_except_else_finally_shape_mismatch(wrap):
    def f(a, b, log):
        try:
            c = a + b
        except RuntimeError:
            log.append("mismatch")
            c = a.sum() + b.sum()
        else:
            log.append("ok")
            c = c * 2
        finally:
            log.append(tuple(a.shape))
        return c
    f, out = wrap(f), []
    log = []
    for n in (3, 2, 3, 1, 4):
        out.append(f(R(3, seed=n), R(n, seed=n + 1), log))
    out.append(log)
    return out


@scenario
def matmul_mismatch_caught_then_fallback(wrap):
    def f(a, b):
        try:
            return a @ b, "mm"
        except RuntimeError:
            return a @ b.t(), "mm_t"
    f, out = wrap(f), []
    for i, (m, k) in enumerate(((2, 3), (3, 3), (2, 4), (4, 2), (2, 3))):
        b = R(k if i % 2 == 0 else 3, 3, seed=i) if i % 2 == 0 else R(m, 3, seed=i)
        out.append(attempt(f, R(m, 3, seed=i), b))
    return out


class MyErr(Exception):
    pass


@scenario
def custom_exception_carrying_tensor_value(wrap):
    def f(x, log):
        try:
            if x.sum().item() > 2:
                raise MyErr(f"too big {x.sum().item():.1f}")
            return x * 2
        except MyErr as e:
            log.append(str(e))
            raise ValueError("wrapped") from e
    f, out = wrap(f), []
    log = []
    for i in range(5):
        r = attempt(f, T(i, 0.5), log)
        out += [r, type(getattr(r, "__cause__", None)).__name__]
    out.append(log)
    return out


@scenario
def uncaught_shape_error_leaves_earlier_side_effects(wrap):
    def f(xs, ys, log):
        log.append(len(xs))
        return [a * b for a, b in zip(xs, ys)]
    f, out = wrap(f), []
    log = []
    for i in range(5):
        ys = [R(2 if (i + j) % 3 else 3, seed=j) for j in range(2)]
        out.append(attempt(f, [R(2, seed=j) for j in range(2)], ys, log))
    out.append(log)
    return out


@scenario
def exception_in_finally_ordering(wrap):
    def f(x, log):
        try:
            try:
                return x.view(-1, 3)
            finally:
                log.append("inner")
        except RuntimeError as e:
            log.append("caught")
            return x.flatten()
    f, out = wrap(f), []
    log = []
    for n in (6, 4, 3, 5, 9):
        out.append(f(R(n, seed=n), log))
    out.append(log)
    return out


# ============================================================ globals / registries
_REGISTRY = {}
_COUNT = 0


def _register(name, val):
    global _COUNT
    _COUNT += 1
    _REGISTRY.setdefault(name, []).append(val)


@scenario
def global_registry_and_counter_mutated(wrap):
    global _COUNT
    _REGISTRY.clear()
    _COUNT = 0
    def f(x, name):
        y = x.exp()
        _register(name, y)
        return y * _COUNT
    f, out = wrap(f), []
    for i, n in enumerate("abacb"):
        out += [f(T(i), n), _COUNT, dict(_REGISTRY)]
    return out


@scenario
def global_counter_across_graph_break(wrap):
    global _COUNT
    _COUNT = 0
    def f(x):
        global _COUNT
        _COUNT += 1
        s = x.sum().item()
        _COUNT += int(s > 0)
        return x * _COUNT
    f, out = wrap(f), []
    for i in range(5):
        out += [f(T(i - 2.0)), _COUNT]
    return out


# ============================================================ shapes
@scenario
def shapes_change_every_call_static(wrap):
    def f(x):
        n, m = x.shape
        return (x @ x.t()).sum(1) / m + n, x.reshape(-1)[: n + 1]
    f, out = wrap(f), []
    for n, m in ((2, 3), (3, 2), (4, 4), (1, 5), (2, 3)):
        out.append(f(R(n, m, seed=n)))
    return out


def _dyn(f):
    return f


@scenario(dynamic=True)
def shapes_change_every_call_dynamic(wrap):
    def f(x, y):
        z = x.unsqueeze(1) * y
        return z.sum(0), z.shape, x.size(0) * 2, x.mean()
    f, out = wrap(f), []
    for n, m in ((3, 4), (5, 4), (7, 2), (2, 6), (9, 9)):
        out.append(f(R(n, seed=n), R(m, seed=m)))
    return out


@scenario
def zero_dim_vs_one_element_mixed(wrap):
    def f(a, b):
        c = a + b
        return c, c.dim(), a.item() + b.item(), float(a) * 2
    f, out = wrap(f), []
    pairs = [(symtrace.tensor(1.5), T(2)), (T(1.5), symtrace.tensor(2.0)), (symtrace.tensor(1.5), symtrace.tensor(2.0)),
             (T(1.5), T(2)), (symtrace.tensor(3.0), T(2))]
    for a, b in pairs:
        out.append(f(a, b))
    return out


@scenario
def empty_tensors_reductions_and_cat(wrap):
    def f(x, y):
        c = symtrace.cat([x, y])
        return c, c.sum(), c.numel(), x.sum(), len(x)
    f, out = wrap(f), []
    for n, m in ((0, 2), (2, 0), (0, 0), (1, 3), (0, 1)):
        out.append(f(R(n, seed=1), R(m, seed=2)))
    return out


@scenario
def empty_list_of_tensors_branch(wrap):
    def f(ts, x):
        if not ts:
            return x * 0
        return symtrace.stack(ts).sum(0) + x
    f, out = wrap(f), []
    for n in (0, 2, 0, 3, 1):
        out.append(f([T(j, j) for j in range(n)], T(1, 1)))
    return out


# ============================================================ tensors as keys, identity
@scenario
def returned_container_identity(wrap):
    def f(lst, d, x):
        lst.append(x)
        d["x"] = x
        return lst, d, (lst, d)
    f, out = wrap(f), []
    for i in range(5):
        lst, d = [T(i)] * (i % 2), {}
        r = f(lst, d, T(i))
        out += [r[0] is lst, r[1] is d, r[2][0] is lst, r[0][-1] is r[1]["x"], len(lst)]
    return out


@scenario
def new_containers_are_fresh_each_call(wrap):
    def f(x):
        return [x, x * 2], {"a": x}
    f, out = wrap(f), []
    prev = None
    for i in range(5):
        x = T(i)
        r = f(x)
        out += [r, r[0][0] is x, prev is not None and r[0] is prev[0], prev is not None and r[1] is prev[1]]
        prev = r
    return out


@scenario
def same_object_in_two_positions_of_a_list(wrap):
    def f(lst):
        lst[0].add_(1)
        return lst[1] * 1, lst[0] is lst[1]
    f, out = wrap(f), []
    for i in range(5):
        a = T(i)
        lst = [a, a] if i % 2 else [a, T(i)]
        out += [f(lst), lst]
    return out


# ============================================================ scalar mixing / changing types
@scenario
def python_scalar_and_zero_dim_arithmetic(wrap):
    def f(x, s):
        return 2 ** x + s, s * x - 1, x / s, x // 2, -s + x
    f, out = wrap(f), []
    for i, s in enumerate((2, 1.5, symtrace.tensor(3.0), True, symtrace.tensor(2))):
        out.append(f(T(i + 1.0, 2.0), s))
    return out


@scenario
def int_float_bool_argument_types_change(wrap):
    def f(x, k):
        return x * k, type(k).__name__, k / 2, k // 1, isinstance(k, bool), str(k)
    f, out = wrap(f), []
    for k in (1, 1.0, True, 2, 2.0, False, 0):
        out.append(f(T(3), k))
    return out


@scenario
def integer_tensor_with_python_float(wrap):
    def f(x, s):
        return x * s, x + s, x / 2, (x * s).dtype
    f, out = wrap(f), []
    for i, s in enumerate((2, 0.5, True, 3, -1.5)):
        out.append(f(T(1, 2, 3 + i, dtype=np.int64), s))
    return out


@scenario
def very_large_and_small_constants(wrap):
    def f(x, c):
        return x * c, x * 1e38 * 10, x * 1e-45, x + c - c
    f, out = wrap(f), []
    for c in (1e30, 1e-30, 3.4e38, 1e-44, 1.0):
        out.append(f(T(1, -2), c))
    return out


@scenario
def nan_and_inf_python_float_arguments(wrap):
    def f(x, c):
        y = x * c
        return y, c != c, c == float("inf"), x.clamp(max=c) if c == c else x, math.isnan(c)
    f, out = wrap(f), []
    for c in (float("nan"), 1.0, float("inf"), float("nan"), float("-inf"), 2.0):
        out.append(f(T(1, -2, 0), c))
    return out


@scenario
def negative_zero_argument(wrap):
    def f(x, c):
        return x * c, 1.0 / (c + 0.0) if c else math.copysign(1.0, c), math.copysign(1.0, c)
    f, out = wrap(f), []
    for c in (0.0, -0.0, 0.0, -0.0, 1.0):
        out.append(f(T(1, 2), c))
    return out


@scenario
def int_argument_huge_values(wrap):
    def f(x, n):
        return x + (n % 7), n.bit_length(), n // 3
    f, out = wrap(f), []
    for n in (1, 2 ** 40, -(2 ** 62), 2 ** 70, 5):
        out.append(f(T(1), n))
    return out


# ============================================================ misc python
@scenario
def collections_deque_and_defaultdict(wrap):
    def f(q, x, k):
        q.append(x)
        if len(q) > 3:
            q.popleft()
        dd = collections.defaultdict(list)
        for i, t in enumerate(q):
            dd[i % k].append(t)
        return {key: sum(v, T(0.0)) for key, v in dd.items()}
    f, out = wrap(f), []
    q = collections.deque()
    for i in range(6):
        out += [f(q, T(i), 1 + i % 2), list(q)]
    return out


@scenario
def bisect_on_item_values(wrap):
    def f(ts, x):
        keys = [t.item() for t in ts]
        i = bisect.bisect_left(keys, x.item())
        return i, ts[min(i, len(ts) - 1)] * x
    f, out = wrap(f), []
    ts = [T(1.0), T(3.0), T(5.0)]
    for v in (0.0, 2.0, 3.0, 9.0, 4.5):
        out.append(f(ts, T(v)))
    return out


@scenario
def math_functions_on_items(wrap):
    def f(x):
        s = x.abs().sum().item()
        return x / math.sqrt(s + 1), math.floor(s), round(s, 2), max(s, 1.5), divmod(int(s), 3)
    f, out = wrap(f), []
    for i in range(5):
        out.append(f(R(3, seed=i)))
    return out


@scenario
def set_of_shapes_and_frozenset(wrap):
    def f(ts):
        shapes = {tuple(t.shape) for t in ts}
        return len(shapes), frozenset(len(s) for s in shapes), [t * len(shapes) for t in ts]
    f, out = wrap(f), []
    for i in range(5):
        out.append(f([R(*((2,) * (1 + (i + j) % 2)), seed=j) for j in range(1 + i % 3)]))
    return out


@scenario
def isinstance_tensor_or_float_argument(wrap):
    def f(a, b):
        if isinstance(b, symtrace.Tensor):
            return a * b, "t"
        if isinstance(b, (list, tuple)):
            return a * len(b), "seq"
        return a + b, type(b).__name__
    f, out = wrap(f), []
    for b in (T(2), 2.0, [1, 2], T(3), (1,), 7):
        out.append(f(T(1, 2), b))
    return out


@scenario
def enumerate_zip_dict_items_reversed(wrap):
    def f(d, ws):
        return [(i, k, v * w) for i, ((k, v), w) in enumerate(zip(reversed(list(d.items())), ws))]
    f, out = wrap(f), []
    for i in range(5):
        d = {c: T(j) for j, c in enumerate("xyz"[: 1 + i % 3])}
        out.append(f(d, [T(2)] * (3 - i % 2)))
    return out


@scenario
def nested_function_default_captures_kwargs(wrap):
    def f(x, **kw):
        def inner(y, scale=kw.get("scale", 1), **more):
            return y * scale + sum(more.values(), 0)
        return inner(x, **{k: v for k, v in kw.items() if k != "scale"})
    f, out = wrap(f), []
    for kw in ({}, {"scale": 2}, {"a": 1, "scale": 3}, {"a": T(1)}, {"scale": 0.5, "b": 2}):
        out.append(f(T(1, 2), **kw))
    return out


@scenario
def recursion_over_nested_lists_depth_changes(wrap):
    def depth_sum(v, d=1):
        if isinstance(v, list):
            return sum((depth_sum(e, d + 1) for e in v), T(0.0))
        return v * d
    f, out = wrap(depth_sum), []
    trees = [[T(1)], [[T(1)]], [T(1), [T(2), [T(3)]]], [[[[T(1)]]]], [T(2), T(3)]]
    for t in trees:
        out.append(f(t))
    return out


@scenario
def method_returning_self_chain(wrap):
    class Builder:
        def __init__(self):
            self.ops = []

        def add(self, v):
            self.ops.append(("add", v))
            return self

        def mul(self, v):
            self.ops.append(("mul", v))
            return self

        def run(self, x):
            for op, v in self.ops:
                x = x + v if op == "add" else x * v
            return x
    def f(b, x, k):
        return b.add(k).mul(2).run(x)
    f, out = wrap(f), []
    b = Builder()
    for i in range(5):
        out += [f(b, T(i), i), len(b.ops)]
    return out


@scenario
def dataclass_input_mutated_and_replaced(wrap):
    @dataclasses.dataclass
    class Cfg:
        scale: float
        hist: list = dataclasses.field(default_factory=list)

    def f(cfg, x):
        y = x * cfg.scale
        cfg.hist.append(y.sum())
        cfg.scale += 1
        return y, dataclasses.replace(cfg, scale=0.0).scale
    f, out = wrap(f), []
    cfg = Cfg(1.0)
    for i in range(5):
        out += [f(cfg, T(i)), cfg.scale, list(cfg.hist)]
        if i == 2:
            cfg = Cfg(-1.0)
    return out


@scenario
def sum_of_python_and_tensor_start(wrap):
    def f(vals):
        return sum(vals), max(vals, key=lambda v: float(v)), min(range(len(vals)), key=lambda i: float(vals[i]))
    f, out = wrap(f), []
    for i in range(5):
        vals = [T(2.0), 1.0, 3, T(-1.0)][: 2 + i % 3] if i % 2 else [1, T(float(i))]
        out.append(f(vals))
    return out


@scenario
def lambda_list_built_and_applied(wrap):
    def f(x, n):
        fs = [lambda t, k=k: t * k for k in range(n)]
        fs.append(lambda t: t.neg())
        return [g(x) for g in fs]
    f, out = wrap(f), []
    for n in (0, 2, 1, 3, 2):
        out.append(f(T(n), n))
    return out


@scenario
def getattr_with_default_on_changing_objects(wrap):
    class O:
        pass
    def f(o, x):
        return x * getattr(o, "k", 1) + (o.b if hasattr(o, "b") else 0)
    f, out = wrap(f), []
    o = O()
    for i in range(6):
        if i == 1:
            o.k = 3
        if i == 3:
            o.b = T(10)
        if i == 4:
            del o.k
        out.append(f(o, T(i)))
    return out


@scenario(backend="llvm")
def llvm_pytree_and_in_place_list(wrap):
    def f(d, lst):
        lst.append(d["a"] * 2)
        return {"s": [t.sum() for t in lst], "n": (len(lst), d["b"] + 1)}
    f, out = wrap(f), []
    lst = []
    for i in range(5):
        out += [f({"a": R(3, seed=i), "b": T(i)}, lst), list(lst)]
    return out


@scenario(backend="llvm")
def llvm_scalar_types_change(wrap):
    def f(x, s):
        return (x * s).exp() - s * 1.0
    f, out = wrap(f), []
    for s in (1, 0.5, True, 2, -0.25):
        out.append(f(R(4, seed=1), s))
    return out


# ============================================================ the test
def _wrapper(sc):
    if sc.dynamic:
        return lambda f: symtrace.compile(f, backend=sc.backend, dynamic=True)
    return lambda f: symtrace.compile(f, backend=sc.backend)


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.__name__)
def test_compiled_matches_eager_on_every_call(sc):
    symtrace.reset()
    want = norm(sc(lambda f: f))
    symtrace.reset()
    got = norm(sc(_wrapper(sc)))
    symtrace.reset()
    assert symtrace.is_grad_enabled()
    same(got, want)


def test_enough_scenarios():
    assert len(SCENARIOS) >= 60
