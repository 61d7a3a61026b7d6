# The fused SGD update (symtrace/optim/_fused_sgd.py): bit-equal to torch's
# single-tensor SGD in float32 over several steps and option combinations
# (weight decay, momentum and its first-step buffer, dampening, Nesterov,
# maximize, a Tensor lr), one kernel per variant serving every size,
# float16/bfloat16 close to torch's foreach SGD, fused=False / non-
# contiguous tensors op by op, fused=True on them an error, the momentum
# buffer in state (state_dict round trip), and under symtrace.compile.
import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.optim as optim
from symtrace import _C
from symtrace.optim import _fused_sgd

SHAPES = [(7, 5), (13,), (3, 4, 6), (1,), (), (130,)]
NP = {st.float32: np.float32, st.float64: np.float64}

VARIANTS = [
    dict(lr=0.05),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, weight_decay=5e-4),
    dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2),
    dict(lr=0.03, momentum=0.8, dampening=0.3),
    dict(lr=0.07, momentum=0.5, dampening=0.1, weight_decay=0.2, maximize=True),
    dict(lr=0.01, weight_decay=0.3, maximize=True),
    dict(lr=0.2, momentum=0.95, nesterov=True, maximize=True),
]


def npy(t):
    return np.array(t.detach().numpy())


def grads(steps, seed=1, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]


def run_st(kw, fused, gs, dtype=st.float32, lr_tensor=False):
    rng = np.random.default_rng(0)
    ps = [nn.Parameter(st.tensor(rng.standard_normal(s).astype(np.float32)).to(dtype)) for s in SHAPES]
    kw = dict(kw)
    if lr_tensor:
        kw["lr"] = st.tensor(kw["lr"])
    opt = optim.SGD(ps, fused=fused, **kw)
    for k, step in enumerate(gs):
        for i, (p, g) in enumerate(zip(ps, step)):
            p.grad = None if (k == 2 and i == 1) else st.tensor(g).to(dtype)
        opt.step()
    return ps, opt


def run_torch(torch, kw, gs, dtype=None, fused=None):
    dtype = dtype or torch.float32
    rng = np.random.default_rng(0)
    ps = [torch.nn.Parameter(torch.from_numpy(rng.standard_normal(s).astype(np.float32)).to(dtype))
          for s in SHAPES]
    # fused None: the single-tensor path; False: foreach
    opt = torch.optim.SGD(ps, foreach=fused is False, fused=False, **kw)
    for k, step in enumerate(gs):
        for i, (p, g) in enumerate(zip(ps, step)):
            p.grad = None if (k == 2 and i == 1) else torch.from_numpy(g.copy()).to(dtype)
        opt.step()
    return ps, opt


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_fused_bit_equal_to_torch_single_tensor(kw):
    torch = pytest.importorskip("torch")
    gs = grads(6)
    a, oa = run_st(kw, None, gs)
    t, ot = run_torch(torch, kw, gs)
    for x, z in zip(a, t):
        assert x.dtype == st.float32 and tuple(x.shape) == tuple(z.shape)
        np.testing.assert_array_equal(npy(x), z.detach().numpy())
        if kw.get("momentum", 0):
            np.testing.assert_array_equal(npy(oa.state[x]["momentum_buffer"]),
                                          ot.state[z]["momentum_buffer"].numpy())
        else:
            assert "momentum_buffer" not in oa.state[x]


def test_fused_tensor_lr_bit_equal_to_torch():
    torch = pytest.importorskip("torch")
    kw = dict(lr=0.05, momentum=0.9, weight_decay=1e-3, nesterov=True)
    gs = grads(4)
    a, _ = run_st(kw, None, gs, lr_tensor=True)
    t, _ = run_torch(torch, dict(kw, lr=torch.tensor(0.05)), gs)
    for x, z in zip(a, t):
        np.testing.assert_array_equal(npy(x), z.detach().numpy())


def test_fused_expected_values_without_torch():
    # p = 1, g = 0.5, lr 0.1, momentum 0.9, wd 0.1: d = 0.6, b = 0.6, p = 0.94;
    # then g = 0.5: d = 0.594, b = 0.54 + 0.594 = 1.134, p = 0.94 - 0.1134
    p = nn.Parameter(st.ones(3))
    opt = optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1)
    for _ in range(2):
        p.grad = st.full((3,), 0.5)
        opt.step()
    np.testing.assert_allclose(npy(p), np.full(3, 0.94 - 0.1134, np.float32), rtol=1e-6)
    np.testing.assert_allclose(npy(opt.state[p]["momentum_buffer"]), np.full(3, 1.134), rtol=1e-6)


def test_first_buffer_is_a_new_tensor():
    p = nn.Parameter(st.ones(4))
    g = st.full((4,), 2.0)
    p.grad = g
    opt = optim.SGD([p], lr=0.5, momentum=0.9)
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    np.testing.assert_array_equal(npy(buf), np.full(4, 2.0))
    np.testing.assert_array_equal(npy(p), np.zeros(4))
    g.mul_(3)                      # the gradient changed later: the buffer is its clone
    np.testing.assert_array_equal(npy(buf), np.full(4, 2.0))


@pytest.mark.parametrize("kw", VARIANTS[:5])
def test_fused_float64_close_to_op_by_op(kw):
    gs = grads(6, dtype=np.float64)
    a, _ = run_st(kw, None, gs, st.float64)
    b, _ = run_st(kw, False, gs, st.float64)
    for x, y in zip(a, b):
        assert x.dtype == st.float64
        np.testing.assert_allclose(npy(x), npy(y), rtol=0, atol=1e-14)


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("kw", [VARIANTS[2], VARIANTS[3], VARIANTS[5]])
def test_half_types_close_to_torch_foreach(dt, kw):
    # float16/bfloat16 are updated in float32 and rounded once on store (as
    # Adam's fused path). torch 2.13's fused CPU SGD leaves these parameters'
    # vectorized part unchanged, so the reference is its foreach path, which
    # rounds after every op: a few ulp apart
    torch = pytest.importorskip("torch")
    gs = grads(5)
    a, oa = run_st(kw, None, gs, getattr(st, dt))
    t, ot = run_torch(torch, kw, gs, getattr(torch, dt), fused=False)
    ref, _ = run_st(kw, False, gs, st.float32)
    ulp = 2.0 ** -7 if dt == "bfloat16" else 2.0 ** -10
    err_st = err_torch = 0.0
    for x, z, r in zip(a, t, ref):
        assert x.dtype == getattr(st, dt)
        xs, zs, rs = npy(x.float()), z.detach().float().numpy(), npy(r)
        np.testing.assert_allclose(xs, zs, rtol=4 * ulp, atol=4 * ulp)
        np.testing.assert_allclose(xs, rs, rtol=4 * ulp, atol=4 * ulp)
        err_st += np.abs(xs - rs).sum()
        err_torch += np.abs(zs - rs).sum()
    assert err_st <= err_torch        # rounding once is nearer float32's trajectory


def test_one_kernel_per_variant_serves_every_size():
    gs = grads(3)
    run_st(VARIANTS[3], None, gs)
    parts = [v for k, v in _fused_sgd._CACHE.items()
             if k[0] == st.float32 and k[2:] == (False, True, True, False, True)]
    assert len(parts) == 1
    assert parts[0].compiled.num_kernels == 1
    assert parts[0].compiled.kernel_kinds == ["elementwise"]


def test_fused_false_and_non_contiguous_run_op_by_op():
    gs = grads(3)
    a, _ = run_st(VARIANTS[2], False, gs)
    b, _ = run_st(VARIANTS[2], None, gs)
    for x, y in zip(a, b):
        np.testing.assert_allclose(npy(x), npy(y), rtol=1e-5, atol=1e-6)
    # a non-contiguous gradient: op by op under fused=None, an error under fused=True
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    for fused in (None, True):
        p = nn.Parameter(st.ones(4, 3))
        p.grad = st.tensor(base).t()
        opt = optim.SGD([p], lr=0.5, momentum=0.9, fused=fused)
        if fused:
            with pytest.raises(RuntimeError, match="fused=True"):
                opt.step()
        else:
            opt.step()
            np.testing.assert_allclose(npy(p), 1 - 0.5 * base.T)


def test_state_dict_round_trip_keeps_the_buffer():
    gs = grads(4)
    a, oa = run_st(VARIANTS[3], None, gs[:2])
    sd = oa.state_dict()
    c, oc = run_st(VARIANTS[3], None, [])
    for x, y in zip(c, a):
        x.data.copy_(y.detach())
    oc.load_state_dict(sd)
    ref, _ = run_st(VARIANTS[3], None, gs)
    for k, step in enumerate(gs[2:], start=2):
        for i, (x, g) in enumerate(zip(c, step)):
            x.grad = None if (k == 2 and i == 1) else st.tensor(g)   # as run_st
        oc.step()
    for x, r in zip(c, ref):
        np.testing.assert_array_equal(npy(x), npy(r))


@pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")
def test_compiled_step_equals_eager():
    be = "llvm" if _C._fe_backend_available("llvm") else "interp"

    def train(compiled):
        st.manual_seed(0)
        m = nn.Linear(6, 3)
        opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)

        def step(x):
            opt.zero_grad()
            loss = (m(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        fn = st.compile(step, backend=be) if compiled else step
        x = st.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6))
        losses = [float(fn(x)) for _ in range(4)]
        return losses, [npy(p) for p in m.parameters()]

    le, pe = train(False)
    lc, pc = train(True)
    assert le[0] != le[-1]
    np.testing.assert_allclose(lc, le, rtol=1e-5)
    for x, y in zip(pc, pe):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
