"""Sources and guards (frontend/guards.c), driven through _C._fe_GuardProbe,
and recompilation through symtrace.compile when a guarded value changes."""
from collections import OrderedDict

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
from symtrace import _C

pytestmark = pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")

G_SCALE = 2.0
G_LIST = [1, 2, 3]


def fx(x, y=None, z=None):
    return x


def make_closure():
    captured = st.ones(2)

    def inner(a):
        return a + captured
    return inner


class Obj:
    cls_attr = 7

    def __init__(self):
        self.v = 3

    @property
    def prop(self):
        return self.v * 10


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.scale = 2.0


def probe():
    return _C._fe_GuardProbe()


def test_sources_are_interned_and_printed():
    p = probe()
    a = p.src("local", 0, "x")
    assert p.src("local", 0, "x") == a
    g = p.src("global", "G_SCALE")
    assert p.src("global", "G_SCALE") == g != a
    at = p.src("attr", a, "weight")
    assert p.src("attr", a, "weight") == at
    it = p.src("item", a, 0)
    assert p.src("item", a, 0) == it and p.src("item", a, 1) != it
    assert p.src("item", a, "0") != it              # key type matters
    mp = p.src("modpart", a, "_modules", "lin")
    assert p.src("modpart", a, "_modules", "lin") == mp
    assert p.sizes()[0] == 7
    assert p.repr(a) == "L['x']"
    assert p.repr(g) == "G['G_SCALE']"
    assert p.repr(at) == "L['x'].weight"
    assert p.repr(it) == "L['x'][0]"
    assert p.repr(mp) == "L['x']._modules['lin']"
    assert p.repr(p.src("builtin", "len")) == "G['__builtins__']['len']"
    w = p.src("modpart", mp, "_parameters", "weight")
    assert p.repr(w) == "L['x']._modules['lin']._parameters['weight']"
    assert p.is_static(mp) and p.is_static(w) and not p.is_static(a) and not p.is_static(at)
    assert p.is_static(p.src("attr", mp, "training"))


def test_eval_each_kind():
    p = probe()
    o, lst, d, t = Obj(), [10, 20, 30], {"k": 5}, (1, (2, 3))
    args = (o, lst, d)
    x = p.src("local", 0, "x")
    assert p.eval(p.src("attr", x, "v"), fx, args) == 3
    assert p.eval(p.src("attr", x, "prop"), fx, args) == 30          # descriptor honoured
    assert p.eval(p.src("attr", x, "cls_attr"), fx, args) == 7
    with pytest.raises(LookupError):
        p.eval(p.src("attr", x, "nope"), fx, args)
    y = p.src("local", 1, "y")
    assert p.eval(p.src("item", y, 1), fx, args) == 20
    assert p.eval(p.src("item", y, -1), fx, args) == 30
    with pytest.raises(LookupError):
        p.eval(p.src("item", y, 3), fx, args)
    z = p.src("local", 2, "z")
    assert p.eval(p.src("item", z, "k"), fx, args) == 5
    with pytest.raises(LookupError):
        p.eval(p.src("item", z, "q"), fx, args)
    assert p.eval(p.src("item", p.src("item", x, 1), 0), fx, (t,)) == 2
    assert p.eval(p.src("global", "G_SCALE"), fx, args) == 2.0
    with pytest.raises(LookupError):
        p.eval(p.src("global", "NOT_THERE"), fx, args)
    assert p.eval(p.src("builtin", "len"), fx, args) is len
    inner = make_closure()
    c = p.src("closure", 0, "captured")
    assert p.eval(c, inner, (st.ones(2),)) is inner.__closure__[0].cell_contents
    with pytest.raises(LookupError):                                  # arg not passed
        p.eval(z, fx, (o,))


def test_modpart_reads_dicts_without_module_getattr():
    net = Net()
    p = probe()
    x = p.src("local", 0, "x")
    lin = p.src("modpart", x, "_modules", "lin")
    w = p.src("modpart", lin, "_parameters", "weight")
    assert p.eval(lin, fx, (net,)) is net.lin
    assert p.eval(w, fx, (net,)) is net.lin.weight
    assert p.eval(p.src("attr", lin, "training"), fx, (net,)) is True
    assert p.eval(p.src("attr", x, "scale"), fx, (net,)) == 2.0
    # Module.__getattr__ (Python) is not run for attributes: its dicts are read directly
    # (an ABSENT guard sees a submodule, parameter or buffer registered since)
    assert p.eval(p.src("attr", x, "lin"), fx, (net,)) is net.lin
    assert p.eval(p.src("attr", lin, "weight"), fx, (net,)) is net.lin.weight
    with pytest.raises(LookupError):
        p.eval(p.src("attr", x, "not_there"), fx, (net,))
    with pytest.raises(LookupError):
        p.eval(p.src("modpart", x, "_parameters", "lin"), fx, (net,))


def test_default_guards_and_describe():
    p = probe()
    net = Net()
    t = st.randn(2, 3)
    args = (t, 4, "s")
    srcs = [p.src("local", i, n) for i, n in enumerate("xyz")]
    for s in srcs:
        p.guard(s, fx, args)
    p.guard(p.src("global", "G_LIST"), fx, args)
    p.guard(p.src("global", "G_SCALE"), fx, args)
    p.guard(p.src("global", "fx"), fx, args)
    p.guard(p.src("global", "OrderedDict"), fx, args)
    n = p.src("local", 0, "x")
    assert p.sizes()[1] == 7
    p.guard(n, fx, args)                        # once per source
    assert p.sizes()[1] == 7
    d = p.describe()
    assert d[0].startswith("GRAD_MODE: is_grad_enabled() == ")
    assert d[1] == "TENSOR_MATCH: L['x'] float32 [2, 3] stride=[3, 1] cpu requires_grad=False"
    assert d[2] == "EQUALS_MATCH: L['y'] == 4"
    assert d[3] == "EQUALS_MATCH: L['z'] == 's'"
    assert d[4] == "LENGTH_CHECK: type(G['G_LIST']) is list and len(G['G_LIST']) == 3"
    assert d[5] == "EQUALS_MATCH: G['G_SCALE'] == 2.0"
    assert d[6].startswith("ID_MATCH: G['fx'] is <function object at")
    assert d[7] == "ID_MATCH: G['OrderedDict'] is <class 'collections.OrderedDict'>"
    q = probe()
    for i, v in enumerate([net, {"a": 1, "b": 2}, Obj(), (1, 2.0, None), st.float32, st.device("cpu")]):
        s = q.src("local", 0, "x") if i == 0 else q.src("item", q.src("local", 1, "y"), i)
        q.guard(s, fx, (net, [None, *[{"a": 1, "b": 2}, Obj(), (1, 2.0, None), st.float32,
                                         st.device("cpu")]]))
    d = q.describe()
    assert d[1].startswith("ID_MATCH: L['x'] is <Net object")
    assert d[2] == "DICT_KEYS: list(L['y'][1].keys()) == ['a', 'b']"
    assert d[3].startswith("TYPE_MATCH: type(L['y'][2]) is Obj")
    assert d[4] == "EQUALS_MATCH: L['y'][3] == (1, 2.0, None)"
    assert d[5] == "EQUALS_MATCH: L['y'][4] == symtrace.float32"
    assert d[6].startswith("EQUALS_MATCH: L['y'][5] == device(type='cpu')")


def test_check_pass_and_fail():
    p = probe()
    t = st.randn(2, 3)
    x, y, z = (p.src("local", i, n) for i, n in enumerate("xyz"))
    for s in (x, y, z):
        p.guard(s, fx, (t, 4, {"a": 1}))
    assert p.check(fx, (t, 4, {"a": 1})) is True
    assert p.check(fx, (st.randn(2, 3), 4, {"a": 7})) is True           # values are not guarded
    assert p.check(fx, (st.randn(3, 3), 4, {"a": 1})) == "L['x']"       # shape
    assert p.check(fx, (st.randn(2, 3).double(), 4, {"a": 1})) == "L['x']"   # dtype
    assert p.check(fx, (st.randn(3, 2).t(), 4, {"a": 1})) == "L['x']"   # strides
    assert p.check(fx, (st.randn(2, 3, requires_grad=True), 4, {"a": 1})) == "L['x']"
    assert p.check(fx, (t, 5, {"a": 1})) == "L['y']"
    assert p.check(fx, (t, 4.0, {"a": 1})) == "L['y']"                  # type(4.0) is not int
    assert p.check(fx, (t, True, {"a": 1})) == "L['y']"
    assert p.check(fx, (t, 4, {"b": 1})) == "L['z']"
    assert p.check(fx, (t, 4, OrderedDict(a=1))) == "L['z']"
    assert p.check(fx, (t,)) == "L['y']"                                # missing
    with st.no_grad():
        assert p.check(fx, (t, 4, {"a": 1})) == "GRAD_MODE"


def test_absent_and_explicit_guards():
    p = probe()
    o = Obj()
    a = p.src("attr", p.src("local", 0, "x"), "later")
    p.add("ABSENT", a)
    assert p.check(fx, (o,)) is True
    o.later = 1
    assert p.check(fx, (o,)) == "L['x'].later"
    q = probe()
    x = q.src("local", 0, "x")
    q.add("ID", x, o)
    assert q.check(fx, (o,)) is True and q.check(fx, (Obj(),)) == "L['x']"
    q2 = probe()
    q2.add("TYPE", q2.src("local", 0, "x"), Obj)
    assert q2.check(fx, (Obj(),)) is True and q2.check(fx, (1,)) == "L['x']"


def test_static_guards_skipped_until_an_epoch_moves():
    net = Net()
    p = probe()
    x = p.src("local", 0, "x")
    p.guard(x, fx, (net,))
    lin = p.src("modpart", x, "_modules", "lin")
    p.guard(lin, fx, (net,))
    w = p.src("modpart", lin, "_parameters", "weight")
    p.guard(w, fx, (net,))
    assert p.check(fx, (net,)) is True
    # a change behind the Module's back (no __setattr__, no epoch): the
    # _parameters dict's version stamp moved, so the static guards are checked
    old_w = net.lin.weight
    net.lin.__dict__["_parameters"]["weight"] = nn.Parameter(st.randn(5, 5))
    assert p.check(fx, (net,)) == "L['x']._modules['lin']._parameters['weight']"
    _C._fe_bump_module_epoch()
    assert p.check(fx, (net,)) == "L['x']._modules['lin']._parameters['weight']"
    net.lin.__dict__["_parameters"]["weight"] = old_w
    assert p.check(fx, (net,)) is True
    net.lin.weight = nn.Parameter(st.randn(3, 3))       # through __setattr__: bumps the epoch
    assert p.check(fx, (net,)) is True
    e0 = _C._fe_epochs()
    net.lin.weight.requires_grad_(False)                 # meta epoch
    assert _C._fe_epochs()[1] == e0[1] + 1
    assert p.check(fx, (net,)) == "L['x']._modules['lin']._parameters['weight']"
    net.lin.weight.requires_grad_(True)
    assert p.check(fx, (net,)) is True
    net2 = Net()                                          # the root is always checked
    assert p.check(fx, (net2,)) == "L['x']"


def test_module_epoch_bumps():
    net = Net()
    e = _C._fe_epochs()[0]
    net.scale = 3.0
    assert _C._fe_epochs()[0] > e
    e = _C._fe_epochs()[0]
    del net.scale
    assert _C._fe_epochs()[0] > e
    e = _C._fe_epochs()[0]
    net.register_buffer("b", st.zeros(2))
    assert _C._fe_epochs()[0] > e
    e = _C._fe_epochs()[0]
    net.eval()
    assert _C._fe_epochs()[0] > e
    e = _C._fe_epochs()[0]
    net.double()
    assert _C._fe_epochs()[0] > e


# ---------------- recompilation through symtrace.compile ----------------
@pytest.fixture
def fresh():
    st.reset()
    yield
    st.reset()


def close(a, b):
    return np.allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5)


def translations():
    return _C._fe_stats()["translations"]


def scaled(x, n):
    return x * n + 1


def test_recompile_on_tensor_meta(fresh):
    c = st.compile(scaled, backend="interp")
    x = st.randn(2, 3)
    assert close(c(x, 2), scaled(x, 2))
    x2 = st.randn(2, 3)
    assert close(c(x2, 2), scaled(x2, 2))               # same meta: a hit
    t0 = translations()
    y = st.randn(4, 3)                                   # shape
    assert close(c(y, 2), scaled(y, 2))
    assert translations() == t0 + 1
    yd = st.randn(2, 3).double()                         # dtype
    r = c(yd, 2)
    assert r.dtype == st.float64 and close(r, scaled(yd, 2))
    assert translations() == t0 + 2
    yg = st.randn(2, 3, requires_grad=True)              # requires_grad
    r = c(yg, 2)
    assert r.requires_grad and close(r, scaled(yg, 2))
    assert translations() == t0 + 3
    xt = st.randn(3, 2).t()                              # strides
    assert close(c(xt, 2), scaled(xt, 2))
    assert translations() == t0 + 4
    for v in (x, y, yd, yg, xt):                         # all cached now
        c(v, 2)
    assert translations() == t0 + 4


def test_recompile_on_python_constants(fresh):
    c = st.compile(scaled, backend="interp")
    x = st.randn(3)
    for n in (2, 2, 3, 2.5, 3, 2):
        assert close(c(x, n), scaled(x, n))
    assert translations() == 3


def act(t):
    return t.relu()


def uses_global(x):
    return act(x) * G_SCALE


def test_recompile_on_global_swap(fresh):
    global act, G_SCALE
    c = st.compile(uses_global, backend="interp")
    x = st.randn(5)
    assert close(c(x), x.relu() * 2.0)
    old_act, old_scale = act, G_SCALE
    try:
        act = lambda t: t.sigmoid()                      # noqa: E731
        assert close(c(x), x.sigmoid() * 2.0)
        G_SCALE = 5.0
        assert close(c(x), x.sigmoid() * 5.0)
    finally:
        act, G_SCALE = old_act, old_scale
    assert close(c(x), x.relu() * 2.0)


def test_closure_value_guarded(fresh):
    inner = make_closure()
    c = st.compile(inner, backend="interp")
    a = st.randn(2)
    assert close(c(a), a + 1)
    inner.__closure__[0].cell_contents = st.ones(2) * 3  # same meta: an input, not a constant
    assert close(c(a), a + 3)


def test_static_sources_decided_by_the_guards():
    net = Net()
    net.lst = [1, 2]
    o = Obj()
    p = probe()
    x = p.src("local", 0, "x")
    y = p.src("local", 1, "y")
    mods = p.src("attr", x, "_modules")                  # read through the dict, as Sequential does
    lin_i = p.src("item", mods, "lin")
    w_i = p.src("modpart", lin_i, "_parameters", "weight")
    lin_m = p.src("modpart", x, "_modules", "lin")
    tr = p.src("attr", lin_m, "training")
    scale = p.src("attr", x, "scale")
    lst = p.src("attr", x, "lst")
    lst0 = p.src("item", lst, 0)
    ov = p.src("attr", y, "v")                          # a plain object: TYPE guard, never static
    ymods = p.src("modpart", y, "_modules", "q")
    args = (net, o)
    for s in (x, y, mods, lin_i, w_i, lin_m, tr, scale, lst, lst0, ov):
        p.guard(s, fx, args)
    nfront = p.partition()
    static = {p.repr(s): p.is_static(s) for s in (x, y, mods, lin_i, w_i, lin_m, tr, scale, lst,
                                                   lst0, ov, ymods)}
    assert static == {
        "L['x']": False, "L['y']": False, "L['x']._modules": True, "L['x']._modules['lin']": True,
        "L['x']._modules['lin']._parameters['weight']": True, "L['x'].scale": True,
        "L['x']._modules['lin'].training": True, "L['x'].lst": False, "L['x'].lst[0]": False,
        "L['y'].v": False, "L['y']._modules['q']": False}
    # always checked: x, y, lst (a mutable list: append moves no stamp), lst[0], y.v
    assert nfront == 5
    front = p.describe()[1:1 + nfront]                 # reordered: always-checked guards first
    assert [d.split(": ")[1].split(" ")[0] for d in front] == ["L['x']", "type(L['y'])", "type(L['x'].lst)",
                                                                "L['x'].lst[0]", "L['y'].v"]
    assert p.check_front(fx, args, nfront) is True
    net.lst.append(3)                                  # not static: seen
    assert p.check_front(fx, args, nfront) == "L['x'].lst"
    net.lst.pop()
    net.lst[0] = 9
    assert p.check_front(fx, args, nfront) == "L['x'].lst[0]"
    net.lst[0] = 1
    object.__setattr__(net, "scale", 5.0)              # behind the Module's back: the
    assert p.check_front(fx, args, nfront) == "L['x'].scale"   # __dict__ stamp moved: seen
    net.scale = 2.0
    assert p.check_front(fx, args, nfront) is True
    net.scale = 5.0                                    # through __setattr__: seen
    assert p.check_front(fx, args, nfront) == "L['x'].scale"


def test_bound_methods_guarded_by_equality():
    o, o2 = Obj(), Obj()
    p = probe()
    m = p.src("attr", p.src("local", 0, "x"), "__init__")
    p.guard(m, fx, (o,))
    assert p.describe()[1].startswith("EQUALS_MATCH: L['x'].__init__ == <bound method")
    assert p.check(fx, (o,)) is True                   # a new bound method object, equal
    assert p.check(fx, (o2,)) == "L['x'].__init__"
    q = probe()
    a = q.src("attr", q.src("local", 0, "x"), "append")
    lst = [1]
    q.guard(a, fx, (lst,))
    assert q.check(fx, (lst,)) is True and q.check(fx, ([1],)) == "L['x'].append"


def test_float_constants_compare_bit_for_bit():
    p = probe()
    y = p.src("local", 1, "y")
    p.guard(y, fx, (None, 0.0))
    assert p.check(fx, (None, 0.0)) is True
    assert p.check(fx, (None, -0.0)) == "L['y']"          # -0.0 == 0.0, but not the same constant
    q = probe()
    q.guard(q.src("local", 1, "y"), fx, (None, (1, float("nan"))))
    assert q.check(fx, (None, (1, float("nan")))) is True  # a NaN matches itself
    assert q.check(fx, (None, (1, -0.0))) == "L['y']"


class WithClassAttr(nn.Module):
    mult = 2.0

    def forward(self, x):
        return x * self.mult


def test_class_attribute_change_is_seen(fresh):
    m = WithClassAttr()
    c = st.compile(m, backend="interp")
    x = st.randn(3)
    try:
        for _ in range(3):
            assert close(c(x), x * 2.0)
        WithClassAttr.mult = 3.0                 # no Module.__setattr__: no epoch bump
        assert close(c(x), x * 3.0)
        m.mult = 5.0                             # an instance attribute now shadows it
        assert close(c(x), x * 5.0)
    finally:
        WithClassAttr.mult = 2.0


def test_namedtuple_result_built_without_translation(fresh):
    from collections import namedtuple
    Pair = namedtuple("Pair", ["a", "b"])

    def two(x):
        return Pair(x + 1, x * 2)
    c = st.compile(two, backend="interp")
    x = st.randn(3)
    for _ in range(3):
        r = c(x)
        assert type(r) is Pair and close(r.a, x + 1) and close(r.b, x * 2)
    assert translations() == 1
    assert _C._fe_stats()["hits"] == 2


def bump_then_read(a, b):
    a.add_(1)
    return b * 2


def test_input_aliasing_is_guarded(fresh):
    c = st.compile(bump_then_read, backend="interp")
    x, y = st.zeros(2), st.zeros(2)
    assert close(c(x, y), st.zeros(2)) and close(x, st.ones(2))
    t0 = translations()
    z = st.zeros(2)
    assert close(c(z, z), st.full((2,), 2.0))           # the same tensor twice: b saw a's write
    assert translations() == t0 + 1
    p, q = st.zeros(2), st.zeros(2)
    assert close(c(p, q), st.zeros(2))                   # distinct again: the first entry
    assert translations() == t0 + 1
    z2 = st.zeros(2)
    assert close(c(z2, z2), st.full((2,), 2.0))          # aliased again
