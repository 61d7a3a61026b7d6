"""Micro-benchmark: one training step of a small ResNet on the CPU, PyTorch eager vs
symtrace eager vs symtrace compiled, in one process, interleaved.

    .venv/bin/python -m bench.micro.resnet_step [--rounds 8] [--steps 5] [--batch 16] [--size 32]
                                                [--widths 16,32,64] [--kernels] [--no-torch]

The model (written once against L = torch or symtrace): a conv3x3 + BN + ReLU stem,
three residual blocks (conv3x3 + BN + ReLU, conv3x3 + BN, a 1x1 conv + BN shortcut where
the shape changes; strides 1, 2, 2), adaptive average pooling and a linear layer; loss:
cross-entropy with label smoothing 0.1; SGD (lr 0.05, momentum 0.9, weight decay 5e-4).
torch's initial weights are loaded into both symtrace models. One step = zero_grad,
forward, backward, opt.step (the compiled variant: symtrace.compile of the whole step).

After --warmup steps of each variant, --rounds rounds each run --steps steps of torch,
symtrace eager and symtrace compiled in turn, on the same batches (so every variant
trains along the same trajectory and the losses must agree: checked for the first 12
steps, rtol 1e-3; later, float rounding differences have grown chaotically). The
figure is the median ms/step over all timed steps of a variant (and the process's CPU
time per step, all threads: with --threads 1 a steadier measure of the work on a loaded
machine, where wall time includes time preempted); interleaving the
variants in rounds spreads a noisy neighbour's load evenly over them (--threads 1 keeps
both single-threaded: steadier on a loaded machine). --kernels N prints the top N rows of
symtrace.profiler's per-kernel table of one compiled round."""
import argparse
import statistics
import sys
import time

import numpy as np

from bench.micro._threads import set_threads


def build(L, widths):
    nn, F = L.nn, L.nn.functional

    class Block(nn.Module):
        def __init__(s, cin, cout, stride):
            super().__init__()
            s.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            s.b1 = nn.BatchNorm2d(cout)
            s.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            s.b2 = nn.BatchNorm2d(cout)
            s.sc = nn.Sequential()
            if stride != 1 or cin != cout:
                s.sc = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(s, x):
            out = F.relu(s.b1(s.c1(x)))
            out = s.b2(s.c2(out))
            return F.relu(out + s.sc(x))

    class Net(nn.Module):
        def __init__(s):
            super().__init__()
            w0 = widths[0]
            s.stem = nn.Sequential(nn.Conv2d(3, w0, 3, 1, 1, bias=False), nn.BatchNorm2d(w0), nn.ReLU(inplace=True))
            blocks, cin = [], w0
            for i, w in enumerate(widths):
                blocks.append(Block(cin, w, 1 if i == 0 else 2))
                cin = w
            s.layers = nn.Sequential(*blocks)
            s.pool = nn.AdaptiveAvgPool2d((1, 1))
            s.fc = nn.Linear(cin, 10)

        def forward(s, x):
            x = s.layers(s.stem(x))
            return s.fc(L.flatten(s.pool(x), 1))

    return Net()


def make_step(L, model):
    F = L.nn.functional
    opt = L.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        loss.backward()
        opt.step()
        return loss
    return step


def make_variants(widths, with_torch=True):
    """[(name, step, to_tensor)]: torch eager (when torch is there and with_torch),
    symtrace eager and symtrace compiled, all from the same initial weights."""
    import symtrace as st
    out = []
    if with_torch:
        try:
            import torch
        except ImportError:
            torch = None
    else:
        torch = None
    if torch is not None:
        torch.manual_seed(0)
        tm = build(torch, widths)
        init = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
        out.append(("torch eager", make_step(torch, tm), torch.tensor))
    else:
        st.manual_seed(0)
        init = {k: v.numpy().copy() for k, v in build(st, widths).state_dict().items()}
    for name, compiled in (("symtrace eager", False), ("symtrace compiled", True)):
        m = build(st, widths)
        m.load_state_dict({k: st.tensor(v) for k, v in init.items()})
        step = make_step(st, m)
        out.append((name, st.compile(step) if compiled else step, st.tensor))
    return out


def batches(n, batch, size, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((batch, 3, size, size)).astype(np.float32), rng.integers(0, 10, batch))
            for _ in range(n)]


def run(widths=(16, 32, 64), batch=16, size=32, warmup=3, rounds=8, steps=5, kernels=False, with_torch=True,
        out=sys.stdout, check=12):
    """Runs the benchmark; returns {variant: (median ms/step, [losses])} (losses of every step)."""
    variants = make_variants(widths, with_torch)
    data = batches(warmup + rounds * steps, batch, size)
    times = {name: [] for name, _, _ in variants}
    cpu = {name: [] for name, _, _ in variants}
    losses = {name: [] for name, _, _ in variants}

    def go(name, step, T, lo, hi, timed):
        for x, y in data[lo:hi]:
            x, y = T(x), T(y)
            t, c = time.perf_counter(), time.process_time()
            loss = step(x, y)
            v = loss.item()
            dt, dc = time.perf_counter() - t, time.process_time() - c
            losses[name].append(v)
            if timed:
                times[name].append(dt * 1e3)
                cpu[name].append(dc * 1e3)

    for name, step, T in variants:
        go(name, step, T, 0, warmup, False)
    for r in range(rounds):
        lo = warmup + r * steps
        for name, step, T in variants:
            if kernels and r == rounds - 1 and name == "symtrace compiled":
                import symtrace as st
                with st.profiler.profile() as prof:
                    go(name, step, T, lo, lo + steps, True)
                print(prof.table(top=kernels), file=out)
            else:
                go(name, step, T, lo, lo + steps, True)
    ref = losses[variants[0][0]][:check]
    for name, _, _ in variants[1:]:
        np.testing.assert_allclose(losses[name][:check], ref, rtol=1e-3, atol=1e-4,
                                   err_msg=f"{name}'s losses differ from {variants[0][0]}'s")
    res = {}
    for name, _, _ in variants:
        med = statistics.median(times[name])
        res[name] = (med, losses[name])
        print(f"{name:18s} {med:8.2f} ms/step (median of {len(times[name])}, "
              f"min {min(times[name]):.2f}; process cpu {statistics.median(cpu[name]):.2f} ms/step)", file=out)
    return res


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.micro.resnet_step")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--widths", default="16,32,64")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--kernels", type=int, default=0, metavar="TOP",
                   help="per-kernel table (TOP rows) of one compiled round")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--threads", type=int, default=0,
                   help="threads for both (torch.set_num_threads, SYMTRACE_NUM_THREADS); 0: their defaults")
    a = p.parse_args(argv)
    set_threads(a.threads)
    widths = tuple(int(w) for w in a.widths.split(","))
    try:
        import torch
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    except ImportError:
        pass
    run(widths, a.batch, a.size, a.warmup, a.rounds, a.steps, a.kernels, not a.no_torch)


if __name__ == "__main__":
    main()
