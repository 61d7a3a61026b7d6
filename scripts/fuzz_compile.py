#!/usr/bin/env python
"""scripts/fuzz_compile.py - a differential fuzzer for symtrace.compile (fusion, codegen,
views, in-place ops, compiled backward).

A seed draws a small random program: 3-12 tensor ops over 1-3 inputs (0-4 dims, size-0
and size-1 dims, broadcasting, float32/float16/bfloat16/int32/int64/bool/uint8, inputs
that are transposed / sliced / expanded views), with 1-2 outputs. torch (2.13, eager) is
both the oracle that keeps the draw valid and the reference the program is run against:
symtrace eager, then symtrace.compile(fn, backend=B) for B in llvm, interp and cudaemu
(each called twice: the capturing call and the cached entry), and, for programs with
float inputs, the gradients of sum(outputs * random weights) with respect to the inputs
through the compiled backward. Compared: exceptions (torch raises: symtrace must raise),
output count, shapes, dtypes and values (per-dtype tolerances, NaN positions), the
values of the inputs afterwards (in-place side effects) and the gradients. Some programs
take their inputs as one dict argument and / or return the same list of outputs twice
(Program.wrap: the result's identity is compared too); the op templates of later rounds
are fuzz_more_ops.py's, fuzz_nn_ops.py's and fuzz_merge_ops.py's (checkpoint, topk with k
from a size, *_like factories, integer-tensor subscripts); --extra adds fuzz_extra_ops.py's.

  scripts/fuzz_compile.py --seeds 200 [--start 0] [--minimize] [--backends llvm,interp]
  scripts/fuzz_compile.py --seed 17 --minimize --show

For each mismatch it prints the seed, the run that differs and a standalone reproducer
(numpy inputs, the torch and symtrace versions of the function); --minimize first drops
statements, outputs and inputs while the same mismatch remains. The exit status is 1
when some seed mismatched. The library part (Program, generate, check) is what
tests/python/test_fuzz_found.py's smoke run imports."""
import argparse
import os
import re
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import symtrace as st  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_extra_ops import ExtraOps  # noqa: E402
from fuzz_merge_ops import MergeOps  # noqa: E402
from fuzz_more_ops import MoreOps  # noqa: E402
from fuzz_nn_ops import NnOps  # noqa: E402
sys.path.pop(0)

FLOATS = ("float32", "float16", "bfloat16", "float64")
INTS = ("uint8", "int8", "int16", "int32", "int64")
NP = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "uint8": np.uint8,
      "int32": np.int32, "int64": np.int64, "bool": np.bool_, "int8": np.int8, "int16": np.int16}
BACKENDS = ("llvm", "interp", "cudaemu")
# value tolerances (rtol == atol) per result dtype, forward and gradients
TOL = {"float32": 2e-4, "float64": 1e-9, "float16": 2e-2, "bfloat16": 8e-2}
GTOL = {"float32": 2e-3, "float64": 1e-7, "float16": 5e-2, "bfloat16": 1.6e-1}
MAX_NUMEL = 4096
COMPILE_KW = {}  # extra symtrace.compile arguments (--dynamic)
# --dynamic: inputs also get other sizes (Input.alt); the compiled function is called with
# the first sizes, the other ones (the cached graph's path: '#2') and the first again ('#3')
DYNAMIC = {"on": False}
# --extra: fuzz_extra_ops.py's templates are drawn too (off: every seed's program stays)
EXTRA = {"on": False}


# Known differences (tests/python/test_edge_numerics.py's docstring lists them): a
# mismatch whose message matches is counted as known, not reported.
KNOWN = [
    ("raise", r"softmax.*not implemented for '(Int|Long|Short|Char|Byte|Bool)'.*\[.*\b0\b"),
    # torch's own backward fails where its forward ran: an in-place write into an expanded
    # view (CopySlices), clamp's gradient of a broadcast min / max
    ("no-raise", r"\(backward\): unsupported operation: more than one element of the written-to"),
    ("no-raise", r"\(backward\): output with shape \[.*\] doesn't match the broadcast shape"),
    # scatter with a src bigger than its index: ScatterBackward0's src gradient is the
    # index's shape (symtrace's: src's, zeros where the index does not reach)
    ("no-raise", r"\(backward\): Function ScatterBackward0 returned an invalid gradient"),
    # symtrace's integer division by a zero tensor element gives 0 (_ops/float_math.py);
    # it reads an operand that overlaps the written tensor from a copy (torch refuses)
    ("no-raise", r"\(call\): ZeroDivisionError"),
    ("no-raise", r"\(call\): unsupported operation: some elements of the input tensor and the written-to"),
    # torch's einsum of small ints refuses its own int64 partial sums (int16 'ij,jk->i')
    ("no-raise", r"\(call\): expected scalar type \w+ but found \w+; symtrace"),
    # torch skips its dtype check for products with no element (bool @ bool of size 0)
    ("raise", r"(matmul|einsum).*not implemented for 'Bool'.*\b0\b"),
    # in-place writes into (views of) outputs of split / chunk / unbind while they need
    # gradients: torch refuses, symtrace runs them (fuzz_views.VIEW_KNOWN; not fixed)
    ("no-raise", r"This view is the output of a function that returns multiple views"),
]


def known(kind, msg):
    return any(kind.startswith(k) and re.search(rx, msg) for k, rx in KNOWN)


# ----------------------------------------------------------------- programs

class Input:
    """One argument: `values` (numpy, float64/int64/bool) of the contiguous base tensor
    of dtype `dtype`, and `view`, Python source applied to the base (`b`) that gives
    the argument itself ("b" for the base, "b.t()", "b[:, 1::2]", "b.expand(3, 4)");
    `alt`: None or (values, view) of the same input with other sizes (--dynamic)."""
    __slots__ = ("name", "dtype", "values", "view", "alt")

    def __init__(self, name, dtype, values, view="b", alt=None):
        self.name, self.dtype, self.values, self.view, self.alt = name, dtype, values, view, alt


class Program:
    """Statements (Python source lines over the names L = the library, F = its
    nn.functional, the inputs and earlier values) and the names returned.
    wrap: how the function takes and returns them: "" (the inputs as arguments, a
    tuple of the outputs), or "dict" (one dict argument, keyed by the inputs' names)
    and / or "twice" (the same list of the outputs returned twice: `r is r`)."""

    def __init__(self, seed, inputs, stmts, outputs, twice=False, wrap=""):
        self.seed, self.inputs, self.stmts, self.outputs = seed, inputs, list(stmts), list(outputs)
        self.twice = twice  # the gradient runs call backward twice (retain_graph=True first)
        self.wrap = wrap

    def source(self, lib="L", fname="prog"):
        names = [i.name for i in self.inputs]
        if "dict" in self.wrap:
            lines = ["def %s(d):" % fname] + ["    %s = d[%r]" % (n, n) for n in names]
        else:
            lines = ["def %s(%s):" % (fname, ", ".join(names))]
        for s in self.stmts:
            lines.append("    " + (s if lib == "L" else re.sub(r"\b(L|F)\.", lambda m: {
                "L": lib + ".", "F": lib + ".nn.functional."}[m.group(1)], s)))
        if "twice" in self.wrap:
            lines.append("    r_ = [%s]" % ", ".join(self.outputs))
            lines.append("    return r_, r_")
        else:
            lines.append("    return (%s,)" % ", ".join(self.outputs))
        return "\n".join(lines) + "\n"

    def call_args(self, args):
        """Source of the call's arguments, given the inputs' sources."""
        if "dict" in self.wrap:
            return "{%s}" % ", ".join("%r: %s" % (i.name, a) for i, a in zip(self.inputs, args))
        return ", ".join(args)

    def is_float(self):
        return any(i.dtype in FLOATS for i in self.inputs)

    def copy(self, **kw):
        p = Program(self.seed, list(self.inputs), self.stmts, self.outputs, self.twice, self.wrap)
        for k, v in kw.items():
            setattr(p, k, v)
        return p


def make_tensor(lib, inp, grad=False, alt=False):
    """(base, argument) of lib for an Input (its other sizes with alt); with grad, float
    bases require grad and the argument is a view of the base's clone (so in-place ops on
    it stay legal)."""
    values, view = inp.alt if alt else (inp.values, inp.view)
    if inp.dtype == "bfloat16":
        arr = np.array(values, dtype=np.float32)
        base = (torch.from_numpy(arr.copy()).to(torch.bfloat16) if lib is torch
                else st.tensor(arr, dtype=st.bfloat16))
    else:
        arr = np.array(values, dtype=NP[inp.dtype])
        base = torch.from_numpy(arr.copy()) if lib is torch else st.tensor(arr)
    src = base
    if grad and inp.dtype in FLOATS:
        base.requires_grad_()
        src = base.clone()
    return base, eval(view, {"b": src})


def to_np(t):
    """float64 / int64 / bool numpy values of a torch or symtrace tensor."""
    t = t.detach()
    if t.dtype in (torch.bfloat16, torch.float16, st.bfloat16, st.float16):
        t = t.float()
    a = np.array(t.numpy())
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def dname(dt):
    return str(dt).split(".")[-1]


# ---------------------------------------------------------------- generator

def _rand_values(r, shape, dtype):
    if dtype == "bool":
        return r.random(shape) < 0.5
    if dtype == "uint8":
        return r.integers(0, 10, size=shape).astype(np.int64)
    if dtype in INTS:
        return r.integers(-4, 6, size=shape).astype(np.int64)
    v = np.round(r.standard_normal(shape) * 1.5, 3)
    if dtype == "bfloat16":
        return torch.tensor(v, dtype=torch.float32).to(torch.bfloat16).to(torch.float64).numpy()
    return v.astype(NP[dtype]).astype(np.float64)


def _layout(lay, s, d):
    """(base shape, view source) of an argument of shape s laid out as `lay`."""
    if lay == "t" and len(s) >= 2:
        return s[::-1], "b.permute(%s)" % ", ".join(str(k) for k in range(len(s) - 1, -1, -1))
    if lay == "slice" and s:
        return s[:-1] + [2 * s[-1] + 1], "b[..., 1::2]"
    if lay == "slice0" and s:
        return [s[0] + 2] + s[1:], "b[2:]"
    if lay == "expand" and s and any(k != 1 for k in s):
        return s[:d] + [1] + s[d + 1:], "b.expand(%s)" % ", ".join(str(x) for x in s)
    return list(s), "b"


class Gen(MoreOps, NnOps, MergeOps, ExtraOps):
    """Draws one program; keeps torch values of every name (the oracle)."""

    def __init__(self, seed, max_ops=None):
        self.r = np.random.default_rng(seed)
        self.seed = seed
        self.env = {}
        self.stmts = []
        self.nvar = 0
        self.max_ops = max_ops
        self.twice = False
        self.inputs = self._inputs()
        for i in self.inputs:
            self.env[i.name] = make_tensor(torch, i)[1]

    # -- draws
    def ch(self, seq):
        return seq[int(self.r.integers(len(seq)))]

    def p(self, prob):
        return self.r.random() < prob

    def _inputs(self):
        r = self.r
        n = int(self.ch([1, 1, 2, 2, 2, 3]))
        theme = self.ch(["float32", "float32", "float16", "bfloat16", "mixed", "mixed", "int",
                         "float64", "small"])
        rank = int(self.ch([0, 1, 1, 2, 2, 2, 3, 3, 4]))
        shape = [int(self.ch([1, 2, 3, 4, 5, 3, 2])) if not self.p(0.04) else 0 for _ in range(rank)]
        out = []
        for k in range(n):
            if theme == "mixed":
                dt = self.ch(["float32", "float32", "float16", "bfloat16", "int32", "int64", "bool",
                              "uint8", "int8", "float64"])
            elif theme == "int":
                dt = self.ch(["int32", "int64", "int64", "bool", "uint8", "int8", "int16"])
            elif theme == "small":  # small ints and bools with floats: promotion, wrapping
                dt = self.ch(["uint8", "int8", "int16", "bool", "float32", "float16"])
            else:
                dt = theme
            s = list(shape)
            drop, ones = 0, [False] * len(s)
            if k:  # broadcast partners: drop leading dims, set some to 1
                drop = int(r.integers(0, len(s) + 1)) if self.p(0.3) else 0
                s = s[drop:]
                ones = [self.p(0.25) for _ in s]
                s = [1 if o else d for d, o in zip(s, ones)]
            lay = self.ch(["contig", "contig", "contig", "t", "slice", "expand", "slice0"])
            d = int(r.integers(len(s))) if lay == "expand" and s and any(x != 1 for x in s) else 0
            base, view = _layout(lay, s, d)
            out.append(Input("x%d" % k, dt, _rand_values(r, tuple(base), dt), view))
            if DYNAMIC["on"]:
                out[-1].alt = (drop, ones, lay, d)
        if DYNAMIC["on"]:
            self._alt_inputs(out, shape)
        return out

    def _alt_inputs(self, out, shape):
        """Other sizes for every input (--dynamic), from a second generator so that the
        program of a seed is the same with and without --dynamic: each dim of the common
        shape changes with probability 0.6 (to 1..6, rarely 0), the same for all inputs."""
        r = np.random.default_rng(self.seed + 7919 * 10 ** 6)
        # only the batch (leading) dim (conv, pools, SDPA): drawn apart, so that the other
        # seeds keep the sizes they had before
        if shape and np.random.default_rng(self.seed + 7907 * 10 ** 6).random() < 0.4:
            alt = [int(r.integers(1, 7))] + list(shape[1:])
        else:
            alt = [int(r.integers(1, 7)) if r.random() < 0.6 else d for d in shape]
            alt = [0 if r.random() < 0.03 else d for d in alt]
        for inp in out:
            drop, ones, lay, d = inp.alt
            s = [1 if o else x for x, o in zip(alt[drop:], ones)]
            if lay == "expand" and not (s and any(x != 1 for x in s)):
                lay = "contig"
            base, view = _layout(lay, s, d)
            inp.alt = (_rand_values(r, tuple(base), inp.dtype), view)

    def names(self, pred=None):
        return [n for n, t in self.env.items() if pred is None or pred(t)]

    def var(self, pred=None):
        """A name (satisfying pred), most often one of the latest: programs are chains."""
        ns = self.names(pred)
        if not ns:
            return None
        if self.p(0.6):
            return ns[-1] if self.p(0.6) or len(ns) < 2 else ns[-2]
        return self.ch(ns)

    def new(self):
        self.nvar += 1
        return "v%d" % self.nvar

    def scalar(self, t=None):
        if t is not None and t.dtype == torch.bool and self.p(0.3):
            return self.ch(["True", "False"])
        if self.p(0.5):
            return self.ch(["0", "1", "2", "3", "-1", "-2"])
        return self.ch(["0.5", "-1.5", "2.0", "2.5", "0.001", "-0.25"])

    def dim(self, t, extra=0):
        nd = t.dim() + extra
        if nd == 0:
            return self.ch([0, -1]) if extra == 0 else 0
        d = int(self.r.integers(nd))
        return d - nd if self.p(0.3) else d

    def partner(self, t):
        """A name broadcastable with t (or None)."""
        def ok(u):
            try:
                torch.broadcast_shapes(t.shape, u.shape)
                return True
            except RuntimeError:
                return False
        return self.var(ok)

    # -- running a candidate in the oracle
    def try_stmt(self, line, target=None):
        """Runs the line on the torch values; True (and kept) when it ran and its
        result is a small tensor without integer overflow."""
        env = dict(self.env)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(line, {"L": torch, "F": torch.nn.functional}, env)
            except Exception as e:  # noqa: BLE001
                return e
        if target is not None:
            v = env.get(target)
            if not isinstance(v, torch.Tensor) or v.numel() > MAX_NUMEL or v.dim() > 8:
                return False  # (symtrace's tensors have at most 8 dims)
            if v.dtype in (torch.int32, torch.int64) and v.numel() and v.abs().max() >= 2 ** 30:
                return False
        self.env = env
        self.stmts.append(line)
        return True

    # -- op templates: each returns (line, target or None) or None
    def t_unary(self):
        x = self.var()
        t = self.env[x]
        fn = self.ch(["neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu",
                      "floor", "ceil", "round", "reciprocal", "rsqrt", "log1p", "expm1", "sign",
                      "square", "erf", "trunc", "frac", "logical_not", "bitwise_not", "isnan",
                      "isfinite", "exp2", "sinh", "atan"])
        y = self.new()
        if self.p(0.15):
            f = self.ch(["F.gelu(%s)", "F.silu(%s)", "F.leaky_relu(%s, 0.1)", "F.hardtanh(%s)",
                         "F.softplus(%s)", "%s.nan_to_num(posinf=9.0, neginf=-9.0)"])
            return "%s = %s" % (y, f % x), y
        if self.p(0.5):
            return "%s = L.%s(%s)" % (y, fn, x), y
        return "%s = %s.%s()" % (y, x, fn), y

    def t_binary(self):
        x = self.var()
        t = self.env[x]
        y = self.partner(t) if self.p(0.6) else None
        other = y if y is not None else self.scalar(t)
        op = self.ch(["+", "-", "*", "/", "**", "//", "%", "&", "|", "^", "<", "<=", ">", ">=",
                      "==", "!=", "add", "sub", "mul", "div", "maximum", "minimum", "pow",
                      "atan2", "remainder", "fmod", "floor_divide", "bitwise_and", "logical_and",
                      "logical_or", "eq", "lt", "ge", "hypot", "copysign", "fmax"])
        # integer division / remainder / negative powers: keep the divisor nonzero
        ints = lambda v: not v.is_floating_point()  # noqa: E731
        if op in ("//", "%", "remainder", "fmod", "floor_divide", "**", "pow", "/", "div"):
            if y is not None:
                d = self.env[y]
                if ints(t) and ints(d) and d.numel() and (d == 0).any():
                    return None
                if op in ("**", "pow") and ints(t) and ints(d) and d.numel() and (d < 0).any():
                    return None
            elif op in ("//", "%", "remainder", "fmod", "floor_divide", "**", "pow"):
                other = self.ch(["2", "3", "2.5", "-2"] if op not in ("**", "pow") else ["2", "3", "0.5"])
        z = self.new()
        if op in ("+", "-", "*", "/", "**", "//", "%", "&", "|", "^", "<", "<=", ">", ">=", "==", "!="):
            if y is None and self.p(0.3) and op not in ("**",):
                return "%s = %s %s %s" % (z, other, op, x), z
            return "%s = %s %s %s" % (z, x, op, other), z
        if y is None and op in ("maximum", "minimum", "atan2", "hypot", "copysign", "fmax",
                                "logical_and", "logical_or"):
            return None
        if self.p(0.5):
            return "%s = L.%s(%s, %s)" % (z, op, x, other), z
        return "%s = %s.%s(%s)" % (z, x, op, other), z

    def t_where(self):
        c = self.var(lambda u: u.dtype == torch.bool)
        if c is None or self.p(0.4):
            x = self.var()
            cond = "%s > %s" % (x, self.ch(["0", "0.5", "1"]))
            shape = self.env[x].shape
        else:
            cond, shape = c, self.env[c].shape
        probe = torch.empty(shape)
        a = self.partner(probe) if self.p(0.7) else None
        b = self.partner(probe) if self.p(0.6) else None
        z = self.new()
        return "%s = L.where(%s, %s, %s)" % (z, cond, a or self.scalar(), b or self.scalar()), z

    def t_clamp(self):
        x = self.var()
        z = self.new()
        lo, hi = self.ch(["-1", "-0.5", "0", "None"]), self.ch(["1", "2.5", "None", "3"])
        if lo == "None" and hi == "None":
            hi = "1"
        if self.p(0.2):
            m = self.partner(self.env[x])
            if m is not None:
                return "%s = L.clamp(%s, min=%s)" % (z, x, m), z
        if self.p(0.5):
            return "%s = %s.clamp(%s, %s)" % (z, x, lo, hi), z
        return "%s = L.clamp(%s, min=%s, max=%s)" % (z, x, lo, hi), z

    def t_cast(self):
        x = self.var()
        t = self.env[x]
        dt = self.ch(["float32", "float16", "bfloat16", "int32", "int64", "bool", "uint8", "float64"])
        if t.is_floating_point() and dt in ("int32", "int64", "uint8") and t.numel():
            # float -> integer of NaN / inf / out-of-range values is undefined
            lo = 0 if dt == "uint8" else -2 ** 30
            if not torch.isfinite(t).all() or t.min() < lo or t.max() >= (256 if dt == "uint8" else 2 ** 30):
                return None
            # a computed value at or a rounding away from a nonzero integer truncates either
            # way (torch's group_norm gives 1.0 where symtrace's 0.99999...)
            v = t.double()
            d = (v - v.round()).abs()
            if ((d < 1e-3 * v.abs().clamp(min=1)) & (v.round() != 0)).any():
                return None
        if t.dtype in (torch.int32, torch.int64) and dt == "uint8" and t.numel() and (t < 0).any():
            return None
        z = self.new()
        short = {"float32": "float", "float16": "half", "int32": "int", "int64": "long",
                 "bool": "bool", "float64": "double", "bfloat16": "bfloat16"}
        if dt in short and self.p(0.4):
            return "%s = %s.%s()" % (z, x, short[dt]), z
        return "%s = %s.to(L.%s)" % (z, x, dt), z

    def t_reduce(self):
        x = self.var()
        t = self.env[x]
        op = self.ch(["sum", "sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "var", "std",
                      "any", "all", "logsumexp", "max", "min", "sum_dims", "mean_dims", "amax_dims"])
        z = self.new()
        kd = self.p(0.4)
        if op.endswith("_dims"):
            if t.dim() < 2:
                return None
            a, b = sorted(self.r.choice(t.dim(), 2, replace=False).tolist())
            return "%s = %s.%s((%d, %d), keepdim=%s)" % (z, x, op[:-5], a, b, kd), z
        if op in ("logsumexp",):
            return "%s = L.logsumexp(%s, %d, keepdim=%s)" % (z, x, self.dim(t), kd), z
        if op in ("max", "min"):
            if self.p(0.3):
                return "%s = %s.%s()" % (z, x, op), z
            return "%s = %s.%s(%d, keepdim=%s).%s" % (z, x, op, self.dim(t), kd,
                                                   self.ch(["values", "indices"])), z
        if op in ("var", "std") and self.p(0.4):
            return "%s = %s.%s(%d, correction=%d, keepdim=%s)" % (z, x, op, self.dim(t),
                                                                self.ch([0, 1]), kd), z
        if self.p(0.25):
            return "%s = %s.%s()" % (z, x, op), z
        if op == "sum" and self.p(0.3):
            return "%s = L.sum(%s, %d, keepdim=%s, dtype=L.%s)" % (
                z, x, self.dim(t), kd, self.ch(["float32", "int64", "float64"])), z
        return "%s = %s.%s(%d, keepdim=%s)" % (z, x, op, self.dim(t), kd), z

    def _reshape_target(self, t):
        s = list(t.shape)
        n = t.numel()
        opts = [[-1], [n]]
        if len(s) >= 2:
            i = int(self.r.integers(len(s) - 1))
            opts.append(s[:i] + [s[i] * s[i + 1]] + s[i + 2:])
            opts.append(s[:i] + [-1] + s[i + 2:])
        for i, d in enumerate(s):
            for f in (2, 3):
                if d % f == 0 and d > f:
                    opts.append(s[:i] + [f, d // f] + s[i + 1:])
        opts.append([1] + s)
        opts.append(s + [1])
        if n and n % 2 == 0:
            opts.append([2, -1])
        return self.ch(opts)

    def t_view(self):
        x = self.var()
        t = self.env[x]
        nd = t.dim()
        z = self.new()
        k = self.ch(["reshape", "view", "permute", "transpose", "t", "narrow", "select", "slice",
                     "unsqueeze", "squeeze", "expand", "flatten", "unfold", "flip", "contiguous",
                     "mT", "movedim", "index", "slice", "expand"])
        if k in ("reshape", "view"):
            sh = self._reshape_target(t)
            return "%s = %s.%s(%s)" % (z, x, k, ", ".join(map(str, sh)) or "()"), z
        if k == "permute" and nd:
            perm = self.r.permutation(nd).tolist()
            return "%s = %s.permute(%s)" % (z, x, ", ".join(map(str, perm))), z
        if k == "transpose" and nd:
            return "%s = %s.transpose(%d, %d)" % (z, x, self.dim(t), self.dim(t)), z
        if k == "t" and nd <= 2:
            return "%s = %s.t()" % (z, x), z
        if k == "mT" and nd >= 2:
            return "%s = %s.mT" % (z, x), z
        if k == "movedim" and nd:
            return "%s = L.movedim(%s, %d, %d)" % (z, x, self.dim(t), self.dim(t)), z
        if k == "narrow" and nd:
            d = self.dim(t)
            n = t.shape[d]
            st_ = int(self.r.integers(0, n + 1))
            ln = int(self.r.integers(0, n - st_ + 1))
            return "%s = %s.narrow(%d, %d, %d)" % (z, x, d, st_, ln), z
        if k == "select" and nd:
            d = self.dim(t)
            n = t.shape[d]
            if n == 0:
                return None
            i = int(self.r.integers(-n, n))
            if self.p(0.5):
                return "%s = %s.select(%d, %d)" % (z, x, d, i), z
            return "%s = %s[%s]" % (z, x, ", ".join([":"] * (d % nd) + [str(i)])), z
        if k == "slice" and nd:
            return "%s = %s[%s]" % (z, x, self._slices(t)), z
        if k == "index":
            return "%s = %s[%s]" % (z, x, self.ch(["None", "..., None", "None, ..."])), z
        if k == "unsqueeze":
            return "%s = %s.unsqueeze(%d)" % (z, x, self.dim(t, 1)), z
        if k == "squeeze":
            if nd and self.p(0.6):
                return "%s = %s.squeeze(%d)" % (z, x, self.dim(t)), z
            return "%s = %s.squeeze()" % (z, x), z
        if k == "expand":
            sh = [(self.ch([2, 3]) if d == 1 and self.p(0.7) else -1) for d in t.shape]
            if self.p(0.4) or not sh:
                sh = [self.ch([2, 3])] + sh
            return "%s = %s.expand(%s)" % (z, x, ", ".join(map(str, sh))), z
        if k == "flatten":
            if nd >= 2 and self.p(0.6):
                a = int(self.r.integers(nd - 1))
                return "%s = %s.flatten(%d, %d)" % (z, x, a, int(self.r.integers(a, nd))), z
            return "%s = L.flatten(%s)" % (z, x), z
        if k == "unfold" and nd:
            d = self.dim(t)
            n = t.shape[d]
            size = int(self.r.integers(1, max(n, 1) + 1))
            return "%s = %s.unfold(%d, %d, %d)" % (z, x, d, size, self.ch([1, 1, 2, 3])), z
        if k == "flip" and nd:
            return "%s = %s.flip(%d)" % (z, x, self.dim(t)), z
        if k == "contiguous":
            return "%s = %s.%s()" % (z, x, self.ch(["contiguous", "clone"])), z
        return None

    def _slices(self, t):
        parts = []
        for d in t.shape:
            if self.p(0.4):
                parts.append(":")
                continue
            a = int(self.r.integers(-d - 1, d + 1)) if self.p(0.7) else None
            b = int(self.r.integers(-d - 1, d + 2)) if self.p(0.5) else None
            c = self.ch([None, 1, 2, 3])
            s = "%s:%s" % ("" if a is None else a, "" if b is None else b)
            parts.append(s + ("" if c is None else ":%d" % c))
        if self.p(0.2) and len(parts) > 1:
            parts = ["..."] + parts[len(parts) // 2 + 1:]
        return ", ".join(parts) or "..."

    def t_cat(self):
        x = self.var(lambda u: u.dim() >= 1)
        if x is None:
            return None
        t = self.env[x]
        d = self.dim(t)
        stack = self.p(0.35)
        same = lambda u: (u.shape == t.shape if stack else u.dim() == t.dim() and all(  # noqa: E731
            a == b for i, (a, b) in enumerate(zip(u.shape, t.shape)) if i != d % t.dim()))
        ys = [self.var(same) for _ in range(int(self.r.integers(1, 3)))]
        z = self.new()
        parts = ", ".join([x] + ys)
        if stack:
            return "%s = L.stack([%s], %d)" % (z, parts, self.dim(t, 1)), z
        return "%s = L.%s([%s], %d)" % (z, self.ch(["cat", "cat", "concat"]), parts, d), z

    def t_softmax(self):
        x = self.var()
        t = self.env[x]
        z = self.new()
        f = self.ch(["F.softmax(%s, %d)", "F.log_softmax(%s, dim=%d)", "%s.softmax(%d)",
                     "%s.log_softmax(%d, dtype=L.float32)", "L.cumsum(%s, %d)", "%s.cumsum(%d)",
                     "%s.cumsum(%d, dtype=L.float32)"])
        return "%s = %s" % (z, f % (x, self.dim(t))), z

    def t_matmul(self):
        x = self.var(lambda u: u.dim() >= 1)
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        cands = []
        for n, u in self.env.items():
            for form in ("%s", "%s.mT"):
                if form == "%s.mT" and u.dim() < 2:
                    continue
                if u.dtype != t.dtype and not (u.numel() and t.numel()):
                    continue  # torch skips its dtype check on empty operands
                try:
                    r = torch.matmul(t.float(), (u.mT if form != "%s" else u).float())
                except RuntimeError:
                    continue
                if r.numel() <= MAX_NUMEL:
                    cands.append(form % n)
        if t.dim() >= 2:
            cands.append("%s.mT" % x)
        if not cands:
            return None
        y = self.ch(cands)
        return "%s = %s" % (z, self.ch(["%s @ %s", "L.matmul(%s, %s)"]) % (x, y)), z

    def t_inplace(self):
        x = self.var()
        if self.p(0.5):  # an input or a view of one
            x = self.ch([i.name for i in self.inputs])
            if self.p(0.5) and self.env[x].dim():
                t = self.env[x]
                v = self.new()
                view = self.ch(["%s[%s]" % (x, self._slices(t)), "%s.transpose(0, -1)" % x,
                                "%s.select(0, 0)" % x if t.shape[0] else "%s[:]" % x])
                if self.try_stmt("%s = %s" % (v, view), v) is not True:
                    return None
                x = v
        t = self.env[x]
        y = self.partner(t) if self.p(0.6) else None
        s = y or self.scalar(t)
        k = self.ch(["add_", "mul_", "sub_", "div_", "clamp_", "copy_", "fill_", "zero_", "setitem",
                     "setitem", "add_alpha"])
        if k == "clamp_":
            return "%s.clamp_(min=%s, max=%s)" % (x, self.ch(["-1", "0", "None"]),
                                                   self.ch(["1", "2", "0.5"])), None
        if k == "copy_":
            return "%s.copy_(%s)" % (x, y or self.var()), None
        if k == "fill_":
            return "%s.fill_(%s)" % (x, self.scalar(t)), None
        if k == "zero_":
            return "%s.zero_()" % x, None
        if k == "setitem":
            if not t.dim():
                return "%s[...] = %s" % (x, s), None
            return "%s[%s] = %s" % (x, self._slices(t), s), None
        if k == "add_alpha":
            return "%s.add_(%s, alpha=%s)" % (x, s, self.ch(["2", "-1", "0.5"])), None
        if k == "div_" and not t.is_floating_point():
            return None
        return "%s.%s(%s)" % (x, k, s), None

    def t_fused(self):
        """Compound lines: a reduction broadcast back (softmax's shape), elementwise chains."""
        x = self.var()
        t = self.env[x]
        z = self.new()
        d = self.dim(t)
        y = self.partner(t) or x
        f = self.ch(["%(x)s - %(x)s.mean(%(d)d, keepdim=True)",
                     "(%(x)s - %(x)s.amax(%(d)d, keepdim=True)).exp()",
                     "%(x)s / (%(x)s.abs().sum(%(d)d, keepdim=True) + 1)",
                     "(%(x)s * 2 + %(y)s).sigmoid() * %(x)s",
                     "L.where(%(x)s > %(y)s, %(x)s - %(y)s, (%(y)s * 0.5).tanh())",
                     "(%(x)s.float() - %(y)s).square().mean(%(d)d)",
                     "%(x)s * %(x)s.sum(%(d)d, keepdim=True).rsqrt()",
                     "(%(x)s + 1).log1p().clamp(min=-3) + %(y)s.cumsum(%(d)d)"])
        return "%s = %s" % (z, f % {"x": x, "y": y, "d": d}), z

    BASE_TEMPLATES = (("t_fused", 8), ("t_unary", 14), ("t_binary", 18), ("t_where", 4), ("t_clamp", 3), ("t_cast", 5),
                 ("t_reduce", 10), ("t_view", 18), ("t_cat", 4), ("t_softmax", 5),
                 ("t_matmul", 4), ("t_inplace", 10),
                 # fuzz_more_ops.MoreOps
                 ("t_index", 12), ("t_sort", 5), ("t_bounds", 3), ("t_promote", 5), ("t_move", 8),
                 ("t_einsum", 3), ("t_bmm", 3), ("t_norm", 5), ("t_catviews", 3), ("t_viewchain", 5),
                 ("t_detach", 3))
    # the third round's templates (fuzz_nn_ops); scripts/fuzz_memplan.py draws without them
    TEMPLATES = BASE_TEMPLATES + NnOps.NN_TEMPLATES + MergeOps.MERGE_TEMPLATES

    def draw(self):
        templates = self.TEMPLATES + (ExtraOps.EXTRA_TEMPLATES if EXTRA["on"] else ())
        names = [n for n, _ in templates]
        w = np.array([w for _, w in templates], dtype=np.float64)
        nops = self.max_ops or int(self.r.integers(3, 13))
        done, tries, last = 0, 0, None
        while done < nops and tries < 200:
            tries += 1
            got = getattr(self, names[int(self.r.choice(len(names), p=w / w.sum()))])()
            if got is None:
                continue
            lines = got if isinstance(got, list) else [got]  # several lines: all or none
            env, stmts = self.env, list(self.stmts)
            for line, target in lines:
                ok = self.try_stmt(line, target)
                if ok is not True:
                    break
            if ok is True:
                done += 1
                last = target or line.split(".")[0].split("[")[0].strip()
            elif isinstance(ok, Exception) and not isinstance(ok, (NameError, AttributeError)) \
                    and done >= 2 and self.p(0.03):
                self.stmts.append(line)  # a program torch rejects: symtrace must reject it too
                break
            else:
                self.env, self.stmts = env, stmts
        tensors = [n for n in self.env if n.startswith("v") or n.startswith("x")]
        outs = [last] if last in self.env else [tensors[-1]]
        if self.p(0.4):
            o = self.ch(tensors)
            if o not in outs:
                outs.append(o)
        return Program(self.seed, self.inputs, self.stmts, outs, self.twice)


# A custom autograd.Function with side effects (an append to the global list LOG_ in
# forward and in backward): symtrace runs it eagerly on every call (a graph break), so the
# entries a call appends must be eager's (Outcome.log). generate() puts `v = FX_.apply(v)`
# after a statement of the program; build() defines FX_ and LOG_ in its namespace.
FX_SRC = """
class FX_(L.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        LOG_.append(("fwd", tuple(a.shape), str(a.dtype).split(".")[-1]))
        return a * 2

    @staticmethod
    def backward(ctx, g):
        LOG_.append(("bwd", tuple(g.shape)))
        return g * 2
"""


def fx_namespace(lib):
    """A fresh namespace with FX_ (over lib) and its LOG_."""
    ns = {"L": lib, "F": lib.nn.functional, "LOG_": []}
    exec(FX_SRC, ns)
    return ns


def _add_effect(prog, env, seed):
    """With probability 0.2 (its own stream: the statements drawn stay), `v = FX_.apply(v)`
    after the statement that made a float v of the program."""
    r = np.random.default_rng(seed + 7949 * 10 ** 6)
    if r.random() >= 0.2:
        return
    at = [k for k, line in enumerate(prog.stmts)
          if re.match(r"(v\d+) = ", line) and line.split(" = ")[0] in env
          and env[line.split(" = ")[0]].is_floating_point()]
    if at:
        k = at[int(r.integers(len(at)))]
        v = prog.stmts[k].split(" = ")[0]
        prog.stmts.insert(k + 1, "%s = FX_.apply(%s)" % (v, v))


def generate(seed, max_ops=None):
    g = Gen(seed, max_ops)
    prog = g.draw()
    _add_effect(prog, g.env, seed)
    # how it takes its inputs and returns its outputs: drawn apart (the statements stay)
    prog.wrap = str(np.random.default_rng(seed + 7937 * 10 ** 6).choice(
        ["", "", "", "", "", "", "twice", "dict", "dict twice"]))
    return prog


# ------------------------------------------------------------------ running

class Outcome:
    """What one run gave: an exception (`exc`, and `where`: 'call' or 'backward'), or the
    outputs (numpy values, dtype names, shapes, requires_grad), the input bases'
    values afterwards and the gradients of the bases (None where none)."""

    def __init__(self, exc=None, where=None, outs=None, inputs=None, grads=None, same=None):
        self.exc, self.where, self.outs, self.inputs, self.grads = exc, where, outs, inputs, grads
        self.log = None  # what the call (and its backward) appended to LOG_ (FX_SRC)
        self.same = same  # Program.wrap "twice": whether both results were one list


def build(prog, lib):
    ns = fx_namespace(lib) if any("FX_" in s for s in prog.stmts) else \
        {"L": lib, "F": lib.nn.functional}
    exec(compile(prog.source(), "<fuzz seed %s>" % prog.seed, "exec"), ns)
    return ns["prog"]


def run(prog, lib, mode="eager", grad=False, calls=1, weights_seed=0, alts=None):
    """Runs the program `calls` times (fresh inputs each time; compiled once) and returns
    an Outcome per call. mode: 'eager' or a symtrace backend. alts: per call, whether it
    takes the inputs' other sizes (their `alt`)."""
    fn = build(prog, lib)
    log = fn.__globals__.get("LOG_")
    if mode != "eager":
        fn = st.compile(fn, backend=mode, **COMPILE_KW)
    res = []
    for n in range(calls):
        n0 = len(log) if log is not None else 0
        res.append(_call(fn, prog, lib, grad, weights_seed, bool(alts and alts[n])))
        if log is not None:
            res[-1].log = log[n0:]
    return res


def _has_alt(prog):
    return all(i.alt is not None for i in prog.inputs)


def _call(fn, prog, lib, grad, weights_seed, alt=False):
    made = [make_tensor(lib, i, grad, alt) for i in prog.inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            args = [m[1] for m in made]
            if "dict" in prog.wrap:
                outs = fn({i.name: a for i, a in zip(prog.inputs, args)})
            else:
                outs = fn(*args)
        except Exception as e:  # noqa: BLE001
            return Outcome(exc=e, where="call")
        same = None
        if "twice" in prog.wrap:
            same = type(outs).__name__ + ("" if outs[0] is outs[1] else " of two lists") + \
                (" of lists" if type(outs[0]) is list else " of %s" % type(outs[0]).__name__)
            outs = outs[0]
        o = Outcome(outs=[(to_np(t), dname(t.dtype), tuple(t.shape), bool(t.requires_grad))
                          for t in outs], same=same)
        if not grad:
            o.inputs = [(to_np(m[0]), dname(m[0].dtype)) for m in made]
            return o
        wr = np.random.default_rng(weights_seed)
        loss = None
        try:  # (torch refuses to read a multi-output view whose base was written in place)
            for t in outs:
                if t.requires_grad and t.is_floating_point():
                    w = wr.standard_normal(tuple(t.shape)).astype(np.float32)
                    term = (t.float() * lib.tensor(w)).sum()
                    loss = term if loss is None else loss + term
        except Exception as e:  # noqa: BLE001
            return Outcome(exc=e, where="backward")
        if loss is None:
            o.grads = []
            return o
        try:
            if prog.twice:  # a second backward through the retained graph: gradients add up
                loss.backward(retain_graph=True)
            loss.backward()
        except Exception as e:  # noqa: BLE001
            return Outcome(exc=e, where="backward")
        o.grads = [None if m[0].grad is None else to_np(m[0].grad) for m in made]
        return o


def _close(got, exp, dt, tol, nonfinite_alike=False):
    """None, or what differs. nonfinite_alike: NaN and +-inf count as one value (gradients
    at NaN / inf / ties are known differences, see KNOWN)."""
    if got.shape != exp.shape:
        return "shape %s != %s" % (got.shape, exp.shape)
    if nonfinite_alike and got.dtype.kind == "f":
        both = ~np.isfinite(got) & ~np.isfinite(exp)
        got, exp = np.where(both, 0.0, got), np.where(both, 0.0, exp)
    if dt not in FLOATS:
        bad = got != exp
    else:
        t = tol.get(dt, 1e-4)
        with np.errstate(invalid="ignore"):
            bad = ~(np.isclose(got, exp, rtol=t, atol=t, equal_nan=True))
    if bad.any():
        idx = np.argwhere(bad)[:3].tolist()
        return "%d of %d differ, e.g. at %s: got %s expected %s" % (
            int(bad.sum()), bad.size, idx, [got[tuple(i)] for i in idx] if got.ndim else got,
            [exp[tuple(i)] for i in idx] if exp.ndim else exp)
    return None


def compare(ref, got, gtol=GTOL["float32"], low="float32"):
    """A list of (kind, message) where `got` differs from the reference Outcome; gtol:
    the gradients' tolerance; low: the program's least precise float dtype (a float64
    result of bfloat16 math is compared with bfloat16's tolerance)."""
    if ref.exc is not None:
        if ref.where == "backward" and "is not implemented" in str(ref.exc):
            return []  # torch has no derivative (floor_divide...): symtrace's zeros are fine
        if got.exc is None:
            return [("no-raise", "torch raised %s (%s): %s; symtrace did not" % (
                type(ref.exc).__name__, ref.where, str(ref.exc).splitlines()[0][:200]))]
        return []
    if got.exc is not None:
        return [("raise-" + got.where, "%s: %s" % (type(got.exc).__name__,
                                                   str(got.exc).splitlines()[0][:300]))]
    bad = []
    if ref.log != got.log:
        bad.append(("effect", "the call appended %s to LOG_, torch's %s" % (got.log, ref.log)))
    if ref.same != got.same:
        bad.append(("identity", "returned a %s, torch a %s" % (got.same, ref.same)))
    if len(ref.outs) != len(got.outs):
        return [("count", "%d outputs != %d" % (len(got.outs), len(ref.outs)))]
    for k, (r, g) in enumerate(zip(ref.outs, got.outs)):
        if r[2] != g[2]:
            bad.append(("shape", "output %d shape %s != torch %s" % (k, g[2], r[2])))
            continue
        if r[1] != g[1]:
            bad.append(("dtype", "output %d dtype %s != torch %s" % (k, g[1], r[1])))
        if r[3] != g[3] and ref.grads is not None:
            bad.append(("requires_grad", "output %d requires_grad %s != torch %s" % (k, g[3], r[3])))
        m = _close(g[0], r[0], r[1], {r[1]: max(TOL.get(r[1], 0), TOL[low])})
        if m:
            bad.append(("value", "output %d (%s): %s" % (k, r[1], m)))
    if ref.inputs is not None and got.inputs is not None:
        for k, ((r, dt), (g, _)) in enumerate(zip(ref.inputs, got.inputs)):
            m = _close(g, r, dt, TOL)
            if m:
                bad.append(("side-effect", "input x%d afterwards: %s" % (k, m)))
    if ref.grads is not None and got.grads is not None:
        if len(ref.grads) != len(got.grads):
            bad.append(("grad", "gradient count %d != %d" % (len(got.grads), len(ref.grads))))
        for k, (r, g) in enumerate(zip(ref.grads, got.grads)):
            if (r is None) != (g is None):
                bad.append(("grad", "x%d.grad is %s, torch's is %s" % (
                    k, "None" if g is None else "set", "None" if r is None else "set")))
            elif r is not None:
                m = _close(g, r, "float32", {"float32": gtol}, nonfinite_alike=True)
                if m:
                    bad.append(("grad", "x%d.grad: %s" % (k, m)))
    return bad


def _grad_tol_dtype(prog):
    """The least precise float dtype of the inputs and of the casts in the program."""
    dts = {i.dtype for i in prog.inputs}
    text = " ".join(prog.stmts)
    if "bfloat16" in dts or "bfloat16" in text:
        return "bfloat16"
    if "float16" in dts or re.search(r"float16|\.half\(", text):
        return "float16"
    return "float32"


STATS = {"known": 0, "saved-differs": 0}


def _saved_differs(o):
    """torch's backward refused a saved tensor that was written in place: symtrace saves
    other values (or copies), so it may well run; its compiled runs are then compared
    with its own eager gradients."""
    return o.exc is not None and o.where == "backward" and "modified by an inplace" in str(o.exc)


def check(prog, backends=BACKENDS, grad=True, only=None):
    """Every run of the program against torch: a list of (label, kind, message).
    only: a single label to run ('eager', 'llvm', 'llvm#2', 'llvm-grad', ...)."""
    st.reset()
    found = []
    dyn = _has_alt(prog)
    ref = run(prog, torch)[0]
    ref_alt = run(prog, torch, alts=[True])[0] if dyn else None
    labels = [("eager", "eager", False)] + [(b, b, False) for b in backends]
    gref = gref_alt = None
    if grad and prog.is_float():
        labels += [("eager-grad", "eager", True)] + [(b + "-grad", b, True) for b in backends]
        gref = run(prog, torch, grad=True)[0]
        gref_alt = run(prog, torch, grad=True, alts=[True])[0] if dyn else None
        if _saved_differs(gref) or (dyn and _saved_differs(gref_alt)):
            STATS["saved-differs"] += 1
            gref = run(prog, st, grad=True)[0]
            gref_alt = run(prog, st, grad=True, alts=[True])[0] if dyn else None
            if gref.exc is not None or (dyn and gref_alt.exc is not None):
                gref = gref_alt = None
            labels = [lab for lab in labels if lab[0] != "eager-grad"]
            labels = [lab for lab in labels if gref is not None or not lab[2]]
    for label, mode, g in labels:
        if only is not None and only.split("#")[0] != label:
            continue
        # the calls: compiled ones twice (the capture, the cached entry); with other sizes
        # (--dynamic): first sizes, other sizes, first sizes again
        if mode == "eager":
            alts = [False]
        elif dyn:
            alts = [False, True] if g else [False, True, False]
        else:
            alts = [False] if g else [False, False]
        try:
            outs = run(prog, st, mode, grad=g, calls=len(alts), alts=alts)
        except Exception as e:  # noqa: BLE001  (st.compile itself failing)
            outs = [Outcome(exc=e, where="compile")]
        for n, o in enumerate(outs):
            lab = label + ("#%d" % (n + 1) if n else "")
            if only is not None and only != lab and "#" in only:
                continue
            r = (gref_alt if alts[n] else gref) if g else (ref_alt if alts[n] else ref)
            low = _grad_tol_dtype(prog)
            for kind, msg in compare(r, o, GTOL[low], low):
                if known(kind, msg):
                    STATS["known"] += 1
                else:
                    found.append((lab, kind, msg))
    return found


# --------------------------------------------------------------- minimizing

def minimize(prog, label, kind):
    """Drops statements, outputs and inputs while check(only=label) still reports `kind`."""
    def still(p):
        try:
            ref = run(p, torch)[0]
        except Exception:  # noqa: BLE001
            return False
        if ref.exc is not None and isinstance(ref.exc, (NameError, UnboundLocalError, AttributeError)):
            return False
        try:
            return any(k == kind for _, k, _ in check(p, only=label))
        except Exception:  # noqa: BLE001
            return False

    return shrink(prog, still)


def shrink(prog, still):
    """Drops statements, outputs, inputs and input views of prog while still(program)
    holds (the minimizer of this fuzzer and of scripts/fuzz_memplan.py)."""
    def defined(stmts, inputs):
        names = {i.name for i in inputs}
        for s in stmts:
            m = re.match(r"\s*(v\d+) = ", s)
            if m:
                names.add(m.group(1))
        return names

    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(prog.stmts))):
            stmts = prog.stmts[:i] + prog.stmts[i + 1:]
            have = defined(stmts, prog.inputs)
            outs = [o for o in prog.outputs if o in have]
            if not outs:
                cand = [n for n in re.findall(r"\b(v\d+|x\d+)\b", " ".join(stmts)) if n in have]
                outs = [cand[-1]] if cand else [prog.inputs[0].name]
            p = prog.copy(stmts=stmts, outputs=outs)
            if still(p):
                prog, changed = p, True
        if len(prog.outputs) > 1:
            for o in list(prog.outputs):
                p = prog.copy(outputs=[x for x in prog.outputs if x != o])
                if still(p):
                    prog, changed = p, True
                    break
        text = " ".join(prog.stmts + prog.outputs)
        for inp in list(prog.inputs):
            if not re.search(r"\b%s\b" % inp.name, text) and len(prog.inputs) > 1:
                p = prog.copy(inputs=[i for i in prog.inputs if i is not inp])
                if still(p):
                    prog, changed = p, True
        for k, inp in enumerate(prog.inputs):
            if inp.view != "b":
                ins = list(prog.inputs)
                ins[k] = Input(inp.name, inp.dtype, _view_values(inp), "b",
                               None if inp.alt is None else (_view_values(inp, True), "b"))
                p = prog.copy(inputs=ins)
                if still(p):
                    prog, changed = p, True
    return prog


def _view_values(inp, alt=False):
    """The values of an input's view (its other sizes' with alt), as a contiguous base."""
    base, x = make_tensor(torch, inp, alt=alt)
    return to_np(x).copy()


def reproducer(prog, label):
    """A standalone script: the inputs, the torch function, the symtrace one, both run."""
    mode = label.split("#")[0].replace("-grad", "")
    lines = ["import numpy as np, torch, symtrace as st", ""]
    if any("FX_" in s for s in prog.stmts):
        lines += ["LOG_ = []", "L = torch"] + FX_SRC.replace("FX_", "FX_torch").splitlines()
        lines += ["L = st"] + FX_SRC.replace("FX_", "FX_st").splitlines()
        prog = prog.copy(stmts=[s.replace("FX_", "FX_torch") for s in prog.stmts])
        lines += prog.source("torch", "f_torch").splitlines()
        prog = prog.copy(stmts=[s.replace("FX_torch", "FX_st") for s in prog.stmts])
        lines += prog.source("st", "f_st").splitlines()
        lines.append("# LOG_: what each call appended (eager torch's, then symtrace's)")
    else:
        lines += prog.source("torch", "f_torch").splitlines()
        lines += prog.source("st", "f_st").splitlines()
    dyn = _has_alt(prog) and "#" in label

    def arg_lines(alt):
        args_t, args_s = [], []
        for i in prog.inputs:
            values, view = i.alt if alt else (i.values, i.view)
            name = i.name + ("_alt" if alt else "")
            arr = np.asarray(values)
            npdt = "float32" if i.dtype == "bfloat16" else i.dtype
            lines.append("%s = np.array(%r, dtype=np.%s).reshape(%r)" % (
                name, arr.astype(NP[npdt] if npdt != "bool" else np.bool_).tolist(),
                "bool_" if npdt == "bool" else npdt, tuple(arr.shape)))
            dt = ", dtype=%s.%s" % ("%s", i.dtype) if i.dtype == "bfloat16" else ""
            tv = "torch.tensor(%s%s)" % (name, dt % "torch" if dt else "")
            sv = "st.tensor(%s%s)" % (name, dt % "st" if dt else "")
            args_t.append(view.replace("b", tv, 1) if view.startswith("b") else tv)
            args_s.append(view.replace("b", sv, 1) if view.startswith("b") else sv)
        return args_t, args_s

    args_t, args_s = arg_lines(False)
    kw = ", dynamic=True" if COMPILE_KW.get("dynamic") else ""
    fn = "f_st" if mode == "eager" else 'st.compile(f_st, backend="%s"%s)' % (mode, kw)
    if dyn and label.split("#")[1] in ("2", "3"):
        # the call with the other sizes (#2), or the first sizes after it (#3)
        alt_t, alt_s = arg_lines(True)
        lines.append("g = %s" % fn)
        lines.append("g(%s)" % prog.call_args(args_s))
        fn = "g"
        if label.endswith("#3"):
            lines.append("g(%s)" % prog.call_args(alt_s))
        else:
            args_t, args_s = alt_t, alt_s
    if "-grad" not in label:
        lines.append("print(f_torch(%s))" % prog.call_args(args_t))
        if label.endswith("#2") and not dyn:  # the second call: the cached entry
            lines.append("g = %s" % fn)
            lines.append("g(%s)" % prog.call_args(args_s))
            fn = "g"
        lines.append("print(%s(%s))" % (fn, prog.call_args(args_s)))
        return "\n".join(lines)
    # gradients: float bases require grad, the arguments are views of their clones
    for lib, f, args in (("torch", "f_torch", args_t), ("st", fn, args_s)):
        bases = []
        for i, a in zip(prog.inputs, args):
            cut = a.index(")") + 1 if a.startswith(lib + ".tensor(") else len(a)
            base = a[:cut]
            if i.dtype in FLOATS:
                base += ".requires_grad_()"
            bases.append(base)
            lines.append("b_%s = %s" % (i.name, base))
        call = ["b_%s%s%s" % (i.name, ".clone()" if i.dtype in FLOATS else "",
                              a[a.index(")") + 1:] if a.startswith(lib + ".tensor(") else "")
                for i, a in zip(prog.inputs, args)]
        lines.append("outs = %s(%s)%s" % (f, prog.call_args(call),
                                          "[0]" if "twice" in prog.wrap else ""))
        lines.append("wr = np.random.default_rng(0)")
        lines.append("loss = sum(((o.float() * %s.tensor(wr.standard_normal(tuple(o.shape)).astype(np.float32)))"
                     ".sum() for o in outs if o.requires_grad and o.is_floating_point()))" % lib)
        if prog.twice:
            lines.append("loss.backward(retain_graph=True)")
        lines.append("loss.backward()")
        lines.append("print(%r, [b.grad for b in (%s,)])" % (lib, ", ".join("b_" + i.name for i in prog.inputs)))
    return "\n".join(lines)


# --------------------------------------------------------------------- main

def seed_args(doc, grad_help, backends=BACKENDS):
    """The command line both fuzzers share (this one and scripts/fuzz_memplan.py)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=50, help="how many seeds to run")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--seed", type=int, default=None, help="run just this seed")
    ap.add_argument("--minimize", action="store_true", help="shrink each mismatching program")
    ap.add_argument("--backends", default=",".join(backends))
    ap.add_argument("--no-grad", action="store_true", help=grad_help)
    ap.add_argument("--show", action="store_true", help="print every program")
    ap.add_argument("-q", "--quiet", action="store_true", help="one line per mismatching seed")
    return ap


def main(argv=None):
    ap = seed_args(__doc__, "skip the gradient runs")
    ap.add_argument("--dynamic", action="store_true",
                    help="compile with dynamic=True and call with other sizes between calls")
    ap.add_argument("--progress", type=int, default=0, metavar="N",
                    help="a line every N seeds (long runs)")
    ap.add_argument("--extra", action="store_true",
                    help="also draw fuzz_extra_ops.py's templates (scans, more pointwise ops and "
                         "reductions, index_reduce, bincount, searchsorted, addmm-likes, ...)")
    a = ap.parse_args(argv)
    EXTRA["on"] = a.extra
    if a.dynamic:
        COMPILE_KW["dynamic"] = True
        DYNAMIC["on"] = True
    backends = [b for b in a.backends.split(",") if b]
    for b in backends:
        if not st._C._fe_backend_available(b):
            print("backend %s unavailable: skipped" % b)
    backends = [b for b in backends if st._C._fe_backend_available(b)]
    seeds = [a.seed] if a.seed is not None else range(a.start, a.start + a.seeds)
    nbad = 0
    for seed in seeds:
        try:
            prog = generate(seed)
        except Exception as e:  # noqa: BLE001  (a generator bug: said, and the run goes on)
            nbad += 1
            print("=== seed %d: the generator failed: %s: %s" % (seed, type(e).__name__, e))
            continue
        if a.show:
            print("# seed %d\n%s" % (seed, prog.source()))
        sys.stdout.flush()
        if a.progress and seed % a.progress == 0:
            print("-- seed %d (%d mismatched so far)" % (seed, nbad), flush=True)
        found = check(prog, backends, grad=not a.no_grad)
        if not found:
            continue
        nbad += 1
        kinds = sorted({(lab, kind) for lab, kind, _ in found})
        print("=== seed %d: %d mismatches: %s" % (seed, len(found), ", ".join(
            "%s:%s" % k for k in kinds)))
        if a.quiet:
            continue
        for lab, kind, msg in found[:6]:
            print("  [%s] %s: %s" % (lab, kind, msg))
        lab, kind, _ = found[0]
        p = minimize(prog, lab, kind) if a.minimize else prog
        print("--- reproducer (%s, %s)%s:" % (lab, kind, " minimized" if a.minimize else ""))
        print(reproducer(p, lab))
        print()
        sys.stdout.flush()
    print("%d of %d seeds mismatched (%d known differences left out; %d programs whose torch "
          "backward refused an overwritten saved tensor: compiled gradients checked against "
          "symtrace eager)" % (nbad, len(seeds), STATS["known"], STATS["saved-differs"]))
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
