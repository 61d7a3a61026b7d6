# Adversarial programs for symtrace.compile across repeated calls: each
# scenario is ordinary user code run twice from scratch, once eagerly and
# once through symtrace.compile, calling the function at least four times
# while something it depends on changes between calls (globals, closure
# cells, defaults, module attributes and hooks, tensor metadata, containers,
# class and instance attributes, iterators, exceptions, RNG and grad modes,
# graph breaks in loops, try/finally, with-blocks, nested functions and
# methods). Every observation (results, mutated containers and attributes,
# printed output, raised exceptions) must be equal. No torch (runs under
# Python 3.12 too).
import collections
import contextlib
import dataclasses
import functools
import io

import numpy as np
import pytest

import symtrace
import symtrace.nn as nn
import symtrace.nn.functional as F

pytestmark = pytest.mark.skipif(not hasattr(symtrace, "compile"), reason="symtrace.compile is not built")

SCENARIOS = []


def scenario(fn=None, *, backend="interp"):
    """Registers a scenario: fn(wrap) -> list of observations; wrap(f)
    returns f itself (eager run) or symtrace.compile(f) (compiled run)."""
    def deco(f):
        f.backend = backend
        SCENARIOS.append(f)
        return f
    return deco(fn) if fn is not None else deco


def T(*vals, dtype=np.float32):
    return symtrace.tensor(np.array(vals, dtype=dtype))


def R(*shape, seed=0):
    return symtrace.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def norm(v):
    """A comparable, plain-Python form of an observation."""
    if isinstance(v, symtrace.Tensor):
        return ("T", str(v.dtype), tuple(v.shape), v.requires_grad, v.detach().numpy().copy())
    if isinstance(v, BaseException):
        return ("EXC", type(v).__name__, str(v))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [norm(x) for x in v])
    if isinstance(v, dict):
        return ("dict", [(k, norm(x)) for k, x in v.items()])
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, norm(dataclasses.asdict(v)))
    return v


def same(a, b, path="obs"):
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype, path
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=path)
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, type(a)) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and a != a:
        assert b != b, path
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


def attempt(f, *args, **kwargs):
    """f's result, or the exception it raised."""
    try:
        return f(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        return e


@contextlib.contextmanager
def captured(out):
    """Collects what is printed inside the block into the list out."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        yield
    out.append(buf.getvalue())


def _interp(f):
    return symtrace.compile(f, backend="interp")


def _llvm(f):
    return symtrace.compile(f)


# ====================================================================== globals
G_SCALE = 1.0


def _g_scale(x):
    return x * G_SCALE + 1


@scenario
def global_float_rebound_between_calls(wrap):
    global G_SCALE
    f, out, x = wrap(_g_scale), [], T(1, 2, 3)
    for v in (1.0, 2.0, -3.5, 2.0, 0.0):
        G_SCALE = v
        out.append(f(x))
    return out


G_TENSOR = None


def _g_tensor(x):
    return x + G_TENSOR


@scenario
def global_tensor_rebound_to_other_dtype_and_shape(wrap):
    global G_TENSOR
    f, out, x = wrap(_g_tensor), [], T(1, 2, 3)
    for g in (T(1, 1, 1), T(5, dtype=np.float64), T(1, 2, 3, dtype=np.int64), T(0.5, 0.5, 0.5),
              symtrace.tensor(np.float32(4.0))):
        G_TENSOR = g
        out.append(f(x))
    return out


def _g_shadow(x):
    return abs(x) + len([1, 2])


@scenario
def global_shadows_builtin_after_first_call(wrap):
    f, out, x = wrap(_g_shadow), [], T(-1, 2)
    out.append(f(x))
    globals()["abs"] = lambda t: t * 100
    try:
        out.append(f(x))
        globals()["len"] = lambda s: 7
        out.append(f(x))
    finally:
        globals().pop("abs", None)
        globals().pop("len", None)
    out.append(f(x))
    out.append(f(x))
    return out


G_MISSING = 3.0


def _g_missing(x):
    return x * G_MISSING


@scenario
def global_deleted_then_restored(wrap):
    global G_MISSING
    f, out, x = wrap(_g_missing), [], T(1, 2)
    G_MISSING = 3.0
    out.append(attempt(f, x))
    del G_MISSING
    out.append(attempt(f, x))
    out.append(attempt(f, x))
    G_MISSING = 5.0
    out.append(attempt(f, x))
    return out


G_LIST = []


def _g_list(x):
    for s in G_LIST:
        x = x * s
    return x


@scenario
def global_list_appended_and_mutated(wrap):
    f, out, x = wrap(_g_list), [], T(1, 2)
    G_LIST[:] = [2.0]
    out.append(f(x))
    G_LIST.append(3.0)
    out.append(f(x))
    G_LIST[0] = -1.0
    out.append(f(x))
    G_LIST.clear()
    out.append(f(x))
    G_LIST.extend([0.5, 0.5, 0.5])
    out.append(f(x))
    return out


G_DICT = {}


def _g_dict_order(x):
    return symtrace.stack([x * v for k, v in G_DICT.items()]), list(G_DICT)


@scenario
def global_dict_key_order_changes(wrap):
    f, out, x = wrap(_g_dict_order), [], T(1, 2)
    G_DICT.clear()
    G_DICT.update(a=1.0, b=2.0)
    out.append(f(x))
    del G_DICT["a"]
    G_DICT["a"] = 1.0  # same keys and values, other order
    out.append(f(x))
    G_DICT["c"] = 3.0
    out.append(f(x))
    G_DICT.pop("b")
    out.append(f(x))
    return out


G_COUNT = 0


def _g_write_break(x):
    global G_COUNT
    G_COUNT += 1
    s = x.sum().item()
    G_COUNT += int(s)
    return x * G_COUNT


@scenario
def global_written_before_and_after_item_break(wrap):
    global G_COUNT
    G_COUNT = 0
    f, out = wrap(_g_write_break), []
    for v in (1.0, 2.0, 1.0, 0.0, 3.0):
        out.append(f(T(v, 0)))
        out.append(G_COUNT)
    return out


G_FN = None


def _g_fn(x):
    return G_FN(x) * 2


@scenario
def global_function_rebound_to_lambda_builtin_and_module(wrap):
    global G_FN
    f, out, x = wrap(_g_fn), [], T(-1, 2)
    for g in (lambda t: t + 1, F.relu, nn.Tanh(), symtrace.abs, lambda t: t + 1, nn.Sigmoid()):
        G_FN = g
        out.append(f(x))
    return out


# ====================================================================== closures
@scenario
def nonlocal_counter_in_compiled_inner_function(wrap):
    n = 0

    def step(x):
        nonlocal n
        n += 1
        return x * n

    f, out, x = wrap(step), [], T(1, 2)
    for _ in range(4):
        out.append(f(x))
        out.append(n)
    n = 10
    out.append(f(x))
    out.append(n)
    return out


@scenario
def nonlocal_counter_across_print_break(wrap):
    n = 0
    out = []

    def step(x):
        nonlocal n
        n += 1
        print("step", n)
        n += 1
        return x * n

    f, x = wrap(step), T(1, 2)
    for _ in range(4):
        with captured(out):
            out.append(f(x))
        out.append(n)
    return out


@scenario
def closures_over_loop_variable_late_binding(wrap):
    def run(x, fns):
        return [g(x) for g in fns]

    f, out, x = wrap(run), [], T(1, 2)
    late = [lambda t: t * i for i in range(3)]
    early = [lambda t, i=i: t * i for i in range(3)]
    out.append(f(x, late))
    out.append(f(x, early))
    out.append(f(x, late[:2]))
    out.append(f(x, early[::-1]))
    return out


@scenario
def closure_cell_list_mutated_outside(wrap):
    weights = [1.0, 2.0]

    def g(x):
        return sum(x * w for w in weights)

    f, out, x = wrap(g), [], T(1, 2)
    out.append(f(x))
    weights.append(3.0)
    out.append(f(x))
    weights[0] = -5.0
    out.append(f(x))
    weights.pop()
    out.append(f(x))
    return out


@scenario
def closure_returned_from_compiled_call_sees_its_own_cell(wrap):
    def make(x, k):
        def inner(y):
            return y * k + x
        return inner, inner(x)

    f, out, x = wrap(make), [], T(1, 2)
    fns = []
    for k in (1.0, 2.0, 3.0, 4.0):
        g, r = f(x * k, k)
        fns.append(g)
        out.append(r)
    out.extend(g(x) for g in fns)
    return out


@scenario
def closure_made_per_call_item_break_in_inner(wrap):
    def outer(x, k):
        def inner(y):
            s = y.sum().item()
            return y * k + s
        return inner(x) + k

    f, out, x = wrap(outer), [], T(1, 2)
    for k in (1, 2, 3, 4, 2):
        out.append(f(x, k))
    return out


@scenario
def closure_cell_rebound_by_inner_in_a_loop(wrap):
    def outer(x):
        acc = x

        def add(v):
            nonlocal acc
            acc = acc + v

        for i in range(3):
            add(x * i)
        return acc

    f, out = wrap(outer), []
    for v in (1.0, 2.0, -1.0, 0.5):
        out.append(f(T(v, 1)))
    return out


# ====================================================================== defaults
@scenario
def mutable_default_list_grows_each_call(wrap):
    def fn(x, acc=[]):  # noqa: B006 - the shared default is the point
        acc.append(float(len(acc)))
        return x * len(acc), list(acc)

    f, out, x = wrap(fn), [], T(1, 2)
    for _ in range(4):
        out.append(f(x))
    out.append(f(x, [9.0]))
    out.append(f(x))
    return out


@scenario
def kwonly_default_replaced(wrap):
    def fn(x, *, k=2.0):
        return x * k

    f, out, x = wrap(fn), [], T(1, 2)
    out.append(f(x))
    fn.__kwdefaults__ = {"k": 5.0}
    out.append(f(x))
    fn.__kwdefaults__["k"] = -1.0
    out.append(f(x))
    out.append(f(x, k=3.0))
    return out


@scenario
def default_tensor_mutated_in_place(wrap):
    def fn(x, b=symtrace.zeros(2)):  # noqa: B008
        b.add_(1)
        return x + b

    f, out, x = wrap(fn), [], T(1, 2)
    for _ in range(4):
        out.append(f(x))
    out.append(fn.__defaults__[0])
    return out


# ====================================================================== modules
class _Lin(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.act = nn.ReLU()
        self.k = 1

    def forward(self, x):
        y = self.act(self.fc(x))
        for _ in range(self.k):
            y = y * 2
        return y


def _lin(seed=0):
    symtrace.manual_seed(seed)
    return _Lin()


@scenario
def forward_hook_added_then_removed(wrap):
    m = _lin()
    f, out, x = wrap(m), [], R(2, 3)
    out.append(f(x))
    h = m.register_forward_hook(lambda mod, inp, o: o + 100)
    out.append(f(x))
    out.append(f(x))
    h.remove()
    out.append(f(x))
    return out


@scenario
def forward_pre_hook_on_submodule_added_later(wrap):
    m = _lin()
    f, out, x = wrap(m), [], R(2, 3)
    out.append(f(x))
    h = m.fc.register_forward_pre_hook(lambda mod, inp: (inp[0] * 0,))
    out.append(f(x))
    h.remove()
    out.append(f(x))
    h2 = m.act.register_forward_hook(lambda mod, inp, o: -o)
    out.append(f(x))
    h2.remove()
    out.append(f(x))
    return out


@scenario
def hook_with_side_effect_counts_calls(wrap):
    m = _lin()
    seen = []
    m.fc.register_forward_hook(lambda mod, inp, o: seen.append(tuple(o.shape)))
    f, out = wrap(m), []
    for n in (1, 2, 2, 1):
        out.append(f(R(n, 3, seed=n)))
    out.append(seen)
    return out


@scenario
def module_int_attribute_loop_count_changes(wrap):
    m = _lin()
    f, out, x = wrap(m), [], R(2, 3)
    for k in (1, 3, 0, 2, 1):
        m.k = k
        out.append(f(x))
    return out


@scenario
def sequential_item_replaced(wrap):
    symtrace.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    f, out, x = wrap(m), [], R(2, 3)
    out.append(f(x))
    m[1] = nn.Tanh()
    out.append(f(x))
    m[1] = nn.Identity()
    out.append(f(x))
    m.append(nn.Sigmoid())
    out.append(f(x))
    del m[3]
    out.append(f(x))
    return out


@scenario
def parameter_replaced_same_shape(wrap):
    m = _lin()
    f, out, x = wrap(m), [], R(2, 3)
    out.append(f(x))
    m.fc.weight = nn.Parameter(symtrace.ones(2, 3))
    out.append(f(x))
    with symtrace.no_grad():
        m.fc.weight.mul_(-1)
    out.append(f(x))
    m.fc.bias = None
    out.append(f(x))
    return out


@scenario
def parameter_requires_grad_toggled_with_backward(wrap):
    m = _lin()

    def step(x):
        y = m(x).sum()
        y.backward()
        return y

    f, out, x = wrap(step), [], R(2, 3)
    for rg in (True, False, True, False):
        m.fc.weight.requires_grad_(rg)
        m.zero_grad()
        out.append(f(x))
        out.append(m.fc.weight.grad)
        out.append(m.fc.bias.grad)
    return out


class _OptBuf(nn.Module):
    def forward(self, x):
        extra = getattr(self, "extra", None)
        if extra is not None:
            x = x + extra
        return x * 2


@scenario
def optional_attribute_set_after_first_call(wrap):
    m = _OptBuf()
    f, out, x = wrap(m), [], T(1, 2)
    out.append(f(x))
    m.extra = 5.0
    out.append(f(x))
    m.extra = T(-1, -1)
    out.append(f(x))
    del m.extra
    out.append(f(x))
    return out


class _TrainCount(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.seen = []

    def forward(self, x):
        self.calls += 1
        if self.training:
            self.seen.append("train")
            return x * 2
        self.seen.append("eval")
        return x - 1


@scenario
def training_flag_toggled_with_attribute_side_effects(wrap):
    m = _TrainCount()
    f, out, x = wrap(m), [], T(1, 2)
    for tr in (True, False, False, True, False):
        m.train(tr)
        out.append(f(x))
    out.append(m.calls)
    out.append(m.seen)
    return out


# ====================================================================== tensor metadata
@scenario
def same_tensor_passed_twice_then_distinct(wrap):
    def fn(x, y):
        x.add_(1)
        return y * 2

    f, out = wrap(fn), []
    a, b = T(1, 2), T(5, 6)
    out.append(f(a, a))
    out.append(f(a, b))
    out.append(f(b, b))
    out.append(f(a, b))
    out.append(a)
    out.append(b)
    return out


@scenario
def view_vs_copy_input_written_in_place(wrap):
    def fn(x):
        x.mul_(2)
        return x + 1

    f, out = wrap(fn), []
    base = symtrace.arange(6.0).reshape(2, 3)
    out.append(f(base[0]))
    out.append(f(base[1].clone()))
    out.append(f(base[:, 1]))
    out.append(f(base.t()[2]))
    out.append(base)
    return out


@scenario
def zero_dim_vs_one_dim_input(wrap):
    def fn(x):
        if x.dim() == 0:
            return x * 10, x.shape
        return x.sum(), x.shape

    f, out = wrap(fn), []
    for v in (symtrace.tensor(2.0), T(2.0), T(1, 2), symtrace.tensor(3.0), T(4.0)):
        out.append(f(v))
    return out


@scenario
def int_then_float_then_bool_true_division(wrap):
    def fn(x):
        return x / 2, x // 2 if x.dtype != symtrace.bool else x

    f, out = wrap(fn), []
    for v in (T(3, 4, dtype=np.int64), T(3, 4), T(True, False, dtype=np.bool_),
              T(3, 4, dtype=np.int32), T(3, 4, dtype=np.float64)):
        out.append(f(v))
    return out


@scenario
def version_counter_reads_after_inplace(wrap):
    def fn(x):
        v0 = x._version
        x.add_(1)
        return x * 2, x._version - v0

    f, out, a = wrap(fn), [], T(1, 2)
    for _ in range(4):
        out.append(f(a))
    return out


@scenario
def requires_grad_toggled_on_input_with_backward(wrap):
    def fn(x, w):
        y = (x * w).sum()
        if y.requires_grad:
            y.backward()
        return y

    f, out = wrap(fn), []
    for rx, rw in ((True, False), (False, True), (True, True), (False, False), (True, False)):
        x = T(1, 2).requires_grad_(rx)
        w = T(3, 4).requires_grad_(rw)
        out.append(f(x, w))
        out.append((x.grad, w.grad))
    return out


@scenario
def non_contiguous_input_in_place_then_read(wrap):
    def fn(x):
        x[0] += 1
        return x.sum(0), x.is_contiguous()

    f, out = wrap(fn), []
    base = symtrace.arange(12.0).reshape(3, 4)
    for v in (base.t(), base, base[:, ::2], base.t().contiguous(), base[1:]):
        out.append(f(v))
    out.append(base)
    return out


# ====================================================================== containers
@scenario
def list_with_none_and_tensor_entries(wrap):
    def fn(xs):
        acc = 0
        for x in xs:
            if x is None:
                acc = acc + 1
            else:
                acc = acc + x
        return acc

    f, out = wrap(fn), []
    for xs in ([T(1, 2), None], [None, T(1, 2)], [None, None], [T(1, 2), T(3, 4), None], [T(1, 2), None]):
        out.append(f(xs))
    return out


@scenario
def nested_list_structure_changes(wrap):
    def fn(tree):
        if isinstance(tree, list):
            return sum(fn(t) for t in tree)
        return tree * 2

    f, out = wrap(fn), []
    a = T(1, 2)
    for tree in ([a, [a, a]], [[a], a], [a, [a, [a, [a]]]], [a], [[a, a], [a]]):
        out.append(f(tree))
    return out


@scenario
def list_popped_by_the_function(wrap):
    def fn(xs):
        x = xs.pop()
        return x * len(xs)

    f, out = wrap(fn), []
    xs = [T(1.0), T(2.0), T(3.0), T(4.0), T(5.0)]
    for _ in range(4):
        out.append(f(xs))
        out.append(len(xs))
    return out


@scenario
def dict_setdefault_and_update_side_effects(wrap):
    def fn(d, x):
        d.setdefault("n", 0)
        d["n"] += 1
        d.update(last=x * d["n"])
        return d["last"] + d.get("bias", 0)

    f, out, x = wrap(fn), [], T(1, 2)
    d = {}
    for i in range(4):
        if i == 2:
            d["bias"] = T(10, 10)
        out.append(f(d, x))
        out.append(dict(d))
    return out


@scenario
def dict_key_order_same_keys(wrap):
    def fn(d):
        return [k for k in d], symtrace.cat([v for v in d.values()])

    f, out = wrap(fn), []
    a, b = T(1), T(2)
    for d in ({"a": a, "b": b}, {"b": b, "a": a}, {"a": a, "b": b}, {"b": a, "a": b}):
        out.append(f(d))
    return out


@scenario
def tuple_mixed_int_tensor_entries(wrap):
    def fn(t):
        a, b = t
        return a * b + (a if isinstance(a, int) else 0)

    f, out = wrap(fn), []
    for t in ((2, T(1, 2)), (T(1, 2), 3), (T(1, 2), T(3, 4)), (5, T(1, 2)), (2.5, T(1, 2))):
        out.append(f(t))
    return out


# ====================================================================== classes and objects
class _Obj:
    scale = 2.0

    def __init__(self):
        self.bias = 1.0

    def apply(self, x):
        return x * self.scale + self.bias


class _GetAttr:
    def __init__(self):
        self.__dict__["misses"] = 0

    def __getattr__(self, name):
        self.__dict__["misses"] += 1
        return float(len(name))


@scenario
def getattr_fallback_with_side_effect(wrap):
    def fn(o, x):
        return x * o.abc + o.de

    f, out, x = wrap(fn), [], T(1, 2)
    o = _GetAttr()
    for i in range(4):
        if i == 2:
            o.abc = 10.0
        out.append(f(o, x))
        out.append(o.misses)
    return out


class _Prop:
    def __init__(self):
        self.reads = 0
        self._k = 1.0

    @property
    def k(self):
        self.reads += 1
        return self._k


@scenario
def property_getter_with_side_effect(wrap):
    def fn(o, x):
        return x * o.k + o.k

    f, out, x = wrap(fn), [], T(1, 2)
    o = _Prop()
    for v in (1.0, 2.0, 2.0, 3.0):
        o._k = v
        out.append(f(o, x))
        out.append(o.reads)
    return out


class _A:
    def val(self, x):
        return x + 1


class _B:
    def val(self, x):
        return x * 10


@scenario
def instance_class_swapped(wrap):
    def fn(o, x):
        return o.val(x)

    f, out, x = wrap(fn), [], T(1, 2)
    o = _A()
    out.append(f(o, x))
    o.__class__ = _B
    out.append(f(o, x))
    o.__class__ = _A
    out.append(f(o, x))
    out.append(f(_B(), x))
    return out


class _Slots:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


@scenario
def slots_object_fields_change_and_written(wrap):
    def fn(o, x):
        o.b = o.b + 1
        return x * o.a + o.b

    f, out, x = wrap(fn), [], T(1, 2)
    o = _Slots(2.0, 0)
    for a in (2.0, 3.0, 3.0, -1.0):
        o.a = a
        out.append(f(o, x))
        out.append((o.a, o.b))
    return out


# ====================================================================== dataclasses, namedtuples
Pair = collections.namedtuple("Pair", "x y")


@scenario
def namedtuple_in_and_out(wrap):
    def fn(p):
        return Pair(p.y * 2, p.x + 1)

    f, out = wrap(fn), []
    for p in (Pair(T(1, 2), T(3, 4)), Pair(T(1.0), T(3, 4)), Pair(T(1, 2), 5.0), Pair(T(0, 0), T(1, 1))):
        r = f(p)
        out.append(r)
        out.append(type(r).__name__)
    return out


@dataclasses.dataclass
class _State:
    step: int
    value: object


@scenario
def dataclass_mutated_inside(wrap):
    def fn(s, x):
        s.step += 1
        s.value = s.value * 0.5 + x
        return s.value.sum()

    f, out, x = wrap(fn), [], T(1, 2)
    s = _State(0, T(0, 0))
    for _ in range(4):
        out.append(f(s, x))
        out.append(s)
    return out


@scenario
def dataclass_returned(wrap):
    def fn(x, n):
        return _State(n, x * n)

    f, out, x = wrap(fn), [], T(1, 2)
    for n in (1, 2, 3, 1):
        out.append(f(x, n))
    return out


# ====================================================================== functools
@scenario
def partial_object_changes(wrap):
    def fn(g, x):
        return g(x)

    def scale(x, k=1.0, b=0.0):
        return x * k + b

    f, out, x = wrap(fn), [], T(1, 2)
    for g in (functools.partial(scale, k=2.0), functools.partial(scale, b=1.0),
              functools.partial(scale, k=2.0, b=3.0), functools.partial(scale, k=2.0)):
        out.append(f(g, x))
    return out


@scenario
def lru_cache_called_inside(wrap):
    calls = []

    @functools.lru_cache(maxsize=None)
    def coef(n):
        calls.append(n)
        return float(n * n)

    def fn(x, n):
        return x * coef(n)

    f, out, x = wrap(fn), [], T(1, 2)
    for n in (1, 2, 1, 3, 2):
        out.append(f(x, n))
    out.append(calls)
    return out


# ====================================================================== recursion
@scenario
def recursion_depth_from_argument(wrap):
    def rec(x, n):
        if n == 0:
            return x
        return rec(x * 2, n - 1) + 1

    f, out, x = wrap(rec), [], T(1, 2)
    for n in (0, 3, 1, 5, 3):
        out.append(f(x, n))
    return out


@scenario
def recursion_with_item_break(wrap):
    def rec(x, n):
        if n == 0 or x.sum().item() > 20:
            return x
        return rec(x * 2, n - 1)

    f, out = wrap(rec), []
    for v, n in ((1.0, 3), (4.0, 3), (0.5, 6), (30.0, 2)):
        out.append(f(T(v, v), n))
    return out


# ====================================================================== exceptions
@scenario
def raise_after_appending_to_outside_list(wrap):
    log = []

    def fn(x, k):
        log.append(k)
        if k < 0:
            raise ValueError(f"negative k {k}")
        return x * k

    f, out, x = wrap(fn), [], T(1, 2)
    for k in (1, -1, 2, -2, 3):
        out.append(attempt(f, x, k))
    out.append(log)
    return out


@scenario
def try_except_keyerror_inside(wrap):
    def fn(d, x):
        try:
            s = d["scale"]
        except KeyError:
            s = -1.0
        return x * s

    f, out, x = wrap(fn), [], T(1, 2)
    for d in ({"scale": 2.0}, {}, {"scale": 3.0}, {"other": 1}, {"scale": 2.0}):
        out.append(f(d, x))
    return out


@scenario
def exception_inside_no_grad_restores_grad_mode(wrap):
    def fn(x, bad):
        with symtrace.no_grad():
            y = x * 2
            if bad:
                raise RuntimeError("bad")
        return y + x

    f, out = wrap(fn), []
    for bad in (False, True, False, True, False):
        x = T(1, 2).requires_grad_()
        out.append(attempt(f, x, bad))
        out.append(symtrace.is_grad_enabled())
    return out


@scenario
def try_finally_with_item_break(wrap):
    log = []

    def fn(x):
        try:
            log.append("enter")
            v = x.sum().item()
            if v > 2:
                raise ValueError("big")
            return x * v
        finally:
            log.append("finally")

    f, out = wrap(fn), []
    for v in (1.0, 3.0, 0.5, 5.0):
        out.append(attempt(f, T(v, 0)))
    out.append(log)
    return out


@scenario
def data_dependent_raise_after_side_effect(wrap):
    box = {"n": 0}

    def fn(x):
        box["n"] += 1
        if (x < 0).any():
            raise ValueError("negative input")
        box["n"] += 10
        return x.sqrt()

    f, out = wrap(fn), []
    for v in (T(1, 4), T(-1, 4), T(9, 16), T(0, -2)):
        out.append(attempt(f, v))
        out.append(box["n"])
    return out


@scenario
def shape_error_raised_like_eager(wrap):
    def fn(x, y):
        return x + y

    f, out = wrap(fn), []
    for y in (T(1, 2), T(1, 2, 3), T(5.0), symtrace.ones(3, 1)):
        r = attempt(f, T(1, 2), y)
        out.append(type(r).__name__ if isinstance(r, Exception) else r)
    return out


# ====================================================================== RNG and grad modes
@scenario
def rng_state_advances_like_eager(wrap):
    def fn(x):
        return x + symtrace.rand(2)

    f, out, x = wrap(fn), [], T(1, 2)
    symtrace.manual_seed(123)
    for _ in range(3):
        out.append(f(x))
    out.append(symtrace.rand(1))
    symtrace.manual_seed(123)
    out.append(f(x))
    out.append(symtrace.rand(1))
    return out


@scenario
def dropout_train_eval_and_seeds(wrap):
    m = nn.Dropout(0.5)
    f, out, x = wrap(m), [], symtrace.ones(8)
    for seed, tr in ((1, True), (2, True), (1, False), (1, True), (3, True)):
        symtrace.manual_seed(seed)
        m.train(tr)
        out.append(f(x))
    return out


@scenario
def grad_mode_toggled_outside(wrap):
    def fn(x, w):
        return (x * w).sum()

    f, out = wrap(fn), []
    w = T(1, 2).requires_grad_()
    for mode in ("grad", "no_grad", "inference", "grad", "set_false"):
        ctx = {"grad": contextlib.nullcontext, "no_grad": symtrace.no_grad,
               "inference": symtrace.inference_mode,
               "set_false": lambda: symtrace.set_grad_enabled(False)}[mode]
        with ctx():
            y = f(T(3, 4), w)
        out.append(y)
        out.append(y.requires_grad)
    return out


@scenario
def set_grad_enabled_from_argument_inside(wrap):
    def fn(x, flag):
        with symtrace.set_grad_enabled(flag):
            y = x * 2
        return y, y.requires_grad, symtrace.is_grad_enabled()

    f, out = wrap(fn), []
    for flag in (True, False, False, True):
        out.append(f(T(1, 2).requires_grad_(), flag))
    return out


@scenario
def enable_grad_inside_no_grad_with_break(wrap):
    def fn(x):
        with symtrace.no_grad():
            a = x * 2
            with symtrace.enable_grad():
                b = x * 3
                print("inside")
            c = b * 2
        return a, b, c, a.requires_grad, b.requires_grad, c.requires_grad

    f, out = wrap(fn), []
    for rg in (True, False, True, True):
        with captured(out):
            out.append(f(T(1, 2).requires_grad_(rg)))
    return out


@scenario
def autocast_toggled_between_calls(wrap):
    def fn(x, w):
        return x @ w

    f, out = wrap(fn), []
    x, w = R(2, 3), R(3, 2, seed=1)
    for on in (False, True, False, True):
        with symtrace.autocast("cpu", dtype=symtrace.bfloat16, enabled=on):
            out.append(f(x, w).float())
        out.append(f(x, w).dtype == symtrace.float32)
    return out


# ====================================================================== breaks in odd places
@scenario
def print_inside_loop(wrap):
    def fn(x, n):
        for i in range(n):
            x = x + i
            print("i", i, tuple(x.shape))
        return x

    f, out = wrap(fn), []
    for n in (2, 3, 0, 2):
        with captured(out):
            out.append(f(T(1, 2), n))
    return out


@scenario
def item_driving_python_range(wrap):
    def fn(x):
        n = int(x.sum().item())
        acc = x
        for _ in range(n):
            acc = acc * 2
        return acc, n

    f, out = wrap(fn), []
    for v in (1.0, 3.0, 0.0, 2.0, 1.0):
        out.append(f(T(v)))
    return out


@scenario
def tolist_then_python_arithmetic(wrap):
    def fn(x):
        vals = x.tolist()
        m = max(vals)
        return x * m, vals

    f, out = wrap(fn), []
    for v in (T(1, 2), T(5, -1), T(1, 2, 3), T(0.5, 0.25)):
        out.append(f(v))
    return out


@scenario
def data_dependent_while_loop(wrap):
    def fn(x):
        steps = 0
        while bool((x > 1).any()):
            x = x / 2
            steps += 1
        return x, steps

    f, out = wrap(fn), []
    for v in (T(1, 2), T(8, 1), T(0.5, 0.1), T(100, 3)):
        out.append(f(v))
    return out


@scenario
def break_inside_user_context_manager(wrap):
    log = []

    class Ctx:
        def __enter__(self):
            log.append("enter")
            return self

        def __exit__(self, *exc):
            log.append("exit")
            return False

    def fn(x):
        with Ctx():
            y = x * 2
            if y.sum() > 3:
                y = y + 1
        return y

    f, out = wrap(fn), []
    for v in (T(1, 1), T(2, 2), T(0, 0), T(3, 3)):
        out.append(f(v))
    out.append(log)
    return out


@scenario
def break_inside_nested_function_writing_nonlocal(wrap):
    def fn(x):
        hits = []

        def visit(t):
            if t.sum() > 0:
                hits.append("pos")
                return t
            hits.append("neg")
            return -t

        return visit(x) + visit(x - 5), hits

    f, out = wrap(fn), []
    for v in (T(1, 1), T(-1, -1), T(10, 10), T(1, 1)):
        out.append(f(v))
    return out


class _Stateful(nn.Module):
    def __init__(self):
        super().__init__()
        self.log = []
        self.total = 0.0

    def forward(self, x):
        self.log.append("pre")
        s = x.sum().item()
        self.total += s
        self.log.append(f"post {s:.1f}")
        return x * self.total


@scenario
def method_writes_attributes_around_item_break(wrap):
    m = _Stateful()
    f, out = wrap(m), []
    for v in (1.0, 2.0, -1.0, 0.5):
        out.append(f(T(v, 0)))
        out.append(m.total)
    out.append(m.log)
    return out


@scenario
def break_inside_list_comprehension(wrap):
    def fn(xs):
        return [x * 2 if x.sum() > 0 else x - 1 for x in xs]

    f, out = wrap(fn), []
    for xs in ([T(1), T(-1)], [T(-1), T(1), T(2)], [T(3)], [T(-2), T(-3)]):
        out.append(f(xs))
    return out


@scenario
def break_inside_generator_consumed_by_compiled_fn(wrap):
    log = []

    def gen(x, n):
        for i in range(n):
            log.append(i)
            if x.sum() > i:
                yield x * i
            else:
                yield x

    def fn(x, n):
        return sum(gen(x, n))

    f, out = wrap(fn), []
    for v, n in ((1.0, 3), (5.0, 2), (0.0, 4), (2.0, 3)):
        out.append(f(T(v, v), n))
    out.append(log)
    return out


@scenario
def iterator_passed_in_consumed_across_break(wrap):
    def fn(it):
        a = next(it)
        print("got", a.tolist())
        b = next(it)
        return a + b

    f, out = wrap(fn), []
    for n in (3, 2, 4, 5):
        it = iter([T(float(i)) for i in range(n)])
        with captured(out):
            out.append(f(it))
        out.append([t.tolist() for t in it])
    return out


@scenario
def early_return_after_item(wrap):
    def fn(x, log):
        log.append("start")
        if x.max().item() > 1:
            log.append("early")
            return x
        log.append("late")
        return x * 10

    f, out, log = wrap(fn), [], []
    for v in (T(2, 0), T(0, 0), T(5, 1), T(0.5, 1)):
        out.append(f(v, log))
    out.append(log)
    return out


@scenario
def deleted_local_across_break(wrap):
    def fn(x, keep):
        tmp = x * 2
        if not keep:
            del tmp
        print("mid")
        try:
            return tmp + 1
        except UnboundLocalError:
            return x - 1

    f, out = wrap(fn), []
    for keep in (True, False, True, False):
        with captured(out):
            out.append(f(T(1, 2), keep))
    return out


@scenario
def walrus_and_match_with_break(wrap):
    def fn(x, mode):
        match mode:
            case "double":
                y = x * 2
            case ("shift", k):
                y = x + k
            case _:
                y = x
        if (s := y.sum()) > 3:
            y = y - s
        return y

    f, out, x = wrap(fn), [], T(1, 2)
    for mode in ("double", ("shift", 1), None, ("shift", -5), "double"):
        out.append(f(x, mode))
    return out


@scenario
def super_call_in_method_with_break(wrap):
    class Base(nn.Module):
        def forward(self, x):
            return x + 1

    class Child(Base):
        def __init__(self):
            super().__init__()
            self.scale = 2.0

        def forward(self, x):
            y = super().forward(x)
            if y.sum() > 0:
                y = y * self.scale
            return super().forward(y)

    m = Child()
    f, out = wrap(m), []
    for v, s in ((1.0, 2.0), (-5.0, 2.0), (1.0, 3.0), (-5.0, 0.5)):
        m.scale = s
        out.append(f(T(v, v)))
    return out


@scenario
def star_args_call_across_break(wrap):
    def g(*xs, scale=1.0):
        return sum(xs) * scale

    def fn(xs, kw):
        first = xs[0].sum().item()
        return g(*xs, **kw) + first

    f, out = wrap(fn), []
    for xs, kw in (([T(1), T(2)], {}), ([T(1)], {"scale": 2.0}), ([T(1), T(2), T(3)], {"scale": 0.5}),
                   ([T(4), T(2)], {})):
        out.append(f(xs, kw))
    return out


@scenario
def assert_on_tensor_value(wrap):
    def fn(x):
        assert (x >= 0).all(), "negative"
        return x.sqrt()

    f, out = wrap(fn), []
    for v in (T(1, 4), T(-1, 4), T(9, 0), T(4, -1)):
        r = attempt(f, v)
        out.append(r)
    return out


@scenario
def fstring_formatting_of_shapes_and_values(wrap):
    def fn(x, tag):
        msg = f"{tag}:{tuple(x.shape)}:{x.dtype}"
        print(msg)
        return x + len(msg)

    f, out = wrap(fn), []
    for x, tag in ((T(1, 2), "a"), (T(1, 2, 3), "bb"), (T(1, 2, dtype=np.float64), "a"), (T(1, 2), "ccc")):
        with captured(out):
            out.append(f(x, tag))
    return out


@scenario
def generator_function_compiled_directly(wrap):
    def gen(x):
        yield x * 2
        yield x + 1

    def fn(x):
        return list(gen(x))

    f, out = wrap(fn), []
    for v in (T(1, 2), T(3.0), T(1, 2), T(-1, -1)):
        out.append(f(v))
    return out


@scenario
def break_in_loop_with_module_state(wrap):
    symtrace.manual_seed(0)
    m = nn.Linear(2, 2)

    def fn(x, n):
        hist = []
        for _ in range(n):
            x = m(x)
            hist.append(x.norm().item())
        return x, hist

    f, out = wrap(fn), []
    for n in (1, 3, 2, 1):
        with symtrace.no_grad():
            m.weight.mul_(0.9)
        out.append(f(T(1, 2), n))
    return out


# ====================================================================== batch 2: identity, code, constants
@scenario
def returned_input_objects_keep_identity(wrap):
    def fn(x, xs, d):
        xs.append(x * 2)
        d["n"] = len(xs)
        return x, xs, d

    f, out = wrap(fn), []
    xs, d = [], {}
    for v in (1.0, 2.0, 3.0, 4.0):
        x = T(v)
        r = f(x, xs, d)
        out.append((r[0] is x, r[1] is xs, r[2] is d, len(xs), d["n"]))
    out.append(xs)
    return out


@scenario
def function_code_replaced_between_calls(wrap):
    def fn(x):
        return x + 1

    def other(x):
        return x * 10

    f, out, x = wrap(fn), [], T(1, 2)
    out.append(f(x))
    code = fn.__code__
    fn.__code__ = other.__code__
    out.append(f(x))
    out.append(f(x))
    fn.__code__ = code
    out.append(f(x))
    return out


@scenario
def same_code_other_globals(wrap):
    import types

    def fn(x):
        return x * K  # noqa: F821 - K lives in the globals given below

    out, x = [], T(1, 2)
    fa = types.FunctionType(fn.__code__, {"K": 2.0})
    fb = types.FunctionType(fn.__code__, {"K": -3.0})
    ca, cb = wrap(fa), wrap(fb)
    for g in (ca, cb, ca, cb):
        out.append(g(x))
    fa.__globals__["K"] = 7.0
    out.append(ca(x))
    out.append(cb(x))
    return out


@scenario
def user_module_object_attribute_changes(wrap):
    import types
    cfg = types.ModuleType("cfg_adv")
    cfg.SCALE, cfg.ACT = 2.0, "relu"

    def fn(x):
        y = x * cfg.SCALE
        return F.relu(y) if cfg.ACT == "relu" else y.tanh()

    f, out, x = wrap(fn), [], T(-1, 2)
    for sc, act in ((2.0, "relu"), (3.0, "relu"), (3.0, "tanh"), (2.0, "relu")):
        cfg.SCALE, cfg.ACT = sc, act
        out.append(f(x))
    return out


@scenario
def tensor_built_from_python_list_argument(wrap):
    def fn(x, vals):
        return x + symtrace.tensor(vals), symtrace.full((2,), vals[0])

    f, out, x = wrap(fn), [], T(1, 2)
    for vals in ([1.0, 2.0], [3.0, -1.0], [1.0, 2.0], [0.5, 0.5]):
        out.append(f(x, vals))
    return out


@scenario
def arange_length_from_argument(wrap):
    def fn(n, k):
        return symtrace.arange(n) * k, x_len(n)

    def x_len(n):
        return list(range(n))

    f, out = wrap(fn), []
    for n, k in ((3, 1), (5, 2), (3, 2), (1, 1), (0, 3)):
        out.append(f(n, k))
    return out


@scenario
def closure_tensor_mutated_in_place_and_through_numpy(wrap):
    w = T(1, 2)

    def fn(x):
        return x * w

    f, out, x = wrap(fn), [], T(3, 4)
    out.append(f(x))
    w.add_(1)
    out.append(f(x))
    w.numpy()[:] = [-1, -2]
    out.append(f(x))
    with symtrace.no_grad():
        w.copy_(T(0.5, 0.5))
    out.append(f(x))
    return out


@scenario
def numpy_view_written_across_a_break(wrap):
    def fn(x):
        y = x * 2
        a = x.numpy()
        a[0] = 100.0
        return y + x

    f, out = wrap(fn), []
    for v in (1.0, 2.0, 3.0, 4.0):
        x = T(v, v)
        out.append(f(x))
        out.append(x)
    return out


@scenario
def module_converted_to_double_after_first_call(wrap):
    m = _lin()
    f, out = wrap(m), []
    out.append(f(R(2, 3)))
    m.double()
    out.append(f(R(2, 3).double()))
    out.append(f(R(2, 3, seed=1).double()))
    m.float()
    out.append(f(R(2, 3)))
    return out


class _SelfToggle(nn.Module):
    def forward(self, x):
        self.train(not self.training)
        if self.training:
            return x * 2
        return x - 1


@scenario
def module_toggles_its_own_training_flag(wrap):
    m = _SelfToggle()
    f, out, x = wrap(m), [], T(1, 2)
    for _ in range(5):
        out.append(f(x))
        out.append(m.training)
    return out


@scenario
def module_dict_insertion_order_changes(wrap):
    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Identity(), "b": nn.Tanh()})

        def forward(self, x):
            return [k for k in self.heads], symtrace.stack([h(x) for h in self.heads.values()])

    m = Heads()
    f, out, x = wrap(m), [], T(-1, 2)
    out.append(f(x))
    m.heads["c"] = nn.ReLU()
    out.append(f(x))
    del m.heads["a"]
    out.append(f(x))
    m.heads["a"] = nn.Sigmoid()
    out.append(f(x))
    return out


@scenario
def tensor_hook_registered_inside_with_side_effect(wrap):
    seen = []

    def fn(x, k):
        y = x * k
        y.register_hook(lambda g: seen.append(g.sum().item()))
        return (y * y).sum()

    f, out = wrap(fn), []
    for k in (1.0, 2.0, 3.0, 2.0):
        x = T(1, 2).requires_grad_()
        l = f(x, k)
        l.backward()
        out.append((l, x.grad))
    out.append(seen)
    return out


@scenario
def no_grad_region_inside_with_backward(wrap):
    def fn(x, w):
        with symtrace.no_grad():
            a = x * w
        b = a * w + x
        b.sum().backward()
        return b

    f, out = wrap(fn), []
    for v in (1.0, 2.0, -1.0, 0.5):
        x, w = T(v, 2).requires_grad_(), T(3, v).requires_grad_()
        out.append(f(x, w))
        out.append((x.grad, w.grad))
    return out


@scenario
def inference_mode_inside_then_outside_use(wrap):
    def fn(x, on):
        with symtrace.inference_mode(on):
            y = x * 2
        return y, symtrace.is_inference_mode_enabled(), y.requires_grad

    f, out = wrap(fn), []
    for on in (True, False, True, False):
        out.append(f(T(1, 2).requires_grad_(), on))
    return out


@scenario
def manual_seed_inside_compiled(wrap):
    def fn(x, seed):
        symtrace.manual_seed(seed)
        a = symtrace.rand(2)
        b = symtrace.randn(2)
        return x + a + b

    f, out, x = wrap(fn), [], T(1, 2)
    for seed in (1, 2, 1, 7):
        out.append(f(x, seed))
        out.append(symtrace.rand(1))
    return out


@scenario
def rng_state_saved_and_restored_inside(wrap):
    def fn(x):
        st = symtrace.get_rng_state()
        a = symtrace.rand(3)
        symtrace.set_rng_state(st)
        b = symtrace.rand(3)
        return x + a - b, a

    f, out, x = wrap(fn), [], T(1, 2, 3)
    symtrace.manual_seed(5)
    for _ in range(4):
        out.append(f(x))
    out.append(symtrace.rand(1))
    return out


@scenario
def rand_in_loop_with_break(wrap):
    def fn(x, n):
        for _ in range(n):
            x = x + symtrace.rand(2)
            if x.sum() > 3:
                x = x - 1
        return x

    f, out = wrap(fn), []
    symtrace.manual_seed(11)
    for n in (1, 3, 2, 4):
        out.append(f(T(1, 1), n))
    out.append(symtrace.rand(1))
    return out


# ====================================================================== batch 2: exceptions and control flow
@scenario
def exception_from_inlined_callee_caught_by_caller(wrap):
    def check(x, limit):
        if limit < 0:
            raise ValueError("limit")
        return x.clamp(max=limit)

    def fn(x, limit):
        try:
            return check(x, limit)
        except ValueError as e:
            return x * 0 + len(str(e))

    f, out, x = wrap(fn), [], T(1, 5)
    for lim in (2, -1, 3, -2, 2):
        out.append(f(x, lim))
    return out


@scenario
def suppressing_context_manager(wrap):
    log = []

    class Suppress:
        def __enter__(self):
            return self

        def __exit__(self, et, ev, tb):
            log.append(et.__name__ if et else None)
            return et is ZeroDivisionError

    def fn(x, d):
        y = x
        with Suppress():
            y = x * (1 / d)
        return y

    f, out, x = wrap(fn), [], T(1, 2)
    for d in (1, 0, 2, 0, 4):
        out.append(f(x, d))
    out.append(log)
    return out


@scenario
def finally_return_overrides(wrap):
    def fn(x, bad):
        try:
            if bad:
                raise KeyError("k")
            return x * 2
        finally:
            return x + 100  # noqa: B012 - overriding on purpose

    f, out, x = wrap(fn), [], T(1, 2)
    for bad in (False, True, False, True):
        out.append(f(x, bad))
    return out


@scenario
def exception_raised_after_item_break_caught(wrap):
    def fn(x):
        try:
            v = x.sum().item()
            if v < 0:
                raise ArithmeticError(f"neg {v}")
            r = x / v
        except ArithmeticError as e:
            r = x * 0 - 1
            print("caught", e)
        return r

    f, out = wrap(fn), []
    for v in (T(1, 2), T(-3, 1), T(4, 4), T(-1, -1)):
        with captured(out):
            out.append(f(v))
    return out


@scenario
def raise_from_chaining(wrap):
    def fn(x, k):
        try:
            return {"a": x}[k] * 2
        except KeyError as e:
            raise ValueError(f"no {k}") from e

    f, out, x = wrap(fn), [], T(1, 2)
    for k in ("a", "b", "a", "c"):
        r = attempt(f, x, k)
        out.append(r)
        out.append(type(getattr(r, "__cause__", None)).__name__)
    return out


@scenario
def for_else_and_continue_with_break(wrap):
    def fn(xs):
        acc = 0
        for x in xs:
            if x.sum() < 0:
                continue
            acc = acc + x
            if x.sum() > 10:
                break
        else:
            acc = acc * 100
        return acc

    f, out = wrap(fn), []
    for xs in ([T(1), T(-1), T(2)], [T(20), T(1)], [T(-1)], [T(3), T(30), T(1)]):
        out.append(f(xs))
    return out


@scenario
def while_true_with_item_break(wrap):
    def fn(x):
        n = 0
        while True:
            x = x * 0.5
            n += 1
            if x.max().item() < 1:
                break
        return x, n

    f, out = wrap(fn), []
    for v in (T(4, 1), T(0.5), T(100, 3), T(2, 2)):
        out.append(f(v))
    return out


@scenario
def mutual_recursion(wrap):
    def even(x, n):
        return x if n == 0 else odd(x + 1, n - 1)

    def odd(x, n):
        return x * -1 if n == 0 else even(x * 2, n - 1)

    f, out, x = wrap(even), [], T(1, 2)
    for n in (0, 1, 4, 3, 1):
        out.append(f(x, n))
    return out


@scenario
def reduce_and_itertools_over_tensors(wrap):
    import itertools
    import operator

    def fn(xs, ys):
        a = functools.reduce(operator.add, xs)
        b = list(itertools.accumulate(ys, operator.mul))
        c = list(itertools.chain(xs, ys))
        return a, b, len(c)

    f, out = wrap(fn), []
    for n, m in ((2, 2), (3, 1), (1, 3), (2, 2)):
        out.append(f([T(float(i)) for i in range(1, n + 1)], [T(float(i)) for i in range(2, m + 2)]))
    return out


@scenario
def itemgetter_attrgetter_and_sorted_key(wrap):
    import operator

    def fn(items, key):
        xs = sorted(items, key=operator.itemgetter(key))
        return [x[2] * 2 for x in xs]

    f, out = wrap(fn), []
    a, b, c = (1, 3, T(1.0)), (2, 1, T(2.0)), (3, 2, T(3.0))
    for items, key in (([a, b, c], 0), ([a, b, c], 1), ([c, a], 1), ([b, c, a], 0)):
        out.append(f(items, key))
    return out


@scenario
def callable_object_call_replaced_on_class(wrap):
    class Scaler:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x * self.k

    def fn(g, x):
        return g(x)

    f, out, x = wrap(fn), [], T(1, 2)
    out.append(f(Scaler(2.0), x))
    out.append(f(Scaler(3.0), x))
    s = Scaler(4.0)
    out.append(f(s, x))
    s.k = -1.0
    out.append(f(s, x))
    return out


@scenario
def classmethod_and_staticmethod_with_changing_class_state(wrap):
    class Cfg:
        base = 1.0

        @classmethod
        def scale(cls, x):
            return x * cls.base

        @staticmethod
        def shift(x, k):
            return x + k

    def fn(x, k):
        return Cfg.shift(Cfg.scale(x), k)

    f, out, x = wrap(fn), [], T(1, 2)
    for base, k in ((1.0, 0), (2.0, 0), (2.0, 3), (-1.0, 1)):
        Cfg.base = base
        out.append(f(x, k))
    return out


@scenario
def namedtuple_replace_and_int_field(wrap):
    Cfg = collections.namedtuple("Cfg", "scale steps")

    def fn(x, c):
        for _ in range(c.steps):
            x = x * c.scale
        c2 = c._replace(steps=c.steps + 1)
        return x, c2

    f, out, x = wrap(fn), [], T(1, 2)
    for c in (Cfg(2.0, 1), Cfg(2.0, 3), Cfg(0.5, 2), Cfg(2.0, 1)):
        out.append(f(x, c))
    return out


@scenario
def list_vs_tuple_input_isinstance(wrap):
    def fn(xs):
        if isinstance(xs, tuple):
            return xs[0] * 2
        if isinstance(xs, list):
            xs.append(xs[0])
            return xs[0] + len(xs)
        return xs

    f, out = wrap(fn), []
    lst = [T(1.0)]
    for v in ((T(1.0),), lst, T(5.0), lst, (T(2.0), T(3.0))):
        out.append(f(v))
    out.append(len(lst))
    return out


@scenario
def shape_compared_to_list_argument(wrap):
    def fn(x, want):
        if list(x.shape) == want:
            return x.sum()
        return x.reshape(want).sum(0)

    f, out = wrap(fn), []
    for shape, want in (((2, 3), [2, 3]), ((2, 3), [3, 2]), ((6,), [2, 3]), ((2, 3), [6]), ((3, 2), [3, 2])):
        out.append(f(symtrace.arange(6.0).reshape(shape), want))
    return out


@scenario
def kwargs_forwarding_with_changing_keys(wrap):
    def inner(x, scale=1.0, shift=0.0, *, power=1):
        return (x * scale + shift) ** power

    def fn(x, **kw):
        return inner(x, **kw)

    f, out, x = wrap(fn), [], T(1, 2)
    for kw in ({}, {"scale": 2.0}, {"power": 2, "shift": 1.0}, {"shift": 1.0, "power": 2}, {"scale": 2.0}):
        out.append(f(x, **kw))
    r = attempt(f, x, bogus=1)
    out.append(type(r).__name__)
    return out


@scenario
def lambda_default_captures_tensor(wrap):
    def make(w):
        return lambda x, w=w: x * w

    def fn(g, x):
        return g(x)

    f, out, x = wrap(fn), [], T(1, 2)
    w = T(2, 2)
    g = make(w)
    out.append(f(g, x))
    w.mul_(3)
    out.append(f(g, x))
    out.append(f(make(T(-1, 1)), x))
    out.append(f(g, x))
    return out


@scenario
def print_in_except_block_of_method(wrap):
    class Net(nn.Module):
        def forward(self, x, key):
            table = {"a": 1.0}
            try:
                k = table[key]
            except KeyError:
                print("missing", key)
                k = -1.0
            return x * k

    m = Net()
    f, out, x = wrap(m), [], T(1, 2)
    for key in ("a", "b", "a", "c"):
        with captured(out):
            out.append(f(x, key))
    return out


@scenario
def generator_across_break_yields_side_effects(wrap):
    log = []

    def gen(xs):
        for x in xs:
            log.append("yield")
            yield x * 2

    def fn(xs):
        g = gen(xs)
        first = next(g)
        print("first", first.tolist())
        return first + sum(g)

    f, out = wrap(fn), []
    for n in (2, 3, 1, 2):
        with captured(out):
            out.append(f([T(float(i)) for i in range(n)]))
    out.append(log)
    return out


@scenario
def nested_closure_cells_three_levels_per_call(wrap):
    def fn(x, a):
        def l1(b):
            def l2(c):
                return x * a + b * c
            return l2
        return l1(a + 1)(a * 2)

    f, out, x = wrap(fn), [], T(1, 2)
    for a in (1.0, 2.0, -1.0, 1.0):
        out.append(f(x, a))
    return out


@scenario
def closures_created_in_loop_inside_compiled(wrap):
    def fn(x, n):
        fs = []
        for i in range(n):
            fs.append(lambda t, i=i: t + i)
        late = [lambda t: t * j for j in range(n)]
        return [g(x) for g in fs], [g(x) for g in late]

    f, out, x = wrap(fn), [], T(1, 2)
    for n in (1, 3, 2, 3):
        out.append(f(x, n))
    return out


@scenario
def dict_deleted_and_reinserted_by_function(wrap):
    def fn(d, x):
        v = d.pop("a", None)
        if v is not None:
            d["a"] = v * 2
        d["b"] = x
        return list(d.keys())

    f, out, x = wrap(fn), [], T(1, 2)
    d = {"a": T(1.0), "b": T(0.0)}
    for i in range(4):
        if i == 2:
            del d["a"]
        out.append(f(d, x))
        out.append(dict(d))
    return out


@scenario
def bool_of_zero_dim_in_python_and(wrap):
    def fn(x, flag):
        if flag and x.sum() > 0:
            return x * 2
        return x - 1

    f, out = wrap(fn), []
    for v, flag in ((T(1), True), (T(-1), True), (T(1), False), (T(2), True), (T(-2), False)):
        out.append(f(v, flag))
    return out


@scenario
def zero_dim_argument_used_as_python_scalar(wrap):
    def fn(x, s):
        return x * float(s) + int(s)

    f, out, x = wrap(fn), [], T(1, 2)
    for s in (symtrace.tensor(2.0), symtrace.tensor(3.5), symtrace.tensor(-1.0), 2, 2.5):
        out.append(f(x, s))
    return out


# ====================================================================== batch 3: classes, functions and attributes
class _Tab:
    table = {"a": 1.0}


@scenario
def class_level_dict_item_mutated(wrap):
    def fn(x):
        return x * _Tab.table["a"]

    f, out, x = wrap(fn), [], T(1, 2)
    for v in (1.0, 4.0, 4.0, -1.0, 1.0):
        _Tab.table["a"] = v
        out.append(f(x))
    _Tab.table["a"] = 1.0
    return out


class _GetAttrModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.vals = {"k": 2.0}

    def __getattr__(self, n):
        vals = self.__dict__.get("vals", {})
        if n in vals:
            return vals[n]
        return super().__getattr__(n)

    def forward(self, x):
        return x * self.k


@scenario
def module_getattr_override_reads_changing_dict(wrap):
    m = _GetAttrModule()
    f, out, x = wrap(m), [], T(1, 2)
    for v in (2.0, 5.0, 5.0, -1.0):
        m.vals["k"] = v
        out.append(f(x))
    return out


@scenario
def setattr_with_name_from_argument(wrap):
    o = _Slots(1.0, 2.0)

    def fn(x, name, v):
        setattr(o, name, v)
        return x * o.a + o.b

    f, out, x = wrap(fn), [], T(1, 2)
    for name, v in (("a", 3.0), ("b", 5.0), ("a", 3.0), ("b", 1.0)):
        out.append(f(x, name, v))
        out.append((o.a, o.b))
    return out


@scenario
def vars_of_object_grows_and_shrinks(wrap):
    class O:
        pass

    def fn(x, o):
        return x * len(vars(o)) + sum(v for v in vars(o).values())

    f, out, x = wrap(fn), [], T(1, 2)
    o = O()
    o.a = 1.0
    out.append(f(x, o))
    o.b = 2.0
    out.append(f(x, o))
    out.append(f(x, o))
    del o.a
    out.append(f(x, o))
    return out


@scenario
def attribute_deleted_inside(wrap):
    class O:
        pass

    def fn(x, o):
        r = x * o.a
        del o.a
        return r, hasattr(o, "a")

    f, out, x = wrap(fn), [], T(1, 2)
    for v in (2.0, 3.0, 2.0, 1.0):
        o = O()
        o.a = v
        out.append(f(x, o))
        out.append(sorted(vars(o)))
    return out


@scenario
def comprehension_variable_shadows_outer_with_break(wrap):
    def fn(x, xs):
        i = 100
        ys = [x * i if x.sum() > 0 else x for i in xs]
        return sum(ys) + i

    f, out = wrap(fn), []
    for v, xs in ((1.0, [1.0, 2.0]), (-1.0, [1.0]), (1.0, [3.0, 1.0, 2.0]), (1.0, [1.0, 2.0])):
        out.append(f(T(v, v), xs))
    return out


def _scaled_by_attr(x):
    return x * _scaled_by_attr.k


_scaled_by_attr.k = 2.0


@scenario
def function_attribute_changed(wrap):
    def fn(x):
        return _scaled_by_attr(x)

    f, out, x = wrap(fn), [], T(1, 2)
    for k in (2.0, 5.0, 5.0, -1.0):
        _scaled_by_attr.k = k
        out.append(f(x))
    _scaled_by_attr.k = 2.0
    return out


def _make_cell():
    k = 2.0

    def get(x):
        return x * k

    def set_(v):
        nonlocal k
        k = v
    return get, set_


_CELL_GET, _CELL_SET = _make_cell()


@scenario
def inlined_global_closure_cell_set_from_outside(wrap):
    def fn(x):
        return _CELL_GET(x) + 1

    f, out, x = wrap(fn), [], T(1, 2)
    for k in (2.0, 5.0, 5.0, -1.0, 2.0):
        _CELL_SET(k)
        out.append(f(x))
    return out


class _SM:
    @staticmethod
    def f(x):
        return x + 1


@scenario
def staticmethod_replaced_on_class(wrap):
    orig = _SM.__dict__["f"]

    def fn(x):
        return _SM.f(x)

    f, out, x = wrap(fn), [], T(1, 2)
    out.append(f(x))
    _SM.f = staticmethod(lambda x: x * 9)
    try:
        out.append(f(x))
        out.append(f(x))
    finally:
        _SM.f = orig
    out.append(f(x))
    return out


# ====================================================================== a few on llvm
@scenario(backend="llvm")
def llvm_global_and_training_flag(wrap):
    global G_SCALE
    m = _lin(3)
    f, out, x = wrap(m), [], R(4, 3)
    for tr, k in ((True, 1), (False, 2), (True, 2), (False, 0)):
        m.train(tr)
        m.k = k
        out.append(f(x))
    return out


@scenario(backend="llvm")
def llvm_inplace_on_aliased_args(wrap):
    def fn(x, y):
        x.mul_(2)
        y.add_(1)
        return x + y

    f, out = wrap(fn), []
    a, b = T(1, 2), T(3, 4)
    for p in ((a, b), (a, a), (b, a), (b, b)):
        out.append(f(*p))
        out.append((a, b))
    return out


@scenario(backend="llvm")
def llvm_item_break_with_grad(wrap):
    symtrace.manual_seed(1)
    m = nn.Linear(3, 1)

    def step(x):
        y = m(x).sum()
        if y.item() > 0:
            y = y * 2
        y.backward()
        return y

    f, out = wrap(step), []
    for s in range(4):
        m.zero_grad()
        out.append(f(R(2, 3, seed=s)))
        out.append((m.weight.grad, m.bias.grad))
    return out


# ====================================================================== the test
@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.__name__)
def test_compiled_matches_eager_on_every_call(sc):
    symtrace.reset()
    want = norm(sc(lambda f: f))
    symtrace.reset()
    got = norm(sc(_llvm if sc.backend == "llvm" else _interp))
    symtrace.reset()
    assert symtrace.is_grad_enabled()
    same(got, want)
