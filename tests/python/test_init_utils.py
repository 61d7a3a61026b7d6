# symtrace.nn.init and symtrace.nn.utils against torch.nn.init / torch.nn.utils:
# calculate_gain for every nonlinearity, fan computation and its errors,
# the xavier / kaiming / trunc_normal_ distributions (bounds, moments) next to
# torch's own draws, eye_ / dirac_ exactly as torch's, orthogonal_ (the same
# Q as torch's QR of the same draw; orthogonality), sparse_ (zeros per
# column), the deprecated aliases; clip_grad_value_, parameters_to_vector /
# vector_to_parameters, get_total_norm / clip_grads_with_norm_ and
# clip_grad_norm_ (norm types, error_if_nonfinite, foreach) exactly or within
# float32 rounding of torch's. Tests without the `torch` fixture run without
# torch too.
import math
import re
import warnings

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
from symtrace.nn import init

NONLIN = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
          "sigmoid", "tanh", "relu", "leaky_relu", "selu"]


def np_of(t):
    t = t.detach()
    return np.array(t.numpy()) if isinstance(t, st.Tensor) else t.cpu().numpy()


def _same_error(torch_fn, st_fn):
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(te.type, match="^" + re.escape(str(te.value)) + "$"):
        st_fn()


# ---------------- init ----------------
def test_calculate_gain(torch):
    for nl in NONLIN:
        assert init.calculate_gain(nl) == torch.nn.init.calculate_gain(nl), nl
    for param in (0, 1, 0.2, -0.5, 3):
        assert init.calculate_gain("leaky_relu", param) == torch.nn.init.calculate_gain("leaky_relu", param)
    assert init.calculate_gain("selu") == 0.75
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01 ** 2))
    for bad in [("leaky_relu", True), ("leaky_relu", "x"), ("softmax", None), ("gelu", None)]:
        _same_error(lambda: torch.nn.init.calculate_gain(*bad), lambda: init.calculate_gain(*bad))


def test_fans(torch):
    for shape in [(4, 5), (4, 5, 3), (6, 2, 3, 3), (2, 3, 1, 2, 2)]:
        assert init._calculate_fan_in_and_fan_out(st.empty(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
        for mode in ("fan_in", "fan_out", "FAN_IN"):
            assert init._calculate_correct_fan(st.empty(*shape), mode) == \
                torch.nn.init._calculate_correct_fan(torch.empty(*shape), mode)
    _same_error(lambda: torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(4)),
                lambda: init._calculate_fan_in_and_fan_out(st.empty(4)))
    _same_error(lambda: torch.nn.init.kaiming_uniform_(torch.empty(3, 4), mode="fan_avg"),
                lambda: init.kaiming_uniform_(st.empty(3, 4), mode="fan_avg"))
    _same_error(lambda: torch.nn.init.xavier_uniform_(torch.empty(3)), lambda: init.xavier_uniform_(st.empty(3)))


@pytest.mark.parametrize("fn,kw,shape", [
    ("xavier_uniform_", dict(), (300, 200)),
    ("xavier_uniform_", dict(gain=2.5), (64, 32, 3, 3)),
    ("xavier_normal_", dict(gain=0.5), (300, 200)),
    ("kaiming_uniform_", dict(), (300, 200)),
    ("kaiming_uniform_", dict(a=math.sqrt(5)), (64, 32, 3, 3)),
    ("kaiming_uniform_", dict(mode="fan_out", nonlinearity="relu"), (300, 200)),
    ("kaiming_normal_", dict(nonlinearity="tanh"), (300, 200)),
    ("kaiming_normal_", dict(a=0.2, mode="fan_out", nonlinearity="leaky_relu"), (64, 32, 3, 3)),
    ("kaiming_normal_", dict(nonlinearity="selu"), (300, 200)),
    ("kaiming_uniform_", dict(nonlinearity="sigmoid"), (300, 200)),
])
def test_fan_based_inits_like_torch(torch, fn, kw, shape):
    st.manual_seed(3)
    torch.manual_seed(3)
    a = np_of(getattr(init, fn)(st.empty(*shape), **kw)).astype(np.float64)
    b = np_of(getattr(torch.nn.init, fn)(torch.empty(*shape), **kw)).astype(np.float64)
    assert abs(a.mean()) < 0.05 * b.std()
    assert a.std() == pytest.approx(b.std(), rel=0.03)
    if "uniform" in fn:
        # the bound: torch's draws approach it as ours do, neither exceeds it
        assert np.abs(a).max() <= np.abs(b).max() * 1.001 + 1e-12
        assert np.abs(a).max() >= np.abs(b).max() * 0.99
    else:
        assert abs(((a - a.mean()) ** 4).mean() / a.var() ** 2 - 3.0) < 0.15     # normal kurtosis


def test_kaiming_zero_elements_warn(torch):
    for lib in (init, torch.nn.init):
        t = st.empty(0, 3) if lib is init else torch.empty(0, 3)
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            lib.kaiming_uniform_(t)
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            lib.kaiming_normal_(t)


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 1.0, -1.0, 1.5), (0.0, 1.0, 1.0, 3.0),
                                          (0.0, 0.02, -0.04, 0.04), (2.0, 0.5, 0.0, 1.0)])
def test_trunc_normal_like_torch(torch, mean, std, a, b):
    """Both of torch's samplers (redrawing normals; uniform proposals when
    [a, b] holds <= 0.3 of the mass): in bounds, moments as the truncated
    normal's and as torch's draws."""
    st.manual_seed(0)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = np_of(init.trunc_normal_(st.empty(200000), mean, std, a, b)).astype(np.float64)
        y = np_of(torch.nn.init.trunc_normal_(torch.empty(200000), mean, std, a, b)).astype(np.float64)
    assert x.min() >= a and x.max() <= b
    al, be = (a - mean) / std, (b - mean) / std
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    Phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    Z = Phi(be) - Phi(al)
    m = mean + std * (phi(al) - phi(be)) / Z
    v = std ** 2 * (1 + (al * phi(al) - be * phi(be)) / Z - ((phi(al) - phi(be)) / Z) ** 2)
    for s in (x, y):
        assert s.mean() == pytest.approx(m, abs=6 * math.sqrt(v / len(s)))
        assert s.var() == pytest.approx(v, rel=0.03)


def test_trunc_normal_warns_like_torch(torch):
    for lib, t in ((init, st.empty(10)), (torch.nn.init, torch.empty(10))):
        with pytest.warns(UserWarning, match="mean is more than 2 std from"):
            lib.trunc_normal_(t, mean=5.0, std=1.0, a=-1.0, b=1.0)


def test_eye_and_dirac_like_torch(torch):
    for shape in [(3, 3), (3, 5), (6, 2)]:
        np.testing.assert_array_equal(np_of(init.eye_(st.empty(*shape))),
                                      np_of(torch.nn.init.eye_(torch.empty(*shape))))
    _same_error(lambda: torch.nn.init.eye_(torch.empty(2, 2, 2)), lambda: init.eye_(st.empty(2, 2, 2)))
    for shape, groups in [((4, 2, 3), 1), ((6, 4, 3, 3), 2), ((4, 4, 3, 4, 5), 4), ((3, 5, 2, 2), 1),
                          ((8, 2, 5), 2)]:
        np.testing.assert_array_equal(np_of(init.dirac_(st.empty(*shape), groups)),
                                      np_of(torch.nn.init.dirac_(torch.empty(*shape), groups)))
    _same_error(lambda: torch.nn.init.dirac_(torch.empty(3, 3)), lambda: init.dirac_(st.empty(3, 3)))
    _same_error(lambda: torch.nn.init.dirac_(torch.empty(3, 2, 3), 2), lambda: init.dirac_(st.empty(3, 2, 3), 2))


@pytest.mark.parametrize("shape", [(5, 3), (3, 7), (6, 6), (4, 2, 3, 3)])
def test_orthogonal_like_torch(torch, shape):
    """The Q for a given draw is torch's (torch.linalg.qr of the same matrix,
    sign-fixed); the result is (semi-)orthogonal times the gain."""
    rows = shape[0]
    cols = int(np.prod(shape)) // rows
    flat = np.random.default_rng(sum(shape)).standard_normal((rows, cols))
    ft = torch.from_numpy(flat.copy())
    if rows < cols:
        ft = ft.t()
    q, r = torch.linalg.qr(ft)
    q = q * torch.diag(r, 0).sign()
    if rows < cols:
        q = q.t()
    np.testing.assert_allclose(init._orthogonal(flat, 1.0), q.numpy(), rtol=1e-10, atol=1e-12)
    st.manual_seed(1)
    w = init.orthogonal_(st.empty(*shape), gain=1.5)
    m = np_of(w).reshape(rows, cols).astype(np.float64)
    g = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(g, 2.25 * np.eye(min(rows, cols)), atol=1e-5)
    st.manual_seed(1)
    np.testing.assert_array_equal(np_of(init.orthogonal_(st.empty(*shape), gain=1.5)), np_of(w))
    p = nn.Parameter(st.zeros(*shape))
    init.orthogonal_(p)
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    _same_error(lambda: torch.nn.init.orthogonal_(torch.empty(3)), lambda: init.orthogonal_(st.empty(3)))


def test_orthogonal_float64():
    w = init.orthogonal_(st.empty(8, 5, dtype=st.float64))
    assert w.dtype == st.float64
    m = np_of(w)
    np.testing.assert_allclose(m.T @ m, np.eye(5), atol=1e-12)


@pytest.mark.parametrize("shape,sparsity", [((20, 7), 0.3), ((10, 4), 0.05), ((9, 5), 0.9)])
def test_sparse_like_torch(torch, shape, sparsity):
    st.manual_seed(2)
    torch.manual_seed(2)
    a = np_of(init.sparse_(st.empty(*shape), sparsity, std=0.5))
    b = np_of(torch.nn.init.sparse_(torch.empty(*shape), sparsity, std=0.5))
    np.testing.assert_array_equal((a == 0).sum(0), (b == 0).sum(0))
    assert np.all((a == 0).sum(0) == math.ceil(sparsity * shape[0]))
    assert np.all(np.signbit(a[a == 0]) == 0)          # +0.0, as torch's assignment
    nz = a[a != 0]
    if nz.size > 20:
        assert nz.std() == pytest.approx(0.5, rel=0.35)
    _same_error(lambda: torch.nn.init.sparse_(torch.empty(3), 0.1), lambda: init.sparse_(st.empty(3), 0.1))


def test_deprecated_aliases(torch):
    for name in ("uniform", "normal", "eye", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                 "kaiming_normal", "orthogonal"):
        with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of "
                                               f"`nn.init.{name}_`"):
            getattr(init, name)(st.empty(4, 3))
    with pytest.warns(FutureWarning):
        init.constant(st.empty(2), 3.0)
    with pytest.warns(FutureWarning):
        init.dirac(st.empty(2, 2, 3))
    with pytest.warns(FutureWarning):
        init.sparse(st.empty(4, 2), 0.5)
    assert set(init.__all__) == set(torch.nn.init.__all__)


# ---------------- utils ----------------
def _grads(torch, seed=0, scale=1.0, dtype="float32"):
    rng = np.random.default_rng(seed)
    shapes = [(4, 3), (5,), (2, 3, 2), (1,)]
    vals = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [(scale * rng.standard_normal(s)).astype(dtype) for s in shapes]
    sp = [nn.Parameter(st.tensor(v)) for v in vals]
    tp = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in vals]
    for i, (a, b, g) in enumerate(zip(sp, tp, grads)):
        if i == 2:
            continue                           # a parameter without a gradient
        a.grad = st.tensor(g.copy())
        b.grad = torch.from_numpy(g.copy())
    return sp, tp


def _grads_equal(sp, tp, rtol=0.0):
    for a, b in zip(sp, tp):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            np.testing.assert_allclose(np_of(a.grad), np_of(b.grad), rtol=rtol, atol=0 if rtol == 0 else 1e-7)


def test_clip_grad_value(torch):
    sp, tp = _grads(torch, scale=2.0)
    assert nn.utils.clip_grad_value_(sp, 0.7) is None
    torch.nn.utils.clip_grad_value_(tp, 0.7)
    _grads_equal(sp, tp)
    assert max(np.abs(np_of(p.grad)).max() for p in sp if p.grad is not None) == pytest.approx(0.7)
    p = nn.Parameter(st.ones(3))
    p.grad = st.tensor([-5.0, 0.1, 5.0])
    nn.utils.clip_grad_value_(p, 1)
    np.testing.assert_array_equal(np_of(p.grad), np.array([-1.0, 0.1, 1.0], dtype=np.float32))
    # foreach=True: accepted on CPU as torch (no foreach kernels here: the same per-tensor result)
    nn.utils.clip_grad_value_(sp, 0.5, foreach=True)
    torch.nn.utils.clip_grad_value_(tp, 0.5, foreach=True)
    _grads_equal(sp, tp)


def test_parameters_vector_round_trip(torch):
    sp, tp = _grads(torch)
    v = nn.utils.parameters_to_vector(sp)
    tv = torch.nn.utils.parameters_to_vector(tp)
    np.testing.assert_array_equal(np_of(v), np_of(tv))
    assert tuple(v.shape) == (sum(p.numel() for p in sp),)
    new = np.arange(v.shape[0], dtype=np.float32) / 7.0
    nn.utils.vector_to_parameters(st.tensor(new), sp)
    torch.nn.utils.vector_to_parameters(torch.from_numpy(new.copy()), tp)
    for a, b in zip(sp, tp):
        np.testing.assert_array_equal(np_of(a), np_of(b))
        assert a.is_leaf and a.requires_grad and a.grad_fn is None
    _same_error(lambda: torch.nn.utils.vector_to_parameters([1.0], tp),
                lambda: nn.utils.vector_to_parameters([1.0], sp))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, float("inf"), float("-inf"), 0.0])
def test_get_total_norm_and_clip_with_norm(torch, norm_type):
    sp, tp = _grads(torch, seed=4)
    sg = [p.grad for p in sp if p.grad is not None]
    tg = [p.grad for p in tp if p.grad is not None]
    n = nn.utils.get_total_norm(sg, norm_type)
    tn = torch.nn.utils.get_total_norm(tg, norm_type)
    assert n.dim() == 0 and n.dtype == st.float32
    assert n.item() == pytest.approx(tn.item(), rel=1e-6)
    nn.utils.clip_grads_with_norm_(sp, 0.3, n)
    torch.nn.utils.clip_grads_with_norm_(tp, 0.3, tn)
    _grads_equal(sp, tp, rtol=2e-6)


@pytest.mark.parametrize("max_norm,norm_type,scale", [(1.0, 2.0, 1.0), (100.0, 2.0, 1.0), (0.5, 1.0, 3.0),
                                                      (0.3, float("inf"), 1.0), (0.7, 3.0, 0.1)])
def test_clip_grad_norm_like_torch(torch, max_norm, norm_type, scale):
    sp, tp = _grads(torch, seed=7, scale=scale)
    total = nn.utils.clip_grad_norm_(sp, max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    assert total.item() == pytest.approx(ttotal.item(), rel=1e-6)
    _grads_equal(sp, tp, rtol=2e-6)
    after = nn.utils.get_total_norm([p.grad for p in sp if p.grad is not None], norm_type).item()
    assert after == pytest.approx(min(max_norm, total.item()), rel=1e-5)


def test_clip_grad_norm_nonfinite_and_foreach(torch):
    sp, tp = _grads(torch)
    sp[0].grad = st.tensor(np.array([[np.inf, 1, 2]] * 4, dtype=np.float32))
    tp[0].grad = torch.tensor([[np.inf, 1, 2]] * 4, dtype=torch.float32)
    _same_error(lambda: torch.nn.utils.clip_grad_norm_(tp, 1.0, error_if_nonfinite=True),
                lambda: nn.utils.clip_grad_norm_(sp, 1.0, error_if_nonfinite=True))
    # without the check: scaled by the non-finite norm as torch (inf * 0 = nan, finite * 0 = 0)
    total = nn.utils.clip_grad_norm_(sp, 1.0)
    ttotal = torch.nn.utils.clip_grad_norm_(tp, 1.0)
    assert math.isinf(total.item()) and math.isinf(ttotal.item())
    for a, b in zip(sp, tp):
        if a.grad is not None:
            np.testing.assert_array_equal(np_of(a.grad), np_of(b.grad))
    sp, tp = _grads(torch)
    for f in (True, None, False):
        nn.utils.clip_grad_norm_(sp, 1.0, foreach=f)
        torch.nn.utils.clip_grad_norm_(tp, 1.0, foreach=f)
        _grads_equal(sp, tp, rtol=2e-6)


def test_clip_grad_norm_empty_generator_warns(torch):
    for lib in (nn.utils, torch.nn.utils):
        with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
            t = lib.clip_grad_norm_((p for p in []), 1.0)
        assert float(t) == 0.0


# ---------------- without torch ----------------
def test_init_values_without_torch():
    assert init.calculate_gain("selu") == 3.0 / 4
    assert init.calculate_gain("leaky_relu", 0.5) == math.sqrt(2.0 / 1.25)
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match=re.escape("please use one of ['fan_in', 'fan_out']")):
        init.kaiming_normal_(st.empty(2, 2), mode="fan")
    np.testing.assert_array_equal(np_of(init.eye_(st.empty(2, 3))), np.eye(2, 3))
    w = np_of(init.dirac_(st.empty(2, 3, 3, 3)))
    assert w.sum() == 2 and w[0, 0, 1, 1] == 1 and w[1, 1, 1, 1] == 1
    m = np_of(init.orthogonal_(st.empty(6, 4))).astype(np.float64)
    np.testing.assert_allclose(m.T @ m, np.eye(4), atol=1e-5)
    s = np_of(init.sparse_(st.empty(10, 3), 0.25))
    assert list((s == 0).sum(0)) == [3, 3, 3]
    st.manual_seed(9)
    a = np_of(init.trunc_normal_(st.empty(1000), 0.0, 1.0, 1.0, 3.0))
    st.manual_seed(9)
    b = np_of(init.trunc_normal_(st.empty(1000), 0.0, 1.0, 1.0, 3.0))
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 1.0 and a.max() <= 3.0


def test_utils_without_torch():
    p, q = nn.Parameter(st.ones(2, 2)), nn.Parameter(st.ones(3))
    p.grad = st.full((2, 2), 3.0)
    q.grad = st.tensor([0.0, 4.0, -12.0])
    n = nn.utils.get_total_norm([p.grad, q.grad])
    assert n.item() == pytest.approx(math.sqrt(4 * 9 + 16 + 144))
    assert nn.utils.get_total_norm([p.grad, q.grad], float("inf")).item() == 12.0
    assert nn.utils.get_total_norm([p.grad, q.grad], 1).item() == 28.0
    assert nn.utils.get_total_norm([]).item() == 0.0
    total = nn.utils.clip_grad_norm_([p, q], 2.0)
    assert total.item() == pytest.approx(14.0)
    assert nn.utils.get_total_norm([p.grad, q.grad]).item() == pytest.approx(2.0, rel=1e-5)
    nn.utils.clip_grad_value_([p, q], 0.1)
    assert np.abs(np_of(q.grad)).max() <= 0.1
    nn.utils.clip_grad_value_([p], 0.05, foreach=True)
    assert np.abs(np_of(p.grad)).max() == np.float32(0.05)
    v = nn.utils.parameters_to_vector([p, q])
    np.testing.assert_array_equal(np_of(v), np.ones(7))
    nn.utils.vector_to_parameters(st.arange(7).float(), [p, q])
    np.testing.assert_array_equal(np_of(p), [[0, 1], [2, 3]])
    np.testing.assert_array_equal(np_of(q), [4, 5, 6])
    with pytest.warns(FutureWarning):
        nn.utils.clip_grad_norm([p], 1.0)
