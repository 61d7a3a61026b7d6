# The generator's state as torch exposes it (symtrace/random.py, symtrace.cuda's rng
# functions, _C._rng_get_state/_rng_set_state in frontend/ops_bind.c): get_rng_state /
# set_rng_state replay rand, randn, randint and dropout exactly, eagerly and through
# compiled graphs (which reserve their counters from the generator when they run);
# fork_rng restores the state; bad states are refused with clear errors; under
# symtrace.compile the state functions are graph breaks, so compiled runs equal eager.
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F


def _draws():
    return [st.rand(7).numpy(), st.randn(3, 5).numpy(), st.randint(0, 100, (9,)).numpy(),
            F.dropout(st.ones(64), 0.5, training=True).numpy()]


def _same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_state_is_int64_seed_and_offset():
    st.manual_seed(1234)
    s = st.get_rng_state()
    assert s.dtype is st.int64 and tuple(s.shape) == (2,)
    assert s.tolist() == [1234, 0]
    st.rand(10)
    seed, off = st.get_rng_state().tolist()
    assert seed == 1234 and off > 0
    assert s.tolist() == [1234, 0]          # a copy, not a view of the generator
    assert st.initial_seed() == 1234


def test_set_rng_state_replays_eagerly():
    st.manual_seed(7)
    st.rand(3)
    s = st.get_rng_state()
    a = _draws()
    after = st.get_rng_state().tolist()
    st.rand(11)                              # move on
    st.set_rng_state(s)
    b = _draws()
    assert _same(a, b)
    assert st.get_rng_state().tolist() == after
    st.set_rng_state(s)
    c = st.rand(7).numpy()
    assert np.array_equal(c, a[0])
    assert not np.array_equal(st.rand(7).numpy(), a[0])


def test_state_with_seed_above_int63_round_trips():
    big = 2**64 - 5
    st.manual_seed(big)
    st.rand(2)
    s = st.get_rng_state()
    assert s.tolist()[0] == big - 2**64      # the uint64 bits read as int64
    a = st.randn(6).numpy()
    st.manual_seed(0)
    st.set_rng_state(s)
    assert st.initial_seed() == big
    assert np.array_equal(st.randn(6).numpy(), a)


def test_set_rng_state_from_a_made_tensor():
    st.manual_seed(99)
    st.rand(5)
    a = st.rand(4).numpy()
    st.set_rng_state(st.tensor([99, 5]))
    assert np.array_equal(st.rand(4).numpy(), a)


@pytest.mark.parametrize("bad, exc, words", [
    ([1, 2], TypeError, "list"),
    (None, TypeError, "NoneType"),
    ("state", TypeError, "str"),
])
def test_set_rng_state_refuses_non_tensors(bad, exc, words):
    before = st.get_rng_state().tolist()
    with pytest.raises(exc, match=words):
        st.set_rng_state(bad)
    assert st.get_rng_state().tolist() == before


@pytest.mark.parametrize("make, exc, words", [
    (lambda: st.zeros(2), TypeError, "int64"),
    (lambda: st.zeros(2, dtype=st.int32), TypeError, "int64"),
    (lambda: st.zeros(3, dtype=st.int64), RuntimeError, r"shape \(2,\)"),
    (lambda: st.zeros(1, 2, dtype=st.int64), RuntimeError, r"\(1, 2\)"),
    (lambda: st.tensor(5), RuntimeError, "shape"),
])
def test_set_rng_state_refuses_bad_tensors(make, exc, words):
    before = st.get_rng_state().tolist()
    with pytest.raises(exc, match=words):
        st.set_rng_state(make())
    assert st.get_rng_state().tolist() == before


def test_random_module_names():
    assert st.random.manual_seed is st.manual_seed
    assert st.random.initial_seed is st.initial_seed
    assert st.random.get_rng_state is st.get_rng_state
    assert st.random.set_rng_state is st.set_rng_state
    assert set(st.random.__all__) >= {"get_rng_state", "set_rng_state", "manual_seed", "seed",
                                      "initial_seed", "fork_rng"}
    st.random.manual_seed(42)
    assert st.random.initial_seed() == 42
    s = st.random.seed()
    assert isinstance(s, int) and 0 <= s < 2**64
    assert st.initial_seed() == s and st.get_rng_state().tolist() == [s, 0]


def test_fork_rng_restores_on_exit():
    st.manual_seed(3)
    before = st.get_rng_state().tolist()
    with st.random.fork_rng():
        inside = st.rand(8).numpy()
        st.manual_seed(77)
        st.rand(3)
    assert st.get_rng_state().tolist() == before
    assert np.array_equal(st.rand(8).numpy(), inside)   # the same numbers again


def test_fork_rng_restores_after_an_exception():
    st.manual_seed(3)
    before = st.get_rng_state().tolist()
    with pytest.raises(ZeroDivisionError):
        with st.random.fork_rng(devices=[]):
            st.rand(5)
            1 / 0
    assert st.get_rng_state().tolist() == before


def test_fork_rng_disabled_and_devices():
    st.manual_seed(3)
    with st.random.fork_rng(enabled=False):
        st.rand(5)
    assert st.get_rng_state().tolist() != [3, 0]
    st.manual_seed(3)
    with st.random.fork_rng(devices=iter([0]), device_type="cuda"):
        st.rand(5)
    assert st.get_rng_state().tolist() == [3, 0]
    with pytest.raises(TypeError, match="devices"):
        with st.random.fork_rng(devices=5):
            pass


def test_cuda_rng_functions_share_the_generator():
    st.cuda.manual_seed_all(21)
    assert st.initial_seed() == 21 and st.get_rng_state().tolist() == [21, 0]
    st.cuda.manual_seed(22)
    assert st.cuda.initial_seed() == 22
    if not st.cuda.is_available():
        assert st.cuda.get_rng_state_all() == []
        with pytest.raises(RuntimeError, match="CUDA"):
            st.cuda.get_rng_state()
        with pytest.raises(RuntimeError, match="CUDA"):
            st.cuda.set_rng_state(st.get_rng_state())
        st.cuda.set_rng_state_all([])
        return
    st.rand(3)
    g = st.cuda.get_rng_state()
    assert g.tolist() == st.get_rng_state().tolist()
    states = st.cuda.get_rng_state_all()
    assert len(states) == st.cuda.device_count()
    a = st.rand(5, device="cuda").cpu().numpy()
    st.cuda.set_rng_state(g)
    assert np.array_equal(st.rand(5, device="cuda").cpu().numpy(), a)
    st.cuda.set_rng_state_all(states)
    assert st.get_rng_state().tolist() == states[-1].tolist()
    with pytest.raises(TypeError, match="int64"):
        st.cuda.set_rng_state_all([st.zeros(2)])


# ---- under symtrace.compile ----
def _eq(a, b):
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    return len(a) == len(b) and all(np.array_equal(p.numpy(), q.numpy()) for p, q in zip(a, b))


def _eager_vs_compiled(fn, *args, calls=3):
    st.reset()
    st.manual_seed(0)
    e = [fn(*args) for _ in range(calls)]
    es = st.get_rng_state().tolist()
    cf = st.compile(fn)
    st.manual_seed(0)
    c = [cf(*args) for _ in range(calls)]
    assert st.get_rng_state().tolist() == es
    assert all(_eq(p, q) for p, q in zip(e, c))
    return e, c


def test_compiled_get_rng_state_is_read_each_call():
    def f(x):
        s = st.get_rng_state()
        return x + st.rand(4), s

    e, c = _eager_vs_compiled(f, st.ones(4))
    offsets = [s.tolist()[1] for _, s in c]
    assert len(set(offsets)) == 3            # not baked into the graph
    rep = st.explain(f, st.ones(4))
    assert any("get_rng_state" in b.reason for b in rep.break_reasons), str(rep)


def test_compiled_set_rng_state_replays_dropout():
    def f(x):
        s = st.get_rng_state()
        a = F.dropout(x, 0.5, training=True)
        st.set_rng_state(s)
        b = F.dropout(x, 0.5, training=True)
        return a, b

    e, c = _eager_vs_compiled(f, st.ones(256))
    for a, b in c:
        assert np.array_equal(a.numpy(), b.numpy())
        assert 0 < (a.numpy() == 0).sum() < 256
    rep = st.explain(f, st.ones(256))
    assert any("set_rng_state" in b.reason for b in rep.break_reasons), str(rep)


def test_compiled_set_rng_state_from_an_argument():
    def f(x, s):
        st.set_rng_state(s)
        return x + st.rand(4)

    st.manual_seed(5)
    s = st.get_rng_state()
    x = st.ones(4)
    ref = f(x, s).numpy()
    cf = st.compile(f)
    for _ in range(3):
        assert np.array_equal(cf(x, s).numpy(), ref)
    s2 = st.tensor([11, 40])
    assert np.array_equal(cf(x, s2).numpy(), f(x, s2).numpy())


def test_compiled_graph_with_dropout_replays_after_set_rng_state():
    w = st.randn(16, 16)

    def f(x):
        return F.dropout((x @ w).relu(), 0.3, training=True) + st.rand(16)

    x = st.randn(8, 16)
    cf = st.compile(f)
    cf(x)                                    # translated once
    st.manual_seed(9)
    st.rand(3)
    s = st.get_rng_state()
    a = cf(x).numpy()
    end = st.get_rng_state().tolist()
    st.set_rng_state(s)
    b = cf(x).numpy()
    assert np.array_equal(a, b)
    assert st.get_rng_state().tolist() == end
    st.set_rng_state(s)
    assert np.array_equal(f(x).numpy(), a)   # the graph draws what eager mode draws
    assert st.get_rng_state().tolist() == end
    rep = st.explain(f, x)
    assert rep.graph_count == 1 and rep.graph_break_count == 0, str(rep)


def test_compiled_fork_rng_matches_eager():
    def f(x):
        with st.random.fork_rng():
            a = st.rand(4)
        return x + a + st.rand(4)

    st.manual_seed(0)
    a = st.rand(4).numpy()
    e, c = _eager_vs_compiled(f, st.ones(4))
    # forked: the draw after the block repeats the one inside it
    assert np.allclose(c[0].numpy(), 1 + 2 * a)


def test_no_warning_on_import_and_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st.set_rng_state(st.get_rng_state())
        with st.random.fork_rng():
            st.rand(1)
    assert st.get_rng_state().dtype is st.int64


def test_initial_seed_is_not_baked_into_a_compiled_graph():
    def f(x):
        return x + st.initial_seed()
    c = st.compile(f)
    for s in (2, 3, 4):
        st.manual_seed(s)
        assert c(st.zeros(2)).tolist() == [float(s), float(s)]
