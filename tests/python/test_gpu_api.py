"""PyTorch API habits on the GPU: copy_ across devices, load_state_dict of
CPU weights into a GPU model (and the reverse), symtrace.cuda.memory_*.
Skipped without a GPU."""
import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn

pytestmark = pytest.mark.skipif(not st.cuda.is_available(), reason="no CUDA GPU")


def test_copy_across_devices():
    a = st.randn(5, 7)
    g = st.empty(5, 7, device="cuda")
    g.copy_(a)
    np.testing.assert_array_equal(g.cpu().numpy(), a.numpy())
    b = st.zeros(5, 7)
    b.copy_(g * 2)
    np.testing.assert_array_equal(b.numpy(), a.numpy() * 2)
    g.copy_(st.tensor(3.0))                       # broadcast from a CPU scalar tensor
    assert g.cpu().numpy().tolist() == [[3.0] * 7] * 5


def test_state_dict_between_devices():
    st.manual_seed(0)
    cpu_model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    gpu_model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2)).cuda()
    gpu_model.load_state_dict(cpu_model.state_dict())
    assert all(p.is_cuda for p in gpu_model.parameters())
    x = st.randn(3, 4)
    np.testing.assert_allclose(gpu_model(x.cuda()).detach().cpu().numpy(), cpu_model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    back = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    back.load_state_dict(gpu_model.state_dict())
    for p, q in zip(back.parameters(), cpu_model.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_cuda_memory_functions():
    st.cuda.synchronize()
    base = st.cuda.memory_allocated()
    x = st.empty(1 << 18, device="cuda")
    assert st.cuda.memory_allocated() >= base + 4 * (1 << 18)
    assert st.cuda.max_memory_allocated() >= st.cuda.memory_allocated()
    assert st.cuda.memory_reserved() >= st.cuda.memory_allocated()
    del x
    st.cuda.empty_cache()
    st.cuda.reset_peak_memory_stats()
    assert st.cuda.max_memory_allocated() == st.cuda.memory_allocated()


def test_cpu_scalar_requiring_grad_is_not_silently_dropped():
    g = st.ones(3, device="cuda", requires_grad=True)
    s = st.tensor(2.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="gradient would be lost"):
        g * s
    with st.no_grad():
        assert (g * s).cpu().tolist() == [2.0, 2.0, 2.0]
    r = (g * s.cuda()).sum()          # moved explicitly: both get gradients
    r.backward()
    assert s.grad.item() == 3.0 and g.grad.cpu().tolist() == [2.0, 2.0, 2.0]
