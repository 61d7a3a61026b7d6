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
