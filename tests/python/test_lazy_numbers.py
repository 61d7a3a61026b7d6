# Number arguments are guarded only when their value is used (frontend/
# tr_dynamic.c, symtrace/_symint.py's LazyInt/LazyFloat): a float or int a
# frame passes on, stores or returns is read from the frame on each call;
# one it computes with, compares, formats, indexes with or hands to code the
# translator does not follow is a guarded constant, as before. This keeps a
# resume function that returns `loss.item()` at one entry instead of one
# per value. Python 3.11 and 3.12, no torch.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C

pytestmark = pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")


@pytest.fixture(autouse=True)
def _fresh():
    st.reset()
    yield
    st.reset()


def translations():
    return _C._fe_stats()["translations"]


def same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, st.Tensor):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    else:
        assert a == b and type(a) is type(b), (a, b)


def test_training_step_returning_item_does_not_recompile():
    st.manual_seed(0)
    m = st.nn.Linear(4, 1)
    opt = st.optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        loss = (m(x) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.item()

    st.manual_seed(1)
    m2 = st.nn.Linear(4, 1)
    m2.load_state_dict(m.state_dict())
    opt2 = st.optim.SGD(m2.parameters(), lr=0.1)

    def step2(x):
        loss = (m2(x) ** 2).mean()
        loss.backward()
        opt2.step()
        opt2.zero_grad()
        return loss.item()

    c = st.compile(step, backend="interp")
    rng = np.random.default_rng(0)
    for _ in range(100):
        x = st.tensor(rng.standard_normal((3, 4)).astype(np.float32))
        got, want = c(x), step2(x)
        assert type(got) is float and abs(got - want) <= 1e-6 * max(1.0, abs(want))
    s = _C._fe_stats()
    assert s["translations"] <= 6 and s["fallbacks"] == 0, s
    assert not any(v["plain"] for v in s["codes"].values())


def test_passed_on_values_are_not_guarded():
    def f(x, lr, n):
        return x * 2, lr, [n, lr], {"lr": lr}
    c = st.compile(f, backend="interp")
    x = st.randn(3)
    for lr, n in [(0.1, 3), (0.2, 4), (1e-3, -7), (0.1, 3)]:
        same(c(x, lr, n), f(x, lr, n))
    assert translations() == 1


def test_used_values_are_guarded():
    def scale(x, lr):
        return x * lr                      # a constant of the graph

    def count(x, n):
        for _ in range(n):                 # the trip count
            x = x + 1
        return x

    def branch(x, t):
        return x + 1 if t > 0.5 else x - 1

    def index(x, i):
        return x[i]

    def attr(x, v):
        return x * 2 if v.is_integer() else x

    def key(x, k):
        return x * {1: 2.0, 2: 3.0}[k]

    def fmt(x, v):
        return x + len(f"{v:.3f}")
    cases = [(scale, [0.5, 0.25, 0.5]), (count, [2, 3, 2]), (branch, [0.7, 0.2, 0.9]),
             (index, [0, 2, -1]), (attr, [2.0, 2.5, 3.0]), (key, [1, 2, 1]), (fmt, [1.0, 123.25, 1.0])]
    for fn, vals in cases:
        st.reset()
        c = st.compile(fn, backend="interp")
        x = st.randn(3)
        for v in vals:
            same(c(x, v), fn(x, v))
        assert translations() >= 2, fn.__name__


def test_stored_value_is_the_call_s_plain_number():
    class M(st.nn.Module):
        def forward(self, x, lr):
            self.last_lr = lr
            return x * 2
    m = M()
    c = st.compile(m, backend="interp")
    x = st.randn(2)
    for lr in (0.1, 0.01, 0.5):
        c(x, lr)
        assert m.last_lr == lr and type(m.last_lr) is float
    assert translations() == 1


def test_bools_and_big_ints_stay_guarded_values():
    def f(x, flag, big):
        return (x + 1 if flag else x), big
    c = st.compile(f, backend="interp")
    x = st.randn(2)
    for flag, big in [(True, 1 << 70), (False, 1 << 70), (True, 1 << 71)]:
        same(c(x, flag, big), f(x, flag, big))
    assert translations() == 3


# ---------------------------------------------------------------- int attributes and globals
class Counter(st.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = st.nn.Linear(4, 4)
        self.step = 0
        self.heads = 2

    def forward(self, x):
        self.step += 1                                  # read, add, store: an expression
        y = self.lin(x).view(x.shape[0], self.heads, -1)   # heads as a size: guarded
        if self.step % 3 == 0:                          # a relation: guarded
            y = y * 2
        return y.sum(-1), self.step


def test_counter_attribute_does_not_recompile():
    m = Counter()
    ref = Counter()
    ref.load_state_dict(m.state_dict())
    c = st.compile(m, backend="interp")
    x = st.randn(3, 4)
    for _ in range(30):
        got, want = c(x), ref(x)
        same(got, want)
    assert m.step == 30 and type(m.step) is int
    # one entry per outcome of step % 3 == 0, none per step value
    assert translations() == 2
    e = st.explain(Counter(), x)
    assert any("SYMBOLIC_SHAPE" in g and "L['self'].step" in g for g in e.guards), e.guards
    assert any("SYMBOLIC_SHAPE" in g and "L['self'].heads" in g and "== 2" in g for g in e.guards)


def test_changed_int_attribute_used_as_a_size_retranslates():
    m = Counter()
    c = st.compile(m, backend="interp")
    x = st.randn(3, 4)
    c(x)
    m.heads = 4
    ref = Counter()
    ref.load_state_dict(m.state_dict())
    ref.heads, ref.step = 4, m.step
    same(c(x), ref(x))
    assert translations() == 2


_GLOBAL_CALLS = 0


def _count_calls(x):
    global _GLOBAL_CALLS
    _GLOBAL_CALLS = _GLOBAL_CALLS + 1
    return x * 2, _GLOBAL_CALLS


def test_global_counter_does_not_recompile():
    global _GLOBAL_CALLS
    _GLOBAL_CALLS = 0
    c = st.compile(_count_calls, backend="interp")
    x = st.randn(2)
    for i in range(1, 21):
        got = c(x)
        assert got[1] == i and type(got[1]) is int
    assert _GLOBAL_CALLS == 20 and translations() == 1
