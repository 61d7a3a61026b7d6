"""symtrace.compile / explain / reset and the frontend knobs (symtrace/_compile.py,
frontend/compile_bind.c)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
from symtrace import _C

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def fresh():
    st.reset()
    yield
    st.reset()


def close(a, b):
    return np.allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5)


def mul_add(x, y):
    """multiply-add"""
    return x * y + 1


def test_function_forms():
    x, y = st.randn(3), st.randn(3)
    c1 = st.compile(mul_add)
    assert isinstance(c1, _C.CompiledFunction)
    assert c1.__wrapped__ is mul_add and c1.__name__ == "mul_add" and c1.__doc__ == "multiply-add"
    assert c1.__qualname__ == "mul_add" and c1.__module__ == __name__
    assert close(c1(x, y), mul_add(x, y))

    @st.compile
    def f(a):
        return a.exp()

    @st.compile()
    def g(a):
        return a.exp()

    @st.compile(backend="interp", fullgraph=True, dynamic=False, mode="default")
    def h(a):
        return a.exp()
    for fn in (f, g, h):
        assert close(fn(x), x.exp())
    assert h.backend == "interp"
    assert c1.backend in ("llvm", "interp", "nvrtc")
    c1.extra = 5                                 # has a __dict__ (functools-friendly)
    assert c1.extra == 5
    assert st.compile(c1).__wrapped__ is mul_add   # compiling again wraps the original


def test_default_backend():
    want = "nvrtc" if st.cuda.is_available() else ("llvm" if _C._fe_backend_available("llvm") else "interp")
    assert st.compile(mul_add).backend == want


def test_method_decoration():
    class Scaler:
        def __init__(self, k):
            self.k = k

        @st.compile(backend="interp")
        def apply(self, x):
            return x * self.k

    x = st.randn(4)
    a, b = Scaler(2.0), Scaler(3.0)
    assert close(a.apply(x), x * 2.0) and close(b.apply(x), x * 3.0)
    assert close(Scaler.apply(a, x), x * 2.0)
    assert close(a.apply(x), x * 2.0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="llvm, nvrtc, interp, eager"):
        st.compile(mul_add, backend="tvm")
    with pytest.raises(ValueError, match="tvm"):
        st.compile(backend="tvm")
    with pytest.raises(ValueError, match="mode"):
        st.compile(mul_add, mode="fastest")
    with pytest.raises(TypeError):
        st.compile(42)
    with pytest.raises(ValueError):
        _C._fe_compiled(mul_add, "nope", False, False)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)
        self.register_buffer("offset", st.ones(2))
        self.tag = "net"

    def forward(self, x):
        return self.fc2(self.fc1(x).relu()) + self.offset

    def helper(self):
        return 42


def test_module_wrapper_keeps_the_module():
    net = Net()
    opt = st.compile(net, backend="interp")
    assert isinstance(opt, st._compile.OptimizedModule) and isinstance(opt, nn.Module)
    assert opt._orig_mod is net
    assert opt.tag == "net" and opt.fc1 is net.fc1 and opt.offset is net.offset
    assert opt.helper() == 42
    assert [n for n, _ in opt.named_parameters()] == [n for n, _ in net.named_parameters()]
    assert all(a is b for a, b in zip(opt.parameters(), net.parameters()))
    assert list(opt.state_dict().keys()) == list(net.state_dict().keys())
    opt.eval()
    assert not net.training and not net.fc1.training
    opt.train()
    assert net.training and net.fc1.training
    opt.tag = "changed"                               # attribute writes reach the original
    assert net.tag == "changed"
    x = st.randn(5, 4)
    assert close(opt(x), net(x))
    assert close(opt.forward(x), net(x))
    sd = {k: v.detach().clone() * 0 for k, v in net.state_dict().items()}
    opt.load_state_dict(sd)
    assert close(net.fc1.weight, st.zeros(8, 4))
    assert "OptimizedModule" in repr(opt) and "Linear" in repr(opt)
    assert st.compile(opt)._orig_mod is net
    import copy
    dup = copy.deepcopy(opt)
    assert isinstance(dup, st._compile.OptimizedModule) and dup._orig_mod is not net
    assert dup.fc1.weight is not net.fc1.weight and close(dup.fc1.weight, net.fc1.weight)
    assert close(dup(x), net(x))


def test_module_results_follow_changes():
    net = Net()
    opt = st.compile(net, backend="interp")
    x = st.randn(3, 4)
    with st.no_grad():
        for _ in range(3):
            assert close(opt(x), net(x))
        net.offset = st.full((2,), 5.0)                # buffer replaced
        assert close(opt(x), net(x))
        net.fc2 = nn.Linear(8, 2)                      # submodule replaced
        assert close(opt(x), net(x))
        net.fc1.weight.data.mul_(0)                    # in place: same objects
        assert close(opt(x), net(x))


class Dropper(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        if self.training:
            return x * self.scale
        return x - self.scale


def test_module_training_flag_and_attribute():
    m = Dropper()
    opt = st.compile(m, backend="interp")
    x = st.randn(4)
    assert close(opt(x), x * 2.0)
    m.eval()
    assert close(opt(x), x - 2.0)
    m.scale = 3.0
    assert close(opt(x), x - 3.0)
    m.train()
    assert close(opt(x), x * 3.0)


def test_explain():
    def two_parts(x):
        y = x.relu() + 1
        v = y.sum().item()
        return mul_add(y, y) * v

    x = st.randn(4)
    out = st.explain(two_parts, x)
    assert close(out.out, two_parts(x))
    assert out.graph_break_count == 1
    br = out.break_reasons[0]
    assert "item" in br.reason and br.filename == __file__
    assert br.lineno == two_parts.__code__.co_firstlineno + 2
    # the graph before the break (relu, add, sum) and the resume function's
    # (mul_add inlined, then * v)
    assert out.graph_count == 2 and out.ops_per_graph[0] == 3, str(out)
    assert any("TENSOR_MATCH" in g for g in out.guards)
    s = str(out)
    assert "Graph Count: 2" in s and "Graph Break Count: 1" in s and "item" in s
    full = st.explain(mul_add, x, x)
    assert full.graph_count == 1 and full.graph_break_count == 0 and full.ops_per_graph == [2]
    assert "StatementIR" in str(full)
    assert close(full.out, mul_add(x, x))


def test_reset_and_stats():
    c = st.compile(mul_add, backend="interp")
    x = st.randn(2)
    c(x, x)
    c(x, x)
    s = _C._fe_stats()
    assert s["translations"] == 1 and s["hits"] == 1
    assert any("mul_add" in k for k in s["codes"])
    st.reset()
    s = _C._fe_stats()
    assert s["translations"] == 0 and s["codes"] == {}
    c(x, x)
    assert _C._fe_stats()["translations"] == 1


def test_config_knobs():
    saved = {k: getattr(st.config, k) for k in ("log", "strict", "cache_limit")}
    try:
        st.config.cache_limit = 7
        assert st.config.cache_limit == 7 and _C._fe_config("cache_limit") == 7
        st.config.strict = True
        assert st.config.strict == 1
        st.config.log = 2
        assert st.config.log == 2
        with pytest.raises(TypeError):
            st.config.log = "loud"
        with pytest.raises(ValueError):
            st.config.cache_limit = -1
        assert {"log", "strict", "cache_limit"} <= set(dir(st.config))
    finally:
        for k, v in saved.items():
            setattr(st.config, k, v)


def test_env_knobs():
    env = dict(os.environ, SYMTRACE_CACHE_LIMIT="5", SYMTRACE_STRICT="1", SYMTRACE_LOG="2",
               PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c",
                          "import symtrace as st; c = st.config; print(c.cache_limit, c.strict, c.log)"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["5", "1", "2"]


def test_log_level_2_prints_graph_and_guards(capfd):
    saved = st.config.log
    try:
        st.config.log = 2
        c = st.compile(mul_add, backend="interp")
        x = st.randn(3)
        c(x, x)
    finally:
        st.config.log = saved
    err = capfd.readouterr().err
    assert "StatementIR" in err and "TENSOR_MATCH" in err and "mul_add" in err


def test_unsupported_interpreter_runs_eagerly(monkeypatch):
    import warnings
    from symtrace import _compile
    monkeypatch.setattr(_C, "_fe_supported", lambda: False)
    monkeypatch.setattr(_compile, "_warned_unsupported", False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c1 = st.compile(mul_add)
        c2 = st.compile(mul_add)
    assert len([x for x in w if "frame hook" in str(x.message)]) == 1
    x = st.randn(3)
    assert close(c1(x, x), mul_add(x, x)) and close(c2(x, x), mul_add(x, x))
    assert c1.__name__ == "mul_add" and not isinstance(c1, _C.CompiledFunction)
