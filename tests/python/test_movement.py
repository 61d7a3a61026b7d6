# Movement and view ops: views share storage with their base (writes through a
# view show in the base and the other way), shapes and strides as torch, every
# view op, cat / stack / split / chunk, and getitem / setitem.
import numpy as np
import pytest

import symtrace as st
from conftest import (ALL_DTYPES, FLOAT_DTYPES, assert_close, check_torch, make, sd, to_numpy)


def arange_np(shape, dtype="float32"):
    n = int(np.prod(shape))
    return make(shape, dtype, values=np.arange(n).reshape(shape) % 97)


VIEW_OPS = {
    "view": (lambda t: t.view(4, 6), lambda a: a.reshape(4, 6)),
    "view_neg1": (lambda t: t.view(-1, 3), lambda a: a.reshape(-1, 3)),
    "view_tuple": (lambda t: t.view((2, 12)), lambda a: a.reshape(2, 12)),
    "reshape": (lambda t: t.reshape(6, 4), lambda a: a.reshape(6, 4)),
    "reshape_tuple": (lambda t: t.reshape((3, -1)), lambda a: a.reshape(3, -1)),
    "st_reshape": (lambda t: st.reshape(t, (24,)), lambda a: a.reshape(24)),
    "flatten": (lambda t: t.flatten(), lambda a: a.reshape(-1)),
    "flatten_1": (lambda t: t.flatten(1), lambda a: a.reshape(2, 12)),
    "flatten_0_1": (lambda t: t.flatten(0, 1), lambda a: a.reshape(6, 4)),
    "permute": (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    "permute_tuple": (lambda t: t.permute((1, 2, 0)), lambda a: a.transpose(1, 2, 0)),
    "transpose": (lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    "transpose_neg": (lambda t: st.transpose(t, -1, -2), lambda a: a.swapaxes(-1, -2)),
    "unsqueeze0": (lambda t: t.unsqueeze(0), lambda a: a[None]),
    "unsqueeze_neg": (lambda t: st.unsqueeze(t, -1), lambda a: a[..., None]),
    "unsqueeze_mid": (lambda t: t.unsqueeze(2), lambda a: np.expand_dims(a, 2)),
    "squeeze_after_unsqueeze": (lambda t: t.unsqueeze(1).squeeze(1), lambda a: a),
    "squeeze_all": (lambda t: t.view(2, 1, 3, 1, 4).squeeze(), lambda a: a),
    "squeeze_noop": (lambda t: t.squeeze(0), lambda a: a),
    "expand": (lambda t: t[:, :1].expand(2, 5, 4), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    "expand_neg1": (lambda t: t[None].expand(3, -1, -1, -1), lambda a: np.broadcast_to(a, (3, 2, 3, 4))),
    "select": (lambda t: t[1], lambda a: a[1]),
    "select_neg": (lambda t: t[-1, 2], lambda a: a[-1, 2]),
    "slice_step": (lambda t: t[:, 1:3, ::2], lambda a: a[:, 1:3, ::2]),
    "slice_neg": (lambda t: t[:, -2:], lambda a: a[:, -2:]),
    "none": (lambda t: t[None], lambda a: a[None]),
    "ellipsis": (lambda t: t[..., 0], lambda a: a[..., 0]),
    "ellipsis_mid": (lambda t: t[0, ..., 1:], lambda a: a[0, ..., 1:]),
    "T_2d": (lambda t: t[0].T, lambda a: a[0].T),
    "detach": (lambda t: t.detach(), lambda a: a),
}


@pytest.mark.parametrize("name", list(VIEW_OPS))
def test_view_values_and_sharing(name):
    f_st, f_np = VIEW_OPS[name]
    x = arange_np((2, 3, 4))
    v = f_st(x.st)
    assert_close(v, f_np(x.np), dtype="float32")
    # a view aliases its base: a write through the base shows in the view
    x.st.add_(1000)
    assert_close(v, f_np(x.np) + 1000, dtype="float32", msg="base write not seen in view")
    # and a write through the view shows in the base (the view is not expanded)
    if name.startswith("expand"):
        return
    v.mul_(2)
    base = x.np + 1000
    vb = f_np(base)
    np.testing.assert_array_equal(to_numpy(v), vb * 2)
    changed = to_numpy(x.st)
    # every base element that the view reaches was doubled, the others untouched
    mark = np.zeros(24)
    idx = f_np(np.arange(24).reshape(2, 3, 4))
    mark[np.asarray(idx).ravel()] = 1
    exp = np.where(mark.reshape(2, 3, 4) == 1, base * 2, base)
    np.testing.assert_array_equal(changed, exp)


@pytest.mark.parametrize("name", list(VIEW_OPS))
def test_view_torch_strides(torch, name):
    f_st, _ = VIEW_OPS[name]
    x = arange_np((2, 3, 4))
    v = f_st(x.st)
    tv = {"st_reshape": lambda t: torch.reshape(t, (24,)),
          "transpose_neg": lambda t: torch.transpose(t, -1, -2),
          "unsqueeze_neg": lambda t: torch.unsqueeze(t, -1)}.get(name, f_st)(x.th)
    assert tuple(v.shape) == tuple(tv.shape)
    assert tuple(v.stride()) == tuple(tv.stride()), (v.stride(), tv.stride())
    assert v.is_contiguous() == tv.is_contiguous()
    assert v.dim() == tv.dim() and v.ndim == tv.ndim and v.numel() == tv.numel()
    # the view starts where torch's does (storage offset in bytes)
    off_st = v.data_ptr() - x.st.data_ptr()
    off_th = tv.data_ptr() - x.th.data_ptr()
    if v.numel() > 0:
        assert off_st == off_th


def test_size_stride_attributes():
    x = st.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and tuple(x.size()) == (2, 3, 4)
    assert x.size(0) == 2 and x.size(-1) == 4 and x.shape[1] == 3 and len(x.shape) == 3
    assert tuple(x.stride()) == (12, 4, 1) and x.stride(0) == 12
    assert x.dim() == 3 and x.ndim == 3 and x.numel() == 24
    assert x.is_contiguous() and not x.transpose(0, 1).is_contiguous()
    assert str(x.device) == "cpu"
    assert isinstance(x, st.Tensor)
    y = st.zeros(3, 5)
    assert tuple(y.T.shape) == (5, 3) and tuple(y.T.stride()) == (1, 5)
    assert len(x) == 2


def test_contiguous():
    x = arange_np((3, 4))
    c = x.st.contiguous()
    assert c.data_ptr() == x.st.data_ptr()  # already contiguous: itself
    t = x.st.t() if hasattr(x.st, "t") else x.st.T
    tc = t.contiguous()
    assert tc.is_contiguous() and tuple(tc.stride()) == (3, 1)
    assert_close(tc, x.np.T, dtype="float32")
    tc.fill_(0)  # a copy: the base is untouched
    assert_close(x.st, x.np, dtype="float32")


def test_reshape_copies_when_needed():
    x = arange_np((3, 4))
    r = x.st.T.reshape(12)
    assert_close(r, x.np.T.reshape(12), dtype="float32")
    r.fill_(-1)
    assert_close(x.st, x.np, dtype="float32")
    with pytest.raises(RuntimeError):
        x.st.T.view(12)  # view of non-viewable strides fails, as torch


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_view_ops_dtypes(dtype):
    x = make((2, 3, 4), dtype, "transposed")
    assert_close(x.st.reshape(-1), x.np.reshape(-1), dtype=dtype)
    assert_close(x.st.permute(2, 0, 1).contiguous(), x.np.transpose(2, 0, 1), dtype=dtype)
    assert_close(x.st[1:, ::2], x.np[1:, ::2], dtype=dtype)


# ---------------------------------------------------------------- cat / stack / split / chunk
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dtype, dim):
    a = make((2, 3, 4), dtype, "transposed")
    shp = [2, 3, 4]
    shp[dim] = 1
    b = make(tuple(shp), dtype)
    shp[dim] = 3
    c = make(tuple(shp), dtype, "strided")
    exp = np.concatenate([a.np, b.np, c.np], axis=dim)
    assert_close(st.cat([a.st, b.st, c.st], dim), exp, dtype=dtype)
    assert_close(st.cat((a.st, b.st, c.st), dim=dim), exp, dtype=dtype)
    assert_close(st.cat([a.st]), a.np, dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 3, -1])
def test_stack(dtype, dim):
    xs = [make((2, 3, 4), dtype, lay) for lay in ("contig", "transposed", "strided")]
    exp = np.stack([x.np for x in xs], axis=dim)
    assert_close(st.stack([x.st for x in xs], dim), exp, dtype=dtype)
    assert_close(st.stack([x.st for x in xs], dim=dim), exp, dtype=dtype)
    if dim == 0:
        assert_close(st.stack([x.st for x in xs]), exp, dtype=dtype)


def test_cat_stack_torch(torch):
    for dt in ("float32", "int64", "bool"):
        a = make((2, 3), dt)
        b = make((4, 3), dt, "transposed")
        check_torch(lambda x, y: st.cat([x, y], 0), lambda x, y: torch.cat([x, y], 0), a, b)
        check_torch(lambda x, y: st.stack([x, y[:2]], 1), lambda x, y: torch.stack([x, y[:2]], 1), a, b)
    # mixed dtypes promote in cat, as torch
    a = make((2, 3), "int32")
    b = make((1, 3), "float32")
    check_torch(lambda x, y: st.cat([x, y]), lambda x, y: torch.cat([x, y]), a, b)
    e = make((0, 3), "float32")
    check_torch(lambda x, y: st.cat([x, y]), lambda x, y: torch.cat([x, y]), e, b)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_split_chunk(dim):
    x = arange_np((5, 7, 6))
    n = x.np.shape[dim]
    for size in (1, 2, 3, n, n + 2):
        parts = st.split(x.st, size, dim)
        idx = list(range(size, n, size))
        exp = np.split(x.np, idx, axis=dim)
        assert len(parts) == len(exp)
        for p, e in zip(parts, exp):
            assert_close(p, e, dtype="float32")
        parts2 = x.st.split(size, dim=dim)
        assert len(parts2) == len(exp)
    sizes = [1, n - 3, 2]
    parts = x.st.split(sizes, dim)
    exp = np.split(x.np, np.cumsum(sizes)[:-1], axis=dim)
    for p, e in zip(parts, exp):
        assert_close(p, e, dtype="float32")
    for k in (1, 2, 3, 4):
        ch = st.chunk(x.st, k, dim)
        c = -(-n // k)
        exp = np.split(x.np, list(range(c, n, c)), axis=dim)
        assert len(ch) == len(exp), (k, len(ch), len(exp))
        for p, e in zip(ch, exp):
            assert_close(p, e, dtype="float32")
        assert len(x.st.chunk(k, dim=dim)) == len(exp)


def test_split_chunk_are_views(torch):
    x = arange_np((4, 6))
    a, b = st.split(x.st, 3, 1)
    b.fill_(-1)
    exp = x.np.copy()
    exp[:, 3:] = -1
    assert_close(x.st, exp, dtype="float32")
    c = st.chunk(x.st, 2, 0)[1]
    c.zero_()
    exp[2:] = 0
    assert_close(x.st, exp, dtype="float32")
    ta = make((5, 7), "float32", "transposed")
    check_torch(lambda t: st.split(t, [2, 0, 5], 1), lambda t: torch.split(t, [2, 0, 5], 1), ta)
    check_torch(lambda t: st.chunk(t, 3, 0), lambda t: torch.chunk(t, 3, 0), ta)
    check_torch(lambda t: st.chunk(t, 4, 1), lambda t: torch.chunk(t, 4, 1), ta)
    check_torch(lambda t: t.split(3), lambda t: t.split(3), ta)


# ---------------------------------------------------------------- getitem
GETITEM = [
    lambda t: t[1], lambda t: t[-1], lambda t: t[0, 1], lambda t: t[-1, -2, -3],
    lambda t: t[:, 1:5:2], lambda t: t[None], lambda t: t[..., 0], lambda t: t[1:], lambda t: t[:-1],
    lambda t: t[::2], lambda t: t[:, None, 2:], lambda t: t[..., None], lambda t: t[1, ..., 3],
    lambda t: t[0:0], lambda t: t[5:], lambda t: t[-100:100], lambda t: t[:, ::3, 1::2],
    lambda t: t[(0, 1)], lambda t: t[2:1],
]


@pytest.mark.parametrize("i", range(len(GETITEM)))
@pytest.mark.parametrize("layout", ["contig", "transposed", "strided"])
def test_getitem_basic(i, layout):
    x = make((4, 6, 5), "float32", layout)
    f = GETITEM[i]
    assert_close(f(x.st), np.asarray(f(x.np)), dtype="float32")


@pytest.mark.parametrize("i", range(len(GETITEM)))
def test_getitem_torch(torch, i):
    x = make((4, 6, 5), "int32", "transposed")
    check_torch(GETITEM[i], GETITEM[i], x)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_getitem_tensor_index_and_mask(dtype):
    x = make((5, 4), dtype, "transposed")
    idx = make((6,), "int64", values=np.array([4, 0, 0, 2, -1, 3]))
    assert_close(x.st[idx.st], x.np[idx.np], dtype=dtype)
    assert_close(x.st[st.tensor([1, 3])], x.np[[1, 3]], dtype=dtype)
    m = make((5, 4), "bool")
    assert_close(x.st[m.st], x.np[m.np], dtype=dtype)
    mrow = make((5,), "bool")
    assert_close(x.st[mrow.st], x.np[mrow.np], dtype=dtype)
    none = st.zeros(5, 4, dtype=st.bool)
    assert_close(x.st[none], x.np[np.zeros((5, 4), bool)], dtype=dtype)


def test_getitem_tensor_index_torch(torch):
    x = make((5, 4), "float32", "strided")
    idx = make((3,), "int64", values=np.array([4, 0, 2]))
    check_torch(lambda a, i: a[i], lambda a, i: a[i], x, idx)
    m = make((5, 4), "bool")
    check_torch(lambda a, b: a[b], lambda a, b: a[b], x, m)
    check_torch(lambda a, b: a[a > 0], lambda a, b: a[a > 0], x, m)


# ---------------------------------------------------------------- setitem
SETITEM = [
    (lambda t: (1,), 7.5), (lambda t: (-1,), -2), (lambda t: ((slice(None), slice(1, 5, 2)),), 3.0),
    (lambda t: (Ellipsis,), 1.0), (lambda t: ((Ellipsis, 0),), 9.0), (lambda t: ((1, 2),), 4.0),
    (lambda t: ((slice(None, None, 2),),), -1.0),
]


@pytest.mark.parametrize("i", range(len(SETITEM)))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bfloat16"])
def test_setitem_number(dtype, i):
    key_fn, val = SETITEM[i]
    x = make((4, 6), dtype)
    key = key_fn(None)[0]
    x.st[key] = val
    exp = x.np.copy()
    exp[key] = val
    assert_close(x.st, exp, dtype=dtype)


@pytest.mark.parametrize("layout", ["contig", "transposed"])
def test_setitem_tensor_broadcast(layout):
    x = make((4, 6), "float32", layout)
    exp = x.np.copy()
    row = make((6,), "float32")
    x.st[1] = row.st
    exp[1] = row.np
    col = make((4, 1), "float64")  # cast on assignment, as torch
    x.st[:, 1:5:2] = col.st
    exp[:, 1:5:2] = col.np.astype(np.float32)
    blk = make((2, 3), "float32", "transposed")
    x.st[2:, ::2] = blk.st
    exp[2:, ::2] = blk.np
    x.st[..., -1] = st.tensor(5.0)
    exp[..., -1] = 5.0
    assert_close(x.st, exp, dtype="float32")


def test_setitem_through_view_changes_base():
    x = make((3, 4), "float32")
    exp = x.np.copy()
    v = x.st.T  # setitem into a view writes the base
    v[1] = 0.0
    exp[:, 1] = 0.0
    r = x.st.view(12)
    r[5:8] = -1.0
    exp.reshape(12)[5:8] = -1.0
    assert_close(x.st, exp, dtype="float32")


def test_setitem_torch(torch):
    x = make((4, 6), "float32", "transposed")
    v = make((6,), "int64")

    def f(t, u):
        t = t.clone()
        t[1:3] = u
        t[:, 0] = 2
        t[-1, ::2] = u[:3]
        return t
    check_torch(f, f, x, v)
    # shape mismatch in assignment raises, as torch
    check_torch(lambda t, u: t.__setitem__(0, u[:4]), lambda t, u: t.__setitem__(0, u[:4]), x, v)
