# symtrace.backends, symtrace.jit, symtrace.distributed (one process), nn.parallel's
# DistributedDataParallel / DataParallel, utils.data.DistributedSampler and symtrace.hub:
# defaults, setter effects and errors against torch's, values of the world-size-1
# collectives and of DDP's forward and gradients against torch's (gloo, one process, a file
# store), DistributedSampler's indices against torch's, and a DDP training step under
# symtrace.compile against eager.
import copy
import io
import os
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.distributed as sdist
import symtrace.nn as nn
from symtrace.utils.data import DistributedSampler
from conftest import assert_close

# torch's own deprecation warnings (torch.jit, the *_tensor collectives)
pytestmark = [pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:`torch.distributed.:FutureWarning")]

try:
    import torch as _torch
except ImportError:  # the 3.12 venv: the torch comparisons skip
    _torch = None
needs_torch = pytest.mark.skipif(_torch is None, reason="torch is not installed")


def _raises(fn):
    """(exception type, message) of fn(), or None when it returns."""
    try:
        fn()
    except Exception as e:   # noqa: BLE001  (compared against torch's)
        return type(e), str(e)
    return None


def _same_error(st_fn, th_fn, *, message=True):
    """symtrace raises what torch raises (type, and the message with torch -> symtrace)."""
    te, se = _raises(th_fn), _raises(st_fn)
    assert te is not None and se is not None, (te, se)
    assert se[0] is te[0], (se, te)
    if message:
        assert se[1] == te[1].replace("torch.", "symtrace."), (se[1], te[1])


@pytest.fixture
def restore_flags():
    """Restores symtrace's (and torch's, when present) backend flags after a test."""
    b = st.backends
    saved = (dict(b.cudnn._flags), st.get_float32_matmul_precision(), {k: list(v) for k, v in
             b.cuda.matmul._red.items()}, dict(b.cuda._sdp), dict(b.mkldnn._flags))
    if _torch is not None:
        tb = _torch.backends
        tsaved = (tb.cudnn.enabled, tb.cudnn.benchmark, tb.cudnn.deterministic, tb.cudnn.allow_tf32,
                  _torch.get_float32_matmul_precision(), tb.cuda.flash_sdp_enabled(),
                  tb.cuda.mem_efficient_sdp_enabled(), tb.cuda.math_sdp_enabled(), tb.cuda.cudnn_sdp_enabled(),
                  tb.cuda.fp16_bf16_reduction_math_sdp_allowed(), tb.mkldnn.enabled, tb.mkldnn.deterministic,
                  tb.cuda.matmul.allow_fp16_accumulation)
    yield
    b.cudnn._flags.update(saved[0])
    st.set_float32_matmul_precision(saved[1])
    for k, v in saved[2].items():
        b.cuda.matmul._red[k][:] = v
    b.cuda._sdp.update(saved[3])
    b.mkldnn._flags.update(saved[4])
    b.cuda.matmul._fp16_acc[0] = False
    if _torch is not None:
        (tb.cudnn.enabled, tb.cudnn.benchmark, tb.cudnn.deterministic, tb.cudnn.allow_tf32) = tsaved[:4]
        _torch.set_float32_matmul_precision(tsaved[4])
        tb.cuda.enable_flash_sdp(tsaved[5])
        tb.cuda.enable_mem_efficient_sdp(tsaved[6])
        tb.cuda.enable_math_sdp(tsaved[7])
        tb.cuda.enable_cudnn_sdp(tsaved[8])
        tb.cuda.allow_fp16_bf16_reduction_math_sdp(tsaved[9])
        tb.mkldnn.enabled, tb.mkldnn.deterministic = tsaved[10], tsaved[11]
        tb.cuda.matmul.allow_fp16_accumulation = tsaved[12]
        tb.cuda.matmul.allow_fp16_reduced_precision_reduction = True
        tb.cuda.matmul.allow_bf16_reduced_precision_reduction = True


# ------------------------------------------------------------------ backends
def _backend_state(t):
    b = t.backends
    m = b.cuda.matmul
    return {
        "cudnn": (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32,
                  b.cudnn.is_available(), b.cudnn.version(), b.cudnn.benchmark_limit, b.cudnn.depthwise_kernel),
        "matmul": (m.allow_tf32, m.allow_bf16_reduced_precision_reduction, m.allow_fp16_reduced_precision_reduction,
                   m.allow_fp16_reduced_precision_reduction_split_k, m.allow_bf16_reduced_precision_reduction_split_k,
                   m.allow_fp16_accumulation),
        "sdp": (b.cuda.flash_sdp_enabled(), b.cuda.mem_efficient_sdp_enabled(), b.cuda.math_sdp_enabled(),
                b.cuda.cudnn_sdp_enabled(), b.cuda.fp16_bf16_reduction_math_sdp_allowed()),
        "linalg": str(b.cuda.preferred_linalg_library()),
        "mps": (b.mps.is_available(), b.mps.is_built()),
        "mkldnn": (b.mkldnn.enabled, b.mkldnn.deterministic),
        "opt_einsum": (b.opt_einsum.is_available(), b.opt_einsum.enabled, b.opt_einsum.strategy),
        "cpu": b.cpu.get_cpu_capability(),
        "precision": t.get_float32_matmul_precision(),
    }


def test_backends_defaults(restore_flags):
    s = _backend_state(st)
    assert s["cudnn"] == (True, False, False, True, False, None, None, "auto")
    assert s["matmul"] == (False, True, True, True, True, False)
    assert s["sdp"] == (True, True, True, True, False)
    assert s["linalg"] == "_LinalgBackend.Default"
    assert s["mps"] == (False, False)
    assert s["opt_einsum"] == (False, False, None)
    assert s["cpu"] in ("AVX512", "AVX2", "DEFAULT")
    assert st.backends.cuda.is_built() is True
    assert st.backends.mkldnn.is_available() is False and st.backends.openmp.is_available() is False
    import symtrace.backends.cudnn as cudnn          # importable as a module, as torch's
    assert cudnn.enabled is True and cudnn is st.backends.cudnn


@needs_torch
def test_backends_defaults_match_torch(restore_flags):
    # torch here: CPU build (no cuDNN, no MPS), opt_einsum not installed
    assert _backend_state(st) == _backend_state(_torch)


def test_cpu_capability_from_cpuinfo():
    flags = st.backends.cpu._cpu_flags()
    cap = st.backends.cpu.get_cpu_capability()
    if {"avx512f", "avx512vl", "avx512bw", "avx512dq", "fma"} <= flags:
        assert cap == "AVX512"
    elif {"avx2", "fma"} <= flags:
        assert cap == "AVX2"
    else:
        assert cap == "DEFAULT"
    if _torch is not None and "ATEN_CPU_CAPABILITY" not in os.environ:
        assert cap == _torch.backends.cpu.get_cpu_capability()


def _apply(t, steps):
    """Runs the (attribute path, value) steps on t's backends; a path ending in () is called."""
    for path, value in steps:
        obj = t
        parts = path.split(".")
        for p in parts[:-1]:
            obj = getattr(obj, p)
        if parts[-1].endswith("()"):
            getattr(obj, parts[-1][:-2])(value)
        else:
            setattr(obj, parts[-1], value)


@needs_torch
@pytest.mark.parametrize("steps", [
    [("backends.cudnn.benchmark", True), ("backends.cudnn.deterministic", True)],
    [("backends.cudnn.enabled", False), ("backends.cudnn.allow_tf32", False)],
    [("backends.cuda.matmul.allow_tf32", True)],
    [("backends.cuda.matmul.allow_tf32", True), ("backends.cuda.matmul.allow_tf32", False)],
    [("set_float32_matmul_precision()", "medium")],
    [("set_float32_matmul_precision()", "high")],
    [("backends.cuda.matmul.allow_tf32", True), ("set_float32_matmul_precision()", "highest")],
    [("set_float32_matmul_precision()", "medium"), ("set_float32_matmul_precision()", "highest")],
    [("backends.cuda.matmul.allow_bf16_reduced_precision_reduction", (False, False))],
    [("backends.cuda.matmul.allow_fp16_reduced_precision_reduction", False)],
    [("backends.cuda.matmul.allow_fp16_reduced_precision_reduction", [True])],
    [("backends.cuda.matmul.allow_fp16_accumulation", True)],
    [("backends.cuda.enable_flash_sdp()", False), ("backends.cuda.enable_math_sdp()", False)],
    [("backends.cuda.enable_mem_efficient_sdp()", False), ("backends.cuda.enable_cudnn_sdp()", False)],
    [("backends.cuda.allow_fp16_bf16_reduction_math_sdp()", True)],
    [("backends.mkldnn.enabled", False), ("backends.mkldnn.deterministic", True)],
    [("backends.cuda.preferred_linalg_library()", "default")],
])
def test_backend_setters_match_torch(steps, restore_flags):
    _apply(st, steps)
    _apply(_torch, steps)
    assert _backend_state(st) == _backend_state(_torch)


@needs_torch
@pytest.mark.parametrize("path,value", [
    ("backends.cudnn.benchmark", 1), ("backends.cudnn.enabled", "yes"), ("backends.cudnn.deterministic", None),
    ("backends.cuda.matmul.allow_tf32", 1), ("backends.cuda.matmul.allow_tf32", (True,)),
    ("backends.cuda.matmul.allow_fp16_reduced_precision_reduction", "x"),
    ("backends.cuda.matmul.allow_fp16_reduced_precision_reduction", []),
    ("backends.cuda.matmul.allow_bf16_reduced_precision_reduction", (True, True, True)),
    ("backends.cuda.matmul.allow_bf16_reduced_precision_reduction", (1,)),
    ("backends.cuda.matmul.allow_bf16_reduced_precision_reduction", (True, False)),
    ("backends.cuda.matmul.allow_fp16_accumulation", 0),
    ("backends.cuda.matmul.no_such_flag", True),
    ("backends.cuda.preferred_linalg_library()", "foo"), ("backends.cuda.preferred_linalg_library()", 3),
    ("backends.cuda.enable_math_sdp()", "x"),
])
def test_backend_setter_errors_match_torch(path, value, restore_flags):
    _same_error(lambda: _apply(st, [(path, value)]), lambda: _apply(_torch, [(path, value)]))
    assert _backend_state(st) == _backend_state(_torch)      # a refused value changes nothing


def test_backend_setter_errors(restore_flags):
    b = st.backends
    with pytest.raises(RuntimeError, match="set_benchmark_cudnn expects a bool, but got int"):
        b.cudnn.benchmark = 1
    with pytest.raises(RuntimeError, match="set_sdp_use_flash expects a bool, but got str"):
        b.cuda.enable_flash_sdp("x")
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        b.cuda.matmul.foo
    with pytest.raises(RuntimeError, match="MAGMA"):
        b.cuda.preferred_linalg_library("magma")
    with pytest.raises(ValueError, match="opt_einsum is not available"):
        b.opt_einsum.enabled = True
    with pytest.raises(ValueError, match="opt_einsum is not available"):
        b.opt_einsum.strategy = "greedy"
    assert b.opt_einsum.enabled is False and b.opt_einsum.strategy is None
    assert b.cudnn.benchmark is False and st.get_float32_matmul_precision() == "highest"


def test_flags_context_managers(restore_flags):
    b = st.backends
    b.cudnn.benchmark = True
    with b.cudnn.flags(enabled=False, deterministic=True):
        # torch's flags() defaults: benchmark=False, allow_tf32=True
        assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32) == \
            (False, False, True, True)
    assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic) == (True, True, False)
    with pytest.raises(RuntimeError):
        with b.cudnn.flags(benchmark=3):
            pass
    assert b.cudnn.benchmark is True
    st.backends.disable_global_flags()
    try:
        with pytest.raises(RuntimeError, match="not allowed to set symtrace.backends.cudnn flags"):
            b.cudnn.benchmark = False
        with b.cudnn.flags(benchmark=False):       # the context manager still may
            assert b.cudnn.benchmark is False
        assert b.cudnn.benchmark is True
    finally:
        st.backends._state["allow_nonbracketed_mutation"] = True
    with pytest.warns(FutureWarning, match="sdp_kernel"):
        with b.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False) as ctx:
            assert ctx == {}
            assert (b.cuda.flash_sdp_enabled(), b.cuda.mem_efficient_sdp_enabled(), b.cuda.math_sdp_enabled(),
                    b.cuda.cudnn_sdp_enabled()) == (False, False, True, True)
    assert b.cuda.flash_sdp_enabled() and b.cuda.mem_efficient_sdp_enabled()


@needs_torch
def test_flags_context_managers_match_torch(restore_flags):
    for t in (st, _torch):
        t.backends.cudnn.benchmark = True
    inside = []
    for t in (st, _torch):
        with t.backends.cudnn.flags(enabled=False, deterministic=True):
            inside.append(_backend_state(t)["cudnn"])
    assert inside[0] == inside[1]
    assert _backend_state(st) == _backend_state(_torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for t in (st, _torch):
            with t.backends.cuda.sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False):
                inside.append(_backend_state(t)["sdp"])
    assert inside[2] == inside[3]
    assert _backend_state(st) == _backend_state(_torch)


# ------------------------------------------------------------------ jit
class _Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.fc(x).relu()


def test_jit_trace_runs_example_once_and_returns_input():
    st.manual_seed(0)
    m = _Counter()
    x = st.randn(4, 3)
    assert st.jit.trace(m, x) is m and m.calls == 1
    assert st.jit.trace(m, (x,)) is m and m.calls == 2
    assert st.jit.trace(m, example_kwarg_inputs={"x": x}) is m and m.calls == 3
    assert st.jit.trace_module(m, {"forward": x}) is m and m.calls == 4
    seen = []

    def f(a, b):
        seen.append((a, b))
        return a * b, [a + b]
    assert st.jit.trace(f, (x, x)) is f and len(seen) == 1 and seen[0][0] is x
    assert st.jit.script(m) is m and st.jit.script(f) is f
    assert_close(st.jit.trace(m, x)(x).detach(), m(x).detach().numpy())
    assert not isinstance(m, st.jit.ScriptModule) and not isinstance(f, st.jit.ScriptFunction)
    assert issubclass(st.jit.ScriptModule, nn.Module)


@needs_torch
@pytest.mark.parametrize("case", ["int_input", "str_output", "missing_arg", "list_input"])
def test_jit_trace_input_output_checks(case):
    def run(t):
        x = t.ones(2)
        if case == "int_input":
            return t.jit.trace(lambda a, b: a + b, (x, 3))
        if case == "str_output":
            return t.jit.trace(lambda a: "out", x)
        if case == "missing_arg":
            def h(a, b):
                return a + b
            return t.jit.trace(h, (x,))
        return t.jit.trace(lambda a, b: a - b, [x, x * 2])
    if case == "list_input":
        assert _raises(lambda: run(st)) is None and _raises(lambda: run(_torch)) is None
    else:
        _same_error(lambda: run(st), lambda: run(_torch))


def test_jit_decorators_and_helpers():
    def g(x):
        return x + 1
    assert st.jit.ignore(g) is g and st.jit.ignore(drop=True)(g) is g
    assert st.jit.unused(g) is g and st.jit.export(g) is g
    assert st.jit.is_scripting() is False and st.jit.is_tracing() is False
    v = []
    assert st.jit.annotate(list, v) is v
    from typing import Final
    assert st.jit.Final is Final
    x = st.arange(4.0)
    fut = st.jit.fork(g, x)
    assert fut.done()
    assert_close(st.jit.wait(fut), np.arange(4.0) + 1)
    assert_close(fut.wait(), np.arange(4.0) + 1)
    m = _Counter()
    assert m.training
    with pytest.raises(RuntimeError, match="eval mode"):
        st.jit.freeze(m)
    assert st.jit.optimize_for_inference(m) is m and not m.training
    assert st.jit.freeze(m) is m
    with pytest.raises(RuntimeError, match="nn.Module"):
        st.jit.freeze(g)


def test_jit_save_load_roundtrip(tmp_path):
    st.manual_seed(1)
    m = _Counter()
    p = str(tmp_path / "m.pt")
    st.jit.save(m, p, _extra_files={"meta.txt": "hello"})
    extra = {"meta.txt": ""}
    m2 = st.jit.load(p, _extra_files=extra)
    assert extra == {"meta.txt": b"hello"}
    assert isinstance(m2, _Counter) and m2 is not m
    x = st.randn(2, 3)
    assert_close(m2(x).detach(), m(x).detach().numpy())
    buf = io.BytesIO()
    st.save(m, buf)                      # a module saved by symtrace.save loads too
    assert isinstance(st.jit.load(buf), _Counter)
    st.save(m.state_dict(), str(tmp_path / "sd.pt"))
    with pytest.raises(RuntimeError, match="not a module saved by symtrace.jit.save"):
        st.jit.load(str(tmp_path / "sd.pt"))
    with pytest.raises(ValueError, match="does not exist"):
        st.jit.load(str(tmp_path / "nope.pt"))
    with pytest.raises(RuntimeError, match="expects an nn.Module"):
        st.jit.save(lambda x: x, str(tmp_path / "f.pt"))


@needs_torch
def test_jit_load_refuses_torchscript_archive(tmp_path):
    p = str(tmp_path / "ts.pt")
    _torch.jit.save(_torch.jit.script(_torch.nn.Linear(2, 2)), p)
    with pytest.raises(RuntimeError, match="TorchScript archive"):
        st.jit.load(p)
    _same_error(lambda: st.jit.load(str(tmp_path / "none.pt")), lambda: _torch.jit.load(str(tmp_path / "none.pt")))


# ------------------------------------------------------------------ distributed
@pytest.fixture
def st_group():
    sdist.init_process_group("gloo", world_size=1, rank=0)
    yield
    if sdist.is_initialized():
        sdist.destroy_process_group()


@pytest.fixture(scope="module")
def th_group(tmp_path_factory):
    """torch's default process group: gloo, one process, a file store (no network)."""
    if _torch is None:
        pytest.skip("torch is not installed")
    import torch.distributed as tdist
    store = tmp_path_factory.mktemp("store") / "file"
    tdist.init_process_group("gloo", init_method=f"file://{store}", world_size=1, rank=0)
    yield tdist
    tdist.destroy_process_group()


_NOT_INIT = "Default process group has not been initialized, please make sure to call init_process_group."


@pytest.mark.parametrize("call", ["get_rank", "get_world_size", "barrier", "get_backend", "all_reduce", "broadcast",
                                  "new_group"])
def test_dist_not_initialized_errors(call):
    assert not sdist.is_initialized() and sdist.is_available()
    args = {"all_reduce": (st.ones(2),), "broadcast": (st.ones(2), 0)}.get(call, ())
    with pytest.raises(ValueError) as e:
        getattr(sdist, call)(*args)
    assert str(e.value) == _NOT_INIT
    if _torch is not None:
        import torch.distributed as tdist
        if not tdist.is_initialized():
            targs = {"all_reduce": (_torch.ones(2),), "broadcast": (_torch.ones(2), 0)}.get(call, ())
            _same_error(lambda: getattr(sdist, call)(*args), lambda: getattr(tdist, call)(*targs))
    with pytest.raises(ValueError, match="not been initialized"):
        nn.parallel.DistributedDataParallel(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="not been initialized"):
        DistributedSampler(range(4))


def test_dist_init_rules():
    with pytest.raises(RuntimeError, match="world_size=2"):
        sdist.init_process_group("gloo", world_size=2, rank=0)
    with pytest.raises(RuntimeError, match="Invalid rank 1"):
        sdist.init_process_group("gloo", world_size=1, rank=1)
    assert not sdist.is_initialized()
    sdist.init_process_group("nccl", init_method="env://", world_size=1, rank=0)
    try:
        assert sdist.is_initialized() and sdist.get_rank() == 0 and sdist.get_world_size() == 1
        assert sdist.get_backend() == "nccl" and sdist.group.WORLD is not None
        with pytest.raises(ValueError, match="trying to initialize the default process group twice!"):
            sdist.init_process_group("gloo", world_size=1, rank=0)
        g = sdist.new_group([0])
        assert sdist.get_rank(g) == 0 and sdist.get_world_size(g) == 1
        with pytest.raises(ValueError, match="less or equal to the world size"):
            sdist.new_group([0, 1])
        sdist.destroy_process_group(g)
    finally:
        sdist.destroy_process_group()
    assert not sdist.is_initialized() and sdist.group.WORLD is None
    with pytest.raises(ValueError):
        sdist.destroy_process_group()


def _collectives(t, dist):
    """Every collective on one rank, on fixed inputs: the tensors and objects they leave."""
    a = t.tensor([[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]])
    out = {}
    for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
        x = a.clone()
        if op == "AVG" and dist is not sdist:      # gloo refuses AVG; one rank's average is the value
            out[op] = x
            continue
        assert dist.all_reduce(x, op=getattr(dist.ReduceOp, op)) is None
        out[op] = x
    x = a.clone()
    w = dist.all_reduce(x, async_op=True)
    assert w.wait() and w.is_completed()
    out["async"] = x
    x = a.clone()
    dist.broadcast(x, 0)
    out["broadcast"] = x
    x = a.clone()
    dist.reduce(x, dst=0)
    out["reduce"] = x
    lst = [t.zeros(2, 3)]
    dist.all_gather(lst, a)
    out["all_gather"] = lst[0]
    o = t.zeros(2, 3)
    dist.all_gather_into_tensor(o, a)
    out["all_gather_into_tensor"] = o
    if dist is sdist:     # the stacked output form (NCCL's; torch's gloo takes the concatenated one only)
        o = t.zeros(1, 2, 3)
        dist.all_gather_into_tensor(o, a)
        out["all_gather_into_tensor_stacked"] = o
    o = t.zeros(2, 3)
    dist.reduce_scatter_tensor(o, a)
    out["reduce_scatter_tensor"] = o
    g = [t.zeros(2, 3)]
    dist.gather(a, g, dst=0)
    out["gather"] = g[0]
    o = t.zeros(2, 3)
    dist.scatter(o, [a * 2], src=0)
    out["scatter"] = o
    objs = [None]
    payload = {"k": [1, 2], "s": "x"}
    dist.all_gather_object(objs, payload)
    assert objs == [payload] and objs[0] is not payload
    ol = [{"x": 2}, 3]
    dist.broadcast_object_list(ol, src=0)
    assert ol == [{"x": 2}, 3]
    dist.barrier()
    return out


def test_dist_collectives_values(st_group):
    out = _collectives(st, sdist)
    a = np.array([[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]], np.float32)
    for k, v in out.items():
        assert_close(v, (a * 2 if k == "scatter" else a).reshape(tuple(v.shape)), msg=k)


@needs_torch
def test_dist_collectives_match_torch(st_group, th_group):
    so, to = _collectives(st, sdist), _collectives(_torch, th_group)
    assert set(so) - set(to) == {"all_gather_into_tensor_stacked"}
    for k in to:
        assert_close(so[k], to[k], msg=k)
    assert sdist.get_rank() == th_group.get_rank() and sdist.get_world_size() == th_group.get_world_size()
    assert sdist.get_backend() == th_group.get_backend()
    assert (repr(sdist.ReduceOp.SUM), repr(sdist.ReduceOp.MAX)) == \
        (repr(th_group.ReduceOp.SUM), repr(th_group.ReduceOp.MAX))


@needs_torch
@pytest.mark.parametrize("case", ["not_tensor", "gather_list", "scatter_list", "new_group"])
def test_dist_errors_match_torch(case, st_group, th_group):
    def run(t, dist):
        if case == "not_tensor":
            return dist.all_reduce([1.0])
        if case == "gather_list":
            return dist.gather(t.ones(2), None, dst=0)
        if case == "scatter_list":
            return dist.scatter(t.ones(2), None, src=0)
        return dist.new_group([0, 1])
    te, se = _raises(lambda: run(_torch, th_group)), _raises(lambda: run(st, sdist))
    assert se[0] is te[0]
    assert se[1].replace("symtrace.Tensor", "torch.Tensor") == te[1]


def test_dist_size_errors(st_group):
    with pytest.raises(RuntimeError, match=r"invalid tensor size at index 0 \(expected \(2\), got \(3\)\)"):
        sdist.all_gather([st.zeros(3)], st.ones(2))
    with pytest.raises(RuntimeError, match="expected length 1, got 2"):
        sdist.all_gather([st.zeros(2), st.zeros(2)], st.ones(2))
    with pytest.raises(RuntimeError, match="world_size"):
        sdist.all_gather_into_tensor(st.zeros(3), st.ones(2))
    with pytest.raises(RuntimeError, match="invalid root rank: 1"):
        sdist.broadcast(st.ones(2), 1)


# ------------------------------------------------------------------ DDP / DataParallel
class _MLP(nn.Module):
    def __init__(self, lib):
        super().__init__()
        self.fc1 = lib.nn.Linear(5, 7)
        self.norm = lib.nn.BatchNorm1d(7)
        self.fc2 = lib.nn.Linear(7, 3)

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)).tanh())


def _th_mlp():
    class M(_torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = _torch.nn.Linear(5, 7)
            self.norm = _torch.nn.BatchNorm1d(7)
            self.fc2 = _torch.nn.Linear(7, 3)

        def forward(self, x):
            return self.fc2(self.norm(self.fc1(x)).tanh())
    return M()


def test_ddp_wraps_module(st_group):
    st.manual_seed(0)
    m = _MLP(st)
    ddp = nn.parallel.DistributedDataParallel(m)
    assert ddp.module is m
    assert list(ddp.state_dict()) == ["module." + k for k in m.state_dict()]
    assert [n for n, _ in ddp.named_parameters()] == ["module." + n for n, _ in m.named_parameters()]
    assert ddp.require_backward_grad_sync
    with ddp.no_sync():
        assert not ddp.require_backward_grad_sync
    assert ddp.require_backward_grad_sync
    ddp.eval()
    assert not m.training
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        nn.parallel.DistributedDataParallel(nn.ReLU())
    with pytest.raises(ValueError, match="device_ids and output_device arguments only work"):
        nn.parallel.DistributedDataParallel(nn.Linear(2, 2), device_ids=[0])
    dp = nn.DataParallel(m)
    assert nn.parallel.DataParallel is nn.DataParallel and dp.module is m
    assert list(dp.state_dict()) == list(ddp.state_dict())
    x = st.randn(4, 5)
    assert_close(dp(x).detach(), m(x).detach().numpy())


@needs_torch
def test_ddp_matches_torch_ddp(st_group, th_group):
    from torch.nn.parallel import DistributedDataParallel as TDDP
    st.manual_seed(3)
    sm = _MLP(st)
    tm = _th_mlp()
    tm.load_state_dict({k: _torch.from_numpy(v.detach().numpy().copy()) for k, v in sm.state_dict().items()})
    sddp, tddp = nn.parallel.DistributedDataParallel(sm), TDDP(tm)
    assert list(sddp.state_dict()) == list(tddp.state_dict())
    assert list(nn.DataParallel(sm).state_dict()) == list(_torch.nn.DataParallel(tm).state_dict())
    rng = np.random.default_rng(0)
    for step in range(2):
        xa = rng.standard_normal((6, 5)).astype(np.float32)
        xs, xt = st.tensor(xa).requires_grad_(True), _torch.from_numpy(xa.copy()).requires_grad_(True)
        ctx_s = sddp.no_sync() if step == 1 else _nullctx()
        ctx_t = tddp.no_sync() if step == 1 else _nullctx()
        with ctx_s:
            ys = sddp(xs)
            (ys * ys).sum().backward()
        with ctx_t:
            yt = tddp(xt)
            (yt * yt).sum().backward()
        assert_close(ys.detach(), yt.detach(), rtol=1e-5, atol=1e-6)
        assert_close(xs.grad, xt.grad, rtol=1e-4, atol=1e-5)
    for (n, ps), (_, pt) in zip(sddp.named_parameters(), tddp.named_parameters()):
        assert_close(ps.grad, pt.grad, rtol=1e-4, atol=1e-5, msg=n)
    for (n, bs), (_, bt) in zip(sddp.named_buffers(), tddp.named_buffers()):
        assert_close(bs, bt, rtol=1e-5, atol=1e-6, msg=n)


class _nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@needs_torch
def test_ddp_constructor_errors_match_torch(st_group, th_group):
    from torch.nn.parallel import DistributedDataParallel as TDDP
    _same_error(lambda: nn.parallel.DistributedDataParallel(nn.ReLU()), lambda: TDDP(_torch.nn.ReLU()))
    te = _raises(lambda: TDDP(_torch.nn.Linear(2, 2), device_ids=[0]))
    se = _raises(lambda: nn.parallel.DistributedDataParallel(nn.Linear(2, 2), device_ids=[0]))
    assert se[0] is te[0] and se[1].split(", and module")[0] == te[1].split(", and module")[0]


def test_ddp_training_step_compiled_matches_eager(st_group):
    st.manual_seed(5)
    base = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 4))
    me = nn.parallel.DistributedDataParallel(copy.deepcopy(base))
    mc = nn.parallel.DistributedDataParallel(copy.deepcopy(base))
    oe = st.optim.SGD(me.parameters(), lr=0.05, momentum=0.9)
    oc = st.optim.SGD(mc.parameters(), lr=0.05, momentum=0.9)

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    st.reset()
    cstep = st.compile(step)
    rng = np.random.default_rng(2)
    for i in range(3):
        x = st.tensor(rng.standard_normal((5, 6)).astype(np.float32))
        y = st.tensor(rng.standard_normal((5, 4)).astype(np.float32))
        le = step(me, oe, x, y)
        lc = cstep(mc, oc, x, y)
        np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-5, err_msg=f"step {i}")
    for (n, pe), (_, pc) in zip(me.named_parameters(), mc.named_parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
    assert all(n.startswith("module.") for n in mc.state_dict())
    # DDP's forward is inlined into the caller's graph, as a layer's: one graph, no break
    e = st.explain(lambda a, b: nn.functional.mse_loss(mc(a), b), x, y)
    assert e.graph_count == 1 and e.graph_break_count == 0, str(e)
    np.testing.assert_allclose(e.out.item(), nn.functional.mse_loss(me(x), y).item(), rtol=1e-5)


# ------------------------------------------------------------------ DistributedSampler
_SAMPLER_CASES = [(10, 3, 0, False), (10, 3, 2, False), (10, 3, 1, True), (10, 3, 2, True), (7, 2, 1, False),
                  (2, 5, 4, False), (2, 5, 3, False), (12, 4, 3, True), (1, 1, 0, False), (9, 4, 0, True)]


def _sampler_expected(n, replicas, rank, drop_last, order=None):
    """torch's index rule, written out: pad (repeat the start) or drop the tail, then stride."""
    idx = list(range(n)) if order is None else list(order)
    if drop_last and n % replicas:
        num = -(-(n - replicas) // replicas)
    else:
        num = -(-n // replicas)
    total = num * replicas
    if drop_last:
        idx = idx[:total]
    else:
        while len(idx) < total:
            idx += idx[:total - len(idx)]
    return idx[rank:total:replicas]


@pytest.mark.parametrize("n,replicas,rank,drop_last", _SAMPLER_CASES)
def test_distributed_sampler_unshuffled(n, replicas, rank, drop_last):
    s = DistributedSampler(list(range(n)), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
    got = list(s)
    assert got == _sampler_expected(n, replicas, rank, drop_last) and len(s) == len(got)
    if _torch is not None:
        from torch.utils.data.distributed import DistributedSampler as TDS
        t = TDS(list(range(n)), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        assert got == list(t) and len(s) == len(t) and s.total_size == t.total_size


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (3, 4, False)])
def test_distributed_sampler_shuffled(n, replicas, drop_last):
    ranks = [DistributedSampler(range(n), num_replicas=replicas, rank=r, seed=7, drop_last=drop_last)
             for r in range(replicas)]
    g = st.Generator()
    g.manual_seed(7)
    perm = st.randperm(n, generator=g).tolist()
    for r, s in enumerate(ranks):
        assert list(s) == _sampler_expected(n, replicas, r, drop_last, perm)
        assert list(s) == list(s)                      # same epoch: same order
    # the ranks together cover the (padded or truncated) permutation
    merged = sorted(i for s in ranks for i in s)
    assert merged == sorted(_sampler_expected(n, 1, 0, False, perm)[:ranks[0].total_size] if drop_last else
                            [i for r in range(replicas) for i in _sampler_expected(n, replicas, r, False, perm)])
    for s in ranks:
        s.set_epoch(3)
    g.manual_seed(10)
    perm3 = st.randperm(n, generator=g).tolist()
    assert list(ranks[0]) == _sampler_expected(n, replicas, 0, drop_last, perm3)
    if _torch is not None:   # the same structure as torch's; the permutation is symtrace's own
        from torch.utils.data.distributed import DistributedSampler as TDS
        t = TDS(range(n), num_replicas=replicas, rank=0, seed=7, drop_last=drop_last)
        assert len(t) == len(ranks[0]) and t.total_size == ranks[0].total_size


def test_distributed_sampler_from_group_and_errors(st_group):
    s = DistributedSampler(range(5), shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (1, 0, [0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(5), num_replicas=3, rank=3)
    loader = st.utils.data.DataLoader(st.utils.data.TensorDataset(st.arange(10.0)), batch_size=2,
                                      sampler=DistributedSampler(range(10), num_replicas=2, rank=1, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[1.0, 3.0], [5.0, 7.0], [9.0]]


@needs_torch
def test_distributed_sampler_errors_match_torch():
    from torch.utils.data.distributed import DistributedSampler as TDS
    _same_error(lambda: DistributedSampler(range(5), num_replicas=2, rank=-1),
                lambda: TDS(range(5), num_replicas=2, rank=-1))


# ------------------------------------------------------------------ hub
def test_hub_dirs_and_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(st.hub, "_hub_dir", [None])
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert st.hub.get_dir() == str(tmp_path / "th" / "hub")
    if _torch is not None:
        import torch.hub as thub
        monkeypatch.setattr(thub, "_hub_dir", None)
        assert st.hub.get_dir() == thub.get_dir()
        monkeypatch.delenv("TORCH_HOME")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert st.hub.get_dir() == thub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
    st.hub.set_dir(str(tmp_path / "hubdir"))
    assert st.hub.get_dir() == str(tmp_path / "hubdir")
    url = "https://download.example.org/models/tiny-abc123.pth"
    with pytest.raises(RuntimeError, match="no network access"):
        st.hub.load_state_dict_from_url(url)
    with pytest.raises(RuntimeError, match="no network access"):
        st.hub.download_url_to_file(url, str(tmp_path / "x.pth"))
    with pytest.raises(RuntimeError, match="no network access"):
        st.hub.load("pytorch/vision", "resnet18")
    st.manual_seed(0)
    m = nn.Linear(3, 2)
    os.makedirs(tmp_path / "hubdir" / "checkpoints")
    st.save(m.state_dict(), str(tmp_path / "hubdir" / "checkpoints" / "tiny-abc123.pth"))
    sd = st.hub.load_state_dict_from_url(url)
    assert list(sd) == ["weight", "bias"]
    assert_close(sd["weight"], m.weight.detach().numpy())
    st.save(m.state_dict(), str(tmp_path / "other.pth"))
    sd2 = st.hub.load_state_dict_from_url(url, model_dir=str(tmp_path), file_name="other.pth", weights_only=True)
    assert_close(sd2["bias"], m.bias.detach().numpy())
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "hubconf.py").write_text("dependencies = []\n\ndef double(k):\n    return 2 * k\n")
    assert st.hub.load(str(tmp_path / "repo"), "double", 21, source="local") == 42
