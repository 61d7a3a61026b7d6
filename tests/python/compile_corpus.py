"""compile_corpus.py: the corpus of small functions for symtrace.compile
(issue 6). Not a test file itself: test_compile_corpus.py runs every entry
compiled and eagerly and compares.

Each entry is a Case: name, fn (a plain function or a symtrace Module),
make_args(seed=0) -> Args (fresh, deterministic for a seed: numpy's
generator, never symtrace's own random state), group (the feature of issue
6 it covers), full (True: expected to capture the whole frame into one
entry, no break), break_kw (for an expected break: a regex the break
reason must match, case-insensitive), break_line (the line of this file
where the break happens: the line marked `# BREAK:<case name>`), llvm
(in the small llvm subset that SYMTRACE_CORPUS_LLVM=subset runs; by
default every case runs on llvm), reset (a function run before each call,
for cases with side effects on outside objects: those are captured, the
effects recorded and replayed on every call, issue 7).

No torch here: the corpus runs under Python 3.12 too (.venv312 has no
torch). Every function is ordinary Python against symtrace's API.
"""
import functools
import inspect
import math
import operator

import numpy as np

import symtrace
import symtrace.nn as nn
import symtrace.nn.functional as F

CASES = []


class Args:
    """Positional and keyword arguments of one call."""
    __slots__ = ("args", "kwargs")

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class Case:
    __slots__ = ("name", "fn", "_mk", "group", "full", "break_kw", "break_line", "llvm",
                 "reset", "seed_base")

    def __init__(self, name, fn, mk, group, full, break_kw, llvm, reset, seed_base):
        self.name, self.fn, self._mk, self.group = name, fn, mk, group
        self.full, self.break_kw, self.llvm, self.reset = full, break_kw, llvm, reset
        self.seed_base = seed_base
        self.break_line = _marker_line(name) if break_kw else None

    def make_args(self, seed=0):
        """Fresh arguments; equal values for equal seeds."""
        rng = np.random.default_rng(1000 * self.seed_base + seed)
        a = self._mk(rng)
        if isinstance(a, Args):
            return a
        return Args(*a) if isinstance(a, tuple) else Args(a)

    def __repr__(self):
        return f"Case({self.name})"


def _marker_line(name):
    src = inspect.getsource(inspect.getmodule(_marker_line)).splitlines()
    tag = f"# BREAK:{name}"
    for i, line in enumerate(src, 1):
        if line.rstrip().endswith(tag):
            return i
    raise AssertionError(f"no '{tag}' marker for case {name}")


def case(group, mk, *, brk=None, llvm=False, reset=None, name=None):
    """Registers fn as a corpus entry; brk: the expected break's reason regex."""
    def deco(fn):
        n = name or fn.__name__
        assert all(c.name != n for c in CASES), n
        CASES.append(Case(n, fn, mk, group, brk is None, brk, llvm, reset, len(CASES) + 1))
        return fn
    return deco


def add_case(group, name, obj, mk, *, brk=None, llvm=False):
    """Registers a non-function entry (a Module instance)."""
    assert all(c.name != name for c in CASES), name
    CASES.append(Case(name, obj, mk, group, brk is None, brk, llvm, None, len(CASES) + 1))


# ---- argument makers ----
def R(rng, *shape, dtype=None, grad=False):
    """A float tensor with standard-normal values (float32 unless dtype)."""
    t = symtrace.tensor(rng.standard_normal(shape).astype(np.float32))
    if dtype is not None:
        t = t.to(dtype)
    return t.requires_grad_() if grad else t


def P(rng, *shape):
    """A positive float32 tensor (for log, sqrt, pow)."""
    return symtrace.tensor((rng.random(shape) + 0.5).astype(np.float32))


def I(rng, low, high, *shape):
    """An int64 tensor with values in [low, high)."""
    return symtrace.tensor(rng.integers(low, high, size=shape).astype(np.int64))


def X(shape=(4, 8)):
    return lambda rng: (R(rng, *shape),)


def XY(shape=(4, 8), shape2=None):
    return lambda rng: (R(rng, *shape), R(rng, *(shape2 or shape)))


# =====================================================================
# arithmetic on tensors and Python values
# =====================================================================
@case("arith", X(), llvm=True)
def add_scalar(x):
    return x + 1


@case("arith", XY(), llvm=True)
def add_sub_mul(x, y):
    return x * y - x + y


@case("arith", X())
def radd_rsub(x):
    return 2.0 - x + (3 + x)


@case("arith", XY(), llvm=True)
def div_pow(x, y):
    return x / (y * y + 1.0) + x ** 2


@case("arith", X())
def rtruediv(x):
    return 1.0 / (x * x + 1)


@case("arith", XY((4, 8), (8, 3)), llvm=True)
def matmul_op(x, w):
    return x @ w


@case("arith", X())
def python_arith_on_shape(x):
    n = x.shape[0] * 2 + x.shape[1] // 3 - 1
    return x * n


@case("arith", X())
def python_float_ops(x):
    s = 1.0 / (x.shape[-1] ** 0.5)
    return x * s


@case("arith", lambda rng: (R(rng, 4, 8), 3, 0.5))
def python_number_args(x, k, alpha):
    return x * k + alpha * (k - 1)


@case("arith", X())
def inplace_ops_on_local(x):
    y = x + 0
    y += 1
    y *= 2
    y -= x
    return y


@case("arith", lambda rng: (I(rng, 1, 9, 4, 5),))
def int_tensor_arith(x):
    return x * 3 + 1, x // 2, x % 3


@case("arith", X())
def neg_pos_abs(x):
    return -x + abs(x) + (+x)


@case("arith", XY((4, 1), (1, 8)))
def broadcasting(x, y):
    return x + y, x * y


@case("arith", X())
def python_int_floordiv_mod(x):
    a = 17
    return x + (a // 5) + (a % 5) - divmod(a, 4)[1]


@case("arith", lambda rng: (R(rng, 4, 8), R(rng, 4, 8, dtype=symtrace.float64)))
def mixed_dtype_promotion(x, y):
    return x + y


@case("arith", X())
def tensor_method_arith(x):
    return x.add(1).mul(2).sub(x, alpha=0.5).div(3)


@case("arith", X())
def pow_tensor_scalar(x):
    return (x * x + 1) ** 0.5 - 2 ** (x * 0.1)


@case("arith", XY(), llvm=True)
def maximum_minimum(x, y):
    return symtrace.maximum(x, y) - symtrace.minimum(x, y)


@case("arith", X())
def bool_python_arith(x):
    flag = True
    return x * (flag + 1) + (not flag)


@case("arith", lambda rng: (R(rng, 3, 4), 2))
def shift_and_bitwise_python(x, k):
    return x * ((k << 2) | 1) + (k & 1) - (k ^ 3)


# =====================================================================
# comparisons (tensors and Python values), is, is not, in
# =====================================================================
@case("compare", XY(), llvm=True)
def tensor_compare(x, y):
    return x > y, x <= y, x == y, x != y


@case("compare", X())
def tensor_compare_scalar(x):
    return (x > 0).float() + (x < 0.5).float()


@case("compare", X())
def python_compare_shape(x):
    if x.shape[0] > 2 and x.shape[1] <= 8:
        return x + 1
    return x - 1


@case("compare", lambda rng: (R(rng, 4, 8), None))
def is_none(x, y):
    if y is None:
        return x * 2
    return x + y


@case("compare", lambda rng: (R(rng, 4, 8), R(rng, 4, 8)), name="is_not_none")
def is_not_none(x, y):
    if y is not None:
        return x + y
    return x


@case("compare", XY())
def is_same_tensor(x, y):
    a = x
    return (a is x), (a is y), x + 1


@case("compare", X())
def in_shape(x):
    if 8 in x.shape:
        return x.sum(-1)
    return x


@case("compare", lambda rng: (R(rng, 4, 8), "relu"))
def in_tuple_of_str(x, act):
    if act in ("relu", "gelu"):
        return F.relu(x)
    return x


@case("compare", lambda rng: (R(rng, 4, 8), {"scale": 2.0}))
def in_dict_keys(x, opts):
    if "scale" in opts:
        x = x * opts["scale"]
    if "shift" not in opts:
        x = x + 1
    return x


@case("compare", lambda rng: (R(rng, 4, 8), 3))
def chained_compare(x, k):
    if 0 < k < 5:
        return x * k
    return x


@case("compare", X())
def where_compare(x):
    return symtrace.where(x > 0, x, x * 0.1)


@case("compare", lambda rng: (R(rng, 4, 8), [1, 2]))
def list_equality(x, lst):
    if lst == [1, 2]:
        return x + 1
    return x


# =====================================================================
# unary ops
# =====================================================================
@case("unary", lambda rng: (P(rng, 4, 8),), llvm=True)
def exp_log_sqrt(x):
    return x.exp() + x.log() + x.sqrt() + symtrace.rsqrt(x)


@case("unary", X(), llvm=True)
def activations(x):
    return x.tanh() + x.sigmoid() + x.relu() + F.gelu(x)


@case("unary", X())
def trig(x):
    return symtrace.sin(x) * symtrace.cos(x)


@case("unary", X())
def round_floor_ceil(x):
    y = x * 3
    return y.floor() + y.ceil() + y.round() + y.sign()


@case("unary", X())
def logical_not_unary(x):
    return (x > 0).logical_not()


@case("unary", lambda rng: (R(rng, 4, 8), 3, True))
def python_unary(x, k, flag):
    return x * (-k) + (~k) + (not flag)


@case("unary", X())
def erf_reciprocal(x):
    return x.erf() + (x * x + 1).reciprocal()


@case("unary", X())
def clamp_ops(x):
    return x.clamp(-0.5, 0.5) + symtrace.clamp(x, min=0.0)


# =====================================================================
# tensor properties vs methods
# =====================================================================
@case("props", X())
def prop_shape(x):
    return x.shape


@case("props", X())
def prop_shape_index(x):
    return x.reshape(x.shape[0] * x.shape[1])


@case("props", X())
def prop_dtype(x):
    return x.dtype


@case("props", X())
def prop_T(x):
    return x.T @ x


@case("props", X())
def prop_ndim(x):
    return x.ndim, x.dim(), x.unsqueeze(x.ndim)


@case("props", X())
def prop_device(x):
    return str(x.device), x.device.type


@case("props", lambda rng: (R(rng, 4, 8), R(rng, 4, 8, grad=True)))
def prop_requires_grad(x, w):
    return x.requires_grad, w.requires_grad, (x * 2).requires_grad


@case("props", X())
def method_size(x):
    return x.size(), x.size(-1), x.numel()


@case("props", X())
def method_is_floating(x):
    if x.is_floating_point():
        return x * 2
    return x


@case("props", X((2, 3, 4)))
def shape_unpack(x):
    b, s, d = x.shape
    return x.reshape(b * s, d)


@case("props", X((2, 3, 4)))
def shape_slice(x):
    lead = x.shape[:-1]
    return x.reshape(*lead, 2, 2), lead


@case("props", X())
def prop_is_leaf_grad(x):
    return x.is_leaf, x.grad is None


@case("props", X())
def dtype_is_floating_point_attr(x):
    return x.dtype.is_floating_point, x + 1


# =====================================================================
# dtype comparisons (the SOT bug of seed 000: a dtype read as a method)
# =====================================================================
@case("dtype", X())
def dtype_eq_float32(x):
    if x.dtype == symtrace.float32:
        return x + 1
    return x - 1


@case("dtype", X())
def dtype_ne_between_tensors(x):
    y = x.to(symtrace.float64)
    if x.dtype != y.dtype:
        return y * 2
    return y


@case("dtype", lambda rng: (R(rng, 4, 8), R(rng, 4, 8)))
def dtype_eq_between_args(x, y):
    return x.dtype == y.dtype, x + y


@case("dtype", lambda rng: (R(rng, 4, 8, dtype=symtrace.float64),))
def dtype_float64_branch(x):
    if x.dtype is symtrace.float64:
        return x.float()
    return x


@case("dtype", lambda rng: (I(rng, 0, 5, 4, 8),))
def dtype_int_to_float(x):
    if x.dtype in (symtrace.int32, symtrace.int64):
        x = x.to(symtrace.float32)
    return x / 2


@case("dtype", X())
def dtype_as_argument(x):
    dt = x.dtype
    return symtrace.zeros(2, 3, dtype=dt) + symtrace.ones_like(x).sum()


@case("dtype", X())
def to_other_dtype_and_back(x):
    return x.double().sum().float(), x.half().float()


@case("dtype", X())
def dtype_str(x):
    return str(x.dtype)


# =====================================================================
# subscripts and slices
# =====================================================================
@case("index", X(), llvm=True)
def slice_basic(x):
    return x[1:3, 2:6]


@case("index", X())
def slice_step(x):
    return x[:, ::2]


@case("index", X())
def index_int(x):
    return x[0] + x[-1]


@case("index", X())
def index_none_ellipsis(x):
    return x[None, ..., None].shape, x[..., 1]


@case("index", X())
def slice_negative(x):
    return x[-2:, :-3]


@case("index", lambda rng: (R(rng, 6, 8), I(rng, 0, 6, 3)))
def index_tensor_select(x, idx):
    return x.index_select(0, idx)


@case("index", lambda rng: (R(rng, 4, 8), [0, 2, 4]))
def subscript_python_list(x, lst):
    return x[:, lst[1]:lst[2]] * lst[0]


@case("index", lambda rng: (R(rng, 4, 8), {"a": 1, "b": 3}))
def subscript_dict(x, d):
    return x[:, d["a"]:d["b"]]


@case("index", lambda rng: ((R(rng, 4, 8), R(rng, 4, 8)),))
def subscript_tuple_arg(pair):
    return pair[0] - pair[1]


@case("index", X())
def slice_object(x):
    s = slice(1, 3)
    return x[s]


@case("index", lambda rng: (R(rng, 4, 8), 1, 5))
def slice_python_bounds(x, a, b):
    return x[a:b].sum(0)


@case("index", X((2, 3, 4)))
def index_multi(x):
    return x[1, :, 0], x[:, 2]


# =====================================================================
# building and unpacking tuples, lists, dicts (star forms)
# =====================================================================
@case("containers", XY())
def build_tuple(x, y):
    return (x + y, x - y)


@case("containers", XY())
def build_list(x, y):
    return [x, y, x * y]


@case("containers", XY())
def build_dict(x, y):
    return {"sum": x + y, "diff": x - y}


@case("containers", lambda rng: ((R(rng, 4, 8), R(rng, 4, 8), R(rng, 4, 8)),))
def unpack_tuple(t):
    a, b, c = t
    return a + b + c


@case("containers", lambda rng: ([R(rng, 4, 8) for _ in range(4)],))
def unpack_star(xs):
    first, *rest = xs
    return first, len(rest), rest[-1] + first


@case("containers", lambda rng: ([R(rng, 4, 8) for _ in range(3)],))
def star_build(xs):
    return [*xs, xs[0] + 1], (*xs[:2],)


@case("containers", XY())
def dict_star(x, y):
    base = {"x": x}
    d = {**base, "y": y}
    return d["x"] + d["y"], sorted(d)


@case("containers", XY())
def list_append_local(x, y):
    out = []
    out.append(x)
    out.append(y)
    out.extend([x + y])
    return out


@case("containers", XY())
def dict_setitem_local(x, y):
    d = {}
    d["a"] = x
    d["b"] = y * 2
    d.update(c=x + y)
    return d


@case("containers", lambda rng: ({"a": R(rng, 4, 8), "b": R(rng, 4, 8)},))
def dict_methods(d):
    ks = list(d.keys())
    vs = list(d.values())
    return ks, vs[0] + vs[1], d.get("a") * 2, d.get("zz", None)


@case("containers", XY())
def nested_unpack(x, y):
    (a, b), c = (x, y), x * y
    return a + b + c


@case("containers", X())
def tuple_concat(x):
    t = (1, 2) + (3,)
    return x * len(t), t * 2


@case("containers", lambda rng: ([R(rng, 2, 3) for _ in range(3)],))
def cat_stack_list(xs):
    return symtrace.cat(xs, 0), symtrace.stack(xs, 1)


@case("containers", X())
def split_unpack(x):
    a, b = x.split(4, dim=1)
    c, d = x.chunk(2, 0)
    return a * b, c + d


@case("containers", XY())
def swap_values(x, y):
    x, y = y, x
    return x - y


@case("containers", lambda rng: ([R(rng, 4, 8), R(rng, 4, 8)],))
def list_index_slice(xs):
    return xs[-1], xs[:1], len(xs[1:])


# =====================================================================
# calls: positional, keyword, default, *args, **kwargs
# =====================================================================
def _scaled(x, scale=2.0, *, shift=0.0):
    return x * scale + shift


def _varargs(*xs):
    out = xs[0]
    for t in xs[1:]:
        out = out + t
    return out


def _kwargs(x, **kw):
    for k in sorted(kw):
        x = x * kw[k]
    return x


@case("calls", X())
def call_default(x):
    return _scaled(x)


@case("calls", X())
def call_keyword(x):
    return _scaled(x, shift=1.0, scale=3.0)


@case("calls", XY())
def call_varargs(x, y):
    return _varargs(x, y, x)


@case("calls", X())
def call_kwargs(x):
    return _kwargs(x, a=2.0, b=3.0)


@case("calls", XY())
def call_star_tuple(x, y):
    args = (x, y)
    return _varargs(*args)


@case("calls", X())
def call_star_dict(x):
    kw = {"scale": 0.5, "shift": 2.0}
    return _scaled(x, **kw)


@case("calls", lambda rng: Args(R(rng, 4, 8), scale=4.0))
def entry_kwargs(x, scale=1.0, bias=None):
    y = x * scale
    if bias is not None:
        y = y + bias
    return y


@case("calls", lambda rng: Args(R(rng, 4, 8), R(rng, 4, 8), R(rng, 4, 8)))
def entry_varargs(*xs):
    return sum(xs)


@case("calls", lambda rng: Args(R(rng, 4, 8), a=2.0, b=0.5))
def entry_var_kwargs(x, **kw):
    return x * kw["a"] + kw["b"]


@case("calls", X())
def call_functional_keywords(x):
    return F.softmax(x, dim=-1), symtrace.sum(x, dim=1, keepdim=True)


@case("calls", X())
def call_lambda(x):
    f = lambda t, k=2: t * k  # noqa: E731
    return f(x) + f(x, k=3)


@case("calls", X())
def call_kwonly_default(x):
    def g(t, *, n=3):
        return t + n
    return g(x), g(x, n=5)


# =====================================================================
# method calls (tensor and user objects)
# =====================================================================
class _Scaler:
    def __init__(self, s):
        self.s = s

    def apply(self, x):
        return x * self.s

    def twice(self, x):
        return self.apply(self.apply(x))

    @staticmethod
    def shift(x):
        return x + 1

    @classmethod
    def make(cls, s):
        return cls(s)

    @property
    def half(self):
        return self.s / 2


_SCALER = _Scaler(3.0)


@case("methods", X())
def tensor_method_chain(x):
    return x.reshape(8, 4).transpose(0, 1).contiguous().sum(1).mean()


@case("methods", X())
def tensor_reductions(x):
    return x.sum(), x.mean(0), x.amax(-1), x.amin(0, keepdim=True), x.prod(1)


@case("methods", X())
def tensor_argmax_max(x):
    v, i = x.max(dim=1)
    return v, i, x.argmax(-1), x.argmin(0)


@case("methods", lambda rng: (R(rng, 4, 8), _Scaler(2.0)))
def user_method(x, sc):
    return sc.apply(x)


@case("methods", X())
def user_method_nested(x):
    return _SCALER.twice(x)


@case("methods", X())
def user_static_classmethod(x):
    return _Scaler.shift(x), _Scaler.make(4.0).apply(x)


@case("methods", X())
def user_property(x):
    return x * _SCALER.half


@case("methods", X((2, 3, 4)))
def view_methods(x):
    return x.permute(2, 0, 1).reshape(4, 6), x.view(6, 4), x.flatten(), x.unsqueeze(0).squeeze(0)


@case("methods", X())
def expand_methods(x):
    r = x.sum(1, keepdim=True)
    return r.expand(4, 8) + x, r.expand_as(x)


@case("methods", X())
def new_tensor_methods(x):
    return x.new_zeros(2, 3), x.new_ones(3), x.new_full((2,), 7.0), symtrace.zeros_like(x) + x


# =====================================================================
# closures and nested functions
# =====================================================================
def _make_adder(k):
    def add(x):
        return x + k
    return add


_ADD3 = _make_adder(3.0)


@case("closures", X())
def closure_read(x):
    k = 2.0

    def inner(t):
        return t * k
    return inner(x)


@case("closures", X())
def closure_global_fn(x):
    return _ADD3(x)


@case("closures", X())
def closure_nonlocal(x):
    count = 0

    def bump(t):
        nonlocal count
        count += 1
        return t + count
    y = bump(x)
    y = bump(y)
    return y, count


@case("closures", X())
def closure_nested_two_levels(x):
    a = 1.0

    def outer(t):
        b = 2.0

        def inner(u):
            return u * a + b
        return inner(t)
    return outer(x)


@case("closures", X())
def closure_over_tensor(x):
    w = x.sum(0)

    def f(t):
        return t * w
    return f(x)


@case("closures", X())
def closure_made_inside(x):
    fs = [_make_adder(float(i)) for i in range(3)]
    return fs[0](x) + fs[2](x)


@case("closures", X())
def closure_returned_fn_called(x):
    def make(k):
        return lambda t: t - k
    return make(1.0)(x)


@case("closures", X())
def closure_cell_tensor_modified(x):
    acc = x

    def add_to(t):
        nonlocal acc
        acc = acc + t
    add_to(x)
    add_to(x * 2)
    return acc


# =====================================================================
# globals and builtins
# =====================================================================
_GLOBAL_SCALE = 1.5
_GLOBAL_TUPLE = (1, 2, 3)
_GLOBAL_DICT = {"eps": 1e-5, "n": 2}


@case("builtins", X(), llvm=True)
def global_const(x):
    return x * _GLOBAL_SCALE


@case("builtins", X())
def global_container(x):
    return x * _GLOBAL_TUPLE[1] + _GLOBAL_DICT["eps"]


@case("builtins", lambda rng: ([R(rng, 4, 8) for _ in range(3)],))
def builtin_len(xs):
    return xs[0] * len(xs), len(xs[0])


@case("builtins", lambda rng: (R(rng, 4, 8), 3))
def builtin_isinstance(x, k):
    out = x
    if isinstance(k, int):
        out = out + k
    if isinstance(x, symtrace.Tensor):
        out = out * 2
    if isinstance(k, (float, str)):
        out = out - 100
    return out


@case("builtins", lambda rng: (R(rng, 4, 8), _Scaler(2.0)))
def builtin_getattr_hasattr(x, obj):
    if hasattr(obj, "s"):
        x = x * getattr(obj, "s")
    if not hasattr(obj, "missing"):
        x = x + getattr(obj, "missing", 1.0)
    return x


@case("builtins", X())
def builtin_range_sum(x):
    total = 0
    for i in range(4):
        total += i
    return x + total, sum(range(5))


@case("builtins", lambda rng: ([R(rng, 4, 8) for _ in range(3)],))
def builtin_enumerate(xs):
    out = xs[0] * 0
    for i, t in enumerate(xs):
        out = out + t * i
    return out


@case("builtins", lambda rng: ([R(rng, 4, 8) for _ in range(3)], [1.0, 2.0, 3.0]))
def builtin_zip(xs, ws):
    out = 0
    for t, w in zip(xs, ws):
        out = out + t * w
    return out


@case("builtins", X())
def builtin_min_max_abs(x):
    a = min(x.shape)
    b = max(x.shape[0], 3)
    c = abs(-2)
    return x * (a + b + c), max([1, 5, 2]), min(3.0, 2.5)


@case("builtins", lambda rng: ([R(rng, 4, 8) for _ in range(3)],))
def builtin_sum_tensors(xs):
    return sum(xs), sum([1, 2, 3])


@case("builtins", lambda rng: (R(rng, 4, 8), [1, 0, 2]))
def builtin_any_all(x, flags):
    if any(flags) and not all(flags):
        return x + 1
    return x


@case("builtins", X())
def builtin_any_all_shape(x):
    if all([d > 1 for d in x.shape]):
        return x * 2
    return x


@case("builtins", X())
def builtin_type_conversions(x):
    n = int(3.7) + float(2) + int("4")
    return x * n, bool(0), tuple([1, 2]), list((3, 4))


@case("builtins", X())
def builtin_sorted_reversed(x):
    dims = sorted([1, 0])
    return x.permute(*dims), list(reversed((1, 2, 3)))


@case("builtins", X())
def builtin_round_pow(x):
    return x * round(2.6) + pow(2, 3)


@case("builtins", lambda rng: (R(rng, 4, 8), {"a": 1, "b": 2}))
def builtin_dict_len_iter(x, d):
    return x * len(d), list(d)


@case("builtins", X())
def builtin_callable_type(x):
    return callable(_scaled), type(3) is int, x + 1


@case("builtins", X())
def global_module_attr(x):
    return symtrace.nn.functional.relu(x) + nn.functional.relu(-x)


@case("builtins", X())
def builtin_generator_expr(x):
    return x * sum(d for d in x.shape)


# =====================================================================
# f-strings and strings
# =====================================================================
@case("fstrings", X())
def fstring_shape(x):
    return f"shape={x.shape} n={x.shape[0]:03d}"


@case("fstrings", lambda rng: (R(rng, 4, 8), "gelu"))
def fstring_with_tensor_result(x, name):
    key = f"act_{name}"
    return key, x + len(key)


@case("fstrings", X())
def fstring_dtype(x):
    return f"{x.dtype}|{x.ndim!r}|{1.5:.2f}"


@case("fstrings", lambda rng: (R(rng, 4, 8), "ab"))
def string_ops(x, s):
    t = s.upper() + "-" + s * 2
    return t, t.startswith("AB"), x * len(t)


@case("fstrings", X())
def string_format_join(x):
    return "{}x{}".format(*x.shape), ",".join(["a", "b"])


# =====================================================================
# super()
# =====================================================================
class _Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = 2.0

    def forward(self, x):
        return x * self.k

    def helper(self, x):
        return x + 1


class _Derived(_Base):
    def forward(self, x):
        return super().forward(x) + 1

    def helper(self, x):
        return super().helper(x) * 3


class _Derived2(_Derived):
    def forward(self, x):
        y = super().forward(x)
        return super(_Derived, self).forward(y)


symtrace.manual_seed(0)
_DERIVED = _Derived()
_DERIVED2 = _Derived2()


@case("super", X())
def super_forward(x):
    return _DERIVED(x)


@case("super", X())
def super_method(x):
    return _DERIVED.helper(x)


@case("super", X())
def super_two_levels(x):
    return _DERIVED2(x)


add_case("super", "super_module_entry", _Derived2(), X())


# =====================================================================
# with symtrace.no_grad()
# =====================================================================
@case("no_grad", lambda rng: (R(rng, 4, 8, grad=True),))
def no_grad_block(x):
    with symtrace.no_grad():
        y = x * 2
    return y, y.requires_grad


@case("no_grad", lambda rng: (R(rng, 4, 8),))
def no_grad_block_plain(x):
    with symtrace.no_grad():
        y = x.exp()
    return y + 1


@case("no_grad", lambda rng: (R(rng, 4, 8, grad=True),))
def no_grad_then_grad(x):
    with symtrace.no_grad():
        a = x * 3
    b = x * a
    return b, a.requires_grad, b.requires_grad


@case("no_grad", lambda rng: (R(rng, 4, 8),))
def is_grad_enabled_read(x):
    with symtrace.no_grad():
        inside = symtrace.is_grad_enabled()
    return x + 1, inside, symtrace.is_grad_enabled()


# =====================================================================
# for-loops (unrolled)
# =====================================================================
@case("loops", X(), llvm=True)
def loop_range(x):
    for _ in range(3):
        x = x * 0.5 + 1
    return x


@case("loops", lambda rng: ([R(rng, 4, 8) for _ in range(4)],))
def loop_list(xs):
    acc = xs[0] * 0
    for t in xs:
        acc = acc + t
    return acc


@case("loops", lambda rng: ((R(rng, 4, 8), R(rng, 4, 8)),))
def loop_tuple(ts):
    out = []
    for t in ts:
        out.append(t.sum())
    return out


@case("loops", lambda rng: ({"a": R(rng, 4, 8), "b": R(rng, 4, 8)},))
def loop_dict_items(d):
    out = {}
    for k, v in d.items():
        out[k + "_2"] = v * 2
    return out


@case("loops", lambda rng: ({"x": R(rng, 4, 8), "y": R(rng, 4, 8)},))
def loop_dict_keys(d):
    acc = 0
    for k in d:
        acc = acc + d[k]
    return acc


@case("loops", lambda rng: ([R(rng, 4, 8) for _ in range(3)],))
def loop_enumerate_start(xs):
    acc = xs[0]
    for i, t in enumerate(xs[1:], start=1):
        acc = acc + i * t
    return acc


@case("loops", lambda rng: ([R(rng, 4, 8) for _ in range(3)], [R(rng, 4, 8) for _ in range(3)]))
def loop_zip(xs, ys):
    return [a * b for a, b in zip(xs, ys)]


@case("loops", X())
def loop_nested(x):
    for i in range(2):
        for j in range(3):
            x = x + i * j
    return x


@case("loops", X())
def loop_break_continue(x):
    for i in range(10):
        if i == 1:
            continue
        if i > 3:
            break
        x = x * (i + 1)
    return x


@case("loops", X())
def loop_while_python(x):
    i = 0
    while i < 3:
        x = x + i
        i += 1
    return x


@case("loops", X())
def loop_list_comprehension(x):
    parts = [x * i for i in range(3)]
    return symtrace.stack(parts)


@case("loops", X())
def loop_dict_comprehension(x):
    return {f"p{i}": x + i for i in range(2)}


@case("loops", X())
def loop_over_shape(x):
    n = 1
    for d in x.shape:
        n *= d
    return x.reshape(n)


@case("loops", X())
def loop_for_else(x):
    for i in range(2):
        x = x + i
    else:
        x = x * 2
    return x


@case("loops", lambda rng: (R(rng, 4, 8), [0.5, 1.5]))
def loop_reversed_list(x, ws):
    for w in reversed(ws):
        x = x * w
    return x


class _Stack(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        return x


class _StackEnum(_Stack):
    def forward(self, x):
        outs = []
        for i, layer in enumerate(self.layers):
            x = layer(x) * (i + 1)
            outs.append(x)
        return outs


class _ModDict(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(d, 2), "b": nn.Linear(d, 3)})

    def forward(self, x):
        return {k: m(x) for k, m in self.heads.items()}


symtrace.manual_seed(1)
add_case("loops", "loop_modulelist", _Stack(3, 8), X(), llvm=True)
add_case("loops", "loop_modulelist_enumerate", _StackEnum(2, 8), X())
add_case("loops", "loop_moduledict", _ModDict(8), X())


@case("loops", X())
def loop_modulelist_index(x):
    m = _STACK4
    y = m.layers[0](x)
    y = m.layers[-1](y)
    return y, len(m.layers)


symtrace.manual_seed(2)
_STACK4 = _Stack(4, 8)


# =====================================================================
# inlining: user functions, methods, Module.__call__ -> forward, recursion
# =====================================================================
def _leaf(x):
    return x * 2 + 1


def _mid(x):
    return _leaf(x) - _leaf(x * 0.5)


def _top(x, y):
    return _mid(x) * y


def _fact(n):
    return 1 if n <= 1 else n * _fact(n - 1)


def _tree_sum(xs):
    if len(xs) == 1:
        return xs[0]
    h = len(xs) // 2
    return _tree_sum(xs[:h]) + _tree_sum(xs[h:])


def _pow_rec(x, n):
    if n == 0:
        return x * 0 + 1
    return x * _pow_rec(x, n - 1)


@case("inline", XY(), llvm=True)
def inline_nested_calls(x, y):
    return _top(x, y)


@case("inline", X())
def inline_recursion_python(x):
    return x * _fact(4)


@case("inline", lambda rng: ([R(rng, 4, 8) for _ in range(5)],))
def inline_recursion_tensors(xs):
    return _tree_sum(xs)


@case("inline", X())
def inline_recursion_pow(x):
    return _pow_rec(x, 3)


class _MLP(nn.Module):
    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)
        self.act = nn.GELU()

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class _Residual(nn.Module):
    def __init__(self, inner, d):
        super().__init__()
        self.inner = inner
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.inner(x))


class _WithScale(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d, bias=False)
        self.scale = 0.5
        self.register_buffer("offset", symtrace.ones(d))

    def forward(self, x):
        return self.lin(x) * self.scale + self.offset


symtrace.manual_seed(3)
_MLP_A = _MLP(8, 16, 4)
_RES = _Residual(_MLP(8, 16, 8), 8)
_WS = _WithScale(8)


@case("inline", X())
def inline_module_call(x):
    return _MLP_A(x)


@case("inline", X())
def inline_module_forward_direct(x):
    return _MLP_A.forward(x)


@case("inline", lambda rng: (_WS, R(rng, 4, 8)))
def inline_module_as_argument(m, x):
    return m(x)


@case("inline", X())
def inline_nested_modules(x):
    return _RES(x)


@case("inline", X())
def inline_sequential(x):
    return _SEQ(x)


symtrace.manual_seed(4)
_SEQ = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4), nn.Tanh())


@case("inline", X())
def inline_module_parameters_read(x):
    w = _WS.lin.weight
    return x @ w.T, w.shape


@case("inline", X())
def inline_bound_method_variable(x):
    f = _SCALER.apply
    return f(x) + f(x * 2)


add_case("inline", "module_entry_mlp", _MLP(8, 16, 4), X(), llvm=True)
add_case("inline", "module_entry_residual", _Residual(_MLP(8, 12, 8), 8), X())
add_case("inline", "module_entry_with_buffer", _WithScale(8), X())


# =====================================================================
# return values: tensors, nested containers, strings, numbers, None
# =====================================================================
@case("returns", X())
def return_none(x):
    y = x + 1  # noqa: F841
    return None


@case("returns", X())
def return_int(x):
    return x.shape[0] * 10


@case("returns", X())
def return_float_and_bool(x):
    return 2.5, x.ndim == 2


@case("returns", X())
def return_string(x):
    return "ok"


@case("returns", XY())
def return_nested(x, y):
    return {"a": [x + y, (x * y, None)], "b": ("s", 3), "c": {"d": x - y}}


@case("returns", X())
def return_input_as_is(x):
    return x


@case("returns", X())
def return_input_and_new(x):
    return x, x + 1, x


@case("returns", X())
def return_same_output_twice(x):
    y = x * 2
    return y, y


@case("returns", X())
def return_view_of_input(x):
    return x[1:], x.T


@case("returns", X())
def return_constant_tensor(x):
    return symtrace.ones(2, 2), x + 0


@case("returns", X())
def return_dtype_tuple(x):
    return x.dtype, x.shape, x.device


@case("returns", X())
def return_empty_containers(x):
    return (), [], {}, x * 1


# =====================================================================
# nn functional and modules
# =====================================================================
@case("nn", X(), llvm=True)
def f_softmax_logsoftmax(x):
    return x.softmax(-1), F.log_softmax(x, dim=1)


@case("nn", lambda rng: (R(rng, 4, 8), R(rng, 8), R(rng, 8)), llvm=True)
def f_layer_norm(x, w, b):
    return F.layer_norm(x, (8,), w, b)


@case("nn", lambda rng: (R(rng, 4, 8), R(rng, 3, 8), R(rng, 3)))
def f_linear(x, w, b):
    return F.linear(x, w, b), F.linear(x, w)


@case("nn", lambda rng: (R(rng, 4, 5), I(rng, 0, 5, 4)), llvm=True)
def f_cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


@case("nn", lambda rng: (I(rng, 0, 10, 2, 3), R(rng, 10, 4)))
def f_embedding(ids, w):
    return F.embedding(ids, w)


@case("nn", XY())
def f_mse_loss(x, y):
    return F.mse_loss(x, y), F.mse_loss(x, y, reduction="sum")


@case("nn", lambda rng: (R(rng, 2, 2, 4, 4), R(rng, 2, 2, 4, 4), R(rng, 2, 2, 4, 4)))
def f_sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


@case("nn", X())
def f_dropout_eval(x):
    return F.dropout(x, p=0.5, training=False)


@case("nn", lambda rng: (R(rng, 4, 8), I(rng, 0, 2, 4, 8).bool()))
def masked_fill_mask(x, m):
    return x.masked_fill(m, -1e4).softmax(-1)


class _Attention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.dh = h, d // h
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.reshape(b, s, self.h, self.dh).transpose(1, 2)
        k = k.reshape(b, s, self.h, self.dh).transpose(1, 2)
        v = v.reshape(b, s, self.h, self.dh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / self.dh ** 0.5)
        y = att.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class _Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = _Attention(d, h)
        self.mlp = _MLP(d, 4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class _BertLayer(nn.Module):
    """A BERT-style layer with the mask conversion of seed 000's model."""

    def __init__(self, d, h):
        super().__init__()
        self.h, self.dh = h, d // h
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.ff1, self.ff2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.drop = nn.Dropout(0.1)

    def _heads(self, t, b, s):
        return t.reshape(b, s, self.h, self.dh).permute(0, 2, 1, 3)

    def forward(self, hidden, attention_mask=None):
        dtype = hidden.dtype
        if attention_mask is not None and attention_mask.dtype != dtype:
            attention_mask = (1.0 - attention_mask.to(dtype)) * -1e4
        b, s, d = hidden.shape
        q = self._heads(self.q(hidden), b, s)
        k = self._heads(self.k(hidden), b, s)
        v = self._heads(self.v(hidden), b, s)
        scores = q @ k.transpose(-1, -2) / (self.dh ** 0.5)
        if attention_mask is not None:
            scores = scores + attention_mask
        ctx = self.drop(scores.softmax(-1)) @ v
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, s, d)
        hidden = self.ln1(hidden + self.drop(self.o(ctx)))
        return self.ln2(hidden + self.drop(self.ff2(F.gelu(self.ff1(hidden)))))


symtrace.manual_seed(5)
_ATTN = _Attention(8, 2)
_BLOCK = _Block(8, 2)
_BERT = _BertLayer(8, 2).eval()
_ENC = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                        batch_first=True), 2).eval()
_ENC_PRE = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                            batch_first=True, norm_first=True,
                                                            activation="gelu"), 2,
                                 norm=nn.LayerNorm(8), enable_nested_tensor=False).eval()
_MHA = nn.MultiheadAttention(8, 2, batch_first=True).eval()
_CE = nn.CrossEntropyLoss()


def _bert_mask(rng):
    m = np.ones((2, 1, 1, 4), dtype=np.int64)
    m[1, ..., 3] = 0
    return symtrace.tensor(m)


add_case("nn", "module_attention", _ATTN, X((2, 4, 8)), llvm=True)
add_case("nn", "module_block", _BLOCK, X((2, 4, 8)))
add_case("nn", "module_bert_layer_int_mask", _BERT, lambda rng: (R(rng, 2, 4, 8), _bert_mask(rng)),
         llvm=True)
add_case("nn", "module_bert_layer_float_mask", _BERT,
         lambda rng: (R(rng, 2, 4, 8), (1.0 - _bert_mask(rng).float()) * -1e4))
add_case("nn", "module_bert_layer_no_mask", _BERT, X((2, 4, 8)))
add_case("nn", "module_transformer_encoder", _ENC, X((2, 4, 8)), llvm=True)
add_case("nn", "module_transformer_encoder_prenorm", _ENC_PRE, X((2, 4, 8)))


@case("nn", lambda rng: (R(rng, 2, 4, 8), I(rng, 0, 2, 2, 4).bool()))
def encoder_with_padding_mask(x, pad):
    return _ENC(x, src_key_padding_mask=pad)


@case("nn", X((2, 4, 8)))
def mha_call(x):
    out, w = _MHA(x, x, x)
    return out, w


@case("nn", lambda rng: (R(rng, 4, 5), I(rng, 0, 5, 4)))
def module_loss(logits, target):
    return _CE(logits, target)


@case("nn", X((2, 4, 8)))
def blocks_in_sequence(x):
    return _BLOCK(_ATTN(x) + x)


# =====================================================================
# expected graph breaks (frame runs as plain Python; result still equal)
# =====================================================================
_SIDE = []


def _side_reset():
    _SIDE.clear()


@case("breaks", X(), brk=r"print")
def break_print(x):
    y = x + 1
    print("corpus: break_print", y.shape)  # BREAK:break_print
    return y * 2


@case("breaks", X(), brk=r"item")
def break_item(x):
    s = x.sum().item()  # BREAK:break_item
    return x * s


@case("breaks", X(), brk=r"jump|tensor|bool|if")
def break_if_on_tensor(x):
    if x.sum() > 0:  # BREAK:break_if_on_tensor
        return x + 1
    return x - 1


# side effects on outside objects are recorded and replayed (issue 7):
# captured whole; the reset before each call keeps the guards stable, so
# the second call replays the effects from the cache entry
@case("side_effects", X(), reset=_side_reset)
def side_effect_list_append(x):
    y = x * 2
    del _SIDE[:]          # the result does not depend on earlier calls
    _SIDE.append(len(_SIDE))
    _SIDE.append(y)
    return y, len(_SIDE), _SIDE[0], list(_SIDE)


class _Counter:
    def __init__(self):
        self.n = 0


_COUNTER = _Counter()


def _counter_reset():
    _COUNTER.n = 0


@case("side_effects", X(), reset=_counter_reset)
def side_effect_attr(x):
    start = _COUNTER.n
    _COUNTER.n = _COUNTER.n + 1
    _COUNTER.t = x * (_COUNTER.n - start)
    return _COUNTER.t + 1, _COUNTER.n - start


_SE_DICT = {"keep": 1}


def _se_dict_reset():
    _SE_DICT.clear()
    _SE_DICT["keep"] = 1


@case("side_effects", X(), reset=_se_dict_reset)
def side_effect_dict_store(x):
    for k in [k for k in _SE_DICT if k != "keep"]:
        del _SE_DICT[k]     # the result does not depend on earlier calls
    _SE_DICT["y"] = x.relu()
    _SE_DICT["n"] = len(_SE_DICT)
    return _SE_DICT["y"] * _SE_DICT["n"], dict(_SE_DICT), "y" in _SE_DICT


_SE_G = 0


def _se_g_reset():
    global _SE_G
    _SE_G = 0


@case("side_effects", X(), reset=_se_g_reset)
def side_effect_global_store(x):
    global _SE_G
    start = _SE_G
    _SE_G = _SE_G + 1
    return x * (_SE_G - start), _SE_G - start


class _SideRecorder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x):
        self.last_in = x
        self.last_out = self.lin(x).relu()
        self.last_out = self.last_out * 2     # program order: the second write wins
        return self.last_out + 1, self.last_in is x


add_case("side_effects", "side_effect_module_attrs", _SideRecorder(), X())


_BAG = (frozenset([_Counter()]),)


def _bag_reset():
    for c in _BAG[0]:
        c.n = 0


@case("breaks", X(), brk=r"side effect.*no source", reset=_bag_reset)
def break_side_effect_no_source(x):
    for c in _BAG[0]:
        c.n = c.n + 1  # BREAK:break_side_effect_no_source
    return x * 2


@case("breaks", X(), brk=r"tolist|data|numpy")
def break_tolist(x):
    vals = x.tolist()  # BREAK:break_tolist
    return x + len(vals)


@case("breaks", X(), brk=r"float|item|data|scalar")
def break_float_of_tensor(x):
    m = float(x.mean())  # BREAK:break_float_of_tensor
    return x - m


def _helper_prints(x):
    print("corpus: helper")  # BREAK:break_in_callee
    return x * 3


@case("breaks", X(), brk=r"print")
def break_in_callee(x):
    return _helper_prints(x + 1) - 1


# =====================================================================
# more statements and idioms (spares)
# =====================================================================
_GLOBAL_T = symtrace.arange(8).float()


class _PropModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.factor = 3

    @property
    def double_factor(self):
        return self.factor * 2

    def forward(self, x, **kw):
        y = self.lin(x) * self.double_factor
        if kw.get("shift") is not None:
            y = y + kw["shift"]
        return y


symtrace.manual_seed(6)
_PROPM = _PropModule()


@case("more", X())
def return_namedtuple(x):
    return x.max(dim=1)


@case("more", X())
def try_no_exception(x):
    try:
        y = x + 1
    except ValueError:
        y = x - 1
    finally:
        z = 2
    return y * z


@case("more", X())
def assert_python_condition(x):
    assert x.dim() == 2, "want a matrix"
    return x.T


@case("more", X())
def del_local(x):
    y = x * 2
    z = y + 1
    del y
    return z


@case("more", X())
def global_tensor_read(x):
    return x * _GLOBAL_T


@case("more", XY())
def to_other_tensor_dtype(x, y):
    return x.to(dtype=symtrace.float64) + y.to(x.dtype), x.to(y)


@case("more", lambda rng: (R(rng, 6, 8), I(rng, 0, 6, 3)))
def tensor_index_by_tensor(x, idx):
    return x[idx]


@case("more", X())
def clone_then_inplace(x):
    y = x.clone()
    y.add_(1)
    y.mul_(2)
    return y


@case("more", X())
def len_of_tensor(x):
    return x * len(x)


@case("more", X())
def sequential_indexing(x):
    return _SEQ[0](x), len(_SEQ)


@case("more", lambda rng: Args(R(rng, 4, 8), shift=2.0))
def kwargs_passthrough_to_module(x, **kw):
    return _PROPM(x, **kw)


@case("more", X())
def module_property(x):
    return _PROPM(x), _PROPM.double_factor


@case("more", X())
def ternary_python(x):
    k = 2 if x.shape[0] > 3 else 3
    return x * k


@case("more", X())
def walrus_and_augassign_python(x):
    if (n := x.shape[1]) > 4:
        n //= 2
    return x[:, :n]


def _fwd_all(*args, **kw):
    return _fwd_inner(*args, **kw)


def _fwd_inner(x, y=None, *, k=1.0):
    return x * k if y is None else (x + y) * k


symtrace.manual_seed(9)
_MIXED = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh())
_HEADS = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})


@case("more", X())
def nested_default_captures_tensor(x):
    w = x.mean(0)

    def g(t, s=w):
        return t - s
    return g(x)


@case("more", XY())
def star_forwarding_two_levels(x, y):
    return _fwd_all(x, y, k=2.0), _fwd_all(x, k=3.0)


@case("more", X())
def for_star_unpack(x):
    out = x
    for a, *rest in [(1, 2, 3), (4, 5)]:
        out = out + a * len(rest)
    return out


@case("more", X())
def set_ops(x):
    s = {1, 2} | {3}
    return x * len(s), 2 in s, sorted(s)


@case("more", X())
def percent_format(x):
    return "%d-%s-%.1f" % (x.shape[0], "a", 1.25)


@case("more", lambda rng: (R(rng, 4, 8), None, 0))
def bool_ops_python(x, maybe, zero):
    k = maybe or 3
    j = zero and 5
    return x * k + j, (maybe is None) and (zero == 0)


@case("more", lambda rng: (R(rng, 4, 8), "relu"))
def getattr_dynamic_function(x, name):
    return getattr(F, name)(x)


@case("more", X())
def type_name(x):
    return type(x).__name__, type(x) is symtrace.Tensor


@case("more", lambda rng: ([R(rng, 4, 8) for _ in range(4)],))
def list_slice_step_reverse(xs):
    return xs[::2], xs[::-1][0] - xs[-1]


@case("more", lambda rng: ([[R(rng, 2, 2), R(rng, 2, 2)], [R(rng, 2, 2), R(rng, 2, 2)]],))
def zip_star_transpose(rows):
    cols = list(zip(*rows))
    return [c[0] + c[1] for c in cols]


@case("more", lambda rng: ({"a": R(rng, 4, 8), "b": R(rng, 4, 8)},))
def enumerate_dict_items(d):
    out = []
    for i, (k, v) in enumerate(d.items()):
        out.append((k, v * i))
    return out


@case("more", X())
def isinstance_over_sequential(x):
    for m in _MIXED:
        x = m(x)
        if isinstance(m, nn.ReLU):
            x = x * 2
    return x


@case("more", X())
def parameters_list_comprehension(x):
    sq = [(p * p).sum() for p in _MLP_A.parameters()]
    return _MLP_A(x).sum() + symtrace.stack(sq).sum() * 1e-3


@case("more", X())
def is_tensor_and_numel_bool(x):
    if symtrace.is_tensor(x) and x.numel():
        return x + 1
    return x


@case("more", X())
def shape_tuple_compare(x):
    if x.shape == (4, 8):
        return x.sum(0)
    return x.sum(1)


@case("more", X())
def moduledict_key_access(x):
    return _HEADS["a"](x), _HEADS["b"](x).softmax(-1)


@case("more", lambda rng: ([R(rng, 2, 3), R(rng, 4, 3), R(rng, 3, 3)],))
def max_with_key_lambda(xs):
    big = max(xs, key=lambda t: t.shape[0])
    return big * 2


@case("more", X())
def sequential_slice(x):
    return _SEQ[:2](x)


class _Point:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def norm2(self):
        return self.a * self.a + self.b * self.b


@case("more", X())
def math_sqrt_on_shape(x):
    return x / math.sqrt(x.shape[-1]) + math.log(2.0) * math.pi


@case("more", XY())
def operator_module_calls(x, y):
    return operator.add(x, y), operator.mul(x, 2), operator.getitem((1, 2), 0)


@case("more", X())
def functools_partial_call(x):
    sm = functools.partial(F.softmax, dim=-1)
    return sm(x)


@case("more", X())
def user_object_created_in_frame(x):
    p = _Point(2, 3)
    return x * p.norm2(), p.a


@case("more", X())
def exception_caught_inside(x):
    try:
        k = int("not a number")
    except ValueError:
        k = 4
    return x * k


@case("more", lambda rng: (R(rng, 4, 8), "double"))
def match_statement(x, mode):
    match mode:
        case "double":
            return x * 2
        case "neg":
            return -x
        case _:
            return x


@case("nn", lambda rng: (I(rng, 0, 5, 2, 6), R(rng, 2, 6, 8)))
def mask_from_input_ids(ids, hidden):
    pad_token_id = 0
    dtype = hidden.dtype
    mask = ((ids == pad_token_id).to(dtype) * -1e4).unsqueeze(1).unsqueeze(2)
    scores = (hidden @ hidden.transpose(-1, -2)).unsqueeze(1) + mask
    return scores.softmax(-1)


# ---- helpers for the tests ----
def by_name(name):
    for c in CASES:
        if c.name == name:
            return c
    raise KeyError(name)


def call(c, a):
    """Runs case c's fn on Args a (after c.reset)."""
    if c.reset is not None:
        c.reset()
    return c.fn(*a.args, **a.kwargs)


def to_np(t):
    return np.array(t.detach().numpy())


def assert_same(got, want, path="result", rtol=1e-4, atol=1e-5):
    """Structural equality: tensors allclose with equal dtype and shape;
    containers by type and items; other values by ==."""
    if isinstance(want, symtrace.Tensor):
        assert isinstance(got, symtrace.Tensor), f"{path}: {type(got).__name__}, want Tensor"
        assert got.dtype == want.dtype, f"{path}: dtype {got.dtype} != {want.dtype}"
        assert tuple(got.shape) == tuple(want.shape), f"{path}: shape {got.shape} != {want.shape}"
        assert got.requires_grad == want.requires_grad, f"{path}: requires_grad differs"
        g, w = to_np(got), to_np(want)
        if want.dtype.is_floating_point:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=path)
        else:
            np.testing.assert_array_equal(g, w, err_msg=path)
        return
    assert type(got) is type(want), f"{path}: type {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), f"{path}: len {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{path}[{i}]", rtol, atol)
    elif isinstance(want, dict):
        assert list(got.keys()) == list(want.keys()), f"{path}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_same(got[k], want[k], f"{path}[{k!r}]", rtol, atol)
    else:
        assert got == want, f"{path}: {got!r} != {want!r}"


def groups():
    out = {}
    for c in CASES:
        out.setdefault(c.group, []).append(c.name)
    return out

