# Module full backward hooks (torch.nn.Module.register_full_backward_hook /
# register_full_backward_pre_hook), against torch: the same models with the
# same weights and the same hooks on both sides; the gradients each hook
# sees, the order of the calls, what replacing grad_input / grad_output does
# to the parameters' .grad, handles, prepend, non-tensor and
# non-differentiable inputs, tuple outputs, the errors, and symtrace.compile
# (the hooked call is a graph break there: hooks run with the real
# gradients on every backward).
import copy
import io
import warnings

import numpy as np
import pytest

import symtrace as st

nn = st.nn

TOL = dict(rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- helpers
def _arr(g):
    return None if g is None else np.array(g.detach().numpy())


class Rec:
    """Hooks that log (name, kind, gradients as numpy) and may return something."""

    def __init__(self):
        self.log = []

    def full(self, name, ret=None):
        def hook(mod, grad_input, grad_output):
            self.log.append((name, "full", [_arr(g) for g in grad_input],
                             [_arr(g) for g in grad_output]))
            return ret(grad_input, grad_output) if ret else None
        return hook

    def pre(self, name, ret=None):
        def hook(mod, grad_output):
            self.log.append((name, "pre", [_arr(g) for g in grad_output]))
            return ret(grad_output) if ret else None
        return hook

    def kinds(self):
        return [e[:2] for e in self.log]


def assert_same_log(a, b):
    assert [e[:2] for e in a] == [e[:2] for e in b]
    for ea, eb in zip(a, b):
        for ga, gb in zip(ea[2:], eb[2:]):
            assert len(ga) == len(gb), (ea[:2], len(ga), len(gb))
            for u, v in zip(ga, gb):
                assert (u is None) == (v is None), (ea[:2], u, v)
                if u is not None:
                    assert u.shape == v.shape
                    np.testing.assert_allclose(u, v, **TOL)


def _lib_nn(lib):
    return lib.nn


def _net_classes(lib):
    nn_ = _lib_nn(lib)

    class Block(nn_.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn_.Linear(4, 4)
            self.act = nn_.Tanh()

        def forward(self, x):
            return self.act(self.fc(x)) + x

    class Net(nn_.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn_.Linear(3, 4)
            self.block = Block()
            self.out = nn_.Linear(4, 2)

        def forward(self, x):
            return self.out(self.block(self.inp(x)))

    return Net


def _same_weights(sm, tm, torch):
    with torch.no_grad():
        for (n1, p1), (n2, p2) in zip(sm.named_parameters(), tm.named_parameters()):
            assert n1 == n2
            p2.copy_(torch.from_numpy(p1.detach().numpy().copy()))


def _pair(torch, make=None):
    """The same module in symtrace and torch, with symtrace's weights."""
    make = make or (lambda lib: _net_classes(lib)())
    st.manual_seed(0)
    sm = make(st)
    tm = make(torch)
    _same_weights(sm, tm, torch)
    return sm, tm


_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((2, 3)).astype(np.float32)
W = _RNG.standard_normal((2, 2)).astype(np.float32)


def _inputs(torch, requires_grad=True, x=X):
    xs = st.tensor(x.copy(), requires_grad=requires_grad)
    xt = torch.tensor(x.copy(), requires_grad=requires_grad)
    return xs, xt


def _step(f, x, w, lib):
    (f(x) * lib.tensor(w)).sum().backward()


def _grads(m):
    return {n: _arr(p.grad) for n, p in m.named_parameters()}


def assert_same_grads(sm, tm):
    gs, gt = _grads(sm), _grads(tm)
    assert gs.keys() == gt.keys()
    for n in gs:
        assert (gs[n] is None) == (gt[n] is None), n
        if gs[n] is not None:
            np.testing.assert_allclose(gs[n], gt[n], err_msg=n, **TOL)


def _hook_all(m, rec, subs, **kw):
    """A pre hook and a full hook on each named submodule (names as in named_modules)."""
    mods = dict(m.named_modules())
    handles = []
    for name in subs:
        handles.append(mods[name].register_full_backward_pre_hook(rec.pre(name), **kw))
        handles.append(mods[name].register_full_backward_hook(rec.full(name), **kw))
    return handles


MODES = pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])


def _maybe_compile(m, compiled):
    if compiled:
        st.reset()
        return st.compile(m)
    return m


# ---------------------------------------------------------------- values and order
@MODES
def test_values_and_order_across_nested_modules(torch, compiled):
    sm, tm = _pair(torch)
    subs = ["", "inp", "block", "block.fc", "block.act", "out"]
    rs, rt = Rec(), Rec()
    _hook_all(sm, rs, subs)
    _hook_all(tm, rt, subs)
    xs, xt = _inputs(torch)
    f = _maybe_compile(sm, compiled)
    for _ in range(2):   # the second compiled call runs the cached graphs
        rs.log.clear(), rt.log.clear()
        sm.zero_grad(), tm.zero_grad()
        xs.grad = xt.grad = None
        _step(f, xs, W, st)
        _step(tm, xt, W, torch)
        # pre hook then full hook per module, outermost output first
        assert rs.kinds() == rt.kinds() == [
            ("", "pre"), ("out", "pre"), ("out", "full"), ("block", "pre"), ("block.act", "pre"),
            ("block.act", "full"), ("block.fc", "pre"), ("block.fc", "full"), ("block", "full"),
            ("inp", "pre"), ("inp", "full"), ("", "full")]
        assert_same_log(rs.log, rt.log)
        assert_same_grads(sm, tm)
        np.testing.assert_allclose(_arr(xs.grad), _arr(xt.grad), **TOL)
    # grad_output of `out` is the loss weight; grad_input of the whole net is x.grad
    np.testing.assert_allclose(rs.log[1][2][0], W, **TOL)
    np.testing.assert_allclose(rs.log[-1][2][0], _arr(xt.grad), **TOL)


@MODES
def test_full_hook_replacing_grad_input_changes_upstream_grads(torch, compiled):
    sm, tm = _pair(torch)
    rs, rt = Rec(), Rec()
    for m, r in ((sm, rs), (tm, rt)):
        m.block.register_full_backward_hook(r.full("block", lambda gi, go: (gi[0] * 3.0,)))
        m.inp.register_full_backward_hook(r.full("inp"))
    xs, xt = _inputs(torch)
    _step(_maybe_compile(sm, compiled), xs, W, st)
    _step(tm, xt, W, torch)
    assert_same_log(rs.log, rt.log)
    assert_same_grads(sm, tm)
    # what `inp` sees as grad_output is three times what `block` handed back
    np.testing.assert_allclose(rs.log[1][3][0], 3.0 * rs.log[0][2][0], **TOL)
    # and the grads below block changed against a run without the hook
    sm2, _ = _pair(torch)
    xs2, _ = _inputs(torch)
    _step(sm2, xs2, W, st)
    np.testing.assert_allclose(_arr(sm.inp.weight.grad), 3.0 * _arr(sm2.inp.weight.grad), **TOL)
    np.testing.assert_allclose(_arr(sm.out.weight.grad), _arr(sm2.out.weight.grad), **TOL)


@MODES
def test_pre_hook_replacing_grad_output_changes_module_grads(torch, compiled):
    sm, tm = _pair(torch)
    rs, rt = Rec(), Rec()
    for m, r in ((sm, rs), (tm, rt)):
        m.block.register_full_backward_pre_hook(r.pre("block", lambda go: (go[0] * -0.5,)))
        m.block.register_full_backward_hook(r.full("block"))
        m.block.fc.register_full_backward_pre_hook(r.pre("block.fc"))
    xs, xt = _inputs(torch)
    _step(_maybe_compile(sm, compiled), xs, W, st)
    _step(tm, xt, W, torch)
    assert_same_log(rs.log, rt.log)
    # the full hook of block gets the replaced grad_output
    np.testing.assert_allclose(rs.log[2][3][0], -0.5 * rs.log[0][2][0], **TOL)
    assert_same_grads(sm, tm)
    np.testing.assert_allclose(_arr(xs.grad), _arr(xt.grad), **TOL)


def test_hook_returning_none_grads(torch):
    # a full hook returning (None,) stops the gradient of the inputs; a pre hook
    # returning (None,) skips the module's backward (its parameters get no grad)
    for kind in ("full", "pre"):
        sm, tm = _pair(torch)
        for m in (sm, tm):
            if kind == "full":
                m.block.register_full_backward_hook(lambda mod, gi, go: (None,))
            else:
                m.block.register_full_backward_pre_hook(lambda mod, go: (None,))
        xs, xt = _inputs(torch)
        _step(sm, xs, W, st)
        _step(tm, xt, W, torch)
        assert_same_grads(sm, tm)
        assert sm.inp.weight.grad is None if kind == "full" else sm.block.fc.weight.grad is None
        assert sm.out.weight.grad is not None


# ---------------------------------------------------------------- handles and order
def test_prepend_order_and_handles(torch):
    logs = {}
    handles = {}
    for lib in (st, torch):
        log = logs[lib.__name__] = []
        m = lib.nn.Linear(3, 2)
        hs = handles[lib.__name__] = {}
        for name in ("a", "b"):
            hs["full" + name] = m.register_full_backward_hook(
                lambda mod, gi, go, name=name: log.append("full" + name))
            hs["pre" + name] = m.register_full_backward_pre_hook(
                lambda mod, go, name=name: log.append("pre" + name))
        hs["full0"] = m.register_full_backward_hook(lambda mod, gi, go: log.append("full0"), prepend=True)
        hs["pre0"] = m.register_full_backward_pre_hook(lambda mod, go: log.append("pre0"), True)
        x = lib.ones(1, 3, requires_grad=True)
        m(x).sum().backward()
        log.append("|")
        hs["fulla"].remove()
        with hs["preb"]:
            m(x).sum().backward()
        log.append("|")
        m(x).sum().backward()
        log.append("|")
        for h in hs.values():
            h.remove()
        h.remove()   # twice: nothing
        m(x).sum().backward()
        assert m.weight.grad is not None
    assert logs["symtrace"] == logs["torch"] == [
        "pre0", "prea", "preb", "full0", "fulla", "fullb", "|",
        "pre0", "prea", "preb", "full0", "fullb", "|",
        "pre0", "prea", "full0", "fullb", "|"]


def test_hooks_are_taken_when_forward_runs(torch):
    # registered after forward: not called by that backward; removed after
    # forward: still called (torch lists the hooks at forward)
    logs = {}
    for lib in (st, torch):
        log = logs[lib.__name__] = []
        m = lib.nn.Linear(3, 2)
        x = lib.ones(2, 3, requires_grad=True)
        y = m(x)
        h = m.register_full_backward_hook(lambda mod, gi, go: log.append(1))
        y.sum().backward()
        y = m(x)
        h.remove()
        y.sum().backward()
        y = m(x)
        y.sum().backward()
        log.append("end")
    assert logs["symtrace"] == logs["torch"] == [1, "end"]


def test_no_hooks_left_means_the_plain_call():
    m = nn.Linear(3, 2)
    assert m._has_hooks is False and type(m._backward_hooks).__name__ == "OrderedDict"
    h1 = m.register_full_backward_hook(lambda *a: None)
    h2 = m.register_forward_hook(lambda *a: None)
    assert m._has_hooks is True and len(m._backward_hooks) == 1
    h1.remove()
    assert m._has_hooks is True
    h2.remove()
    assert m._has_hooks is False and len(m._backward_hooks) == 0
    y = m(st.ones(1, 3, requires_grad=True))
    assert y.grad_fn is not None and "BackwardHook" not in y.grad_fn.name()
    with pytest.raises(TypeError):
        m.register_full_backward_hook(3)
    with pytest.raises(TypeError):
        m.register_full_backward_pre_hook(None)


# ---------------------------------------------------------------- inputs and outputs
def _split_cls(lib):
    nn_ = _lib_nn(lib)

    class Split(nn_.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn_.Linear(3, 3)

        def forward(self, x, k, y, z):
            h = self.fc(x)
            return h * k, h + y + z, k

    return Split()


def _wrap_in_parent(lib, inner_make):
    nn_ = _lib_nn(lib)

    class Parent(nn_.Module):
        def __init__(self):
            super().__init__()
            self.split = inner_make(lib)

        def forward(self, x, y, z, use_b):
            a, b, k = self.split(x, 2, y, z)
            return (a * b).sum() if use_b else a.sum() * k

    return Parent()


@MODES
@pytest.mark.parametrize("use_b", [False, True], ids=["one_output", "both_outputs"])
def test_non_tensor_and_no_grad_inputs_tuple_outputs(torch, compiled, use_b):
    sm, tm = _pair(torch, lambda lib: _wrap_in_parent(lib, _split_cls))
    rs, rt = Rec(), Rec()
    _hook_all(sm, rs, ["split"])
    _hook_all(tm, rt, ["split"])
    yn = _RNG.standard_normal((2, 3)).astype(np.float32)
    zn = _RNG.standard_normal((2, 3)).astype(np.float32)
    xs, xt = _inputs(torch)
    ys, yt = st.tensor(yn), torch.tensor(yn)                          # no grad
    zs, zt = st.tensor(zn, requires_grad=True), torch.tensor(zn, requires_grad=True)
    f = _maybe_compile(sm, compiled)
    f(xs, ys, zs, use_b).backward()
    tm(xt, yt, zt, use_b).backward()
    assert rs.kinds() == [("split", "pre"), ("split", "full")]
    assert_same_log(rs.log, rt.log)
    (_, _, go), (_, _, gi, go2) = rs.log
    assert go[2] is None and gi[1] is None          # the int output and the int input
    assert (go[1] is None) == (not use_b)           # an output no gradient reached
    assert np.all(gi[2] == 0)                       # y requires no grad: zeros, as torch
    assert (np.all(gi[3] == 0)) == (not use_b)      # z unused by the loss: zeros, as torch
    assert_same_grads(sm, tm)
    np.testing.assert_allclose(_arr(zs.grad), _arr(zt.grad), **TOL)
    assert ys.grad is None


def test_no_input_requires_grad_fires_on_outputs(torch):
    # the hooks fire when the output gradients are known, with grad_input all
    # None, and a warning; returning gradients there is an error
    logs = {}
    for lib in (st, torch):
        r = logs[lib.__name__] = Rec()
        lib.manual_seed(0)
        m = lib.nn.Linear(3, 2)
        m.register_full_backward_pre_hook(r.pre("m"))
        m.register_full_backward_hook(r.full("m"))
        with pytest.warns(UserWarning, match="no inputs require gradients"):
            m(lib.ones(2, 3)).sum().backward()
        assert m.weight.grad is not None
        m.register_full_backward_hook(lambda mod, gi, go: (lib.ones(2, 3),))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="no input requires gradient should always return None"):
                m(lib.ones(2, 3)).sum().backward()
    assert logs["symtrace"].kinds() == logs["torch"].kinds() == [("m", "pre"), ("m", "full"),
                                                                 ("m", "pre"), ("m", "full")]
    assert_same_log(logs["symtrace"].log[:2], logs["torch"].log[:2])
    assert logs["symtrace"].log[1][2] == [None]


def test_nothing_requires_grad_no_hook_fires(torch):
    for lib in (st, torch):
        fired = []
        m = lib.nn.Linear(3, 2).requires_grad_(False)
        m.register_full_backward_hook(lambda *a: fired.append(1))
        m.register_full_backward_pre_hook(lambda *a: fired.append(2))
        y = m(lib.ones(2, 3))
        assert not y.requires_grad
        m.requires_grad_(True)
        with lib.no_grad():
            y = m(lib.ones(2, 3, requires_grad=True))
        assert not y.requires_grad
        assert fired == []


def test_non_tensor_output_warns_and_no_hook_fires(torch):
    for lib in (st, torch):
        nn_ = lib.nn
        fired = []

        class D(nn_.Module):
            def forward(self, x):
                return {"a": x * 2}

        m = D()
        m.register_full_backward_hook(lambda *a: fired.append(1))
        x = lib.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple"):
            out = m(x)
        out["a"].sum().backward()
        assert fired == [] and x.grad.tolist() == [2.0, 2.0]


def test_shared_module_and_retain_graph(torch):
    logs = {}
    for lib in (st, torch):
        r = logs[lib.__name__] = Rec()
        lib.manual_seed(0)
        m = lib.nn.Linear(2, 2)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([[1.0, 2.0], [-1.0, 0.5]]))
            m.bias.zero_()
        m.register_full_backward_hook(r.full("m"))
        x = lib.tensor([[1.0, -2.0]], requires_grad=True)
        y = m(m(x))            # the module twice: one hook call per use
        y.sum().backward(retain_graph=True)
        y.sum().backward()     # and again on the same graph
    assert len(logs["symtrace"].log) == 4
    assert_same_log(logs["symtrace"].log, logs["torch"].log)


def test_forward_hook_output_is_what_backward_hooks_see(torch):
    logs = {}
    for lib in (st, torch):
        r = logs[lib.__name__] = Rec()
        m = lib.nn.Tanh()
        m.register_forward_hook(lambda mod, a, out: out * 3.0)
        m.register_forward_pre_hook(lambda mod, a: (a[0] + 1.0,))
        m.register_full_backward_hook(r.full("m"))
        m.register_full_backward_pre_hook(r.pre("m"))
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        (m(x) * lib.tensor([1.0, 2.0])).sum().backward()
        logs[lib.__name__].log.append(("x", "grad", [_arr(x.grad)]))
    assert_same_log(logs["symtrace"].log, logs["torch"].log)
    np.testing.assert_allclose(logs["symtrace"].log[0][2][0], [1.0, 2.0])


def test_deprecated_register_backward_hook_is_taken_as_full():
    m = nn.Linear(3, 2)
    seen = []
    with pytest.warns(FutureWarning, match="register_full_backward_hook"):
        h = m.register_backward_hook(lambda mod, gi, go: seen.append([tuple(g.shape) for g in gi]))
    m(st.ones(4, 3, requires_grad=True)).sum().backward()
    assert seen == [[(4, 3)]]
    h.remove()
    m(st.ones(4, 3, requires_grad=True)).sum().backward()
    assert len(seen) == 1


# ---------------------------------------------------------------- errors
def _err(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((RuntimeError, TypeError)) as e:
            fn(lib)
    return type(e.value), str(e.value)


@pytest.mark.parametrize("case", ["full_count", "pre_count", "full_shape", "pre_shape",
                                  "full_dtype", "full_not_tensor", "full_tensor_not_tuple"])
def test_bad_hook_results_raise_as_torch(torch, case):
    def run(lib):
        m = lib.nn.Linear(3, 3)
        if case == "full_count":
            m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        elif case == "pre_count":
            m.register_full_backward_pre_hook(lambda mod, go: (go[0], None))
        elif case == "full_shape":
            m.register_full_backward_hook(lambda mod, gi, go: (lib.ones(5),))
        elif case == "pre_shape":
            m.register_full_backward_pre_hook(lambda mod, go: (lib.ones(2, 1),))
        elif case == "full_dtype":
            m.register_full_backward_hook(lambda mod, gi, go: (gi[0].double(),))
        elif case == "full_not_tensor":
            m.register_full_backward_hook(lambda mod, gi, go: ("a",))
        else:
            m.register_full_backward_hook(lambda mod, gi, go: gi[0])   # a Tensor of length 2
        m(lib.ones(2, 3, requires_grad=True)).sum().backward()

    ts, ms = _err(st, run)
    tt, mt = _err(torch, run)
    assert ts is tt
    key = {"full_count": "Backward hook returned an invalid number of grad_input, got 2, but expected 1",
           "pre_count": "Backward pre hook returned an invalid number of grad_output, got 2, but expected 1",
           "full_shape": "has changed the size of value", "pre_shape": "has changed the size of value",
           "full_dtype": "has changed the type of value", "full_not_tensor": "hook returned 'str'",
           "full_tensor_not_tuple": "invalid number of grad_input, got 2, but expected 1"}[case]
    assert key in ms and key in mt, (ms, mt)


def test_inplace_on_inputs_or_outputs_raises_as_torch(torch):
    msg = "BackwardHookFunction is a view and is being modified inplace"
    for lib in (st, torch):
        nn_ = lib.nn

        class AddIn(nn_.Module):
            def forward(self, x):
                x.add_(1.0)
                return x * 2

        class Scale(nn_.Module):
            def __init__(self):
                super().__init__()
                self.w = nn_.Parameter(lib.ones(3))

            def forward(self, x, y):
                y.mul_(2.0)           # y requires no grad: allowed
                return x * y * self.w

        m = AddIn()
        m.register_full_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match=msg):
            m(lib.ones(3, requires_grad=True) * 1.0)
        lin = nn_.Linear(3, 3)
        lin.register_full_backward_hook(lambda *a: None)
        # torch raises at relu_, symtrace when the backward reaches the module
        with pytest.raises(RuntimeError, match=msg):
            lin(lib.ones(2, 3, requires_grad=True)).relu_().sum().backward()
        s = Scale()
        s.register_full_backward_hook(lambda *a: None)
        x = lib.ones(3, requires_grad=True)
        s(x, lib.full((3,), 3.0)).sum().backward()
        assert x.grad.tolist() == [6.0, 6.0, 6.0]


# ---------------------------------------------------------------- compiled
def test_compiled_sees_hooks_registered_and_removed_later(torch):
    sm, tm = _pair(torch)
    xs, xt = _inputs(torch)
    st.reset()
    f = st.compile(sm)
    _step(f, xs, W, st)
    sm.zero_grad()
    _step(f, xs, W, st)
    base = _grads(sm)
    rs, rt = Rec(), Rec()
    hs = _hook_all(sm, rs, ["block.act", "out"])
    _hook_all(tm, rt, ["block.act", "out"])
    sm.block.act.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 2.0,))
    tm.block.act.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 2.0,))
    for _ in range(2):
        sm.zero_grad(), tm.zero_grad()
        rs.log.clear(), rt.log.clear()
        _step(f, xs, W, st)
        _step(tm, xt, W, torch)
        assert len(rs.log) == 4
        assert_same_log(rs.log, rt.log)
        assert_same_grads(sm, tm)
    assert not np.allclose(_grads(sm)["inp.weight"], base["inp.weight"])
    # the table itself changed in place: the compiled frame sees that too
    sm.block.act._backward_hooks.clear()
    tm.block.act._backward_hooks.clear()
    sm.zero_grad(), tm.zero_grad()
    rs.log.clear(), rt.log.clear()
    _step(f, xs, W, st)
    _step(tm, xt, W, torch)
    assert rs.kinds() == rt.kinds() == [("out", "pre"), ("out", "full"), ("block.act", "pre")]
    assert_same_grads(sm, tm)
    for h in hs:
        h.remove()
    sm.zero_grad()
    rs.log.clear()
    _step(f, xs, W, st)
    assert rs.log == []
    for n, g in _grads(sm).items():
        np.testing.assert_allclose(g, base[n], err_msg=n, **TOL)


def test_compiled_matches_eager_without_torch():
    # the same check as above with eager symtrace as the reference (runs where
    # torch is missing); hooks registered through the compiled module too
    st.manual_seed(0)
    m = _net_classes(st)()
    ref = copy.deepcopy(m)
    x = st.tensor(X.copy(), requires_grad=True)
    xr = st.tensor(X.copy(), requires_grad=True)
    st.reset()
    f = st.compile(m)
    _step(f, x, W, st)
    rs, rr = Rec(), Rec()
    subs = ["", "block", "block.fc", "out"]
    _hook_all(m, rs, subs[1:])
    _hook_all(ref, rr, subs[1:])
    f.register_full_backward_hook(rs.full(""))      # on the OptimizedModule: the same tables
    ref.register_full_backward_hook(rr.full(""))
    m.block.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2.0,))
    ref.block.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2.0,))
    for _ in range(2):
        m.zero_grad(), ref.zero_grad()
        rs.log.clear(), rr.log.clear()
        x.grad = xr.grad = None
        _step(f, x, W, st)
        _step(ref, xr, W, st)
        assert rs.kinds() == rr.kinds() and len(rs.log) == 7
        assert_same_log(rs.log, rr.log)
        assert_same_grads(m, ref)
        np.testing.assert_allclose(_arr(x.grad), _arr(xr.grad), **TOL)


def test_explain_shows_the_break_and_its_removal():
    st.manual_seed(0)
    m = _net_classes(st)()
    x = st.randn(2, 3)
    st.reset()
    rep = st.explain(m, x)
    assert rep.graph_count == 1 and rep.graph_break_count == 0, str(rep)
    h = m.block.act.register_full_backward_hook(lambda *a: None)
    st.reset()
    rep = st.explain(m, x)
    assert rep.graph_break_count >= 1 and "_bw_setup_input" in str(rep), str(rep)
    h.remove()
    st.reset()
    rep = st.explain(m, x)
    assert rep.graph_count == 1 and rep.graph_break_count == 0, str(rep)


# ---------------------------------------------------------------- module state
def _module_level_hook(mod, gi, go):
    return (gi[0] * 0.0,)


def test_state_dict_deepcopy_and_save_keep_working():
    st.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    keys = list(m.state_dict())
    seen = []
    h = m[1].register_full_backward_hook(lambda mod, gi, go: seen.append(mod))
    m[0].register_full_backward_pre_hook(lambda mod, go: None)
    assert list(m.state_dict()) == keys
    c = copy.deepcopy(m)
    assert len(c[1]._backward_hooks) == 1 and c[1]._has_hooks
    x = st.ones(2, 3, requires_grad=True)
    c(x).sum().backward()
    assert seen == [c[1]]
    h.remove()              # the original's handle: the copy keeps its hook
    m(x).sum().backward()
    c(x).sum().backward()
    assert seen == [c[1], c[1]]
    # save / load of a whole module with a picklable hook
    m2 = nn.Linear(3, 2)
    m2.register_full_backward_hook(_module_level_hook)
    buf = io.BytesIO()
    st.save(m2, buf)
    buf.seek(0)
    m3 = st.load(buf, weights_only=False)
    assert list(m3._backward_hooks.values()) == [_module_level_hook] and m3._has_hooks
    x = st.ones(2, 3, requires_grad=True)
    m3(x).sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2
    # a module state from before the backward tables (an old pickle)
    m4 = nn.Linear(2, 2)
    state = {k: v for k, v in m4.__dict__.items()
             if k not in ("_backward_hooks", "_backward_pre_hooks", "_has_hooks")}
    m5 = nn.Linear.__new__(nn.Linear)
    m5.__setstate__(state)
    assert m5._has_hooks is False and len(m5._backward_hooks) == 0
    m5.register_full_backward_hook(lambda *a: seen.append("m5"))
    m5(st.ones(1, 2, requires_grad=True)).sum().backward()
    assert seen[-1] == "m5"
