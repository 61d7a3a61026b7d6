"""Train a small MLP classifier with symtrace: nn, autograd, AdamW and symtrace.compile.

A 4-class spiral (256 points in 2-D, seeded) and a 2 -> 64 -> 64 -> 4 MLP (Linear, GELU,
LayerNorm, dropout) trained with AdamW and cross-entropy. The whole step (forward, loss,
backward, optimizer) runs under symtrace.compile, except with --backend eager. A custom
autograd.Function (a gradient clip on the hidden activations, forward identity) shows
that layers with their own backward compile like any other code.

Prints "step N  loss X" per step, then the first and last loss, the number of graphs
compiled and the time per step; exits non-zero if the loss did not go down.

    .venv/bin/python examples/train_small.py [--steps 40] [--backend llvm|interp|eager|nvrtc]
        [--lr 0.01] [--hidden 64] [--dropout 0.1] [--seed 0]

--backend nvrtc runs on the GPU (device "cuda"); the others on the CPU.
SYMTRACE_EXAMPLE_WITH_TORCH=1 runs the same code with PyTorch in place of symtrace (the API
is the same; --backend other than eager then means torch.compile).
"""
import argparse
import math
import os
import random
import sys
import time

if os.environ.get("SYMTRACE_EXAMPLE_WITH_TORCH") == "1":
    import torch as st
    WITH_TORCH = True
else:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import symtrace as st
    WITH_TORCH = False

nn, F = st.nn, st.nn.functional


def spiral(n_per_class, n_classes, seed):
    """Points (x, y) on n_classes interleaved noisy spiral arms, and their class ids."""
    rng = random.Random(seed)
    xs, ys = [], []
    for c in range(n_classes):
        for i in range(n_per_class):
            r = i / n_per_class
            t = c * 2 * math.pi / n_classes + 3.0 * r + rng.gauss(0.0, 0.2)
            xs.append([r * math.sin(t), r * math.cos(t)])
            ys.append(c)
    return xs, ys


class ClipGrad(st.autograd.Function):
    """Identity forward; the backward clips each gradient entry to [-bound, bound]."""

    @staticmethod
    def forward(ctx, x, bound):
        ctx.bound = bound
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g.clamp(-ctx.bound, ctx.bound), None


class MLP(nn.Module):
    def __init__(self, hidden, n_classes, dropout):
        super().__init__()
        self.fc1 = nn.Linear(2, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x):
        h = self.norm(F.gelu(self.fc1(x)))
        h = ClipGrad.apply(h, 1.0)
        h = h + self.drop(F.gelu(self.fc2(h)))      # a residual block
        return self.head(h)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--backend", default="llvm", choices=["llvm", "interp", "eager", "nvrtc"])
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    device = "cuda" if args.backend == "nvrtc" else "cpu"
    xs, ys = spiral(64, 4, args.seed)
    X = st.tensor(xs, device=device)                  # (256, 2) float32
    Y = st.tensor(ys, device=device)                  # (256,) int64

    st.manual_seed(args.seed)
    model = MLP(args.hidden, 4, args.dropout).to(device)
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "norm" in n]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "norm" in n)]
    opt = st.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                          {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if args.backend != "eager":
        step = st.compile(step) if WITH_TORCH else st.compile(step, backend=args.backend)

    losses, times = [], []
    for k in range(args.steps):
        t0 = time.perf_counter()
        loss = step(X, Y).item()
        times.append(time.perf_counter() - t0)
        losses.append(loss)
        print(f"step {k}  loss {loss:.4f}", flush=True)

    graphs = "-" if WITH_TORCH else st._C._fe_stats()["graphs"]
    later = sorted(times[3:] or times)
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}; backend {args.backend}, graphs {graphs}, "
          f"first step {times[0] * 1e3:.1f} ms, median step {later[len(later) // 2] * 1e3:.2f} ms")
    if not losses[-1] < losses[0]:
        print("error: the loss did not go down", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
