# matmul (1-D, 2-D, batched, broadcast; the @ operator), linear, embedding,
# index_select and gather; against numpy float64 and torch.
import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F
from conftest import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_close, check_torch,
                      make, is_float, rng_for, RTOL)

MM_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((1, 7), (7, 1)),
             ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)),
             ((2, 1, 3, 4), (3, 4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)),
             ((17, 33), (33, 9))]


def _mm_tol(dtype, k):
    if not is_float(dtype):
        return None
    return RTOL[dtype] * max(4.0, float(k))


@pytest.mark.parametrize("shapes", MM_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
def test_matmul_numpy(dtype, shapes):
    sa, sb = shapes
    a = make(sa, dtype, low=-2, high=2)
    b = make(sb, dtype, low=-2, high=2)
    exp = np.matmul(a.np.astype(np.float64), b.np.astype(np.float64))
    if not is_float(dtype):
        exp = exp.astype(np.int64)
    tol = _mm_tol(dtype, sa[-1])
    assert_close(st.matmul(a.st, b.st), exp, dtype=dtype, atol=tol)
    assert_close(a.st @ b.st, exp, dtype=dtype, atol=tol)
    assert_close(a.st.matmul(b.st), exp, dtype=dtype, atol=tol)


@pytest.mark.parametrize("la,lb", [("transposed", "contig"), ("contig", "transposed"),
                                   ("transposed", "transposed"), ("strided", "strided"),
                                   ("expanded", "contig")])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_matmul_noncontig(dtype, la, lb):
    for sa, sb in [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5))]:
        a = make(sa, dtype, la)
        b = make(sb, dtype, lb)
        assert_close(a.st @ b.st, np.matmul(a.np, b.np), dtype=dtype, atol=_mm_tol(dtype, 4))


@pytest.mark.parametrize("shapes", MM_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_matmul_torch(torch, dtype, shapes):
    sa, sb = shapes
    a = make(sa, dtype, "contig")
    b = make(sb, dtype, "transposed")
    check_torch(st.matmul, torch.matmul, a, b, atol=_mm_tol(dtype, sa[-1]))


def test_matmul_empty_and_larger(torch):
    a = make((0, 4), "float32")
    b = make((4, 3), "float32")
    check_torch(st.matmul, torch.matmul, a, b)
    a = make((3, 0), "float32")
    b = make((0, 2), "float32")
    check_torch(st.matmul, torch.matmul, a, b)  # zeros
    a = make((64, 96), "float32", "transposed")
    b = make((96, 48), "float32")
    check_torch(st.matmul, torch.matmul, a, b, atol=1e-4)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_linear(dtype, bias):
    x = make((2, 3, 4), dtype, "strided")
    w = make((5, 4), dtype)
    b = make((5,), dtype) if bias else None
    exp = x.np @ w.np.T + (b.np if bias else 0)
    got = F.linear(x.st, w.st, b.st if bias else None)
    assert_close(got, exp, dtype=dtype, atol=_mm_tol(dtype, 4))
    got2 = F.linear(x.st, w.st, bias=b.st) if bias else F.linear(x.st, w.st)
    assert_close(got2, exp, dtype=dtype, atol=_mm_tol(dtype, 4))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_linear_torch(torch, dtype):
    x = make((6, 8), dtype, "transposed")
    w = make((3, 8), dtype)
    b = make((3,), dtype)
    check_torch(F.linear, torch.nn.functional.linear, x, w, b, atol=_mm_tol(dtype, 8))
    check_torch(F.linear, torch.nn.functional.linear, make((8,), dtype), w, atol=_mm_tol(dtype, 8))


@pytest.mark.parametrize("idx_dtype", ["int32", "int64"])  # others refused: test_embedding_index_dtypes
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_embedding(dtype, idx_dtype):
    w = make((10, 4), dtype)
    idx = make((2, 3), idx_dtype, low=0, high=9)
    assert_close(F.embedding(idx.st, w.st), w.np[idx.np], dtype=dtype)
    i1 = make((5,), idx_dtype, low=0, high=9)
    assert_close(F.embedding(i1.st, w.st), w.np[i1.np], dtype=dtype)


@pytest.mark.parametrize("idx_dtype", ["uint8", "int8", "int16", "float32"])
def test_embedding_index_dtypes(torch, idx_dtype):
    # torch takes Long and Int indices only, and names the type it got
    w = make((10, 4), "float32")
    idx = make((2, 3), idx_dtype, low=0, high=9)
    with pytest.raises(RuntimeError) as te:
        torch.nn.functional.embedding(idx.th, w.th)
    with pytest.raises(RuntimeError) as se:
        F.embedding(idx.st, w.st)
    assert str(te.value).split(" (while")[0] in str(se.value), (str(te.value), str(se.value))


def test_embedding_torch(torch):
    w = make((10, 4), "float32")
    idx = make((2, 3), "int64", low=0, high=9)
    check_torch(F.embedding, torch.nn.functional.embedding, idx, w)
    wt = make((10, 4), "float32", "transposed")  # a non-contiguous table
    check_torch(F.embedding, torch.nn.functional.embedding, idx, wt)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", ["contig", "transposed"])
def test_index_select(dtype, dim, layout):
    x = make((4, 5, 6), dtype, layout)
    n = x.np.shape[dim]
    idx = make((7,), "int64", low=0, high=n - 1)
    exp = np.take(x.np, idx.np, axis=dim)
    assert_close(st.index_select(x.st, dim, idx.st), exp, dtype=dtype)
    assert_close(x.st.index_select(dim, idx.st), exp, dtype=dtype)
    i32 = make((3,), "int32", low=0, high=n - 1)
    assert_close(st.index_select(x.st, dim, i32.st), np.take(x.np, i32.np, axis=dim), dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_select_torch(torch, dtype):
    x = make((4, 5, 6), dtype, "strided")
    for dim in (0, 1, 2, -2):
        idx = make((4,), "int64", low=0, high=x.np.shape[dim] - 1)
        check_torch(lambda a, i: st.index_select(a, dim, i), lambda a, i: torch.index_select(a, dim, i), x, idx)
    empty = make((0,), "int64")
    check_torch(lambda a, i: st.index_select(a, 1, i), lambda a, i: torch.index_select(a, 1, i), x, empty)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", ["contig", "transposed"])
def test_gather(dtype, dim, layout):
    x = make((4, 5, 6), dtype, layout)
    rng = rng_for("gather", dim, dtype)
    ishape = [3, 4, 5]
    ishape[dim] = 7  # along dim the index may be longer than the input
    idx_np = rng.integers(0, x.np.shape[dim], size=ishape)
    idx = st.tensor(idx_np)
    # torch gather: out[i][j][k] = x[idx[i][j][k]][j][k] (dim 0) etc.
    grid = np.indices(idx_np.shape)
    grid[dim % 3] = idx_np
    exp = x.np[tuple(grid)]
    assert_close(st.gather(x.st, dim, idx), exp, dtype=dtype)
    assert_close(x.st.gather(dim, idx), exp, dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_gather_torch(torch, dtype):
    x = make((4, 5), dtype, "transposed")
    for dim in (0, 1):
        ishape = (3, 2) if dim == 0 else (4, 6)
        idx = make(ishape, "int64", low=0, high=x.np.shape[dim] - 1)
        check_torch(lambda a, i: st.gather(a, dim, i), lambda a, i: torch.gather(a, dim, i), x, idx)
    idx_t = make((2, 3), "int64", "transposed", low=0, high=3)  # a non-contiguous index
    check_torch(lambda a, i: st.gather(a, 1, i), lambda a, i: torch.gather(a, 1, i), x, idx_t)
