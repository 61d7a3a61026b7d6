# Lazy modules (LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*,
# LazyInstanceNorm*, UninitializedParameter / UninitializedBuffer and the
# LazyModuleMixin protocol), nn.Buffer, anomaly mode (detect_anomaly,
# set_detect_anomaly), the legacy autograd.Variable and the profiler's
# record_function / schedule / profile.step, each against torch: shapes,
# state_dict keys, initialization bounds, outputs and gradients with torch's
# weights, torch's error messages, a compiled lazy model against eager, and a
# compiled function's backward in anomaly mode.
import copy
import glob
import json
import re
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
from conftest import assert_close

# an InstanceNorm without affine parameters or running stats infers nothing (num_features stays 0)
pytestmark = pytest.mark.filterwarnings("ignore:input's size at dim=1 does not match num_features:UserWarning")

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def _np(t):
    return t.detach().numpy()


def _load_from_torch(m, tm):
    """m.load_state_dict(tm's state_dict) through numpy."""
    m.load_state_dict({k: st.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})


# ---------------- lazy modules ----------------
# (class name, constructor args, input shape)
LAZY_CASES = [
    ("LazyLinear", (3,), (2, 5)),
    ("LazyLinear", (4, False), (2, 3, 6)),
    ("LazyConv1d", (4, 3), (2, 3, 8)),
    ("LazyConv2d", (3, 2), (2, 2, 5, 5)),
    ("LazyConv2d", (4, 3, 1, 1, 1, 2), (1, 4, 5, 5)),      # stride, padding, dilation, groups
    ("LazyConv3d", (2, 2), (1, 2, 3, 4, 4)),
    ("LazyConv1d", (3, 3), (2, 7)),                        # unbatched
    ("LazyConvTranspose1d", (3, 3, 2), (2, 4, 5)),
    ("LazyConvTranspose2d", (2, 3), (1, 3, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), (1, 2, 3, 3, 3)),
    ("LazyBatchNorm1d", (), (4, 3)),
    ("LazyBatchNorm2d", (), (3, 2, 3, 3)),
    ("LazyBatchNorm3d", (1e-3, 0.2), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 6)),
    ("LazyInstanceNorm2d", (), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (1e-5, 0.1, False, False), (2, 2, 3, 3, 3)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,args,shape", LAZY_CASES, ids=lambda v: str(v))
def test_lazy_module_matches_torch(torch, name, args, shape, dtype):
    m = getattr(nn, name)(*args, dtype=getattr(st, dtype))
    tm = getattr(torch.nn, name)(*args, dtype=getattr(torch, dtype))
    assert repr(m) == repr(tm)
    # before the first call: the same uninitialized entries under the same keys
    sd, tsd = m.state_dict(), tm.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        assert type(sd[k]).__name__ == type(tsd[k]).__name__, k
    assert m.has_uninitialized_params() == tm.has_uninitialized_params() == bool(tsd)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    x, tx = st.tensor(a), torch.from_numpy(a.copy())
    # the first call materializes, initializes as the eager module does and swaps the class
    y, ty = m(x), tm(tx)
    assert type(m).__name__ == type(tm).__name__ and type(m) is getattr(nn, type(tm).__name__)
    assert repr(m) == repr(tm)
    assert not hasattr(m, "_initialize_hook") and not m._forward_pre_hooks
    assert [(k, tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in m.state_dict().items()] == \
        [(k, tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in tm.state_dict().items()]
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert all(type(p) is nn.Parameter for p in m.parameters())
    assert tuple(y.shape) == tuple(ty.shape)
    # the first call used the materialized parameters: torch's forward with them gives y
    tm2 = copy.deepcopy(tm)
    with torch.no_grad():
        for (_, p), (_, tp) in zip(m.named_parameters(), tm2.named_parameters()):
            tp.copy_(torch.from_numpy(_np(p).copy()))
    if "BatchNorm" not in name and "InstanceNorm" not in name:   # norm layers updated running stats
        assert_close(y.detach(), tm2(tx).detach(), **TOL[dtype])
    else:
        assert_close(y.detach(), ty.detach(), **TOL[dtype])
        for k in ("running_mean", "running_var", "num_batches_tracked"):
            if k in tsd:
                assert_close(m.state_dict()[k], tm.state_dict()[k], **TOL[dtype])
    # with torch's weights: outputs and gradients of input and parameters
    _load_from_torch(m, tm)
    x.requires_grad_(True)
    tx.requires_grad_(True)
    y, ty = m(x), tm(tx)
    assert_close(y.detach(), ty.detach(), **TOL[dtype])
    w = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    (y * st.tensor(w)).sum().backward()
    (ty * torch.from_numpy(w)).sum().backward()
    assert_close(x.grad, tx.grad, **TOL[dtype])
    for (n, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
        assert_close(p.grad, tp.grad, **TOL[dtype], msg=n)


@pytest.mark.parametrize("name,args,shape,fan_in", [
    ("LazyLinear", (64,), (2, 50), 50),
    ("LazyConv2d", (32, 3), (1, 6, 5, 5), 54),
    ("LazyConvTranspose1d", (8, 3), (1, 40, 4), 24),   # transposed: fan_in = out_channels * k
])
def test_lazy_init_follows_reset_parameters(name, args, shape, fan_in):
    st.manual_seed(0)
    m = getattr(nn, name)(*args)
    m(st.zeros(*shape))
    bound = 1 / np.sqrt(fan_in)     # kaiming_uniform_(a=sqrt(5)) and the bias bound coincide
    for p in (m.weight, m.bias):
        v = _np(p).ravel()
        assert np.all(np.abs(v) <= bound + 1e-7)
        assert abs(v.std() - bound / np.sqrt(3)) < 0.25 * bound / np.sqrt(3)
    w = _np(m.weight)
    assert len(np.unique(w)) > w.size // 2     # random, not a constant fill


def test_lazy_norm_init_and_running_stats(torch):
    for cls in ("LazyBatchNorm2d", "LazyInstanceNorm2d"):
        m = getattr(nn, cls)(momentum=None)
        tm = getattr(torch.nn, cls)(momentum=None)
        a = np.random.default_rng(1).standard_normal((3, 4, 2, 2)).astype("float32")
        m(st.tensor(a))
        tm(torch.from_numpy(a))
        for k, v in tm.state_dict().items():
            assert_close(m.state_dict()[k], v, rtol=1e-5, atol=1e-6, msg=k)


def test_lazy_state_dict_load_and_errors(torch):
    # an initialized state_dict loads into a lazy module: shapes materialize, values copy,
    # the module stays lazy until its first call
    src, tsrc = nn.LazyLinear(3), torch.nn.LazyLinear(3)
    src(st.zeros(1, 4))
    tsrc(torch.zeros(1, 4))
    m, tm = nn.LazyLinear(3), torch.nn.LazyLinear(3)
    m.load_state_dict(src.state_dict())
    tm.load_state_dict(tsrc.state_dict())
    assert type(m).__name__ == type(tm).__name__ == "LazyLinear"
    assert tuple(m.weight.shape) == tuple(tm.weight.shape) == (3, 4)
    assert_close(m.weight.detach(), _np(src.weight))
    assert m.in_features == tm.in_features == 0
    x = st.ones(2, 4)
    assert_close(m(x).detach(), _np(src(x)))
    assert type(m) is nn.Linear and m.in_features == 4
    # lazy into lazy: nothing to copy
    lz, tlz = nn.LazyConv1d(2, 3), torch.nn.LazyConv1d(2, 3)
    lz.load_state_dict(nn.LazyConv1d(2, 3).state_dict())
    tlz.load_state_dict(torch.nn.LazyConv1d(2, 3).state_dict())
    assert lz.has_uninitialized_params() and tlz.has_uninitialized_params()
    # lazy into an initialized module: torch's error (the uninitialized shape)
    with pytest.raises(RuntimeError) as te:
        tsrc.load_state_dict(torch.nn.LazyLinear(3).state_dict())
    with pytest.raises(RuntimeError) as se:
        src.load_state_dict(nn.LazyLinear(3).state_dict())
    assert str(se.value) == str(te.value)
    # a lazy module, deep-copied or converted before its first call
    d = copy.deepcopy(nn.LazyLinear(2)).double()
    assert d.weight.dtype == st.float64 and nn.parameter.is_lazy(d.weight)
    out = d(st.ones(3, 5, dtype=st.float64))
    assert type(d) is nn.Linear and out.dtype == st.float64 and tuple(d.weight.shape) == (2, 5)
    # initialize_parameters by hand, then a call with another in_features is torch's error
    m2 = nn.LazyLinear(2)
    m2.initialize_parameters(st.ones(1, 3))
    assert not m2.has_uninitialized_params() and type(m2) is nn.LazyLinear
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied|shape|size"):
        m2(st.ones(1, 5))


def test_uninitialized_parameter_errors_as_torch(torch):
    from symtrace.nn.parameter import UninitializedParameter, UninitializedBuffer
    tp = torch.nn.parameter.UninitializedParameter()
    p = UninitializedParameter()
    assert repr(p) == repr(tp) and repr(UninitializedBuffer()) == repr(torch.nn.parameter.UninitializedBuffer())
    assert p.requires_grad and p.is_leaf and p.dtype == st.float32 and p.grad is None
    assert UninitializedBuffer(persistent=False).persistent is False
    assert isinstance(p, nn.Parameter) and p.cls_to_become is nn.Parameter
    for lib, U, UB in ((st, UninitializedParameter, UninitializedBuffer),
                       (torch, torch.nn.parameter.UninitializedParameter, torch.nn.parameter.UninitializedBuffer)):
        assert isinstance(UB(), lib.nn.Buffer) and not isinstance(U(), lib.nn.Buffer)
        assert lib.nn.parameter.is_lazy(U()) and not lib.nn.parameter.is_lazy(lib.ones(1))

    def msg(fn, *a):
        with pytest.raises(Exception) as e:
            fn(*a)
        return type(e.value), str(e.value)
    head = "Attempted to use an uninitialized parameter in"
    tail = "This error happens when you are using a `LazyModule`"
    for f in (lambda q: q.sum(), lambda q: q + 1, lambda q: q.dim(), lambda q: q.detach(), lambda q: len(q)):
        (tt, tmsg), (stt, smsg) = msg(f, tp), msg(f, p)
        assert tt is stt is ValueError
        assert tmsg.startswith(head) and smsg.startswith(head) and tail in tmsg and tail in smsg
    (tt, tmsg), (stt, smsg) = msg(lambda q: q.shape, tp), msg(lambda q: q.shape, p)
    assert tt is stt is RuntimeError and tmsg == smsg
    # materialize: the modules holding it get a Parameter of that shape
    m = nn.Module()
    m.w = UninitializedParameter(dtype=st.float64)
    m.w.materialize((2, 3))
    assert type(m.w) is nn.Parameter and tuple(m.w.shape) == (2, 3) and m.w.dtype == st.float64
    b = nn.Module()
    b.buf = UninitializedBuffer()
    assert [n for n, _ in b.named_buffers()] == ["buf"]
    b.buf.materialize(4)
    assert type(b.buf) is st.Tensor and tuple(b.buf.shape) == (4,) and "buf" in b.state_dict()


def test_lazy_model_compiled_first_call_and_after():
    from symtrace import _C

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.LazyConv1d(3, 3)
            self.bn = nn.LazyBatchNorm1d()
            self.fc = nn.LazyLinear(2)

        def forward(self, x):
            return self.fc(self.bn(self.conv(x)).relu())

    st.manual_seed(0)
    net, ref = Net(), Net()
    cnet = st.compile(net)
    rng = np.random.default_rng(2)
    x = st.tensor(rng.standard_normal((4, 2, 6)).astype("float32"))
    y = cnet(x)                           # materialization (eager, a graph break), then the rest
    assert [type(c).__name__ for c in net.children()] == ["Conv1d", "BatchNorm1d", "Linear"]
    ref.load_state_dict(net.state_dict())     # the same weights, before the stats moved
    ref.bn.running_mean.copy_(st.zeros(3))
    ref.bn.running_var.copy_(st.ones(3))
    ref.bn.num_batches_tracked.zero_()
    assert_close(y.detach(), _np(ref(x)), rtol=1e-5, atol=1e-6)
    assert_close(net.bn.running_mean, _np(ref.bn.running_mean), rtol=1e-5, atol=1e-6)
    # later calls: compiled (cache hits), equal to eager, gradients too
    for i in range(2):
        xi = st.tensor(rng.standard_normal((4, 2, 6)).astype("float32"), requires_grad=True)
        xr = st.tensor(_np(xi), requires_grad=True)
        hits = _C._fe_stats()["hits"]
        yc, yr = cnet(xi), ref(xr)
        if i == 1:
            assert _C._fe_stats()["hits"] > hits
        assert_close(yc.detach(), _np(yr), rtol=1e-5, atol=1e-6)
        yc.square().sum().backward()
        yr.square().sum().backward()
        assert_close(xi.grad, _np(xr.grad), rtol=1e-4, atol=1e-5)
        for (n, p), (_, q) in zip(net.named_parameters(), ref.named_parameters()):
            assert_close(p.grad, _np(q.grad), rtol=1e-4, atol=1e-5, msg=n)
        net.zero_grad()
        ref.zero_grad()


# ---------------- nn.Buffer ----------------
def test_buffer_registers_as_torch(torch):
    def build(lib, t):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = lib.nn.Buffer(t([1.0, 2.0]))
                self.b = lib.nn.Buffer(t([3.0]), persistent=False)
                self.c = t([4.0])                      # a plain tensor is no buffer
                self.lin = lib.nn.Linear(2, 1)

            def forward(self, x):
                return self.lin(x * self.a) + self.b
        return M()
    m, tm = build(st, st.tensor), build(torch, torch.tensor)
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in tm.named_buffers()] == ["a", "b"]
    assert list(m.state_dict()) == list(tm.state_dict())
    assert isinstance(m.a, nn.Buffer) and isinstance(tm.a, torch.nn.Buffer)
    assert not isinstance(m.c, nn.Buffer) and not isinstance(tm.c, torch.nn.Buffer)
    assert m.a.persistent and not m.b.persistent and repr(m.a) == repr(tm.a)
    g = nn.Buffer(st.ones(2, requires_grad=True))
    assert g.requires_grad and g.is_leaf and nn.Buffer().shape == (0,)
    # re-assigning a buffer name with a Buffer keeps it a buffer; its persistence follows the Buffer
    m.a = nn.Buffer(st.tensor([2.0, 2.0]), persistent=False)
    tm.a = torch.nn.Buffer(torch.tensor([2.0, 2.0]), persistent=False)
    assert list(m.state_dict()) == list(tm.state_dict())
    with pytest.raises(KeyError):
        m.c = nn.Buffer(st.ones(1))
    with pytest.raises(KeyError):
        tm.c = torch.nn.Buffer(torch.ones(1))
    _load_from_torch(m, tm)
    x = np.array([[0.5, -1.0], [2.0, 1.0]], dtype="float32")
    assert_close(m(st.tensor(x)).detach(), tm(torch.from_numpy(x)).detach(), rtol=1e-6, atol=1e-6)
    cm = st.compile(m)
    for _ in range(2):
        assert_close(cm(st.tensor(x)).detach(), tm(torch.from_numpy(x)).detach(), rtol=1e-6, atol=1e-6)


# ---------------- anomaly mode ----------------
def _torch_anomaly(torch, fn):
    x = torch.zeros(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            with pytest.raises(RuntimeError) as e:
                fn(torch, x).sum().backward()
    return str(e.value), [str(m.message) for m in w]


def _st_anomaly(fn):
    x = st.zeros(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with st.autograd.detect_anomaly():
            y = fn(st, x)
            with pytest.raises(RuntimeError) as e:
                y.sum().backward()
    return str(e.value), [str(m.message) for m in w], y


NAN_CASES = [("sqrt0_times0", lambda lib, x: lib.sqrt(x) * 0, "SqrtBackward0"),
             ("x_over_x", lambda lib, x: x / x, "DivBackward0")]


@pytest.mark.parametrize("case,fn,node", NAN_CASES, ids=[c[0] for c in NAN_CASES])
def test_anomaly_nan_message_as_torch(torch, case, fn, node):
    tmsg, twarn = _torch_anomaly(torch, fn)
    smsg, swarn, _ = _st_anomaly(fn)
    pat = "^" + re.escape(tmsg).replace(re.escape(node), r"(\w+)") + "$"
    mt = re.match(pat, smsg)
    assert mt, (smsg, tmsg)
    assert mt.group(1) == node
    # the warnings: anomaly mode is on; the error came from the forward call on this line
    assert any(w.startswith("Anomaly Detection has been enabled") for w in twarn)
    assert any(w.startswith("Anomaly Detection has been enabled") for w in swarn)
    head = f"Error detected in {node}. Traceback of forward call that caused the error:"
    assert any(w.startswith(head) for w in twarn)
    tb = [w for w in swarn if w.startswith(head)]
    assert len(tb) == 1 and "test_lazy_anomaly.py" in tb[0] and "y = fn(st, x)" in tb[0]


def test_anomaly_off_or_no_nan_check_raises_nothing():
    for ctx in (lambda: warnings.catch_warnings(), lambda: st.autograd.detect_anomaly(check_nan=False)):
        x = st.zeros(3, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with ctx():
                (st.sqrt(x) * 0).sum().backward()
        assert np.isnan(_np(x.grad)).all()
    # finite gradients pass in anomaly mode, with torch's values
    x = st.tensor([1.0, 4.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with st.autograd.detect_anomaly():
            st.sqrt(x).sum().backward()
    assert_close(x.grad, np.array([0.5, 0.25], dtype="float32"))


def test_anomaly_switches_as_torch(torch):
    for lib in (st, torch):
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly(check_nan=False):
                assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        with lib.autograd.set_detect_anomaly(True):
            assert lib.is_anomaly_enabled()
        assert not lib.is_anomaly_enabled()
        lib.autograd.set_detect_anomaly(True)
        assert lib.is_anomaly_enabled()
        lib.set_anomaly_enabled(False)
        assert not lib.is_anomaly_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @st.autograd.detect_anomaly()
        def f(x):
            assert st.is_anomaly_enabled()
            return (st.sqrt(x) * 0).sum()
        x = st.zeros(2, requires_grad=True)
        y = f(x)
        assert not st.is_anomaly_enabled()
        with st.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output"):
                y.backward()


def test_anomaly_compiled_function():
    def f(x, w):
        return (st.sqrt(x) * 0 + x * w).sum()

    cf = st.compile(f)
    w = st.tensor([1.0, 2.0, 3.0])
    x0 = st.ones(3, requires_grad=True)
    f(x0, w).backward()
    x1 = st.ones(3, requires_grad=True)
    cf(x1, w).backward()                     # the first call captures
    assert_close(x1.grad, _np(x0.grad))
    x = st.zeros(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with st.autograd.detect_anomaly():
            y = cf(x, w)
            assert y.grad_fn.name() == "CompiledFunctionBackward"
            with pytest.raises(RuntimeError,
                               match=r"^Function 'CompiledFunctionBackward' returned nan values in its 0th output\.$"):
                y.backward()
            # finite: the same values as eager
            x2 = st.ones(3, requires_grad=True)
            cf(x2, w).backward()
    assert_close(x2.grad, _np(x0.grad))
    assert any(str(m.message).startswith("Error detected in CompiledFunctionBackward") for m in rec)


# ---------------- autograd.Variable ----------------
def test_variable_as_torch(torch):
    from symtrace.autograd import Variable
    TV = torch.autograd.Variable
    for lib, V, mk in ((st, Variable, st.tensor), (torch, TV, torch.tensor)):
        t = mk([1.0, 2.0])
        v = V(t)
        assert type(v) is lib.Tensor and v is not t and not v.requires_grad and v.is_leaf
        v2 = V(t, requires_grad=True)
        assert v2.requires_grad and not t.requires_grad and v2.data_ptr() == t.data_ptr()
        y = v2 * 3
        z = V(y)
        assert z.grad_fn is None and not z.requires_grad
        assert isinstance(t, V) and isinstance(y, V) and not isinstance(3, V) and not isinstance([1.0], V)
        assert tuple(V().shape) == (0,)
    for bad in (3, [1.0]):
        with pytest.raises(TypeError) as te:
            TV(bad)
        with pytest.raises(TypeError) as se:
            Variable(bad)
        assert str(se.value) == str(te.value)
    with pytest.raises(RuntimeError) as te:
        TV(torch.ones(2, dtype=torch.long), requires_grad=True)
    with pytest.raises(RuntimeError) as se:
        Variable(st.ones(2, dtype=st.int64), requires_grad=True)
    assert str(se.value) == str(te.value)
    with pytest.raises(RuntimeError) as te:
        torch.autograd.variable([1.0])
    with pytest.raises(RuntimeError) as se:
        st.autograd.variable([1.0])
    assert str(se.value) == str(te.value)
    # a Variable is differentiated like any leaf
    v = Variable(st.tensor([1.0, 2.0]), requires_grad=True)
    (v * v).sum().backward()
    assert_close(v.grad, np.array([2.0, 4.0], dtype="float32"))


# ---------------- profiler ----------------
SCHEDULES = [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=2),
             dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3), dict(wait=1, warmup=0, active=1),
             dict(wait=3, warmup=1, active=2, skip_first=2, skip_first_wait=1)]


@pytest.mark.parametrize("kw", SCHEDULES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_schedule_as_torch(torch, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s, ts = st.profiler.schedule(**kw), torch.profiler.schedule(**kw)
    assert [s(i).name for i in range(40)] == [ts(i).name for i in range(40)]
    assert [a.name for a in st.profiler.ProfilerAction] == [a.name for a in torch.profiler.ProfilerAction]


def test_schedule_warnings_and_errors(torch):
    with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
        st.profiler.schedule(wait=1, warmup=0, active=1)
    for bad in (dict(wait=-1, warmup=0, active=1), dict(wait=0, warmup=0, active=0),
                dict(wait=0, warmup=1, active=1, repeat=-1)):
        with pytest.raises(Exception) as te:
            torch.profiler.schedule(**bad)
        with pytest.raises(ValueError) as se:
            st.profiler.schedule(**bad)
        assert str(se.value) == str(te.value)
    assert st.profiler.ProfilerActivity.CPU in st.profiler.supported_activities()
    assert {a.name for a in st.profiler.ProfilerActivity} >= {"CPU", "CUDA"}


def test_profile_step_schedule_record_function_and_trace(torch, tmp_path):
    sched = dict(wait=1, warmup=1, active=2, repeat=2)

    def run(lib, mk, log):
        ready = []

        def on_ready(p):
            ready.append(p.step_num)
            if lib is st:
                ready.append(sorted({e.name for e in p.events()}))
                lib.profiler.tensorboard_trace_handler(str(log), worker_name="w")(p)

        x = mk([1.0, 2.0, 3.0])
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                                  schedule=lib.profiler.schedule(**sched), on_trace_ready=on_ready) as p:
            for i in range(9):
                with lib.profiler.record_function(f"iter{i}"):
                    (x + i).exp()
                p.step()
        return ready

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run(st, st.tensor, tmp_path)
        exp = run(torch, torch.tensor, None)
    assert got[0::2] == exp == [4, 8]      # on_trace_ready after each cycle's RECORD_AND_SAVE step
    assert got[1] == ["ProfilerStep#2", "ProfilerStep#3", "iter2", "iter3"]
    assert got[3] == ["ProfilerStep#6", "ProfilerStep#7", "iter6", "iter7"]
    files = sorted(glob.glob(str(tmp_path / "w.*.pt.trace.json")))
    assert len(files) == 2
    doc = json.load(open(files[0]))
    names = [e["name"] for e in doc["traceEvents"]]
    assert sorted(names) == got[1] and all(e["ph"] == "X" and e["dur"] >= 0 for e in doc["traceEvents"])
    assert doc["symtraceKernels"] and all(k["calls"] >= 1 for k in doc["symtraceKernels"])


def test_record_function_decorator_and_plain_profile():
    @st.profiler.record_function("my_fn")
    def fn(x):
        return (x * 2).sum()

    x = st.randn(16)
    fn(x)                                       # no profile: nothing is kept
    with st.profiler.profile() as prof:
        with st.profiler.record_function("block"):
            fn(x)
        fn(x)
    assert [e.name for e in prof.events()] == ["my_fn", "block", "my_fn"]
    ev = prof.events()
    assert ev[1].start_ns <= ev[0].start_ns <= ev[0].end_ns <= ev[1].end_ns
    text = prof.table()
    assert "my_fn" in text and "block" in text and "record_function" in text
    assert sum(r.calls for r in prof.rows) >= 2 and "kernels" in text
    fn(x)
    assert len(prof.events()) == 3


def test_lazy_module_pickle_and_save():
    import io
    import pickle
    m = nn.LazyConv2d(2, 3)
    m2 = pickle.loads(pickle.dumps(m))
    assert type(m2) is nn.LazyConv2d and m2.has_uninitialized_params()
    assert [type(v).__name__ for v in m2.state_dict().values()] == ["UninitializedParameter"] * 2
    x = st.ones(1, 3, 4, 4)
    assert tuple(m2(x).shape) == (1, 2, 2, 2) and type(m2) is nn.Conv2d and not m2._has_hooks
    assert type(m) is nn.LazyConv2d and m.has_uninitialized_params()    # the original is untouched
    buf = io.BytesIO()
    st.save(nn.LazyBatchNorm1d().state_dict(), buf)
    buf.seek(0)
    sd = st.load(buf, weights_only=False)
    assert [type(v).__name__ for v in sd.values()] == ["UninitializedParameter"] * 2 + \
        ["UninitializedBuffer"] * 2 + ["Tensor"]
    buf.seek(0)
    with pytest.raises(Exception, match="UninitializedParameter"):   # not an allowed global, as torch's
        st.load(buf, weights_only=True)
