"""inplace=True in symtrace.nn.functional and the activation/dropout modules, as
torch: the result is written into the input's storage and the input object itself
is returned (`F.relu(x, inplace=True) is x`), its version counter is bumped,
gradients through an in-place activation on a non-leaf equal torch's, torch's
errors are raised (a leaf that requires grad; a tensor saved for backward then
overwritten), module reprs print `inplace=True`, and in-place activations inside
symtrace.compile (interp, llvm) give eager's results."""
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
import symtrace.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the 3.12 venv has no torch
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
BACKENDS = ["interp"] + (["llvm"] if st._C._fe_backend_available("llvm") else [])

# name -> fn(F, x, inplace): the same call in symtrace and in torch
ACTS = {
    "relu": lambda F, x, ip: F.relu(x, inplace=ip),
    "relu6": lambda F, x, ip: F.relu6(x, inplace=ip),
    "leaky_relu": lambda F, x, ip: F.leaky_relu(x, 0.2, ip),
    "elu": lambda F, x, ip: F.elu(x, 0.7, ip),
    "selu": lambda F, x, ip: F.selu(x, ip),
    "celu": lambda F, x, ip: F.celu(x, 1.3, ip),
    "hardtanh": lambda F, x, ip: F.hardtanh(x, -0.5, 0.8, ip),
    "threshold": lambda F, x, ip: F.threshold(x, 0.1, 2.0, ip),
    "silu": lambda F, x, ip: F.silu(x, inplace=ip),
    "mish": lambda F, x, ip: F.mish(x, inplace=ip),
    "hardswish": lambda F, x, ip: F.hardswish(x, ip),
    "hardsigmoid": lambda F, x, ip: F.hardsigmoid(x, ip),
    "rrelu_eval": lambda F, x, ip: F.rrelu(x, 0.1, 0.3, False, ip),
    "dropout_eval": lambda F, x, ip: F.dropout(x, 0.4, False, ip),
}
# torch's `name_` functional forms (always in place)
UNDERSCORE = {
    "relu_": lambda F, x: F.relu_(x),
    "leaky_relu_": lambda F, x: F.leaky_relu_(x, 0.3),
    "elu_": lambda F, x: F.elu_(x, 0.5, 2.0, 1.5),
    "selu_": lambda F, x: F.selu_(x),
    "celu_": lambda F, x: F.celu_(x, 0.8),
    "hardtanh_": lambda F, x: F.hardtanh_(x, -0.3, 0.4),
    "threshold_": lambda F, x: F.threshold_(x, 0.2, -1.0),
    "rrelu_": lambda F, x: F.rrelu_(x, 0.2, 0.4),
}
# torch computes a few gradients with float32 constants even in float64
# (hardsigmoid's 1/6, celu's 1/alpha): compare float64 gradients to 1e-7
GTOL = 1e-7


def _data(shape=(4, 6), seed=0):
    a = np.random.RandomState(seed).randn(*shape) * 3
    a[0, :3] = [0.0, -3.0, 3.0]   # the kinks of relu/hardtanh/hardswish
    return a


def _run(lib, F, fn, a, inplace, dtype="float64"):
    """x (leaf) -> y = x * 1.5 (a non-leaf) -> fn(y, inplace) -> backward of sum(r^2):
    (r values, x.grad, r is y, y's version bump, y's values after)."""
    x = lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True)
    y = x * 1.5
    v0 = y._version
    r = fn(F, y, inplace)
    same, bump = r is y, y._version - v0
    (r * r).sum().backward()
    return r.detach().numpy().copy(), x.grad.numpy().copy(), same, bump, y.detach().numpy().copy()


# ---------------- values, identity, version, gradients ----------------
@needs_torch
@pytest.mark.parametrize("name", sorted(ACTS))
@pytest.mark.parametrize("inplace", [False, True])
def test_activation_matches_torch(name, inplace):
    fn = ACTS[name]
    a = _data()
    rs, gs, ss, vs, ys = _run(st, F, fn, a, inplace)
    rt, gt, stt, vt, yt = _run(torch, TF, fn, a, inplace)
    np.testing.assert_allclose(rs, rt, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gs, gt, rtol=GTOL, atol=GTOL)
    assert ss == stt            # the input itself in place (and for dropout in eval)
    assert vs == vt             # one write in place; none out of place
    np.testing.assert_allclose(ys, yt, rtol=1e-12, atol=1e-12)   # the input was (or was not) written


@pytest.mark.parametrize("name", sorted(ACTS))
def test_inplace_equals_out_of_place(name):
    """Without torch: the in-place result is the out-of-place one, written into x."""
    fn = ACTS[name]
    a = _data().astype(np.float32)
    ref = fn(F, st.tensor(a), False).numpy()
    x = st.tensor(a)
    v = x._version
    r = fn(F, x, True)
    np.testing.assert_allclose(x.numpy(), ref, rtol=1e-6, atol=1e-6)
    if name != "dropout_eval":
        assert r is x and x._version == v + 1
    else:
        assert r is x and x._version == v


@needs_torch
@pytest.mark.parametrize("name", sorted(UNDERSCORE))
def test_underscore_forms_match_torch(name):
    fn = UNDERSCORE[name]
    a = _data()
    rs, gs, ss, vs, _ = _run(st, F, lambda F, y, ip: fn(F, y), a, True)
    rt, gt, stt, vt, _ = _run(torch, TF, lambda F, y, ip: fn(F, y), a, True)
    np.testing.assert_allclose(rs, rt, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gs, gt, rtol=GTOL, atol=GTOL)
    assert ss and stt and vs == vt == 1


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", ["relu", "silu", "leaky_relu", "hardswish", "elu"])
def test_inplace_keeps_dtype(name, dtype):
    a = _data()
    x = st.tensor(a).to(getattr(st, dtype))
    ref = ACTS[name](F, x.clone(), False)
    r = ACTS[name](F, x, True)
    assert r is x and r.dtype is getattr(st, dtype)
    np.testing.assert_array_equal(x.float().numpy(), ref.float().numpy())


def test_inplace_on_non_contiguous_input():
    a = _data((6, 4))
    base = st.tensor(a)
    x = base.t()                  # a transposed view: written through to base
    assert F.relu(x, inplace=True) is x
    np.testing.assert_array_equal(base.numpy(), np.maximum(a, 0))
    y = st.tensor(a)
    F.silu(y[:, 1:3], inplace=True)   # a strided slice: only its elements change
    np.testing.assert_allclose(y.numpy()[:, 1:3], a[:, 1:3] / (1 + np.exp(-a[:, 1:3])), rtol=1e-12)
    np.testing.assert_array_equal(y.numpy()[:, [0, 3]], a[:, [0, 3]])


# ---------------- torch's errors ----------------
LEAF_CALLS = dict(ACTS, **{k: (lambda fn: lambda F, x, ip: fn(F, x))(v) for k, v in UNDERSCORE.items()},
                  dropout=lambda F, x, ip: F.dropout(x, 0.3, True, ip),
                  dropout1d=lambda F, x, ip: F.dropout1d(x, 0.3, True, ip),
                  dropout2d=lambda F, x, ip: F.dropout2d(x.reshape(2, 2, 3, 2), 0.3, True, ip),
                  alpha_dropout=lambda F, x, ip: F.alpha_dropout(x, 0.3, True, ip),
                  feature_alpha_dropout=lambda F, x, ip: F.feature_alpha_dropout(x, 0.3, True, ip),
                  rrelu_train=lambda F, x, ip: F.rrelu(x, training=True, inplace=ip))
LEAF_CALLS.pop("dropout_eval")   # in eval, dropout returns the input without writing (torch too)


@pytest.mark.parametrize("name", sorted(LEAF_CALLS))
def test_inplace_on_leaf_that_requires_grad_raises(name):
    x = st.tensor(_data(), requires_grad=True)
    with pytest.raises(RuntimeError, match="a (view of a )?leaf Variable that requires grad is being used in an "
                                           "in-place operation|in-place modification of a view"):
        LEAF_CALLS[name](F, x, True)
    with st.no_grad():            # allowed without grad, as torch
        v = x._version
        r = LEAF_CALLS[name](F, x, True)
        assert x._version > v
        assert r is x or name == "dropout2d"     # dropout2d was given a reshaped view of x


@needs_torch
def test_leaf_error_message_is_torchs():
    for lib, FF in ((st, F), (torch, TF)):
        x = lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            FF.relu(x, inplace=True)
        assert str(e.value) == "a leaf Variable that requires grad is being used in an in-place operation."


@needs_torch
@pytest.mark.parametrize("lib", ["symtrace", "torch"])
def test_overwriting_a_tensor_saved_for_backward_raises_at_backward(lib):
    L, FF = (st, F) if lib == "symtrace" else (torch, TF)
    x = L.tensor(_data(), requires_grad=True)
    z = (x * 2).sigmoid()          # sigmoid saves its result z
    FF.relu(z, inplace=True)        # ... which this overwrites
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    y = x * 2
    w = y * y                       # saves y
    FF.hardtanh(y, inplace=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()


def test_inplace_twice_on_a_non_leaf_chains_gradients():
    a = _data()
    x = st.tensor(a, requires_grad=True)
    y = x * 1.0
    v = y._version
    F.silu(y, inplace=True)
    F.relu(y, inplace=True)
    assert y._version == v + 2
    y.sum().backward()
    s = 1 / (1 + np.exp(-a))
    expect = np.where(a * s > 0, s * (1 + a * (1 - s)), 0.0)
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-5, atol=1e-6)


# ---------------- dropout family ----------------
def test_dropout_inplace_identity_version_and_gradient():
    st.manual_seed(0)
    x = st.ones(64, 64, requires_grad=True)
    y = x * 2.0
    v = y._version
    r = F.dropout(y, 0.25, True, True)
    assert r is y and y._version == v + 1
    out = y.detach().numpy()
    keep = out != 0
    np.testing.assert_allclose(out[keep], 2.0 / 0.75, rtol=1e-6)
    assert 0.7 < keep.mean() < 0.8
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), keep * 2.0 / 0.75, rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("fname", ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                                   "feature_alpha_dropout"])
@pytest.mark.parametrize("case", ["eval", "p0"])
@pytest.mark.parametrize("inplace", [False, True])
def test_dropout_identity_cases_as_torch(fname, case, inplace):
    shape = {"dropout1d": (2, 3, 4), "dropout2d": (2, 3, 4, 5), "dropout3d": (2, 3, 2, 2, 2)}.get(fname, (2, 3, 4))
    res = []
    for lib, FF in ((st, F), (torch, TF)):
        x = lib.ones(*shape)
        v = x._version
        kw = dict(p=0.5, training=False) if case == "eval" else dict(p=0.0, training=True)
        r = getattr(FF, fname)(x, inplace=inplace, **kw)
        res.append((r is x, x._version - v))
    assert res[0] == res[1]


@needs_torch
@pytest.mark.parametrize("fname,nd", [("dropout2d", 2), ("dropout2d", 3), ("dropout2d", 5), ("dropout3d", 3)])
def test_channel_dropout_warnings_are_torchs(fname, nd):
    got = []
    for lib, FF in ((st, F), (torch, TF)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            getattr(FF, fname)(lib.ones(*(2,) * nd), 0.5, True)
        got.append([(x.category, str(x.message), x.filename) for x in w])
    assert got[0] == got[1] and got[0]       # same text, category, and the caller's file


@pytest.mark.parametrize("fname,shape,cdims", [("dropout1d", (4, 16, 8), 2), ("dropout1d", (16, 8), 1),
                                               ("dropout2d", (4, 16, 3, 3), 2), ("dropout3d", (4, 16, 2, 2, 2), 2),
                                               ("dropout3d", (16, 2, 2, 2), 1)])
@pytest.mark.parametrize("inplace", [False, True])
def test_channel_dropout_drops_whole_channels(fname, shape, cdims, inplace):
    st.manual_seed(1)
    x = st.ones(*shape)
    r = getattr(F, fname)(x, 0.5, True, inplace)
    assert (r is x) == inplace
    out = r.numpy().reshape(int(np.prod(shape[:cdims])), -1)
    per_channel = np.unique(out, axis=1)
    assert per_channel.shape[1] == 1                       # one value per channel
    assert set(np.unique(out)) <= {0.0, 2.0}
    assert 0 < (out[:, 0] == 0).sum() < out.shape[0]


def test_dropout_p1_gives_zeros():
    for fname in ("dropout", "dropout1d", "dropout2d", "alpha_dropout", "feature_alpha_dropout"):
        x = st.ones(2, 3, 4, 1)[..., 0] if fname == "dropout1d" else st.ones(2, 3, 4, 1)
        r = getattr(F, fname)(x, 1.0, True, True)
        assert r is x
        np.testing.assert_array_equal(x.numpy(), 0.0)


@pytest.mark.parametrize("feature", [False, True])
@pytest.mark.parametrize("inplace", [False, True])
def test_alpha_dropout_values_and_gradient(feature, inplace):
    """Kept points are x * a + alpha * a * p, dropped ones alpha * a * (p - 1), with
    torch's a = 1 / sqrt((alpha^2 p + 1)(1 - p)); the gradient is a where kept."""
    st.manual_seed(2)
    p, alpha = 0.3, 1.7580993408473766
    a = 1.0 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    data = np.random.RandomState(3).randn(32, 16, 4)
    x = st.tensor(data, requires_grad=True)
    y = x * 1.0
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    r = fn(y, p, True, inplace)
    assert (r is y) == inplace
    out = r.detach().numpy()
    kept = np.isclose(out, data * a + alpha * a * p, rtol=1e-12, atol=1e-12)
    dropped = np.isclose(out, alpha * a * (p - 1), rtol=1e-12, atol=1e-12)
    assert (kept | dropped).all()
    assert 0.6 < kept.mean() < 0.8
    if feature:   # whole channels
        assert (kept.all(-1) | dropped.all(-1)).all()
    r.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept * a, rtol=1e-12)


def test_rrelu_training_slopes_and_gradient():
    st.manual_seed(4)
    data = np.random.RandomState(5).randn(64, 32)
    x = st.tensor(data, requires_grad=True)
    y = x * 1.0
    v = y._version
    r = F.rrelu(y, 0.1, 0.3, training=True, inplace=True)
    assert r is y and y._version == v + 1
    out = r.detach().numpy()
    np.testing.assert_array_equal(out[data > 0], data[data > 0])
    slope = out[data < 0] / data[data < 0]
    assert (slope >= 0.1 - 1e-12).all() and (slope <= 0.3 + 1e-12).all() and slope.std() > 0.03
    r.sum().backward()
    g = x.grad.numpy()
    np.testing.assert_allclose(g[data > 0], 1.0)
    np.testing.assert_allclose(g[data < 0], slope, rtol=1e-12)
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the upper bound"):
        F.rrelu(st.ones(3), 0.5, 0.2, training=True)


# ---------------- modules ----------------
MODULES = [("ReLU", (), {}), ("ReLU", (True,), {}), ("ReLU6", (), {"inplace": True}),
           ("LeakyReLU", (0.2, True), {}), ("ELU", (), {"alpha": 0.5, "inplace": True}),
           ("CELU", (1.5, True), {}), ("SELU", (True,), {}), ("SiLU", (), {"inplace": True}),
           ("Mish", (), {"inplace": True}), ("Hardtanh", (-0.5, 0.5, True), {}),
           ("Threshold", (0.1, 20.0, True), {}), ("Hardsigmoid", (True,), {}), ("Hardswish", (True,), {}),
           ("RReLU", (0.1, 0.3, True), {}), ("RReLU", (), {}), ("GELU", (), {"approximate": "tanh"}),
           ("Softmax", (1,), {}), ("LogSoftmax", (), {}), ("Softmin", (0,), {}), ("Softplus", (2.0, 10.0), {}),
           ("Dropout", (0.2, True), {}), ("Dropout", (), {}), ("Dropout1d", (0.3, True), {}),
           ("Dropout2d", (), {"inplace": True}), ("Dropout3d", (0.1,), {}), ("AlphaDropout", (0.2, True), {}),
           ("FeatureAlphaDropout", (0.2,), {})]


def _cls(name):
    from symtrace.nn.modules import activation, dropout
    return getattr(nn, name, None) or getattr(activation, name, None) or getattr(dropout, name)


@needs_torch
@pytest.mark.parametrize("name,args,kwargs", MODULES)
def test_module_repr_matches_torch(name, args, kwargs):
    assert repr(_cls(name)(*args, **kwargs)) == repr(getattr(torch.nn, name)(*args, **kwargs))


@pytest.mark.filterwarnings("ignore:dropout2d")   # a 2-d input to Dropout2d: torch's deprecation warning
@pytest.mark.parametrize("name,args,kwargs", [m for m in MODULES if (m[1] and m[1][-1] is True)
                                               or m[2].get("inplace")])
def test_inplace_module_writes_into_its_input(name, args, kwargs):
    m = _cls(name)(*args, **kwargs)
    assert m.inplace is True
    m.eval()                           # dropout and rrelu: deterministic
    a = _data()
    x = st.tensor(a)
    v = x._version
    r = m(x)
    if "Dropout" in name:              # eval: the input, unwritten
        assert r is x and x._version == v
        return
    assert r is x and x._version == v + 1
    ref = _cls(name)(*args, **kwargs).eval()
    ref.inplace = False
    np.testing.assert_allclose(x.numpy(), ref(st.tensor(a)).numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
def test_sequential_with_inplace_activations_matches_torch():
    layers = lambda L: [L.Linear(5, 8), L.ReLU(inplace=True), L.Linear(8, 8), L.SiLU(inplace=True),
                        L.Dropout(0.0, inplace=True), L.Linear(8, 8), L.Hardtanh(-0.3, 0.3, True), L.Linear(8, 2)]
    sm, tm = nn.Sequential(*layers(nn)), torch.nn.Sequential(*layers(torch.nn))
    for (_, sp), (_, tp) in zip(sm.named_parameters(), tm.named_parameters()):
        sp.data.copy_(st.tensor(tp.detach().numpy()))
    a = np.random.RandomState(6).randn(7, 5).astype(np.float32)
    so, to = sm(st.tensor(a)), tm(torch.tensor(a))
    np.testing.assert_allclose(so.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    so.square().sum().backward()
    to.square().sum().backward()
    for sp, tp in zip(sm.parameters(), tm.parameters()):
        np.testing.assert_allclose(sp.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert repr(sm) == repr(tm)


# ---------------- under symtrace.compile ----------------
def _c_relu(x):
    y = x * 2.0
    F.relu(y, inplace=True)
    return y + 1


def _c_silu(x):
    y = x * 2.0
    z = F.silu(y, inplace=True)
    return z * 3, y


def _c_chain(x):
    y = x - 0.5
    F.hardtanh(y, -0.2, 0.3, True)
    F.leaky_relu_(y, 0.1)
    F.elu(y, 0.5, True)
    return y.sum(0)


def _c_on_input(x):             # writes into the graph's input
    F.hardswish(x, inplace=True)
    return x * 1.0


def _c_module(x):
    return _C_SEQ(x)


_C_SEQ = nn.Sequential(nn.ReLU(inplace=True), nn.Hardsigmoid(inplace=True), nn.Dropout(0.5, inplace=True)).eval()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [_c_relu, _c_silu, _c_chain, _c_on_input, _c_module])
def test_compiled_inplace_matches_eager(backend, fn):
    a = _data().astype(np.float32)
    xe = st.tensor(a)
    e = fn(xe)
    e = e if isinstance(e, tuple) else (e,)
    cf = st.compile(fn, backend=backend)
    for _ in range(2):               # the first call captures, the second reuses
        xc = st.tensor(a)
        c = cf(xc)
        c = c if isinstance(c, tuple) else (c,)
        for p, q in zip(e, c):
            np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(xc.numpy(), xe.numpy(), rtol=1e-6, atol=1e-6)   # same writes to the input


def _c_grad(x):
    # a chain torch also differentiates (relu_ saves its result: it comes last)
    y = x * 2.0
    F.silu(y, inplace=True)
    F.hardswish(y, inplace=True)
    F.relu(y, inplace=True)
    return (y * y).sum()


@needs_torch
def test_inplace_chain_gradient_matches_torch():
    a = _data()
    grads = []
    for lib, FF in ((st, F), (torch, TF)):
        x = lib.tensor(a, requires_grad=True)
        y = x * 2.0
        FF.silu(y, inplace=True)
        FF.hardswish(y, inplace=True)
        FF.relu(y, inplace=True)
        (y * y).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_inplace_gradient_matches_eager(backend):
    a = _data().astype(np.float32)
    x = st.tensor(a, requires_grad=True)
    _c_grad(x).backward()
    ge = x.grad.numpy().copy()
    cf = st.compile(_c_grad, backend=backend)
    for _ in range(2):
        x = st.tensor(a, requires_grad=True)
        cf(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), ge, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_inplace_on_leaf_raises(backend):
    def f(x):
        return F.relu(x, inplace=True) + 1
    cf = st.compile(f, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            cf(st.ones(3, requires_grad=True))


def _c_random(x):
    y = x * 1.0
    F.feature_alpha_dropout(y, 0.5, True, True)
    F.rrelu(y, training=True, inplace=True)
    F.dropout2d(y, 0.5, True, True)
    F.dropout(y, 0.3, True, True)
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_random_inplace_matches_eager(backend):
    """The random in-place forms draw, compiled, what eager draws from the same seed
    (and a new draw on each call)."""
    cf = st.compile(_c_random, backend=backend)
    outs = []
    for seed in (0, 0, 1):
        st.manual_seed(seed)
        e = _c_random(st.ones(8, 6, 3, 3)).numpy()
        st.manual_seed(seed)
        c = cf(st.ones(8, 6, 3, 3)).numpy()
        np.testing.assert_allclose(c, e, rtol=1e-6, atol=1e-6)
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0], outs[2])


def _c_embedding_freq(w, i):
    return (F.embedding(i, w, scale_grad_by_freq=True) ** 2).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_embedding_scale_grad_by_freq_matches_eager(backend):
    e = np.random.RandomState(7).randn(7, 3).astype(np.float32)
    idx = st.tensor([[1, 2, 6], [6, 6, 0]])
    w = st.tensor(e, requires_grad=True)
    _c_embedding_freq(w, idx).backward()
    ge = w.grad.numpy().copy()
    counts = np.bincount(idx.numpy().ravel(), minlength=7)
    np.testing.assert_allclose(ge, np.where(counts[:, None] > 0, 2 * e, 0.0), rtol=1e-6)  # 2 e * c / c
    cf = st.compile(_c_embedding_freq, backend=backend)
    for _ in range(2):
        w = st.tensor(e, requires_grad=True)
        cf(w, idx).backward()
        np.testing.assert_allclose(w.grad.numpy(), ge, rtol=1e-6, atol=1e-7)
