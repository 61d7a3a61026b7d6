"""interpolate(..., antialias=True) (symtrace/nn/_interp_aa.py, _interp_aa_u8.py): bilinear,
bicubic and lanczos on 4-d inputs against torch's _upsample_*2d_aa (values and gradients,
eager and compiled, dynamic shapes; uint8 bit for bit), torch's errors for the unsupported
combinations, and expected values that run without torch."""
import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as SF


def _rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _run(F, lib, a, g, kw):
    """(output, input gradient for the output gradient g) as numpy."""
    x = lib.tensor(a, requires_grad=True)
    y = F.interpolate(x, antialias=True, **kw)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), x.grad.numpy()


# ---------------- against torch ----------------
CASES = [
    ((2, 3, 17, 13), dict(size=(5, 4))),            # downsampling
    ((1, 2, 7, 9), dict(size=(11, 20))),             # upsampling
    ((1, 2, 9, 8), dict(size=(4, 15))),              # down in H, up in W
    ((1, 1, 10, 10), dict(scale_factor=0.3)),
    ((1, 1, 9, 8), dict(scale_factor=(0.5, 2.5))),
    ((1, 1, 12, 7), dict(scale_factor=0.45, recompute_scale_factor=True)),
    ((1, 1, 6, 7), dict(size=(1, 1))),
    ((1, 1, 1, 5), dict(size=(3, 2))),
    ((2, 2, 32, 24), dict(size=(7, 9))),
    ((1, 1, 5, 5), dict(size=5)),                    # same size
]
MODES = [("bilinear", False), ("bilinear", True), ("bicubic", False), ("bicubic", True), ("lanczos", False)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,ac", MODES, ids=[f"{m}-ac{int(a)}" for m, a in MODES])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_values_and_grads_as_torch(case, mode, ac, dtype):
    torch = pytest.importorskip("torch")
    shape, kw = case
    kw = dict(kw, mode=mode, align_corners=ac)
    a = _rand(shape, dtype)
    xt = torch.tensor(a, requires_grad=True)
    yt = torch.nn.functional.interpolate(xt, antialias=True, **kw)
    g = _rand(tuple(yt.shape), dtype, 1)
    yt.backward(torch.tensor(g))
    want = (yt.detach().numpy(), xt.grad.numpy())
    got = _run(SF, st, a, g, kw)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert got[0].shape == want[0].shape and got[0].dtype == want[0].dtype
    np.testing.assert_allclose(got[0], want[0], rtol=tol, atol=tol)
    np.testing.assert_allclose(got[1], want[1], rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
def test_compiled_as_torch(mode):
    torch = pytest.importorskip("torch")

    def fn(F, x):
        return F.interpolate(x * 2, size=(5, 7), mode=mode, antialias=True).sin()

    a = _rand((2, 3, 16, 12), "float32")
    xt = torch.tensor(a, requires_grad=True)
    yt = fn(torch.nn.functional, xt)
    (yt * yt).sum().backward()
    ex = st.explain(lambda x: fn(SF, x), st.tensor(a))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    c = st.compile(lambda x: fn(SF, x))
    x = st.tensor(a, requires_grad=True)
    y = c(x)
    (y * y).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [dict(size=(5, 4), mode="bicubic"), dict(scale_factor=0.5, mode="bilinear")])
def test_compiled_dynamic_as_eager_and_torch(kw):
    torch = pytest.importorskip("torch")

    def fn(F, x):
        return F.interpolate(x, antialias=True, **kw) + 1

    c = st.compile(lambda x: fn(SF, x), dynamic=True)
    for i, shape in enumerate([(2, 3, 16, 12), (3, 3, 20, 14), (1, 3, 9, 7)]):
        a = _rand(shape, "float32", i)
        xt = torch.tensor(a, requires_grad=True)
        yt = fn(torch.nn.functional, xt)
        (yt * yt).sum().backward()
        x = st.tensor(a, requires_grad=True)
        y = c(x)
        (y * y).sum().backward()
        assert tuple(y.shape) == tuple(yt.shape)
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


ERRORS = [
    ("nearest", (1, 1, 4, 4), dict(mode="nearest", scale_factor=0.5)),
    ("area", (1, 1, 4, 4), dict(mode="area", size=2)),
    ("bilinear_3d", (1, 1, 4), dict(mode="bilinear", size=2)),
    ("linear_3d", (1, 1, 4), dict(mode="linear", size=2)),
    ("bicubic_5d", (1, 1, 4, 4, 4), dict(mode="bicubic", size=2)),
    ("trilinear_5d", (1, 1, 4, 4, 4), dict(mode="trilinear", size=2)),
    ("lanczos_3d", (1, 1, 4), dict(mode="lanczos", size=2)),
    ("lanczos_align", (1, 1, 4, 4), dict(mode="lanczos", size=2, align_corners=True)),
    ("lanczos_no_aa", (1, 1, 4, 4), dict(mode="lanczos", size=2, antialias=False)),
    ("size0", (1, 1, 4, 4), dict(mode="bilinear", size=(0, 2))),
    ("empty_input", (1, 1, 0, 4), dict(mode="bicubic", size=(2, 2))),
    ("half", (1, 1, 4, 4), dict(mode="bilinear", size=2, dtype="float16")),
    ("int", (1, 1, 4, 4), dict(mode="bicubic", size=2, dtype="int32")),
    ("int8", (1, 1, 4, 4), dict(mode="bilinear", size=2, dtype="int8")),
    ("both", (1, 1, 4, 4), dict(mode="bilinear", size=2, scale_factor=0.5)),
]


def _outcome(lib, shape, kw):
    kw = dict(kw)
    dt = getattr(lib, kw.pop("dtype", "float32"))
    kw.setdefault("antialias", True)
    try:
        lib.nn.functional.interpolate(lib.zeros(*shape, dtype=dt), **kw)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return "ok"


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_torch(case):
    torch = pytest.importorskip("torch")
    _, shape, kw = case
    want = _outcome(torch, shape, kw)
    assert want != "ok"
    assert _outcome(st, shape, kw) == want


U8_CASES = [((1, 3, 37, 29), dict(size=(11, 13))), ((2, 5, 16, 16), dict(size=(24, 30))),
            ((1, 3, 50, 40), dict(size=(7, 33))), ((1, 3, 20, 20), dict(size=(20, 7))),
            ((1, 3, 10, 10), dict(scale_factor=1.05)), ((1, 5, 9, 12), dict(scale_factor=(0.4, 1.7))),
            ((1, 3, 1, 6), dict(size=(4, 1)))]


@pytest.mark.parametrize("mode,ac", MODES, ids=[f"{m}-ac{int(a)}" for m, a in MODES])
@pytest.mark.parametrize("case", U8_CASES, ids=[str(i) for i in range(len(U8_CASES))])
def test_uint8_bit_exact_as_torch(case, mode, ac):
    # torch's fixed-point uint8 kernels (torchvision's Resize on uint8 images): exact equality
    torch = pytest.importorskip("torch")
    shape, kw = case
    a = np.random.default_rng(3).integers(0, 256, shape).astype(np.uint8)
    want = torch.nn.functional.interpolate(torch.tensor(a), mode=mode, align_corners=ac, antialias=True, **kw)
    got = SF.interpolate(st.tensor(a), mode=mode, align_corners=ac, antialias=True, **kw)
    assert got.dtype == st.uint8
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_uint8_compiled_and_dynamic_as_eager():
    def fn(x):
        return SF.interpolate(x, size=(7, 9), mode="bicubic", antialias=True)

    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (2, 3, 20, 17)).astype(np.uint8)
    ex = st.explain(fn, st.tensor(a))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    np.testing.assert_array_equal(st.compile(fn)(st.tensor(a)).numpy(), fn(st.tensor(a)).numpy())
    cd = st.compile(fn, dynamic=True)
    for shape in [(2, 3, 20, 17), (1, 3, 25, 30), (3, 3, 12, 11)]:
        b = rng.integers(0, 256, shape).astype(np.uint8)
        np.testing.assert_array_equal(cd(st.tensor(b)).numpy(), fn(st.tensor(b)).numpy())


U8_EXPECTED = [   # torch 2.13 for x = (arange(30).reshape(1, 1, 5, 6) * 37 % 256).to(uint8)
    ("bilinear", (2, 4), [115, 62, 86, 137, 164, 158, 83, 69]),
    ("bicubic", (3, 3), [53, 73, 153, 176, 57, 91, 164, 164, 46]),
    ("lanczos", (4, 2), [43, 140, 98, 84, 162, 60, 174, 97]),
]


@pytest.mark.parametrize("case", U8_EXPECTED, ids=[c[0] for c in U8_EXPECTED])
def test_uint8_expected_values(case):
    mode, size, want = case
    x = (st.arange(30).reshape(1, 1, 5, 6) * 37 % 256).to(st.uint8)
    y = SF.interpolate(x, size=size, mode=mode, antialias=True)
    assert y.dtype == st.uint8
    assert y.reshape(-1).tolist() == want


# ---------------- without torch ----------------
def test_bilinear_downsample_by_hand():
    # W 4 -> 2: scale 2, the triangle stretched to half width 2; output 0 centred at 1:
    # taps 0, 1, 2 weigh 0.75, 0.75, 0.25 (/ 1.75), output 1 (centre 3): taps 1, 2, 3 the same
    x = st.tensor([[[[0.0, 1.0, 2.0, 3.0]]]], requires_grad=True)
    y = SF.interpolate(x, size=(1, 2), mode="bilinear", antialias=True)
    np.testing.assert_allclose(y.detach().numpy().ravel(), [1.25 / 1.75, 4.0 / 1.75], rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy().ravel(), np.array([0.75, 1.0, 1.0, 0.75]) / 1.75, rtol=1e-6)


EXPECTED = [   # torch 2.13's values for x = arange(20.).reshape(1, 1, 4, 5) ** 1.5, float64
    ("bilinear", dict(size=(2, 3)), [10.436249984668212, 15.173166940561494, 20.827784452826975,
                                     42.24017042250649, 50.547867649403614, 59.336060033506435]),
    ("bicubic", dict(size=(3, 2)), [3.032512141944311, 8.607797415318895, 24.531646975837674,
                                    35.06742731334542, 57.653328231943476, 71.38979567993984]),
    ("lanczos", dict(size=(2, 2)), [7.551087347955204, 14.94682376502867, 47.56480315774548, 61.2299905241646]),
    ("bicubic", dict(size=(3, 7), align_corners=True),
     [2.5288858887087375, 3.3470713293012064, 4.805301154462747, 6.445491567191668, 8.285591110611014,
      10.38247193312992, 12.728442737112076, 27.395930352852503, 29.583717194417748, 33.09932612305576,
      36.325594589773665, 39.6526317162182, 43.19163703961837, 46.94975426872573, 57.148690390045935,
      59.9632729094725, 64.45865689704317, 68.52674464565267, 72.67502369125165, 77.03985705498849,
      81.62954043807069]),
]


@pytest.mark.parametrize("case", EXPECTED, ids=[f"{c[0]}-{i}" for i, c in enumerate(EXPECTED)])
def test_expected_values(case):
    mode, kw, want = case
    x = st.arange(20, dtype=st.float64).reshape(1, 1, 4, 5) ** 1.5
    y = SF.interpolate(x, mode=mode, antialias=True, **kw)
    assert y.dtype == st.float64
    np.testing.assert_allclose(y.numpy().ravel(), want, rtol=1e-12, atol=1e-12)


def test_bilinear_upsample_equals_plain_bilinear():
    x = st.tensor(_rand((2, 3, 5, 6), "float64"))
    a = SF.interpolate(x, size=(9, 13), mode="bilinear", antialias=True)
    b = SF.interpolate(x, size=(9, 13), mode="bilinear")
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_errors_without_torch():
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear, bicubic, and lanczos"):
        SF.interpolate(st.zeros(1, 1, 4, 4), size=2, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="requires a 4-D tensor"):
        SF.interpolate(st.zeros(1, 1, 4, 4, 4), size=2, mode="bicubic", antialias=True)
    with pytest.raises(ValueError, match="Lanczos mode does not support align_corners=True"):
        SF.interpolate(st.zeros(1, 1, 4, 4), size=2, mode="lanczos", antialias=True, align_corners=True)
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        SF.interpolate(st.zeros(1, 1, 4, 4, dtype=st.float16), size=2, mode="bilinear", antialias=True)
