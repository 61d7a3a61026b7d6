"""scripts/fuzz_nn_ops.py - the third round of op templates of the differential fuzzer
(scripts/fuzz_compile.py), where new code landed: bit shifts on integer dtypes, clamp with
tensor bounds (min > max included) on values that require grad, fill_ / copy_ / zero_
(fill_ with a 0-d tensor value) over tensors that require grad, conv1d / conv2d, max /
avg / adaptive pools, causal scaled_dot_product_attention (the --dynamic batch-size
path), cumsum / cumprod with dtype=, and flip / roll (whose programs are then often
run with a second backward, retain_graph=True: Program.twice).

NnOps is a mixin of fuzz_compile.Gen, like fuzz_more_ops.MoreOps. Weights are written as
linspace over the needed shape, so that the programs stay short; their channel counts
are read from the argument, whose batch dim is the one --dynamic changes most often."""
import torch


def _lin(n, shape, x):
    """Source of a weight of `shape`, n elements from -0.5 to 0.5, x's dtype."""
    return "L.linspace(-0.5, 0.5, %d, dtype=%s.dtype).reshape(%s)" % (
        n, x, ", ".join(map(str, shape)))


class NnOps:
    def t_shift(self):
        x = self.var(lambda u: u.dtype in (torch.uint8, torch.int8, torch.int16, torch.int32,
                                             torch.int64))
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        bits = torch.iinfo(t.dtype).bits
        amt = self.ch([0, 1, 2, 3, bits - 1])
        op = self.ch(["<<", ">>", ">>", "L.bitwise_left_shift", "L.bitwise_right_shift",
                      "tensor", "rtensor", "inplace"])
        y = self.var(lambda u: u.dtype == t.dtype and u.numel() and bool((u >= 0).all())
                     and bool((u < bits).all()))
        if op == "tensor" and y is not None:
            try:
                torch.broadcast_shapes(t.shape, self.env[y].shape)
                return "%s = %s %s %s" % (z, x, self.ch(["<<", ">>"]), y), z
            except RuntimeError:
                return None
        if op == "rtensor":  # a scalar shifted by a tensor
            if not (t.numel() and bool((t >= 0).all()) and bool((t < bits).all())):
                return None
            return "%s = %s %s %s" % (z, self.ch(["1", "3", "-8"]), self.ch(["<<", ">>"]), x), z
        if op == "inplace":
            return "%s %s= %d" % (x, self.ch(["<<", ">>"]), amt), None
        if op.startswith("L."):
            return "%s = %s(%s, %d)" % (z, op, x, amt), z
        return "%s = %s %s %d" % (z, x, op if op in ("<<", ">>") else "<<", amt), z

    def t_clampt(self):
        """clamp / clamp_ with tensor bounds, the bounds sometimes crossed (min > max)."""
        x = self._float_var()
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        lo = self.partner(t)
        hi = self.partner(t)
        if lo is None:
            return None
        lo_s = lo if self.env[lo].is_floating_point() else "%s.to(%s.dtype)" % (lo, x)
        k = self.ch(["both", "crossed", "min", "max", "inplace", "clip"])
        if k == "crossed":
            return "%s = L.clamp(%s, %s + 0.5, %s - 0.5)" % (z, x, lo_s, lo_s), z
        if k == "min":
            return "%s = %s.clamp(min=%s)" % (z, x, lo_s), z
        if k == "max":
            return "%s = L.clamp(%s, max=%s)" % (z, x, lo_s), z
        if k == "inplace":
            return "%s.clamp_(%s, %s * 0.5)" % (x, lo_s, lo_s), None
        hi_s = lo_s + " * -1" if hi is None else (
            hi if self.env[hi].is_floating_point() else "%s.to(%s.dtype)" % (hi, x))
        if k == "clip":
            return "%s = %s.clip(%s, %s)" % (z, x, lo_s, hi_s), z
        return "%s = L.clamp(%s, %s, %s)" % (z, x, lo_s, hi_s), z

    def t_fillgrad(self):
        """fill_ / copy_ / zero_ of a value that requires grad (a clone of a float value, or
        a float input), filled from a 0-d tensor or copied from another value."""
        x = self._float_var()
        if x is None:
            return None
        t = self.env[x]
        lines = []
        if self.p(0.5):
            v = self.new()
            lines.append(("%s = %s * 1" % (v, x), v))
            x = v
        y = self._float_var()
        k = self.ch(["fill_t", "fill_t", "fill_s", "copy_", "zero_", "fill_slice"])
        if k == "fill_t":
            src = "%s.sum()" % y if y is not None else "L.tensor(1.5)"
            lines.append(("%s.fill_(%s)" % (x, self.ch([src, src + " * 2", "%s.amax()" % y if y else src])),
                          None))
        elif k == "fill_s":
            lines.append(("%s.fill_(%s)" % (x, self.scalar()), None))
        elif k == "copy_":
            y = self.partner(t)
            if y is None:
                return None
            try:
                torch.broadcast_to(self.env[y], t.shape)
            except RuntimeError:
                return None
            lines.append(("%s.copy_(%s * 2)" % (x, y), None))
        elif k == "zero_":
            lines.append(("%s.zero_()" % x, None))
        else:
            if not t.dim() or not t.shape[0]:
                return None
            src = "%s.mean()" % y if y is not None else "3.0"
            lines.append(("%s[:1].fill_(%s)" % (x, src), None))
        r = self.new()
        lines.append(("%s = %s * %s" % (r, x, self.ch(["1", "x0" if "x0" in self.env else "1"])), r))
        return lines

    def t_cumdt(self):
        x = self.var()
        t = self.env[x]
        z = self.new()
        dt = self.ch(["float32", "float64", "int64", "float16"])
        if t.is_floating_point() and dt == "int64":
            dt = "float64"
        f = self.ch(["cumsum", "cumprod"])
        if self.p(0.5):
            return "%s = L.%s(%s, %d, dtype=L.%s)" % (z, f, x, self.dim(t), dt), z
        return "%s = %s.%s(dim=%d, dtype=L.%s)" % (z, x, f, self.dim(t), dt), z

    def t_fliproll(self):
        x = self._float_var(1)
        if x is None:
            return None
        t = self.env[x]
        z = self.new()
        self.twice = self.twice or self.p(0.7)
        k = self.ch(["flip", "roll", "roll2", "flipall"])
        if k == "flip":
            return "%s = %s.flip(%d) * %s" % (z, x, self.dim(t), x), z
        if k == "flipall":
            return "%s = L.flip(%s, %s)" % (z, x, tuple(range(t.dim()))), z
        if k == "roll2" and t.dim() >= 2:
            return "%s = L.roll(%s, (1, -1), (0, 1)).exp()" % (z, x), z
        return "%s = %s.roll(%d, %d) - %s" % (z, x, self.ch([1, -1, 2, 5]), self.dim(t), x), z

    def t_conv(self):
        """conv1d / conv2d / pools / SDPA over a float value of rank 3 or 4 (N, C, ...)."""
        x = self.var(lambda u: u.is_floating_point() and u.dim() in (3, 4) and u.numel())
        if x is None:
            return None
        t = self.env[x]
        nd = t.dim() - 2
        c = t.shape[1]
        z = self.new()
        k = self.ch(["conv", "conv", "maxpool", "avgpool", "adaptive", "sdpa", "sdpa", "pad"])
        sp = list(t.shape[2:])
        if k == "conv":
            co = self.ch([1, 2, 3])
            g = self.ch([g for g in (1, c) if c % g == 0 and co % g == 0] or [1])
            ks = [self.ch([1, 2, 3]) for _ in sp]
            w = [co, c // g] + ks
            n = 1
            for d in w:
                n *= d
            pad = self.ch([0, 1, "'same'"])
            stride = self.ch([1, 2]) if pad != "'same'" else 1
            bias = ", L.linspace(-1, 1, %d, dtype=%s.dtype)" % (co, x) if self.p(0.5) else ", None"
            return "%s = F.conv%dd(%s, %s%s, stride=%d, padding=%s, groups=%d)" % (
                z, nd, x, _lin(n, w, x), bias, stride, pad, g), z
        if k == "maxpool":
            ks = self.ch([1, 2, 3])
            if any(s < ks for s in sp):
                return None
            return "%s = F.max_pool%dd(%s, %d, stride=%d, padding=%d, ceil_mode=%s)" % (
                z, nd, x, ks, self.ch([1, 2]), self.ch([0, ks // 2]), self.p(0.3)), z
        if k == "avgpool":
            ks = self.ch([1, 2])
            if any(s < ks for s in sp):
                return None
            return "%s = F.avg_pool%dd(%s, %d, padding=%d, count_include_pad=%s)" % (
                z, nd, x, ks, self.ch([0, ks // 2]), self.p(0.5)), z
        if k == "adaptive":
            return "%s = F.adaptive_%s_pool%dd(%s, %d)" % (z, self.ch(["avg", "max"]), nd, x,
                                                       self.ch([1, 2])), z
        if k == "pad":
            mode = self.ch(["constant", "reflect", "replicate", "circular"])
            p = [self.ch([0, 1]) for _ in range(2 * nd)]
            return "%s = F.pad(%s, %s, mode=%r)" % (z, x, tuple(p), mode), z
        kv = self.var(lambda u: u.is_floating_point() and u.dtype == t.dtype and u.dim() == t.dim()
                      and u.shape[:-2] == t.shape[:-2] and u.shape[-1] == t.shape[-1]) or x
        causal = self.p(0.7)
        return "%s = F.scaled_dot_product_attention(%s, %s, %s * 2, is_causal=%s)" % (
            z, x, kv, kv, causal), z

    NN_TEMPLATES = (("t_shift", 5), ("t_clampt", 5), ("t_fillgrad", 5), ("t_cumdt", 4),
                    ("t_fliproll", 4), ("t_conv", 8))
