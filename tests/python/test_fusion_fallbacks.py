# Fused groups that fall back to one kernel per member (fusion/fuse.c
# emit_group; counted by _C._fusion_stats). A group that computed only the
# constant parts of a cat (the zeros of a conv's padding, stored straight into
# their slices) had no buffer to size its kernel from ("no size for dim 0"):
# every padded conv of a compiled CNN step paid a kernel per zero block and a
# copy kernel per slab. The compiled programs here must lower with 0 fallbacks
# and agree with eager symtrace and with torch over several calls.
import numpy as np
import pytest

import symtrace as st
from symtrace import _C

F = st.nn.functional


def _stats_reset():
    _C._fusion_stats(True)


def _fallbacks():
    s = _C._fusion_stats()
    return s["fallbacks"], s["last_fallback"]


def test_fusion_stats_shape():
    s = _C._fusion_stats()
    assert set(s) == {"programs", "fused", "fallbacks", "last_fallback"}
    assert all(isinstance(s[k], int) and s[k] >= 0 for k in ("programs", "fused", "fallbacks"))
    _C._fusion_stats(True)
    assert _C._fusion_stats()["programs"] == 0


def test_pad_zero_parts_fuse():
    # F.pad's zeros are parts of a cat: each zero block's group stores only its slab
    def f(x):
        return F.pad(x, (1, 2, 1, 1)) * 2 + 1

    cf = st.compile(f)
    _stats_reset()
    rng = np.random.default_rng(0)
    for _ in range(3):
        xn = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
        out = cf(st.tensor(xn)).numpy()
        want = np.pad(xn, ((0, 0), (0, 0), (1, 1), (1, 2))) * 2 + 1
        np.testing.assert_allclose(out, want, rtol=1e-6)
    s = _C._fusion_stats()
    assert s["programs"] >= 1 and s["fused"] >= 1
    assert _fallbacks() == (0, "")


def test_cat_of_constants_and_values_fuse():
    def g(x):
        z = st.zeros(x.shape[0], 1, 2)
        o = st.full((x.shape[0], 2, 2), 3.0)
        return st.cat([z, x.sin(), o, z], 1)

    cg = st.compile(g)
    _stats_reset()
    rng = np.random.default_rng(1)
    for n in (2, 2, 2):
        xn = rng.standard_normal((n, 3, 2)).astype(np.float32)
        out = cg(st.tensor(xn)).numpy()
        z = np.zeros((n, 1, 2), np.float32)
        want = np.concatenate([z, np.sin(xn), np.full((n, 2, 2), 3.0, np.float32), z], 1)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(out, g(st.tensor(xn)).numpy(), rtol=1e-6, atol=1e-7)
    assert _fallbacks() == (0, "")


def _cnn(L):
    nn = L.nn

    class Net(nn.Module):
        def __init__(s):
            super().__init__()
            s.c1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
            s.b1 = nn.BatchNorm2d(8)
            s.c2 = nn.Conv2d(8, 8, 3, 1, 1, bias=False)
            s.b2 = nn.BatchNorm2d(8)
            s.c3 = nn.Conv2d(8, 16, 3, 2, 1, bias=False)
            s.b3 = nn.BatchNorm2d(16)
            s.sc = nn.Conv2d(8, 16, 1, 2, bias=False)
            s.bs = nn.BatchNorm2d(16)
            s.pool = nn.MaxPool2d(2)
            s.fc = nn.Linear(16, 10)

        def forward(s, x):
            x = L.relu(s.b1(s.c1(x)))
            x = L.relu(s.b2(s.c2(x)) + x)
            x = L.relu(s.b3(s.c3(x)) + s.bs(s.sc(x)))
            x = s.pool(x)
            return s.fc(L.flatten(L.nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return Net()


def _train_step(L, m):
    opt = L.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)

    def step(x, y):
        opt.zero_grad()
        loss = L.nn.functional.cross_entropy(m(x), y, label_smoothing=0.1)
        loss.backward()
        opt.step()
        return loss

    return step


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((4, 3, 12, 12)).astype(np.float32), rng.integers(0, 10, 4))
            for _ in range(n)]


def test_cnn_train_step_no_fallbacks_matches_eager():
    st.manual_seed(0)
    ref = _cnn(st)
    init = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    me, mc = _cnn(st), _cnn(st)
    for m in (me, mc):
        m.load_state_dict({k: st.tensor(v) for k, v in init.items()})
    se, sc = _train_step(st, me), st.compile(_train_step(st, mc))
    _stats_reset()
    for x, y in _data(4):
        le = se(st.tensor(x), st.tensor(y)).item()
        lc = sc(st.tensor(x), st.tensor(y)).item()
        np.testing.assert_allclose(lc, le, rtol=1e-4)
    for (k, a), b in zip(mc.state_dict().items(), me.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-3, atol=1e-5, err_msg=k)
    assert _fallbacks() == (0, "")


def test_cnn_train_step_matches_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = _cnn(torch)
    init = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
    sm = _cnn(st)
    sm.load_state_dict({k: st.tensor(v) for k, v in init.items()})
    ts, ss = _train_step(torch, tm), st.compile(_train_step(st, sm))
    _stats_reset()
    for x, y in _data(3, seed=1):
        lt = ts(torch.tensor(x), torch.tensor(y)).item()
        ls = ss(st.tensor(x), st.tensor(y)).item()
        np.testing.assert_allclose(ls, lt, rtol=1e-4)
    for (k, a), b in zip(sm.state_dict().items(), tm.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-3, atol=1e-5, err_msg=k)
    assert _fallbacks() == (0, "")


def test_many_scalar_constants_cut_not_split_per_op():
    # 12 distinct scalars in one elementwise chain: more than a kernel's 8 params
    cs = [1.5, 2.25, 3.125, 0.5, 1.75, 2.5, 0.25, 3.5, 1.25, 0.75, 2.75, 1.125]

    def f(x):
        y = x
        for i, c in enumerate(cs):
            y = y * c if i % 2 == 0 else y + c
        return y

    cf = st.compile(f)
    _stats_reset()
    rng = np.random.default_rng(2)
    for _ in range(3):
        xn = rng.standard_normal((3, 5)).astype(np.float32)
        want = xn.astype(np.float64)
        for i, c in enumerate(cs):
            want = want * c if i % 2 == 0 else want + c
        out = cf(st.tensor(xn)).numpy()
        np.testing.assert_allclose(out, want, rtol=1e-5)
        np.testing.assert_allclose(out, f(st.tensor(xn)).numpy(), rtol=1e-6)
    assert _fallbacks() == (0, "")


def test_many_outputs_cut_not_split_per_op():
    # ten results of one elementwise group: more than a kernel's 8 stores
    def f(x):
        y = x.sin()
        return tuple(y * (i + 1) + i for i in range(10))

    cf = st.compile(f)
    _stats_reset()
    rng = np.random.default_rng(3)
    for _ in range(3):
        xn = rng.standard_normal((4, 3)).astype(np.float32)
        outs = cf(st.tensor(xn))
        assert len(outs) == 10
        for i, o in enumerate(outs):
            np.testing.assert_allclose(o.numpy(), np.sin(xn) * (i + 1) + i, rtol=1e-5, atol=1e-6)
    assert _fallbacks() == (0, "")
