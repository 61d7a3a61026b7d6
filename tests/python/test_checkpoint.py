# Activation checkpointing (symtrace/utils/checkpoint.py), against the same model run
# without checkpointing and against torch.utils.checkpoint (torch 2.13 in .venv; those
# tests skip without torch). Models are written once against a library argument `L`
# and built with torch's initial weights. Covered: MLP and TransformerEncoderLayer
# gradients (inputs and parameters; with dropout the masks must match thanks to
# preserve_rng_state), checkpoint_sequential, nested checkpoints, kwargs, non-tensor
# inputs and None outputs, torch's warnings and errors, the determinism check,
# context_fn, autocast, peak memory of a deep MLP, and a whole training step under
# symtrace.compile (equal to eager; the checkpoint call is inlined, no graph break).
import warnings

import numpy as np
import pytest

import symtrace as st
from symtrace.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

D_IN, D_H, BATCH = 8, 32, 6


def build_mlp(L, p=0.0, depth=3):
    nn = L.nn
    layers = [nn.Linear(D_IN, D_H), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(D_H, D_H), nn.Tanh(), nn.Dropout(p)]
    layers += [nn.Linear(D_H, 4)]
    return nn.Sequential(*layers)


def build_encoder(L, p=0.0):
    return L.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=p, batch_first=True)


def twins(build, torch, **kw):
    torch.manual_seed(0)
    tm = build(torch, **kw)
    sm = build(st, **kw)
    sm.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, sm


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def run(L, model, xn, how, seed=123, loss_w=None):
    """Loss and gradients (input first, then parameters) of one forward+backward."""
    for p in model.parameters():
        p.grad = None
    x = L.tensor(xn).requires_grad_(True)
    L.manual_seed(seed)
    ck = L.utils.checkpoint
    if how == "plain":
        y = model(x)
    elif how == "reentrant":
        y = ck.checkpoint(model, x, use_reentrant=True)
    elif how == "non_reentrant":
        y = ck.checkpoint(model, x, use_reentrant=False)
    elif how.startswith("sequential"):
        y = ck.checkpoint_sequential(model, int(how[-1]), x, use_reentrant=False)
    else:
        raise AssertionError(how)
    loss = (y * y).sum() if loss_w is None else (y * L.tensor(loss_w)).sum()
    loss.backward()
    grads = [x.grad.detach().numpy().copy()]
    grads += [p.grad.detach().numpy().copy() for p in model.parameters()]
    return float(loss.item()), grads


def assert_grads(a, b, tol):
    assert len(a) == len(b)
    for i, (p, q) in enumerate(zip(a, b)):
        assert p.shape == q.shape, i
        if tol == 0:
            assert np.array_equal(p, q), (i, float(np.abs(p - q).max()))
        else:
            np.testing.assert_allclose(p, q, rtol=tol, atol=tol, err_msg=str(i))


HOWS = ["reentrant", "non_reentrant", "sequential2", "sequential3"]


@pytest.mark.parametrize("how", HOWS)
def test_mlp_with_dropout_matches_uncheckpointed(how):
    st.manual_seed(0)
    m = build_mlp(st, p=0.3)
    xn = _x((BATCH, D_IN))
    l0, g0 = run(st, m, xn, "plain")
    end0 = st.get_rng_state().tolist()
    l1, g1 = run(st, m, xn, how)
    assert st.get_rng_state().tolist() == end0    # the recomputation leaves the generator as it was
    assert l1 == l0
    assert_grads(g1, g0, 0)                       # the same masks: exactly the same gradients
    assert all(np.abs(g).sum() > 0 for g in g1)


@pytest.mark.parametrize("how", HOWS)
def test_mlp_against_torch(torch, how):
    tm, sm = twins(build_mlp, torch)
    xn = _x((BATCH, D_IN), 1)
    tl, tg = run(torch, tm, xn, how)
    sl, sg = run(st, sm, xn, how)
    _, sg0 = run(st, sm, xn, "plain")
    assert_grads(sg, sg0, 1e-6)
    assert abs(sl - tl) <= 1e-4 * abs(tl)
    assert_grads(sg, tg, 1e-4)


@pytest.mark.parametrize("how", ["reentrant", "non_reentrant"])
def test_encoder_layer_against_torch(torch, how):
    tm, sm = twins(build_encoder, torch)
    xn = _x((2, 5, 16), 2)
    w = _x((2, 5, 16), 3)
    tl, tg = run(torch, tm, xn, how, loss_w=w)
    sl, sg = run(st, sm, xn, how, loss_w=w)
    _, sg0 = run(st, sm, xn, "plain", loss_w=w)
    assert_grads(sg, sg0, 1e-6)
    assert abs(sl - tl) <= 1e-4 * max(1.0, abs(tl))
    assert_grads(sg, tg, 1e-4)


@pytest.mark.parametrize("how", ["reentrant", "non_reentrant"])
def test_encoder_layer_with_dropout_matches_uncheckpointed(how):
    st.manual_seed(0)
    m = build_encoder(st, p=0.2)
    xn = _x((2, 5, 16), 4)
    w = _x((2, 5, 16), 5)
    l0, g0 = run(st, m, xn, "plain", loss_w=w)
    l1, g1 = run(st, m, xn, how, loss_w=w)
    assert abs(l1 - l0) <= 1e-6 * max(1.0, abs(l0))
    assert_grads(g1, g0, 1e-6)
    # the masks do matter: another seed gives other gradients
    _, g2 = run(st, m, xn, how, seed=124, loss_w=w)
    assert not np.allclose(g2[0], g0[0])


@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad")
def test_nested_checkpoint():
    nn = st.nn
    st.manual_seed(0)
    a, b, c = nn.Linear(D_IN, D_H), nn.Linear(D_H, D_H), nn.Linear(D_H, 4)
    drop = nn.Dropout(0.4)

    def inner(h):
        return drop(b(h)).tanh()

    def outer_ck(h, reentrant):
        h = a(h).relu()
        h = checkpoint(inner, h, use_reentrant=reentrant)
        return c(h)

    class M(nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.a, self.b, self.c, self.fn = a, b, c, fn

        def forward(self, x):
            return self.fn(x)

    xn = _x((BATCH, D_IN), 6)
    _, g0 = run(st, M(lambda x: c(inner(a(x).relu()))), xn, "plain")
    for reentrant in (True, False):
        m = M(lambda x: checkpoint(outer_ck, x, reentrant, use_reentrant=reentrant))
        _, g1 = run(st, m, xn, "plain")
        assert_grads(g1, g0, 0)


def test_parameters_accumulate_once_with_outer_use():
    # a parameter used inside and outside the checkpoint: both contributions, once each
    lin = st.nn.Linear(4, 4)
    xn = _x((3, 4), 7)

    def f(x, ck):
        h = checkpoint(lin, x, use_reentrant=False) if ck else lin(x)
        return (lin(h) ** 2).sum()

    grads = []
    for ck in (False, True):
        lin.weight.grad = None
        lin.bias.grad = st.ones(4)               # accumulates onto an existing .grad
        x = st.tensor(xn, requires_grad=True)
        f(x, ck).backward()
        grads.append((lin.weight.grad.numpy().copy(), lin.bias.grad.numpy().copy(),
                      x.grad.numpy().copy()))
    for p, q in zip(*grads):
        np.testing.assert_allclose(q, p, rtol=1e-6, atol=1e-6)


def test_non_reentrant_gives_parameter_grads_without_grad_inputs(torch):
    tm, sm = twins(build_mlp, torch)
    xn = _x((BATCH, D_IN), 8)
    outs = {}
    for L, m in ((torch, tm), (st, sm)):
        y = L.utils.checkpoint.checkpoint(m, L.tensor(xn), use_reentrant=False)
        assert y.requires_grad
        y.sum().backward()
        outs[L.__name__] = [p.grad.detach().numpy() for p in m.parameters()]
    for p, q in zip(outs["symtrace"], outs["torch"]):
        np.testing.assert_allclose(p, q, rtol=1e-4, atol=1e-5)


def test_reentrant_without_grad_inputs_warns_like_torch(torch):
    tm, sm = twins(build_mlp, torch)
    xn = _x((BATCH, D_IN), 9)
    for L, m in ((torch, tm), (st, sm)):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            y = L.utils.checkpoint.checkpoint(m, L.tensor(xn), use_reentrant=True)
        assert not y.requires_grad
        assert all(p.grad is None for p in m.parameters())


def test_use_reentrant_not_passed_warns_and_means_true():
    lin = st.nn.Linear(3, 3)
    x = st.randn(2, 3, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        y = checkpoint(lin, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            checkpoint(lambda a, scale: a * scale, x, scale=2.0)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant"):
        z = checkpoint_sequential([lin, lin], 2, x)
    (y.sum() + z.sum()).backward()
    assert x.grad is not None and lin.weight.grad is not None


def test_argument_errors_follow_torch():
    x = st.randn(2, 3, requires_grad=True)
    f = lambda a, k=1.0: a * k  # noqa: E731
    with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
        checkpoint(f, x, k=2.0, use_reentrant=True)
    with pytest.raises(ValueError, match="context_fn.*use_reentrant=False"):
        checkpoint(f, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="context_fn.*use_reentrant=False"):
        checkpoint(f, x, use_reentrant=True,
                   context_fn=lambda: (warnings.catch_warnings(), warnings.catch_warnings()))
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(f, x, use_reentrant=False, determinism_check="strict")
    with pytest.raises(TypeError, match="callable"):
        checkpoint(3, x, use_reentrant=False)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint_sequential([f], 1, x, use_reentrant=False, foo=1)
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential([f], 0, x, use_reentrant=False)


@pytest.mark.parametrize("reentrant", [True, False])
def test_non_tensor_inputs_tuple_and_none_outputs(reentrant):
    lin = st.nn.Linear(4, 4)

    def f(a, scale, flag, b):
        h = lin(a) * scale
        return (h, None, (b * h).sum(), a.shape[0]) if flag else h

    an, bn = _x((3, 4), 10), _x((3, 4), 11)
    grads = []
    for ck in (False, True):
        lin.weight.grad = None
        a, b = st.tensor(an, requires_grad=True), st.tensor(bn, requires_grad=True)
        out = checkpoint(f, a, 3.0, True, b, use_reentrant=reentrant) if ck else f(a, 3.0, True, b)
        assert isinstance(out, tuple) and out[1] is None and out[3] == 3
        (out[0].sum() + out[2]).backward()
        grads.append((a.grad.numpy().copy(), b.grad.numpy().copy(), lin.weight.grad.numpy().copy()))
    for p, q in zip(*grads):
        np.testing.assert_allclose(q, p, rtol=1e-6, atol=1e-6)


def test_inputs_that_do_not_require_grad_get_none():
    lin = st.nn.Linear(4, 4)
    a = st.randn(3, 4, requires_grad=True)
    b = st.randn(3, 4)
    y = checkpoint(lambda p, q: lin(p) + q, a, b, use_reentrant=True)
    y.sum().backward()
    assert a.grad is not None and b.grad is None


def test_kwargs_with_non_reentrant(torch):
    an, sn = _x((3, 4), 12), np.float32(1.5)
    res = {}
    for L in (torch, st):
        lin = L.nn.Linear(4, 4)
        with L.no_grad():
            lin.weight.copy_(L.tensor(_x((4, 4), 13)))
            lin.bias.zero_()
        a, s = L.tensor(an, requires_grad=True), L.tensor(sn, requires_grad=True)
        y = L.utils.checkpoint.checkpoint(lambda x, scale=None: lin(x) * scale, a, scale=s,
                                          use_reentrant=False)
        (y ** 2).sum().backward()
        res[L.__name__] = (a.grad.numpy(), s.grad.numpy(), lin.weight.grad.numpy())
    for p, q in zip(res["symtrace"], res["torch"]):
        np.testing.assert_allclose(p, q, rtol=1e-4, atol=1e-5)


def test_inplace_change_of_an_input_is_caught():
    lin = st.nn.Linear(4, 4)
    x = st.randn(3, 4, requires_grad=True)
    h = x * 2
    y = checkpoint(lin, h, use_reentrant=True)
    with st.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_determinism_check():
    # as torch's non-reentrant variant: the recomputed *saved* tensors are checked (a
    # function that saves nothing is never recomputed)
    calls = []

    def f(a):
        calls.append(1)
        return a[: len(calls)].exp()     # exp saves its output: another shape when recomputed

    x = st.randn(4, 3, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="Recomputed values for the following tensors "
                                              "have different metadata"):
        y.sum().backward()
    calls.clear()
    x = st.randn(4, 3, requires_grad=True)
    y = checkpoint(lambda a: (a * 2)[: 1 + len(calls)] if calls.append(1) is None else a, x,
                   use_reentrant=False, determinism_check="none")
    assert tuple(y.shape) == (2, 3)
    assert issubclass(CheckpointError, RuntimeError)


def test_context_fn_wraps_forward_and_recomputation():
    log = []

    class Ctx:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            log.append(("enter", self.name, st.is_grad_enabled()))

        def __exit__(self, *exc):
            log.append(("exit", self.name))

    lin = st.nn.Linear(3, 3)
    x = st.randn(2, 3, requires_grad=True)
    y = checkpoint(lin, x, use_reentrant=False, context_fn=lambda: (Ctx("fwd"), Ctx("re")))
    assert log == [("enter", "fwd", True), ("exit", "fwd")]     # the forward records (torch)
    y.sum().backward()
    assert log[2:] == [("enter", "re", True), ("exit", "re")]
    assert x.grad is not None


def test_under_no_grad_it_is_a_plain_call():
    lin = st.nn.Linear(3, 3)
    x = st.randn(2, 3, requires_grad=True)
    with st.no_grad():
        y = checkpoint(lin, x, use_reentrant=False)
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_allclose(y.numpy(), lin(x).detach().numpy(), rtol=1e-6)


def test_autocast_state_is_restored_for_the_recomputation():
    st.manual_seed(0)
    m = build_mlp(st)
    xn = _x((BATCH, D_IN), 14)
    res = []
    for ck in (False, True):
        for p in m.parameters():
            p.grad = None
        x = st.tensor(xn, requires_grad=True)
        with st.autocast("cpu", dtype=st.bfloat16):
            y = checkpoint(m, x, use_reentrant=False) if ck else m(x)
        assert y.dtype is st.bfloat16
        y.float().pow(2).sum().backward()
        res.append([x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()])
    assert_grads(res[1], res[0], 0)


def test_peak_memory_is_lower_with_checkpointing():
    nn = st.nn
    st.manual_seed(0)
    width, batch, depth = 64, 4096, 16
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    m = nn.Sequential(*layers)
    x = st.randn(batch, width, requires_grad=True)

    def peak(segments):
        for p in m.parameters():
            p.grad = None
        x.grad = None
        base = st.memory.memory_allocated()
        st.memory.reset_peak_stats()
        y = m(x) if segments is None else checkpoint_sequential(m, segments, x, use_reentrant=False)
        y.sum().backward()
        del y
        return st.memory.max_memory_allocated() - base

    act = batch * width * 4
    plain, ck4 = peak(None), peak(4)
    assert plain >= depth * act                  # every layer's activations were kept
    assert ck4 < 0.6 * plain, (plain, ck4)
    assert peak(None) == plain                   # nothing leaked in between


def test_compiled_training_step_equals_eager():
    nn = st.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(D_IN, D_H)
            self.block = nn.Sequential(nn.Linear(D_H, D_H), nn.GELU(), nn.Dropout(0.2),
                                       nn.Linear(D_H, D_H))
            self.out = nn.Linear(D_H, 1)

        def forward(self, x):
            h = self.inp(x).relu()
            h = h + checkpoint(self.block, h, use_reentrant=False)
            return self.out(h)

    def make():
        st.manual_seed(0)
        net = Net()
        opt = st.optim.SGD(net.parameters(), lr=0.05)

        def step(x, y):
            loss = ((net(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        return net, step

    rng = np.random.default_rng(0)
    data = [(st.tensor(rng.standard_normal((16, D_IN)).astype(np.float32)),
             st.tensor(rng.standard_normal((16, 1)).astype(np.float32))) for _ in range(4)]
    res = []
    for compiled in (False, True):
        st.reset()
        net, step = make()
        fn = st.compile(step) if compiled else step
        st.manual_seed(7)
        losses = [fn(x, y).item() for x, y in data]
        res.append((losses, [p.detach().numpy().copy() for p in net.parameters()],
                    st.get_rng_state().tolist()))
    assert res[1][0] == res[0][0]
    assert res[1][2] == res[0][2]
    assert_grads(res[1][1], res[0][1], 0)
    assert res[0][0][-1] != res[0][0][0]
    _, step = make()
    rep = st.explain(step, *data[0])
    reasons = [b.reason for b in rep.break_reasons]
    # checkpoint is inlined into the graph (tests/python/test_compile_checkpoint.py)
    assert not any("checkpoint" in r for r in reasons), str(rep)
