"""Micro-benchmark: compile time and per-call time of gradient clipping
(symtrace.nn.utils.clip_grad_norm_) under symtrace.compile, on a model with
many parameters of mixed shapes.

    .venv/bin/python bench/micro/clip_compile.py [--mode clip] [--layers 48]
        [--d 64] [--backend llvm] [--repeats 3] [--calls 30] [--json PATH]

The model: --layers blocks of Linear(d, d), LayerNorm(d), ReLU (4
parameters per block: weight (d, d), bias (d), LayerNorm weight and bias
(d)), then Linear(d, 1): 4 * layers + 2 parameters (48 layers: 194; the
bench's BERT has 78 (mini, small) and 206 (base)). What is compiled (--mode):

  clip   f(): clip_grad_norm_(params, 1.0) over parameters whose .grad are
         set (the total norm of n gradients, then n in-place scalings).
  step   f(): zero the grads, loss = model(x).sum(); loss.backward();
         clip_grad_norm_(params, 1.0).
  stack  f(): the total norm as torch's get_total_norm writes it: the norm
         of the stack of the n per-gradient norms (each sqrt(sum(g * g)),
         clip_grad_norm_'s form), a stack of n 0-d values.
  chain  f(): the same total norm with the n norms combined one by one
         (sqrt(n0^2 + n1^2 + ...)), the form that avoids the stack.

Every cold figure comes from a fresh process (the in-memory caches empty)
with SYMTRACE_CACHE_DIR in a fresh temporary directory (the on-disk kernel
cache empty), --repeats times; the figure is the median. Reported:

  first call    the first compiled call: translation, fusion, kernel
                compiles, the run.
  warm disk     the first compiled call of a fresh process whose on-disk
                kernel cache the cold run filled (translation and fusion
                again, kernels loaded from the disk).
  compiled      median per-call time of --calls compiled calls.
  eager         median per-call time of --calls eager calls.
  kernels       kernel launches of one compiled call (symtrace.profiler).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
MODES = ("clip", "step", "stack", "chain")


def build(st, layers, d, seed=0):
    nn = st.nn
    st.manual_seed(seed)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(d, d), nn.LayerNorm(d), nn.ReLU()]
    mods.append(nn.Linear(d, 1))
    return nn.Sequential(*mods)


def make_fn(st, mode, model, x):
    clip = st.nn.utils.clip_grad_norm_
    params = list(model.parameters())
    if mode == "clip":
        def f():
            return clip(params, 1.0)
    elif mode == "step":
        def f():
            for p in params:
                p.grad = None
            loss = model(x).sum()
            loss.backward()
            return clip(params, 1.0)
    elif mode == "stack":
        def f():
            norms = [(p.grad * p.grad).sum().sqrt() for p in params]
            t = st.stack(norms)
            return (t * t).sum().sqrt()
    elif mode == "chain":
        def f():
            acc = None
            for p in params:
                n = (p.grad * p.grad).sum().sqrt()
                acc = n * n if acc is None else acc + n * n
            return acc.sqrt()
    else:
        raise SystemExit(f"unknown mode {mode}")
    return f


def timed(fn, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = fn()
        r.numpy()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def child(args):
    """One process: the first compiled call, then per-call timings."""
    import symtrace as st
    model = build(st, args.layers, args.d)
    x = st.randn(args.batch, args.d)
    model(x).sum().backward()   # grads for the modes that read them
    res = {"params": len(list(model.parameters()))}
    fc = st.compile(make_fn(st, args.mode, model, x), backend=args.backend)
    t0 = time.perf_counter()
    fc().numpy()
    res["first_call_s"] = time.perf_counter() - t0
    if args.calls:
        fc()
        res["compiled_call_s"] = timed(fc, args.calls)
        fe = make_fn(st, args.mode, model, x)
        fe()
        res["eager_call_s"] = timed(fe, args.calls)
        with st.profiler.profile() as prof:
            fc().numpy()
        res["kernels_per_call"] = sum(r.calls for r in prof.rows)
    print("RESULT " + json.dumps(res))


def run_child(args, cache_dir, calls):
    env = dict(os.environ, SYMTRACE_CACHE_DIR=cache_dir)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--mode", args.mode,
           "--layers", str(args.layers), "--d", str(args.d), "--batch", str(args.batch),
           "--backend", args.backend, "--calls", str(calls)]
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"child failed (rc {out.returncode}):\n{out.stdout}\n{out.stderr}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", default="clip", choices=MODES)
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--backend", default="llvm")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)

    colds, warms, calls, eagers, nks = [], [], [], [], []
    params = None
    root = tempfile.mkdtemp(prefix="st-clip-")
    try:
        for r in range(args.repeats):
            cache = os.path.join(root, f"c{r}")
            cold = run_child(args, cache, 0)
            warm = run_child(args, cache, args.calls)
            params = cold["params"]
            colds.append(cold["first_call_s"])
            warms.append(warm["first_call_s"])
            calls.append(warm["compiled_call_s"])
            eagers.append(warm["eager_call_s"])
            nks.append(warm["kernels_per_call"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = statistics.median
    res = {"mode": args.mode, "backend": args.backend, "params": params, "layers": args.layers,
           "d": args.d, "first_call_s": med(colds), "first_call_all_s": colds,
           "warm_disk_first_call_s": med(warms), "compiled_call_s": med(calls),
           "eager_call_s": med(eagers), "kernels_per_call": nks[0]}
    print(f"clip_compile: mode {args.mode}, {params} parameters, backend {args.backend}, "
          f"{args.repeats} repeats (medians)")
    print(f"  first call, cold caches:   {res['first_call_s']:.3f} s  ("
          + ", ".join(f"{c:.3f}" for c in colds) + ")")
    print(f"  first call, warm disk:     {res['warm_disk_first_call_s']:.3f} s")
    print(f"  compiled per call:         {res['compiled_call_s'] * 1e3:.3f} ms")
    print(f"  eager per call:            {res['eager_call_s'] * 1e3:.3f} ms")
    print(f"  kernel launches per call:  {nks[0]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main()
