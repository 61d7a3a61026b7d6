# tests/python/test_numpy_wrap.py - what numpy computes from a tensor comes back
# as a tensor (Tensor.__array_wrap__, symtrace/_tensor.py), as torch's: a tensor
# with a numpy array on its right (t * a: numpy runs the ufunc on t's values,
# Tensor's operator having declined), and numpy ufuncs called on tensors
# (np.sin(t)). Bool results come back as uint8, torch's workaround.
import operator
import warnings

import numpy as np
import pytest

import symtrace as st

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
       operator.mod, operator.pow, operator.matmul]


def _key(r):
    return type(r).__name__, str(r.dtype).split(".")[-1], r.tolist()


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_tensor_with_an_array_on_its_right_is_a_tensor(op):
    t = st.tensor([1.0, 2.0])
    a = np.array([3.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # numpy 2's __array_wrap__ signature
        r = op(t, a)
    assert isinstance(r, st.Tensor)
    assert r.dtype == st.float64                # numpy's float32 x float64
    np.testing.assert_allclose(r.numpy(), op(np.array([1.0, 2.0], dtype=np.float32), a))


def test_ufuncs_and_dtypes_come_back_as_tensors():
    r = np.sin(st.tensor([1.0, 2.0]))
    assert isinstance(r, st.Tensor) and r.dtype == st.float32
    r = st.tensor([1, 2]) + np.array(2)
    assert isinstance(r, st.Tensor) and r.dtype == st.int64 and r.tolist() == [3, 4]
    r = st.tensor([True, False]) & np.array([True, True])
    assert r.dtype == st.uint8 and r.tolist() == [1, 0]
    t = st.tensor([1.0, 2.0])
    t += np.array([3.0, 4.0])                   # falls back to t = t + a
    assert isinstance(t, st.Tensor) and t.tolist() == [4.0, 6.0]


def test_what_numpy_refuses_still_raises():
    with pytest.raises(ValueError):
        st.tensor([1.0, 2.0]) * np.ones(3)
    with pytest.raises(RuntimeError, match="requires grad"):
        st.tensor([1.0, 2.0], requires_grad=True) * np.ones(2)
    with pytest.raises(TypeError):
        np.ones(2) * st.tensor([1.0, 2.0])      # as torch: the array on the left declines
    with pytest.raises(TypeError):
        st.tensor([1.0, 2.0]) > np.ones(2)


def test_matches_torch(torch):
    cases = [lambda m, op=op: op(m.tensor([1.0, 2.0]), np.array([3.0, 0.5])) for op in OPS]
    cases += [lambda m: m.tensor([1, 2]) * np.array([1.5, 2.0]),
              lambda m: m.tensor([1.0, 2.0]) + np.array(2.0),
              lambda m: m.tensor([[1.0, 2.0]]) * np.ones((2, 2), dtype=np.float32),
              lambda m: np.exp(m.tensor([1.0, -2.0])),
              lambda m: m.tensor([True, False]) ^ np.array([True, True])]
    for f in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # torch's __array_wrap__ takes one argument
            want = _key(f(torch))
        assert _key(f(st)) == want
