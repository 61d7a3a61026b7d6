"""The PEP 523 frame hook (frontend/eval_frame.c): active only inside a
compiled call and only on that thread, skip rules, per-code cache, cache
limit, graph breaks falling back to plain Python (callees still captured),
exceptions, re-entrancy, and the frame/reference leak test (seed 000)."""
import gc
import sys
import threading

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
from symtrace import _C

pytestmark = pytest.mark.skipif(not _C._fe_supported(), reason="no frame hook on this Python")


@pytest.fixture(autouse=True)
def fresh():
    st.reset()
    saved = {k: getattr(st.config, k) for k in ("log", "strict", "cache_limit")}
    yield
    for k, v in saved.items():
        setattr(st.config, k, v)
    st.reset()


def stats():
    return _C._fe_stats()


def code_stats(fn):
    co = fn.__code__
    key = f"{co.co_qualname} ({co.co_filename}:{co.co_firstlineno})"
    return stats()["codes"].get(key)


def close(a, b):
    return np.allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()), atol=1e-5)


def affine(x, y):
    return x * 2 + y


def breaks(x):
    v = x.sum().item()          # data read: a graph break
    return affine(x, x) + v


def breaks_in_loop(x):
    v = 0.0
    for _ in range(2):
        v += x.sum().item()     # a break inside a loop: the frame runs plain
    return affine(x, x) + v


def gen(x):
    yield x + 1


def uses_gen(x):
    return next(gen(x)) * 3


def test_hook_inactive_outside_compiled_call():
    x, y = st.randn(4), st.randn(4)
    caffine = st.compile(affine, backend="interp")
    before = stats()["frames"]
    for _ in range(3):
        affine(x, y)                      # plain calls are never seen
    assert stats()["frames"] == before
    assert code_stats(affine) is None
    assert close(caffine(x, y), affine(x, y))
    s = stats()
    assert s["translations"] == 1 and s["frames"] == before + 1
    affine(x, y)
    assert stats()["frames"] == before + 1
    assert code_stats(affine)["entries"] == 1


def test_hits_run_from_cache():
    x, y = st.randn(4), st.randn(4)
    caffine = st.compile(affine, backend="interp")
    for _ in range(5):
        assert close(caffine(x, y), affine(x, y))
    s = stats()
    assert s["translations"] == 1 and s["hits"] == 4
    y2 = st.randn(4)                      # new values, same guards: still a hit
    assert close(caffine(x, y2), affine(x, y2))
    assert stats()["hits"] == 5


def test_break_keeps_the_graph_before_it_and_resumes():
    # exact sums: the value read at the break is the same bits eagerly (the
    # first call) and compiled, so the resume function is translated once
    # (a last-bit difference retranslates it: a known limit, xfailed in
    # test_compile_breaks)
    x = st.tensor([0.5, -1.25, 2.0, 3.75])
    cb = st.compile(breaks, backend="interp")
    for _ in range(3):
        assert close(cb(x), breaks(x))
    b = code_stats(breaks)
    assert not b["plain"] and b["entries"] == 1
    resumes = [k for k in stats()["codes"] if "__resume_at_" in k]
    assert len(resumes) == 1 and stats()["codes"][resumes[0]]["entries"] == 1
    assert code_stats(affine) is None           # inlined into the resume function's graph
    s = stats()
    assert s["breaks"] == 1 and s["resumes"] == 1 and s["fallbacks"] == 0
    assert s["translations"] == 2 and s["hits"] == 4   # 2 calls x (frame + resume)


def test_break_in_loop_runs_plain_and_callees_are_captured():
    x = st.randn(4)
    cb = st.compile(breaks_in_loop, backend="interp")
    for _ in range(3):
        assert close(cb(x), breaks_in_loop(x))
    b = code_stats(breaks_in_loop)
    assert b["plain"] and "item" in b["reason"] and "loop" in b["reason"]
    assert code_stats(affine)["entries"] == 1   # the callee, captured on its own
    s = stats()
    assert s["breaks"] == 1 and s["fallbacks"] == 2 and s["hits"] >= 2


def test_generators_are_not_captured():
    x = st.randn(4)
    cg = st.compile(uses_gen, backend="interp")
    assert close(cg(x), uses_gen(x))
    assert code_stats(gen) is None


def test_skip_rules_cover_stdlib_and_symtrace():
    import json
    import os.path

    def calls_stdlib(x):
        json.dumps([1, 2])
        os.path.join("a", "b")
        return x + 1
    c = st.compile(calls_stdlib, backend="interp")
    x = st.randn(2)
    assert close(c(x), x + 1)
    for key in stats()["codes"]:
        assert "json" not in key and "posixpath" not in key and "module.py" not in key


def test_reentrancy_compiled_calls_compiled():
    x, y = st.randn(4), st.randn(4)
    inner = st.compile(affine, backend="interp")

    def outer(x, y):
        return inner(x, y) - 1
    couter = st.compile(outer, backend="interp")
    for _ in range(3):
        assert close(couter(x, y), affine(x, y) - 1)
    frames = stats()["frames"]
    affine(x, y)                # the hook is off again after nested calls ended
    assert stats()["frames"] == frames
    assert close(outer(x, y), affine(x, y) - 1)   # plain outer, compiled inner
    assert stats()["frames"] == frames + 1


def boom(x):
    y = x + 1
    raise ValueError(f"boom {y.shape[0]}")


def test_exception_propagates_and_state_restored():
    x = st.randn(3)
    cboom = st.compile(boom, backend="interp")
    for _ in range(2):
        with pytest.raises(ValueError, match="boom 3"):
            cboom(x)
    frames = stats()["frames"]
    affine(x, x)
    assert stats()["frames"] == frames      # not active after the exception
    c = st.compile(affine, backend="interp")
    assert close(c(x, x), affine(x, x))     # and still works


def test_exception_in_callee_of_hit_path():
    calls = []

    def check(x, n):
        calls.append(n)
        if n > 2:
            raise KeyError(n)
        return x * n
    c = st.compile(check, backend="interp")
    x = st.randn(2)
    assert close(c(x, 1), x)
    with pytest.raises(KeyError):
        c(x, 5)
    assert close(c(x, 1), x)


def test_threads_do_not_capture_each_other():
    started, go = threading.Event(), threading.Event()
    out = {}

    def other_thread_fn(x):
        return x - 3

    def waits(x):
        started.set()
        go.wait(10)
        return affine(x, x)
    cw = st.compile(waits, backend="interp")
    x = st.randn(4)

    def run():
        out["r"] = cw(x)
    t = threading.Thread(target=run)
    t.start()
    assert started.wait(10)
    # the hook is installed now (thread t is inside a compiled call), but not active here
    for _ in range(5):
        r = other_thread_fn(x)
    go.set()
    t.join(10)
    assert close(out["r"], affine(x, x))
    assert close(r, x - 3)
    assert code_stats(other_thread_fn) is None
    # waits breaks at the event calls; affine is captured after them (in the
    # resume function's graph)
    assert any("waits.__resume_at_" in k for k in stats()["codes"]), stats()["codes"]


def test_compiled_calls_in_two_threads():
    x = st.randn(8)
    c = st.compile(affine, backend="interp")
    errs = []

    def work():
        try:
            for _ in range(200):
                assert close(c(x, x), affine(x, x))
        except Exception as e:  # pragma: no cover - reported below
            errs.append(e)
    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert not errs
    frames = stats()["frames"]
    affine(x, x)
    assert stats()["frames"] == frames


def test_cache_limit_falls_back_with_log(capsys):
    st.config.cache_limit = 2
    st.config.log = 0                    # logged whatever the level: compilation stops there
    c = st.compile(affine, backend="interp")
    for n in (2, 3, 4, 5):
        x = st.randn(n)
        assert close(c(x, x), affine(x, x))
    cs = code_stats(affine)
    assert cs["entries"] == 2 and cs["plain"] and "cache limit" in cs["reason"]
    err = capsys.readouterr().err
    assert "cache limit" in err and "affine" in err
    x = st.randn(2)
    assert close(c(x, x), affine(x, x))     # plain now, still right


def test_log_level_1_reports_breaks(capfd):
    st.config.log = 1
    cb = st.compile(breaks, backend="interp")
    cb(st.randn(3))
    err = capfd.readouterr().err
    assert "graph break" in err and "item" in err and __file__ in err


def test_reset_drops_entries_and_plain_marks():
    x = st.randn(4)
    cb = st.compile(breaks_in_loop, backend="interp")
    cb(x)
    assert code_stats(breaks_in_loop)["plain"]
    st.reset()
    assert stats()["codes"] == {} and stats()["translations"] == 0
    cb(x)
    assert stats()["breaks"] == 1          # translated (and broken) again


def test_reset_with_entries_holding_the_last_reference_to_code():
    # entries of one code guard functions whose code objects have entries of
    # their own; freeing them during reset must not disturb the walk
    x = st.randn(3)
    for round_ in range(3):
        fns = []
        for i in range(20):
            ns = {}
            exec(f"def helper(t):\n    return t * {i + 1}\n"
                 f"def user(t):\n    return helper(t) + 1\n", ns)
            fns.append(ns)
            c = st.compile(ns["user"], backend="interp")
            assert close(c(x), x * (i + 1) + 1)
            inner = st.compile(ns["helper"], backend="interp")
            assert close(inner(x), x * (i + 1))
        del fns, ns, c, inner
        gc.collect()
        st.reset()
        gc.collect()
        assert stats()["codes"] == {}


def test_fullgraph_raises_with_reason_and_location():
    def branchy(x):
        if x.sum() > 0:
            return x + 1
        return x - 1
    c = st.compile(branchy, backend="interp", fullgraph=True)
    with pytest.raises(RuntimeError) as ei:
        c(st.ones(3))
    msg = str(ei.value)
    assert "data-dependent" in msg and __file__ in msg
    assert str(branchy.__code__.co_firstlineno + 1) in msg
    frames = stats()["frames"]
    branchy(st.ones(3))
    assert stats()["frames"] == frames


def test_strict_config_raises():
    st.config.strict = 1
    c = st.compile(breaks, backend="interp")
    with pytest.raises(RuntimeError, match="item"):
        c(st.randn(3))
    st.config.strict = 0
    st.reset()
    x = st.randn(3)
    assert close(c(x), breaks(x))


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x).relu() + 1


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _frames():
    return sum(1 for o in gc.get_objects() if type(o).__name__ == "frame")


def test_leak_10000_calls_module():
    m = Small()
    cm = st.compile(m, backend="interp")
    x = st.randn(4, 8)
    with st.no_grad():
        ref = m(x)
        for _ in range(20):
            assert close(cm(x), ref)
        gc.collect()
        n0, f0, mem0, rss0 = len(gc.get_objects()), _frames(), st.memory.memory_allocated(), _rss()
        rc0, rcm = sys.getrefcount(x), sys.getrefcount(m)
        h0 = stats()["hits"]
        for _ in range(10000):
            cm(x)
        gc.collect()
        assert stats()["hits"] - h0 >= 10000      # hits run from C (the module is captured)
        assert len(gc.get_objects()) - n0 <= 10
        assert _frames() <= f0
        assert st.memory.memory_allocated() == mem0
        after = sys.getrefcount(x), sys.getrefcount(m)
        assert after == (rc0, rcm)
        assert _rss() - rss0 < 1 << 20


def test_leak_training_steps():
    # compiled forward + backward (a tape node per hit): nothing accumulates
    m = Small()
    cm = st.compile(m, backend="interp")
    x = st.randn(4, 8)
    for _ in range(3):
        m.zero_grad()
        cm(x).sum().backward()
        g = m.lin.weight.grad.numpy().copy()
        m.zero_grad()
        m(x).sum().backward()
        assert np.allclose(g, m.lin.weight.grad.numpy(), atol=1e-5)
    m.zero_grad()
    gc.collect()
    n0, mem0 = len(gc.get_objects()), st.memory.memory_allocated()
    for _ in range(1000):
        m.zero_grad()
        cm(x).sum().backward()
    m.zero_grad()
    gc.collect()
    assert len(gc.get_objects()) - n0 <= 10
    assert st.memory.memory_allocated() <= mem0
    assert stats()["hits"] >= 1000


def test_leak_30000_hits():
    # every call is a cache hit run from C without evaluating the frame: the
    # hook must leave the frame cleared and popped (3.12) or to its caller (3.11)
    c = st.compile(affine, backend="interp")
    x, y = st.randn(16), st.randn(16)
    for _ in range(20):
        c(x, y)
    gc.collect()
    h0 = stats()["hits"]
    n0, mem0, rss0 = len(gc.get_objects()), st.memory.memory_allocated(), _rss()
    rcx, rcf = sys.getrefcount(x), sys.getrefcount(affine)
    for _ in range(30000):
        c(x, y)
    gc.collect()
    assert stats()["hits"] - h0 == 30000
    assert len(gc.get_objects()) - n0 <= 10
    assert st.memory.memory_allocated() == mem0
    after = sys.getrefcount(x), sys.getrefcount(affine)
    assert after == (rcx, rcf)
    assert _rss() - rss0 < 1 << 20          # an unpopped frame is > 100 bytes a call
    # the thread's frame stack is intact: a plain call after many hits sees its caller
    assert sys._getframe(0).f_code.co_name == "test_leak_30000_hits"


def test_reset_releases_cached_references():
    m = Small()
    w = m.lin.weight
    cm = st.compile(m, backend="interp")
    x = st.randn(2, 8)
    gc.collect()
    rc_w, rc_lin = sys.getrefcount(w), sys.getrefcount(m.lin)
    with st.no_grad():
        for _ in range(5):
            assert close(cm(x), m(x))
    st.reset()
    gc.collect()
    after = sys.getrefcount(w), sys.getrefcount(m.lin)    # (not inside assert: pytest holds temps)
    assert after == (rc_w, rc_lin)


def test_cached_module_children_follow_setattr():
    m = Small()
    cm = st.compile(m, backend="interp")
    x = st.randn(2, 8)
    with st.no_grad():
        for _ in range(3):
            assert close(cm(x), m(x))
        m.lin.weight = nn.Parameter(st.randn(8, 8))     # same meta: no recompile, new value
        t0 = stats()["translations"]
        for _ in range(3):
            assert close(cm(x), m(x))
        assert stats()["translations"] == t0
        m.lin = nn.Linear(8, 8)
        for _ in range(3):
            assert close(cm(x), m(x))
        m.lin.weight.requires_grad_(False)               # meta epoch: full check, recompile
        assert close(cm(x), m(x))


def test_hit_overhead_of_a_12_layer_encoder():
    # guards + dispatch of a hit, without the compiled graph's own run time
    # (issue 6's goal: under 10 us)
    enc = nn.Sequential(*[nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0,
                                                     batch_first=True) for _ in range(12)])
    enc.eval()
    opt = st.compile(enc, backend="interp")
    x = st.randn(1, 2, 16)
    with st.no_grad():
        ref = enc(x)
        assert close(opt(x), ref)
        assert stats()["translations"] == 1
        _C._fe_config("timing", 1)
        batches = []
        try:
            # the best batch: the machine may be loaded (CI's shared 2-core
            # host once had ten batches in a row at 10.2 us where this one
            # measures 3-6), so take many short batches spread over ~1 s
            for _ in range(40):
                h0, c0, n0 = stats()["timing_ns"]
                for _ in range(20):
                    opt(x)
                h1, c1, n1 = stats()["timing_ns"]
                assert n1 - n0 == 20
                batches.append(((h1 - h0) - (c1 - c0)) / 20 / 1e3)
        finally:
            _C._fe_config("timing", 0)
    assert stats()["translations"] == 1
    per_hit_us = min(batches)
    print(f"12-layer encoder: guards + dispatch {per_hit_us:.2f} us per hit (best of 40 batches)")
    assert per_hit_us < 10


def test_reset_during_a_guard_check():
    # a DICT_KEYS guard compares keys with their Python __eq__, which here
    # calls symtrace.reset() while the entry is in use: it is freed after
    calls = {"n": 0}

    class Key:
        def __init__(self, v):
            self.v = v

        def __hash__(self):
            return hash(self.v)

        def __eq__(self, o):
            calls["n"] += 1
            if calls["n"] == 2:
                st.reset()
            return isinstance(o, Key) and o.v == self.v

    def sized(x, d):
        return x * len(d)
    c = st.compile(sized, backend="interp")
    x = st.randn(3)
    for _ in range(6):
        assert close(c(x, {Key(1): 0}), x)
    assert calls["n"] >= 2
    assert code_stats(sized)["entries"] == 1
    assert code_stats(Key.__eq__) is None      # run by a guard: never captured
