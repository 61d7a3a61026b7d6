"""Where the compiled BERT step goes: per-phase medians (forward graph,
backward graph, AdamW, zero_grad), with --kernels every kernel's time per
step (symtrace.profiler), most time first, and with --memory each phase's
peak and end (the caching allocator's figures, MB) for the first step
(translated: it runs eagerly under the trace) and the last.

    python -m bench.micro.bert_step_profile [--config mini] [--steps 12] [--kernels] [--top 25] [--memory]

The model's forward is compiled (llvm); loss.backward() runs its compiled
backward graph; opt.step() is the fused AdamW. Steps 1..3 are left out of
the medians and the profile."""
import argparse
import statistics
import time

import symtrace as st
from bench.bert_pretrain import data as D
from bench.bert_pretrain.model import build_model, no_decay


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.micro.bert_step_profile")
    p.add_argument("--config", default="mini")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--backend", default="llvm")
    p.add_argument("--kernels", action="store_true", help="per-kernel times (symtrace.profiler)")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--amp", action="store_true", help="forward under bfloat16 autocast")
    p.add_argument("--memory", action="store_true",
                   help="per-phase peak and end memory of the first and the last step (MB)")
    a = p.parse_args(argv)
    if a.steps < 4:
        p.error("--steps must be at least 4 (steps 1..3 are warm-up)")
    model = build_model(a.config, dropout=a.dropout, seed=0)
    model.train()
    params = list(model.named_parameters())
    groups = [{"params": [q for n, q in params if not no_decay(n)], "weight_decay": 0.01},
              {"params": [q for n, q in params if no_decay(n)], "weight_decay": 0.0}]
    opt = st.optim.AdamW(groups, lr=1e-4, eps=1e-6)
    fwd = st.compile(model, backend=a.backend)
    vocab = model.config.vocab_size
    rec = D.synthetic_records(a.batch_size * a.steps, a.seq_len, vocab, seed=0)
    batches = [D.to_symtrace(b) for (_, _, b) in D.batches(rec, a.batch_size, a.steps)]
    times = {"forward": [], "backward": [], "opt.step": [], "zero_grad": []}
    prof = None
    mem = {}
    dev = "cuda" if a.backend == "nvrtc" else "cpu"

    def phase(i, name):
        # peak since the last call and the bytes alive now, in MB
        if a.memory and i in (0, len(batches) - 1):
            mem.setdefault(i, []).append((name, st.memory.max_memory_allocated(dev) / 1e6,
                                          st.memory.memory_allocated(dev) / 1e6))
        if a.memory:
            st.memory.reset_peak_stats(dev)

    for i, ins in enumerate(batches):
        if i == 3 and a.kernels:
            prof = st.profiler.profile()
            prof.__enter__()
        phase(i, "start")
        t0 = time.perf_counter()
        with st.autocast(dev, dtype=st.bfloat16, enabled=a.amp):
            loss = fwd(*ins)
        float(loss)
        t1 = time.perf_counter()
        phase(i, "forward")
        loss.backward()
        t2 = time.perf_counter()
        phase(i, "backward")
        opt.step()
        t3 = time.perf_counter()
        phase(i, "opt.step")
        opt.zero_grad()
        t4 = time.perf_counter()
        phase(i, "zero_grad")
        if i >= 3:
            for k, v in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                times[k].append(v)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"{a.config}, batch {a.batch_size}, seq {a.seq_len}, {a.backend}: medians over steps 4..{a.steps}")
    print("  " + ", ".join(f"{k} {v:.1f} ms" for k, v in med.items()) + f"; step {sum(med.values()):.1f} ms")
    for i, rows in sorted(mem.items()):
        print(f"memory, step {i + 1}{' (translated)' if i == 0 else ''}: start {rows[0][2]:.1f} MB; "
              + ", ".join(f"{n} peak {pk:.1f} end {now:.1f}" for n, pk, now in rows[1:]))
    if prof:
        prof.__exit__(None, None, None)
        n = len(batches) - 3
        print(f"kernel launches per step: {prof.total_ms() / n:.1f} ms (elementwise "
              f"{prof.total_ms('elementwise') / n:.1f}, reduce {prof.total_ms('reduce') / n:.1f}, "
              f"matmul {prof.total_ms('matmul') / n:.1f})")
        for r in prof.rows[:a.top]:
            print(f"  {r.total_ms / n:8.2f} ms/step {r.calls // n:4d} calls/step {r.points:12d} points  "
                  f"{r.name} ({r.kind})")


if __name__ == "__main__":
    main()
