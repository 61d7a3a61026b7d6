# End-to-end user programs against PyTorch ("never break their program"): small
# but complete training and inference programs (ResNet-style CNN, U-Net, LSTM/GRU
# language model, GPT-2 mini with a KV-cache generation loop, VAE, GAN, ViT, and
# a mixed program with gradient accumulation, eval inside the step and a
# checkpoint round trip), each written once against a library argument `L`
# (torch or symtrace) exactly as a user writes it. Each runs from torch's initial
# weights on the same batches with torch (the reference), with symtrace eagerly
# and with symtrace.compile (the step or the model); the per-step losses,
# outputs, parameters and gradients must agree, and the compiled runs must hold
# in a sane number of graphs. Also the API pieces these programs needed
# (interpolate's bicubic and trilinear modes, ...).
import numpy as np
import pytest

import symtrace as st

RTOL = 1e-4


def same(name, got, want, rtol=RTOL, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                               rtol=rtol, atol=atol, err_msg=name)


def as_np(x):
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def twins(torch, build):
    """(torch model, build) -> a factory of (torch copy, symtrace copy) with torch's
    initial weights."""
    torch.manual_seed(0)
    ref = build(torch)
    state = {k: v.detach().clone() for k, v in ref.state_dict().items()}

    def make():
        tm = build(torch)
        tm.load_state_dict(state)
        sm = build(st)
        sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in state.items()})
        return tm, sm
    return make


def eager(fn):
    return fn


def check_params(tm, sm, rtol=1e-3, atol=1e-5, grads=True, skip=()):
    sp = dict(sm.named_parameters())
    assert list(sp) == [n for n, _ in tm.named_parameters()]
    for n, p in tm.named_parameters():
        if n in skip:
            continue
        same(n, as_np(sp[n]), as_np(p), rtol, atol)
        if grads:
            assert (p.grad is None) == (sp[n].grad is None), n
            if p.grad is not None:
                same(n + ".grad", as_np(sp[n].grad), as_np(p.grad), rtol, atol)
    sb = dict(sm.named_buffers())
    for n, b in tm.named_buffers():
        same(n, as_np(sb[n]), as_np(b), rtol, atol)


WRAPS = {"eager": eager, "compiled": st.compile}
MODES = pytest.mark.parametrize("mode", ["eager", "compiled"])


# ====================================================================== interpolate: bicubic, trilinear, 5-d
INTERP = [((2, 3, 5, 7), "bicubic", dict(scale_factor=1.5)),
          ((2, 3, 5, 7), "bicubic", dict(size=(9, 4))),
          ((2, 3, 5, 7), "bicubic", dict(size=(9, 13), align_corners=True)),
          ((1, 2, 4, 4), "bicubic", dict(scale_factor=0.5)),
          ((1, 2, 1, 3), "bicubic", dict(size=(3, 1))),
          ((2, 2, 3, 4, 5), "trilinear", dict(scale_factor=2)),
          ((2, 2, 3, 4, 5), "trilinear", dict(size=(5, 3, 7), align_corners=True)),
          ((2, 2, 3, 4, 5), "nearest", dict(scale_factor=(2, 1.5, 0.7))),
          ((2, 2, 3, 4, 5), "nearest-exact", dict(size=(4, 4, 4))),
          ((2, 2, 3, 4, 5), "area", dict(size=(2, 3, 4)))]


@pytest.mark.parametrize("case", INTERP, ids=[f"{c[1]}-{len(c[0])}d-{i}" for i, c in enumerate(INTERP)])
def test_interpolate_more_modes_as_torch(torch, case):
    shape, mode, kw = case
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tx = torch.tensor(a, requires_grad=True)
    sx = st.tensor(a, requires_grad=True)
    want = torch.nn.functional.interpolate(tx, mode=mode, **kw)
    got = st.nn.functional.interpolate(sx, mode=mode, **kw)
    g = np.random.default_rng(1).standard_normal(tuple(want.shape)).astype(np.float32)
    want.backward(torch.tensor(g))
    got.backward(st.tensor(g))
    same("out", as_np(got), as_np(want), 1e-5)
    same("grad", as_np(sx.grad), as_np(tx.grad), 1e-5)
    compiled = st.compile(lambda x: st.nn.functional.interpolate(x, mode=mode, **kw))(st.tensor(a))
    same("compiled", as_np(compiled), as_np(want), 1e-5)


def test_interpolate_mode_errors_as_torch(torch):
    def outcome(L, shape, mode, **kw):
        try:
            L.nn.functional.interpolate(L.ones(*shape), scale_factor=2, mode=mode, **kw)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return "ok"
    for shape, mode in [((1, 1, 4, 4), "lanczos"), ((1, 1, 4), "bicubic"), ((1, 1, 4, 4, 4), "bicubic"),
                        ((1, 1, 4, 4), "trilinear"), ((1, 1, 4, 4, 4), "bilinear"),
                        ((1, 1, 2, 2, 2, 2), "nearest"), ((1, 1, 0, 2, 2), "trilinear")]:
        assert outcome(st, shape, mode) == outcome(torch, shape, mode), (shape, mode)


# ====================================================================== SWA and EMA weights (optim.swa_utils)
def small_bn_net(L):
    nn = L.nn
    return nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def swa_program(L, model, wrap, strategy):
    su = L.optim.swa_utils
    rng = np.random.default_rng(7)
    data = [(L.tensor(rng.standard_normal((6, 5)).astype(np.float32)),
             L.tensor(rng.standard_normal((6, 2)).astype(np.float32))) for _ in range(7)]
    swa = su.AveragedModel(model)
    ema = su.AveragedModel(model, multi_avg_fn=su.get_ema_multi_avg_fn(0.8), use_buffers=True)
    ema1 = su.AveragedModel(model, avg_fn=su.get_ema_avg_fn(0.7))
    opt = L.optim.SGD([{"params": model[0].parameters()}, {"params": model[3].parameters(), "lr": 0.02}],
                      lr=0.05, momentum=0.9)
    sched = su.SWALR(opt, swa_lr=[0.01, 0.005], anneal_epochs=3, anneal_strategy=strategy)

    def step(x, y):
        loss = L.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f, obs = wrap(step), []
    for i, (x, y) in enumerate(data):
        obs.append(f(x, y).item())
        ema.update_parameters(model)
        ema1.update_parameters(model)
        if i >= 2:
            swa.update_parameters(model)
            sched.step()
        obs += [g["lr"] for g in opt.param_groups]
    sd = sched.state_dict()
    sched2 = su.SWALR(opt, swa_lr=0.5)
    sched2.load_state_dict(sd)
    sched2.step()
    obs += sched2.get_last_lr() + [int(swa.n_averaged), int(ema.n_averaged)]
    su.update_bn([(x, y) for x, y in data[:3]], swa)
    with L.no_grad():
        swa.eval()
        ema.eval()
        obs += [as_np(swa(data[0][0])), as_np(ema(data[0][0])), as_np(ema1(data[0][0]))]
    obs += [as_np(b) for b in swa.module[1].buffers()] + [as_np(b) for b in ema.module[1].buffers()]
    return obs


@MODES
@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swa_and_ema_weights_as_torch(torch, mode, strategy):
    tm, sm = twins(torch, small_bn_net)()
    want = swa_program(torch, tm, eager, strategy)
    got = swa_program(st, sm, WRAPS[mode], strategy)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        same(f"obs[{i}]", g, w)
    check_params(tm, sm)


def test_swa_utils_errors_as_torch(torch):
    for L in (torch, st):
        su = L.optim.swa_utils
        opt = L.optim.SGD(L.nn.Linear(2, 2).parameters(), lr=0.1)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
            su.SWALR(opt, 0.1, anneal_strategy="exp")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
            su.SWALR(opt, 0.1, anneal_epochs=-1)
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a value in \[0,1\]"):
            su.get_ema_multi_avg_fn(1.5)
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
            su.AveragedModel(L.nn.Linear(2, 2), avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())
