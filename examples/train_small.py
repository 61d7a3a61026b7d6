"""Train a small 2-layer MLP classifier eagerly with symtrace.

A 4-class spiral (256 points in 2-D, seeded), a 2 -> 64 -> 4 MLP with ReLU,
softmax cross-entropy, and plain SGD for 20 steps. There is no autograd yet,
so the backward pass is written out by hand with matmuls, transposes and
elementwise ops. Prints "step N  loss X" per step; exits non-zero if the loss
did not go down.

    .venv/bin/python examples/train_small.py [--steps 20] [--lr 1.0] [--seed 0]

SYMTRACE_EXAMPLE_WITH_TORCH=1 runs the same code with PyTorch in place of
symtrace (the API is the same), to compare the two.
"""
import argparse
import math
import os
import random
import sys

if os.environ.get("SYMTRACE_EXAMPLE_WITH_TORCH") == "1":
    import torch as st
else:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import symtrace as st


def spiral(n_per_class, n_classes, seed):
    """Points (x, y) on n_classes interleaved noisy spiral arms, and one-hot labels."""
    rng = random.Random(seed)
    xs, onehot = [], []
    for c in range(n_classes):
        for i in range(n_per_class):
            r = i / n_per_class
            t = c * 2 * math.pi / n_classes + 3.0 * r + rng.gauss(0.0, 0.2)
            xs.append([r * math.sin(t), r * math.cos(t)])
            onehot.append([1.0 if k == c else 0.0 for k in range(n_classes)])
    return xs, onehot


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=1.0)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    n_classes, n_per_class = 4, 64
    xs, onehot = spiral(n_per_class, n_classes, args.seed)
    X = st.tensor(xs)                      # (256, 2) float32
    Y = st.tensor(onehot)                  # (256, 4) one-hot float32
    n = len(xs)

    st.manual_seed(args.seed)
    H = args.hidden
    W1 = st.randn(2, H) * (1.0 / math.sqrt(2))
    b1 = st.zeros(H)
    W2 = st.randn(H, n_classes) * (1.0 / math.sqrt(H))
    b2 = st.zeros(n_classes)

    losses = []
    for step in range(args.steps):
        # forward
        z1 = X @ W1 + b1                   # (n, H)
        mask = (z1 > 0).float()            # ReLU and its derivative
        h = z1 * mask
        logits = h @ W2 + b2               # (n, C)
        # softmax cross-entropy; subtracting the row max keeps exp() in range
        shifted = logits - logits.amax(dim=1, keepdim=True)
        e = shifted.exp()
        p = e / e.sum(dim=1, keepdim=True)
        loss = -(Y * p.log()).sum() / n
        losses.append(loss.item())
        print(f"step {step}  loss {losses[-1]:.4f}", flush=True)

        # backward, by hand
        dlogits = (p - Y) * (1.0 / n)      # d loss / d logits
        dW2 = h.T @ dlogits
        db2 = dlogits.sum(dim=0)
        dz1 = (dlogits @ W2.T) * mask
        dW1 = X.T @ dz1
        db1 = dz1.sum(dim=0)

        # SGD
        for w, g in ((W1, dW1), (b1, db1), (W2, dW2), (b2, db2)):
            w.sub_(g * args.lr)

    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    if not losses[-1] < losses[0]:
        print("error: the loss did not go down", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
