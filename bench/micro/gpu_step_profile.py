"""Where a BERT training step goes on the GPU, for symtrace and its peers
alike: the bench's own runs (bench/bert_pretrain: the same model, batches,
optimizer and compiled step) with torch.profiler's CUPTI trace over the
steps after warm-up. CUPTI sees every kernel in the process, symtrace's
NVRTC kernels and cuBLAS calls as well as PyTorch's, so both sides are
timed on the device by the same clock, without SYMTRACE_CUDA_SYNC.

    python -m bench.micro.gpu_step_profile [--runs st,torch,compile] [--top 40] [bench args...]

Prints, per run: the step's wall time under the profiler (CUPTI slows
symtrace's launches far more than PyTorch's: take step times from the
bench, not from here), device busy time per step, time by group (cuBLAS products, symtrace's
generated kernels, PyTorch's own kernels, copies/memsets) and the top
kernels."""
import argparse
import re
import sys
import time

from bench.bert_pretrain import __main__ as B


def group(name):
    s = name.lower()
    if any(w in s for w in ("gemm", "xmma", "cutlass", "nvjet", "splitkreduce", "cublas")):
        return "cuBLAS"
    if s.startswith("memcpy") or s.startswith("memset"):
        return "copy/memset"
    if name.startswith("st_k"):
        return ("symtrace epilogues" if name.endswith("_epi") else
                "symtrace column reductions" if name.endswith("_col") else "symtrace kernels")
    return "framework kernels"


def pattern(name):
    """symtrace's kernels are named st_kG_kN_<ops>[_variant] (G the graph's
    kernel list, N the statement): the same ops in every layer are one row."""
    return re.sub(r"^st_k\d+_k\d+_", "st:", name)


def profile_run(kind, args, batches, warm, top):
    import torch
    from torch.profiler import ProfilerActivity, profile
    gen = B.run_symtrace(kind, args, batches) if kind.startswith("st_") else B.run_torch(kind, args, batches)
    for _ in range(warm):
        next(gen)
    torch.cuda.synchronize()
    n = 0
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in gen:
            n += 1
            if n == len(batches) - warm:
                break
        torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / n * 1e3
    rows = {}
    for e in prof.events():
        if e.device_type.name != "CUDA":
            continue
        t = e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        r = rows.setdefault(pattern(e.name), [0.0, 0])
        r[0] += t / 1e3 / n
        r[1] += 1
    busy = sum(r[0] for r in rows.values())
    by = {}
    for k, (t, c) in rows.items():
        g = group(k if not k.startswith("st:") else "st_k0_k0_" + k[3:])
        by[g] = by.get(g, 0.0) + t
    print(f"\n## {B.RUN_NAMES[kind]}: {n} profiled steps, wall {wall:.2f} ms/step, device busy {busy:.2f} ms/step, "
          f"launches {sum(r[1] for r in rows.values()) // n}/step")
    print("   " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(by.items(), key=lambda x: -x[1])))
    for name, (t, c) in sorted(rows.items(), key=lambda x: -x[1][0])[:top]:
        print(f"  {t:8.3f} ms/step {c // n:5d}/step {t / max(1, c // n) * 1e3:9.1f} us  {name[:100]}")
    sys.stdout.flush()


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.micro.gpu_step_profile", add_help=False)
    p.add_argument("--runs", default="st,torch")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--warm", type=int, default=3)
    a, rest = p.parse_known_args(argv)
    args = B.resolve(B.parse_args(rest + ["--quiet"]))
    from bench.bert_pretrain import data as D
    n = args.steps
    from bench.bert_pretrain.model import BertConfig
    cfg = BertConfig(args.config, dropout=args.dropout)
    rec = D.synthetic_records(args.batch_size * min(n, 64), args.seq_len, cfg.vocab_size, args.seed)
    batches = list(D.batches(rec, args.batch_size, n))
    kinds = {"st": "st_compiled", "eager": "st_eager", "torch": "torch_eager", "compile": "torch_compile"}
    for r in a.runs.split(","):
        profile_run(kinds[r.strip()], args, batches, a.warm, a.top)


if __name__ == "__main__":
    main()
