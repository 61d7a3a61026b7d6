"""DLPack between symtrace and PyTorch on the GPU: both directions share
memory and see each other's finished work (symtrace synchronizes its stream
on export; on import it hands PyTorch its stream, the DLPack protocol).
Skipped without a GPU or without a CUDA build of PyTorch."""
import numpy as np
import pytest

import symtrace as st

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not (st.cuda.is_available() and torch.cuda.is_available()),
                                reason="needs a GPU and PyTorch with CUDA")


def test_symtrace_to_torch_sees_finished_kernels():
    x = st.randn(1000, 300, device="cuda")
    y = st.tanh(x * 3.0) + 1.0            # queued on symtrace's stream
    t = torch.from_dlpack(y)
    assert t.is_cuda and tuple(t.shape) == (1000, 300)
    np.testing.assert_allclose(t.cpu().numpy(), np.tanh(x.cpu().numpy() * 3.0) + 1.0,
                               rtol=1e-6, atol=2e-7)  # 1 + tanh: absolute rounding near 0
    t.mul_(0)                             # shared memory
    torch.cuda.synchronize()
    assert float(y.abs().sum()) == 0.0


def test_torch_to_symtrace():
    t = torch.randn(64, 33, device="cuda")
    t2 = t * 2                            # queued on torch's stream
    s = st.from_dlpack(t2)
    assert s.is_cuda and tuple(s.shape) == (64, 33)
    np.testing.assert_allclose((s + 1).cpu().numpy(), (t2 + 1).cpu().numpy(), rtol=1e-6)
    # a transposed (non-contiguous) view keeps its strides
    s2 = st.from_dlpack(t.t())
    np.testing.assert_allclose(s2.cpu().numpy(), t.t().cpu().numpy())
