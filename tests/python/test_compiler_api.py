# symtrace.compiler (torch.compiler's names): disable() keeps a function and
# everything it calls out of graphs (a graph break at the call, the call run
# as Python exactly once per call), is_compiling() is True in a graph and
# False as Python.
import numpy as np
import pytest

import symtrace as st


def test_disable_breaks_at_the_call_and_runs_it_once():
    calls = []

    @st.compiler.disable
    def side(x):
        calls.append(float(x.sum()))
        return x * 2

    def f(x):
        return side(x.relu()) + 1

    x = st.tensor([1.0, -2.0, 3.0])
    st.reset()
    cf = st.compile(f)
    for _ in range(3):
        np.testing.assert_allclose(cf(x).numpy(), [3.0, 1.0, 7.0])
    assert calls == [4.0, 4.0, 4.0]
    rep = st.explain(f, x)
    assert rep.graph_break_count == 1, str(rep)
    assert "disabled with symtrace.compiler.disable" in rep.break_reasons[0].reason


def test_disable_is_recursive():
    seen = []

    def inner(x):
        seen.append(st.compiler.is_compiling())
        return x + 1

    @st.compiler.disable(reason="host-side logging")
    def outer(x):
        return inner(x) * 3

    def f(x):
        return outer(x) - 1

    x = st.ones(2)
    st.reset()
    out = st.compile(f)(x)
    np.testing.assert_allclose(out.numpy(), [5.0, 5.0])
    assert seen == [False]          # inner ran as Python, not translated
    assert outer._symtrace_disabled == "host-side logging"
    assert st.compiler.disable(outer) is outer


def test_disable_on_a_module_method():
    class M(st.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = st.nn.Linear(3, 3)
            self.count = 0

        @st.compiler.disable
        def stats(self, h):
            self.count += 1
            return h

        def forward(self, x):
            return self.stats(self.lin(x)).sum()

    m = M()
    x = st.randn(2, 3)
    st.reset()
    cm = st.compile(m)
    assert cm(x).item() == pytest.approx(m(x).item(), rel=1e-6)
    assert m.count == 2


def test_is_compiling():
    def f(x):
        if st.compiler.is_compiling():
            return x * 10
        return x

    x = st.ones(2)
    assert st.compiler.is_compiling() is False
    np.testing.assert_allclose(f(x).numpy(), [1.0, 1.0])
    st.reset()
    np.testing.assert_allclose(st.compile(f)(x).numpy(), [10.0, 10.0])
    assert st.compiler.is_dynamo_compiling is st.compiler.is_compiling


def test_bad_input():
    with pytest.raises(TypeError, match="not callable"):
        st.compiler.disable(42)
