"""Several advanced indices (int tensors, lists, nested lists, bool masks) in one
subscript, mixed with ints, slices, None, Ellipsis and True/False:
Tensor.__getitem__ (frontend/indexing.c: gather_adv) and __setitem__ (through
symtrace._tensor._setitem_functional). Against torch: values, result shapes,
gradients (repeated indices accumulate), placement of the broadcast index dims
(adjacent: in place; separated: first), error types and messages; setitem with
numbers, tensors and broadcast values, with autograd wrt the base and the value;
compiled functions against eager. A few list-only keys are also checked against
numpy, so that the C paths run where torch is missing (the Python 3.12 venv)."""
import warnings

import numpy as np
import pytest

import symtrace as st

X = np.arange(60.).reshape(3, 4, 5)


# name -> key builder (L: symtrace or torch). Grouped as the brief's table asks:
# 2 and 3 advanced indices, adjacent and separated, with None/Ellipsis/int/slice
# mixed in, broadcasting index shapes, lists and tensors, negative indices, bool
# mask + int tensor, 0-d index tensors, empty index tensors, int32 indices.
KEYS = {
    # two / three advanced indices, adjacent
    "two_tensors": lambda L: (L.tensor([0, 2]), L.tensor([1, 3])),
    "two_lists": lambda L: ([0, 2], [1, 3]),
    "three_lists": lambda L: ([1, 0, 2], [0, 0, 3], [4, 4, 0]),
    "three_tensors_broadcast_3way": lambda L: (L.tensor([[[0]], [[2]]]), L.tensor([[1], [3], [0]]),
                                               L.tensor([0, 1, 2, 4])),
    "slice_then_two": lambda L: (slice(None), [0, 2], [1, 3]),
    "two_then_slice": lambda L: ([0, 2], [1, 3], slice(1, 4)),
    "ellipsis_then_two": lambda L: (Ellipsis, [0, 1], [1, 2]),
    "none_then_two": lambda L: (None, [0, 1], [1, 2]),
    "int_between_is_adjacent": lambda L: ([0, 1], 0, [1, 2]),
    "int_first": lambda L: (2, [0, 3], [4, 1]),
    "zero_d_int_tensor": lambda L: (L.tensor(1), L.tensor([1, 2]), L.tensor(3)),
    "zero_d_bool_tensor": lambda L: (L.tensor(True), [1, 2]),
    "true_between": lambda L: ([0, 1], True, [1, 2]),
    "true_first": lambda L: (True, [0, 1]),
    "true_after_one_index": lambda L: ([0, 1], True),
    "two_trues_broadcast_as_indices": lambda L: (True, True),
    "trues_after_ellipsis": lambda L: (Ellipsis, True, None, True),
    "bools_separated": lambda L: (None, False, slice(None), True, 1),
    "four_items_none_slice": lambda L: (None, [0, 1], slice(1, 3), [1, 2]),
    # separated by a slice / None / Ellipsis: the index dims go first
    "separated_by_slice": lambda L: ([1, 0], slice(None), [1, 3]),
    "separated_by_none": lambda L: ([0, 1], None, [1, 2]),
    "separated_by_ellipsis": lambda L: ([0, 1], Ellipsis, [1, 2]),
    "separated_slice_step": lambda L: ([2, 0], slice(None, None, 2), [4, 0]),
    "separated_broadcast": lambda L: ([[0], [2]], slice(None), [1, 2, 3]),
    "separated_many_positions": lambda L: ([[0], [1], [2], [0]], slice(None), [0, 1, 2, 3, 4]),
    # broadcasting index shapes
    "broadcast_col_row": lambda L: ([[0], [2]], [1, 2, 3]),
    "broadcast_tensors_2x1_3": lambda L: (L.tensor([[0], [2]]), L.tensor([1, 2, 3])),
    "two_d_indices": lambda L: (L.tensor([[0, 1], [2, 0]]), L.tensor([[1, 1], [3, 2]])),
    "nested_list_index": lambda L: ([[0, 1], [2, 2]], [[3, 3], [0, 1]], 4),
    # values: negative, repeated, empty, dtypes
    "negative": lambda L: ([-1, -3], [-4, 0]),
    "negative_separated": lambda L: ([-1, 0], slice(None), [-5, -1]),
    "repeated": lambda L: ([0, 0, 2, 0], [1, 1, 1, 1]),
    "repeated_separated": lambda L: ([1, 1], slice(None), [2, 2]),
    "empty_tensors": lambda L: (L.tensor([], dtype=L.int64), L.tensor([], dtype=L.int64)),
    "empty_lists_with_slice": lambda L: (slice(None), [], []),
    "empty_broadcast_skips_bounds": lambda L: ([7], []),
    "empty_result_skips_bounds": lambda L: (slice(3, None), [9], True, [-1]),
    "int32_tensors": lambda L: (L.tensor([0, 1], dtype=L.int32), L.tensor([3, 1], dtype=L.int32)),
    "int32_and_int64": lambda L: (L.tensor([0, 2], dtype=L.int32), L.tensor([3, 1])),
    "float_list_truncates": lambda L: ([0.7, 2.2], [1, 2]),
    # bool masks mixed with int indices
    "mask_and_list": lambda L: (L.tensor([True, False, True]), [1, 2]),
    "mask_and_list_broadcast": lambda L: (L.tensor([True, False, True]), [[1], [3]]),
    "mask2d_and_list": lambda L: (L.tensor([[True, False, True, False], [False, False, True, True],
                                            [True, True, True, True]]), [1]),
    "mask_separated": lambda L: (L.tensor([True, False, True]), slice(None), [1, 2]),
    "list_then_mask": lambda L: ([2, 0], L.tensor([False, True, True, False])),
    "mask_mask": lambda L: (L.tensor([True, False, True]), L.tensor([False, True, False, True])),
    # top-level list of sequences: torch reads it as a tuple (with a warning)
    "top_level_nested_list": lambda L: [[0, 2], [1, 3]],
    "top_level_list_of_tensors": lambda L: [L.tensor([0, 2]), L.tensor([1, 3])],
}

# Keys whose base is reshaped / strided first: name -> (view builder, key builder).
VIEW_KEYS = {
    "transposed_adjacent": (lambda x: x.transpose(0, 2), lambda L: ([0, 4], [1, 2])),
    "transposed_separated": (lambda x: x.transpose(0, 2), lambda L: ([0, 4], slice(None), [1, 2])),
    "4d_separated_leading_slice": (lambda x: x.reshape(3, 2, 2, 5), lambda L: (slice(None), [0, 1], slice(None), [1, 2])),
    "4d_separated_leading_slice_many": (lambda x: x.reshape(3, 2, 2, 5),
                                        lambda L: (slice(None), [[0], [1], [1]], slice(None), [1, 2, 0, 0, 4])),
    "4d_three_separated": (lambda x: x.reshape(3, 2, 2, 5), lambda L: ([0, 2], slice(None), [1, 0], [1, 2])),
    "4d_int_then_separated": (lambda x: x.reshape(3, 2, 2, 5), lambda L: (0, [1, 0], slice(None), [0, 3])),
    "4d_mask2d_separated": (lambda x: x.reshape(3, 2, 2, 5),
                            lambda L: (slice(None), L.tensor([[True, False], [True, True]]), [1, 2, 3])),
    "4d_mask_int_mask": (lambda x: x.reshape(3, 2, 2, 5),
                         lambda L: (L.tensor([True, False, True]), slice(None), 1,
                                    L.tensor([True, False, False, True, False]))),
    "4d_none_separated": (lambda x: x.reshape(3, 2, 2, 5), lambda L: (None, [1, 2, 0], None, slice(None), [0, 0, 1])),
    "4d_bcast_separated_2d": (lambda x: x.reshape(3, 2, 2, 5), lambda L: (slice(None), [[0], [1]], slice(None), [[1, 2, 3]])),
    "4d_empty_separated": (lambda x: x.reshape(3, 2, 2, 5), lambda L: (slice(None), [], slice(None), [])),
    "zero_size_dim": (lambda x: x[:, :0], lambda L: ([0, 2], slice(None), [1, 2])),
    "stepped_slice_base": (lambda x: x[1:, :, ::2], lambda L: ([1, 0], [3, 3], [2, 0])),
}

CASES = {**{k: (lambda x: x, v) for k, v in KEYS.items()}, **VIEW_KEYS}


def _get(L, view, key):
    """x[key] on a fresh x that requires grad, the result and x.grad after a weighted
    backward (weights vary, so misplaced gradients show)."""
    x = L.tensor(X, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = view(x)[key(L)]
    w = L.arange(r.numel(), dtype=L.float64).reshape(tuple(r.shape)) + 1
    (r * w).sum().backward()
    return r, x.grad


@pytest.mark.parametrize("name", sorted(CASES))
def test_getitem_values_shapes_gradients_as_torch(name, torch):
    view, key = CASES[name]
    r, g = _get(st, view, key)
    tr, tg = _get(torch, view, key)
    assert tuple(r.shape) == tuple(tr.shape)
    assert r.dtype is st.float64
    np.testing.assert_array_equal(r.detach().numpy(), tr.detach().numpy())
    np.testing.assert_array_equal(g.numpy(), tg.numpy())
    assert r.is_contiguous() == tr.is_contiguous()
    assert r._base is None and tr._base is None        # a copy, not a view


# Keys of plain Python items on which numpy and torch agree (checked in the torch
# test below), so that the values are checked without torch too.
NUMPY_KEYS = ["two_lists", "three_lists", "slice_then_two", "two_then_slice", "ellipsis_then_two",
              "none_then_two", "int_between_is_adjacent", "int_first", "four_items_none_slice",
              "separated_by_slice", "separated_by_none", "separated_by_ellipsis", "separated_slice_step",
              "separated_broadcast", "separated_many_positions", "broadcast_col_row", "nested_list_index",
              "negative", "negative_separated", "repeated", "repeated_separated"]


@pytest.mark.parametrize("name", NUMPY_KEYS)
def test_getitem_values_as_numpy(name):
    key = KEYS[name](np)
    x = st.tensor(X)
    r = x[key]
    ref = X[key]
    assert tuple(r.shape) == ref.shape
    np.testing.assert_array_equal(r.numpy(), ref)


def test_numpy_keys_agree_with_torch(torch):
    for name in NUMPY_KEYS:
        key = KEYS[name](np)
        np.testing.assert_array_equal(torch.tensor(X)[key].numpy(), X[key])


def test_repeated_indices_accumulate_in_the_gradient():
    x = st.zeros(3, 4, requires_grad=True)
    x[[0, 0, 2, 0], [1, 1, 3, 1]].sum().backward()
    expect = np.zeros((3, 4))
    expect[0, 1] = 3
    expect[2, 3] = 1
    np.testing.assert_array_equal(x.grad.numpy(), expect)


def test_results_are_copies():
    x = st.tensor(X)
    for key in [([0, 1], [1, 2]), ([0, 1], slice(None), [1, 2]), (st.tensor([True, False, True]), [0, 1]),
                (slice(None), [0, 1], [1, 2])]:
        r = x[key]
        assert r._base is None
        r += 100.0
        np.testing.assert_array_equal(x.numpy(), X)


def test_logits_at_labels():
    """The motivating case: logits[arange(n), labels]."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((64, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, 64)
    x = st.tensor(logits, requires_grad=True)
    picked = x[st.arange(64), st.tensor(labels)]
    np.testing.assert_array_equal(picked.detach().numpy(), logits[np.arange(64), labels])
    picked.sum().backward()
    expect = np.zeros_like(logits)
    expect[np.arange(64), labels] = 1
    np.testing.assert_array_equal(x.grad.numpy(), expect)


# ---- errors: type and message as torch's ----
ERROR_KEYS = {
    "mismatch_2_3": lambda L: ([0, 1], [1, 2, 3]),
    "mismatch_three_shapes": lambda L: ([[0, 1]], [[1], [2], [3]], [0, 1, 2]),
    "mismatch_mask2d_counts_twice": lambda L: (L.tensor([[True, False, True, False], [False, False, True, True],
                                                         [True, True, True, True]]), [1, 2]),
    "mismatch_false_scalar": lambda L: (False, [0, 1]),
    "oob_first": lambda L: ([5, 0], [0, 1]),
    "oob_second": lambda L: ([0, 1], [0, 7]),
    "oob_order_element_first": lambda L: ([0, 9], [7, 0]),
    "oob_negative": lambda L: ([-4, 0], [0, 0]),
    "oob_after_slice_is_ordinal": lambda L: (slice(None), [0], [9]),
    "oob_separated": lambda L: ([0], slice(None), [9]),
    "oob_single_index_after_slice": lambda L: (slice(None), [7]),
    "oob_after_true": lambda L: (True, [7]),
    "float_tensor_first": lambda L: (L.tensor([0., 1.]), [1, 2]),
    "float_tensor_second": lambda L: ([0, 1], L.tensor([0., 1.])),
    "too_many_lists": lambda L: ([0], [0], [0], [0]),
    "too_many_with_int": lambda L: ([0], [0], [0], 0),
    "mask_shape": lambda L: ([0, 1], L.tensor([True, False])),
    "mask_shape_names_the_sliced_tensor": lambda L: (None, 0, slice(1, None), L.tensor([[True, False]] * 3)),
    "int_oob_beside_lists": lambda L: ([0, 1], 4, [1, 2]),
}


def _err(L, key):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            L.tensor(X)[key(L)]
        except Exception as e:   # noqa: BLE001 - compared below
            return type(e), str(e)
    return None


@pytest.mark.parametrize("name", sorted(ERROR_KEYS))
def test_getitem_errors_as_torch(name, torch):
    got, want = _err(st, ERROR_KEYS[name]), _err(torch, ERROR_KEYS[name])
    assert want is not None and got is not None, (got, want)
    assert got[0] is want[0]
    assert got[1] == want[1]


def test_error_messages_without_torch():
    x = st.tensor(X)
    with pytest.raises(IndexError, match=r"^shape mismatch: indexing tensors could not be broadcast "
                                         r"together with shapes \[2\], \[3\]$"):
        x[[0, 1], [1, 2, 3]]
    with pytest.raises(IndexError, match="^index 5 is out of bounds for dimension 0 with size 3$"):
        x[st.tensor([5, 0]), st.tensor([0, 1])]
    with pytest.raises(IndexError, match="^tensors used as indices must be long, int, byte or bool tensors$"):
        x[[0, 1], st.tensor([0.5, 1.0])]
    with pytest.raises(IndexError, match="^too many indices for tensor of dimension 3$"):
        x[[0], [0], [0], [0]]


def test_top_level_list_warns_as_torch():
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        r = st.tensor(X)[[[0, 2], [1, 3]]]
    np.testing.assert_array_equal(r.numpy(), X[[0, 2], [1, 3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert st.tensor(X)[[0, 2]].shape == (2, 4, 5)      # a flat list: one index, no warning


# ---- writes ----
SET_KEYS = {
    "two_lists": lambda L: ([0, 2], [1, 3]),
    "two_tensors": lambda L: (L.tensor([0, 2]), L.tensor([1, 3])),
    "int32": lambda L: (L.tensor([0, 2], dtype=L.int32), L.tensor([1, 3], dtype=L.int32)),
    "slice_then_two": lambda L: (slice(None), [0, 2], [1, 3]),
    "separated": lambda L: ([1, 0], slice(None), [1, 3]),
    "broadcast": lambda L: ([[0], [2]], [1, 2, 3]),
    "three": lambda L: ([0, 1, 2], [3, 2, 1], [4, 0, 2]),
    "mask_and_list": lambda L: (L.tensor([True, False, True]), [1, 2]),
    "negative": lambda L: ([-1, 0], [-4, 2]),
    "true_between": lambda L: ([0, 1], True, [1, 2]),
    "ellipsis_separated": lambda L: ([0, 2], Ellipsis, [4, 1]),
    "mask_alone": lambda L: (L.tensor([True, False, True]),),
    "mask2d_alone": lambda L: (L.tensor([[True, False, True, False], [False, False, True, True],
                                         [True, True, False, False]]),),
}
SET_VALUES = {
    "float": lambda L: 7.5,
    "int": lambda L: 3,
    "one_element": lambda L: L.tensor([9.], dtype=L.float64),
    "last_dim": lambda L: L.tensor([1., 2., 3., 4., 5.], dtype=L.float64),
    "column": lambda L: L.tensor([[1.], [2.]], dtype=L.float64),
    "leading_ones": lambda L: L.tensor([[[1., 2., 3., 4., 5.]]], dtype=L.float64),
    "zero_d": lambda L: L.tensor(-2.5, dtype=L.float64),
    "bad_shape": lambda L: L.tensor([1., 2., 3.], dtype=L.float64),
}


def _set(L, key, value, base_grad, value_grad):
    x = L.tensor(X, requires_grad=base_grad)
    y = x * 2 if base_grad else x.clone()
    v = value(L)
    if value_grad:
        v = L.tensor(np.asarray(v.numpy() if hasattr(v, "numpy") else v, dtype=np.float64), requires_grad=True)
    try:
        y[key(L)] = v
    except Exception as e:   # noqa: BLE001 - compared below
        return ("error", type(e), str(e))
    out = [y.detach().numpy().copy()]
    if y.requires_grad:
        (y * L.tensor(X % 7 + 1)).sum().backward()
        out.append(x.grad.numpy().copy() if base_grad else None)
        out.append(v.grad.numpy().copy() if value_grad else None)
    return out


def _same(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):     # errors
        assert a == b
        return
    assert len(a) == len(b)
    for u, v in zip(a, b):
        if u is None or v is None:
            assert u is None and v is None
        else:
            assert u.shape == v.shape
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("vname", sorted(SET_VALUES))
@pytest.mark.parametrize("kname", sorted(SET_KEYS))
def test_setitem_as_torch(kname, vname, torch):
    key, value = SET_KEYS[kname], SET_VALUES[vname]
    _same(_set(st, key, value, False, False), _set(torch, key, value, False, False))


AUTOGRAD_SETS = [(k, v, g) for k in sorted(SET_KEYS)
                 for v in ["float", "one_element", "last_dim", "column", "leading_ones", "zero_d"]
                 for g in (["base"] if v == "float" else ["base", "value", "both"])]   # a number has no grad


@pytest.mark.parametrize("kname,vname,grads", AUTOGRAD_SETS)
def test_setitem_autograd_as_torch(kname, vname, grads, torch):
    key, value = SET_KEYS[kname], SET_VALUES[vname]
    bg, vg = grads in ("base", "both"), grads in ("value", "both")
    a, b = _set(st, key, value, bg, vg), _set(torch, key, value, bg, vg)
    _same(a, b)
    if not isinstance(a, tuple):
        assert len(a) == 3      # the write was recorded: y requires grad


def test_setitem_converts_value_dtype_and_lists(torch):
    """Where torch's index_put_ raises (a value of another dtype: "Index put requires
    the source and destination dtypes match"; a list: "can't assign a list"),
    symtrace converts the value, as it does for one index; the values are torch's
    for the converted value."""
    key = ([0, 2], slice(None), [1, 3])
    t = torch.tensor(X)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        t[key] = torch.tensor([-1.5], dtype=torch.float32)
    t[key] = torch.tensor([-1.5], dtype=torch.float64)
    y = st.tensor(X)
    y[key] = st.tensor([-1.5], dtype=st.float32)
    np.testing.assert_array_equal(y.numpy(), t.numpy())
    t[key] = torch.tensor([1., 2., 3., 4.], dtype=torch.float64)
    y[key] = [1., 2., 3., 4.]
    np.testing.assert_array_equal(y.numpy(), t.numpy())


def test_setitem_int_tensor_truncates_as_torch(torch):
    for L in (st, torch):
        y = L.zeros(3, 4, dtype=L.int64)
        y[[0, 2], [1, 3]] = 2.9
        y[[1], [0]] = -3.7
        assert y.tolist() == [[0, 2, 0, 0], [-3, 0, 0, 0], [0, 0, 0, 2]]


def test_setitem_leaf_error_as_torch(torch):
    for key in [([0, 2], [1, 3]), (slice(None), [0, 1], [1, 2]), (st.tensor([True, False, True]), [1, 2])]:
        msgs = []
        for L in (st, torch):
            y = L.zeros(3, 4, 5, requires_grad=True)
            k = tuple(L.tensor(i.numpy()) if isinstance(i, st.Tensor) else i for i in key)
            with pytest.raises(RuntimeError) as e:
                y[k] = 7.0
            msgs.append(str(e.value))
            with L.no_grad():
                y[k] = 7.0
            assert y.is_leaf and y.requires_grad
            msgs.append(y.sum().item())
        assert msgs[0] == msgs[2] == "a leaf Variable that requires grad is being used in an in-place operation."
        assert msgs[1] == msgs[3] > 0


def test_setitem_errors_without_torch():
    y = st.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"^shape mismatch: value tensor of shape \[3\] cannot be broadcast "
                                           r"to indexing result of shape \[2\]$"):
        y[[0, 1], [0, 1]] = st.ones(3)
    with pytest.raises(IndexError, match="^index 7 is out of bounds for dimension 1 with size 4$"):
        y[[0, 1], [0, 7]] = 1.0
    with pytest.raises(IndexError, match=r"shapes \[2\], \[3\]"):
        y[[0, 1], [0, 1, 2]] = 1.0
    assert y.abs().sum().item() == 0.0      # nothing was written


def test_setitem_values_as_numpy():
    for key, value in [(([0, 2], [1, 3]), 5.0), (([1, 0], slice(None), [1, 3]), np.arange(4.)),
                       (([[0], [2]], [1, 2, 3]), np.array([[[1.]], [[2.]]])), ((slice(None), [0, 3], [4, 0]), -1.0),
                       (([0, 1], 0, [1, 2]), np.array([7., 8.]))]:
        ref = X.copy()
        ref[key] = value
        y = st.tensor(X)
        y[key] = st.tensor(value) if isinstance(value, np.ndarray) else value
        np.testing.assert_array_equal(y.numpy(), ref)


def test_setitem_bumps_version_and_checks_saved_values():
    x = st.randn(3, 4, requires_grad=True)
    y = x * 2
    s = y * y                     # saves y
    v = y._version
    y[[0, 1], [1, 2]] = 0.0
    assert y._version > v
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()


def test_setitem_repeated_positions_write_one_value(torch):
    """torch leaves repeated positions unspecified; symtrace writes one of the values
    (on the CPU the last, as torch's CPU kernel does), for one index and for several,
    and gives every value its gradient there, as torch does."""
    v = st.tensor([1., 3., 8.])
    one = st.zeros(12)
    one[[1, 1, 6]] = v
    two = st.zeros(3, 4)
    two[[0, 0, 1], [1, 1, 2]] = v
    np.testing.assert_array_equal(two.reshape(-1).numpy(), one.numpy())
    assert two[0, 1].item() == 3.0 and one[6].item() == 8.0
    weights = np.arange(12.).reshape(3, 4)
    grads = []
    for m in (st, torch):
        x = m.zeros(3, 4, requires_grad=True)
        w = m.tensor([1., 3., 8.], requires_grad=True)
        y = x * 1
        y[[0, 0, 1], [1, 1, 2]] = w
        (y * m.tensor(weights, dtype=x.dtype)).sum().backward()
        grads.append((x.grad.detach().numpy().tolist(), w.grad.detach().numpy().tolist()))
    assert grads[0] == grads[1]


# ---- under symtrace.compile ----
def test_compiled_index_tensors_match_eager():
    def f(x, i, j):
        return x[i, j] * 2

    def g(x, i, j):
        return x[i, :, j].sum(-1) + x[:, i[:1], j[:1]].sum()

    cf, cg = st.compile(f), st.compile(g)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = st.tensor(rng.standard_normal((3, 4, 5)))
        i, j = st.tensor(rng.integers(-3, 3, 6)), st.tensor(rng.integers(0, 4, 6))
        np.testing.assert_array_equal(cf(x, i, j).numpy(), f(x, i, j).numpy())
        np.testing.assert_array_equal(cg(x, i, j).numpy(), g(x, i, j).numpy())
    with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 4"):
        cf(x, st.tensor([0]), st.tensor([9]))


def test_compiled_list_keys_and_gradients_match_eager():
    def f(x):
        x4 = x.reshape(3, 2, 2, 5)
        return ((x[[0, 2], [1, 3]] * 2).sum() + x[:, [0, 1], [1, 2]].sum() + (x[[1, 0], :, [1, 3]] ** 2).sum()
                + (x[[[0], [2]], [1, 2, 3]] * x[[[0], [2]], [1, 2, 3]]).sum() + x4[:, [0, 1], :, [1, 2]].exp().sum()
                + x4[:, [[0], [1], [1]], :, [1, 2, 0, 0, 4]].sum())

    cf = st.compile(f)
    rng = np.random.default_rng(2)
    for _ in range(2):
        data = rng.standard_normal((3, 4, 5))
        a, b = st.tensor(data, requires_grad=True), st.tensor(data, requires_grad=True)
        ra, rb = cf(a), f(b)
        np.testing.assert_allclose(ra.detach().numpy(), rb.detach().numpy(), rtol=1e-12)
        ra.backward()
        rb.backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


def test_compiled_setitem_matches_eager():
    def f(x, i, j):
        y = x + 1
        y[i, j] = 5.0
        y[[0, 1], [2, 3]] = y[[1, 0], [3, 2]]
        return y * 2

    cf = st.compile(f)
    x = st.tensor(X[0])
    i, j = st.tensor([0, 2]), st.tensor([1, 3])
    for _ in range(2):
        np.testing.assert_array_equal(cf(x, i, j).numpy(), f(x, i, j).numpy())


# ---- int index tensors are traced: one graph, no break ----
def _traced_cases(rng):
    def f(x, i, j):
        return x[i, j] * 2

    def g(x, i, j):
        return x[i, :, j].sum(-1) + x[:, i[:1], j[:1]].sum()

    def h(logits, labels):
        n = logits.shape[0]
        return -logits.log_softmax(-1)[st.arange(n), labels].mean()

    def w(x, i, v):
        y = x * 1
        y[i, 1:3] = v
        y[:, i] += 1
        return y

    def p(x, i):
        return st.index_put(x * 1, (i,), st.ones(i.shape[0], dtype=x.dtype)).sum(0)

    def q(x, i):
        y = x * 2
        y.index_put_((i, st.tensor([0, 2, 1])), st.ones(3, dtype=x.dtype), accumulate=True)
        y.put_(i * 3, x[0])
        return y

    x3 = lambda: st.tensor(rng.standard_normal((3, 4, 5)))
    return [
        (f, lambda: (x3(), st.tensor(rng.integers(-3, 3, 6)), st.tensor(rng.integers(0, 4, 6)))),
        (g, lambda: (x3(), st.tensor(rng.integers(-3, 3, 6)), st.tensor(rng.integers(0, 4, 6)))),
        (h, lambda: (st.tensor(rng.standard_normal((8, 10))), st.tensor(rng.integers(0, 10, 8)))),
        (w, lambda: (st.tensor(rng.standard_normal((5, 4))), st.tensor(rng.permutation(4)[:2]),
                     st.tensor(rng.standard_normal((2, 2))))),
        (p, lambda: (st.tensor(rng.standard_normal((6, 3))), st.tensor(rng.permutation(6)[:3]))),
        (q, lambda: (st.tensor(rng.standard_normal((6, 3))), st.tensor(rng.permutation(6)[:3]))),
    ]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_compiled_int_index_tensors_are_traced(backend):
    """Reads and writes through int index tensors inside a compiled function: one graph
    whose positions are ops on the indices (the indices change every call, the graph
    stays), eager's values and gradients."""
    rng = np.random.default_rng(5)
    for fn, make in _traced_cases(rng):
        cf = st.compile(fn, backend=backend)
        for _ in range(3):
            args = make()
            a = [t.detach().clone().requires_grad_() if t.is_floating_point() else t for t in args]
            b = [t.detach().clone().requires_grad_() if t.is_floating_point() else t for t in args]
            ra, rb = cf(*a), fn(*b)
            np.testing.assert_allclose(ra.detach().numpy(), rb.detach().numpy(), rtol=1e-6)
            ra.sum().backward()
            rb.sum().backward()
            for ta, tb in zip(a, b):
                if ta.is_floating_point():
                    np.testing.assert_allclose(ta.grad.numpy(), tb.grad.numpy(), rtol=1e-6)
        # index_put: a library call whose positions are a constant it made from shapes
        ex = st.explain(fn, *make())
        assert (ex.graph_count, ex.graph_break_count) == (1, 0), (fn.__name__, ex.break_reasons)


def test_compiled_index_errors_come_from_the_graph():
    def f(x, i, j):
        return x[i, j] * 2

    cf = st.compile(f)
    x = st.tensor(X)
    cf(x, st.tensor([0]), st.tensor([1]))
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 1 with size 4"):
        cf(x, st.tensor([0]), st.tensor([9]))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        cf(x, st.tensor([5]), st.tensor([1]))
    # a negative value out of range is named after wrapping (torch: the value given)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
        cf(x, st.tensor([-4]), st.tensor([1]))
    assert cf(x, st.tensor([-1]), st.tensor([-1])).tolist() == (f(x, st.tensor([-1]), st.tensor([-1]))).tolist()


def test_masks_and_0d_indices_still_break_the_graph():
    """A bool mask's count sets the result's shape and a 0-d tensor is an int: their values
    are read, so the graph breaks there (and the result is eager's)."""
    def f(x, m):
        return x[m] * 2

    def g(x, k):
        return x[k] + 1

    x = st.tensor(X)
    for fn, arg in ((f, st.tensor([True, False, True])), (g, st.tensor(1))):
        ex = st.explain(fn, x, arg)
        assert ex.graph_break_count == 1
        assert "reads their values" in ex.break_reasons[0].reason
        np.testing.assert_array_equal(st.compile(fn)(x, arg).numpy(), fn(x, arg).numpy())


# fills through one mask (a number or a one-element value) are a where(): traced, no break
MASK_FILLS = [
    "y = x * 2; y[y > 1] = 0.5; out = y",
    "x[x < 0] = 0; out = x * 1",                       # the caller's tensor, written in place
    "y = x + 1; y[:, m[0]] = -3.0; out = y",
    "y = x + 1; y[1, m[0]] = 7; out = y",
    "y = x * 1; y[m] = w[:1] * 2; out = y",            # a one-element tensor that requires grad
    "y = x * 1; y[m] = w.sum(); out = y",
    "y = x * 1; y[m[:, 0], ...] = 1; out = y",
    "y = (x * 10).long(); y[y > 3] = 2.7; out = y",    # cast into the target's dtype
    "y = x > 0; y[m] = False; out = y",
]


@pytest.mark.parametrize("code", MASK_FILLS)
def test_compiled_mask_fills_are_traced(code):
    torch = pytest.importorskip("torch")
    src = "def fn(x, m, w):\n" + "\n".join("    " + s.strip() for s in code.split(";")) + "\n    return out\n"
    ns = {}
    exec(src, ns)
    fn = ns["fn"]
    rng = np.random.default_rng(len(code))
    st.reset()
    cf = st.compile(fn)
    for _ in range(3):                         # new mask values each call: the same graph
        a, mm = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)) > 0
        wv = rng.standard_normal(2).astype(np.float32)
        res = []
        for lib, f in ((torch, fn), (st, cf)):
            x0 = lib.tensor(a, requires_grad=True)
            w = lib.tensor(wv, requires_grad=True)
            x = x0 * 1
            out = f(x, lib.tensor(mm), w)
            if out.is_floating_point():
                (out * out).sum().backward()
            res.append([out.detach().numpy(), x.detach().numpy()] +
                       ([x0.grad.numpy(), w.grad.numpy() if w.grad is not None else np.zeros(2)]
                        if out.is_floating_point() else []))
        for p, q in zip(*res):
            np.testing.assert_allclose(q, p, rtol=1e-6)
    ex = st.explain(fn, st.tensor(a) * 1, st.tensor(mm), st.tensor(wv))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
