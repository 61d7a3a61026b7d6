# Side effects inside compiled frames (issue 7, "Side effects"): attribute
# stores on modules and objects, appends and item stores on lists and dicts
# from outside the frame, and global stores are recorded during translation
# and replayed after the graph, in program order, on every call (the
# translating call included); reads after a write inside the frame see the
# written value. Each test runs the same code eagerly on a twin state and
# compares results and side effects call by call. No torch here (3.12 too).
import numpy as np
import pytest

import symtrace
import symtrace.nn as nn
from symtrace import _C
from compile_corpus import assert_same

pytestmark = pytest.mark.skipif(not hasattr(symtrace, "compile"), reason="symtrace.compile is not built")


def T(*shape, seed=0, grad=False):
    rng = np.random.default_rng(seed)
    t = symtrace.tensor(rng.standard_normal(shape).astype(np.float32))
    return t.requires_grad_() if grad else t


def A(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture(autouse=True)
def _fresh():
    symtrace.reset()
    yield
    symtrace.reset()


def _stats():
    return _C._fe_stats()


def _explain(fn, *args):
    e = symtrace.explain(fn, *args)
    return e.graph_count, e.graph_break_count, [str(b.reason) for b in e.break_reasons]


class Net(nn.Module):
    """A linear layer with a call counter, a cached activation and a history."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(symtrace.tensor(A(4, 3, seed=1)))
        self.b = nn.Parameter(symtrace.tensor(A(3, seed=2)))
        self.step = 0
        self.hist = []

    def forward(self, x):
        self.step += 1
        h = (x @ self.w + self.b).relu()
        self.cache = h * 2
        self.hist.append(self.step)
        return h + self.cache.sum()


# ---------------------------------------------------------------- attribute stores
def test_step_counter_counts_like_eager():
    m, ref = Net(), Net()
    cm = symtrace.compile(m, backend="interp")
    for i in range(5):
        x = T(2, 4, seed=i)
        assert_same(cm(x), ref(x))
        assert m.step == ref.step == i + 1
        assert m.hist == ref.hist == list(range(1, i + 2))
        assert_same(m.cache, ref.cache)
    ng, nb, why = _explain(Net(), T(2, 4))
    assert nb == 0 and ng == 1, why


class Cacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(symtrace.tensor(A(4, 4, seed=3)))

    def forward(self, x):
        y = x @ self.w
        self.cache = y.tanh()
        self.last_input = x
        return y * 3


def test_cache_tensor_attribute_replayed_on_hits():
    m, ref = Cacher(), Cacher()
    cm = symtrace.compile(m, backend="interp")
    s0 = _stats()
    seen = []
    for i in range(4):
        x = T(3, 4, seed=10 + i)
        assert_same(cm(x), ref(x))
        assert_same(m.cache, ref.cache)
        assert m.last_input is x           # a source stored as is
        seen.append(m.cache)                # kept alive: ids stay unique
    s1 = _stats()
    assert s1["translations"] - s0["translations"] == 1
    assert s1["hits"] - s0["hits"] == 3    # the hits replayed the stores
    assert len({id(c) for c in seen}) == 4  # a new cached tensor per call
    ng, nb, why = _explain(Cacher(), T(3, 4))
    assert nb == 0 and ng == 1, why


class Box:
    pass


def _two_writes(x, box):
    box.v = x * 2
    first = box.v + 1          # reads the first write
    box.v = first * 3
    box.w = box.v - x          # reads the second write
    return box.v, box.w, first


def test_program_order_of_two_writes_and_reads_after_write():
    b, ref = Box(), Box()
    cf = symtrace.compile(_two_writes, backend="interp")
    for i in range(3):
        x = T(2, 3, seed=i)
        assert_same(cf(x, b), _two_writes(x, ref))
        assert_same(b.v, ref.v)
        assert_same(b.w, ref.w)
    ng, nb, why = _explain(_two_writes, T(2, 3), Box())
    assert nb == 0, why


def _attr_then_const(x, box):
    box.v = x + 1
    box.v = 7
    return x * box.v, hasattr(box, "fresh_attr"), _set_and_has(box)


def _set_and_has(box):
    box.fresh_attr = "yes"
    return hasattr(box, "fresh_attr") and box.fresh_attr == "yes"


def test_last_write_wins_and_hasattr_sees_writes():
    b, ref = Box(), Box()
    cf = symtrace.compile(_attr_then_const, backend="interp")
    for i in range(3):
        x = T(3, seed=i)
        got, want = cf(x, b), _attr_then_const(x, ref)
        assert_same(got, want)
        assert b.v == ref.v == 7 and b.fresh_attr == ref.fresh_attr == "yes"
        if i == 0:
            assert got[1] is False and got[2] is True


# ---------------------------------------------------------------- lists
_OUT = []


def _append_outside(x):
    y = x.exp()
    _OUT.append(y)
    _OUT.append(len(_OUT))
    n = len(_OUT)              # reads after the appends
    last = _OUT[-2] + 1
    return last, n


def test_append_to_outside_list_every_call():
    _OUT.clear()
    cf = symtrace.compile(_append_outside, backend="interp")
    ref = []
    for i in range(4):
        x = T(2, 2, seed=i)
        got = cf(x)
        y = x.exp()
        ref += [y, len(ref) + 1]
        assert got[1] == len(ref) == len(_OUT)
        assert_same(got[0], y + 1)
    for a, b in zip(_OUT, ref):
        assert_same(a, b)


class Recorder(nn.Module):
    def __init__(self):
        super().__init__()
        self.outs = []
        self.stats = {"calls": 0}

    def forward(self, x):
        y = x * 2 + 1
        self.outs.append(y)
        self.outs.extend([y.sum(), 5])
        self.outs.pop()
        self.stats["calls"] = self.stats["calls"] + 1
        self.stats["last"] = y.mean()
        return self.outs, len(self.outs)


def test_append_to_module_held_list_and_dict():
    m, ref = Recorder(), Recorder()
    cm = symtrace.compile(m, backend="interp")
    for i in range(3):
        x = T(3, 2, seed=i)
        got, want = cm(x), ref(x)
        assert got[0] is m.outs               # the original list, mutated
        assert_same(got, want)
        assert_same(m.outs, ref.outs)
        assert m.stats["calls"] == ref.stats["calls"] == i + 1
        assert_same(m.stats, ref.stats)
    ng, nb, why = _explain(Recorder(), T(3, 2))
    assert nb == 0, why


# ---------------------------------------------------------------- dicts
def _dict_store(d, x):
    d["out"] = x * 2
    d["sum"] = d["out"].sum()              # read after the write
    return d["out"] + 1, "out" in d, len(d)


def test_dict_item_store_replayed_on_hits():
    d, ref = {"out": T(2, 2), "sum": T()}, {"out": T(2, 2), "sum": T()}
    cf = symtrace.compile(_dict_store, backend="interp")
    s0 = _stats()
    for i in range(4):
        x = T(2, 2, seed=20 + i)
        assert_same(cf(d, x), _dict_store(ref, x))
        assert list(d) == list(ref)
        assert_same(d, ref)
    s1 = _stats()
    assert s1["translations"] - s0["translations"] == 1 and s1["hits"] - s0["hits"] == 3


def _dict_grow(d, x):
    d["n"] = d.get("n", 0) + 1
    d.setdefault("first", x)
    d.update(last=x + d["n"])
    del d["first"]
    d["first"] = d["n"]
    return x + d["n"]


def test_dict_methods_and_deletes():
    d, ref = {}, {}
    cf = symtrace.compile(_dict_grow, backend="interp")
    for i in range(3):
        x = T(2, seed=i)
        assert_same(cf(d, x), _dict_grow(ref, x))
        assert list(d) == list(ref)
        assert_same(d, ref)


# ---------------------------------------------------------------- globals
_COUNT = 0
_LAST = None


def _bump(x):
    global _COUNT, _LAST
    _COUNT += 1
    _LAST = x * _COUNT         # reads the written global
    return _LAST + _COUNT


def test_global_counter_and_global_tensor():
    global _COUNT, _LAST
    cf = symtrace.compile(_bump, backend="interp")
    _COUNT = 0
    for i in range(5):
        x = T(3, seed=i)
        got = cf(x)
        assert _COUNT == i + 1
        assert_same(_LAST, x * (i + 1))
        assert_same(got, x * (i + 1) + (i + 1))
    ng, nb, why = _explain(_bump, T(3))
    assert nb == 0, why


def _store_global_tensor(x):
    global _LAST
    _LAST = x.tanh()
    return x + 1


def test_global_store_replayed_on_hits():
    cf = symtrace.compile(_store_global_tensor, backend="interp")
    s0 = _stats()
    for i in range(4):
        x = T(2, 3, seed=i)
        assert_same(cf(x), x + 1)
        assert_same(_LAST, x.tanh())
    s1 = _stats()
    assert s1["translations"] - s0["translations"] == 1 and s1["hits"] - s0["hits"] == 3


# ---------------------------------------------------------------- effects with results
_LOG = []


def _everything(x, box, d):
    y = (x * 3).sigmoid()
    box.y = y
    _LOG.append(box.y.shape)
    d["y"] = y
    return y * 2, _LOG, d


def test_side_effects_with_returned_tensor_and_containers():
    _LOG.clear()
    b, d = Box(), {}
    cf = symtrace.compile(_everything, backend="interp")
    for i in range(3):
        x = T(2, 5, seed=i)
        r = cf(x, b, d)
        assert r[1] is _LOG and r[2] is d
        assert _LOG == [(2, 5)] * (i + 1)
        assert_same(r[0], (x * 3).sigmoid() * 2)
        assert b.y is d["y"]                  # one graph output, stored twice
        assert_same(b.y, (x * 3).sigmoid())


# ---------------------------------------------------------------- breaks that remain
_BAG = {Box()}


def _no_source(x):
    for b in _BAG:             # a set's items have no source
        b.v = x.sum()
    return x + 1


class Guarded:
    def __setattr__(self, k, v):
        object.__setattr__(self, k, v + 1)


_G = Guarded()


def _custom_setattr(x):
    _G.k = 1
    return x * 2


_TUP = ([1],)


def _set_mutation(x, s):
    s.add(3)
    return x


@pytest.mark.parametrize("fn,args,why", [
    (_no_source, lambda: (T(3),), "no source"),
    (_custom_setattr, lambda: (T(3),), "__setattr__"),
    (_set_mutation, lambda: (T(3), {1}), "set.add"),
])
def test_unsupported_mutations_still_break(fn, args, why):
    a = args()
    ng, nb, reasons = _explain(fn, *a)
    assert nb >= 1 and any(why in r and "side effect" in r for r in reasons), reasons
    # and the frame, run as plain Python, still has eager's effects
    cf = symtrace.compile(fn, backend="interp")
    assert_same(cf(*args()), fn(*args()))
    if fn is _custom_setattr:
        assert _G.k == 2


def test_translation_break_leaves_no_effect():
    """A frame that records effects and then breaks performs them only once
    (as plain Python), never also from the aborted translation."""
    box, log = Box(), []

    def f(x):
        box.n = getattr(box, "n", 0) + 1
        log.append(1)
        print("break here")
        return x

    cf = symtrace.compile(f, backend="interp")
    for i in range(3):
        cf(T(2))
    assert box.n == 3 and log == [1, 1, 1]


# ---------------------------------------------------------------- backward
class GradNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(symtrace.tensor(A(4, 4, seed=5)))
        self.calls = 0
        self.acts = []

    def forward(self, x):
        self.calls += 1
        h = (x @ self.w).tanh()
        self.act = h
        self.acts.append(h.detach())
        return (h * h).sum()


def test_side_effects_with_backward():
    m, ref = GradNet(), GradNet()
    cm = symtrace.compile(m, backend="interp")
    for i in range(3):
        x = T(2, 4, seed=30 + i, grad=True)
        xr = symtrace.tensor(x.detach().numpy().copy()).requires_grad_()
        loss, want = cm(x), ref(xr)
        assert_same(loss, want)
        loss.backward()
        want.backward()
        assert_same(m.w.grad, ref.w.grad)
        assert_same(x.grad, xr.grad)
        assert m.calls == ref.calls == i + 1
        assert_same(m.act.detach(), ref.act.detach())
        assert m.act.requires_grad and len(m.acts) == i + 1
        assert_same(m.acts, ref.acts)


# ---------------------------------------------------------------- state carried between calls
class Ema(nn.Module):
    """Reads a tensor attribute and a buffer, writes both back (running
    statistics): each call must see the previous call's writes."""

    def __init__(self):
        super().__init__()
        self.avg = symtrace.zeros(3)
        self.register_buffer("count", symtrace.zeros(1))

    def forward(self, x):
        self.avg = self.avg * 0.5 + x.mean(0)
        self.count = self.count + 1
        return x - self.avg, self.count


def test_state_written_back_is_read_by_the_next_call():
    m, ref = Ema(), Ema()
    cm = symtrace.compile(m, backend="interp")
    s0 = _stats()
    for i in range(6):
        x = T(4, 3, seed=40 + i)
        assert_same(cm(x), ref(x))
        assert_same(m.avg, ref.avg)
        assert_same(m.count, ref.count)
        assert "count" in m._buffers and "avg" not in m._buffers
    s1 = _stats()
    assert s1["translations"] - s0["translations"] == 1 and s1["hits"] - s0["hits"] == 5


# ---------------------------------------------------------------- aliases, inlining, in-place operators
class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = []
        self.table = {"a": 1}

    def _push(self, lst, v):
        lst.append(v)              # mutates the caller's alias, inlined
        return len(lst)

    def forward(self, x):
        alias = self.items
        n = self._push(self.items, x + 1)
        self.items += [x * 2]      # in-place operator, then an attribute store
        t = self.table
        t["b"] = n
        return len(alias), alias[-1], self.table["b"], list(t)


@pytest.mark.parametrize("backend", ["interp", "llvm", "eager"])
def test_aliases_inlined_callee_and_inplace_operator(backend):
    m, ref = Holder(), Holder()
    items_obj = m.items
    cm = symtrace.compile(m, backend=backend)
    for i in range(3):
        x = T(2, seed=i)
        assert_same(cm(x), ref(x))
        assert m.items is items_obj            # mutated in place, as eager does
        assert_same(m.items, ref.items)
        assert m.table == ref.table
    ng, nb, why = _explain(Holder(), T(2))
    assert nb == 0, why


class BadBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", symtrace.zeros(2))
        self.seen = 0

    def forward(self, x):
        self.seen = self.seen + 1
        self.buf = "not a tensor"      # Module.__setattr__ raises TypeError
        return x + 1


def test_failing_store_raises_like_eager():
    m = BadBuffer()
    cm = symtrace.compile(m, backend="interp")
    for _ in range(2):
        with pytest.raises(TypeError):
            BadBuffer()(T(2))
        with pytest.raises(TypeError):
            cm(T(2))
    assert m.seen == 2                     # the store before it happened, as in eager
    assert_same(m.buf, symtrace.zeros(2))
    # the hook is still usable
    assert_same(symtrace.compile(lambda x: x * 2, backend="interp")(T(2)), T(2) * 2)


def test_no_growth_over_many_calls():
    import gc
    m = Cacher()
    cm = symtrace.compile(m, backend="interp")
    x = T(3, 4)
    for _ in range(50):
        cm(x)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(2000):
        cm(x)
    gc.collect()
    assert len(gc.get_objects()) - before < 50


# ---------------------------------------------------------------- Python modules, aliasing, values
import types

_CFG = types.ModuleType("_side_effects_cfg")
exec("scale = 2\n"
     "def scaled(x):\n"
     "    return x * scale\n", _CFG.__dict__)


def _module_attr(x):
    before = _CFG.scaled(x)
    _CFG.scale = _CFG.scale + 1
    return before, _CFG.scaled(x), _CFG.scale   # the module's own global read sees the store


def test_python_module_attribute_store_seen_by_its_functions():
    cf = symtrace.compile(_module_attr, backend="interp")
    _CFG.scale = 2
    for i in range(3):
        x = T(3, seed=i)
        got = cf(x)
        assert _CFG.scale == 3 + i
        assert_same(got, (x * (2 + i), x * (3 + i), 3 + i))
    ng, nb, why = _explain(_module_attr, T(3))
    assert nb == 0, why


def _two_lists(a, b, x):
    a.append(x)
    b.append(x + 1)
    return len(a), len(b)


def test_same_list_through_two_arguments():
    shared, ref = [], []
    cf = symtrace.compile(_two_lists, backend="interp")
    for i in range(2):
        x = T(2, seed=i)
        assert cf(shared, shared, x) == _two_lists(ref, ref, x)
        assert_same(shared, ref)
    a, b, ra, rb = [], [], [], []    # distinct lists now: a new translation
    x = T(2, seed=5)
    assert cf(a, b, x) == _two_lists(ra, rb, x) == (1, 1)
    assert_same((a, b), (ra, rb))


class _Opaque:
    __slots__ = ("a",)     # slots: not rebuilt like a plain user object (tr_objects.c)


_HOLD = Box()


def _store_opaque(x):
    _HOLD.thing = _Opaque()    # a new object of a user class: not replayable
    return x + 1


def test_unreplayable_value_breaks_with_reason():
    ng, nb, reasons = _explain(_store_opaque, T(2))
    assert nb >= 1 and any("side effect" in r and "_Opaque" in r for r in reasons), reasons
    cf = symtrace.compile(_store_opaque, backend="interp")
    assert_same(cf(T(2)), T(2) + 1)
    assert isinstance(_HOLD.thing, _Opaque)


def _store_then_read_dict(x, box):
    box.v = 5
    return x + box.__dict__["v"]


def test_attribute_dict_read_after_store_breaks():
    """box.__dict__ would be stale while the store is pending: a break, and
    the frame as plain Python gives eager's result."""
    b = Box()
    b.v = 1
    ng, nb, reasons = _explain(_store_then_read_dict, T(2), b)
    assert nb >= 1 and any("__dict__" in r for r in reasons), reasons
    b.v = 1
    cf = symtrace.compile(_store_then_read_dict, backend="interp")
    assert_same(cf(T(2), b), T(2) + 5)
    assert b.v == 5


_PAIR_SRC = []


def _same_list_twice_in_a_loop(x):
    sizes = []
    for lst in (_PAIR_SRC, _PAIR_SRC):     # the iterator holds the list twice
        lst.append(x)
        sizes.append(len(lst))
    return sizes, x + len(_PAIR_SRC)


def test_list_seen_twice_through_an_unrolled_iterator():
    cf = symtrace.compile(_same_list_twice_in_a_loop, backend="interp")
    ref = []
    for i in range(3):
        x = T(2, seed=i)
        got = cf(x)
        ref += [x, x]
        assert got[0] == [2 * i + 1, 2 * i + 2]
        assert_same(got[1], x + len(ref))
        assert_same(_PAIR_SRC, ref)


class MakesParam(nn.Module):
    def forward(self, x):
        self.p = nn.Parameter(x * 2)       # registered by Module.__setattr__
        return x + 1


def test_new_parameter_store_breaks_and_registers_like_eager():
    ng, nb, reasons = _explain(MakesParam(), T(2))
    assert nb >= 1 and any("Parameter" in r for r in reasons), reasons
    m = MakesParam()
    cm = symtrace.compile(m, backend="interp")
    assert_same(cm(T(2)), T(2) + 1)
    assert "p" in m._parameters and isinstance(m.p, nn.Parameter)
