"""symtrace: a deep-learning runtime in C with a PyTorch-style API.

    import symtrace as st
    x = st.randn(4, 8); y = (x @ x.T).softmax(-1)

Eager ops run as one-node graphs through symtrace's own kernel path
(StatementIR -> fusion -> kernel IR -> backend); see DESIGN.md.
"""
import sys as _sys

from . import _C
from ._dtype import (float32, float64, float16, bfloat16, uint8, int8, int16, int32, int64,  # noqa: F401
                     bool_ as bool, float, double, half, short, int, long, dtype)
from ._tensor import Tensor, device  # noqa: F401
from ._layout import layout, strided, sparse_coo  # noqa: F401
from ._memory_format import (memory_format, contiguous_format, channels_last,  # noqa: F401
                             channels_last_3d, preserve_format)
from ._C import Size  # noqa: F401  (Tensor.shape / size(), as torch.Size)
from ._tensor_str import set_printoptions  # noqa: F401  (get/printoptions: in _tensor_str, as torch)
from ._ops import *  # noqa: F401,F403
from ._ops import (abs, round, max, min, sum, pow, result_type,  # noqa: F401  (shadow builtins on purpose)
                   manual_seed, initial_seed)
from . import random  # noqa: F401,E402  (symtrace.random, as torch.random)
from ._generator import Generator, default_generator  # noqa: F401,E402
from . import special  # noqa: F401,E402  (symtrace.special, as torch.special)
from .random import get_rng_state, set_rng_state, seed  # noqa: F401
from . import memory  # noqa: F401
from . import autograd  # noqa: F401
from .autograd import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled,  # noqa: F401
                       inference_mode, is_inference_mode_enabled)
from .autograd.anomaly_mode import (is_anomaly_enabled, is_anomaly_check_nan_enabled,  # noqa: F401,E402
                                    set_anomaly_enabled)
from . import linalg  # noqa: F401,E402  (symtrace.linalg, as torch.linalg)
from ._linalg_top import (det, logdet, slogdet, inverse, cholesky, cholesky_solve,  # noqa: F401,E402
                          cholesky_inverse, pinverse, matrix_power, matrix_exp, svd, qr, lu,
                          lu_unpack, triangular_solve, cross, cdist)
from . import nn  # noqa: F401
from .nn._conv import (conv1d, conv2d, conv_transpose1d, conv_transpose2d, avg_pool1d,  # noqa: F401,E402
                       pixel_shuffle, pixel_unshuffle, channel_shuffle, native_channel_shuffle)
from .nn._conv import (_torch_max_pool1d as max_pool1d, _torch_max_pool2d as max_pool2d,  # noqa: F401,E402
                       _torch_max_pool3d as max_pool3d,
                       _torch_max_pool1d_with_indices as max_pool1d_with_indices,
                       _torch_adaptive_max_pool1d as adaptive_max_pool1d)
from .nn._adaptive_pool import adaptive_avg_pool1d  # noqa: F401,E402
from .nn._batch_norm import (_torch_batch_norm as batch_norm,  # noqa: F401,E402
                             _torch_instance_norm as instance_norm)
from .nn._vision import (_torch_grid_sampler as grid_sampler,  # noqa: F401,E402
                         _affine_grid_generator as affine_grid_generator)
from . import optim  # noqa: F401
from . import func  # noqa: F401,E402  (symtrace.func, as torch.func)
from . import config  # noqa: F401
from . import cuda  # noqa: F401
from . import backends  # noqa: F401,E402  (symtrace.backends, as torch.backends)
from . import jit  # noqa: F401,E402  (symtrace.jit: torch.jit's names; no TorchScript)
from . import distributed  # noqa: F401,E402  (symtrace.distributed: one process, as world_size 1)
from . import hub  # noqa: F401,E402  (symtrace.hub: the cache directory; no network access)
from . import profiler  # noqa: F401
from . import amp  # noqa: F401
from . import multiprocessing  # noqa: F401
multiprocessing.init_reductions()
from .amp import autocast, is_autocast_enabled, get_autocast_dtype  # noqa: F401
from . import _cuda_amp  # noqa: E402  (symtrace.cuda.amp: torch.cuda.amp's deprecated names)
cuda.amp = _cuda_amp
_sys.modules[__name__ + ".cuda.amp"] = _cuda_amp
from ._compile import compile, explain, reset  # noqa: F401,E402  (shadows builtin compile on purpose)
from . import _dynamo  # noqa: F401,E402  (symtrace._dynamo: torch._dynamo's names scripts use)
from ._settings import (get_num_threads, set_num_threads, get_num_interop_threads,  # noqa: F401,E402
                        set_num_interop_threads, set_default_device, get_default_device,
                        use_deterministic_algorithms, are_deterministic_algorithms_enabled,
                        is_deterministic_algorithms_warn_only_enabled, set_deterministic_debug_mode,
                        get_deterministic_debug_mode, set_float32_matmul_precision,
                        get_float32_matmul_precision, typename, is_storage)
from ._nn_top import (dropout, dropout_, feature_dropout, feature_dropout_, alpha_dropout,  # noqa: F401,E402
                      alpha_dropout_, feature_alpha_dropout, feature_alpha_dropout_, celu, celu_, selu,
                      selu_, rrelu, rrelu_, threshold, threshold_, prelu, hardshrink, constant_pad_nd,
                      conv3d, conv_transpose3d, convolution, cosine_similarity, pairwise_distance, pdist,
                      bilinear, embedding, embedding_bag, group_norm, layer_norm, rms_norm,
                      binary_cross_entropy_with_logits, cosine_embedding_loss, hinge_embedding_loss,
                      kl_div, margin_ranking_loss, poisson_nll_loss, triplet_margin_loss,
                      norm_except_dim, frobenius_norm, nuclear_norm, matrix_rank)
from ._foreach import *  # noqa: F401,F403,E402  (torch._foreach_*: list-wise ops)
from ._torch_more import (hann_window, hamming_window, blackman_window, bartlett_window,  # noqa: F401,E402
                          kaiser_window, asarray, frombuffer, gradient, range, ldexp_, erfc_, i0_, gcd_,
                          lcm_, detach_, unsafe_split, unsafe_chunk, unsafe_split_with_sizes,
                          nonzero_static, vmap, cond, set_warn_always, is_warn_always_enabled,
                          set_flush_denormal, set_autocast_enabled, set_autocast_dtype,
                          is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype,
                          set_autocast_cpu_dtype, get_autocast_gpu_dtype, set_autocast_gpu_dtype,
                          is_autocast_cache_enabled, set_autocast_cache_enabled, clear_autocast_cache,
                          sym_max, sym_min, sym_int, sym_float, sym_not, sym_ite, sym_sqrt, sym_sum)

from math import e, inf, nan, pi  # noqa: F401,E402  (torch.e / inf / nan / pi: Python floats)

__version__ = "0.1.0"

newaxis = None   # torch.newaxis


def tensor(data, dtype=None, device=None, requires_grad=False):
    """tensor(data, dtype=None): a new tensor holding a copy of data (lists, numbers,
    buffer-protocol objects such as numpy arrays, or tensors)."""
    t = _C.tensor(data, dtype)
    dev = _ops._dev(device)      # no device: the default device (set_default_device)
    if dev is not None:
        t = _ops.to_device(t, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None):
    """as_tensor(data, dtype=None, device=None): data itself when it is a tensor of
    that dtype and device (history kept), else converted as tensor() would, and for a
    tensor of another dtype or device, data.to(...) (history kept, as torch's)."""
    if isinstance(data, _C.TensorBase):
        if (dtype is None or data.dtype == dtype) and (device is None or str(data.device) == str(device)):
            return data
        return data.to(device=device, dtype=dtype) if device is not None else data.to(dtype)
    return tensor(data, dtype=dtype, device=device)


def from_dlpack(ext_tensor):
    """from_dlpack(obj): a tensor sharing obj's memory (DLPack protocol)."""
    return _C.from_dlpack(ext_tensor)


def is_tensor(obj):
    return isinstance(obj, _C.TensorBase)


from . import _ops  # noqa: E402
from . import serialization  # noqa: E402,F401
from .serialization import save, load  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from . import distributions  # noqa: E402,F401  (symtrace.distributions, as torch.distributions)
from . import testing  # noqa: E402,F401  (symtrace.testing, as torch.testing)
from . import sparse  # noqa: E402,F401  (symtrace.sparse: COO tensors, as torch.sparse)
from .sparse import sparse_coo_tensor, spmm  # noqa: E402,F401
