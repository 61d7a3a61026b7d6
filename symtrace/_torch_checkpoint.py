"""PyTorch checkpoints, with no torch installed: symtrace.load reads files written by
torch.save (pretrained weights, state_dicts and optimizer state come straight into
symtrace tensors), and symtrace.save (format="torch", its default) writes torch.save's
zip layout, which torch.load reads with weights_only=True (and mmap=True: storages are
64-byte aligned as torch aligns them); a tensor subclass is written as torch.save
writes one (_rebuild_from_type_v2 naming the class).

Two layouts, as torch.load reads them:
- the zip archive (torch >= 1.6's default): <root>/data.pkl pickles the object with
  every storage replaced by a persistent id ('storage', torch.<T>Storage, key,
  location, numel); <root>/data/<key> holds its raw little-endian elements;
- the legacy stream (torch.save(..., _use_new_zipfile_serialization=False) and
  files from torch < 1.6): a magic number, a protocol number, a system-info dict,
  the object's pickle (persistent ids ('storage', torch.<T>Storage, key, location,
  numel, view)), the list of storage keys, then per key its element count (int64)
  and its raw elements.

The pickle names torch's globals (torch._utils._rebuild_tensor_v2,
torch.FloatStorage, torch.bfloat16, torch.device, torch.Size,
torch.nn.parameter.Parameter, ...); find_class maps each to its symtrace
counterpart. Tensors are views of their storage (as in torch), so tensors that
shared a storage still share memory. weights_only=True (the default) allows only
these names, the builtin containers of symtrace.save's allowlist and
add_safe_globals' entries. Storages whose dtype symtrace lacks (complex,
quantized, float8, unsigned 16-64 bit) raise an error naming the storage type.
"""
import collections
import io
import pickle
import struct
import sys

from . import _C
from ._dtype import float32, float64, float16, bfloat16, uint8, int8, int16, int32, int64, bool_

_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
_LEGACY_PROTOCOL = 1001

_STORAGE_DTYPES = {
    "FloatStorage": float32, "DoubleStorage": float64, "HalfStorage": float16,
    "BFloat16Storage": bfloat16, "ByteStorage": uint8, "CharStorage": int8,
    "ShortStorage": int16, "IntStorage": int32, "LongStorage": int64, "BoolStorage": bool_,
}
_DTYPE_NAMES = {
    "float32": float32, "float": float32, "float64": float64, "double": float64,
    "float16": float16, "half": float16, "bfloat16": bfloat16, "uint8": uint8,
    "int8": int8, "int16": int16, "short": int16, "int32": int32, "int": int32,
    "int64": int64, "long": int64, "bool": bool_,
}


class _StorageType:
    """What a GLOBAL torch.<T>Storage unpickles to: the storage's element dtype."""
    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class CheckpointError(Exception):
    """A torch checkpoint symtrace cannot read (the caller words the message)."""


def _rebuild_tensor(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                    metadata=None):
    t = storage.as_strided(tuple(size), tuple(stride), int(storage_offset))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn.parameter import Parameter
    return Parameter(data, bool(requires_grad))


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad)
    if isinstance(state, dict):
        p.__dict__.update(state)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    t = func(*args)
    if new_type is not None and not isinstance(t, new_type):
        t = _C._make_subclass(new_type, t.detach(), t.requires_grad)
    if isinstance(state, tuple) and len(state) == 2:
        state = state[0]
    if isinstance(state, dict) and state:
        t.__dict__.update(state)
    return t


def _torch_globals():
    from ._tensor import device, Tensor
    from .nn.parameter import Parameter
    g = {
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.device": device,
        "torch.Size": _C.Size,
        "torch.Tensor": Tensor,
        "torch.nn.parameter.Parameter": Parameter,
    }
    for name, dt in _STORAGE_DTYPES.items():
        g["torch." + name] = _StorageType(name, dt)
    for name, dt in _DTYPE_NAMES.items():
        g["torch." + name] = dt
    return g


_GLOBALS = None


def _lookup(module, name, weights_only):
    """The symtrace object for a pickled global, or None where the caller decides."""
    global _GLOBALS
    if _GLOBALS is None:
        _GLOBALS = _torch_globals()
    from . import serialization as ser
    import _compat_pickle
    if (module, name) in _compat_pickle.NAME_MAPPING:         # Python 2 names (protocol 2, as torch's)
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    full = f"{module}.{name}"
    obj = _GLOBALS.get(full)
    if obj is not None:
        return obj
    if module == "torch" and name.endswith("Storage"):
        return _StorageType(name, None)        # refused when a storage of it is read
    if module == "torch" or module.startswith("torch."):
        raise CheckpointError(f"it uses the PyTorch global {full}, which has no symtrace counterpart")
    if weights_only:
        obj = ser._ALLOWED.get(full)
        if obj is None:
            obj = ser._safe_globals.get(full)
        if obj is None:
            raise ser._unsupported_global(full)
        return obj
    return None


def _unpickler(fh, persistent_load, weights_only, pickle_module, pickle_load_args):
    base = pickle.Unpickler if weights_only else pickle_module.Unpickler

    class _Unpickler(base):
        def find_class(self, module, name):
            obj = _lookup(module, name, weights_only)
            if obj is None:
                return super().find_class(module, name)
            return obj

    u = _Unpickler(fh, **pickle_load_args)
    u.persistent_load = persistent_load
    return u


def _storage_pid(pid):
    """(storage type, key, location, numel) of a torch storage persistent id."""
    if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
        raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
    stype, key, location, numel = pid[1:5]
    if not isinstance(stype, _StorageType):
        raise pickle.UnpicklingError(f"bad storage type in persistent id {pid!r}")
    if stype.dtype is None:
        raise CheckpointError(f"it holds a torch.{stype.name}, whose dtype symtrace does not have")
    if not (isinstance(numel, int) and numel >= 0 and isinstance(location, str)):
        raise pickle.UnpicklingError(f"bad storage persistent id {pid!r}")
    return stype, str(key), location, numel


def fill(t, src_read, nbytes, what):
    """Reads nbytes into the CPU tensor t's memory through src_read(memoryview)."""
    import ctypes
    if not nbytes:
        return
    dst = memoryview((ctypes.c_char * nbytes).from_address(t.data_ptr())).cast("B")
    got = 0
    while got < nbytes:
        r = src_read(dst[got:])
        if not r:
            raise CheckpointError(f"{what} is truncated")
        got += r
    if sys.byteorder != "little" and t.element_size() > 1:  # pragma: no cover
        import numpy as np
        np.frombuffer(dst, dtype=f"u{t.element_size()}").byteswap(inplace=True)


def is_torch_zip(names):
    return any(n.endswith("/data.pkl") for n in names) and any(
        n.endswith("/version") or n.endswith("/.data/version") for n in names)


def load_zip(zf, map_location, weights_only, pickle_module, pickle_load_args):
    from .serialization import _place
    names = zf.namelist()
    pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if not pkl:
        raise CheckpointError("no <root>/data.pkl record")
    prefix = pkl[0][: -len("data.pkl")]
    if prefix + "byteorder" in names and zf.read(prefix + "byteorder") != b"little":
        raise CheckpointError("big-endian storages")
    storages = {}

    def persistent_load(pid):
        stype, key, location, numel = _storage_pid(pid)
        s = storages.get(key)
        if s is not None:
            return s
        name = f"{prefix}data/{key}"
        try:
            info = zf.getinfo(name)
        except KeyError:
            raise CheckpointError(f"missing record {name}") from None
        t = _C.empty((numel,), stype.dtype)
        nbytes = numel * t.element_size()
        if info.file_size < nbytes:
            raise CheckpointError(f"record {name} holds {info.file_size} bytes, expected {nbytes} "
                                  f"({numel} x {stype.name})")
        with zf.open(info) as src:
            fill(t, src.readinto, nbytes, f"record {name}")
        s = storages[key] = _place(t, location, map_location)
        return s

    data = zf.read(prefix + "data.pkl")
    return _unpickler(io.BytesIO(data), persistent_load, weights_only, pickle_module,
                      pickle_load_args).load()


class _Plain(pickle.Unpickler):
    """The legacy stream's own records (numbers, a dict, a list of keys): no globals."""
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"unexpected global {module}.{name} in a torch.save header")


def is_legacy(fh):
    """True when fh (at its start) begins with torch's legacy magic number."""
    pos = fh.tell()
    try:
        return _Plain(fh).load() == _LEGACY_MAGIC
    except Exception:
        return False
    finally:
        fh.seek(pos)


def load_legacy(fh, map_location, weights_only, pickle_module, pickle_load_args):
    from .serialization import _place
    plain = _Plain
    if plain(fh).load() != _LEGACY_MAGIC:
        raise CheckpointError("not a legacy torch.save stream")
    if plain(fh).load() != _LEGACY_PROTOCOL:
        raise CheckpointError("unsupported legacy protocol version")
    info = plain(fh).load()
    if isinstance(info, dict) and not info.get("little_endian", True):
        raise CheckpointError("big-endian storages")
    start = fh.tell()
    cpu = {}            # key -> (storage type, CPU tensor), filled after the object's pickle

    def first_pass(pid):
        stype, key, location, numel = _storage_pid(pid)
        if len(pid) > 5 and pid[5] is not None:
            raise CheckpointError("storage views (files from torch < 0.4)")
        if key not in cpu:
            cpu[key] = (stype, _C.empty((numel,), stype.dtype), location)
        return cpu[key][1]

    obj = _unpickler(fh, first_pass, weights_only, pickle_module, pickle_load_args).load()
    keys = plain(fh).load()
    for key in keys:
        key = str(key)
        if key not in cpu:
            raise CheckpointError(f"storage {key} is listed but not used")
        stype, t, _ = cpu[key]
        head = fh.read(8)
        if len(head) != 8:
            raise CheckpointError(f"storage {key} is truncated")
        (numel,) = struct.unpack("<q", head)
        if numel != t.numel():
            raise CheckpointError(f"storage {key} holds {numel} elements, expected {t.numel()}")
        fill(t, fh.readinto, numel * t.element_size(), f"storage {key}")
    if map_location is None and all(loc == "cpu" for _, _, loc in cpu.values()):
        return obj
    # The object's tensors are views of CPU storages; placing them elsewhere reads
    # the pickle again with the filled storages moved where map_location says.
    placed = {k: _place(t, loc, map_location) for k, (_, t, loc) in cpu.items()}
    fh.seek(start)
    return _unpickler(fh, lambda pid: placed[str(_storage_pid(pid)[1])], weights_only, pickle_module,
                      pickle_load_args).load()


# ---------------------------------------------------------------- writing torch's zip layout
class _Global:
    """A torch global written by name (GLOBAL 'module name'), with no torch import."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args, **kwargs):      # pickle wants a callable; only its name is written
        raise TypeError(f"{self.module}.{self.name} is a name written into torch checkpoints")


_G_REBUILD = _Global("torch._utils", "_rebuild_tensor_v2")
_G_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_G_PARAMETER_STATE = _Global("torch._utils", "_rebuild_parameter_with_state")
_G_FROM_TYPE = _Global("torch._tensor", "_rebuild_from_type_v2")
_G_TENSOR = _Global("torch", "Tensor")
_G_DEVICE = _Global("torch", "device")
_G_SIZE = _Global("torch", "Size")
_STORAGE_NAME = {dt: name for name, dt in _STORAGE_DTYPES.items()}


class _StorageRef:
    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid


def _torch_pickler(buf, tensor_ref, protocol):
    """A pure-Python pickler (it can write any GLOBAL name) that writes tensors,
    dtypes, devices and sizes as torch.save does."""
    from ._tensor import device
    from .nn.parameter import Parameter

    class _Pickler(pickle._Pickler):
        dispatch = pickle._Pickler.dispatch.copy()

        def save_torch_global(self, obj):
            self.write(pickle.GLOBAL + obj.module.encode("utf-8") + b"\n" + obj.name.encode("utf-8") + b"\n")
            self.memoize(obj)
        dispatch[_Global] = save_torch_global

        def save_dtype(self, obj):
            self.save_torch_global(_Global("torch", _dtype_torch_name(obj)))
            self.memoize(obj)
        dispatch[_C.dtype] = save_dtype

        def persistent_id(self, obj):
            return obj.pid if isinstance(obj, _StorageRef) else None

        def reducer_override(self, obj):
            args = tensor_ref(obj) if isinstance(obj, _C.TensorBase) else None
            if args is not None:
                attrs = getattr(obj, "__dict__", None) or {}
                if type(obj) is Parameter:
                    data = _Reduced((_G_REBUILD, args))
                    if attrs:
                        return (_G_PARAMETER_STATE, (data, bool(obj.requires_grad), collections.OrderedDict(),
                                                     dict(attrs)))
                    return (_G_PARAMETER, (data, bool(obj.requires_grad), collections.OrderedDict()))
                if not _plain_tensor(obj):
                    # a subclass as torch.save writes one: rebuilt as a tensor, then made an
                    # instance of the class, pickled by its own name (a load with
                    # weights_only=True wants it allowlisted, as torch.load does)
                    return (_G_FROM_TYPE, (_G_REBUILD, type(obj), args, dict(attrs)))
                if attrs:
                    return (_G_FROM_TYPE, (_G_REBUILD, _G_TENSOR, args, dict(attrs)))
                return (_G_REBUILD, args)
            if isinstance(obj, _Reduced):
                return obj.rv
            if isinstance(obj, device):
                return (_G_DEVICE, (str(obj),))
            if isinstance(obj, _C.Size):
                return (_G_SIZE, (tuple(int(n) for n in obj),))
            return NotImplemented

    return _Pickler(buf, protocol=protocol)


class _Reduced:
    """An object that pickles as the given (callable, args) pair."""
    __slots__ = ("rv",)

    def __init__(self, rv):
        self.rv = rv


def _plain_tensor(t):
    from ._tensor import Tensor
    return type(t) is Tensor or type(t) is _C.TensorBase


def _dtype_torch_name(dt):
    for name in ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64", "bool"):
        if _DTYPE_NAMES[name] == dt:
            return name
    raise pickle.PicklingError(f"dtype {dt} has no torch counterpart")


def dumps(obj, tensors, tmeta, smeta, protocol=2):
    """data.pkl in torch's layout: tensors (collected beforehand, numbered as tmeta)
    rebuilt from storages named by their index in smeta."""
    index = {id(t): i for i, t in enumerate(tensors)}
    refs = {}

    def storage_ref(k):
        r = refs.get(k)
        if r is None:
            m = smeta[k]
            name = _STORAGE_NAME[_DTYPE_NAMES[m["dtype"]]]
            r = refs[k] = _StorageRef(("storage", _Global("torch", name), str(k), m["location"], m["numel"]))
        return r

    def tensor_ref(t):
        """_rebuild_tensor_v2's arguments for t, or None for a tensor pickled by reduce."""
        i = index.get(id(t))
        if i is None:
            return None
        m = tmeta[i]
        shape = tuple(m["shape"])
        stride = m["stride"]
        if stride is None:
            stride, acc = [], 1
            for n in reversed(shape):
                stride.append(acc)
                acc *= max(n, 1)
            stride = stride[::-1]
        from .nn.parameter import Parameter
        rg = bool(m["requires_grad"]) and type(t) is not Parameter   # a Parameter's is _rebuild_parameter's
        return (storage_ref(m["storage"]), m["offset"], shape, tuple(stride), rg, collections.OrderedDict())

    buf = io.BytesIO()
    _torch_pickler(buf, tensor_ref, protocol).dump(obj)
    return buf.getvalue()


def write_archive(fh, root, data_pkl, sources, host_bytes):
    """torch's zip layout: <root>/data.pkl, byteorder, version, and each storage at
    <root>/data/<k>, its data aligned to 64 bytes in the file as torch writes it."""
    import zipfile
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(root + "/data.pkl", data_pkl)
        zf.writestr(root + "/.format_version", "1")
        zf.writestr(root + "/.storage_alignment", "64")
        zf.writestr(root + "/byteorder", "little")
        for k, src in enumerate(sources):
            buf, owner = host_bytes(src)
            name = f"{root}/data/{k}"
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.file_size = len(buf)
            head = 30 + len(name.encode("utf-8")) + 4 + (20 if len(buf) > zipfile.ZIP64_LIMIT else 0)
            pad = -(zf.fp.tell() + head) % 64
            info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            with zf.open(info, "w") as out:
                out.write(buf)
            del buf, owner
        zf.writestr(root + "/version", "3\n")
        zf.writestr(root + "/.data/version", "3\n")
