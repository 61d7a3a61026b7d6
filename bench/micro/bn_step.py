"""Micro-benchmark: batch norm (+ReLU) forward and backward, torch vs symtrace eager vs
symtrace compiled, in one process, interleaved.

    .venv/bin/python -m bench.micro.bn_step [--shape 16,16,32,32] [--rounds 5] [--iters 100]
                                            [--pow] [--threads 1] [--kernels TOP]

One step: y = relu(BatchNorm(x)) (training, affine), (y * y).sum().backward() (with --pow:
y ** 2, whose compiled form calls powf per element: see the report of h-bnperf). The figure
is the median process CPU time per step (ms; steadier than wall time on a loaded machine)
over --rounds rounds of --iters steps of each variant in turn. --kernels TOP prints the top
rows of symtrace.profiler's per-kernel table of 50 compiled steps (wall time: noisy under
load)."""
import argparse
import statistics
import time

import numpy as np

from bench.micro._threads import set_threads


def run(shape, rounds, iters, use_pow, kernels):
    import symtrace as st
    try:
        import torch
    except ImportError:
        torch = None
    xn = np.random.RandomState(0).standard_normal(shape).astype(np.float32)
    cls = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d", 5: "BatchNorm3d"}[len(shape)]

    def make(L):
        bn = getattr(L.nn, cls)(shape[1])
        x = L.tensor(xn, requires_grad=True)

        def step(x):
            y = L.nn.functional.relu(bn(x))
            (y ** 2 if use_pow else y * y).sum().backward()
        return step, x

    variants = []
    if torch is not None:
        tstep, tx = make(torch)
        variants.append(("torch eager", lambda: tstep(tx)))
    sstep, sx = make(st)
    variants.append(("symtrace eager", lambda: sstep(sx)))
    cstep = st.compile(sstep)
    variants.append(("symtrace compiled", lambda: cstep(sx)))
    times = {n: [] for n, _ in variants}
    for _, fn in variants:
        for _ in range(5):
            fn()
    for _ in range(rounds):
        for name, fn in variants:
            for _ in range(iters):
                t0 = time.process_time()
                fn()
                times[name].append(time.process_time() - t0)
    for name, _ in variants:
        print(f"{name:18s} {statistics.median(times[name]) * 1e3:8.3f} ms/step (process cpu, median of "
              f"{len(times[name])})")
    if kernels:
        with st.profiler.profile() as prof:
            for _ in range(50):
                cstep(sx)
        print(prof.table(top=kernels))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.micro.bn_step")
    p.add_argument("--shape", default="16,16,32,32")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--pow", action="store_true", help="y ** 2 instead of y * y")
    p.add_argument("--threads", type=int, default=1, help="threads for both; 0: their defaults")
    p.add_argument("--kernels", type=int, default=0, metavar="TOP")
    a = p.parse_args(argv)
    set_threads(a.threads)
    run(tuple(int(s) for s in a.shape.split(",")), a.rounds, a.iters, a.pow, a.kernels)


if __name__ == "__main__":
    main()
