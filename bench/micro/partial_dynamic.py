"""Partial graphs and dynamic shapes (issue 7): what a graph break costs per
call, and what a new input size costs with and without dynamic shapes.

    .venv/bin/python bench/micro/partial_dynamic.py [--json PATH]

1. A small function with a data read (.item()) in the middle: eager, compiled
   as a partial graph (graph before the break, break function, resume
   function's graph), compiled with SYMTRACE_PARTIAL=0 (the whole frame plain
   Python), and the same function without the break fully captured.
2. A 4-layer BERT-style encoder (h 64, 4 heads) fed 11 sequence lengths:
   per new length, the first call's time (static: a new translation;
   dynamic: an instance of the one translated graph), a hit's time,
   translations, and kernels compiled after the first length.
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import numpy as np  # noqa: E402

import symtrace as st  # noqa: E402
from symtrace import _C  # noqa: E402


def per_call_us(fn, x, n=3000):
    fn(x)
    fn(x)
    t0 = time.perf_counter()
    for _ in range(n):
        fn(x)
    return (time.perf_counter() - t0) / n * 1e6


def full(x):
    y = x * 2 + 1
    return y.relu() * 3


def with_break(x):
    y = x * 2 + 1
    v = y.sum().item()          # the break: a data read
    return y.relu() * 3 + v * 0


def breaks_part():
    x = st.randn(8)
    out = {"eager_us": per_call_us(with_break, x)}
    st.reset()
    out["full_graph_us"] = per_call_us(st.compile(full, backend="llvm"), x)
    st.reset()
    out["partial_us"] = per_call_us(st.compile(with_break, backend="llvm"), x)
    st.reset()
    st.config.partial = 0
    out["whole_frame_plain_us"] = per_call_us(st.compile(with_break, backend="llvm"), x)
    st.config.partial = 1
    st.reset()
    return out


def dynamic_part():
    from test_dynamic_shapes import Encoder, _batch
    st.manual_seed(0)
    m = Encoder(layers=4, h=64, heads=4)
    m.eval()
    rng = np.random.default_rng(0)
    batches = [_batch(rng, 4, s, "bool") for s in range(20, 64, 4)]
    res = {}
    for dyn in (False, True):
        st.reset()
        c = st.compile(m, backend="llvm", dynamic=dyn)
        c(*batches[0])
        c(*batches[0])
        k0 = _C.kcache_stats()["compiles"]
        firsts, hits = [], []
        for b in batches[1:]:
            t0 = time.perf_counter()
            c(*b)
            firsts.append((time.perf_counter() - t0) * 1e3)
            t0 = time.perf_counter()
            c(*b)
            hits.append((time.perf_counter() - t0) * 1e3)
        res["dynamic" if dyn else "static"] = {
            "new_size_first_call_ms": statistics.median(firsts),
            "hit_ms": statistics.median(hits),
            "translations": _C._fe_stats()["translations"],
            "kernels_compiled_after_first_size": _C.kcache_stats()["compiles"] - k0,
            "sizes": len(batches)}
    eager = []
    for b in batches[1:]:
        t0 = time.perf_counter()
        m(*b)
        eager.append((time.perf_counter() - t0) * 1e3)
    res["eager_ms"] = statistics.median(eager)
    st.reset()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    out = {"breaks": breaks_part(), "dynamic": dynamic_part(),
           "load": os.getloadavg()}
    b, d = out["breaks"], out["dynamic"]
    print(f"graph break, per call: eager {b['eager_us']:.1f} us, partial graph {b['partial_us']:.1f} us, "
          f"whole frame plain {b['whole_frame_plain_us']:.1f} us (no break, full graph: "
          f"{b['full_graph_us']:.1f} us)")
    for k in ("static", "dynamic"):
        r = d[k]
        print(f"{k:7s}: {r['sizes']} sizes, {r['translations']} translations, first call at a new size "
              f"{r['new_size_first_call_ms']:.1f} ms, hit {r['hit_ms']:.2f} ms, kernels compiled after "
              f"the first size {r['kernels_compiled_after_first_size']}")
    print(f"eager: {d['eager_ms']:.2f} ms; load {out['load'][0]:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
