# symtrace.testing against torch.testing: assert_close passes and fails on the same inputs as
# torch's (tensors of each dtype, 0-d tensors, Python numbers, bools, None, numpy arrays and
# scalars, nested sequences and mappings, tolerances, equal_nan, check_dtype/stride, msg=), with
# torch's messages word for word once 'symtrace' reads 'torch'; assert_allclose's deprecation
# and defaults; make_tensor's dtypes, ranges, noncontiguity, exclude_zero and errors. The
# torch-free tests at the top check the same behaviour on their own (Python 3.12 has no torch).
import math
import warnings

import numpy as np
import pytest

import symtrace as st
from symtrace.testing import assert_close, make_tensor

NAN, INF = math.nan, math.inf


# ---------------- without torch ----------------
def test_assert_close_tolerances_and_nan():
    assert_close(st.tensor([1.0, 2.0]), st.tensor([1.0, 2.0 + 1e-6]))            # float32 rtol 1.3e-6
    with pytest.raises(AssertionError, match="Tensor-likes are not close!"):
        assert_close(st.tensor([1.0, 2.0]), st.tensor([1.0, 2.0 + 1e-4]))
    assert_close(st.tensor([1.0], dtype=st.float64), st.tensor([1.0 + 5e-8], dtype=st.float64))
    with pytest.raises(AssertionError):
        assert_close(st.tensor([1.0], dtype=st.float64), st.tensor([1.0 + 5e-7], dtype=st.float64))
    with pytest.raises(AssertionError, match="Scalars are not close!"):
        assert_close(st.tensor(NAN), st.tensor(NAN))
    assert_close(st.tensor([NAN, 1.0]), st.tensor([NAN, 1.0]), equal_nan=True)
    assert_close(st.tensor([INF, -INF]), st.tensor([INF, -INF]))
    with pytest.raises(AssertionError, match="Tensor-likes are not equal!"):
        assert_close(st.tensor([1, 2]), st.tensor([1, 3]))                       # integers: exact
    assert_close(st.tensor([1.0, 2.0]), st.tensor([1.5, 2.0]), rtol=0, atol=0.5)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        assert_close(st.tensor([1.0]), st.tensor([1.0]), rtol=1e-3)
    with pytest.raises(AssertionError, match="attribute 'dtype'"):
        assert_close(st.tensor([1.0]), st.tensor([1.0], dtype=st.float64))
    assert_close(st.tensor([1.0]), st.tensor([1.0], dtype=st.float64), check_dtype=False)
    assert_close({"a": [st.tensor([1.0]), 2, None, True]}, {"a": [st.tensor([1.0]), 2, None, True]})
    with pytest.raises(AssertionError, match=r"The failure occurred for item \['a'\]\[1\]"):
        assert_close({"a": [st.tensor([1.0]), 2]}, {"a": [st.tensor([1.0]), 3]})
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(1.0, 2.0, msg="custom")


def test_make_tensor_ranges_without_torch():
    for dt, lo, hi in ((st.float32, -9, 9), (st.float64, -9, 9), (st.float16, -9, 9), (st.bfloat16, -9, 9),
                       (st.int32, -9, 9), (st.int64, -9, 9), (st.bool, 0, 1)):
        t = make_tensor(20, 30, dtype=dt, device="cpu")
        assert t.dtype is dt and tuple(t.shape) == (20, 30) and t.is_contiguous()
        v = t.to(st.float64).numpy()
        assert lo <= v.min() and v.max() <= hi and v.max() > v.min()
    t = make_tensor((4, 5), dtype=st.float32, device="cpu", low=2, high=3, noncontiguous=True, requires_grad=True)
    v = t.detach().numpy()
    assert not t.is_contiguous() and t.requires_grad and ((2 <= v) & (v < 3)).all()
    z = make_tensor(400, dtype=st.int32, device="cpu", low=-1, high=2, exclude_zero=True).numpy()
    assert set(z.tolist()) == {-1, 1}


# ---------------- against torch ----------------
def _run(fn):
    """(exception type name, message) of fn(), or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            fn()
    except Exception as e:      # noqa: BLE001  (comparing whatever each raises)
        return type(e).__name__, str(e)
    return None


def _same(torch, build):
    """build(lib, testing) makes the inputs with lib (symtrace or torch) and calls its testing
    module; the outcomes must agree, messages modulo the library's name."""
    got = _run(lambda: build(st, st.testing))
    exp = _run(lambda: build(torch, torch.testing))
    if got is not None:
        got = (got[0], got[1].replace("symtrace", "torch"))
    assert got == exp


def _dt(lib, name):
    return getattr(lib, name)


CASES = {
    "close_fail": lambda L, T: T.assert_close(L.tensor([1., 2., 3., 4.]), L.tensor([1., 2., 3., 4.1])),
    "close_pass": lambda L, T: T.assert_close(L.tensor([1., 2.]), L.tensor([1., 2. + 2e-6])),
    "dtype": lambda L, T: T.assert_close(L.tensor([1., 2.]), L.tensor([1., 2.], dtype=L.float64)),
    "dtype_off": lambda L, T: T.assert_close(L.tensor([1., 2.]), L.tensor([1., 2.5], dtype=L.float64),
                                             check_dtype=False),
    "int_vs_float_off": lambda L, T: T.assert_close(L.tensor([1, 2]), L.tensor([1., 2.5]), check_dtype=False),
    "shape": lambda L, T: T.assert_close(L.tensor([1., 2.]), L.tensor([1., 2., 3.])),
    "nan_scalar": lambda L, T: T.assert_close(L.tensor(NAN), L.tensor(NAN)),
    "nan_equal": lambda L, T: T.assert_close(L.tensor([NAN, 1.]), L.tensor([NAN, 1.]), equal_nan=True),
    "nan_mismatch": lambda L, T: T.assert_close(L.tensor([NAN, 1.]), L.tensor([NAN, 2.])),
    "nan_expected": lambda L, T: T.assert_close(L.tensor([1., 5.]), L.tensor([NAN, 2.])),
    "inf": lambda L, T: T.assert_close(L.tensor([1., INF]), L.tensor([1., -INF])),
    "zero_expected": lambda L, T: T.assert_close(L.tensor([0., 1.]), L.tensor([1e-6, 0.])),
    "int_2d": lambda L, T: T.assert_close(L.tensor([[1, 2], [3, 4]]), L.tensor([[1, 2], [3, 5]])),
    "bool": lambda L, T: T.assert_close(L.tensor([True, False]), L.tensor([True, True])),
    "float16": lambda L, T: T.assert_close(L.tensor([1., 2.], dtype=L.float16), L.tensor([1., 2.01], dtype=L.float16)),
    "float16_pass": lambda L, T: T.assert_close(L.tensor([1., 2.], dtype=L.float16),
                                                L.tensor([1., 2.001], dtype=L.float16)),
    "bfloat16": lambda L, T: T.assert_close(L.tensor([1., 2.], dtype=L.bfloat16),
                                            L.tensor([1., 2.1], dtype=L.bfloat16)),
    "float64": lambda L, T: T.assert_close(L.tensor([1., 2.], dtype=L.float64), L.tensor([1., 2. + 1e-6],
                                                                                         dtype=L.float64)),
    "scalar_tensor": lambda L, T: T.assert_close(L.tensor(2.0), L.tensor(3.0)),
    "scalar_tensor_int": lambda L, T: T.assert_close(L.tensor(2), L.tensor(3)),
    "msg_str": lambda L, T: T.assert_close(L.tensor([1., 2., 3.]), L.tensor([1., 4., 5.]), msg="Argh"),
    "msg_callable": lambda L, T: T.assert_close(L.tensor([1., 2., 3.]), L.tensor([1., 4., 5.]),
                                                msg=lambda m: f"Header\n\n{m}\n\nFooter"),
    "rtol_only": lambda L, T: T.assert_close(L.tensor([1.]), L.tensor([1.]), rtol=1e-3),
    "atol_only": lambda L, T: T.assert_close(L.tensor([1.]), L.tensor([1.]), atol=1e-3),
    "exact": lambda L, T: T.assert_close(L.tensor([1.]), L.tensor([1.1]), rtol=0, atol=0),
    "rtol_zero_expected": lambda L, T: T.assert_close(L.tensor([1., 0.]), L.tensor([1.1, 1e-9]), rtol=0.2, atol=0),
    "stride": lambda L, T: T.assert_close(L.tensor([[1., 2.], [3., 4.]]).t(), L.tensor([[1., 3.], [2., 4.]]),
                                          check_stride=True),
    "stride_off": lambda L, T: T.assert_close(L.tensor([[1., 2.], [3., 4.]]).t(), L.tensor([[1., 3.], [2., 4.]])),
    "nested": lambda L, T: T.assert_close([L.tensor([1.]), {"a": L.tensor([2.]), "b": 3}],
                                          [L.tensor([1.]), {"a": L.tensor([2.5]), "b": 3}]),
    "tuple_vs_list": lambda L, T: T.assert_close((L.tensor([1.]), L.tensor([2.])),
                                                 [L.tensor([1.]), L.tensor([2.0001])]),
    "keys": lambda L, T: T.assert_close({"a": 1, "c": 2}, {"b": 1, "c": 2}),
    "length": lambda L, T: T.assert_close([1, 2], [1, 2, 3]),
    "int_float": lambda L, T: T.assert_close(1, 1.0),
    "int_float_off": lambda L, T: T.assert_close(1, 1.0, check_dtype=False),
    "float_close": lambda L, T: T.assert_close(1.0, 1.0 + 1e-8),
    "float_far": lambda L, T: T.assert_close(1.0, 1.1),
    "float_zero": lambda L, T: T.assert_close(0.0, 1e-3),
    "float_nan": lambda L, T: T.assert_close(NAN, NAN),
    "float_nan_equal": lambda L, T: T.assert_close(NAN, NAN, equal_nan=True),
    "bools": lambda L, T: T.assert_close(True, False),
    "none": lambda L, T: T.assert_close(None, 1),
    "none_none": lambda L, T: T.assert_close(None, None),
    "strings": lambda L, T: T.assert_close("a", "a"),
    "tensor_vs_number": lambda L, T: T.assert_close(L.tensor([1.]), 1.0),
    "numpy_arrays": lambda L, T: T.assert_close(np.array([1., 2.]), np.array([1., 2.5])),
    "numpy_int_arrays": lambda L, T: T.assert_close(np.array([1, 2]), np.array([1, 2])),
    "numpy_scalar": lambda L, T: T.assert_close(np.float32(1.0), 1.0),
    "numpy_bool": lambda L, T: T.assert_close(np.bool_(True), True),
    "empty": lambda L, T: T.assert_close(L.tensor([]), L.tensor([])),
    "big_mismatch": lambda L, T: T.assert_close(L.arange(60.).reshape(3, 4, 5), L.arange(60.).reshape(3, 4, 5) * 1.01),
    "allclose_pass": lambda L, T: T.assert_allclose(L.tensor([1., 2.]), [1., 2.00001]),
    "allclose_fail": lambda L, T: T.assert_allclose(L.tensor([1., 2.]), [1., 2.1]),
    "allclose_nan": lambda L, T: T.assert_allclose([1., NAN], [1., NAN]),
    "allclose_msg": lambda L, T: T.assert_allclose(L.tensor([1., 2.]), [1., 2.1], msg="m"),
    "allclose_tol": lambda L, T: T.assert_allclose(L.tensor([1., 2.]), L.tensor([1., 2.1]), rtol=0.1, atol=0),
    "allclose_f64": lambda L, T: T.assert_allclose(L.tensor([1., 2.], dtype=L.float64), [1., 2. + 1e-4]),
    "allclose_int": lambda L, T: T.assert_allclose(L.tensor([1, 2]), L.tensor([1., 2.])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_assert_close_matches_torch(torch, case):
    _same(torch, CASES[case])


def test_assert_allclose_is_deprecated(torch):
    for lib in (st, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.testing.assert_allclose(lib.tensor([1.0]), [1.0])
        assert [x.category for x in w] == [FutureWarning]
        msg = str(w[0].message)
        if lib is torch:
            assert got.replace("symtrace", "torch") == msg
        else:
            got = msg


def _props(lib, t):
    v = t.detach().to(lib.float64) if t.dtype.is_floating_point else t
    return (str(t.dtype).split(".")[-1], tuple(t.shape), t.stride(), t.is_contiguous(), t.requires_grad,
            float(v.min()), float(v.max()))


MAKE = [
    dict(shape=(3, 4), dtype="float32"), dict(shape=(3, 4), dtype="float64", low=-1, high=1),
    dict(shape=(50,), dtype="float16"), dict(shape=(50,), dtype="bfloat16", low=0, high=2),
    dict(shape=(6, 7), dtype="int32"), dict(shape=(6, 7), dtype="int64", low=-3, high=3),
    dict(shape=(40,), dtype="bool"), dict(shape=(2, 3, 4), dtype="float32", noncontiguous=True),
    dict(shape=(2, 5), dtype="int64", noncontiguous=True, exclude_zero=True, low=-1, high=2),
    dict(shape=(1,), dtype="float32", noncontiguous=True), dict(shape=(4, 4), dtype="float32", requires_grad=True),
    dict(shape=(4,), dtype="float32", low=-1e39, high=1e39), dict(shape=(100,), dtype="float32", exclude_zero=True,
                                                                  low=0, high=1e-30),
    dict(shape=(5,), dtype="int32", low=-1e10, high=1e10), dict(shape=[2, 3], dtype="float64"),
]


@pytest.mark.parametrize("kw", MAKE, ids=[str(i) for i in range(len(MAKE))])
def test_make_tensor_matches_torch(torch, kw):
    kw = dict(kw)
    shape = kw.pop("shape")
    dt = kw.pop("dtype")
    s = make_tensor(*shape, dtype=_dt(st, dt), device="cpu", **kw)
    t = torch.testing.make_tensor(*shape, dtype=_dt(torch, dt), device="cpu", **kw)
    ps, pt = _props(st, s), _props(torch, t)
    assert ps[:5] == pt[:5]                 # dtype, shape, strides, contiguity, requires_grad
    lo = max(kw.get("low", -9), -3.4e38) if dt != "bool" else 0
    hi = min(kw.get("high", 10 if dt in ("int32", "int64") else 9), 3.4e38) if dt != "bool" else 1
    assert lo <= ps[5] and ps[6] <= hi, (ps, kw)
    if kw.get("exclude_zero"):
        assert (s != 0).all().item()
    # make_tensor(shape) also takes the shape as one sequence
    assert tuple(make_tensor(shape, dtype=_dt(st, dt), device="cpu").shape) == tuple(shape)


ERR_MAKE = [
    dict(low=2, high=1), dict(low=NAN), dict(high=NAN), dict(requires_grad=True, dtype="int32"),
    dict(requires_grad=True, dtype="bool"), dict(low=100, high=200, dtype="bool"),
    dict(low=2 ** 40, high=2 ** 41, dtype="int32"), dict(noncontiguous=True, memory_format="x"),
]


@pytest.mark.parametrize("kw", ERR_MAKE, ids=[str(i) for i in range(len(ERR_MAKE))])
def test_make_tensor_errors_match_torch(torch, kw):
    kw = dict(kw)
    dt = kw.pop("dtype", "float32")
    mf = kw.pop("memory_format", None)
    got = _run(lambda: make_tensor(3, dtype=_dt(st, dt), device="cpu", memory_format=mf, **kw))
    exp = _run(lambda: torch.testing.make_tensor(3, dtype=_dt(torch, dt), device="cpu",
                                                 memory_format=None if mf is None else torch.channels_last, **kw))
    assert got is not None and exp is not None
    assert got[0] == exp[0]
    if mf is None:
        assert got[1].replace("symtrace", "torch") == exp[1]


def test_make_tensor_low_equal_high_warns(torch):
    with pytest.warns(FutureWarning, match="low==high"):
        t = make_tensor(3, dtype=st.float32, device="cpu", low=2.0, high=2.0)
    with pytest.warns(FutureWarning, match="low==high"):
        tt = torch.testing.make_tensor(3, dtype=torch.float32, device="cpu", low=2.0, high=2.0)
    assert t.tolist() == tt.tolist() == [2.0, 2.0, 2.0]
