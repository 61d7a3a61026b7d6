"""CPU kernels: symtrace's fused, compiled graphs against PyTorch eager and
torch.compile on this machine, and as a fraction of measured memcpy
bandwidth (issue: fusion, the kernel IR, the LLVM CPU backend).

Cases: a 16M-element chain of five elementwise ops (float32, and float16 /
bfloat16, whose loops convert in vector registers), softmax and layer_norm
over [4096, 1024] rows, a 512x512x512 matmul and BERT-shaped matmuls
([4096, 768] @ [768, 3072] and back). Each figure is the median of repeated
runs after warm-up. Not a test.

    .venv/bin/python bench/micro/cpu_kernels.py [--backend llvm] [--json PATH]
        [--threads N] [--only case,case]
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
# --threads N reaches OpenBLAS (which reads its variable when it loads, with
# symtrace._C) and symtrace's pool (read at first use) through the environment
for _i, _a in enumerate(sys.argv[:-1]):
    if _a == "--threads" and int(sys.argv[_i + 1]) > 0:
        os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[_i + 1]
        os.environ["SYMTRACE_NUM_THREADS"] = sys.argv[_i + 1]
import symtrace as st  # noqa: E402
from symtrace import _C  # noqa: E402

F32 = st.float32


def A(ints=None, floats=None, dims=None, flags=0, dtype=None):
    return (ints, floats, dims, flags, dtype)


def timeit(fn, min_time=0.5, repeats=7):
    fn()
    fn()
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < 0.1:
        fn()
        n += 1
    per = max(1, int(min_time / repeats / ((time.perf_counter() - t0) / n)))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(per):
            fn()
        times.append((time.perf_counter() - t) / per)
    return statistics.median(times)


def memcpy_bandwidth():
    a = np.ones(64 << 20 >> 2, dtype=np.float32)  # 64 MiB
    b = np.empty_like(a)
    t = timeit(lambda: np.copyto(b, a))
    return 2 * a.nbytes / t  # read + write


# ---- the graphs (symtrace) and the same computations (torch) ----
def g_chain(n, dt=F32):
    g = _C.Graph()
    x = g.input((n,), dt)
    (a,) = g.op(_C.OP_MUL, (x, g.const(1.5)))
    (b,) = g.op(_C.OP_ADD, (a, g.const(0.25)))
    (c,) = g.op(_C.OP_TANH, (b,))
    (d,) = g.op(_C.OP_MUL, (c, x))
    (e,) = g.op(_C.OP_EXP, (d,))
    g.output(e)
    return g


def t_chain(torch, x):
    return torch.exp(torch.tanh(x * 1.5 + 0.25) * x)


def g_softmax(r, c):
    g = _C.Graph()
    x = g.input((r, c), F32)
    (y,) = g.op(_C.OP_SOFTMAX, (x,), A(ints=(-1,)))
    g.output(y)
    return g


def g_layer_norm(r, c):
    g = _C.Graph()
    x = g.input((r, c), F32)
    w = g.input((c,), F32)
    b = g.input((c,), F32)
    (y,) = g.op(_C.OP_LAYER_NORM, (x, w, b), A(floats=(1e-5,), dims=(1,), flags=2 | 4))
    g.output(y)
    return g


def g_matmul(m, k, n):
    g = _C.Graph()
    a = g.input((m, k), F32)
    b = g.input((k, n), F32)
    (c,) = g.op(_C.OP_MATMUL, (a, b))
    g.output(c)
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="llvm")
    ap.add_argument("--json")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for both sides (0: each library's default)")
    ap.add_argument("--only", help="comma-separated case names to run")
    args = ap.parse_args()
    import torch
    if args.threads:
        torch.set_num_threads(args.threads)
    bw = memcpy_bandwidth()
    print(f"# {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}, torch {torch.__version__} "
          f"({torch.get_num_threads()} threads), "
          f"memcpy bandwidth {bw / 1e9:.2f} GB/s, symtrace backend {args.backend}")
    st.manual_seed(0)
    n = 16 << 20
    R, Cc = 4096, 1024
    cases = [
        ("chain5_16M", g_chain(n), [st.randn(n)], t_chain, 2 * n * 4),
        ("chain5_16M_float16", g_chain(n, st.float16), [st.randn(n).to(st.float16)],
         t_chain, 2 * n * 2),
        ("chain5_16M_bfloat16", g_chain(n, st.bfloat16), [st.randn(n).to(st.bfloat16)],
         t_chain, 2 * n * 2),
        ("softmax_4096x1024", g_softmax(R, Cc), [st.randn(R, Cc)],
         lambda torch, x: torch.softmax(x, -1), 2 * R * Cc * 4),
        ("layer_norm_4096x1024", g_layer_norm(R, Cc), [st.randn(R, Cc), st.randn(Cc), st.randn(Cc)],
         lambda torch, x, w, b: torch.nn.functional.layer_norm(x, (Cc,), w, b), 2 * R * Cc * 4),
        ("matmul_512", g_matmul(512, 512, 512), [st.randn(512, 512), st.randn(512, 512)],
         lambda torch, a, b: a @ b, None),
        ("matmul_4096x768x3072", g_matmul(4096, 768, 3072), [st.randn(4096, 768), st.randn(768, 3072)],
         lambda torch, a, b: a @ b, None),
        ("matmul_4096x3072x768", g_matmul(4096, 3072, 768), [st.randn(4096, 3072), st.randn(3072, 768)],
         lambda torch, a, b: a @ b, None),
    ]
    rows = []
    print(f"{'case':<24}{'kernels':>8}{'symtrace ms':>13}{'torch ms':>10}{'compile ms':>12}"
          f"{'st/torch':>10}{'st/compile':>11}{'st %bw':>8}  check")
    tdt = {st.float32: torch.float32, st.float16: torch.float16, st.bfloat16: torch.bfloat16}

    def to_torch(x):  # numpy has no bfloat16: through float32
        return torch.from_numpy(x.to(F32).numpy().copy()).to(tdt[x.dtype])

    only = set(args.only.split(",")) if args.only else None
    for name, g, ins, tfn, nbytes in cases:
        if only and name not in only:
            continue
        cg = g.compile(backend=args.backend)
        t_st = timeit(lambda: cg.run(*ins))
        tins = [to_torch(x) for x in ins]
        t_t = timeit(lambda: tfn(torch, *tins))
        t_c = None
        if not args.no_compile:
            try:
                cf = torch.compile(lambda *a: tfn(torch, *a))
                cf(*tins)
                t_c = timeit(lambda: cf(*tins))
            except Exception as e:  # torch.compile needs a working C++ toolchain
                print(f"# torch.compile failed on {name}: {type(e).__name__}: {str(e)[:120]}")
        got = cg.run(*ins)[0].to(F32).numpy()
        exp = tfn(torch, *tins).float().numpy()
        err = float(np.max(np.abs(got - exp) / (1 + np.abs(exp))))
        tol = 1e-3 if ins[0].dtype == F32 else 2e-2  # half types: a few ulps
        frac = (nbytes / t_st / bw) if nbytes else None
        row = dict(case=name, kernels=cg.num_kernels, symtrace_ms=t_st * 1e3, torch_ms=t_t * 1e3,
                   torch_compile_ms=None if t_c is None else t_c * 1e3, st_over_torch=t_st / t_t,
                   st_over_compile=None if t_c is None else t_st / t_c,
                   fraction_of_memcpy_bw=frac, max_rel_err=err)
        rows.append(row)
        print(f"{name:<24}{cg.num_kernels:>8}{t_st * 1e3:>13.3f}{t_t * 1e3:>10.3f}"
              f"{'-' if t_c is None else f'{t_c * 1e3:.3f}':>12}{t_st / t_t:>10.2f}"
              f"{'-' if t_c is None else f'{t_st / t_c:.2f}':>11}"
              f"{'-' if frac is None else f'{100 * frac:.0f}%':>8}  {'ok' if err < tol else f'ERR {err:.1e}'}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(dict(benchmark="cpu_kernels", memcpy_GBps=bw / 1e9, backend=args.backend,
                           torch=torch.__version__, threads=torch.get_num_threads(),
                           loadavg=os.getloadavg(), rows=rows), f, indent=2)
        print(f"# wrote {args.json}")


if __name__ == "__main__":
    main()
