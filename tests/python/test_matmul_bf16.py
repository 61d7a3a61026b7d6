"""bfloat16 products (autocast's) on the CPU backends: the operands are
packed to float32 (llvm_backend/matmul.c: row-major, or a column-major
operand kept transposed for BLAS), products accumulate in float32 and round
once. Every layout of both operands, single and batched, and the K-split
path, against float64 of the same bfloat16 values."""
import numpy as np
import pytest

import symtrace as st

BACKENDS = [b for b in ("llvm", "interp") if st._C._fe_backend_available(b)]


def _bf(x):
    """numpy float32 -> a bfloat16 tensor and its exact float64 values"""
    t = st.tensor(x).to(st.bfloat16)
    return t, t.float().numpy().astype(np.float64)


def _layout(t, kind):
    # the same logical matrix, stored row-major, column-major or strided
    if kind == "row":
        return t
    if kind == "col":
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    return t.unsqueeze(-1).expand(*t.shape, 2).contiguous()[..., 0]   # last dim's stride 2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("la", ["row", "col", "strided"])
@pytest.mark.parametrize("lb", ["row", "col", "strided"])
@pytest.mark.parametrize("shape", [(1, 37, 50, 29), (3, 16, 24, 40), (1, 16, 4096, 12)],
                         ids=["single", "batched", "ksplit"])
def test_bf16_product_layouts(backend, la, lb, shape):
    nb, m, k, n = shape
    rng = np.random.default_rng(m * k + n)
    a, ea = _bf(rng.standard_normal((nb, m, k)).astype(np.float32))
    b, eb = _bf(rng.standard_normal((nb, k, n)).astype(np.float32))
    if nb == 1:
        a, b, ea, eb = a[0], b[0], ea[0], eb[0]
    f = st.compile(lambda x, y: x @ y, backend=backend)
    x, y = _layout(a, la), _layout(b, lb)
    f(x, y)
    out = f(x, y)
    assert out.dtype is st.bfloat16
    exact = ea @ eb
    ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(exact), 1e-30))) - 7)
    # float32 accumulation, one rounding: within a bfloat16 step (+ float32 error)
    assert np.all(np.abs(out.float().numpy() - exact) <= ulp + 1e-5 * np.sqrt(k) * np.abs(exact).max())
