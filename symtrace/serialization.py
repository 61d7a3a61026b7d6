"""symtrace.save / symtrace.load: checkpoints of tensors, state_dicts, optimizer
state and nested Python containers, as torch.save / torch.load.

Formats: save writes torch.save's zip layout by default (format="torch", written by
_torch_checkpoint.py: torch.load(weights_only=True) reads it, pickle protocol 2 as
torch's); format="symtrace" writes symtrace's own layout, below. load reads both, and
torch.save's files.

symtrace's own layout (a zip archive, entries stored uncompressed, all under "archive/"):

    archive/symtrace_format   "symtrace.save <version>" (what symtrace.load looks for)
    archive/byteorder         "little"
    archive/data.pkl          the pickled object, every tensor, dtype and device in it
                              replaced by a persistent id: ("tensor", i), ("dtype", name),
                              ("device", "cuda:0")
    archive/tensors.json      the tensor table: per tensor its storage, storage offset,
                              shape, strides (null: contiguous), requires_grad and class
                              (Tensor, Parameter or module:qualname of a subclass); per
                              storage its dtype, element count and device ("location")
    archive/data/<k>          storage k: its raw elements, little-endian (bfloat16 and
                              float16 as their 2-byte patterns, bool as one byte 0/1)

Sharing: a tensor object that occurs several times in the saved object comes back
as one object. Distinct tensors sharing one storage (views of one another, tied
weights, several detach() of one parameter) are saved as one record covering the
part of the storage they use, and come back as views of one new storage, so they
still share memory (with their saved strides and relative offsets). A tensor whose
storage nothing else in the object uses is saved with only its own elements: a
dense permutation of them (x.t()) keeps its strides, as torch's, a strided slice
or an expanded tensor comes back as a contiguous copy.
Sharing is per save() call, as in torch.

Devices: CUDA tensors are saved from host copies and come back on their device
unless map_location says otherwise: a device ('cpu', 'cuda:1', symtrace.device),
a dict {saved location: target location}, or a callable(storage, location)
given each storage as a 1-D CPU tensor and returning the tensor to use (or None
for the default). Loading onto CUDA without a usable GPU raises RuntimeError.

weights_only=True (the default, as torch >= 2.6) unpickles with an allowlist:
builtin containers and scalars, OrderedDict / Counter, and the persistent ids above
(tensors, dtypes, devices never go through pickle globals). Anything else raises
pickle.UnpicklingError; add_safe_globals / safe_globals extend the allowlist.

Writing to a path is atomic: the archive is written to a temporary file in the
same directory, fsync'ed, then renamed over the destination (os.replace), so a
crash or an exception leaves either the old file or the new one, never a partial
one. symtrace.load also reads PyTorch checkpoints (torch.save's zip and legacy
layouts) without torch: see _torch_checkpoint.py. Not supported: mmap=True.
"""
import _compat_pickle
import codecs
import collections
import contextlib
import ctypes
import io
import json
import math
import os
import pickle
import secrets
import sys
import zipfile

from . import _C, _torch_checkpoint
from ._dtype import float32, float64, float16, bfloat16, uint8, int8, int16, int32, int64, bool_

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "DEFAULT_PROTOCOL", "FORMAT_VERSION"]

DEFAULT_PROTOCOL = 2      # torch.serialization.DEFAULT_PROTOCOL: torch.load(weights_only=True) reads no FRAME
FORMAT_VERSION = 1
_MAGIC = "symtrace.save"
_PREFIX = "archive/"
_MARKER = "symtrace_format"

_DTYPES = {"float32": float32, "float64": float64, "float16": float16, "bfloat16": bfloat16,
           "uint8": uint8, "int8": int8, "int16": int16,
           "int32": int32, "int64": int64, "bool": bool_}
_DTYPE_NAME = {v: k for k, v in _DTYPES.items()}
_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "bool": 1}


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _dtype_name(dt):
    try:
        return _DTYPE_NAME[dt]
    except KeyError:
        raise TypeError(f"symtrace.save: unsupported dtype {dt}") from None


# ---------------------------------------------------------------- safe globals
_safe_globals = {}


def _global_name(obj):
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals):
    """Allowlists classes/functions for weights_only load: a list of objects, or of
    (object, "module.name") pairs for objects pickled under another name."""
    for g in safe_globals:
        if isinstance(g, tuple):
            obj, name = g
        else:
            obj, name = g, _global_name(g)
        _safe_globals[name] = obj


def get_safe_globals():
    return list(_safe_globals.values())


def clear_safe_globals():
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(globs):
    """with safe_globals([Cls]): the allowlist extended inside the block only."""
    saved = dict(_safe_globals)
    add_safe_globals(globs)
    try:
        yield
    finally:
        _safe_globals.clear()
        _safe_globals.update(saved)


_ALLOWED = {
    "collections.OrderedDict": collections.OrderedDict,
    "collections.Counter": collections.Counter,
    "_codecs.encode": codecs.encode,       # bytes under pickle protocol 2
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.complex": complex,
    "builtins.bytearray": bytearray,
    "builtins.slice": slice,
    "builtins.range": range,
    "builtins.dict": dict,
    "builtins.list": list,
    "builtins.tuple": tuple,
    "builtins.int": int,
    "builtins.float": float,
    "builtins.str": str,
    "builtins.bytes": bytes,
    "builtins.bool": bool,
}

_UNSAFE_MESSAGE = ("Re-running `symtrace.load` with `weights_only` set to `False` will likely succeed, "
                   "but it can result in arbitrary code execution. Do it only if you got the file "
                   "from a trusted source.")


def _weights_only_error(message):
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two options, "
        "do those steps only if you trust the source of the checkpoint.\n\t(1) " + _UNSAFE_MESSAGE +
        "\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps "
        "in the following error message.\n\tWeightsUnpickler error: " + message)


def _unsupported_global(full):
    return pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`symtrace.serialization.add_safe_globals([{full}])` or the "
        f"`symtrace.serialization.safe_globals([{full}])` context manager to allowlist this global "
        "if you trust this class/function.")


# ---------------------------------------------------------------- save
class _Collector:
    """The pickler's persistent_id: tensors (numbered once per object), dtypes, devices."""

    def __init__(self):
        from ._tensor import device
        self._device = device
        self.tensors = []
        self.index = {}

    def __call__(self, obj):
        if isinstance(obj, _C.TensorBase) and not getattr(type(obj), "_pickle_by_reduce", False):
            i = self.index.get(id(obj))
            if i is None:
                i = self.index[id(obj)] = len(self.tensors)
                self.tensors.append(obj)      # kept alive: ids and storage ids stay unique
            attrs = getattr(obj, "__dict__", None)
            if attrs:                         # attributes set on it travel, as torch.save keeps them
                return ("tensor", i, dict(attrs))
            return ("tensor", i)
        if isinstance(obj, _C.dtype):
            return ("dtype", _dtype_name(obj))
        if isinstance(obj, self._device):
            return ("device", str(obj))
        return None


def _span(t):
    """[lo, hi) of the storage elements a tensor with non-negative strides reads."""
    lo = t.storage_offset()
    return lo, lo + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1


def _kind(t):
    from ._tensor import Tensor
    from .nn.parameter import Parameter
    cls = type(t)
    if cls is Parameter:
        return "Parameter"
    if cls is Tensor or cls is _C.TensorBase:
        return "Tensor"
    return f"{cls.__module__}:{cls.__qualname__}"


def _plan(tensors):
    """(storage sources, storage metadata, tensor metadata): one storage per tensor,
    except tensors sharing a storage (same dtype, non-negative strides), which get
    one storage covering the union of their spans."""
    groups = {}
    for i, t in enumerate(tensors):
        key = ("solo", i) if t.numel() == 0 else (t._device_str, t._storage_id())
        groups.setdefault(key, []).append(i)
    sources, smeta, tmeta = [], [], [None] * len(tensors)

    def common(t):
        return {"requires_grad": bool(t.requires_grad), "kind": _kind(t),
                "shape": [int(n) for n in t.shape]}

    for idxs in groups.values():
        ts = [tensors[i] for i in idxs]
        shared = (len(ts) > 1 and all(t.dtype == ts[0].dtype for t in ts)
                  and all(s >= 0 for t in ts for s in t.stride()))
        if shared:
            spans = [_span(t) for t in ts]
            lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
            k = len(sources)
            sources.append(ts[0].detach().as_strided((hi - lo,), (1,), lo))
            smeta.append({"dtype": _dtype_name(ts[0].dtype), "numel": hi - lo,
                          "location": ts[0]._device_str})
            for i, t, (a, _) in zip(idxs, ts, spans):
                tmeta[i] = dict(common(t), storage=k, offset=a - lo, stride=[int(s) for s in t.stride()])
        else:
            for i, t in zip(idxs, ts):
                k = len(sources)
                lo, hi = _span(t) if t.numel() and all(s >= 0 for s in t.stride()) else (0, -1)
                if hi - lo == t.numel() and not t.is_contiguous():
                    # a dense permutation of its span (x.t()): its elements in memory order and
                    # its strides, as torch.save keeps them
                    sources.append(t.detach().as_strided((hi - lo,), (1,), lo))
                    smeta.append({"dtype": _dtype_name(t.dtype), "numel": hi - lo,
                                  "location": t._device_str})
                    tmeta[i] = dict(common(t), storage=k, offset=0, stride=[int(s) for s in t.stride()])
                    continue
                sources.append(t.detach())
                smeta.append({"dtype": _dtype_name(t.dtype), "numel": int(t.numel()),
                              "location": t._device_str})
                tmeta[i] = dict(common(t), storage=k, offset=0, stride=None)
    return sources, smeta, tmeta


def _host_bytes(t):
    """A buffer with t's elements in row-major order, little-endian, and an owner
    to keep alive while it is read."""
    if t._device_str != "cpu":
        from . import _ops
        t = _ops.to_device(t, "cpu")
    t = t.contiguous()
    n = t.numel() * t.element_size()
    if n == 0:
        return b"", t
    buf = memoryview((ctypes.c_char * n).from_address(t.data_ptr())).cast("B")
    if sys.byteorder != "little" and t.element_size() > 1:  # pragma: no cover (big-endian hosts)
        import numpy as np
        buf = np.frombuffer(buf, dtype=f"u{t.element_size()}").byteswap().tobytes()
    return buf, t


def _write_archive(fh, data_pkl, smeta, tmeta, sources):
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(_PREFIX + _MARKER, f"{_MAGIC} {FORMAT_VERSION}\n")
        zf.writestr(_PREFIX + "byteorder", "little")
        zf.writestr(_PREFIX + "data.pkl", data_pkl)
        zf.writestr(_PREFIX + "tensors.json",
                    json.dumps({"storages": smeta, "tensors": tmeta}, separators=(",", ":")))
        for k, src in enumerate(sources):
            buf, owner = _host_bytes(src)
            info = zipfile.ZipInfo(f"{_PREFIX}data/{k}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.file_size = len(buf)                   # lets zipfile pick zip64 for > 2 GiB
            with zf.open(info, "w") as out:
                out.write(buf)
            del buf, owner


def _open_temp(path):
    """A new file next to path (same directory, so os.replace is atomic), created
    with the mode an ordinary open(path, 'wb') would give it."""
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise RuntimeError(f"Parent directory {d} does not exist.")
    base = os.path.basename(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(d, f".{base}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)   # an existing file keeps its mode
        except OSError:
            pass
        return fd, tmp, d
    raise RuntimeError(f"could not create a temporary file in {d}")


def _fsync_dir(d):
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:  # pragma: no cover (platforms without directory fds)
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _write_atomic(f, write):
    """write(fh) into a temporary file next to the path f, fsync'ed, then renamed
    over it (a link's target is replaced, as open(f, "wb") writes it): a crash or
    an exception leaves the old file or the new one, never a partial one."""
    path = os.fsdecode(os.fspath(f))
    if os.path.islink(path):
        path = os.path.realpath(path)
    fd, tmp, d = _open_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(d)


def _is_path(f):
    return isinstance(f, (str, bytes, os.PathLike))


# The pickler and unpickler classes are made once per pickle module and hold their
# collector / loader on the instance: a class made per call, closing over them, was a
# reference cycle that kept every saved or loaded tensor alive until the next gc.
_PICKLERS = {}
_UNPICKLERS = {}


def _pickler_class(pickle_module):
    cls = _PICKLERS.get(pickle_module)
    if cls is None:
        class _Pickler(pickle_module.Pickler):
            def persistent_id(self, obj):
                return self.st_collect(obj)
        cls = _PICKLERS[pickle_module] = _Pickler
    return cls


def _unpickler_class(pickle_module, weights_only):
    key = (pickle_module, weights_only)
    cls = _UNPICKLERS.get(key)
    if cls is not None:
        return cls
    if weights_only:
        class _Unpickler(pickle.Unpickler):
            def find_class(self, module, name):
                if (module, name) in _compat_pickle.NAME_MAPPING:       # Python 2 names (protocol < 3)
                    module, name = _compat_pickle.NAME_MAPPING[(module, name)]
                module = _compat_pickle.IMPORT_MAPPING.get(module, module)
                full = f"{module}.{name}"
                obj = _ALLOWED.get(full)
                if obj is None:
                    obj = _safe_globals.get(full)
                if obj is None:
                    raise _unsupported_global(full)
                return obj

            def persistent_load(self, pid):
                return self.st_loader.persistent_load(pid)
        cls = _Unpickler
    else:
        class _FullUnpickler(pickle_module.Unpickler):
            def persistent_load(self, pid):
                return self.st_loader.persistent_load(pid)
        cls = _FullUnpickler
    _UNPICKLERS[key] = cls
    return cls


def save(obj, f, pickle_module=None, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         *, format="torch"):
    """save(obj, f, *, format="torch"): writes obj (tensors, state_dicts, optimizer
    state, nested dicts/lists/tuples of tensors and Python values) to f, a path or a
    writable binary file object; paths are written atomically. The default is
    torch.save's zip layout (_torch_checkpoint.py), which torch.load(weights_only=True)
    reads as well as symtrace.load; format="symtrace" writes symtrace's own layout (the
    module docstring), which symtrace.load still reads."""
    if format not in ("symtrace", "torch"):
        raise ValueError(f"symtrace.save: format must be 'symtrace' or 'torch', got {format!r}")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("symtrace.save writes only the zip format")
    pickle_module = pickle if pickle_module is None else pickle_module
    collect = _Collector()
    buf = io.BytesIO()
    pickler = _pickler_class(pickle_module)(buf, protocol=pickle_protocol)
    pickler.st_collect = collect
    pickler.dump(obj)   # errors here touch no file
    sources, smeta, tmeta = _plan(collect.tensors)
    data_pkl = buf.getvalue()
    if format == "torch":
        data_pkl = _torch_checkpoint.dumps(obj, collect.tensors, tmeta, smeta, pickle_protocol)

    def write(fh):
        if format == "torch":
            _torch_checkpoint.write_archive(fh, "archive", data_pkl, sources, _host_bytes)
        else:
            _write_archive(fh, data_pkl, smeta, tmeta, sources)
    if _is_path(f):
        _write_atomic(f, write)
    else:
        if not hasattr(f, "write"):
            raise AttributeError(f"symtrace.save: f must be a path or a writable binary file object, "
                                 f"got {type(f).__name__}")
        write(f)
        if hasattr(f, "flush"):
            f.flush()


# ---------------------------------------------------------------- load
def _name_of(f):
    if _is_path(f):
        return repr(os.fsdecode(os.fspath(f)))
    n = getattr(f, "name", None)
    return repr(n) if isinstance(n, str) else f"<{type(f).__name__}>"


def _open_zip(fh, name):
    try:
        pos = fh.tell()
        head = fh.read(8)
        fh.seek(pos)
    except (OSError, AttributeError, ValueError):
        head = b""
    try:
        zf = zipfile.ZipFile(fh, mode="r")
    except zipfile.BadZipFile:
        what = "an empty file" if head == b"" else (
            "a pickle (a legacy torch.save file or a plain pickle?)" if head[:1] == b"\x80"
            else f"a file starting with {head!r}")
        raise RuntimeError(f"symtrace.load: {name} is not a symtrace checkpoint: expected a zip archive "
                           f"written by symtrace.save, found {what}") from None
    names = zf.namelist()
    marker = [n for n in names if n.endswith("/" + _MARKER) and n.count("/") == 1]
    if not marker:
        if _torch_checkpoint.is_torch_zip(names):
            return zf, None
        zf.close()
        raise RuntimeError(f"symtrace.load: {name} is not a symtrace checkpoint: a zip archive without "
                           f"the '{_PREFIX}{_MARKER}' record that symtrace.save writes")
    prefix = marker[0][: -len(_MARKER)]
    return zf, prefix


def _check_device(target):
    from ._tensor import device
    from . import cuda
    d = device(target)
    if d.type == "cuda":
        if not cuda.is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but symtrace.cuda.is_available() is "
                "False. If you are running on a CPU-only machine, please use symtrace.load with "
                "map_location='cpu' (or map_location=symtrace.device('cpu')) to map your storages to "
                "the CPU.")
        n = cuda.device_count()
        if d.index is not None and d.index >= n:
            raise RuntimeError(
                f"Attempting to deserialize object on CUDA device {d.index} but "
                f"symtrace.cuda.device_count() is {n}. Please use symtrace.load with map_location to map "
                "your storages to an existing device.")
    return d


def _to_location(t, target):
    d = _check_device(target)
    if str(d) == t._device_str or (d.type == "cpu" and t._device_str == "cpu"):
        return t
    from . import _ops
    return _ops.to_device(t, str(d))


def _place(storage, location, map_location):
    """The storage (a 1-D CPU tensor) moved where map_location says."""
    from ._tensor import device
    if map_location is None:
        return _to_location(storage, location)
    if isinstance(map_location, (str, device)):
        return _to_location(storage, str(map_location))
    if isinstance(map_location, bytes):
        return _to_location(storage, map_location.decode())
    if isinstance(map_location, dict):
        target = map_location.get(location, location)
        return _to_location(storage, str(target))
    if callable(map_location):
        r = map_location(storage, location)
        if r is None:
            return _to_location(storage, location)
        if not _is_tensor(r):
            raise TypeError(f"map_location should return a tensor (the storage) or None, "
                            f"got {type(r).__name__}")
        return r
    raise TypeError(f"map_location should be a str, a symtrace.device, a dict or a callable, "
                    f"got {type(map_location).__name__}")


class _Corrupt(Exception):
    pass


def _read(zf, name):
    try:
        return zf.read(name)
    except KeyError:
        raise _Corrupt(f"missing record {name}") from None


class _Loader:
    def __init__(self, zf, prefix, map_location, weights_only):
        self.zf, self.prefix = zf, prefix
        self.map_location, self.weights_only = map_location, weights_only
        try:
            table = json.loads(_read(zf, prefix + "tensors.json").decode("utf-8"))
            self.smeta, self.tmeta = table["storages"], table["tensors"]
            if not (isinstance(self.smeta, list) and isinstance(self.tmeta, list)):
                raise ValueError("storages and tensors must be lists")
        except (KeyError, TypeError, ValueError) as e:
            raise _Corrupt(f"bad tensor table ({e!r})") from None
        self.storages, self.tensors = {}, {}

    def storage(self, k):
        s = self.storages.get(k)
        if s is not None:
            return s
        try:
            m = self.smeta[k]
            dt = _DTYPES[m["dtype"]]
            numel, location = m["numel"], m["location"]
            if not (isinstance(numel, int) and numel >= 0 and isinstance(location, str)):
                raise ValueError(m)
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise _Corrupt(f"bad storage entry {k} ({e!r})") from None
        nbytes = numel * _ITEMSIZE[m["dtype"]]
        try:
            info = self.zf.getinfo(f"{self.prefix}data/{k}")
        except KeyError:
            raise _Corrupt(f"missing record {self.prefix}data/{k}") from None
        if info.file_size != nbytes:          # checked before allocating anything
            raise _Corrupt(f"record {info.filename} holds {info.file_size} bytes, "
                           f"expected {nbytes} ({numel} x {m['dtype']})")
        t = _C.empty((numel,), dt)
        if nbytes:
            with self.zf.open(info) as src:
                try:
                    _torch_checkpoint.fill(t, src.readinto, nbytes, f"record {info.filename}")
                except _torch_checkpoint.CheckpointError as e:
                    raise _Corrupt(str(e)) from None
        s = self.storages[k] = _place(t, location, self.map_location)
        return s

    def tensor(self, i):
        t = self.tensors.get(i)
        if t is not None:
            return t
        try:
            m = self.tmeta[i]
            k, kind, rg = m["storage"], m["kind"], m["requires_grad"]
            shape, stride, offset = tuple(m["shape"]), m["stride"], m["offset"]
            ints = shape + (offset,) + (() if stride is None else tuple(stride))
            if not (isinstance(k, int) and 0 <= k < len(self.smeta) and isinstance(kind, str)
                    and all(isinstance(v, int) and v >= 0 for v in ints)
                    and (len(stride) == len(shape) if stride is not None else offset == 0)):
                raise ValueError(m)
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise _Corrupt(f"bad tensor entry {i} ({e!r})") from None
        base = self.storage(k)
        try:
            if stride is None:
                if math.prod(shape) != base.numel():
                    raise RuntimeError(f"shape {list(shape)} does not fit {base.numel()} elements")
                t = base.view(shape) if tuple(base.shape) != shape else base
            else:
                t = base.as_strided(shape, tuple(stride), offset)
        except RuntimeError as e:
            raise _Corrupt(f"tensor entry {i}: {e}") from None
        t = self._wrap(t, kind, bool(rg))
        self.tensors[i] = t
        return t

    def _wrap(self, t, kind, requires_grad):
        if kind == "Tensor":
            return t.requires_grad_(True) if requires_grad else t
        if kind == "Parameter":
            from .nn.parameter import Parameter
            return Parameter(t, requires_grad)
        mod, _, qual = kind.partition(":")
        full = f"{mod}.{qual}"
        if self.weights_only:
            cls = _safe_globals.get(full)
            if cls is None:
                raise _unsupported_global(full)
        else:
            import importlib
            cls = importlib.import_module(mod)
            for part in qual.split("."):
                cls = getattr(cls, part)
        if not (isinstance(cls, type) and issubclass(cls, _C.TensorBase)):
            raise pickle.UnpicklingError(f"{full} is not a symtrace.Tensor subclass")
        return _C._make_subclass(cls, t.detach(), requires_grad)

    def persistent_load(self, pid):
        from ._tensor import device
        if isinstance(pid, tuple) and len(pid) == 3 and pid[0] == "tensor" and isinstance(pid[2], dict):
            t = self.persistent_load(pid[:2])
            t.__dict__.update(pid[2])
            return t
        if isinstance(pid, tuple) and len(pid) == 2:
            tag, v = pid
            if tag == "tensor" and isinstance(v, int) and 0 <= v < len(self.tmeta):
                return self.tensor(v)
            if tag == "dtype" and v in _DTYPES:
                return _DTYPES[v]
            if tag == "device" and isinstance(v, str):
                return device(v)
        raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """load(f, map_location=None, *, weights_only=True): reads what symtrace.save wrote
    to f (a path or a readable binary file object). weights_only=True (the default)
    refuses pickled classes outside an allowlist (see add_safe_globals)."""
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if mmap:
        raise NotImplementedError("symtrace.load(mmap=True) is not supported")
    pickle_module = pickle if pickle_module is None else pickle_module
    name = _name_of(f)
    with contextlib.ExitStack() as stack:
        if _is_path(f):
            fh = stack.enter_context(open(os.fspath(f), "rb"))
        else:
            if not hasattr(f, "read"):
                raise AttributeError(f"symtrace.load: f must be a path or a readable binary file object, "
                                     f"got {type(f).__name__}")
            fh = f
            seekable = getattr(f, "seekable", None)
            if seekable is None or not seekable():
                fh = io.BytesIO(f.read())
        if _torch_checkpoint.is_legacy(fh):
            return _load_torch(name, _torch_checkpoint.load_legacy, fh, map_location, weights_only,
                               pickle_module, pickle_load_args)
        zf, prefix = _open_zip(fh, name)
        stack.enter_context(zf)
        if prefix is None:
            return _load_torch(name, _torch_checkpoint.load_zip, zf, map_location, weights_only,
                               pickle_module, pickle_load_args)
        try:
            version = _read(zf, prefix + _MARKER).decode("utf-8", "replace").split()
            if len(version) != 2 or version[0] != _MAGIC or not version[1].isdigit():
                raise _Corrupt(f"bad format record {version!r}")
            if int(version[1]) > FORMAT_VERSION:
                raise RuntimeError(f"symtrace.load: {name} was written by a newer symtrace (checkpoint "
                                   f"format {version[1]}; this version reads format <= {FORMAT_VERSION})")
            if _read(zf, prefix + "byteorder").decode("ascii", "replace") != "little":
                raise _Corrupt("unsupported byte order")
            data_pkl = _read(zf, prefix + "data.pkl")
            loader = _Loader(zf, prefix, map_location, weights_only)
            return _unpickle(data_pkl, loader, pickle_module, weights_only, pickle_load_args)
        except _Corrupt as e:
            raise RuntimeError(f"symtrace.load: {name} is a corrupt symtrace checkpoint: {e}") from None
        except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as e:
            raise RuntimeError(f"symtrace.load: {name} is a corrupt symtrace checkpoint: {e}") from None


def _load_torch(name, reader, src, map_location, weights_only, pickle_module, pickle_load_args):
    """A PyTorch checkpoint (torch.save's zip or legacy layout) read by _torch_checkpoint."""
    try:
        return reader(src, map_location, weights_only, pickle_module, pickle_load_args)
    except _torch_checkpoint.CheckpointError as e:
        raise RuntimeError(f"symtrace.load: cannot read the PyTorch checkpoint {name}: {e}") from None
    except pickle.UnpicklingError as e:
        if weights_only:
            raise _weights_only_error(str(e)) from None
        raise
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as e:
        raise RuntimeError(f"symtrace.load: {name} is a corrupt PyTorch checkpoint: {e}") from None


def _unpickle(data_pkl, loader, pickle_module, weights_only, pickle_load_args):
    unpickler = _unpickler_class(pickle_module, bool(weights_only))(io.BytesIO(data_pkl), **pickle_load_args)
    unpickler.st_loader = loader
    if weights_only:
        try:
            return unpickler.load()
        except pickle.UnpicklingError as e:
            raise _weights_only_error(str(e)) from None
    return unpickler.load()
