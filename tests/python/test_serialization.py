# symtrace.save / symtrace.load (symtrace/serialization.py): round trips of every
# dtype and of 0-d, empty and non-contiguous tensors (bit-exact), tensor identity
# and storage sharing, Parameters and requires_grad, nested Python structures,
# a model's state_dict into a fresh model, an AdamW checkpoint resumed mid-run
# (3 + 3 steps == 6 steps), paths and file objects, the archive layout, atomic
# writes (a failure mid-write leaves the old file), weights_only refusing
# classes, map_location, and clear errors for files that are not checkpoints.
# numpy only; the torch fixture adds one check on a torch.save file (the rest of
# torch's format: test_torch_checkpoint.py).
import io
import json
import os
import pathlib
import pickle
import zipfile
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import symtrace as st
import symtrace.nn as nn
from symtrace import serialization

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool"]
SHAPES = [(), (0,), (3, 0, 2), (7,), (2, 3, 4)]


from tensor_data import raw, make  # noqa: F401


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    st.save(obj, buf)
    buf.seek(0)
    return st.load(buf, **load_kwargs)


# ---------------------------------------------------------------- tensors
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_dtype_shape_roundtrip_is_bit_exact(dtype, shape):
    t = make(dtype, shape)
    r = roundtrip(t)
    assert type(r) is st.Tensor
    assert r.dtype is getattr(st, dtype)
    assert tuple(r.shape) == shape
    assert r.is_contiguous() and r.device == "cpu"
    assert not r.requires_grad and r.is_leaf
    assert raw(r) == raw(t)
    assert r._storage_id() != t._storage_id()      # a copy, not an alias


def test_bfloat16_raw_bits_survive():
    # bit patterns a float32 round trip could disturb: a NaN payload, -0, subnormals
    src = st.tensor(np.array([0.0, -0.0, 1e-40, 3.0, np.nan], dtype=np.float32)).bfloat16()
    r = roundtrip(src)
    assert raw(r) == raw(src)
    assert np.signbit(r.float().numpy()[1])


@pytest.mark.parametrize("view", ["transposed", "strided", "expanded", "narrowed", "permuted"])
def test_non_contiguous_saved_contiguous(view):
    base = st.tensor(np.arange(60, dtype=np.float32).reshape(3, 4, 5))
    t = {"transposed": lambda: base.transpose(0, 2), "strided": lambda: base[:, ::2, 1::2],
         "expanded": lambda: base[:1, :1, :].expand(6, 4, 5), "narrowed": lambda: base[1:, 2:],
         "permuted": lambda: base.permute(2, 0, 1)}[view]()
    assert not t.is_contiguous() or view == "narrowed"
    r = roundtrip(t)
    assert tuple(r.shape) == tuple(t.shape)
    if view in ("transposed", "permuted"):      # a dense permutation keeps its strides, as torch's
        assert r.stride() == t.stride()
    else:
        assert r.is_contiguous()
    np.testing.assert_array_equal(r.numpy(), t.contiguous().numpy())
    # only the tensor's own elements are stored (an expanded tensor is materialized)
    buf = io.BytesIO()
    st.save(t, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        assert zf.getinfo("archive/data/0").file_size == t.numel() * 4


def test_archive_layout_and_little_endian_records():
    a = np.array([[1.5, -2.0, 3.25]], dtype=np.float32)
    b = np.array([1, -7], dtype=np.int64)
    buf = io.BytesIO()
    st.save({"a": st.tensor(a), "b": st.tensor(b)}, buf, format="symtrace")
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        names = zf.namelist()
        assert names[:4] == ["archive/symtrace_format", "archive/byteorder", "archive/data.pkl",
                             "archive/tensors.json"]
        assert zf.read("archive/symtrace_format").decode().split() == ["symtrace.save", "1"]
        assert zf.read("archive/byteorder") == b"little"
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        table = json.loads(zf.read("archive/tensors.json"))
        assert [s["dtype"] for s in table["storages"]] == ["float32", "int64"]
        assert table["tensors"][0]["shape"] == [1, 3]
        assert zf.read("archive/data/0") == a.astype("<f4").tobytes()
        assert zf.read("archive/data/1") == b.astype("<i8").tobytes()


# ---------------------------------------------------------------- identity and sharing
def test_same_tensor_twice_is_one_object():
    t = st.randn(4, 3)
    r = roundtrip({"x": t, "again": [t, (t,)], "other": t.clone()})
    assert r["x"] is r["again"][0] is r["again"][1][0]
    assert r["other"] is not r["x"]
    np.testing.assert_array_equal(r["x"].numpy(), t.numpy())
    buf = io.BytesIO()
    st.save([t, t, t], buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        assert sum(n.startswith("archive/data/") for n in zf.namelist()) == 1


def test_views_of_one_storage_stay_shared():
    base = st.tensor(np.arange(24, dtype=np.float32).reshape(4, 6))
    row, col_t, blk = base[1], base.T, base[2:, 3:]
    r = roundtrip({"base": base, "row": row, "colT": col_t, "blk": blk})
    for k, v in {"base": base, "row": row, "colT": col_t, "blk": blk}.items():
        assert tuple(r[k].shape) == tuple(v.shape)
        np.testing.assert_array_equal(r[k].numpy(), v.numpy())
    assert len({r[k]._storage_id() for k in r}) == 1
    assert r["colT"].stride() == (1, 6)
    r["base"].fill_(0.0)          # writes through the shared storage
    r["row"].add_(1.0)
    assert r["colT"].numpy()[0, 1] == 1.0 and r["blk"].numpy().sum() == 0.0


def test_tied_weights_share_storage_after_load():
    a = nn.Linear(4, 4)
    b = nn.Linear(4, 4)
    b.weight = a.weight
    m = nn.Sequential(a, b)
    sd = m.state_dict()               # two detached tensors over one storage
    assert sd["0.weight"] is not sd["1.weight"]
    r = roundtrip(sd)
    assert r["0.weight"]._storage_id() == r["1.weight"]._storage_id()
    assert r["0.bias"]._storage_id() != r["1.bias"]._storage_id()
    np.testing.assert_array_equal(r["1.weight"].numpy(), a.weight.detach().numpy())


def test_partial_view_saves_only_the_used_span():
    big = st.zeros(1000)
    r = roundtrip({"a": big[10:20], "b": big[15:30]})
    buf = io.BytesIO()
    st.save({"a": big[10:20], "b": big[15:30]}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        assert zf.getinfo("archive/data/0").file_size == 20 * 4
    assert r["a"]._storage_id() == r["b"]._storage_id()
    r["a"][5:].fill_(2.0)
    assert r["b"].numpy()[:5].tolist() == [2.0] * 5


# ---------------------------------------------------------------- parameters, grad flags
def test_parameters_and_requires_grad():
    p = nn.Parameter(st.randn(3, 2))
    frozen = nn.Parameter(st.randn(2), requires_grad=False)
    leaf = st.randn(5).requires_grad_()
    nonleaf = leaf * 2
    plain = st.randn(2)
    r = roundtrip({"p": p, "frozen": frozen, "leaf": leaf, "nonleaf": nonleaf, "plain": plain})
    assert type(r["p"]) is nn.Parameter and r["p"].requires_grad
    assert type(r["frozen"]) is nn.Parameter and not r["frozen"].requires_grad
    assert type(r["leaf"]) is st.Tensor and r["leaf"].requires_grad and r["leaf"].is_leaf
    assert r["nonleaf"].requires_grad and r["nonleaf"].is_leaf and r["nonleaf"].grad_fn is None
    assert not r["plain"].requires_grad
    np.testing.assert_array_equal(r["nonleaf"].detach().numpy(), nonleaf.detach().numpy())
    assert r["p"].grad is None
    (r["p"].sum() * 2).backward()           # a working leaf
    np.testing.assert_array_equal(r["p"].grad.numpy(), np.full((3, 2), 2, np.float32))


class MyTensor(st.Tensor):
    __slots__ = ()


def test_tensor_subclass_needs_weights_only_false_or_allowlist():
    t = st._C._make_subclass(MyTensor, st.randn(3), False)
    buf = io.BytesIO()
    st.save({"t": t}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="MyTensor"):
        st.load(buf)
    buf.seek(0)
    assert type(st.load(buf, weights_only=False)["t"]) is MyTensor
    buf.seek(0)
    with serialization.safe_globals([MyTensor]):
        assert type(st.load(buf)["t"]) is MyTensor
    assert MyTensor not in serialization.get_safe_globals()


# ---------------------------------------------------------------- structures
Point = namedtuple("Point", "x y")


def test_nested_python_structures():
    obj = {"ints": [1, -2, 2 ** 70], "floats": (1.5, float("inf")), "s": "héllo", "b": b"\x00\xff",
           "none": None, "flags": {True, False}, "fs": frozenset({1, 2}), "c": 1 + 2j,
           "od": OrderedDict([("z", 1), ("a", st.ones(2))]), "nested": [[{"t": st.zeros(1)}]],
           "dtypes": [st.float32, st.bfloat16, st.bool], "dev": st.device("cpu"),
           "bytearray": bytearray(b"ab"), "empty": ([], {}, ())}
    r = roundtrip(obj)
    assert r["ints"] == [1, -2, 2 ** 70] and r["floats"] == (1.5, float("inf"))
    assert r["s"] == "héllo" and r["b"] == b"\x00\xff" and r["none"] is None
    assert r["flags"] == {True, False} and r["fs"] == frozenset({1, 2}) and r["c"] == 1 + 2j
    assert type(r["od"]) is OrderedDict and list(r["od"]) == ["z", "a"]
    np.testing.assert_array_equal(r["od"]["a"].numpy(), [1, 1])
    assert r["nested"][0][0]["t"].tolist() == [0.0]
    assert r["dtypes"][0] is st.float32 and r["dtypes"][1] is st.bfloat16 and r["dtypes"][2] is st.bool
    assert r["dev"] == st.device("cpu") and isinstance(r["dev"], st.device)
    assert r["bytearray"] == bytearray(b"ab") and r["empty"] == ([], {}, ())
    # a namedtuple is a class: refused by weights_only, restored otherwise
    with pytest.raises(pickle.UnpicklingError):
        roundtrip({"p": Point(1, st.ones(1))})
    p = roundtrip({"p": Point(1, st.ones(1))}, weights_only=False)["p"]
    assert type(p) is Point and p.x == 1 and p.y.tolist() == [1.0]


def test_plain_tensor_and_scalars_at_top_level():
    assert roundtrip(3) == 3 and roundtrip("x") == "x" and roundtrip(None) is None
    t = st.tensor(np.arange(6, dtype=np.int64).reshape(2, 3))
    r = roundtrip(t)
    assert r.tolist() == [[0, 1, 2], [3, 4, 5]] and r.dtype is st.int64


# ---------------------------------------------------------------- models and optimizers
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 8)
        self.fc1 = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 3)
        self.register_buffer("scale", st.tensor([0.5, 1.0, 2.0]))

    def forward(self, idx):
        return self.fc2(self.norm(self.fc1(self.emb(idx)).relu())) * self.scale


def test_state_dict_into_fresh_model(tmp_path):
    st.manual_seed(0)
    m = Net()
    idx = st.tensor(np.array([[1, 4, 7], [10, 0, 3]], dtype=np.int64))
    want = m(idx).detach().numpy()
    st.save(m.state_dict(), tmp_path / "model.pt")
    st.manual_seed(1)
    fresh = Net()
    assert not np.array_equal(fresh(idx).detach().numpy(), want)
    sd = st.load(tmp_path / "model.pt")
    assert type(sd) is OrderedDict and list(sd) == list(m.state_dict())
    assert all(type(v) is st.Tensor and not v.requires_grad for v in sd.values())
    fresh.load_state_dict(sd)
    np.testing.assert_array_equal(fresh(idx).detach().numpy(), want)


def _data(seed):
    rng = np.random.default_rng(seed)
    return [(st.tensor(rng.integers(0, 11, (4, 3)).astype(np.int64)),
             st.tensor(rng.standard_normal((4, 3, 3)).astype(np.float32))) for _ in range(6)]


def _train(m, opt, batches):
    losses = []
    for idx, y in batches:
        loss = ((m(idx) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


def test_adamw_checkpoint_resume_matches_uninterrupted(tmp_path):
    data = _data(3)
    st.manual_seed(0)
    m = Net()
    opt = st.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1, betas=(0.8, 0.95))
    full = _train(m, opt, data)

    st.manual_seed(0)
    m1 = Net()
    opt1 = st.optim.AdamW(m1.parameters(), lr=1e-2, weight_decay=0.1, betas=(0.8, 0.95))
    first = _train(m1, opt1, data[:3])
    st.save({"model": m1.state_dict(), "optim": opt1.state_dict(), "epoch": 3}, str(tmp_path / "ckpt.pt"))
    del m1, opt1

    ck = st.load(str(tmp_path / "ckpt.pt"))
    assert ck["epoch"] == 3
    osd = ck["optim"]
    assert sorted(osd) == ["param_groups", "state"] and sorted(osd["state"]) == list(range(len(osd["state"])))
    g = osd["param_groups"][0]
    assert g["betas"] == (0.8, 0.95) and g["lr"] == 1e-2 and g["params"] == list(range(len(g["params"])))
    s0 = osd["state"][0]
    assert s0["step"].dtype is st.float32 and s0["step"].item() == 3.0
    st.manual_seed(5)                      # a different init: everything must come from the checkpoint
    m2 = Net()
    opt2 = st.optim.AdamW(m2.parameters(), lr=0.5, weight_decay=0.0)
    m2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["optim"])
    second = _train(m2, opt2, data[3:])
    assert first == full[:3]
    np.testing.assert_allclose(second, full[3:], rtol=1e-6, atol=0)
    for (n, p), (_, q) in zip(m.named_parameters(), m2.named_parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-7, err_msg=n)


# ---------------------------------------------------------------- paths and files
def test_paths_and_file_objects(tmp_path):
    t = st.randn(5, 2)
    p = tmp_path / "t.pt"
    st.save(t, p)                                   # pathlib.Path
    assert raw(st.load(str(p))) == raw(t)           # str
    assert raw(st.load(os.fsencode(str(p)))) == raw(t)   # bytes path
    with open(tmp_path / "f.pt", "wb") as f:
        f.write(b"")                                # a file object, written at its position
        st.save({"t": t}, f)
    with open(tmp_path / "f.pt", "rb") as f:
        assert raw(st.load(f)["t"]) == raw(t)

    class Unseekable(io.RawIOBase):             # a pipe-like stream
        def __init__(self, data):
            self._b = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._b.readinto(b)

        def seekable(self):
            return False

    assert raw(st.load(Unseekable(p.read_bytes()))) == raw(t)
    # overwriting keeps the file's permission bits
    os.chmod(p, 0o640)
    st.save(t * 2, p)
    assert (os.stat(p).st_mode & 0o777) == 0o640
    np.testing.assert_array_equal(st.load(p).numpy(), (t * 2).numpy())
    assert sorted(os.listdir(tmp_path)) == ["f.pt", "t.pt"]     # no temporaries left
    with pytest.raises(RuntimeError, match="Parent directory .* does not exist"):
        st.save(t, tmp_path / "missing" / "t.pt")
    with pytest.raises(FileNotFoundError):
        st.load(tmp_path / "nope.pt")


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    st.save({"v": st.tensor([1.0, 2.0]), "w": st.tensor([3.0])}, path)
    before = path.read_bytes()
    real = serialization._host_bytes
    calls = []

    def failing(t):
        calls.append(t)
        if len(calls) == 2:                   # after the first record was written
            raise OSError("disk full (simulated)")
        return real(t)

    monkeypatch.setattr(serialization, "_host_bytes", failing)
    with pytest.raises(OSError, match="disk full"):
        st.save({"v": st.tensor([9.0, 9.0]), "w": st.tensor([9.0])}, path)
    assert len(calls) == 2
    assert path.read_bytes() == before
    assert st.load(path)["v"].tolist() == [1.0, 2.0]
    assert os.listdir(tmp_path) == ["ckpt.pt"]
    monkeypatch.setattr(serialization, "_host_bytes", real)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        st.save({"f": lambda: 0}, path)           # unpicklable: fails before any write
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]


# ---------------------------------------------------------------- weights_only
class Custom:
    def __init__(self, v):
        self.v = v


EXECUTED = []


def _side_effect(*a):
    EXECUTED.append(a)
    return "pwned"


class Evil:
    def __reduce__(self):
        return (_side_effect, ("ran",))


def test_weights_only_refuses_classes_and_never_calls_them():
    buf = io.BytesIO()
    st.save({"c": Custom(st.ones(2)), "x": st.zeros(1)}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError) as e:
        st.load(buf)
    msg = str(e.value)
    assert "Weights only load failed" in msg and "weights_only" in msg
    assert f"{__name__}.Custom" in msg and "add_safe_globals" in msg
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        st.load(buf, weights_only=True)
    buf.seek(0)
    r = st.load(buf, weights_only=False)
    assert isinstance(r["c"], Custom) and r["c"].v.tolist() == [1.0, 1.0]
    buf.seek(0)
    with serialization.safe_globals([Custom]):
        assert isinstance(st.load(buf)["c"], Custom)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):      # the allowlist was restored
        st.load(buf)

    evil = io.BytesIO()
    st.save([Evil()], evil)
    evil.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="_side_effect"):
        st.load(evil)
    assert EXECUTED == []
    with pytest.raises(RuntimeError, match="pickle_module"):
        st.load(evil, pickle_module=pickle)


def test_add_and_clear_safe_globals():
    buf = io.BytesIO()
    st.save(Custom(1), buf)
    try:
        serialization.add_safe_globals([Custom])
        buf.seek(0)
        assert st.load(buf).v == 1
    finally:
        serialization.clear_safe_globals()
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        st.load(buf)


# ---------------------------------------------------------------- map_location
def _with_location(data, location):
    """The archive with every storage's recorded device set to location."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            payload = src.read(info)
            if info.filename.endswith("tensors.json"):
                table = json.loads(payload)
                for s in table["storages"]:
                    s["location"] = location
                payload = json.dumps(table).encode()
            zf.writestr(info.filename, payload)
    return out.getvalue()


def test_map_location_forms():
    t = st.tensor([1.0, 2.0, 3.0])
    buf = io.BytesIO()
    st.save({"t": t, "v": t[1:]}, buf)
    data = buf.getvalue()
    for ml in ("cpu", st.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s, lambda s, loc: None):
        r = st.load(io.BytesIO(data), map_location=ml)
        assert r["t"].device == "cpu" and r["t"].tolist() == [1.0, 2.0, 3.0]
        assert r["v"]._storage_id() == r["t"]._storage_id()
    seen = []

    def fn(storage, loc):
        seen.append((tuple(storage.shape), loc, storage.device))
        return storage
    st.load(io.BytesIO(data), map_location=fn)
    assert seen == [((3,), "cpu", "cpu")]        # one storage for the tensor and its view
    with pytest.raises(TypeError):
        st.load(io.BytesIO(data), map_location=3)
    with pytest.raises(RuntimeError, match="device"):
        st.load(io.BytesIO(data), map_location="tpu")


def test_cuda_checkpoint_on_a_cpu_machine():
    data = _with_location(_save_bytes({"w": st.tensor([1.0, 2.0])}, format="symtrace"), "cuda:0")
    if not st.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA.*map_location"):
            st.load(io.BytesIO(data))
    for ml in ("cpu", {"cuda:0": "cpu"}, lambda s, loc: s):
        r = st.load(io.BytesIO(data), map_location=ml)
        assert r["w"].device == "cpu" and r["w"].tolist() == [1.0, 2.0]
    locs = []
    st.load(io.BytesIO(data), map_location=lambda s, loc: locs.append(loc) or s)
    assert locs == ["cuda:0"]
    many = _with_location(_save_bytes(st.ones(1), format="symtrace"), "cuda:99")
    if st.cuda.is_available():
        with pytest.raises(RuntimeError, match="device_count"):
            st.load(io.BytesIO(many))


def _save_bytes(obj, **kw):
    buf = io.BytesIO()
    st.save(obj, buf, **kw)
    return buf.getvalue()


@pytest.mark.skipif(not st.cuda.is_available(), reason="needs a GPU")
def test_cuda_tensors_roundtrip():
    x = st.randn(4, 5).cuda()
    p = nn.Parameter(st.randn(3).cuda())
    data = _save_bytes({"x": x, "xT": x.T, "p": p, "h": x.half()})
    r = st.load(io.BytesIO(data))
    assert r["x"].device == x.device and r["p"].device == x.device and type(r["p"]) is nn.Parameter
    np.testing.assert_array_equal(r["x"].cpu().numpy(), x.cpu().numpy())
    np.testing.assert_array_equal(r["xT"].cpu().numpy(), x.T.cpu().numpy())
    assert r["xT"]._storage_id() == r["x"]._storage_id()
    c = st.load(io.BytesIO(data), map_location="cpu")
    assert c["x"].device == "cpu" and c["h"].dtype is st.float16
    np.testing.assert_array_equal(c["x"].numpy(), x.cpu().numpy())
    g = st.load(io.BytesIO(_save_bytes(st.ones(3))), map_location="cuda")
    assert g.is_cuda and g.cpu().tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------- errors
def test_garbage_files_raise_clear_errors(tmp_path):
    g = tmp_path / "garbage.bin"
    g.write_bytes(os.urandom(256))
    with pytest.raises(RuntimeError, match=r"garbage\.bin.*not a symtrace checkpoint.*zip archive"):
        st.load(g)
    e = tmp_path / "empty.pt"
    e.write_bytes(b"")
    with pytest.raises(RuntimeError, match="empty.pt.*empty file"):
        st.load(e)
    pk = tmp_path / "plain.pkl"
    pk.write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(RuntimeError, match="plain.pkl.*pickle"):
        st.load(pk)
    z = tmp_path / "other.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(RuntimeError, match="other.zip.*symtrace_format"):
        st.load(z)
    with pytest.raises(RuntimeError, match="<BytesIO>.*not a symtrace checkpoint"):
        st.load(io.BytesIO(b"not a checkpoint at all"))
    with pytest.raises(AttributeError):
        st.load(12)


def test_truncated_and_damaged_checkpoints(tmp_path):
    good = _save_bytes({"w": st.randn(100), "b": st.randn(3)}, format="symtrace")
    p = tmp_path / "trunc.pt"
    p.write_bytes(good[: len(good) // 2])
    with pytest.raises(RuntimeError, match="trunc.pt"):
        st.load(p)
    # a record of the wrong size
    src = zipfile.ZipFile(io.BytesIO(good))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            payload = src.read(info)
            zf.writestr(info.filename, payload[:-4] if info.filename == "archive/data/0" else payload)
    with pytest.raises(RuntimeError, match="corrupt.*archive/data/0.*396 bytes, expected 400"):
        st.load(io.BytesIO(out.getvalue()))
    # a missing record
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            if info.filename != "archive/data.pkl":
                zf.writestr(info.filename, src.read(info))
    with pytest.raises(RuntimeError, match="corrupt.*missing record archive/data.pkl"):
        st.load(io.BytesIO(out.getvalue()))
    # a newer format version
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            payload = src.read(info)
            zf.writestr(info.filename, b"symtrace.save 99\n" if info.filename.endswith("symtrace_format")
                        else payload)
    with pytest.raises(RuntimeError, match="newer symtrace"):
        st.load(io.BytesIO(out.getvalue()))


def _rewrite_table(data, edit):
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            payload = src.read(info)
            if info.filename.endswith("tensors.json"):
                table = json.loads(payload)
                edit(table)
                payload = json.dumps(table).encode()
            zf.writestr(info.filename, payload)
    return out.getvalue()


@pytest.mark.parametrize("edit", [
    lambda t: t["tensors"][0].update(offset=3),                     # the view leaves its storage
    lambda t: t["tensors"][2].update(offset=1),                     # a contiguous record has no offset
    lambda t: t["tensors"][0].update(shape=[5, 5]),                 # more elements than stored
    lambda t: t["tensors"][0].update(shape=[-1]),
    lambda t: t["tensors"][0].update(storage=7),
    lambda t: t["storages"][0].update(numel=2 ** 60),               # refused before allocating
    lambda t: t["storages"][0].update(dtype="complex64"),
    lambda t: t.pop("tensors"),
], ids=["offset", "solo-offset", "shape", "negative", "storage", "numel", "dtype", "no-table"])
def test_damaged_tensor_table_is_refused(edit):
    w = st.ones(4)
    data = _save_bytes({"w": w, "v": w[1:], "solo": st.zeros(2)}, format="symtrace")
    r = st.load(io.BytesIO(data))
    assert r["v"].tolist() == [1.0] * 3 and r["v"]._storage_id() == r["w"]._storage_id()
    for weights_only in (True, False):
        with pytest.raises(RuntimeError, match="corrupt symtrace checkpoint"):
            st.load(io.BytesIO(_rewrite_table(data, edit)), weights_only=weights_only)


def test_pickle_protocol_2_with_bytes_loads_weights_only(tmp_path):
    obj = {"b": b"\x01\x02", "s": {1, 2}, "t": st.ones(2)}
    st.save(obj, tmp_path / "p2.pt", pickle_protocol=2)
    r = st.load(tmp_path / "p2.pt")
    assert r["b"] == b"\x01\x02" and r["s"] == {1, 2} and r["t"].tolist() == [1.0, 1.0]


def test_save_through_a_symlink_replaces_the_target(tmp_path):
    target = tmp_path / "real.pt"
    st.save(st.zeros(1), target)
    link = tmp_path / "link.pt"
    link.symlink_to(target)
    st.save(st.ones(1), link)
    assert link.is_symlink() and st.load(target).tolist() == [1.0]


def test_torch_checkpoint_is_read(tmp_path, torch):
    p = tmp_path / "torch_model.pt"
    torch.save({"w": torch.ones(3)}, p)
    assert st.load(p)["w"].tolist() == [1.0, 1.0, 1.0]     # test_torch_checkpoint.py: the details


def test_save_rejects_non_files():
    with pytest.raises(AttributeError):
        st.save(st.ones(1), 12)
