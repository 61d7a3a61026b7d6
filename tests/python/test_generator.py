# symtrace.Generator (symtrace/_generator.py): generator objects of their own
# state, as torch.Generator. A draw given generator=g comes from g (the same
# numbers the global generator gives after the same seed) and leaves the global
# generator untouched; reseeding g replays it. Every random function, Tensor's
# in-place fillers (uniform_, random_, exponential_, geometric_, log_normal_,
# cauchy_, normal_, bernoulli_), nn.init and the data samplers take it; under
# symtrace.compile the call is a graph break with the same results. Plus the
# fillers' distributions and torch's errors for them. Python 3.11 and 3.12.
import math
import pickle

import numpy as np
import pytest

import symtrace as st
import symtrace.nn.init as init
from symtrace import _C
from symtrace.utils.data import DataLoader, RandomSampler, TensorDataset, random_split

try:
    import torch
except ImportError:
    torch = None


def _state():
    return tuple(st.get_rng_state().tolist())


def test_generator_api():
    g = st.Generator()
    assert g.initial_seed() == 67280421310721 and g.get_offset() == 0 and str(g.device) == "cpu"
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    assert st.Generator().manual_seed(-1).initial_seed() == 2 ** 64 - 1
    for bad in (1.5, "a", True):
        with pytest.raises(RuntimeError, match="manual_seed expected a long"):
            g.manual_seed(bad)
    with pytest.raises(ValueError, match="Overflow"):
        g.manual_seed(2 ** 64)
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2 ** 63
    st.randn(10, generator=g.manual_seed(3))
    assert g.get_offset() > 0
    state = g.get_state()
    assert state.dtype is st.int64 and tuple(state.shape) == (2,)
    a = st.rand(4, generator=g)
    c = g.clone_state()
    b = st.rand(4, generator=g)
    assert np.array_equal(st.rand(4, generator=c).numpy(), b.numpy())
    g.set_state(state)
    assert np.array_equal(st.rand(4, generator=g).numpy(), a.numpy())
    off = g.get_offset()
    g.set_offset(off - 4)   # one draw of 4 back
    assert np.array_equal(st.rand(4, generator=g).numpy(), a.numpy())
    h = pickle.loads(pickle.dumps(g))
    assert h.get_offset() == g.get_offset() and np.array_equal(st.rand(3, generator=h).numpy(),
                                                               st.rand(3, generator=g).numpy())
    with pytest.raises(TypeError, match="expected an int64 Tensor"):
        g.set_state([1, 2])


def test_default_generator_is_the_global_one():
    assert st.manual_seed(7) is st.default_generator
    assert st.default_generator.initial_seed() == st.initial_seed() == 7
    st.default_generator.manual_seed(11)
    assert st.initial_seed() == 11
    a = st.randn(5, generator=st.default_generator)
    st.manual_seed(11)
    assert np.array_equal(st.randn(5).numpy(), a.numpy())
    assert tuple(st.default_generator.get_state().tolist()) == _state()


def test_draws_from_a_generator_leave_the_global_one_alone():
    st.manual_seed(0)
    want = st.randn(6).numpy()
    st.manual_seed(123)
    before = _state()
    g = st.Generator().manual_seed(0)
    got = st.randn(6, generator=g).numpy()
    assert _state() == before
    assert np.array_equal(got, want)
    # two generators are independent; a reseed replays
    g1, g2 = st.Generator().manual_seed(1), st.Generator().manual_seed(1)
    x1 = st.rand(3, generator=g1)
    st.rand(100, generator=g2)
    g2.manual_seed(1)
    assert np.array_equal(st.rand(3, generator=g2).numpy(), x1.numpy())
    with pytest.raises(TypeError, match="argument 'generator' must be symtrace.Generator, not int"):
        st.randn(3, generator=5)


def _every_draw(g):
    """One call of each random function given g; the results."""
    p = st.tensor([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]])
    t = st.zeros(3, 4)
    out = [st.rand(2, 3, generator=g), st.randn((4,), generator=g), st.randint(0, 9, (5,), generator=g),
           st.randint(4, (3,), generator=g), st.rand_like(t, generator=g), st.randn_like(t, generator=g),
           st.randint_like(t, 3, 8, generator=g), st.normal(2.0, 3.0, (4,), generator=g),
           st.normal(st.zeros(3), st.ones(3), generator=g), st.bernoulli(st.full((6,), 0.5), generator=g),
           st.multinomial(p, 2, generator=g), st.randperm(7, generator=g), st.randperm(3000, generator=g),
           p.bernoulli(generator=g), p.multinomial(1, generator=g)]
    for m in ("bernoulli_", "normal_", "uniform_", "random_", "exponential_", "log_normal_", "cauchy_"):
        out.append(getattr(st.zeros(3, 4), m)(generator=g))
    out.append(st.zeros(3, 4).geometric_(0.3, generator=g))
    for f in (init.uniform_, init.normal_, init.trunc_normal_, init.xavier_uniform_, init.xavier_normal_,
              init.kaiming_uniform_, init.kaiming_normal_, init.orthogonal_):
        out.append(f(st.zeros(4, 5), generator=g))
    out.append(init.sparse_(st.zeros(6, 4), 0.5, generator=g))
    return [o.numpy() for o in out]


def test_every_random_function_takes_a_generator():
    st.manual_seed(99)
    before = _state()
    first = _every_draw(st.Generator().manual_seed(42))
    assert _state() == before        # nothing came from the global generator
    again = _every_draw(st.Generator().manual_seed(42))
    other = _every_draw(st.Generator().manual_seed(43))
    for a, b in zip(first, again):
        assert np.array_equal(a, b)
    assert sum(not np.array_equal(a, b) for a, b in zip(first, other)) >= len(first) - 2
    # the same numbers as the global generator seeded alike
    st.manual_seed(42)
    glob = [st.rand(2, 3).numpy(), st.randn((4,)).numpy()]
    assert np.array_equal(glob[0], first[0]) and np.array_equal(glob[1], first[1])


def test_filler_distributions():
    g = st.Generator().manual_seed(0)
    n = 200000
    u = st.zeros(n).uniform_(2.0, 5.0, generator=g).numpy()
    assert u.min() >= 2.0 and u.max() < 5.0 and abs(u.mean() - 3.5) < 0.01
    r = st.zeros(n).random_(3, 6, generator=g).numpy()
    assert set(np.unique(r)) == {3.0, 4.0, 5.0}
    r = st.zeros(n, dtype=st.int64).random_(5, generator=g).numpy()
    assert set(np.unique(r)) == {0, 1, 2, 3, 4}
    r = st.zeros(n).random_(generator=g).numpy()
    assert r.min() >= 0 and r.max() <= 2 ** 24 and r.max() > 2 ** 23 and (r == np.round(r)).all()
    r = st.zeros(n, dtype=st.int64).random_(generator=g).numpy()
    assert r.min() >= 0 and r.max() > 2 ** 62 and (r % 256 != 0).mean() > 0.99   # 63 random bits
    r = st.zeros(n, dtype=st.int32).random_(generator=g).numpy()
    assert r.min() >= 0 and r.max() > 2 ** 30
    b = st.zeros(1000, dtype=st.bool).random_(generator=g).numpy()
    assert 0.4 < b.mean() < 0.6
    e = st.zeros(n, dtype=st.float64).exponential_(2.0, generator=g).numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01 and abs(e.std() - 0.5) < 0.01
    k = st.zeros(n).geometric_(0.3, generator=g).numpy()
    assert k.min() == 1 and (k == np.round(k)).all() and abs(k.mean() - 1 / 0.3) < 0.05
    assert abs((k == 1).mean() - 0.3) < 0.01
    ln = st.zeros(n, dtype=st.float64).log_normal_(0.0, 0.5, generator=g).numpy()
    assert ln.min() > 0 and abs(np.log(ln).mean()) < 0.01 and abs(np.log(ln).std() - 0.5) < 0.01
    c = st.zeros(n, dtype=st.float64).cauchy_(1.0, 2.0, generator=g).numpy()
    q1, med, q3 = np.percentile(c, [25, 50, 75])
    assert abs(med - 1.0) < 0.05 and abs(q1 + 1.0) < 0.05 and abs(q3 - 3.0) < 0.05


_FILLER_ERRORS = [
    (lambda m: m.zeros(3).uniform_(2, 1), "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    (lambda m: m.zeros(3, dtype=m.int64).uniform_(), "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda m: m.zeros(3).exponential_(0), "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda m: m.zeros(3).geometric_(1), "geometric_ expects p to be in (0, 1), but got p=1"),
    (lambda m: m.zeros(3).geometric_(0), "geometric_ expects p to be in (0, 1), but got p=0"),
    (lambda m: m.zeros(3).log_normal_(1, 0), "log_normal_ expects std > 0.0, but found std=0"),
    (lambda m: m.zeros(3).cauchy_(0, -1), "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    (lambda m: m.zeros(3).random_(5, 2), "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    (lambda m: m.zeros(3).random_(-1), "random_ expects 'from' to be less than 'to', but got from=0 >= to=-1"),
    (lambda m: m.zeros(3, dtype=m.int64).exponential_(),
     "Exponential distribution is a continuous probability distribution. dtype must be a floating point but "
     "you specified Long"),
    (lambda m: m.zeros(3, dtype=m.int64).normal_(), "\"normal_kernel_cpu\" not implemented for 'Long'"),
]


@pytest.mark.parametrize("case", range(len(_FILLER_ERRORS)))
def test_filler_errors_as_torch(case):
    fn, msg = _FILLER_ERRORS[case]
    with pytest.raises((RuntimeError, NotImplementedError)) as ours:
        fn(st)
    assert str(ours.value) == msg
    if torch is not None:
        with pytest.raises(type(ours.value)) as theirs:
            fn(torch)
        assert str(theirs.value) == msg


def test_samplers_and_loaders_draw_from_the_generator():
    ds = TensorDataset(st.arange(20.0))
    g = st.Generator().manual_seed(0)
    sampler = RandomSampler(ds, generator=g)
    e1, e2 = list(sampler), list(sampler)
    assert sorted(e1) == list(range(20)) and e1 != e2            # the generator advances per epoch
    g.manual_seed(0)
    assert list(sampler) == e1 and list(sampler) == e2           # a reseed replays
    loader = DataLoader(ds, batch_size=5, shuffle=True, generator=st.Generator().manual_seed(3))
    order = [b[0].tolist() for b in loader]
    loader2 = DataLoader(ds, batch_size=5, shuffle=True, generator=st.Generator().manual_seed(3))
    assert [b[0].tolist() for b in loader2] == order
    a, b = random_split(ds, [15, 5], generator=st.Generator().manual_seed(1))
    c, d = random_split(ds, [15, 5], generator=st.Generator().manual_seed(1))
    assert list(a.indices) == list(c.indices) and sorted(list(a.indices) + list(b.indices)) == list(range(20))


@pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")
def test_compiled_draws_from_a_generator():
    st.reset()
    g = st.Generator()

    def f(x):
        y = x * 2.0 + st.randn(x.shape, generator=g)
        w = init.normal_(st.zeros(4), 0.0, 1.0, g)          # generator positional
        return y + w + st.zeros(4).exponential_(generator=g) * x

    c = st.compile(f)
    x = st.ones(4)
    st.manual_seed(5)
    before = _state()
    g.manual_seed(8)
    got = [c(x).numpy() for _ in range(3)]
    assert _state() == before
    g.manual_seed(8)
    want = [f(x).numpy() for _ in range(3)]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(got[0], got[1])
    st.reset()


def test_generator_repr_and_math():
    assert repr(st.Generator()).startswith("<symtrace.Generator object at 0x")
    assert math.isclose(st.zeros(1).uniform_(1.0, 1.0).item(), 1.0)
