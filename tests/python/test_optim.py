# symtrace.optim against torch.optim: SGD (momentum, dampening, nesterov,
# weight decay), Adam (amsgrad, weight decay), AdamW over 10 steps on
# identical parameters with identical gradients set directly on .grad;
# parameter groups with different lr; state_dict / load_state_dict round trip
# continuing identically; LambdaLR, StepLR and the linear warm-up/decay lr
# values against torch's; clip_grad_norm_ against torch's.
import math

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.optim as optim

torch = pytest.importorskip("torch")

SHAPES = [(4, 3), (3,), (2, 2, 5)]


def np_of(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def make_params(seed=0):
    rng = np.random.default_rng(seed)
    vals = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    sp = [nn.Parameter(st.tensor(v)) for v in vals]
    tp = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in vals]
    return sp, tp


def set_grads(sp, tp, rng, skip=None):
    for i, (a, b) in enumerate(zip(sp, tp)):
        if i == skip:
            a.grad, b.grad = None, None
            continue
        g = rng.standard_normal(tuple(b.shape)).astype(np.float32)
        a.grad = st.tensor(g)
        b.grad = torch.from_numpy(g.copy())


def assert_params_close(sp, tp, rtol=1e-5, atol=1e-6, msg=""):
    for i, (a, b) in enumerate(zip(sp, tp)):
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=rtol, atol=atol, err_msg=f"param {i} {msg}")


def run_both(make_st, make_th, steps=10, seed=0, skip_at=None):
    sp, tp = make_params(seed)
    so, to = make_st(sp), make_th(tp)
    rng = np.random.default_rng(seed + 100)
    for k in range(steps):
        set_grads(sp, tp, rng, skip=1 if k == skip_at else None)
        so.step()
        to.step()
        assert_params_close(sp, tp, msg=f"after step {k + 1}")
    return sp, tp, so, to


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.5, weight_decay=0.1),
    dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    dict(lr=0.05, weight_decay=0.1, maximize=True),
])
def test_sgd(kw):
    sp, tp, so, to = run_both(lambda p: optim.SGD(p, **kw), lambda p: torch.optim.SGD(p, **kw), skip_at=3)
    if kw.get("momentum"):
        for a, b in zip(sp, tp):
            np.testing.assert_allclose(np_of(so.state[a]["momentum_buffer"]),
                                       np_of(to.state[b]["momentum_buffer"]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [
    dict(),
    dict(lr=0.01, betas=(0.8, 0.99)),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, eps=1e-3, weight_decay=0.05, amsgrad=True, maximize=True),
])
def test_adam(kw):
    sp, tp, so, to = run_both(lambda p: optim.Adam(p, **kw), lambda p: torch.optim.Adam(p, **kw), skip_at=4)
    for a, b in zip(sp, tp):
        ss, ts = so.state[a], to.state[b]
        assert list(ss.keys()) == list(ts.keys())
        assert ss["step"].item() == ts["step"].item()
        for k in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(np_of(ss[k]), np_of(ts[k]), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kw", [dict(), dict(lr=0.01), dict(lr=0.01, weight_decay=0.3, betas=(0.85, 0.95)),
                                dict(lr=0.01, amsgrad=True)])
def test_adamw(kw):
    run_both(lambda p: optim.AdamW(p, **kw), lambda p: torch.optim.AdamW(p, **kw))


def test_adamw_decay_is_decoupled():
    """With a zero gradient Adam's update is 0, AdamW still shrinks p by lr * wd."""
    p = nn.Parameter(st.ones(3))
    o = optim.AdamW([p], lr=0.1, weight_decay=0.5)
    p.grad = st.zeros(3)
    o.step()
    np.testing.assert_allclose(np_of(p), np.full(3, 1 - 0.1 * 0.5), rtol=1e-6)
    q = nn.Parameter(st.ones(3))
    o2 = optim.Adam([q], lr=0.1, weight_decay=0.5)
    q.grad = st.zeros(3)
    o2.step()
    assert not np.allclose(np_of(q), np.full(3, 0.95))


def test_param_groups_with_different_lr():
    def groups(p, lib):
        return [{"params": p[:2], "lr": 0.1}, {"params": p[2:], "lr": 0.01, "betas": (0.5, 0.9)}]
    sp, tp, so, to = run_both(lambda p: optim.Adam(groups(p, optim), lr=0.5),
                              lambda p: torch.optim.Adam(groups(p, torch.optim), lr=0.5))
    assert [g["lr"] for g in so.param_groups] == [0.1, 0.01]
    assert so.param_groups[0]["betas"] == (0.9, 0.999) and so.param_groups[1]["betas"] == (0.5, 0.9)
    # add_param_group fills in the defaults
    extra = nn.Parameter(st.zeros(2))
    so.add_param_group({"params": [extra]})
    assert so.param_groups[2]["lr"] == 0.5 and so.param_groups[2]["eps"] == 1e-8
    with pytest.raises(ValueError, match="more than one parameter group"):
        so.add_param_group({"params": [sp[0]]})
    sgd_s = optim.SGD([{"params": sp[:1]}, {"params": sp[1:], "momentum": 0.9}], lr=0.1)
    assert sgd_s.param_groups[0]["momentum"] == 0 and sgd_s.param_groups[1]["momentum"] == 0.9


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("AdamW", dict(lr=0.01, weight_decay=0.1))])
def test_state_dict_round_trip(name, kw):
    rng = np.random.default_rng(7)
    sp, tp = make_params(3)
    so = getattr(optim, name)([{"params": sp[:1]}, {"params": sp[1:], "lr": 0.02}], **kw)
    to = getattr(torch.optim, name)([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.02}], **kw)
    for _ in range(4):
        set_grads(sp, tp, rng)
        so.step()
        to.step()
    sd = so.state_dict()
    tsd = to.state_dict()
    # torch's layout: integer keys in 'state', index lists in 'param_groups'
    assert sorted(sd["state"].keys()) == sorted(tsd["state"].keys()) == [0, 1, 2]
    assert [g["params"] for g in sd["param_groups"]] == [g["params"] for g in tsd["param_groups"]] == [[0], [1, 2]]
    for k in tsd["state"]:
        assert set(sd["state"][k].keys()) == set(tsd["state"][k].keys())
        for kk, v in tsd["state"][k].items():
            np.testing.assert_allclose(np_of(sd["state"][k][kk]), np_of(v), rtol=1e-5, atol=1e-7)
    for g, tg in zip(sd["param_groups"], tsd["param_groups"]):
        for key in kw:
            assert g[key] == tg[key]
    # a fresh optimizer over copies of the parameters, loaded from the state dict,
    # continues exactly like the original one
    sp2 = [nn.Parameter(p.detach().clone()) for p in sp]
    so2 = getattr(optim, name)([{"params": sp2[:1]}, {"params": sp2[1:]}], lr=123.0)
    so2.load_state_dict(sd)
    assert [g["lr"] for g in so2.param_groups] == [kw["lr"], 0.02]
    assert so2.param_groups[0]["params"][0] is sp2[0]
    for _ in range(3):
        set_grads(sp, tp, rng)
        for a, b in zip(sp2, sp):
            a.grad = b.grad.clone()
        so.step()
        so2.step()
        to.step()
        for a, b in zip(sp2, sp):
            np.testing.assert_array_equal(np_of(a), np_of(b))
        assert_params_close(sp, tp)
    # the loaded state is a copy, not an alias of the source optimizer's
    k0 = next(iter(so2.state[sp2[0]]))
    assert so2.state[sp2[0]][k0] is not so.state[sp[0]][k0]
    with pytest.raises(ValueError):
        getattr(optim, name)(sp2, **kw).load_state_dict(sd)  # a different number of groups


def test_zero_grad():
    sp, tp = make_params()
    o = optim.SGD(sp, lr=0.1)
    set_grads(sp, tp, np.random.default_rng(0))
    o.zero_grad(set_to_none=False)
    assert all(p.grad is not None and np.all(np_of(p.grad) == 0) for p in sp)
    o.zero_grad()
    assert all(p.grad is None for p in sp)
    o.step()  # no gradients: nothing changes
    assert_params_close(sp, tp, 0, 0)


def test_step_is_not_recorded():
    p = nn.Parameter(st.ones(3))
    o = optim.Adam([p], lr=0.1)
    p.grad = st.ones(3)
    o.step()
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    assert all(v.grad_fn is None for v in o.state[p].values())


def test_closure():
    p = nn.Parameter(st.tensor([1.0, -2.0]))
    o = optim.SGD([p], lr=0.1)

    def closure():
        o.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = o.step(closure)
    assert abs(loss.item() - 5.0) < 1e-6
    np.testing.assert_allclose(np_of(p), [0.8, -1.6], rtol=1e-6)


def test_bad_arguments():
    p = [nn.Parameter(st.ones(1))]
    for bad in (lambda: optim.SGD(p, lr=-1), lambda: optim.SGD(p, lr=0.1, nesterov=True),
                lambda: optim.Adam(p, betas=(1.0, 0.9)), lambda: optim.Adam(p, eps=-1),
                lambda: optim.AdamW([], lr=0.1)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(TypeError):
        optim.SGD(nn.Parameter(st.ones(1)), lr=0.1)


# ---------------- schedulers ----------------
def _sched_pair(make_s, make_t, steps=12):
    sp, tp = make_params()
    so = optim.SGD([{"params": sp[:1]}, {"params": sp[1:], "lr": 0.5}], lr=0.1)
    to = torch.optim.SGD([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.5}], lr=0.1)
    ss, ts = make_s(so), make_t(to)
    got, exp = [ss.get_last_lr()], [ts.get_last_lr()]
    for _ in range(steps):
        so.step()
        to.step()
        ss.step()
        ts.step()
        got.append(ss.get_last_lr())
        exp.append(ts.get_last_lr())
        assert [g["lr"] for g in so.param_groups] == ss.get_last_lr()
    np.testing.assert_allclose(np.array(got), np.array(exp), rtol=1e-12, atol=0)
    return so, ss


def test_lambda_lr():
    lam = lambda e: 0.9 ** e + 0.01 * e  # noqa: E731
    _sched_pair(lambda o: optim.lr_scheduler.LambdaLR(o, lam),
                lambda o: torch.optim.lr_scheduler.LambdaLR(o, lam))
    lams = [lambda e: 1.0 / (e + 1), lambda e: 0.5 * e]
    _sched_pair(lambda o: optim.lr_scheduler.LambdaLR(o, lams),
                lambda o: torch.optim.lr_scheduler.LambdaLR(o, lams))


def test_step_lr():
    _sched_pair(lambda o: optim.lr_scheduler.StepLR(o, 3, gamma=0.5),
                lambda o: torch.optim.lr_scheduler.StepLR(o, 3, gamma=0.5))


def _hf_linear(warmup, total):
    def f(step):
        if step < warmup:
            return float(step) / float(max(1, warmup))
        return max(0.0, float(total - step) / float(max(1, total - warmup)))
    return f


@pytest.mark.parametrize("warmup,total", [(3, 10), (0, 8), (5, 5)])
def test_linear_schedule_with_warmup(warmup, total):
    so, ss = _sched_pair(lambda o: optim.lr_scheduler.get_linear_schedule_with_warmup(o, warmup, total),
                         lambda o: torch.optim.lr_scheduler.LambdaLR(o, _hf_linear(warmup, total)),
                         steps=total + 2)
    assert isinstance(ss, optim.lr_scheduler.LambdaLR)
    assert ss.get_last_lr() == [0.0, 0.0]
    # the explicit values: 0 -> peak linearly over warmup, then linearly to 0
    sp, _ = make_params()
    o = optim.SGD(sp, lr=1.0)
    s = optim.lr_scheduler.get_linear_schedule_with_warmup(o, warmup, total)
    lrs = [s.get_last_lr()[0]]
    for _ in range(total):
        o.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
    exp = [k / warmup if k < warmup else (total - k) / max(1, total - warmup) for k in range(total + 1)]
    np.testing.assert_allclose(lrs, exp, rtol=1e-12)


def test_scheduler_state_dict():
    sp, _ = make_params()
    o = optim.AdamW(sp, lr=1e-3)
    s = optim.lr_scheduler.get_linear_schedule_with_warmup(o, 4, 20)
    for _ in range(6):
        o.step()
        s.step()
    sd = s.state_dict()
    assert sd["last_epoch"] == 6 and "optimizer" not in sd
    o2 = optim.AdamW(make_params()[0], lr=1e-3)
    s2 = optim.lr_scheduler.get_linear_schedule_with_warmup(o2, 4, 20)
    s2.load_state_dict(sd)
    assert s2.last_epoch == 6 and s2.get_last_lr() == s.get_last_lr()
    s.step()
    s2.step()
    assert s2.get_last_lr() == s.get_last_lr()
    assert o2.param_groups[0]["lr"] == o.param_groups[0]["lr"] == pytest.approx(1e-3 * 13 / 16)


# ---------------- clip_grad_norm_ ----------------
@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (0.3, float("inf")),
                                                (0.7, 3.0)])
def test_clip_grad_norm(max_norm, norm_type):
    sp, tp = make_params()
    set_grads(sp, tp, np.random.default_rng(9))
    total = nn.utils.clip_grad_norm_(sp, max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    assert total.dim() == 0
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-5)
    for a, b in zip(sp, tp):
        np.testing.assert_allclose(np_of(a.grad), np_of(b.grad), rtol=1e-5, atol=1e-7)
    if max_norm < ttotal.item():
        new = math.sqrt(sum(float((np_of(p.grad).astype(np.float64) ** 2).sum()) for p in sp)) \
            if norm_type == 2.0 else None
        if new is not None:
            assert abs(new - max_norm) < 1e-4


def test_clip_grad_norm_single_tensor_and_no_grads():
    p = nn.Parameter(st.ones(4))
    assert nn.utils.clip_grad_norm_([p], 1.0).item() == 0.0
    p.grad = st.full((4,), 3.0)
    total = st.nn.utils.clip_grad_norm_(p, 1.0)
    assert abs(total.item() - 6.0) < 1e-5
    np.testing.assert_allclose(np_of(p.grad), np.full(4, 3.0 / (6.0 + 1e-6)), rtol=1e-5)
    assert p.grad.grad_fn is None
