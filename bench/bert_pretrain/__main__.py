"""python -m bench.bert_pretrain: BERT pretraining with symtrace, side by side
with PyTorch (eager and torch.compile) on the same initial weights and batches.

Each run builds the model from the seed, trains --steps steps of AdamW with a
linear warm-up / decay schedule, logs one PaddleNLP-style line per step and
ends in a summary table; --json writes everything, --plot a PNG of loss and
ips per step. Without arguments: GPU, base, batch 32, seq 128 when a GPU is
there, else CPU, mini, batch 8, seq 128, 20 steps."""
import argparse
import json
import os
import statistics
import sys
import time

from . import data as D

RUN_NAMES = {"st_eager": "symtrace eager", "st_compiled": "symtrace compiled",
             "torch_eager": "torch eager", "torch_compile": "torch.compile"}


class UsageError(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m bench.bert_pretrain", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", choices=("base", "small", "mini", "tiny"), default=None)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps of the LR schedule (default steps/10)")
    p.add_argument("--backend", choices=("eager", "interp", "llvm", "nvrtc", "cudaemu"), default=None,
                   help="eager = symtrace without compile (default: nvrtc with a GPU, else llvm); "
                        "cudaemu = the nvrtc backend's CUDA kernels emulated on the CPU (a slow check)")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--amp", action="store_true",
                   help="bfloat16 autocast around forward and loss (symtrace.autocast; "
                        "torch.autocast for the PyTorch runs); loss parity then at 2e-2")
    p.add_argument("--compare", default="", help="comma list: torch (PyTorch eager + torch.compile), "
                   "torch-eager, eager (symtrace eager as well)")
    p.add_argument("--torch-threads", type=int, default=None,
                   help="torch.set_num_threads for the PyTorch runs (default: PyTorch's own)")
    p.add_argument("--input-dir", default=None, help="HDF5 shards (NVIDIA / PaddleNLP layout)")
    p.add_argument("--timing-warmup", type=int, default=None,
                   help="steps left out of the medians (default: min(3, steps/4), at least 1)")
    p.add_argument("--cold-cache", action="store_true",
                   help="fresh on-disk kernel cache (SYMTRACE_CACHE_DIR in a temp dir): compile time from cold")
    p.add_argument("--interleave", action="store_true",
                   help="run one step of each run in turn (fair timing on a shared machine; no RSS figures)")
    p.add_argument("--interleave-gap-ms", type=float, default=20.0,
                   help="with --interleave: idle time between two runs' steps (untimed), so that one "
                        "run's spinning worker threads (PyTorch's OpenMP, symtrace's pool) are asleep "
                        "before the next run's step starts (default 20)")
    p.add_argument("--json", default=None)
    p.add_argument("--plot", default=None)
    p.add_argument("--quiet", action="store_true", help="no per-step lines")
    return p.parse_args(argv)


def resolve(args):
    """Fills the defaults that depend on the machine; raises UsageError on
    requests this machine or build cannot honour."""
    import symtrace as st
    gpu = st.cuda.is_available()
    if args.device is None:
        args.device = "cuda" if gpu else "cpu"
    if args.backend is None:
        args.backend = "nvrtc" if args.device == "cuda" else "llvm"
        if args.backend == "llvm" and not st._C._fe_backend_available("llvm"):
            args.backend = "interp"
    if args.device == "cuda" or args.backend == "nvrtc":
        if not gpu:
            why = "--device cuda" if args.device == "cuda" else "--backend nvrtc"
            raise UsageError(f"{why} needs a CUDA GPU, and none is available here "
                             f"(symtrace.cuda.is_available() is False); use --device cpu --backend llvm")
        if args.backend in ("llvm", "interp", "cudaemu"):
            raise UsageError(f"--backend {args.backend} runs on the CPU; use --device cpu or --backend nvrtc")
    if args.backend != "eager" and not st._C._fe_backend_available(args.backend):
        raise UsageError(f"--backend {args.backend} is not in this build")
    big = args.device == "cuda"
    if args.config is None:
        args.config = "base" if big else "mini"
    if args.batch_size is None:
        args.batch_size = 32 if big else 8
    if args.steps is None:
        args.steps = 20
    if args.steps < 1 or args.batch_size < 1 or args.seq_len < 2:
        raise UsageError("--steps, --batch-size must be >= 1 and --seq-len >= 2")
    if args.warmup is None:
        args.warmup = max(1, args.steps // 10)
    if args.timing_warmup is None:
        args.timing_warmup = max(1, min(3, args.steps // 4))
    args.timing_warmup = min(args.timing_warmup, args.steps - 1)
    want = [c.strip() for c in args.compare.split(",") if c.strip()]
    for c in want:
        if c not in ("torch", "torch-eager", "eager"):
            raise UsageError(f"--compare {c!r}: choices are torch, torch-eager, eager")
    runs = []
    if "eager" in want and args.backend != "eager":
        runs.append("st_eager")
    runs.append("st_eager" if args.backend == "eager" else "st_compiled")
    if "torch" in want or "torch-eager" in want:
        try:
            import torch  # noqa: F401
        except ImportError as e:
            raise UsageError("--compare torch needs PyTorch installed") from e
        runs.append("torch_eager")
        if "torch" in want and hasattr(torch, "compile"):
            runs.append("torch_compile")
    args.runs = runs
    return args


def lr_lambda(warmup, total):
    """Linear warm-up then linear decay to 0 (as symtrace's get_linear_schedule_with_warmup)."""
    def f(step):
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))
    return f


# ---------------- memory: the process's resident set (both frameworks) ----------------
def _reset_rss_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rss(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


# ---------------- the training loops ----------------
def _log(tag, step, epoch, batch, loss, reader, cost, bs, quiet):
    if quiet:
        return
    print(f"[{tag}] global step: {step}, epoch: {epoch}, batch: {batch}, loss: {loss:.6f}, "
          f"avg_reader_cost: {reader:.5f} sec, avg_batch_cost: {cost:.5f} sec, avg_samples: {bs}, "
          f"ips: {bs / cost:.5f} sequences/sec", flush=True)


def _train(tag, step_fn, to_tensors, batches, args, first_note, steps):
    """Runs the steps, appending one record each to steps; yields after every
    step so that several runs can be interleaved (--interleave)."""
    for i, (epoch, b, batch) in enumerate(batches, 1):
        if i == 1 and first_note:
            print(f"[{tag}] step 1: {first_note} ...", flush=True)
        t0 = time.perf_counter()
        ins = to_tensors(batch)
        t1 = time.perf_counter()
        loss = float(step_fn(*ins))
        t2 = time.perf_counter()
        if i == 1 and first_note:
            print(f"[{tag}] step 1 done in {t2 - t0:.2f} s", flush=True)
        steps.append({"step": i, "loss": loss, "reader_cost": t1 - t0, "batch_cost": t2 - t0,
                      "ips": args.batch_size / (t2 - t0)})
        _log(tag, i, epoch, b, loss, t1 - t0, t2 - t0, args.batch_size, args.quiet)
        yield


def run_symtrace(kind, args, batches):
    import symtrace as st
    from .model import build_model, no_decay
    compiled = kind == "st_compiled"
    model = build_model(args.config, dropout=args.dropout, seed=args.seed)
    if args.device != "cpu":
        model.to(args.device)
    model.train()
    params = list(model.named_parameters())
    groups = [{"params": [p for n, p in params if not no_decay(n)], "weight_decay": 0.01},
              {"params": [p for n, p in params if no_decay(n)], "weight_decay": 0.0}]
    opt = st.optim.AdamW(groups, lr=args.lr, eps=1e-6)
    # a LambdaLR whose lambda lives in symtrace.optim (a user lambda here would be a
    # frame of its own under the compiled step, re-translated for every step value)
    sched = st.optim.lr_scheduler.get_linear_schedule_with_warmup(opt, args.warmup, args.steps)
    amp, amp_dev = args.amp, args.device

    def train_step(input_ids, token_type_ids, position_ids, input_mask, masked_positions,
                   masked_labels, nsp_labels):
        # backward outside the autocast region, as PyTorch advises
        with st.autocast(amp_dev, dtype=st.bfloat16, enabled=amp):
            loss = model(input_ids, token_type_ids, position_ids, input_mask, masked_positions,
                         masked_labels, nsp_labels)
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        return loss

    step_fn = st.compile(train_step, backend=args.backend) if compiled else train_step
    dev = args.device

    def to_tensors(batch):
        ts = D.to_symtrace(batch)
        return ts if dev == "cpu" else tuple(t.to(dev) for t in ts)

    if compiled:
        st.reset()
    before = st._C._fe_stats()
    st.memory.reset_peak_stats(dev)
    _reset_rss_peak()
    rss0 = _rss("VmRSS")
    note = f"translating the step and compiling kernels ({args.backend})" if compiled else None
    steps = []
    yield from _train(RUN_NAMES[kind], step_fn, to_tensors, batches, args, note, steps)
    res = {"peak_mem_bytes": st.memory.max_memory_allocated(dev),
           "rss_growth_bytes": (_rss("VmHWM") - rss0) if rss0 is not None and not args.interleave else None,
           "steps": steps, "backend": args.backend if compiled else "eager",
           "threads": int(os.environ.get("SYMTRACE_NUM_THREADS") or os.cpu_count())}
    if compiled:
        after = st._C._fe_stats()
        codes = after.get("codes", {})
        res["graphs"] = sum(c.get("entries", 0) for c in codes.values() if not c.get("plain"))
        res["graph_breaks"] = after["breaks"] - before["breaks"]
        res["break_reasons"] = {k: c["reason"] for k, c in codes.items() if c.get("plain") or c.get("reason")}
        res["frontend_stats"] = {k: after[k] - before[k] for k in ("translations", "hits", "misses",
                                                                     "breaks", "fallbacks", "frames")}
    return res


def run_torch(kind, args, batches):
    import torch
    from .model import build_model, no_decay
    from .torch_model import build_torch_model
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    st_model = build_model(args.config, dropout=args.dropout, seed=args.seed)
    model = build_torch_model(st_model)
    del st_model
    dev = "cuda" if args.device == "cuda" else "cpu"
    model.to(dev).train()
    params = list(model.named_parameters())
    groups = [{"params": [p for n, p in params if not no_decay(n)], "weight_decay": 0.01},
              {"params": [p for n, p in params if no_decay(n)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=args.lr, eps=1e-6)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(args.warmup, args.steps))
    fwd = model
    if kind == "torch_compile":
        import torch._dynamo
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        fwd = torch.compile(model)

    def train_step(*batch):
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=args.amp):
            loss = fwd(*batch)
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        return loss.detach()

    def to_tensors(batch):
        ts = D.to_torch(batch)
        return ts if dev == "cpu" else tuple(t.to(dev) for t in ts)

    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    _reset_rss_peak()
    rss0 = _rss("VmRSS")
    note = "torch.compile (dynamo + inductor) compiling the model" if kind == "torch_compile" else None
    steps = []
    yield from _train(RUN_NAMES[kind], train_step, to_tensors, batches, args, note, steps)
    res = {"peak_mem_bytes": torch.cuda.max_memory_allocated() if dev == "cuda" else None,
           "rss_growth_bytes": (_rss("VmHWM") - rss0) if rss0 is not None and not args.interleave else None,
           "steps": steps, "backend": "inductor" if kind == "torch_compile" else "eager",
           "threads": torch.get_num_threads()}
    if kind == "torch_compile":
        from torch._dynamo.utils import counters
        res["graphs"] = int(counters["stats"].get("unique_graphs", 0))
        res["graph_breaks"] = int(sum(counters["graph_break"].values()))
        res["break_reasons"] = {k: v for k, v in counters["graph_break"].items()}
    return res


def summarize(name, res, skip):
    steps = res["steps"]
    timed = [s["batch_cost"] for s in steps[skip:]] or [s["batch_cost"] for s in steps]
    med = statistics.median(timed)
    res.update({"name": RUN_NAMES[name], "key": name, "median_step_s": med, "ms_per_step": med * 1e3,
                "median_ips": statistics.median([s["ips"] for s in steps[skip:]] or [steps[-1]["ips"]]),
                "first_step_s": steps[0]["batch_cost"],
                # every warm-up step's time over the median: the step function
                # traces and compiles again on step 2 (the optimizer's state
                # exists from then on), which a cold kernel cache makes long
                "compile_s": sum(max(0.0, s["batch_cost"] - med) for s in steps[:max(skip, 1)])
                if name in ("st_compiled", "torch_compile") else None,
                "first_loss": steps[0]["loss"], "last_loss": steps[-1]["loss"]})
    return res


def _fmt_mb(b):
    return "n/a" if b is None else f"{b / 2**20:.1f}"


def print_table(runs):
    base = next((r for r in runs if r["key"] == "torch_eager"), None)
    cols = ["run", "backend", "threads", "median ips", "ms/step", "vs torch eager", "peak alloc MB", "RSS growth MB",
            "compile s", "graphs", "breaks", "first loss", "last loss"]
    rows = []
    for r in runs:
        rows.append([r["name"], r["backend"], str(r.get("threads", "-")), f"{r['median_ips']:.2f}", f"{r['ms_per_step']:.1f}",
                     f"{r['median_ips'] / base['median_ips']:.2f}x" if base else "-",
                     _fmt_mb(r["peak_mem_bytes"]), _fmt_mb(r["rss_growth_bytes"]),
                     "-" if r["compile_s"] is None else f"{r['compile_s']:.2f}",
                     str(r.get("graphs", "-")), str(r.get("graph_breaks", "-")),
                     f"{r['first_loss']:.6f}", f"{r['last_loss']:.6f}"])
    w = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(cols)) + " |")
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for row in rows:
        print("| " + " | ".join(v.ljust(w[i]) for i, v in enumerate(row)) + " |")


F32_TOL = 1e-3   # the bound, float32
AMP_TOL = 2e-2   # bfloat16 autocast: products rounded to 8 bits of mantissa, in each framework its own way


def parity(runs, dropout, tol=F32_TOL):
    """Per-step loss of every run against the first torch run (or the first run)."""
    ref = next((r for r in runs if r["key"] == "torch_eager"), runs[0])
    out = {"reference": ref["name"], "tolerance_rel": tol, "dropout": dropout, "runs": {}}
    for r in runs:
        if r is ref:
            continue
        rel = [abs(a["loss"] - b["loss"]) / max(abs(b["loss"]), 1e-12) for a, b in zip(r["steps"], ref["steps"])]
        out["runs"][r["name"]] = {"max_rel": max(rel), "worst_step": rel.index(max(rel)) + 1,
                                  "within_tol": max(rel) <= tol}
    return out


def print_losses(runs, par):
    names = [r["name"] for r in runs]
    print("per-step loss, side by side" + ("" if par["dropout"] == 0 else
                                          " (dropout > 0: the runs draw different masks, losses differ)"))
    print("| step | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for i in range(len(runs[0]["steps"])):
        print(f"| {i + 1} | " + " | ".join(f"{r['steps'][i]['loss']:.6f}" for r in runs) + " |")
    for n, v in par["runs"].items():
        verdict = ("PASS" if v["within_tol"] else "FAIL") if par["dropout"] == 0 else "n/a (dropout)"
        print(f"loss parity {n} vs {par['reference']}: max rel diff {v['max_rel']:.2e} "
              f"(step {v['worst_step']}), tolerance {par['tolerance_rel']:.0e}: {verdict}")


def plot(path, runs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for r in runs:
        xs = [s["step"] for s in r["steps"]]
        a.plot(xs, [s["loss"] for s in r["steps"]], label=r["name"], marker=".")
        b.plot(xs, [s["ips"] for s in r["steps"]], label=r["name"], marker=".")
    a.set(xlabel="step", ylabel="loss", title="loss")
    b.set(xlabel="step", ylabel="sequences/sec", title="ips", yscale="log")
    a.legend()
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.cold_cache:
        import tempfile
        os.environ["SYMTRACE_CACHE_DIR"] = tempfile.mkdtemp(prefix="symtrace-cache-")
    try:
        args = resolve(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from .model import BertConfig
    cfg = BertConfig(args.config, dropout=args.dropout)
    if args.input_dir:
        rec = D.hdf5_records(args.input_dir)
        if rec["input_ids"].shape[1] != args.seq_len:
            args.seq_len = int(rec["input_ids"].shape[1])
    else:
        rec = D.synthetic_records(args.batch_size * min(args.steps, 64), args.seq_len, cfg.vocab_size, args.seed)
    batches = list(D.batches(rec, args.batch_size, args.steps))
    print(f"bert_pretrain: config {args.config} (L{cfg.num_hidden_layers} H{cfg.hidden_size} "
          f"A{cfg.num_attention_heads} I{cfg.intermediate_size} V{cfg.vocab_size}), batch {args.batch_size}, "
          f"seq {args.seq_len}, {args.steps} steps, device {args.device}, dropout {args.dropout}, "
          f"{'bfloat16 autocast' if args.amp else 'float32'}, "
          f"data {'hdf5 ' + args.input_dir if args.input_dir else 'synthetic'}, runs: "
          f"{', '.join(RUN_NAMES[r] + (' (' + args.backend + ')' if r == 'st_compiled' else '') for r in args.runs)}",
          flush=True)
    gens = [(kind, run_symtrace(kind, args, batches) if kind.startswith("st_") else run_torch(kind, args, batches))
            for kind in args.runs]
    results = {}
    if args.interleave:
        # one step of every run in turn: a shared machine's load then weighs on all runs alike
        live = list(gens)
        while live:
            for kind, g in list(live):
                try:
                    next(g)
                except StopIteration as stop:
                    results[kind] = stop.value
                    live.remove((kind, g))
                if args.interleave_gap_ms > 0:
                    time.sleep(args.interleave_gap_ms / 1e3)
    else:
        for kind, g in gens:
            try:
                while True:
                    next(g)
            except StopIteration as stop:
                results[kind] = stop.value
    runs = [summarize(kind, results[kind], args.timing_warmup) for kind in args.runs]
    print(f"\nsummary (medians over steps {args.timing_warmup + 1}..{args.steps}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    print_table(runs)
    par = parity(runs, args.dropout, AMP_TOL if args.amp else F32_TOL) if len(runs) > 1 else None
    if par:
        print()
        print_losses(runs, par)
    for r in runs:
        if r.get("break_reasons"):
            print(f"{r['name']}: graph breaks / plain frames: " +
                  "; ".join(f"{k}: {v}" for k, v in r["break_reasons"].items()))
    if args.json:
        out = {"args": {k: v for k, v in vars(args).items()}, "config": cfg.as_dict(),
               "loadavg": os.getloadavg(), "cpu_count": os.cpu_count(), "runs": runs, "parity": par}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    if args.plot:
        plot(args.plot, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
