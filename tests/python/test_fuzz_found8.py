# Regressions of the bugs found by the eighth fuzzing round (scripts/fuzz_views.py,
# fuzz_guards.py, fuzz_compile.py, and a tuple-identity report), each with expected
# values, eager and compiled (the compiled functions called several times: the capture
# and the cached entries).
from collections import namedtuple

import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, load_fuzzer, maybe_compiled  # noqa: F401

Pair = namedtuple("Pair", "a b")


# ---- 1. a tuple made in the frame keeps its identity -------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["tuple", "namedtuple"])
def test_tuple_stored_and_returned_is_one_object(mode, kind):
    # t is stored in an outside dict and returned: eager, f(x) is d['t']. The
    # templates rebuilt a tuple wherever they met it (two objects on cached calls),
    # and the capture's plain-values pass copied every tuple (two objects there too)
    d = {}
    make = tuple if kind == "tuple" else (lambda it: Pair(*it))

    def f(x):
        t = make((x + 1, 2))
        d["t"] = t
        return t

    g = maybe_compiled(f, mode)
    for k in range(4):
        r = g(st.tensor([1.0, 2.0]))
        assert r is d["t"], k
        assert type(r) is (tuple if kind == "tuple" else Pair)
        assert r[0].tolist() == [2.0, 3.0] and r[1] == 2


@pytest.mark.parametrize("mode", MODES)
def test_tuple_in_outside_list_and_nested(mode):
    L, d = [], {}

    def f(x):
        inner = (x * 2,)
        t = (inner, 3)
        L.append(t)
        d["inner"] = inner
        return t, t, inner

    g = maybe_compiled(f, mode)
    for k in range(4):
        t1, t2, inner = g(st.tensor([1.0, 2.0]))
        assert t1 is t2 and t1 is L[-1], k
        assert inner is t1[0] and inner is d["inner"], k
        assert len(L) == k + 1
        assert inner[0].tolist() == [2.0, 4.0]


@pytest.mark.parametrize("mode", MODES)
def test_tuple_with_number_argument_stored_and_returned(mode):
    # a tuple holding a number argument (lazy in the translation, made a plain int)
    # is still one object in the capture and on every call
    d = {}

    def f(x, n):
        t = (x + n, n)
        d["t"] = t
        return t, t

    g = maybe_compiled(f, mode)
    for n in (1, 2, 3, 4):
        r1, r2 = g(st.tensor([1.0]), n)
        assert r1 is r2 and r1 is d["t"], n
        assert type(r1[1]) is int and r1[1] == n and r1[0].tolist() == [1.0 + n]


# ---- 3. as_strided reaching storage outside its input --------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("base_write", [False, True])
def test_as_strided_outside_its_input_gets_the_storage_gradient(mode, base_write):
    # x = c[1::2] holds storage elements 1, 3, 5; y = x.as_strided((3,), (1,), 0) reads
    # 0, 1, 2. symtrace's gradient is the storage-level one (elements 0 and 2 included),
    # whether or not the base is written after the view. torch gives the same after the
    # write (c.mul_(1): the view's node is remade with the base's geometry) but drops
    # 0 and 2 without it (its AsStridedBackward takes them for constants): ill-defined,
    # so fuzz_views compares such programs' compiled gradients with symtrace eager's
    def f(c):
        x = c[1::2]
        y = x.as_strided((3,), (1,), 0)
        if base_write:
            c.mul_(1)
        return y * 1

    g = maybe_compiled(f, mode, fullgraph=False)
    for k in range(3):
        b = st.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)
        y = g(b.clone())
        assert y.tolist() == [1.0, 2.0, 3.0], k
        (y * st.tensor([10.0, 20.0, 30.0])).sum().backward()
        assert b.grad.tolist() == [10.0, 20.0, 30.0, 0.0, 0.0, 0.0], k


def test_as_strided_outside_matches_torch_after_a_base_write():
    torch = pytest.importorskip("torch")
    for L in (torch, st):
        b = L.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)
        c = b.clone()
        y = c[1::2].as_strided((2, 2), (2, 1), 0)
        c.mul_(1)
        (y * L.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        assert b.grad.tolist() == [1.0, 2.0, 3.0, 4.0, 0.0, 0.0], L.__name__


@pytest.mark.parametrize("seed", [800032, 803163, 803496])
def test_fuzz_views_as_strided_outside_seeds(seed):
    # their torch gradients drop the elements outside the as_strided input: the fuzzer
    # compares the compiled gradients with symtrace eager's for them (and still finds
    # the forward values equal to torch's)
    fv = load_fuzzer("fuzz_views")
    assert fv.check(fv.generate(seed)) == []


# ---- 4. fresh fuzzer seeds ------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_data_write_after_a_break_keeps_the_saved_operand(mode):
    # x0.mul_(x1) saves x1; after a graph break, x1's storage is written only through a
    # .data alias, which moves no version (torch: .data has a counter of its own). The
    # capture call's trace put the storage back before its run with a version bump, so
    # its backward refused x1 as modified in place (fuzz_views seed 810012)
    def f(x0, x1):
        x0.mul_(x1)
        v = x1[:, ::2]
        print(end="")      # a graph break
        v.data.mul_(2)
        return x0, x1 * 1

    g = maybe_compiled(f, mode, fullgraph=False)
    for k in range(3):
        a = st.ones(2, 3, requires_grad=True)
        b = st.full((4, 3), 2.0, requires_grad=True)
        x0, x1 = g(a.clone(), b.clone()[2:])
        assert x0.tolist() == [[2.0] * 3] * 2, k
        assert x1.tolist() == [[4.0, 2.0, 4.0]] * 2, k
        x0.sum().backward()
        # torch: the saved x1 is read at backward time (the doubled columns)
        assert a.grad.tolist() == [[4.0, 2.0, 4.0]] * 2, k
        assert b.grad.tolist() == [[0.0] * 3] * 2 + [[1.0] * 3] * 2, k


class _Node:
    def __init__(self, k, child=None):
        self.k = k
        if child is not None:
            self.child = child


@pytest.mark.parametrize("mode", MODES)
def test_object_reached_through_two_sources_is_guarded_as_one(mode):
    # g.child is g on the first call: the entry's result named g.child through its first
    # source (g) and nothing guarded that they stay one object, so once g.child was
    # another node the cached call returned g (fuzz_guards seed 830505)
    def f(x, g):
        c = getattr(g, "child", None)
        n = _Node(float(x.shape[0]))
        g.child = n
        return x * 2, c, n

    h = maybe_compiled(f, mode)
    g = _Node(2.0)
    g.child = g
    prev = g
    for k in range(4):
        x = st.ones(3)
        y, c, n = h(x, g)
        assert c is prev, k
        assert g.child is n and n.k == 3.0 and y.tolist() == [2.0] * 3, k
        prev = n
        if k == 1:
            g.child = g       # the first call's aliasing again
            prev = g


@pytest.mark.parametrize("mode", MODES)
def test_checkpoint_of_a_written_view_argument(mode):
    # x0, a permuted view, written in place: its history is remade on first use (a
    # gather that saves its positions). That happened inside the non-reentrant
    # checkpoint's forward, one save more than its recomputation (on detached aliases)
    # made: CheckpointError 'a different number of tensors' (fuzz_compile seed 880166)
    def f(b):
        x0 = b.clone().permute(1, 0)
        x0[:, :1] = -0.25
        return st.utils.checkpoint.checkpoint(lambda a, c: a.mul(2) * c + c.cos(), x0, x0,
                                              use_reentrant=False)

    g = maybe_compiled(f, mode, fullgraph=False)
    for k in range(3):
        b = st.arange(12.0).reshape(3, 4).requires_grad_()
        v = g(b)
        assert v[:, 0].tolist() == pytest.approx([1.0939124] * 4, rel=1e-5), k
        assert v[:, 2].tolist() == pytest.approx([127.8545, 161.08887, 199.16093, 242.00443],
                                                 rel=1e-5), k
        v.sum().backward()
        assert b.grad.tolist()[0] == [0.0] * 4, k
        assert b.grad.tolist()[2] == pytest.approx([31.010643, 35.587883, 40.544022, 44.999992],
                                                   rel=1e-5), k


@pytest.mark.parametrize("mode", MODES)
def test_sdpa_with_no_features(mode):
    # q, k with a last dim of 0: the scores are zeros (torch: uniform attention, the mean
    # of the values); symtrace's 1 / sqrt(0) raised ZeroDivisionError, eager and in a
    # dynamic-shape compiled call with that size (fuzz_compile --dynamic seed 881021)
    def f(q, v):
        return st.nn.functional.scaled_dot_product_attention(q, q, v * 2)

    g = f if mode == "eager" else st.compile(f, backend=mode, dynamic=True)
    for e in (3, 0, 2, 0):
        q = st.ones(2, 3, e)
        v = st.arange(6.0).reshape(1, 3, 2).expand(2, 3, 2)
        out = g(q, v)
        assert out.shape == (2, 3, 2), e
        # uniform attention over the 3 keys either way (q @ k^T is constant per row)
        assert out.tolist() == [[[4.0, 6.0]] * 3] * 2, e
        assert g(q, q).shape == (2, 3, e)


@pytest.mark.parametrize("mode", MODES)
def test_scatter_src_bigger_than_its_index_gradient(mode):
    # torch's backward refuses it (ScatterBackward0 gives src a gradient of the index's
    # shape); symtrace's is src's shape, zeros where the index does not reach. A known
    # difference of fuzz_compile (--dynamic seed 881033: the second size made src bigger)
    import math

    def f(x):
        return st.sin(st.scatter(x.clone(), 0, st.tensor([3, 0, 1, 2]), x))

    g = f if mode == "eager" else st.compile(f, backend=mode, dynamic=True)
    for n in (4, 5, 6):
        x = st.arange(float(n)).requires_grad_()
        g(x).sum().backward()
        # src x[i] lands at index[i]; the clone keeps x[4:]; out = [x1, x2, x3, x0, x4, ...]
        want = [math.cos(0.0), math.cos(1.0), math.cos(2.0), math.cos(3.0)] + \
               [math.cos(float(i)) for i in range(4, n)]
        assert x.grad.tolist() == pytest.approx(want, rel=1e-5), n


def test_fuzz_compile_knows_torchs_scatter_backward_refusal():
    fc = load_fuzzer("fuzz_compile")
    assert fc.known("no-raise", "torch raised RuntimeError (backward): Function ScatterBackward0 "
                                "returned an invalid gradient at index 1 - got [4] but expected "
                                "shape compatible with [5]; symtrace did not")
