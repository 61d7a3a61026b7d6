# Creation (tensor, zeros, ones, full, empty, arange, *_like, rand, randn,
# randint, manual_seed) and conversion (tolist, item, numpy, np.asarray, DLPack).
import array
import math

import numpy as np
import pytest

import symtrace as st
from conftest import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_close, dtype_name, make, sd, is_float


def test_dtype_aliases():
    assert st.float == st.float32 and st.double == st.float64 and st.half == st.float16
    assert st.long == st.int64 and st.int == st.int32 and st.short == st.int16
    assert len({dtype_name(sd(n)) for n in ALL_DTYPES}) == 10


@pytest.mark.parametrize("data,dtype,shape", [
    ([1, 2, 3], "int64", (3,)), ([1.0, 2, 3], "float32", (3,)), ([True, False], "bool", (2,)),
    ([[1, 2], [3, 4]], "int64", (2, 2)), ([[1.5], [2.5]], "float32", (2, 1)), (3, "int64", ()),
    (2.5, "float32", ()), (True, "bool", ()), ([], "float32", (0,)), ([[]], "float32", (1, 0)),
    ([[[1]]], "int64", (1, 1, 1)),
])
def test_tensor_from_python(data, dtype, shape):
    t = st.tensor(data)
    assert isinstance(t, st.Tensor)
    assert tuple(t.shape) == shape
    assert dtype_name(t.dtype) == dtype
    assert t.tolist() == data if shape != () else t.item() == data
    assert t.is_contiguous()


def test_tensor_with_dtype_and_torch_inference(torch):
    for data in ([1, 2.5], [[1, 2], [3, 4]], [True, 1], [1, True, 2.0], 7, 0.5, [[0.1, 0.2]]):
        a, b = st.tensor(data), torch.tensor(data)
        assert_close(a, b)
    for n in ALL_DTYPES:
        assert_close(st.tensor([0, 1.5, -2], dtype=sd(n)), torch.tensor([0, 1.5, -2], dtype=getattr(torch, n)))
    assert_close(st.tensor(2**40), torch.tensor(2**40))
    assert_close(st.tensor([[1, 2]], dtype=st.float64), torch.tensor([[1, 2]], dtype=torch.float64))


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.float16, np.int32, np.int64, np.bool_])
def test_tensor_from_numpy_keeps_dtype(np_dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(np_dtype)
    t = st.tensor(a)
    assert dtype_name(t.dtype) == np.dtype(np_dtype).name.replace("bool", "bool")
    np.testing.assert_array_equal(t.numpy(), a)
    a[0, 0] = 1  # st.tensor copies
    assert t[0, 0].item() == 0
    # non-contiguous numpy input
    tt = st.tensor(a.T[::2])
    np.testing.assert_array_equal(tt.numpy(), a.T[::2])
    assert tuple(tt.shape) == a.T[::2].shape


def test_tensor_from_buffer_protocol():
    t = st.tensor(array.array("d", [1.0, 2.5, -3.0]))
    np.testing.assert_array_equal(t.double().numpy(), [1.0, 2.5, -3.0])
    t = st.tensor(array.array("i", [1, 2, 3]))
    np.testing.assert_array_equal(t.long().numpy(), [1, 2, 3])
    t = st.tensor(memoryview(np.arange(6, dtype=np.float32).reshape(2, 3)))
    assert tuple(t.shape) == (2, 3)
    np.testing.assert_array_equal(t.float().numpy(), np.arange(6).reshape(2, 3))
    assert_close(st.tensor(np.float64(2.5)), np.float64(2.5), dtype="float64")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_ones_full_empty(dtype):
    d = sd(dtype)
    for shape in [(2, 3), (0,), (), (1, 0, 2)]:
        assert_close(st.zeros(shape, dtype=d), np.zeros(shape), dtype=dtype)
        assert_close(st.ones(shape, dtype=d), np.ones(shape), dtype=dtype)
        v = True if dtype == "bool" else 3
        assert_close(st.full(shape, v, dtype=d), np.full(shape, v), dtype=dtype)
        e = st.empty(shape, dtype=d)
        assert tuple(e.shape) == shape and e.dtype == d
    assert_close(st.zeros(2, 3, dtype=d), np.zeros((2, 3)), dtype=dtype)
    assert_close(st.ones(4, dtype=d), np.ones(4), dtype=dtype)
    assert tuple(st.empty(2, 3, dtype=d).shape) == (2, 3)


def test_creation_default_dtypes(torch):
    assert st.zeros(2).dtype == st.float32 and st.ones(2).dtype == st.float32
    assert st.empty(2).dtype == st.float32
    for v in (1, 1.5, True):
        assert_close(st.full((2,), v), torch.full((2,), v))
    for args in [(5,), (2, 7), (0, 1, 0.25), (1, 2.5), (5, 0, -1), (-3, 3, 2), (0, 0), (1.0, 3)]:
        assert_close(st.arange(*args), torch.arange(*args), msg=str(args))
    for n in ("float64", "int32", "float16", "bfloat16"):
        assert_close(st.arange(6, dtype=sd(n)), torch.arange(6, dtype=getattr(torch, n)))
    assert_close(st.arange(0, 10, 3, dtype=st.float32), torch.arange(0, 10, 3, dtype=torch.float32))
    assert_close(st.arange(start=1, end=4), torch.arange(start=1, end=4))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_like(dtype):
    x = make((2, 3), dtype, "transposed")
    for fn, ref in [(st.zeros_like, np.zeros), (st.ones_like, np.ones)]:
        r = fn(x.st)
        assert_close(r, ref((2, 3)), dtype=dtype)
        assert r.data_ptr() != x.st.data_ptr()
    assert_close(st.full_like(x.st, 1), np.ones((2, 3)), dtype=dtype)
    e = st.empty_like(x.st)
    assert tuple(e.shape) == (2, 3) and e.dtype == x.st.dtype
    assert_close(st.zeros_like(x.st, dtype=st.float64), np.zeros((2, 3)), dtype="float64")
    if is_float(dtype):
        r = st.rand_like(x.st)
        assert r.dtype == x.st.dtype and tuple(r.shape) == (2, 3)
        r = st.randn_like(x.st)
        assert r.dtype == x.st.dtype and tuple(r.shape) == (2, 3)


def test_rand_randn_randint_and_seed():
    st.manual_seed(0)
    a = st.rand(4000)
    assert a.dtype == st.float32 and tuple(a.shape) == (4000,)
    an = a.numpy()
    assert an.min() >= 0 and an.max() < 1
    assert abs(an.mean() - 0.5) < 0.03 and abs(an.var() - 1 / 12) < 0.01
    b = st.randn(4000).numpy()
    assert abs(b.mean()) < 0.08 and abs(b.std() - 1) < 0.06
    assert ((b > 3) | (b < -3)).mean() < 0.01
    r = st.randint(-3, 5, (3000,))
    assert r.dtype == st.int64
    rn = r.numpy()
    assert rn.min() == -3 and rn.max() == 4
    assert set(np.unique(rn)) == set(range(-3, 5))
    assert tuple(st.rand(2, 3).shape) == (2, 3) and tuple(st.randn((2, 3)).shape) == (2, 3)
    assert st.rand(3, dtype=st.float64).dtype == st.float64
    assert st.randint(0, 3, (2, 2), dtype=st.int32).dtype == st.int32
    # same seed -> same numbers; different draws differ
    st.manual_seed(42)
    x1, y1, z1 = st.rand(8).numpy(), st.randn(8).numpy(), st.randint(0, 100, (8,)).numpy()
    st.manual_seed(42)
    x2, y2, z2 = st.rand(8).numpy(), st.randn(8).numpy(), st.randint(0, 100, (8,)).numpy()
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(z1, z2)
    assert not np.array_equal(st.rand(8).numpy(), x1)
    st.manual_seed(43)
    assert not np.array_equal(st.rand(8).numpy(), x1)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tolist_item(dtype):
    x = make((2, 3), dtype, "transposed")
    lst = x.st.tolist()
    exp = x.np.tolist()
    assert lst == exp
    py = float if is_float(dtype) else (bool if dtype == "bool" else int)
    assert all(type(v) is py for row in lst for v in row)
    it = x.st[1, 2].item()
    assert type(it) is py and it == exp[1][2]
    assert st.tensor([5]).item() == 5
    assert st.tensor(2.5, dtype=sd(dtype)).tolist() == (2.5 if is_float(dtype) else (True if dtype == "bool" else 2))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "bool"])
def test_numpy_and_asarray(dtype):
    x = make((3, 4), dtype, "strided")
    n = x.st.numpy()
    assert n.dtype == np.dtype(dtype) and n.shape == (3, 4)
    np.testing.assert_array_equal(n, x.np.astype(n.dtype))
    a = np.asarray(x.st)
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a, x.np.astype(a.dtype))
    c = make((3, 4), dtype)
    np.testing.assert_array_equal(np.asarray(c.st), c.np.astype(np.dtype(dtype)))
    z = st.tensor(1.5, dtype=sd(dtype)).numpy()
    assert z.shape == ()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool", "float16"])
def test_dlpack_numpy(dtype):
    a = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    t = st.from_dlpack(a)
    assert tuple(t.shape) == (3, 4) and dtype_name(t.dtype) == dtype
    np.testing.assert_array_equal(t.numpy(), a)
    x = make((3, 4), dtype)
    b = np.from_dlpack(x.st)
    np.testing.assert_array_equal(b, x.np.astype(dtype))
    # non-contiguous both ways
    s = st.from_dlpack(a[:, ::2])
    np.testing.assert_array_equal(s.numpy(), a[:, ::2])
    y = make((3, 4), dtype, "transposed")
    np.testing.assert_array_equal(np.from_dlpack(y.st), y.np.astype(dtype))


def test_dlpack_shares_memory():
    a = np.zeros((2, 3), dtype=np.float32)
    t = st.from_dlpack(a)
    a[1, 2] = 7
    assert t[1, 2].item() == 7  # a zero-copy view of the numpy buffer
    x = st.zeros(2, 3)
    b = np.from_dlpack(x)
    x[0, 0] = 5.0
    assert b[0, 0] == 5.0


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dlpack_torch(torch, dtype):
    x = make((3, 4), dtype, "transposed")
    tt = torch.from_dlpack(x.st)
    assert_close(x.st, tt)
    back = st.from_dlpack(x.th)
    assert_close(back, x.th)
    th = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    s = st.from_dlpack(th)
    th[0, 1] = 42  # shared memory
    assert s[0, 1].item() == 42


@pytest.mark.parametrize("value", [2.0, 2.7, -2.7, 0.5, -0.0, 1e3])
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_full_float_value_into_integer_dtype(torch, dtype, value):
    # a float fill truncates toward zero (bool: != 0), as torch; it used to give zeros
    got = st.full((3,), value, dtype=getattr(st, dtype))
    exp = torch.full((3,), value, dtype=getattr(torch, dtype))
    assert got.tolist() == exp.tolist()
    t = st.zeros(2, dtype=getattr(st, dtype))
    t.fill_(value)
    assert t.tolist() == torch.zeros(2, dtype=getattr(torch, dtype)).fill_(value).tolist()


def test_numpy_of_a_tensor_that_requires_grad_under_no_grad():
    """As torch: refused with grad mode on, allowed under no_grad (a pack hook
    of saved_tensors_hooks runs there)."""
    x = st.randn(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy"):
        x.numpy()
    with st.no_grad():
        assert x.numpy().tolist() == x.detach().numpy().tolist()


def test_like_creators_take_requires_grad():
    """zeros_like, ones_like, empty_like, full_like, rand_like, randn_like and
    randint_like take torch's requires_grad= (a fresh leaf)."""
    x = st.ones(2, 3, dtype=st.float64)
    made = [st.zeros_like(x, requires_grad=True), st.ones_like(x, requires_grad=True),
            st.empty_like(x, requires_grad=True), st.full_like(x, 2.0, requires_grad=True),
            st.rand_like(x, requires_grad=True), st.randn_like(x, requires_grad=True),
            st.randint_like(x, 0, 5, requires_grad=True)]
    for t in made:
        assert t.requires_grad and t.is_leaf and t.grad_fn is None
        assert t.shape == (2, 3) and t.dtype is st.float64
    assert not st.zeros_like(x).requires_grad
