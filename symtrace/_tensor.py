"""symtrace.Tensor: the Python face of _C.TensorBase. Metadata, views,
operators and conversions are in C; this class adds PyTorch's method
spellings over the functional ops, in-place variants and repr."""
import builtins
import math as _math
import numbers as _numbers

from . import _C
from ._symint import dyn_inline as _dyn_inline
from . import _ops
from . import _generator
from . import _memory_format as _mf
from . import _layout
from . import _mem_overlap
from ._dtype import (float32, float64, float16, bfloat16, uint8, int8, int16, int32, int64, bool_,
                     dtype as _dtype_type)


def _linalg():
    """symtrace._linalg_top (imported when first used: it imports the ops and autograd)."""
    from . import _linalg_top
    return _linalg_top


class device:
    """A device: symtrace.device('cpu'); compares equal to its string."""
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        s = str(type)
        if ":" in s:
            s, i = s.split(":", 1)
            index = int(i)
        if s not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type, self.index = s, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    def __enter__(self):
        """with symtrace.device(d): factory functions given no device use d inside the block
        (as set_default_device, restored on exit), as torch's."""
        _DEVICE_STACK.append(_ops.creation._DEFAULT_DEVICE)
        _ops.creation._DEFAULT_DEVICE = None if str(self) == "cpu" else str(self)
        return self

    def __exit__(self, *exc):
        _ops.creation._DEFAULT_DEVICE = _DEVICE_STACK.pop()
        return False


_DEVICE_STACK = []      # the default devices that `with device(...)` blocks replaced




def _numberlike(o):
    return isinstance(o, (_C.TensorBase, _numbers.Number))


class Tensor(_C.TensorBase):
    """A strided, typed, reference-counted array on a device (PyTorch's Tensor API)."""

    # above numpy's: `np.float32(2.0) * t` and `np.int64(3) - t` defer to Tensor's reflected
    # operators (a Tensor, as torch gives) instead of numpy converting t to an ndarray
    __array_priority__ = 1000

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """What numpy makes of a tensor comes back as a tensor, as torch's: t * ndarray,
        np.sin(t) (numpy computes on t's values, then wraps its result here); bool
        results as uint8 (torch's workaround, kept for parity)."""
        if array.dtype == bool:
            array = array.astype("uint8")
        return _ops.creation.from_numpy(array)

    @property
    def device(self):
        return device(self._device_str)

    @property
    def is_cuda(self):
        return self._device_str.startswith("cuda")

    @property
    def data(self):
        """A detached alias whose in-place writes autograd does not see (no version moves:
        torch's .data has a version counter of its own)."""
        return self._data_alias()

    @data.setter
    def data(self, value):
        """t.data = other: t keeps its identity and autograd state (requires_grad, grad,
        grad_fn) and takes other's storage, dtype and shape, as torch's."""
        self._set_data(value)

    def __repr__(self):
        """As torch prints tensors (the rules are in _tensor_str)."""
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    def __deepcopy__(self, memo):
        """A copy of the data (a leaf), keeping requires_grad, as torch does for leaves."""
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.")
        if id(self) in memo:
            return memo[id(self)]
        from .autograd import no_grad
        with no_grad():
            r = self.clone()
        r.requires_grad_(self.requires_grad)
        memo[id(self)] = r
        d = getattr(self, "__dict__", None)
        if d:   # attributes set on the tensor travel, deep-copied (torch's)
            import copy
            r.__dict__.update(copy.deepcopy(d, memo))
        return r

    # ---- pickling (pickle, copy.copy, multiprocessing) ----
    class _PickledStorage:
        """One storage as pickle sees it: `base` is a 1-D contiguous tensor over the
        whole storage (offset 0). While pickling, Tensor.__reduce_ex__ hands every
        tensor of one storage the same _PickledStorage (a weak cache keyed by the
        storage), so the pickler's memo writes its bytes once per pickle and the
        unpickler rebuilds one storage that the tensors are views of. `fresh`: made
        by unpickling (its base is new memory that nothing else sees yet)."""
        __slots__ = ("base", "fresh", "claimed", "__weakref__")
        _live = None            # WeakValueDictionary (storage id, dtype) -> _PickledStorage

        def __init__(self, base, fresh=False):
            self.base, self.fresh, self.claimed = base, fresh, False

        def __reduce_ex__(self, proto):
            import ctypes
            import pickle
            import sys
            base = self.base
            dev = base._device_str
            host = base if dev == "cpu" else _C._to_device(base, "cpu")
            nbytes = host.numel() * host.element_size()
            if nbytes == 0:
                data = b""
            elif proto >= 5:    # in-band: written straight from the tensor's memory; out-of-band: no copy
                arr = (ctypes.c_char * nbytes).from_address(host.data_ptr())
                arr._owner = host               # the buffer keeps the memory alive
                data = pickle.PickleBuffer(memoryview(arr).cast("B"))
            else:
                data = ctypes.string_at(host.data_ptr(), nbytes)
            return (Tensor._storage_from_pickle, (base.dtype, base.numel(), dev, data, sys.byteorder))

    def __reduce_ex__(self, proto):
        """Pickles the tensor as torch does: its class, dtype, device, shape, strides,
        storage offset and requires_grad, with the raw bytes of its whole storage
        (one buffer, little- or big-endian as the host; protocol 5 writes it without
        a copy and supports out-of-band buffers). Tensors of one storage pickled
        together (a tensor and its views, tied weights) share one record, written
        once, and come back as views of one new storage (in-place writes to one show
        in the others); this is stricter than torch, whose plain pickle copies the
        whole storage once per tensor and loses the sharing. Caveats, as torch: a
        small view of a large tensor pickles all of the large tensor's storage
        (pickle v.clone() to avoid it); .grad, gradient history and hooks are not
        pickled (a tensor that requires grad, leaf or not, comes back as a leaf that
        requires grad; a tensor with gradient hooks warns). CUDA tensors are pickled
        from a host copy and come back on their device (RuntimeError where no GPU is
        usable). copy.copy(t) goes through this too: a new tensor sharing t's memory.
        Attributes of a subclass (its __getstate__ / __dict__) are kept."""
        hooks = _C._grad_hooks(self)
        if hooks is not None and (getattr(hooks, "pre", None) or getattr(hooks, "post", None)):
            import warnings
            for h in list(hooks.pre.values()) + list(hooks.post.values()):
                warnings.warn(f"backward hook {h!r} on tensor will not be serialized (pickle keeps "
                              "no gradient hooks, as in torch)", UserWarning, stacklevel=2)
        cls = type(self)
        getstate = getattr(self, "__getstate__", None)
        state = getstate() if getstate is not None else getattr(self, "__dict__", None)
        rg = bool(self.requires_grad)
        d = self.detach()
        shape, stride = tuple(int(n) for n in d.shape), tuple(int(s) for s in d.stride())
        if any(s < 0 for s in stride):
            d = d.contiguous()
            stride = tuple(int(s) for s in d.stride())
        offset = int(d.storage_offset())
        if d.numel() == 0:      # nothing to share: an empty storage of its own
            storage = Tensor._PickledStorage(d.as_strided((0,), (1,), 0))
            offset = 0
        else:
            live = Tensor._PickledStorage._live
            if live is None:
                import weakref
                live = Tensor._PickledStorage._live = weakref.WeakValueDictionary()
            key = (d._storage_id(), d.dtype)
            storage = live.get(key)
            if storage is None:
                storage = Tensor._PickledStorage(d.as_strided((Tensor._storage_numel(d),), (1,), 0))
                live[key] = storage
        return (Tensor._rebuild_from_pickle, (storage, offset, shape, stride, rg, cls, state))

    @staticmethod
    def _storage_numel(d):
        """Elements of d's storage, in d's dtype."""
        return d._storage_nbytes() // d.element_size()

    @staticmethod
    def _storage_from_pickle(dtype, numel, device, data, byteorder):
        """Unpickles a _PickledStorage: a new CPU storage filled from data, moved to device."""
        import ctypes
        import pickle
        import sys
        if not isinstance(dtype, _dtype_type) or not isinstance(numel, int) or numel < 0:
            raise pickle.UnpicklingError(f"corrupt symtrace tensor pickle: bad storage {dtype!r} x {numel!r}")
        src = memoryview(data).cast("B")
        base = _C.empty((numel,), dtype)
        nbytes = numel * base.element_size()
        if src.nbytes != nbytes:
            raise pickle.UnpicklingError(f"corrupt symtrace tensor pickle: the storage holds {src.nbytes} "
                                         f"bytes, expected {nbytes} ({numel} x {dtype})")
        if nbytes:
            dst = memoryview((ctypes.c_char * nbytes).from_address(base.data_ptr())).cast("B")
            dst[:] = src
            if byteorder != sys.byteorder and base.element_size() > 1:  # pragma: no cover (mixed-endian)
                import array
                a = array.array({2: "H", 4: "I", 8: "Q"}[base.element_size()], dst)
                a.byteswap()
                dst[:] = memoryview(a).cast("B")
            del dst
        if device != "cpu":
            from .serialization import _check_device
            _check_device(device)   # RuntimeError naming the problem when no GPU is usable
            base = _C._to_device(base, device)
        return Tensor._PickledStorage(base, fresh=True)

    @staticmethod
    def _rebuild_from_pickle(storage, offset, shape, stride, requires_grad, cls, state):
        """Unpickles (or copy.copy's) a tensor: a view of storage.base. The first tensor
        that covers a freshly unpickled storage densely is its own tensor (not a view),
        as a tensor that was pickled alone; Parameters and other subclasses are made
        with _make_subclass, as symtrace.load does."""
        import pickle
        if not (isinstance(storage, Tensor._PickledStorage) and isinstance(cls, type)
                and issubclass(cls, _C.TensorBase)):
            raise pickle.UnpicklingError(f"corrupt symtrace tensor pickle: {type(storage).__name__}, {cls!r}")
        base = storage.base
        v = base.as_strided(tuple(shape), tuple(stride), offset)
        dims = sorted((s, n) for n, s in zip(shape, stride) if n != 1)
        expect, dense = 1, offset == 0 and v.numel() == base.numel()
        for s, n in dims:
            dense = dense and s == expect
            expect *= n
        own = dense and storage.fresh and not storage.claimed
        if own:
            storage.claimed = True
        if own or cls is not Tensor:
            t = _C._make_subclass(cls, v, bool(requires_grad))
        else:
            t = v.requires_grad_(True) if requires_grad else v
        if state:
            setstate = getattr(t, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                slots = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slots = state
                if state:
                    t.__dict__.update(state)
                for k, val in (slots or {}).items():
                    setattr(t, k, val)
        return t

    def __len__(self):
        return self.shape[0] if self.dim() else _C.TensorBase.__len__(self)

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __contains__(self, item):
        return bool((self == item).any()) if hasattr(self, "any") else item in self.tolist()

    def __format__(self, spec):
        """A 0-d plain Tensor formats as its Python number (format(t, '.2f')); others as
        object does (str(t) for an empty spec, else TypeError), as torch."""
        if self.dim() == 0 and type(self) is Tensor:
            return format(self.detach().item(), spec)
        return object.__format__(self, spec)

    # ---- autograd ----
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulates d(self)/d(leaf) (times gradient) into every leaf's .grad."""
        from . import autograd
        autograd.backward(self, gradient, retain_graph, create_graph, inputs)

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    def _is_view(self):
        """True for a view made by a view function (self._base is the tensor it views)."""
        return self._base is not None

    def register_hook(self, hook):
        """hook(grad) -> Tensor or None runs whenever the gradient with respect to
        this tensor is computed (a leaf's before it accumulates into .grad); a
        returned tensor replaces the gradient. Returns a handle with remove()."""
        from .autograd import hooks
        return hooks.register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) runs after backward() accumulated into this leaf's .grad."""
        from .autograd import hooks
        return hooks.register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self):
        """backward() (and autograd.grad) fill .grad of this non-leaf tensor too."""
        _C._retain_grad(self)

    # ---- memory formats (symtrace/_memory_format.py) ----
    def contiguous(self, memory_format=None):
        """contiguous(memory_format=symtrace.contiguous_format): self when it is dense in
        that format, else a copy that is (channels_last: NHWC strides)."""
        if memory_format is None or memory_format is _mf.contiguous_format:
            return _C.TensorBase.contiguous(self)
        return _mf.contiguous(self, memory_format)

    def is_contiguous(self, memory_format=None):
        """is_contiguous(memory_format=symtrace.contiguous_format): dense in that format?"""
        if memory_format is None or memory_format is _mf.contiguous_format:
            return _C.TensorBase.is_contiguous(self)
        return _mf.is_contiguous(self, memory_format)

    # ---- conversion ----
    def to(self, *args, **kwargs):
        """to(dtype) / to(device) / to(other), memory_format=...: dtype, device and
        layout conversion."""
        dt = kwargs.get("dtype")
        dev = kwargs.get("device")
        fmt = kwargs.get("memory_format")
        for a in args:
            if isinstance(a, _dtype_type):
                dt = a
            elif isinstance(a, (str, device)):
                dev = a
            elif isinstance(a, _C.TensorBase):
                dt, dev = a.dtype, a.device
            else:
                raise TypeError(f"to() received an invalid argument of type {type(a).__name__}")
        r = self
        if dt is not None:
            r = _ops.to_dtype(r, dt)
        if dev is not None and device(dev) != self.device:
            r = _ops.to_device(r, dev)
        if kwargs.get("copy") and r is self:
            r = self.clone()
        if fmt is not None:
            r = _mf.contiguous(r, fmt)
        return r

    _TYPE_NAMES = {"symtrace.float32": "FloatTensor", "symtrace.float64": "DoubleTensor",
                   "symtrace.float16": "HalfTensor", "symtrace.bfloat16": "BFloat16Tensor",
                   "symtrace.uint8": "ByteTensor", "symtrace.int8": "CharTensor",
                   "symtrace.int16": "ShortTensor",
                   "symtrace.int32": "IntTensor", "symtrace.int64": "LongTensor",
                   "symtrace.bool": "BoolTensor"}

    def type(self, dtype=None):
        """type() -> str: 'symtrace.FloatTensor', 'symtrace.cuda.LongTensor', ... (torch's names
        with symtrace for torch); type(dtype): self.to(dtype)."""
        if dtype is None:
            name = Tensor._TYPE_NAMES.get(str(self.dtype), str(self.dtype))
            return f"symtrace.cuda.{name}" if self.is_cuda else f"symtrace.{name}"
        return self.to(dtype)

    def float(self): return _ops.to_dtype(self, float32)
    def double(self): return _ops.to_dtype(self, float64)
    def half(self): return _ops.to_dtype(self, float16)
    def bfloat16(self): return _ops.to_dtype(self, bfloat16)
    def long(self): return _ops.to_dtype(self, int64)
    def int(self): return _ops.to_dtype(self, int32)
    def short(self): return _ops.to_dtype(self, int16)
    def char(self): return _ops.to_dtype(self, int8)
    def byte(self): return _ops.to_dtype(self, uint8)
    def bool(self): return _ops.to_dtype(self, bool_)
    def cpu(self):
        return self if self.device.type == "cpu" else _ops.to_device(self, "cpu")

    def cuda(self, device=None):
        dev = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)
        return self if self.device == dev else _ops.to_device(self, dev)

    def is_floating_point(self):
        return self.dtype.is_floating_point

    is_sparse = False     # dense, strided; symtrace.sparse.SparseCOOTensor has True
    layout = _layout.strided

    @property
    def is_meta(self):
        return self._device_str.startswith("meta")

    def to_sparse(self, sparse_dim=None):
        from .sparse import _to_sparse
        return _to_sparse(self, sparse_dim)

    to_sparse_coo = to_sparse

    def to_dense(self):
        return self

    @_dyn_inline
    def flatten(self, start_dim=0, end_dim=-1): return _ops.flatten(self, start_dim, end_dim)
    def view_as(self, other): return self.view(other.shape)
    def reshape_as(self, other): return self.reshape(other.shape)
    def expand_as(self, other): return self.expand(other.shape)
    @_dyn_inline
    def split(self, split_size, dim=0): return _ops.split(self, split_size, dim)
    @_dyn_inline
    def chunk(self, chunks, dim=0): return _ops.chunk(self, chunks, dim)
    def t(self):
        if self.dim() > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return self.T
    @_dyn_inline
    def new_zeros(self, *size, dtype=None, device=None):
        return _ops.zeros(*size, dtype=dtype or self.dtype, device=device or self.device)

    @_dyn_inline
    def new_ones(self, *size, dtype=None, device=None):
        return _ops.ones(*size, dtype=dtype or self.dtype, device=device or self.device)

    @_dyn_inline
    def new_full(self, size, fill_value, dtype=None, device=None):
        return _ops.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device)

    @_dyn_inline
    def new_empty(self, *size, dtype=None, device=None):
        return _ops.empty(*size, dtype=dtype or self.dtype, device=device or self.device)
    def new_tensor(self, data, dtype=None): return _C.tensor(data, dtype or self.dtype)

    # ---- ops as methods ----
    def add(self, other, *, alpha=1): return _ops.add(self, other, alpha=alpha)
    def sub(self, other, *, alpha=1): return _ops.sub(self, other, alpha=alpha)
    def mul(self, other): return _ops.mul(self, other)
    def div(self, other, *, rounding_mode=None): return _ops.div(self, other, rounding_mode=rounding_mode)
    def pow(self, other): return _ops.pow(self, other)
    def __rpow__(self, other): return _ops.pow(other, self)
    def neg(self): return _ops.neg(self)
    def exp(self): return _ops.exp(self)
    def log(self): return _ops.log(self)
    def sqrt(self): return _ops.sqrt(self)
    def rsqrt(self): return _ops.rsqrt(self)
    def tanh(self): return _ops.tanh(self)
    def sigmoid(self): return _ops.sigmoid(self)
    def relu(self): return _ops.relu(self)
    def erf(self): return _ops.erf(self)
    def abs(self): return _ops.abs(self)
    def sin(self): return _ops.sin(self)
    def cos(self): return _ops.cos(self)
    def reciprocal(self): return _ops.reciprocal(self)
    def floor(self): return _ops.floor(self)
    def ceil(self): return _ops.ceil(self)
    def round(self, *, decimals=0): return _ops.round(self, decimals=decimals)
    def sign(self): return _ops.sign(self)
    def maximum(self, other): return _ops.maximum(self, other)
    def minimum(self, other): return _ops.minimum(self, other)
    def eq(self, other): return _ops.eq(self, other)
    def ne(self, other): return _ops.ne(self, other)
    def lt(self, other): return _ops.lt(self, other)
    def le(self, other): return _ops.le(self, other)
    def gt(self, other): return _ops.gt(self, other)
    def ge(self, other): return _ops.ge(self, other)
    def logical_not(self): return _ops.logical_not(self)
    @_dyn_inline
    def isnan(self): return _ops.isnan(self)
    @_dyn_inline
    def isinf(self): return _ops.isinf(self)
    @_dyn_inline
    def isfinite(self): return _ops.isfinite(self)
    def logical_and(self, other): return _ops.logical_and(self, other)
    def logical_or(self, other): return _ops.logical_or(self, other)
    def floor_divide(self, other): return _ops.floor_divide(self, other)
    def remainder(self, other): return _ops.remainder(self, other)
    def clamp(self, min=None, max=None): return _ops.clamp(self, min, max)
    clip = clamp
    def where(self, condition, other): return _ops.where(condition, self, other)
    def masked_fill(self, mask, value): return _ops.masked_fill(self, mask, value)
    def sum(self, dim=None, keepdim=False, *, dtype=None): return _ops.sum(self, dim, keepdim, dtype=dtype)
    def mean(self, dim=None, keepdim=False, *, dtype=None): return _ops.mean(self, dim, keepdim, dtype=dtype)
    def prod(self, dim=None, keepdim=False, *, dtype=None): return _ops.prod(self, dim, keepdim, dtype=dtype)
    def amax(self, dim=(), keepdim=False): return _ops.amax(self, dim, keepdim)
    def logsumexp(self, dim, keepdim=False): return _ops.logsumexp(self, dim, keepdim)
    def amin(self, dim=(), keepdim=False): return _ops.amin(self, dim, keepdim)
    def argmax(self, dim=None, keepdim=False): return _ops.argmax(self, dim, keepdim)
    def argmin(self, dim=None, keepdim=False): return _ops.argmin(self, dim, keepdim)
    def max(self, dim=None, keepdim=False): return _ops.max(self, dim, keepdim)
    def min(self, dim=None, keepdim=False): return _ops.min(self, dim, keepdim)
    def any(self, dim=None, keepdim=False): return _ops.any(self, dim, keepdim)
    def all(self, dim=None, keepdim=False): return _ops.all(self, dim, keepdim)
    def softmax(self, dim, dtype=None): return _ops.softmax(self, dim, dtype)
    def log_softmax(self, dim, dtype=None): return _ops.log_softmax(self, dim, dtype)
    def matmul(self, other): return _ops.matmul(self, other)
    def index_select(self, dim, index): return _ops.index_select(self, dim, index)
    @_dyn_inline
    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        return _ops.repeat_interleave(self, repeats, dim, output_size=output_size)
    def gather(self, dim, index): return _ops.gather(self, dim, index)
    def scatter_add(self, dim, index, src): return _ops.scatter_add(self, dim, index, src)
    def tril(self, diagonal=0): return _ops.tril(self, diagonal)
    def triu(self, diagonal=0): return _ops.triu(self, diagonal)

    @_dyn_inline
    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _ops.var(self, dim, unbiased, keepdim, correction=correction)

    @_dyn_inline
    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _ops.std(self, dim, unbiased, keepdim, correction=correction)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        return _ops.norm(self, p, dim, keepdim, dtype)

    def mm(self, mat2): return _ops.mm(self, mat2)
    def bmm(self, mat2): return _ops.bmm(self, mat2)
    def outer(self, vec2): return _ops.outer(self, vec2)
    ger = outer
    def addmm(self, mat1, mat2, *, beta=1, alpha=1): return _ops.addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return _ops.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def addcmul(self, tensor1, tensor2, *, value=1): return _ops.addcmul(self, tensor1, tensor2, value=value)
    def addcdiv(self, tensor1, tensor2, *, value=1): return _ops.addcdiv(self, tensor1, tensor2, value=value)
    def lerp(self, end, weight): return _ops.lerp(self, end, weight)
    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return _ops.isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return _ops.allclose(self, other, rtol, atol, equal_nan)

    def equal(self, other): return _ops.equal(self, other)
    def nan_to_num(self, nan=0.0, posinf=None, neginf=None): return _ops.nan_to_num(self, nan, posinf, neginf)
    def cumsum(self, dim, *, dtype=None): return _ops.cumsum(self, dim, dtype=dtype)

    # ---- decomposed ops (symtrace/_ops/) as methods ----
    def log1p(self): return _ops.log1p(self)
    def expm1(self): return _ops.expm1(self)
    def log2(self): return _ops.log2(self)
    def log10(self): return _ops.log10(self)
    def exp2(self): return _ops.exp2(self)
    def square(self): return _ops.square(self)
    def trunc(self): return _ops.trunc(self)
    fix = trunc
    def frac(self): return _ops.frac(self)
    def fmod(self, other): return _ops.fmod(self, other)
    def sinh(self): return _ops.sinh(self)
    def cosh(self): return _ops.cosh(self)
    def asinh(self): return _ops.asinh(self)
    def acosh(self): return _ops.acosh(self)
    def atanh(self): return _ops.atanh(self)
    arcsinh, arccosh, arctanh = asinh, acosh, atanh
    def atan(self): return _ops.atan(self)
    def asin(self): return _ops.asin(self)
    def acos(self): return _ops.acos(self)
    arctan, arcsin, arccos = atan, asin, acos
    def atan2(self, other): return _ops.atan2(self, other)
    arctan2 = atan2
    def logaddexp(self, other): return _ops.logaddexp(self, other)
    def logaddexp2(self, other): return _ops.logaddexp2(self, other)
    def hypot(self, other): return _ops.hypot(self, other)
    def deg2rad(self): return _ops.deg2rad(self)
    def rad2deg(self): return _ops.rad2deg(self)
    def clamp_min(self, min): return _ops.clamp_min(self, min)
    def clamp_max(self, max): return _ops.clamp_max(self, max)
    def logical_xor(self, other): return _ops.logical_xor(self, other)
    def xlogy(self, other): return _ops.xlogy(self, other)
    def sinc(self): return _ops.sinc(self)
    def heaviside(self, values): return _ops.heaviside(self, values)
    def copysign(self, other): return _ops.copysign(self, other)
    def float_power(self, exponent): return _ops.float_power(self, exponent)
    def true_divide(self, other): return _ops.div(self, other)

    def count_nonzero(self, dim=None): return _ops.count_nonzero(self, dim)
    def nansum(self, dim=None, keepdim=False, *, dtype=None): return _ops.nansum(self, dim, keepdim, dtype=dtype)
    def nanmean(self, dim=None, keepdim=False, *, dtype=None): return _ops.nanmean(self, dim, keepdim, dtype=dtype)
    def logcumsumexp(self, dim): return _ops.logcumsumexp(self, dim)
    def cumprod(self, dim, *, dtype=None): return _ops.cumprod(self, dim, dtype=dtype)
    def diff(self, n=1, dim=-1, prepend=None, append=None): return _ops.diff(self, n, dim, prepend, append)
    def dist(self, other, p=2): return _ops.dist(self, other, p)
    def aminmax(self, *, dim=None, keepdim=False): return _ops.aminmax(self, dim=dim, keepdim=keepdim)
    def diag(self, diagonal=0): return _ops.diag(self, diagonal)
    def diagonal(self, offset=0, dim1=0, dim2=1): return _ops.diagonal(self, offset, dim1, dim2)

    # ---- linear algebra (symtrace.linalg; torch's Tensor methods) ----
    def det(self): return _linalg().det(self)
    def logdet(self): return _linalg().logdet(self)
    def slogdet(self): return _linalg().slogdet(self)
    def inverse(self): return _linalg().inverse(self)
    def cholesky(self, upper=False): return _linalg().cholesky(self, upper)
    def cholesky_solve(self, input2, upper=False): return _linalg().cholesky_solve(self, input2, upper)
    def cholesky_inverse(self, upper=False): return _linalg().cholesky_inverse(self, upper)
    def pinverse(self, rcond=1e-15): return _linalg().pinverse(self, rcond)
    def matrix_power(self, n): return _linalg().matrix_power(self, n)
    def matrix_exp(self): return _linalg().matrix_exp(self)
    def svd(self, some=True, compute_uv=True): return _linalg().svd(self, some, compute_uv)
    def qr(self, some=True): return _linalg().qr(self, some)
    def lu(self, pivot=True, get_infos=False): return _linalg().lu(self, pivot, get_infos)
    def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
        return _linalg().triangular_solve(self, A, upper, transpose, unitriangular)

    def cross(self, other, dim=None): return _linalg().cross(self, other, dim)

    # ---- in-place view ops: self takes the view's shape, strides and history ----
    def t_(self): return self._become(self.t())
    def transpose_(self, dim0, dim1): return self._become(self.transpose(dim0, dim1))
    swapdims_ = swapaxes_ = transpose_
    def squeeze_(self, dim=None): return self._become(self.squeeze() if dim is None else self.squeeze(dim))
    def unsqueeze_(self, dim): return self._become(self.unsqueeze(dim))

    def as_strided_(self, size, stride, storage_offset=None):
        v = self.as_strided(size, stride) if storage_offset is None else self.as_strided(size, stride, storage_offset)
        return self._become(v)

    def index_put(self, indices, values, accumulate=False): return _ops.index_put(self, indices, values, accumulate)

    def index_put_(self, indices, values, accumulate=False):
        pos, v = _ops._index_put_args(self, indices, values, "index_put_")
        if isinstance(values, _C.TensorBase) and (accumulate or not (
                values.numel() == 1 and isinstance(indices, (tuple, list)) and _one_mask(tuple(indices)))):
            _mem_overlap.check_none("index_put_", self, (values,))
        _ops._put_flat_(self, pos, v, accumulate)
        return self

    def put(self, index, source, accumulate=False): return _ops.put(self, index, source, accumulate)

    def put_(self, index, source, accumulate=False):
        pos, v = _ops._put_args(self, index, source)
        _ops._put_flat_(self, pos, v, accumulate)
        return self
    def select_scatter(self, src, dim, index): return _ops.select_scatter(self, src, dim, index)

    def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
        return _ops.diagonal_scatter(self, src, offset, dim1, dim2)

    def as_strided_scatter(self, src, size, stride, storage_offset=None):
        return _ops.as_strided_scatter(self, src, size, stride, storage_offset)

    def unfold(self, dimension, size, step):
        """The slices of length size, step apart, along dimension, as a new last dim: a
        view (as torch's Tensor.unfold; an as_strided view, so a graph break under
        symtrace.compile)."""
        nd = self.dim()
        n = max(nd, 1)
        if not isinstance(dimension, int) or not -n <= dimension < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             f"but got {dimension})")
        d = dimension % n
        length = self.shape[d] if nd else 1
        if size > length:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if size < 0:
            raise RuntimeError(f"size is {size} but must be >= 0")
        shape, strides = list(self.shape), list(self.stride())
        if nd == 0:
            return self.as_strided((size,), (1,), self.storage_offset())
        inner = strides[d]
        shape[d] = (length - size) // step + 1
        strides[d] = inner * step
        return self.as_strided(tuple(shape) + (size,), tuple(strides) + (inner,), self.storage_offset())
    def diag_embed(self, offset=0, dim1=-2, dim2=-1): return _ops.diag_embed(self, offset, dim1, dim2)
    def trace(self): return _ops.trace(self)
    def is_nonzero(self): return _ops.is_nonzero(self)
    def bernoulli(self, p=None, *, generator=None): return _ops.bernoulli(self, p, generator=generator)

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        return _ops.multinomial(self, num_samples, replacement, generator=generator)

    def movedim(self, source, destination): return _ops.movedim(self, source, destination)
    moveaxis = movedim
    def swapaxes(self, axis0, axis1): return _ops.swapaxes(self, axis0, axis1)
    def swapdims(self, dim0, dim1): return _ops.swapdims(self, dim0, dim1)
    @_dyn_inline
    def unflatten(self, dim, sizes): return _ops.unflatten(self, dim, sizes)
    def rot90(self, k=1, dims=(0, 1)): return _ops.rot90(self, k, dims)
    def kron(self, other): return _ops.kron(self, other)
    def take_along_dim(self, indices, dim=None): return _ops.take_along_dim(self, indices, dim)
    def take(self, index): return _ops.take(self, index)

    def scatter(self, dim, index, src=None, value=None, *, reduce=None):
        return _ops.scatter(self, dim, index, src, value, reduce=reduce)

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        return _ops.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)

    def index_add(self, dim, index, source, *, alpha=1): return _ops.index_add(self, dim, index, source, alpha=alpha)
    def index_copy(self, dim, index, source): return _ops.index_copy(self, dim, index, source)
    def index_fill(self, dim, index, value): return _ops.index_fill(self, dim, index, value)
    def masked_scatter(self, mask, source): return _ops.masked_scatter(self, mask, source)
    def masked_select(self, mask): return _ops.masked_select(self, mask)
    def nonzero(self, *, as_tuple=False): return _ops.nonzero(self, as_tuple=as_tuple)
    def argwhere(self): return _ops.argwhere(self)

    # ---- movement ----
    def broadcast_to(self, size): return _ops.broadcast_to(self, size)

    def repeat(self, *sizes):
        """repeat(*sizes): a new tensor with self tiled sizes[i] times along dim i."""
        if not sizes:
            raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
        if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
            sizes = tuple(sizes[0])
        return _ops._repeat(self, sizes)

    def tile(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = dims[0]
        return _ops.tile(self, tuple(dims))

    def unbind(self, dim=0): return _ops.unbind(self, dim)
    def narrow(self, dim, start, length): return _ops.narrow(self, dim, start, length)

    @_dyn_inline
    def flip(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = dims[0]
        return _ops.flip(self, tuple(dims))

    @_dyn_inline
    def roll(self, shifts, dims=None): return _ops.roll(self, shifts, dims)
    def type_as(self, other): return self.to(dtype=other.dtype, device=other.device)

    @property
    def mT(self):
        """The transpose of the last two dims (batches of matrices)."""
        if self.dim() < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def mH(self):
        """The conjugate transpose of the last two dims: mT (symtrace has no complex dtypes)."""
        if self.dim() < 2:
            raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                               f"Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    @property
    def itemsize(self):
        return self.element_size()

    # ---- in place: the result is written into self ----
    def _inplace(self, opid, ins, attrs=None):
        _C.op(opid, ins, attrs, self)
        return self

    def add_(self, other, *, alpha=1):
        if alpha != 1 and self._scaled_overlap("add_", _ops.add, other, alpha):
            return self
        return self._inplace(_C.OP_ADD, (self, _ops._scale(self, other, alpha)))

    def sub_(self, other, *, alpha=1):
        if alpha != 1 and self._scaled_overlap("sub_", _ops.sub, other, alpha):
            return self
        return self._inplace(_C.OP_SUB, (self, _ops._scale(self, other, alpha)))

    def _scaled_overlap(self, name, fn, other, alpha):
        """add_/sub_ with an alpha, whose other is scaled into a new tensor first: torch's
        overlap error and write order for other as given (_mem_overlap); True when done."""
        if not isinstance(other, _C.TensorBase):
            return False
        _mem_overlap.check_partial(name, self, (other,))
        compute = self._checked(fn, name, {"alpha": alpha})
        op = _C.OP_ADD if name == "add_" else _C.OP_SUB
        return _mem_overlap.sequential(self, compute, (other,)) or _mem_overlap.sequential_recorded(
            self, compute, (other,),
            lambda: self._inplace(op, (self, _ops._scale(self, other, alpha))))

    def mul_(self, other): return self._inplace(_C.OP_MUL, (self, other))
    def div_(self, other, *, rounding_mode=None):
        if rounding_mode is not None:
            return self._via(_ops.div, "div_", other, rounding_mode=rounding_mode)
        return self._inplace(_C.OP_DIV, (self, other))

    def _assign(self, result, name):
        """Writes an out-of-place result into self, refusing what torch refuses."""
        if not _ops._can_cast(result.dtype, self.dtype):
            raise RuntimeError(f"{name}: result type {result.dtype} can't be cast to the "
                               f"desired output type {self.dtype}")
        if tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                               f"shape {list(result.shape)}")
        return self.copy_(result)

    def clamp_(self, min=None, max=None):
        return self._via(_ops.clamp, "clamp_", min, max)

    @_dyn_inline
    def fill_(self, value):
        if isinstance(value, _C.TensorBase):
            if value.dim() != 0:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                                   f"with {value.dim()} dimensions.")
            if any(sd == 0 and n > 1 for sd, n in zip(self.stride(), self.shape)):
                # torch checks the overlap for a tensor value only (a number fills as is)
                raise RuntimeError("unsupported operation: more than one element of the written-to "
                                   "tensor refers to a single memory location. Please clone() the "
                                   "tensor before performing the operation.")
            # a copy, not value.item(): no value read (a graph break under compile); with
            # grad, value's gradient is the sum of self's (torch's FillBackward)
            return self.copy_(value.expand(self.shape))
        _ops._check_fits(value, self.dtype, halves=False)   # float32: as torch's fill_
        return self._inplace(_C.OP_COPY, (_ops.full((), value, dtype=self.dtype,
                                                    device=self.device).expand(self.shape),))

    @_dyn_inline
    def zero_(self): return self.fill_(0)

    def fill_diagonal_(self, fill_value, wrap=False):
        """fill_diagonal_(fill_value, wrap=False): writes fill_value on the main diagonal
        (all indices equal) of a matrix, or of a tensor whose dims all have one length; with
        wrap, a tall matrix's diagonal starts again every (cols + 1) rows. As torch's, through
        views (diagonal(); a reshape and a strided slice for more dims), so compiled code and
        autograd see an ordinary in-place write."""
        if self.dim() < 2:
            raise RuntimeError("dimensions must larger than 1")
        if not isinstance(fill_value, (bool, int, float)) and \
                not (isinstance(fill_value, _C.TensorBase) and fill_value.dim() == 0):
            raise TypeError(f"fill_diagonal_(): argument 'fill_value' (position 1) must be Number, "
                            f"not {type(fill_value).__name__}")
        h, w = self.shape[0], self.shape[1]
        if self.dim() > 2:
            if any(n != h for n in self.shape):
                raise RuntimeError("all dimensions of input must be of equal length")
            step = sum(h ** k for k in range(self.dim()))   # row-major offsets of (i, i, ..., i)
            flat = self.reshape(-1) if self.is_contiguous() else None
            if flat is None:
                self.as_strided((h,), (sum(self.stride()),), self.storage_offset()).fill_(fill_value)
            elif h:
                flat[0:(h - 1) * step + 1:step].fill_(fill_value)
            return self
        self.diagonal().fill_(fill_value)
        if wrap and h > w + 1:
            for r in range(w + 1, h, w + 1):     # the blocks of rows below the first one
                self[r:].diagonal().fill_(fill_value)
        return self

    @_dyn_inline
    def copy_(self, src, non_blocking=False):
        """copy_(src): writes src (broadcast, cast to self's dtype) into self. Inlined under
        dynamic=True: the broadcast's target is self's symbolic shape, not its first sizes."""
        if not isinstance(src, _C.TensorBase):
            raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
        if src._device_str != self._device_str:   # across devices, as torch's copy_
            src = _ops.to_device(src, self._device_str)
        if src.shape != self.shape:
            # torch checks the overlap with src as given, before broadcasting it
            _mem_overlap.check_partial("copy_", self, (src,))
            src = src.expand(self.shape)
        return self._inplace(_C.OP_COPY, (src,))

    def masked_fill_(self, mask, value): return self._assign(_ops.masked_fill(self, mask, value), "masked_fill_")
    def relu_(self):
        """relu written straight into self (one kernel; the eager runtime computes an
        operand its VJP saves from a copy when it is overwritten)."""
        return self._inplace(_C.OP_RELU, (self,))

    def _checked(self, fn, name, kwargs):
        """fn(x, *args, **kwargs) refusing a result self's dtype cannot hold, as _assign."""
        def compute(x, *args):
            r = fn(x, *args, **kwargs)
            if not _ops._can_cast(r.dtype, self.dtype):
                raise RuntimeError(f"{name}: result type {r.dtype} can't be cast to the "
                                   f"desired output type {self.dtype}")
            return r
        return compute

    def _via(self, fn, name, *args, **kwargs):
        """self = fn(self, *args): under autograd fn reads a copy of self (also where self
        is among args), since its backward may need the values the write overwrites. An
        elementwise op's tensor operand sharing some of self's elements is refused, as
        torch's TensorIterator refuses it (_mem_overlap)."""
        def run():
            src, args_ = self, args
            if self.requires_grad and _C._is_grad_enabled():
                src = self.clone()
                args_ = tuple(src if a is self else a for a in args)
            return self._assign(fn(src, *args_, **kwargs), name)
        if name not in _NOT_ELEMENTWISE:
            _mem_overlap.check_partial(name, self, args + tuple(kwargs.values()))
            compute = self._checked(fn, name, kwargs)
            if _mem_overlap.sequential(self, compute, args) or \
                    _mem_overlap.sequential_recorded(self, compute, args, run):
                return self
        return run()

    def sqrt_(self): return self._via(_ops.sqrt, "sqrt_")
    def rsqrt_(self): return self._via(_ops.rsqrt, "rsqrt_")
    def exp_(self): return self._via(_ops.exp, "exp_")
    def log_(self): return self._via(_ops.log, "log_")
    def neg_(self): return self._via(_ops.neg, "neg_")
    def abs_(self): return self._via(_ops.abs, "abs_")
    def tanh_(self): return self._via(_ops.tanh, "tanh_")
    def sigmoid_(self): return self._via(_ops.sigmoid, "sigmoid_")
    def reciprocal_(self): return self._via(_ops.reciprocal, "reciprocal_")
    def tril_(self, diagonal=0): return self._via(_ops.tril, "tril_", diagonal)
    def triu_(self, diagonal=0): return self._via(_ops.triu, "triu_", diagonal)
    def lerp_(self, end, weight): return self._via(_ops.lerp, "lerp_", end, weight)

    def addr_(self, vec1, vec2, *, beta=1, alpha=1):
        """self = beta * self + alpha * outer(vec1, vec2), in place. torch runs it as an
        elementwise op over (self, vec1 as a column, vec2): its overlap error for a vector
        sharing some of self's elements, and its write order where it cannot tell."""
        if not (isinstance(vec1, _C.TensorBase) and isinstance(vec2, _C.TensorBase)
                and vec1.dim() == 1 and vec2.dim() == 1) or self.dtype is _ops.bool_:
            return self._via(_ops.addr, "addr_", vec1, vec2, beta=beta, alpha=alpha)
        col = vec1.unsqueeze(1)
        _mem_overlap.check_partial("addr_", self, (col, vec2))
        if vec1._storage_id() == self._storage_id() or vec2._storage_id() == self._storage_id():
            with _no_grad():                   # addr's own checks first
                _ops.addr(self, vec1, vec2, beta=beta, alpha=alpha)

        compute = self._checked(lambda o, a, b: _addr_rows(o, a, b, beta, alpha), "addr_", {})
        if _mem_overlap.sequential(self, compute, (col, vec2)) or \
                _mem_overlap.sequential_recorded(self, compute, (col, vec2), lambda: self._via(
                    _ops.addr, "addr_", vec1, vec2, beta=beta, alpha=alpha)):
            return self
        return self._via(_ops.addr, "addr_", vec1, vec2, beta=beta, alpha=alpha)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self._via(_ops.addcmul, "addcmul_", tensor1, tensor2, value=value)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return self._via(_ops.addcdiv, "addcdiv_", tensor1, tensor2, value=value)

    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
        return self._via(_ops.nan_to_num, "nan_to_num_", nan, posinf, neginf)


    def log1p_(self): return self._via(_ops.log1p, "log1p_")
    def expm1_(self): return self._via(_ops.expm1, "expm1_")
    def log2_(self): return self._via(_ops.log2, "log2_")
    def log10_(self): return self._via(_ops.log10, "log10_")
    def exp2_(self): return self._via(_ops.exp2, "exp2_")
    def square_(self): return self._via(_ops.square, "square_")
    def trunc_(self): return self._via(_ops.trunc, "trunc_")
    fix_ = trunc_
    def frac_(self): return self._via(_ops.frac, "frac_")
    def fmod_(self, other): return self._via(_ops.fmod, "fmod_", other)
    def sinh_(self): return self._via(_ops.sinh, "sinh_")
    def cosh_(self): return self._via(_ops.cosh, "cosh_")
    def asinh_(self): return self._via(_ops.asinh, "asinh_")
    def acosh_(self): return self._via(_ops.acosh, "acosh_")
    def atanh_(self): return self._via(_ops.atanh, "atanh_")
    arcsinh_, arccosh_, arctanh_ = asinh_, acosh_, atanh_
    def atan_(self): return self._via(_ops.atan, "atan_")
    def asin_(self): return self._via(_ops.asin, "asin_")
    def acos_(self): return self._via(_ops.acos, "acos_")
    arctan_, arcsin_, arccos_ = atan_, asin_, acos_
    def atan2_(self, other): return self._via(_ops.atan2, "atan2_", other)
    arctan2_ = atan2_
    def hypot_(self, other): return self._via(_ops.hypot, "hypot_", other)
    def deg2rad_(self): return self._via(_ops.deg2rad, "deg2rad_")
    def rad2deg_(self): return self._via(_ops.rad2deg, "rad2deg_")
    def clamp_min_(self, min): return self._via(_ops.clamp_min, "clamp_min_", min)
    def clamp_max_(self, max): return self._via(_ops.clamp_max, "clamp_max_", max)
    def logical_xor_(self, other): return self._via(_ops.logical_xor, "logical_xor_", other)
    def xlogy_(self, other): return self._via(_ops.xlogy, "xlogy_", other)
    def sinc_(self): return self._via(_ops.sinc, "sinc_")
    def heaviside_(self, values): return self._via(_ops.heaviside, "heaviside_", values)
    def copysign_(self, other): return self._via(_ops.copysign, "copysign_", other)
    def true_divide_(self, other): return self._via(_ops.div, "true_divide_", other)

    def float_power_(self, exponent):
        if self.dtype is not float64:
            raise RuntimeError(f"the base given to float_power_ has dtype {_ops._tname(self.dtype)} but "
                               "the operation's result requires dtype Double")
        return self._via(_ops.float_power, "float_power_", exponent)

    def cumprod_(self, dim, *, dtype=None): return self._via(_ops.cumprod, "cumprod_", dim, dtype=dtype)

    # ---- writes by index, in place: one scatter primitive written into self (its copy of
    # self skipped), O(index) as torch's, also under autograd: the scatter's VJP saves only
    # the index, and a write through a view (a flat one of self) runs in place too
    # (runtime/viewhist.c). index_fill_ with a value that requires grad and scatter_'s
    # other reductions go out of place and are copied back (_via). An index out of range:
    # torch's exception (kind, fmt) for the op (_ops._bad_index).
    def _scatter_in_place(self, opid, dim, index, src, kind=RuntimeError, fmt="{}"):
        x = self if self.dim() else self.reshape(1)
        with _ops._bad_index(kind, fmt):
            _C.op(opid, (x, index, src), _ops._attrs(ints=(dim,)), x)
        return self

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        if reduce not in (None, "add"):
            return self._via(_ops.scatter, "scatter_", dim, index, src, value, reduce=reduce)
        d, src = _ops._scatter_src(self, dim, index, src, value, "scatter_")
        return self._scatter_in_place(_C.OP_SCATTER if reduce is None else _C.OP_SCATTER_ADD,
                                      d, index, src)

    def scatter_add_(self, dim, index, src):
        _ops._check_tensor(index, "scatter_add_", "index")
        _ops._check_tensor(src, "scatter_add_", "src")
        return self._scatter_in_place(_C.OP_SCATTER_ADD, dim, index, src)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return self._via(_ops.scatter_reduce, "scatter_reduce_", dim, index, src, reduce,
                         include_self=include_self)

    def index_add_(self, dim, index, source, *, alpha=1):
        d, idx, src = _ops._index_along(self, dim, index, source, "index_add_")
        if alpha != 1:
            src = _ops.mul(src, alpha)
            if self.dtype is bool_:   # bool * 2 is int64: back to bool (nonzero), as torch's
                src = src.to(bool_)
        return self._scatter_in_place(_C.OP_SCATTER_ADD, d, idx, src, IndexError,
                                      "index out of range in self: {}")

    def index_copy_(self, dim, index, source):
        d, idx, src = _ops._index_along(self, dim, index, source, "index_copy_")
        return self._scatter_in_place(_C.OP_SCATTER, d, idx, src, IndexError, "index_copy_(): {}")
    def index_fill_(self, dim, index, value):
        if isinstance(value, _C.TensorBase) and value.requires_grad and _C._is_grad_enabled():
            return self._via(_ops.index_fill, "index_fill_", dim, index, value)
        d, idx, src = _ops._index_fill_args(self, dim, index, value)
        return self._scatter_in_place(_C.OP_SCATTER, d, idx, src, IndexError)
    def masked_scatter_(self, mask, source): return self._via(_ops.masked_scatter, "masked_scatter_", mask, source)

    @_dyn_inline   # its samples take self's shape: symbolic under dynamic=True
    def bernoulli_(self, p=0.5, *, generator=None):
        """Fills self with 1 with probability p (a number or a tensor), else 0."""
        if generator is not None:
            return _generator.run(generator, self.bernoulli_, p)
        u = _ops.rand(tuple(self.shape), dtype=float64 if self.dtype is float64 else float32,
                      device=self.device)
        return self._inplace(_C.OP_COPY, (_ops.lt(u, p).to(self.dtype).expand(self.shape),))

    @_dyn_inline   # its samples take self's shape: symbolic under dynamic=True
    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Fills self with samples of N(mean, std^2)."""
        if generator is not None:
            return _generator.run(generator, self.normal_, mean, std)
        _ops._check_std_values(std, "normal_")
        self._float_fill_check("normal_kernel_cpu", NotImplementedError)
        r = _ops.add(_ops.mul(_ops.randn(tuple(self.shape), dtype=self.dtype, device=self.device), std), mean)
        return self._inplace(_C.OP_COPY, (r,))

    # ---- in-place random fillers (torch's Tensor.uniform_ and friends); each takes
    # generator= (symtrace.Generator) and writes into self as a copy_ would
    def _float_fill_check(self, what, exc=RuntimeError):
        if not self.dtype.is_floating_point:
            if exc is NotImplementedError:
                raise NotImplementedError(f'"{what}" not implemented for \'{_ops._tname(self.dtype)}\'')
            raise RuntimeError(f"{what} distribution is a continuous probability distribution. dtype must "
                               f"be a floating point but you specified {_ops._tname(self.dtype)}")

    @_dyn_inline
    def _uniform01(self):
        """U[0, 1) samples shaped as self, in self's float dtype (float32 for halves)."""
        dt = float64 if self.dtype is float64 else float32
        return _ops.rand(tuple(self.shape), dtype=dt, device=self.device)

    def _fill_with(self, value):
        return self._inplace(_C.OP_COPY, (_ops.to_dtype(value, self.dtype),))

    @_dyn_inline   # its samples take self's shape: symbolic under dynamic=True
    def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
        """uniform_(from=0, to=1, *, generator=None): fills self with U[from, to)."""
        if "from" in kw:
            from_ = kw.pop("from")
        if kw:
            raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kw))}'")
        if generator is not None:
            return _generator.run(generator, self.uniform_, from_, to)
        self._float_fill_check("check_uniform_bounds", NotImplementedError)
        if from_ > to:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > "
                               f"to={to}")
        return self._fill_with(_ops.add(_ops.mul(self._uniform01(), to - from_), from_))

    @_dyn_inline   # its samples take self's shape: symbolic under dynamic=True
    def random_(self, *args, generator=None, **kw):
        """random_(from, to) / random_(to) / random_(), *, generator=None: fills self with
        integers drawn uniformly from [from, to - 1] ([0, to - 1] for random_(to)); with no
        to, up to 2^mantissa for floats (2^24 float32, 2^53 float64, 2^11 half, 2^8
        bfloat16) or the dtype's max for integers (int64: [from, 2^63 - 2])."""
        if len(args) > 2:
            raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
        bad = set(kw) - {"from", "to"}
        if bad:
            raise TypeError(f"random_() got an unexpected keyword argument '{bad.pop()}'")
        if len(args) == 1 and "from" not in kw:
            from_, to = 0, args[0]            # random_(to)
        else:
            from_ = args[0] if args else kw.get("from", 0)
            to = args[1] if len(args) > 1 else kw.get("to")
        if generator is not None:
            return _generator.run(generator, self.random_, from_, to)
        if to is None:
            mant = {float32: 24, float64: 53, float16: 11, bfloat16: 8}
            if self.dtype in mant:
                to = (1 << mant[self.dtype]) + 1
            elif self.dtype is bool_:
                to = 2
            elif self.dtype is int32:
                to = 1 << 31
            elif self.dtype is int16:
                to = 1 << 15
            elif self.dtype is int8:
                to = 1 << 7
            elif self.dtype is uint8:
                to = 1 << 8
            else:
                to = (1 << 63) - 1
        if from_ >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
        from_, to, shape = int(from_), int(to), tuple(self.shape)
        if to - from_ <= 1 << 53:  # randint's float64 uniform is exact up to 2^53
            r = _ops.randint(from_, to, shape, dtype=int64, device=self.device)
        else:                      # 63 random bits from two draws (reduced mod the span)
            hi = _ops.randint(0, 1 << 31, shape, dtype=int64, device=self.device)
            lo = _ops.randint(0, 1 << 32, shape, dtype=int64, device=self.device)
            r = _ops.add(_ops.mul(hi, 1 << 32), lo)
            if to - from_ < 1 << 63:
                r = _ops.remainder(r, to - from_)
            r = _ops.add(r, from_)
        return self._fill_with(r)

    @_dyn_inline   # its samples take self's shape: symbolic under dynamic=True
    def exponential_(self, lambd=1.0, *, generator=None):
        """exponential_(lambd=1, *, generator=None): fills self with Exp(lambd) samples."""
        if generator is not None:
            return _generator.run(generator, self.exponential_, lambd)
        self._float_fill_check("Exponential")
        if not lambd > 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        return self._fill_with(_ops.div(_ops.neg(_ops.log1p(_ops.neg(self._uniform01()))), lambd))

    @_dyn_inline   # its samples take self's shape: symbolic under dynamic=True
    def geometric_(self, p, *, generator=None):
        """geometric_(p, *, generator=None): fills self with the number of Bernoulli(p)
        trials up to the first success (1, 2, ...)."""
        if generator is not None:
            return _generator.run(generator, self.geometric_, p)
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        u = self._uniform01()
        k = _ops.add(_ops.floor(_ops.div(_ops.log1p(_ops.neg(u)), _math.log1p(-p))), 1.0)
        return self._fill_with(k)

    @_dyn_inline   # its samples take self's shape: symbolic under dynamic=True
    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        """log_normal_(mean=1, std=2, *, generator=None): fills self with exp(N(mean, std^2))."""
        if generator is not None:
            return _generator.run(generator, self.log_normal_, mean, std)
        self._float_fill_check("log_normal_cpu", NotImplementedError)
        if not std > 0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        dt = float64 if self.dtype is float64 else float32
        n = _ops.randn(tuple(self.shape), dtype=dt, device=self.device)
        return self._fill_with(_ops.exp(_ops.add(_ops.mul(n, std), mean)))

    @_dyn_inline   # its samples take self's shape: symbolic under dynamic=True
    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        """cauchy_(median=0, sigma=1, *, generator=None): fills self with Cauchy samples
        median + sigma * tan(pi * (u - 1/2))."""
        if generator is not None:
            return _generator.run(generator, self.cauchy_, median, sigma)
        self._float_fill_check("cauchy_cpu", NotImplementedError)
        if not sigma > 0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        t = _ops.tan(_ops.mul(_ops.sub(self._uniform01(), 0.5), _math.pi))
        return self._fill_with(_ops.add(_ops.mul(t, sigma), median))

    # ---- sorting, selection and aliases (torch parity) ----
    def sort(self, dim=-1, descending=False, stable=False): return _ops.sort(self, dim, descending, stable)

    def argsort(self, dim=-1, descending=False, stable=False):
        return _ops.argsort(self, dim, descending, stable)

    def msort(self): return _ops.msort(self)
    def topk(self, k, dim=-1, largest=True, sorted=True): return _ops.topk(self, k, dim, largest, sorted)
    def kthvalue(self, k, dim=-1, keepdim=False): return _ops.kthvalue(self, k, dim, keepdim)
    def median(self, dim=None, keepdim=False): return _ops.median(self, dim, keepdim)
    def nanmedian(self, dim=None, keepdim=False): return _ops.nanmedian(self, dim, keepdim)
    def mode(self, dim=-1, keepdim=False): return _ops.mode(self, dim, keepdim)

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return _ops.quantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return _ops.nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        return _ops.unique(self, sorted, return_inverse, return_counts, dim)

    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        return _ops.unique_consecutive(self, return_inverse, return_counts, dim)

    def cummax(self, dim): return _ops.cummax(self, dim)
    def cummin(self, dim): return _ops.cummin(self, dim)
    def tan(self): return _ops.tan(self)
    def tan_(self): return self._via(_ops.tan, "tan_")
    def dot(self, tensor): return _ops.dot(self, tensor)
    def vdot(self, other): return _ops.vdot(self, other)
    def mv(self, vec): return _ops.mv(self, vec)
    def inner(self, other): return _ops.inner(self, other)
    def ravel(self): return _ops.ravel(self)
    def fliplr(self): return _ops.fliplr(self)
    def flipud(self): return _ops.flipud(self)
    def tensor_split(self, indices_or_sections, dim=0): return _ops.tensor_split(self, indices_or_sections, dim)
    def hsplit(self, indices_or_sections): return _ops.hsplit(self, indices_or_sections)
    def vsplit(self, indices_or_sections): return _ops.vsplit(self, indices_or_sections)
    def dsplit(self, indices_or_sections): return _ops.dsplit(self, indices_or_sections)
    def split_with_sizes(self, split_sizes, dim=0): return _ops.split_with_sizes(self, split_sizes, dim)
    def bitwise_and(self, other): return _ops.bitwise_and(self, other)
    def bitwise_or(self, other): return _ops.bitwise_or(self, other)
    def bitwise_xor(self, other): return _ops.bitwise_xor(self, other)
    def bitwise_not(self): return _ops.bitwise_not(self)
    def bitwise_and_(self, other): return self._via(_ops.bitwise_and, "bitwise_and_", other)
    def bitwise_or_(self, other): return self._via(_ops.bitwise_or, "bitwise_or_", other)
    def bitwise_xor_(self, other): return self._via(_ops.bitwise_xor, "bitwise_xor_", other)
    def bitwise_not_(self): return self._via(_ops.bitwise_not, "bitwise_not_")
    # ^ declines what is no tensor or number (a numpy array then computes it), as torch's
    def __xor__(self, other):
        return _ops.bitwise_xor(self, other) if _numberlike(other) else NotImplemented

    def __rxor__(self, other):
        return _ops.bitwise_xor(other, self) if _numberlike(other) else NotImplemented

    def __ixor__(self, other): return self.bitwise_xor_(other)
    def angle(self): return _ops.angle(self)

    @property
    def real(self):
        """A real tensor's real part: itself, as torch's."""
        return self

    @property
    def imag(self):
        return _ops.imag(self)

    def bitwise_left_shift(self, other): return _ops.bitwise_left_shift(self, other)
    def bitwise_right_shift(self, other): return _ops.bitwise_right_shift(self, other)
    def bitwise_left_shift_(self, other):
        _ops._check_inplace("bitwise_left_shift_", self, other)
        return self._via(_ops.bitwise_left_shift, "bitwise_left_shift_", other)

    def bitwise_right_shift_(self, other):
        _ops._check_inplace("bitwise_right_shift_", self, other)
        return self._via(_ops.bitwise_right_shift, "bitwise_right_shift_", other)

    # << and >>: Python's TypeError for an operand that is no tensor or number, as torch's
    def _shift(self, fn, a, b, other):
        return fn(a, b) if isinstance(other, (_C.TensorBase, int, float)) else NotImplemented

    def __lshift__(self, other): return self._shift(_ops.bitwise_left_shift, self, other, other)
    def __rlshift__(self, other): return self._shift(_ops.bitwise_left_shift, other, self, other)
    def __rshift__(self, other): return self._shift(_ops.bitwise_right_shift, self, other, other)
    def __rrshift__(self, other): return self._shift(_ops.bitwise_right_shift, other, self, other)

    def __ilshift__(self, other):
        return self.bitwise_left_shift_(other) if isinstance(other, (_C.TensorBase, int, float)) \
            else NotImplemented

    def __irshift__(self, other):
        return self.bitwise_right_shift_(other) if isinstance(other, (_C.TensorBase, int, float)) \
            else NotImplemented

    # & | ~ on integer tensors are bitwise, as torch's (bool ones stay the C logical kernels);
    # so are bool tensors with an integer (or float) number: True & -1 is int64 1, as torch's
    def _bitwise_ints(self, other=None):
        if self.dtype is not bool_:
            return True
        if isinstance(other, _C.TensorBase):
            return other.dtype is not bool_
        return isinstance(other, (int, float)) and not isinstance(other, bool)

    def __and__(self, other):
        return _ops.bitwise_and(self, other) if self._bitwise_ints(other) else _C.TensorBase.__and__(self, other)

    def __rand__(self, other):
        return _ops.bitwise_and(other, self) if self._bitwise_ints(other) else _C.TensorBase.__rand__(self, other)

    def __or__(self, other):
        return _ops.bitwise_or(self, other) if self._bitwise_ints(other) else _C.TensorBase.__or__(self, other)

    def __ror__(self, other):
        return _ops.bitwise_or(other, self) if self._bitwise_ints(other) else _C.TensorBase.__ror__(self, other)

    def __invert__(self):
        return _ops.bitwise_not(self) if self._bitwise_ints() else _C.TensorBase.__invert__(self)
    def signbit(self): return _ops.signbit(self)
    def sgn(self): return _ops.sgn(self)
    def sgn_(self): return self._via(_ops.sgn, "sgn_")
    def logit(self, eps=None): return _ops.logit(self, eps)
    def logit_(self, eps=None): return self._via(_ops.logit, "logit_", eps)
    def erfinv(self): return _ops.erfinv(self)
    def erfinv_(self): return self._via(_ops.erfinv, "erfinv_")
    def lgamma(self): return _ops.lgamma(self)
    def lgamma_(self): return self._via(_ops.lgamma, "lgamma_")
    def digamma(self): return _ops.digamma(self)
    def digamma_(self): return self._via(_ops.digamma, "digamma_")
    # special functions and number functions (symtrace/_ops/special_*.py, numeric.py)
    def erfc(self): return _ops.erfc(self)
    def erfc_(self): return self._via(_ops.erfc, "erfc_")
    def i0(self): return _ops.i0(self)
    def i0_(self): return self._via(_ops.i0, "i0_")
    def polygamma(self, n): return _ops.polygamma(n, self)
    def polygamma_(self, n): return self._via(lambda x: _ops.polygamma(n, x), "polygamma_")
    def mvlgamma(self, p): return _ops.mvlgamma(self, p)
    def mvlgamma_(self, p): return self._via(_ops.mvlgamma, "mvlgamma_", p)
    def igamma(self, other): return _ops.igamma(self, other)
    def igamma_(self, other): return self._via(_ops.igamma, "igamma_", other)
    def igammac(self, other): return _ops.igammac(self, other)
    def igammac_(self, other): return self._via(_ops.igammac, "igammac_", other)
    @_dyn_inline
    def isposinf(self): return _ops.isposinf(self)
    @_dyn_inline
    def isneginf(self): return _ops.isneginf(self)
    @_dyn_inline
    def isreal(self): return _ops.isreal(self)
    def fmax(self, other): return _ops.fmax(self, other)
    def fmin(self, other): return _ops.fmin(self, other)
    def nextafter(self, other): return _ops.nextafter(self, other)
    def nextafter_(self, other): return self._via(_ops.nextafter, "nextafter_", other)
    def ldexp(self, other): return _ops.ldexp(self, other)
    def ldexp_(self, other): return self._via(_ops.ldexp, "ldexp_", other)
    def frexp(self): return _ops.frexp(self)
    def gcd(self, other): return _ops.gcd(self, other)
    def gcd_(self, other): return self._via(_ops.gcd, "gcd_", other)
    def lcm(self, other): return _ops.lcm(self, other)
    def lcm_(self, other): return self._via(_ops.lcm, "lcm_", other)
    def is_same_size(self, other): return _ops.is_same_size(self, other)
    def is_signed(self): return _ops.is_signed(self)
    def is_complex(self): return False
    def nelement(self): return self.numel()
    def ndimension(self): return self.dim()
    def multiply(self, other): return _ops.mul(self, other)
    def multiply_(self, other): return self.mul_(other)
    def subtract(self, other, *, alpha=1): return _ops.sub(self, other, alpha=alpha)
    def subtract_(self, other, *, alpha=1): return self.sub_(other, alpha=alpha)
    def divide(self, other, *, rounding_mode=None): return _ops.div(self, other, rounding_mode=rounding_mode)

    def divide_(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return self.div_(other)
        return self._via(_ops.div, "divide_", other, rounding_mode=rounding_mode)

    def negative(self): return _ops.neg(self)
    def negative_(self): return self.neg_()
    def greater(self, other): return _ops.gt(self, other)
    def less(self, other): return _ops.lt(self, other)
    def not_equal(self, other): return _ops.ne(self, other)
    def greater_equal(self, other): return _ops.ge(self, other)
    def less_equal(self, other): return _ops.le(self, other)
    def absolute(self): return _ops.abs(self)
    def absolute_(self): return self.abs_()
    def positive(self): return _ops.positive(self)

    # ---- more torch methods over the functional ops (symtrace/_ops/extras.py, statistics.py) ----
    def addmv(self, mat, vec, *, beta=1, alpha=1): return _ops.addmv(self, mat, vec, beta=beta, alpha=alpha)
    def addr(self, vec1, vec2, *, beta=1, alpha=1): return _ops.addr(self, vec1, vec2, beta=beta, alpha=alpha)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return _ops.addbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def diagflat(self, offset=0): return _ops.diagflat(self, offset)
    def bincount(self, weights=None, minlength=0): return _ops.bincount(self, weights, minlength)
    def histc(self, bins=100, min=0, max=0): return _ops.histc(self, bins, min, max)

    def histogram(self, bins=100, *, range=None, weight=None, density=False):
        return _ops.histogram(self, bins, range=range, weight=weight, density=density)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        return _ops.cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self): return _ops.corrcoef(self)
    def renorm(self, p, dim, maxnorm): return _ops.renorm(self, p, dim, maxnorm)
    def narrow_copy(self, dimension, start, length): return _ops.narrow_copy(self, dimension, start, length)

    def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
        return _ops.slice_scatter(self, src, dim, start, end, step)

    def index_reduce(self, dim, index, source, reduce, *, include_self=True):
        return _ops.index_reduce(self, dim, index, source, reduce, include_self=include_self)

    def sum_to_size(self, *size):
        """sum_to_size(*size): self summed down to size (which self's shape must broadcast
        from: leading dims summed away, dims of size 1 summed with keepdim); self itself when
        the shapes are equal; as torch's."""
        if len(size) == 1 and isinstance(size[0], (list, tuple)):
            size = tuple(size[0])
        size, shape = tuple(size), tuple(self.shape)
        lead = len(shape) - len(size)
        if lead < 0 or builtins.any(s != 1 and s != shape[lead + k] for k, s in enumerate(size)):
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
        if size == shape:
            return self
        r = self.sum(tuple(range(lead))) if lead else self
        keep = tuple(k for k, s in enumerate(size) if s == 1 and r.shape[k] != 1)
        return r.sum(keep, keepdim=True) if keep else r

    def new_empty_strided(self, size, stride, dtype=None, device=None, requires_grad=False,
                          layout=None, pin_memory=False):
        return _ops.empty_strided(size, stride, dtype=dtype or self.dtype,
                                  device=self.device if device is None else device,
                                  requires_grad=requires_grad)

    def apply_(self, callable):
        """apply_(callable): every element x of self replaced by callable(x), on the host (CPU
        tensors only, one Python call per element; self must not require grad), as torch's."""
        self._host_map("apply_", callable, None)
        return self

    def map_(self, tensor, callable):
        """map_(tensor, callable): every element x of self replaced by callable(x, y), y the
        element of tensor (same dtype, broadcast to self's shape) at its position; on the host
        (CPU only), as torch's."""
        if not isinstance(tensor, _C.TensorBase):
            raise TypeError(f"map_(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
        if tensor.dtype is not self.dtype:
            raise TypeError(f"map_: expected {self.type()} for 'other' (got {tensor.type()})")
        self._host_map("map_", callable, tensor.expand(tuple(self.shape)))
        return self

    def _host_map(self, name, fn, other):
        if self.requires_grad and _C._is_grad_enabled():
            raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                               f"var.detach().{name}() instead.")
        if self.device.type != "cpu":
            raise TypeError(f"{name} is only implemented on CPU tensors")
        conv = builtins.float if self.dtype.is_floating_point else \
            (builtins.bool if self.dtype is bool_ else builtins.int)

        def cast(v):
            if not isinstance(v, (builtins.int, builtins.float, builtins.bool)) and not hasattr(v, "__float__"):
                raise TypeError(f"must be real number, not {type(v).__name__}")
            return conv(v)
        xs = self.detach().reshape(-1).tolist()
        ys = other.detach().reshape(-1).tolist() if other is not None else None
        vals = [cast(fn(x)) for x in xs] if ys is None else [cast(fn(x, y)) for x, y in zip(xs, ys)]
        if vals:
            with _no_grad():
                self.copy_(_C.tensor(vals, self.dtype).reshape(tuple(self.shape)))

    def adjoint(self): return _ops.adjoint(self)

    @property
    def H(self):
        """The conjugate transpose of a matrix: its transpose (real tensors); a 0-D tensor itself
        (deprecated, warns once), as torch's."""
        nd = self.dim()
        if nd == 0:
            import warnings
            warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().",
                          UserWarning, stacklevel=2)
            return self
        if nd != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D tensor."
                               + (" For batches of matrices, consider using tensor.mH" if nd > 2 else ""))
        return self.transpose(-2, -1)

    @property
    def is_cpu(self):
        return self._device_str == "cpu"

    def get_device(self):
        """get_device() -> int: -1 on the CPU, else the GPU's index, as torch's."""
        d = self.device
        return -1 if d.type == "cpu" else (d.index or 0)

    def is_inference(self): return False
    def is_conj(self): return False
    def is_neg(self): return False
    def conj(self): return self
    def conj_physical(self): return self
    def conj_physical_(self): return self
    def resolve_conj(self): return self
    def resolve_neg(self): return self

    def dim_order(self, *, ambiguity_check=False):
        """dim_order(*, ambiguity_check=False) -> tuple: the dims from outermost to innermost in
        memory (torch's rule: the dims sorted by stride, ties broken by size and position);
        ambiguity_check=True (or a list, which symtrace's lack of memory formats leaves empty)
        raises when the order is not unique (a size-1 dim or two equal strides); as torch's."""
        if not isinstance(ambiguity_check, builtins.bool):
            if not isinstance(ambiguity_check, list) or ambiguity_check:
                raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
        shape, strides = tuple(self.shape), tuple(self.stride())
        check = ambiguity_check if isinstance(ambiguity_check, builtins.bool) else True
        if check and (builtins.any(a == b for a, b in zip(strides, strides[1:])) or 1 in shape):
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one "
                               "of the given memory formats.")
        order, ambiguous = _dim_order(shape, strides, ambiguity_check is True)
        if ambiguous:
            raise RuntimeError("The tensor does not have unique dim order.")
        return tuple(order)

def _contiguous_in(shape, strides, order):
    """Whether strides are dense in the dim order `order` (innermost first), size-1 dims
    ignored (torch's is_contiguous for a memory format)."""
    expect = 1
    for d in order:
        if shape[d] == 1:
            continue
        if strides[d] != expect:
            return False
        expect *= shape[d]
    return True


def _dim_swap(shape, strides, a, b):
    """torch's should_swap of dims a and b (1: a is inner to b, -1: outer, 0: either)."""
    def ge(x, y):
        return y == 0 or (x != 0 and (x >= y or x % y == 0))
    sa, sb = strides[a], strides[b]
    if sa == 0 or sb == 0:
        return 0
    if sa == sb:
        return 0 if ge(shape[b], shape[a]) else 1
    if ge(sb, sa):
        return -1
    if ge(sa, sb):
        return 1
    return 0


def _dim_order(shape, strides, check=False):
    """(perm, ambiguous): torch._prims_common.compute_elementwise_output_logical_to_physical_perm
    for one tensor (ambiguous: check asked, and two neighbours of perm could swap)."""
    nd = len(shape)
    if nd == 0:
        return [], False
    if nd == 1:
        return [0], False
    numel = 1
    for s in shape:
        numel *= s
    contiguous = numel < 2 or _contiguous_in(shape, strides, range(nd - 1, -1, -1))
    cl = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}.get(nd)
    channels_last = cl is not None and _contiguous_in(shape, strides, cl)
    if contiguous and not channels_last:
        return list(range(nd)), False
    if channels_last and not contiguous:
        return [0, *range(2, nd), 1], False

    perm = list(reversed(range(nd)))
    for i in range(1, nd):
        d1 = i
        for d0 in reversed(range(i)):
            c = _dim_swap(shape, strides, perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    ambiguous = check and builtins.any(_dim_swap(shape, strides, perm[i], perm[i + 1]) != -1
                                       for i in range(nd - 1))
    return list(reversed(perm)), ambiguous


def _one_mask(key):
    """key indexes with exactly one tensor, a bool or uint8 mask (torch's setitem then
    runs masked_fill for a one-element value)."""
    parts = key if isinstance(key, tuple) else (key,)
    idx = [k for k in parts if isinstance(k, (_C.TensorBase, list))]
    return len(idx) == 1 and isinstance(idx[0], _C.TensorBase) and idx[0].dtype in (bool_, uint8)


def _setitem_functional(t, key, value):
    """t[key] = value where it cannot write into a view of t: index tensors or lists
    in key (any number of them, with masks, ints, slices, None, Ellipsis), or a mask
    with a value of several elements. The positions key selects come from
    _C._index_positions (O(selected): the same placement, checks and errors as
    t[key]); value (leading ones dropped, as torch's setitem does) is broadcast to their
    shape and scattered there, one in-place write of t (its version and history as
    torch's: a CopySlices node when t needs grad, or value does). Without autograd the
    write costs O(selected). A position named twice gets one of its values (torch:
    unspecified). Called from the C __setitem__ (frontend/indexing.c)."""
    if t.requires_grad and t.grad_fn is None and _C._is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    pos = _C._index_positions(t, key)
    if isinstance(value, _C.TensorBase) and not (value.numel() == 1 and _one_mask(key)):
        # index_put_'s check (a one-element value under a single mask is torch's masked_fill)
        _mem_overlap.check_none("index_put_", t, (value,))
    if isinstance(value, _C.TensorBase):
        v = value.to(t.dtype) if value.dtype != t.dtype else value
        if v.device != t.device:
            v = v.to(t.device)
    else:
        v = _ops.full((), value, dtype=t.dtype, device=t.device) if isinstance(value, (int, float, bool)) \
            else _C.tensor(value, t.dtype)
    while v.dim() > 0 and v.shape[0] == 1:     # leading ones go, as torch's slicePrefix1sSize
        v = v.reshape(tuple(v.shape[1:]))
    try:
        v = v.expand(tuple(pos.shape))
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} "
                           f"cannot be broadcast to indexing result of shape {list(pos.shape)}") from None
    _ops._put_flat_(t, pos.reshape(-1), v.reshape(-1))


_no_grad = _ops._no_grad


def _addr_rows(o, a, b, beta, alpha):
    """addr's value element by element (o, a, b of one shape), as _ops.addr computes it."""
    prod = _ops.mul(a if alpha == 1 else _ops.mul(a, alpha), b)
    if beta == 0:
        return prod
    return _ops.add(o if beta == 1 else _ops.mul(o, beta), prod)

# in-place ops through Tensor._via that torch runs with no TensorIterator overlap check
_NOT_ELEMENTWISE = frozenset(("addmm_", "addmv_", "addr_", "addbmm_", "baddbmm_", "renorm_",
                              "index_reduce_", "cumsum_", "tril_", "triu_"))


def _inplace_of(name):
    out_of_place = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        return self._via(out_of_place, name + "_", *args, **kwargs)
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"{name}_(...): self = self.{name}(...), in place (as torch's)."
    return method


# in-place forms of out-of-place methods, as torch's: self = op(self, ...) (comparisons
# store their bools in self's dtype)
for _name in ("addmm", "addmv", "addr", "addbmm", "renorm", "index_reduce",
              "baddbmm", "ceil", "clip", "cos", "cumsum", "eq", "erf", "floor",
              "floor_divide", "ge", "greater", "greater_equal", "gt", "le", "less",
              "less_equal", "logical_and", "logical_not", "logical_or", "lt", "ne",
              "not_equal", "pow", "remainder", "round", "sign", "sin"):
    if not hasattr(Tensor, _name + "_"):
        setattr(Tensor, _name + "_", _inplace_of(_name))
del _name


_C._set_tensor_class(Tensor)
