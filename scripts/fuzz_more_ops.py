"""scripts/fuzz_more_ops.py - the wider op templates of the differential fuzzer
(scripts/fuzz_compile.py): indexing (integer and boolean masks, index_select, gather,
scatter / scatter_add / scatter_reduce, index_add_ / index_put_ with accumulate,
masked_fill, take_along_dim), sorting (sort, argsort, topk, cummax / cummin, kthvalue),
clamp / where with tensor bounds, dtype promotion of small ints and bools with scalars,
movement ops (repeat, tile, roll, flip, tril / triu, diagonal, pad, chunk), einsum and
batched / broadcast matmul, normalizations (layer_norm, group_norm, rms_norm, normalize,
softmax over a dim, dropout with p 0 or 1), cat / stack of views, view chains that end in
an in-place write (then read through the base), and detach / clone mixes.

MoreOps is a mixin of fuzz_compile.Gen: it uses its draws (ch, p, var, new, dim,
partner, scalar) and the torch values in self.env. A template returns None, one
(line, target) or a list of them (run in order; the whole list is dropped when one
line fails in torch). Index tensors are written as arithmetic on arange, so that the
programs stay short and their values are valid by construction."""
import numpy as np
import torch


def _overlaps(t):
    """Whether t's elements share memory (a stride 0 over a dim of size > 1)."""
    return any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape))


def _numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


class MoreOps:
    # -- helpers
    def _idx(self, shape, n, neg=False):
        """Source of an int64 tensor of `shape` with values in [0, n) (or [-n, n) when neg),
        arithmetic on arange, so duplicates occur."""
        k = _numel(shape)
        a, b = self.ch([1, 2, 3, 5, 7]), self.ch([0, 1, 2])
        src = "L.arange(%d)" % k
        if a != 1:
            src += ".mul(%d)" % a
        if b:
            src += ".add(%d)" % b
        src = "%s.remainder(%d)" % (src, n)
        if neg and self.p(0.5):
            src += ".sub(%d)" % n
        return "%s.reshape(%s)" % (src, ", ".join(map(str, shape)) or "()") if len(shape) != 1 else src

    def _uidx(self, shape, d, n):
        """An int64 index of `shape`, unique along dim d (shape[d] <= n): a shifted or
        reversed arange along d, expanded over the other dims."""
        k = shape[d]
        b = int(self.r.integers(0, n))
        step = self.ch([1, n - 1]) if n > 1 else 1
        one = [1] * len(shape)
        one[d] = k
        src = "L.arange(%d).mul(%d).add(%d).remainder(%d).reshape(%s)" % (
            k, step, b, n, ", ".join(map(str, one)))
        if list(one) != list(shape):
            src += ".expand(%s)" % ", ".join(map(str, shape))
        return src

    def _sub_shape(self, shape, d=None, keep_d=False):
        """A shape <= `shape` elementwise (each dim kept or shrunk, d's kept when keep_d)."""
        out = []
        for i, s in enumerate(shape):
            if (keep_d and i == d) or s == 0 or self.p(0.6):
                out.append(int(s))
            else:
                out.append(int(self.r.integers(1, s + 1)))
        return out

    def _float_var(self, min_dim=0):
        return self.var(lambda u: u.is_floating_point() and u.dim() >= min_dim)

    # -- templates
    def t_index(self):
        x = self.var(lambda u: u.dim() >= 1)
        if x is None:
            return None
        t = self.env[x]
        nd = t.dim()
        d = self.dim(t)
        dd = d % nd
        n = t.shape[dd]
        z = self.new()
        k = self.ch(["mask", "mask", "int", "int", "index_select", "gather", "take_along_dim",
                     "scatter", "scatter_add", "scatter_reduce", "index_add", "index_put",
                     "masked_fill", "setitem_idx", "setitem_mask", "index_fill", "index_copy"])
        if k == "mask":
            m = self.partner(t) if self.p(0.3) else None
            if m is not None and self.env[m].shape == t.shape:
                return "%s = %s[%s > 0]" % (z, x, m), z
            if self.p(0.5):
                return "%s = %s[%s %s %s]" % (z, x, x, self.ch([">", "<", "!="]), self.scalar()), z
            mask = "L.arange(%d).remainder(%d) == %d" % (t.shape[0], self.ch([2, 3]), self.ch([0, 1]))
            return "%s = %s[%s]" % (z, x, mask), z
        if k == "int":
            if n == 0:
                return None
            shp = self.ch([[self.ch([1, 2, 3, 4])], [2, 2], [3], []])
            idx = self._idx(shp, n, neg=True)
            if shp == [] and self.p(0.5):
                idx = "[%d, %d]" % (int(self.r.integers(-n, n)), int(self.r.integers(-n, n)))
            pre = ", ".join([":"] * dd)
            if self.p(0.25) and nd >= 2 and dd == 0 and t.shape[1]:
                # two advanced indices, broadcast together
                return "%s = %s[%s, %s]" % (z, x, idx, self._idx([1], t.shape[1])), z
            return "%s = %s[%s]" % (z, x, (pre + ", " if pre else "") + idx), z
        if k == "index_select":
            if n == 0:
                return None
            return "%s = %s.index_select(%d, %s)" % (z, x, d, self._idx([self.ch([1, 2, 3, 5])], n)), z
        if k in ("gather", "take_along_dim"):
            if n == 0:
                return None
            shp = self._sub_shape(t.shape)
            shp[dd] = self.ch([1, 2, 3])
            idx = self._idx(shp, n)
            if k == "gather":
                return "%s = L.gather(%s, %d, %s)" % (z, x, d, idx), z
            return "%s = L.take_along_dim(%s, %s, %d)" % (z, x, idx, d), z
        if k in ("scatter", "scatter_add", "scatter_reduce"):
            if n == 0:
                return None
            shp = self._sub_shape(t.shape)
            shp[dd] = min(shp[dd], n) if k == "scatter" else self.ch([1, 2, 3, 4])
            idx = self._uidx(shp, dd, n) if k == "scatter" else self._idx(shp, n)
            src = self.var(lambda u: list(u.shape) == shp and u.dtype == t.dtype)
            if src is None:
                src = "L.ones(%s, dtype=%s.dtype).mul(%s)" % (", ".join(map(str, shp)) or "()", x,
                                                               self.ch(["2", "-1", "3"]))
            target = x if self.p(0.4) else x + ".clone()"
            if k == "scatter":
                if self.p(0.3):
                    return "%s = %s.scatter(%d, %s, %s)" % (z, target, d, idx, self.scalar(t)), z
                return "%s = L.scatter(%s, %d, %s, %s)" % (z, target, d, idx, src), z
            if k == "scatter_add":
                if target == x and self.p(0.5):
                    return "%s.scatter_add_(%d, %s, %s)" % (x, d, idx, src), None
                return "%s = %s.scatter_add(%d, %s, %s)" % (z, target, d, idx, src), z
            red = self.ch(["sum", "prod", "mean", "amax", "amin"])
            return "%s = %s.scatter_reduce(%d, %s, %s, %r, include_self=%s)" % (
                z, target, d, idx, src, red, self.p(0.5)), z
        if k in ("index_add", "index_copy"):
            m = self.ch([1, 2, 3, 4]) if k == "index_add" else min(n, self.ch([1, 2, 3]))
            if n == 0 or m == 0:
                return None
            shp = list(t.shape)
            shp[dd] = m
            idx = self._idx([m], n) if k == "index_add" else self._uidx([m], 0, n)
            src = self.var(lambda u: list(u.shape) == shp and u.dtype == t.dtype)
            if src is None:
                src = "L.ones(%s, dtype=%s.dtype)" % (", ".join(map(str, shp)), x)
            if k == "index_add":
                alpha = ", alpha=%s" % self.ch(["2", "-1"]) if self.p(0.3) else ""
                if self.p(0.5):
                    return "%s.index_add_(%d, %s, %s%s)" % (x, d, idx, src, alpha), None
                return "%s = L.index_add(%s, %d, %s, %s%s)" % (z, x, d, idx, src, alpha), z
            return "%s = %s.index_copy(%d, %s, %s)" % (z, x, d, idx, src), z
        if k == "index_put":
            n0 = t.shape[0]
            if n0 == 0:
                return None
            acc = self.p(0.6)
            m = self.ch([1, 2, 3, 4]) if acc else min(n0, self.ch([1, 2, 3]))
            idx = self._idx([m], n0, neg=True) if acc else self._uidx([m], 0, n0)
            # (values that alias the target are read while it is written: undefined)
            val = self.ch(["L.tensor(%s)" % self.scalar(t), "%s[0].clone()" % x, "%s[:1] * 2" % x])
            if self.p(0.5) and not _overlaps(t):  # (on an expanded target torch only warns)
                return "%s.index_put_((%s,), %s, accumulate=%s)" % (x, idx, val, acc), None
            return "%s = %s.index_put((%s,), %s, accumulate=%s)" % (z, x, idx, val, acc), z
        if k == "masked_fill":
            m = self.var(lambda u: u.dtype == torch.bool)
            mask = m if m is not None and self.p(0.5) else "%s > 0" % x
            val = self.scalar(t) if self.p(0.7) else "L.tensor(%s)" % self.scalar()
            if self.p(0.3) and not _overlaps(t):  # (torch only warns on an expanded target)
                return "%s.masked_fill_(%s, %s)" % (x, mask, val), None
            return "%s = %s.masked_fill(%s, %s)" % (z, x, mask, val), z
        if k in ("setitem_idx", "setitem_mask") and _overlaps(t):
            return None  # torch only warns (index_put_ on an expanded tensor is deprecated)
        if k == "setitem_idx":
            if n == 0:
                return None
            val = self.scalar(t) if self.p(0.6) else "%s.flatten()[0]" % x
            return "%s[%s] = %s" % (x, self._uidx([min(n, 2)], 0, n), val), None
        if k == "setitem_mask":
            return "%s[%s %s 0] = %s" % (x, x, self.ch([">", "<"]), self.scalar(t)), None
        if k == "index_fill":
            if n == 0:
                return None
            return "%s = %s.index_fill(%d, %s, %s)" % (z, x, d, self._idx([2], n), self.scalar(t)), z
        return None

    def t_sort(self):
        x = self.var(lambda u: u.dtype != torch.bool)
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        d = self.dim(t)
        n = t.shape[d] if t.dim() else 1
        # indices are well defined only for stable sorts or without ties
        tied = t.numel() > 0 and t.dim() > 0 and bool((t.sort(d).values.diff(dim=d) == 0).any())
        k = self.ch(["sort", "argsort", "topk", "cummax", "cummin", "kthvalue", "msort", "sort_stable"])
        if k == "sort":
            part = "values" if tied else self.ch(["values", "indices"])
            return "%s = %s.sort(%d, descending=%s).%s" % (z, x, d, self.p(0.5), part), z
        if k == "sort_stable":
            part = self.ch(["values", "indices"])
            return "%s = L.sort(%s, dim=%d, descending=%s, stable=True)[%d]" % (
                z, x, d, self.p(0.5), 0 if part == "values" else 1), z
        if k == "argsort":
            return "%s = %s.argsort(dim=%d, descending=%s, stable=True)" % (z, x, d, self.p(0.5)), z
        if k == "topk":
            kk = int(self.r.integers(0 if t.dim() else 1, n + 1))  # (torch: topk(0) of 0-d is 1 element)
            part = "values" if tied else self.ch(["values", "indices"])
            return "%s = %s.topk(%d, %d, largest=%s).%s" % (z, x, kk, d, self.p(0.5), part), z
        if k in ("cummax", "cummin"):
            return "%s = L.%s(%s, %d).%s" % (z, k, x, d, self.ch(["values", "indices"])), z
        if k == "kthvalue":
            if n == 0:
                return None
            return "%s = %s.kthvalue(%d, %d).values" % (z, x, int(self.r.integers(1, n + 1)), d), z
        if k == "msort":
            return "%s = L.msort(%s)" % (z, x), z
        return None

    def t_bounds(self):
        """clamp with tensor bounds, where with tensor / 0-d / mixed-dtype branches."""
        x = self.var()
        t = self.env[x]
        z = self.new()
        lo, hi = self.partner(t), self.partner(t)
        k = self.ch(["clamp2", "clamp_max", "clamp_", "where0d", "where_mixed"])
        if k == "clamp2" and lo is not None and hi is not None:
            return "%s = L.clamp(%s, %s, %s)" % (z, x, lo, hi), z
        if k == "clamp_max" and hi is not None:
            return "%s = %s.clamp(max=%s)" % (z, x, hi), z
        if k == "clamp_" and lo is not None:
            return "%s.clamp_(min=%s)" % (x, lo), None
        if k == "where0d":
            return "%s = L.where(%s > 0, L.tensor(%s), %s)" % (z, x, self.scalar(), x), z
        y = self.partner(t)
        return "%s = L.where(%s < %s, %s, %s)" % (z, x, self.scalar(), x, y or self.scalar()), z

    def t_promote(self):
        """Small ints and bools with scalars and each other: wrapping, promotion."""
        x = self.var(lambda u: not u.is_floating_point())
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        s = self.ch(["-1", "-3", "2", "0.5", "-2.5", "True", "200", "-129", "1e3"])
        op = self.ch(["+", "-", "*", "/", "//", "%", "add", "mul", "sub", "&", "max"])
        if op == "max":
            y = self.partner(t)
            if y is None:
                return None
            return "%s = L.maximum(%s, %s)" % (z, x, y), z
        if op in ("add", "mul", "sub"):
            if self.p(0.3):
                return "%s = %s.%s(%s, alpha=%s)" % (z, x, op if op != "mul" else "add", s,
                                                     self.ch(["2", "-1"])), z
            return "%s = L.%s(%s, %s)" % (z, op, x, s), z
        if self.p(0.3):
            y = self.partner(t)
            if y is not None:
                return "%s = %s %s %s" % (z, y, op, x), z
        if self.p(0.3):
            return "%s = %s %s %s" % (z, s, op, x), z
        return "%s = %s %s %s" % (z, x, op, s), z

    def t_move(self):
        x = self.var()
        t = self.env[x]
        nd = t.dim()
        z = self.new()
        k = self.ch(["repeat", "tile", "roll", "flip", "tril", "triu", "diagonal", "pad", "chunk",
                     "rot90", "repeat_interleave", "diag_embed", "roll_flat", "narrow_copy"])
        if k == "repeat":
            reps = [self.ch([1, 2, 3]) for _ in range(nd + int(self.p(0.3)))] or [2]
            return "%s = %s.repeat(%s)" % (z, x, ", ".join(map(str, reps))), z
        if k == "tile":
            reps = [self.ch([1, 2]) for _ in range(max(1, nd - int(self.p(0.5))))]
            return "%s = L.tile(%s, (%s,))" % (z, x, ", ".join(map(str, reps))), z
        if k == "roll" and nd:
            if self.p(0.4) and nd >= 2:
                return "%s = L.roll(%s, (%d, %d), (0, -1))" % (z, x, self.ch([1, -2]), self.ch([2, -1])), z
            return "%s = %s.roll(%d, %d)" % (z, x, self.ch([1, -1, 2, 3, -4, 7]), self.dim(t)), z
        if k == "roll_flat":
            return "%s = L.roll(%s, %d)" % (z, x, self.ch([1, -1, 3])), z
        if k == "flip" and nd >= 2:
            return "%s = %s.flip(0, -1)" % (z, x), z
        if k in ("tril", "triu") and nd >= 2:
            if self.p(0.3) and not _overlaps(t):  # (torch writes an expanded target as is)
                return "%s.%s_(%d)" % (x, k, self.ch([0, 1, -1, 2])), None
            return "%s = L.%s(%s, %d)" % (z, k, x, self.ch([0, 0, 1, -1, 2, -3])), z
        if k == "diagonal" and nd >= 2:
            a, b = self.r.choice(nd, 2, replace=False).tolist()
            return "%s = %s.diagonal(%d, %d, %d)" % (z, x, self.ch([0, 0, 1, -1, 5]), a, b), z
        if k == "diag_embed" and nd >= 1 and nd <= 3:
            return "%s = L.diag_embed(%s, %d)" % (z, x, self.ch([0, 1, -1])), z
        if k == "rot90" and nd >= 2:
            return "%s = L.rot90(%s, %d, (0, 1))" % (z, x, self.ch([1, 2, 3, -1])), z
        if k == "pad" and nd:
            mode = self.ch(["constant", "constant", "reflect", "replicate", "circular"])
            npad = 2 * int(self.r.integers(1, min(nd, 3) + 1))
            pads = [self.ch([0, 1, 2, -1]) if mode == "constant" else self.ch([0, 1, 2]) for _ in range(npad)]
            val = ", value=%s" % self.scalar() if mode == "constant" and self.p(0.5) else ""
            return "%s = F.pad(%s, (%s), mode=%r%s)" % (z, x, ", ".join(map(str, pads)) + ",", mode, val), z
        if k == "chunk" and nd:
            return "%s = %s.chunk(%d, %d)[%d]" % (z, x, self.ch([2, 3]), self.dim(t), self.ch([0, -1])), z
        if k == "repeat_interleave":
            if nd and self.p(0.5):
                return "%s = %s.repeat_interleave(%d, dim=%d)" % (z, x, self.ch([1, 2, 3]), self.dim(t)), z
            return "%s = L.repeat_interleave(%s, 2)" % (z, x), z
        if k == "narrow_copy" and nd:
            d = self.dim(t)
            n = t.shape[d]
            return "%s = %s.narrow_copy(%d, %d, %d)" % (z, x, d, n // 2, n - n // 2), z
        return None

    def t_einsum(self):
        x = self.var(lambda u: 1 <= u.dim() <= 4)
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        pats = {1: ["i->", "i,i->", "i,j->ij", "i,i->i"],
                2: ["ij->ji", "ij->j", "ij,jk->ik", "ij,ij->i", "ij,j->i", "ij,kj->ik", "ij->"],
                3: ["bij,bjk->bik", "bij,jk->bik", "bij->bji", "bij,bij->b", "bij->j"],
                4: ["abij->abji", "abij,abjk->abik", "abij->ai"]}[t.dim()]
        pat = self.ch(pats)
        if "," not in pat:
            return "%s = L.einsum(%r, %s)" % (z, pat, x), z
        cands = []
        for nme, u in self.env.items():
            if u.dtype != t.dtype or u.dim() != len(pat.split(",")[1].split("-")[0]):
                continue
            try:
                r = torch.einsum(pat, t.float(), u.float())
            except RuntimeError:
                continue
            if r.numel() <= 4096:
                cands.append(nme)
        if not cands:
            return None
        return "%s = L.einsum(%r, %s, %s)" % (z, pat, x, self.ch(cands)), z

    def t_bmm(self):
        """matmul with broadcast batch dims and 1-d operands; bmm."""
        x = self.var(lambda u: u.dim() >= 1 and u.dtype != torch.bool)
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        forms = ["%s.unsqueeze(0)", "%s[None].expand(2, %s)", "%s.unsqueeze(-1)", "%s"]
        cands = []
        for nme, u in self.env.items():
            if u.dtype != t.dtype or not u.dim():
                continue
            for f in forms:
                src = f % ((nme, ", ".join(["-1"] * u.dim())) if "expand" in f else nme)
                try:
                    v = eval(src, {}, {nme: u})
                    r = torch.matmul(t.float(), v.float())
                except RuntimeError:
                    continue
                if r.numel() <= 4096 and (u.dim() >= 2 or t.dim() >= 2 or f != "%s"):
                    cands.append((src, v))
        if not cands:
            return None
        src, v = cands[int(self.r.integers(len(cands)))]
        if t.dim() == 3 and v.dim() == 3 and self.p(0.5):
            return "%s = L.bmm(%s, %s)" % (z, x, src), z
        return "%s = L.matmul(%s, %s)" % (z, x, src), z

    def t_norm(self):
        x = self._float_var(1)
        if x is None:
            return None
        t = self.env[x]
        nd = t.dim()
        z = self.new()
        k = self.ch(["layer_norm", "layer_norm", "group_norm", "rms_norm", "normalize", "softmax",
                     "dropout", "log_softmax"])
        if k == "layer_norm":
            m = int(self.r.integers(1, nd + 1))
            shp = list(t.shape[nd - m:])
            aff = ""
            if self.p(0.5):
                nel = _numel(shp)
                w = "L.linspace(0.5, 1.5, %d, dtype=%s.dtype).reshape(%s)" % (
                    nel, x, ", ".join(map(str, shp)))
                aff = ", %s, %s" % (w, "None" if self.p(0.5) else w + " * 0.1")
            return "%s = F.layer_norm(%s, %r%s, eps=%s)" % (z, x, tuple(shp), aff,
                                                         self.ch(["1e-5", "1e-3"])), z
        if k == "group_norm" and nd >= 2:
            c = t.shape[1]
            gs = [g for g in (1, 2, 3, 4) if c and c % g == 0]
            if not gs:
                return None
            g = self.ch(gs)
            aff = ", L.linspace(0.5, 1.5, %d, dtype=%s.dtype), L.linspace(-1, 1, %d, dtype=%s.dtype)" % (
                c, x, c, x) if self.p(0.5) else ""
            return "%s = F.group_norm(%s, %d%s)" % (z, x, g, aff), z
        if k == "rms_norm":
            return "%s = F.rms_norm(%s, (%d,), eps=1e-5)" % (z, x, t.shape[-1]), z
        if k == "normalize":
            return "%s = F.normalize(%s, p=%s, dim=%d)" % (z, x, self.ch(["2.0", "1.0"]), self.dim(t)), z
        if k in ("softmax", "log_softmax"):
            return "%s = L.%s(%s, %d)" % (z, k, x, self.dim(t)), z
        if k == "dropout":
            p = self.ch(["0.0", "1.0"])
            if self.p(0.2):
                return "%s = F.dropout(%s, %s, training=True, inplace=True)" % (z, x, p), z
            return "%s = F.dropout(%s, p=%s, training=%s)" % (z, x, p, self.p(0.7)), z
        return None

    def t_catviews(self):
        x = self.var(lambda u: u.dim() >= 1)
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        d = self.dim(t)
        n = t.shape[d]
        views = ["%s.flip(%d)" % (x, d), "%s.narrow(%d, %d, %d)" % (x, d, n // 2, n - n // 2),
                 x, "%s * 2" % x]
        if t.dim() >= 2 and t.shape[0] == t.shape[1]:
            views.append("%s.transpose(0, 1)" % x)
        parts = [self.ch(views) for _ in range(int(self.r.integers(2, 4)))]
        if self.p(0.4):
            same = [v for v in parts if "narrow" not in v] or [x]
            return "%s = L.stack([%s], %d)" % (z, ", ".join(same), self.dim(t, 1)), z
        return "%s = L.cat([%s], %d)" % (z, ", ".join(parts), d), z

    def t_viewchain(self):
        """A chain of views of a fresh copy or of an input, an in-place write through the
        last one, then a read of the base: several lines."""
        x = self.var(lambda u: u.dim() >= 1)
        if x is None:
            return None
        lines = []
        if self.p(0.5):
            base = self.ch([i.name for i in self.inputs])
            if self.env[base].dim() == 0:
                return None
        else:
            base = self.new()
            # contiguous first: symtrace's results are contiguous where torch's keep their
            # input's strides (a known difference), so reshapes of them alias differently
            lines.append(("%s = %s.contiguous().clone()" % (base, x), base))
        cur = base
        shape = list(self.env[base].shape) if base in self.env else list(self.env[x].shape)
        for _ in range(int(self.r.integers(1, 4))):
            nd = len(shape)
            v = self.new()
            k = self.ch(["t", "slice", "select", "unsqueeze", "flatten", "diagonal", "narrow", "view"])
            if k == "t" and nd >= 2:
                src, shape = "%s.transpose(0, -1)" % cur, [shape[-1]] + shape[1:-1] + [shape[0]]
            elif k == "slice" and nd and shape[0]:
                src = "%s[%d::%d]" % (cur, int(self.r.integers(0, shape[0])), self.ch([1, 2]))
                shape = None
            elif k == "select" and nd and shape[0]:
                src, shape = "%s[%d]" % (cur, int(self.r.integers(-shape[0], shape[0]))), shape[1:]
            elif k == "unsqueeze":
                src, shape = "%s.unsqueeze(0)" % cur, [1] + shape
            elif k == "diagonal" and nd >= 2:
                src, shape = "%s.diagonal(0, 0, 1)" % cur, None
            elif k == "narrow" and nd and shape[-1]:
                src, shape = "%s.narrow(-1, 1, %d)" % (cur, shape[-1] - 1), shape[:-1] + [shape[-1] - 1]
            elif k == "view":
                src, shape = "%s.view(-1)" % cur, None
            else:
                src, shape = "%s.flatten()" % cur, None
            lines.append(("%s = %s" % (v, src), v))
            cur = v
            if shape is None:
                break
        w = self.ch(["add_", "mul_", "fill_", "zero_", "setitem", "copy_", "neg_", "masked_fill_"])
        if w == "masked_fill_" and base in self.env and _overlaps(self.env[base]):
            w = "neg_"  # (torch only warns on an expanded target)
        if w in ("add_", "mul_"):
            lines.append(("%s.%s(%s)" % (cur, w, self.ch(["2", "-1", "0.5"])), None))
        elif w == "fill_":
            lines.append(("%s.fill_(%s)" % (cur, self.ch(["3", "-1", "0.5"])), None))
        elif w == "zero_":
            lines.append(("%s.zero_()" % cur, None))
        elif w == "neg_":
            lines.append(("%s.neg_()" % cur, None))
        elif w == "masked_fill_":
            lines.append(("%s.masked_fill_(%s > 0, %s)" % (cur, cur, self.ch(["0", "-2"])), None))
        elif w == "copy_":
            lines.append(("%s.copy_(%s.flip(0) if %s.dim() else %s * 2)" % (cur, cur, cur, cur), None))
        else:
            lines.append(("%s[...] = %s" % (cur, self.ch(["1", "-2", "0.5"])), None))
        r = self.new()
        lines.append(("%s = %s%s" % (r, base, self.ch([" * 1", " + 0", ".sum(0)"])), r))
        return lines

    def t_detach(self):
        x = self.var()
        t = self.env[x]
        z = self.new()
        k = self.ch(["detach", "clone_detach", "detach_clone", "detach_inplace", "mix"])
        if k == "detach":
            return "%s = %s.detach()" % (z, x), z
        if k == "clone_detach":
            return "%s = %s.clone().detach()" % (z, x), z
        if k == "detach_clone":
            return "%s = %s.detach().clone() * %s" % (z, x, x), z
        if k == "detach_inplace" and t.is_floating_point():
            return "%s.detach().mul_(%s)" % (x, self.ch(["2", "0.5"])), None
        y = self.partner(t) or x
        return "%s = %s * %s.detach() + %s.clone()" % (z, x, y, y), z
