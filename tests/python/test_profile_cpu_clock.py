"""The kernel profiler's CPU clock (SYMTRACE_PROFILE_CLOCK=cpu, runtime/profile.c): kernels
timed with CLOCK_THREAD_CPUTIME_ID (the launching thread's, plus the pool workers' chunks),
not wall time. Each test runs a child process with SYMTRACE_PROFILE=1 and reads the table
it prints to stderr at exit: kernels named, non-negative times whose sum is at most the
child's own CPU time, and a `threads` column saying whether calls ran on pool workers."""
import os
import re
import subprocess
import sys

import symtrace as st

# a compiled step with elementwise, reduction and matmul kernels; prints the process's CPU
# time (all threads) after the last launch, before the profiler's table at exit
_CHILD = r"""
import time
import symtrace as st

def f(x, w):
    h = (x @ w).relu()
    return (h * 2 + 1).sum(1), (x.exp() - x).mean(0)

cf = st.compile(f)
x, w = st.randn(512, 256), st.randn(256, 256)
for _ in range(6):
    a, b = cf(x, w)
    a.sum().item()
print("CPU_NS", time.process_time_ns(), flush=True)
"""

_HEAD = re.compile(r"symtrace profile: (\d+) kernels, ([0-9.]+) ms (.*?) in launches")
_ROW = re.compile(r"^\s*([0-9.]+)\s+([0-9.]+)\s+(\d+)\s+([0-9.]+)\s+(\d+)\s+([1n]?)\s+(\S+) \((\w+)\)$")


def _run(threads, clock):
    env = dict(os.environ, SYMTRACE_PROFILE="1", SYMTRACE_NUM_THREADS=str(threads),
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(st.__file__))] + sys.path))
    env.pop("SYMTRACE_PROFILE_CLOCK", None)
    if clock:
        env["SYMTRACE_PROFILE_CLOCK"] = clock
    r = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    cpu_ns = int(re.search(r"CPU_NS (\d+)", r.stdout).group(1))
    head = _HEAD.search(r.stderr)
    assert head, r.stderr[-2000:]
    rows = [m.groups() for m in map(_ROW.match, r.stderr.splitlines()) if m]
    return cpu_ns, head, rows


def _check_cpu_table(cpu_ns, head, rows):
    assert head.group(3).startswith("CPU"), head.group(0)
    assert rows and len(rows) == min(int(head.group(1)), 60)
    names = {r[6] for r in rows}
    assert any("matmul" in n for n in names), names
    kinds = {r[7] for r in rows}
    assert {"matmul", "reduce", "elementwise"} <= kinds, kinds
    total = 0.0
    for ms, _pct, calls, us_per_call, _pts, thr, _name, _kind in rows:
        assert float(ms) >= 0 and float(us_per_call) >= 0 and int(calls) > 0
        assert thr in ("1", "n")
        total += float(ms)
    # the header's total covers every row (the table shows the top 60)
    all_ms = float(head.group(2))
    assert total <= all_ms + 0.01 * len(rows)
    assert 0 < all_ms * 1e6 <= cpu_ns, (all_ms, cpu_ns / 1e6)
    return rows


def test_cpu_clock_one_thread():
    cpu_ns, head, rows = _run(1, "cpu")
    rows = _check_cpu_table(cpu_ns, head, rows)
    # one thread: no call ran on a pool worker
    assert all(r[5] == "1" for r in rows), rows


def test_cpu_clock_pool_workers_counted():
    cpu_ns, head, rows = _run(2, "cpu")
    rows = _check_cpu_table(cpu_ns, head, rows)
    # the [512, 256] @ [256, 256] product is split over the two threads: its row says n
    assert any(r[5] == "n" and r[7] == "matmul" for r in rows), rows


def test_wall_clock_is_the_default():
    _cpu_ns, head, rows = _run(1, None)
    assert head.group(3) == "wall", head.group(0)
    assert rows and all(r[5] == "" for r in rows), rows
