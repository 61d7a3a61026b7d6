"""Micro-benchmark: symtrace eager ops against PyTorch eager, on the same machine.

    .venv/bin/python bench/micro/eager_ops.py [--json PATH] [--repeats 7]

Cases:
  add_1        a + b on 1-element float32 tensors: per-call dispatch overhead (us)
  add_4M       a + b on 4M-element (2**22) float32 tensors (ms)
  matmul_512   512x512 @ 512x512 float32 (ms)

Each case is timed as the median over --repeats repeats of a loop of many calls
(calibrated so that one repeat takes about --min-time seconds), after a warm-up
that also fills symtrace's kernel cache. PyTorch runs with its default number
of threads and again with torch.set_num_threads(1); symtrace is single-threaded
for now. Ratios are symtrace time / PyTorch time (above 1: symtrace is slower).
A side that cannot run (symtrace not built, torch not installed) shows "n/a".
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

CASES = [
    # name, unit, scale (seconds -> unit), shapes of the two operands, op
    ("add_1", "us", 1e6, ((1,), (1,)), "add"),
    ("add_4M", "ms", 1e3, ((1 << 22,), (1 << 22,)), "add"),
    ("matmul_512", "ms", 1e3, ((512, 512), (512, 512)), "matmul"),
]


def load_symtrace():
    sys.path.insert(0, ROOT)
    try:
        import symtrace
    except Exception as e:  # not built yet, or broken: report, don't stop
        return None, f"{type(e).__name__}: {e}"
    if not hasattr(symtrace, "tensor"):
        return None, "symtrace has no tensor() (is symtrace/_C built and linked?)"
    return symtrace, None


def load_torch():
    try:
        import torch
        return torch, None
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"


def time_calls(fn, repeats, min_time):
    """Median seconds per call of fn() over `repeats` timed loops."""
    for _ in range(3):                     # warm-up (kernel compilation, caches)
        fn()
    n, t = 1, 0.0
    while True:                            # calibrate the loop length
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t >= min_time / 4 or n >= 1 << 20:
            break
        n *= 4 if t < min_time / 40 else 2
    n = max(1, int(n * min_time / max(t, 1e-9)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples), n


def make_fn(lib, op, a, b):
    if op == "add":
        return lambda: a + b
    if op == "matmul":
        return lambda: a @ b
    raise ValueError(op)


def check(st_out, ref, rtol):
    try:
        got = np.asarray(st_out, dtype=np.float64)
    except Exception:
        try:                                # __array__ missing or broken
            got = np.array(st_out.tolist(), dtype=np.float64)
        except Exception as e:
            return f"not checked ({type(e).__name__})"
    ok = np.allclose(got, ref, rtol=rtol, atol=rtol)
    return "ok" if ok else f"MISMATCH (max err {np.max(np.abs(got - ref)):.3g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.2,
                    help="seconds per timed repeat (default 0.2)")
    ap.add_argument("--cases", default=",".join(c[0] for c in CASES),
                    help="comma-separated subset of: " + ", ".join(c[0] for c in CASES))
    args = ap.parse_args()

    st, st_err = load_symtrace()
    torch, torch_err = load_torch()
    torch_threads = torch.get_num_threads() if torch else None
    wanted = set(args.cases.split(","))

    rng = np.random.default_rng(0)
    rows = []
    for name, unit, scale, shapes, op in CASES:
        if name not in wanted:
            continue
        an = rng.standard_normal(shapes[0]).astype(np.float32)
        bn = rng.standard_normal(shapes[1]).astype(np.float32)
        ref = (an.astype(np.float64) + bn) if op == "add" else an.astype(np.float64) @ bn
        row = {"case": name, "unit": unit, "symtrace": None, "torch": None,
               "torch_1thread": None, "check": "n/a", "error": None}
        if st is not None:
            try:
                a, b = st.tensor(an), st.tensor(bn)
                fn = make_fn(st, op, a, b)
                row["check"] = check(fn(), ref, 1e-3)
                sec, n = time_calls(fn, args.repeats, args.min_time)
                row["symtrace"], row["calls_per_repeat"] = sec * scale, n
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {e}"
        if torch is not None:
            a, b = torch.from_numpy(an), torch.from_numpy(bn)
            fn = make_fn(torch, op, a, b)
            try:
                torch.set_num_threads(torch_threads)
                row["torch"] = time_calls(fn, args.repeats, args.min_time)[0] * scale
                torch.set_num_threads(1)
                row["torch_1thread"] = time_calls(fn, args.repeats, args.min_time)[0] * scale
            finally:
                torch.set_num_threads(torch_threads)
        rows.append(row)

    def fmt(v):
        return "n/a" if v is None else (f"{v:.2f}" if v < 100 else f"{v:.0f}")

    def ratio(x, y):
        return None if x is None or y is None or y == 0 else x / y

    machine = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__ if torch else None,
        "torch_default_threads": torch_threads,
        "symtrace_error": st_err,
        "torch_error": torch_err,
    }
    tdesc = f"torch {machine['torch']} ({torch_threads} threads by default)" if torch else "no torch"
    print(f"# {machine['cpus']} cpus, {machine['platform']}, Python {machine['python']}, {tdesc}")
    if st_err:
        print(f"# symtrace not available: {st_err}")
    if torch_err:
        print(f"# torch not available: {torch_err}")
    tn = f"torch({torch_threads}t)" if torch_threads else "torch"
    head = ["case", "unit", "symtrace", tn, "torch(1t)", f"st/{tn}", "st/torch(1t)", "check"]
    table = []
    for r in rows:
        r["ratio_torch"] = ratio(r["symtrace"], r["torch"])
        r["ratio_torch_1thread"] = ratio(r["symtrace"], r["torch_1thread"])
        table.append([r["case"], r["unit"], fmt(r["symtrace"]), fmt(r["torch"]),
                      fmt(r["torch_1thread"]), fmt(r["ratio_torch"]),
                      fmt(r["ratio_torch_1thread"]), r["check"]])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table)]
    for line in [head] + table:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())
    for r in rows:
        if r["error"]:
            print(f"# {r['case']}: symtrace failed: {r['error']}")

    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"benchmark": "eager_ops", "machine": machine, "repeats": args.repeats,
                       "min_time_s": args.min_time, "results": rows}, f, indent=2)
        print(f"# wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
