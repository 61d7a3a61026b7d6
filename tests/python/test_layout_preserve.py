# Elementwise results keep their operands' memory order, as torch's TensorIterator gives
# them (runtime/layout.c): strides and values against torch for each op family (unary,
# binary, where, clamp, lerp, addcmul, casts, activations, dropout, clone, the *_like
# factories), on permuted 2-D/3-D/4-D inputs, broadcast and expanded operands, mixes of
# permuted and row-major operands and channels-last 4-D; .view after such an op where torch
# accepts and where it refuses; the same under symtrace.compile; gradients against torch.
# Expected strides are written out where they do not need torch.
import numpy as np
import pytest

import symtrace as st
import symtrace.nn.functional as F

VIEW_ERR = "view size is not compatible"


def _pair(torch, shape, make=lambda t: t, seed=0, dtype=np.float32):
    """The same values and the same strided view in torch and in symtrace: make() applied
    to a row-major tensor of shape."""
    data = np.random.RandomState(seed).randn(*shape).astype(dtype)
    return make(torch.from_numpy(data.copy())), make(st.tensor(data.copy()))


def _check(rt, rs, exact=False):
    """rs (symtrace) has torch's strides (those of dims of size > 1: torch's size-1 strides
    follow rules of their own) and values."""
    assert tuple(rs.shape) == tuple(rt.shape)
    want = tuple(s for s, n in zip(rt.stride(), rt.shape) if n != 1)
    got = tuple(s for s, n in zip(rs.stride(), rs.shape) if n != 1)
    assert got == want, (rs.stride(), rt.stride(), tuple(rt.shape))
    a, b = rt.detach().double().numpy(), rs.detach().to(st.float64).numpy()
    if exact:
        assert np.array_equal(a, b)
    else:
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


# (name, shape of the row-major source, its view): the inputs of the op families
LAYOUTS = [
    ("t2", (4, 8), lambda t: t.t()),
    ("perm3", (3, 4, 5), lambda t: t.permute(2, 0, 1)),
    ("perm4", (2, 3, 4, 5), lambda t: t.permute(0, 2, 1, 3)),
    ("channels_last", (2, 4, 5, 3), lambda t: t.permute(0, 3, 1, 2)),
    ("strided_t", (8, 8), lambda t: t[:, ::2].t()),
    ("expanded", (4, 1), lambda t: t.expand(4, 6)),
    ("contig", (3, 4), lambda t: t),
]
IDS = [name for name, _, _ in LAYOUTS]


# ---------------- expected values without torch ----------------
def test_transposed_result_strides_written_out():
    x = st.randn(4, 8)
    y = x.t() * 1
    assert y.stride() == (1, 8) and y.shape == (8, 4)
    assert y._base is None and not y.is_contiguous()
    np.testing.assert_array_equal(y.numpy(), x.numpy().T)
    # the view that torch accepts: the result's transpose is row-major
    v = y.t().view(-1)
    np.testing.assert_array_equal(v.numpy(), x.numpy().reshape(-1))
    with pytest.raises(RuntimeError, match=VIEW_ERR):
        y.view(-1)
    assert (x.t() + x.t()).stride() == (1, 8)
    assert x.t().exp().stride() == (1, 8)
    assert (x + x).stride() == (8, 1)
    assert x.t().contiguous().stride() == (4, 1)


def test_expanded_and_overlapping_operands_give_row_major_written_out():
    e = st.randn(4, 1).expand(4, 6)
    assert (e * 2).stride() == (6, 1)
    b = st.randn(6).expand(4, 6)
    assert (b + e).stride() == (6, 1)
    # a broadcast operand tells nothing; the permuted one decides
    p = st.randn(6, 4).t()
    assert (e + p).stride() == (1, 4)
    assert (st.randn(6) + p).stride() == (1, 4)


def test_first_operand_that_tells_decides_written_out():
    a = st.randn(8, 4).t()          # (4, 8) stride (1, 4)
    c = st.randn(4, 8)              # row-major
    assert (a + c).stride() == (1, 4)
    assert (c + a).stride() == (8, 1)
    assert st.where(c > 0, a, c).stride() == (8, 1)
    assert st.where(a > 0, c, a).stride() == (1, 4)


# ---------------- op families against torch ----------------
@pytest.mark.parametrize("name,shape,make", LAYOUTS, ids=IDS)
def test_unary_ops(torch, name, shape, make):
    xt, xs = _pair(torch, shape, make)
    for f in ("exp", "neg", "abs", "tanh", "sigmoid", "relu", "sin", "floor", "sign"):
        _check(getattr(xt, f)(), getattr(xs, f)())
    _check(torch.sqrt(xt.abs()), st.sqrt(xs.abs()))
    _check(-xt, -xs)


@pytest.mark.parametrize("name,shape,make", LAYOUTS, ids=IDS)
def test_binary_ops_and_scalars(torch, name, shape, make):
    xt, xs = _pair(torch, shape, make)
    yt, ys = _pair(torch, tuple(xt.shape), seed=1)      # row-major partner
    _check(xt * 2, xs * 2)
    _check(2 - xt, 2 - xs)
    _check(xt + yt, xs + ys)
    _check(yt + xt, ys + xs)
    _check(xt / (yt.abs() + 1), xs / (ys.abs() + 1))
    _check(torch.maximum(xt, yt), st.maximum(xs, ys))
    _check(xt > yt, xs > ys, exact=True)
    _check(xt.pow(2), xs.pow(2))
    _check(xt * xt, xs * xs)


@pytest.mark.parametrize("name,shape,make", LAYOUTS, ids=IDS)
def test_broadcast_operand(torch, name, shape, make):
    xt, xs = _pair(torch, shape, make)
    last = tuple(xt.shape)[-1:]
    bt, bs = _pair(torch, last, seed=2)
    _check(xt + bt, xs + bs)
    _check(bt * xt, bs * xs)
    ct, cs = _pair(torch, (1,) * (xt.dim() - 1) + last, seed=3)
    _check(ct - xt, cs - xs)
    _check(xt * torch.tensor(3.0), xs * st.tensor(3.0))     # a 0-d tensor


def test_mixed_permutations_3d(torch):
    at, as_ = _pair(torch, (5, 3, 4), lambda t: t.permute(1, 2, 0))
    bt, bs = _pair(torch, (4, 5, 3), lambda t: t.permute(2, 0, 1), seed=1)
    ct, cs = _pair(torch, (3, 4, 5), seed=2)
    _check(at + bt, as_ + bs)
    _check(bt + at, bs + as_)
    _check(torch.where(ct > 0, at, bt), st.where(cs > 0, as_, bs))
    _check(torch.where(at > 0, ct, bt), st.where(as_ > 0, cs, bs))
    _check(torch.addcmul(ct, at, bt, value=0.5), st.addcmul(cs, as_, bs, value=0.5))
    _check(torch.addcmul(at, ct, bt), st.addcmul(as_, cs, bs))


@pytest.mark.parametrize("name,shape,make", LAYOUTS, ids=IDS)
def test_where_clamp_lerp_addcmul(torch, name, shape, make):
    xt, xs = _pair(torch, shape, make)
    yt, ys = _pair(torch, shape, make, seed=1)
    _check(torch.where(xt > 0, xt, yt), st.where(xs > 0, xs, ys))
    _check(torch.where(xt > 0, xt, 0.0), st.where(xs > 0, xs, 0.0))
    _check(xt.clamp(-0.5, 0.5), xs.clamp(-0.5, 0.5))
    _check(xt.clamp(min=0.1), xs.clamp(min=0.1))
    _check(torch.lerp(xt, yt, 0.3), st.lerp(xs, ys, 0.3))
    _check(torch.addcmul(xt, xt, yt, value=2.0), st.addcmul(xs, xs, ys, value=2.0))
    _check(torch.addcdiv(xt, xt, yt.abs() + 1), st.addcdiv(xs, xs, ys.abs() + 1))


@pytest.mark.parametrize("name,shape,make", LAYOUTS, ids=IDS)
def test_casts(torch, name, shape, make):
    xt, xs = _pair(torch, shape, make, dtype=np.float64)
    _check(xt.float(), xs.float())
    _check(xt.to(torch.float16), xs.to(st.float16))
    _check(xt.to(dtype=torch.int32), xs.to(dtype=st.int32), exact=True)
    _check((xt > 0).float(), (xs > 0).float(), exact=True)
    _check(xt.double(), xs.double())   # the same dtype: itself


@pytest.mark.parametrize("name,shape,make", LAYOUTS, ids=IDS)
def test_activations(torch, name, shape, make):
    xt, xs = _pair(torch, shape, make)
    tf = torch.nn.functional
    _check(tf.gelu(xt), F.gelu(xs))
    _check(tf.gelu(xt, approximate="tanh"), F.gelu(xs, approximate="tanh"))
    _check(tf.silu(xt), F.silu(xs))
    _check(tf.relu(xt), F.relu(xs))
    _check(tf.leaky_relu(xt, 0.1), F.leaky_relu(xs, 0.1))
    _check(tf.elu(xt), F.elu(xs))
    _check(torch.tanh(xt), st.tanh(xs))


@pytest.mark.parametrize("name,shape,make", LAYOUTS, ids=IDS)
def test_dropout(torch, name, shape, make):
    xt, xs = _pair(torch, shape, make)
    for training in (True, False):
        rt = tf_d = torch.nn.functional.dropout(xt, 0.5, training=training)
        rs = F.dropout(xs, 0.5, training=training)
        want = tuple(s for s, n in zip(tf_d.stride(), tf_d.shape) if n != 1)
        assert tuple(s for s, n in zip(rs.stride(), rs.shape) if n != 1) == want
        # each element is dropped (0) or scaled by 1/(1-p), in place of its own input
        x, r = xs.numpy(), rs.numpy()
        assert np.all((r == 0) | np.isclose(r, x * (2.0 if training else 1.0)))
        if not training:
            _check(rt, rs)


@pytest.mark.parametrize("name,shape,make", LAYOUTS, ids=IDS)
def test_clone_keeps_layout_contiguous_does_not(torch, name, shape, make):
    xt, xs = _pair(torch, shape, make)
    _check(xt.clone(), xs.clone(), exact=True)
    _check(torch.clone(xt), st.clone(xs), exact=True)
    _check(xt.clone(memory_format=torch.preserve_format),
           xs.clone(memory_format=st.preserve_format), exact=True)
    _check(xt.clone(memory_format=torch.contiguous_format),
           xs.clone(memory_format=st.contiguous_format), exact=True)
    _check(xt.contiguous(), xs.contiguous(), exact=True)
    assert xs.contiguous().is_contiguous()
    if xt.dim() == 4:
        _check(xt.clone(memory_format=torch.channels_last),
               xs.clone(memory_format=st.channels_last), exact=True)


@pytest.mark.parametrize("name,shape,make", LAYOUTS[:4], ids=IDS[:4])
def test_ops_torch_makes_row_major_or_keeps(torch, name, shape, make):
    """Functions symtrace writes over elementwise ops whose torch kernels give a row-major
    result (scans, log_sigmoid, rrelu, a number's pow) stay row-major; hardshrink and exp2
    keep the order as torch's do."""
    xt, xs = _pair(torch, shape, make)
    tf = torch.nn.functional
    _check(xt.cumsum(1), xs.cumsum(1))
    _check(xt.cumprod(1), xs.cumprod(1))
    _check(xt.logcumsumexp(1), xs.logcumsumexp(1))
    _check(tf.logsigmoid(xt), F.logsigmoid(xs))
    _check(tf.rrelu(xt, training=False), F.rrelu(xs, training=False))
    r = F.rrelu(xs, training=True)
    want = tf.rrelu(xt, training=True)
    assert r.is_contiguous() and want.is_contiguous()
    _check(2 ** xt, 2 ** xs)
    _check(torch.pow(2.0, xt), st.pow(2.0, xs))
    _check(torch.pow(xt, 2.0), st.pow(xs, 2.0))
    _check(torch.exp2(xt), st.exp2(xs))
    _check(tf.hardshrink(xt, 0.3), F.hardshrink(xs, 0.3))


def test_clone_bad_memory_format():
    x = st.randn(2, 3)
    with pytest.raises(RuntimeError, match="required rank 4"):
        x.clone(memory_format=st.channels_last)
    with pytest.raises(TypeError, match="memory_format"):
        x.clone(memory_format="channels_last")


@pytest.mark.parametrize("name,shape,make", LAYOUTS, ids=IDS)
def test_like_factories(torch, name, shape, make):
    xt, xs = _pair(torch, shape, make)
    _check(torch.zeros_like(xt), st.zeros_like(xs), exact=True)
    _check(torch.ones_like(xt), st.ones_like(xs), exact=True)
    _check(torch.full_like(xt, 7), st.full_like(xs, 7), exact=True)
    _check(torch.zeros_like(xt, dtype=torch.int64), st.zeros_like(xs, dtype=st.int64), exact=True)
    e = st.empty_like(xs)
    want = torch.empty_like(xt)
    assert tuple(s for s, n in zip(e.stride(), e.shape) if n != 1) == \
        tuple(s for s, n in zip(want.stride(), want.shape) if n != 1)
    for ft, fs, kw in ((torch.rand_like, st.rand_like, {}), (torch.randn_like, st.randn_like, {})):
        r, w = fs(xs, **kw), ft(xt, **kw)
        assert tuple(s for s, n in zip(r.stride(), r.shape) if n != 1) == \
            tuple(s for s, n in zip(w.stride(), w.shape) if n != 1)
    r = st.randint_like(xs, 3, 9)
    w = torch.randint_like(xt, 3, 9)
    assert tuple(s for s, n in zip(r.stride(), r.shape) if n != 1) == \
        tuple(s for s, n in zip(w.stride(), w.shape) if n != 1)
    assert r.numel() == 0 or (r.min().item() >= 3 and r.max().item() < 9)
    z = st.zeros_like(xs, requires_grad=True)
    assert z.requires_grad and z.is_leaf and z._base is None


def test_rand_like_draws_in_memory_order():
    x = st.randn(4, 8).t()
    st.manual_seed(5)
    a = st.rand_like(x)
    st.manual_seed(5)
    b = st.rand(4, 8)          # row-major of x.t()'s memory order
    assert a.stride() == (1, 8)
    np.testing.assert_array_equal(a.t().numpy(), b.numpy())
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        st.randint_like(x, 5, 5)


# ---------------- views after an op ----------------
def test_view_after_op_accepted_and_refused(torch):
    for lib, m in ((torch, torch.randn(2, 3, 4, 5)), (st, st.randn(2, 3, 4, 5))):
        q = m.permute(0, 2, 1, 3) * 0.125           # attention's scaled q
        back = q.permute(0, 2, 1, 3)
        assert back.is_contiguous()
        assert tuple(back.view(2, 3, 20).shape) == (2, 3, 20)
        with pytest.raises(RuntimeError, match=VIEW_ERR):
            q.view(2, 4, 15)
        s = (m.transpose(-1, -2) + 1).transpose(-1, -2)
        assert tuple(s.view(-1).shape) == (120,)
        with pytest.raises(RuntimeError, match=VIEW_ERR):
            (m.transpose(-1, -2) + 1).view(-1)
        # a row-major operand makes the result row-major: the view works
        c = m.transpose(-1, -2).contiguous()
        assert tuple((c + m.transpose(-1, -2)).view(-1).shape) == (120,)


def test_attention_scale_then_view_values(torch):
    qt, qs = _pair(torch, (2, 5, 4, 8))
    rt = (qt.permute(0, 2, 1, 3) * 0.5).permute(0, 2, 1, 3).reshape(2, 5, 32).view(10, 32)
    rs = (qs.permute(0, 2, 1, 3) * 0.5).permute(0, 2, 1, 3).reshape(2, 5, 32).view(10, 32)
    _check(rt, rs, exact=True)


# ---------------- compiled ----------------
def _f_t2(x):
    return x.t() * 2


def _f_view(x):
    return (x.t() * 2).t().view(-1)


def _f_attn(q, k):
    s = q.permute(0, 2, 1, 3) * 0.5 + k.permute(0, 2, 1, 3)
    return s.permute(0, 2, 1, 3).reshape(2, 5, -1).view(10, -1)


def _f_bad_view(x):
    return (x.t() * 2).view(-1)


def test_compiled_strides_match_eager_and_torch(torch):
    cf = st.compile(_f_t2)
    for i in range(3):
        xt, xs = _pair(torch, (4, 8), seed=i)
        r = cf(xs)
        assert r.stride() == _f_t2(xs).stride() == _f_t2(xt).stride() == (1, 8)
        _check(_f_t2(xt), r)


def test_compiled_view_no_break_values_and_grads(torch):
    e = st.explain(_f_view, st.randn(4, 8))
    assert e.graph_count == 1 and e.graph_break_count == 0
    cf = st.compile(_f_view)
    for i in range(3):
        xt, xs = _pair(torch, (4, 8), seed=i)
        xs.requires_grad_(True)
        xt.requires_grad_(True)
        xe = xs.detach().clone().requires_grad_(True)
        r, re, rt = cf(xs), _f_view(xe), _f_view(xt)
        _check(rt, r, exact=True)
        _check(rt, re, exact=True)
        w = np.arange(32, dtype=np.float32)
        (r * st.tensor(w)).sum().backward()
        (re * st.tensor(w)).sum().backward()
        (rt * torch.from_numpy(w)).sum().backward()
        np.testing.assert_array_equal(xs.grad.numpy(), xt.grad.numpy())
        np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())


def test_compiled_attention_pattern(torch):
    cf = st.compile(_f_attn)
    for i in range(3):
        qt, qs = _pair(torch, (2, 5, 4, 8), seed=i)
        kt, ks = _pair(torch, (2, 5, 4, 8), seed=10 + i)
        _check(_f_attn(qt, kt), cf(qs, ks))


def test_compiled_written_out():
    cf, cv = st.compile(_f_t2), st.compile(_f_view)
    w = np.arange(32, dtype=np.float32)
    for i in range(3):
        x = st.randn(4, 8, requires_grad=True)
        xn = x.detach().numpy()
        r = cf(x)
        assert r.stride() == (1, 8) and r.requires_grad
        np.testing.assert_array_equal(r.detach().numpy(), xn.T * 2)
        v = cv(x)
        np.testing.assert_array_equal(v.detach().numpy(), xn.reshape(-1) * 2)
        (v * st.tensor(w)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), 2 * w.reshape(4, 8))


def test_compiled_refuses_the_view_torch_refuses():
    # torch refuses it too (test_view_after_op_accepted_and_refused)
    with pytest.raises(RuntimeError, match=VIEW_ERR):
        _f_bad_view(st.randn(4, 8))
    cf = st.compile(_f_bad_view)
    for _ in range(2):
        with pytest.raises(RuntimeError, match=VIEW_ERR):
            cf(st.randn(4, 8))


def test_compiled_like_and_clone(torch):
    def f(x):
        y = x.permute(0, 2, 1)
        return st.zeros_like(y) + y.clone() * 2, st.ones_like(y)

    def g(x):
        y = x.permute(0, 2, 1)
        return torch.zeros_like(y) + y.clone() * 2, torch.ones_like(y)
    cf = st.compile(f)
    for i in range(2):
        xt, xs = _pair(torch, (2, 3, 4), seed=i)
        for rt, rs in zip(g(xt), cf(xs)):
            _check(rt, rs, exact=True)


def _f_inplace(L, x, c):
    y = x.t() * 2
    y.add_(1)
    z = y * 3
    z.mul_(y)
    w = L.zeros_like(y)
    w.copy_(c.t())
    w.clamp_(min=0)
    return y, z, w


def test_compiled_inplace_results_keep_strides(torch):
    cf = st.compile(lambda x, c: _f_inplace(st, x, c))
    for i in range(3):
        xt, xs = _pair(torch, (4, 8), seed=i)
        ct, cs = _pair(torch, (4, 8), seed=5 + i)
        xs.requires_grad_(True)
        xt.requires_grad_(True)
        rt, rs, re = _f_inplace(torch, xt, ct), cf(xs, cs), _f_inplace(st, xs, cs)
        for a, b, c in zip(rt, rs, re):
            _check(a, b)
            _check(a, c)
        sum((r * (k + 1)).sum() for k, r in enumerate(rt[:2])).backward()
        sum((r * (k + 1)).sum() for k, r in enumerate(rs[:2])).backward()
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-5)


# ---------------- gradients ----------------
@pytest.mark.parametrize("name,shape,make", LAYOUTS[:5], ids=IDS[:5])
def test_backward_against_torch(torch, name, shape, make):
    data = np.random.RandomState(0).randn(*shape).astype(np.float32)
    other = np.random.RandomState(1).randn(*shape).astype(np.float32)
    xt = torch.from_numpy(data.copy()).requires_grad_(True)
    xs = st.tensor(data.copy(), requires_grad=True)
    yt = torch.from_numpy(other.copy()).requires_grad_(True)
    ys = st.tensor(other.copy(), requires_grad=True)

    def run(lib, fn, x, y):
        a, b = make(x), make(y)
        r = fn.gelu(a) * b + lib.where(a > 0, a, b).clamp(-1, 1) + (a * 0.5).exp()
        w = lib.arange(r.numel(), dtype=r.dtype).reshape(tuple(r.shape))
        (r * w).sum().backward()
        return r
    rt = run(torch, torch.nn.functional, xt, yt)
    rs = run(st, F, xs, ys)
    _check(rt, rs)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ys.grad.numpy(), yt.grad.numpy(), rtol=1e-5, atol=1e-5)
    # torch gives a leaf's gradient the leaf's own (row-major) strides
    assert xs.grad.is_contiguous() and xt.grad.is_contiguous()


def test_compiled_permuted_result_is_no_view():
    # x.t() * 2 is no view in eager (and torch); a compiled call returned it as a view of
    # the program's buffer (_base set)
    f = st.compile(lambda x: x.t() * 2)
    for _ in range(3):
        x = st.randn(4, 8)
        y = f(x)
        assert y.stride() == (1, 8) and y._base is None
        np.testing.assert_array_equal(y.numpy(), (x.t() * 2).numpy())
