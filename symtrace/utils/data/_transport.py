"""How DataLoader workers send objects holding symtrace tensors to the main process.

Plain pickle (Tensor.__reduce_ex__) writes a view's whole storage, as torch's
does, and a dataset's samples are often views of one large tensor (TensorDataset
rows), so dumps() pickles with a persistent_id that replaces every tensor by a record
(class, dtype, shape, requires_grad, device, raw bytes of its elements in
row-major order) and loads() rebuilds a fresh contiguous tensor from it. Both
ends are on the same machine, so the bytes need no byte-order handling. A tensor
object that occurs several times in one object comes back as one object; distinct
tensors sharing memory (views) come back as independent copies. Gradient history
does not cross: a tensor comes back as a leaf with its requires_grad flag.
Parameters and other Tensor subclasses come back as their class (it must be
importable by the receiver). No shared memory is used: the bytes travel through
the multiprocessing queue's pipe.

Also used to hand the dataset / collate_fn / worker_init_fn to workers started
with 'spawn' or 'forkserver' (under 'fork' the child inherits them as they are).
"""
import ctypes
import io
import pickle

from ... import _C

__all__ = ["dumps", "loads"]


def _tensor_record(t):
    from ..._tensor import Tensor
    cls = type(t)
    kind = None if cls is Tensor or cls is _C.TensorBase else cls
    dev = t._device_str
    src = t.detach()
    if dev != "cpu":
        from ... import _ops
        src = _ops.to_device(src, "cpu")
    src = src.contiguous()
    n = src.numel() * src.element_size()
    raw = ctypes.string_at(src.data_ptr(), n) if n else b""
    return (kind, src.dtype, tuple(int(s) for s in src.shape), bool(t.requires_grad), dev, raw)


def _rebuild(kind, dtype, shape, requires_grad, dev, raw):
    t = _C.empty(shape, dtype)
    if raw:
        ctypes.memmove(t.data_ptr(), raw, len(raw))
    if dev != "cpu":
        from ... import _ops
        t = _ops.to_device(t, dev)
    if kind is None:
        return t.requires_grad_(True) if requires_grad else t
    from ...nn.parameter import Parameter
    if kind is Parameter:
        return Parameter(t, requires_grad)
    return _C._make_subclass(kind, t, requires_grad)


class _Pickler(pickle.Pickler):
    def __init__(self, f):
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self._ids = {}
        self._keep = []      # keeps the tensors alive so their ids stay unique

    def persistent_id(self, obj):
        if not isinstance(obj, _C.TensorBase):
            return None
        n = self._ids.get(id(obj))
        if n is not None:
            return ("ref", n)
        n = self._ids[id(obj)] = len(self._keep)
        self._keep.append(obj)
        return ("tensor", n, _tensor_record(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, f):
        super().__init__(f)
        self._tensors = {}

    def persistent_load(self, pid):
        if pid[0] == "ref":
            return self._tensors[pid[1]]
        t = self._tensors[pid[1]] = _rebuild(*pid[2])
        return t


def dumps(obj):
    buf = io.BytesIO()
    _Pickler(buf).dump(obj)
    return buf.getvalue()


def loads(data):
    return _Unpickler(io.BytesIO(data)).load()
