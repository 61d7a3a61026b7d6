# Guards on the items of sets, frozensets, ranges and dict views that reach a
# compiled frame (an argument, a module attribute, the view a resume function
# receives after a graph break at d.items()): the translator reads their items
# as constants, so a later call with other items must not replay the first
# call's graph. Found by an HF-style BERT (ModelOutput, an OrderedDict subclass,
# read back through dict(self.items())[k]): its second training step backpropagated
# through the first step's freed graph, and forward values were stale.
import collections
import gc
import weakref

import pytest

import symtrace as st


@pytest.fixture(autouse=True)
def _fresh():
    st.reset()
    yield
    st.reset()


def _sum_items(x, v):
    out = x
    for e in v:
        out = out + (e[1] if isinstance(e, tuple) else e)
    return out + len(v)


def _views(i):
    d = {j: st.full((1,), float(j + 10 * i)) for j in range(1 + i % 2)}
    keys = {float(j + 10 * i): 0 for j in range(1 + i % 2)}
    return {"keys": keys.keys(), "values": d.values(), "items": d.items(),
            "set": set(keys), "frozenset": frozenset(keys),
            "odict_values": collections.OrderedDict(d).values(), "odict_items": collections.OrderedDict(d).items()}


@pytest.mark.parametrize("kind", ["keys", "values", "items", "set", "frozenset", "odict_values", "odict_items"])
def test_changed_items_of_an_argument_are_seen(kind):
    c = st.compile(_sum_items, backend="interp")
    for i in range(4):
        v = _views(i)[kind]
        assert c(st.zeros(1), v).tolist() == _sum_items(st.zeros(1), v).tolist(), (kind, i)


def test_a_range_argument_is_compared_by_value():
    def f(x, r):
        for i in r:
            x = x + i
        return x
    c = st.compile(f, backend="interp")
    for r in (range(3), range(1, 4), range(3), range(0, 6, 2)):
        assert c(st.zeros(1), r).tolist() == f(st.zeros(1), r).tolist(), r


def test_same_items_reuse_the_graph():
    c = st.compile(_sum_items, backend="interp")
    keys = {1.0: 0, 2.0: 0}
    for _ in range(3):
        c(st.zeros(1), keys.keys())
        c(st.zeros(1), set(keys))
    assert st._C._fe_stats()["graphs"] == 2


def test_a_set_attribute_of_a_module_mutated_between_calls():
    class Heads(st.nn.Module):
        def __init__(self):
            super().__init__()
            self.pruned = set()

        def forward(self, x):
            return x * 2 if 3 in self.pruned else x + 1

    m = Heads()
    c = st.compile(m, backend="interp")
    assert c(st.ones(1)).tolist() == [2.0]
    m.pruned.add(3)
    assert c(st.ones(1)).tolist() == [2.0 * 1]
    m.pruned.discard(3)
    assert c(st.ones(1)).tolist() == [2.0]


class Output(collections.OrderedDict):
    """HF's ModelOutput pattern: an OrderedDict subclass read through items()."""

    def get(self, k):
        return dict(self.items())[k]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_ordered_dict_subclass_read_through_items_trains(backend):
    if not st._C._fe_backend_available(backend):
        pytest.skip(backend)

    def f(x):
        o = Output()
        o["a"] = x * 3
        return o.get("a") * 2

    c = st.compile(f, backend=backend)
    for i in range(4):
        x = st.full((2,), float(i + 1), requires_grad=True)
        y = c(x)
        assert y.tolist() == [6.0 * (i + 1)] * 2, i
        y.sum().backward()                 # call 2 used to reach call 1's freed graph
        assert x.grad.tolist() == [6.0, 6.0]


def test_the_guard_does_not_keep_the_items_alive():
    c = st.compile(_sum_items, backend="interp")
    t = st.ones(1000)
    d = {0: t}
    c(st.zeros(1000), d.values())
    ref = weakref.ref(t)
    del t, d
    gc.collect()
    assert ref() is None


def test_the_values_of_a_dict_view_are_graph_inputs():
    # read through the dict the view reads: new tensors of the same shapes
    # replay the one graph
    c = st.compile(_sum_items, backend="interp")
    for i in range(4):
        d = {"a": st.full((2,), float(i)), "b": st.full((2,), 1.0)}
        assert c(st.zeros(2), d.values()).tolist() == [float(i) + 3.0] * 2
        assert c(st.zeros(2), d.items()).tolist() == [float(i) + 3.0] * 2
    assert st._C._fe_stats()["graphs"] == 2
    d["c"] = st.ones(2)                    # another key: the dict's keys are guarded
    assert c(st.zeros(2), d.values()).tolist() == [3.0 + 1.0 + 1.0 + 3] * 2


def test_an_ordered_dict_reordered_between_calls():
    # move_to_end changes an OrderedDict's order, not the order of the dict
    # underneath, which the keys guard used to compare
    def f(x, d):
        return st.stack([x * v for v in d.values()]), list(d)

    c = st.compile(f, backend="interp")
    d = collections.OrderedDict(a=1.0, b=2.0, c=3.0)
    for _ in range(3):
        got, want = c(st.ones(1), d), f(st.ones(1), d)
        assert got[0].flatten().tolist() == want[0].flatten().tolist() and got[1] == want[1]
        d.move_to_end("a")


def test_guards_do_not_run_a_subclass_iter():
    # the keys guard of an OrderedDict subclass (HF's ModelOutput is one) and the
    # CONTENTS guard of a set read the C-level items, never a Python __iter__
    calls = []

    class OD(collections.OrderedDict):
        def __iter__(self):
            calls.append(1)
            return super().__iter__()

    def f(x, d):
        return x * d["b"]

    c = st.compile(f, backend="interp")
    d = OD(a=st.ones(1), b=st.full((1,), 5.0))
    for _ in range(3):
        assert c(st.ones(1), d).tolist() == [5.0]
    d.move_to_end("a")
    assert c(st.ones(1), d).tolist() == [5.0]
    assert calls == []


@pytest.mark.parametrize("read", ["od.values", "dict.values", "items", "iter"])
@pytest.mark.parametrize("sub", [False, True])
def test_ordered_dict_views_read_in_their_own_order(read, sub):
    # od.values() walks the OrderedDict's order, dict.values(od) the dict's
    # underneath: move_to_end changes only the first
    cls = type("OD", (collections.OrderedDict,), {}) if sub else collections.OrderedDict
    fns = {"od.values": lambda x, d: x * list(d.values())[0],
           "dict.values": lambda x, d: x * list(dict.values(d))[0],
           "items": lambda x, d: x * [v for _, v in d.items()][0],
           "iter": lambda x, d: x * d[next(iter(d))]}
    f = fns[read]
    c = st.compile(f, backend="interp")
    d = cls(a=st.ones(1), b=st.full((1,), 5.0))
    assert c(st.ones(1), d).tolist() == f(st.ones(1), d).tolist()
    d.move_to_end("a")
    for _ in range(2):
        assert c(st.ones(1), d).tolist() == f(st.ones(1), d).tolist()


@pytest.mark.parametrize("read", ["od.values", "dict.values", "dict.keys", "dict.items"])
def test_ordered_dicts_with_one_own_order_and_two_dict_orders(read):
    # od (reordered by move_to_end) and od2 (built in that order) iterate alike but
    # their dicts underneath do not: dict.values(od) read the first call's dict
    # order on the second, as the guard compared only the OrderedDict's order
    fns = {"od.values": lambda x, d: [x * v for v in d.values()],
           "dict.values": lambda x, d: [x * v for v in dict.values(d)],
           "dict.keys": lambda x, d: [x * d[k] for k in dict.keys(d)],
           "dict.items": lambda x, d: [x * v for _, v in dict.items(d)]}
    f = fns[read]
    c = st.compile(f, backend="interp")
    od = collections.OrderedDict(a=st.ones(1), b=st.full((1,), 2.0))
    od.move_to_end("a")
    od2 = collections.OrderedDict(b=st.full((1,), 2.0), a=st.ones(1))
    assert list(od) == list(od2) and list(dict.keys(od)) != list(dict.keys(od2))
    for d in (od, od2, od, od2):
        got, want = c(st.ones(1), d), f(st.ones(1), d)
        assert [t.tolist() for t in got] == [t.tolist() for t in want], (read, got, want)


def _write_then_read(d, view, x):
    n0 = len(view)
    d["new"] = x * 2
    d["a"] = d["a"] + 1
    out = x + 10 * n0 + len(view)
    for item in view:
        if isinstance(item, str):
            out = out + d[item]
        elif isinstance(item, tuple):
            out = out + item[1] * len(item[0])
        else:
            out = out + item
    return out


@pytest.mark.parametrize("kind", ["keys", "values", "items"])
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_view_argument_shows_writes_into_its_dict(kind, wrapped):
    # the view is passed in; the frame writes into its dict: len() and
    # iteration after the write see the new item and the new value
    def f(d, view, x):
        return _write_then_read(d, view[0] if wrapped else view, x)

    cf = st.compile(f)
    for i in range(3):
        outs = []
        for fn in (f, cf):
            d = {"a": st.ones(2) * i, "b": st.ones(2) * 2}
            view = getattr(d, kind)()
            outs.append((fn(d, (view,) if wrapped else view, st.ones(2) * i).tolist(), sorted(d)))
        assert outs[1] == outs[0]
