# Tensor printing (symtrace/_tensor_str.py): repr/str of tensors must equal torch's
# character for character (dtype names swapped: 'torch.' -> 'symtrace.') over a corpus
# of dtypes, shapes, value mixes (int mode, fixed, scientific, nan/inf, -0.),
# summarization, line wrapping, suffixes and print options. Tests that compare with
# torch ask for the `torch` fixture (skipped without torch); the literal-string tests
# at the end run everywhere.
import math
import time

import numpy as np
import pytest

import symtrace as st
from symtrace import _tensor_str

ST_DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool"]


@pytest.fixture(autouse=True)
def _default_printoptions():
    """Every test starts and ends with the default print options (both libraries)."""
    def reset():
        st.set_printoptions(profile="default")
        try:
            import torch
            torch.set_printoptions(profile="default")
        except ImportError:
            pass
    reset()
    yield
    reset()


@pytest.fixture(autouse=True)
def _torch_names_ours(monkeypatch):
    """torch lays out suffixes with its names ('dtype=torch.float64'); ours are longer
    ('symtrace.float64'), which can move a suffix to the next line. The oracle is
    torch's layout of our names: its suffixes are renamed before it measures them."""
    try:
        import torch
    except ImportError:
        return
    real = torch._tensor_str._add_suffixes

    def renamed(text, suffixes, *args, **kw):
        return real(text, [x.replace("torch.", "symtrace.") for x in suffixes], *args, **kw)
    monkeypatch.setattr(torch._tensor_str, "_add_suffixes", renamed)


def pair(torch, values, dtype=None, requires_grad=False):
    """The same values as a symtrace tensor and a torch tensor (built from float64 /
    int64 / bool numpy data, then cast to dtype by each library)."""
    a = np.asarray(values)
    if a.dtype.kind == "f":
        a = a.astype(np.float64)
    s, t = st.tensor(a), torch.from_numpy(a.copy())
    if dtype is not None:
        s, t = s.to(getattr(st, dtype)), t.to(getattr(torch, dtype))
    if requires_grad:
        s.requires_grad_(True)
        t.requires_grad_(True)
    return s, t


def same(s, t):
    want = repr(t).replace("torch.", "symtrace.")
    got = repr(s)
    assert got == want, "\nsymtrace:\n%s\ntorch:\n%s" % (got, want)
    assert str(s) == got


def rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- values and dtypes
FLOAT_VALUES = [
    [1.0, 2.0, 3.0], [1.5, -2.25], [1e-8, 1e5], [1e9], [1e-5], [0.001, 1.0],
    [0.001, 1.0001], [1e8], [1.00001e8], [1e-4], [0.99e-4], [123456.7], [1e20, 3.0],
    [-1.5e-7, 3.0], [0.1, 0.2, 0.3], [float("nan"), float("inf"), float("-inf"), 1.0],
    [float("nan")], [float("inf"), float("-inf")], [0.0, 0.0], [-0.0, 1.0], [-0.0, 0.5],
    [-0.0], [0.0], [float("nan"), 0.5], [float("inf"), 1e-6], [12345678.0, 1.0],
    [-1.0, 100.0, -1000.0], [3.14159265, -2.71828], [1e-3, 0.5, 1000.0], [65504.0, -65504.0],
    [6e-8, 1.0], [1.0 / 3, 2.0 / 3, 1e3], [99999.5, 0.25], [1e-300, 1e300],
]


@pytest.mark.parametrize("values", FLOAT_VALUES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_float_values(torch, values, dtype):
    same(*pair(torch, values, dtype))


@pytest.mark.parametrize("values", [[1, 2, 3], [-5, 10, -100], [0], [2**40, -1], [-(2**31), 2**31 - 1],
                                    list(range(-20, 20, 3))], ids=str)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_values(torch, values, dtype):
    if dtype == "int32" and any(abs(v) >= 2**31 for v in values):
        values = [v % 1000 for v in values]
    same(*pair(torch, values, dtype))


@pytest.mark.parametrize("values", [[True], [False, True, False], [[True, False], [False, False]]], ids=str)
def test_bool_values(torch, values):
    same(*pair(torch, values))


@pytest.mark.parametrize("dtype", ST_DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3), (3, 1, 4), (2, 3, 2, 2), (1, 1, 1, 1), (4, 1)],
                         ids=str)
def test_shapes_and_dtypes(torch, dtype, shape):
    v = rng(len(shape)).standard_normal(shape) * 3
    if dtype in ("int32", "int64"):
        v = np.round(v * 10).astype(np.int64)
    elif dtype == "bool":
        v = v > 0
    same(*pair(torch, v, dtype))


@pytest.mark.parametrize("dtype", ST_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 3), (0, 0)], ids=str)
def test_empty(torch, dtype, shape):
    a = np.zeros(shape, dtype=np.float64 if dtype.startswith(("f", "b")) and dtype != "bool" else
                 (np.bool_ if dtype == "bool" else np.int64))
    same(*pair(torch, a, dtype))


@pytest.mark.parametrize("v", [3.0, -0.0, 1e-9, 2.5, float("nan"), float("-inf"), 7, -3, True, 1e10])
@pytest.mark.parametrize("dtype", [None, "float64", "float16", "int32"])
def test_zero_dim(torch, v, dtype):
    if dtype == "int32" and (isinstance(v, float) and not math.isfinite(v)):
        return
    same(*pair(torch, v, dtype))


@pytest.mark.parametrize("scale", [1e-6, 1e-3, 1.0, 1e3, 1e6, 1e9])
def test_random_matrices(torch, scale):
    r = rng(int(math.log10(scale)) + 10)
    same(*pair(torch, r.standard_normal((4, 5)) * scale))
    same(*pair(torch, r.standard_normal((2, 3, 4)) * scale, "float64"))
    same(*pair(torch, np.round(r.standard_normal((3, 4)) * scale)))   # int mode


def test_noncontiguous(torch):
    s, t = pair(torch, rng(3).standard_normal((3, 4, 5)))
    same(s.transpose(0, 2), t.transpose(0, 2))
    same(s[:, ::2, 1:], t[:, ::2, 1:])
    same(s[1], t[1])


# ---------------------------------------------------------------- summarization
@pytest.mark.parametrize("shape", [(1000,), (1001,), (10, 100), (10, 101), (1001, 1), (1, 1001), (3, 1001),
                                   (7, 7, 7, 7), (2, 3, 200), (4, 5, 6, 7), (6, 200), (7, 200), (2000, 2),
                                   (11, 11, 11)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "bool"])
def test_summarize(torch, shape, dtype):
    v = rng(sum(shape)).standard_normal(shape)
    if dtype == "int64":
        v = np.round(v * 100).astype(np.int64)
    elif dtype == "bool":
        v = v > 0
    same(*pair(torch, v, dtype))


def test_summarize_uses_only_edges(torch):
    """The summarized values decide the format: a huge value in the elided middle
    does not switch to scientific mode, as in torch."""
    v = np.ones(2000)
    v[1000] = 1e12
    same(*pair(torch, v))
    v = np.arange(5000.0).reshape(50, 100)
    same(*pair(torch, v))


def test_summarize_large_is_fast():
    t = st.randn(4096, 4096)
    repr(t)
    t0 = time.perf_counter()
    s = repr(t)
    dt = time.perf_counter() - t0
    assert s.count("\n") == 6 and "...," in s
    assert dt < 0.25, dt   # reading all 16M values would take seconds


# ---------------------------------------------------------------- wrapping
@pytest.mark.parametrize("n", [8, 9, 10, 11, 12, 13, 20, 25, 90])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_wide_rows_wrap(torch, n, dtype):
    v = rng(n).standard_normal((2, n)) * 50
    if dtype == "int32":
        v = np.round(v).astype(np.int64)
    elif dtype == "bool":
        v = v > 0
    same(*pair(torch, v, dtype))
    same(*pair(torch, v[0], dtype))


@pytest.mark.parametrize("n", range(1, 16))
def test_suffix_wrap(torch, n):
    """dtype= and requires_grad= go to a new line when the last line would pass 80."""
    v = rng(n).standard_normal(n) * 10
    same(*pair(torch, v, "float64", requires_grad=True))
    same(*pair(torch, v[: max(1, n // 2)].reshape(1, -1), "float16", requires_grad=True))


# ---------------------------------------------------------------- suffixes
def test_requires_grad_and_grad_fn(torch):
    s, t = pair(torch, [[1.0, -2.0], [3.5, 4.0]], requires_grad=True)
    same(s, t)
    for f in (lambda x: x + 1, lambda x: x * 2, lambda x: x.sum(), lambda x: x.exp(), lambda x: x - x):
        same(f(s), f(t))
    s64, t64 = pair(torch, [1.0, 2.0], "float64", requires_grad=True)
    same(s64 * 3, t64 * 3)
    same(s.detach(), t.detach())


def test_grad_fn_name_custom_function(torch):
    def make(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        return Double
    s, t = pair(torch, [1.0, 2.0], requires_grad=True)
    same(make(st).apply(s), make(torch).apply(t))


def test_parameter(torch):
    s, t = pair(torch, [[1.0, 2.0], [3.0, 4.5]])
    same(st.nn.Parameter(s), torch.nn.Parameter(t))
    same(st.nn.Parameter(s, requires_grad=False), torch.nn.Parameter(t, requires_grad=False))
    s, t = pair(torch, [1, 2], "float64")
    same(st.nn.Parameter(s), torch.nn.Parameter(t))
    assert repr(st.nn.Parameter(s)).startswith("Parameter containing:\ntensor([1., 2.], dtype=symtrace.float64")


def test_subclass_prefix(torch):
    class MyT(st.Tensor):
        pass

    class TMyT(torch.Tensor):
        pass
    s, t = pair(torch, [1.0, 2.5])
    ms = st._C._make_subclass(MyT, s, False)
    mt = torch.Tensor._make_subclass(TMyT, t)
    assert repr(ms) == repr(mt).replace("TMyT(", "MyT(")


def test_format_zero_dim(torch):
    for v in (3.14159, 2.0, -1.5):
        s, t = pair(torch, v)
        for spec in (".2f", "", ">10.3e", "g"):
            assert format(s, spec) == format(t, spec)
        assert f"{s:.3f}" == f"{t:.3f}"
    s, t = pair(torch, 7)
    assert format(s, "05d") == format(t, "05d")
    s, t = pair(torch, [1.0, 2.0])
    assert format(s, "") == format(t, "").replace("torch.", "symtrace.")
    with pytest.raises(TypeError):
        format(t, ".2f")
    with pytest.raises(TypeError):
        format(s, ".2f")


# ---------------------------------------------------------------- print options
CORPUS = [
    ([1.123456789, -22.5, 0.001], None), ([1e-8, 1e5], None), ([1.0, 2.0, 300.0], None),
    (np.arange(30.0).reshape(5, 6) / 7, None), (np.arange(2000).reshape(40, 50), None),
    (np.arange(1200.0) * 1.5, "float64"), (np.arange(24).reshape(2, 3, 4) > 5, None),
    (np.linspace(-1, 1, 100).reshape(4, 25), None), ([0.0, float("nan")], None), (3.14159, None),
]


def check_corpus(torch):
    for v, dtype in CORPUS:
        same(*pair(torch, v, dtype))


@pytest.mark.parametrize("kw", [dict(precision=2), dict(precision=0), dict(precision=8), dict(threshold=5),
                                dict(threshold=0), dict(threshold=math.inf), dict(edgeitems=1), dict(edgeitems=0),
                                dict(edgeitems=5), dict(linewidth=40), dict(linewidth=200), dict(linewidth=10),
                                dict(sci_mode=True), dict(sci_mode=False), dict(profile="default"),
                                dict(profile="short"), dict(profile="full"), dict(profile="short", precision=6),
                                dict(threshold=10, edgeitems=2, linewidth=50, precision=3)], ids=str)
def test_set_printoptions(torch, kw):
    st.set_printoptions(**kw)
    torch.set_printoptions(**kw)
    check_corpus(torch)
    assert _tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()


def test_printoptions_context(torch):
    kw = dict(precision=2, threshold=5)
    with _tensor_str.printoptions(**kw), torch._tensor_str.printoptions(**kw):
        check_corpus(torch)
        assert _tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()
    assert _tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()
    check_corpus(torch)


def test_api_surface(torch):
    """set_printoptions is exported as torch exports it; get_printoptions/printoptions
    live in the _tensor_str module in both."""
    for name in ("set_printoptions", "get_printoptions", "printoptions"):
        assert hasattr(st, name) == hasattr(torch, name), name
        assert hasattr(_tensor_str, name) and hasattr(torch._tensor_str, name)


# ---------------------------------------------------------------- without torch
def test_literal_float_formats():
    assert repr(st.tensor([1e-8, 1e5])) == "tensor([1.0000e-08, 1.0000e+05])"
    assert repr(st.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(st.tensor([1.5, -22.25])) == "tensor([  1.5000, -22.2500])"
    assert repr(st.tensor([float("nan"), float("-inf"), 1.0])) == "tensor([nan, -inf, 1.])"
    assert repr(st.tensor([-0.0, 1.0])) == "tensor([-0., 1.])"
    assert repr(st.tensor(3.0)) == "tensor(3.)"
    assert repr(st.tensor([1.0, 2.0], dtype=st.float64)) == "tensor([1., 2.], dtype=symtrace.float64)"


def test_literal_ints_bools_empty():
    assert repr(st.tensor([[1, -20], [300, 4]])) == "tensor([[  1, -20],\n        [300,   4]])"
    assert repr(st.tensor([True, False])) == "tensor([ True, False])"
    assert repr(st.tensor([1, 2], dtype=st.int32)) == "tensor([1, 2], dtype=symtrace.int32)"
    assert repr(st.zeros(0)) == "tensor([])"
    assert repr(st.zeros(2, 0)) == "tensor([], size=(2, 0))"
    assert repr(st.zeros(0, dtype=st.int64)) == "tensor([], dtype=symtrace.int64)"


def test_literal_nested_and_summarized():
    assert repr(st.arange(8.0).reshape(2, 2, 2)) == (
        "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])")
    assert repr(st.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    assert repr(st.arange(20).reshape(4, 5) * 0 + 1) == "\n".join(
        ["tensor([[1, 1, 1, 1, 1],"] + ["        [1, 1, 1, 1, 1],"] * 2 + ["        [1, 1, 1, 1, 1]])"])


def test_literal_device_suffix():
    """A CUDA tensor names its device (tested without a GPU: a subclass that reports one)."""
    class OnCuda(st.Tensor):
        _device_str = property(lambda self: "cuda:0")
    x = st._C._make_subclass(OnCuda, st.tensor([1.0, 2.5]), False)
    assert repr(x) == "OnCuda([1.0000, 2.5000], device='cuda:0')"
    x = st._C._make_subclass(OnCuda, st.zeros(2, 0, dtype=st.float64), True)
    assert repr(x) == ("OnCuda([], device='cuda:0', size=(2, 0), dtype=symtrace.float64,\n"
                       "       requires_grad=True)")


def test_literal_suffixes_and_options():
    x = st.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert str(x) == repr(x)
    assert repr(st.nn.Parameter(st.ones(2))) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert format(st.tensor(3.14159), ".2f") == "3.14"
    st.set_printoptions(precision=2)
    assert repr(st.tensor([1.12345])) == "tensor([1.12])"
    st.set_printoptions(threshold=5)
    assert repr(st.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    with _tensor_str.printoptions(sci_mode=True):
        assert repr(st.tensor([1.5])) == "tensor([1.50e+00])"
    st.set_printoptions(profile="default")
    assert repr(st.tensor([1.12345])) == "tensor([1.1235])"
    assert repr(st.arange(10)) == "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"
    assert _tensor_str.get_printoptions() == dict(precision=4, threshold=1000, edgeitems=3, linewidth=80,
                                                  sci_mode=None)
