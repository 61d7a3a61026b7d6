# Regressions of the bugs found by the thirteenth fuzzing round (fuzz_compile --extra:
# scans, pointwise ops, reductions and indexing the earlier rounds never drew), each
# against torch where torch is installed and against expected values otherwise, eager
# and compiled (the compiled functions called several times: the capture and the
# cached entries).
import math
import warnings

import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401


# ---- 1. torch's float constants: st.nan / inf / pi / e ----------------------------

def test_float_constants_are_torchs():
    # fuzz_compile --extra seed 1176041: st.where(v < -1, st.nan, v) raised
    # AttributeError: symtrace had no nan / inf / pi / e
    assert math.isnan(st.nan) and isinstance(st.nan, float)
    assert st.inf == math.inf and st.pi == math.pi and st.e == math.e
    torch = pytest.importorskip("torch")
    for n in ("nan", "inf", "pi", "e"):
        a, b = getattr(st, n), getattr(torch, n)
        assert type(a) is type(b) and (a == b or (math.isnan(a) and math.isnan(b)))


@pytest.mark.parametrize("mode", MODES)
def test_nan_constant_in_a_compiled_where(mode):
    def fn(v):
        return st.nanmean(st.where(v < -1, st.nan, v), -1, keepdim=True), \
            st.where(v > 0, st.inf, -st.inf) * st.pi
    f = maybe_compiled(fn, mode)
    xv = [[-2.0, 0.5, 3.0], [1.0, -3.0, -4.0]]
    for _ in range(3):
        m, w = f(st.tensor(xv))
        np.testing.assert_allclose(m.numpy(), [[1.75], [1.0]], rtol=1e-6)
        np.testing.assert_array_equal(w.numpy(), np.where(np.asarray(xv) > 0, np.inf, -np.inf))


# ---- 2. a copy_ of a tensor that needs grad into an integer / bool view ----------

@pytest.mark.parametrize("dt", ["bool", "int64", "uint8"])
@pytest.mark.parametrize("mode", MODES)
def test_copy_into_integer_view_does_not_require_grad(mode, dt):
    # fuzz_compile --extra seed 1176087: x0 = b[..., 1::2] (bool) then x0.copy_(v)
    # with v needing grad made the view and its base require grad (a CopySlices node
    # on an integer tensor); torch's integer views are no differentiable views
    def fn(b, y):
        x0 = b[:, 1::2]
        x0.copy_(y * 2)
        return x0, b
    f = maybe_compiled(fn, mode)
    yv = np.array([[0.0, 1.5, -2.0], [3.0, 0.0, 0.25]], dtype=np.float32)
    for _ in range(3):
        b = st.zeros(2, 6, dtype=getattr(st, dt))
        y = st.tensor(yv, requires_grad=True)
        x0, bb = f(b, y)
        assert not x0.requires_grad and not bb.requires_grad and not b.requires_grad
        assert x0.grad_fn is None and b.grad_fn is None
        expect = np.zeros((2, 6))
        expect[:, 1::2] = (yv * 2).astype(dt)
        np.testing.assert_array_equal(b.numpy(), expect.astype(dt))
        (y * 1).sum().backward()  # y's history is untouched
        np.testing.assert_array_equal(y.grad.numpy(), np.ones((2, 3)))


def test_copy_into_integer_view_matches_torch():
    torch = pytest.importorskip("torch")
    got = []
    for L in (torch, st):
        b = L.zeros(3, 4, dtype=L.int32)
        y = L.ones(2, 3, requires_grad=True) * 3
        v = b.t()[1::2]           # a non-contiguous view of a contiguous base
        v.copy_(y)
        w = b[1:].diagonal()      # through a second view, by setitem
        w[:] = y[0, :2] + 1
        got.append((v.requires_grad, w.requires_grad, b.requires_grad, b.tolist()))
    assert got[1] == got[0]


# ---- 3. searchsorted / bucketize of bool values against number boundaries ---------

_SEARCH_CASES = [  # (boundaries, values, left result, right result); None: refused
    ([False, True], [0.5, 1.5], [1, 2], [1, 2]),
    ([False, True], [0, 1, 2], [0, 1, 2], [1, 2, 2]),
    ([-1.0, 0.0, 2.0], [True, False], [2, 1], [2, 2]),
    ([-1, 0, 2], [True, False], [2, 1], [2, 2]),
    ([-1.0, 0.0, 2.0], True, 2, 2),
    ([False, True], 1, 1, 2),
    ([False, True], True, None, None),
    ([False, True], [True, False], None, None),
]


@pytest.mark.parametrize("case", range(len(_SEARCH_CASES)))
@pytest.mark.parametrize("mode", MODES)
def test_searchsorted_compares_in_the_common_dtype(mode, case):
    # the probe of the --extra ops: torch compares the values and the boundaries in
    # their common dtype and refuses only a bool one; symtrace refused any bool
    # operand (and a bool scalar value with a TypeError)
    bd, vals, left, right = _SEARCH_CASES[case]

    def fn(b, v):
        return st.searchsorted(b, v), st.searchsorted(b, v, right=True)
    f = maybe_compiled(fn, mode, fullgraph=False)
    for _ in range(2):
        b = st.tensor(bd)
        v = st.tensor(vals) if isinstance(vals, list) else vals
        if left is None:
            with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
                f(b, v)
            continue
        lo, hi = f(b, v)
        assert lo.dtype == st.int64 and lo.tolist() == left and hi.tolist() == right


def test_bucketize_of_bool_values_matches_torch():
    torch = pytest.importorskip("torch")
    got = []
    for L in (torch, st):
        x = L.tensor([[True, False], [False, False]])
        got.append((L.bucketize(x, L.tensor([-1, 0, 2, 3])).tolist(),
                     L.bucketize(x, L.tensor([-1.0, 0.5, 1.0]), right=True, out_int32=True).tolist()))
    assert got[1] == got[0]


# ---- 4. scatter of an overflowing number through an empty index -----------------

@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_scatter_value_not_converted_for_an_empty_index(mode, inplace):
    # fuzz_compile --dynamic seed 1171053: x.scatter(-2, idx.expand(4, 0), -0.25) on a
    # uint8 x raised "value cannot be converted to type uint8_t"; torch checks the
    # value only when the index has elements (and still refuses it otherwise)
    def fn(x, i):
        if inplace:
            return x.scatter_(0, i, -0.25)
        return x.scatter(0, i, -0.25), x.scatter(0, i, 400, reduce="add")
    f = maybe_compiled(fn, mode)
    for _ in range(2):
        x = st.tensor([[1, 2, 3], [4, 5, 6]], dtype=st.uint8)
        out = f(x, st.zeros(0, 3, dtype=st.int64))
        for o in (out if isinstance(out, tuple) else (out,)):
            assert o.dtype == st.uint8 and o.tolist() == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(RuntimeError, match="without overflow"):
        f(st.zeros(2, 3, dtype=st.uint8), st.zeros(1, 3, dtype=st.int64))


# ---- 5. tensor(data, dtype=<integer>) refuses numbers that overflow it -------------

_OVERFLOWING = [([300], "uint8"), ([-256], "uint8"), ([-1.0], "uint8"), ([255.5], "uint8"),
                ([-0.5], "uint8"), ([128], "int8"), ([-128.5], "int8"), ([[1, 2], [3, -32769]], "int16"),
                ([2 ** 31], "int32"), ([float("nan")], "int32"), ([float("inf")], "int64"),
                ([9.3e18], "int64"), ([True, 300], "uint8"), (300, "uint8")]
_FITTING = [([-1], "uint8", [255]), ([-255], "uint8", [1]), ([255.0, -0.0], "uint8", [255, 0]),
            ([127.0, -128.0, 2.5], "int8", [127, -128, 2]), ([-2 ** 31, 2 ** 31 - 1], "int32", None),
            ([-(2 ** 63)], "int64", None), ([1e10, float("nan")], "bool", [True, True]),
            ([1e10], "float16", [float("inf")])]


@pytest.mark.parametrize("data,dt", _OVERFLOWING)
def test_tensor_from_numbers_refuses_integer_overflow(data, dt):
    # the probe of the --extra ops: torch.tensor([[1.0, -1.0]], dtype=uint8) raises
    # (c10's checked convert); symtrace wrapped the value
    with pytest.raises(RuntimeError, match="value cannot be converted to type %s without overflow" % dt):
        st.tensor(data, dtype=getattr(st, dt))


@pytest.mark.parametrize("data,dt,expect", _FITTING)
def test_tensor_from_numbers_that_fit(data, dt, expect):
    got = st.tensor(data, dtype=getattr(st, dt)).tolist()
    assert got == (data if expect is None else expect)


def test_tensor_overflow_matches_torch():
    torch = pytest.importorskip("torch")
    for data, dt in _OVERFLOWING:
        with pytest.raises(RuntimeError, match="without overflow"):
            torch.tensor(data, dtype=getattr(torch, dt))
    for data, dt, _ in _FITTING:
        assert st.tensor(data, dtype=getattr(st, dt)).tolist() == \
            torch.tensor(data, dtype=getattr(torch, dt)).tolist()


# ---- 6. bool operands torch's kernels refuse: addcmul, index_reduce, mean scatter ---

_BOOL_REFUSED = [
    (lambda L, t: L.addcmul(t, t, t), "addcmul_cpu_out"),
    (lambda L, t: t.clone().addcmul_(t, t, value=2), "addcmul_cpu_out"),
    (lambda L, t: L.addcmul(t[:0], t[:0], t[:0]), "addcmul_cpu_out"),
    (lambda L, t: t.index_reduce(0, L.tensor([0, 0]), t[:2], "amax"), "index_func_"),
    (lambda L, t: t.index_reduce(0, L.tensor([2]), t[:1], "prod", include_self=False),
     "index_reduce_func_exclude_input_init"),
    (lambda L, t: t.index_reduce(0, L.tensor([], dtype=L.int64), t[:0], "amin", include_self=False),
     "index_reduce_func_exclude_input_init"),
    (lambda L, t: t.reshape(3, 1).index_reduce(0, L.tensor([1]), t[:1].reshape(1, 1), "mean"),
     "div_floor_cpu"),
    (lambda L, t: t.reshape(1, 3).index_reduce(1, L.tensor([1]), t[:1].reshape(1, 1), "amax",
                                               include_self=False), "index_reduce_func_exclude_input_init"),
    (lambda L, t: t.index_reduce(0, L.tensor([1]), t[:1], "mean"), "index_func_"),
    (lambda L, t: t.scatter_reduce(0, L.tensor([0, 0]), t[:2], "mean"), "scatter_gather_tensor_cpu_reduce_mean"),
    (lambda L, t: t.scatter_reduce(0, L.tensor([], dtype=L.int64), t[:0], "mean"), "div_floor_cpu"),
]


@pytest.mark.parametrize("case", range(len(_BOOL_REFUSED)))
def test_bool_kernels_torch_lacks_are_refused(case):
    # the probe of the --extra ops: symtrace computed these on bool tensors (or raised
    # a RuntimeError of floor_divide) where torch raises NotImplementedError
    fn, kern = _BOOL_REFUSED[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (index_reduce's beta warning, once per process)
        with pytest.raises(NotImplementedError, match="\"%s\" not implemented for 'Bool'" % kern):
            fn(st, st.tensor([True, False, True]))


def test_bool_kernels_refused_as_torch_and_mixed_dtypes_kept():
    torch = pytest.importorskip("torch")
    for fn, kern in _BOOL_REFUSED:
        with warnings.catch_warnings(), pytest.raises(NotImplementedError, match=kern):
            warnings.simplefilter("ignore")
            fn(torch, torch.tensor([True, False, True]))
    for L in (torch, st):  # a non-bool result keeps working
        t, i = L.tensor([True, False]), L.tensor([1, 2])
        got = (L.addcmul(t, i, t).tolist(), L.addcmul(L.tensor([1.0, 2.0]), t, t).tolist(),
               i.scatter_reduce(0, L.tensor([0, 0]), L.tensor([3, 4]), "mean").tolist(),
               t.scatter_reduce(0, L.tensor([1]), L.tensor([True]), "amax", include_self=False).tolist(),
               # (2-d bool with include_self: torch's kernel has a bool case)
               t.reshape(2, 1).index_reduce(0, L.tensor([1, 1]), L.tensor([[True], [False]]), "amax").tolist(),
               t.reshape(1, 2).index_reduce(1, L.tensor([0]), L.tensor([[False]]), "prod").tolist())
        if L is torch:
            ref = got
    assert got == ref


# ---- 7. searchsorted with NaN: torch's binary search, not numpy's NaN-last order ---

_NAN = float("nan")
_NAN_CASES = [  # boundaries, values, right, expected (torch 2.13's)
    ([-1.0, 0.0, 1.0, _NAN], [3.0, _NAN, 0.5, -2.0], False, [4, 4, 2, 0]),
    ([-1.0, 0.0, 1.0, _NAN], [3.0, _NAN, 0.0], True, [4, 4, 2]),
    ([-1.0, 0.0, 1.0], [_NAN, 1.0], False, [3, 2]),
    ([[0.0, _NAN], [_NAN, _NAN]], [[1.0, -1.0], [_NAN, 0.0]], False, [[2, 2], [2, 2]]),
]


@pytest.mark.parametrize("case", range(len(_NAN_CASES)))
@pytest.mark.parametrize("mode", MODES)
def test_searchsorted_with_nan_follows_torchs_search(mode, case):
    # the NaN probe of the sorting ops: torch's search moves right past every NaN it
    # compares with (a NaN value lands at the end); numpy's, used before, sorts NaN
    # last (a NaN value landed before the NaN boundaries: 3 where torch gives 4)
    bd, vals, right, expect = _NAN_CASES[case]
    f = maybe_compiled(lambda b, v: st.searchsorted(b, v, right=right), mode, fullgraph=False)
    for _ in range(2):
        assert f(st.tensor(bd), st.tensor(vals)).tolist() == expect


def test_searchsorted_with_nan_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    pool = [_NAN, -math.inf, math.inf, -1.0, 0.0, 0.5, 1.0, 2.0]
    for _ in range(60):
        b = rng.choice(pool, size=(2, int(rng.integers(0, 6))))
        if rng.random() < 0.7:
            b = np.sort(b, -1)
        v = rng.choice(pool, size=(2, int(rng.integers(0, 4)))).astype(np.float32)
        for right in (False, True):
            for bb in (b, b[0]):
                ref = torch.searchsorted(torch.tensor(bb), torch.tensor(v), right=right).tolist()
                assert st.searchsorted(st.tensor(bb), st.tensor(v), right=right).tolist() == ref


# ---- 8. uint8 div(rounding_mode='trunc') by a negative number -------------------

@pytest.mark.parametrize("mode", MODES)
def test_uint8_trunc_division_by_a_negative_number_wraps_it(mode):
    # the integer probe: div(x_uint8, -3, rounding_mode='trunc') computes in uint8 (-3
    # wraps to 253, as torch's); symtrace's trunc correction took -3's sign and added
    # one to every nonzero-remainder quotient
    def fn(x):
        return (st.div(x, -3, rounding_mode="trunc"), st.div(x, st.tensor(-3), rounding_mode="trunc"),
                st.div(-7, x.clamp(min=1), rounding_mode="trunc"))
    f = maybe_compiled(fn, mode)
    for _ in range(2):
        x = st.tensor([128, 127, 255, 0, 5, 6, 9], dtype=st.uint8)
        a, b, c = f(x)
        assert a.dtype == st.uint8 and a.tolist() == [0, 0, 1, 0, 0, 0, 0]
        assert b.tolist() == [0, 0, 1, 0, 0, 0, 0]
        assert c.dtype == st.uint8 and c.tolist() == [1, 1, 0, 249, 49, 41, 27]


# ---- 9. a dtype without a kernel raises NotImplementedError, as torch ------------

_NO_KERNEL = [
    (lambda L, b, i: b.abs(), "abs_cpu"),
    (lambda L, b, i: b // b, "div_floor_cpu"),
    (lambda L, b, i: L.remainder(b, b), "remainder_cpu"),
    (lambda L, b, i: i.float().to(L.int64).softmax(0), "softmax"),
    (lambda L, b, i: L.matmul(b.reshape(2, 2), b.reshape(2, 2)), "addmm_impl_cpu_"),
    (lambda L, b, i: L.nn.functional.gelu(i), "GeluKernelImpl"),
]


@pytest.mark.parametrize("case", range(len(_NO_KERNEL)))
@pytest.mark.parametrize("mode", MODES)
def test_missing_dtype_kernel_is_not_implemented_error(mode, case):
    # the integer probe: abs() of a bool tensor raised RuntimeError where torch raises
    # NotImplementedError ("abs_cpu" not implemented for 'Bool'); the fuzzers compare
    # exception types. (NotImplementedError is a RuntimeError: except clauses hold.)
    fn, kern = _NO_KERNEL[case]
    f = maybe_compiled(lambda b, i: fn(st, b, i), mode, fullgraph=False)
    for _ in range(2):
        with pytest.raises(NotImplementedError, match=kern):
            f(st.tensor([True, False, True, True]), st.tensor([1, 2, 3, 4]))


def test_missing_dtype_kernel_matches_torch():
    torch = pytest.importorskip("torch")
    for fn, kern in _NO_KERNEL:
        with pytest.raises(NotImplementedError, match=kern):
            fn(torch, torch.tensor([True, False, True, True]), torch.tensor([1, 2, 3, 4]))
