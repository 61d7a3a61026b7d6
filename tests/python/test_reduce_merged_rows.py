"""Reductions whose row (the trailing reduced dims) is merged at launch
(llvm_backend/jit.c merge_row_dims: adjacent reduced dims every buffer walks
as one run as one longer row). Values against numpy / torch over layouts that
merge (contiguous), merge partly (a sliced or permuted input, a broadcast
operand the kernel holds still) or not at all, eager and compiled (3 calls),
with per-row results and per-point epilogues. The C test test_llvm.c's
test_merged_dims checks that the merge happens."""
import numpy as np
import pytest

import symtrace as st


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


LAYOUTS = {
    "contiguous": lambda a: a,
    "sliced": lambda a: a[:, :, 1:, :-1],
    "permuted": lambda a: a.transpose(0, 1, 3, 2),
    "channels_last": lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
}


def _st_layout(a, name):
    t = st.tensor(np.ascontiguousarray(a))
    if name == "sliced":
        return t[:, :, 1:, :-1]
    if name == "permuted":
        return t.permute(0, 1, 3, 2)
    if name == "channels_last":
        return st.tensor(np.ascontiguousarray(a.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    return t


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_row_reductions_match_numpy(layout, mode):
    a = _x((4, 5, 9, 11))
    ref = LAYOUTS[layout](a).astype(np.float64)

    def fn(x):
        return (x.sum((1, 2, 3)), x.mean((0, 2, 3)), x.amax((2, 3)), x.var((0, 2, 3)),
                x - x.mean((2, 3), keepdim=True), x.reshape(x.shape[0], -1).argmax(1))

    f = st.compile(fn) if mode == "compiled" else fn
    for _ in range(3):
        outs = f(_st_layout(a, layout))
        want = (ref.sum((1, 2, 3)), ref.mean((0, 2, 3)), ref.max((2, 3)), ref.var((0, 2, 3), ddof=1),
                ref - ref.mean((2, 3), keepdims=True), ref.reshape(ref.shape[0], -1).argmax(1))
        for o, w in zip(outs, want):
            np.testing.assert_allclose(o.numpy(), w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_row_sum_with_a_held_operand(mode):
    # a per-channel operand broadcast over the row: the kernel holds it still there
    a, w = _x((3, 4, 6, 8)), _x((1, 4, 1, 1), 1)

    def fn(x, w):
        return (x * w).sum((0, 2, 3)), ((x - w) ** 2).sum((2, 3))

    f = st.compile(fn) if mode == "compiled" else fn
    for _ in range(3):
        s1, s2 = f(st.tensor(a), st.tensor(w))
        np.testing.assert_allclose(s1.numpy(), (a * w).sum((0, 2, 3)), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(s2.numpy(), ((a - w) ** 2).sum((2, 3)), rtol=1e-5, atol=1e-4)


def test_batch_norm_step_matches_torch():
    torch = pytest.importorskip("torch")
    xv = _x((8, 6, 12, 10), 3)
    bn, tbn = st.nn.BatchNorm2d(6), torch.nn.BatchNorm2d(6)
    f = st.compile(lambda x: (st.nn.functional.relu(bn(x)) ** 2).sum())
    for _ in range(3):
        x, tx = st.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
        f(x).backward()
        (torch.relu(tbn(tx)) ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(bn.weight.grad.numpy(), tbn.weight.grad.numpy(), rtol=1e-4)
        np.testing.assert_allclose(bn.running_var.numpy(), tbn.running_var.numpy(), rtol=1e-5)
        bn.weight.grad = bn.bias.grad = tbn.weight.grad = tbn.bias.grad = None
