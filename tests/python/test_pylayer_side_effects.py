# A custom autograd.Function whose forward or backward has Python side effects
# (appends to a list from outside, stores a global, prints) inside
# symtrace.compile: the capture runs forward and backward once, for real, so the
# side effects happened on the first call only and cached calls skipped them.
# Such a Function is now a graph break (symtrace/autograd/_effects.py reads its
# bytecode; frontend/tr_calls.c breaks before the call) and runs eagerly on
# every call, as TorchDynamo graph-breaks on it. Clean Functions stay in the graph.
import pytest

import symtrace as st
from symtrace.autograd._effects import side_effect

LOG = []
CFG = {"scale": 2.0}


class Holder:
    hist = []


class Logs(st.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        LOG.append("fwd")
        return x * 2

    @staticmethod
    def backward(ctx, g):
        LOG.append("bwd")
        return g * 2


class Clean(st.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.k = CFG["scale"]          # reading a global is no side effect
        buf = {}
        buf["y"] = x * ctx.k         # nor writing an object made inside
        return buf["y"]

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.k


def _fn(body):
    ns = {"st": st, "LOG": LOG, "CFG": CFG, "Holder": Holder}
    exec("class F(st.autograd.Function):\n"
         "    @staticmethod\n"
         "    def forward(ctx, x):\n"
         f"        {body}\n"
         "        return x * 2\n"
         "    @staticmethod\n"
         "    def backward(ctx, g):\n"
         "        return g * 2\n", ns)
    return ns["F"]


@pytest.mark.parametrize("body,found", [
    ("LOG.append(1)", "calls LOG.append()"),
    ("CFG['scale'] = 3", "writes an item of 'CFG'"),
    ("Holder.hist.append(1)", "calls Holder.hist.append()"),
    ("print('x')", "calls print()"),
    ("global LOG; LOG = []", "stores the global 'LOG'"),
    ("x.tag = 1", "sets the attribute 'tag' of 'x'"),
])
def test_side_effects_found(body, found):
    assert found in side_effect(_fn(body))


@pytest.mark.parametrize("body", [
    "pass", "ctx.save_for_backward(x); ctx.k = 2", "d = {}; d['a'] = 1",
    "y = st.zeros(3); y[0] = 1", "x[0] = 1", "ctx.s = CFG['scale']",
    "l = [v * 2 for v in range(3)]", "st.add(x, x)",
])
def test_clean_code_is_not_flagged(body):
    assert side_effect(_fn(body)) is None


def test_a_logging_function_logs_on_every_compiled_call():
    st.reset()
    LOG.clear()

    def f(x):
        return Logs.apply(x * 1) + 1

    cf = st.compile(f)
    for k in range(3):
        x = st.ones(2, requires_grad=True)
        cf(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        assert LOG == ["fwd", "bwd"] * (k + 1)
    assert st._C._fe_stats()["breaks"] == 1


def test_a_clean_function_stays_in_one_graph():
    st.reset()

    def f(x):
        return Clean.apply(x * 1) + 1

    cf = st.compile(f)
    for _ in range(3):
        x = st.ones(2, requires_grad=True)
        assert cf(x).tolist() == [3.0, 3.0]
        cf(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
    stats = st._C._fe_stats()
    assert stats["breaks"] == 0 and stats["graphs"] == 1


ALPHA = 1.0


class Reverse(st.autograd.Function):
    # gradient reversal scaled by a module global (a schedule changes it)
    @staticmethod
    def forward(ctx, x):
        return x * ALPHA

    @staticmethod
    def backward(ctx, g):
        return -ALPHA * g


def test_globals_a_function_reads_are_guarded():
    global ALPHA
    st.reset()

    def f(x):
        return Reverse.apply(x * 1) + 1

    cf = st.compile(f)
    try:
        for a in (1.0, 2.0, 2.0, 0.5):
            ALPHA = a
            x = st.ones(2, requires_grad=True)
            y = cf(x)
            y.sum().backward()
            assert y.tolist() == [1.0 + a] * 2
            assert x.grad.tolist() == [-a] * 2
        stats = st._C._fe_stats()
        assert stats["graphs"] == 3 and stats["breaks"] == 0
    finally:
        ALPHA = 1.0


MASK = st.tensor([1.0, 0.0])


class Masked(st.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * MASK

    @staticmethod
    def backward(ctx, g):
        return g * MASK


def test_a_global_tensor_rebound_is_read_anew():
    global MASK
    st.reset()

    def f(x):
        return Masked.apply(x * 1)

    cf = st.compile(f)
    try:
        for m in ([1.0, 0.0], [0.0, 1.0], [0.0, 1.0]):
            MASK = st.tensor(m)
            x = st.ones(2, requires_grad=True)
            y = cf(x)
            y.sum().backward()
            assert y.tolist() == m and x.grad.tolist() == m
    finally:
        MASK = st.tensor([1.0, 0.0])


def test_apply_under_a_trace_runs_a_logging_function_once_and_fails_the_trace():
    # Function.apply reached from code the translator runs for real (no bytecode
    # check before it): the trace fails with the reason, the Function runs eagerly once
    LOG.clear()
    x = st.ones(2, requires_grad=True)
    st._C._trace_begin()
    y = Logs.apply(x * 1)
    with pytest.raises(RuntimeError, match="Python side effect"):
        st._C._trace_end((y,))
    assert LOG == ["fwd"]
    y.sum().backward()
    assert LOG == ["fwd", "bwd"] and x.grad.tolist() == [2.0, 2.0]
