"""symtrace.amp.GradScaler against torch.amp.GradScaler on the CPU: the
scale's course, the skipped steps and the parameters through overflows and
growth; unscaled gradients; its errors; a compiled step; float16 training.
Also isnan/isinf/isfinite, which it uses."""
import numpy as np
import pytest

import symtrace as st
from symtrace import _C

try:
    import torch
except ImportError:     # py3.12 here has no torch: the tests against it skip
    torch = None
F = st.nn.functional
NEEDS_TORCH = pytest.mark.skipif(torch is None, reason="no PyTorch")


@NEEDS_TORCH
def test_isnan_isinf_isfinite():
    vals = [1.0, float("inf"), -float("inf"), float("nan"), 0.0, -2.5]
    x = st.tensor(vals)
    t = torch.tensor(vals)
    for name in ("isnan", "isinf", "isfinite"):
        for dt, tdt in ((st.float32, torch.float32), (st.bfloat16, torch.bfloat16), (st.float64, torch.float64)):
            got = getattr(st, name)(x.to(dt))
            assert got.dtype is st.bool
            np.testing.assert_array_equal(got.numpy(), getattr(torch, name)(t.to(tdt)).numpy(), err_msg=name)
        assert getattr(x, name)().numpy().tolist() == getattr(torch, name)(t).numpy().tolist()
        i = st.tensor([1, 2, 3])
        np.testing.assert_array_equal(getattr(st, name)(i).numpy(), getattr(torch, name)(torch.tensor([1, 2, 3])).numpy())


def _pair(seed=0):
    rng = np.random.default_rng(seed)
    w1, w2 = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((3, 8)).astype(np.float32)
    sp = [st.tensor(w).requires_grad_(True) for w in (w1, w2)]
    tp = [torch.tensor(w, requires_grad=True) for w in (w1, w2)] if torch else None
    return sp, tp


def _loss(m, ps, x, boom):
    f = F if m is st else torch.nn.functional
    h = f.linear(f.relu(f.linear(x, ps[0])), ps[1])
    return (h * h).mean() * boom


@NEEDS_TORCH
def test_course_matches_torch_through_overflow_and_growth():
    sp, tp = _pair()
    sopt = st.optim.SGD(sp, lr=0.01)
    topt = torch.optim.SGD(tp, lr=0.01)
    kw = dict(init_scale=2.0 ** 10, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
    ss = st.amp.GradScaler("cpu", **kw)
    ts = torch.amp.GradScaler("cpu", **kw)
    rng = np.random.default_rng(1)
    booms = [1, 1, 1, 1, 1e38, 1, 1e38, 1e38, 1, 1, 1, 1, 1]     # 1e38 * scale overflows float32
    for k, boom in enumerate(booms):
        xv = rng.standard_normal((5, 4)).astype(np.float32)
        for opt in (sopt, topt):
            opt.zero_grad()
        ss.scale(_loss(st, sp, st.tensor(xv), boom)).backward()
        ts.scale(_loss(torch, tp, torch.tensor(xv), boom)).backward()
        ss.step(sopt)
        ts.step(topt)
        ss.update()
        ts.update()
        assert ss.get_scale() == ts.get_scale(), k
        for p, q in zip(sp, tp):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=str(k))
    assert ss.get_scale() != 2.0 ** 10                  # it moved both ways on the way
    assert ss.state_dict() == {k: v for k, v in ts.state_dict().items()}


def test_unscale_gives_the_true_gradients_and_step_skips_on_nan():
    sp, _ = _pair(2)
    x = st.randn(5, 4)
    _loss(st, sp, x, 1.0).backward()
    want = [p.grad.numpy().copy() for p in sp]
    opt = st.optim.SGD(sp, lr=0.1)
    opt.zero_grad()
    sc = st.amp.GradScaler("cpu", init_scale=256.0)
    sc.scale(_loss(st, sp, x, 1.0)).backward()
    sc.unscale_(opt)
    for p, g in zip(sp, want):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-6)
    assert sc.step(opt) is None or True                 # SGD.step returns None: stepped
    sc.update()
    assert sc.get_scale() == 256.0
    opt.zero_grad()
    sc.scale(_loss(st, sp, x, 1.0)).backward()
    sp[0].grad[0, 0] = float("nan")
    before = [p.detach().numpy().copy() for p in sp]
    sc.step(opt)                                       # unscales, finds the nan, skips
    for p, b in zip(sp, before):
        np.testing.assert_array_equal(p.detach().numpy(), b)
    sc.update()
    assert sc.get_scale() == 128.0


def test_errors_and_disabled():
    with pytest.raises(ValueError, match="growth_factor"):
        st.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(ValueError, match="backoff_factor"):
        st.amp.GradScaler("cpu", backoff_factor=1.5)
    with pytest.raises(ValueError, match="growth_interval"):
        st.amp.GradScaler("cpu", growth_interval=0)
    with pytest.raises(ValueError, match="'tpu'"):
        st.amp.GradScaler("tpu")
    sp, _ = _pair()
    opt = st.optim.SGD(sp, lr=0.1)
    sc = st.amp.GradScaler("cpu")
    with pytest.raises(TypeError, match="str"):
        sc.scale("loss")
    sc.scale(_loss(st, sp, st.randn(2, 4), 1.0)).backward()
    sc.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        sc.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure"):
        sc.step(opt, closure=lambda: None)
    sc.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        sc.unscale_(opt)
    sc.update()
    with pytest.raises(RuntimeError, match="No inf checks"):
        sc.update()
    half = st.randn(3).to(st.float16).requires_grad_(True)
    half.grad = st.ones(3).to(st.float16)
    with pytest.raises(ValueError, match="FP16 gradients"):
        st.amp.GradScaler("cpu").unscale_(st.optim.SGD([half], lr=0.1))
    off = st.amp.GradScaler("cpu", enabled=False)
    y = st.randn(3)
    assert off.scale(y) is y and off.get_scale() == 1.0 and off.state_dict() == {}
    sc2 = st.amp.GradScaler("cpu")
    sc2.load_state_dict({"scale": 8.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 5,
                         "_growth_tracker": 2})
    assert sc2.get_scale() == 8.0 and sc2.get_growth_factor() == 4.0 and sc2.get_growth_interval() == 5


@pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")
@pytest.mark.parametrize("init", [2.0 ** 4, 2.0 ** 20], ids=["grows", "overflows"])
def test_float16_autocast_training_compiled_matches_eager(init):
    """float16 autocast with loss scaling: a compiled step (the scaler's
    calls break the graph) gives eager's parameters and scales, growing
    from a small scale, backing off from one that overflows float16."""
    runs = []
    for compiled in (False, True):
        st.reset()
        sp, _ = _pair(3)
        opt = st.optim.SGD(sp, lr=0.05)
        sc = st.amp.GradScaler("cpu", init_scale=init, growth_interval=2)

        def step(x):
            with st.autocast("cpu", dtype=st.float16):
                loss = _loss(st, sp, x, 1.0)
            sc.scale(loss).backward()
            sc.step(opt)
            sc.update()
            opt.zero_grad()
            return loss

        fn = st.compile(step) if compiled else step
        rng = np.random.default_rng(4)
        losses, scales = [], []
        for _ in range(6):
            losses.append(float(fn(st.tensor(rng.standard_normal((5, 4)).astype(np.float32)))))
            scales.append(sc.get_scale())
        assert all(np.isfinite(losses)) and all(np.all(np.isfinite(p.detach().numpy())) for p in sp)
        runs.append((losses, scales, [p.detach().numpy().copy() for p in sp]))
    (le, se, pe), (lc, sc_, pc) = runs
    np.testing.assert_allclose(lc, le, rtol=1e-5)
    assert sc_ == se
    if init == 2.0 ** 4:
        assert se == [16.0, 32.0, 32.0, 64.0, 64.0, 128.0]      # grew every 2 good steps
    else:
        assert se[0] == init / 2 and min(se) < init / 2         # backed off: those steps skipped
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
