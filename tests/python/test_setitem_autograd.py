"""t[key] = value where a write into a view cannot carry autograd or the key has
an index tensor: symtrace._tensor._setitem_functional, called from the C
__setitem__ (frontend/indexing.c). Values and gradients against torch
(CopySlices there), torch's leaf error, no_grad writes, index tensors, and the
same under symtrace.compile."""
import numpy as np
import pytest

import symtrace as st

torch = pytest.importorskip("torch")

X = np.arange(12.).reshape(3, 4)
G = np.arange(12.).reshape(3, 4) + 1

CASES = {
    "row_scalar": lambda L, y, w: y.__setitem__(0, 0.),
    "column_from_value_with_grad": lambda L, y, w: y.__setitem__((slice(None), 1), w[:3]),
    "row_from_value_with_grad": lambda L, y, w: y.__setitem__(1, w),
    "mask": lambda L, y, w: y.__setitem__(y > 10, -1.),
    "index_tensor": lambda L, y, w: y.__setitem__(L.tensor([0, 2]), w),
    "index_list_column": lambda L, y, w: y.__setitem__((slice(None), [0, 3]), 7.),
    "step_slice": lambda L, y, w: y.__setitem__((slice(None), slice(None, None, 2)), w[:2] * 3),
    "leading_one": lambda L, y, w: y.__setitem__(2, w.reshape(1, 4)),
    "ellipsis": lambda L, y, w: y.__setitem__((Ellipsis, 0), 5.),
    "twice": lambda L, y, w: (y.__setitem__(0, w), y.__setitem__((slice(None), 0), 1.)),
}


def run(lib, setup):
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor([10., 20., 30., 40.], dtype=lib.float64, requires_grad=True)
    y = x * 2
    setup(lib, y, w)
    (y * lib.tensor(G)).sum().backward()
    return y.detach().numpy().copy(), x.grad.numpy().copy(), None if w.grad is None else w.grad.numpy().copy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_setitem_values_and_gradients_as_torch(name):
    a, b = run(st, CASES[name]), run(torch, CASES[name])
    for u, v in zip(a, b):
        if u is None or v is None:
            assert u is None and v is None
        else:
            np.testing.assert_allclose(u, v)


def test_value_with_grad_into_a_tensor_without():
    for lib in (st, torch):
        w = lib.tensor([1., 2., 3.], requires_grad=True)
        y = lib.zeros(2, 3)
        y[1] = w
        assert y.requires_grad and y.grad_fn is not None
        (y * 3).sum().backward()
        assert w.grad.tolist() == [3.0, 3.0, 3.0]


def test_leaf_that_requires_grad_raises_as_torch_and_writes_under_no_grad():
    x = st.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0] = 1.0
    with st.no_grad():
        x[0] = 1.0
    assert x[0].item() == 1.0 and x.is_leaf and x.requires_grad


def test_index_tensor_assignment_without_grad():
    z = st.zeros(5)
    z[st.tensor([0, 2])] = 1.0
    assert z.tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]
    z[[4]] = st.tensor([9.0])
    assert z.tolist() == [1.0, 0.0, 1.0, 0.0, 9.0]
    m = st.zeros(3, 2, dtype=st.int64)
    m[st.tensor([2, 0])] = st.tensor([[1, 2], [3, 4]])
    assert m.tolist() == [[3, 4], [0, 0], [1, 2]]


def test_errors_name_the_shapes():
    y = st.randn(3, 4, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match=r"shape mismatch.*\[3\].*\[4\]"):
        y[0] = st.ones(3)
    with pytest.raises(IndexError):
        y[5] = 1.0


def test_version_bumps_and_saved_value_check():
    x = st.randn(3, requires_grad=True)
    y = x * 2
    z = y.exp()           # saves its output; y itself saved by nothing
    v = y._version
    y[0] = 0.0
    assert y._version > v
    z.sum().backward()    # exp saved its own output, not y: fine
    y2 = x * 2
    s = y2 * y2           # saves y2
    y2[1] = 3.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_compiled_matches_eager(backend):
    if backend == "llvm" and not st._C._fe_backend_available("llvm"):
        pytest.skip("no llvm backend")

    def f(a, w):
        y = a * 2
        y[0] = 0.0
        y[:, 1] = w
        return (y * y).sum()

    cf = st.compile(f, backend=backend)
    for _ in range(2):
        a = st.randn(3, 4, requires_grad=True)
        w = st.randn(3, requires_grad=True)
        a2 = a.detach().clone().requires_grad_(True)
        w2 = w.detach().clone().requires_grad_(True)
        cf(a, w).backward()
        f(a2, w2).backward()
        np.testing.assert_allclose(a.grad.numpy(), a2.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-6)
