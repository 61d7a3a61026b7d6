"""scripts/fuzz_merge_ops.py - the fourth round of op templates of the differential fuzzer
(scripts/fuzz_compile.py), where the checkpointing / dynamic-shape merge landed:
torch.utils.checkpoint.checkpoint(fn, ..., use_reentrant=False) around a random
sub-program (a lambda of 1-3 ops over one or two values, one or two results; torch's
gradients through the checkpoint are those of the plain program, so torch stays the
oracle), topk whose k is read from a size (the --dynamic path) and whose indices feed
gather, the *_like / new_* factories, and integer-tensor subscripts built from sizes.

MergeOps is a mixin of fuzz_compile.Gen, like fuzz_more_ops.MoreOps. The returned
structure (the same list twice, a dict argument) is drawn by fuzz_compile.generate
(Program.wrap), apart from these templates."""

# one-argument pieces of a checkpointed sub-program; %s is the value so far, %d a dim
_CK1 = ["%s.sin() * 2", "F.gelu(%s)", "%s.exp().clamp(max=3.0)", "(%s * %s).sum(%d, keepdim=True)",
        "%s.tanh() + %s", "(%s - %s.mean(%d, keepdim=True)).square()", "%s.softmax(%d)",
        "%s.cumsum(%d)", "%s.mul(2).add_(1)", "F.silu(%s)", "%s.sigmoid() * %s", "%s.flip(%d)",
        "%s.transpose(0, -1)", "%s.reshape(-1)", "F.relu(%s) + 0.5"]


class MergeOps:
    def _ck_body(self, a, nd):
        """Source of 1-3 pieces over the name a (of nd dims)."""
        e = a
        for _ in range(int(self.r.integers(1, 4))):
            piece = self.ch(_CK1)
            if "reshape" in piece:
                nd = 1
            d = int(self.r.integers(-1, nd)) if nd else 0
            e = piece.replace("%s", "(" + e + ")") % ((d,) * piece.count("%d"))
        return e

    def t_ckpt(self):
        x = self.var(lambda u: u.is_floating_point())
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        y = self.var(lambda u: u.is_floating_point() and u.shape == t.shape and u.dtype == t.dtype)
        kind = self.ch(["one", "one", "two", "pair"])
        if kind == "two" and y is not None:
            body = "(%s) * b + b.cos()" % self._ck_body("a", t.dim())
            fn, args = "lambda a, b: %s" % body, "%s, %s" % (x, y)
        elif kind == "pair":
            fn = "lambda a: (%s, %s)" % (self._ck_body("a", t.dim()), self._ck_body("a", t.dim()))
            return "%s = L.utils.checkpoint.checkpoint(%s, %s, use_reentrant=False)[%d]" % (
                z, fn, x, self.ch([0, 1])), z
        else:
            fn, args = "lambda a: %s" % self._ck_body("a", t.dim()), x
        return "%s = L.utils.checkpoint.checkpoint(%s, %s, use_reentrant=False)" % (z, fn, args), z

    def t_topk_dyn(self):
        x = self.var(lambda u: u.dim() >= 1 and u.dtype.is_floating_point)
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        d = self.dim(t)
        k = self.ch(["%s.shape[%d] // 2" % (x, d), "min(2, %s.shape[%d])" % (x, d),
                     "%s.size(%d)" % (x, d), "1 if %s.shape[%d] else 0" % (x, d)])
        # indices are defined only without ties (their order among ties is torch's own)
        tied = t.numel() > 0 and bool((t.sort(d).values.diff(dim=d) == 0).any())
        k_ = self.ch(["values", "indices", "gather", "sum"])
        if tied and k_ == "indices":
            k_ = "values"
        large = self.p(0.6)
        if k_ == "gather":
            return "%s = %s.gather(%d, %s.topk(%s, %d, largest=%s).indices) * 2" % (
                z, x, d, x, k, d, large), z
        if k_ == "sum":
            return "%s = %s.topk(%s, %d, largest=%s).values.sum(%d, keepdim=True) + %s" % (
                z, x, k, d, large, d, x), z
        return "%s = %s.topk(%s, %d, largest=%s).%s" % (z, x, k, d, large, k_), z

    def t_like(self):
        x = self.var()
        t = self.env[x]
        z = self.new()
        dt = self.ch(["", "", ", dtype=L.float32", ", dtype=L.int64", ", dtype=%s.dtype" % x])
        k = self.ch(["zeros", "ones", "full", "empty_fill", "copy", "new_ones", "new_zeros",
                     "new_full", "new_empty"])
        if k in ("zeros", "ones"):
            e = "L.%s_like(%s%s) + %s" % (k, x, dt, x)
        elif k == "full":
            e = "L.full_like(%s, %s%s) * %s" % (x, self.ch(["2", "-1", "0.5", "True"]), dt, x)
        elif k == "empty_fill":
            e = "L.empty_like(%s%s).fill_(3) - %s" % (x, dt, x)
        elif k == "copy":
            e = "L.zeros_like(%s%s).copy_(%s)" % (x, dt, x)
        elif k == "new_full":
            e = "%s.new_full(%s.shape, %s) + %s" % (x, x, self.ch(["1", "1.5"]), x)
        elif k == "new_empty":
            e = "%s.new_empty((%s.shape[0] if %s.dim() else 1, 2)).fill_(1)" % (x, x, x)
        else:
            e = "%s.%s((2,) + tuple(%s.shape)%s)" % (x, k, x, dt)
        return "%s = %s" % (z, e), z

    def t_intsub(self):
        x = self.var(lambda u: u.dim() >= 1 and u.shape[0] > 0)
        if x is None:
            return None
        z = self.new()
        k = self.ch(["rev", "even", "last", "rep"])
        idx = {"rev": "L.arange(%s.shape[0] - 1, -1, -1)" % x,
               "even": "L.arange(0, %s.shape[0], 2)" % x,
               "last": "L.tensor([%s.shape[0] - 1, 0])" % x,
               "rep": "L.arange(%s.shape[0]).repeat_interleave(2)" % x}[k]
        if self.p(0.3) and self.env[x].dim() >= 2:
            return "%s = %s[:, :1][%s]" % (z, x, idx), z
        return "%s = %s[%s]" % (z, x, idx), z

    MERGE_TEMPLATES = (("t_ckpt", 8), ("t_topk_dyn", 4), ("t_like", 4), ("t_intsub", 3))
