"""Micro-benchmark: one training step of a small transformer classifier,
symtrace eager vs PyTorch eager, on the same machine.

    .venv/bin/python bench/micro/train_step.py [--json PATH] [--steps 30] [--batch 16] [--seq 32]

The model is the one of tests/python/test_parity_transformer.py: Embedding(20,
d) -> TransformerEncoder of 2 TransformerEncoderLayer(d, nhead 4, ff 2d,
dropout 0, batch_first) -> mean over the sequence -> Linear(d, 3) ->
CrossEntropyLoss, d = 32 by default. One step = forward, zero_grad,
backward, AdamW step (lr 1e-3), on a fixed batch with a key padding mask.

Each framework runs in its own subprocess (so that one's memory does not
count against the other): build the model with the same initial weights,
warm up (--warmup steps: kernel caches, optimizer state), then time --steps
steps one by one; the figure is the median seconds per step. PyTorch runs
with its default thread count and with torch.set_num_threads(1); symtrace
eager is single-threaded.

Memory, what is measured:
  - symtrace allocator live / peak: symtrace.memory.memory_allocated() when
    the timed steps begin (parameters, gradients, AdamW state: they stay
    live) and symtrace.memory.max_memory_allocated() over the timed steps
    after memory.reset_peak_stats(): the most bytes live in symtrace's
    caching allocator at once (activations saved for backward included).
  - RSS growth (both frameworks; PyTorch's CPU allocator keeps no statistics
    of its own and tracemalloc cannot see it): the process's peak resident
    set (VmHWM, reset by writing 5 to /proc/self/clear_refs) minus its
    resident set (VmRSS) at the reset. "first steps": reset after the model,
    optimizer and data are built, peak over the warm-up steps (the first
    activations, gradients and optimizer state, plus whatever the libraries
    map on first use); "timed steps": reset after the warm-up, peak over the
    timed steps (what a steady-state step needs beyond what the process
    already holds; 0 when caches already hold it). "n/a" without /proc.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
VOCAB, CLASSES, NHEAD, LAYERS = 20, 3, 4, 2


def _proc_kb(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def make_data(args):
    import numpy as np
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCAB, size=(args.batch, args.seq))
    lengths = rng.integers(args.seq // 2, args.seq + 1, size=args.batch)
    pad = np.arange(args.seq)[None, :] >= lengths[:, None]
    labels = (ids[:, 0] + ids[:, -1]) % CLASSES
    return ids, pad, labels


def build(lib, d, is_torch):
    class Classifier(lib.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.Embedding(VOCAB, d)
            layer = lib.TransformerEncoderLayer(d, NHEAD, dim_feedforward=2 * d, dropout=0.0, batch_first=True)
            kw = {"enable_nested_tensor": False} if is_torch else {}
            self.encoder = lib.TransformerEncoder(layer, LAYERS, **kw)
            self.head = lib.Linear(d, CLASSES)

        def forward(self, ids, pad_mask):
            return self.head(self.encoder(self.embed(ids), src_key_padding_mask=pad_mask).mean(1))
    return Classifier()


def worker(args):
    """Runs in a subprocess: times args.steps steps of one framework, prints JSON."""
    import numpy as np
    import torch
    torch.manual_seed(0)
    tmodel = build(torch.nn, args.d_model, True)
    ids, pad, labels = make_data(args)
    out = {"framework": args.worker, "threads": None}
    if args.worker == "symtrace":
        if ROOT not in sys.path:
            sys.path.append(ROOT)  # after PYTHONPATH, so that a PYTHONPATH build can be measured
        import symtrace as st
        import symtrace.optim  # noqa: F401  (symtrace/__init__ may not import it)
        model = build(st.nn, args.d_model, False)
        model.load_state_dict({k: st.tensor(v.detach().numpy()) for k, v in tmodel.state_dict().items()})
        del tmodel
        opt = st.optim.AdamW(model.parameters(), lr=1e-3)
        loss_fn = st.nn.CrossEntropyLoss()
        x, m, y = st.tensor(ids), st.tensor(pad), st.tensor(labels)
        out["threads"] = 1
    else:
        if args.threads:
            torch.set_num_threads(args.threads)
        out["threads"] = torch.get_num_threads()
        model = tmodel
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        loss_fn = torch.nn.CrossEntropyLoss()
        x, m, y = torch.from_numpy(ids), torch.from_numpy(pad), torch.from_numpy(labels)

    def step():
        loss = loss_fn(model(x, m), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    rss_cold = _proc_kb("VmRSS")
    hwm_ok = _reset_hwm()
    losses = [step() for _ in range(args.warmup)]
    hwm_cold = _proc_kb("VmHWM")
    if args.worker == "symtrace":
        st.memory.reset_peak_stats()
        live_before = st.memory.memory_allocated()
    rss0 = _proc_kb("VmRSS")
    hwm_ok = hwm_ok and _reset_hwm()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        losses.append(step())
        times.append(time.perf_counter() - t0)
    hwm = _proc_kb("VmHWM")
    out["median_ms"] = 1e3 * statistics.median(times)
    out["min_ms"] = 1e3 * min(times)
    out["final_loss"] = losses[-1]
    out["rss_growth_mb"] = (max(0, hwm - rss0) / 1024.0) if (hwm_ok and hwm and rss0) else None
    out["rss_mb"] = rss0 / 1024.0 if rss0 else None
    out["rss_growth_cold_mb"] = (max(0, hwm_cold - rss_cold) / 1024.0) if (hwm_ok and hwm_cold and rss_cold) \
        else None
    if args.worker == "symtrace":
        out["alloc_peak_mb"] = st.memory.max_memory_allocated() / 2**20
        out["alloc_live_before_mb"] = live_before / 2**20
    print("RESULT " + json.dumps(out))


def run_worker(kind, args, threads=None):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--batch", str(args.batch), "--seq", str(args.seq),
           "--d-model", str(args.d_model)]
    if threads:
        cmd += ["--threads", str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:]), None
    return None, (p.stderr.strip().splitlines() or ["failed"])[-1]


def fmt(v, nd=2):
    return "n/a" if v is None else f"{v:.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--d-model", type=int, default=32)
    ap.add_argument("--worker", choices=["symtrace", "torch"], help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    runs = [("symtrace", None), ("torch", None), ("torch", 1)]
    results = {}
    for kind, threads in runs:
        label = kind if threads is None else f"{kind} (1 thread)"
        r, err = run_worker(kind, args, threads)
        results[label] = r if r is not None else {"error": err}
    s = results.get("symtrace", {})
    print(f"train step: Embedding + {LAYERS}-layer TransformerEncoder (d_model {args.d_model}, nhead {NHEAD}, "
          f"ff {2 * args.d_model}) + Linear + CrossEntropy, AdamW; batch {args.batch}, seq {args.seq}; "
          f"median of {args.steps} steps after {args.warmup} warm-up")
    print(f"{'':18s} {'ms/step':>8s} {'threads':>7s} {'RSS growth, first steps MB':>27s} "
          f"{'RSS growth, timed steps MB':>27s} {'allocator live/peak MB':>23s} {'final loss':>11s}")
    for label, r in results.items():
        if "error" in r:
            print(f"{label:18s} n/a ({r['error']})")
            continue
        alloc = "n/a" if "alloc_peak_mb" not in r else \
            f"{fmt(r['alloc_live_before_mb'])} / {fmt(r['alloc_peak_mb'])}"
        print(f"{label:18s} {fmt(r['median_ms']):>8s} {r['threads']!s:>7s} {fmt(r['rss_growth_cold_mb']):>27s} "
              f"{fmt(r['rss_growth_mb']):>27s} {alloc:>23s} {r['final_loss']:>11.5f}")
    for label in ("torch", "torch (1 thread)"):
        t = results.get(label, {})
        if "median_ms" in s and "median_ms" in t:
            print(f"symtrace / {label}: {s['median_ms'] / t['median_ms']:.2f}x")
    if args.json:
        meta = {"machine": platform.machine(), "python": platform.python_version(), "cpus": os.cpu_count(),
                "batch": args.batch, "seq": args.seq, "d_model": args.d_model, "steps": args.steps,
                "warmup": args.warmup, "time": time.strftime("%Y-%m-%d %H:%M:%S")}
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
