"""bench.bert_pretrain: the symtrace BERT against the PyTorch twin (loss and
gradients), eager against compiled training, HDF5 shards, the CLI."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import symtrace as st
from bench.bert_pretrain import data as D
from bench.bert_pretrain import model as M

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _batch(B=4, S=32, seed=1, vocab=1024):
    rec = D.synthetic_records(B, S, vocab, seed=seed)
    return D.to_batch(rec, 0, B)


def test_synthetic_data_layout():
    rec = D.synthetic_records(6, 32, 1024, seed=3)
    again = D.synthetic_records(6, 32, 1024, seed=3)
    for k in D.KEYS:
        np.testing.assert_array_equal(rec[k], again[k])
    assert rec["masked_lm_positions"].shape == (6, 20)
    lens = rec["input_mask"].sum(1)
    assert (lens >= 16).all() and (lens <= 32).all()
    # 20 masked per sequence (all fit: length >= 16 > ... or fewer if the sequence is short)
    for i in range(6):
        k = int((rec["masked_lm_positions"][i] > 0).sum())
        assert k == min(20, lens[i] - 1)
    b = D.to_batch(rec, 2, 6)
    assert b["masked_positions"].shape == (80,) and b["masked_labels"].shape == (80,)
    flat_ids = b["input_ids"].reshape(-1)
    assert (flat_ids[b["masked_positions"][b["masked_labels"] >= 0]] == 3).all()   # [MASK]
    assert ((b["masked_labels"] == -100) == (rec["masked_lm_positions"][2:6].reshape(-1) == 0)).all()
    # short sequences: fewer masked positions
    assert D.synthetic_records(2, 8, 100)["masked_lm_positions"].shape == (2, 7)


def test_model_layout_and_init():
    m = M.build_model("tiny", dropout=0.0, seed=0)
    names = dict(m.named_parameters())
    assert "cls.decoder_bias" in names and "bert.embeddings.word_embeddings.weight" in names
    assert not any("decoder.weight" in n for n in names)          # tied to the word embeddings
    w = np.asarray(names["bert.layers.0.linear1.weight"].detach().numpy())
    assert abs(w.std() - 0.02) < 0.003 and abs(w.mean()) < 0.003
    assert (np.asarray(names["bert.layers.1.norm2.weight"].detach().numpy()) == 1).all()
    assert (np.asarray(names["bert.layers.1.linear2.bias"].detach().numpy()) == 0).all()
    assert M.no_decay("bert.layers.0.norm1.weight") and M.no_decay("bert.pooler.bias")
    assert not M.no_decay("bert.layers.0.attention.q.weight")
    with pytest.raises(ValueError):
        M.BertConfig("huge")


def test_loss_and_grads_match_torch():
    torch = pytest.importorskip("torch")
    from bench.bert_pretrain.torch_model import build_torch_model
    m = M.build_model("tiny", dropout=0.0, seed=0)
    tm = build_torch_model(m)
    b = _batch()
    loss = m(*D.to_symtrace(b))
    loss.backward()
    tloss = tm(*D.to_torch(b))
    tloss.backward()
    assert abs(loss.item() - tloss.item()) <= 1e-5 * abs(tloss.item())
    tp = dict(tm.named_parameters())
    gmax = max(float(q.grad.abs().max()) for q in tp.values())
    for n, p in m.named_parameters():
        g = np.asarray(p.grad.numpy())
        h = tp[n].grad.numpy()
        np.testing.assert_allclose(g, h, rtol=1e-3, atol=1e-5 * gmax, err_msg=n)
    assert torch.is_tensor(tloss)


def _train(steps, backend, B=4, S=32, amp=False):
    m = M.build_model("tiny", dropout=0.0, seed=0)
    opt = st.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)

    def step(*batch):
        with st.autocast("cpu", enabled=amp):
            loss = m(*batch)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    fn = step if backend is None else st.compile(step, backend=backend)
    rec = D.synthetic_records(B * steps, S, m.config.vocab_size, seed=2)
    return [float(fn(*D.to_symtrace(b))) for _, _, b in D.batches(rec, B, steps)]


def test_amp_loss_and_grads_match_torch_autocast():
    """bfloat16 autocast in both frameworks: the loss within 1e-3 of
    PyTorch's, and every gradient as close to the float32 gradient as
    PyTorch's autocast gradient is (both round differently: a tanh near
    saturation turns one rounding step of y into a large change of
    1 - y^2, so the two bfloat16 runs are compared through float32)."""
    torch = pytest.importorskip("torch")
    from bench.bert_pretrain.torch_model import build_torch_model
    m = M.build_model("tiny", dropout=0.0, seed=0)
    tm, tm32 = build_torch_model(m), build_torch_model(m)
    b = _batch()
    with st.autocast("cpu", dtype=st.bfloat16):
        loss = m(*D.to_symtrace(b))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tloss = tm(*D.to_torch(b))
    loss32 = tm32(*D.to_torch(b))
    assert loss.dtype is st.float32 and tloss.dtype is torch.float32
    for x in (loss, tloss, loss32):
        x.backward()
    assert abs(loss.item() - tloss.item()) <= 1e-3 * abs(tloss.item())
    assert loss.item() != loss32.item()                    # the products did run in bfloat16
    tp, t32 = dict(tm.named_parameters()), dict(tm32.named_parameters())
    gmax = max(float(q.grad.abs().max()) for q in t32.values())
    for n, p in m.named_parameters():
        assert p.grad.dtype is st.float32, n
        ref = t32[n].grad.numpy()
        if np.abs(ref).max() < 1e-5 * gmax:                 # the key biases: zero but for rounding
            continue
        nr = float(np.linalg.norm(ref))
        ours = float(np.linalg.norm(p.grad.numpy() - ref)) / nr
        theirs = float(np.linalg.norm(tp[n].grad.numpy() - ref)) / nr
        assert ours <= 2 * theirs + 0.02, (n, ours, theirs)


@pytest.mark.skipif(not st._C._fe_supported(), reason="no frame hook on this Python")
def test_amp_eager_and_compiled_training_agree():
    st.reset()
    eager = _train(3, None, amp=True)
    comp = _train(3, "llvm" if st._C._fe_backend_available("llvm") else "interp", amp=True)
    np.testing.assert_allclose(comp, eager, rtol=1e-4)
    f32 = _train(3, None)
    assert eager != f32 and np.allclose(eager, f32, rtol=1e-2)   # bfloat16 products, close to float32


@pytest.mark.skipif(not st._C._fe_supported(), reason="no frame hook on this Python")
def test_eager_and_compiled_training_agree():
    st.reset()
    before = st._C._fe_stats()["translations"]
    eager = _train(4, None)
    comp = _train(4, "llvm" if st._C._fe_backend_available("llvm") else "interp")
    np.testing.assert_allclose(comp, eager, rtol=1e-4)
    assert eager[0] != eager[-1]          # it trains (the weights move)
    stats = st._C._fe_stats()
    assert stats["translations"] > before  # the model's forward was captured
    # the step frame keeps the graph before loss.backward() (the forward,
    # inlined, with its compiled backward) and resumes after the break
    codes = [k for k, c in stats["codes"].items() if k.startswith("_train.<locals>.step ")]
    assert codes and stats["codes"][codes[0]]["entries"] >= 1 and not stats["codes"][codes[0]]["plain"]
    assert stats["resumes"] >= 1 and stats["graphs"] >= 1


@pytest.mark.skipif(not st._C._fe_supported() or not st._C._fe_backend_available("cudaemu"),
                    reason="no frame hook, or no C++ compiler for cudaemu")
def test_cuda_kernels_train_bert_tiny_emulated():
    """The whole compiled step (forward, backward, AdamW) through the CUDA C
    the nvrtc backend renders, run on the CPU by cudaemu: the same losses as
    eager (dropout 0). Steps 2.. run the compiled kernels (the first call is
    traced eagerly)."""
    st.reset()
    eager = _train(3, None, B=2, S=24)
    emu = _train(3, "cudaemu", B=2, S=24)
    np.testing.assert_allclose(emu, eager, rtol=1e-5)
    assert eager[1] != eager[2]


def test_hdf5_shard_trains(tmp_path):
    pytest.importorskip("h5py")
    rec = D.synthetic_records(8, 32, 1024, seed=5)
    D.write_hdf5_shard(str(tmp_path / "part_0.hdf5"), rec)
    got = D.hdf5_records(str(tmp_path))
    for k in D.KEYS:
        np.testing.assert_array_equal(got[k], rec[k])
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "bench.bert_pretrain", "--config", "tiny", "--batch-size", "4",
                        "--steps", "3", "--backend", "eager", "--input-dir", str(tmp_path), "--json", str(out),
                        "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    j = json.loads(out.read_text())
    assert j["args"]["seq_len"] == 32 and j["args"]["input_dir"] == str(tmp_path)
    losses = [s["loss"] for s in j["runs"][0]["steps"]]
    assert len(losses) == 3 and all(np.isfinite(losses))


def test_cli_end_to_end_json(tmp_path):
    out = tmp_path / "r.json"
    png = tmp_path / "r.png"
    args = [sys.executable, "-m", "bench.bert_pretrain", "--config", "tiny", "--batch-size", "2",
            "--seq-len", "16", "--steps", "2", "--dropout", "0", "--json", str(out), "--compare", "eager",
            "--interleave"]
    try:
        import matplotlib  # noqa: F401
        args += ["--plot", str(png)]
    except ImportError:
        png = None
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "global step: 2, epoch: 0, batch: 1, loss: " in r.stdout
    assert "avg_reader_cost:" in r.stdout and "ips:" in r.stdout and "sequences/sec" in r.stdout
    j = json.loads(out.read_text())
    assert [r["name"] for r in j["runs"]] == ["symtrace eager", "symtrace compiled"]
    par = j["parity"]["runs"][j["runs"][1]["name"]]
    assert par["within_tol"] and par["max_rel"] <= 1e-4
    run = j["runs"][1]
    for k in ("name", "backend", "median_ips", "ms_per_step", "peak_mem_bytes", "compile_s", "first_loss",
              "last_loss", "steps", "rss_growth_bytes"):
        assert k in run, k
    assert len(run["steps"]) == 2 and run["peak_mem_bytes"] > 0
    assert j["args"]["config"] == "tiny" and j["config"]["hidden_size"] == 64
    if st._C._fe_supported():
        assert run["name"] == "symtrace compiled" and run["graphs"] >= 1 and run["graph_breaks"] >= 1
    if png is not None:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(st.cuda.is_available(), reason="checks the no-GPU error")
@pytest.mark.parametrize("flag", [["--backend", "nvrtc"], ["--device", "cuda"]])
def test_cli_clear_errors(flag):
    r = subprocess.run([sys.executable, "-m", "bench.bert_pretrain", "--config", "tiny", "--steps", "1"] + flag,
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "needs a CUDA GPU" in r.stderr and "none is available" in r.stderr


def test_cli_amp_against_torch_autocast(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "bench.bert_pretrain", "--config", "tiny", "--batch-size", "2",
                        "--seq-len", "16", "--steps", "3", "--dropout", "0", "--amp", "--compare", "torch-eager",
                        "--json", str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    j = json.loads(out.read_text())
    assert j["args"]["amp"] is True
    assert [x["key"] for x in j["runs"]][-1] == "torch_eager"
    par = j["parity"]
    assert par["tolerance_rel"] == 2e-2
    for v in par["runs"].values():
        assert v["within_tol"] and v["max_rel"] < 1e-3
    assert "loss parity" in r.stdout and "PASS" in r.stdout
