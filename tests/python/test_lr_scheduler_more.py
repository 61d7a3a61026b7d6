# symtrace.optim.lr_scheduler against torch.optim.lr_scheduler: the lr of
# every parameter group over 30-100 steps equal to torch's within 1e-12 (the
# same recurrences and closed forms), the momentum / beta1 that OneCycleLR and
# CyclicLR cycle, state_dict() keys equal to torch's, load_state_dict() into a
# fresh scheduler mid-run (get_last_lr() right after, and the same values
# after), SequentialLR / ChainedScheduler compositions, ReduceLROnPlateau on
# a scripted metric sequence, step(epoch)'s closed forms, and the argument
# checks with torch's messages. The tests without the `torch` fixture check
# closed forms by hand (they run without torch too).
import math
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.optim as optim

LS = optim.lr_scheduler


def _params(lib):
    if lib is optim:
        return [nn.Parameter(st.ones(2)), nn.Parameter(st.ones(3))]
    import torch
    return [torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(3))]


def _opt(lib, kind="SGD"):
    """An optimizer with two groups (lr 0.1 and 0.5)."""
    p = _params(lib)
    groups = [{"params": p[:1]}, {"params": p[1:], "lr": 0.5}]
    if kind == "SGD":
        return lib.SGD(groups, lr=0.1, momentum=0.9)
    return getattr(lib, kind)(groups, lr=0.1)


def _momenta(o):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in o.param_groups]


def _close(a, b, msg=""):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=1e-12, atol=1e-15, err_msg=msg)


# each: (id, steps, maker(lr_scheduler module, optimizer), optimizer kind)
SCHEDS = [
    ("StepLR", 40, lambda L, o: L.StepLR(o, 4, gamma=0.5), "SGD"),
    ("MultiStepLR", 40, lambda L, o: L.MultiStepLR(o, [3, 7, 7, 15, 30], gamma=0.3), "SGD"),
    ("ExponentialLR", 60, lambda L, o: L.ExponentialLR(o, 0.93), "SGD"),
    ("CosineAnnealingLR", 60, lambda L, o: L.CosineAnnealingLR(o, T_max=10, eta_min=0.01), "SGD"),
    ("CosineAnnealingLR-eta0", 45, lambda L, o: L.CosineAnnealingLR(o, T_max=7), "Adam"),
    ("CosineAnnealingWarmRestarts", 80, lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2,
                                                                                  eta_min=0.001), "SGD"),
    ("CosineAnnealingWarmRestarts-1", 40, lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=6), "SGD"),
    ("LinearLR", 30, lambda L, o: L.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=8), "SGD"),
    ("LinearLR-decay", 30, lambda L, o: L.LinearLR(o, start_factor=1.0, end_factor=0.05, total_iters=20),
     "SGD"),
    ("ConstantLR", 30, lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=6), "SGD"),
    ("PolynomialLR", 30, lambda L, o: L.PolynomialLR(o, total_iters=12, power=2.0), "SGD"),
    ("PolynomialLR-sqrt", 30, lambda L, o: L.PolynomialLR(o, total_iters=25, power=0.5), "SGD"),
    ("MultiplicativeLR", 40, lambda L, o: L.MultiplicativeLR(o, lambda e: 0.95), "SGD"),
    ("MultiplicativeLR-list", 40, lambda L, o: L.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 1.0 - 0.01 * e]),
     "SGD"),
    ("LambdaLR", 40, lambda L, o: L.LambdaLR(o, lambda e: 1.0 / (1 + 0.1 * e)), "SGD"),
    ("OneCycleLR-cos-sgd", 99, lambda L, o: L.OneCycleLR(o, max_lr=1.0, total_steps=100), "SGD"),
    ("OneCycleLR-linear-adam", 49, lambda L, o: L.OneCycleLR(o, max_lr=[0.3, 0.6], total_steps=50,
                                                             anneal_strategy="linear"), "Adam"),
    ("OneCycleLR-three-phase-adamw", 59,
     lambda L, o: L.OneCycleLR(o, max_lr=0.2, epochs=6, steps_per_epoch=10, three_phase=True, pct_start=0.25,
                               div_factor=10.0, final_div_factor=100.0, base_momentum=0.8,
                               max_momentum=0.9), "AdamW"),
    ("OneCycleLR-no-momentum", 39, lambda L, o: L.OneCycleLR(o, max_lr=0.5, total_steps=40, cycle_momentum=False),
     "RMSprop"),
    ("CyclicLR-triangular", 60, lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=7), "SGD"),
    ("CyclicLR-triangular2", 60, lambda L, o: L.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=5,
                                                         step_size_down=3, mode="triangular2"), "SGD"),
    ("CyclicLR-exp_range-adam", 60, lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=6,
                                                            mode="exp_range", gamma=0.97), "Adam"),
    ("SequentialLR", 50, lambda L, o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.1, total_iters=5),
                                                         L.CosineAnnealingLR(o, T_max=30, eta_min=0.001)],
                                                     milestones=[5]), "SGD"),
    ("SequentialLR-3", 50, lambda L, o: L.SequentialLR(o, [L.ConstantLR(o, factor=0.2, total_iters=10),
                                                           L.ExponentialLR(o, gamma=0.9),
                                                           L.StepLR(o, 5, gamma=0.5)],
                                                       milestones=[4, 12]), "SGD"),
    ("ChainedScheduler", 40, lambda L, o: L.ChainedScheduler([L.ConstantLR(o, factor=0.1, total_iters=3),
                                                              L.ExponentialLR(o, gamma=0.9)]), "SGD"),
    ("ChainedScheduler-cos", 40, lambda L, o: L.ChainedScheduler([L.LinearLR(o, start_factor=0.5, total_iters=4),
                                                                  L.CosineAnnealingLR(o, T_max=12)], optimizer=o),
     "SGD"),
]


def _run(L, lib, make, kind, steps, load_at=None):
    """lrs (per step, per group) and momenta; with load_at, the scheduler (and
    its optimizer) are replaced at that step by fresh ones loaded from their
    state_dicts."""
    o = _opt(lib, kind)
    s = make(L, o)
    lrs, moms, last = [[g["lr"] for g in o.param_groups]], [_momenta(o)], [list(s.get_last_lr())]
    for k in range(steps):
        if k == load_at:
            sd, osd = s.state_dict(), o.state_dict()
            o = _opt(lib, kind)
            s2 = make(L, o)
            o.load_state_dict(osd)
            s2.load_state_dict(sd)
            assert s2.get_last_lr() == s.get_last_lr()
            s = s2
        o.step()
        s.step()
        lrs.append([g["lr"] for g in o.param_groups])
        moms.append(_momenta(o))
        last.append(list(s.get_last_lr()))
    return lrs, moms, last, s


@pytest.mark.parametrize("case", SCHEDS, ids=[c[0] for c in SCHEDS])
def test_lr_sequence_like_torch(torch, case):
    name, steps, make, kind = case
    got, gmom, glast, s = _run(LS, optim, make, kind, steps)
    exp, emom, elast, ts = _run(torch.optim.lr_scheduler, torch.optim, make, kind, steps)
    _close(got, exp, name)
    _close(glast, elast, name)
    assert gmom == emom
    assert glast == got            # get_last_lr() is the optimizer's lr
    assert len(set(map(tuple, got))) >= 2, "a schedule that does not move"
    # state_dict: the same keys as torch's (nested ones too)
    sd, tsd = s.state_dict(), ts.state_dict()
    assert set(sd) == set(tsd)
    for k in ("_schedulers",):
        if k in tsd:
            assert [set(x) for x in sd[k]] == [set(x) for x in tsd[k]]
    for k, v in tsd.items():
        if isinstance(v, (int, float, str, bool, type(None))) and not k.startswith("_get_lr"):
            assert sd[k] == v, k


@pytest.mark.parametrize("case", SCHEDS, ids=[c[0] for c in SCHEDS])
def test_load_state_dict_mid_run(torch, case):
    name, steps, make, kind = case
    load_at = steps // 3 + 1
    got, gmom, glast, _ = _run(LS, optim, make, kind, steps, load_at=load_at)
    exp, emom, elast, _ = _run(torch.optim.lr_scheduler, torch.optim, make, kind, steps)
    _close(got, exp, name)
    _close(glast, elast, name)
    assert gmom == emom


def test_step_past_total_raises(torch):
    for L, lib in ((LS, optim), (torch.optim.lr_scheduler, torch.optim)):
        o = _opt(lib)
        s = L.OneCycleLR(o, max_lr=0.1, total_steps=5)
        for _ in range(5):
            o.step()
            s.step()
        with pytest.raises(ValueError, match="Tried to step 6 times. The specified number of total steps is 5"):
            s.step()


@pytest.mark.parametrize("mode,threshold_mode,kw", [
    ("min", "rel", dict(patience=2)),
    ("min", "abs", dict(patience=1, threshold=0.05, cooldown=2)),
    ("max", "rel", dict(patience=0, factor=0.5, min_lr=0.02)),
    ("max", "abs", dict(patience=3, threshold=0.0, min_lr=[0.001, 0.2], eps=1e-3)),
])
def test_reduce_lr_on_plateau(torch, mode, threshold_mode, kw):
    rng = np.random.default_rng(3)
    # plateaus, improvements and noise: the lr drops several times
    metrics = list(np.concatenate([np.linspace(1.0, 0.5, 8), np.full(6, 0.5), 0.5 + 0.01 * rng.random(10),
                                   np.linspace(0.49, 0.3, 5), np.full(12, 0.3), 0.31 - 0.002 * np.arange(10)]))
    if mode == "max":
        metrics = [1.0 - m for m in metrics]
    res = []
    for L, lib in ((LS, optim), (torch.optim.lr_scheduler, torch.optim)):
        o = _opt(lib)
        s = L.ReduceLROnPlateau(o, mode=mode, threshold_mode=threshold_mode, **kw)
        lrs = []
        for i, m in enumerate(metrics):
            o.step()
            if i % 2:
                s.step(float(m))
            else:        # a 0-d tensor metric
                s.step(st.tensor(float(m)) if lib is optim else torch.tensor(float(m)))
            lrs.append([g["lr"] for g in o.param_groups])
            assert s.get_last_lr() == lrs[-1]
            if i == 20:       # a fresh scheduler loaded from the state_dict carries on
                sd = s.state_dict()
                s = L.ReduceLROnPlateau(o, mode="max" if mode == "min" else "min")
                s.load_state_dict(sd)
        res.append((lrs, s.state_dict(), s.num_bad_epochs, s.cooldown_counter, s.best))
    (got, sd, *g_rest), (exp, tsd, *e_rest) = res
    _close(got, exp)
    assert g_rest == e_rest
    assert set(sd) == set(tsd)
    assert len(set(map(tuple, got))) >= 2, "the lr never dropped"


def test_closed_form_step_epoch(torch):
    """step(epoch) uses the closed form (with the deprecation warning) as torch."""
    for make in (lambda L, o: L.StepLR(o, 3, gamma=0.5), lambda L, o: L.MultiStepLR(o, [2, 5], gamma=0.1),
                 lambda L, o: L.ExponentialLR(o, 0.9), lambda L, o: L.CosineAnnealingLR(o, 10, eta_min=0.01),
                 lambda L, o: L.LinearLR(o, 0.2, total_iters=6), lambda L, o: L.ConstantLR(o, 0.3, 4),
                 lambda L, o: L.PolynomialLR(o, 8, power=1.5),
                 lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
                 lambda L, o: L.LambdaLR(o, lambda e: 0.5 ** e)):
        res = []
        for L, lib in ((LS, optim), (torch.optim.lr_scheduler, torch.optim)):
            o = _opt(lib)
            s = make(L, o)
            out = []
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                for e in (4, 1, 7, 7, 12, 0, 9):
                    s.step(e)
                    out.append(list(s.get_last_lr()))
            assert any("epoch parameter" in str(x.message) for x in w) or isinstance(s, L.CosineAnnealingWarmRestarts)
            res.append(out)
        _close(res[0], res[1])


BAD = [
    lambda L, o: L.ConstantLR(o, factor=1.5),
    lambda L, o: L.LinearLR(o, start_factor=0.0),
    lambda L, o: L.LinearLR(o, end_factor=1.5),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2.5),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="x"),
    lambda L, o: L.OneCycleLR(o, max_lr=0.1),
    lambda L, o: L.OneCycleLR(o, max_lr=0.1, total_steps=0),
    lambda L, o: L.OneCycleLR(o, max_lr=0.1, epochs=0, steps_per_epoch=3),
    lambda L, o: L.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1.5),
    lambda L, o: L.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="exp"),
    lambda L, o: L.OneCycleLR(o, max_lr=[0.1], total_steps=10),
    lambda L, o: L.ReduceLROnPlateau(o, factor=1.0),
    lambda L, o: L.ReduceLROnPlateau(o, mode="median"),
    lambda L, o: L.ReduceLROnPlateau(o, threshold_mode="pct"),
    lambda L, o: L.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda L, o: L.SequentialLR(o, [L.StepLR(o, 2)], milestones=[3]),
    lambda L, o: L.SequentialLR(o, [], milestones=[]),
    lambda L, o: L.SequentialLR(o, [L.StepLR(o, 2), L.ReduceLROnPlateau(o)], milestones=[3]),
    lambda L, o: L.ChainedScheduler([]),
    lambda L, o: L.LambdaLR(o, [lambda e: 1.0]),
    lambda L, o: L.MultiplicativeLR(o, 3.0),
    lambda L, o: L.CyclicLR(o, 0.01, 0.1, mode="sine"),
    lambda L, o: L.StepLR(o, 2, last_epoch=5),
    lambda L, o: L.StepLR(object(), 2),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_arguments_like_torch(torch, i):
    with pytest.raises(Exception) as te:
        BAD[i](torch.optim.lr_scheduler, _opt(torch.optim))
    with pytest.raises(te.type) as se:
        BAD[i](LS, _opt(optim))
    assert str(se.value) == str(te.value)


def test_cycle_momentum_needs_momentum(torch):
    for L, lib in ((LS, optim), (torch.optim.lr_scheduler, torch.optim)):
        o = lib.Adagrad([_params(lib)[0]], lr=0.1)
        with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
            L.OneCycleLR(o, max_lr=0.1, total_steps=10)


def test_get_lr_outside_step_warns():
    o = _opt(optim)
    s = LS.StepLR(o, 3)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()


# ---------------- without torch: closed forms by hand ----------------
def _seq(make, steps, kind="SGD"):
    o = _opt(optim, kind)
    s = make(o)
    out = [s.get_last_lr()]
    for _ in range(steps):
        o.step()
        s.step()
        out.append(s.get_last_lr())
    return np.array(out)


def test_closed_forms_by_hand():
    base = np.array([0.1, 0.5])
    n = np.arange(61)[:, None]
    _close(_seq(lambda o: LS.CosineAnnealingLR(o, T_max=15, eta_min=0.01), 60)[:16],
           (0.01 + (base - 0.01) * (1 + np.cos(np.pi * n / 15)) / 2)[:16])
    _close(_seq(lambda o: LS.ExponentialLR(o, 0.9), 60), base * 0.9 ** n.astype(float))
    _close(_seq(lambda o: LS.StepLR(o, 7, 0.5), 60), base * 0.5 ** (n // 7))
    _close(_seq(lambda o: LS.MultiStepLR(o, [10, 25, 25], 0.1), 60),
           base * 0.1 ** ((n >= 10).astype(int) + 2 * (n >= 25)))
    _close(_seq(lambda o: LS.LinearLR(o, 0.2, 1.0, 10), 60), base * (0.2 + 0.8 * np.minimum(n, 10) / 10))
    _close(_seq(lambda o: LS.PolynomialLR(o, 20, 2.0), 60), base * (1 - np.minimum(n, 20) / 20) ** 2, )
    _close(_seq(lambda o: LS.ConstantLR(o, 0.25, 5), 60), base * np.where(n < 5, 0.25, 1.0))
    # warm restarts, T_mult 2: cycles of 4, 8, 16 steps
    t_cur, t_i, exp = 0, 4, []
    for _ in range(61):
        exp.append(0.5 * base * (1 + math.cos(math.pi * t_cur / t_i)))
        t_cur += 1
        if t_cur >= t_i:
            t_cur, t_i = 0, t_i * 2
    _close(_seq(lambda o: LS.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2), 60), exp)


def test_one_cycle_by_hand():
    total, max_lr, div, fdiv = 40, 1.0, 25.0, 1e4
    o = _opt(optim, "Adam")
    s = LS.OneCycleLR(o, max_lr=max_lr, total_steps=total)
    up = 0.3 * total - 1
    lrs, b1 = [o.param_groups[0]["lr"]], [o.param_groups[0]["betas"][0]]
    for _ in range(total - 1):
        o.step()
        s.step()
        lrs.append(o.param_groups[0]["lr"])
        b1.append(o.param_groups[0]["betas"][0])
    init, lo = max_lr / div, max_lr / div / fdiv

    def cos(a, b, pct):
        return b + (a - b) / 2.0 * (math.cos(math.pi * pct) + 1)

    exp = [cos(init, max_lr, k / up) if k <= up else cos(max_lr, lo, (k - up) / (total - 1 - up))
           for k in range(total)]
    expm = [cos(0.95, 0.85, k / up) if k <= up else cos(0.85, 0.95, (k - up) / (total - 1 - up))
            for k in range(total)]
    _close(lrs, exp)
    _close(b1, expm)
    assert o.param_groups[0]["betas"][1] == 0.999
    assert max(lrs) == pytest.approx(max_lr) and lrs[-1] == pytest.approx(lo)


def test_reduce_lr_on_plateau_by_hand():
    o = _opt(optim)
    s = LS.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1, min_lr=0.03)
    lrs = []
    for m in [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]:
        s.step(m)
        lrs.append(s.get_last_lr()[0])
    # bad epochs: 1, 2 -> drop (cooldown 1), cooldown, 1, 2 -> drop, ...
    assert lrs == [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03]
    assert s.state_dict()["best"] == 0.8 and "optimizer" not in s.state_dict()


def test_state_dict_layout_and_sequential_reload():
    o = _opt(optim)
    s = LS.SequentialLR(o, [LS.LinearLR(o, 0.1, total_iters=4), LS.StepLR(o, 3, 0.5)], milestones=[4])
    for _ in range(6):
        o.step()
        s.step()
    sd = s.state_dict()
    assert set(sd) == {"_milestones", "last_epoch", "_last_lr", "_schedulers"}
    assert sd["last_epoch"] == 6 and [x["last_epoch"] for x in sd["_schedulers"]] == [3, 2]
    assert set(sd["_schedulers"][1]) == {"step_size", "gamma", "base_lrs", "last_epoch", "_step_count",
                                         "_is_initial", "_get_lr_called_within_step", "_last_lr"}
    o2 = _opt(optim)
    s2 = LS.SequentialLR(o2, [LS.LinearLR(o2, 0.1, total_iters=4), LS.StepLR(o2, 3, 0.5)], milestones=[4])
    o2.load_state_dict(o.state_dict())
    s2.load_state_dict(sd)
    assert s2.get_last_lr() == s.get_last_lr()
    for _ in range(10):
        o.step()
        o2.step()
        s.step()
        s2.step()
        assert s2.get_last_lr() == s.get_last_lr() == [g["lr"] for g in o2.param_groups]
