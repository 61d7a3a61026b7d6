#!/usr/bin/env python
"""scripts/fuzz_views.py - a differential fuzzer for aliasing: chains of views (view,
reshape, t, transpose, permute, narrow, select, stepped slices, unsqueeze, expand,
diagonal, unfold, as_strided, split / chunk / unbind) mixed with in-place writes (add_,
mul_, copy_, zero_, fill_, clamp_, index_put_ with accumulate, masked_fill_, scatter_,
setitem) on the base or on a view, then reads of the base and of the other views;
.detach() / .data / detach_() inside those chains; advanced indexing (bool masks, int
tensors, mixed with slices and None) on reads and writes; and programs torch rejects
(symtrace must raise the same exception type, eager and compiled).

The inputs are views of bigger tensors (transposed, stepped, with a storage offset); the
compiled function is called 3 times: the first values, other values of the same layout
(the cached graph with fresh data), the first values again. Programs, running and
comparing are scripts/fuzz_compile.py's (torch eager is the oracle): this file only
draws the programs and adds the exception-type comparison.

  scripts/fuzz_views.py --seeds 300 [--start 0] [--minimize] [--backends llvm,interp] [-q]
"""
import contextlib
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_compile as fc  # noqa: E402
from fuzz_compile import Input, Program  # noqa: E402
sys.path.pop(0)

st = fc.st

# Known differences, on top of fuzz_compile.KNOWN (not reported, counted; only while this
# fuzzer runs: see _patched)
VIEW_KNOWN = [
    # compiled gather / scatter out of range: IndexError where torch gives RuntimeError
    ("exc-type", r"torch RuntimeError.*(gather|scatter).*symtrace IndexError"),
    # the use of a split / chunk / unbind output after a write into its storage that made
    # no history (through .detach(), or under no_grad): torch refuses it (the version
    # moved on); symtrace refuses only after its base's history changed
    ("no-raise", r"is a view and its base or another view of its base has been modified "
                 r"inplace\. This view is the output of a function that returns multiple views"),
]


def _overlaps(t):
    """Whether two of t's elements share memory (an expand, an unfold with step < size,
    an as_strided): torch writes into those in an unspecified order, or only warns."""
    if t.numel() < 2:
        return False
    span = t.storage_offset() + 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()))
    offs = torch.arange(span).as_strided(t.shape, t.stride(), t.storage_offset())
    return int(offs.unique().numel()) < t.numel()


# input layouts: (base shape from the argument's shape s, view source)
def _layout(r, s):
    k = int(r.integers(6))
    if k == 0 or not s:
        return list(s), "b"
    if k == 1 and len(s) >= 2:  # transposed
        return s[::-1], "b.permute(%s)" % ", ".join(str(i) for i in range(len(s) - 1, -1, -1))
    if k == 2:  # stepped last dim with an offset
        return s[:-1] + [2 * s[-1] + 1], "b[..., 1::2]"
    if k == 3:  # storage offset along dim 0
        return [s[0] + 2] + s[1:], "b[2:]"
    if k == 4 and len(s) >= 2:  # a column block: offset and a row stride
        return [s[0], s[1] + 3] + s[2:], "b[:, 1:%d]" % (s[1] + 1)
    return [s[0] * 2] + s[1:], "b[::2]"  # every other row


class ViewGen(fc.Gen):
    """Draws one aliasing program (the torch values of every name are the oracle)."""

    def _inputs(self):
        r = self.r
        n = int(self.ch([1, 1, 2, 2]))
        dt = self.ch(["float32"] * 6 + ["float64", "int64"])
        rank = int(self.ch([1, 2, 2, 2, 3, 3]))
        shape = [int(self.ch([2, 3, 4, 4, 5, 6])) for _ in range(rank)]
        out = []
        for k in range(n):
            s = list(shape) if k == 0 or self.p(0.6) else list(shape[1:]) or [shape[0]]
            base, view = _layout(r, s)
            vals = fc._rand_values(r, tuple(base), dt if k == 0 else self.ch([dt, dt, "float32"]))
            inp = Input("x%d" % k, dt, vals, view)
            # fresh values of the same layout for the cached call (#2)
            inp.alt = (fc._rand_values(r, tuple(base), dt), view)
            out.append(inp)
        return out

    # -- helpers
    def _view_of(self, x):
        """Source of one view op of x (or None)."""
        t = self.env[x]
        nd, s = t.dim(), list(t.shape)
        k = self.ch(["view", "reshape", "t", "transpose", "permute", "narrow", "select", "slice",
                     "unsqueeze", "expand", "diagonal", "unfold", "as_strided", "split", "chunk",
                     "unbind", "flatten", "squeeze", "movedim", "T"])
        if k in ("view", "reshape"):
            n = t.numel()
            shp = self.ch([[-1], [n], [1, -1], [-1, 1]])
            if nd >= 2 and self.p(0.5):
                shp = [s[0], -1] if self.p(0.5) else [-1] + s[2:] if nd > 2 else [s[0] * s[1]]
            if n and n % 2 == 0 and self.p(0.3):
                shp = [2, -1]
            return "%s.%s(%s)" % (x, k, ", ".join(map(str, shp)))
        if k in ("t", "T"):
            return "%s.%s%s" % (x, k, "()" if k == "t" else "") if nd <= 2 else None
        if k == "transpose" and nd >= 2:
            return "%s.transpose(%d, %d)" % (x, self.dim(t), self.dim(t))
        if k == "movedim" and nd >= 2:
            return "%s.movedim(%d, %d)" % (x, self.dim(t), self.dim(t))
        if k == "permute" and nd >= 2:
            return "%s.permute(%s)" % (x, ", ".join(map(str, self.r.permutation(nd))))
        if not nd:
            return "%s.unsqueeze(0)" % x
        d = self.dim(t)
        n = s[d]
        if k == "narrow" and n:
            a = int(self.r.integers(n))
            return "%s.narrow(%d, %d, %d)" % (x, d, a, int(self.r.integers(0, n - a + 1)))
        if k == "select" and n:
            return "%s.select(%d, %d)" % (x, d, int(self.r.integers(-n, n)))
        if k == "slice":
            parts = []
            for i in range(nd):
                st_, stop, step = self.ch(["", "1", "-2"]), self.ch(["", "-1", "3"]), self.ch(["", "2", "3"])
                parts.append("%s:%s%s" % (st_, stop, ":" + step if step else ""))
            if self.p(0.3):
                parts.insert(int(self.r.integers(nd + 1)), "None")
            if self.p(0.2):
                parts = ["..."] + parts[-1:]
            return "%s[%s]" % (x, ", ".join(parts))
        if k == "unsqueeze":
            return "%s.unsqueeze(%d)" % (x, self.dim(t, extra=1))
        if k == "squeeze":
            return "%s.squeeze(%s)" % (x, "" if self.p(0.4) else d)
        if k == "flatten":
            return "%s.flatten(%s)" % (x, "" if self.p(0.5) else "%d" % d)
        if k == "expand":
            if 1 in s and self.p(0.7):
                return "%s.expand(%s)" % (x, ", ".join(str(3) if v == 1 else "-1" for v in s))
            return "%s.expand(2, %s)" % (x, ", ".join(["-1"] * nd))
        if k == "diagonal" and nd >= 2:
            d1, d2 = self.r.permutation(nd)[:2]
            return "%s.diagonal(%d, %d, %d)" % (x, self.ch([0, 0, 1, -1]), d1, d2)
        if k == "unfold" and n:
            return "%s.unfold(%d, %d, %d)" % (x, d, int(self.r.integers(1, n + 1)), self.ch([1, 2]))
        if k == "as_strided":
            # reads the memory as laid out: only where the layout is symtrace's too (torch
            # gives an elementwise result its operand's strides, symtrace a contiguous one)
            root = t._base if t._base is not None else t
            if not root.is_contiguous():
                return None
            st_ = list(t.stride())
            m = max(1, s[-1] // 2)
            off = "" if self.p(0.5) else ", %d" % (t.storage_offset() + self.ch([0, 1]))
            return "%s.as_strided((%s), (%s)%s)" % (
                x, ", ".join(map(str, s[:-1] + [m])) + ("," if nd == 1 else ""),
                ", ".join(map(str, st_[:-1] + [st_[-1] * self.ch([1, 2])])) + ("," if nd == 1 else ""), off)
        if k in ("split", "chunk", "unbind") and n:
            if k == "unbind":
                return "%s.unbind(%d)[%d]" % (x, d, int(self.r.integers(n)))
            c = self.ch([1, 2, 3])
            return "%s.%s(%d, %d)[%d]" % (x, k, c, d, self.ch([0, -1]))
        return None

    def _root(self):
        """Most often an input or a view of one (aliasing is the point)."""
        if self.p(0.5):
            return self.ch([i.name for i in self.inputs])
        return self.var()

    def _uidx(self, n, m):
        """A unique int64 index of m values in [-n, n)."""
        perm = self.r.permutation(n)[:m]
        if self.p(0.4):
            perm = [int(v) - n if self.p(0.5) else int(v) for v in perm]
        return "L.tensor([%s])" % ", ".join(str(int(v)) for v in perm)

    def _didx(self, n, m):
        """An int64 index of m values in [0, n), duplicates allowed."""
        return "L.tensor([%s])" % ", ".join(str(int(v)) for v in self.r.integers(0, n, size=m))

    # -- templates
    def t_vchain(self):
        x = self._root()
        lines = []
        for _ in range(int(self.ch([1, 1, 2, 3]))):
            src = self._view_of(x)
            if src is None:
                continue
            z = self.new()
            lines.append(("%s = %s" % (z, src), z))
            # (a try here keeps the chain: later views build on the torch value)
            if self.try_stmt(*lines[-1]) is not True:
                lines.pop()
                break
            x = z
        return [("pass", None)] if lines else None

    def t_write(self):
        x = self.var() if self.p(0.6) else self._root()
        t = self.env[x]
        s = list(t.shape)
        nd = t.dim()
        fl = t.is_floating_point()
        if _overlaps(t) and 0 not in t.stride():
            return None  # (torch writes overlapping unfold / as_strided views in any order)
        y = self.partner(t) if self.p(0.5) else None
        k = self.ch(["add_", "mul_", "copy_", "zero_", "fill_", "clamp_", "index_put_", "masked_fill_",
                     "scatter_", "setitem", "iadd", "sub_"])
        sc = self.scalar(t) if fl else self.ch(["1", "2", "-1"])
        if k in ("add_", "mul_", "sub_"):
            return "%s.%s(%s)" % (x, k, y or sc), None
        if k == "iadd":
            return "%s += %s" % (x, y or sc), None
        if k == "copy_":
            return "%s.copy_(%s)" % (x, y or self.var()), None
        if k == "zero_":
            return "%s.zero_()" % x, None
        if k == "fill_":
            return "%s.fill_(%s)" % (x, sc), None
        if k == "clamp_":
            return "%s.clamp_(%s, %s)" % (x, self.ch(["-1", "0", "None"]), self.ch(["1", "0.5"])), None
        if k == "masked_fill_":
            if _overlaps(t):
                return None  # torch only warns (a write into an expanded tensor)
            m = self.ch(["%s > 0" % x, "%s < %s" % (x, y) if y else "%s != 0" % x])
            return "%s.masked_fill_(%s, %s)" % (x, m, sc), None
        if not nd or not s[0] or _overlaps(t):
            return None  # (into an expanded tensor torch's indexed writes only warn)
        if k == "index_put_":
            acc = self.p(0.6)
            m = int(self.ch([1, 2, 3]))
            idx = self._didx(s[0], m) if acc else self._uidx(s[0], min(m, s[0]))
            val = self.ch(["L.tensor(%s)" % sc, "%s[0].clone()" % x])
            return "%s.index_put_((%s,), %s, accumulate=%s)" % (x, idx, val, acc), None
        if k == "scatter_":
            d = self.dim(t)
            shp = list(s)
            shp[d] = min(shp[d], self.ch([1, 2]))
            if not all(shp):
                return None
            perm = self.r.permutation(s[d])[:shp[d]].tolist()
            idx = "L.tensor(%s).reshape(%s).expand(%s)" % (
                perm, ", ".join(str(shp[d]) if i == d % nd else "1" for i in range(nd)),
                ", ".join(map(str, shp)))
            if self.p(0.5):
                return "%s.scatter_(%d, %s, %s)" % (x, d, idx, sc), None
            return "%s.scatter_(%d, %s, L.ones(%s, dtype=%s.dtype).mul(%s))" % (
                x, d, idx, ", ".join(map(str, shp)), x, sc), None
        # setitem: slices, masks, unique int tensors, None
        key = self.ch(["%s > 0" % x, self._uidx(s[0], min(s[0], 2)), ":, %s" % self._uidx(s[1], min(s[1], 2))
                       if nd >= 2 and s[1] else "0", "1::2", "..., 0", "None, 0"])
        return "%s[%s] = %s" % (x, key, y if y and self.p(0.3) else sc), None

    def t_detach(self):
        x = self.var() if self.p(0.5) else self._root()
        z = self.new()
        k = self.ch(["detach", "data", "detach_view", "detach_", "write", "write"])
        if k == "detach":
            return "%s = %s.detach()" % (z, x), z
        if k == "data":
            return "%s = %s.data" % (z, x), z
        if k == "detach_view":
            src = self._view_of(x)
            return ("%s = %s.detach()" % (z, src), z) if src else None
        if k == "detach_":
            src = self._view_of(x) if self.p(0.5) else "%s * 1" % x
            if src is None:
                return None
            return [("%s = %s" % (z, src), z), ("%s.detach_()" % z, None)]
        # a write through a detached alias, then a read of the original
        if _overlaps(self.env[x]) and 0 not in self.env[x].stride():
            return None
        w = self.new()
        op = self.ch(["add_(1)", "mul_(2)", "zero_()", "fill_(3)", "clamp_(max=0.5)"])
        return [("%s = %s.detach()" % (z, x), z), ("%s.%s" % (z, op), None),
                ("%s = %s * 1" % (w, x), w)]

    def t_dwrite(self):
        """A write through .detach() / .data of a base or of a view of it (with a plain
        value, or with one that requires grad: the alias takes a history of its own),
        then reads of the alias, of what it aliases and of that one's root."""
        x = self._root() if self.p(0.5) else self.var()
        src = x
        if self.p(0.5):
            vs = self._view_of(x)
            y = self.new()
            if vs is None or self.try_stmt("%s = %s" % (y, vs), y) is not True:
                return None
            src = y
        t = self.env[src]
        if _overlaps(t):
            return None
        a = self.new()
        if self.try_stmt("%s = %s.%s" % (a, src, self.ch(["detach()", "data"])), a) is not True:
            return None
        fl = t.is_floating_point()
        op = self.ch(["add_(1)", "mul_(2)", "zero_()", "fill_(3)", "copy_(%s * 2)" % src]
                     + (["clamp_(max=0.5)", "sub_(%s * 1)" % x, "add_(%s.sum() * 0.5)" % src,
                        "mul_(%s.exp().clamp(max=2.0))" % src] if fl else []))
        if self.try_stmt("%s.%s" % (a, op)) is not True:
            return None
        out = []
        for n in dict.fromkeys([a, src, x] + [i.name for i in self.inputs if self.p(0.3)]):
            r = self.new()
            if self.try_stmt("%s = %s * 1" % (r, n), r) is True:
                out.append(r)
        return out

    def t_advidx(self):
        x = self.var() if self.p(0.6) else self._root()
        t = self.env[x]
        s = list(t.shape)
        nd = t.dim()
        if not nd or not s[0]:
            return None
        z = self.new()
        n0 = s[0]
        keys = ["%s > 0" % x, "%s[..., 0] > 0" % x if nd >= 2 else "%s != 0" % x,
                self._didx(n0, 3), "%s, None" % self._didx(n0, 2), "None, %s" % self._didx(n0, 2),
                "L.tensor([[%d, 0], [%d, %d]])" % (n0 - 1, -n0, n0 // 2),
                "L.tensor([True] + [False] * %d)" % (n0 - 1)]
        if nd >= 2 and s[1]:
            keys += [":, %s" % self._didx(s[1], 2), "%s, %s" % (self._didx(n0, 2), self._didx(s[1], 2)),
                     "1:, %s" % self._didx(s[1], 3), "%s, 1:" % self._didx(n0, 2),
                     "%s, ::2" % self._didx(n0, 3), "None, :, %s" % self._didx(s[1], 1)]
        if nd >= 3 and s[2]:
            keys += ["%s, :, %s" % (self._didx(n0, 2), self._didx(s[2], 2)),
                     ":, 0, %s" % self._didx(s[2], 2)]
        key = self.ch(keys)
        k = self.ch(["read", "read", "read", "write", "iadd", "index_put"])
        if k == "read":
            return "%s = %s[%s]" % (z, x, key), z
        sc = self.scalar(t) if t.is_floating_point() else "2"
        if _overlaps(t):
            return None  # torch only warns (index_put_ on an expanded tensor is deprecated)
        if k == "write":
            return "%s[%s] = %s" % (x, key, sc), None
        if k == "iadd":  # (duplicates: torch's x[i] += v adds once)
            return "%s[%s] += %s" % (x, key, sc), None
        return "%s.index_put_((%s,), L.tensor(%s), accumulate=True)" % (x, self._didx(n0, 4), sc), None

    def t_error(self):
        """A line torch rejects: symtrace must raise the same exception type."""
        x = self.var() if self.p(0.5) else self._root()
        t = self.env[x]
        s = list(t.shape)
        nd = t.dim()
        n0 = s[0] if nd else 0
        k = self.ch(["view_nc", "select_oob", "narrow_oob", "idx_oob", "mask_shape", "copy_shape",
                     "expand_write", "gather_oob", "scatter_oob", "split_write", "unbind_write",
                     "index_fill_oob", "as_strided_oob", "view_bad", "setitem_shape", "diag_dims"])
        z = self.new()
        if k == "view_nc":
            return "%s = %s.t().view(-1)" % (z, x) if nd == 2 else "%s = %s.transpose(0, -1).view(-1)" % (z, x), z
        if k == "select_oob":
            return "%s = %s.select(0, %d)" % (z, x, n0 + self.ch([0, 2])), z
        if k == "narrow_oob":
            return "%s = %s.narrow(0, %d, 2)" % (z, x, n0), z
        if k == "idx_oob":
            return "%s = %s[L.tensor([0, %d])]" % (z, x, self.ch([n0, -n0 - 1])), z
        if k == "mask_shape":
            return "%s = %s[L.ones(%d, dtype=L.bool)]" % (z, x, n0 + 1), z
        if k == "copy_shape":
            return "%s.copy_(L.ones(%d, 7))" % (x, n0 + 1), None
        if k == "expand_write":
            return [("%s = %s.unsqueeze(0).expand(2, %s)" % (z, x, ", ".join(["-1"] * nd)), z),
                    ("%s.%s" % (z, self.ch(["add_(1)", "mul_(2)", "copy_(%s * 2)" % z])), None)]
        if k in ("gather_oob", "scatter_oob") and nd:
            idx = "L.full(%s, %d)" % (tuple([1] * nd), n0 + 1)
            if k == "gather_oob":
                return "%s = %s.gather(0, %s)" % (z, x, idx), z
            return "%s.scatter_(0, %s, 1)" % (x, idx), None
        if k in ("split_write", "unbind_write") and nd and n0:
            src = "%s.split(1)" % x if k == "split_write" else "%s.unbind(0)" % x
            return [("%s = %s[0]" % (z, src), z), ("%s.mul_(2)" % z, None)]
        if k == "index_fill_oob" and nd:
            return "%s = %s.index_fill(0, L.tensor([%d]), 1)" % (z, x, self.ch([n0, -n0 - 1])), z
        if k == "as_strided_oob":
            return "%s = %s.as_strided((%d, 100), (1, 1))" % (z, x, max(n0, 1)), z
        if k == "view_bad":
            return "%s = %s.view(%d, -1)" % (z, x, t.numel() + 1), z
        if k == "setitem_shape" and nd:
            return "%s[0] = L.ones(%d, 5)" % (x, 7), None
        if k == "diag_dims" and nd:
            return "%s = %s.diagonal(0, 0, 0)" % (z, x), z
        return None

    def t_read(self):
        """A read of an input (a base of the views) or of an earlier view."""
        x = self._root() if self.p(0.6) else self.var()
        z = self.new()
        f = self.ch(["%s * 1", "%s.clone()", "%s.sum(0)" if self.env[x].dim() else "%s + 0",
                     "%s.contiguous()", "%s.exp()" if self.env[x].is_floating_point() else "%s * 2"])
        return "%s = %s" % (z, f % x), z

    TEMPLATES = (("t_vchain", 20), ("t_write", 22), ("t_detach", 10), ("t_advidx", 12),
                 ("t_read", 6), ("t_error", 3), ("t_unary", 2), ("t_binary", 3))

    def draw(self):
        names = [n for n, _ in self.TEMPLATES]
        w = np.array([w for _, w in self.TEMPLATES], dtype=np.float64)
        nops = int(self.r.integers(3, 11))
        done, tries = 0, 0
        while done < nops and tries < 200:
            tries += 1
            name = names[int(self.r.choice(len(names), p=w / w.sum()))]
            got = getattr(self, name)()
            if got is None:
                continue
            lines = got if isinstance(got, list) else [got]
            env, stmts = self.env, list(self.stmts)
            ok = True
            for line, target in lines:
                if line == "pass":
                    continue
                ok = self.try_stmt(line, target)
                if ok is not True:
                    break
            if ok is True:
                done += 1
            elif isinstance(ok, Exception) and not isinstance(ok, (NameError, AttributeError,
                                                                    SyntaxError, TypeError)):
                if name == "t_error" or (done >= 2 and self.p(0.05)):
                    self.stmts = stmts + [line for line, _ in lines]
                    break  # a program torch rejects: symtrace must reject it the same way
                self.env, self.stmts = env, stmts
            else:
                self.env, self.stmts = env, stmts
        # outputs: the inputs (their bases were written through views) and some views
        vs = [n for n in self.env if n.startswith("v")]
        outs = [i.name for i in self.inputs]
        for v in vs[-3:]:
            if self.p(0.6):
                outs.append(v)
        return Program(self.seed, self.inputs, self.stmts, outs, False)


def generate(seed, max_ops=None):
    """The program of a seed; half of them then get 1-2 writes through detached aliases
    (t_dwrite), drawn from a stream of their own (the statements before stay the seed's)."""
    g = ViewGen(seed, max_ops)
    prog = g.draw()
    r = np.random.default_rng(seed + 7951 * 10 ** 6)
    if r.random() < 0.5 and len(g.stmts) == len(prog.stmts):
        g.r = r
        reads = []
        for _ in range(int(r.integers(1, 3))):
            reads += g.t_dwrite() or []
        prog.stmts = list(g.stmts)
        prog.outputs += reads[-3:]
    return prog


_compare = fc.compare


def compare(ref, got, gtol=fc.GTOL["float32"], low="float32"):
    """fuzz_compile.compare, plus: where both raise, the exception types must agree."""
    bad = _compare(ref, got, gtol, low)
    if ref.exc is not None and got.exc is not None and ref.where == got.where \
            and type(ref.exc) is not type(got.exc) and not bad:
        bad.append(("exc-type", "torch %s (%s): %s | symtrace %s: %s" % (
            type(ref.exc).__name__, ref.where, str(ref.exc).splitlines()[0][:150],
            type(got.exc).__name__, str(got.exc).splitlines()[0][:150])))
    return bad


# torch's gradient of an as_strided view reaching storage elements outside its input (a
# view of a bigger base: x = b[..., 1::2]; x.as_strided(...) reading the even columns) is
# ill-defined: its AsStridedBackward treats those elements as constants (no gradient; its
# source has a TODO to raise there instead), but once the base is written in place
# (c.mul_(1)) the view's regenerated node takes the base's geometry and they get one.
# symtrace always gives them theirs (the gather out of the root base; the same as torch's
# after such a write). A program whose torch run makes such a view (with grad) has its
# compiled gradients compared with symtrace eager's (seeds 800032, 803163, 803496).
_OUTSIDE = [False]
_torch_as_strided = torch.Tensor.as_strided


def _as_strided_outside(self, size, stride, storage_offset=None):
    r = _torch_as_strided(self, size, stride, storage_offset) if storage_offset is not None \
        else _torch_as_strided(self, size, stride)
    if self.requires_grad and r.numel():
        def offs(t):
            span = t.storage_offset() + 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
            return set(torch.arange(span).as_strided(t.shape, t.stride(),
                                                     t.storage_offset()).flatten().tolist())
        if not offs(r) <= offs(self):
            _OUTSIDE[0] = True
    return r


def _check_fresh(orig):
    def check(*a, **k):
        _OUTSIDE[0] = False
        return orig(*a, **k)
    return check


def _saved_differs_views(orig):
    def differs(o):
        # (where torch's run raises, its exception stays the reference)
        outside = _OUTSIDE[0] and o.exc is None
        if outside:
            fc.STATS["as-strided-outside"] = fc.STATS.get("as-strided-outside", 0) + 1
        return orig(o) or outside
    return differs


@contextlib.contextmanager
def _patched(strict=False):
    """fuzz_compile's check / minimize with this fuzzer's comparison and known
    differences. strict: where torch's backward refuses a saved tensor written in place,
    symtrace must refuse too (fuzz_compile then compares the compiled gradients with
    symtrace eager's instead: symtrace saves copies of overwritten operands, x.mul_(x))."""
    saved = fc.compare, fc._saved_differs, list(fc.KNOWN), fc.check
    fc.compare = compare
    fc._saved_differs = _saved_differs_views((lambda o: False) if strict else saved[1])
    fc.check = _check_fresh(saved[3])
    torch.Tensor.as_strided = _as_strided_outside
    fc.KNOWN[:] = saved[2] + VIEW_KNOWN
    try:
        yield
    finally:
        fc.compare, fc._saved_differs, fc.check = saved[0], saved[1], saved[3]
        torch.Tensor.as_strided = _torch_as_strided
        fc.KNOWN[:] = saved[2]


def check(prog, backends=("llvm", "interp"), grad=True, strict=False):
    """Every run of the program against torch: a list of (label, kind, message)."""
    with _patched(strict):
        return fc.check(prog, backends, grad=grad)


def main(argv=None):
    with _patched(strict="--strict-saved" in (sys.argv[1:] if argv is None else argv)):
        return _main(argv)


def _main(argv):
    ap = fc.seed_args(__doc__, "skip the gradient runs", backends=("llvm", "interp"))
    ap.add_argument("--strict-saved", action="store_true",
                    help="where torch's backward refuses an overwritten saved tensor, symtrace "
                         "must refuse too (by default, as fuzz_compile: its compiled gradients "
                         "are compared with its eager ones; symtrace saves copies where it can)")
    a = ap.parse_args(argv)
    backends = [b for b in a.backends.split(",") if b and st._C._fe_backend_available(b)]
    seeds = [a.seed] if a.seed is not None else range(a.start, a.start + a.seeds)
    nbad, kinds_all = 0, {}
    for seed in seeds:
        try:
            prog = generate(seed)
        except Exception as e:  # noqa: BLE001
            nbad += 1
            print("=== seed %d: the generator failed: %s: %s" % (seed, type(e).__name__, e))
            continue
        if a.show:
            print("# seed %d\n%s" % (seed, prog.source()))
        sys.stdout.flush()
        try:
            found = fc.check(prog, backends, grad=not a.no_grad)  # (patched: see main)
        except Exception as e:  # noqa: BLE001  (a crash of the harness itself)
            found = [("harness", "crash", "%s: %s" % (type(e).__name__, e))]
        if not found:
            continue
        nbad += 1
        kinds = sorted({(lab, kind) for lab, kind, _ in found})
        for _, kind in kinds:
            kinds_all[kind] = kinds_all.get(kind, 0) + 1
        print("=== seed %d: %d mismatches: %s" % (seed, len(found), ", ".join("%s:%s" % k for k in kinds)))
        if a.quiet:
            continue
        for lab, kind, msg in found[:6]:
            print("  [%s] %s: %s" % (lab, kind, msg))
        lab, kind, _ = found[0]
        p = fc.minimize(prog, lab, kind) if a.minimize else prog
        print("--- reproducer (%s, %s)%s:" % (lab, kind, " minimized" if a.minimize else ""))
        print(fc.reproducer(p, lab))
        print()
        sys.stdout.flush()
    print("%d of %d seeds mismatched (%s; %d known differences left out; %d gradient runs "
          "against symtrace eager's: as_strided outside its input)" % (
              nbad, len(seeds), ", ".join("%s %d" % kv for kv in sorted(kinds_all.items())) or "-",
              fc.STATS["known"], fc.STATS.get("as-strided-outside", 0)))
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
