#!/usr/bin/env python
"""scripts/fuzz_dynints.py - a differential fuzzer for int frame arguments under dynamic
shapes (frontend/tr_dynamic.c's int symbols, tr_dynprobe.c, guards.c).

A seed draws a small program f(x, n0[, n1[, n2]]): x a float tensor (1-3 dims) and 1-3
int arguments, 2-7 statements that use the ints the ways the translator keeps symbolic
(arithmetic with tensors, slice bounds, view / reshape / expand targets, creation sizes,
// and %, arange bounds, ints returned) and the ways that must specialize (range() loops,
list and dict indexing, branches on n > k, a dim argument, n ** 2, float(n), str(n),
x[n], narrow, repeat, new_zeros, F.pad, negative bounds x[-n:], rebinding n, in-place
writes then n again). The program is called with a sequence of int tuples (repeats,
returns to an earlier tuple, 0 and 1, negatives, values past the tensor's dims) under
symtrace.compile(fn, backend=B, dynamic=D) for B in llvm, interp and D in True and None
(automatic dynamic), and every call is compared with symtrace eager on the same
arguments: the exception type (eager raises: the compiled call must raise the same
type), tensor outputs (shape, dtype, values), int / float outputs (type and value),
x's gradient through the compiled backward. symtrace eager is itself compared with torch
(kind 'eager': not a compile finding). Graph counts: a program of symbolic uses only
that makes one graph per distinct call under dynamic=True (three or more calls of ints >= 2), is reported as
kind 'graphs' (a recompile per value), lower priority than a wrong result.

  scripts/fuzz_dynints.py --seeds 500 [--start 0] [--backends llvm,interp] [-q]
  scripts/fuzz_dynints.py --seed 17 --show

Kinds: raise (compiled raised where eager did not, or not where eager did, or another
type), value, meta (shape / dtype / type of a Python output), grad, crash (the fuzzer's
child process died: --supervise), graphs, eager."""
import os
import random
import subprocess
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import symtrace as st  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_compile import _close, seed_args, to_np  # noqa: E402
sys.path.pop(0)

VALUES = (2, 3, 4, 5, 7, 9, 12, 2, 3, 4, 0, 1, -1, -2, -3)
NCALLS = 7
TOL = {"float32": 2e-4, "float64": 1e-9}

# Statement templates: (rank in, rank out or None = same, symbolic?, source). {t} is
# the current tensor, {n} / {m} int arguments (or ints computed from them).
SYM, SPEC = True, False
T = [
    # ---- uses that stay symbolic
    (None, None, SYM, "{t} * {n} + {n}"),
    (None, None, SYM, "{t} - ({n} // 2) * {t}"),
    (None, None, SYM, "{t} * ({n} % 3) + ({n} - {m})"),
    (None, None, SYM, "{t}[:{n}]"),
    (None, None, SYM, "{t}[{n}:]"),
    (None, None, SYM, "{t}[{n} // 2:{n} + 1]"),
    (None, None, SYM, "{t}[{n} - 2:]"),
    (None, None, SYM, "{t}[:{n} * 2 - {m}]"),
    (2, 2, SYM, "{t}[:, :{n}]"),
    (2, 2, SYM, "{t}[:{m}, {n} // 2:]"),
    (3, 3, SYM, "{t}[:, :, :{n}] * 2"),
    (None, 2, SYM, "{t}.flatten()[{n}: {n} * 2].reshape(1, -1)"),
    (None, 2, SYM, "{t}.reshape(-1)[: {n} * 2].view({n}, 2)"),
    (None, 2, SYM, "L.ones({n} * 2).view({n}, 2) * {t}.sum()"),
    (None, 2, SYM, "L.ones({n}, {m}).reshape({m}, {n}) + {t}.mean()"),
    (2, 2, SYM, "L.zeros({n}, {t}.shape[1]) + {t}[:1]"),
    (2, 2, SYM, "{t}[:1].expand({n}, -1) + 0"),
    (None, None, SYM, "{t}.unsqueeze(0).expand({n}, *{t}.shape).sum(0)"),
    (None, 2, SYM, "L.full(({n}, 3), 0.5) * {t}.mean()"),
    (None, 2, SYM, "L.empty({n}, 2).fill_(1.0) * {t}.sum()"),
    (2, 2, SYM, "L.arange({n}, {n} + 4).float().view(1, 4) * {t}[:, :1]"),
    (None, None, SYM, "{t} + L.arange({n}).float().sum()"),
    (None, None, SYM, "{t} + L.arange({n} - 1, {n} * 2 + 3).float().sum()"),
    (None, None, SYM, "L.cat([{t}, {t}[:{n}]], 0)"),
    (None, None, SYM, "L.randn({n}).sum() * 0 + {t}"),
    (None, 2, SYM, "L.ones({n}).view(-1, 1) * {t}.sum()"),
    (None, None, SYM, "{t}[:{n}] if {n} >= 0 else {t}"),
    (None, None, SYM, "{t}[:{n} % 5]"),
    (None, None, SYM, "{t}[-{n} * 0 + {n}:]"),
    (None, None, SYM, "{t} * ({t}.shape[0] + {n})"),
    (None, None, SYM, "{t}[:max({n}, 0)]"),
    # ---- uses that must specialize
    (None, None, SPEC, "{t} * sum(range({n}))"),
    (None, None, SPEC, "sum([{t} * j for j in range({n})], {t})"),
    (None, None, SPEC, "{t} * [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0][{n} % 10]"),
    (None, None, SPEC, "{t} * [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0][{n}]"),
    (None, None, SPEC, "({t} + 1 if {n} > 3 else {t} - 1)"),
    (None, None, SPEC, "({t}[:{n}] if {n} < {t}.shape[0] else {t} * 2)"),
    (None, None, SPEC, "{t}.sum({n} % {t}.dim(), keepdim=True)"),
    (None, None, SPEC, "{t} * {{2: 1.5, 3: 2.5, 4: -1.0}}.get({n}, 0.25)"),
    (None, None, SPEC, "{t} * ({n} ** 2)"),
    (None, None, SPEC, "{t} * float({n})"),
    (None, None, SPEC, "{t} / ({n} + 0.5)"),
    (None, None, SPEC, "{t} / {n}"),
    (None, None, SPEC, "{t} * len(str({n}))"),
    (None, None, SPEC, "{t} * abs({n} - 4)"),
    (None, None, SPEC, "{t} * max({n}, 3) - min({n}, 3)"),
    (None, None, SPEC, "{t} * (-{n})"),
    (2, 2, SPEC, "{t}[{n}].reshape(1, -1)"),
    (1, 1, SPEC, "{t}[{n}].reshape(1)"),
    (None, None, SPEC, "{t}.narrow(0, 0, {n})"),
    (2, 2, SPEC, "{t}.repeat({n}, 1)"),
    (1, 1, SPEC, "{t}.repeat({n})"),
    (None, 2, SPEC, "{t}.new_zeros({n}, 2) + {t}.sum()"),
    (None, 1, SPEC, "{t}.new_full(({n},), {n}) * {t}.sum()"),
    (None, None, SPEC, "F.pad({t}, ({n}, 0))"),
    (None, None, SPEC, "{t}[-{n}:]"),
    (2, 2, SPEC, "{t}[:, -{n}:]"),
    (None, None, SPEC, "{t}[:-{n}]"),
    (None, None, SPEC, "{t}.roll({n}, 0)"),
    (2, 2, SPEC, "{t}.topk(min(max({n}, 0), {t}.shape[1]), 1)[0]"),
    (None, None, SPEC, "{t}.chunk(max({n}, 1), 0)[0]"),
    (None, None, SPEC, "{t}.split(max({n}, 1), 0)[-1]"),
    (None, None, SPEC, "{t}[::max({n}, 1)]"),
    (None, None, SPEC, "{t}[::{n}]"),
    (2, 2, SPEC, "{t}.tril({n})"),
    (None, None, SPEC, "{t}.clamp(max={n})"),
    (None, None, SPEC, "{t}.masked_fill({t} > {n} * 0.1, {n})"),
    (None, 2, SPEC, "L.eye({n}) * {t}.sum()"),
    (None, 2, SPEC, "L.linspace(0, 1, {n}).view(-1, 1) * {t}.sum()"),
    (None, None, SPEC, "{t} + L.tensor({n})"),
    (None, None, SPEC, "{t} + L.tensor([{n}, {m}]).float().sum()"),
    (None, None, SPEC, "{t}.unsqueeze(0).expand({n}, *{t}.shape).sum(0) if {n} % 2 else {t}"),
    (None, 2, SPEC, "L.zeros(({n}, 2), dtype=L.float64 if {n} > 4 else L.float32).float() + 1"),
    (2, 2, SPEC, "{t}.transpose(0, 1)[:{n}].transpose(0, 1) * 1"),
    (None, None, SPEC, "{t} * isinstance({n}, int) + ({n} == 3)"),
    (None, None, SPEC, "{t} * int({n} / 2)"),
    (None, None, SPEC, "{t} * round({n} * 0.7)"),
    (None, None, SPEC, "{t} * bool({n})"),
    (None, None, SPEC, "{t} * (1 << max({n}, 0) % 5)"),
    (None, None, SPEC, "{t} * divmod({n}, 3)[1]"),
    (None, None, SPEC, "{t} * math.sqrt(abs({n}))"),
    (None, None, SPEC, "{t} * len([0] * max({n}, 0))"),
    (None, None, SPEC, "{t} * ({n} in (2, 4, 9))"),
]

# multi-line statements: rebinding an int, in-place writes before a later use of n
MULTI = [
    (None, None, SYM, ["{n} = {n} + 1", "{r} = {t}[:{n}]"]),
    (None, None, SYM, ["{n} += {m}", "{r} = {t} * {n}"]),
    (None, None, SPEC, ["{n} = {n} * 2 if {n} > 2 else {n}", "{r} = {t}[:{n}] + 1"]),
    (None, None, SYM, ["{r} = {t}.clone()", "{r}.add_({n})", "{r} = {r}[:{n}] * {n}"]),
    (None, None, SYM, ["{r} = {t}.clone()", "{r}.mul_({n})", "{r} = {r} - {n}"]),
    (None, None, SYM, ["{r} = {t}.clone()", "{r}[:{n}] = {m}", "{r} = {r} + {n}"]),
    (None, None, SYM, ["{r} = {t}.clone()", "{r}[:{n}] *= 2", "{r} = {r}[{n} // 2:]"]),
    (None, None, SPEC, ["{r} = {t}.clone()", "{r}[{n} % {r}.shape[0]] = {n}", "{r} = {r} * 1"]),
    (None, None, SYM, ["{r} = {t}", "{r} = {r} * {n}", "{n} = {n} - 1", "{r} = {r}[:{n}]"]),
    (None, None, SPEC, ["{r} = {t}", "for _j in range(min(max({n}, 0), 4)):",
                        "    {r} = {r} + _j * {n}"]),
]

# Templates that hit known, unfixed findings (left out unless --all): a Python int
# argument stored into a tensor (t[k] = n) is baked without a guard (tr_exec.c
# STORE_SUBSCR does not plain its value); a slice whose step is an int argument, live
# at a graph break (x[::n] raising at n <= 0), is a constant of the resume without a
# guard (translator.c tmpl_of: tr_is_const_value takes any slice).
KNOWN_SRC = ("{r}[:{n}] = {m}", "{r}[{n} % {r}.shape[0]] = {n}", "{t}[::{n}]")
OPTS = {"all": False}


def _known(tmpl):
    src = tmpl[3] if isinstance(tmpl[3], list) else [tmpl[3]]
    return not OPTS["all"] and any(k in src for k in KNOWN_SRC)


# int / float outputs
INT_OUTS = ["{n} * 2 + 1", "{n} // 3", "{n} % 4", "-{n}", "{t}.shape[0] + {n}", "{n} - {m}",
            "{n} * {m}", "({n} + 1) // 2 * 2", "{t}.numel() // max({n}, 1)", "{n}",
            "float({n})", "{n} / 2", "abs({n})", "{n} > 3", "{t}.shape[-1] - {n}"]

SHAPES = {1: [(6,), (8,), (3,)], 2: [(6, 8), (4, 5), (3, 7), (8, 3)], 3: [(2, 5, 6), (4, 3, 5)]}


class Program:
    """A drawn program: its source (names x, n0.., L, F, math), x's values, the int
    tuples of its calls and whether every use of an int is one that stays symbolic."""

    def __init__(self, seed, src, xv, calls, symbolic):
        self.seed, self.src, self.xv, self.calls, self.symbolic = seed, src, xv, calls, symbolic

    def build(self, lib):
        ns = {"L": lib, "F": lib.nn.functional, "math": __import__("math")}
        exec(compile(self.src, "<dynints seed %s>" % self.seed, "exec"), ns)
        return ns["f"]


def _rank_ok(rank, tmpl):
    return tmpl[0] is None or tmpl[0] == rank


def _out_rank(rank, tmpl):
    return rank if tmpl[1] is None else tmpl[1]


def generate(seed):
    r = random.Random(seed)
    nints = r.choice((1, 1, 2, 2, 3))
    ints = ["n%d" % k for k in range(nints)]
    rank = r.choice((1, 2, 2, 2, 3))
    shape = r.choice(SHAPES[rank])
    xv = np.round(np.random.default_rng(seed).standard_normal(shape), 3).astype(np.float32)
    lines = ["def f(x, %s):" % ", ".join(ints)]
    cur, k, symbolic = "x", 0, True
    for _ in range(r.randint(2, 7)):
        n, m = r.choice(ints), r.choice(ints)
        pool = [t for t in (MULTI if r.random() < 0.2 else T)
                if _rank_ok(rank, t) and not _known(t)]
        # mostly symbolic uses: half of the programs use only those
        if r.random() < 0.6:
            pool = [t for t in pool if t[2]] or pool
        tmpl = r.choice(pool)
        res = "t%d" % k
        k += 1
        fmt = dict(t=cur, n=n, m=m, r=res)
        if isinstance(tmpl[3], list):
            lines += ["    " + s.format(**fmt) for s in tmpl[3]]
        else:
            lines.append("    %s = %s" % (res, tmpl[3].format(**fmt)))
        symbolic &= tmpl[2]
        rank = _out_rank(rank, tmpl)
        cur = res
    outs = [cur]
    if k > 1 and r.random() < 0.3:
        outs.append("t%d" % r.randrange(k - 1))
    if r.random() < 0.5:
        e = r.choice(INT_OUTS)
        outs.append(e.format(t=cur, n=r.choice(ints), m=r.choice(ints)))
        if "float" in e or "/" in e or ">" in e:
            symbolic = False
    lines.append("    return " + ", ".join(outs) + ",")
    # the calls: a random walk over VALUES with repeats and a return to the first tuple
    calls = []
    for c in range(NCALLS):
        if c and r.random() < 0.25:
            calls.append(r.choice(calls))
        elif c and r.random() < 0.5:
            t = list(calls[-1])
            t[r.randrange(nints)] = r.choice(VALUES)
            calls.append(tuple(t))
        else:
            calls.append(tuple(r.choice(VALUES) for _ in ints))
    calls.append(calls[0])
    return Program(seed, "\n".join(lines) + "\n", xv, calls, symbolic)


class Res:
    """One call's outcome: exc, or outs (('t', values, dtype, shape, requires_grad) per
    tensor, ('py', type name, value) per Python value) and x's grad."""

    def __init__(self, exc=None, outs=None, grad=None):
        self.exc, self.outs, self.grad = exc, outs, grad


def call(fn, lib, xv, ints, grad):
    x = lib.tensor(xv, requires_grad=grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ys = fn(x, *ints)
        except Exception as e:  # noqa: BLE001
            return Res(exc=e)
        outs, loss = [], None
        for y in ys:
            if isinstance(y, (lib.Tensor,)):
                outs.append(("t", to_np(y), str(y.dtype).split(".")[-1], tuple(y.shape),
                             bool(y.requires_grad)))
                if grad and y.requires_grad:
                    term = (y * y).sum() * 0.5 + y.sum()
                    loss = term if loss is None else loss + term
            else:
                outs.append(("py", type(y).__name__, y))
        g = None
        if loss is not None:
            try:
                loss.backward()
            except Exception as e:  # noqa: BLE001
                return Res(exc=e)
            g = None if x.grad is None else to_np(x.grad)
        return Res(outs=outs, grad=g)


def diff(want, got, who="eager"):
    """What differs between two Res: a list of (kind, message)."""
    if want.exc is not None or got.exc is not None:
        if want.exc is None:
            return [("raise", "raised %s: %s; %s did not" % (
                type(got.exc).__name__, str(got.exc).splitlines()[0][:200] if str(got.exc) else "", who))]
        if got.exc is None:
            return [("raise", "%s raised %s: %s; this did not" % (
                who, type(want.exc).__name__, str(want.exc)[:160]))]
        if who == "eager" and type(want.exc) is not type(got.exc):
            return [("raise", "raised %s (%s), %s %s (%s)" % (
                type(got.exc).__name__, str(got.exc)[:120], who, type(want.exc).__name__,
                str(want.exc)[:120]))]
        return []
    if len(want.outs) != len(got.outs):
        return [("meta", "%d outputs, %s %d" % (len(got.outs), who, len(want.outs)))]
    bad = []
    for k, (w, g) in enumerate(zip(want.outs, got.outs)):
        if w[0] != g[0]:
            bad.append(("meta", "output %d is %s, %s %s" % (k, g[0], who, w[0])))
        elif w[0] == "py":
            if w[1] != g[1] or w[2] != g[2]:
                bad.append(("value" if w[1] == g[1] else "meta",
                            "output %d: %s %r, %s %s %r" % (k, g[1], g[2], who, w[1], w[2])))
        elif w[3] != g[3]:
            bad.append(("meta", "output %d shape %s, %s %s" % (k, g[3], who, w[3])))
        else:
            if w[2] != g[2]:
                bad.append(("meta", "output %d dtype %s, %s %s" % (k, g[2], who, w[2])))
            m = _close(g[1], w[1], w[2], TOL)
            if m:
                bad.append(("value", "output %d: %s" % (k, m)))
    if (want.grad is None) != (got.grad is None):
        bad.append(("grad", "x.grad %s, %s's %s" % (got.grad is not None, who, want.grad is not None)))
    elif want.grad is not None:
        m = _close(got.grad, want.grad, "float32", {"float32": 2e-3})
        if m:
            bad.append(("grad", "x.grad: %s" % m))
    return bad


def _per_value(calls, ng):
    """Whether ng graphs is one per distinct call tuple, with three or more tuples of
    ints >= 2 (slice bounds past a dim may add relation guards: not counted)."""
    big = {c for c in calls if min(c) >= 2}
    return len(big) >= 3 and ng >= len(set(calls))


def check(prog, backends=("llvm", "interp"), dynamics=(True, None), grad=True):
    st.reset()
    """Every compiled call against symtrace eager (and eager against torch): a list of
    (label, kind, message)."""
    found = []
    tf, sf = prog.build(torch), prog.build(st)
    ref = []
    for c, ints in enumerate(prog.calls):
        want = call(sf, st, prog.xv, ints, grad)
        t = call(tf, torch, prog.xv, ints, grad)
        for kind, msg in diff(t, want, "torch"):
            found.append(("eager#%d%s" % (c, ints), "eager", kind + ": " + msg))
        ref.append(want)
    for b in backends:
        for d in dynamics:
            st.reset()
            lab = "%s/dynamic=%s" % (b, d)
            cf = st.compile(prog.build(st), backend=b, dynamic=d)
            g0 = st._C._fe_stats()["graphs"]
            for c, ints in enumerate(prog.calls):
                try:
                    got = call(cf, st, prog.xv, ints, grad)
                except BaseException as e:  # noqa: BLE001
                    got = Res(exc=e)
                for kind, msg in diff(ref[c], got):
                    found.append(("%s#%d%s" % (lab, c, ints), kind, msg))
            ng = st._C._fe_stats()["graphs"] - g0
            if d is True and prog.symbolic and _per_value(prog.calls, ng):
                found.append((lab, "graphs", "%d graphs for %d distinct calls" % (
                    ng, len(set(prog.calls)))))
    return found


def shrink(prog, kind, backends, dynamics):
    """Drops statements, calls and returned values while `kind` is still found."""
    def still(p):
        try:
            return any(k == kind for _, k, _ in check(p, backends, dynamics))
        except Exception:  # noqa: BLE001
            return False

    progress = True
    while progress:
        progress = False
        lines = prog.src.rstrip("\n").split("\n")
        for i in range(len(lines) - 2, 0, -1):
            if lines[i].rstrip().endswith(":"):
                continue
            q = Program(prog.seed, "\n".join(lines[:i] + lines[i + 1:]) + "\n", prog.xv,
                        prog.calls, prog.symbolic)
            if still(q):
                prog, progress = q, True
                break
        ret = lines[-1].split("return ", 1)[1].rstrip(",").split(", ")
        for i in range(len(ret)) if len(ret) > 1 else ():
            q = Program(prog.seed, "\n".join(lines[:-1] + ["    return " + ", ".join(
                ret[:i] + ret[i + 1:]) + ","]) + "\n", prog.xv, prog.calls, prog.symbolic)
            if still(q):
                prog, progress = q, True
                break
        for i in range(len(prog.calls)) if len(prog.calls) > 1 else ():
            q = Program(prog.seed, prog.src, prog.xv, prog.calls[:i] + prog.calls[i + 1:],
                        prog.symbolic)
            if still(q):
                prog, progress = q, True
                break
    return prog


def _supervise(a):
    """Runs the seeds in child processes of 50, so that a crash is a finding, not the end."""
    seeds = list(range(a.start, a.start + a.seeds))
    extra = ["--backends", a.backends] + (["-q"] if a.quiet else []) + (
        ["--no-grad"] if a.no_grad else []) + (["--all"] if a.all else [])
    nbad = 0
    k = 0
    while k < len(seeds):
        chunk = seeds[k:k + 50]
        p = subprocess.run([sys.executable, __file__, "--start", str(chunk[0]), "--seeds",
                            str(len(chunk))] + extra, capture_output=True, text=True)
        out = p.stdout
        sys.stdout.write("".join(ln + "\n" for ln in out.splitlines()
                                 if not ln.startswith(("--- ran ", "=== done"))))
        done = [int(ln.split()[2]) for ln in out.splitlines() if ln.startswith("--- ran ")]
        last = done[-1] if done else chunk[0] - 1
        if last != chunk[-1]:
            bad = last + 1
            print("=== seed %d: crash (exit %d): %s" % (bad, p.returncode,
                                                      p.stderr.strip().splitlines()[-3:]))
            nbad += 1
            k = seeds.index(bad) + 1
        else:
            k += len(chunk)
        nbad += sum(1 for ln in out.splitlines() if ln.startswith("=== seed"))
        sys.stdout.flush()
    print("supervised: %d seeds, %d with findings" % (len(seeds), nbad))
    return 1 if nbad else 0


def main(argv=None):
    ap = seed_args(__doc__, "skip the gradients", backends=("llvm", "interp"))
    ap.add_argument("--supervise", action="store_true", help="child processes (crashes)")
    ap.add_argument("--all", action="store_true", help="also the templates of known findings")
    a = ap.parse_args(argv)
    OPTS["all"] = a.all
    if a.supervise:
        return _supervise(a)
    backends = [b for b in a.backends.split(",") if b and st._C._fe_backend_available(b)]
    seeds = [a.seed] if a.seed is not None else range(a.start, a.start + a.seeds)
    nbad, kinds = 0, {}
    for seed in seeds:
        prog = generate(seed)
        if a.show:
            print("# seed %d calls %s\n%s" % (seed, prog.calls, prog.src))
        sys.stdout.flush()
        found = check(prog, backends, grad=not a.no_grad)
        print("--- ran %d" % seed, flush=True)
        if not found:
            continue
        nbad += 1
        ks = sorted({k for _, k, _ in found})
        for k in ks:
            kinds[k] = kinds.get(k, 0) + 1
        print("=== seed %d: %s" % (seed, ", ".join(ks)))
        if a.quiet:
            continue
        if a.minimize:
            lab = found[0][0].split("#")[0].split("/dynamic=")
            dyn = (True, None) if len(lab) < 2 else ({"True": True, "None": None}[lab[1]],)
            prog = shrink(prog, found[0][1], [b for b in backends if b == lab[0]] or backends,
                          dyn)
            found = check(prog, backends, grad=not a.no_grad)
        print(prog.src.rstrip())
        print("    # x shape %s, calls %s" % (prog.xv.shape, prog.calls))
        for lab, kind, msg in found[:6]:
            print("  [%s] %s: %s" % (lab, kind, msg))
        sys.stdout.flush()
    print("=== done: %d of %d seeds with findings %s" % (nbad, len(seeds), kinds))
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
