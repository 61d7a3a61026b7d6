# Object identity of what a compiled frame returns and stores (frontend
# templates, translator.c share_node and entry.c): a list, dict or user object
# made in the frame and reached from several places (returned twice, returned
# and appended to a list from outside, stored as an attribute) is one object,
# and an object read from the frame (a list argument, self.cache) is returned as
# that object, not a copy. Before, cached calls rebuilt each place separately:
# r[0] is r[1] held on the first call only, and a returned argument list was a
# copy whose mutation did not reach the caller's list.
import pytest

import symtrace as st


@pytest.fixture(autouse=True)
def _fresh():
    st.reset()
    yield
    st.reset()


class Box:
    pass


def calls(fn, *make_args, n=3):
    cf = st.compile(fn)
    for i in range(n):
        args = [m(i) for m in make_args]
        yield cf(*args), args


def test_a_fresh_dict_returned_twice_is_one_object():
    def f(x):
        o = {"a": x * 2}
        return o, [o]

    for r, _ in calls(f, lambda i: st.ones(2) * i):
        assert r[0] is r[1][0]
        r[0]["b"] = 1
        assert "b" in r[1][0]
    assert st._C._fe_stats()["breaks"] == 0


def test_a_fresh_user_object_returned_twice_is_one_graph_and_one_object():
    def f(x):
        o = Box()
        o.a = x * 2
        return o, {"again": o}

    for i, (r, _) in enumerate(calls(f, lambda i: st.ones(2) * i)):
        assert r[0] is r[1]["again"]
        assert r[0].a.tolist() == [2.0 * i] * 2
    stats = st._C._fe_stats()
    assert stats["breaks"] == 0 and stats["graphs"] == 1


def test_returned_and_stored_objects_are_the_same():
    holder_owner = Box()

    def f(x, holder):
        o = {"a": x * 2}
        holder.append(o)
        holder_owner.last = o
        return o

    for i, (r, (x, holder)) in enumerate(calls(f, lambda i: st.ones(2) * i, lambda i: [])):
        assert holder[0] is r and holder_owner.last is r
        assert r["a"].tolist() == [2.0 * i] * 2
    assert st._C._fe_stats()["breaks"] == 0


def test_arguments_and_attributes_are_returned_as_themselves():
    owner = Box()
    owner.items = [1, 2]

    def f(lst, d, x):
        return lst, d, owner.items, x * 2

    for (r, (lst, d, x)) in calls(f, lambda i: [st.ones(2)], lambda i: {"k": 1}, lambda i: st.ones(2)):
        assert r[0] is lst and r[1] is d and r[2] is owner.items
        r[0].append(5)
        assert len(lst) == 2
    assert st._C._fe_stats()["graphs"] == 1


def test_an_object_read_before_a_side_effect_rebinds_it():
    owner = Box()

    def f(x):
        old = owner.items
        owner.items = [x * 2]
        return old

    firsts = []
    cf = st.compile(f)
    for i in range(3):
        before = [0]
        owner.items = before
        r = cf(st.ones(2))
        firsts.append(r is before)
        assert owner.items[0].tolist() == [2.0, 2.0]
    assert firsts == [True, True, True]
    assert st._C._fe_stats()["graphs"] == 1


def test_a_list_argument_refilled_and_its_old_item_returned():
    def f(lst, x):
        old = lst[0]
        lst[:] = [x * 3]
        return old, lst

    cf = st.compile(f)
    for i in range(3):
        first = [0]
        lst = [first]
        r = cf(lst, st.ones(2))
        assert r[0] is first and r[1] is lst
        assert lst[0].tolist() == [3.0, 3.0]
    assert st._C._fe_stats()["graphs"] == 1


def test_a_structure_containing_itself_still_runs():
    def f(x):
        o = [x * 2]
        o.append(o)
        return o

    for i, (r, _) in enumerate(calls(f, lambda i: st.ones(2) * i)):
        assert r[1] is r
        assert r[0].tolist() == [2.0 * i] * 2


def test_objects_live_at_a_graph_break_keep_their_identity():
    def f(x):
        o = [x * 2]
        pair = (o, o)
        print_me = st.ones(1).item()      # a graph break
        pair[0].append(print_me)
        return pair[1], x + 1

    for i, (r, _) in enumerate(calls(f, lambda i: st.ones(2) * i)):
        assert len(r[0]) == 2 and r[0][1] == 1.0
        assert r[0][0].tolist() == [2.0 * i] * 2
