# symtrace.optim's RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta (and SGD's
# momentum / dampening / nesterov / maximize, Adam's amsgrad) against
# torch.optim: 20 steps training a small regression MLP from torch's initial
# weights (each side's own autograd gives the gradients), parameters within
# 1e-5 relative; state and param_groups in torch's layout (keys, order,
# values); a state_dict round trip mid-training continuing identically (and
# torch's own state_dict loaded into symtrace continuing like torch); argument
# checks raising torch's errors with torch's messages; OneCycleLR cycling
# Adam's beta1 while training. The tests without the `torch` fixture (the
# step counter mirrors, hand-computed single steps) run without torch too.
import math
import re
import struct

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.optim as optim

RTOL, ATOL = 1e-5, 1e-6


def np_of(t):
    t = t.detach()
    return np.array(t.numpy()) if isinstance(t, st.Tensor) else t.cpu().numpy()


# ---------------- the regression model on both sides ----------------
def make_models(torch, seed=0, dtype="float64"):
    torch.manual_seed(seed)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    sm = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    if dtype == "float64":
        tm, sm = tm.double(), sm.double()
    with st.no_grad():
        for sp, tp in zip(sm.parameters(), tm.parameters()):
            sp.copy_(st.tensor(tp.detach().numpy().copy()))
    return sm, tm


def make_data(seed=1, n=16):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4))
    y = np.sin(x.sum(1, keepdims=True)) + 0.1 * rng.standard_normal((n, 1))
    return x, y


def backward_both(sm, tm, torch, x, y, skip=None, sign=1.0):
    """MSE loss (times sign: -1 for maximize, so that the model still
    converges) backward on both models; `skip`: index of a parameter whose
    gradient is then set to None on both sides. float64 models: each side's
    own autograd; float32: torch's gradients given to both sides, so that the
    comparison is of the optimizers' float32 arithmetic (the sign-like
    normalized updates of RMSprop / Adam-likes would otherwise magnify the two
    autograds' last-bit differences of gradients near zero)."""
    for p in sm.parameters():
        p.grad = None
    tm.zero_grad(set_to_none=True)
    f64 = next(iter(tm.parameters())).dtype == torch.float64
    npdt = np.float64 if f64 else np.float32
    x, y = x.astype(npdt), y.astype(npdt)
    lt = ((tm(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
    (lt * sign).backward()
    if f64:
        ls = ((sm(st.tensor(x)) - st.tensor(y)) ** 2).mean()
        (ls * sign).backward()
        ls = ls.item()
    else:
        ls = lt.item()
        for a, b in zip(sm.parameters(), tm.parameters()):
            a.grad = st.tensor(b.grad.numpy().copy())
    if skip is not None:
        list(sm.parameters())[skip].grad = None
        list(tm.parameters())[skip].grad = None
    return ls, lt.item()


def assert_params_close(sm, tm, msg=""):
    """Within 1e-5 relative in float32; float64 (each side's own autograd and
    update arithmetic in float64) within 1e-9."""
    for i, (a, b) in enumerate(zip(sm.parameters(), tm.parameters())):
        rtol, atol = (1e-9, 1e-12) if a.dtype == st.float64 else (RTOL, ATOL)
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=rtol, atol=atol, err_msg=f"param {i} {msg}")


def assert_state_like(so, to, sm, tm):
    """Same state keys in the same order per parameter, equal steps, close
    tensors; the same param_groups keys and values."""
    for a, b in zip(sm.parameters(), tm.parameters()):
        ss, ts = so.state[a], to.state[b]
        assert list(ss.keys()) == list(ts.keys())
        for k, v in ts.items():
            if k in ("step", "mu_product"):
                assert ss[k].dim() == 0 and ss[k].dtype == st.float32
                assert ss[k].item() == v.item()
            else:
                np.testing.assert_allclose(np_of(ss[k]), np_of(v), rtol=1e-4, atol=1e-6, err_msg=k)
    for g, tg in zip(so.param_groups, to.param_groups):
        assert set(g.keys()) == set(tg.keys())
        for k in tg:
            if k != "params":
                assert g[k] == tg[k], k


CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.005, momentum=0.9)),
    ("RMSprop", dict(lr=0.005, centered=True)),
    ("RMSprop", dict(lr=0.005, centered=True, momentum=0.5, alpha=0.3, weight_decay=0.05, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.05, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1, eps=1e-8)),
    ("Adagrad", dict(lr=0.05, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, maximize=True, eps=1e-3)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, betas=(0.3, 0.9), maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, betas=(0.8, 0.9))),
    ("RAdam", dict(lr=0.01, betas=(0.6, 0.95), maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, rho=0.3, eps=1e-4, maximize=True)),
]


def _id(case):
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_trains_like_torch(torch, case, dtype):
    name, kw = case
    sm, tm = make_models(torch, dtype=dtype)
    so, to = getattr(optim, name)(sm.parameters(), **kw), getattr(torch.optim, name)(tm.parameters(), **kw)
    x, y = make_data()
    losses = []
    for k in range(20):
        ls, lt = backward_both(sm, tm, torch, x, y, skip=1 if k == 6 else None,
                               sign=-1.0 if kw.get("maximize") else 1.0)
        assert ls == pytest.approx(lt, rel=1e-10 if dtype == "float64" else 1e-6)
        losses.append(ls)
        so.step()
        to.step()
        assert_params_close(sm, tm, f"after step {k + 1}")
    assert_state_like(so, to, sm, tm)
    # the optimizer did move the model (not a no-op that trivially agrees)
    moved = [np.abs(np_of(p) - np_of(q)).max()
             for p, q in zip(sm.parameters(), make_models(torch, dtype=dtype)[0].parameters())]
    assert max(moved) > 1e-3
    if name != "Adadelta":      # Adadelta's first steps are tiny
        assert losses[-1] < losses[0]
    assert all(p.grad_fn is None and p.is_leaf for p in sm.parameters())


ROUND_TRIP = [
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("RMSprop", dict(lr=0.005, centered=True, momentum=0.5, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.05, lr_decay=0.01, initial_accumulator_value=0.1)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
]


def _groups(model):
    ps = list(model.parameters())
    return [{"params": ps[:2]}, {"params": ps[2:], "lr": 0.02}]


def _to_st(v):
    """A torch state_dict's values as symtrace's (tensors through numpy)."""
    import torch
    if isinstance(v, torch.Tensor):
        return st.tensor(v.detach().numpy().copy())
    if isinstance(v, dict):
        return {k: _to_st(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_to_st(x) for x in v]
    return v


@pytest.mark.parametrize("case", ROUND_TRIP, ids=[c[0] for c in ROUND_TRIP])
def test_state_dict_round_trip(torch, case):
    name, kw = case
    # float32: a loaded state is cast to the parameters' dtype except 'step'
    # (as torch does), so NAdam's float32 mu_product would become float64 with
    # float64 parameters and continue with other roundings
    sm, tm = make_models(torch, seed=3, dtype="float32")
    so = getattr(optim, name)(_groups(sm), **kw)
    to = getattr(torch.optim, name)(_groups(tm), **kw)
    x, y = make_data(seed=4)
    for _ in range(8):
        backward_both(sm, tm, torch, x, y)
        so.step()
        to.step()
    sd, tsd = so.state_dict(), to.state_dict()
    # torch's layout: integer keys, index lists, the same group entries and state names
    assert list(sd["state"].keys()) == list(tsd["state"].keys()) == [0, 1, 2, 3]
    assert [g["params"] for g in sd["param_groups"]] == [g["params"] for g in tsd["param_groups"]]
    for g, tg in zip(sd["param_groups"], tsd["param_groups"]):
        assert g == tg
    for k in tsd["state"]:
        assert list(sd["state"][k].keys()) == list(tsd["state"][k].keys())
        for kk, v in tsd["state"][k].items():
            np.testing.assert_allclose(np_of(sd["state"][k][kk]), np_of(v), rtol=1e-4, atol=1e-6)

    # a fresh optimizer over copies of the model, loaded, continues exactly like the original;
    # another loaded from torch's own state_dict continues like torch
    def clone_model(src):
        m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        with st.no_grad():
            for a, b in zip(m.parameters(), src.parameters()):
                a.copy_(b.detach())
        return m

    sm2, sm3 = clone_model(sm), clone_model(sm)
    so2 = getattr(optim, name)(_groups(sm2), lr=123.0)
    so2.load_state_dict(sd)
    so3 = getattr(optim, name)(_groups(sm3), lr=123.0)
    so3.load_state_dict(_to_st(tsd))
    assert [g["lr"] for g in so2.param_groups] == [g["lr"] for g in to.param_groups]
    for _ in range(6):
        backward_both(sm, tm, torch, x, y)
        for m in (sm2, sm3):
            for a, b in zip(m.parameters(), sm.parameters()):
                a.grad = b.grad.clone()
        so.step()
        so2.step()
        so3.step()
        to.step()
        for a, b, c in zip(sm2.parameters(), sm.parameters(), sm3.parameters()):
            np.testing.assert_array_equal(np_of(a), np_of(b))
            np.testing.assert_allclose(np_of(c), np_of(b), rtol=RTOL, atol=ATOL)
        assert_params_close(sm, tm)
    assert_state_like(so2, to, sm2, tm)
    # the loaded state is a copy, not the source's tensors
    p0 = next(iter(sm2.parameters()))
    k0 = list(so2.state[p0])[-1]
    assert so2.state[p0][k0] is not so.state[next(iter(sm.parameters()))][k0]
    with pytest.raises(ValueError):       # a different number of groups
        getattr(optim, name)(list(sm2.parameters()), **kw).load_state_dict(sd)


BAD = [
    ("SGD", dict(lr=-1)), ("SGD", dict(lr=0.1, momentum=-0.5)), ("SGD", dict(lr=0.1, weight_decay=-1)),
    ("SGD", dict(lr=0.1, nesterov=True)), ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(lr=-1e-3)), ("Adam", dict(betas=(1.0, 0.9))), ("Adam", dict(betas=(0.9, -0.1))),
    ("Adam", dict(eps=-1.0)), ("Adam", dict(weight_decay=-0.1)), ("Adam", dict(betas=(0, 0.9))),
    ("AdamW", dict(lr=-2.0)),
    ("RMSprop", dict(lr=-1)), ("RMSprop", dict(eps=-1)), ("RMSprop", dict(momentum=-1)),
    ("RMSprop", dict(weight_decay=-1)), ("RMSprop", dict(alpha=-0.5)),
    ("Adagrad", dict(lr=-1)), ("Adagrad", dict(lr_decay=-1)), ("Adagrad", dict(weight_decay=-1)),
    ("Adagrad", dict(initial_accumulator_value=-1)), ("Adagrad", dict(eps=-1)),
    ("Adamax", dict(lr=-1)), ("Adamax", dict(eps=-1)), ("Adamax", dict(betas=(1.0, 0.9))),
    ("Adamax", dict(betas=(0.9, 1.0))), ("Adamax", dict(weight_decay=-1)),
    ("NAdam", dict(lr=-1)), ("NAdam", dict(eps=-1)), ("NAdam", dict(betas=(-0.1, 0.9))),
    ("NAdam", dict(betas=(0.9, 1.5))), ("NAdam", dict(weight_decay=-1)), ("NAdam", dict(momentum_decay=-1)),
    ("RAdam", dict(lr=-1)), ("RAdam", dict(eps=-1)), ("RAdam", dict(betas=(1.0, 0.9))),
    ("RAdam", dict(weight_decay=-1)),
    ("Adadelta", dict(lr=-1)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(rho=-0.1)),
    ("Adadelta", dict(eps=-1)), ("Adadelta", dict(weight_decay=-1)),
]


@pytest.mark.parametrize("case", BAD, ids=[_id(c) for c in BAD])
def test_bad_arguments_raise_like_torch(torch, case):
    name, kw = case
    tp = [torch.nn.Parameter(torch.ones(2))]
    with pytest.raises(Exception) as te:
        getattr(torch.optim, name)(tp, **kw)
    with pytest.raises(te.type, match="^" + re.escape(str(te.value)) + "$"):
        getattr(optim, name)([nn.Parameter(st.ones(2))], **kw)


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta"])
def test_defaults_and_params_checks(torch, name):
    sp = [nn.Parameter(st.ones(2))]
    tp = [torch.nn.Parameter(torch.ones(2))]
    so, to = getattr(optim, name)(sp), getattr(torch.optim, name)(tp)
    assert so.defaults == to.defaults
    assert {k: v for k, v in so.param_groups[0].items() if k != "params"} == \
        {k: v for k, v in to.param_groups[0].items() if k != "params"}
    assert so.state_dict()["param_groups"] == to.state_dict()["param_groups"]
    with pytest.raises(ValueError, match="empty parameter list"):
        getattr(optim, name)([])
    with pytest.raises(TypeError):
        getattr(optim, name)(sp[0])
    # per-group options and add_param_group's defaults
    q = nn.Parameter(st.zeros(3))
    so.add_param_group({"params": [q], "lr": 0.5})
    assert so.param_groups[1]["lr"] == 0.5 and so.param_groups[1]["eps"] == so.defaults["eps"]


def test_adagrad_state_at_construction(torch):
    """Adagrad creates step and sum (initial_accumulator_value) for every
    parameter when constructed, as torch; a group added later gets its state
    at its first step."""
    sm, tm = make_models(torch)
    so = optim.Adagrad(sm.parameters(), initial_accumulator_value=0.25)
    to = torch.optim.Adagrad(tm.parameters(), initial_accumulator_value=0.25)
    sd, tsd = so.state_dict(), to.state_dict()
    assert list(sd["state"]) == list(tsd["state"]) == [0, 1, 2, 3]
    for k in tsd["state"]:
        assert list(sd["state"][k]) == ["step", "sum"]
        assert sd["state"][k]["step"].item() == 0.0
        np.testing.assert_array_equal(np_of(sd["state"][k]["sum"]), np_of(tsd["state"][k]["sum"]))
    q = nn.Parameter(st.ones(3))
    so.add_param_group({"params": [q]})
    q.grad = st.full((3,), 2.0)
    so.step()
    np.testing.assert_allclose(np_of(so.state[q]["sum"]), np.full(3, 4.25), rtol=1e-6)


def test_one_cycle_adam_betas_train_like_torch(torch):
    """OneCycleLR cycling Adam's beta1 (fused path) and lr while training."""
    sm, tm = make_models(torch, seed=5)
    so, to = optim.Adam(sm.parameters(), lr=0.01), torch.optim.Adam(tm.parameters(), lr=0.01)
    ss = optim.lr_scheduler.OneCycleLR(so, max_lr=0.05, total_steps=20)
    ts = torch.optim.lr_scheduler.OneCycleLR(to, max_lr=0.05, total_steps=20)
    x, y = make_data(seed=6)
    betas = []
    for k in range(19):
        backward_both(sm, tm, torch, x, y)
        so.step()
        to.step()
        ss.step()
        ts.step()
        assert so.param_groups[0]["betas"] == to.param_groups[0]["betas"]
        assert ss.get_last_lr() == ts.get_last_lr()
        betas.append(so.param_groups[0]["betas"][0])
        assert_params_close(sm, tm, f"step {k}")
    assert min(betas) < 0.86 and max(betas) > 0.94


def test_closure_runs_with_grad(torch):
    sm, tm = make_models(torch)
    x, y = make_data()
    for name in ("RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta"):
        so = getattr(optim, name)(sm.parameters())

        def closure():
            so.zero_grad()
            loss = ((sm(st.tensor(x)) - st.tensor(y)) ** 2).mean()
            loss.backward()
            return loss

        loss = so.step(closure)
        assert isinstance(loss, st.Tensor) and loss.dim() == 0
        assert all(p.grad is not None for p in sm.parameters())


# ---------------- without torch ----------------
def _f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def test_step_counters_and_mu_product_mirror():
    """The step (and NAdam's mu_product) 0-d float32 tensors hold the values the
    update used: the host mirror equals the tensor, also after the tensor is
    written from outside (then read back)."""
    p = nn.Parameter(st.ones(3))
    o = optim.NAdam([p], lr=0.01)
    mu_prod = 1.0
    for k in range(1, 8):
        p.grad = st.full((3,), 0.5 * k)
        o.step()
        mu = 0.9 * (1.0 - 0.5 * 0.96 ** (k * 4e-3))
        mu_prod = _f32(mu_prod * _f32(mu))
        assert o.state[p]["step"].item() == k
        assert o.state[p]["mu_product"].item() == mu_prod
        assert o._mu_product_mirror[p][2] == mu_prod
    o.state[p]["step"].fill_(100.0)        # written from outside: read back
    p.grad = st.ones(3)
    o.step()
    assert o._step_mirror[p][2] == 101.0 == o.state[p]["step"].item()


def test_single_steps_by_hand():
    """One step of each optimizer against its formula in float64 numpy."""
    g = np.array([0.5, -2.0, 1e-3, 3.0])
    p0 = np.array([1.0, -1.0, 0.25, 2.0])

    def run(cls, **kw):
        p = nn.Parameter(st.tensor(p0.copy()))
        o = cls([p], **kw)
        p.grad = st.tensor(g.copy())
        o.step()
        return np_of(p)

    wd = 0.1
    gw = g + wd * p0
    # RMSprop (centered, momentum): v = (1-a) g^2, m = (1-a) g, buf = g / (sqrt(v - m^2) + eps)
    a = 0.9
    v, m = (1 - a) * gw ** 2, (1 - a) * gw
    exp = p0 - 0.01 * (gw / (np.sqrt(v - m * m) + 1e-8))
    np.testing.assert_allclose(run(optim.RMSprop, alpha=a, centered=True, momentum=0.5, weight_decay=wd), exp,
                               rtol=1e-12)
    # Adagrad: sum = init + g^2, p -= lr g / (sqrt(sum) + eps)
    exp = p0 - 0.1 * gw / (np.sqrt(0.5 + gw ** 2) + 1e-10)
    np.testing.assert_allclose(run(optim.Adagrad, lr=0.1, weight_decay=wd, initial_accumulator_value=0.5), exp,
                               rtol=1e-12)
    # Adamax: m = (1-b1) g, u = max(0, |g| + eps), p -= lr / (1 - b1) m / u
    exp = p0 - 0.002 / 0.1 * (0.1 * g) / (np.abs(g) + 1e-8)
    np.testing.assert_allclose(run(optim.Adamax), exp, rtol=1e-12)
    # RAdam's first step (rho_1 = 1 <= 5): p -= lr m / (1 - b1) = lr g
    np.testing.assert_allclose(run(optim.RAdam, lr=0.01), p0 - 0.01 * g, rtol=1e-12)
    # RAdam decoupled: p *= 1 - lr wd first
    np.testing.assert_allclose(run(optim.RAdam, lr=0.01, weight_decay=wd, decoupled_weight_decay=True),
                               p0 * (1 - 0.01 * wd) - 0.01 * g, rtol=1e-12)
    # NAdam's first step
    b1, b2, psi, lr = 0.9, 0.999, 4e-3, 0.002
    mu, mu1 = b1 * (1 - 0.5 * 0.96 ** psi), b1 * (1 - 0.5 * 0.96 ** (2 * psi))
    mu_prod = _f32(mu)                     # mu_product is a float32 tensor, as torch's
    denom = np.sqrt((1 - b2) * g ** 2 / (1 - b2)) + 1e-8
    exp = p0 - lr * (1 - mu) / (1 - mu_prod) * g / denom - lr * mu1 / (1 - mu_prod * mu1) * (1 - b1) * g / denom
    np.testing.assert_allclose(run(optim.NAdam), exp, rtol=1e-12)
    # Adadelta: v = (1-rho) g^2, d = sqrt(eps) / sqrt(v + eps) g
    rho, eps = 0.9, 1e-6
    d = np.sqrt(eps) / np.sqrt((1 - rho) * g ** 2 + eps) * g
    np.testing.assert_allclose(run(optim.Adadelta), p0 - d, rtol=1e-12)


def test_bad_arguments_without_torch():
    p = [nn.Parameter(st.ones(1))]
    cases = [(optim.RMSprop, dict(alpha=-1), "Invalid alpha value: -1"),
             (optim.Adagrad, dict(lr_decay=-0.5), "Invalid lr_decay value: -0.5"),
             (optim.Adagrad, dict(initial_accumulator_value=-2),
              "Invalid initial_accumulator_value value: -2"),
             (optim.Adamax, dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
             (optim.NAdam, dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
             (optim.RAdam, dict(lr=-1), "Invalid learning rate: -1"),
             (optim.Adadelta, dict(rho=2), "Invalid rho value: 2"),
             (optim.Adam, dict(betas=(0, 0.9)), "betas must be either both floats or both Tensors")]
    for cls, kw, msg in cases:
        with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
            cls(p, **kw)
    with pytest.raises(RuntimeError, match="does not support `differentiable`"):
        optim.SGD(p, lr=0.1, fused=True, differentiable=True)


def test_step_skips_params_without_grad_and_is_not_recorded():
    for cls in (optim.RMSprop, optim.Adagrad, optim.Adamax, optim.NAdam, optim.RAdam, optim.Adadelta):
        a, b = nn.Parameter(st.ones(3)), nn.Parameter(st.ones(2))
        o = cls([a, b], lr=0.1)
        a.grad = st.ones(3)
        o.step()
        assert np.all(np_of(b) == 1.0) and not np.allclose(np_of(a), 1.0), cls.__name__
        assert len(o.state[b]) == (2 if cls is optim.Adagrad else 0)
        assert a.is_leaf and a.grad_fn is None and a.requires_grad
        assert all(v.grad_fn is None and not v.requires_grad for v in o.state[a].values())
        assert math.isfinite(float(np_of(a).sum()))


def test_unpickling_fills_group_options_an_old_pickle_lacks():
    import copy          # deepcopy takes the same __setstate__ as unpickling
    p = [st.nn.Parameter(st.randn(2))]
    o = st.optim.RMSprop(p)
    del o.param_groups[0]["centered"]
    o2 = copy.deepcopy(o)
    assert o2.param_groups[0]["centered"] is False
    assert o2.param_groups[0]["momentum"] == 0
