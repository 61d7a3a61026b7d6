# Regressions of the bugs the differential fuzzer (scripts/fuzz_compile.py with
# scripts/fuzz_more_ops.py and scripts/fuzz_nn_ops.py: shifts, tensor-bound clamp,
# fill_ / copy_ / zero_ with grad, conv / pool / SDPA, cumsum / cumprod dtype=, second
# backwards, --dynamic batch sizes) found in its third long run, each with expected
# values, eager and compiled (the compiled functions called twice: the capture and the
# cached entry).
import numpy as np
import pytest

import symtrace as st

from fuzz_found_helpers import BACKENDS, MODES, fresh_frontend, maybe_compiled  # noqa: F401


def _maybe_compiled(fn, mode):
    return maybe_compiled(fn, mode, fullgraph=False)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("offset", [-1, 0, 2])
def test_diag_embed_of_empty_keeps_history(mode, offset):
    # diag_embed of a tensor with no element returned fresh zeros: the result did not
    # require grad where torch's does (fuzz seed 100408)
    def f(x):
        return st.diag_embed(x.sqrt(), offset)

    g = _maybe_compiled(f, mode)
    m = abs(offset)
    for _ in range(2):
        x = st.zeros(0, requires_grad=True)
        y = g(x)
        assert tuple(y.shape) == (m, m) and y.requires_grad
        np.testing.assert_array_equal(y.detach().numpy(), np.zeros((m, m), np.float32))
        (y * 2).sum().backward()
        assert x.grad is not None and tuple(x.grad.shape) == (0,)


def test_diag_embed_of_empty_without_grad():
    y = st.diag_embed(st.zeros(2, 0, dtype=st.int64), 1)
    assert tuple(y.shape) == (2, 1, 1) and y.dtype == st.int64 and not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 1, 1), np.int64))


@pytest.mark.parametrize("mode", MODES)
def test_bitwise_ops_wrap_out_of_range_int_scalars(mode):
    # int8 & -129 raised "value cannot be converted to type int8_t without overflow":
    # torch's bitwise ops wrap the scalar into the dtype (fuzz seed 101742)
    def f(x, u):
        return x & -129, 200 ^ x, x | 300, u & -1, st.bitwise_xor(u, 513)

    g = _maybe_compiled(f, mode)
    for _ in range(2):
        a, b, c, d, e = g(st.tensor([4, -2, 5], dtype=st.int8), st.tensor([3, 250], dtype=st.uint8))
        assert a.dtype == st.int8 and d.dtype == st.uint8
        assert a.tolist() == [4, 126, 5]
        assert b.tolist() == [-52, 54, -51]
        assert c.tolist() == [44, -2, 45]
        assert d.tolist() == [3, 250]
        assert e.tolist() == [2, 251]


def test_bitwise_inplace_wraps_int_scalars():
    x = st.tensor([4, -2, 5], dtype=st.int16)
    x.bitwise_or_(-32769)
    x &= 70000
    assert x.tolist() == [4464, 4464, 4464]


@pytest.mark.parametrize("mode", MODES)
def test_clamp_crossed_tensor_bounds_keep_nan_with_grad(mode):
    # clamp(x, lo, hi) with lo > hi and a NaN x gave hi where x required grad (the
    # gradient path picked hi's value); torch's value is NaN and hi still gets the
    # gradient (fuzz seed 100928)
    nan = float("nan")

    def f(x, lo, hi):
        return st.clamp(x * 1, lo, hi)

    g = _maybe_compiled(f, mode)
    for _ in range(2):
        x = st.tensor([nan, nan, 3.0, 0.5, nan], requires_grad=True)
        lo = st.tensor([1.0, 0.0, 1.0, 0.0, nan], requires_grad=True)
        hi = st.tensor([0.0, 2.0, 0.0, 1.0, 1.0], requires_grad=True)
        y = g(x, lo, hi)
        np.testing.assert_array_equal(y.detach().numpy(), [nan, nan, 0.0, 0.5, nan])
        y.backward(st.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
        np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0, 4, 0])
        np.testing.assert_array_equal(lo.grad.numpy(), [0, 0, 0, 0, 0])
        np.testing.assert_array_equal(hi.grad.numpy(), [1, 0, 3, 0, 0])


@pytest.mark.parametrize("mode", MODES)
def test_dropout_p_one_is_input_times_zero(mode):
    # dropout(p=1) gave zeros where torch gives input * 0: NaN for NaN and inf, -0.0 for
    # negatives (fuzz seed 100735)
    nan, inf = float("nan"), float("inf")

    def f(x):
        return st.nn.functional.dropout(x * 1, p=1.0, training=True)

    g = _maybe_compiled(f, mode)
    for _ in range(2):
        x = st.tensor([nan, inf, -1.0, 2.0], requires_grad=True)
        y = g(x)
        v = y.detach().numpy()
        np.testing.assert_array_equal(v, [nan, nan, 0.0, 0.0])
        assert np.signbit(v[2]) and not np.signbit(v[3])
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0, 0.0])


def test_dropout_p_one_inplace():
    x = st.tensor([float("nan"), -3.0, 1.0])
    y = st.nn.functional.dropout(x, p=1.0, training=True, inplace=True)
    assert y is x
    np.testing.assert_array_equal(x.numpy(), [float("nan"), 0.0, 0.0])
    assert np.signbit(x.numpy()[1])


@pytest.mark.parametrize("mode", MODES)
def test_min_max_dim_of_0d_then_written_in_place(mode):
    # x.min(0).values of a 0-d x went through amin, whose backward saved x: an in-place
    # write to x afterwards failed the backward (torch saves only the index; fuzz seed
    # 102330)
    def f(x):
        x = x * 1
        v = st.exp2(x.min(0).values)
        w = x.max(-1, keepdim=True)
        x.clamp_(max=0.5)
        return v * 2 + w.values, w.indices

    g = _maybe_compiled(f, mode)
    for _ in range(2):
        x = st.tensor(1.5, requires_grad=True)
        y, i = g(x)
        np.testing.assert_allclose(y.item(), 2 * 2 ** 1.5 + 1.5, rtol=1e-6)
        assert i.item() == 0 and i.dtype == st.int64
        y.backward()
        np.testing.assert_allclose(x.grad.item(), 2 * np.log(2) * 2 ** 1.5 + 1, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_fill_with_tensor_value_refuses_expanded_target(mode):
    # fill_ with a 0-d tensor value wrote into an expanded view; torch refuses it (a number
    # fills as is; fuzz seed 102592)
    def f(x):
        return x.exp().expand(2, -1).fill_(x.sum())

    def h(x):
        return x.exp().expand(2, -1).fill_(3.0) * 1

    g, k = _maybe_compiled(f, mode), _maybe_compiled(h, mode)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            g(st.tensor([[1.0, 2.0]]))
        np.testing.assert_array_equal(k(st.tensor([[1.0, 2.0]])).numpy(), np.full((2, 2), 3.0))


@pytest.mark.parametrize("mode", MODES)
def test_einsum_of_bools_contracting_size_one_dims(mode):
    # einsum of bools whose contracted dims have size 1 is a product in torch; symtrace
    # sent it to matmul, which refuses bools (fuzz seed 102391)
    def f(x, y):
        return st.einsum("ij,ij->i", x, x), st.einsum("ij,kj->ik", x, x), st.einsum("bij,bkj->bik", y, y)

    g = _maybe_compiled(f, mode)
    x = st.tensor([[True], [False]])
    y = st.tensor([[True, False, True], [False, True, True]]).reshape(2, 3, 1)
    for _ in range(2):
        a, b, c = g(x, y)
        assert a.dtype == st.bool and b.dtype == st.bool and c.dtype == st.bool
        assert a.tolist() == [True, False]
        assert b.tolist() == [[True, False], [False, False]]
        assert c.tolist() == [[[True, False, True], [False, False, False], [True, False, True]],
                              [[False, False, False], [False, True, True], [False, True, True]]]
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        st.einsum("ij,kj->ik", x.t(), x.t())


@pytest.mark.parametrize("mode", MODES)
def test_adaptive_avg_pool2d_without_channels(mode):
    # adaptive_avg_pool2d refused an input with no channel ([1, 0, 1, 1]); torch checks only
    # its spatial dims (3-d pooling and max pooling check all; fuzz seed 200464, --dynamic)
    F = st.nn.functional

    def f(x):
        return F.adaptive_avg_pool2d(x, 2) * 2

    g = _maybe_compiled(f, mode)
    for _ in range(2):
        assert tuple(g(st.ones(1, 0, 1, 1)).shape) == (1, 0, 2, 2)
        y = g(st.ones(1, 1, 1, 1))
        np.testing.assert_array_equal(y.numpy(), np.full((1, 1, 2, 2), 2.0, np.float32))
    assert tuple(F.adaptive_avg_pool1d(st.ones(2, 0, 3), 2).shape) == (2, 0, 2)
    for fn, shape in ((F.adaptive_avg_pool2d, (2, 0, 3)), (F.adaptive_max_pool2d, (1, 0, 1, 1)),
                      (F.adaptive_avg_pool3d, (1, 0, 2, 2, 2))):
        with pytest.raises(RuntimeError, match="non-zero size for non-batch dimensions"):
            fn(st.ones(*shape), 2)


@pytest.mark.parametrize("mode", MODES)
def test_repeat_interleave_of_expanded_input_is_writable(mode):
    # repeat_interleave of an expanded input returned an overlapping view (stride 0), so an
    # in-place write into the result was refused; torch's result is a fresh tensor (fuzz
    # seed 102492)
    def f(x):
        v = x.repeat_interleave(2, dim=-1)
        v.index_add_(0, st.tensor([0, 3]), st.ones(2), alpha=-1)
        return v, x * 1

    g = _maybe_compiled(f, mode)
    for _ in range(2):
        v, x = g(st.tensor([0.5]).expand(3))
        np.testing.assert_array_equal(v.numpy(), [-0.5, 0.5, 0.5, -0.5, 0.5, 0.5])
        np.testing.assert_array_equal(x.numpy(), [0.5, 0.5, 0.5])


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_layer_norm_checks_normalized_shape(backend):
    # under dynamic=True layer_norm ran on plain ints, so its check of the input's last dims
    # against normalized_shape made no guard: a later input [2, 4] was normalized over 4
    # where torch raises (fuzz --dynamic, seeds 2009xx); batch sizes still share the graph
    F = st.nn.functional
    if not st._C._fe_supported():
        pytest.skip("no frame hook on this Python")

    def f(x):
        return F.layer_norm(x * 2, (3,)) + 1

    g = st.compile(f, backend=backend, dynamic=True)
    z = np.array([-2.0, 0.0, 2.0]) / np.sqrt(8 / 3 + 1e-5)  # [-0.2247, 1, 2.2247] + 1
    for rows in (2, 5, 3):
        x = st.tensor(np.tile([[1.0, 2.0, 3.0]], (rows, 1)).astype(np.float32))
        np.testing.assert_allclose(g(x).numpy(), np.tile(z + 1, (rows, 1)),
                                   rtol=1e-5, atol=1e-5)
    assert st._C._fe_stats()["translations"] == 1
    for shape in ((2, 4), (5, 4), (4,)):
        with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\]"):
            g(st.ones(*shape))
    np.testing.assert_allclose(g(st.tensor([[1.0, 2.0, 3.0]])).numpy(), [z + 1],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_add_alpha_scales_in_the_result_dtype(mode):
    # x.add_(y, alpha=-1) with int32 x and uint8 y scaled y in uint8 (1 * -1 wrapped to 255:
    # -3 became 252); a bool y scaled by 2 gave an int64 result; torch scales in the result
    # dtype (fuzz --dynamic seed 201633)
    def f(x, u, b):
        x = x.clone()
        x.add_(u.view(1), alpha=-1)
        return x, st.add(u, b, alpha=2), st.sub(x, u, alpha=3)

    g = _maybe_compiled(f, mode)
    for _ in range(2):
        x, s, d = g(st.tensor([[-3, -4], [3, -1]], dtype=st.int32), st.tensor(1, dtype=st.uint8),
                    st.tensor([True, False]))
        assert x.dtype == st.int32 and x.tolist() == [[-4, -5], [2, -2]]
        assert s.dtype == st.uint8 and s.tolist() == [3, 1]
        assert d.dtype == st.int32 and d.tolist() == [[-7, -8], [-1, -5]]
