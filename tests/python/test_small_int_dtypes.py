# uint8, int8 and int16 (symtrace.uint8/int8/int16; Tensor.byte/char/short) against
# torch: arithmetic that wraps as C casts do, promotion (uint8 with int8 gives int16),
# casts both ways (float -> uint8 through int64, as torch on x86), comparisons,
# reductions, bitwise ops, indexing (a uint8 index is a mask, with torch's
# warning), scatter_add into narrow ints, numpy / DLPack / save-load round trips,
# printing and iinfo; the same programs compiled on the llvm and interp backends
# and on cudaemu (the nvrtc backend's CUDA C run on the CPU) against eager.
import io
import warnings

import numpy as np
import pytest

import symtrace as st
from conftest import assert_close, check_torch, make

SMALL = ["uint8", "int8", "int16"]


def _vals(dtype, shape=(3, 5), seed=0):
    rng = np.random.default_rng(seed)
    lo, hi = {"uint8": (0, 256), "int8": (-128, 128), "int16": (-300, 300)}[dtype]
    return make(shape, dtype, values=rng.integers(lo, hi, size=shape))


@pytest.mark.parametrize("dtype", SMALL)
def test_dtype_objects(dtype):
    dt = getattr(st, dtype)
    assert str(dt) == f"symtrace.{dtype}" and dt.itemsize == {"uint8": 1, "int8": 1, "int16": 2}[dtype]
    assert dt.is_signed == (dtype != "uint8") and not dt.is_floating_point
    assert st.short is st.int16
    info = st.iinfo(dt)
    exp = {"uint8": (0, 255, 8), "int8": (-128, 127, 8), "int16": (-32768, 32767, 16)}[dtype]
    assert (info.min, info.max, info.bits) == exp
    t = st.zeros(2, dtype=dt)
    assert t.element_size() == dt.itemsize and t.dtype is dt
    assert t.type() == "symtrace." + {"uint8": "ByteTensor", "int8": "CharTensor",
                                      "int16": "ShortTensor"}[dtype]


def test_conversion_methods(torch):
    x = make((2, 4), "float32", low=-300, high=300)
    for m in ("byte", "char", "short"):
        check_torch(lambda a: getattr(a, m)(), lambda a: getattr(a, m)(), x)
    i = make((2, 4), "int64", low=-70000, high=70000)
    for m in ("byte", "char", "short", "int", "float"):
        check_torch(lambda a: getattr(a, m)(), lambda a: getattr(a, m)(), i)


@pytest.mark.parametrize("dtype", SMALL)
def test_arithmetic_wraps_like_torch(torch, dtype):
    x, y = _vals(dtype, seed=1), _vals(dtype, seed=2)
    ops = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: -a,
           lambda a, b: a + 200, lambda a, b: 3 - a, lambda a, b: a * 7, lambda a, b: a / 3,
           lambda a, b: a // 7, lambda a, b: a % 7, lambda a, b: (a + 1) // (b | 1),
           lambda a, b: abs(a), lambda a, b: a.sign(), lambda a, b: a ** 2,
           lambda a, b: a.maximum(b), lambda a, b: a.minimum(b), lambda a, b: a.clamp(-5, 100),
           lambda a, b: a == b, lambda a, b: a < b, lambda a, b: a >= 100,
           lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b, lambda a, b: ~a,
           lambda a, b: a.float() * 0.5, lambda a, b: a + 0.5, lambda a, b: a.to(b.dtype)]
    for k, f in enumerate(ops):
        check_torch(f, f, x, y, msg=f"op {k}")


@pytest.mark.parametrize("a,b", [("uint8", "int8"), ("uint8", "int16"), ("int8", "int16"),
                                 ("uint8", "int32"), ("int8", "int64"), ("int16", "float16"),
                                 ("uint8", "bool"), ("uint8", "bfloat16"), ("int8", "float64")])
def test_mixed_promotion(torch, a, b):
    x = _vals(a, (4, 3), 3)
    y = make((4, 3), b, low=-3, high=3)
    for f in (lambda p, q: p + q, lambda p, q: q * p, lambda p, q: p - q if "bool" not in (a, b) else p * q,
              lambda p, q: p < q, lambda p, q: (p.float() if b == "float64" else p).maximum(q)
              if False else p == q, lambda p, q: st.where(p > 10, p, q) if isinstance(p, st.Tensor)
              else torch.where(p > 10, p, q), lambda p, q: st.cat([p.to(q.dtype), q])
              if isinstance(p, st.Tensor) else torch.cat([p.to(q.dtype), q])):
        check_torch(f, f, x, y)
    assert st.promote_types(getattr(st, a), getattr(st, b)) == getattr(
        st, str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1])


@pytest.mark.parametrize("dtype", SMALL)
def test_casts_from_float_wrap_as_torch(torch, dtype):
    v = np.array([-1.0, 300.7, -200.2, 255.0, 127.9, -128.5, 70000.0, 2.0 ** 40, -0.5, 65535.0])
    for fd in ("float32", "float64", "float16", "bfloat16"):
        if fd in ("float16", "bfloat16"):
            v2 = v[np.abs(v) < 60000]
        else:
            v2 = v
        x = make(v2.shape, fd, values=v2)
        check_torch(lambda a: a.to(getattr(st, dtype)), lambda a: a.to(getattr(torch, dtype)), x)
        # and the compiled cast
        cf = st.compile(lambda a: a.to(getattr(st, dtype)) + 0)
        assert_close(cf(x.st), x.th.to(getattr(torch, dtype)) + 0)


@pytest.mark.parametrize("dtype", SMALL)
def test_reductions(torch, dtype):
    x = _vals(dtype, (4, 6), 4)
    for f in (lambda a: a.sum(), lambda a: a.sum(1), lambda a: a.prod(0), lambda a: a.max(),
              lambda a: a.amin(1), lambda a: a.argmax(1), lambda a: a.argmin(),
              lambda a: a.cumsum(1), lambda a: a.max(0).values, lambda a: a.float().mean(1)):
        check_torch(f, f, x)
    with pytest.raises(RuntimeError, match="mean"):
        x.st.mean()


@pytest.mark.parametrize("dtype", SMALL)
def test_movement_and_sorting(torch, dtype):
    x = _vals(dtype, (4, 6), 5)
    for f in (lambda a: a.t().contiguous(), lambda a: a[1:, ::2], lambda a: a.reshape(3, 8),
              lambda a: a.flip(0), lambda a: a.sort(1).values, lambda a: a.sort(1).indices,
              lambda a: a.topk(2, 1).values, lambda a: a.unique(), lambda a: a.roll(1, 1),
              lambda a: a.repeat(2, 1), lambda a: a.tril(), lambda a: a.masked_fill(a > 3, 7),
              lambda a: a.gather(1, a.abs().long() % 6), lambda a: a.index_select(0, a[:, 0].long() % 4)):
        check_torch(f, f, x)


def test_uint8_index_is_a_mask_with_torch_warning(torch):
    x = make((5, 3), "float32")
    m = make((5,), "uint8", values=[1, 0, 2, 0, 1])
    with warnings.catch_warnings(record=True) as w_t:
        warnings.simplefilter("always")
        exp = x.th[m.th]
    with warnings.catch_warnings(record=True) as w_s:
        warnings.simplefilter("always")
        got = x.st[m.st]
    assert_close(got, exp)
    msg = lambda ws: [str(w.message) for w in ws if "uint8" in str(w.message)]
    assert msg(w_s) and msg(w_t)[0].startswith(msg(w_s)[0])  # torch adds "(Triggered internally...)"
    # int8 / int16 index tensors are integer indices, as torch
    for d in ("int8", "int16"):
        i = make((4,), d, values=[0, -1, 2, 4])
        check_torch(lambda a, b: a[b], lambda a, b: a[b], x, i)


@pytest.mark.parametrize("dtype", SMALL)
def test_scatter_add_and_index_put_accumulate(torch, dtype):
    base = _vals(dtype, (4, 5), 6)
    src = _vals(dtype, (4, 5), 7)
    idx = make((4, 5), "int64", values=np.random.default_rng(8).integers(0, 4, size=(4, 5)))
    check_torch(lambda b, i, s: b.scatter_add(0, i, s), lambda b, i, s: b.scatter_add(0, i, s),
                base, idx, src)
    pos = make((6,), "int64", values=[0, 2, 2, 3, 0, 0])
    val = _vals(dtype, (6, 5), 9)
    check_torch(lambda b, p, v: b.index_put((p,), v, accumulate=True),
                lambda b, p, v: b.index_put((p,), v, accumulate=True), base, pos, val)


@pytest.mark.parametrize("dtype", SMALL)
def test_matmul_of_small_ints(torch, dtype):
    a, b = _vals(dtype, (3, 4), 10), _vals(dtype, (4, 2), 11)
    check_torch(lambda p, q: p @ q, lambda p, q: p @ q, a, b)


@pytest.mark.parametrize("dtype", SMALL)
def test_fill_overflow_errors_as_torch(torch, dtype):
    for v in (-1, 127, 255, 256, -129, 40000, 2.5, -1.5):
        check_torch(lambda: st.full((2,), v, dtype=getattr(st, dtype)),
                    lambda: torch.full((2,), v, dtype=getattr(torch, dtype)))
        x = _vals(dtype, (2, 3), 12)
        check_torch(lambda a: a.masked_fill(a > 0, v), lambda a: a.masked_fill(a > 0, v), x)


@pytest.mark.parametrize("dtype", SMALL)
def test_numpy_dlpack_save_roundtrip(torch, dtype, tmp_path):
    npd = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16}[dtype]
    a = np.arange(-6, 6, dtype=np.int64).astype(npd).reshape(3, 4)
    t = st.from_numpy(a)
    assert t.dtype is getattr(st, dtype) and np.array_equal(t.numpy(), a) and t.numpy().dtype == npd
    assert st.tensor(a).dtype is getattr(st, dtype) and st.as_tensor(a).dtype is getattr(st, dtype)
    # through torch by DLPack, both ways, sharing memory
    tt = torch.from_dlpack(t)
    assert tt.dtype == getattr(torch, dtype) and np.array_equal(tt.numpy(), a)
    back = st.from_dlpack(torch.tensor(a))
    assert back.dtype is getattr(st, dtype) and np.array_equal(back.numpy(), a)
    buf = io.BytesIO()
    st.save({"x": t, "d": t.dtype}, buf)
    buf.seek(0)
    r = st.load(buf)
    assert r["d"] is t.dtype and r["x"].dtype is t.dtype and np.array_equal(r["x"].numpy(), a)
    assert t.tolist() == a.tolist() and isinstance(t[0, 0].item(), int)


def test_printing_matches_torch(torch):
    for d in SMALL:
        v = [[1, 2, 3], [4, 5, 250 if d == "uint8" else -100]]
        s = repr(st.tensor(v, dtype=getattr(st, d)))
        assert s == repr(torch.tensor(v, dtype=getattr(torch, d))).replace("torch.", "symtrace."), s


def _prog(a, b, f):
    y = (a * 3 + b) // 2          # wraps in the narrow type
    z = st.where(a > b, a - b, b - a)
    m = (a & 0x3C) | (b ^ 5)
    s = (a.to(st.int64) * b).sum(1)
    c = f.to(a.dtype) + a         # float -> narrow cast through int64
    return y, z, m, s, c, a.to(st.float32) / 4, a.max(1).values, (a != 0).sum()


@pytest.mark.parametrize("backend", ["llvm", "interp", "cudaemu"])
@pytest.mark.parametrize("dtype", SMALL)
def test_compiled_matches_eager(dtype, backend):
    if backend == "cudaemu" and not st._C._fe_backend_available("cudaemu"):
        pytest.skip("the cudaemu backend needs a C++ compiler")
    st.reset()
    a, b = _vals(dtype, (4, 33), 13).st, _vals(dtype, (4, 33), 14).st
    f = make((4, 33), "float32", low=-400, high=400).st
    exp = _prog(a, b, f)
    got = st.compile(_prog, backend=backend, fullgraph=True)(a, b, f)
    for g, e in zip(got, exp):
        assert g.dtype == e.dtype
        assert np.array_equal(g.numpy(), e.numpy()), (backend, g, e)
    st.reset()
