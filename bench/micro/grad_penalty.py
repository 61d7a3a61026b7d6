"""A gradient-penalty training step (WGAN-GP style), symtrace eager and
compiled against PyTorch eager: MLP [256, 256] -> tanh [512] -> 1,
autograd.grad(out, x, create_graph=True), the penalty on the norm of that
gradient, loss.backward() into the weights (higher-order gradients through
tanh and matmul). Prints ms per step (median of steps 6..N), the last loss
and the first entries of w1.grad for each run.

    python -m bench.micro.grad_penalty [--steps 30]
"""
import argparse
import time

import numpy as np

import symtrace as st

B, D, H = 256, 256, 512


def step(L, x, w1, w2):
    x = x.detach().requires_grad_()
    out = (L.tanh(x @ w1) @ w2).sum()
    (gx,) = L.autograd.grad(out, x, create_graph=True)
    loss = ((gx.pow(2).sum(1) - 1) ** 2).mean()
    loss.backward()
    return loss


def run(L, fn, data, steps):
    w1 = L.tensor(data[0], requires_grad=True)
    w2 = L.tensor(data[1], requires_grad=True)
    x = L.tensor(data[2])
    times, loss = [], None
    for _ in range(steps):
        w1.grad = w2.grad = None
        t = time.perf_counter()
        loss = float(fn(L, x, w1, w2).detach())
        times.append(time.perf_counter() - t)
    return float(np.median(times[5:])) * 1e3, loss, w1.grad.numpy().ravel()[:3]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    r = np.random.RandomState(0)
    data = (r.randn(D, H).astype(np.float32) * 0.05, r.randn(H, 1).astype(np.float32) * 0.05,
            r.randn(B, D).astype(np.float32))
    runs = [("symtrace eager", st, step),
            ("symtrace compiled", st, st.compile(lambda L, x, w1, w2: step(L, x, w1, w2)))]
    try:
        import torch
        torch.set_num_threads(2)
        runs.append(("torch eager", torch, step))
    except ImportError:
        pass
    print("| run | ms/step | last loss | w1.grad[:3] |")
    print("|---|---|---|---|")
    for name, L, fn in runs:
        ms, loss, g = run(L, fn, data, max(args.steps, 6))
        print(f"| {name} | {ms:.2f} | {loss:.8f} | {', '.join(f'{v:.7e}' for v in g)} |")


if __name__ == "__main__":
    main()
