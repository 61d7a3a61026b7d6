# PyTorch checkpoints both ways (symtrace/_torch_checkpoint.py): symtrace.load reads
# torch.save files (the zip layout and the legacy stream) with no torch needed, and
# symtrace.save(..., format="torch") writes files torch.load reads with
# weights_only=True (and mmap=True). Values, dtypes, storage sharing, Parameters,
# requires_grad, Size/device/dtype objects, a model's state_dict and an AdamW state
# resumed on the other side; errors for what cannot be read.
import io
import pickle
import zipfile

import numpy as np
import pytest

import symtrace as st


def _write_torch(tmp_path, obj, legacy=False, name="t.pt"):
    torch = pytest.importorskip("torch")
    p = tmp_path / name
    torch.save(obj, p, _use_new_zipfile_serialization=not legacy)
    return p


def _np(t):
    return np.asarray(t.detach().float().tolist() if t.dtype == st.bfloat16 else t.detach().tolist())


# ---------------------------------------------------------------- torch.save -> symtrace.load
@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_torch_tensors_of_every_dtype_and_layout(tmp_path, legacy):
    torch = pytest.importorskip("torch")
    base = torch.arange(12, dtype=torch.float32)
    obj = {
        "f32": torch.randn(3, 4), "f64": torch.randn(2, dtype=torch.float64),
        "f16": torch.tensor([1.5, -2.25], dtype=torch.float16),
        "bf16": torch.tensor([1.5, -2.0, 3e38], dtype=torch.bfloat16),
        "u8": torch.tensor([0, 255], dtype=torch.uint8), "i8": torch.tensor([-128, 7], dtype=torch.int8),
        "i16": torch.tensor([-3, 4], dtype=torch.int16), "i32": torch.tensor([1 << 30], dtype=torch.int32),
        "i64": torch.tensor([1 << 40, -5]), "b": torch.tensor([True, False]),
        "zero_d": torch.tensor(2.5), "empty": torch.zeros(0, 3),
        "t": torch.arange(6).reshape(2, 3).t(), "view": base[2:8:2], "base": base,
        "rg": torch.ones(2, requires_grad=True), "p": torch.nn.Parameter(torch.full((2,), 3.0)),
        "dtype": torch.bfloat16, "device": torch.device("cpu"), "size": torch.Size([2, 5]),
    }
    r = st.load(_write_torch(tmp_path, obj, legacy))
    for k in ("f32", "f64", "f16", "bf16", "u8", "i8", "i16", "i32", "i64", "b", "zero_d", "empty", "t", "view"):
        want = obj[k]
        got = r[k]
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], k
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride(), k
        np.testing.assert_array_equal(_np(got), np.asarray(want.float().tolist() if k == "bf16" else want.tolist()))
    assert r["rg"].requires_grad and not r["f32"].requires_grad
    assert type(r["p"]) is st.nn.Parameter and r["p"].requires_grad and r["p"].tolist() == [3.0, 3.0]
    assert r["dtype"] is st.bfloat16 and str(r["device"]) == "cpu"
    assert isinstance(r["size"], st.Size) and tuple(r["size"]) == (2, 5)
    r["view"][0] = 100.0                           # the view still shares the saved base's storage
    assert r["base"][2].item() == 100.0


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_torch_model_and_adamw_state_resume_in_symtrace(tmp_path, legacy):
    # A model trained 2 steps in torch, saved with its AdamW state, trained 2 more
    # steps in symtrace: the same parameters as 4 steps in torch.
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3), torch.nn.Linear(3, 2))
    topt = torch.optim.AdamW(tm.parameters(), lr=0.05, weight_decay=0.01)
    xs = [torch.randn(5, 4) for _ in range(4)]

    def tstep(x):
        topt.zero_grad()
        (tm(x) ** 2).mean().backward()
        topt.step()
    for x in xs[:2]:
        tstep(x)
    p = _write_torch(tmp_path, {"model": tm.state_dict(), "opt": topt.state_dict(), "step": 2}, legacy)
    for x in xs[2:]:
        tstep(x)

    ck = st.load(p)
    assert ck["step"] == 2 and list(ck["model"]) == list(tm.state_dict())
    sm = st.nn.Sequential(st.nn.Linear(4, 3), st.nn.LayerNorm(3), st.nn.Linear(3, 2))
    sm.load_state_dict(ck["model"])
    sopt = st.optim.AdamW(sm.parameters(), lr=0.05, weight_decay=0.01)
    sopt.load_state_dict(ck["opt"])
    for x in xs[2:]:
        sopt.zero_grad()
        (sm(st.tensor(x.numpy())) ** 2).mean().backward()
        sopt.step()
    for (k, a), b in zip(tm.state_dict().items(), sm.state_dict().values()):
        np.testing.assert_allclose(_np(b), a.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


def test_torch_state_dict_keeps_its_metadata(tmp_path):
    torch = pytest.importorskip("torch")
    sd = torch.nn.BatchNorm1d(2).state_dict()
    r = st.load(_write_torch(tmp_path, sd))
    assert list(r) == list(sd) and r._metadata == sd._metadata
    assert r["num_batches_tracked"].dtype == st.int64


def test_weights_only_refuses_a_foreign_class_in_a_torch_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    p = _write_torch(tmp_path, {"w": torch.ones(1), "obj": np.dtype("float32")})
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        st.load(p)
    r = st.load(p, weights_only=False)
    assert r["obj"] == np.dtype("float32") and r["w"].tolist() == [1.0]


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_unsupported_torch_storage_is_named(tmp_path, legacy):
    torch = pytest.importorskip("torch")
    p = _write_torch(tmp_path, {"c": torch.ones(2, dtype=torch.complex64)}, legacy)
    with pytest.raises(RuntimeError, match=r"t\.pt.*ComplexFloatStorage"):
        st.load(p, weights_only=False)


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_torch_checkpoint_onto_a_missing_gpu_raises(tmp_path, legacy):
    if st.cuda.is_available():
        pytest.skip("a GPU is here")
    torch = pytest.importorskip("torch")
    p = _write_torch(tmp_path, {"w": torch.ones(2)}, legacy)
    with pytest.raises(RuntimeError, match="map_location='cpu'"):
        st.load(p, map_location="cuda")
    assert st.load(p, map_location={"cpu": "cpu"})["w"].tolist() == [1.0, 1.0]


def test_legacy_placement_through_a_callable_sees_filled_storages(tmp_path):
    torch = pytest.importorskip("torch")
    base = torch.arange(4.0)
    p = _write_torch(tmp_path, {"a": base, "b": base[1:3]}, legacy=True)
    seen = []

    def where(storage, location):
        seen.append((location, storage.tolist()))
        return None
    r = st.load(p, map_location=where)
    assert seen == [("cpu", [0.0, 1.0, 2.0, 3.0])]
    assert r["a"].tolist() == [0.0, 1.0, 2.0, 3.0] and r["b"].tolist() == [1.0, 2.0]
    r["b"][0] = 9.0
    assert r["a"][1].item() == 9.0


def test_truncated_torch_record_is_an_error(tmp_path):
    torch = pytest.importorskip("torch")
    p = _write_torch(tmp_path, {"w": torch.ones(64)})
    q = tmp_path / "cut.pt"
    with zipfile.ZipFile(p) as src, zipfile.ZipFile(q, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            dst.writestr(info.filename, data[:10] if "/data/" in info.filename else data)
    with pytest.raises(RuntimeError, match=r"cut\.pt.*holds 10 bytes, expected 256"):
        st.load(q)


# ---------------------------------------------------------------- symtrace.save(format="torch")
def _symtrace_obj():
    st.manual_seed(1)
    base = st.arange(6.0)
    t = st.ones(2)
    t.note = "kept"
    p = st.nn.Parameter(st.full((2,), 2.0))
    p.tag = 3
    return {"w": st.randn(3, 4), "bf16": st.tensor([1.5, -2.0], dtype=st.bfloat16),
            "i8": st.tensor([-3, 4], dtype=st.int8), "b": st.tensor([True, False]),
            "zero_d": st.tensor(7), "empty": st.zeros(0, 2), "t": st.arange(6).reshape(2, 3).t(),
            "base": base, "view": base[1:4], "expanded": st.ones(3).expand(2, 3),
            "p": st.nn.Parameter(st.ones(2)), "p_attr": p, "rg": st.ones(2, requires_grad=True),
            "attr": t, "dtype": st.float16, "device": st.device("cpu"), "size": st.Size([4]),
            "nested": [1, (2.5, "x"), {"k": None}]}


def test_symtrace_writes_what_torch_loads_with_weights_only(tmp_path):
    torch = pytest.importorskip("torch")
    obj = _symtrace_obj()
    p = tmp_path / "s.pt"
    st.save(obj, p, format="torch")
    r = torch.load(p, weights_only=True)
    for k in ("w", "bf16", "i8", "b", "zero_d", "empty", "t", "base", "view", "expanded"):
        assert str(r[k].dtype).split(".")[-1] == str(obj[k].dtype).split(".")[-1], k
        assert tuple(r[k].shape) == tuple(obj[k].shape), k
        np.testing.assert_array_equal(np.asarray(r[k].float().tolist()), _np(obj[k]).astype(np.float32), err_msg=k)
    assert type(r["p"]) is torch.nn.Parameter and r["p"].requires_grad
    assert type(r["p_attr"]) is torch.nn.Parameter and r["p_attr"].tag == 3
    assert r["rg"].requires_grad and not r["w"].requires_grad and r["attr"].note == "kept"
    assert r["dtype"] is torch.float16 and r["device"] == torch.device("cpu") and r["size"] == torch.Size([4])
    assert r["nested"] == [1, (2.5, "x"), {"k": None}]
    r["view"][0] = 50.0                       # views of one storage still share it in torch
    assert r["base"][1].item() == 50.0
    m = torch.load(p, mmap=True, weights_only=True)     # data records aligned as torch writes them
    assert torch.equal(m["w"], r["w"])


def test_symtrace_model_state_into_torch(tmp_path):
    torch = pytest.importorskip("torch")
    st.manual_seed(0)
    sm = st.nn.Sequential(st.nn.Linear(3, 4), st.nn.BatchNorm1d(4), st.nn.Linear(4, 2))
    sm(st.randn(6, 3))                          # running stats move
    p = tmp_path / "m.pt"
    st.save(sm.state_dict(), p, format="torch")
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    tm.load_state_dict(torch.load(p))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(tm.eval()(torch.from_numpy(x)).detach().numpy(), _np(sm.eval()(st.tensor(x))),
                               rtol=1e-5, atol=1e-6)


def test_torch_format_round_trip_without_torch():
    obj = _symtrace_obj()
    buf = io.BytesIO()
    st.save(obj, buf, format="torch")
    buf.seek(0)
    with zipfile.ZipFile(buf) as z:
        names = z.namelist()
    assert "archive/data.pkl" in names and "archive/version" in names and "archive/byteorder" in names
    buf.seek(0)
    r = st.load(buf)
    for k in ("w", "bf16", "i8", "b", "zero_d", "empty", "t", "view", "expanded"):
        assert r[k].dtype == obj[k].dtype and tuple(r[k].shape) == tuple(obj[k].shape), k
        np.testing.assert_array_equal(_np(r[k]), _np(obj[k]), err_msg=k)
    assert type(r["p"]) is st.nn.Parameter and r["p_attr"].tag == 3 and r["attr"].note == "kept"
    assert r["rg"].requires_grad and r["dtype"] is st.float16 and r["nested"] == [1, (2.5, "x"), {"k": None}]
    r["view"][0] = 50.0
    assert r["base"][1].item() == 50.0


def test_torch_format_refuses_what_torch_cannot_hold():
    class MyParam(st.nn.Parameter):
        pass
    # a subclass is pickled by its class's name, as torch.save does: a local class has none
    with pytest.raises((pickle.PicklingError, AttributeError), match="MyParam"):
        st.save({"a": MyParam(st.ones(2))}, io.BytesIO(), format="torch")
    with pytest.raises(ValueError, match="format must be 'symtrace' or 'torch', got 'onnx'"):
        st.save({"a": 1}, io.BytesIO(), format="onnx")
