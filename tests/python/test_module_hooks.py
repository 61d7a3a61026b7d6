# Module forward hooks (torch.nn.Module.register_forward_pre_hook /
# register_forward_hook): order, prepend, with_kwargs, always_call, argument
# and output replacement, removal by handle; eagerly and under
# symtrace.compile, where registering or removing a hook changes what the
# next call runs (the module epoch makes the guards look again).
import numpy as np
import pytest

import symtrace as st

nn = st.nn


def _net():
    st.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_forward_hooks_capture_replace_and_remove(compiled):
    m = _net()
    f = st.compile(m) if compiled else m
    st.reset()
    x = st.randn(4, 6)
    base = _np(m(x))
    np.testing.assert_allclose(_np(f(x)), base)
    feats = []
    h1 = m[1].register_forward_hook(lambda mod, args, out: feats.append(_np(out)))
    h2 = m[2].register_forward_hook(lambda mod, args, out: out * 2)
    np.testing.assert_allclose(_np(f(x)), 2 * base, rtol=1e-6)
    assert len(feats) == 1 and feats[0].shape == (4, 8) and (feats[0] >= 0).all()
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(_np(f(x)), base)
    assert len(feats) == 1
    with m[0].register_forward_pre_hook(lambda mod, args: args[0] * 0):   # a non-tuple is wrapped
        np.testing.assert_allclose(_np(f(x)), _np(m(st.zeros(4, 6))), rtol=1e-6)
    np.testing.assert_allclose(_np(f(x)), base)


def test_order_prepend_and_kwargs(torch):
    calls = {}
    for lib, key in ((nn, "st"), (torch.nn, "torch")):
        log = calls[key] = []

        class M(lib.Module):
            def forward(self, x, scale=1.0):
                log.append(("forward", scale))
                return x * scale

        m = M()
        m.register_forward_pre_hook(lambda mod, a: log.append("pre1"))
        m.register_forward_pre_hook(lambda mod, a: log.append("pre0"), prepend=True)
        m.register_forward_pre_hook(lambda mod, a, kw: (a, {"scale": 3.0}), with_kwargs=True)
        m.register_forward_hook(lambda mod, a, out: log.append("post1"))
        m.register_forward_hook(lambda mod, a, kw, out: log.append(("post0", kw["scale"])),
                                prepend=True, with_kwargs=True)
        t = (st if lib is nn else torch).ones(2)
        out = m(t, scale=2.0)
        log.append(out.tolist())
    assert calls["st"] == calls["torch"]
    assert calls["st"][-1] == [3.0, 3.0]


def test_always_call_runs_when_forward_raises(torch):
    seen = {}
    for lib, key in ((nn, "st"), (torch.nn, "torch")):
        log = seen[key] = []

        class Bad(lib.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Bad()
        m.register_forward_hook(lambda mod, a, out: log.append(("always", out)), always_call=True)
        m.register_forward_hook(lambda mod, a, out: log.append("normal"))
        with pytest.raises(ValueError, match="boom"):
            m((st if lib is nn else torch).ones(1))
    assert seen["st"] == seen["torch"] == [("always", None)]


def test_hooks_leave_state_dict_and_reject_bad_input():
    m = _net()
    keys = list(m.state_dict())
    m.register_forward_hook(lambda *a: None)
    assert list(m.state_dict()) == keys
    with pytest.raises(TypeError):
        m.register_forward_hook(42)
    with pytest.raises(TypeError):
        m.register_full_backward_hook(42)


def test_compiled_graph_count_with_a_hook():
    m = _net()
    m[2].register_forward_hook(lambda mod, args, out: out.relu())
    x = st.randn(3, 6)
    st.reset()
    rep = st.explain(m, x)
    assert rep.graph_count == 1 and rep.graph_break_count == 0, str(rep)
    np.testing.assert_allclose(_np(st.compile(m)(x)), np.maximum(_np(m[2](m[1](m[0](x)))), 0),
                               rtol=1e-6)


def test_compiled_sees_a_hook_table_changed_in_place():
    # m._forward_hooks.clear() bumps no module epoch: the compiled frame
    # watches the table itself (its dict version)
    m = _net()
    x = st.randn(2, 6)
    f = st.compile(m)
    st.reset()
    base = _np(m(x))
    np.testing.assert_allclose(_np(f(x)), base)
    m[2].register_forward_hook(lambda mod, args, out: out + 1.0)
    np.testing.assert_allclose(_np(f(x)), base + 1.0, rtol=1e-6)
    np.testing.assert_allclose(_np(f(x)), base + 1.0, rtol=1e-6)
    m[2]._forward_hooks.clear()
    np.testing.assert_allclose(_np(f(x)), base)


def test_global_module_forward_hooks_as_torch():
    torch = pytest.importorskip("torch")
    from symtrace.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.nn.modules.module import register_module_forward_hook as t_fwd
    from torch.nn.modules.module import register_module_forward_pre_hook as t_pre
    logs = []
    for L, fwd, pre in ((st, register_module_forward_hook, register_module_forward_pre_hook),
                        (torch, t_fwd, t_pre)):
        seen = []
        m = L.nn.Sequential(L.nn.Linear(2, 2), L.nn.ReLU())
        m[0].register_forward_hook(lambda mod, a, o: seen.append("own-" + type(mod).__name__))
        h1 = fwd(lambda mod, a, o: seen.append(type(mod).__name__))
        h2 = pre(lambda mod, a: seen.append("pre-" + type(mod).__name__))
        m(L.ones(1, 2))
        h1.remove()
        h2.remove()
        m(L.ones(1, 2))
        logs.append(seen)
    assert logs[0] == logs[1]


def test_global_module_forward_hook_reaches_compiled_modules():
    from symtrace.nn.modules.module import register_module_forward_hook
    seen = []
    m = st.nn.Sequential(st.nn.Linear(2, 2), st.nn.ReLU())
    c = st.compile(m, backend="interp")
    c(st.ones(1, 2))
    h = register_module_forward_hook(lambda mod, a, o: seen.append(type(mod).__name__))
    c(st.ones(1, 2))
    assert seen == ["Linear", "ReLU", "Sequential"]
    h.remove()
    seen.clear()
    c(st.ones(1, 2))
    assert seen == []
