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


@pytest.mark.parametrize("fn,per_call", [("Logs", ["fwd", "bwd"]),
                                          ("NotesViaHelper", ["fwd", "bwd", "bwd"])])
def test_a_logging_function_logs_on_every_compiled_call(fn, per_call):
    # (NotesViaHelper logs through helpers it calls: the scan reads them too)
    st.reset()
    LOG.clear()
    cls = globals()[fn]

    def f(x):
        return cls.apply(x * 1) + 1

    cf = st.compile(f)
    for k in range(3):
        x = st.ones(2, requires_grad=True)
        cf(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        assert LOG == per_call * (k + 1)
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


# ---- helpers a Function calls are read too (a side effect one call away is still one)
def _note(msg):
    LOG.append(msg)


def _note_twice(msg):
    _note(msg)
    _note(msg)


def _count(n):
    # recursive: the scan must not loop
    return 0 if n <= 0 else 1 + _count(n - 1)


BETA = 2.0


def _beta_scale(x):
    return x * BETA


def _triple(x):
    return x * 3.0


class NotesViaHelper(st.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        _note("fwd")
        return x * 2

    @staticmethod
    def backward(ctx, g):
        _note_twice("bwd")
        return g * 2


class ScalesViaHelper(st.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        _count(3)
        return _beta_scale(x)

    @staticmethod
    def backward(ctx, g):
        return _beta_scale(g)


def test_a_helper_with_a_side_effect_is_found():
    r = side_effect(NotesViaHelper)
    assert "calls LOG.append()" in r and "_note" in r and "reached from forward" in r
    # two calls away, in backward
    ns = {"st": st, "_note_twice": _note_twice}
    exec("class G(st.autograd.Function):\n"
         "    @staticmethod\n"
         "    def forward(ctx, x):\n"
         "        return x\n"
         "    @staticmethod\n"
         "    def backward(ctx, g):\n"
         "        _note_twice('b')\n"
         "        return g\n", ns)
    r = side_effect(ns["G"])
    assert "calls LOG.append()" in r and "reached from _note_twice" in r, r
    assert side_effect(ScalesViaHelper) is None      # a clean helper, a recursive one


def test_a_helper_reached_through_a_module_attribute_is_found():
    import types
    mod = types.ModuleType("user_utils")
    exec("SEEN = []\n"
         "def remember(x):\n"
         "    SEEN.append(x)\n"
         "    return x\n", mod.__dict__)
    ns = {"st": st, "utils": mod}
    exec("class F(st.autograd.Function):\n"
         "    @staticmethod\n"
         "    def forward(ctx, x):\n"
         "        return utils.remember(x) * 2\n"
         "    @staticmethod\n"
         "    def backward(ctx, g):\n"
         "        return g * 2\n", ns)
    assert "calls SEEN.append()" in side_effect(ns["F"])


def test_library_functions_are_not_read():
    ns = {"st": st}
    exec("class F(st.autograd.Function):\n"
         "    @staticmethod\n"
         "    def forward(ctx, x):\n"
         "        return st.nn.functional.gelu(x) + st.where(x > 0, x, x * 0)\n"
         "    @staticmethod\n"
         "    def backward(ctx, g):\n"
         "        return g\n", ns)
    assert side_effect(ns["F"]) is None


def test_globals_a_helper_reads_and_the_helper_itself_are_guarded():
    global BETA, _beta_scale
    st.reset()

    def f(x):
        return ScalesViaHelper.apply(x * 1) + 1

    cf = st.compile(f)
    keep = _beta_scale
    try:
        for b in (2.0, 3.0, 3.0, 2.0):
            BETA = b
            x = st.ones(2, requires_grad=True)
            y = cf(x)
            y.sum().backward()
            assert y.tolist() == [1.0 + b] * 2 and x.grad.tolist() == [b] * 2
        assert st._C._fe_stats()["breaks"] == 0
        graphs = st._C._fe_stats()["graphs"]
        assert graphs == 2
        _beta_scale = _triple                # the helper rebound: read anew
        x = st.ones(2, requires_grad=True)
        y = cf(x)
        y.sum().backward()
        assert y.tolist() == [4.0, 4.0] and x.grad.tolist() == [3.0, 3.0]
        assert st._C._fe_stats()["graphs"] == graphs + 1
    finally:
        BETA = 2.0
        _beta_scale = keep
