#!/usr/bin/env python
"""scripts/fuzz_memplan.py - differential fuzzing of the static memory estimate
(fusion/plan.c) against the caching allocator (runtime/alloc.c).

Programs come from scripts/fuzz_compile.py's generator (views, in-place ops, outputs
that alias inputs, size-0 / size-1 dims, int / bool / half dtypes). For each seed the
program is traced (st.memory.trace_graph), compiled with every backend, and
st.memory.estimate(..., measured=True) is checked against the contract below; so are
the AOT forward (with its saved values) and backward graphs of the float inputs, and
the plan on input sizes other than the traced ones (when the graph takes them).

The contract (symtrace/memory.py MemoryEstimate, DESIGN.md "the memory plan", and
seeds/004's table: the estimate of the bytes held before each op must equal the
allocator's):
  row       every kernel: estimated == actual (the allocator's requested bytes before
            the kernel, the inputs excluded) - the runtime holds exactly what the plan
            says (the arena, the outputs made so far, the reshape copies alive)
  live      every kernel: live <= estimated (the arena holds the liveness)
  peak      peak_estimated == peak_measured when a kernel ran (so also within 2%);
            peak_live <= peak_estimated
  plan      plan(*inputs)'s rows are the rows of the measured run
  leak      the allocator's requested bytes are back where they were once the outputs
            are dropped
  alloc     the allocator's invariants hold (st.memory._check) after the runs
  dyn-*     on other sizes: the same checks (a graph that refuses them must raise a
            Python exception); dyn-shape: an output whose shape differs from torch's

  scripts/fuzz_memplan.py --seeds 300 [--start 0] [--minimize] [--backends llvm,interp]
  scripts/fuzz_memplan.py --seed 17 --minimize --show

For each mismatch: the seed, the graph and check that failed, and a standalone
reproducer (after --minimize: with statements, outputs, inputs and input views dropped
while the same kind of mismatch remains). Exit status 1 when some seed mismatched.
The library part (check_program, generate) is what tests/python/test_memplan_fuzz.py
imports."""
import gc
import os
import re
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import symtrace as st  # noqa: E402
from symtrace import _C  # noqa: E402
import fuzz_compile as fc  # noqa: E402  (the generator; it imports torch)
import torch  # noqa: E402

BACKENDS = ("llvm", "interp")
# graphs whose estimate was checked, by kind (fwd, fwd-saving, bwd, dyn), and programs
# left out (torch or the trace rejects them)
STATS = {}


def count(key):
    STATS[key] = STATS.get(key, 0) + 1
PEAK_RTOL = 0.02   # the documented bound (tests/python/test_memory_plan.py)
# Known, not the estimate's: a traced graph bakes some sizes in (x.zero_() / fill_()
# and size-0 results are captured as full() of the traced shape), so on other sizes
# it returns the traced shape. Counted, printed only with --all.
KNOWN = {"dyn-shape"}


class MemGen(fc.Gen):
    """fuzz_compile's generator with templates that stress the plan: reshapes that
    copy (a view step with a buffer of its own, also one only full() reads), scatters
    and setitem on a fresh intermediate (planned in place when the base is dead)."""

    def t_reshape_copy(self):
        x = self.var(lambda u: u.dim() >= 2)
        if x is None:
            return None
        z = self.new()
        f = self.ch(["%s.mT.reshape(-1)", "%s.transpose(0, -1).flatten()",
                     "%s[..., ::2].reshape(-1)", "%s.mT.reshape(-1) * 2",
                     "L.full_like(%s.mT.reshape(-1), 1.5) + 1", "%s.mT.reshape(-1)[1:]"])
        return "%s = %s" % (z, f % x), z

    def t_scatter(self):
        x = self.var(lambda u: u.dim() >= 1 and u.dtype != torch.bool)
        if x is None:
            return None
        z = self.new()
        f = self.ch(["(%(x)s * 2).scatter_add(0, L.zeros_like(%(x)s, dtype=L.int64), %(x)s)",
                     "L.slice_scatter(%(x)s + 1, %(x)s[:1] * 3, 0, 0, 1)",
                     "(%(x)s + 1).scatter_add(-1, L.zeros_like(%(x)s, dtype=L.int64), %(x)s) + 1"])
        return "%s = %s" % (z, f % {"x": x}), z

    def t_setitem_fresh(self):
        x = self.var(lambda u: u.dim() >= 1)
        if x is None:
            return None
        z = self.new()
        return "%s = %s * 2; %s[%s] = %s" % (z, x, z, self.ch(["0:1", "..., :1", "-1", "1:"]),
                                             self.scalar()), z

    TEMPLATES = fc.Gen.BASE_TEMPLATES + (("t_reshape_copy", 8), ("t_scatter", 5),
                                    ("t_setitem_fresh", 5))


def generate(seed, max_ops=None, plain=False):
    """The program of a seed: MemGen's draw, or fuzz_compile's own with plain."""
    return (PlainGen if plain else MemGen)(seed, max_ops).draw()


class PlainGen(fc.Gen):
    """fuzz_compile's generator as its seeds drew before its third-round templates."""
    TEMPLATES = fc.Gen.BASE_TEMPLATES


def requested():
    gc.collect()
    return st.memory.stats()["requested_bytes"]


# ---------------------------------------------------------------- the contract

def contract(est, label):
    """The mismatches of one MemoryEstimate (measured) with the contract."""
    bad = []
    rows = est.rows or []
    for i, (name, live, e, a) in enumerate(rows):
        if a != e:
            bad.append(("row", "%s: kernel %d %s: estimated %d, actual %d" % (label, i, name, e, a)))
        if live > e:
            bad.append(("live", "%s: kernel %d %s: live %d > estimated %d" % (label, i, name, live, e)))
    if rows:
        pe, pm = est.peak_estimated, est.peak_measured
        if pe != pm:
            kind = "peak" if abs(pe - pm) > PEAK_RTOL * max(pe, 1) else "peak-exact"
            bad.append((kind, "%s: peak estimated %d, measured %d" % (label, pe, pm)))
    if est.peak_live > est.peak_estimated:
        bad.append(("live", "%s: peak live %d > peak estimated %d" % (
            label, est.peak_live, est.peak_estimated)))
    base = est.plan["input_bytes"]
    prow = [(n, lv - base, r - base) for n, lv, r in est.plan["kernels"]]
    if rows and prow != [(n, lv, e) for n, lv, e, _ in rows]:
        bad.append(("plan", "%s: plan() rows %s != run rows %s" % (label, prow[:4], rows[:4])))
    return bad


def measure(cg, inputs, label):
    """(outputs, mismatches) of estimate(cg, *inputs, measured=True), with the leak
    check; an exception propagates."""
    before = requested()
    est = st.memory.estimate(cg, *inputs, measured=True)
    count(re.sub(r"^[a-z]+-?|\+\d+$", "", label) or "fwd")
    bad = contract(est, label)
    outs = cg.run(*inputs)
    held = requested()
    del outs, est
    after = requested()
    try:
        st.memory._check()
    except Exception as e:  # noqa: BLE001
        bad.append(("alloc", "%s: allocator invariants: %s" % (label, e)))
    if after != before:
        bad.append(("leak", "%s: requested bytes %d before, %d after the runs (%d with the "
                    "outputs)" % (label, before, after, held)))
    return bad


# ------------------------------------------------------------------ programs

def st_inputs(prog, grad=False):
    """The symtrace arguments of a program (views of fresh bases)."""
    return [fc.make_tensor(st, i, grad)[1] for i in prog.inputs]


def trace(prog):
    """(graph, graph inputs, args) of the program traced on fresh arguments, or None
    when torch or symtrace rejects the program (not this fuzzer's business)."""
    ref = fc.run(prog, torch)[0]
    if ref.exc is not None:
        count("skipped (torch raises)")
        return None
    fn = fc.build(prog, st)
    args = st_inputs(prog)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            g, ins = st.memory.trace_graph(fn, *args)
        except Exception:  # noqa: BLE001
            count("skipped (trace raises)")
            return None
    return g, ins, args


def other_sizes(prog, grow):
    """The program's inputs as contiguous tensors where every dim of size > 1 grows by
    `grow` (broadcasting and size-1 dims kept), or None when torch rejects the
    program on them."""
    shapes = [tuple(fc.make_tensor(torch, i)[1].shape) for i in prog.inputs]
    new = [tuple(d + grow if d > 1 else d for d in s) for s in shapes]
    r = np.random.default_rng(prog.seed + 7)
    ins = [fc.Input(i.name, i.dtype, fc._rand_values(r, s, i.dtype), "b")
           for i, s in zip(prog.inputs, new)]
    p2 = prog.copy(inputs=ins)
    ref = fc.run(p2, torch)[0]
    if ref.exc is not None:
        return None
    return p2, ref


def check_graph(g, ins, backend, label):
    """Compile g with backend and check the estimate on ins."""
    try:
        cg = g.compile(backend=backend)
    except Exception as e:  # noqa: BLE001
        return [("compile", "%s: %s: %s" % (label, type(e).__name__, e))], None
    try:
        return measure(cg, ins, label), cg
    except Exception as e:  # noqa: BLE001
        return [("raise", "%s: %s: %s" % (label, type(e).__name__, str(e)[:300]))], cg


def check_backward(prog, backend):
    """The AOT forward (saving) and backward graphs of the float inputs: the loss is the
    first float output (its gradient a random tensor of its shape)."""
    got = trace(prog)
    if got is None:
        return []
    g, ins, args = got
    outs = list(g.outputs)
    ids = list(g.inputs)
    pos = {id(t): k for k, t in enumerate(ins)}
    wrt = [ids[pos[id(a)]] for a in args if id(a) in pos and a.is_floating_point()]
    if not wrt or not outs:
        return []
    # the program's first float output is the loss (output 0)
    try:
        g0 = fc.build(prog, st)
        probe = g0(*st_inputs(prog))
    except Exception:  # noqa: BLE001
        return []
    fl = [k for k, o in enumerate(probe) if o.is_floating_point()]
    if not fl:
        return []
    if fl[0]:
        prog = prog.copy(outputs=[prog.outputs[fl[0]]] + [o for k, o in enumerate(prog.outputs)
                                                          if k != fl[0]])
        got = trace(prog)
        if got is None:
            return []
        g, ins, args = got
        ids = list(g.inputs)
        pos = {id(t): k for k, t in enumerate(ins)}
        wrt = [ids[pos[id(a)]] for a in args if id(a) in pos and a.is_floating_point()]
    try:
        bcap, saved, fcap = _C._backward_graph(g.capsule, wrt)
    except Exception:  # noqa: BLE001  (no derivative: not this fuzzer's business)
        return []
    fwd, bwd = _C.Graph(fcap), _C.Graph(bcap)
    lab = "%s-fwd-saving" % backend
    bad, cg = check_graph(fwd, ins, backend, lab)
    if cg is None or any(k in ("raise", "compile") for k, _ in bad):
        return bad
    fouts = cg.run(*ins)
    loss = fouts[0]
    r = np.random.default_rng(prog.seed)
    seed = st.tensor(r.standard_normal(tuple(loss.shape)).astype(np.float32)).to(loss.dtype)
    binputs = tuple(fouts[len(g.outputs):]) + (seed,)
    del fouts
    b2, _ = check_graph(bwd, binputs, backend, "%s-bwd" % backend)
    return bad + b2


def check_dynamic(prog, g, ins, args, backend):
    """The graph compiled on the traced sizes, planned and run on other sizes."""
    if len(ins) != len(args) or any(a is not b for a, b in zip(ins, args)):
        return []  # the graph reads tensors besides the arguments
    bad = []
    for grow in (1, 3):
        got = other_sizes(prog, grow)
        if got is None:
            continue
        p2, ref = got
        label = "%s-dyn+%d" % (backend, grow)
        try:
            cg = g.compile(backend=backend)
        except Exception:  # noqa: BLE001
            return bad
        new = st_inputs(p2)
        try:
            cg.plan(*new)
        except (TypeError, ValueError, RuntimeError, IndexError) as e:
            continue  # a graph specialized on its sizes may refuse others: fine
        except Exception as e:  # noqa: BLE001
            bad.append(("dyn-raise", "%s: plan raised %s: %s" % (label, type(e).__name__, e)))
            continue
        try:
            bad += [("dyn-" + k, m) for k, m in measure(cg, new, label)]
            outs = cg.run(*st_inputs(p2))
        except (TypeError, ValueError, RuntimeError, IndexError):
            continue
        except Exception as e:  # noqa: BLE001
            bad.append(("dyn-raise", "%s: %s: %s" % (label, type(e).__name__, e)))
            continue
        for k, (o, r) in enumerate(zip(outs, ref.outs)):
            if tuple(o.shape) != r[2]:
                bad.append(("dyn-shape", "%s: output %d shape %s, torch %s" % (
                    label, k, tuple(o.shape), r[2])))
    return bad


def check_program(prog, backends=BACKENDS, grad=True, dynamic=True, only=None):
    """Every check of one program: a list of (kind, message). only: one label prefix
    ('llvm', 'interp-bwd', 'llvm-dyn', ...) to run just that part."""
    st.reset()
    got = trace(prog)
    if got is None:
        return []
    g, ins, args = got
    found = []
    want = lambda lab: only is None or lab.startswith(only) or only.startswith(lab)  # noqa: E731
    for b in backends:
        if want(b):
            bad, _ = check_graph(g, ins, b, b)
            found += bad
        if grad and prog.is_float() and (want(b + "-fwd-saving") or want(b + "-bwd")):
            found += check_backward(prog, b)
        if dynamic and want(b + "-dyn"):
            found += check_dynamic(prog, g, ins, args, b)
    if only is not None:
        found = [f for f in found if f[1].split(":")[0].startswith(only)]
    return found


# --------------------------------------------------------------- minimizing

def minimize(prog, kind, label, backends=BACKENDS):
    """Drops statements, outputs, inputs and input views while a mismatch of `kind`
    in the graph `label` remains."""
    def still(p):
        try:
            return any(k == kind for k, m in check_program(p, backends, only=label))
        except Exception:  # noqa: BLE001
            return False

    return fc.shrink(prog, still)


def reproducer(prog, label):
    """A standalone script that prints the estimate of the graph `label` names."""
    backend = label.split("-")[0]
    lines = ["import numpy as np, symtrace as st", "from symtrace import _C", ""]
    lines += prog.source("st", "f").splitlines()
    args = []
    for i in prog.inputs:
        arr = np.asarray(i.values)
        npdt = "float32" if i.dtype == "bfloat16" else i.dtype
        lines.append("%s = np.array(%r, dtype=np.%s).reshape(%r)" % (
            i.name, arr.astype(fc.NP[npdt] if npdt != "bool" else np.bool_).tolist(),
            "bool_" if npdt == "bool" else npdt, tuple(arr.shape)))
        sv = "st.tensor(%s%s)" % (i.name, ", dtype=st.bfloat16" if i.dtype == "bfloat16" else "")
        args.append(i.view.replace("b", sv, 1))
    lines.append("args = [%s]" % ", ".join(args))
    lines.append("g, ins = st.memory.trace_graph(f, *args)")
    if "-fwd-saving" in label or "-bwd" in label:
        lines.append("ids = list(g.inputs); pos = {id(t): k for k, t in enumerate(ins)}")
        lines.append("wrt = [ids[pos[id(a)]] for a in args if id(a) in pos and a.is_floating_point()]")
        lines.append("bcap, saved, fcap = _C._backward_graph(g.capsule, wrt)")
        lines.append("fwd = _C.Graph(fcap).compile(backend=%r)" % backend)
        lines.append("print(st.memory.estimate(fwd, *ins, measured=True))")
        if "-bwd" in label:
            lines.append("fouts = fwd.run(*ins)")
            lines.append("seed = st.ones_like(fouts[0])")
            lines.append("bwd = _C.Graph(bcap).compile(backend=%r)" % backend)
            lines.append("print(st.memory.estimate(bwd, *fouts[len(g.outputs):], seed, "
                         "measured=True))")
    elif "-dyn" in label:
        grow = int(label.split("+")[1])
        p2, ref = other_sizes(prog, grow)
        lines.append("cg = g.compile(backend=%r)" % backend)
        news = []
        for i in p2.inputs:
            arr = np.asarray(i.values)
            npdt = "float32" if i.dtype == "bfloat16" else i.dtype
            news.append("st.tensor(np.array(%r, dtype=np.%s).reshape(%r)%s)" % (
                arr.astype(fc.NP[npdt] if npdt != "bool" else np.bool_).tolist(),
                "bool_" if npdt == "bool" else npdt, tuple(arr.shape),
                ", dtype=st.bfloat16" if i.dtype == "bfloat16" else ""))
        lines.append("new = [%s]" % ", ".join(news))
        lines.append("print([tuple(o.shape) for o in cg.run(*new)], 'torch:', %r)" % (
            [r[2] for r in ref.outs],))
        lines.append("print(st.memory.estimate(cg, *new, measured=True))")
    else:
        lines.append("print(st.memory.estimate(g, *ins, measured=True, backend=%r))" % backend)
    return "\n".join(lines)


# --------------------------------------------------------------------- main

def main(argv=None):
    ap = fc.seed_args(__doc__, "skip the backward graphs", BACKENDS)
    ap.add_argument("--no-dynamic", action="store_true", help="skip the other sizes")
    ap.add_argument("--all", action="store_true", help="also report the known kinds (KNOWN)")
    ap.add_argument("--plain", action="store_true", help="fuzz_compile's generator as it is")
    a = ap.parse_args(argv)
    backends = [b for b in a.backends.split(",") if b and _C._fe_backend_available(b)]
    seeds = [a.seed] if a.seed is not None else range(a.start, a.start + a.seeds)
    nbad = 0
    tally = {}
    for seed in seeds:
        prog = generate(seed, plain=a.plain)
        if a.show:
            print("# seed %d\n%s" % (seed, prog.source("st")))
        sys.stdout.flush()
        found = check_program(prog, backends, grad=not a.no_grad, dynamic=not a.no_dynamic)
        if not a.all:
            for k in {k for k, _ in found if k in KNOWN}:
                count("known: " + k)
            found = [f for f in found if f[0] not in KNOWN]
        if not found:
            continue
        nbad += 1
        kinds = sorted({(m.split(":")[0], k) for k, m in found})
        for k in {k for k, _ in found}:
            tally[k] = tally.get(k, 0) + 1
        print("=== seed %d: %d mismatches: %s" % (seed, len(found), ", ".join(
            "%s:%s" % k for k in kinds)))
        if a.quiet:
            continue
        for kind, msg in found[:6]:
            print("  %s: %s" % (kind, msg[:400]))
        kind, msg = found[0]
        label = msg.split(":")[0]
        p = minimize(prog, kind, label, backends) if a.minimize else prog
        print("--- reproducer (%s, %s)%s:" % (label, kind, " minimized" if a.minimize else ""))
        print(reproducer(p, label))
        print()
        sys.stdout.flush()
    print("%d of %d seeds mismatched %s; estimates checked: %s" % (nbad, len(seeds), tally, STATS))
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
