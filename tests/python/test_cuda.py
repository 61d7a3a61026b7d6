"""symtrace.cuda without a GPU (CI has none): is_available() is False,
asking for "cuda" raises a RuntimeError that names CUDA, device mismatches
are clear. With a GPU the first tests are skipped (GPU tests are marked)."""
import pytest

import symtrace as st

no_gpu = pytest.mark.skipif(st.cuda.is_available(), reason="a CUDA GPU is present")


@no_gpu
def test_not_available():
    assert st.cuda.is_available() is False
    assert st.cuda.device_count() == 0


@no_gpu
def test_synchronize_raises():
    with pytest.raises(RuntimeError, match="CUDA"):
        st.cuda.synchronize()
    with pytest.raises(RuntimeError, match="CUDA"):
        st.cuda.get_device_name()


@no_gpu
@pytest.mark.parametrize("dev", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_tensor_raises(dev):
    with pytest.raises(RuntimeError, match="CUDA"):
        st.zeros(2, 3, device=dev)
    with pytest.raises(RuntimeError, match="CUDA"):
        st.empty(4, device=st.device(dev))
    with pytest.raises(RuntimeError, match="CUDA"):
        st.tensor([1.0, 2.0], device=dev)


@no_gpu
def test_to_cuda_raises():
    x = st.ones(3)
    with pytest.raises(RuntimeError, match="CUDA"):
        x.cuda()
    assert not x.is_cuda


def test_bad_device_string():
    with pytest.raises(RuntimeError, match="cpu, cuda"):
        st.zeros(2, device="tpu")


def test_nvrtc_status():
    s = st.cuda.nvrtc_status()
    assert isinstance(s, tuple) and isinstance(s[0], bool)
    if not s[0]:
        assert "NVRTC" in s[1]
    else:
        assert s[2].endswith(tuple([".so", ".so.12", ".so.13"])) or "libnvrtc" in s[2]


def test_nvrtc_library_dirs():
    for d in st.cuda.nvrtc_library_dirs():
        assert "nvidia" in d
