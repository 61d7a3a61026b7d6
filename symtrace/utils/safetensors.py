"""symtrace.utils.safetensors: the safetensors file format (HuggingFace's, the usual
form of pretrained weights), read and written without the safetensors package, with
its API: load_file / save_file / load / save, and safe_open for lazy reads.

The format: an 8-byte little-endian header length N, N bytes of JSON
{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}} (padded with spaces), then the tensors' bytes, row-major,
little-endian, each at its offsets from the end of the header. Tensors are written
contiguous, wider dtypes first and then by name, as the safetensors package writes them; tensors that
share memory are each written whole (the package refuses shared tensors; symtrace
copies them, so reloading gives separate tensors). Loading validates the header
(offsets in order, inside the file, matching dtype x shape) and raises ValueError
naming the file and the tensor for anything that does not fit.
"""
import io
import json
import os
import struct

from .. import _C
from .._torch_checkpoint import fill
from .._dtype import float32, float64, float16, bfloat16, uint8, int8, int16, int32, int64, bool_

__all__ = ["load_file", "save_file", "load", "save", "safe_open"]

_CODES = {"F32": float32, "F64": float64, "F16": float16, "BF16": bfloat16, "U8": uint8,
          "I8": int8, "I16": int16, "I32": int32, "I64": int64, "BOOL": bool_}
_CODE_OF = {dt: code for code, dt in _CODES.items()}
_MAX_HEADER = 100 * 1000 * 1000        # the package's limit on the JSON header


def _to_host_bytes(t):
    from ..serialization import _host_bytes
    buf, owner = _host_bytes(t.detach())
    return bytes(buf)


def save(tensors, metadata=None):
    """save(tensors: dict[str, Tensor], metadata: dict[str, str] | None) -> bytes."""
    if not isinstance(tensors, dict):
        raise ValueError(f"safetensors.save: expected a dict of tensors, got {type(tensors).__name__}")
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise ValueError("safetensors.save: metadata must be a dict of str to str")
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = dict(metadata)
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise ValueError(f"safetensors.save: tensor names must be str, got {name!r}")
        if not isinstance(t, _C.TensorBase):
            raise ValueError(f"safetensors.save: {name!r} is a {type(t).__name__}, not a tensor")
    # the package's order: wider elements first (each stays aligned), then by name
    for name in sorted(tensors, key=lambda k: (-tensors[k].element_size(), k)):
        t = tensors[name]
        code = _CODE_OF.get(t.dtype)
        if code is None:
            raise ValueError(f"safetensors.save: {name!r} has dtype {t.dtype}, which safetensors cannot hold")
        b = _to_host_bytes(t)
        header[name] = {"dtype": code, "shape": [int(n) for n in t.shape], "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)        # the data starts 8-byte aligned
    return b"".join([struct.pack("<Q", len(head)), head] + blobs)


def save_file(tensors, filename, metadata=None):
    """save_file(tensors, filename, metadata=None): writes save()'s bytes to filename,
    atomically (symtrace.serialization._write_atomic)."""
    from ..serialization import _write_atomic
    data = save(tensors, metadata)
    _write_atomic(filename, lambda fh: fh.write(data))


def _parse_header(read, total, what):
    """(header dict, data start): read(k) returns the next k bytes from the start;
    total: the file's size."""
    first = read(8)
    if total < 8 or len(first) < 8:
        raise ValueError(f"{what}: not a safetensors file (shorter than its 8-byte header length)")
    (n,) = struct.unpack("<Q", first)
    if n > _MAX_HEADER or 8 + n > total:
        raise ValueError(f"{what}: not a safetensors file (header length {n} does not fit in {total} bytes)")
    try:
        header = json.loads(read(n).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{what}: not a safetensors file (bad JSON header: {e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{what}: not a safetensors file (the header is not a JSON object)")
    return header, 8 + n


def _entries(header, data_len, what):
    """[(name, dtype, shape, begin, end)] in file order, checked."""
    out = []
    for name, e in header.items():
        if name == "__metadata__":
            continue
        try:
            dt = _CODES[e["dtype"]]
            shape = tuple(int(s) for s in e["shape"])
            begin, end = (int(v) for v in e["data_offsets"])
        except KeyError as k:
            code = e.get("dtype") if isinstance(e, dict) else None
            if code is not None and code not in _CODES:
                raise ValueError(f"{what}: tensor {name!r} has dtype {code}, which symtrace does not have") from None
            raise ValueError(f"{what}: tensor {name!r} lacks {k}") from None
        except (TypeError, ValueError, AttributeError):
            raise ValueError(f"{what}: tensor {name!r} has a malformed entry {e!r}") from None
        numel = 1
        for s in shape:
            if s < 0:
                raise ValueError(f"{what}: tensor {name!r} has a negative size in {list(shape)}")
            numel *= s
        item = _C.empty((0,), dt).element_size()
        if not (0 <= begin <= end <= data_len) or end - begin != numel * item:
            raise ValueError(f"{what}: tensor {name!r} ({e['dtype']} {list(shape)}) has data offsets "
                             f"[{begin}, {end}], which do not fit its {numel * item} bytes in a data "
                             f"section of {data_len}")
        out.append((name, dt, shape, begin, end))
    return sorted(out, key=lambda r: r[3])


def _tensor_from(buf, dt, shape, device):
    t = _C.empty(shape, dt)
    fill(t, io.BytesIO(buf).readinto, len(buf), "a tensor")
    return t if device in (None, "cpu") else t.to(device)


def load(data, device="cpu"):
    """load(data: bytes, device="cpu") -> dict[str, Tensor]."""
    mv = memoryview(data).cast("B")
    pos = [0]

    def read(k):
        b = bytes(mv[pos[0]:pos[0] + k])
        pos[0] += k
        return b
    header, start = _parse_header(read, len(mv), "safetensors.load")
    return {name: _tensor_from(mv[start + b:start + e], dt, shape, device)
            for name, dt, shape, b, e in _entries(header, len(mv) - start, "safetensors.load")}


class safe_open:
    """with safe_open(filename, framework="pt", device="cpu") as f: f.keys(),
    f.metadata(), f.get_tensor(name) (reads that tensor's bytes only),
    f.get_slice(name)[...] (reads the tensor, then indexes it)."""

    def __init__(self, filename, framework="pt", device="cpu"):
        if framework not in ("pt", "pytorch", "torch", "symtrace", "np", "numpy"):
            raise ValueError(f"safe_open: framework {framework!r} is not supported")
        self._name = os.fspath(filename)
        self._device = device
        self._f = open(self._name, "rb")
        try:
            total = os.fstat(self._f.fileno()).st_size
            what = repr(self._name)
            self._header, self._start = _parse_header(self._f.read, total, what)
            self._entries = {r[0]: r for r in _entries(self._header, total - self._start, what)}
        except BaseException:
            self._f.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()

    def keys(self):
        return sorted(self._entries)

    def metadata(self):
        return self._header.get("__metadata__")

    def get_tensor(self, name):
        try:
            _, dt, shape, b, e = self._entries[name]
        except KeyError:
            raise KeyError(f"safe_open: no tensor {name!r} in {self._name!r}") from None
        self._f.seek(self._start + b)
        buf = self._f.read(e - b)
        if len(buf) != e - b:
            raise ValueError(f"{self._name!r}: tensor {name!r} is truncated")
        return _tensor_from(buf, dt, shape, self._device)

    def get_slice(self, name):
        """A view of the tensor that indexing reads (here: the whole tensor, then the index)."""
        return _Slice(self.get_tensor(name))


class _Slice:
    def __init__(self, t):
        self._t = t

    def __getitem__(self, idx):
        return self._t[idx]

    def get_shape(self):
        return list(self._t.shape)

    def get_dtype(self):
        return _CODE_OF[self._t.dtype]


def load_file(filename, device="cpu"):
    """load_file(filename, device="cpu") -> dict[str, Tensor], in the file's order."""
    with safe_open(filename, device=device) as f:
        return {k: f.get_tensor(k) for k in f._entries}
