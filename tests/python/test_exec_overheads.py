# Per-call costs of running a compiled program that do not scale with its
# kernels' work. A memory plan is made once per input layout and kept by the
# program (fusion/plancache.c): before, a compiled step whose graph had a
# non-contiguous input (a transposed weight, a detached slice of an LSTM's
# state) planned its whole backward graph again on every call, and the fused
# optimizer's update planned its graph every step. The executor releases each
# intermediate after its last kernel from per-kernel lists (runtime/exec.c)
# instead of scanning every value after every kernel. Results must not
# change: compiled against eager (and torch where natural), across layouts,
# sizes and more layouts than a program keeps.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C


def _made():
    return _C._plan_stats()["made"]


def _hits():
    return _C._plan_stats()["hits"]


def test_plan_stats_shape():
    s = _C._plan_stats()
    assert set(s) == {"hits", "made"} and all(isinstance(v, int) and v >= 0 for v in s.values())


def test_noncontiguous_input_plans_once_forward_and_backward():
    rng = np.random.default_rng(0)
    w = st.tensor(rng.standard_normal((6, 5)).astype(np.float32), requires_grad=True)

    def f(x, w):
        return ((x @ w).tanh() * 2).sum()

    cf = st.compile(f, backend="llvm")
    x = st.tensor(rng.standard_normal((6, 4)).astype(np.float32)).t()   # [4, 6], non-contiguous
    assert not x.is_contiguous()
    made = []
    for _ in range(5):
        w.grad = None
        loss = cf(x, w)
        loss.backward()
        made.append(_made())
        wg = w.grad.numpy().copy()
        w.grad = None
        f(x, w).backward()
        np.testing.assert_allclose(wg, w.grad.numpy(), rtol=1e-5, atol=1e-6)
    # the first call plans (forward and backward); later calls reuse the plans
    assert made[1] == made[-1], made
    h0 = _hits()
    cf(x, w).backward()
    assert _hits() > h0


def test_fused_adamw_update_plans_once():
    rng = np.random.default_rng(1)
    ps = [st.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True),
          st.tensor(rng.standard_normal(7).astype(np.float32), requires_grad=True)]
    opt = st.optim.AdamW(ps, lr=1e-2)      # fused by default (symtrace/optim/_fused.py)
    made = []
    for _ in range(5):
        opt.zero_grad()
        (ps[0].sum() * 2 + (ps[1] ** 2).sum()).backward()
        opt.step()
        made.append(_made())
    assert made[2] == made[-1], made


def test_layouts_past_the_kept_ones_stay_correct():
    """More distinct layouts than a program keeps: each call still right."""
    rng = np.random.default_rng(2)
    base = rng.standard_normal((5, 6, 7)).astype(np.float32)

    def f(x):
        return (x * 3 + 1).exp().sum(0)

    cf = st.compile(f, backend="llvm", dynamic=False)
    perms = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    views = []
    for p in perms:
        t = st.tensor(np.ascontiguousarray(base.transpose(p)))
        inv = np.argsort(p)
        views.append(t.permute(*[int(i) for i in inv]))     # same values, other strides
    t = st.tensor(base)
    junk = np.zeros_like(base)
    views += [st.tensor(np.stack([base, junk], 3).reshape(5, 6, 14))[:, :, ::2]]
    views += [st.tensor(np.stack([junk, base], 2).reshape(5, 12, 7))[:, 1::2, :]]
    views += [st.tensor(np.stack([junk, base], 0))[1]]
    want = np.exp(base * 3 + 1).sum(0)
    for _ in range(2):
        for v in views:
            np.testing.assert_allclose(cf(v).numpy(), want, rtol=1e-5)


def test_dynamic_sizes_with_noncontiguous_inputs():
    """One program, several sizes, a transposed input: a plan per size, right values."""
    def f(x, y):
        return (x.t() * y).relu().sum(1)

    cf = st.compile(f, backend="llvm", dynamic=True)
    rng = np.random.default_rng(3)
    for n in (3, 5, 3, 8, 5, 8):
        a = rng.standard_normal((4, n)).astype(np.float32)
        b = rng.standard_normal((n, 4)).astype(np.float32)
        x = st.tensor(np.ascontiguousarray(a.T)).t()       # [4, n], strides (1, 4)
        got = cf(x, st.tensor(b)).numpy()
        np.testing.assert_allclose(got, np.maximum(a.T * b, 0).sum(1), rtol=1e-5, atol=1e-6)


class _LM(st.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = st.nn.Embedding(50, 16)
        self.rnn = st.nn.LSTM(16, 24, num_layers=2, batch_first=True)
        self.head = st.nn.Linear(24, 50)

    def forward(self, x, h=None):
        y, (hn, cn) = self.rnn(self.emb(x), h)
        return self.head(y), (hn.detach(), cn.detach())


def test_compiled_lstm_step_matches_eager_and_reuses_plans():
    """The case that found both costs: a truncated-BPTT LSTM step whose state
    is a detached slice; compiled, it matches eager and plans nothing after
    its first calls."""
    st.manual_seed(0)
    m_e, m_c = _LM(), _LM()
    m_c.load_state_dict(m_e.state_dict())

    def make_step(m):
        opt = st.optim.Adam(m.parameters(), lr=1e-2)

        def step(x, y, h):
            opt.zero_grad()
            out, h = m(x, h)
            loss = st.nn.functional.cross_entropy(out.reshape(-1, 50), y.reshape(-1))
            loss.backward()
            opt.step()
            return loss, h
        return step

    se, sc = make_step(m_e), st.compile(make_step(m_c))
    rng = np.random.default_rng(4)
    he = hc = None
    made = []
    for _ in range(6):
        d = rng.integers(0, 50, (4, 11))
        x, y = st.tensor(d[:, :-1]), st.tensor(d[:, 1:])
        le, he = se(x, y, he)
        lc, hc = sc(x, y, hc)
        assert abs(le.item() - lc.item()) <= 1e-5 * abs(le.item()), (le.item(), lc.item())
        made.append(_made())
    assert made[3] == made[-1], made


def test_one_dynamic_graph_noncontiguous_weight_plans_per_size():
    """A transposed weight and a batch of any size: one graph; each run's plan
    is for its own sizes (made after they are bound), kept per size."""
    def f(x, wt):
        a = (x @ wt).exp()
        b = (a * 2).sin()
        c = (b + a).cos() * b
        return (c * a).sum(1)

    cf = st.compile(f, backend="llvm", dynamic=True)
    rng = np.random.default_rng(5)
    wt = st.tensor(rng.standard_normal((8, 16)).astype(np.float32) * 0.1).t()   # [16, 8]
    g0 = _C._fe_stats()["graphs"]
    seen = {}
    for n in (3, 5, 3, 700, 40, 1500, 2, 1500, 40):
        x = st.tensor(rng.standard_normal((n, 16)).astype(np.float32))
        m0 = _made()
        np.testing.assert_allclose(cf(x, wt).numpy(), f(x, wt).numpy(), rtol=1e-5, atol=1e-5)
        seen.setdefault(n, []).append(_made() - m0)
    assert _C._fe_stats()["graphs"] - g0 == 1
    assert seen[1500][1] == 0 and seen[40][1] == 0, seen     # a size seen before: its plan kept


def test_more_sizes_than_kept_recent_ones_hit():
    """Past the kept plans the least recently used one goes: every run stays
    right, and the sizes used last are still kept."""
    def f(x, wt):
        return ((x @ wt) * 2 + 1).tanh().sum(1)

    cf = st.compile(f, backend="llvm", dynamic=True)
    rng = np.random.default_rng(6)
    wt = st.tensor(rng.standard_normal((4, 8)).astype(np.float32)).t()    # [8, 4]
    sizes = list(range(2, 26))                   # 24 sizes, more than a program keeps
    for n in sizes + sizes[-4:]:
        x = st.tensor(rng.standard_normal((n, 8)).astype(np.float32))
        m0 = _made()
        np.testing.assert_allclose(cf(x, wt).numpy(), f(x, wt).numpy(), rtol=1e-5, atol=1e-6)
        if n in sizes[-4:] and _made() == m0:
            sizes.remove(n)                      # a hit: the recent size was kept
    assert all(n not in sizes for n in range(22, 26)), sizes
