"""scripts/fuzz_extra_ops.py - the fifth round of op templates of the differential fuzzer
(scripts/fuzz_compile.py), drawn only under its --extra flag (the programs of every seed
without it stay what they were): scans (cumprod, logcumsumexp, cumsum with an integer
dtype), pointwise ops the base templates never draw (lerp, addcmul / addcdiv with a value,
lgamma / digamma, logit, xlogy, sinc, heaviside, logaddexp, float_power, erfinv, i0,
signbit, clamp_min / clamp_max with tensors), reductions (std_mean / var_mean, prod over a
dim, median / nanmedian values, nansum / nanmean over NaNs, aminmax, count_nonzero, trace,
norm), data-dependent indexing (masked_select, masked_scatter, take, index_reduce with
duplicate indices, bincount, searchsorted / bucketize, isin), products (outer, kron,
cdist, addmm / addmv / addr / baddbmm with beta and alpha, tensordot), movement (rot90,
movedim, diff with prepend) and in-place ops of those kinds on views of an input (read
back through the base afterwards).

ExtraOps is a mixin of fuzz_compile.Gen, like fuzz_more_ops.MoreOps: it uses its draws and
the torch values in self.env; a template returns None, one (line, target) or a list."""
import torch


def _tied(t):
    """Whether t has equal elements (gradients of median / aminmax / prod pick one)."""
    return t.numel() > 1 and bool((t.flatten().sort().values.diff() == 0).any())


class ExtraOps:
    def _pick(self, pred):
        """(name, tensor) of a variable meeting pred, a new name and a dim of the tensor
        (drawn in that order), or None."""
        x = self.var(pred)
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        return x, t, z, self.dim(t)

    def _fv(self, min_dim=0, pred=None):
        return self.var(lambda u: u.is_floating_point() and u.dim() >= min_dim
                        and (pred is None or pred(u)))

    def t_x_scan(self):
        p = self._pick(lambda u: u.dtype != torch.bool)
        if p is None:
            return None
        x, t, z, d = p
        k = self.ch(["cumprod", "cumprod", "logcumsumexp", "cumsum_dt", "cumprod_dt", "cumsum_"])
        if k == "cumprod":
            if t.is_floating_point() and _tied(t) and (t == 0).any():
                return None  # (cumprod's gradient at zeros)
            return "%s = L.cumprod(%s.clamp(-2, 2), %d)" % (z, x, d), z
        if k == "logcumsumexp":
            if not t.is_floating_point():
                return None
            return "%s = %s.logcumsumexp(%d)" % (z, x, d), z
        if k in ("cumsum_dt", "cumprod_dt"):
            dt = self.ch(["int64", "float32", "float64", "int32"])
            src = x if k == "cumsum_dt" else "%s.clamp(-2, 2)" % x
            return "%s = %s.%s(%d, dtype=L.%s)" % (z, src, k[:-3], d, dt), z
        if not t.is_floating_point() and t.dtype != torch.int64:
            return None
        c = self.new()
        return [("%s = %s.clone()" % (c, x), c), ("%s.cumsum_(%d)" % (c, d), None),
                ("%s = %s * 1" % (z, c), z)]

    def t_x_pointwise(self):
        x = self._fv()
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        y = self.partner(t)
        other = y if y is not None and self.env[y].is_floating_point() else None
        k = self.ch(["lerp", "lerp_t", "addcmul", "addcdiv", "lgamma", "digamma", "logit", "xlogy",
                     "sinc", "heaviside", "logaddexp", "float_power", "erfinv", "i0", "signbit",
                     "clamp_min", "clamp_max", "deg2rad", "rsqrt_abs", "logaddexp2"])
        o = other or x
        if k == "lerp":
            return "%s = L.lerp(%s, %s, %s)" % (z, x, o, self.ch(["0.25", "0.5", "-1.0", "2.0"])), z
        if k == "lerp_t":
            return "%s = %s.lerp(%s, %s.sigmoid())" % (z, x, o, o), z
        if k in ("addcmul", "addcdiv"):
            den = "(%s.abs() + 0.5)" % o if k == "addcdiv" else o
            val = self.ch(["", ", value=2", ", value=-0.5"])
            return "%s = L.%s(%s, %s, %s%s)" % (z, k, x, o, den, val), z
        if k in ("lgamma", "digamma"):
            return "%s = L.%s(%s.abs() + 0.25)" % (z, k, x), z
        if k == "logit":
            return "%s = L.logit(%s.sigmoid(), eps=%s)" % (z, x, self.ch(["None", "1e-3", "0.1"])), z
        if k == "xlogy":
            return "%s = L.xlogy(%s, %s.abs())" % (z, x, o), z
        if k == "sinc":
            return "%s = L.sinc(%s)" % (z, x), z
        if k == "heaviside":
            return "%s = L.heaviside(%s.round(), %s)" % (z, x, o), z
        if k in ("logaddexp", "logaddexp2"):
            return "%s = L.%s(%s, %s)" % (z, k, x, o), z
        if k == "float_power":
            return "%s = L.float_power(%s.abs() + 0.5, %s)" % (z, x, self.ch(["2", "0.5", "-1.5"])), z
        if k == "erfinv":
            return "%s = L.erfinv(%s.tanh() * 0.9)" % (z, x), z
        if k == "i0":
            return "%s = L.i0(%s)" % (z, x), z
        if k == "signbit":
            return "%s = L.signbit(%s)" % (z, x), z
        if k in ("clamp_min", "clamp_max"):
            return "%s = %s.%s(%s)" % (z, x, k, other or self.scalar()), z
        if k == "deg2rad":
            return "%s = L.deg2rad(%s)" % (z, x), z
        return "%s = (%s.abs() + 1).rsqrt()" % (z, x), z

    def t_x_reduce(self):
        p = self._pick(lambda u: u.dtype != torch.bool)
        if p is None:
            return None
        x, t, z, d = p
        kd = self.p(0.4)
        fl = t.is_floating_point()
        k = self.ch(["std_mean", "var_mean", "prod", "median", "nanmedian", "nansum", "nanmean",
                     "aminmax", "count_nonzero", "trace", "norm", "median_all"])
        if k in ("std_mean", "var_mean") and fl:
            return "%s = L.%s(%s, %d, correction=%d, keepdim=%s)[%d]" % (
                z, k, x, d, self.ch([0, 1]), kd, self.ch([0, 1])), z
        if k == "prod":
            if fl and (t == 0).any():
                return None
            return "%s = %s.clamp(-2, 2).prod(%d, keepdim=%s)" % (z, x, d, kd), z
        if k in ("median", "nanmedian"):
            if fl and _tied(t) or t.dim() and t.shape[d] == 0:
                return None
            src = x if k == "median" or not fl else "L.where(%s > 1, L.nan, %s)" % (x, x)
            return "%s = L.%s(%s, %d, keepdim=%s).values" % (z, k, src, d, kd), z
        if k == "median_all":
            if fl and _tied(t) or t.numel() == 0:
                return None
            return "%s = %s.median()" % (z, x), z
        if k in ("nansum", "nanmean") and fl:
            return "%s = L.%s(L.where(%s < -1, L.nan, %s), %d, keepdim=%s)" % (z, k, x, x, d, kd), z
        if k == "aminmax":
            if fl and _tied(t) or t.dim() and t.shape[d] == 0 or t.numel() == 0:
                return None
            return "%s = L.aminmax(%s, dim=%d, keepdim=%s)[%d]" % (z, x, d, kd, self.ch([0, 1])), z
        if k == "count_nonzero":
            if t.dim() == 0:
                return "%s = L.count_nonzero(%s)" % (z, x), z
            return "%s = L.count_nonzero(%s, dim=%d)" % (z, x, d), z
        if k == "trace":
            if t.dim() != 2:
                return None
            return "%s = L.trace(%s)" % (z, x), z
        if k == "norm" and fl:
            p = self.ch(["1", "2", "float('inf')", "3"])
            if p == "float('inf')" and _tied(t.abs()):
                return None
            return "%s = L.linalg.vector_norm(%s, %s, dim=%d, keepdim=%s)" % (z, x, p, d, kd), z
        return None

    def t_x_index(self):
        p = self._pick(lambda u: u.dim() >= 1)
        if p is None:
            return None
        x, t, z, d = p
        dd = d % t.dim()
        n = t.shape[dd]
        k = self.ch(["masked_select", "masked_scatter", "take", "index_reduce", "index_reduce",
                     "bincount", "searchsorted", "bucketize", "isin", "index_reduce_"])
        if k == "masked_select":
            return "%s = L.masked_select(%s, %s > %s)" % (z, x, x, self.ch(["0", "0.5", "-1"])), z
        if k == "masked_scatter":
            src = "L.arange(%d, dtype=%s.dtype).reshape(%s)" % (
                t.numel(), x, ", ".join(map(str, t.shape))) if t.dtype != torch.bool else x
            return "%s = %s.masked_scatter(%s < 1, %s)" % (z, x, x, src), z
        if k == "take":
            if t.numel() == 0:
                return None
            return "%s = L.take(%s, %s)" % (z, x, self._idx([self.ch([1, 3, 5]), 2], t.numel(), neg=True)), z
        if k in ("index_reduce", "index_reduce_"):
            if n == 0 or t.dtype == torch.bool:
                return None
            m = self.ch([1, 2, 3, 4, 5])
            shp = list(t.shape)
            shp[dd] = m
            red = self.ch(["prod", "mean", "amax", "amin"])
            src = self.var(lambda u: list(u.shape) == shp and u.dtype == t.dtype)
            if src is None:
                src = "L.arange(%d).reshape(%s).remainder(5).sub(2).to(%s.dtype)" % (
                    max(1, int(torch.tensor(shp).prod())), ", ".join(map(str, shp)), x)
                if 0 in shp:
                    return None
            idx = self._idx([m], n)
            if t.is_floating_point() and red in ("amax", "amin", "prod"):
                # (gradients of ties / zeros pick an element)
                if _tied(t) or (red == "prod" and (t == 0).any()):
                    return None
                if not isinstance(src, str) or src in self.env and (_tied(self.env[src]) or (self.env[src] == 0).any()):
                    return None
                if src not in self.env:
                    return None
            inc = self.p(0.5)
            if red == "mean" and not t.is_floating_point():
                return None  # (integer mean rounds: torch floors, the order of sums differs)
            if k == "index_reduce_":
                c = self.new()
                return [("%s = %s.clone()" % (c, x), c),
                        ("%s.index_reduce_(%d, %s, %s, %r, include_self=%s)" % (c, d, idx, src, red, inc), None),
                        ("%s = %s + 0" % (z, c), z)]
            return "%s = %s.index_reduce(%d, %s, %s, %r, include_self=%s)" % (z, x, d, idx, src, red, inc), z
        if k == "bincount":
            if t.dim() != 1 or t.is_floating_point() or t.dtype == torch.bool:
                return None
            if t.numel() and t.min() < 0:
                src = "%s.abs()" % x
            else:
                src = x
            w = self._fv(pred=lambda u: u.shape == t.shape)
            ws = ", weights=%s" % w if w is not None and self.p(0.5) else ""
            return "%s = L.bincount(%s%s, minlength=%d)" % (z, src, ws, self.ch([0, 3, 8])), z
        if k in ("searchsorted", "bucketize"):
            if t.dtype == torch.bool:
                return None
            b = "L.tensor([-2.0, -0.5, 0.0, 0.5, 1.5])" if self.p(0.5) else "L.tensor([-1, 0, 2, 3])"
            right = self.p(0.5)
            if k == "bucketize":
                return "%s = L.bucketize(%s, %s, right=%s)" % (z, x, b, right), z
            return "%s = L.searchsorted(%s, %s, right=%s)" % (z, b, x, right), z
        if k == "isin":
            return "%s = L.isin(%s, L.tensor([0, 1, 2, -1]), invert=%s)" % (z, x, self.p(0.3)), z
        return None

    def t_x_product(self):
        x = self._fv(min_dim=1)
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        k = self.ch(["outer", "kron", "cdist", "addmm", "addmv", "addr", "baddbmm", "tensordot"])
        ab = ", beta=%s, alpha=%s" % (self.ch(["0", "1", "0.5", "-1"]), self.ch(["1", "2", "-0.5"]))
        if k == "outer":
            y = self._fv(min_dim=1, pred=lambda u: u.dim() == 1 and u.dtype == t.dtype)
            if t.dim() != 1 or y is None:
                return None
            return "%s = L.outer(%s, %s)" % (z, x, y), z
        if k == "kron":
            if t.dim() > 2 or t.numel() > 16:
                return None
            return "%s = L.kron(%s, L.tensor([[1.0, -1.0], [0.5, 2.0]], dtype=%s.dtype))" % (z, x, x), z
        if k == "cdist":
            if t.dim() != 2 or t.dtype not in (torch.float32, torch.float64):
                return None
            p = self.ch(["1.0", "2.0", "0.0", "3.0"])
            return "%s = L.cdist(%s, %s.flip(0) * 0.5 + 0.1, p=%s)" % (z, x, x, p), z
        if k == "addmm":
            if t.dim() != 2:
                return None
            m, n = t.shape
            return "%s = L.addmm(L.ones(%d, dtype=%s.dtype), %s, %s.mT%s)" % (z, m, x, x, x, ab), z
        if k == "addmv":
            if t.dim() != 2:
                return None
            return "%s = L.addmv(%s[:, 0], %s, %s[0]%s)" % (z, x, x, x, ab), z
        if k == "addr":
            if t.dim() != 1:
                return None
            return "%s = L.addr(L.zeros(1, dtype=%s.dtype), %s, %s.flip(0)%s)" % (z, x, x, x, ab), z
        if k == "baddbmm":
            if t.dim() != 3:
                return None
            return "%s = L.baddbmm(%s[:, :, :1], %s, %s.mT%s)" % (z, x, x, x, ab), z
        if k == "tensordot":
            if t.dim() < 2:
                return None
            return "%s = L.tensordot(%s, %s, dims=%d)" % (z, x, x, self.ch([1, 2]) if t.dim() >= 2 else 1), z
        return None

    def t_x_move(self):
        p = self._pick(lambda u: u.dim() >= 1)
        if p is None:
            return None
        x, t, z, d = p
        k = self.ch(["rot90", "movedim", "swapaxes", "diff", "diff_pre", "narrow_copy"])
        if k == "rot90":
            if t.dim() < 2:
                return None
            return "%s = L.rot90(%s, %d, [%d, %d])" % (z, x, self.ch([1, 2, 3, -1]), 0, t.dim() - 1), z
        if k == "movedim":
            return "%s = L.movedim(%s, %d, %d) + 0" % (z, x, d, self.dim(t)), z
        if k == "swapaxes":
            return "%s = %s.swapaxes(%d, %d).contiguous()" % (z, x, d, self.dim(t)), z
        if k == "diff":
            return "%s = L.diff(%s, n=%d, dim=%d)" % (z, x, self.ch([1, 2]), d), z
        if k == "diff_pre":
            shp = list(t.shape)
            shp[d % t.dim()] = 1
            pre = "L.zeros(%s, dtype=%s.dtype)" % (", ".join(map(str, shp)), x)
            return "%s = L.diff(%s, dim=%d, prepend=%s, append=%s)" % (z, x, d, pre, pre), z
        n = t.shape[d % t.dim()]
        if n == 0:
            return None
        return "%s = %s.narrow_copy(%d, %d, %d)" % (z, x, d, n // 2, n - n // 2), z

    def t_x_viewwrite(self):
        """An in-place op of this round on a view of an input, read through the base."""
        x = self.ch([i.name for i in self.inputs])
        t = self.env[x]
        if t.dim() == 0 or not t.is_floating_point() or any(
                s == 0 and n > 1 for s, n in zip(t.stride(), t.shape)):
            return None
        v = self.new()
        view = self.ch(["%s[%s]" % (x, self._slices(t)), "%s.transpose(0, -1)" % x,
                        "%s.select(0, 0)" % x if t.shape[0] else "%s[:]" % x, "%s.unsqueeze(0)" % x])
        k = self.ch(["lerp_", "addcmul_", "addcdiv_", "cumsum_", "clamp_min_", "logit_",
                     "masked_scatter_", "float_power_", "index_reduce_"])
        lines = [("%s = %s" % (v, view), v)]
        if k == "lerp_":
            lines.append(("%s.lerp_(%s * 2, 0.25)" % (v, v), None))
        elif k in ("addcmul_", "addcdiv_"):
            lines.append(("%s.%s(%s.sin(), %s.cos().abs() + 1, value=0.5)" % (v, k, v, v), None))
        elif k == "cumsum_":
            lines.append(("%s.cumsum_(-1)" % v, None))
        elif k == "clamp_min_":
            lines.append(("%s.clamp_min_(0.25)" % v, None))
        elif k == "logit_":
            lines.append(("%s.sigmoid_().logit_(1e-3)" % v, None))
        elif k == "masked_scatter_":
            lines.append(("%s.masked_scatter_(%s > 0, %s.neg().flatten())" % (v, v, v), None))
        elif k == "float_power_":
            if t.dtype != torch.float64:
                return None
            lines.append(("%s.abs_().float_power_(2)" % v, None))
        else:
            lines.append(("%s.index_reduce_(-1, L.tensor([0, 0]), %s[..., :1].repeat_interleave(2, -1) * 3, 'amax')"
                          % (v, v), None))
        lines.append(("%s = %s * 1" % (self.new(), x), "v%d" % self.nvar))
        return lines

    EXTRA_TEMPLATES = (("t_x_scan", 6), ("t_x_pointwise", 10), ("t_x_reduce", 8), ("t_x_index", 8),
                       ("t_x_product", 5), ("t_x_move", 5), ("t_x_viewwrite", 6))
