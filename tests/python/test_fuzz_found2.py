# Regressions of the bugs the widened differential fuzzer (scripts/fuzz_compile.py with
# scripts/fuzz_more_ops.py: indexing, sorting, promotion, movement ops, norms, view
# chains, --dynamic) found in its second long run, each with expected values, eager and
# compiled (the compiled functions called twice: the capture and the cached entry).
import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401


@pytest.mark.parametrize("mode", MODES)
def test_reshape_pulled_only_through_scalar_operands(mode):
    # viewfold pulled reshape(u) < 0 into u's space, then on through a where whose other
    # operands are not 0-d: the cached entry's result had the reshape's shape [2] where
    # broadcasting gives [1, 2]
    def f(x):
        return (st.where(x.half().reshape(2) < 0, x, -x),
                st.copysign(x, (x == x).half().view(-1).cos()))

    g = maybe_compiled(f, mode)
    x = st.tensor([[-0.5, 0.25]])
    for _ in range(2):
        w, c = g(x)
        assert tuple(w.shape) == (1, 2) and tuple(c.shape) == (1, 2)
        np.testing.assert_array_equal(w.numpy(), [[-0.5, -0.25]])
        np.testing.assert_array_equal(c.numpy(), [[0.5, 0.25]])


@pytest.mark.parametrize("mode", MODES)
def test_bool_tensor_and_or_an_int_number_is_bitwise(mode):
    # torch: a bool tensor & | an integer number promotes to int64 and is bitwise;
    # symtrace raised "& and | are supported on bool tensors only"
    g = maybe_compiled(lambda b: (b & -1, b | 2, -1 & b, 6 | b, b & True, b | False), mode)
    b = st.tensor([True, False])
    for _ in range(2):
        r = g(b)
        assert [t.dtype for t in r] == [st.int64] * 4 + [st.bool] * 2
        assert [t.tolist() for t in r] == [[1, 0], [3, 2], [1, 0], [7, 6], [True, False], [True, False]]
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        b & 1.5


@pytest.mark.parametrize("mode", MODES)
def test_pow_exponent_gradient_keeps_a_nan_incoming_gradient(mode):
    # torch multiplies the incoming gradient outside its where: a NaN gradient (here from
    # log_softmax of an inf) stays NaN where the base is 0 and the exponent >= 0;
    # symtrace's where dropped it to 0
    def f(e):
        return (st.zeros(2) ** e).log_softmax(0)

    e = st.tensor([-1.0, 0.5], requires_grad=True)
    maybe_compiled(f, mode)(e).backward(st.tensor([1.0, 2.0]))
    assert np.isnan(e.grad.numpy()).all()


@pytest.mark.parametrize("mode", MODES)
def test_repeat_interleave_gives_a_fresh_tensor(mode):
    # the result was a view (of a 0-d or size-1 input expanded: stride 0, so an in-place
    # write raised; with repeats=1 the input itself, which the write then changed);
    # torch's is a new tensor
    def f(s, v, c):
        a = st.repeat_interleave(s, 2)
        b = v.repeat_interleave(1)
        d = c.repeat_interleave(3, dim=1)
        a.mul_(0.5)
        b.add_(1)
        d.add_(1)
        return a, b, d

    s, v, c = st.tensor(3.0), st.tensor([1.0, 2.0]), st.tensor([[1.0], [2.0]])
    a, b, d = maybe_compiled(f, mode)(s, v, c)
    assert a.tolist() == [1.5, 1.5] and b.tolist() == [2.0, 3.0]
    assert d.tolist() == [[2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]
    assert s.item() == 3.0 and v.tolist() == [1.0, 2.0] and c.tolist() == [[1.0], [2.0]]


@pytest.mark.parametrize("mode", MODES)
def test_group_norm_of_an_empty_tensor(mode):
    # reshape(n, groups, -1) of no element raised 'ambiguous'; torch gives an empty result
    f = maybe_compiled(lambda x: st.nn.functional.group_norm(x, 2, st.ones(4), st.zeros(4)), mode)
    for shape in ((0, 4, 3), (2, 4, 0), (0, 4)):
        x = st.ones(*shape, requires_grad=True)
        y = f(x)
        assert tuple(y.shape) == shape
        y.sum().backward()
        assert tuple(x.grad.shape) == shape


@pytest.mark.parametrize("mode", MODES)
def test_scatter_reduce_prod_and_mean_keep_small_int_dtypes(mode):
    # 'prod' and 'mean' of int8 / uint8 gave int64 (a prod / a count in int64); torch
    # keeps the input's dtype (prod wrapping, mean floored)
    def f(x, u):
        i = st.tensor([0, 0, 1, 1, 1])
        return (x.scatter_reduce(0, i, x, "prod"), x.scatter_reduce(0, i, x, "mean", include_self=False),
                u.scatter_reduce(0, i, u, "prod", include_self=False))

    x = st.tensor([4, -4, 2, 7, -3], dtype=st.int8)
    u = st.tensor([4, 250, 2, 7, 3], dtype=st.uint8)
    p, m, q = maybe_compiled(f, mode)(x, u)
    assert (p.dtype, m.dtype, q.dtype) == (st.int8, st.int8, st.uint8)
    assert p.tolist() == [-64, -88, 2, 7, -3]    # 4 * 4 * -4; -4 * 2 * 7 * -3 = 168 wraps to -88
    assert m.tolist() == [0, 2, 2, 7, -3]
    assert q.tolist() == [232, 42, 2, 7, 3]


@pytest.mark.parametrize("mode", MODES)
def test_scatter_reduce_prod_amax_check_the_index_bounds(mode):
    # the one-hot of 'prod' / 'amax' / 'amin' matched nothing for an index out of range
    # and went on; torch raises (as symtrace's 'sum' did); under dynamic shapes the cached
    # graph met it with a smaller input
    f = lambda x, i, r: x.scatter_reduce(0, i, st.ones(1), r)  # noqa: E731
    g = f if mode == "eager" else st.compile(f, backend=mode, dynamic=True)
    for r in ("prod", "amax", "amin"):
        assert g(st.full((3,), 2.0), st.tensor([1]), r).tolist() == \
            {"prod": [2.0, 2.0, 2.0], "amax": [2.0, 2.0, 2.0], "amin": [2.0, 1.0, 2.0]}[r]
        # eager (and a frame that ran eagerly): torch's RuntimeError; a compiled graph's
        # scatter kernel still raises IndexError (the kernel error does not know its op)
        exc = RuntimeError if mode == "eager" else (IndexError, RuntimeError)
        with pytest.raises(exc, match="index 1 is out of bounds for dimension 0 with size 1"):
            g(st.ones(1), st.tensor([1]), r)


@pytest.mark.parametrize("mode", MODES)
def test_index_fill_checks_the_index_bounds(mode):
    # index_fill's one-hot against arange matched nothing for an index out of range and
    # went on (eager too); torch raises IndexError
    f = lambda x, i: x.index_fill(0, i, 2.5)  # noqa: E731
    g = f if mode == "eager" else st.compile(f, backend=mode, dynamic=True)
    assert g(st.ones(4), st.tensor([2, -1])).tolist() == [1.0, 1.0, 2.5, 2.5]
    for bad in ([2], [-3]):
        with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 2"):
            g(st.ones(2), st.tensor(bad))


@pytest.mark.parametrize("mode", MODES)
def test_std_gradient_at_equal_values_is_zero(mode):
    # std of equal values is 0: torch's backward masks it to a zero gradient; symtrace's
    # sqrt gave inf * 0 = NaN (one element with correction=0, a constant row, a
    # log_softmax over a dim of size 1)
    def f(x, y, z):
        return (x.std(1, correction=0).sum() + st.std_mean(y, 1)[0].sum()
                + z.log_softmax(0).std())

    x = st.tensor([[3.0, 3.0], [1.0, 2.0]], requires_grad=True)
    y = st.tensor([[2.0, 2.0, 2.0]], requires_grad=True)
    z = st.tensor([[0.5, -1.0, 2.0]], requires_grad=True)
    maybe_compiled(f, mode)(x, y, z).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.0], [-0.5, 0.5]], atol=1e-6)
    np.testing.assert_array_equal(y.grad.numpy(), [[0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(z.grad.numpy(), [[0.0, 0.0, 0.0]])


@pytest.mark.parametrize("mode", MODES)
def test_cat_skips_1d_empty_tensors_only_in_its_shape_checks(mode):
    # torch leaves 1-D empty tensors out of cat's shape checks, but they still promote the
    # dtype and get (empty) gradients; symtrace dropped them altogether: an int result of
    # cat([ints, empty floats]), no requires_grad (so F.pad of an empty tensor lost it)
    def f(a, e, x):
        return (st.cat([a, e.detach()]), st.cat([a.float(), e]),
                st.nn.functional.pad(e, (1, 0), value=0.5), st.cat([x, e, x * 2]))

    a = st.ones(2, 2, dtype=st.int64)
    e = st.ones(0, requires_grad=True)
    x = st.tensor([1.0, 2.0], requires_grad=True)
    r, c, p, y = maybe_compiled(f, mode)(a, e, x)
    assert r.dtype is st.float32 and r.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert c.requires_grad and p.requires_grad and p.tolist() == [0.5]
    (c.sum() + p.sum() + y.sum()).backward()
    assert tuple(e.grad.shape) == (0,) and x.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("mode", MODES)
def test_repeat_and_tile_of_many_dims(mode):
    # repeat interleaved a unit dim before every dim: 2 * rank dims, over symtrace's 8 for
    # a 5-d tensor ('reshape: at most 8 dimensions'); torch's result has the input's rank
    x = np.arange(24, dtype=np.float32).reshape(2, 1, 3, 2, 2)
    f = maybe_compiled(lambda t: (st.tile(t, (1, 2, 2, 1, 1)), t.repeat(2, 2, 1, 2, 1, 2, 1, 2),
                                   t.repeat(1, 1, 1, 3, 1, 1)), mode)
    t = st.tensor(x, requires_grad=True)
    a, b, c = f(t)
    np.testing.assert_array_equal(a.detach().numpy(), np.tile(x, (1, 2, 2, 1, 1)))
    np.testing.assert_array_equal(b.detach().numpy(), np.tile(x, (2, 2, 1, 2, 1, 2, 1, 2)))
    np.testing.assert_array_equal(c.detach().numpy(), np.tile(x, (1, 1, 1, 3, 1, 1)))
    (a.sum() + b.sum() + c.sum()).backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.full(x.shape, 4 + 32 + 3, np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_einsum_of_small_ints_with_a_broadcast_contraction(mode):
    # 'bij,bjk' with j of size 1 on one side sums the other side first: int64, and the
    # product then refused int64 @ int16; torch gives the int64 product
    a = st.tensor([[[-1, 5]], [[4, 2]]], dtype=st.int16)
    b = st.tensor([[[1], [2]], [[3], [-1]]], dtype=st.int16)
    f = maybe_compiled(lambda a, b: (st.einsum("bij,bjk->bik", a, a), st.einsum("bij,bjk->bik", b, a)), mode)
    r, q = f(a, b)
    assert r.dtype is st.int64 and r.tolist() == [[[-4, 20]], [[24, 12]]]
    assert q.dtype is st.int16 and q.tolist() == [[[-1, 5], [-2, 10]], [[12, 6], [-4, -2]]]


@pytest.mark.parametrize("mode", MODES)
def test_remainder_by_a_number_saves_nothing(mode):
    # x % 2's gradient is g: it saved x anyway, so writing into x afterwards raised
    # 'modified by an inplace operation' at backward (torch: fine); a tensor divisor
    # still needs both and still raises
    def f(x):
        y = x * 1
        v = y.remainder(2)
        y.fill_(2.0)
        return v

    x = st.tensor([-1.5, 2.5], requires_grad=True)
    out = maybe_compiled(f, mode)(x)
    np.testing.assert_allclose(out.detach().numpy(), [0.5, 0.5])
    out.backward(st.tensor([1.0, 3.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 3.0])
    d = st.tensor([2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y.remainder(d)
    y.fill_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        v.sum().backward()


@pytest.mark.parametrize("mode", MODES)
def test_index_add_of_bools_with_an_alpha(mode):
    # source * alpha of bools is int64: scatter_add then refused bool vs int64; torch adds
    # (ors) the nonzero products into the bool tensor
    def f(x, s):
        y = x.clone()
        y.index_add_(0, st.tensor([2, 2]), s, alpha=3)
        return x.index_add(0, st.tensor([0, 1]), s, alpha=2), y

    r, y = maybe_compiled(f, mode)(st.tensor([True, False, False]), st.tensor([False, True]))
    assert r.dtype is st.bool and r.tolist() == [True, True, False]
    assert y.dtype is st.bool and y.tolist() == [True, False, True]
