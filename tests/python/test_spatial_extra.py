"""The spatial layers added over symtrace/nn/_conv.py's im2col pooling: max/avg/adaptive pooling
in 3-d, lp_pool1d/2d/3d, max_unpool1d/2d/3d (with the indices max_pool returns), local_response_norm,
channel_shuffle, Softmax2d, BatchNorm3d/InstanceNorm3d and the padding layers (Constant/Zero/
Reflection/Replication/CircularPad1d/2d/3d). Against torch: values, shapes, dtypes and the
gradients of a random-weighted sum over tables of configurations (strides, padding, dilation,
ceil_mode, non-cubic kernels, unbatched inputs), the modules' reprs and state_dicts, and a table
of bad calls (exception type and message). Without torch: numpy references, and a small 3-d CNN
trained under symtrace.compile against eager."""
import re

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as snn
import symtrace.nn.functional as SF

try:  # the 3.12 venv has no torch: the numpy-referenced and compile tests run, the rest skip
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

R = np.random.RandomState(0)


def rnd(*shape, dtype=np.float64):
    return R.standard_normal(shape).astype(dtype)


def _to_np(r):
    return r.detach().numpy() if hasattr(r, "detach") else np.asarray(r)


def _run(L, fn, arrays, grad):
    F = SF if L is st else TF
    ts = [L.tensor(a, requires_grad=(i in grad)) for i, a in enumerate(arrays)]
    r = fn(F, *ts)
    outs = list(r) if isinstance(r, (tuple, list)) else [r]
    grads = []
    if grad:
        f = outs[0]
        w = np.random.RandomState(7).uniform(-1, 1, tuple(f.shape)).astype(_to_np(f).dtype)
        (f * L.tensor(w)).sum().backward()
        grads = [None if ts[i].grad is None else ts[i].grad.numpy().copy() for i in grad]
    return outs, grads


def compare(fn, *arrays, grad=(0,), rtol=None, atol=None):
    """fn(F, *tensors) in symtrace and torch: the outputs (values, shapes, dtypes) and the
    gradients of the inputs in grad agree (float64 tightly, float32 to 1e-5)."""
    f64 = all(a.dtype != np.float32 for a in arrays)
    rtol = rtol if rtol is not None else (1e-10 if f64 else 1e-5)
    atol = atol if atol is not None else (1e-10 if f64 else 1e-5)
    so, sg = _run(st, fn, arrays, grad)
    to, tg = _run(torch, fn, arrays, grad)
    assert len(so) == len(to)
    for a, b in zip(so, to):
        assert tuple(a.shape) == tuple(b.shape), (tuple(a.shape), tuple(b.shape))
        a, b = _to_np(a), _to_np(b)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    assert len(sg) == len(tg)
    for a, b in zip(sg, tg):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return so


X5 = rnd(2, 3, 6, 7, 5)          # [N, C, D, H, W]
X4 = rnd(3, 5, 6, 7)             # [N, C, H, W] / an unbatched [C, D, H, W]
X3 = rnd(2, 4, 9)                # [N, C, L]

# ---------------- 3-d pooling ----------------
POOL3D = [
    ("max", lambda F, x: F.max_pool3d(x, 2)),
    ("max_stride_pad", lambda F, x: F.max_pool3d(x, 3, stride=2, padding=1)),
    ("max_noncubic", lambda F, x: F.max_pool3d(x, (2, 3, 1), stride=(1, 2, 2), padding=(1, 1, 0))),
    ("max_dilation", lambda F, x: F.max_pool3d(x, (2, 2, 3), stride=1, padding=(0, 1, 1), dilation=(2, 3, 1))),
    ("max_ceil", lambda F, x: F.max_pool3d(x, 2, stride=2, ceil_mode=True)),
    ("max_ceil_pad", lambda F, x: F.max_pool3d(x, 3, stride=2, padding=1, ceil_mode=True)),
    ("max_indices", lambda F, x: F.max_pool3d(x, (3, 2, 2), (2, 1, 2), 1, return_indices=True)),
    ("max_with_indices", lambda F, x: F.max_pool3d_with_indices(x, 2, 1, dilation=2, ceil_mode=True)),
    ("max_unbatched", lambda F, x: F.max_pool3d(x[0], 2, 1, 1, return_indices=True)),
    ("max_stride_list", lambda F, x: F.max_pool3d(x, [2], [], [0, 1, 0])),
    ("avg", lambda F, x: F.avg_pool3d(x, 2)),
    ("avg_stride_pad", lambda F, x: F.avg_pool3d(x, 3, 2, 1)),
    ("avg_no_pad_count", lambda F, x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False)),
    ("avg_ceil", lambda F, x: F.avg_pool3d(x, (2, 3, 2), (2, 2, 2), (1, 1, 0), ceil_mode=True)),
    ("avg_ceil_no_pad_count", lambda F, x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ("avg_divisor", lambda F, x: F.avg_pool3d(x, (2, 3, 2), 1, (1, 0, 1), divisor_override=5)),
    ("avg_unbatched", lambda F, x: F.avg_pool3d(x[1], (3, 2, 2), (1, 2, 1), ceil_mode=True)),
    ("aavg", lambda F, x: F.adaptive_avg_pool3d(x, (3, 4, 2))),
    ("aavg_divisible", lambda F, x: F.adaptive_avg_pool3d(x, (3, 7, 1))),
    ("aavg_none", lambda F, x: F.adaptive_avg_pool3d(x, (None, 4, None))),
    ("aavg_int_unbatched", lambda F, x: F.adaptive_avg_pool3d(x[0], 4)),
    ("amax", lambda F, x: F.adaptive_max_pool3d(x, (4, 3, 2))),
    ("amax_indices", lambda F, x: F.adaptive_max_pool3d(x, (4, 5, 3), return_indices=True)),
    ("amax_with_indices_unbatched", lambda F, x: F.adaptive_max_pool3d_with_indices(x[1], (None, 2, 4))),
]


@needs_torch
@pytest.mark.parametrize("case", POOL3D, ids=[c[0] for c in POOL3D])
def test_pool3d_as_torch(case):
    compare(case[1], X5)


@needs_torch
def test_adaptive_pool3d_empty_output():
    # torch's backward refuses an empty output; the forward (empty, in x's graph) is the same
    compare(lambda F, x: F.adaptive_avg_pool3d(x, (0, 2, 2)), X5, grad=())
    compare(lambda F, x: F.adaptive_max_pool3d(x, (2, 0, 1), return_indices=True), X5, grad=())
    x = st.tensor(X5, requires_grad=True)
    y = SF.adaptive_avg_pool3d(x, (0, 2, 2))
    assert y.requires_grad == torch.nn.functional.adaptive_avg_pool3d(torch.tensor(X5, requires_grad=True),
                                                                      (0, 2, 2)).requires_grad
    (y.sum() + SF.adaptive_max_pool3d(x, (2, 0, 1)).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(X5))


@needs_torch
def test_pool3d_float32_integer_and_ties():
    x = X5.astype(np.float32)
    compare(lambda F, a: F.max_pool3d(a, 3, 2, 1, return_indices=True), x)
    compare(lambda F, a: F.avg_pool3d(a, 3, 2, 1, ceil_mode=True), x)
    compare(lambda F, a: F.adaptive_max_pool3d(a, 3, True), x)
    ints = R.randint(-9, 9, (2, 2, 5, 4, 6)).astype(np.int64)   # avg of int64: torch's truncated division
    compare(lambda F, a: F.avg_pool3d(a, 2, 1, 1), ints, grad=())
    compare(lambda F, a: F.avg_pool3d(a, 3, 2, 1, divisor_override=4), ints, grad=())
    compare(lambda F, a: F.max_pool3d(a, 2, return_indices=True), ints, grad=())
    compare(lambda F, a: F.max_pool3d(a, 2, 1, return_indices=True), ints.astype(np.int32), grad=())
    ties = np.round(X5 * 1.5)                               # equal values: the first maximum wins
    compare(lambda F, a: F.max_pool3d(a, 3, 1, 1, return_indices=True), ties)


# ---------------- lp pooling ----------------
LP = [
    (1, 2, 3, None, False), (1, 3.0, 2, 1, True), (1, 1.5, 4, 2, False), (1, float("inf"), 3, 2, True),
    (2, 2, 2, None, False), (2, 3, (2, 3), (1, 2), True), (2, 1.5, 3, 2, True), (2, -float("inf"), 2, 1, False),
    (3, 2, 2, None, False), (3, 4.0, (2, 3, 2), (1, 2, 2), True), (3, float("inf"), 3, 2, False),
]


@needs_torch
@pytest.mark.parametrize("k,p,kernel,stride,ceil", LP)
def test_lp_pool_as_torch(k, p, kernel, stride, ceil):
    x = {1: X3, 2: X4, 3: X5}[k]
    if p == 1.5:
        x = np.abs(x)    # a fractional power of a negative value is nan
    fn = f"lp_pool{k}d"

    def f(F, a):
        return getattr(F, fn)(a, p, kernel, stride, ceil)
    compare(f, x)
    compare(lambda F, a: getattr(F, fn)(a[0], p, kernel, stride, ceil), x)     # unbatched


@needs_torch
def test_lp_pool_zero_windows_have_zero_gradient():
    # sign(out) * relu(|out|): where a window's sum of powers is 0 the gradient is 0, not nan
    x = np.zeros((1, 2, 4, 6))
    x[0, 0, 0, 0] = 2.0
    x[0, 1, 2:, 3:] = 1.5
    for p in (2, 3.0):
        out = compare(lambda F, a: F.lp_pool2d(a, p, 2), x)
        assert np.isfinite(_to_np(out[0])).all()
    compare(lambda F, a: F.lp_pool3d(a, 2, (1, 2, 2)), x[None])


# ---------------- max unpooling ----------------
UNPOOL = [
    (1, dict(kernel_size=2), {}),
    (1, dict(kernel_size=3, stride=2, padding=1), dict(output_size=[9])),
    (1, dict(kernel_size=3, stride=1, padding=1), {}),                # overlapping windows: repeated indices
    (2, dict(kernel_size=2), dict(output_size=(6, 7))),
    (2, dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)), dict(output_size=(6, 7))),
    (2, dict(kernel_size=3, stride=2, padding=1), dict(output_size=(3, 5, 6, 7))),
    (3, dict(kernel_size=2), dict(output_size=(6, 7, 5))),
    (3, dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0)), dict(output_size=(6, 7, 5))),
    (3, dict(kernel_size=3, stride=2, padding=1), dict(output_size=[2, 3, 6, 7, 5])),
]


@needs_torch
@pytest.mark.parametrize("k,pool,extra", UNPOOL)
@pytest.mark.parametrize("batched", [True, False])
def test_max_unpool_of_max_pool_as_torch(k, pool, extra, batched):
    x = {1: X3, 2: X4, 3: X5}[k]
    if not batched:
        x = x[0]
        if "output_size" in extra and len(extra["output_size"]) == k + 2:
            extra = dict(output_size=extra["output_size"][2:])

    def f(F, a):
        y, idx = getattr(F, f"max_pool{k}d")(a, return_indices=True, **pool)
        return getattr(F, f"max_unpool{k}d")(y * 2.0, idx, **pool, **extra)
    compare(f, x)


@needs_torch
@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_unpool_modules_and_given_indices(k):
    shape = {1: (2, 3, 4), 2: (2, 3, 3, 4), 3: (2, 2, 2, 3, 2)}[k]
    v = rnd(*shape)
    plane = int(np.prod(shape[2:])) * 2 ** k
    idx = R.randint(0, plane, shape).astype(np.int64)
    idx.reshape(-1)[1] = idx.reshape(-1)[0]                 # a repeated index: the last value wins (CPU order)
    res = []
    for L, nn in ((st, snn), (torch, torch.nn)):
        m = getattr(nn, f"MaxUnpool{k}d")(2)
        res.append((repr(m), m.kernel_size, m.stride, m.padding))
        tv = L.tensor(v, requires_grad=True)
        y = m(tv, L.tensor(idx))
        w = np.random.RandomState(2).randn(*tuple(y.shape))
        (y * L.tensor(w)).sum().backward()
        res.append((y.detach().numpy(), tv.grad.numpy()))
    assert res[0] == res[2]
    np.testing.assert_array_equal(res[1][0], res[3][0])
    np.testing.assert_array_equal(res[1][1], res[3][1])


def test_max_unpool_inverts_max_pool_without_torch():
    # the pooled values return to the positions of the maxima; zeros elsewhere
    x = rnd(2, 3, 4, 6)
    y, idx = SF.max_pool2d(st.tensor(x), 2, return_indices=True)
    u = SF.max_unpool2d(y, idx, 2).numpy()
    blocks = x.reshape(2, 3, 2, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 2, 3, 4)
    ref = np.zeros_like(x)
    am = blocks.argmax(-1)
    for n, c, i, j in np.ndindex(2, 3, 2, 3):
        a, b = divmod(am[n, c, i, j], 2)
        ref[n, c, 2 * i + a, 2 * j + b] = blocks[n, c, i, j].max()
    np.testing.assert_array_equal(u, ref)
    # an index outside the output raises (eagerly, as torch)
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 24 \(output volumes are of size 4x6\)"):
        SF.max_unpool2d(y, idx + 24 - idx.reshape(-1)[-1], 2)


# ---------------- local response norm, channel shuffle, Softmax2d ----------------
@needs_torch
@pytest.mark.parametrize("shape,size,kw", [((2, 5, 7), 3, {}), ((2, 6, 4, 5), 2, dict(alpha=1e-2, beta=0.5, k=2.0)),
                                           ((2, 7, 3, 4, 2), 4, dict(alpha=0.1)), ((1, 3, 2, 2, 2, 2), 5, {})])
def test_local_response_norm_as_torch(shape, size, kw):
    compare(lambda F, a: F.local_response_norm(a, size, **kw), rnd(*shape))
    x = rnd(*shape).astype(np.float32)
    compare(lambda F, a: (snn if F is SF else torch.nn).LocalResponseNorm(size, **kw)(a), x)


@needs_torch
@pytest.mark.parametrize("shape,groups", [((2, 6, 4, 5), 3), ((2, 6, 4), 2), ((1, 8, 2, 2, 3), 4), ((3, 4, 2), 1),
                                          ((2, 4, 3), 4), ((0, 6, 2), 3)])
def test_channel_shuffle_as_torch(shape, groups):
    x = rnd(*shape)
    compare(lambda F, a: F.channel_shuffle(a, groups), x)
    compare(lambda F, a: (snn if F is SF else torch.nn).ChannelShuffle(groups)(a), x)
    compare(lambda F, a: F.native_channel_shuffle(a, groups), x, grad=())   # torch has no gradient for it
    ints = R.randint(0, 9, shape).astype(np.int64)
    compare(lambda F, a: F.channel_shuffle(a, groups), ints, grad=())
    t = st.tensor(x)
    r = SF.channel_shuffle(t, groups)
    assert t.numel() == 0 or r.data_ptr() != t.data_ptr()     # a new tensor, as torch's, even for groups 1


@needs_torch
def test_softmax2d_as_torch():
    for x in (rnd(2, 4, 3, 5), rnd(4, 3, 5)):
        compare(lambda F, a: (snn if F is SF else torch.nn).Softmax2d()(a), x)


# ---------------- BatchNorm3d, InstanceNorm3d ----------------
NORM3D = [("BatchNorm3d", dict()), ("BatchNorm3d", dict(momentum=None)), ("BatchNorm3d", dict(affine=False)),
          ("BatchNorm3d", dict(track_running_stats=False)), ("InstanceNorm3d", dict()),
          ("InstanceNorm3d", dict(affine=True, track_running_stats=True)), ("InstanceNorm3d", dict(affine=True))]


@needs_torch
@pytest.mark.parametrize("name,kw", NORM3D)
def test_norm3d_modules_as_torch(name, kw):
    tm = getattr(torch.nn, name)(3, **kw).double()
    sm = getattr(snn, name)(3, dtype=st.float64, **kw)
    assert repr(sm) == repr(tm)
    assert list(sm.state_dict()) == list(tm.state_dict())
    rs = np.random.RandomState(5)
    if tm.affine:
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(rs.rand(3) + 0.5))
            tm.bias.copy_(torch.tensor(rs.randn(3)))
    sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    inputs = [rnd(2, 3, 4, 3, 5), rnd(2, 3, 2, 4, 3) * 3 + 1]
    if name == "InstanceNorm3d":
        inputs.append(rnd(3, 2, 3, 4))            # unbatched
    for mode in ("train", "eval"):
        getattr(tm, mode)()
        getattr(sm, mode)()
        for x in inputs:
            outs = []
            for L, m in ((st, sm), (torch, tm)):
                m.zero_grad()
                tx = L.tensor(x, requires_grad=True)
                y = m(tx)
                (y * y * L.tensor(np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape)))).sum().backward()
                outs.append([y.detach().numpy(), tx.grad.numpy()]
                            + [p.grad.numpy() for p in m.parameters()])
            for a, b in zip(*outs):
                np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    for k, v in tm.state_dict().items():       # running statistics updated as torch's
        np.testing.assert_allclose(sm.state_dict()[k].numpy(), v.numpy(), rtol=1e-12, atol=1e-12, err_msg=k)


@needs_torch
def test_norm3d_dimension_checks_as_torch():
    for name, shape in (("BatchNorm3d", (3, 2, 2, 2)), ("InstanceNorm3d", (3, 2, 2)),
                        ("InstanceNorm3d", (2, 3, 2, 2, 2, 2))):
        with pytest.raises(ValueError) as want:
            getattr(torch.nn, name)(3)(torch.zeros(*shape))
        with pytest.raises(ValueError, match=re.escape(str(want.value))):
            getattr(snn, name)(3)(st.zeros(*shape))
    compare(lambda F, a: F.batch_norm(a, None, None, training=True), X5)
    compare(lambda F, a: F.instance_norm(a), X5)


# ---------------- padding layers ----------------
PADS = [
    ("ConstantPad1d", (2, 1.5), (2, 3, 5)), ("ConstantPad1d", ((3, -1), -2.0), (3, 5)),
    ("ConstantPad2d", (1, 0.5), (2, 3, 4, 5)), ("ConstantPad2d", ((1, 0, 2, -1), 3.0), (3, 4, 5)),
    ("ConstantPad3d", (1, -1.0), (2, 2, 3, 4, 2)), ("ConstantPad3d", ((1, 0, 0, 2, 1, 1), 0.0), (2, 3, 4, 2)),
    ("ZeroPad1d", (2,), (2, 3, 5)), ("ZeroPad2d", ((0, 1, 2, 0),), (3, 4, 5)), ("ZeroPad3d", (1,), (2, 3, 4, 2)),
    ("ReflectionPad1d", (2,), (2, 3, 5)), ("ReflectionPad1d", ((3, 1),), (3, 5)),
    ("ReflectionPad2d", (2,), (2, 3, 4, 5)), ("ReflectionPad2d", ((1, 0, 3, 2),), (3, 4, 5)),
    ("ReflectionPad3d", (1,), (2, 2, 3, 4, 2)), ("ReflectionPad3d", ((1, 0, 2, 1, 1, 2),), (2, 3, 4, 3)),
    ("ReplicationPad1d", (3,), (2, 3, 5)), ("ReplicationPad1d", ((0, 4),), (3, 5)),
    ("ReplicationPad2d", (2,), (2, 3, 4, 5)), ("ReplicationPad2d", ((3, 0, 1, 5),), (3, 4, 5)),
    ("ReplicationPad3d", (2,), (2, 2, 3, 4, 2)), ("ReplicationPad3d", ((1, 3, 0, 1, 2, 0),), (2, 3, 4, 3)),
    ("CircularPad1d", (2,), (2, 3, 5)), ("CircularPad1d", ((3, -1),), (3, 5)),
    ("CircularPad2d", (1,), (2, 3, 4, 5)), ("CircularPad2d", ((1, 0, 3, 2),), (3, 4, 5)),
    ("CircularPad3d", (1,), (2, 2, 3, 4, 2)), ("CircularPad3d", ((1, 0, 2, 1, 0, 2),), (2, 3, 4, 3)),
]


@needs_torch
@pytest.mark.parametrize("name,args,shape", PADS, ids=[f"{p[0]}-{i}" for i, p in enumerate(PADS)])
def test_padding_modules_as_torch(name, args, shape):
    sm, tm = getattr(snn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(sm) == repr(tm)
    assert sm.padding == tm.padding and isinstance(sm.padding, tuple)
    if hasattr(tm, "value"):
        assert sm.value == tm.value
    compare(lambda F, a: (sm if F is SF else tm)(a), rnd(*shape))


PAD_ERRORS = [
    ("CircularPad1d", (1,), (5,)), ("CircularPad2d", (1,), (2, 3, 4, 5, 6)), ("CircularPad3d", (1,), (3, 4, 5)),
    ("ReflectionPad1d", (5,), (2, 3, 5)), ("ReflectionPad2d", (1,), (4, 5)), ("ReflectionPad3d", (1,), (2, 3, 4)),
    ("ReplicationPad2d", ((1, 2),), (2, 3, 4, 5)), ("ReplicationPad1d", (1,), (2, 0, 5)),
    ("ConstantPad2d", ((1, 2, 3),), (2, 3, 4)), ("ConstantPad3d", (1,), (2, 3)),
    ("CircularPad1d", (6,), (2, 3, 5)),
]


@needs_torch
@pytest.mark.parametrize("name,args,shape", PAD_ERRORS, ids=[f"{p[0]}-{i}" for i, p in enumerate(PAD_ERRORS)])
def test_padding_module_errors_as_torch(name, args, shape):
    outcome = []
    for L, nn in ((st, snn), (torch, torch.nn)):
        try:
            getattr(nn, name)(*args)(L.zeros(*shape))
            outcome.append(None)
        except Exception as e:  # noqa: BLE001
            outcome.append((type(e).__name__, str(e)))
    assert outcome[1] is not None, "torch accepts this call"
    assert outcome[0] == outcome[1]


# ---------------- modules: attributes and reprs ----------------
MODULES = [
    "MaxPool3d(2)", "MaxPool3d((2, 3, 1), stride=(1, 2, 2), padding=1, dilation=2, return_indices=True, "
    "ceil_mode=True)", "AvgPool3d(3)", "AvgPool3d((1, 2, 3), 2, 1, True, False, 3)", "AdaptiveAvgPool3d((2, None, 3))",
    "AdaptiveMaxPool3d(2, return_indices=True)", "LPPool1d(2, 3)", "LPPool2d(1.5, (2, 3), 1, True)",
    "LPPool3d(3, 2)", "MaxUnpool1d(2)", "MaxUnpool2d((2, 3), 1, (1, 0))", "MaxUnpool3d(3, (1, 2, 3), 1)",
    "LocalResponseNorm(3)", "LocalResponseNorm(2, 0.1, 0.5, 2.0)", "ChannelShuffle(3)", "Softmax2d()",
]


@needs_torch
@pytest.mark.parametrize("expr", MODULES)
def test_module_attributes_and_repr_as_torch(expr):
    sm, tm = eval("snn." + expr), eval("torch.nn." + expr)
    assert repr(sm) == repr(tm)
    assert list(sm.state_dict()) == list(tm.state_dict()) == []
    for attr in ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices", "output_size",
                 "count_include_pad", "divisor_override", "norm_type", "size", "alpha", "beta", "k", "groups"):
        assert getattr(sm, attr, None) == getattr(tm, attr, None), attr


@needs_torch
@pytest.mark.parametrize("expr,shape", [("MaxPool3d(3, 2, 1, ceil_mode=True)", (2, 3, 6, 7, 5)),
                                        ("MaxPool3d(2, return_indices=True)", (3, 6, 7, 5)),
                                        ("AvgPool3d((2, 3, 2), 1, (1, 0, 1), count_include_pad=False)",
                                         (2, 3, 6, 7, 5)),
                                        ("AdaptiveAvgPool3d((2, None, 3))", (3, 6, 7, 5)),
                                        ("AdaptiveMaxPool3d((4, 3, 2), True)", (2, 3, 6, 7, 5)),
                                        ("LPPool1d(2, 3, 2)", (2, 3, 9)), ("LPPool2d(3, (2, 3))", (3, 6, 7)),
                                        ("LPPool3d(2, 2, ceil_mode=True)", (2, 3, 5, 7, 5))])
def test_pooling_modules_as_torch(expr, shape):
    compare(lambda F, a: eval(("snn." if F is SF else "torch.nn.") + expr)(a), rnd(*shape))


# ---------------- bad calls: torch's exception and message ----------------
ERRORS = [
    ("max3d_dims", lambda F, T: F.max_pool3d(T((4, 4, 4)), 2)),
    ("max3d_dims6", lambda F, T: F.max_pool3d(T((1, 2, 3, 4, 4, 4)), 2)),
    ("max3d_kernel_len", lambda F, T: F.max_pool3d(T(X5.shape), (2, 2))),
    ("max3d_stride_len", lambda F, T: F.max_pool3d(T(X5.shape), 2, (1, 1))),
    ("max3d_pad_len", lambda F, T: F.max_pool3d(T(X5.shape), 2, 1, (1, 1))),
    ("max3d_dil_len", lambda F, T: F.max_pool3d(T(X5.shape), 2, 1, 0, (1, 1))),
    ("max3d_kernel0", lambda F, T: F.max_pool3d(T(X5.shape), 0)),
    ("max3d_kernel0_stride1", lambda F, T: F.max_pool3d(T(X5.shape), 0, 1)),
    ("max3d_kernel_neg", lambda F, T: F.max_pool3d(T(X5.shape), (2, -1, 2), 1)),
    ("max3d_stride_neg", lambda F, T: F.max_pool3d(T(X5.shape), 2, (1, -1, 1))),
    ("max3d_dil0", lambda F, T: F.max_pool3d(T(X5.shape), 2, 1, 0, 0)),
    ("max3d_pad", lambda F, T: F.max_pool3d(T(X5.shape), 2, 1, 2)),
    ("max3d_pad_half_kernel", lambda F, T: F.max_pool3d(T(X5.shape), 2, 1, 2, 3)),
    ("max3d_negpad", lambda F, T: F.max_pool3d(T(X5.shape), 2, 1, -1)),
    ("max3d_too_small", lambda F, T: F.max_pool3d(T(X5.shape), 7)),
    ("max3d_too_small_dil", lambda F, T: F.max_pool3d(T(X5.shape), 3, dilation=3)),
    ("max3d_empty_channels", lambda F, T: F.max_pool3d(T((2, 0, 4, 4, 4)), 2)),
    ("max3d_empty_unbatched", lambda F, T: F.max_pool3d(T((0, 4, 4, 4)), 2)),
    ("max3d_bool", lambda F, T: F.max_pool3d(T(X5.shape) > 0, 2)),
    ("avg3d_dims", lambda F, T: F.avg_pool3d(T((4, 4, 4)), 2)),
    ("avg3d_kernel_len", lambda F, T: F.avg_pool3d(T(X5.shape), (2, 2))),
    ("avg3d_stride_len", lambda F, T: F.avg_pool3d(T(X5.shape), 2, (1, 1))),
    ("avg3d_pad_len", lambda F, T: F.avg_pool3d(T(X5.shape), 2, 1, (1, 1))),
    ("avg3d_kernel0", lambda F, T: F.avg_pool3d(T(X5.shape), 0, 1)),
    ("avg3d_stride0", lambda F, T: F.avg_pool3d(T(X5.shape), 2, 0)),
    ("avg3d_pad", lambda F, T: F.avg_pool3d(T(X5.shape), 2, 1, 2)),
    ("avg3d_smaller_than_kernel", lambda F, T: F.avg_pool3d(T(X5.shape), (7, 2, 2), 1, (3, 1, 1))),
    ("avg3d_divisor0", lambda F, T: F.avg_pool3d(T(X5.shape), 2, divisor_override=0)),
    ("avg3d_divisor0_dims", lambda F, T: F.avg_pool3d(T((4, 4, 4)), 2, divisor_override=0)),
    ("avg3d_empty", lambda F, T: F.avg_pool3d(T((2, 3, 0, 4, 4)), 2)),
    ("avg3d_half", lambda F, T: F.avg_pool3d(T(X5.shape).half(), 2)),
    ("avg3d_int32", lambda F, T: F.avg_pool3d(T(X5.shape).int(), 2)),
    ("aavg3d_len", lambda F, T: F.adaptive_avg_pool3d(T(X5.shape), (2, 2))),
    ("aavg3d_neg", lambda F, T: F.adaptive_avg_pool3d(T(X5.shape), (2, -1, 2))),
    ("aavg3d_dims", lambda F, T: F.adaptive_avg_pool3d(T((4, 4, 4)), 2)),
    ("aavg3d_default_dims", lambda F, T: F.adaptive_avg_pool3d(T((4, 4, 4)), (None, 2, 2))),
    ("aavg3d_empty", lambda F, T: F.adaptive_avg_pool3d(T((2, 3, 0, 4, 4)), 2)),
    ("aavg3d_long", lambda F, T: F.adaptive_avg_pool3d(T(X5.shape).long(), 2)),
    ("amax3d_dims", lambda F, T: F.adaptive_max_pool3d(T((4, 4, 4)), 2)),
    ("amax3d_len", lambda F, T: F.adaptive_max_pool3d(T(X5.shape), (2, 2))),
    ("amax3d_empty_len", lambda F, T: F.adaptive_max_pool3d(T((2, 0, 3, 3, 3)), (2, 2))),
    ("amax3d_neg", lambda F, T: F.adaptive_max_pool3d(T(X5.shape), (2, -1, 2))),
    ("amax2d_neg", lambda F, T: F.adaptive_max_pool2d(T((3, 4, 4)), (2, -1))),
    ("amax3d_long", lambda F, T: F.adaptive_max_pool3d(T(X5.shape).long(), 2)),
    ("lp2d_kernel_len", lambda F, T: F.lp_pool2d(T(X4.shape), 2, (2, 2, 2))),
    ("lp3d_kernel_len", lambda F, T: F.lp_pool3d(T(X5.shape), 2, (2, 2))),
    ("lp3d_dims", lambda F, T: F.lp_pool3d(T((4, 4, 4)), 2, 2)),
    ("lp1d_too_small", lambda F, T: F.lp_pool1d(T((2, 3, 2)), 2, 3)),
    ("unpool2d_default_size", lambda F, T: F.max_unpool2d(*F.max_pool2d(T.ramp(2, 3, 6, 7), 2, return_indices=True),
                                                          2)),
    ("unpool2d_unbatched_size", lambda F, T: F.max_unpool2d(*F.max_pool2d(T.ramp(3, 6, 7), 2, return_indices=True),
                                                            2)),
    ("unpool3d_default_size", lambda F, T: F.max_unpool3d(*F.max_pool3d(T.ramp(2, 3, 4, 6, 7), 2,
                                                                        return_indices=True), 2)),
    ("unpool1d_size", lambda F, T: F.max_unpool1d(*F.max_pool1d(T.ramp(2, 3, 9), 3, 2, return_indices=True), 3, 2,
                                                  output_size=[6])),
    ("unpool2d_index_negative", lambda F, T: F.max_unpool2d(T((1, 2, 2, 2)), T.idx(1, 2, 2, 2) - 3, 2)),
    ("unpool1d_index", lambda F, T: F.max_unpool1d(T((2, 3, 4)), T.idx(2, 3, 4) + 6, 2)),
    ("unpool2d_output_size_len", lambda F, T: F.max_unpool2d(T((2, 3, 3, 3)), T.idx(2, 3, 3, 3), 2,
                                                             output_size=(3, 6, 6))),
    ("unpool2d_output_size_range", lambda F, T: F.max_unpool2d(T((2, 3, 3, 3)), T.idx(2, 3, 3, 3), 2,
                                                               output_size=(8, 6))),
    ("unpool3d_output_size_range", lambda F, T: F.max_unpool3d(T((2, 3, 2, 3, 3)), T.idx(2, 3, 2, 3, 3), 2,
                                                               output_size=[4, 6, 4])),
    ("unpool1d_output_size_range", lambda F, T: F.max_unpool1d(T((2, 3, 3)), T.idx(2, 3, 3), 2, output_size=[8])),
    ("unpool2d_negative_size", lambda F, T: F.max_unpool2d(T((1, 1, 1)), T.idx(1, 1, 1), 1, 1, 1)),
    ("unpool2d_indices_dtype", lambda F, T: F.max_unpool2d(T((2, 3, 3, 3)), T.idx(2, 3, 3, 3).int(), 2)),
    ("unpool3d_indices_dtype", lambda F, T: F.max_unpool3d(T((2, 3, 2, 3, 3)), T.idx(2, 3, 2, 3, 3).int(), 2)),
    ("unpool2d_dims", lambda F, T: F.max_unpool2d(T((3, 3)), T.idx(3, 3), 2)),
    ("unpool1d_dims", lambda F, T: F.max_unpool1d(T((3,)), T.idx(3), 2)),
    ("unpool3d_dims", lambda F, T: F.max_unpool3d(T((3, 3, 3)), T.idx(3, 3, 3), 2)),
    ("unpool2d_shape", lambda F, T: F.max_unpool2d(T((2, 3, 3, 3)), T.idx(2, 3, 2, 3), 2)),
    ("unpool3d_shape", lambda F, T: F.max_unpool3d(T((2, 3, 2, 3, 3)), T.idx(2, 3, 1, 3, 3), 2)),
    ("unpool2d_empty", lambda F, T: F.max_unpool2d(T((2, 0, 3, 3)), T.idx(2, 0, 3, 3), 2)),
    ("unpool3d_empty", lambda F, T: F.max_unpool3d(T((2, 0, 2, 3, 3)), T.idx(2, 0, 2, 3, 3), 2)),
    ("unpool3d_stride0", lambda F, T: F.max_unpool3d(T((2, 3, 2, 3, 3)), T.idx(2, 3, 2, 3, 3), 2, 0)),
    ("unpool2d_long", lambda F, T: F.max_unpool2d(T((2, 3, 3, 3)).long(), T.idx(2, 3, 3, 3), 2)),
    ("unpool3d_bool", lambda F, T: F.max_unpool3d(T((2, 3, 2, 3, 3)) > 0, T.idx(2, 3, 2, 3, 3), 2)),
    ("unpool2d_kernel_len", lambda F, T: F.max_unpool2d(T((2, 3, 3, 3)), T.idx(2, 3, 3, 3), (2, 2, 2))),
    ("unpool2d_output_size_int", lambda F, T: F.max_unpool2d(T((2, 3, 3, 3)), T.idx(2, 3, 3, 3), 2,
                                                             output_size=6)),
    ("lrn_dims", lambda F, T: F.local_response_norm(T((2, 3)), 2)),
    ("lrn_size0", lambda F, T: F.local_response_norm(T((2, 3, 4)), 0)),
    ("lrn_half_5d", lambda F, T: F.local_response_norm(T((2, 3, 4, 4)).half(), 2)),
    ("shuffle_dims", lambda F, T: F.channel_shuffle(T((2, 6)), 3)),
    ("shuffle_groups0", lambda F, T: F.channel_shuffle(T((2, 6, 3)), 0)),
    ("shuffle_groups_neg", lambda F, T: F.channel_shuffle(T((2, 6, 3)), -2)),
    ("shuffle_divisible", lambda F, T: F.channel_shuffle(T((2, 6, 3)), 4)),
    ("shuffle_float", lambda F, T: F.channel_shuffle(T((2, 6, 3)), 3.0)),
    ("native_shuffle_divisible", lambda F, T: F.native_channel_shuffle(T((2, 6, 3)), 4)),
    ("softmax2d_dims", lambda F, T: (snn if F is SF else torch.nn).Softmax2d()(T((2, 3)))),
    ("softmax2d_dims5", lambda F, T: (snn if F is SF else torch.nn).Softmax2d()(T((2, 3, 2, 2, 2)))),
]


def _outcome(F, lib, fn):
    """(exception type, first line of its message) of fn(F, T), or None; T(shape) is a zero
    tensor, T.idx(*shape) an int64 index tensor (0, 1, 2, 3, 0, ...), T.ramp(*shape) 0, 1, 2, ..."""
    def T(shape):
        return lib.zeros(*shape) if shape else lib.zeros(())
    T.idx = lambda *s: lib.arange(int(np.prod(s)), dtype=lib.int64).reshape(*s) % 4
    T.ramp = lambda *s: lib.arange(int(np.prod(s)), dtype=lib.float32).reshape(*s)
    try:
        fn(F, T)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).split("\n")[0]
    return None


@needs_torch
@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_torch(case):
    _, fn = case
    want = _outcome(TF, torch, fn)
    assert want is not None, "torch accepts this call"
    assert _outcome(SF, st, fn) == want


# ---------------- without torch: numpy references and finite differences ----------------
def _np_windows(x, k, s, pad, fill):
    """[N, C, *out, *k]: the windows of x (padded by pad with fill) at stride s."""
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad], constant_values=fill)
    w = np.lib.stride_tricks.sliding_window_view(xp, k, axis=(2, 3, 4))
    return w[:, :, ::s[0], ::s[1], ::s[2]]


def test_pool3d_numpy_reference():
    x = X5
    k, s, p = (2, 3, 2), (1, 2, 2), (1, 1, 0)
    win = _np_windows(x, k, s, p, -np.inf)
    np.testing.assert_array_equal(SF.max_pool3d(st.tensor(x), k, s, p).numpy(), win.max(axis=(5, 6, 7)))
    win0 = _np_windows(x, k, s, p, 0.0)
    np.testing.assert_allclose(SF.avg_pool3d(st.tensor(x), k, s, p).numpy(), win0.mean(axis=(5, 6, 7)),
                               rtol=1e-12, atol=1e-12)
    ones = _np_windows(np.ones_like(x), k, s, p, 0.0).sum(axis=(5, 6, 7))
    np.testing.assert_allclose(SF.avg_pool3d(st.tensor(x), k, s, p, count_include_pad=False).numpy(),
                               win0.sum(axis=(5, 6, 7)) / ones, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(SF.lp_pool3d(st.tensor(np.abs(x)), 3, k, s).numpy(),
                               (_np_windows(np.abs(x), k, s, (0, 0, 0), 0.0) ** 3).sum(axis=(5, 6, 7)) ** (1 / 3),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(SF.adaptive_avg_pool3d(st.tensor(x), (3, 1, 5)).numpy(),
                               x.reshape(2, 3, 3, 2, 1, 7, 5, 1).mean(axis=(3, 5, 7)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda x: SF.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), dilation=(1, 1, 2), ceil_mode=True),
    lambda x: SF.avg_pool3d(x, (3, 3, 2), 2, 1, ceil_mode=True, count_include_pad=False),
    lambda x: SF.adaptive_max_pool3d(x, (2, 3, 2)),
    lambda x: SF.adaptive_avg_pool3d(x[0], (2, 3, 4)),
    lambda x: SF.lp_pool3d(x * x + 0.1, 3, (2, 2, 1), 1),
    # (windows that do not overlap: where they do, torch's gradient, a gather per window, counts a value
    # written by several windows several times, and symtrace's is torch's)
    lambda x: SF.max_unpool3d(*SF.max_pool3d(x, (1, 2, 2), return_indices=True), (1, 2, 2)),
    lambda x: SF.local_response_norm(x, 2, 0.5),
    lambda x: SF.channel_shuffle(x.reshape(2, 4, 3, 3, 2), 2),
    lambda x: snn.ReflectionPad3d((1, 0, 2, 1, 1, 1))(x),
    lambda x: snn.CircularPad3d((1, 0, 2, 1, 1, 1))(x),
    lambda x: snn.ReplicationPad3d(1)(x[0]),
])
def test_gradients_against_finite_differences(fn):
    from symtrace.autograd import gradcheck
    x = st.tensor(np.random.RandomState(3).randn(2, 3, 3, 4, 2) * 2, requires_grad=True)
    assert gradcheck(fn, (x,), eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap"),
                                          ("constant", "constant")])
def test_padding_modules_numpy_reference(mode, np_mode):
    name = {"reflect": "ReflectionPad", "replicate": "ReplicationPad", "circular": "CircularPad",
            "constant": "ConstantPad"}[mode]
    x5 = rnd(2, 3, 4, 5, 3)
    for k, pad in ((1, (2, 1)), (2, (1, 2, 0, 3)), (3, (1, 0, 2, 2, 1, 2))):
        x = x5[(slice(None), slice(None)) + (0,) * (3 - k)]
        args = (pad, 1.5) if mode == "constant" else (pad,)
        y = getattr(snn, f"{name}{k}d")(*args)(st.tensor(x)).numpy()
        width = [(0, 0)] * 2 + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
        kw = dict(constant_values=1.5) if mode == "constant" else {}
        np.testing.assert_array_equal(y, np.pad(x, width, mode=np_mode, **kw))


def test_shuffle_lrn_batchnorm3d_numpy_reference():
    x = rnd(2, 6, 3, 4)
    np.testing.assert_array_equal(SF.channel_shuffle(st.tensor(x), 3).numpy(),
                                  x.reshape(2, 3, 2, 3, 4).transpose(0, 2, 1, 3, 4).reshape(2, 6, 3, 4))
    sq = np.pad(x * x, ((0, 0), (1, 1), (0, 0), (0, 0)))
    mean = sum(sq[:, i:i + 6] for i in range(3)) / 3
    np.testing.assert_allclose(SF.local_response_norm(st.tensor(x), 3, 0.2, 0.5, 1.5).numpy(),
                               x / (1.5 + 0.2 * mean) ** 0.5, rtol=1e-12, atol=1e-12)
    x5 = rnd(3, 2, 2, 3, 2)
    bn = snn.BatchNorm3d(2, dtype=st.float64)
    y = bn(st.tensor(x5)).detach().numpy()
    m, v = x5.mean(axis=(0, 2, 3, 4), keepdims=True), x5.var(axis=(0, 2, 3, 4), keepdims=True)
    np.testing.assert_allclose(y, (x5 - m) / np.sqrt(v + 1e-5), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * x5.var(axis=(0, 2, 3, 4), ddof=1),
                               rtol=1e-12)
    inorm = snn.InstanceNorm3d(2)
    y = inorm(st.tensor(x5[0])).numpy()
    m, v = x5[0].mean(axis=(1, 2, 3), keepdims=True), x5[0].var(axis=(1, 2, 3), keepdims=True)
    np.testing.assert_allclose(y, (x5[0] - m) / np.sqrt(v + 1e-5), rtol=1e-10, atol=1e-10)


# ---------------- compiled: a small 3-d CNN and the index ops ----------------
class _Net3d:
    @staticmethod
    def build(nn):
        return nn.Sequential(nn.ReplicationPad3d((1, 0, 1, 1, 0, 1)), nn.Conv3d(2, 4, 3), nn.BatchNorm3d(4),
                             nn.ReLU(), nn.MaxPool3d(2, ceil_mode=True), nn.ConstantPad3d(1, 0.5),
                             nn.AdaptiveAvgPool3d((1, 2, 2)), nn.Flatten(), nn.Linear(16, 3))


def _train(L, nn, model, x, y, steps=2):
    opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses


def test_small_3d_cnn_compiled_as_eager():
    rs = np.random.RandomState(4)
    x, y = rs.randn(3, 2, 6, 7, 5).astype(np.float32), rs.randint(0, 3, 3)
    st.manual_seed(0)
    eager, src = _Net3d.build(snn), _Net3d.build(snn)
    src.load_state_dict(eager.state_dict())
    el = _train(st, snn, eager, st.tensor(x), st.tensor(y))
    cl = _train(st, snn, st.compile(src), st.tensor(x), st.tensor(y))
    np.testing.assert_allclose(cl, el, rtol=1e-5, atol=1e-5)
    for k, v in eager.state_dict().items():    # parameters, momentum-updated, and running statistics
        np.testing.assert_allclose(src.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-5, err_msg=k)
    if torch is not None:    # and the eager training is torch's
        torch.manual_seed(0)
        tm = _Net3d.build(torch.nn)
        sm = _Net3d.build(snn)
        sm.load_state_dict({k: st.tensor(v.numpy()) for k, v in tm.state_dict().items()})
        sl = _train(st, snn, sm, st.tensor(x), st.tensor(y))
        tl = _train(torch, torch.nn, tm, torch.tensor(x), torch.tensor(y))
        np.testing.assert_allclose(sl, tl, rtol=1e-4, atol=1e-5)
        for k, v in tm.state_dict().items():
            np.testing.assert_allclose(sm.state_dict()[k].numpy(), v.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)


def _index_ops(x):
    y, idx = SF.max_pool2d(x, 3, 2, 1, return_indices=True)
    u = SF.max_unpool2d(y, idx, 3, 2, 1, output_size=x.shape[-2:])
    z = SF.channel_shuffle(SF.local_response_norm(u + x, 3), 2)
    return SF.lp_pool2d(z, 2, 2) + SF.adaptive_max_pool2d(z, 3)


def test_unpool_shuffle_lrn_lp_compiled_as_eager():
    x = rnd(2, 4, 6, 6).astype(np.float32)
    xe, xc = st.tensor(x, requires_grad=True), st.tensor(x, requires_grad=True)
    ye = _index_ops(xe)
    yc = st.compile(_index_ops)(xc)
    np.testing.assert_allclose(yc.detach().numpy(), ye.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = st.tensor(np.random.RandomState(1).rand(*tuple(ye.shape)).astype(np.float32))
    (ye * w).sum().backward()
    (yc * w).sum().backward()
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
    if torch is not None:
        xt = torch.tensor(x, requires_grad=True)
        F = TF
        yt, it = F.max_pool2d(xt, 3, 2, 1, return_indices=True)
        ut = F.max_unpool2d(yt, it, 3, 2, 1, output_size=x.shape[-2:])
        zt = F.channel_shuffle(F.local_response_norm(ut + xt, 3), 2)
        rt = F.lp_pool2d(zt, 2, 2) + F.adaptive_max_pool2d(zt, 3)
        (rt * torch.tensor(w.numpy())).sum().backward()
        np.testing.assert_allclose(ye.detach().numpy(), rt.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("name", ["max_pool3d", "channel_shuffle", "native_channel_shuffle"])
def test_torch_level_signature(name):
    import test_functional_signatures as S
    assert S._diff(S._params(getattr(st, name)), S._params(getattr(torch, name))) is None
    x = rnd(2, 4, 4, 6, 4)
    compare(lambda F, a: getattr(st if F is SF else torch, name)(a, 2), x, grad=())
