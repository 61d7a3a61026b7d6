"""The device API on the CPU (runs everywhere; tests/python/test_gpu.py covers
the GPU): device= on factories, Tensor.to/cpu, Module.to, *_like and new_*
keep the device, and without a GPU every way of asking for one raises
PyTorch's kind of error that names CUDA."""
import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn

no_gpu = pytest.mark.skipif(st.cuda.is_available(), reason="a CUDA GPU is present")


def test_factories_take_cpu_device():
    for dev in ("cpu", st.device("cpu"), None):
        for t in (st.zeros(2, 3, device=dev), st.ones(4, device=dev), st.full((2,), 3.0, device=dev),
                  st.arange(5, device=dev), st.rand(3, device=dev), st.randn(3, device=dev),
                  st.randint(0, 4, (3,), device=dev), st.empty(2, device=dev),
                  st.tensor([1.0, 2.0], device=dev)):
            assert t.device == "cpu" and not t.is_cuda
    assert st.arange(5, device="cpu").tolist() == [0, 1, 2, 3, 4]
    assert st.full((2,), 3.0, device="cpu").tolist() == [3.0, 3.0]


def test_to_cpu_is_identity():
    x = st.randn(3, 4)
    assert x.to("cpu") is x
    assert x.cpu() is x
    assert x.to(st.device("cpu")) is x
    y = x.to("cpu", st.float64)
    assert y.dtype == st.float64 and y.device == "cpu"
    np.testing.assert_allclose(y.numpy(), x.numpy().astype(np.float64))


def test_like_and_new_keep_device_and_dtype():
    x = st.randn(2, 3, dtype=st.float64)
    for t in (st.zeros_like(x), st.ones_like(x), st.empty_like(x), st.full_like(x, 2.0),
              st.rand_like(x), st.randn_like(x), x.new_zeros(4), x.new_ones(4),
              x.new_full((4,), 1.0), x.new_empty(4)):
        assert t.device == "cpu" and t.dtype == st.float64


def test_module_to_device_and_tensor():
    m = nn.Linear(3, 2)
    w = m.weight
    assert m.to("cpu") is m and m.weight is w        # nothing to move
    assert m.cpu() is m and m.weight is w
    m.to(st.zeros(1, dtype=st.float64))               # to(tensor): its dtype and device
    assert m.weight.dtype == st.float64 and m.weight.device == "cpu"
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    with pytest.raises(TypeError, match="floating point"):
        m.to(st.int64)


def test_fill_and_adam_state_follow_the_parameter():
    p = nn.Parameter(st.zeros(3))
    with st.no_grad():
        p.fill_(1.5)
    assert p.tolist() == [1.5, 1.5, 1.5]
    opt = st.optim.Adam([p], lr=0.1, fused=False)
    p.grad = st.ones(3)
    opt.step()
    assert opt.state[p]["exp_avg"].device == p.device


@no_gpu
@pytest.mark.parametrize("how", ["factory", "int", "to", "cuda", "module", "tensor"])
def test_asking_for_a_gpu_without_one_raises(how):
    x = st.ones(2)
    calls = {
        "factory": lambda: st.zeros(2, device="cuda"),
        "int": lambda: st.ones(2, device=0),
        "to": lambda: x.to("cuda"),
        "cuda": lambda: x.cuda(),
        "module": lambda: nn.Linear(2, 2).to("cuda"),
        "tensor": lambda: st.tensor([1.0], device="cuda:0"),
    }
    with pytest.raises(RuntimeError, match="CUDA"):
        calls[how]()
    assert not x.is_cuda


@no_gpu
def test_cuda_memory_functions_without_gpu():
    with pytest.raises(RuntimeError, match="CUDA"):
        st.cuda.memory_allocated()
    with pytest.raises(RuntimeError, match="CUDA"):
        st.cuda.max_memory_allocated()
    st.cuda.empty_cache()          # nothing to return: no error, as torch


def test_copy_on_cpu_keeps_working():
    a = st.randn(3, 4)
    b = st.zeros(3, 4, dtype=st.float64)
    b.copy_(a)
    np.testing.assert_allclose(b.numpy(), a.numpy().astype(np.float64))
    b.copy_(st.tensor(2.0))
    assert b.numpy().tolist() == [[2.0] * 4] * 3


@no_gpu
def test_compile_for_nvrtc_without_gpu_says_so():
    with pytest.raises(ValueError, match="nvrtc"):
        st.compile(lambda a: a + 1, backend="nvrtc")
