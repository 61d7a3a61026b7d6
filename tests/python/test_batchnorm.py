"""batch_norm and instance_norm (symtrace/nn/_batch_norm.py) and BatchNorm1d/2d,
InstanceNorm1d/2d (symtrace/nn/modules/batchnorm.py) against torch: values and the gradients
of input, weight and bias in training and eval; the running statistics after several steps
(momentum, momentum=None's cumulative average, num_batches_tracked); eval using them;
state_dict keys and loading a torch state_dict; reprs; errors as torch's. The tests without
torch also run on the venv without it (the running statistics' formulas checked in numpy)."""
import re
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as snn
import symtrace.nn.functional as SF

R = np.random.RandomState(0)


def rnd(*shape):
    return R.standard_normal(shape).astype(np.float32)


# ---------------- without torch ----------------
def test_running_stats_formulas_numpy():
    x = rnd(4, 3, 5, 6) * 2 + 1
    m = snn.BatchNorm2d(3, momentum=0.3)
    y = m(st.tensor(x))
    mean = x.mean((0, 2, 3))
    var = x.var((0, 2, 3))
    n = x.size // 3
    np.testing.assert_allclose(m.running_mean.numpy(), 0.3 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.running_var.numpy(), 0.7 + 0.3 * var * n / (n - 1), rtol=1e-5, atol=1e-6)
    ref = (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    assert int(m.num_batches_tracked.item()) == 1 and m.num_batches_tracked.dtype == st.int64
    m.eval()
    y = m(st.tensor(x))
    ref = (x - m.running_mean.numpy().reshape(1, 3, 1, 1)) / np.sqrt(m.running_var.numpy().reshape(1, 3, 1, 1)
                                                                      + 1e-5)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    assert int(m.num_batches_tracked.item()) == 1   # eval does not count


def test_cumulative_average_numpy():
    m = snn.BatchNorm1d(4, momentum=None)
    xs = [rnd(8, 4) + i for i in range(3)]
    for x in xs:
        m(st.tensor(x))
    np.testing.assert_allclose(m.running_mean.numpy(), np.mean([x.mean(0) for x in xs], 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.running_var.numpy(), np.mean([x.var(0, ddof=1) for x in xs], 0), rtol=1e-5,
                               atol=1e-6)
    assert int(m.num_batches_tracked.item()) == 3


def test_state_dict_keys_and_no_grad_on_buffers():
    m = snn.BatchNorm2d(5)
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    x = st.tensor(rnd(3, 5, 2, 2), requires_grad=True)
    m(x).sum().backward()
    assert not m.running_mean.requires_grad and m.running_mean.grad is None
    assert x.grad is not None and m.weight.grad is not None
    assert list(snn.BatchNorm1d(3, affine=False).state_dict()) == ["running_mean", "running_var",
                                                                   "num_batches_tracked"]
    assert list(snn.BatchNorm1d(3, track_running_stats=False).state_dict()) == ["weight", "bias"]
    assert list(snn.InstanceNorm2d(3).state_dict()) == []
    # a checkpoint without num_batches_tracked (torch's version 1) loads
    m.load_state_dict({k: v for k, v in m.state_dict().items() if k != "num_batches_tracked"})


def test_compiled_batch_norm_updates_running_stats_as_eager():
    xs = [rnd(4, 3, 5, 5) * (i + 1) + i for i in range(3)]
    res = []
    for compiled in (False, True):
        st.manual_seed(0)
        m = snn.Sequential(snn.BatchNorm2d(3, momentum=None), snn.BatchNorm2d(3, momentum=0.2, affine=False))
        f = st.compile(m) if compiled else m
        outs = [f(st.tensor(x)).detach().numpy() for x in xs]
        m.eval()
        outs.append(f(st.tensor(xs[0])).detach().numpy())
        res.append((outs, {k: v.numpy().copy() for k, v in m.state_dict().items()}))
    for a, b in zip(res[0][0], res[1][0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for k, v in res[0][1].items():
        np.testing.assert_allclose(res[1][1][k], v, rtol=1e-5, atol=1e-6, err_msg=k)
    assert int(res[1][1]["0.num_batches_tracked"]) == 3


def test_instance_norm_numpy():
    x = rnd(3, 4, 6, 5)
    rm, rv = np.zeros(4, np.float32), np.ones(4, np.float32)
    RM, RV = st.tensor(rm), st.tensor(rv)
    y = SF.instance_norm(st.tensor(x), RM, RV, momentum=0.4)
    mu, var = x.mean((2, 3), keepdims=True), x.var((2, 3), keepdims=True)
    np.testing.assert_allclose(y.numpy(), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(RM.numpy(), 0.4 * mu.mean(0).reshape(4), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(RV.numpy(), 0.6 + 0.4 * x.var((2, 3), ddof=1).mean(0), rtol=1e-5, atol=1e-6)


# ---------------- against torch ----------------
try:  # the 3.12 venv has no torch: the tests above run, the ones below skip
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _lib(L):
    return (snn, SF) if L is st else (torch.nn, TF)


def _weights(shape):
    return np.random.RandomState(5).uniform(-1, 1, shape).astype(np.float32)


def _run(L, fn, arrays, grad):
    ts = [None if a is None else L.tensor(a, requires_grad=(i in grad)) for i, a in enumerate(arrays)]
    out = fn(L, *ts)
    (out * L.tensor(_weights(tuple(out.shape)))).sum().backward()
    return out.detach().numpy(), [ts[i].grad.numpy() for i in grad], [None if t is None else t.detach().numpy()
                                                                       for t in ts]


def compare(fn, arrays, grad, rtol=1e-4, atol=1e-5):
    so, sg, sts = _run(st, fn, arrays, grad)
    to, tg, tts = _run(torch, fn, arrays, grad)
    np.testing.assert_allclose(so, to, rtol=rtol, atol=atol)
    for a, b in zip(sg, tg):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * 10)
    for a, b in zip(sts, tts):   # the running statistics, updated in place
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


BN = [
    # (name, input shape, training, weight?, bias?, running?, momentum)
    ("train_2d", (4, 3, 5, 6), True, True, True, True, 0.1),
    ("train_1d_3d", (4, 3, 7), True, True, True, True, 0.25),
    ("train_1d_2d", (8, 5), True, True, False, True, 0.1),
    ("train_no_running", (4, 3, 5, 6), True, True, True, False, 0.1),
    ("train_no_affine", (4, 3, 5, 6), True, False, False, True, 0.5),
    ("eval", (4, 3, 5, 6), False, True, True, True, 0.1),
    ("eval_no_affine", (6, 4), False, False, False, True, 0.1),
]


@needs_torch
@pytest.mark.parametrize("case", BN, ids=[c[0] for c in BN])
def test_batch_norm_functional(case):
    _, shape, training, w, b, running, momentum = case
    c = shape[1]
    x = rnd(*shape) * 1.5 + 0.5
    arrays = [x, rnd(c) if running else None, (np.abs(rnd(c)) + 0.5) if running else None,
              rnd(c) if w else None, rnd(c) if b else None]
    grad = (0,) + ((3,) if w else ()) + ((4,) if b else ())
    compare(lambda L, x, rm, rv, w, b: _lib(L)[1].batch_norm(x, rm, rv, w, b, training, momentum, 1e-3),
            arrays, grad)


@needs_torch
def test_torch_level_batch_and_instance_norm():
    x, w, b, rm, rv = rnd(4, 3, 5), rnd(3), rnd(3), rnd(3), np.abs(rnd(3)) + 0.5
    compare(lambda L, x, w, b, rm, rv: L.batch_norm(x, w, b, rm, rv, True, 0.2, 1e-5, False), [x, w, b, rm, rv],
            (0, 1, 2))
    compare(lambda L, x, w, b, rm, rv: L.batch_norm(x, w, b, rm, rv, False, 0.2, 1e-5, False), [x, w, b, rm, rv],
            (0, 1, 2))
    compare(lambda L, x, w, b, rm, rv: L.instance_norm(x, w, b, rm, rv, True, 0.2, 1e-5, False),
            [x, w, b, rm, rv], (0, 1, 2))


IN = [
    ("plain", (4, 3, 5, 6), False, False, True),
    ("affine", (4, 3, 5, 6), True, False, True),
    ("running", (4, 3, 7), True, True, True),
    ("use_running", (4, 3, 7), True, True, False),
]


@needs_torch
@pytest.mark.parametrize("case", IN, ids=[c[0] for c in IN])
def test_instance_norm_functional(case):
    _, shape, affine, running, use_input_stats = case
    c = shape[1]
    x = rnd(*shape) * 2 - 1
    arrays = [x, rnd(c) if running else None, (np.abs(rnd(c)) + 0.5) if running else None,
              rnd(c) if affine else None, rnd(c) if affine else None]
    grad = (0,) + ((3, 4) if affine else ())
    compare(lambda L, x, rm, rv, w, b: _lib(L)[1].instance_norm(x, rm, rv, w, b, use_input_stats, 0.3, 1e-5),
            arrays, grad)


MODULES = [
    ("BatchNorm2d(3)", (4, 3, 5, 5)),
    ("BatchNorm2d(3, momentum=None)", (4, 3, 5, 5)),
    ("BatchNorm2d(3, eps=1e-3, momentum=0.3, affine=False)", (4, 3, 5, 5)),
    ("BatchNorm2d(3, track_running_stats=False)", (4, 3, 5, 5)),
    ("BatchNorm2d(3, bias=False)", (4, 3, 5, 5)),
    ("BatchNorm1d(4)", (6, 4)),
    ("BatchNorm1d(4, momentum=None)", (6, 4, 3)),
    ("InstanceNorm1d(3)", (4, 3, 7)),
    ("InstanceNorm1d(3, affine=True, track_running_stats=True)", (4, 3, 7)),
    ("InstanceNorm2d(3, momentum=0.2, track_running_stats=True)", (4, 3, 5, 6)),
    ("InstanceNorm2d(3, affine=True)", (3, 5, 6)),
]


@needs_torch
@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_module_steps_as_torch(case):
    expr, shape = case
    sm, tm = eval("snn." + expr), eval("torch.nn." + expr)
    assert repr(sm) == repr(tm)
    assert list(sm.state_dict()) == list(tm.state_dict())
    rs = np.random.RandomState(1)
    for p in tm.parameters():   # non-trivial affine parameters
        with torch.no_grad():
            p.copy_(torch.tensor(rs.randn(*p.shape).astype(np.float32)))
    sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    for step in range(4):
        x = (rs.randn(*shape) * (step + 1) + step).astype(np.float32)
        for m in (sm, tm):
            m.zero_grad()
        so, sg, _ = _run(st, lambda L, x: sm(x), [x], (0,))
        to, tg, _ = _run(torch, lambda L, x: tm(x), [x], (0,))
        np.testing.assert_allclose(so, to, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(sg[0], tg[0], rtol=1e-4, atol=1e-4)
        for (n, p), (_, tp) in zip(sm.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=n)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(sm.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-5, err_msg=k)
    sm.eval()
    tm.eval()
    x = rs.randn(*shape).astype(np.float32)
    so, sg, _ = _run(st, lambda L, x: sm(x), [x], (0,))
    to, tg, _ = _run(torch, lambda L, x: tm(x), [x], (0,))
    np.testing.assert_allclose(so, to, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(sg[0], tg[0], rtol=1e-4, atol=1e-4)


@needs_torch
def test_load_trained_torch_state_dict_then_eval():
    tm = torch.nn.BatchNorm2d(4)
    for _ in range(3):
        tm(torch.randn(5, 4, 3, 3) * 3 + 1)
    sm = snn.BatchNorm2d(4)
    r = sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    assert list(r.missing_keys) == [] and list(r.unexpected_keys) == []
    assert int(sm.num_batches_tracked.item()) == 3
    sm.eval()
    tm.eval()
    x = rnd(2, 4, 3, 3)
    np.testing.assert_allclose(sm(st.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


def _no_size(msg):
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)",
                  lambda m: repr(tuple(int(v) for v in m.group(1).split(",") if v.strip())), msg)


X = (2, 4, 10, 10)
ERRORS = [
    ("running_mean", lambda F, n, T: F.batch_norm(T(X), T((3,)), T((4,)))),
    ("running_var", lambda F, n, T: F.batch_norm(T(X), T((4,)), T((3,)))),
    ("weight", lambda F, n, T: F.batch_norm(T(X), T((4,)), T((4,)), T((3,)))),
    ("bias", lambda F, n, T: F.batch_norm(T(X), T((4,)), T((4,)), None, T((3,)))),
    ("eval_no_running", lambda F, n, T: F.batch_norm(T(X), None, None)),
    ("eval_no_var", lambda F, n, T: F.batch_norm(T(X), T((4,)), None)),
    ("half_running", lambda F, n, T: F.batch_norm(T(X), None, T((4,)), training=True)),
    ("one_value", lambda F, n, T: F.batch_norm(T((1, 4)), None, None, training=True)),
    ("one_value_4d", lambda F, n, T: F.batch_norm(T((1, 4, 1, 1)), None, None, training=True)),
    ("eps0", lambda F, n, T: F.batch_norm(T(X), None, None, training=True, eps=0)),
    ("eps_neg", lambda F, n, T: F.batch_norm(T(X), T((4,)), T((4,)), eps=-1)),
    ("momentum_none", lambda F, n, T: F.batch_norm(T(X), T((4,)), T((4,)), training=True, momentum=None)),
    ("in_spatial", lambda F, n, T: F.instance_norm(T((2, 4, 1, 1)))),
    ("in_running", lambda F, n, T: F.instance_norm(T(X), T((3,)), T((3,)))),
    ("in_weight", lambda F, n, T: F.instance_norm(T(X), weight=T((3,)))),
    ("in_no_stats", lambda F, n, T: F.instance_norm(T(X), use_input_stats=False)),
    ("bn2d_dims", lambda F, n, T: n.BatchNorm2d(4)(T((2, 4, 3)))),
    ("bn2d_channels", lambda F, n, T: n.BatchNorm2d(4)(T((2, 3, 3, 3)))),
    ("bn1d_dims", lambda F, n, T: n.BatchNorm1d(4)(T((2, 4, 3, 3)))),
    ("bn1d_one", lambda F, n, T: n.BatchNorm1d(4)(T((1, 4)))),
    ("in1d_dims", lambda F, n, T: n.InstanceNorm1d(4)(T((2, 4, 3, 3)))),
    ("in2d_dims", lambda F, n, T: n.InstanceNorm2d(4)(T((4, 3)))),
    ("in2d_affine_channels", lambda F, n, T: n.InstanceNorm2d(4, affine=True)(T((2, 3, 3, 3)))),
]


def _outcome(lib, F, n, fn):
    def T(shape):
        return lib.zeros(*shape)
    try:
        fn(F, n, T)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, _no_size(str(e).split("\n")[0])
    return None


@needs_torch
@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_torch(case):
    _, fn = case
    want = _outcome(torch, TF, torch.nn, fn)
    assert want is not None, "torch accepts this call"
    assert _outcome(st, SF, snn, fn) == want


@needs_torch
def test_instance_norm_channel_mismatch_warns_as_torch():
    res = []
    for lib, n in ((st, snn), (torch, torch.nn)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            n.InstanceNorm2d(4)(lib.zeros(2, 3, 3, 3))
        res.append([str(m.message) for m in w])
    assert res[0] == res[1] and len(res[0]) == 1
