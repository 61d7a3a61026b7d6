"""bench/micro/hf_style_step.py: one BERT pretraining step written in HuggingFace's
idioms (tests/python/hf_bert_model.py: ModelOutput dataclasses that are OrderedDicts,
a loss module built in forward, finfo masks, ...) under symtrace eager, symtrace.compile
of the whole step, and PyTorch eager on the same weights and batches: median ms per
step, graphs and breaks, and the per-step losses side by side.

    python -m bench.micro.hf_style_step [--steps 8] [--layers 4] [--hidden 256] [--no-torch]

The default size is the bench's mini (4 layers, hidden 256, 4 heads, intermediate
1024, vocab 30522), batch 8, sequence 128, dropout 0; AdamW over the whole step.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import symtrace as st

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "python"))
import hf_bert_model  # noqa: E402  (the model the compile tests use)


def batches(n, b, s, vocab, seed=0):
    r = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ids = r.integers(1, vocab, (b, s))
        mask = np.ones((b, s), np.int64)
        mask[0, s - s // 8:] = 0
        tt = np.zeros((b, s), np.int64)
        tt[:, s // 2:] = 1
        labels = np.full((b, s), -100)
        labels[:, 5:25] = r.integers(1, vocab, (b, 20))
        out.append((ids, mask, tt, labels, r.integers(0, 2, b)))
    return out


def run(L, model, data, compiled):
    opt = L.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

    def step(ids, mask, tt, labels, nsl):
        out = model(ids, attention_mask=mask, token_type_ids=tt, labels=labels, next_sentence_label=nsl)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        return out.loss.detach()
    if compiled:
        step = st.compile(step)
    times, losses = [], []
    for b in data:
        args = [L.tensor(a) for a in b]
        t0 = time.perf_counter()
        losses.append(float(step(*args)))
        times.append(time.perf_counter() - t0)
    return times, losses


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args(argv)
    cfg = dict(vocab_size=30522, hidden_size=a.hidden, num_hidden_layers=a.layers,
               num_attention_heads=max(1, a.hidden // 64), intermediate_size=4 * a.hidden,
               max_position_embeddings=512)
    data = batches(a.steps, a.batch_size, a.seq_len, cfg["vocab_size"])
    torch = None
    if not a.no_torch:
        try:
            import torch
        except ImportError:
            pass
    if torch is not None:
        torch.manual_seed(0)
        tm = hf_bert_model.build(torch, hf_bert_model.Config(**cfg))
        state = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
    else:
        st.manual_seed(0)
        state = {k: np.asarray(v.tolist(), dtype=np.float32 if v.dtype.is_floating_point else np.int64)
                 for k, v in hf_bert_model.build(st, hf_bert_model.Config(**cfg)).state_dict().items()}
    rows = []
    for name in ("symtrace eager", "symtrace compiled"):
        st.reset()
        m = hf_bert_model.build(st, hf_bert_model.Config(**cfg))
        m.load_state_dict({k: st.tensor(v) for k, v in state.items()})
        times, losses = run(st, m, data, name.endswith("compiled"))
        s = st._C._fe_stats()
        rows.append((name, times, losses, s["graphs"], s["breaks"]))
    if torch is not None:
        tm.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
        times, losses = run(torch, tm, data, False)
        rows.append(("torch eager", times, losses, "-", "-"))
    print(f"HF-style BERT step: {a.layers} layers, hidden {a.hidden}, batch {a.batch_size}, "
          f"seq {a.seq_len}, {a.steps} steps; medians over steps 3..{a.steps}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| run | median ms | first step ms | graphs | breaks | first loss | last loss |")
    print("|---|---|---|---|---|---|---|")
    for name, times, losses, g, b in rows:
        med = statistics.median(times[2:]) if len(times) > 2 else times[-1]
        print(f"| {name} | {1000 * med:.1f} | {1000 * times[0]:.1f} | {g} | {b} | "
              f"{losses[0]:.6f} | {losses[-1]:.6f} |")
    ref = rows[-1][2]
    for name, _, losses, _, _ in rows[:-1]:
        rel = max(abs(x - y) / abs(y) for x, y in zip(losses, ref))
        print(f"{name}: max relative loss difference against {rows[-1][0]}: {rel:.2e}")


if __name__ == "__main__":
    main()
