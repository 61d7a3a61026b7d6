"""Autocast's policy for the ops written in Python (symtrace/amp/_policy.py),
compared with torch's CPU autocast: output dtype, values and the dtype of a
float32 leaf's gradient, eager and compiled. Found by scripts/hunt_autocast.py."""
import numpy as np
import pytest

import symtrace as st

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((6, 8)).astype(np.float32)
K2 = RNG.standard_normal((3, 2, 2, 2)).astype(np.float32)
B3 = RNG.standard_normal(3).astype(np.float32)
ONES = np.ones((4, 8), np.float32)
TGT = np.array([1, 0, 7, 3], np.int64)


def _cases(M):
    F, t = M.nn.functional, M.tensor
    return {
        "addmm": lambda a: M.addmm(t(X[:, :4]), a, a.t()),
        "baddbmm": lambda a: M.baddbmm(t(X[None, :, :4]), a[None], a.t()[None]),
        "addbmm": lambda a: M.addbmm(t(X[:, :4]), a[None], a.t()[None]),
        "conv2d_bias": lambda a: F.conv2d(a.reshape(1, 2, 4, 4), t(K2), t(B3)),
        "conv_transpose2d": lambda a: F.conv_transpose2d(a.reshape(1, 2, 4, 4), t(K2.transpose(1, 0, 2, 3).copy())),
        "prelu": lambda a: F.prelu(a, t(np.full(1, 0.25, np.float32))),
        "dot": lambda a: M.dot(a[0], a[1]),
        "mv": lambda a: M.mv(a, a[0]),
        "nll_loss": lambda a: F.nll_loss(a, t(TGT)),
        "trace": lambda a: M.trace(a),
        "reflect_pad": lambda a: F.pad(a[None], (1, 1), mode="reflect"),
        "replicate_pad": lambda a: F.pad(a[None], (1, 1), mode="replicate"),
        "constant_pad": lambda a: F.pad(a[None], (1, 1)),
        "triplet_margin_loss": lambda a: F.triplet_margin_loss(a, a + 1, a - 1),
        "soft_margin_loss": lambda a: F.soft_margin_loss(a, t(ONES)),
        "poisson_nll_loss": lambda a: F.poisson_nll_loss(a, a.abs()),
        "hinge_embedding_loss": lambda a: F.hinge_embedding_loss(a, t(ONES)),
        "cosine_embedding_loss": lambda a: F.cosine_embedding_loss(a, a + 1, t(ONES[:, 0])),
        "mse_loss_low_target": lambda a: F.mse_loss(a, a.detach() * 0),
        "index_copy": lambda a: M.zeros(4, 4).index_copy(0, M.arange(4), a @ a.t()),
        "quantile": lambda a: M.quantile(a, 0.5),
    }


NAMES = list(_cases(st))


def _run(M, name, low_input, compiled):
    fn = _cases(M)[name]
    leaf = M.tensor(X, requires_grad=True)
    a = leaf.to(M.bfloat16) if low_input else leaf
    if compiled:
        fn = st.compile(fn)
    with M.autocast("cpu", dtype=M.bfloat16):
        y = fn(a)
    y.float().sum().backward()
    return y, leaf.grad


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("low_input", [False, True], ids=["f32_in", "bf16_in"])
@pytest.mark.parametrize("name", NAMES)
def test_autocast_policy_matches_torch(name, low_input, compiled):
    ty, tg = _run(torch, name, low_input, False)
    sy, sg = _run(st, name, low_input, compiled)
    assert str(sy.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1]
    assert str(sg.dtype).split(".")[-1] == str(tg.dtype).split(".")[-1]
    np.testing.assert_allclose(sy.detach().float().numpy(), ty.detach().float().numpy(), rtol=5e-2, atol=5e-2)
    np.testing.assert_allclose(sg.numpy(), tg.numpy(), rtol=5e-2, atol=5e-2)


def test_nn_conv2d_module_with_bias_runs_in_bfloat16():
    torch.manual_seed(0)
    tm = torch.nn.Conv2d(2, 3, 2)
    sm = st.nn.Conv2d(2, 3, 2)
    sm.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = X.reshape(1, 2, 4, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = tm(torch.tensor(x).bfloat16())
    with st.autocast("cpu", dtype=st.bfloat16):
        sy = sm(st.tensor(x).bfloat16())
    assert ty.dtype == torch.bfloat16 and sy.dtype is st.bfloat16
    np.testing.assert_allclose(sy.float().detach().numpy(), ty.float().detach().numpy(), rtol=5e-2, atol=5e-2)


def test_policy_leaves_ops_alone_outside_autocast():
    a = st.tensor(X)
    with pytest.raises(RuntimeError, match="same dtype"):
        st.addmm(a[:, :4], a.bfloat16(), a.t().bfloat16())
    with pytest.raises(RuntimeError, match="should be the same"):
        st.nn.functional.conv2d(a.reshape(1, 2, 4, 4).bfloat16(), st.tensor(K2))
    assert st.dot(a[0].bfloat16(), a[1].bfloat16()).dtype is st.bfloat16
    assert st.trace(a.bfloat16()).dtype is st.bfloat16


def test_policy_keeps_float64_and_disabled_regions():
    a = st.tensor(X.astype(np.float64))
    with st.autocast("cpu", dtype=st.bfloat16):
        assert st.addmm(a[:, :4], a, a.t()).dtype is st.float64
        with st.autocast("cpu", enabled=False):
            b = st.tensor(X)
            assert st.addmm(b[:, :4], b, b.t()).dtype is st.float32
            assert st.nn.functional.nll_loss(b.bfloat16(), st.tensor(TGT)).dtype is st.bfloat16
        # dot under CPU autocast runs with autocast off inside, and turns it back on after
        assert st.dot(st.tensor(X[0]), st.tensor(X[1])).dtype is st.float32
        assert st.is_autocast_enabled("cpu")
        assert (st.tensor(X) @ st.tensor(X).t()).dtype is st.bfloat16


def test_grad_scaler_matches_torch_on_cpu():
    out = {}
    for lib in (torch, st):
        w = lib.tensor(np.ones(3, np.float32), requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        sc = lib.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
        rec = []
        for step in range(5):
            opt.zero_grad()
            loss = (w * (float("inf") if step == 1 else 1.0)).sum()
            sc.scale(loss).backward()
            sc.unscale_(opt)
            g = w.grad.detach().numpy().copy()
            sc.step(opt)
            sc.update()
            rec.append((float(sc.get_scale()), g.tolist(), w.detach().numpy().tolist()))
        out[lib] = rec
    np.testing.assert_equal(out[st], out[torch])


def _mixed_cases(M):
    F, t = M.nn.functional, M.tensor
    return {
        "addmv": lambda a: M.addmv(t(np.zeros(4, np.float32)), a, a[0]),
    }


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", list(_mixed_cases(st)))
def test_cpu_autocast_keeps_float32_products_torch_does_not_lower(name, compiled):
    res = []
    for M in (torch, st):
        leaf = M.tensor(X, requires_grad=True)
        fn = _mixed_cases(M)[name]
        if compiled and M is st:
            fn = st.compile(fn)
        with M.autocast("cpu", dtype=M.bfloat16):
            y = fn(leaf)
        y.sum().backward()
        res.append((y, leaf.grad))
    (ty, tg), (sy, sg) = res
    assert str(sy.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1] == "float32"
    assert sg.dtype is st.float32
    np.testing.assert_allclose(sy.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(sg.numpy(), tg.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["lstm", "vecdot", "cdist"])
def test_lstm_vecdot_cdist_dtypes_under_cpu_autocast_as_torch(name):
    torch = pytest.importorskip("torch")
    ops = {"lstm": lambda L: L.nn.LSTM(4, 3)(L.ones(2, 1, 4))[0],
           "vecdot": lambda L: L.linalg.vecdot(L.ones(3), L.ones(3)),
           "cdist": lambda L: L.cdist(L.ones(2, 3).bfloat16(), L.ones(2, 3).bfloat16())}
    got = []
    for L in (torch, st):
        with L.autocast("cpu", dtype=L.bfloat16):
            got.append(str(ops[name](L).dtype).split(".")[-1])
    assert got[0] == got[1]
