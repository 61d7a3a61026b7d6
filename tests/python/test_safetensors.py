# symtrace.utils.safetensors: the safetensors format both ways, with the package's API
# (load_file/save_file/load/save/safe_open). Round trips of every dtype and of empty,
# 0-d and non-contiguous tensors; files the safetensors package wrote and files it
# reads (when it is installed); a pretrained-weights flow (torch model -> safetensors ->
# symtrace model); and ValueErrors that name the file and tensor for broken headers.
import json
import struct

import numpy as np
import pytest

import symtrace as st
from symtrace.utils import safetensors as ss

DTYPES = ["float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64", "bool"]


def _vals(t):
    return t.float().tolist() if t.dtype in (st.bfloat16, st.float16) else t.tolist()


def _sample():
    base = st.arange(12.0).reshape(3, 4)
    out = {f"t_{d}": (st.arange(6) % 3 - 1).reshape(2, 3).to(getattr(st, d)) for d in DTYPES}
    out.update({"empty": st.zeros(0, 3), "scalar": st.tensor(2.5), "transposed": base.t(),
                "sliced": base[:, 1:3], "expanded": st.ones(3).expand(2, 3)})
    return out


def test_round_trip_of_every_dtype_and_layout(tmp_path):
    src = _sample()
    p = tmp_path / "w.safetensors"
    ss.save_file(src, p, metadata={"format": "pt", "note": "x"})
    got = ss.load_file(p)
    assert set(got) == set(src)
    for k, t in src.items():
        assert got[k].dtype == t.dtype and tuple(got[k].shape) == tuple(t.shape), k
        assert _vals(got[k]) == _vals(t), k
        assert got[k].is_contiguous()
    with ss.safe_open(p, framework="pt") as f:
        assert f.keys() == sorted(src) and f.metadata() == {"format": "pt", "note": "x"}
        assert f.get_tensor("sliced").tolist() == src["sliced"].tolist()
        sl = f.get_slice("transposed")
        assert sl.get_shape() == [4, 3] and sl.get_dtype() == "F32" and sl[1].tolist() == [1.0, 5.0, 9.0]
    assert ss.load(ss.save(src))["t_bfloat16"].dtype == st.bfloat16


def test_data_is_aligned_and_ordered_as_the_package_writes_it():
    data = ss.save({"b": st.ones(3, dtype=st.int8), "a": st.ones(2, dtype=st.float64), "c": st.ones(1)})
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0
    header = json.loads(data[8:8 + n])
    order = sorted((v["data_offsets"][0], k) for k, v in header.items())
    assert [k for _, k in order] == ["a", "c", "b"]          # wider elements first, then names


def test_files_of_the_safetensors_package_both_ways(tmp_path):
    torch = pytest.importorskip("torch")
    pkg = pytest.importorskip("safetensors.torch")
    tt = {"w": torch.randn(3, 4), "h": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
          "i": torch.arange(5), "m": torch.tensor([True, False]), "e": torch.zeros(0, 2),
          "s": torch.tensor(7.0)}
    p = tmp_path / "pkg.safetensors"
    pkg.save_file(tt, p, metadata={"format": "pt"})
    got = ss.load_file(p)
    assert list(got) == list(pkg.load_file(p))
    for k, v in tt.items():
        assert _vals(got[k]) == (v.float().tolist() if k == "h" else v.tolist()), k
    q = tmp_path / "ours.safetensors"
    ss.save_file(got, q, metadata={"format": "pt"})
    back = pkg.load_file(q)
    for k, v in tt.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v), k
    assert ss.save({"w": got["w"]}) == pkg.save({"w": tt["w"]})   # byte for byte


def test_pretrained_weights_from_a_torch_model(tmp_path):
    torch = pytest.importorskip("torch")
    pkg = pytest.importorskip("safetensors.torch")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2))
    p = tmp_path / "model.safetensors"
    pkg.save_file(tm.state_dict(), p)
    sm = st.nn.Sequential(st.nn.Linear(4, 8), st.nn.LayerNorm(8), st.nn.Linear(8, 2))
    sm.load_state_dict(ss.load_file(p))
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(sm(st.tensor(x)).tolist()),
                               tm(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def _file(tmp_path, header, data=b"", raw_header=None):
    head = raw_header if raw_header is not None else json.dumps(header).encode()
    p = tmp_path / "bad.safetensors"
    p.write_bytes(struct.pack("<Q", len(head)) + head + data)
    return p


@pytest.mark.parametrize("header,data,match", [
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, r"'w'.*data offsets \[0, 8\]"),
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, r"'w'.*12 bytes"),
    ({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, b"\0" * 2, r"'w' has dtype F8_E4M3"),
    ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}}, b"", r"'w' has a negative size"),
    ({"w": {"dtype": "F32", "data_offsets": [0, 0]}}, b"", r"'w' lacks 'shape'"),
    ([1, 2], b"", r"header is not a JSON object"),
])
def test_broken_headers_name_the_file_and_tensor(tmp_path, header, data, match):
    p = _file(tmp_path, header, data)
    with pytest.raises(ValueError, match=r"bad\.safetensors.*" + match):
        ss.load_file(p)


def test_not_a_safetensors_file(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{")
    with pytest.raises(ValueError, match="x.bin.*header length 16 does not fit"):
        ss.load_file(p)
    with pytest.raises(ValueError, match="bad JSON header"):
        ss.load_file(_file(tmp_path, None, raw_header=b"{nope"))
    with pytest.raises(ValueError, match="shorter than its 8-byte header length"):
        ss.load(b"\x01")


def test_save_errors():
    with pytest.raises(ValueError, match="'w' is a list, not a tensor"):
        ss.save({"w": [1.0]})
    with pytest.raises(ValueError, match="metadata must be a dict of str to str"):
        ss.save({"w": st.ones(1)}, metadata={"n": 1})
    with pytest.raises(ValueError, match="a dict of tensors"):
        ss.save([st.ones(1)])
